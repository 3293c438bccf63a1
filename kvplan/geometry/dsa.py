"""DSA / NSA sparse-MLA KV cells (DeepSeek-V3.2, GLM-5, GLM-5.2 ...) as SGLang 0.5.23 sizes them.

Per token and layer a DSA pool stores the MLA latent row plus, on layers that compute their
own top-k, an FP8 indexer key. The latent row has three layouts:

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

from collections.abc import Sequence

from kvplan.errors import InputError
from kvplan.geometry.kvdtype import resolve_kv_cache_dtype

DSA_LAYOUTS: tuple[str, ...] = ("scaled_fp8", "raw_fp8", "bf16")
_QUANT_BLOCK = 128
_ROPE_BYTES = 2  # rope is stored in bf16 in the scaled layout

_RAW_HIP_BACKENDS = ("tilelang", "triton", "aiter")


from kvplan.geometry.kvdtype import platform_of as _plat  # noqa: E402  (one vendor -> platform rule)


def _is_glm(model: str) -> bool:
    return (model or "").strip().lower() in ("glm", "glm-dsa", "glm5", "glmmoedsaforcausallm")


def _resolved_dtype(kv_dtype: str, sm_major: int | None, vendor: str, learnable_sink: bool) -> str:
    return resolve_kv_cache_dtype(
        requested=kv_dtype,
        model_dtype="bfloat16",
        kv_cache_quant_algo=None,
        family="dsa",
        sm_major=sm_major,
        vendor=vendor,
        learnable_sink=learnable_sink,
    )


def dsa_default_backends(
    *,
    kv_dtype: str,
    sm_major: int | None,
    vendor: str,
    model: str = "deepseek",
    prefill_backend: str | None = None,
    decode_backend: str | None = None,
    learnable_sink: bool = False,
    dcp_size: int = 1,
) -> tuple[str, str]:
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
        return prefill_backend or "intel_xpu", decode_backend or "intel_xpu"
    major = sm_major if sm_major is not None else (9 if plat == "hip" else 0)
    if dcp_size > 1:
        prefill_backend = prefill_backend or "trtllm"
        decode_backend = decode_backend or "trtllm"
    if learnable_sink:
        for side, val in (("--dsa-prefill-backend", prefill_backend), ("--dsa-decode-backend", decode_backend)):
            if val is not None and val != "flashmla_sparse":
                raise InputError(
                    f"models with learnable attention sinks need flashmla_sparse, got {val!r}", field=side
                )
        return "flashmla_sparse", "flashmla_sparse"
    if _is_glm(model) and major == 12 and dt == "fp8_e4m3" and plat != "hip":
        return prefill_backend or "flashinfer_sparse_mla", decode_backend or "flashinfer_sparse_mla"
    if plat == "hip":
        p, d = prefill_backend or "triton", decode_backend or "triton"
    elif dt == "fp8_e4m3":
        default = "trtllm" if major >= 10 else "flashmla_kv"
        p, d = prefill_backend or default, decode_backend or default
    else:
        p = prefill_backend or "flashmla_sparse"
        d = decode_backend or ("trtllm" if major >= 10 else "fa3")
    if plat != "hip" and "triton" in (p, d):
        raise InputError(
            "the triton DSA backend is ROCm-only",
            field="--dsa-prefill-backend" if p == "triton" else "--dsa-decode-backend",
            hint="use flashmla_kv on Hopper or trtllm on Blackwell",
        )
    if plat != "hip" and dt == "fp8_e4m3" and "tilelang" in (p, d):
        if p != "tilelang" or d != "tilelang":
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
    kv_dtype: str,
    sm_major: int | None,
    vendor: str,
    model: str = "deepseek",
    prefill_backend: str | None = None,
    decode_backend: str | None = None,
    learnable_sink: bool = False,
    dcp_size: int = 1,
    disaggregation_mode: str = "null",
) -> str:
    """Which latent-row layout the DSA pool uses: ``"scaled_fp8"``, ``"raw_fp8"`` or ``"bf16"``.

    ``kv_dtype`` may be ``auto`` (resolved as in :func:`resolve_kv_cache_dtype`). A bf16 pool is
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
    if dt == "bf16":
        return "bf16"
    if disaggregation_mode == "decode":
        trtllm = d == "trtllm"
    elif disaggregation_mode == "prefill":
        trtllm = p == "trtllm"
    else:
        trtllm = "trtllm" in (p, d)
    if trtllm:
        return "raw_fp8"
    if _plat(vendor) == "hip" and (p in _RAW_HIP_BACKENDS or d in _RAW_HIP_BACKENDS):
        return "raw_fp8"
    if p == "tilelang" and d == "tilelang":
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
            raise InputError(
                f"kv_lora_rank {kv_lora_rank} is not a multiple of {_QUANT_BLOCK}", field="kv_lora_rank"
            )
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


def dsa_layer_skips_topk(
    *,
    layer_id: int,
    indexer_types: Sequence[str] | None = None,
    cli_factor: int | None = 1,
    index_topk_pattern: str | Sequence[str] | None = None,
    index_topk_freq: int | None = 1,
    index_skip_topk_offset: int | None = None,
) -> bool:
    """Whether a DSA layer reuses the previous layer's top-k (and so gets no indexer rows).

    Precedence: ``indexer_types[l] == "shared"``; else LongCat ``cli_factor > 1``:
    ``l % cli_factor != 0``; else ``index_topk_pattern[l] == "S"``; else with
    ``index_skip_topk_offset`` o: ``max(l - o + 1, 0) % freq != 0``; else
    ``max(l - 1, 0) % freq != 0``. DeepSeek-V3.2 / GLM-5 (freq 1): no layer skips.

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``dsa_layer_skips_topk``, v0.5.23.
    """
    if indexer_types is not None:
        return 0 <= layer_id < len(indexer_types) and indexer_types[layer_id] == "shared"
    cf = 1 if cli_factor is None else cli_factor
    if cf > 1:
        return layer_id % cf != 0
    if index_topk_pattern is not None:
        return layer_id < len(index_topk_pattern) and index_topk_pattern[layer_id] == "S"
    freq = 1 if index_topk_freq is None else index_topk_freq
    if index_skip_topk_offset is not None:
        return max(layer_id - index_skip_topk_offset + 1, 0) % freq != 0
    return max(layer_id - 1, 0) % freq != 0


def dsa_indexer_layer_count(
    *,
    start_layer: int,
    end_layer: int,
    indexer_types: Sequence[str] | None = None,
    cli_factor: int | None = 1,
    index_topk_pattern: str | Sequence[str] | None = None,
    index_topk_freq: int | None = 1,
    index_skip_topk_offset: int | None = None,
) -> int:
    """Layers in ``[start_layer, end_layer)`` that get indexer rows on a target worker.

    SGLang gives "shared top-k" layers a 0-row index-K buffer unless HiSparse, a draft worker,
    the unified-cache external linker, or Ascend PD/HiCache is in use (then every layer counts).
    Example: GLM-5.2 (``indexer_types`` with 21 "full" of 78) -> 21; DeepSeek-V3.2 -> 61.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``_compute_dsa_indexer_cell_size``; python/sglang/srt/mem_cache/kv_cache_configurator.py
    ``_should_elide_dsa_index_k``, v0.5.23.
    """
    return sum(
        not dsa_layer_skips_topk(
            layer_id=layer,
            indexer_types=indexer_types,
            cli_factor=cli_factor,
            index_topk_pattern=index_topk_pattern,
            index_topk_freq=index_topk_freq,
            index_skip_topk_offset=index_skip_topk_offset,
        )
        for layer in range(start_layer, end_layer)
    )


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


__all__ = [
    "DSA_LAYOUTS",
    "dsa_bytes_per_token",
    "dsa_default_backends",
    "dsa_draft_bytes_per_token",
    "dsa_indexer_bytes_per_layer",
    "dsa_indexer_layer_count",
    "dsa_layer_skips_topk",
    "dsa_row_bytes",
    "dsa_row_layout",
]
