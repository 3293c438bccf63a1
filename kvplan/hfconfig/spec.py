"""Model input: presets, published variants, and Hugging Face ``config.json`` files or model folders.

Everything is normalised into one :class:`ModelSpec`: the (flattened) HF config, the KV family
the engines see, and the weight facts.  Model code is never imported or executed: only JSON and
TOML are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import InputError

# Architectures SGLang (v0.5.23, python/sglang/srt/configs/model_config.py) treats as MLA / DSA / DeepSeek-V4.
_DSV4_ARCHS = {"DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM", "DeepseekV4ForCausalLMNextN",
               "DeepseekV4ForCausalLMDSpark"}
_DSA_ARCHS = {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"}
_DSA_MODEL_TYPES = {"deepseek_v32", "glm_moe_dsa"}
_MAMBA_MODEL_TYPES = {"qwen3_next", "nemotron_h", "falcon_h1", "granitemoehybrid", "kimi_linear", "jamba",
                      "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "nemotron_nano_v2"}
_MAMBA_ARCHS = {"KimiLinearForCausalLM", "Qwen3NextForCausalLM", "NemotronHForCausalLM", "FalconH1ForCausalLM",
                "GraniteMoeHybridForCausalLM"}
# SGLang v0.5.23 python/sglang/srt/configs/model_config.py is_hybrid_swa_model (Gemma-2/3 are turned off by a
# model override and sized as plain GQA).
_SWA_ARCHS = {"GptOssForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
              "Gemma4UnifiedForConditionalGeneration", "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM", "MiMoV2MTP",
              "Llama4ForConditionalGeneration", "Step3p5ForCausalLM", "Step3p7ForConditionalGeneration",
              "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM", "MellumForCausalLM",
              "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "InklingForConditionalGeneration",
              "UnlimitedOCRForCausalLM", "EmbeddingGemma2Model"}

# SGLang, python/sglang/srt/utils/hf_transformers/common.py CONTEXT_LENGTH_KEYS (v0.5.23): order matters.
_CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")

FAMILIES = ("gqa", "mla", "dsa", "dsv4", "hybrid_swa", "hybrid_mamba")


@dataclass(eq=False)
class ModelSpec:
    """A model as kvplan plans it."""

    id: str
    config: Mapping[str, Any]            # flattened HF config (text_config merged in)
    family: str                          # one of FAMILIES
    quantization: str                    # weight quantization (bf16, fp8, mxfp4, nvfp4, int4 ...)
    checkpoint_bytes: int | None         # safetensors total_size when known
    source: str                          # where the geometry came from
    raw_config: Mapping[str, Any] = field(default_factory=dict)  # as read (may be nested)
    notes: tuple[str, ...] = ()
    preset_id: str | None = None

    # --- geometry accessors (HF field names, SGLang's fallbacks) -------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        v = self.config.get(key)
        return default if v is None else v

    def require(self, key: str) -> Any:
        v = self.config.get(key)
        if v is None:
            raise InputError(f"model config has no '{key}'", field="--model",
                             hint=f"the {self.family} layout needs {key}; pass a complete config.json")
        return v

    def require_int(self, key: str, *, minimum: int = 1) -> int:
        v = self.require(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise InputError(f"config field '{key}' must be an integer >= {minimum}, got {v!r}", field="--model")
        return v

    @property
    def num_layers(self) -> int:
        return self.require_int("num_hidden_layers")

    @property
    def num_attention_heads(self) -> int:
        return self.require_int("num_attention_heads")

    @property
    def num_kv_heads(self) -> int:
        v = self.config.get("num_key_value_heads")
        if v is None:
            return self.num_attention_heads
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"config field 'num_key_value_heads' must be an integer >= 1, got {v!r}", field="--model")
        return v

    @property
    def head_dim(self) -> int:
        """An explicit ``head_dim`` wins over hidden_size / num_attention_heads."""
        v = self.config.get("head_dim")
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"config field 'head_dim' must be a positive integer, got {v!r}", field="--model")
            return v
        hidden = self.require_int("hidden_size")
        heads = self.num_attention_heads
        if hidden % heads:
            raise InputError(f"hidden_size {hidden} is not divisible by num_attention_heads {heads}",
                             field="--model", hint="add head_dim to the config")
        return hidden // heads

    @property
    def v_head_dim(self) -> int:
        v = self.config.get("v_head_dim")
        return self.head_dim if v in (None, 0) or self.family != "gqa" else int(v)

    @property
    def model_dtype(self) -> str:
        d = str(self.config.get("torch_dtype") or self.config.get("dtype") or "bfloat16").lower()
        return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}.get(d, "bf16")

    @property
    def kv_cache_quant_algo(self) -> str | None:
        qc = self.config.get("quantization_config") or {}
        algo = self.config.get("kv_cache_quant_algo") or (qc.get("kv_cache_quant_algo") if isinstance(qc, dict) else None)
        if isinstance(qc, dict) and not algo:
            scheme = qc.get("kv_cache_scheme")
            if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
                algo = "FP8"
        return str(algo).upper() if algo else None

    @property
    def context_length(self) -> int:
        """SGLang's derived context length (get_context_length, v0.5.23)."""
        rope = self.config.get("rope_scaling") or {}
        factor = 1
        if isinstance(rope, dict) and rope:
            factor = rope.get("factor", 1) or 1
            if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
                factor = 1
        for key in _CONTEXT_KEYS:
            v = self.config.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return int(factor * v)
        return 2048

    @property
    def is_multimodal(self) -> bool:
        """SGLang counts V4.1-Flash (vision_n_layers > 0) and any config with a vision tower as multimodal."""
        if self.config.get("vision_n_layers"):
            return True
        return bool(self.raw_config.get("vision_config"))

    @property
    def architecture(self) -> str:
        archs = self.config.get("architectures") or []
        return archs[0] if archs else str(self.config.get("model_type") or "unknown")


def flatten_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a nested ``text_config`` (V4.1-Flash, multimodal wrappers) into the top level.

    Top-level keys win for ``architectures``; every other text_config key overrides (it describes the
    language model, which is what the KV cache serves).  DeepSeek-V4.1 is renamed the way SGLang
    does it (``normalize_deepseek_v41_config``, python/sglang/srt/configs/deepseek_v41.py, v0.5.23).
    """
    out = dict(cfg)
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        for k, v in text.items():
            if k == "architectures" and out.get("architectures"):
                continue
            out[k] = v
    vision = cfg.get("vision_config")
    if isinstance(vision, Mapping) and "vision_n_layers" not in out:
        n = vision.get("num_hidden_layers") or vision.get("n_layers") or vision.get("depth")
        if isinstance(n, int):
            out["vision_n_layers"] = n
    return out


def detect_family(cfg: Mapping[str, Any]) -> str:
    archs = set(cfg.get("architectures") or [])
    mt = str(cfg.get("model_type") or "")
    if archs & _DSV4_ARCHS or mt in ("deepseek_v4", "deepseek_v41") or cfg.get("compress_ratios"):
        return "dsv4"
    if archs & _DSA_ARCHS or mt in _DSA_MODEL_TYPES or (cfg.get("kv_lora_rank") and cfg.get("index_head_dim")):
        return "dsa"
    lt = cfg.get("layer_types")
    if archs & _MAMBA_ARCHS or mt in _MAMBA_MODEL_TYPES or cfg.get("hybrid_override_pattern") \
            or cfg.get("full_attention_interval") \
            or (isinstance(lt, list) and any(t in ("linear_attention", "mamba") for t in lt)):
        if mt == "granitemoehybrid" and isinstance(lt, list) and "mamba" not in lt:
            return "gqa"  # a Granite hybrid config without any mamba layer is plain attention
        return "hybrid_mamba"
    if cfg.get("kv_lora_rank"):
        return "mla"
    if archs & _SWA_ARCHS or cfg.get("is_hybrid_swa") is True:
        return "hybrid_swa"
    if "BeamForCausalLM" in archs and isinstance(lt, list) and "sliding_attention" in lt:
        return "hybrid_swa"
    if "LagunaForCausalLM" in archs and cfg.get("sliding_window"):
        return "hybrid_swa"
    return "gqa"


def _quant_from_config(cfg: Mapping[str, Any]) -> str:
    try:
        from kvplan.weights.estimate import quantization_from_config
    except ImportError:  # pragma: no cover - weights module always ships
        return "bf16"
    return quantization_from_config(cfg)


# Geometry fields that must be whole numbers when present (None = absent).  Upper bounds keep nonsense
# (num_hidden_layers 2**31, 10**30 experts) from turning into hour-long loops or huge allocations; the
# lower bound is 1 where the engines divide by the value.
MAX_LAYERS = 4096
_MAX_DIM = 1 << 24
_INT_FIELDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, MAX_LAYERS), "hidden_size": (1, _MAX_DIM), "num_attention_heads": (1, 1 << 16),
    "num_key_value_heads": (1, 1 << 16), "head_dim": (1, 1 << 16), "v_head_dim": (0, 1 << 16),
    "intermediate_size": (0, _MAX_DIM), "moe_intermediate_size": (0, _MAX_DIM),
    "shared_expert_intermediate_size": (0, _MAX_DIM), "vocab_size": (0, _MAX_DIM),
    "q_lora_rank": (0, _MAX_DIM), "kv_lora_rank": (0, _MAX_DIM), "qk_nope_head_dim": (0, 1 << 16),
    "qk_rope_head_dim": (0, 1 << 16), "qk_head_dim": (0, 1 << 16), "index_head_dim": (0, 1 << 16),
    "index_n_heads": (1, 1 << 16), "index_topk": (0, _MAX_DIM), "o_lora_rank": (0, _MAX_DIM), "o_groups": (1, 1 << 16),
    "num_nextn_predict_layers": (0, 64), "n_routed_experts": (0, 1 << 14), "num_experts": (0, 1 << 14),
    "num_local_experts": (0, 1 << 14), "n_shared_experts": (0, 1 << 10), "num_experts_per_tok": (0, 1 << 14),
    "first_k_dense_replace": (0, MAX_LAYERS), "max_window_layers": (0, MAX_LAYERS),
    "linear_num_key_heads": (1, 1 << 16), "linear_num_value_heads": (1, 1 << 16),
    "linear_key_head_dim": (0, 1 << 16), "linear_value_head_dim": (0, 1 << 16), "linear_conv_kernel_dim": (0, 1 << 10),
    "mamba_num_heads": (1, 1 << 16), "mamba_head_dim": (0, 1 << 16), "ssm_state_size": (0, 1 << 16),
    "n_groups": (1, 1 << 16), "conv_kernel": (0, 1 << 10), "mamba_d_state": (0, 1 << 16), "mamba_d_conv": (0, 1 << 10),
    "attn_layer_period": (1, MAX_LAYERS), "attn_layer_offset": (0, MAX_LAYERS),
    "expert_layer_period": (1, MAX_LAYERS), "expert_layer_offset": (0, MAX_LAYERS),
    "decoder_sparse_step": (1, MAX_LAYERS), "full_attention_interval": (1, MAX_LAYERS),
    "attention_chunk_size": (0, 1 << 40), "swa_num_key_value_heads": (1, 1 << 16), "swa_head_dim": (0, 1 << 16),
    "swa_v_head_dim": (0, 1 << 16), "swa_num_attention_heads": (1, 1 << 16), "global_head_dim": (0, 1 << 16),
    "num_global_key_value_heads": (1, 1 << 16), "vision_n_layers": (0, MAX_LAYERS),
    "sliding_window_pattern": (0, MAX_LAYERS), "moe_layer_freq": (1, MAX_LAYERS),
    "max_position_embeddings": (0, 1 << 40), "sliding_window": (0, 1 << 40),
}
_INT_LIST_FIELDS = ("compress_ratios", "mlp_only_layers", "kv_source_layer_ids", "index_source_layer_ids",
                    "engram_table_layers")
_STR_LIST_FIELDS = ("architectures", "layer_types", "indexer_types")
_DICT_FIELDS = ("rope_scaling", "quantization_config")


_CONFIG_ERRORS = (KeyError, TypeError, ValueError, IndexError, OverflowError, ZeroDivisionError, AttributeError,
                  RecursionError)


@contextmanager
def config_errors(what: str):
    """Turn a crash while reading config fields (a missing key, a string where a number belongs ...) into one
    InputError on ``--model``.  Used around the config walks of the weight estimate and the vLLM KV specs, which
    read many more fields than :func:`check_geometry` checks."""
    try:
        yield
    except _CONFIG_ERRORS as exc:
        detail = f"no field {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else \
            f"{type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
        raise InputError(f"the model config cannot be used for {what} ({detail})", field="--model",
                         hint="pass a complete Hugging Face config.json") from None


def check_geometry(flat: Mapping[str, Any]) -> None:
    """Reject config values of the wrong kind or absurd size before any arithmetic (InputError on ``--model``).

    Example: ``{"num_hidden_layers": 2**31}`` -> "config field 'num_hidden_layers' must be an integer between
    1 and 4,096".  Real configs (every preset and tests/data/shared/hf-configs) pass unchanged.
    """
    def bad(key: str, what: str) -> InputError:
        return InputError(f"config field '{key}' {what}", field="--model", hint="pass a Hugging Face config.json")

    for key, (lo, hi) in _INT_FIELDS.items():
        v = flat.get(key)
        if v is None or (key == "moe_layer_freq" and isinstance(v, list)):
            continue
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise bad(key, f"must be an integer between {lo} and {hi:,}, got {str(v)[:40]!r}")
    layers = flat.get("num_hidden_layers")
    for key in _INT_LIST_FIELDS:
        v = flat.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or len(v) > 2 * MAX_LAYERS or any(
                x is not None and (isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= _MAX_DIM) for x in v):
            raise bad(key, "must be a list of non-negative integers")
    for key in _STR_LIST_FIELDS:
        v = flat.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            raise bad(key, "must be a list of strings")
    for key in ("layer_types", "indexer_types", "hybrid_override_pattern"):
        v = flat.get(key)
        if key == "hybrid_override_pattern" and v is not None and not isinstance(v, str):
            raise bad(key, "must be a string")
        if isinstance(v, (list, str)) and v and isinstance(layers, int) and len(v) < layers:
            raise bad(key, f"has {len(v)} entries for {layers} layers")
    cr = flat.get("compress_ratios")
    if isinstance(cr, list) and cr and isinstance(layers, int) and len(cr) < layers:
        raise bad("compress_ratios", f"has {len(cr)} entries for {layers} layers")
    for key in _DICT_FIELDS:
        v = flat.get(key)
        if v is not None and not isinstance(v, Mapping):
            raise bad(key, "must be a JSON object")
    for key in ("model_type", "torch_dtype", "dtype"):
        v = flat.get(key)
        if v is not None and not isinstance(v, str):
            raise bad(key, "must be a string")
    rope = flat.get("rope_scaling") or {}
    factor = rope.get("factor")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                               or not 0 < factor <= 1024):
        raise bad("rope_scaling.factor", f"must be a number in (0, 1024], got {str(factor)[:40]!r}")


def spec_from_config(cfg: Mapping[str, Any], *, model_id: str, source: str, quantization: str | None = None,
                     checkpoint_bytes: int | None = None, notes: tuple[str, ...] = (),
                     preset_id: str | None = None) -> ModelSpec:
    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    flat = flatten_config(cfg)
    if "num_hidden_layers" not in flat:
        raise InputError("model config has no 'num_hidden_layers'", field="--model",
                         hint="pass a Hugging Face config.json of a decoder model")
    check_geometry(flat)
    family = detect_family(flat)
    return ModelSpec(id=model_id, config=flat, family=family,
                     quantization=quantization or _quant_from_config(flat),
                     checkpoint_bytes=checkpoint_bytes, source=source, raw_config=dict(cfg), notes=notes,
                     preset_id=preset_id)

def quant_from_hf_quant_config(hq: Any) -> tuple[str | None, str | None]:
    """(weight quantization, kv_cache_quant_algo) from a ModelOpt ``hf_quant_config.json`` (folder or Hub)."""
    q = hq.get("quantization") if isinstance(hq, dict) else None
    if not isinstance(q, dict):
        return None, None
    algo = str(q.get("quant_algo") or "").upper()
    quant = "nvfp4" if "FP4" in algo else "fp8" if "FP8" in algo else None
    kv = q.get("kv_cache_quant_algo")
    return quant, (str(kv) if kv else None)
