"""Speed and cost columns for a sweep (issue 23 item 2; library side, the CLI's ``--speed`` is not wired yet).

:func:`speed_columns` adds, for the rows of one chunk of a :class:`~kvplan.planning.sweep.table.SweepTable`, the
speed JSON keys of :func:`kvplan.planning.speed.speed` (scalars: :data:`SPEED_COLUMNS`) and, with a cost per
GPU-hour, ``usd_per_million_output_tokens`` and ``usd_per_million_total_tokens``.  The speed of a row depends on its
group (model, GPU, layout, KV dtype) and its workload (input_len, output_len, the concurrency asked, capped by what
the row fits), not on the memory axes otherwise: one :func:`speed` call per distinct (group, input_len,
output_len, concurrency that runs), memoised for the table, then broadcast over the chunk's rows.

Cost (per row): ``usd_per_million_output_tokens = usd_per_gpu_hour x num_gpus / (output_tokens_per_s x 3600) x 1e6``,
likewise for total tokens.  Example: 8 GPUs at 2.50 USD/h serving 1,000 output tok/s: 20 USD/h / 3.6M tokens/h =
5.556 USD per million output tokens.

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
MAX_COSTS_BYTES = 1 << 20


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
    ) -> None:
        self.table = table
        self.concurrency = concurrency
        self.costs = costs
        self.flat = gpu_hour_cost
        self._memo: dict[tuple[int, int, int, int], dict[str, float]] = {}

    def _point(self, row: int, gid: int, inp: int, out: int, conc: int) -> dict[str, float]:
        from kvplan.planning.speed import SpeedInputs, speed

        key = (gid, inp, out, conc)
        hit = self._memo.get(key)
        if hit is None:
            dep = self.table.deployment(row)
            r = speed(dep, SpeedInputs(concurrency=conc))
            hit = {k: float(getattr(r, k)) for k in SPEED_COLUMNS}
            price = gpu_cost(self.costs, r.gpu, flat=self.flat)
            for col, rate in zip(COST_COLUMNS, ("output_tokens_per_s", "total_tokens_per_s"), strict=True):
                hit[col] = (
                    usd_per_million(usd_per_gpu_hour=price, num_gpus=r.num_gpus, tokens_per_s=hit[rate])
                    if price is not None
                    else math.nan
                )
            self._memo[key] = hit
        return hit

    def chunk(self, rows: Any, c: Mapping[str, Any]) -> dict[str, Any]:
        """The speed and cost columns (numpy float arrays, NaN where the row does not fit) of one chunk."""
        import numpy as np

        n = len(rows)
        out = {k: np.full(n, np.nan) for k in (*SPEED_COLUMNS, *COST_COLUMNS)}
        fits = np.flatnonzero(np.asarray(c["fits"]).astype(bool))
        if not len(fits):
            return out
        wc = np.asarray(c["workload_concurrency"])[fits]
        conc = np.maximum(1, np.minimum(self.concurrency, np.where(wc > 0, wc, self.concurrency)))
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
        for u, (key, j) in enumerate(zip(uniq.tolist(), first.tolist(), strict=True)):
            p = self._point(int(rows[fits[j]]), *key)
            sel = fits[inverse == u]
            for k, v in p.items():
                out[k][sel] = v
        return out


def _cell(v: float) -> str:
    return "" if v != v else f"{v:.6g}"


def write_csv_with_speed(table: Any, fh: Any, cols: SpeedColumns, idx: Any = None) -> int:
    """The sweep's CSV (:meth:`SweepTable.write_csv`'s columns, same rows and order) with the speed and cost
    columns appended, one chunk at a time; returns the rows written.  Empty cells where a row does not fit."""
    from kvplan.planning.sweep.columns import CSV_COLUMNS

    fh.write(",".join((*CSV_COLUMNS, *SPEED_COLUMNS, *COST_COLUMNS)) + "\n")
    affixes = table._csv_affixes()
    n = 0
    names = (*SPEED_COLUMNS, *COST_COLUMNS)
    for rows, c in table.chunks(idx):
        lines = table._csv_lines(rows, c, affixes)
        extra = cols.chunk(rows, c)
        out = [line + "," + ",".join(_cell(float(extra[k][j])) for k in names) for j, line in enumerate(lines)]
        if out:
            out.append("")
            fh.write("\n".join(out))
        n += len(rows)
    return n
