"""Run one contract case in-process (CliRunner, repository root as the working folder) and normalise its output."""

from __future__ import annotations

import json
import os
from typing import Any

from tests.contract.cases import ROOT


def run_case(args: list[str]) -> dict[str, Any]:
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        res = CliRunner().invoke(app, args)
    finally:
        os.chdir(here)
    out: Any = res.stdout
    text = out.strip()
    if text:
        try:
            out = json.loads(text)
        except json.JSONDecodeError:
            try:
                out = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError:
                pass
    return {"args": args, "exit_code": res.exit_code, "stdout": out}


def accuracy_rows() -> list[dict[str, Any]]:
    """scripts/accuracy_report.py's evaluation of every log (calibrate in measured mode, fit in cold mode)."""
    from scripts.accuracy_report import evaluate_all

    return json.loads(json.dumps(evaluate_all(), sort_keys=True, default=str))
