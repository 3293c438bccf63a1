"""Nemotron-3 configs the catalog helper "catalog-b" needed kvplan to read (issue 25 item 7, item 3):

* Nemotron-3 Ultra writes its layers only as ``layers_block_type`` (no ``num_hidden_layers``, no
  ``hybrid_override_pattern``): the count and the pattern are derived the way SGLang 0.5.23's ``NemotronHConfig``
  does (``kvplan.hfconfig.normalize.nemotron_h_layers``).
* Nemotron-3's latent MoE (``moe_latent_size``): the routed experts work in the latent width, with two replicated
  projections around them (``kvplan.weights.blocks._moe_latent_size``); they used to be priced at the hidden size,
  four times too large for Super and Ultra.

The numbers below are derived by hand from the configs named in each test.
"""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.hfconfig.normalize import flatten_config, nemotron_h_layers
from kvplan.inputs import presets as p
from kvplan.inputs.resolve import resolve_model
from kvplan.planning.plan import fit
from kvplan.weights.estimate import estimate_weight_bytes

ULTRA = ("BF16", "FP8", "NVFP4")


def test_layers_block_type_gives_count_and_pattern():
    flat = nemotron_h_layers({"model_type": "nemotron_h", "layers_block_type": ["mamba", "moe", "attention", "mlp"]})
    assert flat["num_hidden_layers"] == 4
    assert flat["hybrid_override_pattern"] == "ME*-"


def test_layers_block_type_keeps_what_the_config_says():
    cfg = {"model_type": "nemotron_h", "layers_block_type": ["mamba", "moe"], "hybrid_override_pattern": "M*"}
    assert nemotron_h_layers(dict(cfg))["hybrid_override_pattern"] == "M*"
    other = {"model_type": "jamba", "layers_block_type": ["mamba", "attention"]}
    assert "num_hidden_layers" not in nemotron_h_layers(dict(other))
    odd = {"model_type": "nemotron_h", "layers_block_type": ["mamba", "rnn"]}
    assert "num_hidden_layers" not in nemotron_h_layers(dict(odd))


@pytest.mark.parametrize("q", ULTRA)
def test_ultra_has_108_layers_12_of_them_attention(q: str):
    """nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-*: layers_block_type holds 48 mamba, 48 moe, 12 attention."""
    m = p.load_model_file(p.configs_dir() / "models" / f"nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-{q}.toml")
    flat = flatten_config(m.config)
    assert flat["num_hidden_layers"] == 108
    pattern = flat["hybrid_override_pattern"]
    assert (pattern.count("M"), pattern.count("E"), pattern.count("*")) == (48, 48, 12)


def test_super_latent_experts_priced_in_the_latent_width():
    """Nemotron-3-Super-120B-A12B: 40 MoE layers x 512 experts x (up + down) x 2688 x 1024 = 112,742,891,520
    expert parameters (at the hidden size 4096 it would be 450,971,566,080), plus per MoE layer the two latent
    projections 2 x 4096 x 1024; the whole model comes out near its 120B name."""
    spec = resolve_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    est = estimate_weight_bytes(config=spec.raw_config or spec.config, quantization="bf16", checkpoint_bytes=None)
    parts = dict(est.breakdown)
    assert parts["experts"] // 2 == 40 * 512 * 2 * 2688 * 1024 + 40 * 2 * 4096 * 1024
    assert 115e9 < est.params < 125e9


def test_ultra_bf16_plans_on_eight_b200():
    """550B parameters in bf16 are about 1.1 TB: 8 x B200 (180 GB) hold them with room for a KV pool."""
    for engine in ("sglang", "vllm"):
        res = fit(
            Deployment(
                model="nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
                gpu="b200",
                tp=8,
                engine=engine,
                context_length=32_768,
            )
        )
        assert res.starts, (engine, res.reasons)
        assert 130e9 < res.weight_bytes < 150e9, (engine, res.weight_bytes)
