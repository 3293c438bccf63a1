"""``kvplan speed --chart / --plot``: TTFT against prompt length (issue 23 item 3), --input-len as a list, one curve
per --engine; refusals before any output; without --chart / --plot speed is unchanged."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from typer.testing import CliRunner

from kvplan.cli.app import app

SVG = "{http://www.w3.org/2000/svg}"
SPEED = ["speed", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "2", "--output-len", "256"]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_chart_two_engines():
    r = run(*SPEED, "--input-len", "1k,4k,16k,64k", "--engine", "sglang,vllm", "--chart")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "  *  Qwen3-32B on 2x h100-sxm, tp=2, KV bf16, sglang" in lines
    assert "  o  Qwen3-32B on 2x h100-sxm, tp=2, KV bf16, vllm" in lines
    rows = [line.split()[0] for line in lines if line[:3] in ("1k ", "4k ", "16k", "64k")]
    assert rows == ["1k", "4k", "16k", "64k"]
    # 65,536 + 256 tokens is longer than the 40,960 positions Qwen3-32B holds: marked on both curves
    assert lines[-1].split().count("x") == 2


def test_json_and_plot(tmp_path):
    out = tmp_path / "t.svg"
    r = run(*SPEED, "--input-len", "1k:16k:x4", "--plot", str(out), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [p["input_len"] for p in doc[0]["points"]] == [1024, 4096, 16384]
    ttft = [p["ttft_s"] for p in doc[0]["points"]]
    assert ttft == sorted(ttft)
    root = ET.parse(out).getroot()
    assert len([e for e in root.iter(SVG + "polyline") if e.get("class") == "series"]) == 1


def test_refusals_print_nothing(tmp_path):
    for args, code, flag in (
        (["--chart", "--plot", "/nonexistent/t.svg"], 1, "--plot"),
        (["--chart", "--format", "csv"], 2, "--format"),
        (["--chart", "--engine", "sglang,nope"], 2, "--engine"),
        (["--chart", "--input-len", "1k:1m:x1.1"], 2, "--input-len"),
    ):
        r = run(*SPEED, *args)
        assert r.exit_code == code and r.stdout == "" and flag in r.stderr, (args, r.output)
    assert not list(tmp_path.iterdir())


def test_without_chart_speed_is_unchanged():
    r = run(*SPEED, "--input-len", "4k", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["input_len"] == 4096


def test_one_curve_per_combination_of_the_lists():
    args = ["speed", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm,h200-sxm", "--tp", "2", "--input-len", "1k,8k"]
    r = run(*args, "--kv-cache-dtype", "bf16,fp8_e4m3", "--chart")
    assert r.exit_code == 0, r.output
    legend = [line for line in r.stdout.splitlines() if line.startswith("  ") and " on 2x " in line]
    assert [line.split(" on ")[1] for line in legend] == [
        "2x h100-sxm, tp=2, KV bf16, sglang",
        "2x h100-sxm, tp=2, KV fp8_e4m3, sglang",
        "2x h200-sxm, tp=2, KV bf16, sglang",
        "2x h200-sxm, tp=2, KV fp8_e4m3, sglang",
    ]
    r = run(*args, "--kv-cache-dtype", "auto,fp8_e4m3", "--engine", "sglang,vllm", "--chart")
    assert r.exit_code == 2 and r.stdout == "" and "8 deployments" in r.stderr


def test_a_list_without_chart_is_refused():
    for text in ("1k,4k", "1024,4096", "1k:64k:x4"):
        r = run(*SPEED, "--input-len", text, "--format", "json")
        assert r.exit_code == 2 and r.stdout == "" and "--chart" in r.stderr, (text, r.output)
    r = run(*SPEED, "--input-len", "4,096", "--format", "json")  # a thousands separator is still one count
    assert r.exit_code == 0 and json.loads(r.stdout)["input_len"] == 4096
