"""The one bounded reader: every file, standard input and JSON text kvplan reads from the user goes through here.

Promises (each an :class:`~kvplan.errors.InputError`, exit 2, one line naming the path and the field):

* **regular files only** where a file is expected: a FIFO, a device (``/dev/zero``), a socket or a folder is
  refused from ``stat`` before it is opened, and again from ``fstat`` after (opened non-blocking, so a FIFO swapped
  in between cannot hang the open);
* **a size cap** checked before reading (``st_size``) and while reading (streamed in chunks, never more than
  ``max_bytes + 1`` bytes in all); standard input is streamed under the same cap (``/dev/zero`` on stdin stops at
  the cap); a closed standard input is an input error, not a crash;
* **UTF-8** decoding is strict (the error names the byte offset);
* **JSON** (:func:`parse_json`): at most :data:`MAX_JSON_DEPTH` levels of nesting, integers of at most
  :data:`~kvplan.units.MAX_INT_DIGITS` digits (``int()`` is never called on longer digit strings: Python refuses
  4,300 digits with a ValueError), no ``NaN`` / ``Infinity`` and no float that overflows to infinity (``1e400``);
  the error names the key path (``config.json: field 'quantization_config.bits'``).

Limits: :data:`MAX_JSON_BYTES` (64 MiB) for JSON metadata files (config.json, model.safetensors.index.json,
hf_quant_config.json); callers pass their own cap for other kinds (logs, launch commands, plan files).
Writing (:func:`atomic_output`, :func:`write_output`): every output file kvplan writes (``--output``,
``--report``, ``--plot``, ``models add``) is written to a temporary file beside the target and renamed over it only
when complete, so a failed write leaves the earlier file as it was (no 0-byte leftovers) and a symlink at the target
is replaced, never written through.  A target that exists and is not a regular file (``/dev/null``, a FIFO the user
named) is written in place.  A failure is :class:`~kvplan.errors.OutputError` (exit 1).

docs/hardening.md lists every limit and its test.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from kvplan.errors import InputError, OutputError, echo
from kvplan.units import MAX_INT_DIGITS

__all__ = [
    "CHUNK_BYTES",
    "MAX_CONFIG_ELEMENTS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_ELEMENTS",
    "atomic_output",
    "check_output_path",
    "count_json_elements",
    "decode_utf8",
    "max_elements_of",
    "parse_json",
    "read_bytes",
    "read_json",
    "read_source",
    "read_stdin",
    "read_stream",
    "read_text",
    "write_output",
]

MAX_JSON_BYTES = 64 * 2**20
MAX_JSON_DEPTH = 64
#: values (array items, object members, containers) one JSON document may hold: real configs hold < 1,000, a
#: safetensors index one per tensor (~100,000 for the largest checkpoints); counted before json builds anything
MAX_JSON_ELEMENTS = 1_000_000
#: ... and a config.json or hf_quant_config.json (the geometry checks and the weight estimate walk every value, so
#: this budget, not the byte cap, bounds their time: ~0.5 s at the budget)
MAX_CONFIG_ELEMENTS = 100_000


def max_elements_of(name: str) -> int:
    """The value budget of a model folder's JSON file by its name: :data:`MAX_JSON_ELEMENTS` for a safetensors
    index (one entry per tensor), :data:`MAX_CONFIG_ELEMENTS` for anything else (config.json,
    hf_quant_config.json)."""
    return MAX_JSON_ELEMENTS if name.endswith(".index.json") else MAX_CONFIG_ELEMENTS


CHUNK_BYTES = 1 << 20
PATH_CHARS = 160  # paths are echoed up to this many characters

_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _size(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:,.1f} GiB"
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} B"


def _too_large(where: str, what: str, max_bytes: int, size: int | None, field: str) -> InputError:
    got = f" is {_size(size)}," if size is not None else ""
    return InputError(
        f"{where}{got} larger than the {_size(max_bytes)} limit for {what}", field=field, hint=f"is it really {what}?"
    )


def read_stream(fh: IO[bytes], *, field: str, where: str, what: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` from a binary stream, read in chunks of :data:`CHUNK_BYTES`; InputError as soon as one
    byte more arrives (never more than ``max_bytes + 1`` bytes are read).

    Example: ``read_stream(open("/dev/zero", "rb"), max_bytes=2**20, ...)`` reads 1 MiB + 1 B and refuses.
    """
    buf = bytearray()
    try:
        while len(buf) <= max_bytes:
            chunk = fh.read(min(CHUNK_BYTES, max_bytes + 1 - len(buf)))
            if not chunk:
                break
            buf += chunk
    except OSError as exc:
        raise InputError(f"cannot read {where} ({exc.strerror or exc})", field=field) from None
    if len(buf) > max_bytes:
        raise _too_large(where, what, max_bytes, None, field)
    return bytes(buf)


def read_bytes(path: str | os.PathLike[str], *, field: str, what: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (see the module docstring for what is refused).

    Formula: refuse unless ``S_ISREG(stat.st_mode)`` and ``st_size <= max_bytes``; open ``O_NONBLOCK``; refuse
    unless ``S_ISREG(fstat)``; read at most ``max_bytes + 1`` bytes; refuse if more than ``max_bytes`` came.

    Example: ``read_bytes("/dev/zero", field="--model", what="a config.json", max_bytes=MAX_JSON_BYTES)`` ->
    InputError "/dev/zero is a character device, not a file"; a 6 GiB config.json is refused from its size alone.
    """
    p = os.fspath(path)
    where = echo(p, PATH_CHARS)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise InputError(f"cannot read {where} ({exc.strerror or exc})", field=field) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{where} is {_kind(st.st_mode)}, not a file", field=field, hint=f"give {what} file")
    if st.st_size > max_bytes:
        raise _too_large(where, what, max_bytes, st.st_size, field)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise InputError(f"cannot read {where} ({exc.strerror or exc})", field=field) from None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # replaced between stat and open
            raise InputError(f"{where} is {_kind(st.st_mode)}, not a file", field=field, hint=f"give {what} file")
        return read_stream(fh, field=field, where=where, what=what, max_bytes=max_bytes)


def read_stdin(*, field: str, what: str, max_bytes: int) -> bytes:
    """Standard input's bytes, streamed under ``max_bytes`` (a pipe, a file or ``/dev/zero`` alike); a closed or
    unreadable standard input is an InputError.

    Example: ``kvplan calibrate - < /dev/zero`` reads the cap + 1 bytes and stops with "standard input larger than
    the 200.0 MiB limit for a log".
    """
    stream = sys.stdin
    if stream is None or getattr(stream, "closed", False):
        raise InputError("standard input is closed", field=field, hint=f"pipe {what} in, or give a file path")
    raw: Any = getattr(stream, "buffer", None)
    if raw is None:  # a text-only stand-in (tests): read characters, same cap
        try:
            text = stream.read(max_bytes + 1)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read standard input ({exc})", field=field) from None
        data = text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else bytes(text)
        if len(data) > max_bytes:
            raise _too_large("standard input", what, max_bytes, None, field)
        return data
    try:
        return read_stream(raw, field=field, where="standard input", what=what, max_bytes=max_bytes)
    except ValueError as exc:  # I/O operation on a closed file
        raise InputError(f"cannot read standard input ({exc})", field=field) from None


def read_source(source: str, *, field: str, what: str, max_bytes: int) -> bytes:
    """``-`` is standard input (:func:`read_stdin`), anything else a file path (:func:`read_bytes`, ``~``
    expanded)."""
    if source == "-":
        return read_stdin(field=field, what=what, max_bytes=max_bytes)
    return read_bytes(os.path.expanduser(source), field=field, what=what, max_bytes=max_bytes)


def decode_utf8(data: bytes, *, field: str, where: str) -> str:
    """Strict UTF-8 (an InputError names the first bad byte and its offset).

    Example: ``decode_utf8(b"ok \\xff", field="LOG", where="run.log")`` -> "run.log is not UTF-8 text (byte 0xff at
    offset 3)".
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1]
        raise InputError(
            f"{where} is not UTF-8 text (byte 0x{bad.hex()} at offset {exc.start:,})", field=field
        ) from None


def read_text(source: str, *, field: str, what: str, max_bytes: int) -> str:
    """:func:`read_source` then :func:`decode_utf8`."""
    where = "standard input" if source == "-" else echo(source, PATH_CHARS)
    return decode_utf8(read_source(source, field=field, what=what, max_bytes=max_bytes), field=field, where=where)


# ------------------------------------------------------------------------------------------------ JSON


class _Bad:
    """A number outside the limits, kept as text so the walk can name its key path."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def describe(self) -> str:
        t = self.text
        if t in ("NaN", "Infinity", "-Infinity"):
            return f"is {t}, not a number kvplan can use"
        if any(c in t for c in ".eE"):
            return f"holds {echo(t, 40)}, which is not a finite number"
        return f"holds an integer of {len(t.lstrip('-')):,} digits (kvplan reads at most {MAX_INT_DIGITS})"


def _hooks(bad: list[_Bad]) -> dict[str, Any]:
    def pint(s: str) -> Any:
        if len(s) - s.startswith("-") > MAX_INT_DIGITS:
            bad.append(_Bad(s))
            return bad[-1]
        return int(s)

    def pfloat(s: str) -> Any:
        v = float(s)
        if not math.isfinite(v):
            bad.append(_Bad(s))
            return bad[-1]
        return v

    def pconst(s: str) -> Any:
        bad.append(_Bad(s))
        return bad[-1]

    return {"parse_int": pint, "parse_float": pfloat, "parse_constant": pconst}


def _dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return echo(out or "(top level)", 120)


def _first_problem(doc: Any, max_depth: int) -> tuple[tuple[Any, ...] | None, str] | None:
    """(key path, what is wrong) of the first number outside the limits, or (None, ...) for a container nested
    deeper than ``max_depth``; iterative, so any depth Python's parser accepted is walked without recursion."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(doc, 1, ())]
    while stack:
        obj, depth, path = stack.pop()
        if isinstance(obj, _Bad):
            return path, obj.describe()
        items: Any = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else None
        if items is None:
            continue
        if depth > max_depth:
            return None, f"the JSON is nested more than {max_depth} levels deep"
        stack.extend((v, depth + 1, (*path, k)) for k, v in items if isinstance(v, (dict, list, _Bad)))
    return None


#: one string literal or one structural character that starts a value.  The string is matched in the unrolled
#: form with possessive quantifiers: no per-character alternation and no backtracking state, so a 64 MiB string
#: (escapes included) is one match in ~1 s and constant memory (the plain ``(?:\\.|[^"])*`` took 23 s, and the
#: unrolled form without ``*+`` 2 GB of regex stack on a string of escaped quotes)
_JSON_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[,\[{]', re.DOTALL)


def count_json_elements(text: str, limit: int = MAX_JSON_ELEMENTS) -> int:
    """An upper bound of the values a JSON text holds (``,`` + ``[`` + ``{``: one per array item or object member
    after the first, one per container), from the text alone, before any value is built.

    First over the whole text (``str.count``, C speed); only when that exceeds ``limit``, again outside string
    literals (a regex scan that skips each string in one match), stopping as soon as ``limit`` is passed -- so the
    work is linear in the text and at most ``2 x limit`` matches, and a long string full of commas is not counted.
    The result is exact below ``limit`` and "more than ``limit``" above it.

    Example: ``count_json_elements('{"a": [1, 2, 3], "b": "x,y"}')`` -> 6 (two containers, four commas: the
    string's comma counts in the fast bound, which is under the limit); ``count_json_elements('[' + '0,' * 10**6
    + '0]', limit=1000)`` -> 1,001 (stopped past the limit).
    """
    fast = text.count(",") + text.count("[") + text.count("{")
    if fast <= limit:
        return fast
    n = 0
    for m in _JSON_TOKEN.finditer(text):
        if text[m.start()] != '"':
            n += 1
            if n > limit:
                break
    return n


def parse_json(
    data: bytes | str,
    *,
    field: str,
    where: str,
    hint: str | None = None,
    max_depth: int = MAX_JSON_DEPTH,
    max_elements: int = MAX_JSON_ELEMENTS,
) -> Any:
    """JSON text (UTF-8 bytes or str) under the limits of the module docstring; InputError naming ``where`` (and
    the key path for a number or a depth over the limits) otherwise.

    Formula: ``json.loads`` with hooks that keep integers of more than MAX_INT_DIGITS digits, NaN / Infinity and
    floats that overflow as markers; when there is a marker, or more ``[`` + ``{`` than ``max_depth`` in the text,
    an iterative walk names the first offending key path.

    Example: ``parse_json('{"bits": 1e400}', field="--model", where="config.json")`` -> "config.json: field 'bits'
    holds 1e400, which is not a finite number"; ``parse_json("[" * 100 + "]" * 100, ...)`` -> "config.json: the JSON
    is nested more than 64 levels deep".
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{where} is not valid JSON (not UTF-8: byte 0x{data[exc.start : exc.start + 1].hex()} at "
                f"offset {exc.start:,})",
                field=field,
                hint=hint,
            ) from None
    else:
        text = data
    n = count_json_elements(text, max_elements)
    if n > max_elements:  # before json.loads: time and memory follow the budget, not the 64 MiB cap
        raise InputError(
            f"{where}: the JSON holds more than {max_elements:,} values; no model config or index is that large",
            field=field,
            hint=hint,
        )
    bad: list[_Bad] = []
    try:
        doc = json.loads(text, **_hooks(bad))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", field=field, hint=hint
        ) from None
    except RecursionError:
        raise InputError(
            f"{where}: the JSON is nested more than {max_depth} levels deep", field=field, hint=hint
        ) from None
    if bad or text.count("[") + text.count("{") > max_depth:
        problem = _first_problem(doc, max_depth)
        if problem is not None:
            path, what = problem
            named = f"{where}: field '{_dotted(path)}' " if path is not None else f"{where}: "
            raise InputError(f"{named}{what}", field=field, hint=hint)
    return doc


def read_json(
    path: str | os.PathLike[str],
    *,
    field: str,
    what: str,
    where: str | None = None,
    hint: str | None = None,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    max_elements: int = MAX_JSON_ELEMENTS,
) -> Any:
    """:func:`read_bytes` then :func:`parse_json` (``where`` names the file in JSON errors; default its path)."""
    data = read_bytes(path, field=field, what=what, max_bytes=max_bytes)
    return parse_json(
        data,
        field=field,
        where=where or echo(os.fspath(path), PATH_CHARS),
        hint=hint,
        max_depth=max_depth,
        max_elements=max_elements,
    )


# ------------------------------------------------------------------------------------------------ writing outputs


def _output_error(path: Path, exc: OSError, field: str) -> OutputError:
    return OutputError(f"cannot write {echo(str(path), 160)} ({exc.strerror or exc})", field=field)


def _new_file_mode(path: Path) -> int:
    """The mode the target gets: an existing regular file's, else 0o666 less the umask (what ``open()`` gives)."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _open_fd(fd: int, binary: bool) -> IO[Any]:
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


@contextmanager
def atomic_output(path: str | Path, *, field: str, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object to write ``path`` through: a temporary file in ``path``'s folder (``.NAME.XXXX.tmp``) renamed
    over ``path`` when the ``with`` block ends without an error; on any error the temporary file is removed and
    ``path`` is left as it was.  OSErrors become :class:`~kvplan.errors.OutputError` naming ``field`` (exit 1).

    ``path`` may not be a folder; a symlink at ``path`` is replaced by the new file (its target is not written); an
    existing non-regular file (``/dev/null``, a FIFO) is opened and written in place.

    Example: ``with atomic_output("report.xml", field="--report") as fh: fh.write(text)``.
    """
    p = Path(path)
    try:
        st = os.stat(p, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _output_error(p, exc, field) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {echo(str(p), 160)} (it is a folder)", field=field)
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        try:
            with _open_fd(os.open(p, os.O_WRONLY | os.O_TRUNC), binary) as fh:
                yield fh
        except OSError as exc:
            raise _output_error(p, exc, field) from None
        return
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:80]}.", suffix=".tmp")
    except OSError as exc:
        raise _output_error(p, exc, field) from None
    done = False
    try:
        os.fchmod(fd, _new_file_mode(p))
        with _open_fd(fd, binary) as fh:
            yield fh
        os.replace(tmp, p)
        done = True
    except OSError as exc:
        raise _output_error(p, exc, field) from None
    finally:
        if not done:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_output(path: str | Path, data: str | bytes, *, field: str) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_output`; returns the path."""
    with atomic_output(path, field=field, binary=isinstance(data, bytes)) as fh:
        fh.write(data)
    return Path(path)


def check_output_path(path: str | Path, *, field: str) -> None:
    """Refuse, before any work is printed, an output path that cannot be written: a missing or unwritable folder,
    a folder at the path (:class:`~kvplan.errors.OutputError`, exit 1).  The write itself may still fail later
    (a full disk); it then leaves nothing behind."""
    p = Path(path)
    parent = p.parent
    if p.is_dir():
        raise OutputError(f"cannot write {echo(str(p), 160)} (it is a folder)", field=field)
    if not parent.is_dir():
        raise OutputError(f"cannot write {echo(str(p), 160)} (no folder {echo(str(parent), 160)})", field=field)
    if not os.access(parent, os.W_OK | os.X_OK) and not (p.exists() and not p.is_file() and os.access(p, os.W_OK)):
        raise OutputError(f"cannot write {echo(str(p), 160)} (Permission denied)", field=field)
