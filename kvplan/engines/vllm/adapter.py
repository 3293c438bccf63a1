"""vLLM through ``kvplan fit``: a Deployment in, the one :class:`~kvplan.result.FitResult` out.

The arithmetic is in :mod:`kvplan.engines.vllm.planner` (``plan_vllm``); this module maps the CLI contract
onto it.  Contract meanings for vLLM: ``kv_pool_tokens`` = the printed "GPU KV cache size: N tokens"
(as that version prints it), ``max_concurrency`` = "Maximum concurrency for L tokens per request"
(x dp engines), ``kv_budget_bytes`` = "Available KV cache memory", ``max_running_requests`` =
max_num_seqs, ``fits`` = vLLM starts (one max_model_len request fits); the target is judged in kvplan.planning.verdict.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kvplan.engines.backends import AttentionBackend
from kvplan.errors import InputError
from kvplan.result import FitResult, MemorySlice, Pool
from kvplan.units import fmt_gib

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.engines.vllm.planner import VllmInputs, VllmPlan
    from kvplan.engines.vllm.vector import VllmStatic
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset

_TERM_NAMES = {
    "weights": ("weights", "model loading"),
    "non_torch": ("runtime overhead", "non-torch memory (CUDA context, NCCL, custom all-reduce)"),
    "activation": ("activation peak", "profile run peak"),
    "cuda_graph": ("CUDA graphs", "estimate subtracted by this version"),
    "consumed": ("weights + non-torch", "consumed memory"),
}


def _device(dep: Deployment, gpu: HardwarePreset | None, assumptions: list[str]) -> tuple[int, str]:
    """(device total per GPU, GPU label): ``--gpu-memory``, else the preset's CUDA total (or nvidia-smi's minus the
    driver reservation), else ``--kv-cache-memory-bytes`` when only that is known."""
    from kvplan.engines.runtime import device_total

    if dep.gpu_memory is not None:
        assumptions.append(f"device total {fmt_gib(dep.gpu_memory)} as given (--gpu-memory)")
        return dep.gpu_memory, gpu.name if gpu is not None and dep.gpu is not None else "custom"
    if gpu is not None:
        device, recorded = device_total(gpu)
        how = (
            "CUDA-visible total of the preset"
            if recorded
            else f"nvidia-smi {gpu.memory_mib:,} MiB minus the 0.57 GiB driver reservation"
        )
        assumptions.append(f"device total {fmt_gib(device)}: {how}")
        return device, gpu.name
    if dep.kv_cache_memory_bytes is None:
        raise InputError("vLLM needs the device total", field="--gpu", hint="give --gpu or --gpu-memory")
    return dep.kv_cache_memory_bytes, "unknown GPU"


def _inputs(dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None, device: int) -> VllmInputs:
    """The planner's inputs for a deployment (the CLI's SGLang-named flags map to their vLLM meaning)."""
    from kvplan.engines.vllm.planner import VllmInputs

    batched = dep.chunked_prefill_size if (dep.chunked_prefill_size or 0) > 0 else None
    return VllmInputs(
        config=model.raw_config or model.config,
        device_bytes=device,
        tp_size=dep.tp or 1,
        pp_size=dep.pp or 1,
        dp_size=dep.dp or 1,
        gpu_memory_utilization=dep.gpu_memory_utilization,
        kv_cache_dtype=dep.kv_cache_dtype or "auto",
        block_size=dep.page_size,
        max_model_len=dep.context_length,
        max_num_seqs=dep.max_running_requests,
        max_num_batched_tokens=batched,
        enforce_eager=dep.enforce_eager,
        kv_cache_memory_bytes=dep.kv_cache_memory_bytes,
        weight_bytes=dep.weight_memory,
        activation_bytes=dep.activation_memory,
        non_torch_bytes=dep.non_torch_memory,
        cuda_graph_bytes=dep.cuda_graph_memory,
        engine_version=dep.engine_version,
        ep_size=dep.ep or 1,
        quantization=model.quantization,
        checkpoint_bytes=model.checkpoint_bytes,
        sm_major=gpu.sm_major if gpu is not None else None,
        gpu_name=gpu.name if gpu is not None else None,
        gpu_vendor=gpu.vendor if gpu is not None else "nvidia",
        interconnect=dep.interconnect or (gpu.interconnect if gpu is not None else None),
        sampler=dep.vllm_sampler,
        attention_backend=AttentionBackend.parse(dep.attention_backend),
        engram_on_host=bool(getattr(dep, "engram_on_host", False)),
        enable_prefix_caching=dep.enable_prefix_caching,
        language_model_only=dep.language_model_only,
        limit_mm_per_prompt=_mm_limits(dep.limit_mm_per_prompt),
    )


def _mm_limits(text: str | None) -> tuple[tuple[str, int], ...] | None:
    """``--limit-mm-per-prompt`` as (modality, count) pairs (:func:`kvplan.deployment.mm_limits`), None: not given."""
    if text is None:
        return None
    from kvplan.deployment import mm_limits

    return tuple(sorted(mm_limits(text).items()))


def engine_refusal(
    *,
    fits: bool,
    max_model_len: int,
    needed: int,
    available: int,
    estimated: int | None,
    concurrency: float,
    target: int = 1,
) -> str:
    """Why vLLM does not serve ``target`` request(s) of max_model_len (no "does not fit: " prefix): it refuses to
    start (``_check_enough_kv_cache_memory``), or the maximum concurrency (x dp) is below the target.  Example:
    "vLLM refuses to start, one 131,072-token request needs 16.00 GiB of KV, 9.50 GiB available; estimated maximum
    model length 77,824"."""
    if not fits:
        est = f"; estimated maximum model length {estimated:,}" if estimated else ""
        return (
            f"vLLM refuses to start, one {max_model_len:,}-token request needs {fmt_gib(needed)} of KV, "
            f"{fmt_gib(available)} available{est}"
        )
    return f"{target} request(s) of {max_model_len:,} tokens, maximum concurrency {concurrency:.2f}x"


def _verdict(p: VllmPlan, target: int, conc_total: float, fits: bool) -> str:
    """The one-line answer: vLLM refuses to start, the target fits, or the concurrency falls short."""
    if fits:
        return f"fits: {target} request(s) of {p.max_model_len:,} tokens (maximum concurrency {conc_total:.2f}x)"
    return "does not fit: " + engine_refusal(
        fits=p.fits,
        max_model_len=p.max_model_len,
        needed=p.needed_bytes,
        available=p.available_kv_bytes,
        estimated=p.estimated_max_model_len,
        concurrency=conc_total,
        target=target,
    )


def _memory(p: VllmPlan, device: int) -> list[MemorySlice]:
    """Where each GPU's memory goes: outside the utilization, each budget term, the KV pool."""
    cold = dict(p.term_notes)
    memory = [
        MemorySlice(name=_TERM_NAMES.get(k, (k, ""))[0], bytes=v, note=cold.get(k) or _TERM_NAMES.get(k, ("", k))[1])
        for k, v in p.budget_terms
        if k not in ("requested",)
    ]
    requested = dict(p.budget_terms).get("requested")
    if requested:
        memory.insert(
            0,
            MemorySlice(
                name="outside gpu_memory_utilization", bytes=max(device - requested, 0), note="1 - utilization"
            ),
        )
    memory.append(
        MemorySlice(
            name="KV pool",
            bytes=p.num_blocks * p.bytes_per_block,
            note=f"{p.num_blocks:,} blocks x {p.bytes_per_block:,} B",
        )
    )
    return memory


def _pools(p: VllmPlan) -> list[Pool]:
    """The one block pool every KV group shares."""
    groups_txt = "; ".join(
        f"{g.get('kind')} x{g.get('layers')} layers" + (f" (window {g.get('window')})" if g.get("window") else "")
        for g in p.groups
    )
    return [
        Pool(
            name=f"KV blocks, {p.num_groups} group(s): {groups_txt}",
            tokens=p.gpu_kv_cache_tokens,
            bytes=p.num_blocks * p.bytes_per_block,
            bytes_per_token=p.kv_bytes_per_token,
        )
    ]


def static(dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None) -> tuple[VllmStatic, int]:
    """(the :class:`~kvplan.engines.vllm.vector.VllmStatic` of ``dep``, the device total): what :func:`plan` resolves
    before utilization, max_model_len and max_num_seqs enter, for ``kvplan sweep``'s vector path."""
    from kvplan.engines.vllm.planner import vllm_static

    if dep.engine_version is not None:
        from kvplan.engines.vllm.releases import check_supported

        check_supported(dep.engine_version)
    device, _ = _device(dep, gpu, [])
    return vllm_static(_inputs(dep, model, gpu, device)), device


def _unified_memory_check(
    dep: Deployment, gpu: HardwarePreset | None, p: VllmPlan, device: int, assumptions: list[str]
) -> None:
    """On a unified-memory GPU (GB10, GH200) vLLM's free memory at start is the host's available memory
    (``utils/mem_utils.py`` ``device_memory_info``: ``psutil.virtual_memory().available`` when
    ``is_integrated_gpu``, v0.34.0), and it refuses to start when that is below ``ceil(total x util)``
    (``v1/worker/utils.py`` ``request_memory``, v0.34.0).  The preset's ``unified_free_bytes`` (what such a device
    reports free at boot, torch's ``mem_get_info``, which leaves out reclaimable page cache) is a lower bound on
    that figure, so a refusal here is the conservative answer; without it nothing is checked.  vLLM v0.21.0
    ``MemorySnapshot.measure`` (the same psutil branch) also feeds its non-torch increase, and
    ``profile_cudagraph_memory`` measures graphs by ``cudaMemGetInfo`` free differences: on an integrated GPU both
    include host memory taken while profiling (the assumption line says so).  Example: GB10, 101.30 GiB free at boot,
    util 0.92 of 121.69 GiB -> 111.95 GiB requested: vLLM refuses; util 0.8 -> 97.35 GiB: starts."""
    free = getattr(gpu, "unified_free_bytes", None) if gpu is not None else None
    requested = dict(p.budget_terms).get("requested")
    if not free or not requested or dep.kv_cache_memory_bytes is not None:
        return
    from kvplan.errors import EngineRefusal

    if requested > free:
        raise EngineRefusal(
            f"vLLM refuses to start on {gpu.name if gpu is not None else 'this GPU'}: unified memory, "
            f"{fmt_gib(int(free))} available at start (host memory the GPU shares) is less than the "
            f"{fmt_gib(int(requested))} gpu_memory_utilization requests",
            field="--gpu-memory-utilization",
            hint=f"use --gpu-memory-utilization {math.floor(100 * free / device) / 100:.2f} or less",
        )
    assumptions.append(
        f"unified memory: vLLM's free memory at start is the host's available memory, {fmt_gib(int(free))} at boot "
        f"on this device, above the {fmt_gib(int(requested))} requested; on this device vLLM also measures its "
        "non-torch and CUDA-graph terms from host memory (psutil / cudaMemGetInfo: host memory the processes take "
        "while profiling counts), which cold mode does not price"
    )


def _kv_dtype_label(p: VllmPlan, model: ModelSpec, gpu: HardwarePreset | None) -> str:
    """The KV cache dtype the result names: the one the plan priced (given, or what ``auto`` resolved to in the spec
    builder: the checkpoint's declared KV scheme, GLM-DSA's fp8 on SM10x), else the dtype vLLM serves the model in
    (:func:`~kvplan.engines.vllm.specs.served_model_dtype`).  Example: nvidia/Qwen3.6-27B-NVFP4
    (``kv_cache_quant_algo`` FP8) -> ``fp8``, priced at one byte per element."""
    if p.kv_cache_dtype != "auto":
        return p.kv_cache_dtype
    from kvplan.engines.vllm.specs import served_model_dtype

    return served_model_dtype(config_dtype=model.model_dtype, sm_major=gpu.sm_major if gpu else None)


def plan(dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None) -> FitResult:
    """Plan ``dep`` on vLLM: the device total (:func:`_device`), the
    :class:`~kvplan.engines.vllm.planner.VllmInputs` of the deployment, and the :class:`~kvplan.result.FitResult`
    of the plan (contract meanings in the module docstring)."""
    from kvplan.engines.vllm.planner import plan_vllm

    if dep.engine_version is not None:
        from kvplan.engines.vllm.releases import check_supported

        check_supported(dep.engine_version)
    assumptions: list[str] = []
    warnings: list[str] = []
    device, label = _device(dep, gpu, assumptions)
    if dep.mem_fraction_static is not None:
        warnings.append("--mem-fraction-static is an SGLang flag; vLLM uses --gpu-memory-utilization")
    tp, pp, dp = dep.tp or 1, dep.pp or 1, dep.dp or 1
    p = plan_vllm(_inputs(dep, model, gpu, device))
    _unified_memory_check(dep, gpu, p, device, assumptions)
    assumptions.extend(p.assumptions)
    warnings.extend(p.warnings)
    terms = dict(p.budget_terms)
    weights = terms.get("weights", dep.weight_memory or 0)
    # the engine answers whether it starts and serves one full-context request; the user's target (--requests,
    # a workload) is judged once, engine-neutrally, in kvplan.planning.verdict
    target = 1
    conc_total = p.max_concurrency * dp
    fits = p.fits and conc_total >= target
    requested = terms.get("requested")
    pool_bytes = p.num_blocks * p.bytes_per_block
    measured = any(x is not None for x in (dep.kv_cache_memory_bytes, dep.weight_memory))
    return FitResult(
        engine="vllm",
        engine_version=p.engine_version,
        model=model.id,
        gpu=label,
        num_gpus=dep.num_gpus or tp * pp * dp,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=dep.ep or 1,
        dp_attention=False,
        kv_cache_dtype=_kv_dtype_label(p, model, gpu),
        kv_bytes_per_token=p.kv_bytes_per_token or (p.bytes_per_block / p.block_size if p.block_size else 0.0),
        kv_budget_bytes=p.available_kv_bytes,
        kv_pool_tokens=p.gpu_kv_cache_tokens,
        max_running_requests=p.max_num_seqs,
        max_concurrency=round(conc_total, 2),
        max_context_length=p.max_model_len if p.fits else (p.estimated_max_model_len or 0),
        context_length=p.max_model_len,
        fits=fits,
        device_bytes=device,
        free_bytes=requested or device,
        weight_bytes=weights,
        warnings=warnings,
        assumptions=assumptions,
        verdict=_verdict(p, target, conc_total, fits),
        family=model.family,
        layout=", ".join(str(g.get("kind")) for g in p.groups),
        mode="measured" if measured else "cold",
        gpu_memory_utilization=dep.gpu_memory_utilization
        if dep.gpu_memory_utilization is not None
        else _default_util(p),
        page_size=p.block_size,
        chunked_prefill_size=p.max_num_batched_tokens,
        attn_tp=tp,
        attn_dp=1,
        target_requests=target,
        kv_pool_tokens_total=p.dp_total_tokens or p.gpu_kv_cache_tokens * dp,
        max_concurrency_per_rank=round(p.max_concurrency, 2),
        kv_pool_bytes=pool_bytes,
        weight_source="measured (--weight-memory)" if dep.weight_memory is not None else "estimated (kvplan.weights)",
        free_source="ceil(gpu_memory_utilization x device total)",
        num_blocks=p.num_blocks,
        block_size=p.block_size,
        groups=[dict(g) for g in p.groups],
        pools=_pools(p),
        memory=_memory(p, device),
    )


def _default_util(p: VllmPlan) -> float:
    """The ``gpu_memory_utilization`` default of the plan's release."""
    from kvplan.engines.vllm.releases import release_for

    return release_for(p.engine_version).default_utilization
