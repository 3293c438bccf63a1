"""The views of ``kvplan speed`` (and the speed block of ``kvplan fit --speed``): table, JSON, CSV of one
:class:`kvplan.planning.speed.SpeedResult`.

JSON and CSV import nothing beyond the standard library (``kvplan speed --format json`` starts as fast as
``kvplan fit --format json``); the table loads rich.  The table's first screen: the numbers, the bound in one
sentence per phase, what would move it; ``--explain`` adds the per-step breakdown (per part: FLOPs, bytes,
collective bytes, time, bound) and every assumption with its source.  It fits 80 columns.
"""

from __future__ import annotations

import json
from typing import Any

from kvplan.views.formats import Format

#: the JSON keys in the order written (the contract keys first)
_HEAD = (
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "decode_tokens_per_s_per_request",
    "output_tokens_per_s",
    "total_tokens_per_s",
    "total_tokens_per_s_per_gpu",
    "bound",
    "shares",
)


def speed_dict(r: Any) -> dict[str, Any]:
    """The result as a JSON-ready dict, contract keys first."""
    d = r.to_dict()
    return {**{k: d[k] for k in _HEAD}, **{k: v for k, v in d.items() if k not in _HEAD}}


def speed_text(r: Any, fmt: Format) -> str:
    """``--format json`` (one object) or ``csv`` (one row: scalars, the bound and shares flattened)."""
    if fmt is Format.JSON:
        return json.dumps(speed_dict(r), indent=2) + "\n"
    if fmt is Format.CSV:
        import csv
        import io

        d = speed_dict(r)
        row: dict[str, Any] = {}
        for k, v in d.items():
            if k == "bound":
                row.update({f"bound_{p}": b for p, b in v.items()})
            elif k == "shares":
                for p, sh in v.items():
                    row.update({f"share_{p}_{b}": round(x, 4) for b, x in sh.items()})
            elif isinstance(v, (str, int, float, bool)) or v is None:
                row[k] = v
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
        w.writeheader()
        w.writerow(row)
        return buf.getvalue()
    raise ValueError(f"speed_text writes json or csv, not {fmt}")


def _rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _secs(x: float) -> str:
    if x >= 1:
        return f"{x:,.2f} s"
    return f"{x * 1e3:,.1f} ms" if x >= 1e-3 else f"{x * 1e6:,.0f} us"


def _si(x: float, unit: str) -> str:
    for div, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:,.1f} {p}{unit}"
    return f"{x:,.0f} {unit}" if x else "-"


def _shares(sh: dict[str, float]) -> str:
    return "  ".join(f"{k} {v:.0%}" for k, v in sh.items())


def speed_lines(r: Any) -> list[tuple[str, str]]:
    """The first screen's (label, value) rows."""
    spec = f", {r.speculative} x{r.tokens_per_step:.2f}/step" if r.speculative else ""
    return [
        (
            "prefill",
            f"{_rate(r.prefill_tokens_per_s)} tok/s  ({r.input_len:,} tokens, "
            + (
                f"{r.prefill_chunks:,} chunks of {r.chunk_tokens:,})"
                if r.prefill_chunks > 1
                else f"one chunk; chunk size {r.chunk_tokens:,})"
            ),
        ),
        ("TTFT", _secs(r.ttft_s)),
        ("TPOT", f"{_secs(r.tpot_s)}  ({_rate(r.decode_tokens_per_s_per_request)} tok/s per request{spec})"),
        (
            "throughput",
            f"{_rate(r.output_tokens_per_s)} out tok/s, {_rate(r.total_tokens_per_s)} total "
            f"({_rate(r.total_tokens_per_s_per_gpu)}/GPU) at C={r.concurrency:,}",
        ),
        ("prefill shares", _shares(r.shares["prefill"])),
        ("decode shares", _shares(r.shares["decode"])),
    ]


def print_speed(r: Any, console: Any = None, *, explain: bool = False) -> None:
    """The table view on ``console`` (default: the terminal)."""
    from rich.table import Table
    from rich.text import Text

    from kvplan.views.console import hanging, table_box, terminal_console

    con = console or terminal_console()
    title = (
        f"{r.model} on {r.num_gpus}x {r.gpu} ({r.engine}, TP{r.tp}"
        + (f"/EP{r.ep}" if r.ep > 1 else "")
        + (f", attn TP{r.attn_tp}" if r.attn_tp != r.tp else "")
        + f", {r.kv_cache_dtype} KV)"
    )
    hanging(con, Text(title, style="bold"))
    hanging(
        con,
        f"workload {r.input_len:,} in + {r.output_len:,} out, concurrency {r.concurrency:,}"
        f" (fits {r.concurrency_fits:,}); GPU class {r.gpu_class}",
    )
    t = Table(box=table_box(con), show_header=False, pad_edge=False)
    t.add_column("what", style="bold", no_wrap=True)
    t.add_column("value", overflow="fold")
    for k, v in speed_lines(r):
        t.add_row(k, v)
    con.print(t)
    for phase in ("prefill", "decode"):
        hanging(con, r.sentences[phase], first="  ")
    for w in r.warnings:
        hanging(con, w, first="  ! ")
    con.print("what would move it:")
    for lever in r.levers:
        hanging(con, lever, first="  - ")
    if not explain:
        return
    for label, b in (
        (f"one prefill chunk ({r.chunk_tokens:,} tokens)", r.prefill_chunk),
        (f"one decode step (C={r.concurrency:,})", r.decode_step),
    ):
        con.print()
        hanging(con, Text(f"{label}: {_secs(b.seconds)}", style="bold"))
        bt = Table(box=table_box(con), pad_edge=False)
        bt.add_column("part", overflow="fold", ratio=1)
        for name in ("FLOPs", "bytes", "coll.", "time"):
            bt.add_column(name, justify="right", no_wrap=True)
        bt.add_column("bound", no_wrap=True)
        for p in b.parts:
            bt.add_row(
                p["name"],
                _si(p["flops"], ""),
                _si(p["bytes"], "B"),
                _si(p["collective_bytes"], "B"),
                _secs(p["seconds"]),
                p["bound"][:5],
            )
        con.print(bt)
    con.print()
    con.print("assumptions:")
    for a in r.assumptions:
        hanging(con, a, first="  - ")


def _speed_row(r: Any) -> dict[str, Any]:
    d = speed_dict(r)
    row: dict[str, Any] = {}
    for k in _HEAD:
        v = d[k]
        if k == "bound":
            row.update({f"speed_bound_{p}": b for p, b in v.items()})
        elif k == "shares":
            for p, sh in v.items():
                row.update({f"speed_share_{p}_{b}": round(x, 4) for b, x in sh.items()})
        else:
            row[f"speed_{k}"] = v
    return row


def fit_speed_text(results: Any, speeds: Any, fmt: Format) -> str:
    """``kvplan fit --speed --format json|csv``: the fit JSON with a ``speed`` object (a list for several engines),
    or the fit CSV row with ``speed_*`` columns."""
    from kvplan.views.serialize import fit_text

    if fmt is Format.JSON:
        docs = [json.loads(fit_text([r], fmt)) for r in results]
        for doc, s in zip(docs, speeds, strict=True):
            doc["speed"] = speed_dict(s)
        body = docs[0] if len(docs) == 1 else docs
        return json.dumps(body, indent=2) + "\n"
    if fmt is Format.CSV:
        import csv
        import io

        rows = list(csv.DictReader(io.StringIO(fit_text(results, fmt))))
        for row, s in zip(rows, speeds, strict=True):
            row.update(_speed_row(s))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    raise ValueError(f"fit_speed_text writes json or csv, not {fmt}")


def print_fit_speed(results: Any, speeds: Any, *, explain: bool = False) -> None:
    """``kvplan fit --speed`` on a terminal: the fit table, then each engine's speed block."""
    from kvplan.views import render
    from kvplan.views.console import terminal_console

    con = terminal_console()
    render.print_fit(results, con, explain=explain)
    for s in speeds:
        con.print()
        print_speed(s, con, explain=explain)
