"""Bytes per token of one hybrid-SWA layer group (the full and the sliding-window cells)."""

from __future__ import annotations

from kvplan.errors import InputError
from kvplan.geometry.gqa import kv_heads_per_rank, kv_values_per_token_layer
from kvplan.geometry.kvdtype import kv_element_bytes
from kvplan.geometry.swa import positive_int
from kvplan.hfconfig.dtypes import DType

# --------------------------------------------------------------------------------------------------
# Per-token bytes
# --------------------------------------------------------------------------------------------------


def swa_bytes_per_layer_token(
    *, kv_heads: int, head_dim: int, v_head_dim: int, attn_tp_size: int, kv_dtype: DType, latent: bool = False
) -> int:
    """Bytes one token costs in ONE layer of a hybrid-SWA sub-pool (full or SWA) on one attention rank.

    Formula: ``max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * e``; mxfp8 adds
    ``(n * (head_dim + v_head_dim)) // 32`` scale bytes (per layer, then multiplied by the layer count).
    Unlike the plain GQA pool there is no DCP term and no head-split assert here (the model asserts on
    load still apply). Example: gpt-oss-120b bf16 at TP1 -> 8 x 128 x 2 = 2,048 B; at TP4 -> 512 B.
    ``latent`` (MLA + SWA, Dots3): ``head_dim * e`` whatever the TP (one latent row, ``v_head_dim`` 0);
    Dots3 bf16: 576 x 2 = 1,152 B.

    FP4 (``nvfp4`` / ``fp4_mx_block16``): ``e`` = 1, the torch element size of ``float4_e2m1fn_x2``, and no scale
    bytes -- the hybrid pool has no FP4 quant method: ``SWAKVPool`` builds plain ``MHATokenToKVPool`` sub-pools (no
    ``quant_method``) whose K / V buffers are ``(rows, heads, head_dim)`` of that dtype, one byte per value, with no
    scale buffers and no dequant workspace, and the configurator budgets the same.  gpt-oss-120b nvfp4 TP1:
    8 x 128 x 1 = 1,024 B (as fp8; the packed GQA pool would store 512 + 64 scale bytes).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator.__init__`` (``_full_per_token`` / ``_swa_per_token``); mem_cache/
    kv_cache_configurator.py ``_build_hybrid_swa_kv_pool`` (no ``quant_method``, MXFP8 the only scaled sub-pool);
    mem_cache/memory_pool.py ``MHATokenToKVPool._create_buffers`` (unquantized: ``_create_buffers_normal``), v0.5.23.
    """
    for name, v in (("kv_heads", kv_heads), ("head_dim", head_dim), ("attn_tp_size", attn_tp_size)):
        positive_int(v, name)
    if not latent:
        positive_int(v_head_dim, "v_head_dim")
    dt = kv_dtype
    mx = dt is DType.MXFP8  # the one scaled sub-pool
    if latent:
        if mx:
            raise InputError(
                "mxfp8 KV on an MLA sliding-window model is not modelled",
                field="--kv-cache-dtype",
                hint="use auto, bf16, fp8_e4m3 or fp8_e5m2",
            )
        return head_dim * kv_element_bytes(dt)
    n = kv_heads_per_rank(num_kv_heads=kv_heads, shards=attn_tp_size)
    values = kv_values_per_token_layer(kv_heads=n, head_dim=head_dim, v_head_dim=v_head_dim)
    cell = values * kv_element_bytes(dt)
    if mx:
        cell += values // 32
    return cell
