"""Capacity frontier: series from a sweep, terminal chart, hand-written SVG, PNG only with matplotlib.

Measured Qwen3-8B at mfs 0.75 (tests/test_sweep.py): 320,398 tokens -> 4k: 78, 8k: 39, 16k: 19, 32k: 9 requests;
fp8_e4m3 (640,796 tokens) -> 156, 78, 39, 19.
"""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning.sweep import sweep
from kvplan.views.frontier import MARKERS, frontier_series, render_terminal, save_plot, to_svg
from tests.test_sweep import MEASURED, run

CTX = [4096, 8192, 16384, 32768]
SVG = "{http://www.w3.org/2000/svg}"


def series():
    t = sweep(
        Deployment(**{**MEASURED.__dict__, "mem_fraction_static": 0.75}),
        {"kv_cache_dtype": ["bf16", "fp8_e4m3"], "context_length": CTX},
    )
    return frontier_series(t)


def test_series_values():
    s = series()
    assert [x.label for x in s] == ["bf16", "fp8_e4m3"]
    assert s[0].x == CTX and s[0].y == [78, 39, 19, 9]
    assert s[1].y == [156, 78, 39, 19]


def test_terminal_chart():
    text = render_terminal(series(), width=80, height=12)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "  * bf16" in lines and "  o fp8_e4m3" in lines
    axis = next(line for line in lines if line.strip().startswith("4k"))
    assert axis.split() == ["4k", "8k", "16k", "32k"]
    grid = [line.split("|", 1)[1] for line in lines if "|" in line]
    assert sum(row.count("*") for row in grid) == 4 and sum(row.count("o") for row in grid) == 4
    # the larger pool sits higher at every context: its marker's row index is smaller
    top = {m: min(i for i, row in enumerate(grid) if m in row) for m in "*o"}
    assert top["o"] < top["*"]
    labels = [line.split("|")[0].strip() for line in lines if "|" in line]
    assert "156" in labels and "0" in labels and "100" in labels


def test_svg_is_valid_and_has_one_line_per_series(tmp_path):
    svg = to_svg(series(), title="t & <u>")
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    assert len(root.findall(SVG + "polyline")) == 2
    assert len(root.findall(SVG + "circle")) == 8
    texts = [t.text for t in root.iter(SVG + "text")]
    assert "t & <u>" in texts and "4k" in texts and "32k" in texts and "bf16" in texts
    p = save_plot(series(), tmp_path / "f.svg")
    assert ET.parse(p).getroot().tag == SVG + "svg"


def test_png_needs_matplotlib(tmp_path):
    if importlib.util.find_spec("matplotlib") is not None:
        p = save_plot(series(), tmp_path / "f.png")
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        with pytest.raises(InputError) as e:
            save_plot(series(), tmp_path / "f.png")
        assert e.value.field == "--plot" and "matplotlib" in e.value.one_line()
    with pytest.raises(InputError) as e:
        save_plot(series(), tmp_path / "f.pdf")
    assert e.value.field == "--plot"


def test_chart_needs_a_context_range():
    t = sweep(MEASURED, {"kv_cache_dtype": ["bf16", "fp8_e4m3"], "context_length": [32768]})
    with pytest.raises(InputError) as e:
        frontier_series(t)
    assert e.value.field == "--context-length"


def test_too_many_series():
    t = sweep(
        MEASURED,
        {
            "mem_fraction_static": [round(0.5 + i / 100, 2) for i in range(len(MARKERS) + 1)],
            "context_length": [4096, 8192],
        },
    )
    with pytest.raises(InputError):
        frontier_series(t)


def test_cli_chart_and_plot(tmp_path):
    out = tmp_path / "frontier.svg"
    r = run(
        "sweep",
        "-m",
        "Qwen/Qwen3-8B",
        "-g",
        "h100-sxm",
        "--free-memory",
        "80GiB",
        "--weight-memory",
        "16GiB",
        "--mem-fraction-static",
        "0.75",
        "--kv-cache-dtype",
        "bf16,fp8_e4m3",
        "--context-length",
        "4k:32k:x2",
        "--format",
        "table",
        "--chart",
        "--plot",
        str(out),
    )
    assert r.exit_code == 0, r.output
    assert "capacity frontier" in r.stdout and "  o fp8_e4m3" in r.stdout
    assert len(ET.parse(out).getroot().findall(SVG + "polyline")) == 2
    r = run("sweep", "-m", "Qwen/Qwen3-8B", "--context-length", "32k", "--chart", "--format", "csv")
    assert r.exit_code == 2 and "--context-length" in r.stderr
    r = run(
        "sweep",
        "-m",
        "Qwen/Qwen3-8B",
        "--context-length",
        "4k,8k",
        "--plot",
        str(tmp_path / "x.gif"),
        "--format",
        "csv",
    )
    assert r.exit_code == 2 and "--plot" in r.stderr
