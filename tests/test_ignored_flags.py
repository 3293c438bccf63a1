"""kvplan's flags the chosen engine never reads are named in one warning line (issue 24 item 2)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.planning.plan import fit, ignored_flags


def test_sglang_only_flag_under_vllm_is_named() -> None:
    assert ignored_flags(Deployment(engine="vllm", max_total_tokens=100000)) == ["--max-total-tokens"]
    assert ignored_flags(Deployment(engine="sglang", max_total_tokens=100000)) == []
    assert ignored_flags(Deployment(engine="vllm")) == []


def test_one_warning_line_and_the_same_plan() -> None:
    dep = Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm")
    plain = fit(dep)
    warned = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm", max_total_tokens=100000))
    assert [w for w in warned.warnings if w not in plain.warnings] == ["vLLM does not read --max-total-tokens: ignored"]
    assert warned.kv_pool_tokens == plain.kv_pool_tokens


def test_cli_warns_only_the_engine_that_does_not_read_it() -> None:
    res = CliRunner().invoke(
        app,
        [
            "fit",
            "-m",
            "Qwen/Qwen3-8B",
            "-g",
            "h100-sxm",
            "--engine",
            "vllm",
            "--max-total-tokens",
            "100000",
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "vLLM does not read --max-total-tokens: ignored" in json.loads(res.output)["warnings"]


def test_json_lists_the_ignored_flags() -> None:
    res = CliRunner().invoke(
        app,
        [
            "fit",
            "-m",
            "Qwen/Qwen3-8B",
            "-g",
            "h100-sxm",
            "--engine",
            "vllm",
            "--max-total-tokens",
            "100000",
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["ignored_flags"] == ["--max-total-tokens"]
    plain = CliRunner().invoke(app, ["fit", "-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--format", "json"])
    assert json.loads(plain.output)["ignored_flags"] == []


def test_speculative_flags_under_vllm_are_ignored_and_said_so() -> None:
    base = {"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200", "tp": 8, "engine": "vllm"}
    plain = fit(Deployment(**base))
    spec = fit(Deployment(**base, speculative_algorithm="EAGLE", speculative_num_draft_tokens=4))
    # the same memory plan with and without them (kvplan's vLLM plan has no draft) ...
    assert (spec.kv_pool_tokens, spec.weight_bytes) == (plain.kv_pool_tokens, plain.weight_bytes)
    # ... and the answer says so, in one line and in the JSON key
    assert spec.ignored_flags == ["--speculative-algorithm", "--speculative-num-draft-tokens"]
    new = [w for w in spec.warnings if w not in plain.warnings]
    assert len(new) == 1 and new[0].startswith("--speculative-algorithm, --speculative-num-draft-tokens: not in")
    # SGLang reads them: nothing ignored there
    assert fit(Deployment(**{**base, "engine": "sglang"}, speculative_algorithm="EAGLE")).ignored_flags == []


def test_both_kinds_in_one_answer() -> None:
    dep = Deployment(engine="vllm", max_total_tokens=100000, speculative_algorithm="EAGLE")
    assert ignored_flags(dep) == ["--max-total-tokens", "--speculative-algorithm"]
