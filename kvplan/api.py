"""The Python API: what ``from kvplan import ...`` gives a notebook or a script (docs/api.md).

The names of ``kvplan.__all__`` live here; ``kvplan/__init__.py`` hands each one over from this module the first
time it is asked for, so ``import kvplan`` (every CLI start) stays as light as before.  The surface is stable: the
names, their documented arguments and the JSON contract of the results (``kvplan.result.CONTRACT_KEYS``); a change
to any of them is written in CHANGELOG.md.

* :func:`fit` -- one deployment -> :class:`FitResult` (``kvplan fit``; the very function the CLI calls);
* :func:`sweep` -- a grid from keyword axes -> a list of row dicts (``kvplan sweep --format jsonl``'s rows);
* :func:`solve` -- the smallest deployment that meets a target, or the best one over a grid (``kvplan solve``);
* :func:`speed` / :class:`SpeedResult` -- ``kvplan speed``'s model (from :mod:`kvplan.planning.speed`, imported on
  first use);
* :class:`Deployment` -- what the user asks for (``None`` fields: the engine's default);
* :class:`KvplanError` / :class:`InputError` -- the one exception base and bad input (the CLI's exit 2).

Layer: above planning (it imports planning and the layers below; views and cli never import it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kvplan import __version__
from kvplan.deployment import Deployment
from kvplan.errors import InputError, KvplanError
from kvplan.planning.plan import fit
from kvplan.result import FitResult

__all__ = [
    "Deployment",
    "FitResult",
    "InputError",
    "KvplanError",
    "SpeedResult",  # noqa: F822 (module __getattr__ below: kvplan.planning.speed on first use)
    "__version__",
    "fit",
    "solve",
    "speed",  # noqa: F822 (as SpeedResult)
    "sweep",
]

_FIELDS = frozenset(f.name for f in dataclasses.fields(Deployment))


def _axis_values(name: str, value: Any) -> list[Any]:
    """One keyword axis as ``kvplan sweep`` would parse it: a string is the flag's text (``"1,2,4"``,
    ``"4k:128k:x2"``, ``"0.70:0.90:0.05"``); a list, tuple or range holds values; anything else is one value.
    Every value is checked the way the CLI checks the flag (InputError naming it)."""
    from kvplan.planning.sweep import parse_axis

    if isinstance(value, str):
        return parse_axis(value, field=name)
    items = list(value) if isinstance(value, (list, tuple, range)) else [value]
    out: list[Any] = []
    for v in items:
        out.extend(parse_axis(v if isinstance(v, str) else str(v), field=name))
    return list(dict.fromkeys(out))


def sweep(base: Deployment | None = None, /, **axes: Any) -> list[dict[str, Any]]:
    """Every point of ``base`` (default: the default deployment, ``Deployment()``) x the product of ``axes``, as
    one dict per point in grid order (the rows ``kvplan sweep --format jsonl`` writes, as plain Python values).

    ``axes`` are Deployment field names: a sweepable field (``tp``, ``gpu``, ``context_length``,
    ``mem_fraction_static`` ... the flags ``kvplan sweep`` takes lists for) gets a list, a range or the CLI's text;
    any other field (``enable_dp_attention=True``) is set on ``base``.  Example::

        rows = sweep(Deployment(model="qwen3-32b", gpu="h100-sxm"), tp=[1, 2, 4], context_length="32k,128k")
        [(r["tp"], r["context_length"], r["max_concurrency"]) for r in rows]   # 6 rows

    Raises :class:`InputError` for an unknown field, model or GPU, or a value the flag refuses; a point the engine
    would refuse is a row with ``fits`` False and its ``error``.  For millions of points use
    :func:`kvplan.planning.sweep.sweep` (a table evaluated chunk by chunk) instead of a list.
    """
    from kvplan.planning.sweep import AXES
    from kvplan.planning.sweep import sweep as sweep_table

    dep = base if base is not None else Deployment()
    fixed = {k: v for k, v in axes.items() if k not in AXES}
    unknown = sorted(k for k in fixed if k not in _FIELDS)
    if unknown:
        raise InputError(f"unknown Deployment field '{unknown[0]}'", field="sweep", hint="axes: " + ", ".join(AXES))
    if fixed:
        dep = dataclasses.replace(dep, **fixed)
    grid = {k: _axis_values(k, v) for k, v in axes.items() if k in AXES}
    return list(sweep_table(dep, grid).rows())


def solve(
    base: Deployment | None,
    question: str,
    *,
    max_gpus: int = 64,
    targets: Mapping[str, float] | None = None,
    objective: str = "throughput-per-gpu",
    prices: Mapping[str, float] | float | None = None,
    calibration: Any = None,
    **axes: Any,
) -> Any:
    """``kvplan solve QUESTION`` for ``base`` (None: the default deployment): ``question`` is ``gpus``,
    ``mem-fraction``, ``dtype``, ``context``, ``concurrency`` or ``config``, as the CLI takes it; ``max_gpus`` is
    ``--max-gpus``.  Returns the solve result: ``.answer`` (None when no candidate meets the target),
    ``.candidates`` (each with its reason) and ``.to_dict()`` (``kvplan solve --format json``).

    ``config`` (``kvplan solve config``): ``axes`` are the grid as in :func:`sweep` plus ``concurrency`` (an int or
    a list); ``targets`` holds any of ``ttft_s``, ``tpot_s``, ``min_decode_rate``, ``min_throughput``;
    ``objective`` is ``throughput-per-gpu``, ``cost`` or ``latency``; ``prices`` a GPU id -> USD per GPU-hour
    mapping or one USD figure for every GPU; ``calibration`` a :class:`kvplan.perf.calibration.Calibration`.
    ``.chosen``, ``.runners_up`` and ``.rejected`` split the candidates.  Example::

        r = solve(Deployment(model="Qwen/Qwen3-32B", input_len=8192, output_len=1024), "config",
                  gpu=["h100-sxm", "l40s"], tp=[1, 2, 4], concurrency=8, targets={"ttft_s": 2.0})

    ``concurrency`` with ``targets`` (``ttft_s``, ``tpot_s``, ``min_decode_rate``): the most requests that also
    meet them (``.bound`` says what set it).  The other questions take neither ``targets`` nor ``axes``."""
    from kvplan.planning.solve import solve as solve_base
    from kvplan.planning.solve_config import Targets

    dep = base if base is not None else Deployment()
    t = Targets(**dict(targets or {}))
    t.check()
    if question == "config":
        from kvplan.planning.solve_config import ConfigQuery, solve_config
        from kvplan.planning.sweep import AXES

        conc = axes.pop("concurrency", 1)
        concs = tuple(conc) if isinstance(conc, (list, tuple, range)) else (conc,)
        unknown = sorted(k for k in axes if k not in AXES)
        if unknown:
            raise InputError(f"'{unknown[0]}' cannot be swept", field="solve", hint="axes: " + ", ".join(AXES))
        flat = float(prices) if isinstance(prices, (int, float)) and not isinstance(prices, bool) else None
        costs = dict(prices) if isinstance(prices, Mapping) else None
        q = ConfigQuery(
            base=dep,
            axes={k: _axis_values(k, v) for k, v in axes.items()},
            concurrency=concs,
            targets=t,
            objective=objective,
            costs=costs,
            gpu_hour_cost=flat,
            calibration=calibration,
        )
        return solve_config(q)
    if axes:
        raise InputError(f"solve {question} takes no axes ({', '.join(sorted(axes))})", field="solve")
    if question == "concurrency" and t.latency:
        from kvplan.planning.solve import solve_concurrency_targets

        return solve_concurrency_targets(dep, t, calibration=calibration)
    return solve_base(dep, question, max_gpus=max_gpus)


#: names imported on first use, from the module that defines them (the speed model is its own module)
_LAZY: Mapping[str, str] = {"speed": "kvplan.planning.speed", "SpeedResult": "kvplan.planning.speed"}


def __getattr__(name: str) -> Any:
    """``speed`` and ``SpeedResult`` from :mod:`kvplan.planning.speed`, imported on first use (PEP 562)."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
