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

from kvplan.engines.sglang.pools.dsv4.eras import (
    DSV4_ERAS,
    DSV41_FIRST_RELEASE,
    DSV4Era,
    check_dsv4_release,
    dsv4_era,
)
from kvplan.engines.sglang.pools.dsv4.layout import (
    DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
    DSV4_DEFAULT_SWA_RATIO,
    DSV4_PAGE_SIZE,
    DSV41_INDEX_PAGE_SIZE,
    MAIN_LAYOUTS,
    compress_state_ring_size,
    compressed_layout,
    dsv4_select_layout,
    indexer_bytes_per_token,
    kv_bytes_per_row,
    layout_page_bytes,
)
from kvplan.engines.sglang.pools.dsv4.planner import (
    breakdown,
    plan,
)
from kvplan.engines.sglang.pools.dsv4.result import DSV4Pools
from kvplan.engines.sglang.pools.dsv4.sizing import (
    dsv4_pool_sizes,
)
from kvplan.engines.sglang.pools.dsv4.stage import (
    DSV4Flags,
    draft_swa_pool_bytes,
    dsv4_fixed_bytes,
    dsv4_full_tokens,
    dsv4_ratio_swa_tokens,
    dsv4_swa_cap_tokens,
)
from kvplan.engines.sglang.pools.dsv4.sweep import (
    vector_group,
)

__all__ = [
    "DSV4_DEFAULT_MAX_RUNNING_REQUESTS",
    "DSV4_DEFAULT_SWA_RATIO",
    "DSV4_ERAS",
    "DSV4_PAGE_SIZE",
    "DSV41_FIRST_RELEASE",
    "DSV41_INDEX_PAGE_SIZE",
    "MAIN_LAYOUTS",
    "DSV4Era",
    "DSV4Flags",
    "DSV4Pools",
    "breakdown",
    "check_dsv4_release",
    "compress_state_ring_size",
    "compressed_layout",
    "draft_swa_pool_bytes",
    "dsv4_era",
    "dsv4_fixed_bytes",
    "dsv4_full_tokens",
    "dsv4_pool_sizes",
    "dsv4_ratio_swa_tokens",
    "dsv4_select_layout",
    "dsv4_swa_cap_tokens",
    "indexer_bytes_per_token",
    "kv_bytes_per_row",
    "layout_page_bytes",
    "plan",
    "vector_group",
]
