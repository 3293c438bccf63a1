"""``kvplan fit --from-log``: a :class:`~kvplan.planning.whatif.WhatIf` (baseline and what-if side by side) as a
plain-text table, JSON or CSV.  The rows come from :func:`kvplan.planning.whatif.side_by_side`."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from kvplan.planning.whatif import WhatIf, side_by_side
from kvplan.views.sanitize import block, csv_row


def _s(v: Any) -> str:
    """A table cell: integers with commas, floats to three decimals (trailing zeros cut), the rest as text."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


def _table(w: WhatIf, rows: list[dict[str, Any]]) -> str:
    body = [[r["quantity"], _s(r["baseline"]), _s(r["whatif"])] for r in rows]
    head = ["quantity", "baseline (log)", "what-if"]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(3)]
    changes = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in w.changed.items()) or "no change"
    out = ["kvplan fit --from-log: " + changes, ""]
    out.append("  ".join(h.ljust(wd) for h, wd in zip(head, widths, strict=True)))
    out.append("  ".join("-" * wd for wd in widths))
    for b in body:
        mark = "" if b[1] == b[2] else "  *"
        out.append(f"{b[0].ljust(widths[0])}  {b[1].rjust(widths[1])}  {b[2].rjust(widths[2])}{mark}")
    out.append("")
    out += [f"note: {n}" for n in w.notes]
    if w.engine_version:
        lo, hi = w.engine_versions_possible or (w.engine_version, w.engine_version)
        out.append(f"release: {w.engine_version} rules applied; the log allows {lo if lo == hi else f'{lo} to {hi}'}")
        out += [f"  why: {why}" for why in w.release_reasons]
    out.append(f"baseline: {w.baseline.verdict}")
    out.append(f"what-if:  {w.whatif.verdict}")
    return "\n".join(out) + "\n"


def render_whatif(w: WhatIf, fmt: str = "table") -> str:
    """Baseline and what-if side by side: ``fmt`` = table | json | csv."""
    rows = side_by_side(w)
    if fmt == "json":
        return json.dumps(
            {
                "baseline": w.baseline.model_dump(mode="json"),
                "whatif": w.whatif.model_dump(mode="json"),
                "changed": {k: list(v) for k, v in w.changed.items()},
                "notes": w.notes,
                "side_by_side": rows,
                "engine_version": w.engine_version,
                "engine_versions_possible": list(w.engine_versions_possible or ()),
                "engine_version_reasons": w.release_reasons,
            },
            indent=2,
            default=str,
        )
    if fmt == "csv":
        buf = io.StringIO()
        wr = csv.DictWriter(buf, fieldnames=["quantity", "baseline", "whatif"], lineterminator="\n")
        wr.writeheader()
        wr.writerows(csv_row(r) for r in rows)
        return buf.getvalue()
    return block(_table(w, rows))
