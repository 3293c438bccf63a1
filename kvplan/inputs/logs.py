"""Reader for SGLang and vLLM startup logs: the numbers each engine prints while it sizes its KV cache.

The reader is keyword driven: for every line it looks for fixed marker texts with ``str.find`` and only
then applies a small, anchored regular expression to a bounded window after the marker. Prefixes such as
timestamps, ``docker logs -t`` / ``docker compose`` prefixes, ``[2025-01-23 19:35:15 TP3]``,
``(EngineCore_DP0 pid=12)`` or ``(Worker_TP3_EP3 pid=7)`` therefore never need to be matched, and no
pattern can backtrack catastrophically (every window is at most a few KiB).

Log lines understood, with the engine code that prints them:

SGLang (sgl-project/sglang, python/sglang/srt, v0.5.23 wheel; older formats from public logs):

* ``server_args=ServerArgs(k=v, ...)`` (older builds) and ``server_args={'k': v, ...}``
  (entrypoints/engine.py ``Engine.__init__`` logs ``ServerArgs.resolved_dict()``).
* ``Load weight begin. avail mem=X GB`` and ``Load weight end. [elapsed=..., ]type=..., [dtype=..., ]
  avail mem=X GB[, mem usage=Y GB]`` (model_executor/model_runner.py ``ModelRunner.load_model``).
* ``[<label> ]KV Cache is allocated. [dtype: D, ][#tokens: N, ]K size: a GB, V size: b GB`` or
  ``... KV size: c GB`` and the post-capture variants ``KV Cache VA upper bound.`` /
  ``Post-capture KV sizing: KV cache allocated. ...`` (mem_cache/memory_pool.py
  ``_finalize_allocation_log``; model_executor/model_runner_components/kv_pool_runtime.py).
* ``Memory pool end. avail mem=X GB`` (mem_cache/kv_cache_configurator.py).
* ``max_total_num_tokens=N, chunked_prefill_size=..., max_prefill_tokens=..., max_running_requests=R,
  context_len=C, available_gpu_mem=X GB`` (managers/scheduler.py, TP rank 0 only).
* ``Capture ... graph end. ... mem usage=Y GB ...`` (model_runner_components/cuda_graph_setup.py; the
  2025 format ``Capture cuda graph end. Time elapsed: t s. avail mem=X GB. mem usage=Y GB.``).
* ``DSV4 memory calculation: k=v, ...`` and ``DSV4 pool sizes: full=..., ...``
  (model_executor/pool_configurator.py ``DSV4PoolConfigurator``).
* ``Mamba Cache is allocated. max_mamba_cache_size: K, conv_state size: XGB, ssm_state size: YGB``,
  ``Use sliding window memory pool. full_layer_tokens=F, swa_layer_tokens=S``,
  ``Memory profiling: available_gpu_memory=... GB, total_gpu_memory=... GB, ...`` (DSv4-era builds).

vLLM (vllm-project/vllm, v0.33.0 wheel; older formats from public logs):

* ``Initializing a V1 LLM engine (vX) with config: model=..., ...`` (v1/engine/core.py, the config string
  is ``VllmConfig.__str__`` in config/vllm.py), V0 ``Initializing an LLM engine (vX) with config: ...``.
* ``non-default args: {...}`` (entrypoints/common/startup.py ``log_non_default_args``).
* ``Model loading took X GiB[ memory] and t seconds`` (v1/worker/gpu/model_runner.py), V0
  ``Loading model weights took X GB``.
* ``Available KV cache memory: X GiB`` (v1/worker/gpu_worker.py ``determine_available_memory``).
* ``GPU KV cache size: N tokens[, ]Maximum concurrency for L tokens per request: C.CCx``
  (v1/core/kv_cache_utils.py ``update_kv_cache_capacity``; two lines up to 0.28).
* ``Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (u, R GiB). Actual usage is
  ...`` (v1/worker/gpu_worker.py ``_compile_or_warm_up_model``; 0.10-era wording "W GiB for weight, P GiB
  for peak activation, N GiB for non-torch memory, and G GiB for CUDAGraph memory").
* ``Graph capturing finished in N secs, took X GiB``; ``Estimated CUDA graph memory: X GiB total``.
* ``Memory profiling takes ...`` (0.7-0.9 multi-line form and the 0.33 debug form), V0
  ``Memory profiling results: total_gpu_memory=...GiB ... kv_cache_size=...GiB``, ``# GPU blocks: N``,
  ``num_gpu_blocks is: N`` and the start-up error ``(X GiB KV cache is needed, which is larger than the
  available KV cache memory (Y GiB)``.

Units: SGLang's "GB" divides by 2**30 (``get_available_gpu_memory`` and ``/ GB`` with ``GB = 1 << 30``), so
every GB/GiB figure becomes ``round(value * 2**30)`` bytes. A printed figure has two decimals: it is known to
+-0.005 GiB (about 5.4 MB).

Several ranks: free-memory and token figures are taken per rank (the first print of each rank, so a later
draft-model load does not replace the target's figures), then the minimum over ranks (SGLang sizes its pool
from the minimum over the TP group); usage figures (weight load, CUDA graph) take the maximum over ranks.
A rank is recognised from ``DPn``/``PPn``/``TPn``/``EPn`` tokens or ``pid=N`` in the line prefix.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvplan.errors import InputError

GIB = 1 << 30
MIB = 1 << 20

# Bounds that keep every call linear and small.
_MAX_LINE = 4096  # characters of an ordinary line that are looked at
_MAX_ARGS_LINE = 512 * 1024  # characters of a server_args / config line that are parsed
_MAX_ARGS_JOIN_LINES = 400  # continuation lines joined to a wrapped server_args repr
_MAX_VALUE_LEN = 20_000  # longest single value handed to ast.literal_eval
_WINDOW = 600  # characters after a marker that its regex may read
_WIDE_WINDOW = 6000  # for lines with long lists before the figure (CUDA graph "bs=[...]")

_ANSI_RE = re.compile(r"\x1b(?:\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])")
# Colour codes whose ESC byte was lost in a copy/paste ("[1;36m(EngineCore pid=1)[0m").
_BARE_SGR_RE = re.compile(r"\[(?:\d{1,3}(?:;\d{1,3}){0,6})?m")
_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_NUM = r"(-?\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]{0,30})"

_NEW_RECORD_RE = re.compile(r"\s*(?:\[\d{4}-\d\d-\d\d|\d{4}-\d\d-\d\d|(?:INFO|WARNING|ERROR|DEBUG)\b|\(\w+ pid=)")
_HEADER_RE = re.compile(r"^\s*#\s*(source|engine|gpu|model|note|notes|parallelism|case)\s*:", re.I)


@dataclass(frozen=True)
class LogFacts:
    """What one startup log says about KV sizing. Bytes are ints; ``None`` = not printed."""

    engine: str  # "sglang" | "vllm"
    engine_version: str | None = None
    server_args: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    gpu_name: str | None = None
    gpu_total_bytes: int | None = None
    # SGLang measured values
    free_before_weights_bytes: int | None = None
    free_after_weights_bytes: int | None = None
    weight_load_bytes: int | None = None
    kv_tokens: int | None = None
    k_bytes: int | None = None
    v_bytes: int | None = None
    kv_bytes: int | None = None
    max_total_num_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    free_after_pool_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    dsv4: dict[str, Any] = field(default_factory=dict)
    # vLLM measured values
    model_loading_bytes: int | None = None
    available_kv_cache_bytes: int | None = None
    gpu_kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    peak_activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    total_gpu_memory_bytes: int | None = None
    warnings: tuple[str, ...] = ()
    # Everything else recognised (SWA/Mamba pools, profiling lines, CLI flags ...), keyed by a short name.
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Text clean-up
# --------------------------------------------------------------------------------------------------


def _normalize(text: str) -> str:
    """\r\n and bare \r become \n; ANSI escape sequences are removed (both linear, C-speed)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    return text


def _clean_line(line: str) -> str:
    """Per-line clean-up of a candidate line: colour codes that lost their ESC byte, control characters."""
    if "m" in line and "[" in line:
        line = _BARE_SGR_RE.sub("", line)
    if _CTRL_RE.search(line):
        line = _CTRL_RE.sub(" ", line)
    return line


# Marker texts that make a line worth looking at. Found with str.find over the whole text, so a 100 MB log of
# request traffic costs a few passes of memchr-speed search, not a regex per line.
_MARKERS = (
    "server_args=", "LLM engine (v", "non-default args:",
    "Load weight begin", "Load weight end", "KV Cache is allocated", "KV Cache VA upper bound",
    "KV cache allocated", "Memory pool end", "max_total_num_tokens=", "DSV4 ", "DSv4 ", "Mamba Cache is allocated",
    "Use sliding window memory pool", "Memory profiling", "graph end", "Using KV cache dtype:",
    "Model loading took", "Loading model weights took", "Available KV cache memory", "KV cache size:",
    "Maximum concurrency for", "GPU blocks:", "cuda blocks:", "CUDA blocks:", "num_gpu_blocks", "Graph capturing finished", "Estimated CUDA graph memory",
    "Free memory on device", "total_gpu_memory (", "memory for KV Cache as specified", "model weights take", "non_torch_memory takes",
    "activation peak memory takes", "reserved for KV Cache", "KV cache is needed", "Total non KV cache memory",
    "device_name=", "(UUID", "MiB /", "AMD Instinct",
    "launch_server", "sglang serve", "vllm serve", "vllm.entrypoints", "\u2588  version", "server version",
    "API version", "sgl-dev:", "sglang==", "sglang:",
)
# Frequent, weak markers: only their first few hundred hits are looked at.
_WEAK_MARKERS = ("sglang", "SGLang", "vllm", "vLLM", "NVIDIA")
_MAX_HITS = 2000
_MAX_WEAK_HITS = 200
_MAX_CANDIDATES = 20000


# In a very large log, every marker is searched in the head and the tail; the middle (request traffic, or a
# restart) is searched for the few markers that every start-up prints. This keeps a 100 MB log near one second.
_HEAD = 8 * 2**20
_TAIL = 4 * 2**20
_MIDDLE_MARKERS = ("KV Cache is allocated", "KV cache size:", "KV cache memory", "Load weight", "max_total_num_tokens=",
                   "server_args=", "Model loading took")


def _candidate_lines(text: str) -> tuple[list[tuple[int, int, int]], bool]:
    """(line start, line end, first marker offset) of every line holding a marker, in text order."""
    found: dict[int, tuple[int, int]] = {}
    capped = False
    n = len(text)
    if n <= _HEAD + _TAIL:
        regions = [(0, n, _MARKERS + _WEAK_MARKERS)]
    else:
        regions = [(0, _HEAD, _MARKERS + _WEAK_MARKERS), (_HEAD - 200, n - _TAIL + 200, _MIDDLE_MARKERS),
                   (n - _TAIL, n, _MARKERS + _WEAK_MARKERS)]
    for start, end, markers in regions:
        for mk in markers:
            cap = _MAX_WEAK_HITS if mk in _WEAK_MARKERS else _MAX_HITS
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
                    capped = capped or mk not in _WEAK_MARKERS
                    break
                pos = text.find(mk, le + 1, end) if le < end else -1
            if len(found) > _MAX_CANDIDATES:
                return sorted((ls, le, first) for ls, (le, first) in found.items()), True
    return sorted((ls, le, first) for ls, (le, first) in found.items()), capped


def _gib_to_bytes(x: float) -> int:
    return int(round(x * GIB))


def _to_int(s: str) -> int:
    return int(s.replace(",", ""))


# --------------------------------------------------------------------------------------------------
# Rank tags
# --------------------------------------------------------------------------------------------------

_RANK_TOKEN_RE = re.compile(r"(?<![A-Za-z])(ATTN_DP|DP|PP|TP|EP|CP|DCP)[ _]?(\d{1,4})(?!\d)")
_PID_RE = re.compile(r"\bpid=(\d{1,9})")


def _rank_of(prefix: str) -> str:
    """A key naming the rank that printed a line, from the text before the marker ('' if none)."""
    prefix = prefix[-200:]
    toks = _RANK_TOKEN_RE.findall(prefix)
    if toks:
        return " ".join(f"{a}{b}" for a, b in toks)
    m = _PID_RE.search(prefix)
    if m:
        return "pid" + m.group(1)
    return ""


class _PerRank:
    """First value printed by each rank; min or max across ranks."""

    def __init__(self) -> None:
        self.by_rank: dict[str, Any] = {}
        self.repeats = 0

    def add(self, rank: str, value: Any) -> None:
        if rank in self.by_rank:
            self.repeats += 1
            return
        self.by_rank[rank] = value

    def pick(self, name: str, warnings: list[str], *, use_max: bool = False, unit: str = "") -> Any:
        if not self.by_rank:
            return None
        vals = list(self.by_rank.values())
        if len(set(vals)) > 1:
            lo, hi = min(vals), max(vals)
            if unit == "GiB":
                rng = f"{lo / GIB:.2f}..{hi / GIB:.2f} GiB"
            else:
                rng = f"{lo}..{hi}"
            warnings.append(
                f"ranks disagree on {name} ({rng} over {len(vals)} ranks): {'max' if use_max else 'min'} taken"
            )
        return max(vals) if use_max else min(vals)


# --------------------------------------------------------------------------------------------------
# Small parsers for python reprs: ServerArgs(...), dicts, vLLM "k=v, k=v" configs
# --------------------------------------------------------------------------------------------------

_SPECIAL_RE = re.compile(r"[\\'\"()\[\]{},]")
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_top_level(s: str, start: int, closer: str | None) -> tuple[list[str], int, bool]:
    """Split ``s[start:]`` at top-level commas until ``closer`` closes the outer bracket.

    Returns (pieces, end index, closed). Linear: only quote/bracket/comma/backslash characters are visited.
    """
    pieces: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    escaped_at = -2
    piece_start = start
    for m in _SPECIAL_RE.finditer(s, start):
        ch = m.group()
        i = m.start()
        if quote is not None:
            if ch == "\\":
                if escaped_at == i - 1:  # an escaped backslash
                    escaped_at = -2
                else:
                    escaped_at = i
            elif ch == quote and escaped_at != i - 1:
                quote = None
            continue
        if ch in ("'", '"'):
            quote = ch
            escaped_at = -2
        elif ch in _OPEN:
            stack.append(_OPEN[ch])
        elif ch in ")]}":
            if stack:
                if stack[-1] == ch:
                    stack.pop()
                # a mismatched closer inside a value is tolerated (kept in the value text)
            elif closer is not None and ch == closer:
                pieces.append(s[piece_start:i])
                return pieces, i, True
        elif ch == "," and not stack:
            pieces.append(s[piece_start:i])
            piece_start = i + 1
    pieces.append(s[piece_start:])
    return pieces, len(s), False


_NAME_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]{0,80})\s*=(?!=)")
_QKEY_RE = re.compile(r"""\s*(['"])([^'"]{1,120})\1\s*:""")
_ENUM_RE = re.compile(r"<([\w.]+): ('[^']*'|-?\d+)>")


def _literal(text: str) -> Any:
    """A python literal from its repr; anything else is returned as the stripped string."""
    t = text.strip()
    if not t:
        return t
    if len(t) > _MAX_VALUE_LEN:
        return t
    if t in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[t]
    if t.startswith("<") and (m := _ENUM_RE.fullmatch(t)):  # <LoadFormat.AUTO: 'auto'>
        return _literal(m.group(2))
    try:
        return ast.literal_eval(t)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if t.startswith("torch."):  # dtype=torch.bfloat16
        return t
    return t


def _parse_kv_pieces(pieces: list[str], *, quoted_keys: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in pieces:
        p = p.strip()
        while p.startswith(("...", "\u2026")):  # an author's elision ("..., ... kv_cache_dtype='auto'")
            p = p[3:].lstrip() if p.startswith("...") else p[1:].lstrip()
        if not p:
            continue
        m = (_QKEY_RE if quoted_keys else _NAME_RE).match(p)
        if not m:
            continue
        key = m.group(2) if quoted_keys else m.group(1)
        out[key] = _literal(p[m.end():])
    return out


def _parse_call_repr(s: str, open_idx: int) -> tuple[dict[str, Any], bool]:
    """``Name(k=v, ...)`` starting at the '(' at ``open_idx``: (dict, closed)."""
    pieces, _end, closed = _split_top_level(s, open_idx + 1, ")")
    return _parse_kv_pieces(pieces, quoted_keys=False), closed


def _parse_dict_repr(s: str, open_idx: int) -> tuple[dict[str, Any], bool]:
    """``{'k': v, ...}`` starting at the '{' at ``open_idx``: (dict, closed). literal_eval first, then piecewise."""
    pieces, end, closed = _split_top_level(s, open_idx + 1, "}")
    if closed and end - open_idx < _MAX_VALUE_LEN * 10:
        try:
            val = ast.literal_eval(s[open_idx : end + 1])
            if isinstance(val, dict):
                return {str(k): v for k, v in val.items()}, True
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return _parse_kv_pieces(pieces, quoted_keys=True), closed


# --------------------------------------------------------------------------------------------------
# Line patterns (applied to a bounded window that starts at the marker)
# --------------------------------------------------------------------------------------------------

_SG_AVAIL_RE = re.compile(r"avail mem=\s*" + _NUM + r"(\s*GB)?")
_SG_USAGE_RE = re.compile(r"mem usage=\s*" + _NUM + r"(\s*GB)?")
_SG_TYPE_RE = re.compile(r"\btype=([A-Za-z_][\w.]{0,100})")
_SG_KV_TOKENS_RE = re.compile(r"#tokens:\s*" + _INT)
_SG_K_RE = re.compile(r"(?<![A-Za-z])K size:\s*" + _NUM + r"(\s*GB)?")
_SG_V_RE = re.compile(r"(?<![A-Za-z])V size:\s*" + _NUM + r"(\s*GB)?")
_SG_KVSIZE_RE = re.compile(r"KV size:\s*" + _NUM + r"(\s*GB)?")
_SG_DTYPE_RE = re.compile(r"dtype:\s*([\w.]{1,40})")
_SG_LABEL_RE = re.compile(r"(?<![\w])(Full|SWA|MiniMax [\w\- .]{1,60}?|[Dd]raft(?: \w{1,20})?)\s*$")
_SG_SCHED_RE = {
    "max_total_num_tokens": re.compile(r"max_total_num_tokens=\s*(\d{1,15})"),
    "chunked_prefill_size": re.compile(r"chunked_prefill_size=\s*(-?\d{1,15})"),
    "max_prefill_tokens": re.compile(r"max_prefill_tokens=\s*(\d{1,15})"),
    "max_running_requests": re.compile(r"max_running_requests=\s*(\d{1,15})"),
    "context_len": re.compile(r"context_len=\s*(\d{1,15})"),
}
_SG_SCHED_MEM_RE = re.compile(r"available_(?:gpu|cpu)_mem=\s*" + _NUM + r"\s*GB")
_KV_PAIR_RE = re.compile(r"([A-Za-z_][\w]{0,60})=\s*([^,\s][^,]{0,80})")
_SG_PROFILING_RE = re.compile(r"([a-z_]{1,40})=\s*" + _NUM + r"\s*(GB)?")
_SG_MAMBA_SIZE_RE = re.compile(r"max_mamba_cache_size:\s*(\d{1,15})")
_SG_MAMBA_CONV_RE = re.compile(r"conv_state size:\s*" + _NUM + r"\s*GB")
_SG_MAMBA_SSM_RE = re.compile(r"ssm_state size:\s*" + _NUM + r"\s*GB")
_SG_SWA_RE = re.compile(r"(full|swa)_layer_tokens=\s*(\d{1,15})")
_SG_VERSION_RES = (
    re.compile(r"\bsglang(?:[ -]kt)?\s*(?:==|version:?|:)\s*v?(\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+|\.dev\d+)?)", re.I),
    re.compile(r"\bsglang:v?(\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?)"),  # docker image tag lmsysorg/sglang:v0.5.8
    re.compile(r"\bsgl-dev:v?(\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?)"),
    re.compile(r"\bsglang-(\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?)(?:[-.](?:py|tar|whl)|\s|$)"),
)

_VL_LOADING_RE = re.compile(r"Model loading took\s+" + _NUM + r"\s*(GiB|GB)")
_VL_V0_LOADING_RE = re.compile(r"Loading model weights took\s+" + _NUM + r"\s*(GiB|GB)")
_VL_AVAIL_RE = re.compile(r"Available KV cache memory:\s*" + _NUM + r"\s*(GiB|GB)")
_VL_TOKENS_RE = re.compile(r"KV cache size:\s*" + _INT + r"\s*tokens")
_VL_CONC_RE = re.compile(r"Maximum concurrency for\s*" + _INT + r"\s*tokens per request:\s*" + _NUM + r"\s*x")
_VL_BLOCKS_RE = re.compile(r"#\s*(?:GPU|cuda|CUDA|gpu|XPU|xpu|NPU|npu)\s+blocks:\s*" + _INT)
_VL_BLOCKS2_RE = re.compile(r"num_gpu_blocks(?: is)?\s*[:=]\s*(\d{1,15})")
_VL_GRAPH_RE = re.compile(r"Graph capturing finished in\s*" + _NUM + r"\s*secs?, took\s*" + _NUM + r"\s*GiB")
_VL_GRAPH_EST_RE = re.compile(r"Estimated CUDA graph memory:\s*" + _NUM + r"\s*GiB")
_VL_FREE_RE = re.compile(r"Free memory on device[^(]{0,40}\(\s*" + _NUM + r"\s*/\s*" + _NUM + r"\s*GiB\)")
_VL_DESIRED_RE = re.compile(r"Desired GPU memory utilization is \(\s*" + _NUM + r"\s*,\s*" + _NUM + r"\s*GiB\)")
_VL_USAGE_RES = {
    "weight": re.compile(_NUM + r"\s*GiB for weight"),
    "consumed": re.compile(_NUM + r"\s*GiB for consumed memory"),
    "peak_activation": re.compile(_NUM + r"\s*GiB for peak activation"),
    "non_torch": re.compile(_NUM + r"\s*GiB for non-torch memory"),
    "cuda_graph": re.compile(_NUM + r"\s*GiB for CUDAGraph memory"),
}
_VL_CURRENT_KV_RE = re.compile(r"Current kv cache memory in use is\s*" + _NUM + r"\s*(bytes|GiB)")
_VL_V0_PROFILE_RE = re.compile(r"([a-z_]{1,40})=\s*" + _NUM + r"\s*(GiB|GB)?")
_VL_TOTAL_RE = re.compile(r"total_gpu_memory\s*\(\s*" + _NUM + r"\s*GiB\)\s*x\s*gpu_memory_utilization\s*\(\s*" + _NUM)
_VL_PROFILE_PARTS = {
    "weights": re.compile(r"model weights take\s*" + _NUM + r"\s*GiB"),
    "non_torch": re.compile(r"non_torch_memory takes\s*" + _NUM + r"\s*GiB"),
    "peak_activation": re.compile(r"activation peak memory takes\s*" + _NUM + r"\s*GiB"),
    "kv": re.compile(r"reserved for KV Cache is\s*" + _NUM + r"\s*GiB"),
}
_VL_DEBUG_PROFILE_RES = {
    "non_kv_cache": re.compile(r"Total non KV cache memory:\s*" + _NUM + r"\s*GiB"),
    "torch_peak_increase": re.compile(r"torch peak memory increase:\s*" + _NUM + r"\s*GiB"),
    "total_consumed": re.compile(r"total consumed \(from mem_get_info\):\s*" + _NUM + r"\s*GiB"),
    "weights": re.compile(r"weights memory:\s*" + _NUM + r"\s*GiB"),
}
_VL_NEEDED_RE = re.compile(
    r"\(\s*" + _NUM + r"\s*GiB KV cache is needed, which is larger than the available KV cache memory \(\s*"
    + _NUM + r"\s*GiB\)"
)
_VL_RESERVED_RE = re.compile(
    r"Initial free memory\s*" + _NUM + r"\s*GiB, reserved\s*" + _NUM + r"\s*GiB memory for KV Cache as specified"
)
_VL_EST_LEN_RE = re.compile(r"estimated maximum model length is\s*(\d{1,15})")
_VL_MAXSEQ_RE = re.compile(r"max seq len \((\d{1,15})\)")
_VL_VERSION_RES = (
    re.compile(r"LLM engine \(v(\d+\.\d+[\w.+\-]{0,40})\) with config"),
    re.compile(r"vLLM API server version\s*v?(\d+\.\d+[\w.+\-]{0,40})"),
    re.compile(r"vLLM server version\s*v?(\d+\.\d+[\w.+\-]{0,40})"),
    re.compile(r"Launching vLLM \(v(\d+\.\d+[\w.+\-]{0,40})\)"),
    re.compile(r"vLLM batch processing API version\s*v?(\d+\.\d+[\w.+\-]{0,40})"),
    re.compile(r"version\s+(\d+\.\d+\.\d+[\w.+\-]{0,40})\s*$"),  # the ASCII-art logo line
    re.compile(r"vllm/vllm-openai:v(\d+\.\d+\.\d+[\w.+\-]{0,30})"),
    re.compile(r"\bvllm\s*==\s*(\d+\.\d+\.\d+[\w.+\-]{0,30})", re.I),
    re.compile(r"\bvllm\s*(?:version)?:\s*(\d+\.\d+\.\d+[\w.+\-]{0,30})", re.I),
)

_GPU_NAME_RES = (
    re.compile(r"\bGPU \d{1,3}: ((?:NVIDIA|AMD|Tesla|Quadro)[^()\n]{1,60}?)\s*\(UUID"),  # nvidia-smi -L
    re.compile(r"\|\s*\d{1,3}\s+((?:NVIDIA|Tesla|Quadro)[^|]{1,40}?)\s+(?:On|Off)\s*\|"),  # nvidia-smi table
    re.compile(r"device_name=((?:NVIDIA|AMD)_[A-Za-z0-9_\-]{1,60}?)(?:,|\.json|\]|\s|$)"),  # MoE config file
    re.compile(r"\b(AMD Instinct MI\d{3}[A-Z]{0,2})\b"),
)
_SMI_MEM_RE = re.compile(r"\b\d{1,7}MiB\s*/\s*(\d{3,7})MiB\b")

_CLI_START_RE = re.compile(
    r"(?:python3?\s+-m\s+sglang\.launch_server|sglang\s+serve|python3?\s+-m\s+vllm\.entrypoints\.openai\.api_server|vllm\s+serve)\b"
)
_CLI_FLAG_RE = re.compile(r"--([a-z][a-z0-9\-]{0,60})(?:[= ]\s*(\"[^\"]{0,300}\"|'[^']{0,300}'|[^\s\-][^\s]{0,300}))?")


def _window(line: str, marker: str, *, wide: bool = False) -> tuple[int, str] | None:
    i = line.find(marker)
    if i < 0:
        return None
    return i, line[i : i + (_WIDE_WINDOW if wide else _WINDOW)]


# --------------------------------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------------------------------


class _Collector:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.per: dict[str, _PerRank] = {}
        self.extra: dict[str, Any] = {}
        self.sg_hits = 0
        self.vl_hits = 0
        self.sg_mentions = 0
        self.vl_mentions = 0
        self.server_args: dict[str, Any] = {}
        self.vllm_config: dict[str, Any] = {}
        self.non_default: dict[str, Any] = {}
        self.dsv4: dict[str, Any] = {}
        self.sg_version: str | None = None
        self.vl_version: str | None = None
        self.gpu_name: str | None = None
        self.gpu_total: int | None = None
        self.cli: dict[str, Any] = {}
        self.cli_model: str | None = None
        self.truncated = 0

    def add(self, key: str, rank: str, value: Any) -> None:
        self.per.setdefault(key, _PerRank()).add(rank, value)

    def gib(self, key: str, rank: str, m: re.Match | None, unit_group: int | None = 2) -> None:
        """Add a GiB figure; a number without its unit is taken as a truncated line."""
        if m is None:
            return
        if unit_group is not None and not m.group(unit_group):
            if m.end() >= len(m.string):
                self.truncated += 1
                return
        self.add(key, rank, _gib_to_bytes(float(m.group(1))))


def _first_version(res: tuple[re.Pattern, ...], line: str) -> str | None:
    for r in res:
        m = r.search(line)
        if m:
            return m.group(1).rstrip(".,;)")
    return None


def _scan(text: str) -> _Collector:
    c = _Collector()
    cands, capped = _candidate_lines(text)
    if capped:
        c.warnings.append("very many marker lines: only the first ones of each kind were read")
    tlen = len(text)

    def following(end: int, limit: int):
        """Up to ``limit`` lines after the line that ends at ``end`` (for wrapped reprs and commands)."""
        pos = end + 1
        for _ in range(limit):
            if pos >= tlen:
                return
            nl = text.find("\n", pos, pos + _MAX_ARGS_LINE)
            if nl < 0:
                nl = min(tlen, pos + _MAX_ARGS_LINE)
            yield text[pos:nl]
            pos = nl + 1

    skip_until = -1
    for ls, le, first in cands:
        if ls < skip_until:
            continue
        head = text[ls : min(le, ls + 200)]
        if _HEADER_RE.match(head):  # fixture header comment ("# source: ...")
            continue
        # ---------------- server args / engine config (may be long and wrapped) ----------------
        j = text.find("server_args=", ls, min(le, ls + _MAX_ARGS_LINE))
        if j >= 0 and not c.server_args:
            seg = _clean_line(text[j : min(le, j + _MAX_ARGS_LINE)])
            parsed, closed = _parse_server_args(seg)
            if not closed and not seg.rstrip().endswith(")") :
                joined, consumed_end = seg, le
                for nxt in following(le, _MAX_ARGS_JOIN_LINES):
                    if _NEW_RECORD_RE.match(nxt) or len(joined) >= _MAX_ARGS_LINE:
                        break
                    joined = (joined + nxt.strip())[:_MAX_ARGS_LINE]
                    consumed_end += len(nxt) + 1
                if consumed_end > le:
                    p2, c2 = _parse_server_args(_clean_line(joined))
                    if len(p2) >= len(parsed):
                        parsed, closed = p2, c2
                        skip_until = consumed_end
            if parsed:
                c.server_args = parsed
                c.sg_hits += 1
                if not closed:
                    c.warnings.append("server_args repr not closed (line truncated?): parsed what was there")
            continue
        j = text.find("LLM engine (v", ls, min(le, ls + 2000))
        if j >= 0:
            c.vl_version = c.vl_version or _first_version(_VL_VERSION_RES[:1], text[j : j + 200])
            k2 = text.find("with config:", j, j + 200)
            if k2 >= 0 and not c.vllm_config:
                seg = _clean_line(text[k2 + len("with config:") : min(le, k2 + _MAX_ARGS_LINE)])
                pieces, _e, _closed = _split_top_level(seg, 0, None)
                c.vllm_config = _parse_kv_pieces(pieces, quoted_keys=False)
            c.vl_mentions += 1
            continue
        j = text.find("non-default args:", ls, min(le, ls + 2000))
        if j >= 0:
            b = text.find("{", j, j + 40)
            if b >= 0 and not c.non_default:
                seg = _clean_line(text[b : min(le, b + _MAX_ARGS_LINE)])
                c.non_default, closed = _parse_dict_repr(seg, 0)
                if not closed:
                    c.warnings.append("non-default args dict not closed (line truncated?): parsed what was there")
            c.vl_mentions += 1
            continue

        seg_start = max(ls, first - 300)
        line = _clean_line(text[seg_start : min(le, seg_start + _MAX_LINE)])
        if le - ls > _MAX_LINE:
            c.extra["long_lines_cut"] = c.extra.get("long_lines_cut", 0) + 1

        low_hit = False
        # ---------------- SGLang ----------------
        if "Load weight begin" in line:
            w = _window(line, "Load weight begin")
            assert w is not None
            rank = _rank_of(line[: w[0]])
            c.gib("free_before_weights", rank, _SG_AVAIL_RE.search(w[1]))
            c.sg_hits += 1
            low_hit = True
        elif "Load weight end" in line:
            w = _window(line, "Load weight end")
            assert w is not None
            rank = _rank_of(line[: w[0]])
            c.gib("free_after_weights", rank, _SG_AVAIL_RE.search(w[1]))
            c.gib("weight_load", rank, _SG_USAGE_RE.search(w[1]))
            m = _SG_TYPE_RE.search(w[1])
            if m and "architecture" not in c.extra:
                c.extra["architecture"] = m.group(1).rstrip(".,")
            c.sg_hits += 1
            low_hit = True
        elif "KV Cache is allocated" in line or "KV Cache VA upper bound" in line or "KV cache allocated" in line:
            _sg_kv_line(c, line)
            c.sg_hits += 1
            low_hit = True
        elif "Memory pool end" in line:
            w = _window(line, "Memory pool end")
            assert w is not None
            c.gib("free_after_pool", _rank_of(line[: w[0]]), _SG_AVAIL_RE.search(w[1]))
            c.sg_hits += 1
            low_hit = True
        elif "max_total_num_tokens=" in line and (w := _sched_window(line)) is not None:
            win = w[1]
            if any(k in win for k in ("max_prefill_tokens=", "max_running_requests=", "context_len=")):
                rank = _rank_of(line[: w[0]])
                for key, rx in _SG_SCHED_RE.items():
                    m = rx.search(win)
                    if m:
                        c.add("sched_" + key, rank, int(m.group(1)))
                m = _SG_SCHED_MEM_RE.search(win)
                if m:
                    c.add("sched_available_gpu_mem", rank, _gib_to_bytes(float(m.group(1))))
                c.sg_hits += 1
                low_hit = True
        elif "DSV4 memory calculation" in line or "DSV4 pool sizes" in line or "DSv4 memory calculation" in line:
            marker = "pool sizes:" if "pool sizes" in line else "calculation:"
            w = _window(line, marker, wide=True)
            if w:
                for m in _KV_PAIR_RE.finditer(w[1]):
                    c.dsv4.setdefault(m.group(1), _dsv4_value(m.group(2)))
            c.sg_hits += 1
            low_hit = True
        elif "Mamba Cache is allocated" in line:
            w = _window(line, "Mamba Cache is allocated")
            assert w is not None
            m = _SG_MAMBA_SIZE_RE.search(w[1])
            if m:
                c.extra.setdefault("mamba_cache_size", int(m.group(1)))
            m = _SG_MAMBA_CONV_RE.search(w[1])
            if m:
                c.extra.setdefault("mamba_conv_state_bytes", _gib_to_bytes(float(m.group(1))))
            m = _SG_MAMBA_SSM_RE.search(w[1])
            if m:
                c.extra.setdefault("mamba_ssm_state_bytes", _gib_to_bytes(float(m.group(1))))
            c.sg_hits += 1
        elif "Use sliding window memory pool" in line:
            w = _window(line, "Use sliding window memory pool")
            assert w is not None
            for m in _SG_SWA_RE.finditer(w[1]):
                c.extra.setdefault(f"{m.group(1)}_layer_tokens", int(m.group(2)))
            c.sg_hits += 1
        elif "Memory profiling:" in line and "available_gpu_memory=" in line:
            w = _window(line, "Memory profiling:")
            assert w is not None
            prof: dict[str, Any] = {}
            for m in _SG_PROFILING_RE.finditer(w[1]):
                val = float(m.group(2))
                prof[m.group(1) + ("_bytes" if m.group(3) else "")] = _gib_to_bytes(val) if m.group(3) else val
            c.extra.setdefault("memory_profiling", prof)
            if "total_gpu_memory_bytes" in prof and c.gpu_total is None:
                c.gpu_total = prof["total_gpu_memory_bytes"]
            c.sg_hits += 1
        elif ("Capture" in line and "graph end" in line) or "Capture cuda graph end" in line:
            w = _window(line, "Capture", wide=True)
            if w:
                rank = _rank_of(line[: w[0]])
                m = _SG_USAGE_RE.search(w[1])
                if m and (m.group(2) or m.end() < len(w[1])):
                    c.per.setdefault("sg_graph_sum", _PerRank())
                    d = c.per["sg_graph_sum"].by_rank
                    d[rank] = d.get(rank, 0) + _gib_to_bytes(float(m.group(1)))
                m = _SG_AVAIL_RE.search(w[1])
                if m:
                    c.add("free_after_graph", rank, _gib_to_bytes(float(m.group(1))))
            c.sg_mentions += 1
        elif "Using KV cache dtype:" in line:
            w = _window(line, "Using KV cache dtype:")
            assert w is not None
            c.extra.setdefault("kv_cache_torch_dtype", w[1][len("Using KV cache dtype:") :].strip()[:40])
            c.sg_mentions += 1

        # ---------------- vLLM ----------------
        if not low_hit:
            _vllm_line(c, line)

        # ---------------- engine-neutral facts ----------------
        if c.sg_version is None and ("sglang" in line.lower() or "sgl-dev" in line):
            c.sg_mentions += 1
            c.sg_version = _first_version(_SG_VERSION_RES, line)
        if "vllm" in line.lower():
            c.vl_mentions += 1
            if c.vl_version is None:
                c.vl_version = _first_version(_VL_VERSION_RES[:5] + _VL_VERSION_RES[6:], line)
        elif c.vl_version is None and "\u2588  version" in line:
            c.vl_version = _first_version(_VL_VERSION_RES[5:6], line)
        if c.gpu_name is None and ("NVIDIA" in line or "AMD" in line):
            for rx in _GPU_NAME_RES:
                m = rx.search(line)
                if m:
                    c.gpu_name = " ".join(m.group(1).replace("_", " ").split())
                    break
        if c.gpu_total is None and "MiB /" in line:
            m = _SMI_MEM_RE.search(line)
            if m:
                c.gpu_total = int(m.group(1)) * MIB
        if not c.cli and ("launch_server" in line or "serve" in line):
            m = _CLI_START_RE.search(line)
            if m:
                _parse_cli(c, line, m, following(le, 60))
    return c


_SCHED_START_RE = re.compile(r"(?<![\w])max_total_num_tokens=\d")


def _sched_window(line: str) -> tuple[int, str] | None:
    """The scheduler's ``max_total_num_tokens=N, ...`` line; not ``profiled_max_total_num_tokens=`` and the like."""
    m = _SCHED_START_RE.search(line)
    if m is None:
        return None
    return m.start(), line[m.start() : m.start() + _WINDOW]


def _dsv4_value(raw: str) -> Any:
    raw = raw.strip()
    if raw.endswith("GB"):
        try:
            return _gib_to_bytes(float(raw[:-2].strip()))
        except ValueError:
            return raw
    return _literal(raw)


def _parse_server_args(text: str) -> tuple[dict[str, Any], bool]:
    """``server_args=ServerArgs(...)`` or ``server_args={...}`` (text starts at 'server_args=')."""
    rest = text[len("server_args=") :]
    stripped = rest.lstrip()
    off = len("server_args=") + (len(rest) - len(stripped))
    if stripped.startswith("{"):
        return _parse_dict_repr(text, off)
    p = text.find("(", off, off + 60)
    if p < 0:
        return {}, False
    return _parse_call_repr(text, p)


def _sg_kv_line(c: _Collector, line: str) -> None:
    if "Post-capture KV sizing" in line:
        marker, kind = "KV cache allocated", "post"
    elif "KV Cache VA upper bound" in line:
        marker, kind = "KV Cache VA upper bound", "va"
    else:
        marker, kind = "KV Cache is allocated", "main"
    w = _window(line, marker)
    if w is None:
        return
    pos, win = w
    label = ""
    if kind != "post":
        m = _SG_LABEL_RE.search(line[max(0, pos - 60) : pos])
        if m:
            label = m.group(1).strip()
    rank = _rank_of(line[:pos])
    toks = _SG_KV_TOKENS_RE.search(win)
    km, vm, kvm = _SG_K_RE.search(win), _SG_V_RE.search(win), _SG_KVSIZE_RE.search(win)
    dm = _SG_DTYPE_RE.search(win)
    if dm:
        c.extra.setdefault("kv_cache_torch_dtype", dm.group(1).rstrip(".,"))
    if kind == "post":
        prefix = "post_"
    elif label.lower() in ("", "full"):
        prefix = "" if kind == "main" else "va_"
    else:
        prefix = "label:" + label + ":"
    if toks:
        if toks.end() >= len(win) and toks.end() == len(line) - pos:
            c.truncated += 1
        else:
            c.add(prefix + "kv_tokens", rank, _to_int(toks.group(1)))
    c.gib(prefix + "k_bytes", rank, km)
    c.gib(prefix + "v_bytes", rank, vm)
    c.gib(prefix + "kv_bytes", rank, kvm)
    if kind == "post":
        c.gib("post_free_after_pool", rank, _SG_AVAIL_RE.search(win))


def _vllm_line(c: _Collector, line: str) -> None:
    hit = False
    rank = ""
    if "Model loading took" in line:
        w = _window(line, "Model loading took")
        assert w is not None
        rank = _rank_of(line[: w[0]])
        c.gib("vl_loading", rank, _VL_LOADING_RE.search(w[1]))
        hit = True
    elif "Loading model weights took" in line:
        w = _window(line, "Loading model weights took")
        assert w is not None
        rank = _rank_of(line[: w[0]])
        c.gib("vl_loading", rank, _VL_V0_LOADING_RE.search(w[1]))
        hit = True
    if "Available KV cache memory" in line:
        w = _window(line, "Available KV cache memory")
        assert w is not None
        rank = _rank_of(line[: w[0]])
        c.gib("vl_avail_kv", rank, _VL_AVAIL_RE.search(w[1]))
        hit = True
    if "KV cache size:" in line:
        w = _window(line, "KV cache size:")
        assert w is not None
        rank = _rank_of(line[: w[0]])
        m = _VL_TOKENS_RE.search(w[1])
        if m:
            c.add("vl_tokens", rank, _to_int(m.group(1)))
        hit = True
    if "Maximum concurrency for" in line:
        w = _window(line, "Maximum concurrency for")
        assert w is not None
        rank = _rank_of(line[: w[0]])
        m = _VL_CONC_RE.search(w[1])
        if m:
            c.add("vl_conc_tokens", rank, _to_int(m.group(1)))
            c.add("vl_conc", rank, float(m.group(2)))
        hit = True
    if "blocks:" in line and "#" in line:
        m = _VL_BLOCKS_RE.search(line)
        if m:
            c.add("vl_blocks", _rank_of(line[: m.start()]), _to_int(m.group(1)))
            m2 = re.search(r"#\s*CPU blocks:\s*(\d{1,15})", line)
            if m2:
                c.extra.setdefault("num_cpu_blocks", int(m2.group(1)))
            hit = True
    if "num_gpu_blocks" in line and "override" not in line:
        m = _VL_BLOCKS2_RE.search(line)
        if m:
            c.add("vl_blocks", _rank_of(line[: m.start()]), int(m.group(1)))
            hit = True
    if "Graph capturing finished" in line:
        m = _VL_GRAPH_RE.search(line)
        if m:
            r = _rank_of(line[: m.start()])
            # The V2 runner prints this twice (profiling capture, real capture): keep the last per rank.
            c.per.setdefault("vl_graph", _PerRank()).by_rank[r] = _gib_to_bytes(float(m.group(2)))
            hit = True
    if "Estimated CUDA graph memory" in line:
        m = _VL_GRAPH_EST_RE.search(line)
        if m:
            c.extra.setdefault("estimated_cuda_graph_bytes", _gib_to_bytes(float(m.group(1))))
            hit = True
    if "Free memory on device" in line:
        w = _window(line, "Free memory on device", wide=True)
        assert w is not None
        rank = _rank_of(line[: w[0]])
        win = w[1]
        m = _VL_FREE_RE.search(win)
        if m:
            c.add("vl_free_startup", rank, _gib_to_bytes(float(m.group(1))))
            c.add("vl_total", rank, _gib_to_bytes(float(m.group(2))))
        m = _VL_DESIRED_RE.search(win)
        if m:
            c.extra.setdefault("gpu_memory_utilization", float(m.group(1)))
            c.add("vl_requested", rank, _gib_to_bytes(float(m.group(2))))
        for key, rx in _VL_USAGE_RES.items():
            m = rx.search(win)
            if m:
                c.add("vl_usage_" + key, rank, _gib_to_bytes(float(m.group(1))))
        m = _VL_CURRENT_KV_RE.search(win)
        if m:
            v = float(m.group(1))
            c.add("vl_current_kv", rank, int(v) if m.group(2) == "bytes" else _gib_to_bytes(v))
        hit = True
    if "memory for KV Cache as specified" in line:
        m = _VL_RESERVED_RE.search(line)
        if m:
            r = _rank_of(line[: m.start()])
            c.add("vl_free_startup", r, _gib_to_bytes(float(m.group(1))))
            c.add("vl_avail_kv", r, _gib_to_bytes(float(m.group(2))))
            c.extra["kv_cache_memory_bytes_override"] = True
            hit = True
    if "Memory profiling results" in line:
        w = _window(line, "Memory profiling results", wide=True)
        assert w is not None
        rank = _rank_of(line[: w[0]])
        for m in _VL_V0_PROFILE_RE.finditer(w[1]):
            key, val, unit = m.group(1), float(m.group(2)), m.group(3)
            if unit:
                c.add("v0prof_" + key, rank, _gib_to_bytes(val))
            else:
                c.extra.setdefault("v0_profile_" + key, val)
        hit = True
    if "total_gpu_memory (" in line:
        m = _VL_TOTAL_RE.search(line)
        if m:
            c.add("vl_total", _rank_of(line[: m.start()]), _gib_to_bytes(float(m.group(1))))
            c.extra.setdefault("gpu_memory_utilization", float(m.group(2)))
            hit = True
    if "takes" in line or "reserved for KV Cache" in line:
        for key, rx in _VL_PROFILE_PARTS.items():
            m = rx.search(line)
            if m:
                c.add("vlprof_" + key, _rank_of(line[: m.start()]), _gib_to_bytes(float(m.group(1))))
                hit = True
    if "Total non KV cache memory" in line:
        for key, rx in _VL_DEBUG_PROFILE_RES.items():
            m = rx.search(line)
            if m:
                c.extra.setdefault("profile_" + key + "_bytes", _gib_to_bytes(float(m.group(1))))
        hit = True
    if "KV cache is needed" in line:
        m = _VL_NEEDED_RE.search(line)
        if m:
            c.extra.setdefault("kv_needed_bytes", _gib_to_bytes(float(m.group(1))))
            c.add("vl_avail_kv_error", _rank_of(line[: m.start()]), _gib_to_bytes(float(m.group(2))))
            m2 = _VL_EST_LEN_RE.search(line)
            if m2:
                c.extra.setdefault("estimated_max_model_len", int(m2.group(1)))
            m3 = _VL_MAXSEQ_RE.search(line)
            if m3:
                c.extra.setdefault("max_seq_len", int(m3.group(1)))
            c.warnings.append("vLLM failed to start: the KV cache does not hold one max-length request")
            hit = True
    if hit:
        c.vl_hits += 1


def _parse_cli(c: _Collector, line: str, m: re.Match, nxt_lines: Any) -> None:
    """Flags of a ``python -m sglang.launch_server`` / ``sglang serve`` / ``vllm serve`` command (with ``\\`` continuations)."""
    text = line[m.start() : m.start() + 8000]
    for nxt in nxt_lines:
        if not text.rstrip().endswith("\\") or len(text) >= 16000:
            break
        text = text.rstrip()[:-1] + " " + _clean_line(nxt.strip()[:2000])
    c.cli["command"] = m.group(0)
    after = text[m.end() - m.start() :]
    if m.group(0).startswith("vllm serve"):
        pm = re.match(r"\s+([^\s\-$][^\s]{0,300})", after)
        if pm:
            c.cli_model = pm.group(1).strip("'\"")
    for fm in _CLI_FLAG_RE.finditer(after):
        name = fm.group(1).replace("-", "_")
        val: Any = fm.group(2)
        if val is None:
            val = True
        else:
            val = val.strip("'\"")
            if re.fullmatch(r"-?\d+", val):
                val = int(val)
            elif re.fullmatch(r"-?\d+\.\d*", val):
                val = float(val)
        c.cli.setdefault(name, val)
    for key in ("model_path", "model"):
        if isinstance(c.cli.get(key), str) and c.cli_model is None and not c.cli[key].startswith("$"):
            c.cli_model = c.cli[key]


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------

_SG_SIZING = ("free_before_weights", "free_after_weights", "weight_load", "kv_tokens", "k_bytes", "kv_bytes",
              "free_after_pool", "sched_max_total_num_tokens", "post_kv_tokens")
_VL_SIZING = ("vl_loading", "vl_avail_kv", "vl_tokens", "vl_conc", "vl_blocks", "vl_usage_peak_activation",
              "v0prof_kv_cache_size", "vlprof_kv", "vl_avail_kv_error", "vl_total")


def parse_log(text: str) -> LogFacts:
    """Parse SGLang or vLLM start-up log text into :class:`LogFacts`.

    Raises :class:`~kvplan.errors.InputError` (field ``LOG``) when the text is not an SGLang/vLLM start-up log
    or lacks every sizing line; the message names the lines that were looked for.
    """
    if not isinstance(text, str):
        raise InputError("log text must be a str", field="LOG")
    c = _scan(_normalize(text))

    sg_sizing = sum(1 for k in _SG_SIZING if k in c.per and c.per[k].by_rank) + (1 if c.dsv4 else 0)
    vl_sizing = sum(1 for k in _VL_SIZING if k in c.per and c.per[k].by_rank)
    if sg_sizing == 0 and vl_sizing == 0:
        if c.sg_hits or c.server_args or c.sg_mentions > c.vl_mentions:
            what = (
                "an SGLang log, but none of its KV sizing lines were found: expected 'Load weight begin/end. avail "
                "mem=...', 'KV Cache is allocated. #tokens: ...', 'Memory pool end. avail mem=...' or "
                "'max_total_num_tokens=...'"
            )
        elif c.vl_hits or c.vllm_config or c.non_default or c.vl_mentions:
            what = (
                "a vLLM log, but none of its KV sizing lines were found: expected 'Model loading took X GiB', "
                "'Available KV cache memory: X GiB', 'GPU KV cache size: N tokens' or 'Maximum concurrency for ...'"
            )
        else:
            what = (
                "not an SGLang or vLLM start-up log: none of 'Load weight end', 'KV Cache is allocated', "
                "'max_total_num_tokens=', 'Available KV cache memory', 'GPU KV cache size' was found"
            )
        if c.truncated:
            what += f" ({c.truncated} sizing line(s) truncated before their unit)"
        raise InputError(what, field="LOG", hint="paste the engine's start-up output up to the server-ready line")

    engine = "sglang" if (sg_sizing, c.sg_hits) >= (vl_sizing, c.vl_hits) else "vllm"
    w = c.warnings
    if c.truncated:
        w.append(f"line truncated: {c.truncated} figure(s) without their unit were ignored")

    repeated = sorted(k for k, pr in c.per.items() if pr.repeats and not k.startswith(("vl_graph", "sg_graph")))
    if repeated:
        w.append(
            "a rank printed the same sizing line more than once (draft model, second pool or restart): "
            "the first print of each rank was taken for " + ", ".join(repeated)
        )

    def pick(key: str, *, use_max: bool = False, unit: str = "GiB") -> Any:
        pr = c.per.get(key)
        if pr is None:
            return None
        return pr.pick(key, w, use_max=use_max, unit=unit)

    extra = dict(c.extra)
    if c.cli:
        extra["cli_args"] = dict(c.cli)
    common: dict[str, Any] = {"gpu_name": c.gpu_name}
    if engine == "sglang":
        sa = c.server_args
        kv_tokens = pick("kv_tokens", unit="")
        k_b, v_b, kv_b = pick("k_bytes"), pick("v_bytes"), pick("kv_bytes")
        if "post_kv_tokens" in c.per:
            extra["post_capture_kv_tokens"] = pick("post_kv_tokens", unit="")
            extra["post_capture_kv_bytes"] = pick("post_kv_bytes")
            extra["post_capture_free_after_pool_bytes"] = pick("post_free_after_pool")
            w.append("post-capture KV sizing: the pool was resized after CUDA graph capture (see extra)")
        for key in list(c.per):
            if key.startswith("va_"):
                extra["va_upper_bound_" + key[3:]] = pick(key, unit="" if "tokens" in key else "GiB")
            elif key.startswith("label:"):
                _l, label, name = key.split(":", 2)
                slug = re.sub(r"\W+", "_", label.lower()).strip("_")
                extra[f"{slug}_{name}"] = pick(key, unit="" if "tokens" in name else "GiB")
        if kv_tokens is None and kv_b is None and k_b is None and "post_kv_tokens" in c.per:
            kv_tokens, kv_b = extra["post_capture_kv_tokens"], extra["post_capture_kv_bytes"]
        if kv_b is None and k_b is not None and v_b is not None:
            kv_b = k_b + v_b
        graph = pick("sg_graph_sum", use_max=True)
        free_after_graph = pick("free_after_graph")
        if free_after_graph is not None:
            extra["free_after_cuda_graph_bytes"] = free_after_graph
        avail_ready = pick("sched_available_gpu_mem")
        if avail_ready is not None:
            extra["available_gpu_mem_at_ready_bytes"] = avail_ready
        for key in ("chunked_prefill_size", "max_prefill_tokens"):
            v = pick("sched_" + key, unit="")
            if v is not None:
                extra["scheduler_" + key] = v
        model = sa.get("model_path") if isinstance(sa.get("model_path"), str) else None
        return LogFacts(
            engine="sglang",
            engine_version=c.sg_version,
            server_args=dict(sa),
            model=model or c.cli_model,
            gpu_total_bytes=c.gpu_total,
            free_before_weights_bytes=pick("free_before_weights"),
            free_after_weights_bytes=pick("free_after_weights"),
            weight_load_bytes=pick("weight_load", use_max=True),
            kv_tokens=kv_tokens,
            k_bytes=k_b,
            v_bytes=v_b,
            kv_bytes=kv_b,
            max_total_num_tokens=pick("sched_max_total_num_tokens", unit=""),
            max_running_requests=pick("sched_max_running_requests", unit=""),
            context_len=pick("sched_context_len", unit=""),
            free_after_pool_bytes=pick("free_after_pool"),
            cuda_graph_bytes=graph,
            dsv4=dict(c.dsv4),
            warnings=tuple(dict.fromkeys(w)),
            extra=extra,
            **common,
        )

    # vLLM
    sa = dict(c.vllm_config)
    if c.vllm_config:
        extra["engine_config"] = dict(c.vllm_config)
    if c.non_default:
        extra["non_default_args"] = dict(c.non_default)
        sa.update(c.non_default)
    model = None
    for key in ("model", "model_tag"):
        if isinstance(c.non_default.get(key), str):
            model = c.non_default[key]
            break
    if model is None and isinstance(c.vllm_config.get("model"), str):
        model = c.vllm_config["model"]
    model = model or c.cli_model

    avail = pick("vl_avail_kv")
    for alt in ("vlprof_kv", "v0prof_kv_cache_size", "vl_avail_kv_error"):
        if avail is None:
            avail = pick(alt)
    loading = pick("vl_loading", use_max=True)
    if loading is None:
        loading = pick("vl_usage_weight", use_max=True)
    if loading is None:
        loading = pick("vlprof_weights", use_max=True)
    peak = pick("vl_usage_peak_activation", use_max=True)
    if peak is None:
        peak = pick("vlprof_peak_activation", use_max=True)
    non_torch = pick("vl_usage_non_torch", use_max=True)
    for alt in ("vlprof_non_torch", "v0prof_non_torch_memory"):
        if non_torch is None:
            non_torch = pick(alt, use_max=True)
    total = pick("vl_total")
    if total is None:
        total = pick("v0prof_total_gpu_memory")
    graph = pick("vl_usage_cuda_graph", use_max=True)
    if graph is None:
        graph = pick("vl_graph", use_max=True)
    for key, name in (("vl_free_startup", "free_on_startup_bytes"), ("vl_requested", "requested_memory_bytes"),
                      ("vl_current_kv", "current_kv_cache_bytes"), ("vl_usage_consumed", "consumed_memory_bytes"),
                      ("v0prof_peak_torch_memory", "v0_peak_torch_memory_bytes"),
                      ("v0prof_initial_memory_usage", "v0_initial_memory_usage_bytes")):
        v = pick(key, use_max=key in ("vl_usage_consumed", "v0prof_peak_torch_memory"))
        if v is not None:
            extra[name] = v
    if c.non_default:
        sa.setdefault("model", model)
    return LogFacts(
        engine="vllm",
        engine_version=c.vl_version,
        server_args=sa,
        model=model,
        gpu_total_bytes=c.gpu_total if c.gpu_total is not None else total,
        model_loading_bytes=loading,
        available_kv_cache_bytes=avail,
        gpu_kv_cache_tokens=pick("vl_tokens", unit=""),
        num_gpu_blocks=pick("vl_blocks", unit=""),
        max_concurrency=pick("vl_conc", unit=""),
        max_concurrency_tokens=pick("vl_conc_tokens", unit=""),
        peak_activation_bytes=peak,
        non_torch_bytes=non_torch,
        total_gpu_memory_bytes=total,
        cuda_graph_bytes=graph,
        warnings=tuple(dict.fromkeys(w)),
        extra=extra,
        **common,
    )


_BINARY_SAMPLE = 64 * 1024


def read_log_file(path: str | Path, *, max_bytes: int = 200 * 2**20) -> LogFacts:
    """Read a log file (bytes, decoded as UTF-8 with replacement) and :func:`parse_log` it.

    InputError (field ``LOG``) for a missing/unreadable file, a file larger than ``max_bytes``, or binary content
    (NUL bytes or mostly undecodable bytes in the first 64 KiB).
    """
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise InputError(f"cannot read log file {str(p)!r}: {e.strerror or e}", field="LOG") from None
    if not p.is_file():
        raise InputError(f"log path {str(p)!r} is not a regular file", field="LOG")
    if size > max_bytes:
        raise InputError(
            f"log file {str(p)!r} is {size / MIB:.0f} MiB, more than the {max_bytes / MIB:.0f} MiB limit",
            field="LOG",
            hint="cut the start-up part of the log (up to the server-ready line) into a smaller file",
        )
    try:
        with p.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"cannot read log file {str(p)!r}: {e.strerror or e}", field="LOG") from None
    if len(data) > max_bytes:
        raise InputError(f"log file {str(p)!r} is larger than the {max_bytes / MIB:.0f} MiB limit", field="LOG")
    return parse_log(_decode(data, str(p)))


def _decode(data: bytes, name: str) -> str:
    head = data[:_BINARY_SAMPLE]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 (e.g. a PowerShell redirect)
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    if head.count(b"\x00") > max(8, len(head) // 1000):
        raise InputError(f"{name!r} looks like a binary file (NUL bytes), not a text log", field="LOG")
    text = data.decode("utf-8", errors="replace")
    sample = text[:_BINARY_SAMPLE]
    if sample and sample.count("\ufffd") > len(sample) // 10:
        raise InputError(f"{name!r} looks like a binary file (mostly undecodable bytes), not a text log", field="LOG")
    return text


def missing_for_measured(facts: LogFacts) -> list[str]:
    """Names of the values a measured-mode prediction needs that the log does not give (empty = complete).

    SGLang: free memory before weights (``Load weight begin`` or, failing that, ``Load weight end`` avail +
    mem usage), the weight footprint (begin − end, or ``mem usage``), ``mem_fraction_static`` and the model.
    vLLM: ``Available KV cache memory`` (token target), or else all of total GPU memory, model loading,
    peak activation and non-torch memory (KV-bytes target); and the model.
    """
    out: list[str] = []
    if facts.engine == "sglang":
        has_free = facts.free_before_weights_bytes is not None or (
            facts.free_after_weights_bytes is not None and facts.weight_load_bytes is not None
        )
        has_weights = facts.weight_load_bytes is not None or (
            facts.free_before_weights_bytes is not None and facts.free_after_weights_bytes is not None
        )
        if not has_free:
            out.append("free_before_weights_bytes")
        if not has_weights:
            out.append("weight_load_bytes" if facts.free_after_weights_bytes is not None else "free_after_weights_bytes")
        mfs = facts.server_args.get("mem_fraction_static")
        if not isinstance(mfs, (int, float)) or isinstance(mfs, bool):
            out.append("server_args.mem_fraction_static")
    else:
        if facts.available_kv_cache_bytes is None:
            parts = [
                name
                for name in ("total_gpu_memory_bytes", "model_loading_bytes", "peak_activation_bytes", "non_torch_bytes")
                if getattr(facts, name) is None
            ]
            if parts:
                out += ["available_kv_cache_bytes", *parts]
    if facts.model is None:
        out.append("model")
    return out
