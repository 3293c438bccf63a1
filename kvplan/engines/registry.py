"""The engines as objects: one interface (:mod:`kvplan.engines.base`), one registry, looked up by name.

Planning, weights and views ask the engine object what they used to decide with ``engine == "vllm"``: its planner,
its ``--kv-cache-dtype`` vocabulary, its releases (the newest, the rule stretches of a range), the facts it prints in
a log, the name of its request cap, and the traits where the two engines' rules differ (how the KV pool is counted,
whether attention data parallelism divides the requests).  The interface is :class:`kvplan.engines.base.Engine`;
the implementations are :mod:`kvplan.engines.sglang.engine` and :mod:`kvplan.engines.vllm.engine`; :func:`engine`
imports only the one asked for, so ``kvplan fit`` of an SGLang deployment never loads vLLM's rules
(tests/test_startup_imports.py).

Adding an engine: a module ``kvplan/engines/<name>/engine.py`` with an ``ENGINE`` object that satisfies
:class:`kvplan.engines.base.Engine`, its loader in :data:`ENGINES` and its release range in :mod:`kvplan.supported`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kvplan.engines.base import PoolCount
from kvplan.errors import InputError

if TYPE_CHECKING:
    from kvplan.engines.base import Engine

__all__ = ["ENGINES", "PoolCount", "check_kv_dtype_for", "engine", "engine_names"]


def _sglang() -> Engine:
    from kvplan.engines.sglang.engine import ENGINE

    return ENGINE


def _vllm() -> Engine:
    from kvplan.engines.vllm.engine import ENGINE

    return ENGINE


#: every engine kvplan plans, in ``--engine`` order: name -> its loader (a lazy import of its ``ENGINE``)
ENGINES: dict[str, Callable[[], Engine]] = {"sglang": _sglang, "vllm": _vllm}

_LOADED: dict[str, Engine] = {}


def engine(name: str | None) -> Engine:
    """The engine object of ``name`` (None = the default, SGLang), imported on first use.

    Example: ``engine("vllm").request_cap_field == "max_num_seqs"``.  An unknown name is an InputError naming
    ``--engine``.
    """
    key = (name or "sglang").strip().lower()
    hit = _LOADED.get(key)
    if hit is not None:
        return hit
    load = ENGINES.get(key)
    if load is None:
        raise InputError(f"unknown engine '{name}'", field="--engine", hint="use " + ", ".join(ENGINES))
    obj = load()
    _LOADED[key] = obj
    return obj


def engine_names() -> Sequence[str]:
    """The ``--engine`` values, in order."""
    return tuple(ENGINES)


def check_kv_dtype_for(name: str, engines: Sequence[str | None]) -> None:
    """``name`` is accepted by every engine in ``engines`` (each engine's own refusal otherwise)."""
    for e in dict.fromkeys(engines):
        engine(e).check_kv_dtype(name)
