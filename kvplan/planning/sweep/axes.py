"""The sweep's axes: which Deployment fields may take a list or a range, and how ``--tp 1,2,4`` /
``0.70:0.95:0.05`` / ``4k:1m:x2`` are parsed and validated (as ``kvplan fit`` validates the flag).

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.engines.registry import check_kv_dtype_for, engine_names
from kvplan.errors import InputError
from kvplan.flags import SWEEP_NUMERIC, Flag, sweep_axes

#: Hard cap on the number of points of one sweep (rows are evaluated and written in chunks of :data:`CHUNK_ROWS`;
#: only a sorted output or :attr:`SweepTable.cols` holds every row: ~140 bytes each, ~0.7 GB).
MAX_POINTS = 5_000_000
#: rows evaluated and formatted at a time by the streaming writers (:meth:`SweepTable.write_csv`, ...): the memory
#: a sweep holds grows with this, not with the grid (about 2 kB per row while a chunk is formatted)
CHUNK_ROWS = 32_768
#: Hard cap on the values of one axis.
MAX_AXIS_VALUES = 1_000_000
#: Hard cap on the groups of one sweep (one ``fit`` call each, ~2 ms).
MAX_GROUPS = 10_000
#: Hard cap on the points of one per-point group (one ``fit`` call each, a few ms), and on the distinct refused pool
#: inputs of a vectorised group (each asked of ``fit`` once for its one-line error).
MAX_POINT_GROUP = 20_000


@dataclass(frozen=True)
class Axis:
    field: str  # Deployment field
    flag: str  # the CLI flag that names it in errors
    kind: str  # "str" | "int" | "count" | "float" | "size"
    numeric: bool  # vectorised inside a group


def _axis(f: Flag) -> Axis:
    return Axis(f.field, f.flag, f.kind, f.sweep == SWEEP_NUMERIC)


#: every sweepable field of the flag registry (kvplan.flags: ``sweep`` = "group" or "numeric"), registry order
AXES: dict[str, Axis] = {f.field: _axis(f) for f in sweep_axes()}

NUMERIC_FIELDS = tuple(f for f, a in AXES.items() if a.numeric)

# ------------------------------------------------------------------------------------------------
# Parsing lists and ranges
# ------------------------------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _scalar(text: str, kind: str, flag: str):
    t = text.strip()
    if kind == "str":
        return t
    if kind == "int":
        if not _INT_RE.fullmatch(t.replace("_", "")):
            raise InputError(f"'{t}' is not a whole number", field=flag, hint="write e.g. 1,2,4,8 or 1:8")
        from kvplan.units import int_text

        return int_text(t.replace("_", ""), field=flag)  # refuses absurd digit counts before int()
    if kind == "count":
        from kvplan.units import parse_count

        return parse_count(t, field=flag)
    if kind == "size":
        from kvplan.units import parse_size

        return parse_size(t, field=flag)
    if kind == "float":
        if not _FLOAT_RE.fullmatch(t):
            raise InputError(f"'{t}' is not a number", field=flag, hint="write e.g. 0.85 or 0.70:0.95:0.05")
        v = float(t)
        if not math.isfinite(v):  # pragma: no cover - the regex already refuses nan/inf
            raise InputError(f"'{t}' is not a finite number", field=flag)
        return v
    raise ValueError(kind)


def _range(item: str, kind: str, flag: str) -> list:
    parts = item.split(":")
    if kind in ("str", "size") or len(parts) not in (2, 3):
        raise InputError(
            f"'{item}' is not a value or a START:STOP[:STEP] range",
            field=flag,
            hint="write e.g. 1:8, 0.70:0.95:0.05 or 4k:1m:x2" if kind != "str" else "ranges need numbers",
        )
    start, stop = _scalar(parts[0], kind, flag), _scalar(parts[1], kind, flag)
    step_text = parts[2].strip() if len(parts) == 3 else ("1" if kind in ("int", "count") else "")
    if not step_text:
        raise InputError(f"range '{item}' needs a step", field=flag, hint="write START:STOP:STEP, e.g. 0.70:0.95:0.05")
    if start > stop:
        raise InputError(
            f"range '{item}' runs backwards (start {start} > stop {stop})",
            field=flag,
            hint="write the smaller value first",
        )
    out: list = []
    if step_text.lower().startswith("x"):
        factor = _scalar(step_text[1:], "float", flag)
        if not factor > 1:
            raise InputError(f"range '{item}': the factor must be > 1", field=flag, hint="e.g. 4k:1m:x2")
        if start <= 0:
            raise InputError(f"range '{item}': a geometric range must start above 0", field=flag)
        # the count from logarithms first: a factor near 1 (x1.0000001) is refused before a million-step loop
        if math.log(stop / start) / math.log(factor) > MAX_AXIS_VALUES:
            raise _too_many(item, None, flag)
        v = start
        while v <= stop * (1 + 1e-12):
            out.append(int(v) if kind in ("int", "count") else round(v, 12))
            if len(out) > MAX_AXIS_VALUES:
                break
            v = v * factor
    else:
        step = _scalar(step_text, "count" if kind == "count" else kind, flag)
        if not step > 0:
            raise InputError(f"range '{item}': the step must be > 0", field=flag)
        n = _linear_count(item, start, stop, step, flag)
        if kind in ("int", "count"):
            out = list(range(start, stop + 1, step))
        else:
            out = [round(start + i * step, 12) for i in range(n)]
    if len(out) > MAX_AXIS_VALUES:
        raise InputError(f"range '{item}' has more than {MAX_AXIS_VALUES:,} values", field=flag)
    return out


#: float sweep values are rounded to this many decimals (``round(v, 12)``): a smaller step gives equal values
VALUE_DECIMALS = 12


def _too_many(item: str, n: int | None, flag: str) -> InputError:
    """The refusal of a range with more than :data:`MAX_AXIS_VALUES` values; the count only when it is short."""
    count = f"{n:,} values (at most {MAX_AXIS_VALUES:,})" if n is not None and n < 10**15 else None
    return InputError(
        f"range '{_short(item)}' has {count or f'more than {MAX_AXIS_VALUES:,} values'}",
        field=flag,
        hint="use a larger step or a shorter range",
    )


def _short(item: str) -> str:
    return item if len(item) <= 60 else item[:57] + "..."


def _linear_count(item: str, start, stop, step, flag: str) -> int:
    """The number of values of ``START:STOP:STEP`` (inclusive), computed without float overflow.

    ints: ``(stop - start) // step + 1`` exactly.  floats: a step below the float resolution of the range (adding it
    to the larger end changes nothing, e.g. ``0.5:0.9:5e-324``) or below the sweep's value resolution (values are
    rounded to :data:`VALUE_DECIMALS` decimals) is refused first, so ``(stop - start) / step`` is finite and at most
    ~2^60 for every accepted step; a quotient over :data:`MAX_AXIS_VALUES` is refused before any value is made.
    Example: ``0.70:0.95:0.05`` -> 6; ``0.1:0.9:1e-300`` -> refused (one short line, no 300-digit count).
    """
    if isinstance(start, int) and isinstance(stop, int) and isinstance(step, int):
        n = (stop - start) // step + 1
        if n > MAX_AXIS_VALUES:
            raise _too_many(item, n, flag)
        return n
    if stop > start:
        edge = max(abs(start), abs(stop))
        if step < 10.0**-VALUE_DECIMALS or edge + step == edge:
            raise InputError(
                f"range '{_short(item)}': the step {step:.3g} is below the resolution of the range",
                field=flag,
                hint=f"use a step of at least 1e-{VALUE_DECIMALS} (values are kept to {VALUE_DECIMALS} decimals)",
            )
    q = (stop - start) / step
    if not math.isfinite(q) or q > MAX_AXIS_VALUES:
        raise _too_many(item, int(q) + 1 if math.isfinite(q) and q < 10**15 else None, flag)
    return math.floor(q + 1e-9) + 1


def parse_axis(text: str, *, field: str, engines: Sequence[str | None] = (None,)) -> list:
    """Parse one axis value: ``a,b,c``, ``START:STOP[:STEP]`` (inclusive; ``xF`` = geometric), or a mix.

    Values are validated the way ``kvplan fit`` validates the flag (same bounds, same field name).
    Duplicates are dropped, order is kept.  Examples: ``parse_axis("1,2,4", field="tp") == [1, 2, 4]``;
    ``parse_axis("0.70:0.95:0.05", field="mem_fraction_static")`` gives 6 values;
    ``parse_axis("4k:32k:x2", field="context_length") == [4096, 8192, 16384, 32768]``.  ``engines``: the engines
    the sweep plans (None = the default engine): a KV dtype is checked against each one's vocabulary, so
    ``parse_axis("fp8", field="kv_cache_dtype", engines=["vllm"]) == ["fp8"]`` while SGLang refuses it.
    """
    axis = AXES.get(field)
    if axis is None:
        raise InputError(f"'{field}' cannot be swept", field="sweep", hint="axes: " + ", ".join(AXES))
    flag = axis.flag
    if text is None or not str(text).strip():
        raise InputError("empty value", field=flag, hint="give one value or a list such as 1,2,4")
    items = str(text).split(",")
    values: list = []
    for item in items:
        if not item.strip():
            raise InputError(
                f"empty item in '{text}'", field=flag, hint="separate values with single commas, e.g. 1,2,4"
            )
        if axis.kind != "str" and ":" in item:
            values.extend(_range(item, axis.kind, flag))
        else:
            values.append(_scalar(item, axis.kind, flag))
        if len(values) > MAX_AXIS_VALUES:
            raise InputError(f"more than {MAX_AXIS_VALUES:,} values", field=flag)
    values = list(dict.fromkeys(values))
    if axis.kind in ("int", "count", "float") and len(values) > 2:
        # the flag checks are bounds: the extremes decide for every value
        _validate_value(field, min(values), engines)
        _validate_value(field, max(values), engines)
    else:
        for v in values:
            _validate_value(field, v, engines)
    return values


def _validate_value(field: str, value: Any, engines: Sequence[str | None] = (None,)) -> None:
    from kvplan.deployment import validate

    if field in ("model", "gpu", "kv_cache_dtype", "attention_backend", "speculative_algorithm"):
        if not value:
            raise InputError("empty value", field=AXES[field].flag)
        if field == "kv_cache_dtype":
            check_kv_dtype_for(value, engines)
        return
    if field == "engine":
        if value not in engine_names():
            raise InputError(f"unknown engine '{value}'", field="--engine", hint="use sglang, vllm or sglang,vllm")
        return
    if field in ("gpu_memory", "free_memory", "weight_memory"):
        return  # parse_size already refused nonsense
    validate(replace(Deployment(model="x"), **{field: value}))
