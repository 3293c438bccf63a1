"""Per-GPU weight footprint, sharded the way SGLang (and vLLM) shard it.

kvplan's KV budget is "free memory after weights - reserve".  When the user gives no
measured weight load (SGLang ``Load weight end ... mem usage=``, vLLM ``Model loading
took``), this module estimates the bytes of weights that the *largest* rank holds,
because both engines size the KV pool from the minimum free memory over ranks.

Method
------
1. ``count_params(config)`` enumerates every weight tensor of the model from its Hugging
   Face ``config.json`` (flattened: a ``text_config`` is merged over the top level, as
   ``sgl-project/sglang python/sglang/srt/configs/deepseek_v41.py
   normalize_deepseek_v41_config`` does for DeepSeek-V4.1, v0.5.23).
2. Each tensor carries (a) the component it belongs to, (b) its Hugging Face module path
   (so ``ignore`` / ``modules_to_not_convert`` / ``exclude_modules`` lists apply), (c) how
   the engine shards it, and (d) whether it is a Linear weight the checkpoint's scheme can
   quantize.
3. Bytes of a tensor on one rank = its per-rank shape priced by the storage scheme
   (see ``scheme_bytes``).  ``per_gpu_bytes`` = the largest pipeline stage's sum.
4. With ``checkpoint_bytes`` (safetensors ``metadata.total_size``), the same model gives
   the fraction of the checkpoint that the largest rank holds; the per-GPU estimate is
   ``checkpoint_bytes * per_gpu_model / checkpoint_model`` (so the absolute size comes from
   the checkpoint, the sharding from the structure; MTP layers that are not loaded drop out).

Sharding rules (SGLang v0.5.23, sgl-project/sglang python/sglang/srt/...):

* ``layers/linear.py QKVParallelLinear.__init__``: q heads / attn_tp; kv heads per rank
  = kv / attn_tp, or 1 (replicated) when attn_tp >= kv heads.
* ``models/deepseek_v2.py DeepseekV2AttentionMLA.__init__``: ``fused_qkv_a_proj_with_mqa``
  (q_a + kv_a) and ``kv_a_proj_with_mqa`` are ReplicatedLinear; q_b / kv_b ColumnParallel and
  o_proj RowParallel over the *attention*-TP group (tp / attn_dp).
* ``layers/attention/dsa/dsa_indexer.py Indexer.__init__``: DSA indexer wq_b, wk,
  weights_proj all ReplicatedLinear (weights_proj bf16).
* ``models/deepseek_v4.py MqaAttentionBase.__init__``: wq_a / wkv replicated, wq_b and wo_a
  ColumnParallel, wo_b RowParallel over attn_tp; attn_sink fp32 [n_heads];
  ``layers/attention/dsv4/compressor.py Compressor`` (ape fp32, wkv_gate bf16, replicated);
  ``layers/attention/dsv4/indexer.py C4Indexer`` (wq_b bf16, weights_proj bf16, replicated).
* ``layers/moe/fused_moe_triton/layer.py FusedMoE.__init__``: each rank holds
  n_experts / ep experts, each with intermediate / moe_tp, moe_tp = tp / ep
  (``model_executor/model_runner_components/moe_ep_setup.py``).
* Dense MLP and (non-fused) shared experts: Merged/Row parallel over the full TP group
  (``DeepseekV2MLP``, ``parallel_group="tp"``).
* ``layers/vocab_parallel_embedding.py VocabParallelEmbedding.__init__``: vocab padded to a
  multiple of 64 (64*tp if that does not divide), split over TP; the DeepSeek family's input
  embedding uses the attention-TP group under DP attention (``get_embedding_tp_kwargs``);
  DeepSeek-V4 replicates it under DP attention (``DeepseekV4Model.__init__``); lm_head uses
  attention TP only with ``--enable-dp-lm-head``.
* ``models/deepseek_common/deepseek_weight_loader.py do_load_weights``: with speculative
  decoding off (NextNDisabledConfig) layers >= num_hidden_layers (the MTP layer) are skipped;
  ``models/deepseek_v4.py load_weights`` likewise skips ``mtp.*``.
* ``deepseek_weight_loader.py post_load_weights``: MLA keeps kv_b_proj and adds w_kc / w_vc,
  a bf16 copy of the rank's kv_b_proj (block-fp8 dequantized on CUDA).
* ``layers/engram.py EngramEmbedding.__init__``: DeepSeek-V4.1 engram tables are fp8 rows
  (+ one e8m0 scale per 32) split by rows over TP, or kept in host memory with
  ``SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1`` (``srt/environ.py``).
* ``distributed/utils.py get_pp_indices``: layers // pp per stage, the remainder to the last
  stages; vLLM (``vllm/distributed/utils.py get_pp_indices``, v0.33.0) gives the remainder
  to all but the last stage.

Everything is integer bytes.  No engine code is copied; the rules above are restated.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.parallel import pp_layer_ranges

__all__ = [
    "WeightEstimate",
    "count_params",
    "estimate_weight_bytes",
    "flatten_config",
    "pp_layer_ranges",
    "quantization_from_config",
    "scheme_bytes",
]

GIB = 2**30
VOCAB_PAD = 64  # DEFAULT_VOCAB_PADDING_SIZE, sglang layers/vocab_parallel_embedding.py (vLLM: same)

_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1, "int8": 1}
_TORCH_DTYPES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
}


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class WeightEstimate:
    per_gpu_bytes: int  # the largest rank's weight bytes (what the engine's MIN-over-ranks budget sees)
    total_bytes: int  # whole model as loaded (every rank's share, replicas counted once)
    params: int  # total parameters counted (as in the checkpoint, MTP and engram included)
    method: str  # "checkpoint" | "params"
    breakdown: tuple[tuple[str, int], ...]  # (component, per-GPU bytes) on the largest rank
    notes: tuple[str, ...]  # every assumption, human readable

    @property
    def per_gpu_gib(self) -> float:
        return self.per_gpu_bytes / GIB


# --------------------------------------------------------------------------- config


def flatten_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """One flat dict: ``text_config`` keys over the top-level keys.

    The top level keeps ``quantization_config`` / dtype when the text config lacks them;
    ``_outer_architectures`` records the wrapper (a vision model wraps a text model).
    """
    if not isinstance(config, Mapping):
        raise InputError("config must be a mapping (a parsed config.json)", field="config")
    top = dict(config)
    text = top.pop("text_config", None)
    flat = dict(top)
    if isinstance(text, Mapping):
        flat.update(text)
        for k in ("quantization_config", "torch_dtype", "dtype"):
            if top.get(k) is not None and flat.get(k) is None:
                flat[k] = top[k]
        flat["_outer_architectures"] = top.get("architectures")
    return flat


def _get(cfg: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return v
    return default


def _model_type(cfg: Mapping[str, Any]) -> str:
    return str(cfg.get("model_type") or "").lower()


def _arch(cfg: Mapping[str, Any]) -> str:
    a = cfg.get("architectures") or [""]
    return str(a[0])


def _family(cfg: Mapping[str, Any]) -> str:
    mt = _model_type(cfg)
    if mt.startswith("deepseek_v4") or (cfg.get("compress_ratios") and cfg.get("o_groups")):
        return "dsv4"
    if cfg.get("kv_lora_rank"):
        return "mla"
    if cfg.get("hybrid_override_pattern"):
        return "nemotron_h"
    if cfg.get("linear_num_value_heads") or mt.startswith(("qwen3_next", "qwen3_5")):
        return "gdn_hybrid"
    return "gqa"


# --------------------------------------------------------------------------- tensors


@dataclass(frozen=True)
class _T:
    """One weight tensor kind, repeated ``copies`` times (experts) in one layer."""

    comp: str  # breakdown component
    path: str  # Hugging Face module path (ignore-list matching)
    rows: int  # output features (vector length for vectors)
    cols: int  # input features (1 for vectors)
    split: str  # "none" | "out" | "in" | "heads" | "vocab"
    group: str  # "none" | "attn" | "tp" | "moe" | "emb" | "lm"
    quant: bool  # a Linear weight that a quantization scheme may store compressed
    layer: int | None  # decoder layer index, None = embeddings / final norm / lm_head
    copies: int = 1  # experts in this tensor (split over EP)
    dtype: str | None = None  # storage dtype forced by the engine (fp32 sinks, bf16 gates)
    head: int = 1  # rows per head for split == "heads"
    expert: bool = False
    stage: str = "layer"  # "first" | "last" | "layer" | "mtp" | "extra"

    @property
    def full_rows(self) -> int:
        return self.rows * self.head

    @property
    def params(self) -> int:
        return self.full_rows * self.cols * self.copies


def _lin(comp, path, out, inp, split, group, layer, **kw) -> _T:
    return _T(comp, path, out, inp, split, group, True, layer, **kw)


def _vec(comp, path, n, layer, split="none", group="none", **kw) -> _T:
    return _T(comp, path, n, 1, split, group, False, layer, **kw)


def _head_dim(cfg) -> int:
    hd = cfg.get("head_dim")
    if hd:
        return int(hd)
    return int(cfg["hidden_size"]) // int(cfg["num_attention_heads"])


def _num_experts(cfg) -> int:
    return int(_get(cfg, "n_routed_experts", "num_experts", "num_local_experts", default=0) or 0)


def _is_moe_layer(cfg, i: int) -> bool:
    n = _num_experts(cfg)
    if not n:
        return False
    types = cfg.get("mlp_layer_types")
    if isinstance(types, list) and i < len(types):
        return str(types[i]) in ("sparse", "moe")
    mlp_only = cfg.get("mlp_only_layers") or []
    if i in mlp_only:
        return False
    fk = cfg.get("first_k_dense_replace")
    if fk is not None:
        freq = int(cfg.get("moe_layer_freq") or 1)
        return i >= int(fk) and i % freq == 0
    step = cfg.get("decoder_sparse_step")
    if step:
        return (i + 1) % int(step) == 0
    return True


def _mlp(cfg, i: int, prefix: str, inter: int, comp: str, group: str, *, gated=True, bias=False):
    h = int(cfg["hidden_size"])
    out = []
    if gated:
        out.append(_lin(comp, f"{prefix}.gate_proj", inter, h, "out", group, i))
        out.append(_lin(comp, f"{prefix}.up_proj", inter, h, "out", group, i))
    else:
        out.append(_lin(comp, f"{prefix}.up_proj", inter, h, "out", group, i))
    out.append(_lin(comp, f"{prefix}.down_proj", h, inter, "in", group, i))
    if bias:
        out.append(_vec(comp, f"{prefix}.bias", (2 if gated else 1) * inter, i, "out", group))
        out.append(_vec(comp, f"{prefix}.down_bias", h, i))
    return out


def _experts(cfg, i: int, prefix: str, n: int, inter: int, *, gated=True, bias=False):
    h = int(cfg["hidden_size"])
    kw = dict(copies=n, expert=True)
    out = []
    if gated:
        out.append(_lin("experts", f"{prefix}.experts.gate_proj", inter, h, "out", "moe", i, **kw))
    out.append(_lin("experts", f"{prefix}.experts.up_proj", inter, h, "out", "moe", i, **kw))
    out.append(_lin("experts", f"{prefix}.experts.down_proj", h, inter, "in", "moe", i, **kw))
    if bias:  # gpt-oss expert biases (bf16, sglang mxfp4.py Mxfp4MoEMethod.create_weights)
        out.append(_T("experts", f"{prefix}.experts.gate_up_bias", (2 if gated else 1) * inter, 1,
                      "out", "moe", False, i, copies=n, expert=True, dtype="bf16"))
        out.append(_T("experts", f"{prefix}.experts.down_bias", h, 1, "none", "moe", False, i,
                      copies=n, expert=True, dtype="bf16"))
    return out


def _moe_block(cfg, i: int, prefix: str, *, gated=True) -> list[_T]:
    """Router, routed experts and shared experts of one MoE layer."""
    h = int(cfg["hidden_size"])
    n = _num_experts(cfg)
    mt = _model_type(cfg)
    inter = int(_get(cfg, "moe_intermediate_size", "intermediate_size"))
    if mt == "gpt_oss":
        inter = int(cfg["intermediate_size"])
    bias = mt == "gpt_oss"
    gate_name = f"{prefix}.router" if mt == "gpt_oss" else f"{prefix}.gate"
    out = [_T("router", gate_name, n, h, "none", "none", False, i, dtype=None)]
    if bias:
        out.append(_vec("router", f"{gate_name}.bias", n, i))
    if cfg.get("topk_method") == "noaux_tc" or mt.startswith(("deepseek_v3", "deepseek_v32", "kimi", "glm")):
        if _family(cfg) in ("mla", "dsv4") or mt.startswith("glm4_moe"):
            out.append(_vec("router", f"{gate_name}.e_score_correction_bias", n, i, dtype="fp32"))
    out += _experts(cfg, i, prefix, n, inter, gated=gated, bias=bias)
    n_shared = int(cfg.get("n_shared_experts") or 0)
    sh_inter = _get(cfg, "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size")
    if sh_inter:
        out += _mlp(cfg, i, f"{prefix}.shared_experts", int(sh_inter), "shared_experts", "tp", gated=gated)
        if cfg.get("shared_expert_intermediate_size"):  # Qwen2-MoE / Qwen3-Next sigmoid gate
            out.append(_T("router", f"{prefix}.shared_expert_gate", 1, h, "none", "none", False, i))
    elif n_shared:
        out += _mlp(cfg, i, f"{prefix}.shared_experts", n_shared * inter, "shared_experts", "tp", gated=gated)
    return out


def _gqa_attention(cfg, i: int, prefix: str, *, gated_q=False) -> list[_T]:
    h = int(cfg["hidden_size"])
    nh = int(cfg["num_attention_heads"])
    nkv = int(_get(cfg, "num_key_value_heads", default=nh))
    hd = _head_dim(cfg)
    mt = _model_type(cfg)
    q_mult = 2 if gated_q else 1
    out = [
        _T("attention", f"{prefix}.q_proj", nh * q_mult, h, "heads", "attn", True, i, head=hd),
        _T("attention", f"{prefix}.k_proj", nkv, h, "heads", "attn", True, i, head=hd),
        _T("attention", f"{prefix}.v_proj", nkv, h, "heads", "attn", True, i, head=hd),
        _lin("attention", f"{prefix}.o_proj", h, nh * hd, "in", "attn", i),
    ]
    qkv_bias = mt in ("qwen2", "qwen2_moe", "qwen2_vl") or bool(cfg.get("attention_bias"))
    if qkv_bias:
        out += [
            _T("attention", f"{prefix}.q_proj.bias", nh * q_mult, 1, "heads", "attn", False, i, head=hd),
            _T("attention", f"{prefix}.k_proj.bias", nkv, 1, "heads", "attn", False, i, head=hd),
            _T("attention", f"{prefix}.v_proj.bias", nkv, 1, "heads", "attn", False, i, head=hd),
        ]
        if cfg.get("attention_bias"):
            out.append(_vec("attention", f"{prefix}.o_proj.bias", h, i))
    if mt.startswith(("qwen3", "gemma3", "olmo2")):
        out += [_vec("norms", f"{prefix}.q_norm", hd, i), _vec("norms", f"{prefix}.k_norm", hd, i)]
    if mt == "gpt_oss":  # attention sinks, one per head (sglang gpt_oss.py GptOssAttention)
        out.append(_T("attention", f"{prefix}.sinks", nh, 1, "heads", "attn", False, i, head=1))
    return out


def _mla_attention(cfg, i: int, prefix: str, *, indexer: bool) -> list[_T]:
    h = int(cfg["hidden_size"])
    nh = int(cfg["num_attention_heads"])
    ql = cfg.get("q_lora_rank")
    kvl = int(cfg["kv_lora_rank"])
    nope = int(cfg["qk_nope_head_dim"])
    rope = int(cfg["qk_rope_head_dim"])
    vd = int(cfg["v_head_dim"])
    out = []
    if ql:
        ql = int(ql)
        out += [
            _lin("attention", f"{prefix}.q_a_proj", ql, h, "none", "none", i),
            _vec("norms", f"{prefix}.q_a_layernorm", ql, i),
            _T("attention", f"{prefix}.q_b_proj", nh, ql, "heads", "attn", True, i, head=nope + rope),
        ]
    else:
        out.append(_T("attention", f"{prefix}.q_proj", nh, h, "heads", "attn", True, i, head=nope + rope))
    out += [
        _lin("attention", f"{prefix}.kv_a_proj_with_mqa", kvl + rope, h, "none", "none", i),
        _vec("norms", f"{prefix}.kv_a_layernorm", kvl, i),
        _T("attention", f"{prefix}.kv_b_proj", nh, kvl, "heads", "attn", True, i, head=nope + vd),
        _lin("attention", f"{prefix}.o_proj", h, nh * vd, "in", "attn", i),
    ]
    if indexer:
        ih = int(cfg["index_n_heads"])
        ihd = int(cfg["index_head_dim"])
        out += [
            _lin("indexer", f"{prefix}.indexer.wq_b", ih * ihd, int(ql or h), "none", "none", i),
            _lin("indexer", f"{prefix}.indexer.wk", ihd, h, "none", "none", i),
            _vec("indexer", f"{prefix}.indexer.k_norm", 2 * ihd, i),  # LayerNorm weight + bias
            _T("indexer", f"{prefix}.indexer.weights_proj", ih, h, "none", "none", False, i, dtype="bf16"),
        ]
    return out


def _dsa_indexer_layers(cfg, n_layers: int) -> set[int]:
    if not cfg.get("index_topk"):
        return set()
    types = cfg.get("indexer_types")
    if isinstance(types, list):
        return {i for i in range(n_layers) if i < len(types) and types[i] != "shared"}
    return set(range(n_layers))


def _dsv4_attention(cfg, i: int, prefix: str, ratio: int) -> list[_T]:
    h = int(cfg["hidden_size"])
    nh = int(cfg["num_attention_heads"])
    hd = int(cfg["head_dim"])
    ql = int(cfg["q_lora_rank"])
    og = int(cfg["o_groups"])
    ol = int(cfg["o_lora_rank"])
    out = [
        _lin("attention", f"{prefix}.wq_a", ql, h, "none", "none", i),
        _lin("attention", f"{prefix}.wkv", hd, h, "none", "none", i),
        _vec("norms", f"{prefix}.q_norm", ql, i),
        _vec("norms", f"{prefix}.kv_norm", hd, i),
        _T("attention", f"{prefix}.wq_b", nh, ql, "heads", "attn", True, i, head=hd),
        # wo_a: [o_groups * o_lora, n_heads*hd/o_groups], column parallel by groups
        _T("attention", f"{prefix}.wo_a", og, nh * hd // og, "heads", "attn", True, i, head=ol),
        _lin("attention", f"{prefix}.wo_b", h, og * ol, "in", "attn", i),
        _T("attention", f"{prefix}.attn_sink", nh, 1, "heads", "attn", False, i, dtype="fp32"),
    ]

    def compressor(pfx: str, dim: int, r: int) -> list[_T]:
        coff = 2 if r == 4 else 1
        return [
            _T("attention", f"{pfx}.ape", r, coff * dim, "none", "none", False, i, dtype="fp32"),
            _T("attention", f"{pfx}.wkv_gate", 2 * coff * dim, h, "none", "none", False, i, dtype="bf16"),
            _T("norms", f"{pfx}.norm", dim, 1, "none", "none", False, i, dtype="fp32"),
        ]

    if ratio in (4, 128):
        out += compressor(f"{prefix}.compressor", hd, ratio)
        if ratio == 4:
            ih = int(cfg["index_n_heads"])
            ihd = int(cfg["index_head_dim"])
            out += [
                _T("indexer", f"{prefix}.indexer.wq_b", ih * ihd, ql, "none", "none", False, i, dtype="bf16"),
                _T("indexer", f"{prefix}.indexer.weights_proj", ih, h, "none", "none", False, i, dtype="bf16"),
            ]
            out += [
                _T("indexer", t.path, t.rows, t.cols, t.split, t.group, t.quant, t.layer, dtype=t.dtype)
                for t in compressor(f"{prefix}.indexer.compressor", ihd, 4)
            ]
    elif ratio in (1, 2):
        if i in (cfg.get("kv_source_layer_ids") or ()):
            out += compressor(f"{prefix}.compressor", hd, ratio)
        if i in (cfg.get("index_source_layer_ids") or ()):
            ih = int(cfg["index_n_heads"])
            ihd = int(cfg["index_head_dim"])
            out += [
                _T("indexer", f"{prefix}.indexer.wq_b", ih * ihd, ql, "none", "none", False, i, dtype="bf16"),
                _T("indexer", f"{prefix}.indexer.weights_proj", ih, h, "none", "none", False, i, dtype="bf16"),
            ]
    return out


def _mamba2_mixer(cfg, i: int, prefix: str) -> list[_T]:
    """Nemotron-H / Mamba-2 mixer: in_proj, conv1d (+bias), A_log, D, dt_bias, norm, out_proj."""
    h = int(cfg["hidden_size"])
    nheads = int(_get(cfg, "mamba_num_heads"))
    hdim = int(_get(cfg, "mamba_head_dim"))
    d_inner = nheads * hdim
    ng = int(cfg.get("n_groups") or 1)
    ds = int(_get(cfg, "ssm_state_size", "mamba_d_state"))
    k = int(_get(cfg, "conv_kernel", "mamba_d_conv", default=4))
    conv_dim = d_inner + 2 * ng * ds
    out = [
        _lin("mamba", f"{prefix}.in_proj", 2 * d_inner + 2 * ng * ds + nheads, h, "out", "tp", i),
        _T("mamba", f"{prefix}.conv1d", conv_dim, k, "out", "tp", False, i),
        _vec("mamba", f"{prefix}.A_log", nheads, i, "out", "tp"),
        _vec("mamba", f"{prefix}.D", nheads, i, "out", "tp"),
        _vec("mamba", f"{prefix}.dt_bias", nheads, i, "out", "tp"),
        _vec("mamba", f"{prefix}.norm", d_inner, i, "out", "tp"),
        _lin("mamba", f"{prefix}.out_proj", h, d_inner, "in", "tp", i),
    ]
    if cfg.get("use_conv_bias", True):
        out.append(_vec("mamba", f"{prefix}.conv1d.bias", conv_dim, i, "out", "tp"))
    return out


def _gated_deltanet(cfg, i: int, prefix: str) -> list[_T]:
    """Qwen3-Next / Qwen3.5 Gated DeltaNet mixer."""
    h = int(cfg["hidden_size"])
    nk = int(cfg["linear_num_key_heads"])
    nv = int(cfg["linear_num_value_heads"])
    dk = int(cfg["linear_key_head_dim"])
    dv = int(cfg["linear_value_head_dim"])
    k = int(cfg.get("linear_conv_kernel_dim") or 4)
    conv_dim = 2 * nk * dk + nv * dv
    return [
        _lin("linear_attention", f"{prefix}.in_proj_qkvz", 2 * nk * dk + 2 * nv * dv, h, "out", "tp", i),
        _lin("linear_attention", f"{prefix}.in_proj_ba", 2 * nv, h, "out", "tp", i),
        _T("linear_attention", f"{prefix}.conv1d", conv_dim, k, "out", "tp", False, i),
        _vec("linear_attention", f"{prefix}.A_log", nv, i, "out", "tp"),
        _vec("linear_attention", f"{prefix}.dt_bias", nv, i, "out", "tp"),
        _vec("norms", f"{prefix}.norm", dv, i),
        _lin("linear_attention", f"{prefix}.out_proj", h, nv * dv, "in", "tp", i),
    ]


def _layer_is_full_attention(cfg, i: int) -> bool:
    types = cfg.get("layer_types")
    if isinstance(types, list) and i < len(types):
        return types[i] not in ("linear_attention",)
    fai = cfg.get("full_attention_interval")
    if fai:
        return (i + 1) % int(fai) == 0
    return True


def _decoder_layer(cfg, i: int, fam: str, prefix: str, indexer_layers: set[int]) -> list[_T]:
    h = int(cfg["hidden_size"])
    mt = _model_type(cfg)
    ts: list[_T] = []
    if fam == "nemotron_h":
        pattern = str(cfg["hybrid_override_pattern"])
        kind = pattern[i]
        ts.append(_vec("norms", f"{prefix}.norm", h, i))
        if kind == "M":
            ts += _mamba2_mixer(cfg, i, f"{prefix}.mixer")
        elif kind == "*":
            ts += _gqa_attention(cfg, i, f"{prefix}.mixer")
        elif kind == "-":
            ts += _mlp(cfg, i, f"{prefix}.mixer", int(cfg["intermediate_size"]), "dense_mlp", "tp", gated=False)
        elif kind == "E":
            ts += _moe_block(cfg, i, f"{prefix}.mixer", gated=False)
        return ts
    if fam == "dsv4":
        ratios = cfg.get("compress_ratios") or []
        ratio = int(ratios[i]) if i < len(ratios) else 0
        ts += _dsv4_attention(cfg, i, f"{prefix}.attn", ratio)
        ts += [_vec("norms", f"{prefix}.attn_norm", h, i), _vec("norms", f"{prefix}.ffn_norm", h, i)]
        hc = int(cfg.get("hc_mult") or 0)
        if hc:  # hyper-connection mixing params, fp32 (deepseek_v4.py make_hc_mixing_params)
            mix = (2 + hc) * hc
            ts += [
                _T("hyper_connections", f"{prefix}.hc_fn", 2 * mix, hc * h, "none", "none", False, i, dtype="fp32"),
                _T("hyper_connections", f"{prefix}.hc_base", 2 * mix + 6, 1, "none", "none", False, i, dtype="fp32"),
            ]
        ts += _moe_block(cfg, i, f"{prefix}.ffn")
        return ts
    # attention
    if fam == "mla":
        ts += _mla_attention(cfg, i, f"{prefix}.self_attn", indexer=i in indexer_layers)
    elif fam == "gdn_hybrid" and not _layer_is_full_attention(cfg, i):
        ts += _gated_deltanet(cfg, i, f"{prefix}.linear_attn")
    else:
        ts += _gqa_attention(cfg, i, f"{prefix}.self_attn", gated_q=fam == "gdn_hybrid")
    n_norms = 4 if mt.startswith("gemma") and mt != "gemma" else 2
    ts += [_vec("norms", f"{prefix}.layernorm{k}", h, i) for k in range(n_norms)]
    # feed-forward
    if _is_moe_layer(cfg, i):
        ts += _moe_block(cfg, i, f"{prefix}.mlp")
    else:
        inter = int(cfg["intermediate_size"])
        ts += _mlp(cfg, i, f"{prefix}.mlp", inter, "dense_mlp", "tp")
    return ts


def _mtp_layers(cfg, fam: str, n_layers: int, indexer_layers: set[int]) -> list[_T]:
    """DeepSeek-style MTP (NextN) modules as stored in the checkpoint (layer index >= L)."""
    n = int(cfg.get("num_nextn_predict_layers") or 0)
    if not n or fam not in ("mla", "dsv4", "gqa"):
        return []
    if fam == "gqa" and not _model_type(cfg).startswith("glm4_moe"):
        return []
    h = int(cfg["hidden_size"])
    out: list[_T] = []
    for j in range(n):
        i = n_layers + j
        pfx = f"model.layers.{i}"
        ts = _decoder_layer(cfg, i, fam, pfx, indexer_layers | ({i} if indexer_layers else set()))
        ts += [
            _vec("norms", f"{pfx}.enorm", h, i),
            _vec("norms", f"{pfx}.hnorm", h, i),
            _lin("mtp", f"{pfx}.eh_proj", h, 2 * h, "none", "none", i),
            _vec("norms", f"{pfx}.shared_head.norm", h, i),
        ]
        out += [
            _T("mtp", t.path, t.rows, t.cols, t.split, t.group, t.quant, t.layer, t.copies, t.dtype,
               t.head, t.expert, "mtp")
            for t in ts
        ]
        if fam != "dsv4":
            # the checkpoint's MTP layer carries its own embed_tokens and shared_head.head;
            # the draft loader skips both and shares the target's (deepseek_weight_loader.py)
            V = int(cfg["vocab_size"])
            out += [
                _T("mtp", f"{pfx}.embed_tokens", V, h, "vocab", "emb", False, i, stage="ckpt_only"),
                _T("mtp", f"{pfx}.shared_head.head", V, h, "vocab", "lm", False, i, stage="ckpt_only"),
            ]
    return out


def _vision_tower(cfg: Mapping[str, Any], top: Mapping[str, Any]) -> list[_T]:
    """A generic ViT (SigLIP-like) + projector when ``vision_config`` gives its geometry."""
    v = top.get("vision_config")
    if not isinstance(v, Mapping):
        return []
    vh = _get(v, "hidden_size", "vt_hidden_size")
    vl = _get(v, "num_hidden_layers", "vt_num_hidden_layers")
    vi = _get(v, "intermediate_size", "vt_intermediate_size")
    if not (vh and vl and vi):
        return []
    vh, vl, vi = int(vh), int(vl), int(vi)
    patch = int(v.get("patch_size") or 14)
    image = int(v.get("image_size") or 896)
    npos = (image // patch) ** 2
    per_layer = 4 * vh * vh + 4 * vh + 2 * vh * vi + vi + vh + 4 * vh
    total = vl * per_layer + 3 * patch * patch * vh + vh + npos * vh + 2 * vh
    total += vh * int(cfg["hidden_size"]) + vh  # projector + its norm
    return [_T("vision", "vision_tower", total, 1, "none", "none", False, None, stage="first")]


def _engram(cfg: Mapping[str, Any]) -> list[_T]:
    rows = cfg.get("engram_num_embeddings") or ()
    dim = int(cfg.get("engram_head_dim") or 0)
    if not rows or not dim:
        return []
    # fp8 rows + one e8m0 byte per 32 (layers/engram.py EngramEmbedding; FP8 block 32)
    return [
        _T("engram", f"engram.{k}.table", int(r), dim, "out", "tp", False, None, dtype="fp8", stage="extra")
        for k, r in enumerate(rows)
    ] + [
        _T("engram", f"engram.{k}.scale", int(r), math.ceil(dim / 32), "out", "tp", False, None,
           dtype="fp8", stage="extra")
        for k, r in enumerate(rows)
    ]


def _tensors(config: Mapping[str, Any]) -> tuple[dict[str, Any], str, list[_T]]:
    cfg = flatten_config(config)
    for key in ("hidden_size", "num_hidden_layers", "vocab_size"):
        if not cfg.get(key):
            raise InputError(f"config.json has no {key}", field=key)
    fam = _family(cfg)
    L = int(cfg["num_hidden_layers"])
    h = int(cfg["hidden_size"])
    V = int(cfg["vocab_size"])
    indexer_layers = _dsa_indexer_layers(cfg, L) if fam == "mla" else set()
    ts: list[_T] = [_T("embeddings", "model.embed_tokens", V, h, "vocab", "emb", False, None, stage="first")]
    for i in range(L):
        ts += _decoder_layer(cfg, i, fam, f"model.layers.{i}", indexer_layers)
    ts.append(_vec("norms", "model.norm", h, None, stage="last"))
    if fam == "dsv4" and cfg.get("hc_mult"):
        hc = int(cfg["hc_mult"])
        ts.append(_T("hyper_connections", "model.hc_head", hc * hc * h + hc + 1, 1, "none", "none",
                     False, None, dtype="fp32", stage="last"))
    if not cfg.get("tie_word_embeddings", False) or _model_type(cfg) == "gpt_oss":
        ts.append(_T("lm_head", "lm_head", V, h, "vocab", "lm", False, None, stage="last"))
    ts += _mtp_layers(cfg, fam, L, indexer_layers)
    ts += _vision_tower(cfg, config)
    ts += _engram(cfg)
    return cfg, fam, ts


def count_params(config: Mapping[str, Any]) -> dict[str, int]:
    """Parameters per component, as stored in the checkpoint (MTP and engram included).

    Components: embeddings, attention, indexer, linear_attention, mamba, dense_mlp, router,
    experts, shared_experts, norms, lm_head, hyper_connections, mtp, vision, engram; plus
    ``total``.  Tied embeddings count once.  Example: Llama-3.1-8B (32 layers, h 4096, 32/8
    heads, inter 14336, vocab 128256, untied) = 8,030,261,248.
    """
    _, _, ts = _tensors(config)
    out: dict[str, int] = {}
    for t in ts:
        out[t.comp] = out.get(t.comp, 0) + t.params
    out["total"] = sum(v for k, v in out.items())
    return out


# --------------------------------------------------------------------------- quantization


def _expert_dtype(cfg: Mapping[str, Any]) -> str:
    """``expert_dtype`` at the top level (V4-Flash) or inside quantization_config (V4.1-Flash's release)."""
    qc = cfg.get("quantization_config")
    v = cfg.get("expert_dtype") or (qc.get("expert_dtype") if isinstance(qc, Mapping) else None)
    return str(v or "").lower()


def quantization_from_config(config: Mapping[str, Any]) -> str:
    """The checkpoint's weight format from ``quantization_config`` / ``torch_dtype``.

    mxfp4 (gpt-oss), fp8 (block or per-tensor), nvfp4 (ModelOpt NVFP4 / compressed-tensors
    fp4), int4 (AWQ, GPTQ 4-bit, compressed-tensors int4 W4A16), int8; "mixed" when the dense
    and expert formats differ (DeepSeek-V4 fp8 + fp4 experts); else the dtype.
    """
    cfg = flatten_config(config)
    qc = cfg.get("quantization_config")
    if isinstance(qc, Mapping):
        method = str(qc.get("quant_method") or "").lower()
        algo = str(qc.get("quant_algo") or "").lower()
        if method == "fp8" or algo == "fp8":
            if _expert_dtype(cfg) in ("fp4", "mxfp4"):
                return "mixed"
            return "fp8"
        if method == "mxfp4":
            return "mxfp4"
        if "fp4" in algo or method in ("modelopt_fp4", "nvfp4"):
            return "nvfp4"
        if method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round", "auto_round"):
            bits = int(qc.get("bits") or qc.get("w_bit") or 4)
            return "int8" if bits == 8 else "int4"
        if method == "compressed-tensors":
            w = _ct_weights(qc)
            if w:
                typ, bits = str(w.get("type") or "int"), int(w.get("num_bits") or 8)
                if typ == "float" and bits == 4:
                    return "nvfp4"
                if typ == "float" and bits == 8:
                    return "fp8"
                if typ == "int" and bits == 4:
                    return "int4"
                if typ == "int" and bits == 8:
                    return "int8"
            return "mixed"
        if method in ("bitsandbytes",):
            return "int4" if qc.get("load_in_4bit") else "int8"
        if method:
            return "mixed"
    dt = str(_get(cfg, "torch_dtype", "dtype", default="bfloat16")).replace("torch.", "")
    return {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}.get(_TORCH_DTYPES.get(dt, "bf16"), "bf16")


def _ct_weights(qc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    groups = qc.get("config_groups")
    if isinstance(groups, Mapping):
        for g in groups.values():
            if isinstance(g, Mapping) and isinstance(g.get("weights"), Mapping):
                return g["weights"]
    return None


@dataclass(frozen=True)
class _Scheme:
    name: str  # bf16 fp16 fp32 fp8_block fp8_channel fp8_tensor mxfp4 nvfp4 int4 int8
    block: tuple[int, int] = (128, 128)
    group: int = 128
    zeros: bool = True  # int4: packed zero points (asymmetric)
    g_idx: bool = False  # GPTQ act-order index (int32 per input feature)


def scheme_bytes(scheme: str, rows: int, cols: int, *, block: tuple[int, int] = (128, 128),
                 group: int = 128, zeros: bool = True, g_idx: bool = False) -> int:
    """Bytes of one ``rows x cols`` Linear weight stored as ``scheme`` (incl. its scales).

    * bf16/fp16: 2*r*c; fp32: 4*r*c.
    * fp8_block: r*c + 4*ceil(r/bn)*ceil(c/bk) (fp32 ``weight_scale_inv`` per block;
      sglang layers/quantization/fp8.py Fp8LinearMethod.create_weights).
    * fp8_channel: r*c + 4*r; fp8_tensor: r*c + 4 (+4 input scale ignored).
    * mxfp4: r*c/2 + r*ceil(c/32) (uint8 e8m0 per 32; sglang mxfp4.py) -> 4.25 bits/param.
    * nvfp4: r*c/2 + r*ceil(c/16) (fp8 e4m3 per 16) + 8 (fp32 weight_scale_2 and input_scale;
      sglang modelopt_quant.py ModelOptFp4LinearMethod) -> 4.5 bits/param.
    * int4 (group g): r*c/2 + 2*r*ceil(c/g) (fp16/bf16 scales) + r*ceil(c/g)/2 if zero points
      (AWQ/GPTQ qzeros, 4-bit packed) + 4*c if GPTQ g_idx.  g=128, asymmetric: 4.156 bits/param.
    * int8: r*c + 4*r (per-channel fp32 scale).

    Example: a 4096x4096 fp8 block-128 weight = 16,777,216 + 4*32*32 = 16,781,312 B.
    """
    n = rows * cols
    if scheme in ("bf16", "fp16"):
        return 2 * n
    if scheme == "fp32":
        return 4 * n
    if scheme == "fp8_block":
        return n + 4 * math.ceil(rows / block[0]) * math.ceil(cols / block[1])
    if scheme == "fp8_channel":
        return n + 4 * rows
    if scheme == "fp8_tensor":
        return n + 4
    if scheme == "mxfp4":
        return math.ceil(n / 2) + rows * math.ceil(cols / 32)
    if scheme == "nvfp4":
        return math.ceil(n / 2) + rows * math.ceil(cols / 16) + 8
    if scheme == "int4":
        ng = math.ceil(cols / group)
        b = math.ceil(n / 2) + 2 * rows * ng
        if zeros:
            b += math.ceil(rows * ng / 2)
        if g_idx:
            b += 4 * cols
        return b
    if scheme == "int8":
        return n + 4 * rows
    raise InputError(f"unknown storage scheme {scheme!r}", field="quantization")


def _patterns(qc: Mapping[str, Any] | None, extra: Mapping[str, Any] | None) -> list[str]:
    pats: list[str] = []
    for src in (qc, extra):
        if not isinstance(src, Mapping):
            continue
        q = src.get("quantization") if isinstance(src.get("quantization"), Mapping) else src
        for key in ("ignore", "modules_to_not_convert", "ignored_layers", "exclude_modules"):
            v = q.get(key)
            if isinstance(v, list):
                pats += [str(p) for p in v]
    return pats


class _Patterns(list):
    """The ignore patterns, pre-sorted once: plain names are looked up in a set of whole dotted runs.

    A plain pattern ``p`` matches ``path`` when ``"." + p + "."`` occurs in ``"." + path + "."``, i.e. when ``p``
    equals a run of whole components of ``path`` (``path == p`` and ``path.startswith(p + ".")`` included).
    Checking the ~20 runs of a path against a set replaces a scan of every pattern per tensor (GLM-5-FP8 lists
    712 modules_to_not_convert over ~2,000 tensors: 2.4 s before, milliseconds now).
    """

    def __init__(self, pats: list[str]):
        super().__init__(pats)
        self.plain = frozenset(p for p in pats if not p.startswith("re:") and not any(c in p for c in "*?["))
        self.other = [p for p in pats if p not in self.plain]
        self.odd = any(p == "" or p.startswith(".") or p.endswith(".") for p in self.plain)


def _ignored(path: str, pats: list[str]) -> bool:
    if not pats:
        return False
    if isinstance(pats, _Patterns) and not pats.odd:
        comps = path.split(".")
        if "" not in comps:
            n = len(comps)
            if pats.plain and any(".".join(comps[i:j]) in pats.plain for i in range(n) for j in range(i + 1, n + 1)):
                return True
            return _ignored(path, pats.other)
    for p in pats:
        if p.startswith("re:"):
            if re.match(p[3:], path):
                return True
        elif any(c in p for c in "*?["):
            if fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path + ".x", p):
                return True
        elif path == p or path.startswith(p + ".") or ("." + p + ".") in ("." + path + "."):
            return True
    return False


class _Quant:
    """Which storage scheme each tensor gets."""

    def __init__(self, cfg: Mapping[str, Any], quantization: str, hf_quant: Mapping[str, Any] | None):
        self.notes: list[str] = []
        qc = cfg.get("quantization_config") if isinstance(cfg.get("quantization_config"), Mapping) else None
        dt = str(_get(cfg, "torch_dtype", "dtype", default="bfloat16")).replace("torch.", "")
        base = _TORCH_DTYPES.get(dt, "bf16")
        if quantization in ("bf16", "fp16", "fp32"):
            base = quantization
        elif base == "fp32":
            base = "bf16"
            self.notes.append("config dtype float32 is served as bf16 (dtype=auto)")
        self.base = base
        self.pats = _Patterns(_patterns(qc, hf_quant))
        ckpt = quantization_from_config(cfg)
        self.from_ckpt = ckpt == quantization or (quantization == "mixed" and qc is not None)
        method = str((qc or {}).get("quant_method") or "").lower()
        self.dense: _Scheme | None = None
        self.expert: _Scheme | None = None
        q = quantization
        if q in ("bf16", "fp16", "fp32"):
            self.notes.append(f"all weights {base}")
            return
        if q == "fp8" or (q == "mixed" and method == "fp8"):
            blk = (qc or {}).get("weight_block_size") if self.from_ckpt else None
            if blk:
                self.dense = _Scheme("fp8_block", block=(int(blk[0]), int(blk[1])))
                self.notes.append(f"fp8 e4m3 weights with a fp32 scale per {blk[0]}x{blk[1]} block "
                                  "(1.0002 B/param at 128x128)")
            elif self.from_ckpt:
                self.dense = _Scheme("fp8_tensor")
                self.notes.append("fp8 weights, one fp32 scale per tensor (per-tensor checkpoint)")
            else:
                self.dense = _Scheme("fp8_tensor")
                self.notes.append("online fp8 (--quantization fp8 on a 16-bit checkpoint): per-tensor scale")
            self.expert = self.dense
            if _expert_dtype(cfg) in ("fp4", "mxfp4"):
                self.expert = _Scheme("mxfp4")
                self.notes.append("routed experts fp4 e2m1 + e8m0 scale per 32 (expert_dtype fp4): 4.25 bits/param")
        elif q == "mxfp4":
            self.expert = _Scheme("mxfp4")
            self.notes.append("experts MXFP4: 4.25 bits/param incl. e8m0 scales per 32; dense Linear layers "
                              "unquantized (sglang mxfp4.py Mxfp4Config.get_quant_method)")
        elif q == "nvfp4":
            self.dense = self.expert = _Scheme("nvfp4")
            self.notes.append("NVFP4: 4 bits + fp8 scale per 16 + fp32 per-tensor scales (4.5 bits/param)")
        elif q in ("int4", "int8", "mixed"):
            w = _ct_weights(qc) if (qc and method == "compressed-tensors") else None
            if w is not None:
                bits = int(w.get("num_bits") or 4)
                gs = int(w.get("group_size") or 128)
                sym = bool(w.get("symmetric", True))
                if w.get("type") == "float":
                    self.dense = self.expert = _Scheme("fp8_channel" if bits == 8 else "nvfp4")
                elif bits == 4:
                    self.dense = self.expert = _Scheme("int4", group=gs, zeros=not sym)
                else:
                    self.dense = self.expert = _Scheme("int8")
                self.notes.append(f"compressed-tensors {w.get('type')}{bits} group {gs}, "
                                  f"{'symmetric (no zero points)' if sym else 'with zero points'}")
            elif q in ("int4", "int8"):
                bits = 8 if q == "int8" else 4
                gs = int((qc or {}).get("group_size") or (qc or {}).get("q_group_size") or 128)
                if bits == 4:
                    gptq = "gptq" in method
                    sym = bool((qc or {}).get("sym", False)) if gptq else not bool((qc or {}).get("zero_point", True))
                    desc = bool((qc or {}).get("desc_act", False))
                    self.dense = self.expert = _Scheme("int4", group=gs, zeros=not sym, g_idx=gptq)
                    self.notes.append(f"int4 group {gs}: 16-bit scale per group"
                                      f"{'' if sym else ' + 4-bit packed zero point'}"
                                      f"{' + int32 g_idx per input feature (GPTQ)' if gptq else ''}"
                                      f"{' (desc_act)' if desc else ''}")
                else:
                    self.dense = self.expert = _Scheme("int8")
                    self.notes.append("int8 weights, fp32 scale per output channel")
            else:
                raise InputError("quantization 'mixed' needs the checkpoint's quantization_config",
                                 field="quantization")
        else:
            raise InputError(f"unknown quantization {quantization!r}", field="quantization")
        if self.pats:
            self.notes.append(f"{len(self.pats)} ignore/modules_to_not_convert pattern(s) from the "
                              "quantization config keep matching layers in " + base)
        self.notes.append("embeddings, lm_head, norms, router gates and biases stay " + base)

    def tensor_bytes(self, t: _T, rows: int, cols: int) -> int:
        if t.dtype is not None:
            return _DTYPE_BYTES[t.dtype] * rows * cols
        if not t.quant:
            return _DTYPE_BYTES[self.base] * rows * cols
        s = self.expert if t.expert else self.dense
        if s is None or _ignored(t.path, self.pats):
            return _DTYPE_BYTES[self.base] * rows * cols
        return scheme_bytes(s.name, rows, cols, block=s.block, group=s.group, zeros=s.zeros, g_idx=s.g_idx)


# --------------------------------------------------------------------------- sharding


def _padded_vocab_per_rank(vocab: int, group: int) -> int:
    pad = VOCAB_PAD
    if (math.ceil(vocab / pad) * pad) % group:
        pad *= group
    return math.ceil(vocab / pad) * pad // group


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


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _rank_shape(t: _T, groups: Mapping[str, int], ep: int,
                pad: tuple[int, int] | None = None) -> tuple[int, int, int]:
    """(rows, cols, copies) of this tensor on the largest rank."""
    g = groups.get(t.group, 1)
    rows, cols = t.rows, t.cols
    copies = math.ceil(t.copies / ep) if t.expert else t.copies
    if t.split == "out":
        rows = math.ceil(rows / g)
    elif t.split == "in":
        cols = math.ceil(cols / g)
    elif t.split == "heads":
        rows = max(1, math.ceil(t.rows / g)) * t.head
    elif t.split == "vocab":
        rows = _padded_vocab_per_rank(t.rows, g)
    if pad is not None and t.expert:
        ph, pi = pad
        if t.split == "out":  # gate/up (rows = intermediate, cols = hidden) and their bias
            rows, cols = _round_up(rows, pi), (_round_up(cols, ph) if cols > 1 else cols)
        elif t.split == "in":  # down (rows = hidden, cols = intermediate)
            rows, cols = _round_up(rows, ph), _round_up(cols, pi)
        else:  # down bias
            rows = _round_up(rows, ph)
    return rows, cols, copies


# --------------------------------------------------------------------------- estimate


def _config_guard(fn):
    """A config the walk cannot read (missing key, wrong kind) raises InputError on ``--model``, not a crash."""
    import functools

    @functools.wraps(fn)
    def wrapper(**kw: Any):
        from kvplan.hfconfig.spec import config_errors

        with config_errors("the weight estimate"):
            return fn(**kw)
    return wrapper


@_config_guard
def estimate_weight_bytes(
    *,
    config: Mapping[str, Any],
    quantization: str,
    checkpoint_bytes: int | None = None,
    tp_size: int = 1,
    pp_size: int = 1,
    ep_size: int = 1,
    attn_dp_size: int = 1,
    engine: str = "sglang",
    engram_on_host: bool = False,
    load_mtp: bool = False,
    experts_on_host: bool = False,
    expert_padding: str | tuple[int, int] | None = None,
    enable_dp_lm_head: bool = False,
    hf_quant_config: Mapping[str, Any] | None = None,
) -> WeightEstimate:
    """Bytes of weights on the largest rank, as the engine shards them.

    Formula: per_gpu = max over PP stages of sum over tensors of
    ``scheme_bytes(scheme(t), rows_rank(t), cols_rank(t)) * ceil(copies/ep)``, where
    rows_rank/cols_rank follow the sharding rules in the module docstring
    (attention over attn_tp = tp/attn_dp; kv heads max(1, kv/attn_tp); dense MLP and
    shared experts over tp; experts n/ep each split by moe_tp = tp/ep; vocab padded
    to 64 and split over tp; replicated parts whole).  MLA adds the w_kc/w_vc bf16 copy.
    With ``checkpoint_bytes``: per_gpu = checkpoint_bytes * per_gpu_model / checkpoint_model.

    Worked example: Llama-3.1-8B bf16, TP1 = 2 * 8,030,261,248 = 16,060,522,496 B
    (14.96 GiB).  vLLM printed "Model loading took 14.99 GiB" (llmd-llama31-8b-h100).

    ``engine``: "sglang" or "vllm".  For vLLM pass ``ep_size = tp*dp`` when
    ``--enable-expert-parallel`` is on (experts are then not TP-sharded) and keep
    ``attn_dp_size=1`` (vLLM data parallelism replicates the whole model per tp group).
    ``load_mtp``: True when speculative decoding (NextN/MTP) loads the MTP layer.
    ``experts_on_host``: routed experts run on the CPU (kt-kernel ``--kt-num-gpu-experts 0``),
    so no routed-expert bytes land on the GPU.
    ``expert_padding``: a key of ``MXFP4_EXPERT_PADDING`` (the MoE backend) or
    (hidden_multiple, intermediate_multiple): expert buffers rounded up as the kernel needs.
    ``hf_quant_config``: the ModelOpt ``hf_quant_config.json`` (its exclude_modules apply).
    """
    if engine not in ("sglang", "vllm"):
        raise InputError(f"engine must be sglang or vllm, not {engine!r}", field="engine")
    for name, v in (("tp_size", tp_size), ("pp_size", pp_size), ("ep_size", ep_size),
                    ("attn_dp_size", attn_dp_size)):
        if not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive integer", field=name)
    if engine == "sglang" and tp_size % attn_dp_size:
        raise InputError("tp_size must be divisible by attn_dp_size (SGLang: attn_tp = tp / dp)",
                         field="attn_dp_size")
    if engine == "sglang" and tp_size % ep_size:
        raise InputError("tp_size must be divisible by ep_size (SGLang moe_tp = tp / ep)", field="ep_size")
    if checkpoint_bytes is not None and checkpoint_bytes <= 0:
        raise InputError("checkpoint_bytes must be positive", field="checkpoint_bytes")

    cfg, fam, ts = _tensors(config)
    quant = _Quant(cfg, quantization, hf_quant_config)
    notes = list(quant.notes)

    if engine == "sglang":
        attn_tp = tp_size // attn_dp_size
        moe_tp = tp_size // ep_size
    else:
        attn_tp = tp_size
        moe_tp = 1 if ep_size > 1 else tp_size
    dp_attn = engine == "sglang" and attn_dp_size > 1
    emb_group = tp_size
    if dp_attn and fam == "dsv4":
        emb_group = 1
        notes.append("DP attention: DeepSeek-V4 input embedding replicated (DeepseekV4Model.__init__)")
    elif dp_attn and fam == "mla":
        emb_group = attn_tp
        notes.append("DP attention: input embedding split over attention TP (get_embedding_tp_kwargs)")
    lm_group = attn_tp if (enable_dp_lm_head and engine == "sglang") else tp_size
    groups = {"none": 1, "attn": attn_tp, "tp": tp_size, "moe": moe_tp, "emb": emb_group, "lm": lm_group}
    ep_eff = ep_size if _num_experts(cfg) else 1
    notes.append(f"attention over attn_tp={attn_tp}; dense MLP/shared experts over tp={tp_size}; "
                 f"experts /{ep_eff} per rank, each split by moe_tp={moe_tp}; vocab over {emb_group}/{lm_group}")
    nkv = cfg.get("num_key_value_heads")
    if nkv and fam in ("gqa", "gdn_hybrid", "nemotron_h") and attn_tp > int(nkv):
        notes.append(f"{nkv} KV heads < attn_tp {attn_tp}: one KV head replicated per rank")

    pad: tuple[int, int] | None = None
    if expert_padding is not None:
        if isinstance(expert_padding, str):
            if expert_padding not in MXFP4_EXPERT_PADDING:
                raise InputError(f"unknown expert_padding {expert_padding!r}; one of "
                                 + ", ".join(MXFP4_EXPERT_PADDING), field="expert_padding")
            pad = MXFP4_EXPERT_PADDING[expert_padding]
        else:
            pad = (int(expert_padding[0]), int(expert_padding[1]))
        notes.append(f"expert buffers padded: hidden to a multiple of {pad[0]}, per-rank "
                     f"intermediate to a multiple of {pad[1]} ({expert_padding})")
    if experts_on_host:
        notes.append("routed experts on the host (CPU experts): not counted on the GPU")

    L = int(cfg["num_hidden_layers"])
    ranges = pp_layer_ranges(L, pp_size, engine=engine)
    tied = bool(cfg.get("tie_word_embeddings", False)) and _model_type(cfg) != "gpt_oss"

    def stage_of(t: _T) -> set[int]:
        if t.stage == "first":
            return {0}
        if t.stage == "last":
            return {pp_size - 1}
        if t.stage in ("extra",):
            return set(range(pp_size))
        if t.stage == "mtp":
            return {pp_size - 1}
        for s, (a, b) in enumerate(ranges):
            if a <= t.layer < b:
                return {s}
        return {pp_size - 1}

    extra_lm: list[_T] = []
    if tied and pp_size > 1:  # a separate lm_head on the last stage (sglang deepseek_v2/llama)
        V, h = int(cfg["vocab_size"]), int(cfg["hidden_size"])
        extra_lm.append(_T("lm_head", "lm_head", V, h, "vocab", "lm", False, None, stage="last"))
        notes.append("tied embeddings with PP > 1: the last stage holds its own lm_head")
    elif tied:
        notes.append("tied embeddings: lm_head shares the embedding table")

    per_stage = [dict() for _ in range(pp_size)]  # comp -> bytes on one rank of that stage
    total_loaded = 0
    ckpt_total = 0  # model bytes of everything the checkpoint stores
    params = 0
    for t in ts + extra_lm:
        if t not in extra_lm:
            params += t.params
        rows, cols, copies = _rank_shape(t, groups, ep_eff, pad)
        rank_b = quant.tensor_bytes(t, rows, cols) * copies
        full_b = quant.tensor_bytes(t, t.full_rows, t.cols) * t.copies
        # whole-model bytes: one copy of every tensor (replicas counted once)
        if t not in extra_lm:
            ckpt_total += full_b
        loaded = True
        if (t.stage == "mtp" and not load_mtp) or t.stage == "ckpt_only":
            loaded = False
        if t.comp == "engram" and engram_on_host:
            loaded = False
        if t.expert and experts_on_host:
            loaded = False
        if not loaded:
            continue
        total_loaded += full_b
        for s in stage_of(t):
            per_stage[s][t.comp] = per_stage[s].get(t.comp, 0) + rank_b

    # MLA absorbed copies (w_kc/w_vc): a bf16 copy of the rank's kv_b_proj
    if fam == "mla":
        nh = int(cfg["num_attention_heads"])
        rank_heads = math.ceil(nh / attn_tp)
        per_layer = rank_heads * int(cfg["kv_lora_rank"]) * (int(cfg["qk_nope_head_dim"]) + int(cfg["v_head_dim"])) * 2
        for s, (a, b) in enumerate(ranges):
            n = b - a + (int(cfg.get("num_nextn_predict_layers") or 0) if (load_mtp and s == pp_size - 1) else 0)
            per_stage[s]["mla_absorbed"] = per_stage[s].get("mla_absorbed", 0) + n * per_layer
        total_loaded += L * nh * int(cfg["kv_lora_rank"]) * (int(cfg["qk_nope_head_dim"]) + int(cfg["v_head_dim"])) * 2
        notes.append("MLA: w_kc/w_vc absorbed copy of kv_b_proj kept in bf16 next to kv_b_proj "
                     "(deepseek_weight_loader.py post_load_weights)")

    if int(cfg.get("num_nextn_predict_layers") or 0) and any(t.stage == "mtp" for t in ts):
        notes.append("MTP layer " + ("loaded (speculative decoding)" if load_mtp else
                                     "not loaded: speculative decoding off skips layers >= num_hidden_layers "
                                     "(deepseek_weight_loader.py, NextNDisabledConfig)"))
    if any(t.comp == "engram" for t in ts):
        notes.append("engram tables " + ("in host memory (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1)" if engram_on_host
                                         else "on GPU, rows split over TP (layers/engram.py EngramEmbedding)"))
    if any(t.comp == "vision" for t in ts):
        notes.append("vision tower counted as a generic ViT, replicated, 16-bit, on the first stage")
    if quant.expert is not None and quant.expert.name == "mxfp4" and expert_padding is None:
        notes.append("MXFP4 MoE kernels may pad expert buffers (gpt-oss on Marlin: hidden 2880 -> 3072, "
                     "720 -> 768 per rank); pass expert_padding to model it")

    stage_tot = [sum(d.values()) for d in per_stage]
    big = max(range(pp_size), key=lambda s: stage_tot[s])
    per_gpu_model = stage_tot[big]
    breakdown = tuple(sorted(per_stage[big].items(), key=lambda kv: -kv[1]))

    if checkpoint_bytes is None:
        return WeightEstimate(per_gpu_model, total_loaded, params, "params", breakdown, tuple(notes))

    ratio_num, ratio_den = checkpoint_bytes, max(1, ckpt_total)
    per_gpu = per_gpu_model * ratio_num // ratio_den
    total = total_loaded * ratio_num // ratio_den
    notes.append(f"checkpoint {checkpoint_bytes} B scaled by the modelled share of the largest rank "
                 f"({per_gpu_model}/{ckpt_total}); model/checkpoint ratio {ckpt_total / checkpoint_bytes:.4f}")
    breakdown = tuple((k, v * ratio_num // ratio_den) for k, v in breakdown)
    return WeightEstimate(per_gpu, total, params, "checkpoint", breakdown, tuple(notes))
