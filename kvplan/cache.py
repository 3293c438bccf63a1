"""A small on-disk cache of derived JSON (validated presets, weight estimates) that cannot lie.

Where: ``$KVPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvplan``, else ``~/.cache/kvplan``; ``KVPLAN_NO_CACHE=1``
turns it off.  Entries are named by their caller's key (which must change whenever the inputs do); each is a
header line and the data::

    {"checksum": digest(data text), "format": FORMAT, "ident": digest(ident), "kind": kind, "kvplan": __version__}
    <the data as canonical JSON text>

where ``ident`` is what the data was derived from, as the caller states it (a preset file's path and content, a
model config and its sharding ...) and the data checksum is taken over the data's bytes exactly as written
(:func:`canonical`), so checking it costs one hash, no re-serialising.  An entry is used only when every one of
those matches, the data has the shape the caller
expects (``shape``, else the kind's entry in :data:`SHAPES`, else a JSON object) and the file is a regular file of
at most :data:`MAX_ENTRY_BYTES` -- opened non-blocking and without following symlinks, so a FIFO or a device in
place of an entry is a miss, never a hang.  Anything else is a miss, and the caller's next :func:`store` rewrites
the entry: a tampered, truncated, stale or wrongly shaped entry heals on the next run.

Writers are safe against each other: an entry is written to a fresh temporary file in the same folder and moved
into place with ``os.replace`` (atomic), so a reader sees the old entry or the new one, never a mix.  A cache that
cannot be read or written is ignored: it only ever saves time.

This module is in the core layer, below :mod:`kvplan.inputs.read`, so it holds its own small bounded read
(:func:`_read_entry`) with the same rules (regular file, size checked before and while reading).
"""

from __future__ import annotations

import json
import os
import re
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvplan import __version__

#: bump when the entry layout changes (every older entry is then a miss)
FORMAT = 3
#: no entry is read or written above this size (a weight estimate is a few KiB, a validated preset less)
MAX_ENTRY_BYTES = 8 * 2**20

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _weights_shape(data: Any) -> bool:
    """The SGLang weight estimate (kvplan.engines.sglang.weight_load.weight_estimate): per_gpu_bytes, method, notes,
    breakdown of [name, bytes] pairs."""
    if not isinstance(data, dict) or set(data) != {"per_gpu_bytes", "method", "notes", "breakdown"}:
        return False
    nbytes, notes, rows = data["per_gpu_bytes"], data["notes"], data["breakdown"]
    return (
        isinstance(nbytes, int)
        and not isinstance(nbytes, bool)
        and nbytes >= 0
        and isinstance(data["method"], str)
        and isinstance(notes, list)
        and all(isinstance(n, str) for n in notes)
        and isinstance(rows, list)
        and all(isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], int) for r in rows)
    )


#: the shape each kind's data must have to be used (callers may pass their own ``shape`` to :func:`load`)
SHAPES: dict[str, Callable[[Any], bool]] = {"weights": _weights_shape}


def cache_dir(kind: str) -> Path | None:
    if os.environ.get("KVPLAN_NO_CACHE") == "1":
        return None
    base = os.environ.get("KVPLAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kvplan"
    )
    return Path(base) / kind


def entry_path(kind: str, key: str) -> Path | None:
    """The file of ``key``'s entry (characters outside ``[A-Za-z0-9._-]`` in the key become ``_``)."""
    d = cache_dir(kind)
    return None if d is None else d / f"{_UNSAFE.sub('_', key)[:200]}-{__version__}.json"


def canonical(data: Any) -> str:
    """The data's JSON text as an entry holds it: sorted keys, no spaces, no NaN / inf (ValueError for those).

    Example: ``canonical({"b": 1, "a": [1.5, "x"]}) == '{"a":[1.5,"x"],"b":1}'``.
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def digest(data: bytes) -> str:
    """The checksum an entry carries for its ident and its data: CRC-32 and Adler-32 of the bytes, 16 hex digits.

    It catches a corrupted, truncated, stale or hand-edited entry (not a deliberate forgery, which nothing local
    could stop); zlib is used instead of hashlib because hashlib's OpenSSL import alone costs ~2.5 ms of every start.
    Example: ``digest(b"") == "0000000000000001"``.
    """
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _sha(text: str) -> str:
    return digest(text.encode("utf-8"))


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _read_entry(path: Path) -> bytes | None:
    """The entry's bytes, or None unless it is a regular file (not a symlink) of at most MAX_ENTRY_BYTES (checked
    from fstat before reading, and by reading at most one byte more than fstat said)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        parts, want = [], st.st_size + 1
        while want > 0:
            chunk = os.read(fd, want)
            if not chunk:
                break
            parts.append(chunk)
            want -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    raw = b"".join(parts)
    return raw if len(raw) <= st.st_size else None  # grew while read: not trusted


_HEADER_KEYS = {"format", "kvplan", "kind", "ident", "checksum"}


def _header_ok(header: Any, kind: str, ident: str) -> bool:
    return (
        isinstance(header, dict)
        and set(header) == _HEADER_KEYS
        and (header["format"], header["kvplan"], header["kind"], header["ident"])
        == (FORMAT, __version__, kind, _sha(ident))
    )


def load(kind: str, key: str, ident: str, *, shape: Callable[[Any], bool] | None = None) -> Any | None:
    """The cached data for ``key``, or None on a miss: no entry, or one that is not a regular file, is too large,
    is not valid JSON, or whose format, kvplan version, kind, ident checksum, data checksum or shape does not match
    (``shape`` defaults to ``SHAPES[kind]``, else "a JSON object")."""
    path = entry_path(kind, key)
    if path is None:
        return None
    raw = _read_entry(path)
    if raw is None:
        return None
    head, sep, body = raw.partition(b"\n")
    try:
        header = json.loads(head)
        if not sep or not _header_ok(header, kind, ident) or header["checksum"] != digest(body):
            return None
        data = json.loads(body)
        ok = (shape or SHAPES.get(kind) or (lambda d: isinstance(d, dict)))(data)
    except (ValueError, RecursionError, TypeError):  # not JSON, digits over Python's limit ...
        return None
    return data if ok else None


def store(kind: str, key: str, ident: str, data: Any) -> None:
    """Write ``data`` (JSON-serialisable) as ``key``'s entry, atomically; nothing is written for data that is not
    canonical JSON or larger than MAX_ENTRY_BYTES, and a folder that cannot be written is ignored."""
    path = entry_path(kind, key)
    if path is None:
        return
    try:
        body = canonical(data).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return
    header = json.dumps(
        {"format": FORMAT, "kvplan": __version__, "kind": kind, "ident": _sha(ident), "checksum": digest(body)},
        sort_keys=True,
        separators=(",", ":"),
    )
    blob = header.encode("utf-8") + b"\n" + body
    if len(blob) > MAX_ENTRY_BYTES:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # lazy: only a store needs it (tempfile imports random, ~1 ms of every start)

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
