"""Geometry checks on a flat config before any arithmetic: every field the planners read has the right kind and a
sane size, or the config is refused with one :class:`~kvplan.errors.InputError` on ``--model`` naming the field.

Upper bounds keep nonsense (``num_hidden_layers`` 2**31, 10**30 experts) from turning into hour-long loops or huge
allocations; the lower bound is 1 where the engines divide by the value.  Real configs (every preset and
tests/data/shared/hf-configs) pass unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError

# Geometry fields that must be whole numbers when present (None = absent).  Upper bounds keep nonsense
# (num_hidden_layers 2**31, 10**30 experts) from turning into hour-long loops or huge allocations; the
# lower bound is 1 where the engines divide by the value.
MAX_LAYERS = 4096
_MAX_DIM = 1 << 24
_INT_FIELDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, MAX_LAYERS), "hidden_size": (1, _MAX_DIM), "num_attention_heads": (1, 1 << 16),
    "num_key_value_heads": (1, 1 << 16), "head_dim": (1, 1 << 16), "v_head_dim": (0, 1 << 16),
    "intermediate_size": (0, _MAX_DIM), "moe_intermediate_size": (0, _MAX_DIM),
    "shared_expert_intermediate_size": (0, _MAX_DIM), "vocab_size": (0, _MAX_DIM),
    "q_lora_rank": (0, _MAX_DIM), "kv_lora_rank": (0, _MAX_DIM), "qk_nope_head_dim": (0, 1 << 16),
    "qk_rope_head_dim": (0, 1 << 16), "qk_head_dim": (0, 1 << 16), "index_head_dim": (0, 1 << 16),
    "index_n_heads": (1, 1 << 16), "index_topk": (0, _MAX_DIM), "o_lora_rank": (0, _MAX_DIM), "o_groups": (1, 1 << 16),
    "num_nextn_predict_layers": (0, 64), "n_routed_experts": (0, 1 << 14), "num_experts": (0, 1 << 14),
    "num_local_experts": (0, 1 << 14), "n_shared_experts": (0, 1 << 10), "num_experts_per_tok": (0, 1 << 14),
    "first_k_dense_replace": (0, MAX_LAYERS), "max_window_layers": (0, MAX_LAYERS),
    "linear_num_key_heads": (1, 1 << 16), "linear_num_value_heads": (1, 1 << 16),
    "linear_key_head_dim": (0, 1 << 16), "linear_value_head_dim": (0, 1 << 16), "linear_conv_kernel_dim": (0, 1 << 10),
    "mamba_num_heads": (1, 1 << 16), "mamba_head_dim": (0, 1 << 16), "ssm_state_size": (0, 1 << 16),
    "n_groups": (1, 1 << 16), "conv_kernel": (0, 1 << 10), "mamba_d_state": (0, 1 << 16), "mamba_d_conv": (0, 1 << 10),
    "attn_layer_period": (1, MAX_LAYERS), "attn_layer_offset": (0, MAX_LAYERS),
    "expert_layer_period": (1, MAX_LAYERS), "expert_layer_offset": (0, MAX_LAYERS),
    "decoder_sparse_step": (1, MAX_LAYERS), "full_attention_interval": (1, MAX_LAYERS),
    "attention_chunk_size": (0, 1 << 40), "swa_num_key_value_heads": (1, 1 << 16), "swa_head_dim": (0, 1 << 16),
    "swa_v_head_dim": (0, 1 << 16), "swa_num_attention_heads": (1, 1 << 16), "global_head_dim": (0, 1 << 16),
    "num_global_key_value_heads": (1, 1 << 16), "vision_n_layers": (0, MAX_LAYERS),
    "sliding_window_pattern": (0, MAX_LAYERS), "moe_layer_freq": (1, MAX_LAYERS),
    "max_position_embeddings": (0, 1 << 40), "sliding_window": (0, 1 << 40),
}
_INT_LIST_FIELDS = ("compress_ratios", "mlp_only_layers", "kv_source_layer_ids", "index_source_layer_ids",
                    "engram_table_layers")
_STR_LIST_FIELDS = ("architectures", "layer_types", "indexer_types")
_DICT_FIELDS = ("rope_scaling", "quantization_config")


def _bad(key: str, what: str) -> InputError:
    return InputError(f"config field '{key}' {what}", field="--model", hint="pass a Hugging Face config.json")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_ints(flat: Mapping[str, Any]) -> None:
    for key, (lo, hi) in _INT_FIELDS.items():
        v = flat.get(key)
        if v is None or (key == "moe_layer_freq" and isinstance(v, list)):
            continue
        if not _is_int(v) or not lo <= v <= hi:
            raise _bad(key, f"must be an integer between {lo} and {hi:,}, got {str(v)[:40]!r}")


def _check_lists(flat: Mapping[str, Any]) -> None:
    for key in _INT_LIST_FIELDS:
        v = flat.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or len(v) > 2 * MAX_LAYERS or any(
                x is not None and (not _is_int(x) or not 0 <= x <= _MAX_DIM) for x in v):
            raise _bad(key, "must be a list of non-negative integers")
    for key in _STR_LIST_FIELDS:
        v = flat.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            raise _bad(key, "must be a list of strings")


def _check_per_layer(flat: Mapping[str, Any]) -> None:
    """Per-layer lists (and the hybrid pattern string) hold at least one entry per layer."""
    layers = flat.get("num_hidden_layers")
    for key in ("layer_types", "indexer_types", "hybrid_override_pattern"):
        v = flat.get(key)
        if key == "hybrid_override_pattern" and v is not None and not isinstance(v, str):
            raise _bad(key, "must be a string")
        if isinstance(v, (list, str)) and v and isinstance(layers, int) and len(v) < layers:
            raise _bad(key, f"has {len(v)} entries for {layers} layers")
    cr = flat.get("compress_ratios")
    if isinstance(cr, list) and cr and isinstance(layers, int) and len(cr) < layers:
        raise _bad("compress_ratios", f"has {len(cr)} entries for {layers} layers")


def _check_kinds(flat: Mapping[str, Any]) -> None:
    for key in _DICT_FIELDS:
        v = flat.get(key)
        if v is not None and not isinstance(v, Mapping):
            raise _bad(key, "must be a JSON object")
    for key in ("model_type", "torch_dtype", "dtype"):
        v = flat.get(key)
        if v is not None and not isinstance(v, str):
            raise _bad(key, "must be a string")
    rope = flat.get("rope_scaling") or {}
    factor = rope.get("factor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                               or not 0 < factor <= 1024):
        raise _bad("rope_scaling.factor", f"must be a number in (0, 1024], got {str(factor)[:40]!r}")


def check_geometry(flat: Mapping[str, Any]) -> None:
    """Reject config values of the wrong kind or absurd size before any arithmetic (InputError on ``--model``).

    Checked in this order (the first failure is raised): the integer fields (``_INT_FIELDS``, with bounds), the
    integer and string lists, the per-layer lists' lengths, the JSON objects and strings, ``rope_scaling.factor``.

    Example: ``{"num_hidden_layers": 2**31}`` -> "config field 'num_hidden_layers' must be an integer between
    1 and 4,096".  Real configs (every preset and tests/data/shared/hf-configs) pass unchanged.
    """
    _check_ints(flat)
    _check_lists(flat)
    _check_per_layer(flat)
    _check_kinds(flat)
