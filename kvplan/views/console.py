"""rich consoles and the terminal conventions every table view shares.

* :func:`terminal_console`: the Console the commands print tables on (it escapes control characters in the text it
  renders: :func:`kvplan.views.sanitize.console_class`): stdout's width and colours, no
  auto-highlighting (rich would colour the digits inside "DeepSeek-V4.1-Flash" or "0.5.23"), and no trailing
  spaces on any line when stdout is not a terminal (a file or a pipe gets clean lines).
* :func:`fixed_console`: the fixed-width recording Console the golden tests render on (no colour, no terminal).
* :func:`hanging`: a paragraph with a hanging indent (the wrapped lines of a warning line up under its text).
* :func:`install_ascii_fallback`: on a stream that cannot encode Unicode (``PYTHONIOENCODING=ascii``, a Latin-1
  terminal), ``×`` prints as ``x``, ``≤`` as ``<=``, and anything else unencodable as ``?``, never a crash;
  rich draws its boxes in ASCII on such a stream by itself.

rich is imported inside the functions only: ``--format json`` never loads it.
"""

from __future__ import annotations

import codecs
import errno
import io
import sys
from typing import Any

GOLDEN_WIDTH = 100

#: what a character prints as on a stream that cannot encode it (:func:`install_ascii_fallback`)
ASCII_FALLBACK: dict[str, str] = {
    "×": "x",
    "−": "-",
    "–": "-",
    "—": "--",
    "≥": ">=",
    "≤": "<=",
    "·": ".",
    "≈": "~",
    "±": "+-",
    "Σ": "sum",
    "²": "^2",
    "³": "^3",
    "§": "S",
    "…": "...",
    "→": "->",
    "←": "<-",
    "µ": "u",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "─": "-",
    "━": "-",
    "│": "|",
    "┃": "|",
    "•": "*",
    "✓": "ok",
    "✗": "x",
    "█": "#",
    "▏": "|",
}
_ERROR_HANDLER = "kvplan-ascii"


def _ascii_replace(err: UnicodeError) -> tuple[str, int]:
    """codecs error handler: the :data:`ASCII_FALLBACK` spelling of each unencodable character, else ``?``."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start : err.end]
    return "".join(ASCII_FALLBACK.get(ch, "?") for ch in bad), err.end


codecs.register_error(_ERROR_HANDLER, _ascii_replace)


def ascii_text(text: str, encoding: str = "ascii") -> str:
    """``text`` as a stream of ``encoding`` prints it with the fallbacks: ``ascii_text("8 × 1 B ≤ 2")`` is
    ``"8 x 1 B <= 2"``."""
    return text.encode(encoding, errors=_ERROR_HANDLER).decode(encoding)


def _encodes_unicode(stream: Any) -> bool:
    enc = getattr(stream, "encoding", None) or "utf-8"
    try:
        "─×≤".encode(enc)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def install_ascii_fallback(*streams: Any) -> None:
    """Make each text stream (default stdout and stderr) print :data:`ASCII_FALLBACK` spellings instead of raising
    ``UnicodeEncodeError`` when its encoding cannot hold a character.  Streams that encode Unicode are left alone."""
    for stream in streams or (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not _encodes_unicode(stream):
            reconfigure(errors=_ERROR_HANDLER)


class _TrimmedLines(io.TextIOBase):
    """A text stream that writes to ``stream`` with the trailing spaces of every line removed (rich pads table
    cells and wrapped lines to the console width; a file or a pipe should not get them)."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream
        self._pending = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._stream.write("\n".join(line.rstrip(" ") for line in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()


def terminal_console(file: Any = None) -> Any:
    """A rich Console on ``file`` (default stdout): the terminal's width and colours on a terminal; off a terminal
    80 columns (or ``$COLUMNS``), no colour, no trailing spaces.  Never auto-highlights numbers in plain text."""
    from kvplan.views.sanitize import console_class

    Console = console_class()
    stream = sys.stdout if file is None else file
    isatty = getattr(stream, "isatty", None)
    if not (isatty is not None and isatty()):
        stream = _TrimmedLines(stream)
    console = Console(file=stream, highlight=False)
    console.on_broken_pipe = lambda: _closed_pipe(console)
    return console


def _closed_pipe(console: Any) -> None:
    """rich's own answer to a closed pipe is ``SystemExit(1)``; kvplan's CLI decides the exit code in one place
    (:mod:`kvplan.cli.app`: 0 for a closed pipe), so the error goes on to it, and the console stops writing."""
    console.quiet = True
    raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def table_box(console: Any) -> Any:
    """The box of kvplan's tables: rich's SIMPLE_HEAD (a rule under the header), drawn with ``-`` on a console
    that cannot encode Unicode (where rich would swap in a full ASCII grid)."""
    from rich import box

    if not console.options.ascii_only:
        return box.SIMPLE_HEAD
    return box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def fixed_console(width: int = GOLDEN_WIDTH) -> Any:
    """A recording Console of a fixed width, no colour, no terminal: what the golden tests render on.

    Read what was printed with :func:`recorded_text`.
    """
    from kvplan.views.sanitize import console_class

    Console = console_class()

    return Console(
        width=width, record=True, color_system=None, force_terminal=False, file=io.StringIO(), highlight=False
    )


def recorded_text(console: Any, *, strip_lines: bool = True) -> str:
    """The text a :func:`fixed_console` recorded; ``strip_lines`` drops trailing blanks on every line."""
    text: str = console.export_text()
    if not strip_lines:
        return text
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def hanging(console: Any, text: Any, *, first: str = "", rest: str | None = None, style: str | None = None) -> None:
    """Print ``text`` (a str, never read as markup, or a rich Text) as a paragraph whose first line starts with
    ``first`` and whose wrapped lines start with ``rest`` (default: as many spaces), so they line up under the text.

    Example on 30 columns: ``hanging(con, "the pool holds fewer tokens than one request", first="  ! ")`` prints
    ``"  ! the pool holds fewer tokens"`` and ``"    than one request"``.
    """
    from rich.text import Text

    body = text if isinstance(text, Text) else Text(str(text), style=style or "")
    lead = first
    indent = " " * len(first) if rest is None else rest
    width = max(console.width - max(len(lead), len(indent)), 10)
    for i, line in enumerate(body.wrap(console, width)):
        line.rstrip()
        out = Text(lead if i == 0 else indent)
        out.append_text(line)
        console.print(out, soft_wrap=True)
