"""Every weight tensor of a model, from its Hugging Face ``config.json``: the tensor inventory per architecture.

:func:`inventory` flattens the config with the one normaliser (:func:`kvplan.hfconfig.normalize.flatten_config`,
the engine's rule), checks the fields it reads (:func:`kvplan.weights.fields.check_weight_config`), picks the
weight-layout family (:func:`weights_family`) and lists the tensors: embeddings, one decoder layer per index
(:data:`LAYER_BUILDERS`, one builder per family), final norm, lm_head, the MTP layers the checkpoint stores, a
vision tower and DeepSeek-V4.1's engram tables.  Each tensor is a :class:`kvplan.weights.tensor.Tensor`; the
blocks it is made of are in :mod:`kvplan.weights.blocks`.

Sources: SGLang v0.5.23 model files (see :mod:`kvplan.weights.blocks`);
``models/deepseek_common/deepseek_weight_loader.py do_load_weights`` (the MTP layer's own embed_tokens and
shared_head.head are stored but not loaded); ``layers/engram.py EngramEmbedding`` (engram tables fp8 rows + one
e8m0 scale per 32).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kvplan.errors import InputError
from kvplan.family import FAMILY_SPECS, Family, resolve
from kvplan.hfconfig.detect import weights_family
from kvplan.hfconfig.normalize import flatten_config
from kvplan.weights.blocks import (
    GLM4_MOE,
    Arch,
    dense_mlp_width,
    dsv4_attention,
    gated_deltanet,
    gqa_attention,
    is_moe_layer,
    mamba1_mixer,
    mamba2_mixer,
    mla_attention,
    mlp,
    moe_block,
    num_experts,
)
from kvplan.weights.fields import check_weight_config, first_int, need_int, opt_int
from kvplan.weights.gemma4 import gemma4_layer, gemma4_model_tensors, is_gemma4
from kvplan.weights.rules import weight_rules
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed, lin, vec
from kvplan.weights.vision import tower_model_type, vision_tower_tensors

__all__ = ["DSV4_HC_MULT", "LAYER_BUILDERS", "Inventory", "count_params", "dsv4_hc_mult", "inventory", "weights_family"]

LayerBuilder = Callable[[Arch, int, str], list[Tensor]]

DSV4_HC_MULT = 4  # SGLang configs/deepseek_v4.py DeepSeekV4Config.hc_mult default (v0.5.23)


# --------------------------------------------------------------------------- family


def _model_type(cfg: Mapping[str, Any]) -> str:
    return str(cfg.get("model_type") or "").lower()


def _jamba(cfg: Mapping[str, Any]) -> bool:
    """Jamba: attention every ``attn_layer_period``-th layer (at ``attn_layer_offset``), Mamba-1 elsewhere."""
    return cfg.get("attn_layer_period") is not None and cfg.get("mamba_expand") is not None


# --------------------------------------------------------------------------- decoder layers


def _norms(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """Two RMSNorms per layer (Gemma-2/3 and later: four, pre and post each block)."""
    mt = a.model_type
    n = 4 if mt.startswith("gemma") and mt != "gemma" else 2
    return [vec("norms", f"{prefix}.layernorm{k}", a.hidden, i) for k in range(n)]


def _ffn(a: Arch, i: int, prefix: str) -> list[Tensor]:
    if is_moe_layer(a.cfg, i, engine=a.engine):
        return moe_block(a, i, prefix)
    return mlp(a, i, prefix, dense_mlp_width(a.cfg), "dense_mlp", Group.DENSE)


def _standard_layer(a: Arch, i: int, prefix: str, attention: list[Tensor]) -> list[Tensor]:
    return attention + _norms(a, i, prefix) + _ffn(a, i, f"{prefix}.mlp")


def _gqa_layer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    if is_gemma4(a):  # dense MLP beside the experts, global head geometry on full layers (kvplan.weights.gemma4)
        return gemma4_layer(a, i, prefix)
    return _standard_layer(a, i, prefix, gqa_attention(a, i, f"{prefix}.self_attn"))


def _latent_layer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    return _standard_layer(a, i, prefix, mla_attention(a, i, f"{prefix}.self_attn", indexer=i in a.indexer_layers))


def _full_attention(cfg: Mapping[str, Any], i: int) -> bool:
    """A Gated-DeltaNet hybrid's layer ``i`` is full attention: ``layer_types[i]``, else every
    ``full_attention_interval``-th layer."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and i < len(types):
        return types[i] not in ("linear_attention",)
    fai = opt_int(cfg, "full_attention_interval", 0, minimum=1)
    if fai:
        return (i + 1) % fai == 0
    return True


# Nemotron-H pattern letters -> the mixer of that layer (other letters: the norm only)
_PATTERN_MIXERS: dict[str, LayerBuilder] = {
    "M": mamba2_mixer,
    "*": gqa_attention,
    "-": lambda a, i, p: mlp(a, i, p, need_int(a.cfg, "intermediate_size"), "dense_mlp", Group.DENSE, gated=False),
    "E": lambda a, i, p: moe_block(a, i, p, gated=False),
}


def _hybrid_layer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """Nemotron-H (one mixer per layer, by ``hybrid_override_pattern``) or a Gated-DeltaNet hybrid (linear
    attention or gated full attention, then the MLP / MoE)."""
    pattern = a.cfg.get("hybrid_override_pattern")
    if _jamba(a.cfg):
        period = opt_int(a.cfg, "attn_layer_period", 1, minimum=1)
        attn = i % period == opt_int(a.cfg, "attn_layer_offset", 0)
        return _standard_layer(
            a, i, prefix, gqa_attention(a, i, f"{prefix}.self_attn") if attn else mamba1_mixer(a, i, f"{prefix}.mamba")
        )
    if pattern:
        mixer = _PATTERN_MIXERS.get(str(pattern)[i])
        ts = [vec("norms", f"{prefix}.norm", a.hidden, i)]
        return ts + mixer(a, i, f"{prefix}.mixer") if mixer else ts
    if _full_attention(a.cfg, i):
        attention = gqa_attention(a, i, f"{prefix}.self_attn", gated_q=True)
    else:
        attention = gated_deltanet(a, i, f"{prefix}.linear_attn")
    return _standard_layer(a, i, prefix, attention)


def dsv4_hc_mult(cfg: Mapping[str, Any]) -> int:
    """DeepSeek-V4 hyper-connection width: ``hc_mult``, else 4, the default of SGLang's config class
    (``configs/deepseek_v4.py DeepSeekV4Config.hc_mult``, v0.5.23) that a config without the key is read with."""
    v = cfg.get("hc_mult")
    return DSV4_HC_MULT if v is None else need_int(cfg, "hc_mult")


def _dsv4_layer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """DeepSeek-V4: attention of the layer's compress ratio, two norms, hyper-connection mixing (fp32,
    deepseek_v4.py make_hc_mixing_params), MoE on every layer."""
    h = a.hidden
    ratios = a.cfg.get("compress_ratios") or []
    ratio = int(ratios[i]) if i < len(ratios) else 0
    ts = dsv4_attention(a, i, f"{prefix}.attn", ratio)
    ts += [vec("norms", f"{prefix}.attn_norm", h, i), vec("norms", f"{prefix}.ffn_norm", h, i)]
    hc = dsv4_hc_mult(a.cfg)
    if hc:
        mix = (2 + hc) * hc
        ts += [
            fixed("hyper_connections", f"{prefix}.hc_fn", 2 * mix, hc * h, i, dtype="fp32"),
            fixed("hyper_connections", f"{prefix}.hc_base", 2 * mix + 6, 1, i, dtype="fp32"),
        ]
    return ts + moe_block(a, i, f"{prefix}.ffn")


def _lazy_layer(path: str) -> LayerBuilder:
    """The decoder-layer builder a :class:`~kvplan.family.FamilySpec` names (``"module:function"``)."""

    def build(a: Arch, i: int, prefix: str) -> list[Tensor]:
        builder: LayerBuilder = resolve(path)
        return builder(a, i, prefix)

    return build


#: one decoder-layer builder per weight-layout family (``FamilySpec.layer_builder``; sliding-window layers store GQA
#: tensors); the weight-layout family of a config is :func:`kvplan.hfconfig.detect.weights_family`
LAYER_BUILDERS: dict[Family, LayerBuilder] = {f: _lazy_layer(s.layer_builder) for f, s in FAMILY_SPECS.items()}


# --------------------------------------------------------------------------- model-level tensors


def _has_mtp(a: Arch) -> bool:
    """DeepSeek-style MTP (NextN) layers are inventoried for MLA / DSA / DeepSeek-V4 and GLM-4 MoE."""
    if a.family in (Family.MLA, Family.DSA, Family.DSV4):
        return True
    return a.family == Family.GQA and a.model_type.startswith(GLM4_MOE)


def _mtp_layers(a: Arch) -> list[Tensor]:
    """The MTP (NextN) modules as stored in the checkpoint (layer index >= num_hidden_layers)."""
    n = opt_int(a.cfg, "num_nextn_predict_layers", 0)
    if not n or not _has_mtp(a):
        return []
    h, build = a.hidden, LAYER_BUILDERS[a.family]
    out: list[Tensor] = []
    for j in range(n):
        i = a.num_layers + j
        pfx = f"model.layers.{i}"
        mtp_arch = replace(a, indexer_layers=a.indexer_layers | {i}) if a.indexer_layers else a
        ts = [
            *build(mtp_arch, i, pfx),
            vec("norms", f"{pfx}.enorm", h, i),
            vec("norms", f"{pfx}.hnorm", h, i),
            lin("mtp", f"{pfx}.eh_proj", h, 2 * h, Split.NONE, Group.NONE, i),
            vec("norms", f"{pfx}.shared_head.norm", h, i),
        ]
        out += [replace(t, comp="mtp", stage=Stage.MTP) for t in ts]
        if a.family != Family.DSV4:
            # the checkpoint's MTP layer carries its own embed_tokens and shared_head.head;
            # the draft loader skips both and shares the target's (deepseek_weight_loader.py)
            out += [
                fixed(
                    "mtp",
                    f"{pfx}.embed_tokens",
                    a.vocab,
                    h,
                    i,
                    split=Split.VOCAB,
                    group=Group.EMB,
                    stage=Stage.CKPT_ONLY,
                ),
                fixed(
                    "mtp",
                    f"{pfx}.shared_head.head",
                    a.vocab,
                    h,
                    i,
                    split=Split.VOCAB,
                    group=Group.LM,
                    stage=Stage.CKPT_ONLY,
                ),
            ]
    return out


def _gdn_mtp_layers(a: Arch) -> list[Tensor]:
    """The MTP module of a Gated-DeltaNet hybrid (Qwen3-Next / Qwen3.5) as its checkpoint stores it (``mtp.*``,
    ``mtp_num_hidden_layers`` of them): ``fc`` ``[h, 2h]`` (an nn.Linear: model dtype), two pre-fc norms, one
    decoder layer of gated full attention + the MLP / MoE, and the final norm; the draft shares the target's
    embedding and lm_head (SGLang v0.5.23 ``models/qwen3_next_mtp.py Qwen3NextForCausalLMMTP.__init__``,
    ``models/qwen3_5_mtp.py``; the loader maps ``mtp.*`` only for the draft, ``qwen3_next.py load_weights``)."""
    n = first_int(a.cfg, "mtp_num_hidden_layers", default=0)
    if not n or a.cfg.get("hybrid_override_pattern"):
        return []
    h, out = a.hidden, []
    for j in range(n):
        i = a.num_layers + j
        pfx = f"mtp.layers.{j}"
        ts = [
            *gqa_attention(a, i, f"{pfx}.self_attn", gated_q=True),
            *_norms(a, i, pfx),
            *(
                moe_block(a, i, f"{pfx}.mlp")
                if num_experts(a.cfg)
                else mlp(a, i, f"{pfx}.mlp", need_int(a.cfg, "intermediate_size"), "dense_mlp", Group.DENSE)
            ),
        ]
        if j == 0:
            ts += [
                fixed("mtp", "mtp.fc", h, 2 * h, i),
                vec("norms", "mtp.pre_fc_norm_embedding", h, i),
                vec("norms", "mtp.pre_fc_norm_hidden", h, i),
                vec("norms", "mtp.norm", h, i),
            ]
        out += [replace(t, comp="mtp", stage=Stage.MTP) for t in ts]
    return out


def _vision_tower(a: Arch, top: Mapping[str, Any]) -> list[Tensor]:
    """A generic ViT (SigLIP-like) + projector when ``vision_config`` gives its geometry.

    Parameters = L * (4h^2 + 4h + 2h*i + i + h + 4h) + 3 p^2 h + h + (image/p)^2 h + 2h + h*H + h (patch
    embedding, positions, post norm, projector to the text hidden size H and its norm).
    """
    v = top.get("vision_config")
    if not isinstance(v, Mapping):
        return []
    if weight_rules(a.engine).dsv41_vision_tower and str(v.get("model_type") or "") == "deepseek_v41_vision":
        return _dsv41_vision(a, v)
    # the families kvplan.weights.vision prices as their engines build them
    own = vision_tower_tensors(tower_model_type(top), v, text_hidden=a.hidden, engine=a.engine, top=top)
    if own is not None:
        return own
    vh = first_int(v, "hidden_size", "vt_hidden_size", default=0)
    vl = first_int(v, "num_hidden_layers", "vt_num_hidden_layers", default=0)
    vi = first_int(v, "intermediate_size", "vt_intermediate_size", default=0)
    if not (vh and vl and vi):
        return []
    patch = opt_int(v, "patch_size", 14)
    image = opt_int(v, "image_size", 896)
    npos = (image // patch) ** 2
    per_layer = 4 * vh * vh + 4 * vh + 2 * vh * vi + vi + vh + 4 * vh
    total = vl * per_layer + 3 * patch * patch * vh + vh + npos * vh + 2 * vh
    total += vh * a.hidden + vh  # projector + its norm
    return [fixed("vision", "vision_tower", total, 1, None, stage=Stage.FIRST)]


def _dsv41_vision(a: Arch, v: Mapping[str, Any]) -> list[Tensor]:
    """DeepSeek-V4.1's ViT and aligner, replicated (data-parallel vision attention), bf16 with fp32 norms (SGLang
    v0.5.23 ``models/deepseek_v41_vit.py``): patch embedding ``[d, 3 p^2]`` + bias; per block a biased qkv ``[3d,
    d]`` and output ``[d, d]``, a gated MLP ``w1 [2i, d]`` / ``w2 [d, i]`` without bias, two fp32 norms; a final fp32
    norm; the aligner ``w1 [H, d r^2]`` and ``w2 [H, H]`` with biases (r = downsample_ratio, H the text hidden size).

    Example: V4.1-Flash (d 1,024, 32 blocks, i 2,816, p 14, r 3, H 5,120): 485,186,560 bf16 + 66,560 fp32 parameters
    = 970,639,360 B.
    """
    d = first_int(v, "hidden_size", default=0)
    n = first_int(v, "num_hidden_layers", default=0)
    i = first_int(v, "intermediate_size", default=0)
    if not (d and n and i):
        return []
    p, r, h = opt_int(v, "patch_size", 14), opt_int(v, "downsample_ratio", 1), a.hidden
    bf16 = (3 * p * p * d + d) + n * (3 * d * d + 3 * d + d * d + d + 3 * d * i) + (d * r * r * h + h) + (h * h + h)
    fp32 = 2 * n * d + d
    return [
        fixed("vision", "vision_tower", bf16, 1, None, dtype="bf16", stage=Stage.FIRST),
        fixed("vision", "vision_tower.norms", fp32, 1, None, dtype="fp32", stage=Stage.FIRST),
    ]


def _engram(a: Arch) -> list[Tensor]:
    """DeepSeek-V4.1 engram tables: fp8 rows + one e8m0 byte per 32, rows split over TP, on every stage
    (component ``engram``: what :mod:`kvplan.weights.engram` places on the GPU or in host memory), and each engram
    layer's projection (component ``engram_proj``, on the GPU in every placement, :func:`_engram_projection`)."""
    rows = a.cfg.get("engram_num_embeddings") or ()
    dim = opt_int(a.cfg, "engram_head_dim", 0)
    if not rows or not dim:
        return []
    tables = [
        fixed(
            "engram",
            f"engram.{k}.table",
            int(r),
            dim,
            None,
            split=Split.OUT,
            group=Group.TP,
            dtype="fp8",
            stage=Stage.EXTRA,
        )
        for k, r in enumerate(rows)
    ]
    scales = [
        fixed(
            "engram",
            f"engram.{k}.scale",
            int(r),
            math.ceil(dim / 32),
            None,
            split=Split.OUT,
            group=Group.TP,
            dtype="fp8",
            stage=Stage.EXTRA,
        )
        for k, r in enumerate(rows)
    ]
    return tables + scales + _engram_projection(a, dim)


def _engram_projection(a: Arch, dim: int) -> list[Tensor]:
    """Per engram layer ``i`` (``engram_layer_ids``): ``wkv``, a ReplicatedLinear ``[h * (hc_mult + 1),
    (engram_max_ngram_size - 1) * engram_n_heads * engram_head_dim]`` in the dense scheme, and ``q_weight`` /
    ``k_weight`` ``[hc_mult, h]`` in the model dtype, replicated on every GPU whatever the tables' placement
    (SGLang v0.5.23 ``layers/engram.py Engram.__init__``).

    Example: DeepSeek-V4.1-Flash (h 5120, hc_mult 4, n-gram 4, 8 heads, dim 256): wkv 25,600 x 6,144 =
    157,286,400 fp8 parameters per layer, two layers (1, 14) = 0.29 GiB per GPU.
    """
    cfg, h = a.cfg, a.hidden
    layer_ids = cfg.get("engram_layer_ids") or ()
    ngram = first_int(cfg, "engram_max_ngram_size", default=1)
    heads = first_int(cfg, "engram_n_heads", default=0)
    hc = dsv4_hc_mult(cfg)
    cols = (ngram - 1) * heads * dim
    out: list[Tensor] = []
    for i in layer_ids if cols else ():
        pfx = f"model.layers.{i}.engram"
        out += [
            lin("engram_proj", f"{pfx}.wkv", h * (hc + 1), cols, Split.NONE, Group.NONE, i),
            fixed("engram_proj", f"{pfx}.q_weight", hc, h, i),
            fixed("engram_proj", f"{pfx}.k_weight", hc, h, i),
        ]
    return out


def tied_embeddings(a: Arch) -> bool:
    """lm_head shares the input embedding (``tie_word_embeddings``; gpt-oss always builds its own).

    A config without the key gets its config class's default: True for the Gemma families (transformers'
    ``GemmaConfig`` / ``Gemma2Config`` / ``Gemma3TextConfig`` default ``tie_word_embeddings=True``; vLLM's
    ``models/gemma3.py`` ``Gemma3ForCausalLM.__init__`` then ties ``lm_head`` to ``embed_tokens``, v0.34.0), False
    otherwise.  Example: google/gemma-3-27b-it (no key in its text_config) -> tied, one 262,208 x 5,376 table."""
    default = _model_type(a.cfg).startswith("gemma")
    return bool(a.cfg.get("tie_word_embeddings", default)) and not a.gpt_oss


def _model_tensors(a: Arch, top: Mapping[str, Any]) -> list[Tensor]:
    h, V = a.hidden, a.vocab
    ts = [fixed("embeddings", "model.embed_tokens", V, h, None, split=Split.VOCAB, group=Group.EMB, stage=Stage.FIRST)]
    if is_gemma4(a):
        ts += gemma4_model_tensors(a)
    build = LAYER_BUILDERS[a.family]
    for i in range(a.num_layers):
        ts += build(a, i, f"model.layers.{i}")
    ts.append(vec("norms", "model.norm", h, None, stage=Stage.LAST))
    hc = dsv4_hc_mult(a.cfg) if a.family == Family.DSV4 else 0
    if hc:
        ts.append(
            fixed("hyper_connections", "model.hc_head", hc * hc * h + hc + 1, 1, None, dtype="fp32", stage=Stage.LAST)
        )
    if not tied_embeddings(a):
        ts.append(fixed("lm_head", "lm_head", V, h, None, split=Split.VOCAB, group=Group.LM, stage=Stage.LAST))
    mtp = _gdn_mtp_layers(a) if a.family == Family.HYBRID_MAMBA else _mtp_layers(a)
    return ts + mtp + _vision_tower(a, top) + _engram(a)


# --------------------------------------------------------------------------- inventory


def _dsa_indexer_layers(cfg: Mapping[str, Any], n_layers: int) -> frozenset[int]:
    """Layers with their own DSA indexer: all, or those whose ``indexer_types`` entry is not "shared"."""
    if not cfg.get("index_topk"):
        return frozenset()
    types = cfg.get("indexer_types")
    if isinstance(types, list):
        return frozenset(i for i in range(n_layers) if i < len(types) and types[i] != "shared")
    return frozenset(range(n_layers))


@dataclass(frozen=True)
class Inventory:
    """The flat config, its weight-layout family and every tensor the checkpoint stores (MTP, engram included)."""

    arch: Arch
    tensors: list[Tensor]

    @property
    def cfg(self) -> Mapping[str, Any]:
        return self.arch.cfg

    @property
    def family(self) -> Family:
        return self.arch.family


def inventory(
    config: Mapping[str, Any], *, engine: str = "sglang", hf_quant_config: Mapping[str, Any] | None = None
) -> Inventory:
    """Every weight tensor of ``config`` (a parsed config.json, nested or flat), flattened by ``engine``'s rule.

    Example: Llama-3.1-8B -> 1 embedding + 32 x (4 attention + 2 norms + 3 MLP) + final norm + lm_head = 291
    tensors, 8,030,261,248 parameters.  InputError (exit 2) for a config the walk cannot read.
    """
    if not isinstance(config, Mapping):
        raise InputError("config must be a mapping (a parsed config.json)", field="config")
    rules = weight_rules(engine)
    cfg = flatten_config(config, engine=rules.name)
    check_weight_config(cfg, top=config, hf_quant_config=hf_quant_config)
    family = weights_family(cfg)
    n_layers = need_int(cfg, "num_hidden_layers", minimum=1)
    indexer = _dsa_indexer_layers(cfg, n_layers) if family in (Family.MLA, Family.DSA) else frozenset()
    arch = Arch(
        cfg=cfg,
        family=family,
        model_type=_model_type(cfg),
        hidden=need_int(cfg, "hidden_size", minimum=1),
        num_layers=n_layers,
        vocab=need_int(cfg, "vocab_size", minimum=1),
        indexer_layers=indexer,
        engine=rules.name,
    )
    return Inventory(arch, _model_tensors(arch, config))


def count_params(config: Mapping[str, Any]) -> dict[str, int]:
    """Parameters per component, as stored in the checkpoint (MTP and engram included).

    Components: embeddings, attention, indexer, linear_attention, mamba, dense_mlp, router,
    experts, shared_experts, norms, lm_head, hyper_connections, mtp, vision, engram; plus
    ``total``.  Tied embeddings count once.  Example: Llama-3.1-8B (32 layers, h 4096, 32/8
    heads, inter 14336, vocab 128256, untied) = 8,030,261,248.
    """
    out: dict[str, int] = {}
    for t in inventory(config).tensors:
        out[t.comp] = out.get(t.comp, 0) + t.params
    out["total"] = sum(out.values())
    return out
