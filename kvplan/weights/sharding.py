"""How each engine shards the weights: the size of every parallel group, a tensor's shape on one rank, and which
pipeline stage loads it.

Per engine:

* SGLang v0.5.23 (sgl-project/sglang python/sglang/srt/...): which group each part of a model shards on is read
  from that model's file (:data:`SGLANG_MODEL_LAYOUTS`, by architecture, :class:`ModelLayout`): attention over
  ``attn_tp = tp / attn_dp`` where the model builds it with ``parallel_group="attn_tp"`` (DeepSeek, Qwen3,
  gpt-oss, GLM ...) and over the full TP group where it reads ``get_parallel().tp_size`` (Llama, Qwen2, Mixtral,
  Gemma); the input embedding over attention TP, the full TP group or replicated under DP attention
  (``use_attn_tp_group=is_dp_attention_enabled()`` / ``get_embedding_tp_kwargs`` / ``enable_tp=not
  is_dp_attention_enabled()``); lm_head over attention TP only with ``--enable-dp-lm-head``
  (``use_attn_tp_group=get_parallel().enable_dp_lm_head``); dense MLP layers over the full TP group, replicated
  with ``--moe-dense-tp-size 1`` in the models that read it (``layers/layer_boundary/layout.py
  is_dense_ffn_fully_dp``); Mamba-2 / Gated-DeltaNet mixers over attention TP under DP attention
  (``layers/attention/mamba/mamba.py MambaMixer2.__init__``, ``runtime_context.py linear_attn_parallel_group``);
  shared experts over the full TP group (``DeepseekV2MLP parallel_group="tp"``); experts ``n / ep`` per rank,
  each split by ``moe_tp = tp / ep`` (``model_executor/model_runner_components/moe_ep_setup.py``,
  ``layers/moe/fused_moe_triton/layer.py FusedMoE.__init__``), whatever DP attention does.
* vLLM v0.25.1: attention, dense MLP, embedding and lm_head over tp; data parallelism replicates them per DP rank
  and flattens the MoE over ``tp * dp`` (``model_executor/layers/fused_moe/config.py
  FusedMoEParallelConfig.make``): experts TP-split over ``tp * dp``, or with ``--enable-expert-parallel``
  (``ep_size = tp * dp``) ``n / ep`` whole experts per rank (moe_tp 1).  Pass the DP size as ``attn_dp``.

Both: KV heads per rank ``max(1, kv / group)`` (``layers/linear.py QKVParallelLinear.__init__``: one head
replicated when the group >= kv heads); vocab padded to a multiple of 64 (64 * group if that does not divide) and
split over the group (``layers/vocab_parallel_embedding.py VocabParallelEmbedding.__init__``).  Pipeline stages
come from :func:`kvplan.parallel.pp_layer_ranges` (each engine's ``get_pp_indices``); with tied embeddings and
PP > 1 the last stage builds its own lm_head.  MXFP4 expert buffers are padded by MoE backend
(:data:`MXFP4_EXPERT_PADDING`; the backend each engine picks by GPU: :mod:`kvplan.weights.kernels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.readers import int_at_least, is_int_list
from kvplan.weights.blocks import Arch
from kvplan.weights.inventory import tied_embeddings
from kvplan.weights.rules import WEIGHT_RULES, WeightRules, weight_rules
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed

__all__ = [
    "DP_ATTENTION_EMBEDDING",
    "ENGINE_SHARDING",
    "MXFP4_EXPERT_PADDING",
    "SGLANG_MODEL_LAYOUTS",
    "VOCAB_PAD",
    "EngineSharding",
    "ModelLayout",
    "Sharding",
    "check_parallel",
    "expert_padding_multiples",
    "model_layout",
    "padded_vocab_per_rank",
    "plan_sharding",
    "pp_lm_head",
    "rank_shape",
    "stages_of",
]

VOCAB_PAD = 64  # DEFAULT_VOCAB_PADDING_SIZE, sglang layers/vocab_parallel_embedding.py (vLLM: same)

# MXFP4 expert buffer alignment (hidden multiple, per-rank intermediate multiple) by MoE backend.
# vLLM v0.25.1 model_executor/layers/fused_moe/oracle/mxfp4.py
# mxfp4_round_up_hidden_size_and_intermediate_size (v0.11.1: quantization/mxfp4.py Mxfp4MoEMethod.create_weights,
# same multiples); SGLang v0.5.23 layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights (marlin 256/128,
# SM100 flashinfer 128/128, triton_kernels -/64).
MXFP4_EXPERT_PADDING: dict[str, tuple[int, int]] = {
    "vllm-marlin": (256, 128),  # MARLIN / BATCHED_MARLIN (CUDA; XPU rounds hidden to 128)
    "vllm-trtllm": (256, 256),  # FlashInfer TRTLLM (SM100): hidden and intermediate to 256
    "vllm-flashinfer-cutlass": (128, 128),
    "vllm-cutlass": (128, 128),
    "vllm-deepgemm": (128, 128),
    "vllm-triton": (1, 64),  # OAI triton_kernels (SM90 / SM100 without FlashInfer): intermediate to 64
    "vllm-rocm": (256, 256),  # any other backend on ROCm (AITER, triton_kernels)
    "vllm-rocm-0.11": (128, 128),  # v0.11 ROCm triton_kernels: get_padding_alignment (256 on gfx950)
    "vllm-cpu": (32, 32),
    "vllm-emulation": (1, 64),  # falls to the default branch (intermediate to 64)
    "sglang-marlin": (256, 128),
    "sglang-flashinfer-sm100": (128, 128),
    "sglang-triton-kernels": (1, 64),
    "none": (1, 1),
}

_KV_HEAD_FAMILIES = (Family.GQA, Family.HYBRID_SWA, Family.HYBRID_MAMBA)  # KV heads split by attention TP

AttnGroup = Literal["attn_tp", "tp"]
EmbGroup = Literal["attn_tp", "tp", "replicated"]


@dataclass(frozen=True)
class ModelLayout:
    """Which group each part of one SGLang model shards on (``source``: its file under srt/models/, v0.5.23).

    ``attention`` / ``mixer``: the attention heads / Mamba-2 / Gated-DeltaNet mixers under DP attention
    (``"attn_tp"``: ``parallel_group="attn_tp"``; ``"tp"``: the layer reads ``get_parallel().tp_size``).
    ``embedding``: the input embedding without DP attention (``"tp"``: VocabParallelEmbedding; ``"replicated"``:
    an ``nn.Embedding``), ``dp_embedding`` under DP attention.  ``dp_lm_head``: the lm_head passes
    ``use_attn_tp_group=get_parallel().enable_dp_lm_head``.  ``dense_dp``: dense MLP layers are built with
    ``"replicated" if is_dense_ffn_fully_dp() else "tp"`` (``--moe-dense-tp-size 1`` replicates them).
    """

    source: str
    dp_note: str = ""  # the note under DP attention (generated from the groups when empty)
    attention: AttnGroup = "attn_tp"
    embedding: EmbGroup = "tp"
    dp_embedding: EmbGroup = "attn_tp"
    dp_lm_head: bool = True
    dense_dp: bool = False
    mixer: AttnGroup = "attn_tp"


_DEEPSEEK_V2 = ModelLayout(
    "deepseek_v2.py", "DP attention: input embedding split over attention TP (get_embedding_tp_kwargs)", dense_dp=True
)
_DEEPSEEK_V4 = ModelLayout(
    "deepseek_v4.py",
    "DP attention: DeepSeek-V4 input embedding replicated (DeepseekV4Model.__init__)",
    dp_embedding="replicated",
)
_LLAMA = ModelLayout("llama.py", attention="tp", dp_embedding="tp", mixer="tp")
_GEMMA3 = ModelLayout(
    "gemma3_causal.py (Gemma3TextScaledWordEmbedding is an nn.Embedding)",
    attention="tp",
    embedding="replicated",
    dp_embedding="replicated",
    dp_lm_head=False,
    mixer="tp",
)
_QWEN3_5 = ModelLayout("qwen3_5.py", dp_embedding="replicated")

#: SGLang v0.5.23 model layouts by architecture (the config's ``architectures[0]``, the wrapper's when nested)
SGLANG_MODEL_LAYOUTS: dict[str, ModelLayout] = {
    "DeepseekV2ForCausalLM": _DEEPSEEK_V2,
    "DeepseekV3ForCausalLM": _DEEPSEEK_V2,
    "DeepseekV32ForCausalLM": _DEEPSEEK_V2,
    "KimiK25ForConditionalGeneration": _DEEPSEEK_V2,  # kimi_k25.py wraps DeepseekV3ForCausalLM
    "GlmMoeDsaForCausalLM": _DEEPSEEK_V2,  # glm4_moe.py: class GlmMoeDsaForCausalLM(DeepseekV2ForCausalLM)
    "Glm4MoeLiteForCausalLM": ModelLayout("glm4_moe_lite.py", dense_dp=True),
    "DeepseekV4ForCausalLM": _DEEPSEEK_V4,  # embed_tokens enable_tp=not is_dp_attention_enabled()
    "DeepseekV41ForCausalLM": _DEEPSEEK_V4,  # configs/deepseek_v41.py renames it DeepseekV4ForCausalLM
    "Glm4MoeForCausalLM": ModelLayout("glm4_moe.py", dense_dp=True),
    "GptOssForCausalLM": ModelLayout("gpt_oss.py"),
    "Qwen3ForCausalLM": ModelLayout("qwen3.py (Qwen3Model(Qwen2Model) embedding)"),
    "Qwen3VLForConditionalGeneration": ModelLayout("qwen3_vl.py"),
    "Qwen2MoeForCausalLM": ModelLayout("qwen2_moe.py"),
    "Qwen3MoeForCausalLM": ModelLayout("qwen3_moe.py (Qwen3MoeModel(Qwen2MoeModel) embedding)"),
    "Qwen3VLMoeForConditionalGeneration": ModelLayout("qwen3_vl_moe.py"),
    "Qwen3NextForCausalLM": ModelLayout("qwen3_next.py"),
    "Qwen3_5ForConditionalGeneration": _QWEN3_5,
    "Qwen3_5MoeForConditionalGeneration": _QWEN3_5,
    "Qwen3_5MoeForCausalLM": _QWEN3_5,
    "NemotronHForCausalLM": ModelLayout("nemotron_h.py"),
    "Llama4ForConditionalGeneration": ModelLayout("llama4.py"),
    "BailingMoeV2ForCausalLM": ModelLayout("bailing_moe.py", dense_dp=True),
    "MiMoV2FlashForCausalLM": ModelLayout("mimo_v2.py", dense_dp=True),
    "LagunaForCausalLM": ModelLayout("laguna.py"),
    "MiniMaxM2ForCausalLM": ModelLayout("minimax_m2.py", dp_lm_head=False),
    "Qwen2ForCausalLM": ModelLayout("qwen2.py", attention="tp", dp_lm_head=False, mixer="tp"),
    "LlamaForCausalLM": _LLAMA,
    "MistralForCausalLM": _LLAMA,  # mistral.py: class MistralForCausalLM(LlamaForCausalLM)
    "Phi3ForCausalLM": _LLAMA,  # llama.py
    "MixtralForCausalLM": ModelLayout("mixtral.py", attention="tp", dp_embedding="tp", dp_lm_head=False, mixer="tp"),
    "Gemma2ForCausalLM": ModelLayout("gemma2.py", attention="tp", dp_embedding="tp", dp_lm_head=False, mixer="tp"),
    "Gemma3ForCausalLM": _GEMMA3,
    "Gemma3ForConditionalGeneration": _GEMMA3,
    "Gemma4ForConditionalGeneration": ModelLayout(
        "gemma4_causal.py (Gemma4TextScaledWordEmbedding = Gemma3TextScaledWordEmbedding)",
        attention="tp",
        embedding="replicated",
        dp_embedding="replicated",
        dp_lm_head=False,
        mixer="tp",
    ),
    "Ernie4_5_MoeForCausalLM": ModelLayout(
        "ernie4.py (LlamaAttention)", attention="tp", dp_embedding="tp", dp_lm_head=False, dense_dp=True, mixer="tp"
    ),
}

#: family -> (the input embedding's group given attn_tp, the note) under SGLang DP attention, for an architecture
#: not in :data:`SGLANG_MODEL_LAYOUTS`; others: full TP
DP_ATTENTION_EMBEDDING: dict[Family, tuple[Callable[[int], int], str]] = {
    Family.DSV4: (lambda attn_tp: 1, "DP attention: DeepSeek-V4 input embedding replicated (DeepseekV4Model.__init__)"),
    Family.MLA: (
        lambda attn_tp: attn_tp,
        "DP attention: input embedding split over attention TP (get_embedding_tp_kwargs)",
    ),
    Family.DSA: (
        lambda attn_tp: attn_tp,
        "DP attention: input embedding split over attention TP (get_embedding_tp_kwargs)",
    ),
}

_FALLBACK_DP_EMBEDDING: dict[Family, EmbGroup] = {
    Family.DSV4: "replicated",
    Family.MLA: "attn_tp",
    Family.DSA: "attn_tp",
}


def model_layout(architecture: str | None, family: Family) -> tuple[ModelLayout, bool]:
    """The SGLang layout of ``architecture`` and whether it was read from the engine (False: the fallback of its
    weight family, attention and mixers over attention TP, embedding by :data:`DP_ATTENTION_EMBEDDING`).

    Example: ``("LlamaForCausalLM", Family.GQA)`` -> attention over the full TP group, read; ``("FooForCausalLM",
    Family.MLA)`` -> the fallback (embedding over attention TP under DP attention), not read.
    """
    found = SGLANG_MODEL_LAYOUTS.get(architecture or "")
    if found is not None:
        return found, True
    rule = DP_ATTENTION_EMBEDDING.get(family)
    return ModelLayout(
        f"no layout read for {architecture or 'this architecture'}",
        rule[1] if rule else "",
        dp_embedding=_FALLBACK_DP_EMBEDDING.get(family, "tp"),
        mixer="tp",
    ), False


#: one engine's parallel-size rules (the sizes that must divide tp, the flags it has): its weight rules row
EngineSharding = WeightRules
ENGINE_SHARDING: dict[str, WeightRules] = WEIGHT_RULES

_DIVIDES_MESSAGE = {
    "attn_dp_size": "tp_size must be divisible by attn_dp_size (SGLang: attn_tp = tp / dp)",
    "ep_size": "tp_size must be divisible by ep_size (SGLang moe_tp = tp / ep)",
}


def check_parallel(
    *, engine: str, tp: int, pp: int, ep: int, attn_dp: int, moe_dense_tp_size: int | None = None
) -> EngineSharding:
    """The engine's rules, after checking the parallel sizes (positive integers; SGLang: attn_dp and ep divide tp,
    ``moe_dense_tp_size`` None, 1 or tp, as ``arg_groups/validation_hook.py`` asserts; vLLM has no such flag)."""
    rules = weight_rules(engine, strict=True)
    sizes = {"tp_size": tp, "pp_size": pp, "ep_size": ep, "attn_dp_size": attn_dp}
    for name, v in sizes.items():
        if not int_at_least(v, 1):
            raise InputError(f"{name} must be a positive integer", field=name)
    for name in rules.divides_tp:
        if tp % sizes[name]:
            raise InputError(_DIVIDES_MESSAGE[name], field=name)
    if moe_dense_tp_size is not None:
        if not rules.moe_dense_tp:
            raise InputError(f"moe_dense_tp_size is an SGLang flag; {engine} has none", field="moe_dense_tp_size")
        if isinstance(moe_dense_tp_size, bool) or moe_dense_tp_size not in (1, tp):
            raise InputError(
                f"moe_dense_tp_size only supports None, 1, or tp_size ({tp}) currently (SGLang), not "
                f"{moe_dense_tp_size!r}",
                field="moe_dense_tp_size",
            )
    return rules


@dataclass(frozen=True)
class Sharding:
    """The size of each parallel group on the largest rank, the effective EP, and the notes that explain them."""

    groups: Mapping[Group, int]
    attn_tp: int  # the attention heads' group (the KV heads per rank follow it)
    ep: int  # experts are split over this (1 when the model has no experts)
    notes: tuple[str, ...]


_EMB_SIZE: dict[EmbGroup, Callable[[int, int], int]] = {
    "attn_tp": lambda tp, attn_tp: attn_tp,
    "tp": lambda tp, attn_tp: tp,
    "replicated": lambda tp, attn_tp: 1,
}


def _sglang_groups(
    *, layout: ModelLayout, tp: int, ep: int, attn_dp: int, dp_lm_head: bool, moe_dense_tp_size: int | None
) -> dict[Group, int]:
    """SGLang's group sizes for one model layout (see :class:`ModelLayout`)."""
    attn_tp = tp // attn_dp
    dp = attn_dp > 1
    emb = _EMB_SIZE[layout.dp_embedding if dp else layout.embedding](tp, attn_tp)
    return {
        Group.NONE: 1,
        Group.ATTN: attn_tp if layout.attention == "attn_tp" else tp,
        Group.MIXER: attn_tp if layout.mixer == "attn_tp" else tp,
        Group.TP: tp,
        Group.DENSE: 1 if (moe_dense_tp_size == 1 and layout.dense_dp) else tp,
        Group.MOE: tp // ep,
        Group.EMB: emb,
        Group.LM: attn_tp if (dp and dp_lm_head and layout.dp_lm_head) else tp,
    }


def _vllm_groups(*, tp: int, ep: int, dp: int) -> dict[Group, int]:
    """vLLM's group sizes: everything over tp but the MoE, TP-split over ``tp * dp`` or, with expert parallelism,
    whole experts per rank."""
    groups = dict.fromkeys(Group, tp)
    groups[Group.NONE] = 1
    groups[Group.MOE] = 1 if ep > 1 else tp * dp
    return groups


def plan_sharding(
    *,
    engine: str,
    family: Family,
    tp: int,
    ep: int,
    attn_dp: int,
    dp_lm_head: bool,
    has_experts: bool,
    kv_heads: int,
    architecture: str | None = None,
    moe_dense_tp_size: int | None = None,
) -> Sharding:
    """Group sizes of one engine (see the module docstring).

    Example: SGLang, DeepSeek-V3 (``DeepseekV3ForCausalLM``), tp 8, attn_dp 8, ep 1: attn 1, tp 8, dense 8 (1 with
    ``moe_dense_tp_size=1``), moe 8, emb 1 (attention TP), lm 8 (1 with ``dp_lm_head``).  Llama-3 at tp 8, attn_dp
    8: attn 8 (llama.py shards attention on the full TP group), emb 8.
    """
    notes: list[str] = []
    rules = weight_rules(engine)
    if not rules.per_model_layout:
        groups = _vllm_groups(tp=tp, ep=ep, dp=attn_dp)
        if attn_dp > 1:
            notes.append(
                f"vLLM data parallelism {attn_dp}: attention, dense layers, embedding and lm_head "
                f"replicated per DP rank (over tp={tp}); MoE over tp x dp = {tp * attn_dp} "
                "(fused_moe/config.py FusedMoEParallelConfig.make)"
            )
    else:
        layout, read = model_layout(architecture, family)
        groups = _sglang_groups(
            layout=layout, tp=tp, ep=ep, attn_dp=attn_dp, dp_lm_head=dp_lm_head, moe_dense_tp_size=moe_dense_tp_size
        )
        if attn_dp > 1:
            notes.append(_dp_attention_note(layout, read, groups, attn_dp))
        if moe_dense_tp_size == 1 and tp > 1:
            notes.append(
                "--moe-dense-tp-size 1: dense MLP layers "
                + ("replicated (is_dense_ffn_fully_dp)" if layout.dense_dp else "still over tp (this model ignores it)")
            )
    notes.append(
        _groups_note(groups, tp=tp, attn_tp=tp // attn_dp if rules.dp_attention else tp, ep=ep if has_experts else 1)
    )
    attn = groups[Group.ATTN]
    if kv_heads and family in _KV_HEAD_FAMILIES and attn > kv_heads:
        notes.append(f"{kv_heads} KV heads < attention group {attn}: one KV head replicated per rank")
    return Sharding(groups=groups, attn_tp=attn, ep=ep if has_experts else 1, notes=tuple(notes))


def _dp_attention_note(layout: ModelLayout, read: bool, groups: Mapping[Group, int], attn_dp: int) -> str:
    if layout.dp_note:
        return layout.dp_note
    if not read:
        return f"DP attention {attn_dp}: {layout.source}; assumed attention over attention TP, embedding over tp"
    return (
        f"DP attention {attn_dp}: attention over {groups[Group.ATTN]}, input embedding over {groups[Group.EMB]}, "
        f"lm_head over {groups[Group.LM]} (sglang models/{layout.source})"
    )


def _groups_note(groups: Mapping[Group, int], *, tp: int, attn_tp: int, ep: int) -> str:
    """The one-line summary of the group sizes."""
    attn = groups[Group.ATTN]
    head = f"attention over attn_tp={attn}" if attn == attn_tp else f"attention over tp={attn}"
    dense = groups[Group.DENSE]
    mlp = (
        f"dense MLP/shared experts over tp={tp}"
        if dense == tp
        else f"dense MLP over {dense}, shared experts over tp={tp}"
    )
    return (
        f"{head}; {mlp}; experts /{ep} per rank, each split by moe_tp={groups[Group.MOE]}; vocab over "
        f"{groups[Group.EMB]}/{groups[Group.LM]}"
    )


def expert_padding_multiples(expert_padding: Any) -> tuple[tuple[int, int] | None, tuple[str, ...]]:
    """(hidden multiple, per-rank intermediate multiple) of a :data:`MXFP4_EXPERT_PADDING` backend name or an
    explicit pair, and its note; (None, ()) without padding."""
    if expert_padding is None:
        return None, ()
    if isinstance(expert_padding, str):
        if expert_padding not in MXFP4_EXPERT_PADDING:
            raise InputError(
                f"unknown expert_padding {expert_padding!r}; one of " + ", ".join(MXFP4_EXPERT_PADDING),
                field="expert_padding",
            )
        pad = MXFP4_EXPERT_PADDING[expert_padding]
    elif isinstance(expert_padding, Sequence) and len(expert_padding) == 2 and is_int_list(expert_padding, minimum=1):
        pad = (int(expert_padding[0]), int(expert_padding[1]))
    else:
        raise InputError(
            f"expert_padding must be a backend name or two positive integers, not {expert_padding!r}",
            field="expert_padding",
        )
    return pad, (
        f"expert buffers padded: hidden to a multiple of {pad[0]}, per-rank "
        f"intermediate to a multiple of {pad[1]} ({expert_padding})",
    )


def padded_vocab_per_rank(vocab: int, group: int) -> int:
    """Vocabulary rows on one rank: vocab padded to a multiple of 64 (of 64 * group when that does not divide),
    split over ``group``.  Example: 32,000 over 3 -> 32,064 / 3 = 10,688."""
    pad = VOCAB_PAD
    if (math.ceil(vocab / pad) * pad) % group:
        pad *= group
    return math.ceil(vocab / pad) * pad // group


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _split_shape(t: Tensor, g: int) -> tuple[int, int]:
    if t.split == Split.OUT:
        return math.ceil(t.rows / g), t.cols
    if t.split == Split.IN:
        return t.rows, math.ceil(t.cols / g)
    if t.split == Split.HEADS:
        return max(1, math.ceil(t.rows / g)) * t.head, t.cols
    if t.split == Split.VOCAB:
        return padded_vocab_per_rank(t.rows, g), t.cols
    return t.rows, t.cols


def _pad_expert(t: Tensor, rows: int, cols: int, pad: tuple[int, int]) -> tuple[int, int]:
    ph, pi = pad
    if t.split == Split.OUT:  # gate/up (rows = intermediate, cols = hidden) and their bias
        return _round_up(rows, pi), (_round_up(cols, ph) if cols > 1 else cols)
    if t.split == Split.IN:  # down (rows = hidden, cols = intermediate)
        return _round_up(rows, ph), _round_up(cols, pi)
    return _round_up(rows, ph), cols  # down bias


def rank_shape(
    t: Tensor, groups: Mapping[Group, int], ep: int, pad: tuple[int, int] | None = None
) -> tuple[int, int, int]:
    """(rows, cols, copies) of this tensor on the largest rank: ``split`` over its group's size, experts
    ``ceil(copies / ep)``, expert buffers rounded up to ``pad``."""
    rows, cols = _split_shape(t, groups.get(t.group, 1))
    copies = math.ceil(t.copies / ep) if t.expert else t.copies
    if pad is not None and t.expert:
        rows, cols = _pad_expert(t, rows, cols, pad)
    return rows, cols, copies


def stages_of(t: Tensor, ranges: Sequence[tuple[int, int]]) -> Sequence[int]:
    """The pipeline stages that load ``t``: its layer's stage; the first (embeddings, vision), the last (final
    norm, lm_head, MTP, a layer past the ranges) or every stage (engram)."""
    pp = len(ranges)
    if t.stage == Stage.FIRST:
        return (0,)
    if t.stage == Stage.EXTRA:
        return range(pp)
    if t.stage == Stage.LAYER and t.layer is not None:
        for s, (a, b) in enumerate(ranges):
            if a <= t.layer < b:
                return (s,)
    return (pp - 1,)


def pp_lm_head(a: Arch, pp: int) -> tuple[list[Tensor], tuple[str, ...]]:
    """Tied embeddings: one table, except under PP > 1, where the last stage builds its own lm_head (sglang
    deepseek_v2.py / llama.py).  Returns (the extra lm_head, if any; the note)."""
    if not tied_embeddings(a):
        return [], ()
    if pp > 1:
        head = fixed("lm_head", "lm_head", a.vocab, a.hidden, None, split=Split.VOCAB, group=Group.LM, stage=Stage.LAST)
        return [head], ("tied embeddings with PP > 1: the last stage holds its own lm_head",)
    return [], ("tied embeddings: lm_head shares the embedding table",)
