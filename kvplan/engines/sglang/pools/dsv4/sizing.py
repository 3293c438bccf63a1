"""DeepSeek-V4 pool sizes (:func:`dsv4_pool_sizes`, :class:`DSV4Pools`): the configurator's arithmetic for one rank."""

from __future__ import annotations

from kvplan.engines.sglang.pools.dsv4.eras import DSV4_ERAS, DSV4Era, dsv4_era
from kvplan.engines.sglang.pools.dsv4.layout import (
    DSV4_PAGE_SIZE,
)
from kvplan.engines.sglang.pools.dsv4.result import DSV4Pools
from kvplan.engines.sglang.pools.dsv4.stage import (
    DSV4Flags,
    _bytes_per_swa,
    _c2_state,
    _c128_state,
    _check_pool_inputs,
    _comp,
    _components,
    _draft_component,
    _full_tokens,
    _Mode,
    _padding,
    _Stage,
    _stage,
    _swa_mode,
    _swa_tokens,
    dsv4_fixed_bytes,
)
from kvplan.errors import InputError
from kvplan.geometry.dsv4 import DSV4Geometry

# ----------------------------------------------------------------------------------------------------------
# Pool sizing
# ----------------------------------------------------------------------------------------------------------


def dsv4_pool_sizes(
    *,
    geometry: DSV4Geometry,
    budget_bytes: int,
    layout: str,
    flags: DSV4Flags,
    page_size: int = DSV4_PAGE_SIZE,
    stage_layers: tuple[int, int] | None = None,
    max_total_tokens: int | None = None,
    draft_layers: int = 0,
    release: str | None = None,
) -> DSV4Pools:
    """Size the DSV4 pools from a KV byte budget, as ``DSV4PoolConfigurator.calculate_pool_sizes`` does.

    ``release`` (None = the newest, 0.5.23) picks the configurator of that SGLang release (:data:`DSV4_ERAS`):
    0.5.12 - 0.5.20 are :func:`kvplan.engines.sglang.pools.dsv4_legacy.legacy_pool_sizes`; 0.5.21 - 0.5.22 are
    this function without the low-ratio padding and with ratio-1/2 rows at the raw ``nope + 2*rope + 8`` bytes.

    ``flags`` (:class:`~kvplan.engines.sglang.pools.dsv4.stage.DSV4Flags`) are the *server flags* (global
    values): ``max_running_requests`` and ``chunked_prefill_size`` are
    divided by ``attn_dp_size`` here (``DSV4PoolConfigurator.__init__``; ``parallel_hook._handle_data_parallelism``
    divides the chunk). ``max_running_requests=None`` applies the DSV4 family default 256
    (``deepseek_v4_hook.apply_deepseek_v4_defaults``, applied at server-args resolution, before sizing); pass
    ``family_mrr_default=None`` to get the configurator's own fallback estimate instead
    (``clamp(int(budget / bpf / ctx * 512), 2048, 4096)``, capped at tokens // 2), which stock SGLang never
    reaches for this family. ``chunked_prefill_size <= 0`` means chunked prefill is off.

    ``swa_full_tokens_ratio=None`` means the user gave no ``--swa-full-tokens-ratio``: V4/V4-Pro then get the
    model override 0.1 (ratio mode); V4.1 gets cap mode when the per-rank mrr is known and chunked prefill is
    on (or PD decode), else ratio mode at ``DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO`` = 0.1.

    ``speculative_num_draft_tokens > 0`` turns on speculative decoding (EAGLE topk 1 or DSpark): rings grow,
    both coefficients are multiplied by ``(L_stage + 1) / L_stage`` (the draft worker's reserve) and the SWA
    cap uses the draft tokens. ``draft_layers`` (the DSpark stages / NextN layers, 0 = not known) adds the draft
    worker's own pool to ``components`` (:func:`draft_swa_pool_bytes`; the draft does not profile, it takes the
    target's token counts); without it the components carry the budgeted reserve instead.
    ``stage_layers=(start, end)`` restricts to one PP stage.

    Worked example: see the module docstring (V4.1-Flash, 8 GiB -> 4,670,208 full tokens, 41,216 SWA slots).
    """
    g = geometry
    era = dsv4_era(release)
    attn_dp_size, context_len = flags.attn_dp_size, flags.context_len
    speculative_num_draft_tokens = flags.speculative_num_draft_tokens
    disaggregation_decode, decode_extra_slots = flags.disaggregation_decode, flags.decode_extra_slots
    if not era.paged:
        from kvplan.engines.sglang.pools.dsv4_legacy import legacy_pool_sizes

        _check_pool_inputs(
            g=g,
            layout=layout,
            page_size=page_size,
            budget_bytes=budget_bytes,
            attn_dp_size=attn_dp_size,
            context_len=context_len,
        )
        return legacy_pool_sizes(
            era=era,
            geometry=g,
            budget_bytes=budget_bytes,
            layout=layout,
            page_size=page_size,
            stage_layers=stage_layers,
            flags=flags,
            max_total_tokens=max_total_tokens,
        )
    st, mode, bytes_per_swa, bpf, infl, notes = _coefficients(
        era=era,
        geometry=g,
        budget_bytes=budget_bytes,
        layout=layout,
        page_size=page_size,
        stage_layers=stage_layers,
        flags=flags,
    )

    # --- request-scoped fixed bytes ------------------------------------------------------------------------
    if mode.mrr_w_requested is not None:
        mrr_w = mode.mrr_w_requested
    else:  # _resolve_max_running_requests_per_worker fallback
        est_full = int(budget_bytes / bpf)
        est = max(min(int(est_full / context_len * 512), 4096), 2048)
        mrr_w = min(est, est_full // 2)
    extra = decode_extra_slots if disaggregation_decode else 0
    c128_fixed = _c128_state(st, mrr_w + 1 + extra)
    c2_fixed = _c2_state(st, mrr_w + 1 + extra)
    swa_fixed = mode.cap_tokens * bytes_per_swa if mode.cap_tokens is not None else 0
    fixed = dsv4_fixed_bytes(st, n_slots=mrr_w + 1 + extra, cap_tokens=mode.cap_tokens, bytes_per_swa=bytes_per_swa)

    full = _full_tokens(
        st,
        avail=max(budget_bytes - fixed, 0),
        bpf=bpf,
        cap_tokens=mode.cap_tokens,
        swa_fixed=swa_fixed,
        budget_bytes=budget_bytes,
    )
    pad_at_full = _padding(st, full)
    budgeted = full * bpf + pad_at_full + fixed
    if max_total_tokens is not None and max_total_tokens < full:
        # config_from_budget -> calculate_pool_sizes_from_max_tokens: fixed pools are not re-subtracted.
        full = max_total_tokens // page_size * page_size
        notes.append(f"--max-total-tokens caps the full pool at {full}")
        if full <= 0:
            raise InputError("max_total_tokens leaves no full page", field="max_total_tokens")
    swa = _swa_tokens(st, full=full, mode=mode)

    c4_tokens = full // 4
    c128_tokens = full // 128
    c4_state_pool = swa // page_size * st.rings.get(4, 0)
    if mode.mrr_w_requested is not None:
        final_mrr = min(mrr_w, full // 2)
    else:  # resolve_max_num_reqs without a request cap: estimate from the final token count
        final_mrr = min(max(min(int(full / context_len * 512), 4096), 2048), full // 2)
    if final_mrr < mrr_w:
        notes.append(f"max_running_requests reduced from {mrr_w} to {final_mrr} (tokens // 2)")

    comps = _components(st, full=full, swa=swa, c4_state_pool=c4_state_pool, alloc_slots=final_mrr + 1 + extra)
    if speculative_num_draft_tokens > 0:
        comps.append(
            _draft_component(st, notes, reserve=int(budgeted - budgeted / infl), swa=swa, draft_layers=draft_layers)
        )
    kvb = st.kvb
    notes.append(
        f"layout {layout}: SWA row {kvb[0]:g} B/layer, c4 {kvb[4]:g}, c128 {kvb[128]:g}, "
        f"ratio-1/2 {kvb[1]:g}/{kvb[2]:g} B/row"
    )

    return DSV4Pools(
        full_tokens=full,
        swa_tokens=swa,
        c4_tokens=c4_tokens,
        c128_tokens=c128_tokens,
        bytes_per_full_token=bpf,
        bytes_per_swa_token=bytes_per_swa,
        fixed_bytes=int(fixed),
        swa_mode=mode.swa_mode,
        layout=layout,
        page_size=page_size,
        max_running_requests=final_mrr,
        components=tuple(comps),
        notes=tuple(notes),
        budget_mrr=mrr_w,
        swa_cap_tokens=mode.cap_tokens,
        swa_prefix_tails=mode.tails if mode.cap_tokens is not None else 0,
        swa_full_tokens_ratio=mode.swa_ratio if mode.cap_tokens is None else None,
        c128_state_bytes=c128_fixed,
        c2_state_bytes=c2_fixed,
        swa_fixed_bytes=int(swa_fixed),
        low_ratio_padding_bytes=pad_at_full,
        budgeted_bytes=budgeted,
        c4_state_pool_size=c4_state_pool,
        ring_sizes=tuple(sorted(st.rings.items())),
        owner_layers=tuple(st.owners.items()),
    )


def _coefficients(
    *,
    era: DSV4Era | None = None,
    geometry: DSV4Geometry,
    budget_bytes: int,
    layout: str,
    page_size: int,
    stage_layers: tuple[int, int] | None,
    flags: DSV4Flags,
) -> tuple[_Stage, _Mode, float, float, float, list[str]]:
    """The stage, the SWA mode and the two coefficients (bytes per SWA token, bytes per full token, after the
    speculative inflation) of :func:`dsv4_pool_sizes`: what does not depend on the budget."""
    g, fl = geometry, flags
    attn_dp_size, context_len, speculative_num_draft_tokens = (
        fl.attn_dp_size,
        fl.context_len,
        fl.speculative_num_draft_tokens,
    )
    speculative_num_steps, index_page_size = fl.speculative_num_steps, fl.index_page_size
    compressed_kv_layout = fl.compressed_kv_layout
    notes: list[str] = []
    _check_pool_inputs(
        g=g,
        layout=layout,
        page_size=page_size,
        budget_bytes=budget_bytes,
        attn_dp_size=attn_dp_size,
        context_len=context_len,
    )
    drafts = max(0, speculative_num_draft_tokens)
    era = era or DSV4_ERAS[-1]
    st = _stage(
        g=g,
        layout=layout,
        page_size=page_size,
        stage_layers=stage_layers,
        drafts=drafts,
        spec=speculative_num_draft_tokens > 0,
        index_page_size=index_page_size,
        compressed_kv_layout=compressed_kv_layout,
        era=era,
    )
    if not era.low_ratio_padding:
        notes.append(
            f"SGLang {era.label}'s DSV4PoolConfigurator: no low-ratio KV padding; ratio-1/2 rows priced "
            f"at {st.kvb[1]:g} / {st.kvb[2]:g} B"
        )
    mode = _swa_mode(
        st,
        notes,
        fl,
        drafts=drafts,
        steps=speculative_num_steps if speculative_num_steps is not None else max(1, drafts - 1),
    )

    # --- coefficients (same float order as the engine) --------------------------------------------------
    bytes_per_swa = _bytes_per_swa(st)
    bpf = (0 if mode.cap_tokens is not None else mode.swa_ratio) * bytes_per_swa + sum(
        _comp(st, r) * len(ls) for r, ls in st.owners.items()
    )
    infl = 1.0
    if speculative_num_draft_tokens > 0:
        infl = (st.n_stage + 1) / st.n_stage
        bpf *= infl
        bytes_per_swa *= infl
        notes.append(f"speculative: coefficients x ({st.n_stage}+1)/{st.n_stage} for the draft worker")

    return st, mode, bytes_per_swa, bpf, infl, notes
