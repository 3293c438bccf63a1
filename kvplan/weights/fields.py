"""The config fields the weight estimate reads: checked up front, then read through typed accessors.

A config the estimate cannot use is a user mistake: :func:`check_weight_config` (called first by
:func:`kvplan.weights.inventory.inventory`) and the accessors below raise one :class:`~kvplan.errors.InputError`
naming the field (exit 2).  Nothing here catches exceptions: an error in kvplan's own arithmetic stays a bug and
reaches the internal-error path (exit 1).

Up front: :func:`kvplan.hfconfig.checks.check_geometry` (the geometry integers with bounds, the per-layer lists,
``quantization_config`` an object), then the fields only the weight walk reads (:data:`WEIGHT_INT_FIELDS`,
``engram_num_embeddings``, ``compress_ratios`` entries, ``vision_config``, ignore-list regular expressions).  A
field that only some layer kinds need (``intermediate_size`` for dense MLP layers, ``qk_nope_head_dim`` for MLA
...) is checked where it is read: :func:`need_int` names it when it is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.checks import check_geometry
from kvplan.hfconfig.readers import int_at_least, is_int

__all__ = ["REQUIRED", "WEIGHT_INT_FIELDS", "bad_field", "check_weight_config", "first_int", "need_int", "opt_int"]

_MAX_DIM = 1 << 24
_MAX_ROWS = 1 << 40  # engram tables hold ~4e8 rows

#: read by every estimate; a missing one is ``"<key>: config.json has no <key>"``
REQUIRED = ("hidden_size", "num_hidden_layers", "vocab_size")

#: integer fields only the weight walk reads (check_geometry bounds the shared geometry ones): (min, max)
WEIGHT_INT_FIELDS: dict[str, tuple[int, int]] = {
    "hc_mult": (0, 64),
    "engram_head_dim": (0, _MAX_DIM),
    "moe_shared_expert_intermediate_size": (0, _MAX_DIM),
    "engram_max_ngram_size": (0, 64),
    "engram_n_heads": (0, 4096),
    "mtp_num_hidden_layers": (0, 64),
    "moe_num_experts": (0, 1 << 16),
    "moe_num_shared_experts": (0, 1 << 16),
    "moe_layer_interval": (1, 4096),
    # ERNIE-4.5 MoE layer range; both engines read -1 literally (no layer is >= 0 and <= -1)
    "moe_layer_start_index": (-1, 1 << 16),
    "moe_layer_end_index": (-1, 1 << 16),
}

#: vision_config integers the generic ViT count reads: (min, max)
VISION_INT_FIELDS: dict[str, tuple[int, int]] = {
    "hidden_size": (0, _MAX_DIM),
    "vt_hidden_size": (0, _MAX_DIM),
    "num_hidden_layers": (0, 4096),
    "vt_num_hidden_layers": (0, 4096),
    "intermediate_size": (0, _MAX_DIM),
    "vt_intermediate_size": (0, _MAX_DIM),
    "patch_size": (0, 1 << 16),
    "image_size": (0, 1 << 20),
}

#: the quantization-config keys that list modules left unquantized (one declaration: kvplan.weights.quant reads it)
PATTERN_KEYS = ("ignore", "modules_to_not_convert", "ignored_layers", "exclude_modules")


def bad_field(key: str, what: str) -> InputError:
    """The InputError for a config field of the wrong kind: ``--model: config field 'KEY' WHAT``."""
    return InputError(f"config field '{key}' {what}", field="--model", hint="pass a Hugging Face config.json")


def _missing(key: str) -> InputError:
    return InputError(
        f"config.json has no '{key}', which the weight estimate reads for this model's layers",
        field="--model",
        hint="pass a complete Hugging Face config.json",
    )


def _as_int(key: str, v: Any, minimum: int) -> int:
    if not int_at_least(v, minimum):
        raise bad_field(key, f"must be an integer >= {minimum}, got {str(v)[:40]!r}")
    return int(v)


def need_int(cfg: Mapping[str, Any], key: str, *, minimum: int = 0) -> int:
    """``cfg[key]``, which must be present and an integer >= ``minimum`` (InputError naming ``key``)."""
    v = cfg.get(key)
    if v is None:
        raise _missing(key)
    return _as_int(key, v, minimum)


def opt_int(cfg: Mapping[str, Any], key: str, default: int, *, minimum: int = 0) -> int:
    """``int(cfg.get(key) or default)``: a falsy value (absent, None, 0) reads as ``default``."""
    v = cfg.get(key)
    return _as_int(key, v, minimum) if v else default


def first_int(cfg: Mapping[str, Any], *keys: str, default: int | None = None, minimum: int = 0) -> int:
    """The first of ``keys`` that is not None, else ``default`` (when no default: InputError naming the first key)."""
    for key in keys:
        v = cfg.get(key)
        if v is not None:
            return _as_int(key, v, minimum)
    if default is None:
        raise _missing(keys[0])
    return default


def _check_bounded(src: Mapping[str, Any], fields: Mapping[str, tuple[int, int]], prefix: str = "") -> None:
    for key, (lo, hi) in fields.items():
        v = src.get(key)
        if v is not None and (not is_int(v) or not lo <= v <= hi):
            raise bad_field(prefix + key, f"must be an integer between {lo} and {hi:,}, got {str(v)[:40]!r}")


def _check_lists(cfg: Mapping[str, Any]) -> None:
    rows = cfg.get("engram_num_embeddings")
    if rows is not None and (
        not isinstance(rows, list) or len(rows) > 64 or not all(is_int(r) and 0 <= r <= _MAX_ROWS for r in rows)
    ):
        raise bad_field("engram_num_embeddings", "must be a list of non-negative integers (rows per table)")
    ratios = cfg.get("compress_ratios")
    if isinstance(ratios, list) and any(r is None for r in ratios):
        raise bad_field("compress_ratios", "must be a list of integers (null entries cannot be read)")
    types = cfg.get("mlp_layer_types")
    if types is not None and not isinstance(types, list):
        raise bad_field("mlp_layer_types", "must be a list")
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list) and not all(is_int(f) and f >= 0 for f in freq):
        raise bad_field("moe_layer_freq", "as a list must hold one non-negative integer per layer (0 = dense)")
    ids = cfg.get("engram_layer_ids")
    if ids is not None and (
        not isinstance(ids, list) or len(ids) > 4096 or not all(is_int(i) and 0 <= i < (1 << 16) for i in ids)
    ):
        raise bad_field("engram_layer_ids", "must be a list of layer indices")


def pattern_lists(src: Any) -> list[tuple[str, list[Any]]]:
    """``(key, list)`` for each ignore list of a quantization config, or of a ModelOpt ``hf_quant_config.json``
    (whose lists sit in its ``quantization`` object); keys whose value is not a list are skipped."""
    if not isinstance(src, Mapping):
        return []
    inner = src.get("quantization")
    q = inner if isinstance(inner, Mapping) else src
    return [(key, q[key]) for key in PATTERN_KEYS if isinstance(q.get(key), list)]


def _check_patterns(src: Any, where: str) -> None:
    """Ignore lists are lists; their ``re:`` patterns are regular expressions that compile."""
    for key, pats in pattern_lists(src):
        for p in pats:
            if isinstance(p, str) and p.startswith("re:"):
                try:
                    re.compile(p[3:])
                except re.error as err:
                    raise bad_field(f"{where}.{key}", f"holds an invalid regular expression {p!r} ({err})") from None


def check_weight_config(
    cfg: Mapping[str, Any], *, top: Mapping[str, Any], hf_quant_config: Mapping[str, Any] | None = None
) -> None:
    """Reject a flat config the weight walk cannot read, before any arithmetic (InputError on ``--model``).

    ``cfg`` is the flattened config, ``top`` the config as given (its ``vision_config`` is read),
    ``hf_quant_config`` the ModelOpt ``hf_quant_config.json``.  Order: the three :data:`REQUIRED` fields
    (``"vocab_size: config.json has no vocab_size"``), :func:`~kvplan.hfconfig.checks.check_geometry`,
    :data:`WEIGHT_INT_FIELDS`, the lists, ``vision_config``, the ignore lists.

    Example: ``{"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10, "hc_mult": "4"}`` -> "config field
    'hc_mult' must be an integer between 0 and 64, got '4'".
    """
    for key in REQUIRED:
        if not cfg.get(key):
            raise InputError(f"config.json has no {key}", field=key)
    check_geometry(cfg)
    _check_bounded(cfg, WEIGHT_INT_FIELDS)
    _check_lists(cfg)
    vision = top.get("vision_config")
    if isinstance(vision, Mapping):
        _check_bounded(vision, VISION_INT_FIELDS, prefix="vision_config.")
    _check_patterns(cfg.get("quantization_config"), "quantization_config")
    _check_patterns(hf_quant_config, "hf_quant_config")
