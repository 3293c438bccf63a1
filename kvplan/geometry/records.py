"""Value semantics written once for the records on the ``kvplan fit`` path (start-up, docs/performance.md).

The dataclass decorator generates ``__init__``, ``__repr__``, ``__eq__`` (and, frozen, ``__setattr__``,
``__delattr__``, ``__hash__``) as source text and compiles each one at every start: about 0.7 M instructions a
method, a frozen record six of them.  The records here keep ``@dataclass(init=False, repr=False, eq=False)`` (so
``dataclasses.fields`` / ``replace`` / ``asdict`` see their fields) and write their ``__init__`` out; these
mixins give the rest, the same as the decorator's: equality and repr over the fields in order, and for
:class:`FrozenRecord` the hash of the fields and ``FrozenInstanceError`` on assignment.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        from dataclasses import fields

        names = _NAMES[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type, unused-ignore]
    return names


class Record:
    """``__eq__`` and ``__repr__`` of a dataclass over its fields (a mutable record: unhashable, as the decorator's
    ``eq=True`` makes it)."""

    __slots__ = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in _names(type(self)))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined, no-any-return, unused-ignore]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(type(self)))
        return f"{type(self).__qualname__}({inner})"


class FrozenRecord(Record):
    """A frozen dataclass's methods: hashable over its fields, ``FrozenInstanceError`` on assignment; the written-out
    ``__init__`` sets its fields with :meth:`_set`."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)
