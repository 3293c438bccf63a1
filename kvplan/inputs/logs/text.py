"""Text clean-up and line finding for start-up logs: newlines, ANSI colours, control characters, the marker
search that picks the candidate lines, rank tags in line prefixes, bounded windows, GiB figures.

Nothing here knows an engine: the markers come from the engine readers (:mod:`kvplan.inputs.logs.sglang`,
:mod:`kvplan.inputs.logs.vllm`).  Every step is linear in the text and looks at bounded windows only, so no
regular expression can backtrack over a whole log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from kvplan.units import MAX_BYTES
from kvplan.units import GiB as GIB

# Bounds that keep every call linear and small.
MAX_LINE = 4096  # characters of an ordinary line that are looked at
MAX_ARGS_LINE = 512 * 1024  # characters of a server_args / config line that are parsed
MAX_ARGS_JOIN_LINES = 400  # continuation lines joined to a wrapped server_args repr
WINDOW = 600  # characters after a marker that its regex may read
WIDE_WINDOW = 6000  # for lines with long lists before the figure (CUDA graph "bs=[...]")

_ANSI_RE = re.compile(r"\x1b(?:\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])")
# Colour codes whose ESC byte was lost in a copy/paste ("[1;36m(EngineCore pid=1)[0m").
_BARE_SGR_RE = re.compile(r"\[(?:\d{1,3}(?:;\d{1,3}){0,6})?m")
_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

NUM = r"(-?\d+(?:\.\d+)?)"
INT = r"(\d[\d,]{0,30})"

# A line that starts a new log record (ends a wrapped repr): a timestamp, a level or a "(Worker pid=N)" prefix.
NEW_RECORD_RE = re.compile(r"\s*(?:\[\d{4}-\d\d-\d\d|\d{4}-\d\d-\d\d|(?:INFO|WARNING|ERROR|DEBUG)\b|\(\w+ pid=)")
# The header comment of a kvplan log fixture ("# source: ...").
HEADER_RE = re.compile(r"^\s*#\s*(source|engine|gpu|model|note|notes|parallelism|case)\s*:", re.I)


def normalize(text: str) -> str:
    """\\r\\n and bare \\r become \\n; ANSI escape sequences are removed (both linear, C-speed)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    return text


def clean_line(line: str) -> str:
    """Per-line clean-up of a candidate line: colour codes that lost their ESC byte, control characters."""
    if "m" in line and "[" in line:
        line = _BARE_SGR_RE.sub("", line)
    if _CTRL_RE.search(line):
        line = _CTRL_RE.sub(" ", line)
    return line


# Marker texts that make a line worth looking at. Found with str.find over the whole text, so a 100 MB log of
# request traffic costs a few passes of memchr-speed search, not a regex per line.
MARKERS = (
    "server_args=",
    "LLM engine (v",
    "non-default args:",
    "Load weight begin",
    "Load weight end",
    "KV Cache is allocated",
    "KV Cache VA upper bound",
    "KV cache allocated",
    "Memory pool end",
    "max_total_num_tokens=",
    "DSV4 ",
    "DSv4 ",
    "Mamba Cache is allocated",
    "Use sliding window memory pool",
    "Memory profiling",
    "graph end",
    "Using KV cache dtype:",
    "Model loading took",
    "Loading model weights took",
    "Available KV cache memory",
    "KV cache size:",
    "Maximum concurrency for",
    "GPU blocks:",
    "cuda blocks:",
    "CUDA blocks:",
    "num_gpu_blocks",
    "Graph capturing finished",
    "Estimated CUDA graph memory",
    "Free memory on device",
    "total_gpu_memory (",
    "memory for KV Cache as specified",
    "model weights take",
    "non_torch_memory takes",
    "activation peak memory takes",
    "reserved for KV Cache",
    "KV cache is needed",
    "Total non KV cache memory",
    "device_name=",
    "(UUID",
    "MiB /",
    "AMD Instinct",
    "launch_server",
    "sglang serve",
    "vllm serve",
    "vllm.entrypoints",
    "\u2588  version",
    "\u2588 version",  # the logo line as an HTML copy prints it (its run of spaces collapsed)
    "server version",
    "API version",
    "sgl-dev:",
    "sglang==",
    "sglang:",
    # lines that only bound the release (kvplan.inputs.logs.formats)
    "Init torch distributed ends",
    "Memory baseline taken",
    "CUDA graph memory profiling is enabled",
)
# Frequent, weak markers: only their first few hundred hits are looked at.
WEAK_MARKERS = ("sglang", "SGLang", "vllm", "vLLM", "NVIDIA")
_MAX_HITS = 2000
_MAX_WEAK_HITS = 200
_MAX_CANDIDATES = 20000

# In a very large log, every marker is searched in the head and the tail; the middle (request traffic, or a
# restart) is searched for the few markers that every start-up prints. This keeps a 100 MB log near one second.
_HEAD = 8 * 2**20
_TAIL = 4 * 2**20
_MIDDLE_MARKERS = (
    "KV Cache is allocated",
    "KV cache size:",
    "KV cache memory",
    "Load weight",
    "max_total_num_tokens=",
    "server_args=",
    "Model loading took",
)


@dataclass(frozen=True)
class Candidate:
    """One line of the log that holds a marker: ``text[start:end]``, the first marker at offset ``first``."""

    text: str
    start: int
    end: int
    first: int

    def find(self, marker: str, *, reach: int) -> int:
        """Offset of ``marker`` within the first ``reach`` characters of the line, or -1."""
        return self.text.find(marker, self.start, min(self.end, self.start + reach))

    def following(self, limit: int) -> Iterator[str]:
        """Up to ``limit`` lines after this one (for wrapped reprs and commands), each at most MAX_ARGS_LINE long."""
        text, tlen = self.text, len(self.text)
        pos = self.end + 1
        for _ in range(limit):
            if pos >= tlen:
                return
            nl = text.find("\n", pos, pos + MAX_ARGS_LINE)
            if nl < 0:
                nl = min(tlen, pos + MAX_ARGS_LINE)
            yield text[pos:nl]
            pos = nl + 1


def _regions(n: int) -> list[tuple[int, int, tuple[str, ...]]]:
    if n <= _HEAD + _TAIL:
        return [(0, n, MARKERS + WEAK_MARKERS)]
    return [
        (0, _HEAD, MARKERS + WEAK_MARKERS),
        (_HEAD - 200, n - _TAIL + 200, _MIDDLE_MARKERS),
        (n - _TAIL, n, MARKERS + WEAK_MARKERS),
    ]


def _mark_hits(text: str, mk: str, start: int, end: int, found: dict[int, tuple[int, int]]) -> bool:
    """Record every line of ``text[start:end]`` holding ``mk`` (line start -> (line end, first marker));
    True when a strong marker hit its cap."""
    cap = _MAX_WEAK_HITS if mk in WEAK_MARKERS else _MAX_HITS
    n = len(text)
    pos = text.find(mk, start, end)
    hits = 0
    while pos >= 0:
        ls = text.rfind("\n", 0, pos) + 1
        if ls in found:
            le, first = found[ls]
            if pos < first:
                found[ls] = (le, pos)
        else:
            le = text.find("\n", pos)
            if le < 0:
                le = n
            found[ls] = (le, pos)
        hits += 1
        if hits >= cap:
            return mk not in WEAK_MARKERS
        pos = text.find(mk, le + 1, end) if le < end else -1
    return False


def candidate_lines(text: str) -> tuple[list[Candidate], bool]:
    """Every line holding a marker, in text order, and whether a marker had more hits than are read."""
    found: dict[int, tuple[int, int]] = {}
    capped = False
    for start, end, markers in _regions(len(text)):
        for mk in markers:
            capped = _mark_hits(text, mk, start, end, found) or capped
            if len(found) > _MAX_CANDIDATES:
                return _sorted(text, found), True
    return _sorted(text, found), capped


def _sorted(text: str, found: dict[int, tuple[int, int]]) -> list[Candidate]:
    return [Candidate(text, ls, le, first) for ls, (le, first) in sorted(found.items())]


def gib_to_bytes(x: float) -> int:
    """A printed GiB (SGLang "GB" = 2**30) figure in bytes: ``round(x * 2**30)``; 1.5 -> 1,610,612,736.

    A garbled figure too long for a float (300+ digits) is clamped to +-MAX_BYTES instead of crashing the reader.
    """
    v = x * GIB
    return _clamped(v) if math.isinf(v) else round(v)


def to_bytes(v: float) -> int:
    """A printed byte figure as an int (truncated, ``int(v)``); an infinite one is clamped to +-MAX_BYTES."""
    return _clamped(v) if math.isinf(v) else int(v)


def _clamped(v: float) -> int:
    return MAX_BYTES if v > 0 else -MAX_BYTES


def to_int(s: str) -> int:
    """A printed integer with thousands separators: "1,024" -> 1024."""
    return int(s.replace(",", ""))


def window(line: str, marker: str, *, wide: bool = False) -> tuple[int, str] | None:
    """(offset of ``marker``, the WINDOW (or WIDE_WINDOW) characters from it), or None when absent."""
    i = line.find(marker)
    if i < 0:
        return None
    return i, line[i : i + (WIDE_WINDOW if wide else WINDOW)]


def first_version(res: tuple[re.Pattern[str], ...], line: str) -> str | None:
    """The first group of the first pattern that matches, without trailing punctuation."""
    m = first_version_match(res, line)
    return m.group(1).rstrip(".,;)") if m else None


def first_version_match(res: tuple[re.Pattern[str], ...], line: str) -> re.Match[str] | None:
    """The match of the first pattern that matches ``line`` (group 1: the version), or None."""
    for r in res:
        m = r.search(line)
        if m:
            return m
    return None


# --------------------------------------------------------------------------------------------------
# Rank tags
# --------------------------------------------------------------------------------------------------

_RANK_TOKEN_RE = re.compile(r"(?<![A-Za-z])(ATTN_DP|DP|PP|TP|EP|CP|DCP)[ _]?(\d{1,4})(?!\d)")
_PID_RE = re.compile(r"\bpid=(\d{1,9})")


def rank_of(prefix: str) -> str:
    """A key naming the rank that printed a line, from the text before the marker ('' if none).

    Example: ``"[2025-01-23 19:35:15 TP3 EP3] "`` -> ``"TP3 EP3"``; ``"(EngineCore_DP0 pid=12) "`` -> ``"DP0"``;
    ``"(Worker pid=7) "`` -> ``"pid7"``.
    """
    prefix = prefix[-200:]
    toks = _RANK_TOKEN_RE.findall(prefix)
    if toks:
        return " ".join(f"{a}{b}" for a, b in toks)
    m = _PID_RE.search(prefix)
    if m:
        return "pid" + m.group(1)
    return ""
