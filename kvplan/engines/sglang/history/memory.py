"""SGLang's memory defaults before 0.5.23, by release: ``mem_fraction_static`` ladders, the chunked-prefill and
CUDA-graph batch defaults by :class:`MemoryEra`, the multimodal reserve factors.

Part of :mod:`kvplan.engines.sglang.history` (see its docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kvplan.engines.sglang import rules as newest
from kvplan.engines.sglang.mem_query import MemQuery, PrefillGraphQuery
from kvplan.engines.sglang.platform import platform_of
from kvplan.errors import EngineRefusal

# ================================================================================================
# Default mem_fraction_static before 0.5.3 (python/sglang/srt/server_args.py ServerArgs.__post_init__)
# ================================================================================================


def tp_ladder_mem_fraction(*, parallel_size: int, tp8_fraction: float) -> float:
    """The fixed ladder SGLang used before it looked at GPU memory.

    ``>= 16: 0.79; >= 8: tp8_fraction (0.83 in 0.3.0-0.3.5, 0.82 in 0.3.6, 0.81 from 0.4.0); >= 4: 0.85;
    >= 2: 0.87; else 0.88``.  ``parallel_size`` is tp (tp x pp from 0.4.6.post2).
    Example: TP8 under 0.3.0 -> 0.83; under 0.4.0 -> 0.81; TP1 -> 0.88 on any GPU.

    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs.__post_init__`` (block
    ``if self.mem_fraction_static is None``), wheels 0.3.0, 0.3.6, 0.4.0 - 0.4.5.post2.
    """
    if parallel_size >= 16:
        return 0.79
    if parallel_size >= 8:
        return tp8_fraction
    if parallel_size >= 4:
        return 0.85
    if parallel_size >= 2:
        return 0.87
    return 0.88


def mfs_tp_ladder(q: MemQuery, *, tp8_fraction: float) -> float:
    """0.3.0 - 0.4.5.post2: :func:`tp_ladder_mem_fraction` of tp; GPU memory is not an input.

    Example: Llama-3.1-8B TP1 on an H100 under 0.4.4 -> 0.88.  Source: server_args.py ``__post_init__``, wheels
    0.3.0 - 0.4.5.post2.
    """
    return tp_ladder_mem_fraction(parallel_size=q.tp_size, tp8_fraction=tp8_fraction)


def mfs_ladder_13g(q: MemQuery) -> float:
    """0.4.5.post3 - 0.4.6.post1: the tp ladder up to 81,920 MiB, else ``(gpu - 13 x 1024) / gpu`` (not rounded).

    Example: H200 (143,771 MiB) TP8 -> (143,771 - 13,312) / 143,771 = 0.90741; H100 (81,559 MiB) TP8 -> 0.81.
    Source: server_args.py ``ServerArgs.__post_init__`` (``if gpu_mem <= 81920``), wheels 0.4.5.post3, 0.4.6.post1.
    """
    gpu_memory_mib, tp_size = q.gpu_memory_mib, q.tp_size
    if gpu_memory_mib is None or gpu_memory_mib <= 81920:
        return tp_ladder_mem_fraction(parallel_size=tp_size, tp8_fraction=0.81)
    return (gpu_memory_mib - 1024 * 13) / gpu_memory_mib


def mfs_ladder_48g(q: MemQuery, *, b200_079: bool = False) -> float:
    """0.4.6.post2 - 0.4.7: the ladder of tp x pp up to 81,920 MiB (0.88 above), then for GPUs over 96 GiB::

        m = min(m + 48 x 1024 x (1 - m) / gpu, (gpu - R) / gpu)      R = 18 x 1024 (20 x 1024 with speculative, 0.4.7)

    0.4.7 (``b200_079``) first takes ``gpu > 180,000 -> 0.79`` and multiplies the value by 0.95 with speculative
    decoding on GPUs up to 96 GiB.  Example: H200 (143,771 MiB) TP8 -> min(0.88 + 49,152 x 0.12 / 143,771,
    (143,771 - 18,432) / 143,771) = min(0.92103, 0.87180) = 0.87180.

    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.4.6.post2, 0.4.6.post5, 0.4.7.
    """
    p = q.tp_size * q.pp_size
    gpu, speculative_algorithm = q.gpu_memory_mib, q.speculative_algorithm
    m = tp_ladder_mem_fraction(parallel_size=p, tp8_fraction=0.81) if gpu is None or gpu <= 81920 else 0.88
    if b200_079 and gpu is not None and gpu > 180_000:
        return 0.79
    if gpu is not None and gpu > 96 * 1024:
        reserve = 1024 * 20 if (b200_079 and speculative_algorithm) else 1024 * 18
        return min(m + 48 * 1024 * (1 - m) / gpu, (gpu - reserve) / gpu)
    if b200_079 and speculative_algorithm:
        return m * 0.95
    return m


def reserved_bucket_mib(*, gpu_memory_mib: int, parallel_size: int) -> float:
    """0.4.7.post1 - 0.5.2: MiB kept back for activations and CUDA graphs, by GPU size.

    ``< 35 GiB: (2.8 + P / 10) x 1024`` (the < 20 and < 35 GiB buckets are the same);
    ``< 90 GiB: (9.5 + P / 2) x 1024``; ``< 160 GiB: (12 + P / 2) x 1024``; else ``32 x 1024``.
    Example: RTX 5080 (16,303 MiB) TP1 -> 2,969.6;
    H100 (81,559 MiB) TP1 -> 10,240.

    Source: server_args.py ``ServerArgs.__post_init__`` (``reserved_mem`` buckets), wheels 0.4.7.post1 - 0.5.2.
    """
    if gpu_memory_mib < 35 * 1024:
        return (2.8 + parallel_size / 10) * 1024
    if gpu_memory_mib < 90 * 1024:
        return (9.5 + parallel_size / 2) * 1024
    if gpu_memory_mib < 160 * 1024:
        return (12 + parallel_size / 2) * 1024
    return 32 * 1024


def mfs_reserved_buckets(q: MemQuery, *, standalone_mib: int = 0) -> float:
    """0.4.7.post1 - 0.5.2: ``round((gpu - reserved) / gpu, 3)``; 0.88 when the GPU memory is unknown.

    ``reserved`` = :func:`reserved_bucket_mib` ``+ 2048`` with speculative decoding (``standalone_mib``, 6,144 from
    0.5.2, for STANDALONE) ``+ 4096`` with DP attention.  Examples: H100 TP1: round((81,559 - 10,240) / 81,559, 3)
    = 0.874; RTX 5080 TP1: round((16,303 - 2,969.6) / 16,303, 3) = 0.818.

    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.4.7.post1, 0.4.10, 0.5.1.post3, 0.5.2.
    """
    gpu_memory_mib, tp_size, pp_size, speculative_algorithm = (
        q.gpu_memory_mib,
        q.tp_size,
        q.pp_size,
        q.speculative_algorithm,
    )
    attn_dp_size = q.attn_dp_size
    if gpu_memory_mib is None:
        return 0.88
    reserved = reserved_bucket_mib(gpu_memory_mib=gpu_memory_mib, parallel_size=tp_size * pp_size)
    if speculative_algorithm:
        reserved += standalone_mib if (standalone_mib and speculative_algorithm == "STANDALONE") else 2 * 1024
    if attn_dp_size > 1:
        reserved += 4 * 1024
    return round((gpu_memory_mib - reserved) / gpu_memory_mib, 3)


# ================================================================================================
# 0.5.3 - 0.5.19: ServerArgs._handle_gpu_memory_settings
# ================================================================================================


@dataclass(frozen=True)
class MemoryEra:
    """What ``_handle_gpu_memory_settings`` did in one range of releases (data; the functions below read it)."""

    cps_20_35: int = 2048  # chunked prefill on a 20 - 35 GiB GPU (4096 from 0.5.20)
    bs_20_35: int = 16  # decode CUDA-graph max bs there at tp < 4 (24 from 0.5.5, 48 from 0.5.20)
    bs_20_35_tp4: int = 80  # ... at tp >= 4 (160 from 0.5.20)
    prefill_graph: bool = False  # the prefill (piecewise) graph is on by default and reserved for (0.5.10+)
    prefill_context_cap: bool = False  # its max tokens are capped by --context-length (0.5.13 - 0.5.16)
    spec_mib: int = 2048  # reserve for EAGLE-like speculative decoding (4096 in 0.5.10-0.5.13, 0 after)
    standalone_mib: int = 6144  # reserve for STANDALONE (0 from 0.5.14)
    graph_gated: bool = False  # the decode-graph reserve needs decode graphs on (0.5.15+)
    mrr_caps_bs: bool = False  # an unset decode max bs is capped at --max-running-requests (0.5.22+)
    fallback: float = 0.88  # mem_fraction_static when the GPU memory is unknown (0.95 from 0.5.20)


def memory_settings_cps(*, era: MemoryEra, gpu_memory_mib: int | None, tp_size: int = 1) -> int:
    """``--chunked-prefill-size`` when unset, 0.5.3+: ``< 20 GiB 2048; < 35 GiB era.cps_20_35; < 60 GiB 4096;
    < 160 GiB 8192; else 16384``; 4096 when the GPU memory is unknown.  Example: RTX 4090 (24,564 MiB) under 0.5.5
    -> 2048, under 0.5.20 -> 4096.  Source: server_args.py ``ServerArgs._handle_gpu_memory_settings``, wheels
    0.5.3 - 0.5.18; arg_groups/memory_hook.py ``handle_gpu_memory_settings``, 0.5.19+.  (``tp_size``: the slot's
    signature, :attr:`RuleSet.default_chunked_prefill_size`; these releases do not read it.)
    """
    del tp_size
    g = gpu_memory_mib
    if g is None:
        return 4096
    if g < 20 * 1024:
        return 2048
    if g < 35 * 1024:
        return era.cps_20_35
    if g < 60 * 1024:
        return 4096
    return 8192 if g < 160 * 1024 else 16384


def memory_settings_bs(
    *, era: MemoryEra, gpu_memory_mib: int | None, tp_size: int, max_running_requests: int | None = None
) -> int:
    """Decode CUDA-graph max bs when unset, 0.5.3+: ``< 20 GiB 8; < 35 GiB era.bs_20_35 (tp >= 4: era.bs_20_35_tp4);
    < 60 GiB 32 / 160; < 160 GiB 256 / 512; else 512``; 160 when unknown; from 0.5.22 capped at
    ``--max-running-requests``.  Example: RTX 4090 TP1 -> 16 (0.5.3), 24 (0.5.5), 48 (0.5.20).
    Source: as :func:`memory_settings_cps`.
    """
    g, small = gpu_memory_mib, tp_size < 4
    if g is None:
        bs = 160
    elif g < 20 * 1024:
        bs = 8
    elif g < 35 * 1024:
        bs = era.bs_20_35 if small else era.bs_20_35_tp4
    elif g < 60 * 1024:
        bs = 32 if small else 160
    else:
        bs = (256 if small else 512) if g < 160 * 1024 else 512
    if era.mrr_caps_bs and max_running_requests is not None and bs > max_running_requests:
        bs = max_running_requests
    return bs


def piecewise_graph_0510(q: PrefillGraphQuery) -> bool:
    """0.5.10 - 0.5.13: the piecewise prefill CUDA graph is on unless ``_handle_piecewise_cuda_graph`` turns it off:
    speculative decoding, DP attention, PP > 1, a non-CUDA device, multimodal models (and LoRA, torch.compile, PD,
    ... that kvplan does not model).  Example: Llama TP1 on CUDA -> True; with EAGLE -> False.  ``q.dcp_size``,
    ``q.disable_cuda_graph`` and ``q.is_deepseek_v4`` are not read by this rule.

    Source: server_args.py ``ServerArgs._handle_piecewise_cuda_graph``, wheel 0.5.10.
    """
    return (
        platform_of(q.vendor) == "cuda"
        and q.pp_size == 1
        and q.attn_dp_size == 1
        and not q.speculative_algorithm
        and not q.is_multimodal
    )


def _no_prefill_graph(q: PrefillGraphQuery) -> bool:
    """Before 0.5.10 there is no prefill CUDA graph (nothing of ``q`` is read)."""
    del q
    return False


def _prefill_max_tokens(
    *, era: MemoryEra, cps: int, max_total_tokens: int | None, context_length: int | None, model_path: str
) -> int:
    pbs = cps
    if max_total_tokens is not None:
        pbs = min(pbs, max_total_tokens)
    if "llama-2" in model_path.lower():
        pbs = min(pbs, 4096)
    if era.prefill_context_cap and context_length is not None:
        pbs = min(pbs, context_length)
    return pbs


def memory_settings_mfs(q: MemQuery, *, era: MemoryEra) -> float:
    """Default ``mem_fraction_static`` of the deployment in ``q`` (:class:`~kvplan.engines.sglang.mem_query
    .MemQuery`) under memory era ``era``, 0.5.3 - 0.5.19. In MiB::

        reserved = 512 + 1.5 x max(cps, 2048) + 2 x max_bs + tp x pp / 8 x 1024
                 + 3 x max_bs x dp (+ 1.5 x max_bs x dp above bs 300)       DP attention
                 + 8 x len(prefill buckets)  (MLA: 1,536)                   prefill graph on (0.5.10+)
        reserved = max(reserved, 10,240)  if gpu > 60 GiB
        reserved += 2,048 speculative (4,096 in 0.5.10 - 0.5.13; STANDALONE 6,144; NGRAM 0; none from 0.5.14)
        mfs = round((gpu - reserved) / gpu, 3)          (0.88 when the GPU memory is unknown)

    Worked example, Llama-3.1-8B TP1 on an RTX 4090 (24,564 MiB) under 0.5.5 (cps 2048, bs 24, no prefill graph):
    512 + 3,072 + 48 + 128 = 3,760 -> round(20,804 / 24,564, 3) = 0.847.

    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs._handle_gpu_memory_settings``, wheels
    0.5.3 - 0.5.18 (``reserve_for_graph_mb`` from 0.5.16); arg_groups/memory_hook.py, 0.5.19.
    """
    gpu_memory_mib, tp_size, pp_size, chunked_prefill_size, cuda_graph_max_bs = (
        q.gpu_memory_mib,
        q.tp_size,
        q.pp_size,
        q.chunked_prefill_size,
        q.cuda_graph_max_bs,
    )
    is_mla, attn_dp_size, disable_cuda_graph, prefill_cuda_graph = (
        q.is_mla,
        q.attn_dp_size,
        q.disable_cuda_graph,
        q.prefill_cuda_graph,
    )
    max_total_tokens, context_length, model_path = q.max_total_tokens, q.context_length, q.model_path
    speculative_algorithm, max_prefill_tokens, max_running_requests = (
        q.speculative_algorithm,
        q.max_prefill_tokens,
        q.max_running_requests,
    )
    cps = (
        chunked_prefill_size
        if chunked_prefill_size is not None
        else memory_settings_cps(era=era, gpu_memory_mib=gpu_memory_mib)
    )
    bs = (
        cuda_graph_max_bs
        if cuda_graph_max_bs is not None
        else memory_settings_bs(
            era=era, gpu_memory_mib=gpu_memory_mib, tp_size=tp_size, max_running_requests=max_running_requests
        )
    )
    act = max(cps, 2048) if cps > 0 else max(max_prefill_tokens, 2048)
    reserved = 512 + act * 1.5 + tp_size * pp_size / 8 * 1024
    if not (era.graph_gated and disable_cuda_graph):
        reserved += bs * 2
    if attn_dp_size > 1:
        reserved += bs * attn_dp_size * 3 + (bs * attn_dp_size * 1.5 if bs > 300 else 0)
    if era.prefill_graph and prefill_cuda_graph:
        pbs = _prefill_max_tokens(
            era=era, cps=cps, max_total_tokens=max_total_tokens, context_length=context_length, model_path=model_path
        )
        reserved += 1.5 * 1024 if is_mla else 8 * len(newest.prefill_cuda_graph_buckets(max_bs=pbs))
    if gpu_memory_mib is not None and gpu_memory_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative_algorithm == "STANDALONE":
        reserved += era.standalone_mib
    elif speculative_algorithm and speculative_algorithm != "NGRAM":
        reserved += era.spec_mib
    if gpu_memory_mib is None:
        return era.fallback
    if gpu_memory_mib <= reserved:
        raise EngineRefusal(
            f"SGLang's default reserve of {reserved:,.0f} MiB leaves nothing of a {gpu_memory_mib:,} "
            f"MiB GPU (tp {tp_size} x pp {pp_size})",
            field="--gpu-memory",
            hint="use a larger GPU or fewer tp x pp ranks, or set --mem-fraction-static",
        )
    return round((gpu_memory_mib - reserved) / gpu_memory_mib, 3)


# ================================================================================================
# Chunked prefill and CUDA-graph defaults before 0.5.3
# ================================================================================================


def cps_before_0_5_3(
    *,
    gpu_memory_mib: int | None,
    tp_size: int = 1,
    small_mib: int = 0,
    b200_16k: bool = False,
    buckets_35_160: bool = False,
) -> int:
    """``--chunked-prefill-size`` when unset, before 0.5.3.

    * 0.3.0 - 0.3.5: 8192 (``small_mib`` 0);
    * 0.3.6 - 0.4.7: ``gpu < 25,000 MiB -> 2048`` (``small_mib`` 25,000), else 8192; 0.4.7 (``b200_16k``):
      ``gpu > 180,000 -> 16384`` first;
    * 0.4.7.post1 - 0.5.2 (``buckets_35_160``): ``< 35 GiB 2048; < 160 GiB 8192; else 16384``; 4096 if unknown.

    Example: L4 (23,034 MiB) under 0.4.4 -> 2048; H100 -> 8192; B200 (183,359 MiB) under 0.4.7 -> 16384.
    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.3.0, 0.3.6, 0.4.0, 0.4.7, 0.4.7.post1.
    (``tp_size``: the slot's signature; not read before 0.5.3.)
    """
    del tp_size
    g = gpu_memory_mib
    if buckets_35_160:
        if g is None:
            return 4096
        return 2048 if g < 35 * 1024 else 8192 if g < 160 * 1024 else 16384
    if b200_16k and g is not None and g > 180_000:
        return 16384
    if small_mib and g is not None and g < small_mib:
        return 2048
    return 8192


def bs_before_0_5_3(
    *,
    gpu_memory_mib: int | None,
    tp_size: int,
    max_running_requests: int | None = None,
    small_mib: int = 25_000,
    small_bs: int = 8,
    small_bs_tp4: int = 8,
    large_bs: int | None = 160,
) -> int | None:
    """``--cuda-graph-max-bs`` when unset, before 0.5.3 (None: the CUDA-graph runner's own list decides).

    * 0.3.0 - 0.3.4: None (no such flag); 0.3.5: 160; 0.3.6: ``< 25,000 MiB -> 4``, else 160;
    * 0.4.0: ``< 25,000 -> 8`` else 160; 0.4.0.post2 - 0.4.5.post2: ``< 25,000 -> 8 (tp >= 4: 80)`` else 160;
    * 0.4.5.post3 - 0.4.7: the small-GPU branch only (else None); 0.4.7.post1 - 0.5.2: the same below 35 GiB.

    The value only feeds the default mem_fraction_static from 0.5.3, so before that it is reported, not priced.
    Example: L4 TP4 under 0.4.4 -> 80; H100 under 0.4.7.post1 -> None (the runner captures up to 160).
    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.3.5, 0.3.6, 0.4.0, 0.4.0.post2, 0.4.5.post3,
    0.4.7.post1.  (``max_running_requests``: the slot's signature; not read before 0.5.22.)
    """
    del max_running_requests
    if gpu_memory_mib is not None and small_mib and gpu_memory_mib < small_mib:
        return small_bs if tp_size < 4 else small_bs_tp4
    return large_bs


# ================================================================================================
# Multimodal factors
# ================================================================================================


def runner_multimodal_factor(*, mem_fraction_static: float, is_multimodal: bool = False, factor: float = 1.0) -> float:
    """ModelRunner's cut for multimodal models, applied to every value (the user's too), up to 0.4.8.

    ``mfs x factor`` for a multimodal model: 0.95 (0.3.0 - 0.4.4.post3), 0.90 (0.4.4.post4 - 0.4.8).
    Example: 0.88 -> 0.836 under 0.4.4; 0.9 -> 0.81 under 0.4.8.
    Source: python/sglang/srt/model_executor/model_runner.py ``ModelRunner.__init__`` (``self.mem_fraction_static
    *= 0.95`` / ``*= 0.90``), wheels 0.3.0, 0.4.4, 0.4.4.post4, 0.4.8.
    """
    return mem_fraction_static * factor if is_multimodal else mem_fraction_static


def vlm_default_factor(
    *,
    mem_fraction_static: float,
    is_multimodal: bool = False,
    vision_config: Mapping[str, Any] | None = None,
    fixed: float | None = None,
) -> float:
    """The cut of the *default* mem_fraction_static for multimodal models, 0.4.9 - 0.5.19.

    0.4.9 - 0.4.9.post5 (``fixed`` 0.90): ``mfs x 0.90``.  0.4.9.post6+: ``adjust_mem_fraction_for_vlm``, only when the
    config has a ``vision_config``::

        ratio  = vit_layers x vit_hidden^2 / (24 x 1024^2)         (defaults 24 and 1024)
        mfs   *= 0.95 x clamp(1 - 0.1 x (ratio - 1), 0.8, 1.05)

    Example: a ViT-L (24 x 1024) -> x 0.95; a 32-layer 1280-wide tower (ratio 2.083) -> x 0.95 x 0.8917 = x 0.8471.
    Source: server_args.py ``ServerArgs.__post_init__`` (0.4.9) and ``ServerArgs.adjust_mem_fraction_for_vlm``
    (0.4.9.post6 - 0.5.18); arg_groups/memory_hook.py ``adjust_mem_fraction_for_vlm`` (0.5.19).
    """
    if not is_multimodal:
        return mem_fraction_static
    if fixed is not None:
        return mem_fraction_static * fixed
    if not vision_config:
        return mem_fraction_static
    # Kimi-K2.5's KimiK25VisionConfig (configs/kimi_k25.py) reads its tower as vt_num_hidden_layers / vt_hidden_size
    layers = vision_config.get("num_hidden_layers", vision_config.get("vt_num_hidden_layers", 24))
    hidden = vision_config.get("hidden_size", vision_config.get("vt_hidden_size", 1024))
    ratio = layers * hidden**2 / (24 * 1024**2)
    adjusted: float = mem_fraction_static * (0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0))))  # config values
    return adjusted


def no_multimodal_reserve(*, is_multimodal: bool, mm_feature_transport: str = "cpu") -> int:
    """Before 0.5.18 nothing is taken out of the KV budget for multimodal caches (0 B; the keywords: the slot's
    signature, :func:`rules.multimodal_reserve_bytes`'s, none read).

    Source: mem_cache/kv_cache_configurator.py ``mm_runtime_reservation_gb`` first appears in wheel 0.5.18.
    """
    del is_multimodal, mm_feature_transport
    return 0


# ================================================================================================
# Page size before 0.5.3
# ================================================================================================


#: architectures whose own model override picks ``trtllm_mha`` on SM100 when no attention backend is given, from
#: 0.5.0rc2 (server_args.py ``model_specific_adjustments`` / ``_handle_model_specific_adjustments``, GptOssForCausalLM
#: branch: ``if is_sm100_supported(): self.attention_backend = "trtllm_mha"``); kvplan applies it from 0.4.9.post6
#: (0.4.9.post6 - 0.4.10 have no GPT-OSS model: models/gpt_oss.py first ships in 0.5.0rc2)
TRTLLM_MHA_SM100_ARCHS = frozenset({"GptOssForCausalLM"})


# ================================================================================================
# The windows
# ================================================================================================

_ERA_053 = MemoryEra()
_ERA_055 = replace(_ERA_053, bs_20_35=24)
_ERA_0510 = replace(_ERA_055, prefill_graph=True, spec_mib=4096)
_ERA_0513 = replace(_ERA_0510, prefill_context_cap=True)
_ERA_0514 = replace(_ERA_0513, spec_mib=0, standalone_mib=0)
_ERA_0515 = replace(_ERA_0514, graph_gated=True)
_ERA_0517 = replace(_ERA_0515, prefill_context_cap=False)
