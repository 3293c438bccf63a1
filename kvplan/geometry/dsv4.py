"""DeepSeek-V4 family KV pool (V4-Flash, V4-Pro, V4.1-Flash) as SGLang 0.5.23 sizes it.

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
    speculative     : bytes_per_full, bytes_per_swa *= (L_stage + 1) / L_stage
    fixed           = c128_state(mrr_w) + c2_state(mrr_w) + cap_tokens * bytes_per_swa (cap mode)
    full            = page_floor(int((budget - fixed) / bytes_per_full)); step down one page while
                      full * bytes_per_full + low_ratio_padding(full) > budget - fixed
    swa             = cap_tokens (cap mode) | page_floor(int(full * ratio)) (ratio mode)
    mrr (scheduler) = min(max(1, R // attn_dp), full // 2)

Worked example (V4.1-Flash, SM120 -> layout v4, page 256, mrr 16, cps 2048, radix + overlap on, 8 GiB budget):
bytes_per_full = 3*(585+68)/2 + (585+68) = 1632.5; swa cap = ceil256(768*16 + 2*2048 + 256 + 64*(128+256)) =
41,216 slots x 40*585 B = 964,454,400 B fixed; pair state 3 * 38 rows * 4096 B = 466,944 B; full =
page_floor(7,625,013,248 / 1632.5) = 4,670,720, minus two pages for the ratio-1/2 reserved pages -> 4,670,208.

Not modelled: the HIP ``unified_kv_triton`` pool, NPU pools (page 128), HiSparse c4 shrink, encoder SWA
bounded replay (``--enable-encoder-swa-bounded-replay``), online c128 compression, a bf16 compress state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import InputError

# ----------------------------------------------------------------------------------------------------------
# Constants read in the engine (SGLang 0.5.23)
# ----------------------------------------------------------------------------------------------------------

#: Compression ratios a DSV4-family layer may have (collect_sources_by_ratio rejects anything else).
DSV4_RATIOS = (0, 1, 2, 4, 128)
#: model_overrides/deepseek_v4.py: page_size 256 on CUDA (kv_cache_configurator._build_dsv4_kv_pool asserts it).
DSV4_PAGE_SIZE = 256
#: deepseek_v4_hook.apply_deepseek_v4_defaults: max_running_requests := 256 when the user leaves it unset.
DSV4_DEFAULT_MAX_RUNNING_REQUESTS = 256
#: pool_configurator.DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO (also the V4 model override value).
DSV4_DEFAULT_SWA_RATIO = 0.1
#: environ.SGLANG_SWA_EVICTION_INTERVAL default.
SWA_EVICTION_INTERVAL = 128
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


def _ceil_align(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


def layout_page_bytes(*, layout: str, page_tokens: int) -> int:
    """Bytes of one page of ``page_tokens`` rows: ``ceil(page_tokens * bpt / align) * align``.

    Source: ``KVLayout.page_bytes`` (sglang/kernels/ops/attention/dsv4/kv_layout.py, v0.5.23).
    Example: V4 at 256 rows -> ceil(149,504 / 576) * 576 = 149,760 B (585.0 B/row); V4 at 2 rows (a c128
    page) -> ceil(1,168 / 576) * 576 = 1,728 B (864.0 B/row).
    """
    if layout not in _LAYOUT_BYTES:
        raise InputError(f"unknown DSV4 KV layout {layout!r}", field="layout", hint=f"one of {sorted(_LAYOUT_BYTES)}")
    bpt, align = _LAYOUT_BYTES[layout]
    return _ceil_align(page_tokens * bpt, align)


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


def dsv4_naive_v3_bytes_per_token(*, kv_dtype_bytes: int) -> int:
    """The published "DeepSeek-V3 basis" for comparison: ``61 * (512 + 64) * kv_dtype_bytes``.

    Example: fp8 (1 byte) -> 35,136 B/token; bf16 -> 70,272 B/token. Not an engine formula.
    """
    return 61 * (512 + 64) * kv_dtype_bytes


# ----------------------------------------------------------------------------------------------------------
# Geometry
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DSV4Geometry:
    """What SGLang reads from a (flattened) DeepSeek-V4-family config.

    ``compress_ratios`` holds one entry per decoder layer; trailing MTP / DSpark entries are dropped (the
    engine slices ``compress_ratios[start_layer:end_layer]`` of the target stage).
    """

    num_layers: int
    compress_ratios: tuple[int, ...]
    kv_source_layer_ids: tuple[int, ...] | None
    sliding_window: int
    index_head_dim: int
    head_dim: int
    qk_rope_head_dim: int
    is_v41: bool
    num_nextn_predict_layers: int

    @property
    def qk_nope_head_dim(self) -> int:
        """``head_dim - qk_rope_head_dim`` (configs/model_config.py, DeepseekV4 branch)."""
        return self.head_dim - self.qk_rope_head_dim

    def owner_layers(self, stage_layers: tuple[int, int] | None = None) -> dict[int, tuple[int, ...]]:
        """Layers of the stage that own compressed storage, per ratio, in the engine's order (4, 128, 1, 2).

        Source: ``collect_sources_by_ratio`` (deepseek_v4_memory_pool.py, v0.5.23): every ratio-4/128 layer;
        among ratio-1/2 layers only the ``kv_source_layer_ids`` (the others read the nearest earlier source).
        """
        start, end = stage_layers or (0, self.num_layers)
        sources = self.kv_source_layer_ids or ()
        out: dict[int, tuple[int, ...]] = {}
        for ratio in (4, 128, 1, 2):
            if ratio in (1, 2):
                layers = tuple(l for l in sources if start <= l < end and self.compress_ratios[l] == ratio)
            else:
                layers = tuple(l for l in range(start, end) if self.compress_ratios[l] == ratio)
            if layers:
                out[ratio] = layers
        return out


def _flatten_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten a nested V4.1 config the way ``normalize_deepseek_v41_config`` does (top-level keys win)."""
    values = dict(cfg)
    text = values.pop("text_config", None)
    vision = values.pop("vision_config", None)
    if text is not None:
        if not isinstance(text, Mapping):
            raise InputError("text_config must be a table/object", field="text_config")
        text = {k: v for k, v in text.items() if k != "model_type"}
        values = {**text, **values}
    if isinstance(vision, Mapping) and "num_hidden_layers" in vision:
        values.setdefault("vision_n_layers", vision["num_hidden_layers"])
    return values


def _int_field(values: Mapping[str, Any], name: str, *, default: int | None = None, minimum: int = 0) -> int:
    raw = values.get(name, default)
    if raw is None:
        raise InputError(f"missing required field {name!r} in the DeepSeek-V4 config", field=name)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {raw!r}", field=name)
    return raw


def dsv4_geometry_from_config(cfg: Mapping[str, Any]) -> DSV4Geometry:
    """Read a DSV4-family HF config (flat V4, or nested ``text_config``/``vision_config`` V4.1).

    Mirrors ``normalize_deepseek_v41_config`` (configs/deepseek_v41.py) and the DeepseekV4 branch of
    ``ModelConfig`` (configs/model_config.py), SGLang v0.5.23. Raises :class:`InputError` naming the field
    when a required field is missing or inconsistent.

    Example: the V4-Flash config.json -> 43 layers, ratios ``[0, 0, 4, 128, ..., 4]`` (the 44th, MTP, entry
    dropped), window 128, head_dim 512, rope 64, index_head_dim 128, not V4.1.
    """
    if not isinstance(cfg, Mapping):
        raise InputError("config must be a mapping (parsed config.json)", field="config")
    archs = cfg.get("architectures") or []
    model_type = str(cfg.get("model_type") or "")
    text_cfg = cfg.get("text_config")
    text_type = str(text_cfg.get("model_type") or "") if isinstance(text_cfg, Mapping) else ""
    is_v41 = (
        model_type == "deepseek_v41"
        or text_type.startswith("deepseek_v41")
        or "DeepseekV41ForCausalLM" in archs
    )
    known = {"DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM", "DeepseekV4ForCausalLMNextN",
             "DeepseekV4ForCausalLMDSpark"}
    if archs and not (set(archs) & known):
        raise InputError(f"not a DeepSeek-V4 family architecture: {archs}", field="architectures")
    values = _flatten_config(cfg)

    num_layers = _int_field(values, "num_hidden_layers", minimum=1)
    ratios_raw = values.get("compress_ratios")
    if not isinstance(ratios_raw, (list, tuple)) or not ratios_raw:
        raise InputError("missing or empty compress_ratios (one entry per decoder layer)", field="compress_ratios")
    if len(ratios_raw) < num_layers:
        raise InputError(
            f"compress_ratios has {len(ratios_raw)} entries, fewer than num_hidden_layers={num_layers}",
            field="compress_ratios",
        )
    ratios = tuple(ratios_raw[:num_layers])
    for idx, r in enumerate(ratios):
        if isinstance(r, bool) or r not in DSV4_RATIOS:
            raise InputError(
                f"compress_ratios[{idx}] = {r!r} is not one of {DSV4_RATIOS}", field="compress_ratios"
            )

    sources_raw = values.get("kv_source_layer_ids")
    sources: tuple[int, ...] | None
    if sources_raw is None:
        sources = None
    else:
        if not isinstance(sources_raw, (list, tuple)):
            raise InputError("kv_source_layer_ids must be a list of layer ids", field="kv_source_layer_ids")
        for s in sources_raw:
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < num_layers:
                raise InputError(f"kv_source_layer_ids entry {s!r} is not a layer id < {num_layers}",
                                 field="kv_source_layer_ids")
        sources = tuple(sources_raw)
    # DeepSeekV4TokenToKVPool.source_layer_of asserts every ratio-1/2 layer has an earlier (or own) source.
    for idx, r in enumerate(ratios):
        if r in (1, 2) and not any(s <= idx and ratios[s] == r for s in (sources or ())):
            raise InputError(
                f"layer {idx} has compress ratio {r} but no kv_source layer of that ratio at or before it",
                field="kv_source_layer_ids",
            )

    window = None
    for key in ("sliding_window_size", "sliding_window", "window_size"):  # ModelConfig._get_sliding_window_size
        if values.get(key) is not None:
            window = values[key]
            break
    if window is None:
        raise InputError("missing sliding_window (DSV4 layers keep a sliding-window KV)", field="sliding_window")
    window = _int_field({"sliding_window": window}, "sliding_window", minimum=1)

    head_dim = _int_field(values, "head_dim", minimum=1)
    rope = _int_field(values, "qk_rope_head_dim", minimum=0)
    if rope >= head_dim:
        raise InputError(f"qk_rope_head_dim={rope} must be smaller than head_dim={head_dim}", field="qk_rope_head_dim")
    index_head_dim = _int_field(values, "index_head_dim", minimum=1)
    nextn = _int_field(values, "num_nextn_predict_layers", default=0)
    return DSV4Geometry(
        num_layers=num_layers,
        compress_ratios=ratios,
        kv_source_layer_ids=sources,
        sliding_window=window,
        index_head_dim=index_head_dim,
        head_dim=head_dim,
        qk_rope_head_dim=rope,
        is_v41=is_v41,
        num_nextn_predict_layers=nextn,
    )


# ----------------------------------------------------------------------------------------------------------
# Layout selection
# ----------------------------------------------------------------------------------------------------------


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
            field="--kv-cache-dtype", hint="use --kv-cache-dtype fp8_e4m3 (or auto)",
        )
    else:
        raise InputError(f"kv_cache_dtype {kv_cache_dtype!r} is not supported for DeepSeek-V4",
                         field="--kv-cache-dtype", hint="use fp8_e4m3 (or auto)")
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
        raise InputError(f"unknown --dsv4-attn-backend {attention_backend!r}", field="attention_backend",
                         hint="auto, flashmla, flashmla_mega or trtllm")
    if backend == "flashmla_mega" and not (is_v41 and is_sm100):
        raise InputError("--dsv4-attn-backend flashmla_mega requires DeepSeek-V4.1 on SM100/SM103",
                         field="attention_backend")
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


def _swa_request_cap(
    *,
    page_size: int,
    window: int,
    mrr_per_rank: int,
    chunked_prefill_size: int,
    overlap_schedule: bool,
    num_draft_tokens: int,
    num_steps: int,
    disagg_decode: bool,
    decode_extra_slots: int,
    eviction_interval: int,
) -> int:
    """``compute_swa_request_cap`` (pool_configurator.py, v0.5.23), EAGLE/DSpark topk 1 only."""
    draft = num_draft_tokens if num_draft_tokens > 0 else 1
    trailing = window + max(1, eviction_interval) * draft + page_size
    if num_draft_tokens <= 0:
        decode_alloc = page_size
    elif not overlap_schedule:  # spec-v1: spec_decode_alloc_len_per_request, topk 1, page > 1
        decode_alloc = max(_ceil_align(max(num_steps, 1), page_size), _ceil_align(num_draft_tokens, page_size))
    else:  # spec-v2: 2 * get_alloc_len_per_decode() = 2 * max(steps * topk, draft tokens)
        decode_alloc = 2 * max(num_steps, num_draft_tokens)
    per_request = trailing + decode_alloc
    if disagg_decode:
        return per_request * mrr_per_rank + (window + page_size) * decode_extra_slots
    chunks_in_flight = 2 if overlap_schedule else 1
    return per_request * mrr_per_rank + chunks_in_flight * chunked_prefill_size + page_size


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
) -> DSV4Pools:
    """Size the DSV4 pools from a KV byte budget, as ``DSV4PoolConfigurator.calculate_pool_sizes`` does.

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
    cap uses the draft tokens. ``stage_layers=(start, end)`` restricts to one PP stage.

    Worked example: see the module docstring (V4.1-Flash, 8 GiB -> 4,670,208 full tokens, 41,216 SWA slots).
    """
    g = geometry
    notes: list[str] = []
    if page_size != DSV4_PAGE_SIZE:
        raise InputError(
            f"page_size={page_size}: SGLang forces 256 for DeepSeek-V4 on CUDA "
            "(kv_cache_configurator._build_dsv4_kv_pool asserts it)", field="page_size",
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
        raise InputError(f"KV budget is {budget_bytes} B; nothing left for the pool", field="mem_fraction_static",
                         hint="raise --mem-fraction-static or use more/larger GPUs")
    if attn_dp_size < 1:
        raise InputError("attn_dp_size must be >= 1", field="attn_dp_size")
    if context_len <= 0:
        raise InputError("context_len must be positive", field="context_len")

    start, end = stage_layers or (0, g.num_layers)
    if not 0 <= start < end <= g.num_layers:
        raise InputError(f"stage_layers {stage_layers} outside [0, {g.num_layers})", field="stage_layers")
    n_stage = end - start
    if g.is_v41 and (start, end) != (0, g.num_layers):
        # deepseek_v4_hook.validate_deepseek_v41_features refuses pipeline parallelism for V4.1
        raise InputError("DeepSeek-V4.1 does not support pipeline parallelism in SGLang 0.5.23", field="pp_size")
    owners = g.owner_layers((start, end))
    n_owner = {r: len(ls) for r, ls in owners.items()}
    stage_ratios = g.compress_ratios[start:end]
    for idx in range(start, end):  # source_layer_of asserts a source inside the stage
        r = g.compress_ratios[idx]
        if r in (1, 2) and not any(s <= idx for s in owners.get(r, ())):
            raise InputError(f"layer {idx} (ratio {r}) has no kv_source layer inside PP stage [{start}, {end})",
                             field="stage_layers")

    spec = speculative_num_draft_tokens > 0
    drafts = max(0, speculative_num_draft_tokens)
    steps = speculative_num_steps if speculative_num_steps is not None else max(1, drafts - 1)
    rings = {r: compress_state_ring_size(ratio=r, num_draft_tokens=drafts) for r in owners if r != 1}
    if spec:
        for r in (4, 128):  # _assert_ring_serves_draft_tokens
            if r in rings:
                window_rows = r * (2 if r == 4 else 1)
                pad = rings[r] - window_rows + 2 if rings[r] > window_rows else 0
                if drafts > pad:
                    raise InputError(
                        f"speculative_num_draft_tokens={drafts} exceeds what the c{r} ring (size {rings[r]}) serves ({pad})",
                        field="speculative_num_draft_tokens",
                    )

    # --- per-row prices --------------------------------------------------------------------------------
    kvb = {r: kv_bytes_per_row(layout=layout, ratio=r, page_size=page_size, option=compressed_kv_layout)
           for r in (0, 1, 2, 4, 128)}
    latent = g.head_dim  # attn_head_dim = qk_nope + rope
    state_dt = 4  # SGLANG_DSV4_COMPRESS_STATE_DTYPE float32
    c4_idx = indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=False)
    low_idx = indexer_bytes_per_token(index_head_dim=g.index_head_dim, fp4=True)

    bytes_per_swa = kvb[0] * n_stage + (
        rings.get(4, 0) / page_size * (2 * 2 * latent * state_dt + 2 * 2 * g.index_head_dim * state_dt) * n_owner.get(4, 0)
    )

    def comp(r: int) -> float:
        if r in (1, 2):
            return (kvb[r] + low_idx) / r
        if r == 4:
            return 1 / 4 * kvb[4] + 1 / 4 * c4_idx
        return 1 / 128 * kvb[128]

    # --- request cap ----------------------------------------------------------------------------------------
    requested = max_running_requests if max_running_requests is not None else family_mrr_default
    mrr_w_requested = max(1, requested // attn_dp_size) if requested is not None else None
    cps = chunked_prefill_size // attn_dp_size if chunked_prefill_size and chunked_prefill_size > 0 else 0
    if max_running_requests is None and family_mrr_default is not None:
        notes.append(f"max_running_requests unset -> {family_mrr_default} (deepseek_v4_hook.apply_deepseek_v4_defaults)")

    # --- SWA mode -------------------------------------------------------------------------------------------
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
    if operator_ratio is None and mrr_w_requested is not None and (disaggregation_decode or cps > 0):
        cap = _swa_request_cap(
            page_size=page_size, window=g.sliding_window, mrr_per_rank=mrr_w_requested,
            chunked_prefill_size=cps, overlap_schedule=overlap_schedule, num_draft_tokens=drafts,
            num_steps=steps, disagg_decode=disaggregation_decode, decode_extra_slots=decode_extra_slots,
            eviction_interval=swa_eviction_interval,
        )
        cap_tokens = _ceil_align(cap + tails * (g.sliding_window + page_size), page_size)
    swa_ratio = operator_ratio if operator_ratio is not None else DSV4_DEFAULT_SWA_RATIO
    swa_mode = "cap" if cap_tokens is not None else "ratio"
    if swa_mode == "ratio" and operator_ratio is None:
        notes.append("V4.1 ratio mode at the configurator default 0.1 (cap mode needs mrr and chunked prefill)")

    # --- coefficients (same float order as the engine) --------------------------------------------------
    bpf = (0 if cap_tokens is not None else swa_ratio) * bytes_per_swa + sum(
        comp(r) * len(ls) for r, ls in owners.items()
    )
    infl = 1.0
    if spec:
        infl = (n_stage + 1) / n_stage
        bpf *= infl
        bytes_per_swa *= infl
        notes.append(f"speculative: coefficients x ({n_stage}+1)/{n_stage} for the draft worker")

    # --- request-scoped fixed bytes ------------------------------------------------------------------------
    if mrr_w_requested is not None:
        mrr_w = mrr_w_requested
    else:  # _resolve_max_running_requests_per_worker fallback
        est_full = int(budget_bytes / bpf)
        est = max(min(int(est_full / context_len * 512), 4096), 2048)
        mrr_w = min(est, est_full // 2)
    slots = mrr_w + 1 + (decode_extra_slots if disaggregation_decode else 0)

    def c128_state(n_slots: int) -> int:
        if not n_owner.get(128):
            return 0
        rows = _ceil_align(n_slots * rings[128] + rings[128] + 1, 128)
        return rows * 2 * latent * state_dt * n_owner[128]

    def c2_state(n_slots: int) -> int:
        if not n_owner.get(2):
            return 0
        rows = _ceil_align(n_slots * rings[2] + rings[2] + 1, 2)
        return rows * 2 * latent * 4 * n_owner[2]

    c128_fixed = c128_state(slots)
    c2_fixed = c2_state(slots)
    swa_fixed = cap_tokens * bytes_per_swa if cap_tokens is not None else 0
    fixed = c128_fixed + c2_fixed + swa_fixed
    avail = max(budget_bytes - fixed, 0)

    def padding(full: int) -> float:
        if layout == "uniform_fp8":
            return 0
        total = 0.0
        for r in (1, 2):
            n = n_owner.get(r, 0)
            if not n:
                continue
            main = page_size * kvb[r]
            index_size = (full + page_size) // r
            index_slots = _ceil_div(index_size + index_page_size, index_page_size) * index_page_size
            total += (main + (index_slots - full // r) * low_idx) * n
        return total

    full = int(avail / bpf)
    full = full // page_size * page_size
    while full > 0 and full * bpf + padding(full) > avail:
        full -= page_size
    if full <= 0:
        if cap_tokens is not None:
            raise InputError(
                f"the DSV4 SWA pool cap ({cap_tokens} tokens, {swa_fixed / 2**30:.2f} GiB) leaves no room for the "
                f"full KV pool within {budget_bytes / 2**30:.2f} GiB",
                field="max_running_requests",
                hint="reduce --max-running-requests or --swa-prefix-tails, or raise --mem-fraction-static",
            )
        raise InputError("Not enough memory for the DeepSeek-V4 KV pool", field="mem_fraction_static",
                         hint="increase --mem-fraction-static")
    pad_at_full = padding(full)
    budgeted = full * bpf + pad_at_full + fixed
    if max_total_tokens is not None and max_total_tokens < full:
        # config_from_budget -> calculate_pool_sizes_from_max_tokens: fixed pools are not re-subtracted.
        full = max_total_tokens // page_size * page_size
        notes.append(f"--max-total-tokens caps the full pool at {full}")
        if full <= 0:
            raise InputError("max_total_tokens leaves no full page", field="max_total_tokens")

    if cap_tokens is not None:
        swa = cap_tokens
    else:
        swa = int(full * swa_ratio) // page_size * page_size
        if g.sliding_window + page_size >= swa:  # validate_swa_pool_size
            raise InputError(
                f"SWA pool ({swa} tokens) cannot hold even one request: the prefill floor is window "
                f"({g.sliding_window}) + page ({page_size})", field="swa_full_tokens_ratio",
                hint="increase --swa-full-tokens-ratio or the KV budget",
            )

    c4_tokens = full // 4
    c128_tokens = full // 128
    c4_state_pool = swa // page_size * rings.get(4, 0)
    if mrr_w_requested is not None:
        final_mrr = min(mrr_w, full // 2)
    else:  # resolve_max_num_reqs without a request cap: estimate from the final token count
        final_mrr = min(max(min(int(full / context_len * 512), 4096), 2048), full // 2)
    if final_mrr < mrr_w:
        notes.append(f"max_running_requests reduced from {mrr_w} to {final_mrr} (tokens // 2)")

    # --- allocation per pool (target worker; DeepSeekV4TokenToKVPool) ---------------------------------------
    def pages(size: int, page_rows: int, global_page: int) -> int:  # _num_dsv4_physical_kv_pages
        return _ceil_div(size + global_page, page_rows)

    comps: list[tuple[str, int]] = []
    swa_page_bytes = 512 * page_size if layout == "uniform_fp8" else layout_page_bytes(layout=layout, page_tokens=page_size)
    comps.append((f"swa_kv ({n_stage} layers)", n_stage * pages(swa, page_size, page_size) * swa_page_bytes))
    model_ratios = set(g.compress_ratios)
    for r in (4, 128):
        if r not in model_ratios:
            continue
        n = stage_ratios.count(r)
        size = c4_tokens if r == 4 else c128_tokens
        rows = page_size // r
        pb = 512 * rows if layout == "uniform_fp8" else layout_page_bytes(
            layout=compressed_layout(main_layout=layout, ratio=r, option=compressed_kv_layout), page_tokens=rows)
        comps.append((f"c{r}_kv ({n} layers)", n * pages(size, rows, page_size) * pb))
        if r == 4:
            idx_size = c128_tokens * 32  # c4_logical_size
            comps.append((f"c4_indexer_k ({n} layers)", n * pages(idx_size, rows, page_size) * rows * c4_idx))
    for r in (1, 2):
        n = n_owner.get(r, 0)
        if not n:
            continue
        rows = page_size // r
        pb = 512 * rows if layout == "uniform_fp8" else layout_page_bytes(
            layout=compressed_layout(main_layout=layout, ratio=r, option=compressed_kv_layout), page_tokens=rows)
        comps.append((f"c{r}_kv ({n} kv_source layers)", n * pages(full // r, rows, page_size) * pb))
        idx_size = (full + page_size) // r
        comps.append((f"c{r}_indexer_k fp4 ({n} kv_source layers)",
                      n * pages(idx_size, index_page_size, index_page_size) * index_page_size * low_idx))
    if n_owner.get(4):
        rows4 = _ceil_align(c4_state_pool + rings[4] + 1, 4)
        comps.append((f"c4_state fp32 ({n_owner[4]} layers)", n_owner[4] * rows4 * 4 * latent * state_dt))
        comps.append((f"c4_indexer_state fp32 ({n_owner[4]} layers)",
                      n_owner[4] * rows4 * 4 * g.index_head_dim * state_dt))
    alloc_slots = final_mrr + 1 + (decode_extra_slots if disaggregation_decode else 0)
    if n_owner.get(128):
        comps.append((f"c128_state fp32 ({n_owner[128]} layers)", c128_state(alloc_slots)))
    if n_owner.get(2):
        comps.append((f"c2_pair_state fp32 ({n_owner[2]} layers)", c2_state(alloc_slots)))
    if spec:
        target_share = budgeted / infl
        comps.append(("draft_worker_reserve (budgeted, (L+1)/L)", int(budgeted - target_share)))

    notes.append(f"layout {layout}: SWA row {kvb[0]:g} B/layer, c4 {kvb[4]:g}, c128 {kvb[128]:g}, "
                 f"ratio-1/2 {kvb[1]:g}/{kvb[2]:g} B/row")

    return DSV4Pools(
        full_tokens=full,
        swa_tokens=swa,
        c4_tokens=c4_tokens,
        c128_tokens=c128_tokens,
        bytes_per_full_token=bpf,
        bytes_per_swa_token=bytes_per_swa,
        fixed_bytes=int(fixed),
        swa_mode=swa_mode,
        layout=layout,
        page_size=page_size,
        max_running_requests=final_mrr,
        components=tuple(comps),
        notes=tuple(notes),
        budget_mrr=mrr_w,
        swa_cap_tokens=cap_tokens,
        swa_prefix_tails=tails if cap_tokens is not None else 0,
        swa_full_tokens_ratio=swa_ratio if cap_tokens is None else None,
        c128_state_bytes=c128_fixed,
        c2_state_bytes=c2_fixed,
        swa_fixed_bytes=int(swa_fixed),
        low_ratio_padding_bytes=pad_at_full,
        budgeted_bytes=budgeted,
        c4_state_pool_size=c4_state_pool,
        ring_sizes=tuple(sorted(rings.items())),
        owner_layers=tuple(owners.items()),
    )
