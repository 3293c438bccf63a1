"""Geometry checks on a flat config before any arithmetic: every field the planners read has the right kind and a
sane size, or the config is refused with one :class:`~kvplan.errors.InputError` on ``--model`` naming the field.

Upper bounds keep nonsense (``num_hidden_layers`` 2**31, 10**30 experts) from turning into hour-long loops or huge
allocations; the lower bound is 1 where the engines divide by the value.  Real configs (every preset and
tests/data/shared/hf-configs) pass unchanged.

Refused (:func:`check_geometry`): fields of the wrong kind or size; KV heads that exceed or do not divide the
attention heads (no engine can group them: SGLang and vLLM both map ``num_attention_heads / num_key_value_heads``
query heads onto each KV head); a context limit below :data:`MIN_CONTEXT` (the longest request is one token less
than the context, so ``max_position_embeddings: 1`` would "fit" a request of 0 tokens).

Warned about (:func:`config_warnings`, collected on ``ModelSpec.warnings``; the config still plans): dtypes, layer
types and quantization methods / algorithms kvplan does not know (each named, with what kvplan assumes instead),
and a checkpoint size (safetensors ``total_size``) implausible for the geometry -- outside
[:data:`CHECKPOINT_LOW`, :data:`CHECKPOINT_HIGH`] times :func:`estimate_checkpoint_bytes` -- which is then dropped
so the weights are estimated from the geometry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError, echo
from kvplan.hfconfig.dtypes import dtype_of
from kvplan.hfconfig.quant import AWQ_GPTQ_METHODS, TORCH_DTYPES, awq_gptq_bits
from kvplan.hfconfig.readers import count_or, is_int

# Geometry fields that must be whole numbers when present (None = absent).  Upper bounds keep nonsense
# (num_hidden_layers 2**31, 10**30 experts) from turning into hour-long loops or huge allocations; the
# lower bound is 1 where the engines divide by the value.
MAX_LAYERS = 4096
_MAX_DIM = 1 << 24
_INT_FIELDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, MAX_LAYERS),
    "hidden_size": (1, _MAX_DIM),
    "num_attention_heads": (1, 1 << 16),
    "num_key_value_heads": (1, 1 << 16),
    "head_dim": (1, 1 << 16),
    "v_head_dim": (0, 1 << 16),
    "intermediate_size": (0, _MAX_DIM),
    "moe_intermediate_size": (0, _MAX_DIM),
    "shared_expert_intermediate_size": (0, _MAX_DIM),
    "vocab_size": (0, _MAX_DIM),
    "q_lora_rank": (0, _MAX_DIM),
    "kv_lora_rank": (0, _MAX_DIM),
    "qk_nope_head_dim": (0, 1 << 16),
    "qk_rope_head_dim": (0, 1 << 16),
    "qk_head_dim": (0, 1 << 16),
    "index_head_dim": (0, 1 << 16),
    "index_n_heads": (1, 1 << 16),
    "index_topk": (0, _MAX_DIM),
    "o_lora_rank": (0, _MAX_DIM),
    "o_groups": (1, 1 << 16),
    "num_nextn_predict_layers": (0, 64),
    "n_routed_experts": (0, 1 << 14),
    "num_experts": (0, 1 << 14),
    "num_local_experts": (0, 1 << 14),
    "n_shared_experts": (0, 1 << 10),
    "num_experts_per_tok": (0, 1 << 14),
    "first_k_dense_replace": (0, MAX_LAYERS),
    "max_window_layers": (0, MAX_LAYERS),
    "linear_num_key_heads": (1, 1 << 16),
    "linear_num_value_heads": (1, 1 << 16),
    "linear_key_head_dim": (0, 1 << 16),
    "linear_value_head_dim": (0, 1 << 16),
    "linear_conv_kernel_dim": (0, 1 << 10),
    "mamba_num_heads": (1, 1 << 16),
    "mamba_head_dim": (0, 1 << 16),
    "ssm_state_size": (0, 1 << 16),
    "n_groups": (1, 1 << 16),
    "conv_kernel": (0, 1 << 10),
    "mamba_d_state": (0, 1 << 16),
    "mamba_d_conv": (0, 1 << 10),
    "attn_layer_period": (1, MAX_LAYERS),
    "attn_layer_offset": (0, MAX_LAYERS),
    "expert_layer_period": (1, MAX_LAYERS),
    "expert_layer_offset": (0, MAX_LAYERS),
    "decoder_sparse_step": (1, MAX_LAYERS),
    "interleave_moe_layer_step": (0, MAX_LAYERS),
    "full_attention_interval": (1, MAX_LAYERS),
    "attention_chunk_size": (0, 1 << 40),
    "swa_num_key_value_heads": (1, 1 << 16),
    "swa_head_dim": (0, 1 << 16),
    "swa_v_head_dim": (0, 1 << 16),
    "swa_num_attention_heads": (1, 1 << 16),
    "global_head_dim": (0, 1 << 16),
    "num_global_key_value_heads": (1, 1 << 16),
    "vision_n_layers": (0, MAX_LAYERS),
    "sliding_window_pattern": (0, MAX_LAYERS),
    "moe_layer_freq": (1, MAX_LAYERS),
    "max_position_embeddings": (0, 1 << 40),
    "sliding_window": (0, 1 << 40),
}
_INT_LIST_FIELDS = (
    "compress_ratios",
    "mlp_only_layers",
    "kv_source_layer_ids",
    "index_source_layer_ids",
    "engram_table_layers",
)
_STR_LIST_FIELDS = ("architectures", "layer_types", "indexer_types")
_DICT_FIELDS = ("rope_scaling", "quantization_config")


def _bad(key: str, what: str) -> InputError:
    return InputError(f"config field '{key}' {what}", field="--model", hint="pass a Hugging Face config.json")


def _check_ints(flat: Mapping[str, Any]) -> None:
    for key, (lo, hi) in _INT_FIELDS.items():
        v = flat.get(key)
        if v is None or (key == "moe_layer_freq" and isinstance(v, list)):
            continue
        if key == "sliding_window_pattern" and isinstance(v, str):
            continue  # Exaone-4 writes it as letters ("LLLG"); kvplan.hfconfig.layer_kinds reads that form
        if not is_int(v) or not lo <= v <= hi:
            raise _bad(key, f"must be an integer between {lo} and {hi:,}, got {str(v)[:40]!r}")


def _check_lists(flat: Mapping[str, Any]) -> None:
    for key in _INT_LIST_FIELDS:
        v = flat.get(key)
        if v is None:
            continue
        if (
            not isinstance(v, list)
            or len(v) > 2 * MAX_LAYERS
            or any(x is not None and (not is_int(x) or not 0 <= x <= _MAX_DIM) for x in v)
        ):
            raise _bad(key, "must be a list of non-negative integers")
    for key in _STR_LIST_FIELDS:
        v = flat.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            raise _bad(key, "must be a list of strings")


def _check_per_layer(flat: Mapping[str, Any]) -> None:
    """Per-layer lists (and the hybrid pattern string) hold at least one entry per layer."""
    layers = flat.get("num_hidden_layers")
    for key in ("layer_types", "indexer_types", "hybrid_override_pattern"):
        v = flat.get(key)
        if key == "hybrid_override_pattern" and v is not None and not isinstance(v, str):
            raise _bad(key, "must be a string")
        if isinstance(v, (list, str)) and v and isinstance(layers, int) and len(v) < layers:
            raise _bad(key, f"has {len(v)} entries for {layers} layers")
    cr = flat.get("compress_ratios")
    if isinstance(cr, list) and cr and isinstance(layers, int) and len(cr) < layers:
        raise _bad("compress_ratios", f"has {len(cr)} entries for {layers} layers")


def _check_kinds(flat: Mapping[str, Any]) -> None:
    for key in _DICT_FIELDS:
        v = flat.get(key)
        if v is not None and not isinstance(v, Mapping):
            raise _bad(key, "must be a JSON object")
    for key in ("model_type", "torch_dtype", "dtype"):
        v = flat.get(key)
        if v is not None and not isinstance(v, str):
            raise _bad(key, "must be a string")
    rope = flat.get("rope_scaling") or {}
    factor = rope.get("factor")
    if factor is not None and (
        isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1024
    ):
        raise _bad("rope_scaling.factor", f"must be a number in (0, 1024], got {str(factor)[:40]!r}")


#: SGLang 0.5.23 ``utils/hf_transformers/common.py`` CONTEXT_LENGTH_KEYS, in its order (the first present wins)
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
#: the shortest context an engine can serve a request in (a request of one token plus the one it generates)
MIN_CONTEXT = 2

# (attention heads, KV heads) pairs: the KV heads must divide the attention heads and not be more
_HEAD_PAIRS = (
    ("num_attention_heads", "num_key_value_heads"),
    ("swa_num_attention_heads", "swa_num_key_value_heads"),
    ("num_attention_heads", "num_global_key_value_heads"),
)


def _check_heads(flat: Mapping[str, Any]) -> None:
    """``num_key_value_heads`` <= ``num_attention_heads`` and divides it (likewise the sliding-window and global
    pairs).  Source: SGLang 0.5.23 ``layers/radix_attention.py`` / vLLM 0.11.1 ``attention/layer.py`` both compute
    ``num_queries_per_kv = num_heads // num_kv_heads`` and assert the remainder is 0."""
    for heads_key, kv_key in _HEAD_PAIRS:
        heads, kv = flat.get(heads_key), flat.get(kv_key)
        if not (isinstance(heads, int) and isinstance(kv, int)) or heads < 1 or kv < 1:
            continue
        if kv > heads:
            raise _bad(kv_key, f"({kv}) is more than {heads_key} ({heads}); a KV head serves one or more query heads")
        if heads % kv:
            raise _bad(
                kv_key,
                f"({kv}) does not divide {heads_key} ({heads}); each KV head serves the same number of query heads",
            )


def _check_context(flat: Mapping[str, Any]) -> None:
    """Every context limit the engines read (:data:`CONTEXT_KEYS`) is, when a number, at least :data:`MIN_CONTEXT`.

    Example: ``{"max_position_embeddings": 1}`` -> "config field 'max_position_embeddings' must be at least 2 (the
    longest request is one token less than the context), got 1".
    """
    for key in CONTEXT_KEYS:
        v = flat.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < MIN_CONTEXT:
            raise _bad(
                key,
                f"must be at least {MIN_CONTEXT} (the longest request is one token less than the "
                f"context), got {echo(v, 40)}",
            )


#: architectures whose attention is MLA in both engines (SGLang ``models/deepseek_v2.py`` and the models built on
#: it, vLLM ``model_executor/models/deepseek_v2.py`` likewise): their ``kv_lora_rank`` is the KV latent width
MLA_ARCHITECTURES = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "KimiK25ForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "GlmMoeDsaForCausalLM",
        "Glm4MoeLiteForCausalLM",
    }
)

#: every architecture kvplan's presets and test configs hold (tests/test_hardening_geometry.py keeps it complete);
#: another one is sized from its fields with a warning.  The last block came with the presets of 8 Dec 2026 (issue
#: 25 item 7): each builds its attention from num_key_value_heads x head_dim per layer, with no cross-layer KV
#: sharing; registered in vLLM 0.21 / 0.32 (vllm/model_executor/models/registry.py: bailing_moe, deepseek_v2
#: (DeepseekForCausalLM), gemma, glm4_1v, glm, granite, hy_v3, internlm2, llama (InternLM3 / InternLM), minicpmv,
#: olmo2, qwen (QWenLMHeadModel), qwen2_vl, transformers (SmolLM3), voxtral), Ernie4_5_ForCausalLM and
#: MiniCPMV4_6ForConditionalGeneration in SGLang 0.5.23 (sglang/srt/models/ernie4.py, minicpmv.py); YiForCausalLM
#: is the Llama layout of the Yi remote code
KNOWN_ARCHITECTURES = MLA_ARCHITECTURES | frozenset(
    """BailingMoeV2ForCausalLM DeepseekV41ForCausalLM DeepseekV4ForCausalLM Ernie4_5_MoeForCausalLM Gemma2ForCausalLM
    Gemma3ForCausalLM Gemma3ForConditionalGeneration Gemma4ForConditionalGeneration Glm4MoeForCausalLM
    GptOssForCausalLM JambaForCausalLM LagunaForCausalLM Llama4ForConditionalGeneration LlamaForCausalLM
    MiMoForCausalLM MiMoV2FlashForCausalLM MiniMaxM2ForCausalLM Mistral3ForConditionalGeneration MistralForCausalLM
    MixtralForCausalLM MuseGlimmerForConditionalGeneration NemotronHForCausalLM Phi3ForCausalLM Phi3VForCausalLM
    Qwen2ForCausalLM Qwen3ForCausalLM Qwen3MoeForCausalLM Qwen3NextForCausalLM Qwen3VLForConditionalGeneration
    Qwen3VLMoeForConditionalGeneration Qwen3_5ForConditionalGeneration Qwen3_5MoeForCausalLM
    Qwen3_5MoeForConditionalGeneration Step3p7FlashForCausalLM
    CohereForCausalLM Exaone4ForCausalLM Exaone4_5_ForConditionalGeneration GraniteMoeForCausalLM MiniCPMForCausalLM
    Ministral3ForCausalLM Olmo3ForCausalLM PhiForCausalLM Qwen2MoeForCausalLM Qwen2_5_VLForConditionalGeneration
    StableLmForCausalLM Starcoder2ForCausalLM
    BailingMoeForCausalLM DeepseekForCausalLM Ernie4_5_ForCausalLM GemmaForCausalLM Glm4vForConditionalGeneration
    GlmForCausalLM GraniteForCausalLM HYV3ForCausalLM InternLM2ForCausalLM InternLM3ForCausalLM InternLMForCausalLM
    MiniCPMV MiniCPMV4_6ForConditionalGeneration Olmo2ForCausalLM QWenLMHeadModel Qwen2VLForConditionalGeneration
    SmolLM3ForCausalLM VoxtralForConditionalGeneration YiForCausalLM""".split()
)


def _architectures(flat: Mapping[str, Any]) -> list[str]:
    archs = flat.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def _check_architecture(flat: Mapping[str, Any]) -> None:
    """An MLA architecture without a KV latent (``kv_lora_rank`` 0 or missing) is refused: the engines would build
    MLA layers of width 0, and sizing it as grouped heads (what the fields alone suggest) would plan another model.

    Example: DeepSeek-V3's config with ``kv_lora_rank: 0`` -> "config field 'kv_lora_rank' is 0, but
    DeepseekV3ForCausalLM is an MLA architecture ...".
    """
    mla = [a for a in _architectures(flat) if a in MLA_ARCHITECTURES]
    if mla and not flat.get("kv_lora_rank"):
        raise _bad(
            "kv_lora_rank",
            f"is {flat.get('kv_lora_rank')!r}, but {mla[0]} is an MLA architecture whose KV cache is that latent "
            "(SGLang and vLLM build its attention from it); kvplan will not size it as another attention kind",
        )
    _check_mla_fields(flat)


#: the fields an MLA config (``kv_lora_rank`` > 0) must give besides the latent: the KV row is
#: ``kv_lora_rank + qk_rope_head_dim`` wide, and the weight estimate reads ``qk_nope_head_dim`` for the q/kv up
#: projections (SGLang and vLLM ``models/deepseek_v2.py`` read both from the config without a default)
_MLA_FIELDS = ("qk_rope_head_dim", "qk_nope_head_dim")


def _check_mla_fields(flat: Mapping[str, Any]) -> None:
    """A config that kvplan sizes as MLA (a positive ``kv_lora_rank``) but lacks a field that layout reads is refused
    here, at input, instead of failing later in whichever view reads it first.

    Example: Qwen3-32B's config plus ``"kv_lora_rank": 512`` -> "config field 'qk_rope_head_dim' is missing, but
    kv_lora_rank 512 makes this an MLA config ...".
    """
    rank = flat.get("kv_lora_rank")
    if not is_int(rank) or rank <= 0:
        return
    for key in _MLA_FIELDS:
        if flat.get(key) is None:
            raise _bad(
                key,
                f"is missing, but kv_lora_rank {rank} makes this an MLA config, whose KV row and weights need it "
                f"(add '{key}' from the model's config.json, or drop kv_lora_rank if the model is not MLA)",
            )


def check_geometry(flat: Mapping[str, Any]) -> None:
    """Reject config values of the wrong kind or absurd size before any arithmetic (InputError on ``--model``).

    Checked in this order (the first failure is raised): the integer fields (``_INT_FIELDS``, with bounds), the
    integer and string lists, the per-layer lists' lengths, the JSON objects and strings, ``rope_scaling.factor``,
    the KV heads against the attention heads, the context limits.

    Example: ``{"num_hidden_layers": 2**31}`` -> "config field 'num_hidden_layers' must be an integer between
    1 and 4,096"; ``{"num_attention_heads": 32, "num_key_value_heads": 12}`` -> "config field 'num_key_value_heads'
    (12) does not divide num_attention_heads (32)".  Real configs (every preset and tests/data/shared/hf-configs)
    pass unchanged.
    """
    _check_ints(flat)
    _check_lists(flat)
    _check_per_layer(flat)
    _check_kinds(flat)
    _check_heads(flat)
    _check_context(flat)
    _check_architecture(flat)


# ------------------------------------------------------------------------------------------------ warnings

#: layer_types / indexer_types values the engines (and kvplan's geometry) know; anything else gets a warning
KNOWN_LAYER_TYPES = frozenset(
    {
        "full_attention",
        "sliding_attention",
        "linear_attention",
        "chunked_attention",
        "attention",
        "mamba",
        "deepseek_sparse_attention",
    }
)
KNOWN_INDEXER_TYPES = frozenset({"full", "shared"})
#: quant_method values kvplan's rules recognise (kvplan.hfconfig.quant._METHOD_RULES); others are priced "mixed"
KNOWN_QUANT_METHODS = frozenset(
    {
        "fp8",
        "mxfp4",
        "modelopt",
        "modelopt_fp4",
        "modelopt_fp8",
        "nvfp4",
        "compressed-tensors",
        "bitsandbytes",
        *AWQ_GPTQ_METHODS,
    }
)
#: kv_cache_quant_algo values an engine reads (SGLang configure_kv_cache_dtype: FP8 -> fp8_e4m3)
KNOWN_KV_QUANT_ALGOS = frozenset({"FP8"})
CHECKPOINT_LOW, CHECKPOINT_HIGH = 1 / 8, 8.0


def _known_algo(algo: str) -> bool:
    """A ModelOpt ``quant_algo`` kvplan prices: FP8 variants, FP4 variants, MIXED_PRECISION."""
    a = algo.upper()
    return "FP8" in a or "FP4" in a or a == "MIXED_PRECISION"


def _dtype_warnings(flat: Mapping[str, Any]) -> list[str]:
    out = []
    for key in ("torch_dtype", "dtype"):
        v = flat.get(key)
        if isinstance(v, str) and v.replace("torch.", "") not in TORCH_DTYPES and v != "auto":
            out.append(
                f"config field '{key}' is '{echo(v, 40)}', not a dtype kvplan knows "
                f"({', '.join(TORCH_DTYPES)}); sized as bfloat16"
            )
    return out


def _layer_type_warnings(flat: Mapping[str, Any]) -> list[str]:
    out = []
    for key, known in (("layer_types", KNOWN_LAYER_TYPES), ("indexer_types", KNOWN_INDEXER_TYPES)):
        v = flat.get(key)
        unknown = sorted({x for x in v if isinstance(x, str) and x not in known}) if isinstance(v, list) else []
        if unknown:
            names = ", ".join(f"'{echo(x, 40)}'" for x in unknown[:3]) + (" ..." if len(unknown) > 3 else "")
            out.append(
                f"config field '{key}' holds {names}, not a layer type kvplan knows "
                f"({', '.join(sorted(known))}); those layers are planned as the engine's default"
            )
    return out


def _quant_warnings(flat: Mapping[str, Any]) -> list[str]:
    out = []
    qc = flat.get("quantization_config")
    if isinstance(qc, Mapping):
        method = str(qc.get("quant_method") or "").lower()
        if method and method not in KNOWN_QUANT_METHODS:
            out.append(
                f"quantization_config.quant_method '{echo(method, 40)}' is not a method kvplan knows; "
                "the weights are priced as 'mixed'"
            )
        algo = qc.get("quant_algo")
        if method == "modelopt" and isinstance(algo, str) and not _known_algo(algo):
            out.append(
                f"quantization_config.quant_algo '{echo(algo, 40)}' is not an algorithm kvplan knows; "
                "the weights are priced as 'mixed'"
            )
    if isinstance(qc, Mapping) and str(qc.get("quant_method") or "").lower() in AWQ_GPTQ_METHODS:
        bits = awq_gptq_bits(qc)
        if bits < 4:
            out.append(
                f"quantization_config bits {bits}: the weights are priced as int4 (4 bits per weight), "
                f"{4 - bits} bit(s) more than the checkpoint holds"
            )
    kv = flat.get("kv_cache_quant_algo") or (qc.get("kv_cache_quant_algo") if isinstance(qc, Mapping) else None)
    if isinstance(kv, str) and kv.upper() not in KNOWN_KV_QUANT_ALGOS:
        out.append(
            f"kv_cache_quant_algo '{echo(kv, 40)}' is not one the engines read (FP8); the KV cache is sized "
            "in the model dtype unless --kv-cache-dtype says otherwise"
        )
    return out


def hf_quant_warnings(hq: Any) -> list[str]:
    """Warnings for a ModelOpt ``hf_quant_config.json`` (``{"quantization": {"quant_algo", "kv_cache_quant_algo"}}``)
    naming an algorithm kvplan does not know (it then prices the weights from config.json alone).

    Example: ``{"quantization": {"quant_algo": "W4A8_AWQ"}}`` -> ["hf_quant_config.json quant_algo 'W4A8_AWQ' is
    not an algorithm kvplan knows; ..."].
    """
    q = hq.get("quantization") if isinstance(hq, Mapping) else None
    if not isinstance(q, Mapping):
        return []
    out = []
    algo = q.get("quant_algo")
    if isinstance(algo, str) and algo and not _known_algo(algo):
        out.append(
            f"hf_quant_config.json quant_algo '{echo(algo, 40)}' is not an algorithm kvplan knows; the "
            "weights are priced from config.json"
        )
    kv = q.get("kv_cache_quant_algo")
    if isinstance(kv, str) and kv and kv.upper() not in KNOWN_KV_QUANT_ALGOS:
        out.append(f"hf_quant_config.json kv_cache_quant_algo '{echo(kv, 40)}' is not one the engines read (FP8)")
    return out


def _attention_params(flat: Mapping[str, Any], hidden: int, heads: int) -> int:
    """Attention parameters of one layer: MLA (``kv_lora_rank``) or grouped heads."""
    if count_or(flat, "kv_lora_rank"):
        rope, nope = count_or(flat, "qk_rope_head_dim"), count_or(flat, "qk_nope_head_dim")
        v, q_lora, kv_lora = (
            count_or(flat, "v_head_dim") or nope,
            count_or(flat, "q_lora_rank"),
            count_or(flat, "kv_lora_rank"),
        )
        q = hidden * q_lora + q_lora * heads * (nope + rope) if q_lora else hidden * heads * (nope + rope)
        return q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v) + heads * v * hidden
    kv = count_or(flat, "num_key_value_heads", heads) or heads
    d = count_or(flat, "head_dim") or hidden // heads
    return hidden * d * (2 * heads + 2 * kv)


def _mlp_params(flat: Mapping[str, Any], hidden: int) -> int:
    """MLP parameters of one layer: every routed and shared expert, or the dense MLP (gate, up, down)."""
    experts = (
        count_or(flat, "n_routed_experts")
        or count_or(flat, "num_experts")
        or count_or(flat, "num_local_experts")
        or count_or(flat, "moe_num_experts")
    )
    inter = count_or(flat, "intermediate_size")
    if not experts:
        return 3 * hidden * inter
    moe = count_or(flat, "moe_intermediate_size") or inter
    shared = count_or(flat, "n_shared_experts") * moe + count_or(flat, "shared_expert_intermediate_size")
    return 3 * hidden * (experts * moe + shared)


#: the weight formats the plausibility band sizes (scales and 16-bit layers ignored): a parameter is one value of
#: the format's :class:`kvplan.hfconfig.dtypes.DType`, ``bits / 8`` bytes; ``mixed`` (and anything else) counts 1
_PARAM_FORMATS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4")


def _bytes_per_param(quantization: str) -> float:
    """``bits / 8`` of a :data:`_PARAM_FORMATS` format (bf16 2.0, fp8 1.0, int4 0.5), else 1.0."""
    d = dtype_of(quantization) if quantization in _PARAM_FORMATS else None
    return 1.0 if d is None else d.bits / 8


def estimate_checkpoint_bytes(flat: Mapping[str, Any], *, quantization: str) -> int | None:
    """A coarse checkpoint size from the geometry, only to judge a safetensors ``total_size`` (the weight estimate
    proper is :mod:`kvplan.weights`).  None when the config lacks hidden_size, layers or heads.

    Formula: ``params = L * (attention + mlp) + vocab * hidden * (1 if tie_word_embeddings else 2)`` with
    ``attention = hidden * head_dim * (2 * heads + 2 * kv_heads)`` (MLA: the q / kv LoRA projections, the up
    projections and o_proj) and ``mlp = 3 * hidden * intermediate`` (MoE: ``3 * hidden * moe_intermediate`` per
    routed and shared expert, every layer); ``bytes = params * bytes_per_param[quantization]`` (bf16 2, fp8 1,
    int4 / nvfp4 / mxfp4 0.5, mixed 1).  Over every preset and tests/data/shared/hf-configs it is within 0.3x-1.6x
    of kvplan's tensor-by-tensor estimate (hybrid Mamba models, counted as attention on every layer, are the 0.3x).

    Example: Qwen3-8B (36 layers, hidden 4096, 32 heads / 8 KV of 128, intermediate 12288, vocab 151936, untied,
    bf16): ``36 * (4096*128*80 + 3*4096*12288) + 151936*4096*2 = 8,190,427,136`` params -> 16,380,854,272 B
    (its index says 16,381,470,720).
    """
    hidden, layers, heads = (
        count_or(flat, "hidden_size"),
        count_or(flat, "num_hidden_layers"),
        count_or(flat, "num_attention_heads"),
    )
    if not (hidden and layers and heads):
        return None
    emb = count_or(flat, "vocab_size") * hidden * (1 if flat.get("tie_word_embeddings") else 2)
    params = layers * (_attention_params(flat, hidden, heads) + _mlp_params(flat, hidden)) + emb
    return int(params * _bytes_per_param(quantization)) or None


def plausible_checkpoint(
    flat: Mapping[str, Any], *, quantization: str, checkpoint_bytes: int | None
) -> tuple[int | None, str | None]:
    """``(checkpoint_bytes, None)`` when it is plausible (or unknown), else ``(None, warning)``: a total_size outside
    ``[CHECKPOINT_LOW, CHECKPOINT_HIGH] x estimate_checkpoint_bytes`` is not trusted and the weights are estimated
    from the geometry instead.

    Example: a 32B bf16 model whose index says ``total_size: 1`` -> (None, "checkpoint size 1 B (safetensors
    total_size) is implausible for the geometry (about 65.5 GB); the weights are estimated from the config").
    """
    if checkpoint_bytes is None:
        return None, None
    est = estimate_checkpoint_bytes(flat, quantization=quantization)
    if est is None or CHECKPOINT_LOW * est <= checkpoint_bytes <= CHECKPOINT_HIGH * est:
        return checkpoint_bytes, None
    return None, (
        f"checkpoint size {checkpoint_bytes:,} B (safetensors total_size) is implausible for the geometry "
        f"(about {est / 1e9:,.1f} GB, outside {CHECKPOINT_LOW:g}x-{CHECKPOINT_HIGH:g}x); the weights are "
        "estimated from the config"
    )


def config_warnings(flat: Mapping[str, Any]) -> list[str]:
    """What a (checked) flat config holds that kvplan does not know: dtypes, layer types, quantization methods and
    algorithms, KV quantization algorithms -- each named with what kvplan assumes instead.

    Example: ``{"torch_dtype": "float8_e4m3fn"}`` -> ["config field 'torch_dtype' is 'float8_e4m3fn', not a dtype
    kvplan knows (bfloat16, float16, half, float32, float); sized as bfloat16"].
    """
    return _dtype_warnings(flat) + _layer_type_warnings(flat) + _quant_warnings(flat) + _architecture_warnings(flat)


def _architecture_warnings(flat: Mapping[str, Any]) -> list[str]:
    """A named warning for an architecture kvplan has no preset or test config of: it is sized from its fields
    (the family they suggest), never silently."""
    unknown = [a for a in _architectures(flat) if a not in KNOWN_ARCHITECTURES]
    if not unknown:
        return []
    return [
        f"config field 'architectures' holds '{echo(unknown[0], 60)}', not an architecture kvplan knows; "
        "it is sized from its config fields (kv heads, latent, windows), which may not be how the engines build it"
    ]
