"""SGLang's default pool (MHA/GQA, MLA, DSA): one per-token cell, ``tokens = page_floor(budget // cell)``.

The flow of ``DefaultPoolConfigurator`` (sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py,
v0.5.23) shared by the GQA, MLA and DSA planners; each passes its cell function (bytes per token of a PP stage)::

    cell(stage)  = the family's cell over the stage's layers (+ the draft pool: speculative_cell)
    tokens       = MIN over stages of page_floor(max(budget, 0) // cell(stage))    (_apply_token_constraints)
    DCP          : tokens x dcp_size logical tokens (model_runner.logical_max_total_num_tokens)
    --max-total-tokens below that: page_floor(max_total_tokens)
    request cap  : resolve_max_num_reqs (KVCacheConfigurator, mem_cache/kv_cache_configurator.py)

Worked example (Llama-3.1-8B, bf16, TP1, page 1, budget 58,264,237,847 B): cell 131,072 B -> 444,520 tokens.
"""

from __future__ import annotations

from collections.abc import Callable

from kvplan.engines.sglang.pools.base import PlanDetail, PoolContext, PoolPlan, draft_layers, request_cap
from kvplan.result import Pool

#: bytes per token of one PP stage holding ``layers`` layers
CellFn = Callable[[PoolContext, int], int]
#: the layout text of the pool (FitResult.layout)
LayoutFn = Callable[[PoolContext], str]


def _stage_cells(
    ctx: PoolContext, cell: CellFn, layout: LayoutFn, notes: list[str]
) -> tuple[list[tuple[int, int]], list[int], str]:
    R, model, f = ctx.rules, ctx.model, ctx.flags
    stages = R.pp_layer_ranges(num_layers=model.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
    text = layout(ctx)
    cells = [cell(ctx, e - s) for s, e in stages]
    n_draft = draft_layers(model, f.speculative_algorithm)
    if n_draft:
        cells = [R.speculative_cell(cell=c, draft_layers=n_draft, num_layers=model.num_layers) for c in cells]
        notes.append(
            f"speculative {f.speculative_algorithm}: draft KV pool of {n_draft} layer(s) shares the token count"
        )
    return stages, cells, text


def plan_default(ctx: PoolContext, *, cell: CellFn, layout: LayoutFn, pool_name: str) -> PoolPlan:
    """Size a default pool from ``ctx`` with the family's ``cell`` function (see the module docstring)."""
    R, page = ctx.rules, ctx.page_size
    notes: list[str] = []
    warnings: list[str] = []
    stages, cells, text = _stage_cells(ctx, cell, layout, notes)
    tokens = min(R.page_floor(tokens=max(ctx.budget, 0) // c, page_size=page) for c in cells)
    worst = max(cells)
    if ctx.dcp > 1:
        # each rank of a decode-context-parallel group stores 1/dcp of every request's rows; the scheduler's
        # logical capacity (max_total_num_tokens) is rows x dcp (model_runner.logical_max_total_num_tokens)
        notes.append(
            f"decode context parallel {ctx.dcp}: {tokens:,} rows per rank = {tokens * ctx.dcp:,} logical tokens"
        )
        tokens *= ctx.dcp
    if ctx.pp > 1:
        notes.append("PP stages " + ", ".join(f"{e - s} layers" for s, e in stages) + "; tokens = MIN over stages")
    cap = ctx.flags.max_total_tokens
    if cap is not None:
        if cap < tokens:
            tokens = R.page_floor(tokens=cap, page_size=page)
            warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens (no capacity signal)")
        else:
            warnings.append(
                f"--max-total-tokens {cap:,} is above the profiled {tokens:,}; SGLang uses the profiled value"
            )
    kv_bytes = tokens * worst
    mrr, reduced = request_cap(ctx, tokens)
    return PoolPlan(
        tokens=tokens,
        cell=worst,
        layout=text,
        max_running_requests=mrr,
        reduced=reduced,
        kv_pool_bytes=kv_bytes,
        kv_slice_bytes=kv_bytes,
        detail=PlanDetail(
            pools=[Pool(name=pool_name, tokens=tokens, bytes=kv_bytes, bytes_per_token=worst)],
            notes=notes,
            warnings=warnings,
        ),
    )
