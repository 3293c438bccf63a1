"""kvplan solve: inverse questions, checked by hand and against ``kvplan fit``.

Measured deployment (see tests/test_sweep.py): Qwen3-8B, free 80 GiB, weights 16 GiB, bf16 cell 147,456 B;
budget(mfs) = (64 - 80 x (1 - mfs)) GiB.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning.plan import fit
from kvplan.planning.solve import solve
from tests.test_sweep import GiB, run

M = dict(model="Qwen/Qwen3-8B", gpu="h100-sxm", free_memory=80 * GiB, weight_memory=16 * GiB)
CLI_M = ["-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--free-memory", "80GiB", "--weight-memory", "16GiB"]


def test_smallest_mem_fraction():
    # 10 x 32,768 = 327,680 tokens x 147,456 B = 45 GiB: 64 - 80 (1 - m) >= 45  <=>  m >= 0.7625 -> 0.763;
    # at 0.762: 44.96 GiB = 48,275,432,407 B // 147,456 = 327,388 tokens
    r = solve(Deployment(**M, context_length=32768, target_requests=10), "mem-fraction")
    assert r.answer == 0.763
    rejected = [c for c in r.candidates if not c.fits]
    assert rejected[-1].value == 0.762 and "the pool holds 327,388" in rejected[-1].reason
    assert all(c.value < 0.763 for c in rejected)
    # issue 11: fit's target answer is meets_target (fits = the engine starts; both do)
    assert fit(Deployment(**M, context_length=32768, target_requests=10, mem_fraction_static=0.763)).meets_target
    assert not fit(Deployment(**M, context_length=32768, target_requests=10, mem_fraction_static=0.762)).meets_target


def test_cheapest_dtype():
    # mfs 0.75: bf16 320,398 tokens -> 9 requests of 32k; fp8 640,796 -> 19
    r = solve(Deployment(**M, context_length=32768, target_requests=19, mem_fraction_static=0.75), "dtype")
    assert r.answer == "fp8_e4m3"
    assert [(c.label, c.fits) for c in r.candidates] == [("bfloat16", False), ("fp8_e4m3", True)]
    assert "(room for 9)" in r.candidates[0].reason


def test_longest_context():
    # 9 requests in 320,398 tokens: 320,398 // c >= 9  <=>  c <= 35,599
    r = solve(Deployment(**M, target_requests=9, mem_fraction_static=0.75), "context")
    assert r.answer == 35_599
    by = {c.value: c for c in r.candidates}
    assert by[35_599].fits and not by[35_600].fits
    assert "need 320,400 tokens" in by[35_600].reason


def test_most_requests():
    r = solve(Deployment(**M, context_length=32768, mem_fraction_static=0.75), "concurrency")
    assert r.answer == 9
    assert [(c.value, c.fits) for c in r.candidates] == [(9, True), (10, False)]


def test_fewest_gpus_cross_checked_with_fit():
    # 131,072 is above Qwen3-32B's 40,960: planned with the engine's long-context override (issue 11)
    base = Deployment(
        model="Qwen/Qwen3-32B",
        gpu="h100-sxm",
        context_length=131072,
        target_requests=8,
        mem_fraction_static=0.85,
        allow_long_context=True,
    )
    r = solve(base, "gpus", max_gpus=16)
    assert r.answer == 8
    for c in r.candidates:
        f = fit(Deployment(**{**base.__dict__, "tp": c.row["tp"], "dp": c.row["dp"]}))
        assert f.meets_target == c.fits
        if c.value < 8:
            assert not c.fits
    best = r.candidates[r.answer_index]
    assert (best.row["tp"], best.row["dp"]) == (8, 1)  # the largest concurrency among 8-GPU layouts


def test_no_answer_and_bad_question():
    r = solve(Deployment(**M, context_length=32768, target_requests=500), "mem-fraction")
    assert r.answer is None and not r.solved
    with pytest.raises(InputError) as e:
        solve(Deployment(**M), "cheapest")
    assert e.value.field == "QUESTION"


def test_cli_solve_json_and_exit_codes():
    r = run("solve", "context", *CLI_M, "--requests", "9", "--mem-fraction-static", "0.75", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["answer"] == 35_599
    r = run("solve", "mem-fraction", *CLI_M, "--context-length", "32k", "--requests", "500", "--format", "json")
    assert r.exit_code == 3
    for args, flag in (
        (["nonsense"], "QUESTION"),
        (["gpus", "--context-length", "abc"], "--context-length"),
        (["gpus", "--kv-cache-dtype", "fp8"], "--kv-cache-dtype"),
        (["gpus", "-g", "nosuch"], "--gpu"),
        (["gpus", "--mem-fraction-static", "nan"], "--mem-fraction-static"),
        (["gpus", "--max-gpus", "0"], "--max-gpus"),
    ):
        r = run("solve", *args)
        assert r.exit_code == 2, (args, r.output)
        assert flag in r.stderr and "Traceback" not in r.output


# issue 11: a candidate's reason is fit's target_reason (the engine starts in both rows; the 10th request misses)
GOLDEN = """\
solve concurrency: requests of 32,768 tokens at once

    candidate      pool tokens  conc.  reason
 ──────────────────────────────────────────────────────────────────────────────────────────────────
 *  9 request(s)       320,398      9  9 requests of 32,768 tokens at once: room for 9
    10 request(s)      320,398      9  10 requests of 32,768 tokens need 327,680 tokens, the pool
                                       holds 320,398 (room for 9)

answer: 9 request(s) of 32,768 tokens (pool 320,398 tokens)
"""


def test_golden_solve_table():
    from kvplan.views.console import fixed_console, recorded_text
    from kvplan.views.solve import render

    con = fixed_console()
    render(solve(Deployment(**M, context_length=32768, mem_fraction_static=0.75), "concurrency"), console=con)
    text = recorded_text(con)
    assert text == GOLDEN


# ------------------------------------------------------------------------------------------------ issue 11


def test_dtype_never_answers_a_format_the_gpu_refuses():
    # 30 requests of 32k: bf16 holds 9, fp8 19, nvfp4 (4 bits + block scales) more -- but an H100 (SM90) runs no
    # FP4 or MX KV cache in SGLang (kv_cache_hook.py), so no dtype answers there; a B200 (SM100) runs nvfp4
    base = Deployment(**M, context_length=32768, target_requests=30, mem_fraction_static=0.75)
    r = solve(base, "dtype")
    assert r.answer is None and not r.solved
    refused = {c.label: c for c in r.candidates if c.label in ("mxfp8", "nvfp4", "fp4_mx_block16")}
    assert set(refused) == {"mxfp8", "nvfp4", "fp4_mx_block16"}
    for c in refused.values():
        assert not c.fits and not c.row["fits"] and c.reason.startswith("does not fit: --kv-cache-dtype")
    assert "needs Blackwell SM100 or SM120" in refused["nvfp4"].reason
    assert solve(Deployment(**{**base.__dict__, "gpu": "b200"}), "dtype").answer == "nvfp4"


def test_context_answer_agrees_with_fit_on_the_longest_request():
    r = solve(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm"), "context")
    f = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", context_length=r.answer))
    assert r.answer == 40_960 and r.longest_request == f.max_context_length == 40_959
    assert "longest request 40,959 tokens" in r.answer_label
    assert r.to_dict()["longest_request"] == 40_959


def test_concurrency_and_gpus_take_a_workload():
    # 320,398 tokens // (8,192 + 1,024) = 34 such requests at once (page 1; the derived cap is 4,096)
    base = Deployment(**M, context_length=32768, mem_fraction_static=0.75, input_len=8192, output_len=1024)
    r = solve(base, "concurrency")
    assert r.answer == 34 and [(c.value, c.fits) for c in r.candidates] == [(34, True), (35, False)]
    assert r.target == "requests of 8,192+1,024 tokens at once"
    assert fit(Deployment(**{**base.__dict__, "target_requests": 34})).meets_target
    g = solve(
        Deployment(
            model="Qwen/Qwen3-32B",
            gpu="h100-sxm",
            context_length=32768,
            input_len=2000,
            output_len=500,
            target_requests=64,
        ),
        "gpus",
        max_gpus=8,
    )
    assert g.solved and g.target == "64 requests of 2,000+500 tokens at once"
    best = g.candidates[g.answer_index].row
    assert best["workload_concurrency"] >= 64 and best["meets_target"]
    assert all(not c.fits for c in g.candidates if c.value < g.answer)


# ------------------------------------------------------------------------------------------------ issue 16


def test_bisection_mids_cover_every_path():
    from kvplan.planning.solve import _bisection_mids

    assert _bisection_mids(2, 10, 2) == [6, 4, 8]
    assert _bisection_mids(2, 3, 5) == []
    # whatever the answers, the next 11 probes from (2, 40,960) are among the mids evaluated ahead
    mids = set(_bisection_mids(2, 40960, 11))
    lo, hi = 2, 40960
    for step in range(11):
        mid = (lo + hi) // 2
        assert mid in mids
        lo, hi = (mid, hi) if step % 3 else (lo, mid)


@pytest.mark.parametrize(
    "dep",
    [
        Deployment(**M, target_requests=9, mem_fraction_static=0.75),
        Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm", target_requests=9),
        Deployment(model="openai/gpt-oss-120b", gpu="h100-sxm", engine="vllm", tp=2, target_requests=20),
        Deployment(model="openai/gpt-oss-120b", gpu="h100-sxm", tp=2, target_requests=20),
        Deployment(
            model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm", target_requests=3, input_len=8000, output_len=2000
        ),
    ],
)
def test_context_on_the_vector_path_answers_as_probe_by_probe(dep, monkeypatch):
    """The contexts evaluated ahead in one sweep give the probes, the answer and the words of one sweep per probe."""
    from kvplan.planning import solve as SO

    def answer() -> str:  # as JSON: vLLM rows hold NaN for mem_fraction_static
        return json.dumps(solve(dep, "context").to_dict(), sort_keys=True)

    fast = answer()
    seen: list = []
    table = SO._table

    def counting(base, axes):
        seen.append(axes)
        return table(base, axes)

    monkeypatch.setattr(SO, "_table", counting)
    monkeypatch.setattr(SO, "PREFETCH_LEVELS", 0)  # nothing ahead but the lower bound: one sweep per probe
    assert answer() == fast
    probes = int(json.loads(fast)["notes"][0].split(": ")[-1].split()[0])
    # one sweep per probe (the lower bound 2 excepted: always evaluated ahead, with the upper bound's group)
    assert sum(1 for a in seen if not a) == probes - (probes > 1)
    # evaluated ahead: the upper bound, then at most two sweeps with a context axis (2,047 contexts each)
    monkeypatch.setattr(SO, "PREFETCH_LEVELS", 11)
    seen.clear()
    assert answer() == fast
    assert [bool(a) for a in seen][:1] == [False] and len(seen) <= 4


def test_smallest_gpu_memory_utilization_under_vllm():
    """vLLM searches --gpu-memory-utilization (not SGLang's flag).  Qwen3-8B bf16 on an H100 (85,024,246,333 B),
    16 GiB of weights, vLLM 0.33, 12 requests of 32,768 tokens: 2,048 blocks of 2,359,296 B each -> 24,576 blocks =
    57,982,058,496 B of KV.  Not KV at util 0.9 (tests/test_sweep_vllm.py::test_one_row_by_hand): 76,521,821,700 -
    52,139,824,644 = 24,381,997,056 B, so requested >= 82,364,055,552 = 0.96871 x the device: 0.968 gives
    ceil(82,303,470,450.3) -> 57,921,473,395 B = 24,550 blocks (11 requests), 0.969 gives 82,388,494,697 ->
    58,006,497,641 B = 24,586 blocks (12)."""
    base = Deployment(
        model="Qwen/Qwen3-8B",
        gpu="h100-sxm",
        engine="vllm",
        engine_version="0.33.0",
        weight_memory=16 * GiB,
        context_length=32768,
        target_requests=12,
    )
    r = solve(base, "mem-fraction")
    assert r.answer == 0.969 and r.answer_label.startswith("--gpu-memory-utilization 0.969 ")
    rejected = [c for c in r.candidates if not c.fits]
    assert rejected[-1].value == 0.968 and "(room for 11)" in rejected[-1].reason
    assert fit(replace(base, gpu_memory_utilization=0.969)).kv_budget_bytes == 58_006_497_641
    assert fit(replace(base, gpu_memory_utilization=0.969)).meets_target
    assert not fit(replace(base, gpu_memory_utilization=0.968)).meets_target
    assert r.to_dict()["candidates"][-1]["gpu_memory_utilization"] == 0.969
    assert any("--gpu-memory-utilization 0.92" in n for n in r.notes)  # the 0.33 default
