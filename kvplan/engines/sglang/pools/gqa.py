"""SGLang's MHA / GQA / MQA pool: the KV cell per attention-TP rank, and the planner (SGLang 0.5.23).

The geometry (KV heads, K/V widths, the head split) is :mod:`kvplan.geometry.gqa`; this module adds what SGLang
stores beside the values (MXFP8 scales, the FP4 recipes' scale layouts and dequant workspace) and the splits it
refuses.

Sources (sgl-project/sglang, v0.5.23):

* ``python/sglang/srt/configs/model_config.py`` ``ModelConfig.get_num_kv_heads``;
* ``python/sglang/srt/model_executor/pool_configurator.py``
  ``DefaultPoolConfigurator._compute_cell_size`` (MHA branch, MXFP8 scale term);
* ``python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py``
  ``NVFP4KVCacheMethod.compute_cell_size``, ``FP4MXBlock16KVCacheMethod.compute_cell_size``
  and ``KV_CACHE_ATTENTION_ACCESS_REGISTRY``;
* ``python/sglang/srt/arg_groups/kv_cache_hook.py`` ``handle_nvfp4_prefill_kv_dequant_dtype``;
* head-split checks: ``python/sglang/srt/models/llama.py`` / ``qwen2.py`` / ``qwen3.py``
  attention ``__init__`` asserts; ``arg_groups/parallel_hook.py`` (attn_tp % dcp).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.engines.backends import AttentionBackend
from kvplan.engines.sglang.pools.base import SHOW_TPS, Breakdown, PoolContext, PoolPlan
from kvplan.engines.sglang.pools.default import plan_default
from kvplan.errors import InputError
from kvplan.geometry.gqa import kv_bytes_per_token, kv_heads_per_rank, kv_values_per_token_layer
from kvplan.geometry.kvdtype import kv_element_bytes
from kvplan.hfconfig.dtypes import DType

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec

_FP4 = ("nvfp4", "fp4_mx_block16")
_FP4_SCALE_BLOCK = 16
_MXFP8_SCALE_BLOCK = 32


def _pos(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"{name} must be a positive integer, got {value!r}", field=name)


def gqa_kv_heads_per_rank(
    *,
    num_kv_heads: int,
    attn_tp_size: int,
    dcp_size: int = 1,
    num_attention_heads: int | None = None,
) -> int:
    """KV heads each attention-TP rank stores.

    Formula: ``max(1, num_kv_heads // (attn_tp_size // dcp_size))``. DCP ranks hold the same
    heads (they split tokens instead), so heads are sharded over ``attn_tp // dcp`` groups.
    When there are fewer KV heads than groups every rank keeps one (replicated) head.
    ``attn_tp_size = tp_size // attn_dp_size // attn_cp_size``.

    The engine refuses (model-side asserts) a split where ``num_kv_heads >= attn_tp`` and
    ``num_kv_heads % attn_tp != 0``, or ``num_kv_heads < attn_tp`` and
    ``attn_tp % num_kv_heads != 0``, or (when given) ``num_attention_heads % attn_tp != 0``;
    and ``attn_tp % dcp != 0`` (parallel_hook). These raise :class:`InputError`.

    Example: Qwen3-235B-A22B (4 KV heads) at TP8 -> ``max(1, 4 // 8) = 1``;
    QwQ-32B (8 KV heads) at TP4 -> 2.

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py
    ``ModelConfig.get_num_kv_heads``; python/sglang/srt/models/qwen3.py attention asserts, v0.5.23.
    """
    _pos("num_kv_heads", num_kv_heads)
    _pos("attn_tp_size", attn_tp_size)
    _pos("dcp_size", dcp_size)
    if num_attention_heads is not None:
        _pos("num_attention_heads", num_attention_heads)
        if num_attention_heads % attn_tp_size:
            raise InputError(
                f"{num_attention_heads} attention heads cannot be split over attention-TP {attn_tp_size}",
                field="--tp-size",
                hint="SGLang asserts num_attention_heads % attn_tp_size == 0; pick a TP (or --dp with "
                "--enable-dp-attention) that divides the head count",
            )
    if num_kv_heads >= attn_tp_size:
        if num_kv_heads % attn_tp_size:
            raise InputError(
                f"{num_kv_heads} KV heads cannot be split over attention-TP {attn_tp_size}",
                field="--tp-size",
                hint="SGLang asserts num_kv_heads % attn_tp_size == 0 when kv heads >= TP",
            )
    elif attn_tp_size % num_kv_heads:
        raise InputError(
            f"attention-TP {attn_tp_size} is not a multiple of the {num_kv_heads} KV heads",
            field="--tp-size",
            hint="SGLang asserts attn_tp_size % num_kv_heads == 0 when TP > kv heads (replication)",
        )
    if attn_tp_size % dcp_size:
        raise InputError(
            f"attention-TP {attn_tp_size} is not divisible by --dcp-size {dcp_size}",
            field="--dcp-size",
            hint="SGLang asserts attn_tp_size % dcp_size == 0",
        )
    return kv_heads_per_rank(num_kv_heads=num_kv_heads, shards=attn_tp_size // dcp_size)


def nvfp4_kv_access(
    *,
    sm_major: int | None,
    prefill_backend: AttentionBackend | None = None,
    decode_backend: AttentionBackend | None = None,
) -> tuple[int, bool]:
    """``(scale_layouts, dequant_workspace)`` of an NVFP4 KV pool.

    SGLang's NVFP4 recipe reads KV three ways: FlashInfer prefill dequantizes into an FP8
    workspace; ``trtllm_mha`` prefill/decode read native FP4. Defaults (kv_cache_hook):
    prefill ``trtllm_mha`` on SM100 else ``flashinfer``; decode always ``trtllm_mha``.
    A linear scale buffer is needed with a dequant workspace or native access off SM100;
    the TRT-LLM "native" scale layout only on SM100. So:

    * SM100 defaults -> ``(1, False)`` (native layout only);
    * SM120 defaults -> ``(1, True)`` (linear layout + FP8 dequant workspace);
    * SM100 with FlashInfer prefill -> ``(2, True)``.

    Source: sgl-project/sglang python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py
    ``NVFP4KVCacheMethod.needs_linear_scale_buffer`` / ``needs_native_fp4_scales``;
    python/sglang/srt/arg_groups/kv_cache_hook.py ``handle_nvfp4_prefill_kv_dequant_dtype``, v0.5.23.
    """
    sm100 = sm_major == 10
    prefill = prefill_backend or (AttentionBackend.TRTLLM_MHA if sm100 else AttentionBackend.FLASHINFER)
    decode = decode_backend or AttentionBackend.TRTLLM_MHA
    dequant = prefill == AttentionBackend.FLASHINFER
    native = AttentionBackend.TRTLLM_MHA in (prefill, decode)
    linear = dequant or (native and not sm100)
    native_layout = native and sm100
    return int(linear) + int(native_layout), dequant


def gqa_fp4_dequant_bytes_per_token(*, kv_heads_per_rank: int, head_dim: int, dequant_workspace: bool) -> int:
    """Per-token bytes of the NVFP4 FP8 dequant workspace (one copy for all layers).

    Formula: ``n_kv * head_dim * 2 (K,V) * 1 B`` when the workspace exists, else 0. The buffers
    are shaped ``(pool_tokens, n_kv, head_dim)``, so they scale with tokens but not with layers;
    SGLang adds them to the per-token cell. Example: 1 head x 128 -> 256 B/token.

    Source: sgl-project/sglang python/sglang/srt/layers/quantization/fp4_kv_cache_quant_method.py
    ``NVFP4KVCacheMethod.compute_cell_size`` (``dq_size``), v0.5.23.
    """
    return kv_heads_per_rank * head_dim * 2 if dequant_workspace else 0


def gqa_bytes_per_token(
    *,
    num_kv_heads: int,
    head_dim: int,
    v_head_dim: int,
    num_layers: int,
    attn_tp_size: int,
    kv_dtype: DType,
    dcp_size: int = 1,
    sm_major: int | None = None,
    prefill_backend: AttentionBackend | None = None,
    decode_backend: AttentionBackend | None = None,
) -> int:
    """Bytes of KV cache one token costs on one attention-TP rank (this PP stage's layers).

    ``n = gqa_kv_heads_per_rank(...)``, ``e`` = element bytes (bf16 2, fp8 1):

    * bf16/fp16/fp8: ``n * (head_dim + v_head_dim) * L * e``;
    * mxfp8: the above with e=1, plus ``(n * (head_dim + v_head_dim) * L) // 32`` scale bytes;
    * nvfp4: ``n*(hd//2)*L*2 + layouts * n*(hd//16)*L*2 + dq`` (see :func:`nvfp4_kv_access`,
      :func:`gqa_fp4_dequant_bytes_per_token`); fp4_mx_block16: ``n*(hd//2)*L*2 + (n*hd//16)*L*2``.
      The FP4 recipes size K and V with ``head_dim`` only (they assume ``v_head_dim == head_dim``).

    Worked examples (bf16): Llama-3.1-8B 8x128x2x32x2 = 131,072 B; Qwen2.5-7B 4x128x2x28x2 = 57,344 B;
    QwQ-32B TP4 2x128x2x64x2 = 65,536 B; Qwen3-235B-A22B TP8 1x128x2x94x2 = 48,128 B.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator._compute_cell_size``, v0.5.23.
    """
    _pos("head_dim", head_dim)
    _pos("v_head_dim", v_head_dim)
    if not isinstance(num_layers, int) or num_layers < 0:
        raise InputError(f"num_layers must be a non-negative integer, got {num_layers!r}", field="num_layers")
    n = gqa_kv_heads_per_rank(num_kv_heads=num_kv_heads, attn_tp_size=attn_tp_size, dcp_size=dcp_size)
    dt = kd = kv_dtype  # resolved by the planner; kv_element_bytes refuses a width kvplan does not price
    if kd is DType.NVFP4:
        layouts, dequant = nvfp4_kv_access(
            sm_major=sm_major, prefill_backend=prefill_backend, decode_backend=decode_backend
        )
        fp4 = n * (head_dim // 2) * num_layers * 2
        scales = layouts * n * (head_dim // _FP4_SCALE_BLOCK) * num_layers * 2
        return (
            fp4
            + scales
            + gqa_fp4_dequant_bytes_per_token(kv_heads_per_rank=n, head_dim=head_dim, dequant_workspace=dequant)
        )
    if kd is DType.FP4_MX_BLOCK16:
        fp4 = n * (head_dim // 2) * num_layers * 2
        scales = (n * head_dim // _FP4_SCALE_BLOCK) * num_layers * 2
        return fp4 + scales
    cell = kv_bytes_per_token(
        kv_heads=n, head_dim=head_dim, v_head_dim=v_head_dim, num_layers=num_layers, dtype_bytes=kv_element_bytes(dt)
    )
    if kd is DType.MXFP8:
        values = kv_values_per_token_layer(kv_heads=n, head_dim=head_dim, v_head_dim=v_head_dim) * num_layers
        cell += values // _MXFP8_SCALE_BLOCK
    return cell


# --------------------------------------------------------------------------------------------------
# Planner
# --------------------------------------------------------------------------------------------------


def _cell(ctx: PoolContext, layers: int) -> int:
    """The release's cell: up to SGLang 0.5.6 V is priced at ``head_dim`` (``heads x head_dim x L x 2 x e``,
    ``ModelRunner.profile_max_num_token``), from 0.5.7 at ``v_head_dim`` (``RuleSet.pool_rules.gqa_cell_v_head_dim``).
    Example: 8 KV heads, head_dim 192, v_head_dim 128, 32 layers, bf16: 8 x 384 x 32 x 2 = 196,608 B under 0.5.6,
    8 x 320 x 32 x 2 = 163,840 B under 0.5.7."""
    m = ctx.model
    v_head_dim = m.v_head_dim if ctx.rules.pool_rules.gqa_cell_v_head_dim else m.head_dim
    # the GPU's SM decides the fp4 pools' scale layout (SM100 native, else linear scales + an fp8 workspace)
    return gqa_bytes_per_token(
        num_kv_heads=m.num_kv_heads,
        head_dim=m.head_dim,
        v_head_dim=v_head_dim,
        num_layers=layers,
        attn_tp_size=ctx.attn_tp,
        kv_dtype=ctx.kv_dtype,
        dcp_size=ctx.dcp,
        sm_major=ctx.sm_major,
    )


def plan(ctx: PoolContext) -> PoolPlan:
    """The GQA pool: :func:`gqa_bytes_per_token` per PP stage through the default flow
    (:func:`kvplan.engines.sglang.pools.default.plan_default`)."""
    return plan_default(ctx, cell=_cell, layout=_layout, pool_name="KV (K + V)")


def _layout(ctx: PoolContext) -> str:
    return f"gqa ({ctx.model.num_kv_heads} KV heads, head_dim {ctx.model.head_dim})"


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: bytes per token per GPU for bf16 / fp8 at TP 1..16 (the splits SGLang refuses are left out)."""
    out = Breakdown(info=dict(kv_heads=m.num_kv_heads, head_dim=m.head_dim, v_head_dim=m.v_head_dim))
    for dt in (DType.BF16, DType.FP8_E4M3):
        for tp in SHOW_TPS:
            try:
                heads = gqa_kv_heads_per_rank(num_kv_heads=m.num_kv_heads, attn_tp_size=tp)
                b = gqa_bytes_per_token(
                    num_kv_heads=m.num_kv_heads,
                    head_dim=m.head_dim,
                    v_head_dim=m.v_head_dim,
                    num_layers=m.num_layers,
                    attn_tp_size=tp,
                    kv_dtype=dt,
                )
            except InputError:
                continue
            out.rows.append(
                {
                    "kv_cache_dtype": dt.canonical,
                    "tp": tp,
                    "kv_heads_per_gpu": heads,
                    "bytes_per_token": b,
                    "note": "replicated (tp > kv heads)" if tp > m.num_kv_heads else "split by tp",
                }
            )
    return out
