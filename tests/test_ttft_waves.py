"""A benchmark run step by step (kvplan.perf.queue: bench_lengths, simulate_run, run_ttfts, mean_and_median,
admission_policy) and its use in speed() (--num-prompts, --random-range-ratio), each against numbers derived by hand
in the test's docstring."""

from __future__ import annotations

import math

import pytest

from kvplan.perf.queue import (
    MAX_SIMULATED,
    MAX_STEPS,
    BenchRun,
    StepCosts,
    admission_policy,
    bench_lengths,
    mean_and_median,
    prefill_token_cap,
    run_ttfts,
    simulate_run,
)

#: prefill steps of 0.01 s + 1e-4 s per prompt token, decode steps of 0.01 s whatever the batch
COSTS = StepCosts(prefill_fixed_s=0.01, prefill_token_s=1e-4, decode_fixed_s=0.01, decode_request_s=0.0)


def _run(c: int, ins: tuple[int, ...], outs: tuple[int, ...], budget: int, policy: str) -> BenchRun:
    return BenchRun(concurrency=c, input_lens=ins, output_lens=outs, budget=budget, policy=policy)


def test_bench_lengths_by_hand():
    """L = 1,024, r = 0.8: lo = int(819.2) = 819, 206 values; n = 1: frac(0.6180) x 206 = 127.3 -> 946; n = 2:
    frac(1.2361) = 0.2361 x 206 = 48.6 -> 867.  r = 1: all 1,024.  r = 0: lo = max(0, 1) = 1, every value in
    [1, L].  The output stream uses frac(sqrt 2): n = 1: 0.4142 x 206 = 85.3 -> 904."""
    assert bench_lengths(full_len=1024, range_ratio=0.8, count=2) == (946, 867)
    assert bench_lengths(full_len=1024, range_ratio=0.8, count=1, stream="output") == (904,)
    assert bench_lengths(full_len=1024, range_ratio=1.0, count=3) == (1024, 1024, 1024)
    spread = bench_lengths(full_len=8192, range_ratio=0.0, count=1000)
    assert min(spread) >= 1 and max(spread) <= 8192
    assert sum(spread) / len(spread) == pytest.approx(4096.5, rel=0.01)  # the uniform's mean, (1 + L) / 2


def test_bench_lengths_mean_is_the_intervals():
    """Uniform over [819, 1,024]: mean (819 + 1,024) / 2 = 921.5, for both streams."""
    for stream in ("input", "output"):
        xs = bench_lengths(full_len=1024, range_ratio=0.8, count=2000, stream=stream)
        assert min(xs) == 819 and max(xs) == 1024
        assert sum(xs) / len(xs) == pytest.approx(921.5, rel=0.005)


def test_prefill_first_burst_one_prompt_per_step():
    """Two 1,000-token prompts at once, a budget of 1,000 tokens: one per step of 0.01 + 1,000 x 1e-4 = 0.11 s, so
    the first has its first token at 0.11 s and the second at 0.22 s."""
    t = simulate_run(run=_run(2, (1000, 1000), (10, 10), 1000, "prefill_first"), costs=COSTS)
    assert t == pytest.approx((0.11, 0.22))


def test_prefill_first_short_prompts_share_a_step():
    """The same with a budget of 2,000: both in one step of 0.01 + 2,000 x 1e-4 = 0.21 s, both at 0.21 s."""
    t = simulate_run(run=_run(2, (1000, 1000), (10, 10), 2000, "prefill_first"), costs=COSTS)
    assert t == pytest.approx((0.21, 0.21))


def test_sglang_second_budget_keeps_a_long_prompt_for_the_next_step():
    """Budget 2,000, max_prefill_tokens 1,500, prompts of 500 and 1,200 tokens: after the 500, 1,000 of the 1,500
    are left and the 1,200-token prompt is not fewer, so it waits: step 1 is the 500 alone (0.01 + 0.05 = 0.06 s),
    step 2 the 1,200 (0.01 + 0.12 = 0.13 s, at 0.19 s).  Without the second budget both share step 1 (0.18 s)."""
    kw = {"concurrency": 2, "input_lens": (500, 1200), "output_lens": (10, 10), "budget": 2000}
    capped = BenchRun(**kw, policy="prefill_first", max_prefill_tokens=1500)
    assert simulate_run(run=capped, costs=COSTS) == pytest.approx((0.06, 0.19))
    assert simulate_run(run=BenchRun(**kw, policy="prefill_first"), costs=COSTS) == pytest.approx((0.18, 0.18))
    assert prefill_token_cap(policy="prefill_first") == 16384 and prefill_token_cap(policy="budget_shared") is None


def test_a_long_prompt_is_cut_across_steps():
    """One 2,500-token prompt, a budget of 1,000: steps of 1,000, 1,000 and 500 tokens (0.11 + 0.11 + 0.06 s): its
    first token at 0.28 s."""
    t = simulate_run(run=_run(1, (2500,), (4,), 1000, "prefill_first"), costs=COSTS)
    assert t == pytest.approx((0.28,))


def test_prefill_first_keeps_equal_waves_together():
    """C = 2, N = 4, equal lengths (1,000 in, 3 out), budget 1,000, SGLang's prefill-first: wave one's TTFTs are 0.11
    and 0.22 s; both then decode 2 steps together, finish in the same step and send the next two at once: the
    second wave is the same burst, (0.11, 0.22) again."""
    t = simulate_run(run=_run(2, (1000,) * 4, (3,) * 4, 1000, "prefill_first"), costs=COSTS)
    assert t == pytest.approx((0.11, 0.22, 0.11, 0.22))


def test_budget_shared_dissolves_the_waves():
    """The same run under vLLM's shared budget of 1,001 tokens: step 1 (nothing running) is A's 1,000 tokens and the
    first of B's, 0.01 + 1,001 x 1e-4 = 0.1101 s; step 2 decodes A and takes B's other 999 tokens, 0.01 (the decode
    step) + 999 x 1e-4 = 0.1099 s (B at 0.22 s).  A has run 1 of its 2 decode steps, B none: one decode step (0.01 s)
    later A finishes at 0.23 s and C arrives alone; it is prefilled beside B's decode in 0.01 + 0.1 = 0.11 s (C's
    TTFT 0.11 s; B finishes then), and D, sent at that moment, the same way: (0.1101, 0.22, 0.11, 0.11)."""
    t = simulate_run(run=_run(2, (1000,) * 4, (3,) * 4, 1001, "budget_shared"), costs=COSTS)
    assert t == pytest.approx((0.1101, 0.22, 0.11, 0.11))


def test_spread_outputs_stagger_the_next_wave():
    """Prefill-first, C = 2, outputs 3 and 13 tokens (2 and 12 decode steps of 0.01 s): A and B are prefilled by
    0.22 s; A finishes 2 steps later (0.24 s) and C is prefilled alone (0.11 s: TTFT 0.11); B finishes 10 steps
    after that and D is prefilled alone too: (0.11, 0.22, 0.11, 0.11)."""
    t = simulate_run(run=_run(2, (1000,) * 4, (3, 13, 3, 3), 1000, "prefill_first"), costs=COSTS)
    assert t == pytest.approx((0.11, 0.22, 0.11, 0.11))


def test_past_the_request_cap_a_prompt_waits_for_a_slot():
    """C = 2 clients, the engine runs 1 request at once, budget 2,000: A is prefilled alone (0.11 s) although B's
    prompt would fit the step; B waits until A has decoded its 2 steps (0.13 s) and is prefilled then: its first
    token at 0.24 s."""
    run = BenchRun(
        concurrency=2, input_lens=(1000, 1000), output_lens=(3, 3), budget=2000, policy="prefill_first", max_running=1
    )
    assert simulate_run(run=run, costs=COSTS) == pytest.approx((0.11, 0.24))
    shared = BenchRun(
        concurrency=2, input_lens=(1000, 1000), output_lens=(3, 3), budget=2000, policy="budget_shared", max_running=1
    )
    assert simulate_run(run=shared, costs=COSTS) == pytest.approx((0.11, 0.24))


def test_speculative_steps_shorten_the_decode():
    """tokens_per_step 2: 9 more tokens take ceil(9 / 2) = 5 steps, not 9; C = 1 never waits whatever it decodes."""
    fast = StepCosts(
        prefill_fixed_s=0.01, prefill_token_s=1e-4, decode_fixed_s=0.01, decode_request_s=0.0, tokens_per_step=2.0
    )
    t = simulate_run(run=_run(1, (1000,) * 3, (10,) * 3, 1000, "prefill_first"), costs=fast)
    assert t == pytest.approx((0.11, 0.11, 0.11))


def test_run_ttfts_adds_the_wait_to_each_requests_own_prefill():
    """The burst of test_prefill_first_burst_one_prompt_per_step, (0.11, 0.22), the linear prefill alone 0.11 s:
    waits 0 and 0.11 s; with each prompt's own prefill 0.12 s by the step model: (0.12, 0.23)."""
    run = _run(2, (1000, 1000), (10, 10), 1000, "prefill_first")
    assert run_ttfts(run=run, costs=COSTS) == pytest.approx((0.11, 0.22))
    assert run_ttfts(run=run, costs=COSTS, own_s=(0.12, 0.12)) == pytest.approx((0.12, 0.23))


def test_mean_and_median_as_bench_serving():
    """(1, 2, 3, 10): mean 4, median (2 + 3) / 2 = 2.5 (numpy.median); odd count: the middle one."""
    assert mean_and_median((1.0, 2.0, 3.0, 10.0)) == (4.0, 2.5)
    assert mean_and_median((5.0, 1.0, 3.0)) == (3.0, 3.0)
    assert mean_and_median(()) == (0.0, 0.0)


def test_admission_policy_per_engine():
    assert admission_policy(engine="sglang") == "prefill_first"
    assert admission_policy(engine="vllm") == "budget_shared"
    assert admission_policy(engine="other") == "prefill_first"
    with pytest.raises(ValueError):
        _run(1, (1,), (1,), 1, "round_robin")


def test_long_prompts_bound_the_requests_simulated():
    """1,000,000-token prompts in 512-token steps: 1,954 + 1 steps a prompt, so 400,000 // 1,955 = 204 requests of
    the 10,000 are simulated."""
    run = _run(4, (1_000_000,) * 10_000, (2,) * 10_000, 512, "prefill_first")
    assert len(run.input_lens) == len(run.output_lens) == MAX_STEPS // (-(-1_000_000 // 512) + 1) == 204


def test_the_work_is_bounded():
    """A run of a million requests is cut at MAX_SIMULATED (the mean has settled long before)."""
    n = 1_000_000
    run = _run(64, (128,) * n, (8,) * n, 8192, "budget_shared")
    assert len(run.input_lens) == MAX_SIMULATED
    t = simulate_run(run=run, costs=COSTS)
    assert len(t) == MAX_SIMULATED and all(math.isfinite(x) and x > 0 for x in t)


# ----------------------------------------------------------------------------------------------------------------
# speed(): the run replaces the steady-state queue when --num-prompts is given
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qwen():
    from kvplan.deployment import Deployment

    return Deployment(engine="sglang", model="Qwen/Qwen3-8B", gpu="h100-sxm", input_len=8192, output_len=256)


def test_speed_run_one_wave_is_the_burst(qwen):
    """N = C = 8 prompts of 8,192 tokens, SGLang's default 8,192-token step on H100: one prompt per step, the k-th
    first token after k steps, mean (1 + ... + 8) / 8 = 4.5 prefills: own prefill + 3.5 prefills of wait (within the
    few per cent the linear step cost differs from the exact prefill), + a decode step + the host path."""
    from kvplan.perf.overhead import REQUEST_HOST_S
    from kvplan.planning.speed import SpeedInputs, speed

    r = speed(qwen, SpeedInputs(concurrency=8, num_prompts=8))
    alone = r.prefill_s + r.decode_step_s + REQUEST_HOST_S
    assert r.ttft_s == pytest.approx(alone + 3.5 * r.prefill_s, rel=0.05)
    # the median of 8 burst members: (4th + 5th) / 2 = 4.5 prefills, the mean's too
    assert r.ttft_p50_s == pytest.approx(r.ttft_s, rel=1e-6)
    assert any(a.startswith("benchmark run: 8 requests at concurrency 8") for a in r.assumptions)


def test_speed_run_equal_waves_stay_together_spread_ones_do_not(qwen):
    """SGLang, two waves of equal lengths: the second bursts like the first (the same mean); lengths spread over
    [0.8 L, L] stagger the second wave, so the run's mean falls (toward the first wave's half of the burst)."""
    from kvplan.planning.speed import SpeedInputs, speed

    one = speed(qwen, SpeedInputs(concurrency=8, num_prompts=8)).ttft_s
    two = speed(qwen, SpeedInputs(concurrency=8, num_prompts=16)).ttft_s
    spread = speed(qwen, SpeedInputs(concurrency=8, num_prompts=16, range_ratio=0.8)).ttft_s
    assert two == pytest.approx(one, rel=1e-6)
    assert spread < 0.75 * two


def test_speed_run_past_what_fits_queues_for_slots(qwen):
    """--max-running-requests 4 and 8 clients: the engine runs 4 (the concurrency as run), the other 4 wait in its
    queue for a whole request to end, so the run's mean TTFT is far above the 4-client run's, and the assumption
    line says so."""
    from dataclasses import replace

    from kvplan.planning.speed import SpeedInputs, speed

    capped = replace(qwen, max_running_requests=4)
    four = speed(capped, SpeedInputs(concurrency=4, num_prompts=8))
    eight = speed(capped, SpeedInputs(concurrency=8, num_prompts=8))
    assert eight.concurrency == 4 and eight.concurrency_asked == 8
    life = four.ttft_s + four.output_len * four.tpot_s  # one request's time in the engine
    assert eight.ttft_s > four.ttft_s + 0.4 * life
    assert any("the engine runs 4 at once, the rest wait for a slot" in a for a in eight.assumptions)


def test_speed_run_at_concurrency_one_is_the_single_request(qwen):
    from kvplan.planning.speed import SpeedInputs, speed

    assert speed(qwen, SpeedInputs(num_prompts=50)).ttft_s == pytest.approx(speed(qwen).ttft_s, rel=1e-9)


def test_speed_range_ratio_refusals(qwen):
    from kvplan.errors import InputError
    from kvplan.planning.speed import SpeedInputs, speed

    with pytest.raises(InputError) as e:
        speed(qwen, SpeedInputs(concurrency=4, range_ratio=0.8))
    assert e.value.field == "--random-range-ratio" and "--num-prompts" in str(e.value.hint)
    for bad in (-0.1, 1.5, True):
        with pytest.raises(InputError) as e:
            speed(qwen, SpeedInputs(concurrency=4, num_prompts=8, range_ratio=bad))
        assert e.value.field == "--random-range-ratio"
