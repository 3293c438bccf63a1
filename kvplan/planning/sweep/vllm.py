"""vLLM in ``kvplan sweep`` (a group whose engine counts its KV pool in blocks): one group's numeric axes evaluated
over numpy arrays by the formulas ``kvplan fit`` runs.

:func:`prepare_group` resolves, once per group (after the sweep's ``fit`` of the representative point), everything
that does not depend on the numeric axes -- specs, block size, page unification, KV groups, bytes per block of each
PP stage, the weights / non-torch / CUDA-graph terms -- into the planner's
:class:`~kvplan.engines.vllm.vector.VllmStatic` (:func:`kvplan.engines.vllm.adapter.static`), plus the verdict's group
facts.  :func:`evaluate_group` then runs :func:`kvplan.engines.vllm.vector.evaluate` -- the function
:func:`kvplan.engines.vllm.planner.plan_vllm` calls for its one point -- element-wise, and the verdict of
:mod:`kvplan.planning.verdict` vectorised.  The sweep's columns carry vLLM's flags: ``context_length``
``max_model_len``, ``max_running_requests`` ``max_num_seqs`` (-1: the release default); the row's
``gpu_memory_utilization`` (a numeric axis: not a CSV column; NaN = the group's, given or the release default) is
its own input array.
``mem_fraction_static`` and ``max_total_tokens`` are SGLang's flags: vLLM ignores them (``fit`` too), and a vLLM
row's ``mem_fraction_static`` is NaN, as ``fit``'s result has it (None).

Per row (vllm-project/vllm v0.33.0 ``gpu_worker.py`` ``determine_available_memory``, ``kv_cache_utils.py``
``get_kv_cache_configs``, ``_check_enough_kv_cache_memory``, ``get_max_concurrency_for_kv_cache_config``; the
verdict of :func:`kvplan.planning.verdict.apply`)::

    available, num_blocks, per_req, engine fits, tokens, concurrency   = vector.evaluate(...)
    fits      = no refusal (KV dtype, context) and weights < device and available > 0
                and engine fits and concurrency x dp >= 1
    max_conc  = min(num_blocks // per_req, max_num_seqs) x dp               (0 when the memory chain fails)
    max_ctx   = max_model_len if engine fits else the estimated maximum model length
    workload  = min(max_num_seqs, num_blocks // Σ_g blocks_g(T)) x dp       (T = input + output; 0 if T > max_ctx)
    meets     = fits and (workload if a workload else max_conc) >= target

Worked example (tests/test_sweep_vllm.py): Qwen3-8B bf16 on an H100 (85,024,246,333 B), ``--weight-memory 16GiB``,
vLLM 0.33, util 0.9, max_model_len 32,768: requested = ceil(76,521,821,699.7) = 76,521,821,700; activation =
min(8,192, 1,024) x 151,936 x 39 = 6,067,716,096 (the sampler); graph = 36 x 40 MiB = 1,509,949,440; available =
76,521,821,700 - 16 GiB - 128 MiB - 6,067,716,096 - 1,509,949,440 = 51,630,069,252; bytes per block 16 tokens x
147,456 B = 2,359,296 -> 21,883 blocks; per request 2,048 blocks -> concurrency 10.69, tokens
int(10.685 x 32,768) = 350,128; 40 requests: not met ("the pool holds 350,128 (room for 10)").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.engines.base import requests_at_once
from kvplan.planning import verdict as V
from kvplan.planning.verdict import Facts, cap_source
from kvplan.planning.workload import CAP, LONGEST, POOL, combine, page_round
from kvplan.units import fmt_gib


@dataclass
class VllmVector:
    """What a vLLM group's rows need beyond the numeric axes (``Group.vector``)."""

    st: Any  # kvplan.engines.vllm.vector.VllmStatic (max_num_seqs left to the rows)
    device: int  # the device total per GPU
    weights: int  # per-GPU weight load (the verdict's first memory check)
    dp: int
    page: int  # a workload's tokens are rounded to this block size
    model: Any  # the ModelSpec
    dtype_refusal: str | None
    context_given: bool
    allow_long_context: bool
    refusals: dict[int, str | None] = field(default_factory=dict)  # max_model_len -> the context refusal
    points: dict[tuple[int, int], Any] = field(default_factory=dict)  # (available, max_model_len) -> _RowPoint
    templates: dict[tuple, Any] = field(default_factory=dict)  # (reason class, few-valued key) -> template.format

    def context_refusal(self, ctx: int) -> str | None:
        """:func:`kvplan.engines.support.context_refusal` for one max_model_len (remembered)."""
        if ctx not in self.refusals:
            from kvplan.engines import support

            self.refusals[ctx] = support.context_refusal(
                engine="vllm",
                model=self.model,
                context_length=ctx if self.context_given else None,
                allowed=self.allow_long_context,
            )
        return self.refusals[ctx]


# ------------------------------------------------------------------------------------------------ the group


def prepare_group(g: Any, rep: Deployment, res: Any) -> bool:
    """Resolve a vLLM group for the vector path (``g.vector`` and the verdict's group facts); False leaves the group
    on the point path (another engine, a release whose token line has no array form, or a representative point the
    vector formulas do not reproduce -- which would be a bug)."""
    import os

    from kvplan.deployment import DEFAULT_MODEL
    from kvplan.engines import support
    from kvplan.engines.backends import AttentionBackend
    from kvplan.engines.registry import PoolCount, engine
    from kvplan.engines.vllm.adapter import static
    from kvplan.engines.vllm.vector import has_token_line
    from kvplan.inputs.resolve import resolve_model
    from kvplan.planning.plan import gpu_for
    from kvplan.planning.verdict import long_context_allowed

    if res is None or engine(res.engine).pool_count is not PoolCount.BLOCKS:
        return False
    eff = rep.with_defaults()
    model = resolve_model(eff.model or DEFAULT_MODEL)
    gpu, _ = gpu_for(eff)
    st, device = static(replace(eff, target_requests=1), model, gpu)
    if not has_token_line(st.release):
        return False
    arch = support.arch_of(gpu)
    kv = support.resolved_kv_dtype(
        engine="vllm", requested=eff.kv_cache_dtype, result_dtype=res.kv_cache_dtype, model=model, arch=arch
    )
    dtype_why = support.kv_dtype_refusal(
        engine="vllm",
        kv_dtype=kv,
        arch=arch,
        attention=support.attention_kind(model),
        attention_backend=AttentionBackend.parse(eff.attention_backend),
    )
    vec = VllmVector(
        st=replace(st, max_num_seqs=None),
        device=device,
        weights=res.weight_bytes,
        dp=res.dp,
        page=st.workload_page,
        model=model,
        dtype_refusal=dtype_why,
        context_given=eff.context_length is not None,
        allow_long_context=long_context_allowed(eff, "vllm", os.environ)[0],
    )
    g.vector = vec
    g.engine, g.model, g.weights, g.dtype_refusal = "vllm", model, res.weight_bytes, dtype_why
    g.context_limit = support.model_max_context(engine="vllm", model=model)[0]
    g.allow_long_context, g.family_cap = vec.allow_long_context, None
    g.page, g.dp, g.attn_dp, g.free = res.page_size, res.dp, 1, res.free_bytes
    g.after = res.free_bytes - res.weight_bytes
    if float(res.kv_bytes_per_token).is_integer():
        g.cell = int(res.kv_bytes_per_token)
    return _reproduces(g, eff, res)


def _reproduces(g: Any, eff: Deployment, res: Any) -> bool:
    """The vector formulas at the representative point give ``fit``'s numbers and words."""
    import numpy as np

    inp = -1 if eff.input_len is None else eff.input_len
    out = -1 if eff.input_len is None else (eff.output_len or 0)
    ins = {
        "mem_fraction_static": np.array([np.nan]),
        "context_length": np.array([res.context_length]),
        "requested_max_running_requests": np.array(
            [-1 if eff.max_running_requests is None else eff.max_running_requests]
        ),
        "max_total_tokens": np.array([-1]),
        "target_requests": np.array([eff.target_requests or 1]),
        "input_len": np.array([inp]),
        "output_len": np.array([out]),
    }
    r = evaluate_group(
        g,
        mem_fraction_static=None,
        context_length=ins["context_length"],
        max_running_requests=ins["requested_max_running_requests"],
        max_total_tokens=None,
        target_requests=ins["target_requests"],
        input_len=None if inp < 0 else ins["input_len"],
        output_len=None if inp < 0 else ins["output_len"],
    )
    one = {k: v[0].item() for k, v in {**ins, **r}.items()}
    work = -1 if res.workload_concurrency is None else res.workload_concurrency
    numbers = (
        one["kv_budget_bytes"],
        one["kv_pool_tokens"],
        one["max_running_requests"],
        one["max_concurrency"],
        one["max_context_length"],
        bool(one["fits"]),
        bool(one["meets_target"]),
        one["workload_concurrency"],
    )
    want = (
        res.kv_budget_bytes,
        res.kv_pool_tokens,
        res.max_running_requests,
        int(res.max_concurrency),
        res.max_context_length,
        res.fits,
        res.meets_target,
        work,
    )
    if numbers != want:
        return False
    from kvplan.planning.sweep.columns import _IN_COLS, _OUT_COLS, _P

    one["kv_bytes_per_token"] = 0.0
    v = [one[k] for k in (*_IN_COLS, *_OUT_COLS)]
    return vector_reason(g, v, _P) == res.target_reason


# ------------------------------------------------------------------------------------------------ the arrays


def evaluate_group(
    g: Any,
    *,
    mem_fraction_static: Any,
    context_length: Any,
    max_running_requests: Any,
    max_total_tokens: Any,
    target_requests: Any,
    input_len: Any = None,
    output_len: Any = None,
    gpu_memory_utilization: Any = None,
) -> dict:
    """vLLM's budget -> blocks -> printed capacity -> verdict over numpy arrays (the formulas of the module
    docstring); the keys of :func:`kvplan.planning.sweep.evaluate_group` and ``mem_fraction_static`` (NaN: vLLM
    ignores SGLang's flag, as ``fit`` does).  ``gpu_memory_utilization``: None or NaN = the group's;
    ``max_running_requests``: None or -1 = the release's max_num_seqs default; ``max_total_tokens`` is ignored."""
    import numpy as np

    from kvplan.engines.vllm.vector import blocks_for_length, evaluate

    vec: VllmVector = g.vector
    st = vec.st
    ctx = np.asarray(context_length, dtype=np.int64)
    n = ctx.shape[0]
    util: Any = st.utilization
    if gpu_memory_utilization is not None:
        given = np.asarray(gpu_memory_utilization, dtype=np.float64)
        if not np.isnan(given).all():
            util = np.where(np.isnan(given), st.utilization, given)
    pt = evaluate(st, utilization=util, max_model_len=ctx, max_num_seqs=max_running_requests)

    def full(x: Any, dtype: Any = np.int64) -> Any:
        return np.broadcast_to(np.asarray(x, dtype=dtype), (n,))

    avail, nb, per, seqs = full(pt.available), full(pt.num_blocks), full(pt.per_request), full(pt.max_num_seqs)
    engine_fits = full(pt.fits, bool) & (full(pt.concurrency, np.float64) * vec.dp >= 1)
    memory_ok = (vec.weights < vec.device) & (avail > 0) & engine_fits
    fits = memory_ok & _no_refusal(vec, ctx)
    bound = np.where(per > 0, nb // np.maximum(per, 1), 0)
    conc = np.where(memory_ok, requests_at_once(pool_bound=bound, request_cap=seqs), 0) * vec.dp
    max_ctx = np.where(full(pt.fits, bool), ctx, full(pt.estimated_max_len))
    work_tokens = np.full(n, -1, dtype=np.int64)
    work = np.full(n, -1, dtype=np.int64)
    achieved = conc
    if input_len is not None:
        total = np.asarray(input_len, dtype=np.int64) + (np.maximum(output_len, 0) if output_len is not None else 0)
        work_tokens = page_round(tokens=total, page=vec.page)
        wper = blocks_for_length(
            st.groups, length=np.minimum(total, ctx), in_flight=pt.in_flight, mamba_blocks=st.mamba_blocks
        )
        wbound = np.where(wper > 0, nb // np.maximum(wper, 1), 0)
        work = np.where(total <= max_ctx, requests_at_once(pool_bound=wbound, request_cap=seqs), 0) * vec.dp
        achieved = work
    return {
        "mem_fraction_static": np.full(n, np.nan),
        "kv_budget_bytes": avail,
        "kv_pool_tokens": full(pt.tokens),
        "max_running_requests": seqs,
        "max_concurrency": conc,
        "max_context_length": max_ctx,
        "fits": fits,
        "meets_target": fits & (achieved >= target_requests),
        "workload_tokens_per_request": work_tokens,
        "workload_concurrency": work,
    }


def _no_refusal(vec: VllmVector, ctx: Any) -> Any:
    """Rows the engine does not refuse: the KV dtype runs on the GPU and the max_model_len is accepted."""
    import numpy as np

    if vec.dtype_refusal is not None:
        return np.zeros(ctx.shape[0], dtype=bool)
    ok = np.ones(ctx.shape[0], dtype=bool)
    if not vec.context_given or vec.allow_long_context:
        return ok
    from kvplan.engines import support

    limit = support.model_max_context(engine="vllm", model=vec.model)[0]
    if limit is None:
        return ok
    over = ctx > limit
    if over.any():
        for c in np.unique(ctx[over]).tolist():
            if vec.context_refusal(int(c)) is not None:
                ok &= ctx != c
    return ok


# ------------------------------------------------------------------------------------------------ one row's words

#: entries of a group's memo of row facts before it is emptied (memory bounded whatever the grid)
_MEMO = 65_536


@dataclass(frozen=True)
class _RowPoint:
    """One row's engine facts recomputed from its budget and max_model_len (the words need them)."""

    engine_fits: bool
    needed: int
    num_blocks: int
    per_request: int
    concurrency: float
    in_flight: int


def _row_point(vec: VllmVector, available: int, ctx: int) -> _RowPoint:
    """The engine facts of one (available, max_model_len), remembered (rows of a grid share them); the estimated
    maximum model length is left out (the row's ``max_context_length`` holds it where vLLM refuses)."""
    key = (available, ctx)
    p = vec.points.get(key)
    if p is None:
        from kvplan.engines.vllm.vector import blocks_for_length, engine_check, num_blocks, token_line

        st = vec.st
        inflight = st.in_flight(st.scheduler(ctx)[0])
        per = blocks_for_length(st.groups, length=ctx, in_flight=inflight, mamba_blocks=st.mamba_blocks)
        nb = num_blocks(available=available, stage_bytes_per_block=st.stage_bytes_per_block)
        fits, needed, _ = engine_check(
            available=available, stage_bytes_per_block=st.stage_bytes_per_block, per_request=per
        )
        _, conc = token_line(st, num_blocks=nb, per_request=per, max_model_len=ctx)
        p = _RowPoint(bool(fits), int(needed), int(nb), int(per), float(conc), int(inflight))
        if len(vec.points) > _MEMO:
            vec.points.clear()
        vec.points[key] = p
    return p


def _memory_reason(vec: VllmVector, available: int, ctx: int, longest: int) -> str | None:
    """vLLM's memory chain for one row (:func:`_memory_words`; None when it holds), the engine facts by
    :func:`_row_point`; ``longest``: the row's max_context_length (the estimated maximum model length where vLLM
    refuses)."""
    if vec.weights < vec.device and available > 0:
        p = _row_point(vec, available, ctx)
        conc_total = p.concurrency * vec.dp
        if p.engine_fits and conc_total >= 1:
            return None
        return _memory_words(
            vec,
            ctx=ctx,
            available=available,
            longest=longest,
            engine_fits=p.engine_fits,
            needed=p.needed,
            concurrency=conc_total,
        )
    return _memory_words(
        vec, ctx=ctx, available=available, longest=longest, engine_fits=False, needed=0, concurrency=0.0
    )


def _unset(x: Any) -> bool:
    return x is None or x < 0


def _workload_bound(vec: VllmVector, available: int, ctx: int, tokens: int) -> int:
    """``num_blocks // Σ_g blocks_g(T)`` (:func:`kvplan.planning.workload.vllm_block_bound`; T above max_model_len is
    never served, so the blocks are counted at min(T, max_model_len))."""
    from kvplan.engines.vllm.vector import blocks_for_length

    p = _row_point(vec, available, ctx)
    per = blocks_for_length(
        vec.st.groups, length=min(tokens, ctx), in_flight=p.in_flight, mamba_blocks=vec.st.mamba_blocks
    )
    return p.num_blocks // per if per > 0 else 0


def vector_reason(g: Any, v: Sequence[Any], P: Mapping[str, int]) -> str:
    """One vectorised row's target reason, in the words :func:`kvplan.planning.verdict.judge` gives ``fit``'s
    ``target_reason`` (``v``: the row's values in the sweep's ``_IN_COLS + _OUT_COLS`` order, -1 or None = not set;
    ``P``: a column's place in ``v``): :func:`vector_reasons` of that one row."""
    import numpy as np

    cols = {k: np.array([-1 if v[i] is None else v[i]]) for k, i in P.items()}
    return vector_reasons(g, cols, P)[0]


def vector_reasons(
    g: Any, columns: Mapping[str, Any], P: Mapping[str, int] | None = None, *, quote: Callable[[str], str] | None = None
) -> list[str]:
    """The target reason of every row of a vLLM group's chunk (``columns``: column name -> numpy array of those
    rows, -1 = not set), in :func:`kvplan.planning.verdict.judge`'s words (its text functions), classified over the
    arrays (:func:`_reason_classes`): a refusal (KV dtype, context, the memory chain: weights, budget, vLLM's own
    check in :func:`kvplan.engines.vllm.adapter.engine_refusal`'s words), a met target, the request cap or the pool
    binding (workload: the longest request, max_num_seqs or the KV pool).

    As :class:`kvplan.planning.sweep_text.ReasonWriter` does for SGLang: the rows of a class are keyed by its
    few-valued fields (:func:`kvplan.planning.sweep_text.few_keys`: target, context, workload, binding bound), the
    verdict's text function is called once per key with sentinel numbers for the many-valued ones (room, cap, pool
    tokens) and made a ``str.format`` template (:func:`kvplan.planning.sweep_text.template`, kept on the group across
    chunks), each distinct (key, numbers) is formatted once; a refusal's text is made once per distinct (context,
    budget, longest, vLLM's check, bytes needed, concurrency).  ``quote`` (CSV / JSON escaping) is applied to each
    distinct text.  ``P`` is accepted for the sweep's calling convention and not needed."""
    import numpy as np

    from kvplan.planning.sweep_text import few_keys

    vec: VllmVector = g.vector
    q = quote or str
    r = _reason_classes(vec, columns)
    cls = r["cls"]
    out = np.empty(cls.shape[0], dtype=object)
    if len(vec.templates) > _MEMO:
        vec.templates.clear()
    for k in np.unique(cls).tolist():
        m = np.flatnonzero(cls == k)

        def col(name: str, m: Any = m) -> Any:
            return r[name][m]

        if k == _REFUSED:
            few = [col(x) for x in ("ctx", "avail", "longest", "engine_fits", "needed", "conc")]
            inv, keys = few_keys(np, few)
            texts = np.array(_quoted(q, [_refusal_text(vec, key) for key in keys]), dtype=object)
            out[m] = texts[inv]
            continue
        work = col("inp") >= 0
        n, ctx = col("n"), col("ctx")
        if k in (_MET, _WORKLOAD_MISSED):
            # the size is the workload's when there is one, else the context (the other left out of the key)
            few = [n, np.where(work, -1, ctx), np.where(work, col("inp"), -1), np.where(work, col("out"), -1)]
            if k == _WORKLOAD_MISSED:
                few.append(col("bound"))
            many = [col("room")]
        else:
            few = [n, ctx]
            many = [col("mrr") if k == _CAP_MISSED else col("tokens") * vec.dp, col("room")]
        inv, keys = few_keys(np, few)
        fmts = [_template(vec, k, key) for key in keys]
        out[m] = _fill(np, fmts, inv, many, q)
    return out.tolist()


def _fill(np: Any, fmts: Sequence[Any], inv: Any, many: Sequence[Any], q: Callable[[str], str]) -> Any:
    """Each row's text: its key's template ``fmts[inv]`` filled with its many-valued numbers ``many``, each distinct
    (key, numbers) formatted and quoted once (one ``np.unique`` of a packed int64 code; rows one by one when the
    numbers do not pack into 63 bits, or are negative)."""
    code = inv.astype(np.int64)
    bits = max(len(fmts) - 1, 1).bit_length()
    for a in many:
        lo, hi = (int(a.min()), int(a.max())) if len(a) else (0, 0)
        width = max(hi, 1).bit_length()
        bits += width
        if lo < 0 or bits > 62:
            texts = [
                f(*nums) for f, *nums in zip([fmts[i] for i in inv.tolist()], *(x.tolist() for x in many), strict=True)
            ]
            return texts if q is str else _quoted(q, texts)
        code = (code << width) | a
    _, first, where = np.unique(code, return_index=True, return_inverse=True)
    rows = [x[first].tolist() for x in many]
    texts = [fmts[i](*nums) for i, *nums in zip(inv[first].tolist(), *rows, strict=True)]
    return np.array(texts if q is str else _quoted(q, texts), dtype=object)[where.ravel()]


def _quoted(q: Callable[[str], str], texts: list[str]) -> list[str]:
    """``q`` of each text (the CSV cell rule as one comprehension)."""
    from kvplan.planning.sweep_text import csv_cells, csv_quote

    return csv_cells(texts) if q is csv_quote else [q(t) for t in texts]


_REFUSED, _MET, _WORKLOAD_MISSED, _CAP_MISSED, _POOL_MISSED = range(5)
#: the workload bound a missed workload names, by code
_BOUND_NAMES = (LONGEST, CAP, POOL)


def _template(vec: VllmVector, cls: int, key: tuple) -> Any:
    """The ``format`` of one class's template for one few-valued key (the verdict's text function called once with
    sentinels for the many-valued numbers, :func:`kvplan.planning.sweep_text.template`), kept on the group."""
    got = vec.templates.get((cls, *key))
    if got is not None:
        return got
    from kvplan.planning.sweep_text import SENTINELS, template

    s0, s1 = SENTINELS[0], SENTINELS[1]
    if cls in (_MET, _WORKLOAD_MISSED):
        n, ctx, i_len, o_len = key[:4]
        label = V.workload_label(i_len, max(o_len, 0)) if i_len >= 0 else f"{ctx:,}"
        if cls == _MET:
            text, fields = V.met_text(V.target_text(n, label), s0), [s0]
        else:
            text, fields = V.workload_missed_text(n, label, s0, _BOUND_NAMES[key[4]]), [s0]
    elif cls == _CAP_MISSED:
        n, ctx = key
        text, fields = V.cap_missed_text(engine="vllm", n=n, context=ctx, cap=s0, dp=vec.dp, room=s1), [s0, s1]
    else:
        n, ctx = key
        text, fields = V.pool_missed_text(n=n, context=ctx, pool_tokens_total=s0, room=s1), [s0, s1]
    got = vec.templates[(cls, *key)] = template(text, fields).format
    return got


def _refusal_text(vec: VllmVector, key: tuple) -> str:
    """``does not fit: `` and a refused row's first reason, from its (context, budget, longest, vLLM's check, bytes
    needed, concurrency x dp)."""
    ctx, available, longest, engine_fits, needed, conc = key
    return "does not fit: " + _refusal(
        vec,
        ctx=int(ctx),
        available=int(available),
        longest=int(longest),
        engine_fits=bool(engine_fits),
        needed=int(needed),
        concurrency=float(conc),
    )


def _reason_classes(vec: VllmVector, columns: Mapping[str, Any]) -> dict[str, Any]:
    """Per row, as arrays: ``cls`` (the class), ``ctx`` (max_model_len), ``n`` (target), ``avail``, ``inp`` /
    ``out`` (the workload), ``mrr`` (max_num_seqs), ``room``, ``longest``, ``tokens`` (pool tokens), ``engine_fits``
    (vLLM's own check), ``needed`` (bytes one request needs), ``conc`` (concurrency x dp), ``bound`` (the workload's
    binding bound: 0 longest request, 1 max_num_seqs, 2 KV pool) -- the engine facts by
    :mod:`kvplan.engines.vllm.vector`'s formulas on the row's budget (:func:`kvplan.planning.workload.vllm_block_bound`
    for the workload)."""
    import numpy as np

    from kvplan.engines.vllm.vector import batch_knobs, blocks_for_length, engine_check, num_blocks, token_line

    st = vec.st
    c = {
        k: np.asarray(columns[k]).astype(np.int64)
        for k in (
            "context_length",
            "target_requests",
            "kv_budget_bytes",
            "input_len",
            "output_len",
            "max_running_requests",
            "workload_concurrency",
            "max_context_length",
            "max_concurrency",
            "kv_pool_tokens",
        )
    }
    ctx, n, avail, mrr = c["context_length"], c["target_requests"], c["kv_budget_bytes"], c["max_running_requests"]
    fits, work = np.asarray(columns["fits"], dtype=bool), c["input_len"] >= 0
    total = c["input_len"] + np.maximum(c["output_len"], 0)
    room = np.where(work, c["workload_concurrency"], c["max_concurrency"])
    inflight = st.in_flight(batch_knobs(st, ctx)[0])
    per = blocks_for_length(st.groups, length=ctx, in_flight=inflight, mamba_blocks=st.mamba_blocks)
    nb = num_blocks(available=avail, stage_bytes_per_block=st.stage_bytes_per_block)
    engine_fits, needed, _ = engine_check(
        available=avail, stage_bytes_per_block=st.stage_bytes_per_block, per_request=per
    )
    conc = token_line(st, num_blocks=nb, per_request=per, max_model_len=ctx)[1] * vec.dp
    pool = np.where(per > 0, nb // np.maximum(per, 1), 0) * vec.dp
    wper = blocks_for_length(st.groups, length=np.minimum(total, ctx), in_flight=inflight, mamba_blocks=st.mamba_blocks)
    bound = np.where(
        total > c["max_context_length"], 0, np.where(mrr <= np.where(wper > 0, nb // np.maximum(wper, 1), 0), 1, 2)
    )
    cls = np.where(
        ~fits,
        _REFUSED,
        np.where(
            fits & (room >= n), _MET, np.where(work, _WORKLOAD_MISSED, np.where(pool >= n, _CAP_MISSED, _POOL_MISSED))
        ),
    )
    arrays = {
        "cls": cls,
        "ctx": ctx,
        "n": n,
        "avail": avail,
        "inp": c["input_len"],
        "out": c["output_len"],
        "mrr": mrr,
        "room": room,
        "longest": c["max_context_length"],
        "tokens": c["kv_pool_tokens"],
        "engine_fits": engine_fits,
        "needed": needed,
        "conc": conc,
        "bound": bound,
    }
    return {k: np.broadcast_to(a, ctx.shape) for k, a in arrays.items()}


def _refusal(
    vec: VllmVector, *, ctx: int, available: int, longest: int, engine_fits: bool, needed: int, concurrency: float
) -> str:
    """A refused row's first reason: the KV dtype, the context, then vLLM's memory chain (:func:`_memory_words`)."""
    return (
        vec.dtype_refusal
        or vec.context_refusal(ctx)
        or _memory_words(
            vec,
            ctx=ctx,
            available=available,
            longest=longest,
            engine_fits=engine_fits,
            needed=needed,
            concurrency=concurrency,
        )
    )


def _memory_words(
    vec: VllmVector, *, ctx: int, available: int, longest: int, engine_fits: bool, needed: int, concurrency: float
) -> str:
    """The first failing step of vLLM's memory chain in :func:`kvplan.planning.verdict.vllm_memory_reason`'s words:
    the weights load, a positive budget, vLLM's own check (:func:`kvplan.engines.vllm.adapter.engine_refusal`;
    ``concurrency``: x dp)."""
    from kvplan.engines.vllm.adapter import engine_refusal

    if vec.weights >= vec.device:
        return f"the weights ({fmt_gib(vec.weights)} per GPU) do not fit in the GPU ({fmt_gib(vec.device)})"
    if available <= 0:
        return "the weights leave no KV budget"
    return engine_refusal(
        fits=bool(engine_fits),
        max_model_len=ctx,
        needed=needed,
        available=available,
        estimated=None if engine_fits else longest,
        concurrency=concurrency,
    )


def row_facts(g: Any, d: Mapping[str, Any]) -> Facts:
    """The :class:`kvplan.planning.verdict.Facts` of one vectorised vLLM row (``d``: the row's columns by name,
    None = not set), the facts :func:`kvplan.planning.verdict.apply` reads from ``fit``'s result."""
    vec: VllmVector = g.vector
    ctx, avail, seqs = int(d["context_length"]), int(d["kv_budget_bytes"]), int(d["max_running_requests"])
    refusals = [r for r in (vec.dtype_refusal, vec.context_refusal(ctx)) if r]
    memory = _memory_reason(vec, avail, ctx, int(d["max_context_length"]))
    pool = 0
    if memory is None:
        p = _row_point(vec, avail, ctx)
        pool = (p.num_blocks // p.per_request if p.per_request > 0 else 0) * vec.dp
    w = None
    if not _unset(d["input_len"]):
        inp = int(d["input_len"])
        out = 0 if _unset(d["output_len"]) else int(d["output_len"])
        w = combine(
            input_len=inp,
            output_len=out,
            tokens_per_request=page_round(tokens=inp + out, page=vec.page),
            bounds={POOL: _workload_bound(vec, avail, ctx, inp + out)},
            cap=seqs,
            longest=int(d["max_context_length"]),
            dp=vec.dp,
        )
    requested = d["requested_max_running_requests"]
    return Facts(
        engine="vllm",
        context=ctx,
        dp=vec.dp,
        refusals=tuple(refusals),
        memory_reason=memory,
        concurrency=int(d["max_concurrency"]),
        pool_concurrency=pool,
        pool_tokens_total=int(d["kv_pool_tokens"]) * vec.dp,
        cap=seqs,
        cap_source=cap_source(
            engine="vllm",
            requested=None if _unset(requested) else int(requested),
            resolved=seqs,
            attn_dp=1,
            family_default=None,
        ),
        target_requests=int(d["target_requests"]),
        workload=w,
        memory_starts=memory is None,  # vLLM stops at its own check: it starts only when memory passes
    )
