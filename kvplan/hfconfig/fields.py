"""Validated reads of HF config fields (the vLLM specs and cold terms, vLLM's layer kinds and family rule).

Every read names its field: a value of the wrong kind or out of range is bad input (:class:`InputError`, exit 2,
"config field 'X' must be ..."); anything else that goes wrong later is a kvplan bug and reaches the
internal-error path.  ``hfconfig.spec.check_geometry`` checks the common geometry fields before a CLI run;
these readers also cover the fields it does not know (``index_topk_freq``, ``index_topk_pattern``, the Mamba
dtype names ...) and direct library calls of :func:`kvplan.engines.vllm.planner.plan_vllm`.

Three defaults are in use, matching how the engine code reads each field:

* :func:`req_int`: the field must be there (or a default is given): ``cfg.get(key, default)``;
* :func:`int_or`: None / absent -> the default, 0 is a value (``index_skip_topk_offset``);
* :func:`int_if_set`: None, absent, ``false`` and 0 -> the fallback (``int(cfg.get(key) or fallback)``).

Example: ``req_int({"num_hidden_layers": "32"}, "num_hidden_layers")`` raises "config field
'num_hidden_layers' must be an integer, got '32'".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError
from kvplan.hfconfig.checks import MAX_LAYERS
from kvplan.hfconfig.readers import is_int, is_int_list

MAX_INT = 1 << 40  # far above any real dimension or length; keeps the arithmetic sane
_HINT = "pass the model's Hugging Face config.json"


def bad_field(key: str, what: str) -> InputError:
    """The one error for a config field: ``config field 'key' what`` on ``config``."""
    return InputError(f"config field '{key}' {what}", field="config", hint=_HINT)


def _checked(key: str, v: Any, minimum: int, maximum: int) -> int:
    if not is_int(v):
        raise bad_field(key, f"must be an integer, got {str(v)[:40]!r}")
    if not minimum <= v <= maximum:
        raise bad_field(key, f"must be between {minimum:,} and {maximum:,}, got {v:,}")
    return v


def req_int(
    cfg: Mapping[str, Any], key: str, default: int | None = None, *, minimum: int = 0, maximum: int = MAX_INT
) -> int:
    """``cfg[key]`` (``default`` when the key is absent); a missing or null value is an error."""
    v = cfg.get(key, default)
    if v is None:
        raise InputError(f"config has no '{key}'", field="config", hint=_HINT)
    return _checked(key, v, minimum, maximum)


def int_or(cfg: Mapping[str, Any], key: str, default: int, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """``cfg[key]``, or ``default`` when it is absent or null."""
    v = cfg.get(key)
    return default if v is None else _checked(key, v, minimum, maximum)


def int_if_set(cfg: Mapping[str, Any], key: str, fallback: int = 0, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """``cfg[key]``, or ``fallback`` when it is absent, null, false or 0."""
    v = cfg.get(key)
    if v is None or v is False or (isinstance(v, int) and v == 0):
        return fallback
    return _checked(key, v, minimum, maximum)


def num_layers(cfg: Mapping[str, Any]) -> int:
    """``num_hidden_layers``, 0 to :data:`kvplan.hfconfig.checks.MAX_LAYERS`."""
    return req_int(cfg, "num_hidden_layers", maximum=MAX_LAYERS)


def model_type(cfg: Mapping[str, Any]) -> str:
    """``model_type`` ("" when absent); a non-string is an error."""
    v = cfg.get("model_type")
    if v is None:
        return ""
    if not isinstance(v, str):
        raise bad_field("model_type", "must be a string")
    return v


def str_or(cfg: Mapping[str, Any], key: str, default: str) -> str:
    """A string field (``default`` when absent, null or empty)."""
    v = cfg.get(key)
    if v is None or v == "":
        return default
    if not isinstance(v, str):
        raise bad_field(key, "must be a string")
    return v


def str_list(cfg: Mapping[str, Any], key: str) -> list[str] | None:
    """A list of strings, or None when absent / null."""
    v = cfg.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise bad_field(key, "must be a list of strings")
    return v


def int_list(cfg: Mapping[str, Any], key: str) -> list[int] | None:
    """A list of integers, or None when absent / null."""
    v = cfg.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not is_int_list(v):
        raise bad_field(key, "must be a list of integers")
    return v
