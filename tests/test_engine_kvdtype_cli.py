"""``sweep`` and ``solve`` take each engine's own KV dtype names, as ``fit`` does (issue 21 item 5, issue 24 item 4):
``--engine vllm --kv-cache-dtype fp8`` is answered (it was exit 2, "SGLang has no 'fp8'"); SGLang still refuses it."""

from __future__ import annotations

import csv
import io
import json

from typer.testing import CliRunner

from kvplan.cli.app import app

ARGS = ["-m", "qwen3-8b", "-g", "h100-sxm", "--context-length", "32k"]


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_sweep_vllm_fp8_is_answered_as_fit():
    out = _run("sweep", "--engine", "vllm", "--kv-cache-dtype", "fp8", *ARGS, "--format", "csv")
    assert out.exit_code == 0, out.output
    (row,) = list(csv.DictReader(io.StringIO(out.stdout)))
    fit = json.loads(_run("fit", "--engine", "vllm", "--kv-cache-dtype", "fp8", *ARGS, "--format", "json").stdout)
    # fp8: 36 layers x 8 KV heads x 128 x 2 (K and V) x 1 byte
    assert int(row["kv_bytes_per_token"]) == 36 * 8 * 128 * 2 == fit["kv_bytes_per_token"]
    assert int(row["max_concurrency"]) == fit["max_concurrency"]


def test_solve_vllm_fp8_is_answered():
    out = _run("solve", "gpus", "--engine", "vllm", "--kv-cache-dtype", "fp8", *ARGS, "--format", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["answer"] == 1


def test_sglang_still_refuses_fp8():
    for cmd in (["sweep"], ["solve", "gpus"]):
        out = _run(*cmd, "--kv-cache-dtype", "fp8", *ARGS)
        assert out.exit_code == 2
        assert "fp8_e4m3" in out.output
