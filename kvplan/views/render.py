"""Views of :class:`~kvplan.result.FitResult`: JSON, CSV and a rich table (one result, or engines side by side).

The table view tells the story on its first screen (at most 25 lines at 80 columns for the default deployment,
a test counts them): the title, the verdict (and each reason it does not fit), the target, the numbers that
answer the question (KV bytes per token, budget, pool, longest request, requests at full context and at the
workload, the request cap and where it came from), the memory bar with a one-line-per-few-slices legend, every
warning, and one line saying how many assumptions / pools / other bases ``--explain`` (``-v``) would add.
With ``explain=True`` the same screen is followed by the full memory breakdown, the pools, the other KV bases
and the assumptions.  JSON and CSV are the same with or without ``--explain``.

Keys the planning layer may not have yet (``reasons``, ``meets_target``, ``target``,
``max_running_requests_source``, ``workload_tokens_per_request``, ``workload_concurrency``) are read with
``getattr(result, name, None)`` and rendered when present.

Every string that comes from data (model and GPU names, notes, warnings) is printed as a rich ``Text``, never as
markup and never auto-highlighted.  rich is imported inside the table functions only, so ``--format json`` and
``--format csv`` never load it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kvplan.result import SliceKind as K
from kvplan.units import GiB
from kvplan.views.serialize import fit_text, to_csv, to_json  # noqa: F401  (re-exported: tests and callers of render)


def print_fit(results: Sequence[Any], console: Any = None, *, explain: bool = False) -> None:
    """The table view: :func:`table` for one result, :func:`compare_table` for engines side by side."""
    if len(results) > 1:
        compare_table(results, console=console, explain=explain)
    else:
        table(results[0], console=console, explain=explain)


def _g(n: int | float) -> str:
    if 0 < abs(n) < GiB / 10:
        return f"{n / 2**20:,.1f} MiB"
    return f"{n / GiB:,.2f} GiB"


#: the memory bar's colour and letter of each slice kind (:class:`kvplan.result.SliceKind` values)
_BAR_STYLES = {
    K.OVERHEAD: ("grey50", "o"),
    K.WEIGHTS: ("blue", "W"),
    K.KV_POOL: ("green", "K"),
    K.FIXED_POOLS: ("cyan", "F"),
    K.MULTIMODAL: ("magenta", "m"),
    K.UNPOOLED: ("grey70", "."),
    K.RESERVE: ("yellow", "r"),
    K.OVER_COMMIT: ("red", "!"),
    K.OUTSIDE_BUDGET: ("grey50", "-"),
    K.ACTIVATION: ("yellow", "a"),
    K.CUDA_GRAPHS: ("yellow", "g"),
    K.WEIGHTS_NON_TORCH: ("blue", "W"),
}
_OTHER = ("white", "#")


def _style(m: Any) -> tuple[str, str]:
    """(colour, letter) of one memory slice, by its kind."""
    return _BAR_STYLES.get(m.kind, _OTHER)


def memory_bar(result: Any, width: int = 60) -> Any:
    """A proportional bar of where one GPU's memory goes (rich Text)."""
    from rich.text import Text

    total = max(result.device_bytes, sum(m.bytes for m in result.memory), 1)
    text = Text()
    used = 0
    for m in result.memory:
        style, ch = _style(m)
        n = round(m.bytes / total * width)
        n = min(n, width - used)
        if m.bytes > 0 and n == 0 and used < width:
            n = 1
        text.append(ch * n, style=style)
        used += n
    if used < width:
        text.append(" " * (width - used))
    return text


# ------------------------------------------------------------------------------------------ the parts


class _Terms:
    """An engine's own words for what the table shows (so the table reads like the engine's startup log)."""

    def __init__(self, label: str, pool: str, cap: str, knob: str, cell: str) -> None:
        self.label, self.pool, self.cap, self.knob, self.cell = label, pool, cap, knob, cell


#: engine -> its name, its pool's log name, its request cap's flag, its memory knob (a FitResult field), what its
#: "KV bytes per token" counts
ENGINE_TERMS = {
    "sglang": _Terms(
        "SGLang",
        "max_total_num_tokens",
        "max_running_requests",
        "mem_fraction_static",
        "one max_total_num_tokens token of every layer on this GPU (the pool's cell)",
    ),
    "vllm": _Terms(
        "vLLM",
        "GPU KV cache size",
        "max_num_seqs",
        "gpu_memory_utilization",
        "one token of this GPU's attention layers (Mamba states apart)",
    ),
}


def _terms(r: Any) -> _Terms:
    return ENGINE_TERMS[r.engine]


def engine_label(engine: str) -> str:
    return ENGINE_TERMS[engine].label


def _knob(r: Any) -> str:
    """``mem_fraction_static 0.72`` / ``gpu_memory_utilization 0.92``: the engine's memory knob and its value."""
    name = _terms(r).knob
    return f"{name} {getattr(r, name)}"


def parallel_label(r: Any) -> str:
    """``TP8 EP8``, ``TP4 PP2 DP2 (DP attention)``: the parallel layout as a launch command would give it."""
    return (
        f"TP{r.tp}"
        + (f" PP{r.pp}" if r.pp > 1 else "")
        + (f" DP{r.dp}" if r.dp > 1 else "")
        + (f" EP{r.ep}" if r.ep > 1 else "")
        + (" (DP attention)" if r.dp_attention else "")
    )


def _title(r: Any) -> Any:
    from rich.text import Text

    from kvplan.errors import terminal_text

    text = Text().append(terminal_text(r.model), style="bold")
    text.append(
        terminal_text(
            f" on {r.num_gpus}x {r.gpu} - {engine_label(r.engine)} {r.engine_version}, {parallel_label(r)}, "
            f"KV {r.kv_cache_dtype}, {r.mode} mode"
        )
    )
    return text


def cap_name(r: Any) -> str:
    """The engine's own name of the request cap: ``max_running_requests`` (SGLang), ``max_num_seqs`` (vLLM)."""
    return _terms(r).cap


def cap_source(r: Any) -> str | None:
    """Where the request cap came from: the planner's ``max_running_requests_source`` ("given" | "derived" |
    "engine default"); None when the result does not say (a result read back from older JSON): then the table
    claims neither."""
    source = getattr(r, "max_running_requests_source", None)
    return str(source) if source else None


def _cap_note(r: Any) -> str:
    """``given (a cap: more requests wait)``: where the cap came from, and what a cap means."""
    source = cap_source(r)
    return "the engine's cap: more requests wait" if source is None else f"{source} (a cap: more requests wait)"


def _num(v: float | int) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,g}"


def _requests(v: float | int) -> str:
    """``1 request``, ``3 requests``, ``0.5 requests``."""
    return f"{_num(v)} request" + ("" if v == 1 else "s")


def _workload(r: Any) -> tuple[Any, Any] | None:
    """(tokens per request, requests at once) of ``--input-len/--output-len``, None without a workload."""
    conc = getattr(r, "workload_concurrency", None)
    if conc is None:
        return None
    return getattr(r, "workload_tokens_per_request", None), conc


def resolved_text(r: Any) -> str | None:
    """``planned from the geometry of preset Qwen/Qwen3-32B`` when ``--model`` was mapped to another preset's
    geometry (``resolved_from``), else None."""
    src = getattr(r, "resolved_from", None)
    return f"planned from the geometry of preset {src}" if src else None


def _resolved_line(con: Any, r: Any) -> None:
    from kvplan.errors import terminal_text
    from kvplan.views.console import hanging

    text = resolved_text(r)
    if text:
        hanging(con, terminal_text(text), first="", rest="  ", style="dim")


def _verdict_lines(con: Any, r: Any, *, prefix: str = "", target: bool = True) -> None:
    """The verdict (green when the engine starts and serves, red when not), the reasons beyond the one the verdict
    names, and (``target``) the target when the result has one."""
    from kvplan.planning.verdict import starts_text
    from kvplan.views.console import hanging

    color = "green" if r.fits else "red"
    hanging(con, prefix + r.verdict, first="", rest="  ", style=f"bold {color}")
    if getattr(r, "starts", False) and not r.fits:
        hanging(con, prefix + starts_text(r.max_context_length), first="", rest="  ", style="bold yellow")
    for a in getattr(r, "advice", None) or []:
        hanging(con, prefix + a, first="", rest="  ", style="yellow")
    reasons = [x for x in getattr(r, "reasons", None) or [] if x and x not in r.verdict]
    for x in reasons:
        hanging(con, x, first="  - ", style=color)
    if target:
        _target_lines(con, [r])


def _target_lines(con: Any, results: Sequence[Any]) -> None:
    """``target 1 request of 32,768 tokens at once: met``; engines side by side share the line when their target
    text is the same (``...: met by SGLang, not met by vLLM (--check exits 3)``)."""
    from kvplan.views.console import hanging

    have = [r for r in results if getattr(r, "meets_target", None) is not None and getattr(r, "target", None)]
    for text in dict.fromkeys(r.target for r in have):
        same = [r for r in have if r.target == text]
        met = {bool(r.meets_target) for r in same}
        if len(results) == 1 or len(met) == 1:
            state = "met" if met == {True} else "not met (--check exits 3)"
            by = "" if len(results) == 1 else " (" + ", ".join(engine_label(r.engine) for r in same) + ")"
        else:
            state = (
                ", ".join(("met by " if r.meets_target else "not met by ") + engine_label(r.engine) for r in same)
                + " (--check exits 3)"
            )
            by = ""
        hanging(con, f"target {text}: {state}{by}", first="", rest="  ", style="green" if met == {True} else "yellow")


def _main_rows(r: Any, *, explain: bool) -> list[tuple[str, str, str]]:
    """(label, value, note) of the main table: the numbers that answer the question; ``explain`` adds the blocks,
    the free memory and the weights."""
    rows = [
        ("KV bytes per token", f"{r.kv_bytes_per_token:,.1f} B", r.layout),
        ("KV budget", _g(r.kv_budget_bytes), _knob(r)),
        (
            "KV pool",
            f"{r.kv_pool_tokens:,} tokens",
            _terms(r).pool
            + (f"; {r.kv_pool_tokens_total:,} over {r.dp} ranks" if r.dp > 1 else "")
            + (f"; {band}" if (band := _band_text(r)) else ""),
        ),
        ("longest request", f"{r.max_context_length:,} tokens", f"context_length {r.context_length:,}"),
        ("at full context", _requests(r.max_concurrency), f"of {r.context_length:,} tokens at once"),
    ]
    work = _workload(r)
    if work is not None:
        per, conc = work
        rows.append(
            (
                "at the workload",
                _requests(conc),
                f"holding {per:,} tokens each at once" if isinstance(per, int) else "at once",
            )
        )
    rows.append((cap_name(r), f"{r.max_running_requests:,}", _cap_note(r)))
    if explain:
        if r.num_blocks is not None:
            rows.append(("KV blocks", f"{r.num_blocks:,}", f"block size {r.block_size}"))
        rows.append(("free at start", _g(r.free_bytes), r.free_source))
        rows.append(("weights", _g(r.weight_bytes), r.weight_source))
    return rows


def _main_table(con: Any, r: Any, *, explain: bool) -> Any:
    from rich.table import Table
    from rich.text import Text

    from kvplan.views.console import table_box

    t = Table(box=table_box(con), show_header=True, pad_edge=False)
    t.add_column("per GPU" if r.attn_dp == 1 else "per GPU / attention-DP rank", no_wrap=True)
    t.add_column("value", justify="right", no_wrap=True)
    t.add_column("note", overflow="fold")
    for label, value, note in _main_rows(r, explain=explain):
        t.add_row(Text(label), Text(value), Text(note))
    return t


def _legend_items(r: Any) -> list[Any]:
    from rich.text import Text

    items = []
    for m in r.memory:
        style, ch = _style(m)
        item = Text().append(ch, style=style)
        item.append(f" {m.name} {_g(m.bytes)}")
        items.append(item)
    return items


def _print_legend(con: Any, r: Any) -> None:
    """The memory legend packed into as few lines as the width allows, an item never split across lines."""
    from rich.text import Text

    gap, line = "   ", Text()
    for item in _legend_items(r):
        if line.plain and len(line.plain) + len(gap) + len(item.plain) > con.width:
            con.print(line, soft_wrap=True)
            line = Text()
        if line.plain:
            line.append(gap)
        line.append_text(item)
    if line.plain:
        con.print(line, soft_wrap=True)


def _memory_table(r: Any) -> Any:
    from rich.table import Table
    from rich.text import Text

    mt = Table(box=None, show_header=False, pad_edge=False)
    mt.add_column("", no_wrap=True)
    mt.add_column("", justify="right", no_wrap=True)
    mt.add_column("", overflow="fold")
    for m in r.memory:
        style, ch = _style(m)
        label = Text().append(ch, style=style)
        label.append(f" {m.name}")
        mt.add_row(label, Text(_g(m.bytes)), Text(m.note))
    return mt


def _print_memory(con: Any, r: Any, *, explain: bool) -> None:
    from rich.text import Text

    head = Text().append("memory per GPU", style="bold")
    head.append(f" ({_g(r.device_bytes)})")
    con.print(head)
    con.print(memory_bar(r))
    if explain:
        con.print(_memory_table(r))
    else:
        _print_legend(con, r)


def _print_warnings(con: Any, warnings: Sequence[str], *, prefix: str = "") -> None:
    from kvplan.views.console import hanging

    if warnings:
        con.print("warnings", style="bold yellow")
    for w in warnings:
        hanging(con, prefix + w, first="  ! ")


def _pools_table(con: Any, r: Any) -> Any:
    from rich.table import Table
    from rich.text import Text

    from kvplan.views.console import table_box

    pt = Table(title="pools per GPU", box=table_box(con), title_justify="left", pad_edge=False)
    pt.add_column("pool", overflow="fold")
    pt.add_column("tokens", justify="right", no_wrap=True)
    pt.add_column("bytes", justify="right", no_wrap=True)
    for p in r.pools:
        pt.add_row(Text(p.name), f"{p.tokens:,}" if p.tokens is not None else "", _g(p.bytes))
    return pt


def _bases_table(con: Any, r: Any) -> Any:
    from rich.table import Table
    from rich.text import Text

    from kvplan.views.console import table_box

    bt = Table(title="other KV bases on the same budget", box=table_box(con), title_justify="left", pad_edge=False)
    bt.add_column("basis", overflow="fold")
    bt.add_column("B/token", justify="right", no_wrap=True)
    bt.add_column("pool tokens", justify="right", no_wrap=True)
    bt.add_column(f"requests of {r.context_length:,}", justify="right")
    bt.add_row(
        f"engine ({r.engine} allocates)",
        f"{r.kv_bytes_per_token:,.1f}",
        f"{r.kv_pool_tokens:,}",
        _num(r.max_concurrency),
    )
    for b in r.bases:
        bt.add_row(Text(b.name), f"{b.kv_bytes_per_token:,}", f"{b.kv_pool_tokens:,}", _num(b.max_concurrency))
    return bt


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def explain_summary(results: Sequence[Any]) -> str:
    """The one line that says what ``--explain`` adds, e.g. ``"14 assumptions, 6 pools, 2 other KV bases: add
    --explain (-v) to see them"``; empty when it would add nothing."""
    counts = [
        (sum(len(r.assumptions) for r in results), "assumption"),
        (sum(len(r.pools) for r in results), "pool"),
        (sum(len(r.bases) for r in results), "other KV basis"),
    ]
    parts = [
        _plural(n, w) if w != "other KV basis" else f"{n} other KV bas{'is' if n == 1 else 'es'}"
        for n, w in counts
        if n
    ]
    return (", ".join(parts) + ": add --explain (-v) to see them") if parts else ""


def assumption_text(r: Any, text: str) -> str:
    """An assumption as the table prints it: a request cap the planner derived by ``clamp(..., LO, HI)`` (a note of
    kind :attr:`kvplan.engines.base.NoteKind.DERIVED_REQUEST_CAP`, values ``(cap, LO, HI)``) that lies outside
    [LO, HI] (a pool too small for the clamp's floor, or the cap reduced to tokens // 2) is not printed as if the
    clamp gave it; it says where the cap came from instead.  Every other assumption prints as it is.  Keyed by the
    note's kind and values, never by its prose.

    Example: the note ``"max_running_requests 0: SGLang's derived default clamp(..., 2048, 4096)"`` with values
    ``(0, 2048, 4096)`` and a pool of 0 tokens -> ``"max_running_requests 0: derived by the engine from a pool of 0
    tokens (below the clamp's floor of 2048)"``.
    """
    from kvplan.engines.base import Note, NoteKind

    if not isinstance(text, Note) or text.kind is not NoteKind.DERIVED_REQUEST_CAP:
        return text
    value, lo, hi = text.values
    if lo <= value <= hi:
        return text
    return (
        f"max_running_requests {value:,}: derived by the engine from a pool of {r.kv_pool_tokens:,} tokens "
        f"({'below' if value < lo else 'above'} the clamp's {'floor' if value < lo else 'ceiling'} of "
        f"{lo if value < lo else hi})"
    )


def _print_explained(con: Any, r: Any) -> None:
    from kvplan.views.console import hanging

    if r.pools:
        con.print()
        con.print(_pools_table(con, r))
    if r.bases:
        con.print(_bases_table(con, r))
    if r.assumptions:
        con.print("assumptions", style="bold")
        for a in r.assumptions:
            hanging(con, assumption_text(r, a), first="  - ")


def table(result: Any, console: Any = None, *, explain: bool = False) -> None:
    """Print the table view on ``console`` (a rich Console; :func:`kvplan.views.console.terminal_console` if None):
    the first screen, and with ``explain`` the pools, the memory notes, the other bases and the assumptions."""
    from kvplan.views.console import hanging, terminal_console

    con = console or terminal_console()
    r = result
    hanging(con, _title(r), rest="  ")
    _resolved_line(con, r)
    _verdict_lines(con, r)
    con.print(_main_table(con, r, explain=explain))
    _print_memory(con, r, explain=explain)
    _print_warnings(con, r.warnings)
    if explain:
        _print_explained(con, r)
        return
    summary = explain_summary([r])
    if summary:
        hanging(con, summary, rest="  ", style="dim")


def _cap_cell(r: Any) -> str:
    source = cap_source(r)
    return f"{r.max_running_requests:,}" + (f" ({source})" if source else "")


def _workload_cell(r: Any) -> str:
    work = _workload(r)
    return "-" if work is None else _num(work[1])


def _knob_cell(r: Any, knob: str) -> str:
    """``0.828 (default)``: the value of one engine's memory knob and where it came from (``memory_knob_source``:
    given, the engine's default, kvplan's default deployment); ``-`` for the other engine's knob."""
    value = getattr(r, knob)
    if value is None or getattr(r, "memory_knob", knob) != knob:
        return "-"
    source = _KNOB_SOURCE.get(getattr(r, "memory_knob_source", ""), "")
    return f"{value}" + (f" ({source})" if source else "")


_KNOB_SOURCE = {"given": "given", "engine default": "default", "default deployment": "kvplan default"}


def _band_text(r: Any) -> str | None:
    """The cold-mode band of the pool, "±N% (cold)" (``kv_pool_band_percent``), or None in measured mode."""
    band = getattr(r, "kv_pool_band_percent", None)
    return f"±{band}% (cold)" if band else None


def _band_cell(r: Any) -> str:
    """The side-by-side view's band cell: :func:`_band_text`, "-" in measured mode."""
    return _band_text(r) or "-"


_COMPARE_ROWS: tuple[tuple[str, Callable[[Any], str]], ...] = (
    ("starts", lambda r: "yes" if getattr(r, "starts", r.fits) else "no"),
    ("fits", lambda r: "yes" if r.fits else "no"),
    ("engine version", lambda r: r.engine_version),
    ("mode", lambda r: r.mode),
    ("KV dtype", lambda r: r.kv_cache_dtype),
    ("mem_fraction_static", lambda r: _knob_cell(r, "mem_fraction_static")),
    ("gpu_memory_utilization", lambda r: _knob_cell(r, "gpu_memory_utilization")),
    ("free at start / requested", lambda r: _g(r.free_bytes)),
    ("weights per GPU", lambda r: _g(r.weight_bytes)),
    ("KV bytes per token", lambda r: f"{r.kv_bytes_per_token:,.1f} B"),
    ("KV budget per GPU", lambda r: _g(r.kv_budget_bytes)),
    ("page / block size", lambda r: f"{r.page_size}"),
    ("KV pool (tokens)", lambda r: f"{r.kv_pool_tokens:,}"),
    ("KV pool band", _band_cell),
    ("longest request", lambda r: f"{r.max_context_length:,}"),
    ("requests of the context at once", lambda r: _num(r.max_concurrency)),
    ("requests of the workload at once", _workload_cell),
    ("request cap", _cap_cell),
)


def compare_table(results: Sequence[Any], console: Any = None, *, explain: bool = False) -> None:
    """Several engines' answers for one deployment, one column each (``kvplan fit --engine sglang,vllm``).
    The workload row appears when a workload was given."""
    from rich.table import Table
    from rich.text import Text

    from kvplan.views.console import hanging, table_box, terminal_console

    con = console or terminal_console()
    r0 = results[0]
    title = Text().append(r0.model, style="bold")
    title.append(
        f" on {r0.num_gpus}x {r0.gpu}, TP{r0.tp}"
        + (f" PP{r0.pp}" if r0.pp > 1 else "")
        + (f" DP{r0.dp}" if r0.dp > 1 else "")
        + f", context {r0.context_length:,}"
    )
    hanging(con, title, rest="  ")
    for r in results:  # the verdicts first, then the numbers behind them
        _verdict_lines(con, r, prefix=f"{engine_label(r.engine)}: ", target=False)
    _target_lines(con, results)
    t = Table(box=table_box(con), pad_edge=False)
    t.add_column("per GPU", no_wrap=True)
    for r in results:
        t.add_column(engine_label(r.engine), justify="right", overflow="fold")
    workload = any(_workload(r) is not None for r in results)
    for label, get in _COMPARE_ROWS:
        if get is _workload_cell and not workload:
            continue
        t.add_row(label, *(Text(str(get(r))) for r in results))
    con.print(t)
    for r in {r.engine: r for r in results}.values():  # what each engine counts in its "KV bytes per token"
        hanging(
            con, f"KV bytes per token, {engine_label(r.engine)}: {_terms(r).cell}", first="", rest="  ", style="dim"
        )
    _print_warnings(con, [f"{r.engine}: {w}" for r in results for w in r.warnings])
    if explain:
        for r in results:
            con.print(Text(f"{engine_label(r.engine)} {r.engine_version}", style="bold"))
            _print_explained(con, r)
        return
    summary = explain_summary(results)
    if summary:
        hanging(con, summary, rest="  ", style="dim")
