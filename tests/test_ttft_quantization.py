"""--quantization (the engines' online quantization flag) through the flag registry: the weight format it implies
in the plan's weight estimate and the speed model, said in the assumptions; an unknown word is exit 2."""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs.resolve import ENGINE_QUANTIZATION, resolve_model, with_quantization

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def test_engine_words_map_to_weight_formats():
    """SGLang / vLLM spell fp8 several ways; awq / gptq are 4-bit; modelopt_fp4 is nvfp4."""
    for word, fmt in (
        ("fp8", "fp8"),
        ("w8a8_fp8", "fp8"),
        ("awq", "int4"),
        ("gptq_marlin", "int4"),
        ("modelopt_fp4", "nvfp4"),
        ("mxfp4", "mxfp4"),
        ("w8a8_int8", "int8"),
    ):
        assert ENGINE_QUANTIZATION[word] == fmt


def test_with_quantization_by_hand():
    """Llama-3.1-8B's checkpoint is bf16: fp8 makes it fp8 (no checkpoint size: the estimate is from parameters);
    None / auto leave it; a word kvplan cannot map is refused naming the flag."""
    spec = resolve_model(LLAMA)
    assert spec.quantization == "bf16"
    fp8, note = with_quantization(spec, "fp8")
    assert fp8.quantization == "fp8" and fp8.checkpoint_bytes is None
    assert note == "--quantization fp8: weights planned as fp8 (quantized at load from bf16)"
    assert with_quantization(spec, None) == (spec, None)
    assert with_quantization(spec, "auto") == (spec, None)
    with pytest.raises(InputError) as e:
        with_quantization(spec, "bogus")
    assert e.value.field == "--quantization"


def test_fit_plans_fp8_weights():
    """8.0 B parameters: bf16 is ~16.1 GB; fp8 linear weights (1 byte each, a per-tensor scale) with the 16-bit
    embeddings and lm_head (2 x 128,256 x 4,096 x 2 B = 2.1 GB) come to ~9.1 GB.  The weight figures are vLLM's
    (the estimate as loaded); SGLang's adds its caching-allocator reserve (a device-level load, 257 MiB here)."""
    from kvplan.planning.plan import fit

    bf16 = fit(Deployment(engine="sglang", model=LLAMA, gpu="h200-sxm"))
    fp8 = fit(Deployment(engine="sglang", model=LLAMA, gpu="h200-sxm", quantization="fp8"))
    v_bf16 = fit(Deployment(engine="vllm", model=LLAMA, gpu="h200-sxm"))
    v_fp8 = fit(Deployment(engine="vllm", model=LLAMA, gpu="h200-sxm", quantization="fp8"))
    assert v_bf16.weight_bytes == pytest.approx(16.06e9, rel=0.01)
    assert v_fp8.weight_bytes == pytest.approx(9.08e9, rel=0.01)
    assert fp8.weight_bytes < bf16.weight_bytes
    assert fp8.assumptions[0].startswith("--quantization fp8: weights planned as fp8")
    assert fp8.kv_pool_tokens > bf16.kv_pool_tokens  # the freed memory goes to the KV pool


def test_speed_runs_fp8_gemms():
    from kvplan.planning.speed import speed

    r = speed(
        Deployment(engine="sglang", model=LLAMA, gpu="h200-sxm", quantization="fp8", input_len=1000, output_len=1000)
    )
    assert any(a.startswith("--quantization fp8: weights planned as fp8") for a in r.assumptions)
    assert any("dense fp8" in a for a in r.assumptions)
