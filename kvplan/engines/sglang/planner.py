"""SGLang: turn a memory budget into pools, tokens and request caps the way SGLang 0.5.23 does.

Flow (sgl-project/sglang, python/sglang/srt, v0.5.23):

1. defaults: ``arg_groups/memory_hook.py handle_gpu_memory_settings`` (chunked prefill, CUDA-graph
   max bs, mem_fraction_static), model overrides (DeepSeek-V4 page 256 and 256 running requests),
   ``mem_cache/kv_cache_dtype.py configure_kv_cache_dtype`` (what ``auto`` becomes);
2. budget: ``mem_cache/kv_cache_configurator.py KVCacheConfigurator._profile_available_bytes``:
   ``rest = A - P * (1 - mem_fraction_static) - mm_reserve`` with P = free before weights and
   A = free after weights (GiB floats, then ``int(rest * 2**30)``);
3. pools: ``model_executor/pool_configurator.py`` -- ``DefaultPoolConfigurator`` (MHA/GQA, MLA, DSA),
   ``DSV4PoolConfigurator`` (DeepSeek-V4 family); tokens = page_floor(budget / cell), then the
   ``--max-total-tokens`` cap and the MIN over PP stages (``_apply_token_constraints``);
4. request cap: ``KVCacheConfigurator.resolve_max_num_reqs``; longest request:
   ``managers/tp_worker.py get_worker_info`` (min(context - 1, tokens - 1), a warning only).

Every formula lives in ``kvplan.geometry.*`` and ``kvplan.engines.sglang.rules``; this module only
wires them together and records every assumption it makes.
"""

from __future__ import annotations

from kvplan.errors import InputError
from kvplan.result import Basis, FitResult, MemorySlice, Pool
from kvplan.units import GiB, fmt_gib

ENGINE_VERSION = "0.5.23"

_SPEC_DRAFT_ALGOS = {"EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE"}


def _device(dep, gpu, assumptions: list[str]) -> tuple[int, int | None, str]:
    """(device_bytes, nvidia-smi MiB for heuristics, gpu label)."""
    from kvplan.engines.runtime import cuda_total_from_nvidia_smi

    if dep.gpu_memory is not None:
        label = gpu.name if (gpu is not None and dep.gpu is not None) else "custom"
        mib = dep.gpu_memory // 2**20
        assumptions.append(f"device total {fmt_gib(dep.gpu_memory)} as given (--gpu-memory)")
        return dep.gpu_memory, mib, label
    if gpu is None:  # measured free memory, no GPU named: the total only matters for the breakdown
        from kvplan.engines.runtime import runtime_overhead_bytes

        dev = dep.free_memory + runtime_overhead_bytes(world_size=(dep.tp or 1) * (dep.pp or 1), interconnect="pcie")
        assumptions.append(f"device total unknown (no --gpu): taken as the measured free memory plus the modelled "
                           f"runtime overhead, {fmt_gib(dev)}")
        return dev, dev // 2**20, "unknown GPU"
    if gpu.cuda_total_bytes:
        assumptions.append(f"device total {fmt_gib(gpu.device_bytes)}: CUDA-visible total of {gpu.name} (preset {gpu.id})")
        return gpu.cuda_total_bytes, gpu.memory_mib, gpu.name
    dev = cuda_total_from_nvidia_smi(memory_mib=gpu.memory_mib)
    assumptions.append(f"device total {fmt_gib(dev)}: {gpu.name} nvidia-smi {gpu.memory_mib:,} MiB minus the "
                       f"0.57 GiB driver reservation seen on other parts (no CUDA total recorded for it)")
    return dev, gpu.memory_mib, gpu.name


def plan_sglang(dep, model, gpu) -> FitResult:
    from kvplan.engines.sglang import rules as R
    from kvplan.geometry import kvdtype

    warnings: list[str] = []
    assumptions: list[str] = []
    family = model.family

    version = dep.engine_version or ENGINE_VERSION
    if dep.engine_version and dep.engine_version not in (ENGINE_VERSION, f"v{ENGINE_VERSION}"):
        warnings.append(f"kvplan models SGLang {ENGINE_VERSION}; {dep.engine_version} may size some layouts "
                        f"differently (see docs/sglang.md)")

    # ---- parallelism ------------------------------------------------------------------------
    tp, pp, dp, ep = dep.tp or 1, dep.pp or 1, dep.dp or 1, dep.ep or 1
    attn_dp = dp if dep.enable_dp_attention else 1
    attn_tp = tp // attn_dp
    heads = model.config.get("num_attention_heads")
    if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0 and heads % attn_tp:
        # every attention layer asserts total_num_heads % tp_size == 0 (e.g. models/deepseek_v2.py, llama.py)
        raise InputError(f"{heads} attention heads cannot be split over attention-TP {attn_tp}", field="--tp-size",
                         hint="use a tp (or tp / dp with DP attention) that divides the head count")
    dcp = dep.dcp_size or 1
    if dcp > 1:
        if attn_tp % dcp:
            raise InputError(f"--dcp-size {dcp} must divide the attention-TP size {attn_tp}", field="--dcp-size")
        if model.family not in ("gqa", "mla", "dsa"):
            raise InputError(f"decode context parallel is not modelled for {model.family} models", field="--dcp-size")
    replicas = 1 if dep.enable_dp_attention else dp
    needed = tp * pp * replicas
    num_gpus = dep.num_gpus or needed
    if num_gpus < needed:
        raise InputError(f"{num_gpus} GPUs cannot hold tp {tp} x pp {pp} x dp {replicas} = {needed} ranks",
                         field="--num-gpus", hint=f"use --num-gpus {needed} or lower the parallelism")
    if num_gpus > needed:
        warnings.append(f"{num_gpus} GPUs given but the deployment uses {needed} (tp x pp x dp)")
    if ep > 1 and tp % ep and ep != tp * dp:
        warnings.append(f"--ep-size {ep} does not divide the tp group of {tp}; SGLang requires ep to divide tp")

    device, gpu_mib, gpu_label = _device(dep, gpu, assumptions)
    sm_major = gpu.sm_major if gpu is not None else None
    vendor = gpu.vendor if gpu is not None else "nvidia"
    interconnect = gpu.interconnect if gpu is not None else "pcie"

    # ---- KV dtype ---------------------------------------------------------------------------
    requested_dtype = kvdtype.canonical_kv_dtype(dep.kv_cache_dtype or "auto")
    kv_dtype = kvdtype.resolve_kv_cache_dtype(
        requested=dep.kv_cache_dtype or "auto", model_dtype=model.model_dtype, kv_cache_quant_algo=model.kv_cache_quant_algo,
        family=_dtype_family(model), sm_major=sm_major, vendor=vendor)
    if requested_dtype == "auto":
        assumptions.append(f"kv_cache_dtype auto -> {kv_dtype} (SGLang's rule for a {family} model"
                           + (f" on SM{sm_major}x" if sm_major else "") + ")")

    # ---- context ----------------------------------------------------------------------------
    ctx_model = model.context_length
    context = dep.context_length or ctx_model
    if dep.context_length is None:
        assumptions.append(f"context_length {context:,} from the model config")
    elif dep.context_length > ctx_model:
        warnings.append(f"--context-length {context:,} exceeds the model's {ctx_model:,}: SGLang refuses it unless "
                        f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")

    # ---- page size, chunked prefill, request cap, fraction -------------------------------------
    page_default = R.default_page_size(family=_dtype_family(model), attention_backend=dep.attention_backend, sm_major=sm_major,
                                       vendor=vendor)
    if family == "dsv4":
        page = 256
        if dep.page_size not in (None, 256):
            warnings.append(f"--page-size {dep.page_size} ignored: SGLang forces 256 for the DeepSeek-V4 family")
        assumptions.append("page_size 256 (forced by SGLang for DeepSeek-V4)")
    else:
        page = dep.page_size or page_default
        if dep.page_size is None and page != 1:
            assumptions.append(f"page_size {page} (SGLang's default for this model/backend)")

    if dep.chunked_prefill_size is None:
        cps = R.default_chunked_prefill_size(gpu_memory_mib=gpu_mib, tp_size=tp)
        assumptions.append(f"chunked_prefill_size {cps} (SGLang's default for a {gpu_mib or 0:,} MiB GPU)")
    else:
        cps = dep.chunked_prefill_size
    cps_global = cps  # the flag; kvplan.geometry.dsv4 divides by the attention-DP size itself
    if attn_dp > 1 and cps > 0:
        cps = max(1, cps // attn_dp)  # parallel_hook.py _handle_data_parallelism, after the defaults

    mrr_requested = dep.max_running_requests
    if family == "dsv4" and mrr_requested is None:
        mrr_requested = 256
        assumptions.append("max_running_requests 256 (SGLang's DeepSeek-V4 default when unset)")

    if dep.mem_fraction_static is None:
        # the user's --max-running-requests only: the DeepSeek-V4 default of 256 is declared after this heuristic
        max_bs = R.default_cuda_graph_max_bs(gpu_memory_mib=gpu_mib, tp_size=tp,
                                             max_running_requests=dep.max_running_requests)
        mfs = R.default_mem_fraction_static(
            gpu_memory_mib=gpu_mib, tp_size=tp, pp_size=pp, chunked_prefill_size=cps_global if cps_global > 0 else 16384,
            cuda_graph_max_bs=max_bs, is_mla=family in ("mla", "dsa"), attn_dp_size=attn_dp,
            disable_cuda_graph=dep.disable_cuda_graph, vendor=vendor, dcp_size=dcp,
            max_running_requests=dep.max_running_requests, max_total_tokens=dep.max_total_tokens,
            prefill_cuda_graph=R.default_prefill_cuda_graph(
                vendor=vendor, pp_size=pp, dcp_size=dcp, disable_cuda_graph=dep.disable_cuda_graph,
                is_multimodal=model.is_multimodal, is_deepseek_v4=family == "dsv4"))
        assumptions.append(f"mem_fraction_static {mfs} (SGLang's default heuristic: {gpu_mib or 0:,} MiB, tp {tp}, "
                           f"chunked prefill {cps_global}, CUDA-graph max bs {max_bs})")
    else:
        mfs = float(dep.mem_fraction_static)

    # ---- free memory and weights ----------------------------------------------------------------
    from kvplan.engines.runtime import runtime_overhead_bytes

    measured = dep.free_memory is not None or dep.weight_memory is not None
    if dep.free_memory is not None:
        free = dep.free_memory
        free_source = "measured (--free-memory)"
    else:
        overhead = runtime_overhead_bytes(world_size=tp * pp, interconnect=interconnect)
        free = device - overhead
        free_source = f"device total minus {fmt_gib(overhead)} runtime overhead (CUDA context + {interconnect} communicators, tp x pp = {tp * pp})"
        assumptions.append(f"free at start {fmt_gib(free)}: {free_source}")
    if free > device:
        warnings.append(f"free memory {fmt_gib(free)} exceeds the device total {fmt_gib(device)}")

    if dep.weight_memory is not None:
        weights = dep.weight_memory
        weight_source = "measured (--weight-memory)"
    else:
        est = _weight_estimate(model, tp=tp, pp=pp, ep=ep, attn_dp=attn_dp, engram_on_host=dep.engram_on_host)
        weights = est["per_gpu_bytes"]
        weight_source = f"estimated from {est['method']} ({model.quantization} weights)"
        parts = ", ".join(f"{name} {nbytes / GiB:.2f}" for name, nbytes in
                          sorted(est.get("breakdown", []), key=lambda x: -x[1])[:6])
        assumptions.append(f"weights {fmt_gib(weights)} per GPU, {weight_source}, sharded tp {tp} / ep {ep} / pp {pp}"
                           + (f" (GiB: {parts})" if parts else ""))
        assumptions.extend(est["notes"])
    if weights >= free:
        warnings.append(f"the weights ({fmt_gib(weights)} per GPU) do not fit in the free memory ({fmt_gib(free)})")

    after = free - weights
    mm = R.multimodal_reserve_bytes(is_multimodal=model.is_multimodal)
    if mm:
        assumptions.append(f"multimodal reserve {fmt_gib(mm)} (SGLANG_VLM_CACHE_SIZE_MB; SGLang counts {model.id} as multimodal)")
    budget = R.budget_bytes(free_before_bytes=free, free_after_bytes=after, mem_fraction_static=mfs,
                            mm_reserve_bytes=mm)
    reserve = free - int(free * mfs)
    if budget <= 0:
        need = 1 - after / free if free > 0 else 1.0
        warnings.append(f"no KV budget: SGLang stops with 'Loaded weights leave no GPU memory'; "
                        f"--mem-fraction-static must exceed {need:.3f}")

    # ---- pools --------------------------------------------------------------------------------
    pools: list[Pool] = []
    bases: list[Basis] = []
    fixed = 0
    layout = ""
    spec_algo = (dep.speculative_algorithm or "").upper()
    if family == "dsv4":
        from kvplan.geometry import dsv4

        geom = dsv4.dsv4_geometry_from_config(model.raw_config or model.config)
        layout = dsv4.dsv4_select_layout(sm_major=sm_major, is_v41=geom.is_v41, kv_cache_dtype=kv_dtype,
                                         attn_tp_size=attn_tp, attention_backend=dep.dsv4_attn_backend)
        if pp > 1 and geom.is_v41:
            raise InputError("DeepSeek-V4.1 does not support pipeline parallelism in SGLang", field="--pp-size",
                             hint="use --pp-size 1")
        stage_ranges = R.pp_layer_ranges(num_layers=geom.num_layers, pp_size=pp, partition=dep.pp_layer_partition)
        best = None
        for rng in (stage_ranges if budget > 0 else []):
            res = dsv4.dsv4_pool_sizes(
                geometry=geom, budget_bytes=max(budget, 0), layout=layout, page_size=page,
                max_running_requests=mrr_requested, attn_dp_size=attn_dp, context_len=context,
                chunked_prefill_size=cps_global, radix_cache=not dep.disable_radix_cache,
                overlap_schedule=not dep.disable_overlap_schedule, swa_full_tokens_ratio=dep.swa_full_tokens_ratio,
                speculative_num_draft_tokens=(dep.speculative_num_draft_tokens or 0) if spec_algo else 0,
                stage_layers=rng if pp > 1 else None)
            if best is None or res.full_tokens < best.full_tokens:
                best = res
        res = best or _EmptyDSV4(layout, mrr_requested)
        tokens = res.full_tokens
        cell = res.bytes_per_full_token
        fixed = res.fixed_bytes
        layout = f"deepseek-v4 ({res.layout} rows, SWA {res.swa_mode} mode)"
        for name, nbytes in res.components:
            pools.append(Pool(name=name, bytes=nbytes))
        warnings.extend(n for n in res.notes if n.startswith("warning:"))
        assumptions.extend(n for n in res.notes if not n.startswith("warning:"))
        kv_pool_bytes = sum(b for _, b in res.components)
        mrr_used = res.max_running_requests
        if dep.max_total_tokens is not None and dep.max_total_tokens < tokens:
            tokens = R.page_floor(tokens=dep.max_total_tokens, page_size=page)
            warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens")
        mrr, reduced = _mrr(R, tokens, context, mrr_requested, attn_dp)
        # the V3 basis the published record used, on the same budget
        for nb, label in ((1, "fp8"), (2, "bf16")):
            b = dsv4.dsv4_naive_v3_bytes_per_token(kv_dtype_bytes=nb)
            t = R.page_floor(tokens=max(budget, 0) // b, page_size=page)
            bases.append(Basis(name=f"DeepSeek-V3 MLA formula, {label} (61 x 576 x {nb} B)", kv_bytes_per_token=b,
                               kv_pool_tokens=t, max_context_length=max(0, min(context - 1, t - 1)),
                               max_concurrency=min(t // context, mrr) * dp if t else 0,
                               note="the published record's basis; not what SGLang allocates for V4.x"))
    elif family in ("gqa", "mla", "dsa"):
        stage_ranges = R.pp_layer_ranges(num_layers=model.num_layers, pp_size=pp, partition=dep.pp_layer_partition)
        cells = [_cell(model, family, kv_dtype, e - s, attn_tp, sm_major, vendor, dep, layout_out := [], dcp)
                 for (s, e) in stage_ranges]
        layout = layout_out[0] if layout_out else family
        draft_layers = _draft_layers(model, spec_algo)
        if draft_layers:
            cells = [R.speculative_cell(cell=c, draft_layers=draft_layers, num_layers=model.num_layers) for c in cells]
            assumptions.append(f"speculative {spec_algo}: draft KV pool of {draft_layers} layer(s) shares the token count")
        tokens = min(R.page_floor(tokens=max(budget, 0) // c, page_size=page) for c in cells)
        cell = max(cells)
        if dcp > 1:
            # each rank of a decode-context-parallel group stores 1/dcp of every request's rows; the
            # scheduler's logical capacity (max_total_num_tokens) is rows x dcp
            # (model_runner.logical_max_total_num_tokens, v0.5.23)
            assumptions.append(f"decode context parallel {dcp}: {tokens:,} rows per rank = {tokens * dcp:,} logical tokens")
            tokens *= dcp
        if pp > 1:
            assumptions.append("PP stages " + ", ".join(f"{e - s} layers" for s, e in stage_ranges)
                               + "; tokens = MIN over stages")
        if dep.max_total_tokens is not None:
            if dep.max_total_tokens < tokens:
                tokens = R.page_floor(tokens=dep.max_total_tokens, page_size=page)
                warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens (no capacity signal)")
            else:
                warnings.append(f"--max-total-tokens {dep.max_total_tokens:,} is above the profiled {tokens:,}; "
                                f"SGLang uses the profiled value")
        kv_pool_bytes = tokens * cell
        pools.append(Pool(name={"gqa": "KV (K + V)", "mla": "MLA latent", "dsa": "DSA latent + indexer keys"}[family],
                          tokens=tokens, bytes=kv_pool_bytes, bytes_per_token=cell))
        mrr, reduced = _mrr(R, tokens, context, mrr_requested, attn_dp)
    elif family == "hybrid_swa":
        from kvplan.geometry import swa

        layers = swa.swa_layers_from_config(model.raw_config or model.config)
        draft_layers = _draft_layers(model, spec_algo)
        res = swa.swa_pool_sizes_over_stages(
            layers=layers, pp_size=pp, partition=dep.pp_layer_partition, budget_bytes=max(budget, 0), kv_dtype=kv_dtype, attn_tp_size=attn_tp,
            page_size=page, swa_full_tokens_ratio=dep.swa_full_tokens_ratio,
            radix_cache=not dep.disable_radix_cache, max_running_requests=dep.max_running_requests,
            attn_dp_size=attn_dp, chunked_prefill_size=cps, overlap_schedule=not dep.disable_overlap_schedule,
            speculative_num_draft_tokens=(dep.speculative_num_draft_tokens or 0) if spec_algo else 0,
            draft_full_layers=draft_layers, max_total_tokens=dep.max_total_tokens) if budget > 0 else None
        if res is None:
            tokens, cell, kv_pool_bytes = 0, 0.0, 0
        else:
            tokens, cell, fixed = res.full_tokens, res.cell, res.fixed_bytes
            kv_pool_bytes = res.pool_bytes
            layout = (f"hybrid sliding window ({len(layers.full_layers)} full + {len(layers.swa_layers)} SWA layers, "
                      f"window {layers.sliding_window}, {res.mode} mode)")
            pools.append(Pool(name="full-attention KV", tokens=res.full_tokens,
                              bytes=res.full_tokens * res.full_bytes_per_token, bytes_per_token=res.full_bytes_per_token))
            pools.append(Pool(name="sliding-window KV", tokens=res.swa_tokens,
                              bytes=res.swa_tokens * res.swa_bytes_per_token, bytes_per_token=res.swa_bytes_per_token))
            assumptions.extend(res.notes)
        mrr, reduced = _mrr(R, tokens, context, mrr_requested, attn_dp)
    elif family == "hybrid_mamba":
        from kvplan.geometry import mamba

        geom = mamba.mamba_geometry_from_config(model.raw_config or model.config)
        carve = mamba.mamba_carve(
            geometry=geom, budget_bytes=max(budget, 0), tp_size=attn_tp,
            mamba_full_memory_ratio=dep.mamba_full_memory_ratio if dep.mamba_full_memory_ratio is not None else 0.9,
            max_mamba_cache_size=dep.max_mamba_cache_size, radix_cache=not dep.disable_radix_cache,
            max_running_requests=dep.max_running_requests, attn_dp_size=attn_dp, page_size=page, pp_size=pp,
            speculative_num_draft_tokens=(dep.speculative_num_draft_tokens or 0) if spec_algo else 0,
            overlap_schedule=not dep.disable_overlap_schedule, ssm_dtype=dep.mamba_ssm_dtype) if budget > 0 else None
        stage_ranges = R.pp_layer_ranges(num_layers=geom.num_hidden_layers, pp_size=pp, partition=dep.pp_layer_partition)
        cells = [mamba.mamba_hybrid_kv_cell(geometry=geom, attn_tp_size=attn_tp, kv_dtype=kv_dtype,
                                            stage_layers=r if pp > 1 else None) for r in stage_ranges]
        cells = [c for c in cells if c] or [0]
        cell = max(cells)
        if carve is None or cell == 0:
            tokens, kv_pool_bytes = 0, 0
        else:
            tokens = min(R.pool_tokens(budget_bytes=carve.kv_budget_bytes, cell_bytes=c, page_size=page) for c in cells)
            if dep.max_total_tokens is not None and dep.max_total_tokens < tokens:
                tokens = R.page_floor(tokens=dep.max_total_tokens, page_size=page)
                warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens")
            fixed = carve.state_bytes + carve.intermediate_bytes
            kv_pool_bytes = tokens * cell + fixed
            pools.append(Pool(name="attention KV", tokens=tokens, bytes=tokens * cell, bytes_per_token=cell))
            for name, nbytes in carve.components:
                pools.append(Pool(name=name, bytes=nbytes,
                                  note=f"{carve.mamba_slots + 1} slots x {carve.per_request_bytes:,} B"))
            assumptions.extend(carve.notes)
        layout = f"hybrid linear attention ({len(geom.attention_layers)} attention layers + state)"
        mrr, reduced = _mrr(R, tokens, context, mrr_requested, attn_dp)
        if carve is not None and carve.max_running_requests_cap < mrr:
            mrr = carve.max_running_requests_cap
            warnings.append(f"max_running_requests capped at {mrr} by the state slots "
                            f"({carve.mamba_slots} slots / {carve.mamba_ratio} per request)")
    else:
        raise InputError(f"{model.id} is a {family.replace('_', ' ')} model, which kvplan does not size yet",
                         field="--model", hint="see docs/ for the supported layouts")

    if reduced and tokens > 0:
        warnings.append(f"max_running_requests reduced to {mrr} (the pool holds {tokens:,} tokens; SGLang caps at tokens // 2)")
    if mrr_requested is None:
        assumptions.append(f"max_running_requests {mrr}: SGLang's derived default clamp(int(tokens / context x 512), 2048, 4096)")

    max_ctx = R.max_request_len(context_len=context, total_tokens=tokens) if tokens > 0 else 0
    per_rank_conc = min(tokens // context, mrr) if context > 0 else 0
    total_conc = per_rank_conc * dp
    target = dep.target_requests or dep.max_running_requests or 1
    fits = tokens >= context and total_conc >= target and budget > 0
    if 0 < tokens < context:
        warnings.append(f"KV pool holds {tokens:,} tokens, fewer than --context-length {context:,}: SGLang only warns; "
                        f"requests longer than {max_ctx:,} tokens are refused")
    if fits:
        verdict = f"fits: {target} request(s) of {context:,} tokens (room for {total_conc})"
    elif budget <= 0:
        verdict = "does not fit: the weights leave no KV budget"
    elif tokens < context:
        verdict = f"does not fit: one {context:,}-token request needs {context:,} tokens, the pool holds {tokens:,}"
    else:
        verdict = (f"does not fit: {target} request(s) of {context:,} tokens need {target * context:,} tokens, "
                   f"the pool holds {tokens * dp:,} ({total_conc} such request(s))")

    # ---- where the memory goes (per GPU) ---------------------------------------------------
    overhead_b = max(device - free, 0)
    budget_pos = max(budget, 0)
    memory = [
        MemorySlice(name="runtime overhead", bytes=overhead_b, note="CUDA context, NCCL / all-reduce buffers, driver"),
        MemorySlice(name="weights", bytes=weights, note=weight_source),
        MemorySlice(name="KV pool", bytes=min(int(tokens * cell), budget_pos) if family in ("dsv4", "hybrid_swa", "hybrid_mamba")
                    else kv_pool_bytes, note=f"{tokens:,} tokens x {cell:,.1f} B"),
    ]
    if fixed:
        memory.append(MemorySlice(name="fixed pools", bytes=fixed,
                                  note={"hybrid_mamba": "linear-attention state slots",
                                        "hybrid_swa": "sliding-window pool (request-cap mode)"}.get(
                                      family, "sliding-window slots and compressor states")))
    if mm:
        memory.append(MemorySlice(name="multimodal reserve", bytes=mm))
    used = sum(m.bytes for m in memory[2:])
    slack = budget_pos - (used - mm)
    if slack > 0:
        memory.append(MemorySlice(name="budget left unpooled", bytes=slack, note="page rounding"))
    memory.append(MemorySlice(name="reserve (1 - mem_fraction_static)", bytes=max(reserve, 0),
                              note="activations, CUDA graphs, req_to_token"))
    if budget < 0:
        memory.append(MemorySlice(name="over-commit", bytes=-budget, note="weights exceed mem_fraction_static x free"))

    return FitResult(
        engine="sglang", engine_version=version, model=model.id, gpu=gpu_label, num_gpus=num_gpus,
        tp=tp, pp=pp, dp=dp, ep=ep, dp_attention=dep.enable_dp_attention, kv_cache_dtype=kv_dtype,
        kv_bytes_per_token=cell, kv_budget_bytes=budget, kv_pool_tokens=tokens, max_running_requests=mrr,
        max_concurrency=total_conc, max_context_length=max_ctx, context_length=context, fits=fits,
        device_bytes=device, free_bytes=free, weight_bytes=weights, warnings=warnings, assumptions=assumptions,
        verdict=verdict, family=family, layout=layout, mode="measured" if measured else "cold",
        mem_fraction_static=mfs, page_size=page, chunked_prefill_size=cps, attn_tp=attn_tp, attn_dp=attn_dp,
        target_requests=target, kv_pool_tokens_total=tokens * dp, max_concurrency_per_rank=per_rank_conc,
        kv_pool_bytes=kv_pool_bytes, fixed_pool_bytes=fixed, weight_source=weight_source, free_source=free_source,
        pools=pools, memory=memory, bases=bases,
    )


def _weight_estimate(model, *, tp: int, pp: int, ep: int, attn_dp: int, engram_on_host: bool) -> dict:
    """kvplan.weights.estimate.estimate_weight_bytes for SGLang, remembered on disk (kvplan.cache) per model content and
    sharding: the estimate walks every tensor of the model, which is most of a warm ``fit``'s own work."""
    import json
    import zlib

    from kvplan import cache

    ident = json.dumps([model.config, model.quantization, model.checkpoint_bytes, tp, pp, ep, attn_dp,
                        engram_on_host], sort_keys=True, default=str)
    key = f"w{zlib.crc32(ident.encode()):08x}"
    hit = cache.load("weights", key, ident)
    if hit is not None:
        return hit
    from kvplan.weights.estimate import estimate_weight_bytes

    est = estimate_weight_bytes(config=model.config, quantization=model.quantization,
                                checkpoint_bytes=model.checkpoint_bytes, tp_size=tp, pp_size=pp, ep_size=ep,
                                attn_dp_size=attn_dp, engine="sglang", engram_on_host=engram_on_host)
    out = {"per_gpu_bytes": est.per_gpu_bytes, "method": est.method, "notes": list(est.notes),
           "breakdown": [[name, nbytes] for name, nbytes in est.breakdown if nbytes]}
    cache.store("weights", key, ident, out)
    return out


def _mrr(R, tokens: int, context: int, requested: int | None, attn_dp: int) -> tuple[int, bool]:
    """(max_running_requests per attention-DP rank, whether SGLang reduced the requested value)."""
    kw = dict(total_tokens=tokens, context_len=context, requested=requested, attn_dp_size=attn_dp)
    return R.resolve_max_running_requests(**kw), R.max_running_requests_reduction(**kw) is not None


class _EmptyDSV4:
    """Stand-in pool result when there is no budget at all (SGLang would stop at startup)."""

    def __init__(self, layout: str, mrr: int | None):
        self.full_tokens = 0
        self.bytes_per_full_token = 0.0
        self.fixed_bytes = 0
        self.layout = layout
        self.swa_mode = "none"
        self.components = ()
        self.notes = ()
        self.max_running_requests = mrr or 1


def _dtype_family(model) -> str:
    """The family SGLang's kv-dtype rule sees (hybrids resolve like their attention layers)."""
    if model.family in ("gqa", "mla", "dsa", "dsv4"):
        return model.family
    return "mla" if model.config.get("kv_lora_rank") else "gqa"


def _draft_layers(model, spec_algo: str) -> int:
    if spec_algo in ("NEXTN", "MTP", "EAGLE") and model.get("num_nextn_predict_layers"):
        return int(model.get("num_nextn_predict_layers"))
    if spec_algo in _SPEC_DRAFT_ALGOS:
        return 1
    return 0


def _cell(model, family, kv_dtype, layers, attn_tp, sm_major, vendor, dep, layout_out, dcp=1) -> int:
    """Per-token bytes of one PP stage with ``layers`` layers."""
    if family == "gqa":
        from kvplan.geometry.gqa import gqa_bytes_per_token

        layout_out.append(f"gqa ({model.num_kv_heads} KV heads, head_dim {model.head_dim})")
        return gqa_bytes_per_token(num_kv_heads=model.num_kv_heads, head_dim=model.head_dim,
                                   v_head_dim=model.v_head_dim, num_layers=layers, attn_tp_size=attn_tp,
                                   kv_dtype=kv_dtype, dcp_size=dcp)
    if family == "mla":
        from kvplan.geometry.mla import mla_bytes_per_token

        layout_out.append(f"mla (latent {model.require_int('kv_lora_rank')} + rope {model.require_int('qk_rope_head_dim')}, replicated)")
        return mla_bytes_per_token(kv_lora_rank=model.require_int("kv_lora_rank"),
                                   qk_rope_head_dim=model.require_int("qk_rope_head_dim"), num_layers=layers,
                                   kv_dtype=kv_dtype)
    from kvplan.geometry.dsa import dsa_bytes_per_token, dsa_row_layout

    row = dsa_row_layout(kv_dtype=kv_dtype, sm_major=sm_major, vendor=vendor,
                         model="glm" if "glm" in str(model.get("model_type", "")).lower() else "deepseek")
    layout_out.append(f"dsa ({row} row + fp8 indexer key)")
    return dsa_bytes_per_token(kv_lora_rank=model.require_int("kv_lora_rank"),
                               qk_rope_head_dim=model.require_int("qk_rope_head_dim"),
                               index_head_dim=model.require_int("index_head_dim"), num_layers=layers, layout=row,
                               dcp_size=dcp)
