"""SGLang's DSA / NSA sparse-MLA pool (DeepSeek-V3.2, GLM-5, GLM-5.2 ...): row layouts, cells, the planner.

Per token and layer a DSA pool stores the MLA latent row plus, on layers that compute their
own top-k, an FP8 indexer key (which layers do: :mod:`kvplan.geometry.dsa`). The latent row has three layouts:

=============  ==============================================  ==================
layout         bytes (kv_lora_rank 512, rope 64)               when
=============  ==============================================  ==================
``scaled_fp8`` 512 fp8 + 512/128 x 4 B fp32 scales + 64 x 2 B  fp8 KV on the FlashMLA-style
               bf16 rope = **656**                              backends (flashmla_kv,
                                                                flashinfer_sparse_mla ...)
``raw_fp8``    512 + 64 = **576**                               fp8 KV read by ``trtllm``,
                                                                CUDA tilelang (both sides),
                                                                HIP tilelang/triton/aiter
``bf16``       576 x 2 = **1,152**                              bf16 KV
=============  ==============================================  ==================

Indexer key: ``ceil((index_head_dim + index_head_dim/128 x 4) / index_kpool)`` bytes (uint8
storage) = **132 B** for index_head_dim 128, kpool 1.

Sources (sgl-project/sglang, v0.5.23): ``python/sglang/srt/arg_groups/overrides.py``
``_dsa_kv_cache_dtype_default``, ``_dsa_split_backend_resolution``,
``_check_dsa_backend_constraints``; ``python/sglang/srt/mem_cache/kv_cache_configurator.py``
``calculate_mla_kv_cache_dim``, ``_should_elide_dsa_index_k``;
``python/sglang/srt/model_executor/pool_configurator.py``
``DefaultPoolConfigurator._compute_cell_size`` / ``_compute_dsa_indexer_cell_size``;
``python/sglang/srt/configs/model_config.py`` ``dsa_layer_skips_topk``;
``python/sglang/srt/mem_cache/memory_pool.py`` ``DSATokenToKVPool`` (quant_block_size 128,
rope stored bf16, index-K uint8).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kvplan.engines.backends import DsaBackend
from kvplan.engines.sglang.kvdtype import resolve_kv_cache_dtype
from kvplan.engines.sglang.platform import platform_of as _plat
from kvplan.engines.sglang.pools.base import Breakdown, PoolContext, PoolPlan, draft_layers
from kvplan.engines.sglang.pools.default import plan_default
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.geometry.dsa import dsa_indexer_layer_count, dsa_skip_fields
from kvplan.hfconfig.dtypes import DType, dtype_named

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec

DSA_LAYOUTS: tuple[str, ...] = ("scaled_fp8", "raw_fp8", "bf16")
_QUANT_BLOCK = 128
_ROPE_BYTES = 2  # rope is stored in bf16 in the scaled layout

_RAW_HIP_BACKENDS = frozenset((DsaBackend.TILELANG, DsaBackend.TRITON, DsaBackend.AITER))


def _is_glm(model: str) -> bool:
    return (model or "").strip().lower() in ("glm", "glm-dsa", "glm5", "glmmoedsaforcausallm")


def _resolved_dtype(kv_dtype: DType | None, sm_major: int | None, vendor: str, learnable_sink: bool) -> DType:
    """SGLang's stored DSA KV dtype (``resolve_kv_cache_dtype``; ``None`` is ``auto``) as a :class:`DType` (a member
    the planner resolved already stays itself)."""
    return dtype_named(
        resolve_kv_cache_dtype(
            requested="auto" if kv_dtype is None else kv_dtype.canonical,
            model_dtype="bfloat16",
            kv_cache_quant_algo=None,
            family=Family.DSA,
            sm_major=sm_major,
            vendor=vendor,
            learnable_sink=learnable_sink,
        )
    )


def dsa_default_backends(
    *,
    kv_dtype: DType | None,
    sm_major: int | None,
    vendor: str,
    model: str = "deepseek",
    prefill_backend: DsaBackend | None = None,
    decode_backend: DsaBackend | None = None,
    learnable_sink: bool = False,
    dcp_size: int = 1,
) -> tuple[DsaBackend, DsaBackend]:
    """``(prefill, decode)`` DSA backends SGLang 0.5.23 runs with (user values win).

    Order of ``_dsa_split_backend_resolution`` (HiSparse not modelled):

    1. DCP > 1: unset sides default to ``trtllm`` (model override ``_dsa_dcp_overrides``);
    2. learnable attention sink: ``flashmla_sparse`` both sides;
    3. GLM-DSA (``GlmMoeDsaForCausalLM``) on SM12x with fp8 KV, not HIP: ``flashinfer_sparse_mla``;
    4. HIP: ``triton``;
    5. fp8 KV: ``trtllm`` if SM major >= 10 else ``flashmla_kv``;
    6. bf16 KV: prefill ``flashmla_sparse``; decode ``trtllm`` if SM >= 10 else ``fa3``.

    Raises :class:`InputError` where ``_check_dsa_backend_constraints`` raises: ``triton`` off
    ROCm; CUDA fp8 with tilelang on only one side; CUDA tilelang fp8 with DCP > 1 or SM < 8.9.

    Example: DeepSeek-V3.2 on SM90 with ``fp8_e4m3`` -> ``("flashmla_kv", "flashmla_kv")``.

    Source: sgl-project/sglang python/sglang/srt/arg_groups/overrides.py
    ``_dsa_split_backend_resolution``; python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py
    ``_dsa_dcp_overrides``, v0.5.23.
    """
    plat = _plat(vendor)
    dt = _resolved_dtype(kv_dtype, sm_major, vendor, learnable_sink)
    if plat == "npu":
        raise InputError("DSA pools on Ascend NPU are not modelled", field="--device")
    if plat == "xpu":
        return prefill_backend or DsaBackend.INTEL_XPU, decode_backend or DsaBackend.INTEL_XPU
    major = sm_major if sm_major is not None else (9 if plat == "hip" else 0)
    if dcp_size > 1:
        prefill_backend = prefill_backend or DsaBackend.TRTLLM
        decode_backend = decode_backend or DsaBackend.TRTLLM
    if learnable_sink:
        for side, val in (("--dsa-prefill-backend", prefill_backend), ("--dsa-decode-backend", decode_backend)):
            if val is not None and val != DsaBackend.FLASHMLA_SPARSE:
                raise InputError(
                    f"models with learnable attention sinks need flashmla_sparse, got {str(val)!r}", field=side
                )
        return DsaBackend.FLASHMLA_SPARSE, DsaBackend.FLASHMLA_SPARSE
    if _is_glm(model) and major == 12 and dt is DType.FP8_E4M3 and plat != "hip":
        return (
            prefill_backend or DsaBackend.FLASHINFER_SPARSE_MLA,
            decode_backend or DsaBackend.FLASHINFER_SPARSE_MLA,
        )
    if plat == "hip":
        p, d = prefill_backend or DsaBackend.TRITON, decode_backend or DsaBackend.TRITON
    elif dt is DType.FP8_E4M3:
        default = DsaBackend.TRTLLM if major >= 10 else DsaBackend.FLASHMLA_KV
        p, d = prefill_backend or default, decode_backend or default
    else:
        p = prefill_backend or DsaBackend.FLASHMLA_SPARSE
        d = decode_backend or (DsaBackend.TRTLLM if major >= 10 else DsaBackend.FA3)
    if plat != "hip" and DsaBackend.TRITON in (p, d):
        raise InputError(
            "the triton DSA backend is ROCm-only",
            field="--dsa-prefill-backend" if p == DsaBackend.TRITON else "--dsa-decode-backend",
            hint="use flashmla_kv on Hopper or trtllm on Blackwell",
        )
    if plat != "hip" and dt is DType.FP8_E4M3 and DsaBackend.TILELANG in (p, d):
        if p != DsaBackend.TILELANG or d != DsaBackend.TILELANG:
            raise InputError(
                "CUDA TileLang FP8 KV needs both DSA backends to be tilelang",
                field="--dsa-prefill-backend",
                hint="raw and scaled FP8 layouts cannot be mixed",
            )
        if dcp_size > 1:
            raise InputError("CUDA TileLang FP8 KV does not support --dcp-size > 1", field="--dcp-size")
    return p, d


def dsa_row_layout(
    *,
    kv_dtype: DType | None,
    sm_major: int | None,
    vendor: str,
    model: str = "deepseek",
    prefill_backend: DsaBackend | None = None,
    decode_backend: DsaBackend | None = None,
    learnable_sink: bool = False,
    dcp_size: int = 1,
    disaggregation_mode: str = "null",
) -> str:
    """Which latent-row layout the DSA pool uses: ``"scaled_fp8"``, ``"raw_fp8"`` or ``"bf16"``.

    ``kv_dtype`` may be ``None`` (``auto``, resolved as in :func:`resolve_kv_cache_dtype`). A bf16 pool is
    always ``"bf16"``. An fp8 pool is raw when a local backend is ``trtllm`` (PD decode looks at
    the decode backend only, PD prefill at the prefill one), when on HIP a backend is
    tilelang/triton/aiter, or when both CUDA backends are tilelang; otherwise scaled.

    Defaults in 0.5.23: SM100/SM103/SM120 DeepSeek-V3.2 -> fp8 + trtllm -> raw (576 B);
    SM90 with ``--kv-cache-dtype fp8_e4m3`` -> flashmla_kv -> scaled (656 B); SM90 auto -> bf16
    (1,152 B); GLM-DSA on SM12x (fp8 by default) -> flashinfer_sparse_mla -> scaled;
    HIP (auto -> bf16; fp8 -> triton) -> bf16 / raw.

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``calculate_mla_kv_cache_dim``; python/sglang/srt/arg_groups/overrides.py
    ``_dsa_split_backend_resolution``, v0.5.23.
    """
    dt = _resolved_dtype(kv_dtype, sm_major, vendor, learnable_sink)
    p, d = dsa_default_backends(
        kv_dtype=dt,
        sm_major=sm_major,
        vendor=vendor,
        model=model,
        prefill_backend=prefill_backend,
        decode_backend=decode_backend,
        learnable_sink=learnable_sink,
        dcp_size=dcp_size,
    )
    if dt is DType.BF16:
        return "bf16"
    if disaggregation_mode == "decode":
        trtllm = d == DsaBackend.TRTLLM
    elif disaggregation_mode == "prefill":
        trtllm = p == DsaBackend.TRTLLM
    else:
        trtllm = DsaBackend.TRTLLM in (p, d)
    if trtllm:
        return "raw_fp8"
    if _plat(vendor) == "hip" and (p in _RAW_HIP_BACKENDS or d in _RAW_HIP_BACKENDS):
        return "raw_fp8"
    if p == DsaBackend.TILELANG and d == DsaBackend.TILELANG:
        return "raw_fp8"
    return "scaled_fp8"


def dsa_row_bytes(*, kv_lora_rank: int, qk_rope_head_dim: int, layout: str) -> int:
    """Latent-row bytes per token per layer.

    ``scaled_fp8``: ``lora + lora // 128 * 4 + rope * 2`` (656); ``raw_fp8``: ``lora + rope`` (576);
    ``bf16``: ``(lora + rope) * 2`` (1,152).

    Source: sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``calculate_mla_kv_cache_dim``, v0.5.23.
    """
    if layout not in DSA_LAYOUTS:
        raise InputError(f"unknown DSA layout {layout!r}", field="layout", hint="one of " + ", ".join(DSA_LAYOUTS))
    if layout == "scaled_fp8":
        if kv_lora_rank % _QUANT_BLOCK:
            raise InputError(f"kv_lora_rank {kv_lora_rank} is not a multiple of {_QUANT_BLOCK}", field="kv_lora_rank")
        return kv_lora_rank + kv_lora_rank // _QUANT_BLOCK * 4 + qk_rope_head_dim * _ROPE_BYTES
    if layout == "raw_fp8":
        return kv_lora_rank + qk_rope_head_dim
    return (kv_lora_rank + qk_rope_head_dim) * 2


def dsa_indexer_bytes_per_layer(*, index_head_dim: int, index_kpool: int = 1) -> int:
    """FP8 indexer key + fp32 scale per token per top-k layer (uint8 storage, any KV dtype on GPU).

    Formula: ``ceil((index_head_dim + index_head_dim // 128 * 4) / index_kpool)``.
    Example: 128 -> 128 + 4 = 132 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_dsa_indexer_cell_size``, v0.5.23.
    """
    if index_kpool <= 0:
        raise InputError(f"index_kpool must be positive, got {index_kpool}", field="index_kpool")
    raw = index_head_dim + index_head_dim // _QUANT_BLOCK * 4
    return -(-raw // index_kpool)


def dsa_bytes_per_token(
    *,
    kv_lora_rank: int,
    qk_rope_head_dim: int,
    index_head_dim: int,
    num_layers: int,
    layout: str,
    indexer_layers: int | None = None,
    index_kpool: int = 1,
    dcp_size: int = 1,
) -> int:
    """Bytes one token costs in a DSA pool on every attention rank (latent replicated over TP).

    Formula: ``row(layout) * L + indexer_bytes * indexer_layers * dcp_size``, where
    ``indexer_layers`` defaults to ``L`` (every layer computes top-k) and the indexer term is
    multiplied by ``dcp_size`` because the index-K buffer is replicated under DCP.

    Worked examples (DeepSeek-V3.2, 61 layers, 512 + 64, index_head_dim 128):
    SM90 ``fp8_e4m3``: 61 x (656 + 132) = 48,068; SM100 default: 61 x (576 + 132) = 43,188;
    SM90 default (bf16): 61 x (1,152 + 132) = 78,324.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size`` (DSA branch), v0.5.23.
    """
    if not isinstance(num_layers, int) or num_layers < 0:
        raise InputError(f"num_layers must be a non-negative integer, got {num_layers!r}", field="num_layers")
    n_idx = num_layers if indexer_layers is None else indexer_layers
    if n_idx < 0 or n_idx > num_layers:
        raise InputError(f"indexer_layers {n_idx} outside 0..{num_layers}", field="indexer_layers")
    row = dsa_row_bytes(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim, layout=layout)
    idx = dsa_indexer_bytes_per_layer(index_head_dim=index_head_dim, index_kpool=index_kpool)
    return row * num_layers + idx * n_idx * dcp_size


def dsa_draft_bytes_per_token(
    *,
    kv_lora_rank: int,
    qk_rope_head_dim: int,
    index_head_dim: int,
    draft_layers: int,
    layout: str,
    index_kpool: int = 1,
    dcp_size: int = 1,
) -> int:
    """What an EAGLE/MTP draft adds to a DSA target's cell.

    SGLang prices the draft latent as ``int(target_latent * draft / L)`` = ``row * draft`` and the
    draft indexer on *all* draft layers, both times ``dcp_size``:
    ``(row + indexer) * draft_layers * dcp_size``. Example: V3.2 MTP (1 layer), SM100: 708 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (EAGLE/STANDALONE, DSA branch), v0.5.23.
    """
    row = dsa_row_bytes(kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim, layout=layout)
    idx = dsa_indexer_bytes_per_layer(index_head_dim=index_head_dim, index_kpool=index_kpool)
    return (row + idx) * draft_layers * dcp_size


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def _row_layout(ctx: PoolContext) -> str:
    model_type = str(ctx.model.get("model_type", "")).lower()
    return dsa_row_layout(
        kv_dtype=ctx.kv_dtype,
        sm_major=ctx.sm_major,
        vendor=ctx.vendor,
        model="glm" if "glm" in model_type else "deepseek",
    )


def _layout(ctx: PoolContext) -> str:
    if not ctx.rules.dsa_indexer_budget:
        return f"dsa (budgeted as the {ctx.kv_dtype.canonical} MLA latent only: SGLang before 0.5.4)"
    return f"dsa ({_row_layout(ctx)} row + fp8 indexer key)"


def dsa_budget_bytes_before_0_5_4(
    *, kv_lora_rank: int, qk_rope_head_dim: int, num_layers: int, element_bytes: int
) -> int:
    """The cell SGLang 0.5.3 budgets a DSA (NSA) pool with: the MLA latent only, at the KV dtype's element size.

    Formula: ``(kv_lora_rank + qk_rope_head_dim) x L x element_bytes`` -- no indexer key and no FP8 scale bytes (the
    pool then allocates more than it budgeted; sgl-project/sglang PR #11309, first in 0.5.4, adds them).
    Example: DeepSeek-V3.2 fp8: 576 x 61 = 35,136 B (the pool stores 61 x (656 + 132) = 48,068 B per token).

    Source: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ``ModelRunner.profile_max_num_token``
    (``use_mla_backend`` branch), wheel 0.5.3; the indexer term appears there in wheel 0.5.4.
    """
    return (kv_lora_rank + qk_rope_head_dim) * num_layers * element_bytes


#: the first release whose DSA pool gives shared-top-k layers a 0-row index-K buffer (and budgets only the indexer
#: layers) and prices an EAGLE/MTP draft with :func:`dsa_draft_bytes_per_token` (wheel 0.5.18: ``skip_topk_layers``
#: in mem_cache/memory_pool.py, ``_should_elide_dsa_index_k`` in mem_cache/kv_cache_configurator.py; absent in 0.5.17)
COMPACT_INDEXER_SINCE = "0.5.18"


def _compact_indexer(ctx: PoolContext) -> bool:
    from kvplan.version import Version

    return ctx.rules.dsa_indexer_budget and Version.of(ctx.rules.release) >= Version.of(COMPACT_INDEXER_SINCE)


def _cell(ctx: PoolContext, layers: int) -> int:
    """The cell of a stage of ``layers`` layers in the releases that charge the indexer on every layer (< 0.5.18)."""
    m = ctx.model
    if not ctx.rules.dsa_indexer_budget:
        from kvplan.geometry.kvdtype import kv_element_bytes

        return dsa_budget_bytes_before_0_5_4(
            kv_lora_rank=m.require_int("kv_lora_rank"),
            qk_rope_head_dim=m.require_int("qk_rope_head_dim"),
            num_layers=layers,
            element_bytes=kv_element_bytes(ctx.kv_dtype),
        )
    row = _row_layout(ctx)
    return dsa_bytes_per_token(
        kv_lora_rank=m.require_int("kv_lora_rank"),
        qk_rope_head_dim=m.require_int("qk_rope_head_dim"),
        index_head_dim=m.require_int("index_head_dim"),
        num_layers=layers,
        layout=row,
        dcp_size=ctx.dcp,
    )


def dsa_stage_indexer_layers(*, config: Mapping[str, Any], start_layer: int, end_layer: int) -> int:
    """Indexer layers of the PP stage ``[start_layer, end_layer)`` on a target worker (SGLang >= 0.5.18, no HiSparse,
    no unified-cache external linker): the stage's layers that compute their own top-k.

    Example: GLM-5.2 (``indexer_types``: layers 0, 1, 2, 6, 10, ... 74 "full") -> 21 at PP1; PP2 (39 + 39 layers)
    -> 12 (0, 1, 2, 6, ... 38) and 9 (42, ... 74). DeepSeek-V3.2 -> every layer.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``_compute_dsa_indexer_cell_size`` / ``_get_dsa_cache_layer_ids``, v0.5.23.
    """
    return dsa_indexer_layer_count(start_layer=start_layer, end_layer=end_layer, **dsa_skip_fields(config))


def dsa_stage_bytes_per_token(ctx: PoolContext, *, start_layer: int, end_layer: int, draft_layers: int) -> int:
    """SGLang >= 0.5.18: one PP stage's cell, target plus draft.

    Formula: ``row * L_s + 132 * I_s * dcp + (row + 132) * D * dcp`` with ``L_s`` the stage's layers, ``I_s`` its
    indexer layers (:func:`dsa_stage_indexer_layers`) and ``D`` the draft layers (the draft pool keeps an indexer
    key on every layer; the latent part is ``int(target_latent * D / L_s)`` = ``row * D``).

    Worked example (GLM-5.2 on SM100, fp8 -> trtllm -> raw 576 B, 78 layers, 21 indexer layers):
    ``78 x 576 + 21 x 132 = 44,928 + 2,772 = 47,700`` B; with its MTP layer ``+ 708 = 48,408`` B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (EAGLE/STANDALONE, DSA branch) / ``_compute_cell_size`` /
    ``_compute_dsa_indexer_cell_size``, v0.5.23.
    """
    m = ctx.model
    geo: dict[str, Any] = dict(
        kv_lora_rank=m.require_int("kv_lora_rank"),
        qk_rope_head_dim=m.require_int("qk_rope_head_dim"),
        index_head_dim=m.require_int("index_head_dim"),
        layout=_row_layout(ctx),
        dcp_size=ctx.dcp,
    )
    idx = dsa_stage_indexer_layers(config=m.config, start_layer=start_layer, end_layer=end_layer)
    cell = dsa_bytes_per_token(num_layers=end_layer - start_layer, indexer_layers=idx, **geo)
    return cell + (dsa_draft_bytes_per_token(draft_layers=draft_layers, **geo) if draft_layers else 0)


def _plan_compact(ctx: PoolContext) -> PoolPlan:
    """0.5.18+: the stage cells priced here (the default flow only takes a layer count per stage and prices a draft
    by the generic rule).  The default flow's tokens and cell depend only on the largest stage cell, so each stage's
    layer count is mapped to the largest cell among the stages of that count and the draft is left out of its
    flags."""
    R, m, f = ctx.rules, ctx.model, ctx.flags
    stages = R.pp_layer_ranges(num_layers=m.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
    n_draft = draft_layers(m, f.speculative_algorithm)
    by_count: dict[int, int] = {}
    for s, e in stages:
        c = dsa_stage_bytes_per_token(ctx, start_layer=s, end_layer=e, draft_layers=n_draft)
        by_count[e - s] = max(by_count.get(e - s, 0), c)
    plain = replace(ctx, flags=replace(f, spec=f.spec.replace(speculative_algorithm="")))
    out = plan_default(plain, cell=lambda _c, n: by_count[n], layout=_layout, pool_name="DSA latent + indexer keys")
    idx = dsa_stage_indexer_layers(config=m.config, start_layer=0, end_layer=m.num_layers)
    if idx < m.num_layers:
        out.notes.append(
            f"DSA indexer keys on {idx} of {m.num_layers} layers: the other layers reuse the previous "
            f"layer's top-k and get no index-K rows (SGLang >= {COMPACT_INDEXER_SINCE})"
        )
    if n_draft:
        out.notes.append(
            f"speculative {f.speculative_algorithm}: draft KV pool of {n_draft} layer(s) shares the "
            f"token count (latent + indexer key on every draft layer)"
        )
    return out


def plan(ctx: PoolContext) -> PoolPlan:
    """The DSA pool: the row layout SGLang picks for the backend / GPU, plus the indexer key on the layers that
    compute their own top-k (from 0.5.18; on every layer before), per PP stage, through the default flow."""
    if _compact_indexer(ctx):
        return _plan_compact(ctx)
    return plan_default(ctx, cell=_cell, layout=_layout, pool_name="DSA latent + indexer keys")


_SHOW_LAYOUTS = (
    ("bf16", "bf16", "SM90 default (auto)"),
    ("scaled_fp8", "fp8_e4m3", "SM90 fp8 (flashmla_kv)"),
    ("raw_fp8", "fp8_e4m3", "SM100/SM120 default (trtllm)"),
)


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: bytes per token of the three row layouts (the same on every TP rank), the indexer key on the
    layers that compute their own top-k (0.5.23)."""
    c = m.config
    idx = dsa_stage_indexer_layers(config=c, start_layer=0, end_layer=m.num_layers)
    out = Breakdown(
        info=dict(
            kv_lora_rank=c.get("kv_lora_rank"),
            qk_rope_head_dim=c.get("qk_rope_head_dim"),
            index_head_dim=c.get("index_head_dim"),
            indexer_layers=idx,
        )
    )
    for layout, dt, when in _SHOW_LAYOUTS:
        b = dsa_bytes_per_token(
            kv_lora_rank=c["kv_lora_rank"],
            qk_rope_head_dim=c["qk_rope_head_dim"],
            index_head_dim=c["index_head_dim"],
            num_layers=m.num_layers,
            layout=layout,
            indexer_layers=idx,
        )
        out.rows.append({"kv_cache_dtype": dt, "tp": "any", "layout": layout, "bytes_per_token": b, "note": when})
    return out
