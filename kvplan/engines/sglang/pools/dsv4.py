"""SGLang's DeepSeek-V4 family pool (V4-Flash, V4-Pro, V4.1-Flash): row layouts, pool sizes, the planner.

The geometry (layers, compression ratios, kv sources, window) is :mod:`kvplan.geometry.dsv4`.

By release: :data:`DSV4_ERAS` / :func:`dsv4_era` key the configurator of each SGLang release 0.5.12 - 0.5.23
(``dsv4_pool_sizes(release=...)``): 0.5.12 - 0.5.20 are :mod:`kvplan.engines.sglang.pools.dsv4_legacy` (one
coefficient over raw 584 B rows), 0.5.21 - 0.5.22 this module without the low-ratio padding (ratio-1/2 rows at 584 B);
docs/layouts/deepseek-v4.md section 7.  What follows is 0.5.23.

Engine sources (sgl-project/sglang, package paths under ``python/``; wheel 0.5.23, no git commit):

* ``sglang/srt/model_executor/pool_configurator.py`` -- ``DSV4PoolConfigurator`` (``__init__``,
  ``_get_bytes_per_swa_token``, ``_compressed_bytes_per_full_token``, ``_get_bytes_per_full_token``,
  ``_get_low_ratio_kv_padding_bytes``, ``_get_c128_state_fixed_bytes``, ``_get_c2_state_fixed_bytes``,
  ``_resolve_swa_prefix_tails``, ``_resolve_swa_cap_tokens``, ``_resolve_max_running_requests_per_worker``,
  ``calculate_pool_sizes``, ``calculate_pool_sizes_from_max_tokens``), ``compute_swa_request_cap``,
  ``MemoryPoolConfigurator.validate_swa_pool_size``, ``DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO = 0.1``.
* ``sglang/srt/mem_cache/deepseek_v4_memory_pool.py`` -- ``collect_sources_by_ratio``,
  ``get_compress_state_ring_size``, ``get_dsv4_indexer_bytes_per_token``, ``_num_dsv4_physical_kv_pages``,
  ``resolve_compressed_kv_layout``, ``select_dsv4_kv_layout``, ``dsv41_index_page_size``,
  ``DeepSeekV4TokenToKVPool._init_compressed_pools`` / ``_init_paged_compress_states`` /
  ``_make_pair_state_pool``; ``sglang/srt/mem_cache/deepseek_v4_compress_state.py`` ``CompressStatePool``.
* ``sglang/kernels/ops/attention/dsv4/kv_layout.py`` -- ``KVLayout`` (bytes per token, ``page_align``,
  ``page_bytes``).
* ``sglang/srt/arg_groups/deepseek_v4_hook.py`` -- ``apply_deepseek_v4_defaults`` (max_running_requests
  := 256 when unset; kv dtype), ``_default_dsv4_attention_backend`` (flashmla vs flashmla_mega).
* ``sglang/srt/arg_groups/model_overrides/deepseek_v4.py`` -- ``_deepseek_v4_overrides`` (page_size 256;
  swa_full_tokens_ratio 0.1 for V4 but not V4.1); ``sglang/srt/arg_groups/kv_cache_hook.py`` (a ratio set by
  the override counts as "explicit").
* ``sglang/srt/mem_cache/kv_cache_configurator.py`` -- ``resolve_max_num_reqs`` (the ``tokens // 2`` cap),
  ``config_from_budget`` (``--max-total-tokens``), ``_build_dsv4_kv_pool`` (CUDA asserts page_size 256).
* ``sglang/srt/configs/deepseek_v41.py`` -- ``normalize_deepseek_v41_config`` (nested text/vision config
  flattened, top-level keys win); ``sglang/srt/configs/model_config.py`` (qk_nope = head_dim - rope,
  sliding window lookup order ``sliding_window_size`` / ``sliding_window`` / ``window_size``).
* ``sglang/srt/environ.py`` defaults: ``SGLANG_DSV4_KV_LAYOUT="v4"``, ``SGLANG_DSV4_COMPRESSED_KV_LAYOUT="auto"``,
  ``SGLANG_DSV4_COMPRESS_STATE_DTYPE="float32"``, ``SGLANG_SWA_EVICTION_INTERVAL=128``,
  ``SGLANG_OPT_USE_ONLINE_COMPRESS=False``.

The model (coefficient + bias, all per attention-DP rank and per PP stage)::

    kvb(r)          = page_bytes(layout(r), 256 // r) / (256 // r)      # 585.0 for V4 (r=0,1,2,4); 864.0 for r=128
    bytes_per_swa   = kvb(0) * L_stage + ring4 / 256 * (4*D + 4*I) * 4 * L4          (D=512 latent, I=index dim)
    comp(1|2)       = (kvb(r) + I/2 + I/32) / r                          # fp4 low-ratio indexer, 68 B at I=128
    comp(4)         = kvb(4) / 4 + (I + I/128*4) / 4                     # fp8 c4 indexer, 132 B at I=128
    comp(128)       = kvb(128) / 128
    bytes_per_full  = swa_ratio_eff * bytes_per_swa + sum(comp(r) * owners(r))   (swa_ratio_eff = 0 in cap mode)
    speculative     : bytes_per_full, bytes_per_swa *= (L_stage + 1) / L_stage    (the draft worker's reserve)
    draft pool      = draft_layers * ceil((swa + 256) / 256) * page_bytes(256)  (allocated, SWA-only; not budgeted)
    fixed           = c128_state(mrr_w) + c2_state(mrr_w) + cap_tokens * bytes_per_swa (cap mode)
    full            = page_floor(int((budget - fixed) / bytes_per_full)); step down one page while
                      full * bytes_per_full + low_ratio_padding(full) > budget - fixed
    swa             = cap_tokens (cap mode) | page_floor(int(full * ratio)) (ratio mode)
    mrr (scheduler) = min(max(1, R // attn_dp), full // 2)

Worked example (V4.1-Flash, SM120 -> layout v4, page 256, mrr 16, cps 2048, radix + overlap on, 8 GiB budget):
bytes_per_full = 3*(585+68)/2 + (585+68) = 1632.5; swa cap = ceil256(768*16 + 2*2048 + 256 + 64*(128+256)) =
41,216 slots x 40*585 B = 964,454,400 B fixed; pair state 3 * 38 rows * 4096 B = 466,944 B; full =
page_floor(7,625,013,248 / 1632.5) = 4,670,720, minus two pages for the ratio-1/2 reserved pages -> 4,670,208.

Speculative decoding (which algorithm, how many draft tokens, the draft layers) is resolved by
:mod:`kvplan.engines.sglang.speculative` and arrives in ``PoolFlags``.

Not modelled: the HIP ``unified_kv_triton`` pool, NPU pools (page 128), HiSparse c4 shrink, encoder SWA
bounded replay (``--enable-encoder-swa-bounded-replay``), online c128 compression, a bf16 compress state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.base import Breakdown, PoolContext, PoolPlan, request_cap
from kvplan.engines.sglang.pools.swa_cap import (
    SWA_EVICTION_INTERVAL,
    ceil_align,
    is_array,
    swa_request_cap,
    vint,
    vmax,
    vwhere,
)
from kvplan.errors import InputError
from kvplan.geometry.dsv4 import DSV4Geometry, dsv4_geometry_from_config, dsv4_naive_v3_bytes_per_token
from kvplan.result import Basis, Pool

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools
    from kvplan.hfconfig.spec import ModelSpec

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
    return ceil_align(page_tokens * bpt, align)


def compressed_layout(*, main_layout: str, ratio: int, option: str = "auto") -> str:
    """Layout of ratio ``ratio``'s cache next to a ``main_layout`` SWA cache.

    Source: ``resolve_compressed_kv_layout`` (deepseek_v4_memory_pool.py, v0.5.23); ``option`` is
    ``SGLANG_DSV4_COMPRESSED_KV_LAYOUT`` (auto | fp8 | fp4). V4 pairs only with V4; under V4.1 the
    ratio-1/2 latents go fp4 by default, ratios 4/128 stay fp8.
    """
    option = option.lower()
    if option not in ("auto", "fp8", "fp4"):
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


def dsv4_select_layout(
    *,
    sm_major: int | None,
    is_v41: bool,
    kv_cache_dtype: str,
    attn_tp_size: int,
    attention_backend: str | None = None,
    kv_layout_env: str | None = None,
    pd_disaggregation: bool = False,
) -> str:
    """Main KV layout of the pool: ``"v4"`` | ``"v41"`` | ``"v41_new"`` | ``"uniform_fp8"`` (CUDA).

    ``attention_backend`` is ``--dsv4-attn-backend`` (None/"auto", "flashmla", "flashmla_mega", "trtllm");
    ``kv_layout_env`` is ``SGLANG_DSV4_KV_LAYOUT`` when set (unset = default "v4").

    Sources (v0.5.23): ``_default_dsv4_attention_backend`` (arg_groups/deepseek_v4_hook.py): "auto" becomes
    ``flashmla_mega`` only for V4.1 on SM100/103 with fp8 KV, when attention is not tensor-parallel (or under
    PD disaggregation) and the env layout is unset or auto/v41/v41_new; else ``flashmla``.
    ``select_dsv4_kv_layout`` (mem_cache/deepseek_v4_memory_pool.py): mega forces "v41" (unless "v41_new");
    trtllm -> uniform FP8; env "v4" (the default) -> V4; "auto" -> V41 only on SM100.
    ``_deepseek_v4_kv_cache_dtype`` (arg_groups/overrides.py): "auto" -> fp8_e4m3; bf16 is refused here
    because the CUDA pool asserts uint8 (fp8) storage (``DeepSeekV4SingleKVPool.create_buffer``).

    Example: V4.1-Flash on RTX PRO 6000 (SM120), TP8, fp8 -> flashmla -> "v4".
    """
    dtype = (kv_cache_dtype or "auto").lower()
    if dtype in ("auto", "fp8", "fp8_e4m3"):
        dtype = "fp8_e4m3"
    elif dtype in ("bfloat16", "bf16"):
        raise InputError(
            "DeepSeek-V4 on CUDA stores its KV pool as fp8 (uint8 rows); bfloat16 is NPU/HIP-unified only",
            field="--kv-cache-dtype",
            hint="use --kv-cache-dtype fp8_e4m3 (or auto)",
        )
    else:
        raise InputError(
            f"kv_cache_dtype {kv_cache_dtype!r} is not supported for DeepSeek-V4",
            field="--kv-cache-dtype",
            hint="use fp8_e4m3 (or auto)",
        )
    is_sm100 = sm_major == 10
    env = kv_layout_env.lower() if kv_layout_env is not None else None
    backend = (attention_backend or "auto").lower()
    if backend == "auto":
        blocked = (
            not is_v41
            or not is_sm100
            or dtype != "fp8_e4m3"
            or (not pd_disaggregation and attn_tp_size > 1)
            or (env is not None and env not in ("auto", "v41", "v41_new"))
        )
        backend = "flashmla" if blocked else "flashmla_mega"
    if backend not in ("flashmla", "flashmla_mega", "trtllm"):
        raise InputError(
            f"unknown --dsv4-attn-backend {attention_backend!r}",
            field="attention_backend",
            hint="auto, flashmla, flashmla_mega or trtllm",
        )
    if backend == "flashmla_mega" and not (is_v41 and is_sm100):
        raise InputError(
            "--dsv4-attn-backend flashmla_mega requires DeepSeek-V4.1 on SM100/SM103", field="attention_backend"
        )
    if backend == "trtllm":
        if not is_sm100:
            raise InputError("--dsv4-attn-backend trtllm requires an SM100/SM103 GPU", field="attention_backend")
        if env not in (None, "auto", "v4"):
            raise InputError("trtllm uses uniform FP8 pools, not the V4.1 layouts", field="kv_layout_env")
        return "uniform_fp8"
    mode = env if env is not None else "v4"
    if backend == "flashmla_mega" and mode != "v41_new":
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


# ----------------------------------------------------------------------------------------------------------
# Releases: what each SGLang release's DSV4PoolConfigurator prices (issue 12; docs/layouts/deepseek-v4.md §7)
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DSV4Era:
    """One run of SGLang releases whose ``DSV4PoolConfigurator`` does the same arithmetic on CUDA.

    ``paged`` False: the 0.5.12 - 0.5.20 configurator (:mod:`kvplan.engines.sglang.pools.dsv4_legacy`): one
    coefficient over raw 584 B rows, SWA by ratio only, V4 / V4-Pro only.  True: the 0.5.21+ one
    (:func:`dsv4_pool_sizes`): paged row bytes, SWA cap mode, V4.1 (ratios 1 / 2), ``(L+1)/L`` on the SWA
    coefficient too.
    Sources: ``model_executor/pool_configurator.py`` ``DSV4PoolConfigurator`` of the wheels 0.5.12 - 0.5.23.
    """

    first: str  # the first release of the era
    last: str  # the last release of the era
    paged: bool  # 0.5.21+: the paged-KV configurator (cap mode, V4.1, c2 state)
    pp_slice: bool = True  # 0.5.13+: counts the PP stage's layers (0.5.12: the config's whole list)
    c128_state_fixed: bool = True  # 0.5.15+: c128 state as fixed bytes per request slot (else in the coefficient)
    dspark: bool = True  # 0.5.16+: --speculative-algorithm DSPARK exists
    ring_check: bool = True  # 0.5.18+: _assert_ring_serves_draft_tokens
    swa_pool_check: bool = True  # 0.5.20+: validate_swa_pool_size (window + page >= swa refused)
    trtllm: bool = True  # 0.5.20+: --dsv4-attn-backend trtllm (uniform fp8 rows)
    low_ratio_padding: bool = True  # 0.5.23: _get_low_ratio_kv_padding_bytes; ratio-1/2 rows priced by the layout

    @property
    def label(self) -> str:
        return self.first if self.first == self.last else f"{self.first} - {self.last}"


#: The DSV4 configurator eras, oldest first (each release from ``first`` to ``last``; ``.postN`` builds go with
#: their base release).  Read in the wheels: 0.5.12 -> 0.5.13 slices the stage; 0.5.15 moves the c128 state to
#: fixed bytes; 0.5.16 adds DSpark; 0.5.18 the ring check; 0.5.20 the SWA floor and trtllm (and, on HIP only, the
#: unified pool); 0.5.21 the paged configurator; 0.5.23 the low-ratio padding.
DSV4_ERAS: tuple[DSV4Era, ...] = (
    DSV4Era(
        "0.5.12",
        "0.5.12",
        paged=False,
        pp_slice=False,
        c128_state_fixed=False,
        dspark=False,
        ring_check=False,
        swa_pool_check=False,
        trtllm=False,
    ),
    DSV4Era(
        "0.5.13",
        "0.5.14",
        paged=False,
        c128_state_fixed=False,
        dspark=False,
        ring_check=False,
        swa_pool_check=False,
        trtllm=False,
    ),
    DSV4Era("0.5.15", "0.5.15", paged=False, dspark=False, ring_check=False, swa_pool_check=False, trtllm=False),
    DSV4Era("0.5.16", "0.5.17", paged=False, ring_check=False, swa_pool_check=False, trtllm=False),
    DSV4Era("0.5.18", "0.5.19", paged=False, swa_pool_check=False, trtllm=False),
    DSV4Era("0.5.20", "0.5.20", paged=False),
    DSV4Era("0.5.21", "0.5.22", paged=True, low_ratio_padding=False),
    DSV4Era("0.5.23", "0.5.23", paged=True),
)
#: the first release that runs DeepSeek-V4.1 (``model_type == "deepseek_v41"``, compress ratios 1 and 2)
DSV41_FIRST_RELEASE = "0.5.21"


def dsv4_era(release: str | None) -> DSV4Era:
    """The era of SGLang ``release`` (a release string as ``--engine-version`` resolves it; None = the newest).

    Example: ``"0.5.14"`` -> the 0.5.13 - 0.5.14 era; ``"0.5.22"`` -> 0.5.21 - 0.5.22; None -> 0.5.23.
    InputError for a release before 0.5.12 (no DeepSeek-V4 pool).
    """
    if release is None:
        return DSV4_ERAS[-1]
    from kvplan.engines.sglang.releases import version_key

    key = version_key(release)
    found = [e for e in DSV4_ERAS if version_key(e.first) <= key]
    if not found:
        raise InputError(
            f"SGLang {release} has no DeepSeek-V4 pool (the first release with it is {DSV4_ERAS[0].first})",
            field="--engine-version",
            hint=f"use --engine-version {DSV4_ERAS[0].first} or newer",
        )
    return found[-1]


def check_dsv4_release(
    *, era: DSV4Era, is_v41: bool, layout: str, speculative_algorithm: str = "", release: str | None = None
) -> None:
    """InputError when the release of ``era`` cannot run this model / flag combination (names the first release
    that can): V4.1 before 0.5.21, DSpark before 0.5.16, the trtllm backend before 0.5.20, the V4.1 row layouts
    before 0.5.21.

    Sources: ``configs/model_config.py`` (no ``deepseek_v41`` before 0.5.21), ``mem_cache/deepseek_v4_memory_pool.py
    get_compress_state_ring_size`` (asserts ratio 4 or 128 up to 0.5.20), ``arg_groups/deepseek_v4_hook.py``
    (EAGLE only in 0.5.12 - 0.5.15), wheels 0.5.12 - 0.5.23.  ``release`` names the release in the message (None:
    the era's releases).
    """
    name = release or era.label
    if is_v41 and not era.paged:
        raise InputError(
            f"SGLang {name} has no DeepSeek-V4.1 (the first release with it is {DSV41_FIRST_RELEASE})",
            field="--engine-version",
            hint=f"use --engine-version {DSV41_FIRST_RELEASE} or newer for this model",
        )
    if speculative_algorithm.upper() == "DSPARK" and not era.dspark:
        raise InputError(
            f"SGLang {name} has no DSPARK speculative decoding (the first release with it is 0.5.16)",
            field="--speculative-algorithm",
            hint="use --engine-version 0.5.16 or newer, or EAGLE",
        )
    if layout == "uniform_fp8" and not era.trtllm:
        raise InputError(
            f"SGLang {name} has no --dsv4-attn-backend trtllm (the first release with it is 0.5.20)",
            field="attention_backend",
            hint="use --engine-version 0.5.20 or newer",
        )
    if layout not in ("v4", "uniform_fp8") and not era.paged:
        raise InputError(
            f"SGLang {name} stores DeepSeek-V4 rows only in the V4 layout (584 B); the {layout} "
            f"layout is first in {DSV41_FIRST_RELEASE}",
            field="kv_layout_env",
        )


# ----------------------------------------------------------------------------------------------------------
# Pool sizing
# ----------------------------------------------------------------------------------------------------------


@dataclass(eq=False, repr=False)
class DSV4Pools:
    """Result of :func:`dsv4_pool_sizes` for one attention-DP rank / PP stage (target worker)."""

    full_tokens: int
    swa_tokens: int
    c4_tokens: int
    c128_tokens: int
    bytes_per_full_token: float
    bytes_per_swa_token: float
    fixed_bytes: int
    swa_mode: str
    layout: str
    page_size: int
    max_running_requests: int
    components: tuple[tuple[str, int], ...]
    notes: tuple[str, ...]
    # extras
    budget_mrr: int = 0  # the per-rank mrr the fixed states were sized with (before the tokens//2 cap)
    swa_cap_tokens: int | None = None
    swa_prefix_tails: int = 0
    swa_full_tokens_ratio: float | None = None  # ratio used in ratio mode
    c128_state_bytes: int = 0
    c2_state_bytes: int = 0
    swa_fixed_bytes: int = 0
    low_ratio_padding_bytes: float = 0.0
    budgeted_bytes: float = 0.0  # full * bytes_per_full + padding + fixed (<= budget on the profiling path)
    c4_state_pool_size: int = 0
    ring_sizes: tuple[tuple[int, int], ...] = ()
    owner_layers: tuple[tuple[int, tuple[int, ...]], ...] = field(default=())

    @property
    def allocated_bytes(self) -> int:
        """Sum of :attr:`components` (what the pools allocate, incl. padding pages / draft reserve)."""
        return sum(b for _, b in self.components)


def dsv4_pool_sizes(
    *,
    geometry: DSV4Geometry,
    budget_bytes: int,
    layout: str,
    page_size: int = DSV4_PAGE_SIZE,
    max_running_requests: int | None,
    attn_dp_size: int = 1,
    context_len: int,
    chunked_prefill_size: int,
    radix_cache: bool = True,
    overlap_schedule: bool = True,
    swa_full_tokens_ratio: float | None = None,
    speculative_num_draft_tokens: int = 0,
    stage_layers: tuple[int, int] | None = None,
    speculative_num_steps: int | None = None,
    swa_prefix_tails: int | None = None,
    compressed_kv_layout: str = "auto",
    index_page_size: int = DSV41_INDEX_PAGE_SIZE,
    family_mrr_default: int | None = DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
    max_total_tokens: int | None = None,
    disaggregation_decode: bool = False,
    decode_extra_slots: int = 0,
    swa_eviction_interval: int = SWA_EVICTION_INTERVAL,
    draft_layers: int = 0,
    release: str | None = None,
) -> DSV4Pools:
    """Size the DSV4 pools from a KV byte budget, as ``DSV4PoolConfigurator.calculate_pool_sizes`` does.

    ``release`` (None = the newest, 0.5.23) picks the configurator of that SGLang release (:data:`DSV4_ERAS`):
    0.5.12 - 0.5.20 are :func:`kvplan.engines.sglang.pools.dsv4_legacy.legacy_pool_sizes`; 0.5.21 - 0.5.22 are
    this function without the low-ratio padding and with ratio-1/2 rows at the raw ``nope + 2*rope + 8`` bytes.

    Inputs are the *server flags* (global values): ``max_running_requests`` and ``chunked_prefill_size`` are
    divided by ``attn_dp_size`` here (``DSV4PoolConfigurator.__init__``; ``parallel_hook._handle_data_parallelism``
    divides the chunk). ``max_running_requests=None`` applies the DSV4 family default 256
    (``deepseek_v4_hook.apply_deepseek_v4_defaults``, applied at server-args resolution, before sizing); pass
    ``family_mrr_default=None`` to get the configurator's own fallback estimate instead
    (``clamp(int(budget / bpf / ctx * 512), 2048, 4096)``, capped at tokens // 2), which stock SGLang never
    reaches for this family. ``chunked_prefill_size <= 0`` means chunked prefill is off.

    ``swa_full_tokens_ratio=None`` means the user gave no ``--swa-full-tokens-ratio``: V4/V4-Pro then get the
    model override 0.1 (ratio mode); V4.1 gets cap mode when the per-rank mrr is known and chunked prefill is
    on (or PD decode), else ratio mode at ``DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO`` = 0.1.

    ``speculative_num_draft_tokens > 0`` turns on speculative decoding (EAGLE topk 1 or DSpark): rings grow,
    both coefficients are multiplied by ``(L_stage + 1) / L_stage`` (the draft worker's reserve) and the SWA
    cap uses the draft tokens. ``draft_layers`` (the DSpark stages / NextN layers, 0 = not known) adds the draft
    worker's own pool to ``components`` (:func:`draft_swa_pool_bytes`; the draft does not profile, it takes the
    target's token counts); without it the components carry the budgeted reserve instead.
    ``stage_layers=(start, end)`` restricts to one PP stage.

    Worked example: see the module docstring (V4.1-Flash, 8 GiB -> 4,670,208 full tokens, 41,216 SWA slots).
    """
    g = geometry
    era = dsv4_era(release)
    if not era.paged:
        from kvplan.engines.sglang.pools.dsv4_legacy import legacy_pool_sizes

        _check_pool_inputs(
            g=g,
            layout=layout,
            page_size=page_size,
            budget_bytes=budget_bytes,
            attn_dp_size=attn_dp_size,
            context_len=context_len,
        )
        return legacy_pool_sizes(
            era=era,
            geometry=g,
            budget_bytes=budget_bytes,
            layout=layout,
            page_size=page_size,
            max_running_requests=max_running_requests,
            attn_dp_size=attn_dp_size,
            context_len=context_len,
            swa_full_tokens_ratio=swa_full_tokens_ratio,
            speculative_num_draft_tokens=speculative_num_draft_tokens,
            stage_layers=stage_layers,
            family_mrr_default=family_mrr_default,
            max_total_tokens=max_total_tokens,
            disaggregation_decode=disaggregation_decode,
            decode_extra_slots=decode_extra_slots,
        )
    st, mode, bytes_per_swa, bpf, infl, notes = _coefficients(
        era=era,
        geometry=g,
        budget_bytes=budget_bytes,
        layout=layout,
        page_size=page_size,
        max_running_requests=max_running_requests,
        attn_dp_size=attn_dp_size,
        context_len=context_len,
        chunked_prefill_size=chunked_prefill_size,
        radix_cache=radix_cache,
        overlap_schedule=overlap_schedule,
        swa_full_tokens_ratio=swa_full_tokens_ratio,
        speculative_num_draft_tokens=speculative_num_draft_tokens,
        stage_layers=stage_layers,
        speculative_num_steps=speculative_num_steps,
        swa_prefix_tails=swa_prefix_tails,
        compressed_kv_layout=compressed_kv_layout,
        index_page_size=index_page_size,
        family_mrr_default=family_mrr_default,
        disaggregation_decode=disaggregation_decode,
        decode_extra_slots=decode_extra_slots,
        swa_eviction_interval=swa_eviction_interval,
    )

    # --- request-scoped fixed bytes ------------------------------------------------------------------------
    if mode.mrr_w_requested is not None:
        mrr_w = mode.mrr_w_requested
    else:  # _resolve_max_running_requests_per_worker fallback
        est_full = int(budget_bytes / bpf)
        est = max(min(int(est_full / context_len * 512), 4096), 2048)
        mrr_w = min(est, est_full // 2)
    extra = decode_extra_slots if disaggregation_decode else 0
    c128_fixed = _c128_state(st, mrr_w + 1 + extra)
    c2_fixed = _c2_state(st, mrr_w + 1 + extra)
    swa_fixed = mode.cap_tokens * bytes_per_swa if mode.cap_tokens is not None else 0
    fixed = dsv4_fixed_bytes(st, n_slots=mrr_w + 1 + extra, cap_tokens=mode.cap_tokens, bytes_per_swa=bytes_per_swa)

    full = _full_tokens(
        st,
        avail=max(budget_bytes - fixed, 0),
        bpf=bpf,
        cap_tokens=mode.cap_tokens,
        swa_fixed=swa_fixed,
        budget_bytes=budget_bytes,
    )
    pad_at_full = _padding(st, full)
    budgeted = full * bpf + pad_at_full + fixed
    if max_total_tokens is not None and max_total_tokens < full:
        # config_from_budget -> calculate_pool_sizes_from_max_tokens: fixed pools are not re-subtracted.
        full = max_total_tokens // page_size * page_size
        notes.append(f"--max-total-tokens caps the full pool at {full}")
        if full <= 0:
            raise InputError("max_total_tokens leaves no full page", field="max_total_tokens")
    swa = _swa_tokens(st, full=full, mode=mode)

    c4_tokens = full // 4
    c128_tokens = full // 128
    c4_state_pool = swa // page_size * st.rings.get(4, 0)
    if mode.mrr_w_requested is not None:
        final_mrr = min(mrr_w, full // 2)
    else:  # resolve_max_num_reqs without a request cap: estimate from the final token count
        final_mrr = min(max(min(int(full / context_len * 512), 4096), 2048), full // 2)
    if final_mrr < mrr_w:
        notes.append(f"max_running_requests reduced from {mrr_w} to {final_mrr} (tokens // 2)")

    comps = _components(st, full=full, swa=swa, c4_state_pool=c4_state_pool, alloc_slots=final_mrr + 1 + extra)
    if speculative_num_draft_tokens > 0:
        comps.append(
            _draft_component(st, notes, reserve=int(budgeted - budgeted / infl), swa=swa, draft_layers=draft_layers)
        )
    kvb = st.kvb
    notes.append(
        f"layout {layout}: SWA row {kvb[0]:g} B/layer, c4 {kvb[4]:g}, c128 {kvb[128]:g}, "
        f"ratio-1/2 {kvb[1]:g}/{kvb[2]:g} B/row"
    )

    return DSV4Pools(
        full_tokens=full,
        swa_tokens=swa,
        c4_tokens=c4_tokens,
        c128_tokens=c128_tokens,
        bytes_per_full_token=bpf,
        bytes_per_swa_token=bytes_per_swa,
        fixed_bytes=int(fixed),
        swa_mode=mode.swa_mode,
        layout=layout,
        page_size=page_size,
        max_running_requests=final_mrr,
        components=tuple(comps),
        notes=tuple(notes),
        budget_mrr=mrr_w,
        swa_cap_tokens=mode.cap_tokens,
        swa_prefix_tails=mode.tails if mode.cap_tokens is not None else 0,
        swa_full_tokens_ratio=mode.swa_ratio if mode.cap_tokens is None else None,
        c128_state_bytes=c128_fixed,
        c2_state_bytes=c2_fixed,
        swa_fixed_bytes=int(swa_fixed),
        low_ratio_padding_bytes=pad_at_full,
        budgeted_bytes=budgeted,
        c4_state_pool_size=c4_state_pool,
        ring_sizes=tuple(sorted(st.rings.items())),
        owner_layers=tuple(st.owners.items()),
    )


def _coefficients(
    *,
    era: DSV4Era | None = None,
    geometry: DSV4Geometry,
    budget_bytes: int,
    layout: str,
    page_size: int,
    max_running_requests: int | None,
    attn_dp_size: int,
    context_len: int,
    chunked_prefill_size: int,
    radix_cache: bool,
    overlap_schedule: bool,
    swa_full_tokens_ratio: float | None,
    speculative_num_draft_tokens: int,
    stage_layers: tuple[int, int] | None,
    speculative_num_steps: int | None,
    swa_prefix_tails: int | None,
    compressed_kv_layout: str,
    index_page_size: int,
    family_mrr_default: int | None,
    disaggregation_decode: bool,
    decode_extra_slots: int,
    swa_eviction_interval: int,
) -> tuple[_Stage, _Mode, float, float, float, list[str]]:
    """The stage, the SWA mode and the two coefficients (bytes per SWA token, bytes per full token, after the
    speculative inflation) of :func:`dsv4_pool_sizes`: what does not depend on the budget."""
    g = geometry
    notes: list[str] = []
    _check_pool_inputs(
        g=g,
        layout=layout,
        page_size=page_size,
        budget_bytes=budget_bytes,
        attn_dp_size=attn_dp_size,
        context_len=context_len,
    )
    drafts = max(0, speculative_num_draft_tokens)
    era = era or DSV4_ERAS[-1]
    st = _stage(
        g=g,
        layout=layout,
        page_size=page_size,
        stage_layers=stage_layers,
        drafts=drafts,
        spec=speculative_num_draft_tokens > 0,
        index_page_size=index_page_size,
        compressed_kv_layout=compressed_kv_layout,
        era=era,
    )
    if not era.low_ratio_padding:
        notes.append(
            f"SGLang {era.label}'s DSV4PoolConfigurator: no low-ratio KV padding; ratio-1/2 rows priced "
            f"at {st.kvb[1]:g} / {st.kvb[2]:g} B"
        )
    mode = _swa_mode(
        st,
        notes,
        max_running_requests=max_running_requests,
        family_mrr_default=family_mrr_default,
        attn_dp_size=attn_dp_size,
        chunked_prefill_size=chunked_prefill_size,
        radix_cache=radix_cache,
        overlap_schedule=overlap_schedule,
        swa_full_tokens_ratio=swa_full_tokens_ratio,
        drafts=drafts,
        steps=speculative_num_steps if speculative_num_steps is not None else max(1, drafts - 1),
        swa_prefix_tails=swa_prefix_tails,
        disaggregation_decode=disaggregation_decode,
        decode_extra_slots=decode_extra_slots,
        swa_eviction_interval=swa_eviction_interval,
    )

    # --- coefficients (same float order as the engine) --------------------------------------------------
    bytes_per_swa = _bytes_per_swa(st)
    bpf = (0 if mode.cap_tokens is not None else mode.swa_ratio) * bytes_per_swa + sum(
        _comp(st, r) * len(ls) for r, ls in st.owners.items()
    )
    infl = 1.0
    if speculative_num_draft_tokens > 0:
        infl = (st.n_stage + 1) / st.n_stage
        bpf *= infl
        bytes_per_swa *= infl
        notes.append(f"speculative: coefficients x ({st.n_stage}+1)/{st.n_stage} for the draft worker")

    return st, mode, bytes_per_swa, bpf, infl, notes


_STATE_DT = 4  # SGLANG_DSV4_COMPRESS_STATE_DTYPE float32


@dataclass(frozen=True)
class _Stage:
    """One PP stage of a DSV4 pool: the layers owning compressed storage, the state rings, the row prices."""

    g: DSV4Geometry
    layout: str
    page_size: int
    start: int
    end: int
    owners: dict[int, tuple[int, ...]]
    rings: dict[int, int]
    kvb: dict[int, float]  # budgeted bytes per row, by ratio (0 = the SWA cache)
    c4_idx: int  # fp8 c4 indexer key bytes
    low_idx: int  # fp4 ratio-1/2 indexer key bytes
    index_page_size: int
    compressed_kv_layout: str
    low_ratio_padding: bool = True  # 0.5.23: _get_low_ratio_kv_padding_bytes (0.5.21 - 0.5.22: none)

    @property
    def n_stage(self) -> int:
        return self.end - self.start

    @property
    def n_owner(self) -> dict[int, int]:
        return {r: len(ls) for r, ls in self.owners.items()}

    @property
    def latent(self) -> int:
        return self.g.head_dim  # attn_head_dim = qk_nope + rope


@dataclass(frozen=True)
class _Mode:
    """The request cap the fixed pools are sized with and the SWA mode (cap or ratio)."""

    mrr_w_requested: int | None
    cap_tokens: int | None
    tails: int
    swa_ratio: float
    cap_kw: dict[str, Any] | None = None  # the dsv4_swa_cap_tokens arguments but mrr_w (cap mode), else None

    @property
    def swa_mode(self) -> str:
        return "cap" if self.cap_tokens is not None else "ratio"


def _check_pool_inputs(
    *, g: DSV4Geometry, layout: str, page_size: int, budget_bytes: int, attn_dp_size: int, context_len: int
) -> None:
    if page_size != DSV4_PAGE_SIZE:
        raise InputError(
            f"page_size={page_size}: SGLang forces 256 for DeepSeek-V4 on CUDA "
            "(kv_cache_configurator._build_dsv4_kv_pool asserts it)",
            field="page_size",
        )
    if layout not in MAIN_LAYOUTS:
        raise InputError(f"unknown DSV4 main layout {layout!r}", field="layout", hint=f"one of {MAIN_LAYOUTS}")
    if layout == "v4" and (g.qk_nope_head_dim, g.qk_rope_head_dim) != (448, 64):
        raise InputError(
            f"the V4 row layout needs head_dim 512 = 448 nope + 64 rope, got {g.head_dim} / rope {g.qk_rope_head_dim}",
            field="head_dim",
        )
    if layout != "v4" and g.head_dim != 512:
        raise InputError(f"the {layout} layout needs head_dim 512, got {g.head_dim}", field="head_dim")
    if budget_bytes <= 0:
        raise InputError(
            f"KV budget is {budget_bytes} B; nothing left for the pool",
            field="mem_fraction_static",
            hint="raise --mem-fraction-static or use more/larger GPUs",
        )
    if attn_dp_size < 1:
        raise InputError("attn_dp_size must be >= 1", field="attn_dp_size")
    if context_len <= 0:
        raise InputError("context_len must be positive", field="context_len")


def _stage_owners(g: DSV4Geometry, stage_layers: tuple[int, int] | None) -> tuple[int, int, dict[int, tuple[int, ...]]]:
    start, end = stage_layers or (0, g.num_layers)
    if not 0 <= start < end <= g.num_layers:
        raise InputError(f"stage_layers {stage_layers} outside [0, {g.num_layers})", field="stage_layers")
    if g.is_v41 and (start, end) != (0, g.num_layers):
        # deepseek_v4_hook.validate_deepseek_v41_features refuses pipeline parallelism for V4.1
        raise InputError("DeepSeek-V4.1 does not support pipeline parallelism in SGLang 0.5.23", field="pp_size")
    owners = g.owner_layers((start, end))
    for idx in range(start, end):  # source_layer_of asserts a source inside the stage
        r = g.compress_ratios[idx]
        if r in (1, 2) and not any(s <= idx for s in owners.get(r, ())):
            raise InputError(
                f"layer {idx} (ratio {r}) has no kv_source layer inside PP stage [{start}, {end})", field="stage_layers"
            )
    return start, end, owners


def _rings(owners: dict[int, tuple[int, ...]], *, drafts: int, spec: bool) -> dict[int, int]:
    rings = {r: compress_state_ring_size(ratio=r, num_draft_tokens=drafts) for r in owners if r != 1}
    if spec:
        for r in (4, 128):  # _assert_ring_serves_draft_tokens
            if r in rings:
                window_rows = r * (2 if r == 4 else 1)
                pad = rings[r] - window_rows + 2 if rings[r] > window_rows else 0
                if drafts > pad:
                    raise InputError(
                        f"speculative_num_draft_tokens={drafts} exceeds what the c{r} ring (size {rings[r]}) "
                        f"serves ({pad})",
                        field="speculative_num_draft_tokens",
                    )
    return rings


def _stage(
    *,
    g: DSV4Geometry,
    layout: str,
    page_size: int,
    stage_layers: tuple[int, int] | None,
    drafts: int,
    spec: bool,
    index_page_size: int,
    compressed_kv_layout: str,
    era: DSV4Era,
) -> _Stage:
    start, end, owners = _stage_owners(g, stage_layers)
    rings = _rings(owners, drafts=drafts, spec=spec)
    kvb = {
        r: kv_bytes_per_row(layout=layout, ratio=r, page_size=page_size, option=compressed_kv_layout)
        for r in (0, 1, 2, 4, 128)
    }
    if not era.low_ratio_padding:  # 0.5.21 - 0.5.22 price ratio-1/2 rows at kv_bytes (trtllm: attn_head_dim)
        kvb[1] = kvb[2] = 512.0 if layout == "uniform_fp8" else float(g.qk_nope_head_dim + 2 * g.qk_rope_head_dim + 8)
    return _Stage(
        g=g,
        layout=layout,
        page_size=page_size,
        start=start,
        end=end,
        owners=owners,
        rings=rings,
        kvb=kvb,
        c4_idx=indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=False),
        low_idx=indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=True),
        index_page_size=index_page_size,
        compressed_kv_layout=compressed_kv_layout,
        low_ratio_padding=era.low_ratio_padding,
    )


def _bytes_per_swa(st: _Stage) -> float:
    """``_get_bytes_per_swa_token``: the SWA row on every stage layer plus the c4 compress-state ring."""
    state = 2 * 2 * st.latent * _STATE_DT + 2 * 2 * st.g.index_head_dim * _STATE_DT
    return st.kvb[0] * st.n_stage + (st.rings.get(4, 0) / st.page_size * state * st.n_owner.get(4, 0))


def _comp(st: _Stage, r: int) -> float:
    """``_compressed_bytes_per_full_token`` of one owner layer of ratio ``r``."""
    if r in (1, 2):
        return (st.kvb[r] + st.low_idx) / r
    if r == 4:
        return 1 / 4 * st.kvb[4] + 1 / 4 * st.c4_idx
    return 1 / 128 * st.kvb[128]


def _swa_mode(
    st: _Stage,
    notes: list[str],
    *,
    max_running_requests: int | None,
    family_mrr_default: int | None,
    attn_dp_size: int,
    chunked_prefill_size: int,
    radix_cache: bool,
    overlap_schedule: bool,
    swa_full_tokens_ratio: float | None,
    drafts: int,
    steps: int,
    swa_prefix_tails: int | None,
    disaggregation_decode: bool,
    decode_extra_slots: int,
    swa_eviction_interval: int,
) -> _Mode:
    """The per-rank request cap and the SWA mode (``_resolve_swa_cap_tokens``, ``_resolve_swa_prefix_tails``)."""
    g, page_size = st.g, st.page_size
    requested = max_running_requests if max_running_requests is not None else family_mrr_default
    mrr_w_requested = max(1, requested // attn_dp_size) if requested is not None else None
    cps = chunked_prefill_size // attn_dp_size if chunked_prefill_size and chunked_prefill_size > 0 else 0
    if max_running_requests is None and family_mrr_default is not None:
        notes.append(
            f"max_running_requests unset -> {family_mrr_default} (deepseek_v4_hook.apply_deepseek_v4_defaults)"
        )

    operator_ratio = swa_full_tokens_ratio
    if operator_ratio is None and not g.is_v41:
        operator_ratio = DSV4_DEFAULT_SWA_RATIO  # model_overrides/deepseek_v4.py, counted as explicit
        notes.append("swa_full_tokens_ratio 0.1 from the DeepSeek-V4 model override (not applied to V4.1)")
    if operator_ratio is not None and not 0 < operator_ratio <= 1.0:
        raise InputError("--swa-full-tokens-ratio should be in range (0, 1.0]", field="swa_full_tokens_ratio")

    if swa_prefix_tails is not None:
        tails = swa_prefix_tails
    elif not radix_cache or mrr_w_requested is None:
        tails = 0
    else:
        tails = 4 * mrr_w_requested

    cap_tokens: int | None = None
    cap_kw: dict[str, Any] | None = None
    if operator_ratio is None and mrr_w_requested is not None and (disaggregation_decode or cps > 0):
        cap_kw = dict(
            page_size=page_size,
            window=g.sliding_window,
            swa_prefix_tails=swa_prefix_tails,
            radix_cache=radix_cache,
            chunked_prefill_size=cps,
            overlap_schedule=overlap_schedule,
            num_draft_tokens=drafts,
            num_steps=steps,
            disagg_decode=disaggregation_decode,
            decode_extra_slots=decode_extra_slots,
            eviction_interval=swa_eviction_interval,
        )
        cap_tokens = dsv4_swa_cap_tokens(mrr_w=mrr_w_requested, **cap_kw)
    if cap_tokens is None and operator_ratio is None:
        notes.append("V4.1 ratio mode at the configurator default 0.1 (cap mode needs mrr and chunked prefill)")
    swa_ratio = operator_ratio if operator_ratio is not None else DSV4_DEFAULT_SWA_RATIO
    return _Mode(
        mrr_w_requested=mrr_w_requested, cap_tokens=cap_tokens, tails=tails, swa_ratio=swa_ratio, cap_kw=cap_kw
    )


def dsv4_swa_cap_tokens(
    *, mrr_w: Any, page_size: int, window: int, swa_prefix_tails: int | None, radix_cache: bool, **cap: Any
) -> Any:
    """Cap mode's SWA slots for ``mrr_w`` requests per rank (an int or an array)::

        tails = --swa-prefix-tails | 4 * mrr_w (radix cache on) | 0
        cap   = ceil_page(compute_swa_request_cap(mrr_w) + tails * (window + page))

    (``cap``: the other :func:`kvplan.engines.sglang.pools.swa_cap.swa_request_cap` arguments.)
    Example: the module docstring's V4.1-Flash, 16 requests -> 41,216 slots.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator._resolve_swa_cap_tokens``, ``_resolve_swa_prefix_tails``, v0.5.23.
    """
    tails = swa_prefix_tails if swa_prefix_tails is not None else (4 * mrr_w if radix_cache else 0)
    slots = swa_request_cap(page_size=page_size, window=window, mrr_per_rank=mrr_w, **cap)
    return ceil_align(slots + tails * (window + page_size), page_size)


def dsv4_fixed_bytes(st: _Stage, *, n_slots: Any, cap_tokens: Any, bytes_per_swa: float) -> Any:
    """The request-scoped bytes taken off the budget first: ``c128_state(n) + c2_state(n) + cap * bytes_per_swa``
    (``n`` = mrr_w + 1 (+ PD decode slots); the last term in cap mode only; ints or arrays).

    Example: the module docstring's V4.1-Flash: 0 + 466,944 + 41,216 x 23,400 = 964,921,344 B.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator._get_c128_state_fixed_bytes``, ``_get_c2_state_fixed_bytes``, ``calculate_pool_sizes``,
    v0.5.23.
    """
    swa_fixed = cap_tokens * bytes_per_swa if cap_tokens is not None else 0
    return _c128_state(st, n_slots) + _c2_state(st, n_slots) + swa_fixed


def dsv4_full_tokens(st: _Stage, *, avail: Any, bpf: float) -> Any:
    """``calculate_pool_sizes``'s full tokens: ``page_floor(int(avail / bpf))``, then one page down while
    ``full * bpf + low_ratio_padding(full) > avail`` (<= 0: SGLang refuses; ints or arrays).

    The padding (:func:`_padding`) is at most :func:`_max_padding_steps` pages' worth, so the search is a bounded
    number of vector steps (1-2 on the shipped models) and gives the scalar result row by row.
    Example: the module docstring's V4.1-Flash: 4,670,720 -> 4,670,208 (two pages down).
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator.calculate_pool_sizes``, ``_get_low_ratio_kv_padding_bytes``, v0.5.23.
    """
    page_size = st.page_size
    full = vint(avail / bpf) // page_size * page_size
    if not is_array(full):
        while full > 0 and full * bpf + _padding(st, full) > avail:
            full -= page_size
        return full
    for _ in range(_max_padding_steps(st, bpf)):
        over = (full > 0) & (full * bpf + _padding(st, full) > avail)
        if not over.any():
            return full
        full = full - page_size * over
    raise AssertionError("the DSV4 padding search did not settle within its bound")


def _max_padding_steps(st: _Stage, bpf: float) -> int:
    """An upper bound of :func:`dsv4_full_tokens`' page steps (+2): the largest padding over one page of full tokens.
    Per ratio r in (1, 2): ``n_r * (page * kvb_r + (page // r + 1 + 2 * index_page) * low_idx)``."""
    most = sum(
        st.n_owner.get(r, 0)
        * (st.page_size * st.kvb[r] + (st.page_size // r + 1 + 2 * st.index_page_size) * st.low_idx)
        for r in (1, 2)
    )
    return int(most // (st.page_size * bpf)) + 3


def _draft_component(st: _Stage, notes: list[str], *, reserve: int, swa: int, draft_layers: int) -> tuple[str, int]:
    """The draft worker's line of the components: its own SWA-only pool when its layer count is known (the reserve
    then goes to the notes), else the budgeted reserve."""
    if draft_layers <= 0:
        return ("draft_worker_reserve (budgeted, (L+1)/L)", reserve)
    draft = draft_swa_pool_bytes(layout=st.layout, page_size=st.page_size, swa_tokens=swa, layers=draft_layers)
    notes.append(
        f"draft worker: reserved {reserve:,} B by the ({st.n_stage}+1)/{st.n_stage} factor (one layer's "
        f"share of every token), allocates {draft:,} B ({draft_layers} SWA-only layers x {swa:,} SWA slots; "
        f"no compressed, indexer or state pools)"
    )
    return (f"draft swa_kv ({draft_layers} draft layers, the draft worker's own pool)", draft)


def draft_swa_pool_bytes(*, layout: str, page_size: int, swa_tokens: int, layers: int) -> int:
    """The draft worker's own KV pool on a DeepSeek-V4 target: ``layers x ceil((swa + page) / page) x page_bytes``.

    The draft (DSpark stages, or the NextN layer under EAGLE) takes the target's ``swa_max_total_num_tokens`` and
    owns no compressed, indexer or state pool: every draft layer is compress ratio 0, one paged SWA row of the
    target's layout, with the allocator's extra logical page.  It does not profile: the target budgets it by the
    ``(L + 1) / L`` factor.

    Sources (SGLang v0.5.23): ``mem_cache/kv_cache_configurator.py`` ``configure`` (a draft worker reuses the target's
    ``memory_pool_config``), ``_derive_pool_sizes`` (the draft zeroes c4 / c128 / state sizes), ``_build_dsv4_kv_pool``
    (``COMPRESS_RATIO_NEXTN_LAYER`` x ``num_effective_layers``), ``model_runner_components/layer_setup.py
    _compute_model_num_layers`` (``model.num_stages``), ``deepseek_v4_memory_pool.py _num_dsv4_physical_kv_pages``.

    Example: V4 rows, page 256, 27,136 SWA slots, 3 DSpark stages -> 3 x ceil(27,392 / 256) x 149,760 =
    3 x 107 x 149,760 = 48,072,960 B.
    """
    page_b = 512 * page_size if layout == "uniform_fp8" else layout_page_bytes(layout=layout, page_tokens=page_size)
    return layers * _ceil_div(swa_tokens + page_size, page_size) * page_b


def _c128_state(st: _Stage, n_slots: int) -> int:
    """``_get_c128_state_fixed_bytes``: one c128 compress-state ring per request slot, fp32."""
    if not st.n_owner.get(128):
        return 0
    rows = ceil_align(n_slots * st.rings[128] + st.rings[128] + 1, 128)
    return rows * 2 * st.latent * _STATE_DT * st.n_owner[128]


def _c2_state(st: _Stage, n_slots: int) -> int:
    """``_get_c2_state_fixed_bytes``: one ratio-2 pair-state ring per request slot, fp32."""
    if not st.n_owner.get(2):
        return 0
    rows = ceil_align(n_slots * st.rings[2] + st.rings[2] + 1, 2)
    return rows * 2 * st.latent * 4 * st.n_owner[2]


def _padding(st: _Stage, full: int) -> float:
    """``_get_low_ratio_kv_padding_bytes``: the ratio-1/2 caches' reserved pages and index-page rounding
    (0.5.23; none before)."""
    if st.layout == "uniform_fp8" or not st.low_ratio_padding:
        return 0
    total = 0.0
    page_size, index_page_size = st.page_size, st.index_page_size
    for r in (1, 2):
        n = st.n_owner.get(r, 0)
        if not n:
            continue
        main = page_size * st.kvb[r]
        index_size = (full + page_size) // r
        index_slots = _ceil_div(index_size + index_page_size, index_page_size) * index_page_size
        total += (main + (index_slots - full // r) * st.low_idx) * n
    return total


def _full_tokens(
    st: _Stage, *, avail: float, bpf: float, cap_tokens: int | None, swa_fixed: float, budget_bytes: int
) -> int:
    """``calculate_pool_sizes``: page-floored full tokens, stepped down one page while the padding overflows."""
    full = dsv4_full_tokens(st, avail=avail, bpf=bpf)
    if full > 0:
        return int(full)
    if cap_tokens is not None:
        raise InputError(
            f"the DSV4 SWA pool cap ({cap_tokens} tokens, {swa_fixed / 2**30:.2f} GiB) leaves no room for the "
            f"full KV pool within {budget_bytes / 2**30:.2f} GiB",
            field="max_running_requests",
            hint="reduce --max-running-requests or --swa-prefix-tails, or raise --mem-fraction-static",
        )
    raise InputError(
        "Not enough memory for the DeepSeek-V4 KV pool",
        field="mem_fraction_static",
        hint="increase --mem-fraction-static",
    )


def _swa_tokens(st: _Stage, *, full: int, mode: _Mode) -> int:
    """SWA slots: the cap (cap mode) or ``page_floor(int(full * ratio))`` checked by ``validate_swa_pool_size``."""
    if mode.cap_tokens is not None:
        return mode.cap_tokens
    page_size, window = st.page_size, st.g.sliding_window
    swa = dsv4_ratio_swa_tokens(full=full, ratio=mode.swa_ratio, page_size=page_size)
    if window + page_size >= swa:  # validate_swa_pool_size
        raise InputError(
            f"SWA pool ({swa} tokens) cannot hold even one request: the prefill floor is window "
            f"({window}) + page ({page_size})",
            field="swa_full_tokens_ratio",
            hint="increase --swa-full-tokens-ratio or the KV budget",
        )
    return swa


def dsv4_ratio_swa_tokens(*, full: Any, ratio: float, page_size: int) -> Any:
    """Ratio mode's SWA slots: ``page_floor(int(full * ratio))`` (refused when ``window + page >= swa``).

    Example: 1,000,192 full tokens at ratio 0.1, page 256 -> 99,840.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DSV4PoolConfigurator.calculate_pool_sizes``, ``MemoryPoolConfigurator.validate_swa_pool_size``, v0.5.23.
    """
    return vint(full * ratio) // page_size * page_size


def _page_bytes(st: _Stage, ratio: int, rows: int) -> int:
    if st.layout == "uniform_fp8":
        return 512 * rows
    return layout_page_bytes(
        layout=compressed_layout(main_layout=st.layout, ratio=ratio, option=st.compressed_kv_layout), page_tokens=rows
    )


def _components(st: _Stage, *, full: int, swa: int, c4_state_pool: int, alloc_slots: int) -> list[tuple[str, int]]:
    """What each pool allocates on the target worker (``DeepSeekV4TokenToKVPool``)."""
    page_size, n_owner = st.page_size, st.n_owner

    def pages(size: int, page_rows: int, global_page: int) -> int:  # _num_dsv4_physical_kv_pages
        return _ceil_div(size + global_page, page_rows)

    comps: list[tuple[str, int]] = []
    swa_page_bytes = (
        512 * page_size if st.layout == "uniform_fp8" else layout_page_bytes(layout=st.layout, page_tokens=page_size)
    )
    comps.append((f"swa_kv ({st.n_stage} layers)", st.n_stage * pages(swa, page_size, page_size) * swa_page_bytes))
    stage_ratios = st.g.compress_ratios[st.start : st.end]
    c128_tokens = full // 128
    for r in (4, 128):
        if r not in set(st.g.compress_ratios):
            continue
        n = stage_ratios.count(r)
        rows = page_size // r
        size = full // 4 if r == 4 else c128_tokens
        comps.append((f"c{r}_kv ({n} layers)", n * pages(size, rows, page_size) * _page_bytes(st, r, rows)))
        if r == 4:
            idx_size = c128_tokens * 32  # c4_logical_size
            comps.append((f"c4_indexer_k ({n} layers)", n * pages(idx_size, rows, page_size) * rows * st.c4_idx))
    for r in (1, 2):
        n = n_owner.get(r, 0)
        if not n:
            continue
        rows = page_size // r
        kv_bytes = n * pages(full // r, rows, page_size) * _page_bytes(st, r, rows)
        comps.append((f"c{r}_kv ({n} kv_source layers)", kv_bytes))
        idx_size = (full + page_size) // r
        ips = st.index_page_size
        comps.append((f"c{r}_indexer_k fp4 ({n} kv_source layers)", n * pages(idx_size, ips, ips) * ips * st.low_idx))
    if n_owner.get(4):
        rows4 = ceil_align(c4_state_pool + st.rings[4] + 1, 4)
        comps.append((f"c4_state fp32 ({n_owner[4]} layers)", n_owner[4] * rows4 * 4 * st.latent * _STATE_DT))
        comps.append(
            (f"c4_indexer_state fp32 ({n_owner[4]} layers)", n_owner[4] * rows4 * 4 * st.g.index_head_dim * _STATE_DT)
        )
    if n_owner.get(128):
        comps.append((f"c128_state fp32 ({n_owner[128]} layers)", _c128_state(st, alloc_slots)))
    if n_owner.get(2):
        comps.append((f"c2_pair_state fp32 ({n_owner[2]} layers)", _c2_state(st, alloc_slots)))
    return comps


# ----------------------------------------------------------------------------------------------------------
# Planner
# ----------------------------------------------------------------------------------------------------------


def _empty(layout: str, page_size: int, mrr: int | None) -> DSV4Pools:
    """Stand-in pool result when there is no budget at all (SGLang would stop at startup)."""
    return DSV4Pools(
        full_tokens=0,
        swa_tokens=0,
        c4_tokens=0,
        c128_tokens=0,
        bytes_per_full_token=0.0,
        bytes_per_swa_token=0.0,
        fixed_bytes=0,
        swa_mode="none",
        layout=layout,
        page_size=page_size,
        max_running_requests=mrr or 1,
        components=(),
        notes=(),
    )


def _smallest_stage(ctx: PoolContext, geom: DSV4Geometry, layout: str) -> DSV4Pools:
    """:func:`dsv4_pool_sizes` on every PP stage; the stage with the fewest full tokens bounds the pool."""
    f = ctx.flags
    check_dsv4_release(
        era=dsv4_era(ctx.release),
        is_v41=geom.is_v41,
        layout=layout,
        speculative_algorithm=f.speculative_algorithm,
        release=ctx.release,
    )
    if ctx.pp > 1 and geom.is_v41:
        raise InputError(
            "DeepSeek-V4.1 does not support pipeline parallelism in SGLang", field="--pp-size", hint="use --pp-size 1"
        )
    stages = ctx.rules.pp_layer_ranges(num_layers=geom.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
    best: DSV4Pools | None = None
    for rng in stages if ctx.budget > 0 else []:
        res = dsv4_pool_sizes(
            geometry=geom,
            budget_bytes=max(ctx.budget, 0),
            layout=layout,
            page_size=ctx.page_size,
            max_running_requests=ctx.max_running_requests,
            attn_dp_size=ctx.attn_dp,
            context_len=ctx.context_len,
            chunked_prefill_size=ctx.chunked_prefill_flag,
            radix_cache=f.radix_cache,
            overlap_schedule=f.overlap_schedule,
            swa_full_tokens_ratio=f.swa_full_tokens_ratio,
            speculative_num_draft_tokens=f.speculative_num_draft_tokens,
            stage_layers=rng if ctx.pp > 1 else None,
            speculative_num_steps=f.speculative_num_steps,
            draft_layers=f.speculative_draft_stages,
            release=ctx.release,
        )
        if best is None or res.full_tokens < best.full_tokens:
            best = res
    return best or _empty(layout, ctx.page_size, ctx.max_running_requests)


def _v3_bases(ctx: PoolContext, mrr: int) -> list[Basis]:
    """The DeepSeek-V3 basis the published record used, on the same budget (fp8 and bf16)."""
    bases = []
    for nb, label in ((1, "fp8"), (2, "bf16")):
        b = dsv4_naive_v3_bytes_per_token(kv_dtype_bytes=nb)
        t = ctx.rules.page_floor(tokens=max(ctx.budget, 0) // b, page_size=ctx.page_size)
        bases.append(
            Basis(
                name=f"DeepSeek-V3 MLA formula, {label} (61 x 576 x {nb} B)",
                kv_bytes_per_token=b,
                kv_pool_tokens=t,
                max_context_length=max(0, min(ctx.context_len - 1, t - 1)),
                max_concurrency=min(t // ctx.context_len, mrr) * ctx.dp if t else 0,
                note="the published record's basis; not what SGLang allocates for V4.x",
            )
        )
    return bases


def plan(ctx: PoolContext) -> PoolPlan:
    """The DeepSeek-V4 pools: the main layout SGLang selects, :func:`dsv4_pool_sizes` per PP stage (MIN), then
    ``--max-total-tokens`` and the request cap; the V3 formula is reported beside it as a basis."""
    geom = dsv4_geometry_from_config(ctx.config)
    layout = dsv4_select_layout(
        sm_major=ctx.sm_major,
        is_v41=geom.is_v41,
        kv_cache_dtype=ctx.kv_dtype,
        attn_tp_size=ctx.attn_tp,
        attention_backend=ctx.flags.dsv4_attn_backend,
    )
    res = _smallest_stage(ctx, geom, layout)
    tokens = res.full_tokens
    warnings = [n for n in res.notes if n.startswith("warning:")]
    cap = ctx.flags.max_total_tokens
    if cap is not None and cap < tokens:
        tokens = ctx.rules.page_floor(tokens=cap, page_size=ctx.page_size)
        warnings.append(f"pool capped at {tokens:,} tokens by --max-total-tokens")
    mrr, reduced = request_cap(ctx, tokens)
    cell = res.bytes_per_full_token
    return PoolPlan(
        tokens=tokens,
        cell=cell,
        layout=f"deepseek-v4 ({res.layout} rows, SWA {res.swa_mode} mode)",
        max_running_requests=mrr,
        reduced=reduced,
        kv_pool_bytes=sum(b for _, b in res.components),
        kv_slice_bytes=min(int(tokens * cell), max(ctx.budget, 0)),
        pools=[Pool(name=name, bytes=nbytes) for name, nbytes in res.components],
        fixed_bytes=res.fixed_bytes,
        fixed_note="sliding-window slots and compressor states",
        notes=[n for n in res.notes if not n.startswith("warning:")],
        warnings=warnings,
        bases=_v3_bases(ctx, mrr),
    )


def vector_group(ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """``kvplan sweep``'s DeepSeek-V4 pools over arrays: :func:`dsv4_pool_sizes` per PP stage with the same
    formulas (:func:`dsv4_swa_cap_tokens`, :func:`dsv4_fixed_bytes`, :func:`dsv4_full_tokens`,
    :func:`dsv4_ratio_swa_tokens`), the stage with the fewest full tokens, then :func:`plan`'s cap and request cap::

        mrr_w  = max(1, requested // attn_dp)            (requested: the row's, else the family default 256)
        fixed  = c128_state(mrr_w + 1) + c2_state(mrr_w + 1) + cap_tokens(mrr_w) * bytes_per_swa   (cap mode)
        full_s = the bounded padding search on max(budget - fixed, 0)    (refused: full <= 0, SWA pool too small)
        tokens = the first stage's with the fewest full tokens -> page_floor(max_total_tokens) where smaller
        mrr    = resolve_max_running_requests(tokens, ...); cell = that stage's bytes per full token
        budget <= 0: no pool (0 tokens, cell 0)

    The coefficients and the mode come from the group's context (the representative fit's) and do not depend on
    the numeric axes; the release's era (:func:`dsv4_era`) is the context's: 0.5.21 - 0.5.23 here, 0.5.12 - 0.5.20
    in :func:`kvplan.engines.sglang.pools.dsv4_legacy.legacy_vector_group`.  Example: the module docstring's
    V4.1-Flash at 8 GiB -> 4,670,208 full tokens.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``DSV4PoolConfigurator``;
    mem_cache/kv_cache_configurator.py ``resolve_max_num_reqs``, ``config_from_budget``, v0.5.23.
    """
    from kvplan.engines.sglang.pools.vector import VectorGroup, VectorPools, request_cap_of

    f = ctx.flags
    era = dsv4_era(ctx.release)
    if not era.paged:  # 0.5.12 - 0.5.20: the one-coefficient configurator
        from kvplan.engines.sglang.pools.dsv4_legacy import legacy_vector_group

        return legacy_vector_group(ctx, era=era, cell=cell)
    try:
        geom = dsv4_geometry_from_config(ctx.config)
        layout = dsv4_select_layout(
            sm_major=ctx.sm_major,
            is_v41=geom.is_v41,
            kv_cache_dtype=ctx.kv_dtype,
            attn_tp_size=ctx.attn_tp,
            attention_backend=f.dsv4_attn_backend,
        )
        if ctx.pp > 1 and geom.is_v41:
            return None
        ranges = ctx.rules.pp_layer_ranges(num_layers=geom.num_layers, pp_size=ctx.pp, partition=f.pp_layer_partition)
        setups = [
            _coefficients(
                era=era,
                geometry=geom,
                budget_bytes=1,
                layout=layout,
                page_size=ctx.page_size,
                max_running_requests=ctx.max_running_requests,
                attn_dp_size=ctx.attn_dp,
                context_len=ctx.context_len,
                chunked_prefill_size=ctx.chunked_prefill_flag,
                radix_cache=f.radix_cache,
                overlap_schedule=f.overlap_schedule,
                swa_full_tokens_ratio=f.swa_full_tokens_ratio,
                speculative_num_draft_tokens=f.speculative_num_draft_tokens,
                stage_layers=rng if ctx.pp > 1 else None,
                speculative_num_steps=f.speculative_num_steps,
                swa_prefix_tails=None,
                compressed_kv_layout="auto",
                index_page_size=DSV41_INDEX_PAGE_SIZE,
                family_mrr_default=DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
                disaggregation_decode=False,
                decode_extra_slots=0,
                swa_eviction_interval=SWA_EVICTION_INTERVAL,
            )[:4]
            for rng in ranges
        ]
    except InputError:
        return None
    if not setups or any(m.mrr_w_requested is None or bpf <= 0 for _, m, _, bpf in setups):
        return None
    page, dp = ctx.page_size, ctx.attn_dp

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        pos = budget > 0
        req = requested if requested is not None else DSV4_DEFAULT_MAX_RUNNING_REQUESTS
        mrr_w = vmax(1, req // dp)
        err: Any = False
        best: Any = None
        best_bpf: Any = 0.0
        for st, mode, bytes_per_swa, bpf in setups:
            cap = dsv4_swa_cap_tokens(mrr_w=mrr_w, **mode.cap_kw) if mode.cap_kw is not None else None
            fixed = dsv4_fixed_bytes(st, n_slots=mrr_w + 1, cap_tokens=cap, bytes_per_swa=bytes_per_swa)
            full = dsv4_full_tokens(st, avail=vmax(budget - fixed, 0), bpf=bpf)
            err = err | (full <= 0)
            if cap is None:
                swa = dsv4_ratio_swa_tokens(full=full, ratio=mode.swa_ratio, page_size=page)
                err = err | (st.g.sliding_window + page >= swa)
            if best is None:
                best, best_bpf = full, bpf
            else:
                take = full < best
                best, best_bpf = vwhere(take, full, best), vwhere(take, bpf, best_bpf)
        tokens = vwhere(pos, best, 0)
        if max_total_tokens is not None:
            capped = ctx.rules.page_floor(tokens=max_total_tokens, page_size=page)
            tokens = vwhere((max_total_tokens >= 0) & (max_total_tokens < tokens), capped, tokens)
        mrr = request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested)
        return VectorPools(tokens=tokens, cell=vwhere(pos, best_bpf, 0.0), mrr=mrr, error=err & pos)

    if cell and cell not in {bpf for _, _, _, bpf in setups}:
        return None
    return VectorGroup(family="dsv4", pools=pools, note=f"{layout} rows, {len(setups)} stage(s)")


#: ``kvplan show``: (SM major, attention TP) pairs priced at 10 GiB, 16 requests, chunk 2048
_SHOW_POINTS = ((9, 8), (10, 8), (10, 1), (12, 8))


def breakdown(m: ModelSpec) -> Breakdown:
    """``kvplan show``: the compression ratios and, per GPU generation, the layout, the SWA mode, both
    coefficients and the full tokens a 10 GiB budget holds (:func:`dsv4_pool_sizes`)."""
    g = dsv4_geometry_from_config(m.raw_config or m.config)
    ratios: dict[int, int] = {}
    for r in g.compress_ratios:
        ratios[r] = ratios.get(r, 0) + 1
    out = Breakdown(
        info=dict(
            compress_ratios=", ".join(f"ratio {r}: {n} layers" for r, n in sorted(ratios.items())),
            sliding_window=g.sliding_window,
            v41=g.is_v41,
        )
    )
    for sm_major, attn_tp in _SHOW_POINTS:
        layout = dsv4_select_layout(sm_major=sm_major, is_v41=g.is_v41, kv_cache_dtype="fp8_e4m3", attn_tp_size=attn_tp)
        res = dsv4_pool_sizes(
            geometry=g,
            budget_bytes=10 * 2**30,
            layout=layout,
            page_size=256,
            max_running_requests=16,
            context_len=min(m.context_length, 1 << 20),
            chunked_prefill_size=2048,
        )
        out.rows.append(
            {
                "gpu": f"SM{sm_major}x",
                "attention_tp": attn_tp,
                "layout": layout,
                "swa_mode": res.swa_mode,
                "bytes_per_full_token": res.bytes_per_full_token,
                "bytes_per_swa_token": res.bytes_per_swa_token,
                "full_tokens_per_10GiB": res.full_tokens,
            }
        )
    return out
