"""DSA / NSA sparse-MLA geometry (DeepSeek-V3.2, GLM-5, GLM-5.2 ...): the MLA latent plus an indexer key.

What the config says: every layer keeps the MLA latent row (``kv_lora_rank`` + ``qk_rope_head_dim``,
:mod:`kvplan.geometry.mla`); layers that compute their own top-k also keep a lightning-indexer key of
``index_head_dim`` values, the others reuse the previous layer's top-k (``indexer_types``, ``index_topk_freq``,
``index_topk_pattern`` ... below).  How the row and the key are stored (fp8 with scales, bf16, per backend) is an
engine choice: :mod:`kvplan.engines.sglang.pools.dsa`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.readers import int_at_least

#: the config fields that say which DSA layers reuse the previous layer's top-k (read by :func:`dsa_skip_fields`)
DSA_SKIP_FIELDS: tuple[str, ...] = (
    "indexer_types",
    "cli_factor",
    "index_topk_pattern",
    "index_topk_freq",
    "index_skip_topk_offset",
)


def _positive_or_none(name: str, value: object) -> None:
    if value is not None and not int_at_least(value, 1):
        raise InputError(
            f"config field '{name}' must be a positive integer, got {value!r}",
            field="--model",
            hint="SGLang asserts it is > 0",
        )


def dsa_skip_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """The skip-top-k fields of a (flat) config as keyword arguments of :func:`dsa_indexer_layer_count`,
    validated as SGLang asserts them: ``cli_factor``, ``index_topk_freq`` and ``index_skip_topk_offset`` positive
    integers; ``indexer_types`` a list of strings; ``index_topk_pattern`` a string or a list of strings.

    Example: GLM-5.2 -> ``indexer_types`` (78 entries, 21 "full"), ``index_topk_freq`` 4,
    ``index_skip_topk_offset`` 3 (``indexer_types`` wins, the other two give the same layers).

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``dsa_layer_skips_topk``, v0.5.23.
    """
    out = {key: config.get(key) for key in DSA_SKIP_FIELDS}
    for key in ("cli_factor", "index_topk_freq", "index_skip_topk_offset"):
        _positive_or_none(key, out[key])
    for key in ("indexer_types", "index_topk_pattern"):
        v = out[key]
        ok = (
            v is None
            or (isinstance(v, list) and all(isinstance(x, str) for x in v))
            or (key == "index_topk_pattern" and isinstance(v, str))
        )
        if not ok:
            raise InputError(f"config field '{key}' must be a list of strings, got {v!r}", field="--model")
    return out


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
    A non-positive ``cli_factor`` / ``index_topk_freq`` / ``index_skip_topk_offset`` is an :class:`InputError`
    (SGLang asserts them positive).

    For ``glm_moe_dsa`` configs transformers 5.19 (``GlmMoeDsaConfig.__post_init__``) always fills
    ``indexer_types``, from ``index_topk_pattern`` or from freq/offset with offset 2 by default -- the same layers
    as the rule above (``max(l - 2 + 1, 0) == max(l - 1, 0)``), so reading the raw config gives SGLang's answer.

    Source: sgl-project/sglang python/sglang/srt/configs/model_config.py ``dsa_layer_skips_topk``, v0.5.23.
    """
    if indexer_types is not None:
        return 0 <= layer_id < len(indexer_types) and indexer_types[layer_id] == "shared"
    _positive_or_none("cli_factor", cli_factor)
    _positive_or_none("index_topk_freq", index_topk_freq)
    _positive_or_none("index_skip_topk_offset", index_skip_topk_offset)
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


__all__ = ["DSA_SKIP_FIELDS", "dsa_indexer_layer_count", "dsa_layer_skips_topk", "dsa_skip_fields"]
