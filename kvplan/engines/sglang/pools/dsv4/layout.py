"""DeepSeek-V4 row layouts of SGLang 0.5.23: the engine's constants, page bytes per layout, compressed rows,
indexer rows, compress-state rings and the layout selection.
"""

from __future__ import annotations

from kvplan.engines.backends import Dsv4AttnBackend
from kvplan.engines.sglang.pools.swa_cap import (
    ceil_align,
)
from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType

#: ``SGLANG_DSV4_COMPRESSED_KV_LAYOUT``'s values (layout names, not KV dtypes)
_COMPRESSED_KV_LAYOUTS: tuple[str, ...] = ("auto", "fp8", "fp4")

# ----------------------------------------------------------------------------------------------------------
# Constants read in the engine (SGLang 0.5.23)
# ----------------------------------------------------------------------------------------------------------

#: model_overrides/deepseek_v4.py: page_size 256 on CUDA (kv_cache_configurator._build_dsv4_kv_pool asserts it).
DSV4_PAGE_SIZE = 256
#: deepseek_v4_hook.apply_deepseek_v4_defaults: max_running_requests := 256 when the user leaves it unset.
DSV4_DEFAULT_MAX_RUNNING_REQUESTS = 256
#: pool_configurator.DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO (also the V4 model override value).
DSV4_DEFAULT_SWA_RATIO = 0.1
#: dsv41_index_page_size(): 64, or 128 when DeepGEMM's paged sparse MQA logits exist (SM100 only).
DSV41_INDEX_PAGE_SIZE = 64


# KVLayout (kernels/ops/attention/dsv4/kv_layout.py): name -> (bytes per token, page stride alignment).
_LAYOUT_BYTES: dict[str, tuple[int, int]] = {
    "v4": (576 + 8, 576),  # 448 fp8 nope + 64 bf16 rope (=576) + 7 ue8m0 scales + 1 pad
    "v41": (512 + 16, 512),  # 512 fp8 + 16 ue8m0 scales, block-split page
    "v41_new": (512 + 16, 528),  # same bytes interleaved per token, no padding
    "v41_fp4": (256 + 32, 256),  # 512 e2m1 + 32 e4m3 scales
    "v41_fp4_new": (256 + 32, 288),
    "uniform_fp8": (512, 512),  # trtllm backend: priced at attn_head_dim, no padding
}
#: Main-cache layouts dsv4_select_layout may return.
MAIN_LAYOUTS = ("v4", "v41", "v41_new", "uniform_fp8")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def layout_page_bytes(*, layout: str, page_tokens: int) -> int:
    """Bytes of one page of ``page_tokens`` rows: ``ceil(page_tokens * bpt / align) * align``.

    Source: ``KVLayout.page_bytes`` (sglang/kernels/ops/attention/dsv4/kv_layout.py, v0.5.23).
    Example: V4 at 256 rows -> ceil(149,504 / 576) * 576 = 149,760 B (585.0 B/row); V4 at 2 rows (a c128
    page) -> ceil(1,168 / 576) * 576 = 1,728 B (864.0 B/row).
    """
    if layout not in _LAYOUT_BYTES:
        raise InputError(f"unknown DSV4 KV layout {layout!r}", field="layout", hint=f"one of {sorted(_LAYOUT_BYTES)}")
    bpt, align = _LAYOUT_BYTES[layout]
    return int(ceil_align(page_tokens * bpt, align))


def compressed_layout(*, main_layout: str, ratio: int, option: str = "auto") -> str:
    """Layout of ratio ``ratio``'s cache next to a ``main_layout`` SWA cache.

    Source: ``resolve_compressed_kv_layout`` (deepseek_v4_memory_pool.py, v0.5.23); ``option`` is
    ``SGLANG_DSV4_COMPRESSED_KV_LAYOUT`` (auto | fp8 | fp4). V4 pairs only with V4; under V4.1 the
    ratio-1/2 latents go fp4 by default, ratios 4/128 stay fp8.
    """
    option = option.lower()
    if option not in _COMPRESSED_KV_LAYOUTS:
        raise InputError(f"unknown compressed KV layout {option!r}", field="compressed_kv_layout")
    if main_layout in ("v4", "uniform_fp8"):
        if option == "fp4":
            raise InputError("the V4 main cache only pairs with V4 compressed caches", field="compressed_kv_layout")
        return main_layout
    if main_layout not in ("v41", "v41_new"):
        raise InputError(f"{main_layout!r} is not a main-cache layout", field="layout")
    use_fp4 = option == "fp4" or (option == "auto" and ratio in (1, 2))
    base = "v41_fp4" if use_fp4 else "v41"
    return base + ("_new" if main_layout == "v41_new" else "")


def kv_bytes_per_row(*, layout: str, ratio: int, page_size: int = DSV4_PAGE_SIZE, option: str = "auto") -> float:
    """Budgeted bytes of one row of ratio ``ratio``'s KV cache (page padding spread over the page).

    Source: ``DSV4PoolConfigurator._get_paged_kv_bytes_per_token`` (pool_configurator.py, v0.5.23): the
    trtllm pool (uniform_fp8) is priced at ``attn_head_dim`` = 512 with no padding; otherwise
    ``page_bytes(page_size // ratio) / (page_size // ratio)``.
    Examples (page 256): V4 r=0/1/2/4 -> 585.0; V4 r=128 -> 864.0; V41 r=0 -> 528.0; V41 fp4 r=2 -> 288.0.
    """
    if layout == "uniform_fp8":
        return 512.0
    rows = page_size // ratio if ratio else page_size
    lay = compressed_layout(main_layout=layout, ratio=ratio, option=option) if ratio else layout
    return layout_page_bytes(layout=lay, page_tokens=rows) / rows


def indexer_bytes_per_token(*, index_head_dim: int, fp4: bool) -> int:
    """One compressed indexer key: fp8 ``I + I/128*4`` (132 B at I=128) or fp4 ``I/2 + I/32`` (68 B).

    Source: ``get_dsv4_indexer_bytes_per_token`` (deepseek_v4_memory_pool.py, v0.5.23). The low-ratio (1/2)
    indexer is always fp4 (``force_fp4=True``); the c4 indexer is budgeted at fp8 on CUDA even with
    ``--enable-deepseek-v4-fp4-indexer`` (the fp4 price is applied only on HIP).
    """
    if fp4:
        return index_head_dim // 2 + index_head_dim // 32
    return index_head_dim + index_head_dim // 128 * 4


def compress_state_ring_size(*, ratio: int, num_draft_tokens: int = 0) -> int:
    """Rows of one compress-state ring: c4 8 / c128 128 / c2 2; speculative: 16 / 256 / next_pow2 > drafts+1.

    Source: ``get_compress_state_ring_size`` (deepseek_v4_memory_pool.py, v0.5.23), offline c128 (default).
    Example: ratio 2 with 4 draft tokens -> 1 << (5).bit_length() = 8.
    """
    if ratio not in (2, 4, 128):
        raise InputError(f"no compress state ring for ratio {ratio}", field="compress_ratios")
    if ratio == 2:
        return 2 if num_draft_tokens <= 0 else 1 << (num_draft_tokens + 1).bit_length()
    if num_draft_tokens > 0:
        return 16 if ratio == 4 else 256
    return 8 if ratio == 4 else 128


#: the backends a DeepSeek-V4 pool runs on ("auto" resolves to one of them)
_RUNNABLE = frozenset((Dsv4AttnBackend.FLASHMLA, Dsv4AttnBackend.FLASHMLA_MEGA, Dsv4AttnBackend.TRTLLM))


def dsv4_select_layout(
    *,
    sm_major: int | None,
    is_v41: bool,
    kv_dtype: DType | None,
    attn_tp_size: int,
    attention_backend: Dsv4AttnBackend | None = None,
    kv_layout_env: str | None = None,
    pd_disaggregation: bool = False,
) -> str:
    """Main KV layout of the pool: ``"v4"`` | ``"v41"`` | ``"v41_new"`` | ``"uniform_fp8"`` (CUDA).

    ``attention_backend`` is ``--dsv4-attn-backend`` (None/"auto", "flashmla", "flashmla_mega", "trtllm");
    ``kv_layout_env`` is ``SGLANG_DSV4_KV_LAYOUT`` when set (unset = default "v4"); ``kv_dtype`` the resolved KV
    dtype (``None``: ``auto``, which is fp8_e4m3 here).

    Sources (v0.5.23): ``_default_dsv4_attention_backend`` (arg_groups/deepseek_v4_hook.py): "auto" becomes
    ``flashmla_mega`` only for V4.1 on SM100/103 with fp8 KV, when attention is not tensor-parallel (or under
    PD disaggregation) and the env layout is unset or auto/v41/v41_new; else ``flashmla``.
    ``select_dsv4_kv_layout`` (mem_cache/deepseek_v4_memory_pool.py): mega forces "v41" (unless "v41_new");
    trtllm -> uniform FP8; env "v4" (the default) -> V4; "auto" -> V41 only on SM100.
    ``_deepseek_v4_kv_cache_dtype`` (arg_groups/overrides.py): "auto" -> fp8_e4m3; bf16 is refused here
    because the CUDA pool asserts uint8 (fp8) storage (``DeepSeekV4SingleKVPool.create_buffer``).

    Example: V4.1-Flash on RTX PRO 6000 (SM120), TP8, fp8 -> flashmla -> "v4".
    """
    if kv_dtype is None or kv_dtype is DType.FP8_E4M3:
        kd = DType.FP8_E4M3
    elif kv_dtype is DType.BF16:
        raise InputError(
            "DeepSeek-V4 on CUDA stores its KV pool as fp8 (uint8 rows); bfloat16 is NPU/HIP-unified only",
            field="--kv-cache-dtype",
            hint="use --kv-cache-dtype fp8_e4m3 (or auto)",
        )
    else:
        raise InputError(
            f"kv_cache_dtype {kv_dtype.canonical!r} is not supported for DeepSeek-V4",
            field="--kv-cache-dtype",
            hint="use fp8_e4m3 (or auto)",
        )
    is_sm100 = sm_major == 10
    env = kv_layout_env.lower() if kv_layout_env is not None else None
    backend = attention_backend or Dsv4AttnBackend.AUTO
    if backend == Dsv4AttnBackend.AUTO:
        blocked = (
            not is_v41
            or not is_sm100
            or kd is not DType.FP8_E4M3
            or (not pd_disaggregation and attn_tp_size > 1)
            or (env is not None and env not in ("auto", "v41", "v41_new"))
        )
        backend = Dsv4AttnBackend.FLASHMLA if blocked else Dsv4AttnBackend.FLASHMLA_MEGA
    if backend not in _RUNNABLE:
        raise InputError(
            f"unknown --dsv4-attn-backend {str(attention_backend)!r}",
            field="attention_backend",
            hint="auto, flashmla, flashmla_mega or trtllm",
        )
    if backend == Dsv4AttnBackend.FLASHMLA_MEGA and not (is_v41 and is_sm100):
        raise InputError(
            "--dsv4-attn-backend flashmla_mega requires DeepSeek-V4.1 on SM100/SM103", field="attention_backend"
        )
    if backend == Dsv4AttnBackend.TRTLLM:
        if not is_sm100:
            raise InputError("--dsv4-attn-backend trtllm requires an SM100/SM103 GPU", field="attention_backend")
        if env not in (None, "auto", "v4"):
            raise InputError("trtllm uses uniform FP8 pools, not the V4.1 layouts", field="kv_layout_env")
        return "uniform_fp8"
    mode = env if env is not None else "v4"
    if backend == Dsv4AttnBackend.FLASHMLA_MEGA and mode != "v41_new":
        mode = "v41"
    if mode == "v4":
        return "v4"
    if mode not in ("v41", "v41_new", "auto"):
        raise InputError(f"unknown SGLANG_DSV4_KV_LAYOUT={kv_layout_env!r}", field="kv_layout_env")
    if mode == "auto" and not is_sm100:
        return "v4"
    if not is_sm100:
        raise InputError("the V4.1 KV cache layouts need an SM100/SM103 GPU", field="kv_layout_env")
    return "v41_new" if mode == "v41_new" else "v41"
