"""The rotary-embedding caches vLLM builds on the GPU while it loads a model (issue 25 item 3).

Every attention layer asks ``get_rope`` for its rotary embedding; ``get_rope`` keeps one instance per distinct
``(head_size, rotary_dim, max_position, base, is_neox_style, rope_scaling, dtype)`` (``_ROPE_DICT``), and each
instance registers a ``cos_sin_cache`` buffer of ``rows x rotary_dim`` elements in the model dtype, built on the
device the model is constructed on (vllm-project/vllm vllm/model_executor/layers/rotary_embedding/__init__.py
``get_rope`` and base.py ``RotaryEmbedding.__init__``: ``cache = self._compute_cos_sin_cache().to(dtype)``,
v0.11.0).  The buffer is allocated during model construction, so vLLM's ``Model loading took`` (CUDA: torch's
allocated bytes after the load, platforms/cuda.py; ROCm: ``mem_get_info`` total - free, platforms/rocm.py) and the
profile's torch peak include it; it is not a checkpoint tensor, so a weight estimate from the checkpoint misses it.

Rows per cache, by ``rope_scaling`` type (same files, v0.11.0):

* default / llama3 / mrope / ntk: ``max_position_embeddings``;
* ``linear``: ``max_position_embeddings x factor`` for each factor, concatenated (linear_scaling_rope.py);
* ``dynamic``: ``max_position_embeddings x factor`` (dynamic_ntk_scaling_rope.py);
* ``yarn`` / ``deepseek_yarn``: ``original_max_position_embeddings x factor`` (yarn_scaling_rope.py,
  deepseek_scaling_rope.py).

``rotary_dim`` is ``qk_rope_head_dim`` for MLA models, else ``head_dim x partial_rotary_factor``.  Gemma-3 builds
two instances: its sliding layers take ``rope_local_base_freq`` with default scaling, its global layers
``rope_theta`` with the configured scaling (models/gemma3.py ``Gemma3Attention.__init__``, v0.11.0).

Example: Gemma-3-27B (head_dim 128, 131,072 positions, global ``linear`` factor 8), bf16:
global 131,072 x 8 x 128 x 2 B = 268,435,456 B, local 131,072 x 128 x 2 B = 33,554,432 B; total 301,989,888 B
(0.28 GiB), replicated on every rank.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.hfconfig.readers import count_or

__all__ = ["rope_cache_rows", "vllm_rope_cache_bytes"]

_FACTOR_SCALED = ("dynamic",)
_ORIGINAL_SCALED = ("yarn", "deepseek_yarn")


def _rotary_dim(cfg: Mapping[str, Any]) -> int:
    if count_or(cfg, "qk_rope_head_dim", above=0):
        return count_or(cfg, "qk_rope_head_dim", above=0)
    heads = count_or(cfg, "num_attention_heads", above=0)
    head_dim = count_or(cfg, "head_dim", above=0) or (count_or(cfg, "hidden_size") // heads if heads else 0)
    return int(head_dim * float(cfg.get("partial_rotary_factor") or 1.0))


def rope_cache_rows(*, max_position: int, rope_scaling: Mapping[str, Any] | None) -> int:
    """Rows of one ``cos_sin_cache`` for a ``rope_scaling`` entry (None = default).

    Example: ``rope_cache_rows(max_position=131072, rope_scaling={"rope_type": "linear", "factor": 8.0})`` =
    1,048,576; ``{"rope_type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}`` -> 163,840.
    """
    scaling = dict(rope_scaling or {})
    kind = str(scaling.get("rope_type") or scaling.get("type") or "default")
    factor = scaling.get("factor", 1.0)
    if kind == "linear":
        factors = factor if isinstance(factor, list) else [factor]
        return sum(int(max_position * float(f)) for f in factors)
    if kind in _FACTOR_SCALED:
        return int(max_position * float(factor))
    if kind in _ORIGINAL_SCALED:
        original = int(scaling.get("original_max_position_embeddings") or max_position)
        return int(original * float(factor))
    return max_position


def vllm_rope_cache_bytes(*, config: Mapping[str, Any], dtype_bytes: int = 2) -> int:
    """Bytes of the rotary caches vLLM builds on each GPU for this (flattened) config: the sum over the distinct
    ``get_rope`` instances of ``rows x rotary_dim x dtype_bytes``; 0 for a model without rotary positions.

    Example: Gemma-3-27B's text config in bf16 -> 301,989,888 B (module docstring); Llama-3.1-8B (llama3 scaling,
    131,072 positions, head_dim 128) -> 131,072 x 128 x 2 = 33,554,432 B.
    """
    if cfg_no_rope(config):
        return 0
    rotary_dim = _rotary_dim(config)
    max_position = count_or(config, "max_position_embeddings")
    if rotary_dim <= 0 or max_position <= 0:
        return 0
    caches = [rope_cache_rows(max_position=max_position, rope_scaling=config.get("rope_scaling"))]
    if config.get("rope_local_base_freq") and str(config.get("model_type", "")).startswith("gemma3"):
        caches.append(max_position)  # the sliding layers' default-scaled cache at the local base
    return sum(caches) * rotary_dim * dtype_bytes


def cfg_no_rope(config: Mapping[str, Any]) -> bool:
    """Whether the config says the model has no rotary positions (``position_embedding_type`` absolute/alibi)."""
    kind = str(config.get("position_embedding_type") or "rope").lower()
    return kind in ("absolute", "alibi", "none")
