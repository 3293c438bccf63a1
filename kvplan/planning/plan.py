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

if TYPE_CHECKING:
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
    """kvplan's flags given in ``dep`` (set, not their default) that ``dep.engine`` never reads, by the flag
    registry's ``engines`` (:data:`kvplan.flags.BY_FIELD`): ``--max-total-tokens`` under vLLM,
    ``--gpu-memory-utilization`` under SGLang.  Example: ``Deployment(engine="vllm", max_total_tokens=100000)``
    -> ``["--max-total-tokens"]``."""
    import dataclasses

    from kvplan.flags import BY_FIELD

    out = []
    for f in dataclasses.fields(dep):
        flag = BY_FIELD.get(f.name)
        if flag is None or dep.engine is None or dep.engine in flag.engines:
            continue
        value = getattr(dep, f.name)
        default = f.default if f.default is not dataclasses.MISSING else None
        if value is not None and value != default:
            out.append(flag.flag)
    return out


def fit(
    dep: Deployment,
    *,
    default_gpu: bool = True,
    warnings: Sequence[str] = (),
    assumptions: Sequence[str] = (),
    refusals: Sequence[str] = (),
) -> FitResult:
    """Plan one deployment: a :class:`kvplan.result.FitResult` (its verdict keys: :mod:`kvplan.planning.verdict`).
    ``default_gpu=False``: no GPU named means none (see :func:`gpu_for`), not kvplan's default GPU.  ``warnings``:
    what the caller's reading of the input noticed (a launch command's dropped flags), said with the plan;
    ``assumptions``: what it assumed (the release whose flags read a launch command); ``refusals``: what the
    engine's argument parser refuses in it (:attr:`kvplan.inputs.launch.LaunchParse.refusals`): each is a reason
    the engine does not start, ahead of every other.

    The result is complete when this returns: the planner and the verdict are its only writers, and nothing
    mutates it afterwards (a caller with more to say passes it here)."""
    ignored = ignored_flags(dep)
    dep = dep.with_defaults()
    validate(dep)
    from kvplan.inputs.resolve import resolve_model
    from kvplan.planning.verdict import apply
    from kvplan.planning.workload import request_size

    request_size(dep)  # --output-len without --input-len: an input error before any arithmetic
    model = resolve_model(dep.model or DEFAULT_MODEL)
    gpu, gpu_note = gpu_for(dep, default_gpu=default_gpu)
    one = replace(dep, target_requests=1)
    from kvplan.engines.registry import engine

    res = engine(dep.engine).plan(one, model, gpu)
    if gpu_note:
        res.assumptions.insert(0, gpu_note)
    # what reading the config noticed (an implausible safetensors total_size, unknown dtypes / layer types / quant
    # methods: kvplan.hfconfig.checks) is said with every plan of that model
    res.warnings.extend(w for w in getattr(model, "warnings", ()) if w not in res.warnings)
    res.warnings.extend(warnings)
    if ignored:
        name = {"sglang": "SGLang", "vllm": "vLLM"}.get(str(dep.engine), str(dep.engine))
        res.warnings.append(f"{name} does not read {', '.join(ignored)}: ignored")
    res.assumptions.extend(assumptions)
    return apply(res, dep=dep, model=model, gpu=gpu, parser_refusals=tuple(refusals))
