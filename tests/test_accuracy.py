"""Validation suite: every public log in tests/validation/logs reproduced in measured mode (kvplan.planning.calibrate).

Tolerance 0.5 % on the log's pool size (tokens, blocks or KV GiB).  Logs that cannot be reproduced are listed in
EXCEPTIONS with the reason (the same reasons appear in docs/accuracy.md); nothing is fitted.  Inputs a log
excerpt lacks come from its shared validation case or scripts/accuracy_report.py ADDITIONAL.
"""

from __future__ import annotations

import pytest

from scripts.accuracy_report import LOGS, evaluate, load_cases, summary

TOL = 0.005
CASES = load_cases()
LOG_FILES = sorted(LOGS.glob("*.log"))

# log id -> why measured mode cannot reproduce it (documented, not fitted)
EXCEPTIONS = {
    "deepseek-v2-lite-h100-v0-premla": "V0 pre-MLA build stored DeepSeek-V2 as padded MHA K/V; layout not modelled",
    "dsv32-exp-8xb200-dp8-main-before-pr11309": "no free-memory lines in the excerpt (cell checked in test_validation_sglang)",
    "dsv4-flash-8xb200-tp8-ep": "no memory figure printed (tokens only)",
    "llmd-llama31-8b-h100": "only the available KV memory is printed: it is the input, nothing left to compare",
    "llmd-qwen3-32b-2xh100-tp2": "only the available KV memory is printed: it is the input, nothing left to compare",
    "qwen3.8-27b-fp8-hybrid-gdn-h100-kt": "Qwen3.8-27B config not published; not a preset",
    "sglang-21348-qwen3-235b-fp8-4xh100-tp4": "excerpt has no free-memory lines",
    "sglang-29575-scheduler-line-2026": "model not named",
    "sglang-club3090-1261-2x5090-nvfp4-mtp": "model not named (unreleased hybrid GDN checkpoint)",
    "sglang-pr13023-l40s-truncated-serverargs": "negative fixture: no sizing line",
    "sglang-pr14071-dev-multirank-mla": "2-layer test model, not named",
    "vllm-25350-fp8kv-100k": "model not named",
    "vllm-25350-fp8kv-221k-error": "model not named",
    "vllm-39734-gemma4-31b": "model not named in the excerpt; no available-KV line",
    "vllm-39734-logo-nondefault": "negative fixture: no sizing line",
    "vllm-6746-llama31-405b-fp8-8xh100-v0-workers": "weight load only, no pool line",
    "vllm-intelarc-4-kv-cache-memory-bytes": "model not named",
    "vllm-pr13596-v1-old-block-format": "model not named",
    "vllm-pr13596-v1-token-format": "model not named",
    "vllm-xinference-4926-qwen3vl-error": "model size not stated",
    "vllm-27508-gptoss120b-h100-u095-b1024": "only the available KV memory is printed (fit error): compared in cold "
    "mode only",
    "vllm-aiinfralab-qwen3-4b-2507-5090-128k": "pool tokens without the memory figures: compared in cold mode only",
    "vllm-myoceane-gemma4-26b-a4b-a100-eager": "only the available KV memory is printed: compared in cold mode only",
    "vllm-myoceane-gptoss20b-a100-u065": "only the available KV memory is printed: compared in cold mode only",
    "vllm-21348-qwen3-235b-fp8-4xh100-tp4": "+1.1%: the pasted lines come from different TP workers (0.10.0 logs the "
    "available memory per worker and one token line per worker before the "
    "min over workers); see scripts/accuracy_report.py EXCLUDED",
}


@pytest.fixture(scope="module")
def rows():
    return {p.stem: evaluate(p, CASES) for p in LOG_FILES}


@pytest.mark.parametrize("log", LOG_FILES, ids=[p.stem for p in LOG_FILES])
def test_measured_reproduces_log(log, rows):
    r = rows[log.stem]
    if log.stem in EXCEPTIONS:
        # an exception must really be one: either no measured figure, or a documented miss
        assert r["measured"] is None or abs(r["measured"]) > TOL, f"{log.stem} now passes: drop it from EXCEPTIONS"
        pytest.skip(EXCEPTIONS[log.stem])
    assert r["measured"] is not None, r["measured_why"]
    assert r.get("measured_ok"), f"{log.stem}: {r['quantity']} error {r['measured']:+.3%}"


def test_every_log_is_accounted_for():
    assert len(LOG_FILES) == 49
    assert set(EXCEPTIONS) <= {p.stem for p in LOG_FILES}


def test_explained_exclusions_are_listed_not_averaged(rows):
    from scripts.accuracy_report import EXCLUDED, render

    text = render(list(rows.values()))
    summary_part, _, _rest = text.partition("## Per case")
    for log_id in EXCLUDED:
        assert log_id in rows and f"| {log_id} |" in summary_part  # listed under the exclusions table
    n_meas = sum(
        1 for r in rows.values() if r["measured"] is not None and "measured" not in EXCLUDED.get(r["id"], ((), ""))[0]
    )
    assert f"| measured | {n_meas} |" in summary_part


def test_summary_statistics():
    s = summary([0.01, -0.02, 0.03, -0.04, 0.10])
    assert s["median"] == 0.03 and s["max"] == 0.10 and s["n"] == 5
    assert abs(s["p90"] - 0.076) < 1e-12  # linear interpolation between 0.04 and 0.10 at 0.9 x 4 = 3.6


def test_cold_band_is_the_p90_of_each_engines_cold_errors(rows):
    """kvplan.planning.band's percent per engine = ceil(100 x p90) of that engine's cold errors in the summary
    (the same cases and the same p90 as docs/accuracy.md), so a regenerated table that moves the p90 fails here."""
    import math

    from kvplan.planning.band import COLD_BAND_PERCENT
    from scripts.accuracy_report import EXCLUDED

    by: dict[str, list[float]] = {}
    for r in rows.values():
        if r["cold"] is None or "cold" in EXCLUDED.get(r["id"], ((), ""))[0]:
            continue
        by.setdefault(r["engine"], []).append(r["cold"])
    got = {e: math.ceil(100 * summary(v)["p90"]) for e, v in by.items()}
    assert got == dict(COLD_BAND_PERCENT)


def _cold_errors(rows) -> dict[str, list[float]]:
    from scripts.accuracy_report import EXCLUDED

    by: dict[str, list[float]] = {}
    for r in rows.values():
        if r["cold"] is not None and "cold" not in EXCLUDED.get(r["id"], ((), ""))[0]:
            by.setdefault(r["engine"], []).append(r["cold"])
    return by


def test_cold_mode_level(rows):
    """Cold mode over the shipped logs at the level reached (issue 25): all 25 cases median |error| <= 1.7 %, p90 <=
    7.1 %, max <= 10.9 %; vLLM (22: session 7 added nine public logs and the two llm-d logs compared in cold mode
    only, tests/validation/README.md) median <= 1.96 % (1.8 % before the Gemma-4 weight term below), p90 <= 8.0 %; SGLang (3) median <= 0.9 %, p90 <= 1.1 % (the
    per-GPU CUDA context, kvplan.engines.runtime.context_bytes; NCCL's NVLS buffers on NVSwitch fabrics,
    kvplan.engines.runtime.nccl_nvls_buffer_bytes).  The issue's bar (median <= 2 %, p90 <= 5 %, both engines) is met by
    SGLang, not by vLLM: docs/accuracy.md names the term each remaining miss comes from (vllm-21348's unprinted terms,
    host memory counted on GB10).  Tighten, never loosen; the one loosening (all cases' median 1.2 -> 1.7 %, vLLM's 1.8 -> 1.96 %, session 7)
    came with a correct weight term: Gemma-4's dense MLP beside its experts and its full layers' 512-wide heads
    (kvplan.weights.gemma4) put the Gemma-4-26B-A4B log's weight line within 1 % (48.22 vs 48.50 GiB, was -3.0 %)
    and so removed what offset the 39 B-per-logit sampler term, which overstates vLLM 0.17+ (docs/accuracy.md): that
    log's cold error went +0.94 % -> -4.45 %."""
    by = _cold_errors(rows)
    every = [e for v in by.values() for e in v]
    assert len(every) == 25 and len(by["vllm"]) == 22 and len(by["sglang"]) == 3
    s, v, g = summary(every), summary(by["vllm"]), summary(by["sglang"])
    assert s["median"] <= 0.017 and s["p90"] <= 0.071 and s["max"] <= 0.109, s
    assert v["median"] <= 0.0196 and v["p90"] <= 0.080, v
    assert g["median"] <= 0.009 and g["p90"] <= 0.011, g


#: issue 25's cold bar: median |error| <= 2 %, p90 <= 5 %, for each engine
COLD_BAR_MEDIAN, COLD_BAR_P90 = 0.02, 0.05
#: the vLLM cold cases above 5 %, each explained term by term in docs/accuracy.md ("cold-4"): vllm-21348's 0.87 GiB
#: that no term checked in the 0.9.2 / 0.10.0 wheels accounts for, and the host memory vLLM 0.21 counts on GB10
#: the session-7 L40S logs kvplan misses (not yet explained term by term): the aws-samples 4x L40S TP4 run (-8.8 %)
#: and the Qwen3-14B L40S blog run (-5.5 %)
VLLM_COLD_ABOVE_5 = {
    "vllm-21348-qwen3-235b-fp8-4xh100-tp4",
    "nemotron3-nano-30b-a3b-bf16-dgxspark",
    "vllm-awssamples-qwen3coder30b-4xl40s-tp4",
    "vllm-blog-qwen3-14b-l40s-0280",
}


def test_cold_bar_per_engine(rows):
    """SGLang meets the issue's cold bar; vLLM meets the median and misses the p90 on exactly the four cases of
    :data:`VLLM_COLD_ABOVE_5`, which docs/accuracy.md explains.  When a vLLM case leaves (or joins) the set, this fails: then assert the bar for vLLM
    here too, or explain the new case."""
    from scripts.accuracy_report import EXCLUDED

    by = _cold_errors(rows)
    g, v = summary(by["sglang"]), summary(by["vllm"])
    assert g["median"] <= COLD_BAR_MEDIAN and g["p90"] <= COLD_BAR_P90, g
    assert v["median"] <= COLD_BAR_MEDIAN, v
    above = {
        r["id"]
        for r in rows.values()
        if r["engine"] == "vllm"
        and r["cold"] is not None
        and "cold" not in EXCLUDED.get(r["id"], ((), ""))[0]
        and abs(r["cold"]) > COLD_BAR_P90
    }
    assert above == VLLM_COLD_ABOVE_5
    assert v["p90"] > COLD_BAR_P90  # unmet: see VLLM_COLD_ABOVE_5
