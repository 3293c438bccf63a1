"""Every family detection of kvplan, in one place.

* :func:`detect_family`: the KV family of a Hugging Face config, as SGLang's ``ModelConfig`` reads it (what kvplan
  plans, shows and sweeps): the first matching rule of the families' :class:`~kvplan.family.DetectRule` rows
  (``kvplan.family.FAMILY_SPECS``), in their ``order``; GQA otherwise.
* :func:`vllm_family`: the family vLLM's model classes give a config (which picks vLLM's KV-spec builder);
* :func:`weights_family`: the family whose tensor layout the checkpoint's weights follow (the weight inventory);
* :func:`attention_family`: the attention kind SGLang's KV-dtype and page rules see for a family.

A family declared with ``archs`` / ``model_types`` in its :class:`~kvplan.family.DetectRule` (``shared``) is found by
all three readers; the built-in families' rules are predicates of this module.

Source: SGLang v0.5.23 python/sglang/srt/configs/model_config.py (the architecture and model_type sets below).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, NamedTuple

from kvplan.family import ATTENTION_FAMILIES, FAMILY_SPECS, DetectRule, Family

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


# Families kvplan cannot price: (architectures, model types, family name, what kvplan lacks for it).  A config of one
# of these is refused (:func:`unpriced_family`) rather than planned as plain attention.  Both engines serve them
# (vLLM v0.34 ``model_executor/models/{mamba,mamba2,falcon_mamba,lfm2,lfm2_moe,minimax_text_01,bamba,zamba2}.py``;
# SGLang v0.5.23 ``models/{lfm2,mamba,...}.py`` for some), with per-request state pools kvplan does not model.
_UNPRICED: tuple[tuple[frozenset[str], frozenset[str], str, str], ...] = (
    (  # by model type only: vLLM's attention-free path is planned for Nemotron-H-style configs (specs.py)
        frozenset(),
        frozenset({"mamba", "falcon_mamba"}),
        "pure Mamba (Mamba-1)",
        "every layer is a Mamba-1 state layer and kvplan has no pricing of a state-only model's pool",
    ),
    (
        frozenset(),
        frozenset({"mamba2"}),
        "pure Mamba-2",
        "every layer is a Mamba-2 state layer and kvplan has no pricing of a state-only model's pool",
    ),
    (
        frozenset({"Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration"}),
        frozenset({"lfm2", "lfm2_moe", "lfm2_vl"}),
        "LFM2 (short-convolution hybrid)",
        "the per-request conv state of its 'conv' layers (layer_types, conv_L_cache) is not priced",
    ),
    (
        frozenset({"MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM"}),
        frozenset({"minimax_text_01", "minimax_m1"}),
        "MiniMax-Text-01 / M1 (lightning-attention hybrid)",
        "the linear-attention state of its lightning layers (attn_type_list) is not priced",
    ),
    (
        frozenset({"BambaForCausalLM", "Zamba2ForCausalLM"}),
        frozenset({"bamba", "zamba2"}),
        "Bamba / Zamba2 (Mamba-2 hybrid)",
        "its attention-layer placement (attn_layer_indices / hybrid_layer_ids) is not read, so the Mamba-2 state "
        "and the attention KV cannot be split",
    ),
)


def unpriced_family(cfg: Mapping[str, Any]) -> str | None:
    """The one-line refusal for a config of a family kvplan cannot price (``_UNPRICED``), else None.

    Matched by ``architectures`` or ``model_type`` (a flat config: :func:`~kvplan.hfconfig.normalize.flatten_config`),
    or by short-convolution layers (``"conv"`` in ``layer_types``, LFM2's marker) in any other config.

    Example: ``{"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2"}`` -> "pure Mamba-2 model
    (Mamba2ForCausalLM): kvplan cannot plan it: every layer is a Mamba-2 state layer ...".
    """
    f = _facts(cfg)
    for archs, types, family, missing in _UNPRICED:
        if f.archs & archs or f.model_type in types:
            name = ", ".join(sorted(f.archs)) or f"model_type {f.model_type}"
            return f"{family} model ({name}): kvplan cannot plan it: {missing}"
    if f.layer_types is not None and "conv" in f.layer_types:
        name = ", ".join(sorted(f.archs)) or f"model_type {f.model_type or '?'}"
        return (
            f"short-convolution hybrid model ({name}): kvplan cannot plan it: the per-request conv state of its "
            "'conv' layers (layer_types) is not priced"
        )
    return None


def _refuse_unpriced(cfg: Mapping[str, Any]) -> None:
    """InputError on ``--model`` (exit 2, one line) for a family kvplan cannot price (:func:`unpriced_family`)."""
    why = unpriced_family(cfg)
    if why is not None:
        from kvplan.errors import InputError

        raise InputError(why, field="--model", hint="kvplan plans attention models and attention/state hybrids")


class _Facts(NamedTuple):
    """What the family rules look at: the architectures, the model_type and the per-layer types."""

    cfg: Mapping[str, Any]
    archs: frozenset[str]
    model_type: str
    layer_types: list[Any] | None


def _facts(cfg: Mapping[str, Any]) -> _Facts:
    lt = cfg.get("layer_types")
    return _Facts(
        cfg=cfg,
        archs=frozenset(cfg.get("architectures") or []),
        model_type=str(cfg.get("model_type") or ""),
        layer_types=lt if isinstance(lt, list) else None,
    )


def dsv4_rule(f: _Facts) -> Family | None:
    hit = f.archs & _DSV4_ARCHS or f.model_type in _DSV4_MODEL_TYPES or f.cfg.get("compress_ratios")
    return Family.DSV4 if hit else None


def dsa_rule(f: _Facts) -> Family | None:
    hit = (
        f.archs & _DSA_ARCHS
        or f.model_type in _DSA_MODEL_TYPES
        or (f.cfg.get("kv_lora_rank") and f.cfg.get("index_head_dim"))
    )
    return Family.DSA if hit else None


def mamba_rule(f: _Facts) -> Family | None:
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


def mla_swa_rule(f: _Facts) -> Family | None:
    """MLA with sliding-window layers (Dots3): hybrid SWA, checked before the DSA / MLA rules that its
    ``kv_lora_rank`` would otherwise match."""
    hit = f.archs & _MLA_SWA_ARCHS or (f.cfg.get("is_hybrid_swa") is True and f.cfg.get("kv_lora_rank"))
    return Family.HYBRID_SWA if hit else None


def mla_rule(f: _Facts) -> Family | None:
    return Family.MLA if f.cfg.get("kv_lora_rank") else None


def swa_rule(f: _Facts) -> Family | None:
    lt = f.layer_types
    hit = (
        f.archs & _SWA_ARCHS
        or f.cfg.get("is_hybrid_swa") is True
        or ("BeamForCausalLM" in f.archs and lt is not None and "sliding_attention" in lt)
        or ("LagunaForCausalLM" in f.archs and f.cfg.get("sliding_window"))
    )
    return Family.HYBRID_SWA if hit else None


Rule = Callable[[_Facts], "Family | None"]


def _declared(family: Family, rule: DetectRule) -> Rule:
    """The rule of a :class:`DetectRule`: its declared architectures / model types, then its predicate."""
    predicate: Rule | None = globals()[rule.predicate] if rule.predicate else None

    def match(f: _Facts) -> Family | None:
        if f.archs & rule.archs or f.model_type in rule.model_types:
            return family
        return predicate(f) if predicate is not None else None

    return match


@cache
def _rules() -> tuple[Rule, ...]:
    """Every family's rules in one first-match order (SGLang's: ModelConfig checks DSV4, then DSA / MLA, then the
    hybrids); built on first use from ``FAMILY_SPECS``."""
    rows = sorted((r.order, s.family, r) for s in FAMILY_SPECS.values() for r in s.detect)
    return tuple(_declared(family, r) for _, family, r in rows)


def _first(rules: tuple[Rule, ...], f: _Facts) -> Family | None:
    for rule in rules:
        family = rule(f)
        if family is not None:
            return family
    return None


def detect_family(cfg: Mapping[str, Any]) -> Family:
    """The KV family of a flat config (:func:`flatten_config`): the first of the families' rules that matches.

    Example: DeepSeek-V3 (``kv_lora_rank`` 512, no indexer) -> ``Family.MLA``; Llama-3.1 -> ``Family.GQA``;
    Dots3NoteForCausalLM (MLA + ``layer_types``) -> ``Family.HYBRID_SWA``.
    Source: SGLang v0.5.23 python/sglang/srt/configs/model_config.py (architecture and model_type sets above).
    A family kvplan cannot price (:func:`unpriced_family`: pure Mamba / Mamba-2, LFM2, ...) is an InputError.
    """
    _refuse_unpriced(cfg)
    return _first(_rules(), _facts(cfg)) or Family.GQA


@cache
def _shared_rules() -> tuple[Rule, ...]:
    rows = sorted((r.order, s.family, r) for s in FAMILY_SPECS.values() for r in s.detect if r.shared)
    return tuple(_declared(family, r) for _, family, r in rows)


def declared_family(cfg: Mapping[str, Any]) -> Family | None:
    """The family whose ``shared`` :class:`DetectRule` declares the config's architecture or model type (every
    reader -- SGLang's, vLLM's, the weight inventory's -- finds such a family the same way), else None."""
    return _first(_shared_rules(), _facts(cfg))


# ------------------------------------------------------------------------------------------------------------ vLLM


def vllm_family(cfg: Mapping[str, Any]) -> Family:
    """The family vLLM's model classes give a (normalised) config, which picks its spec builder.

    A declared family (:func:`declared_family`) first; DeepSeek-V4 caches (``compress_ratios`` or a ``deepseek_v4*``
    model type); MLA when :func:`~kvplan.hfconfig.layer_kinds.is_mla` (DSA with an ``index_topk``); otherwise by
    layer types: Mamba / GDN state layers -> hybrid Mamba, sliding-window layers -> hybrid SWA, else GQA
    (chunked-local layers count as full: the hybrid manager is off for them).  Example: Qwen3-Next
    (``full_attention_interval`` 4) -> hybrid_mamba; Gemma-3 (``sliding_window_pattern`` 6) -> hybrid_swa; Kimi-K2
    (``kv_lora_rank``) -> mla.  Source: vllm-project/vllm ``model_executor/models/*``, v0.33.0.
    """
    from kvplan.hfconfig.fields import model_type
    from kvplan.hfconfig.layer_kinds import STATE_KINDS, is_mla, layer_kinds

    _refuse_unpriced(cfg)
    declared = declared_family(cfg)
    if declared is not None:
        return declared
    if cfg.get("compress_ratios") is not None or model_type(cfg).startswith("deepseek_v4"):
        return Family.DSV4
    if is_mla(cfg):
        return Family.DSA if cfg.get("index_topk") is not None else Family.MLA
    kinds = set(layer_kinds(cfg))
    if kinds & STATE_KINDS:
        return Family.HYBRID_MAMBA
    return Family.HYBRID_SWA if "swa" in kinds else Family.GQA


# --------------------------------------------------------------------------------------------------------- weights


def _jamba(cfg: Mapping[str, Any]) -> bool:
    """Jamba: attention every ``attn_layer_period``-th layer (at ``attn_layer_offset``), Mamba-1 elsewhere."""
    return cfg.get("attn_layer_period") is not None and cfg.get("mamba_expand") is not None


# First match wins; GQA otherwise.  DSA = MLA with the DeepSeek sparse-attention indexer (index_topk).
_WEIGHT_RULES: tuple[tuple[Callable[[Mapping[str, Any], str], Any], Family], ...] = (
    (lambda cfg, mt: mt.startswith("deepseek_v4") or (cfg.get("compress_ratios") and cfg.get("o_groups")), Family.DSV4),
    (lambda cfg, mt: cfg.get("kv_lora_rank") and cfg.get("index_topk"), Family.DSA),
    (lambda cfg, mt: cfg.get("kv_lora_rank"), Family.MLA),
    (
        lambda cfg, mt: (
            cfg.get("hybrid_override_pattern")
            or cfg.get("linear_num_value_heads")
            or mt.startswith(("qwen3_next", "qwen3_5"))
            or _jamba(cfg)
        ),
        Family.HYBRID_MAMBA,
    ),
)


def weights_family(cfg: Mapping[str, Any]) -> Family:
    """The family whose tensor layout the model's weights follow: a declared family (:func:`declared_family`),
    else the first rule of ``_WEIGHT_RULES``.

    DSV4: ``model_type`` deepseek_v4* or compress_ratios with o_groups; DSA: ``kv_lora_rank`` and ``index_topk``;
    MLA: ``kv_lora_rank``; HYBRID_MAMBA: a Nemotron-H ``hybrid_override_pattern`` or Gated DeltaNet heads
    (Qwen3-Next / Qwen3.5); else GQA.  This is the layout of the weights, not the KV family
    (:func:`detect_family`): sliding-window models store GQA tensors, and Kimi-Linear (``kv_lora_rank`` beside
    linear attention) is inventoried as MLA.

    Example: DeepSeek-V3 -> ``Family.MLA``; GLM-5 (index_topk 2048) -> ``Family.DSA``; gpt-oss -> ``Family.GQA``.
    """
    declared = declared_family(cfg)
    if declared is not None:
        return declared
    mt = str(cfg.get("model_type") or "").lower()
    for matches, family in _WEIGHT_RULES:
        if matches(cfg, mt):
            return family
    return Family.GQA


# ------------------------------------------------------------------------------------------------------- attention


def attention_family(*, family: Family | str, config: Mapping[str, Any]) -> Family:
    """The family SGLang's KV-dtype and page rules see: an attention family as is; a hybrid resolves like its
    attention layers (MLA when the config has a ``kv_lora_rank``, else GQA).

    Example: Qwen3-Next (hybrid_mamba, GQA attention) -> ``Family.GQA``; Kimi-Linear (MLA layers) -> ``Family.MLA``.

    This is kvplan's reading (the hybrids' attention layers are plain MHA/GQA or MLA layers, which the rules
    treat by their attention kind); it is not one engine function.
    """
    if family in ATTENTION_FAMILIES:
        return Family(family)
    return Family.MLA if config.get("kv_lora_rank") else Family.GQA
