"""How each engine shards the weights: the size of every parallel group, a tensor's shape on one rank, and which
pipeline stage loads it.

Per engine (:data:`ENGINE_SHARDING`):

* SGLang v0.5.23 (sgl-project/sglang python/sglang/srt/...): attention over ``attn_tp = tp / attn_dp``
  (``layers/dp_attention.py``); experts ``n / ep`` per rank, each split by ``moe_tp = tp / ep``
  (``model_executor/model_runner_components/moe_ep_setup.py``, ``layers/moe/fused_moe_triton/layer.py
  FusedMoE.__init__``); dense MLP and (non-fused) shared experts over the full TP group (``DeepseekV2MLP``,
  ``parallel_group="tp"``); lm_head over attention TP only with ``--enable-dp-lm-head``.
* vLLM v0.33.0: attention over tp; with ``--enable-expert-parallel`` (``ep > 1``) experts are not TP-split
  (moe_tp 1), else over tp; data parallelism replicates the whole model per TP group (no attention DP here).

Both: KV heads per rank ``max(1, kv / attn_tp)`` (``layers/linear.py QKVParallelLinear.__init__``: one head
replicated when attn_tp >= kv heads); vocab padded to a multiple of 64 (64 * group if that does not divide) and
split over the group (``layers/vocab_parallel_embedding.py VocabParallelEmbedding.__init__``).  Under SGLang DP
attention the input embedding follows :data:`DP_ATTENTION_EMBEDDING` (DeepSeek family over attention TP,
``get_embedding_tp_kwargs``; DeepSeek-V4 replicated, ``DeepseekV4Model.__init__``).  Pipeline stages come from
:func:`kvplan.parallel.pp_layer_ranges` (each engine's ``get_pp_indices``); with tied embeddings and PP > 1 the
last stage builds its own lm_head.  MXFP4 expert buffers are padded by MoE backend (:data:`MXFP4_EXPERT_PADDING`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.weights.blocks import Arch
from kvplan.weights.inventory import tied_embeddings
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed

__all__ = ["DP_ATTENTION_EMBEDDING", "ENGINE_SHARDING", "MXFP4_EXPERT_PADDING", "VOCAB_PAD", "EngineSharding",
           "Sharding", "check_parallel", "expert_padding_multiples", "padded_vocab_per_rank", "plan_sharding",
           "pp_lm_head", "rank_shape", "stages_of"]

VOCAB_PAD = 64  # DEFAULT_VOCAB_PADDING_SIZE, sglang layers/vocab_parallel_embedding.py (vLLM: same)

# MXFP4 expert buffer alignment (hidden multiple, per-rank intermediate multiple) by MoE backend.
# vLLM v0.33.0 model_executor/layers/fused_moe/oracle/mxfp4.py
# mxfp4_round_up_hidden_size_and_intermediate_size; SGLang v0.5.23 layers/quantization/mxfp4.py
# Mxfp4MoEMethod.create_weights (marlin 256/128, SM100 flashinfer 128/128, triton_kernels -/64).
MXFP4_EXPERT_PADDING: dict[str, tuple[int, int]] = {
    "vllm-marlin": (256, 128),  # GPUs without native FP4 (A100, L40S ...): weight-only Marlin
    "vllm-trtllm": (256, 128),
    "vllm-flashinfer-cutlass": (128, 128),
    "vllm-cutlass": (128, 128),
    "vllm-deepgemm": (128, 128),
    "vllm-emulation": (32, 32),
    "sglang-marlin": (256, 128),
    "sglang-flashinfer-sm100": (128, 128),
    "sglang-triton-kernels": (1, 64),
    "none": (1, 1),
}

_KV_HEAD_FAMILIES = (Family.GQA, Family.HYBRID_SWA, Family.HYBRID_MAMBA)  # KV heads split by attention TP


@dataclass(frozen=True)
class EngineSharding:
    """One engine's group sizes: ``attn_tp(tp, attn_dp)``, ``moe_tp(tp, ep)``, and whether attention DP and the
    DP lm_head exist."""

    attn_tp: Callable[[int, int], int]
    moe_tp: Callable[[int, int], int]
    dp_attention: bool            # --enable-dp-attention splits the attention group (SGLang)
    dp_lm_head: bool              # --enable-dp-lm-head puts lm_head on attention TP (SGLang)
    divides_tp: tuple[str, ...]   # sizes that must divide tp


ENGINE_SHARDING: dict[str, EngineSharding] = {
    "sglang": EngineSharding(attn_tp=lambda tp, dp: tp // dp, moe_tp=lambda tp, ep: tp // ep, dp_attention=True,
                             dp_lm_head=True, divides_tp=("attn_dp_size", "ep_size")),
    "vllm": EngineSharding(attn_tp=lambda tp, dp: tp, moe_tp=lambda tp, ep: 1 if ep > 1 else tp,
                           dp_attention=False, dp_lm_head=False, divides_tp=()),
}

_DIVIDES_MESSAGE = {
    "attn_dp_size": "tp_size must be divisible by attn_dp_size (SGLang: attn_tp = tp / dp)",
    "ep_size": "tp_size must be divisible by ep_size (SGLang moe_tp = tp / ep)",
}

#: family -> (the input embedding's group given attn_tp, the note) under SGLang DP attention; others: full TP
DP_ATTENTION_EMBEDDING: dict[Family, tuple[Callable[[int], int], str]] = {
    Family.DSV4: (lambda attn_tp: 1,
                  "DP attention: DeepSeek-V4 input embedding replicated (DeepseekV4Model.__init__)"),
    Family.MLA: (lambda attn_tp: attn_tp,
                 "DP attention: input embedding split over attention TP (get_embedding_tp_kwargs)"),
    Family.DSA: (lambda attn_tp: attn_tp,
                 "DP attention: input embedding split over attention TP (get_embedding_tp_kwargs)"),
}


def check_parallel(*, engine: str, tp: int, pp: int, ep: int, attn_dp: int) -> EngineSharding:
    """The engine's rules, after checking the parallel sizes (positive integers; SGLang: attn_dp and ep divide tp)."""
    rules = ENGINE_SHARDING.get(engine) if isinstance(engine, str) else None
    if rules is None:
        raise InputError(f"engine must be sglang or vllm, not {engine!r}", field="engine")
    sizes = {"tp_size": tp, "pp_size": pp, "ep_size": ep, "attn_dp_size": attn_dp}
    for name, v in sizes.items():
        if not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive integer", field=name)
    for name in rules.divides_tp:
        if tp % sizes[name]:
            raise InputError(_DIVIDES_MESSAGE[name], field=name)
    return rules


@dataclass(frozen=True)
class Sharding:
    """The size of each parallel group on the largest rank, the effective EP, and the notes that explain them."""

    groups: Mapping[Group, int]
    attn_tp: int
    ep: int  # experts are split over this (1 when the model has no experts)
    notes: tuple[str, ...]


def plan_sharding(*, engine: str, family: Family, tp: int, ep: int, attn_dp: int, dp_lm_head: bool,
                  has_experts: bool, kv_heads: int) -> Sharding:
    """Group sizes of one engine (see the module docstring).

    Example: SGLang, DeepSeek-V3 (MLA), tp 8, attn_dp 8, ep 1: attn 1, tp 8, moe 8, emb 1 (attention TP), lm 8.
    """
    rules = ENGINE_SHARDING[engine]
    attn_tp, moe_tp = rules.attn_tp(tp, attn_dp), rules.moe_tp(tp, ep)
    notes: list[str] = []
    emb_group = tp
    emb_rule = DP_ATTENTION_EMBEDDING.get(family) if rules.dp_attention and attn_dp > 1 else None
    if emb_rule is not None:
        emb_group = emb_rule[0](attn_tp)
        notes.append(emb_rule[1])
    lm_group = attn_tp if (dp_lm_head and rules.dp_lm_head) else tp
    ep_eff = ep if has_experts else 1
    notes.append(f"attention over attn_tp={attn_tp}; dense MLP/shared experts over tp={tp}; "
                 f"experts /{ep_eff} per rank, each split by moe_tp={moe_tp}; vocab over {emb_group}/{lm_group}")
    if kv_heads and family in _KV_HEAD_FAMILIES and attn_tp > kv_heads:
        notes.append(f"{kv_heads} KV heads < attn_tp {attn_tp}: one KV head replicated per rank")
    groups = {Group.NONE: 1, Group.ATTN: attn_tp, Group.TP: tp, Group.MOE: moe_tp, Group.EMB: emb_group,
              Group.LM: lm_group}
    return Sharding(groups=groups, attn_tp=attn_tp, ep=ep_eff, notes=tuple(notes))


def expert_padding_multiples(expert_padding: Any) -> tuple[tuple[int, int] | None, tuple[str, ...]]:
    """(hidden multiple, per-rank intermediate multiple) of a :data:`MXFP4_EXPERT_PADDING` backend name or an
    explicit pair, and its note; (None, ()) without padding."""
    if expert_padding is None:
        return None, ()
    if isinstance(expert_padding, str):
        if expert_padding not in MXFP4_EXPERT_PADDING:
            raise InputError(f"unknown expert_padding {expert_padding!r}; one of "
                             + ", ".join(MXFP4_EXPERT_PADDING), field="expert_padding")
        pad = MXFP4_EXPERT_PADDING[expert_padding]
    elif isinstance(expert_padding, Sequence) and len(expert_padding) == 2 and all(
            isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in expert_padding):
        pad = (int(expert_padding[0]), int(expert_padding[1]))
    else:
        raise InputError(f"expert_padding must be a backend name or two positive integers, not {expert_padding!r}",
                         field="expert_padding")
    return pad, (f"expert buffers padded: hidden to a multiple of {pad[0]}, per-rank "
                 f"intermediate to a multiple of {pad[1]} ({expert_padding})",)


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


def rank_shape(t: Tensor, groups: Mapping[Group, int], ep: int,
               pad: tuple[int, int] | None = None) -> tuple[int, int, int]:
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
        head = fixed("lm_head", "lm_head", a.vocab, a.hidden, None, split=Split.VOCAB, group=Group.LM,
                     stage=Stage.LAST)
        return [head], ("tied embeddings with PP > 1: the last stage holds its own lm_head",)
    return [], ("tied embeddings: lm_head shares the embedding table",)
