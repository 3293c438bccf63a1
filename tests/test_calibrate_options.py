"""calibrate takes the deployment flags as fit spells them (issue 24 item 4): --tp, --context-length 8k."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvplan.cli.app import app

LOG = Path(__file__).resolve().parent / "validation" / "logs" / "llama31-8b-docs-quickstart-2501.log"


def _run(*args: str):
    return CliRunner().invoke(app, ["calibrate", str(LOG), "--format", "json", *args])


def test_tp_and_k_suffix_accepted_and_equal_to_the_long_forms() -> None:
    short = _run("--tp", "1", "--context-length", "8k")
    long = _run("--tp-size", "1", "--context-length", "8192")
    assert short.exit_code == 0, short.output
    assert long.exit_code == 0, long.output
    assert json.loads(short.output) == json.loads(long.output)


def test_bad_context_length_is_one_input_error() -> None:
    res = _run("--context-length", "8x")
    assert res.exit_code == 2
    assert "--context-length" in res.output and "8x" in res.output
