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
2. Specs and groups (``vllm/v1/core/kv_cache_planning.py`` ``get_kv_cache_groups``,
   ``_get_kv_cache_groups_uniform_page_size``, ``unify_kv_cache_spec_page_size``,
   ``_get_packed_kv_cache_groups``), hybrid Mamba block unification
   (``vllm/platforms/interface.py`` ``Platform._align_hybrid_block_size``).
3. ``num_blocks = available // bytes_per_block`` with ``bytes_per_block = max over groups of
   Σ pages`` (``_get_kv_cache_bytes_per_block``), min over the TP×PP workers
   (``get_kv_cache_configs``).
4. Report (``vllm/v1/core/kv_cache_utils.py`` ``get_max_concurrency_for_kv_cache_config``,
   ``get_kv_cache_capacity``): concurrency = num_blocks / Σ_g blocks_g(max_model_len);
   tokens = int(concurrency × max_model_len) from v0.21; before, (num_blocks // groups) × block.
5. Fit check (``_check_enough_kv_cache_memory``, ``_estimate_max_model_len_from_groups``):
   refuse when ``bytes_per_block × Σ_g blocks_g(L) > available − bytes_per_block``; binary
   search over [1, L] for the estimated maximum model length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.engines.vllm.specs import (
    LayerKV,
    ModelKV,
    build_model_kv,
    text_config,
)
from kvplan.errors import InputError

GiB = 2**30
MiB = 2**20
NEWEST_VERSION = "0.33.0"
# bytes per (row × vocab) element alive at the sampler peak (see vllm_default_activation_bytes)
SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4 + 4 + 8 + 4 + 1 + 4 + 4
V0_SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4   # bf16 logits, fp32 logits, probs, logprobs (V0 Sampler)


# --------------------------------------------------------------------------- versions

def parse_version(v: str | None) -> tuple[int, int, int]:
    """``"0.10.1.1"`` -> (0, 10, 1); ``"0.11.0rc2"`` -> (0, 11, 0); None -> newest known."""
    import re
    text = v or NEWEST_VERSION
    nums = re.findall(r"\d+", text.split("+")[0])
    if not nums:
        raise InputError(f"'{v}' is not a vLLM version", field="engine_version", hint="write e.g. 0.10.2")
    parts = [int(x) for x in nums[:3]]
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


@dataclass(frozen=True)
class VersionRules:
    """What changed between vLLM versions (reference §8; verified items marked in docs/vllm.md)."""

    v0: bool                         # legacy V0 engine (before 0.8)
    default_utilization: float       # 0.92 from 0.20, 0.9 before (config/cache.py)
    graph_estimate_default: bool     # subtract the CUDA-graph estimate (from 0.20)
    tokens_from_concurrency: bool    # "GPU KV cache size" = int(conc × L) (from 0.21)
    inflight_concurrent_batches: bool  # SWA/chunked bound uses (pp+1)·B (from 0.26), else B
    consumed_accounting: bool        # ≥0.27 free-memory-drop accounting
    ceil_requested: bool             # ceil(u·T) (0.33 verified; float before, boundary unknown)
    hybrid_prefix_caching: bool      # Mamba "align" mode by default (0.33 verified; boundary assumed 0.22)
    dsv4_packed: bool                # 0.33 packed grouping for DeepSeek-V4


def version_rules(engine_version: str | None) -> VersionRules:
    v = parse_version(engine_version)
    return VersionRules(
        v0=v < (0, 8, 0),
        default_utilization=0.92 if v >= (0, 20, 0) else 0.9,
        graph_estimate_default=v >= (0, 20, 0),
        tokens_from_concurrency=v >= (0, 21, 0),
        inflight_concurrent_batches=v >= (0, 26, 0),
        consumed_accounting=v >= (0, 27, 0),
        ceil_requested=v >= (0, 12, 0),
        hybrid_prefix_caching=v >= (0, 22, 0),
        dsv4_packed=v >= (0, 33, 0),
    )


# --------------------------------------------------------------------------- inputs / outputs

@dataclass(frozen=True)
class VllmInputs:
    config: Mapping[str, Any]          # the HF config.json dict (may have text_config nesting)
    device_bytes: int                  # CUDA-visible total per GPU
    tp_size: int = 1
    pp_size: int = 1
    dp_size: int = 1
    gpu_memory_utilization: float | None = None   # None = the version's default
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
    sm_major: int | None = None        # GPU compute capability major (backend choice)
    gpu_name: str | None = None        # for the A100 / GB10 exclusions of the batch defaults
    interconnect: str | None = None    # nvlink | pcie | xgmi (cold non-torch); None = from gpu_name's preset
    sparse_mla_format: str | None = None   # "fp8_ds_mla" | "fp8" (DSA models, quantized KV)
    enable_prefix_caching: bool | None = None
    cuda_graph_estimate: bool | None = None  # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
    mamba_ssm_cache_dtype: str = "auto"
    num_speculative_tokens: int = 0
    num_draft_layers: int = 0


@dataclass(frozen=True)
class VllmPlan:
    engine_version: str
    available_kv_bytes: int            # "Available KV cache memory"
    num_blocks: int
    block_size: int
    num_groups: int
    bytes_per_block: int
    kv_bytes_per_token: int            # per GPU, summed over layers (the cell), for display
    gpu_kv_cache_tokens: int           # as that version prints "GPU KV cache size: N tokens"
    max_concurrency: float             # "Maximum concurrency for L tokens per request: X"
    max_model_len: int
    fits: bool                         # False when vLLM would refuse to start
    estimated_max_model_len: int | None
    groups: tuple[dict, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    budget_terms: tuple[tuple[str, int], ...]
    blocks_per_request: int = 0
    needed_bytes: int = 0              # KV one max_model_len request needs (fit check)
    dp_total_tokens: int = 0           # gpu_kv_cache_tokens × dp_size
    max_num_batched_tokens: int = 0
    max_num_seqs: int = 0


# --------------------------------------------------------------------------- budget

def vllm_requested_bytes(*, device_bytes: int, gpu_memory_utilization: float, ceil: bool = True) -> int:
    """``ceil(total × util)`` (``vllm/v1/worker/utils.py`` ``request_memory``, v0.33.0).

    Example: ``vllm_requested_bytes(device_bytes=85_520_809_984, gpu_memory_utilization=0.9)``
    = ceil(76,968,728,985.6) = 76,968,728,986 B (71.68 GiB).  Older builds kept the float
    product (≤0.11), which differs by under one byte.
    """
    prod = device_bytes * gpu_memory_utilization
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


def vllm_batch_defaults(*, device_bytes: int, gpu_name: str | None = None, offline: bool = False) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) for ``vllm serve`` (``EngineArgs.get_batch_defaults``, v0.33.0):
    ≥160 GiB -> (16384, 1024); ≥70 GiB and not A100/GB10 -> (8192, 1024); else (2048, 256)."""
    name = (gpu_name or "").lower()
    if device_bytes >= 160 * GiB:
        return 16384, 1024
    if device_bytes >= 70 * GiB and "a100" not in name and "gb10" not in name:
        return (16384 if offline else 8192), 1024
    return (8192 if offline else 2048), 256


def vllm_v0_batch_tokens(*, max_model_len: int, enable_chunked_prefill: bool | None = None) -> int:
    """V0 default ``max_num_batched_tokens`` (the profile batch), vLLM ≤0.7.

    (``vllm/config.py`` ``SchedulerConfig.__init__`` and ``vllm/engine/arg_utils.py``
    ``EngineArgs.create_engine_config``, v0.6.4.)  Chunked prefill is switched on by default
    only when ``max_model_len > 32768`` (text models); then the batch is 512 tokens, else
    ``max(max_model_len, 2048)``: the V0 profile run is one prefill of the whole context.

    Example: ``max_model_len=20000`` -> 20,000; ``29000`` -> 29,000; ``40000`` -> 512.
    """
    chunked = (max_model_len > 32768) if enable_chunked_prefill is None else enable_chunked_prefill
    return 512 if chunked else max(int(max_model_len), 2048)


def vllm_default_activation_bytes(
    *,
    config: Mapping[str, Any],
    tp_size: int = 1,
    ep_size: int = 1,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    v0: bool = False,
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

    Worked example: Llama-3.1-8B TP1, B=8192, S=1024: forward = 8192·2·(3·4096 + 3·14336)
    = 0.84 GiB; sampler = 1024·128256·39 = 4.77 GiB -> 4.77 GiB (H100 log: 4.76 GiB).
    """
    cfg = text_config(config)
    H = int(cfg.get("hidden_size") or 0)
    V = int(cfg.get("vocab_size") or 0)
    inter = int(cfg.get("intermediate_size") or 0)
    moe_i = int(cfg.get("moe_intermediate_size") or 0)
    n_exp = int(cfg.get("n_routed_experts") or cfg.get("num_experts") or cfg.get("num_local_experts") or 0)
    topk = int(cfg.get("num_experts_per_tok") or 0)
    B, S = int(max_num_batched_tokens), int(max_num_seqs)
    mlp_live = 3 * inter // max(tp_size, 1)
    moe_ws = 0
    if n_exp and topk and moe_i:
        n_shard = moe_i if ep_size > 1 else moe_i // max(tp_size, 1)
        moe_ws = topk * (3 * n_shard + H)
    forward = B * 2 * (3 * H + max(mlp_live, moe_ws))
    sampler = min(B, S) * V * (V0_SAMPLER_BYTES_PER_LOGIT if v0 else SAMPLER_BYTES_PER_LOGIT)
    return max(forward, sampler)


def vllm_default_non_torch_bytes(*, tp_size: int = 1, pp_size: int = 1, engine_version: str | None = None,
                                 interconnect: str | None = None) -> int:
    """Cold estimate of the memory allocated outside torch after vLLM's start-up snapshot (bytes).

    Mechanism: the CUDA context exists before the snapshot (``Worker.init_device``) and is outside
    the budget; what remains is, by version and interconnect (``world = tp × pp``):

    * 128 MiB on every rank: lazily created cuBLAS / attention workspaces.  Logged at TP1:
      0.13, 0.13, 0.13, 0.14, 0.14 GiB (llm-d H100 0.11.0) and 0.07 GiB (LLaVA 0.10.2).
    * world > 1 on NVLink (or unknown interconnect), snapshot taken *after* the communicators
      (≥0.11, ``runtime.snapshot_includes_communicators``): + 512 MiB of communicator buffers
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
    """
    if enforce_eager:
        return 0
    n = int(text_config(config).get("num_hidden_layers") or 0)
    return 40 * MiB * -(-n // max(pp_size, 1))


# --------------------------------------------------------------------------- grouping

@dataclass
class _Group:
    kind: str
    layers: list[LayerKV]
    block_size: int
    page: int                 # page bytes of one layer of the group (uniform page)
    window: int | None = None
    pages: dict[str, int] = field(default_factory=dict)  # per-layer page (uniform-type groups)
    bpb_override: int | None = None

    def bytes_per_block(self, names: set[str] | None = None) -> int:
        if self.bpb_override is not None:
            return self.bpb_override
        ls = self.layers if names is None else [x for x in self.layers if x.name in names]
        if self.pages:
            return sum(self.pages[x.name] for x in ls)
        return self.page * len(ls)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """Chunk size in [lower_bound, max] minimising Σ upward padding; ties -> larger
    (``kv_cache_planning.py`` ``_approximate_gcd``, v0.33.0)."""
    lo = max(1, lower_bound)
    hi = max(values)
    if lo > hi:
        return lo
    best, best_pad = lo, None
    for d in range(lo, hi + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _attn_kind(kind: str) -> str:
    """Grouping type: full and MLA (and indexer) are all full-attention-like."""
    return "full" if kind in ("full", "mla", "indexer") else kind


def hybrid_block_size(*, attn_token_bytes: int, mamba_state_bytes: int, block_size: int,
                      kernel_min_block: int = 16, mla: bool = False) -> int:
    """Attention block size that makes the attention page ≥ the Mamba page
    (``Platform._align_hybrid_block_size``, v0.33.0)::

        align = max(kernel_min_block, block_size)  (≥128 for MLA hybrids)
        bs    = align × cdiv(mamba_page, align × attn_bytes_per_token)

    Example, Qwen3-Next TP2 bf16: align 16, attention 1,024 B/token, GDN state 548,864 B ->
    16 × cdiv(548,864, 16,384) = 16 × 34 = 544.
    """
    align = max(kernel_min_block, block_size)
    if mla:
        align = max(align, 128)
    bs = align * _cdiv(mamba_state_bytes, align * attn_token_bytes)
    bs = kernel_min_block * _cdiv(bs, kernel_min_block)
    return max(bs, block_size)


def _group_layers(model: ModelKV, block_size: int, warnings: list[str], rules: VersionRules) -> list[_Group]:
    layers = list(model.layers)
    if not layers:
        return []
    if model.family == "dsv4":
        return _group_dsv4(layers, rules)
    # 1. all identical / 2. one type (full+MLA+indexer share one group, UniformTypeKVCacheSpecs)
    kinds = {_attn_kind(x.kind) for x in layers}
    windows = {x.window for x in layers}
    if len(kinds) == 1 and (kinds != {"swa"} or len(windows) == 1) and "mamba" not in kinds:
        k = kinds.pop()
        pages = {x.name: x.page_bytes(block_size) for x in layers}
        uniform = len(set(pages.values())) == 1
        return [_Group(k, layers, block_size, next(iter(pages.values())) if uniform else 0,
                       layers[0].window, {} if uniform else pages)]
    # 4. hybrid: unify page sizes, bucket by spec, equal-size groups dealt round-robin
    attn_pages = [x.page_bytes(block_size) for x in layers if x.kind != "mamba"]
    mamba_pages = [x.state_bytes for x in layers if x.kind == "mamba"]
    max_page = max(attn_pages + mamba_pages)
    buckets: dict[tuple, list[LayerKV]] = {}
    bs_of: dict[tuple, int] = {}
    for x in layers:
        if x.kind == "mamba":
            key = ("mamba", None, x.state_bytes)
            bs_of[key] = block_size
        else:
            p = x.page_bytes(block_size)
            bs = block_size * (max_page // p) if max_page % p == 0 else block_size
            if max_page % p:
                warnings.append(f"{x.name}: page {p} B padded to {max_page} B")
            key = (_attn_kind(x.kind), x.window, x.token_bytes)
            bs_of[key] = bs
        buckets.setdefault(key, []).append(x)
    sizes = [len(v) for v in buckets.values()]
    group_size = min(sizes)
    if max(sizes) < 1.5 * min(sizes):
        group_size = max(sizes)
    groups: list[_Group] = []
    for key, ls in buckets.items():
        pad = group_size - len(ls) % group_size
        if pad != group_size:
            warnings.append(f"Add {pad} padding layers, may waste at most {pad / len(ls) * 100:.2f}% KV cache memory")
        n = _cdiv(len(ls), group_size)
        for i in range(n):
            groups.append(_Group(key[0], ls[i::n], bs_of[key], max_page, key[1]))
    return groups


def _group_dsv4(layers: list[LayerKV], rules: VersionRules) -> list[_Group]:
    """DeepSeek-V4 buckets (block-256 MLA-type, SWA, block-4 states, block-8 states) and the
    packed split (``_get_packed_kv_cache_groups``, v0.33.0)."""
    buckets: dict[tuple, list[LayerKV]] = {}
    for x in layers:
        key = ("c",) if x.kind == "dsv4_c" else (x.kind, x.window if x.kind == "dsv4_swa" else x.block_size)
        buckets.setdefault(key, []).append(x)

    def per_page(ls: list[LayerKV]) -> dict[int, list[LayerKV]]:
        d: dict[int, list[LayerKV]] = {}
        for x in ls:
            d.setdefault(x.page_bytes(0), []).append(x)
        return d

    info = []
    for key, ls in buckets.items():
        pp = per_page(ls)
        balanced = len({len(v) for v in pp.values()}) == 1
        info.append((key, ls, pp, balanced))
    floor_rep = max((max(len(v) for v in pp.values()) for _, _, pp, bal in info if bal and len(pp) > 1), default=0)
    reps = _approximate_gcd([max(len(v) for v in pp.values()) for _, _, pp, bal in info if bal], floor_rep) if floor_rep else None
    groups: list[_Group] = []
    for key, ls, pp, bal in info:
        n = _cdiv(max(len(v) for v in pp.values()), reps) if (bal and reps) else 1
        kind = {"c": "dsv4_c"}.get(key[0], key[0])
        bs = ls[0].block_size or 256
        window = ls[0].window if kind != "dsv4_c" else None
        repeats = list(zip(*pp.values()))
        for i in range(n):
            part = [x for r in repeats[i::n] for x in r] if n > 1 else ls
            groups.append(_Group(kind, part, bs, 0, window, {x.name: x.page_bytes(0) for x in part}))
    if not rules.dsv4_packed and reps:
        # ≤0.32 (0.22.0 wheel per the reference): bytes/block = Σ distinct MLA-type pages × tuples
        distinct = sorted({x.page_bytes(0) for x in buckets.get(("c",), []) + [
            y for k, v in buckets.items() if k[0] == "dsv4_swa" for y in v]})
        bpb = sum(distinct) * reps
        for g in groups:
            g.bpb_override = bpb
    return groups


def _blocks_per_request(g: _Group, L: int, inflight: int, mamba_blocks: int) -> int:
    """Blocks one max_model_len request takes from group g (``KVCacheSpec.max_memory_usage_bytes``
    / page, v0.33.0): full ``cdiv(L, bs)``; sliding ``cdiv(min(W−1+I, L), bs) + 1``; chunked
    ``cdiv(min(C+I, L), bs)``; Mamba ``2+spec`` (align) or ``1+spec``."""
    if g.kind in ("full", "mla", "indexer", "dsv4_c"):
        return _cdiv(L, g.block_size)
    if g.kind in ("swa", "dsv4_swa", "dsv4_state"):
        return _cdiv(min(g.window - 1 + inflight, L), g.block_size) + 1
    if g.kind == "chunked":
        return _cdiv(min(g.window + inflight, L), g.block_size)
    if g.kind == "mamba":
        return mamba_blocks
    raise AssertionError(g.kind)


def _pp_stage_layers(num_layers: int, pp: int) -> list[range]:
    """Decoder layers per PP stage (``distributed/utils.py`` ``get_pp_indices``, v0.33.0):
    even split, the remainder one each to the stages before the last, from the second-to-last."""
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    out, start = [], 0
    for p in parts:
        out.append(range(start, start + p))
        start += p
    return out


# --------------------------------------------------------------------------- main entry

def _interconnect(inp: VllmInputs) -> str | None:
    """The GPU link (nvlink / pcie / xgmi) for the cold non-torch term: given, else the preset of ``gpu_name``."""
    if inp.interconnect or not inp.gpu_name:
        return inp.interconnect
    try:
        from kvplan.inputs.resolve import resolve_gpu  # lazy: presets are only needed in cold mode
        return resolve_gpu(inp.gpu_name).interconnect
    except Exception:
        return None


def _weights_from_helper(inp: VllmInputs, cfg: Mapping[str, Any]) -> tuple[int, str]:
    from kvplan.weights import estimate as weights  # lazy: only cold mode estimates weights
    quant = inp.quantization or weights.quantization_from_config(cfg)
    est = weights.estimate_weight_bytes(
        config=cfg, quantization=quant, checkpoint_bytes=inp.checkpoint_bytes,
        tp_size=inp.tp_size, pp_size=inp.pp_size, ep_size=inp.ep_size,
        attn_dp_size=1, engine="vllm")
    return int(est.per_gpu_bytes), f"weights estimated ({quant}) by kvplan.weights"


def plan_vllm(inp: VllmInputs) -> VllmPlan:
    """See :func:`_plan_vllm`; a config the KV-spec or weight walk cannot read raises InputError on ``--model``."""
    from kvplan.hfconfig.spec import config_errors

    with config_errors("vLLM planning"):
        return _plan_vllm(inp)


def _plan_vllm(inp: VllmInputs) -> VllmPlan:
    """Plan one vLLM engine (one DP rank): budget, blocks, printed pool size and the fit check.

    See the module docstring for the formulas and sources.  Worked example (Llama-3.1-8B-class,
    32 layers × 8 KV heads × 128, bf16, TP1, block 16, ``kv_cache_memory_bytes`` = 10 GiB,
    max_model_len 32,768): bytes/block = 32 × 16 × 8 × 256 × 2 = 2,097,152; num_blocks =
    5,120; tokens = 81,920; concurrency = 5,120 / 2,048 = 2.50.
    """
    rules = version_rules(inp.engine_version)
    version = inp.engine_version or NEWEST_VERSION
    assumptions: list[str] = []
    warnings: list[str] = []
    if inp.tp_size < 1 or inp.pp_size < 1 or inp.dp_size < 1:
        raise InputError("parallel sizes must be ≥ 1", field="tp_size")
    if inp.device_bytes <= 0:
        raise InputError("device memory must be positive", field="device_bytes")
    cfg = text_config(inp.config)
    heads = cfg.get("num_attention_heads")
    if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0 and heads % inp.tp_size:
        # vllm/config/model.py ModelConfig.verify_with_parallel_config, v0.33.0
        raise InputError(f"vLLM needs the {heads} attention heads divisible by the tensor parallel size {inp.tp_size}",
                         field="--tp-size", hint="use a TP size that divides the attention heads")

    # ---- model and block size
    model = build_model_kv(config=inp.config, tp_size=inp.tp_size, kv_cache_dtype=inp.kv_cache_dtype,
                           sm_major=inp.sm_major, sparse_mla_format=inp.sparse_mla_format,
                           mamba_ssm_cache_dtype=inp.mamba_ssm_cache_dtype,
                           num_draft_layers=inp.num_draft_layers)
    assumptions.extend(model.notes)
    user_bs = inp.block_size
    if model.family in ("mla", "dsa"):
        block_size = user_bs or 64
        if not user_bs:
            assumptions.append("MLA block size 64 (FlashMLA / sparse-MLA backends); pass block_size for 16/32/128 backends")
    elif model.family == "dsv4":
        block_size = 256
    else:
        block_size = user_bs or 16
    max_mamba = max((x.state_bytes for x in model.layers if x.kind == "mamba"), default=0)
    if max_mamba:
        new_bs = hybrid_block_size(attn_token_bytes=model.attn_token_bytes_1layer, mamba_state_bytes=max_mamba,
                                   block_size=block_size)
        if new_bs != block_size:
            warnings.append(f"Setting attention block size to {new_bs} tokens to ensure that attention page size is >= mamba page size.")
            block_size = new_bs
        attn_page = block_size * model.attn_token_bytes_1layer
        if attn_page > max_mamba:
            warnings.append(f"Padding mamba page size by {100 * (attn_page - max_mamba) / max_mamba:.2f}% to ensure that mamba page size and attention page size are exactly equal.")
        # Mamba pages are padded to the attention page
        model = ModelKV(tuple(LayerKV(x.name, x.kind, x.layer, x.token_bytes, attn_page, x.window)
                              if x.kind == "mamba" else x for x in model.layers),
                        model.num_decoder_layers, model.family, model.attn_token_bytes_1layer,
                        block_size, model.notes)

    # ---- scheduler knobs
    L = inp.max_model_len or int(cfg.get("max_position_embeddings") or 0)
    if L <= 0:
        raise InputError("max_model_len is not known", field="max_model_len", hint="pass --max-model-len")
    if rules.v0:
        dflt_b, dflt_s = vllm_v0_batch_tokens(max_model_len=L), 256
    else:
        dflt_b, dflt_s = vllm_batch_defaults(device_bytes=inp.device_bytes, gpu_name=inp.gpu_name)
    B = inp.max_num_batched_tokens or dflt_b
    S = inp.max_num_seqs or dflt_s
    if not inp.max_num_batched_tokens:
        assumptions.append(f"max_num_batched_tokens {B} (" + ("V0 default: max(max_model_len, 2048), 512 with "
                           "chunked prefill above 32K)" if rules.v0 else "vllm serve default for this GPU size)"))
    if not inp.max_model_len:
        assumptions.append(f"max_model_len {L} from max_position_embeddings")
    inflight = B * ((inp.pp_size + 1) if rules.inflight_concurrent_batches else 1)
    prefix = inp.enable_prefix_caching if inp.enable_prefix_caching is not None else (
        rules.hybrid_prefix_caching or model.family != "hybrid_mamba")
    mamba_blocks = (2 if prefix else 1) + inp.num_speculative_tokens
    if model.family == "hybrid_mamba":
        assumptions.append(f"Mamba cache mode {'align' if prefix else 'none'}: {mamba_blocks} block(s) per Mamba group per request")

    # ---- budget
    terms: list[tuple[str, int]] = []
    util = inp.gpu_memory_utilization if inp.gpu_memory_utilization is not None else rules.default_utilization
    if inp.kv_cache_memory_bytes is not None:
        avail = int(inp.kv_cache_memory_bytes)
        terms.append(("kv_cache_memory_bytes", avail))
    else:
        requested = vllm_requested_bytes(device_bytes=inp.device_bytes, gpu_memory_utilization=util,
                                         ceil=rules.ceil_requested)
        terms.append(("requested", requested))
        if inp.consumed_bytes is not None:
            consumed = int(inp.consumed_bytes)
            terms.append(("consumed (weights + non-torch)", consumed))
            W, N = consumed, 0
        else:
            if inp.weight_bytes is not None:
                W = int(inp.weight_bytes)
            else:
                W, note = _weights_from_helper(inp, cfg)
                assumptions.append(note)
            if inp.non_torch_bytes is not None:
                N = int(inp.non_torch_bytes)
            else:
                N = vllm_default_non_torch_bytes(tp_size=inp.tp_size, pp_size=inp.pp_size,
                                                 engine_version=version, interconnect=_interconnect(inp))
                assumptions.append("non-torch memory estimated (cold)")
            terms.append(("weights", W))
            terms.append(("non_torch", N))
        if inp.activation_bytes is not None:
            A = int(inp.activation_bytes)
        else:
            A = vllm_default_activation_bytes(config=inp.config, tp_size=inp.tp_size, ep_size=inp.ep_size,
                                              max_num_batched_tokens=B, max_num_seqs=S, v0=rules.v0)
            assumptions.append("activation peak estimated (cold)")
        terms.append(("activation", A))
        graph_on = inp.cuda_graph_estimate if inp.cuda_graph_estimate is not None else rules.graph_estimate_default
        G = 0
        if graph_on and not inp.enforce_eager and not rules.v0:
            if inp.cuda_graph_bytes is not None:
                G = int(inp.cuda_graph_bytes)
            else:
                G = vllm_default_cuda_graph_bytes(config=inp.config, pp_size=inp.pp_size)
                assumptions.append("CUDA-graph estimate (cold)")
        terms.append(("cuda_graph", G))
        avail = vllm_available_kv_bytes(requested_bytes=requested, weight_bytes=W, activation_bytes=A,
                                        non_torch_bytes=N, cuda_graph_bytes=G)

    # ---- groups, per-worker bytes/block (PP projects groups on each stage)
    groups = _group_layers(model, block_size, warnings, rules)
    if not groups:
        raise InputError("the model has no KV cache layers", field="config")
    stages = _pp_stage_layers(model.num_decoder_layers, inp.pp_size)
    extra = [x.layer for x in model.layers if x.layer >= model.num_decoder_layers]
    bpb_per_stage = []
    for si, rng in enumerate(stages):
        lset = set(rng)
        if si == len(stages) - 1:
            lset.update(extra)
        names = {x.name for x in model.layers if x.layer in lset}
        bpb_per_stage.append(max(g.bytes_per_block(names) for g in groups))
    per_req = sum(_blocks_per_request(g, L, inflight, mamba_blocks) for g in groups)

    def blocks_for(length: int) -> int:
        return sum(_blocks_per_request(g, length, inflight, mamba_blocks) for g in groups)

    num_blocks = min(max(avail, 0) // b for b in bpb_per_stage if b > 0)
    bpb = max(bpb_per_stage)
    # fit check and estimate, per worker (the null block is held back)
    fits, est = True, None
    needed = 0
    for b in bpb_per_stage:
        if b <= 0:
            continue
        check = avail - b
        need = b * per_req
        needed = max(needed, need)
        if avail <= 0 or need > check:
            fits = False
            lo, hi, res = 1, L, 0
            if b * blocks_for(1) <= check:
                res = 1
                while lo <= hi:
                    mid = (lo + hi) // 2
                    if b * blocks_for(mid) <= check:
                        res, lo = mid, mid + 1
                    else:
                        hi = mid - 1
            est = res if est is None else min(est, res)

    conc = num_blocks / per_req if per_req else 0.0
    min_bs = min(g.block_size for g in groups)
    if rules.v0:
        tokens = num_blocks * block_size
        conc = tokens / L
    elif rules.tokens_from_concurrency:
        tokens = int(conc * L)
    else:
        tokens = (num_blocks // len(groups)) * min_bs

    kv_per_token = 0
    if model.family != "dsv4":
        kv_per_token = sum((x.token_bytes if x.kind != "mamba" else 0) for x in model.layers
                            if x.layer in set(stages[0]) or inp.pp_size == 1)
    if not fits:
        warnings.append(f"vLLM refuses to start: one {L}-token request needs {needed / GiB:.2f} GiB, "
                        f"estimated maximum model length {est}")
    gdesc = tuple({"kind": g.kind, "layers": len(g.layers), "block_size": g.block_size,
                   "page_bytes": g.page if not g.pages else max(g.pages.values()),
                   "group_bytes_per_block": g.bytes_per_block(), "window": g.window,
                   "blocks_per_request": _blocks_per_request(g, L, inflight, mamba_blocks)} for g in groups)
    return VllmPlan(
        engine_version=version, available_kv_bytes=int(avail), num_blocks=int(num_blocks),
        block_size=block_size, num_groups=len(groups), bytes_per_block=int(bpb),
        kv_bytes_per_token=int(kv_per_token), gpu_kv_cache_tokens=int(tokens), max_concurrency=conc,
        max_model_len=L, fits=fits, estimated_max_model_len=est, groups=gdesc,
        assumptions=tuple(assumptions), warnings=tuple(warnings), budget_terms=tuple(terms),
        blocks_per_request=per_req, needed_bytes=int(needed), dp_total_tokens=int(tokens) * inp.dp_size,
        max_num_batched_tokens=B, max_num_seqs=S,
    )
