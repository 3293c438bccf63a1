"""The hybrid-SWA sweep groups (``vector_group``): the planner's arithmetic over numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.base import (
    PoolContext,
)
from kvplan.engines.sglang.pools.swa.byte_era import byte_era, era_draft_layers, listed_stages, two_step_full_tokens
from kvplan.engines.sglang.pools.swa.config import _ratio, _release, sglang_swa_geometry
from kvplan.engines.sglang.pools.swa.layer_split import (
    LAYER_SPLIT_FLOOR_SINCE,
    LAYER_SPLIT_FULL_IDS_CELL,
    layer_split_stages,
    layer_split_tokens,
)
from kvplan.engines.sglang.pools.swa.planner import SWA_POOL_NAME, _sizing_args, hybrid_pool_on
from kvplan.engines.sglang.pools.swa.sizing import (
    _listed,
    cap_args,
    cap_cells,
    cap_full_tokens,
    cap_swa_tokens,
    ratio_full_tokens,
    ratio_swa_tokens,
    stage_cells,
    swa_pool_too_small,
    swa_request_cap_applies,
)
from kvplan.engines.sglang.pools.swa_cap import (
    vmin,
    vwhere,
)
from kvplan.errors import InputError
from kvplan.geometry.swa import SWALayers
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.version import Version

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools


@dataclass(frozen=True)
class _VectorStages:
    """One hybrid-SWA group's scalars for the sweep: every PP stage's cells, the worst stage, the mode."""

    full_cells: tuple[int, ...]
    swa_cells: tuple[int, ...]
    worst: int  # the stage with the largest cost per full token (the one the plan reports)
    cell: float  # FitResult.kv_bytes_per_token when the budget is positive
    cap_mode: bool
    ratio: float
    window: int
    page_size: int
    cap: dict[str, Any]  # swa_request_cap arguments (request-cap mode)
    validate: bool = True  # the release refuses an SWA pool too small for one request (0.5.16+)
    cap_floor_one: bool = True  # the cap is sized for max(1, mrr // dp) requests (0.5.23; mrr // dp before)


def _vector_stages(ctx: PoolContext) -> _VectorStages | None:
    """The group's stages as :func:`swa_pool_sizes_over_stages` sizes them; None where the sweep evaluates one fit
    per point (no full-attention layer, an invalid ratio, a stage without layers, a geometry fit refuses)."""
    f = ctx.flags
    era = byte_era(_release(ctx))
    try:
        layers = sglang_swa_geometry(ctx.config, release=_release(ctx))
        draft_full, draft_swa = era_draft_layers(ctx, layers, era)
        n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
        ranges = pp_layer_ranges(num_layers=n, pp_size=ctx.pp, partition=f.pp_layer_partition)
        staged = [
            stage_cells(
                layers=layers,
                kv_dtype=ctx.kv_dtype,
                attn_tp_size=ctx.attn_tp,
                draft_full_layers=draft_full,
                draft_swa_layers=draft_swa,
                stage_layers=_listed(rng, n, era.end_inclusive) if ctx.pp > 1 and era.staged else None,
            )
            for rng in ranges
        ]
    except InputError:
        return None
    ratio = _ratio(ctx)
    cap_mode = era.request_cap and swa_request_cap_applies(
        radix_cache=f.radix_cache,
        max_running_requests=ctx.max_running_requests,
        chunked_prefill_size=ctx.chunked_prefill_size,
        chunk_gate=era.cap_chunk_gate,
    )
    cells = [
        cap_cells(
            full_cell=fc,
            swa_cell=sc,
            F=F,
            S=S,
            draft_full_layers=draft_full,
            draft_swa_layers=draft_swa,
            cap_draft_full=era.cap_draft_full,
            cap_draft_swa=era.cap_draft_swa,
        )
        if cap_mode
        else (fc, sc)
        for fc, sc, F, S in staged
    ]
    if not layers.full_layers or not 0.0 < ratio <= 1.0 or ctx.page_size <= 0 or ctx.attn_dp <= 0:
        return None
    costs = [float(fc) if cap_mode else fc + ratio * sc for fc, sc in cells]
    if min(costs) <= 0 or (cap_mode and min(fc for fc, _ in cells) <= 0):
        return None
    worst = costs.index(max(costs))
    args = _sizing_args(ctx, draft_full, draft_swa)
    return _VectorStages(
        full_cells=tuple(fc for fc, _ in cells),
        swa_cells=tuple(sc for _, sc in cells),
        worst=worst,
        cell=costs[worst],
        cap_mode=cap_mode,
        ratio=ratio,
        window=layers.sliding_window,
        page_size=ctx.page_size,
        cap=cap_args(
            window=layers.sliding_window,
            chunked_prefill_size=args["chunked_prefill_size"],
            overlap_schedule=args["overlap_schedule"],
            speculative_num_draft_tokens=args["speculative_num_draft_tokens"],
            speculative_num_steps=None,
            disaggregation_decode=False,
            decode_extra_slots=0,
            swa_eviction_interval=None,
        ),
        validate=era.validate,
        cap_floor_one=era.cap_floor_one,
    )


def vector_group(ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """``kvplan sweep``'s hybrid-SWA pools over arrays: :func:`swa_pool_sizes_over_stages` with the same formulas
    (:func:`ratio_full_tokens`, :func:`ratio_swa_tokens`, :func:`swa_pool_too_small`, :func:`cap_swa_tokens`,
    :func:`cap_full_tokens`)::

        per stage s: full_s = ratio: page_floor(int(budget // (Fc_s + r Sc_s)))      (refused: swa_s too small)
                              cap:   page_floor((budget - swa * Sc_s) // Fc_s)         (refused: full_s <= 0)
        common = min(min_s full_s, max_total_tokens);   worst = the stage of the largest cost per full token
        full   = page_floor(common) where common < full_worst, else full_worst
        swa    = ratio: page_floor(int(full * r)) (refused when too small) | cap: min(swa, common) where capped
        budget <= 0: no pool (0 tokens, cell 0, the request cap of 0 tokens)

    Example: gpt-oss-120b bf16 TP1 at 12 GiB -> full 194,180, SWA 155,344 (the scalar example of
    :func:`swa_pool_sizes`).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``HybridSWAPoolConfigurator``,
    ``SWARequestCapPoolConfigurator``; mem_cache/kv_cache_configurator.py ``_apply_token_constraints``, v0.5.23.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of
    from kvplan.engines.sglang.pools.vector import vector_group as single_cell_group

    try:
        layers = sglang_swa_geometry(ctx.config, release=_release(ctx))
    except InputError:
        return None
    if not hybrid_pool_on(ctx, layers):  # the release's one pool over all layers: the single-cell formula
        return single_cell_group(ctx, cell=cell)
    if ctx.rules.pool_rules.swa_split == "layers":
        return _layer_split_group(ctx, layers, cell=cell)
    if byte_era(_release(ctx)).two_step:
        return _two_step_group(ctx, layers, cell=cell)
    vs = _vector_stages(ctx)
    if vs is None or (cell and vs.cell != cell):
        return None
    page = vs.page_size

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        err: Any = False
        fulls = []
        swa_cap: Any = None
        if vs.cap_mode:
            swa_cap = cap_swa_tokens(
                max_running_requests=requested,
                attn_dp_size=ctx.attn_dp,
                page_size=page,
                floor_one=vs.cap_floor_one,
                **vs.cap,
            )
        for fc, sc in zip(vs.full_cells, vs.swa_cells, strict=True):
            if vs.cap_mode:
                full_s = cap_full_tokens(
                    budget_bytes=budget, swa_tokens=swa_cap, full_cell=fc, swa_cell=sc, page_size=page
                )
                err = err | (full_s <= 0)
            else:
                full_s = ratio_full_tokens(budget_bytes=budget, cell=fc + vs.ratio * sc, page_size=page)
                if vs.validate:
                    err = err | swa_pool_too_small(
                        swa_tokens=ratio_swa_tokens(full_tokens=full_s, ratio=vs.ratio, page_size=page),
                        window=vs.window,
                        page_size=page,
                    )
            fulls.append(full_s)
        common = fulls[0]
        for full_s in fulls[1:]:
            common = vmin(common, full_s)
        if max_total_tokens is not None:
            common = vwhere((max_total_tokens >= 0) & (max_total_tokens < common), max_total_tokens, common)
        capped = common < fulls[vs.worst]
        full = vwhere(capped, common // page * page, fulls[vs.worst])
        if vs.cap_mode:
            swa = vwhere(capped, vmin(swa_cap, common), swa_cap)
        else:
            swa = ratio_swa_tokens(full_tokens=full, ratio=vs.ratio, page_size=page)
            if vs.validate:
                err = err | swa_pool_too_small(swa_tokens=swa, window=vs.window, page_size=page)
        tokens = vwhere(pos, full, 0)
        return VectorPools(
            tokens=tokens,
            cell=vwhere(pos, vs.cell, 0.0),
            mrr=request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested),
            error=err & pos,
            pools={SWA_POOL_NAME: vwhere(pos, swa, -1)},
        )

    return VectorGroup(family="hybrid_swa", pools=pools, note=f"{'request-cap' if vs.cap_mode else 'ratio'} mode")


def _stages_common_tokens(*, budget: Any, costs: list[int], max_total_tokens: Any, page: int) -> Any:
    """The token count common to every PP stage before the full / SWA split, in the layer-split (0.4.9.post6 -
    0.5.8) and two-step (0.5.9 - 0.5.10) releases (ints or arrays; the vector groups of both call it)::

        tokens = page_floor(min(min over stages of budget // cost_s, max_total_tokens if set (>= 0)))

    Example: budget 1,000,000, costs [300, 400], no cap, page 64 -> min(3,333, 2,500) = 2,500 -> 2,496.
    Source: the same steps as :func:`layer_split_pools` and the two-step count's scalar path (SGLang
    ``ModelRunner.set_num_token_hybrid`` / ``set_num_tokens_hybrid_swa``, 0.4.9.post6 - 0.5.10: the PP MIN over stages,
    the --max-total-tokens cap, then the page floor)."""
    common = budget // costs[0]
    for c in costs[1:]:
        common = vmin(common, budget // c)
    if max_total_tokens is not None:
        common = vwhere((max_total_tokens >= 0) & (max_total_tokens < common), max_total_tokens, common)
    return common // page * page


def _layer_split_group(ctx: PoolContext, layers: SWALayers, *, cell: float) -> VectorGroup | None:
    """:func:`layer_split_pools` over arrays (the same :func:`layer_split_stages` / :func:`layer_split_tokens`)::

        T = page_floor(min(min_s budget // cell_L_s, max_total_tokens))      (refused: T <= 0)
        full, swa = layer_split_tokens(T);  budget <= 0: no pool

    Example: gpt-oss-120b bf16 TP1 under 0.5.8 at 12 GiB -> T 174,762, full 194,180, SWA 155,344.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py ``init_memory_pool``,
    ``set_num_tokens_hybrid_swa``, v0.5.8.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    ratio, page = _ratio(ctx), ctx.page_size
    staged = byte_era(_release(ctx)).staged
    try:
        n, stages = layer_split_stages(
            layers=layers,
            pp_size=ctx.pp,
            partition=ctx.flags.pp_layer_partition,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            staged=staged,
            full_ids_cell=_release(ctx) == LAYER_SPLIT_FULL_IDS_CELL,
        )
    except InputError:
        return None
    cells = [st.cell_l for st in stages]
    per_stage = staged and ctx.pp > 1  # 0.5.7 - 0.5.8 PP: each stage splits by its own counts, the fewest reported
    if not per_stage:
        top = max(stages, key=lambda st: (st.cell_l, st.full_cell, st.swa_cell))
        splits = [(len(layers.full_layers), len(layers.swa_layers), top.cell_l)]
    else:
        splits = [(st.n_full, st.n_swa, st.cell_l) for st in stages]
    costs = [c_l * (ratio * ns + nf) / n for nf, ns, c_l in splits]
    if not 0.0 < ratio <= 1.0 or min(cells) <= 0 or page <= 0:
        return None
    dens = [ratio * ns + nf for nf, ns, _ in splits]
    static = costs[dens.index(max(dens))]  # the stage of the fewest full tokens (ties: see pools())
    if cell and static != cell:
        return None
    floor = Version.of(_release(ctx)) >= Version.of(LAYER_SPLIT_FLOOR_SINCE)

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        common = _stages_common_tokens(budget=budget, costs=cells, max_total_tokens=max_total_tokens, page=page)
        err = pos & (common <= 0)
        full, swa, cost = None, None, None
        for (nf, ns, _), c_s in zip(splits, costs, strict=True):  # min over stages, the first one on ties
            full_s, swa_s = layer_split_tokens(
                tokens=common, num_layers=n, full_layers=nf, swa_layers=ns, ratio=ratio, page_size=page, floor=floor
            )
            if full is None:
                full, swa, cost = full_s, swa_s, c_s
            else:
                take = full_s < full
                full, swa, cost = vwhere(take, full_s, full), vwhere(take, swa_s, swa), vwhere(take, c_s, cost)
        tokens = vwhere(pos & ~err, full, 0)
        return VectorPools(
            tokens=tokens,
            cell=vwhere(pos, cost, 0.0),
            mrr=request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested),
            error=err,
            pools={SWA_POOL_NAME: vwhere(pos, swa, -1)},
        )

    return VectorGroup(family="hybrid_swa", pools=pools, note="layer-split mode")


def _two_step_group(ctx: PoolContext, layers: SWALayers, *, cell: float) -> VectorGroup | None:
    """:func:`two_step_pools` over arrays (the same :func:`two_step_full_tokens` / :func:`ratio_swa_tokens`)::

        T = page_floor(min(budget // (F Lf + S Ls), max_total_tokens))        (refused: T <= 0)
        full = two_step_full_tokens(T);  swa = page_floor(int(full x r));  budget <= 0: no pool

    Example: gpt-oss-120b bf16 TP1 under 0.5.9 at 12 GiB -> T 174,762, full 194,180, SWA 155,344.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``set_num_tokens_hybrid_swa``, v0.5.9.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    ratio, page = _ratio(ctx), ctx.page_size
    stages = listed_stages(
        layers=layers,
        pp_size=ctx.pp,
        partition=ctx.flags.pp_layer_partition,
        end_inclusive=byte_era(_release(ctx)).end_inclusive,
    )
    try:
        ranges: list[tuple[int, int] | None] = list(stages) if stages else [None]
        cells = [
            stage_cells(layers=layers, kv_dtype=ctx.kv_dtype, attn_tp_size=ctx.attn_tp, stage_layers=rng)[:2]
            for rng in ranges
        ]
    except InputError:
        return None
    profiles = [fc + sc for fc, sc in cells]
    splits = [fc + ratio * sc for fc, sc in cells]
    if not 0.0 < ratio <= 1.0 or min(profiles) <= 0 or page <= 0:
        return None
    gains = [pc / sp for pc, sp in zip(profiles, splits, strict=True)]
    if cell and splits[gains.index(min(gains))] != cell:  # the stage of the fewest full tokens (ties: pools())
        return None

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        common = _stages_common_tokens(budget=budget, costs=profiles, max_total_tokens=max_total_tokens, page=page)
        err = pos & (common <= 0)
        full: Any = None
        cost: Any = None
        for pc, sp in zip(profiles, splits, strict=True):  # min over stages, the first one on ties
            full_s = two_step_full_tokens(tokens=common, profile_cell=pc, split_cell=sp, page_size=page)
            if full is None:
                full, cost = full_s, sp
            else:
                take = full_s < full
                full, cost = vwhere(take, full_s, full), vwhere(take, sp, cost)
        swa = ratio_swa_tokens(full_tokens=full, ratio=ratio, page_size=page)
        tokens = vwhere(pos & ~err, full, 0)
        return VectorPools(
            tokens=tokens,
            cell=vwhere(pos, cost, 0.0),
            mrr=request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested),
            error=err,
            pools={SWA_POOL_NAME: vwhere(pos, swa, -1)},
        )

    return VectorGroup(family="hybrid_swa", pools=pools, note="0.5.9 two-step mode")
