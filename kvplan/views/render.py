"""Views of :class:`~kvplan.result.FitResult`: JSON, CSV and a rich table (one result, or engines side by side).

rich is imported inside :func:`table` and :func:`compare_table` only, so ``--format json`` and ``--format csv``
never load it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kvplan.units import GiB
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


def print_fit(results: Sequence[Any], console: Any = None) -> None:
    """The table view: :func:`table` for one result, :func:`compare_table` for engines side by side."""
    if len(results) > 1:
        compare_table(results, console=console)
    else:
        table(results[0], console=console)


def to_json(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json"), indent=2)


def _flat(result) -> dict:
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


def to_csv(results) -> str:
    import csv
    import io

    rows = [_flat(r) for r in results]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _g(n: int | float) -> str:
    if 0 < abs(n) < GiB / 10:
        return f"{n / 2**20:,.1f} MiB"
    return f"{n / GiB:,.2f} GiB"


_BAR_STYLES = {
    "runtime overhead": ("grey50", "o"),
    "weights": ("blue", "W"),
    "KV pool": ("green", "K"),
    "fixed pools": ("cyan", "F"),
    "multimodal reserve": ("magenta", "m"),
    "budget left unpooled": ("grey70", "."),
    "reserve (1 - mem_fraction_static)": ("yellow", "r"),
    "over-commit": ("red", "!"),
    "outside gpu_memory_utilization": ("grey50", "-"),
    "activation peak": ("yellow", "a"),
    "CUDA graphs": ("yellow", "g"),
    "weights + non-torch": ("blue", "W"),
}


def memory_bar(result, width: int = 60):
    """A proportional bar of where one GPU's memory goes (rich Text)."""
    from rich.text import Text

    total = max(result.device_bytes, sum(m.bytes for m in result.memory), 1)
    text = Text()
    used = 0
    for m in result.memory:
        style, ch = _BAR_STYLES.get(m.name, ("white", "#"))
        n = round(m.bytes / total * width)
        n = min(n, width - used)
        if m.bytes > 0 and n == 0 and used < width:
            n = 1
        text.append(ch * n, style=style)
        used += n
    if used < width:
        text.append(" " * (width - used))
    return text


def table(result, console=None) -> None:
    """Print the table view on ``console`` (a rich Console; a new one on stdout if None)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    r = result
    eng = "SGLang" if r.engine == "sglang" else "vLLM"
    par = f"TP{r.tp}" + (f" PP{r.pp}" if r.pp > 1 else "") + (f" DP{r.dp}" if r.dp > 1 else "") \
        + (f" EP{r.ep}" if r.ep > 1 else "") + (" (DP attention)" if r.dp_attention else "")
    con.print(f"[bold]{r.model}[/bold] on {r.num_gpus}x {r.gpu} - {eng} {r.engine_version}, {par}, "
              f"KV {r.kv_cache_dtype}, {r.mode} mode")
    color = "green" if r.fits else "red"
    con.print(f"[bold {color}]{r.verdict}[/bold {color}]")

    t = Table(box=box.SIMPLE_HEAD, show_header=True, pad_edge=False)
    t.add_column("per GPU" if r.attn_dp == 1 else "per GPU / attention-DP rank")
    t.add_column("value", justify="right")
    t.add_column("note")
    t.add_row("KV bytes per token", f"{r.kv_bytes_per_token:,.1f} B", r.layout)
    knob = (f"mem_fraction_static {r.mem_fraction_static}" if r.engine == "sglang"
            else f"gpu_memory_utilization {r.gpu_memory_utilization}")
    t.add_row("KV budget", _g(r.kv_budget_bytes), knob)
    pool_name = "max_total_num_tokens" if r.engine == "sglang" else "GPU KV cache size"
    t.add_row("KV pool", f"{r.kv_pool_tokens:,} tokens", pool_name
              + (f"; {r.kv_pool_tokens_total:,} over {r.dp} ranks" if r.dp > 1 else ""))
    t.add_row("longest request", f"{r.max_context_length:,} tokens", f"context_length {r.context_length:,}")
    t.add_row(f"requests of {r.context_length:,} at once", f"{r.max_concurrency:g}",
              f"target {r.target_requests}")
    t.add_row("max_running_requests", f"{r.max_running_requests:,}", "as the engine derives it")
    if r.num_blocks is not None:
        t.add_row("KV blocks", f"{r.num_blocks:,}", f"block size {r.block_size}")
    t.add_row("free at start", _g(r.free_bytes), r.free_source)
    t.add_row("weights", _g(r.weight_bytes), r.weight_source)
    con.print(t)

    if r.pools:
        pt = Table(title="pools per GPU", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
        pt.add_column("pool")
        pt.add_column("tokens", justify="right")
        pt.add_column("bytes", justify="right")
        for p in r.pools:
            pt.add_row(p.name, f"{p.tokens:,}" if p.tokens is not None else "", _g(p.bytes))
        con.print(pt)

    con.print(f"[bold]memory per GPU[/bold] ({_g(r.device_bytes)})")
    con.print(memory_bar(r))
    mt = Table(box=None, show_header=False, pad_edge=False)
    mt.add_column("")
    mt.add_column("", justify="right")
    mt.add_column("")
    for m in r.memory:
        style, ch = _BAR_STYLES.get(m.name, ("white", "#"))
        mt.add_row(f"[{style}]{ch}[/{style}] {m.name}", _g(m.bytes), m.note)
    con.print(mt)

    if r.bases:
        bt = Table(title="other KV bases on the same budget", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
        bt.add_column("basis")
        bt.add_column("B/token", justify="right")
        bt.add_column("pool tokens", justify="right")
        bt.add_column(f"requests of {r.context_length:,}", justify="right")
        bt.add_row(f"engine ({r.engine} allocates)", f"{r.kv_bytes_per_token:,.1f}", f"{r.kv_pool_tokens:,}",
                   f"{r.max_concurrency:g}")
        for b in r.bases:
            bt.add_row(b.name, f"{b.kv_bytes_per_token:,}", f"{b.kv_pool_tokens:,}", f"{b.max_concurrency:g}")
        con.print(bt)

    if r.assumptions:
        con.print("[bold]assumptions[/bold]")
        for a in r.assumptions:
            con.print(f"  - {a}", highlight=False)
    if r.warnings:
        con.print("[bold yellow]warnings[/bold yellow]")
        for w in r.warnings:
            con.print(f"  ! {w}", highlight=False)


_COMPARE_ROWS = (
    ("engine version", lambda r: r.engine_version),
    ("mode", lambda r: r.mode),
    ("KV dtype", lambda r: r.kv_cache_dtype),
    ("memory knob", lambda r: f"mem_fraction_static {r.mem_fraction_static}" if r.engine == "sglang"
     else f"gpu_memory_utilization {r.gpu_memory_utilization}"),
    ("free at start / requested", lambda r: _g(r.free_bytes)),
    ("weights per GPU", lambda r: _g(r.weight_bytes)),
    ("KV bytes per token", lambda r: f"{r.kv_bytes_per_token:,.1f} B"),
    ("KV budget per GPU", lambda r: _g(r.kv_budget_bytes)),
    ("page / block size", lambda r: f"{r.page_size}"),
    ("KV pool (tokens)", lambda r: f"{r.kv_pool_tokens:,}"),
    ("longest request", lambda r: f"{r.max_context_length:,}"),
    ("requests of the context at once", lambda r: f"{r.max_concurrency:g}"),
    ("max_running_requests", lambda r: f"{r.max_running_requests:,}"),
    ("fits", lambda r: "yes" if r.fits else "no"),
)


def compare_table(results, console=None) -> None:
    """Several engines' answers for one deployment, one column each (``kvplan fit --engine sglang,vllm``)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    r0 = results[0]
    con.print(f"[bold]{r0.model}[/bold] on {r0.num_gpus}x {r0.gpu}, TP{r0.tp}"
              + (f" PP{r0.pp}" if r0.pp > 1 else "") + (f" DP{r0.dp}" if r0.dp > 1 else "")
              + f", context {r0.context_length:,}, target {r0.target_requests} request(s)")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("per GPU")
    for r in results:
        t.add_column("SGLang" if r.engine == "sglang" else "vLLM", justify="right")
    for label, get in _COMPARE_ROWS:
        t.add_row(label, *(str(get(r)) for r in results))
    con.print(t)
    for r in results:
        color = "green" if r.fits else "red"
        con.print(f"[{color}]{'SGLang' if r.engine == 'sglang' else 'vLLM'}: {r.verdict}[/{color}]")
    for r in results:
        for w in r.warnings:
            con.print(f"  ! {r.engine}: {w}", highlight=False)
