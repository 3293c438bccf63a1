"""SGLang: turn a memory budget into pools, tokens and request caps the way SGLang 0.5.23 does.

Flow (sgl-project/sglang, python/sglang/srt, v0.5.23):

1. defaults: ``arg_groups/memory_hook.py handle_gpu_memory_settings`` (chunked prefill, CUDA-graph
   max bs, mem_fraction_static), model overrides (DeepSeek-V4 page 256 and 256 running requests),
   ``mem_cache/kv_cache_dtype.py configure_kv_cache_dtype`` (what ``auto`` becomes);
2. budget: ``mem_cache/kv_cache_configurator.py KVCacheConfigurator._profile_available_bytes``:
   ``rest = A - P * (1 - mem_fraction_static) - mm_reserve`` with P = free before weights and
   A = free after weights (GiB floats, then ``int(rest * 2**30)``);
3. pools: ``model_executor/pool_configurator.py`` -- ``DefaultPoolConfigurator`` (MHA/GQA, MLA, DSA),
   ``DSV4PoolConfigurator`` (DeepSeek-V4 family), the hybrid SWA / Mamba configurators; tokens =
   page_floor(budget / cell), then the ``--max-total-tokens`` cap and the MIN over PP stages
   (``_apply_token_constraints``);
4. request cap: ``KVCacheConfigurator.resolve_max_num_reqs``; longest request:
   ``managers/tp_worker.py get_worker_info`` (min(context - 1, tokens - 1), a warning only).

``plan_sglang`` is a shared prologue (parallelism, device, KV dtype, context, default flags, budget), the family's
pool planner (``kvplan.engines.sglang.pools.POOL_PLANNERS``) and a shared epilogue (verdict, memory slices,
FitResult).  The rules of the release come from ``kvplan.engines.sglang.releases.rules_for``; every formula lives in
``kvplan.engines.sglang.rules`` and the pool modules, and this module records every assumption it makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan import supported
from kvplan.engines.backends import AttentionBackend
from kvplan.errors import InputError
from kvplan.family import Family, family_or_none
from kvplan.hfconfig.dtypes import dtype_named
from kvplan.result import FitResult, MemorySlice
from kvplan.units import GiB, fmt_gib

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.engines.sglang.pools import PoolPlan, PoolPlanner
    from kvplan.engines.sglang.releases import FamilyOverride, RuleSet
    from kvplan.engines.sglang.speculative import SpecPlan
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset

# The planner's internal records are plain classes with slots, not dataclasses: the dataclass decorator generates and
# compiles its ``__init__`` at every import (0.3-0.5 ms a class), and ``kvplan fit`` imports this module on every
# start (docs/performance.md, "Start-up").  Nothing copies or compares them.


class _Log:
    """The warnings and assumptions the planner collects, in the order it makes them."""

    __slots__ = ("assumptions", "warnings")

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.assumptions: list[str] = []


class _Parallel:
    """The parallel layout of one deployment (sizes of each group, attention DP / TP, GPUs used)."""

    __slots__ = ("attn_dp", "attn_tp", "dcp", "dp", "ep", "num_gpus", "pp", "tp")

    def __init__(
        self, *, tp: int, pp: int, dp: int, ep: int, attn_dp: int, attn_tp: int, dcp: int, num_gpus: int
    ) -> None:
        self.tp, self.pp, self.dp, self.ep = tp, pp, dp, ep
        self.attn_dp, self.attn_tp, self.dcp, self.num_gpus = attn_dp, attn_tp, dcp, num_gpus


class _Device:
    """One GPU as the planner sees it."""

    __slots__ = ("context", "interconnect", "label", "mib", "sm_major", "start_base", "total", "vendor")

    def __init__(
        self,
        *,
        total: int,
        mib: int | None,
        label: str,
        sm_major: int | None,
        vendor: str,
        interconnect: str,
        start_base: tuple[int, str] | None = None,
        context: int | None = None,
    ) -> None:
        self.total = total  # device bytes
        self.context = context  # the GPU's CUDA-context bytes (runtime.context_bytes); None = the median
        self.start_base = start_base  # (bytes, how) free before the context: runtime.start_free_base (unified memory)
        self.mib = mib  # nvidia-smi MiB (the default-flag heuristics' input)
        self.label = label
        self.sm_major = sm_major
        self.vendor = vendor
        self.interconnect = interconnect


class _Defaults:
    """The server defaults the release derives (or the user gave)."""

    __slots__ = ("cps", "cps_global", "mfs", "mrr_requested", "page")

    def __init__(self, *, page: int, cps: int, cps_global: int, mrr_requested: int | None, mfs: float) -> None:
        self.page = page
        self.cps = cps  # chunked prefill per attention-DP rank
        self.cps_global = cps_global  # the flag
        self.mrr_requested = mrr_requested  # the user's, else the family default
        self.mfs = mfs


class _Planned:
    """What one plan produced, handed to the shared epilogue (:func:`_result`) as one frozen record."""

    __slots__ = ("context", "d", "kv_dtype", "mem", "plan")

    kv_dtype: str
    context: int
    d: _Defaults
    mem: _Memory
    plan: PoolPlan

    def __init__(self, *, kv_dtype: str, context: int, d: _Defaults, mem: _Memory, plan: PoolPlan) -> None:
        for name, value in (("kv_dtype", kv_dtype), ("context", context), ("d", d), ("mem", mem), ("plan", plan)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"_Planned is frozen: cannot set {name}")


class _Memory:
    """Free memory, weights and the KV budget of one GPU, with where each came from."""

    __slots__ = ("budget", "free", "free_source", "measured", "mm", "reserve", "weight_source", "weights")

    def __init__(
        self,
        *,
        free: int,
        free_source: str,
        weights: int,
        weight_source: str,
        measured: bool,
        mm: int,
        budget: int,
        reserve: int,
    ) -> None:
        self.free, self.free_source = free, free_source
        self.weights, self.weight_source = weights, weight_source
        self.measured, self.mm, self.budget, self.reserve = measured, mm, budget, reserve


def _parallelism(dep: Deployment, model: ModelSpec, planner: PoolPlanner | None, log: _Log) -> _Parallel:
    tp, pp, dp, ep = dep.tp or 1, dep.pp or 1, dep.dp or 1, dep.ep or 1
    attn_dp = dp if dep.enable_dp_attention else 1
    attn_tp = tp // attn_dp
    heads = model.config.get("num_attention_heads")
    if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0 and heads % attn_tp:
        # every attention layer asserts total_num_heads % tp_size == 0 (e.g. models/deepseek_v2.py, llama.py)
        raise InputError(
            f"{heads} attention heads cannot be split over attention-TP {attn_tp}",
            field="--tp-size",
            hint="use a tp (or tp / dp with DP attention) that divides the head count",
        )
    dcp = dep.dcp_size or 1
    if dcp > 1:
        if attn_tp % dcp:
            raise InputError(f"--dcp-size {dcp} must divide the attention-TP size {attn_tp}", field="--dcp-size")
        if planner is None or not planner.supports_dcp:
            raise InputError(f"decode context parallel is not modelled for {model.family} models", field="--dcp-size")
    replicas = 1 if dep.enable_dp_attention else dp
    needed = tp * pp * replicas
    num_gpus = dep.num_gpus or needed
    if num_gpus < needed:
        raise InputError(
            f"{num_gpus} GPUs cannot hold tp {tp} x pp {pp} x dp {replicas} = {needed} ranks",
            field="--num-gpus",
            hint=f"use --num-gpus {needed} or lower the parallelism",
        )
    if num_gpus > needed:
        log.warnings.append(f"{num_gpus} GPUs given but the deployment uses {needed} (tp x pp x dp)")
    if ep > 1 and tp % ep and ep != tp * dp:
        log.warnings.append(f"--ep-size {ep} does not divide the tp group of {tp}; SGLang requires ep to divide tp")
    return _Parallel(tp=tp, pp=pp, dp=dp, ep=ep, attn_dp=attn_dp, attn_tp=attn_tp, dcp=dcp, num_gpus=num_gpus)


def _device_total(dep: Deployment, gpu: HardwarePreset | None, log: _Log) -> tuple[int, int | None, str]:
    """(device_bytes, nvidia-smi MiB for heuristics, gpu label)."""
    from kvplan.engines.runtime import device_total

    if dep.gpu_memory is not None:
        label = gpu.name if (gpu is not None and dep.gpu is not None) else "custom"
        log.assumptions.append(f"device total {fmt_gib(dep.gpu_memory)} as given (--gpu-memory)")
        return dep.gpu_memory, dep.gpu_memory // 2**20, label
    if gpu is None:  # measured free memory, no GPU named: the total only matters for the breakdown
        from kvplan.engines.runtime import runtime_overhead_bytes

        assert dep.free_memory is not None  # plan.fit picks a GPU unless --gpu-memory or --free-memory is given
        dev = dep.free_memory + runtime_overhead_bytes(world_size=(dep.tp or 1) * (dep.pp or 1), interconnect="pcie")
        log.assumptions.append(
            f"device total unknown (no --gpu): taken as the measured free memory plus the "
            f"modelled runtime overhead, {fmt_gib(dev)}"
        )
        return dev, dev // 2**20, "unknown GPU"
    dev, recorded = device_total(gpu)  # the one device-total rule (issue 21 item 5)
    if recorded:
        log.assumptions.append(f"device total {fmt_gib(dev)}: CUDA-visible total of {gpu.name} (preset {gpu.id})")
        return dev, gpu.memory_mib, gpu.name
    log.assumptions.append(
        f"device total {fmt_gib(dev)}: {gpu.name} nvidia-smi {gpu.memory_mib:,} MiB minus the "
        f"0.57 GiB driver reservation seen on other parts (no CUDA total recorded for it)"
    )
    return dev, gpu.memory_mib, gpu.name


def _device(dep: Deployment, gpu: HardwarePreset | None, log: _Log) -> _Device:
    total, mib, label = _device_total(dep, gpu, log)
    return _Device(
        total=total,
        mib=mib,
        label=label,
        sm_major=gpu.sm_major if gpu is not None else None,
        vendor=gpu.vendor if gpu is not None else "nvidia",
        interconnect=gpu.interconnect if gpu is not None else "pcie",
        start_base=_start_base(dep, gpu),
        context=_cuda_context(gpu),
    )


def _cuda_context(gpu: HardwarePreset | None) -> int | None:
    """The CUDA context of this GPU (kvplan.engines.runtime.context_bytes: resident threads x local memory per
    thread where the preset's SMs are recorded), None without a preset (the median)."""
    from kvplan.engines.runtime import context_bytes

    return context_bytes(gpu) if gpu is not None else None


def _start_base(dep: Deployment, gpu: HardwarePreset | None) -> tuple[int, str] | None:
    """What the start-up snapshot sees before the context when it is less than the device total: a unified-memory
    GPU's free-at-boot figure (:func:`kvplan.engines.runtime.start_free_base`); None otherwise or with --gpu-memory."""
    if gpu is None or dep.gpu_memory is not None:
        return None
    from kvplan.engines.runtime import device_total, start_free_base

    base, how = start_free_base(gpu)
    return (base, how) if base < device_total(gpu)[0] else None


def _kv_dtype(dep: Deployment, model: ModelSpec, dev: _Device, log: _Log) -> str:
    from kvplan.engines.sglang.kvdtype import (
        attention_family,
        canonical_kv_dtype,
        check_release_kv_dtype,
        resolve_kv_cache_dtype,
        served_model_dtype,
    )

    check_release_kv_dtype(requested=dep.kv_cache_dtype or "auto", release=_exact_release(dep))
    requested = canonical_kv_dtype(dep.kv_cache_dtype or "auto")
    kv_dtype = resolve_kv_cache_dtype(
        requested=dep.kv_cache_dtype or "auto",
        model_dtype=served_model_dtype(
            config_dtype=model.model_dtype, model_type=str(model.config.get("model_type") or "")
        ),
        kv_cache_quant_algo=model.kv_cache_quant_algo,
        family=attention_family(family=model.family, config=model.config),
        sm_major=dev.sm_major,
        vendor=dev.vendor,
    )
    if requested == "auto":
        log.assumptions.append(
            f"kv_cache_dtype auto -> {kv_dtype} (SGLang's rule for a {model.family} model"
            + (f" on SM{dev.sm_major}x" if dev.sm_major else "")
            + ")"
        )
    return kv_dtype


def _context(dep: Deployment, model: ModelSpec, log: _Log) -> int:
    ctx_model = model.context_length
    context = dep.context_length or ctx_model
    if dep.context_length is None:
        log.assumptions.append(f"context_length {context:,} from the model config")
    elif dep.context_length > ctx_model:
        log.warnings.append(
            f"--context-length {context:,} exceeds the model's {ctx_model:,}: SGLang refuses it unless "
            f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        )
    return context


def _page_size(dep: Deployment, model: ModelSpec, rules: RuleSet, dev: _Device, log: _Log) -> int:
    from kvplan.engines.sglang.kvdtype import attention_family
    from kvplan.engines.sglang.page_query import PageQuery
    from kvplan.engines.sglang.rules import is_deepseek_family

    # the release's backend rules start from the given page (None: unset) and may rewrite it (flashmla -> 64 ...);
    # the architecture and the radix / speculative / overlap flags feed the Qwen3-Next SM100 model override
    archs = (model.raw_config or model.config).get("architectures")
    page_default = rules.default_page_size(
        PageQuery(
            family=attention_family(family=model.family, config=model.config),
            attention_backend=AttentionBackend.parse(dep.attention_backend),
            sm_major=dev.sm_major,
            vendor=dev.vendor,
            requested=dep.page_size,
            deepseek_family=is_deepseek_family(architectures=archs),
            has_asymmetric_kv=_asymmetric_kv(model),
            architectures=archs,
            radix_cache=not dep.disable_radix_cache,
            speculative=bool(dep.speculative_algorithm),
            overlap_schedule=not dep.disable_overlap_schedule,
        )
    )
    fam = family_or_none(model.family)
    override = rules.override(fam) if fam is not None else None
    if override is not None and override.page_size is not None:
        page = override.page_size
        if dep.page_size not in (None, page):
            log.warnings.append(
                f"--page-size {dep.page_size} ignored: SGLang forces {page} for the {override.name} family"
            )
        log.assumptions.append(f"page_size {page} (forced by SGLang for {override.name})")
        return page
    if not rules.has_page_size:
        if dep.page_size not in (None, 1):
            log.warnings.append(
                f"--page-size {dep.page_size} ignored: SGLang {rules.release} has no paged KV cache "
                f"(pages arrived in 0.4.4)"
            )
        return 1
    page = page_default
    if dep.page_size is None and page != 1:
        log.assumptions.append(f"page_size {page} (SGLang's default for this model/backend)")
    elif dep.page_size is not None and page != dep.page_size:
        log.warnings.append(
            f"--page-size {dep.page_size} becomes {page}: the attention backend SGLang {rules.release} "
            f"runs here takes only that page size"
        )
    return page


def _asymmetric_kv(model: ModelSpec) -> bool:
    """K and V widths differ (``v_head_dim`` given and not ``head_dim``): SGLang's SM100 default for such MHA/GQA
    models is fa4, not trtllm_mha (0.5.23 ``get_default_attn_backend``).  MLA latents have no such pair."""
    if model.family != Family.GQA:
        return False
    v = model.config.get("v_head_dim")
    return isinstance(v, int) and v > 0 and v != model.head_dim


def _forced_mem_fraction(dep: Deployment, override: FamilyOverride | None, log: _Log) -> float | None:
    """A value the family override forces over any flag (SGLang 0.5.3 for DeepSeek NSA: 0.8)."""
    if override is None or override.mem_fraction_static is None:
        return None
    if dep.mem_fraction_static not in (None, override.mem_fraction_static):
        log.warnings.append(
            f"--mem-fraction-static {dep.mem_fraction_static} ignored: this SGLang release forces "
            f"{override.mem_fraction_static} for {override.name}"
        )
    log.assumptions.append(f"mem_fraction_static {override.mem_fraction_static} (forced by SGLang for {override.name})")
    return override.mem_fraction_static


def _mem_fraction(
    dep: Deployment,
    model: ModelSpec,
    rules: RuleSet,
    dev: _Device,
    par: _Parallel,
    cps_global: int,
    spec_plan: SpecPlan | None,
    log: _Log,
) -> float:
    from kvplan.engines.sglang.mem_query import MemQuery, PrefillGraphQuery

    fam = family_or_none(model.family)
    override = rules.override(fam) if fam is not None else None
    forced = _forced_mem_fraction(dep, override, log)
    if forced is not None:
        return forced
    if dep.mem_fraction_static is not None:
        return _runner_factor(model, rules, float(dep.mem_fraction_static), log)
    spec = spec_plan.algorithm if spec_plan is not None else ""
    # the user's --max-running-requests only: a family default (DeepSeek-V4: 256) is declared after this heuristic
    max_bs = rules.default_cuda_graph_max_bs(
        gpu_memory_mib=dev.mib, tp_size=par.tp, max_running_requests=dep.max_running_requests
    )
    prefill_graph = rules.default_prefill_cuda_graph(
        PrefillGraphQuery(
            vendor=dev.vendor,
            pp_size=par.pp,
            dcp_size=par.dcp,
            disable_cuda_graph=dep.disable_cuda_graph,
            is_multimodal=_sglang_multimodal(model, rules),
            is_deepseek_v4=override is not None and not override.prefill_cuda_graph,
            attn_dp_size=par.attn_dp,
            speculative_algorithm=spec,
        )
    )
    mfs = rules.default_mem_fraction_static(
        MemQuery(
            gpu_memory_mib=dev.mib,
            tp_size=par.tp,
            pp_size=par.pp,
            chunked_prefill_size=cps_global if cps_global > 0 else 16384,
            cuda_graph_max_bs=max_bs,
            is_mla=model.family in rules.mla_families,
            attn_dp_size=par.attn_dp,
            disable_cuda_graph=dep.disable_cuda_graph,
            vendor=dev.vendor,
            dcp_size=par.dcp,
            max_running_requests=dep.max_running_requests,
            max_total_tokens=dep.max_total_tokens,
            prefill_cuda_graph=prefill_graph,
            speculative_algorithm=spec,
            context_length=dep.context_length,
            is_multimodal=_sglang_multimodal(model, rules),
        )
    )
    bs = f"{max_bs}" if max_bs is not None else "the runner's default"
    log.assumptions.append(
        f"mem_fraction_static {mfs} (SGLang's default heuristic: {dev.mib or 0:,} MiB, tp {par.tp}, "
        f"chunked prefill {cps_global}, CUDA-graph max bs {bs})"
    )
    vlm = rules.default_mem_fraction_vlm(
        mem_fraction_static=mfs,
        is_multimodal=_sglang_multimodal(model, rules),
        vision_config=model.raw_config.get("vision_config"),
    )
    if vlm != mfs:
        log.assumptions.append(
            f"mem_fraction_static {mfs} -> {vlm:.4f}: this release's cut of the default for a "
            f"multimodal model (SGLang 0.4.9 - 0.5.19)"
        )
        mfs = vlm
    return _runner_factor(model, rules, mfs, log)


def _sglang_multimodal(model: ModelSpec, rules: RuleSet) -> bool:
    """Whether the release runs the model as multimodal (:meth:`RuleSet.counts_multimodal`; kvplan has no
    ``--enable-multimodal``, so SGLang's default)."""
    return rules.counts_multimodal(architecture=model.architecture, has_vision_tower=model.has_vision_tower)


def _runner_factor(model: ModelSpec, rules: RuleSet, mfs: float, log: _Log) -> float:
    """ModelRunner's multiplier on any mem_fraction_static (multimodal models up to SGLang 0.4.8)."""
    out = rules.runner_mem_fraction_factor(mem_fraction_static=mfs, is_multimodal=_sglang_multimodal(model, rules))
    if out != mfs:
        log.assumptions.append(
            f"mem_fraction_static {mfs} -> {out:.4f}: this release's ModelRunner cuts it for a "
            f"multimodal model, the user's value too (SGLang up to 0.4.8)"
        )
    return float(out)


def _defaults(
    dep: Deployment, model: ModelSpec, rules: RuleSet, dev: _Device, par: _Parallel, spec: SpecPlan | None, log: _Log
) -> _Defaults:
    """Page size, chunked prefill, the request cap in force and mem_fraction_static, as SGLang defaults them (the
    family's request-cap default first, then the speculative handler's: the model hook runs before it)."""
    page = _page_size(dep, model, rules, dev, log)
    if dep.chunked_prefill_size is None:
        cps = rules.default_chunked_prefill_size(gpu_memory_mib=dev.mib, tp_size=par.tp)
        log.assumptions.append(f"chunked_prefill_size {cps} (SGLang's default for a {dev.mib or 0:,} MiB GPU)")
    else:
        cps = dep.chunked_prefill_size
    cps_global = cps  # the flag; the DeepSeek-V4 pool divides by the attention-DP size itself
    if par.attn_dp > 1 and cps > 0:
        cps = max(1, cps // par.attn_dp)  # parallel_hook.py _handle_data_parallelism, after the defaults
    mrr_requested = dep.max_running_requests
    fam = family_or_none(model.family)
    override = rules.override(fam) if fam is not None else None
    if mrr_requested is None and override is not None and override.max_running_requests is not None:
        mrr_requested = override.max_running_requests
        log.assumptions.append(f"max_running_requests {mrr_requested} (SGLang's {override.name} default when unset)")
    if mrr_requested is None and spec is not None and spec.mrr_default is not None:
        mrr_requested = spec.mrr_default
        log.assumptions.append(
            f"max_running_requests {mrr_requested} (SGLang's {spec.algorithm} default when unset: "
            f"'Max running requests is reset to {mrr_requested} for speculative decoding')"
        )
    mfs = _mem_fraction(dep, model, rules, dev, par, cps_global, spec, log)
    return _Defaults(page=page, cps=cps, cps_global=cps_global, mrr_requested=mrr_requested, mfs=mfs)


def _free_memory(dep: Deployment, dev: _Device, par: _Parallel, log: _Log) -> tuple[int, str]:
    from kvplan.engines.runtime import runtime_overhead_bytes

    if dep.free_memory is not None:
        return dep.free_memory, "measured (--free-memory)"
    overhead = runtime_overhead_bytes(world_size=par.tp * par.pp, interconnect=dev.interconnect, context=dev.context)
    base, what = dev.start_base if dev.start_base is not None else (dev.total, "device total")
    free = base - overhead
    free_source = (
        f"{what} minus {fmt_gib(overhead)} runtime overhead (CUDA context + {dev.interconnect} "
        f"communicators, tp x pp = {par.tp * par.pp})"
    )
    log.assumptions.append(f"free at start {fmt_gib(free)}: {free_source}")
    return free, free_source


def _weights(
    dep: Deployment, model: ModelSpec, par: _Parallel, spec: SpecPlan | None, log: _Log, *, vendor: str = "nvidia"
) -> tuple[int, str, dict[str, Any] | None]:
    """(per-GPU weight bytes, where they came from, the estimate when kvplan made one)."""
    if dep.weight_memory is not None:
        return dep.weight_memory, "measured (--weight-memory)", None
    from kvplan.engines.sglang.weight_load import WeightLoad, weight_estimate

    placement = getattr(dep, "engram_placement", None)
    est = weight_estimate(
        model,
        tp=par.tp,
        pp=par.pp,
        ep=par.ep,
        attn_dp=par.attn_dp,
        load=WeightLoad(
            engram_on_host=dep.engram_on_host,
            engram_placement=placement,
            moe_dense_tp_size=dep.moe_dense_tp_size,
            enable_dp_lm_head=dep.enable_dp_lm_head,
            speculative_algorithm=_draft_algorithm(spec),
            gpu_vendor=vendor,
        ),
    )
    weights = est["per_gpu_bytes"]
    source = f"estimated from {est['method']} ({model.quantization} weights)"
    parts = ", ".join(
        f"{name} {nbytes / GiB:.2f}" for name, nbytes in sorted(est.get("breakdown", []), key=lambda x: -x[1])[:6]
    )
    log.assumptions.append(
        f"weights {fmt_gib(weights)} per GPU, {source}, sharded tp {par.tp} / ep {par.ep} / "
        f"pp {par.pp}" + (f" (GiB: {parts})" if parts else "")
    )
    log.assumptions.extend(est["notes"])  # the engram placement among them (kvplan.weights.engram.placement_note)
    return weights, source, est


def _engram_hint(weights: dict[str, Any] | None, *, free: int) -> str:
    """DeepSeek-V4.1 with the engram tables on the GPU (SGLang's default) and weights that do not fit: the tables'
    share and the setting that moves them off the GPU; "" otherwise."""
    if weights is None:
        return ""
    on_gpu = dict(weights.get("breakdown", [])).get("engram", 0)
    if not on_gpu or weights["per_gpu_bytes"] - on_gpu >= free:
        return ""
    return (
        f"the engram tables take {fmt_gib(on_gpu)} per GPU in SGLang's default placement (device memory, rows "
        f"split over TP); --engram-on-host (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1; a launcher's 'offload mode "
        f"ram/nvme' row store is the same for the GPU) keeps them in pinned host memory and the rest fits"
    )


def _draft_algorithm(spec: SpecPlan | None) -> str | None:
    """The algorithm whose draft weights the estimate counts (SGLang builds the draft worker, weights included,
    before it profiles the KV budget: 0.5.23 ``managers/scheduler.py`` ``init_model_worker``); None without
    speculation.  Drafts kept in another checkpoint add nothing (:mod:`kvplan.weights.draft`)."""
    return spec.algorithm if spec is not None and spec.on else None


def _memory(
    dep: Deployment,
    model: ModelSpec,
    rules: RuleSet,
    dev: _Device,
    par: _Parallel,
    mfs: float,
    spec: SpecPlan | None,
    log: _Log,
) -> _Memory:
    """Free memory at start, weights, the multimodal reserve and the KV budget of one rank."""
    free, free_source = _free_memory(dep, dev, par, log)
    if free > dev.total:
        log.warnings.append(f"free memory {fmt_gib(free)} exceeds the device total {fmt_gib(dev.total)}")
    weights, weight_source, est = _weights(dep, model, par, spec, log, vendor=dev.vendor)
    if weights >= free:
        log.warnings.append(f"the weights ({fmt_gib(weights)} per GPU) do not fit in the free memory ({fmt_gib(free)})")
        hint = _engram_hint(est, free=free)
        if hint:
            log.warnings.append(hint)
    after = free - weights
    mm = rules.multimodal_reserve_bytes(is_multimodal=_sglang_multimodal(model, rules))
    if mm:
        log.assumptions.append(
            f"multimodal reserve {fmt_gib(mm)} (SGLANG_VLM_CACHE_SIZE_MB; SGLang counts {model.id} as multimodal)"
        )
    budget = rules.budget_bytes(
        free_before_bytes=free, free_after_bytes=after, mem_fraction_static=mfs, mm_reserve_bytes=mm
    )
    if budget <= 0:
        need = 1 - after / free if free > 0 else 1.0
        # a fraction is advice only when one exists: at need >= 1 the weights alone exceed the free memory
        fix = (
            f"--mem-fraction-static must exceed {need:.3f}"
            if need < 1
            else "no --mem-fraction-static is enough: the weights alone exceed the free memory (more GPUs, larger --tp)"
        )
        log.warnings.append(f"no KV budget: SGLang stops with 'Loaded weights leave no GPU memory'; {fix}")
    return _Memory(
        free=free,
        free_source=free_source,
        weights=weights,
        weight_source=weight_source,
        measured=dep.free_memory is not None or dep.weight_memory is not None,
        mm=mm,
        budget=budget,
        reserve=free - int(free * mfs),
    )


def _verdict(*, tokens: int, context: int, target: int, total_conc: int, budget: int, dp: int) -> tuple[bool, str]:
    fits = tokens >= context and total_conc >= target and budget > 0
    if fits:
        return fits, f"fits: {target} request(s) of {context:,} tokens (room for {total_conc})"
    if budget <= 0:
        return fits, "does not fit: the weights leave no KV budget"
    if tokens < context:
        return fits, f"does not fit: one {context:,}-token request needs {context:,} tokens, the pool holds {tokens:,}"
    return fits, (
        f"does not fit: {target} request(s) of {context:,} tokens need {target * context:,} tokens, "
        f"the pool holds {tokens * dp:,} ({total_conc} such request(s))"
    )


def _memory_slices(dev: _Device, mem: _Memory, plan: PoolPlan) -> list[MemorySlice]:
    """Where one GPU's memory goes: overhead, weights, the pools, the slack and the reserve."""
    budget_pos = max(mem.budget, 0)
    memory = [
        MemorySlice(
            name="runtime overhead",
            bytes=max(dev.total - mem.free, 0),
            note="CUDA context, NCCL / all-reduce buffers, driver",
        ),
        MemorySlice(name="weights", bytes=mem.weights, note=mem.weight_source),
        MemorySlice(name="KV pool", bytes=plan.kv_slice_bytes, note=f"{plan.tokens:,} tokens x {plan.cell:,.1f} B"),
    ]
    if plan.fixed_bytes:
        memory.append(MemorySlice(name="fixed pools", bytes=plan.fixed_bytes, note=plan.fixed_note))
    if mem.mm:
        memory.append(MemorySlice(name="multimodal reserve", bytes=mem.mm))
    used = sum(m.bytes for m in memory[2:])
    slack = budget_pos - (used - mem.mm)
    if slack > 0:
        memory.append(MemorySlice(name="budget left unpooled", bytes=slack, note="page rounding"))
    memory.append(
        MemorySlice(
            name="reserve (1 - mem_fraction_static)",
            bytes=max(mem.reserve, 0),
            note="activations, CUDA graphs, req_to_token",
        )
    )
    if mem.budget < 0:
        memory.append(
            MemorySlice(name="over-commit", bytes=-mem.budget, note="weights exceed mem_fraction_static x free")
        )
    return memory


def _planner(model: ModelSpec) -> PoolPlanner | None:
    from kvplan.engines.sglang.pools import POOL_PLANNERS

    fam = family_or_none(model.family)
    return POOL_PLANNERS.get(fam) if fam is not None else None


def _release_rules(dep: Deployment, model: ModelSpec, log: _Log) -> RuleSet:
    """The rule set of ``--engine-version`` (default: the newest); InputError outside the supported range or for a
    family the release did not have.  A given release is named in the assumptions with its window."""
    from kvplan.engines.sglang.releases import check_family, resolve

    rel, window = resolve(dep.engine_version)
    if dep.engine_version is None:
        return window.rules
    fam = family_or_none(model.family)
    if fam is not None:
        check_family(dep.engine_version, fam)
    log.assumptions.append(
        f"SGLang {rel.release}: the sizing rules of releases {window.label} "
        f"(--engine-version {rel.requested})" + (f"; {rel.note}" if rel.note else "")
    )
    override = window.rules.override(fam) if fam is not None else None
    if override is not None and override.dp_attention and not dep.enable_dp_attention:
        log.warnings.append(
            f"SGLang {rel.release} turns DP attention on (dp = tp) for {override.name}; pass "
            f"--dp-size {dep.tp or 1} --enable-dp-attention to plan what it runs"
        )
    return window.rules


def _exact_release(dep: Deployment) -> str | None:
    """The release asked for (not its window's first release): membership rules inside one rule window read it."""
    if dep.engine_version is None:
        return None
    from kvplan.engines.sglang.releases import resolve

    return resolve(dep.engine_version)[0].release


def _default_rules() -> RuleSet:
    from kvplan.engines.sglang.releases import DEFAULT_RULES

    return DEFAULT_RULES


def plan_sglang(dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None) -> FitResult:
    """Plan one SGLang deployment: prologue, the family's pool planner, epilogue (see the module docstring)."""
    from kvplan.engines.sglang.pools.base import PoolContext, PoolDevice, PoolFlags, PoolLimits, PoolParallel
    from kvplan.engines.sglang.pools.unsupported import check_sglang_architecture

    log = _Log()
    rules = _release_rules(dep, model, log)
    check_sglang_architecture(model.raw_config or model.config)
    planner = _planner(model)
    par = _parallelism(dep, model, planner, log)
    dev = _device(dep, gpu, log)
    _model_hook(dep, model, par)
    spec = _speculative(dep, model, par, dev, log)
    kv_dtype = _kv_dtype(dep, model, dev, log)
    context = _context(dep, model, log)
    d = _defaults(dep, model, rules, dev, par, spec, log)
    mem = _memory(dep, model, rules, dev, par, d.mfs, spec, log)
    if planner is None:
        raise InputError(
            f"{model.id} is a {str(model.family).replace('_', ' ')} model, which kvplan does not size yet",
            field="--model",
            hint="see docs/ for the supported layouts",
        )
    plan = planner.plan(
        PoolContext(
            model=model,
            rules=rules,
            budget=mem.budget,
            page_size=d.page,
            kv_dtype=dtype_named(kv_dtype),  # the pools read the member, resolved once here
            par=PoolParallel(attn_tp=par.attn_tp, attn_dp=par.attn_dp, dp=par.dp, pp=par.pp, dcp=par.dcp),
            limits=PoolLimits(
                context_len=context,
                chunked_prefill_size=d.cps,
                chunked_prefill_flag=d.cps_global,
                max_running_requests=d.mrr_requested,
            ),
            device=PoolDevice(sm_major=dev.sm_major, vendor=dev.vendor),
            flags=PoolFlags.from_deployment(dep, spec),
            release=_exact_release(dep),
        )
    )
    log.warnings.extend(plan.warnings)
    log.assumptions.extend(plan.notes)
    if spec is not None and spec.on and not spec.legacy and plan.tokens > 0:
        log.assumptions.extend(_speculative_notes(dep, rules, dev, par, spec, d, context, plan))
    done = _Planned(kv_dtype=kv_dtype, context=context, d=d, mem=mem, plan=plan)
    return _result(dep, model, rules, log, par, dev, done)


def _model_hook(dep: Deployment, model: ModelSpec, par: _Parallel) -> None:
    """The refusals of SGLang's model hook that kvplan models before the speculative rules (the hook runs before the
    speculative one): DeepSeek-V4.1 with pipeline parallelism.  Imports the DeepSeek-V4 modules only for a
    DeepSeek-V4 model with PP (start-up)."""
    if par.pp <= 1 or family_or_none(model.family) is not Family.DSV4:
        return
    from kvplan.engines.sglang.pools.dsv4.eras import refuse_v41_pipeline
    from kvplan.geometry.dsv4 import dsv4_geometry_from_config

    g = dsv4_geometry_from_config(model.raw_config or model.config)
    refuse_v41_pipeline(is_v41=g.is_v41, pp_size=par.pp, release=_exact_release(dep))


def _speculative(dep: Deployment, model: ModelSpec, par: _Parallel, dev: _Device, log: _Log) -> SpecPlan | None:
    """``--speculative-algorithm`` as SGLang resolves it (:mod:`kvplan.engines.sglang.speculative`, imported only
    then: start-up), None without one; InputError where SGLang refuses it."""
    if not dep.speculative_algorithm:
        if getattr(dep, "speculative_dspark_block_size", None) is not None:
            log.warnings.append("--speculative-dspark-block-size ignored: no --speculative-algorithm DSPARK")
        return None
    from kvplan.engines.sglang.speculative import SpecRequest, resolve_speculative

    spec = resolve_speculative(
        SpecRequest(
            algorithm=dep.speculative_algorithm,
            num_draft_tokens=dep.speculative_num_draft_tokens,
            dspark_block_size=getattr(dep, "speculative_dspark_block_size", None),
            config=model.raw_config or model.config,
            family=family_or_none(model.family),
            engine_version=dep.engine_version,
            tp=par.tp,
            pp=par.pp,
            attn_dp=par.attn_dp,
            vendor=dev.vendor,
            attention_backend=AttentionBackend.parse(dep.attention_backend),
        )
    )
    log.warnings.extend(spec.warnings)
    log.assumptions.extend(spec.notes)
    return spec


def _speculative_notes(
    dep: Deployment,
    rules: RuleSet,
    dev: _Device,
    par: _Parallel,
    spec: SpecPlan,
    d: _Defaults,
    context: int,
    plan: PoolPlan,
) -> list[str]:
    """What the draft tokens reserve outside the KV budget, for a plan with a pool: the decode CUDA graphs, the
    ``req_to_token`` rows and the input limit (SGLang 0.5.23; see :mod:`kvplan.engines.sglang.speculative`)."""
    from kvplan.engines.sglang.speculative import req_to_token_bytes, req_to_token_extra_len

    out = []
    max_bs = rules.default_cuda_graph_max_bs(
        gpu_memory_mib=dev.mib, tp_size=par.tp, max_running_requests=dep.max_running_requests
    )
    n = spec.num_draft_tokens
    if not dep.disable_cuda_graph and max_bs:
        graphs = min(max_bs, plan.max_running_requests)
        width = f"; each {spec.algorithm} verify graph is batch x {n} tokens wide" if n else ""
        out.append(
            f"decode CUDA graphs up to batch {graphs} (max bs {max_bs}, captured up to the request slots)"
            f"{width}; their memory is in the (1 - mem_fraction_static) reserve"
        )
    extra = req_to_token_extra_len(plan=spec, page_size=d.page)
    rows = req_to_token_bytes(
        plan=spec, page_size=d.page, context_len=context, max_running_requests=plan.max_running_requests
    )
    out.append(
        f"req_to_token: {plan.max_running_requests + 1} rows x (context {context:,} + {extra}"
        + (f" for {n} draft tokens" if n else "")
        + f") x 4 B = {fmt_gib(rows)}, in the reserve"
    )
    limit = rules.max_request_len(context_len=context, total_tokens=plan.tokens) - 5
    out.append(f"max_req_input_len {limit:,} = min(context - 1, pool - 1) - 5 (no draft-token term)")
    return out


def _result(
    dep: Deployment, model: ModelSpec, rules: RuleSet, log: _Log, par: _Parallel, dev: _Device, done: _Planned
) -> FitResult:
    """The shared epilogue: request-cap notes, the verdict, the memory slices, the FitResult."""
    kv_dtype, context, d, mem, plan = done.kv_dtype, done.context, done.d, done.mem, done.plan
    tokens, mrr = plan.tokens, plan.max_running_requests
    if plan.reduced and tokens > 0:
        log.warnings.append(
            f"max_running_requests reduced to {mrr} (the pool holds {tokens:,} tokens; SGLang caps at tokens // 2)"
        )
    if d.mrr_requested is None:
        from kvplan.engines.base import Note, NoteKind
        from kvplan.engines.sglang.rules import REQUEST_CAP_CEILING, REQUEST_CAP_FLOOR

        lo, hi = REQUEST_CAP_FLOOR, REQUEST_CAP_CEILING
        log.assumptions.append(
            Note(
                f"max_running_requests {mrr}: SGLang's derived default clamp(int(tokens / context x 512), {lo}, {hi})",
                NoteKind.DERIVED_REQUEST_CAP,
                (mrr, lo, hi),
            )
        )
    max_ctx = rules.max_request_len(context_len=context, total_tokens=tokens) if tokens > 0 else 0
    from kvplan.engines.base import full_context_requests

    per_rank_conc = int(full_context_requests(pool_tokens=tokens, context_len=context, request_cap=mrr))
    total_conc = per_rank_conc * par.dp
    # the engine answers whether it starts and serves one full-context request; the user's target (--requests,
    # a workload) is judged once, engine-neutrally, in kvplan.planning.verdict
    target = 1
    if 0 < tokens < context:
        log.warnings.append(
            f"KV pool holds {tokens:,} tokens, fewer than --context-length {context:,}: SGLang only "
            f"warns; requests longer than {max_ctx:,} tokens are refused"
        )
    fits, verdict = _verdict(
        tokens=tokens, context=context, target=target, total_conc=total_conc, budget=mem.budget, dp=par.dp
    )
    return FitResult(
        engine="sglang",
        engine_version=dep.engine_version or supported.SGLANG[1],  # the newest of the release list
        model=model.id,
        gpu=dev.label,
        num_gpus=par.num_gpus,
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        ep=par.ep,
        dp_attention=dep.enable_dp_attention,
        kv_cache_dtype=kv_dtype,
        kv_bytes_per_token=plan.cell,
        kv_budget_bytes=mem.budget,
        kv_pool_tokens=tokens,
        max_running_requests=mrr,
        max_concurrency=total_conc,
        max_context_length=max_ctx,
        context_length=context,
        fits=fits,
        device_bytes=dev.total,
        free_bytes=mem.free,
        weight_bytes=mem.weights,
        warnings=log.warnings,
        assumptions=log.assumptions,
        verdict=verdict,
        family=model.family,
        layout=plan.layout,
        mode="measured" if mem.measured else "cold",
        mem_fraction_static=d.mfs,
        page_size=d.page,
        chunked_prefill_size=d.cps,
        attn_tp=par.attn_tp,
        attn_dp=par.attn_dp,
        target_requests=target,
        kv_pool_tokens_total=tokens * par.dp,
        max_concurrency_per_rank=per_rank_conc,
        kv_pool_bytes=plan.kv_pool_bytes,
        fixed_pool_bytes=plan.fixed_bytes,
        weight_source=mem.weight_source,
        free_source=mem.free_source,
        pools=plan.pools,
        memory=_memory_slices(dev, mem, plan),
        bases=plan.bases,
    )
