"""kvplan.planning.calibrate and the `calibrate` command on real public logs (tests/validation/logs).

Expected numbers are hand-derived from the logged figures and SGLang's rule
rest = A - P (1 - mem_fraction_static) (mem_cache/kv_cache_configurator.py, v0.5.23), not from kvplan's output.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kvplan.errors import InputError
from kvplan.inputs.logs import parse_log, read_log_file
from kvplan.planning.calibrate import (
    DisagreesError,
    calibrate,
    recover_deployment,
    resolve_log_model,
)
from kvplan.views.calibrate import render_calibration

LOGS = Path(__file__).resolve().parent / "validation" / "logs"
GiB = 2**30


@functools.cache
def _app():
    from kvplan.cli.app import KvplanGroup
    from kvplan.cli.calibrate_cmd import calibrate_cmd

    app = typer.Typer(cls=KvplanGroup, add_completion=False)
    app.command("calibrate")(calibrate_cmd)
    app.command("noop")(lambda: None)  # keep a group so "calibrate" is a subcommand
    return app


def _run(*args):
    return CliRunner().invoke(_app(), ["calibrate", *args])


def test_recover_sglang_inputs_llama_quickstart():
    f = read_log_file(LOGS / "llama31-8b-docs-quickstart-2501.log")
    rec = recover_deployment(f)
    d = rec.deployment
    assert d.engine == "sglang" and d.tp == 1 and d.mem_fraction_static == 0.88 and d.chunked_prefill_size == 8192
    assert d.free_memory == round(78.81 * GiB) and d.weight_memory == round(78.81 * GiB) - round(63.72 * GiB)
    assert (
        d.model == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    )  # the log's id: a published variant of the Llama-3.1-8B preset, kept as the variant (own quantization)


def test_llama_quickstart_agrees_hand_numbers():
    # 63.72 - 78.81 x 0.12 = 54.2628 GiB; / 131,072 B per token = 444,520 tokens (log: 444,500)
    cal = calibrate(read_log_file(LOGS / "llama31-8b-docs-quickstart-2501.log"))
    row = {r.quantity: r for r in cal.rows}["max_total_num_tokens (scheduler)"]
    assert row.logged == 444_500
    assert abs(row.predicted - int(54.2628 * GiB) // 131_072) <= 1
    assert cal.agrees


def test_model_path_basename_maps_to_preset():
    spec, note = resolve_log_model("/home/model/Qwen/QwQ-32B")
    assert spec.id == "Qwen/QwQ-32B" and "QwQ-32B" in note
    with pytest.raises(InputError):
        resolve_log_model("/models/no-such-model-xyz")


def test_missing_inputs_exit_2_names_them():
    r = _run(str(LOGS / "dsv32-exp-8xb200-dp8-main-before-pr11309.log"), "--format", "json")
    assert r.exit_code == 2
    assert "free memory before weights" in r.output + (r.stderr or "")


def test_no_model_exit_2():
    r = _run(str(LOGS / "sglang-29575-scheduler-line-2026.log"))
    assert r.exit_code == 2 and "model" in (r.output + (r.stderr or ""))


def test_cli_json_and_check_agree():
    r = _run(str(LOGS / "qwq-32b-4xL4-tp4.log"), "--format", "json", "--check", "--gpu", "l4")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["agrees"] is True
    row = next(x for x in d["rows"] if x["quantity"].startswith("max_total_num_tokens"))
    # 6.09 - 21.63 x 0.15 = 2.8455 GiB; 64 layers x 8 KV heads x 128 x 2 x 2 / TP4 = 65,536 B -> 46,620 tokens
    assert row["logged"] == 46_611 and row["predicted"] == int(2.8455 * GiB) // 65_536


def test_check_exit_3_when_disagreeing():
    # the same log with mem_fraction_static 0.80: 6.09 - 21.63 x 0.2 = 1.764 GiB -> ~28,900 tokens, far off 46,611
    r = _run(str(LOGS / "qwq-32b-4xL4-tp4.log"), "--check", "--mem-fraction-static", "0.8", "--format", "csv")
    assert r.exit_code == 3
    assert "max_total_num_tokens (scheduler)" in r.stdout and "True" in r.stdout


def test_table_flags_cause():
    f = read_log_file(LOGS / "qwq-32b-4xL4-tp4.log")
    cal = calibrate(f, overrides={"mem_fraction_static": 0.8})
    txt = render_calibration(cal, "table")
    assert "DIFFERS" in txt and "budget differs" in txt and "DISAGREES" in txt
    assert not cal.agrees


def test_vllm_tokens_from_available():
    # gpt-oss-120b TP4 on 0.10.1.1: 45.32 GiB available; the log prints 2,640,144 tokens and 330,018 blocks
    f = read_log_file(LOGS / "gptoss120b-4xa100-tp4-u080.log")
    cal = calibrate(
        f,
        model="openai/gpt-oss-120b",
        overrides={
            "tp": 4,
            "engine_version": "0.10.1.1",
            "context_length": 16384,
            "chunked_prefill_size": 2048,
            "page_size": 16,
        },
    )
    rows = {r.quantity: r for r in cal.rows}
    assert rows["GPU KV cache size (tokens)"].logged == 2_640_144
    assert cal.agrees, render_calibration(cal)


def test_vllm_budget_row_from_logged_terms():
    # Qwen3-Next TP2 0.10.2: 0.9 x 139.81 - 74.28 - 5.58 - 1.38 = 44.59 GiB (graph not subtracted before 0.20)
    f = read_log_file(LOGS / "qwen3-next-80b-2xh200-tp2.log")
    cal = calibrate(
        f,
        model="Qwen/Qwen3-Next-80B-A3B-Instruct",
        overrides={"tp": 2, "engine_version": "0.10.2", "context_length": 262144, "chunked_prefill_size": 8192},
    )
    row = {r.quantity: r for r in cal.rows}["available KV cache memory (budget)"]
    assert abs(row.predicted / GiB - 44.59) < 0.02
    assert cal.agrees


def test_tolerance_validation():
    r = _run(str(LOGS / "qwq-32b-4xL4-tp4.log"), "--tolerance", "abc")
    assert r.exit_code == 2


def test_not_a_log():
    with pytest.raises(InputError):
        calibrate(parse_log("hello world\n"))
    assert DisagreesError.exit_code == 3


def test_an_internal_error_in_the_weight_row_is_not_swallowed(monkeypatch):
    """The informational weight row is skipped when the estimate refuses the model (InputError), but a bug in it
    (TypeError) reaches the internal-error path instead of silently dropping the row."""
    import kvplan.weights.estimate as est

    f = read_log_file(LOGS / "llama31-8b-docs-quickstart-2501.log")

    def refuses(**_kw):
        raise InputError("no weight estimate for this model", field="--model")

    monkeypatch.setattr(est, "estimate_weight_bytes", refuses)
    cal = calibrate(f)
    assert not any(r.quantity.startswith("weight load") for r in cal.rows)

    def broken(**_kw):
        raise TypeError("unsupported operand type(s)")

    monkeypatch.setattr(est, "estimate_weight_bytes", broken)
    with pytest.raises(TypeError):
        calibrate(f)
