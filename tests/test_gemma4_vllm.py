"""Gemma-4 under vLLM on each GPU class (issue 25 item 6): the attention backend, the block size and the tokens of
one E-model (E4B) and one MoE size (26B-A4B), derived by hand from the release's code.

Sources (vllm-project/vllm wheels 0.30.0, 0.31.0, 0.32.0, 0.33.0, 0.34.0; transformers 5.17 / 5.22 for the config):
* ``model_executor/models/config.py`` ``Gemma4Config.verify_and_update_config``: FA4 where it exists (compute
  capability 9.x / 10.x / 11.x; ``vllm_flash_attn/flash_attn_interface.py`` ``_is_fa4_supported``), TRITON_ATTN forced
  elsewhere (Ampere, Ada, SM12 Blackwell, ROCm); from 0.31 SM90 + fp8 cache keeps per-layer FA3 / FA4.
* ``platforms/cuda.py`` ``_get_backend_priorities``: SM10 FLASHINFER first, others FLASH_ATTN first; a multimodal-
  prefix model (``use_bidirectional_attention: "vision"``, as google/gemma-4-26B-A4B's config.json says) gets
  TRITON_FLASHINFER (SM10) / TRITON_FLASH_ATTN (SM90) first.
* ``platforms/interface.py`` ``update_block_size_for_backend`` -> ``get_preferred_block_size(16)``: 16, except
  FLASH_ATTN on SM90 with fp8 (``flash_attn.py`` ``_get_sm90_fa4_fp8_kv_block_size``: 64, 0.31+; the whole-model head
  size is 512 because transformers' ``Gemma4TextConfig`` is heterogeneous and ``ModelArchitectureConfig.from_layers``
  takes the max) and TRITON_FLASHINFER (``kernel_block_sizes=(64,)``): 64.
* ``v1/core/kv_cache_planning.py`` ``unify_kv_cache_spec_page_size``: the smaller page's block grows to the largest
  page; ``_get_kv_cache_groups_uniform_page_size``: equal-size groups; ``kv_cache_utils.py``
  ``get_max_concurrency_for_kv_cache_config``: tokens = int(num_blocks / Σ blocks per request × L).

Every case: 10 GiB of KV (``kv_cache_memory_bytes``), L 32,768, B 2,048, so in flight (pp + 1) × B = 4,096 (0.26+).

E4B (42 layers; the last 18 read layer 22 / 23's KV, ``num_kv_shared_layers``, so 24 layers hold KV: full at 5, 11,
17, 23 = 4 full + 20 sliding; 2 KV heads; head 256 sliding / 512 full; window 512):
  block 16, bf16: full page 16 x 2 x (512 + 512) x 2 = 65,536 B; sliding 16 x 2 x 512 x 2 = 32,768 -> block 32;
    group size min(4, 20) = 4 -> 1 full + 5 sliding groups; 4 x 65,536 = 262,144 B per block; 10 GiB -> 40,960
    blocks; per request 2,048 + 5 x (cdiv(511 + 4,096, 32) + 1 = 145) = 2,773; int(40,960 / 2,773 x 32,768) = 484,016.
  block 64, fp8 (H100 / H200): full 64 x 2 x 1,024 x 1 = 131,072; sliding 65,536 -> block 128; 524,288 B per block;
    20,480 blocks; per request cdiv(32,768, 64) = 512 + 5 x (cdiv(4,607, 128) + 1 = 37) = 697 -> 962,824.
  block 16, fp8 (A100 / L40S, TRITON_ATTN): 131,072 B per block, 81,920 blocks, 2,773 per request -> 968,032.
26B-A4B (30 layers: 5 full with 2 KV heads x 512 (``attention_k_eq_v``: V stored, vLLM loads K into both), 25 sliding
with 8 x 256; window 1,024):
  block 16, bf16: full 16 x 2 x 1,024 x 2 = 65,536; sliding 16 x 8 x 512 x 2 = 131,072 -> the full block is 32;
    5 x 131,072 = 655,360 B per block; 16,384 blocks; per request cdiv(32,768, 32) = 1,024 + 5 x (cdiv(1,023 + 4,096,
    16) + 1 = 321) = 2,629; int(16,384 / 2,629 x 32,768) = 204,211.
  block 64, fp8 (H100): full 64 x 2 x 1,024 = 131,072, sliding 64 x 8 x 512 = 262,144 -> full 128; 1,310,720 B per
    block; 8,192 blocks; per request 256 + 5 x (cdiv(5,119, 64) + 1 = 81) = 661; int(8,192 / 661 x 32,768) = 406,105.
  block 64, bf16 (B200 with the multimodal prefix, TRITON_FLASHINFER): full 262,144, sliding 524,288 -> full 128;
    2,621,440 B per block; 4,096 blocks; 661 per request; int(4,096 / 661 x 32,768) = 203,052.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines.vllm.gemma4 import vllm_gemma4_attention
from kvplan.engines.vllm.planner import VllmInputs, plan_vllm
from kvplan.inputs.resolve import resolve_gpu, resolve_model

GiB = 1 << 30
E4B, MOE = "google/gemma-4-E4B-it", "google/gemma-4-26B-A4B"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _config(model: str, *, vision: bool = False) -> dict[str, Any]:
    """The preset's config with ``use_bidirectional_attention`` set: "vision" (as google/gemma-4-26B-A4B's published
    config.json has it) or left out (text-only serving behaves the same in vLLM: no multimodal prefix)."""
    spec = resolve_model(model)
    cfg = dict(spec.raw_config or spec.config)
    text = {k: v for k, v in cfg["text_config"].items() if k != "use_bidirectional_attention"}
    cfg["text_config"] = {**text, "use_bidirectional_attention": "vision"} if vision else text
    return cfg


def _plan(model: str, gpu: str, *, vision: bool = False, **over: Any) -> Any:
    g = resolve_gpu(gpu)
    kw: dict[str, Any] = dict(
        config=_config(model, vision=vision),
        device_bytes=80 * GiB,
        kv_cache_memory_bytes=10 * GiB,
        max_model_len=32_768,
        max_num_batched_tokens=2048,
        engine_version="0.34.0",
        sm_major=g.sm_major,
        gpu_vendor=g.vendor,
    )
    kw.update(over)
    return plan_vllm(VllmInputs(**kw))


# (model, gpu, kv dtype, vision) -> (backend, cache block, [(kind, block)] of the groups, blocks, tokens)
CASES = {
    # Turing / Ampere / Ada / SM12 Blackwell / ROCm: no FA4 -> TRITON_ATTN forced, 16-token blocks
    (E4B, "a100-sxm-80gb", "auto", False): ("TRITON_ATTN", 16, [("swa", 32)] * 5 + [("full", 16)], 40_960, 484_016),
    (E4B, "l40s", "auto", False): ("TRITON_ATTN", 16, [("swa", 32)] * 5 + [("full", 16)], 40_960, 484_016),
    (E4B, "a10", "fp8", False): ("TRITON_ATTN", 16, [("swa", 32)] * 5 + [("full", 16)], 81_920, 968_032),
    (E4B, "rtx-pro-6000-server", "auto", False): (
        "TRITON_ATTN",
        16,
        [("swa", 32)] * 5 + [("full", 16)],
        40_960,
        484_016,
    ),
    (E4B, "t4", "auto", False): ("TRITON_ATTN", 16, [("swa", 32)] * 5 + [("full", 16)], 40_960, 484_016),  # Turing
    (E4B, "mi300x", "auto", False): ("TRITON_ATTN", 16, [("swa", 32)] * 5 + [("full", 16)], 40_960, 484_016),
    (MOE, "a100-sxm-80gb", "auto", True): ("TRITON_ATTN", 16, [("swa", 16)] * 5 + [("full", 32)], 16_384, 204_211),
    (MOE, "l4", "auto", True): ("TRITON_ATTN", 16, [("swa", 16)] * 5 + [("full", 32)], 16_384, 204_211),
    (MOE, "rtx-pro-6000-server", "auto", True): (
        "TRITON_ATTN",
        16,
        [("swa", 16)] * 5 + [("full", 32)],
        16_384,
        204_211,
    ),
    (MOE, "mi300x", "auto", True): ("TRITON_ATTN", 16, [("swa", 16)] * 5 + [("full", 32)], 16_384, 204_211),
    # Hopper: FA4 for every layer (bf16), per-layer FA3 / FA4 with 64-token pages (fp8, 0.31+)
    (E4B, "h100-sxm", "auto", False): ("FLASH_ATTN", 16, [("swa", 32)] * 5 + [("full", 16)], 40_960, 484_016),
    (E4B, "h200-sxm", "fp8", False): ("FLASH_ATTN", 64, [("swa", 128)] * 5 + [("full", 64)], 20_480, 962_824),
    (MOE, "h100-sxm", "auto", True): ("TRITON_FLASH_ATTN", 16, [("swa", 16)] * 5 + [("full", 32)], 16_384, 204_211),
    (MOE, "h100-sxm", "fp8", True): ("TRITON_FLASH_ATTN", 64, [("swa", 64)] * 5 + [("full", 128)], 8_192, 406_105),
    (MOE, "h200-sxm", "fp8", False): ("FLASH_ATTN", 64, [("swa", 64)] * 5 + [("full", 128)], 8_192, 406_105),
    # SM100 Blackwell: FLASHINFER (16), or TRITON_FLASHINFER (64) for the multimodal-prefix 26B-A4B
    (E4B, "b200", "auto", False): ("FLASHINFER", 16, [("swa", 32)] * 5 + [("full", 16)], 40_960, 484_016),
    (MOE, "b200", "auto", True): ("TRITON_FLASHINFER", 64, [("swa", 64)] * 5 + [("full", 128)], 4_096, 203_052),
    (MOE, "b200", "auto", False): ("FLASHINFER", 16, [("swa", 16)] * 5 + [("full", 32)], 16_384, 204_211),
}


def test_hand_arithmetic():
    """The module docstring's sums, line by line."""
    L, inflight = 32_768, 2 * 2048
    e4b_req16 = L // 16 + 5 * (_cdiv(511 + inflight, 32) + 1)
    assert (10 * GiB // (4 * 16 * 2 * 1024 * 2), e4b_req16) == (40_960, 2773)
    assert int(40_960 / 2773 * L) == 484_016 and int(81_920 / 2773 * L) == 968_032
    e4b_req64 = L // 64 + 5 * (_cdiv(511 + inflight, 128) + 1)
    assert (10 * GiB // (4 * 64 * 2 * 1024), e4b_req64, int(20_480 / e4b_req64 * L)) == (20_480, 697, 962_824)
    moe_req16 = L // 32 + 5 * (_cdiv(1023 + inflight, 16) + 1)
    assert (10 * GiB // (5 * 16 * 8 * 512 * 2), moe_req16, int(16_384 / moe_req16 * L)) == (16_384, 2629, 204_211)
    moe_req64 = L // 128 + 5 * (_cdiv(1023 + inflight, 64) + 1)
    assert (10 * GiB // (5 * 64 * 8 * 512), moe_req64, int(8_192 / moe_req64 * L)) == (8_192, 661, 406_105)
    assert (10 * GiB // (5 * 64 * 8 * 512 * 2), int(4_096 / 661 * L)) == (4_096, 203_052)


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: f"{c[0].split('-')[-2]}-{c[1]}-{c[2]}{'-vision' * c[3]}")
def test_backend_block_and_tokens_per_gpu_class(case):
    model, gpu, kv, vision = case
    backend, block, groups, blocks, tokens = CASES[case]
    p = _plan(model, gpu, vision=vision, kv_cache_dtype=kv)
    assert any(a.startswith(f"attention backend {backend} (") for a in p.assumptions), p.assumptions
    assert p.block_size == block
    assert [(g["kind"], g["block_size"]) for g in p.groups] == groups
    assert (p.num_blocks, p.gpu_kv_cache_tokens) == (blocks, tokens)


def test_e4b_kv_sharing_layers_hold_no_kv():
    """24 of 42 layers hold KV (``Gemma4Attention.__init__`` ``kv_sharing_target_layer_name`` for layers >= 42 - 18;
    ``attn_utils.get_kv_cache_spec`` skips them): 4 full x 4,096 + 20 sliding x 2,048 = 57,344 B per token."""
    p = _plan(E4B, "h100-sxm")
    assert sum(g["layers"] for g in p.groups) == 24
    assert p.kv_bytes_per_token == 4 * 2 * 1024 * 2 + 20 * 2 * 512 * 2 == 57_344
    assert any("18 KV-sharing layers" in a for a in p.assumptions)


def test_sm90_fp8_64_token_pages_from_0_31():
    """0.30.0 forces FA4 for every layer and has no ``_get_sm90_fa4_fp8_kv_block_size``: block 16 (the A10 fp8
    numbers, 968,032); 0.31.0 keeps per-layer FA and asks for 64 (962,824)."""
    assert vllm_gemma4_attention(sm_major=9, kv_cache_dtype="fp8", engine_version=(0, 30, 0)).block_size == 16
    assert vllm_gemma4_attention(sm_major=9, kv_cache_dtype="fp8", engine_version=(0, 31, 0)).block_size == 64
    assert _plan(E4B, "h100-sxm", kv_cache_dtype="fp8", engine_version="0.30.0").gpu_kv_cache_tokens == 968_032
    assert _plan(E4B, "h100-sxm", kv_cache_dtype="fp8", engine_version="0.31.0").gpu_kv_cache_tokens == 962_824
    # fp8_e5m2: FLASH_ATTN has no e5m2 cache, FLASHINFER (next in the SM90 list) takes it with 16-token blocks
    assert vllm_gemma4_attention(sm_major=9, kv_cache_dtype="fp8_e5m2").backend == "FLASHINFER"


def test_given_block_the_64_token_kernels_cannot_run_moves_layers_to_other_backends():
    """``--block-size 16`` reaches the selector (``user_specified_block_size``): on H100 + fp8 FlashAttention refuses
    the 512-wide layers ("SM90 d512 FP8 KV requires a block size divisible by 64"), so they run FLASHINFER, the
    sliding ones FLASH_ATTN; on a B200 the multimodal-prefix composite refuses every layer and only TRITON_ATTN
    takes a prefix at these heads.  The layout is the 16-token one (E4B fp8: 968,032 tokens, as on an A10); 128 keeps
    FA4's kernel (two 64-token kernel blocks per block)."""
    p = _plan(E4B, "h100-sxm", kv_cache_dtype="fp8", block_size=16)
    assert any(a.startswith("attention backend FLASH_ATTN + FLASHINFER (") for a in p.assumptions), p.assumptions
    assert (p.block_size, p.gpu_kv_cache_tokens) == (16, 968_032)
    assert vllm_gemma4_attention(sm_major=9, kv_cache_dtype="fp8", block_size_given=128).backend == "FLASH_ATTN"
    moe = _plan(MOE, "b200", vision=True, block_size=16)
    assert any(a.startswith("attention backend TRITON_ATTN (") for a in moe.assumptions)
    assert moe.gpu_kv_cache_tokens == 204_211


def test_fa4_head256_pages_when_flash_attn_runs_on_blackwell():
    """FLASH_ATTN on SM100 (``--attention-backend flash_attn``) or SM11: the sliding layers (head 256, bf16) run
    FA4's head-256 kernel, whose only page is 128 tokens (``_get_fa4_hd256_block_size``, 0.31+).  E4B: sliding page
    128 x 2 x 512 x 2 = 262,144 B, the full layers' 16-token 65,536 B page grows to 64 tokens; 4 x 262,144 =
    1,048,576 B per block -> 10,240 blocks; per request 512 + 5 x (cdiv(4,607, 128) + 1 = 37) = 697 ->
    int(10,240 / 697 x 32,768) = 481,412."""
    p = _plan(E4B, "b200", attention_backend="flash_attn")
    assert [(g["kind"], g["block_size"]) for g in p.groups] == [("swa", 128)] * 5 + [("full", 64)]
    assert (p.bytes_per_block, p.num_blocks, p.gpu_kv_cache_tokens) == (1_048_576, 10_240, int(10_240 / 697 * 32_768))
    assert vllm_gemma4_attention(sm_major=11).sliding_block_size == 128
    assert vllm_gemma4_attention(sm_major=11, kv_cache_dtype="fp8").sliding_block_size is None  # FA2 for fp8


def test_e2b_printed_tokens_rise_with_max_model_len():
    """The E2B pool is num_blocks, constant; vLLM prints int(concurrency x L) (``get_kv_cache_capacity``), and a
    request's sliding groups take a fixed number of blocks whatever L, so the printed tokens rise with L.
    E2B: 15 of 35 layers hold KV (3 full, 12 sliding; 1 KV head): full page 16 x 1 x 1,024 x 2 = 32,768, sliding
    16,384 -> block 32; group size 3 -> 1 full + 4 sliding groups; 3 x 32,768 = 98,304 B per block; 10 GiB ->
    109,226 blocks.  Per request: L 4,096: 256 + 4 x (cdiv(min(4,607, 4,096), 32) + 1 = 129) = 772; L 32,768:
    2,048 + 4 x 145 = 2,628; L 131,072: 8,192 + 4 x 145 = 8,772."""
    out = {}
    for L, per_request in ((4096, 772), (32_768, 2628), (131_072, 8772)):
        p = _plan("google/gemma-4-E2B-it", "l4", max_model_len=L)
        assert (p.num_blocks, p.blocks_per_request) == (109_226, per_request)
        out[L] = p.gpu_kv_cache_tokens
        assert out[L] == int(109_226 / per_request * L)
    assert out[4096] < out[32_768] < out[131_072] < 109_226 * 16  # bounded by the full group's 16 tokens per block


def test_multimodal_prefix_raises_the_default_batch_to_one_video():
    """A multimodal-prefix model must fit one whole item in a batch, so vLLM 0.25+ raises the default B to Gemma-4's
    largest item, a 32-frame video of 32 x (70 + 8) = 2,496 tokens (``arg_utils._get_min_mm_batched_tokens``,
    ``gemma4_mm.get_mm_max_tokens_per_item``).  26B-A4B ("vision") on an L40S (44 GiB: default 2,048): in flight
    2 x 2,496 = 4,992; per request 1,024 + 5 x (cdiv(1,023 + 4,992, 16) + 1 = 377) = 2,909;
    int(16,384 / 2,909 x 32,768) = 184,555 (without the prefix: B 2,048, 204,211).  A given B, or a default already
    above the floor (H100: 8,192), stays."""
    assert 32 * (70 + 2 + 6) == 2496 and 1024 + 5 * (_cdiv(1023 + 2 * 2496, 16) + 1) == 2909
    raised = _plan(MOE, "l40s", vision=True, device_bytes=44 * GiB, max_num_batched_tokens=None)
    assert (raised.max_num_batched_tokens, raised.blocks_per_request) == (2496, 2909)
    assert raised.gpu_kv_cache_tokens == int(16_384 / 2909 * 32_768) == 184_555
    plain = _plan(MOE, "l40s", device_bytes=44 * GiB, max_num_batched_tokens=None)
    assert (plain.max_num_batched_tokens, plain.gpu_kv_cache_tokens) == (2048, 204_211)
    assert _plan(MOE, "l40s", vision=True, device_bytes=44 * GiB).max_num_batched_tokens == 2048  # given
    assert _plan(MOE, "h100-sxm", vision=True, max_num_batched_tokens=None).max_num_batched_tokens == 8192
    # the floor is in the 0.25.1 and 0.28.0 wheels too (earlier releases not read: none before 0.25)
    old = dict(vision=True, device_bytes=44 * GiB, max_num_batched_tokens=None)
    assert _plan(MOE, "l40s", engine_version="0.25.1", **old).max_num_batched_tokens == 2496
    assert _plan(MOE, "l40s", engine_version="0.24.0", **old).max_num_batched_tokens == 2048


def test_text_only_class_has_no_multimodal_prefix():
    """``is_mm_prefix_lm`` needs a multimodal model: the same config served as ``Gemma4ForCausalLM`` keeps
    FLASHINFER and 16-token blocks on a B200 (the bf16 26B-A4B numbers, 204,211 tokens)."""
    cfg = _config(MOE, vision=True)
    cfg["architectures"] = ["Gemma4ForCausalLM"]
    p = _plan(MOE, "b200", config=cfg)
    assert p.block_size == 16 and p.gpu_kv_cache_tokens == 204_211


def test_cli_h100_fp8_measured_kv():
    """``kvplan fit`` end to end: the GPU preset gives SM 9, the flag fp8, so the 64-token E4B layout of the module
    docstring (20,480 blocks, 962,824 tokens) with the backend on the assumption list."""
    import json

    from typer.testing import CliRunner

    from kvplan.cli.app import app

    args = ["fit", "-m", E4B, "--gpu", "h100-sxm", "--engine", "vllm", "--kv-cache-dtype", "fp8"]
    args += ["--kv-cache-memory-bytes", "10GiB", "--context-length", "32768", "--max-num-batched-tokens", "2048"]
    res = CliRunner().invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert (d["block_size"], d["num_blocks"], d["kv_pool_tokens"]) == (64, 20_480, 962_824)
    assert any(a.startswith("attention backend FLASH_ATTN (SM9x with fp8 KV") for a in d["assumptions"])


def test_intel_xpu_from_0_32():
    """Intel XPU: 0.32+ leave the backend to the XPU platform (FLASH_ATTN, ``MultipleOf(64)``, preferred
    ``max(16, 64)``); 0.31 forces TRITON_ATTN (no FA4).  E4B bf16 at 64: full 64 x 2 x 1,024 x 2 = 262,144 B, sliding
    131,072 -> 128; 4 x 262,144 = 1,048,576 B per block -> 10,240 blocks; 512 + 5 x 37 = 697 per request ->
    int(10,240 / 697 x 32,768) = 481,412.  Gaudi (HL-325L) runs the vLLM-Gaudi plugin: not modelled, 16."""
    p = _plan(E4B, "arc-pro-b60", device_bytes=24 * GiB)
    assert (p.block_size, p.num_blocks, p.gpu_kv_cache_tokens) == (64, 10_240, int(10_240 / 697 * 32_768))
    assert _plan(E4B, "arc-pro-b60", device_bytes=24 * GiB, engine_version="0.31.0").gpu_kv_cache_tokens == 484_016
    assert vllm_gemma4_attention(sm_major=None, vendor="intel", prefix=True, engine_version=(0, 33, 0)).block_size == 64
    assert vllm_gemma4_attention(sm_major=None, vendor="intel", prefix=True, engine_version=(0, 32, 0)).block_size == 16
    assert vllm_gemma4_attention(sm_major=None, vendor="intel", gpu_name="HL-325L").backend == "TRITON_ATTN"


def test_composite_needs_a_cache_both_backends_take():
    """TRITON_FLASHINFER is Triton + FlashInfer: an ``nvfp4`` cache (FlashInfer only) leaves FLASHINFER, 16."""
    assert vllm_gemma4_attention(sm_major=10, prefix=True, kv_cache_dtype="nvfp4").backend == "FLASHINFER"
    assert vllm_gemma4_attention(sm_major=10, prefix=True, kv_cache_dtype="fp8").backend == "TRITON_FLASHINFER"
