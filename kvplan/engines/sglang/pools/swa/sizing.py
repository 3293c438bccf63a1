"""The hybrid-SWA pool sizes of SGLang 0.5.23: the ratio and request-cap modes, per PP stage.

The formulas take ints (``kvplan fit``) or numpy arrays (``kvplan sweep``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from kvplan.engines.sglang.pools.swa.cells import swa_bytes_per_layer_token
from kvplan.engines.sglang.pools.swa.config import DEFAULT_SWA_FULL_TOKENS_RATIO
from kvplan.engines.sglang.pools.swa_cap import (
    SWA_EVICTION_INTERVAL,
    ceil_align,
    swa_request_cap,
    vint,
    vmax,
)
from kvplan.errors import EngineRefusal, InputError
from kvplan.geometry.swa import SWALayers, positive_int
from kvplan.hfconfig.dtypes import DType
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges

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


class SWAKnobs(NamedTuple):
    """The flags, layout and release switches :func:`swa_pool_sizes` reads, as one frozen record (issue 21 item 4).

    ``chunked_prefill_size`` is the per-rank value (already divided by the attention-DP size);
    ``max_running_requests`` the global flag; ``request_cap_mode`` ... ``cap_draft_swa`` the release's
    (:class:`~kvplan.engines.sglang.pools.swa.byte_era.ByteEra`), 0.5.23's by default.
    """

    kv_dtype: DType
    attn_tp_size: int
    page_size: int
    swa_full_tokens_ratio: float | None
    radix_cache: bool
    max_running_requests: int | None
    attn_dp_size: int
    chunked_prefill_size: int
    overlap_schedule: bool
    speculative_num_draft_tokens: int = 0
    speculative_num_steps: int | None = None
    draft_full_layers: int = 0
    draft_swa_layers: int = 0
    disaggregation_decode: bool = False
    decode_extra_slots: int = 0
    swa_eviction_interval: int | None = None
    request_cap_mode: bool = True
    validate: bool = True
    cap_chunk_gate: bool = True
    cap_floor_one: bool = True
    cap_draft_full: bool = True
    cap_draft_swa: bool = True


def swa_pool_sizes(
    *,
    layers: SWALayers,
    budget_bytes: int,
    knobs: SWAKnobs,
    stage_layers: tuple[int, int] | None = None,
    max_total_tokens: int | None = None,
) -> SWAPools:
    """Split a KV byte budget into full and SWA pools the way SGLang 0.5.23 does (one rank, one stage); the flags
    and the release's switches come in ``knobs`` (:class:`SWAKnobs`).

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
    (
        kv_dtype,
        attn_tp_size,
        page_size,
        swa_full_tokens_ratio,
        radix_cache,
        max_running_requests,
        attn_dp_size,
        chunked_prefill_size,
        overlap_schedule,
        speculative_num_draft_tokens,
        speculative_num_steps,
        draft_full_layers,
        draft_swa_layers,
        disaggregation_decode,
        decode_extra_slots,
        swa_eviction_interval,
        request_cap_mode,
        validate,
        cap_chunk_gate,
        cap_floor_one,
        cap_draft_full,
        cap_draft_swa,
    ) = knobs
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
        raise EngineRefusal(
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
    kv_dtype: DType,
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
        raise EngineRefusal(
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
        raise EngineRefusal(
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
    per-stage profiled counts). ``kwargs`` = ``budget_bytes`` and the fields of :class:`SWAKnobs`.  ``staged``
    False (before 0.5.7): every rank prices the model's whole layer lists, not its stage's; ``end_inclusive``
    (0.5.7 - 0.5.20): a stage that is not the last also counts the next stage's first layer
    (:func:`engine_stage_ids`).

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``KVCacheConfigurator.config_from_budget``, ``_apply_token_constraints``;
    python/sglang/srt/distributed/utils.py ``get_pp_indices``, v0.5.23.
    """
    n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
    ranges = pp_layer_ranges(num_layers=n, pp_size=pp_size, partition=partition)
    split = pp_size > 1 and staged
    budget_bytes = kwargs.pop("budget_bytes")
    knobs = SWAKnobs(**kwargs)
    stages = [
        (
            rng,
            swa_pool_sizes(
                layers=layers,
                budget_bytes=budget_bytes,
                knobs=knobs,
                stage_layers=_listed(rng, n, end_inclusive) if split else None,
            ),
        )
        for rng in ranges
    ]
    common = min(r.full_tokens if r.mode != "all-swa" else r.swa_tokens for _, r in stages)
    if max_total_tokens is not None:
        common = min(common, max_total_tokens)
    worst_rng, _ = max(stages, key=lambda t: t[1].cell)
    final = swa_pool_sizes(
        layers=layers,
        budget_bytes=budget_bytes,
        knobs=knobs,
        stage_layers=_listed(worst_rng, n, end_inclusive) if split else None,
        max_total_tokens=common,
    )
    if pp_size > 1:
        per = ", ".join(f"layers [{s},{e}): {r.profiled_full_tokens:,}" for (s, e), r in stages)
        final = SWAPools(**{**final.__dict__, "notes": (*final.notes, f"PP stages profiled {per}; MIN {common:,}")})
    return final


def _listed(rng: tuple[int, int], num_layers: int, end_inclusive: bool) -> tuple[int, int]:
    """The ``[start, end)`` whose layers SGLang lists for PP stage ``rng`` (one more when ``end_inclusive``)."""
    return (rng[0], min(rng[1] + 1, num_layers)) if end_inclusive else rng
