"""KV-cache dtype names, what ``auto`` becomes, and bits per stored element.

Names used inside kvplan (the *resolved* dtype of a KV pool):

* ``"bf16"``, ``"fp16"``, ``"fp32"`` -- unquantized pools in the model dtype;
* ``"fp8_e4m3"``, ``"fp8_e5m2"`` -- one byte per value, per-layer scalar scales only;
* ``"mxfp8"`` -- e4m3 values plus one scale byte per 32 values (scale counted by the layout);
* ``"nvfp4"``, ``"fp4_mx_block16"`` -- packed FP4 (two values per byte) plus block scales.

Sources (sgl-project/sglang, v0.5.23):

* CLI choices: ``python/sglang/srt/arg_groups/fields/model.py`` field ``kv_cache_dtype``;
* ``auto`` and the torch dtype: ``python/sglang/srt/mem_cache/kv_cache_dtype.py``
  ``configure_kv_cache_dtype``;
* model overrides of ``auto``: ``python/sglang/srt/arg_groups/overrides.py``
  ``_dsa_kv_cache_dtype_default`` (DSA) and ``_deepseek_v4_kv_cache_dtype`` (DeepSeek-V4).
"""

from __future__ import annotations

from kvplan.errors import InputError

#: Exactly the values SGLang 0.5.23's ``--kv-cache-dtype`` accepts (argparse ``choices``).
#: SGLang does *not* accept ``fp8``, ``fp16``/``float16``, ``fp4`` or ``mxfp4`` here.
KV_CACHE_DTYPES: tuple[str, ...] = (
    "auto",
    "fp8_e5m2",
    "fp8_e4m3",
    "mxfp8",
    "bf16",
    "bfloat16",
    "nvfp4",
    "fp4_mx_block16",
)

#: Resolved pool dtypes kvplan knows how to price.
RESOLVED_KV_DTYPES: tuple[str, ...] = (
    "bf16",
    "fp16",
    "fp32",
    "fp8_e4m3",
    "fp8_e5m2",
    "mxfp8",
    "nvfp4",
    "fp4_mx_block16",
)

FAMILIES: tuple[str, ...] = ("gqa", "mla", "dsa", "dsv4")

_ALIASES = {"bfloat16": "bf16"}

# Spellings other engines or users commonly type, with the SGLang value to use instead.
_SUGGEST = {
    "fp8": "fp8_e4m3",
    "fp8_e4m3fn": "fp8_e4m3",
    "fp8_ds_mla": "fp8_e4m3",
    "fp16": "auto (the model dtype)",
    "float16": "auto (the model dtype)",
    "half": "auto (the model dtype)",
    "fp4": "nvfp4 or fp4_mx_block16",
    "mxfp4": "fp4_mx_block16 (SGLang reserves mxfp4 for a block-32 recipe it does not ship)",
}

_MODEL_DTYPES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "torch.float16": "fp16",
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "torch.float32": "fp32",
}

_BITS = {
    "bf16": 16,
    "fp16": 16,
    "fp32": 32,
    "fp8_e4m3": 8,
    "fp8_e5m2": 8,
    "mxfp8": 8,
    "nvfp4": 4,
    "fp4_mx_block16": 4,
}


def platform_of(vendor: str) -> str:
    """SGLang's platform for a preset vendor: cuda (NVIDIA, and the default), hip, xpu, npu, musa or cpu."""
    v = (vendor or "").strip().lower()
    if v in ("amd", "hip", "rocm"):
        return "hip"
    if v in ("intel", "xpu"):
        return "xpu"
    if v in ("npu", "ascend"):
        return "npu"
    if v in ("musa", "cpu"):
        return v
    return "cuda"


def canonical_kv_dtype(name: str) -> str:
    """Validate a ``--kv-cache-dtype`` value as SGLang does and return kvplan's spelling.

    ``bfloat16`` becomes ``bf16``; every other accepted value is returned unchanged
    (lower-cased). Anything outside :data:`KV_CACHE_DTYPES` raises, because SGLang's
    argparse ``choices`` refuse it at launch.

    Example: ``canonical_kv_dtype(name="bfloat16") == "bf16"``;
    ``canonical_kv_dtype(name="fp8")`` raises ``InputError`` suggesting ``fp8_e4m3``.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/fields/model.py
    (``kv_cache_dtype`` ``choices``), v0.5.23.
    """
    key = (name or "").strip().lower()
    if key in KV_CACHE_DTYPES:
        return _ALIASES.get(key, key)
    hint = "valid values: " + ", ".join(KV_CACHE_DTYPES)
    if key in _SUGGEST:
        hint = f"SGLang has no '{key}'; use {_SUGGEST[key]} ({hint})"
    raise InputError(f"unknown KV-cache dtype {name!r}", field="--kv-cache-dtype", hint=hint)


def canonical_model_dtype(name: str) -> str:
    """Map a model dtype spelling (``bfloat16``, ``torch.float16`` ...) to bf16/fp16/fp32."""
    key = (name or "").strip().lower()
    if key in _MODEL_DTYPES:
        return _MODEL_DTYPES[key]
    raise InputError(
        f"unknown model dtype {name!r}",
        field="--dtype",
        hint="use bfloat16, float16 or float32",
    )


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

    Example: DeepSeek-V3.2 (bf16 weights), ``auto``: SM100 -> ``"fp8_e4m3"``,
    SM90 -> ``"bf16"``; Llama-3.1-8B ``auto`` -> ``"bf16"``; a ModelOpt FP8 checkpoint with
    ``kv_cache_quant_algo="FP8"`` and ``auto`` -> ``"fp8_e4m3"``.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/overrides.py
    ``_dsa_kv_cache_dtype_default``, ``_deepseek_v4_kv_cache_dtype``;
    python/sglang/srt/mem_cache/kv_cache_dtype.py ``configure_kv_cache_dtype``, v0.5.23.
    """
    if family not in FAMILIES:
        raise InputError(
            f"unknown attention family {family!r}", field="family", hint="one of " + ", ".join(FAMILIES)
        )
    req = canonical_kv_dtype(requested)
    mdt = canonical_model_dtype(model_dtype)
    plat = platform_of(vendor)

    if family == "dsa" and plat in ("cuda", "hip"):
        if learnable_sink and req not in ("auto", "bf16"):
            raise InputError(
                f"learnable DSA attention sinks need a bf16 KV cache, got {requested!r}",
                field="--kv-cache-dtype",
                hint="use auto or bfloat16",
            )
        if req == "auto":
            major = sm_major if sm_major is not None else (9 if plat == "hip" else 0)
            req = "fp8_e4m3" if (major >= 10 and not learnable_sink) else "bf16"
        if req not in ("bf16", "fp8_e4m3"):
            raise InputError(
                f"DeepSeek DSA models support only bf16/bfloat16 or fp8_e4m3, got {requested!r}",
                field="--kv-cache-dtype",
                hint="use auto, bfloat16 or fp8_e4m3",
            )
        return req
    if family == "dsa" and plat == "xpu" and req == "auto":
        return "bf16"

    if family == "dsv4":
        if plat == "npu":
            return "bf16"
        raw = requested.strip().lower()
        if raw in ("auto", "fp8_e4m3"):
            return "fp8_e4m3"
        if raw == "bfloat16":
            return "bf16"
        raise InputError(
            f"DeepSeek-V4 supports only fp8_e4m3 or bfloat16, got {requested!r}",
            field="--kv-cache-dtype",
            hint="use auto, fp8_e4m3 or bfloat16 (SGLang rejects the 'bf16' spelling here)",
        )

    if req == "auto":
        if isinstance(kv_cache_quant_algo, str) and kv_cache_quant_algo.upper() == "FP8":
            return "fp8_e4m3"
        return mdt
    if req == "fp8_e5m2" and plat == "cpu":
        raise InputError(
            "fp8_e5m2 KV cache is not supported on CPU", field="--kv-cache-dtype", hint="use fp8_e4m3 or auto"
        )
    return req


def kv_element_bits(dtype: str) -> int:
    """Bits of one stored KV value (scales excluded): 32, 16, 8 or 4.

    Example: ``kv_element_bits("bf16") == 16``, ``kv_element_bits("fp8_e4m3") == 8``,
    ``kv_element_bits("nvfp4") == 4`` (torch ``float4_e2m1fn_x2`` packs two values per byte;
    SGLang's cell-size code halves the byte count explicitly).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size`` (``torch._utils._element_size``), v0.5.23.
    """
    key = (dtype or "").strip().lower()
    key = _ALIASES.get(key, key)
    key = _MODEL_DTYPES.get(key, key)
    if key in _BITS:
        return _BITS[key]
    raise InputError(
        f"cannot size KV dtype {dtype!r}",
        field="--kv-cache-dtype",
        hint="resolve 'auto' first; known: " + ", ".join(RESOLVED_KV_DTYPES),
    )


def kv_element_bytes(dtype: str) -> int:
    """torch element size SGLang multiplies by: 4/2/1, and 1 for packed FP4 (two values)."""
    bits = kv_element_bits(dtype)
    return max(1, bits // 8)
