"""The GPU figures the speed model needs, resolved once per run: :func:`resolve_hardware`.

Facts live in the hardware presets (``configs/hardware/*.toml``, ``[perf]`` table: dense TFLOPS per dtype at the
named clock, memory bandwidth, the link between GPUs, the power limit, each with its source).  A figure the model
needs and the preset lacks is an :class:`~kvplan.errors.InputError` naming the figure and the override flag
(``--gpu-tflops``, ``--gpu-bandwidth``, ``--link-bandwidth``), never a guess.

``--power-limit W`` (a card capped with ``nvidia-smi -pl``): the clock the card sustains under a cap is modelled as
``f = f0 * (W / W0) ** (1/3)`` (dynamic power ~ f * V^2 with V rising about linearly with f near the top of the
V/f curve), applied to compute only; memory bandwidth is unchanged (the memory clock is not power-managed the
same way).  A cap at or above the board limit changes nothing.  This is an assumption, stated in every result.
"""

from __future__ import annotations

from typing import Any

from kvplan.errors import InputError
from kvplan.perf.record import Record

#: the compute dtypes a step may run its matrix products in
DTYPES = ("bf16", "fp16", "fp8", "fp4", "int8")

POWER_EXPONENT = 1.0 / 3.0  # clock ~ power ** (1/3): the module docstring


class Overrides(Record):
    """The user's hardware overrides (None: not given).  ``gpu_tflops``: dense TFLOPS at the compute dtype the
    step runs (replaces every dtype's figure, scaled by the preset's ratios when it has them); ``gpu_bandwidth``
    GB/s; ``link_bandwidth`` GB/s per direction per GPU; ``power_limit`` W."""

    gpu_tflops: float | None = None
    gpu_bandwidth: float | None = None
    link_bandwidth: float | None = None
    power_limit: float | None = None


class Hardware(Record):
    """One GPU as the speed model sees it (all rates after ``--power-limit`` and the overrides)."""

    gpu_id: str
    name: str
    vendor: str
    arch: str
    form: str
    link: str  # nvlink | pcie | xgmi | nvlink-c2c | none
    p2p: bool
    tflops: dict[str, float]  # dtype -> dense TFLOPS (power-scaled)
    memory_gbs: float
    link_gbs: float
    sm: str = ""
    power_w: float | None = None
    power_scale: float = 1.0
    sources: tuple[str, ...] = ()

    def peak_flops(self, dtype: str) -> float:
        """FLOP/s of ``dtype`` (falls back to the nearest slower dtype the GPU has: fp4 -> fp8 -> bf16)."""
        for d in _FALLBACK[dtype]:
            v = self.tflops.get(d)
            if v:
                return v * 1e12
        raise InputError(  # pragma: no cover - resolve_hardware guarantees bf16
            f"GPU {self.gpu_id} has no {dtype} TFLOPS figure", field="--gpu-tflops", hint="pass --gpu-tflops"
        )


_FALLBACK = {
    "fp4": ("fp4", "fp8", "bf16", "fp16"),
    "fp8": ("fp8", "bf16", "fp16"),
    "int8": ("int8", "fp8", "bf16", "fp16"),
    "bf16": ("bf16", "fp16"),
    "fp16": ("fp16", "bf16"),
}


def _missing(gpu_id: str, figure: str, flag: str, unit: str) -> InputError:
    return InputError(
        f"GPU preset '{gpu_id}' has no {figure} figure, which the speed model needs",
        field=flag,
        hint=f"pass {flag} {unit} (or add perf.{figure} with its source to configs/hardware/{gpu_id}.toml)",
    )


def _check_positive(name: str, value: float | None, maximum: float) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value <= maximum):
        raise InputError(f"must be a positive number up to {maximum:,.0f}, got {value!r}", field=name)


def check_overrides(o: Overrides) -> None:
    """InputError naming the flag for a non-positive or absurd override."""
    _check_positive("--gpu-tflops", o.gpu_tflops, 1e6)
    _check_positive("--gpu-bandwidth", o.gpu_bandwidth, 1e6)
    _check_positive("--link-bandwidth", o.link_bandwidth, 1e5)
    _check_positive("--power-limit", o.power_limit, 1e5)


def power_scale(*, power_w: float | None, limit_w: float | None) -> float:
    """Compute scale under a power cap: ``min(1, (limit / board) ** (1/3))``; 1 without a cap or a board figure.

    Example: a 600 W card capped at 300 W: (0.5) ** (1/3) = 0.794.
    """
    if limit_w is None or power_w is None or limit_w >= power_w:
        return 1.0
    return float((limit_w / power_w) ** POWER_EXPONENT)


def resolve_hardware(gpu: Any, overrides: Overrides, *, num_gpus: int = 1) -> Hardware:
    """The :class:`Hardware` of a :class:`kvplan.inputs.presets.HardwarePreset` (its ``perf`` table read with
    ``getattr``: a preset without one is treated as having no figures).  ``num_gpus`` > 1 needs a link figure.

    Errors: InputError naming the missing figure and its override flag.
    """
    check_overrides(overrides)
    perf = getattr(gpu, "perf", None)
    gpu_id = str(getattr(gpu, "id", "gpu"))
    tflops: dict[str, float] = {}
    if perf is not None:
        for d in DTYPES:
            v = getattr(perf, f"tflops_{d}", None)
            if v:
                tflops[d] = float(v)
    if "bf16" not in tflops and "fp16" in tflops:
        tflops["bf16"] = tflops["fp16"]
    if overrides.gpu_tflops is not None:
        base = tflops.get("bf16")
        if base:
            tflops = {d: overrides.gpu_tflops * v / base for d, v in tflops.items()}
        else:
            tflops = {"bf16": overrides.gpu_tflops}
    if "bf16" not in tflops:
        raise _missing(gpu_id, "tflops_bf16", "--gpu-tflops", "TFLOPS")
    mem = overrides.gpu_bandwidth or (getattr(perf, "memory_bandwidth_gbs", None) if perf is not None else None)
    if not mem:
        raise _missing(gpu_id, "memory_bandwidth_gbs", "--gpu-bandwidth", "GB/s")
    link = str(getattr(perf, "link", None) or getattr(gpu, "interconnect", "pcie") or "pcie")
    link_gbs = overrides.link_bandwidth or (getattr(perf, "link_gbs", None) if perf is not None else None)
    if not link_gbs:
        if num_gpus > 1:
            raise _missing(gpu_id, "link_gbs", "--link-bandwidth", "GB/s")
        link_gbs = 1.0  # never used by a single-GPU step
    p2p = getattr(perf, "p2p", None) if perf is not None else None
    power_w = getattr(perf, "power_w", None) if perf is not None else None
    scale = power_scale(power_w=power_w, limit_w=overrides.power_limit)
    if overrides.power_limit is not None and power_w is None:
        raise _missing(gpu_id, "power_w", "--power-limit", "W (and the board limit in the preset)")
    sources = dict(getattr(perf, "sources", {}) or {}) if perf is not None else {}
    src = tuple(f"{k}: {v}" for k, v in sorted(sources.items()))
    if overrides.gpu_tflops is not None:
        src += (f"--gpu-tflops {overrides.gpu_tflops:g} (given)",)
    if overrides.gpu_bandwidth is not None:
        src += (f"--gpu-bandwidth {overrides.gpu_bandwidth:g} GB/s (given)",)
    if overrides.link_bandwidth is not None:
        src += (f"--link-bandwidth {overrides.link_bandwidth:g} GB/s (given)",)
    return Hardware(
        gpu_id=gpu_id,
        name=str(getattr(gpu, "name", gpu_id)),
        vendor=str(getattr(gpu, "vendor", "nvidia")),
        arch=str(getattr(perf, "arch", None) or "") if perf is not None else "",
        form=str(getattr(perf, "form", None) or "") if perf is not None else "",
        link=link,
        p2p=True if p2p is None else bool(p2p),
        tflops={d: v * scale for d, v in tflops.items()},
        memory_gbs=float(mem),
        link_gbs=float(link_gbs),
        sm=str(getattr(gpu, "sm", "") or ""),
        power_w=float(power_w) if power_w else None,
        power_scale=scale,
        sources=src,
    )
