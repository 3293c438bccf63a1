"""Llama-4-Maverick's interleaved MoE (kvplan/weights/blocks.py ``is_moe_layer``, ``dense_mlp_width``).

Both engines make layer i MoE when (i + 1) % interleave_moe_layer_step == 0 and build the others as a dense
LlamaMLP of ``intermediate_size_mlp`` (vLLM v0.21.0 and SGLang v0.5.15 models/llama4.py).  Maverick: 48 layers,
step 2 -> 24 MoE layers of 128 experts (gate/up/down 5,120 x 8,192) plus one shared expert of the same width, and
24 dense layers of width 16,384.  Before the preset carried the two keys, every layer was priced as MoE (784e9
parameters against the model card's 400e9).
"""

from __future__ import annotations

from kvplan.inputs.resolve import resolve_model
from kvplan.weights.blocks import dense_mlp_width, is_moe_layer
from kvplan.weights.estimate import estimate_weight_bytes

MAVERICK = "meta-llama/Llama-4-Maverick-17B-128E-Instruct"
H, FFN, FFN_MLP = 5_120, 8_192, 16_384


def test_every_second_layer_is_moe():
    cfg = resolve_model(MAVERICK).config
    moe = [i for i in range(48) if is_moe_layer(cfg, i)]
    assert moe == list(range(1, 48, 2))
    assert dense_mlp_width(cfg) == FFN_MLP
    assert not any(is_moe_layer({**cfg, "interleave_moe_layer_step": 0}, i) for i in range(48))
    assert all(is_moe_layer({**cfg, "interleave_moe_layer_step": 1}, i) for i in range(48))  # Scout's step


def test_maverick_component_counts_by_hand():
    m = resolve_model(MAVERICK)
    est = estimate_weight_bytes(config=m.config, quantization=m.quantization, tp_size=1, engine="vllm")
    parts = dict(est.breakdown)
    assert parts["experts"] == 24 * 128 * 3 * H * FFN * 2  # 386,547,056,640 parameters in bf16
    assert parts["shared_experts"] == 24 * 3 * H * FFN * 2
    assert parts["dense_mlp"] == 24 * 3 * H * FFN_MLP * 2
    assert 399e9 < est.params < 402e9  # the model card's "400B total parameters" (text model)
