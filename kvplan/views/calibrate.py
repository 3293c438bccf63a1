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
from kvplan.units import GiB


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


def _alternatives(cal: Calibration, r: Row) -> list[tuple[str, Row]]:
    """(label, row) for the other releases whose prediction of ``r``'s quantity differs from the applied one;
    neighbouring releases with the same prediction share one line ("under 0.4.3.post4 to 0.4.7")."""
    runs: list[tuple[str, str, Row]] = []  # (oldest first, newest last, row), newest run first
    for a in cal.by_release[1:]:
        alt = next((x for x in a.rows if x.quantity == r.quantity), None)
        if alt is None or alt.predicted == r.predicted:
            runs.append(("", "", r))  # breaks a run
            continue
        if runs and runs[-1][0] and runs[-1][2].predicted == alt.predicted:
            runs[-1] = (a.releases[0], runs[-1][1], runs[-1][2])
        else:
            runs.append((a.releases[0], a.releases[1], alt))
    return [(_under(first, last), row) for first, last, row in runs if first]


def _under(first: str, last: str) -> str:
    return f"under {first}" if first == last else f"under {first} to {last}"


def _csv(cal: Calibration) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["quantity", "unit", "logged", "predicted", "diff", "rel", "checked", "flagged", "cause"])
    for r in cal.rows:
        for name, x in [(r.quantity, r)] + [(f"{r.quantity} ({label})", alt) for label, alt in _alternatives(cal, r)]:
            fl = x.flagged(cal.tolerance)
            w.writerow(
                [
                    name,
                    x.unit,
                    x.logged,
                    x.predicted,
                    x.diff,
                    "" if x.rel is None else f"{x.rel:.6f}",
                    x.checked,
                    fl,
                    x.cause if fl else "",
                ]
            )
    return buf.getvalue()


def _mark(r: Row, tolerance: float) -> str:
    if r.flagged(tolerance):
        return "DIFFERS" if r.checked else "differs*"
    return "ok" if r.diff is not None else ""


def _release_lines(cal: Calibration) -> list[str]:
    """Which release's rules were applied, the releases the log allows, and why."""
    if not cal.engine_version:
        return []
    from kvplan.inputs.logs.release import ENGINE_NAMES

    lo, hi = cal.engine_versions_possible or (cal.engine_version, cal.engine_version)
    span = lo if lo == hi else f"{lo} to {hi}"
    out = [
        f"release: {ENGINE_NAMES.get(cal.engine, cal.engine)} {cal.engine_version} rules applied; the log allows {span}"
    ]
    out += [f"  why: {why}" for why in cal.release_reasons]
    out += [f"  {_under(*a.releases)}: cannot plan: {a.error}" for a in cal.by_release[1:] if a.error]
    return out


def _table(cal: Calibration) -> str:
    head = ["quantity", "logged", "predicted", "difference", ""]
    body = []
    for r in cal.rows:
        body.append(
            [
                r.quantity + ("" if r.checked else " *"),
                _fmt_val(r.logged, r.unit),
                _fmt_val(r.predicted, r.unit),
                _fmt_diff(r),
                _mark(r, cal.tolerance),
            ]
        )
        body += [
            ["  " + label, "", _fmt_val(alt.predicted, alt.unit), _fmt_diff(alt), _mark(alt, cal.tolerance)]
            for label, alt in _alternatives(cal, r)
        ]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    out = [
        f"kvplan calibrate: {cal.log or 'log'} ({cal.engine}, model {cal.model}, measured mode, "
        f"tolerance {cal.tolerance:.2%})",
        "",
    ]
    out.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    out.append("  ".join("-" * w for w in widths))
    for b in body:
        cells = (
            c.ljust(w) if i == 0 else c.rjust(w) if i < 4 else c for i, (c, w) in enumerate(zip(b, widths, strict=True))
        )
        out.append("  ".join(cells).rstrip())
    out.append("")
    out.append(
        "* informational: kvplan's cold-mode models (runtime overhead, weight estimate) on this log; "
        "not part of --check"
    )
    out += [f"{'DIFFERS' if r.checked else 'note'}: {r.quantity}: {r.cause}" for r in cal.flagged]
    out.append("inputs: " + "; ".join(f"{i.name}={_short(i.value)} ({i.source})" for i in cal.inputs))
    out += [f"note: {n}" for n in cal.notes]
    out += _release_lines(cal)
    out.append("verdict: " + ("agrees" if cal.agrees else "DISAGREES") + f" within {cal.tolerance:.2%}")
    return "\n".join(out) + "\n"


def render_calibration(cal: Calibration, fmt: str = "table") -> str:
    """Table (plain text), JSON or CSV of a :class:`Calibration`."""
    if fmt == "json":
        return json.dumps(cal.to_dict(), indent=2, default=str)
    from kvplan.views.sanitize import block

    if fmt == "csv":
        return block(_csv(cal))
    return block(_table(cal))
