"""vLLM start-up lines: one small reader per line kind, and the table (:data:`LINE_RULES`) of them.

Lines (vllm-project/vllm, v0.33.0 wheel; older formats from public logs):

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

Unlike SGLang's, every vLLM rule that matches reads the line (one line may hold several figures).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from kvplan.inputs.logs import formats
from kvplan.inputs.logs.collect import Collector, PerRank
from kvplan.inputs.logs.reprs import parse_dict_repr, parse_kv_pieces, split_top_level
from kvplan.inputs.logs.text import (
    INT,
    MAX_ARGS_LINE,
    NUM,
    Candidate,
    clean_line,
    first_version_match,
    gib_to_bytes,
    rank_of,
    to_bytes,
    to_int,
    window,
)

_LOADING_RE = re.compile(r"Model loading took\s+" + NUM + r"\s*(GiB|GB)")
_V0_LOADING_RE = re.compile(r"Loading model weights took\s+" + NUM + r"\s*(GiB|GB)")
_AVAIL_RE = re.compile(r"Available KV cache memory:\s*" + NUM + r"\s*(GiB|GB)")
_TOKENS_RE = re.compile(r"KV cache size:\s*" + INT + r"\s*tokens")
_CONC_RE = re.compile(r"Maximum concurrency for\s*" + INT + r"\s*tokens per request:\s*" + NUM + r"\s*x")
_BLOCKS_RE = re.compile(r"#\s*(?:GPU|cuda|CUDA|gpu|XPU|xpu|NPU|npu)\s+blocks:\s*" + INT)
_CPU_BLOCKS_RE = re.compile(r"#\s*CPU blocks:\s*(\d{1,15})")
_BLOCKS2_RE = re.compile(r"num_gpu_blocks(?: is)?\s*[:=]\s*(\d{1,15})")
_GRAPH_RE = re.compile(r"Graph capturing finished in\s*" + NUM + r"\s*secs?, took\s*" + NUM + r"\s*GiB")
_GRAPH_EST_RE = re.compile(r"Estimated CUDA graph memory:\s*" + NUM + r"\s*GiB")
_FREE_RE = re.compile(r"Free memory on device[^(]{0,40}\(\s*" + NUM + r"\s*/\s*" + NUM + r"\s*GiB\)")
_DESIRED_RE = re.compile(r"Desired GPU memory utilization is \(\s*" + NUM + r"\s*,\s*" + NUM + r"\s*GiB\)")
_USAGE_RES = {
    "weight": re.compile(NUM + r"\s*GiB for weight"),
    "consumed": re.compile(NUM + r"\s*GiB for consumed memory"),
    "peak_activation": re.compile(NUM + r"\s*GiB for peak activation"),
    "non_torch": re.compile(NUM + r"\s*GiB for non-torch memory"),
    "cuda_graph": re.compile(NUM + r"\s*GiB for CUDAGraph memory"),
}
_CURRENT_KV_RE = re.compile(r"Current kv cache memory in use is\s*" + NUM + r"\s*(bytes|GiB)")
_V0_PROFILE_RE = re.compile(r"([a-z_]{1,40})=\s*" + NUM + r"\s*(GiB|GB)?")
_TOTAL_RE = re.compile(r"total_gpu_memory\s*\(\s*" + NUM + r"\s*GiB\)\s*x\s*gpu_memory_utilization\s*\(\s*" + NUM)
_PROFILE_PARTS = {
    "weights": re.compile(r"model weights take\s*" + NUM + r"\s*GiB"),
    "non_torch": re.compile(r"non_torch_memory takes\s*" + NUM + r"\s*GiB"),
    "peak_activation": re.compile(r"activation peak memory takes\s*" + NUM + r"\s*GiB"),
    "kv": re.compile(r"reserved for KV Cache is\s*" + NUM + r"\s*GiB"),
}
_DEBUG_PROFILE_RES = {
    "non_kv_cache": re.compile(r"Total non KV cache memory:\s*" + NUM + r"\s*GiB"),
    "torch_peak_increase": re.compile(r"torch peak memory increase:\s*" + NUM + r"\s*GiB"),
    "total_consumed": re.compile(r"total consumed \(from mem_get_info\):\s*" + NUM + r"\s*GiB"),
    "weights": re.compile(r"weights memory:\s*" + NUM + r"\s*GiB"),
}
_NEEDED_RE = re.compile(
    r"\(\s*"
    + NUM
    + r"\s*GiB KV cache is needed, which is larger than the available KV cache memory \(\s*"
    + NUM
    + r"\s*GiB\)"
)
_RESERVED_RE = re.compile(
    r"Initial free memory\s*" + NUM + r"\s*GiB, reserved\s*" + NUM + r"\s*GiB memory for KV Cache as specified"
)
_EST_LEN_RE = re.compile(r"estimated maximum model length is\s*(\d{1,15})")
_MAXSEQ_RE = re.compile(r"max seq len \((\d{1,15})\)")
VERSION_RES = (
    # "with config" optional: a pasted excerpt can stop after the version (a Modal log, issue excerpts)
    re.compile(r"LLM engine \(v(\d+\.\d+[\w.+\-]{0,40})\)(?: with config|[ \t]*(?:\r?\n|$))"),
    re.compile(r"vLLM API server version\s*v?(\d+\.\d+[\w.+\-]{0,40})"),
    re.compile(r"vLLM server version\s*v?(\d+\.\d+[\w.+\-]{0,40})"),
    re.compile(r"Launching vLLM \(v(\d+\.\d+[\w.+\-]{0,40})\)"),
    re.compile(r"vLLM batch processing API version\s*v?(\d+\.\d+[\w.+\-]{0,40})"),
    re.compile(r"version\s+(\d+\.\d+\.\d+[\w.+\-]{0,40})\s*$"),  # the ASCII-art logo line
    re.compile(r"vllm/vllm-openai:v(\d+\.\d+\.\d+[\w.+\-]{0,30})"),
    re.compile(r"\bvllm\s*==\s*(\d+\.\d+\.\d+[\w.+\-]{0,30})", re.I),
    re.compile(r"\bvllm\s*(?:version)?:\s*(\d+\.\d+\.\d+[\w.+\-]{0,30})", re.I),
)
_LOGO_VERSION_RES = VERSION_RES[5:6]
_TEXT_VERSION_RES = VERSION_RES[:5] + VERSION_RES[6:]


# --------------------------------------------------------------------------------------------------
# The engine config and the non-default args (long lines, read from the raw text)
# --------------------------------------------------------------------------------------------------


def read_engine_config(c: Collector, cand: Candidate) -> int | None:
    """``... LLM engine (vX) with config: k=v, ...``: None when this is not one, else -1 (scan the next line)."""
    j = cand.find("LLM engine (v", reach=2000)
    if j < 0:
        return None
    text = cand.text
    if c.vl_version is None and (m := first_version_match(VERSION_RES[:1], text[j : j + 200])):
        c.vl_version = m.group(1).rstrip(".,;)")
        c.version_text["vllm"] = clean_line(m.group(0))
    k2 = text.find("with config:", j, j + 200)
    if k2 >= 0 and not c.vllm_config:
        seg = clean_line(text[k2 + len("with config:") : min(cand.end, k2 + MAX_ARGS_LINE)])
        pieces, _e, _closed = split_top_level(seg, 0, None)
        c.vllm_config = parse_kv_pieces(pieces, quoted_keys=False)
    c.vl_mentions += 1
    return -1


def read_non_default_args(c: Collector, cand: Candidate) -> int | None:
    """``non-default args: {...}``: None when this is not one, else -1 (scan the next line)."""
    j = cand.find("non-default args:", reach=2000)
    if j < 0:
        return None
    text = cand.text
    b = text.find("{", j, j + 40)
    formats.read_args_line(c, text[j : j + 40])
    if b >= 0 and not c.non_default:
        seg = clean_line(text[b : min(cand.end, b + MAX_ARGS_LINE)])
        c.non_default, closed = parse_dict_repr(seg, 0)
        if not closed:
            c.warnings.append("non-default args dict not closed (line truncated?): parsed what was there")
    c.vl_mentions += 1
    return -1


# --------------------------------------------------------------------------------------------------
# One reader per line kind; each returns True when it recognised a vLLM figure.
# --------------------------------------------------------------------------------------------------


def _marked(line: str, marker: str, *, wide: bool = False) -> tuple[str, str]:
    w = window(line, marker, wide=wide)
    assert w is not None  # the rule's predicate saw the marker
    return rank_of(line[: w[0]]), w[1]


def _model_loading(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Model loading took")
    c.gib("vl_loading", rank, _LOADING_RE.search(win))
    return True


def _v0_loading(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Loading model weights took")
    c.gib("vl_loading", rank, _V0_LOADING_RE.search(win))
    return True


def _available_kv(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Available KV cache memory")
    c.gib("vl_avail_kv", rank, _AVAIL_RE.search(win))
    return True


def _kv_tokens(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "KV cache size:")
    if m := _TOKENS_RE.search(win):
        c.add("vl_tokens", rank, to_int(m.group(1)))
    return True


def _concurrency(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Maximum concurrency for")
    if m := _CONC_RE.search(win):
        c.add("vl_conc_tokens", rank, to_int(m.group(1)))
        c.add("vl_conc", rank, float(m.group(2)))
    return True


def _blocks(c: Collector, line: str) -> bool:
    m = _BLOCKS_RE.search(line)
    if not m:
        return False
    c.add("vl_blocks", rank_of(line[: m.start()]), to_int(m.group(1)))
    if m2 := _CPU_BLOCKS_RE.search(line):
        c.extra.setdefault("num_cpu_blocks", int(m2.group(1)))
    return True


def _num_gpu_blocks(c: Collector, line: str) -> bool:
    m = _BLOCKS2_RE.search(line)
    if not m:
        return False
    c.add("vl_blocks", rank_of(line[: m.start()]), int(m.group(1)))
    return True


def _graph(c: Collector, line: str) -> bool:
    m = _GRAPH_RE.search(line)
    if not m:
        return False
    # The V2 runner prints this twice (profiling capture, real capture): keep the last per rank.
    c.per.setdefault("vl_graph", PerRank()).by_rank[rank_of(line[: m.start()])] = gib_to_bytes(float(m.group(2)))
    return True


def _graph_estimate(c: Collector, line: str) -> bool:
    m = _GRAPH_EST_RE.search(line)
    if not m:
        return False
    c.extra.setdefault("estimated_cuda_graph_bytes", gib_to_bytes(float(m.group(1))))
    return True


def _free_on_device(c: Collector, line: str) -> bool:
    """``Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (u, R GiB). ...``"""
    rank, win = _marked(line, "Free memory on device", wide=True)
    if m := _FREE_RE.search(win):
        c.add("vl_free_startup", rank, gib_to_bytes(float(m.group(1))))
        c.add("vl_total", rank, gib_to_bytes(float(m.group(2))))
    if m := _DESIRED_RE.search(win):
        c.extra.setdefault("gpu_memory_utilization", float(m.group(1)))
        c.add("vl_requested", rank, gib_to_bytes(float(m.group(2))))
    for key, rx in _USAGE_RES.items():
        if m := rx.search(win):
            c.add("vl_usage_" + key, rank, gib_to_bytes(float(m.group(1))))
    if m := _CURRENT_KV_RE.search(win):
        v = float(m.group(1))
        c.add("vl_current_kv", rank, to_bytes(v) if m.group(2) == "bytes" else gib_to_bytes(v))
    return True


def _kv_memory_override(c: Collector, line: str) -> bool:
    m = _RESERVED_RE.search(line)
    if not m:
        return False
    r = rank_of(line[: m.start()])
    c.add("vl_free_startup", r, gib_to_bytes(float(m.group(1))))
    c.add("vl_avail_kv", r, gib_to_bytes(float(m.group(2))))
    c.extra["kv_cache_memory_bytes_override"] = True
    return True


def _v0_profile(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Memory profiling results", wide=True)
    for m in _V0_PROFILE_RE.finditer(win):
        key, val, unit = m.group(1), float(m.group(2)), m.group(3)
        if unit:
            c.add("v0prof_" + key, rank, gib_to_bytes(val))
        else:
            c.extra.setdefault("v0_profile_" + key, val)
    return True


def _total_gpu_memory(c: Collector, line: str) -> bool:
    m = _TOTAL_RE.search(line)
    if not m:
        return False
    c.add("vl_total", rank_of(line[: m.start()]), gib_to_bytes(float(m.group(1))))
    c.extra.setdefault("gpu_memory_utilization", float(m.group(2)))
    return True


def _profile_parts(c: Collector, line: str) -> bool:
    hit = False
    for key, rx in _PROFILE_PARTS.items():
        if m := rx.search(line):
            c.add("vlprof_" + key, rank_of(line[: m.start()]), gib_to_bytes(float(m.group(1))))
            hit = True
    return hit


def _debug_profile(c: Collector, line: str) -> bool:
    for key, rx in _DEBUG_PROFILE_RES.items():
        if m := rx.search(line):
            c.extra.setdefault("profile_" + key + "_bytes", gib_to_bytes(float(m.group(1))))
    return True


def _kv_needed(c: Collector, line: str) -> bool:
    """The start-up error ``(X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB)``."""
    m = _NEEDED_RE.search(line)
    if not m:
        return False
    c.extra.setdefault("kv_needed_bytes", gib_to_bytes(float(m.group(1))))
    c.add("vl_avail_kv_error", rank_of(line[: m.start()]), gib_to_bytes(float(m.group(2))))
    if m2 := _EST_LEN_RE.search(line):
        c.extra.setdefault("estimated_max_model_len", int(m2.group(1)))
    if m3 := _MAXSEQ_RE.search(line):
        c.extra.setdefault("max_seq_len", int(m3.group(1)))
    c.warnings.append("vLLM failed to start: the KV cache does not hold one max-length request")
    return True


class LineRule(NamedTuple):
    """A line kind: ``match(line)`` picks it, ``read(collector, line)`` records it (True: a vLLM figure)."""

    match: Callable[[str], bool]
    read: Callable[[Collector, str], bool]


def _has(marker: str) -> Callable[[str], bool]:
    return lambda line: marker in line


# Every matching rule reads the line, in this order (a rank's first print of a key wins, so order matters).
LINE_RULES: tuple[LineRule, ...] = (
    LineRule(_has("Model loading took"), _model_loading),
    LineRule(lambda line: "Loading model weights took" in line and "Model loading took" not in line, _v0_loading),
    LineRule(_has("Available KV cache memory"), _available_kv),
    LineRule(_has("KV cache size:"), _kv_tokens),
    LineRule(_has("Maximum concurrency for"), _concurrency),
    LineRule(lambda line: "blocks:" in line and "#" in line, _blocks),
    LineRule(lambda line: "num_gpu_blocks" in line and "override" not in line, _num_gpu_blocks),
    LineRule(_has("Graph capturing finished"), _graph),
    LineRule(_has("Estimated CUDA graph memory"), _graph_estimate),
    LineRule(_has("Free memory on device"), _free_on_device),
    LineRule(_has("memory for KV Cache as specified"), _kv_memory_override),
    LineRule(_has("Memory profiling results"), _v0_profile),
    LineRule(_has("total_gpu_memory ("), _total_gpu_memory),
    LineRule(lambda line: "takes" in line or "reserved for KV Cache" in line, _profile_parts),
    LineRule(_has("Total non KV cache memory"), _debug_profile),
    LineRule(_has("KV cache is needed"), _kv_needed),
)


def read_line(c: Collector, line: str) -> None:
    """Read one cleaned candidate line with every matching rule; a line with any vLLM figure counts as a hit."""
    hit = False
    for rule in LINE_RULES:
        if rule.match(line):
            hit = rule.read(c, line) or hit
    if hit:
        c.vl_hits += 1


def read_version(c: Collector, line: str) -> None:
    """vLLM mentions and the first version the log names (``vLLM API server version 0.10.1``, the logo line ...)."""
    res: tuple[re.Pattern[str], ...] | None = None
    if "vllm" in line.lower():
        c.vl_mentions += 1
        res = _TEXT_VERSION_RES
    elif re.search("\u2588\\s+version", line):  # the logo line; HTML copies collapse its run of spaces to one
        res = _LOGO_VERSION_RES
    if c.vl_version is None and res is not None and (m := first_version_match(res, line)):
        c.vl_version = m.group(1).rstrip(".,;)")
        c.version_text["vllm"] = line[m.start() : m.end() + 40].strip()
