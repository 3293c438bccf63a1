"""The deployment options of ``fit``, ``sweep`` and ``solve``, built from the flag registry (:mod:`kvplan.flags`).

A command function declares only its own options (``--format``, ``--check`` ...) and a keyword parameter
``flags``; :func:`deployment_options` gives typer a signature holding the registry's options as well (built once,
at import, from plain data: no slower than writing them out) and hands the command their values as one dict,
``Deployment`` field -> the value as typed.  :func:`deployment_values` then reads SIZE and count strings.

Per command:

* ``fit`` and ``solve``: one value per flag (``int`` / ``float`` options are click ``INT`` / ``FLOAT``; SIZE
  and count options are strings read by :func:`kvplan.units.parse_size` / :func:`kvplan.units.parse_count`);
  ``solve`` takes the flags whose registry entry says ``solve``;
* ``sweep``: every sweepable flag takes a LIST (``a,b,c`` or ``START:STOP[:STEP]``,
  :func:`kvplan.planning.sweep.parse_axis`), the switches stay switches.

Every command's ``--format`` is :func:`format_option` of the answer it writes (the formats, metavar and help read
from the registry of :mod:`kvplan.views.emit`), and its answer is written by :func:`write` (``emit`` with
click's echo, :mod:`kvplan.cli.output`): no command looks at the format itself.  The tables of which flags a
command takes and how their values are read are typer-free (:mod:`kvplan.cli.values`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

import typer
from typer.models import ArgumentInfo

from kvplan.cli.output import write
from kvplan.cli.values import command_flags, deployment_values
from kvplan.flags import TRISTATE, Flag
from kvplan.views.emit import REGISTRY as _FORMATS
from kvplan.views.emit import format_help
from kvplan.views.formats import format_metavar

_ANNOTATION: dict[str, Any] = {"int": Optional[int], "float": Optional[float], "bool": bool}
_KW = inspect.Parameter.KEYWORD_ONLY
__all__ = ["command_flags", "deployment_options", "deployment_values", "format_option", "write"]


def _parameter(f: Flag, command: str) -> inspect.Parameter:
    default: bool | None = None
    annotation: Any = Optional[str]
    metavar: str | None = None
    names: tuple[str, ...] = f.names
    if f.kind == "bool" and f.field in TRISTATE:  # --x / --no-x; neither: None (the engine's default)
        annotation = Optional[bool]
        names = tuple(f"{n}/--no-{n[2:]}" for n in f.names)
    elif f.kind == "bool":
        default, annotation = False, bool
    elif command == "sweep":
        metavar = "LIST"
    else:
        annotation = _ANNOTATION.get(f.kind, Optional[str])
        metavar = f.metavar or ("SIZE" if f.kind == "size" else None)
    text = (f.sweep_help if command == "sweep" else f.solve_help if command == "solve" else "") or f.help
    option = typer.Option(default, *names, metavar=metavar, help=text)
    return inspect.Parameter(f.field, _KW, default=option, annotation=annotation)


def deployment_options(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: add the registry's options of ``command`` to a command function.

    The function takes ``flags`` (a dict, Deployment field -> value as typed, ``None`` / ``False`` when not
    given) besides its own parameters; in ``--help`` the registry's options come after the function's
    arguments and before its own options.
    """
    params = [_parameter(f, command) for f in command_flags(command)]
    names = tuple(p.name for p in params)

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        own = [
            p.replace(kind=_KW) for p in inspect.signature(func, eval_str=True).parameters.values() if p.name != "flags"
        ]
        lead = [p for p in own if p.default is p.empty or isinstance(p.default, ArgumentInfo)]
        tail = [p for p in own if p not in lead]

        def command_function(**kwargs: Any) -> Any:
            flags = {n: kwargs.pop(n) for n in names}
            return func(flags=flags, **kwargs)

        command_function.__signature__ = inspect.Signature([*lead, *params, *tail])  # type: ignore[attr-defined]
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(command_function, attr, getattr(func, attr))
        return command_function

    return wrap


def format_option(answer: type, note: str = "") -> Any:
    """The ``--format`` option (``Annotated[Optional[str], format_option(T)]``) of a command writing ``answer`` (a
    :mod:`kvplan.views.emit` answer type): its metavar (``[table|json|csv]``) and help (``table | json | csv
    (default: table on a terminal, JSON otherwise).``, ``note`` before ``default``) read from the registry."""
    return typer.Option("--format", metavar=format_metavar(_FORMATS.formats(answer)), help=format_help(answer, note))
