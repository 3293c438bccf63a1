"""A plain record type for the speed model's results and inputs: :class:`Record`.

Not ``@dataclass``: the decorator generates and compiles ``__init__`` / ``__eq__`` / ``__repr__`` for each class at
import, ~5-13 ms per class on a loaded machine, and ``kvplan speed`` starts within ``kvplan fit``'s budget
(docs/performance.md).  A subclass declares its fields as annotations, a default as a class attribute; instances
take them positionally (declaration order) or by keyword, are read-only unless the class says ``frozen=False``, and
turn into plain dicts with :meth:`Record.to_dict`.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar


class Record:
    """Fields from annotations (declaration order, bases first), defaults from class attributes."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _frozen: ClassVar[bool] = True

    def __init_subclass__(cls, frozen: bool = True, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for name, kind in inspect.get_annotations(klass).items():
                if not name.startswith("_") and "ClassVar" not in str(kind) and name not in names:
                    names.append(name)
        cls._fields = tuple(names)
        cls._frozen = frozen

    def __init__(self, *args: Any, **kw: Any) -> None:
        cls = type(self)
        if len(args) > len(cls._fields):
            raise TypeError(f"{cls.__name__} takes {len(cls._fields)} fields, got {len(args)} positional")
        values = dict(zip(cls._fields, args, strict=False))
        for k, v in kw.items():
            if k not in cls._fields:
                raise TypeError(f"{cls.__name__} has no field {k!r}")
            if k in values:
                raise TypeError(f"{cls.__name__}: {k!r} given twice")
            values[k] = v
        for name in cls._fields:
            if name in values:
                object.__setattr__(self, name, values[name])
            elif not hasattr(cls, name):
                raise TypeError(f"{cls.__name__} needs {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if type(self)._frozen:
            raise AttributeError(f"{type(self).__name__} is read-only")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields) + ")"

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain data (nested records, tuples and dicts converted)."""
        return {f: _plain(getattr(self, f)) for f in self._fields}


def _plain(v: Any) -> Any:
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
