"""The DeepSeek-V4 sweep group (``vector_group``): the planner's arithmetic over numpy arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.base import PoolContext
from kvplan.engines.sglang.pools.dsv4.eras import dsv4_era, v41_pipeline_refused
from kvplan.engines.sglang.pools.dsv4.layout import (
    DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
    DSV41_INDEX_PAGE_SIZE,
    dsv4_select_layout,
)
from kvplan.engines.sglang.pools.dsv4.sizing import _coefficients
from kvplan.engines.sglang.pools.dsv4.stage import (
    DSV4Flags,
    dsv4_fixed_bytes,
    dsv4_full_tokens,
    dsv4_ratio_swa_tokens,
    dsv4_swa_cap_tokens,
)
from kvplan.engines.sglang.pools.swa_cap import (
    SWA_EVICTION_INTERVAL,
    vmax,
    vwhere,
)
from kvplan.errors import InputError
from kvplan.geometry.dsv4 import dsv4_geometry_from_config

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools


def vector_group(ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """``kvplan sweep``'s DeepSeek-V4 pools over arrays: :func:`dsv4_pool_sizes` per PP stage with the same
    formulas (:func:`dsv4_swa_cap_tokens`, :func:`dsv4_fixed_bytes`, :func:`dsv4_full_tokens`,
    :func:`dsv4_ratio_swa_tokens`), the stage with the fewest full tokens, then :func:`plan`'s cap and request cap::

        mrr_w  = max(1, requested // attn_dp)            (requested: the row's, else the family default 256)
        fixed  = c128_state(mrr_w + 1) + c2_state(mrr_w + 1) + cap_tokens(mrr_w) * bytes_per_swa   (cap mode)
        full_s = the bounded padding search on max(budget - fixed, 0)    (refused: full <= 0, SWA pool too small)
        tokens = the first stage's with the fewest full tokens -> page_floor(max_total_tokens) where smaller
        mrr    = resolve_max_running_requests(tokens, ...); cell = that stage's bytes per full token
        budget <= 0: no pool (0 tokens, cell 0)

    The coefficients and the mode come from the group's context (the representative fit's) and do not depend on
    the numeric axes; the release's era (:func:`dsv4_era`) is the context's: 0.5.21 - 0.5.23 here, 0.5.12 - 0.5.20
    in :func:`kvplan.engines.sglang.pools.dsv4_legacy.legacy_vector_group`.  Example: the module docstring's
    V4.1-Flash at 8 GiB -> 4,670,208 full tokens.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``DSV4PoolConfigurator``;
    mem_cache/kv_cache_configurator.py ``resolve_max_num_reqs``, ``config_from_budget``, v0.5.23.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    f = ctx.flags
    era = dsv4_era(ctx.release)
    if not era.paged:  # 0.5.12 - 0.5.20: the one-coefficient configurator
        from kvplan.engines.sglang.pools.dsv4_legacy import legacy_vector_group

        return legacy_vector_group(ctx, era=era, cell=cell)
    try:
        geom = dsv4_geometry_from_config(ctx.config)
        layout = dsv4_select_layout(
            sm_major=ctx.sm_major,
            is_v41=geom.is_v41,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            attention_backend=f.dsv4_attn_backend,
        )
        if v41_pipeline_refused(is_v41=geom.is_v41, pp_size=ctx.pp, release=ctx.release):
            return None
        ranges = ctx.rules.pp_layer_ranges(num_layers=geom.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
        flags = DSV4Flags(
            max_running_requests=ctx.max_running_requests,
            attn_dp_size=ctx.attn_dp,
            context_len=ctx.context_len,
            chunked_prefill_size=ctx.chunked_prefill_flag,
            radix_cache=f.radix_cache,
            overlap_schedule=f.overlap_schedule,
            swa_full_tokens_ratio=f.swa_full_tokens_ratio,
            speculative_num_draft_tokens=f.speculative_num_draft_tokens,
            speculative_num_steps=f.speculative_num_steps,
            swa_prefix_tails=None,
            compressed_kv_layout="auto",
            index_page_size=DSV41_INDEX_PAGE_SIZE,
            family_mrr_default=DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
            disaggregation_decode=False,
            decode_extra_slots=0,
            swa_eviction_interval=SWA_EVICTION_INTERVAL,
        )
        setups = [
            _coefficients(
                era=era,
                geometry=geom,
                budget_bytes=1,
                layout=layout,
                page_size=ctx.page_size,
                stage_layers=rng if ctx.pp > 1 else None,
                flags=flags,
            )[:4]
            for rng in ranges
        ]
    except InputError:
        return None
    if not setups or any(m.mrr_w_requested is None or bpf <= 0 for _, m, _, bpf in setups):
        return None
    page, dp = ctx.page_size, ctx.attn_dp

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        req = requested if requested is not None else DSV4_DEFAULT_MAX_RUNNING_REQUESTS
        mrr_w = vmax(1, req // dp)
        err: Any = False
        best: Any = None
        best_bpf: Any = 0.0
        for st, mode, bytes_per_swa, bpf in setups:
            cap = dsv4_swa_cap_tokens(mrr_w=mrr_w, **mode.cap_kw) if mode.cap_kw is not None else None
            fixed = dsv4_fixed_bytes(st, n_slots=mrr_w + 1, cap_tokens=cap, bytes_per_swa=bytes_per_swa)
            full = dsv4_full_tokens(st, avail=vmax(budget - fixed, 0), bpf=bpf)
            err = err | (full <= 0)
            if cap is None:
                swa = dsv4_ratio_swa_tokens(full=full, ratio=mode.swa_ratio, page_size=page)
                err = err | (st.g.sliding_window + page >= swa)
            if best is None:
                best, best_bpf = full, bpf
            else:
                take = full < best
                best, best_bpf = vwhere(take, full, best), vwhere(take, bpf, best_bpf)
        tokens = vwhere(pos, best, 0)
        if max_total_tokens is not None:
            capped = ctx.rules.page_floor(tokens=max_total_tokens, page_size=page)
            tokens = vwhere((max_total_tokens >= 0) & (max_total_tokens < tokens), capped, tokens)
        mrr = request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested)
        return VectorPools(tokens=tokens, cell=vwhere(pos, best_bpf, 0.0), mrr=mrr, error=err & pos)

    if cell and cell not in {bpf for _, _, _, bpf in setups}:
        return None
    return VectorGroup(family="dsv4", pools=pools, note=f"{layout} rows, {len(setups)} stage(s)")


#: ``kvplan show``: (SM major, attention TP) pairs priced at 10 GiB, 16 requests, chunk 2048
