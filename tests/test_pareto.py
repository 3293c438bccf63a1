"""The Pareto frontier (kvplan.planning.pareto) and its chart (kvplan.views.pareto): hand-derived frontiers, a
hand-checked 80-column golden, the SVG's structure and escaping, a real sweep checked against speed() row by row.
"""

from __future__ import annotations

import itertools
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.planning.pareto import pareto_front
from kvplan.views.pareto import Labelled, ParetoChart, nice_top, render_terminal, save_plot, to_svg

SVG = "{http://www.w3.org/2000/svg}"
GOLDEN = Path(__file__).resolve().parent / "golden" / "pareto_80.txt"


# --------------------------------------------------------------------------------------------------
# pareto_front
# --------------------------------------------------------------------------------------------------


def test_front_by_hand():
    # (2, 5) is dominated by (2, 8) (same x, lower y); (1, 9) by (1, 10); the second (3, 1) is a copy of index 3
    assert pareto_front([(1, 10), (2, 8), (2, 5), (3, 1), (1, 9), (3, 1)]) == [0, 1, 3]


def test_front_same_y_larger_x_dominates():
    # (1, 5) and (3, 5): the one with the larger x wins; (2, 6) beats neither on x nor is beaten on y
    assert pareto_front([(1, 5), (3, 5), (2, 6)]) == [2, 1]


def test_front_one_point_dominates_all():
    assert pareto_front([(1, 1), (2, 2), (5, 9), (4, 8), (0, 0)]) == [2]


def test_front_chain_is_sorted_by_x():
    # a strict trade-off: every point is on the frontier, returned by ascending x whatever the input order
    assert pareto_front([(3, 1), (1, 3), (2, 2)]) == [1, 2, 0]


def test_front_skips_nan_and_inf_and_empty():
    assert pareto_front([]) == []
    assert pareto_front([(math.nan, 100), (1, math.inf), (1, 1)]) == [2]


def test_front_matches_brute_force():
    import random

    rng = random.Random(7)
    pts = [(rng.randint(0, 12), rng.randint(0, 12)) for _ in range(300)]

    def dominated(p):
        return any(q[0] >= p[0] and q[1] >= p[1] and q != p for q in pts)

    want = sorted({p for p in pts if not dominated(p)})
    got = [pts[i] for i in pareto_front(pts)]
    assert got == want  # distinct (x, y), ascending x
    assert all(pts.index(p) == i for p, i in zip(got, pareto_front(pts), strict=True))  # the first copy stands


def test_nice_top():
    assert nice_top(4918.35) == (5000.0, 1000.0)
    assert nice_top(45.1) == (50.0, 10.0)
    assert nice_top(40) == (40.0, 10.0)  # 8 -> 10: 40 is a multiple, no empty interval on top
    assert nice_top(1000) == (1000.0, 200.0)
    assert nice_top(0.0) == (1.0, 0.25)


# --------------------------------------------------------------------------------------------------
# the chart from fixed points
# --------------------------------------------------------------------------------------------------

#: eight points: the frontier is (10, 1000), (20, 900), (30, 600), (40, 200) (by hand: walking x down, y must rise
#: above every y seen: 200, then 600 > 200, 900 > 600, 1000 > 900; (35, 100), (25, 500), (15, 700), (5, 400) fail)
XS = [10.0, 20.0, 30.0, 40.0, 15.0, 25.0, 35.0, 5.0]
YS = [1000.0, 900.0, 600.0, 200.0, 700.0, 500.0, 100.0, 400.0]
LABELS = ["h100-sxm tp=1 fp8_e4m3", "h100-sxm tp=2 fp8_e4m3", "h200-sxm tp=4 bf16", "l40s\x1b]52;c;eA==\x07 tp=8 <&>"]


def fixed_chart() -> ParetoChart:
    front = pareto_front(zip(XS, YS, strict=True))
    assert front == [0, 1, 2, 3]
    return ParetoChart(
        x=XS,
        y=YS,
        front=[Labelled(LABELS[k], XS[i], YS[i]) for k, i in enumerate(front)],
        title="Pareto: Qwen3-32B, 8k in + 1k out, concurrency 16",
        caption="8 of 10 points fit; 4 on the frontier: no other point is both faster per request and higher per GPU",
    )


def test_terminal_golden_80():
    """tests/golden/pareto_80.txt, checked by hand: x top 40 (step 10), y top 1,000 (step 200); 72 plot columns
    (80 - 6 label - 2), col = round(x / 40 x 71): 10 -> 18, 20 -> 36, 30 -> 53, 40 -> 71, 15 -> 27, 25 -> 44,
    35 -> 62, 5 -> 9; 14 rows, row = 13 - round(y / 1000 x 13): 1000 -> 0, 900 -> 1, 600 -> 5, 200 -> 10,
    700 -> 4, 500 -> 7 (6.5 rounds to even), 100 -> 12, 400 -> 8."""
    text = render_terminal(fixed_chart(), width=80)
    assert text + "\n" == GOLDEN.read_text()


def test_terminal_chart_positions():
    lines = render_terminal(fixed_chart(), width=80).splitlines()
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)
    grid = [line.split("|", 1)[1] for line in lines if " |" in line]
    assert len(grid) == 14
    at = {ch: (r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch in "ABCD"}
    assert at == {"A": (0, 18), "B": (1, 36), "C": (5, 53), "D": (10, 71)}
    others = sorted((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "o")
    assert others == [(4, 27), (7, 44), (8, 9), (12, 62)]
    # the hostile label: escaped, never raw
    assert "\x1b" not in "\n".join(lines) and "\x07" not in "\n".join(lines)
    assert any(line.startswith("  D  l40s\\x1b]52;c;eA==\\x07 tp=8 <&>") for line in lines)


def test_terminal_narrow_and_long_labels():
    chart = fixed_chart()
    chart.front[0].label = "x" * 300
    for width in (60, 80):
        lines = render_terminal(chart, width=width).splitlines()
        assert max(len(line) for line in lines) <= width
        assert any("..." in line for line in lines if line.startswith("  A  "))


def test_legend_is_bounded():
    from kvplan.views.pareto import LETTERS

    n = len(LETTERS) + 9  # a strict trade-off: every point on the frontier
    xs = [float(i + 1) for i in range(n)]
    ys = [float(n - i) for i in range(n)]
    chart = ParetoChart(
        x=xs, y=ys, front=[Labelled(f"p{i}", xs[i], ys[i]) for i in pareto_front(zip(xs, ys, strict=True))]
    )
    lines = render_terminal(chart, width=80).splitlines()
    legend = [line for line in lines if "tok/s/GPU" in line]
    assert len(legend) == len(LETTERS)
    assert "  #  9 more frontier points, faster per request (--plot labels each)" in lines
    root = ET.fromstring(to_svg(chart))
    assert len([e for e in root.iter(SVG + "text") if e.get("class") == "label"]) == n


def test_svg_structure_and_escaping():
    svg = to_svg(fixed_chart())
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag == SVG + "svg"
    lines = [e for e in root.iter(SVG + "polyline") if e.get("class") == "frontier"]
    assert len(lines) == 1
    assert len(lines[0].get("points", "").split()) == 4  # one vertex per frontier point
    labels = [e.text for e in root.iter(SVG + "text") if e.get("class") == "label"]
    assert len(labels) == 4
    assert labels[3] == "l40s\\x1b]52;c;eA==\\x07 tp=8 <&>"  # parsed back: & < > were escaped, controls shown
    assert "\x1b" not in svg and "<&>" not in svg
    assert len([e for e in root.iter(SVG + "circle") if e.get("class") == "point"]) == 8


def test_svg_labels_of_crowded_points_are_kept_apart():
    # four frontier points a few pixels apart: each label one line (13 px) below the one before
    xs, ys = [10.0, 10.5, 11.0, 11.5], [1000.0, 990.0, 980.0, 970.0]
    chart = ParetoChart(
        x=xs, y=ys, front=[Labelled(f"tp={i} h200-sxm", x, y) for i, (x, y) in enumerate(zip(xs, ys, strict=True))]
    )
    root = ET.fromstring(to_svg(chart))
    ty = [float(e.get("y", "")) for e in root.iter(SVG + "text") if e.get("class") == "label"]
    assert all(b - a >= 13.0 - 1e-9 for a, b in itertools.pairwise(ty))


def test_svg_bounds_the_dominated_points():
    xs = [i % 1000 / 10 for i in range(20000)]
    ys = [(i * 7919) % 1000 for i in range(20000)]
    chart = ParetoChart(x=xs, y=ys, front=[Labelled("a", 99.9, 999.0)])
    root = ET.fromstring(to_svg(chart))
    n = len([e for e in root.iter(SVG + "circle") if e.get("class") == "point"])
    assert n <= (650 // 3 + 1) * (364 // 3 + 1)  # one per 3 px cell of the plot area at most


def test_save_plot_svg_and_refusals(tmp_path):
    p = save_plot(fixed_chart(), tmp_path / "p.svg")
    ET.parse(p)
    assert [x.name for x in tmp_path.iterdir()] == ["p.svg"]  # no temporary file left
    with pytest.raises(InputError):
        save_plot(fixed_chart(), tmp_path / "p.txt")


def test_png_only_with_matplotlib(tmp_path):
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(InputError, match="matplotlib"):
            save_plot(fixed_chart(), tmp_path / "p.png")
    else:
        p = save_plot(fixed_chart(), tmp_path / "p.png")
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------------
# a real sweep
# --------------------------------------------------------------------------------------------------


def _sweep():
    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import sweep
    from kvplan.planning.sweep.speed import SpeedColumns

    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", input_len=8192, output_len=1024)
    t = sweep(base, {"gpu": ["h100-sxm", "h200-sxm"], "tp": [1, 2, 4], "kv_cache_dtype": ["auto", "fp8_e4m3"]})
    return t, SpeedColumns(t, concurrency=16)


def test_sweep_frontier_is_speed_of_its_rows():
    from kvplan.planning.pareto import sweep_pareto
    from kvplan.planning.speed import SpeedInputs, speed

    t, cols = _sweep()
    pts, front = sweep_pareto(t, cols)
    assert 0 < len(front) <= len(pts.rows) <= len(t) == 12
    for p in front:
        r = speed(t.deployment(p.row), SpeedInputs(concurrency=16))
        assert p.x == pytest.approx(r.decode_tokens_per_s_per_request)
        assert p.y == pytest.approx(r.total_tokens_per_s_per_gpu)
        assert p.concurrency == r.concurrency
    # no point of the sweep beats a frontier point on both axes
    for p in front:
        assert not any(x >= p.x and y >= p.y and (x, y) != (p.x, p.y) for x, y in zip(pts.x, pts.y, strict=True))
    # rows that do not fit are not points: tp=1 of a 32B model in bf16 on an H100 holds no 40,960-token request
    fits = {i for i in range(len(t)) if t.row(i)["fits"]}
    assert set(pts.rows) == fits


def test_sweep_chart_labels_name_the_swept_columns():
    from kvplan.views.pareto import sweep_chart

    t, cols = _sweep()
    chart = sweep_chart(t, cols)
    assert chart.title == "Pareto: Qwen3-32B, 8k in + 1k out, --concurrency 16"
    # each label: the swept columns (gpu, tp, kv dtype) and the concurrency run, less what every frontier point
    # shares, which the caption says once
    shared = chart.caption.rpartition("all of them: ")[2].rstrip(".").split() if "all of them" in chart.caption else []
    for p in chart.front:
        words = p.label.split() + shared
        assert sum(w in ("h100-sxm", "h200-sxm") for w in words) == 1
        assert sum(w.startswith("tp=") for w in words) == 1
        assert sum(w in ("bf16", "fp8_e4m3") for w in words) == 1
        assert "GPUs=" not in p.label  # derived from tp, not swept
    assert len({p.label for p in chart.front}) == len(chart.front)  # the labels tell the points apart
    text = render_terminal(chart, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_sweep_frontier_over_a_concurrency_list():
    from kvplan.planning.pareto import sweep_pareto
    from kvplan.planning.speed import SpeedInputs, speed

    t, cols = _sweep()
    pts, front = sweep_pareto(t, cols, [1, 8, 32])
    n_fit = sum(1 for i in range(len(t)) if t.row(i)["fits"])
    assert len(pts.rows) == 3 * n_fit and pts.n_rows == 3 * len(t)
    # the fastest point per request and the highest per GPU are on the frontier whatever else is
    fastest = max(range(len(pts.x)), key=lambda k: (pts.x[k], pts.y[k]))
    densest = max(range(len(pts.y)), key=lambda k: (pts.y[k], pts.x[k]))
    assert (pts.x[fastest], pts.y[fastest]) == (front[-1].x, front[-1].y)
    assert (pts.x[densest], pts.y[densest]) == (front[0].x, front[0].y)
    for p in front:
        r = speed(t.deployment(p.row), SpeedInputs(concurrency=p.asked))
        assert p.x == pytest.approx(r.decode_tokens_per_s_per_request) and p.concurrency == r.concurrency


def test_a_workload_longer_than_the_context_is_no_point():
    from kvplan.deployment import Deployment
    from kvplan.planning.pareto import sweep_points
    from kvplan.planning.sweep import sweep
    from kvplan.planning.sweep.speed import SpeedColumns

    # Qwen3-32B holds 40,960 positions: 65,536 + 1,024 tokens never runs (room 0), 8,192 + 1,024 does
    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h200-sxm", tp=2, output_len=1024)
    t = sweep(base, {"input_len": [8192, 65536]})
    assert [t.row(i)["fits"] for i in range(2)] == [True, True]
    assert t.row(1)["workload_concurrency"] == 0
    assert sweep_points(t, SpeedColumns(t)).rows == [0]


def test_sweep_chart_nothing_fits():
    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import sweep
    from kvplan.planning.sweep.speed import SpeedColumns
    from kvplan.views.pareto import sweep_chart

    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="l40s", input_len=8192, output_len=1024)
    t = sweep(base, {"tp": [1]})
    with pytest.raises(InputError, match="nothing to chart"):
        sweep_chart(t, SpeedColumns(t))
