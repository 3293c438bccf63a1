"""MLA geometry (DeepSeek-V2/V3/R1, Kimi-K2, GLM-4.7-Flash ...): one compressed row per token per layer.

What the config says: the compressed latent (``kv_lora_rank``) and the RoPE key (``qk_rope_head_dim``) form one row
per token per layer.  The row is not split by tensor parallelism (every attention rank holds it whole).  Engines
price the row: :mod:`kvplan.engines.sglang.pools.mla`.
"""

from __future__ import annotations

from kvplan.errors import InputError


def mla_row_dim(*, kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """Values per token per layer: ``kv_lora_rank + qk_rope_head_dim`` (512 + 64 = 576)."""
    return kv_lora_rank + qk_rope_head_dim


def check_mla_dims(*, kv_lora_rank: int, qk_rope_head_dim: int, num_layers: int) -> None:
    """Raise :class:`InputError` unless the latent and rope widths are positive and the layer count is >= 0."""
    for name, v in (("kv_lora_rank", kv_lora_rank), ("qk_rope_head_dim", qk_rope_head_dim)):
        if not isinstance(v, int) or v <= 0:
            raise InputError(f"{name} must be a positive integer, got {v!r}", field=name)
    if not isinstance(num_layers, int) or num_layers < 0:
        raise InputError(f"num_layers must be a non-negative integer, got {num_layers!r}", field="num_layers")


def mla_values_per_token(*, kv_lora_rank: int, qk_rope_head_dim: int, num_layers: int) -> int:
    """Values one token stores over ``num_layers`` layers: ``(kv_lora_rank + qk_rope_head_dim) * num_layers``.

    Example: DeepSeek-V3 (512 + 64, 61 layers): 35,136 values (35,136 B at fp8, 70,272 B at bf16).
    """
    check_mla_dims(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim, num_layers=num_layers)
    return mla_row_dim(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim) * num_layers
