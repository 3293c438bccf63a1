"""Which registry flags each command takes, and their values as ``Deployment`` fields (no typer here).

:mod:`kvplan.cli.options` builds typer options from these tables; :mod:`kvplan.cli.fast` reads argv with them
when it runs ``fit`` / ``speed`` without typer (docs/performance.md, "Start-up").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvplan.flags import FLAGS, TRISTATE, Flag

#: which registry flags each command takes: fit all of them, solve those marked ``solve``, sweep the axes and switches
_TAKES: dict[str, Callable[[Flag], bool]] = {
    "fit": lambda f: True,
    "solve": lambda f: f.solve,
    "sweep": lambda f: f.sweep is not None or f.kind == "bool",
}


def command_flags(command: str) -> tuple[Flag, ...]:
    """The registry flags one command takes, in registry order (KeyError for a command that has none)."""
    takes = _TAKES[command]
    return tuple(f for f in FLAGS if takes(f))


def deployment_values(command: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The given values as Deployment fields (SIZE and count strings read; unset flags left out).

    Raises :class:`kvplan.errors.InputError` naming the flag for a value that is not a size or a count.
    """
    out: dict[str, Any] = {}
    for f in command_flags(command):
        value = flags.get(f.field)
        if value is None or (value is False and f.field not in TRISTATE):
            continue
        if f.kind == "size":
            from kvplan.units import parse_size

            value = parse_size(value, field=f.flag)
        elif f.kind == "count":
            from kvplan.units import parse_count

            value = parse_count(value, field=f.flag)
        out[f.field] = value
    return out
