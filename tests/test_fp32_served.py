"""A float32 checkpoint is served in 16 bit by both engines under ``--dtype auto`` (SGLang
python/sglang/srt/configs/model_config.py ``_get_and_verify_dtype``, v0.5.23: float32 -> float16, Gemma -> bfloat16;
vLLM vllm/config/model.py the same downcast): its weights and its ``auto`` KV pool are 2 bytes per value, not 4.

Hand count, ibm-granite/granite-3.1-8b-instruct (config torch_dtype float32): 40 layers x 8 KV heads x 128 x 2 (K, V)
x 2 B = 163,840 B per token under either engine (327,680 if the pool were fp32).
"""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang.kvdtype import served_model_dtype
from kvplan.planning.plan import fit


def test_served_model_dtype_rule():
    assert served_model_dtype(config_dtype="fp32", model_type="granite") == "fp16"
    assert served_model_dtype(config_dtype="fp32", model_type="gemma2") == "bf16"
    assert served_model_dtype(config_dtype="fp32", model_type="gemma") == "bf16"
    assert served_model_dtype(config_dtype="bf16", model_type="llama") == "bf16"
    assert served_model_dtype(config_dtype="fp16", model_type="gemma3") == "fp16"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_fp32_checkpoint_served_in_16_bit(engine):
    r = fit(Deployment(model="ibm-granite/granite-3.1-8b-instruct", gpu="h100-sxm", engine=engine))
    assert r.kv_bytes_per_token == 40 * 8 * 128 * 2 * 2
    # 8.17 B parameters (granite-3.1-8b) in 2 bytes: about 15.2 GiB, not the 30.4 GiB of fp32 weights
    assert 14.5 * 2**30 < r.weight_bytes < 16 * 2**30


def test_vllm_names_the_dtype_it_serves_a_float32_checkpoint_in():
    """vLLM's _resolve_auto_dtype (v0.32.0) downcasts float32 to the platform's first supported dtype: bf16 from
    compute capability 8.0, fp16 below (T4, 7.5); the auto KV cache is named that, not fp32."""
    from kvplan.engines.vllm.specs import served_model_dtype

    assert served_model_dtype(config_dtype="fp32", sm_major=9) == "bf16"
    assert served_model_dtype(config_dtype="fp32", sm_major=7) == "fp16"
    assert served_model_dtype(config_dtype="fp32", sm_major=None) == "bf16"
    assert served_model_dtype(config_dtype="fp16", sm_major=9) == "fp16"
    h100 = fit(Deployment(model="ibm-granite/granite-3.1-8b-instruct", gpu="h100-sxm", engine="vllm"))
    t4 = fit(Deployment(model="ibm-granite/granite-3.1-8b-instruct", gpu="t4", engine="vllm"))
    assert (h100.kv_cache_dtype, t4.kv_cache_dtype) == ("bf16", "fp16")
