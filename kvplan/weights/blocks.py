"""The weight tensors of one block of a decoder layer: attention (GQA, MLA + DSA indexer, DeepSeek-V4), mixers
(Mamba-2, Gated DeltaNet), dense MLP, MoE (router, routed and shared experts).

Each builder restates the module layout of the engine's model file (SGLang v0.5.23,
sgl-project/sglang python/sglang/srt/...; the sharding of each tensor is in :mod:`kvplan.weights.sharding`):

* GQA: ``layers/linear.py QKVParallelLinear`` (q, k, v by heads; o RowParallel); Qwen2 q/k/v biases, Qwen3 /
  Gemma-3 / OLMo-2 q/k norms, gpt-oss attention sinks (``models/gpt_oss.py GptOssAttention``).
* MLA: ``models/deepseek_v2.py DeepseekV2AttentionMLA`` (q_a + kv_a replicated; q_b / kv_b by heads; o
  RowParallel); DSA indexer ``layers/attention/dsa/dsa_indexer.py Indexer`` (replicated, weights_proj bf16).
* DeepSeek-V4: ``models/deepseek_v4.py MqaAttentionBase`` (wq_a / wkv replicated, wq_b and wo_a by heads, wo_b
  RowParallel, fp32 attn_sink), ``layers/attention/dsv4/compressor.py Compressor`` (ape fp32, wkv_gate bf16),
  ``layers/attention/dsv4/indexer.py C4Indexer`` (wq_b and weights_proj bf16).
* MoE: ``layers/moe/fused_moe_triton/layer.py FusedMoE`` (experts, split over EP and moe_tp); gpt-oss expert
  biases bf16 (``layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights``).
* Mamba-2: ``models/nemotron_h.py`` mixer (in_proj, conv1d, A_log, D, dt_bias, norm, out_proj); Gated DeltaNet:
  ``models/qwen3_next.py Qwen3GatedDeltaNet``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kvplan.family import Family
from kvplan.weights.fields import first_int, need_int, opt_int
from kvplan.weights.rules import weight_rules
from kvplan.weights.tensor import Group, Split, Tensor, fixed, lin, vec

__all__ = [
    "Arch",
    "dense_mlp_width",
    "dsv4_attention",
    "gated_deltanet",
    "gqa_attention",
    "is_moe_layer",
    "mamba1_mixer",
    "mamba2_mixer",
    "mla_attention",
    "mlp",
    "moe_block",
    "num_experts",
]

GPT_OSS = "gpt_oss"
#: q/k/v biases without attention_bias; "qwen" = first-generation Qwen, whose fused ``c_attn`` has a bias (vLLM
#: v0.21.0 ``models/qwen.py`` ``QWenAttention.__init__``: ``QKVParallelLinear(..., bias=True)``)
_QKV_BIAS_MODEL_TYPES = ("qwen", "qwen2", "qwen2_moe", "qwen2_vl")
#: first-generation Qwen (``QWenLMHeadModel``): its config's ``intermediate_size`` is twice the MLP width
QWEN1 = "qwen"
_QK_NORM_PREFIXES = ("qwen3", "gemma3", "olmo2")  # per-head q_norm / k_norm
_SCORE_BIAS_PREFIXES = ("deepseek_v3", "deepseek_v32", "kimi", "glm")  # noaux_tc routers (fp32 correction bias)
_SCORE_BIAS_FAMILIES = frozenset({Family.MLA, Family.DSA, Family.DSV4})
GLM4_MOE = "glm4_moe"
ERNIE_MOE = "ernie4_5_moe"
_ERNIE_MOE_KEYS = ("moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval")
#: Hugging Face ``quantization_config.quant_method`` values of an fp8 checkpoint (a quantization method name, not an
#: element dtype; SGLang v0.5.23 layers/quantization/__init__.py registers ``"fp8": Fp8Config``)
_FP8_QUANT_METHODS = ("fp8",)


@dataclass(frozen=True)
class Arch:
    """What the tensor builders read: the flat config and the facts derived from it once."""

    cfg: Mapping[str, Any]
    family: Family  # the weight-layout family (:func:`kvplan.weights.inventory.weights_family`)
    model_type: str  # lower-case ``model_type``
    hidden: int  # hidden_size
    num_layers: int  # num_hidden_layers
    vocab: int  # vocab_size
    indexer_layers: frozenset[int] = frozenset()  # DSA layers with their own indexer
    engine: str = "sglang"  # whose model file the layout follows where the engines differ (ERNIE MoE layers)

    @property
    def gpt_oss(self) -> bool:
        """gpt-oss: router named ``router`` with a bias, biased experts of ``intermediate_size``, attention
        sinks, an lm_head of its own even when the config says tied."""
        return self.model_type == GPT_OSS


def head_dim(cfg: Mapping[str, Any]) -> int:
    """``head_dim`` when set (non-zero), else ``hidden_size // num_attention_heads``."""
    hd = opt_int(cfg, "head_dim", 0)
    if hd:
        return hd
    return need_int(cfg, "hidden_size", minimum=1) // need_int(cfg, "num_attention_heads", minimum=1)


def num_experts(cfg: Mapping[str, Any]) -> int:
    """Routed experts: the first of ``n_routed_experts``, ``num_experts``, ``num_local_experts``,
    ``moe_num_experts`` (ERNIE-4.5) that is set (0)."""
    return first_int(cfg, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts", default=0)


def _ernie_moe_layer(cfg: Mapping[str, Any], i: int, engine: str) -> bool:
    """ERNIE-4.5 MoE layers: ``start <= i <= end`` and, by engine, SGLang ``(i - start) % interval == 0`` (start
    default ``num_hidden_layers``: no MoE; ``models/ernie4.py Ernie4DecoderLayer.__init__``, v0.5.23) or vLLM
    ``(i + 1) % interval == 0`` (start default 0; ``models/ernie45_moe.py Ernie4_5_MoeDecoderLayer.__init__``,
    v0.25.1).  End default ``num_hidden_layers - 1`` in both.

    Example: ERNIE-4.5-21B-A3B (28 layers, start 1, end 27, interval 1): layers 1..27 are MoE, layer 0 dense.
    """
    n_layers = need_int(cfg, "num_hidden_layers", minimum=1)
    vllm = weight_rules(engine).ernie_moe_one_based
    start = first_int(cfg, "moe_layer_start_index", default=0 if vllm else n_layers, minimum=-1)
    end = first_int(cfg, "moe_layer_end_index", default=n_layers - 1, minimum=-1)
    interval = first_int(cfg, "moe_layer_interval", default=1, minimum=1)
    on_step = (i + 1) % interval == 0 if vllm else (i - start) % interval == 0
    return start <= i <= end and on_step


def _freq_moe_layer(cfg: Mapping[str, Any], i: int) -> bool:
    """``moe_layer_freq`` as a per-layer list (MiniMax-M3: entry != 0 is MoE, ``models/minimax_m3.py
    _is_layer_sparse``) or, with ``first_k_dense_replace``, ``i >= first_k_dense_replace and i % freq == 0``
    (``models/deepseek_v2.py DeepseekV2DecoderLayer._is_layer_sparse``)."""
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list):
        return i < len(freq) and freq[i] != 0
    step = opt_int(cfg, "moe_layer_freq", 1, minimum=1)
    return i >= first_int(cfg, "first_k_dense_replace", default=0) and i % step == 0


def is_moe_layer(cfg: Mapping[str, Any], i: int, *, engine: str = "sglang") -> bool:
    """Layer ``i`` has routed experts: ``mlp_layer_types[i]`` sparse/moe; else not in ``mlp_only_layers``; a
    per-layer ``moe_layer_freq`` list or ``first_k_dense_replace`` (:func:`_freq_moe_layer`); ERNIE's
    ``moe_layer_start_index`` / ``moe_layer_interval`` (:func:`_ernie_moe_layer`); Llama-4's ``(i + 1) %
    interleave_moe_layer_step == 0``; ``(i + 1) % decoder_sparse_step == 0``; else every layer of a MoE config."""
    if not num_experts(cfg):
        return False
    types = cfg.get("mlp_layer_types")
    if isinstance(types, list) and i < len(types):
        return str(types[i]) in ("sparse", "moe")
    if i in (cfg.get("mlp_only_layers") or []):
        return False
    if isinstance(cfg.get("moe_layer_freq"), list) or cfg.get("first_k_dense_replace") is not None:
        return _freq_moe_layer(cfg, i)
    if any(cfg.get(k) is not None for k in _ERNIE_MOE_KEYS):
        return _ernie_moe_layer(cfg, i, engine)
    if cfg.get("expert_layer_period") is not None:
        # Jamba: layers_num_experts[i] > 1 iff i % expert_layer_period == expert_layer_offset (transformers
        # JambaConfig.layers_num_experts; vLLM v0.25.1 models/jamba.py JambaMambaDecoderLayer: JambaMoE else JambaMLP)
        period = opt_int(cfg, "expert_layer_period", 1, minimum=1)
        return i % period == opt_int(cfg, "expert_layer_offset", 0)
    if cfg.get("interleave_moe_layer_step") is not None:
        # Llama-4: MoE where (i + 1) % step == 0, none at step 0 (vLLM v0.21.0 models/llama4.py
        # Llama4DecoderLayer.__init__ is_moe_layer; SGLang v0.5.15 models/llama4.py _is_moe_layer): Maverick's
        # step 2 makes 24 of its 48 layers MoE, Scout's 1 all of them
        ilv = first_int(cfg, "interleave_moe_layer_step", minimum=0)
        return ilv > 0 and (i + 1) % ilv == 0
    step = opt_int(cfg, "decoder_sparse_step", 0, minimum=1)
    if step:
        return (i + 1) % step == 0
    return True


def dense_mlp_width(cfg: Mapping[str, Any]) -> int:
    """The width of a dense MLP's gate / up projection: ``intermediate_size``, halved for first-generation Qwen.

    Qwen-7B/14B/72B (``model_type`` "qwen", ``QWenLMHeadModel``) build each block's MLP as
    ``QWenMLP(hidden_size, config.intermediate_size // 2)``: ``w1`` and ``w2`` (vLLM's merged ``gate_up_proj``) are
    ``[intermediate_size / 2, hidden]`` each and ``c_proj`` ``[hidden, intermediate_size / 2]`` (vLLM v0.21.0
    ``vllm/model_executor/models/qwen.py`` ``QWenBlock.__init__``; SGLang v0.5.15 ``srt/models/qwen.py``
    ``QWenBlock.__init__``, the same floor division).  Every other config's ``intermediate_size`` is the width.

    Example: Qwen-14B (hidden 5,120, intermediate_size 27,392) -> 13,696, so one layer's MLP is 3 x 5,120 x 13,696
    = 210,370,560 parameters (not 420,741,120); Llama-3.1-8B -> 14,336.
    """
    if str(cfg.get("model_type") or "").lower().startswith("llama4") and cfg.get("intermediate_size_mlp"):
        # Llama-4's dense layers: LlamaMLP(intermediate_size=config.intermediate_size_mlp) (vLLM v0.21.0
        # models/llama4.py Llama4DecoderLayer; SGLang v0.5.15 models/llama4.py), 16,384 on Maverick
        return need_int(cfg, "intermediate_size_mlp")
    inter = need_int(cfg, "intermediate_size")
    return inter // 2 if str(cfg.get("model_type") or "").lower() == QWEN1 else inter


def mlp(a: Arch, i: int, prefix: str, inter: int, comp: str, group: Group, *, gated: bool = True) -> list[Tensor]:
    """Dense MLP: gate_proj + up_proj (``[inter, h]``, up only when not gated) and down_proj ``[h, inter]``."""
    h = a.hidden
    out = [lin(comp, f"{prefix}.gate_proj", inter, h, Split.OUT, group, i)] if gated else []
    out.append(lin(comp, f"{prefix}.up_proj", inter, h, Split.OUT, group, i))
    out.append(lin(comp, f"{prefix}.down_proj", h, inter, Split.IN, group, i))
    return out


def _experts(
    a: Arch, i: int, prefix: str, n: int, inter: int, *, gated: bool, bias: bool, width: int | None = None
) -> list[Tensor]:
    """The routed experts of one MoE layer; ``width`` is the dimension they read and write (the hidden size, or
    Nemotron-3's ``moe_latent_size``)."""
    h = a.hidden if width is None else width
    p = f"{prefix}.experts"
    out = [lin("experts", f"{p}.gate_proj", inter, h, Split.OUT, Group.MOE, i, copies=n, expert=True)] if gated else []
    out.append(lin("experts", f"{p}.up_proj", inter, h, Split.OUT, Group.MOE, i, copies=n, expert=True))
    out.append(lin("experts", f"{p}.down_proj", h, inter, Split.IN, Group.MOE, i, copies=n, expert=True))
    if bias:  # gpt-oss expert biases (bf16, sglang mxfp4.py Mxfp4MoEMethod.create_weights): the fused
        # w13_bias [E, 2 * intermediate] is listed as its gate and up halves so each pads like its weight
        out += [
            fixed(
                "experts",
                f"{p}.gate_up_bias.{half}",
                inter,
                1,
                i,
                split=Split.OUT,
                group=Group.MOE,
                copies=n,
                expert=True,
                dtype="bf16",
            )
            for half in (("gate", "up") if gated else ("up",))
        ]
        out.append(fixed("experts", f"{p}.down_bias", h, 1, i, group=Group.MOE, copies=n, expert=True, dtype="bf16"))
    return out


def _has_score_bias(a: Arch) -> bool:
    """noaux_tc routers keep an fp32 ``e_score_correction_bias`` (DeepSeek-V3 family, GLM-4 MoE)."""
    cfg, mt = a.cfg, a.model_type
    if not (cfg.get("topk_method") == "noaux_tc" or mt.startswith(_SCORE_BIAS_PREFIXES)):
        return False
    return a.family in _SCORE_BIAS_FAMILIES or mt.startswith(GLM4_MOE)


def _shared_experts(a: Arch, i: int, prefix: str, inter: int, *, gated: bool) -> list[Tensor]:
    """Shared experts (an MLP over the full TP group) of ``shared_expert_intermediate_size`` (Qwen2-MoE /
    Qwen3-Next, plus their sigmoid gate) or ``moe_shared_expert_intermediate_size``, else ``n_shared_experts``
    (ERNIE-4.5: ``moe_num_shared_experts``) ``* moe_intermediate_size``."""
    cfg = a.cfg
    sh_inter = first_int(cfg, "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", default=0)
    if sh_inter:
        out = mlp(a, i, f"{prefix}.shared_experts", sh_inter, "shared_experts", Group.TP, gated=gated)
        if cfg.get("shared_expert_intermediate_size"):  # Qwen2-MoE / Qwen3-Next sigmoid gate
            out.append(fixed("router", f"{prefix}.shared_expert_gate", 1, a.hidden, i))
        return out
    n_shared = first_int(cfg, "n_shared_experts", "moe_num_shared_experts", default=0)
    if n_shared:
        return mlp(a, i, f"{prefix}.shared_experts", n_shared * inter, "shared_experts", Group.TP, gated=gated)
    if a.model_type.startswith("llama4"):
        # Llama-4 always has one shared expert as wide as a routed one, with no config key for it (vLLM v0.21.0
        # models/llama4.py Llama4MoE.__init__: shared_expert = LlamaMLP(intermediate_size=config.intermediate_size))
        return mlp(a, i, f"{prefix}.shared_expert", inter, "shared_experts", Group.TP, gated=gated)
    return []


def moe_block(a: Arch, i: int, prefix: str, *, gated: bool = True) -> list[Tensor]:
    """Router, routed experts and shared experts of one MoE layer."""
    n = num_experts(a.cfg)
    if a.gpt_oss:
        inter = need_int(a.cfg, "intermediate_size")
    else:
        inter = first_int(a.cfg, "moe_intermediate_size", "intermediate_size")
    gate_name = f"{prefix}.router" if a.gpt_oss else f"{prefix}.gate"
    out = [fixed("router", gate_name, n, a.hidden, i)]
    if a.gpt_oss:
        out.append(vec("router", f"{gate_name}.bias", n, i))
    if _has_score_bias(a):
        out.append(vec("router", f"{gate_name}.e_score_correction_bias", n, i, dtype="fp32"))
    elif a.model_type == ERNIE_MOE:  # ERNIE-4.5 MoEGate: a (1, E) correction bias in the model dtype (ernie4.py)
        out.append(vec("router", f"{prefix}.moe_statics.e_score_correction_bias", n, i))
    latent = _moe_latent_size(a)
    out += _experts(a, i, prefix, n, inter, gated=gated, bias=a.gpt_oss, width=latent)
    out += _shared_experts(a, i, prefix, inter, gated=gated)
    if latent is not None:  # hidden -> latent before the experts, latent -> hidden after (replicated Linears)
        out.append(lin("experts", f"{prefix}.fc1_latent_proj", latent, a.hidden, Split.NONE, Group.NONE, i))
        out.append(lin("experts", f"{prefix}.fc2_latent_proj", a.hidden, latent, Split.NONE, Group.NONE, i))
    return out


def _moe_latent_size(a: Arch) -> int | None:
    """Nemotron-3's latent MoE: the routed experts of a ``nemotron_h`` config with ``moe_latent_size`` work in
    that width (SGLang 0.5.23 ``models/nemotron_h.py NemotronHMoE.__init__``: ``moe_hidden_size =
    config.moe_latent_size``, the experts' ``hidden_size``, with ``fc1_latent_proj`` ``[latent, hidden]`` and
    ``fc2_latent_proj`` ``[hidden, latent]`` ReplicatedLinears; the shared experts and the router stay at the
    hidden size).  Example: Nemotron-3-Super-120B-A12B, 512 experts of 2 x 2688 x 1024 over 40 MoE layers:
    112.7e9 expert parameters (2 x 2688 x 4096 would be 450.9e9).  None for every other config."""
    if a.model_type != "nemotron_h":
        return None
    v = a.cfg.get("moe_latent_size")
    return need_int(a.cfg, "moe_latent_size", minimum=1) if v is not None else None


def gqa_attention(a: Arch, i: int, prefix: str, *, gated_q: bool = False) -> list[Tensor]:
    """q / k / v by heads (``gated_q``: Qwen3-Next's q carries its gate, 2x rows), o RowParallel, and the biases,
    norms and sinks of the model type."""
    cfg, mt, h = a.cfg, a.model_type, a.hidden
    nh = need_int(cfg, "num_attention_heads", minimum=1)
    nkv = first_int(cfg, "num_key_value_heads", default=nh)
    hd = head_dim(cfg)
    nq = nh * (2 if gated_q else 1)
    out = [
        lin("attention", f"{prefix}.q_proj", nq, h, Split.HEADS, Group.ATTN, i, head=hd),
        lin("attention", f"{prefix}.k_proj", nkv, h, Split.HEADS, Group.ATTN, i, head=hd),
        lin("attention", f"{prefix}.v_proj", nkv, h, Split.HEADS, Group.ATTN, i, head=hd),
        lin("attention", f"{prefix}.o_proj", h, nh * hd, Split.IN, Group.ATTN, i),
    ]
    if mt in _QKV_BIAS_MODEL_TYPES or cfg.get("attention_bias"):
        out += [
            fixed("attention", f"{prefix}.{name}.bias", rows, 1, i, split=Split.HEADS, group=Group.ATTN, head=hd)
            for name, rows in (("q_proj", nq), ("k_proj", nkv), ("v_proj", nkv))
        ]
        if cfg.get("attention_bias"):
            out.append(vec("attention", f"{prefix}.o_proj.bias", h, i))
    if mt.startswith(_QK_NORM_PREFIXES):
        out += [vec("norms", f"{prefix}.q_norm", hd, i), vec("norms", f"{prefix}.k_norm", hd, i)]
    if a.gpt_oss:  # attention sinks, one per head (sglang gpt_oss.py GptOssAttention)
        out.append(fixed("attention", f"{prefix}.sinks", nh, 1, i, split=Split.HEADS, group=Group.ATTN))
    return out


def _dsa_indexer(a: Arch, i: int, prefix: str, q_in: int) -> list[Tensor]:
    ih = need_int(a.cfg, "index_n_heads", minimum=1)
    ihd = need_int(a.cfg, "index_head_dim")
    h = a.hidden
    return [
        lin("indexer", f"{prefix}.indexer.wq_b", ih * ihd, q_in, Split.NONE, Group.NONE, i),
        lin("indexer", f"{prefix}.indexer.wk", ihd, h, Split.NONE, Group.NONE, i),
        vec("indexer", f"{prefix}.indexer.k_norm", 2 * ihd, i),  # LayerNorm weight + bias
        fixed("indexer", f"{prefix}.indexer.weights_proj", ih, h, i, dtype="bf16"),
    ]


def mla_attention(a: Arch, i: int, prefix: str, *, indexer: bool) -> list[Tensor]:
    """MLA: q (LoRA q_a -> q_b when ``q_lora_rank``), kv_a_proj_with_mqa (latent + rope key), kv_b by heads, o;
    ``indexer``: the DSA indexer of this layer."""
    cfg, h = a.cfg, a.hidden
    nh = need_int(cfg, "num_attention_heads", minimum=1)
    ql = opt_int(cfg, "q_lora_rank", 0)
    kvl = need_int(cfg, "kv_lora_rank")
    nope = need_int(cfg, "qk_nope_head_dim")
    rope = need_int(cfg, "qk_rope_head_dim")
    vd = need_int(cfg, "v_head_dim")
    if ql:
        out = [
            lin("attention", f"{prefix}.q_a_proj", ql, h, Split.NONE, Group.NONE, i),
            vec("norms", f"{prefix}.q_a_layernorm", ql, i),
            lin("attention", f"{prefix}.q_b_proj", nh, ql, Split.HEADS, Group.ATTN, i, head=nope + rope),
        ]
    else:
        out = [lin("attention", f"{prefix}.q_proj", nh, h, Split.HEADS, Group.ATTN, i, head=nope + rope)]
    out += [
        lin("attention", f"{prefix}.kv_a_proj_with_mqa", kvl + rope, h, Split.NONE, Group.NONE, i),
        vec("norms", f"{prefix}.kv_a_layernorm", kvl, i),
        lin("attention", f"{prefix}.kv_b_proj", nh, kvl, Split.HEADS, Group.ATTN, i, head=nope + vd),
        lin("attention", f"{prefix}.o_proj", h, nh * vd, Split.IN, Group.ATTN, i),
    ]
    if indexer:
        out += _dsa_indexer(a, i, prefix, ql or h)
    return out


def _compressor(a: Arch, i: int, pfx: str, dim: int, ratio: int) -> list[Tensor]:
    """DeepSeek-V4 ``Compressor``: ape fp32 ``[ratio, coff*dim]``, wkv_gate bf16, norm fp32 (coff 2 at ratio 4)."""
    coff = 2 if ratio == 4 else 1
    return [
        fixed("attention", f"{pfx}.ape", ratio, coff * dim, i, dtype="fp32"),
        fixed("attention", f"{pfx}.wkv_gate", 2 * coff * dim, a.hidden, i, dtype="bf16"),
        fixed("norms", f"{pfx}.norm", dim, 1, i, dtype="fp32"),
    ]


def _c4_indexer(a: Arch, i: int, prefix: str, ql: int) -> list[Tensor]:
    ih = need_int(a.cfg, "index_n_heads", minimum=1)
    ihd = need_int(a.cfg, "index_head_dim")
    return [
        fixed("indexer", f"{prefix}.indexer.wq_b", ih * ihd, ql, i, dtype="bf16"),
        fixed("indexer", f"{prefix}.indexer.weights_proj", ih, a.hidden, i, dtype="bf16"),
    ]


def _dsv4_wo_a(a: Arch, i: int, path: str, groups: int, cols: int, o_lora: int) -> Tensor:
    """DeepSeek-V4 ``wo_a`` under SGLang: fp8 only when ``wo_a_fp8_gemm_enabled`` (``SGLANG_OPT_FP8_WO_A_GEMM``, on
    by default, and an fp8 checkpoint of 128x128 blocks); an fp8 checkpoint of other blocks allocates it in bf16
    and the loader dequantizes the fp8 tensor into it (other schemes: priced as before, not re-checked).  Source:
    SGLang v0.5.23 ``models/deepseek_v4.py MqaAttentionBase.__init__``, ``_dequant_fp8_wo_a_streaming``.
    Example: V4.1-Flash (32x32 blocks) at attention TP 4 -> 2,048 x 4,096 x 2 B; V4-Flash (128x128) -> fp8."""
    t = lin("attention", path, groups, cols, Split.HEADS, Group.ATTN, i, head=o_lora)
    qc = a.cfg.get("quantization_config")
    fp8_other_blocks = (
        isinstance(qc, Mapping)
        and qc.get("quant_method") in _FP8_QUANT_METHODS
        and list(qc.get("weight_block_size") or (128, 128)) != [128, 128]
    )
    return replace(t, dtype="bf16") if weight_rules(a.engine).fp8_wo_a_needs_128_blocks and fp8_other_blocks else t


def dsv4_attention(a: Arch, i: int, prefix: str, ratio: int) -> list[Tensor]:
    """DeepSeek-V4 attention of a layer with compress ratio ``ratio``: ratio 4 and 128 carry a compressor (ratio
    4 also the C4 indexer and its compressor); ratio 1 / 2 layers carry them only when listed in
    ``kv_source_layer_ids`` / ``index_source_layer_ids`` (DeepSeek-V4.1)."""
    cfg, h = a.cfg, a.hidden
    nh = need_int(cfg, "num_attention_heads", minimum=1)
    hd = need_int(cfg, "head_dim", minimum=1)
    ql = need_int(cfg, "q_lora_rank")
    og = need_int(cfg, "o_groups", minimum=1)
    ol = need_int(cfg, "o_lora_rank")
    out = [
        lin("attention", f"{prefix}.wq_a", ql, h, Split.NONE, Group.NONE, i),
        lin("attention", f"{prefix}.wkv", hd, h, Split.NONE, Group.NONE, i),
        vec("norms", f"{prefix}.q_norm", ql, i),
        vec("norms", f"{prefix}.kv_norm", hd, i),
        lin("attention", f"{prefix}.wq_b", nh, ql, Split.HEADS, Group.ATTN, i, head=hd),
        # wo_a: [o_groups * o_lora, n_heads*hd/o_groups], column parallel by groups
        _dsv4_wo_a(a, i, f"{prefix}.wo_a", og, nh * hd // og, ol),
        lin("attention", f"{prefix}.wo_b", h, og * ol, Split.IN, Group.ATTN, i),
        fixed("attention", f"{prefix}.attn_sink", nh, 1, i, split=Split.HEADS, group=Group.ATTN, dtype="fp32"),
    ]
    if ratio in (4, 128):
        out += _compressor(a, i, f"{prefix}.compressor", hd, ratio)
        if ratio == 4:
            ihd = need_int(cfg, "index_head_dim")
            out += _c4_indexer(a, i, prefix, ql)
            out += [replace(t, comp="indexer") for t in _compressor(a, i, f"{prefix}.indexer.compressor", ihd, 4)]
    elif ratio in (1, 2):
        if i in (cfg.get("kv_source_layer_ids") or ()):
            out += _compressor(a, i, f"{prefix}.compressor", hd, ratio)
        if i in (cfg.get("index_source_layer_ids") or ()):
            out += _c4_indexer(a, i, prefix, ql)
    return out


def mamba2_mixer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """Nemotron-H / Mamba-2 mixer: in_proj, conv1d (+bias), A_log, D, dt_bias, norm, out_proj, all over TP."""
    cfg, h = a.cfg, a.hidden
    nheads = need_int(cfg, "mamba_num_heads")
    d_inner = nheads * need_int(cfg, "mamba_head_dim")
    ng = opt_int(cfg, "n_groups", 1)
    ds = first_int(cfg, "ssm_state_size", "mamba_d_state")
    k = first_int(cfg, "conv_kernel", "mamba_d_conv", default=4)
    conv_dim = d_inner + 2 * ng * ds
    out = [
        lin("mamba", f"{prefix}.in_proj", 2 * d_inner + 2 * ng * ds + nheads, h, Split.OUT, Group.MIXER, i),
        fixed("mamba", f"{prefix}.conv1d", conv_dim, k, i, split=Split.OUT, group=Group.MIXER),
        vec("mamba", f"{prefix}.A_log", nheads, i, Split.OUT, Group.MIXER),
        vec("mamba", f"{prefix}.D", nheads, i, Split.OUT, Group.MIXER),
        vec("mamba", f"{prefix}.dt_bias", nheads, i, Split.OUT, Group.MIXER),
        vec("mamba", f"{prefix}.norm", d_inner, i, Split.OUT, Group.MIXER),
        lin("mamba", f"{prefix}.out_proj", h, d_inner, Split.IN, Group.MIXER, i),
    ]
    if cfg.get("use_conv_bias", True):
        out.append(vec("mamba", f"{prefix}.conv1d.bias", conv_dim, i, Split.OUT, Group.MIXER))
    return out


def mamba1_mixer(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """Jamba's Mamba-1 mixer (vLLM v0.25.1 ``model_executor/layers/mamba/mamba_mixer.py MambaMixer``), I =
    ``mamba_expand`` x h, R = ``mamba_dt_rank``, N = ``mamba_d_state``, K = ``mamba_d_conv``: in_proj
    MergedColumnParallel ``[2I, h]``, conv1d ColumnParallel ``[I, K]`` (+bias), x_proj RowParallel ``[R + 2N, I]``,
    dt_proj ColumnParallel ``[I, R]`` + bias, A ``[I, N]`` fp32 and D ``[I]`` split over TP, out_proj RowParallel
    ``[h, I]``, dt / B / C RMSNorms (R, N, N) replicated.  Example, Jamba-v0.1: 2 x 8,192 x 4,096 + 8,192 x 4 +
    8,192 + 288 x 8,192 + 8,192 x 256 + 8,192 + 8,192 x 16 + 8,192 + 4,096 x 8,192 + 256 + 32 = 105,308,448."""
    cfg, h = a.cfg, a.hidden
    inner = need_int(cfg, "mamba_expand") * h
    rank = opt_int(cfg, "mamba_dt_rank", -(-h // 16), minimum=1)
    ds = opt_int(cfg, "mamba_d_state", 16, minimum=1)
    k = opt_int(cfg, "mamba_d_conv", 4, minimum=1)
    out = [
        lin("mamba", f"{prefix}.in_proj", 2 * inner, h, Split.OUT, Group.MIXER, i),
        fixed("mamba", f"{prefix}.conv1d", inner, k, i, split=Split.OUT, group=Group.MIXER),
        lin("mamba", f"{prefix}.x_proj", rank + 2 * ds, inner, Split.IN, Group.MIXER, i),
        lin("mamba", f"{prefix}.dt_proj", inner, rank, Split.OUT, Group.MIXER, i),
        vec("mamba", f"{prefix}.dt_proj.bias", inner, i, Split.OUT, Group.MIXER),
        fixed("mamba", f"{prefix}.A", inner, ds, i, split=Split.OUT, group=Group.MIXER, dtype="fp32"),
        vec("mamba", f"{prefix}.D", inner, i, Split.OUT, Group.MIXER),
        lin("mamba", f"{prefix}.out_proj", h, inner, Split.IN, Group.MIXER, i),
        vec("mamba", f"{prefix}.dt_layernorm", rank, i),
        vec("mamba", f"{prefix}.b_layernorm", ds, i),
        vec("mamba", f"{prefix}.c_layernorm", ds, i),
    ]
    if cfg.get("mamba_conv_bias", True):
        out.append(vec("mamba", f"{prefix}.conv1d.bias", inner, i, Split.OUT, Group.MIXER))
    return out


def gated_deltanet(a: Arch, i: int, prefix: str) -> list[Tensor]:
    """Qwen3-Next / Qwen3.5 Gated DeltaNet mixer: in_proj_qkvz, in_proj_ba, conv1d, A_log, dt_bias over TP; norm
    replicated; out_proj RowParallel."""
    cfg, h = a.cfg, a.hidden
    nk = need_int(cfg, "linear_num_key_heads")
    nv = need_int(cfg, "linear_num_value_heads")
    dk = need_int(cfg, "linear_key_head_dim")
    dv = need_int(cfg, "linear_value_head_dim")
    k = opt_int(cfg, "linear_conv_kernel_dim", 4)
    conv_dim = 2 * nk * dk + nv * dv
    return [
        lin("linear_attention", f"{prefix}.in_proj_qkvz", 2 * nk * dk + 2 * nv * dv, h, Split.OUT, Group.MIXER, i),
        lin("linear_attention", f"{prefix}.in_proj_ba", 2 * nv, h, Split.OUT, Group.MIXER, i),
        fixed("linear_attention", f"{prefix}.conv1d", conv_dim, k, i, split=Split.OUT, group=Group.MIXER),
        vec("linear_attention", f"{prefix}.A_log", nv, i, Split.OUT, Group.MIXER),
        vec("linear_attention", f"{prefix}.dt_bias", nv, i, Split.OUT, Group.MIXER),
        vec("norms", f"{prefix}.norm", dv, i),
        lin("linear_attention", f"{prefix}.out_proj", h, nv * dv, Split.IN, Group.MIXER, i),
    ]
