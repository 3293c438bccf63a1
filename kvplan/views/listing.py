"""Row listings: ``kvplan models``, ``kvplan gpus`` and ``kvplan show`` (a list of flat dicts, one per row).

:func:`rows_text` gives the JSON / CSV text; :func:`print_rows` prints the rich table (rich imported there only).

The first column (the id a user types back into ``--model`` / ``--gpu``) is never truncated: it does not wrap,
the other columns fold, and when the console is too narrow for all of them the columns are left out from the
last one (:func:`fit_columns`), with one line saying which and where to see them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvplan.errors import terminal_text
from kvplan.views.formats import Format

#: the narrowest a folded column may become before it is left out instead (its header stays whole too)
MIN_FOLDED = 16
#: the space between two columns: a one-space divider and a padding of 1 on each side (no edges, no edge padding)
_GAP = 3


def rows_text(rows: Sequence[Mapping[str, Any]], fmt: Format, *, info: Mapping[str, Any] | None = None) -> str:
    """JSON (a list, or ``{**info, "rows": [...]}`` when ``info`` is given) or CSV (header from the first row)."""
    if fmt is Format.JSON:
        import json

        return json.dumps({**info, "rows": list(rows)} if info else list(rows), indent=2) + "\n"
    if fmt is Format.CSV:
        import csv
        import io

        from kvplan.views.sanitize import csv_row

        buf = io.StringIO()
        if rows:
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(csv_row(r) for r in rows)
        return buf.getvalue()
    raise ValueError(f"rows_text writes json or csv, not {fmt}")


def info_text(info: Mapping[str, Any]) -> str:
    """``key: value`` lines (``kvplan show`` prints them above its table); a list of rows (``show``'s
    ``layer_types``, ``vllm_groups``) as one indented ``k=v, ...`` line per row."""
    lines = []
    for k, v in info.items():
        if isinstance(v, list) and all(isinstance(r, Mapping) for r in v):
            lines.append(f"{k}:")
            lines.extend("  " + ", ".join(f"{rk}={_cell(rv)}" for rk, rv in r.items() if rv is not None) for r in v)
        else:
            lines.append(f"{k}: {terminal_text(str(v))}")
    return "\n".join(lines) + "\n"


#: ``kvplan gpus``'s table: the columns kept first when the console is narrow
GPU_PRIORITY = (
    "origin",
    "name",
    "nvidia_smi_mib",
    "cuda_total_gib",
    "device_total_bytes",
    "fp8",
    "fp4",
    "sm",
    "interconnect",
)


def gpu_rows(entries: Sequence[Any]) -> list[dict[str, Any]]:
    """``kvplan gpus``'s rows, one per preset entry (``.preset`` a hardware preset, ``.origin`` where it came from).

    ``device_total_bytes`` is the device total every planner uses for the GPU
    (:func:`kvplan.engines.runtime.device_total`: the recorded CUDA total, else nvidia-smi's MiB less the driver
    reservation), so the listing and ``kvplan fit`` cannot disagree.  Example: a preset with only nvidia-smi's
    97,887 MiB -> 97,887 x 2**20 - 612,032,839 = 102,029,926,073.
    """
    from kvplan.engines.runtime import device_total

    return [
        {
            "id": (g := e.preset).id,
            "name": g.name,
            "nvidia_smi_mib": g.memory_mib,
            "cuda_total_gib": round(g.cuda_total_bytes / 2**30, 2) if g.cuda_total_bytes else None,
            "device_total_bytes": device_total(g)[0],
            "interconnect": g.interconnect,
            "sm": g.sm,
            "fp8": g.fp8,
            "fp4": g.fp4,
            "origin": e.origin,
        }
        for e in entries
    ]


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    return terminal_text(str(v))


def _share(full: Sequence[int], floor: Sequence[int], budget: int) -> list[int]:
    """Widths no larger than ``full`` and no smaller than ``floor`` summing to at most ``budget``: the widest
    columns give way first (every column above a common cap is cut to it).  ``floor`` must fit the budget."""
    cap = max(full, default=0)
    while cap > 0 and sum(min(w, max(f, cap)) for w, f in zip(full, floor, strict=True)) > budget:
        cap -= 1
    return [min(w, max(f, cap)) for w, f in zip(full, floor, strict=True)]


def fit_columns(
    rows: Sequence[Mapping[str, Any]], width: int, *, hide: Sequence[str] = (), priority: Sequence[str] = ()
) -> tuple[dict[str, int], list[str]]:
    """(shown column -> its content width, columns left out) for a table of ``rows`` on ``width`` columns.

    The first column keeps its full width (its longest cell or header).  Every other column may fold down to
    ``max(len(header), min(longest cell, MIN_FOLDED))``; the widest give way first.  When even that does not fit,
    columns are left out from the least important: the last of ``priority`` (the columns named there first, the
    others after them, in row order), shown in row order.  A table of n columns takes
    ``sum(widths) + _GAP x (n - 1)``.  ``hide`` names columns never shown in the table (they stay in JSON and CSV).
    The first column is never left out; on a console narrower than it, it folds (the id stays whole, on two lines).

    Example: ids of 45 characters, family (10), layers (6), quantization (12), aliases (40) on 80 columns: the
    floors give 45 + 10 + 6 + 12 + 16 + 4 x 3 = 101 > 80, so aliases is left out; 45 + 10 + 6 + 12 + 3 x 3 = 82 is
    still too wide, so quantization goes too, and id, family, layers take 45 + 10 + 6 + 2 x 3 = 67.
    """
    keys = [k for k in (rows[0] if rows else {}) if k not in hide]
    full = {k: max([len(k), *(len(_cell(r.get(k))) for r in rows)]) for k in keys}
    floor = {k: max(len(k), min(full[k], MIN_FOLDED)) for k in keys}
    if not keys:
        return {}, []
    first, others = keys[0], keys[1:]
    ranked = [k for k in priority if k in others] + [k for k in others if k not in priority]
    while ranked and full[first] + sum(floor[k] + _GAP for k in ranked) > width:
        ranked.pop()
    shown = [k for k in others if k in ranked]
    rest = _share([full[k] for k in shown], [floor[k] for k in shown], width - full[first] - _GAP * len(shown))
    widths = {first: min(full[first], max(width, 1)), **dict(zip(shown, rest, strict=True))}
    return widths, [k for k in others if k not in widths]


def print_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    console: Any = None,
    hide: Sequence[str] = (),
    priority: Sequence[str] = (),
    full_listing: str = "",
) -> None:
    """The rows as a rich table titled ``title``, the first column never truncated (:func:`fit_columns`);
    ``full_listing`` is the command that shows the columns left out (e.g. ``kvplan models --format json``)."""
    from rich.table import Table
    from rich.text import Text

    from kvplan.views.console import hanging, table_box, terminal_console

    con = console or terminal_console()
    widths, dropped = fit_columns(rows, con.width, hide=hide, priority=priority)
    shown = list(widths)
    t = Table(
        title=Text(terminal_text(title)), title_justify="left", box=table_box(con), pad_edge=False, show_edge=False
    )
    for i, k in enumerate(shown):
        t.add_column(k, overflow="fold", min_width=widths[k] if i == 0 else None, max_width=widths[k])
    for r in rows:
        t.add_row(*(Text(_cell(r.get(k))) for k in shown))
    con.print(t)
    if dropped:
        where = f" ({full_listing} has them)" if full_listing else ""
        hanging(
            con,
            f"{len(rows):,} rows; left out at {con.width} columns: {', '.join(dropped)}{where}",
            rest="  ",
            style="dim",
        )
