"""Every shipped log's weight line ('Model loading took', SGLang 'mem usage=') against kvplan's cold weight estimate
for that engine, release, GPU and parallel layout: within 1 % (issue 25 item 3).

The GPU decides the kernel (gpt-oss MXFP4 on Marlin on an A100 pads hidden 2,880 -> 3,072 and the per-rank
intermediate 720 -> 768: ``model_executor/layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``, vLLM
0.10.1.1), so each case names its GPU preset.  Cases kvplan does not estimate as loaded are listed in MISSES with the
reason, and asserted to still miss (drop the entry when fixed).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from tests.validation.fixtures import common_args, load_cases

GiB = 1 << 30
TOL = 0.01

#: the GPU preset of each log (the fixtures name the GPU in words)
GPUS = {
    "qwen2-7b-a100-u025": "a100-sxm-80gb",
    "gptoss120b-4xa100-tp4-u080": "a100-sxm-80gb",
    "llmd-llama31-8b-h100": "h100-sxm",
    "llmd-qwen3-32b-2xh100-tp2": "h100-sxm",
    "qwen3-235b-fp8-8xl40s-tp8-ep": "l40s",
    "qwen3-next-80b-2xh200-tp2": "h200-sxm",
    "deepseek-v2-lite-h100-v0-premla": "h100-sxm",
    "qwq-32b-4xL4-tp4": "l4",
    "kimi-k2.5-mi355x-tp8": "mi355x",
    "gemma3-27b-mi300x-rocm": "mi300x",
    "qwen25-0.5b-4070tis-pd-prefill": "rtx-4070-ti-super",
}
#: logs whose weight line the cold estimate misses by more than 1 %, and why
MISSES = {
    "gemma3-27b-mi300x-rocm": "the preset has no vision_config: the SigLIP tower (~0.8 GiB) is not counted",
    "qwen25-0.5b-4070tis-pd-prefill": "0.98 GiB logged for a 0.5B model: ~0.06 GiB of the load is not weights",
    "kimi-k2.5-mi355x-tp8": "INT4 experts on ROCm under SGLang: 71.86 vs 73.58 GiB, the loaded layout not modelled",
    "qwq-32b-4xL4-tp4": "SGLang 0.4.6 at TP4: 15.26 vs 15.54 GiB, 0.28 GiB per rank not identified",
}


def _model_fix(case_id: str) -> str | None:
    """The model the accuracy report plans this log with, when it corrects the log's own id
    (scripts/accuracy_report.py ``CASE_FIX``, with its reason there: e.g. DeepSeek-V2-Lite-Chat on the
    DeepSeek-V2-Lite preset, since the variant rule maps only quantization suffixes)."""
    from scripts.accuracy_report import CASE_FIX

    return CASE_FIX.get(case_id, ({}, ""))[0].get("model")


def _weights(case: dict) -> tuple[float, float] | None:
    rep = case["reported"]
    logged = rep.get("model_loading_gib") or rep.get("weight_load_mem_usage_gb")
    if not logged or case["id"] not in GPUS:
        return None
    args = [*common_args(case), "--gpu", GPUS[case["id"]], "--format", "json"]
    model = _model_fix(case["id"])
    if model:
        args[args.index("--model") + 1] = model
    res = CliRunner().invoke(app, ["fit", *args])
    if res.exit_code != 0:
        return None
    return json.loads(res.stdout)["weight_bytes"] / GiB, float(logged)


CASES = [c for e in ("vllm", "sglang") for c in load_cases(e) if c["id"] in GPUS]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_weight_line_within_one_percent(case):
    got = _weights(case)
    assert got is not None, "the log's deployment does not plan"
    est, logged = got
    ok = abs(est - logged) <= TOL * logged
    if case["id"] in MISSES:
        assert not ok, f"now within 1 %: drop the MISSES entry ({est:.2f} vs {logged})"
        return
    assert ok, (round(est, 2), logged)
