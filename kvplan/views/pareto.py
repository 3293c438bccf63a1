"""The Pareto chart of a speed sweep: throughput per GPU against per-request decode rate (issue 23 item 3).

x = ``decode_tokens_per_s_per_request`` (tok/s one request sees), y = ``total_tokens_per_s_per_gpu`` (input +
output tok/s per GPU), both linear from 0; every fitting point of the sweep drawn, the frontier (points no other
point beats on both axes, :func:`kvplan.planning.pareto.pareto_front`) joined by a line, each frontier point
labelled by its configuration: the sweep's varying columns (gpu, tp, kv dtype, ...) and the concurrency it runs at
when that differs between frontier points.  Three outputs:

* :func:`render_terminal` -- text, at most ``width`` columns (80 by default), no dependency: frontier points are
  letters (A, B, ...) explained under the chart, other points ``o``, the frontier line ``.``;
* :func:`to_svg` -- a hand-written SVG document (labels through :func:`kvplan.views.frontier.escape`);
* :func:`save_plot` -- ``.svg`` via :func:`to_svg`, ``.png`` via matplotlib when it is importable; both written
  atomically (:mod:`kvplan.inputs.read`).  :func:`kvplan.views.frontier.check_plot_path` checks the path first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvplan.errors import InputError, terminal_text
from kvplan.views.frontier import escape

X_TITLE = "decode tok/s per request (1 / TPOT)"
Y_TITLE = "total tok/s per GPU (input + output)"
#: frontier markers in the terminal: A-Z, then a-z without o (o marks the other points)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnpqrstuvwxyz"
OTHER = "o"
LINE = "."
SHARED = "*"  # two frontier points in one character cell
#: the SVG draws at most one dominated point per cell of this many pixels (a 100,000-point sweep stays small)
SVG_CELL_PX = 3


@dataclass
class Labelled:
    """One frontier point as the chart shows it."""

    label: str
    x: float
    y: float


@dataclass
class ParetoChart:
    """What every output draws: all points (x, y), the frontier points (ascending x), a title and a caption."""

    x: list[float]
    y: list[float]
    front: list[Labelled]
    title: str = "Pareto frontier: throughput per GPU vs decode rate per request"
    caption: str = ""
    n_rows: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _vary_label(table: Any, row: int, vary: list[str]) -> list[str]:
    from kvplan.planning.sweep import GROUP_COLS
    from kvplan.views.sweep import SHORT, fmt_count, fmt_value, short_label

    r = table.row(row)
    g = table.groups[int(table.cols["gid"][row])]
    parts = []
    for k in vary:
        if k in GROUP_COLS:
            v = short_label(g, k)
        elif k in ("context_length", "max_total_tokens", "input_len", "output_len"):
            v = fmt_count(r.get(k))
        else:
            v = fmt_value(r.get(k))
        parts.append(v if k in ("model", "gpu", "engine", "kv_cache_dtype") else f"{SHORT.get(k, k)}={v}")
    return parts


def sweep_chart(table: Any, cols: Any, concurrencies: Sequence[int] | None = None) -> ParetoChart:
    """The chart of a sweep with speed columns (``cols``: :class:`kvplan.planning.sweep.speed.SpeedColumns`) at
    each of ``concurrencies`` (default: ``cols``' one).  InputError (``--chart``) when no point fits."""
    from kvplan.planning.pareto import sweep_pareto
    from kvplan.views.sweep import fmt_count, short_label

    concs = list(concurrencies or [cols.concurrency])
    pts, front = sweep_pareto(table, cols, concs)
    if not front:
        raise InputError(
            f"no point of the sweep fits ({pts.n_rows:,} evaluated): nothing to chart",
            field="--chart",
            hint="sweep more GPUs, a larger --tp or a shorter --context-length",
        )
    # the columns the user swept (derived ones such as GPUs from tp, or an engine's default memory fraction, left out)
    swept = [k for k in table.varying() if k != "page_size"]
    vary = [k for k in swept if k in table.axes] or swept
    parts = [[*_vary_label(table, p.row, vary), f"c={p.concurrency:,}"] for p in front]
    # a part every frontier point shares is said once (the caption), not on every label
    same = (
        [len({ps[j] for ps in parts}) == 1 for j in range(len(vary) + 1)]
        if len(front) > 1
        else [False] * len(vary) + [True]
    )
    shared = [
        t for j, t in enumerate(parts[0]) if same[j] and not (j == len(vary) and front[0].concurrency == concs[0])
    ]
    labels = [" ".join(t for j, t in enumerate(ps) if not same[j]) or "the one configuration" for ps in parts]
    g = table.groups[0]
    r0 = table.row(front[0].row)
    fixed = []
    if "model" not in vary:
        fixed.append(short_label(g, "model"))
    if "gpu" not in vary:
        fixed.append(f"on {short_label(g, 'gpu')}")
    if "input_len" not in vary and "output_len" not in vary:
        fixed.append(f"{fmt_count(r0.get('input_len'))} in + {fmt_count(r0.get('output_len'))} out")
    fixed.append("--concurrency " + (",".join(map(str, concs)) if len(concs) <= 6 else f"{concs[0]}..{concs[-1]}"))
    caption = (
        f"{len(pts.rows):,} of {pts.n_rows:,} points fit; {len(front)} on the frontier: no other point is both "
        f"faster per request and higher per GPU"
    )
    if shared:
        caption += ("; all of them: " if len(front) > 1 else "; ") + " ".join(shared)
    caption += "."
    return ParetoChart(
        x=pts.x,
        y=pts.y,
        front=[Labelled(lab, p.x, p.y) for lab, p in zip(labels, front, strict=True)],
        title="Pareto: " + ", ".join(fixed),
        caption=caption,
        n_rows=len(table),
    )


def nice_top(vmax: float, ticks: int = 5) -> tuple[float, float]:
    """(axis top, tick step): the smallest step 1, 2, 2.5 or 5 x 10^k at least ``vmax / ticks``, the top the first
    multiple of it at or above ``vmax``.

    Example: ``nice_top(4918.35)``: vmax / 5 = 983.7 -> step 1,000, top 5,000; ``nice_top(45.1)``: 9.02 -> step
    10, top 50; ``nice_top(0)`` -> ``(1.0, 0.25)`` (an empty axis still has a scale)."""
    if not vmax > 0:
        return 1.0, 0.25
    raw = vmax / ticks
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw * (1 - 1e-12))
    return math.ceil(vmax / step - 1e-9) * step, step


def _tick_text(v: float, step: float) -> str:
    return f"{v:,.0f}" if step >= 1 else f"{v:g}"


def _letter(k: int) -> str:
    return LETTERS[k] if k < len(LETTERS) else "#"


def render_terminal(chart: ParetoChart, *, width: int = 80, height: int = 14) -> str:
    """The chart as text of at most ``width`` columns (no trailing spaces)."""

    xtop, xstep = nice_top(max(chart.x, default=0.0))
    ytop, ystep = nice_top(max(chart.y, default=0.0))
    yticks = [ystep * k for k in range(round(ytop / ystep) + 1)]
    ylabels = [_tick_text(t, ystep) for t in yticks]
    left = max(len(s) for s in ylabels) + 1
    w = max(width - left - 2, 20)

    def col(x: float) -> int:
        return min(w - 1, max(0, round(x / xtop * (w - 1))))

    def row(y: float) -> int:
        return height - 1 - min(height - 1, max(0, round(y / ytop * (height - 1))))

    grid = [[" "] * w for _ in range(height)]
    fpts = [(col(p.x), row(p.y)) for p in chart.front]
    for (c0, r0), (c1, r1) in itertools.pairwise(fpts):
        steps = max(abs(c1 - c0), abs(r1 - r0), 1)
        for k in range(1, steps):
            grid[round(r0 + (r1 - r0) * k / steps)][round(c0 + (c1 - c0) * k / steps)] = LINE
    for x, y in zip(chart.x, chart.y, strict=True):
        grid[row(y)][col(x)] = OTHER
    placed: set[tuple[int, int]] = set()
    for k, (c, r) in enumerate(fpts):
        grid[r][c] = SHARED if (c, r) in placed else _letter(k)
        placed.add((c, r))
    ylab = {row(t): s for t, s in zip(yticks, ylabels, strict=True)}
    lines = [terminal_text(chart.title)[:width], Y_TITLE[:width]]
    lines.extend((ylab.get(r, "").rjust(left) + " |" + "".join(grid[r])).rstrip() for r in range(height))
    lines.append(" " * (left + 1) + "+" + "-" * w)
    labels = [" "] * (w + 1)
    last_end = -2
    for k in range(round(xtop / xstep) + 1):
        t = _tick_text(xstep * k, xstep)
        start = max(0, min(col(xstep * k) - len(t) // 2, w - len(t)))
        if start > last_end + 1:
            labels[start : start + len(t)] = t
            last_end = start + len(t)
    lines.append((" " * (left + 2) + "".join(labels)).rstrip())
    lines.append((" " * (left + 2) + X_TITLE.center(w)).rstrip())
    lines.append("")
    if chart.caption:
        import textwrap

        lines.extend(textwrap.wrap(terminal_text(chart.caption), width=width))
    nums = [(f"{p.x:,.1f} tok/s/req", f"{p.y:,.0f} tok/s/GPU") for p in chart.front]
    nx = max(len(a) for a, _ in nums)
    ny = max(len(b) for _, b in nums)
    room = max(width - 6 - nx - ny - 4, 12)
    for k, (p, (a, b)) in enumerate(zip(chart.front[: len(LETTERS)], nums, strict=False)):
        lab = terminal_text(p.label)
        lab = lab if len(lab) <= room else lab[: room - 3] + "..."
        lines.append(f"  {_letter(k)}  {lab.ljust(room)}  {a.rjust(nx)}  {b.rjust(ny)}".rstrip())
    if len(chart.front) > len(LETTERS):  # the legend stays bounded; the SVG labels every frontier point
        more = len(chart.front) - len(LETTERS)
        lines.append(
            f"  {_letter(len(LETTERS))}  {more:,} more frontier points, faster per request (--plot labels each)"
        )
    shared = " ; * two frontier points in one cell" if len(placed) < len(fpts) else ""
    lines.append(f"  {OTHER}  other points   {LINE}  the frontier{shared}"[:width])
    return "\n".join(lines)


def to_svg(chart: ParetoChart, *, width: int = 760, height: int = 460) -> str:
    """A standalone SVG document: a ``<polyline class="frontier">``, a ``<circle class="point">`` per drawn point
    (one per :data:`SVG_CELL_PX` cell for dominated points) and one ``<text class="label">`` per frontier point."""
    ml, mr, mt, mb = 80, 30, 40, 56
    pw, ph = width - ml - mr, height - mt - mb
    xtop, xstep = nice_top(max(chart.x, default=0.0))
    ytop, ystep = nice_top(max(chart.y, default=0.0))

    def X(x: float) -> float:
        return ml + x / xtop * pw

    def Y(y: float) -> float:
        return mt + ph - y / ytop * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15">{escape(chart.title)}</text>',
    ]
    for k in range(round(ytop / ystep) + 1):
        t = ystep * k
        out.append(f'<line x1="{ml}" y1="{Y(t):.1f}" x2="{ml + pw}" y2="{Y(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ml - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{_tick_text(t, ystep)}</text>')
    for k in range(round(xtop / xstep) + 1):
        t = xstep * k
        out.append(f'<line x1="{X(t):.1f}" y1="{mt}" x2="{X(t):.1f}" y2="{mt + ph}" stroke="#eee"/>')
        out.append(f'<text x="{X(t):.1f}" y="{mt + ph + 16}" text-anchor="middle">{_tick_text(t, xstep)}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{ml + pw / 2:.1f}" y="{mt + ph + 36}" text-anchor="middle">{escape(X_TITLE)}</text>')
    out.append(
        f'<text transform="translate(18 {mt + ph / 2:.1f}) rotate(-90)" text-anchor="middle">{escape(Y_TITLE)}</text>'
    )
    if chart.caption:
        out.append(f'<text x="{ml}" y="{height - 6}" font-size="11" fill="#555">{escape(chart.caption)}</text>')
    seen: set[tuple[int, int]] = set()
    for x, y in zip(chart.x, chart.y, strict=True):
        cell = (int(X(x) // SVG_CELL_PX), int(Y(y) // SVG_CELL_PX))
        if cell in seen:
            continue
        seen.add(cell)
        out.append(f'<circle class="point" cx="{X(x):.1f}" cy="{Y(y):.1f}" r="2.5" fill="#bbb"/>')
    pts = " ".join(f"{X(p.x):.1f},{Y(p.y):.1f}" for p in chart.front)
    out.append(f'<polyline class="frontier" fill="none" stroke="#d62728" stroke-width="2" points="{pts}"/>')
    boxes: list[tuple[float, float, float, float]] = []  # the labels placed so far: (x0, x1, y0, y1)
    for p in chart.front:
        px, py = X(p.x), Y(p.y)
        anchor, dx = ("end", -7) if px > ml + 0.7 * pw else ("start", 7)
        tip = f"{p.label}: {p.x:,.1f} tok/s per request, {p.y:,.0f} tok/s per GPU"
        out.append(
            f'<circle class="front" cx="{px:.1f}" cy="{py:.1f}" r="4" fill="#d62728">'
            f"<title>{escape(tip)}</title></circle>"
        )
        ty = _label_y(boxes, px + dx, len(p.label) * LABEL_CHAR_PX, anchor, py - 6, top=mt + 11, bottom=mt + ph)
        out.append(
            f'<text class="label" x="{px + dx:.1f}" y="{ty:.1f}" text-anchor="{anchor}" font-size="11">'
            f"{escape(p.label)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


#: the width of one character of an 11 px sans-serif label, roughly (for keeping labels apart)
LABEL_CHAR_PX = 6.2
LABEL_LINE_PX = 13.0


def _label_y(
    boxes: list[tuple[float, float, float, float]],
    x: float,
    width: float,
    anchor: str,
    y: float,
    *,
    top: float,
    bottom: float,
) -> float:
    """The baseline of a label at ``x`` (``anchor`` start / end) wanted at ``y``: moved down a line at a time, at
    most 8 lines and not below ``bottom``, while it overlaps a label placed before (appended to ``boxes``)."""
    x0, x1 = (x, x + width) if anchor == "start" else (x - width, x)
    ty = max(y, top)
    for _ in range(8):
        if not any(x0 < b1 and b0 < x1 and ty - LABEL_LINE_PX < c1 and c0 < ty for b0, b1, c0, c1 in boxes):
            break
        if ty + LABEL_LINE_PX > bottom:
            break
        ty += LABEL_LINE_PX
    boxes.append((x0, x1, ty - LABEL_LINE_PX, ty))
    return ty


def save_plot(chart: ParetoChart, path: str | Path) -> Path:
    """Write ``path``: ``.svg`` always; ``.png`` only when matplotlib is importable (InputError otherwise)."""
    from kvplan.inputs.read import atomic_output, write_output

    p = Path(path)
    ext = p.suffix.lower()
    if ext == ".svg":
        write_output(p, to_svg(chart), field="--plot")
        return p
    if ext != ".png":
        raise InputError(f"cannot write '{p.name}'", field="--plot", hint="give a .svg (or .png with matplotlib) file")
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.scatter(chart.x, chart.y, s=8, color="#bbb", label="points of the sweep")
    ax.plot([f.x for f in chart.front], [f.y for f in chart.front], marker="o", color="#d62728", label="frontier")
    for f in chart.front:
        ax.annotate(png_text(f.label), (f.x, f.y), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(X_TITLE)
    ax.set_ylabel(Y_TITLE)
    ax.set_title(png_text(chart.title))
    ax.legend()
    ax.grid(alpha=0.3)
    try:
        with atomic_output(p, field="--plot", binary=True) as fh:
            fig.savefig(fh, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return p


def png_text(text: str) -> str:
    """Text for matplotlib: controls shown escaped (:func:`kvplan.errors.terminal_text`) and ``$`` escaped, so a
    name never switches on mathtext (a malformed formula would fail the whole plot)."""
    return terminal_text(text).replace("$", r"\$")


def load_pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            "PNG output needs matplotlib, which is not installed",
            field="--plot",
            hint="pip install matplotlib, or write an .svg file",
        ) from None
    return plt
