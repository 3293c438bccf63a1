"""Hybrid sliding-window (SWA) KV pools as SGLang 0.5.23 sizes them: gpt-oss, Gemma-4, MiMo-V2, Llama-4, Step3p5 ...

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
from typing import Any

from kvplan.errors import InputError
from kvplan.geometry.kvdtype import kv_element_bytes

#: ``--swa-full-tokens-ratio`` fallback (arg_groups/fields/schedule.py, ``fallback=0.8``).
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8

#: ``is_hybrid_swa_model`` allow-list, v0.5.23 (DeepSeek-V4 archs excluded: see kvplan.geometry.dsv4).
SWA_SINK_ARCHS = frozenset({"GptOssForCausalLM", "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM",
                            "IQuestQ1ForCausalLM"})
MIMO_V2_ARCHS = frozenset({"MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"})
STEP3P5_ARCHS = frozenset({"Step3p5ForCausalLM", "Step3p7ForConditionalGeneration"})
LAYER_TYPES_ARCHS = frozenset({
    "BeamForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "EmbeddingGemma2Model",
    "Gemma4UnifiedForConditionalGeneration", "DiffusionGemmaForBlockDiffusion", "LagunaForCausalLM",
    "MellumForCausalLM", "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
})
GEMMA4_ARCHS = frozenset({"Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
                          "Gemma4UnifiedForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
                          "EmbeddingGemma2Model"})
HYBRID_SWA_ARCHS = frozenset(SWA_SINK_ARCHS | MIMO_V2_ARCHS | STEP3P5_ARCHS | LAYER_TYPES_ARCHS
                             | {"Llama4ForConditionalGeneration", "InklingForConditionalGeneration",
                                "UnlimitedOCRForCausalLM"})
#: Models whose ``get_attention_sliding_window_size`` returns ``config.sliding_window - 1``.
_WINDOW_MINUS_ONE = frozenset(SWA_SINK_ARCHS | GEMMA4_ARCHS | {"BeamForCausalLM", "MellumForCausalLM",
                                                              "MuseGlimmerForCausalLM",
                                                              "MuseGlimmerForConditionalGeneration"})
#: Architectures whose model override turns hybrid SWA memory *off* (plain MHA/GQA pool over all layers).
SWA_DISABLED_ARCHS = frozenset({"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                                "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"})
_DSV4_ARCHS = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark",
                         "DeepseekV41ForCausalLM"})


# --------------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SWALayers:
    """Which layers are full / sliding-window, and the per-layer KV geometry of each kind.

    ``sliding_window`` is the window SGLang's scheduler and pool checks use (``kvc.sliding_window_size``),
    which for gpt-oss / Gemma-4 is ``config.sliding_window - 1``; ``config_sliding_window`` is the raw value.
    """

    full_layers: tuple[int, ...]
    swa_layers: tuple[int, ...]
    sliding_window: int
    full_kv_heads: int
    full_head_dim: int
    full_v_head_dim: int
    swa_kv_heads: int
    swa_head_dim: int
    swa_v_head_dim: int
    architecture: str = ""
    num_hidden_layers: int = 0
    config_sliding_window: int | None = None
    notes: tuple[str, ...] = ()

    def stage(self, stage_layers: tuple[int, int] | None) -> tuple[int, int]:
        """``(full, swa)`` layer counts owned by PP stage ``[start, end)`` (all layers when None)."""
        if stage_layers is None:
            return len(self.full_layers), len(self.swa_layers)
        s, e = stage_layers
        return sum(s <= i < e for i in self.full_layers), sum(s <= i < e for i in self.swa_layers)


def _flat(cfg: Mapping[str, Any]) -> dict[str, Any]:
    from kvplan.hfconfig.spec import flatten_config

    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    return flatten_config(cfg)


def _pos_int(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise InputError(f"config field '{name}' must be a positive integer, got {v!r}", field=name)
    return v


def _total_kv_heads(c: Mapping[str, Any]) -> int:
    """``ModelConfig.get_total_num_kv_heads`` attribute order (n_head_kv, num_kv_heads, num_key_value_heads ...)."""
    for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups"):
        if c.get(key) is not None:
            return _pos_int(c[key], key)
    return _pos_int(c.get("num_attention_heads"), "num_attention_heads")


def _head_dim(c: Mapping[str, Any]) -> int:
    if c.get("head_dim") is not None:
        return _pos_int(c["head_dim"], "head_dim")
    hidden = _pos_int(c.get("hidden_size"), "hidden_size")
    heads = _pos_int(c.get("num_attention_heads"), "num_attention_heads")
    return hidden // heads


def _layer_types_split(lt: Any, n: int, *, cap: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not isinstance(lt, list) or not lt:
        raise InputError("hybrid sliding-window model config has no 'layer_types' list", field="layer_types",
                         hint="SGLang reads the full/sliding split from layer_types for this architecture")
    swa = tuple(i for i, t in enumerate(lt) if t == "sliding_attention" and (not cap or i < n))
    full = tuple(i for i, t in enumerate(lt) if t == "full_attention" and (not cap or i < n))
    return full, swa


def swa_layers_from_config(cfg: Mapping[str, Any]) -> SWALayers:
    """Read the full/SWA layer split, head geometry and window of a hybrid-SWA config as SGLang does.

    Layer split (``get_hybrid_layer_ids``): Llama-4 -> layer ``i`` is full iff ``(i + 1) % 4 == 0``;
    gpt-oss and the other sink archs, Gemma-4, Beam, Laguna, Mellum, MuseGlimmer -> ``layer_types``
    (``sliding_attention`` / ``full_attention``); Step3p5/3p7 -> ``layer_types`` cut at
    ``num_hidden_layers``; MiMo-V2 -> ``hybrid_layer_pattern`` (1 = SWA, 0 = full); Inkling ->
    ``local_layer_ids``; any other config with ``is_hybrid_swa`` and a ``hybrid_layer_pattern`` -> that
    pattern.

    Head geometry: full ``kv = num_key_value_heads`` (``get_total_num_kv_heads`` order), ``head_dim``
    (or hidden / heads), ``v_head_dim`` (or head_dim); SWA ``swa_num_key_value_heads`` (Step3p5:
    ``attention_other_setting.num_attention_groups``; else the full count), ``swa_head_dim`` (or
    head_dim), ``swa_v_head_dim`` (or swa_head_dim). Gemma-4 states its shapes SWA-first: the config's
    ``head_dim`` / ``num_key_value_heads`` are the *sliding* values and ``global_head_dim`` /
    ``num_global_key_value_heads`` the full ones (``_apply_gemma4_attention_overrides``).

    Window: ``config.sliding_window - 1`` for models with ``get_attention_sliding_window_size``
    (gpt-oss, Gemma-4, Beam, Mellum, MuseGlimmer; Inkling: ``sliding_window_size - 1``); otherwise the
    first of ``sliding_window_size`` / ``sliding_window`` / ``window_size``; Llama-4 without one uses
    ``attention_chunk_size``.

    Example: gpt-oss-120b -> 18 full (odd ids) + 18 SWA layers, 8 KV heads x 64 on both, window 127.

    Raises :class:`InputError` for Gemma-2/3 (SGLang turns hybrid SWA memory off for them: size them as
    GQA over all layers), DeepSeek-V4 (see kvplan.geometry.dsv4), and missing/inconsistent fields.

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``is_hybrid_swa_model``,
    ``get_hybrid_layer_ids``, ``get_swa_num_kv_heads``; python/sglang/srt/utils/hf_transformers/config.py
    ``_apply_gemma4_attention_overrides``; python/sglang/srt/models/gpt_oss.py
    ``get_attention_sliding_window_size``, v0.5.23.
    """
    c = _flat(cfg)
    archs = list(c.get("architectures") or [])
    arch = archs[0] if archs else str(c.get("model_type") or "")
    notes: list[str] = []
    if set(archs) & SWA_DISABLED_ARCHS:
        raise InputError(f"{arch}: SGLang 0.5.23 disables hybrid SWA memory for Gemma-2/3 "
                         "(model override sets disable_hybrid_swa_memory)", field="--model",
                         hint="size it as a plain GQA pool over all layers")
    if set(archs) & _DSV4_ARCHS:
        raise InputError(f"{arch} uses the DeepSeek-V4 pool, not the generic hybrid-SWA one", field="--model",
                         hint="use kvplan.layouts.dsv4")
    n = _pos_int(c.get("num_hidden_layers"), "num_hidden_layers")
    aset = set(archs)
    if "Llama4ForConditionalGeneration" in aset:
        full = tuple(i for i in range(n) if (i + 1) % 4 == 0)
        swa = tuple(i for i in range(n) if (i + 1) % 4 != 0)
    elif aset & SWA_SINK_ARCHS or aset & LAYER_TYPES_ARCHS:
        full, swa = _layer_types_split(c.get("layer_types"), n)
    elif aset & STEP3P5_ARCHS:
        full, swa = _layer_types_split(c.get("layer_types"), n, cap=True)
    elif aset & MIMO_V2_ARCHS or (c.get("is_hybrid_swa") and c.get("hybrid_layer_pattern") is not None):
        pat = c.get("hybrid_layer_pattern")
        if not isinstance(pat, list) or len(pat) < n:
            raise InputError("MiMo-V2 config needs a 'hybrid_layer_pattern' list with one entry per layer",
                             field="hybrid_layer_pattern")
        swa = tuple(i for i in range(n) if pat[i] == 1)
        full = tuple(i for i in range(n) if pat[i] == 0)
    elif "InklingForConditionalGeneration" in aset:
        loc = c.get("local_layer_ids")
        if not isinstance(loc, list) or len(set(loc)) != len(loc) or not all(0 <= i < n for i in loc):
            raise InputError("Inkling config needs unique 'local_layer_ids' in [0, num_hidden_layers)",
                             field="local_layer_ids")
        swa = tuple(i for i in range(n) if i in set(loc))
        full = tuple(i for i in range(n) if i not in set(loc))
    elif "UnlimitedOCRForCausalLM" in aset:
        full, swa = (), tuple(range(n))
    else:
        raise InputError(f"{arch or 'this model'} is not a hybrid sliding-window model in SGLang 0.5.23",
                         field="--model", hint="SGLang sizes it as a plain GQA/MHA pool")
    if not swa:
        raise InputError(f"{arch}: no sliding-window layer found", field="layer_types",
                         hint="SGLang asserts a hybrid SWA model has at least one SWA layer")

    if aset & GEMMA4_ARCHS:
        full_hd = _pos_int(c.get("global_head_dim") or c.get("head_dim"), "global_head_dim")
        full_kv = _pos_int(c.get("num_global_key_value_heads") or c.get("num_key_value_heads"),
                           "num_global_key_value_heads")
        swa_hd = _pos_int(c.get("head_dim"), "head_dim")
        swa_kv = _pos_int(c.get("num_key_value_heads"), "num_key_value_heads")
        full_vhd, swa_vhd = full_hd, swa_hd
        notes.append("Gemma-4: full layers use global_head_dim / num_global_key_value_heads, sliding layers "
                     "head_dim / num_key_value_heads (SGLang _apply_gemma4_attention_overrides)")
    else:
        full_kv = _total_kv_heads(c)
        full_hd = _head_dim(c)
        full_vhd = c.get("v_head_dim") or full_hd
        full_vhd = _pos_int(full_vhd, "v_head_dim")
        swa_hd = _pos_int(c.get("swa_head_dim") or full_hd, "swa_head_dim")
        swa_vhd = _pos_int(c.get("swa_v_head_dim") or swa_hd, "swa_v_head_dim")
        if c.get("swa_num_key_value_heads") is not None:
            swa_kv = _pos_int(c["swa_num_key_value_heads"], "swa_num_key_value_heads")
        elif isinstance(c.get("attention_other_setting"), Mapping) and \
                c["attention_other_setting"].get("num_attention_groups") is not None:
            swa_kv = _pos_int(c["attention_other_setting"]["num_attention_groups"],
                              "attention_other_setting.num_attention_groups")
        else:
            swa_kv = full_kv

    raw_window = None
    for key in ("sliding_window_size", "sliding_window", "window_size"):
        if c.get(key) is not None:
            raw_window = c[key]
            break
    if aset & _WINDOW_MINUS_ONE:
        raw = c.get("sliding_window")
        window = _pos_int(raw, "sliding_window") - 1
        raw_window = raw
        notes.append(f"window {window} = sliding_window {raw} - 1 (the model's get_attention_sliding_window_size)")
    elif "InklingForConditionalGeneration" in aset:
        raw_window = c.get("sliding_window_size")
        window = _pos_int(raw_window, "sliding_window_size") - 1
    elif raw_window is not None:
        window = _pos_int(raw_window, "sliding_window")
    elif c.get("attention_chunk_size") is not None:
        window = _pos_int(c["attention_chunk_size"], "attention_chunk_size")
        notes.append(f"window = attention_chunk_size {window} (resolve_sliding_window_size)")
    else:
        raise InputError(f"{arch}: no sliding window in the config", field="sliding_window",
                         hint="SGLang reads sliding_window_size / sliding_window / window_size")
    return SWALayers(full_layers=full, swa_layers=swa, sliding_window=window, full_kv_heads=full_kv,
                     full_head_dim=full_hd, full_v_head_dim=full_vhd, swa_kv_heads=swa_kv, swa_head_dim=swa_hd,
                     swa_v_head_dim=swa_vhd, architecture=arch, num_hidden_layers=n,
                     config_sliding_window=raw_window if isinstance(raw_window, int) else None, notes=tuple(notes))


# --------------------------------------------------------------------------------------------------
# Per-token bytes
# --------------------------------------------------------------------------------------------------


def swa_bytes_per_layer_token(*, kv_heads: int, head_dim: int, v_head_dim: int, attn_tp_size: int,
                              kv_dtype: str) -> int:
    """Bytes one token costs in ONE layer of a hybrid-SWA sub-pool (full or SWA) on one attention rank.

    Formula: ``max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * e``; mxfp8 adds
    ``(n * (head_dim + v_head_dim)) // 32`` scale bytes (per layer, then multiplied by the layer count).
    Unlike the plain GQA pool there is no DCP term and no head-split assert here (the model asserts on
    load still apply). Example: gpt-oss-120b bf16 at TP1 -> 8 x 128 x 2 = 2,048 B; at TP4 -> 512 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``HybridSWAPoolConfigurator.__init__`` (``_full_per_token`` / ``_swa_per_token``), v0.5.23.
    """
    for name, v in (("kv_heads", kv_heads), ("head_dim", head_dim), ("v_head_dim", v_head_dim),
                    ("attn_tp_size", attn_tp_size)):
        _pos_int(v, name)
    dt = kv_dtype.strip().lower()
    if dt in ("nvfp4", "fp4_mx_block16"):
        raise InputError(f"SGLang's hybrid-SWA pool sizing has no {dt} formula", field="--kv-cache-dtype",
                         hint="use auto, bf16, fp8_e4m3, fp8_e5m2 or mxfp8")
    n = max(1, kv_heads // attn_tp_size)
    cell = n * (head_dim + v_head_dim) * kv_element_bytes(dt)
    if dt == "mxfp8":
        cell += (n * (head_dim + v_head_dim)) // 32
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


def _ceil_align(x: int, a: int) -> int:
    return -(-x // a) * a


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
    from kvplan.geometry.dsv4 import SWA_EVICTION_INTERVAL, _swa_request_cap

    _pos_int(page_size, "page_size")
    _pos_int(attn_dp_size, "attn_dp_size")
    ratio = DEFAULT_SWA_FULL_TOKENS_RATIO if swa_full_tokens_ratio is None else float(swa_full_tokens_ratio)
    if not 0.0 < ratio <= 1.0:
        raise InputError(f"--swa-full-tokens-ratio {ratio} is outside (0, 1]", field="--swa-full-tokens-ratio",
                         hint="SGLang refuses it: --swa-full-tokens-ratio should be in range (0, 1.0]")
    if budget_bytes <= 0:
        raise InputError(f"KV budget is {budget_bytes} B; nothing left for the pools", field="--mem-fraction-static",
                         hint="raise --mem-fraction-static or free GPU memory")
    n_full, n_swa = layers.stage(stage_layers)
    F = swa_bytes_per_layer_token(kv_heads=layers.full_kv_heads, head_dim=layers.full_head_dim,
                                  v_head_dim=layers.full_v_head_dim, attn_tp_size=attn_tp_size, kv_dtype=kv_dtype)
    S = swa_bytes_per_layer_token(kv_heads=layers.swa_kv_heads, head_dim=layers.swa_head_dim,
                                  v_head_dim=layers.swa_v_head_dim, attn_tp_size=attn_tp_size, kv_dtype=kv_dtype)
    full_cell = F * (n_full + draft_full_layers)
    swa_cell = S * (n_swa + draft_swa_layers)
    window = layers.sliding_window
    notes: list[str] = list(layers.notes)
    if draft_full_layers or draft_swa_layers:
        notes.append(f"draft pool: {draft_full_layers} full + {draft_swa_layers} SWA layer(s) share the token counts")

    def comps(full: int, swa: int) -> tuple[tuple[str, int], ...]:
        out = []
        if full_cell:
            out.append(("full-attention KV", full * full_cell))
        out.append(("sliding-window KV", swa * swa_cell))
        return tuple(out)

    # ---- all-SWA (no full layer anywhere in the model) -------------------------------------------
    if not layers.full_layers:
        cell = S * n_swa + F * draft_full_layers + S * draft_swa_layers
        if cell <= 0:
            raise InputError("this PP stage holds no attention layer", field="--pp-size")
        tokens = int(budget_bytes // cell) // page_size * page_size
        profiled = tokens
        if max_total_tokens is not None and max_total_tokens < tokens:
            tokens = max_total_tokens // page_size * page_size
        return SWAPools(full_tokens=0, swa_tokens=tokens, full_bytes_per_token=0, swa_bytes_per_token=cell,
                        cell=float(cell), mode="all-swa", components=(("sliding-window KV", tokens * cell),),
                        notes=tuple(notes), profiled_full_tokens=profiled, page_size=page_size,
                        sliding_window=window)

    if swa_request_cap_applies(radix_cache=radix_cache, max_running_requests=max_running_requests,
                               chunked_prefill_size=chunked_prefill_size,
                               disaggregation_decode=disaggregation_decode):
        assert max_running_requests is not None
        cap = _swa_request_cap(
            page_size=page_size, window=window, mrr_per_rank=max(1, max_running_requests // attn_dp_size),
            chunked_prefill_size=chunked_prefill_size, overlap_schedule=overlap_schedule,
            num_draft_tokens=speculative_num_draft_tokens,
            num_steps=speculative_num_steps if speculative_num_steps is not None else max(1, speculative_num_draft_tokens - 1),
            disagg_decode=disaggregation_decode, decode_extra_slots=decode_extra_slots,
            eviction_interval=SWA_EVICTION_INTERVAL if swa_eviction_interval is None else swa_eviction_interval)
        swa_tokens = _ceil_align(cap, page_size)
        fixed = swa_tokens * swa_cell
        if full_cell <= 0:
            raise InputError("this PP stage holds no full-attention layer", field="--pp-size")
        full = int((budget_bytes - fixed) // full_cell) // page_size * page_size
        if full <= 0:
            raise InputError(
                f"the SWA request cap ({swa_tokens:,} tokens, {fixed / 2**30:.2f} GiB) leaves no room for the full "
                f"KV pool in {budget_bytes / 2**30:.2f} GiB", field="--max-running-requests",
                hint="reduce --max-running-requests, lower SGLANG_SWA_EVICTION_INTERVAL or raise --mem-fraction-static")
        profiled = full
        if max_total_tokens is not None and max_total_tokens < full:
            full = max_total_tokens // page_size * page_size
            swa_tokens = min(swa_tokens, max_total_tokens)
        notes.append(f"SWA pool sized from the request cap: {cap:,} slots -> {swa_tokens:,} (radix cache off, "
                     f"--max-running-requests {max_running_requests}, chunked prefill {chunked_prefill_size})")
        return SWAPools(full_tokens=full, swa_tokens=swa_tokens, full_bytes_per_token=full_cell,
                        swa_bytes_per_token=swa_cell, cell=float(full_cell), mode="request-cap",
                        components=comps(full, swa_tokens), notes=tuple(notes), swa_cap_tokens=cap, fixed_bytes=fixed,
                        profiled_full_tokens=profiled, page_size=page_size, sliding_window=window)

    cell = full_cell + ratio * swa_cell
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
    return SWAPools(full_tokens=full, swa_tokens=swa_tokens, full_bytes_per_token=full_cell,
                    swa_bytes_per_token=swa_cell, cell=cell, mode="ratio", components=comps(full, swa_tokens),
                    notes=tuple(notes), swa_full_tokens_ratio=ratio, profiled_full_tokens=profiled,
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
    from kvplan.parallel import sglang_pp_layer_ranges as pp_layer_ranges

    n = layers.num_hidden_layers or (max(layers.full_layers + layers.swa_layers) + 1)
    ranges = pp_layer_ranges(num_layers=n, pp_size=pp_size, partition=partition)
    stages = [(rng, swa_pool_sizes(layers=layers, stage_layers=rng if pp_size > 1 else None, **kwargs))
              for rng in ranges]
    common = min(r.full_tokens if r.mode != "all-swa" else r.swa_tokens for _, r in stages)
    if max_total_tokens is not None:
        common = min(common, max_total_tokens)
    worst_rng, worst = max(stages, key=lambda t: t[1].cell)
    final = swa_pool_sizes(layers=layers, stage_layers=worst_rng if pp_size > 1 else None,
                           max_total_tokens=common, **kwargs)
    if pp_size > 1:
        per = ", ".join(f"layers [{s},{e}): {r.profiled_full_tokens:,}" for (s, e), r in stages)
        final = SWAPools(**{**final.__dict__, "notes": final.notes + (f"PP stages profiled {per}; MIN {common:,}",)})
    return final
