"""The validated config-field readers, re-exported where the vLLM modules import them: they live in
:mod:`kvplan.hfconfig.fields` (the detection rules of :mod:`kvplan.hfconfig.detect` read the same fields)."""

from __future__ import annotations

from kvplan.hfconfig.fields import (
    MAX_INT,
    bad_field,
    int_if_set,
    int_list,
    int_or,
    model_type,
    num_layers,
    req_int,
    str_list,
    str_or,
)

__all__ = [
    "MAX_INT",
    "bad_field",
    "int_if_set",
    "int_list",
    "int_or",
    "model_type",
    "num_layers",
    "req_int",
    "str_list",
    "str_or",
]
