"""MHA / GQA / MQA geometry: K and V rows per KV head on every layer (engine-neutral).

What the config says: ``num_key_value_heads`` KV heads of ``head_dim`` (K) and ``v_head_dim`` (V) values on each of
``num_hidden_layers`` layers.  Tensor parallelism shards the KV heads; when there are fewer heads than shards each
rank keeps one (replicated) head.  An engine prices the values (:mod:`kvplan.engines.sglang.pools.gqa` adds
SGLang's scale buffers and FP4 recipes and checks the splits it refuses).
"""

from __future__ import annotations

from kvplan.errors import InputError
from kvplan.hfconfig.readers import int_at_least


def _nonneg(name: str, value: int) -> None:
    if not int_at_least(value, 0):
        raise InputError(f"{name} must be a non-negative integer, got {value!r}", field=name)


def kv_heads_per_rank(*, num_kv_heads: int, shards: int) -> int:
    """KV heads one rank stores when ``shards`` ranks split them: ``max(1, num_kv_heads // shards)``.

    Example: 8 KV heads over 4 ranks -> 2; 4 heads over 8 ranks -> 1 (replicated).
    """
    return max(1, num_kv_heads // shards)


def kv_values_per_token_layer(*, kv_heads: int, head_dim: int, v_head_dim: int) -> int:
    """Values one token stores in one layer: ``kv_heads * (head_dim + v_head_dim)`` (K and V).

    Example: Llama-3.1-8B (8 heads of 128): 8 x 256 = 2,048.
    """
    return kv_heads * (head_dim + v_head_dim)


def kv_bytes_per_token(*, kv_heads: int, head_dim: int, v_head_dim: int, num_layers: int, dtype_bytes: int) -> int:
    """Bytes one token costs over ``num_layers`` layers at ``dtype_bytes`` per value (no scales):
    ``kv_heads * (head_dim + v_head_dim) * num_layers * dtype_bytes``.

    Example: Llama-3.1-8B bf16, TP1: 8 x 256 x 32 x 2 = 131,072 B.
    """
    _nonneg("num_layers", num_layers)
    return (
        kv_values_per_token_layer(kv_heads=kv_heads, head_dim=head_dim, v_head_dim=v_head_dim)
        * num_layers
        * dtype_bytes
    )
