"""Planning at scale: evaluate a whole grid of deployments with the same formulas as ``kvplan fit``.

A sweep is the cartesian product of *axes*: any :class:`~kvplan.deployment.Deployment` field may take a
list or a range (``--tp 1,2,4,8``, ``--mem-fraction-static 0.70:0.95:0.05``, ``--context-length
4k:1m:x2``).  The axes fall in two kinds:

* **group axes** (model, gpu, engine, tp, pp, dp, ep, kv_cache_dtype, page_size, ...) change the
  per-token cell, the free memory, the weights or the page size.  For each combination kvplan runs
  ``kvplan.planning.plan.fit`` **once** (a *representative point*), which resolves those scalars through the
  exact code path of ``kvplan fit``;
* **numeric axes** (mem_fraction_static, context_length, max_running_requests, max_total_tokens,
  target requests, the workload's input_len / output_len; vLLM's gpu_memory_utilization when the flag registry
  makes it numeric: a per-row input array, not a CSV column) only enter the budget -> pools -> request cap ->
  concurrency -> verdict arithmetic.  vLLM ignores SGLang's mem_fraction_static (as ``fit`` does: its column is
  NaN for vLLM rows).  That arithmetic is evaluated element-wise over numpy arrays by the *same*
  functions ``kvplan fit`` calls (:func:`evaluate_group`): the release's rule set
  (``kvplan.engines.sglang.rules.budget_bytes``, ``page_floor``, ``resolve_max_running_requests``,
  ``max_request_len``) and the family's pool formulas, which take ints or arrays (SGLang 0.5.23:
  sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
  ``KVCacheConfigurator._profile_available_bytes`` and ``resolve_max_num_reqs``;
  python/sglang/srt/model_executor/pool_configurator.py ``DefaultPoolConfigurator``, ``HybridSWAPoolConfigurator``,
  ``SWARequestCapPoolConfigurator``, ``DSV4PoolConfigurator``; ``_handle_max_mamba_cache``).

The verdict columns (``fits``, ``meets_target``, ``workload_tokens_per_request``, ``workload_concurrency``) are
vectorised too; each row's words (``verdict``, ``reason``, ``reasons``) are :func:`kvplan.planning.verdict.judge`'s
(``row``) and, in the writers, the verdict's own text functions made templates once per distinct target / context /
workload (:mod:`kvplan.planning.sweep_text`).

Which function evaluates a family is the engines' word: SGLang's pool registry
(``kvplan.engines.sglang.pools.SWEEP_VECTORS``: the single-cell families, hybrid sliding window in ratio and
request-cap modes, Mamba / linear hybrids, DeepSeek-V4 with its bounded padding search; draft layers, DP attention and
PP stages included) from the planner's context of the group's representative ``fit``, and
:mod:`kvplan.planning.sweep_vllm` for vLLM (imported for a vLLM group only).  Every vectorised group is checked
against its representative ``fit`` result; a mismatch (which would be a bug) makes that group fall back to one
``fit`` call per point.  Points the family's planner refuses (a budget too small for its pools) are flagged by the
formulas and carry ``fit``'s one-line error (asked once per distinct pool input); a group whose first point is
refused is resolved at another point of its grid (:func:`_representative`).

The axes are the sweepable flags of the flag registry (:func:`kvplan.flags.sweep_axes`: ``sweep = "group"`` or
``"numeric"``), named in errors by their registry label.

Per-point groups (one ``fit`` call per point, a few ms each, at most :data:`MAX_POINT_GROUP` points): a family or a
configuration the vector formulas do not cover (an all-sliding-window model, a vLLM group its module declines), and
any group whose self-check failed.  SGLang with the
default ``--mem-fraction-static`` *and* a ``--max-running-requests`` axis: the default fraction depends on the request
cap (CUDA-graph batch size), so each request cap is its own group (still vectorised over the other numeric axes).

Memory: :func:`sweep` resolves the groups (one ``fit`` each, and the per-point groups' fits) and keeps each
group's numeric axes only; :class:`SweepTable` evaluates the vectorised rows on demand, :data:`CHUNK_ROWS` at a
time (:meth:`SweepTable.chunks`), so :meth:`SweepTable.write_csv` / :meth:`SweepTable.write_jsonl` in grid order
hold one chunk, whatever the grid (benchmarks/bench_sweep.py, docs/performance.md "Sweeps").

numpy is imported only inside the functions of this module (never at ``import kvplan``).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.engines.registry import PoolCount, check_kv_dtype_for, engine, engine_names
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.flags import SWEEP_NUMERIC, Flag, sweep_axes
from kvplan.planning.verdict import Facts, cap_source, judge, sglang_memory_reason
from kvplan.planning.workload import POOL, SGLANG_SWA_POOL_NAME, SWA_POOL, combine, page_round

#: Hard cap on the number of points of one sweep (rows are evaluated and written in chunks of :data:`CHUNK_ROWS`;
#: only a sorted output or :attr:`SweepTable.cols` holds every row: ~140 bytes each, ~0.7 GB).
MAX_POINTS = 5_000_000
#: rows evaluated and formatted at a time by the streaming writers (:meth:`SweepTable.write_csv`, ...): the memory
#: a sweep holds grows with this, not with the grid (about 2 kB per row while a chunk is formatted)
CHUNK_ROWS = 32_768
#: Hard cap on the values of one axis.
MAX_AXIS_VALUES = 1_000_000
#: Hard cap on the groups of one sweep (one ``fit`` call each, ~2 ms).
MAX_GROUPS = 10_000
#: Hard cap on the points of one per-point group (one ``fit`` call each, a few ms), and on the distinct refused pool
#: inputs of a vectorised group (each asked of ``fit`` once for its one-line error).
MAX_POINT_GROUP = 20_000


@dataclass(frozen=True)
class Axis:
    field: str  # Deployment field
    flag: str  # the CLI flag that names it in errors
    kind: str  # "str" | "int" | "count" | "float" | "size"
    numeric: bool  # vectorised inside a group


def _axis(f: Flag) -> Axis:
    return Axis(f.field, f.flag, f.kind, f.sweep == SWEEP_NUMERIC)


#: every sweepable field of the flag registry (kvplan.flags: ``sweep`` = "group" or "numeric"), registry order
AXES: dict[str, Axis] = {f.field: _axis(f) for f in sweep_axes()}

NUMERIC_FIELDS = tuple(f for f, a in AXES.items() if a.numeric)

# ------------------------------------------------------------------------------------------------
# Parsing lists and ranges
# ------------------------------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _scalar(text: str, kind: str, flag: str):
    t = text.strip()
    if kind == "str":
        return t
    if kind == "int":
        if not _INT_RE.fullmatch(t.replace("_", "")):
            raise InputError(f"'{t}' is not a whole number", field=flag, hint="write e.g. 1,2,4,8 or 1:8")
        from kvplan.units import int_text

        return int_text(t.replace("_", ""), field=flag)  # refuses absurd digit counts before int()
    if kind == "count":
        from kvplan.units import parse_count

        return parse_count(t, field=flag)
    if kind == "size":
        from kvplan.units import parse_size

        return parse_size(t, field=flag)
    if kind == "float":
        if not _FLOAT_RE.fullmatch(t):
            raise InputError(f"'{t}' is not a number", field=flag, hint="write e.g. 0.85 or 0.70:0.95:0.05")
        v = float(t)
        if not math.isfinite(v):  # pragma: no cover - the regex already refuses nan/inf
            raise InputError(f"'{t}' is not a finite number", field=flag)
        return v
    raise ValueError(kind)


def _range(item: str, kind: str, flag: str) -> list:
    parts = item.split(":")
    if kind in ("str", "size") or len(parts) not in (2, 3):
        raise InputError(
            f"'{item}' is not a value or a START:STOP[:STEP] range",
            field=flag,
            hint="write e.g. 1:8, 0.70:0.95:0.05 or 4k:1m:x2" if kind != "str" else "ranges need numbers",
        )
    start, stop = _scalar(parts[0], kind, flag), _scalar(parts[1], kind, flag)
    step_text = parts[2].strip() if len(parts) == 3 else ("1" if kind in ("int", "count") else "")
    if not step_text:
        raise InputError(f"range '{item}' needs a step", field=flag, hint="write START:STOP:STEP, e.g. 0.70:0.95:0.05")
    if start > stop:
        raise InputError(
            f"range '{item}' runs backwards (start {start} > stop {stop})",
            field=flag,
            hint="write the smaller value first",
        )
    out: list = []
    if step_text.lower().startswith("x"):
        factor = _scalar(step_text[1:], "float", flag)
        if not factor > 1:
            raise InputError(f"range '{item}': the factor must be > 1", field=flag, hint="e.g. 4k:1m:x2")
        if start <= 0:
            raise InputError(f"range '{item}': a geometric range must start above 0", field=flag)
        v = start
        while v <= stop * (1 + 1e-12):
            out.append(int(v) if kind in ("int", "count") else round(v, 12))
            if len(out) > MAX_AXIS_VALUES:
                break
            v = v * factor
    else:
        step = _scalar(step_text, "count" if kind == "count" else kind, flag)
        if not step > 0:
            raise InputError(f"range '{item}': the step must be > 0", field=flag)
        n = math.floor((stop - start) / step + 1e-9) + 1
        if n > MAX_AXIS_VALUES:
            raise InputError(f"range '{item}' has {n:,} values (at most {MAX_AXIS_VALUES:,})", field=flag)
        if kind in ("int", "count"):
            out = list(range(start, stop + 1, step))
        else:
            out = [round(start + i * step, 12) for i in range(n)]
    if len(out) > MAX_AXIS_VALUES:
        raise InputError(f"range '{item}' has more than {MAX_AXIS_VALUES:,} values", field=flag)
    return out


def parse_axis(text: str, *, field: str, engines: Sequence[str | None] = (None,)) -> list:
    """Parse one axis value: ``a,b,c``, ``START:STOP[:STEP]`` (inclusive; ``xF`` = geometric), or a mix.

    Values are validated the way ``kvplan fit`` validates the flag (same bounds, same field name).
    Duplicates are dropped, order is kept.  Examples: ``parse_axis("1,2,4", field="tp") == [1, 2, 4]``;
    ``parse_axis("0.70:0.95:0.05", field="mem_fraction_static")`` gives 6 values;
    ``parse_axis("4k:32k:x2", field="context_length") == [4096, 8192, 16384, 32768]``.  ``engines``: the engines
    the sweep plans (None = the default engine): a KV dtype is checked against each one's vocabulary, so
    ``parse_axis("fp8", field="kv_cache_dtype", engines=["vllm"]) == ["fp8"]`` while SGLang refuses it.
    """
    axis = AXES.get(field)
    if axis is None:
        raise InputError(f"'{field}' cannot be swept", field="sweep", hint="axes: " + ", ".join(AXES))
    flag = axis.flag
    if text is None or not str(text).strip():
        raise InputError("empty value", field=flag, hint="give one value or a list such as 1,2,4")
    items = str(text).split(",")
    values: list = []
    for item in items:
        if not item.strip():
            raise InputError(
                f"empty item in '{text}'", field=flag, hint="separate values with single commas, e.g. 1,2,4"
            )
        if axis.kind != "str" and ":" in item:
            values.extend(_range(item, axis.kind, flag))
        else:
            values.append(_scalar(item, axis.kind, flag))
        if len(values) > MAX_AXIS_VALUES:
            raise InputError(f"more than {MAX_AXIS_VALUES:,} values", field=flag)
    values = list(dict.fromkeys(values))
    if axis.kind in ("int", "count", "float") and len(values) > 2:
        # the flag checks are bounds: the extremes decide for every value
        _validate_value(field, min(values), engines)
        _validate_value(field, max(values), engines)
    else:
        for v in values:
            _validate_value(field, v, engines)
    return values


def _validate_value(field: str, value: Any, engines: Sequence[str | None] = (None,)) -> None:
    from kvplan.deployment import validate

    if field in ("model", "gpu", "kv_cache_dtype", "attention_backend", "speculative_algorithm"):
        if not value:
            raise InputError("empty value", field=AXES[field].flag)
        if field == "kv_cache_dtype":
            check_kv_dtype_for(value, engines)
        return
    if field == "engine":
        if value not in engine_names():
            raise InputError(f"unknown engine '{value}'", field="--engine", hint="use sglang, vllm or sglang,vllm")
        return
    if field in ("gpu_memory", "free_memory", "weight_memory"):
        return  # parse_size already refused nonsense
    validate(replace(Deployment(model="x"), **{field: value}))


# ------------------------------------------------------------------------------------------------
# Groups
# ------------------------------------------------------------------------------------------------

GROUP_COLS = ("model", "gpu", "engine", "num_gpus", "tp", "pp", "dp", "ep", "kv_cache_dtype", "page_size")


@dataclass
class Group:
    """One combination of the group axes: what ``fit`` resolved once for it."""

    dep: Deployment  # group fields set; numeric fields as the user gave them (axes: None)
    labels: dict[str, Any]  # model, gpu, engine, num_gpus, tp, pp, dp, ep, kv_cache_dtype, page_size
    method: str = "vector"  # "vector" | "point" | "invalid"
    error: str = ""
    family: str = ""
    cell: int = 0
    free: int = 0
    after: int = 0
    mm: int = 0
    page: int = 1
    attn_dp: int = 1
    dp: int = 1
    note: str = ""
    # the verdict's group-level facts (kvplan.planning.verdict): the same for every point of the group
    engine: str = "sglang"
    weights: int = 0  # per-GPU weight load
    dtype_refusal: str | None = None
    context_limit: int | None = None  # the longest context the engine accepts (None: no check)
    context_given: bool = False  # a --context-length is set (an axis or the base), so the engine checks it
    allow_long_context: bool = False
    family_cap: int | None = None  # SGLang's family default request cap (DeepSeek-V4: 256)
    model: Any = None  # the ModelSpec
    rules: Any = None  # the SGLang rule set of the deployment's release (releases.rules_for)
    context_refusals: dict[int, str | None] = field(default_factory=dict)  # context -> the engine's refusal
    vector: Any = None  # an engine's per-group vector state (kvplan.planning.sweep_vllm, SGLang's pools)
    kv_cell: float = 0.0  # the representative fit's kv_bytes_per_token
    requested: int | None = None  # SGLang: the request cap in force without an axis (the user's or a default)
    swa_terms: Any = None  # SGLang hybrid SWA: the workload's SWA-pool terms (kvplan.planning.workload)


def _context_refusal(g: Group, ctx: int) -> str | None:
    """:func:`kvplan.engines.support.context_refusal` for one of the group's contexts (remembered per context)."""
    if ctx not in g.context_refusals:
        from kvplan.engines import support

        g.context_refusals[ctx] = support.context_refusal(
            engine=g.engine,
            model=g.model,
            context_length=ctx if g.context_given else None,
            allowed=g.allow_long_context,
        )
    return g.context_refusals[ctx]


def _invalid_group(dep: Deployment, rep: Deployment, exc: InputError) -> Group:
    eff = rep.with_defaults()
    tp, pp, dp = eff.tp or 1, eff.pp or 1, eff.dp or 1
    labels = {
        "model": eff.model,
        "gpu": eff.gpu,
        "engine": eff.engine,
        "num_gpus": eff.num_gpus or tp * pp * (1 if eff.enable_dp_attention else dp),
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "ep": eff.ep or 1,
        "kv_cache_dtype": eff.kv_cache_dtype or "auto",
        "page_size": eff.page_size,
    }
    return Group(dep=dep, labels=labels, method="invalid", error=exc.one_line())


def _verdict_facts(g: Group, rep: Deployment, res: Any) -> None:
    """The group-level verdict facts of a vectorised group, read as ``kvplan.planning.verdict.apply`` reads them."""
    import os

    from kvplan.engines import support
    from kvplan.planning.plan import gpu_for
    from kvplan.planning.verdict import long_context_allowed

    eff = rep.with_defaults()
    gpu, _ = gpu_for(eff)
    g.engine = res.engine
    g.weights = res.weight_bytes
    g.dtype_refusal = support.kv_dtype_refusal(
        engine=res.engine,
        kv_dtype=res.kv_cache_dtype,
        arch=support.arch_of(gpu),
        attention=support.attention_kind(g.model),
        attention_backend=eff.attention_backend,
        deepseek_family=support.deepseek_family(g.model),
    )
    g.context_limit = support.model_max_context(engine=res.engine, model=g.model)[0]
    g.allow_long_context = long_context_allowed(eff, res.engine, os.environ)[0]
    g.family_cap = support.family_request_cap(engine=res.engine, family=res.family, engine_version=eff.engine_version)


def _fit_group(dep: Deployment, first: Mapping[str, Any]) -> tuple[Group, Any]:
    """Run ``fit`` on the representative point; classify the group (vector: the engine's vector state in
    ``g.vector``; point: one ``fit`` per point)."""
    from kvplan.engines.sglang.pools import capturing_contexts
    from kvplan.planning.plan import fit

    rep = replace(dep, **first)
    try:
        with capturing_contexts() as contexts:
            res = fit(rep)
    except InputError as exc:
        return _invalid_group(dep, rep, exc), None
    labels = {
        "model": res.model,
        "gpu": res.gpu,
        "engine": res.engine,
        "num_gpus": res.num_gpus,
        "tp": res.tp,
        "pp": res.pp,
        "dp": res.dp,
        "ep": res.ep,
        "kv_cache_dtype": res.kv_cache_dtype,
        "page_size": res.page_size,
    }
    g = Group(dep=dep, labels=labels, family=res.family, engine=res.engine)
    g.kv_cell = float(res.kv_bytes_per_token)
    pool = engine(res.engine).pool_count
    if pool is PoolCount.BLOCKS:
        vllm = _vllm_module()
        if vllm is None or not vllm.prepare_group(g, rep, res):
            g.vector, g.method = None, "point"
        return g, res
    if pool is not PoolCount.TOKENS or len(contexts) != 1:
        g.method = "point"
        return g, res
    _sglang_group(g, rep, res, contexts[0])
    return g, res


def _blocks(g: Group) -> bool:
    """The group's engine counts its KV pool in blocks of KV cache groups (the vector path of
    :mod:`kvplan.planning.sweep_vllm`), not in tokens."""
    return engine(g.engine).pool_count is PoolCount.BLOCKS


def _vllm_module() -> Any:
    """:mod:`kvplan.planning.sweep_vllm` (vLLM's vector path), imported only for a vLLM group; None without it."""
    try:
        from kvplan.planning import sweep_vllm
    except ImportError:  # pragma: no cover - the module ships with kvplan
        return None
    return sweep_vllm


def _sglang_group(g: Group, rep: Deployment, res: Any, ctx: Any) -> None:
    """An SGLang group's scalars and its family's vector state (the pool registry,
    ``kvplan.engines.sglang.pools.SWEEP_VECTORS``); ``method = "point"`` when the family has none for it."""
    from kvplan.engines.sglang.pools import vector_group
    from kvplan.engines.sglang.releases import rules_for
    from kvplan.planning.workload import sglang_swa_terms

    fam = Family(res.family)
    g.vector = vector_group(fam, ctx, cell=res.kv_bytes_per_token)
    if g.vector is None:
        g.method = "point"
        return
    model = ctx.model  # the spec the group's fit planned (res.model is a display name: a path's is not resolvable)
    g.model = model
    g.rules = rules_for(rep.engine_version)
    g.cell = int(res.kv_bytes_per_token) if float(res.kv_bytes_per_token).is_integer() else 0
    g.free = res.free_bytes
    g.after = res.free_bytes - res.weight_bytes
    g.mm = g.rules.multimodal_reserve_bytes(is_multimodal=model.is_multimodal)
    g.page = res.page_size
    g.attn_dp = res.attn_dp
    g.dp = res.dp
    g.requested = ctx.max_running_requests
    g.swa_terms = sglang_swa_terms(res=res, dep=rep.with_defaults(), model=model) if fam == Family.HYBRID_SWA else None
    _verdict_facts(g, rep, res)


def evaluate_group(
    g: Group,
    *,
    mem_fraction_static,
    context_length,
    max_running_requests,
    max_total_tokens,
    target_requests,
    input_len=None,
    output_len=None,
    gpu_memory_utilization=None,
) -> dict:
    """The budget -> pools -> request cap -> concurrency -> verdict arithmetic of one group over numpy arrays.

    All inputs are int64/float64 arrays of one length; ``max_running_requests`` is ``None`` when the engine derives
    it, ``max_total_tokens`` uses -1 for "not set", ``input_len`` / ``output_len`` are ``None`` without a workload.
    vLLM groups: :func:`kvplan.planning.sweep_vllm.evaluate_group` (``gpu_memory_utilization``: vLLM's fraction
    per row, None / NaN = the group's; SGLang ignores it, as ``fit`` does).  SGLang (per GPU; the rule set of the
    deployment's release, ``kvplan.engines.sglang.releases.rules_for(engine_version)``, and the family's pools,
    ``g.vector.pools`` = :mod:`kvplan.engines.sglang.pools.vector` / ``swa`` / ``mamba`` / ``dsv4``, the formulas
    :func:`kvplan.engines.sglang.planner.plan_sglang` calls; the verdict of :func:`kvplan.planning.verdict.apply`)::

        budget  = budget_bytes(free, free - weights, mfs, mm_reserve)
        tokens, cell, mrr = the family's pools(budget, context, requested, max_total_tokens)
                  (single cell: tokens = page_floor(max(budget, 0) // cell), capped by max_total_tokens;
                   mrr = resolve_max_running_requests(tokens, context, requested, attn_dp))
        conc    = min(tokens // context, mrr) * dp
        max_ctx = min(context - 1, tokens - 1) if tokens > 0 else 0
        fits    = weights < free and budget > 0 and tokens >= context
                  and the KV dtype runs on the GPU and (context <= the model's maximum or the override is on)
        work    = min(mrr, tokens // ceil_page(input + output), the family's other pools) * dp
                  (0 when input + output > max_ctx; hybrid SWA: the SWA pool's bound, kvplan.planning.workload)
        meets   = fits and (work if a workload else conc) >= target

    Rows where the family's planner refuses the point (``_error``) are evaluated by ``fit`` (their one-line error).

    Example (hand-checked): Qwen3-8B bf16 (147,456 B/token), free 80 GiB, weights 16 GiB, mfs 0.75:
    budget = (64 - 80 x 0.25) GiB = 47,244,640,256 B; tokens = 320,398; at 32k context
    conc = min(320,398 // 32,768, 4096) = 9; a workload of 8,192 + 1,024 tokens: min(320,398 // 9,216, 4,096) = 34.
    """
    kw = dict(
        mem_fraction_static=mem_fraction_static,
        context_length=context_length,
        max_running_requests=max_running_requests,
        max_total_tokens=max_total_tokens,
        target_requests=target_requests,
        input_len=input_len,
        output_len=output_len,
    )
    if _blocks(g):
        return dict(_vllm_module().evaluate_group(g, gpu_memory_utilization=gpu_memory_utilization, **kw))
    return _evaluate_sglang(g, **kw)


def _evaluate_sglang(
    g: Group,
    *,
    mem_fraction_static,
    context_length,
    max_running_requests,
    max_total_tokens,
    target_requests,
    input_len=None,
    output_len=None,
) -> dict:
    """:func:`evaluate_group` for an SGLang group (see there)."""
    import numpy as np

    from kvplan.planning.workload import sglang_swa_bound, single_pool_concurrency

    R = g.rules
    if R is None:
        from kvplan.engines.sglang.releases import rules_for

        R = rules_for(None)
    ctx = context_length
    budget = R.budget_bytes(
        free_before_bytes=g.free,
        free_after_bytes=g.after,
        mem_fraction_static=mem_fraction_static,
        mm_reserve_bytes=g.mm,
    )
    requested = max_running_requests if max_running_requests is not None else g.requested
    vp = g.vector.pools(budget=budget, context_len=ctx, requested=requested, max_total_tokens=max_total_tokens)
    n = len(budget)
    tokens = np.broadcast_to(np.asarray(vp.tokens, dtype=np.int64), (n,))
    mrr = np.broadcast_to(np.asarray(vp.mrr, dtype=np.int64), (n,))
    conc = np.minimum(tokens // ctx, mrr) * g.dp
    max_ctx = np.where(tokens > 0, R.max_request_len(context_len=ctx, total_tokens=tokens), 0)
    fits = (g.weights < g.free) & (budget > 0) & (tokens >= ctx) & (g.dtype_refusal is None)
    if g.context_given and not g.allow_long_context and g.context_limit is not None:
        fits = fits & (ctx <= g.context_limit)
    work_tokens = np.full(n, -1, dtype=np.int64)
    work = np.full(n, -1, dtype=np.int64)
    swa = np.full(n, -1, dtype=np.int64)
    achieved = conc
    if input_len is not None:
        total = input_len + (np.maximum(output_len, 0) if output_len is not None else 0)
        work_tokens = page_round(tokens=total, page=g.page)
        cap = mrr
        if g.swa_terms is not None and vp.pools:
            swa_tokens = np.broadcast_to(vp.pools[SGLANG_SWA_POOL_NAME], (n,))
            swa = np.where(
                swa_tokens >= 0,
                sglang_swa_bound(swa_tokens=swa_tokens, tokens_per_request=work_tokens, terms=g.swa_terms),
                -1,
            )
            cap = np.where(swa >= 0, np.minimum(mrr, swa), mrr)
        work = single_pool_concurrency(pool_tokens=tokens, tokens=total, page=g.page, cap=cap, longest=max_ctx) * g.dp
        achieved = work
    error = np.zeros(n, dtype=bool) if vp.error is None else np.broadcast_to(vp.error, (n,))
    return {
        "kv_bytes_per_token": np.broadcast_to(np.asarray(vp.cell, dtype=np.float64), (n,)),
        "kv_budget_bytes": budget,
        "kv_pool_tokens": tokens,
        "max_running_requests": mrr,
        "max_concurrency": conc,
        "max_context_length": max_ctx,
        "fits": fits,
        "meets_target": fits & (achieved >= target_requests),
        "workload_tokens_per_request": work_tokens,
        "workload_concurrency": work,
        "_swa": swa,
        "_error": error,
    }


def _row_facts(g: Group, d: Mapping[str, Any]) -> Any:
    """The :class:`kvplan.planning.verdict.Facts` of one vectorised row (the facts ``apply`` reads from fit); vLLM:
    :func:`kvplan.planning.sweep_vllm.row_facts`."""
    if _blocks(g):
        return _vllm_module().row_facts(g, d)
    ctx, tokens, mrr = d["context_length"], d["kv_pool_tokens"], d["max_running_requests"]
    refusals = [g.dtype_refusal] if g.dtype_refusal else []
    why = _context_refusal(g, ctx)
    if why:
        refusals.append(why)
    w = None
    if d["input_len"] is not None:
        inp, out = d["input_len"], d["output_len"] or 0
        tpr = page_round(tokens=inp + out, page=g.page)
        bounds = {POOL: tokens // tpr}
        if d.get("_swa", -1) >= 0:
            bounds[SWA_POOL] = d["_swa"]
        w = combine(
            input_len=inp,
            output_len=out,
            tokens_per_request=tpr,
            bounds=bounds,
            cap=mrr,
            longest=d["max_context_length"],
            dp=g.dp,
        )
    return Facts(
        engine=g.engine,
        context=ctx,
        dp=g.dp,
        refusals=tuple(refusals),
        memory_reason=sglang_memory_reason(
            weight_bytes=g.weights, free_bytes=g.free, budget=d["kv_budget_bytes"], tokens=tokens, context=ctx
        ),
        concurrency=d["max_concurrency"],
        pool_concurrency=tokens // ctx * g.dp,
        pool_tokens_total=tokens * g.dp,
        cap=mrr,
        cap_source=cap_source(
            engine=g.engine,
            requested=d["requested_max_running_requests"],
            resolved=mrr,
            attn_dp=g.attn_dp,
            family_default=g.family_cap,
        ),
        target_requests=d["target_requests"],
        workload=w,
    )


def _row_reason(g: Group, d: Mapping[str, Any]) -> str:
    """One vectorised row's target reason through the writers' path (:func:`_vector_reason` / vLLM's
    ``vector_reason``; ``d``: the row by column name, None = not set)."""
    v = [-1 if d[k] is None else d[k] for k in (*_IN_COLS, *_OUT_COLS)]
    if _blocks(g):
        return str(_vllm_module().vector_reason(g, v, _P))
    return _vector_reason(g, v, d.get("_swa", -1))


def _vector_reason(g: Group, v: Sequence[Any], swa: int = -1) -> str:
    """A vectorised SGLang row's target reason with the words :func:`kvplan.planning.verdict.judge` uses: the
    writers' path (:class:`kvplan.planning.sweep_text.ReasonWriter`) on one row.  ``v``: the row's values in
    ``_IN_COLS + _OUT_COLS`` order (-1 = not set); ``swa``: the SWA pool's workload bound (-1: none)."""
    import numpy as np

    from kvplan.planning.sweep_text import ReasonWriter

    c = {k: np.array([v[i]]) for k, i in _P.items()}
    c["_swa"] = np.array([swa], dtype=np.int64)
    w = ReasonWriter(
        engine=g.engine,
        dp=g.dp,
        weights=g.weights,
        free=g.free,
        first_refusal=lambda ctx: g.dtype_refusal or _context_refusal(g, ctx),
    )
    return str(w.texts(np, c, np.arange(1))[0])


# ------------------------------------------------------------------------------------------------
# The table
# ------------------------------------------------------------------------------------------------

_IN_COLS = (
    "mem_fraction_static",
    "context_length",
    "requested_max_running_requests",
    "max_total_tokens",
    "target_requests",
    "input_len",
    "output_len",
)
_OUT_COLS = (
    "kv_bytes_per_token",
    "kv_budget_bytes",
    "kv_pool_tokens",
    "max_running_requests",
    "max_concurrency",
    "max_context_length",
    "fits",
    "meets_target",
    "workload_tokens_per_request",
    "workload_concurrency",
)
#: integer columns where -1 means "not set" (None in rows, empty in CSV, null in JSON lines)
_NULLABLE = frozenset(
    {
        "requested_max_running_requests",
        "max_total_tokens",
        "input_len",
        "output_len",
        "workload_tokens_per_request",
        "workload_concurrency",
    }
)
_BOOLS = frozenset({"fits", "meets_target"})
CSV_COLUMNS = (*GROUP_COLS, *_IN_COLS, *_OUT_COLS, "reason", "method", "error")
_P = {k: i for i, k in enumerate(_IN_COLS + _OUT_COLS)}  # a column's place in a row's values


class SweepTable:
    """Columnar sweep result: one row per point.  ``groups[gid[i]]`` holds row i's group columns.

    A table made by :func:`sweep` holds its rows as *blocks* (one per group, the numeric axes' values) and evaluates
    them on demand, :data:`CHUNK_ROWS` rows at a time: the writers (:meth:`write_csv`, :meth:`write_jsonl`),
    :attr:`n_fit` / :attr:`n_meet`, :meth:`order` and :meth:`row` never hold more than a chunk of full rows (the
    sort keys of :meth:`order` are five columns).  :attr:`cols` (every column of every row) is built on first use
    and kept.
    """

    def __init__(
        self,
        groups: list[Group],
        cols: dict | None,
        row_errors: dict[int, str],
        axes: Mapping[str, list],
        row_text: dict[int, tuple[str, str, list[str]]] | None = None,
        *,
        blocks: list[_Block] | None = None,
        n: int | None = None,
    ):
        self.groups = groups
        self._cols = cols  # numpy arrays, one per _IN_COLS / _OUT_COLS and "gid" (None: not built yet)
        self.blocks = blocks or []
        self._n = int(cols["gid"].shape[0]) if cols is not None else int(n or 0)
        self.row_errors = row_errors
        self.axes = dict(axes)
        self.row_text = row_text or {}  # per-point rows: (verdict, target reason, reasons) as fit said them
        self._writers: dict[tuple[int, bool], Any] = {}  # (gid, JSON?) -> the group's reason templates
        self._counts: tuple[int, int] | None = None

    def __len__(self) -> int:
        return self._n

    @property
    def cols(self) -> dict:
        """Every column of every row (numpy arrays; built on first use: about 140 bytes per row)."""
        if self._cols is None:
            import numpy as np

            parts = [c for _, c in self.chunks()]
            keys = [*_IN_COLS, *_OUT_COLS, "gid", "_swa", "gpu_memory_utilization"]
            self._cols = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0) for k in keys}
        return self._cols

    def chunks(self, idx=None, *, chunk_rows: int = CHUNK_ROWS):
        """Yield ``(rows, columns)`` for consecutive pieces of at most ``chunk_rows`` rows: ``rows`` the row
        indices (grid order, or ``idx`` order), ``columns`` the arrays of :data:`CSV_COLUMNS`' numeric columns and
        ``gid`` for those rows.  Without ``idx`` the blocks are evaluated piece by piece (nothing else is kept)."""
        import numpy as np

        if chunk_rows < 1:
            raise ValueError(chunk_rows)
        if idx is not None or self._cols is not None:
            idx = np.arange(len(self)) if idx is None else np.asarray(idx)
            c = self.cols
            for lo in range(0, len(idx), chunk_rows):
                sel = idx[lo : lo + chunk_rows]
                yield sel, {k: v[sel] for k, v in c.items()}
            return
        pieces: list[dict] = []
        filled = start = 0
        for b in self.blocks:
            pos = 0
            while pos < b.n:
                take = min(b.n - pos, chunk_rows - filled)
                pieces.append(_block_rows(np, b, pos, pos + take))
                pos += take
                filled += take
                if filled == chunk_rows:
                    yield self._joined(np, pieces, start, filled)
                    start += filled
                    pieces, filled = [], 0
        if filled:
            yield self._joined(np, pieces, start, filled)

    @staticmethod
    def _joined(np, pieces: list[dict], start: int, n: int) -> tuple[Any, dict]:
        rows = np.arange(start, start + n)
        if len(pieces) == 1:
            return rows, pieces[0]
        return rows, {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}

    def _columns(self, names: Sequence[str]) -> dict:
        """Only the columns ``names`` of every row (a streaming pass unless :attr:`cols` is built)."""
        import numpy as np

        if self._cols is not None:
            return {k: self._cols[k] for k in names}
        parts: dict[str, list] = {k: [] for k in names}
        for _, c in self.chunks():
            for k in names:
                parts[k].append(c[k])
        return {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in parts.items()}

    def _count(self) -> tuple[int, int]:
        if self._counts is None:
            if self._cols is not None:
                self._counts = (int(self._cols["fits"].sum()), int(self._cols["meets_target"].sum()))
            else:
                fit = meet = 0
                for _, c in self.chunks():
                    fit += int(c["fits"].sum())
                    meet += int(c["meets_target"].sum())
                self._counts = (fit, meet)
        return self._counts

    @property
    def n_fit(self) -> int:
        """Points where the engine starts and serves one full-context request."""
        return self._count()[0]

    @property
    def n_meet(self) -> int:
        """Points that meet the target (what ``--check`` tests)."""
        return self._count()[1]

    def _at(self, i: int) -> dict:
        """Row ``i``'s columns as length-1 arrays (one block piece; no full table)."""
        import numpy as np

        if self._cols is not None:
            return {k: v[i : i + 1] for k, v in self._cols.items()}
        if not 0 <= i < len(self):
            raise IndexError(i)
        lo, hi = 0, len(self.blocks)
        while hi - lo > 1:  # the block holding row i: the last one starting at or before it
            mid = (lo + hi) // 2
            if self.blocks[mid].offset <= i:
                lo = mid
            else:
                hi = mid
        b = self.blocks[lo]
        return _block_rows(np, b, i - b.offset, i - b.offset + 1)

    def _values(self, i: int, c: Mapping[str, Any] | None = None) -> dict[str, Any]:
        c = self._at(i) if c is None else c
        d: dict[str, Any] = {}
        for k in _IN_COLS + _OUT_COLS:
            v = c[k][0].item()
            if k in _NULLABLE and v < 0:
                v = None
            d[k] = bool(v) if k in _BOOLS else v
        if "_swa" in c:
            d["_swa"] = c["_swa"][0].item()
        return d

    def _text(self, i: int, g: Group, d: Mapping[str, Any], error: str) -> tuple[str, str, list[str]]:
        """(verdict, target reason, reasons) of row ``i``: fit's words for per-point rows, :func:`judge` else."""
        if error:
            return "invalid: " + error, "invalid: " + error, [error]
        if i in self.row_text:
            return self.row_text[i]
        v = judge(_row_facts(g, d))
        return v.verdict, v.target_reason, list(v.reasons)

    def row(self, i: int) -> dict:
        """Row ``i`` as a dict of plain Python values (contract key names where they exist), with ``verdict`` (the
        words ``kvplan fit`` uses), ``reason`` (why the target is met or not) and ``reasons``."""
        i = int(i)
        c = self._at(i)
        g = self.groups[int(c["gid"][0])]
        d: dict[str, Any] = dict(g.labels)
        d.update(self._values(i, c))
        d["method"] = g.method
        d["error"] = g.error or self.row_errors.get(i, "")
        d["verdict"], d["reason"], d["reasons"] = self._text(i, g, d, d["error"])
        d.pop("_swa", None)
        return d

    def rows(self, *, chunk_rows: int = CHUNK_ROWS):
        """Every row as :meth:`row` gives it, in grid order, evaluated a chunk at a time."""
        for rows, c in self.chunks(chunk_rows=chunk_rows):
            for j, i in enumerate(rows.tolist()):
                g = self.groups[int(c["gid"][j])]
                d: dict[str, Any] = dict(g.labels)
                d.update(self._values(i, {k: v[j : j + 1] for k, v in c.items()}))
                d["method"] = g.method
                d["error"] = g.error or self.row_errors.get(i, "")
                d["verdict"], d["reason"], d["reasons"] = self._text(i, g, d, d["error"])
                d.pop("_swa", None)
                yield d

    def reasons_of(self, idx) -> list[str]:
        """The ``reason`` column for rows ``idx`` (the columns read once; :func:`_vector_reason` per vectorised
        row, fit's words for the per-point rows)."""
        import numpy as np

        idx = np.asarray(idx)
        return self._reasons(idx, {k: v[idx] for k, v in self.cols.items()})

    def _reasons(self, rows, c: Mapping[str, Any], quote: Any = None) -> list[str]:
        """The ``reason`` column of one chunk (``quote`` applied to each text: CSV / JSON escaping).  A vectorised
        SGLang group's rows are classified over arrays (:func:`_reason_keys`) and each distinct (class, numbers)
        key is formatted once (:func:`_key_text`); vLLM rows by ``sweep_vllm.vector_reason``; per-point and refused
        rows carry fit's words."""
        import numpy as np

        q = quote or str
        n = len(rows)
        out = np.empty(n, dtype=object)
        gid = np.asarray(c["gid"])
        if n == 0:
            return []
        order = np.argsort(gid, kind="stable")
        cuts = np.flatnonzero(np.diff(gid[order])) + 1
        for sel in np.split(order, cuts):
            g = self.groups[int(gid[sel[0]])]
            if g.error:
                out[sel] = q("invalid: " + g.error)
            elif g.method != "vector":
                continue  # per-point rows: fit's words, below
            elif _blocks(g):
                out[sel] = self._row_reasons(g, c, sel, quote)
            else:
                csv_cells = quote is _csv_quote()
                as_json = quote is json.dumps
                texts = self._writer(int(gid[sel[0]]), as_json).texts(np, c, sel, csv=csv_cells)
                out[sel] = texts if quote is None or csv_cells or as_json else list(map(quote, texts))
        if self.row_errors or self.row_text:
            for j, i in enumerate(rows.tolist()):
                if i in self.row_errors or i in self.row_text:
                    g = self.groups[int(gid[j])]
                    out[j] = q(self._text(i, g, {}, g.error or self.row_errors.get(i, ""))[1])
        return out.tolist()

    def _writer(self, gid: int, as_json: bool = False) -> Any:
        """The group's :class:`kvplan.planning.sweep_text.ReasonWriter` (its templates kept across chunks; JSON
        string literals when ``as_json``)."""
        w = self._writers.get((gid, as_json))
        if w is None:
            from kvplan.planning.sweep_text import ReasonWriter

            g = self.groups[gid]

            def first_refusal(ctx: int, g: Group = g) -> str | None:
                return g.dtype_refusal or _context_refusal(g, ctx)

            w = self._writers[(gid, as_json)] = ReasonWriter(
                engine=g.engine, dp=g.dp, weights=g.weights, free=g.free, first_refusal=first_refusal, as_json=as_json
            )
        return w

    @staticmethod
    def _row_reasons(g: Group, c: Mapping[str, Any], sel, quote) -> list[str]:
        """vLLM's rows: ``sweep_vllm.vector_reasons(g, columns, _P, quote=quote)`` for the chunk's rows of the
        group (each distinct text quoted once)."""
        return list(_vllm_module().vector_reasons(g, {k: c[k][sel] for k in _P}, _P, quote=quote))

    def deployment(self, i: int) -> Deployment:
        """The Deployment ``kvplan fit`` would plan for row ``i`` (for cross-checks)."""
        c = self._at(int(i))
        g = self.groups[int(c["gid"][0])]
        upd = {}
        for f in NUMERIC_FIELDS:
            if f in self.axes:
                col = "requested_max_running_requests" if f == "max_running_requests" else f
                v = c[col][0].item()
                if v == v:  # NaN: a flag the row's engine ignores (vLLM's mem_fraction_static), left unset
                    upd[f] = v
        return replace(g.dep, **upd)

    def order(self, sort: str = "concurrency"):
        """Row indices, best first (rows that meet the target first).  ``sort``: concurrency | gpus | tokens |
        context | none."""
        import numpy as np

        n = len(self)
        if sort == "none" or n == 0:
            return np.arange(n)
        if sort not in ("concurrency", "gpus", "tokens", "context"):
            raise InputError(
                f"unknown sort '{sort}'", field="--sort", hint="concurrency, gpus, tokens, context or none"
            )
        c = self._columns(("kv_pool_tokens", "max_concurrency", "max_context_length", "meets_target", "gid"))
        gpus = np.array([g.labels.get("num_gpus") or 0 for g in self.groups], dtype=np.int64)[c["gid"]]
        meets = c["meets_target"].astype(np.int8)
        keys = {
            "concurrency": (c["kv_pool_tokens"], -gpus, c["max_concurrency"], meets),
            "gpus": (c["kv_pool_tokens"], c["max_concurrency"], -gpus, meets),
            "tokens": (c["max_concurrency"], c["kv_pool_tokens"], meets),
            "context": (c["max_concurrency"], c["max_context_length"], meets),
        }[sort]
        # lexsort sorts ascending on the last key first; negate for descending
        return np.lexsort(tuple(-k.astype(np.int64) for k in keys), axis=0)

    def best_mask(self, idx, sort: str = "concurrency"):
        """Which of the rows ``idx`` (sorted by :meth:`order`) tie with the first row that meets the target, on
        every sort key."""
        import numpy as np

        mask = np.zeros(len(idx), dtype=bool)
        if len(idx) == 0:
            return mask
        keys = {
            "concurrency": ("max_concurrency", "num_gpus", "kv_pool_tokens"),
            "gpus": ("num_gpus", "max_concurrency", "kv_pool_tokens"),
            "tokens": ("kv_pool_tokens",),
            "context": ("max_context_length",),
        }.get(sort, ("max_concurrency",))

        def key(c):
            g = self.groups[int(c["gid"][0])]
            return tuple(g.labels.get("num_gpus") if k == "num_gpus" else c[k][0].item() for k in keys)

        first = self._at(int(idx[0]))
        if not first["meets_target"][0]:
            return mask
        ref = key(first)
        for j, i in enumerate(idx):
            c = self._at(int(i))
            mask[j] = bool(c["meets_target"][0]) and key(c) == ref
        return mask

    # -------------------------------------------------------------------- writers
    def _csv_affixes(self) -> tuple[list[str], list[str]]:
        """The group columns of each group pre-joined as CSV (prefix) and its method, error (suffix)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="")
        prefixes, suffixes = [], []
        for g in self.groups:
            buf.seek(0)
            buf.truncate()
            w.writerow(["" if g.labels.get(k) is None else g.labels.get(k) for k in GROUP_COLS])
            prefixes.append(buf.getvalue())
            suffixes.append(g.method + "," + _csv_field(g.error))
        return prefixes, suffixes

    def write_csv(self, fh: Any, idx=None, *, chunk_rows: int = CHUNK_ROWS) -> int:
        """Write the CSV (header + one line per row, in ``idx`` order; grid order by default) to ``fh`` one chunk
        at a time (one ``fh.write`` per chunk of at most ``chunk_rows`` lines); returns the rows written.  Each
        group's rows of a chunk are one template (:func:`kvplan.planning.sweep_text.csv_lines`)."""
        fh.write(",".join(CSV_COLUMNS) + "\n")
        affixes = self._csv_affixes()
        n = 0
        for rows, c in self.chunks(idx, chunk_rows=chunk_rows):
            lines = self._csv_lines(rows, c, affixes)
            if lines:
                lines.append("")
                fh.write("\n".join(lines))
            n += len(rows)
        return n

    def _csv_lines(self, rows, c: Mapping[str, Any], affixes: tuple[list[str], list[str]]) -> list[str]:
        """The CSV lines of one chunk, in its order (one template per group: sweep_text.csv_lines)."""
        from kvplan.planning.sweep_text import csv_lines, csv_quote

        return self._lines(
            rows, c, affixes, csv_lines, self._reasons(rows, c, csv_quote), lambda err: "point," + _csv_field(err)
        )

    def to_csv(self, idx=None) -> str:
        """CSV (header + one line per row, in ``idx`` order; all rows in grid order by default) as one string
        (:meth:`write_csv` streams it)."""
        buf = io.StringIO()
        self.write_csv(buf, idx)
        return buf.getvalue()

    def _jsonl_lines(self, rows, c: Mapping[str, Any], affixes: tuple[list[str], list[str]]) -> list[str]:
        """The JSON lines of one chunk, in its order (one template per group: sweep_text.jsonl_lines)."""
        from kvplan.planning.sweep_text import jsonl_lines

        return self._lines(
            rows,
            c,
            affixes,
            jsonl_lines,
            self._reasons(rows, c, json.dumps),
            lambda err: f', "method": "point", "error": {json.dumps(err)}}}',
        )

    def _lines(
        self,
        rows,
        c: Mapping[str, Any],
        affixes: tuple[list[str], list[str]],
        make: Any,
        reasons: list[str],
        error_tail: Any,
    ) -> list[str]:
        """Lines of one chunk by ``make`` (sweep_text.csv_lines / jsonl_lines) per group, in the chunk's order;
        a refused row's tail (method, error) is ``error_tail(its error)``."""
        import numpy as np

        prefixes, suffixes = affixes
        gid = np.asarray(c["gid"])
        if not len(gid):
            return []
        kw = dict(names=_IN_COLS + _OUT_COLS, nullable=_NULLABLE, bools=_BOOLS)
        if (gid == gid[0]).all():
            g0 = int(gid[0])
            lines = make(np, c, np.arange(len(gid)), prefix=prefixes[g0], suffix=suffixes[g0], reasons=reasons, **kw)
        else:
            order = np.argsort(gid, kind="stable")
            out = np.empty(len(gid), dtype=object)
            for sel in np.split(order, np.flatnonzero(np.diff(gid[order])) + 1):
                g0 = int(gid[sel[0]])
                out[sel] = make(
                    np,
                    c,
                    sel,
                    prefix=prefixes[g0],
                    suffix=suffixes[g0],
                    reasons=[reasons[j] for j in sel.tolist()],
                    **kw,
                )
            lines = out.tolist()
        if self.row_errors:
            for j, i in enumerate(rows.tolist()):
                if i in self.row_errors:
                    tail = suffixes[int(gid[j])]
                    lines[j] = lines[j][: len(lines[j]) - len(tail)] + error_tail(self.row_errors[i])
        return lines

    def write_jsonl(self, fh: Any, idx=None, *, chunk_rows: int = CHUNK_ROWS) -> int:
        """Write JSON lines (one object per row, keys as in :data:`CSV_COLUMNS`) to ``fh`` one chunk at a time;
        returns the rows written."""
        prefixes = [json.dumps({k: g.labels.get(k) for k in GROUP_COLS})[:-1] for g in self.groups]
        tails = [f', "method": {json.dumps(g.method)}, "error": {json.dumps(g.error)}}}' for g in self.groups]
        n = 0
        for rows, c in self.chunks(idx, chunk_rows=chunk_rows):
            lines = self._jsonl_lines(rows, c, (prefixes, tails))
            if lines:
                lines.append("")
                fh.write("\n".join(lines))
            n += len(rows)
        return n

    def to_jsonl(self, idx=None) -> str:
        """JSON lines: one object per row, keys as in :data:`CSV_COLUMNS` (:meth:`write_jsonl` streams them)."""
        buf = io.StringIO()
        self.write_jsonl(buf, idx)
        return buf.getvalue()

    def varying(self) -> list[str]:
        """Columns whose value differs between rows (for the table)."""
        out = [k for k in GROUP_COLS if len({str(g.labels.get(k)) for g in self.groups}) > 1]
        names = (
            "mem_fraction_static",
            "context_length",
            "requested_max_running_requests",
            "max_total_tokens",
            "target_requests",
            "input_len",
            "output_len",
        )
        first: dict[str, Any] = {}
        differ: set[str] = set()
        for _, c in self.chunks():
            for k in names:
                a = c[k]
                if k in differ or not len(a):
                    continue
                first.setdefault(k, a[0])
                if (a != first[k]).any():
                    differ.add(k)
        return out + [k for k in names if k in differ]


def _csv_quote() -> Any:
    from kvplan.planning.sweep_text import csv_quote

    return csv_quote


def _csv_field(text: str) -> str:
    if not text:
        return ""
    if any(ch in text for ch in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


# ------------------------------------------------------------------------------------------------
# The sweep
# ------------------------------------------------------------------------------------------------


def _check_workload(base: Deployment, values: Mapping[str, list]) -> None:
    """--output-len without --input-len is an input error of the whole sweep."""
    if (base.output_len is not None or "output_len" in values) and not (
        base.input_len is not None or "input_len" in values
    ):
        raise InputError(
            "--output-len needs --input-len (the prompt tokens of each request)",
            field="--input-len",
            hint="e.g. --input-len 8192 --output-len 1024",
        )


def sweep(base: Deployment, axes: Mapping[str, Sequence], *, max_points: int = MAX_POINTS) -> SweepTable:
    """Evaluate every point of ``base`` x the product of ``axes`` (Deployment field -> values).

    Unknown models, GPUs or dtypes raise :class:`InputError` (exit 2) before any arithmetic; a group the
    engine would refuse (a TP that does not divide the KV heads, ...) becomes rows with ``fits=False``
    and ``error`` set.  Returns a :class:`SweepTable`.
    """
    import numpy as np

    values: dict[str, list] = {k: list(v) for k, v in axes.items() if v is not None}
    for k, v in values.items():
        if k not in AXES:
            raise InputError(f"'{k}' cannot be swept", field="sweep", hint="axes: " + ", ".join(AXES))
        if not v:
            raise InputError("no values", field=AXES[k].flag)
    _check_workload(base, values)
    _preresolve(base, values)

    group_fields = [f for f in values if not AXES[f].numeric]
    numeric_fields = [f for f in NUMERIC_FIELDS if f in values]
    n_group = math.prod(len(values[f]) for f in group_fields) if group_fields else 1
    n_num = math.prod(len(values[f]) for f in numeric_fields) if numeric_fields else 1
    if n_group > MAX_GROUPS:
        raise InputError(
            f"{n_group:,} combinations of model / GPU / parallelism / dtype flags (at most {MAX_GROUPS:,})",
            field="sweep",
            hint="each combination is resolved by one fit() call; sweep fewer of them",
        )
    if n_group * n_num > max_points:
        raise InputError(
            f"{n_group * n_num:,} points is more than the {max_points:,} one sweep may hold",
            field="sweep",
            hint="narrow a range or split the sweep",
        )

    groups: list[Group] = []
    blocks: list[_Block] = []
    row_errors: dict[int, str] = {}
    row_text: dict[int, tuple[str, str, list[str]]] = {}
    offset = 0
    for combo in itertools.product(*(values[f] for f in group_fields)):
        gdep = replace(base, **dict(zip(group_fields, combo, strict=True)))
        # SGLang's default mem_fraction_static depends on the request cap and on --max-total-tokens (which caps
        # the prefill CUDA-graph batch): make them group axes then
        split = []
        if (
            "mem_fraction_static" not in values
            and gdep.with_defaults().mem_fraction_static is None
            and engine(gdep.engine).request_cap_sets_memory
        ):
            split = [f for f in ("max_running_requests", "max_total_tokens") if f in values]
        inner_num = [f for f in numeric_fields if f not in split]
        for sub in itertools.product(*(values[f] for f in split)):
            dep = replace(gdep, **dict(zip(split, sub, strict=True)))
            g, res, first = _representative(dep, inner_num, values)
            g.context_given = "context_length" in values or dep.with_defaults().context_length is not None
            n = math.prod(len(values[f]) for f in inner_num) if inner_num else 1
            if g.method == "vector" and not _self_check(np, g, res, dep, first):
                g.method = "point"
                g.note = "vectorised result disagreed with fit; evaluated per point"
            b = _Block(
                g=g,
                res=res,
                dep=dep,
                names=list(inner_num),
                values=[values[f] for f in inner_num],
                offset=offset,
                n=n,
                gid=len(groups),
                sinks=(row_errors, row_text),
            )
            if g.method == "point":  # one fit() per point, evaluated once here (at most MAX_POINT_GROUP rows)
                b.done = _block(
                    np, g, res, dep, _block_values(np, b, 0, n), n, inner_num, (row_errors, row_text), offset
                )
            groups.append(g)
            blocks.append(b)
            offset += n
    return SweepTable(groups, None, row_errors, values, row_text, blocks=blocks, n=offset)


#: points of a group's numeric grid tried as its representative when the first one is refused
REPRESENTATIVE_TRIES = 8


def _representative(
    dep: Deployment, inner_num: Sequence[str], values: Mapping[str, list]
) -> tuple[Group, Any, dict[str, Any]]:
    """The group resolved at its first numeric point; when ``fit`` refuses that point (a budget too small for the
    family's pools, ...), at up to :data:`REPRESENTATIVE_TRIES` points spread over the grid (the last included), so
    the rows that plan are planned and only the refused ones carry an error.  A group no tried point plans is
    invalid (every row carries the first point's error)."""
    first = {f: values[f][0] for f in inner_num}
    g, res = _fit_group(dep, first)
    if g.method != "invalid" or not inner_num:
        return g, res, first
    shape = [len(values[f]) for f in inner_num]
    total = math.prod(shape)
    for k in sorted(
        {total - 1 - (total - 1) * t // REPRESENTATIVE_TRIES for t in range(REPRESENTATIVE_TRIES)} - {0}, reverse=True
    ):
        coords, rest = [], k
        for size in reversed(shape):
            coords.append(rest % size)
            rest //= size
        point = {f: values[f][c] for f, c in zip(inner_num, reversed(coords), strict=True)}
        g2, res2 = _fit_group(dep, point)
        if g2.method != "invalid":
            return g2, res2, point
    return g, res, first


@dataclass
class _Block:
    """One group's rows, evaluated on demand: the numeric axes' values (the block is their C-order product)."""

    g: Group
    res: Any
    dep: Deployment
    names: list[str]  # the inner numeric axes
    values: list[list]  # their values
    offset: int  # the block's first row in the table
    n: int
    gid: int
    done: dict | None = None  # a per-point block's columns (evaluated once, by fit)
    sinks: tuple[dict, dict] = field(default_factory=lambda: ({}, {}))  # the table's row_errors, row_text
    refused: dict = field(default_factory=dict)  # a vector block's refused inputs -> fit's one-line error


def _block_values(np, b: _Block, lo: int, hi: int) -> dict[str, Any]:
    """The numeric axes' values of the block's rows ``lo .. hi - 1`` (row-major over the axes, as
    ``np.meshgrid(indexing="ij")`` ravels them)."""
    if not b.names:
        return {}
    shape = tuple(len(v) for v in b.values)
    coords = np.unravel_index(np.arange(lo, hi), shape)
    return {f: np.asarray(v)[c] for f, v, c in zip(b.names, b.values, coords, strict=True)}


def _block_rows(np, b: _Block, lo: int, hi: int) -> dict[str, Any]:
    """Columns (``_IN_COLS``, ``_OUT_COLS``, ``gid``) of the block's rows ``lo .. hi - 1``."""
    if b.done is not None:
        out = {k: v[lo:hi] for k, v in b.done.items()}
    else:
        n = hi - lo
        out = _block(np, b.g, b.res, b.dep, _block_values(np, b, lo, hi), n, b.names, b.sinks, b.offset + lo, b.refused)
    out["gid"] = np.full(hi - lo, b.gid, dtype=np.int32)
    return out


def _numeric_inputs(np, dep: Deployment, vals: Mapping[str, Any], n: int, res, g: Group | None = None) -> dict:
    """Full-length input arrays for one group: an axis, else the value ``fit`` used."""
    eff = dep.with_defaults()

    def col(name, default, dtype):
        if name in vals:
            return np.asarray(vals[name], dtype=dtype)
        return np.full(n, default, dtype=dtype)

    def unset(v):
        return -1 if v is None else v

    mfs_default = (
        eff.mem_fraction_static
        if eff.mem_fraction_static is not None
        else (res.mem_fraction_static if res is not None and res.mem_fraction_static is not None else math.nan)
    )
    mfs = col("mem_fraction_static", mfs_default, np.float64)
    if g is not None and g.rules is not None and ("mem_fraction_static" in vals or eff.mem_fraction_static is not None):
        # ModelRunner's cut of any given value for a multimodal model (SGLang up to 0.4.8); fit reports the cut value
        mfs = np.asarray(
            g.rules.runner_mem_fraction_factor(mem_fraction_static=mfs, is_multimodal=g.model.is_multimodal),
            dtype=np.float64,
        )
    ctx_default = eff.context_length or (res.context_length if res is not None else 0)
    inp = col("input_len", unset(eff.input_len), np.int64)
    out = col("output_len", unset(eff.output_len), np.int64)
    return {
        "mem_fraction_static": mfs,
        "gpu_memory_utilization": col("gpu_memory_utilization", math.nan, np.float64),
        "context_length": col("context_length", ctx_default, np.int64),
        "requested_max_running_requests": col("max_running_requests", unset(eff.max_running_requests), np.int64),
        "max_total_tokens": col("max_total_tokens", unset(eff.max_total_tokens), np.int64),
        "target_requests": col("target_requests", eff.target_requests or 1, np.int64),
        "input_len": inp,
        "output_len": np.where((inp >= 0) & (out < 0), 0, out),
    }


def _evaluate(g: Group, ins: Mapping[str, Any]) -> dict:
    """:func:`evaluate_group` on the input arrays of :func:`_numeric_inputs` (-1 = not set; NaN utilisation: the
    group's)."""
    import numpy as np

    req, mtt, inp = ins["requested_max_running_requests"], ins["max_total_tokens"], ins["input_len"]
    util = ins["gpu_memory_utilization"]
    return evaluate_group(
        g,
        mem_fraction_static=ins["mem_fraction_static"],
        context_length=ins["context_length"],
        gpu_memory_utilization=None if np.isnan(util).all() else util,
        max_running_requests=None if (req < 0).all() else req,
        max_total_tokens=None if (mtt < 0).all() else mtt,
        target_requests=ins["target_requests"],
        input_len=None if (inp < 0).all() else inp,
        output_len=None if (inp < 0).all() else ins["output_len"],
    )


def _copy_fit(out: dict, ins: dict, j: int, fr) -> None:
    """Row ``j`` of a per-point block from one ``fit`` result."""
    out["kv_bytes_per_token"][j] = fr.kv_bytes_per_token
    out["kv_budget_bytes"][j] = fr.kv_budget_bytes
    out["kv_pool_tokens"][j] = fr.kv_pool_tokens
    out["max_running_requests"][j] = fr.max_running_requests
    out["max_concurrency"][j] = int(fr.max_concurrency)
    out["max_context_length"][j] = fr.max_context_length
    out["fits"][j] = fr.fits
    out["meets_target"][j] = fr.meets_target
    out["workload_tokens_per_request"][j] = (
        -1 if fr.workload_tokens_per_request is None else fr.workload_tokens_per_request
    )
    out["workload_concurrency"][j] = -1 if fr.workload_concurrency is None else fr.workload_concurrency
    ins["mem_fraction_static"][j] = fr.mem_fraction_static if fr.mem_fraction_static is not None else math.nan
    ins["context_length"][j] = fr.context_length
    ins["target_requests"][j] = fr.target_requests


def _block(np, g: Group, res, dep: Deployment, vals, n: int, inner_num, sinks, offset, refused=None) -> dict:
    ins = _numeric_inputs(np, dep, vals, n, res, g)
    out = _empty_out(np, n)
    if g.method == "vector":
        got = _evaluate(g, ins)
        error = got.pop("_error", None)
        for k, v in got.items():
            out[k] = np.array(v, dtype=out[k].dtype) if k in out else v
        if "kv_bytes_per_token" not in got:
            out["kv_bytes_per_token"] = np.full(n, g.kv_cell)
        if error is not None and error.any():
            _refused_rows(
                np,
                g,
                dep,
                ins,
                out,
                np.flatnonzero(error),
                inner_num,
                vals,
                sinks,
                offset,
                {} if refused is None else refused,
            )
    elif g.method == "point":
        if n > MAX_POINT_GROUP:
            raise InputError(
                f"{n:,} points for {g.labels.get('model')} ({g.family or g.labels.get('engine')}), which "
                f"is evaluated one fit() per point; at most {MAX_POINT_GROUP:,}",
                field="sweep",
                hint="narrow the ranges for these deployments",
            )
        lists = {f: vals[f].tolist() for f in inner_num}
        _fit_rows(g, dep, ins, out, range(n), lists, inner_num, sinks, offset)
    return {**ins, **out}


def _empty_out(np, n: int) -> dict:
    """The output columns of ``n`` rows as an unplanned (refused) row has them: zeros, False, -1 = not set."""
    out = {k: np.zeros(n, dtype=np.int64) for k in _OUT_COLS}
    out["kv_bytes_per_token"] = np.zeros(n, dtype=np.float64)
    for k in _BOOLS:
        out[k] = np.zeros(n, dtype=bool)
    for k in ("workload_tokens_per_request", "workload_concurrency", "_swa"):
        out[k] = np.full(n, -1, dtype=np.int64)
    return out


def _fit_rows(
    g: Group, dep: Deployment, ins: dict, out: dict, rows, lists: Mapping[str, list], inner_num, sinks, offset: int
) -> dict[int, str]:
    """One ``fit`` per row ``j`` of ``rows``: its numbers into ``out`` / ``ins``, its words into ``row_text``, an
    InputError's line into ``row_errors`` (returned too, by row)."""
    from kvplan.planning.plan import fit

    row_errors, row_text = sinks
    errors: dict[int, str] = {}
    for j in rows:
        d = replace(dep, **{f: lists[f][j] for f in inner_num})
        try:
            fr = fit(d)
        except InputError as exc:
            row_errors[offset + j] = errors[j] = exc.one_line()
            continue
        _copy_fit(out, ins, j, fr)
        row_text[offset + j] = (fr.verdict, fr.target_reason, list(fr.reasons))
    return errors


#: the numeric inputs a pool refusal depends on (the budget, the request cap, the token cap: the context, the target
#: and the workload only enter the verdict, and no refusal's text names them)
_REFUSAL_KEYS = ("mem_fraction_static", "requested_max_running_requests", "max_total_tokens")


def _refused_rows(
    np, g: Group, dep: Deployment, ins: dict, out: dict, rows, inner_num, vals, sinks, offset: int, refused: dict
) -> None:
    """Rows a vectorised family's planner refuses (its formulas flag them): ``fit``'s one-line error, asked once per
    distinct pool input (remembered in ``refused``); the row's outputs are the unplanned row's (zeros)."""
    row_errors, _ = sinks
    blank = _empty_out(np, len(rows))
    for k, v in blank.items():
        out[k][rows] = v
    lists = {f: vals[f].tolist() for f in inner_num}
    keys = list(zip(*(ins[k][rows].tolist() for k in _REFUSAL_KEYS), strict=True))
    todo = [j for j, key in zip(rows.tolist(), keys, strict=True) if key not in refused]
    firsts: dict[Any, int] = {}
    for j, key in zip(rows.tolist(), keys, strict=True):
        if key not in refused:
            firsts.setdefault(key, j)
    if len(refused) + len(firsts) > MAX_POINT_GROUP:
        raise InputError(
            f"more than {MAX_POINT_GROUP:,} distinct refused points for {g.labels.get('model')} "
            f"({g.family}), each asked of fit() for its error",
            field="sweep",
            hint="narrow --mem-fraction-static / --max-running-requests / --max-total-tokens",
        )
    errors = _fit_rows(g, dep, ins, out, sorted(firsts.values()), lists, inner_num, sinks, offset) if todo else {}
    for key, j in firsts.items():
        if j not in errors:  # the formulas flagged a row fit plans: a bug (the internal-error path)
            raise AssertionError(f"sweep: the {g.family} vector formulas refused a point fit plans")
        refused[key] = errors[j]
    for j, key in zip(rows.tolist(), keys, strict=True):
        row_errors[offset + j] = refused[key]


def _self_check(np, g: Group, res, dep: Deployment, first) -> bool:
    """The vectorised formula and verdict at the representative point must reproduce ``fit`` exactly."""
    ins = _numeric_inputs(np, dep, {k: [v] for k, v in first.items()}, 1, res, g)
    r = _evaluate(g, ins)
    if bool(r.pop("_error", np.zeros(1, dtype=bool))[0]):
        return False
    r.setdefault("kv_bytes_per_token", np.full(1, g.kv_cell))
    one = {k: v[0].item() for k, v in {**ins, **r}.items()}
    for k in _NULLABLE:
        one[k] = None if one[k] < 0 else one[k]
    v = judge(_row_facts(g, one))
    work = None if res.workload_concurrency is None else res.workload_concurrency
    mfs_ok = (
        math.isnan(one["mem_fraction_static"])
        if res.mem_fraction_static is None
        else one["mem_fraction_static"] == res.mem_fraction_static
    )
    return (
        mfs_ok
        and one["kv_budget_bytes"] == res.kv_budget_bytes
        and one["kv_pool_tokens"] == res.kv_pool_tokens
        and one["kv_bytes_per_token"] == float(res.kv_bytes_per_token)
        and one["max_running_requests"] == res.max_running_requests
        and one["max_concurrency"] == int(res.max_concurrency)
        and bool(one["fits"]) == res.fits
        and one["max_context_length"] == res.max_context_length
        and bool(one["meets_target"]) == res.meets_target
        and one["workload_concurrency"] == work
        and (v.fits, v.verdict, v.target_reason, v.meets_target)
        == (res.fits, res.verdict, res.target_reason, res.meets_target)
        and _row_reason(g, one) == res.target_reason
    )


def _preresolve(base: Deployment, axes: Mapping[str, list]) -> None:
    """Unknown models and GPUs, and a KV dtype one of the swept engines does not accept (its own message), are
    input errors of the whole sweep (exit 2), not invalid rows."""
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

    engines = axes.get("engine") or [base.engine]
    for dtype in axes.get("kv_cache_dtype") or ([base.kv_cache_dtype] if base.kv_cache_dtype else []):
        check_kv_dtype_for(dtype, engines)

    for m in axes.get("model", []):
        resolve_model(m)
    for gname in axes.get("gpu", []):
        resolve_gpu(gname)


# ------------------------------------------------------------------------------------------------
# Verdicts
# ------------------------------------------------------------------------------------------------


def reason(row: Mapping[str, Any]) -> str:
    """Why a row meets its target or not, in the words ``kvplan fit`` uses (its ``target_reason``); the row's
    ``verdict`` is fit's verdict.  An invalid row: ``invalid: <the error>``."""
    return str(row["reason"])
