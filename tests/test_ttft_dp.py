"""TTFT under SGLang's DP attention: round-robin dispatch to per-rank schedulers whose forward steps run in lockstep
(kvplan.perf.queue ``lockstep_service_s``, ``rank_clients``, ``parallel_part_s``; docs/speed.md "DP attention in
the queue").  Numbers derived by hand in the docstrings; the CLI test recomputes the steady-state TTFT from the JSON
answer's own parts."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.perf.queue import (
    closed_loop_wait,
    lockstep_service_s,
    lockstep_stall_s,
    lockstep_steady,
    parallel_part_s,
    prefill_service_s,
    rank_clients,
)


def test_lockstep_service_hand_derived() -> None:
    """alone 0.1 s, of which 0.04 s attention + overhead (0.06 s the rank's own linear / expert / collective work),
    dp = 2, 3 clients (one other client per rank), think 0.9 s: u = s / (0.9 + s), s = 0.04 + 0.06 (1 + u) ->
    s^2 + 0.74 s - 0.09 = 0 -> s = (-0.74 + sqrt(0.5476 + 0.36)) / 2 = 0.106340."""
    s = lockstep_service_s(alone_s=0.1, parallel_s=0.04, dp=2, clients=3, think_s=0.9)
    assert s == pytest.approx((-0.74 + math.sqrt(0.9076)) / 2, rel=1e-6)
    assert s == pytest.approx(0.106340, abs=1e-6)


def test_lockstep_service_limits() -> None:
    """One rank or one client: the prefill alone.  Clients far beyond the ranks' capacity: every rank prefills in
    every step, parallel + dp x own = 0.04 + 4 x 0.06 = 0.28 s (the shared cost dp x prefill_service_s)."""
    assert lockstep_service_s(alone_s=0.1, parallel_s=0.04, dp=1, clients=64, think_s=0.9) == 0.1
    assert lockstep_service_s(alone_s=0.1, parallel_s=0.04, dp=4, clients=1, think_s=0.9) == 0.1
    sat = lockstep_service_s(alone_s=0.1, parallel_s=0.04, dp=4, clients=1e6, think_s=0.9)
    assert sat == pytest.approx(0.28, rel=1e-9)
    # between the two: more clients, a longer prefill
    mid = [lockstep_service_s(alone_s=0.1, parallel_s=0.04, dp=4, clients=c, think_s=10.0) for c in (2, 8, 32)]
    assert 0.1 < mid[0] < mid[1] < mid[2] < 0.28


def test_lockstep_stall_hand_derived() -> None:
    """the 0.106340 s prefill above shares its steps with k = (0.106340 - 0.04) / 0.06 = 1.10567 prefilling ranks:
    0.106340 / 1.10567 = 0.096177 s of every rank's decode per prefill; alone (k = 1): 0.1 s; every rank (k = dp = 4,
    0.28 s): 0.07 s, the shared cost prefill_service_s = 0.06 + 0.04 / 4."""
    s = (-0.74 + math.sqrt(0.9076)) / 2
    assert lockstep_stall_s(service_s=s, alone_s=0.1, parallel_s=0.04) == pytest.approx(s / ((s - 0.04) / 0.06))
    assert lockstep_stall_s(service_s=s, alone_s=0.1, parallel_s=0.04) == pytest.approx(0.096177, abs=1e-6)
    assert lockstep_stall_s(service_s=0.1, alone_s=0.1, parallel_s=0.04) == pytest.approx(0.1)
    assert lockstep_stall_s(service_s=0.28, alone_s=0.1, parallel_s=0.04) == pytest.approx(0.07)


def test_lockstep_steady_fixed_point() -> None:
    """alone 0.1 s (0.04 s attention + overhead), dp = 2, 3 clients, base think 0.7 s: the answer satisfies
    s = 0.1 + 0.06 u, stall = s / (1 + u), u = s / (0.7 + 2 stall + s) (one other client per rank): u = 0.10653,
    s = 0.10639 s, stall = 0.09615 s.  One rank: (alone, alone)."""
    s, stall = lockstep_steady(alone_s=0.1, parallel_s=0.04, dp=2, clients=3, base_think_s=0.7)
    u = (s - 0.1) / 0.06
    assert u == pytest.approx(s / (0.7 + 2 * stall + s), rel=1e-6)
    assert stall == pytest.approx(s / (1 + u), rel=1e-9)
    assert (u, s, stall) == pytest.approx((0.10653, 0.10639, 0.09615), abs=5e-5)
    assert lockstep_steady(alone_s=0.1, parallel_s=0.04, dp=1, clients=3, base_think_s=0.7) == (0.1, 0.1)


def test_rank_clients() -> None:
    """a request and its round-robin share of the others: 1 + 255 / 4 = 64.75; one client: 1; dp = 1: C."""
    assert rank_clients(clients=256, dp=4) == 64.75
    assert rank_clients(clients=1, dp=4) == 1.0
    assert rank_clients(clients=16, dp=1) == 16.0


def test_parallel_part_and_shared_service() -> None:
    """a 100 ms step: 20 ms attention, 10 ms overhead, 70 ms experts -> 30 ms side by side; dp = 4: 70 + 30 / 4."""
    step = SimpleNamespace(
        seconds=0.1,
        parts=[
            SimpleNamespace(name="attention: gqa", bound="compute", seconds=0.02),
            SimpleNamespace(name="kernels", bound="overhead", seconds=0.01),
            SimpleNamespace(name="routed experts", bound="compute", seconds=0.07),
        ],
    )
    assert parallel_part_s(step) == pytest.approx(0.03)
    assert prefill_service_s(step, dp=4) == pytest.approx(0.0775)


_DP = [
    "speed", "--engine", "sglang", "--engine-version", "0.5.15", "--model", "deepseek-ai/DeepSeek-V4-Flash",
    "--gpu", "b200", "--tp-size", "4", "--dp-size", "4", "--enable-dp-attention",
    "--input-len", "8192", "--output-len", "1024", "--format", "json",
]  # fmt: skip


def _run(args: list[str]) -> dict:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_cli_dp_attention_ttft_recomputed() -> None:
    """C = 64 on 4 DP-attention ranks: TPOT = (1,024 decode tokens + 63 lockstep stalls) / 1,024; TTFT = the
    lockstep prefill + one decode step + the 20 ms host path + the wait of the rank's queue (16.75 clients, each the
    lockstep prefill), every figure taken from the JSON answer; C = 1: the prefill alone + one decode step + 20 ms."""
    one = _run([*_DP, "--concurrency", "1"])
    assert one["ttft_s"] == pytest.approx(one["prefill_s"] + one["decode_step_s"] + 0.020, rel=1e-9)
    d = _run([*_DP, "--concurrency", "64"])
    parts = d["prefill_total"]["parts"]
    par = sum(p["seconds"] for p in parts if p["bound"] == "overhead" or p["name"].startswith("attention"))
    per_tok = d["decode_step_s"] / d["tokens_per_step"]
    base = d["decode_step_s"] + 0.020 + 1024 * per_tok
    own, stall = lockstep_steady(alone_s=d["prefill_s"], parallel_s=par, dp=4, clients=64, base_think_s=base)
    assert d["tpot_s"] == pytest.approx((1024 * per_tok + 63 * stall) / 1024, rel=1e-6)
    think = d["decode_step_s"] + 0.020 + d["tpot_s"] * 1024
    wait = closed_loop_wait(clients=rank_clients(clients=64, dp=4), service_s=own, think_s=think)
    assert own > d["prefill_s"]
    assert d["ttft_s"] == pytest.approx(own + d["decode_step_s"] + 0.020 + wait, rel=1e-6)
    line = next(a for a in d["assumptions"] if a.startswith("queue:"))
    assert "DP attention: 4 ranks, round-robin dispatch, 16.75 clients per rank's queue" in line
    assert "lockstep_steady" in line


def test_cli_without_dp_attention_has_no_lockstep_line() -> None:
    """TP4 without DP attention: one scheduler, no per-rank queue."""
    i = _DP.index("--dp-size")
    d = _run([*_DP[:i], *_DP[i + 3 :], "--concurrency", "64"])
    assert d["dp"] == 1
    line = next(a for a in d["assumptions"] if a.startswith("queue:"))
    assert "lockstep" not in line
