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
