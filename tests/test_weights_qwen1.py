"""First-generation Qwen (``QWenLMHeadModel``, model_type "qwen"): the MLP is ``intermediate_size // 2`` wide.

vLLM v0.21.0 ``vllm/model_executor/models/qwen.py`` ``QWenBlock.__init__`` and SGLang v0.5.15 ``srt/models/qwen.py``
``QWenBlock.__init__`` build ``QWenMLP(hidden_size, config.intermediate_size // 2)``; ``c_attn`` (fused q/k/v) has a
bias, ``c_proj`` none; embeddings and lm_head untied.  Every number below is counted by hand from those shapes.
"""

from __future__ import annotations

import pytest

from kvplan.engines.vllm.budget import vllm_activation_coefficients
from kvplan.weights.blocks import dense_mlp_width
from kvplan.weights.estimate import estimate_weight_bytes

# Qwen/Qwen-7B-Chat config.json (the fields the count reads)
QWEN_7B = {
    "architectures": ["QWenLMHeadModel"],
    "model_type": "qwen",
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "vocab_size": 151936,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
}


def test_dense_mlp_width_halves_only_first_generation_qwen():
    assert dense_mlp_width(QWEN_7B) == 11008
    assert dense_mlp_width({"model_type": "qwen", "intermediate_size": 27392}) == 13696  # Qwen-14B
    assert dense_mlp_width({"model_type": "qwen2", "intermediate_size": 18944}) == 18944
    assert dense_mlp_width({"model_type": "llama", "intermediate_size": 14336}) == 14336


def test_qwen_7b_parameters_by_hand():
    """Per layer: c_attn 3 x 4,096^2 = 50,331,648 + bias 12,288; c_proj 16,777,216; w1 + w2 + c_proj of the MLP
    3 x 4,096 x 11,008 = 135,266,304; ln_1 + ln_2 8,192 -> 202,395,648; x 32 = 6,476,660,736.  wte + lm_head
    2 x 151,936 x 4,096 = 1,244,659,712, ln_f 4,096: 7,721,324,544 (the model card's 7.7B), bf16 x 2 B."""
    est = estimate_weight_bytes(config=QWEN_7B, quantization="bf16", engine="vllm")
    assert est.per_gpu_bytes == 2 * 7_721_324_544


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_qwen_14b_chat_int4_preset_counts_the_half_width_mlp(engine: str):
    """Qwen-14B: per layer 3 x 5,120^2 + 15,360 (c_attn) + 5,120^2 (c_proj) + 3 x 5,120 x 13,696 (MLP) + 10,240
    = 315,253,760; x 40 = 12,610,150,400; + 2 x 152,064 x 5,120 = 1,557,135,360 + 5,120 = 14,167,290,880 (was
    22.58e9 with the MLP read full width)."""
    from kvplan.inputs.resolve import resolve_model

    m = resolve_model("Qwen/Qwen-14B-Chat-Int4")
    bf16 = estimate_weight_bytes(config=m.raw_config, quantization="bf16", engine=engine)
    assert bf16.per_gpu_bytes == 2 * 14_167_290_880
    int4 = estimate_weight_bytes(
        config=m.raw_config,
        quantization=m.quantization,
        engine=engine,
        hf_quant_config=m.raw_config.get("quantization_config"),
    )
    # GPTQ 4 bit on the 12.6e9 layer weights (~0.5 B each) + 16-bit wte / lm_head (3.11e9 B): under 10 GB, and
    # above the 16-bit tables plus 4 bits per layer weight
    assert 2 * 1_557_135_360 + 12_610_150_400 // 2 < int4.per_gpu_bytes < 10_000_000_000


def test_vllm_forward_activation_uses_the_half_width_mlp():
    """vLLM's forward bytes per batched token 2 x (3H + 3I) with I the MLP's width: Qwen-7B 2 x (3 x 4,096 + 3 x
    11,008) = 90,624 (not 2 x (12,288 + 66,048) = 156,672)."""
    fwd, _ = vllm_activation_coefficients(config=QWEN_7B)
    assert fwd == 90_624
