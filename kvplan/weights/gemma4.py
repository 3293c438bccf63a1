"""Gemma-4's decoder layer and per-layer-embedding tables, as the engines build them.

Sources: vLLM 0.19.0 ``vllm/model_executor/models/gemma4.py`` (``Gemma4Attention.__init__``,
``Gemma4DecoderLayer.__init__``, ``Gemma4Router.__init__``, ``Gemma4MoE.__init__``, ``Gemma4Model.__init__``);
SGLang v0.5.23 ``srt/models/gemma4_causal.py`` (the same modules; ``Gemma4Model.__init__`` builds
``per_layer_model_projection`` as a ``ReplicatedLinear``).  Per layer ``i`` with ``h`` = hidden size:

* attention: one ``QKVParallelLinear`` over ``head_dim`` (``global_head_dim`` on a ``full_attention`` layer) and
  ``num_key_value_heads`` (``num_global_key_value_heads`` on a full layer when ``attention_k_eq_v``), so q, k *and*
  v are allocated even where the checkpoint stores no ``v_proj`` (vLLM ``Gemma4ForCausalLM.load_weights`` copies
  k into v on those layers); o ``[h, heads x head_dim]``; ``q_norm`` and ``k_norm`` of ``head_dim`` (``v_norm``
  has no weight);
* a dense MLP (``Gemma4MLP``: gate, up ``[inter, h]``, down ``[h, inter]``, ``inter`` = ``intermediate_size``,
  doubled on KV-shared layers when ``use_double_wide_mlp``) in *every* layer, MoE or not, and four RMSNorms;
* with ``enable_moe_block``, *alongside* that MLP: the router (``scale`` ``[h]``, ``proj`` ``[num_experts, h]``
  in the model dtype: ``GateLinear`` keeps bf16 unless ``force_fp32_compute``), ``per_expert_scale``
  ``[num_experts]``, the ``num_experts`` routed experts of ``moe_intermediate_size`` (FusedMoE) and three more
  RMSNorms (``post_feedforward_layernorm_1`` / ``_2``, ``pre_feedforward_layernorm_2``);
* with ``hidden_size_per_layer_input`` = ``p`` > 0 (E2B / E4B): ``per_layer_input_gate`` ``[p, h]``,
  ``per_layer_projection`` ``[h, p]`` and ``post_per_layer_input_norm`` ``[h]``;
* ``layer_scalar``, a one-element buffer loaded from the checkpoint.

Model level, with ``p`` > 0: ``embed_tokens_per_layer`` ``[vocab_size_per_layer_input, layers x p]`` (split like
``embed_tokens``), ``per_layer_model_projection`` ``[layers x p, h]`` (vLLM ColumnParallel, SGLang replicated) and
``per_layer_projection_norm`` ``[p]``.  The table is breakdown component ``embeddings`` (a lookup, no GEMM), the
three projections ``per_layer_input``.  The scalar buffers (``normalizer``, ``root_size``, ``embed_scale_per_layer``
...) are not persistent and a few bytes each: left out.

Example: google/gemma-4-26B-A4B (h 2,816, 30 layers, 5 full): a sliding layer's attention is (16 + 8 + 8 + 16) x
256 x 2,816 = 34,603,008 parameters, a full layer's (16 + 2 + 2 + 16) x 512 x 2,816 = 51,904,512; the dense MLP
3 x 2,816 x 2,112 = 17,842,176 per layer beside 128 x 3 x 2,816 x 704 = 761,266,176 of experts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kvplan.weights.blocks import Arch, _experts, head_dim, mlp, num_experts
from kvplan.weights.fields import first_int, need_int, opt_int
from kvplan.weights.rules import weight_rules
from kvplan.weights.tensor import Group, Split, Stage, Tensor, fixed, lin, vec

__all__ = ["GEMMA4_TEXT_PREFIX", "gemma4_layer", "gemma4_model_tensors", "is_gemma4"]

#: the flattened (text) config's model_type of every Gemma-4 checkpoint ("gemma4_text")
GEMMA4_TEXT_PREFIX = "gemma4"


def is_gemma4(a: Arch) -> bool:
    return a.model_type.startswith(GEMMA4_TEXT_PREFIX)


def _full_layer(cfg: Mapping[str, Any], i: int) -> bool:
    types = cfg.get("layer_types")
    return isinstance(types, list) and i < len(types) and types[i] == "full_attention"


def _attention(a: Arch, i: int, prefix: str) -> list[Tensor]:
    cfg, h = a.cfg, a.hidden
    nh = need_int(cfg, "num_attention_heads", minimum=1)
    full = _full_layer(cfg, i)
    hd = opt_int(cfg, "global_head_dim", 0) if full else 0
    hd = hd or head_dim(cfg)
    nkv = first_int(cfg, "num_key_value_heads", default=nh)
    if full and cfg.get("attention_k_eq_v"):
        nkv = first_int(cfg, "num_global_key_value_heads", "num_key_value_heads", default=nh)
    out = [
        lin("attention", f"{prefix}.q_proj", nh, h, Split.HEADS, Group.ATTN, i, head=hd),
        lin("attention", f"{prefix}.k_proj", nkv, h, Split.HEADS, Group.ATTN, i, head=hd),
        lin("attention", f"{prefix}.v_proj", nkv, h, Split.HEADS, Group.ATTN, i, head=hd),
        lin("attention", f"{prefix}.o_proj", h, nh * hd, Split.IN, Group.ATTN, i),
    ]
    if cfg.get("attention_bias"):
        out += [
            fixed("attention", f"{prefix}.{name}.bias", rows, 1, i, split=Split.HEADS, group=Group.ATTN, head=hd)
            for name, rows in (("q_proj", nh), ("k_proj", nkv), ("v_proj", nkv))
        ]
        out.append(vec("attention", f"{prefix}.o_proj.bias", h, i))
    out += [vec("norms", f"{prefix}.q_norm", hd, i), vec("norms", f"{prefix}.k_norm", hd, i)]
    return out


def _mlp_width(cfg: Mapping[str, Any], i: int) -> int:
    inter = need_int(cfg, "intermediate_size")
    n_layers = need_int(cfg, "num_hidden_layers", minimum=1)
    first_shared = n_layers - opt_int(cfg, "num_kv_shared_layers", 0)
    double = bool(cfg.get("use_double_wide_mlp")) and i >= first_shared > 0
    return inter * (2 if double else 1)


def gemma4_layer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """Every tensor of Gemma-4 decoder layer ``i`` (module docstring)."""
    cfg, h = a.cfg, a.hidden
    out = _attention(a, i, f"{prefix}.self_attn")
    out += [vec("norms", f"{prefix}.layernorm{k}", h, i) for k in range(4)]
    out += mlp(a, i, f"{prefix}.mlp", _mlp_width(cfg, i), "dense_mlp", Group.DENSE)
    if cfg.get("enable_moe_block") or cfg.get("use_second_mlp_block"):
        n = num_experts(cfg)
        out += [
            vec("router", f"{prefix}.router.scale", h, i),
            fixed("router", f"{prefix}.router.proj", n, h, i),
            vec("router", f"{prefix}.router.per_expert_scale", n, i),
        ]
        inter = first_int(cfg, "moe_intermediate_size", "expert_intermediate_size")
        out += _experts(a, i, prefix, n, inter, gated=True, bias=False)
        out += [vec("norms", f"{prefix}.moe_layernorm{k}", h, i) for k in range(3)]
    ple = opt_int(cfg, "hidden_size_per_layer_input", 0)
    if ple:
        out += [
            lin("per_layer_input", f"{prefix}.per_layer_input_gate", ple, h, Split.NONE, Group.NONE, i),
            lin("per_layer_input", f"{prefix}.per_layer_projection", h, ple, Split.NONE, Group.NONE, i),
            vec("norms", f"{prefix}.post_per_layer_input_norm", h, i),
        ]
    out.append(vec("norms", f"{prefix}.layer_scalar", 1, i))
    return out


def gemma4_model_tensors(a: Arch) -> list[Tensor]:
    """The per-layer-embedding tables of the model (none when ``hidden_size_per_layer_input`` is 0)."""
    cfg, h = a.cfg, a.hidden
    ple = opt_int(cfg, "hidden_size_per_layer_input", 0)
    if not ple:
        return []
    width = a.num_layers * ple
    vocab = first_int(cfg, "vocab_size_per_layer_input", "vocab_size")
    tp_split = weight_rules(a.engine).gemma4_ple_projection_tp  # vLLM column-splits it; SGLang replicates it
    split, group = (Split.OUT, Group.TP) if tp_split else (Split.NONE, Group.NONE)
    proj = lin("per_layer_input", "model.per_layer_model_projection", width, h, split, group, None)
    return [
        fixed(
            "embeddings",
            "model.embed_tokens_per_layer",
            vocab,
            width,
            None,
            split=Split.VOCAB,
            group=Group.EMB,
            stage=Stage.FIRST,
        ),
        replace(proj, stage=Stage.FIRST),
        vec("norms", "model.per_layer_projection_norm", ple, None, stage=Stage.FIRST),
    ]
