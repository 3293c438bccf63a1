"""What a start-up log says about KV sizing (:class:`LogFacts`), from the scan's :class:`Collector`.

Several ranks: free-memory and token figures are taken per rank (the first print of each rank), then the
minimum over ranks; usage figures (weight load, CUDA graph) take the maximum over ranks.  Bytes are ints:
every printed GB/GiB figure becomes ``round(value * 2**30)`` bytes (two decimals: known to +-0.005 GiB).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kvplan.errors import InputError, echo
from kvplan.inputs.logs import plausible
from kvplan.inputs.logs.argtypes import check_args
from kvplan.inputs.logs.collect import Collector
from kvplan.inputs.logs.formats import BY_ID
from kvplan.inputs.logs.scan import scan
from kvplan.inputs.logs.source import MAX_LOG_BYTES, decode_log, read_log_bytes
from kvplan.inputs.logs.text import normalize
from kvplan.inputs.read import PATH_CHARS


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
    # The release-specific line forms seen (ids of kvplan.inputs.logs.formats.MARKERS, this engine's only) and the
    # text that printed ``engine_version`` (e.g. the docker image tag): what kvplan.inputs.logs.release reads.
    formats: tuple[str, ...] = ()
    engine_version_text: str | None = None
    # The log line that printed each measured figure (field name -> "line N ('...')"), for messages that refuse a
    # figure against facts the log does not hold (a GPU preset's total), and the plausibility warnings
    # (kvplan.inputs.logs.plausible; also in ``warnings``).
    lines: dict[str, str] = field(default_factory=dict)
    implausible: tuple[str, ...] = ()


# The keys that make a log a sizing log of each engine (at least one must be present).
_SG_SIZING = (
    "free_before_weights",
    "free_after_weights",
    "weight_load",
    "kv_tokens",
    "k_bytes",
    "kv_bytes",
    "free_after_pool",
    "sched_max_total_num_tokens",
    "post_kv_tokens",
)
_VL_SIZING = (
    "vl_loading",
    "vl_avail_kv",
    "vl_tokens",
    "vl_conc",
    "vl_blocks",
    "vl_usage_peak_activation",
    "v0prof_kv_cache_size",
    "vlprof_kv",
    "vl_avail_kv_error",
    "vl_total",
)

_SG_EXPECTED = (
    "an SGLang log, but none of its KV sizing lines were found: expected 'Load weight begin/end. avail "
    "mem=...', 'KV Cache is allocated. #tokens: ...', 'Memory pool end. avail mem=...' or "
    "'max_total_num_tokens=...'"
)
_VL_EXPECTED = (
    "a vLLM log, but none of its KV sizing lines were found: expected 'Model loading took X GiB', "
    "'Available KV cache memory: X GiB', 'GPU KV cache size: N tokens' or 'Maximum concurrency for ...'"
)
_NEITHER = (
    "not an SGLang or vLLM start-up log: none of 'Load weight end', 'KV Cache is allocated', "
    "'max_total_num_tokens=', 'Available KV cache memory', 'GPU KV cache size' was found"
)


class _Picker:
    """Per-rank figures -> one value each (min, or max for usage), warnings collected in call order."""

    def __init__(self, c: Collector) -> None:
        self.c = c
        self.warnings = c.warnings

    def __call__(self, key: str, *, use_max: bool = False, unit: str = "GiB") -> Any:
        pr = self.c.per.get(key)
        if pr is None:
            return None
        return pr.pick(key, self.warnings, use_max=use_max, unit=unit)

    def first(self, *keys: str, use_max: bool = False) -> Any:
        """The first of ``keys`` that some rank printed (the later keys are older log formats of the same figure)."""
        for key in keys:
            v = self(key, use_max=use_max)
            if v is not None:
                return v
        return None


def _not_a_sizing_log(c: Collector) -> InputError:
    if c.sg_hits or c.server_args or c.sg_mentions > c.vl_mentions:
        what = _SG_EXPECTED
    elif c.vl_hits or c.vllm_config or c.non_default or c.vl_mentions:
        what = _VL_EXPECTED
    else:
        what = _NEITHER
    if c.truncated:
        what += f" ({c.truncated} sizing line(s) truncated before their unit)"
    return InputError(what, field="LOG", hint="paste the engine's start-up output up to the server-ready line")


def _formats(c: Collector, engine: str) -> tuple[str, ...]:
    """The ids of ``engine``'s release-specific line forms the scan saw, sorted."""
    return tuple(sorted(i for i in c.formats if BY_ID[i].engine == engine))


def _common_warnings(c: Collector) -> None:
    w = c.warnings
    if c.truncated:
        w.append(f"line truncated: {c.truncated} figure(s) without their unit were ignored")
    repeated = sorted(k for k, pr in c.per.items() if pr.repeats and not k.startswith(("vl_graph", "sg_graph")))
    if repeated:
        w.append(
            "a rank printed the same sizing line more than once (draft model, second pool or restart): "
            "the first print of each rank was taken for " + ", ".join(repeated)
        )


def parse_log(text: str) -> LogFacts:
    """Parse SGLang or vLLM start-up log text into :class:`LogFacts`.

    Raises :class:`~kvplan.errors.InputError` (field ``LOG``) when the text is not an SGLang/vLLM start-up log
    or lacks every sizing line; the message names the lines that were looked for.
    """
    if not isinstance(text, str):
        raise InputError("log text must be a str", field="LOG")
    c = scan(normalize(text))
    for source, args in (
        ("server_args", c.server_args),
        ("non-default args", c.non_default),
        ("engine config", c.vllm_config),
        ("command line", c.cli),
    ):
        check_args(args, source=source)
    sg_sizing = sum(1 for k in _SG_SIZING if c.has(k)) + (1 if c.dsv4 else 0)
    vl_sizing = sum(1 for k in _VL_SIZING if c.has(k))
    if sg_sizing == 0 and vl_sizing == 0:
        raise _not_a_sizing_log(c)
    n_warnings = len(c.warnings)
    plausible.check(c)
    implausible = tuple(c.warnings[n_warnings:])
    _common_warnings(c)
    extra = dict(c.extra)
    if c.cli:
        extra["cli_args"] = dict(c.cli)
    if (sg_sizing, c.sg_hits) >= (vl_sizing, c.vl_hits):
        facts = _sglang_facts(c, _Picker(c), extra)
    else:
        facts = _vllm_facts(c, _Picker(c), extra)
    return replace(facts, lines=_lines(c, facts), implausible=implausible)


# LogFacts field -> the per-rank keys that print it (first found wins)
_LINE_KEYS = (
    ("free_before_weights_bytes", ("free_before_weights",)),
    ("free_after_weights_bytes", ("free_after_weights",)),
    ("weight_load_bytes", ("weight_load",)),
    ("available_kv_cache_bytes", ("vl_avail_kv", "vlprof_kv", "v0prof_kv_cache_size", "vl_avail_kv_error")),
    ("model_loading_bytes", ("vl_loading", "vl_usage_weight", "vlprof_weights")),
)


def _lines(c: Collector, facts: LogFacts) -> dict[str, str]:
    """The line that printed each measured figure of ``facts`` (the rank whose value was picked)."""
    out: dict[str, str] = {}
    for name, keys in _LINE_KEYS:
        value = getattr(facts, name)
        for key in keys:
            pr = c.per.get(key)
            rank = next((r for r, v in pr.by_rank.items() if v == value), None) if pr is not None else None
            if pr is not None and rank is not None:
                ref = plausible.line_ref(c.text, pr.at_rank.get(rank, -1))
                if ref:
                    out[name] = ref
                break
    return out


# --------------------------------------------------------------------------------------------------
# SGLang
# --------------------------------------------------------------------------------------------------


def _sg_pool_extras(c: Collector, pick: _Picker, extra: dict[str, Any]) -> None:
    """Post-capture resize, VA upper bound and labelled pools (SWA, draft ...) go to ``extra``."""
    if "post_kv_tokens" in c.per:
        extra["post_capture_kv_tokens"] = pick("post_kv_tokens", unit="")
        extra["post_capture_kv_bytes"] = pick("post_kv_bytes")
        extra["post_capture_free_after_pool_bytes"] = pick("post_free_after_pool")
        c.warnings.append("post-capture KV sizing: the pool was resized after CUDA graph capture (see extra)")
    for key in list(c.per):
        if key.startswith("va_"):
            extra["va_upper_bound_" + key[3:]] = pick(key, unit="" if "tokens" in key else "GiB")
        elif key.startswith("label:"):
            _l, label, name = key.split(":", 2)
            slug = re.sub(r"\W+", "_", label.lower()).strip("_")
            extra[f"{slug}_{name}"] = pick(key, unit="" if "tokens" in name else "GiB")


def _sg_ready_extras(pick: _Picker, extra: dict[str, Any]) -> None:
    """Free memory after CUDA graphs, at ready, and the scheduler's prefill sizes go to ``extra``."""
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


def _sglang_facts(c: Collector, pick: _Picker, extra: dict[str, Any]) -> LogFacts:
    sa = c.server_args
    kv_tokens = pick("kv_tokens", unit="")
    k_b, v_b, kv_b = pick("k_bytes"), pick("v_bytes"), pick("kv_bytes")
    _sg_pool_extras(c, pick, extra)
    if kv_tokens is None and kv_b is None and k_b is None and "post_kv_tokens" in c.per:
        kv_tokens, kv_b = extra["post_capture_kv_tokens"], extra["post_capture_kv_bytes"]
    if kv_b is None and k_b is not None and v_b is not None:
        kv_b = k_b + v_b
    graph = pick("sg_graph_sum", use_max=True)
    _sg_ready_extras(pick, extra)
    model = sa.get("model_path") if isinstance(sa.get("model_path"), str) else None
    return LogFacts(
        engine="sglang",
        engine_version=c.sg_version,
        server_args=dict(sa),
        model=model or c.cli_model,
        gpu_name=c.gpu_name,
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
        warnings=tuple(dict.fromkeys(c.warnings)),
        extra=extra,
        formats=_formats(c, "sglang"),
        engine_version_text=c.version_text.get("sglang"),
    )


# --------------------------------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------------------------------

# per-rank key -> extra key, for the figures kept as context only
_VL_EXTRAS = (
    ("vl_free_startup", "free_on_startup_bytes"),
    ("vl_requested", "requested_memory_bytes"),
    ("vl_current_kv", "current_kv_cache_bytes"),
    ("vl_usage_consumed", "consumed_memory_bytes"),
    ("v0prof_peak_torch_memory", "v0_peak_torch_memory_bytes"),
    ("v0prof_initial_memory_usage", "v0_initial_memory_usage_bytes"),
)
_VL_EXTRAS_MAX = ("vl_usage_consumed", "v0prof_peak_torch_memory")


def _vl_model(c: Collector) -> str | None:
    """The model: ``non-default args`` model / model_tag, then the engine config's model, then the command."""
    named = [c.non_default.get("model"), c.non_default.get("model_tag"), c.vllm_config.get("model")]
    model = next((m for m in named if isinstance(m, str)), None)
    return model or c.cli_model


def _vllm_facts(c: Collector, pick: _Picker, extra: dict[str, Any]) -> LogFacts:
    sa = dict(c.vllm_config)
    if c.vllm_config:
        extra["engine_config"] = dict(c.vllm_config)
    if c.non_default:
        extra["non_default_args"] = dict(c.non_default)
        sa.update(c.non_default)
    model = _vl_model(c)
    avail = pick.first("vl_avail_kv", "vlprof_kv", "v0prof_kv_cache_size", "vl_avail_kv_error")
    loading = pick.first("vl_loading", "vl_usage_weight", "vlprof_weights", use_max=True)
    peak = pick.first("vl_usage_peak_activation", "vlprof_peak_activation", use_max=True)
    non_torch = pick.first("vl_usage_non_torch", "vlprof_non_torch", "v0prof_non_torch_memory", use_max=True)
    total = pick.first("vl_total", "v0prof_total_gpu_memory")
    graph = pick.first("vl_usage_cuda_graph", "vl_graph", use_max=True)
    for key, name in _VL_EXTRAS:
        v = pick(key, use_max=key in _VL_EXTRAS_MAX)
        if v is not None:
            extra[name] = v
    if c.non_default:
        sa.setdefault("model", model)
    return LogFacts(
        engine="vllm",
        engine_version=c.vl_version,
        server_args=sa,
        model=model,
        gpu_name=c.gpu_name,
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
        warnings=tuple(dict.fromkeys(c.warnings)),
        extra=extra,
        formats=_formats(c, "vllm"),
        engine_version_text=c.version_text.get("vllm"),
    )


# --------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------


def read_log(source: str, *, max_bytes: int = MAX_LOG_BYTES) -> LogFacts:
    """Read the log at ``source`` (a path, or ``-`` for standard input) through the bounded reader and
    :func:`parse_log` it (limits and decoding: :mod:`kvplan.inputs.logs.source`).

    InputError (field ``LOG``) for a missing / unreadable / non-regular file, more than ``max_bytes`` (128 MiB) by
    path or on standard input, or binary content (NUL bytes or mostly undecodable bytes in the first 64 KiB).
    """
    data = read_log_bytes(source, max_bytes=max_bytes)
    name = "standard input" if source == "-" else repr(echo(source, PATH_CHARS))
    return parse_log(decode_log(data, name))


def read_log_file(path: str | Path, *, max_bytes: int = MAX_LOG_BYTES) -> LogFacts:
    """:func:`read_log` of a file path (``-`` is standard input)."""
    return read_log(os.fspath(path), max_bytes=max_bytes)


def missing_for_measured(facts: LogFacts) -> list[str]:
    """Names of the values a measured-mode prediction needs that the log does not give (empty = complete).

    SGLang: free memory before weights (``Load weight begin`` or, failing that, ``Load weight end`` avail +
    mem usage), the weight footprint (begin - end, or ``mem usage``), ``mem_fraction_static`` and the model.
    vLLM: ``Available KV cache memory`` (token target), or else all of total GPU memory, model loading,
    peak activation and non-torch memory (KV-bytes target); and the model.
    """
    out = _missing_sglang(facts) if facts.engine == "sglang" else _missing_vllm(facts)
    if facts.model is None:
        out.append("model")
    return out


def _missing_sglang(facts: LogFacts) -> list[str]:
    out: list[str] = []
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
    return out


def _missing_vllm(facts: LogFacts) -> list[str]:
    if facts.available_kv_cache_bytes is not None:
        return []
    parts = [
        name
        for name in ("total_gpu_memory_bytes", "model_loading_bytes", "peak_activation_bytes", "non_torch_bytes")
        if getattr(facts, name) is None
    ]
    return ["available_kv_cache_bytes", *parts] if parts else []
