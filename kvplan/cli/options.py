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
click's echo): no command looks at the format itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

import typer
from typer.models import ArgumentInfo

from kvplan.flags import FLAGS, TRISTATE, Flag
from kvplan.views.emit import REGISTRY as _FORMATS
from kvplan.views.emit import emit, format_help
from kvplan.views.formats import format_metavar

_ANNOTATION: dict[str, Any] = {"int": Optional[int], "float": Optional[float], "bool": bool}
_KW = inspect.Parameter.KEYWORD_ONLY
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


def format_option(answer: type, note: str = "") -> Any:
    """The ``--format`` option (``Annotated[Optional[str], format_option(T)]``) of a command writing ``answer`` (a
    :mod:`kvplan.views.emit` answer type): its metavar (``[table|json|csv]``) and help (``table | json | csv
    (default: table on a terminal, JSON otherwise).``, ``note`` before ``default``) read from the registry."""
    return typer.Option("--format", metavar=format_metavar(_FORMATS.formats(answer)), help=format_help(answer, note))


def _echo(text: str) -> None:
    typer.echo(text, nl=False)


def write(answer: Any, fmt: Any, **words: Any) -> None:
    """Write ``answer`` in ``fmt`` (:func:`kvplan.views.emit.emit`) through click's echo."""
    emit(answer, fmt, echo=_echo, **words)
