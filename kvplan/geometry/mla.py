"""MLA (DeepSeek-V2/V3/R1, Kimi-K2, GLM-4.7-Flash ...) KV cells as SGLang 0.5.23 sizes them.

The compressed latent (``kv_lora_rank``) and the RoPE key (``qk_rope_head_dim``) form one row
per token per layer. The row is **replicated on every attention-TP rank**: TP does not
divide it.

Sources (sgl-project/sglang, v0.5.23): ``python/sglang/srt/mem_cache/kv_cache_configurator.py``
``calculate_mla_kv_cache_dim`` (non-DSA branch) and
``python/sglang/srt/model_executor/pool_configurator.py``
``DefaultPoolConfigurator._compute_cell_size`` (``use_mla_backend`` branch, FP4 scale buffer).
"""

from __future__ import annotations

from kvplan.errors import InputError
from kvplan.geometry.kvdtype import kv_element_bytes

_FP4_SCALE_BLOCK = 16


def mla_row_dim(*, kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """Values per token per layer: ``kv_lora_rank + qk_rope_head_dim`` (512 + 64 = 576)."""
    return kv_lora_rank + qk_rope_head_dim


def mla_bytes_per_token(*, kv_lora_rank: int, qk_rope_head_dim: int, num_layers: int, kv_dtype: str) -> int:
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
    for name, v in (("kv_lora_rank", kv_lora_rank), ("qk_rope_head_dim", qk_rope_head_dim)):
        if not isinstance(v, int) or v <= 0:
            raise InputError(f"{name} must be a positive integer, got {v!r}", field=name)
    if not isinstance(num_layers, int) or num_layers < 0:
        raise InputError(f"num_layers must be a non-negative integer, got {num_layers!r}", field="num_layers")
    dim = mla_row_dim(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim)
    dt = kv_dtype.strip().lower()
    e = kv_element_bytes(dt)
    cell = dim * num_layers * e
    if dt in ("nvfp4", "fp4_mx_block16"):
        cell = cell // 2 + (dim // _FP4_SCALE_BLOCK) * num_layers * e
    return cell
