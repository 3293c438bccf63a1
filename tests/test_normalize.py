"""The one HF-config normaliser (kvplan.hfconfig.normalize): each engine's precedence rule on a nested config."""

from __future__ import annotations

import pytest

from kvplan.errors import InputError
from kvplan.hfconfig.normalize import (
    RULES,
    flatten_config,
    normalize_deepseek_v41_config,
    text_sub_config,
)


def _nested() -> dict:
    return {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "dtype": "bfloat16",
        "tie_word_embeddings": False,
        "quantization_config": {"quant_method": "compressed-tensors"},
        "text_config": {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "kimi_k2",
            "dtype": "float16",
            "num_hidden_layers": 61,
            "kv_lora_rank": 512,
            "quantization_config": {"quant_method": "fp8"},
        },
        "vision_config": {"num_hidden_layers": 27, "hidden_size": 1152},
    }


def test_sglang_rule_on_a_nested_config():
    flat = flatten_config(_nested(), engine="sglang")
    assert flat["architectures"] == ["KimiK25ForConditionalGeneration"]  # hf_config.architectures
    assert flat["quantization_config"] == {"quant_method": "compressed-tensors"}  # hf_config.quantization_config
    assert flat["dtype"] == "float16"  # the sub-config's dtype wins; the parent's is a fallback
    assert flat["model_type"] == "kimi_k2"  # a key in both: the text sub-config wins
    assert flat["num_hidden_layers"] == 61 and flat["kv_lora_rank"] == 512
    assert flat["tie_word_embeddings"] is False  # top-level-only keys stay
    assert flat["vision_n_layers"] == 27  # vision tower depth for the multimodal reserve


def test_vllm_rule_on_a_nested_config():
    flat = flatten_config(_nested(), engine="vllm")
    assert flat["architectures"] == ["KimiK25ForConditionalGeneration"]
    assert flat["quantization_config"] == {"quant_method": "compressed-tensors"}
    assert flat["dtype"] == "bfloat16"  # _find_dtype: the top-level dtype first
    assert flat["model_type"] == "kimi_k2"  # hf_text_config.model_type
    assert flat["num_hidden_layers"] == 61
    assert "vision_n_layers" not in flat


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_top_level_first_keys_fall_back_to_the_sub_config(engine):
    cfg = {"text_config": {"architectures": ["B"], "dtype": "float16", "num_hidden_layers": 2}}
    flat = flatten_config(cfg, engine=engine)
    assert flat["architectures"] == ["B"] and flat["dtype"] == "float16"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_flat_config_is_unchanged(engine):
    cfg = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "text_config": "not an object"}
    assert flatten_config(cfg, engine=engine) == cfg
    assert text_sub_config(cfg, engine=engine) is None


def test_sub_config_names_per_engine():
    omni = {"architectures": ["Qwen2_5OmniModel"], "thinker_config": {"text_config": {"num_hidden_layers": 28}}}
    assert flatten_config(omni, engine="sglang")["num_hidden_layers"] == 28
    assert "num_hidden_layers" not in flatten_config(omni, engine="vllm")
    points = {"llm_config": {"num_hidden_layers": 7, "num_attention_heads": 8}, "text_config": {"num_hidden_layers": 1}}
    assert flatten_config(points, engine="sglang")["num_hidden_layers"] == 7  # llm_config before text_config
    dec = {"decoder": {"num_hidden_layers": 6}}
    assert flatten_config(dec, engine="vllm")["num_hidden_layers"] == 6
    assert "num_hidden_layers" not in flatten_config(dec, engine="sglang")


def test_vllm_rejects_two_text_sub_configs():
    with pytest.raises(InputError, match="more than one text sub-config"):
        flatten_config({"decoder": {}, "text_config": {}}, engine="vllm")


def test_sglang_llava_causal_lm_keeps_the_top_level():
    cfg = {"architectures": ["LlavaLlamaForCausalLM"], "num_hidden_layers": 32, "text_config": {"num_hidden_layers": 1}}
    assert flatten_config(cfg, engine="sglang")["num_hidden_layers"] == 32
    assert flatten_config(cfg, engine="vllm")["num_hidden_layers"] == 1


def test_vision_depth_spellings():
    for key in ("num_hidden_layers", "n_layers", "depth"):
        assert flatten_config({"vision_config": {key: 5}})["vision_n_layers"] == 5
    assert flatten_config({"vision_n_layers": 3, "vision_config": {"depth": 5}})["vision_n_layers"] == 3


def test_deepseek_v41_rule_top_level_wins():
    cfg = {
        "architectures": ["DeepseekV41ForCausalLM"],
        "model_type": "deepseek_v41",
        "dtype": "bfloat16",
        "text_config": {"model_type": "deepseek_v41_text", "num_hidden_layers": 40, "dtype": "float16"},
        "vision_config": {"num_hidden_layers": 32, "hidden_size": 1024},
    }
    v = normalize_deepseek_v41_config(cfg)
    assert v["architectures"] == ["DeepseekV4ForCausalLM"] and v["model_type"] == "deepseek_v41"
    assert v["dtype"] == "bfloat16" and v["num_hidden_layers"] == 40
    assert v["vision_n_layers"] == 32 and v["vision_dim"] == 1024
    assert "text_config" not in v and "vision_config" not in v
    with pytest.raises(InputError, match="text_config must be a table"):
        normalize_deepseek_v41_config({"text_config": [1]})


def test_both_rules_agree_on_architectures_of_every_nested_preset():
    from kvplan.inputs import presets

    for m in presets.all_models():
        if "text_config" in m.config:
            a = {e: flatten_config(m.config, engine=e)["architectures"] for e in RULES}
            assert a["sglang"] == a["vllm"] == m.config["architectures"], m.id
