"""The Pareto frontier of a speed sweep: per-request decode rate against throughput per GPU (issue 23 item 3).

A point ``p`` is *dominated* when another point ``q`` is at least as good on both axes and better on one:
``q.x >= p.x and q.y >= p.y and (q.x > p.x or q.y > p.y)``.  The frontier is the set of points no other point
dominates: for each per-request decode rate, the most throughput per GPU any configuration of the sweep reaches at
that rate or faster.  Both axes are "more is better":

* x = ``decode_tokens_per_s_per_request`` [tok/s per request] (1 / TPOT: what one user sees);
* y = ``total_tokens_per_s_per_gpu`` [tok/s per GPU] (input + output tokens, what the operator pays for).

:func:`pareto_front` is the pure computation; :func:`sweep_points` collects the two columns of a sweep's rows
that fit (:class:`kvplan.planning.sweep.speed.SpeedColumns`, one :func:`kvplan.planning.speed.speed` per
distinct group and workload), and :func:`sweep_pareto` the frontier rows with the concurrency each one runs at.
Rendering is :mod:`kvplan.views.pareto`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

X_COLUMN = "decode_tokens_per_s_per_request"
Y_COLUMN = "total_tokens_per_s_per_gpu"


def pareto_front(points: Iterable[Sequence[float]]) -> list[int]:
    """Indices of the points (x, y) not dominated on both axes (larger is better on each), by ascending x.

    Points with a NaN or infinite coordinate take no part.  Identical points do not dominate each other: the
    first of them (lowest index) stands for all, so the frontier never holds the same (x, y) twice.

    Method: sort by x descending (y descending, then index, for ties); walking that order, a point is on the
    frontier exactly when its y is above every y seen so far (every earlier point has x at least as large).
    O(n log n).

    Example: ``[(1, 10), (2, 8), (2, 5), (3, 1), (1, 9), (3, 1)]`` -> ``[0, 1, 3]``: (2, 5) is dominated by
    (2, 8), (1, 9) by (1, 10), the second (3, 1) is a copy of index 3.
    """
    pts = []
    for i, p in enumerate(points):
        x, y = float(p[0]), float(p[1])
        if math.isfinite(x) and math.isfinite(y):
            pts.append((-x, -y, i, y))
    pts.sort()
    out: list[int] = []
    best = -math.inf
    for _, _, i, y in pts:
        if y > best:
            out.append(i)
            best = y
    out.reverse()
    return out


@dataclass(frozen=True)
class SweepPoints:
    """The fitting rows of a speed sweep: ``rows[k]`` (sweep row index) at ``x[k]``, ``y[k]`` (lists)."""

    rows: list[int]
    x: list[float]
    y: list[float]
    n_rows: int  # rows in the sweep (fitting or not)


def sweep_points(table: Any, cols: Any) -> SweepPoints:
    """(row, decode rate per request, total tok/s per GPU) of every row of ``table`` that fits and has a speed;
    ``cols`` a :class:`~kvplan.planning.sweep.speed.SpeedColumns` of that table.  One pass, chunk by chunk."""
    rows: list[int] = []
    xs: list[float] = []
    ys: list[float] = []
    for r, c in table.chunks():
        extra = cols.chunk(r, c)
        x, y = extra[X_COLUMN], extra[Y_COLUMN]
        for j, i in enumerate(r.tolist()):
            xv, yv = float(x[j]), float(y[j])
            if math.isfinite(xv) and math.isfinite(yv):
                rows.append(int(i))
                xs.append(xv)
                ys.append(yv)
    return SweepPoints(rows=rows, x=xs, y=ys, n_rows=len(table))


@dataclass(frozen=True)
class FrontPoint:
    """One frontier point: the sweep row, its two coordinates and the concurrency it runs at."""

    row: int
    x: float
    y: float
    concurrency: int


def sweep_pareto(table: Any, cols: Any, points: SweepPoints | None = None) -> tuple[SweepPoints, list[FrontPoint]]:
    """The sweep's points and its frontier (ascending decode rate).  The concurrency of a frontier point is the
    one :func:`kvplan.planning.speed.speed` runs (the asked ``--concurrency`` capped by what the row fits, as
    :meth:`SpeedColumns.chunk` asks it), read back from speed() for the frontier rows only."""
    from kvplan.planning.speed import SpeedInputs, speed

    pts = points or sweep_points(table, cols)
    front = pareto_front(zip(pts.x, pts.y, strict=True))
    out = []
    for k in front:
        row = pts.rows[k]
        c = table.row(row)
        wc = int(c.get("workload_concurrency") or 0)
        asked = max(1, min(cols.concurrency, wc if wc > 0 else cols.concurrency))
        r = speed(table.deployment(row), SpeedInputs(concurrency=asked))
        out.append(FrontPoint(row=row, x=pts.x[k], y=pts.y[k], concurrency=int(r.concurrency)))
    return pts, out
