"""Row listings: ``kvplan models``, ``kvplan gpus`` and ``kvplan show`` (a list of flat dicts, one per row).

:func:`rows_text` gives the JSON / CSV text; :func:`print_rows` prints the rich table (rich imported there only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvplan.views.formats import Format


def rows_text(rows: Sequence[Mapping[str, Any]], fmt: Format, *, info: Mapping[str, Any] | None = None) -> str:
    """JSON (a list, or ``{**info, "rows": [...]}`` when ``info`` is given) or CSV (header from the first row)."""
    if fmt is Format.JSON:
        import json

        return json.dumps({**info, "rows": list(rows)} if info else list(rows), indent=2) + "\n"
    if fmt is Format.CSV:
        import csv
        import io

        buf = io.StringIO()
        if rows:
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        return buf.getvalue()
    raise ValueError(f"rows_text writes json or csv, not {fmt}")


def info_text(info: Mapping[str, Any]) -> str:
    """``key: value`` lines (``kvplan show`` prints them above its table)."""
    return "\n".join(f"{k}: {v}" for k, v in info.items()) + "\n"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def print_rows(rows: Sequence[Mapping[str, Any]], *, title: str, console: Any = None) -> None:
    """The rows as a rich table titled ``title`` (columns from the first row)."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for k in rows[0] if rows else {}:
        t.add_column(k)
    for r in rows:
        t.add_row(*(_cell(v) for v in r.values()))
    (console or Console()).print(t)
