"""vLLM (V1 engine) KV-cache sizing, version by version, as pure functions.

What vLLM does at startup (read in the vLLM 0.33.0 wheel, ``vllm-project/vllm`` commit 4ba787ec9;
older behaviour from the version notes in ``shared/reference/vllm-kv-sizing.md`` §8 and
from real startup logs, see ``docs/vllm.md``):

1. Budget per GPU (``vllm/v1/worker/utils.py`` ``request_memory`` and
   ``vllm/v1/worker/gpu_worker.py`` ``Worker.determine_available_memory``, v0.33.0)::

       requested = ceil(total * gpu_memory_utilization)
       available = requested - (weights + non_torch) - activation_peak - cuda_graph_estimate

   ``kv_cache_memory_bytes`` replaces ``available`` outright.  The graph estimate is
   subtracted from v0.20 (env ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` default on)
   and never in eager mode.  ≥0.27 measures weights+non-torch as one free-memory drop
   ("consumed", ``vllm/utils/mem_utils.py`` ``memory_profiling``); ≤0.26 summed the
   weight-load delta, the torch peak increase and the non-torch increase.
   (:mod:`kvplan.engines.vllm.budget`.)
2. Specs and groups (``vllm/v1/core/kv_cache_planning.py`` ``get_kv_cache_groups``,
   ``_get_kv_cache_groups_uniform_page_size``, ``unify_kv_cache_spec_page_size``,
   ``_get_packed_kv_cache_groups``), hybrid Mamba block unification
   (``vllm/platforms/interface.py`` ``Platform._align_hybrid_block_size``).
   (:mod:`kvplan.engines.vllm.specs`, one builder per family; :mod:`kvplan.engines.vllm.grouping`.)
3. ``num_blocks = available // bytes_per_block`` with ``bytes_per_block = max over groups of
   Σ pages`` (``_get_kv_cache_bytes_per_block``), min over the TP×PP workers
   (``get_kv_cache_configs``).
4. Report (``vllm/v1/core/kv_cache_utils.py`` ``get_max_concurrency_for_kv_cache_config``,
   ``get_kv_cache_capacity``): concurrency = num_blocks / Σ_g blocks_g(max_model_len);
   tokens = int(concurrency × max_model_len) from v0.21; before, (num_blocks // groups) × block.
5. Fit check (``_check_enough_kv_cache_memory``, ``_estimate_max_model_len_from_groups``):
   refuse when ``bytes_per_block × Σ_g blocks_g(L) > available − bytes_per_block``; binary
   search over [1, L] for the estimated maximum model length.

Every rule that differs by release is read from the :class:`~kvplan.engines.vllm.releases.Release` of the
requested version (:func:`~kvplan.engines.vllm.releases.release_for`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kvplan.engines.backends import AttentionBackend
from kvplan.engines.vllm.budget import (
    vllm_activation_coefficients,
    vllm_available_kv_bytes,
    vllm_default_activation_bytes,
    vllm_default_cuda_graph_bytes,
    vllm_default_graph_count,
    vllm_default_non_torch_bytes,
    vllm_graph_bytes_per_graph,
    vllm_non_torch_note,
    vllm_requested_bytes,
    vllm_sampler_bytes_per_logit,
    vllm_unified_host_buffer_bytes,
)
from kvplan.engines.vllm.fields import int_if_set
from kvplan.engines.vllm.grouping import (
    Group,
    HybridAlignment,
    align_hybrid_pages,
    hybrid_alignment,
    hybrid_block_size,
    kv_groups,
    mamba_all_block_sizes,
    pad_state_pages,
)
from kvplan.engines.vllm.releases import (
    NEWEST_VERSION,
    SAMPLER_BYTES_PER_LOGIT,
    V0_SAMPLER_BYTES_PER_LOGIT,
    Release,
    check_architecture,
    release_for,
    release_numbers,
    vllm_batch_defaults,
    vllm_v0_batch_tokens,
)
from kvplan.engines.vllm.specs import ModelKV, build_model_kv
from kvplan.engines.vllm.towers import text_only_reason, tower_kept_note
from kvplan.engines.vllm.vector import GroupShape, Point, VllmStatic, evaluate, request_blocks
from kvplan.errors import InputError
from kvplan.hfconfig.normalize import flatten_config
from kvplan.parallel import vllm_pp_layer_ranges
from kvplan.units import GiB, MiB

if TYPE_CHECKING:
    from kvplan.engines.vllm.gemma4 import Gemma4Layout

__all__ = [  # names other modules import from here (the formulas live in budget / releases / grouping)
    "NEWEST_VERSION",
    "SAMPLER_BYTES_PER_LOGIT",
    "V0_SAMPLER_BYTES_PER_LOGIT",
    "GiB",
    "MiB",
    "VersionRules",
    "VllmInputs",
    "VllmPlan",
    "hybrid_block_size",
    "plan_vllm",
    "version_rules",
    "vllm_available_kv_bytes",
    "vllm_batch_defaults",
    "vllm_default_activation_bytes",
    "vllm_default_cuda_graph_bytes",
    "vllm_default_non_torch_bytes",
    "vllm_requested_bytes",
    "vllm_static",
    "vllm_v0_batch_tokens",
]

#: the rules of one release window (the name the planner used before :mod:`releases` held them)
VersionRules = Release


def version_rules(engine_version: str | None) -> Release:
    """The :class:`~kvplan.engines.vllm.releases.Release` of ``engine_version`` (None = newest).
    Example: ``version_rules("0.19.0").default_utilization`` = 0.9."""
    return release_for(engine_version)


# --------------------------------------------------------------------------- inputs / outputs


@dataclass(frozen=True)
class VllmInputs:
    """One vLLM engine's deployment: the config, the GPU, the ``vllm serve`` flags, and any measured budget term
    (None = the release's default / kvplan's cold estimate)."""

    config: Mapping[str, Any]  # the HF config.json dict (may have text_config nesting)
    device_bytes: int  # CUDA-visible total per GPU
    tp_size: int = 1
    pp_size: int = 1
    dp_size: int = 1
    gpu_memory_utilization: float | None = None  # None = the version's default
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    kv_cache_memory_bytes: int | None = None
    weight_bytes: int | None = None
    activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    engine_version: str | None = None
    # extras
    consumed_bytes: int | None = None  # ≥0.27 "consumed memory (weights + non-torch)"; replaces W+N
    ep_size: int = 1
    quantization: str | None = None
    checkpoint_bytes: int | None = None
    sm_major: int | None = None  # GPU compute capability major (backend choice)
    gpu_vendor: str = "nvidia"  # nvidia | amd | intel (MoE kernel choice)
    gpu_name: str | None = None  # for the A100 / GB10 exclusions of the batch defaults
    interconnect: str | None = None  # nvlink | pcie | xgmi (cold non-torch); None = from gpu_name's preset
    sparse_mla_format: str | None = None  # "fp8_ds_mla" | "fp8" (DSA models, quantized KV)
    enable_prefix_caching: bool | None = None
    cuda_graph_estimate: bool | None = None  # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
    mamba_ssm_cache_dtype: str = "auto"
    num_speculative_tokens: int = 0
    num_draft_layers: int = 0
    kv_cache_dtype_skip_layers: tuple[str, ...] = ()  # layer indices / "sliding_window" kept at the model dtype
    attention_backend: AttentionBackend | None = None  # --attention-backend (MLA hybrids: picks the block alignment)
    engram_on_host: bool = False  # DeepSeek-V4.1 engram tables in pinned host memory (0.33+ do so by default)
    sampler: str | None = None  # V1 sampler path: "flashinfer" | "pytorch"; None = the release's (PyTorch, pip default)
    language_model_only: bool = False  # --language-model-only: no vision tower (0.18+)
    limit_mm_per_prompt: tuple[tuple[str, int], ...] | None = None  # --limit-mm-per-prompt, (modality, count) pairs


@dataclass(frozen=True)
class VllmPlan:
    """What that engine computes and prints at startup (per GPU; tokens per DP engine)."""

    engine_version: str
    available_kv_bytes: int  # "Available KV cache memory"
    num_blocks: int
    block_size: int
    num_groups: int
    bytes_per_block: int
    kv_bytes_per_token: int  # per GPU, summed over layers (the cell), for display
    gpu_kv_cache_tokens: int  # as that version prints "GPU KV cache size: N tokens"
    max_concurrency: float  # "Maximum concurrency for L tokens per request: X"
    max_model_len: int
    fits: bool  # False when vLLM would refuse to start
    estimated_max_model_len: int | None
    groups: tuple[dict[str, Any], ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    budget_terms: tuple[tuple[str, int], ...]
    blocks_per_request: int = 0
    needed_bytes: int = 0  # KV one max_model_len request needs (fit check)
    dp_total_tokens: int = 0  # gpu_kv_cache_tokens × dp_size
    max_num_batched_tokens: int = 0
    max_num_seqs: int = 0
    capacity_log: str = ""  # the capacity line(s) as this release prints them
    term_notes: tuple[tuple[str, str], ...] = ()  # (term, how the cold estimate is made and its lever)
    kv_cache_dtype: str = "auto"  # the KV dtype priced, ``auto`` resolved as the spec builder did ("auto": the model's)


@dataclass(frozen=True)
class _Scheduler:
    """The scheduler knobs the pool depends on, defaults filled in."""

    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    in_flight: int  # tokens a sliding / chunked layer keeps beyond its window
    mamba_blocks: int  # blocks per request of each Mamba group


@dataclass
class _Notes:
    """The assumption and warning lines collected while planning (in the order they arise)."""

    assumptions: list[str]
    warnings: list[str]
    gemma4: Gemma4Layout | None = None  # the Gemma-4 layout (kvplan.engines.vllm.gemma4), None for other models


# --------------------------------------------------------------------------- steps


def _check_inputs(inp: VllmInputs) -> dict[str, Any]:
    """Parallel sizes, device total, the normalised config and the head split vLLM checks before anything is
    sized; returns the config (``flatten_config(..., engine="vllm")``: vLLM's ``hf_text_config`` reading)."""
    if inp.tp_size < 1 or inp.pp_size < 1 or inp.dp_size < 1:
        raise InputError("parallel sizes must be ≥ 1", field="tp_size")
    if inp.device_bytes <= 0:
        raise InputError("device memory must be positive", field="device_bytes")
    cfg = flatten_config(inp.config, engine="vllm")
    archs = cfg.get("architectures")
    if isinstance(archs, list):
        check_architecture([a for a in archs if isinstance(a, str)], release_numbers(inp.engine_version))
    heads = cfg.get("num_attention_heads")
    if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0 and heads % inp.tp_size:
        # vllm/config/model.py ModelConfig.verify_with_parallel_config, v0.33.0
        raise InputError(
            f"vLLM needs the {heads} attention heads divisible by the tensor parallel size {inp.tp_size}",
            field="--tp-size",
            hint="use a TP size that divides the attention heads",
        )
    return cfg


def _mamba_mode(inp: VllmInputs, rel: Release, model: ModelKV) -> str:
    """vLLM's Mamba cache mode: "none" without prefix caching; with it (``--enable-prefix-caching``, on by default
    for hybrids from 0.28, never for attention-free models: :meth:`Release.prefix_caching_default`) "all" (one
    state per block) for a ``SupportsMambaPrefixCaching`` model in 0.11-0.27,
    "none" for the others up to 0.14 (prefix caching switched off), else "align" (``MambaModelConfig.
    verify_and_update_config``, ``model_executor/models/config.py``, v0.11.2 / v0.14.0 / v0.15.0 / v0.27.0 /
    v0.28.0)."""
    pc = (
        inp.enable_prefix_caching
        if inp.enable_prefix_caching is not None
        else rel.prefix_caching_default(attention_free=model.attention_free)
    )
    if not pc:
        return "none"
    if model.mamba_prefix_caching and rel.mamba_all_with_pc:
        return "all"
    if rel.mamba_pc_needs_model_support and not model.mamba_prefix_caching:
        return "none"  # MambaModelConfig turns prefix caching off for this model class (0.11.1 - 0.14)
    return "align"


def prefix_caching_note(rel: Release, *, version: str, attention_free: bool = False) -> str:
    """The assumption line of a model with state layers planned without ``--enable-prefix-caching`` /
    ``--no-enable-prefix-caching``: vLLM's own default for that model kind in that release
    (:meth:`Release.prefix_caching_default`).  Hybrid (Mamba / linear-attention) models: off up to 0.27
    (``config/model.py`` ``is_prefix_caching_supported`` False for hybrids to 0.25.1; 0.26.0 / 0.27.0
    ``engine/arg_utils.py`` ``_set_default_chunked_prefill_and_prefix_caching_args`` skips ``is_hybrid``), on from
    0.28.0 (the V1 default, ``enable_prefix_caching`` None -> True); attention-free models: off in every release
    (``is_prefix_caching_supported`` False for ``attn_type == "attention_free"``, v0.34.0).  Example: "0.34.0" ->
    "prefix caching on: the default of vLLM 0.34.0 for hybrid models (...)"; "0.25.1" -> "prefix caching off: the
    default of vLLM 0.25.1 ..."; "0.34.0", attention-free -> "prefix caching off: the default of vLLM 0.34.0 for
    attention-free models (...)"."""
    state = "on" if rel.prefix_caching_default(attention_free=attention_free) else "off"
    kind = "attention-free" if attention_free else "hybrid"
    return (
        f"prefix caching {state}: the default of vLLM {version} for {kind} models "
        "(--enable-prefix-caching / --no-enable-prefix-caching set it)"
    )


def _mamba_chunk_size(cfg: Mapping[str, Any]) -> int:
    """``mamba_chunk_size``, else ``chunk_size``, else 2,048 (``ModelConfig.get_mamba_chunk_size``, v0.22.0)."""
    for key in ("mamba_chunk_size", "chunk_size"):
        v = cfg.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 2048


def _align_mamba_all(
    model: ModelKV, block_size: int, cfg: Mapping[str, Any], warnings: list[str], align: HybridAlignment
) -> tuple[ModelKV, int, int]:
    """Cache mode "all": the chunk-aligned block (:func:`mamba_all_block_sizes`), every state page padded to the
    attention page; returns (model, attention block, Mamba block)."""
    attn_bs, mamba_bs = mamba_all_block_sizes(
        attn_token_bytes=model.attn_token_bytes_1layer,
        mamba_state_bytes=model.max_mamba_state_bytes,
        block_size=align.block_size,
        chunk_size=_mamba_chunk_size(cfg),
        kernel_min_block=align.kernel_min_block,
    )
    return pad_state_pages(model, block_size=attn_bs, was=block_size, warnings=warnings), attn_bs, mamba_bs


#: the first release read whose ``ModelConfig._supports_multimodal_for_mm_prefix`` clears the multimodal prefix when
#: every modality is disabled (vllm/config/model.py, 0.30.0, 0.32.0, 0.33.0, 0.34.0)
MM_PREFIX_OFF_SINCE = (0, 30, 0)


def _gemma4(inp: VllmInputs, cfg: Mapping[str, Any], model: ModelKV, notes: _Notes) -> Gemma4Layout | None:
    """Gemma-4 (head_dim != global_head_dim): the backend vLLM runs it on and the blocks that backend starts from
    (:mod:`kvplan.engines.vllm.gemma4`), as an assumption; None for every other model."""
    hd, ghd = int_if_set(cfg, "head_dim"), int_if_set(cfg, "global_head_dim")
    if not hd or not ghd or hd == ghd:
        return None
    from kvplan.engines.vllm import gemma4  # lazy: only Gemma-4 plans need it
    from kvplan.engines.vllm.specs import resolve_kv_cache_dtype

    # --language-model-only sets every modality's limit to 0, which clears is_mm_prefix_lm from 0.30 (read in 0.30.0,
    # 0.32.0 - 0.34.0); a zero --limit-mm-per-prompt must also cover the processor's every modality (audio too): not
    # modelled, the prefix stays
    text_only = inp.language_model_only and release_numbers(inp.engine_version) >= MM_PREFIX_OFF_SINCE

    attention = gemma4.vllm_gemma4_attention(
        sm_major=inp.sm_major,
        vendor=inp.gpu_vendor,
        kv_cache_dtype=resolve_kv_cache_dtype(cfg, inp.kv_cache_dtype, inp.sm_major),
        engine_version=release_numbers(inp.engine_version),
        requested=inp.attention_backend,
        prefix=gemma4.mm_prefix(cfg) and not text_only,
        gpu_name=inp.gpu_name,
        block_size_given=inp.block_size,
    )
    floor = None if text_only else gemma4.mm_prefix_batch_floor(cfg, engine_version=release_numbers(inp.engine_version))
    if text_only and gemma4.mm_prefix(cfg):
        notes.assumptions.append(
            "--language-model-only: vLLM drops the multimodal prefix (config/model.py "
            "_supports_multimodal_for_mm_prefix, 0.30.0 - 0.34.0): a text model's backends and batch default"
        )
    layout = gemma4.gemma4_layout(model, attention=attention, block_size_given=inp.block_size, batch_floor=floor)
    notes.assumptions.append(layout.assumption)
    notes.assumptions.append(
        "the printed tokens are int(concurrency x max_model_len): a request's sliding groups take a fixed number of "
        "blocks, so the figure grows with --max-model-len while the pool's blocks stay the same"
    )
    notes.gemma4 = layout
    return layout


def _model_and_block_size(
    inp: VllmInputs, rel: Release, cfg: Mapping[str, Any], notes: _Notes
) -> tuple[ModelKV, int, int | None]:
    """The per-rank specs (the family's builder), the attention block size (the release's rule per family) and,
    in Mamba cache mode "all", the Mamba block size (else None)."""
    model = build_model_kv(
        config=inp.config,
        tp_size=inp.tp_size,
        kv_cache_dtype=inp.kv_cache_dtype,
        sm_major=inp.sm_major,
        sparse_mla_format=inp.sparse_mla_format,
        mamba_ssm_cache_dtype=inp.mamba_ssm_cache_dtype,
        num_draft_layers=inp.num_draft_layers,
        chunked_local_hybrid=rel.chunked_local_hybrid,
        sliding_hybrid=rel.sliding_hybrid,
        kv_cache_dtype_skip_layers=tuple(inp.kv_cache_dtype_skip_layers),
    )
    notes.assumptions.extend(model.notes)
    block_size, note = rel.block_size(model.family, inp.block_size)
    g4 = _gemma4(inp, cfg, model, notes)
    if g4 is not None:
        model, block_size = g4.model, g4.block_size or block_size
    align = hybrid_alignment(
        model,
        block_size=block_size,
        engine_version=release_numbers(inp.engine_version),
        block_size_given=inp.block_size is not None,
        sm_major=inp.sm_major,
        attention_backend=inp.attention_backend,
    )
    if align.backend is None and note:  # an MLA hybrid's block comes from its backend, not the FlashMLA default
        notes.assumptions.append(note)
    if align.note:
        notes.assumptions.append(align.note)
    if model.max_mamba_state_bytes and _mamba_mode(inp, rel, model) == "all":
        return _align_mamba_all(model, block_size, cfg, notes.warnings, align)
    model, block_size = align_hybrid_pages(model, block_size=block_size, warnings=notes.warnings, align=align)
    return model, block_size, None


def _scheduler(inp: VllmInputs, cfg: Mapping[str, Any], rel: Release, model: ModelKV, notes: _Notes) -> _Scheduler:
    """max_model_len, the batch defaults of the release, the in-flight tokens and the Mamba cache mode."""
    L = inp.max_model_len or int_if_set(cfg, "max_position_embeddings")
    if L <= 0:
        raise InputError("max_model_len is not known", field="max_model_len", hint="pass --max-model-len")
    dflt_b, dflt_s, why = rel.batch_defaults(max_model_len=L, device_bytes=inp.device_bytes, gpu_name=inp.gpu_name)
    B = inp.max_num_batched_tokens or dflt_b
    S = inp.max_num_seqs or dflt_s
    if not inp.max_num_batched_tokens and notes.gemma4 is not None and notes.gemma4.batch_floor:
        from kvplan.engines.vllm.gemma4 import raised_batch_default  # the rule VllmStatic.scheduler applies

        B, raised = raised_batch_default(default=B, max_num_seqs=S, max_model_len=L, floor=notes.gemma4.batch_floor)
        why = f"{why}, {raised}" if raised else why
    if not inp.max_num_batched_tokens:
        notes.assumptions.append(f"max_num_batched_tokens {B} ({why})")
    if not inp.max_model_len:
        notes.assumptions.append(f"max_model_len {L} from max_position_embeddings")
    mode = _mamba_mode(inp, rel, model)
    if model.has_state_layers and inp.enable_prefix_caching is None:
        notes.assumptions.append(
            prefix_caching_note(rel, version=inp.engine_version or NEWEST_VERSION, attention_free=model.attention_free)
        )
    if mode == "all":  # cdiv(L, mamba block) + these (the speculative blocks from 0.22)
        mamba_blocks = inp.num_speculative_tokens if rel.mamba_all_spec_blocks else 0
        if model.has_state_layers:
            notes.assumptions.append(
                f"Mamba cache mode all (prefix caching, one state per block): cdiv(L, Mamba "
                f"block) + {mamba_blocks} block(s) per Mamba group per request"
            )
    else:
        spec = inp.num_speculative_tokens
        mamba_blocks = (
            rel.align_blocks(state_mixer=model.state_mixer, num_speculative_tokens=spec)
            if mode == "align"
            else 1 + spec
        )
        if model.has_state_layers:
            notes.assumptions.append(f"Mamba cache mode {mode}: {mamba_blocks} block(s) per Mamba group per request")
    return _Scheduler(L, B, S, rel.in_flight_tokens(max_num_batched_tokens=B, pp_size=inp.pp_size), mamba_blocks)


def _interconnect(inp: VllmInputs) -> str | None:
    """The GPU link (nvlink / pcie / xgmi) for the cold non-torch term: given, else the preset of ``gpu_name``
    (None when no preset has that name)."""
    if inp.interconnect or not inp.gpu_name:
        return inp.interconnect
    from kvplan.inputs.resolve import resolve_gpu  # lazy: presets are only needed in cold mode

    try:
        return str(resolve_gpu(inp.gpu_name).interconnect)
    except InputError:
        return None


def _weights_from_helper(
    inp: VllmInputs, cfg: Mapping[str, Any], version: str, *, text_only: str | None = None
) -> tuple[int, list[str]]:
    """The cold weight estimate as this release of vLLM loads it on this GPU: the release and the GPU pick the
    MoE kernel and its padding (``kvplan.weights.kernels``), data parallelism splits the experts over tp x dp.
    ``text_only`` (:func:`text_only_reason`): the vision tower is not built (``load_vision=False``); the line names
    the flag and the bytes per GPU it saves (the estimate with the tower minus the one without)."""
    from kvplan.weights import estimate as weights  # lazy: only cold mode estimates weights

    quant = inp.quantization or weights.quantization_from_config(cfg)
    placement = vllm_engram_placement(engine_version=version, engram_on_host=inp.engram_on_host)
    kwargs: dict[str, Any] = dict(
        config=cfg,
        quantization=quant,
        checkpoint_bytes=inp.checkpoint_bytes,
        tp_size=inp.tp_size,
        pp_size=inp.pp_size,
        ep_size=inp.ep_size,
        attn_dp_size=inp.dp_size,
        engine="vllm",
        engine_version=version,
        sm_major=inp.sm_major,
        gpu_vendor=inp.gpu_vendor,
        engram_placement=placement,
    )
    est = weights.estimate_weight_bytes(**kwargs, load_vision=not text_only)
    wnotes = [f"weights estimated ({quant}) by kvplan.weights"]
    if text_only:
        tower = weights.estimate_weight_bytes(**kwargs).per_gpu_bytes - est.per_gpu_bytes
        wnotes.append(
            f"vision tower left out ({text_only}): {tower / MiB:,.1f} MiB less weights per GPU"
            if tower
            else f"{text_only.partition(':')[0]}: the model's config has no vision tower to leave out"
        )
    elif inp.language_model_only or inp.limit_mm_per_prompt is not None:
        wnotes.append(tower_kept_note(inp, version))
    for n in est.notes:
        if n.startswith("vision tower not built (load_vision=False"):
            continue  # the line above names the flag
        if n.startswith("engram tables in "):  # the SGLang wording of the placement; vLLM's own below
            n = (
                "engram tables in pinned host memory, each TP rank's rows (vLLM EngramConfig cpu_offload: the "
                "default from 0.33; --engram-config '{\"cpu_offload\": false}' keeps them on the GPU)"
                if placement != "gpu"
                else "engram tables in device memory, rows split over the TP group (before vLLM 0.33; "
                "--engram-on-host moves them to pinned host memory)"
            )
        wnotes.append(n)
    from kvplan.weights.rope import vllm_rope_cache_bytes  # lazy, as the estimate above

    # vLLM builds one rotary cos/sin cache per distinct get_rope instance on the GPU while it constructs the model
    # (rotary_embedding/base.py RotaryEmbedding.__init__, v0.11.0): the load and the profile count it
    rope = vllm_rope_cache_bytes(config=weights.flatten_config(cfg))
    if rope:
        wnotes.append(f"+ {rope / 2**20:,.0f} MiB rotary cos/sin caches built on the GPU at load (kvplan.weights.rope)")
    return int(est.per_gpu_bytes) + rope, wnotes


#: the first vLLM release read whose ``EngramConfig`` keeps the engram tables in pinned host memory by default
ENGRAM_HOST_DEFAULT_SINCE = (0, 33, 0)


def vllm_engram_placement(*, engine_version: str, engram_on_host: bool) -> str:
    """Where vLLM keeps DeepSeek-V4.1's engram tables: ``"host-per-rank"`` (each TP rank's rows in pinned host
    memory, read over UVA; nothing on the GPU) or ``"gpu"`` (rows split over the TP group in device memory).

    vLLM 0.33.0 and 0.34.0 ``vllm/config/engram.py EngramConfig``: ``cpu_offload: bool = True``, and
    ``vllm/config/vllm.py VllmConfig._resolve_and_verify_engram_config`` builds a default ``EngramConfig()`` for
    every model with ``engram_layer_ids``; only ``--engram-config '{"cpu_offload": false}'`` keeps them on the GPU
    (``models/deepseek_v41/common/engram.py``; ``model_loader/default_loader.py`` maps them on the CPU when
    ``cpu_offload``). Releases before 0.33 were not read: there only ``--engram-on-host`` moves them.

    Example: ("0.34.0", False) -> "host-per-rank"; ("0.32.0", False) -> "gpu"; ("0.32.0", True) -> "host-per-rank".
    """
    from kvplan.engines.vllm.releases import release_numbers

    on_host = engram_on_host or release_numbers(engine_version) >= ENGRAM_HOST_DEFAULT_SINCE
    return "host-per-rank" if on_host else "gpu"


def _nvls_multicast_sm(inp: VllmInputs) -> int | None:
    """The SM major of the deployment's GPU preset when its NVLink fabric is an NVSwitch one (an NVIDIA SXM or
    superchip part of SM 9.0+ on NVLink: HGX H100/H200/H20/H800/B200/B300, GB200/GB300), where NCCL builds NVLS
    buffers (:func:`kvplan.engines.runtime.nccl_nvls_buffer_bytes`); None otherwise (PCIe and bridged NVL cards,
    A100, no preset, a link other than NVLink given by hand)."""
    if not inp.gpu_name or (inp.interconnect and str(inp.interconnect).lower() != "nvlink"):
        return None
    from kvplan.inputs.resolve import resolve_gpu  # lazy: presets are only needed in cold mode

    try:
        g = resolve_gpu(inp.gpu_name)
    except InputError:
        return None
    form = str(getattr(getattr(g, "perf", None), "form", "") or "")
    sm = g.sm_major
    ok = str(g.vendor or "nvidia") == "nvidia" and str(g.interconnect) == "nvlink" and form in ("sxm", "superchip")
    return int(sm) if ok and sm is not None and int(sm) >= 9 else None


def _nvls_note(inp: VllmInputs, sm_major: int | None) -> str | None:
    """The assumption line naming NCCL's NVLS buffers in the cold non-torch term, with their lever, when there are
    any (:func:`kvplan.engines.runtime.nccl_nvls_buffer_bytes`); None otherwise."""
    from kvplan.engines.runtime import nccl_nvls_buffer_bytes

    b = nccl_nvls_buffer_bytes(ranks=inp.tp_size, sm_major=sm_major, multicast=sm_major is not None)
    if not b:
        return None
    return (
        f"non-torch includes NCCL's NVLS buffers, {b / (1 << 20):,.0f} MiB (TP{inp.tp_size} on an NVSwitch "
        "fabric); NCCL_NVLS_ENABLE=0 removes them"
    )


def _cuda_context(inp: VllmInputs) -> int | None:
    """The CUDA context of the deployment's GPU preset (kvplan.engines.runtime.context_bytes: resident threads x
    local memory per thread where its SMs are recorded), None without a preset or a recorded SM count."""
    if not inp.gpu_name:
        return None
    from kvplan.engines.runtime import CONTEXT_BYTES, context_bytes
    from kvplan.inputs.resolve import resolve_gpu  # lazy: presets are only needed in cold mode

    try:
        ctx = context_bytes(resolve_gpu(inp.gpu_name))
    except InputError:
        return None
    return None if ctx == CONTEXT_BYTES else ctx


def _unified_host_bytes(inp: VllmInputs, cfg: Mapping[str, Any], version: str, max_num_batched_tokens: int) -> int:
    """The pinned host input buffers vLLM's non-torch figure counts on a unified-memory GPU (a preset with
    ``unified_free_bytes``, GB10: :func:`kvplan.engines.vllm.budget.vllm_unified_host_buffer_bytes`); 0 on a discrete
    GPU (GH200 included: its HBM is its own) or without a preset."""
    if not inp.gpu_name:
        return 0
    from kvplan.engines.vllm.specs import model_dtype_bytes
    from kvplan.inputs.resolve import resolve_gpu  # lazy: presets are only needed in cold mode

    try:
        unified = resolve_gpu(inp.gpu_name).unified_free_bytes
    except InputError:
        return 0
    if unified is None:
        return 0
    return vllm_unified_host_buffer_bytes(
        max_num_batched_tokens=max_num_batched_tokens,
        hidden_size=int_if_set(cfg, "hidden_size"),
        dtype_bytes=model_dtype_bytes(cfg),
        engine_version=version,
    )


def _weights_and_non_torch(
    inp: VllmInputs,
    cfg: Mapping[str, Any],
    version: str,
    terms: list[tuple[str, int]],
    notes: _Notes,
    max_num_batched_tokens: int = 0,
) -> int:
    """Weights + non-torch: the measured "consumed" drop (≥0.27 logs), else each term measured or estimated."""
    if inp.consumed_bytes is not None:
        consumed = int(inp.consumed_bytes)
        terms.append(("consumed (weights + non-torch)", consumed))
        return consumed
    text_only = text_only_reason(inp, version)
    if inp.weight_bytes is not None:
        W = int(inp.weight_bytes)
        if text_only:
            notes.assumptions.append(f"vision tower left out ({text_only}); the measured weights stand as given")
    else:
        W, wnotes = _weights_from_helper(inp, cfg, version, text_only=text_only)
        notes.assumptions.extend(wnotes)
    if inp.non_torch_bytes is not None:
        N = int(inp.non_torch_bytes)
    else:
        N = vllm_default_non_torch_bytes(
            tp_size=inp.tp_size,
            pp_size=inp.pp_size,
            engine_version=version,
            interconnect=_interconnect(inp),
            context=_cuda_context(inp),
            nvls_multicast_sm=(nvls_sm := _nvls_multicast_sm(inp)),
            unified_host_bytes=_unified_host_bytes(inp, cfg, version, max_num_batched_tokens),
        )
        notes.assumptions.append("non-torch memory estimated (cold)")
        nvls = _nvls_note(inp, nvls_sm)
        if nvls:
            notes.assumptions.append(nvls)
    terms.append(("weights", W))
    terms.append(("non_torch", N))
    return W + N


def _sampler_bytes_per_logit(inp: VllmInputs, rel: Release) -> int | None:
    """The release's bytes per logit, or FlashInfer's when the deployment says its sampler runs
    (:func:`kvplan.engines.vllm.budget.vllm_sampler_bytes_per_logit`; V0 has one sampler)."""
    if inp.sampler == "flashinfer" and not rel.v0:
        return vllm_sampler_bytes_per_logit(v0=False, flashinfer=True)
    return rel.sampler_bytes_per_logit


def _graph_bytes(inp: VllmInputs, rel: Release, sched: _Scheduler, notes: _Notes) -> tuple[int, int]:
    """(the CUDA-graph estimate this release subtracts, bytes per captured graph for the cold estimate): 0 in eager
    mode, in V0, or when switched off; the per-graph bytes are 0 when the estimate is measured (given)."""
    graph_on = inp.cuda_graph_estimate if inp.cuda_graph_estimate is not None else rel.graph_estimate_default
    if not (graph_on and not inp.enforce_eager and rel.graph_term):
        return 0, 0
    if inp.cuda_graph_bytes is not None:
        return int(inp.cuda_graph_bytes), 0
    notes.assumptions.append("CUDA-graph estimate (cold)")
    per_graph = vllm_graph_bytes_per_graph(config=inp.config, pp_size=inp.pp_size)
    graphs = vllm_default_graph_count(
        engine_version=inp.engine_version,
        max_num_seqs=sched.max_num_seqs,
        max_num_batched_tokens=sched.max_num_batched_tokens,
        sm_major=inp.sm_major,
    )
    return vllm_default_cuda_graph_bytes(config=inp.config, pp_size=inp.pp_size, graphs=graphs), per_graph


@dataclass(frozen=True)
class _BudgetStatic:
    """The budget terms that do not depend on utilization, max_model_len or max_num_seqs."""

    kv_cache_memory_bytes: int | None
    not_kv: int = 0
    activation: int | None = None  # measured
    forward_per_token: int = 0  # cold activation coefficients (budget.vllm_activation_coefficients)
    sampler_per_row: int = 0
    graph: int = 0
    graph_per_graph: int = 0  # cold graph estimate: bytes per captured graph (0 when measured or not subtracted)
    terms: tuple[tuple[str, int], ...] = ()  # weights + non-torch (or consumed), in vLLM's order


def _budget_static(
    inp: VllmInputs, cfg: Mapping[str, Any], rel: Release, version: str, sched: _Scheduler, notes: _Notes
) -> _BudgetStatic:
    """The budget's fixed terms (weights + non-torch, measured or cold activation, graph), notes in vLLM's order;
    ``kv_cache_memory_bytes`` replaces the whole budget."""
    if inp.kv_cache_memory_bytes is not None:
        return _BudgetStatic(kv_cache_memory_bytes=int(inp.kv_cache_memory_bytes))
    terms: list[tuple[str, int]] = []
    not_kv = _weights_and_non_torch(inp, cfg, version, terms, notes, sched.max_num_batched_tokens)
    fwd, spr = vllm_activation_coefficients(
        config=inp.config,
        tp_size=inp.tp_size,
        ep_size=inp.ep_size,
        v0=rel.v0,
        sampler_bytes_per_logit=_sampler_bytes_per_logit(inp, rel),
    )
    A = int(inp.activation_bytes) if inp.activation_bytes is not None else None
    if A is None:
        notes.assumptions.append("activation peak estimated (cold)")
    G, per_graph = _graph_bytes(inp, rel, sched, notes)
    return _BudgetStatic(
        kv_cache_memory_bytes=None,
        not_kv=not_kv,
        activation=A,
        forward_per_token=fwd,
        sampler_per_row=spr,
        graph=G,
        graph_per_graph=per_graph,
        terms=tuple(terms),
    )


def _budget_terms(b: _BudgetStatic, pt: Point) -> list[tuple[str, int]]:
    """The budget terms in the order vLLM subtracts them (requested, weights + non-torch, activation, graph)."""
    if b.kv_cache_memory_bytes is not None:
        return [("kv_cache_memory_bytes", int(pt.available))]
    return [("requested", int(pt.requested)), *b.terms, ("activation", int(pt.activation)), ("cuda_graph", b.graph)]


def _stage_bytes_per_block(model: ModelKV, groups: list[Group], pp_size: int, rel: Release) -> list[int]:
    """Bytes per block on each PP stage's workers (the groups projected on the stage's layers; draft layers sit on
    the last stage), by vLLM's stage split (``get_pp_indices``, v0.33.0), rounded to the stage's block-stride
    alignments from 0.32 (:meth:`Release.block_stride_bytes`)."""
    stages = vllm_pp_layer_ranges(num_layers=model.num_decoder_layers, pp_size=pp_size)
    extra = {x.layer for x in model.layers if x.layer >= model.num_decoder_layers}
    out = []
    for si, (start, end) in enumerate(stages):
        lset = set(range(start, end)) | (extra if si == len(stages) - 1 else set())
        names = {x.name for x in model.layers if x.layer in lset}
        out.append(
            rel.block_stride_bytes(
                bytes_per_block=max(g.bytes_per_block(names) for g in groups),
                alignments=[x.stride_alignment for x in model.layers if x.name in names],
            )
        )
    return out


def _group_rows(groups: list[Group], sched: _Scheduler) -> tuple[dict[str, Any], ...]:
    """One description per group for the result (kind, layers, block, page, bytes per block, window, blocks)."""
    return tuple(
        {
            "kind": g.kind,
            "layers": len(g.layers),
            "block_size": g.block_size,
            "page_bytes": g.page if not g.pages else max(g.pages.values()),
            "group_bytes_per_block": g.bytes_per_block(),
            "window": g.window,
            "blocks_per_request": request_blocks(
                kind=g.kind,
                block_size=g.block_size,
                window=g.window,
                length=sched.max_model_len,
                in_flight=sched.in_flight,
                mamba_blocks=sched.mamba_blocks,
            ),
        }
        for g in groups
    )


def _kv_bytes_per_token(model: ModelKV, pp_size: int) -> int:
    """Bytes one token costs on the first stage's workers, summed over its attention layers (0 for DeepSeek-V4,
    whose tensors are sized per compressed state)."""
    if not model.token_bytes_add_up:
        return 0
    start, end = vllm_pp_layer_ranges(num_layers=model.num_decoder_layers, pp_size=pp_size)[0]
    return sum(
        (x.token_bytes if x.kind != "mamba" else 0) for x in model.layers if start <= x.layer < end or pp_size == 1
    )


# --------------------------------------------------------------------------- main entry


@dataclass(frozen=True)
class _Prepared:
    """What :func:`plan_vllm` resolves before the numeric knobs enter (see :class:`VllmStatic`)."""

    static: VllmStatic
    model: ModelKV
    groups: list[Group]
    sched: _Scheduler
    notes: _Notes
    budget: _BudgetStatic
    version: str


def _shapes(groups: list[Group]) -> tuple[tuple[GroupShape, int], ...]:
    """The groups' distinct shapes (kind, block size, window) with their counts, first-seen order."""
    return tuple(Counter(GroupShape(g.kind, g.block_size, g.window) for g in groups).items())


def _prepare(inp: VllmInputs) -> _Prepared:
    """Checks, specs, block size, scheduler defaults, the budget's fixed terms and the groups of one engine."""
    rel = release_for(inp.engine_version)
    version = inp.engine_version or NEWEST_VERSION
    notes = _Notes([], [])
    cfg = _check_inputs(inp)
    text_only_reason(inp, version)  # a release that lacks a text-only flag refuses it, whatever the budget
    model, block_size, mamba_bs = _model_and_block_size(inp, rel, cfg, notes)
    sched = _scheduler(inp, cfg, rel, model, notes)
    budget = _budget_static(inp, cfg, rel, version, sched, notes)
    groups = kv_groups(model, block_size, notes.warnings, rel)
    if mamba_bs is not None:  # cache mode "all": the Mamba groups take one state per Mamba block
        groups = [replace(g, kind="mamba_all", block_size=mamba_bs) if g.kind == "mamba" else g for g in groups]
    if not groups:
        raise InputError("the model has no KV cache layers", field="config")
    stage_bpb = _stage_bytes_per_block(model, groups, inp.pp_size, rel)
    if not any(b > 0 for b in stage_bpb):
        raise InputError(
            "the model's KV cache layers take no memory (every page is 0 bytes)",
            field="config",
            hint="pass the model's Hugging Face config.json",
        )
    util = inp.gpu_memory_utilization if inp.gpu_memory_utilization is not None else rel.default_utilization
    st = VllmStatic(
        release=rel,
        device_bytes=inp.device_bytes,
        utilization=util,
        kv_cache_memory_bytes=budget.kv_cache_memory_bytes,
        not_kv_bytes=budget.not_kv,
        graph_bytes=budget.graph,
        activation_bytes=budget.activation,
        forward_bytes_per_token=budget.forward_per_token,
        sampler_bytes_per_row=budget.sampler_per_row,
        groups=_shapes(groups),
        num_groups=len(groups),
        stage_bytes_per_block=tuple(stage_bpb),
        block_size=block_size,
        min_group_block_size=min(g.block_size for g in groups),
        mamba_blocks=sched.mamba_blocks,
        pp_size=inp.pp_size,
        dp_size=inp.dp_size,
        max_num_batched_tokens=inp.max_num_batched_tokens or None,
        max_num_seqs=inp.max_num_seqs or None,
        gpu_name=inp.gpu_name,
        graph_bytes_per_graph=budget.graph_per_graph,
        engine_version=inp.engine_version,
        sm_major=inp.sm_major,
        batch_floor=notes.gemma4.batch_floor if notes.gemma4 is not None else None,
    )
    return _Prepared(st, model, groups, sched, notes, budget, version)


#: the last few engines :func:`plan_vllm` resolved (inputs, static part): ``kvplan sweep`` asks for the static part of
#: the point it has just planned, and the cold weight estimate is the costly step (~20 ms for a 64-layer model)
_RECENT: list[tuple[VllmInputs, VllmStatic]] = []
_RECENT_MAX = 8


def _remember(inp: VllmInputs, st: VllmStatic) -> None:
    _RECENT.append((inp, st))
    del _RECENT[:-_RECENT_MAX]


def vllm_static(inp: VllmInputs) -> VllmStatic:
    """The :class:`~kvplan.engines.vllm.vector.VllmStatic` of one engine: everything :func:`plan_vllm` resolves
    before utilization, max_model_len and max_num_seqs enter (``kvplan sweep`` evaluates those as arrays with
    :func:`kvplan.engines.vllm.vector.evaluate`).  The static part does not depend on max_model_len and
    max_num_seqs, so an engine planned a moment ago with equal inputs (those two aside) is reused."""
    key = replace(inp, max_model_len=None, max_num_seqs=None)
    found = next((st for seen, st in reversed(_RECENT) if seen == key), None)
    if found is None:
        found = replace(_prepare(inp).static, max_num_seqs=None)
        _remember(key, found)
    return replace(found, max_num_seqs=inp.max_num_seqs or None)


def plan_vllm(inp: VllmInputs) -> VllmPlan:
    """Plan one vLLM engine (one DP rank): budget, blocks, printed pool size and the fit check.

    See the module docstring for the formulas and sources; the per-point arithmetic is
    :func:`kvplan.engines.vllm.vector.evaluate` (the one ``kvplan sweep`` runs on arrays).  A config field of the
    wrong kind is an InputError naming it (:mod:`kvplan.engines.vllm.fields`); anything else that fails is a kvplan
    bug and is not caught.  Worked example (Llama-3.1-8B-class, 32 layers × 8 KV heads × 128, bf16, TP1, block 16,
    ``kv_cache_memory_bytes`` = 10 GiB, max_model_len 32,768): bytes/block = 32 × 16 × 8 × 256 × 2 = 2,097,152;
    num_blocks = 5,120; tokens = 81,920; concurrency = 5,120 / 2,048 = 2.50.
    """
    pr = _prepare(inp)
    st, sched, notes, L = pr.static, pr.sched, pr.notes, pr.sched.max_model_len
    _remember(replace(inp, max_model_len=None, max_num_seqs=None), replace(st, max_num_seqs=None))
    pt = evaluate(st, utilization=st.utilization, max_model_len=L)
    if not pt.fits:
        notes.warnings.append(
            f"vLLM refuses to start: one {L}-token request needs {pt.needed / GiB:.2f} GiB, "
            f"estimated maximum model length {pt.estimated_max_len}"
        )
    tokens, conc = int(pt.tokens), pt.concurrency
    return VllmPlan(
        engine_version=pr.version,
        available_kv_bytes=int(pt.available),
        num_blocks=int(pt.num_blocks),
        block_size=st.block_size,
        num_groups=st.num_groups,
        bytes_per_block=int(st.max_bytes_per_block),
        kv_bytes_per_token=_kv_bytes_per_token(pr.model, inp.pp_size),
        gpu_kv_cache_tokens=tokens,
        max_concurrency=conc,
        max_model_len=L,
        fits=bool(pt.fits),
        estimated_max_model_len=pt.estimated_max_len,
        groups=_group_rows(pr.groups, sched),
        assumptions=tuple(notes.assumptions),
        warnings=tuple(notes.warnings),
        budget_terms=tuple(_budget_terms(pr.budget, pt)),
        blocks_per_request=int(pt.per_request),
        needed_bytes=int(pt.needed),
        dp_total_tokens=tokens * inp.dp_size,
        max_num_batched_tokens=sched.max_num_batched_tokens,
        max_num_seqs=sched.max_num_seqs,
        capacity_log=st.release.capacity_lines(tokens=tokens, max_model_len=L, concurrency=conc),
        term_notes=_cold_term_notes(inp, pr, sched),
        kv_cache_dtype=pr.model.kv_dtype,
    )


def _cold_term_notes(inp: VllmInputs, pr: _Prepared, sched: _Scheduler) -> tuple[tuple[str, str], ...]:
    """One line per cold non-KV term: what it is made of and the flag that moves it (``--explain`` / the memory
    table).  Example (Llama-3.1-70B TP4, H100, 0.34): activation "cold: sampler 1,024 rows (min(B, S)) x 128,256
    vocab; lever --max-num-seqs"."""
    b, st, out = pr.budget, pr.static, []
    if b.kv_cache_memory_bytes is not None:
        return ()
    B, S = sched.max_num_batched_tokens, sched.max_num_seqs
    if b.activation is None:
        fwd, spr = B * b.forward_per_token, min(B, S) * b.sampler_per_row
        per_logit = _sampler_bytes_per_logit(inp, st.release) or 1
        if spr >= fwd:
            out.append(
                (
                    "activation",
                    f"cold: sampler {min(B, S):,} rows (min(B, S)) x {b.sampler_per_row // per_logit:,} vocab; "
                    "lever --max-num-seqs",
                )
            )
        else:
            out.append(("activation", f"cold: forward over {B:,} batched tokens; lever --max-num-batched-tokens"))
    if b.graph_per_graph:
        n = b.graph // b.graph_per_graph
        out.append(
            (
                "cuda_graph",
                f"cold: {n} graphs x {b.graph_per_graph / MiB:.1f} MiB (capture sizes from max_num_seqs "
                f"{S:,}); levers --max-num-seqs, --enforce-eager",
            )
        )
    N = dict(b.terms).get("non_torch")
    if inp.non_torch_bytes is None and N is not None:
        link = _interconnect(inp) or "nvlink"
        note = vllm_non_torch_note(
            non_torch_bytes=N,
            tp_size=inp.tp_size,
            link=link,
            engine_version=inp.engine_version,
            unified_host_bytes=_unified_host_bytes(inp, flatten_config(inp.config, engine="vllm"), pr.version, B),
        )
        out.append(("non_torch", note))
    return tuple(out)
