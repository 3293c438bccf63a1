"""Issue 26's reproducers that no other test file covered, run as the issue ran them (through the CLI).

The index of every reproducer and its test is the table in docs/hardening.md ("Issue 26: reproducers").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
H100 = (ROOT / "configs" / "hardware" / "h100-sxm.toml").read_text()
runner = CliRunner()


def _one_line_exit_2(r, *words: str) -> str:
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert not r.stdout and len(r.stderr.strip().splitlines()) == 1, r.output
    for w in words:
        assert w in r.stderr, r.stderr
    return r.stderr


def _gpu_preset(tmp_path: Path, memory_mib: int) -> dict[str, str]:
    hw = tmp_path / "hardware"
    hw.mkdir(parents=True)
    text = H100.replace('id = "h100-sxm"', 'id = "huge-gpu"', 1)
    lines = [f"memory_mib = {memory_mib}" if ln.startswith("memory_mib =") else ln for ln in text.splitlines()]
    lines = [ln for ln in lines if not ln.startswith("cuda_total_bytes")]  # the total from memory_mib
    (hw / "huge-gpu.toml").write_text("\n".join(lines) + "\n")
    return {"KVPLAN_PRESETS": str(tmp_path), "KVPLAN_NO_CACHE": "1"}


COMMANDS = [
    ["fit", "-m", "Qwen/Qwen3-8B", "-g", "huge-gpu"],
    ["sweep", "-m", "Qwen/Qwen3-8B", "-g", "huge-gpu", "--tp", "1,2", "--format", "csv"],
    ["solve", "gpus", "-m", "Qwen/Qwen3-8B", "-g", "huge-gpu"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_user_gpu_preset_of_2e13_mib_is_exit_2_for_every_command(tmp_path, args):
    """'a user GPU preset of 2x10^13 MiB makes sweep/solve overflow (exit 1) where --gpu-memory is capped'."""
    env = _gpu_preset(tmp_path, 2 * 10**13)
    _one_line_exit_2(runner.invoke(app, args, env=env), "memory_mib")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_user_gpu_preset_at_the_cap_never_overflows(tmp_path, args):
    """At the cap (2^40 MiB = 2^60 B, the --gpu-memory cap) every command answers: no internal error."""
    env = _gpu_preset(tmp_path, 2**40)
    r = runner.invoke(app, args, env=env)
    assert r.exit_code in (0, 2, 3), r.output
    assert "internal error" not in r.output


@pytest.mark.parametrize("args", [["fit", "-m", "Qwen/Qwen3-8B", "-g", "h100-sxm"], ["models"], ["gpus"]])
def test_kvplan_presets_over_name_max_is_exit_2(tmp_path, args):
    """'a KVPLAN_PRESETS path over NAME_MAX exit 1': now one line naming KVPLAN_PRESETS."""
    env = {"KVPLAN_PRESETS": str(tmp_path / ("x" * 300)), "KVPLAN_NO_CACHE": "1"}
    _one_line_exit_2(runner.invoke(app, args, env=env), "KVPLAN_PRESETS", "File name too long")


def test_a_tiny_mamba_ratio_is_a_verdict_naming_the_state_cache():
    """'--mamba-full-memory-ratio 1e-300 names --mem-fraction-static': now the engine's refusal, as a verdict."""
    import json

    r = runner.invoke(
        app,
        [
            "fit",
            "-m",
            "Qwen/Qwen3.6-35B-A3B",
            "-g",
            "h100-sxm",
            "--mamba-full-memory-ratio",
            "1e-300",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["fits"] is False and "--mem-fraction-static" not in " ".join(out["reasons"])
    assert any("state cache" in x or "mamba" in x.lower() for x in out["reasons"]), out["reasons"]
