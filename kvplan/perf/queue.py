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

Neither knows the benchmark's length distribution (``--random-range-ratio``), its warm-up, or arrivals at a
request rate: docs/speed.md says what that leaves out.
"""

from __future__ import annotations

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
    par = sum(float(p.seconds) for p in prefill_step.parts if p.bound == "overhead" or p.name.startswith("attention"))
    return total - par * (1.0 - 1.0 / dp)
