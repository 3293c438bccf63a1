"""Workload-aware concurrency (issue 11): ``--input-len 8192 --output-len 1024`` -> how many such requests run at once.

Each case is worked by hand: ``workload_concurrency = min(cap, pool // per-request tokens)`` (per DP rank, x dp),
with the per-request tokens page-rounded, and the binding pool named.  Measured mode (``--free-memory`` /
``--weight-memory``) keeps the pools fixed by the formula alone:

* GQA, Qwen3-8B bf16 on H100, free 80 GiB, weights 16 GiB, mfs 0.75 (tests/test_sweep.py): pool 320,398 tokens,
  page 1, derived cap 4,096: 320,398 // 9,216 = 34.
* MLA, DeepSeek-V3 bf16 TP8 on H200, free 140 GiB, weights 90 GiB, mfs 0.9: budget = 50 - 140 x 0.1 = 36 GiB =
  38,654,705,664 B; cell (512 + 64) x 61 layers x 2 B = 70,272 B; pool 38,654,705,664 // 70,272 = 550,072; cap
  clamp(int(550,072 / 163,840 x 512) = 1,718, 2,048, 4,096) = 2,048: 550,072 // 9,216 = 59.
* sliding window, gpt-oss-120b on H100, free 78 GiB, weights 62 GiB, mfs 0.9 (ratio mode): full pool 132,690 tokens,
  SWA pool 106,152 (window 127).  8,192 + 1,024: full 132,690 // 9,216 = 14; SWA: one request holds
  min(127 + 128 + 1 + 1, 9,216) = 257 slots after the 2 x 8,192 + 1 = 16,385 reserved for prefill chunks in flight:
  (106,152 - 16,385) // 257 = 349; the full pool binds: 14.  Short requests (100 + 28 = 128 tokens, cap 4,096): full
  132,690 // 128 = 1,036, SWA (106,152 - 16,385) // 128 = 701: the SWA pool binds.
* Mamba hybrid, Qwen3-Next-80B-A3B TP2 on H200, free 140 GiB, weights 80 GiB, mfs 0.9: attention pool 2,117,421 tokens
  (12,288 B each), the state slots cap max_running_requests at 120: min(120, 2,117,421 // 9,216 = 229) = 120.
* the default deployment (DeepSeek-V4.1-Flash, page 256, max_running_requests 16 given): 9,216 tokens = 36 pages;
  pool // 9,216 is in the hundreds, capped at 16.
"""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning.plan import fit
from kvplan.planning.workload import page_round, single_pool_concurrency, vllm_block_bound

GiB = 2**30
W = dict(input_len=8192, output_len=1024)


def test_gqa_by_hand():
    r = fit(
        Deployment(
            model="Qwen/Qwen3-8B",
            gpu="h100-sxm",
            free_memory=80 * GiB,
            weight_memory=16 * GiB,
            mem_fraction_static=0.75,
            context_length=32768,
            **W,
        )
    )
    assert (r.kv_pool_tokens, r.page_size, r.max_running_requests) == (320_398, 1, 4096)
    assert r.workload_tokens_per_request == 9216
    assert r.workload_concurrency == min(4096, 320_398 // 9216) == 34
    assert r.verdict == (
        "fits: 9 requests of 32,768 tokens at once; 34 requests of 8,192+1,024 tokens fit at once "
        "(the KV pool binds); max_running_requests 4,096 (derived)"
    )


def test_mla_by_hand():
    r = fit(
        Deployment(
            model="deepseek-ai/DeepSeek-V3",
            gpu="h200-sxm",
            tp=8,
            free_memory=140 * GiB,
            weight_memory=90 * GiB,
            mem_fraction_static=0.9,
            **W,
        )
    )
    assert r.family == "mla" and r.kv_budget_bytes == 36 * GiB and r.kv_bytes_per_token == 70_272
    assert r.kv_pool_tokens == 38_654_705_664 // 70_272 == 550_072 and r.max_running_requests == 2048
    assert r.workload_concurrency == min(2048, 550_072 // 9216) == 59


def test_sliding_window_by_hand():
    base = dict(
        model="openai/gpt-oss-120b",
        gpu="h100-sxm",
        free_memory=78 * GiB,
        weight_memory=62 * GiB,
        mem_fraction_static=0.9,
    )
    r = fit(Deployment(**base, **W))
    swa = {p.name: p.tokens for p in r.pools}
    assert r.family == "hybrid_swa" and (r.kv_pool_tokens, swa["sliding-window KV"]) == (132_690, 106_152)
    assert r.workload_concurrency == min(2048, 132_690 // 9216, (106_152 - 16_385) // 257) == 14
    assert "(the KV pool binds)" in r.verdict
    short = fit(Deployment(**base, input_len=100, output_len=28, max_running_requests=4096))
    assert short.workload_concurrency == min(4096, 132_690 // 128, (106_152 - 16_385) // 128) == 701
    assert "701 requests of 100+28 tokens fit at once (the SWA pool binds)" in short.verdict


def test_mamba_hybrid_by_hand():
    r = fit(
        Deployment(
            model="Qwen/Qwen3-Next-80B-A3B-Instruct",
            gpu="h200-sxm",
            tp=2,
            free_memory=140 * GiB,
            weight_memory=80 * GiB,
            mem_fraction_static=0.9,
            **W,
        )
    )
    assert r.family == "hybrid_mamba" and (r.kv_pool_tokens, r.max_running_requests) == (2_117_421, 120)
    assert r.workload_concurrency == min(120, 2_117_421 // 9216) == 120
    assert "capped at 120 by max_running_requests (derived)" in r.verdict


def test_the_default_deployment():
    r = fit(Deployment(**W))
    assert (r.page_size, r.max_running_requests, r.max_running_requests_source) == (256, 16, "given")
    assert r.workload_tokens_per_request == 9216 == 36 * 256
    assert r.workload_concurrency == min(16, r.kv_pool_tokens // 9216) == 16
    assert r.verdict.startswith(
        "fits: 3 requests of 1,048,576 tokens at once; 16 requests of 8,192+1,024 tokens fit "
        "at once; capped at 16 by max_running_requests (given)"
    )
    assert r.meets_target and r.target == "1 request of 8,192+1,024 tokens at once"


def test_vllm_blocks_by_hand():
    # Qwen3-8B on H100, vLLM: one full-attention group of 16-token blocks, 2,048 per 32k request: a request of
    # 9,216 tokens takes 576 blocks; gpt-oss-120b adds a sliding group: min(1,033 - 1, 576) + 1 = 577 blocks
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm", context_length=32768, **W))
    assert r.workload_concurrency == min(r.max_running_requests, r.num_blocks // 576)
    assert r.max_concurrency == min(r.max_running_requests, r.num_blocks // 2048)
    g = fit(Deployment(model="openai/gpt-oss-120b", gpu="h100-sxm", engine="vllm", context_length=32768, **W))
    assert g.workload_concurrency == g.num_blocks // (577 + 576)
    assert vllm_block_bound(groups=g.groups, num_blocks=g.num_blocks, tokens=9216) == g.num_blocks // 1153


def test_per_dp_rank_and_in_total():
    r = fit(
        Deployment(
            model="deepseek-ai/DeepSeek-V3",
            gpu="h200-sxm",
            tp=8,
            dp=8,
            enable_dp_attention=True,
            max_running_requests=64,
            **W,
        )
    )
    assert r.workload_concurrency_per_rank == min(8, r.kv_pool_tokens // 9216)
    assert r.workload_concurrency == r.workload_concurrency_per_rank * 8
    assert "capped at 8 per DP rank by max_running_requests (given)" in r.verdict


def test_longer_than_the_longest_request_runs_none():
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", context_length=8192, input_len=8192, output_len=1))
    assert r.fits and r.workload_concurrency == 0 and not r.meets_target
    assert "no request of 8,192+1 = 8,193 tokens runs: longer than the longest request" in r.verdict


def test_no_workload_no_keys_and_output_alone_is_an_error():
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm"))
    assert (r.workload_concurrency, r.workload_tokens_per_request, r.input_len) == (None, None, None)
    with pytest.raises(InputError) as e:
        fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", output_len=100))
    assert e.value.field == "--input-len"
    only_input = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", input_len=1000))
    assert (only_input.output_len, only_input.workload_tokens_per_request) == (0, 1000)


def test_pure_formulas():
    assert page_round(tokens=9216, page=256) == 9216 and page_round(tokens=9217, page=256) == 9472
    assert single_pool_concurrency(pool_tokens=320_398, tokens=9216, page=1, cap=4096, longest=32_767) == 34
    assert single_pool_concurrency(pool_tokens=320_398, tokens=40_000, page=1, cap=4096, longest=32_767) == 0
