"""A checkpoint's weight format, read from its ``config.json``: ``quantization_config`` and ``torch_dtype``.

This is config normalising, not pricing: :func:`quantization_from_config` names the format the checkpoint
stores (``ModelSpec.quantization`` records it); :mod:`kvplan.weights.quant` prices each tensor in it.  The
config is flattened by :func:`kvplan.hfconfig.normalize.flatten_config` (SGLang's rule: the top level's
``quantization_config`` wins, the text sub-config's ``dtype`` wins).

Formats: ``mxfp4`` (gpt-oss), ``fp8`` (block or per-tensor scales), ``nvfp4`` (ModelOpt NVFP4, compressed-tensors
fp4), ``int4`` (AWQ, GPTQ 4-bit, compressed-tensors int4 W4A16, bitsandbytes 4-bit), ``int8``, ``mixed`` (dense
and routed-expert formats differ, e.g. DeepSeek-V4 fp8 + fp4 experts, or an unknown method); else the 16-bit
dtype (``bf16``, ``fp16``; ``float32`` checkpoints are named ``fp32``).

Sources (how each engine recognises the method; the rules are restated, no engine code is copied):
SGLang v0.5.23 ``python/sglang/srt/configs/model_config.py ModelConfig._parse_quant_hf_config`` and
``layers/quantization/__init__.py QUANTIZATION_METHODS``; vLLM v0.11.1 ``vllm/config/model.py
ModelConfig._verify_quantization``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import dtype_of
from kvplan.hfconfig.normalize import flatten_config
from kvplan.hfconfig.readers import is_int

__all__ = [
    "AWQ_GPTQ_METHODS",
    "TORCH_DTYPES",
    "compressed_tensors_weights",
    "config_dtype",
    "expert_dtype",
    "quant_int",
    "quantization_from_config",
]

#: ``torch_dtype`` / ``dtype`` spellings -> kvplan's dtype names (anything else reads as bf16); the names are
#: :class:`kvplan.hfconfig.dtypes.DType`'s, the spellings the ones a Hugging Face config uses
TORCH_DTYPES: dict[str, str] = {
    n: d.canonical for n in ("bfloat16", "float16", "half", "float32", "float") if (d := dtype_of(n)) is not None
}

#: quant_method values of the AWQ / GPTQ family (4-bit unless ``bits`` / ``w_bit`` says 8)
AWQ_GPTQ_METHODS = ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round", "auto_round")

# compressed-tensors (weights type, num_bits) -> format
_CT_FORMATS = {("float", 4): "nvfp4", ("float", 8): "fp8", ("int", 4): "int4", ("int", 8): "int8"}


def _bad(key: str, what: str) -> InputError:
    return InputError(f"config field '{key}' {what}", field="--model", hint="pass a Hugging Face config.json")


def quant_int(qc: Mapping[str, Any], *keys: str, default: int, where: str = "quantization_config") -> int:
    """``int(qc[k1] or qc[k2] or ... or default)``: the first truthy value of ``keys``, which must be an integer.

    Example: ``quant_int({"w_bit": 8}, "bits", "w_bit", default=4)`` -> 8; ``{"bits": "4"}`` -> InputError naming
    ``quantization_config.bits``.
    """
    for key in keys:
        v = qc.get(key)
        if not v:
            continue
        if not is_int(v):
            raise _bad(f"{where}.{key}", f"must be an integer, got {str(v)[:40]!r}")
        return v
    return default


def config_dtype(cfg: Mapping[str, Any]) -> str:
    """The checkpoint's 16/32-bit dtype: ``torch_dtype``, else ``dtype``, else bfloat16 (``torch.`` prefix dropped).

    Example: ``{"torch_dtype": "torch.float16"}`` -> ``"fp16"``; ``{}`` -> ``"bf16"``; an unknown name -> ``"bf16"``.
    """
    v = cfg.get("torch_dtype")
    if v is None:
        v = cfg.get("dtype")
    dt = str("bfloat16" if v is None else v).replace("torch.", "")
    return TORCH_DTYPES.get(dt, "bf16")


def expert_dtype(cfg: Mapping[str, Any]) -> str:
    """``expert_dtype`` at the top level (DeepSeek-V4-Flash) or inside ``quantization_config`` (V4.1-Flash's
    release), lower-case; ``""`` when neither says."""
    qc = cfg.get("quantization_config")
    v = cfg.get("expert_dtype") or (qc.get("expert_dtype") if isinstance(qc, Mapping) else None)
    return str(v or "").lower()


def compressed_tensors_weights(qc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``weights`` args of the first compressed-tensors config group that has them (None if none does)."""
    groups = qc.get("config_groups")
    if isinstance(groups, Mapping):
        for g in groups.values():
            if isinstance(g, Mapping) and isinstance(g.get("weights"), Mapping):
                w: Mapping[str, Any] = g["weights"]
                return w
    return None


def _fp8(cfg: Mapping[str, Any], qc: Mapping[str, Any]) -> str:
    return "mixed" if expert_dtype(cfg) in ("fp4", "mxfp4") else "fp8"


#: the weight widths AWQ / GPTQ kernels pack (GPTQ ``bits`` choices 2, 3, 4, 8; AWQ ``w_bit`` 4)
AWQ_GPTQ_BITS = (2, 3, 4, 8)


def awq_gptq_bits(qc: Mapping[str, Any]) -> int:
    """The weight width of an AWQ / GPTQ ``quantization_config``: ``bits``, else ``w_bit``, else 4.  A width the
    kernels do not pack (0, negative, 5, 64 ...) or a non-integer is an InputError naming the key, never priced as
    int4 (issue 26).

    Example: ``awq_gptq_bits({"bits": 8})`` -> 8; ``{}`` -> 4; ``{"bits": 64}`` -> InputError "config field
    'quantization_config.bits' is 64; AWQ / GPTQ pack 2, 3, 4 or 8 bits per weight".
    """
    for key in ("bits", "w_bit"):
        v = qc.get(key)
        if v is None:
            continue
        if not is_int(v):
            raise _bad(f"quantization_config.{key}", f"must be an integer, got {str(v)[:40]!r}")
        if v not in AWQ_GPTQ_BITS:
            raise _bad(f"quantization_config.{key}", f"is {v}; AWQ / GPTQ pack 2, 3, 4 or 8 bits per weight")
        return v
    return 4


def _awq_gptq(cfg: Mapping[str, Any], qc: Mapping[str, Any]) -> str:
    return "int8" if awq_gptq_bits(qc) == 8 else "int4"


def _compressed_tensors(cfg: Mapping[str, Any], qc: Mapping[str, Any]) -> str:
    w = compressed_tensors_weights(qc)
    if not w:
        return "mixed"
    typ = str(w.get("type") or "int")
    bits = quant_int(w, "num_bits", default=8, where="quantization_config.config_groups.weights")
    return _CT_FORMATS.get((typ, bits), "mixed")


def _method(qc: Mapping[str, Any]) -> str:
    return str(qc.get("quant_method") or "").lower()


def _algo(qc: Mapping[str, Any]) -> str:
    return str(qc.get("quant_algo") or "").lower()


# First match wins: (does this quantization_config use the method?, the format it stores).
_METHOD_RULES: tuple[
    tuple[Callable[[Mapping[str, Any]], bool], Callable[[Mapping[str, Any], Mapping[str, Any]], str]], ...
] = (
    (lambda qc: _method(qc) == "fp8" or _algo(qc) == "fp8", _fp8),
    (lambda qc: _method(qc) == "mxfp4", lambda cfg, qc: "mxfp4"),
    (lambda qc: "fp4" in _algo(qc) or _method(qc) in ("modelopt_fp4", "nvfp4"), lambda cfg, qc: "nvfp4"),
    (lambda qc: _method(qc) in AWQ_GPTQ_METHODS, _awq_gptq),
    (lambda qc: _method(qc) == "compressed-tensors", _compressed_tensors),
    (lambda qc: _method(qc) == "bitsandbytes", lambda cfg, qc: "int4" if qc.get("load_in_4bit") else "int8"),
    (lambda qc: bool(_method(qc)), lambda cfg, qc: "mixed"),
)


def quantization_from_config(config: Mapping[str, Any]) -> str:
    """The checkpoint's weight format from ``quantization_config`` / ``torch_dtype`` (see the module docstring).

    Rules, first match wins: quant_method or quant_algo fp8 -> ``fp8`` (``mixed`` when ``expert_dtype`` is fp4);
    mxfp4; quant_algo containing fp4 or method modelopt_fp4 / nvfp4 -> ``nvfp4``; AWQ / GPTQ -> ``int4`` (``int8``
    at 8 bits); compressed-tensors -> its weights' (type, num_bits); bitsandbytes -> int4 / int8; any other
    method -> ``mixed``; no method -> the dtype (``bf16`` / ``fp16`` / ``fp32``).

    Example: DeepSeek-V3 (``quant_method: fp8``, block 128x128) -> ``"fp8"``; DeepSeek-V4-Flash (fp8 and
    ``expert_dtype: fp4``) -> ``"mixed"``; Qwen3-32B (``torch_dtype: bfloat16``) -> ``"bf16"``.
    """
    cfg = flatten_config(config)
    qc = cfg.get("quantization_config")
    if isinstance(qc, Mapping):
        for uses, fmt in _METHOD_RULES:
            if uses(qc):
                return fmt(cfg, qc)
    return config_dtype(cfg)
