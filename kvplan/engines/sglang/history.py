"""The sizing rules of SGLang releases 0.3.0 - 0.5.22, and the table of release windows built from them.

Loaded only when a plan names an older release (``--engine-version``): ``kvplan fit`` with the default release never
imports it (start-up is a feature).  :data:`_CHANGES` is the table: one row per release where a sizing rule changed,
each holding what changed; :func:`build_windows` walks it from the oldest rule set (:data:`_OLDEST`, SGLang 0.3.0)
and each row starts a window that ends before the next row.  Every function is pure and keyword-only, states its
formula with a worked example and cites the wheel it was read from (``pip download --no-deps sglang==X``, paths
inside the wheel under python/sglang/srt); docs/sglang.md "What changed by release" is the same table in prose.

The default-flag functions take the planner's whole keyword set (``**_``) and ignore what their release did not
read.  The request-cap functions accept ints or numpy arrays (``kvplan sweep``), like ``rules``.  Data rows: the
memory heuristic by :class:`MemoryEra`, the page default by :class:`PageEra` (0.5.3 - 0.5.22), and the hybrid-SWA /
Mamba values (``hybrid_swa_archs`` from :data:`_SWA_ADDED`, ``swa_disabled_archs``, ``swa_split``,
``mamba_cache_sizing``, ``mamba_full_memory_ratio``, ``mamba_fallback_slots``) the pool planners read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from types import MappingProxyType
from typing import Any

from kvplan.engines.sglang import rules as r0523
from kvplan.engines.sglang.platform import platform_of
from kvplan.engines.sglang.releases import (
    RELEASE_DATES,
    SGLANG_0_5_23,
    SWA_DISABLED_0523,
    FamilyOverride,
    PoolRules,
    ReleaseWindow,
    _bs_0523,
    _cps_0523,
    _identity_factor,
    _mfs_0523,
    _prefill_0523,
    qwen3_next_sm100_page,
    version_key,
)
from kvplan.engines.sglang.rules import _any, _maximum, _minimum, _trunc_int
from kvplan.errors import InputError
from kvplan.family import Family

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


def mfs_tp_ladder(*, tp_size: int, tp8_fraction: float, **_: Any) -> float:
    """0.3.0 - 0.4.5.post2: :func:`tp_ladder_mem_fraction` of tp; GPU memory is not an input.

    Example: Llama-3.1-8B TP1 on an H100 under 0.4.4 -> 0.88.  Source: server_args.py ``__post_init__``, wheels
    0.3.0 - 0.4.5.post2.
    """
    return tp_ladder_mem_fraction(parallel_size=tp_size, tp8_fraction=tp8_fraction)


def mfs_ladder_13g(*, gpu_memory_mib: int | None, tp_size: int, **_: Any) -> float:
    """0.4.5.post3 - 0.4.6.post1: the tp ladder up to 81,920 MiB, else ``(gpu - 13 x 1024) / gpu`` (not rounded).

    Example: H200 (143,771 MiB) TP8 -> (143,771 - 13,312) / 143,771 = 0.90741; H100 (81,559 MiB) TP8 -> 0.81.
    Source: server_args.py ``ServerArgs.__post_init__`` (``if gpu_mem <= 81920``), wheels 0.4.5.post3, 0.4.6.post1.
    """
    if gpu_memory_mib is None or gpu_memory_mib <= 81920:
        return tp_ladder_mem_fraction(parallel_size=tp_size, tp8_fraction=0.81)
    return (gpu_memory_mib - 1024 * 13) / gpu_memory_mib


def mfs_ladder_48g(
    *,
    gpu_memory_mib: int | None,
    tp_size: int,
    pp_size: int,
    speculative_algorithm: str = "",
    b200_079: bool = False,
    **_: Any,
) -> float:
    """0.4.6.post2 - 0.4.7: the ladder of tp x pp up to 81,920 MiB (0.88 above), then for GPUs over 96 GiB::

        m = min(m + 48 x 1024 x (1 - m) / gpu, (gpu - R) / gpu)      R = 18 x 1024 (20 x 1024 with speculative, 0.4.7)

    0.4.7 (``b200_079``) first takes ``gpu > 180,000 -> 0.79`` and multiplies the value by 0.95 with speculative
    decoding on GPUs up to 96 GiB.  Example: H200 (143,771 MiB) TP8 -> min(0.88 + 49,152 x 0.12 / 143,771,
    (143,771 - 18,432) / 143,771) = min(0.92103, 0.87180) = 0.87180.

    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.4.6.post2, 0.4.6.post5, 0.4.7.
    """
    p = tp_size * pp_size
    gpu = gpu_memory_mib
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


def mfs_reserved_buckets(
    *,
    gpu_memory_mib: int | None,
    tp_size: int,
    pp_size: int,
    attn_dp_size: int = 1,
    speculative_algorithm: str = "",
    standalone_mib: int = 0,
    **_: Any,
) -> float:
    """0.4.7.post1 - 0.5.2: ``round((gpu - reserved) / gpu, 3)``; 0.88 when the GPU memory is unknown.

    ``reserved`` = :func:`reserved_bucket_mib` ``+ 2048`` with speculative decoding (``standalone_mib``, 6,144 from
    0.5.2, for STANDALONE) ``+ 4096`` with DP attention.  Examples: H100 TP1: round((81,559 - 10,240) / 81,559, 3)
    = 0.874; RTX 5080 TP1: round((16,303 - 2,969.6) / 16,303, 3) = 0.818.

    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.4.7.post1, 0.4.10, 0.5.1.post3, 0.5.2.
    """
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


def memory_settings_cps(*, era: MemoryEra, gpu_memory_mib: int | None, **_: Any) -> int:
    """``--chunked-prefill-size`` when unset, 0.5.3+: ``< 20 GiB 2048; < 35 GiB era.cps_20_35; < 60 GiB 4096;
    < 160 GiB 8192; else 16384``; 4096 when the GPU memory is unknown.  Example: RTX 4090 (24,564 MiB) under 0.5.5
    -> 2048, under 0.5.20 -> 4096.  Source: server_args.py ``ServerArgs._handle_gpu_memory_settings``, wheels
    0.5.3 - 0.5.18; arg_groups/memory_hook.py ``handle_gpu_memory_settings``, 0.5.19+.
    """
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
    *, era: MemoryEra, gpu_memory_mib: int | None, tp_size: int, max_running_requests: int | None = None, **_: Any
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


def piecewise_graph_0510(
    *,
    vendor: str = "nvidia",
    pp_size: int = 1,
    attn_dp_size: int = 1,
    speculative_algorithm: str = "",
    is_multimodal: bool = False,
    **_: Any,
) -> bool:
    """0.5.10 - 0.5.13: the piecewise prefill CUDA graph is on unless ``_handle_piecewise_cuda_graph`` turns it off:
    speculative decoding, DP attention, PP > 1, a non-CUDA device, multimodal models (and LoRA, torch.compile, PD,
    ... that kvplan does not model).  Example: Llama TP1 on CUDA -> True; with EAGLE -> False.

    Source: server_args.py ``ServerArgs._handle_piecewise_cuda_graph``, wheel 0.5.10.
    """
    return (
        platform_of(vendor) == "cuda"
        and pp_size == 1
        and attn_dp_size == 1
        and not speculative_algorithm
        and not is_multimodal
    )


def _no_prefill_graph(**_: Any) -> bool:
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


def memory_settings_mfs(
    *,
    era: MemoryEra,
    gpu_memory_mib: int | None,
    tp_size: int,
    pp_size: int,
    chunked_prefill_size: int | None = None,
    cuda_graph_max_bs: int | None = None,
    is_mla: bool = False,
    attn_dp_size: int = 1,
    disable_cuda_graph: bool = False,
    prefill_cuda_graph: bool | None = None,
    max_total_tokens: int | None = None,
    context_length: int | None = None,
    model_path: str = "",
    speculative_algorithm: str = "",
    max_prefill_tokens: int = 16384,
    max_running_requests: int | None = None,
    **_: Any,
) -> float:
    """Default ``mem_fraction_static``, 0.5.3 - 0.5.19. In MiB::

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
        reserved += 1.5 * 1024 if is_mla else 8 * len(r0523.prefill_cuda_graph_buckets(max_bs=pbs))
    if gpu_memory_mib is not None and gpu_memory_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative_algorithm == "STANDALONE":
        reserved += era.standalone_mib
    elif speculative_algorithm and speculative_algorithm != "NGRAM":
        reserved += era.spec_mib
    if gpu_memory_mib is None:
        return era.fallback
    if gpu_memory_mib <= reserved:
        raise InputError(
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
    *, gpu_memory_mib: int | None, small_mib: int = 0, b200_16k: bool = False, buckets_35_160: bool = False, **_: Any
) -> int:
    """``--chunked-prefill-size`` when unset, before 0.5.3.

    * 0.3.0 - 0.3.5: 8192 (``small_mib`` 0);
    * 0.3.6 - 0.4.7: ``gpu < 25,000 MiB -> 2048`` (``small_mib`` 25,000), else 8192; 0.4.7 (``b200_16k``):
      ``gpu > 180,000 -> 16384`` first;
    * 0.4.7.post1 - 0.5.2 (``buckets_35_160``): ``< 35 GiB 2048; < 160 GiB 8192; else 16384``; 4096 if unknown.

    Example: L4 (23,034 MiB) under 0.4.4 -> 2048; H100 -> 8192; B200 (183,359 MiB) under 0.4.7 -> 16384.
    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.3.0, 0.3.6, 0.4.0, 0.4.7, 0.4.7.post1.
    """
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
    small_mib: int = 25_000,
    small_bs: int = 8,
    small_bs_tp4: int = 8,
    large_bs: int | None = 160,
    **_: Any,
) -> int | None:
    """``--cuda-graph-max-bs`` when unset, before 0.5.3 (None: the CUDA-graph runner's own list decides).

    * 0.3.0 - 0.3.4: None (no such flag); 0.3.5: 160; 0.3.6: ``< 25,000 MiB -> 4``, else 160;
    * 0.4.0: ``< 25,000 -> 8`` else 160; 0.4.0.post2 - 0.4.5.post2: ``< 25,000 -> 8 (tp >= 4: 80)`` else 160;
    * 0.4.5.post3 - 0.4.7: the small-GPU branch only (else None); 0.4.7.post1 - 0.5.2: the same below 35 GiB.

    The value only feeds the default mem_fraction_static from 0.5.3, so before that it is reported, not priced.
    Example: L4 TP4 under 0.4.4 -> 80; H100 under 0.4.7.post1 -> None (the runner captures up to 160).
    Source: server_args.py ``ServerArgs.__post_init__``, wheels 0.3.5, 0.3.6, 0.4.0, 0.4.0.post2, 0.4.5.post3,
    0.4.7.post1.
    """
    if gpu_memory_mib is not None and small_mib and gpu_memory_mib < small_mib:
        return small_bs if tp_size < 4 else small_bs_tp4
    return large_bs


# ================================================================================================
# Multimodal factors
# ================================================================================================


def runner_multimodal_factor(
    *, mem_fraction_static: float, is_multimodal: bool = False, factor: float = 1.0, **_: Any
) -> float:
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
    **_: Any,
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
    return mem_fraction_static * (0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0))))


def no_multimodal_reserve(**_: Any) -> int:
    """Before 0.5.18 nothing is taken out of the KV budget for multimodal caches (0 B).

    Source: mem_cache/kv_cache_configurator.py ``mm_runtime_reservation_gb`` first appears in wheel 0.5.18.
    """
    return 0


# ================================================================================================
# Page size before 0.5.3
# ================================================================================================


#: architectures whose own model override picks ``trtllm_mha`` on SM100 when no attention backend is given, from
#: 0.5.0rc2 (server_args.py ``model_specific_adjustments`` / ``_handle_model_specific_adjustments``, GptOssForCausalLM
#: branch: ``if is_sm100_supported(): self.attention_backend = "trtllm_mha"``); kvplan applies it from 0.4.9.post6
#: (0.4.9.post6 - 0.4.10 have no GPT-OSS model: models/gpt_oss.py first ships in 0.5.0rc2)
TRTLLM_MHA_SM100_ARCHS = frozenset({"GptOssForCausalLM"})


def model_picks_trtllm_mha(
    *, architectures: Any, attention_backend: str | None, sm_major: int | None, vendor: str
) -> bool:
    """GPT-OSS on a CUDA SM100 GPU with no ``--attention-backend``: its model override sets ``trtllm_mha``, whose
    page constraint then makes the page 64 (16 / 32 / 64 kept).  Example: gpt-oss-120b on a B200 -> True; on an H100
    or with ``--attention-backend triton`` -> False.

    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs.model_specific_adjustments``
    (GptOssForCausalLM) run before the ``trtllm_mha`` page check in ``__post_init__`` ("TensorRT-LLM MHA only
    supports page_size of 16, 32 or 64, changing page_size from ... to 64"), v0.5.0rc2 - v0.5.2;
    ``_handle_model_specific_adjustments`` before ``_handle_attention_backend_compatibility``, v0.5.3 - v0.5.6.
    """
    if attention_backend is not None or sm_major != 10 or platform_of(vendor) != "cuda":
        return False
    return bool(TRTLLM_MHA_SM100_ARCHS.intersection(architectures or ()))


def page_size_before_0_5_3(
    *,
    attention_backend: str | None = None,
    flashmla: bool = False,
    cutlass: bool = False,
    requested: int | None = None,
    gpt_oss_sm100: bool = False,
    architectures: Any = None,
    sm_major: int | None = None,
    vendor: str = "nvidia",
    **_: Any,
) -> int:
    """Page size 0.4.4 - 0.5.2: ``requested`` (``--page-size``; 1 when not given), unless the named backend forces
    its own over it (``flashmla`` -> 64 from 0.4.5.post3, ``cutlass_mla`` -> 128 from 0.4.6.post2; ``trtllm_mha``,
    GPT-OSS's own pick on SM100 from 0.5.0rc2 (``gpt_oss_sm100``, :func:`model_picks_trtllm_mha`) -> 64 unless 16 /
    32 / 64).  Before 0.4.4 there are no pages (the planner ignores the flag).  Example: ``--attention-backend
    flashmla`` under 0.4.6 -> 64; Llama on a B200 under 0.5.1 -> 1; gpt-oss-120b on a B200 under 0.5.0rc2 -> 64;
    ``--page-size 64`` under 0.4.4 -> 64.

    Source: server_args.py ``ServerArgs.__post_init__`` (``page_size: int = 1`` from 0.4.4; the flashmla /
    cutlass_mla / trtllm_mha branches; ``model_specific_adjustments`` GptOssForCausalLM), wheels 0.4.4, 0.4.5.post3,
    0.4.6.post2, 0.5.0rc2, 0.5.2.
    """
    if flashmla and attention_backend == "flashmla":
        return 64
    if cutlass and attention_backend == "cutlass_mla":
        return 128
    if gpt_oss_sm100 and model_picks_trtllm_mha(
        architectures=architectures, attention_backend=attention_backend, sm_major=sm_major, vendor=vendor
    ):
        return requested if requested in (16, 32, 64) else 64
    return requested or 1


# ================================================================================================
# Page size 0.5.3 - 0.5.22 (server_args.py, then arg_groups/overrides.py from 0.5.15)
# ================================================================================================


@dataclass(frozen=True)
class PageEra:
    """What the page-size rules did in one range of releases 0.5.3 - 0.5.22 (data; :func:`page_size_by_era`).

    Read in each wheel: the default attention backend (``model_executor/model_runner.py``
    ``ModelRunner.model_specific_adjustment`` in 0.5.3 - 0.5.4, after the page constraints; ``server_args.py``
    ``ServerArgs._handle_attention_backend_compatibility`` / ``_get_default_attn_backend`` 0.5.5 - 0.5.18, before
    them; ``arg_groups/model_override_base.py`` ``get_default_attn_backend`` from 0.5.19), the backend page
    constraints (``server_args.py``, ``arg_groups/overrides.py`` ``_mla_backend_page_constraints`` /
    ``_fa4_page_constraint`` / ``_intel_xpu_page_constraint`` from 0.5.15) and ``_handle_page_size`` /
    ``_page_size_default``.
    """

    gqa_sm100_trtllm_mha: bool = False  # GQA on SM100 defaults to trtllm_mha (0.5.7+; flashinfer before)
    fa4_for_asymmetric: bool = False  # ... fa4 when K and V widths differ (0.5.17+)
    deepseek_trtllm_mla: bool = False  # DeepSeek-family MLA on SM100 defaults to trtllm_mla (0.5.4+)
    trtllm_mha_pages: tuple[int, ...] = (16, 32, 64)  # pages trtllm_mha keeps ((16, 32, 64, 128) from 0.5.17)
    cutlass_mla_128: bool = True  # cutlass_mla forces 128 (to 0.5.19)
    tokenspeed_mla: bool = False  # tokenspeed_mla -> 64 unless 32 / 64 (0.5.12 - 0.5.22)
    cutedsl_mla: bool = False  # cutedsl_mla -> 64 unless 32 / 64 (0.5.13+)
    hpc_ops: bool = False  # hpc_ops -> 64 (0.5.17+)
    fa4: str = "refused"  # --attention-backend fa4: "refused" (0.5.4 - 0.5.7: prefill only),
    # "no-page" (0.5.8 - 0.5.14: only the prefill flag forces 128), "128"
    intel_xpu: str = ""  # "": no rule (0.5.3); "any-32-64-128" (0.5.4 - 0.5.10); "mla" (0.5.11+)
    musa_64: bool = False  # an unset page is 64 on MUSA (0.5.11+)
    vectorized_5d: bool = False  # ... and on ROCm with SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d (0.5.13+)
    qwen3_next_sm100: str = ""  # Qwen3-Next / Qwen3.5 SM100 backend override: "triton" (0.5.7 - 0.5.9),
    # "pick" (0.5.10 - 0.5.13), "force" (0.5.14+; releases.qwen3_next_sm100_page)
    dsa: str = "64"  # DSA page: "64" everywhere but NPU (0.5.3 - 0.5.7); "hip-1" (0.5.8 -
    # 0.5.11); "preshuffle" (ROCm 1 without the aiter path, 0.5.12 - 0.5.20);
    # "xpu-128" (0.5.21); "kpool" (64 x index_kpool, 0.5.22+)


def _era_backend(
    *,
    era: PageEra,
    fam: Family,
    plat: str,
    sm_major: int | None,
    deepseek_family: bool,
    has_asymmetric_kv: bool,
    topk_ok: bool,
) -> str | None:
    """The default backend where it decides the page (None: one that forces nothing, fa3 / flashinfer / ...)."""
    if plat != "cuda" or sm_major != 10:
        return None
    if fam == Family.MLA:
        return "trtllm_mla" if era.deepseek_trtllm_mla and deepseek_family else None
    if fam == Family.GQA and era.gqa_sm100_trtllm_mha and topk_ok:
        return "fa4" if era.fa4_for_asymmetric and has_asymmetric_kv else "trtllm_mha"
    return None


def _era_dsa_page(*, era: PageEra, plat: str, index_kpool: int, hip_dsa_preshuffle: bool) -> int | None:
    if plat == "npu":
        return None
    if era.dsa == "kpool":
        return r0523._dsa_page(plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle)
    if plat == "xpu" and era.dsa == "xpu-128":
        return 128
    if plat == "hip" and (era.dsa == "hip-1" or (era.dsa in ("preshuffle", "xpu-128") and not hip_dsa_preshuffle)):
        return 1
    return 64


def _xpu_page(*, era: PageEra, fam: Family, page: int | None) -> int | None:
    """intel_xpu: 0.5.4 - 0.5.10 keep 32 / 64 / 128; 0.5.11+ keep 16 / 32 / 64 / 128 (MLA) or 64 / 128; else 128."""
    if era.intel_xpu == "any-32-64-128":
        ok: tuple[int, ...] = (32, 64, 128)
    else:
        ok = (16, 32, 64, 128) if fam == Family.MLA else (64, 128)
    return page if page in ok else 128


def _fa4_page(
    *, era: PageEra, fam: Family, plat: str, sm_major: int | None, topk_ok: bool, page: int | None
) -> int | None:
    if era.fa4 == "refused":
        raise InputError(
            "this SGLang release runs fa4 only as --prefill-attention-backend fa4 ('FA4 backend is "
            "only supported for prefill')",
            field="--attention-backend",
            hint="use --engine-version 0.5.8 or newer, or another attention backend",
        )
    if era.fa4 == "128" and fam != Family.MLA and plat == "cuda" and sm_major == 10 and topk_ok:
        return 128
    return page


def _era_constraints(
    *, era: PageEra, backend: str | None, fam: Family, plat: str, sm_major: int | None, topk_ok: bool, page: int | None
) -> int | None:
    """``page`` (the requested one, None when unset) after the named backend's constraint."""
    keep_32_64 = {"trtllm_mla": True, "tokenspeed_mla": era.tokenspeed_mla, "cutedsl_mla": era.cutedsl_mla}
    if backend == "flashmla":
        return 64
    if backend == "cutlass_mla" and era.cutlass_mla_128:
        return 128
    if backend is not None and keep_32_64.get(backend):
        return page if page in (32, 64) else 64
    if backend == "trtllm_mha":
        return page if page in era.trtllm_mha_pages else 64
    if backend == "hpc_ops" and era.hpc_ops:
        return 64
    if backend == "fa4":
        return _fa4_page(era=era, fam=fam, plat=plat, sm_major=sm_major, topk_ok=topk_ok, page=page)
    if backend == "intel_xpu" and era.intel_xpu:
        return _xpu_page(era=era, fam=fam, page=page)
    return page


def page_size_by_era(
    *,
    era: PageEra,
    family: str,
    attention_backend: str | None,
    sm_major: int | None,
    vendor: str,
    requested: int | None = None,
    deepseek_family: bool = False,
    has_asymmetric_kv: bool = False,
    speculative_eagle_topk: int | None = None,
    index_kpool: int = 1,
    hip_dsa_preshuffle: bool = True,
    hip_vectorized_5d: bool = False,
    release: tuple[int, int, int] = (0, 5, 22),
    architectures: Any = None,
    radix_cache: bool = True,
    speculative: bool = False,
    overlap_schedule: bool = True,
    **_: Any,
) -> int:
    """Page size when ``--page-size`` is not given, 0.5.3 - 0.5.22 (0.5.23: ``rules.default_page_size``)::

        DeepSeek-V4 (0.5.12+)  256 (NPU 128), the model override
        DSA                    64 (era.dsa: ROCm 1 from 0.5.8 / without the aiter preshuffle path from 0.5.12;
                               XPU 128 from 0.5.21; 64 x index_kpool from 0.5.22)
        backend = --attention-backend, else the default that forces a page:
                  SM100 GQA -> trtllm_mha from 0.5.7 (flashinfer before; fa4 for asymmetric K/V from 0.5.17),
                  SM100 DeepSeek-family MLA -> trtllm_mla from 0.5.4; GPT-OSS on SM100 -> trtllm_mha (its model
                  override, :func:`model_picks_trtllm_mha`, 0.5.3 - 0.5.6); every other default forces nothing
        page = requested (None when unset), then the backend's constraint:
        flashmla 64; cutlass_mla 128 (to 0.5.19); trtllm_mla / tokenspeed_mla (0.5.12 - 0.5.22) /
        cutedsl_mla (0.5.13+) 64 unless 32 / 64; trtllm_mha 64 unless era.trtllm_mha_pages (128 allowed from
        0.5.17); hpc_ops 64 (0.5.17+); fa4 128 (non-MLA on SM100, 0.5.15+; refused as --attention-backend in
        0.5.4 - 0.5.7); intel_xpu 128 unless supported (0.5.4+)
        still unset: 1 (64 on MUSA from 0.5.11, on ROCm vectorized_5d from 0.5.13)
        Qwen3-Next / Qwen3.5 on SM100, backend unset (0.5.7+): the model override's page first
        (``releases.qwen3_next_sm100_page``: triton 1 in 0.5.7 - 0.5.9; 0.5.10+ trtllm_mha 64 only with
        extra_buffer, radix off or speculative decoding)

    Worked examples: Llama-3.1-8B on a B200 (SM100) -> 1 under 0.5.6 (flashinfer), 64 under 0.5.7 (trtllm_mha);
    DeepSeek-V3 with ``--attention-backend cutlass_mla`` -> 128 under 0.5.19, 1 under 0.5.20 (no constraint);
    DeepSeek-V3.2 (DSA) on MI355X -> 64 under 0.5.7, 1 under 0.5.8; Qwen3-Next on a B200 -> 1 under 0.5.7 - 0.5.13
    (triton), 1 under 0.5.14 (the override reads "auto"), 64 under 0.5.16 (extra_buffer -> trtllm_mha).

    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs._handle_attention_backend_compatibility``
    and ``_handle_page_size`` (0.5.3 - 0.5.14), ``arg_groups/overrides.py`` ``_mla_backend_page_constraints``,
    ``_fa4_page_constraint``, ``_page_size_default`` (0.5.15 - 0.5.22), ``model_executor/model_runner.py``
    ``model_specific_adjustment`` (0.5.3 - 0.5.4), the DSA override in ``_handle_model_specific_adjustments`` /
    ``arg_groups/model_overrides/deepseek_v2.py``; wheels 0.5.3 - 0.5.22.
    """
    fam = Family(family)
    plat = platform_of(vendor)
    topk_ok = speculative_eagle_topk is None or speculative_eagle_topk <= 1
    forced = qwen3_next_sm100_page(
        rule=era.qwen3_next_sm100,
        release=release,
        architectures=architectures,
        sm_major=sm_major,
        vendor=vendor,
        attention_backend=attention_backend,
        requested=requested,
        radix_cache=radix_cache,
        speculative=speculative,
        overlap_schedule=overlap_schedule,
        trtllm_default=era.gqa_sm100_trtllm_mha and topk_ok,
    )
    if forced is not None:
        return forced
    if fam == Family.DSV4:
        return r0523._dsv4_page(plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle) or 1
    if fam == Family.DSA:
        page = _era_dsa_page(era=era, plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle)
        if page is not None:
            return page
    backend = attention_backend or _era_backend(
        era=era,
        fam=fam,
        plat=plat,
        sm_major=sm_major,
        deepseek_family=deepseek_family,
        has_asymmetric_kv=has_asymmetric_kv,
        topk_ok=topk_ok,
    )
    if backend is None and model_picks_trtllm_mha(
        architectures=architectures, attention_backend=attention_backend, sm_major=sm_major, vendor=vendor
    ):
        backend = "trtllm_mha"  # GPT-OSS's own override (0.5.3 - 0.5.6; from 0.5.7 every SM100 GQA model's default)
    page = _era_constraints(
        era=era, backend=backend, fam=fam, plat=plat, sm_major=sm_major, topk_ok=topk_ok, page=requested
    )
    if page is not None:
        return page
    if (era.musa_64 and plat == "musa") or (era.vectorized_5d and plat == "hip" and hip_vectorized_5d):
        return 64
    return 1


# ================================================================================================
# Request cap (max_running_requests) before 0.5.23
# ================================================================================================


def _req_estimate(*, total_tokens: Any, context_len: Any, cap: int = 4096) -> Any:
    if _any(context_len <= 0):
        raise InputError(f"context length must be positive, got {context_len}", field="--context-length")
    return _maximum(_minimum(_trunc_int(total_tokens / context_len * 512), cap), 2048)


def _per_dp(requested: Any, attn_dp_size: int, divide: bool) -> Any:
    if attn_dp_size <= 0:
        raise InputError(f"attn_dp_size must be positive, got {attn_dp_size}", field="--dp-size")
    return requested // attn_dp_size if divide else requested


def mrr_0_3_0(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.3.0: ``N = clamp(int(tokens / context x 512), 2048, 5120)`` request slots; the scheduler runs
    ``min(tokens // 2 (or R), N - 1)``.  Example: 444,520 tokens at 131,072 -> N 2048 -> 2047.

    Source: model_executor/model_runner.py ``ModelRunner.init_memory_pool``; managers/tp_worker.py
    ``ModelTpServer.__init__``, wheel 0.3.0.
    """
    n = _req_estimate(total_tokens=total_tokens, context_len=context_len, cap=5120)
    want = total_tokens // 2 if requested is None else _per_dp(requested, attn_dp_size, False)
    return _minimum(want, n - 1)


def mrr_req_pool(
    *, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1, extra: int = 0, per_dp: bool = False
) -> Any:
    """0.3.1 - 0.5.9: the request pool has ``N = (R or clamp(int(tokens / context x 512), 2048, 4096)) + extra``
    slots and the scheduler runs ``min(tokens // 2 if R is unset else R [// dp], N)``.

    ``extra`` is 1 in 0.3.2 - 0.4.6.post5 (``ReqToTokenPool(size=max_num_reqs + 1)``), 0 otherwise; ``per_dp``
    (R divided by the DP-attention size) from 0.4.1.post7.  Example: 444,520 tokens at 131,072 context, R unset ->
    min(222,260, 2048 + 1) = 2049 under 0.4.4; 2048 under 0.4.7.

    Source: model_executor/model_runner.py ``ModelRunner.init_memory_pool``; managers/tp_worker.py
    ``TpModelWorker.__init__`` (model_runner.py from 0.5.7), wheels 0.3.1, 0.3.2, 0.4.1.post7, 0.4.7, 0.5.9.
    """
    est = _req_estimate(total_tokens=total_tokens, context_len=context_len)
    if requested is None:
        return _minimum(total_tokens // 2, est + extra)
    return _minimum(_per_dp(requested, attn_dp_size, per_dp), requested + extra)


def mrr_estimate_cap(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.5.10 - 0.5.13: ``est = clamp(int(tokens / context x 512), 2048, 4096)``; R given: ``min(R // dp, est)``;
    else ``min(est, tokens // 2)``.  Example: R = 8192 with 444,520 tokens at 131,072 -> 2048.

    Source: model_executor/model_runner_kv_cache_mixin.py ``_resolve_max_num_reqs``, wheels 0.5.10, 0.5.13.
    """
    est = _req_estimate(total_tokens=total_tokens, context_len=context_len)
    if requested is None:
        return _minimum(est, total_tokens // 2)
    return _minimum(_per_dp(requested, attn_dp_size, True), est)


def mrr_token_cap(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.5.14 - 0.5.22: R given: ``min(R // dp, tokens // 2)``; else ``min(est, tokens // 2)`` (0.5.23 adds
    ``max(1, R // dp)``).  Example: R = 10 with 10,000 tokens -> 10.

    Source: model_executor/model_runner_kv_cache_mixin.py ``_resolve_max_num_reqs`` (0.5.14, 0.5.15);
    mem_cache/kv_cache_configurator.py ``KVCacheConfigurator.resolve_max_num_reqs`` (0.5.16 - 0.5.22).
    """
    est = _req_estimate(total_tokens=total_tokens, context_len=context_len)
    if requested is None:
        return _minimum(est, total_tokens // 2)
    return _minimum(_per_dp(requested, attn_dp_size, True), total_tokens // 2)


def mrr_reduction_token_cap(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.5.14 - 0.5.22: the per-worker R the engine warns it reduced (``min`` cut it), else None."""
    if requested is None:
        return None
    per = _per_dp(requested, attn_dp_size, True)
    got = mrr_token_cap(
        total_tokens=total_tokens, context_len=context_len, requested=requested, attn_dp_size=attn_dp_size
    )
    return per if got < per else None


def no_reduction(**_: Any) -> None:
    """Before 0.5.14 SGLang does not warn when the request cap cuts ``--max-running-requests``."""
    return None


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

_PAGE_053 = PageEra(fa4="no-page")
_PAGE_054 = replace(_PAGE_053, deepseek_trtllm_mla=True, intel_xpu="any-32-64-128", fa4="refused")
_PAGE_057 = replace(_PAGE_054, gqa_sm100_trtllm_mha=True, qwen3_next_sm100="triton")
_PAGE_058 = replace(_PAGE_057, dsa="hip-1", fa4="no-page")
_PAGE_0510 = replace(_PAGE_058, qwen3_next_sm100="pick")
_PAGE_0511 = replace(_PAGE_0510, musa_64=True, intel_xpu="mla")
_PAGE_0512 = replace(_PAGE_0511, tokenspeed_mla=True, dsa="preshuffle")
_PAGE_0513 = replace(_PAGE_0512, cutedsl_mla=True, vectorized_5d=True)
_PAGE_0514 = replace(_PAGE_0513, qwen3_next_sm100="force")
_PAGE_0515 = replace(_PAGE_0514, fa4="128")
_PAGE_0517 = replace(_PAGE_0515, fa4_for_asymmetric=True, trtllm_mha_pages=(16, 32, 64, 128), hpc_ops=True)
_PAGE_0520 = replace(_PAGE_0517, cutlass_mla_128=False)
_PAGE_0521 = replace(_PAGE_0520, dsa="xpu-128")
_PAGE_0522 = replace(_PAGE_0521, dsa="kpool")


def _pages(era: PageEra, release: str) -> dict[str, Any]:
    """The page function of the window starting at ``release`` (its key: the Qwen3-Next override's model list)."""
    return dict(default_page_size=partial(page_size_by_era, era=era, release=version_key(release)[:3]))


# ------------------------------------------------------------------ hybrid sliding-window and Mamba pools by release

#: what each release added to ``is_hybrid_swa_model``'s allow-list (``configs/model_config.py``, constants
#: ``SWA_SINK_ARCHS`` / ``MIMO_V2_MODEL_ARCHS`` resolved), read in every wheel 0.5.8 - 0.5.23; none was removed
_SWA_ADDED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.5.8", ("GptOssForCausalLM", "Llama4ForConditionalGeneration", "MiMoV2FlashForCausalLM", "MiMoV2MTP")),
    ("0.5.9", ("Step3p5ForCausalLM", "Step3p5MTP")),
    ("0.5.11", ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "MiMoV2ForCausalLM")),
    ("0.5.12", ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "LagunaForCausalLM")),
    ("0.5.13", ("Gemma4UnifiedForConditionalGeneration", "Step3p7ForConditionalGeneration")),
    ("0.5.15", ("UnlimitedOCRForCausalLM",)),
    (
        "0.5.16",
        (
            "DeepseekV4ForCausalLMDSpark",
            "InklingForConditionalGeneration",
            "InklingForConditionalGenerationMTP",
            "MellumForCausalLM",
        ),
    ),
    ("0.5.18", ("MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration")),
    ("0.5.19", ("GraniteMoeSWAForCausalLM", "GraniteSWAForCausalLM")),
    ("0.5.21", ("DiffusionGemmaForBlockDiffusion", "IQuestQ1ForCausalLM", "IQuestQ1MTP")),
    ("0.5.22", ("EmbeddingGemma2Model",)),
    ("0.5.23", ("BeamForCausalLM",)),
)


def swa_archs_at(release: str) -> frozenset[str]:
    """``is_hybrid_swa_model``'s allow-list of release ``release`` (0.5.8+): the union of :data:`_SWA_ADDED` up to it.

    Example: ``swa_archs_at("0.5.9")`` has GPT-OSS, Llama-4, MiMo-V2-Flash (+ MTP) and Step-3.5 (+ MTP): 6 names.
    Source: configs/model_config.py ``is_hybrid_swa_model``, wheels 0.5.8 - 0.5.23.
    """
    key = version_key(release)
    return frozenset(a for first, archs in _SWA_ADDED if version_key(first) <= key for a in archs)


def swa_pool_since(architecture: str) -> str | None:
    """The first release whose ``is_hybrid_swa_model`` lists ``architecture`` (None: not listed by 0.5.23), for the
    message of a plan that the release sizes without the SWA pool.  Example: ``swa_pool_since("Gemma4ForCausalLM")``
    -> "0.5.11"; GPT-OSS -> "0.5.8"."""
    return next((first for first, archs in _SWA_ADDED if architecture in archs), None)


def _swa_archs(release: str) -> dict[str, Any]:
    return dict(pool=dict(hybrid_swa_archs=swa_archs_at(release)))


_GEMMA_2_3 = (
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Gemma3nForCausalLM",
    "Gemma3nForConditionalGeneration",
)
#: hybrid-SWA switch-offs by release (server_args.py ``_handle_model_specific_adjustments``): Gemma-2/3 and GPT-OSS
#: always (0.5.0rc2 - 0.5.7), Olmo-2 from 0.5.4, GPT-OSS with trtllm_mha or speculative decoding in 0.5.8, with
#: trtllm_mha only in 0.5.9 (its GptOssForCausalLM branch has no speculative switch-off), not at all from 0.5.10,
#: Exaone-4 with a ``sliding_window_pattern`` from 0.5.9
_SWA_OFF_050 = MappingProxyType(dict.fromkeys((*_GEMMA_2_3, "GptOssForCausalLM"), "always"))
_SWA_OFF_054 = MappingProxyType({**_SWA_OFF_050, "Olmo2ForCausalLM": "always"})
_SWA_OFF_058 = MappingProxyType({**_SWA_OFF_054, "GptOssForCausalLM": "trtllm_mha-or-speculative"})
_SWA_OFF_059 = MappingProxyType(
    {
        **_SWA_OFF_058,
        "GptOssForCausalLM": "trtllm_mha",
        **dict.fromkeys(("Exaone4ForCausalLM", "ExaoneMoEForCausalLM"), "sliding_window_pattern"),
    }
)

#: the Mamba state carve by release (``mamba_cache_sizing``; the formulas: kvplan.engines.sglang.pools.mamba
#: ``mamba_state_slots``), read in model_executor/model_runner_kv_cache_mixin.py ``handle_max_mamba_cache`` (0.5.7 -
#: 0.5.15) and mem_cache/kv_cache_configurator.py ``_handle_max_mamba_cache`` (0.5.16+): 0.5.7 reserves the
#: speculative states (mrr x D, mrr not divided by dp) only in its ratio branch; 0.5.8 reserves them (mrr // dp)
#: before every branch; 0.5.9 takes the flag first and drops the 512 fallback (same formulas to 0.5.12); 0.5.13
#: solves the slots and the speculative states jointly; 0.5.17 adds the padding slot and the PP share (0.5.23's)
_POOL_058 = dict(
    hybrid_swa_archs=swa_archs_at("0.5.8"), swa_disabled_archs=_SWA_OFF_058, mamba_cache_sizing="ratio_0508"
)
_POOL_059 = dict(
    hybrid_swa_archs=swa_archs_at("0.5.9"),
    swa_split="bytes",
    swa_disabled_archs=_SWA_OFF_059,
    mamba_cache_sizing="ratio_0508",
    mamba_fallback_slots=None,
)


def _era(era: MemoryEra) -> dict[str, Any]:
    return dict(
        default_mem_fraction_static=partial(memory_settings_mfs, era=era),
        default_chunked_prefill_size=partial(memory_settings_cps, era=era),
        default_cuda_graph_max_bs=partial(memory_settings_bs, era=era),
    )


#: the oldest window, complete; every later row is (first release, what that release changed)
_OLDEST = replace(
    SGLANG_0_5_23,
    release="0.3.0",
    default_mem_fraction_static=partial(mfs_tp_ladder, tp8_fraction=0.83),
    default_chunked_prefill_size=partial(cps_before_0_5_3),
    default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_mib=0, large_bs=None),
    default_prefill_cuda_graph=_no_prefill_graph,
    default_page_size=page_size_before_0_5_3,
    multimodal_reserve_bytes=no_multimodal_reserve,
    resolve_max_running_requests=mrr_0_3_0,
    max_running_requests_reduction=no_reduction,
    overrides=MappingProxyType({}),
    has_page_size=False,
    runner_mem_fraction_factor=partial(runner_multimodal_factor, factor=0.95),
    dsa_indexer_budget=False,
    pool_rules=PoolRules(
        hybrid_swa_archs=frozenset(),
        swa_config_opt_in=False,
        swa_disabled_archs=MappingProxyType({}),
        swa_split="layers",
        mamba_cache_sizing="fixed",
        mamba_full_memory_ratio=None,
        mamba_fallback_slots=512,
        gqa_cell_v_head_dim=False,
    ),
)

_DSA_053 = FamilyOverride(name="DeepSeek NSA", mem_fraction_static=0.8, dp_attention=True)
_DSA_054 = FamilyOverride(name="DeepSeek NSA", dp_attention=True)

#: (first release, the fields it changed); the wheel paths are in each function's docstring and docs/sglang.md
_CHANGES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("0.3.1", dict(resolve_max_running_requests=partial(mrr_req_pool))),
    ("0.3.2", dict(resolve_max_running_requests=partial(mrr_req_pool, extra=1))),
    ("0.3.5", dict(default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_mib=0))),
    (
        "0.3.6",
        dict(
            default_mem_fraction_static=partial(mfs_tp_ladder, tp8_fraction=0.82),
            default_chunked_prefill_size=partial(cps_before_0_5_3, small_mib=25_000),
            default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_bs=4, small_bs_tp4=4),
        ),
    ),
    (
        "0.4.0",
        dict(
            default_mem_fraction_static=partial(mfs_tp_ladder, tp8_fraction=0.81),
            default_cuda_graph_max_bs=partial(bs_before_0_5_3),
        ),
    ),
    ("0.4.0.post2", dict(default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_bs_tp4=80))),
    ("0.4.1.post7", dict(resolve_max_running_requests=partial(mrr_req_pool, extra=1, per_dp=True))),
    ("0.4.4", dict(has_page_size=True)),
    ("0.4.4.post4", dict(runner_mem_fraction_factor=partial(runner_multimodal_factor, factor=0.90))),
    (
        "0.4.5.post3",
        dict(
            default_mem_fraction_static=mfs_ladder_13g,
            default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_bs_tp4=80, large_bs=None),
            default_page_size=partial(page_size_before_0_5_3, flashmla=True),
        ),
    ),
    (
        "0.4.6.post2",
        dict(
            default_mem_fraction_static=mfs_ladder_48g,
            default_page_size=partial(page_size_before_0_5_3, flashmla=True, cutlass=True),
        ),
    ),
    (
        "0.4.7",
        dict(
            default_mem_fraction_static=partial(mfs_ladder_48g, b200_079=True),
            default_chunked_prefill_size=partial(cps_before_0_5_3, small_mib=25_000, b200_16k=True),
            resolve_max_running_requests=partial(mrr_req_pool, per_dp=True),
        ),
    ),
    (
        "0.4.7.post1",
        dict(
            default_mem_fraction_static=mfs_reserved_buckets,
            default_chunked_prefill_size=partial(cps_before_0_5_3, buckets_35_160=True),
            default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_mib=35 * 1024, small_bs_tp4=80, large_bs=None),
        ),
    ),
    (
        "0.4.9",
        dict(
            runner_mem_fraction_factor=_identity_factor,
            default_mem_fraction_vlm=partial(vlm_default_factor, fixed=0.90),
        ),
    ),
    # 0.4.9.post6: any model with a sliding window gets the SWA pool; the Gemma-2/3 / GPT-OSS switch-off is from
    # 0.5.0rc2 (0.4.9.post6 - 0.4.10 had none; kvplan applies 0.5.0's from 0.4.9.post6)
    (
        "0.4.9.post6",
        dict(
            default_mem_fraction_vlm=vlm_default_factor,
            default_page_size=partial(page_size_before_0_5_3, flashmla=True, cutlass=True, gpt_oss_sm100=True),
            pool=dict(hybrid_swa_archs=None, swa_disabled_archs=_SWA_OFF_050),
        ),
    ),
    ("0.5.2", dict(default_mem_fraction_static=partial(mfs_reserved_buckets, standalone_mib=6144))),
    ("0.5.3", dict(**_era(_ERA_053), **_pages(_PAGE_053, "0.5.3"), overrides=MappingProxyType({Family.DSA: _DSA_053}))),
    (
        "0.5.4",
        dict(
            dsa_indexer_budget=True,
            overrides=MappingProxyType({Family.DSA: _DSA_054}),
            **_pages(_PAGE_054, "0.5.4"),
            pool=dict(swa_disabled_archs=_SWA_OFF_054, mamba_cache_sizing="ratio_0504", mamba_full_memory_ratio=0.9),
        ),
    ),
    ("0.5.5", dict(**_era(_ERA_055))),
    (
        "0.5.7",
        dict(
            **_pages(_PAGE_057, "0.5.7"),
            pool=dict(
                hybrid_swa_archs=frozenset({"MiMoV2FlashForCausalLM", "MiMoV2MTP"}),
                gqa_cell_v_head_dim=True,
                mamba_cache_sizing="ratio_0507",
            ),
        ),
    ),
    ("0.5.8", dict(overrides=MappingProxyType({}), **_pages(_PAGE_058, "0.5.8"), pool=_POOL_058)),
    ("0.5.9", dict(**_pages(_PAGE_058, "0.5.9"), pool=_POOL_059)),
    (
        "0.5.10",
        dict(
            **_era(_ERA_0510),
            **_pages(_PAGE_0510, "0.5.10"),
            default_prefill_cuda_graph=piecewise_graph_0510,
            resolve_max_running_requests=mrr_estimate_cap,
            pool=dict(swa_disabled_archs=SWA_DISABLED_0523),
        ),
    ),
    ("0.5.11", dict(**_pages(_PAGE_0511, "0.5.11"), **_swa_archs("0.5.11"))),
    ("0.5.12", dict(overrides=SGLANG_0_5_23.overrides, **_pages(_PAGE_0512, "0.5.12"), **_swa_archs("0.5.12"))),
    (
        "0.5.13",
        dict(
            **_era(_ERA_0513),
            **_pages(_PAGE_0513, "0.5.13"),
            pool=dict(hybrid_swa_archs=swa_archs_at("0.5.13"), swa_config_opt_in=True, mamba_cache_sizing="ratio_0513"),
        ),
    ),
    (
        "0.5.14",
        dict(
            **_era(_ERA_0514),
            **_pages(_PAGE_0514, "0.5.14"),
            default_prefill_cuda_graph=_prefill_0523,
            resolve_max_running_requests=mrr_token_cap,
            max_running_requests_reduction=mrr_reduction_token_cap,
        ),
    ),
    ("0.5.15", dict(**_era(_ERA_0515), **_pages(_PAGE_0515, "0.5.15"), **_swa_archs("0.5.15"))),
    ("0.5.16", dict(**_pages(_PAGE_0515, "0.5.16"), **_swa_archs("0.5.16"))),
    ("0.5.17", dict(**_era(_ERA_0517), **_pages(_PAGE_0517, "0.5.17"), pool=dict(mamba_cache_sizing="ratio"))),
    ("0.5.18", dict(multimodal_reserve_bytes=r0523.multimodal_reserve_bytes, **_swa_archs("0.5.18"))),
    ("0.5.19", dict(**_swa_archs("0.5.19"))),
    (
        "0.5.20",
        dict(
            default_mem_fraction_static=_mfs_0523,
            default_chunked_prefill_size=_cps_0523,
            default_cuda_graph_max_bs=partial(
                memory_settings_bs, era=replace(_ERA_0517, cps_20_35=4096, bs_20_35=48, bs_20_35_tp4=160, fallback=0.95)
            ),
            default_mem_fraction_vlm=_identity_factor,
            **_pages(_PAGE_0520, "0.5.20"),
        ),
    ),
    ("0.5.21", dict(**_pages(_PAGE_0521, "0.5.21"), **_swa_archs("0.5.21"))),
    ("0.5.22", dict(default_cuda_graph_max_bs=_bs_0523, **_pages(_PAGE_0522, "0.5.22"), **_swa_archs("0.5.22"))),
)


def _last_before(first: str) -> str:
    """The newest release of :data:`RELEASE_DATES` below ``first`` (a window's last release, for its label)."""
    key = version_key(first)
    return max((v for v in RELEASE_DATES if version_key(v) < key), key=version_key)


def build_windows() -> tuple[ReleaseWindow, ...]:
    """Walk :data:`_CHANGES` from the oldest rule set; each row starts a window that ends before the next row."""
    rows = (("0.3.0", {}), *_CHANGES)
    firsts = [first for first, _ in rows] + ["0.5.23"]
    rules, out = _OLDEST, []
    for i, (first, changes) in enumerate(rows):
        rest = dict(changes)
        pool = rest.pop("pool", None)
        if pool is not None:  # the pool planners' values change field by field (PoolRules.replace)
            rest["pool_rules"] = rules.pool_rules.replace(**pool)
        rules = replace(rules, release=first, **rest)
        out.append(ReleaseWindow(first=first, last=_last_before(firsts[i + 1]), rules=rules))
    out.append(ReleaseWindow(first="0.5.23", last="0.5.23", rules=SGLANG_0_5_23))
    return tuple(out)
