"""The KV family of a Hugging Face config: an ordered table of rules over its architectures, ``model_type`` and
per-layer types (``detect_family``).  Each rule names one :class:`kvplan.family.Family`; the first that matches
wins, GQA otherwise.

Source: SGLang v0.5.23 python/sglang/srt/configs/model_config.py (the architecture and model_type sets below).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kvplan.family import Family

# Architectures SGLang (v0.5.23, python/sglang/srt/configs/model_config.py) treats as MLA / DSA / DeepSeek-V4.
_DSV4_ARCHS = {
    "DeepseekV4ForCausalLM",
    "DeepseekV41ForCausalLM",
    "DeepseekV4ForCausalLMNextN",
    "DeepseekV4ForCausalLMDSpark",
}
_DSV4_MODEL_TYPES = {"deepseek_v4", "deepseek_v41"}
_DSA_ARCHS = {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"}
_DSA_MODEL_TYPES = {"deepseek_v32", "glm_moe_dsa"}
_MAMBA_MODEL_TYPES = {
    "qwen3_next",
    "nemotron_h",
    "falcon_h1",
    "granitemoehybrid",
    "kimi_linear",
    "jamba",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_5_text",
    "qwen3_5_moe_text",
    "nemotron_nano_v2",
}
_MAMBA_ARCHS = {
    "KimiLinearForCausalLM",
    "Qwen3NextForCausalLM",
    "NemotronHForCausalLM",
    "FalconH1ForCausalLM",
    "GraniteMoeHybridForCausalLM",
}
# SGLang v0.5.23 python/sglang/srt/configs/model_config.py is_hybrid_swa_model (Gemma-2/3 are turned off by a
# model override and sized as plain GQA).
_SWA_ARCHS = {
    "GptOssForCausalLM",
    "Gemma4ForCausalLM",
    "Gemma4ForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration",
    "MiMoV2FlashForCausalLM",
    "MiMoV2ForCausalLM",
    "MiMoV2MTP",
    "Llama4ForConditionalGeneration",
    "Step3p5ForCausalLM",
    "Step3p7ForConditionalGeneration",
    "GraniteSWAForCausalLM",
    "GraniteMoeSWAForCausalLM",
    "IQuestQ1ForCausalLM",
    "MellumForCausalLM",
    "MuseGlimmerForCausalLM",
    "MuseGlimmerForConditionalGeneration",
    "InklingForConditionalGeneration",
    "UnlimitedOCRForCausalLM",
    "EmbeddingGemma2Model",
}


# Dots3 (SGLang v0.5.23 python/sglang/srt/configs/dots3.py: ``is_hybrid_swa = True``): MLA on every layer, a sliding
# window on the ``sliding_attention`` ones; SGLang sizes it with the MLA branch of HybridSWAPoolConfigurator.
_MLA_SWA_ARCHS = {"Dots3NoteForCausalLM", "Dots3NoteForCausalLMNextN"}


class _Facts(NamedTuple):
    """What the family rules look at: the architectures, the model_type and the per-layer types."""

    cfg: Mapping[str, Any]
    archs: frozenset[str]
    model_type: str
    layer_types: list[Any] | None


def _dsv4(f: _Facts) -> Family | None:
    hit = f.archs & _DSV4_ARCHS or f.model_type in _DSV4_MODEL_TYPES or f.cfg.get("compress_ratios")
    return Family.DSV4 if hit else None


def _dsa(f: _Facts) -> Family | None:
    hit = (
        f.archs & _DSA_ARCHS
        or f.model_type in _DSA_MODEL_TYPES
        or (f.cfg.get("kv_lora_rank") and f.cfg.get("index_head_dim"))
    )
    return Family.DSA if hit else None


def _mamba(f: _Facts) -> Family | None:
    lt = f.layer_types
    hit = (
        f.archs & _MAMBA_ARCHS
        or f.model_type in _MAMBA_MODEL_TYPES
        or f.cfg.get("hybrid_override_pattern")
        or f.cfg.get("full_attention_interval")
        or (lt is not None and any(t in ("linear_attention", "mamba") for t in lt))
    )
    if not hit:
        return None
    if f.model_type == "granitemoehybrid" and lt is not None and "mamba" not in lt:
        return Family.GQA  # a Granite hybrid config without any mamba layer is plain attention
    return Family.HYBRID_MAMBA


def _mla_swa(f: _Facts) -> Family | None:
    """MLA with sliding-window layers (Dots3): hybrid SWA, checked before the DSA / MLA rules that its
    ``kv_lora_rank`` would otherwise match."""
    hit = f.archs & _MLA_SWA_ARCHS or (f.cfg.get("is_hybrid_swa") is True and f.cfg.get("kv_lora_rank"))
    return Family.HYBRID_SWA if hit else None


def _mla(f: _Facts) -> Family | None:
    return Family.MLA if f.cfg.get("kv_lora_rank") else None


def _swa(f: _Facts) -> Family | None:
    lt = f.layer_types
    hit = (
        f.archs & _SWA_ARCHS
        or f.cfg.get("is_hybrid_swa") is True
        or ("BeamForCausalLM" in f.archs and lt is not None and "sliding_attention" in lt)
        or ("LagunaForCausalLM" in f.archs and f.cfg.get("sliding_window"))
    )
    return Family.HYBRID_SWA if hit else None


# First match wins, in SGLang's order (ModelConfig checks DSV4, then DSA / MLA, then the hybrids); GQA otherwise.
_FAMILY_RULES: tuple[Callable[[_Facts], Family | None], ...] = (_dsv4, _mla_swa, _dsa, _mamba, _mla, _swa)


def detect_family(cfg: Mapping[str, Any]) -> Family:
    """The KV family of a flat config (:func:`flatten_config`): the first rule of ``_FAMILY_RULES`` that matches.

    Example: DeepSeek-V3 (``kv_lora_rank`` 512, no indexer) -> ``Family.MLA``; Llama-3.1 -> ``Family.GQA``;
    Dots3NoteForCausalLM (MLA + ``layer_types``) -> ``Family.HYBRID_SWA``.
    Source: SGLang v0.5.23 python/sglang/srt/configs/model_config.py (architecture and model_type sets above).
    """
    lt = cfg.get("layer_types")
    facts = _Facts(
        cfg=cfg,
        archs=frozenset(cfg.get("architectures") or []),
        model_type=str(cfg.get("model_type") or ""),
        layer_types=lt if isinstance(lt, list) else None,
    )
    for rule in _FAMILY_RULES:
        family = rule(facts)
        if family is not None:
            return family
    return Family.GQA
