"""``kvplan sweep --speed --chart / --plot``: the Pareto chart (issue 23 item 3) from the command line; refusals
come before any output."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from typer.testing import CliRunner

from kvplan.cli.app import app

SVG = "{http://www.w3.org/2000/svg}"
SWEEP = [
    "sweep",
    "-m",
    "Qwen/Qwen3-32B",
    "-g",
    "h100-sxm,h200-sxm",
    "--tp",
    "1,2,4",
    "--kv-cache-dtype",
    "auto,fp8_e4m3",
    "--input-len",
    "8192",
    "--output-len",
    "1024",
    "--speed",
    "--concurrency",
    "1,16",
]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def _legend(lines: list[str]) -> list[str]:
    return [line for line in lines if line[:5] in {f"  {c}  " for c in "ABCDEFGHIJ"} and "tok/s/GPU" in line]


def test_table_then_chart_at_80_columns():
    r = run(*SWEEP, "--format", "table", "--chart")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Pareto: Qwen3-32B, 8k in + 1k out"))
    assert lines[start] == "Pareto: Qwen3-32B, 8k in + 1k out, --concurrency 1,16"
    assert start > 0  # the sweep's table first
    assert max(len(line) for line in lines[start:]) <= 80
    legend = _legend(lines[start:])
    assert legend and all("tok/s/req" in line for line in legend)
    # both concurrency values reach the frontier: c=1 is the fastest per request, c=16 the densest per GPU
    assert " c=1 " in legend[-1] + " " and " c=16 " in legend[0] + " "


def test_csv_on_stdout_chart_on_stderr():
    r = run(*SWEEP, "--format", "csv", "--chart")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("model,gpu,") and "Pareto" not in r.stdout
    assert "Pareto: Qwen3-32B" in r.stderr
    r = run(*SWEEP, "--format", "jsonl", "--chart")
    assert r.exit_code == 0 and r.stdout.startswith("{") and "Pareto: Qwen3-32B" in r.stderr


def test_plot_svg_has_one_label_per_frontier_point(tmp_path):
    out = tmp_path / "p.svg"
    r = run(*SWEEP, "--chart", "--plot", str(out), "--format", "csv", "-o", str(tmp_path / "s.csv"))
    assert r.exit_code == 0, r.output
    root = ET.parse(out).getroot()
    labels = [e for e in root.iter(SVG + "text") if e.get("class") == "label"]
    legend = _legend(r.stdout.splitlines())  # the CSV went to the file: the chart to stdout
    assert len(labels) == len(legend) >= 1
    assert len([e for e in root.iter(SVG + "polyline") if e.get("class") == "frontier"]) == 1
    assert f"wrote {out}" in r.stderr


def test_refusals_print_nothing(tmp_path):
    r = run(*SWEEP, "--plot", "/nonexistent/x.svg")
    assert r.exit_code == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    r = run(*SWEEP, "--plot", str(tmp_path / "x.gif"))
    assert r.exit_code == 2 and r.stdout == "" and "--plot" in r.stderr
    assert not list(tmp_path.iterdir())
    r = run("sweep", "-m", "Qwen/Qwen3-32B", "-g", "l40s", "--tp", "1", "--speed", "--chart")
    assert r.exit_code == 2 and r.stdout == "" and "nothing to chart" in r.stderr
