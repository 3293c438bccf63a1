"""The one rule for an integer in a config (issue 21 item 5): what counts as a whole number, written once.

A Hugging Face config is JSON, so a field is an integer when Python reads it as an ``int`` that is not a ``bool``:

* ``true`` / ``false`` are not integers (Python's ``bool`` is an ``int`` subclass; ``True`` would read as 1);
* ``4.0`` is not an integer (a float), ``"4"`` is not an integer (a string): kvplan never converts them, it refuses
  them (the strict readers: :mod:`kvplan.hfconfig.fields`, :mod:`kvplan.weights.fields`, ``ModelSpec.require_int``,
  the geometry builders) or reads the default (the lenient :func:`count_or`, for estimates that must not fail);
* the one exception is the speed model's :func:`positive_or`: a positive float is truncated (``int(v)``), as it
  always was.

Every config reader in kvplan calls :func:`is_int` (or :func:`is_int_list`, :func:`count_or`); no other module
writes ``isinstance(v, int) and not isinstance(v, bool)`` or ``int(cfg.get(...))`` (``tests/test_config_readers.py``).
The strict readers keep their own messages (they name their flag); the rule under them is this one.

Example: ``is_int(4) and not is_int(True) and not is_int(4.0) and not is_int("4")``;
``count_or({"n": -1}, "n", 7) == 7``; ``count_or({"n": 3.9}, "n", 0, above=0, floats=True) == 3``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

__all__ = ["count_or", "int_at_least", "is_int", "is_int_list", "positive_or"]


def is_int(v: object) -> TypeGuard[int]:
    """``v`` is a whole number as a config writes it: an ``int`` and not a ``bool``."""
    return isinstance(v, int) and not isinstance(v, bool)


def int_at_least(v: object, minimum: int) -> TypeGuard[int]:
    """``v`` is an integer (:func:`is_int`) and ``v >= minimum``.  Example: ``int_at_least(0, 1) is False``."""
    return is_int(v) and v >= minimum


def is_int_list(v: object, *, minimum: int | None = None) -> bool:
    """Every item of ``v`` is an integer (and ``>= minimum`` when given); ``v`` itself is not checked for being a
    list.  Example: ``is_int_list([0, 3], minimum=0)``; ``is_int_list([1, True]) is False``."""
    items: Any = v
    return all(is_int(x) and (minimum is None or x >= minimum) for x in items)


def count_or(cfg: Mapping[str, Any], key: str, default: int = 0, *, above: int = -1, floats: bool = False) -> int:
    """The lenient read: ``cfg[key]`` when it is an integer ``> above`` (``above=-1``: any ``>= 0``), else
    ``default``; with ``floats=True`` a float ``> above`` counts too, truncated by ``int``.

    Example: ``count_or({"head_dim": 128}, "head_dim") == 128``; ``count_or({"head_dim": "128"}, "head_dim") == 0``;
    ``count_or({"x": 0}, "x", 5, above=0) == 5``.
    """
    v = cfg.get(key)
    if floats and isinstance(v, float) and v > above:
        return int(v)
    return v if is_int(v) and v > above else default


def positive_or(cfg: Mapping[str, Any], key: str, default: int = 0) -> int:
    """The speed model's read: a positive number (an integer, or a float truncated by ``int``), else ``default``.

    Example: ``positive_or({"n": 8}, "n") == 8``; ``positive_or({"n": 0}, "n", 1) == 1``;
    ``positive_or({"n": 2.5}, "n") == 2``; ``positive_or({"n": True}, "n", 3) == 3``.
    """
    return count_or(cfg, key, default, above=0, floats=True)
