"""The :class:`SweepTable`: every row of a sweep, evaluated chunk by chunk, ordered, written as CSV / JSON lines.

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.errors import InputError, csv_cell
from kvplan.planning.sweep.axes import CHUNK_ROWS, NUMERIC_FIELDS
from kvplan.planning.sweep.blocks import _Block, _block_rows
from kvplan.planning.sweep.columns import (
    _BOOLS,
    _IN_COLS,
    _NULLABLE,
    _OUT_COLS,
    _P,
    CSV_COLUMNS,
    GROUP_COLS,
    _csv_field,
    _csv_quote,
)
from kvplan.planning.sweep.groups import Group, _blocks, _context_refusal, _vllm_module
from kvplan.planning.sweep.vector import _row_facts
from kvplan.planning.verdict import judge


class SweepTable:
    """Columnar sweep result: one row per point.  ``groups[gid[i]]`` holds row i's group columns.

    A table made by :func:`sweep` holds its rows as *blocks* (one per group, the numeric axes' values) and evaluates
    them on demand, :data:`CHUNK_ROWS` rows at a time: the writers (:meth:`write_csv`, :meth:`write_jsonl`),
    :attr:`n_fit` / :attr:`n_meet`, :meth:`order` and :meth:`row` never hold more than a chunk of full rows (the
    sort keys of :meth:`order` are five columns).  :attr:`cols` (every column of every row) is built on first use
    and kept.
    """

    def __init__(
        self,
        groups: list[Group],
        cols: dict | None,
        row_errors: dict[int, str],
        axes: Mapping[str, list],
        row_text: dict[int, tuple[str, str, list[str], bool]] | None = None,
        *,
        blocks: list[_Block] | None = None,
        n: int | None = None,
    ):
        self.groups = groups
        self._cols = cols  # numpy arrays, one per _IN_COLS / _OUT_COLS and "gid" (None: not built yet)
        self.blocks = blocks or []
        self._n = int(cols["gid"].shape[0]) if cols is not None else int(n or 0)
        self.row_errors = row_errors
        self.axes = dict(axes)
        self.row_text = row_text or {}  # per-point rows: (verdict, target reason, reasons, starts) as fit said them
        self._writers: dict[tuple[int, bool], Any] = {}  # (gid, JSON?) -> the group's reason templates
        self._counts: tuple[int, int] | None = None

    def __len__(self) -> int:
        return self._n

    @property
    def cols(self) -> dict:
        """Every column of every row (numpy arrays; built on first use: about 140 bytes per row)."""
        if self._cols is None:
            import numpy as np

            parts = [c for _, c in self.chunks()]
            keys = [*_IN_COLS, *_OUT_COLS, "gid", "_swa", "gpu_memory_utilization"]
            self._cols = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0) for k in keys}
        return self._cols

    def chunks(self, idx=None, *, chunk_rows: int = CHUNK_ROWS):
        """Yield ``(rows, columns)`` for consecutive pieces of at most ``chunk_rows`` rows: ``rows`` the row
        indices (grid order, or ``idx`` order), ``columns`` the arrays of :data:`CSV_COLUMNS`' numeric columns and
        ``gid`` for those rows.  Without ``idx`` the blocks are evaluated piece by piece (nothing else is kept)."""
        import numpy as np

        if chunk_rows < 1:
            raise ValueError(chunk_rows)
        if idx is not None or self._cols is not None:
            idx = np.arange(len(self)) if idx is None else np.asarray(idx)
            c = self.cols
            for lo in range(0, len(idx), chunk_rows):
                sel = idx[lo : lo + chunk_rows]
                yield sel, {k: v[sel] for k, v in c.items()}
            return
        pieces: list[dict] = []
        filled = start = 0
        for b in self.blocks:
            pos = 0
            while pos < b.n:
                take = min(b.n - pos, chunk_rows - filled)
                pieces.append(_block_rows(np, b, pos, pos + take))
                pos += take
                filled += take
                if filled == chunk_rows:
                    yield self._joined(np, pieces, start, filled)
                    start += filled
                    pieces, filled = [], 0
        if filled:
            yield self._joined(np, pieces, start, filled)

    @staticmethod
    def _joined(np, pieces: list[dict], start: int, n: int) -> tuple[Any, dict]:
        rows = np.arange(start, start + n)
        if len(pieces) == 1:
            return rows, pieces[0]
        return rows, {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}

    def _columns(self, names: Sequence[str]) -> dict:
        """Only the columns ``names`` of every row (a streaming pass unless :attr:`cols` is built)."""
        import numpy as np

        if self._cols is not None:
            return {k: self._cols[k] for k in names}
        parts: dict[str, list] = {k: [] for k in names}
        for _, c in self.chunks():
            for k in names:
                parts[k].append(c[k])
        return {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in parts.items()}

    def _count(self) -> tuple[int, int]:
        if self._counts is None:
            if self._cols is not None:
                self._counts = (int(self._cols["fits"].sum()), int(self._cols["meets_target"].sum()))
            else:
                fit = meet = 0
                for _, c in self.chunks():
                    fit += int(c["fits"].sum())
                    meet += int(c["meets_target"].sum())
                self._counts = (fit, meet)
        return self._counts

    @property
    def n_fit(self) -> int:
        """Points where the engine starts and serves one full-context request."""
        return self._count()[0]

    @property
    def n_meet(self) -> int:
        """Points that meet the target (what ``--check`` tests)."""
        return self._count()[1]

    def _at(self, i: int) -> dict:
        """Row ``i``'s columns as length-1 arrays (one block piece; no full table)."""
        import numpy as np

        if self._cols is not None:
            return {k: v[i : i + 1] for k, v in self._cols.items()}
        if not 0 <= i < len(self):
            raise IndexError(i)
        lo, hi = 0, len(self.blocks)
        while hi - lo > 1:  # the block holding row i: the last one starting at or before it
            mid = (lo + hi) // 2
            if self.blocks[mid].offset <= i:
                lo = mid
            else:
                hi = mid
        b = self.blocks[lo]
        return _block_rows(np, b, i - b.offset, i - b.offset + 1)

    def _values(self, i: int, c: Mapping[str, Any] | None = None) -> dict[str, Any]:
        c = self._at(i) if c is None else c
        d: dict[str, Any] = {}
        for k in _IN_COLS + _OUT_COLS:
            v = c[k][0].item()
            if k in _NULLABLE and v < 0:
                v = None
            d[k] = bool(v) if k in _BOOLS else v
        if "_swa" in c:
            d["_swa"] = c["_swa"][0].item()
        return d

    def _text(self, i: int, g: Group, d: Mapping[str, Any], error: str) -> tuple[str, str, list[str]]:
        """(verdict, target reason, reasons) of row ``i``: fit's words for per-point rows, :func:`judge` else."""
        return self._judged(i, g, d, error)[:3]

    def _judged(self, i: int, g: Group, d: Mapping[str, Any], error: str) -> tuple[str, str, list[str], bool]:
        """(verdict, target reason, reasons, starts) of row ``i``: fit's for per-point rows, :func:`judge`'s else
        (``starts``: the engine starts with the configuration; ``fits`` implies it)."""
        if error:
            return "invalid: " + error, "invalid: " + error, [error], False
        if i in self.row_text:
            t = self.row_text[i]
            return t[0], t[1], t[2], bool(t[3]) if len(t) > 3 else bool(d.get("fits"))
        v = judge(_row_facts(g, d))
        return v.verdict, v.target_reason, list(v.reasons), bool(getattr(v, "starts", v.fits))

    def row(self, i: int) -> dict:
        """Row ``i`` as a dict of plain Python values (contract key names where they exist), with ``verdict`` (the
        words ``kvplan fit`` uses), ``reason`` (why the target is met or not) and ``reasons``."""
        i = int(i)
        c = self._at(i)
        g = self.groups[int(c["gid"][0])]
        d: dict[str, Any] = dict(g.labels)
        d.update(self._values(i, c))
        d["method"] = g.method
        d["error"] = g.error or self.row_errors.get(i, "")
        d["verdict"], d["reason"], d["reasons"], d["starts"] = self._judged(i, g, d, d["error"])
        d.pop("_swa", None)
        return d

    def rows(self, *, chunk_rows: int = CHUNK_ROWS):
        """Every row as :meth:`row` gives it, in grid order, evaluated a chunk at a time."""
        for rows, c in self.chunks(chunk_rows=chunk_rows):
            for j, i in enumerate(rows.tolist()):
                g = self.groups[int(c["gid"][j])]
                d: dict[str, Any] = dict(g.labels)
                d.update(self._values(i, {k: v[j : j + 1] for k, v in c.items()}))
                d["method"] = g.method
                d["error"] = g.error or self.row_errors.get(i, "")
                d["verdict"], d["reason"], d["reasons"], d["starts"] = self._judged(i, g, d, d["error"])
                d.pop("_swa", None)
                yield d

    def reasons_of(self, idx) -> list[str]:
        """The ``reason`` column for rows ``idx`` (the columns read once; :func:`_vector_reason` per vectorised
        row, fit's words for the per-point rows)."""
        import numpy as np

        idx = np.asarray(idx)
        return self._reasons(idx, {k: v[idx] for k, v in self.cols.items()})

    def _reasons(self, rows, c: Mapping[str, Any], quote: Any = None) -> list[str]:
        """The ``reason`` column of one chunk (``quote`` applied to each text: CSV / JSON escaping).  A vectorised
        SGLang group's rows are classified over arrays (:func:`_reason_keys`) and each distinct (class, numbers)
        key is formatted once (:func:`_key_text`); vLLM rows by ``sweep_vllm.vector_reason``; per-point and refused
        rows carry fit's words."""
        import numpy as np

        q = quote or str
        n = len(rows)
        out = np.empty(n, dtype=object)
        gid = np.asarray(c["gid"])
        if n == 0:
            return []
        order = np.argsort(gid, kind="stable")
        cuts = np.flatnonzero(np.diff(gid[order])) + 1
        for sel in np.split(order, cuts):
            g = self.groups[int(gid[sel[0]])]
            if g.error:
                out[sel] = q("invalid: " + g.error)
            elif g.method != "vector":
                continue  # per-point rows: fit's words, below
            elif _blocks(g):
                out[sel] = self._row_reasons(g, c, sel, quote)
            else:
                csv_cells = quote is _csv_quote()
                as_json = quote is json.dumps
                texts = self._writer(int(gid[sel[0]]), as_json).texts(np, c, sel, csv=csv_cells)
                out[sel] = texts if quote is None or csv_cells or as_json else list(map(quote, texts))
        if self.row_errors or self.row_text:
            for j, i in enumerate(rows.tolist()):
                if i in self.row_errors or i in self.row_text:
                    g = self.groups[int(gid[j])]
                    out[j] = q(self._text(i, g, {}, g.error or self.row_errors.get(i, ""))[1])
        return out.tolist()

    def _writer(self, gid: int, as_json: bool = False) -> Any:
        """The group's :class:`kvplan.planning.sweep_text.ReasonWriter` (its templates kept across chunks; JSON
        string literals when ``as_json``)."""
        w = self._writers.get((gid, as_json))
        if w is None:
            from kvplan.planning.sweep_text import ReasonWriter

            g = self.groups[gid]

            def first_refusal(ctx: int, g: Group = g) -> str | None:
                return g.dtype_refusal or _context_refusal(g, ctx)

            w = self._writers[(gid, as_json)] = ReasonWriter(
                engine=g.engine, dp=g.dp, weights=g.weights, free=g.free, first_refusal=first_refusal, as_json=as_json
            )
        return w

    @staticmethod
    def _row_reasons(g: Group, c: Mapping[str, Any], sel, quote) -> list[str]:
        """vLLM's rows: ``sweep_vllm.vector_reasons(g, columns, _P, quote=quote)`` for the chunk's rows of the
        group (each distinct text quoted once)."""
        return list(_vllm_module().vector_reasons(g, {k: c[k][sel] for k in _P}, _P, quote=quote))

    def deployment(self, i: int) -> Deployment:
        """The Deployment ``kvplan fit`` would plan for row ``i`` (for cross-checks)."""
        c = self._at(int(i))
        g = self.groups[int(c["gid"][0])]
        upd = {}
        for f in NUMERIC_FIELDS:
            if f in self.axes:
                col = "requested_max_running_requests" if f == "max_running_requests" else f
                v = c[col][0].item()
                if v == v:  # NaN: a flag the row's engine ignores (vLLM's mem_fraction_static), left unset
                    upd[f] = v
        return replace(g.dep, **upd)

    def order(self, sort: str = "concurrency"):
        """Row indices, best first (rows that meet the target first).  ``sort``: concurrency | gpus | tokens |
        context | none."""
        import numpy as np

        n = len(self)
        if sort == "none" or n == 0:
            return np.arange(n)
        if sort not in ("concurrency", "gpus", "tokens", "context"):
            raise InputError(
                f"unknown sort '{sort}'", field="--sort", hint="concurrency, gpus, tokens, context or none"
            )
        c = self._columns(("kv_pool_tokens", "max_concurrency", "max_context_length", "meets_target", "gid"))
        gpus = np.array([g.labels.get("num_gpus") or 0 for g in self.groups], dtype=np.int64)[c["gid"]]
        meets = c["meets_target"].astype(np.int8)
        keys = {
            "concurrency": (c["kv_pool_tokens"], -gpus, c["max_concurrency"], meets),
            "gpus": (c["kv_pool_tokens"], c["max_concurrency"], -gpus, meets),
            "tokens": (c["max_concurrency"], c["kv_pool_tokens"], meets),
            "context": (c["max_concurrency"], c["max_context_length"], meets),
        }[sort]
        # lexsort sorts ascending on the last key first; negate for descending
        return np.lexsort(tuple(-k.astype(np.int64) for k in keys), axis=0)

    def best_mask(self, idx, sort: str = "concurrency"):
        """Which of the rows ``idx`` (sorted by :meth:`order`) tie with the first row that meets the target, on
        every sort key."""
        import numpy as np

        mask = np.zeros(len(idx), dtype=bool)
        if len(idx) == 0:
            return mask
        keys = {
            "concurrency": ("max_concurrency", "num_gpus", "kv_pool_tokens"),
            "gpus": ("num_gpus", "max_concurrency", "kv_pool_tokens"),
            "tokens": ("kv_pool_tokens",),
            "context": ("max_context_length",),
        }.get(sort, ("max_concurrency",))

        def key(c):
            g = self.groups[int(c["gid"][0])]
            return tuple(g.labels.get("num_gpus") if k == "num_gpus" else c[k][0].item() for k in keys)

        first = self._at(int(idx[0]))
        if not first["meets_target"][0]:
            return mask
        ref = key(first)
        for j, i in enumerate(idx):
            c = self._at(int(i))
            mask[j] = bool(c["meets_target"][0]) and key(c) == ref
        return mask

    # -------------------------------------------------------------------- writers
    def _csv_affixes(self) -> tuple[list[str], list[str]]:
        """The group columns of each group pre-joined as CSV (prefix) and its method, error (suffix)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="")
        prefixes, suffixes = [], []
        for g in self.groups:
            buf.seek(0)
            buf.truncate()
            w.writerow(["" if g.labels.get(k) is None else csv_cell(g.labels.get(k)) for k in GROUP_COLS])
            prefixes.append(buf.getvalue())
            suffixes.append(g.method + "," + _csv_field(g.error))
        return prefixes, suffixes

    def write_csv(self, fh: Any, idx=None, *, chunk_rows: int = CHUNK_ROWS) -> int:
        """Write the CSV (header + one line per row, in ``idx`` order; grid order by default) to ``fh`` one chunk
        at a time (one ``fh.write`` per chunk of at most ``chunk_rows`` lines); returns the rows written.  Each
        group's rows of a chunk are one template (:func:`kvplan.planning.sweep_text.csv_lines`)."""
        fh.write(",".join(CSV_COLUMNS) + "\n")
        affixes = self._csv_affixes()
        n = 0
        for rows, c in self.chunks(idx, chunk_rows=chunk_rows):
            lines = self._csv_lines(rows, c, affixes)
            if lines:
                lines.append("")
                fh.write("\n".join(lines))
            n += len(rows)
        return n

    def _csv_lines(self, rows, c: Mapping[str, Any], affixes: tuple[list[str], list[str]]) -> list[str]:
        """The CSV lines of one chunk, in its order (one template per group: sweep_text.csv_lines)."""
        from kvplan.planning.sweep_text import csv_lines, csv_quote

        return self._lines(
            rows, c, affixes, csv_lines, self._reasons(rows, c, csv_quote), lambda err: "point," + _csv_field(err)
        )

    def to_csv(self, idx=None) -> str:
        """CSV (header + one line per row, in ``idx`` order; all rows in grid order by default) as one string
        (:meth:`write_csv` streams it)."""
        buf = io.StringIO()
        self.write_csv(buf, idx)
        return buf.getvalue()

    def _jsonl_lines(self, rows, c: Mapping[str, Any], affixes: tuple[list[str], list[str]]) -> list[str]:
        """The JSON lines of one chunk, in its order (one template per group: sweep_text.jsonl_lines)."""
        from kvplan.planning.sweep_text import jsonl_lines

        return self._lines(
            rows,
            c,
            affixes,
            jsonl_lines,
            self._reasons(rows, c, json.dumps),
            lambda err: f', "method": "point", "error": {json.dumps(err)}}}',
        )

    def _lines(
        self,
        rows,
        c: Mapping[str, Any],
        affixes: tuple[list[str], list[str]],
        make: Any,
        reasons: list[str],
        error_tail: Any,
    ) -> list[str]:
        """Lines of one chunk by ``make`` (sweep_text.csv_lines / jsonl_lines) per group, in the chunk's order;
        a refused row's tail (method, error) is ``error_tail(its error)``."""
        import numpy as np

        prefixes, suffixes = affixes
        gid = np.asarray(c["gid"])
        if not len(gid):
            return []
        kw = dict(names=_IN_COLS + _OUT_COLS, nullable=_NULLABLE, bools=_BOOLS)
        if (gid == gid[0]).all():
            g0 = int(gid[0])
            lines = make(np, c, np.arange(len(gid)), prefix=prefixes[g0], suffix=suffixes[g0], reasons=reasons, **kw)
        else:
            order = np.argsort(gid, kind="stable")
            out = np.empty(len(gid), dtype=object)
            for sel in np.split(order, np.flatnonzero(np.diff(gid[order])) + 1):
                g0 = int(gid[sel[0]])
                out[sel] = make(
                    np,
                    c,
                    sel,
                    prefix=prefixes[g0],
                    suffix=suffixes[g0],
                    reasons=[reasons[j] for j in sel.tolist()],
                    **kw,
                )
            lines = out.tolist()
        if self.row_errors:
            for j, i in enumerate(rows.tolist()):
                if i in self.row_errors:
                    tail = suffixes[int(gid[j])]
                    lines[j] = lines[j][: len(lines[j]) - len(tail)] + error_tail(self.row_errors[i])
        return lines

    def write_jsonl(self, fh: Any, idx=None, *, chunk_rows: int = CHUNK_ROWS) -> int:
        """Write JSON lines (one object per row, keys as in :data:`CSV_COLUMNS`) to ``fh`` one chunk at a time;
        returns the rows written."""
        prefixes = [json.dumps({k: g.labels.get(k) for k in GROUP_COLS})[:-1] for g in self.groups]
        tails = [f', "method": {json.dumps(g.method)}, "error": {json.dumps(g.error)}}}' for g in self.groups]
        n = 0
        for rows, c in self.chunks(idx, chunk_rows=chunk_rows):
            lines = self._jsonl_lines(rows, c, (prefixes, tails))
            if lines:
                lines.append("")
                fh.write("\n".join(lines))
            n += len(rows)
        return n

    def to_jsonl(self, idx=None) -> str:
        """JSON lines: one object per row, keys as in :data:`CSV_COLUMNS` (:meth:`write_jsonl` streams them)."""
        buf = io.StringIO()
        self.write_jsonl(buf, idx)
        return buf.getvalue()

    def varying(self) -> list[str]:
        """Columns whose value differs between rows (for the table)."""
        out = [k for k in GROUP_COLS if len({str(g.labels.get(k)) for g in self.groups}) > 1]
        names = (
            "mem_fraction_static",
            "context_length",
            "requested_max_running_requests",
            "max_total_tokens",
            "target_requests",
            "input_len",
            "output_len",
        )
        first: dict[str, Any] = {}
        differ: set[str] = set()
        for _, c in self.chunks():
            for k in names:
                a = c[k]
                if k in differ or not len(a):
                    continue
                first.setdefault(k, a[0])
                if (a != first[k]).any():
                    differ.add(k)
        return out + [k for k in names if k in differ]
