"""Speed and cost columns for a sweep (issue 23 item 2): ``kvplan sweep --speed`` and ``kvplan solve config``.

:func:`speed_columns` adds, for the rows of one chunk of a :class:`~kvplan.planning.sweep.table.SweepTable`, the
speed JSON keys of :func:`kvplan.planning.speed.speed` (scalars: :data:`SPEED_COLUMNS`) and, with a cost per
GPU-hour, ``usd_per_million_output_tokens`` and ``usd_per_million_total_tokens``.  The speed of a row depends on its
group (model, GPU, layout, KV dtype) and its workload (input_len, output_len, the concurrency asked, capped by what
the row fits), not on the memory axes otherwise: one :func:`speed` call per distinct (group, input_len,
output_len, concurrency that runs), memoised for the table, then broadcast over the chunk's rows.

Cost (per row): ``usd_per_million_output_tokens = usd_per_gpu_hour x num_gpus / (output_tokens_per_s x 3600) x 1e6``,
likewise for total tokens.  Example: 8 GPUs at 2.50 USD/h serving 1,000 output tok/s: 20 USD/h / 3.6M tokens/h =
5.556 USD per million output tokens.

The concurrency is a list (``--concurrency 1,8,32``): each table row is written once per value, the concurrency
innermost (:func:`concurrency_values`); ``concurrency_asked`` and ``concurrency`` (as run) are appended after the
cost columns.  ``solve config`` runs each row at its own target (``per_row="target_requests"``) and prices only
the rows that meet it (``only="meets_target"``).  A calibration (``--calibration``) is handed to every
:func:`speed` call; :func:`check_calibration` refuses one fitted for another GPU class before anything is written.

Costs file (TOML, no defaults shipped)::

    [costs]
    h100-sxm = 2.50    # USD per GPU-hour
    l40s = 0.90
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError, echo

SPEED_COLUMNS = (
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "decode_tokens_per_s_per_request",
    "output_tokens_per_s",
    "total_tokens_per_s",
    "total_tokens_per_s_per_gpu",
)
COST_COLUMNS = ("usd_per_million_output_tokens", "usd_per_million_total_tokens")
#: appended after the cost columns: the concurrency asked (the axis value) and the one that runs (capped by the fit)
CONCURRENCY_COLUMNS = ("concurrency_asked", "concurrency")
MAX_COSTS_BYTES = 1 << 20
MAX_CONCURRENCY = 1 << 20
#: at most this many concurrency values in one sweep (each multiplies the rows)
MAX_CONCURRENCY_VALUES = 64


def concurrency_values(text: str | None, *, field: str = "--concurrency") -> list[int]:
    """``--concurrency`` as a list or range of integers (``8``, ``1,8,32``, ``1:64:x2``), each in
    1 .. 1,048,576, duplicates dropped (order kept).  None: [1]."""
    if text is None:
        return [1]
    from kvplan.planning.sweep.axes import parse_axis

    try:
        vals = parse_axis(str(text), field="target_requests")
    except InputError as exc:
        raise InputError(str(exc.args[0]) if exc.args else "not a list of integers", field=field) from None
    out: list[int] = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_CONCURRENCY:
            raise InputError(f"must be integers between 1 and 1,048,576, got {v!r}", field=field)
        if v not in out:
            out.append(v)
    if len(out) > MAX_CONCURRENCY_VALUES:
        raise InputError(f"{len(out)} values (at most {MAX_CONCURRENCY_VALUES})", field=field)
    return out


def check_calibration(table: Any, calibration: Any) -> None:
    """Refuse (InputError, exit 2, one line, as ``kvplan speed`` does) a calibration fitted for another GPU class or
    engine than one of the table's groups, before any row is written."""
    if calibration is None:
        return
    from kvplan.perf.calibration import check_applies
    from kvplan.perf.efficiency import gpu_class
    from kvplan.perf.hardware import Overrides, resolve_hardware
    from kvplan.planning.plan import gpu_for

    seen: set[tuple[str, str]] = set()
    for g in table.groups:
        if g.error:
            continue
        dep = g.dep.with_defaults()
        gpu, _ = gpu_for(dep)
        if gpu is None or (gpu.id, str(dep.engine)) in seen:
            continue
        seen.add((gpu.id, str(dep.engine)))
        hw = resolve_hardware(gpu, Overrides(None, None, None, None), num_gpus=1)
        cls = gpu_class(vendor=hw.vendor, arch=hw.arch, form=hw.form, link=hw.link, p2p=hw.p2p)
        check_applies(calibration, gpu_class=cls, engine=dep.engine)


def usd_per_million(*, usd_per_gpu_hour: float, num_gpus: int, tokens_per_s: float) -> float:
    """USD per million tokens at ``tokens_per_s`` on ``num_gpus`` GPUs (formula and example: module docstring);
    NaN when nothing is served."""
    if tokens_per_s <= 0:
        return math.nan
    return usd_per_gpu_hour * num_gpus / (tokens_per_s * 3600.0) * 1e6


def parse_costs(text: str, *, where: str) -> dict[str, float]:
    """The ``[costs]`` table of a costs file: GPU id -> USD per GPU-hour (positive, finite)."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not TOML ({exc})", field="--costs") from None
    t = doc.get("costs")
    if not isinstance(t, dict) or not t:
        raise InputError(f"{where}: needs a [costs] table of GPU id = USD per GPU-hour", field="--costs")
    out: dict[str, float] = {}
    for k, v in t.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise InputError(f"{where}: cost of '{echo(k, 40)}' must be a positive number (USD/h)", field="--costs")
        out[k] = float(v)
    return out


def load_costs(path: str) -> dict[str, float]:
    from kvplan.inputs.read import PATH_CHARS, decode_utf8, read_bytes

    where = echo(path, PATH_CHARS)
    data = read_bytes(path, field="--costs", what="a costs file", max_bytes=MAX_COSTS_BYTES)
    return parse_costs(decode_utf8(data, field="--costs", where=where), where=where)


def gpu_cost(costs: Mapping[str, float] | None, gpu: str, *, flat: float | None) -> float | None:
    """USD per GPU-hour of ``gpu``: the costs file's entry, else ``--gpu-hour-cost``, else None."""
    if costs and gpu in costs:
        return costs[gpu]
    return flat


class SpeedColumns:
    """Memoised speed per (group, input_len, output_len, concurrency run) for one table."""

    def __init__(
        self,
        table: Any,
        *,
        concurrency: int = 1,
        costs: Mapping[str, float] | None = None,
        gpu_hour_cost: float | None = None,
        calibration: Any = None,
        per_row: str | None = None,
        only: str = "fits",
    ) -> None:
        self.table = table
        self.concurrency = concurrency
        self.costs = costs
        self.flat = gpu_hour_cost
        self.calibration = calibration
        self.per_row = per_row  # a column holding each row's concurrency (solve config: target_requests)
        self.only = only  # the bool column of the rows that get speed (the others: NaN)
        self._memo: dict[tuple[int, int, int, int], dict[str, float]] = {}

    def _point(self, row: int, gid: int, inp: int, out: int, conc: int) -> dict[str, float]:
        from kvplan.planning.speed import SpeedInputs, speed

        key = (gid, inp, out, conc)
        hit = self._memo.get(key)
        if hit is None:
            dep = self.table.deployment(row)
            r = speed(dep, SpeedInputs(concurrency=conc, calibration=self.calibration))
            hit = {k: float(getattr(r, k)) for k in SPEED_COLUMNS}
            hit["concurrency"] = float(r.concurrency)
            hit["num_gpus"] = float(r.num_gpus)
            price = gpu_cost(self.costs, r.gpu, flat=self.flat)
            for col, rate in zip(COST_COLUMNS, ("output_tokens_per_s", "total_tokens_per_s"), strict=True):
                hit[col] = (
                    usd_per_million(usd_per_gpu_hour=price, num_gpus=r.num_gpus, tokens_per_s=hit[rate])
                    if price is not None
                    else math.nan
                )
            self._memo[key] = hit
        return hit

    def _groups(self, rows: Any, c: Mapping[str, Any], concurrency: int | None) -> tuple[Any, Any, list]:
        """(the concurrency asked per row, the rows that get speed, [(their speed dict, the chunk rows it fills)])
        with one :func:`speed` per distinct (group, input_len, output_len, concurrency as run)."""
        import numpy as np

        n = len(rows)
        asked: Any = self.concurrency if concurrency is None else concurrency
        if self.per_row is not None:
            asked = np.maximum(np.asarray(c[self.per_row]), 1)
        asked_rows = np.broadcast_to(np.asarray(asked, dtype=float), (n,))
        fits = np.flatnonzero(np.asarray(c[self.only]).astype(bool))
        if not len(fits):
            return asked_rows, fits, []
        wc = np.asarray(c["workload_concurrency"])[fits]
        want = asked[fits] if isinstance(asked, np.ndarray) else asked
        conc = np.maximum(1, np.minimum(want, np.where(wc > 0, wc, want)))
        keys = np.stack(
            [
                np.asarray(c["gid"])[fits],
                np.asarray(c["input_len"])[fits],
                np.asarray(c["output_len"])[fits],
                conc,
            ],
            axis=1,
        ).astype(np.int64)
        uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        out = []
        for u, (key, j) in enumerate(zip(uniq.tolist(), first.tolist(), strict=True)):
            out.append((self._point(int(rows[fits[j]]), *key), fits[inverse == u]))
        return asked_rows, fits, out

    def chunk(self, rows: Any, c: Mapping[str, Any], *, concurrency: int | None = None) -> dict[str, Any]:
        """The speed and cost columns (numpy float arrays, NaN where the row does not fit) of one chunk, at
        ``concurrency`` (default: the table's; ``per_row``: each row's own), with ``concurrency_asked`` and
        ``concurrency`` (as run) and ``num_gpus``."""
        import numpy as np

        n = len(rows)
        out = {k: np.full(n, np.nan) for k in (*SPEED_COLUMNS, *COST_COLUMNS, "concurrency", "num_gpus")}
        asked, _, parts = self._groups(rows, c, concurrency)
        out["concurrency_asked"] = asked.copy()
        for p, sel in parts:
            for k, v in p.items():
                out[k][sel] = v
        return out

    def suffixes(self, rows: Any, c: Mapping[str, Any], *, concurrency: int, as_json: bool) -> list[str]:
        """The text each row of the chunk gets appended (CSV: ``,v1,...``; JSON: ``, "k": v, ...``) for
        :data:`EXTRA_COLUMNS`: formatted once per distinct speed (and once for the rows without), then repeated
        (the writers' cost per row is one string join)."""
        import numpy as np

        _, _, parts = self._groups(rows, c, concurrency)  # the table's concurrency (the writers: no per_row)
        empty = _suffix(dict.fromkeys((*SPEED_COLUMNS, *COST_COLUMNS, "concurrency"), math.nan), concurrency, as_json)
        out = np.full(len(rows), empty, dtype=object)
        for p, sel in parts:
            out[sel] = _suffix(p, concurrency, as_json)
        return out.tolist()


def _suffix(p: Mapping[str, float], asked: int, as_json: bool) -> str:
    """One row's appended text for :data:`EXTRA_COLUMNS` (speed, cost, concurrency asked, as run)."""
    names = (*SPEED_COLUMNS, *COST_COLUMNS)
    run = p["concurrency"]
    if as_json:
        cells = [f'"{k}": {_json_num(float(p[k]))}' for k in names]
        cells += [f'"concurrency_asked": {asked}', f'"concurrency": {"null" if run != run else int(run)}']
        return ", " + ", ".join(cells)
    cells = [_cell(float(p[k])) for k in names] + [str(asked), "" if run != run else str(int(run))]
    return "," + ",".join(cells)


def _cell(v: float) -> str:
    return "" if v != v else f"{v:.6g}"


#: the columns appended to a sweep row, in order
EXTRA_COLUMNS = (*SPEED_COLUMNS, *COST_COLUMNS, *CONCURRENCY_COLUMNS)


def speed_extras(cols: SpeedColumns, rows: Any, c: Mapping[str, Any], concurrencies: list[int]) -> list[dict[str, Any]]:
    """:meth:`SpeedColumns.chunk` at each concurrency (the table view's rows)."""
    return [cols.chunk(rows, c, concurrency=conc) for conc in concurrencies]


def _with_suffixes(
    lines: list[str], cols: SpeedColumns, rows: Any, c: Mapping[str, Any], concs: list[int], as_json: bool
) -> list[str]:
    """Each line once per concurrency (innermost) with its speed text appended (JSON: inside the object)."""
    sufs = [cols.suffixes(rows, c, concurrency=k, as_json=as_json) for k in concs]
    if as_json:
        heads = [line[:-1] for line in lines]
        if len(concs) == 1:
            return [h + s + "}" for h, s in zip(heads, sufs[0], strict=True)]
        return [h + sf[j] + "}" for j, h in enumerate(heads) for sf in sufs]
    if len(concs) == 1:
        return [line + s for line, s in zip(lines, sufs[0], strict=True)]
    return [line + sf[j] for j, line in enumerate(lines) for sf in sufs]


def write_csv_with_speed(
    table: Any, fh: Any, cols: SpeedColumns, idx: Any = None, *, concurrencies: list[int] | None = None
) -> int:
    """The sweep's CSV (:meth:`SweepTable.write_csv`'s columns, same rows and order) with the speed and cost
    columns and the concurrency (asked, as run) appended, one chunk at a time; each row once per value of
    ``concurrencies`` (default the table's one concurrency), the concurrency innermost; returns the lines written.
    Empty speed cells where a row does not fit."""
    from kvplan.planning.sweep.columns import CSV_COLUMNS

    fh.write(",".join((*CSV_COLUMNS, *EXTRA_COLUMNS)) + "\n")
    affixes = table._csv_affixes()
    n = 0
    concs = concurrencies or [cols.concurrency]
    for rows, c in table.chunks(idx):
        out = _with_suffixes(table._csv_lines(rows, c, affixes), cols, rows, c, concs, as_json=False)
        n += len(out)
        if out:
            out.append("")
            fh.write("\n".join(out))
    return n


def _json_num(v: float) -> str:
    import json

    return "null" if v != v else json.dumps(v)


def write_jsonl_with_speed(
    table: Any, fh: Any, cols: SpeedColumns, idx: Any = None, *, concurrencies: list[int] | None = None
) -> int:
    """JSON lines (:meth:`SweepTable.write_jsonl`'s keys, same rows and order) with the keys of
    :data:`EXTRA_COLUMNS` added (null where a row does not fit); each row once per concurrency, innermost."""
    import json

    prefixes = [json.dumps({k: g.labels.get(k) for k in _group_cols()})[:-1] for g in table.groups]
    tails = [f', "method": {json.dumps(g.method)}, "error": {json.dumps(g.error)}}}' for g in table.groups]
    n = 0
    concs = concurrencies or [cols.concurrency]
    for rows, c in table.chunks(idx):
        out = _with_suffixes(table._jsonl_lines(rows, c, (prefixes, tails)), cols, rows, c, concs, as_json=True)
        n += len(out)
        if out:
            out.append("")
            fh.write("\n".join(out))
    return n


def _group_cols() -> tuple[str, ...]:
    from kvplan.planning.sweep.columns import GROUP_COLS

    return GROUP_COLS


#: sweep's --sort keys read from the speed columns: (column, descending)
SPEED_SORTS = {
    "throughput": ("output_tokens_per_s_per_gpu", True),
    "cost": ("usd_per_million_output_tokens", False),
    "ttft": ("ttft_s", False),
    "tpot": ("tpot_s", False),
}


def speed_order(table: Any, cols: SpeedColumns, sort: str, concurrencies: list[int]) -> Any:
    """Row indices of ``table`` best first by a speed key (:data:`SPEED_SORTS`): the rows that meet their target
    first, then the key's best value over the concurrencies (most output tok/s per GPU; least cost, TTFT, TPOT),
    rows without speed last, ties in grid order."""
    import numpy as np

    column, desc = SPEED_SORTS[sort]
    parts, meets = [], []
    for rows, c in table.chunks():
        vals = []
        for e in speed_extras(cols, rows, c, concurrencies):
            if column == "output_tokens_per_s_per_gpu":
                v = e["output_tokens_per_s"] / np.where(e["num_gpus"] > 0, e["num_gpus"], np.nan)
            else:
                v = np.asarray(e[column], dtype=float)
            vals.append(-v if desc else v)
        best = np.min(np.stack(vals), axis=0) if len(vals) > 1 else vals[0]
        parts.append(np.where(np.isnan(best), np.inf, best))
        meets.append(np.asarray(c["meets_target"]).astype(np.int8))
    if not parts:
        return np.arange(0)
    key, met = np.concatenate(parts), np.concatenate(meets)
    return np.lexsort((np.arange(len(key)), key, -met))
