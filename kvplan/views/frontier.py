"""The capacity frontier: requests at once (max concurrency) against context length, per deployment.

Input is a :class:`kvplan.planning.sweep.SweepTable` with a context-length axis; each combination of the other
varying columns is one series.  Three outputs:

* :func:`render_terminal` -- a text chart (log2 context on x, ``log10(1 + concurrency)`` on y so that 0
  stays on the axis), no dependency;
* :func:`to_svg` -- a hand-written SVG document (no dependency);
* :func:`save_plot` -- ``.svg`` via :func:`to_svg`, ``.png`` via matplotlib when it is importable.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape as _xml_escape

from kvplan.errors import InputError, terminal_text, xml_text
from kvplan.views.sweep import SHORT, fmt_count, fmt_value, short_label


def escape(text: str) -> str:
    """SVG text: the characters XML 1.0 forbids and terminal controls escaped (kvplan.errors.xml_text), then
    ``& < >``."""
    return _xml_escape(xml_text(text))


MARKERS = "*o+x#@%&=~"
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")
MAX_SERIES = len(MARKERS)


@dataclass
class Series:
    label: str
    x: list[int]  # context lengths, ascending
    y: list[int]  # max concurrency (requests of that context at once, whole deployment)
    fits: list[bool]


def frontier_series(table) -> list[Series]:
    """One series per combination of the varying columns other than the context length."""
    vary = [k for k in table.varying() if k not in ("context_length", "page_size")]
    if "context_length" not in table.axes or len(table.axes["context_length"]) < 2:
        raise InputError(
            "the chart needs at least two context lengths",
            field="--context-length",
            hint="e.g. --context-length 4k:1m:x2",
        )
    groups: dict[tuple, Series] = {}
    for i in range(len(table)):
        r = table.row(i)
        if r["error"]:
            continue
        g = table.groups[int(table.cols["gid"][i])]
        key = tuple(short_label(g, k) if k in g.labels else fmt_value(r.get(k)) for k in vary)
        label = (
            " ".join(
                v if k in ("model", "gpu", "engine", "kv_cache_dtype") else f"{SHORT.get(k, k)}={v}"
                for k, v in zip(vary, key, strict=True)
            )
            or f"{short_label(g, 'model')} on {short_label(g, 'gpu')}"
        )
        s = groups.setdefault(key, Series(label=label, x=[], y=[], fits=[]))
        s.x.append(r["context_length"])
        s.y.append(r["max_concurrency"])
        s.fits.append(r["fits"])
    if len(groups) > MAX_SERIES:
        raise InputError(
            f"{len(groups)} series is more than a chart can show ({MAX_SERIES})",
            field="--chart",
            hint="sweep fewer combinations of the other flags",
        )
    out = []
    for s in groups.values():
        order = sorted(range(len(s.x)), key=lambda j: s.x[j])
        s.x, s.y, s.fits = [s.x[j] for j in order], [s.y[j] for j in order], [s.fits[j] for j in order]
        out.append(s)
    if not out:
        raise InputError("no valid deployment to chart", field="--chart")
    return out


def _ctx_label(n: int) -> str:
    return fmt_count(n)


def _ymap(v: float, ymax: float) -> float:
    return math.log10(1 + max(v, 0)) / math.log10(1 + max(ymax, 1))


def _yticks(ymax: int) -> list[int]:
    ticks = [0]
    v = 1
    while v <= max(ymax, 1):
        ticks.append(v)
        v *= 10
    return ticks


def render_terminal(series: list[Series], *, width: int = 100, height: int = 16, title: str = "") -> str:
    """The frontier as text: one marker per series, x = context (log2), y = requests at once (log scale)."""
    xs = sorted({x for s in series for x in s.x})
    ymax = max(max(s.y) for s in series)
    left = max(len(f"{ymax:,}"), 1) + 2
    w = max(width - left - 2, 20)
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])

    def col(x: int) -> int:
        return 0 if lx1 == lx0 else round((math.log2(x) - lx0) / (lx1 - lx0) * (w - 1))

    def row(y: int) -> int:
        return height - 1 - round(_ymap(y, ymax) * (height - 1))

    grid = [[" "] * w for _ in range(height)]
    for si, s in enumerate(series):
        m = MARKERS[si]
        pts = [(col(x), row(y)) for x, y in zip(s.x, s.y, strict=True)]
        for (c0, r0), (c1, r1) in itertools.pairwise(pts):
            steps = max(abs(c1 - c0), abs(r1 - r0), 1)
            for k in range(1, steps):
                c = round(c0 + (c1 - c0) * k / steps)
                r = round(r0 + (r1 - r0) * k / steps)
                if grid[r][c] == " ":
                    grid[r][c] = "."
        for c, r in pts:
            grid[r][c] = m
    ylab = {row(t): f"{t:,}" for t in _yticks(ymax)}
    ylab.setdefault(row(ymax), f"{ymax:,}")
    lines = [title] if title else []
    lines.append("requests at once".rjust(left + 8))
    lines.extend(ylab.get(r, "").rjust(left - 1) + " |" + "".join(grid[r]).rstrip() for r in range(height))
    lines.append(" " * left + "+" + "-" * w)
    labels = [" "] * (w + 12)
    last_end = -2
    for x in xs:
        t = _ctx_label(x)
        c = col(x)
        start = max(0, min(c - len(t) // 2, w - len(t)))
        if start > last_end + 1:
            labels[start : start + len(t)] = t
            last_end = start + len(t)
    lines.append(" " * (left + 1) + "".join(labels).rstrip())
    lines.append(" " * (left + 1) + "context length (tokens, log scale)".center(w).rstrip())
    for si, s in enumerate(series):
        lines.append(f"  {MARKERS[si]} {terminal_text(s.label)}")
    return "\n".join(lines)


def to_svg(series: list[Series], *, title: str = "KV capacity frontier", width: int = 760, height: int = 440) -> str:
    """A standalone SVG document of the frontier (hand-written; no dependency)."""
    ml, mr, mt, mb = 70, 20, 40, 60 + 16 * len(series)
    h = height + 16 * len(series)
    pw, ph = width - ml - mr, h - mt - mb
    xs = sorted({x for s in series for x in s.x})
    ymax = max(max(s.y) for s in series)
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])

    def X(x):
        return ml + (0 if lx1 == lx0 else (math.log2(x) - lx0) / (lx1 - lx0) * pw)

    def Y(y):
        return mt + ph - _ymap(y, ymax) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{h}" fill="white"/>',
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]
    for t in _yticks(ymax):
        y = Y(t)
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end">{t:,}</text>')
    step = max(1, math.ceil(len(xs) / 12))
    for x in xs[::step]:
        px = X(x)
        out.append(f'<line x1="{px:.1f}" y1="{mt}" x2="{px:.1f}" y2="{mt + ph}" stroke="#eee"/>')
        out.append(f'<text x="{px:.1f}" y="{mt + ph + 16}" text-anchor="middle">{escape(_ctx_label(x))}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    out.append(
        f'<text x="{ml + pw / 2:.1f}" y="{mt + ph + 36}" text-anchor="middle">context length (tokens, log scale)</text>'
    )
    out.append(
        f'<text transform="translate(16 {mt + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
        f"requests at once (log scale)</text>"
    )
    for si, s in enumerate(series):
        color = COLORS[si % len(COLORS)]
        pts = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in zip(s.x, s.y, strict=True))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
        for x, y, f in zip(s.x, s.y, s.fits, strict=True):
            out.append(
                f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3.5" fill="{color if f else "white"}" '
                f'stroke="{color}"><title>{escape(s.label)}: {x:,} tokens, {y:,} requests</title></circle>'
            )
        ly = mt + ph + 54 + 16 * si
        out.append(f'<line x1="{ml}" y1="{ly - 4}" x2="{ml + 24}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{ml + 30}" y="{ly}">{escape(s.label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def save_plot(series: list[Series], path: str | Path, *, title: str = "KV capacity frontier") -> Path:
    """Write ``path``: ``.svg`` always; ``.png`` only when matplotlib is importable."""
    p = Path(path)
    ext = p.suffix.lower()
    if ext == ".svg":
        _write(p, to_svg(series, title=title))
        return p
    if ext != ".png":
        raise InputError(f"cannot write '{p.name}'", field="--plot", hint="give a .svg (or .png with matplotlib) file")
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
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for si, s in enumerate(series):
        ax.plot(s.x, s.y, marker="o", color=COLORS[si % len(COLORS)], label=s.label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_ylim(bottom=0)  # concurrency is never negative; symlog would otherwise draw a mirrored half
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("requests at once")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    from kvplan.inputs.read import atomic_output

    try:
        with atomic_output(p, field="--plot", binary=True) as fh:
            fig.savefig(fh, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return p


def _write(p: Path, text: str) -> None:
    """``text`` to ``p`` through a temporary file renamed over it (OutputError, exit 1, when it cannot be)."""
    from kvplan.inputs.read import write_output

    write_output(p, text, field="--plot")


def check_plot_path(path: str | Path) -> None:
    """What ``save_plot`` would refuse, checked before anything is printed: the extension (InputError, exit 2; a
    .png without matplotlib too) and the folder (:func:`kvplan.inputs.read.check_output_path`, exit 1)."""
    from kvplan.inputs.read import check_output_path

    p = Path(path)
    ext = p.suffix.lower()
    if ext not in (".svg", ".png"):
        raise InputError(f"cannot write '{p.name}'", field="--plot", hint="give a .svg (or .png with matplotlib) file")
    if ext == ".png":
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise InputError(
                "PNG output needs matplotlib, which is not installed",
                field="--plot",
                hint="pip install matplotlib, or write an .svg file",
            )
    check_output_path(p, field="--plot")
