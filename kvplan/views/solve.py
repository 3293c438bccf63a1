"""``kvplan solve``: the answer and every candidate with its reason (rich table), or JSON; ``solve config`` also
as CSV (one line per candidate).

rich is imported inside :func:`render` only.
"""

from __future__ import annotations

import json
from typing import Any

from kvplan.planning.solve import SolveResult
from kvplan.planning.solve_config import ConfigResult

#: ``solve config --format csv``: the columns, in order (each a key of the JSON candidates)
CONFIG_CSV_COLUMNS = (
    "status",
    "rank",
    "label",
    "model",
    "gpu",
    "engine",
    "num_gpus",
    "tp",
    "pp",
    "dp",
    "ep",
    "kv_cache_dtype",
    "mem_fraction_static",
    "context_length",
    "input_len",
    "output_len",
    "concurrency",
    "kv_pool_tokens",
    "workload_concurrency",
    "starts",
    "fits",
    "meets_target",
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "decode_tokens_per_s_per_request",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "total_tokens_per_s",
    "total_tokens_per_s_per_gpu",
    "request_latency_s",
    "usd_per_million_output_tokens",
    "usd_per_million_total_tokens",
    "rejected_by",
    "reason",
)


def to_json(result: SolveResult | ConfigResult) -> str:
    """The JSON document ``kvplan solve --format json`` prints (``to_dict``, indented)."""
    return json.dumps(result.to_dict(), indent=2)


def config_csv(result: ConfigResult) -> str:
    """``solve config --format csv``: a header and one line per candidate (chosen, runners-up by rank, then the
    rejected in grid order); cells escaped by :func:`kvplan.errors.csv_cell`."""
    import csv
    import io

    from kvplan.errors import csv_cell

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CONFIG_CSV_COLUMNS)
    for c in result.to_dict()["candidates"]:
        w.writerow(["" if c.get(k) is None else _csv_value(c.get(k), csv_cell) for k in CONFIG_CSV_COLUMNS])
    return buf.getvalue()


def _csv_value(v: Any, cell: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.6g}"
    return cell(v) if isinstance(v, str) else v


def _num(v: float | None, spec: str) -> str:
    return "-" if v is None or v != v else format(v, spec)


def render(result: SolveResult | ConfigResult, *, console: Any = None, top: int = 5) -> None:
    """Print the answer and every candidate with its reason (rich)."""
    if isinstance(result, ConfigResult):
        render_config(result, console=console, top=top)
        return
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


def render_config(result: ConfigResult, *, console: Any = None, top: int = 5) -> None:
    """``solve config``: the chosen deployment and up to ``top`` runners-up (speed and cost), then every rejected
    candidate with its reason."""
    from rich.table import Table

    from kvplan.views.console import table_box, terminal_console

    console = console or terminal_console()
    priced = any(
        c.speed["usd_per_million_output_tokens"] == c.speed["usd_per_million_output_tokens"] for c in result.candidates
    )
    t = Table(
        title=f"solve config: {result.target}",
        title_justify="left",
        box=table_box(console),
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("candidate", overflow="fold")  # a long label wraps; the numbers keep their width
    t.add_column("TTFT s", justify="right", no_wrap=True)
    t.add_column("TPOT s", justify="right", no_wrap=True)
    t.add_column("tok/s/req", justify="right", no_wrap=True)
    t.add_column("tok/s/GPU", justify="right", no_wrap=True)  # output tokens
    if priced:
        t.add_column("$/Mtok", justify="right", no_wrap=True)  # USD per million output tokens
    ranked = sorted((c for c in result.candidates if c.rank is not None), key=lambda c: c.rank or 0)
    for c in ranked[: 1 + max(top, 0)]:
        s = c.speed
        cells = [
            str(c.rank),
            c.label,
            _num(s["ttft_s"], ".3g"),
            _num(s["tpot_s"], ".3g"),
            _num(s["decode_tokens_per_s_per_request"], ",.1f"),
            _num(s["output_tokens_per_s_per_gpu"], ",.1f"),
        ]
        if priced:
            cells.append(_num(s["usd_per_million_output_tokens"], ".3g"))
        t.add_row(*cells, style="bold green" if c.status == "chosen" else None)
    console.print(t)
    if ranked:
        console.print(
            "tok/s/req: decode rate per request; tok/s/GPU: output tokens per second per GPU"
            + ("; $/Mtok: USD per million output tokens" if priced else ""),
            markup=False,
            highlight=False,
        )
    more = len(ranked) - 1 - max(top, 0)
    if more > 0:
        console.print(f"... and {more} more runner(s)-up (--top, or --format json)", markup=False, highlight=False)
    rejected = result.rejected
    if rejected:
        r = Table(
            title=f"rejected: {len(rejected)}",
            title_justify="left",
            box=table_box(console),
            pad_edge=False,
            padding=(0, 1, 0, 0),
        )
        r.add_column("candidate", overflow="fold", ratio=1)
        r.add_column("reason", overflow="fold", ratio=2)
        for c in rejected:
            r.add_row(c.label, c.reason, style="dim")
        console.print(r)
    console.print(("answer: " if result.solved else "no answer: ") + result.answer_label, markup=False, highlight=False)
    for n in result.notes:
        console.print(f"note: {n}", markup=False, highlight=False)
