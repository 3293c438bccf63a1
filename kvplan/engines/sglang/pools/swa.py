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
from kvplan.engines.sglang.pools.swa_cap import SWA_EVICTION_INTERVAL, ceil_align, swa_request_cap
from kvplan.errors import InputError
from kvplan.geometry import swa as geometry
from kvplan.geometry.gqa import kv_heads_per_rank, kv_values_per_token_layer
from kvplan.geometry.kvdtype import kv_element_bytes
from kvplan.geometry.swa import SWALayers, positive_int
from kvplan.hfconfig.normalize import flatten_config
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.result import Pool

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec

#: ``--swa-full-tokens-ratio`` fallback (arg_groups/fields/schedule.py, ``fallback=0.8``).
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8

#: Architectures whose model override turns hybrid SWA memory *off* (plain MHA/GQA pool over all layers).
SWA_DISABLED_ARCHS = frozenset({"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                                "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"})


#: Gemma-4 in SGLang: first release with a Gemma-4 model (and in ``is_hybrid_swa_model``), and the first release
#: whose full-layer KV heads come from transformers' ``per_layer_config`` (``num_global_key_value_heads`` only with
#: ``attention_k_eq_v``; 0.5.11 - 0.5.21 set them from the config whenever given).  Read in the wheels:
#: ``models/gemma4_*`` absent in 0.5.9 / 0.5.10; ``utils/hf_transformers/config.py`` inline swap in 0.5.11 - 0.5.21,
#: ``_apply_gemma4_attention_overrides`` over ``per_layer_config`` in 0.5.22 / 0.5.23.
GEMMA4_SINCE = "0.5.11"
GEMMA4_K_EQ_V_GATE_SINCE = "0.5.22"


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split(".")[:3])


def swa_layers_from_config(cfg: Mapping[str, Any], *, release: str | None = None) -> SWALayers:
    """The full/SWA split SGLang sizes: :func:`kvplan.geometry.swa.swa_layers_from_config`, after SGLang's model
    overrides (Gemma-2/3 turn hybrid SWA memory off, so SGLang sizes them as a plain GQA pool: refused here) and
    the release's Gemma-4 rules (``release`` = the SGLang release, None = 0.5.23): no Gemma-4 model before
    :data:`GEMMA4_SINCE` (InputError on ``--engine-version``); the global KV heads ungated before
    :data:`GEMMA4_K_EQ_V_GATE_SINCE`.

    Example: gpt-oss-120b -> 18 full + 18 SWA layers, window 127; Gemma3ForCausalLM -> InputError;
    Gemma-4 26B-A4B at release 0.5.10 -> InputError.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py
    (``disable_hybrid_swa_memory``), configs/model_config.py ``is_hybrid_swa_model``,
    utils/hf_transformers/config.py, v0.5.11 - v0.5.23.
    """
    gated = True
    if isinstance(cfg, Mapping):
        archs = list(flatten_config(cfg, engine="sglang").get("architectures") or [])
        if set(archs) & SWA_DISABLED_ARCHS:
            raise InputError(f"{archs[0]}: SGLang 0.5.23 disables hybrid SWA memory for Gemma-2/3 "
                             "(model override sets disable_hybrid_swa_memory)", field="--model",
                             hint="size it as a plain GQA pool over all layers")
        if release is not None and set(archs) & geometry.GEMMA4_ARCHS:
            if _key(release) < _key(GEMMA4_SINCE):
                raise InputError(f"SGLang {release} has no {archs[0]} model (Gemma-4 arrived in {GEMMA4_SINCE})",
                                 field="--engine-version", hint=f"use --engine-version {GEMMA4_SINCE} or newer")
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


def swa_bytes_per_layer_token(*, kv_heads: int, head_dim: int, v_head_dim: int, attn_tp_size: int,
                              kv_dtype: str, latent: bool = False) -> int:
    """Bytes one token costs in ONE layer of a hybrid-SWA sub-pool (full or SWA) on one attention rank.

    Formula: ``max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * e``; mxfp8 adds
    ``(n * (head_dim + v_head_dim)) // 32`` scale bytes (per layer, then multiplied by the layer count).
    Unlike the plain GQA pool there is no DCP term and no head-split assert here (the model asserts on
    load still apply). Example: gpt-oss-120b bf16 at TP1 -> 8 x 128 x 2 = 2,048 B; at TP4 -> 512 B.
    ``latent`` (MLA + SWA, Dots3): ``head_dim * e`` whatever the TP (one latent row, ``v_head_dim`` 0);
    Dots3 bf16: 576 x 2 = 1,152 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator.__init__`` (``_full_per_token`` / ``_swa_per_token``), v0.5.23.
    """
    for name, v in (("kv_heads", kv_heads), ("head_dim", head_dim), ("attn_tp_size", attn_tp_size)):
        positive_int(v, name)
    if not latent:
        positive_int(v_head_dim, "v_head_dim")
    dt = kv_dtype.strip().lower()
    if dt in ("nvfp4", "fp4_mx_block16"):
        raise InputError(f"SGLang's hybrid-SWA pool sizing has no {dt} formula", field="--kv-cache-dtype",
                         hint="use auto, bf16, fp8_e4m3, fp8_e5m2 or mxfp8")
    if latent:
        if dt == "mxfp8":
            raise InputError("mxfp8 KV on an MLA sliding-window model is not modelled", field="--kv-cache-dtype",
                             hint="use auto, bf16, fp8_e4m3 or fp8_e5m2")
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
    full_bytes_per_token: int      # full-pool bytes of one token over this stage's full layers (+ draft)
    swa_bytes_per_token: int       # SWA-pool bytes of one token over this stage's SWA layers (+ draft)
    cell: float                    # bytes budgeted per full token (ratio mode: full + r * swa)
    mode: str                      # "ratio" | "request-cap" | "all-swa"
    components: tuple[tuple[str, int], ...]
    notes: tuple[str, ...]
    swa_full_tokens_ratio: float | None = None
    swa_cap_tokens: int | None = None
    fixed_bytes: int = 0           # request-cap mode: the SWA pool taken off the budget first
    profiled_full_tokens: int = 0  # before --max-total-tokens / the PP MIN
    page_size: int = 1
    sliding_window: int = 0

    @property
    def pool_bytes(self) -> int:
        return sum(b for _, b in self.components)


def swa_request_cap_applies(*, radix_cache: bool, max_running_requests: int | None, chunked_prefill_size: int,
                            has_full_layers: bool = True, disaggregation_decode: bool = False) -> bool:
    """Whether SGLang picks ``SWARequestCapPoolConfigurator`` over the ratio split.

    True iff ``--max-running-requests`` is set, the radix cache is disabled, chunked prefill is on
    (``> 0``; PD-decode servers skip this condition) and the model has full-attention layers.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``SWARequestCapPoolConfigurator.is_applicable``, v0.5.23.
    """
    if max_running_requests is None or radix_cache or not has_full_layers:
        return False
    return disaggregation_decode or chunked_prefill_size > 0


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
) -> SWAPools:
    """Split a KV byte budget into full and SWA pools the way SGLang 0.5.23 does (one rank, one stage).

    ``F`` = :func:`swa_bytes_per_layer_token` of the full geometry, ``S`` = of the SWA geometry,
    ``Lf`` / ``Ls`` = full / SWA layers of this stage, ``Df`` / ``Ds`` = draft (EAGLE/MTP) full / SWA layers::

        full_cell = F * (Lf + Df)          swa_cell = S * (Ls + Ds)
        ratio mode   : cell = full_cell + r * swa_cell                  (float; r = ratio, 0.8 if None)
                       full = page_floor(int(budget // cell));  swa = page_floor(int(full * r))
                       refuse when window + page >= swa  (validate_swa_pool_size)
        request cap  : cap  = (window + 128 * max(D, 1) + page + decode_alloc) * max(1, mrr // dp)
                              + (2 if overlap else 1) * chunked_prefill + page
                       swa  = ceil_page(cap);  full = page_floor(int((budget - swa * swa_cell) // full_cell))
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
        raise InputError(f"--swa-full-tokens-ratio {ratio} is outside (0, 1]", field="--swa-full-tokens-ratio",
                         hint="SGLang refuses it: --swa-full-tokens-ratio should be in range (0, 1.0]")
    if budget_bytes <= 0:
        raise InputError(f"KV budget is {budget_bytes} B; nothing left for the pools", field="--mem-fraction-static",
                         hint="raise --mem-fraction-static or free GPU memory")
    n_full, n_swa = layers.stage(stage_layers)
    F = swa_bytes_per_layer_token(kv_heads=layers.full_kv_heads, head_dim=layers.full_head_dim,
                                  v_head_dim=layers.full_v_head_dim, attn_tp_size=attn_tp_size, kv_dtype=kv_dtype,
                                  latent=layers.latent)
    S = swa_bytes_per_layer_token(kv_heads=layers.swa_kv_heads, head_dim=layers.swa_head_dim,
                                  v_head_dim=layers.swa_v_head_dim, attn_tp_size=attn_tp_size, kv_dtype=kv_dtype,
                                  latent=layers.latent)
    full_cell = F * (n_full + draft_full_layers)
    swa_cell = S * (n_swa + draft_swa_layers)
    window = layers.sliding_window
    notes: list[str] = list(layers.notes)
    if draft_full_layers or draft_swa_layers:
        notes.append(f"draft pool: {draft_full_layers} full + {draft_swa_layers} SWA layer(s) share the token counts")

    cells = _Cells(full_cell=full_cell, swa_cell=swa_cell, window=layers.sliding_window, page_size=page_size,
                   notes=notes)
    # ---- all-SWA (no full layer anywhere in the model) -------------------------------------------
    if not layers.full_layers:
        cell = S * n_swa + F * draft_full_layers + S * draft_swa_layers
        return _all_swa_pools(cells, cell=cell, budget_bytes=budget_bytes, max_total_tokens=max_total_tokens)
    if swa_request_cap_applies(radix_cache=radix_cache, max_running_requests=max_running_requests,
                               chunked_prefill_size=chunked_prefill_size,
                               disaggregation_decode=disaggregation_decode):
        assert max_running_requests is not None
        drafts = speculative_num_draft_tokens
        cap = swa_request_cap(
            page_size=page_size, window=window, mrr_per_rank=max(1, max_running_requests // attn_dp_size),
            chunked_prefill_size=chunked_prefill_size, overlap_schedule=overlap_schedule, num_draft_tokens=drafts,
            num_steps=speculative_num_steps if speculative_num_steps is not None else max(1, drafts - 1),
            disagg_decode=disaggregation_decode, decode_extra_slots=decode_extra_slots,
            eviction_interval=SWA_EVICTION_INTERVAL if swa_eviction_interval is None else swa_eviction_interval)
        return _request_cap_pools(cells, cap=cap, budget_bytes=budget_bytes, max_total_tokens=max_total_tokens,
                                  max_running_requests=max_running_requests,
                                  chunked_prefill_size=chunked_prefill_size)
    return _ratio_pools(cells, ratio=ratio, budget_bytes=budget_bytes, max_total_tokens=max_total_tokens)


@dataclass(frozen=True)
class _Cells:
    full_cell: int   # full-pool bytes of one token (this stage's full layers + draft)
    swa_cell: int    # SWA-pool bytes of one token (this stage's SWA layers + draft)
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
    return SWAPools(full_tokens=0, swa_tokens=tokens, full_bytes_per_token=0, swa_bytes_per_token=cell,
                    cell=float(cell), mode="all-swa", components=(("sliding-window KV", tokens * cell),),
                    notes=tuple(c.notes), profiled_full_tokens=profiled, page_size=page_size,
                    sliding_window=c.window)


def _request_cap_pools(c: _Cells, *, cap: int, budget_bytes: int, max_total_tokens: int | None,
                       max_running_requests: int, chunked_prefill_size: int) -> SWAPools:
    """``SWARequestCapPoolConfigurator``: the SWA pool for the worst case first, the rest to the full pool."""
    page_size = c.page_size
    swa_tokens = ceil_align(cap, page_size)
    fixed = swa_tokens * c.swa_cell
    if c.full_cell <= 0:
        raise InputError("this PP stage holds no full-attention layer", field="--pp-size")
    full = int((budget_bytes - fixed) // c.full_cell) // page_size * page_size
    if full <= 0:
        raise InputError(
            f"the SWA request cap ({swa_tokens:,} tokens, {fixed / 2**30:.2f} GiB) leaves no room for the full "
            f"KV pool in {budget_bytes / 2**30:.2f} GiB", field="--max-running-requests",
            hint="reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL or raise --mem-fraction-static")
    profiled = full
    if max_total_tokens is not None and max_total_tokens < full:
        full = max_total_tokens // page_size * page_size
        swa_tokens = min(swa_tokens, max_total_tokens)
    c.notes.append(f"SWA pool sized from the request cap: {cap:,} slots -> {swa_tokens:,} (radix cache off, "
                   f"--max-running-requests {max_running_requests}, chunked prefill {chunked_prefill_size})")
    return SWAPools(full_tokens=full, swa_tokens=swa_tokens, full_bytes_per_token=c.full_cell,
                    swa_bytes_per_token=c.swa_cell, cell=float(c.full_cell), mode="request-cap",
                    components=c.components(full, swa_tokens), notes=tuple(c.notes), swa_cap_tokens=cap,
                    fixed_bytes=fixed, profiled_full_tokens=profiled, page_size=page_size, sliding_window=c.window)


def _ratio_pools(c: _Cells, *, ratio: float, budget_bytes: int, max_total_tokens: int | None) -> SWAPools:
    """``HybridSWAPoolConfigurator``: one full token costs ``full_cell + ratio * swa_cell``."""
    page_size, window = c.page_size, c.window
    cell = c.full_cell + ratio * c.swa_cell
    if cell <= 0:
        raise InputError("this PP stage holds no attention layer", field="--pp-size")
    full = int(budget_bytes // cell) // page_size * page_size
    profiled = full
    capped_by = None
    if max_total_tokens is not None and max_total_tokens < full:
        full = max_total_tokens // page_size * page_size
        capped_by = max_total_tokens
    swa_tokens = int(full * ratio) // page_size * page_size
    if window + page_size >= swa_tokens:
        if capped_by is not None:
            field, hint = "--max-total-tokens", "raise --max-total-tokens (it also caps the SWA pool)"
        elif int(full * 1.0) // page_size * page_size > window + page_size:
            field, hint = "--swa-full-tokens-ratio", "increase --swa-full-tokens-ratio or the total KV budget"
        else:
            field, hint = "--mem-fraction-static", "the KV budget is too small even at --swa-full-tokens-ratio 1.0"
        raise InputError(
            f"SWA pool ({swa_tokens:,} tokens) cannot hold even one request: SGLang needs more than "
            f"sliding_window_size ({window}) + page_size ({page_size}) = {window + page_size} tokens",
            field=field, hint=hint)
    return SWAPools(full_tokens=full, swa_tokens=swa_tokens, full_bytes_per_token=c.full_cell,
                    swa_bytes_per_token=c.swa_cell, cell=cell, mode="ratio", components=c.components(full, swa_tokens),
                    notes=tuple(c.notes), swa_full_tokens_ratio=ratio, profiled_full_tokens=profiled,
                    page_size=page_size, sliding_window=window)


def swa_pool_sizes_over_stages(*, layers: SWALayers, pp_size: int, partition: str | None = None,
                               max_total_tokens: int | None = None, **kwargs: Any) -> SWAPools:
    """:func:`swa_pool_sizes` for every PP stage, then the MIN full count re-applied to all stages.

    Each rank sizes its own stage; ``_apply_token_constraints`` takes ``min(profiled, --max-total-tokens)``
    and the MIN over PP ranks, and every rank re-derives its pools from that count. Returned: the result
    of the stage with the largest per-token cost, re-derived at the common count (``notes`` list the
    per-stage profiled counts). ``kwargs`` = the other :func:`swa_pool_sizes` arguments.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator.config_from_budget``, ``_apply_token_constraints``;
    python/sglang/srt/distributed/utils.py ``get_pp_indices``, v0.5.23.
    """
    n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
    ranges = pp_layer_ranges(num_layers=n, pp_size=pp_size, partition=partition)
    stages = [(rng, swa_pool_sizes(layers=layers, stage_layers=rng if pp_size > 1 else None, **kwargs))
              for rng in ranges]
    common = min(r.full_tokens if r.mode != "all-swa" else r.swa_tokens for _, r in stages)
    if max_total_tokens is not None:
        common = min(common, max_total_tokens)
    worst_rng, _ = max(stages, key=lambda t: t[1].cell)
    final = swa_pool_sizes(layers=layers, stage_layers=worst_rng if pp_size > 1 else None,
                           max_total_tokens=common, **kwargs)
    if pp_size > 1:
        per = ", ".join(f"layers [{s},{e}): {r.profiled_full_tokens:,}" for (s, e), r in stages)
        final = SWAPools(**{**final.__dict__, "notes": (*final.notes, f"PP stages profiled {per}; MIN {common:,}")})
    return final


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def plan(ctx: PoolContext) -> PoolPlan:
    """The hybrid-SWA pools: :func:`swa_pool_sizes_over_stages` on the budget (full pool = the token count), the
    SWA pool beside it, the draft's full layers sharing the count, then the request cap."""
    f = ctx.flags
    layers = swa_layers_from_config(ctx.config, release=_release(ctx))
    draft_full, draft_swa = split_draft_layers(ctx.model, layers, f.speculative_algorithm)
    if ctx.budget <= 0:
        mrr, reduced = request_cap(ctx, 0)
        return PoolPlan(tokens=0, cell=0.0, layout="", max_running_requests=mrr, reduced=reduced, kv_pool_bytes=0,
                        kv_slice_bytes=0, fixed_note=_FIXED_NOTE)
    res = swa_pool_sizes_over_stages(
        layers=layers, pp_size=ctx.pp, partition=f.pp_layer_partition, budget_bytes=ctx.budget,
        kv_dtype=ctx.kv_dtype, attn_tp_size=ctx.attn_tp, page_size=ctx.page_size,
        swa_full_tokens_ratio=f.swa_full_tokens_ratio, radix_cache=f.radix_cache,
        max_running_requests=ctx.max_running_requests, attn_dp_size=ctx.attn_dp,
        chunked_prefill_size=ctx.chunked_prefill_size, overlap_schedule=f.overlap_schedule,
        speculative_num_draft_tokens=f.speculative_num_draft_tokens, draft_full_layers=draft_full,
        draft_swa_layers=draft_swa, max_total_tokens=f.max_total_tokens)
    mrr, reduced = request_cap(ctx, res.full_tokens)
    layout = (f"hybrid sliding window ({len(layers.full_layers)} full + {len(layers.swa_layers)} SWA layers, "
              f"window {layers.sliding_window}, {res.mode} mode)")
    pools = [Pool(name="full-attention KV", tokens=res.full_tokens, bytes=res.full_tokens * res.full_bytes_per_token,
                  bytes_per_token=res.full_bytes_per_token),
             Pool(name="sliding-window KV", tokens=res.swa_tokens, bytes=res.swa_tokens * res.swa_bytes_per_token,
                  bytes_per_token=res.swa_bytes_per_token)]
    return PoolPlan(tokens=res.full_tokens, cell=res.cell, layout=layout, max_running_requests=mrr, reduced=reduced,
                    kv_pool_bytes=res.pool_bytes, kv_slice_bytes=min(int(res.full_tokens * res.cell), ctx.budget),
                    pools=pools, fixed_bytes=res.fixed_bytes, fixed_note=_FIXED_NOTE, notes=list(res.notes))


_FIXED_NOTE = "sliding-window pool (request-cap mode)"

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
    out = Breakdown(info=dict(full_layers=len(L.full_layers), swa_layers=len(L.swa_layers),
                              sliding_window=L.sliding_window))
    groups = (("full attention", len(L.full_layers), L.full_kv_heads, L.full_head_dim, L.full_v_head_dim),
              ("sliding window", len(L.swa_layers), L.swa_kv_heads, L.swa_head_dim, L.swa_v_head_dim))
    for group, n, heads, hd, vhd in groups:
        for tp in SHOW_TPS:
            per_layer = swa_bytes_per_layer_token(kv_heads=heads, head_dim=hd, v_head_dim=vhd, attn_tp_size=tp,
                                                  kv_dtype="bf16", latent=L.latent)
            out.rows.append({"group": group, "layers": n, "tp": tp, "kv_heads_per_gpu": max(1, heads // tp),
                             "bytes_per_token_bf16": per_layer * n,
                             "pool": "full pool (max_total_num_tokens)" if group == "full attention"
                             else "SWA pool (ratio x full tokens)"})
    return out

