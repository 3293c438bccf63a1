"""Hybrid sliding-window geometry (gpt-oss, Gemma-4, MiMo-V2, Llama-4, Step3p5 ...): which layers are full and
which sliding-window, their KV heads and widths, and the window (engine-neutral).

A hybrid-SWA model has *full* attention layers (a row per token of every live request) and *sliding-window*
layers (rows only for the last ``window`` tokens of each request).  How SGLang splits one byte budget between the
two pools (ratio or request-cap mode) is :mod:`kvplan.engines.sglang.pools.swa`.

Sources for the config reading (sgl-project/sglang, v0.5.23, package paths under ``python/``):

* ``sglang/srt/configs/model_config.py``: ``is_hybrid_swa_model``, ``get_hybrid_layer_ids``,
  ``ModelConfig.get_num_kv_heads`` / ``get_swa_num_kv_heads`` / ``_get_sliding_window_size``, the
  ``swa_head_dim`` / ``swa_v_head_dim`` defaults;
* ``sglang/srt/utils/hf_transformers/config.py``: ``_apply_gemma4_attention_overrides`` (Gemma-4's
  full vs sliding head geometry);
* ``sglang/srt/model_executor/model_runner_components/load_model_utils.py``:
  ``resolve_sliding_window_size`` and the models' ``get_attention_sliding_window_size``
  (gpt-oss, Gemma-4, ...: ``config.sliding_window - 1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.normalize import Engine, flatten_config
from kvplan.hfconfig.readers import int_at_least

#: ``is_hybrid_swa_model`` allow-list, v0.5.23 (DeepSeek-V4 archs excluded: see kvplan.geometry.dsv4).
SWA_SINK_ARCHS = frozenset(
    {"GptOssForCausalLM", "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM"}
)
MIMO_V2_ARCHS = frozenset({"MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"})
STEP3P5_ARCHS = frozenset({"Step3p5ForCausalLM", "Step3p7ForConditionalGeneration"})
LAYER_TYPES_ARCHS = frozenset(
    {
        "BeamForCausalLM",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "EmbeddingGemma2Model",
        "Gemma4UnifiedForConditionalGeneration",
        "DiffusionGemmaForBlockDiffusion",
        "LagunaForCausalLM",
        "MellumForCausalLM",
        "MuseGlimmerForCausalLM",
        "MuseGlimmerForConditionalGeneration",
    }
)
GEMMA4_ARCHS = frozenset(
    {
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "Gemma4UnifiedForConditionalGeneration",
        "DiffusionGemmaForBlockDiffusion",
        "EmbeddingGemma2Model",
    }
)
#: Dots3 (``configs/dots3.py``: ``is_hybrid_swa = True``): MLA on every layer, a sliding window on some (the MLA
#: branch of ``HybridSWAPoolConfigurator``).
DOTS3_ARCHS = frozenset({"Dots3NoteForCausalLM", "Dots3NoteForCausalLMNextN"})
HYBRID_SWA_ARCHS = frozenset(
    SWA_SINK_ARCHS
    | MIMO_V2_ARCHS
    | STEP3P5_ARCHS
    | LAYER_TYPES_ARCHS
    | DOTS3_ARCHS
    | {"Llama4ForConditionalGeneration", "InklingForConditionalGeneration", "UnlimitedOCRForCausalLM"}
)
#: Models whose ``get_attention_sliding_window_size`` returns ``config.sliding_window - 1``.
_WINDOW_MINUS_ONE = frozenset(
    SWA_SINK_ARCHS
    | GEMMA4_ARCHS
    | {"BeamForCausalLM", "MellumForCausalLM", "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration"}
)
#: Models whose ``get_attention_sliding_window_size`` returns ``config.sliding_window_size - 1`` (Inkling, Dots3:
#: ``models/dots3_common/modeling.py``).
_WINDOW_SIZE_MINUS_ONE = frozenset(DOTS3_ARCHS | {"InklingForConditionalGeneration"})
_DSV4_ARCHS = frozenset(
    {"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark", "DeepseekV41ForCausalLM"}
)


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
    #: MLA layers (Dots3): one latent row per token per layer, ``*_head_dim`` = kv_lora_rank + qk_rope_head_dim,
    #: ``*_v_head_dim`` = 0, one "head" that tensor parallelism does not split
    latent: bool = False

    def stage(self, stage_layers: tuple[int, int] | None) -> tuple[int, int]:
        """``(full, swa)`` layer counts owned by PP stage ``[start, end)`` (all layers when None)."""
        if stage_layers is None:
            return len(self.full_layers), len(self.swa_layers)
        s, e = stage_layers
        return sum(s <= i < e for i in self.full_layers), sum(s <= i < e for i in self.swa_layers)


def _flat(cfg: Mapping[str, Any], engine: Engine) -> dict[str, Any]:
    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    return flatten_config(cfg, engine=engine)


def positive_int(v: Any, name: str) -> int:
    if not int_at_least(v, 1):
        raise InputError(f"config field '{name}' must be a positive integer, got {v!r}", field=name)
    return v


def _total_kv_heads(c: Mapping[str, Any]) -> int:
    """``ModelConfig.get_total_num_kv_heads`` attribute order (n_head_kv, num_kv_heads, num_key_value_heads ...)."""
    for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups"):
        if c.get(key) is not None:
            return positive_int(c[key], key)
    return positive_int(c.get("num_attention_heads"), "num_attention_heads")


def _head_dim(c: Mapping[str, Any]) -> int:
    if c.get("head_dim") is not None:
        return positive_int(c["head_dim"], "head_dim")
    hidden = positive_int(c.get("hidden_size"), "hidden_size")
    heads = positive_int(c.get("num_attention_heads"), "num_attention_heads")
    return hidden // heads


def _layer_types_split(lt: Any, n: int, *, cap: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not isinstance(lt, list) or not lt:
        raise InputError(
            "hybrid sliding-window model config has no 'layer_types' list",
            field="layer_types",
            hint="SGLang reads the full/sliding split from layer_types for this architecture",
        )
    swa = tuple(i for i, t in enumerate(lt) if t == "sliding_attention" and (not cap or i < n))
    full = tuple(i for i, t in enumerate(lt) if t == "full_attention" and (not cap or i < n))
    return full, swa


def swa_layers_from_config(
    cfg: Mapping[str, Any], *, engine: Engine = "sglang", global_kv_needs_k_eq_v: bool = True
) -> SWALayers:
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
    ``num_global_key_value_heads`` the full ones (``_apply_gemma4_attention_overrides``); the global KV heads
    apply unless ``attention_k_eq_v`` is false (transformers 5.19's ``per_layer_config``, SGLang 0.5.22+) unless
    ``global_kv_needs_k_eq_v`` is False (SGLang 0.5.11 - 0.5.21 set them whenever given).  Dots3 (MLA + SWA):
    full rows ``kv_lora_rank + qk_rope_head_dim``, sliding rows ``swa_kv_lora_rank + swa_qk_rope_head_dim``
    (``latent``; not split by TP).

    Window: ``config.sliding_window - 1`` for models with ``get_attention_sliding_window_size``
    (gpt-oss, Gemma-4, Beam, Mellum, MuseGlimmer; Inkling: ``sliding_window_size - 1``); otherwise the
    first of ``sliding_window_size`` / ``sliding_window`` / ``window_size``; Llama-4 without one uses
    ``attention_chunk_size``.

    Example: gpt-oss-120b -> 18 full (odd ids) + 18 SWA layers, 8 KV heads x 64 on both, window 127.

    Raises :class:`InputError` for DeepSeek-V4 (see kvplan.geometry.dsv4), a config with no sliding-window layer,
    and missing/inconsistent fields. (SGLang's Gemma-2/3 override, which turns hybrid SWA memory off, is the
    engine's: :func:`kvplan.engines.sglang.pools.swa.swa_layers_from_config`.)  ``engine`` picks the nested-config
    rule of :func:`kvplan.hfconfig.normalize.flatten_config`.

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``is_hybrid_swa_model``,
    ``get_hybrid_layer_ids``, ``get_swa_num_kv_heads``; python/sglang/srt/utils/hf_transformers/config.py
    ``_apply_gemma4_attention_overrides``; python/sglang/srt/models/gpt_oss.py
    ``get_attention_sliding_window_size``, v0.5.23.
    """
    c = _flat(cfg, engine)
    archs = list(c.get("architectures") or [])
    arch = archs[0] if archs else str(c.get("model_type") or "")
    notes: list[str] = []
    if set(archs) & _DSV4_ARCHS:
        raise InputError(
            f"{arch} uses the DeepSeek-V4 pool, not the generic hybrid-SWA one",
            field="--model",
            hint="use kvplan.layouts.dsv4",
        )
    n = positive_int(c.get("num_hidden_layers"), "num_hidden_layers")
    aset = set(archs)
    full, swa = _split_layers(c, aset, n, arch)
    if not swa:
        raise InputError(
            f"{arch}: no sliding-window layer found",
            field="layer_types",
            hint="SGLang asserts a hybrid SWA model has at least one SWA layer",
        )
    latent = bool(aset & DOTS3_ARCHS) or bool(c.get("kv_lora_rank"))
    if latent:
        full_kv, full_hd, full_vhd, swa_kv, swa_hd, swa_vhd = _latent_geometry(c, notes)
    else:
        full_kv, full_hd, full_vhd, swa_kv, swa_hd, swa_vhd = _head_geometry(
            c, aset, notes, global_kv_needs_k_eq_v=global_kv_needs_k_eq_v
        )
    window, raw_window = _window(c, aset, arch, notes)
    return SWALayers(
        full_layers=full,
        swa_layers=swa,
        sliding_window=window,
        full_kv_heads=full_kv,
        full_head_dim=full_hd,
        full_v_head_dim=full_vhd,
        swa_kv_heads=swa_kv,
        swa_head_dim=swa_hd,
        swa_v_head_dim=swa_vhd,
        architecture=arch,
        num_hidden_layers=n,
        config_sliding_window=raw_window if isinstance(raw_window, int) else None,
        notes=tuple(notes),
        latent=latent,
    )


def _split_layers(c: Mapping[str, Any], aset: set[str], n: int, arch: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``get_hybrid_layer_ids``: (full, sliding-window) layer ids by architecture."""
    if "Llama4ForConditionalGeneration" in aset:
        return tuple(i for i in range(n) if (i + 1) % 4 == 0), tuple(i for i in range(n) if (i + 1) % 4 != 0)
    if aset & SWA_SINK_ARCHS or aset & LAYER_TYPES_ARCHS or aset & DOTS3_ARCHS:
        return _layer_types_split(c.get("layer_types"), n)
    if aset & STEP3P5_ARCHS:
        return _layer_types_split(c.get("layer_types"), n, cap=True)
    if aset & MIMO_V2_ARCHS or (c.get("is_hybrid_swa") and c.get("hybrid_layer_pattern") is not None):
        pat = c.get("hybrid_layer_pattern")
        if not isinstance(pat, list) or len(pat) < n:
            raise InputError(
                "MiMo-V2 config needs a 'hybrid_layer_pattern' list with one entry per layer",
                field="hybrid_layer_pattern",
            )
        return tuple(i for i in range(n) if pat[i] == 0), tuple(i for i in range(n) if pat[i] == 1)
    if "InklingForConditionalGeneration" in aset:
        loc = c.get("local_layer_ids")
        if not isinstance(loc, list) or len(set(loc)) != len(loc) or not all(0 <= i < n for i in loc):
            raise InputError(
                "Inkling config needs unique 'local_layer_ids' in [0, num_hidden_layers)", field="local_layer_ids"
            )
        return tuple(i for i in range(n) if i not in set(loc)), tuple(i for i in range(n) if i in set(loc))
    if "UnlimitedOCRForCausalLM" in aset:
        return (), tuple(range(n))
    raise InputError(
        f"{arch or 'this model'} is not a hybrid sliding-window model in SGLang 0.5.23",
        field="--model",
        hint="SGLang sizes it as a plain GQA/MHA pool",
    )


def _latent_geometry(c: Mapping[str, Any], notes: list[str]) -> tuple[int, int, int, int, int, int]:
    """MLA + SWA (Dots3): one latent row per layer, (1, kv_lora_rank + qk_rope_head_dim, 0) for the full layers and
    (1, swa_kv_lora_rank + swa_qk_rope_head_dim, 0) for the sliding ones (defaults: the full widths).

    Example: Dots3Config defaults -> (1, 576, 0, 1, 576, 0).
    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py (``swa_kv_lora_rank``), configs/dots3.py,
    model_executor/pool_configurator.py ``HybridSWAPoolConfigurator.__init__`` (MLA branch), v0.5.23."""
    if c.get("index_topk") is not None or c.get("index_head_dim") is not None:
        raise InputError(
            "an MLA sliding-window model with a DSA indexer (index_topk / index_head_dim set) is not "
            "modelled: SGLang adds the indexer row to the full layers only",
            field="--model",
        )
    full = positive_int(c.get("kv_lora_rank"), "kv_lora_rank") + positive_int(
        c.get("qk_rope_head_dim"), "qk_rope_head_dim"
    )
    swa_lora = c.get("swa_kv_lora_rank") if c.get("swa_kv_lora_rank") is not None else c.get("kv_lora_rank")
    swa_rope = c.get("swa_qk_rope_head_dim") if c.get("swa_qk_rope_head_dim") is not None else c.get("qk_rope_head_dim")
    swa = positive_int(swa_lora, "swa_kv_lora_rank") + positive_int(swa_rope, "swa_qk_rope_head_dim")
    notes.append(
        f"MLA sliding window: full rows {full} values (kv_lora_rank + qk_rope_head_dim), sliding rows "
        f"{swa} (swa_kv_lora_rank + swa_qk_rope_head_dim), not split by TP"
    )
    return 1, full, 0, 1, swa, 0


def _head_geometry(
    c: Mapping[str, Any], aset: set[str], notes: list[str], *, global_kv_needs_k_eq_v: bool = True
) -> tuple[int, int, int, int, int, int]:
    """(full KV heads, head_dim, v_head_dim, SWA KV heads, head_dim, v_head_dim); Gemma-4 states its shapes
    SWA-first."""
    if aset & GEMMA4_ARCHS:
        full_hd = positive_int(c.get("global_head_dim") or c.get("head_dim"), "global_head_dim")
        swa_hd = positive_int(c.get("head_dim"), "head_dim")
        swa_kv = positive_int(c.get("num_key_value_heads"), "num_key_value_heads")
        # transformers 5.19 reads ``getattr(self, "attention_k_eq_v", True)``: a config without the field counts as
        # k_eq_v; only an explicit false keeps the sliding KV heads on the full layers
        use_global = c.get("num_global_key_value_heads") is not None and (
            c.get("attention_k_eq_v", True) is not False or not global_kv_needs_k_eq_v
        )
        full_kv = positive_int(c["num_global_key_value_heads"], "num_global_key_value_heads") if use_global else swa_kv
        gate = (
            "only with attention_k_eq_v (transformers per_layer_config, SGLang 0.5.22+)"
            if global_kv_needs_k_eq_v
            else "whenever set (SGLang 0.5.11 - 0.5.21)"
        )
        notes.append(
            f"Gemma-4: full layers use global_head_dim {full_hd} and {full_kv} KV heads "
            f"(num_global_key_value_heads {gate}), sliding layers head_dim {swa_hd} / {swa_kv} KV heads "
            "(SGLang _apply_gemma4_attention_overrides)"
        )
        return full_kv, full_hd, full_hd, swa_kv, swa_hd, swa_hd
    full_kv = _total_kv_heads(c)
    full_hd = _head_dim(c)
    full_vhd = positive_int(c.get("v_head_dim") or full_hd, "v_head_dim")
    swa_hd = positive_int(c.get("swa_head_dim") or full_hd, "swa_head_dim")
    swa_vhd = positive_int(c.get("swa_v_head_dim") or swa_hd, "swa_v_head_dim")
    other = c.get("attention_other_setting")
    if c.get("swa_num_key_value_heads") is not None:
        swa_kv = positive_int(c["swa_num_key_value_heads"], "swa_num_key_value_heads")
    elif isinstance(other, Mapping) and other.get("num_attention_groups") is not None:
        swa_kv = positive_int(other["num_attention_groups"], "attention_other_setting.num_attention_groups")
    else:
        swa_kv = full_kv
    return full_kv, full_hd, full_vhd, swa_kv, swa_hd, swa_vhd


def _window(c: Mapping[str, Any], aset: set[str], arch: str, notes: list[str]) -> tuple[int, Any]:
    """(the window the model code attends over, the config's raw value)."""
    raw_window = next(
        (c[k] for k in ("sliding_window_size", "sliding_window", "window_size") if c.get(k) is not None), None
    )
    if aset & _WINDOW_MINUS_ONE:
        raw = c.get("sliding_window")
        window = positive_int(raw, "sliding_window") - 1
        notes.append(f"window {window} = sliding_window {raw} - 1 (the model's get_attention_sliding_window_size)")
        return window, raw
    if aset & _WINDOW_SIZE_MINUS_ONE:
        raw_window = c.get("sliding_window_size")
        return positive_int(raw_window, "sliding_window_size") - 1, raw_window
    if raw_window is not None:
        return positive_int(raw_window, "sliding_window"), raw_window
    if c.get("attention_chunk_size") is not None:
        window = positive_int(c["attention_chunk_size"], "attention_chunk_size")
        notes.append(f"window = attention_chunk_size {window} (resolve_sliding_window_size)")
        return window, raw_window
    raise InputError(
        f"{arch}: no sliding window in the config",
        field="sliding_window",
        hint="SGLang reads sliding_window_size / sliding_window / window_size",
    )
