"""The newest SGLang release's scalar sizing rules (today 0.5.23, ``kvplan.supported.SGLANG[1]``): KV budget, default
flags, page size, request cap, PP split.  ``release_types.DEFAULT_RULES`` points at them; an older release's rule
lives in ``kvplan.engines.sglang.history`` (a rule the newest release changes moves there).

Every function is pure and keyword-only and mirrors one piece of engine code (cited in its
docstring as sgl-project/sglang ``python/sglang/srt/<path>`` ``<function>``, v0.5.23). Where
the engine computes in floating point (GiB budgets, the request estimate) the same float
expression is evaluated here so results match to the byte; everything else is integer.

Not covered here: the pools of each family (``kvplan.engines.sglang.pools``). The rule set of a release
window (``kvplan.engines.sglang.releases``) points at these functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kvplan.engines.backends import AttentionBackend, MoeA2ABackend
from kvplan.engines.sglang.mem_query import MemQuery
from kvplan.engines.sglang.page_query import PageQuery
from kvplan.engines.sglang.platform import platform_of as _plat
from kvplan.errors import EngineRefusal, InputError
from kvplan.family import ATTENTION_FAMILIES, Family
from kvplan.hfconfig.dtypes import DType, dtype_of
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.units import GiB as GIB
from kvplan.units import MiB as MIB

__all__ = ["pp_layer_ranges"]  # re-exported: R.pp_layer_ranges


#: ``SGLANG_VLM_CACHE_SIZE_MB`` / ``SGLANG_MM_FEATURE_CACHE_MB`` defaults (python/sglang/srt/environ.py).
VLM_CACHE_SIZE_MB = 100
MM_FEATURE_CACHE_MB = 1024


# --------------------------------------------------------------------------------------
# Scalar / numpy duality.  The budget -> tokens -> request-cap arithmetic below accepts Python
# ints/floats (what ``kvplan fit`` passes) or numpy arrays (what ``kvplan sweep`` passes), so
# both paths evaluate the same expression.  numpy is only touched when an array came in (it is
# then already imported by the caller); ``kvplan fit`` never imports it.
# --------------------------------------------------------------------------------------


def _is_array(x: Any) -> bool:
    return getattr(x, "ndim", 0) > 0


def _np() -> Any:
    import numpy

    return numpy


def _trunc_int(x: Any) -> Any:
    """``int(x)`` (truncation toward zero) for a float or an array of floats."""
    if _is_array(x):
        return _np().trunc(x).astype("int64")
    return int(x)


def _minimum(a: Any, b: Any) -> Any:
    if _is_array(a) or _is_array(b):
        return _np().minimum(a, b)
    return min(a, b)


def _maximum(a: Any, b: Any) -> Any:
    if _is_array(a) or _is_array(b):
        return _np().maximum(a, b)
    return max(a, b)


def _any(cond: Any) -> bool:
    """``cond`` is a bool or a boolean array: is it true anywhere?"""
    if _is_array(cond):
        return bool(cond.any())
    return bool(cond)


# --------------------------------------------------------------------------------------
# Budget
# --------------------------------------------------------------------------------------


def budget_bytes(
    *,
    free_before_bytes: int,
    free_after_bytes: int,
    mem_fraction_static: float,
    mm_reserve_bytes: int = 0,
) -> int:
    """KV-pool byte budget of one rank.

    Formula (all in GiB floats, as the engine does)::

        P = free_before / 2^30      # MIN over ranks, before weights
        A = free_after  / 2^30      # MIN over ranks, after weights (and draft weights)
        rest = A - P * (1 - mem_fraction_static) - mm_reserve / 2^30
        budget = int(rest * 2^30)

    ``mem_fraction_static`` is a fraction of the *free memory before weights*, not of the
    GPU total. A result <= 0 means SGLang raises "Loaded weights leave no GPU memory for
    the KV cache"; it is returned as is (the caller raises, see
    :func:`min_mem_fraction_static`).

    Worked example (SGLang docs, Llama-3.1-8B, mfs 0.88): A = 63.72, P = 78.81 GiB:
    63.72 - 78.81 x 0.12 = 54.2628 GiB = 58,264,237,847 B (the log printed K + V = 54.26 GB).

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._profile_available_bytes``, v0.5.23.
    """
    if _is_array(mem_fraction_static):
        out_of_range = _any(~((mem_fraction_static > 0.0) & (mem_fraction_static <= 1.0)))
    else:
        out_of_range = not 0.0 < mem_fraction_static <= 1.0
    if out_of_range:
        raise InputError(
            f"mem_fraction_static must be in (0, 1], got {mem_fraction_static}",
            field="--mem-fraction-static",
        )
    pre_gb = free_before_bytes / GIB
    avail_gb = free_after_bytes / GIB
    slack_gb = pre_gb * (1 - mem_fraction_static)
    mm_gb = mm_reserve_bytes / GIB
    rest = avail_gb - slack_gb - mm_gb
    budget: int = _trunc_int(rest * GIB)  # an int for a point (an int array in a sweep: _trunc_int is typed Any)
    return budget


def min_mem_fraction_static(*, free_before_bytes: int, free_after_bytes: int) -> float:
    """The smallest ``--mem-fraction-static`` SGLang suggests when the budget is <= 0.

    Formula: ``ceil((1 - A / P) * 1000) / 1000``. Example: P = 137.90, A = 12.25 GiB -> 0.912.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._profile_available_bytes`` (error message), v0.5.23.
    """
    minimum = 1 - (free_after_bytes / GIB) / (free_before_bytes / GIB)
    return math.ceil(minimum * 1000) / 1000


def multimodal_reserve_bytes(
    *,
    is_multimodal: bool,
    mm_feature_transport: str = "cpu",
    vlm_cache_size_mb: int = VLM_CACHE_SIZE_MB,
    mm_feature_cache_mb: int = MM_FEATURE_CACHE_MB,
) -> int:
    """Bytes taken out of the KV budget for post-sizing multimodal allocations.

    Formula: 0 for text-only models; else ``SGLANG_VLM_CACHE_SIZE_MB`` (100) MiB, plus
    ``SGLANG_MM_FEATURE_CACHE_MB`` (1024) MiB when the feature transport is ``cuda_ipc`` or
    ``cuda_vmm`` (single-node default: ``cpu``). Example: a VLM on one node -> 104,857,600 B.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``mm_runtime_reservation_gb``; python/sglang/srt/arg_groups/serving_hook.py (transport), v0.5.23.
    """
    if not is_multimodal:
        return 0
    mb = vlm_cache_size_mb
    if mm_feature_transport in ("cuda_ipc", "cuda_vmm"):
        mb += mm_feature_cache_mb
    return max(mb, 0) * MIB


# --------------------------------------------------------------------------------------
# Default-flag heuristics (memory_hook.handle_gpu_memory_settings)
# --------------------------------------------------------------------------------------


def default_chunked_prefill_size(*, gpu_memory_mib: int | None, tp_size: int) -> int:
    """``--chunked-prefill-size`` when unset (before the DP-attention division).

    ``gpu_mem`` = the smallest nvidia-smi ``memory.total`` in MiB:
    < 20,480 -> 2048; < 35,840 -> 4096; < 61,440 -> 4096; < 92,160 -> 8192; < 163,840 -> 8192;
    else 16384; unknown -> 4096. (``tp_size`` does not enter.) Example: RTX PRO 6000
    (97,887 MiB) -> 8192; B200 (183,359 MiB) -> 16384.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/memory_hook.py
    ``handle_gpu_memory_settings``, v0.5.23.
    """
    del tp_size
    if gpu_memory_mib is None:
        return 4096
    if gpu_memory_mib < 20 * 1024:
        return 2048
    if gpu_memory_mib < 60 * 1024:
        return 4096
    if gpu_memory_mib < 160 * 1024:
        return 8192
    return 16384


def default_cuda_graph_max_bs(*, gpu_memory_mib: int | None, tp_size: int, max_running_requests: int | None) -> int:
    """Decode CUDA-graph ``max_bs`` when unset.

    < 20,480 MiB -> 8; < 35,840 -> 48 (tp < 4) / 160; < 61,440 -> 32 / 160; < 163,840 -> 256 / 512;
    else 512; unknown -> 160. Then, if ``--max-running-requests`` is given and smaller, it wins.
    Example: RTX PRO 6000 at TP8 -> 512; with ``--max-running-requests 16`` -> 16.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/memory_hook.py
    ``handle_gpu_memory_settings``, v0.5.23.
    """
    if gpu_memory_mib is None:
        bs = 160
    elif gpu_memory_mib < 20 * 1024:
        bs = 8
    elif gpu_memory_mib < 35 * 1024:
        bs = 48 if tp_size < 4 else 160
    elif gpu_memory_mib < 60 * 1024:
        bs = 32 if tp_size < 4 else 160
    elif gpu_memory_mib < 160 * 1024:
        bs = 256 if tp_size < 4 else 512
    else:
        bs = 512
    if max_running_requests is not None and bs > max_running_requests:
        bs = max_running_requests
    return bs


def prefill_cuda_graph_buckets(*, max_bs: int) -> list[int]:
    """Token buckets of the prefill CUDA graph: 4..32/4, 48..256/16, 288..512/32, 576..1024/64,
    1280..4096/256, 4608..max/512, all <= max_bs. 8192 -> 58 buckets; 2048 -> 42.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/cuda_graph_hook.py
    ``generate_prefill_cuda_graph_batch_sizes``, v0.5.23.
    """
    sizes = (
        list(range(4, 33, 4))
        + list(range(48, 257, 16))
        + list(range(288, 513, 32))
        + list(range(576, 1025, 64))
        + list(range(1280, 4097, 256))
        + list(range(4608, max_bs + 1, 512))
    )
    return [s for s in sizes if s <= max_bs]


#: the a2a backends that keep the breakable prefill CUDA graph (``disable_breakable_cudagraph_if_incompatible``)
_GRAPH_A2A_BACKENDS = frozenset(
    (MoeA2ABackend.NONE, MoeA2ABackend.DEEPEP, MoeA2ABackend.MEGAMOE, MoeA2ABackend.FLASHINFER)
)


def default_prefill_cuda_graph(
    *,
    vendor: str = "nvidia",
    pp_size: int = 1,
    dcp_size: int = 1,
    attn_cp_size: int = 1,
    disable_cuda_graph: bool = False,
    is_multimodal: bool = False,
    multimodal_graph_supported: bool = False,
    moe_a2a_backend: MoeA2ABackend = MoeA2ABackend.NONE,
    enable_two_batch_overlap: bool = False,
    is_deepseek_v4: bool = False,
) -> bool:
    """Whether the (breakable) prefill CUDA graph is on when the user did not choose.

    On by default on CUDA only; switched off for ``--disable-cuda-graph``, PP > 1, DCP > 1,
    attention-CP > 1, two-batch overlap, an a2a backend outside none/deepep/megamoe/flashinfer,
    multimodal models not on the allow-list, and DeepSeek-V4.

    Source: sgl-project/sglang python/sglang/srt/model_executor/cuda_graph_config.py
    ``default_prefill_backend``; python/sglang/srt/arg_groups/cuda_graph_hook.py
    ``apply_cuda_graph_compatibility``, ``disable_breakable_cudagraph_if_incompatible``, v0.5.23.
    """
    if disable_cuda_graph or _plat(vendor) != "cuda":
        return False
    if pp_size > 1 or dcp_size > 1 or attn_cp_size > 1 or enable_two_batch_overlap or is_deepseek_v4:
        return False
    if moe_a2a_backend not in _GRAPH_A2A_BACKENDS:
        return False
    return multimodal_graph_supported or not is_multimodal


def reserve_for_graph_mb(
    *,
    cuda_graph_max_bs: int,
    is_mla: bool,
    prefill_buckets: int,
    attn_dp_size: int = 1,
    decode_cuda_graph: bool = True,
    prefill_cuda_graph: bool = True,
    disaggregation_mode: str = "null",
    moe_a2a_backend: MoeA2ABackend = MoeA2ABackend.NONE,
) -> float:
    """MiB the default-mfs heuristic reserves for CUDA graphs.

    ``2 * max_bs`` (decode graphs on, not PD-prefill) ``+ 3 * max_bs * dp`` (DP attention,
    not PD-prefill; ``+ 1.5 * max_bs * dp`` more when max_bs > 300) ``+ 8 * buckets`` (prefill
    graph, non-MLA) or ``+ 1536`` (MLA) ``+ 1024`` (breakable prefill with DeepEP).
    Example: max_bs 512, 58 buckets, non-MLA, no DP -> 1024 + 464 = 1488.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/memory_hook.py ``reserve_for_graph_mb``, v0.5.23.
    """
    mb = 0.0
    if disaggregation_mode != "prefill" and decode_cuda_graph:
        mb += cuda_graph_max_bs * 2
    if attn_dp_size > 1 and disaggregation_mode != "prefill":
        mb += cuda_graph_max_bs * attn_dp_size * 3
        if cuda_graph_max_bs > 300:
            mb += cuda_graph_max_bs * attn_dp_size * 1.5
    if disaggregation_mode != "decode" and prefill_cuda_graph:
        mb += 1.5 * 1024 if is_mla else prefill_buckets * 8
        if moe_a2a_backend == MoeA2ABackend.DEEPEP:
            mb += 1 * 1024
    return mb


def default_mem_fraction_static(q: MemQuery) -> float:
    """``--mem-fraction-static`` SGLang picks when the user leaves it unset, for the deployment in ``q``
    (:class:`~kvplan.engines.sglang.mem_query.MemQuery`).

    ``chunked_prefill_size`` / ``cuda_graph_max_bs`` = the values in force (None -> the GPU
    heuristics above; pass the user's flags otherwise; cps is the value *before* the
    DP-attention division). In MiB::

        act      = max(cps, 2048)        (cps <= 0: max(max_prefill_tokens, 2048);
                                          PD decode: max(mrr or max_bs or 1) x draft_tokens, 2048))
        reserved = 512 + 1.5 act + tp pp / 8 x 1024 + reserve_for_graph_mb
        reserved = max(reserved, 10240)  if gpu_mem > 61,440
        reserved += 2048 (DeepEP with decode graphs) ; += 2048 on XPU
        mfs = round((gpu_mem - reserved) / gpu_mem, 3)      (0.95 if gpu_mem unknown)
        VLM (has a vision_config, not PD decode): mfs *= 0.95 * clamp(1 - 0.1 (vit_L x vit_H^2 /
            (24 x 1024^2) - 1), 0.8, 1.05)
        post-capture KV sizing (opt-in): reserved = 1536 + tp pp / 8 x 1024 (VLM: - 8192/gpu_mem)

    Prefill graph: max_bs = cps (MLA: min(8192, cps)), capped by --max-total-tokens and 4096 for
    "llama-2" paths; its bucket count feeds the non-MLA 8 MiB/bucket term.

    Worked examples, RTX PRO 6000 (97,887 MiB), TP8, non-MLA: defaults (cps 8192, max_bs 512,
    58 buckets): 512 + 12,288 + 1,024 + 1,024 + 464 = 15,312 -> 0.844; cps 2048 + mrr 16
    (max_bs 16, 42 buckets): 512 + 3,072 + 1,024 + 32 + 336 = 4,976 -> floor 10,240 -> 0.895.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/memory_hook.py
    ``handle_gpu_memory_settings``, ``reserve_for_graph_mb``, ``reserve_for_deepep_a2a_mb``,
    ``adjust_mem_fraction_for_vlm``, v0.5.23.
    """
    (
        gpu_memory_mib,
        tp_size,
        pp_size,
        chunked_prefill_size,
        cuda_graph_max_bs,
        is_mla,
        attn_dp_size,
        disable_cuda_graph,
        prefill_cuda_graph,
        prefill_cuda_graph_max_bs,
        max_running_requests,
        max_prefill_tokens,
        max_total_tokens,
        disaggregation_mode,
        speculative_num_draft_tokens,
        moe_a2a_backend,
        vendor,
        dcp_size,
        is_vlm,
        vit_num_layers,
        vit_hidden_size,
        post_capture_kv_sizing,
        model_path,
    ) = (
        q.gpu_memory_mib,
        q.tp_size,
        q.pp_size,
        q.chunked_prefill_size,
        q.cuda_graph_max_bs,
        q.is_mla,
        q.attn_dp_size,
        q.disable_cuda_graph,
        q.prefill_cuda_graph,
        q.prefill_cuda_graph_max_bs,
        q.max_running_requests,
        q.max_prefill_tokens,
        q.max_total_tokens,
        q.disaggregation_mode,
        q.speculative_num_draft_tokens,
        q.moe_a2a_backend,
        q.vendor,
        q.dcp_size,
        q.is_vlm,
        q.vit_num_layers,
        q.vit_hidden_size,
        q.post_capture_kv_sizing,
        q.model_path,
    )
    if tp_size <= 0 or pp_size <= 0:
        raise InputError("tp_size and pp_size must be positive", field="--tp-size")
    plat = _plat(vendor)
    cps = (
        chunked_prefill_size
        if chunked_prefill_size is not None
        else default_chunked_prefill_size(gpu_memory_mib=gpu_memory_mib, tp_size=tp_size)
    )
    max_bs = (
        cuda_graph_max_bs
        if cuda_graph_max_bs is not None
        else default_cuda_graph_max_bs(
            gpu_memory_mib=gpu_memory_mib, tp_size=tp_size, max_running_requests=max_running_requests
        )
    )
    decode_graph = not disable_cuda_graph
    if prefill_cuda_graph is None:
        prefill_cuda_graph = default_prefill_cuda_graph(
            vendor=vendor,
            pp_size=pp_size,
            dcp_size=dcp_size,
            disable_cuda_graph=disable_cuda_graph,
            is_multimodal=is_vlm,
            moe_a2a_backend=moe_a2a_backend,
        )
    if prefill_cuda_graph_max_bs is None:
        pbs = cps if not is_mla else min(8192, cps)
        if max_total_tokens is not None:
            pbs = min(pbs, max_total_tokens)
        if "llama-2" in model_path.lower():
            pbs = min(pbs, 4096)
    else:
        pbs = prefill_cuda_graph_max_bs
    buckets = len(prefill_cuda_graph_buckets(max_bs=pbs))

    if post_capture_kv_sizing:
        reserved = 1536 + tp_size * pp_size / 8 * 1024
    else:
        if disaggregation_mode == "decode":
            running = max_running_requests or max_bs or 1
            act = max(running * (speculative_num_draft_tokens or 1), 2048)
        elif cps > 0:
            act = max(cps, 2048)
        else:
            act = max(max_prefill_tokens, 2048)
        reserved = 512 + act * 1.5 + tp_size * pp_size / 8 * 1024
        reserved += reserve_for_graph_mb(
            cuda_graph_max_bs=max_bs,
            is_mla=is_mla,
            prefill_buckets=buckets,
            attn_dp_size=attn_dp_size,
            decode_cuda_graph=decode_graph,
            prefill_cuda_graph=prefill_cuda_graph,
            disaggregation_mode=disaggregation_mode,
            moe_a2a_backend=moe_a2a_backend,
        )
        if gpu_memory_mib is not None and gpu_memory_mib > 60 * 1024:
            reserved = max(reserved, 10 * 1024)
        if disaggregation_mode != "prefill" and decode_graph and moe_a2a_backend == MoeA2ABackend.DEEPEP:
            reserved += 2 * 1024
        if plat == "xpu":
            reserved += 2 * 1024

    if gpu_memory_mib is not None and gpu_memory_mib <= reserved:
        # SGLang would compute a fraction <= 0 (or divide by zero) and stop at start-up
        raise EngineRefusal(
            f"SGLang's default reserve of {reserved:,.0f} MiB leaves nothing of a {gpu_memory_mib:,} MiB GPU "
            f"(tp {tp_size} x pp {pp_size})",
            field="--gpu-memory",
            hint="use a larger GPU or fewer tp x pp ranks, or set --mem-fraction-static",
        )
    mfs = round((gpu_memory_mib - reserved) / gpu_memory_mib, 3) if gpu_memory_mib is not None else 0.95

    if is_vlm and disaggregation_mode != "decode":
        if post_capture_kv_sizing:
            if gpu_memory_mib is not None:
                mfs = mfs - 8 * 1024 / gpu_memory_mib
        elif vit_num_layers is not None or vit_hidden_size is not None:
            layers = 24 if vit_num_layers is None else vit_num_layers
            hidden = 1024 if vit_hidden_size is None else vit_hidden_size
            ratio = layers * hidden**2 / (24 * 1024**2)
            factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
            mfs = mfs * (0.95 * factor)
    return mfs


# --------------------------------------------------------------------------------------
# Page size
# --------------------------------------------------------------------------------------


#: architectures SGLang's DeepSeek-family model override applies to (on SM100 it makes ``trtllm_mla`` the default MLA
#: backend).  Source: sgl-project/sglang python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py, the
#: ``_register_for`` list of ``_deepseek_family_overrides``, v0.5.23.
DEEPSEEK_FAMILY_ARCHITECTURES = frozenset(
    {
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "KimiK25ForConditionalGeneration",
        "MistralLarge3ForCausalLM",
        "PixtralForConditionalGeneration",
        "GlmMoeDsaForCausalLM",
        "Glm5NextForConditionalGeneration",
        "HYV4ForCausalLM",
        "HYV4ForCausalLMNextN",
        "LongcatFlashForCausalLM",
        "LongcatFlashForCausalLMNextN",
        "Dots3NoteForCausalLM",
    }
)


def is_deepseek_family(*, architectures: Any) -> bool:
    """Whether SGLang's DeepSeek-family override applies: the config's first architecture is in
    :data:`DEEPSEEK_FAMILY_ARCHITECTURES` (the engine reads ``architectures[0]``).  Example:
    ``["DeepseekV3ForCausalLM"]`` -> True; ``["DeepseekV2ForCausalLM"]`` -> False."""
    if not isinstance(architectures, (list, tuple)) or not architectures:
        return False
    return str(architectures[0]) in DEEPSEEK_FAMILY_ARCHITECTURES


def _attention_family(family: str) -> Family:
    if family not in ATTENTION_FAMILIES:
        raise InputError(f"unknown attention family {family!r}", field="family")
    return Family(family)


class _BackendInput:
    """What the default-backend rules read (one frozen record, built by :func:`default_attention_backend`)."""

    __slots__ = ("deepseek_family", "has_asymmetric_kv", "has_attention_sinks", "plat", "sm_major", "topk_ok")
    plat: str
    sm_major: int | None
    topk_ok: bool
    has_asymmetric_kv: bool
    has_attention_sinks: bool
    deepseek_family: bool

    def __init__(
        self,
        *,
        plat: str,
        sm_major: int | None,
        topk_ok: bool,
        has_asymmetric_kv: bool,
        has_attention_sinks: bool,
        deepseek_family: bool,
    ) -> None:
        for k, v in (
            ("plat", plat),
            ("sm_major", sm_major),
            ("topk_ok", topk_ok),
            ("has_asymmetric_kv", has_asymmetric_kv),
            ("has_attention_sinks", has_attention_sinks),
            ("deepseek_family", deepseek_family),
        ):
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")


def _gqa_backend(x: _BackendInput) -> AttentionBackend:
    if x.plat == "cuda" and x.sm_major == 9 and x.topk_ok:
        return AttentionBackend.FA3
    if x.plat == "cuda" and x.sm_major == 10 and x.topk_ok:
        return AttentionBackend.FA4 if x.has_asymmetric_kv else AttentionBackend.TRTLLM_MHA
    if x.plat == "hip":
        return AttentionBackend.AITER
    return AttentionBackend.TRITON if x.has_attention_sinks else AttentionBackend.FLASHINFER


def _mla_backend(x: _BackendInput) -> AttentionBackend:
    if x.deepseek_family and x.plat == "cuda" and x.sm_major == 10:
        return AttentionBackend.TRTLLM_MLA
    if x.plat == "cuda" and x.sm_major == 9:
        return AttentionBackend.FA3
    if x.plat == "cuda" and x.sm_major == 10:
        return AttentionBackend.FLASHINFER
    if x.plat == "hip":
        return AttentionBackend.AITER
    return AttentionBackend.TRITON


def _fixed_backend(name: AttentionBackend) -> Callable[[_BackendInput], AttentionBackend]:
    def backend(x: _BackendInput) -> AttentionBackend:
        del x
        return name

    return backend


#: each attention family's default-backend rule (DSA and DeepSeek-V4 have a backend of their own)
_DEFAULT_BACKEND: dict[Family, Callable[[_BackendInput], AttentionBackend]] = {
    Family.GQA: _gqa_backend,
    Family.MLA: _mla_backend,
    Family.DSA: _fixed_backend(AttentionBackend.DSA),
    Family.DSV4: _fixed_backend(AttentionBackend.DSV4),
}


def default_attention_backend(
    *,
    family: str,
    sm_major: int | None,
    vendor: str,
    deepseek_family: bool = False,
    has_asymmetric_kv: bool = False,
    has_attention_sinks: bool = False,
    speculative_eagle_topk: int | None = None,
) -> AttentionBackend:
    """Attention backend SGLang 0.5.23 picks when none is given.

    GQA/MHA: SM90 -> ``fa3``; SM100/SM103 -> ``trtllm_mha`` (``fa4`` if K and V widths differ);
    HIP -> ``aiter``; else ``flashinfer`` (``triton`` with attention sinks). EAGLE top-k > 1
    skips fa3/trtllm_mha. MLA: DeepSeek-family (V3/R1/Kimi-K2.5 ...) on SM100 -> ``trtllm_mla``
    (model override); SM90 -> ``fa3``; SM100 -> ``flashinfer``; HIP -> ``aiter``/``triton``;
    else (SM120, SM80) ``triton``. DSA -> ``dsa``; DeepSeek-V4 -> ``dsv4``.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/model_override_base.py
    ``get_default_attn_backend``; python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py
    ``_deepseek_family_overrides``, v0.5.23.
    """
    fam = _attention_family(family)
    return _DEFAULT_BACKEND[fam](
        _BackendInput(
            plat=_plat(vendor),
            sm_major=sm_major,
            topk_ok=speculative_eagle_topk is None or speculative_eagle_topk <= 1,
            has_asymmetric_kv=has_asymmetric_kv,
            has_attention_sinks=has_attention_sinks,
            deepseek_family=deepseek_family,
        )
    )


def _dsv4_page(*, plat: str, index_kpool: int, hip_dsa_preshuffle: bool) -> int | None:
    del index_kpool, hip_dsa_preshuffle
    return 128 if plat == "npu" else 256


def _dsa_page(*, plat: str, index_kpool: int, hip_dsa_preshuffle: bool) -> int | None:
    if plat == "xpu":
        return 128
    if plat == "hip" and not hip_dsa_preshuffle:
        return 1
    if plat in ("cuda", "hip", "musa"):
        return 64 * index_kpool
    return None  # NPU / CPU: the backend constraints below decide


#: pages a family's model override forces (None: fall through to the backend constraints)
_FORCED_PAGE: dict[Family, Callable[..., int | None]] = {Family.DSV4: _dsv4_page, Family.DSA: _dsa_page}


def _backend_page(
    *,
    names: set[AttentionBackend],
    backend: AttentionBackend,
    decode: AttentionBackend | None,
    requested: int | None,
) -> int | None:
    """``_mla_backend_page_constraints`` and the trtllm_mha / hpc_ops constraints."""
    page = requested
    if AttentionBackend.FLASHMLA in (backend, decode):
        page = 64
    if AttentionBackend.TRTLLM_MLA in (backend, decode) and page not in (32, 64):
        page = 64
    if AttentionBackend.CUTEDSL_MLA in names and page not in (32, 64):
        page = 64
    if AttentionBackend.TRTLLM_MHA in names and page not in (16, 32, 64, 128):
        page = 64
    if AttentionBackend.HPC_OPS in names and page != 64:
        page = 64
    return page


def default_page_size(q: PageQuery) -> int:
    """Page size SGLang 0.5.23 runs with, for the model / GPU / flags of ``q`` (:class:`PageQuery`).

    * DeepSeek-V4 family: 256 (128 on NPU), forced by the model override;
    * DSA (V3.2 / GLM-5): ``64 * index_kpool`` on CUDA and on ROCm with the aiter preshuffle
      path (else 1); 128 on XPU; forced by the model override;
    * otherwise start from ``requested`` and apply the backend constraints: flashmla -> 64;
      trtllm_mla / cutedsl_mla -> 64 unless 32/64; trtllm_mha -> 64 unless 16/32/64/128;
      hpc_ops -> 64; fa4 (non-MLA, SM100, EAGLE top-k <= 1) -> 128; intel_xpu -> 128 unless
      supported; then, if still unset, 1 (64 on MUSA or ROCm ``vectorized_5d``).
      ``--kv-cache-dtype nvfp4`` forces trtllm_mha decode, so 64.

    ``q.attention_backend=None`` means "the engine's default" (:func:`default_attention_backend`).
    Examples: Llama on H100 -> 1; Llama on B200 -> 64 (trtllm_mha); DeepSeek-V3 on B200 -> 64
    (trtllm_mla); DeepSeek-V3.2 -> 64; DeepSeek-V4 -> 256.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/overrides.py
    ``_mla_backend_page_constraints``, ``_fa4_page_constraint``, ``_intel_xpu_page_constraint``,
    ``_page_size_default``; python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py and
    deepseek_v4.py, v0.5.23.
    """
    family, attention_backend, sm_major, vendor, requested = (
        q.family,
        q.attention_backend,
        q.sm_major,
        q.vendor,
        q.requested,
    )
    index_kpool, hip_dsa_preshuffle, speculative_eagle_topk = (
        q.index_kpool,
        q.hip_dsa_preshuffle,
        q.speculative_eagle_topk,
    )
    fam = _attention_family(family)
    plat = _plat(vendor)
    forced = _FORCED_PAGE.get(fam)
    if forced is not None:
        page = forced(plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle)
        if page is not None:
            return page
    backend = attention_backend or default_attention_backend(
        family=fam,
        sm_major=sm_major,
        vendor=vendor,
        deepseek_family=q.deepseek_family,
        has_asymmetric_kv=q.has_asymmetric_kv,
        speculative_eagle_topk=speculative_eagle_topk,
    )
    decode = AttentionBackend.TRTLLM_MHA if dtype_of(q.kv_cache_dtype) is DType.NVFP4 else q.decode_attention_backend
    names = {n for n in (backend, decode, q.prefill_attention_backend) if n is not None}
    page = _backend_page(names=names, backend=backend, decode=decode, requested=requested)
    is_mla = fam == Family.MLA
    topk_ok = speculative_eagle_topk is None or speculative_eagle_topk <= 1
    if AttentionBackend.FA4 in names and not is_mla and plat == "cuda" and sm_major == 10 and topk_ok:
        page = 128
    if AttentionBackend.INTEL_XPU in names:
        ok = (64, 128, 16, 32) if is_mla else (64, 128)
        if page not in ok:
            page = 128
    if page is None:
        page = 64 if plat == "musa" or (plat == "hip" and q.hip_vectorized_5d) else 1
    return page


# --------------------------------------------------------------------------------------
# Tokens, request cap, context, PP, speculative
# --------------------------------------------------------------------------------------


def page_floor(*, tokens: int, page_size: int) -> int:
    """``tokens // page_size * page_size``. Example: 444,520 at page 64 -> 444,480.

    ``tokens`` may be a numpy integer array (``kvplan sweep``).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.calculate_pool_sizes``, v0.5.23.
    """
    if _any(page_size <= 0):
        raise InputError(f"page_size must be positive, got {page_size}", field="--page-size")
    return tokens // page_size * page_size


def pool_tokens(*, budget_bytes: int, cell_bytes: int, page_size: int, fixed_overhead_bytes: int = 0) -> int:
    """Tokens of a default (MHA/MLA/DSA) pool: ``page_floor(max(budget - fixed, 0) // cell)``.

    ``fixed_overhead_bytes`` is non-zero only with logical-page KV sharding. Example: budget
    58,264,237,847 B, cell 131,072 B, page 1 -> 444,520 tokens.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.calculate_pool_sizes``, v0.5.23.
    """
    if _any(cell_bytes <= 0):
        raise InputError(f"cell size must be positive, got {cell_bytes}", field="cell_bytes")
    avail = _maximum(budget_bytes - fixed_overhead_bytes, 0)
    return page_floor(tokens=avail // cell_bytes, page_size=page_size)


#: the bounds of SGLang 0.5.14+'s derived request cap ``clamp(int(tokens / context x 512), FLOOR, CEILING)``
#: (``KVCacheConfigurator.resolve_max_num_reqs``, v0.5.23)
REQUEST_CAP_FLOOR = 2048
REQUEST_CAP_CEILING = 4096


def requests_per_worker(*, requested: Any, attn_dp_size: int) -> Any:
    """A requested ``--max-running-requests`` as each attention-DP worker keeps it: ``max(1, R // attn_dp_size)``
    (ints or numpy arrays).  The one definition of the clamp; the token pool may lower it further
    (:func:`resolve_max_running_requests`).  Example: R = 1024 with DP 8 -> 128; R = 3 with DP 4 -> 1.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator.resolve_max_num_reqs`` (``max(1, max_running_requests // dp_size)``), v0.5.23.
    """
    return _maximum(1, requested // attn_dp_size)


def _mrr(*, total_tokens: int, context_len: int, requested: int | None, attn_dp_size: int) -> tuple[int, int | None]:
    if _any(context_len <= 0):
        raise InputError(f"context length must be positive, got {context_len}", field="--context-length")
    if _any(attn_dp_size <= 0):
        raise InputError(f"attn_dp_size must be positive, got {attn_dp_size}", field="--dp-size")
    estimated = _trunc_int(total_tokens / context_len * 512)
    estimated = _maximum(_minimum(estimated, REQUEST_CAP_CEILING), REQUEST_CAP_FLOOR)
    if requested is not None:
        per_worker = requests_per_worker(requested=requested, attn_dp_size=attn_dp_size)
        return _minimum(per_worker, total_tokens // 2), per_worker
    return _minimum(estimated, total_tokens // 2), None


def resolve_max_running_requests(
    *, total_tokens: int, context_len: int, requested: int | None, attn_dp_size: int
) -> int:
    """``max_running_requests`` per attention-DP worker (the value the scheduler prints).

    Formula::

        est = clamp(int(tokens / context_len * 512), 2048, 4096)
        requested R given: min(max(1, R // attn_dp_size), tokens // 2)
        otherwise:         min(est, tokens // 2)

    (Mamba hybrids further cap by the state-slot count; not here.) Examples: 903,439 tokens at
    131,072 context -> int(3529.1) = 3529; 46,611 tokens -> 2048; 3,000 tokens -> 1500;
    R = 1024 with DP 8 -> 128.

    ``total_tokens``, ``context_len`` and ``requested`` may be numpy integer arrays (``kvplan sweep``).

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator.resolve_max_num_reqs``, v0.5.23.
    """
    return _mrr(total_tokens=total_tokens, context_len=context_len, requested=requested, attn_dp_size=attn_dp_size)[0]


def max_running_requests_reduction(
    *, total_tokens: int, context_len: int, requested: int | None, attn_dp_size: int
) -> int | None:
    """The per-worker request count SGLang warns it reduced, or None when nothing was reduced.

    SGLang logs "max_running_requests was reduced from the requested R to N (per dp worker)"
    when ``N < max(1, R // attn_dp_size)``. Returns that ``max(1, R // attn_dp_size)``.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator.resolve_max_num_reqs``, v0.5.23.
    """
    value, per_worker = _mrr(
        total_tokens=total_tokens, context_len=context_len, requested=requested, attn_dp_size=attn_dp_size
    )
    if per_worker is not None and value < per_worker:
        return per_worker
    return None


def max_request_len(*, context_len: int, total_tokens: int) -> int:
    """Longest request (prompt + output) the server accepts: ``min(context_len - 1, tokens - 1)``.

    A pool smaller than the context only warns ("KV pool holds N tokens, fewer than
    --context-length C"); startup asserts ``max_req_len > 0``. The input limit is 5 less
    (:func:`max_request_input_len`). Example: 444,520 tokens, 131,072 context -> 131,071.
    Either argument may be a numpy integer array (``kvplan sweep``).

    Source: sgl-project/sglang python/sglang/srt/managers/tp_worker.py ``TpModelWorker.get_worker_info``, v0.5.23.
    """
    longest: int = _minimum(context_len - 1, total_tokens - 1)  # an int (an array in a sweep: _minimum is Any)
    return longest


def max_request_input_len(*, context_len: int, total_tokens: int) -> int:
    """``max_request_len - 5`` (dLLM models subtract their block size too).

    Source: sgl-project/sglang python/sglang/srt/managers/tp_worker.py ``TpModelWorker.get_worker_info``, v0.5.23.
    """
    return max_request_len(context_len=context_len, total_tokens=total_tokens) - 5


def speculative_cell(*, cell: int, draft_layers: int, num_layers: int) -> int:
    """Target cell plus an EAGLE/MTP/STANDALONE draft pool sharing the token count.

    Formula: ``cell + int(cell * draft_layers / num_layers)`` (the draft is assumed to have the
    target's per-layer size). Example: Llama-3.1-8B 131,072 B with a 1-layer EAGLE head ->
    131,072 + 4,096 = 135,168. SGLang's DSA draft price is
    :func:`kvplan.engines.sglang.pools.dsa.dsa_draft_bytes_per_token` (the DSA planner still applies this rule).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (EAGLE/STANDALONE branch), v0.5.23.
    """
    if num_layers <= 0 or draft_layers <= 0:
        return cell
    return cell + int(cell * draft_layers / num_layers)


def aiter_mem_fraction_static(
    *,
    mem_fraction_static: float,
    attention_backend: AttentionBackend | None,
    context_len: int,
    user_set: bool = True,
    honor_explicit_env: bool = False,
) -> float:
    """``mem_fraction_static`` after the ROCm ``aiter`` adjustment (applies to user values too).

    Formula: ``mfs * 0.85`` when the attention backend is ``aiter`` and ``context_len > 8192``,
    unless the user set mfs and ``SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION`` is on. ``aiter`` is
    the default for GQA models on ROCm. Example: 0.9 with a 131,072 context -> 0.765.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/attention_hook.py
    ``handle_attention_backend_compatibility``, v0.5.23.
    """
    if attention_backend == AttentionBackend.AITER and context_len > 8192:
        if user_set and honor_explicit_env:
            return mem_fraction_static
        return mem_fraction_static * 0.85
    return mem_fraction_static
