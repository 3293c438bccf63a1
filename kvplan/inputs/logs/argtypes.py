"""The kind of value each printed engine argument kvplan reads must have (issue 26 item 2).

A start-up log prints its arguments as Python reprs (SGLang ``server_args=ServerArgs(...)``, vLLM ``non-default
args: {...}`` and ``with config: k=v, ...``) or as the command line; a garbled or hand-edited log can hold any
literal where a name or a count belongs (``kv_cache_dtype=5``, ``attention_backend=['fa3']``,
``speculative_algorithm=True``, ``'kv_cache_dtype': ['fp8']``, ``tp_size=4.5``).  :func:`check_args` runs on every
such dict before any of it is used and refuses (exit 2, naming the log key and what it holds) a value of the wrong
kind, instead of letting it reach ``.lower()`` (exit 1) or ``int()`` (4.5 -> 4, True -> 1):

=========  ====================================================================================================
kind       accepted (``None`` and the text ``None`` always mean "not set")
=========  ====================================================================================================
COUNT      an integer (not a boolean), or text that is one (``"4"``, ``"-1"``); text that is not a number (``auto``)
           is left to the reader, which ignores it.  Refused: booleans (``True``), non-integral numbers (``4.5``,
           ``"4.5"``), lists, dicts
NUMBER     an int or float (not a boolean), or text
BOOL       a boolean, 0 / 1, or text (``true`` / ``false`` on a command line)
NAME       text.  Refused: numbers, booleans, lists, dicts
=========  ====================================================================================================

The keys are every name the engines' ``LOG_ARG_KEYS`` (kvplan/engines/*/engine.py) read a Deployment field from, plus
the model names (``model_path``, ``model``, ``model_tag``) and ``enable_expert_parallel``;
tests/test_hardening_logs_types.py checks that no engine key is missing here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from kvplan.errors import InputError, echo


class Kind(Enum):
    COUNT = "an integer"
    NUMBER = "a number"
    BOOL = "a boolean"
    NAME = "a name (text)"


_COUNTS = (
    "tp_size tp tensor_parallel_size pp_size pp pipeline_parallel_size dp_size dp data_parallel_size ep_size ep "
    "expert_parallel_size context_length max_running_requests page_size chunked_prefill_size max_total_tokens "
    "speculative_num_draft_tokens speculative_dspark_block_size moe_dense_tp_size max_model_len max_seq_len "
    "max_num_seqs max_num_batched_tokens block_size kv_cache_memory_bytes"
)
_NUMBERS = "mem_fraction_static swa_full_tokens_ratio gpu_memory_utilization"
_BOOLS = (
    "enable_dp_attention disable_radix_cache disable_overlap_schedule disable_cuda_graph enable_dp_lm_head "
    "enforce_eager enable_expert_parallel"
)
_NAMES = "kv_cache_dtype attention_backend speculative_algorithm model_path model model_tag"

#: log key -> the kind of value it must hold
ARG_KINDS: dict[str, Kind] = {
    **dict.fromkeys(_COUNTS.split(), Kind.COUNT),
    **dict.fromkeys(_NUMBERS.split(), Kind.NUMBER),
    **dict.fromkeys(_BOOLS.split(), Kind.BOOL),
    **dict.fromkeys(_NAMES.split(), Kind.NAME),
}


def _type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "text"
    if isinstance(v, (list, tuple)):
        return "a list"
    if isinstance(v, dict):
        return "a dict"
    return type(v).__name__


def _count_problem(v: Any) -> str | None:
    """Why ``v`` is not a count, or None when it is one (or text the reader ignores)."""
    if isinstance(v, bool):
        return "a boolean, not a count"
    if isinstance(v, int):
        return None
    if isinstance(v, float):
        return None if math.isfinite(v) and v.is_integer() else "not a whole number"
    if isinstance(v, str):
        t = v.strip().strip("'\"")
        if t.lower() in ("true", "false"):
            return "a boolean, not a count"
        try:
            f = float(t)
        except ValueError:
            return None  # "auto", "" ...: not a number, ignored by the reader
        return None if (math.isfinite(f) and f.is_integer()) or not math.isfinite(f) else "not a whole number"
    return f"{_type_name(v)}, not a count"


def problem(kind: Kind, value: Any) -> str | None:
    """Why ``value`` cannot be a value of ``kind`` (a short phrase), or None when it can.

    Example: ``problem(Kind.NAME, 5)`` is ``"an integer, not a name (text)"``; ``problem(Kind.COUNT, 4.5)`` is
    ``"not a whole number"``; ``problem(Kind.COUNT, "4")`` is None.
    """
    if value is None or (isinstance(value, str) and value.strip().strip("'\"") in ("None", "none", "null")):
        return None
    if kind is Kind.COUNT:
        return _count_problem(value)
    if kind is Kind.NUMBER:
        ok = isinstance(value, (int, float, str)) and not isinstance(value, bool)
    elif kind is Kind.BOOL:
        ok = isinstance(value, (bool, str)) or (isinstance(value, int) and value in (0, 1))
    else:
        ok = isinstance(value, str)
    return None if ok else f"{_type_name(value)}, not {kind.value}"


def check_args(args: Mapping[str, Any], *, source: str) -> None:
    """Refuse (InputError, exit 2) the first value of ``args`` whose key is in :data:`ARG_KINDS` and whose value is
    not of that kind; ``source`` names where the log printed them (``server_args``, ``non-default args``, ...).

    Example: ``check_args({"kv_cache_dtype": 5}, source="server_args")`` raises
    ``LOG: the log's server_args.kv_cache_dtype=5 is an integer, not a name (text); ...``.
    """
    for key, value in args.items():
        kind = ARG_KINDS.get(key) if isinstance(key, str) else None
        why = None if kind is None else problem(kind, value)
        if why is not None:
            raise InputError(
                f"the log's {source}.{echo(key, 40)}={echo(repr(value), 60)} is {why}",
                field="LOG",
                hint="the log is garbled or edited: fix that value in the log",
            )
