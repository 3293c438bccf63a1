"""Start-up discipline, checked without timing: what `kvplan fit --format json` imports.

Timings live in benchmarks/startup.py; these tests only read `python -X importtime` output, which is
deterministic: rich (tables) and numpy (sweeps) must never load for JSON output, and with a warm preset
cache neither does pydantic (it validates presets and results only when needed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.result import FitResult

ROOT = Path(__file__).resolve().parent.parent


def _imported(args: list[str], cache_dir: Path) -> set[str]:
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "kvplan", *args], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip())
    return mods


def test_fit_json_imports_neither_rich_nor_numpy_nor_pydantic(tmp_path):
    _imported(["fit", "--format", "json"], tmp_path)            # fills the validated-preset cache
    mods = _imported(["fit", "--format", "json"], tmp_path)
    assert "kvplan.engines.sglang.planner" in mods                        # the test sees real imports
    top = {m.split(".")[0] for m in mods}
    assert "rich" not in top, "rich must load only for tables"
    assert "numpy" not in top, "numpy must load only for sweeps"
    assert "pydantic" not in top, "pydantic must load only to validate"


def test_cold_cache_validates_with_pydantic(tmp_path):
    mods = _imported(["fit", "--format", "json", "-m", "qwen3-32b", "-g", "h100-sxm"], tmp_path / "empty")
    assert "pydantic" in {m.split(".")[0] for m in mods}


def test_json_round_trips_into_the_result_model():
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    out = CliRunner().invoke(app, ["fit", "--format", "json"]).stdout
    data = json.loads(out)
    res = FitResult.model_validate(data)
    assert res.model_dump() == data
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        FitResult.model_validate({**data, "not_a_key": 1})
    with pytest.raises(ValidationError):
        FitResult.model_validate({**data, "kv_pool_tokens": "many"})


def test_version_flag_loads_no_planner(tmp_path):
    mods = _imported(["--version"], tmp_path)
    assert "kvplan.cli.app" in mods
    assert not any(m.startswith(("kvplan.planning", "kvplan.engines", "kvplan.inputs")) for m in mods)
    assert "rich" not in {m.split(".")[0] for m in mods}
