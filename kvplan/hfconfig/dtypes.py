"""The one dtype table: every element type kvplan sizes, its width, and every spelling that names it.

A dtype name is read once, at the edge (a flag, a config field, a preset), into a :class:`DType`; every byte or bit
count in kvplan is a lookup on it (``DType.BF16.bytes == 2``, ``DType.NVFP4.bits == 4``).  No other module keeps a
name -> bytes table (``tests/test_dtype_once.py``).  Which spellings a flag *accepts* is an engine's vocabulary and
stays with that engine (SGLang's ``--kv-cache-dtype`` choices in :mod:`kvplan.geometry.kvdtype`, vLLM's in
:mod:`kvplan.engines.vllm.specs`, the Mamba state flags in the SGLang pool): those are tuples of names, sized here.

Widths:

* ``bits`` is the width of one stored value (scales, zero points and padding excluded): 32, 16, 8 or 4;
* ``bytes`` is torch's element size of the storage container, ``max(1, bits // 8)``: the packed 4-bit types are a
  one-byte container holding two values (torch ``float4_e2m1fn_x2``, vLLM's uint8 NVFP4 / INT4 caches), so an engine
  that multiplies by the element size counts 1 and halves where it packs.

Example: ``dtype_of("torch.bfloat16") is DType.BF16``; ``DType.BF16.bytes == 2``; ``dtype_of("fp8_inc").bytes == 1``;
``DType.NVFP4.bits == 4`` and ``DType.NVFP4.bytes == 1``; ``dtype_of("float8") is None``.

Sources (what each spelling means, read in the engines): sgl-project/sglang
python/sglang/srt/arg_groups/fields/model.py (``kv_cache_dtype`` choices), python/sglang/srt/configs/mamba_utils.py
``mamba2_state_dtype`` (v0.5.23); vllm-project/vllm vllm/config/cache.py ``CacheDType``,
vllm/utils/torch_utils.py ``STR_DTYPE_TO_TORCH_DTYPE`` (v0.25.1); Hugging Face ``torch_dtype`` / ``dtype`` values.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["DType", "dtype_bytes", "dtype_named", "dtype_of"]


class DType(Enum):
    """An element type: ``value`` is kvplan's canonical name (``DType("bf16") is DType.BF16``); ``bits`` the width
    of one value; ``spellings`` every name an engine flag, a Hugging Face config or a weight scheme uses for it (the
    canonical name first)."""

    FP32 = ("fp32", 32, ("float32", "float", "torch.float32"))
    BF16 = ("bf16", 16, ("bfloat16", "torch.bfloat16"))
    FP16 = ("fp16", 16, ("float16", "half", "torch.float16"))
    # vLLM: fp8 = e4m3 on CUDA; fp8_inc (Intel Gaudi), fp8_ds_mla (DeepSeek's MLA layout) and fp8_per_token_head
    # store e4m3 values too (their scales are counted by the layout, not here)
    FP8_E4M3 = ("fp8_e4m3", 8, ("fp8", "fp8_e4m3fn", "fp8_inc", "fp8_ds_mla", "fp8_per_token_head"))
    FP8_E5M2 = ("fp8_e5m2", 8, ())
    MXFP8 = ("mxfp8", 8, ())
    INT8 = ("int8", 8, ("int8_per_token_head",))
    MXFP4 = ("mxfp4", 4, ())  # OCP MX FP4 (E2M1 values, E8M0 scale per 32): a weight format, not a KV dtype here
    NVFP4 = ("nvfp4", 4, ())
    FP4_MX_BLOCK16 = ("fp4_mx_block16", 4, ())
    INT4 = ("int4", 4, ("int4_per_token_head",))

    _value_: str
    canonical: str  # == value, typed (mypy reads a custom enum value as Any)
    bits: int
    spellings: tuple[str, ...]

    def __new__(cls, canonical: str, bits: int, aliases: tuple[str, ...]) -> DType:
        member = object.__new__(cls)
        member._value_ = member.canonical = canonical
        member.bits = bits
        member.spellings = (canonical, *aliases)
        return member

    @property
    def bytes(self) -> int:
        """torch's element size of the storage container: ``max(1, bits // 8)`` (1 for the packed 4-bit types)."""
        return max(1, self.bits // 8)


#: every spelling -> its member, built once from the declarations above
_BY_SPELLING: dict[str, DType] = {s: d for d in DType for s in d.spellings}


def dtype_of(name: object) -> DType | None:
    """The :class:`DType` a spelling names (trimmed, case-insensitive), ``None`` for anything else (``auto``
    included: what ``auto`` becomes is an engine rule).

    Example: ``dtype_of(" BFloat16 ") is DType.BF16``; ``dtype_of("half") is DType.FP16``; ``dtype_of("auto") is None``.
    """
    if isinstance(name, DType):
        return name
    if not isinstance(name, str):
        return None
    return _BY_SPELLING.get(name.strip().lower())


def dtype_bytes(name: object) -> int | None:
    """Element bytes of a spelling (``DType.bytes``), ``None`` when it names no dtype.

    Example: ``dtype_bytes("float32") == 4``; ``dtype_bytes("fp8") == 1``; ``dtype_bytes("auto") is None``.
    """
    d = dtype_of(name)
    return None if d is None else d.bytes


def dtype_named(name: str) -> DType:
    """The member of a spelling already validated by its flag's vocabulary; ``KeyError`` for any other.

    Example: ``dtype_named("bfloat16") is DType.BF16``; ``dtype_named("auto")`` raises ``KeyError``.
    """
    return _BY_SPELLING[name.strip().lower()]
