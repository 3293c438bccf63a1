"""A calibration: multipliers on a GPU class's efficiency constants, fitted from one measured point.

``kvplan calibrate-speed`` (:mod:`kvplan.planning.calibrate_speed`) fits it; ``kvplan speed --calibration FILE``
applies it.  A calibration belongs to one GPU class and one engine (the constants of
:mod:`kvplan.perf.efficiency` are per class): applying it to another class is refused
(:func:`check_applies`, exit 2).

Which constants a phase's time depends on, by the share that bounds it (docs/speed.md's four shares):

* compute -> ``compute``, ``moe_compute``, ``attention`` (achievable fractions of peak: time ~ 1 / constant; a
  class without a ``moe_compute`` of its own keeps 0 whatever the factor, and its experts follow ``compute``);
* memory -> ``memory`` (time ~ 1 / constant);
* communication -> ``link`` (time ~ 1 / constant) and ``alpha_s`` (time ~ constant);
* overhead -> ``kernel_graph_s`` or ``kernel_eager_s`` (whichever the phase runs) and ``step_s`` (time ~ constant).

The fit moves the constants behind the phase's largest shares together by one time factor ``lam``
(:func:`time_scaled`): a fraction becomes ``1 / lam`` of itself, a latency ``lam`` times itself, so every one of
those terms takes ``lam`` times as long.  One point gives one equation per phase: one unknown per phase.

The file (TOML)::

    [calibration]
    gpu_class = "pcie-p2p"
    engine = "sglang"
    residual = 0.0          # RMS relative error of the fit over the measured metrics
    source = "bench_serving result.jsonl: prefill_tokens_per_s 7,196 at 32,768 tokens"
    [calibration.factors]
    link = 0.846
    alpha_s = 1.182
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError, echo
from kvplan.perf.record import Record

#: constants that are a fraction of a peak (a phase's time goes as 1 / constant); the rest are latencies
RATE_CONSTANTS = frozenset(("compute", "moe_compute", "attention", "memory", "link"))
MAX_CALIBRATION_BYTES = 1 << 20
#: a factor outside [1/50, 50] is not a correction but a different machine
FACTOR_RANGE = (0.02, 50.0)
FIELD = "--calibration"


def constant_names() -> tuple[str, ...]:
    """The constants a calibration may scale: :data:`kvplan.perf.efficiency.CONSTANT_NAMES`, declared once there."""
    from kvplan.perf.efficiency import CONSTANT_NAMES

    return CONSTANT_NAMES


class Calibration(Record):
    """Multipliers on one GPU class's efficiency constants for one engine, with the fit's residual."""

    gpu_class: str
    engine: str
    factors: Mapping[str, float]
    residual: float = 0.0
    source: str = ""


def phase_constants(shares: Mapping[str, float], *, graph: bool, min_share: float = 0.25) -> tuple[str, ...]:
    """The constants behind a phase's time: those of every share of at least ``min_share`` (and always the
    largest).  Example: prefill shares {compute 0.13, memory 0.18, communication 0.55, overhead 0.13} ->
    ("link", "alpha_s")."""
    top = max(shares, key=lambda k: shares[k])
    kernel = "kernel_graph_s" if graph else "kernel_eager_s"
    groups = {
        "compute": ("compute", "moe_compute", "attention"),
        "memory": ("memory",),
        "communication": ("link", "alpha_s"),
        "overhead": (kernel, "step_s"),
    }
    out: list[str] = []
    for cat in ("compute", "memory", "communication", "overhead"):
        if cat == top or shares.get(cat, 0.0) >= min_share:
            out += [n for n in groups[cat] if n not in out]
    return tuple(out)


def time_scaled(names: tuple[str, ...], lam: float) -> dict[str, float]:
    """Factors that make every term of ``names`` take ``lam`` times as long: 1 / lam for a fraction of peak,
    lam for a latency.  Example: time_scaled(("link", "alpha_s"), 1.25) -> {"link": 0.8, "alpha_s": 1.25}."""
    return {n: (1.0 / lam if n in RATE_CONSTANTS else lam) for n in names}


def apply(eff: Any, cal: Calibration | None) -> Any:
    """``eff`` (an :class:`kvplan.perf.efficiency.Efficiency`) with the calibration's factors multiplied in; a
    source line names the calibration.  ``None``: ``eff`` unchanged."""
    if cal is None or not cal.factors:
        return eff
    check_applies(cal, gpu_class=eff.gpu_class)
    values = eff.to_dict()
    for name, f in cal.factors.items():
        values[name] = values[name] * f
    shown = ", ".join(f"{k} x{v:.3g}" for k, v in sorted(cal.factors.items()))
    values["sources"] = (*eff.sources, f"calibration ({cal.engine}, residual {cal.residual:.1%}): {shown}")
    return type(eff)(**values)


def check_applies(cal: Calibration, *, gpu_class: str, engine: str | None = None) -> None:
    """Refuse a calibration fitted for another GPU class (or engine): InputError, exit 2."""
    if cal.gpu_class != gpu_class:
        raise InputError(
            f"the calibration is for GPU class {cal.gpu_class}, this deployment's GPU is class {gpu_class}",
            field=FIELD,
            hint="calibrate on this GPU (kvplan calibrate-speed) or drop --calibration",
        )
    if engine is not None and cal.engine != engine:
        raise InputError(
            f"the calibration is for engine {cal.engine}, this deployment runs {engine}",
            field=FIELD,
            hint="calibrate with this engine or drop --calibration",
        )


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def calibration_toml(cal: Calibration) -> str:
    """The calibration file's text (format in the module docstring)."""
    lines = [
        "# kvplan calibrate-speed: multipliers on the GPU class's efficiency constants (docs/choosing.md)",
        "[calibration]",
        f"gpu_class = {_q(cal.gpu_class)}",
        f"engine = {_q(cal.engine)}",
        f"residual = {cal.residual:.6g}",
        f"source = {_q(cal.source)}",
        "",
        "[calibration.factors]",
        *(f"{k} = {v:.6g}" for k, v in sorted(cal.factors.items())),
    ]
    return "\n".join(lines) + "\n"


def parse_calibration(text: str, *, where: str) -> Calibration:
    """A calibration from its TOML text; InputError (exit 2, one line) for anything else."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not TOML ({exc})", field=FIELD) from None
    t = doc.get("calibration")
    if not isinstance(t, dict):
        raise InputError(f"{where}: no [calibration] table", field=FIELD, hint="write it with kvplan calibrate-speed")
    gc, eng, fac = t.get("gpu_class"), t.get("engine"), t.get("factors", {})
    if not isinstance(gc, str) or not isinstance(eng, str) or not isinstance(fac, dict):
        raise InputError(f"{where}: [calibration] needs gpu_class, engine and a factors table", field=FIELD)
    names = constant_names()
    factors: dict[str, float] = {}
    lo, hi = FACTOR_RANGE
    for k, v in fac.items():
        if k not in names:
            raise InputError(
                f"{where}: unknown constant '{echo(k, 40)}'", field=FIELD, hint="one of " + ", ".join(names)
            )
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            raise InputError(f"{where}: factor {k} must be a number in [{lo}, {hi}]", field=FIELD)
        factors[k] = float(v)
    res = t.get("residual", 0.0)
    if isinstance(res, bool) or not isinstance(res, (int, float)) or not math.isfinite(res) or res < 0:
        raise InputError(f"{where}: residual must be a non-negative number", field=FIELD)
    src = t.get("source", "")
    return Calibration(gc, eng, factors, float(res), src if isinstance(src, str) else "")


def load_calibration(path: str) -> Calibration:
    """Read a calibration file (at most :data:`MAX_CALIBRATION_BYTES`)."""
    from kvplan.inputs.read import PATH_CHARS, decode_utf8, read_bytes

    where = echo(path, PATH_CHARS)
    data = read_bytes(path, field=FIELD, what="a calibration file", max_bytes=MAX_CALIBRATION_BYTES)
    return parse_calibration(decode_utf8(data, field=FIELD, where=where), where=where)
