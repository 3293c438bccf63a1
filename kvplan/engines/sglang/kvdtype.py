"""SGLang's KV-cache dtype rule: what ``--kv-cache-dtype auto`` (or a given value) becomes for each family.

Sources (sgl-project/sglang, v0.5.23):

* ``auto`` and the torch dtype: ``python/sglang/srt/mem_cache/kv_cache_dtype.py`` ``configure_kv_cache_dtype``;
* model overrides of ``auto``: ``python/sglang/srt/arg_groups/overrides.py``
  ``_dsa_kv_cache_dtype_default`` (DSA) and ``_deepseek_v4_kv_cache_dtype`` (DeepSeek-V4);
* CLI choices (the spellings, kept engine-neutral in :mod:`kvplan.geometry.kvdtype`):
  ``python/sglang/srt/arg_groups/fields/model.py`` field ``kv_cache_dtype``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kvplan.engines.sglang.platform import platform_of
from kvplan.errors import InputError
from kvplan.family import ATTENTION_FAMILIES, Family
from kvplan.geometry.kvdtype import KV_CACHE_DTYPES, canonical_kv_dtype, canonical_model_dtype

__all__ = ["KV_CACHE_DTYPES", "attention_family", "canonical_kv_dtype", "resolve_kv_cache_dtype"]


@dataclass(repr=False)  # not frozen: a frozen dataclass costs ~0.4 ms more to create at every start
class _Request:
    raw: str          # the value as given (DeepSeek-V4 checks the spelling)
    req: str          # canonical spelling (auto | bf16 | fp8_e4m3 ...)
    model_dtype: str  # bf16 | fp16 | fp32
    kv_cache_quant_algo: str | None
    sm_major: int | None
    plat: str
    learnable_sink: bool


def _configure_kv_cache_dtype(r: _Request) -> str:
    """``configure_kv_cache_dtype``: ``auto`` -> e4m3 for an FP8 ``kv_cache_quant_algo``, else the model dtype."""
    if r.req == "auto":
        if isinstance(r.kv_cache_quant_algo, str) and r.kv_cache_quant_algo.upper() == "FP8":
            return "fp8_e4m3"
        return r.model_dtype
    if r.req == "fp8_e5m2" and r.plat == "cpu":
        raise InputError(
            "fp8_e5m2 KV cache is not supported on CPU", field="--kv-cache-dtype", hint="use fp8_e4m3 or auto"
        )
    return r.req


def _dsa(r: _Request) -> str:
    """``_dsa_kv_cache_dtype_default`` on CUDA/ROCm (fp8 from SM major 10), bf16 for ``auto`` on XPU."""
    if r.plat == "xpu" and r.req == "auto":
        return "bf16"
    if r.plat not in ("cuda", "hip"):
        return _configure_kv_cache_dtype(r)
    if r.learnable_sink and r.req not in ("auto", "bf16"):
        raise InputError(
            f"learnable DSA attention sinks need a bf16 KV cache, got {r.raw!r}",
            field="--kv-cache-dtype",
            hint="use auto or bfloat16",
        )
    req = r.req
    if req == "auto":
        major = r.sm_major if r.sm_major is not None else (9 if r.plat == "hip" else 0)
        req = "fp8_e4m3" if (major >= 10 and not r.learnable_sink) else "bf16"
    if req not in ("bf16", "fp8_e4m3"):
        raise InputError(
            f"DeepSeek DSA models support only bf16/bfloat16 or fp8_e4m3, got {r.raw!r}",
            field="--kv-cache-dtype",
            hint="use auto, bfloat16 or fp8_e4m3",
        )
    return req


def _dsv4(r: _Request) -> str:
    """``_deepseek_v4_kv_cache_dtype``: ``auto`` -> fp8_e4m3; only fp8_e4m3 / ``bfloat16``; NPU forced bf16."""
    if r.plat == "npu":
        return "bf16"
    raw = r.raw.strip().lower()
    if raw in ("auto", "fp8_e4m3"):
        return "fp8_e4m3"
    if raw == "bfloat16":
        return "bf16"
    raise InputError(
        f"DeepSeek-V4 supports only fp8_e4m3 or bfloat16, got {r.raw!r}",
        field="--kv-cache-dtype",
        hint="use auto, fp8_e4m3 or bfloat16 (SGLang rejects the 'bf16' spelling here)",
    )


#: the model-override pass of each attention family (the others go straight to configure_kv_cache_dtype)
_OVERRIDES: dict[Family, Callable[[_Request], str]] = {Family.DSA: _dsa, Family.DSV4: _dsv4}


def _attention(family: str) -> Family:
    try:
        fam = Family(family)
    except ValueError:
        fam = None
    if fam not in ATTENTION_FAMILIES:
        raise InputError(f"unknown attention family {family!r}", field="family",
                         hint="one of " + ", ".join(ATTENTION_FAMILIES))
    assert fam is not None
    return fam


def resolve_kv_cache_dtype(
    *,
    requested: str,
    model_dtype: str,
    kv_cache_quant_algo: str | None,
    family: str,
    sm_major: int | None,
    vendor: str,
    learnable_sink: bool = False,
) -> str:
    """The dtype SGLang 0.5.23 actually stores the KV pool in.

    Rules, in the order the engine applies them:

    1. ``family == "dsa"`` (DeepSeek-V3.2, GLM-5, ... on CUDA/ROCm): the server-args pass
       ``_dsa_kv_cache_dtype_default`` rewrites ``auto`` to ``fp8_e4m3`` when the device's
       compute-capability major is >= 10 (and the model has no learnable attention sink),
       else to ``bfloat16``; ``bf16`` is spelt ``bfloat16``; anything but bf16/fp8_e4m3 is
       refused. On ROCm ``torch.cuda.get_device_capability()`` reports the gfx major (9 on
       MI300/MI355), so ``auto`` is bf16 there. On XPU ``auto`` -> bf16; on NPU no override.
    2. ``family == "dsv4"``: ``_deepseek_v4_kv_cache_dtype`` rewrites ``auto`` to
       ``fp8_e4m3``; NPU is forced to ``bfloat16``; only fp8_e4m3/bfloat16 are allowed
       (``bf16`` is *not*: the assert lists ``"bfloat16"`` only).
    3. ``configure_kv_cache_dtype``: ``auto`` -> e4m3 if the checkpoint's quant config has
       ``kv_cache_quant_algo == "FP8"`` (case-insensitive), else the model dtype.
       ``fp8_e5m2`` is refused on CPU.

    ``family`` is an attention family (:data:`kvplan.family.ATTENTION_FAMILIES`; hybrids pass
    :func:`attention_family`).

    Example: DeepSeek-V3.2 (bf16 weights), ``auto``: SM100 -> ``"fp8_e4m3"``,
    SM90 -> ``"bf16"``; Llama-3.1-8B ``auto`` -> ``"bf16"``; a ModelOpt FP8 checkpoint with
    ``kv_cache_quant_algo="FP8"`` and ``auto`` -> ``"fp8_e4m3"``.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/overrides.py
    ``_dsa_kv_cache_dtype_default``, ``_deepseek_v4_kv_cache_dtype``;
    python/sglang/srt/mem_cache/kv_cache_dtype.py ``configure_kv_cache_dtype``, v0.5.23.
    """
    fam = _attention(family)
    r = _Request(raw=requested, req=canonical_kv_dtype(requested), model_dtype=canonical_model_dtype(model_dtype),
                 kv_cache_quant_algo=kv_cache_quant_algo, sm_major=sm_major, plat=platform_of(vendor),
                 learnable_sink=learnable_sink)
    return _OVERRIDES.get(fam, _configure_kv_cache_dtype)(r)


def attention_family(*, family: Family | str, config: Mapping[str, Any]) -> Family:
    """The family SGLang's KV-dtype and page rules see: an attention family as is; a hybrid resolves like its
    attention layers (MLA when the config has a ``kv_lora_rank``, else GQA).

    Example: Qwen3-Next (hybrid_mamba, GQA attention) -> ``Family.GQA``; Kimi-Linear (MLA layers) -> ``Family.MLA``.

    This is kvplan's reading (the hybrids' attention layers are plain MHA/GQA or MLA layers, which the rules
    above treat by their attention kind); it is not one engine function.
    """
    if family in ATTENTION_FAMILIES:
        return Family(family)
    return Family.MLA if config.get("kv_lora_rank") else Family.GQA
