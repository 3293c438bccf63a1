"""Issue 15's reproducers for plan files, launch commands and sweep ranges: exit 2 with one line, never a hang or an
internal error.  Bounded by input size; the subprocess timeout is only a hang guard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _one_line_exit_2(res) -> str:
    assert res.exit_code == 2, (res.exit_code, res.output, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output, lines
    return lines[0]


PLAN_HEAD = 'version = 1\n[[deployment]]\nname = "a"\nmodel = "qwen3-8b"\ngpu = "h100-sxm"\n'
TARGET = '[deployment.target]\ncontext = "32k"\nrequests = 1\n'


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("free_memory = -5\n" + TARGET, "must not be negative"),  # was a missed target (exit 3)
        ("tp = " + "9" * 5000 + "\n" + TARGET, "plan file kvplan can read"),  # Python's 4,300-digit limit
        ("tp = " + "9" * 60 + "\n" + TARGET, "key 'tp'"),  # over any TP size
        ("a = " + "[" * 3000 + "]" * 3000 + "\n", "plan file kvplan can read"),  # nesting
        ("mem_fraction_static = inf\n" + TARGET, "mem_fraction_static"),
    ],
)
def test_bad_plan_files_are_exit_2(tmp_path, body, needle):
    p = tmp_path / "plan.toml"
    p.write_text(PLAN_HEAD + body)
    assert needle in _one_line_exit_2(runner.invoke(app, ["check", str(p)]))


def test_non_utf8_plan_file(tmp_path):
    p = tmp_path / "plan.toml"
    p.write_bytes(b"\xff\xfe version = 1")
    assert "not UTF-8" in _one_line_exit_2(runner.invoke(app, ["check", str(p)]))


@pytest.mark.parametrize(
    "args",
    [
        ["check", "{fifo}"],
        ["check", "/dev/zero"],
        ["fit", "-g", "h100-sxm", "--from-launch", "{fifo}"],
        ["fit", "-g", "h100-sxm", "--from-launch", "/dev/zero"],
    ],
)
def test_fifos_and_devices_are_refused_without_hanging(tmp_path, args):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [a.replace("{fifo}", str(fifo)) for a in args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "kvplan", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )  # hang guard only
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "spec",
    [
        '{"method": "mtp", "num_speculative_tokens": ' + "9" * 5000 + "}",
        "[" * 4_000 + "]" * 4_000,  # under the launch word cap (8,192 characters), over the JSON depth cap
        '{"method": "mtp", "num_speculative_tokens": 1e400}',
    ],
)
def test_bad_speculative_config_in_a_launch_command(tmp_path, spec):
    f = tmp_path / "launch.txt"
    f.write_text("vllm serve Qwen/Qwen3-8B --speculative-config '" + spec + "'\n")
    line = _one_line_exit_2(runner.invoke(app, ["fit", "-g", "h100-sxm", "--from-launch", str(f)]))
    assert "--speculative-config" in line


def test_an_over_long_word_in_a_launch_command_is_refused_before_it_is_split(tmp_path):
    f = tmp_path / "launch.txt"
    f.write_text("vllm serve Qwen/Qwen3-8B --speculative-config '" + "[" * 100_000 + "]" * 100_000 + "'\n")
    line = _one_line_exit_2(runner.invoke(app, ["fit", "-g", "h100-sxm", "--from-launch", str(f)]))
    assert "a word of 200,002 characters (at most 8,192)" in line


def test_huge_integer_in_a_sweep_range():
    line = _one_line_exit_2(
        runner.invoke(app, ["sweep", "-m", "qwen3-8b", "-g", "h100-sxm", "--tp", "1:" + "9" * 5000])
    )
    assert "--tp" in line and "digits" in line
