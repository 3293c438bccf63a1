"""SGLang's MLA pool (DeepSeek-V2/V3/R1, Kimi-K2, GLM-4.7-Flash ...): the latent row priced per dtype, and the planner.

The geometry (latent + RoPE key per layer, replicated on every attention-TP rank) is :mod:`kvplan.geometry.mla`.

Sources (sgl-project/sglang, v0.5.23): ``python/sglang/srt/mem_cache/kv_cache_configurator.py``
``calculate_mla_kv_cache_dim`` (non-DSA branch) and
``python/sglang/srt/model_executor/pool_configurator.py``
``DefaultPoolConfigurator._compute_cell_size`` (``use_mla_backend`` branch, FP4 scale buffer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.engines.sglang.pools.base import Breakdown, PoolContext, PoolPlan
from kvplan.engines.sglang.pools.default import plan_default
from kvplan.geometry.kvdtype import kv_element_bytes
from kvplan.geometry.mla import mla_row_dim, mla_values_per_token
from kvplan.hfconfig.dtypes import DType

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec

_FP4_SCALE_BLOCK = 16


def mla_bytes_per_token(*, kv_lora_rank: int, qk_rope_head_dim: int, num_layers: int, kv_dtype: DType) -> int:
    """Bytes of KV one token costs on every attention rank (any TP).

    * bf16/fp16/fp8/mxfp8: ``(kv_lora_rank + qk_rope_head_dim) * L * e`` (e = 2 or 1; SGLang adds
      no MXFP8 scale term on the MLA path);
    * nvfp4 / fp4_mx_block16: ``(dim * L * 1) // 2 + (dim // 16) * L`` (packed values + one
      e4m3 scale byte per 16 values).

    Worked examples: DeepSeek-V3 (512 + 64, 61 layers): fp8 576 x 61 = 35,136 B;
    bf16 1,152 x 61 = 70,272 B; fp4 17,568 + 36 x 61 = 19,764 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size``; python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``calculate_mla_kv_cache_dim``, v0.5.23.
    """
    values = mla_values_per_token(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim, num_layers=num_layers)
    e = kv_element_bytes(kv_dtype)
    cell = values * e
    if kv_dtype in (DType.NVFP4, DType.FP4_MX_BLOCK16):
        dim = mla_row_dim(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim)
        cell = cell // 2 + (dim // _FP4_SCALE_BLOCK) * num_layers * e
    return cell


def _cell(ctx: PoolContext, layers: int) -> int:
    m = ctx.model
    return mla_bytes_per_token(
        kv_lora_rank=m.require_int("kv_lora_rank"),
        qk_rope_head_dim=m.require_int("qk_rope_head_dim"),
        num_layers=layers,
        kv_dtype=ctx.kv_dtype,
    )


def plan(ctx: PoolContext) -> PoolPlan:
    """The MLA pool: :func:`mla_bytes_per_token` per PP stage through the default flow."""
    return plan_default(ctx, cell=_cell, layout=_layout, pool_name="MLA latent")


def _layout(ctx: PoolContext) -> str:
    m = ctx.model
    return f"mla (latent {m.require_int('kv_lora_rank')} + rope {m.require_int('qk_rope_head_dim')}, replicated)"


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: the latent row's bytes per token at bf16 and fp8 (the same on every TP rank)."""
    c = m.config
    out = Breakdown(info=dict(kv_lora_rank=c.get("kv_lora_rank"), qk_rope_head_dim=c.get("qk_rope_head_dim")))
    rank, rope = m.require_int("kv_lora_rank"), m.require_int("qk_rope_head_dim")  # InputError, not KeyError
    for dt in (DType.BF16, DType.FP8_E4M3):
        b = mla_bytes_per_token(kv_lora_rank=rank, qk_rope_head_dim=rope, num_layers=m.num_layers, kv_dtype=dt)
        out.rows.append(
            {
                "kv_cache_dtype": dt.canonical,
                "tp": "any",
                "bytes_per_token": b,
                "note": "latent replicated on every TP rank",
            }
        )
    return out
