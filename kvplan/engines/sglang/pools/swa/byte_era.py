"""SGLang 0.5.9 - 0.5.22: the byte split before 0.5.23's (:class:`ByteEra`), the two-step split of
0.5.9 - 0.5.10 and the speculative draft's layers in the hybrid-SWA cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.base import (
    PoolContext,
    draft_layers,
)
from kvplan.engines.sglang.pools.swa.sizing import SWAPools, _Cells, _listed, ratio_swa_tokens, stage_cells
from kvplan.engines.sglang.pools.swa_cap import (
    vint,
)
from kvplan.errors import EngineRefusal, InputError
from kvplan.geometry.swa import SWALayers
from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges
from kvplan.version import Version

if TYPE_CHECKING:
    from kvplan.hfconfig.dtypes import DType
    from kvplan.hfconfig.spec import ModelSpec


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
        k = Version.of(release).triple
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
    kv_dtype: DType,
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
        raise EngineRefusal(
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
