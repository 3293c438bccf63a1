"""Vision towers as the engines load them (one builder per family; :func:`vision_tower_tensors` dispatches).

Qwen2-VL / Qwen2.5-VL: a ViT over 3-D patches and a patch merger.  Both engines build the same modules
(vLLM v0.21.0 ``vllm/model_executor/models/qwen2_vl.py`` ``Qwen2VisionTransformer`` and ``qwen2_5_vl.py``
``Qwen2_5_VisionTransformer``; SGLang v0.5.15 ``srt/models/qwen2_vl.py`` / ``qwen2_5_vl.py``), sharded over the
TP group by default (``mm_encoder_tp_mode`` "weights"): q/k/v, ``fc1`` / ``gate_up_proj`` and the merger's first
Linear are ColumnParallel (rows and bias split), ``proj``, ``fc2`` / ``down_proj`` and the merger's second Linear
RowParallel (columns split, bias whole); the patch embedding (a bias-free ``Conv3d``) and the norms are
replicated.  Neither engine guards ``self.visual`` with the pipeline rank (vLLM
``Qwen2VLForConditionalGeneration.__init__``, SGLang the same class): every pipeline
stage builds and loads the tower, in the model dtype (published quantized builds leave ``visual.*`` unquantized).

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
from kvplan.weights.rules import WeightRules, weight_rules
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed, vec

__all__ = [
    "ARCHITECTURE_MODEL_TYPES",
    "EXAONE4_5_MODEL_TYPES",
    "GEMMA3_MODEL_TYPES",
    "GEMMA4_MODEL_TYPES",
    "GLM4V_MODEL_TYPES",
    "KIMI_K25_MODEL_TYPES",
    "LLAMA4_MODEL_TYPES",
    "MISTRAL3_MODEL_TYPES",
    "QWEN3_VL_MODEL_TYPES",
    "QWEN_VL_MODEL_TYPES",
    "VLLM_TOWER_MODALITIES",
    "exaone4_5_vision_tensors",
    "gemma4_vision_tensors",
    "glm4v_vision_tensors",
    "llama4_vision_tensors",
    "moonvit_vision_tensors",
    "pixtral_vision_tensors",
    "qwen3_vl_vision_tensors",
    "qwen_vl_vision_params",
    "qwen_vl_vision_tensors",
    "siglip_vision_tensors",
    "tower_model_type",
    "vision_tower_tensors",
    "vllm_tower_modalities",
]

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
    g, first, mm = Group.TP, Stage.EXTRA, d * m * m  # every PP stage builds the tower
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


# --------------------------------------------------------------------------- Qwen3-VL / Qwen3.5 / Qwen3.6

QWEN3_VL_MODEL_TYPES = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")


def qwen3_vl_vision_tensors(
    model_type: str, v: Mapping[str, Any], *, engine: str | WeightRules = "sglang"
) -> list[Tensor]:
    """The Qwen3-VL vision tower, also Qwen3.5's and Qwen3.6's (their ``Qwen3_5*ForConditionalGeneration`` reuse it).

    Both engines build one class for all four model types: vLLM v0.21.0 ``models/qwen3_vl.py``
    ``Qwen3_VisionTransformer`` (``qwen3_5.py`` ``Qwen3_5ForConditionalGeneration.__init__`` builds the same one),
    SGLang v0.5.15 ``srt/models/qwen3_vl.py`` ``Qwen3VLMoeVisionModel`` (``qwen3_5.py`` subclasses
    ``Qwen3VLForConditionalGeneration``).  With ``d`` = ``hidden_size``, ``f`` = ``intermediate_size``, ``o`` =
    ``out_hidden_size`` (the text width), ``m`` = ``spatial_merge_size``, ``P`` = ``num_position_embeddings``:

    * ``patch_embed.proj``: a ``Conv3d`` with bias, ``[d, c·t·p²]`` + ``d``, replicated;
    * ``pos_embed``: ``[P, d]`` (vLLM an ``nn.Embedding``, replicated; SGLang a ``VocabParallelEmbedding`` split
      over the attention-TP group, first PP rank only);
    * per block: two LayerNorms (``4d``); ``qkv`` ``[3d, d]`` + bias (QKVParallel), ``proj`` ``[d, d]`` + bias
      (RowParallel); ``linear_fc1`` ``[f, d]`` + bias (ColumnParallel), ``linear_fc2`` ``[d, f]`` + bias
      (RowParallel) -- a plain (not gated) MLP;
    * ``merger``: LayerNorm over ``d`` (``2d``), ``linear_fc1`` ``[d·m², d·m²]`` + bias (ColumnParallel),
      ``linear_fc2`` ``[o, d·m²]`` + bias (RowParallel);
    * one more merger per ``deepstack_visual_indexes`` entry (Qwen3-VL: three; Qwen3.5 / 3.6: none), whose
      LayerNorm is over ``d·m²`` (``use_postshuffle_norm``).

    Sharded over the TP group (vLLM ``mm_encoder_tp_mode`` "weights", the default; SGLang the attention-TP group,
    ``VisionAttention``), replicated with vLLM ``--mm-encoder-tp-mode data`` / SGLang ``--mm-enable-dp-encoder``
    (not modelled).  SGLang builds the tower without ``quant_config`` (always 16-bit); vLLM passes it, and
    Qwen3.6-27B-FP8's ``modules_to_not_convert`` lists every ``visual.*`` Linear (kvplan prices every tower in
    16 bit).  Neither guards the tower with the pipeline rank: every stage holds it (but SGLang's ``pos_embed``).

    Defaults (vLLM ``transformers_utils/configs/qwen3_5.py Qwen3_5VisionConfig``, transformers
    ``Qwen3VLVisionConfig``): ``in_channels`` 3, ``patch_size`` 16, ``temporal_patch_size`` 2,
    ``spatial_merge_size`` 2, ``num_position_embeddings`` 2,304; Qwen3-VL's ``deepstack_visual_indexes`` [8, 16, 24]
    when a copied config leaves it out (every released Qwen3-VL checkpoint has three), Qwen3.5's none
    (``model_type`` is the top-level one).

    Example: Qwen3-VL-8B (d 1,152, f 4,304, 27 blocks, p 16, o 4,096, three deepstack mergers): 1,770,624 +
    2,654,208 + 27 x 15,239,504 + 40,119,040 + 3 x 40,125,952 = 576,388,336; with the text model's 8,190,735,360
    that is 8,767,123,696, the checkpoint's safetensors count.
    """
    d = opt_int(v, "hidden_size", 1152)
    f = opt_int(v, "intermediate_size", 4304)
    n = opt_int(v, "depth", 27)
    o = opt_int(v, "out_hidden_size", 3584)
    p, t = opt_int(v, "patch_size", 16), opt_int(v, "temporal_patch_size", 2)
    c = opt_int(v, "in_channels", 3)
    m = opt_int(v, "spatial_merge_size", 2)
    npos = opt_int(v, "num_position_embeddings", 2304)
    ds = v.get("deepstack_visual_indexes")
    if ds is None:
        ds = [8, 16, 24] if model_type.startswith("qwen3_vl") else []
    k = len(ds) if isinstance(ds, (list, tuple)) else 0
    g, every, mm = Group.ATTN, Stage.EXTRA, d * m * m
    if weight_rules(engine).vision.pos_vocab_split:
        pos = fixed("vision", "visual.pos_embed", npos, d, None, split=Split.VOCAB, group=g, stage=Stage.FIRST)
    else:
        pos = fixed("vision", "visual.pos_embed", npos, d, None, stage=every)
    return [
        fixed("vision", "visual.patch_embed.proj", d, c * t * p * p, None, stage=every),
        vec("vision", "visual.patch_embed.proj.bias", d, None, stage=every),
        pos,
        vec("vision", "visual.blocks.norms", n * 4 * d, None, stage=every),
        fixed("vision", "visual.blocks.attn.qkv", n * 3 * d, d, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.blocks.attn.qkv.bias", n * 3 * d, None, Split.OUT, g, stage=every),
        fixed("vision", "visual.blocks.attn.proj", n * d, d, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.blocks.attn.proj.bias", n * d, None, stage=every),
        fixed("vision", "visual.blocks.mlp.linear_fc1", n * f, d, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.blocks.mlp.linear_fc1.bias", n * f, None, Split.OUT, g, stage=every),
        fixed("vision", "visual.blocks.mlp.linear_fc2", n * d, f, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.blocks.mlp.linear_fc2.bias", n * d, None, stage=every),
        # the final merger (norm over d) and the deepstack mergers (norm over d·m²), (1 + k) of the same Linears
        vec("vision", "visual.merger.norm", 2 * d + k * 2 * mm, None, stage=every),
        fixed("vision", "visual.merger.linear_fc1", (1 + k) * mm, mm, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.merger.linear_fc1.bias", (1 + k) * mm, None, Split.OUT, g, stage=every),
        fixed("vision", "visual.merger.linear_fc2", (1 + k) * o, mm, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.merger.linear_fc2.bias", (1 + k) * o, None, stage=every),
    ]


# --------------------------------------------------------------------------- GLM-4.1V / GLM-4.5V / GLM-4.6V

GLM4V_MODEL_TYPES = ("glm4v", "glm4v_moe")


def glm4v_vision_tensors(v: Mapping[str, Any]) -> list[Tensor]:
    """The GLM-4.1V vision tower (GLM-4.5V / 4.6V build the same one around a MoE text model).

    vLLM v0.21.0 ``models/glm4_1v.py`` ``Glm4vVisionTransformer``; SGLang v0.5.15 ``srt/models/glm4v.py``
    ``Glm4vVisionModel``.  With ``d`` = ``hidden_size``, ``o`` = ``out_hidden_size`` (the text width), ``I`` =
    ``intermediate_size``, ``m`` = ``spatial_merge_size``:

    * ``patch_embed.proj``: ``Conv3d`` with bias, ``[d, c·t·p²]`` + ``d``;
    * ``embeddings.position_embedding``: ``[(image_size / p)², d]`` (``nn.Embedding``, replicated);
    * per block: two RMSNorms (``2d``), ``qkv`` ``[3d, d]`` (bias only with ``attention_bias``, default off),
      ``proj`` ``[d, d]``, a gated MLP ``gate_up_proj`` ``[2o, d]`` / ``down_proj`` ``[d, o]`` -- the blocks' MLP
      width is ``out_hidden_size``, not ``intermediate_size``; no biases;
    * ``post_conv_layernorm`` and ``post_layernorm`` (RMSNorm ``d`` each), ``downsample`` a ``Conv2d``
      ``[o, d, m, m]`` + bias ``o`` (replicated);
    * ``merger``: ``proj`` ``[o, o]`` (ColumnParallel), ``post_projection_norm`` LayerNorm ``2o``, ``gate_up_proj``
      ``[2I, o]`` and ``down_proj`` ``[o, I]``, bias-free.

    q/k/v, the MLPs and the merger are split over the TP group (vLLM ``mm_encoder_tp_mode`` "weights"; SGLang over
    its attention-TP group unless ``--mm-enable-dp-encoder``); every pipeline stage builds the tower; 16-bit.

    Example: GLM-4.1V-9B (d 1,536, o 4,096, I 13,696, 24 blocks, p 14, t 2, image 336): 1,807,872 + 884,736 +
    24 x 28,314,624 + 25,172,992 + 185,081,856 = 892,498,432.
    """
    d = opt_int(v, "hidden_size", 1536)
    o = opt_int(v, "out_hidden_size", 4096)
    i = opt_int(v, "intermediate_size", 13696)
    n = opt_int(v, "depth", 24)
    p, t = opt_int(v, "patch_size", 14), opt_int(v, "temporal_patch_size", 2)
    c, m = opt_int(v, "in_channels", 3), opt_int(v, "spatial_merge_size", 2)
    npos = (opt_int(v, "image_size", 336) // p) ** 2
    g, every = Group.ATTN, Stage.EXTRA
    ts = [
        fixed("vision", "visual.patch_embed.proj", d, c * t * p * p, None, stage=every),
        vec("vision", "visual.patch_embed.proj.bias", d, None, stage=every),
        fixed("vision", "visual.embeddings.position_embedding", npos, d, None, stage=every),
        vec("vision", "visual.blocks.norms", n * 2 * d, None, stage=every),
        fixed("vision", "visual.blocks.attn.qkv", n * 3 * d, d, None, split=Split.OUT, group=g, stage=every),
        fixed("vision", "visual.blocks.attn.proj", n * d, d, None, split=Split.IN, group=g, stage=every),
        fixed("vision", "visual.blocks.mlp.gate_up_proj", n * 2 * o, d, None, split=Split.OUT, group=g, stage=every),
        fixed("vision", "visual.blocks.mlp.down_proj", n * d, o, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.post_norms", 2 * d, None, stage=every),
        fixed("vision", "visual.downsample", o, d * m * m, None, stage=every),
        vec("vision", "visual.downsample.bias", o, None, stage=every),
        fixed("vision", "visual.merger.proj", o, o, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.merger.post_projection_norm", 2 * o, None, stage=every),
        fixed("vision", "visual.merger.gate_up_proj", 2 * i, o, None, split=Split.OUT, group=g, stage=every),
        fixed("vision", "visual.merger.down_proj", o, i, None, split=Split.IN, group=g, stage=every),
    ]
    if v.get("attention_bias"):
        ts.append(vec("vision", "visual.blocks.attn.qkv.bias", n * 3 * d, None, Split.OUT, g, stage=every))
    return ts


# --------------------------------------------------------------------------- Gemma-3 (SigLIP)

GEMMA3_MODEL_TYPES = ("gemma3",)


def siglip_vision_tensors(
    v: Mapping[str, Any], text_hidden: int, *, engine: str | WeightRules = "sglang"
) -> list[Tensor]:
    """Gemma-3's SigLIP encoder and its projector, as vLLM v0.21.0 ``models/gemma3_mm.py``
    ``Gemma3ForConditionalGeneration`` (``siglip.py`` ``SiglipVisionModel``, ``Gemma3MultiModalProjector``) and
    SGLang v0.5.15 ``srt/models/gemma3_mm.py`` (``siglip.py``) build them.  With ``h`` = ``hidden_size``, ``i`` =
    ``intermediate_size``, ``H`` the text width:

    * ``patch_embedding``: ``Conv2d`` ``[h, c·p²]`` + bias ``h``, replicated;
    * ``position_embedding``: ``[(image_size / p)², h]`` (vLLM ``nn.Embedding``, replicated; SGLang a
      ``VocabParallelEmbedding``, split over TP);
    * per layer: two LayerNorms (``4h``); ``qkv_proj`` ``[3h, h]`` + bias (QKVParallel), ``out_proj`` ``[h, h]`` +
      bias (RowParallel); ``fc1`` ``[i, h]`` + bias (ColumnParallel), ``fc2`` ``[h, i]`` + bias (RowParallel);
    * ``post_layernorm`` (``2h``); no pooling head (``vision_use_head`` off);
    * projector: ``mm_input_projection_weight`` ``[h, H]`` (a plain parameter, replicated) and
      ``mm_soft_emb_norm`` (``h``).

    Every pipeline stage builds it; 16-bit.  Example: gemma-3-27b-it (h 1,152, i 4,304, 27 layers, p 14, image
    896, H 5,376): 1,771,776 + 4,718,592 + 27 x 15,239,504 + 2,304 + 6,194,304 = 423,060,336, and with the text
    model 27,432,406,640, the checkpoint's count (the same sum as the generic ViT below, now sharded).
    """
    h = opt_int(v, "hidden_size", 1152)
    i = opt_int(v, "intermediate_size", 4304)
    n = opt_int(v, "num_hidden_layers", 27)
    p, c = opt_int(v, "patch_size", 14), opt_int(v, "num_channels", 3)
    npos = (opt_int(v, "image_size", 896) // p) ** 2
    ga, gt, every = Group.ATTN, Group.TP, Stage.EXTRA
    pre = "vision_tower.vision_model"
    if weight_rules(engine).vision.pos_vocab_split:
        pos = fixed(
            "vision", f"{pre}.embeddings.position_embedding", npos, h, None, split=Split.VOCAB, group=gt, stage=every
        )
    else:
        pos = fixed("vision", f"{pre}.embeddings.position_embedding", npos, h, None, stage=every)
    return [
        fixed("vision", f"{pre}.embeddings.patch_embedding", h, c * p * p, None, stage=every),
        vec("vision", f"{pre}.embeddings.patch_embedding.bias", h, None, stage=every),
        pos,
        vec("vision", f"{pre}.encoder.layers.layer_norms", n * 4 * h, None, stage=every),
        fixed(
            "vision",
            f"{pre}.encoder.layers.self_attn.qkv_proj",
            n * 3 * h,
            h,
            None,
            split=Split.OUT,
            group=ga,
            stage=every,
        ),
        vec("vision", f"{pre}.encoder.layers.self_attn.qkv_proj.bias", n * 3 * h, None, Split.OUT, ga, stage=every),
        fixed(
            "vision", f"{pre}.encoder.layers.self_attn.out_proj", n * h, h, None, split=Split.IN, group=ga, stage=every
        ),
        vec("vision", f"{pre}.encoder.layers.self_attn.out_proj.bias", n * h, None, stage=every),
        fixed("vision", f"{pre}.encoder.layers.mlp.fc1", n * i, h, None, split=Split.OUT, group=gt, stage=every),
        vec("vision", f"{pre}.encoder.layers.mlp.fc1.bias", n * i, None, Split.OUT, gt, stage=every),
        fixed("vision", f"{pre}.encoder.layers.mlp.fc2", n * h, i, None, split=Split.IN, group=gt, stage=every),
        vec("vision", f"{pre}.encoder.layers.mlp.fc2.bias", n * h, None, stage=every),
        vec("vision", f"{pre}.post_layernorm", 2 * h, None, stage=every),
        fixed("vision", "multi_modal_projector.mm_input_projection_weight", h, text_hidden, None, stage=every),
        vec("vision", "multi_modal_projector.mm_soft_emb_norm", h, None, stage=every),
    ]


# --------------------------------------------------------------------------- Gemma-4

GEMMA4_MODEL_TYPES = ("gemma4",)


def gemma4_vision_tensors(
    v: Mapping[str, Any], text_hidden: int, *, engine: str | WeightRules = "sglang"
) -> list[Tensor]:
    """Gemma-4's vision encoder and ``embed_vision`` projection.

    Modules (transformers 5.25 ``models/gemma4/modeling_gemma4.py`` ``Gemma4VisionModel``, which vLLM v0.21.0
    ``models/gemma4_mm.py`` ``Gemma4ForConditionalGeneration.__init__`` instantiates with ``AutoModel.from_config``;
    SGLang v0.5.15 ``srt/models/gemma4_vision.py`` ``Gemma4VisionEncoder`` re-implements it): with ``h`` =
    ``hidden_size``, ``i`` = ``intermediate_size``, ``nh`` / ``nkv`` heads of ``hd`` = ``head_dim``:

    * ``patch_embedder.input_proj`` ``[h, 3p²]`` (no bias) and ``position_embedding_table`` ``[2, P, h]``
      (``P`` = ``position_embedding_size``, 10,240);
    * per layer: ``q/k/v/o`` ``[nh·hd, h]``, ``[nkv·hd, h]`` x 2, ``[h, nh·hd]`` (no bias), q/k norms (``hd``
      each; the v norm has no weight), four RMSNorms (``4h``), a gated MLP ``gate/up`` ``[i, h]`` and ``down``
      ``[h, i]``;
    * ``embed_vision.embedding_projection`` ``[H, h]`` (``H`` the text width; its norm has no weight).

    vLLM's tower is plain transformers ``nn.Linear``: replicated on every TP rank and built on every pipeline stage.
    SGLang splits q/k/v, o and the MLP over the attention-TP group (``ClippableQKVParallelLinear``,
    ``ClippableGateUpParallelLinear``, ``ClippableRowParallelLinear`` in ``layers/clippable_linear.py``), keeps the
    patch embedder and the projection whole (``ReplicatedLinear``), and builds them on the first PP rank only.
    Priced in 16 bit (kvplan does so for every tower; a build that quantizes it would be overestimated).
    ``head_dim`` defaults to ``h / nh`` and ``nkv`` to ``nh`` when a copied config leaves them out.

    Example: gemma-4-31B (h 1,152, i 4,304, 27 layers, 16 heads of 72, p 16, H 5,376): 884,736 + 23,592,960 +
    27 x 20,187,792 + 6,193,152 = 575,741,232.
    """
    h = opt_int(v, "hidden_size", 768)
    i = opt_int(v, "intermediate_size", 3072)
    n = opt_int(v, "num_hidden_layers", 16)
    nh = opt_int(v, "num_attention_heads", 12)
    nkv = opt_int(v, "num_key_value_heads", nh)
    hd = opt_int(v, "head_dim", h // nh if nh else 64)
    p = opt_int(v, "patch_size", 16)
    npos = opt_int(v, "position_embedding_size", 10 * 1024)
    sgl = weight_rules(engine).vision.gemma4_tp_first_stage
    g = Group.ATTN if sgl else Group.NONE
    sp_out, sp_in = (Split.OUT, Split.IN) if sgl else (Split.NONE, Split.NONE)
    st = Stage.FIRST if sgl else Stage.EXTRA
    pre = "vision_tower.encoder.layers"
    return [
        fixed("vision", "vision_tower.patch_embedder.input_proj", h, 3 * p * p, None, stage=st),
        fixed("vision", "vision_tower.patch_embedder.position_embedding_table", 2 * npos, h, None, stage=st),
        fixed("vision", f"{pre}.self_attn.qkv", n * (nh + 2 * nkv) * hd, h, None, split=sp_out, group=g, stage=st),
        fixed("vision", f"{pre}.self_attn.o_proj", n * h, nh * hd, None, split=sp_in, group=g, stage=st),
        vec("vision", f"{pre}.self_attn.qk_norms", n * 2 * hd, None, stage=st),
        vec("vision", f"{pre}.layernorms", n * 4 * h, None, stage=st),
        fixed("vision", f"{pre}.mlp.gate_up", n * 2 * i, h, None, split=sp_out, group=g, stage=st),
        fixed("vision", f"{pre}.mlp.down_proj", n * h, i, None, split=sp_in, group=g, stage=st),
        fixed("vision", "embed_vision.embedding_projection", text_hidden, h, None, stage=st),
    ]


# --------------------------------------------------------------------------- Kimi-K2.5 / K2.6 (MoonViT)

KIMI_K25_MODEL_TYPES = ("kimi_k25",)


def moonvit_vision_tensors(
    v: Mapping[str, Any], text_hidden: int, *, engine: str | WeightRules = "sglang"
) -> list[Tensor]:
    """Kimi-K2.5's MoonViT and its patch-merging projector.

    vLLM v0.21.0 ``models/kimi_k25.py`` ``KimiK25ForConditionalGeneration.__init__`` (``kimi_k25_vit.py``
    ``MoonViT3dPretrainedModel``, ``KimiK25MultiModalProjector``); SGLang v0.5.15 ``srt/models/kimi_k25.py`` (the
    same class names; its ``MLP2`` from ``kimi_vl_moonvit.py``).  With ``d`` = ``vt_hidden_size``, ``i`` =
    ``vt_intermediate_size``, ``k`` = the merge kernel's area (``merge_kernel_size`` 2 x 2), ``H`` =
    ``text_hidden_size``:

    * ``patch_embed.proj``: ``Conv2d`` ``[d, 3p²]`` + bias ``d``; ``pos_emb.weight`` ``[h0, w0, d]``
      (``init_pos_emb_height`` x ``init_pos_emb_width``, 64 x 64), replicated;
    * per layer: two LayerNorms (``4d``), ``wqkv`` ``[3d, d]`` + bias, ``wo`` ``[d, d]`` + bias, ``mlp.fc0``
      ``[i, d]`` + bias, ``mlp.fc1`` ``[d, i]`` + bias; ``final_layernorm`` (``2d``);
    * ``mm_projector``: ``pre_norm`` LayerNorm ``2d``, ``linear_1`` ``[k·d, k·d]`` + bias, ``linear_2`` ``[H, k·d]``
      + bias, replicated (``ReplicatedLinear`` in both).

    vLLM splits ``wqkv`` / ``wo`` and the MLP over TP (QKV/Row/Column/RowParallelLinear); SGLang splits the
    attention over its attention-TP group (``VisionAttention``) and keeps the MLP as plain ``nn.Linear`` on every
    rank.  The tower is cast to the language model's dtype (16-bit; SGLang passes no quantization config unless
    ModelSlim) and built on every pipeline stage.

    Example: Kimi-K2.5 (d 1,152, i 4,304, 27 layers, p 14, 64 x 64 positions, H 7,168): 678,528 + 4,718,592 +
    27 x 15,239,504 + 2,304 + 54,277,888 = 471,143,920.
    """
    d = opt_int(v, "vt_hidden_size", opt_int(v, "hidden_size", 1152))
    i = opt_int(v, "vt_intermediate_size", opt_int(v, "intermediate_size", 4304))
    n = opt_int(v, "vt_num_hidden_layers", opt_int(v, "num_hidden_layers", 27))
    p = opt_int(v, "patch_size", 14)
    npos = opt_int(v, "init_pos_emb_height", 64) * opt_int(v, "init_pos_emb_width", 64)
    mk = v.get("merge_kernel_size") or [2, 2]
    k = int(mk[0]) * int(mk[1]) if isinstance(mk, (list, tuple)) and len(mk) == 2 else 4
    h = opt_int(v, "text_hidden_size", text_hidden)
    g, every, kd = Group.ATTN, Stage.EXTRA, k * d
    mlp_g, mlp_out, mlp_in = (
        (Group.NONE, Split.NONE, Split.NONE)
        if weight_rules(engine).vision.moonvit_mlp_replicated
        else (g, Split.OUT, Split.IN)
    )
    pre = "vision_tower.encoder.blocks"
    return [
        fixed("vision", "vision_tower.patch_embed.proj", d, 3 * p * p, None, stage=every),
        vec("vision", "vision_tower.patch_embed.proj.bias", d, None, stage=every),
        fixed("vision", "vision_tower.patch_embed.pos_emb.weight", npos, d, None, stage=every),
        vec("vision", f"{pre}.norms", n * 4 * d, None, stage=every),
        fixed("vision", f"{pre}.wqkv", n * 3 * d, d, None, split=Split.OUT, group=g, stage=every),
        vec("vision", f"{pre}.wqkv.bias", n * 3 * d, None, Split.OUT, g, stage=every),
        fixed("vision", f"{pre}.wo", n * d, d, None, split=Split.IN, group=g, stage=every),
        vec("vision", f"{pre}.wo.bias", n * d, None, stage=every),
        fixed("vision", f"{pre}.mlp.fc0", n * i, d, None, split=mlp_out, group=mlp_g, stage=every),
        vec("vision", f"{pre}.mlp.fc0.bias", n * i, None, mlp_out, mlp_g, stage=every),
        fixed("vision", f"{pre}.mlp.fc1", n * d, i, None, split=mlp_in, group=mlp_g, stage=every),
        vec("vision", f"{pre}.mlp.fc1.bias", n * d, None, stage=every),
        vec("vision", "vision_tower.encoder.final_layernorm", 2 * d, None, stage=every),
        vec("vision", "mm_projector.pre_norm", 2 * d, None, stage=every),
        fixed("vision", "mm_projector.linear_1", kd, kd, None, stage=every),
        vec("vision", "mm_projector.linear_1.bias", kd, None, stage=every),
        fixed("vision", "mm_projector.linear_2", h, kd, None, stage=every),
        vec("vision", "mm_projector.linear_2.bias", h, None, stage=every),
    ]


# --------------------------------------------------------------------------- Mistral-Small-3.x / Magistral (Pixtral)

MISTRAL3_MODEL_TYPES = ("mistral3",)


def pixtral_vision_tensors(
    v: Mapping[str, Any], top: Mapping[str, Any], text_hidden: int, *, engine: str | WeightRules = "sglang"
) -> list[Tensor]:
    """The Pixtral vision encoder of ``Mistral3ForConditionalGeneration`` and its projector.

    vLLM v0.21.0 ``models/mistral3.py`` (``init_vision_tower_for_mistral3`` -> ``pixtral.py``
    ``PixtralHFVisionModel``; ``Mistral3MultiModalProjector``, ``Mistral3PatchMerger``); SGLang v0.5.15
    ``srt/models/mistral.py`` ``Mistral3ForConditionalGeneration`` (``pixtral.py`` ``PixtralHFVisionModel``,
    transformers' ``Mistral3MultiModalProjector``).  With ``d`` = ``hidden_size``, ``i`` = ``intermediate_size``,
    ``m`` = ``spatial_merge_size`` (top level, 2), ``H`` the text width:

    * ``patch_conv``: ``Conv2d`` ``[d, c·p²]``, no bias; ``ln_pre`` RMSNorm ``d``; no position table (2-D RoPE);
    * per layer: ``attention_norm`` / ``ffn_norm`` (``2d``), q/k/v/o ``[d, d]`` each, a gated MLP ``gate_up``
      ``[2i, d]`` / ``down`` ``[d, i]``, all bias-free and split over TP (QKV / MergedColumn / RowParallel);
    * projector: RMSNorm ``d``, ``patch_merger.merging_layer`` ``[d, d·m²]`` (``nn.Linear``, replicated),
      ``linear_1`` ``[H, d]`` and ``linear_2`` ``[H, H]`` (bias only with ``multimodal_projector_bias``): vLLM
      splits these two (Column/RowParallel); SGLang uses transformers' module as is (replicated).

    Built on every pipeline stage, 16-bit.  Example: Magistral-Small-2509 (d 1,024, i 4,096, 24 layers, p 14,
    H 5,120): 602,112 + 1,024 + 24 x 16,779,264 + 35,652,608 = 438,958,080; with the text model's 23,572,403,200
    that is 24,011,361,280, the checkpoint's safetensors count.
    """
    d = opt_int(v, "hidden_size", 1024)
    i = opt_int(v, "intermediate_size", 4096)
    n = opt_int(v, "num_hidden_layers", 24)
    p, c = opt_int(v, "patch_size", 14), opt_int(v, "num_channels", 3)
    m = opt_int(top, "spatial_merge_size", 2)
    bias = bool(top.get("multimodal_projector_bias"))
    g, gt, every = Group.ATTN, Group.TP, Stage.EXTRA
    pg, po, pi = (
        (Group.NONE, Split.NONE, Split.NONE)
        if weight_rules(engine).vision.pixtral_projector_replicated
        else (gt, Split.OUT, Split.IN)
    )
    pre = "vision_tower.transformer.layers"
    ts = [
        fixed("vision", "vision_tower.patch_conv", d, c * p * p, None, stage=every),
        vec("vision", "vision_tower.ln_pre", d, None, stage=every),
        vec("vision", f"{pre}.norms", n * 2 * d, None, stage=every),
        fixed("vision", f"{pre}.attention.qkv_proj", n * 3 * d, d, None, split=Split.OUT, group=g, stage=every),
        fixed("vision", f"{pre}.attention.o_proj", n * d, d, None, split=Split.IN, group=g, stage=every),
        fixed("vision", f"{pre}.feed_forward.gate_up_proj", n * 2 * i, d, None, split=Split.OUT, group=gt, stage=every),
        fixed("vision", f"{pre}.feed_forward.down_proj", n * d, i, None, split=Split.IN, group=gt, stage=every),
        vec("vision", "multi_modal_projector.norm", d, None, stage=every),
        fixed("vision", "multi_modal_projector.patch_merger.merging_layer", d, d * m * m, None, stage=every),
        fixed("vision", "multi_modal_projector.linear_1", text_hidden, d, None, split=po, group=pg, stage=every),
        fixed(
            "vision", "multi_modal_projector.linear_2", text_hidden, text_hidden, None, split=pi, group=pg, stage=every
        ),
    ]
    if bias:
        ts += [
            vec("vision", "multi_modal_projector.linear_1.bias", text_hidden, None, po, pg, stage=every),
            vec("vision", "multi_modal_projector.linear_2.bias", text_hidden, None, stage=every),
        ]
    return ts


# --------------------------------------------------------------------------- Llama-4

LLAMA4_MODEL_TYPES = ("llama4",)


def llama4_vision_tensors(
    v: Mapping[str, Any], text_hidden: int, *, engine: str | WeightRules = "sglang"
) -> list[Tensor]:
    """Llama-4's vision encoder, pixel-shuffle adapter and projector.

    vLLM v0.21.0 ``models/mllama4.py`` ``Llama4ForConditionalGeneration.__init__`` (``Llama4VisionModel``,
    ``Llama4MultiModalProjector``); SGLang v0.5.15 ``srt/models/mllama4.py``.  With ``d`` = ``hidden_size``, ``i``
    = ``intermediate_size``, ``q`` / ``r`` = ``projector_input_dim`` / ``projector_output_dim``, ``H`` the text
    width:

    * ``patch_embedding.linear`` ``[d, c·p²]`` (an unfold + ColumnParallel Linear, no bias);
      ``class_embedding`` ``d``; ``positional_embedding_vlm`` ``[(image_size / p)² + 1, d]``; ``layernorm_pre`` /
      ``layernorm_post`` (``4d``);
    * per layer: two LayerNorms (``4d``), q/k/v ``[3d, d]`` + bias, o ``[d, d]`` + bias, ``fc1`` ``[i, d]`` + bias,
      ``fc2`` ``[d, i]`` + bias, split over TP;
    * ``vision_adapter.mlp``: ``fc1`` ``[q, i]``, ``fc2`` ``[r, q]`` (bias only with
      ``multi_modal_projector_bias``); ``multi_modal_projector.linear_1`` ``[H, vision_output_dim]``, no bias
      (ColumnParallel; ``vision_output_dim`` is the adapter's output, ``r``, when a copied config leaves it out).

    16-bit (SGLang's ``mllama4.py`` drops the quantization config for the tower when ``ignore`` lists
    ``model.layers.vision_model*`` and ``model.layers.multi_modal_projector*``, the FP8 builds' pattern).
    SGLang builds the tower only with ``--enable-multimodal`` (``configs/model_config.py`` turns multimodal off by
    default for ``Llama4ForConditionalGeneration``; ``mllama4.py`` then sets ``vision_model = None``), so under
    SGLang the tower is stored but not loaded (``Stage.CKPT_ONLY``); vLLM builds it on every pipeline stage.

    Example: Llama-4-Scout (d 1,408, i 5,632, 34 layers, p 14, image 336, q = r = 4,096, H 5,120): 827,904 +
    1,408 + 812,416 + 5,632 + 34 x 23,807,872 + 39,845,888 + 20,971,520 = 871,932,416.
    """
    d = opt_int(v, "hidden_size", 1408)
    i = opt_int(v, "intermediate_size", 5632)
    n = opt_int(v, "num_hidden_layers", 34)
    p, c = opt_int(v, "patch_size", 14), opt_int(v, "num_channels", 3)
    npos = (opt_int(v, "image_size", 336) // p) ** 2 + 1
    q = opt_int(v, "projector_input_dim", 4096)
    r = opt_int(v, "projector_output_dim", 4096)
    out = opt_int(v, "vision_output_dim", r)
    bias = bool(v.get("multi_modal_projector_bias"))
    g = Group.TP
    st = Stage.EXTRA if weight_rules(engine).vision.llama4_tower_built else Stage.CKPT_ONLY
    pre = "vision_model.model.layers"
    ts = [
        fixed("vision", "vision_model.patch_embedding.linear", d, c * p * p, None, split=Split.OUT, group=g, stage=st),
        vec("vision", "vision_model.class_embedding", d, None, stage=st),
        fixed("vision", "vision_model.positional_embedding_vlm", npos, d, None, stage=st),
        vec("vision", "vision_model.layernorms", 4 * d, None, stage=st),
        vec("vision", f"{pre}.layernorms", n * 4 * d, None, stage=st),
        fixed("vision", f"{pre}.self_attn.qkv_proj", n * 3 * d, d, None, split=Split.OUT, group=g, stage=st),
        vec("vision", f"{pre}.self_attn.qkv_proj.bias", n * 3 * d, None, Split.OUT, g, stage=st),
        fixed("vision", f"{pre}.self_attn.o_proj", n * d, d, None, split=Split.IN, group=g, stage=st),
        vec("vision", f"{pre}.self_attn.o_proj.bias", n * d, None, stage=st),
        fixed("vision", f"{pre}.mlp.fc1", n * i, d, None, split=Split.OUT, group=g, stage=st),
        vec("vision", f"{pre}.mlp.fc1.bias", n * i, None, Split.OUT, g, stage=st),
        fixed("vision", f"{pre}.mlp.fc2", n * d, i, None, split=Split.IN, group=g, stage=st),
        vec("vision", f"{pre}.mlp.fc2.bias", n * d, None, stage=st),
        fixed("vision", "vision_model.vision_adapter.mlp.fc1", q, i, None, split=Split.OUT, group=g, stage=st),
        fixed("vision", "vision_model.vision_adapter.mlp.fc2", r, q, None, split=Split.IN, group=g, stage=st),
        fixed("vision", "multi_modal_projector.linear_1", text_hidden, out, None, split=Split.OUT, group=g, stage=st),
    ]
    if bias:
        ts += [
            vec("vision", "vision_model.vision_adapter.mlp.fc1.bias", q, None, Split.OUT, g, stage=st),
            vec("vision", "vision_model.vision_adapter.mlp.fc2.bias", r, None, stage=st),
        ]
    return ts


# --------------------------------------------------------------------------- EXAONE-4.5

EXAONE4_5_MODEL_TYPES = ("exaone4_5",)


def exaone4_5_vision_tensors(v: Mapping[str, Any]) -> list[Tensor]:
    """EXAONE-4.5's tower: Qwen2.5-VL's (3-D patch embedding without bias, RMSNorm blocks, a gated MLP with biases,
    the patch merger) with grouped-query attention (vLLM v0.21.0 ``models/exaone4_5.py``
    ``EXAONE4_5_VisionTransformer`` subclasses ``Qwen2_5_VisionTransformer`` and swaps in
    ``Exaone4_5_VisionBlock``, whose ``qkv`` is a QKVParallelLinear over ``num_heads`` / ``num_key_value_heads`` heads
    of ``d / num_heads``, with bias).  ``qkv`` is ``[(nh + 2·nkv)·hd, d]`` + bias; the rest as
    :func:`qwen_vl_vision_tensors` with ``f`` = ``intermediate_size``.  SGLang 0.5.15 has no EXAONE-4.5 model file.
    ``num_key_value_heads`` defaults to 8 (transformers 5.25 ``Exaone4_5_VisionConfig``) when a copied config
    leaves it out.

    Example: EXAONE-4.5-33B (d 2,048, f 5,120, 28 blocks, 32 / 8 heads of 64, merger to 5,120): 2,408,448 +
    28 x 41,964,544 + 109,067,264 = 1,286,482,944.
    """
    d = opt_int(v, "hidden_size", 3584)
    f = opt_int(v, "intermediate_size", 3420)
    n = opt_int(v, "depth", 32)
    nh = opt_int(v, "num_heads", 16)
    nkv = opt_int(v, "num_key_value_heads", 8)
    hd = d // nh if nh else d
    p, t = opt_int(v, "patch_size", 14), opt_int(v, "temporal_patch_size", 2)
    c, m = opt_int(v, "in_channels", 3), opt_int(v, "spatial_merge_size", 2)
    o = opt_int(v, "out_hidden_size", 3584)
    g, every, mm, qkv = Group.TP, Stage.EXTRA, d * m * m, (nh + 2 * nkv) * hd
    return [
        fixed("vision", "visual.patch_embed.proj", d, c * t * p * p, None, stage=every),
        vec("vision", "visual.blocks.norms", n * 2 * d, None, stage=every),
        fixed("vision", "visual.blocks.attn.qkv", n * qkv, d, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.blocks.attn.qkv.bias", n * qkv, None, Split.OUT, g, stage=every),
        fixed("vision", "visual.blocks.attn.proj", n * d, nh * hd, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.blocks.attn.proj.bias", n * d, None, stage=every),
        fixed("vision", "visual.blocks.mlp.gate_up_proj", n * 2 * f, d, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.blocks.mlp.gate_up_proj.bias", n * 2 * f, None, Split.OUT, g, stage=every),
        fixed("vision", "visual.blocks.mlp.down_proj", n * d, f, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.blocks.mlp.down_proj.bias", n * d, None, stage=every),
        vec("vision", "visual.merger.ln_q", d, None, stage=every),
        fixed("vision", "visual.merger.mlp.0", mm, mm, None, split=Split.OUT, group=g, stage=every),
        vec("vision", "visual.merger.mlp.0.bias", mm, None, Split.OUT, g, stage=every),
        fixed("vision", "visual.merger.mlp.2", o, mm, None, split=Split.IN, group=g, stage=every),
        vec("vision", "visual.merger.mlp.2.bias", o, None, stage=every),
    ]


# --------------------------------------------------------------------------- dispatch


#: the wrapper architecture -> the top-level ``model_type`` of its family (a flattened config keeps the wrapper's
#: ``architectures`` but carries the text model's ``model_type``, e.g. "gemma3_text" or "kimi_k2")
ARCHITECTURE_MODEL_TYPES = {
    "Qwen2VLForConditionalGeneration": QWEN2_VL,
    "Qwen2_5_VLForConditionalGeneration": QWEN2_5_VL,
    "Qwen3VLForConditionalGeneration": "qwen3_vl",
    "Qwen3VLMoeForConditionalGeneration": "qwen3_vl_moe",
    "Qwen3_5ForConditionalGeneration": "qwen3_5",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Glm4vForConditionalGeneration": "glm4v",
    "Glm4vMoeForConditionalGeneration": "glm4v_moe",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Gemma4ForConditionalGeneration": "gemma4",
    "KimiK25ForConditionalGeneration": "kimi_k25",
    "Mistral3ForConditionalGeneration": "mistral3",
    "Llama4ForConditionalGeneration": "llama4",
    "Exaone4_5_ForConditionalGeneration": "exaone4_5",
}


def tower_model_type(cfg: Mapping[str, Any]) -> str:
    """The family key of a (nested or flattened) config: its wrapper architecture's, else its ``model_type``."""
    for key in ("_outer_architectures", "architectures"):
        archs = cfg.get(key)
        if isinstance(archs, list) and archs and str(archs[0]) in ARCHITECTURE_MODEL_TYPES:
            return ARCHITECTURE_MODEL_TYPES[str(archs[0])]
    return str(cfg.get("model_type") or "").lower()


def _vllm_modalities() -> dict[str, tuple[str, ...]]:
    both: tuple[str, ...] = ("image", "video")
    image: tuple[str, ...] = ("image",)
    table: dict[str, tuple[str, ...]] = dict.fromkeys(
        (*QWEN_VL_MODEL_TYPES, *QWEN3_VL_MODEL_TYPES, *GLM4V_MODEL_TYPES), both
    )
    table.update(dict.fromkeys((*GEMMA4_MODEL_TYPES, *EXAONE4_5_MODEL_TYPES), both))
    table.update(dict.fromkeys((*GEMMA3_MODEL_TYPES, *MISTRAL3_MODEL_TYPES, *LLAMA4_MODEL_TYPES), image))
    table.update(dict.fromkeys(KIMI_K25_MODEL_TYPES, ("vision_chunk",)))
    return table


#: the modalities vLLM marks each family's vision tower with (``with self._mark_tower_model(vllm_config, ...)`` in the
#: model's ``__init__``, vllm v0.34.0 ``models/qwen2_vl.py``, ``qwen2_5_vl.py``, ``qwen3_vl.py``, ``qwen3_vl_moe.py``,
#: ``qwen3_5.py``, ``glm4_1v.py``, ``gemma4_mm.py``, ``exaone4_5.py``: image + video; ``gemma3_mm.py``,
#: ``mistral3.py``, ``mllama4.py``: image; ``kimi_k25.py``: vision_chunk; v0.18.0 marks Llama-4 and Qwen3-VL the
#: same way).  ``_mark_tower_model`` builds no tower when ``--limit-mm-per-prompt`` gives zero for every one of them
#: (``--language-model-only`` gives zero for all).  Gemma-4's separate audio tower ("audio") is not a vision tower.
VLLM_TOWER_MODALITIES: dict[str, tuple[str, ...]] = _vllm_modalities()


def vllm_tower_modalities(cfg: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The modalities vLLM marks the vision tower of ``cfg`` with (:data:`VLLM_TOWER_MODALITIES`), or None for a
    family this module does not price (a generic ViT: kvplan cannot say which limits drop it).  Example:
    Llama-4-Scout -> ("image",); Qwen3-VL -> ("image", "video")."""
    return VLLM_TOWER_MODALITIES.get(tower_model_type(cfg))


def vision_tower_tensors(
    model_type: str,
    v: Mapping[str, Any],
    *,
    text_hidden: int,
    engine: str | WeightRules = "sglang",
    top: Mapping[str, Any] | None = None,
) -> list[Tensor] | None:
    """The tower of a top-level ``model_type`` this module prices, or None (the caller's generic ViT then);
    ``text_hidden`` is the text model's hidden size (the projector's output where the vision config omits it)."""
    if model_type in QWEN_VL_MODEL_TYPES:
        return qwen_vl_vision_tensors(model_type, v)
    if model_type in QWEN3_VL_MODEL_TYPES:
        return qwen3_vl_vision_tensors(model_type, v, engine=engine)
    if model_type in GLM4V_MODEL_TYPES:
        return glm4v_vision_tensors(v)
    if model_type in GEMMA3_MODEL_TYPES:
        return siglip_vision_tensors(v, text_hidden, engine=engine)
    if model_type in GEMMA4_MODEL_TYPES:
        return gemma4_vision_tensors(v, text_hidden, engine=engine)
    if model_type in KIMI_K25_MODEL_TYPES:
        return moonvit_vision_tensors(v, text_hidden, engine=engine)
    if model_type in MISTRAL3_MODEL_TYPES:
        return pixtral_vision_tensors(v, top or {}, text_hidden, engine=engine)
    if model_type in LLAMA4_MODEL_TYPES:
        return llama4_vision_tensors(v, text_hidden, engine=engine)
    if model_type in EXAONE4_5_MODEL_TYPES:
        return exaone4_5_vision_tensors(v)
    return None
