"""DeepSeek-V4 family geometry (V4-Flash, V4-Pro, V4.1-Flash): compressed and sliding-window layers (engine-neutral).

What the config says: every decoder layer keeps a sliding-window KV (``sliding_window`` rows); a layer's
``compress_ratios`` entry r > 0 adds a compressed KV of one row per r tokens (r = 4 and 128 with an indexer key of
``index_head_dim``, r = 1 / 2 shared between the layers of one ``kv_source_layer_ids`` source); the latent is
``head_dim`` = nope + ``qk_rope_head_dim``.  How SGLang lays the rows out and sizes the pools (page padding,
compressor states, the SWA request cap) is :mod:`kvplan.engines.sglang.pools.dsv4`.

Sources for the config reading (sgl-project/sglang, v0.5.23): ``sglang/srt/configs/deepseek_v41.py``
``normalize_deepseek_v41_config`` (nested text/vision config flattened, top-level keys win;
:func:`kvplan.hfconfig.normalize.normalize_deepseek_v41_config`); ``sglang/srt/configs/model_config.py`` (qk_nope =
head_dim - rope, sliding window lookup order ``sliding_window_size`` / ``sliding_window`` / ``window_size``);
``sglang/srt/mem_cache/deepseek_v4_memory_pool.py`` ``collect_sources_by_ratio`` (which layers own storage).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.geometry.records import Record
from kvplan.hfconfig.normalize import normalize_deepseek_v41_config
from kvplan.hfconfig.readers import int_at_least, is_int

#: Compression ratios a DSV4-family layer may have (collect_sources_by_ratio rejects anything else).
DSV4_RATIOS = (0, 1, 2, 4, 128)


def dsv4_naive_v3_bytes_per_token(*, kv_dtype_bytes: int) -> int:
    """The published "DeepSeek-V3 basis" for comparison: ``61 * (512 + 64) * kv_dtype_bytes``.

    Example: fp8 (1 byte) -> 35,136 B/token; bf16 -> 70,272 B/token. Not an engine formula.
    """
    return 61 * (512 + 64) * kv_dtype_bytes


@dataclass(repr=False, eq=False)  # eq, repr: Record's (kvplan.geometry.records), written once, not generated
class DSV4Geometry(Record):
    """What a (flattened) DeepSeek-V4-family config says about the KV cache.

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
    dspark_block_size: int | None = None
    dspark_target_layer_ids: tuple[int, ...] | None = None
    bundles_dspark_draft: bool = False
    #: the config's whole ``compress_ratios`` list, trailing MTP / DSpark entries included (SGLang 0.5.12's
    #: configurator counts all of them; empty = the same as ``compress_ratios``)
    config_compress_ratios: tuple[int, ...] = ()

    @property
    def all_compress_ratios(self) -> tuple[int, ...]:
        """The config's whole ``compress_ratios`` list (V4-Flash: 44 entries, the last one the MTP layer's 0).

        Source: ``DSV4PoolConfigurator.__init__`` (model_executor/pool_configurator.py, SGLang 0.5.12:
        ``self.compression_ratios = cfg.compress_ratios``, not yet sliced to the stage).
        """
        return self.config_compress_ratios or self.compress_ratios

    @property
    def dspark_stages(self) -> int:
        """Decoder stages of a DSpark draft built from this config: ``len(dspark_target_layer_ids)`` when the config
        lists them, else ``num_nextn_predict_layers`` (at least 1).

        Source: ``models/deepseek_v4_dspark.py DeepseekV4ForCausalLMDSpark.__init__`` (``num_stages``) and
        ``model_runner_components/layer_setup.py _compute_model_num_layers`` (a draft worker's layer count is
        ``model.num_stages``), SGLang v0.5.23.  Example: V4.1-Flash (3 MTP slots, no target layer ids) -> 3.
        """
        if self.dspark_target_layer_ids:
            return len(self.dspark_target_layer_ids)
        return max(1, self.num_nextn_predict_layers)

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
                layers = tuple(i for i in sources if start <= i < end and self.compress_ratios[i] == ratio)
            else:
                layers = tuple(i for i in range(start, end) if self.compress_ratios[i] == ratio)
            if layers:
                out[ratio] = layers
        return out


def _int_field(values: Mapping[str, Any], name: str, *, default: int | None = None, minimum: int = 0) -> int:
    raw = values.get(name, default)
    if raw is None:
        raise InputError(f"missing required field {name!r} in the DeepSeek-V4 config", field=name)
    if not int_at_least(raw, minimum):
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
    is_v41 = model_type == "deepseek_v41" or text_type.startswith("deepseek_v41") or "DeepseekV41ForCausalLM" in archs
    known = {
        "DeepseekV4ForCausalLM",
        "DeepseekV41ForCausalLM",
        "DeepseekV4ForCausalLMNextN",
        "DeepseekV4ForCausalLMDSpark",
    }
    if archs and not (set(archs) & known):
        raise InputError(f"not a DeepSeek-V4 family architecture: {archs}", field="architectures")
    values = normalize_deepseek_v41_config(cfg)

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
    for idx, r in enumerate(ratios_raw):
        if isinstance(r, bool) or r not in DSV4_RATIOS:
            raise InputError(f"compress_ratios[{idx}] = {r!r} is not one of {DSV4_RATIOS}", field="compress_ratios")

    sources_raw = values.get("kv_source_layer_ids")
    sources: tuple[int, ...] | None
    if sources_raw is None:
        sources = None
    else:
        if not isinstance(sources_raw, (list, tuple)):
            raise InputError("kv_source_layer_ids must be a list of layer ids", field="kv_source_layer_ids")
        for s in sources_raw:
            if not is_int(s) or not 0 <= s < num_layers:
                raise InputError(
                    f"kv_source_layer_ids entry {s!r} is not a layer id < {num_layers}", field="kv_source_layer_ids"
                )
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
    block, targets, bundles = _dspark_fields(values, num_layers)
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
        dspark_block_size=block,
        dspark_target_layer_ids=targets,
        bundles_dspark_draft=bundles,
        config_compress_ratios=tuple(ratios_raw) if len(ratios_raw) > num_layers else (),
    )


#: ``speculative/dspark_components/dspark_config.py checkpoint_bundles_dspark_draft`` (SGLang v0.5.23): any of these
#: keys on the target config marks a DSpark draft bundled in the target checkpoint.
DSPARK_BUNDLE_KEYS = ("dspark_block_size", "dspark_markov_rank", "dspark_noise_token_id", "dspark_target_layer_ids")


def _dspark_fields(values: Mapping[str, Any], num_layers: int) -> tuple[int | None, tuple[int, ...] | None, bool]:
    """(``dspark_block_size``, ``dspark_target_layer_ids``, whether the checkpoint bundles a DSpark draft).

    Source: ``dspark_config.py parse_dspark_draft_config`` (the block size must be a positive int, the target layer
    ids a non-empty list of ints) and ``checkpoint_bundles_dspark_draft``, SGLang v0.5.23.
    """
    bundles = any(values.get(k) is not None for k in DSPARK_BUNDLE_KEYS)
    block = values.get("dspark_block_size")
    if block is not None:
        block = _int_field({"dspark_block_size": block}, "dspark_block_size", minimum=1)
    raw = values.get("dspark_target_layer_ids")
    targets: tuple[int, ...] | None = None
    if raw is not None:
        if not isinstance(raw, (list, tuple)) or not raw:
            raise InputError(
                "dspark_target_layer_ids must be a non-empty list of layer ids", field="dspark_target_layer_ids"
            )
        for t in raw:
            if not is_int(t) or not 0 <= t < num_layers:
                raise InputError(
                    f"dspark_target_layer_ids entry {t!r} is not a layer id < {num_layers}",
                    field="dspark_target_layer_ids",
                )
        targets = tuple(raw)
    return block, targets, bundles
