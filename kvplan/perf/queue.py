"""Queueing at the engine's scheduler: what a request's time to first token waits for besides its own prefill.

Both engines run a new request's prefill ahead of the running batch's decode, in token-budgeted steps, in arrival
order (FIFO):

* SGLang (v0.5.6 ``python/sglang/srt/managers/scheduler.py`` ``Scheduler.get_next_batch_to_run``): every
  iteration first tries ``get_new_batch_prefill``; when a prefill batch can be formed it runs ("Run prefill first
  if possible"), the running batch decodes only when none can.  ``managers/schedule_policy.py`` ``PrefillAdder``
  fills that batch from the waiting queue in policy order (FCFS for random prompts, no prefix sharing) until
  ``rem_chunk_tokens`` (``--chunked-prefill-size``) or the token pool's ``rem_total_tokens`` runs out; a longer
  prompt is cut into chunks.
* vLLM V1 (``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule``): one ``token_budget`` of
  ``max_num_batched_tokens`` per step, spent first on the RUNNING requests (a decode token each, or their next
  prefill chunk), then on the WAITING queue in arrival order.

So a request arriving while others wait sees, ahead of it, the prefill work of every request queued before it: the
queue is one FIFO server whose service per request is that request's prefill, and decode is what a request does
between its first token and its next arrival (a client of a closed-loop benchmark sends its next request when the
previous one ends).

Two situations, two formulas:

* steady state of C closed-loop clients (:func:`closed_loop_wait`): mean-value analysis of a closed network of
  one FIFO queue (service ``t`` per request) and one delay (the rest of the cycle, ``Z``), by Schweitzer's
  fixed point ``R = t (1 + (C - 1) / C x Q)``, ``X = C / (R + Z)``, ``Q = X R``; the wait is ``R - t``;
* the first wave of a benchmark run (:func:`first_wave_wait`): ``bench_serving --max-concurrency C --num-prompts
  N`` opens the first ``B = min(C, N)`` requests at once; the k-th of them waits for the k - 1 prefills before it,
  ``(B - 1) / 2`` batched prefills on average, and they are ``B / N`` of the run's requests.

A burst is cut into the engine's token-budgeted steps (:func:`burst_steps`, :func:`burst_wait`): the steps carry
``--chunked-prefill-size`` / ``--max-num-batched-tokens`` tokens each, taken from the waiting requests in arrival
order (SGLang ``PrefillAdder`` packs several short prompts into one step and cuts a long one across steps; vLLM
spends the step's budget on the waiting queue the same way), and a request's first token comes out of the step
that completes its prompt (SGLang 0.5.23 ``scheduler_components/batch_result_processor.py``
``process_batch_result_prefill`` streams it at the end of that step; vLLM V1 samples it in the step that schedules
the prompt's last token).  So the k-th request of the burst has its first token after ``ceil(k S / K)`` steps of K
tokens.  :func:`run_wait` weighs a run's first wave against the rest of its requests.

With SGLang's DP attention the steady state is per rank (:func:`lockstep_steady`: round-robin dispatch to one
scheduler per rank, :func:`rank_clients` clients in each rank's queue, and forward steps in lockstep across the
ranks, so a prefill is slowed by the ranks prefilling beside it, :func:`lockstep_service_s`, and every rank's decode
waits for each step that holds one, :func:`lockstep_stall_s`).

A whole benchmark run, wave after wave, is :func:`simulate_run`: the client's closed loop, the engine's admission
per step (SGLang prefill first, vLLM one shared token budget), its request cap and the random data set's lengths
(:func:`bench_lengths`); ``kvplan speed --num-prompts`` uses it (the burst formulas above remain as the closed
forms of one wave).

The benchmark client (SGLang 0.5.23 ``benchmark/serving.py``; vLLM ``benchmarks/serve.py`` the same):
``--request-rate inf`` yields every request at once and ``--max-concurrency C`` is an ``asyncio.Semaphore(C)``, so
the first C requests are sent together; TTFT runs from ``time.perf_counter()`` before the POST to the first streamed
chunk, and the reported TTFT is the mean over every request of the run (``calculate_metrics``: ``np.mean(ttfts)``)
or its median (``median_ttft_ms``, the P50 some publications quote: :func:`run_median_wait`).
Neither knows the benchmark's length distribution (``--random-range-ratio``: SGLang 0.5.23
``benchmark/datasets/common.py`` ``compute_random_lens`` draws lengths uniform in ``[max(1, L x ratio), L]``,
default ratio 0.0), its warm-up, or arrivals at a finite request rate: docs/speed.md says what that leaves out.
"""

from __future__ import annotations

import heapq
from typing import Any

#: Schweitzer iterations: the fixed point is reached to < 1e-6 relative well before this for every C tested
_ITERATIONS = 200


def closed_loop_wait(*, clients: Any, service_s: Any, think_s: Any) -> Any:
    """Mean time a request waits in the prefill queue (its own prefill excluded) with ``clients`` closed-loop
    clients, each needing ``service_s`` of prefill (FIFO, one server) and then ``think_s`` elsewhere (its decode
    and the host work) before its next request.

    Schweitzer's approximate mean-value analysis: ``Q = 0`` to start, then repeatedly ``R = t (1 + (C - 1) / C x
    Q)``, ``X = C / (R + Z)``, ``Q = X x R``; the answer is ``R - t``.  One client never waits.

    Example: C = 2, t = 0.1 s, Z = 0.9 s.  At the fixed point Q = 2 R / (R + 0.9) and R = 0.1 (1 + Q / 2), so
    R (R + 0.9) = 0.1 (R + 0.9) + 0.1 R, i.e. R^2 + 0.7 R - 0.09 = 0: R = (-0.7 + sqrt(0.85)) / 2 = 0.110977 s,
    a wait of 11.0 ms.
    """
    c = clients
    share = (c - 1) / c
    q = 0.0 * c
    r = service_s + 0.0 * c
    for _ in range(_ITERATIONS):
        r = service_s * (1.0 + share * q)
        x = c / (r + think_s)
        q = x * r
    return r - service_s


def first_wave_wait(*, burst: int, num_prompts: int, per_request_s: float) -> float:
    """Mean wait over a benchmark run's ``num_prompts`` requests for the first wave's ``burst`` requests that
    arrive at once and are prefilled in arrival order, ``per_request_s`` of batched prefill each:
    ``B / N x (B - 1) / 2 x t``.

    Example: B = 16, N = 32, t = 0.12 s: 16 / 32 x 7.5 x 0.12 = 0.45 s.
    """
    if burst <= 1 or num_prompts <= 0:
        return 0.0
    return burst / num_prompts * (burst - 1) / 2 * per_request_s


def prefill_service_s(prefill_step: Any, *, dp: int) -> float:
    """Server time one request's prefill takes when ``dp`` attention-DP ranks prefill side by side: the step's
    attention and overhead parts (each rank runs its own requests' attention, and the ranks' steps run in lockstep)
    divided by ``dp``, the rest (linear layers, experts, activations, collectives: they already span every GPU,
    and a DP gather carries every rank's tokens) whole.  ``prefill_step``: a :class:`kvplan.perf.schedule.Step`.

    Example: a 100 ms prefill of which 20 ms attention and 10 ms overhead, dp = 4: 70 + 30 / 4 = 77.5 ms; dp = 1:
    100 ms.
    """
    total = float(prefill_step.seconds)
    if dp <= 1:
        return total
    return total - parallel_part_s(prefill_step) * (1.0 - 1.0 / dp)


def parallel_part_s(prefill_step: Any) -> float:
    """The parts of a prefill step that each attention-DP rank runs on its own tokens side by side: the attention
    terms and the per-step overhead (:func:`prefill_service_s`, :func:`lockstep_service_s`).  Example: a 100 ms
    step of which 20 ms attention and 10 ms overhead: 30 ms."""
    return sum(float(p.seconds) for p in prefill_step.parts if p.bound == "overhead" or p.name.startswith("attention"))


def lockstep_service_s(*, alone_s: float, parallel_s: float, dp: int, clients: float, think_s: float) -> float:
    """Mean time one request's prefill takes on its attention-DP rank in the steady state of ``clients`` closed-loop
    clients, when the ``dp`` ranks' forward steps run in lockstep (SGLang with ``--enable-dp-attention``).

    What the engine does (SGLang 0.5.15): ``managers/data_parallel_controller.py`` sends each new request to the next
    rank in turn (``round_robin_scheduler``; ``server_args.py`` ``_handle_load_balance_method``: "auto" is
    ``round_robin`` without PD); every rank runs its own scheduler, prefill first, in chunks of
    ``--chunked-prefill-size // dp`` (``server_args.py``); and every forward is synchronised across the ranks
    (``managers/scheduler_components/dp_attn.py`` ``prepare_mlp_sync_batch_raw``: the ranks all-gather their token
    counts, a rank with nothing to run runs an idle batch, CUDA graphs only when every rank can): the attention runs
    on each rank's own tokens side by side, the linear layers, experts and collectives carry every rank's tokens in
    one step.  So a rank's prefill step costs ``parallel_s`` (attention and step overhead, ``alone_s`` less the
    rest) plus ``alone_s - parallel_s`` for its own tokens and as much again for each other rank prefilling in the
    same step.  The other ``clients - 1`` requests spread over the ``dp`` ranks round robin, so each other rank is
    prefilling a fraction ``u = min(1, (clients - 1) / dp x s / (think_s + s))`` of the time, and

        s = parallel_s + (alone_s - parallel_s) x (1 + (dp - 1) x u)

    solved by iteration from ``s = alone_s`` (both sides rise together; the iteration climbs to the least fixed
    point, at most ``parallel_s + dp x (alone_s - parallel_s)``, every rank prefilling at once).  One client or one
    rank: ``alone_s``.

    Example: ``alone_s`` 0.1 s of which 0.04 s attention and overhead, dp = 2, 3 clients, ``think_s`` 0.9 s: u = s /
    (0.9 + s), so s = 0.1 + 0.06 s / (0.9 + s), s^2 + 0.74 s - 0.09 = 0, s = (-0.74 + sqrt(0.9076)) / 2 = 0.10634 s.
    """
    alone = float(alone_s)
    if dp <= 1 or clients <= 1:
        return alone
    par = min(max(float(parallel_s), 0.0), alone)
    own = alone - par
    others = (float(clients) - 1.0) / dp
    s = alone
    for _ in range(_ITERATIONS):
        u = min(1.0, others * s / (float(think_s) + s)) if think_s + s > 0 else 1.0
        s = par + own * (1.0 + (dp - 1) * u)
    return s


def lockstep_stall_s(*, service_s: float, alone_s: float, parallel_s: float) -> float:
    """Decode time every attention-DP rank loses to one other request's prefill when the ranks' steps run in
    lockstep (:func:`lockstep_service_s`: SGLang 0.5.15 ``prepare_mlp_sync_batch_raw`` puts a rank with decode work
    and a rank with prefill work into one synchronised forward, so the decode step lasts as long as the prefill
    step).  A prefill of ``service_s`` shares its steps with ``k = (service_s - parallel_s) / (alone_s -
    parallel_s)`` prefilling ranks on average (``k = 1 + (dp - 1) u`` there), and a step shared by k prefills
    stalls the decode once for all of them: ``service_s / k`` per prefill.  Between ``prefill_service_s`` (every
    rank prefilling in every step: the shared cost) and ``alone_s`` (no two prefills at once).

    Example: the 0.10634 s prefill of :func:`lockstep_service_s`'s example (alone 0.1 s, 0.04 s attention and
    overhead): k = 0.06634 / 0.06 = 1.10567, a stall of 0.10634 / 1.10567 = 0.096177 s.
    """
    own = float(alone_s) - float(parallel_s)
    if own <= 0.0:
        return float(service_s)
    k = max((float(service_s) - float(parallel_s)) / own, 1.0)
    return float(service_s) / k


def lockstep_steady(
    *, alone_s: float, parallel_s: float, dp: int, clients: float, base_think_s: float
) -> tuple[float, float]:
    """(prefill time, decode stall per other request) of one request in the steady state of ``clients``
    closed-loop clients on ``dp`` lockstep attention-DP ranks: :func:`lockstep_service_s` with its think time the
    rest of the cycle, ``base_think_s`` (the request's own decode, host path, one decode step) plus the stalls of the
    other ``clients - 1`` prefills (:func:`lockstep_stall_s`), solved together (damped iteration on u, the other
    ranks' prefill share).

    Example (tests/test_ttft_dp.py checks the fixed point): alone 0.1 s of which 0.04 s attention and overhead,
    dp = 2, 3 clients, base think 0.7 s: s = 0.1 + 0.06 u, stall = s / (1 + u), think = 0.7 + 2 stall, u = s /
    (think + s): u = 0.10653, s = 0.10639 s, stall = 0.10639 / 1.10653 = 0.09615 s, think 0.89230 s.  One rank
    or one client: (alone_s, alone_s).
    """
    alone = float(alone_s)
    if dp <= 1 or clients <= 1:
        return alone, alone
    par = min(max(float(parallel_s), 0.0), alone)
    own = alone - par
    others = (float(clients) - 1.0) / dp
    u = 0.0
    s, stall = alone, alone
    for _ in range(_ITERATIONS):
        s = par + own * (1.0 + (dp - 1) * u)
        stall = lockstep_stall_s(service_s=s, alone_s=alone, parallel_s=par)
        think = float(base_think_s) + (float(clients) - 1.0) * stall
        u = 0.5 * u + 0.5 * min(1.0, others * s / (think + s))
    return s, stall


def rank_clients(*, clients: float, dp: int) -> float:
    """The closed-loop clients one attention-DP rank's prefill queue sees (round-robin dispatch,
    :func:`lockstep_service_s`): a request and its share of the other ``clients - 1``, ``1 + (clients - 1) / dp``.
    Example: 256 clients, dp = 4: 64.75; one client: 1."""
    return 1.0 + (float(clients) - 1.0) / max(int(dp), 1)


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """``sum(floor((a k + b) / m) for k in range(n))`` for non-negative ints, m > 0, in O(log) steps (the classic
    Euclid-like reduction), so a burst of a million requests costs nothing.

    Example: n = 4, m = 3, a = 2, b = 1: floor(1/3) + floor(3/3) + floor(5/3) + floor(7/3) = 0 + 1 + 1 + 2 = 4.
    """
    total = 0
    while True:
        if a >= m:
            total += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return total
        n, b, m, a = y_max // m, y_max % m, a, m


def burst_steps(*, burst: int, input_len: int, chunk_tokens: int) -> float:
    """Mean number of token-budgeted prefill steps until a request of a burst has its first token: ``burst``
    requests of ``input_len`` tokens arrive at once and are prefilled in arrival order, ``chunk_tokens`` per step
    (several short prompts share a step, a long one spans steps), so the k-th (1-based) completes in step
    ``ceil(k S / K)``; the answer is ``mean over k = 1..B of ceil(k S / K)`` (exact integer arithmetic).

    Examples: B = 16, S = 1,024, K = 8,192: eight prompts per step, steps 1 (k = 1..8) and 2 (k = 9..16), mean 1.5.
    B = 4, S = K = 8,192: (1 + 2 + 3 + 4) / 4 = 2.5.  B = 3, S = 3,000, K = 4,096: ceil(3,000 / 4,096) = 1,
    ceil(6,000 / 4,096) = 2, ceil(9,000 / 4,096) = 3: mean 2.
    """
    b, s, k = int(burst), int(input_len), int(chunk_tokens)
    if b <= 0 or s <= 0 or k <= 0:
        return 0.0
    # ceil(j s / k) = floor((j s + k - 1) / k); j = 1..B is k' = j - 1 = 0..B-1 with b' = s + k - 1
    return _floor_sum(b, k, s, s + k - 1) / b


def burst_wait(*, burst: int, input_len: int, chunk_tokens: int, step_s: float) -> float:
    """Mean time a request of a burst waits for the others' prefill, beyond its own prefill alone: ``(burst_steps
    - ceil(S / K)) x step_s``, ``step_s`` the time of one full step of K prompt tokens (the burst's steps are full
    but for the last).

    Examples: B = 16, S = 1,024, K = 8,192, a 60 ms step: (1.5 - 1) x 60 = 30 ms (the old per-request estimate,
    ``(B - 1) / 2`` prefills of a request's eighth of a step, gave 7.5 / 8 x 60 = 56 ms: it ignored that eight
    prompts finish together at the end of the same step).  B = 4, S = K = 8,192, a 150 ms step: (2.5 - 1) x 150 =
    225 ms = ``(B - 1) / 2`` prefills, as it must be when each prompt is one step.
    """
    alone = -(-int(input_len) // max(int(chunk_tokens), 1)) if input_len > 0 else 0
    extra = burst_steps(burst=burst, input_len=input_len, chunk_tokens=chunk_tokens) - alone
    return max(0.0, extra) * float(step_s)


def run_wait(*, burst: int, num_prompts: int, burst_wait_s: float, rest_wait_s: float) -> float:
    """Mean wait over a benchmark run of ``num_prompts`` requests whose first ``burst`` (= min(C, N)) arrive at
    once: ``(B x burst_wait + (N - B) x rest_wait) / N`` -- the first wave waits for its own burst, every later
    request for what the steady state gives it (``rest_wait_s``: :func:`closed_loop_wait`).

    Example: B = 16, N = 32, a burst wait of 0.9 s and a steady wait of 0.05 s: (16 x 0.9 + 16 x 0.05) / 32 =
    0.475 s.  N = B (one wave): the burst wait alone.
    """
    n = int(num_prompts)
    if n <= 0:
        return float(rest_wait_s)
    b = max(0, min(int(burst), n))
    return (b * float(burst_wait_s) + (n - b) * float(rest_wait_s)) / n


def run_median_wait(
    *, burst: int, num_prompts: int, input_len: int, chunk_tokens: int, step_s: float, rest_wait_s: float
) -> float:
    """Median wait over a benchmark run (the P50 a benchmark reports beside the mean): the first ``burst`` requests
    wait ``w_k = (ceil(k S / K) - ceil(S / K)) x step_s`` (:func:`burst_wait`'s terms, k = 1..B, non-decreasing),
    the other ``N - B`` the steady-state ``rest_wait_s``; the median of those N values (the mean of the two middle
    ones when N is even, as ``numpy.median``).  Exact without listing them: the ``w_k`` below ``rest_wait_s`` come
    first, then the N - B steady values, then the rest of the ``w_k``.

    Example: B = 16, N = 32, S = K (one step per prompt), 0.15 s a step, a steady wait of 0.02 s: the w_k are 0,
    0.15, ..., 2.25 s; sorted, the 32 values are 0 (k = 1), sixteen 0.02, then 0.15, 0.30, ...; the 16th and 17th
    (0-based 15 and 16) are 0.02 and 0.02: a median of 0.02 s, where the mean is (16 x 1.125 + 16 x 0.02) / 32 =
    0.5725 s.  With N = B = 16: the median of 0, 0.15, ..., 2.25 is (1.05 + 1.20) / 2 = 1.125 s.
    """
    n = int(num_prompts)
    b = max(0, min(int(burst), n))
    if n <= 0:
        return float(rest_wait_s)
    s, k = int(input_len), max(int(chunk_tokens), 1)
    alone = -(-s // k) if s > 0 else 0

    def w(j: int) -> float:  # 1-based member of the burst
        return max(0, -(-(j * s) // k) - alone) * float(step_s)

    lo, hi = 0, b  # m = how many w_k (k = 1..B) are below rest_wait_s (they are non-decreasing in k)
    while lo < hi:
        mid = (lo + hi) // 2
        if w(mid + 1) < rest_wait_s:
            lo = mid + 1
        else:
            hi = mid
    m, rest = lo, n - b

    def at(i: int) -> float:  # the i-th (0-based) of the N values in sorted order
        if i < m:
            return w(i + 1)
        if i < m + rest:
            return float(rest_wait_s)
        return w(i - rest + 1)

    return (at((n - 1) // 2) + at(n // 2)) / 2


# --------------------------------------------------------------------------------------------------------------------
# A benchmark run, step by step: the client's waves and the engine's token-budgeted prefill admission
# --------------------------------------------------------------------------------------------------------------------

#: the engines' prefill admission policies :func:`simulate_run` knows
POLICIES = ("prefill_first", "budget_shared")

#: each engine's policy (:func:`simulate_run` gives the engine code behind each)
_ADMISSION = {"sglang": "prefill_first", "vllm": "budget_shared"}

#: SGLang's ``--max-prefill-tokens`` default (0.5.9-0.5.23 ``server_args.py`` ``max_prefill_tokens: int = 16384``):
#: ``PrefillAdder`` starts each step with ``rem_input_tokens`` of it and lets a prompt join a step that already holds
#: one only while the prompt's remaining tokens are fewer than what is left (``add_one_req``: ``input_tokens >=
#: rem_input_tokens and len(can_run_list) != 0`` -> no more this step); vLLM has no such second budget
SGLANG_MAX_PREFILL_TOKENS = 16384
_PREFILL_TOKEN_CAP = {"prefill_first": SGLANG_MAX_PREFILL_TOKENS, "budget_shared": None}


def prefill_token_cap(*, policy: str) -> int | None:
    """The per-step cap on prompt tokens a further prompt may join under (:data:`SGLANG_MAX_PREFILL_TOKENS` for
    ``prefill_first``, None for ``budget_shared``).  Example: ``prefill_token_cap(policy="prefill_first")`` ->
    16384."""
    return _PREFILL_TOKEN_CAP.get(policy)


#: where each policy is in the engines' code, for the assumption line of a run
POLICY_SOURCES = {
    "prefill_first": "SGLang managers/scheduler.py get_next_batch_to_run: prefill first, decode only when no "
    "prefill batch forms; schedule_policy.py PrefillAdder: FCFS up to --chunked-prefill-size tokens a step",
    "budget_shared": "vLLM v1/core/sched/scheduler.py Scheduler.schedule: --max-num-batched-tokens a step, the "
    "running requests' decode tokens first, then the waiting prompts in arrival order (chunked)",
}


def admission_policy(*, engine: str) -> str:
    """How ``engine`` admits waiting prompts into a step: SGLang ``prefill_first``, vLLM V1 ``budget_shared``
    (:func:`simulate_run`); another engine is taken as prefill-first.  Example: ``admission_policy(engine="vllm")``
    -> ``"budget_shared"``."""
    return _ADMISSION.get(str(engine).lower(), "prefill_first")


#: at most this many requests of a run are simulated (the run's mean has settled long before; bounds the work)
MAX_SIMULATED = 20_000
#: and at most this many prefill steps in all (requests x steps per prompt): a run of 1M-token prompts in 512-token
#: steps simulates its first ~200 requests, not 20,000 x 2,048 steps
MAX_STEPS = 400_000

#: low-discrepancy multipliers for the prompt and the output lengths (the fractional parts of the golden ratio and
#: of sqrt(2)): two independent, evenly spread sequences in place of the client's two random draws
_ALPHA_IN = 0.6180339887498949
_ALPHA_OUT = 0.41421356237309515


def bench_lengths(*, full_len: int, range_ratio: float, count: int, stream: str = "input") -> tuple[int, ...]:
    """The ``count`` lengths a benchmark client's random data set draws for ``--random-input-len`` /
    ``--random-output-len`` L at ``--random-range-ratio`` r: uniform over the integers ``[max(1, int(L r)), L]``
    (SGLang 0.5.15 ``benchmark/datasets/common.py`` ``compute_random_lens``: ``np.random.randint(max(int(L r), 1),
    L + 1)``; InferenceX's ``utils/bench_serving/benchmark_serving.py`` draws the same interval), so r = 1 is a
    fixed length and SGLang's default r = 0 is uniform over [1, L].  Deterministic: the n-th length is ``lo +
    floor(frac(n a) x (L - lo + 1))`` with a = frac(golden ratio) for prompts and frac(sqrt 2) for outputs (two
    evenly spread, mutually independent sequences with the distribution's mean and spread, in place of the
    client's seeded draws).

    Example: L = 1,024, r = 0.8: lo = 819, 206 values; n = 1: frac(0.618) x 206 = 127.3 -> 819 + 127 = 946.
    r = 1: every length is 1,024.
    """
    full = int(full_len)
    if full <= 0 or count <= 0:
        return (max(full, 0),) * max(int(count), 0)
    lo = max(int(full * float(range_ratio)), 1)
    if lo >= full:
        return (full,) * int(count)
    span = full - lo + 1
    a = _ALPHA_IN if stream == "input" else _ALPHA_OUT
    return tuple(lo + min(span - 1, int(((n * a) % 1.0) * span)) for n in range(1, int(count) + 1))


class StepCosts:
    """The engine step times a run is made of, from the step model (:mod:`kvplan.perf.schedule`): a prefill step
    of n prompt tokens takes ``prefill_fixed_s + n x prefill_token_s``; a decode step of b requests
    ``decode_fixed_s + b x decode_request_s``, each carrying ``tokens_per_step`` output tokens per request (the
    speculative accept length, 1 without).  Plain slots: built once per speed answer."""

    __slots__ = ("decode_fixed_s", "decode_request_s", "prefill_fixed_s", "prefill_token_s", "tokens_per_step")

    def __init__(
        self,
        *,
        prefill_fixed_s: float,
        prefill_token_s: float,
        decode_fixed_s: float,
        decode_request_s: float,
        tokens_per_step: float = 1.0,
    ) -> None:
        self.prefill_fixed_s = max(float(prefill_fixed_s), 0.0)
        self.prefill_token_s = max(float(prefill_token_s), 0.0)
        self.decode_fixed_s = max(float(decode_fixed_s), 0.0)
        self.decode_request_s = max(float(decode_request_s), 0.0)
        self.tokens_per_step = max(float(tokens_per_step), 1.0)

    def decode_s(self, batch: int) -> float:
        return self.decode_fixed_s + batch * self.decode_request_s

    def alone_s(self, *, input_len: int, budget: int) -> float:
        """One prompt's prefill on an idle server: ``ceil(S / K)`` steps, ``S`` tokens."""
        steps = -(-int(input_len) // max(int(budget), 1)) if input_len > 0 else 0
        return steps * self.prefill_fixed_s + int(input_len) * self.prefill_token_s


class BenchRun:
    """A closed-loop benchmark run (SGLang ``benchmark/serving.py`` / InferenceX ``benchmark_serving.py`` with
    ``--request-rate inf --max-concurrency C --num-prompts N --ignore-eos``): N requests, at most C in flight; the
    first C are sent at once and each completion sends the next.  ``input_lens`` / ``output_lens``: per request in
    send order (:func:`bench_lengths`); ``budget``: prompt tokens per engine step (``--chunked-prefill-size`` /
    ``--max-num-batched-tokens``); ``policy``: one of :data:`POLICIES`; ``max_running``: the engine's cap on
    requests it runs at once (SGLang ``get_num_allocatable_reqs`` / ``--max-running-requests`` and the KV pool, vLLM
    ``--max-num-seqs`` and the KV pool: kvplan's capacity answer), None for none below C; ``max_prefill_tokens``:
    SGLang's second per-step budget (:func:`prefill_token_cap`), a prompt joins a step that holds one only while
    its remaining tokens are fewer than what is left of it.  Only the first requests
    are kept when the
    run is longer than :data:`MAX_SIMULATED` requests or :data:`MAX_STEPS` prefill steps (``len(input_lens)`` says
    how many)."""

    __slots__ = ("budget", "concurrency", "input_lens", "max_prefill_tokens", "max_running", "output_lens", "policy")

    def __init__(
        self,
        *,
        concurrency: int,
        input_lens: tuple[int, ...],
        output_lens: tuple[int, ...],
        budget: int,
        policy: str,
        max_running: int | None = None,
        max_prefill_tokens: int | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        if len(input_lens) != len(output_lens):
            raise ValueError("one output length per prompt")
        self.concurrency = max(int(concurrency), 1)
        self.budget = max(int(budget), 1)
        per_prompt = -(-max(input_lens, default=1) // self.budget) + 1 if input_lens else 1
        keep = max(1, min(MAX_SIMULATED, MAX_STEPS // per_prompt))
        self.input_lens = tuple(int(x) for x in input_lens[:keep])
        self.output_lens = tuple(int(x) for x in output_lens[:keep])
        self.policy = policy
        self.max_running = None if max_running is None else max(int(max_running), 1)
        self.max_prefill_tokens = None if max_prefill_tokens is None else max(int(max_prefill_tokens), 1)


def simulate_run(*, run: BenchRun, costs: StepCosts) -> tuple[float, ...]:
    """Each request's time from its arrival at the scheduler to its first token, in send order, over a
    :class:`BenchRun` on an engine whose steps cost :class:`StepCosts`.  The mechanism, engine by engine:

    * ``prefill_first`` (SGLang 0.5.9-0.5.23 ``managers/scheduler.py`` ``get_next_batch_to_run``: "Run prefill
      first if possible"; ``managers/schedule_policy.py`` ``PrefillAdder.add_one_req``): while a request waits,
      every step is a prefill step; it takes prompt tokens first come first served up to the budget
      (``rem_chunk_tokens`` = ``--chunked-prefill-size``: whole prompts while they fit, then the head of the next
      cut to the rest, ``new_chunked_req``), and the running batch decodes only in steps with nothing to prefill
      (mixed chunks are off by default);
    * ``budget_shared`` (vLLM V1 ``v1/core/sched/scheduler.py`` ``Scheduler.schedule``): every step spends
      ``max_num_batched_tokens`` on the running requests first (one decode token each) and the rest on the waiting
      queue in arrival order (chunked prefill, one partial prompt at a time); the step costs the decode step of
      its batch plus its prompt tokens.

    A request starts its prefill only while fewer than ``max_running`` requests hold a slot (SGLang's scheduler
    marks the batch full and forms no prefill batch, vLLM schedules no new request past ``max_num_seqs``): past the
    cap a request waits in the engine's queue for a running one to end, and that wait is in its TTFT.
    A request's first token comes out of the step that schedules its prompt's last token (both engines sample
    it there); it then decodes ``ceil((output - 1) / tokens_per_step)`` steps and completes, and the client sends
    its next request at once.  Steps with nothing to prefill are skipped to the next completion in one stride
    (exact: the batch does not change in between), so the work is O(N x (prompt / budget + log C)).

    Examples (hand-derived in tests/test_ttft_waves.py): two prompts of 1,000 tokens at once, a budget of 1,000,
    prefill steps of 0.01 s + 1e-4 s per token (0.11 s), ``prefill_first``: (0.11, 0.22).  The same with a budget
    of 2,000: both in one step of 0.21 s: (0.21, 0.21).
    """
    n = len(run.input_lens)
    c = min(run.concurrency, n) if n else 0
    first = [0.0] * n
    arrive = [0.0] * n
    rem = list(run.input_lens)
    tps = costs.tokens_per_step
    steps_left = [int(-(-(o - 1) // tps)) if o > 1 else 0 for o in run.output_lens]
    waiting: list[int] = []  # FIFO of request indices (head at w_head)
    w_head = 0
    running: list[tuple[int, int]] = []  # heap of (global decode step at which it completes, index)
    g = 0  # decode steps run so far
    t = 0.0
    sent = done = 0
    in_flight = 0
    shared = run.policy == "budget_shared"

    def send(now: float) -> None:
        nonlocal sent, in_flight
        while sent < n and in_flight < c:
            arrive[sent] = now
            waiting.append(sent)
            sent += 1
            in_flight += 1

    def retire(now: float) -> None:
        nonlocal done, in_flight
        while running and running[0][0] <= g:
            heapq.heappop(running)
            done += 1
            in_flight -= 1
        send(now)

    send(0.0)
    cap = run.max_running if run.max_running is not None else n + 1
    cap_tokens = run.max_prefill_tokens
    full = run.input_lens

    def startable(i: int, held: int) -> bool:  # a started prompt holds its slot already; a new one needs a free slot
        return rem[i] < full[i] or held < cap

    while done < n:
        batch = len(running)
        room = run.budget - (batch if shared else 0)
        if w_head < len(waiting) and room > 0 and startable(waiting[w_head], batch):
            tokens = 0
            finished: list[int] = []
            while w_head < len(waiting) and room > 0 and startable(waiting[w_head], batch + len(finished)):
                i = waiting[w_head]
                if tokens and cap_tokens is not None and rem[i] >= cap_tokens - tokens:
                    break  # SGLang: this prompt waits for the next step
                take = min(rem[i], room)
                rem[i] -= take
                room -= take
                tokens += take
                if rem[i] > 0:
                    break  # the head is cut: the step is full
                finished.append(i)
                w_head += 1
            if shared and batch:
                t += costs.decode_s(batch) + tokens * costs.prefill_token_s
                g += 1
            else:
                t += costs.prefill_fixed_s + tokens * costs.prefill_token_s
            for i in finished:
                first[i] = t
                heapq.heappush(running, (g + steps_left[i], i))
            retire(t)
        elif running:
            nxt = running[0][0]
            t += max(nxt - g, 0) * costs.decode_s(batch)
            g = max(g, nxt)
            retire(t)
        else:  # pragma: no cover - every sent request is waiting or running
            break
    return tuple(first[i] - arrive[i] for i in range(n))


def run_ttfts(*, run: BenchRun, costs: StepCosts, own_s: tuple[float, ...] | None = None) -> tuple[float, ...]:
    """Each request's GPU-side time to first token over a run: its own prefill alone (``own_s``, per request: the
    step model's exact prefill; default the linear :meth:`StepCosts.alone_s`) plus what it waited for the others
    (:func:`simulate_run` less its prefill alone).

    Example: the two-prompt burst of :func:`simulate_run` (0.11, 0.22) with each prompt's own prefill 0.12 s by
    the step model: waits 0 and 0.11 s, TTFTs (0.12, 0.23).
    """
    sim = simulate_run(run=run, costs=costs)
    out = []
    for k, (s, x) in enumerate(zip(sim, run.input_lens, strict=True)):
        alone = costs.alone_s(input_len=x, budget=run.budget)
        own = own_s[k] if own_s is not None else alone
        out.append(own + max(s - alone, 0.0))
    return tuple(out)


def mean_and_median(values: tuple[float, ...]) -> tuple[float, float]:
    """(mean, median) of the values, the median as ``numpy.median`` (the mean of the two middle ones when the count
    is even): how bench_serving reports ``mean_ttft_ms`` and ``median_ttft_ms``.  Example: (1, 2, 3, 10) ->
    (4.0, 2.5)."""
    if not values:
        return 0.0, 0.0
    s = sorted(values)
    m = len(s)
    return sum(s) / m, (s[(m - 1) // 2] + s[m // 2]) / 2
