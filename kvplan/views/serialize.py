"""The machine-readable views of ``kvplan fit``: JSON and CSV (the contract keys of kvplan.result).

Kept apart from the table view (:mod:`kvplan.views.render`) so that ``--format json`` loads only this: scripts
that read kvplan's JSON pay for nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kvplan.views.formats import Format


def fit_text(results: Sequence[Any], fmt: Format) -> str:
    """What ``kvplan fit --format json|csv`` prints: one JSON object (a list for several engines), or CSV."""
    if fmt is Format.JSON:
        if len(results) == 1:
            return to_json(results[0]) + "\n"
        return "[" + ",\n".join(to_json(r) for r in results) + "]\n"
    if fmt is Format.CSV:
        return to_csv(results)
    raise ValueError(f"fit_text writes json or csv, not {fmt}")


def to_json(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json"), indent=2)


def _flat(result: Any) -> dict[str, Any]:
    d = result.model_dump(mode="json")
    out = {}
    for k, v in d.items():
        if isinstance(v, list):
            if all(isinstance(x, str) for x in v):
                out[k] = " | ".join(v)
            else:
                out[k] = json.dumps(v, separators=(",", ":"))
        else:
            out[k] = v
    return out


def to_csv(results: Sequence[Any]) -> str:
    import csv
    import io

    from kvplan.views.sanitize import csv_row

    rows = [csv_row(_flat(r)) for r in results]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
