"""The KV cache dtype a vLLM result names is the one it prices (kvplan/engines/vllm/adapter.py ``_kv_dtype_label``).

nvidia/Qwen3.6-27B-NVFP4 declares an FP8 KV cache in its quantization config, so vLLM's ``auto`` resolves to fp8
(``resolve_kv_cache_dtype``): 16 full-attention layers x 4 KV heads x 256 x (K + V) x 1 byte = 32,768 B per token
at TP1.  The result used to name the model's bf16 while pricing one byte per element.
"""

from __future__ import annotations

import pytest

from kvplan import Deployment, fit


@pytest.mark.parametrize(
    ("model", "kv", "label", "per_token"),
    [
        ("nvidia/Qwen3.6-27B-NVFP4", None, "fp8", 16 * 4 * 256 * 2 * 1),
        ("nvidia/Qwen3.6-27B-NVFP4", "auto", "fp8", 16 * 4 * 256 * 2 * 1),
        ("Qwen/Qwen3.6-27B-FP8", None, "bf16", 16 * 4 * 256 * 2 * 2),  # no KV scheme declared: the model dtype
        ("Qwen/Qwen3.6-27B-FP8", "fp8_e5m2", "fp8_e5m2", 16 * 4 * 256 * 2 * 1),
    ],
)
def test_vllm_names_the_kv_dtype_it_prices(model, kv, label, per_token):
    kwargs = {"kv_cache_dtype": kv} if kv else {}
    res = fit(Deployment(model=model, gpu="h100-sxm", engine="vllm", **kwargs))
    assert res.kv_cache_dtype == label
    assert res.kv_bytes_per_token == per_token
