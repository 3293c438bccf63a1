"""``kvplan solve``: the answer and every candidate with its reason (rich table), or JSON.

rich is imported inside :func:`render` only.
"""

from __future__ import annotations

import json
from typing import Any

from kvplan.planning.solve import SolveResult


def to_json(result: SolveResult) -> str:
    """The JSON document ``kvplan solve --format json`` prints (:meth:`SolveResult.to_dict`, indented)."""
    return json.dumps(result.to_dict(), indent=2)


def render(result: SolveResult, *, console: Any = None) -> None:
    """Print the answer and every candidate with its reason (rich)."""
    from rich.table import Table

    from kvplan.views.console import table_box, terminal_console

    console = console or terminal_console()
    t = Table(
        title=f"solve {result.question}: {result.target}",
        title_justify="left",
        box=table_box(console),
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    t.add_column("", no_wrap=True)
    t.add_column("candidate", no_wrap=True)
    t.add_column("pool tokens", justify="right", no_wrap=True)
    t.add_column("conc.", justify="right", no_wrap=True)
    t.add_column("reason", overflow="fold")
    for i, c in enumerate(result.candidates):
        is_ans = i == result.answer_index
        pool = f"{c.row['kv_pool_tokens']:,}" if c.row and not c.row.get("error") else "-"
        conc = f"{c.row['max_concurrency']:,}" if c.row and not c.row.get("error") else "-"
        t.add_row(
            "*" if is_ans else "",
            c.label,
            pool,
            conc,
            c.reason,
            style="bold green" if is_ans else (None if c.fits else "dim"),
        )
    console.print(t)
    console.print(("answer: " if result.solved else "no answer: ") + result.answer_label, markup=False, highlight=False)
    for n in result.notes:
        console.print(f"note: {n}", markup=False, highlight=False)
