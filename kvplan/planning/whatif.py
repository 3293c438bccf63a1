"""``kvplan fit --from-log LOG [flags]``: start from a real startup (measured mode) and change the deployment.

``whatif(facts, overrides)`` returns the baseline (the log's deployment in measured mode, see
:func:`kvplan.planning.calibrate.recover_deployment`) and the what-if (the same deployment with ``overrides`` applied,
keys = :class:`kvplan.deployment.Deployment` fields) and notes saying what was kept and what was re-estimated:

* ``mem_fraction_static``, ``gpu_memory_utilization``, context length, KV dtype, request cap, page size,
  chunked prefill, ...: the measured free memory and weight load are kept (they do not depend on these).
  vLLM: the logged "Available KV cache memory" is moved by the change of the requested memory,
  ``ceil(total x u') - ceil(total x u)`` (vllm/v1/worker/utils.py ``request_memory``, v0.33.0); a change of
  ``max_num_seqs`` / ``max_num_batched_tokens`` changes the profiled activation peak, which is *not*
  re-estimated (said in the notes).
* TP / PP / EP / DP attention: the weight load is scaled by the sharding ratio kvplan.weights.estimate gives for the
  old and new parallelism, ``W' = W_logged x est(new) / est(old)``; the free memory at start moves by the
  change of the modelled runtime overhead (kvplan.engines.runtime), ``F' = F_logged + overhead(old) - overhead(new)``.
* GPU: the free memory at start is re-modelled from scratch for the new GPU (cold, kvplan.engines.runtime), the
  weight load is kept (scaled as above if the parallelism changes too).

Both sides use the rules of the release the log came from (:mod:`kvplan.planning.calibrate_release`); an
``engine_version`` override (``--engine-version``) sets that release for both and is not a change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kvplan.errors import InputError
from kvplan.units import fmt_gib

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.logs import LogFacts
    from kvplan.inputs.presets import HardwarePreset
    from kvplan.planning.calibrate import Recovered
    from kvplan.result import FitResult

_PARALLEL = ("tp", "pp", "ep", "dp", "enable_dp_attention")


@dataclass
class WhatIf:
    baseline: FitResult  # measured mode, from the log
    whatif: FitResult  # with the overrides
    notes: list[str] = field(default_factory=list)
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (old, new)
    engine_version: str | None = None  # the release whose rules both sides use
    engine_versions_possible: tuple[str, str] | None = None  # (oldest, newest) the log is consistent with
    release_reasons: list[str] = field(default_factory=list)


def _weight_estimate(spec: ModelSpec, dep: Deployment, engine: str, gpu: HardwarePreset | None = None) -> int:
    """kvplan's per-GPU weight estimate of ``dep`` (the ratio the what-if rescales the logged load by); ``gpu``: the
    GPU it runs on, whose vendor picks vendor-specific loading (SGLang's ROCm WNA16 MoE buffers)."""
    from kvplan.weights.estimate import estimate_weight_bytes

    tp, pp, ep = dep.tp or 1, dep.pp or 1, dep.ep or 1
    from kvplan.engines.registry import engine as engine_of

    attn_dp = (dep.dp or 1) if (dep.enable_dp_attention and engine_of(engine).dp_attention) else 1
    return estimate_weight_bytes(
        config=spec.config,
        quantization=spec.quantization,
        checkpoint_bytes=spec.checkpoint_bytes,
        tp_size=tp,
        pp_size=pp,
        ep_size=ep,
        attn_dp_size=attn_dp,
        engine=engine,
        gpu_vendor=gpu.vendor if gpu is not None else "nvidia",
    ).per_gpu_bytes


def _overhead(dep: Deployment, gpu: HardwarePreset | None, engine: str) -> int:
    from kvplan.engines.runtime import runtime_overhead_bytes

    world = (dep.tp or 1) * (dep.pp or 1)
    return runtime_overhead_bytes(world_size=world, interconnect=gpu.interconnect if gpu is not None else "pcie")


def whatif(
    log_facts: LogFacts, overrides: dict[str, Any], *, model: str | None = None, gpu: str | None = None
) -> WhatIf:
    """Baseline (measured from the log) and what-if FitResults; ``overrides`` keys are Deployment fields
    (``None`` values are ignored).  ``model`` / ``gpu`` name the log's model / GPU when it does not."""
    from kvplan.deployment import Deployment
    from kvplan.inputs.resolve import resolve_gpu
    from kvplan.planning.calibrate import fit_recovered, recover_deployment

    over = {k: v for k, v in (overrides or {}).items() if v is not None}
    bad = sorted(set(over) - set(Deployment.__dataclass_fields__))
    if bad:
        raise InputError(f"unknown deployment field(s): {', '.join(bad)}", field="--from-log")
    if "engine" in over and over["engine"] != log_facts.engine:
        raise InputError(
            f"the log is a {log_facts.engine} startup; --engine {over['engine']} cannot reuse its measurements",
            field="--engine",
            hint="drop --engine, or plan the other engine cold",
        )
    over.pop("engine", None)
    if "model" in over:
        model = model or over["model"]
    # the release is a fact of the log's deployment, not a change: --engine-version settles it for both sides
    version = over.pop("engine_version", None)
    rec = recover_deployment(
        log_facts, model=model, gpu=gpu, mode="measured", overrides={"engine_version": version} if version else None
    )
    base_dep = rec.deployment
    engine = base_dep.engine
    from_log = ", ".join(i.name for i in rec.inputs if i.source.startswith("log"))
    notes: list[str] = [f"baseline: the log's deployment in measured mode ({from_log} from the log)"]
    notes += list(rec.notes)
    from kvplan.inputs.logs.release import ENGINE_NAMES

    release = rec.release
    assert release is not None  # recover_deployment always chooses one
    if not release.settled:
        notes.append(
            f"the log allows {ENGINE_NAMES[engine]} {release.possible[0]} to {release.possible[1]}: both "
            f"sides use the "
            f"rules of {release.applied} (give --engine-version to choose another)"
        )
    # the log's implausible-but-possible figures (kvplan.inputs.logs.plausible) are said with both plans
    implausible = tuple(log_facts.implausible)
    baseline = fit_recovered(base_dep, warnings=implausible)

    changed = {k: (getattr(base_dep, k), v) for k, v in over.items() if getattr(base_dep, k) != v}
    if "model" in changed:
        raise InputError(
            "--model changes the model: the log's measurements do not apply to another model",
            field="--model",
            hint="plan the other model without --from-log",
        )
    new = replace(base_dep, **{k: v for k, v in over.items() if k != "model"})
    ch = _Change(
        facts=log_facts,
        rec=rec,
        base=base_dep,
        new=new,
        changed=changed,
        par_changed=any(k in changed for k in _PARALLEL),
        gpu_changed="gpu" in changed or "gpu_memory" in changed,
        old_gpu=rec.gpu_preset,
        new_gpu=resolve_gpu(new.gpu) if new.gpu else None,
        notes=notes,
    )
    result = fit_recovered(_ENGINE_WHATIF[engine](ch), warnings=implausible)
    return WhatIf(
        baseline=baseline,
        whatif=result,
        notes=notes,
        changed=changed,
        engine_version=release.applied,
        engine_versions_possible=release.possible,
        release_reasons=list(release.reasons),
    )


@dataclass
class _Change:
    """A what-if under way: the log's facts and baseline, the changed deployment, and what the change touches."""

    facts: LogFacts
    rec: Recovered
    base: Deployment
    new: Deployment
    changed: dict[str, tuple[Any, Any]]
    par_changed: bool
    gpu_changed: bool
    old_gpu: HardwarePreset | None
    new_gpu: HardwarePreset | None
    notes: list[str]


def _sglang_whatif(ch: _Change) -> Deployment:
    """SGLang: rescale the logged weight load by kvplan.weights' ratio, move the logged free memory by the runtime
    overhead's change (or re-model it for a new GPU); see the module docstring."""
    base_dep, new, notes, engine = ch.base, ch.new, ch.notes, "sglang"
    par_changed, gpu_changed, old_gpu = ch.par_changed, ch.gpu_changed, ch.old_gpu
    # measured mode: recover_deployment set both from the log (or refused it)
    assert base_dep.weight_memory is not None and base_dep.free_memory is not None
    if par_changed:
        try:
            w_old = _weight_estimate(ch.rec.model_spec, base_dep, engine, old_gpu)
            w_new = _weight_estimate(ch.rec.model_spec, new, engine, ch.new_gpu or old_gpu)
        except InputError as e:  # a kvplan bug in the estimate is not bad input: it reaches the internal-error path
            raise InputError(
                f"cannot re-estimate the weights for the new parallelism: {e}", field="--from-log"
            ) from None
        w = round(base_dep.weight_memory * w_new / w_old) if w_old else w_new
        new = replace(new, weight_memory=w)
        notes.append(
            f"weights re-estimated: logged {fmt_gib(base_dep.weight_memory)} x kvplan.weights ratio "
            f"{fmt_gib(w_new)} / {fmt_gib(w_old)} (new / old parallelism) = {fmt_gib(w)} per GPU"
        )
    if gpu_changed:
        new = replace(new, free_memory=None, weight_memory=new.weight_memory)
        notes.append(
            "free memory at start re-modelled for the new GPU (device total minus kvplan.runtime's "
            "overhead); the weight load is kept from the log" + (" (scaled)" if par_changed else "")
        )
    elif par_changed:
        d_old, d_new = _overhead(base_dep, old_gpu, engine), _overhead(new, old_gpu, engine)
        free = base_dep.free_memory + d_old - d_new
        new = replace(new, free_memory=free)
        notes.append(
            f"free memory at start re-modelled: logged {fmt_gib(base_dep.free_memory)} + runtime overhead "
            f"{fmt_gib(d_old)} (old) - {fmt_gib(d_new)} (new) = {fmt_gib(free)}"
            + ("" if old_gpu else " (GPU unknown: PCIe communicators assumed; give --gpu)")
        )
    if not par_changed and not gpu_changed:
        notes.append(
            f"measured free memory ({fmt_gib(base_dep.free_memory)}) and weight load "
            f"({fmt_gib(base_dep.weight_memory)}) kept from the log"
        )
    if gpu_changed and new.free_memory is None and new.gpu is None and new.gpu_memory is None:
        raise InputError("a new GPU needs --gpu or --gpu-memory", field="--gpu")
    return new


def _vllm_whatif(ch: _Change) -> Deployment:
    """vLLM: move the measured available KV memory by what the change moves (see the module docstring)."""
    facts, rec, base_dep, new, changed, notes = ch.facts, ch.rec, ch.base, ch.new, ch.changed, ch.notes
    par_changed, gpu_changed, old_gpu = ch.par_changed, ch.gpu_changed, ch.old_gpu
    from kvplan.engines.vllm.planner import version_rules, vllm_requested_bytes

    rules = version_rules(base_dep.engine_version)
    total = facts.total_gpu_memory_bytes or facts.gpu_total_bytes
    if total is None and old_gpu is not None:
        from kvplan.engines.runtime import device_total

        total = device_total(old_gpu)[0]
    if base_dep.kv_cache_memory_bytes is None:  # baseline rebuilt from the full memory profile: just re-plan
        if par_changed:
            assert base_dep.weight_memory is not None  # the profile's weight term (_vllm_budget_terms)
            w_old = _weight_estimate(rec.model_spec, base_dep, "vllm")
            w_new = _weight_estimate(rec.model_spec, new, "vllm")
            new = replace(new, weight_memory=round(base_dep.weight_memory * w_new / w_old))
            notes.append(f"weights re-estimated by the kvplan.weights ratio {fmt_gib(w_new)} / {fmt_gib(w_old)}")
        if gpu_changed:
            new = replace(new, gpu_memory=None)
            notes.append("device total of the new GPU from its preset")
        notes.append("budget terms (activation, non-torch, CUDA graphs) kept from the log")
        return new
    avail = base_dep.kv_cache_memory_bytes
    if par_changed or gpu_changed:
        # re-plan the budget: logged weights scaled, other terms kept where the GPU is the same
        if total is None and not gpu_changed:
            raise InputError(
                "the device total is needed to re-plan vLLM's budget for another parallelism",
                field="--gpu",
                hint="give --gpu (the log's GPU)",
            )
        u_old = base_dep.gpu_memory_utilization or rules.default_utilization
        w_log = facts.model_loading_bytes
        if w_log is None:
            raise InputError(
                "the log does not print the weight load ('Model loading took'), which a change of "
                "parallelism or GPU must rescale",
                field="--from-log",
            )
        w_old = _weight_estimate(rec.model_spec, base_dep, "vllm")
        w_new = _weight_estimate(rec.model_spec, new, "vllm") if par_changed else w_old
        w = round(w_log * w_new / w_old)
        other = (
            vllm_requested_bytes(device_bytes=total, gpu_memory_utilization=u_old) - w_log - avail if total else None
        )
        new = replace(new, kv_cache_memory_bytes=None, weight_memory=w)
        if other is not None and not gpu_changed:
            # activation + non-torch + graph of the log, kept as one term
            new = replace(
                new, gpu_memory=total, activation_memory=max(other, 0), non_torch_memory=0, cuda_graph_memory=0
            )
            notes.append(
                f"activation + non-torch + CUDA-graph terms kept from the log as one term "
                f"({fmt_gib(max(other, 0))} = requested - weights - available)"
            )
        else:
            new = replace(new, gpu_memory=None)
            notes.append("new GPU: activation, non-torch and CUDA-graph terms estimated (cold)")
        notes.append(
            f"weights: logged {fmt_gib(w_log)} x kvplan.weights ratio {fmt_gib(w_new)} / {fmt_gib(w_old)} "
            f"= {fmt_gib(w)} per GPU"
        )
        return new
    if "gpu_memory_utilization" in changed:
        if total is None:
            raise InputError(
                "changing --gpu-memory-utilization needs the device total, which the log does not print",
                field="--gpu",
                hint="give --gpu (the log's GPU)",
            )
        u_old = changed["gpu_memory_utilization"][0] or rules.default_utilization
        u_new = changed["gpu_memory_utilization"][1]
        delta = vllm_requested_bytes(device_bytes=total, gpu_memory_utilization=u_new) - vllm_requested_bytes(
            device_bytes=total, gpu_memory_utilization=u_old
        )
        avail = avail + delta
        new = replace(new, kv_cache_memory_bytes=avail)
        notes.append(
            f"available KV memory moved by the requested memory: ceil({fmt_gib(total)} x {u_new}) - "
            f"ceil({fmt_gib(total)} x {u_old}) = {fmt_gib(delta)}"
        )
    else:
        notes.append(f"measured available KV memory ({fmt_gib(avail)}) kept from the log")
    if "max_running_requests" in changed or "chunked_prefill_size" in changed:
        notes.append(
            "max_num_seqs / max_num_batched_tokens change vLLM's profiled activation peak; "
            "it is not re-estimated here (the available KV memory is kept)"
        )
    return new


# engine -> how a what-if moves its measured baseline
_ENGINE_WHATIF: dict[str, Callable[[_Change], Deployment]] = {"sglang": _sglang_whatif, "vllm": _vllm_whatif}


# --------------------------------------------------------------------------------------------------
# The side-by-side rows (kvplan.views.whatif renders them)
# --------------------------------------------------------------------------------------------------

_SIDE_BY_SIDE = (
    ("mode", "mode", None),
    ("gpu", "gpu", None),
    ("tp / pp / dp / ep", None, lambda r: f"{r.tp} / {r.pp} / {r.dp} / {r.ep}"),
    ("kv_cache_dtype", "kv_cache_dtype", None),
    ("mem_fraction_static", "mem_fraction_static", None),
    ("gpu_memory_utilization", "gpu_memory_utilization", None),
    ("free at start", "free_bytes", "gib"),
    ("weights per GPU", "weight_bytes", "gib"),
    ("KV budget", "kv_budget_bytes", "gib"),
    ("KV bytes per token", "kv_bytes_per_token", None),
    ("pool tokens", "kv_pool_tokens", None),
    ("max_running_requests", "max_running_requests", None),
    ("context_length", "context_length", None),
    ("max_context_length", "max_context_length", None),
    ("max_concurrency", "max_concurrency", None),
    ("fits", "fits", None),
)


def _cell(r: FitResult, attr: str | None, how: Any) -> Any:
    if callable(how):
        return how(r)
    assert attr is not None  # a row without a FitResult field has a function
    v = getattr(r, attr)
    if how == "gib" and v is not None:
        return round(v / 2**30, 3)
    return v


def side_by_side(w: WhatIf) -> list[dict]:
    """Rows ``{"quantity", "baseline", "whatif"}`` shared by the three renderers."""
    return [
        {
            "quantity": q + (" (GiB)" if how == "gib" else ""),
            "baseline": _cell(w.baseline, a, how),
            "whatif": _cell(w.whatif, a, how),
        }
        for q, a, how in _SIDE_BY_SIDE
    ]
