"""kvplan.weights reads its config fields itself: a malformed config is one InputError naming the field (exit 2),
and a bug inside the estimate stays a bug (not an InputError; exit 1 through the CLI).

No ``config_errors`` wrapper is involved: the estimate validates what it reads (kvplan.weights.fields) and lets
every other exception through.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.weights import inventory as inventory_mod
from kvplan.weights.estimate import count_params, estimate_weight_bytes, quantization_from_config
from kvplan.weights.inventory import LAYER_BUILDERS, weights_family

runner = CliRunner()

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 131072,
}
MOE = dict(
    LLAMA,
    model_type="deepseek_v3",
    n_routed_experts=8,
    moe_intermediate_size=1024,
    first_k_dense_replace=1,
    kv_lora_rank=512,
    q_lora_rank=1536,
    qk_nope_head_dim=128,
    qk_rope_head_dim=64,
    v_head_dim=128,
)


def _line(exc: InputError) -> str:
    return exc.one_line()


# ------------------------------------------------------------------------------------------------ malformed configs

MALFORMED = [
    # (case, config, quantization, the field the message must name)
    ("no intermediate_size", {k: v for k, v in LLAMA.items() if k != "intermediate_size"}, "bf16", "intermediate_size"),
    (
        "awq bits not a number",
        dict(LLAMA, quantization_config={"quant_method": "awq", "bits": "four"}),
        "int4",
        "quantization_config.bits",
    ),
    (
        "fp8 block of zero",
        dict(LLAMA, quantization_config={"quant_method": "fp8", "weight_block_size": [0, 128]}),
        "fp8",
        "quantization_config.weight_block_size",
    ),
    (
        "ignore regex does not compile",
        dict(LLAMA, quantization_config={"quant_method": "fp8", "ignore": ["re:model.layers.(0"]}),
        "fp8",
        "quantization_config.ignore",
    ),
    ("moe_layer_freq a list of non-integers", dict(MOE, moe_layer_freq=[1, "1"]), "bf16", "moe_layer_freq"),
    ("hc_mult a string", dict(LLAMA, hc_mult="4"), "bf16", "hc_mult"),
    (
        "vision hidden_size a string",
        dict(LLAMA, vision_config={"hidden_size": "1152", "num_hidden_layers": 27, "intermediate_size": 4304}),
        "bf16",
        "vision_config.hidden_size",
    ),
    (
        "engram rows not a list",
        dict(LLAMA, engram_num_embeddings=384, engram_head_dim=256),
        "bf16",
        "engram_num_embeddings",
    ),
    (
        "MLA without qk_nope_head_dim",
        {k: v for k, v in MOE.items() if k != "qk_nope_head_dim"},
        "bf16",
        "qk_nope_head_dim",
    ),
    (
        "compressed-tensors num_bits a string",
        dict(
            LLAMA,
            quantization_config={
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": "4", "type": "int"}}},
            },
        ),
        "int4",
        "num_bits",
    ),
]


@pytest.mark.parametrize("case,cfg,quant,field", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_config_names_the_field(case, cfg, quant, field):
    with pytest.raises(InputError) as err:
        estimate_weight_bytes(config=cfg, quantization=quant)
    assert field in _line(err.value), _line(err.value)
    assert err.value.exit_code == 2


def test_missing_core_field_message_is_unchanged():
    # the accuracy golden quotes this line for a preset without vocab_size
    with pytest.raises(InputError) as err:
        count_params({k: v for k, v in LLAMA.items() if k != "vocab_size"})
    assert _line(err.value) == "vocab_size: config.json has no vocab_size"


def test_quantization_detection_validates_its_fields():
    with pytest.raises(InputError) as err:
        quantization_from_config({"quantization_config": {"quant_method": "gptq", "bits": [4]}})
    assert "quantization_config.bits" in _line(err.value)


def _cli(tmp_path: Path, cfg: dict, *extra: str):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return runner.invoke(app, ["fit", "-m", str(p), "-g", "h100-sxm", "--format", "json", *extra])


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_malformed_config_exits_2_naming_the_field(tmp_path, monkeypatch, engine):
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    cfg = dict(LLAMA, quantization_config={"quant_method": "awq", "bits": "four", "group_size": 128})
    res = _cli(tmp_path, cfg, "--engine", engine)
    assert res.exit_code == 2, res.output
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("kvplan: error: ") and "quantization_config.bits" in line, line

    res = _cli(tmp_path, {k: v for k, v in LLAMA.items() if k != "intermediate_size"}, "--engine", engine)
    assert res.exit_code == 2, res.output
    assert "intermediate_size" in res.stderr and "--model" in res.stderr, res.stderr


# ------------------------------------------------------------------------------------------------ internal bugs


def _buggy_layer(a, i, prefix):
    raise TypeError("injected bug in a layer builder")


def test_internal_bug_is_not_an_input_error(monkeypatch):
    monkeypatch.setitem(LAYER_BUILDERS, Family.GQA, _buggy_layer)
    with pytest.raises(TypeError, match="injected bug"):
        estimate_weight_bytes(config=LLAMA, quantization="bf16")


def test_internal_bug_reaches_the_internal_error_path(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    monkeypatch.setitem(inventory_mod.LAYER_BUILDERS, Family.GQA, _buggy_layer)
    res = _cli(tmp_path, LLAMA)
    assert res.exit_code == 1, (res.exit_code, res.output)
    assert "internal error" in res.stderr and "TypeError" in res.stderr, res.stderr


# ------------------------------------------------------------------------------------------------ registries


def test_every_family_has_a_layer_builder():
    assert set(LAYER_BUILDERS) == set(Family)


@pytest.mark.parametrize(
    "extra,family",
    [
        ({}, Family.GQA),
        ({"kv_lora_rank": 512}, Family.MLA),
        ({"kv_lora_rank": 512, "index_topk": 2048}, Family.DSA),
        ({"model_type": "deepseek_v4"}, Family.DSV4),
        ({"hybrid_override_pattern": "M*"}, Family.HYBRID_MAMBA),
        ({"linear_num_value_heads": 32}, Family.HYBRID_MAMBA),
    ],
)
def test_weights_family(extra, family):
    assert weights_family(dict(LLAMA, **extra)) == family


# ------------------------------------------------------------------------------------------------ the one normaliser


def test_nested_config_follows_the_shared_normaliser():
    """A nested config is read with kvplan.hfconfig.normalize's rule: the top level's quantization_config (the
    engines read it from hf_config), the text sub-config's geometry.  (The old private flattener let the text
    config's quantization_config win; no shipped config has both.)"""
    from kvplan.hfconfig.quant import quantization_from_config as from_hfconfig

    text = dict(LLAMA, quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})
    nested = {
        "architectures": ["LlavaLikeForConditionalGeneration"],
        "text_config": text,
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    }
    assert quantization_from_config(nested) == from_hfconfig(nested) == "fp8"
    est = estimate_weight_bytes(config=nested, quantization="fp8")
    assert any("128x128 block" in n for n in est.notes)
    assert est.params == count_params(LLAMA)["total"] == 8_030_261_248
