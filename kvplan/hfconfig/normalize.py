"""The one Hugging Face ``config.json`` normaliser: a nested (multimodal) config -> one flat dict per engine.

A multimodal checkpoint nests the language model under a sub-config (``text_config``, ...) beside a
``vision_config``.  Both engines load two objects from it: ``hf_config`` (the top level, which picks the
model class and the quantization) and ``hf_text_config`` (the language-model sub-config, which holds the
geometry the KV cache is sized from).  kvplan keeps one flat dict: the sub-config's keys over the top
level's, then the keys the engine reads from ``hf_config`` put back from the top level.  Each engine's rule
is written once here, as data (:data:`RULES`), and :func:`flatten_config` applies it.

SGLang 0.5.23 (``python/sglang/srt/utils/hf_transformers/common.py``):

- ``get_hf_text_config``: the sub-config is the first of ``thinker_config`` (its own ``text_config`` when
  it has one), ``llm_config``, ``language_config``, ``text_config``; an ``architectures[0]`` named
  ``Llava*ForCausalLM`` keeps the top level (no sub-config is read).  A sub-config without ``dtype`` gets
  the parent's (so the sub-config's dtype wins, the top level's is the fallback).
- ``ModelConfig`` (``python/sglang/srt/configs/model_config.py``) reads ``architectures`` and
  ``_parse_quant_hf_config``'s ``quantization_config`` from ``hf_config``: the top level wins for both.

vLLM 0.11.1 (``vllm/transformers_utils/config.py::get_hf_text_config`` ->
transformers 4.57 ``PretrainedConfig.get_text_config``):

- the sub-config is the one of ``text_encoder``, ``decoder``, ``generator``, ``text_config`` that is
  present; more than one is ambiguous (transformers raises ``ValueError``, here an :class:`InputError`).
- ``ModelConfig.architectures`` and ``_parse_quant_hf_config`` read ``hf_config`` (top level wins), and
  ``_find_dtype`` (``vllm/config/model.py``) takes the top-level ``dtype`` first, the text config's second.

kvplan's reading on top of both: top-level keys the sub-config lacks stay in the flat dict (a config
written for either engine keeps its ``tie_word_embeddings``, ``dtype`` ...), and a top-level-first key
falls back to the sub-config's value when the top level has none.  For SGLang, the depth of the vision
tower is recorded as ``vision_n_layers`` (``vision_config`` ``num_hidden_layers`` / ``n_layers`` /
``depth``; DeepSeek-V4.1 spells it ``vision_n_layers`` itself) for the multimodal reserve.

Example (one nested config, the two rules)::

    cfg = {"architectures": ["KimiK25ForConditionalGeneration"], "dtype": "bfloat16",
           "text_config": {"architectures": ["DeepseekV3ForCausalLM"], "dtype": "float16",
                           "num_hidden_layers": 61},
           "vision_config": {"num_hidden_layers": 27}}
    flatten_config(cfg, engine="sglang")  # architectures KimiK25..., dtype float16, 61 layers, vision_n_layers 27
    flatten_config(cfg, engine="vllm")    # architectures KimiK25..., dtype bfloat16, 61 layers

DeepSeek-V4.1 has a config class of its own in SGLang whose constructor flattens the other way round
(top-level keys win): :func:`normalize_deepseek_v41_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kvplan.errors import InputError

Engine = Literal["sglang", "vllm"]


@dataclass(repr=False)  # not frozen: a frozen dataclass costs ~0.4 ms more to create at every start
class FlattenRule:
    """How one engine turns ``hf_config`` into ``hf_text_config`` (see the module docstring for sources)."""

    sub_configs: tuple[str, ...]  # where the language-model sub-config may live
    first_found: bool  # True: the first present name wins; False: more than one is ambiguous
    top_level_first: tuple[str, ...]  # keys the engine reads from hf_config (top level wins when set)
    vision_layers: bool  # record vision_n_layers from vision_config
    keep_top_for_arch: tuple[tuple[str, str], ...] = ()  # (prefix, suffix) of architectures[0]: no sub-config


RULES: dict[str, FlattenRule] = {
    # SGLang 0.5.23 utils/hf_transformers/common.py get_hf_text_config; configs/model_config.py ModelConfig
    "sglang": FlattenRule(
        sub_configs=("thinker_config", "llm_config", "language_config", "text_config"),
        first_found=True,
        top_level_first=("architectures", "quantization_config"),
        vision_layers=True,
        keep_top_for_arch=(("Llava", "ForCausalLM"),),
    ),
    # vLLM 0.11.1 transformers_utils/config.py get_hf_text_config (transformers 4.57 get_text_config);
    # config/model.py ModelConfig.architectures, _parse_quant_hf_config, _find_dtype
    "vllm": FlattenRule(
        sub_configs=("text_encoder", "decoder", "generator", "text_config"),
        first_found=False,
        top_level_first=("architectures", "quantization_config", "dtype", "torch_dtype"),
        vision_layers=False,
    ),
}


def text_sub_config(cfg: Mapping[str, Any], *, engine: Engine = "sglang") -> Mapping[str, Any] | None:
    """The language-model sub-config the engine sizes the KV cache from (its ``hf_text_config``), or None
    when the config is flat.  Only JSON objects count as sub-configs.

    Example: ``{"thinker_config": {"text_config": {...}}}`` -> the inner ``text_config`` for SGLang (Qwen2.5-Omni),
    None for vLLM.
    """
    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    rule = RULES[engine]
    archs = cfg.get("architectures")
    first = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if any(first.startswith(p) and first.endswith(s) for p, s in rule.keep_top_for_arch):
        return None
    found = [name for name in rule.sub_configs if isinstance(cfg.get(name), Mapping)]
    if not found:
        return None
    if len(found) > 1 and not rule.first_found:
        raise InputError(
            f"the config has more than one text sub-config ({', '.join(found)}); {engine} cannot "
            "tell which one is the language model",
            field="--model",
            hint="keep one of them in config.json",
        )
    sub: Mapping[str, Any] = cfg[found[0]]
    if found[0] == "thinker_config" and isinstance(sub.get("text_config"), Mapping):
        sub = sub["text_config"]
    return sub


def flatten_config(cfg: Mapping[str, Any], *, engine: Engine = "sglang") -> dict[str, Any]:
    """One flat dict: the engine's text sub-config over the top level, top-level-first keys put back.

    Formula: ``flat = {**top, **sub}``; for each key in ``RULES[engine].top_level_first`` with a top-level
    value (not None, not empty), ``flat[key] = top[key]``; SGLang adds ``vision_n_layers`` from
    ``vision_config`` when the config has none.  The sub-config entries themselves stay in the dict.

    Example: ``{"architectures": ["A"], "text_config": {"architectures": ["B"], "num_hidden_layers": 4}}``
    -> ``architectures ["A"]``, ``num_hidden_layers 4`` for both engines.

    Sources: SGLang 0.5.23 ``utils/hf_transformers/common.py::get_hf_text_config`` and
    ``configs/model_config.py::ModelConfig``; vLLM 0.11.1 ``transformers_utils/config.py::get_hf_text_config``
    and ``config/model.py::ModelConfig`` (``architectures``, ``_parse_quant_hf_config``, ``_find_dtype``).
    """
    rule = RULES[engine]
    sub = text_sub_config(cfg, engine=engine)
    out = dict(cfg)
    if sub is not None:
        out.update(sub)
        for key in rule.top_level_first:
            if cfg.get(key):
                out[key] = cfg[key]
    if rule.vision_layers:
        vision = cfg.get("vision_config")
        if isinstance(vision, Mapping) and "vision_n_layers" not in out:
            n = vision.get("num_hidden_layers") or vision.get("n_layers") or vision.get("depth")
            if isinstance(n, int):
                out["vision_n_layers"] = n
    if out.get("model_type") == "gemma3_text" or (sub is not None and sub.get("model_type") == "gemma3_text"):
        out = gemma3_text_defaults(out)
    return nemotron_h_layers(out)


#: transformers 5.22 ``models/gemma3/configuration_gemma3.py`` ``Gemma3TextConfig``: the field defaults of the
#: geometry both engines read (neither has a Gemma-3 config class of its own; they load transformers')
GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131_072,
    "query_pre_attn_scalar": 256,
    "sliding_window": 4096,
    "tie_word_embeddings": True,
}


def gemma3_text_defaults(flat: dict[str, Any]) -> dict[str, Any]:
    """A Gemma-3 text config as the engines read it: the ``Gemma3TextConfig`` default of every geometry field the
    config.json leaves out (the published gemma-3-4b-it / -12b-it / -27b-it configs write only the fields that
    differ from them).

    Formula: ``flat.setdefault(key, GEMMA3_TEXT_DEFAULTS[key])`` for each key.

    Example: gemma-3-4b-it's ``text_config`` ``{"hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers":
    34, "sliding_window": 1024, ...}`` -> 8 attention heads, 4 KV heads of 256, vocabulary 262,208, 131,072
    positions; its own four values kept.

    Source: transformers 5.22 ``src/transformers/models/gemma3/configuration_gemma3.py`` ``Gemma3TextConfig`` (the
    dataclass field defaults; ``sliding_window_pattern`` 6 is read by the layer-kind rule).
    """
    for key, value in GEMMA3_TEXT_DEFAULTS.items():
        flat.setdefault(key, value)
    return flat


# SGLang 0.5.23 configs/nemotron_h.py: MAMBA "M", ATTENTION "*", MLP "-", MOE "E"
_NEMOTRON_H_LETTERS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def nemotron_h_layers(flat: dict[str, Any]) -> dict[str, Any]:
    """A Nemotron-H config written with ``layers_block_type`` only (Nemotron-3 Ultra): the layer count and the
    pattern the engines derive from it, added where the config has none.

    Formula: ``num_hidden_layers = len(layers_block_type)``; ``hybrid_override_pattern`` = one letter per entry
    (``mamba`` M, ``attention`` *, ``mlp`` -, ``moe`` E).  A config that has either key keeps its own value; a
    list with another entry is left alone (the geometry reader names it).

    Example: ``{"model_type": "nemotron_h", "layers_block_type": ["mamba", "moe", "attention"]}`` ->
    ``num_hidden_layers 3``, ``hybrid_override_pattern "ME*"``.

    Source: SGLang 0.5.23 ``python/sglang/srt/configs/nemotron_h.py`` ``NemotronHConfig``: ``num_hidden_layers``
    is a property, ``len(self.layers_block_type)`` (a ``num_hidden_layers`` argument is ignored), and
    ``hybrid_override_pattern`` is ``_list_to_pattern(self.layers_block_type)``.
    """
    blocks = flat.get("layers_block_type")
    if flat.get("model_type") != "nemotron_h" or not isinstance(blocks, list) or not blocks:
        return flat
    if not all(isinstance(b, str) and b in _NEMOTRON_H_LETTERS for b in blocks):
        return flat
    if "num_hidden_layers" not in flat:
        flat["num_hidden_layers"] = len(blocks)
    if not flat.get("hybrid_override_pattern"):
        flat["hybrid_override_pattern"] = "".join(_NEMOTRON_H_LETTERS[b] for b in blocks)
    return flat


# SGLang 0.5.23 configs/deepseek_v41.py _VISION_FIELDS: vision_config key -> flat key
_DSV41_VISION_FIELDS = {
    "num_hidden_layers": "vision_n_layers",
    "hidden_size": "vision_dim",
    "num_attention_heads": "vision_n_heads",
    "intermediate_size": "vision_inter_dim",
    "patch_size": "vision_patch_size",
    "rope_theta": "vision_rope_theta",
    "downsample_ratio": "vision_downsample_ratio",
    "max_image_tokens": "vision_max_n_token",
    "min_pixels": "vision_min_pixels",
    "max_wh_ratio": "vision_max_wh_ratio",
}


def normalize_deepseek_v41_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """DeepSeek-V4.1's own flattening (SGLang's ``DeepseekV41Config`` runs it in its constructor): top-level
    keys win over ``text_config`` (whose ``model_type`` is dropped), ``vision_config`` fields are renamed
    (``num_hidden_layers`` -> ``vision_n_layers`` ...) unless set, ``model_type`` becomes ``deepseek_v41``
    and ``architectures == ["DeepseekV41ForCausalLM"]`` becomes ``["DeepseekV4ForCausalLM"]``.  A flat V4
    config passes through (only the two renames can apply).

    Formula: ``values = {**text_without_model_type, **top_without_text_and_vision}``, then the renames.

    Example: ``{"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41", "text_config":
    {"model_type": "deepseek_v41_text", "num_hidden_layers": 40}, "vision_config": {"num_hidden_layers": 32}}``
    -> ``architectures ["DeepseekV4ForCausalLM"]``, ``model_type deepseek_v41``, 40 layers, vision_n_layers 32.

    Source: SGLang 0.5.23 ``python/sglang/srt/configs/deepseek_v41.py::normalize_deepseek_v41_config``.
    """
    if not isinstance(cfg, Mapping):
        raise InputError("config must be a mapping (parsed config.json)", field="config")
    values = dict(cfg)
    text = values.pop("text_config", None)
    vision = values.pop("vision_config", None)
    if text is not None:
        if not isinstance(text, Mapping):
            raise InputError("text_config must be a table/object", field="text_config")
        values = {**{k: v for k, v in text.items() if k != "model_type"}, **values}
    if isinstance(vision, Mapping):
        for source, target in _DSV41_VISION_FIELDS.items():
            if source in vision:
                values.setdefault(target, vision[source])
    if "model_type" in values:
        values["model_type"] = "deepseek_v41"
    if values.get("architectures") == ["DeepseekV41ForCausalLM"]:
        values["architectures"] = ["DeepseekV4ForCausalLM"]
    return values
