"""vllm-21348 (Qwen3-235B-A22B-FP8, TP4 on H100 SXM, July 2025): kvplan's cold terms against a hand recount from the
vLLM wheels, and the part of the budget that stays unexplained (docs/accuracy.md, "cold-4").

The issue is dated 2025-07-22; vLLM 0.10.0 was published two days later, so the run was 0.9.2 or older.  Every code
path below is the same in the 0.9.2 and 0.10.0 wheels: ``Worker.determine_available_memory`` and ``memory_profiling``
(``v1/worker/gpu_worker.py``, ``utils/__init__.py``), ``GPUModelRunner.profile_run`` / ``_dummy_sampler_run``,
``Sampler.forward`` and ``TopKTopPSampler`` (``v1/sample``), ``fused_experts_impl`` (``model_executor/layers/
fused_moe/fused_moe.py``) and the 8,192 / 1,024 defaults of ``EngineArgs._set_default_args_v1``.  So the case's
``engine_version`` 0.10.0 (scripts/accuracy_report.py ``ADDITIONAL``) prices what the run did.
"""

from __future__ import annotations

import math

import pytest

from kvplan.inputs.resolve import resolve_gpu
from kvplan.units import GiB, MiB
from scripts.accuracy_report import LOGS, inputs_for, load_cases

LOG_ID = "vllm-21348-qwen3-235b-fp8-4xh100-tp4"
# Qwen3-235B-A22B: 94 layers, hidden 4,096, 128 experts (8 per token) of width 1,536, 64 q / 4 kv heads of 128,
# vocab 151,936, 40,960 positions; per rank at TP4: 16 q heads, 1 kv head, expert width 384, vocab 37,984
LAYERS, H, EXPERTS, TOPK, N_RANK, VOCAB = 94, 4096, 128, 8, 1536 // 4, 151_936
PAGE = LAYERS * 16 * 1 * 128 * 2 * 2  # 94 layers x 16 tokens x 1 kv head x 128 x (K, V) x bf16 = 770,048 B
LOGGED_TOKENS = 178_880  # "GPU KV cache size: 178,880 tokens" (one worker's line, before the min over workers)


@pytest.fixture(scope="module")
def cold():
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import recover_deployment

    model, gpu, over, _src = inputs_for(LOG_ID, load_cases())
    return recover_deployment(read_log_file(LOGS / f"{LOG_ID}.log"), model=model, gpu=gpu, overrides=over, mode="cold")


@pytest.fixture(scope="module")
def slices(cold) -> dict[str, int]:
    from kvplan.planning.calibrate import fit_recovered

    return {s.name: int(s.bytes) for s in fit_recovered(cold.deployment).memory}


def test_weights_are_the_fp8_block_quant_layout_counted_by_hand(slices):
    """Routed experts fp8 (w13 2 x 384 and w2 384 wide per rank), attention fp8 (qkv 18 heads x 128, o 2,048 wide),
    bf16 embedding and lm_head split over 4, bf16 router gates replicated, fp32 block scales (128 x 128 blocks), bf16
    norms, and the rotary cache (40,960 positions x 128, bf16) the model builds on the GPU."""
    experts = LAYERS * EXPERTS * 3 * H * N_RANK  # 56,757,788,672
    attention = LAYERS * (H * 18 * 128 + 2048 * H)
    embed_and_head = 2 * (VOCAB // 4) * H * 2
    gates = LAYERS * EXPERTS * H * 2
    scales = LAYERS * (EXPERTS * (2 * N_RANK // 128) * (H // 128) * 4 + EXPERTS * (H // 128) * (N_RANK // 128) * 4)
    scales += LAYERS * ((18 * 128 // 128) * (H // 128) * 4 + (H // 128) * (2048 // 128) * 4)
    norms = LAYERS * (2 * H * 2 + 2 * 128 * 2) + H * 2
    rope = 40_960 * 128 * 2
    total = experts + attention + embed_and_head + gates + scales + norms + rope
    assert total == 59_196_971_520  # 55.13 GiB
    assert slices["weights"] == total


def test_the_profile_peak_is_the_sampler_not_the_fused_moe_buffers(slices, cold):
    """0.10.0 ``fused_experts_impl`` over the profile's 8,192 tokens (one chunk: ``VLLM_FUSED_MOE_CHUNK_SIZE`` 32,768):
    cache1 and cache3 share one buffer of M x topk x max(2 x 384, 4,096) bf16, cache2 is M x topk x 384 bf16, plus
    the fp8 copies of the input and of cache2 with their per-128 group scales.  ``profile_run`` drops them before
    ``_dummy_sampler_run``: the peak is the larger of the forward and the sampler, and the sampler (1,024 rows x
    151,936 x 39 B on the PyTorch path) is six times the forward."""
    m = 8192
    cache13 = m * TOPK * max(2 * N_RANK, H) * 2
    cache2 = m * TOPK * N_RANK * 2
    quant = m * H + m * (H // 128) * 4 + m * TOPK * N_RANK + m * TOPK * (N_RANK // 128) * 4
    moe = cache13 + cache2 + quant
    assert moe == 647_757_824  # 0.60 GiB
    sampler = 1024 * VOCAB * 39
    assert slices["activation peak"] == sampler == 6_067_716_096  # 5.65 GiB
    from kvplan.engines.vllm.budget import vllm_activation_coefficients

    # kvplan's forward term, 2 x (3 x 4,096 + 8 x (3 x 384 + 4,096)) B per token, keeps cache1 and cache3 apart, so it
    # is above 0.10.0's buffers; both are far below the sampler
    forward_per_token, _ = vllm_activation_coefficients(config=cold.model_spec.config, tp_size=4)
    assert forward_per_token == 2 * (3 * H + TOPK * (3 * N_RANK + H)) == 108_544
    assert moe < m * forward_per_token < sampler // 6


def test_non_torch_is_workspaces_the_communicators_and_nvls(slices):
    """128 MiB of workspaces + the NCCL / custom all-reduce set-up (1.35 GiB: 0.9.2 / 0.10.0 take the snapshot
    before ``init_worker_distributed_environment``) + NCCL's NVLS buffers at TP4 on an NVSwitch H100
    (16 channels x 2 x 1 MiB x 4 heads)."""
    assert slices["runtime overhead"] == 128 * MiB + int(1.35 * GiB) + 16 * 2 * MiB * 4 == 1_717_986_918


def test_the_unexplained_gap_is_what_docs_accuracy_says(slices):
    """requested = ceil(0.9 x CUDA total); kvplan's budget = requested - weights - activation - non-torch.  The
    worker behind the token line had 11,180 blocks, so at most 11,181 x page - 1 B: kvplan's budget is 0.86 - 0.87
    GiB above it.  No term checked in the wheels closes it (docs/accuracy.md); this fails when one does, so the
    explanation is updated with it."""
    total = resolve_gpu("h100-sxm").cuda_total_bytes
    requested = math.ceil(total * 0.9)
    budget = requested - slices["weights"] - slices["activation peak"] - slices["runtime overhead"]
    assert budget // PAGE == slices["KV pool"] // PAGE == 12_387
    blocks = LOGGED_TOKENS // 16
    assert blocks == 11_180
    gap_low, gap_high = budget - ((blocks + 1) * PAGE - 1), budget - blocks * PAGE
    # (the FlashInfer sampler's 14 B per logit would widen it by 1,024 x 151,936 x 25 B = 3.62 GiB: the PyTorch path
    # priced here is the one nearer the log)
    assert 0.86 * GiB < gap_low < gap_high < 0.87 * GiB, (gap_low / GiB, gap_high / GiB)
