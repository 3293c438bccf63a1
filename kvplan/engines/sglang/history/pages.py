"""SGLang's default page size before 0.5.23, by :class:`PageEra` (0.5.3 - 0.5.22) and before 0.5.3.

Part of :mod:`kvplan.engines.sglang.history` (see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from kvplan.engines.backends import AttentionBackend
from kvplan.engines.sglang import rules as newest
from kvplan.engines.sglang.history.memory import TRTLLM_MHA_SM100_ARCHS
from kvplan.engines.sglang.page_query import PageQuery
from kvplan.engines.sglang.platform import platform_of
from kvplan.engines.sglang.release_types import qwen3_next_sm100_page
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.version import Version


def model_picks_trtllm_mha(
    *, architectures: Any, attention_backend: AttentionBackend | None, sm_major: int | None, vendor: str
) -> bool:
    """GPT-OSS on a CUDA SM100 GPU with no ``--attention-backend``: its model override sets ``trtllm_mha``, whose
    page constraint then makes the page 64 (16 / 32 / 64 kept).  Example: gpt-oss-120b on a B200 -> True; on an H100
    or with ``--attention-backend triton`` -> False.

    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs.model_specific_adjustments``
    (GptOssForCausalLM) run before the ``trtllm_mha`` page check in ``__post_init__`` ("TensorRT-LLM MHA only
    supports page_size of 16, 32 or 64, changing page_size from ... to 64"), v0.5.0rc2 - v0.5.2;
    ``_handle_model_specific_adjustments`` before ``_handle_attention_backend_compatibility``, v0.5.3 - v0.5.6.
    """
    if attention_backend is not None or sm_major != 10 or platform_of(vendor) != "cuda":
        return False
    return bool(TRTLLM_MHA_SM100_ARCHS.intersection(architectures or ()))


def page_size_before_0_5_3(
    q: PageQuery, *, flashmla: bool = False, cutlass: bool = False, gpt_oss_sm100: bool = False
) -> int:
    """Page size 0.4.4 - 0.5.2 (the deployment in ``q``): ``requested`` (``--page-size``; 1 when not given), unless
    the named backend forces its own over it (``flashmla`` -> 64 from 0.4.5.post3, ``cutlass_mla`` -> 128 from
    0.4.6.post2; ``trtllm_mha``, GPT-OSS's own pick on SM100 from 0.5.0rc2 (``gpt_oss_sm100``,
    :func:`model_picks_trtllm_mha`) -> 64 unless 16 / 32 / 64).  Before 0.4.4 there are no pages (the planner
    ignores the flag).  Example: ``--attention-backend flashmla`` under 0.4.6 -> 64; Llama on a B200 under 0.5.1 ->
    1; gpt-oss-120b on a B200 under 0.5.0rc2 -> 64; ``--page-size 64`` under 0.4.4 -> 64.

    Source: server_args.py ``ServerArgs.__post_init__`` (``page_size: int = 1`` from 0.4.4; the flashmla /
    cutlass_mla / trtllm_mha branches; ``model_specific_adjustments`` GptOssForCausalLM), wheels 0.4.4, 0.4.5.post3,
    0.4.6.post2, 0.5.0rc2, 0.5.2.
    """
    attention_backend, requested = q.attention_backend, q.requested
    if flashmla and attention_backend == AttentionBackend.FLASHMLA:
        return 64
    if cutlass and attention_backend == AttentionBackend.CUTLASS_MLA:
        return 128
    if gpt_oss_sm100 and model_picks_trtllm_mha(
        architectures=q.architectures, attention_backend=attention_backend, sm_major=q.sm_major, vendor=q.vendor
    ):
        return requested if requested in (16, 32, 64) else 64
    return requested or 1


# ================================================================================================
# Page size 0.5.3 - 0.5.22 (server_args.py, then arg_groups/overrides.py from 0.5.15)
# ================================================================================================


@dataclass(frozen=True)
class PageEra:
    """What the page-size rules did in one range of releases 0.5.3 - 0.5.22 (data; :func:`page_size_by_era`).

    Read in each wheel: the default attention backend (``model_executor/model_runner.py``
    ``ModelRunner.model_specific_adjustment`` in 0.5.3 - 0.5.4, after the page constraints; ``server_args.py``
    ``ServerArgs._handle_attention_backend_compatibility`` / ``_get_default_attn_backend`` 0.5.5 - 0.5.18, before
    them; ``arg_groups/model_override_base.py`` ``get_default_attn_backend`` from 0.5.19), the backend page
    constraints (``server_args.py``, ``arg_groups/overrides.py`` ``_mla_backend_page_constraints`` /
    ``_fa4_page_constraint`` / ``_intel_xpu_page_constraint`` from 0.5.15) and ``_handle_page_size`` /
    ``_page_size_default``.
    """

    gqa_sm100_trtllm_mha: bool = False  # GQA on SM100 defaults to trtllm_mha (0.5.7+; flashinfer before)
    fa4_for_asymmetric: bool = False  # ... fa4 when K and V widths differ (0.5.17+)
    deepseek_trtllm_mla: bool = False  # DeepSeek-family MLA on SM100 defaults to trtllm_mla (0.5.4+)
    trtllm_mha_pages: tuple[int, ...] = (16, 32, 64)  # pages trtllm_mha keeps ((16, 32, 64, 128) from 0.5.17)
    cutlass_mla_128: bool = True  # cutlass_mla forces 128 (to 0.5.19)
    tokenspeed_mla: bool = False  # tokenspeed_mla -> 64 unless 32 / 64 (0.5.12 - 0.5.22)
    cutedsl_mla: bool = False  # cutedsl_mla -> 64 unless 32 / 64 (0.5.13+)
    hpc_ops: bool = False  # hpc_ops -> 64 (0.5.17+)
    fa4: str = "refused"  # --attention-backend fa4: "refused" (0.5.4 - 0.5.7: prefill only),
    # "no-page" (0.5.8 - 0.5.14: only the prefill flag forces 128), "128"
    intel_xpu: str = ""  # "": no rule (0.5.3); "any-32-64-128" (0.5.4 - 0.5.10); "mla" (0.5.11+)
    musa_64: bool = False  # an unset page is 64 on MUSA (0.5.11+)
    vectorized_5d: bool = False  # ... and on ROCm with SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d (0.5.13+)
    qwen3_next_sm100: str = ""  # Qwen3-Next / Qwen3.5 SM100 backend override: "triton" (0.5.7 - 0.5.9),
    # "pick" (0.5.10 - 0.5.13), "force" (0.5.14+; releases.qwen3_next_sm100_page)
    dsa: str = "64"  # DSA page: "64" everywhere but NPU (0.5.3 - 0.5.7); "hip-1" (0.5.8 -
    # 0.5.11); "preshuffle" (ROCm 1 without the aiter path, 0.5.12 - 0.5.20);
    # "xpu-128" (0.5.21); "kpool" (64 x index_kpool, 0.5.22+)


def _era_backend(
    *,
    era: PageEra,
    fam: Family,
    plat: str,
    sm_major: int | None,
    deepseek_family: bool,
    has_asymmetric_kv: bool,
    topk_ok: bool,
) -> AttentionBackend | None:
    """The default backend where it decides the page (None: one that forces nothing, fa3 / flashinfer / ...)."""
    if plat != "cuda" or sm_major != 10:
        return None
    if fam == Family.MLA:
        return AttentionBackend.TRTLLM_MLA if era.deepseek_trtllm_mla and deepseek_family else None
    if fam == Family.GQA and era.gqa_sm100_trtllm_mha and topk_ok:
        return AttentionBackend.FA4 if era.fa4_for_asymmetric and has_asymmetric_kv else AttentionBackend.TRTLLM_MHA
    return None


def _era_dsa_page(*, era: PageEra, plat: str, index_kpool: int, hip_dsa_preshuffle: bool) -> int | None:
    if plat == "npu":
        return None
    if era.dsa == "kpool":
        return newest._dsa_page(plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle)
    if plat == "xpu" and era.dsa == "xpu-128":
        return 128
    if plat == "hip" and (era.dsa == "hip-1" or (era.dsa in ("preshuffle", "xpu-128") and not hip_dsa_preshuffle)):
        return 1
    return 64


def _xpu_page(*, era: PageEra, fam: Family, page: int | None) -> int | None:
    """intel_xpu: 0.5.4 - 0.5.10 keep 32 / 64 / 128; 0.5.11+ keep 16 / 32 / 64 / 128 (MLA) or 64 / 128; else 128."""
    if era.intel_xpu == "any-32-64-128":
        ok: tuple[int, ...] = (32, 64, 128)
    else:
        ok = (16, 32, 64, 128) if fam == Family.MLA else (64, 128)
    return page if page in ok else 128


def _fa4_page(
    *, era: PageEra, fam: Family, plat: str, sm_major: int | None, topk_ok: bool, page: int | None
) -> int | None:
    if era.fa4 == "refused":
        raise InputError(
            "this SGLang release runs fa4 only as --prefill-attention-backend fa4 ('FA4 backend is "
            "only supported for prefill')",
            field="--attention-backend",
            hint="use --engine-version 0.5.8 or newer, or another attention backend",
        )
    if era.fa4 == "128" and fam != Family.MLA and plat == "cuda" and sm_major == 10 and topk_ok:
        return 128
    return page


def _era_constraints(
    *,
    era: PageEra,
    backend: AttentionBackend | None,
    fam: Family,
    plat: str,
    sm_major: int | None,
    topk_ok: bool,
    page: int | None,
) -> int | None:
    """``page`` (the requested one, None when unset) after the named backend's constraint."""
    keep_32_64 = {
        AttentionBackend.TRTLLM_MLA: True,
        AttentionBackend.TOKENSPEED_MLA: era.tokenspeed_mla,
        AttentionBackend.CUTEDSL_MLA: era.cutedsl_mla,
    }
    if backend == AttentionBackend.FLASHMLA:
        return 64
    if backend == AttentionBackend.CUTLASS_MLA and era.cutlass_mla_128:
        return 128
    if backend is not None and keep_32_64.get(backend):
        return page if page in (32, 64) else 64
    if backend == AttentionBackend.TRTLLM_MHA:
        return page if page in era.trtllm_mha_pages else 64
    if backend == AttentionBackend.HPC_OPS and era.hpc_ops:
        return 64
    if backend == AttentionBackend.FA4:
        return _fa4_page(era=era, fam=fam, plat=plat, sm_major=sm_major, topk_ok=topk_ok, page=page)
    if backend == AttentionBackend.INTEL_XPU and era.intel_xpu:
        return _xpu_page(era=era, fam=fam, page=page)
    return page


def page_size_by_era(q: PageQuery, *, era: PageEra, release: tuple[int, int, int] = (0, 5, 22)) -> int:
    """Page size of the deployment in ``q`` (:class:`~kvplan.engines.sglang.page_query.PageQuery`) under the
    release ``release`` of page era ``era``, 0.5.3 - 0.5.22 (0.5.23: ``rules.default_page_size``)::

        DeepSeek-V4 (0.5.12+)  256 (NPU 128), the model override
        DSA                    64 (era.dsa: ROCm 1 from 0.5.8 / without the aiter preshuffle path from 0.5.12;
                               XPU 128 from 0.5.21; 64 x index_kpool from 0.5.22)
        backend = --attention-backend, else the default that forces a page:
                  SM100 GQA -> trtllm_mha from 0.5.7 (flashinfer before; fa4 for asymmetric K/V from 0.5.17),
                  SM100 DeepSeek-family MLA -> trtllm_mla from 0.5.4; GPT-OSS on SM100 -> trtllm_mha (its model
                  override, :func:`model_picks_trtllm_mha`, 0.5.3 - 0.5.6); every other default forces nothing
        page = requested (None when unset), then the backend's constraint:
        flashmla 64; cutlass_mla 128 (to 0.5.19); trtllm_mla / tokenspeed_mla (0.5.12 - 0.5.22) /
        cutedsl_mla (0.5.13+) 64 unless 32 / 64; trtllm_mha 64 unless era.trtllm_mha_pages (128 allowed from
        0.5.17); hpc_ops 64 (0.5.17+); fa4 128 (non-MLA on SM100, 0.5.15+; refused as --attention-backend in
        0.5.4 - 0.5.7); intel_xpu 128 unless supported (0.5.4+)
        still unset: 1 (64 on MUSA from 0.5.11, on ROCm vectorized_5d from 0.5.13)
        Qwen3-Next / Qwen3.5 on SM100, backend unset (0.5.7+): the model override's page first
        (``releases.qwen3_next_sm100_page``: triton 1 in 0.5.7 - 0.5.9; 0.5.10+ trtllm_mha 64 only with
        extra_buffer, radix off or speculative decoding)

    Worked examples: Llama-3.1-8B on a B200 (SM100) -> 1 under 0.5.6 (flashinfer), 64 under 0.5.7 (trtllm_mha);
    DeepSeek-V3 with ``--attention-backend cutlass_mla`` -> 128 under 0.5.19, 1 under 0.5.20 (no constraint);
    DeepSeek-V3.2 (DSA) on MI355X -> 64 under 0.5.7, 1 under 0.5.8; Qwen3-Next on a B200 -> 1 under 0.5.7 - 0.5.13
    (triton), 1 under 0.5.14 (the override reads "auto"), 64 under 0.5.16 (extra_buffer -> trtllm_mha).

    Source: sgl-project/sglang python/sglang/srt/server_args.py ``ServerArgs._handle_attention_backend_compatibility``
    and ``_handle_page_size`` (0.5.3 - 0.5.14), ``arg_groups/overrides.py`` ``_mla_backend_page_constraints``,
    ``_fa4_page_constraint``, ``_page_size_default`` (0.5.15 - 0.5.22), ``model_executor/model_runner.py``
    ``model_specific_adjustment`` (0.5.3 - 0.5.4), the DSA override in ``_handle_model_specific_adjustments`` /
    ``arg_groups/model_overrides/deepseek_v2.py``; wheels 0.5.3 - 0.5.22.
    """
    attention_backend, sm_major, vendor, requested, architectures = (
        q.attention_backend,
        q.sm_major,
        q.vendor,
        q.requested,
        q.architectures,
    )
    index_kpool, hip_dsa_preshuffle = q.index_kpool, q.hip_dsa_preshuffle
    fam = Family(q.family)
    plat = platform_of(vendor)
    topk_ok = q.speculative_eagle_topk is None or q.speculative_eagle_topk <= 1
    forced = qwen3_next_sm100_page(
        q, rule=era.qwen3_next_sm100, release=release, trtllm_default=era.gqa_sm100_trtllm_mha and topk_ok
    )
    if forced is not None:
        return forced
    if fam == Family.DSV4:
        return newest._dsv4_page(plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle) or 1
    if fam == Family.DSA:
        page = _era_dsa_page(era=era, plat=plat, index_kpool=index_kpool, hip_dsa_preshuffle=hip_dsa_preshuffle)
        if page is not None:
            return page
    backend = attention_backend or _era_backend(
        era=era,
        fam=fam,
        plat=plat,
        sm_major=sm_major,
        deepseek_family=q.deepseek_family,
        has_asymmetric_kv=q.has_asymmetric_kv,
        topk_ok=topk_ok,
    )
    if backend is None and model_picks_trtllm_mha(
        architectures=architectures, attention_backend=attention_backend, sm_major=sm_major, vendor=vendor
    ):
        # GPT-OSS's own override (0.5.3 - 0.5.6; from 0.5.7 every SM100 GQA model's default)
        backend = AttentionBackend.TRTLLM_MHA
    page = _era_constraints(
        era=era, backend=backend, fam=fam, plat=plat, sm_major=sm_major, topk_ok=topk_ok, page=requested
    )
    if page is not None:
        return page
    if (era.musa_64 and plat == "musa") or (era.vectorized_5d and plat == "hip" and q.hip_vectorized_5d):
        return 64
    return 1


_PAGE_053 = PageEra(fa4="no-page")
_PAGE_054 = replace(_PAGE_053, deepseek_trtllm_mla=True, intel_xpu="any-32-64-128", fa4="refused")
_PAGE_057 = replace(_PAGE_054, gqa_sm100_trtllm_mha=True, qwen3_next_sm100="triton")
_PAGE_058 = replace(_PAGE_057, dsa="hip-1", fa4="no-page")
_PAGE_0510 = replace(_PAGE_058, qwen3_next_sm100="pick")
_PAGE_0511 = replace(_PAGE_0510, musa_64=True, intel_xpu="mla")
_PAGE_0512 = replace(_PAGE_0511, tokenspeed_mla=True, dsa="preshuffle")
_PAGE_0513 = replace(_PAGE_0512, cutedsl_mla=True, vectorized_5d=True)
_PAGE_0514 = replace(_PAGE_0513, qwen3_next_sm100="force")
_PAGE_0515 = replace(_PAGE_0514, fa4="128")
_PAGE_0517 = replace(_PAGE_0515, fa4_for_asymmetric=True, trtllm_mha_pages=(16, 32, 64, 128), hpc_ops=True)
_PAGE_0520 = replace(_PAGE_0517, cutlass_mla_128=False)
_PAGE_0521 = replace(_PAGE_0520, dsa="xpu-128")
_PAGE_0522 = replace(_PAGE_0521, dsa="kpool")


def _pages(era: PageEra, release: str) -> dict[str, Any]:
    """The page function of the window starting at ``release`` (its key: the Qwen3-Next override's model list)."""
    return dict(default_page_size=partial(page_size_by_era, era=era, release=Version.of(release).triple))
