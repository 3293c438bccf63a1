"""SGLang 0.4.9.post6 - 0.5.8: the hybrid-SWA split by layer count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.swa.config import _ratio, _release
from kvplan.engines.sglang.pools.swa.sizing import SWAPools, _Cells, stage_cells
from kvplan.engines.sglang.pools.swa_cap import (
    vint,
)
from kvplan.errors import EngineRefusal, InputError
from kvplan.geometry.swa import SWALayers
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.version import Version

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.base import PoolContext
    from kvplan.hfconfig.dtypes import DType


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


def layer_split_stages(
    *,
    layers: SWALayers,
    pp_size: int,
    partition: str | None,
    kv_dtype: DType,
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


def layer_split_pools(ctx: PoolContext, layers: SWALayers, *, staged: bool = False) -> SWAPools:
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
    f, release = ctx.flags, _release(ctx)
    pp_size, partition, max_total_tokens = ctx.pp, f.pp_layer_partition, f.max_total_tokens
    budget_bytes, kv_dtype, attn_tp_size, page_size = ctx.budget, ctx.kv_dtype, ctx.attn_tp, ctx.page_size
    ratio = _ratio(ctx)
    floor = Version.of(release) >= Version.of(LAYER_SPLIT_FLOOR_SINCE)
    full_ids_cell = release == LAYER_SPLIT_FULL_IDS_CELL
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
        raise EngineRefusal(
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
