""":func:`sweep`: a base deployment times the product of the axes, grouped and blocked into a :class:`SweepTable`.

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.engines.registry import check_kv_dtype_for, engine
from kvplan.errors import InputError
from kvplan.planning.sweep.axes import AXES, MAX_GROUPS, MAX_POINTS, NUMERIC_FIELDS
from kvplan.planning.sweep.blocks import _Block, _block, _block_values, _self_check
from kvplan.planning.sweep.groups import Group, _representative
from kvplan.planning.sweep.table import SweepTable

# ------------------------------------------------------------------------------------------------
# The sweep
# ------------------------------------------------------------------------------------------------


def _check_workload(base: Deployment, values: Mapping[str, list]) -> None:
    """--output-len without --input-len is an input error of the whole sweep."""
    if (base.output_len is not None or "output_len" in values) and not (
        base.input_len is not None or "input_len" in values
    ):
        raise InputError(
            "--output-len needs --input-len (the prompt tokens of each request)",
            field="--input-len",
            hint="e.g. --input-len 8192 --output-len 1024",
        )


def sweep(base: Deployment, axes: Mapping[str, Sequence], *, max_points: int = MAX_POINTS) -> SweepTable:
    """Evaluate every point of ``base`` x the product of ``axes`` (Deployment field -> values).

    Unknown models, GPUs or dtypes raise :class:`InputError` (exit 2) before any arithmetic; a group the
    engine would refuse (a TP that does not divide the KV heads, ...) becomes rows with ``fits=False``
    and ``error`` set.  Returns a :class:`SweepTable`.
    """
    import numpy as np

    values: dict[str, list] = {k: list(v) for k, v in axes.items() if v is not None}
    for k, v in values.items():
        if k not in AXES:
            raise InputError(f"'{k}' cannot be swept", field="sweep", hint="axes: " + ", ".join(AXES))
        if not v:
            raise InputError("no values", field=AXES[k].flag)
    _check_workload(base, values)
    _preresolve(base, values)

    group_fields = [f for f in values if not AXES[f].numeric]
    numeric_fields = [f for f in NUMERIC_FIELDS if f in values]
    n_group = math.prod(len(values[f]) for f in group_fields) if group_fields else 1
    n_num = math.prod(len(values[f]) for f in numeric_fields) if numeric_fields else 1
    if n_group > MAX_GROUPS:
        raise InputError(
            f"{n_group:,} combinations of model / GPU / parallelism / dtype flags (at most {MAX_GROUPS:,})",
            field="sweep",
            hint="each combination is resolved by one fit() call; sweep fewer of them",
        )
    if n_group * n_num > max_points:
        raise InputError(
            f"{n_group * n_num:,} points is more than the {max_points:,} one sweep may hold",
            field="sweep",
            hint="narrow a range or split the sweep",
        )

    groups: list[Group] = []
    blocks: list[_Block] = []
    row_errors: dict[int, str] = {}
    row_text: dict[int, tuple[str, str, list[str], bool]] = {}  # per-point rows: fit's words and its `starts`
    offset = 0
    for combo in itertools.product(*(values[f] for f in group_fields)):
        gdep = replace(base, **dict(zip(group_fields, combo, strict=True)))
        # SGLang's default mem_fraction_static depends on the request cap and on --max-total-tokens (which caps
        # the prefill CUDA-graph batch): make them group axes then
        split = []
        if (
            "mem_fraction_static" not in values
            and gdep.with_defaults().mem_fraction_static is None
            and engine(gdep.engine).request_cap_sets_memory
        ):
            split = [f for f in ("max_running_requests", "max_total_tokens") if f in values]
        inner_num = [f for f in numeric_fields if f not in split]
        for sub in itertools.product(*(values[f] for f in split)):
            dep = replace(gdep, **dict(zip(split, sub, strict=True)))
            g, res, first = _representative(dep, inner_num, values)
            g.context_given = "context_length" in values or dep.with_defaults().context_length is not None
            n = math.prod(len(values[f]) for f in inner_num) if inner_num else 1
            if g.method == "vector" and not _self_check(np, g, res, dep, first):
                g.method = "point"
                g.note = "vectorised result disagreed with fit; evaluated per point"
            b = _Block(
                g=g,
                res=res,
                dep=dep,
                names=list(inner_num),
                values=[values[f] for f in inner_num],
                offset=offset,
                n=n,
                gid=len(groups),
                sinks=(row_errors, row_text),
            )
            if g.method == "point":  # one fit() per point, evaluated once here (at most MAX_POINT_GROUP rows)
                b.done = _block(
                    np, g, res, dep, _block_values(np, b, 0, n), n, inner_num, (row_errors, row_text), offset
                )
            groups.append(g)
            blocks.append(b)
            offset += n
    return SweepTable(groups, None, row_errors, values, row_text, blocks=blocks, n=offset)


def _preresolve(base: Deployment, axes: Mapping[str, list]) -> None:
    """Unknown models and GPUs, and a KV dtype one of the swept engines does not accept (its own message), are
    input errors of the whole sweep (exit 2), not invalid rows."""
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

    engines = axes.get("engine") or [base.engine]
    for dtype in axes.get("kv_cache_dtype") or ([base.kv_cache_dtype] if base.kv_cache_dtype else []):
        check_kv_dtype_for(dtype, engines)

    for m in axes.get("model", []):
        resolve_model(m)
    for gname in axes.get("gpu", []):
        resolve_gpu(gname)


# ------------------------------------------------------------------------------------------------
# Verdicts
# ------------------------------------------------------------------------------------------------


def reason(row: Mapping[str, Any]) -> str:
    """Why a row meets its target or not, in the words ``kvplan fit`` uses (its ``target_reason``); the row's
    ``verdict`` is fit's verdict.  An invalid row: ``invalid: <the error>``."""
    return str(row["reason"])
