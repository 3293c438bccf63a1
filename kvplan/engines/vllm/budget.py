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
from kvplan.engines.vllm.releases import NEWEST_VERSION, SAMPLER_BYTES_PER_LOGIT, V0_SAMPLER_BYTES_PER_LOGIT
from kvplan.hfconfig.normalize import flatten_config
from kvplan.hfconfig.spec import MAX_LAYERS
from kvplan.units import MiB


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
    inter = int_if_set(cfg, "intermediate_size")
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
    *, tp_size: int = 1, pp_size: int = 1, engine_version: str | None = None, interconnect: str | None = None
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
    * V0 (≤0.7) reports ``total used − torch allocated`` (``worker/worker.py``
      ``determine_num_available_blocks``, v0.6.4), which includes the CUDA context; the RTX 3090
      V0 log prints 0.35 GiB.  One log only: not modelled separately (the base term is used).

    Example: TP2, NVLink, 0.11.0 -> 128 + 512 MiB = 671,088,640 B.
    """
    base = 128 * MiB
    if tp_size * pp_size <= 1:
        return base
    kind = (interconnect or "nvlink").lower()
    if kind not in ("nvlink", "nvlink-c2c", "xgmi"):
        return base
    from kvplan.engines.runtime import NVLINK_COMM_BYTES, snapshot_includes_communicators

    if not snapshot_includes_communicators(engine="vllm", engine_version=engine_version or NEWEST_VERSION):
        return base + NVLINK_COMM_BYTES
    return base + 512 * MiB


def vllm_default_cuda_graph_bytes(*, config: Mapping[str, Any], pp_size: int = 1, enforce_eager: bool = False) -> int:
    """Cold estimate of the CUDA-graph pool (the value ≥0.20 subtracts from the budget).

    Mechanism: one graph per capture size (67 sizes up to 512 by default), each holding
    per-layer kernel nodes and their private-pool outputs, so memory grows with the
    number of layers on the rank.  ≈40 MiB per layer (0.6 MiB per layer per graph) is the
    middle of the five logged pools (0.018–0.064 GiB per layer, docs/vllm.md); 0 in eager mode.
    Example: 32 layers, PP1 -> 32 × 40 MiB = 1.25 GiB.
    """
    if enforce_eager:
        return 0
    n = int_if_set(flatten_config(config, engine="vllm"), "num_hidden_layers", maximum=MAX_LAYERS)
    return 40 * MiB * -(-n // max(pp_size, 1))
