"""One weight tensor of the inventory: its shape, where it lives, and how an engine may shard and store it.

:mod:`kvplan.weights.inventory` lists these per architecture; :mod:`kvplan.weights.sharding` turns ``split`` and
``group`` into the shape on one rank; :mod:`kvplan.weights.quant` prices that shape (``quant``, ``dtype``,
``expert``, ``path``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Group", "Split", "Stage", "Tensor", "fixed", "lin", "vec"]


class Split(StrEnum):
    """Which dimension a tensor-parallel group splits."""

    NONE = "none"  # replicated
    OUT = "out"  # output features (ColumnParallel, gate/up, rows of a vector)
    IN = "in"  # input features (RowParallel: o_proj, down_proj)
    HEADS = "heads"  # whole heads (QKV): max(1, ceil(heads / group)) heads per rank
    VOCAB = "vocab"  # vocabulary rows, padded (VocabParallelEmbedding)


class Group(StrEnum):
    """The parallel group that splits a tensor (its size per engine: :mod:`kvplan.weights.sharding`)."""

    NONE = "none"  # replicated on every rank
    ATTN = "attn"  # attention heads (attention TP in SGLang models that shard on it, else the full TP group)
    TP = "tp"  # the full TP group (shared experts)
    DENSE = "dense"  # dense MLP layers (the full TP group; replicated under SGLang --moe-dense-tp-size 1)
    MIXER = "mixer"  # Mamba-2 / Gated-DeltaNet mixers (attention TP under SGLang DP attention, else full TP)
    MOE = "moe"  # the MoE TP group (tp / ep in SGLang)
    EMB = "emb"  # the input embedding's group
    LM = "lm"  # the lm_head's group


class Stage(StrEnum):
    """Which pipeline stage(s) load a tensor."""

    LAYER = "layer"  # the stage that holds its decoder layer
    FIRST = "first"  # embeddings, vision tower
    LAST = "last"  # final norm, lm_head
    EXTRA = "extra"  # every stage (engram tables)
    MTP = "mtp"  # the MTP (NextN) layer: loaded only with speculative decoding, on the last stage
    DRAFT = "draft"  # a speculative draft's own tensors (DSpark stages), built only when it is on; last stage
    CKPT_ONLY = "ckpt_only"  # stored in the checkpoint, never loaded (the MTP layer's own embed / head)


@dataclass(frozen=True, slots=True)
class Tensor:
    """One weight tensor kind, repeated ``copies`` times (experts) in one layer.

    Parameters = ``rows * head * cols * copies`` (``head`` rows per head when ``split`` is HEADS).
    """

    comp: str  # breakdown component (attention, experts, norms ...)
    path: str  # Hugging Face module path (ignore-list matching)
    rows: int  # output features (vector length for vectors; heads for split HEADS)
    cols: int  # input features (1 for vectors)
    split: Split
    group: Group
    quant: bool  # a Linear weight that a quantization scheme may store compressed
    layer: int | None  # decoder layer index, None = embeddings / final norm / lm_head
    copies: int = 1  # experts in this tensor (split over EP)
    dtype: str | None = None  # storage dtype forced by the engine (fp32 sinks, bf16 gates)
    head: int = 1  # rows per head for split HEADS
    expert: bool = False  # a routed-expert tensor
    stage: Stage = Stage.LAYER

    @property
    def full_rows(self) -> int:
        return self.rows * self.head

    @property
    def params(self) -> int:
        return self.full_rows * self.cols * self.copies


def lin(
    comp: str,
    path: str,
    out: int,
    inp: int,
    split: Split,
    group: Group,
    layer: int | None,
    *,
    head: int = 1,
    copies: int = 1,
    expert: bool = False,
) -> Tensor:
    """A quantizable Linear weight ``[out * head, inp]``."""
    return Tensor(comp, path, out, inp, split, group, True, layer, copies=copies, head=head, expert=expert)


def fixed(
    comp: str,
    path: str,
    rows: int,
    cols: int,
    layer: int | None,
    *,
    split: Split = Split.NONE,
    group: Group = Group.NONE,
    dtype: str | None = None,
    head: int = 1,
    copies: int = 1,
    expert: bool = False,
    stage: Stage = Stage.LAYER,
) -> Tensor:
    """A tensor no quantization scheme compresses (router gates, sinks, tables): stored in ``dtype`` or the base
    dtype."""
    return Tensor(
        comp,
        path,
        rows,
        cols,
        split,
        group,
        False,
        layer,
        copies=copies,
        dtype=dtype,
        head=head,
        expert=expert,
        stage=stage,
    )


def vec(
    comp: str,
    path: str,
    n: int,
    layer: int | None,
    split: Split = Split.NONE,
    group: Group = Group.NONE,
    *,
    dtype: str | None = None,
    stage: Stage = Stage.LAYER,
) -> Tensor:
    """A vector (norm weight, bias, per-head scalar) of length ``n``: never quantized."""
    return Tensor(comp, path, n, 1, split, group, False, layer, dtype=dtype, stage=stage)
