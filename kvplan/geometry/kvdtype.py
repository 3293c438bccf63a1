"""KV-cache dtype names and bits per stored element (engine-neutral).

Names used inside kvplan (the *resolved* dtype of a KV pool):

* ``"bf16"``, ``"fp16"``, ``"fp32"`` -- unquantized pools in the model dtype;
* ``"fp8_e4m3"``, ``"fp8_e5m2"`` -- one byte per value, per-layer scalar scales only;
* ``"mxfp8"`` -- e4m3 values plus one scale byte per 32 values (scale counted by the layout);
* ``"nvfp4"``, ``"fp4_mx_block16"`` -- packed FP4 E2M1 (two values per byte) plus one scale byte per 16 values
  (:func:`kv_packed_bytes`, :func:`fp4_block_scale_bytes`): NVFP4's scale is an FP8 E4M3 block scale under a per-layer
  fp32 global scale (not a per-token cost), ``fp4_mx_block16``'s an exponent-only (E8M0-style) uint8; OCP MXFP4
  (E8M0 per 32 values) is not a KV format SGLang ships.

The ``--kv-cache-dtype`` spellings kvplan accepts are SGLang's CLI choices (``KV_CACHE_DTYPES``; source:
sgl-project/sglang ``python/sglang/srt/arg_groups/fields/model.py`` field ``kv_cache_dtype``, v0.5.23); what
``auto`` becomes is an engine rule (``kvplan.engines.sglang.kvdtype``, the vLLM specs).
"""

from __future__ import annotations

from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType, dtype_of
from kvplan.hfconfig.readers import int_at_least

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

#: The model dtypes (every spelling of each counts: ``bfloat16``, ``torch.float16``, ``float`` ...).
_MODEL_DTYPES: tuple[DType, ...] = (DType.BF16, DType.FP16, DType.FP32)

#: Resolved pool dtypes kvplan knows how to price (their widths are :class:`kvplan.hfconfig.dtypes.DType`'s).
_PRICED: tuple[DType, ...] = (
    DType.BF16,
    DType.FP16,
    DType.FP32,
    DType.FP8_E4M3,
    DType.FP8_E5M2,
    DType.MXFP8,
    DType.NVFP4,
    DType.FP4_MX_BLOCK16,
)
RESOLVED_KV_DTYPES: tuple[str, ...] = tuple(d.canonical for d in _PRICED)

# Spellings other engines or users commonly type, with the SGLang value to use instead.
_SUGGEST = {
    "fp8": "fp8_e4m3",
    "fp8_e4m3fn": "fp8_e4m3",
    "fp8_ds_mla": "fp8_e4m3",
    "fp16": "auto (the model dtype)",
    "float16": "auto (the model dtype)",
    "half": "auto (the model dtype)",
    "fp4": "nvfp4 or fp4_mx_block16",
    "fp4_e2m1": "nvfp4 or fp4_mx_block16 (both store E2M1 values)",
    "mxfp4": "fp4_mx_block16 (SGLang reserves mxfp4 for a block-32 recipe it does not ship)",
}


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
        d = dtype_of(key)
        return key if d is None else d.canonical  # None: "auto"
    hint = "valid values: " + ", ".join(KV_CACHE_DTYPES)
    if key in _SUGGEST:
        hint = f"SGLang has no '{key}'; use {_SUGGEST[key]} ({hint})"
    raise InputError(f"unknown KV-cache dtype {name!r}", field="--kv-cache-dtype", hint=hint)


def canonical_model_dtype(name: str) -> str:
    """Map a model dtype spelling (``bfloat16``, ``torch.float16`` ...) to bf16/fp16/fp32."""
    d = dtype_of(name or "")
    if d in _MODEL_DTYPES:
        return d.canonical
    raise InputError(
        f"unknown model dtype {name!r}",
        field="--dtype",
        hint="use bfloat16, float16 or float32",
    )


def kv_element_bits(dtype: DType | str) -> int:
    """Bits of one stored KV value (scales excluded): 32, 16, 8 or 4.

    ``dtype`` is a resolved :class:`DType` (what the pool formulas pass) or, for the callers that hold a
    spelling (the speed model), a name: a model dtype in any spelling, a quantized pool dtype by its canonical
    name only (``fp8`` is vLLM's word).  A member or name kvplan does not price raises ``InputError``.

    Example: ``kv_element_bits(DType.BF16) == 16``, ``kv_element_bits("fp8_e4m3") == 8``,
    ``kv_element_bits(DType.NVFP4) == 4`` (torch ``float4_e2m1fn_x2`` packs two values per byte;
    SGLang's cell-size code halves the byte count explicitly).

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size`` (``torch._utils._element_size``), v0.5.23.
    """
    if isinstance(dtype, DType):
        if dtype in _MODEL_DTYPES or dtype in _PRICED:
            return dtype.bits
        dtype = dtype.canonical
    key = (dtype or "").strip().lower()
    d = dtype_of(key)
    if d is not None and (d in _MODEL_DTYPES or (d in _PRICED and key == d.canonical)):
        return d.bits
    raise InputError(
        f"cannot size KV dtype {dtype!r}",
        field="--kv-cache-dtype",
        hint="resolve 'auto' first; known: " + ", ".join(RESOLVED_KV_DTYPES),
    )


def kv_element_bytes(dtype: DType | str) -> int:
    """torch element size SGLang multiplies by: 4/2/1, and 1 for packed FP4 (two values)."""
    bits = kv_element_bits(dtype)
    return max(1, bits // 8)


#: the packed 4-bit KV dtypes (E2M1 values, two per byte, plus a scale byte per :data:`FP4_SCALE_BLOCK` values)
FP4_KV_DTYPES: tuple[str, ...] = tuple(d.canonical for d in _PRICED if d.bits == 4)
#: values sharing one FP4 scale byte
FP4_SCALE_BLOCK = 16


def _count(name: str, v: object) -> int:
    if not int_at_least(v, 0):
        raise InputError(f"{name} must be a non-negative integer, got {v!r}", field=name)
    return v


def kv_packed_bytes(*, values: int, dtype: DType | str) -> int:
    """Bytes ``values`` KV values occupy in ``dtype``, scales excluded: ``values * bits // 8`` (floor).

    Examples: 576 values (one MLA row) in bf16 -> 1,152; fp8 -> 576; nvfp4 / fp4_mx_block16 -> 288;
    ``values=35_136, dtype="nvfp4"`` (DeepSeek-V3, 61 rows) -> 17,568.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size`` (``cell_size // 2`` for ``float4_e2m1fn_x2``);
    python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py ``compute_cell_size`` (``head_dim // 2``),
    v0.5.23.
    """
    return _count("values", values) * kv_element_bits(dtype) // 8


def fp4_block_scale_bytes(*, values: int) -> int:
    """Scale bytes of ``values`` FP4 values: one uint8 scale per :data:`FP4_SCALE_BLOCK` (16) values, floored.

    Example: one 576-value MLA row -> 36; one 128-wide head -> 8.

    Source: sgl-project/sglang python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py
    ``NVFP4KVCacheMethod.SCALE_BLOCK_SIZE`` / ``FP4MXBlock16KVCacheMethod.SCALE_BLOCK_SIZE``;
    python/sglang/srt/mem_cache/memory_pool.py ``MLATokenToKVPool`` FP4 buffers (``k // 16``), v0.5.23.
    """
    return _count("values", values) // FP4_SCALE_BLOCK
