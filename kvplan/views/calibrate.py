"""``kvplan calibrate``: a :class:`~kvplan.planning.calibrate.Calibration` as a plain-text table, JSON or CSV.

Plain text (no rich): the table lines every logged quantity up against kvplan's prediction, marks the rows that
differ by more than the tolerance, then lists causes, recovered inputs, notes and the verdict.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from kvplan.planning.calibrate import Calibration, Row

GiB = 2**30


def _fmt_val(v: float | None, unit: str) -> str:
    """A logged or predicted value: bytes as GiB with three decimals, concurrency as ``2.50x``, counts with commas."""
    if v is None:
        return "-"
    if unit == "bytes":
        return f"{v / GiB:,.3f} GiB"
    if unit == "x":
        return f"{v:,.2f}x"
    return f"{round(v):,}"


def _fmt_diff(r: Row) -> str:
    if r.diff is None:
        return "-"
    if r.unit == "bytes":
        d = f"{r.diff / GiB:+,.3f} GiB"
    elif r.unit == "x":
        d = f"{r.diff:+,.2f}"
    else:
        d = f"{round(r.diff):+,}"
    return d + (f" ({r.rel:+.2%})" if r.rel is not None else "")


def _short(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and v > 10 * 2**20:
        return f"{v / GiB:.2f}GiB"
    return str(v)


def _csv(cal: Calibration) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["quantity", "unit", "logged", "predicted", "diff", "rel", "checked", "flagged", "cause"])
    for r in cal.rows:
        fl = r.flagged(cal.tolerance)
        w.writerow([r.quantity, r.unit, r.logged, r.predicted, r.diff,
                    "" if r.rel is None else f"{r.rel:.6f}", r.checked, fl, r.cause if fl else ""])
    return buf.getvalue()


def _table(cal: Calibration) -> str:
    head = ["quantity", "logged", "predicted", "difference", ""]
    body = []
    for r in cal.rows:
        fl = r.flagged(cal.tolerance)
        mark = ("DIFFERS" if r.checked else "differs*") if fl else ("ok" if r.diff is not None else "")
        body.append([r.quantity + ("" if r.checked else " *"), _fmt_val(r.logged, r.unit),
                     _fmt_val(r.predicted, r.unit), _fmt_diff(r), mark])
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    out = [f"kvplan calibrate: {cal.log or 'log'} ({cal.engine}, model {cal.model}, measured mode, "
           f"tolerance {cal.tolerance:.2%})", ""]
    out.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    out.append("  ".join("-" * w for w in widths))
    for b in body:
        cells = (c.ljust(w) if i == 0 else c.rjust(w) if i < 4 else c
                 for i, (c, w) in enumerate(zip(b, widths, strict=True)))
        out.append("  ".join(cells).rstrip())
    out.append("")
    out.append("* informational: kvplan's cold-mode models (runtime overhead, weight estimate) on this log; "
               "not part of --check")
    out += [f"{'DIFFERS' if r.checked else 'note'}: {r.quantity}: {r.cause}" for r in cal.flagged]
    out.append("inputs: " + "; ".join(f"{i.name}={_short(i.value)} ({i.source})" for i in cal.inputs))
    out += [f"note: {n}" for n in cal.notes]
    out.append("verdict: " + ("agrees" if cal.agrees else "DISAGREES") + f" within {cal.tolerance:.2%}")
    return "\n".join(out) + "\n"


def render_calibration(cal: Calibration, fmt: str = "table") -> str:
    """Table (plain text), JSON or CSV of a :class:`Calibration`."""
    if fmt == "json":
        return json.dumps(cal.to_dict(), indent=2, default=str)
    if fmt == "csv":
        return _csv(cal)
    return _table(cal)
