"""SGLang's hybrid-SWA planner (``plan``), the one-pool fallback and ``kvplan show``'s breakdown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvplan.engines.backends import AttentionBackend
from kvplan.engines.sglang.pools.base import (
    SHOW_TPS,
    Breakdown,
    PlanDetail,
    PoolContext,
    PoolPlan,
    request_cap,
)
from kvplan.engines.sglang.pools.swa.byte_era import byte_era, era_draft_layers, listed_stages, two_step_pools
from kvplan.engines.sglang.pools.swa.cells import swa_bytes_per_layer_token
from kvplan.engines.sglang.pools.swa.config import _ratio, _release, sglang_swa_geometry, swa_layers_from_config
from kvplan.engines.sglang.pools.swa.layer_split import (
    layer_split_pools,
    layer_split_warning,
)
from kvplan.engines.sglang.pools.swa.sizing import swa_pool_sizes_over_stages
from kvplan.errors import InputError
from kvplan.geometry.swa import SWALayers
from kvplan.hfconfig.dtypes import DType
from kvplan.hfconfig.normalize import flatten_config
from kvplan.result import Pool

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec

#: the packed FP4 KV dtypes (SGLang ``nvfp4`` / ``fp4_mx_block16``) the sliding-window pool stores unscaled
_FP4 = (DType.NVFP4, DType.FP4_MX_BLOCK16)


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def hybrid_pool_on(ctx: PoolContext, layers: SWALayers) -> bool:
    """Whether the planned release sizes this model with the hybrid sliding-window pool
    (``RuleSet.pool_rules.hybrid_swa_pool``), from the config (architectures, ``is_hybrid_swa``,
    ``sliding_window_pattern``), the layers (a window) and the flags (speculation; trtllm_mha: :func:`_trtllm_mha`).

    Example: gpt-oss-120b on an H100 -> False under 0.5.3, True under 0.5.8 and 0.5.23; on a B200 under 0.5.8 ->
    False.  Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``is_hybrid_swa_model``,
    server_args.py ``_handle_model_specific_adjustments``, model_executor/model_runner.py ``ModelRunner.__init__``
    ("Check if the model is using hybrid SWA"), v0.4.9.post6 - v0.5.23.
    """
    flat = flatten_config(ctx.config, engine="sglang") if isinstance(ctx.config, Mapping) else {}
    return ctx.rules.pool_rules.hybrid_swa_pool(
        architectures=[str(a) for a in (flat.get("architectures") or [])],
        has_sliding_window=bool(layers.swa_layers) and layers.sliding_window > 0,
        config_opt_in=bool(flat.get("is_hybrid_swa")),
        trtllm_mha=_trtllm_mha(ctx),
        speculative=bool(ctx.flags.speculative_algorithm),
        sliding_window_pattern=flat.get("sliding_window_pattern") is not None,
    )


def _trtllm_mha(ctx: PoolContext) -> bool:
    """The attention backend is trtllm_mha: given as ``--attention-backend``, else GPT-OSS's default on SM100
    (server_args.py, v0.5.8 - v0.5.9)."""
    if ctx.flags.attention_backend is not None:
        return ctx.flags.attention_backend == AttentionBackend.TRTLLM_MHA
    return ctx.vendor == "nvidia" and ctx.sm_major == 10


def plan(ctx: PoolContext) -> PoolPlan:
    """The hybrid-SWA pools: :func:`swa_pool_sizes_over_stages` on the budget (full pool = the token count), the
    SWA pool beside it, the draft's full layers sharing the count, then the request cap.  A release without the pool
    for this model: :func:`one_pool_plan`; a layer-split release (before 0.5.9): :func:`layer_split_pools`."""
    f = ctx.flags
    layers = sglang_swa_geometry(ctx.config, release=_release(ctx))
    if not hybrid_pool_on(ctx, layers):
        return one_pool_plan(ctx, layers)
    era = byte_era(_release(ctx))
    draft_full, draft_swa = era_draft_layers(ctx, layers, era)
    if ctx.budget <= 0:
        mrr, reduced = request_cap(ctx, 0)
        return PoolPlan(
            tokens=0,
            cell=0.0,
            layout="",
            max_running_requests=mrr,
            reduced=reduced,
            kv_pool_bytes=0,
            kv_slice_bytes=0,
            fixed_note=_FIXED_NOTE,
        )
    if ctx.rules.pool_rules.swa_split == "layers":
        res = layer_split_pools(ctx, layers, staged=era.staged)
    elif era.two_step:
        res = two_step_pools(
            layers=layers,
            budget_bytes=ctx.budget,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            page_size=ctx.page_size,
            ratio=_ratio(ctx),
            max_total_tokens=f.max_total_tokens,
            stage_layers=listed_stages(
                layers=layers, pp_size=ctx.pp, partition=f.pp_layer_partition, end_inclusive=era.end_inclusive
            ),
        )
    else:
        res = swa_pool_sizes_over_stages(
            layers=layers,
            pp_size=ctx.pp,
            partition=f.pp_layer_partition,
            budget_bytes=ctx.budget,
            max_total_tokens=f.max_total_tokens,
            staged=era.staged,
            end_inclusive=era.end_inclusive,
            request_cap_mode=era.request_cap,
            cap_chunk_gate=era.cap_chunk_gate,
            cap_floor_one=era.cap_floor_one,
            cap_draft_full=era.cap_draft_full,
            cap_draft_swa=era.cap_draft_swa,
            validate=era.validate,
            **_sizing_args(ctx, draft_full, draft_swa),
        )
    mrr, reduced = request_cap(ctx, res.full_tokens)
    layout = (
        f"hybrid sliding window ({len(layers.full_layers)} full + {len(layers.swa_layers)} SWA layers, "
        f"window {layers.sliding_window}, {res.mode} mode)"
    )
    pools = [
        Pool(
            name="full-attention KV",
            tokens=res.full_tokens,
            bytes=res.full_tokens * res.full_bytes_per_token,
            bytes_per_token=res.full_bytes_per_token,
        ),
        Pool(
            name=SWA_POOL_NAME,
            tokens=res.swa_tokens,
            bytes=res.swa_tokens * res.swa_bytes_per_token,
            bytes_per_token=res.swa_bytes_per_token,
        ),
    ]
    notes = list(res.notes)
    if ctx.kv_dtype in _FP4:
        notes.append(FP4_NOTE.format(dtype=ctx.kv_dtype.canonical))
    warning = layer_split_warning(res=res, budget_bytes=ctx.budget, num_layers=layers.num_hidden_layers or 0)
    return PoolPlan(
        tokens=res.full_tokens,
        cell=res.cell,
        layout=layout,
        max_running_requests=mrr,
        reduced=reduced,
        kv_pool_bytes=res.pool_bytes,
        kv_slice_bytes=min(int(res.full_tokens * res.cell), ctx.budget),
        fixed_bytes=res.fixed_bytes,
        fixed_note=_FIXED_NOTE,
        detail=PlanDetail(pools=pools, notes=notes, warnings=[warning] if warning else []),
    )


#: the assumption an FP4 KV cache on the hybrid pool adds (see :func:`swa_bytes_per_layer_token`)
FP4_NOTE = (
    "{dtype} KV on SGLang's hybrid sliding-window pool: both sub-pools are plain float4_e2m1fn_x2 buffers, "
    "1 byte per value (as fp8), with no FP4 scales and no prefill dequant workspace -- SWAKVPool passes no "
    "FP4 quant method (kv_cache_configurator.py _build_hybrid_swa_kv_pool, 0.5.23); not verified by a run"
)


def one_pool_plan(ctx: PoolContext, layers: SWALayers) -> PoolPlan:
    """A release that sizes this sliding-window model without the hybrid pool: one KV pool over every layer at the
    full-attention geometry, SGLang's default flow (:func:`kvplan.engines.sglang.pools.default.plan_default`)::

        cell = kv_heads_per_rank x (head_dim + v_head_dim) x L x e      (v_head_dim: head_dim before 0.5.7)
        tokens = page_floor(budget // cell)

    Example: gpt-oss-120b bf16 TP1 under 0.5.3: 8 x (64 + 64) x 36 x 2 = 73,728 B per token.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ``profile_max_num_token`` (the
    ``disable_hybrid_swa_memory`` path), v0.5.3; model_executor/model_runner_kv_cache_mixin.py
    ``get_cell_size_per_token``, v0.5.8.
    """
    from kvplan.engines.sglang.history import swa_pool_since
    from kvplan.engines.sglang.pools.default import plan_default

    def cell(c: PoolContext, n_layers: int) -> int:
        if layers.latent:
            return (
                swa_bytes_per_layer_token(
                    kv_heads=1,
                    head_dim=layers.full_head_dim,
                    v_head_dim=0,
                    attn_tp_size=c.attn_tp,
                    kv_dtype=c.kv_dtype,
                    latent=True,
                )
                * n_layers
            )
        vhd = layers.full_v_head_dim if c.rules.pool_rules.gqa_cell_v_head_dim else layers.full_head_dim
        return (
            swa_bytes_per_layer_token(
                kv_heads=layers.full_kv_heads,
                head_dim=layers.full_head_dim,
                v_head_dim=vhd,
                attn_tp_size=c.attn_tp,
                kv_dtype=c.kv_dtype,
            )
            * n_layers
        )

    arch = layers.architecture or "this model"
    n = layers.num_hidden_layers or len(layers.full_layers) + len(layers.swa_layers)
    if ctx.kv_dtype in _FP4:
        raise InputError(
            f"SGLang {_release(ctx)} sizes {arch} in one KV pool over all layers; its FP4 "
            f"({ctx.kv_dtype.canonical}) cell there is not modelled",
            field="--kv-cache-dtype",
            hint="use auto, bf16, fp8_e4m3 or fp8_e5m2",
        )
    out = plan_default(
        ctx,
        cell=cell,
        pool_name="KV (K + V)",
        layout=lambda c: (
            f"one KV pool over all {n} layers (no hybrid sliding-window pool in SGLang {_release(c)} for {arch})"
        ),
    )
    cond = ctx.rules.pool_rules.swa_disabled_archs.get(arch)
    why = (
        "the release does not list it for the hybrid pool"
        if cond is None
        else "its model override sets disable_hybrid_swa_memory"
        if cond == "always"
        else f"its model override sets disable_hybrid_swa_memory with {cond.replace('-', ' ')}"
        + (" (GPT-OSS's default backend on SM100)" if _trtllm_mha(ctx) else "")
    )
    since = swa_pool_since(arch)
    out.notes.insert(
        0,
        f"SGLang {_release(ctx)} sizes {arch} without the hybrid sliding-window pool ({why}): one KV "
        f"pool over all {n} layers at the full-attention cell; "
        + (
            f"SGLang lists it for the hybrid pool from {since}"
            if since
            else "no SGLang release up to 0.5.23 lists it for the hybrid pool"
        ),
    )
    return out


_FIXED_NOTE = "sliding-window pool (request-cap mode)"
#: the SWA pool's name in the plan's pools (kvplan.planning.workload reads it: SGLANG_SWA_POOL_NAME)
SWA_POOL_NAME = "sliding-window KV"


def _sizing_args(ctx: PoolContext, draft_full: int, draft_swa: int) -> dict[str, Any]:
    """The :func:`swa_pool_sizes` arguments the planner takes from its context (all but the budget, the stage and
    ``--max-total-tokens``)."""
    f = ctx.flags
    return dict(
        kv_dtype=ctx.kv_dtype,
        attn_tp_size=ctx.attn_tp,
        page_size=ctx.page_size,
        swa_full_tokens_ratio=_ratio(ctx),
        radix_cache=f.radix_cache,
        max_running_requests=ctx.max_running_requests,
        attn_dp_size=ctx.attn_dp,
        chunked_prefill_size=ctx.chunked_prefill_size,
        overlap_schedule=f.overlap_schedule,
        speculative_num_draft_tokens=f.speculative_num_draft_tokens,
        draft_full_layers=draft_full,
        draft_swa_layers=draft_swa,
    )


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: per layer group (full / sliding window) and TP, the bf16 bytes per token of its pool."""
    L = swa_layers_from_config(m.raw_config or m.config)
    out = Breakdown(
        info=dict(full_layers=len(L.full_layers), swa_layers=len(L.swa_layers), sliding_window=L.sliding_window)
    )
    groups = (
        ("full attention", len(L.full_layers), L.full_kv_heads, L.full_head_dim, L.full_v_head_dim),
        ("sliding window", len(L.swa_layers), L.swa_kv_heads, L.swa_head_dim, L.swa_v_head_dim),
    )
    for group, n, heads, hd, vhd in groups:
        for tp in SHOW_TPS:
            per_layer = swa_bytes_per_layer_token(
                kv_heads=heads, head_dim=hd, v_head_dim=vhd, attn_tp_size=tp, kv_dtype=DType.BF16, latent=L.latent
            )
            out.rows.append(
                {
                    "group": group,
                    "layers": n,
                    "tp": tp,
                    "kv_heads_per_gpu": max(1, heads // tp),
                    "bytes_per_token_bf16": per_layer * n,
                    "pool": "full pool (max_total_num_tokens)"
                    if group == "full attention"
                    else "SWA pool (ratio x full tokens)",
                }
            )
    return out
