"""The ``kvplan sweep`` table (rich) and the compact labels the table and the frontier chart share.

The CSV and JSON-lines writers are the :class:`kvplan.planning.sweep.SweepTable` methods ``write_csv`` /
``write_jsonl`` (``to_csv`` / ``to_jsonl`` as one string): streaming, one template per group and chunk
(:mod:`kvplan.planning.sweep_text`), the sweep's data export.  rich is imported inside :func:`render_table` only.
"""

from __future__ import annotations

import math
from typing import Any

from kvplan.planning.sweep import GROUP_COLS, Group, SweepTable

SHORT = {
    "model": "model",
    "gpu": "gpu",
    "engine": "engine",
    "num_gpus": "GPUs",
    "tp": "tp",
    "pp": "pp",
    "dp": "dp",
    "ep": "ep",
    "kv_cache_dtype": "kv dtype",
    "page_size": "page",
    "mem_fraction_static": "mfs",
    "context_length": "context",
    "requested_max_running_requests": "--mrr",
    "max_total_tokens": "max tok",
    "target_requests": "target",
}


def fmt_value(v: Any) -> str:
    """One table cell: ``-`` for None / NaN, yes / no, integers with commas, floats short."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 100 else f"{v:g}"
    return str(v)


def fmt_count(n: int | None) -> str:
    """Token counts the way they are typed: 32768 -> 32k, 1048576 -> 1m, else with commas."""
    if n is None:
        return "-"
    if n >= 1024**2 and n % 1024**2 == 0:
        return f"{n // 1024**2}m"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}k"
    return f"{n:,}"


def short_label(g: Group, key: str) -> str:
    """Compact group labels for tables and charts: the GPU as the user named it, the model without its org."""
    if key == "gpu":
        return str(g.dep.gpu or g.labels.get("gpu") or "-")
    if key == "model":
        return str(g.labels.get("model") or "-").rpartition("/")[2]
    return fmt_value(g.labels.get(key))


def _cells(table: SweepTable, r: dict, g: Group, vary: list[str], errs: list[str], best: bool) -> list[str]:
    cells = ["*" if best else ""]
    for k in vary:
        if k in GROUP_COLS:
            cells.append(short_label(g, k))
        elif r["error"] and k in ("mem_fraction_static", "context_length"):
            cells.append("-")
        else:
            cells.append(fmt_count(r[k]) if k in ("context_length", "max_total_tokens") else fmt_value(r.get(k)))
    if r["error"]:
        if r["error"] not in errs:
            errs.append(r["error"])
        return [*cells, "-", "-", "-", "-", f"invalid [{errs.index(r['error']) + 1}]"]
    return [
        *cells,
        fmt_value(r["kv_bytes_per_token"]),
        fmt_value(r["kv_pool_tokens"]),
        fmt_value(r["max_running_requests"]),
        fmt_value(r["max_concurrency"]),
        fmt_value(r["fits"]),
    ]


def _speed_cells(e: dict, j: int, priced: bool) -> list[str]:
    """The speed cells of one row (``-`` where it does not fit): C as run (as asked where it does not fit), TTFT,
    TPOT, output tok/s per GPU, cost."""

    def num(v: float, spec: str) -> str:
        return "-" if v != v else format(v, spec)

    conc, n = float(e["concurrency"][j]), float(e["num_gpus"][j])
    out_tps = float(e["output_tokens_per_s"][j])
    cells = [
        fmt_value(int(e["concurrency_asked"][j]) if conc != conc else int(conc)),
        num(float(e["ttft_s"][j]), ".3g"),
        num(float(e["tpot_s"][j]) * 1e3, ".3g"),
        num(out_tps / n if n == n and n else float("nan"), ",.1f"),
    ]
    if priced:
        cells.append(num(float(e["usd_per_million_output_tokens"][j]), ".3g"))
    return cells


def render_table(
    table: SweepTable,
    *,
    sort: str = "concurrency",
    top: int = 20,
    console: Any = None,
    speed: Any = None,
    concurrencies: list[int] | None = None,
    order: Any = None,
) -> None:
    """Print the best ``top`` rows (rich).  Best rows are marked ``*`` (and bold green on a colour terminal);
    rows that do not fit are dimmed.  ``speed`` (a :class:`kvplan.planning.sweep.speed.SpeedColumns`): the speed
    columns too, each row once per value of ``concurrencies`` (C as run).  ``order``: the row indices best first
    when sorted by a speed key (:func:`kvplan.planning.sweep.speed.speed_order`; the first row is the best)."""
    from rich.table import Table

    from kvplan.views.console import table_box, terminal_console

    console = console or terminal_console()
    idx = (table.order(sort) if order is None else order)[: max(top, 0)]
    if order is None:
        best = table.best_mask(idx, sort)
    else:
        import numpy as np

        best = np.zeros(len(idx), dtype=bool)
        if len(idx) and table.row(int(idx[0]))["meets_target"]:
            best[0] = True
    vary = [k for k in table.varying() if k != "page_size"]
    fixed = [k for k in GROUP_COLS if k not in vary and k != "page_size"]
    title = f"sweep: {len(table):,} points, {table.n_fit:,} fit; best {len(idx)} by {sort}"
    t = Table(title=title, title_justify="left", box=table_box(console), pad_edge=False, padding=(0, 1, 0, 0))
    t.add_column("", no_wrap=True)
    for k in vary:
        t.add_column(
            SHORT.get(k, k),
            justify="left" if k in ("model", "gpu", "engine", "kv_cache_dtype") else "right",
            no_wrap=True,
        )
    # with the speed columns, B/token, the request cap and fit make room (a row that does not fit is dimmed and
    # has no speed; CSV and JSON lines keep every column)
    for name in ("pool", "conc.") if speed is not None else ("B/token", "pool tokens", "mrr", "conc.", "fit"):
        t.add_column(name, justify="right", no_wrap=True)
    concs = concurrencies or ([speed.concurrency] if speed is not None else [])
    priced = speed is not None and (bool(speed.costs) or speed.flat is not None)
    if speed is not None:
        for name in ("C", "TTFT", "TPOT", "out/GPU", *(("$/M",) if priced else ())):
            t.add_column(name, justify="right", no_wrap=True)
    errs: list[str] = []
    per_row: list[list[tuple[dict, int]]] = []  # row j of idx -> (its chunk's speed columns, its place there) per C
    if speed is not None and len(idx):
        from kvplan.planning.sweep.speed import speed_extras

        for rows, c in table.chunks(idx):
            ex = speed_extras(speed, rows, c, concs)
            per_row.extend([(e, k) for e in ex] for k in range(len(rows)))
    shown = 0
    for j, i in enumerate(idx.tolist()):
        r = table.row(i)
        g = table.groups[int(table.cols["gid"][i])]
        style = "bold green" if best[j] else (None if r["fits"] else "dim")
        cells = _cells(table, r, g, vary, errs, bool(best[j]))
        if speed is None:
            t.add_row(*cells, style=style)
            continue
        cells = [*cells[:-5], cells[-4], cells[-2]]
        for ex_cols, pos in per_row[j]:
            if shown < max(top, 0):
                t.add_row(*cells, *_speed_cells(ex_cols, pos, priced), style=style)
                shown += 1
    console.print(t)
    console.print(_caption(table, fixed), markup=False, highlight=False)
    if speed is not None:
        console.print(
            "C: requests at once, as run (the --concurrency asked, capped by what fits); TTFT in s, TPOT in ms; "
            "out/GPU: output tokens per second per GPU" + ("; $/M: USD per million output tokens" if priced else ""),
            markup=False,
            highlight=False,
        )
    for n, e in enumerate(errs, 1):
        console.print(f"[{n}] {e}", markup=False, highlight=False)


def _caption(table: SweepTable, fixed: list[str]) -> str:
    g = table.groups[0]
    parts = [f"{SHORT.get(k, k)} {short_label(g, k)}" for k in fixed if g.labels.get(k) is not None]
    methods = sorted({x.method for x in table.groups})
    return "; ".join(parts) + f"; evaluated: {', '.join(methods)}"
