"""``starts`` beside ``fits`` (issue 24 item 5): the engine starts with the configuration / it also serves one
full-context request; engine refusals are verdicts, never exit 2; an impossible deployment advises a GPU count;
``check`` plan entries take ``require = "fits" | "starts"``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.planning.plan import fit
from kvplan.planning.verdict import Facts, judge, starts_text

QWEN32 = {"model": "Qwen/Qwen3-32B", "gpu": "h100-sxm"}
# Qwen3-32B: 64 layers x 8 KV heads x head_dim 128 x (K + V) x 2 bytes (bf16)
QWEN32_CELL = 64 * 8 * 128 * 2 * 2


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout


def test_qwen3_32b_one_h100_sglang_starts_but_does_not_fit():
    r = fit(Deployment(**QWEN32))
    assert QWEN32_CELL == 262_144 == r.kv_bytes_per_token
    # the pool is the budget in whole cells (page size 1), and SGLang caps a request at the pool less one token
    assert r.kv_pool_tokens == r.kv_budget_bytes // QWEN32_CELL
    assert r.max_context_length == r.kv_pool_tokens - 1 < r.context_length == 40_960
    assert r.starts is True and r.fits is False
    assert r.reasons == [f"one 40,960-token request needs 40,960 tokens, the pool holds {r.kv_pool_tokens:,}"]


def test_qwen3_32b_first_screen_says_the_longest_request():
    code, out = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "table")
    assert code == 0
    r = fit(Deployment(**QWEN32))
    line = starts_text(r.max_context_length)
    # 17,377 when issue 24 was written; 17,198 since SGLang's weight figure carries the caching-allocator reserve
    # and its free-at-start the per-GPU CUDA context (8 Dec 2026): the pool, less one token, either way
    assert line == "starts; requests longer than 17,198 tokens are refused"
    assert r.max_context_length == r.kv_pool_tokens - 1 == 17_198
    first = " ".join(out.splitlines()[:8]).replace("\n  ", " ")
    assert "requests longer than 17,198" in first and "tokens are refused" in first
    code, out = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "json")
    d = json.loads(out)
    assert (d["starts"], d["fits"], d["max_context_length"]) == (True, False, r.max_context_length)


def test_check_exits_3_when_it_starts_but_does_not_fit():
    code, _ = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--check", "--format", "json")
    assert code == 3


def test_vllm_refuses_to_start_where_sglang_only_warns():
    r = fit(Deployment(**QWEN32, engine="vllm"))
    assert r.fits is False and r.starts is False


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"engine": "vllm"},
        {**QWEN32, "tp": 2, "context_length": 32768},
        {**QWEN32, "tp": 2, "context_length": 32768, "engine": "vllm"},
        {**QWEN32, "context_length": 16384},
    ],
)
def test_fits_implies_starts(fields):
    r = fit(Deployment(**fields))
    assert r.fits and r.starts


def _facts(**kw):
    base = dict(
        engine="sglang",
        context=40_960,
        dp=1,
        refusals=(),
        memory_reason="one 40,960-token request needs 40,960 tokens, the pool holds 17,378",
        concurrency=0,
        pool_concurrency=0,
        pool_tokens_total=17_378,
        cap=2048,
        cap_source="derived",
        target_requests=1,
        workload=None,
    )
    return Facts(**{**base, **kw})


def test_judge_starts_only_when_the_failing_step_lets_the_engine_start():
    assert judge(_facts(memory_starts=True)).starts is True
    assert judge(_facts(memory_starts=False)).starts is False  # the default: a sweep that does not say
    # a start-up refusal stops it whatever the memory chain says
    assert judge(_facts(memory_starts=True, refusals=("fp8_e4m3 KV is not supported on SM80",))).starts is False
    v = judge(_facts(memory_reason=None, concurrency=1, pool_concurrency=1, pool_tokens_total=50_000))
    assert v.fits and v.starts


def test_impossible_deployment_advises_a_gpu_count_not_a_fraction():
    dep = Deployment(model="meta-llama/Llama-3.1-405B-Instruct", gpu="l4", tp=2)
    r = fit(dep, advise=True)
    assert not r.starts and not r.fits and r.weight_bytes >= r.free_bytes
    assert len(r.advice) == 1 and r.advice[0].startswith("needs at least ")
    n = int(r.advice[0].split("needs at least ")[1].split(" GPUs")[0])
    assert r.advice[0] == f"needs at least {n} GPUs at TP {n} for the weights alone"
    # the advised size holds the weights, half of it does not (the advice is the fewest)
    assert (
        fit(Deployment(model=dep.model, gpu="l4", tp=n)).weight_bytes
        < fit(Deployment(model=dep.model, gpu="l4", tp=n)).free_bytes
    )
    half = fit(Deployment(model=dep.model, gpu="l4", tp=n // 2))
    assert half.weight_bytes >= half.free_bytes
    text = " ".join(r.warnings + r.advice)
    assert "must exceed 1" not in text and "must exceed 2" not in text
    assert fit(dep).advice == []  # the library's fit does not search unless asked


def test_tp_advice_is_the_library_s_own():
    r = fit(Deployment(**QWEN32), advise=True)
    assert r.advice == [f"meets the target at TP 2: 2 GPUs, {fit(Deployment(**QWEN32, tp=2)).target_reason}"]
    assert fit(Deployment(**QWEN32, tp=2), advise=True).advice == []  # it fits: nothing to advise


def test_impossible_deployment_advice_on_the_cli():
    code, out = _run("fit", "-m", "meta-llama/Llama-3.1-405B-Instruct", "-g", "l4", "--tp", "2", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["advice"] and d["advice"][0].startswith("needs at least ")


def _refusing_plan(monkeypatch, *, refusal: bool):
    from kvplan.engines.registry import engine
    from kvplan.errors import InputError

    eng = engine("sglang")

    def plan(dep, model, gpu):
        exc = InputError("no memory left for the KV cache", field="--mem-fraction-static", hint="raise it")
        if refusal:
            exc.engine_refusal = True  # type: ignore[attr-defined]
        raise exc

    monkeypatch.setattr(type(eng), "plan", lambda self, dep, model, gpu: plan(dep, model, gpu))


def test_an_engine_refusal_raised_while_planning_is_a_verdict(monkeypatch):
    _refusing_plan(monkeypatch, refusal=True)
    r = fit(Deployment(**QWEN32))
    assert (r.starts, r.fits, r.meets_target) == (False, False, False)
    assert r.reasons == ["the engine refuses to start: no memory left for the KV cache"]
    assert r.verdict == "does not fit: the engine refuses to start: no memory left for the KV cache"
    assert r.advice == ["raise it"] and r.context_length == 40_960
    code, _ = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "json")
    assert code == 0
    code, _ = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "json", "--check")
    assert code == 3


def test_an_input_error_that_is_not_a_refusal_stays_exit_2(monkeypatch):
    _refusing_plan(monkeypatch, refusal=False)
    code, _ = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "json")
    assert code == 2


def test_nemotron_h_under_0_5_4_is_a_verdict():
    import kvplan.errors

    if not hasattr(kvplan.errors, "EngineRefusal"):
        pytest.skip("needs patches/results-verdicts-engine-refusal.patch (the engines raise EngineRefusal)")
    args = ["fit", "-m", "nvidia/Nemotron-H-56B-Base-8K", "-g", "h100-sxm", "--tp", "2", "--engine-version", "0.5.4"]
    code, out = _run(*args, "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["starts"] is False and d["fits"] is False
    assert d["reasons"][0].startswith("the engine refuses to start: ")
    assert _run(*args, "--format", "json", "--check")[0] == 3


PLAN = """
[defaults]
gpu = "h100-sxm"
model = "Qwen/Qwen3-32B"
context_length = 40960

[[deployment]]
name = "starts-16k"
require = "starts"
[deployment.target]
context = "16k"
requests = 1

[[deployment]]
name = "fits-16k"
[deployment.target]
context = "16k"
requests = 1

[[deployment]]
name = "starts-40k"
require = "starts"
[deployment.target]
context = 40960
requests = 1
"""


def test_check_require_starts(tmp_path):
    from kvplan.planning.check import check, load_plan

    p = tmp_path / "plan.toml"
    p.write_text(PLAN)
    specs = load_plan(p)
    assert [s.require for s in specs] == ["starts", "fits", "starts"]
    by = {r.name: r for r in check(specs)}
    assert by["starts-16k"].passed and by["starts-16k"].starts and not by["starts-16k"].fits
    assert not by["fits-16k"].passed and by["fits-16k"].reason.startswith("does not fit: ")
    assert not by["starts-40k"].passed
    longest = fit(Deployment(**QWEN32)).max_context_length
    assert by["starts-40k"].reason == (
        f"a request of 40,960 tokens is longer than the longest the engine accepts ({longest:,})"
    )


def test_check_require_is_a_closed_choice(tmp_path):
    from kvplan.errors import InputError
    from kvplan.planning.check import load_plan

    p = tmp_path / "plan.toml"
    p.write_text(PLAN.replace('require = "starts"', 'require = "boots"', 1))
    with pytest.raises(InputError, match="require"):
        load_plan(p)


def test_a_deployment_that_does_not_fit_is_advised_what_solve_and_fit_find():
    code, out = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "json")
    advice = json.loads(out)["advice"]
    assert code == 0 and len(advice) == 2, advice
    knob = advice[0].removeprefix("meets the target with --mem-fraction-static ").split()[0]
    mfs = float(knob)
    assert 0 < mfs < 1
    # the advised fraction fits and the one just below it does not (solve's 0.001 steps)
    assert fit(Deployment(**QWEN32, mem_fraction_static=mfs)).fits
    assert not fit(Deployment(**QWEN32, mem_fraction_static=round(mfs - 0.001, 3))).fits
    two = fit(Deployment(**QWEN32, tp=2))
    assert advice[1] == f"meets the target at TP 2: 2 GPUs, {two.target_reason}"
    assert two.fits and not fit(Deployment(**QWEN32)).fits  # TP 2 is the smallest larger size that fits
    # a deployment that fits gets none
    code, out = _run("fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "2", "--format", "json")
    assert json.loads(out)["advice"] == []
