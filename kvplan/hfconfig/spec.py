"""A model as kvplan plans it: :class:`ModelSpec`, built from a Hugging Face ``config.json`` by
:func:`spec_from_config` (flattened by :mod:`kvplan.hfconfig.normalize`, checked by :mod:`kvplan.hfconfig.checks`,
its KV family from :mod:`kvplan.hfconfig.detect`).  Presets, folders and the Hub all end here
(:mod:`kvplan.inputs.resolve`).  Model code is never imported or executed: only JSON and TOML are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.checks import CONTEXT_KEYS, MAX_LAYERS, check_geometry, config_warnings, plausible_checkpoint
from kvplan.hfconfig.detect import detect_family
from kvplan.hfconfig.dtypes import dtype_of
from kvplan.hfconfig.normalize import flatten_config
from kvplan.hfconfig.quant import quantization_from_config
from kvplan.hfconfig.readers import int_at_least
from kvplan.units import check_numbers

#: the ``torch_dtype`` / ``dtype`` spellings SGLang's model dtype reads here (anything else, ``float`` and
#: ``torch.float16`` included, is bf16); their names are :class:`kvplan.hfconfig.dtypes.DType`'s
_MODEL_DTYPE_NAMES = ("bfloat16", "float16", "half", "float32")

__all__ = [
    "MAX_LAYERS",
    "ModelSpec",
    "check_geometry",
    "detect_family",
    "flatten_config",
    "quant_from_hf_quant_config",
    "spec_from_config",
]


@dataclass(init=False, eq=False)
class ModelSpec:
    """A model as kvplan plans it.

    Its ``__init__`` is written out (``init=False``: the decorator would generate and compile one at every import, on
    every ``kvplan fit``); tests/test_startup_imports.py checks that it takes exactly the fields, with their defaults.
    """

    id: str
    config: Mapping[str, Any]  # flattened HF config (text_config merged in)
    family: Family  # the KV family the engines see
    quantization: str  # weight quantization (bf16, fp8, mxfp4, nvfp4, int4 ...)
    checkpoint_bytes: int | None  # safetensors total_size when known
    source: str  # where the geometry came from
    raw_config: Mapping[str, Any] = field(default_factory=dict)  # as read (may be nested)
    notes: tuple[str, ...] = ()
    preset_id: str | None = None
    warnings: tuple[str, ...] = ()  # what the config holds that kvplan does not know or does not trust

    def __init__(
        self,
        id: str,
        config: Mapping[str, Any],
        family: Family,
        quantization: str,
        checkpoint_bytes: int | None,
        source: str,
        raw_config: Mapping[str, Any] | None = None,
        notes: tuple[str, ...] = (),
        preset_id: str | None = None,
        warnings: tuple[str, ...] = (),
    ) -> None:
        self.id = id
        self.config = config
        self.family = family
        self.quantization = quantization
        self.checkpoint_bytes = checkpoint_bytes
        self.source = source
        self.raw_config = {} if raw_config is None else raw_config
        self.notes = notes
        self.preset_id = preset_id
        self.warnings = warnings

    # --- geometry accessors (HF field names, SGLang's fallbacks) -------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        v = self.config.get(key)
        return default if v is None else v

    def require(self, key: str) -> Any:
        v = self.config.get(key)
        if v is None:
            raise InputError(
                f"model config has no '{key}'",
                field="--model",
                hint=f"the {self.family} layout needs {key}; pass a complete config.json",
            )
        return v

    def require_int(self, key: str, *, minimum: int = 1) -> int:
        v = self.require(key)
        if not int_at_least(v, minimum):
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
        if not int_at_least(v, 1):
            raise InputError(f"config field 'num_key_value_heads' must be an integer >= 1, got {v!r}", field="--model")
        return v

    @property
    def head_dim(self) -> int:
        """An explicit ``head_dim`` wins over hidden_size / num_attention_heads."""
        v = self.config.get("head_dim")
        if v is not None:
            if not int_at_least(v, 1):
                raise InputError(f"config field 'head_dim' must be a positive integer, got {v!r}", field="--model")
            return v
        hidden = self.require_int("hidden_size")
        heads = self.num_attention_heads
        if hidden % heads:
            raise InputError(
                f"hidden_size {hidden} is not divisible by num_attention_heads {heads}",
                field="--model",
                hint="add head_dim to the config",
            )
        return hidden // heads

    @property
    def v_head_dim(self) -> int:
        v = self.config.get("v_head_dim")
        return self.head_dim if v in (None, 0) or self.family != Family.GQA else int(v)

    @property
    def model_dtype(self) -> str:
        d = str(self.config.get("torch_dtype") or self.config.get("dtype") or "bfloat16").lower()
        dt = dtype_of(d) if d in _MODEL_DTYPE_NAMES else None
        return "bf16" if dt is None else dt.canonical

    @property
    def kv_cache_quant_algo(self) -> str | None:
        qc = self.config.get("quantization_config") or {}
        algo = self.config.get("kv_cache_quant_algo") or (
            qc.get("kv_cache_quant_algo") if isinstance(qc, dict) else None
        )
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
        for key in CONTEXT_KEYS:  # SGLang's CONTEXT_LENGTH_KEYS order (v0.5.23)
            v = self.config.get(key)
            if int_at_least(v, 1):
                return int(factor * v)
        return 2048

    @property
    def has_vision_tower(self) -> bool:
        """The config carries a vision tower: V4.1-Flash's ``vision_n_layers > 0`` or a ``vision_config``."""
        if self.config.get("vision_n_layers"):
            return True
        return bool(self.raw_config.get("vision_config"))

    @property
    def architecture(self) -> str:
        archs = self.config.get("architectures") or []
        return archs[0] if archs else str(self.config.get("model_type") or "unknown")


def spec_from_config(
    cfg: Mapping[str, Any],
    *,
    model_id: str,
    source: str,
    quantization: str | None = None,
    checkpoint_bytes: int | None = None,
    notes: tuple[str, ...] = (),
    preset_id: str | None = None,
    warnings: tuple[str, ...] = (),
) -> ModelSpec:
    """The :class:`ModelSpec` of a parsed ``config.json``: flattened the SGLang way, geometry checked, family
    detected; ``quantization`` defaults to what the config's ``quantization_config`` declares.  InputError (exit 2)
    for a config that is not a decoder model's, holds a field of the wrong kind, or a number no parser should pass
    on (an integer of more than 40 digits, inf, NaN: :func:`kvplan.units.check_numbers`, anywhere in the config).

    ``warnings`` (the caller's, e.g. from hf_quant_config.json) are kept, followed by
    :func:`kvplan.hfconfig.checks.config_warnings` and, when ``checkpoint_bytes`` is implausible for the geometry,
    the warning of :func:`kvplan.hfconfig.checks.plausible_checkpoint` (``checkpoint_bytes`` is then dropped, so
    the weights are estimated).  The planners are to copy ``ModelSpec.warnings`` into the plan's warnings (not wired
    yet: kvplan/engines/sglang/planner.py, kvplan/engines/vllm/adapter.py).
    """
    if not isinstance(cfg, Mapping):
        raise InputError("config.json must hold a JSON object", field="--model")
    check_numbers(cfg, field="--model", where="config")
    flat = flatten_config(cfg)
    if "num_hidden_layers" not in flat:
        raise InputError(
            "model config has no 'num_hidden_layers'",
            field="--model",
            hint="pass a Hugging Face config.json of a decoder model",
        )
    check_geometry(flat)
    family = detect_family(flat)
    quant = quantization or quantization_from_config(flat)
    ckpt, ckpt_warning = plausible_checkpoint(flat, quantization=quant, checkpoint_bytes=checkpoint_bytes)
    found = (*warnings, *config_warnings(flat), *((ckpt_warning,) if ckpt_warning else ()))
    return ModelSpec(
        id=model_id,
        config=flat,
        family=family,
        quantization=quant,
        checkpoint_bytes=ckpt,
        source=source,
        raw_config=dict(cfg),
        notes=notes,
        preset_id=preset_id,
        warnings=found,
    )


def quant_from_hf_quant_config(hq: Any) -> tuple[str | None, str | None]:
    """(weight quantization, kv_cache_quant_algo) from a ModelOpt ``hf_quant_config.json`` (folder or Hub)."""
    q = hq.get("quantization") if isinstance(hq, dict) else None
    if not isinstance(q, dict):
        return None, None
    algo = str(q.get("quant_algo") or "").upper()
    quant = "nvfp4" if "FP4" in algo else "fp8" if "FP8" in algo else None
    kv = q.get("kv_cache_quant_algo")
    return quant, (str(kv) if kv else None)
