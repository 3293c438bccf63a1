"""Gemma-4 under vLLM 0.34 on each GPU class (issue 25 item 6): the attention backend, the block size, and the
tokens of one E-model (E4B, 18 KV-sharing layers) and one MoE size (26B-A4B), derived by hand.

Backend (``model_executor/models/config.py`` ``Gemma4Config.verify_and_update_config``, v0.25.1 / v0.30.0 / v0.34.0;
``platforms/cuda.py`` ``_get_backend_priorities``): FA4 exists on compute capability 9.x / 10.x / 11.x only; there
vLLM sets FA4 and keeps its priority list (FLASHINFER first on SM10, FLASH_ATTN elsewhere); Ampere, Ada, SM12 and
ROCm get TRITON_ATTN forced.  Each takes a 16-token block for a bf16 cache, so the layout is the same on every class:

E4B (42 layers, the last 18 read another layer's KV: 24 with KV = 4 full + 20 sliding, window 512; 2 KV heads):
  full page 16 x 2 x (512 + 512) x 2 = 65,536 B; sliding page at 16 tokens 32,768 B, unified to the full page by a
  32-token block (``unify_kv_cache_spec_page_size``); 6 groups of 4 layers -> 4 x 65,536 = 262,144 B per block;
  10 GiB // 262,144 = 40,960 blocks.  Per request (L 32,768, B 2,048, (pp + 1) x B = 4,096 in flight from 0.26):
  full cdiv(32,768, 16) = 2,048; sliding cdiv(min(511 + 4,096, 32,768), 32) + 1 = 145 each -> 2,048 + 5 x 145 =
  2,773; tokens int(40,960 / 2,773 x 32,768) = 484,016.
26B-A4B (30 layers: 5 full with 2 KV heads x 512, 25 sliding with 8 x 256, window 1,024): full 4,096 B/token, sliding
  8,192: the full block is raised to 32 (131,072 B pages); 6 groups of 5 -> 655,360 B per block; 16,384 blocks;
  per request full cdiv(32,768, 32) = 1,024, sliding cdiv(1,023 + 4,096, 16) + 1 = 321 -> 2,629;
  tokens int(16,384 / 2,629 x 32,768) = 204,211.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines.vllm.grouping import vllm_gemma4_backend
from kvplan.engines.vllm.planner import VllmInputs, plan_vllm

GiB = 1 << 30
CLASSES = {  # GPU class -> (sm_major, vendor, the backend vLLM 0.34 picks)
    "ampere-a100": (8, "nvidia", "TRITON_ATTN"),
    "ada-l40s": (8, "nvidia", "TRITON_ATTN"),
    "hopper-h100": (9, "nvidia", "FLASH_ATTN"),
    "blackwell-b200": (10, "nvidia", "FLASHINFER"),
    "blackwell-rtx-pro-6000": (12, "nvidia", "TRITON_ATTN"),
    "rocm-mi300x": (9, "amd", "TRITON_ATTN"),
}
MODELS = {  # model -> (blocks, [(kind, block size)] of its groups, tokens), from the module docstring
    "google/gemma-4-E4B-it": (40_960, [("swa", 32)] * 5 + [("full", 16)], 484_016),
    "google/gemma-4-26B-A4B": (16_384, [("swa", 16)] * 5 + [("full", 32)], 204_211),
}


def _plan(model: str, sm: int, vendor: str, **over: Any) -> Any:
    from kvplan.inputs.resolve import resolve_model

    spec = resolve_model(model)
    kw: dict[str, Any] = dict(
        config=spec.raw_config or spec.config,
        device_bytes=80 * GiB,
        kv_cache_memory_bytes=10 * GiB,
        max_model_len=32_768,
        max_num_batched_tokens=2048,
        engine_version="0.34.0",
        sm_major=sm,
        gpu_vendor=vendor,
    )
    kw.update(over)
    return plan_vllm(VllmInputs(**kw))


def test_hand_arithmetic():
    assert 10 * GiB // (4 * 16 * 2 * 1024 * 2) == 40_960
    assert 2048 + 5 * (-(-(511 + 4096) // 32) + 1) == 2773
    assert int(40_960 / 2773 * 32_768) == 484_016
    assert 10 * GiB // (5 * 16 * 8 * 512 * 2) == 16_384
    assert 1024 + 5 * (-(-(1023 + 4096) // 16) + 1) == 2629
    assert int(16_384 / 2629 * 32_768) == 204_211


@pytest.mark.parametrize("cls", sorted(CLASSES))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_backend_block_and_tokens_per_gpu_class(cls, model):
    sm, vendor, backend = CLASSES[cls]
    assert vllm_gemma4_backend(sm_major=sm, vendor=vendor)[0] == backend
    p = _plan(model, sm, vendor)
    blocks, groups, tokens = MODELS[model]
    assert any(a.startswith(f"attention backend {backend} ") for a in p.assumptions), p.assumptions
    assert p.block_size == 16
    assert [(g["kind"], g["block_size"]) for g in p.groups] == groups
    assert (p.num_blocks, p.gpu_kv_cache_tokens) == (blocks, tokens)


def test_sm90_fp8_per_layer_fa_warned_from_0_34():
    assert vllm_gemma4_backend(sm_major=9, kv_quantized=True)[1].startswith("SM9x with fp8 KV")
    assert vllm_gemma4_backend(sm_major=9, kv_quantized=True, engine_version=(0, 30, 0))[1].startswith("FA4 for")
    p = _plan("google/gemma-4-E4B-it", 9, "nvidia", kv_cache_dtype="fp8")
    assert any("64-token pages" in w for w in p.warnings)
    assert not any("64-token" in w for w in _plan("google/gemma-4-E4B-it", 8, "nvidia", kv_cache_dtype="fp8").warnings)
