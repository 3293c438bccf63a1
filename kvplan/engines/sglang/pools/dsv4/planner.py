"""SGLang's DeepSeek-V4 planner (``plan``) and ``kvplan show``'s breakdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.engines.base import full_context_requests
from kvplan.engines.sglang.pools.base import Breakdown, PlanDetail, PoolContext, PoolPlan, request_cap
from kvplan.engines.sglang.pools.dsv4.eras import check_dsv4_release, dsv4_era
from kvplan.engines.sglang.pools.dsv4.layout import dsv4_select_layout
from kvplan.engines.sglang.pools.dsv4.result import DSV4Pools
from kvplan.engines.sglang.pools.dsv4.sizing import dsv4_pool_sizes
from kvplan.engines.sglang.pools.dsv4.stage import DSV4Flags
from kvplan.geometry.dsv4 import DSV4Geometry, dsv4_geometry_from_config, dsv4_naive_v3_bytes_per_token
from kvplan.hfconfig.dtypes import DType
from kvplan.result import Basis, Pool

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec


# ----------------------------------------------------------------------------------------------------------
# Planner
# ----------------------------------------------------------------------------------------------------------


def _empty(layout: str, page_size: int, mrr: int | None) -> DSV4Pools:
    """Stand-in pool result when there is no budget at all (SGLang would stop at startup)."""
    return DSV4Pools(
        full_tokens=0,
        swa_tokens=0,
        c4_tokens=0,
        c128_tokens=0,
        bytes_per_full_token=0.0,
        bytes_per_swa_token=0.0,
        fixed_bytes=0,
        swa_mode="none",
        layout=layout,
        page_size=page_size,
        max_running_requests=mrr or 1,
        components=(),
        notes=(),
    )


def _smallest_stage(ctx: PoolContext, geom: DSV4Geometry, layout: str) -> DSV4Pools:
    """:func:`dsv4_pool_sizes` on every PP stage; the stage with the fewest full tokens bounds the pool."""
    f = ctx.flags
    check_dsv4_release(
        era=dsv4_era(ctx.release),
        is_v41=geom.is_v41,
        layout=layout,
        speculative_algorithm=f.speculative_algorithm,
        release=ctx.release,
    )
    stages = ctx.rules.pp_layer_ranges(num_layers=geom.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
    best: DSV4Pools | None = None
    for rng in stages if ctx.budget > 0 else []:
        res = dsv4_pool_sizes(
            geometry=geom,
            budget_bytes=max(ctx.budget, 0),
            layout=layout,
            page_size=ctx.page_size,
            flags=DSV4Flags(
                max_running_requests=ctx.max_running_requests,
                attn_dp_size=ctx.attn_dp,
                context_len=ctx.context_len,
                chunked_prefill_size=ctx.chunked_prefill_flag,
                radix_cache=f.radix_cache,
                overlap_schedule=f.overlap_schedule,
                swa_full_tokens_ratio=f.swa_full_tokens_ratio,
                speculative_num_draft_tokens=f.speculative_num_draft_tokens,
                speculative_num_steps=f.speculative_num_steps,
            ),
            stage_layers=rng if ctx.pp > 1 else None,
            draft_layers=f.speculative_draft_stages,
            release=ctx.release,
        )
        if best is None or res.full_tokens < best.full_tokens:
            best = res
    return best or _empty(layout, ctx.page_size, ctx.max_running_requests)


def _v3_bases(ctx: PoolContext, mrr: int) -> list[Basis]:
    """The DeepSeek-V3 basis the published record used, on the same budget (fp8 and bf16)."""
    bases = []
    for nb, label in ((1, "fp8"), (2, "bf16")):
        b = dsv4_naive_v3_bytes_per_token(kv_dtype_bytes=nb)
        t = ctx.rules.page_floor(tokens=max(ctx.budget, 0) // b, page_size=ctx.page_size)
        bases.append(
            Basis(
                name=f"DeepSeek-V3 MLA formula, {label} (61 x 576 x {nb} B)",
                kv_bytes_per_token=b,
                kv_pool_tokens=t,
                max_context_length=max(0, min(ctx.context_len - 1, t - 1)),
                max_concurrency=full_context_requests(pool_tokens=t, context_len=ctx.context_len, request_cap=mrr)
                * ctx.dp
                if t
                else 0,
                note="the published record's basis; not what SGLang allocates for V4.x",
            )
        )
    return bases


def plan(ctx: PoolContext) -> PoolPlan:
    """The DeepSeek-V4 pools: the main layout SGLang selects, :func:`dsv4_pool_sizes` per PP stage (MIN), then
    ``--max-total-tokens`` and the request cap; the V3 formula is reported beside it as a basis."""
    geom = dsv4_geometry_from_config(ctx.config)
    layout = dsv4_select_layout(
        sm_major=ctx.sm_major,
        is_v41=geom.is_v41,
        kv_dtype=ctx.kv_dtype,
        attn_tp_size=ctx.attn_tp,
        attention_backend=ctx.flags.dsv4_attn_backend,
    )
    res = _smallest_stage(ctx, geom, layout)
    tokens = res.full_tokens
    warnings = [n for n in res.notes if n.startswith("warning:")]
    cap = ctx.flags.max_total_tokens
    if cap is not None and cap < tokens:
        tokens = ctx.rules.page_floor(tokens=cap, page_size=ctx.page_size)
        warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens")
    mrr, reduced = request_cap(ctx, tokens)
    cell = res.bytes_per_full_token
    return PoolPlan(
        tokens=tokens,
        cell=cell,
        layout=f"deepseek-v4 ({res.layout} rows, SWA {res.swa_mode} mode)",
        max_running_requests=mrr,
        reduced=reduced,
        kv_pool_bytes=sum(b for _, b in res.components),
        kv_slice_bytes=min(int(tokens * cell), max(ctx.budget, 0)),
        fixed_bytes=res.fixed_bytes,
        fixed_note="sliding-window slots and compressor states",
        detail=PlanDetail(
            pools=[Pool(name=name, bytes=nbytes) for name, nbytes in res.components],
            notes=[n for n in res.notes if not n.startswith("warning:")],
            warnings=warnings,
            bases=_v3_bases(ctx, mrr),
        ),
    )


_SHOW_POINTS = ((9, 8), (10, 8), (10, 1), (12, 8))


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: the compression ratios and, per GPU generation, the layout, the SWA mode, both
    coefficients and the full tokens a 10 GiB budget holds (:func:`dsv4_pool_sizes`)."""
    g = dsv4_geometry_from_config(m.raw_config or m.config)
    ratios: dict[int, int] = {}
    for r in g.compress_ratios:
        ratios[r] = ratios.get(r, 0) + 1
    out = Breakdown(
        info=dict(
            compress_ratios=", ".join(f"ratio {r}: {n} layers" for r, n in sorted(ratios.items())),
            sliding_window=g.sliding_window,
            v41=g.is_v41,
        )
    )
    for sm_major, attn_tp in _SHOW_POINTS:
        layout = dsv4_select_layout(sm_major=sm_major, is_v41=g.is_v41, kv_dtype=DType.FP8_E4M3, attn_tp_size=attn_tp)
        res = dsv4_pool_sizes(
            geometry=g,
            budget_bytes=10 * 2**30,
            layout=layout,
            page_size=256,
            flags=DSV4Flags(
                max_running_requests=16, context_len=min(m.context_length, 1 << 20), chunked_prefill_size=2048
            ),
        )
        out.rows.append(
            {
                "gpu": f"SM{sm_major}x",
                "attention_tp": attn_tp,
                "layout": layout,
                "swa_mode": res.swa_mode,
                "bytes_per_full_token": res.bytes_per_full_token,
                "bytes_per_swa_token": res.bytes_per_swa_token,
                "full_tokens_per_10GiB": res.full_tokens,
            }
        )
    return out
