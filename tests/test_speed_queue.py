"""The burst and run terms of the prefill queue (kvplan.perf.queue) and the per-request host path
(kvplan.perf.overhead), each against numbers derived by hand in the docstring of the test."""

from __future__ import annotations

import math

import pytest

from kvplan.perf.overhead import ENGINES, REQUEST_HOST_S, request_overhead_s
from kvplan.perf.queue import _floor_sum, burst_steps, burst_wait, run_median_wait, run_wait


def test_floor_sum_by_hand():
    """floor(1/3) + floor(3/3) + floor(5/3) + floor(7/3) = 0 + 1 + 1 + 2 = 4; no terms: 0; a = 0: n x floor(b/m)."""
    assert _floor_sum(4, 3, 2, 1) == 4
    assert _floor_sum(0, 5, 3, 2) == 0
    assert _floor_sum(7, 4, 0, 9) == 7 * 2


@pytest.mark.parametrize(
    "n,m,a,b",
    [(1, 1, 0, 0), (10, 7, 3, 5), (33, 4096, 1024, 4095), (100, 2048, 9000, 2047), (57, 13, 29, 100)],
)
def test_floor_sum_matches_the_plain_sum(n, m, a, b):
    assert _floor_sum(n, m, a, b) == sum((a * k + b) // m for k in range(n))


def test_burst_steps_short_prompts_share_a_step():
    """16 prompts of 1,024 tokens, 8,192 per step: eight per step, so k = 1..8 finish after step 1 and k = 9..16
    after step 2: mean (8 x 1 + 8 x 2) / 16 = 1.5."""
    assert burst_steps(burst=16, input_len=1024, chunk_tokens=8192) == 1.5


def test_burst_steps_one_prompt_per_step():
    """4 prompts of exactly one step each: (1 + 2 + 3 + 4) / 4 = 2.5 = (B + 1) / 2."""
    assert burst_steps(burst=4, input_len=8192, chunk_tokens=8192) == 2.5


def test_burst_steps_prompts_straddle_steps():
    """3 prompts of 3,000 tokens, 4,096 per step: ceil(3,000/4,096) = 1, ceil(6,000/4,096) = 2,
    ceil(9,000/4,096) = 3: mean 2.  A long prompt spans steps: 2 prompts of 9,000 at 2,048 per step:
    ceil(9,000/2,048) = 5, ceil(18,000/2,048) = 9: mean 7."""
    assert burst_steps(burst=3, input_len=3000, chunk_tokens=4096) == 2.0
    assert burst_steps(burst=2, input_len=9000, chunk_tokens=2048) == 7.0


def test_burst_steps_large_burst_is_exact():
    """A million prompts of 777 tokens at 4,096 per step, against the plain mean of ceil(k S / K)."""
    b, s, k = 1_000_000, 777, 4096
    assert burst_steps(burst=b, input_len=s, chunk_tokens=k) == pytest.approx(
        sum(-(-(j * s) // k) for j in range(1, b + 1)) / b, rel=0, abs=1e-9
    )


def test_burst_steps_degenerate():
    assert burst_steps(burst=0, input_len=1024, chunk_tokens=8192) == 0.0
    assert burst_steps(burst=1, input_len=1024, chunk_tokens=8192) == 1.0  # alone: one step


def test_burst_wait_by_hand():
    """16 x 1,024 tokens at 8,192 per step, 60 ms a step: (1.5 - 1) x 60 = 30 ms.  4 x 8,192 at 8,192, 150 ms a
    step: (2.5 - 1) x 150 = 225 ms, (B - 1) / 2 prefills.  Alone (B = 1): no wait."""
    assert burst_wait(burst=16, input_len=1024, chunk_tokens=8192, step_s=0.060) == pytest.approx(0.030)
    assert burst_wait(burst=4, input_len=8192, chunk_tokens=8192, step_s=0.150) == pytest.approx(0.225)
    assert burst_wait(burst=1, input_len=8192, chunk_tokens=2048, step_s=0.3) == 0.0


def test_burst_wait_long_prompt_counts_its_own_chunks_once():
    """2 prompts of 9,000 tokens at 2,048 per step, 0.1 s a step: alone 5 steps, the burst's mean 7 steps: 0.2 s."""
    assert burst_wait(burst=2, input_len=9000, chunk_tokens=2048, step_s=0.1) == pytest.approx(0.2)


def test_burst_wait_grows_with_the_burst_and_is_below_the_unquantized_estimate_for_short_prompts():
    """Packing short prompts: the old estimate (B - 1) / 2 prompts' shares of a step is larger than the exact one
    whenever several prompts finish in the same step."""
    w = [burst_wait(burst=b, input_len=1024, chunk_tokens=8192, step_s=0.06) for b in (8, 16, 64, 256)]
    assert w == sorted(w) and w[0] == 0.0  # eight prompts fit one step: nobody waits
    for b in (16, 64, 256):
        exact = burst_wait(burst=b, input_len=1024, chunk_tokens=8192, step_s=0.06)
        assert exact < (b - 1) / 2 * 0.06 / 8


def test_run_wait_by_hand():
    """B = 16 of N = 32 in the burst, 0.9 s there, 0.05 s for the rest: (16 x 0.9 + 16 x 0.05) / 32 = 0.475 s;
    N = B: the burst alone; N far above B: close to the steady state."""
    assert run_wait(burst=16, num_prompts=32, burst_wait_s=0.9, rest_wait_s=0.05) == pytest.approx(0.475)
    assert run_wait(burst=16, num_prompts=16, burst_wait_s=0.9, rest_wait_s=0.05) == pytest.approx(0.9)
    assert run_wait(burst=16, num_prompts=1600, burst_wait_s=0.9, rest_wait_s=0.05) == pytest.approx(0.0585)
    assert run_wait(burst=64, num_prompts=16, burst_wait_s=0.9, rest_wait_s=0.05) == pytest.approx(0.9)  # B <= N


def test_request_overhead_is_the_host_path_for_each_engine():
    """One fixed host path per request (module docstring): 20 ms, the same for both engines."""
    assert REQUEST_HOST_S == 0.020
    for e in ENGINES:
        assert request_overhead_s(engine=e) == REQUEST_HOST_S
    # the docstring's worked example: 0.145 s prefill + 9.5 ms decode step + the host path = 0.1745 s
    assert 0.145 + 0.0095 + request_overhead_s(engine="sglang") == pytest.approx(0.1745)
    assert math.isfinite(request_overhead_s(engine="other"))


def _median_by_listing(b, n, s, k, t, r):
    """The N waits listed and sorted (the definition), for the cross-check below."""
    alone = -(-s // k)
    ws = sorted([max(0, -(-(j * s) // k) - alone) * t for j in range(1, min(b, n) + 1)] + [r] * (n - min(b, n)))
    return (ws[(n - 1) // 2] + ws[n // 2]) / 2


def test_run_median_wait_by_hand():
    """B = 16 of N = 32, one step per prompt, 0.15 s a step, steady wait 0.02 s: sorted, the values are 0 (k = 1),
    sixteen 0.02, then 0.15, 0.30, ...; the two middle ones (0-based 15 and 16) are both 0.02.  The mean of the same
    run is (16 x 1.125 + 16 x 0.02) / 32 = 0.5725 s.  N = B = 16: the median of 0, 0.15, ..., 2.25 is
    (1.05 + 1.20) / 2 = 1.125 s."""
    kw = {"input_len": 8192, "chunk_tokens": 8192, "step_s": 0.15, "rest_wait_s": 0.02}
    assert run_median_wait(burst=16, num_prompts=32, **kw) == pytest.approx(0.02)
    assert run_median_wait(burst=16, num_prompts=16, **kw) == pytest.approx(1.125)
    assert run_wait(burst=16, num_prompts=32, burst_wait_s=1.125, rest_wait_s=0.02) == pytest.approx(0.5725)
    # N odd, the burst the larger part (B = 4 of N = 5): 0, 0.15, 0.30, 0.45 and one 0.02 -> sorted 0, 0.02, 0.15,
    # 0.30, 0.45: the median 0.15
    assert run_median_wait(burst=4, num_prompts=5, **kw) == pytest.approx(0.15)


@pytest.mark.parametrize(
    "b,n,s,k,t,r",
    [
        (0, 7, 100, 50, 0.1, 0.3),
        (5, 5, 1024, 8192, 0.06, 0.01),
        (40, 41, 3000, 4096, 0.2, 1.0),
        (9, 100, 9000, 2048, 0.1, 0.05),
    ],
)
def test_run_median_wait_matches_the_sorted_list(b, n, s, k, t, r):
    got = run_median_wait(burst=b, num_prompts=n, input_len=s, chunk_tokens=k, step_s=t, rest_wait_s=r)
    assert got == pytest.approx(_median_by_listing(b, n, s, k, t, r))


@pytest.mark.parametrize("c", [2, 16, 64, 256])
def test_a_run_of_twice_the_concurrency_has_the_steady_state_median(c):
    """N = 2 C (the DeepSeek-V4 cookbook cells' runs) with one prompt per step: sorted, the values are w_1 = 0, the
    C steady waits, then w_2..w_C (each at least one step, above the steady wait here): the two middle ones
    (0-based C - 1 and C) are both steady waits, so the P50 is the steady state whatever the burst."""
    kw = {"input_len": 8192, "chunk_tokens": 8192, "step_s": 0.14, "rest_wait_s": 0.05}
    assert run_median_wait(burst=c, num_prompts=2 * c, **kw) == pytest.approx(0.05)
    assert run_wait(burst=c, num_prompts=2 * c, burst_wait_s=(c - 1) / 2 * 0.14, rest_wait_s=0.05) > 0.05
