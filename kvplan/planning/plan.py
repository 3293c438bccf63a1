"""The library entry point: ``fit(Deployment) -> FitResult``.  The CLI only builds a Deployment.

The engine planners (:mod:`kvplan.engines.sglang.planner`, :mod:`kvplan.engines.vllm.adapter`) price the deployment
with a target of one request, so the ``fits`` they return says whether the engine starts; the verdict by what the
engine does, the user's target and the workload are then set here (:func:`kvplan.planning.verdict.apply`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kvplan.deployment import DEFAULT_GPU, DEFAULT_MODEL, Deployment, validate

GIVEN, ENGINE_DEFAULT = "given", "engine default"  # the words of kvplan.planning.verdict's cap_source

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset
    from kvplan.result import FitResult


def gpu_for(dep: Deployment, *, default_gpu: bool = True) -> tuple[HardwarePreset | None, str | None]:
    """(the GPU preset, the assumption that says where it came from when the user named none).  Without
    ``default_gpu`` an unnamed GPU stays unknown (measured mode, where only the logged memory matters)."""
    from kvplan.inputs.resolve import resolve_gpu

    if dep.gpu is not None:
        return resolve_gpu(dep.gpu), None
    if default_gpu and dep.gpu_memory is None and dep.free_memory is None:
        gpu = resolve_gpu(DEFAULT_GPU)
        return gpu, f"GPU {gpu.name}: kvplan's default GPU (preset {gpu.id}), no --gpu given"
    return None, None


def ignored_flags(dep: Deployment) -> list[str]:
    """kvplan's flags given in ``dep`` (set, not their default) that ``dep.engine``'s plan never reads, by the flag
    registry (:data:`kvplan.flags.BY_FIELD`): an engine outside the flag's ``engines`` (``--max-total-tokens``
    under vLLM, ``--gpu-memory-utilization`` under SGLang), or one of its ``unplanned`` (the speculative flags under
    vLLM: only the speed model reads them).  In registry order, by the names kvplan's messages use.  Example:
    ``Deployment(engine="vllm", max_total_tokens=100000)`` -> ``["--max-total-tokens"]``."""
    return [f for f, _ in _ignored(dep)]


def _ignored(dep: Deployment) -> list[tuple[str, bool]]:
    """(flag, the engine reads it elsewhere: ``unplanned``) of :func:`ignored_flags`."""
    import dataclasses

    from kvplan.flags import BY_FIELD

    out = []
    for f in dataclasses.fields(dep):
        flag = BY_FIELD.get(f.name)
        if flag is None or dep.engine is None:
            continue
        unplanned = dep.engine in flag.unplanned
        if dep.engine in flag.engines and not unplanned:
            continue
        value = getattr(dep, f.name)
        default = f.default if f.default is not dataclasses.MISSING else None
        if value is not None and value != default:
            out.append((flag.flag, unplanned))
    return out


def ignored_text(engine: str, ignored: Sequence[tuple[str, bool]]) -> list[str]:
    """The warning lines of :func:`ignored_flags`: one for the flags the engine does not read, one for those its
    memory plan does not model.  Example: ``ignored_text("vllm", [("--max-total-tokens", False)])`` ->
    ``["vLLM does not read --max-total-tokens: ignored"]``."""
    from kvplan.engines.registry import engine as engine_of

    name = engine_of(engine).label
    unread = [f for f, elsewhere in ignored if not elsewhere]
    unmodelled = [f for f, elsewhere in ignored if elsewhere]
    out = [f"{name} does not read {', '.join(unread)}: ignored"] if unread else []
    if unmodelled:
        out.append(
            f"{', '.join(unmodelled)}: not in kvplan's {name} memory plan (only the speed model reads them): ignored"
        )
    return out


#: the tensor-parallel sizes the weights-alone advice tries (solve's default ``max_gpus`` is the largest)
ADVICE_TP = (2, 4, 8, 16, 32, 64)


def knob_source(given: Deployment, effective: Deployment) -> tuple[str, str]:
    """(the engine's memory knob, where its value came from): ``given`` (by the user, a launch command, a log),
    ``default deployment`` (kvplan's default deployment, no --model given) or ``engine default`` (the engine's own
    default or heuristic, which the assumptions explain).  Example: ``Deployment(model="Qwen/Qwen3-32B",
    engine="vllm")`` -> ``("gpu_memory_utilization", "engine default")``."""
    from kvplan.engines.registry import engine

    knob = engine(effective.engine).memory_fraction_field
    if getattr(given, knob, None) is not None:
        return knob, GIVEN
    if getattr(effective, knob, None) is not None:
        return knob, "default deployment"
    return knob, ENGINE_DEFAULT


def resolved_from(requested: str, model: ModelSpec) -> str | None:
    """The preset whose geometry planned ``requested`` when it is not that id itself (an alias, a published variant,
    a quantized build or an instruct / base stand-in), else None.  Example: ``qwen3-32b`` -> ``Qwen/Qwen3-32B``;
    ``Qwen/Qwen3-32B-AWQ`` -> ``Qwen/Qwen3-32B``; ``Qwen/Qwen3-32B`` -> None; a config.json or a Hub read -> None."""
    from kvplan.inputs.resolve import norm_name

    preset = getattr(model, "preset_id", None)
    if not preset or norm_name(requested) == norm_name(preset):
        return None
    return str(preset)


def weights_advice(dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None, res: FitResult) -> list[str]:
    """What makes a deployment whose weights alone do not fit possible: the fewest GPUs, at a larger tensor
    parallel size (:data:`ADVICE_TP`, the powers of two solve's ``gpus`` question tries), at which the weights per
    GPU fit in the free memory, by the engine's own weight sharding (one plan per size tried, only in this case).
    Example: Llama-3.1-405B on 2x L4 -> ``["needs at least 64 GPUs at TP 64 for the weights alone"]``.  Empty when
    the weights fit, when they were measured (``--weight-memory``), or when no GPU is known."""
    from kvplan.engines.registry import engine
    from kvplan.errors import InputError

    if res.weight_bytes < res.free_bytes or dep.weight_memory is not None or gpu is None:
        return []
    tp = dep.tp or 1
    for n in (t for t in ADVICE_TP if t > tp):
        cand = replace(dep, tp=n, ep=n if dep.ep == tp and (dep.ep or 1) > 1 else dep.ep, num_gpus=None)
        try:
            validate(cand)
            r = engine(dep.engine).plan(cand, model, gpu)
        except InputError:
            continue
        if r.weight_bytes < r.free_bytes:
            at = f"TP {n}" + (f" PP {r.pp}" if r.pp > 1 else "") + (f" DP {r.dp}" if r.dp > 1 else "")
            return [f"needs at least {r.num_gpus:,} GPUs at {at} for the weights alone"]
    return [
        f"the weights alone do not fit at TP {ADVICE_TP[-1]} on {res.gpu}: a GPU with more memory, or quantized weights"
    ]


def tp_advice(dep: Deployment, res: FitResult) -> list[str]:
    """What makes a deployment that misses its target while its weights fit meet it: the smallest larger tensor
    parallel size (:data:`ADVICE_TP`) at which ``fit`` meets the same target (one plan per size tried, only in this
    case).  Example: Qwen3-32B on one H100 under SGLang -> ``["meets the target at TP 2: 2 GPUs, 1 request of
    40,960 tokens at once: room for 6"]``.  Empty when the target is met, when the weights do not fit (see
    :func:`weights_advice`) or were measured, or when no size up to 64 meets it."""
    from kvplan.errors import InputError

    if res.meets_target or res.weight_bytes >= res.free_bytes or dep.weight_memory is not None:
        return []
    tp = dep.tp or 1
    for n in (t for t in ADVICE_TP if t > tp):
        cand = replace(dep, tp=n, ep=n if dep.ep == tp and (dep.ep or 1) > 1 else dep.ep, num_gpus=None)
        try:
            r = fit(cand)
        except InputError:
            continue
        if r.meets_target:
            return [f"meets the target at TP {n}: {r.num_gpus:,} GPUs, {r.target_reason}"]
    return []


def _refused(dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None, exc: Exception) -> FitResult:
    """The result of a deployment the engine's planner refuses to start (an engine refusal, not the user's typo):
    every count 0, ``starts`` and ``fits`` false, the refusal as the verdict and its fix as advice."""
    from kvplan.engines.registry import engine
    from kvplan.engines.runtime import device_total
    from kvplan.errors import InputError
    from kvplan.result import FitResult

    device = device_total(gpu)[0] if gpu is not None else int(dep.gpu_memory or 0)
    tp, pp, dp = dep.tp or 1, dep.pp or 1, dep.dp or 1
    hint = getattr(exc, "hint", None)
    try:
        context = int(dep.context_length or model.context_length)
    except (InputError, TypeError, ValueError):  # a config without a context: the refusal is the answer all the same
        context = 0
    return FitResult(
        engine=str(dep.engine),
        engine_version=str(dep.engine_version or engine(dep.engine).newest),
        model=model.id,
        gpu=gpu.name if gpu is not None else "GPU",
        num_gpus=dep.num_gpus or tp * pp * (1 if dep.enable_dp_attention else dp),
        tp=tp,
        pp=pp,
        dp=dp,
        ep=dep.ep or 1,
        dp_attention=bool(dep.enable_dp_attention),
        kv_cache_dtype=str(dep.kv_cache_dtype or "auto"),
        kv_bytes_per_token=0,
        kv_budget_bytes=0,
        kv_pool_tokens=0,
        max_running_requests=0,
        max_concurrency=0,
        max_context_length=0,
        context_length=context,
        fits=False,
        device_bytes=device,
        free_bytes=device,
        weight_bytes=0,
        warnings=[],
        assumptions=[],
        family=str(getattr(getattr(model, "family", ""), "value", "") or ""),
        advice=[str(hint)] if hint else [],
    )


def _band(res: FitResult) -> None:
    """A cold answer's pool band (kvplan.planning.band: docs/accuracy.md's p90 cold error for the engine)."""
    from kvplan.planning.band import cold_band_percent, kv_pool_tokens_range

    pct = cold_band_percent(engine=str(res.engine), mode=str(res.mode))
    rng = kv_pool_tokens_range(tokens=int(res.kv_pool_tokens), percent=pct) if res.kv_pool_tokens else None
    res.kv_pool_band_percent = pct if rng is not None else None
    res.kv_pool_tokens_range = list(rng) if rng is not None else None


def fit(
    dep: Deployment,
    *,
    default_gpu: bool = True,
    warnings: Sequence[str] = (),
    assumptions: Sequence[str] = (),
    refusals: Sequence[str] = (),
    advise: bool = False,
    advice: Sequence[str] = (),
    raise_refusals: bool = False,
) -> FitResult:
    """Plan one deployment: a :class:`kvplan.result.FitResult` (its verdict keys: :mod:`kvplan.planning.verdict`).
    ``default_gpu=False``: no GPU named means none (see :func:`gpu_for`), not kvplan's default GPU.  ``warnings``:
    what the caller's reading of the input noticed (a launch command's dropped flags), said with the plan;
    ``assumptions``: what it assumed (the release whose flags read a launch command); ``refusals``: what the
    engine's argument parser refuses in it (:attr:`kvplan.inputs.launch.LaunchParse.refusals`): each is a reason
    the engine does not start, ahead of every other.  ``advise``: when it does not fit, try larger tensor-parallel
    sizes for ``advice`` (:func:`weights_advice` when the weights alone do not fit, :func:`tp_advice` when they do:
    a few more plans, so the CLI asks for it and the sweep's per-point fits do not).  ``advice``: what the caller
    found would make it possible (the CLI asks kvplan solve), said with the plan after fit's own.  An engine refusal
    raised while planning (:class:`kvplan.errors.EngineRefusal`, an InputError whose ``engine_refusal`` is true:
    the engine stops at start-up, e.g. no memory left after SGLang's Mamba state pool) is a verdict
    (:func:`_refused`), never exit 2; ``raise_refusals=True`` raises it instead (the sweep, whose rows carry a
    refused point's one-line error).

    The result is complete when this returns: the planner and the verdict are its only writers, and nothing
    mutates it afterwards (a caller with more to say passes it here)."""
    ignored = _ignored(dep)
    given = dep
    dep = dep.with_defaults()
    validate(dep)
    from kvplan.inputs.resolve import resolve_model, with_quantization
    from kvplan.planning.verdict import apply
    from kvplan.planning.workload import request_size

    request_size(dep)  # --output-len without --input-len: an input error before any arithmetic
    model, quant_note = with_quantization(resolve_model(dep.model or DEFAULT_MODEL), dep.quantization)
    gpu, gpu_note = gpu_for(dep, default_gpu=default_gpu)
    one = replace(dep, target_requests=1)
    from kvplan.engines.registry import engine
    from kvplan.errors import InputError

    refused: str | None = None
    try:
        res = engine(dep.engine).plan(one, model, gpu)
    except InputError as exc:
        if raise_refusals or not getattr(exc, "engine_refusal", False):
            raise
        res, refused = _refused(dep, model, gpu, exc), str(exc)
    res.ignored_flags = [f for f, _ in ignored]
    res.memory_knob, res.memory_knob_source = knob_source(given, dep)
    res.resolved_from = resolved_from(dep.model or DEFAULT_MODEL, model)
    _band(res)
    if gpu_note:
        res.assumptions.insert(0, gpu_note)
    if quant_note:
        res.assumptions.insert(0, quant_note)
    # what reading the config noticed (an implausible safetensors total_size, unknown dtypes / layer types / quant
    # methods: kvplan.hfconfig.checks) is said with every plan of that model
    res.warnings.extend(w for w in getattr(model, "warnings", ()) if w not in res.warnings)
    res.warnings.extend(warnings)
    # one line for the ignored flags the engine's own planner has not already named (vLLM: "--mem-fraction-static is
    # an SGLang flag; vLLM uses --gpu-memory-utilization"); the JSON lists them all
    unsaid = [
        (f, elsewhere) for f, elsewhere in ignored if not any(f in w.split() or f + ";" in w for w in res.warnings)
    ]
    res.warnings.extend(ignored_text(str(dep.engine), unsaid))
    res.assumptions.extend(assumptions)
    if advise and refused is None:
        res.advice.extend(a for a in weights_advice(dep, model, gpu, res) if a not in res.advice)
    res.advice.extend(a for a in advice if a not in res.advice)
    res = apply(res, dep=dep, model=model, gpu=gpu, parser_refusals=tuple(refusals), planner_refusal=refused)
    if advise and refused is None and not refusals and not res.fits:
        res.advice.extend(a for a in tp_advice(dep, res) if a not in res.advice)
    return res.freeze()
