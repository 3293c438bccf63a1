"""SGLang 0.5.12 - 0.5.20's DeepSeek-V4 pool (V4-Flash, V4-Pro): the one-coefficient ``DSV4PoolConfigurator``.

The 0.5.21+ configurator is :func:`kvplan.engines.sglang.pools.dsv4.dsv4_pool_sizes`; which release does what is
:data:`kvplan.engines.sglang.pools.dsv4.DSV4_ERAS`.  Read in the wheels (package paths, under ``python/`` in the
repo): ``sglang/srt/model_executor/pool_configurator.py`` ``DSV4PoolConfigurator`` (``__init__``,
``_get_bytes_per_full_token``, ``_compute_dsv4_sizes``, ``_get_c128_state_fixed_bytes``,
``_resolve_max_running_requests_per_worker`` / ``_get_c128_state_fixed_bytes_for_token_capacity``,
``finalize_with_max_running_requests``, ``calculate_pool_sizes``); ``sglang/srt/mem_cache/deepseek_v4_memory_pool.py``
(``DeepSeekV4SingleKVPool._create_buffers`` / ``create_buffer``, ``DeepSeekV4IndexerPool._create_buffer``,
``DeepSeekV4TokenToKVPool.__init__``), ``sglang/srt/mem_cache/deepseek_v4_compress_state.py`` ``CompressStatePool``;
releases 0.5.12 - 0.5.20.

The model (per attention-DP rank and PP stage; kv = nope + 2 * rope + 8 = 584 B, a raw row without page padding;
idx = I + I/128*4 = 132 B; W = the model's window (``cfg.window_size``, 128), *not* the 256-token page; r = the
SWA ratio, 0.1 from the V4 override)::

    bpft  = r*kv*L + kv/4*L4 + kv/128*L128 + idx/4*L4 + r*(ring4/W)*4*2*D*4*L4      (D = 512 latent, fp32 state)
            + r*(ring128/W)*2*D*4*L128   (0.5.12 - 0.5.14 only: the c128 state scales with the SWA slots)
            + r*(ring4/W)*4*I*4*L4
    speculative: bpft *= (L + 1) / L                       (L: the stage's layers; 0.5.12: the whole config list)
    fixed = 0                                              (0.5.12 - 0.5.14)
          = L128 * ceil128((mrr_w + 1) * ring128 + ring128 + 1) * 2*D*4      (0.5.15 - 0.5.20; mrr_w = R // attn_dp)
    full  = page_floor(int(max(budget - fixed, 0) / bpft));  swa = page_floor(int(full * r))
    (0.5.20: refused when window + page >= swa)

Worked example (V4-Flash, 43 layers: 21 c4, 20 c128; r 0.1, no speculation; 0.5.13):
``bpft = 2,511.2 + 3,066 + 91.25 + 693 + 1,075.2 + 8,192 + 268.8 = 15,897.45 B``; at a 10 GiB budget
``full = page_floor(int(10,737,418,240 / 15,897.45)) = page_floor(675,417) = 675,328`` (0.5.23, 256 requests:
1,131,776).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.dsv4.eras import DSV4Era, check_dsv4_release
from kvplan.engines.sglang.pools.dsv4.layout import (
    DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
    DSV4_DEFAULT_SWA_RATIO,
    compress_state_ring_size,
    indexer_bytes_per_token,
)
from kvplan.engines.sglang.pools.dsv4.result import DSV4Pools
from kvplan.engines.sglang.pools.swa_cap import ceil_align, vint, vmax, vwhere
from kvplan.errors import InputError

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.base import PoolContext
    from kvplan.engines.sglang.pools.dsv4.stage import DSV4Flags
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools
    from kvplan.geometry.dsv4 import DSV4Geometry

#: DeepSeekV4SingleKVPool.create_buffer: the page stride is padded to a multiple of 576 B
_PAGE_ALIGN = 576
_STATE_DT = 4  # fp32 compress state


def legacy_kv_row_bytes(*, geometry: DSV4Geometry) -> int:
    """The budgeted bytes of one latent row before 0.5.21: ``nope + 2 * rope + 8`` (fp8 nope, bf16 rope, scales).

    Example: V4-Flash -> 448 + 128 + 8 = 584.  Source: ``DSV4PoolConfigurator._get_bytes_per_full_token``
    (``kv_bytes``), sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py, v0.5.12 - v0.5.20.
    """
    return geometry.qk_nope_head_dim + 2 * geometry.qk_rope_head_dim + 8


def legacy_bytes_per_full_token(
    *,
    geometry: DSV4Geometry,
    era: DSV4Era,
    swa_ratio: float,
    stage_layers: tuple[int, int] | None = None,
    num_draft_tokens: int = 0,
) -> float:
    """``DSV4PoolConfigurator.bytes_per_full_token`` of releases 0.5.12 - 0.5.20 (the module docstring's ``bpft``),
    summed in the engine's order, times ``(L + 1) / L`` under speculative decoding.

    Example: V4-Flash, r 0.1: 15,897.45 B (0.5.13 - 0.5.14), 15,955.85 B (0.5.12: L = 44 with the MTP entry),
    7,705.45 B (0.5.15 - 0.5.20).  Source: ``_get_bytes_per_full_token`` and ``__init__``,
    model_executor/pool_configurator.py, v0.5.12 - v0.5.20.
    """
    g = geometry
    L, L4, L128 = _layer_counts(g, era, stage_layers)
    kv = legacy_kv_row_bytes(geometry=g)
    idx = indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=False)
    ring4 = compress_state_ring_size(ratio=4, num_draft_tokens=num_draft_tokens)
    ring128 = compress_state_ring_size(ratio=128, num_draft_tokens=num_draft_tokens)
    window = g.sliding_window
    c4_state = 2 * 2 * g.head_dim * _STATE_DT
    c128_state = 2 * 1 * g.head_dim * _STATE_DT
    c4_idx_state = 2 * 2 * g.index_head_dim * _STATE_DT
    c4_ratio = ring4 / window
    bpft = (
        swa_ratio * kv * L
        + 1 / 4 * kv * L4
        + 1 / 128 * kv * L128
        + 1 / 4 * idx * L4
        + swa_ratio * c4_ratio * c4_state * L4
    )
    if not era.c128_state_fixed:
        bpft += swa_ratio * (ring128 / window) * c128_state * L128
    bpft += swa_ratio * c4_ratio * c4_idx_state * L4
    if num_draft_tokens > 0:
        bpft *= (L + 1) / L
    return bpft


def _layer_counts(g: DSV4Geometry, era: DSV4Era, stage_layers: tuple[int, int] | None) -> tuple[int, int, int]:
    """(L, L4, L128) the configurator counts: the stage's slice from 0.5.13, the config's whole list in 0.5.12."""
    start, end = stage_layers or (0, g.num_layers)
    ratios = g.compress_ratios[start:end] if era.pp_slice else g.all_compress_ratios
    return len(ratios), ratios.count(4), ratios.count(128)


def legacy_c128_state_bytes(*, geometry: DSV4Geometry, n_slots: Any, ring: int, layers: int) -> Any:
    """The c128 compress state of ``n_slots`` request slots (0.5.15 - 0.5.20's fixed bytes; also what the pool
    allocates): ``layers * ceil128(n_slots * ring + ring + 1) * 2 * D * 4``.

    Example: V4-Flash, 257 slots, ring 128, 20 layers -> 33,152 rows x 4,096 B x 20 = 2,715,811,840 B.
    Source: ``DSV4PoolConfigurator._get_c128_state_fixed_bytes``, model_executor/pool_configurator.py, v0.5.15.
    """
    if layers == 0:
        return 0
    rows = ceil_align(n_slots * ring + ring + 1, 128)
    return rows * 2 * geometry.head_dim * _STATE_DT * layers


def legacy_fixed_bytes(
    *, geometry: DSV4Geometry, era: DSV4Era, stage_layers: tuple[int, int] | None, n_slots: Any, ring128: int
) -> Any:
    """The bytes ``calculate_pool_sizes`` takes off the budget first: 0 in 0.5.12 - 0.5.14, the c128 state of
    ``n_slots`` (= mrr_w + 1 (+ PD decode slots)) request slots from 0.5.15 (:func:`legacy_c128_state_bytes`;
    an int or an array).

    Example: V4-Flash, 0.5.17, 257 slots -> 2,715,811,840 B; 0.5.13 -> 0.
    Source: ``DSV4PoolConfigurator.calculate_pool_sizes``, model_executor/pool_configurator.py, v0.5.12 - v0.5.20.
    """
    if not era.c128_state_fixed:
        return 0
    l128 = _layer_counts(geometry, era, stage_layers)[2]
    return legacy_c128_state_bytes(geometry=geometry, n_slots=n_slots, ring=ring128, layers=l128)


def legacy_full_tokens(*, avail: Any, bpf: float, page_size: int) -> Any:
    """``page_floor(int(avail / bpft))`` (an int or an array; no padding search before 0.5.23).

    Example: V4-Flash, 0.5.13, 10 GiB -> page_floor(int(10,737,418,240 / 15,897.45)) = 675,328.
    Source: ``DSV4PoolConfigurator.calculate_pool_sizes`` / ``_compute_dsv4_sizes``, model_executor/
    pool_configurator.py, v0.5.12 - v0.5.20.
    """
    return vint(avail / bpf) // page_size * page_size


def legacy_pool_sizes(
    *,
    era: DSV4Era,
    geometry: DSV4Geometry,
    budget_bytes: int,
    layout: str,
    page_size: int,
    stage_layers: tuple[int, int] | None,
    flags: DSV4Flags,
    max_total_tokens: int | None,
) -> DSV4Pools:
    """Size the pools as 0.5.12 - 0.5.20's ``DSV4PoolConfigurator.calculate_pool_sizes`` does (module docstring).

    The arguments are :func:`kvplan.engines.sglang.pools.dsv4.dsv4_pool_sizes`'s, its flags in one
    :class:`~kvplan.engines.sglang.pools.dsv4.stage.DSV4Flags` (0.5.12 - 0.5.20 read only some of them).
    Example: the module docstring's V4-Flash at 10 GiB under 0.5.13 -> 675,328 full tokens,
    67,328 SWA slots.
    """
    g, f = geometry, flags
    max_running_requests, attn_dp_size, context_len = f.max_running_requests, f.attn_dp_size, f.context_len
    swa_full_tokens_ratio, speculative_num_draft_tokens = f.swa_full_tokens_ratio, f.speculative_num_draft_tokens
    family_mrr_default = f.family_mrr_default
    disaggregation_decode, decode_extra_slots = f.disaggregation_decode, f.decode_extra_slots
    check_dsv4_release(era=era, is_v41=g.is_v41, layout=layout)
    drafts = max(0, speculative_num_draft_tokens)
    ratio = swa_full_tokens_ratio if swa_full_tokens_ratio is not None else DSV4_DEFAULT_SWA_RATIO
    if not 0 < ratio <= 1.0:
        raise InputError("--swa-full-tokens-ratio should be in range (0, 1.0]", field="swa_full_tokens_ratio")
    notes = [
        f"SGLang {era.label}'s DSV4PoolConfigurator: one coefficient over {legacy_kv_row_bytes(geometry=g)} B "
        f"rows, SWA ratio {ratio:g}" + ("" if era.c128_state_fixed else ", c128 state per SWA slot")
    ]
    if swa_full_tokens_ratio is None:
        notes.append("swa_full_tokens_ratio 0.1 from the DeepSeek-V4 model override")
    rings = _legacy_rings(g, era, stage_layers, drafts)
    bpf = legacy_bytes_per_full_token(
        geometry=g, era=era, swa_ratio=ratio, stage_layers=stage_layers, num_draft_tokens=drafts
    )
    requested = max_running_requests if max_running_requests is not None else family_mrr_default
    if max_running_requests is None and family_mrr_default is not None:
        notes.append(
            f"max_running_requests unset -> {family_mrr_default} (deepseek_v4_hook.apply_deepseek_v4_defaults)"
        )
    if requested is not None:
        mrr_w = requested // attn_dp_size
    else:  # the configurator's estimate (0.5.15+: _get_c128_state_fixed_bytes_for_token_capacity)
        est_full = int(budget_bytes / bpf)
        mrr_w = min(max(min(int(est_full / context_len * 512), 4096), 2048), est_full // 2)
    extra = decode_extra_slots if disaggregation_decode else 0
    fixed = legacy_fixed_bytes(
        geometry=g, era=era, stage_layers=stage_layers, n_slots=mrr_w + 1 + extra, ring128=rings[128]
    )
    full = legacy_full_tokens(avail=vmax(budget_bytes - fixed, 0), bpf=bpf, page_size=page_size)
    if full <= 0:
        raise InputError(
            "Not enough memory for the DeepSeek-V4 KV pool",
            field="mem_fraction_static",
            hint="increase --mem-fraction-static",
        )
    budgeted = full * bpf + fixed
    if max_total_tokens is not None and max_total_tokens < full:
        full = max_total_tokens // page_size * page_size
        notes.append(f"--max-total-tokens caps the full pool at {full}")
        if full <= 0:
            raise InputError("max_total_tokens leaves no full page", field="max_total_tokens")
    swa = int(full * ratio) // page_size * page_size
    if era.swa_pool_check and g.sliding_window + page_size >= swa:
        raise InputError(
            f"SWA pool ({swa} tokens) cannot hold even one request: the prefill floor is window "
            f"({g.sliding_window}) + page ({page_size})",
            field="swa_full_tokens_ratio",
            hint="increase --swa-full-tokens-ratio or the KV budget",
        )
    final_mrr = min(mrr_w, full // 2)
    c4_state_pool = swa // g.sliding_window * rings[4]
    c128_state_pool = (
        (final_mrr + 1 + extra) * rings[128] if era.c128_state_fixed else swa // g.sliding_window * rings[128]
    )
    comps = _legacy_components(
        g,
        stage_layers=stage_layers,
        layout=layout,
        page_size=page_size,
        full=full,
        swa=swa,
        c4_state_pool=c4_state_pool,
        c128_state_pool=c128_state_pool,
        rings=rings,
    )
    if drafts > 0:
        L = _layer_counts(g, era, stage_layers)[0]
        comps.append(("draft_worker_reserve (budgeted, (L+1)/L)", int(full * bpf - full * bpf * L / (L + 1))))
        notes.append(f"speculative: bytes_per_full_token x ({L}+1)/{L} for the draft worker")
    return DSV4Pools(
        full_tokens=full,
        swa_tokens=swa,
        c4_tokens=full // 4,
        c128_tokens=full // 128,
        bytes_per_full_token=bpf,
        bytes_per_swa_token=0.0,
        fixed_bytes=int(fixed),
        swa_mode="ratio",
        layout=layout,
        page_size=page_size,
        max_running_requests=final_mrr,
        components=tuple(comps),
        notes=tuple(notes),
        budget_mrr=mrr_w,
        swa_full_tokens_ratio=ratio,
        c128_state_bytes=int(fixed),
        budgeted_bytes=budgeted,
        c4_state_pool_size=c4_state_pool,
        ring_sizes=tuple(sorted(rings.items())),
    )


def _legacy_rings(g: DSV4Geometry, era: DSV4Era, stage_layers: tuple[int, int] | None, drafts: int) -> dict[int, int]:
    """The c4 / c128 rings (8 / 128, speculative 16 / 256); from 0.5.18 the draft tokens must fit the ring
    (``_assert_ring_serves_draft_tokens``: ``drafts <= ring - window_rows + 2``, c4 window_rows 8, c128 128)."""
    rings = {r: compress_state_ring_size(ratio=r, num_draft_tokens=drafts) for r in (4, 128)}
    _, l4, l128 = _layer_counts(g, era, stage_layers)
    if drafts and era.ring_check:
        for r, n in ((4, l4), (128, l128)):
            window_rows = 2 * r if r == 4 else r
            pad = rings[r] - window_rows + 2 if rings[r] > window_rows else 0
            if n and drafts > pad:
                raise InputError(
                    f"speculative_num_draft_tokens={drafts} exceeds what the c{r} ring (size "
                    f"{rings[r]}) serves ({pad})",
                    field="speculative_num_draft_tokens",
                )
    return rings


def _legacy_components(
    g: DSV4Geometry,
    *,
    stage_layers: tuple[int, int] | None,
    layout: str,
    page_size: int,
    full: int,
    swa: int,
    c4_state_pool: int,
    c128_state_pool: int,
    rings: dict[int, int],
) -> list[tuple[str, int]]:
    """What 0.5.12 - 0.5.20's ``DeepSeekV4TokenToKVPool`` allocates on CUDA: every KV pool ``(size + page + 1) //
    page`` pages of ``ceil(page * 584 / 576) * 576`` B (trtllm: 512 B rows), the SWA pool in window-sized pages
    (128 rows), c4 / c128 in ``page // 4`` / ``page // 128``-row pages, the c4 indexer (``c128 * 32`` rows,
    I + 4 = 132 B) in 64-row pages; compress states ``ceil_r(size + ring + 1)`` fp32 rows (c4 4*D + 4*I floats,
    c128 2*D)."""
    start, end = stage_layers or (0, g.num_layers)
    ratios = g.compress_ratios[start:end]
    n, n4, n128 = len(ratios), ratios.count(4), ratios.count(128)
    row = 512 if layout == "uniform_fp8" else legacy_kv_row_bytes(geometry=g)

    def kv_pool(size: int, rows: int, layers: int) -> int:
        page_b = rows * row if layout == "uniform_fp8" else ceil_align(rows * row, _PAGE_ALIGN)
        return layers * ((size + rows + 1) // rows) * page_b

    window = g.sliding_window
    c128 = full // 128
    idx_rows = page_size // 4
    idx = g.index_head_dim + 4  # DeepSeekV4IndexerPool.get_bytes_per_token (fp8 key + one fp32 scale)
    comps = [(f"swa_kv ({n} layers)", kv_pool(swa, window, n))]
    if n4:
        rows4 = ceil_align(c4_state_pool + rings[4] + 1, 4)
        comps += [
            (f"c4_kv ({n4} layers)", kv_pool(full // 4, page_size // 4, n4)),
            (f"c4_indexer_k ({n4} layers)", n4 * ((c128 * 32 + idx_rows + 1) // idx_rows) * idx_rows * idx),
            (f"c4_state fp32 ({n4} layers)", n4 * rows4 * 4 * g.head_dim * _STATE_DT),
            (f"c4_indexer_state fp32 ({n4} layers)", n4 * rows4 * 4 * g.index_head_dim * _STATE_DT),
        ]
    if n128:
        rows128 = ceil_align(c128_state_pool + rings[128] + 1, 128)
        comps += [
            (f"c128_kv ({n128} layers)", kv_pool(c128, page_size // 128, n128)),
            (f"c128_state fp32 ({n128} layers)", n128 * rows128 * 2 * g.head_dim * _STATE_DT),
        ]
    return comps


def legacy_vector_group(ctx: PoolContext, *, era: DSV4Era, cell: float) -> VectorGroup | None:
    """``kvplan sweep``'s pools of 0.5.12 - 0.5.20 over arrays, per PP stage with :func:`legacy_pool_sizes`'s
    formulas, the stage with the fewest full tokens, then the cap and the request cap::

        mrr_w  = requested // attn_dp                    (requested: the row's, else the family default 256)
        fixed  = legacy_fixed_bytes(mrr_w + 1)           (0 before 0.5.15)
        full_s = page_floor(int(max(budget - fixed, 0) / bpft_s))       (refused: full <= 0)
        swa    = page_floor(int(full * r))               (0.5.20: refused when window + page >= swa)
        tokens = the fewest full tokens -> page_floor(max_total_tokens) where smaller
        mrr    = resolve_max_running_requests(tokens, ...); cell = that stage's bpft; budget <= 0: no pool

    None when the group's context does not plan (the sweep then fits it point by point).
    Example: V4-Flash TP8 under 0.5.17 at a 10 GiB budget -> 1,040,896 full tokens (the module docstring's bpft).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``DSV4PoolConfigurator``,
    v0.5.12 - v0.5.20; mem_cache/kv_cache_configurator.py ``resolve_max_num_reqs``.
    """
    from kvplan.engines.sglang.pools.dsv4.layout import dsv4_select_layout
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of
    from kvplan.geometry.dsv4 import dsv4_geometry_from_config

    f = ctx.flags
    try:
        g = dsv4_geometry_from_config(ctx.config)
        layout = dsv4_select_layout(
            sm_major=ctx.sm_major,
            is_v41=g.is_v41,
            kv_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            attention_backend=f.dsv4_attn_backend,
        )
        check_dsv4_release(era=era, is_v41=g.is_v41, layout=layout, speculative_algorithm=f.speculative_algorithm)
        ratio = f.swa_full_tokens_ratio if f.swa_full_tokens_ratio is not None else DSV4_DEFAULT_SWA_RATIO
        drafts = max(0, f.speculative_num_draft_tokens)
        ranges = ctx.rules.pp_layer_ranges(num_layers=g.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
        stages = [(rng if ctx.pp > 1 else None) for rng in ranges]
        setups = [
            (
                st,
                legacy_bytes_per_full_token(
                    geometry=g, era=era, swa_ratio=ratio, stage_layers=st, num_draft_tokens=drafts
                ),
                _legacy_rings(g, era, st, drafts)[128],
            )
            for st in stages
        ]
    except InputError:
        return None
    if not setups or not 0 < ratio <= 1.0 or ctx.page_size != 256 or ctx.attn_dp < 1:
        return None
    if cell and cell not in {bpf for _, bpf, _ in setups}:
        return None
    page, dp = ctx.page_size, ctx.attn_dp

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        req = requested if requested is not None else DSV4_DEFAULT_MAX_RUNNING_REQUESTS
        mrr_w = req // dp
        best: Any = None
        best_bpf: Any = 0.0
        for st, bpf, ring128 in setups:
            fixed = legacy_fixed_bytes(geometry=g, era=era, stage_layers=st, n_slots=mrr_w + 1, ring128=ring128)
            full = legacy_full_tokens(avail=vmax(budget - fixed, 0), bpf=bpf, page_size=page)
            if best is None:
                best, best_bpf = full, bpf
            else:
                take = full < best
                best, best_bpf = vwhere(take, full, best), vwhere(take, bpf, best_bpf)
        err: Any = best <= 0
        if era.swa_pool_check:  # on the budget's pool: plan applies --max-total-tokens after dsv4_pool_sizes
            err = err | (g.sliding_window + page >= vint(best * ratio) // page * page)
        tokens = vwhere(pos, best, 0)
        if max_total_tokens is not None:
            capped = ctx.rules.page_floor(tokens=max_total_tokens, page_size=page)
            tokens = vwhere((max_total_tokens >= 0) & (max_total_tokens < tokens), capped, tokens)
        mrr = request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested)
        return VectorPools(tokens=tokens, cell=vwhere(pos, best_bpf, 0.0), mrr=mrr, error=err & pos)

    return VectorGroup(family="dsv4", pools=pools, note=f"SGLang {era.label} DSV4 configurator, {len(setups)} stage(s)")
