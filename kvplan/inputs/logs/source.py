"""Reading a start-up log's bytes (a file path or ``-`` for standard input) through the bounded reader
:mod:`kvplan.inputs.read`, and decoding them.

Limits (docs/hardening.md, "Startup logs"), the same by path and on standard input:

* at most :data:`MAX_LOG_BYTES` (128 MiB); a file over it is refused from ``st_size`` before it is read, standard
  input redirected from a regular file likewise (``fstat``), a pipe after cap + 1 bytes (streamed in 1 MiB
  chunks, so the memory is the cap, never the input);
* regular files only where a path is given: a FIFO, a device (``/dev/zero``), a socket or a folder is refused before
  it is opened (and again after: :func:`kvplan.inputs.read.read_bytes` opens non-blocking), so ``--from-log FIFO``
  cannot hang;
* binary input is refused from its first chunk: NUL bytes in the first 64 KiB (``/dev/zero`` on standard input
  stops after one chunk, not at the cap), or a first 64 KiB that is mostly not UTF-8;
* decoding: UTF-16 when the text starts with a byte-order mark (a PowerShell redirect), else UTF-8 with
  replacement (``errors="replace"``: logs are often mangled by terminals, ``docker logs`` and copy/paste; a bad
  byte becomes U+FFFD and a sizing line that holds one is simply not recognised), never a crash.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import IO, Any, cast

from kvplan.errors import InputError, echo
from kvplan.inputs import read

MAX_LOG_BYTES = 128 * 2**20  # a real startup log is a few MB; a pipe is buffered up to this before refusal
BINARY_SAMPLE = 64 * 1024
FIELD = "LOG"
WHAT = "a log"
_HINT = "cut the start-up part of the log (up to the server-ready line) into a smaller file"


def _binary(head: bytes, name: str) -> InputError | None:
    """The error for a first chunk that is binary (NUL bytes, not UTF-16), else None."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16: NUL bytes are expected
        return None
    if head.count(b"\x00") > max(8, len(head) // 1000):
        return InputError(f"{name} looks like a binary file (NUL bytes), not a text log", field=FIELD)
    return None


class _Sniffed:
    """A binary stream whose first :data:`BINARY_SAMPLE` bytes are checked for binary content as they arrive."""

    def __init__(self, raw: IO[bytes], name: str) -> None:
        self.raw, self.name, self.seen = raw, name, b""

    def read(self, n: int) -> bytes:
        chunk = self.raw.read(n)
        if len(self.seen) < BINARY_SAMPLE and chunk:
            self.seen += chunk[: BINARY_SAMPLE - len(self.seen)]
            if len(self.seen) >= 4096 and (err := _binary(self.seen, self.name)):
                raise err
        return chunk


def _stdin(max_bytes: int) -> bytes:
    """Standard input under ``max_bytes``: a regular file is refused from its size, a pipe is streamed."""
    stream: Any = sys.stdin
    raw = getattr(stream, "buffer", None) if stream is not None and not getattr(stream, "closed", False) else None
    if raw is None:  # closed, or a text-only stand-in (tests): the bounded reader says which
        return read.read_stdin(field=FIELD, what=WHAT, max_bytes=max_bytes)
    try:
        st = os.fstat(raw.fileno())
        left = st.st_size - raw.tell() if stat.S_ISREG(st.st_mode) else 0
    except (OSError, ValueError, AttributeError):  # not a real file descriptor (a pipe without tell, a stand-in)
        left = 0
    if left > max_bytes:
        raise InputError(
            f"standard input is {left / 2**20:,.1f} MiB, larger than the {max_bytes / 2**20:,.1f} MiB limit for {WHAT}",
            field=FIELD,
            hint=_HINT,
        )
    try:
        sniffed = cast("IO[bytes]", _Sniffed(raw, "standard input"))
        return read.read_stream(sniffed, field=FIELD, where="standard input", what=WHAT, max_bytes=max_bytes)
    except ValueError as exc:  # I/O operation on a closed file
        raise InputError(f"cannot read standard input ({exc})", field=FIELD) from None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_log_bytes(source: str, *, max_bytes: int = MAX_LOG_BYTES) -> bytes:
    """The bytes of the log at ``source`` (a path, or ``-`` for standard input), under the limits above.

    Example: ``read_log_bytes("/dev/zero")`` -> InputError "log path '/dev/zero' is not a regular file (a
    device)"; ``kvplan calibrate - < /dev/zero`` -> "standard input looks like a binary file (NUL bytes)" after
    one 1 MiB chunk.
    """
    if source == "-":
        return _stdin(max_bytes)
    path = os.path.expanduser(source)
    name = repr(echo(source, read.PATH_CHARS))
    try:
        st = os.stat(path)
    except OSError as e:
        raise InputError(f"cannot read log file {name}: {e.strerror or e}", field=FIELD) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"log path {name} is not a regular file ({_kind(st.st_mode)})",
            field=FIELD,
            hint="give the log as a file, or pipe it in with '-'",
        )
    if st.st_size > max_bytes:
        raise InputError(
            f"log file {name} is {st.st_size / 2**20:,.0f} MiB, more than the {max_bytes / 2**20:,.0f} MiB limit",
            field=FIELD,
            hint=_HINT,
        )
    data = read.read_bytes(path, field=FIELD, what=WHAT, max_bytes=max_bytes)
    err = _binary(data[:BINARY_SAMPLE], name)
    if err is not None:
        raise err
    return data


def decode_log(data: bytes, name: str) -> str:
    """The text of a log's bytes (module docstring: UTF-16 with a BOM, else UTF-8 with replacement); InputError
    for binary content (NUL bytes, or more than 10 % undecodable characters in the first 64 KiB)."""
    head = data[:BINARY_SAMPLE]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    err = _binary(head, name)
    if err is not None:
        raise err
    text = data.decode("utf-8", errors="replace")
    sample = text[:BINARY_SAMPLE]
    if sample and sample.count("\ufffd") > len(sample) // 10:
        raise InputError(f"{name} looks like a binary file (mostly undecodable bytes), not a text log", field=FIELD)
    return text
