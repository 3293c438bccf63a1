"""The vector path of a group: the budget -> pools -> request cap -> concurrency -> verdict arithmetic over numpy
arrays (SGLang here; a group whose engine counts its pool in blocks: :mod:`kvplan.planning.sweep.vllm`).

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvplan.engines.base import full_context_requests
from kvplan.planning.sweep.columns import _IN_COLS, _OUT_COLS, _P
from kvplan.planning.sweep.groups import Group, _blocks, _context_refusal, _vllm_module
from kvplan.planning.verdict import Facts, cap_source, sglang_memory_reason
from kvplan.planning.workload import POOL, SGLANG_SWA_POOL_NAME, SWA_POOL, combine, page_round


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
    conc = full_context_requests(pool_tokens=tokens, context_len=ctx, request_cap=mrr) * g.dp
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
        # SGLang starts with a pool of at least one token, fewer than the context or not (verdict._memory)
        memory_starts=g.weights < g.free and d["kv_budget_bytes"] > 0 and tokens > 0,
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
