"""vLLM's reading of a config's decoder layers: the kind of every layer (``layer_kinds``) and whether the model is
an MLA model (``is_mla``).  :func:`kvplan.hfconfig.detect.vllm_family` picks vLLM's family from them and
:mod:`kvplan.engines.vllm.specs` builds each layer's KV spec from them.

Sources: vllm-project/vllm ``model_executor/models/*`` (each model's layer types), ``ModelConfig.is_deepseek_mla``,
v0.33.0 (the readings below name their model file).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.hfconfig.fields import bad_field, int_if_set, model_type, num_layers, req_int

#: the kinds of state layers (Mamba-2, Mamba-1, Gated DeltaNet) among :func:`layer_kinds`'s
STATE_KINDS = frozenset({"mamba", "mamba1", "gdn"})


MLA_MODEL_TYPES = frozenset(
    {
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_mtp",
        "kimi_k2",
        "kimi_linear",
        "glm_moe_dsa",
        "longcat_flash",
        "pangu_ultra_moe",
        "mistral_large_3",
    }
)


def is_mla(cfg: Mapping[str, Any]) -> bool:
    """vLLM's ``is_deepseek_mla``: a ``kv_lora_rank`` on an MLA model type (or with a RoPE key width)."""
    return cfg.get("kv_lora_rank") is not None and (
        model_type(cfg) in MLA_MODEL_TYPES or cfg.get("qk_rope_head_dim") is not None
    )


_LAYER_TYPE_KINDS = {
    "full_attention": "full",
    "sliding_attention": "swa",
    "linear_attention": "gdn",
    "chunked_attention": "chunked",
    "attention": "full",
    "mamba": "mamba",
    "deepseek_sparse_attention": "full",
}


def _kinds_from_layer_types(cfg: Mapping[str, Any], lt: list[Any], n: int) -> list[str]:
    if not all(isinstance(t, str) for t in lt):
        raise bad_field("layer_types", "must be a list of strings")
    kinds = [_LAYER_TYPE_KINDS.get(t, "full") for t in lt[:n]]
    if cfg.get("sliding_window") is None:
        kinds = ["full" if k == "swa" else k for k in kinds]
    return kinds


def _sliding_kinds(cfg: Mapping[str, Any], n: int) -> list[str]:
    """Sliding-window models without ``layer_types``: by pattern, then by model type."""
    letters = cfg.get("sliding_window_pattern")
    if isinstance(letters, str) and letters and set(letters) <= {"L", "G"}:
        # Exaone-4: "LLLG" repeated over the layers (L local = sliding window, G global = full attention)
        return ["full" if letters[i % len(letters)] == "G" else "swa" for i in range(n)]
    p = int_if_set(cfg, "sliding_window_pattern", minimum=1)
    mt = model_type(cfg)
    if p:
        return ["full" if (i + 1) % p == 0 else "swa" for i in range(n)]
    if mt.startswith("gemma3"):
        return ["full" if (i + 1) % 6 == 0 else "swa" for i in range(n)]
    if mt.startswith("gemma2"):
        return ["swa" if i % 2 == 0 else "full" for i in range(n)]
    if cfg.get("max_window_layers") is not None and mt.startswith("qwen"):
        mwl = req_int(cfg, "max_window_layers")
        return ["full" if i < mwl else "swa" for i in range(n)]
    return ["swa"] * n


def _pattern_kinds(cfg: Mapping[str, Any], n: int) -> list[str] | None:
    """Kinds from a per-layer pattern field, or None when the config has none:

    * ``hybrid_layer_pattern`` (MiMo-V2: 1 = sliding window, 0 = full; ``models/mimo_v2.py``, v0.25.1);
    * ``attn_layer_period`` / ``attn_layer_offset`` (Jamba: layer i is attention iff
      ``i % period == offset``, else Mamba-1; transformers ``JambaConfig.layers_block_type``).

    Example: Jamba-v0.1 (32 layers, period 8, offset 4) -> attention at 4, 12, 20, 28, Mamba-1 elsewhere."""
    pat = cfg.get("hybrid_layer_pattern")
    if pat is not None:
        if not isinstance(pat, list) or len(pat) < n or any(p not in (0, 1) for p in pat[:n]):
            raise bad_field("hybrid_layer_pattern", f"must list 0 (full) or 1 (sliding) for each of the {n} layers")
        return ["swa" if p == 1 else "full" for p in pat[:n]]
    if cfg.get("attn_layer_period") is not None and cfg.get("mamba_expand") is not None:
        period = req_int(cfg, "attn_layer_period", minimum=1)
        offset = req_int(cfg, "attn_layer_offset", 0)
        return ["full" if i % period == offset else "mamba1" for i in range(n)]
    return None


def layer_kinds(cfg: Mapping[str, Any]) -> list[str]:
    """Per decoder layer: ``full``, ``swa``, ``chunked``, ``mamba`` (Mamba2), ``mamba1``, ``gdn`` or ``none``."""
    n = num_layers(cfg)
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return [{"M": "mamba", "*": "full"}.get(c, "none") for c in pattern]
    blocks = cfg.get("layers_block_type")
    if model_type(cfg) == "nemotron_h" and isinstance(blocks, list) and blocks:
        # Nemotron-H configs that give the pattern only as words (Nemotron-3.5 / Ultra): mamba, attention, moe, mlp.
        return [{"mamba": "mamba", "attention": "full"}.get(str(b), "none") for b in blocks]
    lt = cfg.get("layer_types")
    if isinstance(lt, list) and lt:
        return _kinds_from_layer_types(cfg, lt, n)
    if cfg.get("full_attention_interval") and cfg.get("linear_num_value_heads"):
        k = req_int(cfg, "full_attention_interval", minimum=1)
        return ["full" if (i + 1) % k == 0 else "gdn" for i in range(n)]
    pattern_kinds = _pattern_kinds(cfg, n)
    if pattern_kinds is not None:
        return pattern_kinds
    if int_if_set(cfg, "attention_chunk_size"):
        # Llama-4: every 4th layer is global (no RoPE), the others chunked-local.
        return ["full" if (i + 1) % 4 == 0 else "chunked" for i in range(n)]
    if int_if_set(cfg, "sliding_window") and cfg.get("use_sliding_window", True) is not False:
        return _sliding_kinds(cfg, n)
    return ["full"] * n
