"""The library entry point: ``fit(Deployment) -> FitResult``.  The CLI only builds a Deployment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.deployment import DEFAULT_GPU, DEFAULT_MODEL, Deployment, validate

if TYPE_CHECKING:
    from kvplan.result import FitResult


def fit(dep: Deployment) -> FitResult:
    """Plan one deployment and return a :class:`kvplan.result.FitResult`."""
    dep = dep.with_defaults()
    validate(dep)
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

    model = resolve_model(dep.model or DEFAULT_MODEL)
    gpu = None
    if dep.gpu is not None:
        gpu = resolve_gpu(dep.gpu)
    elif dep.gpu_memory is None and dep.free_memory is None:
        gpu = resolve_gpu(DEFAULT_GPU)
    if dep.engine == "vllm":
        from kvplan.engines.vllm.adapter import plan as plan_vllm
        return plan_vllm(dep, model, gpu)
    from kvplan.engines.sglang.planner import plan_sglang
    return plan_sglang(dep, model, gpu)
