"""The words and the CSV lines of a sweep's vectorised rows, a chunk at a time (``kvplan sweep``'s writers).

A row's ``reason`` is :func:`kvplan.planning.verdict.judge`'s ``target_reason`` of its facts.  Formatting it per row
with the verdict's text functions dominated the writers (about 5 us a row).  Here the rows of one group are
classified over numpy arrays (does not fit / workload met / workload missed / met / the cap binds / the pool binds),
and each class's text is made a ``str.format`` *template* by calling the verdict's own text function once per
distinct value of its few-valued fields (target, context, workload) with sentinel numbers for the many-valued ones
(room, cap, pool): the words are always the verdict's, and each row costs one C-level ``format`` call.  The CSV line of
a row is one template too (the group's columns pre-joined, every numeric column a ``{}`` field), so a chunk is
``map(template.format, *columns)``.

numpy arrives as an argument (the sweep's modules never import it at ``import kvplan``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kvplan.planning import verdict as V
from kvplan.planning.verdict import sglang_memory_reason
from kvplan.planning.workload import CAP, LONGEST, POOL, SWA_POOL

#: sentinel ints for the many-valued fields of a reason (their ``:,`` text is replaced by a ``{k:,}`` field)
SENTINELS = _SENTINELS = (9_876_543_210_001, 9_876_543_210_002, 9_876_543_210_003)
#: the workload bound a missed workload names, by code (0 cap, 1 pool, 2 SWA pool, 3 the longest request)
BOUNDS = (CAP, POOL, SWA_POOL, LONGEST)
NOFIT, WL_MET, WL_MISSED, MET, CAP_MISSED, POOL_MISSED = range(6)


def template(text: str, sentinels: Sequence[int]) -> str:
    """``text`` (made with the ints ``sentinels`` for its many-valued numbers) as a ``str.format`` template: the
    k-th sentinel's ``:,`` text becomes the field ``{k:,}``.

    Example: ``template("1 request of 4,096 tokens at once: room for 9,876,543,210,001", [9_876_543_210_001])`` ->
    ``"1 request of 4,096 tokens at once: room for {0:,}"``."""
    out = text.replace("{", "{{").replace("}", "}}")
    for k, v in enumerate(sentinels):
        s = f"{v:,}"
        if s not in out:
            raise AssertionError(f"sentinel {s} not in {text!r}")
        out = out.replace(s, "{" + str(k) + ":,}")
    return out


def classify(np: Any, c: Mapping[str, Any], sel: Any, dp: int) -> tuple[Any, Any]:
    """(class, workload bound code) of the rows ``sel`` of chunk ``c`` (one SGLang group; ``dp``: its DP size):
    :func:`kvplan.planning.verdict._target_reason`'s branches and :func:`kvplan.planning.workload.combine`'s binding
    bound (the request cap on a tie, then the KV pool, then the SWA pool), over arrays."""
    ctx, tokens, n, fits = (c[k][sel] for k in ("context_length", "kv_pool_tokens", "target_requests", "fits"))
    inp, mrr = c["input_len"][sel], c["max_running_requests"][sel]
    out = np.maximum(c["output_len"][sel], 0)
    swa = c["_swa"][sel]
    pool = tokens // np.maximum(c["workload_tokens_per_request"][sel], 1)
    no_swa = swa < 0
    bound = np.where(
        inp + out > c["max_context_length"][sel],
        3,
        np.where((mrr <= pool) & (no_swa | (mrr <= swa)), 0, np.where(no_swa | (pool <= swa), 1, 2)),
    )
    pool_conc = tokens // np.maximum(ctx, 1) * dp
    cls = np.where(
        ~fits,
        NOFIT,
        np.where(
            inp >= 0,
            np.where(c["workload_concurrency"][sel] >= n, WL_MET, WL_MISSED),
            np.where(c["max_concurrency"][sel] >= n, MET, np.where(pool_conc >= n, CAP_MISSED, POOL_MISSED)),
        ),
    )
    return cls, bound


class ReasonWriter:
    """The reason texts of one SGLang group's vectorised rows (templates remembered across chunks).

    ``first_refusal(ctx)``: the group's start-up refusal for a context (KV dtype, then the context), None when none;
    ``weights`` / ``free``: the memory chain's first step; ``engine``, ``dp``: the words' engine and DP size."""

    def __init__(
        self,
        *,
        engine: str,
        dp: int,
        weights: int,
        free: int,
        first_refusal: Callable[[int], str | None],
        as_json: bool = False,
    ) -> None:
        self.engine, self.dp, self.weights, self.free = engine, dp, weights, free
        self.first_refusal = first_refusal
        self.as_json = as_json  # every text as a JSON string literal (the JSON-lines writer)
        self._templates: dict[tuple, Any] = {}

    def _t(self, text: str, sentinels: Sequence[int]) -> str:
        """:func:`template` of the text (JSON-quoted first when the writer writes JSON: digits and commas need no
        escaping, so the fields stay fields)."""
        return template(json.dumps(text) if self.as_json else text, sentinels)

    def _c(self, text: str) -> str:
        """A constant text, JSON-quoted when the writer writes JSON."""
        return json.dumps(text) if self.as_json else text

    def _refusal(self, ctx: int) -> str | None:
        key = ("refusal", ctx)
        if key not in self._templates:
            self._templates[key] = self.first_refusal(ctx) or ""
        return self._templates[key] or None

    def _memory(self, ctx: int, budget_ok: bool, tokens: int) -> str | None:
        """The memory chain's first failing step (:func:`kvplan.planning.verdict.sglang_memory_reason`)."""
        return sglang_memory_reason(
            weight_bytes=self.weights, free_bytes=self.free, budget=1 if budget_ok else 0, tokens=tokens, context=ctx
        )

    def texts(self, np: Any, c: Mapping[str, Any], sel: Any, *, csv: bool = False) -> list[str]:
        """The reason of every row ``sel`` of chunk ``c``, in order (the verdict's words; ``csv``: as CSV cells).

        Per class, the rows are keyed by the class's few-valued fields (:func:`few_keys`); one template per key
        (the verdict's text function called once, :func:`template`) formats the rows' many-valued fields."""
        cls, bound = classify(np, c, sel, self.dp)
        out = np.empty(len(sel), dtype=object)
        for k in np.unique(cls).tolist():
            m = np.flatnonzero(cls == k)
            rows = sel[m]

            def col(name: str, rows: Any = rows) -> Any:
                return c[name][rows]

            if k == NOFIT:
                out[m] = self._nofit_rows(np, col("context_length"), col("kv_pool_tokens"), col("kv_budget_bytes") > 0)
                continue
            n = col("target_requests")
            if k in (WL_MET, WL_MISSED):
                inp, wo = col("input_len"), np.maximum(col("output_len"), 0)
                few = [n, inp, wo] + ([bound[m]] if k == WL_MISSED else [])
                many = [col("workload_concurrency")]
            else:
                few = [n, col("context_length")]
                many = [col("max_concurrency")]
                if k == CAP_MISSED:
                    many.insert(0, col("max_running_requests"))
                elif k == POOL_MISSED:
                    many.insert(0, col("kv_pool_tokens") * self.dp)
            inv, keys = few_keys(np, few)
            fmts = np.array([self._template(k, key).format for key in keys], dtype=object)[inv].tolist()
            if len(many) == 1:
                out[m] = [f(r) for f, r in zip(fmts, many[0].tolist(), strict=True)]
            else:
                out[m] = [f(a, r) for f, a, r in zip(fmts, many[0].tolist(), many[1].tolist(), strict=True)]
        texts = out.tolist()
        return csv_cells(texts) if csv else texts

    def _template(self, cls: int, key: tuple) -> str:
        """The template of one class and few-valued key (the verdict's text function, called once)."""
        t = self._templates.get((cls, *key))
        if t is not None:
            return t
        S0, S1 = _SENTINELS[0], _SENTINELS[1]
        if cls == WL_MET:
            n, i, o = key
            text, fields = V.met_text(V.target_text(n, V.workload_label(i, o)), S0), [S0]
        elif cls == WL_MISSED:
            n, i, o, e = key
            text, fields = V.workload_missed_text(n, V.workload_label(i, o), S0, BOUNDS[e]), [S0]
        elif cls == MET:
            n, x = key
            text, fields = V.met_text(V.target_text(n, f"{x:,}"), S0), [S0]
        elif cls == CAP_MISSED:
            n, x = key
            text, fields = V.cap_missed_text(engine=self.engine, n=n, context=x, cap=S0, dp=self.dp, room=S1), [S0, S1]
        else:
            n, x = key
            text, fields = V.pool_missed_text(n=n, context=x, pool_tokens_total=S0, room=S1), [S0, S1]
        t = self._templates[(cls, *key)] = self._t(text, fields)
        return t

    def _nofit_rows(self, np: Any, ctx: Any, tokens: Any, budget_ok: Any) -> list[str]:
        """``does not fit: `` and the first reason, per row: a start-up refusal, else the memory chain's first
        failing step (the weights, no budget, or a per-context template for the pool's tokens)."""
        uniq, inv = np.unique(ctx, return_inverse=True)
        kinds = [self._nofit_kind(x) for x in uniq.tolist()]
        return [
            const if const is not None else (fmt(t) if ok else none)
            for (const, fmt, none), t, ok in zip(
                map(kinds.__getitem__, inv.ravel().tolist()), tokens.tolist(), budget_ok.tolist(), strict=True
            )
        ]

    def _nofit_kind(self, ctx: int) -> tuple[str | None, Any, str]:
        """(the text when it is the same for every row of the context, the pool template's ``format``, the no-budget
        text) for one context."""
        key = ("nofit", ctx)
        got = self._templates.get(key)
        if got is None:
            why = self._refusal(ctx)
            if why or self.weights >= self.free:
                const: str | None = self._c("does not fit: " + (why or str(self._memory(ctx, True, 0))))
                fmt = None
            else:
                const = None
                fmt = self._t("does not fit: " + str(self._memory(ctx, True, -_SENTINELS[0])), [-_SENTINELS[0]]).format
            got = self._templates[key] = (const, fmt, self._c("does not fit: " + str(self._memory(ctx, False, 0))))
        return got


def few_keys(np: Any, cols: Sequence[Any]) -> tuple[Any, list[tuple]]:
    """(each row's key index, the distinct keys) of the rows' values in the few-valued columns ``cols``: a mixed
    radix of the columns' distinct-value indices, then one 1-D ``np.unique``."""
    code = np.zeros(len(cols[0]), dtype=np.int64)
    for a in cols:  # code stays a dense index (< rows): no overflow whatever the columns
        u, i = np.unique(a, return_inverse=True)
        code = np.unique(code * len(u) + i.ravel(), return_inverse=True)[1].ravel()
    first = np.unique(code, return_index=True)[1]
    keys = list(zip(*(a[first].tolist() for a in cols), strict=True))
    inv = code
    return inv.ravel(), keys


def csv_cells(texts: list[str]) -> list[str]:
    """:func:`csv_quote` of every text (one comprehension: the writers' hot path)."""
    return [
        ('"' + (t.replace('"', '""') if '"' in t else t) + '"') if ("," in t or '"' in t or "\n" in t) else t
        for t in texts
    ]


def csv_quote(text: str) -> str:
    """One CSV cell as ``csv.writer`` (QUOTE_MINIMAL) writes it: quoted when it holds a comma, a quote or a
    newline (quotes doubled)."""
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def float_cells(np: Any, a: Any, *, integer_as_int: bool) -> list[str]:
    """A float column as CSV text, each distinct value formatted once: NaN -> "", else ``repr`` (an integer value as
    an int when ``integer_as_int``: the per-token cell)."""
    uniq, inv = np.unique(a, return_inverse=True)
    strs = np.array(
        [
            "" if math.isnan(u) else (str(int(u)) if integer_as_int and u.is_integer() else repr(u))
            for u in uniq.tolist()
        ],
        dtype=object,
    )
    return strs[inv.ravel()].tolist()


def csv_lines(
    np: Any,
    c: Mapping[str, Any],
    sel: Any,
    *,
    names: Sequence[str],
    nullable: frozenset[str],
    bools: frozenset[str],
    prefix: str,
    suffix: str,
    reasons: list[str],
) -> list[str]:
    """The CSV lines (no newline) of the rows ``sel`` of chunk ``c`` (one group): ``prefix`` (the group's columns,
    CSV-escaped), the columns ``names``, the quoted ``reasons``, ``suffix`` (method, error).  One ``%`` template for
    the rows: a column with one value in every row is written into the template once, the others are ``%s`` fields
    (a not-set integer is "", a boolean True / False, a float its ``repr``)."""
    parts, args = [_lit(prefix)], []
    for k in names:
        a = c[k][sel]
        if a.dtype.kind == "f":
            cells = float_cells(np, a, integer_as_int=k == "kv_bytes_per_token")
            if cells and cells.count(cells[0]) == len(cells):
                parts.append(_lit(cells[0]))
            else:
                parts.append("%s")
                args.append(cells)
            continue
        lo, hi = (a.min(), a.max()) if len(a) else (0, 0)
        if lo == hi:  # one value: into the template
            v = lo.item() if hasattr(lo, "item") else lo
            parts.append(
                _lit(("True" if v else "False") if k in bools else ("" if k in nullable and v < 0 else str(v)))
            )
        elif k in nullable and lo < 0:
            parts.append("%s")
            args.append(["" if v < 0 else str(v) for v in a.tolist()])
        else:
            parts.append("%s")
            args.append(a.astype(bool).tolist() if k in bools else a.tolist())
    parts.append("%s")
    args.append(reasons)
    fmt = ",".join(parts) + "," + _lit(suffix)
    return list(map(fmt.__mod__, zip(*args, strict=True)))


def _lit(text: str) -> str:
    """``text`` as literal text of a ``%`` template."""
    return text.replace("%", "%%")


def jsonl_lines(
    np: Any,
    c: Mapping[str, Any],
    sel: Any,
    *,
    names: Sequence[str],
    nullable: frozenset[str],
    bools: frozenset[str],
    prefix: str,
    suffix: str,
    reasons: list[str],
) -> list[str]:
    """The JSON lines of the rows ``sel`` of chunk ``c`` (one group): ``prefix`` (the group's keys, an object left
    open), ``"name": value`` per column (booleans true / false, null for a not-set integer or a NaN, numbers as
    Python writes them), ``"reason"`` (``reasons``: JSON string literals), ``suffix`` (method, error, the brace).
    One ``%`` template for the rows; a column with one value in every row is written into it once."""
    parts, args = [_lit(prefix)], []
    for k in names:
        key = ", " + json.dumps(k) + ": "
        a = c[k][sel]
        if a.dtype.kind == "f":
            uniq, inv = np.unique(a, return_inverse=True)
            strs = ["null" if math.isnan(u) else repr(u) for u in uniq.tolist()]
            if len(strs) == 1:
                parts.append(_lit(key + strs[0]))
            else:
                parts.append(_lit(key) + "%s")
                args.append(np.array(strs, dtype=object)[inv.ravel()].tolist())
            continue
        lo, hi = (a.min(), a.max()) if len(a) else (0, 0)
        if lo == hi:
            v = lo.item() if hasattr(lo, "item") else lo
            parts.append(
                _lit(
                    key
                    + (("true" if v else "false") if k in bools else ("null" if k in nullable and v < 0 else str(v)))
                )
            )
        elif k in bools:
            parts.append(_lit(key) + "%s")
            args.append(np.where(a, "true", "false").tolist())
        elif k in nullable and lo < 0:
            parts.append(_lit(key) + "%s")
            args.append(["null" if v < 0 else str(v) for v in a.tolist()])
        else:
            parts.append(_lit(key) + "%s")
            args.append(a.tolist())
    parts.append(', "reason": %s')
    args.append(reasons)
    fmt = "".join(parts) + _lit(suffix)
    return list(map(fmt.__mod__, zip(*args, strict=True)))
