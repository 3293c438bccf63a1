"""``calibrate_speed(dep, point) -> SpeedCalibration``: refit the speed model's efficiency constants from one
measured point (``kvplan calibrate-speed RESULT``, issue 23 item 4).

The point (:func:`kvplan.inputs.bench.read_bench`) gives the workload and the measured speed keys; the server's
configuration comes from ``dep`` (the flags of ``kvplan fit``, with its defaults).  The fit, per phase:

* prefill (``prefill_tokens_per_s``, ``ttft_s``) and decode (``tpot_s``, ``output_tokens_per_s``,
  ``total_tokens_per_s``) are fitted separately, prefill first;
* the constants behind the phase are those of its largest shares in the uncalibrated prediction
  (:func:`kvplan.perf.calibration.phase_constants`); decode leaves alone a constant prefill already fitted;
* one time factor ``lam`` per phase scales all of them together (:func:`kvplan.perf.calibration.time_scaled`) and
  is chosen to minimise the sum of squared log errors of the phase's metrics: golden-section search over
  ``log lam`` in [log 1/20, log 20] to 1e-4, each evaluation a full :func:`kvplan.planning.speed.speed` call
  (~40 ms warm), so a fit is ~2 x 24 calls;
* the residual is the RMS relative error over every measured metric after the fit (0 for one metric per phase,
  up to the search's tolerance).

Worked example (tests/test_calibrate_speed.py): the seed deployment's 32K prefill, measured 7,196 tok/s,
predicted 8,337 (prefill shares: communication 0.56, memory 0.18, overhead 0.13, compute 0.13), so the prefill
constants are link and alpha_s, and ``lam`` = 8,337 / 7,196 would hold if the communication terms were all of the
time; the search finds the ``lam`` that makes the whole prediction 7,196.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.inputs.bench import BenchPoint
from kvplan.perf.calibration import Calibration, phase_constants, time_scaled
from kvplan.perf.record import Record

PREFILL_METRICS = ("prefill_tokens_per_s", "ttft_s")
DECODE_METRICS = ("tpot_s", "output_tokens_per_s", "total_tokens_per_s")
_LAM_RANGE = (1 / 20, 20.0)
_TOL = 1e-4


class MetricRow(Record):
    metric: str
    measured: float
    predicted: float  # before calibration
    calibrated: float  # after

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    @property
    def calibrated_error(self) -> float:
        return (self.calibrated - self.measured) / self.measured


class SpeedCalibration(Record):
    calibration: Calibration
    rows: tuple[MetricRow, ...]
    point: Any  # BenchPoint
    deployment: str
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu_class": self.calibration.gpu_class,
            "engine": self.calibration.engine,
            "factors": dict(self.calibration.factors),
            "residual": self.calibration.residual,
            "source": self.point.source,
            "workload": {
                "input_len": self.point.input_len,
                "output_len": self.point.output_len,
                "concurrency": self.point.concurrency,
                "num_prompts": self.point.num_prompts,
            },
            "deployment": self.deployment,
            "metrics": [
                {
                    "metric": r.metric,
                    "measured": r.measured,
                    "predicted": r.predicted,
                    "error": r.error,
                    "calibrated": r.calibrated,
                    "calibrated_error": r.calibrated_error,
                }
                for r in self.rows
            ],
            "notes": list(self.notes),
        }


def speed_with(dep: Deployment, cal: Calibration | None, **inputs: Any) -> Any:
    """:func:`kvplan.planning.speed.speed` of ``dep`` with ``cal`` applied (``SpeedInputs(calibration=...)``)."""
    from kvplan.planning.speed import SpeedInputs, speed

    return speed(dep, SpeedInputs(calibration=cal, **inputs))


def _golden(f: Callable[[float], float], lo: float, hi: float, tol: float) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def calibrate_speed(dep: Deployment, point: BenchPoint) -> SpeedCalibration:
    """Fit the calibration of ``dep``'s GPU class and engine from ``point`` (algorithm in the module docstring)."""
    dep = replace(dep.with_defaults(), input_len=point.input_len, output_len=point.output_len)
    inputs = {"concurrency": point.concurrency, "num_prompts": point.num_prompts if point.concurrency > 1 else None}
    base = speed_with(dep, None, **inputs)
    notes: list[str] = []
    factors: dict[str, float] = {}
    graph = {"prefill": bool(base.prefill_graph), "decode": bool(base.decode_graph)}
    for phase, metrics in (("prefill", PREFILL_METRICS), ("decode", DECODE_METRICS)):
        have = [m for m in metrics if m in point.measured]
        if not have:
            continue
        names = tuple(n for n in phase_constants(base.shares[phase], graph=graph[phase]) if n not in factors)
        if not names:
            notes.append(f"{phase}: its constants were fitted on prefill; its metrics are compared only")
            continue
        fixed = dict(factors)

        def loss(
            x: float, names: tuple[str, ...] = names, have: list[str] = have, fixed: dict[str, float] = fixed
        ) -> float:
            cal = Calibration(base.gpu_class, dep.engine, {**fixed, **time_scaled(names, math.exp(x))})
            got = speed_with(dep, cal, **inputs)
            return sum(math.log(getattr(got, m) / point.measured[m]) ** 2 for m in have)

        x = _golden(loss, math.log(_LAM_RANGE[0]), math.log(_LAM_RANGE[1]), _TOL)
        lam = math.exp(x)
        if abs(x - math.log(_LAM_RANGE[0])) < 10 * _TOL or abs(x - math.log(_LAM_RANGE[1])) < 10 * _TOL:
            notes.append(f"{phase}: the fit hit its bound (time x {lam:.3g}); the point may not be this deployment")
        factors.update(time_scaled(names, lam))
        notes.append(f"{phase}: {', '.join(names)} scaled so that their terms take x{lam:.3f} the time")
    cal0 = Calibration(base.gpu_class, dep.engine, factors)
    after = speed_with(dep, cal0, **inputs)
    rows = tuple(
        MetricRow(m, float(point.measured[m]), float(getattr(base, m)), float(getattr(after, m)))
        for m in (*PREFILL_METRICS, *DECODE_METRICS)
        if m in point.measured
    )
    residual = math.sqrt(sum(r.calibrated_error**2 for r in rows) / len(rows)) if rows else 0.0
    shown = ", ".join(f"{r.metric} {r.measured:,.4g}" for r in rows)
    cal = Calibration(
        base.gpu_class,
        dep.engine,
        factors,
        residual,
        f"{point.source}: {shown} at {point.input_len:,} in / {point.output_len:,} out, C={point.concurrency}; "
        f"{base.model} on {base.num_gpus}x {base.gpu} TP{base.tp} EP{base.ep}",
    )
    desc = (
        f"{base.engine} {base.model} on {base.num_gpus}x {base.gpu}, TP{base.tp}/EP{base.ep}, KV {base.kv_cache_dtype}"
    )
    return SpeedCalibration(cal, rows, point, desc, tuple(notes))
