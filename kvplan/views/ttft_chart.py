"""TTFT against prompt length for chosen deployments (issue 23 item 3, the second chart).

Each series is one deployment; each point is :func:`kvplan.planning.speed.speed` of that deployment with
``input_len`` set to one prompt length (the output length, the concurrency and every other input unchanged): its
``ttft_s`` and ``prefill_tokens_per_s``.  A prompt the deployment cannot serve (kvplan's plan: it does not fit, or
no request of that many tokens runs, e.g. longer than the context length) is kept, marked as not running: hollow
in the SVG, ``x`` in the terminal chart and after its value in the table.

x = prompt tokens (log2 scale), y = TTFT in seconds (log10 scale: a 1k prompt takes tens of milliseconds, a 128k
one tens of seconds).  Outputs: :func:`render_terminal` (text of at most ``width`` columns, a table of the values
under the chart), :func:`to_svg` (hand-written, labels escaped), :func:`to_json`, :func:`save_plot` (``.svg``;
``.png`` with matplotlib only), written atomically.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvplan.errors import InputError, terminal_text
from kvplan.views.frontier import COLORS, escape
from kvplan.views.sweep import fmt_count

MARKERS = "*o+#@%&"
NOT_RUN = "x"
SHARED = "="  # two deployments' points in one character cell
MAX_SERIES = len(MARKERS)
MAX_LENGTHS = 32
X_TITLE = "prompt tokens (log scale)"
Y_TITLE = "TTFT, s (log scale)"


@dataclass
class TtftSeries:
    """One deployment's curve: per prompt length, TTFT, prefill rate and whether the request runs at all."""

    label: str
    input_lens: list[int]
    ttft_s: list[float]
    prefill_tokens_per_s: list[float]
    runs: list[bool]


def deployment_label(dep: Any, r: Any) -> str:
    """A curve's label from the deployment and its speed result: model (no org), GPUs, layout, KV dtype, engine.

    Example: ``Qwen3-32B on 2x h100-sxm, tp=2, KV bf16, sglang`` (the GPU as the user named it, else the
    preset's name; ep / dp only when above 1)."""
    layout = [f"tp={r.tp}"] + [f"{k}={v}" for k, v in (("ep", r.ep), ("dp", r.dp)) if v and v > 1]
    model = str(r.model).rpartition("/")[2]
    return f"{model} on {r.num_gpus}x {dep.gpu or r.gpu}, {' '.join(layout)}, KV {r.kv_cache_dtype}, {r.engine}"


def _runs(dep: Any) -> bool:
    """kvplan's plan serves at least one request of the workload (``fits`` and ``workload_concurrency >= 1``)."""
    from kvplan.planning.plan import fit

    res = fit(dep)
    return bool(res.fits) and int(res.workload_concurrency or 0) > 0


def ttft_series(
    deployments: Sequence[tuple[str, Any]], input_lens: Sequence[int], inputs: Any = None
) -> list[TtftSeries]:
    """One :class:`TtftSeries` per ``(label, Deployment)``, over ``input_lens`` (sorted, duplicates dropped).

    InputError for more than :data:`MAX_SERIES` deployments or :data:`MAX_LENGTHS` lengths (``--input-len``), or
    a length below 1.  The work is ``len(deployments) x len(input_lens)`` calls of speed() and fit()."""
    from kvplan.planning.speed import speed

    lens = sorted({int(n) for n in input_lens})
    if not lens:
        raise InputError("no prompt length to chart", field="--input-len", hint="e.g. --input-len 1k,4k,16k,64k")
    if lens[0] < 1:
        raise InputError(f"a prompt length must be >= 1, got {lens[0]}", field="--input-len")
    if len(lens) > MAX_LENGTHS:
        raise InputError(f"{len(lens)} prompt lengths is more than a chart shows ({MAX_LENGTHS})", field="--input-len")
    if len(deployments) > MAX_SERIES:
        raise InputError(f"{len(deployments)} deployments is more than a chart shows ({MAX_SERIES})", field="--engine")
    out = []
    for label, dep in deployments:
        s = TtftSeries(label=label, input_lens=[], ttft_s=[], prefill_tokens_per_s=[], runs=[])
        for n in lens:
            d = replace(dep, input_len=n)
            r = speed(d, inputs)
            s.label = s.label or deployment_label(d, r)
            s.input_lens.append(n)
            s.ttft_s.append(float(r.ttft_s))
            s.prefill_tokens_per_s.append(float(r.prefill_tokens_per_s))
            s.runs.append(_runs(d.with_defaults()))
        out.append(s)
    return out


def y_scale(values: Sequence[float], *, max_ticks: int = 7) -> tuple[float, float, list[float]]:
    """(log10 bottom, log10 top, ticks in seconds) of the TTFT axis: the positive ``values``' range padded by 5% of
    its span (at least one decade), ticks at 1, 2 and 5 x 10^k inside it (only the powers of ten when those are
    more than ``max_ticks``).

    Example: 0.072 s .. 9.71 s -> log10 -1.14 .. 0.99, span 2.13, padded to -1.25 .. 1.09: ticks 0.1, 0.2, 0.5,
    1, 2, 5, 10 (seven)."""
    pos = [v for v in values if v > 0 and math.isfinite(v)]
    if not pos:
        return -1.0, 0.0, [0.1, 1.0]
    llo, lhi = math.log10(min(pos)), math.log10(max(pos))
    if lhi - llo < 1:
        mid = (lhi + llo) / 2
        llo, lhi = mid - 0.5, mid + 0.5
    pad = 0.05 * (lhi - llo)
    llo, lhi = llo - pad, lhi + pad
    ticks = [
        m * 10.0**k
        for k in range(math.floor(llo), math.ceil(lhi) + 1)
        for m in (1, 2, 5)
        if llo <= math.log10(m * 10.0**k) <= lhi
    ]
    if len(ticks) > max_ticks:
        ticks = [t for t in ticks if math.log10(t).is_integer()] or ticks[:1]
    return llo, lhi, ticks


def _tick(v: float) -> str:
    return f"{v:g}"


def _ttft_text(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v * 1e3:,.0f} ms" if v < 1 else f"{v:,.2f} s"


def render_terminal(series: list[TtftSeries], *, width: int = 80, height: int = 14, title: str = "") -> str:
    """The chart and the table of its values as text of at most ``width`` columns."""
    xs = sorted({n for s in series for n in s.input_lens})
    lo, hi, ticks = y_scale([v for s in series for v in s.ttft_s], max_ticks=height // 2)
    left = max(len(_tick(t)) for t in ticks) + 1
    w = max(width - left - 2, 20)
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])

    def col(x: int) -> int:
        return 0 if lx1 == lx0 else round((math.log2(x) - lx0) / (lx1 - lx0) * (w - 1))

    def row(y: float) -> int:
        f = (math.log10(y) - lo) / (hi - lo) if y > 0 else 0.0
        return height - 1 - min(height - 1, max(0, round(f * (height - 1))))

    ylab = {row(t): _tick(t) for t in ticks}

    grid = [[" "] * w for _ in range(height)]
    taken: set[tuple[int, int]] = set()
    for si, s in enumerate(series):
        pts = [(col(x), row(y)) for x, y in zip(s.input_lens, s.ttft_s, strict=True)]
        for (c0, r0), (c1, r1) in itertools.pairwise(pts):
            steps = max(abs(c1 - c0), abs(r1 - r0), 1)
            for k in range(1, steps):
                c, r = round(c0 + (c1 - c0) * k / steps), round(r0 + (r1 - r0) * k / steps)
                if grid[r][c] == " ":
                    grid[r][c] = "."
        for (c, r), ok in zip(pts, s.runs, strict=True):
            mine = MARKERS[si] if ok else NOT_RUN
            grid[r][c] = SHARED if (c, r) in taken and grid[r][c] != mine else mine
            taken.add((c, r))
    lines = [terminal_text(title)[:width]] if title else []
    lines.append(Y_TITLE)
    lines.extend((ylab.get(r, "").rjust(left) + " |" + "".join(grid[r])).rstrip() for r in range(height))
    lines.append(" " * (left + 1) + "+" + "-" * w)
    labels = [" "] * (w + 8)
    last_end = -2
    for x in xs:
        t = fmt_count(x)
        start = max(0, min(col(x) - len(t) // 2, w - len(t)))
        if start > last_end + 1:
            labels[start : start + len(t)] = t
            last_end = start + len(t)
    lines.append((" " * (left + 2) + "".join(labels)).rstrip())
    lines.append((" " * (left + 2) + X_TITLE.center(w)).rstrip())
    lines.append("")
    for si, s in enumerate(series):
        lines.append(f"  {MARKERS[si]}  {terminal_text(s.label)}"[:width])
    if any(ch == SHARED for r in grid for ch in r):
        lines.append(f"  {SHARED}  points of several deployments in one cell (the table has each value)")
    if any(not ok for s in series for ok in s.runs):
        lines.append(f"  {NOT_RUN}  does not run (kvplan's plan: no request of that length fits)"[:width])
    lines.append("")
    lines.extend(_table(series, width))
    return "\n".join(lines)


def _table(series: list[TtftSeries], width: int) -> list[str]:
    xs = sorted({n for s in series for n in s.input_lens})
    one = len(series) == 1
    head = ["prompt", *(["TTFT", "prefill tok/s"] if one else [f"{MARKERS[i]} TTFT" for i in range(len(series))])]
    rows = []
    for x in xs:
        cells = [fmt_count(x)]
        for s in series:
            k = s.input_lens.index(x)
            t = _ttft_text(s.ttft_s[k]) + ("  " if s.runs[k] else " " + NOT_RUN)
            cells.append(t)
            if one:
                cells.append(f"{s.prefill_tokens_per_s[k]:,.0f}")
        rows.append(cells)
    widths = [max(len(r[j]) for r in [head, *rows]) for j in range(len(head))]
    return [
        "  ".join(c.ljust(widths[0]) if j == 0 else c.rjust(widths[j]) for j, c in enumerate(r)).rstrip()[:width]
        for r in [head, *rows]
    ]


def to_json(series: list[TtftSeries]) -> str:
    """The curves as JSON: a list of ``{"label", "points": [{"input_len", "ttft_s", "prefill_tokens_per_s",
    "runs"}]}``."""
    doc = [
        {
            "label": s.label,
            "points": [
                {"input_len": n, "ttft_s": t, "prefill_tokens_per_s": p, "runs": ok}
                for n, t, p, ok in zip(s.input_lens, s.ttft_s, s.prefill_tokens_per_s, s.runs, strict=True)
            ],
        }
        for s in series
    ]
    return json.dumps(doc, indent=2) + "\n"


def to_svg(
    series: list[TtftSeries], *, title: str = "TTFT vs prompt length", width: int = 760, height: int = 420
) -> str:
    """A standalone SVG document: one ``<polyline class="series">`` per deployment, a circle per point (hollow
    where it does not run), one legend ``<text class="label">`` per deployment."""
    ml, mr, mt = 70, 20, 40
    mb = 60 + 16 * len(series)
    h = height + 16 * len(series)
    pw, ph = width - ml - mr, h - mt - mb
    xs = sorted({n for s in series for n in s.input_lens})
    lo, hi, ticks = y_scale([v for s in series for v in s.ttft_s])
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])

    def X(x: int) -> float:
        return ml + (0 if lx1 == lx0 else (math.log2(x) - lx0) / (lx1 - lx0) * pw)

    def Y(y: float) -> float:
        f = (math.log10(y) - lo) / (hi - lo) if y > 0 else 0.0
        return mt + ph - min(max(f, 0.0), 1.0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{h}" fill="white"/>',
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]
    for t in ticks:
        y = Y(t)
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end">{_tick(t)}</text>')
    for x in xs:
        out.append(f'<line x1="{X(x):.1f}" y1="{mt}" x2="{X(x):.1f}" y2="{mt + ph}" stroke="#eee"/>')
        out.append(f'<text x="{X(x):.1f}" y="{mt + ph + 16}" text-anchor="middle">{escape(fmt_count(x))}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{ml + pw / 2:.1f}" y="{mt + ph + 36}" text-anchor="middle">{escape(X_TITLE)}</text>')
    out.append(
        f'<text transform="translate(16 {mt + ph / 2:.1f}) rotate(-90)" text-anchor="middle">{escape(Y_TITLE)}</text>'
    )
    for si, s in enumerate(series):
        color = COLORS[si % len(COLORS)]
        pts = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in zip(s.input_lens, s.ttft_s, strict=True))
        out.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
        for x, y, ok in zip(s.input_lens, s.ttft_s, s.runs, strict=True):
            tip = f"{s.label}: {x:,} tokens, TTFT {_ttft_text(y)}" + ("" if ok else " (does not run)")
            out.append(
                f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3.5" fill="{color if ok else "white"}" '
                f'stroke="{color}"><title>{escape(tip)}</title></circle>'
            )
        ly = mt + ph + 54 + 16 * si
        out.append(f'<line x1="{ml}" y1="{ly - 4}" x2="{ml + 24}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text class="label" x="{ml + 30}" y="{ly}">{escape(s.label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def save_plot(series: list[TtftSeries], path: str | Path, *, title: str = "TTFT vs prompt length") -> Path:
    """Write ``path``: ``.svg`` always; ``.png`` only when matplotlib is importable (InputError otherwise)."""
    from kvplan.inputs.read import atomic_output, write_output
    from kvplan.views.pareto import load_pyplot, png_text

    p = Path(path)
    ext = p.suffix.lower()
    if ext == ".svg":
        write_output(p, to_svg(series, title=title), field="--plot")
        return p
    if ext != ".png":
        raise InputError(f"cannot write '{p.name}'", field="--plot", hint="give a .svg (or .png with matplotlib) file")
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for si, s in enumerate(series):
        ax.plot(s.input_lens, s.ttft_s, marker="o", color=COLORS[si % len(COLORS)], label=png_text(s.label))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("TTFT (s)")
    ax.set_title(png_text(title))
    ax.legend()
    ax.grid(alpha=0.3)
    try:
        with atomic_output(p, field="--plot", binary=True) as fh:
            fig.savefig(fh, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return p
