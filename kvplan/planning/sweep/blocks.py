"""A group's rows: its numeric grid as a block, evaluated on demand (vectorised or one ``fit`` per point), the
rows the planner refuses, and the self-check of a vectorised group against its representative ``fit``.

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning.sweep.axes import MAX_POINT_GROUP
from kvplan.planning.sweep.columns import _BOOLS, _NULLABLE, _OUT_COLS
from kvplan.planning.sweep.groups import Group
from kvplan.planning.sweep.vector import _row_facts, _row_reason, evaluate_group
from kvplan.planning.verdict import judge


@dataclass
class _Block:
    """One group's rows, evaluated on demand: the numeric axes' values (the block is their C-order product)."""

    g: Group
    res: Any
    dep: Deployment
    names: list[str]  # the inner numeric axes
    values: list[list]  # their values
    offset: int  # the block's first row in the table
    n: int
    gid: int
    done: dict | None = None  # a per-point block's columns (evaluated once, by fit)
    sinks: tuple[dict, dict] = field(default_factory=lambda: ({}, {}))  # the table's row_errors, row_text
    refused: dict = field(default_factory=dict)  # a vector block's refused inputs -> fit's one-line error


def _block_values(np, b: _Block, lo: int, hi: int) -> dict[str, Any]:
    """The numeric axes' values of the block's rows ``lo .. hi - 1`` (row-major over the axes, as
    ``np.meshgrid(indexing="ij")`` ravels them)."""
    if not b.names:
        return {}
    shape = tuple(len(v) for v in b.values)
    coords = np.unravel_index(np.arange(lo, hi), shape)
    return {f: np.asarray(v)[c] for f, v, c in zip(b.names, b.values, coords, strict=True)}


def _block_rows(np, b: _Block, lo: int, hi: int) -> dict[str, Any]:
    """Columns (``_IN_COLS``, ``_OUT_COLS``, ``gid``) of the block's rows ``lo .. hi - 1``."""
    if b.done is not None:
        out = {k: v[lo:hi] for k, v in b.done.items()}
    else:
        n = hi - lo
        out = _block(np, b.g, b.res, b.dep, _block_values(np, b, lo, hi), n, b.names, b.sinks, b.offset + lo, b.refused)
    out["gid"] = np.full(hi - lo, b.gid, dtype=np.int32)
    return out


def _numeric_inputs(np, dep: Deployment, vals: Mapping[str, Any], n: int, res, g: Group | None = None) -> dict:
    """Full-length input arrays for one group: an axis, else the value ``fit`` used."""
    eff = dep.with_defaults()

    def col(name, default, dtype):
        if name in vals:
            return np.asarray(vals[name], dtype=dtype)
        return np.full(n, default, dtype=dtype)

    def unset(v):
        return -1 if v is None else v

    mfs_default = (
        eff.mem_fraction_static
        if eff.mem_fraction_static is not None
        else (res.mem_fraction_static if res is not None and res.mem_fraction_static is not None else math.nan)
    )
    mfs = col("mem_fraction_static", mfs_default, np.float64)
    if g is not None and g.rules is not None and ("mem_fraction_static" in vals or eff.mem_fraction_static is not None):
        # ModelRunner's cut of any given value for a multimodal model (SGLang up to 0.4.8); fit reports the cut value
        mfs = np.asarray(
            g.rules.runner_mem_fraction_factor(
                mem_fraction_static=mfs,
                is_multimodal=g.rules.counts_multimodal(
                    architecture=g.model.architecture, has_vision_tower=g.model.has_vision_tower
                ),
            ),
            dtype=np.float64,
        )
    ctx_default = eff.context_length or (res.context_length if res is not None else 0)
    inp = col("input_len", unset(eff.input_len), np.int64)
    out = col("output_len", unset(eff.output_len), np.int64)
    return {
        "mem_fraction_static": mfs,
        "gpu_memory_utilization": col("gpu_memory_utilization", math.nan, np.float64),
        "context_length": col("context_length", ctx_default, np.int64),
        "requested_max_running_requests": col("max_running_requests", unset(eff.max_running_requests), np.int64),
        "max_total_tokens": col("max_total_tokens", unset(eff.max_total_tokens), np.int64),
        "target_requests": col("target_requests", eff.target_requests or 1, np.int64),
        "input_len": inp,
        "output_len": np.where((inp >= 0) & (out < 0), 0, out),
    }


def _evaluate(g: Group, ins: Mapping[str, Any]) -> dict:
    """:func:`evaluate_group` on the input arrays of :func:`_numeric_inputs` (-1 = not set; NaN utilisation: the
    group's)."""
    import numpy as np

    req, mtt, inp = ins["requested_max_running_requests"], ins["max_total_tokens"], ins["input_len"]
    util = ins["gpu_memory_utilization"]
    return evaluate_group(
        g,
        mem_fraction_static=ins["mem_fraction_static"],
        context_length=ins["context_length"],
        gpu_memory_utilization=None if np.isnan(util).all() else util,
        max_running_requests=None if (req < 0).all() else req,
        max_total_tokens=None if (mtt < 0).all() else mtt,
        target_requests=ins["target_requests"],
        input_len=None if (inp < 0).all() else inp,
        output_len=None if (inp < 0).all() else ins["output_len"],
    )


def _copy_fit(out: dict, ins: dict, j: int, fr) -> None:
    """Row ``j`` of a per-point block from one ``fit`` result."""
    out["kv_bytes_per_token"][j] = fr.kv_bytes_per_token
    out["kv_budget_bytes"][j] = fr.kv_budget_bytes
    out["kv_pool_tokens"][j] = fr.kv_pool_tokens
    out["max_running_requests"][j] = fr.max_running_requests
    out["max_concurrency"][j] = int(fr.max_concurrency)
    out["max_context_length"][j] = fr.max_context_length
    out["fits"][j] = fr.fits
    out["meets_target"][j] = fr.meets_target
    out["workload_tokens_per_request"][j] = (
        -1 if fr.workload_tokens_per_request is None else fr.workload_tokens_per_request
    )
    out["workload_concurrency"][j] = -1 if fr.workload_concurrency is None else fr.workload_concurrency
    ins["mem_fraction_static"][j] = fr.mem_fraction_static if fr.mem_fraction_static is not None else math.nan
    ins["context_length"][j] = fr.context_length
    ins["target_requests"][j] = fr.target_requests


def _block(np, g: Group, res, dep: Deployment, vals, n: int, inner_num, sinks, offset, refused=None) -> dict:
    ins = _numeric_inputs(np, dep, vals, n, res, g)
    out = _empty_out(np, n)
    if g.method == "vector":
        got = _evaluate(g, ins)
        error = got.pop("_error", None)
        for k, v in got.items():
            out[k] = np.array(v, dtype=out[k].dtype) if k in out else v
        if "kv_bytes_per_token" not in got:
            out["kv_bytes_per_token"] = np.full(n, g.kv_cell)
        if error is not None and error.any():
            _refused_rows(
                np,
                g,
                dep,
                ins,
                out,
                np.flatnonzero(error),
                inner_num,
                vals,
                sinks,
                offset,
                {} if refused is None else refused,
            )
    elif g.method == "point":
        if n > MAX_POINT_GROUP:
            raise InputError(
                f"{n:,} points for {g.labels.get('model')} ({g.family or g.labels.get('engine')}), which "
                f"is evaluated one fit() per point; at most {MAX_POINT_GROUP:,}",
                field="sweep",
                hint="narrow the ranges for these deployments",
            )
        lists = {f: vals[f].tolist() for f in inner_num}
        _fit_rows(g, dep, ins, out, range(n), lists, inner_num, sinks, offset)
    return {**ins, **out}


def _empty_out(np, n: int) -> dict:
    """The output columns of ``n`` rows as an unplanned (refused) row has them: zeros, False, -1 = not set."""
    out = {k: np.zeros(n, dtype=np.int64) for k in _OUT_COLS}
    out["kv_bytes_per_token"] = np.zeros(n, dtype=np.float64)
    for k in _BOOLS:
        out[k] = np.zeros(n, dtype=bool)
    for k in ("workload_tokens_per_request", "workload_concurrency", "_swa"):
        out[k] = np.full(n, -1, dtype=np.int64)
    return out


def _fit_rows(
    g: Group, dep: Deployment, ins: dict, out: dict, rows, lists: Mapping[str, list], inner_num, sinks, offset: int
) -> dict[int, str]:
    """One ``fit`` per row ``j`` of ``rows``: its numbers into ``out`` / ``ins``, its words into ``row_text``, an
    InputError's line into ``row_errors`` (returned too, by row)."""
    from kvplan.planning.plan import fit

    row_errors, row_text = sinks
    errors: dict[int, str] = {}
    for j in rows:
        d = replace(dep, **{f: lists[f][j] for f in inner_num})
        try:
            fr = fit(d, raise_refusals=True)  # an engine refusal is the row's error, as the vector rows say it
        except InputError as exc:
            row_errors[offset + j] = errors[j] = exc.one_line()
            continue
        _copy_fit(out, ins, j, fr)
        row_text[offset + j] = (fr.verdict, fr.target_reason, list(fr.reasons), bool(getattr(fr, "starts", fr.fits)))
    return errors


#: the numeric inputs a pool refusal depends on (the budget, the request cap, the token cap: the context, the target
#: and the workload only enter the verdict, and no refusal's text names them)
_REFUSAL_KEYS = ("mem_fraction_static", "requested_max_running_requests", "max_total_tokens")


def _refused_rows(
    np, g: Group, dep: Deployment, ins: dict, out: dict, rows, inner_num, vals, sinks, offset: int, refused: dict
) -> None:
    """Rows a vectorised family's planner refuses (its formulas flag them): ``fit``'s one-line error, asked once per
    distinct pool input (remembered in ``refused``); the row's outputs are the unplanned row's (zeros)."""
    row_errors, _ = sinks
    blank = _empty_out(np, len(rows))
    for k, v in blank.items():
        out[k][rows] = v
    lists = {f: vals[f].tolist() for f in inner_num}
    keys = list(zip(*(ins[k][rows].tolist() for k in _REFUSAL_KEYS), strict=True))
    todo = [j for j, key in zip(rows.tolist(), keys, strict=True) if key not in refused]
    firsts: dict[Any, int] = {}
    for j, key in zip(rows.tolist(), keys, strict=True):
        if key not in refused:
            firsts.setdefault(key, j)
    if len(refused) + len(firsts) > MAX_POINT_GROUP:
        raise InputError(
            f"more than {MAX_POINT_GROUP:,} distinct refused points for {g.labels.get('model')} "
            f"({g.family}), each asked of fit() for its error",
            field="sweep",
            hint="narrow --mem-fraction-static / --max-running-requests / --max-total-tokens",
        )
    errors = _fit_rows(g, dep, ins, out, sorted(firsts.values()), lists, inner_num, sinks, offset) if todo else {}
    for key, j in firsts.items():
        if j not in errors:  # the formulas flagged a row fit plans: a bug (the internal-error path)
            raise AssertionError(f"sweep: the {g.family} vector formulas refused a point fit plans")
        refused[key] = errors[j]
    for j, key in zip(rows.tolist(), keys, strict=True):
        row_errors[offset + j] = refused[key]


def _self_check(np, g: Group, res, dep: Deployment, first) -> bool:
    """The vectorised formula and verdict at the representative point must reproduce ``fit`` exactly."""
    ins = _numeric_inputs(np, dep, {k: [v] for k, v in first.items()}, 1, res, g)
    r = _evaluate(g, ins)
    if bool(r.pop("_error", np.zeros(1, dtype=bool))[0]):
        return False
    r.setdefault("kv_bytes_per_token", np.full(1, g.kv_cell))
    one = {k: v[0].item() for k, v in {**ins, **r}.items()}
    for k in _NULLABLE:
        one[k] = None if one[k] < 0 else one[k]
    v = judge(_row_facts(g, one))
    work = None if res.workload_concurrency is None else res.workload_concurrency
    mfs_ok = (
        math.isnan(one["mem_fraction_static"])
        if res.mem_fraction_static is None
        else one["mem_fraction_static"] == res.mem_fraction_static
    )
    return (
        mfs_ok
        and one["kv_budget_bytes"] == res.kv_budget_bytes
        and one["kv_pool_tokens"] == res.kv_pool_tokens
        and one["kv_bytes_per_token"] == float(res.kv_bytes_per_token)
        and one["max_running_requests"] == res.max_running_requests
        and one["max_concurrency"] == int(res.max_concurrency)
        and bool(one["fits"]) == res.fits
        and one["max_context_length"] == res.max_context_length
        and bool(one["meets_target"]) == res.meets_target
        and one["workload_concurrency"] == work
        and (v.fits, v.verdict, v.target_reason, v.meets_target)
        == (res.fits, res.verdict, res.target_reason, res.meets_target)
        and _row_reason(g, one) == res.target_reason
    )
