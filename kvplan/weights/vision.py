"""The Qwen2-VL and Qwen2.5-VL vision towers as the engines load them: a ViT over 3-D patches and a patch merger.

Both engines build the same modules (vLLM v0.21.0 ``vllm/model_executor/models/qwen2_vl.py``
``Qwen2VisionTransformer`` and ``qwen2_5_vl.py`` ``Qwen2_5_VisionTransformer``; SGLang v0.5.15
``srt/models/qwen2_vl.py`` / ``qwen2_5_vl.py``), sharded over the TP group by default (``mm_encoder_tp_mode``
"weights"): q/k/v, ``fc1`` / ``gate_up_proj`` and the merger's first Linear are ColumnParallel (rows and bias
split), ``proj``, ``fc2`` / ``down_proj`` and the merger's second Linear RowParallel (columns split, bias whole);
the patch embedding (a bias-free ``Conv3d``) and the norms are replicated.  The tower is loaded by the first
pipeline stage, in the model dtype (published quantized builds leave ``visual.*`` unquantized).

With ``d`` the ViT width, ``f`` its MLP width, ``c`` input channels, ``t`` / ``p`` the temporal / spatial patch,
``m`` the spatial merge and ``o`` the merger's output (the text model's hidden size):

* patch embedding ``[d, c·t·p²]``;
* per block, Qwen2-VL: two LayerNorms (weight + bias, ``4d``), ``qkv`` ``[3d, d]`` + bias, ``proj`` ``[d, d]`` +
  bias, ``fc1`` ``[f, d]`` + bias, ``fc2`` ``[d, f]`` + bias (``f = d x mlp_ratio``); Qwen2.5-VL: two RMSNorms
  (``2d``), the same attention, a gated MLP ``gate_up_proj`` ``[2f, d]`` + bias and ``down_proj`` ``[d, f]`` + bias
  (``f = intermediate_size``);
* merger: a norm over ``d`` (LayerNorm ``2d`` / RMSNorm ``d``), ``[d·m², d·m²]`` + bias, ``[o, d·m²]`` + bias.

Config keys by family (the Hugging Face config classes' defaults where a copied config leaves one out):
Qwen2-VL ``embed_dim`` 1,280, ``mlp_ratio`` 4, ``depth`` 32, ``in_chans`` 3, ``hidden_size`` = ``o`` 3,584
(transformers ``Qwen2VLVisionConfig``); Qwen2.5-VL ``hidden_size`` = ``d`` 1,280, ``intermediate_size`` 3,420,
``depth`` 32, ``out_hidden_size`` = ``o`` 3,584 (``Qwen2_5_VLVisionConfig``); ``patch_size`` 14,
``temporal_patch_size`` 2, ``spatial_merge_size`` 2 in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.weights.fields import opt_int
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed, vec

__all__ = ["QWEN_VL_MODEL_TYPES", "qwen_vl_vision_params", "qwen_vl_vision_tensors"]

QWEN2_VL = "qwen2_vl"
QWEN2_5_VL = "qwen2_5_vl"
QWEN_VL_MODEL_TYPES = (QWEN2_VL, QWEN2_5_VL)


def _dims(model_type: str, v: Mapping[str, Any]) -> tuple[int, int, int, int, int, int, bool]:
    """(d, f, depth, c·t·p², m, o, gated MLP) from a Qwen2-VL / Qwen2.5-VL ``vision_config``."""
    p, t = opt_int(v, "patch_size", 14), opt_int(v, "temporal_patch_size", 2)
    c = opt_int(v, "in_chans", opt_int(v, "in_channels", 3))
    m, depth = opt_int(v, "spatial_merge_size", 2), opt_int(v, "depth", 32)
    if model_type == QWEN2_VL:
        d = opt_int(v, "embed_dim", 1280)
        ratio = float(v.get("mlp_ratio") or 4)
        return d, int(d * ratio), depth, c * t * p * p, m, opt_int(v, "hidden_size", 3584), False
    d = opt_int(v, "hidden_size", 1280)
    return d, opt_int(v, "intermediate_size", 3420), depth, c * t * p * p, m, opt_int(v, "out_hidden_size", 3584), True


def qwen_vl_vision_tensors(model_type: str, v: Mapping[str, Any]) -> list[Tensor]:
    """The vision tower's tensors (module docstring), depth folded into the rows of each kind (every block has the
    same shapes, so the rank's share is the same).  ``model_type`` is the top-level one ("qwen2_vl" /
    "qwen2_5_vl"); any other gives []."""
    if model_type not in QWEN_VL_MODEL_TYPES:
        return []
    d, f, n, patch, m, o, gated = _dims(model_type, v)
    g, first, mm = Group.TP, Stage.FIRST, d * m * m
    norm = (2 * d) if gated else (4 * d)  # two RMSNorms or two LayerNorms (weight + bias) per block
    mlp_rows = 2 * f if gated else f
    return [
        fixed("vision", "visual.patch_embed.proj", d, patch, None, stage=first),
        vec("vision", "visual.blocks.norms", n * norm, None, stage=first),
        fixed("vision", "visual.blocks.attn.qkv", n * 3 * d, d, None, split=Split.OUT, group=g, stage=first),
        vec("vision", "visual.blocks.attn.qkv.bias", n * 3 * d, None, Split.OUT, g, stage=first),
        fixed("vision", "visual.blocks.attn.proj", n * d, d, None, split=Split.IN, group=g, stage=first),
        vec("vision", "visual.blocks.attn.proj.bias", n * d, None, stage=first),
        fixed("vision", "visual.blocks.mlp.up", n * mlp_rows, d, None, split=Split.OUT, group=g, stage=first),
        vec("vision", "visual.blocks.mlp.up.bias", n * mlp_rows, None, Split.OUT, g, stage=first),
        fixed("vision", "visual.blocks.mlp.down", n * d, f, None, split=Split.IN, group=g, stage=first),
        vec("vision", "visual.blocks.mlp.down.bias", n * d, None, stage=first),
        vec("vision", "visual.merger.ln_q", d if gated else 2 * d, None, stage=first),
        fixed("vision", "visual.merger.mlp.0", mm, mm, None, split=Split.OUT, group=g, stage=first),
        vec("vision", "visual.merger.mlp.0.bias", mm, None, Split.OUT, g, stage=first),
        fixed("vision", "visual.merger.mlp.2", o, mm, None, split=Split.IN, group=g, stage=first),
        vec("vision", "visual.merger.mlp.2.bias", o, None, stage=first),
    ]


def qwen_vl_vision_params(model_type: str, v: Mapping[str, Any]) -> int:
    """Parameters of the whole tower (every rank's shares together).

    Example: Qwen2-VL-7B (d 1,280, f 5,120, 32 blocks, c·t·p² 1,176, m 2, o 3,584): 1,505,280 + 32 x 19,677,440
    + 44,575,744 = 675,759,104; Qwen2.5-VL-7B (d 1,280, f 3,420, o 3,584): 1,505,280 + 32 x 19,702,200 +
    44,574,464 = 676,550,144.
    """
    return sum(t.params for t in qwen_vl_vision_tensors(model_type, v))
