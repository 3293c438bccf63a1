"""Calibrate kvplan against a real startup log: recover the inputs, predict, compare quantity by quantity.

``calibrate(facts)`` takes what :func:`kvplan.inputs.logs.parse_log` recovered from an SGLang or vLLM startup log,
builds a measured-mode :class:`~kvplan.deployment.Deployment` from it (the server arguments / vLLM config the log
printed, the free memory before weights and the weight load the engine measured), runs
:func:`kvplan.planning.plan.fit`, and lines every printed quantity up against kvplan's prediction:

SGLang (sgl-project/sglang python/sglang/srt, v0.5.23)
    ``KV Cache is allocated. #tokens`` and the scheduler's ``max_total_num_tokens`` vs the pool tokens;
    ``K size + V size`` / ``KV size`` vs ``(tokens + page_size) x bytes per token`` (the pool allocates one
    padding page beyond the budgeted tokens, mem_cache/memory_pool.py ``MHATokenToKVPool._create_buffers``);
    ``max_running_requests`` and ``context_len`` (managers/scheduler.py).
vLLM (vllm-project/vllm, v0.33.0 and the older formats kvplan.inputs.logs reads)
    ``Available KV cache memory`` vs the budget rebuilt from the logged total / weights / activation /
    non-torch / CUDA-graph terms (when all are printed); ``GPU KV cache size`` tokens, ``# GPU blocks`` and
    ``Maximum concurrency`` from the logged available memory; the fit-check error's estimated maximum length.

The release: the deployment is planned with the rules of the release the log came from
(:mod:`kvplan.planning.calibrate_release`: ``--engine-version``, else the version the log prints, else the newest
release its line formats allow, :func:`kvplan.inputs.logs.release_window`).  When that window spans a rule change,
the engine rows are also computed under every other stretch of it that shares one rule set
(:attr:`Calibration.by_release`, the applied one first), so the answer under each rule is shown.

Two further rows describe kvplan's cold-mode models on the same log (informational, not part of
``--check``): the free memory at start that :mod:`kvplan.engines.runtime` models for the GPU and parallelism, and the
weight footprint :mod:`kvplan.weights.estimate` estimates, both against what the log measured.

Agreement: a checked row agrees when ``|predicted - logged| <= max(tolerance x logged, resolution)``, where
``resolution`` is what the two-decimal GiB prints can explain (a printed GiB figure is known to +-0.005 GiB;
the budget ``A - P (1 - f)`` inherits +-0.005 (2 - f) GiB from its two inputs, i.e. that many bytes divided by
the bytes per token in tokens).  Nothing here is fitted to a log.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from kvplan.engines.registry import engine
from kvplan.errors import InputError, KvplanError
from kvplan.family import Family
from kvplan.units import GiB

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.logs import LogFacts
    from kvplan.planning.calibrate_release import LogRelease
    from kvplan.result import FitResult

PRINT_STEP = 0.005 * GiB  # half of the last printed digit of a "X.XX GB" figure
DEFAULT_TOLERANCE = 0.005


class DisagreesError(KvplanError):
    """``kvplan calibrate --check``: a checked quantity differs by more than the tolerance (exit 3)."""

    exit_code = 3


# --------------------------------------------------------------------------------------------------
# Recovering the deployment
# --------------------------------------------------------------------------------------------------

_INT_FIELDS = {
    "tp",
    "pp",
    "dp",
    "ep",
    "context_length",
    "max_running_requests",
    "page_size",
    "chunked_prefill_size",
    "max_total_tokens",
    "speculative_num_draft_tokens",
    "kv_cache_memory_bytes",
}
_FLOAT_FIELDS = {"mem_fraction_static", "gpu_memory_utilization", "swa_full_tokens_ratio"}
_BOOL_FIELDS = {
    "enable_dp_attention",
    "disable_radix_cache",
    "disable_overlap_schedule",
    "disable_cuda_graph",
    "enforce_eager",
}


def _finite(name: str, value: Any, where: str) -> Any:
    """``value`` unless it is a number kvplan cannot use (NaN, infinite, an integer over MAX_INT_DIGITS digits,
    spelled as a number or as text such as ``'inf'`` / ``'1e400'``): then an InputError naming the log field."""
    from kvplan.units import check_number

    num: Any = value
    if isinstance(value, str):
        t = value.strip().lower().lstrip("+-")
        if t in ("inf", "infinity", "nan") or (t.isdigit() and len(t) > 40):
            num = float("nan") if t == "nan" else float("inf")
        elif t[:1].isdigit() and "e" in t:
            try:
                num = float(t)
            except ValueError:
                num = value
    check_number(num, field="LOG", where=f"the log's {where or name} ({value!r:.60})")
    return value


def _coerce(name: str, value: Any, where: str = "") -> Any:
    """A printed value as the Deployment field wants it; ``None`` when it means "not set".  A number kvplan
    cannot use (``tp_size=<5,000 digits>``, ``mem_fraction_static=inf``) is an InputError naming ``where``."""
    if value is None:
        return None
    if isinstance(value, str):
        v = value.strip().strip("'\"")
        if v in ("", "None", "null", "none"):
            return None
        value = v
    try:
        if name in _BOOL_FIELDS:
            if isinstance(value, str):
                return value.lower() in ("true", "1", "yes")
            return bool(value)
        if name in _INT_FIELDS:
            if isinstance(value, bool):
                return None
            return int(float(_finite(name, value, where)))
        if name in _FLOAT_FIELDS:
            return float(_finite(name, value, where))
    except (TypeError, ValueError):
        return None
    return value


@dataclass(frozen=True)
class Input:
    """One recovered input and where it came from."""

    name: str
    value: Any
    source: str


@dataclass(frozen=True)
class Recovered:
    """The measured-mode deployment recovered from a log."""

    deployment: Any  # kvplan.deployment.Deployment
    inputs: tuple[Input, ...]
    notes: tuple[str, ...]
    model_spec: Any = None  # kvplan.hfconfig.spec.ModelSpec
    gpu_preset: Any = None  # kvplan.inputs.presets.HardwarePreset or None
    release: LogRelease | None = None  # the release planned and the releases the log allows


def resolve_log_model(name: str) -> tuple[ModelSpec, str | None]:
    """(ModelSpec, note) for a model name printed in a log.

    Tries the name as given (preset id, alias, published variant, existing path); then, for a path such as
    ``/models/DeepSeek-V3`` or ``/path/to/Qwen3-235B-A22B-FP8``, its last component as a preset name (with and
    without the variant rules of :func:`kvplan.inputs.resolve.resolve_model`).  InputError when nothing matches.
    """
    from kvplan.inputs import presets
    from kvplan.inputs.resolve import norm_name, resolve_model

    try:
        return resolve_model(name), None
    except InputError:
        pass
    base = os.path.basename(name.rstrip("/"))
    if base and base != name:
        try:
            return resolve_model(base), f"model path {name!r}: its last component {base!r} taken as the preset"
        except InputError:
            pass
    key = norm_name(base or name)
    for m in presets.all_models():
        names = [m.id] + list(m.aliases) + [v.id for v in m.variants]
        if any(norm_name(n.rpartition("/")[2]) == key for n in names):
            return resolve_model(m.id), f"model {name!r} matched preset {m.id} by its name"
    raise InputError(
        f"the log's model {name!r} is not a kvplan preset",
        field="--model",
        hint="pass --model with a preset id or a config.json path (run `kvplan models`)",
    )


def _pick(sources: list[tuple[str, dict[str, Any]]], keys: tuple[str, ...]) -> tuple[Any, str] | None:
    for label, d in sources:
        for k in keys:
            if k in d:
                return d[k], f"{label} {k}"
    return None


@dataclass
class _Recovery:
    """The Deployment keywords recovered so far, with where each came from."""

    overrides: dict[str, Any]
    kw: dict[str, Any]
    inputs: list[Input] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def set(self, name: str, value: Any, source: str) -> None:
        self.kw[name] = value
        self.inputs.append(Input(name, value, source))


def _recover_model(facts: LogFacts, rc: _Recovery, model: str | None) -> Any:
    """The model: ``--model`` (or the ``model`` override), else the log's model; its ModelSpec is returned."""
    model_name = rc.overrides.pop("model", None) or model
    src = "--model"
    if model_name is None:
        model_name, src = facts.model, "log"
    if model_name is None:
        raise InputError(
            "the log does not name the model", field="--model", hint="pass --model with a preset id or config.json path"
        )
    spec, note = resolve_log_model(model_name)
    if note:
        rc.notes.append(note)
    # spec.id keeps a published variant (its own quantization)
    rc.set("model", model_name if os.path.exists(model_name) else spec.id, src)
    return spec


def _recover_gpu(facts: LogFacts, rc: _Recovery, gpu: str | None) -> Any:
    """The GPU preset (``--gpu``, else the log's device name); vLLM without one takes the logged device total."""
    from kvplan.inputs.resolve import resolve_gpu

    gpu_name = rc.overrides.pop("gpu", None) or gpu
    preset = None
    if gpu_name is not None:
        preset = resolve_gpu(gpu_name)
        rc.inputs.append(Input("gpu", preset.id, "--gpu"))
    elif facts.gpu_name:
        try:
            preset = resolve_gpu(facts.gpu_name)
            rc.inputs.append(Input("gpu", preset.id, f"log device name {facts.gpu_name!r}"))
        except InputError:
            rc.notes.append(f"GPU {facts.gpu_name!r} printed in the log is not a preset; device total left unknown")
    if preset is not None:
        rc.kw["gpu"] = preset.id
    elif engine(facts.engine).logs_device_total and (facts.total_gpu_memory_bytes or facts.gpu_total_bytes):
        rc.set("gpu_memory", facts.total_gpu_memory_bytes or facts.gpu_total_bytes, "log total GPU memory")
    return preset


def _arg_sources(facts: LogFacts) -> list[tuple[str, dict[str, Any]]]:
    """Where the engine arguments are read from, first source first."""
    return engine(facts.engine).log_arg_sources(facts)


def _recover_engine_args(facts: LogFacts, rc: _Recovery) -> None:
    """Deployment fields from the printed arguments (the engine's ``log_arg_keys``), overrides excepted."""
    sources = _arg_sources(facts)
    eng = engine(facts.engine)
    keymap = eng.log_arg_keys
    for fname, keys in keymap.items():
        hit = None if fname in rc.overrides else _pick(sources, keys)
        val = None if hit is None else _coerce(fname, hit[0], hit[1])
        if hit is not None and val is not None:
            rc.set(fname, val, hit[1])
    if not eng.expert_parallel_switch:
        return
    hit = _pick(sources, ("enable_expert_parallel",))
    if hit is not None and _coerce("enforce_eager", hit[0]) and "ep" not in rc.overrides:
        rc.set("ep", (rc.kw.get("tp") or 1) * (rc.kw.get("dp") or 1), f"{hit[1]} (expert parallel over tp x dp)")
    util = (facts.extra or {}).get("gpu_memory_utilization")
    if "gpu_memory_utilization" not in rc.kw and util is not None:
        rc.set("gpu_memory_utilization", float(util), "log memory line")


def _apply_overrides(facts: LogFacts, rc: _Recovery) -> LogRelease:
    """``--engine-version`` / the log's release (:mod:`kvplan.planning.calibrate_release`), then the other flags."""
    from kvplan.planning.calibrate_release import choose_release

    release = choose_release(facts, rc.overrides.pop("engine_version", None))
    rc.set("engine_version", release.applied, release.source)
    for k, v in rc.overrides.items():
        if v is not None:
            rc.set(k, v, "override")
    return release


def _measured_sglang(facts: LogFacts, rc: _Recovery) -> list[str]:
    """SGLang's measured memory: free before weights P (or A + U) and the weight load P - A (or U)."""
    missing: list[str] = []
    P, A, U = facts.free_before_weights_bytes, facts.free_after_weights_bytes, facts.weight_load_bytes
    if "free_memory" not in rc.kw:
        if P is not None:
            rc.set("free_memory", P, "log 'Load weight begin. avail mem'")
        elif A is not None and U is not None:
            rc.set("free_memory", A + U, "log 'Load weight end' avail mem + mem usage")
        else:
            missing.append("free memory before weights ('Load weight begin. avail mem=')")
    if "weight_memory" not in rc.kw:
        if P is not None and A is not None:
            rc.set("weight_memory", P - A, "log begin - end avail mem")
        elif U is not None:
            rc.set("weight_memory", U, "log 'Load weight end ... mem usage'")
        else:
            missing.append("weight load ('Load weight end. avail mem=... mem usage=')")
    if rc.kw.get("mem_fraction_static") is None:
        _default_mfs(facts, rc, missing)
    return missing


def _default_mfs(facts: LogFacts, rc: _Recovery, missing: list[str]) -> None:
    """No ``mem_fraction_static`` printed: the release's default heuristic, which needs the GPU's memory (a GPU
    preset, or the nvidia-smi total the log shows); without either it is missing."""
    if "gpu" not in rc.kw and "gpu_memory" not in rc.kw and facts.gpu_total_bytes:
        rc.set("gpu_memory", facts.gpu_total_bytes, "log nvidia-smi total")
    if "gpu" in rc.kw or "gpu_memory" in rc.kw:
        rc.notes.append(
            f"mem_fraction_static is not printed: the default of SGLang {rc.kw.get('engine_version')} "
            "is used (it depends on the release and the GPU; give --mem-fraction-static or "
            "--engine-version to settle it)"
        )
        return
    missing.append("mem_fraction_static (server_args; give --mem-fraction-static, or --gpu for the release's default)")


def _measured_vllm(facts: LogFacts, rc: _Recovery) -> list[str]:
    """vLLM's measured memory: the logged available KV memory, else the budget terms of the memory profile."""
    if "kv_cache_memory_bytes" in rc.kw:
        return []
    if facts.available_kv_cache_bytes is not None:
        rc.set("kv_cache_memory_bytes", facts.available_kv_cache_bytes, "log 'Available KV cache memory'")
        return []
    terms = _vllm_budget_terms(facts)
    if terms is None:
        return ["'Available KV cache memory' (or total, model loading, peak activation and non-torch memory)"]
    rc.kw.update(terms)
    rc.inputs.extend(Input(k, v, "log memory profile") for k, v in terms.items())
    return []


# measured Deployment field -> (what it is, the LogFacts fields whose line printed it, first found)
_MEASURED = (
    ("free_memory", "free memory before loading weights", ("free_before_weights_bytes", "free_after_weights_bytes")),
    ("weight_memory", "weight load", ("free_after_weights_bytes", "weight_load_bytes")),
    ("kv_cache_memory_bytes", "available KV cache memory", ("available_kv_cache_bytes",)),
)


#: each engine's measured-mode reader of its log (a key per name of kvplan.engines.registry.ENGINES)
_MEASURED_READERS = {"sglang": _measured_sglang, "vllm": _measured_vllm}


def _check_measured(facts: LogFacts, rc: _Recovery, preset: Any) -> None:
    """The measured inputs taken from the log against what only the deployment knows: each below MAX_BYTES (a
    garbled figure the reader clamped), free memory and KV memory at most the device total (the GPU preset's
    :func:`kvplan.engines.runtime.device_total`, else the device total given or printed) + 0.01 GiB of print
    resolution.  An InputError naming the log line otherwise (kvplan.inputs.logs.plausible checks what the log
    alone shows).

    Example: a log of an H100 (``avail mem=78.81 GB``) calibrated with ``--gpu l4`` (21.92 GiB) -> "line 7
    ('... Load weight begin. avail mem=78.81 GB'): the free memory before loading weights (78.81 GiB) is more than
    the device total of NVIDIA L4 (21.92 GiB)".
    """
    from kvplan.engines.runtime import device_total
    from kvplan.units import MAX_BYTES

    total = device_total(preset)[0] if preset is not None else rc.kw.get("gpu_memory") or facts.gpu_total_bytes
    device = preset.name if preset is not None else "the device"
    for name, what, line_fields in _MEASURED:
        value = rc.kw.get(name)
        if name in rc.overrides or not isinstance(value, int):
            continue
        ref = next((facts.lines[f] for f in line_fields if f in facts.lines), "")
        at = f"{ref}: " if ref else ""
        if value >= MAX_BYTES:
            raise InputError(f"{at}the {what} is not a plausible size (a garbled figure)", field="LOG")
        if name != "weight_memory" and isinstance(total, int) and value > total + GiB // 100:
            raise InputError(
                f"{at}the {what} ({value / GiB:,.2f} GiB) is more than the device total of {device} "
                f"({total / GiB:,.2f} GiB)",
                field="LOG",
                hint="is --gpu the GPU the log was taken on?",
            )


def recover_deployment(
    facts: LogFacts,
    *,
    model: str | None = None,
    gpu: str | None = None,
    overrides: dict[str, Any] | None = None,
    mode: str = "measured",
) -> Recovered:
    """Build the Deployment a log describes.

    Precedence per field: ``overrides`` (flags the user gave) > the log's server_args / vLLM config (and
    vLLM's ``non-default args``) > the launch command's flags quoted in the log > the engine's default.
    ``mode="measured"`` adds the memory the engine measured (SGLang: free before weights F and weight load
    W = F - free after weights, or ``mem usage``; vLLM: the logged ``Available KV cache memory`` as
    ``kv_cache_memory_bytes``); ``mode="cold"`` leaves them to kvplan's models.
    Raises InputError (exit 2) when the model or, in measured mode, the measured memory is missing.
    """
    from kvplan.deployment import Deployment

    rc = _Recovery(overrides=dict(overrides or {}), kw={"engine": facts.engine})
    valid = {f.name for f in fields(Deployment)}
    bad = sorted(set(rc.overrides) - valid)
    if bad:
        raise InputError(f"unknown deployment field(s): {', '.join(bad)}", field="overrides")
    spec = _recover_model(facts, rc, model)
    preset = _recover_gpu(facts, rc, gpu)
    _recover_engine_args(facts, rc)
    release = _apply_overrides(facts, rc)
    missing: list[str] = []
    if mode == "measured":
        missing = _MEASURED_READERS[facts.engine](facts, rc)
    if missing:
        raise InputError(
            "the log lacks what a measured-mode prediction needs: " + "; ".join(missing),
            field="LOG",
            hint="paste the full start-up log, or give the value as a flag",
        )
    if mode == "measured":
        _check_measured(facts, rc, preset)
    dep = Deployment(**{k: v for k, v in rc.kw.items() if k in valid})
    return Recovered(
        deployment=dep,
        inputs=tuple(rc.inputs),
        notes=tuple(rc.notes),
        model_spec=spec,
        gpu_preset=preset,
        release=release,
    )


def _vllm_budget_terms(facts: LogFacts) -> dict[str, int] | None:
    """Deployment fields that rebuild vLLM's budget from the logged profile (None if a term is missing)."""
    total = facts.total_gpu_memory_bytes or facts.gpu_total_bytes
    weights, activation, non_torch = facts.model_loading_bytes, facts.peak_activation_bytes, facts.non_torch_bytes
    if total is None or weights is None or activation is None or non_torch is None:
        return None
    out = {
        "gpu_memory": total,
        "weight_memory": weights,
        "activation_memory": activation,
        "non_torch_memory": non_torch,
    }
    graph = (facts.extra or {}).get("estimated_cuda_graph_bytes")
    if graph is None:
        graph = facts.cuda_graph_bytes
    out["cuda_graph_memory"] = graph if graph is not None else 0
    return out


# --------------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    quantity: str
    unit: str  # "tokens" | "bytes" | "count" | "x"
    logged: float | None
    predicted: float | None
    checked: bool = True  # counts for agreement / --check
    resolution: float = 0.0  # what the printed precision explains, in the row's unit
    cause: str = ""  # likely cause when flagged
    note: str = ""

    @property
    def diff(self) -> float | None:
        if self.logged is None or self.predicted is None:
            return None
        return self.predicted - self.logged

    @property
    def rel(self) -> float | None:
        if self.diff is None or not self.logged:
            return None
        return self.diff / self.logged

    def flagged(self, tolerance: float) -> bool:
        if self.diff is None:
            return False
        return abs(self.diff) > max(tolerance * abs(self.logged or 0), self.resolution)


@dataclass
class Answer:
    """The engine rows under the rules of one stretch of releases (``releases`` = first, last) of the log's window."""

    engine_version: str
    releases: tuple[str, str]
    rows: list[Row]
    error: str = ""  # the release cannot plan this deployment (e.g. no pool layout for the family)

    def differs_from(self, other: list[Row]) -> list[Row]:
        """This answer's rows whose prediction differs from the same quantity in ``other``."""
        theirs = {r.quantity: r.predicted for r in other}
        return [r for r in self.rows if r.quantity in theirs and r.predicted != theirs[r.quantity]]


@dataclass
class Calibration:
    log: str
    engine: str
    model: str
    tolerance: float
    rows: list[Row]
    inputs: list[Input]
    notes: list[str]
    result: Any = None  # FitResult of the measured run
    warnings: list[str] = field(default_factory=list)
    engine_version: str | None = None  # the release whose rules were applied
    engine_versions_possible: tuple[str, str] | None = None  # (oldest, newest) the log is consistent with
    release_reasons: list[str] = field(default_factory=list)
    by_release: list[Answer] = field(default_factory=list)  # the answer under each rule set of the window

    @property
    def flagged(self) -> list[Row]:
        return [r for r in self.rows if r.flagged(self.tolerance)]

    @property
    def agrees(self) -> bool:
        return not any(r.checked for r in self.flagged)

    def agrees_under(self, answer: Answer) -> bool:
        return not answer.error and not any(r.checked and r.flagged(self.tolerance) for r in answer.rows)

    def to_dict(self) -> dict:
        def rd(r: Row) -> dict:
            return {
                "quantity": r.quantity,
                "unit": r.unit,
                "logged": r.logged,
                "predicted": r.predicted,
                "diff": r.diff,
                "rel": None if r.rel is None else round(r.rel, 6),
                "checked": r.checked,
                "resolution": r.resolution,
                "flagged": r.flagged(self.tolerance),
                "cause": r.cause if r.flagged(self.tolerance) else "",
                "note": r.note,
            }

        def ad(a: Answer) -> dict:
            return {
                "engine_version": a.engine_version,
                "releases": list(a.releases),
                "applied": a.engine_version == self.engine_version,
                "agrees": self.agrees_under(a),
                "error": a.error,
                "rows": [
                    {
                        "quantity": r.quantity,
                        "predicted": r.predicted,
                        "diff": r.diff,
                        "rel": None if r.rel is None else round(r.rel, 6),
                        "flagged": r.flagged(self.tolerance),
                    }
                    for r in a.rows
                ],
            }

        return {
            "log": self.log,
            "engine": self.engine,
            "model": self.model,
            "tolerance": self.tolerance,
            "agrees": self.agrees,
            "rows": [rd(r) for r in self.rows],
            "inputs": [{"name": i.name, "value": i.value, "source": i.source} for i in self.inputs],
            "notes": self.notes,
            "warnings": self.warnings,
            "engine_version": self.engine_version,
            "engine_versions_possible": list(self.engine_versions_possible or ()),
            "engine_version_reasons": self.release_reasons,
            "by_release": [ad(a) for a in self.by_release],
        }


def fit_recovered(dep: Deployment, *, warnings: tuple[str, ...] = ()) -> FitResult:
    """``kvplan.planning.plan.fit`` for a recovered deployment; a vLLM log with no known GPU is planned without one
    (only the logged memory matters in measured mode, not kvplan's default GPU).  ``warnings``: what the log reader
    noticed, said with the plan (a result is frozen once fit returns it)."""
    from kvplan.planning.plan import fit

    logged_only = engine(dep.engine).logs_device_total
    logged_only = logged_only and dep.gpu_memory is None and dep.kv_cache_memory_bytes is not None
    return fit(dep, default_gpu=not logged_only, warnings=warnings)


_fit = fit_recovered


def _token_resolution(*, cell: float, mfs: float | None) -> float:
    """Tokens the two-decimal prints of free-before (P) and free-after (A) can move: 0.005 (2 - f) GiB / cell."""
    if not cell:
        return 0.0
    f = mfs if mfs is not None else 0.0
    return math.ceil(PRINT_STEP * (2 - f) / cell) + 1


def calibrate(
    facts: LogFacts,
    *,
    log: str = "",
    model: str | None = None,
    gpu: str | None = None,
    overrides: dict[str, Any] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Calibration:
    """Recover the deployment from ``facts`` (a :class:`kvplan.inputs.logs.LogFacts`), predict it in measured mode
    and compare every logged quantity.  InputError when the log lacks what is needed (exit 2)."""
    if not (0 <= tolerance < 1):
        raise InputError(
            f"tolerance must be a fraction in [0, 1), got {tolerance}", field="--tolerance", hint="e.g. 0.005 for 0.5%"
        )
    rec = recover_deployment(facts, model=model, gpu=gpu, overrides=overrides, mode="measured")
    rows, res = _ENGINE_ROWS[facts.engine](facts, rec)
    engine_rows = list(rows)
    rows += _model_rows(facts, rec)
    if not any(r.checked and r.logged is not None for r in rows):
        raise InputError(
            "the log prints no pool size to compare (no '#tokens', 'max_total_num_tokens', 'KV size', "
            "'GPU KV cache size' or 'Available KV cache memory')",
            field="LOG",
        )
    cal = Calibration(
        log=log,
        engine=facts.engine,
        model=rec.deployment.model,
        tolerance=tolerance,
        rows=rows,
        inputs=list(rec.inputs),
        notes=list(rec.notes),
        result=res,
        warnings=list(facts.warnings) + list(res.warnings if res is not None else []),
    )
    _release_answers(facts, rec, cal, engine_rows)
    return cal


def _release_answers(facts: LogFacts, rec: Recovered, cal: Calibration, engine_rows: list[Row]) -> None:
    """The release planned, the releases the log allows, and the engine rows under each rule set of that window
    when it spans a rule change (the applied one first); a note says when the answers differ."""
    from kvplan.inputs.logs.release import ENGINE_NAMES
    from kvplan.planning.calibrate_release import rule_windows

    rel = rec.release
    assert rel is not None  # recover_deployment always chooses one
    cal.engine_version, cal.engine_versions_possible = rel.applied, rel.possible
    cal.release_reasons = list(rel.reasons)
    stretches = (
        [(rel.applied, rel.possible[0], rel.possible[1])] if rel.settled else rule_windows(facts.engine, *rel.possible)
    )
    applied = next((s for s in stretches if s[0] == rel.applied), (rel.applied, *rel.possible))
    cal.by_release = [Answer(rel.applied, (applied[1], applied[2]), engine_rows)]
    for version, first, last in stretches:
        if version == rel.applied:
            continue
        try:
            alt, _res = _ENGINE_ROWS[facts.engine](
                facts, replace(rec, deployment=replace(rec.deployment, engine_version=version))
            )
        except InputError as e:  # this release cannot plan the deployment (bad input for it, e.g. no such layout)
            cal.by_release.append(Answer(version, (first, last), [], error=e.one_line()))
            continue
        cal.by_release.append(Answer(version, (first, last), alt))
    differing = [a for a in cal.by_release[1:] if a.error or a.differs_from(engine_rows)]
    if differing:
        cal.notes.append(
            f"the log allows {ENGINE_NAMES[facts.engine]} {rel.possible[0]} to {rel.possible[1]} and the rules "
            "change inside it: "
            f"the answer under each is listed ({', '.join(a.engine_version for a in cal.by_release)}); give "
            "--engine-version to settle it"
        )


def _sglang_rows(facts: LogFacts, rec: Recovered) -> tuple[list[Row], FitResult]:
    res = _fit(rec.deployment)
    rows: list[Row] = []
    cell = res.kv_bytes_per_token
    tok_res = _token_resolution(cell=cell, mfs=res.mem_fraction_static)
    page = res.page_size or 1
    logged_cell = None
    if facts.kv_bytes and facts.kv_tokens:
        logged_cell = facts.kv_bytes / (facts.kv_tokens + page)
    cell_ok = logged_cell is None or (cell and abs(logged_cell - cell) / cell < 0.01)
    tok_cause = (
        "KV bytes per token differ (kv_cache_dtype, page size, layout or the model geometry): the log implies "
        f"{logged_cell:,.0f} B/token, kvplan {cell:,.0f}"
        if not cell_ok and logged_cell
        else "the budget differs (mem_fraction_static, a reserve this build takes such as multimodal or "
        "speculative buffers, or a --max-total-tokens cap)"
    )
    if facts.kv_tokens is not None:
        rows.append(
            Row(
                "pool tokens (KV Cache is allocated #tokens)",
                "tokens",
                facts.kv_tokens,
                res.kv_pool_tokens,
                resolution=tok_res,
                cause=tok_cause,
            )
        )
    if facts.max_total_num_tokens is not None:
        rows.append(
            Row(
                "max_total_num_tokens (scheduler)",
                "tokens",
                facts.max_total_num_tokens,
                res.kv_pool_tokens,
                resolution=tok_res,
                cause=tok_cause,
            )
        )
    kv_bytes = None
    if facts.kv_bytes is not None:
        # DSV4 prints its pools' bytes; every other family allocates one padding page beyond the budgeted tokens
        kv_bytes = res.kv_pool_bytes if res.family == Family.DSV4 else (res.kv_pool_tokens + page) * cell
        print_terms = 2 if facts.k_bytes is not None else 1  # K and V printed separately, or one KV size
        bytes_res = PRINT_STEP * print_terms + PRINT_STEP * (2 - (res.mem_fraction_static or 0))
        rows.append(
            Row(
                "KV cache bytes (K + V / KV size)",
                "bytes",
                facts.kv_bytes,
                kv_bytes,
                checked=facts.kv_tokens is None and facts.max_total_num_tokens is None,
                resolution=bytes_res,
                cause=tok_cause,
                note="(tokens + one padding page) x bytes per token",
            )
        )
    if facts.max_running_requests is not None:
        rows.append(
            Row(
                "max_running_requests",
                "count",
                facts.max_running_requests,
                res.max_running_requests,
                cause="--max-running-requests not recovered, or this build derives the cap differently "
                "(0.5.23: clamp(tokens / context x 512, 2048, 4096); "
                "older builds: tokens / context x 512)",
            )
        )
    if facts.context_len is not None:
        rows.append(
            Row(
                "context_len",
                "tokens",
                facts.context_len,
                res.context_length,
                cause="--context-length not recovered, or the preset's max_position_embeddings is not the "
                "checkpoint's (wrong model?)",
            )
        )
    if (
        facts.free_after_pool_bytes is not None
        and facts.free_after_weights_bytes is not None
        and facts.kv_bytes
        and kv_bytes is not None
    ):
        rows.append(
            Row(
                "free after pool (Memory pool end)",
                "bytes",
                facts.free_after_pool_bytes,
                facts.free_after_weights_bytes - kv_bytes,
                checked=False,
                resolution=3 * PRINT_STEP,
                cause="other allocations between weights and pool end "
                "(req_to_token pool, SWA/state pools, allocator slack)",
                note="free after weights - KV bytes; informational",
            )
        )
    return rows, res


def _vllm_rows(facts: LogFacts, rec: Recovered) -> tuple[list[Row], FitResult]:
    dep = rec.deployment
    rows: list[Row] = []
    res = None
    budget_terms = _vllm_budget_terms(facts)
    if facts.available_kv_cache_bytes is not None and budget_terms is not None:
        bdep = replace(dep, kv_cache_memory_bytes=None, **budget_terms)
        bres = _fit(bdep)
        rows.append(
            Row(
                "available KV cache memory (budget)",
                "bytes",
                facts.available_kv_cache_bytes,
                bres.kv_budget_bytes,
                resolution=6 * PRINT_STEP,
                cause="a budget term differs: version accounting (graph estimate subtracted from 0.20, "
                "'consumed' memory from 0.27) or gpu_memory_utilization",
                note="ceil(total x util) - weights - activation - non-torch - graph, from the logged terms",
            )
        )
    res = _fit(dep)
    bpb: int = max((g.get("group_bytes_per_block") or 0 for g in res.groups), default=0)
    blk_res = (PRINT_STEP / bpb + 1) if bpb else 0.0
    bs = res.block_size or 16
    cause_tok = (
        "block size, KV dtype, hybrid grouping or the version's token print rule (<0.21: blocks // groups "
        "x block; from 0.21: int(concurrency x max_model_len))"
    )
    v0 = facts.gpu_kv_cache_tokens is None and facts.num_gpu_blocks is not None
    if facts.gpu_kv_cache_tokens is not None:
        rows.append(
            Row(
                "GPU KV cache size (tokens)",
                "tokens",
                facts.gpu_kv_cache_tokens,
                res.kv_pool_tokens,
                resolution=blk_res * bs * max(1, len(res.groups)),
                cause=cause_tok,
            )
        )
    if facts.num_gpu_blocks is not None:
        rows.append(
            Row(
                "GPU blocks",
                "count",
                facts.num_gpu_blocks,
                res.num_blocks,
                checked=v0 or True,
                resolution=blk_res,
                cause=cause_tok,
            )
        )
    if facts.max_concurrency is not None:
        per_req = None
        if res.num_blocks and res.max_concurrency_per_rank:
            per_req = res.num_blocks / res.max_concurrency_per_rank
        conc_res = 0.005 + (blk_res / per_req if per_req else 0)
        if facts.max_concurrency_tokens is not None and facts.max_concurrency_tokens != res.context_length:
            rows.append(
                Row(
                    "max_model_len (concurrency line)",
                    "tokens",
                    facts.max_concurrency_tokens,
                    res.context_length,
                    cause="--max-model-len not recovered",
                )
            )
        rows.append(
            Row(
                "maximum concurrency",
                "x",
                facts.max_concurrency,
                res.max_concurrency_per_rank,
                resolution=conc_res,
                cause="blocks per request (sliding window / Mamba groups, block size) or max_model_len",
            )
        )
    est = (facts.extra or {}).get("estimated_max_model_len")
    if est is not None:
        rows.append(
            Row(
                "estimated maximum model length (fit error)",
                "tokens",
                est,
                res.max_context_length if not res.fits else res.context_length,
                resolution=bs * (blk_res + 1),
                cause="the pool or the fit check differ (null block held back)",
            )
        )
    if facts.available_kv_cache_bytes is not None and budget_terms is None:
        rows.append(
            Row(
                "available KV cache memory",
                "bytes",
                facts.available_kv_cache_bytes,
                res.kv_budget_bytes,
                checked=False,
                note="the input of this run (no full memory profile in the log)",
            )
        )
    return rows, res


_ENGINE_ROWS: dict[str, Any] = {"sglang": _sglang_rows, "vllm": _vllm_rows}


def _model_rows(facts: LogFacts, rec: Recovered) -> list[Row]:
    """Cold-model rows: runtime.py's free memory at start and weights.py's footprint vs the log (not checked)."""
    rows: list[Row] = []
    dep = rec.deployment
    spec = rec.model_spec
    tp, pp, ep = dep.tp or 1, dep.pp or 1, dep.ep or 1
    attn_dp = (dep.dp or 1) if dep.enable_dp_attention else 1
    eng = engine(facts.engine)
    free, logged_w = eng.log_free_and_weights(facts, dep)
    free_label = eng.log_free_label
    if free is not None and rec.gpu_preset is not None:
        from kvplan.engines.runtime import modelled_free_at_start

        pred, why = modelled_free_at_start(
            gpu=rec.gpu_preset, world_size=tp * pp, engine=facts.engine, engine_version=dep.engine_version
        )
        rows.append(
            Row(
                free_label,
                "bytes",
                free,
                pred,
                checked=False,
                resolution=PRINT_STEP,
                cause="runtime overhead model (CUDA context, NCCL / custom all-reduce buffers) or the device "
                "total of the preset",
                note=why,
            )
        )
    if logged_w is not None and spec is not None:
        try:
            from kvplan.weights.estimate import estimate_weight_bytes

            est = estimate_weight_bytes(
                config=spec.config,
                quantization=spec.quantization,
                checkpoint_bytes=spec.checkpoint_bytes,
                tp_size=tp,
                pp_size=pp,
                ep_size=ep,
                attn_dp_size=attn_dp if eng.dp_attention else 1,
                engine=facts.engine,
                gpu_vendor=rec.gpu_preset.vendor if rec.gpu_preset is not None else "nvidia",
            )
            rows.append(
                Row(
                    "weight load (kvplan.weights estimate)",
                    "bytes",
                    logged_w,
                    est.per_gpu_bytes,
                    checked=False,
                    resolution=2 * PRINT_STEP,
                    cause="weight estimate: quantization scheme, shared/replicated tensors, or a checkpoint "
                    "that is not the preset's",
                    note=est.method,
                )
            )
        except InputError:  # the estimate cannot size this model: no row (a kvplan bug still surfaces)
            pass
    return rows
