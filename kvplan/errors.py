"""One exception hierarchy; the CLI translates it in one place (``kvplan.cli.app.main``).

* :class:`KvplanError` -- base; exit code 1 (internal / unexpected condition).
* :class:`InputError` -- a user mistake (bad flag value, unknown preset, malformed
  config.json, unreadable log ...); exit code 2, printed as one line that names
  the field and the fix.

Two helpers keep that line safe to print, whatever the input held:

* :func:`echo` -- the form in which a message quotes user input: at most :data:`ECHO_CHARS` characters, control
  characters escaped (no terminal escape sequences, no line breaks).  Every message that repeats input uses it.
* :func:`mask_secrets` -- credentials in URLs (``https://user:pass@host``), ``Bearer`` tokens and Hugging Face
  tokens (``hf_...``) replaced by ``***``.  :meth:`KvplanError.one_line` applies it to every error line.

The one sanitiser of untrusted text on its way OUT (a model name or alias from a config.json or a preset, a GPU
name, a plan's deployment name), one function per kind of sink; it lives in the base layer because the sweep's CSV
writer (planning) needs it as much as the views do:

* :func:`terminal_text` -- a table cell, a title, a line of plain text: C0 controls (tab and CR included), ESC, DEL,
  C1 controls, bidi overrides / isolates / marks and the Unicode line separators shown escaped (``\\x1b``,
  ``\\u202e``), so no escape sequence (OSC 52 clipboard writes, OSC 8 links, screen clears) and no reordering of
  the line reaches a terminal or a CI log.
* :func:`csv_cell` -- a CSV cell: :func:`terminal_text`, then a cell that a spreadsheet would read as a formula
  (first character ``=``, ``+``, ``-``, ``@``, tab or CR, as OWASP's CSV-injection guidance lists them) gets a
  leading ``'``; plain numbers (``-1``, ``+2.5e3``) and non-strings are left as they are.  Quoting is the csv
  writer's.
* :func:`xml_text` -- JUnit / XML text and attributes: :func:`terminal_text`, and the characters XML 1.0 forbids
  (surrogates, U+FFFE, U+FFFF) replaced, so the report is well-formed whatever a name held.
* JSON needs nothing: ``json.dumps`` escapes every control character.
"""

from __future__ import annotations

import re

#: echoed input is cut to this many characters (then "...")
ECHO_CHARS = 80
#: a backstop for the whole error line (a message built from many echoed parts)
MAX_LINE_CHARS = 1000

# The patterns below are compiled by re's own cache on first use (re.sub / re.search with the pattern text): a run
# that never masks, escapes or checks a cell never compiles them (compiled at import they were ~15 M instructions,
# ~6% of a warm `kvplan fit --format json`, docs/performance.md)
_USERINFO = r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@"
_BEARER = r"(?i)\b(bearer\s+)[^\s'\"]+"
_HF_TOKEN = r"\bhf_[A-Za-z0-9]{20,}"
_QUERY_SECRET = r"(?i)([?&](?:token|access_token|api_key|key|password)=)[^&\s'\"]+"


def mask_secrets(text: str) -> str:
    """``text`` with credentials replaced by ``***``.

    Masked: the user-info part of any URL (``http://user:pass@host`` -> ``http://***@host``), ``Bearer <token>``,
    Hugging Face tokens (``hf_`` and 20+ letters or digits) and ``token=`` / ``api_key=`` / ``password=`` query values.

    Example: ``mask_secrets("cannot reach https://me:s3cret@hub.local (refused)")`` ->
    ``"cannot reach https://***@hub.local (refused)"``.
    """
    text = re.sub(_USERINFO, r"\1***@", text)
    text = re.sub(_BEARER, r"\1***", text)
    text = re.sub(_HF_TOKEN, "hf_***", text)
    return re.sub(_QUERY_SECRET, r"\1***", text)


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """``value`` as a message quotes it: ``str(value)`` with control characters escaped (``\\n``, ``\\x1b`` ...),
    cut to ``limit`` characters with ``...`` (and the original length) when longer.

    Example: ``echo("9" * 5000)`` -> ``"99999...999... (5,000 characters)"`` (80 nines); ``echo("a\\nb")`` ->
    ``"a\\\\nb"``; ``echo("80GiB")`` -> ``"80GiB"`` (short printable input is unchanged).
    """
    text = value if isinstance(value, str) else str(value)
    n = len(text)
    head = text[:limit]
    if not head.isprintable():
        head = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in head)
    return head if n <= limit else f"{head}... ({n:,} characters)"


#: what a terminal must never get raw: C0 but the newline (tab and CR too), DEL, C1, bidi marks / overrides /
#: isolates, the Unicode line and paragraph separators
_UNSAFE_BUT_NL = "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
_UNSAFE_ALL = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
#: XML 1.0 forbids these (its Char production) on top of the C0 controls :func:`terminal_text` escapes
_XML_FORBIDDEN = "[\ud800-\udfff\ufffe\uffff]"
#: a CSV cell starting with one of these is a formula to a spreadsheet (OWASP CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: ... unless it is a number, perhaps with a unit (``-1``, ``+2.5e3``, ``-1,024``, ``-0.5 GiB``, ``+3%``) or a lone
#: ``-`` (the views' "not set"): a spreadsheet reads those as values
_PLAIN_NUMBER = r"-|[-+]?(?=\.?\d)[\d,]*\.?\d*(?:[eE][-+]?\d+)?(?: ?[A-Za-z%/]{1,8})?"


def _escaped(m: re.Match[str]) -> str:
    ch = m.group()
    return ch.encode("unicode_escape").decode("ascii") if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def terminal_text(text: str, *, newlines: bool = False) -> str:
    """``text`` safe to print on a terminal: every control character (ESC, BEL, CR, tab, DEL, C1), bidi control and
    line separator shown escaped; ``newlines=True`` keeps ``\\n`` (a multi-line text block), else it is escaped too.

    Example: ``terminal_text("\\x1b]52;c;ZXZpbA==\\x07")`` is ``"\\\\x1b]52;c;ZXZpbA==\\\\x07"`` (the
    backslash sequences as visible text); ``terminal_text("ab\\u202ec")`` is ``"ab\\\\u202ec"``;
    ``terminal_text("Qwen3-8B")`` is ``"Qwen3-8B"`` (the same object: printable text is never copied).
    """
    pattern = _UNSAFE_BUT_NL if newlines else _UNSAFE_ALL
    return re.sub(pattern, _escaped, text) if re.search(pattern, text) else text


def csv_cell(value: object) -> object:
    """``value`` as a CSV cell: a string :func:`terminal_text`-escaped and, when a spreadsheet would read it as a
    formula (it starts with ``= + - @``, a tab or a CR) and it is not a plain number, prefixed with ``'``; anything
    else (numbers, None, booleans) as it is.

    Example: ``csv_cell("=HYPERLINK(\\"http://x\\")")`` is ``"'=HYPERLINK(\\"http://x\\")"``; ``csv_cell("-1")`` is
    ``"-1"``; ``csv_cell("\\tq")`` is ``"'\\\\tq"``; ``csv_cell(5)`` is ``5``.
    """
    if not isinstance(value, str) or not value:
        return value
    if value.startswith(_FORMULA_START) and not re.fullmatch(_PLAIN_NUMBER, value):
        return "'" + terminal_text(value)
    return terminal_text(value)


def xml_text(text: str) -> str:
    """``text`` safe inside XML 1.0 text or an attribute (before ``xml.sax.saxutils`` escaping): the
    :func:`terminal_text` escapes plus the characters XML 1.0 forbids (lone surrogates, U+FFFE, U+FFFF) escaped.

    Example: ``xml_text("a\\x1bb\\ufffe")`` is ``"a\\\\x1bb\\\\ufffe"``.
    """
    text = terminal_text(text)
    if not re.search(_XML_FORBIDDEN, text):
        return text
    return re.sub(_XML_FORBIDDEN, lambda m: f"\\u{ord(m.group()):04x}", text)


class KvplanError(Exception):
    """Base class of every error kvplan raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None):
        self.field = field
        self.hint = hint
        super().__init__(message)

    def one_line(self) -> str:
        """The single line shown to the user: ``field: message; hint``, whitespace collapsed, credentials masked
        (:func:`mask_secrets`), at most :data:`MAX_LINE_CHARS` characters."""
        msg = str(self)
        if self.field and not msg.startswith(self.field):
            msg = f"{self.field}: {msg}"
        if self.hint:
            msg = f"{msg}; {self.hint}"
        line = mask_secrets(" ".join(msg.split()))
        return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."


class InputError(KvplanError):
    """Bad user input: exit 2, one line naming the field and the fix."""

    exit_code = 2


class EngineRefusal(InputError):
    """What the engine itself refuses at start-up with the configuration (no memory left after SGLang's Mamba state
    pool, a KV budget that holds no token ...), found while planning.  ``kvplan.planning.plan.fit`` turns it into a
    verdict (``starts`` and ``fits`` false, exit 0, or 3 under ``--check``); a caller that does not (a sweep cell)
    still sees an InputError."""

    engine_refusal = True


class OutputError(KvplanError):
    """An output file kvplan was told to write cannot be written (``--output``, ``--report``, ``--plot``): exit 1, as
    the README says, one line naming the flag, the path and the reason; never a leftover file."""

    exit_code = 1


class DoesNotFitError(KvplanError):
    """Raised only under ``--check`` when the target does not fit: exit 3."""

    exit_code = 3
