"""The Pareto frontier of a speed sweep: per-request decode rate against throughput per GPU (issue 23 item 3).

A point ``p`` is *dominated* when another point ``q`` is at least as good on both axes and better on one:
``q.x >= p.x and q.y >= p.y and (q.x > p.x or q.y > p.y)``.  The frontier is the set of points no other point
dominates: for each per-request decode rate, the most throughput per GPU any configuration of the sweep reaches at
that rate or faster.  Both axes are "more is better":

* x = ``decode_tokens_per_s_per_request`` [tok/s per request] (1 / TPOT: what one user sees);
* y = ``total_tokens_per_s_per_gpu`` [tok/s per GPU] (input + output tokens, what the operator pays for).

:func:`pareto_front` is the pure computation; :func:`sweep_points` collects the two columns of a sweep's rows
that fit (:class:`kvplan.planning.sweep.speed.SpeedColumns`, one :func:`kvplan.planning.speed.speed` per
distinct group, workload and concurrency) at each ``--concurrency`` value, and :func:`sweep_pareto` the frontier
points with the concurrency each one runs at.
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
    """The points of a speed sweep: sweep row ``rows[k]`` at concurrency ``asked[k]`` (running ``run[k]``) is at
    ``x[k]``, ``y[k]`` (lists; rows that do not fit are not points)."""

    rows: list[int]
    asked: list[int]
    run: list[int]
    x: list[float]
    y: list[float]
    n_rows: int  # rows x concurrency values in the sweep (fitting or not)


def sweep_points(table: Any, cols: Any, concurrencies: Sequence[int] | None = None) -> SweepPoints:
    """Every (row, concurrency) of ``table`` that fits and runs its workload (``workload_concurrency >= 1``: a
    row whose context cannot hold one request of input_len + output_len tokens has speed cells but serves nothing,
    so it is no point), with its decode rate per request and total tok/s per GPU;
    ``cols`` a :class:`~kvplan.planning.sweep.speed.SpeedColumns` of that table, ``concurrencies`` the
    ``--concurrency`` values (default: ``cols``' one).  One pass, chunk by chunk; the concurrency that runs is
    the columns' (the asked one capped by what the row fits)."""
    concs = list(concurrencies or [cols.concurrency])
    rows: list[int] = []
    asked: list[int] = []
    run: list[int] = []
    xs: list[float] = []
    ys: list[float] = []
    for r, c in table.chunks():
        ids = r.tolist()
        runs = [int(v) > 0 for v in c["workload_concurrency"].tolist()]
        for k in concs:
            extra = cols.chunk(r, c, concurrency=k)
            x, y, ran = extra[X_COLUMN].tolist(), extra[Y_COLUMN].tolist(), extra["concurrency"].tolist()
            for j, i in enumerate(ids):
                if runs[j] and math.isfinite(x[j]) and math.isfinite(y[j]):
                    rows.append(int(i))
                    asked.append(int(k))
                    run.append(int(ran[j]))
                    xs.append(float(x[j]))
                    ys.append(float(y[j]))
    return SweepPoints(rows=rows, asked=asked, run=run, x=xs, y=ys, n_rows=len(table) * len(concs))


@dataclass(frozen=True)
class FrontPoint:
    """One frontier point: the sweep row, its two coordinates, the concurrency asked and the one that runs."""

    row: int
    x: float
    y: float
    concurrency: int
    asked: int


def sweep_pareto(
    table: Any, cols: Any, concurrencies: Sequence[int] | None = None
) -> tuple[SweepPoints, list[FrontPoint]]:
    """The sweep's points (:func:`sweep_points`) and its frontier (:func:`pareto_front`, ascending decode rate)."""
    pts = sweep_points(table, cols, concurrencies)
    front = pareto_front(zip(pts.x, pts.y, strict=True))
    return pts, [FrontPoint(pts.rows[k], pts.x[k], pts.y[k], pts.run[k], pts.asked[k]) for k in front]
