"""SGLang start-up lines: one small reader per line kind, and the table (:data:`LINE_RULES`) that picks it.

Lines (sgl-project/sglang, python/sglang/srt, v0.5.23 wheel; older formats from public logs):

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

SGLang's "GB" divides by 2**30 (``get_available_gpu_memory`` and ``/ GB`` with ``GB = 1 << 30``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from kvplan.errors import InputError
from kvplan.inputs.logs import formats
from kvplan.inputs.logs.collect import Collector, PerRank
from kvplan.inputs.logs.plausible import line_ref
from kvplan.inputs.logs.reprs import literal, parse_call_repr, parse_dict_repr
from kvplan.inputs.logs.text import (
    INT,
    MAX_ARGS_JOIN_LINES,
    MAX_ARGS_LINE,
    NEW_RECORD_RE,
    NUM,
    WINDOW,
    Candidate,
    clean_line,
    first_version_match,
    gib_to_bytes,
    rank_of,
    to_int,
    window,
)

_AVAIL_RE = re.compile(r"avail mem=\s*" + NUM + r"(\s*GB)?")
_USAGE_RE = re.compile(r"mem usage=\s*" + NUM + r"(\s*GB)?")
_TYPE_RE = re.compile(r"\btype=([A-Za-z_][\w.]{0,100})")
_KV_TOKENS_RE = re.compile(r"#tokens:\s*" + INT)
_K_RE = re.compile(r"(?<![A-Za-z])K size:\s*" + NUM + r"(\s*GB)?")
_V_RE = re.compile(r"(?<![A-Za-z])V size:\s*" + NUM + r"(\s*GB)?")
_KVSIZE_RE = re.compile(r"KV size:\s*" + NUM + r"(\s*GB)?")
_DTYPE_RE = re.compile(r"dtype:\s*([\w.]{1,40})")
_LABEL_RE = re.compile(r"(?<![\w])(Full|SWA|MiniMax [\w\- .]{1,60}?|[Dd]raft(?: \w{1,20})?)\s*$")
_SCHED_RE = {
    "max_total_num_tokens": re.compile(r"max_total_num_tokens=\s*(\d{1,15})"),
    "chunked_prefill_size": re.compile(r"chunked_prefill_size=\s*(-?\d{1,15})"),
    "max_prefill_tokens": re.compile(r"max_prefill_tokens=\s*(\d{1,15})"),
    "max_running_requests": re.compile(r"max_running_requests=\s*(\d{1,15})"),
    "context_len": re.compile(r"context_len=\s*(\d{1,15})"),
}
_SCHED_MEM_RE = re.compile(r"available_(?:gpu|cpu)_mem=\s*" + NUM + r"\s*GB")
_SCHED_START_RE = re.compile(r"(?<![\w])max_total_num_tokens=\d")
_KV_PAIR_RE = re.compile(r"([A-Za-z_][\w]{0,60})=\s*([^,\s][^,]{0,80})")
_PROFILING_RE = re.compile(r"([a-z_]{1,40})=\s*" + NUM + r"\s*(GB)?")
_MAMBA_SIZE_RE = re.compile(r"max_mamba_cache_size:\s*(\d{1,15})")
_MAMBA_CONV_RE = re.compile(r"conv_state size:\s*" + NUM + r"\s*GB")
_MAMBA_SSM_RE = re.compile(r"ssm_state size:\s*" + NUM + r"\s*GB")
_SWA_RE = re.compile(r"(full|swa)_layer_tokens=\s*(\d{1,15})")
VERSION_RES = (
    re.compile(
        r"\bsglang(?:[ -]kt)?\s*(?:==|version:?|:)\s*v?"
        r"(\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+|\.dev\d+)?)",
        re.I,
    ),
    re.compile(r"\bsglang:v?(\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?)"),  # docker image tag lmsysorg/sglang:v0.5.8
    re.compile(r"\bsgl-dev:v?(\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?)"),
    re.compile(r"\bsglang-(\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?)(?:[-.](?:py|tar|whl)|\s|$)"),
)


# --------------------------------------------------------------------------------------------------
# server_args (may be long and wrapped over several lines)
# --------------------------------------------------------------------------------------------------


def _parse_server_args(text: str) -> tuple[dict[str, Any], bool]:
    """``server_args=ServerArgs(...)`` or ``server_args={...}`` (text starts at 'server_args=')."""
    rest = text[len("server_args=") :]
    stripped = rest.lstrip()
    off = len("server_args=") + (len(rest) - len(stripped))
    if stripped.startswith("{"):
        return parse_dict_repr(text, off)
    p = text.find("(", off, off + 60)
    if p < 0:
        return {}, False
    return parse_call_repr(text, p)


def _join_wrapped(cand: Candidate, seg: str) -> tuple[str, int]:
    """A repr wrapped over several lines: the lines up to the next log record appended, and where they end."""
    joined, consumed_end = seg, cand.end
    for nxt in cand.following(MAX_ARGS_JOIN_LINES):
        if NEW_RECORD_RE.match(nxt) or len(joined) >= MAX_ARGS_LINE:
            break
        joined = (joined + nxt.strip())[:MAX_ARGS_LINE]
        consumed_end += len(nxt) + 1
    return joined, consumed_end


def read_server_args(c: Collector, cand: Candidate) -> int | None:
    """The ``server_args=`` line: None when this is not one, else the offset the scan resumes at (-1: next line)."""
    j = cand.find("server_args=", reach=MAX_ARGS_LINE)
    if j < 0 or c.server_args:
        return None
    skip_until = -1
    seg = clean_line(cand.text[j : min(cand.end, j + MAX_ARGS_LINE)])
    formats.read_args_line(c, seg[:40])
    parsed, closed = _parse_server_args(seg)
    if not closed and not seg.rstrip().endswith(")"):
        joined, consumed_end = _join_wrapped(cand, seg)
        if consumed_end > cand.end:
            p2, c2 = _parse_server_args(clean_line(joined))
            if len(p2) >= len(parsed):
                parsed, closed = p2, c2
                skip_until = consumed_end
    if parsed:
        c.server_args = parsed
        c.sg_hits += 1
        if not closed:
            c.warnings.append("server_args repr not closed (line truncated?): parsed what was there")
    return skip_until


# --------------------------------------------------------------------------------------------------
# One reader per line kind.  Each returns True when the line is an SGLang sizing line (then the vLLM readers
# skip it).
# --------------------------------------------------------------------------------------------------


def _marked(line: str, marker: str) -> tuple[str, str]:
    """(rank, window) of a line whose rule matched ``marker``."""
    w = window(line, marker)
    assert w is not None  # the rule's predicate saw the marker
    return rank_of(line[: w[0]]), w[1]


def _weight_begin(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Load weight begin")
    c.gib("free_before_weights", rank, _AVAIL_RE.search(win))
    c.sg_hits += 1
    return True


def _weight_end(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Load weight end")
    c.gib("free_after_weights", rank, _AVAIL_RE.search(win))
    c.gib("weight_load", rank, _USAGE_RE.search(win))
    m = _TYPE_RE.search(win)
    if m and "architecture" not in c.extra:
        c.extra["architecture"] = m.group(1).rstrip(".,")
    c.sg_hits += 1
    return True


def _kv_kind(line: str) -> tuple[str, str]:
    if "Post-capture KV sizing" in line:
        return "KV cache allocated", "post"
    if "KV Cache VA upper bound" in line:
        return "KV Cache VA upper bound", "va"
    return "KV Cache is allocated", "main"


def _kv_prefix(kind: str, label: str) -> str:
    """Key prefix of a KV line: the main pool, the VA upper bound, the post-capture resize or a labelled pool."""
    if kind == "post":
        return "post_"
    if label.lower() in ("", "full"):
        return "" if kind == "main" else "va_"
    return "label:" + label + ":"


def _kv_allocated(c: Collector, line: str) -> bool:
    """``[<label> ]KV Cache is allocated. ...`` and its VA-upper-bound / post-capture variants."""
    c.sg_hits += 1
    marker, kind = _kv_kind(line)
    w = window(line, marker)
    if w is None:
        return True
    pos, win = w
    label = ""
    if kind != "post" and (m := _LABEL_RE.search(line[max(0, pos - 60) : pos])):
        label = m.group(1).strip()
    rank = rank_of(line[:pos])
    if dm := _DTYPE_RE.search(win):
        c.extra.setdefault("kv_cache_torch_dtype", dm.group(1).rstrip(".,"))
    prefix = _kv_prefix(kind, label)
    if toks := _KV_TOKENS_RE.search(win):
        if toks.end() >= len(win) and toks.end() == len(line) - pos:
            c.truncated += 1
        else:
            c.add(prefix + "kv_tokens", rank, to_int(toks.group(1)))
    c.gib(prefix + "k_bytes", rank, _K_RE.search(win))
    c.gib(prefix + "v_bytes", rank, _V_RE.search(win))
    c.gib(prefix + "kv_bytes", rank, _KVSIZE_RE.search(win))
    if kind == "post":
        c.gib("post_free_after_pool", rank, _AVAIL_RE.search(win))
    return True


def _pool_end(c: Collector, line: str) -> bool:
    rank, win = _marked(line, "Memory pool end")
    c.gib("free_after_pool", rank, _AVAIL_RE.search(win))
    c.sg_hits += 1
    return True


def _sched_window(line: str) -> tuple[int, str] | None:
    """The scheduler's ``max_total_num_tokens=N, ...`` line; not ``profiled_max_total_num_tokens=`` and the like."""
    m = _SCHED_START_RE.search(line)
    if m is None:
        return None
    return m.start(), line[m.start() : m.start() + WINDOW]


def _scheduler(c: Collector, line: str) -> bool:
    w = _sched_window(line)
    assert w is not None
    win = w[1]
    if not any(k in win for k in ("max_prefill_tokens=", "max_running_requests=", "context_len=")):
        return False
    rank = rank_of(line[: w[0]])
    for key, rx in _SCHED_RE.items():
        if m := rx.search(win):
            if win[m.end() : m.end() + 1].isdigit():  # 15 digits of a longer number: refuse, never cut it
                raise InputError(
                    f"{line_ref(c.text, c.at) or 'the scheduler line'}: {key} has more than 15 digits",
                    field="LOG",
                    hint="is this the engine's unedited start-up log?",
                )
            c.add("sched_" + key, rank, int(m.group(1)))
    if m := _SCHED_MEM_RE.search(win):
        c.add("sched_available_gpu_mem", rank, gib_to_bytes(float(m.group(1))))
    c.sg_hits += 1
    return True


def _dsv4_value(raw: str, name: str = "DSV4 value") -> Any:
    raw = raw.strip()
    if raw.endswith("GB"):
        try:
            return gib_to_bytes(float(raw[:-2].strip()))
        except ValueError:
            return raw
    return literal(raw, name)


def _dsv4(c: Collector, line: str) -> bool:
    marker = "pool sizes:" if "pool sizes" in line else "calculation:"
    w = window(line, marker, wide=True)
    if w:
        for m in _KV_PAIR_RE.finditer(w[1]):
            c.dsv4.setdefault(m.group(1), _dsv4_value(m.group(2), m.group(1)))
    c.sg_hits += 1
    return True


def _mamba(c: Collector, line: str) -> bool:
    _rank, win = _marked(line, "Mamba Cache is allocated")
    if m := _MAMBA_SIZE_RE.search(win):
        c.extra.setdefault("mamba_cache_size", int(m.group(1)))
    if m := _MAMBA_CONV_RE.search(win):
        c.extra.setdefault("mamba_conv_state_bytes", gib_to_bytes(float(m.group(1))))
    if m := _MAMBA_SSM_RE.search(win):
        c.extra.setdefault("mamba_ssm_state_bytes", gib_to_bytes(float(m.group(1))))
    c.sg_hits += 1
    return False


def _swa(c: Collector, line: str) -> bool:
    _rank, win = _marked(line, "Use sliding window memory pool")
    for m in _SWA_RE.finditer(win):
        c.extra.setdefault(f"{m.group(1)}_layer_tokens", int(m.group(2)))
    c.sg_hits += 1
    return False


def _profiling(c: Collector, line: str) -> bool:
    _rank, win = _marked(line, "Memory profiling:")
    prof: dict[str, Any] = {}
    for m in _PROFILING_RE.finditer(win):
        val = float(m.group(2))
        prof[m.group(1) + ("_bytes" if m.group(3) else "")] = gib_to_bytes(val) if m.group(3) else val
    c.extra.setdefault("memory_profiling", prof)
    if "total_gpu_memory_bytes" in prof and c.gpu_total is None:
        c.gpu_total = prof["total_gpu_memory_bytes"]
    c.sg_hits += 1
    return False


def _graph_end(c: Collector, line: str) -> bool:
    """``Capture ... graph end. ... mem usage=Y GB``: the usage of every capture on a rank is summed."""
    w = window(line, "Capture", wide=True)
    if w:
        rank = rank_of(line[: w[0]])
        m = _USAGE_RE.search(w[1])
        if m and (m.group(2) or m.end() < len(w[1])):
            d = c.per.setdefault("sg_graph_sum", PerRank()).by_rank
            d[rank] = d.get(rank, 0) + gib_to_bytes(float(m.group(1)))
        if m := _AVAIL_RE.search(w[1]):
            c.add("free_after_graph", rank, gib_to_bytes(float(m.group(1))))
    c.sg_mentions += 1
    return False


def _kv_dtype(c: Collector, line: str) -> bool:
    _rank, win = _marked(line, "Using KV cache dtype:")
    c.extra.setdefault("kv_cache_torch_dtype", win[len("Using KV cache dtype:") :].strip()[:40])
    c.sg_mentions += 1
    return False


class LineRule(NamedTuple):
    """A line kind: ``match(line)`` picks it, ``read(collector, line)`` records it (True: an SGLang sizing line)."""

    match: Callable[[str], bool]
    read: Callable[[Collector, str], bool]


def _any(*markers: str) -> Callable[[str], bool]:
    return lambda line: any(mk in line for mk in markers)


def _all(*markers: str) -> Callable[[str], bool]:
    return lambda line: all(mk in line for mk in markers)


# The first rule that matches reads the line (order matters: "Load weight end" lines also hold "avail mem=").
LINE_RULES: tuple[LineRule, ...] = (
    LineRule(_any("Load weight begin"), _weight_begin),
    LineRule(_any("Load weight end"), _weight_end),
    LineRule(_any("KV Cache is allocated", "KV Cache VA upper bound", "KV cache allocated"), _kv_allocated),
    LineRule(_any("Memory pool end"), _pool_end),
    LineRule(lambda line: "max_total_num_tokens=" in line and _sched_window(line) is not None, _scheduler),
    LineRule(_any("DSV4 memory calculation", "DSV4 pool sizes", "DSv4 memory calculation"), _dsv4),
    LineRule(_any("Mamba Cache is allocated"), _mamba),
    LineRule(_any("Use sliding window memory pool"), _swa),
    LineRule(_all("Memory profiling:", "available_gpu_memory="), _profiling),
    LineRule(lambda line: ("Capture" in line and "graph end" in line) or "Capture cuda graph end" in line, _graph_end),
    LineRule(_any("Using KV cache dtype:"), _kv_dtype),
)


def read_line(c: Collector, line: str) -> bool:
    """Read one cleaned candidate line with the first matching rule; True when it was an SGLang sizing line."""
    for rule in LINE_RULES:
        if rule.match(line):
            return rule.read(c, line)
    return False


def read_version(c: Collector, line: str) -> None:
    """The first SGLang version the log names (``sglang==0.5.8``, ``lmsysorg/sglang:v0.5.8`` ...)."""
    if c.sg_version is None and ("sglang" in line.lower() or "sgl-dev" in line):
        c.sg_mentions += 1
        m = first_version_match(VERSION_RES, line)
        if m:
            c.sg_version = m.group(1).rstrip(".,;)")
            c.version_text["sglang"] = line[m.start() : m.end() + 40].strip()
