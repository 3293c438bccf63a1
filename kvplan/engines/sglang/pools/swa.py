"""SGLang's hybrid sliding-window (SWA) pools (gpt-oss, Gemma-4, MiMo-V2, Llama-4, Step3p5 ...): sizes, the planner.

The geometry (which layers are full / sliding, heads, widths, window) is :mod:`kvplan.geometry.swa`.
A hybrid-SWA model keeps two token pools on every attention rank: a *full* pool for the
full-attention layers (one row per token of every live request) and an *SWA* pool for the
sliding-window layers (rows only for the last ``window`` tokens of each request). SGLang sizes the
two pools from one byte budget, in one of two modes:

* **ratio** (default): ``swa_tokens = page_floor(int(full_tokens * r))`` with
  ``r = --swa-full-tokens-ratio`` (0.8 when unset), so one full token costs
  ``full_cell + r * swa_cell`` bytes;
* **request-cap** (radix cache off + ``--max-running-requests`` + chunked prefill on): the SWA pool
  is sized for the worst case of the running requests (``compute_swa_request_cap``) and the rest of
  the budget goes to the full pool.

``max_total_num_tokens`` (what the server logs, what bounds a request) is the *full* pool.

By release (``RuleSet.pool_rules``, issue 12; docs/layouts/sliding-window.md section 7): whether the model gets the
hybrid pool at all (:func:`hybrid_pool_on`; else :func:`one_pool_plan`, one pool over every layer), the split by
layer count of 0.4.9.post6 - 0.5.8 (:func:`layer_split_pools`), the steps of the byte split 0.5.9 - 0.5.22
(:class:`ByteEra`: the two-step split of 0.5.9 - 0.5.10, draft layers, PP stage cells, the SWA-pool check, the
request-cap mode) and the ratio default.

Sources (sgl-project/sglang, v0.5.23, package paths under ``python/``):

* ``sglang/srt/model_executor/pool_configurator.py``: ``HybridSWAPoolConfigurator.__init__``,
  ``_recompute_cell_size``, ``_solve_pool_sizes``, ``calculate_pool_sizes``,
  ``calculate_pool_sizes_from_max_tokens``; ``SWARequestCapPoolConfigurator`` (``is_applicable``,
  ``calculate_pool_sizes``); ``compute_swa_request_cap``; ``MemoryPoolConfigurator.validate_swa_pool_size``;
  ``create_memory_pool_configurator``;
* ``sglang/srt/configs/model_config.py``: ``is_hybrid_swa_model``, ``get_hybrid_layer_ids``,
  ``ModelConfig.get_num_kv_heads`` / ``get_swa_num_kv_heads`` / ``_get_sliding_window_size``, the
  ``swa_head_dim`` / ``swa_v_head_dim`` defaults;
* ``sglang/srt/utils/hf_transformers/config.py``: ``_apply_gemma4_attention_overrides`` (Gemma-4's
  full vs sliding head geometry);
* ``sglang/srt/model_executor/model_runner_components/load_model_utils.py``:
  ``resolve_sliding_window_size`` and the models' ``get_attention_sliding_window_size``
  (gpt-oss, Gemma-4, ...: ``config.sliding_window - 1``);
* ``sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py``: Gemma-2/3 *disable* hybrid SWA memory;
* ``sglang/srt/arg_groups/kv_cache_hook.py``: ``--swa-full-tokens-ratio`` must be in ``(0, 1]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.base import (
    SHOW_TPS,
    Breakdown,
    PoolContext,
    PoolPlan,
    draft_layers,
    request_cap,
)
from kvplan.engines.sglang.pools.swa_cap import (
    SWA_EVICTION_INTERVAL,
    ceil_align,
    swa_request_cap,
    vint,
    vmax,
    vmin,
    vwhere,
)
from kvplan.engines.sglang.releases import POOL_RULES_0523, PoolRules
from kvplan.errors import InputError
from kvplan.geometry import swa as geometry
from kvplan.geometry.gqa import kv_heads_per_rank, kv_values_per_token_layer
from kvplan.geometry.kvdtype import FP4_KV_DTYPES, kv_element_bytes
from kvplan.geometry.swa import SWALayers, positive_int
from kvplan.hfconfig.normalize import flatten_config
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.result import Pool

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools
    from kvplan.hfconfig.spec import ModelSpec

#: ``--swa-full-tokens-ratio`` fallback (arg_groups/fields/schedule.py, ``fallback=0.8``); a plan reads the
#: release's default, ``RuleSet.pool_rules.swa_full_tokens_ratio`` (0.8 in every release with the flag).
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8


def always_disabled_archs(pool_rules: PoolRules | None = None) -> frozenset[str]:
    """Architectures whose model override always turns hybrid SWA memory off in a release (``pool_rules.
    swa_disabled_archs`` with the condition "always"; None: 0.5.23's -- Gemma-2/3, Gemma-3n, Olmo-2).

    Source: sgl-project/sglang python/sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py, olmo2.py, v0.5.23;
    server_args.py ``_handle_model_specific_adjustments``, v0.5.0rc2 - v0.5.9.
    """
    rules = POOL_RULES_0523 if pool_rules is None else pool_rules
    return frozenset(a for a, cond in rules.swa_disabled_archs.items() if cond == "always")


#: Gemma-4 in SGLang: first release with a Gemma-4 model (and in ``is_hybrid_swa_model``), and the first release
#: whose full-layer KV heads come from transformers' ``per_layer_config`` (``num_global_key_value_heads`` only with
#: ``attention_k_eq_v``; 0.5.11 - 0.5.21 set them from the config whenever given).  Read in the wheels:
#: ``models/gemma4_*`` absent in 0.5.9 / 0.5.10; ``utils/hf_transformers/config.py`` inline swap in 0.5.11 - 0.5.21,
#: ``_apply_gemma4_attention_overrides`` over ``per_layer_config`` in 0.5.22 / 0.5.23.
GEMMA4_SINCE = "0.5.11"
GEMMA4_K_EQ_V_GATE_SINCE = "0.5.22"


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split(".")[:3])


def swa_layers_from_config(
    cfg: Mapping[str, Any], *, release: str | None = None, pool_rules: PoolRules | None = None
) -> SWALayers:
    """The full/SWA split SGLang sizes: :func:`kvplan.geometry.swa.swa_layers_from_config`, after SGLang's model
    overrides (an architecture whose override always turns hybrid SWA memory off -- Gemma-2/3 -- is sized as a plain
    GQA pool: refused here; ``pool_rules`` = the release's, None = 0.5.23's) and the release's Gemma-4 rules
    (``release`` = the SGLang release, None = 0.5.23): no Gemma-4 model before :data:`GEMMA4_SINCE` (InputError on
    ``--engine-version``); the global KV heads ungated before :data:`GEMMA4_K_EQ_V_GATE_SINCE`.

    Example: gpt-oss-120b -> 18 full + 18 SWA layers, window 127; Gemma3ForCausalLM -> InputError;
    Gemma-4 26B-A4B at release 0.5.10 -> InputError.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py
    (``disable_hybrid_swa_memory``), configs/model_config.py ``is_hybrid_swa_model``,
    utils/hf_transformers/config.py, v0.5.11 - v0.5.23.
    """
    if isinstance(cfg, Mapping):
        archs = _architectures(cfg)
        if set(archs) & always_disabled_archs(pool_rules):
            raise InputError(
                f"{archs[0]}: SGLang {release or '0.5.23'} disables hybrid SWA memory for it "
                "(model override sets disable_hybrid_swa_memory)",
                field="--model",
                hint="size it as a plain GQA pool over all layers",
            )
    return sglang_swa_geometry(cfg, release=release)


def _architectures(cfg: Mapping[str, Any]) -> list[str]:
    return [str(a) for a in (flatten_config(cfg, engine="sglang").get("architectures") or [])]


def sglang_swa_geometry(cfg: Mapping[str, Any], *, release: str | None = None) -> SWALayers:
    """The layer split and head geometry of a sliding-window model as SGLang reads it, with the release's Gemma-4
    rules (see :func:`swa_layers_from_config`) and no model-override refusal (a release that turns the SWA pool off
    still sizes these layers, in one pool)."""
    gated = True
    if isinstance(cfg, Mapping) and release is not None:
        archs = _architectures(cfg)
        if set(archs) & geometry.GEMMA4_ARCHS:
            if _key(release) < _key(GEMMA4_SINCE):
                raise InputError(
                    f"SGLang {release} has no {archs[0]} model (Gemma-4 arrived in {GEMMA4_SINCE})",
                    field="--engine-version",
                    hint=f"use --engine-version {GEMMA4_SINCE} or newer",
                )
            gated = _key(release) >= _key(GEMMA4_K_EQ_V_GATE_SINCE)
    return geometry.swa_layers_from_config(cfg, engine="sglang", global_kv_needs_k_eq_v=gated)


def _release(ctx: PoolContext) -> str:
    """The SGLang release being planned: ``ctx.release`` when the prologue gives it, else the first release of the
    rule set's window (0.5.10 - 0.5.11 share one window: 0.5.11 then reads as 0.5.10)."""
    given = ctx.release
    return str(given) if given else ctx.rules.release


# --------------------------------------------------------------------------------------------------
# Per-token bytes
# --------------------------------------------------------------------------------------------------


def swa_bytes_per_layer_token(
    *, kv_heads: int, head_dim: int, v_head_dim: int, attn_tp_size: int, kv_dtype: str, latent: bool = False
) -> int:
    """Bytes one token costs in ONE layer of a hybrid-SWA sub-pool (full or SWA) on one attention rank.

    Formula: ``max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * e``; mxfp8 adds
    ``(n * (head_dim + v_head_dim)) // 32`` scale bytes (per layer, then multiplied by the layer count).
    Unlike the plain GQA pool there is no DCP term and no head-split assert here (the model asserts on
    load still apply). Example: gpt-oss-120b bf16 at TP1 -> 8 x 128 x 2 = 2,048 B; at TP4 -> 512 B.
    ``latent`` (MLA + SWA, Dots3): ``head_dim * e`` whatever the TP (one latent row, ``v_head_dim`` 0);
    Dots3 bf16: 576 x 2 = 1,152 B.

    FP4 (``nvfp4`` / ``fp4_mx_block16``): ``e`` = 1, the torch element size of ``float4_e2m1fn_x2``, and no scale
    bytes -- the hybrid pool has no FP4 quant method: ``SWAKVPool`` builds plain ``MHATokenToKVPool`` sub-pools (no
    ``quant_method``) whose K / V buffers are ``(rows, heads, head_dim)`` of that dtype, one byte per value, with no
    scale buffers and no dequant workspace, and the configurator budgets the same.  gpt-oss-120b nvfp4 TP1:
    8 x 128 x 1 = 1,024 B (as fp8; the packed GQA pool would store 512 + 64 scale bytes).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator.__init__`` (``_full_per_token`` / ``_swa_per_token``); mem_cache/
    kv_cache_configurator.py ``_build_hybrid_swa_kv_pool`` (no ``quant_method``, MXFP8 the only scaled sub-pool);
    mem_cache/memory_pool.py ``MHATokenToKVPool._create_buffers`` (unquantized: ``_create_buffers_normal``), v0.5.23.
    """
    for name, v in (("kv_heads", kv_heads), ("head_dim", head_dim), ("attn_tp_size", attn_tp_size)):
        positive_int(v, name)
    if not latent:
        positive_int(v_head_dim, "v_head_dim")
    dt = kv_dtype.strip().lower()
    if latent:
        if dt == "mxfp8":
            raise InputError(
                "mxfp8 KV on an MLA sliding-window model is not modelled",
                field="--kv-cache-dtype",
                hint="use auto, bf16, fp8_e4m3 or fp8_e5m2",
            )
        return head_dim * kv_element_bytes(dt)
    n = kv_heads_per_rank(num_kv_heads=kv_heads, shards=attn_tp_size)
    values = kv_values_per_token_layer(kv_heads=n, head_dim=head_dim, v_head_dim=v_head_dim)
    cell = values * kv_element_bytes(dt)
    if dt == "mxfp8":
        cell += values // 32
    return cell


# --------------------------------------------------------------------------------------------------
# Pools
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SWAPools:
    """Result of :func:`swa_pool_sizes` for one attention rank (one PP stage, or the MIN over stages)."""

    full_tokens: int
    swa_tokens: int
    full_bytes_per_token: int  # full-pool bytes of one token over this stage's full layers (+ draft)
    swa_bytes_per_token: int  # SWA-pool bytes of one token over this stage's SWA layers (+ draft)
    cell: float  # bytes budgeted per full token (ratio mode: full + r * swa)
    mode: str  # "ratio" | "request-cap" | "all-swa"
    components: tuple[tuple[str, int], ...]
    notes: tuple[str, ...]
    swa_full_tokens_ratio: float | None = None
    swa_cap_tokens: int | None = None
    fixed_bytes: int = 0  # request-cap mode: the SWA pool taken off the budget first
    profiled_full_tokens: int = 0  # before --max-total-tokens / the PP MIN
    page_size: int = 1
    sliding_window: int = 0
    stage_pool_bytes: int = 0  # 0.5.7 - 0.5.8 PP: the largest stage's pool bytes (may exceed the budget)

    @property
    def pool_bytes(self) -> int:
        return sum(b for _, b in self.components)


def swa_request_cap_applies(
    *,
    radix_cache: bool,
    max_running_requests: int | None,
    chunked_prefill_size: int,
    has_full_layers: bool = True,
    disaggregation_decode: bool = False,
    chunk_gate: bool = True,
) -> bool:
    """Whether SGLang picks ``SWARequestCapPoolConfigurator`` over the ratio split.

    True iff ``--max-running-requests`` is set, the radix cache is disabled, chunked prefill is on
    (``> 0``; PD-decode servers skip this condition) and the model has full-attention layers.  ``chunk_gate`` False
    (0.5.14 - 0.5.21, ``SWAChunkCapPoolConfigurator.is_applicable``: only ``chunked_prefill_size is None`` refuses,
    and the flag is never None there): a disabled chunk (-1) does not stop the mode.

    Example: radix off, 16 requests, ``--chunked-prefill-size -1`` -> False (0.5.22+), True with ``chunk_gate``
    False.  Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``SWARequestCapPoolConfigurator.is_applicable``, v0.5.22 - v0.5.23; ``SWAChunkCapPoolConfigurator.is_applicable``,
    v0.5.14 - v0.5.21.
    """
    if max_running_requests is None or radix_cache or not has_full_layers:
        return False
    return disaggregation_decode or not chunk_gate or chunked_prefill_size > 0


# ---- the formulas (ints for ``kvplan fit``, numpy arrays for ``kvplan sweep``) ---------------------------------


def ratio_full_tokens(*, budget_bytes: Any, cell: float, page_size: int) -> Any:
    """Ratio mode's full pool: ``page_floor(int(budget // cell))`` with ``cell = full_cell + r * swa_cell`` (float).

    Example: gpt-oss-120b bf16 TP1, 12 GiB, cell 66,355.2 B, page 1 -> 194,180.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator._solve_pool_sizes``, v0.5.23.
    """
    return vint(budget_bytes // cell) // page_size * page_size


def ratio_swa_tokens(*, full_tokens: Any, ratio: float, page_size: int) -> Any:
    """Ratio mode's SWA pool: ``page_floor(int(full * r))``.  Example: 194,180 x 0.8 -> 155,344.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator.calculate_pool_sizes``, v0.5.23.
    """
    return vint(full_tokens * ratio) // page_size * page_size


def swa_pool_too_small(*, swa_tokens: Any, window: int, page_size: int) -> Any:
    """SGLang refuses an SWA pool that cannot hold one request: ``window + page >= swa`` (True = refused).

    Example: window 127, page 1, 128 SWA tokens -> refused; 129 -> accepted.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``MemoryPoolConfigurator.validate_swa_pool_size``, v0.5.23.
    """
    return window + page_size >= swa_tokens


def cap_requests(*, max_running_requests: Any, attn_dp_size: int, floor_one: bool = True) -> Any:
    """The requests per rank the SWA cap is sized for: ``max(1, mrr // dp)`` (0.5.23), ``mrr // dp`` before
    (``num_reqs = ... // attn_dp_size``, 0.5.14 - 0.5.22).  Example: 3 requests over dp 4 -> 1 (0.5.23), 0 (0.5.22).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``compute_swa_request_cap``,
    v0.5.21 - v0.5.23; ``SWAChunkCapPoolConfigurator.__init__``, v0.5.14 - v0.5.20.
    """
    per = max_running_requests // attn_dp_size
    return vmax(1, per) if floor_one else per


def cap_swa_tokens(
    *, max_running_requests: Any, attn_dp_size: int, page_size: int, floor_one: bool = True, **cap: Any
) -> Any:
    """Request-cap mode's SWA pool: ``ceil_page(compute_swa_request_cap(max(1, mrr // dp)))`` (``cap``: the other
    :func:`kvplan.engines.sglang.pools.swa_cap.swa_request_cap` arguments; ``floor_one``: :func:`cap_requests`).

    Example: window 128, page 256, 16 requests, chunk 2048, overlap on -> 16,640 slots -> 16,640.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``SWARequestCapPoolConfigurator.calculate_pool_sizes``, ``compute_swa_request_cap``, v0.5.23.
    """
    slots = swa_request_cap(
        page_size=page_size,
        mrr_per_rank=cap_requests(
            max_running_requests=max_running_requests, attn_dp_size=attn_dp_size, floor_one=floor_one
        ),
        **cap,
    )
    return ceil_align(slots, page_size)


def cap_full_tokens(*, budget_bytes: Any, swa_tokens: Any, full_cell: int, swa_cell: int, page_size: int) -> Any:
    """Request-cap mode's full pool: ``page_floor((budget - swa * swa_cell) // full_cell)`` (<= 0: refused).

    Example: budget 10 GiB, 16,640 SWA slots x 36,864 B, full cell 36,864 B, page 256 -> 274,432.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``SWARequestCapPoolConfigurator.calculate_pool_sizes``, v0.5.23.
    """
    return vint((budget_bytes - swa_tokens * swa_cell) // full_cell) // page_size * page_size


def swa_pool_sizes(
    *,
    layers: SWALayers,
    budget_bytes: int,
    kv_dtype: str,
    attn_tp_size: int,
    page_size: int,
    swa_full_tokens_ratio: float | None,
    radix_cache: bool,
    max_running_requests: int | None,
    attn_dp_size: int,
    chunked_prefill_size: int,
    overlap_schedule: bool,
    speculative_num_draft_tokens: int = 0,
    speculative_num_steps: int | None = None,
    draft_full_layers: int = 0,
    draft_swa_layers: int = 0,
    stage_layers: tuple[int, int] | None = None,
    max_total_tokens: int | None = None,
    disaggregation_decode: bool = False,
    decode_extra_slots: int = 0,
    swa_eviction_interval: int | None = None,
    request_cap_mode: bool = True,
    validate: bool = True,
    cap_chunk_gate: bool = True,
    cap_floor_one: bool = True,
    cap_draft_full: bool = True,
    cap_draft_swa: bool = True,
) -> SWAPools:
    """Split a KV byte budget into full and SWA pools the way SGLang 0.5.23 does (one rank, one stage).

    ``request_cap_mode`` / ``validate``: the release has the request-cap SWA mode (0.5.14+) / refuses an
    SWA pool too small for one request (0.5.16+; :class:`ByteEra`); ``cap_chunk_gate`` / ``cap_floor_one``: a
    disabled chunk stops the request-cap mode (0.5.22+) / the cap is sized for at least one request (0.5.23);
    ``cap_draft_full`` / ``cap_draft_swa``: the request-cap cells hold the draft's full layers (0.5.15+) / SWA layers
    (0.5.19+) (:func:`cap_cells`).

    ``F`` = :func:`swa_bytes_per_layer_token` of the full geometry, ``S`` = of the SWA geometry,
    ``Lf`` / ``Ls`` = full / SWA layers of this stage, ``Df`` / ``Ds`` = draft (EAGLE/MTP) full / SWA layers::

        full_cell = F * (Lf + Df)          swa_cell = S * (Ls + Ds)
        ratio mode   : cell = full_cell + r * swa_cell                  (float; r = ratio, 0.8 if None)
                       full = page_floor(int(budget // cell));  swa = page_floor(int(full * r))
                       refuse when window + page >= swa  (validate_swa_pool_size)
        request cap  : cap  = (window + 128 * max(D, 1) + page + decode_alloc) * max(1, mrr // dp)
                              + (2 if overlap else 1) * chunked_prefill + page
                       swa  = ceil_page(cap);  full = page_floor(int((budget - swa * swa_cell) // full_cell))
                       (the cells' draft terms by release: :func:`cap_cells`)
        all-SWA (no full layer): tokens = page_floor(budget // (S * Ls + draft)), all in the SWA pool

    ``max_total_tokens`` (``--max-total-tokens``, or the MIN over PP stages) re-derives the pools from a
    smaller full count (``calculate_pool_sizes_from_max_tokens``): ratio mode recomputes swa from it; cap
    mode keeps ``swa = min(cap, max_total_tokens)``. ``chunked_prefill_size`` is the per-rank value
    (already divided by the attention-DP size); ``max_running_requests`` the global flag.

    Worked example (gpt-oss-120b, bf16, TP1, H100 page 1, r 0.8, budget 12 GiB = 12,884,901,888 B):
    F = S = 2,048 B, full_cell = swa_cell = 36,864 B, cell = 66,355.2 B, full = 194,180, swa = 155,344.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator``, ``SWARequestCapPoolConfigurator``, ``compute_swa_request_cap``,
    ``MemoryPoolConfigurator.validate_swa_pool_size``, v0.5.23.
    """
    positive_int(page_size, "page_size")
    positive_int(attn_dp_size, "attn_dp_size")
    ratio = DEFAULT_SWA_FULL_TOKENS_RATIO if swa_full_tokens_ratio is None else float(swa_full_tokens_ratio)
    if not 0.0 < ratio <= 1.0:
        raise InputError(
            f"--swa-full-tokens-ratio {ratio} is outside (0, 1]",
            field="--swa-full-tokens-ratio",
            hint="SGLang refuses it: --swa-full-tokens-ratio should be in range (0, 1.0]",
        )
    if budget_bytes <= 0:
        raise InputError(
            f"KV budget is {budget_bytes} B; nothing left for the pools",
            field="--mem-fraction-static",
            hint="raise --mem-fraction-static or free GPU memory",
        )
    full_cell, swa_cell, F, S = stage_cells(
        layers=layers,
        kv_dtype=kv_dtype,
        attn_tp_size=attn_tp_size,
        draft_full_layers=draft_full_layers,
        draft_swa_layers=draft_swa_layers,
        stage_layers=stage_layers,
    )
    n_swa = layers.stage(stage_layers)[1]
    window = layers.sliding_window
    notes: list[str] = list(layers.notes)
    if draft_full_layers or draft_swa_layers:
        notes.append(f"draft pool: {draft_full_layers} full + {draft_swa_layers} SWA layer(s) share the token counts")

    cells = _Cells(
        full_cell=full_cell, swa_cell=swa_cell, window=layers.sliding_window, page_size=page_size, notes=notes
    )
    # ---- all-SWA (no full layer anywhere in the model) -------------------------------------------
    if not layers.full_layers:
        cell = S * n_swa + F * draft_full_layers + S * draft_swa_layers
        return _all_swa_pools(cells, cell=cell, budget_bytes=budget_bytes, max_total_tokens=max_total_tokens)
    if request_cap_mode and swa_request_cap_applies(
        radix_cache=radix_cache,
        max_running_requests=max_running_requests,
        chunked_prefill_size=chunked_prefill_size,
        disaggregation_decode=disaggregation_decode,
        chunk_gate=cap_chunk_gate,
    ):
        assert max_running_requests is not None
        cap = swa_request_cap(
            page_size=page_size,
            mrr_per_rank=cap_requests(
                max_running_requests=max_running_requests, attn_dp_size=attn_dp_size, floor_one=cap_floor_one
            ),
            **cap_args(
                window=window,
                chunked_prefill_size=chunked_prefill_size,
                overlap_schedule=overlap_schedule,
                speculative_num_draft_tokens=speculative_num_draft_tokens,
                speculative_num_steps=speculative_num_steps,
                disaggregation_decode=disaggregation_decode,
                decode_extra_slots=decode_extra_slots,
                swa_eviction_interval=swa_eviction_interval,
            ),
        )
        cap_full, cap_swa = cap_cells(
            full_cell=full_cell,
            swa_cell=swa_cell,
            F=F,
            S=S,
            draft_full_layers=draft_full_layers,
            draft_swa_layers=draft_swa_layers,
            cap_draft_full=cap_draft_full,
            cap_draft_swa=cap_draft_swa,
        )
        cells = _Cells(full_cell=cap_full, swa_cell=cap_swa, window=window, page_size=page_size, notes=notes)
        return _request_cap_pools(
            cells,
            cap=cap,
            budget_bytes=budget_bytes,
            max_total_tokens=max_total_tokens,
            max_running_requests=max_running_requests,
            chunked_prefill_size=chunked_prefill_size,
        )
    return _ratio_pools(
        cells, ratio=ratio, budget_bytes=budget_bytes, max_total_tokens=max_total_tokens, validate=validate
    )


def stage_cells(
    *,
    layers: SWALayers,
    kv_dtype: str,
    attn_tp_size: int,
    draft_full_layers: int = 0,
    draft_swa_layers: int = 0,
    stage_layers: tuple[int, int] | None = None,
) -> tuple[int, int, int, int]:
    """``(full_cell, swa_cell, F, S)`` of one PP stage: ``F`` / ``S`` = :func:`swa_bytes_per_layer_token` of the full
    / SWA geometry, ``full_cell = F * (Lf + Df)``, ``swa_cell = S * (Ls + Ds)`` (this stage's layers + the draft's).

    Example: gpt-oss-120b bf16 TP1 -> (36,864, 36,864, 2,048, 2,048).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator.__init__`` / ``_recompute_cell_size``, v0.5.23.
    """
    n_full, n_swa = layers.stage(stage_layers)
    F = swa_bytes_per_layer_token(
        kv_heads=layers.full_kv_heads,
        head_dim=layers.full_head_dim,
        v_head_dim=layers.full_v_head_dim,
        attn_tp_size=attn_tp_size,
        kv_dtype=kv_dtype,
        latent=layers.latent,
    )
    S = swa_bytes_per_layer_token(
        kv_heads=layers.swa_kv_heads,
        head_dim=layers.swa_head_dim,
        v_head_dim=layers.swa_v_head_dim,
        attn_tp_size=attn_tp_size,
        kv_dtype=kv_dtype,
        latent=layers.latent,
    )
    return F * (n_full + draft_full_layers), S * (n_swa + draft_swa_layers), F, S


def cap_cells(
    *,
    full_cell: int,
    swa_cell: int,
    F: int,
    S: int,
    draft_full_layers: int,
    draft_swa_layers: int,
    cap_draft_full: bool = True,
    cap_draft_swa: bool = True,
) -> tuple[int, int]:
    """Request-cap mode's ``(full cell, fixed SWA cell)`` of one stage by release, from :func:`stage_cells`'s
    ``full_cell = F (Lf + Df)`` and ``swa_cell = S (Ls + Ds)``::

        full  = F Lf + F Df (0.5.15+: cap_draft_full)          [+ S Dsf, 0.5.16+: Inkling's banded MTP, not planned]
        fixed = S Ls + S Ds (0.5.19+: cap_draft_swa)
        full_tokens = page_floor((budget - ceil_page(cap) x fixed) // full)        (:func:`cap_full_tokens`)

    Example: F 640, S 1,280, Lf 9, Ls 39, Df 1, Ds 1 (full_cell 6,400, swa_cell 51,200): 0.5.14 -> (5,760,
    49,920); 0.5.16 -> (6,400, 49,920); 0.5.19 -> (6,400, 51,200).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``SWAChunkCapPoolConfigurator.calculate_pool_sizes`` (``full_cell_size``, ``fixed_swa_bytes``), v0.5.14 -
    v0.5.21; ``SWARequestCapPoolConfigurator.calculate_pool_sizes``, v0.5.22 - v0.5.23.
    """
    return (
        full_cell - (0 if cap_draft_full else F * draft_full_layers),
        swa_cell - (0 if cap_draft_swa else S * draft_swa_layers),
    )


def cap_args(
    *,
    window: int,
    chunked_prefill_size: int,
    overlap_schedule: bool,
    speculative_num_draft_tokens: int,
    speculative_num_steps: int | None,
    disaggregation_decode: bool,
    decode_extra_slots: int,
    swa_eviction_interval: int | None,
) -> dict[str, Any]:
    """The :func:`kvplan.engines.sglang.pools.swa_cap.swa_request_cap` arguments besides the page size and the
    request count, as :func:`swa_pool_sizes` resolves them (steps default ``max(1, drafts - 1)``)."""
    drafts = speculative_num_draft_tokens
    return dict(
        window=window,
        chunked_prefill_size=chunked_prefill_size,
        overlap_schedule=overlap_schedule,
        num_draft_tokens=drafts,
        num_steps=speculative_num_steps if speculative_num_steps is not None else max(1, drafts - 1),
        disagg_decode=disaggregation_decode,
        decode_extra_slots=decode_extra_slots,
        eviction_interval=SWA_EVICTION_INTERVAL if swa_eviction_interval is None else swa_eviction_interval,
    )


@dataclass(frozen=True)
class _Cells:
    full_cell: int  # full-pool bytes of one token (this stage's full layers + draft)
    swa_cell: int  # SWA-pool bytes of one token (this stage's SWA layers + draft)
    window: int
    page_size: int
    notes: list[str]

    def components(self, full: int, swa: int) -> tuple[tuple[str, int], ...]:
        out = []
        if self.full_cell:
            out.append(("full-attention KV", full * self.full_cell))
        out.append(("sliding-window KV", swa * self.swa_cell))
        return tuple(out)


def _all_swa_pools(c: _Cells, *, cell: int, budget_bytes: int, max_total_tokens: int | None) -> SWAPools:
    """No full layer: every token lives in the SWA pool."""
    page_size = c.page_size
    if cell <= 0:
        raise InputError("this PP stage holds no attention layer", field="--pp-size")
    tokens = int(budget_bytes // cell) // page_size * page_size
    profiled = tokens
    if max_total_tokens is not None and max_total_tokens < tokens:
        tokens = max_total_tokens // page_size * page_size
    return SWAPools(
        full_tokens=0,
        swa_tokens=tokens,
        full_bytes_per_token=0,
        swa_bytes_per_token=cell,
        cell=float(cell),
        mode="all-swa",
        components=(("sliding-window KV", tokens * cell),),
        notes=tuple(c.notes),
        profiled_full_tokens=profiled,
        page_size=page_size,
        sliding_window=c.window,
    )


def _request_cap_pools(
    c: _Cells,
    *,
    cap: int,
    budget_bytes: int,
    max_total_tokens: int | None,
    max_running_requests: int,
    chunked_prefill_size: int,
) -> SWAPools:
    """``SWARequestCapPoolConfigurator``: the SWA pool for the worst case first, the rest to the full pool."""
    page_size = c.page_size
    swa_tokens = ceil_align(cap, page_size)
    fixed = swa_tokens * c.swa_cell
    if c.full_cell <= 0:
        raise InputError("this PP stage holds no full-attention layer", field="--pp-size")
    full = cap_full_tokens(
        budget_bytes=budget_bytes,
        swa_tokens=swa_tokens,
        full_cell=c.full_cell,
        swa_cell=c.swa_cell,
        page_size=page_size,
    )
    if full <= 0:
        raise InputError(
            f"the SWA request cap ({swa_tokens:,} tokens, {fixed / 2**30:.2f} GiB) leaves no room for the full "
            f"KV pool in {budget_bytes / 2**30:.2f} GiB",
            field="--max-running-requests",
            hint="reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL or raise --mem-fraction-static",
        )
    profiled = full
    if max_total_tokens is not None and max_total_tokens < full:
        full = max_total_tokens // page_size * page_size
        swa_tokens = min(swa_tokens, max_total_tokens)
    c.notes.append(
        f"SWA pool sized from the request cap: {cap:,} slots -> {swa_tokens:,} (radix cache off, "
        f"--max-running-requests {max_running_requests}, chunked prefill {chunked_prefill_size})"
    )
    return SWAPools(
        full_tokens=full,
        swa_tokens=swa_tokens,
        full_bytes_per_token=c.full_cell,
        swa_bytes_per_token=c.swa_cell,
        cell=float(c.full_cell),
        mode="request-cap",
        components=c.components(full, swa_tokens),
        notes=tuple(c.notes),
        swa_cap_tokens=cap,
        fixed_bytes=fixed,
        profiled_full_tokens=profiled,
        page_size=page_size,
        sliding_window=c.window,
    )


def _ratio_pools(
    c: _Cells, *, ratio: float, budget_bytes: int, max_total_tokens: int | None, validate: bool = True
) -> SWAPools:
    """``HybridSWAPoolConfigurator``: one full token costs ``full_cell + ratio * swa_cell``."""
    page_size, window = c.page_size, c.window
    cell = c.full_cell + ratio * c.swa_cell
    if cell <= 0:
        raise InputError("this PP stage holds no attention layer", field="--pp-size")
    full = ratio_full_tokens(budget_bytes=budget_bytes, cell=cell, page_size=page_size)
    profiled = full
    capped_by = None
    if max_total_tokens is not None and max_total_tokens < full:
        full = max_total_tokens // page_size * page_size
        capped_by = max_total_tokens
    swa_tokens = ratio_swa_tokens(full_tokens=full, ratio=ratio, page_size=page_size)
    if validate and swa_pool_too_small(swa_tokens=swa_tokens, window=window, page_size=page_size):
        if capped_by is not None:
            field, hint = "--max-total-tokens", "raise --max-total-tokens (it also caps the SWA pool)"
        elif int(full * 1.0) // page_size * page_size > window + page_size:
            field, hint = "--swa-full-tokens-ratio", "increase --swa-full-tokens-ratio or the total KV budget"
        else:
            field, hint = "--mem-fraction-static", "the KV budget is too small even at --swa-full-tokens-ratio 1.0"
        raise InputError(
            f"SWA pool ({swa_tokens:,} tokens) cannot hold even one request: SGLang needs more than "
            f"sliding_window_size ({window}) + page_size ({page_size}) = {window + page_size} tokens",
            field=field,
            hint=hint,
        )
    return SWAPools(
        full_tokens=full,
        swa_tokens=swa_tokens,
        full_bytes_per_token=c.full_cell,
        swa_bytes_per_token=c.swa_cell,
        cell=cell,
        mode="ratio",
        components=c.components(full, swa_tokens),
        notes=tuple(c.notes),
        swa_full_tokens_ratio=ratio,
        profiled_full_tokens=profiled,
        page_size=page_size,
        sliding_window=window,
    )


def swa_pool_sizes_over_stages(
    *,
    layers: SWALayers,
    pp_size: int,
    partition: str | None = None,
    max_total_tokens: int | None = None,
    staged: bool = True,
    end_inclusive: bool = False,
    **kwargs: Any,
) -> SWAPools:
    """:func:`swa_pool_sizes` for every PP stage, then the MIN full count re-applied to all stages.

    Each rank sizes its own stage; ``_apply_token_constraints`` takes ``min(profiled, --max-total-tokens)``
    and the MIN over PP ranks, and every rank re-derives its pools from that count. Returned: the result
    of the stage with the largest per-token cost, re-derived at the common count (``notes`` list the
    per-stage profiled counts). ``kwargs`` = the other :func:`swa_pool_sizes` arguments.  ``staged`` False (before
    0.5.7): every rank prices the model's whole layer lists, not its stage's; ``end_inclusive`` (0.5.7 - 0.5.20): a
    stage that is not the last also counts the next stage's first layer (:func:`engine_stage_ids`).

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator.config_from_budget``, ``_apply_token_constraints``;
    python/sglang/srt/distributed/utils.py ``get_pp_indices``, v0.5.23.
    """
    n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
    ranges = pp_layer_ranges(num_layers=n, pp_size=pp_size, partition=partition)
    split = pp_size > 1 and staged
    stages = [
        (rng, swa_pool_sizes(layers=layers, stage_layers=_listed(rng, n, end_inclusive) if split else None, **kwargs))
        for rng in ranges
    ]
    common = min(r.full_tokens if r.mode != "all-swa" else r.swa_tokens for _, r in stages)
    if max_total_tokens is not None:
        common = min(common, max_total_tokens)
    worst_rng, _ = max(stages, key=lambda t: t[1].cell)
    final = swa_pool_sizes(
        layers=layers,
        stage_layers=_listed(worst_rng, n, end_inclusive) if split else None,
        max_total_tokens=common,
        **kwargs,
    )
    if pp_size > 1:
        per = ", ".join(f"layers [{s},{e}): {r.profiled_full_tokens:,}" for (s, e), r in stages)
        final = SWAPools(**{**final.__dict__, "notes": (*final.notes, f"PP stages profiled {per}; MIN {common:,}")})
    return final


# ---- SGLang 0.5.9 - 0.5.22: the byte split before 0.5.23's -------------------------------------------------------


class ByteEra:
    """What a release's byte split (0.5.9+) has, read in the wheels (``model_executor/pool_configurator.py``
    ``HybridSWAPoolConfigurator``, 0.5.11+; ``model_runner_kv_cache_mixin.py`` ``set_num_tokens_hybrid_swa``,
    0.5.9 - 0.5.10):

    * ``two_step`` (0.5.9 - 0.5.10): ``T = budget // (F Lf + S Ls)`` first, then the split (:func:`two_step_pools`);
    * ``draft``: the EAGLE draft's layers in the cell -- "none" before 0.5.15, "full" (all as full-attention
      layers, and only for a draft loaded from a path: :func:`pathless_mtp`) 0.5.15 - 0.5.19, "split"
      (:func:`split_draft_layers`) from 0.5.20;
    * ``staged``: a PP rank prices its stage's layers (0.5.7+: ``ModelRunner.load_model`` rewrites
      ``model_config.full_attention_layer_ids`` / ``swa_attention_layer_ids`` to the stage's, "Consider PP, so use
      start_layer and end_layer"; model_runner.py 0.5.7 - 0.5.15, model_runner_components/layer_setup.py 0.5.16+,
      and the configurator counts ``len(model_config.full_attention_layer_ids)``); ``end_inclusive`` (0.5.7 - 0.5.20):
      that filter runs over ``range(start_layer, end_layer + 1)`` (:func:`engine_stage_ids`; 0.5.21+
      ``layer_setup.py`` ``_resolve_local_hybrid_swa_layer_ids`` over ``range(start_layer, end_layer)``);
    * ``validate``: the SWA pool must hold one request (0.5.16+: ``HybridSWAPoolConfigurator._solve_pool_sizes``
      raises "SWA pool (...) cannot hold even one request" when ``sliding_window_size + page_size >= swa_tokens``;
      ``MemoryPoolConfigurator.validate_swa_pool_size`` from 0.5.20);
    * ``request_cap``: the request-cap SWA mode exists (0.5.14+: ``SWAChunkCapPoolConfigurator``, "SWA pool sized
      from a fixed token cap" when ``max_running_requests`` is set and the radix cache is off, 0.5.14 - 0.5.21;
      ``SWARequestCapPoolConfigurator`` 0.5.22+); ``cap_chunk_gate``: a disabled chunked prefill (-1) stops that mode
      (0.5.22+; before, ``is_applicable`` checks only ``chunked_prefill_size is None``); ``cap_floor_one``: the cap
      is sized for ``max(1, mrr // dp)`` requests (0.5.23; ``mrr // dp`` before).  The divisor ``dp`` is
      ``ModelRunner.dp_size`` in 0.5.14 - 0.5.15 and ``kvc.ps.attn_dp_size`` from 0.5.16; both are ``dp_size if
      enable_dp_attention else 1`` (model_runner.py ``ModelRunner.__init__``, 0.5.14 / 0.5.15;
      layers/dp_attention.py ``compute_dp_attention_world_info``, 0.5.16), so the attention-DP size is exact in
      every release with the mode;
    * ``cap_draft_full`` / ``cap_draft_swa``: the request-cap mode's draft terms (:func:`cap_cells`): the full cell
      adds the draft's full layers ``F·Df`` from 0.5.15 (``_draft_full_layers_num``), the fixed SWA bytes add the
      draft's SWA layers ``S·Ds`` from 0.5.19 (``_draft_swa_layers_num``).  The third term, ``S·Dsf`` in the full
      cell from 0.5.16 (``_draft_swa_full_layers_num``), counts only Inkling's banded MTP depths
      (``mtp_local_layer_ids``), a draft kvplan does not plan: 0 here.

    Example: ``byte_era("0.5.16")`` -> draft "full", staged, validation, request-cap mode with ``F·Df`` and without
    ``S·Ds``; ``byte_era("0.5.13")`` -> draft "none", staged, no validation, no request-cap mode.
    """

    __slots__ = (
        "cap_chunk_gate",
        "cap_draft_full",
        "cap_draft_swa",
        "cap_floor_one",
        "draft",
        "end_inclusive",
        "request_cap",
        "staged",
        "two_step",
        "validate",
    )

    def __init__(self, release: str) -> None:
        k = _key(release)
        self.two_step = k < (0, 5, 11)
        self.draft = "split" if k >= (0, 5, 20) else "full" if k >= (0, 5, 15) else "none"
        self.staged = k >= (0, 5, 7)
        self.end_inclusive = (0, 5, 7) <= k < (0, 5, 21)
        self.validate = k >= (0, 5, 16)
        self.request_cap = k >= (0, 5, 14)
        self.cap_chunk_gate = k >= (0, 5, 22)
        self.cap_floor_one = k >= (0, 5, 23)
        self.cap_draft_full = k >= (0, 5, 15)
        self.cap_draft_swa = k >= (0, 5, 19)


def byte_era(release: str) -> ByteEra:
    """The :class:`ByteEra` of release ``release``."""
    return ByteEra(release)


def era_draft_layers(ctx: PoolContext, layers: SWALayers, era: ByteEra) -> tuple[int, int]:
    """(full, SWA) draft layers the release's cell holds (:attr:`ByteEra.draft`)."""
    algo = ctx.flags.speculative_algorithm
    if era.draft == "split":
        return split_draft_layers(ctx.model, layers, algo)
    if era.draft == "full" and algo in _EAGLE_DRAFT_ALGOS and not pathless_mtp(ctx.model, algo):
        return draft_layers(ctx.model, algo), 0
    return 0, 0


def pathless_mtp(model: ModelSpec, spec_algo: str) -> bool:
    """The draft is the checkpoint's own MTP head (``num_nextn_predict_layers`` with NEXTN / MTP / EAGLE, no
    ``--speculative-draft-model-path``).  0.5.15 - 0.5.19 count draft layers into the hybrid-SWA cell only for a
    draft loaded from a path (``eagle_draft_num_layers`` stays None otherwise); 0.5.20 reads a path-less draft's
    layers off the target config.

    Example: MiMo-V2-Flash with ``--speculative-algorithm EAGLE`` -> True: no draft layer in its cell under 0.5.16.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ``ModelRunner.__init__``
    (``speculative_draft_model_path`` condition), v0.5.15; model_executor/model_runner_components/
    spec_aux_hidden_state.py ``_resolve_eagle_aux_hidden_state``, v0.5.16 - v0.5.19 (path required) and v0.5.20.
    """
    return bool(model.get("num_nextn_predict_layers")) and spec_algo in _PATHLESS_MTP_ALGOS


#: ``spec_algorithm.is_eagle() or is_standalone()`` (pool_configurator.py, 0.5.15 - 0.5.19)
_EAGLE_DRAFT_ALGOS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE", "FROZEN_KV_MTP"})


def two_step_full_tokens(*, tokens: Any, profile_cell: int, split_cell: float, page_size: int) -> Any:
    """0.5.9 - 0.5.10's full pool from the profiled count ``T``: ``page_floor(int(T x (F Lf + S Ls) / (F Lf + r S
    Ls)))`` (ints or arrays); the SWA pool is then :func:`ratio_swa_tokens`.

    Example: gpt-oss-120b bf16 TP1, T = 174,762: int(174,762 x 73,728 / 66,355.2) = 194,180.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``set_num_tokens_hybrid_swa``, v0.5.9.
    """
    return vint(tokens * profile_cell / split_cell) // page_size * page_size


def two_step_pools(
    *,
    layers: SWALayers,
    budget_bytes: int,
    kv_dtype: str,
    attn_tp_size: int,
    page_size: int,
    ratio: float,
    max_total_tokens: int | None = None,
    stage_layers: list[tuple[int, int]] | None = None,
) -> SWAPools:
    """The hybrid-SWA pools of SGLang 0.5.9 - 0.5.10 (no draft)::

        per stage s: P_s = F Lf_s + S Ls_s;  Q_s = F Lf_s + r S Ls_s
        T      = page_floor(min(min_s budget // P_s, --max-total-tokens))           (refused: T <= 0)
        full_s = two_step_full_tokens(T, P_s, Q_s);  swa_s = page_floor(int(full_s x r))
        reported: the stage with the fewest full tokens (the first on ties)

    ``stage_layers``: the ``[start, end)`` whose layers each PP rank lists (``ModelRunner.load_model``'s filter over
    ``range(start_layer, end_layer + 1)``: :func:`engine_stage_ids`); None = one stage, the model's layers.
    Example: gpt-oss-120b bf16 TP1, 12 GiB: T = 12,884,901,888 // 73,728 = 174,762 -> full 194,180, swa 155,344.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``get_cell_size_per_token`` (``len(self.model_config.full_attention_layer_ids)``), ``init_memory_pool`` (the MIN
    over PP ranks), ``set_num_tokens_hybrid_swa``, v0.5.9.
    """
    if not 0.0 < ratio <= 1.0:
        raise InputError(f"--swa-full-tokens-ratio {ratio} is outside (0, 1]", field="--swa-full-tokens-ratio")
    ranges: list[tuple[int, int] | None] = list(stage_layers) if stage_layers else [None]
    cells = [
        stage_cells(layers=layers, kv_dtype=kv_dtype, attn_tp_size=attn_tp_size, stage_layers=rng)[:2] for rng in ranges
    ]
    if min(fc + sc for fc, sc in cells) <= 0:
        raise InputError("this PP stage holds no attention layer", field="--pp-size")
    tokens = min(budget_bytes // (fc + sc) for fc, sc in cells)
    profiled = tokens
    if max_total_tokens is not None:
        tokens = min(tokens, max_total_tokens)
    tokens = tokens // page_size * page_size
    if tokens <= 0:
        raise InputError(
            f"KV budget {budget_bytes:,} B holds no token of the {max(fc + sc for fc, sc in cells):,} B cell",
            field="--mem-fraction-static",
            hint="raise --mem-fraction-static or free GPU memory",
        )
    fulls = [
        two_step_full_tokens(tokens=tokens, profile_cell=fc + sc, split_cell=fc + ratio * sc, page_size=page_size)
        for fc, sc in cells
    ]
    i = fulls.index(min(fulls))
    (full_cell, swa_cell), full = cells[i], fulls[i]
    profile_cell, split_cell = full_cell + swa_cell, full_cell + ratio * swa_cell
    swa = ratio_swa_tokens(full_tokens=full, ratio=ratio, page_size=page_size)
    c = _Cells(
        full_cell=full_cell,
        swa_cell=swa_cell,
        window=layers.sliding_window,
        page_size=page_size,
        notes=list(layers.notes),
    )
    c.notes.append(
        f"pools of SGLang 0.5.9 - 0.5.10: {tokens:,} tokens of the {profile_cell:,} B cell -> full "
        f"int({tokens:,} x {profile_cell:,} / {split_cell:,.1f}) = {full:,}, SWA {swa:,}"
        + (f" (PP stage {i}, the fewest full tokens)" if len(cells) > 1 else "")
    )
    return SWAPools(
        full_tokens=full,
        swa_tokens=swa,
        full_bytes_per_token=full_cell,
        swa_bytes_per_token=swa_cell,
        cell=split_cell,
        mode="ratio",
        components=c.components(full, swa),
        notes=tuple(c.notes),
        swa_full_tokens_ratio=ratio,
        profiled_full_tokens=profiled,
        page_size=page_size,
        sliding_window=layers.sliding_window,
    )


def listed_stages(
    *, layers: SWALayers, pp_size: int, partition: str | None, end_inclusive: bool
) -> list[tuple[int, int]] | None:
    """The ``[start, end)`` whose layers each PP rank lists (None at PP 1: the model's layers)."""
    if pp_size <= 1:
        return None
    n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
    return [
        _listed(rng, n, end_inclusive) for rng in pp_layer_ranges(num_layers=n, pp_size=pp_size, partition=partition)
    ]


# ---- SGLang 0.4.9.post6 - 0.5.8: the split by layer count ---------------------------------------------------------

#: 0.5.7 - 0.5.8 price MiMo-V2-Flash's per-token cell at the full geometry over every layer *plus* the SWA geometry
#: over the SWA layers (``ModelRunnerKVCacheMixin.get_cell_size_per_token``)
LAYER_SPLIT_SWA_EXTRA = frozenset({"MiMoV2FlashForCausalLM"})
#: the layer split floors both pools to the page from 0.5.7 (``set_num_tokens_hybrid_swa``; before: unfloored)
LAYER_SPLIT_FLOOR_SINCE = "0.5.7"


def layer_split_cell(
    *, full_per_layer: int, swa_per_layer: int, stage_layers: int, swa_layers_total: int, swa_extra: bool = False
) -> int:
    """The cell the layer-split releases budget per token: every layer of the stage at the full-attention geometry
    (``heads x (head_dim + v_head_dim) x L x e``), plus MiMo-V2-Flash's SWA term (:data:`LAYER_SPLIT_SWA_EXTRA`).

    Example: gpt-oss-120b bf16 TP1: 2,048 x 36 = 73,728 B.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``get_cell_size_per_token``, v0.5.8 (model_runner.py ``profile_max_num_token``, v0.4.9.post6 - v0.5.6).
    """
    return full_per_layer * stage_layers + (swa_per_layer * swa_layers_total if swa_extra else 0)


def layer_split_tokens(
    *, tokens: Any, num_layers: int, full_layers: int, swa_layers: int, ratio: float, page_size: int, floor: bool = True
) -> tuple[Any, Any]:
    """``(full, swa)`` pools from the single-pool token count ``T`` (ints or numpy arrays)::

        full = int(T x L / (r x L_swa + L_full));  swa = int(full x r);  both page-floored from 0.5.7

    Example: gpt-oss-120b, T = 1,000,000, 36 = 18 + 18 layers, r 0.8 -> full int(36,000,000 / 32.4) = 1,111,111,
    swa 888,888.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``set_num_tokens_hybrid_swa``, v0.5.8 (model_runner.py ``set_num_token_hybrid``, v0.4.9.post6 - v0.5.6).
    """
    full = vint(tokens * num_layers / (ratio * swa_layers + full_layers))
    swa = vint(full * ratio)
    if floor:
        full, swa = full // page_size * page_size, swa // page_size * page_size
    return full, swa


#: 0.5.7 counts a hybrid-SWA model's per-token cell over its *full-attention* layers only
#: (``profile_max_num_token``: ``elif self.model_config.full_attention_layer_ids: num_layers = len(...)``; 0.5.8
#: counts ``num_effective_layers``)
LAYER_SPLIT_FULL_IDS_CELL = "0.5.7"


@dataclass(frozen=True)
class _SplitStage:
    """One PP stage of the layer-split releases: its cell, its sub-pool cells and the layer counts the split uses."""

    cell_l: int  # bytes per token of T (the profiled single-pool count)
    full_cell: int  # F x full layers of the stage
    swa_cell: int  # S x SWA layers of the stage
    n_full: int  # full layers in the split's denominator
    n_swa: int  # SWA layers in the split's denominator


def engine_stage_ids(*, layers: SWALayers, rng: tuple[int, int], num_layers: int) -> tuple[int, int]:
    """``(full, swa)`` layers SGLang 0.5.7 - 0.5.20 keep in ``model_config`` for PP stage ``[start, end)``: the filter
    of ``ModelRunner.load_model`` runs over ``range(start_layer, end_layer + 1)``, so a stage that is not the last
    also counts layer ``end`` (the next stage's first).  Example: gpt-oss-120b (36 layers, SWA on even ids) PP2:
    stage [0, 18) -> (9, 10) (layer 18 is an SWA layer), stage [18, 36) -> (9, 9).

    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ``ModelRunner.load_model`` ("Consider
    PP, so use start_layer and end_layer"), v0.5.7 - v0.5.15; model_runner_components/layer_setup.py, v0.5.16 - v0.5.20.
    """
    s, e = rng
    return layers.stage((s, min(e + 1, num_layers)))


def _listed(rng: tuple[int, int], num_layers: int, end_inclusive: bool) -> tuple[int, int]:
    """The ``[start, end)`` whose layers SGLang lists for PP stage ``rng`` (one more when ``end_inclusive``)."""
    return (rng[0], min(rng[1] + 1, num_layers)) if end_inclusive else rng


def layer_split_stages(
    *,
    layers: SWALayers,
    pp_size: int,
    partition: str | None,
    kv_dtype: str,
    attn_tp_size: int,
    staged: bool = False,
    full_ids_cell: bool = False,
) -> tuple[int, list[_SplitStage]]:
    """``(num_layers, [_SplitStage per PP stage])`` of the layer-split releases (:func:`layer_split_cell` and
    :func:`stage_cells` of each stage, no draft layers).

    ``staged`` (0.5.7 - 0.5.8, PP > 1): the split's layer counts (and MiMo-V2-Flash's SWA term) are the stage's
    (:func:`engine_stage_ids`); before, the model's.  ``full_ids_cell`` (0.5.7, :data:`LAYER_SPLIT_FULL_IDS_CELL`):
    the cell counts the stage's full-attention layers instead of all its layers.
    Example: MiMo-V2-Flash TP4 bf16 under 0.5.7 (PP1): 640 x 9 + 1,280 x 39 = 55,680 B (0.5.8: 640 x 48 + 49,920 =
    80,640 B).
    """
    n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
    ranges = pp_layer_ranges(num_layers=n, pp_size=pp_size, partition=partition)
    extra = layers.architecture in LAYER_SPLIT_SWA_EXTRA
    out = []
    for rng in ranges:
        full_cell, swa_cell, F, S = stage_cells(
            layers=layers, kv_dtype=kv_dtype, attn_tp_size=attn_tp_size, stage_layers=rng if pp_size > 1 else None
        )
        if staged and pp_size > 1:
            n_full, n_swa = engine_stage_ids(layers=layers, rng=rng, num_layers=n)
        else:
            n_full, n_swa = len(layers.full_layers), len(layers.swa_layers)
        if full_ids_cell and n_full:  # 0.5.7: len(full_attention_layer_ids)
            counted = n_full
        elif staged or full_ids_cell:  # 0.5.8: num_effective_layers = end_layer - start_layer
            counted = rng[1] - rng[0]
        else:  # before 0.5.7: the stage's attention layers (kvplan's reading, as before)
            counted = sum(layers.stage(rng))
        cell_l = layer_split_cell(
            full_per_layer=F,
            swa_per_layer=S,
            stage_layers=counted,
            swa_layers_total=n_swa if staged else len(layers.swa_layers),
            swa_extra=extra,
        )
        if staged and pp_size > 1:  # the stage's pools hold its layers as SGLang lists them
            full_cell, swa_cell = F * n_full, S * n_swa
        out.append(_SplitStage(cell_l=cell_l, full_cell=full_cell, swa_cell=swa_cell, n_full=n_full, n_swa=n_swa))
    return n, out


def layer_split_pools(
    *,
    layers: SWALayers,
    pp_size: int,
    partition: str | None,
    budget_bytes: int,
    kv_dtype: str,
    attn_tp_size: int,
    page_size: int,
    ratio: float,
    max_total_tokens: int | None = None,
    floor: bool = True,
    staged: bool = False,
    full_ids_cell: bool = False,
) -> SWAPools:
    """The hybrid-SWA pools of SGLang 0.4.9.post6 - 0.5.8 (``pool_rules.swa_split == "layers"``): one token count
    as if every layer were full attention, then split by layer count::

        T     = page_floor(min(budget // cell_L, --max-total-tokens)), MIN over PP stages   (cell_L: layer_split_cell)
        full, swa = layer_split_tokens(T)
        cost per full token (reported) = cell_L x (r x L_swa + L_full) / L

    No request-cap mode and no draft layers in the target's cell (those releases size the draft worker's pool
    apart); no SWA-pool minimum check.  Example: gpt-oss-120b bf16 TP1, 12 GiB: T = 12,884,901,888 // 73,728 =
    174,762 -> full int(174,762 x 36 / 32.4) = 194,180, swa 155,344.

    PP > 1 in 0.5.7 - 0.5.8 (``staged``): ``set_num_tokens_hybrid_swa`` multiplies ``T`` by the *model's*
    ``num_hidden_layers`` L but divides by the *stage's* layer counts (:func:`engine_stage_ids`), so every rank
    allocates pools of about ``pp`` times its budget; kvplan sizes what the engine allocates (per stage
    ``full_s = int(T x L / (r Ls_s + Lf_s))``, the stage with the fewest full tokens reported) and says the start-up
    may run out of memory.  Example: gpt-oss-120b bf16 TP1 PP2 at 12 GiB under 0.5.8: stage cells 2,048 x 18 =
    36,864 B -> T = 349,525; stage [0, 18) counts 9 full + 10 SWA layers: full = int(349,525 x 36 / 17) = 740,170.

    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py ``init_memory_pool``,
    ``profile_max_num_token``, ``set_num_tokens_hybrid_swa``, v0.5.8 (v0.5.7: ``num_layers`` = the full layers).
    """
    if not 0.0 < ratio <= 1.0:
        raise InputError(f"--swa-full-tokens-ratio {ratio} is outside (0, 1]", field="--swa-full-tokens-ratio")
    n, cells = layer_split_stages(
        layers=layers,
        pp_size=pp_size,
        partition=partition,
        kv_dtype=kv_dtype,
        attn_tp_size=attn_tp_size,
        staged=staged,
        full_ids_cell=full_ids_cell,
    )
    tokens = min(budget_bytes // c.cell_l if c.cell_l > 0 else 0 for c in cells)
    profiled = tokens
    if max_total_tokens is not None:
        tokens = min(tokens, max_total_tokens)
    tokens = tokens // page_size * page_size
    if tokens <= 0:
        raise InputError(
            f"KV budget {budget_bytes:,} B holds no token of the {n}-layer cell",
            field="--mem-fraction-static",
            hint="raise --mem-fraction-static or free GPU memory",
        )
    splits = [
        (
            layer_split_tokens(
                tokens=tokens,
                num_layers=n,
                full_layers=c.n_full,
                swa_layers=c.n_swa,
                ratio=ratio,
                page_size=page_size,
                floor=floor,
            ),
            c,
        )
        for c in cells
    ]
    if staged and pp_size > 1:
        (full, swa), st = min(splits, key=lambda t: t[0][0])
    else:  # one split for every stage; the stage with the largest cell reported (as before)
        st = max(cells, key=lambda c: (c.cell_l, c.full_cell, c.swa_cell))
        full, swa = splits[0][0]
    c = _Cells(
        full_cell=st.full_cell,
        swa_cell=st.swa_cell,
        window=layers.sliding_window,
        page_size=page_size,
        notes=list(layers.notes),
    )
    kind = "full-layer" if full_ids_cell else "all-layer"
    c.notes.append(
        f"pools split by layer count (SGLang before 0.5.9): {tokens:,} tokens of the {st.cell_l:,} B "
        f"{kind} cell -> full int({tokens:,} x {n} / ({ratio} x {st.n_swa} + {st.n_full})) = {full:,}, "
        f"SWA int(full x {ratio}) = {swa:,}" + ("" if floor else " (not page-floored)")
    )
    stage_bytes = max(f * x.full_cell + w * x.swa_cell for (f, w), x in splits) if staged and pp_size > 1 else 0
    return SWAPools(
        full_tokens=full,
        swa_tokens=swa,
        full_bytes_per_token=st.full_cell,
        swa_bytes_per_token=st.swa_cell,
        cell=st.cell_l * (ratio * st.n_swa + st.n_full) / n,
        mode="layers",
        components=c.components(full, swa),
        notes=tuple(c.notes),
        swa_full_tokens_ratio=ratio,
        profiled_full_tokens=profiled,
        page_size=page_size,
        sliding_window=layers.sliding_window,
        stage_pool_bytes=stage_bytes,
    )


def layer_split_warning(*, res: SWAPools, budget_bytes: int, num_layers: int) -> str | None:
    """The warning of a 0.5.7 - 0.5.8 PP plan whose largest stage allocates more KV pool than the budget (None when
    none does; ``res.stage_pool_bytes`` from :func:`layer_split_pools`)."""
    worst = res.stage_pool_bytes
    if worst <= budget_bytes:
        return None
    return (
        f"SGLang 0.5.7 - 0.5.8 split a PP stage's hybrid SWA pools by the whole model's {num_layers} layers but "
        f"the stage's own layer counts: a PP rank allocates {worst / 2**30:,.2f} GiB of KV pools for a "
        f"{budget_bytes / 2**30:,.2f} GiB budget ({worst / budget_bytes:.2f}x); kvplan sizes what the engine "
        f"allocates, and the start-up may then run out of GPU memory (0.5.9+ split by bytes)"
    )


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def hybrid_pool_on(ctx: PoolContext, layers: SWALayers) -> bool:
    """Whether the planned release sizes this model with the hybrid sliding-window pool
    (``RuleSet.pool_rules.hybrid_swa_pool``), from the config (architectures, ``is_hybrid_swa``,
    ``sliding_window_pattern``), the layers (a window) and the flags (speculation; trtllm_mha: :func:`_trtllm_mha`).

    Example: gpt-oss-120b on an H100 -> False under 0.5.3, True under 0.5.8 and 0.5.23; on a B200 under 0.5.8 ->
    False.  Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``is_hybrid_swa_model``,
    server_args.py ``_handle_model_specific_adjustments``, model_executor/model_runner.py ``ModelRunner.__init__``
    ("Check if the model is using hybrid SWA"), v0.4.9.post6 - v0.5.23.
    """
    flat = flatten_config(ctx.config, engine="sglang") if isinstance(ctx.config, Mapping) else {}
    return ctx.rules.pool_rules.hybrid_swa_pool(
        architectures=[str(a) for a in (flat.get("architectures") or [])],
        has_sliding_window=bool(layers.swa_layers) and layers.sliding_window > 0,
        config_opt_in=bool(flat.get("is_hybrid_swa")),
        trtllm_mha=_trtllm_mha(ctx),
        speculative=bool(ctx.flags.speculative_algorithm),
        sliding_window_pattern=flat.get("sliding_window_pattern") is not None,
    )


def _trtllm_mha(ctx: PoolContext) -> bool:
    """The attention backend is trtllm_mha: given as ``--attention-backend``, else GPT-OSS's default on SM100
    (server_args.py, v0.5.8 - v0.5.9)."""
    if ctx.flags.attention_backend is not None:
        return ctx.flags.attention_backend == "trtllm_mha"
    return ctx.vendor == "nvidia" and ctx.sm_major == 10


def plan(ctx: PoolContext) -> PoolPlan:
    """The hybrid-SWA pools: :func:`swa_pool_sizes_over_stages` on the budget (full pool = the token count), the
    SWA pool beside it, the draft's full layers sharing the count, then the request cap.  A release without the pool
    for this model: :func:`one_pool_plan`; a layer-split release (before 0.5.9): :func:`layer_split_pools`."""
    f = ctx.flags
    layers = sglang_swa_geometry(ctx.config, release=_release(ctx))
    if not hybrid_pool_on(ctx, layers):
        return one_pool_plan(ctx, layers)
    era = byte_era(_release(ctx))
    draft_full, draft_swa = era_draft_layers(ctx, layers, era)
    if ctx.budget <= 0:
        mrr, reduced = request_cap(ctx, 0)
        return PoolPlan(
            tokens=0,
            cell=0.0,
            layout="",
            max_running_requests=mrr,
            reduced=reduced,
            kv_pool_bytes=0,
            kv_slice_bytes=0,
            fixed_note=_FIXED_NOTE,
        )
    if ctx.rules.pool_rules.swa_split == "layers":
        res = layer_split_pools(
            layers=layers,
            pp_size=ctx.pp,
            partition=f.pp_layer_partition,
            budget_bytes=ctx.budget,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            page_size=ctx.page_size,
            ratio=_ratio(ctx),
            max_total_tokens=f.max_total_tokens,
            floor=_key(_release(ctx)) >= _key(LAYER_SPLIT_FLOOR_SINCE),
            staged=era.staged,
            full_ids_cell=_release(ctx) == LAYER_SPLIT_FULL_IDS_CELL,
        )
    elif era.two_step:
        res = two_step_pools(
            layers=layers,
            budget_bytes=ctx.budget,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            page_size=ctx.page_size,
            ratio=_ratio(ctx),
            max_total_tokens=f.max_total_tokens,
            stage_layers=listed_stages(
                layers=layers, pp_size=ctx.pp, partition=f.pp_layer_partition, end_inclusive=era.end_inclusive
            ),
        )
    else:
        res = swa_pool_sizes_over_stages(
            layers=layers,
            pp_size=ctx.pp,
            partition=f.pp_layer_partition,
            budget_bytes=ctx.budget,
            max_total_tokens=f.max_total_tokens,
            staged=era.staged,
            end_inclusive=era.end_inclusive,
            request_cap_mode=era.request_cap,
            cap_chunk_gate=era.cap_chunk_gate,
            cap_floor_one=era.cap_floor_one,
            cap_draft_full=era.cap_draft_full,
            cap_draft_swa=era.cap_draft_swa,
            validate=era.validate,
            **_sizing_args(ctx, draft_full, draft_swa),
        )
    mrr, reduced = request_cap(ctx, res.full_tokens)
    layout = (
        f"hybrid sliding window ({len(layers.full_layers)} full + {len(layers.swa_layers)} SWA layers, "
        f"window {layers.sliding_window}, {res.mode} mode)"
    )
    pools = [
        Pool(
            name="full-attention KV",
            tokens=res.full_tokens,
            bytes=res.full_tokens * res.full_bytes_per_token,
            bytes_per_token=res.full_bytes_per_token,
        ),
        Pool(
            name=SWA_POOL_NAME,
            tokens=res.swa_tokens,
            bytes=res.swa_tokens * res.swa_bytes_per_token,
            bytes_per_token=res.swa_bytes_per_token,
        ),
    ]
    notes = list(res.notes)
    if ctx.kv_dtype.strip().lower() in FP4_KV_DTYPES:
        notes.append(FP4_NOTE.format(dtype=ctx.kv_dtype))
    warning = layer_split_warning(res=res, budget_bytes=ctx.budget, num_layers=layers.num_hidden_layers or 0)
    return PoolPlan(
        tokens=res.full_tokens,
        cell=res.cell,
        layout=layout,
        max_running_requests=mrr,
        reduced=reduced,
        kv_pool_bytes=res.pool_bytes,
        kv_slice_bytes=min(int(res.full_tokens * res.cell), ctx.budget),
        pools=pools,
        fixed_bytes=res.fixed_bytes,
        fixed_note=_FIXED_NOTE,
        notes=notes,
        warnings=[warning] if warning else [],
    )


#: the assumption an FP4 KV cache on the hybrid pool adds (see :func:`swa_bytes_per_layer_token`)
FP4_NOTE = (
    "{dtype} KV on SGLang's hybrid sliding-window pool: both sub-pools are plain float4_e2m1fn_x2 buffers, "
    "1 byte per value (as fp8), with no FP4 scales and no prefill dequant workspace -- SWAKVPool passes no "
    "FP4 quant method (kv_cache_configurator.py _build_hybrid_swa_kv_pool, 0.5.23); not verified by a run"
)


def _ratio(ctx: PoolContext) -> float:
    """``--swa-full-tokens-ratio``, else the release's default (``pool_rules.swa_full_tokens_ratio``)."""
    given = ctx.flags.swa_full_tokens_ratio
    return float(ctx.rules.pool_rules.swa_full_tokens_ratio if given is None else given)


def one_pool_plan(ctx: PoolContext, layers: SWALayers) -> PoolPlan:
    """A release that sizes this sliding-window model without the hybrid pool: one KV pool over every layer at the
    full-attention geometry, SGLang's default flow (:func:`kvplan.engines.sglang.pools.default.plan_default`)::

        cell = kv_heads_per_rank x (head_dim + v_head_dim) x L x e      (v_head_dim: head_dim before 0.5.7)
        tokens = page_floor(budget // cell)

    Example: gpt-oss-120b bf16 TP1 under 0.5.3: 8 x (64 + 64) x 36 x 2 = 73,728 B per token.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ``profile_max_num_token`` (the
    ``disable_hybrid_swa_memory`` path), v0.5.3; model_executor/model_runner_kv_cache_mixin.py
    ``get_cell_size_per_token``, v0.5.8.
    """
    from kvplan.engines.sglang.history import swa_pool_since
    from kvplan.engines.sglang.pools.default import plan_default

    def cell(c: PoolContext, n_layers: int) -> int:
        if layers.latent:
            return (
                swa_bytes_per_layer_token(
                    kv_heads=1,
                    head_dim=layers.full_head_dim,
                    v_head_dim=0,
                    attn_tp_size=c.attn_tp,
                    kv_dtype=c.kv_dtype,
                    latent=True,
                )
                * n_layers
            )
        vhd = layers.full_v_head_dim if c.rules.pool_rules.gqa_cell_v_head_dim else layers.full_head_dim
        return (
            swa_bytes_per_layer_token(
                kv_heads=layers.full_kv_heads,
                head_dim=layers.full_head_dim,
                v_head_dim=vhd,
                attn_tp_size=c.attn_tp,
                kv_dtype=c.kv_dtype,
            )
            * n_layers
        )

    arch = layers.architecture or "this model"
    n = layers.num_hidden_layers or len(layers.full_layers) + len(layers.swa_layers)
    if ctx.kv_dtype.strip().lower() in FP4_KV_DTYPES:
        raise InputError(
            f"SGLang {_release(ctx)} sizes {arch} in one KV pool over all layers; its FP4 "
            f"({ctx.kv_dtype}) cell there is not modelled",
            field="--kv-cache-dtype",
            hint="use auto, bf16, fp8_e4m3 or fp8_e5m2",
        )
    out = plan_default(
        ctx,
        cell=cell,
        pool_name="KV (K + V)",
        layout=lambda c: (
            f"one KV pool over all {n} layers (no hybrid sliding-window pool in SGLang {_release(c)} for {arch})"
        ),
    )
    cond = ctx.rules.pool_rules.swa_disabled_archs.get(arch)
    why = (
        "the release does not list it for the hybrid pool"
        if cond is None
        else "its model override sets disable_hybrid_swa_memory"
        if cond == "always"
        else f"its model override sets disable_hybrid_swa_memory with {cond.replace('-', ' ')}"
        + (" (GPT-OSS's default backend on SM100)" if _trtllm_mha(ctx) else "")
    )
    since = swa_pool_since(arch)
    out.notes.insert(
        0,
        f"SGLang {_release(ctx)} sizes {arch} without the hybrid sliding-window pool ({why}): one KV "
        f"pool over all {n} layers at the full-attention cell; "
        + (
            f"SGLang lists it for the hybrid pool from {since}"
            if since
            else "no SGLang release up to 0.5.23 lists it for the hybrid pool"
        ),
    )
    return out


_FIXED_NOTE = "sliding-window pool (request-cap mode)"
#: the SWA pool's name in the plan's pools (kvplan.planning.workload reads it: SGLANG_SWA_POOL_NAME)
SWA_POOL_NAME = "sliding-window KV"


def _sizing_args(ctx: PoolContext, draft_full: int, draft_swa: int) -> dict[str, Any]:
    """The :func:`swa_pool_sizes` arguments the planner takes from its context (all but the budget, the stage and
    ``--max-total-tokens``)."""
    f = ctx.flags
    return dict(
        kv_dtype=ctx.kv_dtype,
        attn_tp_size=ctx.attn_tp,
        page_size=ctx.page_size,
        swa_full_tokens_ratio=_ratio(ctx),
        radix_cache=f.radix_cache,
        max_running_requests=ctx.max_running_requests,
        attn_dp_size=ctx.attn_dp,
        chunked_prefill_size=ctx.chunked_prefill_size,
        overlap_schedule=f.overlap_schedule,
        speculative_num_draft_tokens=f.speculative_num_draft_tokens,
        draft_full_layers=draft_full,
        draft_swa_layers=draft_swa,
    )


@dataclass(frozen=True)
class _VectorStages:
    """One hybrid-SWA group's scalars for the sweep: every PP stage's cells, the worst stage, the mode."""

    full_cells: tuple[int, ...]
    swa_cells: tuple[int, ...]
    worst: int  # the stage with the largest cost per full token (the one the plan reports)
    cell: float  # FitResult.kv_bytes_per_token when the budget is positive
    cap_mode: bool
    ratio: float
    window: int
    page_size: int
    cap: dict[str, Any]  # swa_request_cap arguments (request-cap mode)
    validate: bool = True  # the release refuses an SWA pool too small for one request (0.5.16+)
    cap_floor_one: bool = True  # the cap is sized for max(1, mrr // dp) requests (0.5.23; mrr // dp before)


def _vector_stages(ctx: PoolContext) -> _VectorStages | None:
    """The group's stages as :func:`swa_pool_sizes_over_stages` sizes them; None where the sweep evaluates one fit
    per point (no full-attention layer, an invalid ratio, a stage without layers, a geometry fit refuses)."""
    f = ctx.flags
    era = byte_era(_release(ctx))
    try:
        layers = sglang_swa_geometry(ctx.config, release=_release(ctx))
        draft_full, draft_swa = era_draft_layers(ctx, layers, era)
        n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
        ranges = pp_layer_ranges(num_layers=n, pp_size=ctx.pp, partition=f.pp_layer_partition)
        staged = [
            stage_cells(
                layers=layers,
                kv_dtype=ctx.kv_dtype,
                attn_tp_size=ctx.attn_tp,
                draft_full_layers=draft_full,
                draft_swa_layers=draft_swa,
                stage_layers=_listed(rng, n, era.end_inclusive) if ctx.pp > 1 and era.staged else None,
            )
            for rng in ranges
        ]
    except InputError:
        return None
    ratio = _ratio(ctx)
    cap_mode = era.request_cap and swa_request_cap_applies(
        radix_cache=f.radix_cache,
        max_running_requests=ctx.max_running_requests,
        chunked_prefill_size=ctx.chunked_prefill_size,
        chunk_gate=era.cap_chunk_gate,
    )
    cells = [
        cap_cells(
            full_cell=fc,
            swa_cell=sc,
            F=F,
            S=S,
            draft_full_layers=draft_full,
            draft_swa_layers=draft_swa,
            cap_draft_full=era.cap_draft_full,
            cap_draft_swa=era.cap_draft_swa,
        )
        if cap_mode
        else (fc, sc)
        for fc, sc, F, S in staged
    ]
    if not layers.full_layers or not 0.0 < ratio <= 1.0 or ctx.page_size <= 0 or ctx.attn_dp <= 0:
        return None
    costs = [float(fc) if cap_mode else fc + ratio * sc for fc, sc in cells]
    if min(costs) <= 0 or (cap_mode and min(fc for fc, _ in cells) <= 0):
        return None
    worst = costs.index(max(costs))
    args = _sizing_args(ctx, draft_full, draft_swa)
    return _VectorStages(
        full_cells=tuple(fc for fc, _ in cells),
        swa_cells=tuple(sc for _, sc in cells),
        worst=worst,
        cell=costs[worst],
        cap_mode=cap_mode,
        ratio=ratio,
        window=layers.sliding_window,
        page_size=ctx.page_size,
        cap=cap_args(
            window=layers.sliding_window,
            chunked_prefill_size=args["chunked_prefill_size"],
            overlap_schedule=args["overlap_schedule"],
            speculative_num_draft_tokens=args["speculative_num_draft_tokens"],
            speculative_num_steps=None,
            disaggregation_decode=False,
            decode_extra_slots=0,
            swa_eviction_interval=None,
        ),
        validate=era.validate,
        cap_floor_one=era.cap_floor_one,
    )


def vector_group(ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """``kvplan sweep``'s hybrid-SWA pools over arrays: :func:`swa_pool_sizes_over_stages` with the same formulas
    (:func:`ratio_full_tokens`, :func:`ratio_swa_tokens`, :func:`swa_pool_too_small`, :func:`cap_swa_tokens`,
    :func:`cap_full_tokens`)::

        per stage s: full_s = ratio: page_floor(int(budget // (Fc_s + r Sc_s)))      (refused: swa_s too small)
                              cap:   page_floor((budget - swa * Sc_s) // Fc_s)         (refused: full_s <= 0)
        common = min(min_s full_s, max_total_tokens);   worst = the stage of the largest cost per full token
        full   = page_floor(common) where common < full_worst, else full_worst
        swa    = ratio: page_floor(int(full * r)) (refused when too small) | cap: min(swa, common) where capped
        budget <= 0: no pool (0 tokens, cell 0, the request cap of 0 tokens)

    Example: gpt-oss-120b bf16 TP1 at 12 GiB -> full 194,180, SWA 155,344 (the scalar example of
    :func:`swa_pool_sizes`).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``HybridSWAPoolConfigurator``,
    ``SWARequestCapPoolConfigurator``; mem_cache/kv_cache_configurator.py ``_apply_token_constraints``, v0.5.23.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of
    from kvplan.engines.sglang.pools.vector import vector_group as single_cell_group

    try:
        layers = sglang_swa_geometry(ctx.config, release=_release(ctx))
    except InputError:
        return None
    if not hybrid_pool_on(ctx, layers):  # the release's one pool over all layers: the single-cell formula
        return single_cell_group(ctx, cell=cell)
    if ctx.rules.pool_rules.swa_split == "layers":
        return _layer_split_group(ctx, layers, cell=cell)
    if byte_era(_release(ctx)).two_step:
        return _two_step_group(ctx, layers, cell=cell)
    vs = _vector_stages(ctx)
    if vs is None or (cell and vs.cell != cell):
        return None
    page = vs.page_size

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        err: Any = False
        fulls = []
        swa_cap: Any = None
        if vs.cap_mode:
            swa_cap = cap_swa_tokens(
                max_running_requests=requested,
                attn_dp_size=ctx.attn_dp,
                page_size=page,
                floor_one=vs.cap_floor_one,
                **vs.cap,
            )
        for fc, sc in zip(vs.full_cells, vs.swa_cells, strict=True):
            if vs.cap_mode:
                full_s = cap_full_tokens(
                    budget_bytes=budget, swa_tokens=swa_cap, full_cell=fc, swa_cell=sc, page_size=page
                )
                err = err | (full_s <= 0)
            else:
                full_s = ratio_full_tokens(budget_bytes=budget, cell=fc + vs.ratio * sc, page_size=page)
                if vs.validate:
                    err = err | swa_pool_too_small(
                        swa_tokens=ratio_swa_tokens(full_tokens=full_s, ratio=vs.ratio, page_size=page),
                        window=vs.window,
                        page_size=page,
                    )
            fulls.append(full_s)
        common = fulls[0]
        for full_s in fulls[1:]:
            common = vmin(common, full_s)
        if max_total_tokens is not None:
            common = vwhere((max_total_tokens >= 0) & (max_total_tokens < common), max_total_tokens, common)
        capped = common < fulls[vs.worst]
        full = vwhere(capped, common // page * page, fulls[vs.worst])
        if vs.cap_mode:
            swa = vwhere(capped, vmin(swa_cap, common), swa_cap)
        else:
            swa = ratio_swa_tokens(full_tokens=full, ratio=vs.ratio, page_size=page)
            if vs.validate:
                err = err | swa_pool_too_small(swa_tokens=swa, window=vs.window, page_size=page)
        tokens = vwhere(pos, full, 0)
        return VectorPools(
            tokens=tokens,
            cell=vwhere(pos, vs.cell, 0.0),
            mrr=request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested),
            error=err & pos,
            pools={SWA_POOL_NAME: vwhere(pos, swa, -1)},
        )

    return VectorGroup(family="hybrid_swa", pools=pools, note=f"{'request-cap' if vs.cap_mode else 'ratio'} mode")


def _stages_common_tokens(*, budget: Any, costs: list[int], max_total_tokens: Any, page: int) -> Any:
    """The token count common to every PP stage before the full / SWA split, in the layer-split (0.4.9.post6 -
    0.5.8) and two-step (0.5.9 - 0.5.10) releases (ints or arrays; the vector groups of both call it)::

        tokens = page_floor(min(min over stages of budget // cost_s, max_total_tokens if set (>= 0)))

    Example: budget 1,000,000, costs [300, 400], no cap, page 64 -> min(3,333, 2,500) = 2,500 -> 2,496.
    Source: the same steps as :func:`layer_split_pools` and the two-step count's scalar path (SGLang
    ``ModelRunner.set_num_token_hybrid`` / ``set_num_tokens_hybrid_swa``, 0.4.9.post6 - 0.5.10: the PP MIN over stages,
    the --max-total-tokens cap, then the page floor)."""
    common = budget // costs[0]
    for c in costs[1:]:
        common = vmin(common, budget // c)
    if max_total_tokens is not None:
        common = vwhere((max_total_tokens >= 0) & (max_total_tokens < common), max_total_tokens, common)
    return common // page * page


def _layer_split_group(ctx: PoolContext, layers: SWALayers, *, cell: float) -> VectorGroup | None:
    """:func:`layer_split_pools` over arrays (the same :func:`layer_split_stages` / :func:`layer_split_tokens`)::

        T = page_floor(min(min_s budget // cell_L_s, max_total_tokens))      (refused: T <= 0)
        full, swa = layer_split_tokens(T);  budget <= 0: no pool

    Example: gpt-oss-120b bf16 TP1 under 0.5.8 at 12 GiB -> T 174,762, full 194,180, SWA 155,344.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py ``init_memory_pool``,
    ``set_num_tokens_hybrid_swa``, v0.5.8.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    ratio, page = _ratio(ctx), ctx.page_size
    staged = byte_era(_release(ctx)).staged
    try:
        n, stages = layer_split_stages(
            layers=layers,
            pp_size=ctx.pp,
            partition=ctx.flags.pp_layer_partition,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            staged=staged,
            full_ids_cell=_release(ctx) == LAYER_SPLIT_FULL_IDS_CELL,
        )
    except InputError:
        return None
    cells = [st.cell_l for st in stages]
    per_stage = staged and ctx.pp > 1  # 0.5.7 - 0.5.8 PP: each stage splits by its own counts, the fewest reported
    if not per_stage:
        top = max(stages, key=lambda st: (st.cell_l, st.full_cell, st.swa_cell))
        splits = [(len(layers.full_layers), len(layers.swa_layers), top.cell_l)]
    else:
        splits = [(st.n_full, st.n_swa, st.cell_l) for st in stages]
    costs = [c_l * (ratio * ns + nf) / n for nf, ns, c_l in splits]
    if not 0.0 < ratio <= 1.0 or min(cells) <= 0 or page <= 0:
        return None
    dens = [ratio * ns + nf for nf, ns, _ in splits]
    static = costs[dens.index(max(dens))]  # the stage of the fewest full tokens (ties: see pools())
    if cell and static != cell:
        return None
    floor = _key(_release(ctx)) >= _key(LAYER_SPLIT_FLOOR_SINCE)

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        common = _stages_common_tokens(budget=budget, costs=cells, max_total_tokens=max_total_tokens, page=page)
        err = pos & (common <= 0)
        full, swa, cost = None, None, None
        for (nf, ns, _), c_s in zip(splits, costs, strict=True):  # min over stages, the first one on ties
            full_s, swa_s = layer_split_tokens(
                tokens=common, num_layers=n, full_layers=nf, swa_layers=ns, ratio=ratio, page_size=page, floor=floor
            )
            if full is None:
                full, swa, cost = full_s, swa_s, c_s
            else:
                take = full_s < full
                full, swa, cost = vwhere(take, full_s, full), vwhere(take, swa_s, swa), vwhere(take, c_s, cost)
        tokens = vwhere(pos & ~err, full, 0)
        return VectorPools(
            tokens=tokens,
            cell=vwhere(pos, cost, 0.0),
            mrr=request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested),
            error=err,
            pools={SWA_POOL_NAME: vwhere(pos, swa, -1)},
        )

    return VectorGroup(family="hybrid_swa", pools=pools, note="layer-split mode")


def _two_step_group(ctx: PoolContext, layers: SWALayers, *, cell: float) -> VectorGroup | None:
    """:func:`two_step_pools` over arrays (the same :func:`two_step_full_tokens` / :func:`ratio_swa_tokens`)::

        T = page_floor(min(budget // (F Lf + S Ls), max_total_tokens))        (refused: T <= 0)
        full = two_step_full_tokens(T);  swa = page_floor(int(full x r));  budget <= 0: no pool

    Example: gpt-oss-120b bf16 TP1 under 0.5.9 at 12 GiB -> T 174,762, full 194,180, SWA 155,344.
    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``set_num_tokens_hybrid_swa``, v0.5.9.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    ratio, page = _ratio(ctx), ctx.page_size
    stages = listed_stages(
        layers=layers,
        pp_size=ctx.pp,
        partition=ctx.flags.pp_layer_partition,
        end_inclusive=byte_era(_release(ctx)).end_inclusive,
    )
    try:
        ranges: list[tuple[int, int] | None] = list(stages) if stages else [None]
        cells = [
            stage_cells(layers=layers, kv_dtype=ctx.kv_dtype, attn_tp_size=ctx.attn_tp, stage_layers=rng)[:2]
            for rng in ranges
        ]
    except InputError:
        return None
    profiles = [fc + sc for fc, sc in cells]
    splits = [fc + ratio * sc for fc, sc in cells]
    if not 0.0 < ratio <= 1.0 or min(profiles) <= 0 or page <= 0:
        return None
    gains = [pc / sp for pc, sp in zip(profiles, splits, strict=True)]
    if cell and splits[gains.index(min(gains))] != cell:  # the stage of the fewest full tokens (ties: pools())
        return None

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        common = _stages_common_tokens(budget=budget, costs=profiles, max_total_tokens=max_total_tokens, page=page)
        err = pos & (common <= 0)
        full: Any = None
        cost: Any = None
        for pc, sp in zip(profiles, splits, strict=True):  # min over stages, the first one on ties
            full_s = two_step_full_tokens(tokens=common, profile_cell=pc, split_cell=sp, page_size=page)
            if full is None:
                full, cost = full_s, sp
            else:
                take = full_s < full
                full, cost = vwhere(take, full_s, full), vwhere(take, sp, cost)
        swa = ratio_swa_tokens(full_tokens=full, ratio=ratio, page_size=page)
        tokens = vwhere(pos & ~err, full, 0)
        return VectorPools(
            tokens=tokens,
            cell=vwhere(pos, cost, 0.0),
            mrr=request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested),
            error=err,
            pools={SWA_POOL_NAME: vwhere(pos, swa, -1)},
        )

    return VectorGroup(family="hybrid_swa", pools=pools, note="0.5.9 two-step mode")


#: speculative algorithms SGLang runs as EAGLE (``is_eagle()``), whose path-less MTP head is sized off the target
_PATHLESS_MTP_ALGOS = frozenset({"NEXTN", "MTP", "EAGLE"})


def split_draft_layers(model: ModelSpec, layers: SWALayers, spec_algo: str) -> tuple[int, int]:
    """(full, SWA) layers of the speculative draft's KV in the target's hybrid-SWA cell.

    A path-less MTP / NEXTN head (the checkpoint's own ``num_nextn_predict_layers``) is sized off the *target*
    config: the target is hybrid SWA, so ``eagle_draft_swa_num_layers = len(swa layers)``, clipped to the draft
    layers -- every draft layer is priced as an SWA layer.  A separate draft model (any other case kvplan sees)
    keeps the full-layer pricing of :func:`draft_layers`.

    Example: MiMo-V2-Flash with ``num_nextn_predict_layers`` 1 and ``--speculative-algorithm EAGLE`` -> (0, 1):
    TP1 bf16 cell 23,040 + 0.8 x 5,120 x (39 + 1) = 186,880 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py
    ``_resolve_eagle_aux_hidden_state``; model_executor/pool_configurator.py ``HybridSWAPoolConfigurator.__init__``
    (draft layers), v0.5.23.
    """
    n = draft_layers(model, spec_algo)
    nextn = model.get("num_nextn_predict_layers")
    if n and nextn and spec_algo in _PATHLESS_MTP_ALGOS:
        swa = min(len(layers.swa_layers), n)
        return n - swa, swa
    return n, 0


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: per layer group (full / sliding window) and TP, the bf16 bytes per token of its pool."""
    L = swa_layers_from_config(m.raw_config or m.config)
    out = Breakdown(
        info=dict(full_layers=len(L.full_layers), swa_layers=len(L.swa_layers), sliding_window=L.sliding_window)
    )
    groups = (
        ("full attention", len(L.full_layers), L.full_kv_heads, L.full_head_dim, L.full_v_head_dim),
        ("sliding window", len(L.swa_layers), L.swa_kv_heads, L.swa_head_dim, L.swa_v_head_dim),
    )
    for group, n, heads, hd, vhd in groups:
        for tp in SHOW_TPS:
            per_layer = swa_bytes_per_layer_token(
                kv_heads=heads, head_dim=hd, v_head_dim=vhd, attn_tp_size=tp, kv_dtype="bf16", latent=L.latent
            )
            out.rows.append(
                {
                    "group": group,
                    "layers": n,
                    "tp": tp,
                    "kv_heads_per_gpu": max(1, heads // tp),
                    "bytes_per_token_bf16": per_layer * n,
                    "pool": "full pool (max_total_num_tokens)"
                    if group == "full attention"
                    else "SWA pool (ratio x full tokens)",
                }
            )
    return out
