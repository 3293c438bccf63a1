"""vLLM release windows: which startup-sizing rules each range of releases follows, one row per window.

A window starts at its ``first`` release and runs up to the next row's ``first``; a version newer than the last
row gets the last row (the newest release kvplan knows, :data:`NEWEST_VERSION`), one older than the first row the
first row.  The planner (:mod:`kvplan.engines.vllm.planner`) reads every version-dependent rule from the
:class:`Release` of its version, never from a version comparison of its own.

Where each boundary comes from: every boundary below was read on both sides in the released wheels (``pip download
--no-deps vllm==X``, paths inside the wheel; docs/vllm.md "Version table" gives the same list):

===========  ==========================================================================================
first        what changes from the window before
===========  ==========================================================================================
(0.5)        V0 engine: profile batch ``max(max_model_len, 2048)`` (512 with chunked prefill, on by default
             above 32K), V0 sampler, no CUDA-graph term, token line ``num_blocks × block_size``
             (``worker/worker.py`` ``determine_num_available_blocks``, ``config.py`` ``SchedulerConfig``, v0.6.4)
0.6.5        V0: the chunked-prefill batch is 2048 (``config.py`` ``SchedulerConfig.__post_init__``: 512 in
             0.6.4, 2048 in 0.6.5 / 0.6.6.post1 / 0.7.0 / 0.7.2 / 0.7.3)
0.8          V1 engine by default (``envs.py`` ``VLLM_USE_V1`` default "1" in the 0.8.0 wheel, "0" in 0.7.3;
             ``EngineArgs._is_v1_supported_oracle`` still falls back to V0 for unsupported features):
             ``vllm serve`` batch defaults, the V1 sampler buffers; every layer a ``FullAttentionSpec`` (sliding
             layers too: ``unify_hybrid_kv_cache_specs`` always converts them, 0.8.5.post1 / 0.9.0 / 0.9.0.1),
             token line ``num_blocks × block_size``, concurrency ``tokens / max_model_len``
0.9.1        hybrid KV manager (``v1/core/kv_cache_coordinator.py`` first in 0.9.1; sliding layers converted only
             with ``--disable-hybrid-kv-cache-manager``): sliding-window specs and groups, token line
             ``(num_blocks // groups) × block`` (``_get_kv_cache_config_uniform_page_size``), concurrency
             ``get_max_concurrency_for_kv_cache_config`` (0.9.1 / 0.9.2 ``v1/core/kv_cache_utils.py``)
0.11         start-up snapshot taken after NCCL / custom all-reduce (``v1/worker/gpu_worker.py``
             ``Worker.init_device``: ``MemorySnapshot()`` before ``init_worker_distributed_environment`` in 0.10.2,
             after it in 0.11.0)
             Mamba prefix caching for ``SupportsMambaPrefixCaching`` models (``--enable-prefix-caching``; 0.10.2
             turns it off for every hybrid): one state per block, ``cdiv(L, mamba_block)`` pages, and the block
             is aligned to the Mamba chunk: ``lcm(chunk, align) × cdiv(cdiv(state, attn B/token), lcm)``
             (``MambaSpec.max_memory_usage_bytes``, ``HybridAttentionMambaModelConfig.verify_and_update_config``
             in 0.11.1 - 0.14.0; named mode "all" in 0.15.0 - 0.27.0; 0.28.0 defaults to "align")
0.12         equal-size groups: the largest type's layer count when ``max < 1.25 × min`` (``kv_cache_utils.py``
             ``_get_kv_cache_groups_uniform_page_size``: absent in 0.11.1 / 0.11.2, 1.25 in 0.12.0 - 0.17.0)
0.14         ``requested = ceil(total × util)`` (``v1/worker/utils.py`` ``request_memory``: the float product in
             ``v1/worker/gpu_worker.py`` of 0.11.1 - 0.13.0, ``math.ceil`` from 0.14.0); chunked-local attention
             (Llama-4) keeps its own spec (``envs.py`` ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE``
             default False in 0.13.0, True in 0.14.0)
0.15         ``MambaModelConfig.verify_and_update_config`` stops turning prefix caching off for hybrids without
             ``SupportsMambaPrefixCaching`` ("support for prefix caching: disabling" in 0.11.1 - 0.14.0,
             gone in 0.15.0: such a model gets Mamba cache mode "align" when prefix caching is on)
0.18         the group-size threshold is ``1.5 × min`` (1.25 in 0.17.0, 1.5 in 0.18.0 - 0.34.0)
0.20         default ``gpu_memory_utilization`` 0.9 -> 0.92 (``config/cache.py``); CUDA-graph estimate subtracted by
             default (``envs.py`` ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` "0" in 0.19.0, "1" in 0.20.0)
0.21         token line ``int(concurrency × max_model_len)`` (``kv_cache_utils.py``: absent in 0.20.0)
(0.22)       Mamba cache mode "all" adds the speculative blocks: ``cdiv(L, block) + num_speculative_blocks``
             pages (``kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``: absent in 0.21.0, present in
             0.22.0 - 0.30.0; no "all" branch in 0.33.0 / 0.34.0).  Kept in the 0.21 row (no window of its own)
0.26         sliding-window / chunked admission counts ``(pp + 1) × max_num_batched_tokens`` in flight
             (``max_in_flight_tokens``: not used by the specs in 0.24.0 / 0.25.1)
0.27         weights + non-torch measured as one free-memory drop ("consumed", ``v1/worker/gpu_worker.py``; absent
             in 0.26.0)
0.28         prefix caching on by default for hybrids (never for attention-free ``IsAttentionFree`` models:
             :meth:`Release.prefix_caching_default`), so Mamba cache mode "align" (2 blocks): ``config/model.py``
             ``is_prefix_caching_supported`` is False for ``attn_type == "hybrid"`` up to 0.25.1; 0.26.0 /
             0.27.0 return True but ``engine/arg_utils.py`` ``_set_default_chunked_prefill_and_prefix_caching_args``
             still excludes ``is_hybrid``; 0.28.0 - 0.34.0 default it on and ``MambaModelConfig`` sets "align"
             (0.15 - 0.27 with ``--enable-prefix-caching``: "all" for ``SupportsMambaPrefixCaching`` models,
             "align" for the others; ``--mamba-cache-mode all`` is needed from 0.28)
             The same release prints one capacity line ``"GPU KV cache size: %s tokens, Maximum concurrency for
             %s tokens per request: %.2fx"`` (two lines in 0.27.0; ``v1/core/kv_cache_utils.py``); from 0.30.0 the
             prefix is the device name (``"%s KV cache size"``, "GPU" on CUDA)
0.29         DeepSeek-V4 packed grouping (``_get_packed_kv_cache_groups``: absent in 0.28.0, in
             ``v1/core/kv_cache_utils.py`` of 0.29.0 / 0.30.0, moved to ``v1/core/kv_cache_planning.py`` by
             0.33.0); only Mamba buckets are "state buckets" (split down to the states one block holds)
0.29         also: a KDA layer on the FlashKDA prefill (SM90 / 10x / 12x, head_dim 128, bf16, a
             ``gate_lower_bound``) declares one prefill-checkpoint block: "align" takes 3 blocks per KDA
             group (``models/kimi_k3/nvidia/kda.py`` ``get_kv_cache_spec``: absent in 0.28.0)
0.30         the packed split's state buckets also include circular-buffer buckets and, when no bucket mixes
             page sizes (no repeat pattern), sliding-window buckets (``is_state_bucket`` in
             ``_get_packed_kv_cache_groups``: absent in the 0.29.0 wheel, present in 0.30.0, 0.31.0, 0.32.0;
             the same in 0.33.0 / 0.34.0 apart from the EAGLE annotations): ``Release.packed_sliding_states``
0.32         Mamba2 layers declare one prefill-checkpoint block: "align" takes ``2 + spec + 1`` blocks per Mamba
             group (``model_executor/layers/mamba/mamba_mixer2.py`` ``get_kv_cache_spec``: absent in 0.31.0,
             present in 0.32.0 / 0.33.0 / 0.34.0): :meth:`Release.align_blocks`.  Also: bytes per block
             rounded to the lcm of the layers' block-stride alignments (kernel-block pages, ``MultipleOf``; 0.31.0
             has the rounding but no spec that sets an alignment): :meth:`Release.block_stride_bytes` -- 1 for
             every spec kvplan builds on CUDA, so no number changes (docs/vllm.md)
0.34         padding for any non-MLA attention / Mamba page and a full-attention fallback for MLA + SWA (issue-13
             research note); concurrency an explicit per-group sum (same numbers); new specs
             ``CircularBufferSpec``, ``HiSparse*`` (not modelled).  Sliding / chunked admission by
             ``max_in_flight_tokens`` = ``max_concurrent_batches × max_num_batched_tokens`` (``config/vllm.py``) --
             the 0.26 rule, read again in the 0.34.0 wheel by the issue-13 research note
===========  ==========================================================================================

Adding a release = one :func:`_after` row at the end of :data:`RELEASES` naming what changed (and, for a new
kind of rule, a field of :class:`Release` plus the small function it points at), then tests with that release's
hand-computed numbers.  Example: ``release_for("0.26.1").in_flight_tokens(max_num_batched_tokens=2048,
pp_size=1)`` = 2 × 2048 = 4096; ``release_for("0.10.2")`` gives 2048.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from kvplan import supported
from kvplan.errors import InputError
from kvplan.family import FAMILY_SPECS, Family
from kvplan.units import GiB
from kvplan.version import parse_version

NEWEST_VERSION = supported.VLLM[1]

Version = tuple[int, int, int]

# bytes per (row × vocab) element alive at the sampler peak (see budget.vllm_default_activation_bytes)
SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4 + 4 + 8 + 4 + 1 + 4 + 4
V0_SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4  # bf16 logits, fp32 logits, probs, logprobs (V0 Sampler)
#: V1 with FlashInfer installed (``v1/sample/ops/topk_topp_sampler.py`` ``TopKTopPSampler.__init__``: FlashInfer's
#: rejection sampler whenever ``flashinfer`` imports and ``VLLM_USE_FLASHINFER_SAMPLER`` is unset, v0.10.1.1 /
#: v0.10.2 / v0.11.0; ``flashinfer_sample`` -> ``top_k_top_p_sampling_from_logits``): bf16 logits 2, fp32 logits 4,
#: FlashInfer's top-k-masked logits 4, their softmax 4; no sort.  ``flashinfer-python`` is an optional extra of the
#: 0.10 wheels, so a plain pip install takes the PyTorch path (:data:`SAMPLER_BYTES_PER_LOGIT`).
FLASHINFER_SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4


# --------------------------------------------------------------------------- versions


def release_numbers(v: str | None) -> Version:
    """The release whose rules vLLM ``v`` gets: the first three numbers of :func:`kvplan.version.parse_version`
    (a fourth number, an rc, a dev build or a local label is planned as its release); None -> the newest known
    release.  A string that is no version is bad input (``--engine-version``).

    Example: ``"0.10.1.1"`` -> (0, 10, 1); ``"0.11.0rc2.dev98+g393de22d2"`` -> (0, 11, 0); ``"0.9"`` -> (0, 9, 0);
    None -> (0, 34, 0); ``"latest"`` -> InputError.
    """
    parsed = parse_version(v or NEWEST_VERSION)
    if parsed is None:
        raise InputError(f"'{v}' is not a vLLM version", field="engine_version", hint="write e.g. 0.10.2")
    return parsed.triple


# --------------------------------------------------------------------------- rule vocabulary


class Accounting(StrEnum):
    """How the profile run measures what is not KV (``gpu_worker.py`` ``determine_available_memory``)."""

    SUMMED = "summed"  # ≤0.26: weight-load delta + torch peak increase + non-torch increase
    CONSUMED = "consumed"  # ≥0.27: one free-memory drop, weights + non-torch ("consumed memory")


class DsV4Grouping(StrEnum):
    """How DeepSeek-V4's block-256 / SWA / state buckets become bytes per block (see grouping._group_dsv4)."""

    TUPLES = "tuples"  # ≤0.32: Σ distinct MLA-type pages × layer tuples (reference, 0.22 wheel)
    PACKED = "packed"  # ≥0.33: packed groups, max bucket (``_get_packed_kv_cache_groups``, v0.33.0)


@dataclass(frozen=True)
class BlockRule:
    """The attention block size a family gets: ``default`` unless the user gave one and ``user_may_set``;
    ``note`` is the assumption kvplan prints when it takes the default."""

    default: int
    user_may_set: bool = True
    note: str | None = None


@dataclass(frozen=True)
class PoolCount:
    """What the printed capacity lines are computed from (one DP engine, after the min over workers)."""

    num_blocks: int
    blocks_per_request: int  # Σ over groups of blocks one max_model_len request takes
    max_model_len: int
    block_size: int  # the attention block size
    num_groups: int
    min_group_block_size: int


TokenLine = Callable[[PoolCount], tuple[int, float]]


def _is_array(*xs: Any) -> bool:
    return any(hasattr(x, "shape") for x in xs)


def v0_line(nb: Any, per: Any, length: Any, bs: int, groups: int, min_bs: int) -> tuple[Any, Any]:
    """V0 / 0.8's line: ``tokens = num_blocks × block_size``, concurrency ``tokens / max_model_len``
    (vllm-project/vllm v0.6.4 ``executor/executor_base.py`` ``initialize_cache``).  Ints or numpy arrays.
    Example: 1,950 blocks × 16 = 31,200 tokens, / 20,000 = 1.56x."""
    tokens = nb * bs
    return tokens, tokens / length


def _concurrency(nb: Any, per: Any) -> Any:
    """``num_blocks / Σ_g blocks_g(L)`` (0.0 without blocks per request; ``get_max_concurrency_for_kv_cache_config``,
    v0.33.0)."""
    if _is_array(nb, per):
        import numpy as np

        return np.where(per > 0, nb / np.maximum(per, 1), 0.0)
    return nb / per if per else 0.0


def group_line(nb: Any, per: Any, length: Any, bs: int, groups: int, min_bs: int) -> tuple[Any, Any]:
    """0.8-0.20: ``tokens = (num_blocks // groups) × min group block size`` (``kv_cache_utils.py`` at
    ``001cabc1``).  Ints or numpy arrays.  Example (Gemma-3-27B, 0.11.0): 89,994 // 7 × 16 = 205,696 tokens."""
    return (nb // groups) * min_bs, _concurrency(nb, per)


def concurrency_line(nb: Any, per: Any, length: Any, bs: int, groups: int, min_bs: int) -> tuple[Any, Any]:
    """≥0.21: ``tokens = int(concurrency × max_model_len)`` (``get_kv_cache_capacity``, v0.33.0).  Ints or numpy
    arrays.  Example (Nemotron-3-Nano, 0.21): 2,861 / 130 = 22.0077x -> int(22.0077 × 262,144) = 5,769,184 tokens."""
    conc = _concurrency(nb, per)
    prod = conc * length
    if _is_array(prod):
        import numpy as np

        return np.trunc(prod).astype(np.int64), conc
    return int(prod), conc


def tokens_v0(c: PoolCount) -> tuple[int, float]:
    """V0 (≤0.7) and V1 0.8: ``tokens = num_blocks × block_size``, concurrency ``tokens / max_model_len``
    (``executor/executor_base.py`` ``initialize_cache`` log, v0.6.4; ``v1/core/kv_cache_utils.py``
    ``_get_kv_cache_config_uniform_type``, v0.8.0).  Example: 1,950 blocks × 16 = 31,200
    tokens, 31,200 / 20,000 = 1.56x.  The formula: :func:`v0_line` (ints or arrays)."""
    return v0_line(
        c.num_blocks, c.blocks_per_request, c.max_model_len, c.block_size, c.num_groups, c.min_group_block_size
    )


def tokens_per_group(c: PoolCount) -> tuple[int, float]:
    """0.8–0.20: ``tokens = (num_blocks // groups) × min group block size`` (``kv_cache_utils.py`` at
    ``001cabc1``), concurrency ``num_blocks / Σ_g blocks_g(max_model_len)``
    (``get_max_concurrency_for_kv_cache_config``).  Example (Gemma-3-27B, 0.11.0): 89,994 // 7 × 16 = 205,696
    tokens.  The formula: :func:`group_line`."""
    return group_line(
        c.num_blocks, c.blocks_per_request, c.max_model_len, c.block_size, c.num_groups, c.min_group_block_size
    )


def tokens_from_concurrency(c: PoolCount) -> tuple[int, float]:
    """≥0.21: ``tokens = int(concurrency × max_model_len)`` (``get_kv_cache_capacity``, v0.33.0).
    Example (Nemotron-3-Nano, 0.21): 2,861 / 130 = 22.0077x; int(22.0077 × 262,144) = 5,769,184 tokens.  The
    formula: :func:`concurrency_line`."""
    return concurrency_line(
        c.num_blocks, c.blocks_per_request, c.max_model_len, c.block_size, c.num_groups, c.min_group_block_size
    )


# --------------------------------------------------------------------------- scheduler defaults

BatchDefaults = Callable[..., tuple[int, int, str]]


def vllm_batch_defaults(
    *,
    device_bytes: int,
    gpu_name: str | None = None,
    offline: bool = False,
    tier_160: bool = True,
    gb10_small: bool = True,
) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) for ``vllm serve`` (``EngineArgs.get_batch_defaults``, v0.33.0):
    ≥160 GiB -> (16384, 1024); ≥70 GiB and not A100/GB10 -> (8192, 1024); else (2048, 256).

    ``tier_160``: the ≥160 GiB tier exists (``engine/arg_utils.py``: absent in the 0.27.0 wheel, present in 0.28.0,
    0.30.0 - 0.33.0); ``gb10_small``: GB10 (``is_device_capability((12, 1))``) kept on the small tier (absent in
    0.32.0, present in 0.33.0 / 0.34.0).  0.8 - 0.27 have only the 70 GiB / not-A100 rule (0.10.1.1, 0.14.0, 0.20.0,
    0.26.0 wheels).  Example: an H100 80 GB (79.65 GiB) -> (8192, 1024); an A100 80 GB -> (2048, 256); a B200 under
    0.26 (``tier_160=False``) -> (8192, 1024); GB10 under 0.21 -> (8192, 1024), under 0.34 -> (2048, 256)."""
    name = (gpu_name or "").lower()
    if tier_160 and device_bytes >= 160 * GiB:
        return 16384, 1024
    small = "a100" in name or (gb10_small and "gb10" in name)
    if device_bytes >= 70 * GiB and not small:
        return (16384 if offline else 8192), 1024
    return (8192 if offline else 2048), 256


def vllm_v0_batch_tokens(
    *, max_model_len: int, enable_chunked_prefill: bool | None = None, chunked_batch: int = 512
) -> int:
    """V0 default ``max_num_batched_tokens`` (the profile batch), vLLM ≤0.7.

    (``vllm/config.py`` ``SchedulerConfig.__init__`` and ``vllm/engine/arg_utils.py``
    ``EngineArgs.create_engine_config``, v0.6.4.)  Chunked prefill is switched on by default
    only when ``max_model_len > 32768`` (text models); then the batch is ``chunked_batch`` tokens
    (512 in 0.6.4, 2048 from 0.6.5: ``SchedulerConfig.__post_init__``), else
    ``max(max_model_len, 2048)``: the V0 profile run is one prefill of the whole context.

    Example: ``max_model_len=20000`` -> 20,000; ``29000`` -> 29,000; ``40000`` -> 512 (0.6.4) / 2048 (0.6.5+).
    """
    chunked = (max_model_len > 32768) if enable_chunked_prefill is None else enable_chunked_prefill
    return chunked_batch if chunked else max(int(max_model_len), 2048)


def serve_batch_defaults(*, max_model_len: int, device_bytes: int, gpu_name: str | None) -> tuple[int, int, str]:
    """V1 from 0.33: :func:`vllm_batch_defaults` by GPU size; (B, S, why B) for the assumption line."""
    b, s = vllm_batch_defaults(device_bytes=device_bytes, gpu_name=gpu_name)
    return b, s, "vllm serve default for this GPU size"


def serve_batch_defaults_0_8(*, max_model_len: int, device_bytes: int, gpu_name: str | None) -> tuple[int, int, str]:
    """V1 0.8 - 0.27: only the 70 GiB / not-A100 tier (:func:`vllm_batch_defaults`)."""
    b, s = vllm_batch_defaults(device_bytes=device_bytes, gpu_name=gpu_name, tier_160=False, gb10_small=False)
    return b, s, "vllm serve default for this GPU size"


def serve_batch_defaults_0_28(*, max_model_len: int, device_bytes: int, gpu_name: str | None) -> tuple[int, int, str]:
    """V1 0.28 - 0.32: the 160 GiB tier, GB10 still on the 70 GiB tier (:func:`vllm_batch_defaults`)."""
    b, s = vllm_batch_defaults(device_bytes=device_bytes, gpu_name=gpu_name, gb10_small=False)
    return b, s, "vllm serve default for this GPU size"


def v0_batch_defaults(*, max_model_len: int, device_bytes: int, gpu_name: str | None) -> tuple[int, int, str]:
    """V0 up to 0.6.4: :func:`vllm_v0_batch_tokens` and 256 sequences (``SchedulerConfig`` default
    ``max_num_seqs``, v0.6.4)."""
    return (
        vllm_v0_batch_tokens(max_model_len=max_model_len),
        256,
        "V0 default: max(max_model_len, 2048), 512 with chunked prefill above 32K",
    )


def v0_batch_defaults_0_6_5(*, max_model_len: int, device_bytes: int, gpu_name: str | None) -> tuple[int, int, str]:
    """V0 0.6.5 - 0.7.x: as :func:`v0_batch_defaults` but a chunked-prefill batch of 2048 tokens
    (``vllm/config.py`` ``SchedulerConfig.__post_init__`` ``self.max_num_batched_tokens = 2048``, wheels 0.6.5,
    0.6.6.post1, 0.7.0, 0.7.2, 0.7.3).  Example: ``max_model_len=40000`` -> (2048, 256)."""
    return (
        vllm_v0_batch_tokens(max_model_len=max_model_len, chunked_batch=2048),
        256,
        "V0 default: max(max_model_len, 2048), 2048 with chunked prefill above 32K",
    )


# --------------------------------------------------------------------------- block sizes

#: attention block size per family: the ``vllm_block`` field of the families' rows (``kvplan.family.FAMILY_SPECS``,
#: where the sources are cited: ``CacheConfig.DEFAULT_BLOCK_SIZE`` 16; FlashMLA / sparse-MLA 64, ``platforms/cuda.py``;
#: DeepSeek-V4 caches fixed at 256, ``models/deepseek_v4``, v0.33.0)
BLOCK_RULES: Mapping[Family, BlockRule] = MappingProxyType(
    {
        f: BlockRule(s.vllm_block.size, user_may_set=s.vllm_block.user_may_set, note=s.vllm_block.note)
        for f, s in FAMILY_SPECS.items()
    }
)


# --------------------------------------------------------------------------- the release row


@dataclass(frozen=True)
class Release:
    """The sizing rules of one window of vLLM releases (see the module docstring for sources)."""

    first: Version  # first release of the window
    label: str
    v0: bool  # legacy V0 engine (no KV groups, no CUDA-graph term)
    default_utilization: float  # ``gpu_memory_utilization`` default (config/cache.py)
    ceil_requested: bool  # requested = ceil(u·T), else the float product truncated
    accounting: Accounting  # what the logged budget terms mean (same arithmetic for the planner)
    snapshot_after_comm: bool  # free-at-start snapshot taken after NCCL / custom all-reduce
    graph_term: bool  # this engine can subtract a CUDA-graph estimate at all
    graph_estimate_default: bool  # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default
    sampler_bytes_per_logit: int  # activation: bytes per (row × vocab) at the sampler peak
    batch_defaults: BatchDefaults  # (max_num_batched_tokens, max_num_seqs, why) when not given
    token_line: TokenLine  # "GPU KV cache size" tokens and "Maximum concurrency"
    async_in_flight: bool  # SWA / chunked admission counts (pp + 1) batches in flight
    mamba_align_default: bool  # prefix caching on for hybrids by default, so Mamba cache mode "align"
    # (2 blocks) unless --enable-prefix-caching says otherwise (0.28+)
    dsv4_grouping: DsV4Grouping
    group_size_ratio: float = 1.5  # equal-size groups: max bucket when max < ratio × min, else min (0: min;
    # 1.25 in 0.12-0.17, 1.5 from 0.18)
    chunked_local_hybrid: bool = True  # chunked-local layers keep their own spec (else promoted to full)
    sliding_hybrid: bool = True  # sliding-window layers keep their own spec (False: 0.8, all full attention)
    mamba_pc_needs_model_support: bool = False  # prefix caching turned off for hybrids without
    # SupportsMambaPrefixCaching (``MambaModelConfig``, 0.11.1 - 0.14.0;
    # 0.15.0+ gives them "align" instead)
    packed_sliding_states: bool = False  # packed split: an unsplit sliding-window bucket (no repeat pattern) is a
    # state bucket, capped at the states one block already holds (0.30+)
    mamba_all_with_pc: bool = False  # prefix caching on + a SupportsMambaPrefixCaching model: one Mamba state per
    # block ("all": cdiv(L, mamba block) blocks, chunk-aligned block; 0.11-0.27)
    mamba_all_spec_blocks: bool = False  # "all" adds the speculative blocks (0.22+)
    prefill_checkpoint_mixers: frozenset[str] = frozenset()  # state mixers that declare one prefill-checkpoint
    # block in Mamba cache mode "align" (``MambaSpec.
    # num_prefill_checkpoint_blocks``): "flashkda" from 0.29, "mamba2" from 0.32
    # (see :meth:`align_blocks`)
    block_stride_alignment: bool = False  # bytes per block rounded to the lcm of the layers' block-stride
    # alignments (block-outermost layout, 0.32+; see :meth:`block_stride_bytes`)
    attention_free_prefix_caching: bool = False  # prefix caching on by default for attention-free models
    # (``IsAttentionFree``: pure Mamba); off in every release read, 0.10.2 - 0.34.0
    pad_any_page: bool = False  # a page that does not divide the largest is padded for any non-MLA spec
    # (0.34); before, only if the backend indexes KV by block stride
    capacity_log: str = (
        "GPU KV cache size: {tokens:,} tokens / Maximum concurrency for {length:,} tokens per "
        "request: {concurrency:.2f}x"
    )  # the capacity lines as this release prints them
    block_rules: Mapping[Family, BlockRule] = field(default_factory=lambda: BLOCK_RULES)

    @property
    def version(self) -> str:
        return ".".join(str(x) for x in self.first)

    def capacity_lines(self, *, tokens: int, max_model_len: int, concurrency: float) -> str:
        """The capacity line(s) as this release logs them.  Example (0.34): ``GPU KV cache size: 732,896 tokens,
        Maximum concurrency for 132,096 tokens per request: 5.55x``; before 0.34 two lines (joined by " / ")."""
        return self.capacity_log.format(prefix="GPU", tokens=tokens, length=max_model_len, concurrency=concurrency)

    def block_stride_bytes(self, *, bytes_per_block: int, alignments: Iterable[int]) -> int:
        """Bytes per block after the block-stride alignment: ``round_up(bytes_per_block, lcm(alignments))`` from 0.32
        (``v1/core/kv_cache_utils.py`` ``_get_kv_cache_bytes_per_block`` in v0.32.0, ``v1/core/kv_cache_planning.py``
        in v0.33.0 / v0.34.0, for a block-outermost ``KVCacheLayout``), else ``bytes_per_block``.  An alignment is
        the spec's ``get_block_stride_alignment()``: the page of ``gcd(n, block)`` tokens when the backend only
        takes kernel blocks of up to ``n`` tokens and ``gcd(n, block) < block`` (``v1/worker/utils.py``
        ``customize_attention_spec``), a sparse-MLA row size, a Mamba ``state_alignment``; 1 otherwise.  0.31.0
        rounds to the same lcm but no spec sets an alignment; 0.29.0 / 0.30.0 do not round.  A layer-outer layout
        (the default ``LBNHC``) rounds each layer's page to its own alignment instead, a no-op when the alignment
        divides the page, as a kernel-block page always does.  Example: 50,432 B with alignments (656, 1) ->
        ``round_up(50,432, 656)`` = 77 × 656 = 50,512 under 0.32; 50,432 under 0.31."""
        if not self.block_stride_alignment:
            return bytes_per_block
        step = math.lcm(1, *alignments)
        return -(-bytes_per_block // step) * step

    def prefix_caching_default(self, *, attention_free: bool) -> bool:
        """vLLM's ``enable_prefix_caching`` when the user sets neither flag, for a model with state layers:
        ``ModelConfig.is_prefix_caching_supported`` by ``attn_type`` (``config/model.py``), read by ``engine/
        arg_utils.py`` ``_set_default_chunked_prefill_and_prefix_caching_args``.  ``attn_type`` is "hybrid" for an
        ``IsHybrid`` class (Nemotron-H, Jamba, Qwen3-Next ...: :attr:`mamba_align_default`, True from 0.28.0) and
        "attention_free" for an ``IsAttentionFree`` one (``MambaForCausalLM``, ``Mamba2ForCausalLM``,
        ``FalconMambaForCausalLM``: "Attention free models do not support prefix caching", False in the 0.26.0,
        0.28.0, 0.33.0 and 0.34.0 wheels: :attr:`attention_free_prefix_caching`).  Example: under 0.34.0 a hybrid
        -> True, an attention-free model -> False; under 0.27.0 both False."""
        return self.attention_free_prefix_caching if attention_free else self.mamba_align_default

    def in_flight_tokens(self, *, max_num_batched_tokens: int, pp_size: int) -> int:
        """Tokens a sliding-window / chunked layer must keep for one request beyond its window:
        ``B`` (≤0.25) or ``(pp + 1) × B`` (≥0.26: V2 model runner, async scheduling keeps pp + 1 batches in
        flight; ``config/vllm.py`` ``max_in_flight_tokens``).  Example: B 2048, pp 1 -> 2048 / 4096."""
        return max_num_batched_tokens * ((pp_size + 1) if self.async_in_flight else 1)

    def align_blocks(self, *, state_mixer: str | None, num_speculative_tokens: int) -> int:
        """Blocks one request takes in each Mamba group in cache mode "align": ``2 + spec + checkpoint``, the
        checkpoint block being 1 when the model's state mixer is in :attr:`prefill_checkpoint_mixers`
        (``v1/kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``; ``mamba_mixer2.py`` ``MambaMixer2.
        get_kv_cache_spec`` sets 1 from v0.32.0, absent in v0.31.0; ``models/kimi_k3/nvidia/kda.py`` sets 1 with the
        FlashKDA prefill from v0.29.0, absent in v0.28.0).  Example: Nemotron-H (Mamba2), no speculation: 2 under
        0.31, 2 + 0 + 1 = 3 under 0.32; with 2 speculative tokens 2 + 2 + 1 = 5."""
        checkpoint = 1 if state_mixer is not None and state_mixer in self.prefill_checkpoint_mixers else 0
        return 2 + num_speculative_tokens + checkpoint

    def block_size(self, family: Family, requested: int | None) -> tuple[int, str | None]:
        """(attention block size, assumption note or None) for ``family``; ``requested`` = ``--block-size``.
        Example: MLA with no ``--block-size`` -> (64, the FlashMLA note); DeepSeek-V4 with 16 -> (256, None)."""
        rule = self.block_rules[family]
        if requested and rule.user_may_set:
            return requested, None
        return rule.default, rule.note


def _after(prev: Release, first: Version, label: str, **changes: Any) -> Release:
    """The next window: ``prev``'s rules with ``changes`` (named like the :class:`Release` fields)."""
    return replace(prev, first=first, label=label, **changes)


_V0 = Release(
    first=(0, 5, 0),
    label="V0 engine (0.5-0.6.4)",
    v0=True,
    default_utilization=0.9,
    ceil_requested=False,
    accounting=Accounting.SUMMED,
    snapshot_after_comm=False,
    graph_term=False,
    graph_estimate_default=False,
    sampler_bytes_per_logit=V0_SAMPLER_BYTES_PER_LOGIT,
    batch_defaults=v0_batch_defaults,
    token_line=tokens_v0,
    async_in_flight=False,
    mamba_align_default=False,
    dsv4_grouping=DsV4Grouping.TUPLES,
    group_size_ratio=0.0,
    chunked_local_hybrid=False,
    sliding_hybrid=False,
    mamba_pc_needs_model_support=True,
)
_V0_0_6_5 = _after(
    _V0, (0, 6, 5), "V0 engine, chunked-prefill batch 2048 (0.6.5-0.7)", batch_defaults=v0_batch_defaults_0_6_5
)
_V1_0_8 = _after(
    _V0_0_6_5,
    (0, 8, 0),
    "V1 engine, no hybrid manager (0.8-0.9.0)",
    v0=False,
    graph_term=True,
    sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT,
    batch_defaults=serve_batch_defaults_0_8,
)
_V1_0_9_1 = _after(
    _V1_0_8, (0, 9, 1), "V1 hybrid KV manager (0.9.1-0.10)", token_line=tokens_per_group, sliding_hybrid=True
)
_V1_0_11 = _after(
    _V1_0_9_1, (0, 11, 0), "0.11: snapshot after the communicators", snapshot_after_comm=True, mamba_all_with_pc=True
)
_V1_0_12 = _after(_V1_0_11, (0, 12, 0), "0.12-0.13: 1.25x group-size rule", group_size_ratio=1.25)
_V1_0_14 = _after(
    _V1_0_12,
    (0, 14, 0),
    "0.14: ceil(total x util), chunked-local layers in the hybrid manager",
    ceil_requested=True,
    chunked_local_hybrid=True,
)
_V1_0_15 = _after(
    _V1_0_14,
    (0, 15, 0),
    "0.15-0.17: prefix caching kept for hybrids without Mamba prefix support",
    mamba_pc_needs_model_support=False,
)
_V1_0_18 = _after(_V1_0_15, (0, 18, 0), "0.18-0.19: 1.5x group-size rule", group_size_ratio=1.5)
_V1_0_20 = _after(
    _V1_0_18, (0, 20, 0), "0.20: util 0.92, CUDA-graph estimate", default_utilization=0.92, graph_estimate_default=True
)
# mamba_all_spec_blocks: the wheels add the speculative blocks to mode "all" from 0.22.0 (absent in 0.21.0); kept in
# the 0.21 row, since a row of its own would split a window that every calibrate answer lists (contract goldens)
_V1_0_21 = _after(
    _V1_0_20,
    (0, 21, 0),
    "0.21-0.25: token line int(concurrency x L)",
    token_line=tokens_from_concurrency,
    mamba_all_spec_blocks=True,
)
_V1_0_26 = _after(_V1_0_21, (0, 26, 0), "0.26: (pp+1) batches in flight", async_in_flight=True)
_V1_0_27 = _after(_V1_0_26, (0, 27, 0), "0.27: consumed-memory accounting", accounting=Accounting.CONSUMED)
_V1_0_28 = _after(
    _V1_0_27,
    (0, 28, 0),
    "0.28: prefix caching on for hybrids (Mamba align), one capacity log line",
    mamba_align_default=True,
    mamba_all_with_pc=False,
    batch_defaults=serve_batch_defaults_0_28,
    capacity_log=(
        "{prefix} KV cache size: {tokens:,} tokens, Maximum concurrency for {length:,} tokens "
        "per request: {concurrency:.2f}x"
    ),
)
_V1_0_29 = _after(
    _V1_0_28,
    (0, 29, 0),
    "0.29: DeepSeek-V4 packed groups, FlashKDA checkpoint block",
    dsv4_grouping=DsV4Grouping.PACKED,
    prefill_checkpoint_mixers=frozenset({"flashkda"}),
)
# packed_sliding_states: ``is_state_bucket`` in ``_get_packed_kv_cache_groups`` takes unsplit sliding-window buckets
# in the 0.30.0, 0.31.0, 0.32.0 (``v1/core/kv_cache_utils.py``), 0.33.0 and 0.34.0 (``kv_cache_planning.py``) wheels;
# absent in 0.29.0
_V1_0_30 = _after(_V1_0_29, (0, 30, 0), "0.30-0.31: packed sliding-window state buckets", packed_sliding_states=True)
# the Mamba2 prefill-checkpoint block: ``MambaMixer2.get_kv_cache_spec`` in the 0.32.0, 0.33.0 and 0.34.0 wheels
# (absent in 0.31.0); "all" leaves ``MambaSpec`` by 0.33.0 (kvplan's "all" is 0.11-0.27 only)
_V1_0_32 = _after(
    _V1_0_30,
    (0, 32, 0),
    "0.32-0.33: Mamba2 prefill-checkpoint block, block-stride alignment",
    prefill_checkpoint_mixers=frozenset({"flashkda", "mamba2"}),
    block_stride_alignment=True,
)
# GB10 on the small batch tier: ``EngineArgs.get_batch_defaults`` ``is_gb10`` in the 0.33.0 / 0.34.0 wheels (absent
# in 0.32.0)
_V1_0_33 = _after(_V1_0_32, (0, 33, 0), "0.33: GB10 on the small batch tier", batch_defaults=serve_batch_defaults)
_V1_0_34 = _after(_V1_0_33, (0, 34, 0), "0.34: padding for any non-MLA page", pad_any_page=True)

#: every window, oldest first; the last row is the newest release kvplan knows
RELEASES: tuple[Release, ...] = (
    _V0,
    _V0_0_6_5,
    _V1_0_8,
    _V1_0_9_1,
    _V1_0_11,
    _V1_0_12,
    _V1_0_14,
    _V1_0_15,
    _V1_0_18,
    _V1_0_20,
    _V1_0_21,
    _V1_0_26,
    _V1_0_27,
    _V1_0_28,
    _V1_0_29,
    _V1_0_30,
    _V1_0_32,
    _V1_0_33,
    _V1_0_34,
)


#: architectures vLLM did not have before a release: (first release kvplan accepts, evidence).  Gemma-4: no
#: ``models/gemma4.py`` and no ``Gemma4*`` in ``models/registry.py`` in the 0.11.1 wheel; present in 0.20.0 and
#: in a 0.18.2rc1 log (vllm#40002) -- the first release is between 0.12 and 0.18 (not bisected), 0.12 accepted.
_NO_GEMMA4 = ((0, 12, 0), "no Gemma-4 model in vLLM 0.11.1 (vllm/model_executor/models/gemma4.py absent)")
ARCH_FIRST_RELEASE: Mapping[str, tuple[Version, str]] = MappingProxyType(
    dict.fromkeys(("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"), _NO_GEMMA4)
)


def check_architecture(architectures: list[str], version: Version) -> None:
    """Exit 2 (InputError) when the release has no model class for the architecture.
    Example: Gemma-4 under 0.11.1 -> InputError; under 0.25.1 -> None."""
    for arch in architectures:
        first = ARCH_FIRST_RELEASE.get(arch)
        if first is not None and version < first[0]:
            raise InputError(
                f"vLLM {'.'.join(map(str, version))} cannot serve {arch}: {first[1]}",
                field="engine_version",
                hint=f"use vLLM {'.'.join(map(str, first[0]))} or newer",
            )


def release_at(version: Version) -> Release:
    """The window holding ``version`` (older than every row: the first row; newer: the last)."""
    found = RELEASES[0]
    for rel in RELEASES:
        if version >= rel.first:
            found = rel
    return found


#: the releases whose rules kvplan has: the V0 engine from 0.5.0 to the newest, 0.34.x
SUPPORTED: tuple[str, str] = supported.VLLM


def check_supported(engine_version: str) -> None:
    """A ``--engine-version`` outside :data:`SUPPORTED` (older than 0.5.0, or newer than the newest minor release,
    e.g. 9.9 or 0.35.0) is bad input naming the range; patch releases of the newest minor (0.34.1) are planned by
    its rules.  Logs of newer builds are bounded by kvplan.planning.calibrate, which plans them with the newest."""
    v = release_numbers(engine_version)
    oldest, newest = release_numbers(SUPPORTED[0]), release_numbers(SUPPORTED[1])
    if v < oldest or v[:2] > newest[:2]:
        raise InputError(
            f"vLLM {engine_version!r} is outside the releases kvplan has rules for",
            field="--engine-version",
            hint=f"use a vLLM release from {SUPPORTED[0]} to {SUPPORTED[1]} (or leave it out for the newest)",
        )


def release_for(engine_version: str | None) -> Release:
    """The rules of ``engine_version`` (None = :data:`NEWEST_VERSION`).  Example: ``release_for("0.19.0")
    .default_utilization`` = 0.9, ``release_for("0.20.0").default_utilization`` = 0.92."""
    return release_at(release_numbers(engine_version))
