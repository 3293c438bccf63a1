"""vLLM's KV budget per GPU and the cold estimates of its terms, as pure functions.

Budget (``vllm/v1/worker/utils.py`` ``request_memory`` and ``vllm/v1/worker/gpu_worker.py``
``Worker.determine_available_memory``, v0.33.0)::

    requested = ceil(total * gpu_memory_utilization)
    available = requested - (weights + non_torch) - activation_peak - cuda_graph_estimate

``kv_cache_memory_bytes`` replaces ``available`` outright.  Which terms a release subtracts, and how its log names
them, is in :mod:`kvplan.engines.vllm.releases`; the cold estimates (no measured value) are below, each with the
logs that support it (``docs/vllm.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kvplan.engines.vllm.fields import int_if_set
from kvplan.engines.vllm.releases import (
    FLASHINFER_SAMPLER_BYTES_PER_LOGIT,
    NEWEST_VERSION,
    SAMPLER_BYTES_PER_LOGIT,
    V0_SAMPLER_BYTES_PER_LOGIT,
)
from kvplan.hfconfig.normalize import flatten_config
from kvplan.hfconfig.spec import MAX_LAYERS
from kvplan.units import MiB
from kvplan.weights.blocks import QWEN1


def vllm_requested_bytes(*, device_bytes: int, gpu_memory_utilization: Any, ceil: bool = True) -> Any:
    """``ceil(total × util)`` (``vllm/v1/worker/utils.py`` ``request_memory``, v0.33.0).

    Example: ``vllm_requested_bytes(device_bytes=85_520_809_984, gpu_memory_utilization=0.9)``
    = ceil(76,968,728,985.6) = 76,968,728,986 B (71.68 GiB).  Older builds kept the float
    product (≤0.11), which differs by under one byte.  ``gpu_memory_utilization`` may be a numpy array
    (``kvplan sweep``): the same IEEE product, ceiled (or truncated) element-wise, as int64.
    """
    prod = device_bytes * gpu_memory_utilization
    if hasattr(prod, "shape"):
        import numpy as np

        return (np.ceil(prod) if ceil else np.trunc(prod)).astype(np.int64)
    return math.ceil(prod) if ceil else int(prod)


def vllm_available_kv_bytes(
    *,
    requested_bytes: int,
    weight_bytes: int,
    activation_bytes: int,
    non_torch_bytes: int,
    cuda_graph_bytes: int = 0,
) -> int:
    """``available = requested − weights − activation − non_torch − graph`` (may be negative).

    (``gpu_worker.py`` ``determine_available_memory``: ``requested − non_kv_cache_memory −
    cudagraph_memory_estimate_applied``, v0.33.0.)  Example, Qwen3-Next-80B TP2 on H200 at
    0.10.2: 125.83 − 74.28 − 5.58 − 1.38 = 44.59 GiB (graph not subtracted in 0.10).
    """
    return requested_bytes - weight_bytes - activation_bytes - non_torch_bytes - cuda_graph_bytes


def vllm_default_activation_bytes(
    *,
    config: Mapping[str, Any],
    tp_size: int = 1,
    ep_size: int = 1,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    v0: bool = False,
    sampler_bytes_per_logit: int | None = None,
) -> int:
    """Cold estimate of the profile run's transient activation peak per GPU (bytes).

    Mechanism (V1: ``gpu/model_runner.py`` ``profile_run`` / ``_dummy_sampler_run``, v0.33.0;
    ``v1/worker/gpu_model_runner.py`` same names, v0.10.0; V0: ``worker/model_runner.py``
    ``GPUModelRunnerBase.profile_run``, v0.6.4): one forward over B = ``max_num_batched_tokens``
    tokens, then the sampler over R = min(B, S) rows (one sampled position per dummy request).
    The peak is the larger of the two (the forward's buffers are freed before the sampler):

    * forward, per token, 2 B × (3·H + max(MLP_live, MoE_workspace)): the residual, the
      layer input and the block output (3·H), plus, inside the MLP, the gate_up output (2·I/tp)
      and the activation output (I/tp), still referenced while ``down_proj`` runs
      (MLP_live = 3·I/tp); for MoE layers the fused-MoE intermediate caches 1–3,
      MoE_workspace = topk × (2·N + N + H) with N = moe_intermediate / (tp unless EP).
      ``VLLM_FUSED_MOE_CHUNK_SIZE`` (32,768 tokens in 0.10–0.33) caps the MoE rows, above every
      default B, so it is not applied.  Evidence: the two V0 logs (RTX 3090, Llama-3.1-8B,
      B = 20,000 and 29,000, forward-bound): 20,000 × 2 × (3·4,096 + 3·14,336) = 2.06 GiB and
      2.99 GiB vs peak torch − weights = 17.06 − 14.99 = 2.07 and 17.98 − 14.99 = 2.99 GiB.
    * V1 sampler: R × V × 39 B, the buffers alive together on the full vocabulary (logits are
      gathered to the whole vocab on every rank; the dummy run sets top-k and top-p): bf16
      logits 2, fp32 logits 4, scaled copy 4, softmax 4, sort values 4 + int64 sort indices 8,
      cumsum 4, top-p mask 1, scatter-back 4, logprobs 4.  Our reading of the sampler path,
      checked on every V1 log that prints the peak (docs/vllm.md: ten logs within ±2 % where
      the sampler bounds the peak), not fitted to one.
    * V0 sampler (``v0=True``): R × V × 14 B (bf16 logits, fp32 logits, probs, logprobs); no
      V0 log is sampler-bound, so this term is unverified.

    ``sampler_bytes_per_logit`` (the release's :attr:`~kvplan.engines.vllm.releases.Release.sampler_bytes_per_logit`)
    overrides the choice ``v0`` makes.

    Worked example: Llama-3.1-8B TP1, B=8192, S=1024: forward = 8192·2·(3·4096 + 3·14336)
    = 0.84 GiB; sampler = 1024·128256·39 = 4.77 GiB -> 4.77 GiB (H100 log: 4.76 GiB).
    """
    forward_per_token, sampler_per_row = vllm_activation_coefficients(
        config=config, tp_size=tp_size, ep_size=ep_size, v0=v0, sampler_bytes_per_logit=sampler_bytes_per_logit
    )
    peak: int = vllm_activation_peak(  # an int here (the formula is typed Any: it takes arrays in a sweep)
        forward_bytes_per_token=forward_per_token,
        sampler_bytes_per_row=sampler_per_row,
        max_num_batched_tokens=int(max_num_batched_tokens),
        max_num_seqs=int(max_num_seqs),
    )
    return peak


def vllm_activation_coefficients(
    *,
    config: Mapping[str, Any],
    tp_size: int = 1,
    ep_size: int = 1,
    v0: bool = False,
    sampler_bytes_per_logit: int | None = None,
) -> tuple[int, int]:
    """(forward bytes per batched token, sampler bytes per sampled row) of :func:`vllm_default_activation_bytes`:
    ``2 × (3·H + max(3·I/tp, topk × (3·N + H)))`` and ``V × bytes per logit`` (the config part of the peak, which
    does not depend on the scheduler knobs).  Example: Llama-3.1-8B TP1 -> (2 × (3·4,096 + 3·14,336), 128,256 × 39)
    = (110,592, 5,001,984)."""
    cfg = flatten_config(config, engine="vllm")
    H = int_if_set(cfg, "hidden_size")
    V = int_if_set(cfg, "vocab_size")
    # the MLP's real width (first-generation Qwen: intermediate_size // 2, kvplan.weights.blocks.dense_mlp_width)
    inter = int_if_set(cfg, "intermediate_size")
    if inter and str(cfg.get("model_type") or "").lower() == QWEN1:
        inter //= 2
    moe_i = int_if_set(cfg, "moe_intermediate_size")
    n_exp = (
        int_if_set(cfg, "n_routed_experts") or int_if_set(cfg, "num_experts") or int_if_set(cfg, "num_local_experts")
    )
    topk = int_if_set(cfg, "num_experts_per_tok")
    mlp_live = 3 * inter // max(tp_size, 1)
    moe_ws = 0
    if n_exp and topk and moe_i:
        n_shard = moe_i if ep_size > 1 else moe_i // max(tp_size, 1)
        moe_ws = topk * (3 * n_shard + H)
    per_logit = sampler_bytes_per_logit or (V0_SAMPLER_BYTES_PER_LOGIT if v0 else SAMPLER_BYTES_PER_LOGIT)
    return 2 * (3 * H + max(mlp_live, moe_ws)), V * per_logit


def vllm_activation_peak(
    *, forward_bytes_per_token: int, sampler_bytes_per_row: int, max_num_batched_tokens: Any, max_num_seqs: Any
) -> Any:
    """``max(B × forward, min(B, S) × sampler)``: the profile run's peak (see :func:`vllm_default_activation_bytes`);
    ``B`` / ``S`` may be numpy arrays (``kvplan sweep``: max_num_seqs is a numeric axis).
    Example: Llama-3.1-8B TP1, B 8,192, S 1,024: max(905,969,664, 5,122,031,616) = 5,122,031,616 B (4.77 GiB)."""
    forward = max_num_batched_tokens * forward_bytes_per_token
    rows = max_num_batched_tokens
    if hasattr(forward, "shape") or hasattr(max_num_seqs, "shape"):
        import numpy as np

        return np.maximum(forward, np.minimum(rows, max_num_seqs) * sampler_bytes_per_row)
    return max(forward, min(rows, max_num_seqs) * sampler_bytes_per_row)


def vllm_default_non_torch_bytes(
    *,
    tp_size: int = 1,
    pp_size: int = 1,
    engine_version: str | None = None,
    interconnect: str | None = None,
    context: int | None = None,
    nvls_multicast_sm: int | None = None,
    unified_host_bytes: int = 0,
) -> int:
    """Cold estimate of the memory allocated outside torch after vLLM's start-up snapshot (bytes).

    Mechanism: the CUDA context exists before the snapshot (``Worker.init_device``) and is outside
    the budget; what remains is, by version and interconnect (``world = tp × pp``):

    * 128 MiB on every rank: lazily created cuBLAS / attention workspaces.  Logged at TP1:
      0.13, 0.13, 0.13, 0.14, 0.14 GiB (llm-d H100 0.11.0) and 0.07 GiB (LLaVA 0.10.2).
    * world > 1 on NVLink (or unknown interconnect), snapshot taken *after* the communicators
      (≥0.11, the release's ``snapshot_after_comm``): + 512 MiB of communicator buffers
      connected at the first collective, i.e. in the profile run.  Logged: H100 TP2 0.54 / 0.55
      (0.11.0), 184-GiB Blackwell TP4 0.95 (0.26.0) -> modelled 0.625 GiB.
    * world > 1 on NVLink, snapshot taken *before* the communicators (≤0.10): + the whole
      NCCL / custom all-reduce set-up, ``runtime.NVLINK_COMM_BYTES`` (1.35 GiB, measured on
      SGLang's start-up).  Logged: H200 TP2 1.38 GiB (0.10.2) -> modelled 1.47 GiB.
    * world > 1 on PCIe: vLLM disables its custom all-reduce on more than two PCIe GPUs
      (``custom_all_reduce.py``), NCCL's lazily connected buffers stay small: nothing added.
      Logged: L40S TP8 0.21 GiB (0.10.2) -> modelled 0.125 GiB.
    * V0 0.6.4 (0.6.4 - 0.6.4.post1) subtracts ``total used − torch allocated`` after the profile with no
      baseline (``worker/worker.py`` ``determine_num_available_blocks``, v0.6.4), so everything this process
      holds outside torch is in the term: the CUDA context and, with TP > 1, the communicators.  Modelled as
      the free-at-start overhead of :func:`kvplan.engines.runtime.runtime_overhead_bytes` (0.55 GiB at TP1).
      Logged at TP1: RTX 3090 0.35 (both shipped logs), H200 0.73, an 8 GB card 0.47 GiB (public 0.6.4 logs,
      docs/accuracy.md).  With the GPU's own context (``context``, :func:`kvplan.engines.runtime.context_bytes`:
      its resident threads x 2,388 B) the term is that context + the 128 MiB of workspaces above + the
      communicators: H200 0.60 + 0.125 = 0.73 GiB (logged 0.73), RTX 3090 0.28 + 0.125 = 0.41 (logged 0.35);
      without it the 0.55 GiB median stands for the whole term.  0.6.3.post1 subtracts ``init free − free``
      (context outside) and 0.6.5 takes a
      baseline at ``init_device`` (``memory_profiling(baseline_memory_in_bytes=...)``): both get the terms above.

    * ``nvls_multicast_sm`` (the GPU's SM major when its NVLink fabric is multicast-capable, i.e. an NVSwitch
      system): with TP > 2 NCCL adds its NVLS buffers at the profile run's first large all-reduce (64 MiB at 8,192
      tokens x 4,096 x 2 B, above the custom all-reduce's 8 MiB, so it goes to the pynccl communicator), in every
      release: :func:`kvplan.engines.runtime.nccl_nvls_buffer_bytes` (128 MiB at TP4 on SM90, 256 MiB on SM100).
      The TP2 logs above have none (NCCL turns NVLS off on two GPUs); the 184-GiB Blackwell TP4 0.26 log's 0.95 GiB
      is then modelled 0.875.  None (the default) adds nothing.
    * ``unified_host_bytes``: on an integrated (unified-memory) GPU, the host memory vLLM's figure also counts
      (:func:`vllm_unified_host_buffer_bytes`), added as given; 0 (the default) on a discrete GPU.

    Example: TP2, NVLink, 0.11.0 -> 128 + 512 MiB = 671,088,640 B; TP1, 0.6.4 -> 0.55 GiB = 590,558,003 B; TP1,
    0.6.4 on an RTX 3090 (``context`` 82 x 1,536 x 2,388 = 300,773,376 B) -> 300,773,376 + 134,217,728 =
    434,991,104 B.
    """
    from kvplan.engines.vllm.releases import release_numbers

    if (0, 6, 4) <= release_numbers(engine_version or NEWEST_VERSION) < (0, 6, 5):
        from kvplan.engines.runtime import runtime_overhead_bytes

        world, link = tp_size * pp_size, (interconnect or "nvlink").lower()
        if context is None:
            return runtime_overhead_bytes(world_size=world, interconnect=link) + unified_host_bytes
        return (
            runtime_overhead_bytes(world_size=world, interconnect=link, context=context)
            + 128 * MiB
            + unified_host_bytes
        )
    base = 128 * MiB + unified_host_bytes
    if tp_size * pp_size <= 1:
        return base
    kind = (interconnect or "nvlink").lower()
    if kind not in ("nvlink", "nvlink-c2c", "xgmi"):
        return base
    from kvplan.engines.runtime import NVLINK_COMM_BYTES, nccl_nvls_buffer_bytes, snapshot_includes_communicators

    nvls = nccl_nvls_buffer_bytes(
        ranks=tp_size, sm_major=nvls_multicast_sm, multicast=nvls_multicast_sm is not None and kind == "nvlink"
    )
    if not snapshot_includes_communicators(engine="vllm", engine_version=engine_version or NEWEST_VERSION):
        return base + NVLINK_COMM_BYTES + nvls
    return base + 512 * MiB + nvls


def _pinned_bytes(n: int) -> int:
    """What torch's pinned host allocator takes for an ``n``-byte tensor: the next power of two
    (``CachingHostAllocator`` ``allocate``: ``roundSize = c10::llvm::PowerOf2Ceil(size)``, then ``cudaHostAlloc`` of
    that size).  Example: 44,040,192 -> 67,108,864."""
    return 0 if n <= 0 else 1 << (int(n) - 1).bit_length()


def vllm_unified_host_buffer_bytes(
    *, max_num_batched_tokens: int, hidden_size: int, dtype_bytes: int, engine_version: str | None
) -> int:
    """Pinned host memory of the model runner's per-token input buffers, which vLLM's non-torch figure counts on an
    integrated (unified-memory) GPU such as GB10 (bytes; 0 before 0.21).

    Mechanism (v0.21.0): on an integrated GPU ``MemorySnapshot.measure`` (``vllm/utils/mem_utils.py``) takes the free
    memory from ``psutil.virtual_memory().available``, so host memory the worker pins between its start-up snapshot
    (``Worker.init_device``, after the communicators) and the end of profiling is part of ``(total - free) - torch
    reserved``.  ``GPUModelRunner.__init__`` (``vllm/v1/worker/gpu_model_runner.py``), built after that snapshot,
    creates its persistent inputs as ``CpuGpuBuffer`` (``vllm/v1/utils.py``): a device tensor (torch, outside the
    non-torch figure) and a pinned CPU mirror (``pin_memory`` is on for CUDA outside WSL).  The mirrors sized by
    ``B = max_num_batched_tokens``: ``input_ids`` (int32), ``req_indices`` (int64), ``inputs_embeds`` (B x the
    embedding width x the model dtype, unconditional), ``is_token_ids`` (bool), ``query_pos`` (int64, max(S + 1, B)
    rows) and the block table's ``slot_mapping`` (int64, ``vllm/v1/worker/block_table.py``, one placeholder group at
    construction).  Torch's pinned allocator rounds each to a power of two (:func:`_pinned_bytes`).  Left out: the
    buffers of ``max_num_seqs`` rows (tens of bytes), the block table (``S x cdiv(L, 16) x 4`` B pinned) and the
    token-id tables (``S x L x 5`` B, not pinned), which move with the sweep axes ``max_num_seqs`` and
    ``max_model_len`` (8 x 262,144 rows: 10.5 MiB on the GB10 log), and M-RoPE's position buffer.  On a discrete GPU
    pinned memory is not device memory: the term is 0 there.  Lever: ``--max-num-batched-tokens``.

    Example: Nemotron-3-Nano (hidden 2,688, bf16) on GB10, 0.21, B 8,192: 32,768 + 65,536 + 67,108,864 (44,040,192
    rounded) + 8,192 + 65,536 + 65,536 = 67,346,432 B (64.2 MiB).
    """
    from kvplan.engines.vllm.releases import release_numbers

    if release_numbers(engine_version or NEWEST_VERSION) < (0, 21, 0):
        return 0
    b = max(int(max_num_batched_tokens), 0)
    per_token = (4, 8, int(hidden_size) * int(dtype_bytes), 1, 8, 8)
    return sum(_pinned_bytes(b * w) for w in per_token)


#: device memory of one captured CUDA graph per decoder layer on the rank, by layer kind (bytes): the instantiated
#: graph's kernel nodes (a fused-MoE layer launches about twice the kernels of a dense MLP: router, top-k, block
#: alignment, two grouped GEMMs, activation, sum); the graph pool's buffers are shared by all sizes (captured largest
#: first) and are not per graph.  Read off the five pure-PIECEWISE logs (0.10.x, one graph per capture size, 67
#: sizes): Qwen2-7B 0.50 GiB / (67 × 28) = 0.27 MiB (dense); gpt-oss-120b TP4 1.88 / (67 × 36) = 0.80, Qwen3-235B
#: TP8 3.45 / (67 × 94) = 0.56, Qwen3-Next TP2 2.37 / (67 × 48) = 0.75 MiB (MoE).  The MoE value is the one that keeps
#: all three within 0.5 GiB (docs/vllm.md "CUDA graph"), not a fit to one log.
GRAPH_BYTES_PER_DENSE_LAYER = 266 * 1024
GRAPH_BYTES_PER_MOE_LAYER = 635 * 1024


def vllm_cudagraph_capture_sizes(
    *, max_num_seqs: int, max_num_batched_tokens: int, stride16: bool = True, ceiling: int = 512
) -> list[int]:
    """The default capture sizes (tokens per graph), ascending.

    ``m = min(2·S, ceiling, B)`` (``S`` max_num_seqs, ``B`` max_num_batched_tokens).  Up to 0.11
    (``config/__init__.py`` ``VllmConfig._set_cudagraph_sizes`` and ``SchedulerConfig.__post_init__``
    ``cuda_graph_sizes = [min(max_num_seqs * 2, 512)]``, v0.10.1.1 / v0.11.0): ``[1, 2, 4] + range(8, m + 1, 8)``.
    From 0.12 (``stride16``; ``config/vllm.py`` ``_set_cudagraph_sizes``, v0.12.0 / v0.14.0 / v0.26.0 / v0.34.0):
    ``[1, 2, 4] + range(8, min(m + 1, 256), 8) + range(256, m + 1, 16)``, plus ``B`` and ``S`` when they are
    ``<= m`` (``B`` appended from 0.14, ``S`` as the widest uniform decode batch in 0.34; both on the grid at the
    defaults).  ``ceiling`` 1024 on data-centre Blackwell (SM100 family) from 0.30 (``default_max_graph_size``,
    v0.30.0 / v0.34.0), else 512.

    Example: S 1,024, B 8,192: 3 + 31 + 17 = 51 sizes up to 512 (0.12+), 67 up to 512 (0.11); S 64:
    m = 128, 3 + 16 = 19 sizes.
    """
    m = min(2 * max(int(max_num_seqs), 1), int(ceiling), max(int(max_num_batched_tokens), 1))
    sizes = {n for n in (1, 2, 4) if n <= m}
    if not stride16:
        sizes.update(range(8, m + 1, 8))
        return sorted(sizes)
    sizes.update(range(8, min(m + 1, 256), 8))
    sizes.update(range(256, m + 1, 16))
    sizes.update(x for x in (int(max_num_batched_tokens), int(max_num_seqs)) if x <= m)
    return sorted(sizes)


def vllm_cudagraph_count(
    *,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    full_and_piecewise: bool,
    stride16: bool = True,
    ceiling: int = 512,
) -> tuple[int, int]:
    """(PIECEWISE graphs, FULL graphs) a release captures by default.

    One PIECEWISE graph per capture size (:func:`vllm_cudagraph_capture_sizes`); with the FULL_AND_PIECEWISE
    default (0.11+: ``VllmConfig.__post_init__`` sets it when ``cudagraph_mode`` is unset at compilation level 3,
    v0.11.0; PIECEWISE in 0.10.1.1) also one FULL decode graph per capture size of at most ``S`` requests
    (uniform decode batches).  Example: S 1,024, B 8,192, 0.34 on H100 -> (51, 51); S 64 -> (19, 11).
    """
    sizes = vllm_cudagraph_capture_sizes(
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, stride16=stride16, ceiling=ceiling
    )
    full = sum(1 for s in sizes if s <= max_num_seqs) if full_and_piecewise else 0
    return len(sizes), full


def _moe_layers(cfg: Mapping[str, Any], n: int) -> int:
    """Decoder layers with routed experts: all but ``first_k_dense_replace`` and ``mlp_only_layers`` (DeepSeek /
    GLM / Kimi / Qwen-MoE configs), every ``decoder_sparse_step``-th / ``interleave_moe_layer_step``-th; 0 without
    experts."""
    experts = (
        int_if_set(cfg, "n_routed_experts") or int_if_set(cfg, "num_experts") or int_if_set(cfg, "num_local_experts")
    )
    if not experts:
        return 0
    step = max(int_if_set(cfg, "decoder_sparse_step") or int_if_set(cfg, "interleave_moe_layer_step") or 1, 1)
    dense_first = min(int_if_set(cfg, "first_k_dense_replace"), n)
    only = cfg.get("mlp_only_layers") or []
    moe = sum(1 for i in range(dense_first, n) if (i + 1) % step == 0 and i not in only)
    return moe


def vllm_graph_bytes_per_graph(*, config: Mapping[str, Any], pp_size: int = 1) -> int:
    """Bytes one captured graph takes on a rank: ``Σ layers on the rank`` of
    :data:`GRAPH_BYTES_PER_MOE_LAYER` (a layer with routed experts) or :data:`GRAPH_BYTES_PER_DENSE_LAYER`.
    Example: Llama-3.1-70B (80 dense layers), PP1 -> 80 × 266 KiB = 21,790,720 B (20.8 MiB)."""
    cfg = flatten_config(config, engine="vllm")
    n = int_if_set(cfg, "num_hidden_layers", maximum=MAX_LAYERS)
    moe = _moe_layers(cfg, n)
    per_stage = -(-n // max(pp_size, 1))
    moe_rank = -(-moe // max(pp_size, 1))
    return moe_rank * GRAPH_BYTES_PER_MOE_LAYER + (per_stage - moe_rank) * GRAPH_BYTES_PER_DENSE_LAYER


def vllm_default_cuda_graph_bytes(
    *,
    config: Mapping[str, Any],
    pp_size: int = 1,
    enforce_eager: bool = False,
    graphs: int | None = None,
) -> int:
    """Cold estimate of the CUDA-graph memory: ``graphs × bytes per graph`` (:func:`vllm_graph_bytes_per_graph`).

    ``graphs`` = PIECEWISE + FULL graphs of :func:`vllm_cudagraph_count` (a FULL graph holds the same kernels as
    the piecewise set of its size, so it is priced the same); 0 in eager mode.  0.20+ subtracts this before the KV
    budget (``Worker.determine_available_memory`` ``cudagraph_memory_estimate`` from
    ``profile_cudagraph_memory``, which captures the graphs into a throwaway pool and measures them, v0.34.0);
    older releases capture after the KV cache is sized.  Without ``graphs``: 67 (0.10's PIECEWISE default).
    Example: Llama-3.1-70B TP4 on H100, 0.34, S 1,024, B 8,192: (51 + 51) × 80 × 266 KiB = 2.07 GiB; S 64:
    (19 + 11) × 80 × 266 KiB = 0.61 GiB.
    """
    if enforce_eager:
        return 0
    n_graphs = 67 if graphs is None else int(graphs)
    return n_graphs * vllm_graph_bytes_per_graph(config=config, pp_size=pp_size)


def vllm_default_graph_count(
    *, engine_version: str | None, max_num_seqs: int, max_num_batched_tokens: int, sm_major: int | None = None
) -> int:
    """Graphs the release captures by default (PIECEWISE + FULL, :func:`vllm_cudagraph_count`), with the release's
    capture rule: FULL_AND_PIECEWISE from 0.11 (v0.10.1.1 PIECEWISE, v0.11.0 FULL_AND_PIECEWISE), the stride-16 grid
    above 256 from 0.12 (v0.11.0 stride 8, v0.12.0 stride 16), the 1,024 ceiling on SM100 from 0.30 (v0.26.0 512,
    v0.30.0 1,024; 0.27 - 0.29 not read, taken as 0.26).  Example: 0.34 on H100, S 1,024, B 8,192 -> 102; 0.10.2 on
    an L40S, S 256, B 2,048 -> 67."""
    from kvplan.engines.vllm.releases import release_for  # 0.11, 0.12 and 0.30 each open a release window

    v = release_for(engine_version).first
    pw, full = vllm_cudagraph_count(
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        full_and_piecewise=v >= (0, 11, 0),
        stride16=v >= (0, 12, 0),
        ceiling=1024 if (v >= (0, 30, 0) and sm_major == 10) else 512,
    )
    return pw + full


def vllm_sampler_bytes_per_logit(*, v0: bool, flashinfer: bool = False) -> int:
    """Bytes per (row x vocab) logit alive at the dummy sampler's peak, by sampler path: V0's sampler 14; V1's
    PyTorch top-k / top-p path 39 (it sorts the full vocabulary); V1 with FlashInfer installed 14 (rejection
    sampling, no sort: ``releases.FLASHINFER_SAMPLER_BYTES_PER_LOGIT``).  Which V1 path runs depends on the
    environment (FlashInfer importable), not on a flag; the release default planned is the PyTorch path.

    Example: Qwen2-7B on one A100, vLLM 0.10.1.1 with FlashInfer (the dennislee22 run that logs "Using FlashInfer
    for top-p & top-k sampling"): 256 rows x 152,064 x 14 = 544,997,376 B (0.51 GiB), and 0.25 x 79.25 - 14.25 -
    5.01 (logged KV) = 0.55 GiB left for activation + non-torch; the PyTorch path's 39 B would need 1.41 GiB.
    """
    if v0:
        return V0_SAMPLER_BYTES_PER_LOGIT
    return FLASHINFER_SAMPLER_BYTES_PER_LOGIT if flashinfer else SAMPLER_BYTES_PER_LOGIT


def vllm_non_torch_note(
    *, non_torch_bytes: int, tp_size: int, link: str, engine_version: str | None, unified_host_bytes: int = 0
) -> str:
    """The ``--explain`` line of the cold non-torch term (:func:`vllm_default_non_torch_bytes`), naming its parts.

    Example: 671,088,640 B at TP2 on NVLink, 0.11.0 -> "cold: cuBLAS / attention workspaces 128 MiB + NCCL / custom
    all-reduce 512 MiB (TP2, nvlink)"; 590,558,003 B at TP1, 0.6.4 -> "cold: CUDA context and workspaces 563 MiB
    (V0 0.6.4 counts this process's memory outside torch, context included)"; 201,564,160 B at TP1 on GB10, 0.21,
    with ``unified_host_bytes`` 67,346,432 -> "cold: cuBLAS / attention workspaces 128 MiB + pinned host input
    buffers 64 MiB (unified memory; lever --max-num-batched-tokens)".
    """
    from kvplan.engines.vllm.releases import release_numbers

    if (0, 6, 4) <= release_numbers(engine_version or NEWEST_VERSION) < (0, 6, 5):
        return (
            f"cold: CUDA context and workspaces {non_torch_bytes / MiB:,.0f} MiB"
            + (f" incl. communicators (TP{tp_size}, {link})" if tp_size > 1 else "")
            + " (V0 0.6.4 counts this process's memory outside torch, context included)"
        )
    comm = non_torch_bytes - 128 * MiB - unified_host_bytes
    return (
        "cold: cuBLAS / attention workspaces 128 MiB"
        + (f" + NCCL / custom all-reduce {comm / MiB:,.0f} MiB (TP{tp_size}, {link})" if comm else "")
        + (
            f" + pinned host input buffers {unified_host_bytes / MiB:,.0f} MiB (unified memory; lever "
            "--max-num-batched-tokens)"
            if unified_host_bytes
            else ""
        )
    )
