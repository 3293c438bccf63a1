"""SGLang's pools for Mamba / linear-attention hybrids (Qwen3-Next, Qwen3.5/3.6/3.8, Nemotron-H, Granite-4 hybrid,
Falcon-H1, Kimi-Linear): the state carve, the attention KV pool, the planner (SGLang 0.5.23).

The geometry (attention vs linear layers, state shapes) is :mod:`kvplan.geometry.mamba`.

Such a model has two kinds of layers: *attention* layers, which keep an ordinary per-token KV cache,
and *linear* layers (Mamba2 / Gated DeltaNet / KDA), which keep a fixed-size state per request (a
short convolution window and a recurrent SSM matrix). SGLang first carves a pool of per-request state
slots out of the KV budget, then sizes the attention KV pool from what is left:

    rest      = budget (GiB, after weights, reserve and multimodal reservation)
    K         = max_mamba_cache_size: --max-mamba-cache-size // dp | mrr // dp (radix off + mrr) |
                int((rest * r / (1 + r) * 2^30 - per_req) // per_req)          r = --mamba-full-memory-ratio 0.9
    rest     -= (K + 1) * per_req / 2^30                                        (+1: the pool's padding slot)
    tokens    = page_floor(int(rest * 2^30) // attention_cell)                  (attention layers only)
    mrr      <= K // mamba_ratio      (1 without radix cache; 3 + extra-buffer slots with it: 5 by default)

Sources (sgl-project/sglang, v0.5.23, package paths under ``python/``):

* ``sglang/srt/configs/mamba_utils.py``: ``Mamba2StateShape.create``, ``KimiLinearStateShape.create``,
  ``extra_groups_for_head_shards``, ``mamba2_state_dtype``, ``BaseLinearStateParams.mamba_cache_per_req``;
* ``sglang/srt/configs/qwen3_next.py`` (Qwen3.5 inherits it through ``Qwen3_5TextConfig``),
  ``nemotron_h.py``, ``granitemoehybrid.py``, ``falcon_h1.py``, ``kimi_linear.py``: layer ids and the
  ``mamba2_cache_params`` arguments; ``sglang/srt/configs/hybrid_arch.py`` ``mambaish_config``;
* ``sglang/srt/mem_cache/kv_cache_configurator.py``: ``KVCacheConfigurator._handle_max_mamba_cache``,
  ``_calculate_mamba_ratio``, ``resolve_max_num_reqs``, ``_profile_available_bytes``;
* ``sglang/srt/model_executor/pool_configurator.py``: ``DefaultPoolConfigurator.__init__`` (attention layers
  = ``full_attention_layer_ids`` inside the PP stage);
* ``sglang/srt/arg_groups/overrides.py``: ``_mamba_radix_cache_resolution``, ``_MAMBA_EXTRA_BUFFER_ARCHS``;
  ``sglang/srt/mem_cache/allocation_sizing.py`` ``get_mamba_tracking_slots``;
* ``sglang/srt/environ.py``: ``SGLANG_MAMBA_CONV_DTYPE`` (bfloat16), ``SGLANG_MAMBA_SSM_DTYPE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.engines.sglang.pools.base import (
    SHOW_TPS,
    Breakdown,
    PoolContext,
    PoolPlan,
    request_cap,
)
from kvplan.engines.sglang.pools.gqa import gqa_bytes_per_token
from kvplan.engines.sglang.pools.mla import mla_bytes_per_token
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.geometry.mamba import MambaGeometry, mamba_geometry_from_config, mamba_state_bytes
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.result import Pool
from kvplan.units import GiB as GIB

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec


_DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}

#: ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO`` (kv_cache_configurator.py).
MAMBA_BASE_RATIO = 3

#: ``_MAMBA_EXTRA_BUFFER_ARCHS`` (arg_groups/overrides.py, v0.5.23), the hybrids kvplan reads.
EXTRA_BUFFER_ARCHS = frozenset({
    "KimiLinearForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen3NextForCausalLM", "FalconH1ForCausalLM",
    "GraniteMoeHybridForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3", "InternS2PreviewForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
})


# --------------------------------------------------------------------------------------------------
# State bytes
# --------------------------------------------------------------------------------------------------


def _dtype_bytes(name: str, field: str) -> int:
    key = str(name).strip().lower()
    if key not in _DTYPE_BYTES:
        raise InputError(f"unknown Mamba state dtype {name!r}", field=field, hint="float32, bfloat16 or float16")
    return _DTYPE_BYTES[key]


def mamba_state_dtypes(*, geometry: MambaGeometry, ssm_dtype: str | None = None,
                       conv_dtype: str = "bfloat16") -> tuple[int, int]:
    """``(conv_bytes, ssm_bytes)`` per element. SSM: ``--mamba-ssm-dtype`` (env ``SGLANG_MAMBA_SSM_DTYPE``)
    > the config's ``mamba_ssm_dtype`` (only for classes that pass it) > float32; an unknown config value
    falls back to float32 (SGLang warns). Conv: ``SGLANG_MAMBA_CONV_DTYPE`` (bfloat16).

    Source: sgl-project/sglang python/sglang/srt/configs/mamba_utils.py ``mamba2_state_dtype``, v0.5.23.
    """
    conv_b = _dtype_bytes(conv_dtype, "SGLANG_MAMBA_CONV_DTYPE")
    if ssm_dtype is not None:
        return conv_b, _dtype_bytes(ssm_dtype, "--mamba-ssm-dtype")
    cfg = geometry.config_ssm_dtype
    if cfg in ("float32", "bfloat16", "float16"):
        return conv_b, _DTYPE_BYTES[cfg]
    return conv_b, 4


def mamba_state_bytes_per_layer(*, geometry: MambaGeometry, tp_size: int, ssm_dtype: str | None = None) -> int:
    """Bytes of one request's state in one linear layer: ``prod(conv) * conv_b + prod(ssm) * ssm_b``.

    Example: Qwen3-Next TP2, fp32 ssm: 4096 x 3 x 2 + 16 x 128 x 128 x 4 = 24,576 + 1,048,576 = 1,073,152.
    """
    conv_b, ssm_b = mamba_state_dtypes(geometry=geometry, ssm_dtype=ssm_dtype)
    return mamba_state_bytes(geometry=geometry, tp_size=tp_size, conv_bytes=conv_b, ssm_bytes=ssm_b)


def mamba_state_bytes_per_request(*, geometry: MambaGeometry, tp_size: int, ssm_dtype: str | None = None,
                                  stage_layers: tuple[int, int] | None = None, pp_size: int = 1) -> int:
    """Per-request state bytes one rank budgets (``stage_per_req``).

    ``per_req = per_layer * len(linear_layers)`` (``mamba_cache_per_req``). Under PP SGLang charges every
    rank the *largest* stage's share: ``int(per_req * max_stage_linear_layers / len(linear_layers))``
    (pass ``pp_size``). ``stage_layers=(start, end)`` instead returns what that stage's pool allocates per
    slot (``per_layer * linear layers in the stage``).

    Examples: Qwen3-Next-80B TP2: 1,073,152 x 36 = 38,633,472 B; Nemotron-3-Nano TP1: 2,134,016 x 23 =
    49,082,368 B; Nemotron-3-Nano PP3 (stages 17/17/18 layers with 8/7/8 Mamba layers): 8/23 of that =
    17,072,128 B.

    Source: sgl-project/sglang python/sglang/srt/configs/mamba_utils.py
    ``BaseLinearStateParams.mamba_cache_per_req``; python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache`` (``pp_layer_scale``), v0.5.23.
    """
    per_layer = mamba_state_bytes_per_layer(geometry=geometry, tp_size=tp_size, ssm_dtype=ssm_dtype)
    lin = geometry.linear_layers
    if stage_layers is not None:
        s, e = stage_layers
        return per_layer * sum(s <= i < e for i in lin)
    per_req = per_layer * len(lin)
    if pp_size > 1 and lin:
        ranges = pp_layer_ranges(num_layers=geometry.num_hidden_layers, pp_size=pp_size)
        most = max(sum(s <= i < e for i in lin) for s, e in ranges)
        return int(per_req * (most / len(lin)))
    return per_req


# --------------------------------------------------------------------------------------------------
# The carve
# --------------------------------------------------------------------------------------------------


def mamba_ratio(*, radix_cache: bool = True, overlap_schedule: bool = True, page_size: int = 1,
                architecture: str = "", strategy: str = "auto", skip_decode_lock: bool = False) -> int:
    """State slots SGLang reserves per running request (``max_running_requests <= K // ratio``).

    Radix cache off -> 1. Otherwise ``--mamba-radix-cache-strategy auto`` resolves to ``extra_buffer``
    when the overlap schedule is on or the page size is > 1 and the architecture supports it (triton
    linear-attention backend; Qwen3-Next/3.5, Nemotron-H, Granite hybrid, Falcon-H1, Kimi-Linear), else to
    ``no_buffer`` (and the overlap schedule is turned off). ratio = 3 (2 with
    ``SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK``) + tracking slots: extra_buffer 2 with overlap / 1 without
    (``extra_buffer_lazy`` 1); no_buffer 0 (1 with the skip-decode-lock option).
    Defaults (radix on, overlap on) -> 5.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._calculate_mamba_ratio``; python/sglang/srt/arg_groups/overrides.py
    ``_mamba_radix_cache_resolution``; python/sglang/srt/mem_cache/allocation_sizing.py
    ``get_mamba_tracking_slots``, v0.5.23.
    """
    if not radix_cache:
        return 1
    if strategy == "auto":
        wants = overlap_schedule or page_size > 1
        strategy = "extra_buffer" if wants and architecture in EXTRA_BUFFER_ARCHS else "no_buffer"
        if strategy == "no_buffer":
            overlap_schedule = False
    base = MAMBA_BASE_RATIO - (1 if skip_decode_lock else 0)
    if strategy == "extra_buffer_lazy":
        return base + 1
    if strategy == "extra_buffer":
        return base + (2 if overlap_schedule else 1)
    if strategy == "no_buffer":
        return base + (1 if skip_decode_lock else 0)
    raise InputError(f"unknown --mamba-radix-cache-strategy {strategy!r}", field="--mamba-radix-cache-strategy",
                     hint="auto, no_buffer, extra_buffer or extra_buffer_lazy")


@dataclass(frozen=True)
class MambaPools:
    """Result of :func:`mamba_carve` for one attention rank."""

    mamba_slots: int               # max_mamba_cache_size per rank (K); the pool allocates K + 1 slots
    state_bytes: int               # (K + 1) * per_request_bytes (+ speculative intermediate states)
    per_request_bytes: int
    kv_budget_bytes: int           # what is left for the attention KV pool (int(rest * 2^30))
    mamba_ratio: int
    max_running_requests_cap: int  # K // mamba_ratio
    notes: tuple[str, ...]
    mode: str = "ratio"            # "ratio" | "explicit" | "max-running-requests"
    intermediate_bytes: int = 0    # speculative intermediate SSM states

    @property
    def components(self) -> tuple[tuple[str, int], ...]:
        out = [("linear-attention state", (self.mamba_slots + 1) * self.per_request_bytes)]
        if self.intermediate_bytes:
            out.append(("speculative intermediate state", self.intermediate_bytes))
        return tuple(out)


def mamba_carve(
    *,
    geometry: MambaGeometry,
    budget_bytes: int,
    tp_size: int,
    mamba_full_memory_ratio: float = 0.9,
    max_mamba_cache_size: int | None = None,
    radix_cache: bool = True,
    max_running_requests: int | None = None,
    attn_dp_size: int = 1,
    speculative_num_draft_tokens: int = 0,
    overlap_schedule: bool = True,
    page_size: int = 1,
    ssm_dtype: str | None = None,
    pp_size: int = 1,
    mamba_radix_cache_strategy: str = "auto",
) -> MambaPools:
    """Carve the per-request state pool out of a KV budget, as ``_handle_max_mamba_cache`` does.

    ``budget_bytes`` = ``kvplan.engines.sglang.rules.budget_bytes(...)`` (the multimodal reservation already
    taken off); SGLang works in GiB floats, so ``rest = budget_bytes / 2^30``. ``p`` =
    :func:`mamba_state_bytes_per_request` (with ``pp_size``), ``r`` = ``mamba_full_memory_ratio``,
    ``D`` = speculative draft tokens, ``q`` = :func:`mamba_ratio`::

        K = --max-mamba-cache-size // dp                      when given
          = max(1, mrr // dp)                                 radix cache off and --max-running-requests
          = int((rest * r/(1+r) * 2^30 - p) // p)             otherwise, no speculative decoding
          = int((rest * r/(1+r) * 2^30 - p*(1+D)) // (p*(1 + D/q)))   with speculative decoding
        spec: rest -= p * (min(max(1, mrr // dp), K // q) + 1) * D / 2^30   (K + 1 with radix off + mrr)
        rest -= (K + 1) * p / 2^30
        kv_budget = int(rest * 2^30);  max_running_requests <= K // q

    Worked example (Qwen3-Next-80B TP2, budget int(44.59 x 2^30) = 47,878,147,932 B, r 0.9):
    p = 38,633,472; state budget = 0.9/1.9 of it = 22,679,122,705 B -> K = int(586.04) = 586; state =
    587 x p = 22,677,848,064 B; kv_budget = 25,200,299,868 B; q = 5 -> at most 117 running requests.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator._handle_max_mamba_cache``, ``_calculate_mamba_ratio``, ``resolve_max_num_reqs``, v0.5.23.
    """
    if not float(mamba_full_memory_ratio) > 0.0:
        raise InputError(f"--mamba-full-memory-ratio must be positive, got {mamba_full_memory_ratio}",
                         field="--mamba-full-memory-ratio")
    if attn_dp_size <= 0:
        raise InputError(f"attn_dp_size must be positive, got {attn_dp_size}", field="--dp-size")
    p = mamba_state_bytes_per_request(geometry=geometry, tp_size=tp_size, ssm_dtype=ssm_dtype, pp_size=pp_size)
    if p <= 0:
        raise InputError("the model has no linear-attention layer", field="--model")
    q = mamba_ratio(radix_cache=radix_cache, overlap_schedule=overlap_schedule, page_size=page_size,
                    architecture=geometry.architecture, strategy=mamba_radix_cache_strategy)
    rest = budget_bytes / GIB
    spec = speculative_num_draft_tokens > 0
    if spec and max_running_requests is None:
        raise InputError("speculative decoding on a Mamba hybrid needs --max-running-requests",
                         field="--max-running-requests", hint="SGLang asserts it is set when sizing the state pool")
    notes: list[str] = []
    inter = 0
    mrr_rank = max(1, max_running_requests // attn_dp_size) if max_running_requests is not None else 0
    if max_mamba_cache_size is not None:
        mode = "explicit"
        K = max_mamba_cache_size // attn_dp_size
        if spec:
            capped = min(mrr_rank, K // q)
            inter = p * (capped + 1) * speculative_num_draft_tokens
            rest -= inter / GIB
        notes.append(f"max_mamba_cache_size {K} per rank (--max-mamba-cache-size {max_mamba_cache_size})")
    elif not radix_cache and max_running_requests is not None:
        mode = "max-running-requests"
        K = mrr_rank
        if spec:
            inter = p * (K + 1) * speculative_num_draft_tokens
            rest -= inter / GIB
        notes.append(f"max_mamba_cache_size {K} = --max-running-requests per rank (radix cache off)")
    else:
        mode = "ratio"
        r = float(mamba_full_memory_ratio)
        mb = rest * r / (1 + r) * GIB
        if spec:
            D = speculative_num_draft_tokens
            K = int((mb - p * (1 + D)) // (p * (1 + D / q)))
            capped = min(mrr_rank, K // q)
            inter = p * (capped + 1) * D
            rest -= inter / GIB
        else:
            K = int((mb - p) // p)
        notes.append(f"state pool: {K} slots (+1 padding) of {p:,} B from {r}/(1 + {r}) of the budget "
                     f"(--mamba-full-memory-ratio)")
    if K <= 0:
        raise InputError(
            f"not enough memory for the linear-attention state cache (max_mamba_cache_size={K}, "
            f"{p / 2**20:.2f} MiB per request)", field="--mem-fraction-static",
            hint="reduce --max-running-requests, raise --mem-fraction-static, or use more GPUs")
    state = (K + 1) * p
    rest -= state / GIB
    cap = K // q
    if cap <= 0:
        raise InputError(f"the state cache ({K} slots, {q} per request) cannot serve one request",
                         field="--mem-fraction-static",
                         hint="raise --mamba-full-memory-ratio or --max-mamba-cache-size")
    notes.append(f"max_running_requests <= {K} // {q} = {cap} (mamba state slots per request: {q})")
    kv_budget = int(rest * GIB)
    if kv_budget <= 0:
        raise InputError("the linear-attention state leaves no memory for the attention KV cache",
                         field="--mem-fraction-static", hint="raise --mem-fraction-static or lower the state pool")
    return MambaPools(mamba_slots=K, state_bytes=state + inter, per_request_bytes=p, kv_budget_bytes=kv_budget,
                      mamba_ratio=q, max_running_requests_cap=cap, notes=tuple(notes), mode=mode,
                      intermediate_bytes=inter)


def mamba_hybrid_kv_cell(*, geometry: MambaGeometry, attn_tp_size: int, kv_dtype: str,
                         stage_layers: tuple[int, int] | None = None, dcp_size: int = 1) -> int:
    """Per-token KV bytes of a hybrid's *attention* layers in one PP stage (0 if the stage has none).

    GQA attention: :func:`kvplan.engines.sglang.pools.gqa.gqa_bytes_per_token` with ``num_layers`` = the attention
    layers inside the stage (``full_attention_layer_ids``); Kimi-Linear's MLA layers:
    :func:`kvplan.engines.sglang.pools.mla.mla_bytes_per_token`. Tokens are then ``page_floor(kv_budget // cell)``
    (``kvplan.engines.sglang.rules.pool_tokens`` with :attr:`MambaPools.kv_budget_bytes`).

    Examples (bf16): Qwen3-Next TP2 12 x 1 x 512 x 2 = 12,288 B; Nemotron-3-Nano TP1 6 x 2 x 256 x 2 = 6,144 B;
    Qwen3.5-27B TP1 16 x 4 x 512 x 2 = 65,536 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (mambaish ``full_attention_layer_ids`` in the stage), v0.5.23.
    """
    layers = geometry.attention_layers_in(stage_layers)
    if layers == 0:
        return 0
    if geometry.attention_kind == Family.MLA:
        return mla_bytes_per_token(kv_lora_rank=geometry.kv_lora_rank, qk_rope_head_dim=geometry.qk_rope_head_dim,
                                   num_layers=layers, kv_dtype=kv_dtype)
    return gqa_bytes_per_token(num_kv_heads=geometry.num_kv_heads, head_dim=geometry.attn_head_dim,
                               v_head_dim=geometry.attn_v_head_dim, num_layers=layers, attn_tp_size=attn_tp_size,
                               kv_dtype=kv_dtype, dcp_size=dcp_size)


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def _attention_pool(ctx: PoolContext, geom: MambaGeometry, carve: MambaPools | None,
                    plan: PoolPlan) -> None:
    """The attention layers' KV pool from what the state carve left (MIN over PP stages), into ``plan``."""
    R, f = ctx.rules, ctx.flags
    stages = R.pp_layer_ranges(num_layers=geom.num_hidden_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
    cells = [mamba_hybrid_kv_cell(geometry=geom, attn_tp_size=ctx.attn_tp, kv_dtype=ctx.kv_dtype,
                                  stage_layers=r if ctx.pp > 1 else None) for r in stages]
    cells = [c for c in cells if c] or [0]
    plan.cell = max(cells)
    if carve is None or plan.cell == 0:
        return
    tokens = min(R.pool_tokens(budget_bytes=carve.kv_budget_bytes, cell_bytes=c, page_size=ctx.page_size)
                 for c in cells)
    if f.max_total_tokens is not None and f.max_total_tokens < tokens:
        tokens = R.page_floor(tokens=f.max_total_tokens, page_size=ctx.page_size)
        plan.warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens")
    plan.tokens = tokens
    # state_bytes already holds the speculative intermediate states; adding them again is what kvplan did before
    # the re-layout (the contract goldens), kept until it is checked against a speculative Mamba log
    plan.fixed_bytes = carve.state_bytes + carve.intermediate_bytes
    plan.kv_pool_bytes = tokens * int(plan.cell) + plan.fixed_bytes
    plan.pools.append(Pool(name="attention KV", tokens=tokens, bytes=tokens * int(plan.cell),
                           bytes_per_token=plan.cell))
    for name, nbytes in carve.components:
        plan.pools.append(Pool(name=name, bytes=nbytes,
                               note=f"{carve.mamba_slots + 1} slots x {carve.per_request_bytes:,} B"))
    plan.notes.extend(carve.notes)


def plan(ctx: PoolContext) -> PoolPlan:
    """The hybrid's pools: :func:`mamba_carve` takes the state slots off the budget, the attention KV pool gets the
    rest (:func:`mamba_hybrid_kv_cell`, MIN over PP stages), and the request cap is bounded by the state slots."""
    f = ctx.flags
    geom = mamba_geometry_from_config(ctx.config)
    carve = mamba_carve(
        geometry=geom, budget_bytes=max(ctx.budget, 0), tp_size=ctx.attn_tp,
        mamba_full_memory_ratio=f.mamba_full_memory_ratio, max_mamba_cache_size=f.max_mamba_cache_size,
        radix_cache=f.radix_cache, max_running_requests=ctx.max_running_requests, attn_dp_size=ctx.attn_dp,
        page_size=ctx.page_size, pp_size=ctx.pp, speculative_num_draft_tokens=f.speculative_num_draft_tokens,
        overlap_schedule=f.overlap_schedule, ssm_dtype=f.mamba_ssm_dtype) if ctx.budget > 0 else None
    out = PoolPlan(tokens=0, cell=0, layout=f"hybrid linear attention ({len(geom.attention_layers)} attention layers "
                   f"+ state)", max_running_requests=0, reduced=False, kv_pool_bytes=0, kv_slice_bytes=0,
                   fixed_note="linear-attention state slots")
    _attention_pool(ctx, geom, carve, out)
    out.kv_slice_bytes = min(int(out.tokens * out.cell), max(ctx.budget, 0))
    out.max_running_requests, out.reduced = request_cap(ctx, out.tokens)
    if carve is not None and carve.max_running_requests_cap < out.max_running_requests:
        out.max_running_requests = carve.max_running_requests_cap
        out.warnings.append(f"max_running_requests capped at {out.max_running_requests} by the state slots "
                            f"({carve.mamba_slots} slots / {carve.mamba_ratio} per request)")
    return out


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: per TP, the attention layers' bf16 bytes per token and the state bytes per request."""
    g = mamba_geometry_from_config(m.raw_config or m.config)
    out = Breakdown(info=dict(attention_layers=len(g.attention_layers), linear_layers=len(g.linear_layers),
                              state_kind=g.kind))
    for tp in SHOW_TPS:
        try:
            kv = mamba_hybrid_kv_cell(geometry=g, attn_tp_size=tp, kv_dtype="bf16")
            state = mamba_state_bytes_per_request(geometry=g, tp_size=tp)
        except InputError:
            continue
        out.rows.append({"tp": tp, "attention_kv_bytes_per_token_bf16": kv, "state_bytes_per_request": state,
                         "note": "KV heads split by tp (replicated past the head count); state heads split by tp"})
    return out

