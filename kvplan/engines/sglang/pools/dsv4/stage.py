"""One DeepSeek-V4 PP stage's terms: bytes per full / SWA token, the fixed state pools, the SWA modes, padding and
the pool components (the pieces :func:`~kvplan.engines.sglang.pools.dsv4.sizing.dsv4_pool_sizes` adds up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvplan.engines.sglang.pools.dsv4.eras import DSV4Era
from kvplan.engines.sglang.pools.dsv4.layout import (
    DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
    DSV4_DEFAULT_SWA_RATIO,
    DSV4_PAGE_SIZE,
    DSV41_INDEX_PAGE_SIZE,
    MAIN_LAYOUTS,
    _ceil_div,
    compress_state_ring_size,
    compressed_layout,
    indexer_bytes_per_token,
    kv_bytes_per_row,
    layout_page_bytes,
)
from kvplan.engines.sglang.pools.swa_cap import (
    SWA_EVICTION_INTERVAL,
    ceil_align,
    is_array,
    swa_request_cap,
    vint,
)
from kvplan.errors import EngineRefusal, InputError
from kvplan.geometry.dsv4 import DSV4Geometry
from kvplan.geometry.records import FrozenRecord

_STATE_DT = 4  # SGLANG_DSV4_COMPRESS_STATE_DTYPE float32


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class DSV4Flags(FrozenRecord):
    """The server flags (global values) the DeepSeek-V4 configurator reads, resolved once by the planner (or the
    sweep) and handed whole to :func:`~kvplan.engines.sglang.pools.dsv4.sizing.dsv4_pool_sizes` (issue 21 item 4:
    one frozen record, not a keyword bag); the defaults are SGLang's.  ``__eq__``, ``__hash__`` and ``__repr__`` come
    from :class:`~kvplan.geometry.records.FrozenRecord` (written once, not generated at every start)."""

    max_running_requests: int | None
    attn_dp_size: int = 1
    context_len: int
    chunked_prefill_size: int
    radix_cache: bool = True
    overlap_schedule: bool = True
    swa_full_tokens_ratio: float | None = None
    speculative_num_draft_tokens: int = 0
    speculative_num_steps: int | None = None
    swa_prefix_tails: int | None = None
    compressed_kv_layout: str = "auto"
    index_page_size: int = DSV41_INDEX_PAGE_SIZE
    family_mrr_default: int | None = DSV4_DEFAULT_MAX_RUNNING_REQUESTS
    disaggregation_decode: bool = False
    decode_extra_slots: int = 0
    swa_eviction_interval: int = SWA_EVICTION_INTERVAL


@dataclass(frozen=True, repr=False, eq=False)  # eq, hash, repr: FrozenRecord's
class _Stage(FrozenRecord):
    """One PP stage of a DSV4 pool: the layers owning compressed storage, the state rings, the row prices."""

    g: DSV4Geometry
    layout: str
    page_size: int
    start: int
    end: int
    owners: dict[int, tuple[int, ...]]
    rings: dict[int, int]
    kvb: dict[int, float]  # budgeted bytes per row, by ratio (0 = the SWA cache)
    c4_idx: int  # fp8 c4 indexer key bytes
    low_idx: int  # fp4 ratio-1/2 indexer key bytes
    index_page_size: int
    compressed_kv_layout: str
    low_ratio_padding: bool = True  # 0.5.23: _get_low_ratio_kv_padding_bytes (0.5.21 - 0.5.22: none)

    @property
    def n_stage(self) -> int:
        return self.end - self.start

    @property
    def n_owner(self) -> dict[int, int]:
        return {r: len(ls) for r, ls in self.owners.items()}

    @property
    def latent(self) -> int:
        return self.g.head_dim  # attn_head_dim = qk_nope + rope


@dataclass(init=False, repr=False, eq=False)
class _Mode(FrozenRecord):
    """The request cap the fixed pools are sized with and the SWA mode (cap or ratio)."""

    mrr_w_requested: int | None
    cap_tokens: int | None
    tails: int
    swa_ratio: float
    cap_kw: dict[str, Any] | None = None  # the dsv4_swa_cap_tokens arguments but mrr_w (cap mode), else None

    def __init__(
        self,
        mrr_w_requested: int | None,
        cap_tokens: int | None,
        tails: int,
        swa_ratio: float,
        cap_kw: dict[str, Any] | None = None,
    ) -> None:
        self._set(
            mrr_w_requested=mrr_w_requested, cap_tokens=cap_tokens, tails=tails, swa_ratio=swa_ratio, cap_kw=cap_kw
        )

    @property
    def swa_mode(self) -> str:
        return "cap" if self.cap_tokens is not None else "ratio"


def _check_pool_inputs(
    *, g: DSV4Geometry, layout: str, page_size: int, budget_bytes: int, attn_dp_size: int, context_len: int
) -> None:
    if page_size != DSV4_PAGE_SIZE:
        raise InputError(
            f"page_size={page_size}: SGLang forces 256 for DeepSeek-V4 on CUDA "
            "(kv_cache_configurator._build_dsv4_kv_pool asserts it)",
            field="page_size",
        )
    if layout not in MAIN_LAYOUTS:
        raise InputError(f"unknown DSV4 main layout {layout!r}", field="layout", hint=f"one of {MAIN_LAYOUTS}")
    if layout == "v4" and (g.qk_nope_head_dim, g.qk_rope_head_dim) != (448, 64):
        raise InputError(
            f"the V4 row layout needs head_dim 512 = 448 nope + 64 rope, got {g.head_dim} / rope {g.qk_rope_head_dim}",
            field="head_dim",
        )
    if layout != "v4" and g.head_dim != 512:
        raise InputError(f"the {layout} layout needs head_dim 512, got {g.head_dim}", field="head_dim")
    if budget_bytes <= 0:
        raise EngineRefusal(
            f"KV budget is {budget_bytes} B; nothing left for the pool",
            field="mem_fraction_static",
            hint="raise --mem-fraction-static or use more/larger GPUs",
        )
    if attn_dp_size < 1:
        raise InputError("attn_dp_size must be >= 1", field="attn_dp_size")
    if context_len <= 0:
        raise InputError("context_len must be positive", field="context_len")


def _stage_owners(g: DSV4Geometry, stage_layers: tuple[int, int] | None) -> tuple[int, int, dict[int, tuple[int, ...]]]:
    start, end = stage_layers or (0, g.num_layers)
    if not 0 <= start < end <= g.num_layers:
        raise InputError(f"stage_layers {stage_layers} outside [0, {g.num_layers})", field="stage_layers")
    owners = g.owner_layers((start, end))
    for idx in range(start, end):  # source_layer_of asserts a source inside the stage
        r = g.compress_ratios[idx]
        if r in (1, 2) and not any(s <= idx for s in owners.get(r, ())):
            raise InputError(
                f"layer {idx} (ratio {r}) has no kv_source layer inside PP stage [{start}, {end})", field="stage_layers"
            )
    return start, end, owners


def _rings(owners: dict[int, tuple[int, ...]], *, drafts: int, spec: bool) -> dict[int, int]:
    rings = {r: compress_state_ring_size(ratio=r, num_draft_tokens=drafts) for r in owners if r != 1}
    if spec:
        for r in (4, 128):  # _assert_ring_serves_draft_tokens
            if r in rings:
                window_rows = r * (2 if r == 4 else 1)
                pad = rings[r] - window_rows + 2 if rings[r] > window_rows else 0
                if drafts > pad:
                    raise InputError(
                        f"speculative_num_draft_tokens={drafts} exceeds what the c{r} ring (size {rings[r]}) "
                        f"serves ({pad})",
                        field="speculative_num_draft_tokens",
                    )
    return rings


def _stage(
    *,
    g: DSV4Geometry,
    layout: str,
    page_size: int,
    stage_layers: tuple[int, int] | None,
    drafts: int,
    spec: bool,
    index_page_size: int,
    compressed_kv_layout: str,
    era: DSV4Era,
) -> _Stage:
    start, end, owners = _stage_owners(g, stage_layers)
    rings = _rings(owners, drafts=drafts, spec=spec)
    kvb = {
        r: kv_bytes_per_row(layout=layout, ratio=r, page_size=page_size, option=compressed_kv_layout)
        for r in (0, 1, 2, 4, 128)
    }
    if not era.low_ratio_padding:  # 0.5.21 - 0.5.22 price ratio-1/2 rows at kv_bytes (trtllm: attn_head_dim)
        kvb[1] = kvb[2] = 512.0 if layout == "uniform_fp8" else float(g.qk_nope_head_dim + 2 * g.qk_rope_head_dim + 8)
    return _Stage(
        g=g,
        layout=layout,
        page_size=page_size,
        start=start,
        end=end,
        owners=owners,
        rings=rings,
        kvb=kvb,
        c4_idx=indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=False),
        low_idx=indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=True),
        index_page_size=index_page_size,
        compressed_kv_layout=compressed_kv_layout,
        low_ratio_padding=era.low_ratio_padding,
    )


def _bytes_per_swa(st: _Stage) -> float:
    """``_get_bytes_per_swa_token``: the SWA row on every stage layer plus the c4 compress-state ring."""
    state = 2 * 2 * st.latent * _STATE_DT + 2 * 2 * st.g.index_head_dim * _STATE_DT
    return st.kvb[0] * st.n_stage + (st.rings.get(4, 0) / st.page_size * state * st.n_owner.get(4, 0))


def _comp(st: _Stage, r: int) -> float:
    """``_compressed_bytes_per_full_token`` of one owner layer of ratio ``r``."""
    if r in (1, 2):
        return (st.kvb[r] + st.low_idx) / r
    if r == 4:
        return 1 / 4 * st.kvb[4] + 1 / 4 * st.c4_idx
    return 1 / 128 * st.kvb[128]


def _swa_mode(st: _Stage, notes: list[str], flags: DSV4Flags, *, drafts: int, steps: int) -> _Mode:
    """The per-rank request cap and the SWA mode (``_resolve_swa_cap_tokens``, ``_resolve_swa_prefix_tails``)."""
    f = flags
    max_running_requests, family_mrr_default, attn_dp_size = (
        f.max_running_requests,
        f.family_mrr_default,
        f.attn_dp_size,
    )
    chunked_prefill_size, radix_cache, overlap_schedule = f.chunked_prefill_size, f.radix_cache, f.overlap_schedule
    swa_full_tokens_ratio, swa_prefix_tails = f.swa_full_tokens_ratio, f.swa_prefix_tails
    disaggregation_decode, decode_extra_slots = f.disaggregation_decode, f.decode_extra_slots
    swa_eviction_interval = f.swa_eviction_interval
    g, page_size = st.g, st.page_size
    requested = max_running_requests if max_running_requests is not None else family_mrr_default
    mrr_w_requested = max(1, requested // attn_dp_size) if requested is not None else None
    cps = chunked_prefill_size // attn_dp_size if chunked_prefill_size and chunked_prefill_size > 0 else 0
    if max_running_requests is None and family_mrr_default is not None:
        notes.append(
            f"max_running_requests unset -> {family_mrr_default} (deepseek_v4_hook.apply_deepseek_v4_defaults)"
        )

    operator_ratio = swa_full_tokens_ratio
    if operator_ratio is None and not g.is_v41:
        operator_ratio = DSV4_DEFAULT_SWA_RATIO  # model_overrides/deepseek_v4.py, counted as explicit
        notes.append("swa_full_tokens_ratio 0.1 from the DeepSeek-V4 model override (not applied to V4.1)")
    if operator_ratio is not None and not 0 < operator_ratio <= 1.0:
        raise InputError("--swa-full-tokens-ratio should be in range (0, 1.0]", field="swa_full_tokens_ratio")

    if swa_prefix_tails is not None:
        tails = swa_prefix_tails
    elif not radix_cache or mrr_w_requested is None:
        tails = 0
    else:
        tails = 4 * mrr_w_requested

    cap_tokens: int | None = None
    cap_kw: dict[str, Any] | None = None
    if operator_ratio is None and mrr_w_requested is not None and (disaggregation_decode or cps > 0):
        cap_kw = dict(
            page_size=page_size,
            window=g.sliding_window,
            swa_prefix_tails=swa_prefix_tails,
            radix_cache=radix_cache,
            chunked_prefill_size=cps,
            overlap_schedule=overlap_schedule,
            num_draft_tokens=drafts,
            num_steps=steps,
            disagg_decode=disaggregation_decode,
            decode_extra_slots=decode_extra_slots,
            eviction_interval=swa_eviction_interval,
        )
        cap_tokens = dsv4_swa_cap_tokens(mrr_w=mrr_w_requested, **cap_kw)
    if cap_tokens is None and operator_ratio is None:
        notes.append("V4.1 ratio mode at the configurator default 0.1 (cap mode needs mrr and chunked prefill)")
    swa_ratio = operator_ratio if operator_ratio is not None else DSV4_DEFAULT_SWA_RATIO
    return _Mode(
        mrr_w_requested=mrr_w_requested, cap_tokens=cap_tokens, tails=tails, swa_ratio=swa_ratio, cap_kw=cap_kw
    )


def dsv4_swa_cap_tokens(
    *, mrr_w: Any, page_size: int, window: int, swa_prefix_tails: int | None, radix_cache: bool, **cap: Any
) -> Any:
    """Cap mode's SWA slots for ``mrr_w`` requests per rank (an int or an array)::

        tails = --swa-prefix-tails | 4 * mrr_w (radix cache on) | 0
        cap   = ceil_page(compute_swa_request_cap(mrr_w) + tails * (window + page))

    (``cap``: the other :func:`kvplan.engines.sglang.pools.swa_cap.swa_request_cap` arguments.)
    Example: the module docstring's V4.1-Flash, 16 requests -> 41,216 slots.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator._resolve_swa_cap_tokens``, ``_resolve_swa_prefix_tails``, v0.5.23.
    """
    tails = swa_prefix_tails if swa_prefix_tails is not None else (4 * mrr_w if radix_cache else 0)
    slots = swa_request_cap(page_size=page_size, window=window, mrr_per_rank=mrr_w, **cap)
    return ceil_align(slots + tails * (window + page_size), page_size)


def dsv4_fixed_bytes(st: _Stage, *, n_slots: Any, cap_tokens: Any, bytes_per_swa: float) -> Any:
    """The request-scoped bytes taken off the budget first: ``c128_state(n) + c2_state(n) + cap * bytes_per_swa``
    (``n`` = mrr_w + 1 (+ PD decode slots); the last term in cap mode only; ints or arrays).

    Example: the module docstring's V4.1-Flash: 0 + 466,944 + 41,216 x 23,400 = 964,921,344 B.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator._get_c128_state_fixed_bytes``, ``_get_c2_state_fixed_bytes``, ``calculate_pool_sizes``,
    v0.5.23.
    """
    swa_fixed = cap_tokens * bytes_per_swa if cap_tokens is not None else 0
    return _c128_state(st, n_slots) + _c2_state(st, n_slots) + swa_fixed


def dsv4_full_tokens(st: _Stage, *, avail: Any, bpf: float) -> Any:
    """``calculate_pool_sizes``'s full tokens: ``page_floor(int(avail / bpf))``, then one page down while
    ``full * bpf + low_ratio_padding(full) > avail`` (<= 0: SGLang refuses; ints or arrays).

    The padding (:func:`_padding`) is at most :func:`_max_padding_steps` pages' worth, so the search is a bounded
    number of vector steps (1-2 on the shipped models) and gives the scalar result row by row.
    Example: the module docstring's V4.1-Flash: 4,670,720 -> 4,670,208 (two pages down).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator.calculate_pool_sizes``, ``_get_low_ratio_kv_padding_bytes``, v0.5.23.
    """
    page_size = st.page_size
    full = vint(avail / bpf) // page_size * page_size
    if not is_array(full):
        while full > 0 and full * bpf + _padding(st, full) > avail:
            full -= page_size
        return full
    for _ in range(_max_padding_steps(st, bpf)):
        over = (full > 0) & (full * bpf + _padding(st, full) > avail)
        if not over.any():
            return full
        full = full - page_size * over
    raise AssertionError("the DSV4 padding search did not settle within its bound")


def _max_padding_steps(st: _Stage, bpf: float) -> int:
    """An upper bound of :func:`dsv4_full_tokens`' page steps (+2): the largest padding over one page of full tokens.
    Per ratio r in (1, 2): ``n_r * (page * kvb_r + (page // r + 1 + 2 * index_page) * low_idx)``."""
    most = sum(
        st.n_owner.get(r, 0)
        * (st.page_size * st.kvb[r] + (st.page_size // r + 1 + 2 * st.index_page_size) * st.low_idx)
        for r in (1, 2)
    )
    return int(most // (st.page_size * bpf)) + 3


def _draft_component(st: _Stage, notes: list[str], *, reserve: int, swa: int, draft_layers: int) -> tuple[str, int]:
    """The draft worker's line of the components: its own SWA-only pool when its layer count is known (the reserve
    then goes to the notes), else the budgeted reserve."""
    if draft_layers <= 0:
        return ("draft_worker_reserve (budgeted, (L+1)/L)", reserve)
    draft = draft_swa_pool_bytes(layout=st.layout, page_size=st.page_size, swa_tokens=swa, layers=draft_layers)
    notes.append(
        f"draft worker: reserved {reserve:,} B by the ({st.n_stage}+1)/{st.n_stage} factor (one layer's "
        f"share of every token), allocates {draft:,} B ({draft_layers} SWA-only layers x {swa:,} SWA slots; "
        f"no compressed, indexer or state pools)"
    )
    return (f"draft swa_kv ({draft_layers} draft layers, the draft worker's own pool)", draft)


def draft_swa_pool_bytes(*, layout: str, page_size: int, swa_tokens: int, layers: int) -> int:
    """The draft worker's own KV pool on a DeepSeek-V4 target: ``layers x ceil((swa + page) / page) x page_bytes``.

    The draft (DSpark stages, or the NextN layer under EAGLE) takes the target's ``swa_max_total_num_tokens`` and
    owns no compressed, indexer or state pool: every draft layer is compress ratio 0, one paged SWA row of the
    target's layout, with the allocator's extra logical page.  It does not profile: the target budgets it by the
    ``(L + 1) / L`` factor.

    Sources (SGLang v0.5.23): ``mem_cache/kv_cache_configurator.py`` ``configure`` (a draft worker reuses the target's
    ``memory_pool_config``), ``_derive_pool_sizes`` (the draft zeroes c4 / c128 / state sizes), ``_build_dsv4_kv_pool``
    (``COMPRESS_RATIO_NEXTN_LAYER`` x ``num_effective_layers``), ``model_runner_components/layer_setup.py
    _compute_model_num_layers`` (``model.num_stages``), ``deepseek_v4_memory_pool.py _num_dsv4_physical_kv_pages``.

    Example: V4 rows, page 256, 27,136 SWA slots, 3 DSpark stages -> 3 x ceil(27,392 / 256) x 149,760 =
    3 x 107 x 149,760 = 48,072,960 B.
    """
    page_b = 512 * page_size if layout == "uniform_fp8" else layout_page_bytes(layout=layout, page_tokens=page_size)
    return layers * _ceil_div(swa_tokens + page_size, page_size) * page_b


def _c128_state(st: _Stage, n_slots: Any) -> Any:
    """``_get_c128_state_fixed_bytes``: one c128 compress-state ring per request slot, fp32."""
    if not st.n_owner.get(128):
        return 0
    rows = ceil_align(n_slots * st.rings[128] + st.rings[128] + 1, 128)
    return rows * 2 * st.latent * _STATE_DT * st.n_owner[128]


def _c2_state(st: _Stage, n_slots: Any) -> Any:
    """``_get_c2_state_fixed_bytes``: one ratio-2 pair-state ring per request slot, fp32."""
    if not st.n_owner.get(2):
        return 0
    rows = ceil_align(n_slots * st.rings[2] + st.rings[2] + 1, 2)
    return rows * 2 * st.latent * 4 * st.n_owner[2]


def _padding(st: _Stage, full: int) -> float:
    """``_get_low_ratio_kv_padding_bytes``: the ratio-1/2 caches' reserved pages and index-page rounding
    (0.5.23; none before)."""
    if st.layout == "uniform_fp8" or not st.low_ratio_padding:
        return 0
    total = 0.0
    page_size, index_page_size = st.page_size, st.index_page_size
    for r in (1, 2):
        n = st.n_owner.get(r, 0)
        if not n:
            continue
        main = page_size * st.kvb[r]
        index_size = (full + page_size) // r
        index_slots = _ceil_div(index_size + index_page_size, index_page_size) * index_page_size
        total += (main + (index_slots - full // r) * st.low_idx) * n
    return total


def _full_tokens(
    st: _Stage, *, avail: float, bpf: float, cap_tokens: int | None, swa_fixed: float, budget_bytes: int
) -> int:
    """``calculate_pool_sizes``: page-floored full tokens, stepped down one page while the padding overflows."""
    full = dsv4_full_tokens(st, avail=avail, bpf=bpf)
    if full > 0:
        return int(full)
    if cap_tokens is not None:
        raise InputError(
            f"the DSV4 SWA pool cap ({cap_tokens} tokens, {swa_fixed / 2**30:.2f} GiB) leaves no room for the "
            f"full KV pool within {budget_bytes / 2**30:.2f} GiB",
            field="max_running_requests",
            hint="reduce --max-running-requests or --swa-prefix-tails, or raise --mem-fraction-static",
        )
    raise InputError(
        "Not enough memory for the DeepSeek-V4 KV pool",
        field="mem_fraction_static",
        hint="increase --mem-fraction-static",
    )


def _swa_tokens(st: _Stage, *, full: int, mode: _Mode) -> int:
    """SWA slots: the cap (cap mode) or ``page_floor(int(full * ratio))`` checked by ``validate_swa_pool_size``."""
    if mode.cap_tokens is not None:
        return mode.cap_tokens
    page_size, window = st.page_size, st.g.sliding_window
    swa = int(dsv4_ratio_swa_tokens(full=full, ratio=mode.swa_ratio, page_size=page_size))
    if window + page_size >= swa:  # validate_swa_pool_size
        raise InputError(
            f"SWA pool ({swa} tokens) cannot hold even one request: the prefill floor is window "
            f"({window}) + page ({page_size})",
            field="swa_full_tokens_ratio",
            hint="increase --swa-full-tokens-ratio or the KV budget",
        )
    return swa


def dsv4_ratio_swa_tokens(*, full: Any, ratio: float, page_size: int) -> Any:
    """Ratio mode's SWA slots: ``page_floor(int(full * ratio))`` (refused when ``window + page >= swa``).

    Example: 1,000,192 full tokens at ratio 0.1, page 256 -> 99,840.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator.calculate_pool_sizes``, ``MemoryPoolConfigurator.validate_swa_pool_size``, v0.5.23.
    """
    return vint(full * ratio) // page_size * page_size


def _page_bytes(st: _Stage, ratio: int, rows: int) -> int:
    if st.layout == "uniform_fp8":
        return 512 * rows
    return layout_page_bytes(
        layout=compressed_layout(main_layout=st.layout, ratio=ratio, option=st.compressed_kv_layout), page_tokens=rows
    )


def _components(st: _Stage, *, full: int, swa: int, c4_state_pool: int, alloc_slots: int) -> list[tuple[str, int]]:
    """What each pool allocates on the target worker (``DeepSeekV4TokenToKVPool``)."""
    page_size, n_owner = st.page_size, st.n_owner

    def pages(size: int, page_rows: int, global_page: int) -> int:  # _num_dsv4_physical_kv_pages
        return _ceil_div(size + global_page, page_rows)

    comps: list[tuple[str, int]] = []
    swa_page_bytes = (
        512 * page_size if st.layout == "uniform_fp8" else layout_page_bytes(layout=st.layout, page_tokens=page_size)
    )
    comps.append((f"swa_kv ({st.n_stage} layers)", st.n_stage * pages(swa, page_size, page_size) * swa_page_bytes))
    stage_ratios = st.g.compress_ratios[st.start : st.end]
    c128_tokens = full // 128
    for r in (4, 128):
        if r not in set(st.g.compress_ratios):
            continue
        n = stage_ratios.count(r)
        rows = page_size // r
        size = full // 4 if r == 4 else c128_tokens
        comps.append((f"c{r}_kv ({n} layers)", n * pages(size, rows, page_size) * _page_bytes(st, r, rows)))
        if r == 4:
            idx_size = c128_tokens * 32  # c4_logical_size
            comps.append((f"c4_indexer_k ({n} layers)", n * pages(idx_size, rows, page_size) * rows * st.c4_idx))
    for r in (1, 2):
        n = n_owner.get(r, 0)
        if not n:
            continue
        rows = page_size // r
        kv_bytes = n * pages(full // r, rows, page_size) * _page_bytes(st, r, rows)
        comps.append((f"c{r}_kv ({n} kv_source layers)", kv_bytes))
        idx_size = (full + page_size) // r
        ips = st.index_page_size
        comps.append((f"c{r}_indexer_k fp4 ({n} kv_source layers)", n * pages(idx_size, ips, ips) * ips * st.low_idx))
    if n_owner.get(4):
        rows4 = ceil_align(c4_state_pool + st.rings[4] + 1, 4)
        comps.append((f"c4_state fp32 ({n_owner[4]} layers)", n_owner[4] * rows4 * 4 * st.latent * _STATE_DT))
        comps.append(
            (f"c4_indexer_state fp32 ({n_owner[4]} layers)", n_owner[4] * rows4 * 4 * st.g.index_head_dim * _STATE_DT)
        )
    if n_owner.get(128):
        comps.append((f"c128_state fp32 ({n_owner[128]} layers)", _c128_state(st, alloc_slots)))
    if n_owner.get(2):
        comps.append((f"c2_pair_state fp32 ({n_owner[2]} layers)", _c2_state(st, alloc_slots)))
    return comps
