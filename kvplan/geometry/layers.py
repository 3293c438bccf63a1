"""Attention geometry that differs by layer type, and layers that store no KV of their own (engine-neutral).

A config can give its full-attention and its sliding-window layers different shapes, and some layers can read
another layer's cache.  This module reads those facts from the config's own fields; what each engine then
allocates for them is the engine's (``kvplan.engines.vllm.specs``, ``kvplan.engines.sglang.pools.swa``).

Fields read (a normalised config, ``kvplan.hfconfig.normalize.flatten_config``):

* full layers: ``global_head_dim`` (Gemma-4; else ``head_dim``), ``v_head_dim`` (MiMo-V2; else the K width),
  KV heads ``num_global_key_value_heads`` **only when** ``attention_k_eq_v`` is true (else
  ``num_key_value_heads``).  K and V are both stored even with ``attention_k_eq_v``: that flag only maps one
  checkpoint tensor onto both slots.
* sliding layers: ``swa_head_dim`` / ``swa_v_head_dim`` / ``swa_num_key_value_heads`` (MiMo-V2), else the
  plain ``head_dim`` / ``v_head_dim`` / ``num_key_value_heads`` (Gemma-4 states its sliding shape there).
* KV sharing: ``num_kv_shared_layers`` = N > 0 -> the last N decoder layers reuse the cache of an earlier layer of
  the same type (Gemma-3n, Gemma-4 E2B/E4B).

Sources: vllm-project/vllm ``vllm/model_executor/models/gemma4.py`` ``Gemma4DecoderLayer.__init__`` /
``Gemma4Attention.__init__`` (v0.25.1), transformers ``models/gemma4/configuration_gemma4.py`` (5.19.0, the
``per_layer_config`` SGLang 0.5.23 reads), vLLM ``models/mimo_v2.py`` (``head_size_v = v_head_dim``, ``swa_*`` on
sliding layers, v0.25.1).  SGLang 0.5.11 applied ``num_global_key_value_heads`` without the ``attention_k_eq_v``
gate; no public config is known where the two readings differ.

Example (google/gemma-4-26B-A4B): full 2 KV heads x (512 + 512), sliding 8 x (256 + 256); at bf16 that is
2 x 1,024 x 2 = 4,096 B and 8 x 512 x 2 = 8,192 B per token per layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.readers import int_at_least


@dataclass(frozen=True)
class HeadGeometry:
    """KV heads (before tensor parallelism) and the K and V widths of one layer type."""

    kv_heads: int
    head_dim: int
    v_head_dim: int

    def token_bytes(self, *, heads_per_rank: int, dtype_bytes: int) -> int:
        """Bytes of one token of one layer: ``heads_per_rank × (head_dim + v_head_dim) × dtype_bytes``.
        Example: 2 × (512 + 512) × 2 = 4,096."""
        return heads_per_rank * (self.head_dim + self.v_head_dim) * dtype_bytes


def _pos_int(c: Mapping[str, Any], key: str) -> int | None:
    v = c.get(key)
    if v is None:
        return None
    if not int_at_least(v, 1):
        raise InputError(f"config field '{key}' must be a positive integer, got {v!r}", field=key)
    return v


def _base_head_dim(c: Mapping[str, Any]) -> int:
    hd = _pos_int(c, "head_dim")
    if hd:
        return hd
    hidden, heads = _pos_int(c, "hidden_size"), _pos_int(c, "num_attention_heads")
    if not hidden or not heads:
        raise InputError("config needs head_dim, or hidden_size and num_attention_heads", field="head_dim")
    return hidden // heads


def _base_kv_heads(c: Mapping[str, Any]) -> int:
    kv = _pos_int(c, "num_key_value_heads") or _pos_int(c, "num_attention_heads")
    if not kv:
        raise InputError("config needs num_key_value_heads or num_attention_heads", field="num_key_value_heads")
    return kv


def full_layer_geometry(c: Mapping[str, Any]) -> HeadGeometry:
    """Geometry of the full-attention layers (see the module docstring for the fields).

    Example: Gemma-4 26B-A4B (``global_head_dim`` 512, ``attention_k_eq_v``, ``num_global_key_value_heads`` 2)
    -> (2, 512, 512); MiMo-V2-Flash -> (4, 192, 128); Llama-3.1-8B -> (8, 128, 128)."""
    hd = _pos_int(c, "global_head_dim") or _base_head_dim(c)
    kv = _base_kv_heads(c)
    if c.get("attention_k_eq_v") is True:
        kv = _pos_int(c, "num_global_key_value_heads") or kv
    vhd = _pos_int(c, "v_head_dim") or hd
    return HeadGeometry(kv, hd, vhd)


def sliding_layer_geometry(c: Mapping[str, Any]) -> HeadGeometry:
    """Geometry of the sliding-window (and chunked-local) layers.

    Example: Gemma-4 26B-A4B -> (8, 256, 256); MiMo-V2-Flash -> (8, 192, 128); gpt-oss -> (8, 64, 64)."""
    swa_hd = _pos_int(c, "swa_head_dim")
    hd = swa_hd or _base_head_dim(c)
    vhd = _pos_int(c, "swa_v_head_dim") or (swa_hd if swa_hd else (_pos_int(c, "v_head_dim") or hd))
    kv = _pos_int(c, "swa_num_key_value_heads") or _base_kv_heads(c)
    return HeadGeometry(kv, hd, vhd)


def kv_shared_layers(c: Mapping[str, Any], num_layers: int) -> frozenset[int]:
    """Decoder layers that read another layer's KV cache: the last ``num_kv_shared_layers``.

    Example: Gemma-4 E2B (35 layers, ``num_kv_shared_layers`` 20) -> layers 15..34."""
    n = c.get("num_kv_shared_layers")
    if n is None or n == 0:
        return frozenset()
    if not int_at_least(n, 0) or n >= num_layers:
        raise InputError(
            f"config field 'num_kv_shared_layers' must be an integer in [0, {num_layers}), got {n!r}",
            field="num_kv_shared_layers",
        )
    return frozenset(range(num_layers - n, num_layers))
