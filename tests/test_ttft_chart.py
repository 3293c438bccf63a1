"""TTFT against prompt length (kvplan.views.ttft_chart): the points are speed()'s, the scale and the positions by
hand, the SVG's structure and escaping, the bounds on the work."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.views.ttft_chart import (
    MAX_LENGTHS,
    NOT_RUN,
    SHARED,
    TtftSeries,
    render_terminal,
    save_plot,
    to_json,
    to_svg,
    ttft_series,
    y_scale,
)

SVG = "{http://www.w3.org/2000/svg}"
QWEN = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, output_len=256)


def fixed() -> list[TtftSeries]:
    return [
        TtftSeries(
            label="Qwen3-32B\x1b[2J on 2x h100-sxm <tp=2> & co",
            input_lens=[1024, 4096, 16384],
            ttft_s=[0.1, 1.0, 10.0],
            prefill_tokens_per_s=[10240.0, 4096.0, 1638.4],
            runs=[True, True, False],
        )
    ]


def test_y_scale_by_hand():
    # log10 -1 .. 1, span 2, padded by 0.1 each side: ticks 0.1, 0.2, 0.5, 1, 2, 5, 10
    lo, hi, ticks = y_scale([0.1, 1.0, 10.0])
    assert (lo, hi) == (pytest.approx(-1.1), pytest.approx(1.1))
    assert ticks == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    # more ticks than allowed: the powers of ten only
    assert y_scale([0.1, 1.0, 10.0], max_ticks=5)[2] == [0.1, 1.0, 10.0]
    # less than a decade is widened to one around its middle: 1 .. 2 -> log10 -0.35 .. 0.65, padded by 0.05
    lo, hi, _ = y_scale([1.0, 2.0])
    mid = math.log10(2) / 2
    assert lo == pytest.approx(mid - 0.55) and hi == pytest.approx(mid + 0.55)


def test_terminal_positions_by_hand():
    """left margin len('0.1') + 1 = 4, 80 - 4 - 2 = 74 plot columns: col = round(log2(n / 1k) / 4 x 73) -> 0, 36
    (36.5 rounds to even), 73; 14 rows over log10 -1.1 .. 1.1: row = 13 - round((log10 t + 1.1) / 2.2 x 13) ->
    0.1 s: 12, 1 s: 7 (6.5 to even), 10 s: 1."""
    lines = render_terminal(fixed(), width=80, title="TTFT").splitlines()
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)
    grid = [line.split("|", 1)[1] for line in lines if " |" in line]
    assert len(grid) == 14
    marks = {(r, c): ch for r, row in enumerate(grid) for c, ch in enumerate(row) if ch not in " ."}
    assert marks == {(12, 0): "*", (7, 36): "*", (1, 73): NOT_RUN}
    ylab = {line.split("|", 1)[0].strip(): i for i, line in enumerate(x for x in lines if " |" in x)}
    assert ylab["0.1"] == 12 and ylab["1"] == 7 and ylab["10"] == 1
    text = "\n".join(lines)
    assert "\x1b" not in text and "Qwen3-32B\\x1b[2J on 2x h100-sxm" in text
    # the table: one row per length, the one that does not run marked
    assert lines[-4:] == [
        "prompt       TTFT  prefill tok/s",
        "1k       100 ms           10,240",
        "4k       1.00 s            4,096",
        "16k     10.00 s x          1,638",
    ]


def test_shared_cell():
    a, b = fixed()[0], replace(fixed()[0], label="b", ttft_s=[0.1, 2.0, 5.0], runs=[True, True, True])
    lines = render_terminal([a, b], width=80).splitlines()
    grid = [line.split("|", 1)[1] for line in lines if " |" in line]
    assert sum(row.count(SHARED) for row in grid) == 1  # both at (1k, 0.1 s)
    assert any(line.startswith(f"  {SHARED}  ") for line in lines)


def test_svg_structure_and_escaping(tmp_path):
    svg = to_svg(fixed(), title="t <&>")
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    assert len([e for e in root.iter(SVG + "polyline") if e.get("class") == "series"]) == 1
    circles = list(root.iter(SVG + "circle"))
    assert len(circles) == 3 and circles[2].get("fill") == "white"  # the one that does not run is hollow
    labels = [e.text for e in root.iter(SVG + "text") if e.get("class") == "label"]
    assert labels == ["Qwen3-32B\\x1b[2J on 2x h100-sxm <tp=2> & co"]
    assert "\x1b" not in svg
    p = save_plot(fixed(), tmp_path / "t.svg")
    ET.parse(p)
    with pytest.raises(InputError):
        save_plot(fixed(), tmp_path / "t.gif")


def test_json():
    doc = json.loads(to_json(fixed()))
    assert doc[0]["points"][2] == {"input_len": 16384, "ttft_s": 10.0, "prefill_tokens_per_s": 1638.4, "runs": False}


def test_points_are_speed_of_each_length():
    from kvplan.planning.speed import SpeedInputs, speed

    lens = [1024, 16384, 65536]
    (s,) = ttft_series([("qwen", QWEN)], [16384, 1024, 65536, 1024], SpeedInputs(concurrency=2))
    assert s.input_lens == lens  # sorted, the repeated 1k dropped
    for n, t, p in zip(s.input_lens, s.ttft_s, s.prefill_tokens_per_s, strict=True):
        r = speed(replace(QWEN, input_len=n), SpeedInputs(concurrency=2))
        assert t == pytest.approx(r.ttft_s) and p == pytest.approx(r.prefill_tokens_per_s)
    assert s.ttft_s == sorted(s.ttft_s)  # a longer prompt never comes back sooner
    # Qwen3-32B holds 40,960 positions: 65,536 + 256 tokens is longer than any request it runs
    assert s.runs == [True, True, False]


def test_bounds():
    with pytest.raises(InputError, match="prompt lengths"):
        ttft_series([("q", QWEN)], range(1, MAX_LENGTHS + 2))
    with pytest.raises(InputError, match=">= 1"):
        ttft_series([("q", QWEN)], [0, 1024])
    with pytest.raises(InputError, match="deployments"):
        ttft_series([("q", QWEN)] * 8, [1024])
    with pytest.raises(InputError):
        ttft_series([("q", QWEN)], [])
