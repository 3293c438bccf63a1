"""The engines' backend names (and the Mamba state dtype) as enums: one member per spelling the engine's own flag takes.

A :class:`~enum.StrEnum` member *is* its spelling (``AttentionBackend.FA3 == "fa3"``; ``json.dumps``, ``str()`` and
f-strings give ``"fa3"``; only ``repr`` differs, so messages quote ``x.value!r`` / ``str(x)!r``, never ``x!r``).
The Deployment keeps the text the user typed (its annotations are the flag registry's, tests/test_flags.py, and
the core layer it lives in cannot import this one); the engines resolve it once, where they read the Deployment
into their own records (``PoolFlags.from_deployment``, the SGLang page and speculative queries, vLLM's
``VllmInputs``, the KV-dtype refusal calls of ``planning``), with :meth:`Spelled.parse`; the rule and pool functions
below them take and compare members only (tests/test_enums_s7.py fails on a backend compared with a string
literal).

A spelling no member declares (a backend a newer release adds, or a known one in another case where the engine's
rule is case-sensitive) is never an error here: :meth:`Spelled.parse` gives a pass-through member named
``UNKNOWN`` whose value is the text as typed (``known`` False).  It equals no declared member, so no rule fires
for it -- exactly what the string comparisons it replaces did -- and a message prints it as typed.  Whether an
unknown name is refused stays where it was decided before: ``kvplan.deployment.validate`` (``--attention-backend``),
the DeepSeek-V4 layout (``--dsv4-attn-backend``), vLLM's MLA selector, the Mamba state-dtype check.

Adding a backend spelling: one member in the class of its flag (value = the engine's CLI spelling, verbatim); if
``kvplan.deployment.ATTENTION_BACKENDS`` or the launch-command choices (``kvplan/inputs/launch.py``) list the flag's
vocabulary, add it there too (tests/test_enums_s7.py checks the two vocabularies and the enums agree).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType

__all__ = [
    "SSM_DTYPES",
    "AttentionBackend",
    "DsaBackend",
    "Dsv4AttnBackend",
    "MambaSsmDtype",
    "MoeA2ABackend",
    "Spelled",
    "VllmBackend",
    "ssm_state_dtype",
]

_UNKNOWN = "UNKNOWN"


class Spelled(StrEnum):
    """Base of the spelling enums: :meth:`parse` resolves a flag value, passing an undeclared one through."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, str):
            return None
        member = str.__new__(cls, value)
        member._name_ = _UNKNOWN
        member._value_ = value
        return member

    @classmethod
    def parse(cls, text: str | None, *, fold: bool = False, strip: bool = False) -> Self | None:
        """The member ``text`` spells (None stays None; a member is returned as is).  ``fold``: compare lower-cased
        (``strip``: trimmed too), for the flags whose engine or kvplan's rule reads them so (a pass-through member is
        looked up again); an undeclared spelling keeps its original text.

        Example: ``AttentionBackend.parse("fa3") is AttentionBackend.FA3``; ``AttentionBackend.parse("FA3")`` is
        the pass-through ``UNKNOWN`` member ``"FA3"`` (SGLang's rules compare exactly);
        ``Dsv4AttnBackend.parse("FlashMLA", fold=True) is Dsv4AttnBackend.FLASHMLA``."""
        if text is None or (isinstance(text, cls) and (text.known or not fold)):
            return text
        spelling = str(text)
        key = spelling.strip() if strip else spelling
        found = cls._value2member_map_.get(key.lower() if fold else key)
        return found if isinstance(found, cls) else cls(spelling)

    @property
    def known(self) -> bool:
        """Whether this is a declared member (False for the pass-through ``UNKNOWN`` of an undeclared spelling)."""
        return self._name_ != _UNKNOWN


class AttentionBackend(Spelled):
    """``--attention-backend`` (and SGLang's ``--prefill-attention-backend`` / ``--decode-attention-backend``, which
    take the same names): SGLang v0.5.23 ``python/sglang/srt/arg_groups/choices.py`` ``ATTENTION_BACKEND_CHOICES``,
    plus the lower-case vLLM names kvplan accepts for the same flag (``flash_attn`` ... ``triton_mla``)."""

    TRITON = "triton"
    TORCH_NATIVE = "torch_native"
    FLEX_ATTENTION = "flex_attention"
    DSA = "dsa"
    NSA = "nsa"
    QSA = "qsa"
    DSV4 = "dsv4"
    COMPRESSED = "compressed"
    FA3 = "fa3"
    FA4 = "fa4"
    FLASHINFER = "flashinfer"
    LLADA2_CFG_FLASHINFER = "llada2_cfg_flashinfer"
    FLASHMLA = "flashmla"
    TRTLLM_MLA = "trtllm_mla"
    CUTEDSL_MLA = "cutedsl_mla"
    TOKENSPEED_MLA = "tokenspeed_mla"
    TRTLLM_MHA = "trtllm_mha"
    HPC_OPS = "hpc_ops"
    MINICPM_FLASHATTN = "minicpm_flashattn"
    MINICPM_FLASHINFER = "minicpm_flashinfer"
    AITER = "aiter"
    WAVE = "wave"
    INTEL_AMX = "intel_amx"
    ASCEND = "ascend"
    INTEL_XPU = "intel_xpu"
    # vLLM's ``AttentionBackendEnum`` names, lower case (``vllm/v1/attention/backends/registry.py``)
    FLASH_ATTN = "flash_attn"
    FLASHMLA_SPARSE = "flashmla_sparse"
    ROCM_ATTN = "rocm_attn"
    ROCM_AITER_FA = "rocm_aiter_fa"
    TREE_ATTN = "tree_attn"
    CUTLASS_MLA = "cutlass_mla"
    FLASH_ATTN_MLA = "flash_attn_mla"
    FLASHINFER_MLA = "flashinfer_mla"
    TRITON_MLA = "triton_mla"


class Dsv4AttnBackend(Spelled):
    """SGLang ``--dsv4-attn-backend`` (``arg_groups/deepseek_v4_hook.py``, v0.5.23); read case-insensitively
    (``fold=True``), as kvplan's DeepSeek-V4 layout always did."""

    AUTO = "auto"
    FLASHMLA = "flashmla"
    FLASHMLA_MEGA = "flashmla_mega"
    TRTLLM = "trtllm"


class DsaBackend(Spelled):
    """SGLang ``--dsa-prefill-backend`` / ``--dsa-decode-backend`` (the choices of both flags, v0.5.23; read by
    ``arg_groups/overrides.py`` ``_dsa_split_backend_resolution``)."""

    FLASHMLA_SPARSE = "flashmla_sparse"
    FLASHMLA_SPARSE_Q8 = "flashmla_sparse_q8"
    FLASHMLA_KV = "flashmla_kv"
    FLASHMLA_AUTO = "flashmla_auto"
    FLASHINFER_SPARSE_MLA = "flashinfer_sparse_mla"
    TRITON_SPARSE_MLA = "triton_sparse_mla"  # prefill only
    FA3 = "fa3"
    TILELANG = "tilelang"
    TRITON = "triton"
    AITER = "aiter"
    TRTLLM = "trtllm"
    INTEL_XPU = "intel_xpu"


class MoeA2ABackend(Spelled):
    """SGLang ``--moe-a2a-backend`` (its choices, v0.5.23).  kvplan's CUDA-graph rules tell ``none`` / ``deepep`` /
    ``megamoe`` / ``flashinfer`` apart (``cuda_graph_hook.py``); every other one counts as "not modelled"."""

    NONE = "none"
    DEEPEP = "deepep"
    MOONCAKE = "mooncake"
    NIXL = "nixl"
    MORI = "mori"
    ASCEND_FUSEEP = "ascend_fuseep"
    FLASHINFER = "flashinfer"
    MEGAMOE = "megamoe"
    DEEPEP_V2 = "deepep_v2"
    PPLX = "pplx"
    ASCEND_TP = "ascend_tp"
    FLASHINFER_MEGAMOE = "flashinfer_megamoe"


class VllmBackend(Spelled):
    """vLLM's attention backend names, its ``AttentionBackendEnum`` member names (``vllm/v1/attention/backends/
    registry.py``): the ones kvplan's Gemma-4 and MLA-hybrid rules pick between (``platforms/cuda.py``
    ``_get_backend_priorities``, 0.25.1 - 0.34.0).  vLLM reads ``--attention-backend`` as
    ``AttentionBackendEnum[value.upper()]`` (``vllm/config/attention.py`` ``validate_backend_before``, read in the
    0.21 wheel); kvplan's rules trimmed it too, so :meth:`of_flag` does both."""

    FLASH_ATTN = "FLASH_ATTN"
    FLASHINFER = "FLASHINFER"
    TRITON_ATTN = "TRITON_ATTN"
    TRITON_FLASHINFER = "TRITON_FLASHINFER"
    TRITON_FLASH_ATTN = "TRITON_FLASH_ATTN"
    FLASH_ATTN_MLA = "FLASH_ATTN_MLA"
    FLASHMLA = "FLASHMLA"
    FLASHINFER_MLA = "FLASHINFER_MLA"
    CUTLASS_MLA = "CUTLASS_MLA"
    TRITON_MLA = "TRITON_MLA"

    @classmethod
    def of_flag(cls, text: str) -> VllmBackend:
        """The member of an ``--attention-backend`` value as vLLM reads it (trimmed, upper case); an undeclared
        name passes through upper-cased.  Example: ``VllmBackend.of_flag(" flash_attn") is VllmBackend.FLASH_ATTN``."""
        found = cls.parse(text.strip().upper())
        assert found is not None
        return found


class MambaSsmDtype(Spelled):
    """SGLang ``--mamba-ssm-dtype`` (``configs/mamba_utils.py`` ``mamba2_state_dtype``, v0.5.23): the torch names
    and kvplan's short ones, read trimmed and lower-cased (``fold=True, strip=True``); anything else passes through
    and the Mamba pool refuses it with the spelling as typed."""

    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"
    FLOAT16 = "float16"
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"

    @property
    def dtype(self) -> DType | None:
        """The element type of a declared member (None for an undeclared spelling)."""
        return SSM_DTYPES.get(self) if self.known else None


#: each ``--mamba-ssm-dtype`` member's element type
SSM_DTYPES: dict[MambaSsmDtype, DType] = {
    MambaSsmDtype.FLOAT32: DType.FP32,
    MambaSsmDtype.FP32: DType.FP32,
    MambaSsmDtype.BFLOAT16: DType.BF16,
    MambaSsmDtype.BF16: DType.BF16,
    MambaSsmDtype.FLOAT16: DType.FP16,
    MambaSsmDtype.FP16: DType.FP16,
}


def ssm_state_dtype(spelled: MambaSsmDtype) -> DType:
    """The element type of a ``--mamba-ssm-dtype`` member; :class:`InputError` naming the spelling as typed for
    one no member declares (SGLang's ``mamba2_state_dtype`` takes only these).  Example: ``BF16`` -> ``DType.BF16``."""
    d = SSM_DTYPES.get(spelled)
    if d is None:
        raise InputError(
            f"unknown Mamba state dtype {str(spelled)!r}",
            field="--mamba-ssm-dtype",
            hint="float32, bfloat16 or float16",
        )
    return d
