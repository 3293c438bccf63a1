"""``kvplan fit`` and ``kvplan speed`` run without typer (start-up, docs/performance.md).

Importing typer (with click and the standard modules they load) and building a command's ~50 options is about a
quarter of a warm ``kvplan fit --format json``.  For the two planning commands people run most, :func:`run` reads
the command line itself, from the same tables the typer options are built from (the flag registry,
:func:`kvplan.cli.values.command_flags`, and each command's own options in :data:`SPECS`), and calls the same
function the typer command calls (:func:`kvplan.cli.fit_run.run_fit`, :func:`kvplan.cli.speed_run.run_speed`).

It reads only the plain forms, and gives the line back to typer (returns False) for anything else, so that every
message, help text and error stays typer's own:

* ``--name VALUE``, ``--name=VALUE``, ``-x VALUE`` (a short name alone), switches ``--name`` / ``-x`` and
  ``--x`` / ``--no-x``; each option at most once;
* an ``int`` / ``float`` value is what ``int(text)`` / ``float(text)`` reads (click's ``INT`` / ``FLOAT`` call
  the same), any other value its text; a value after a space never starts with ``-``;
* no ``--help``, no positional argument or ``--`` (a launch command), no ``--debug`` (typer's path prints the
  traceback), no shell-completion request, UTF-8 stdout and stderr (click re-wraps other streams).

The cyclic garbage collector is paused while the command runs (its imports and one plan allocate long-lived
objects that each automatic collection would walk again; about 4% of a warm ``fit``) and resumed as found.

``tests/test_fast_cli.py`` checks that :data:`SPECS` names exactly typer's options (names, kinds, defaults) and
that both paths hand the command the same values for a set of command lines.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from kvplan.cli.values import command_flags
from kvplan.flags import TRISTATE

#: a command's own options (besides the registry's): (parameter, names, kind, default); kinds as the registry's
#: plus "bool" for a switch
_FIT_OWN: tuple[tuple[str, tuple[str, ...], str, Any], ...] = (
    ("from_launch", ("--from-launch",), "str", None),
    ("from_log", ("--from-log",), "str", None),
    ("fmt", ("--format",), "str", None),
    ("check", ("--check",), "bool", False),
    ("explain", ("--explain", "-v"), "bool", False),
    ("debug", ("--debug",), "bool", False),
    ("speed", ("--speed",), "bool", False),
)
_SPEED_OWN: tuple[tuple[str, tuple[str, ...], str, Any], ...] = (
    ("concurrency", ("--concurrency", "-c"), "int", 1),
    ("accept_length", ("--accept-length",), "float", None),
    ("power_limit", ("--power-limit",), "float", None),
    ("gpu_tflops", ("--gpu-tflops",), "float", None),
    ("gpu_bandwidth", ("--gpu-bandwidth",), "float", None),
    ("link_bandwidth", ("--link-bandwidth",), "float", None),
    ("num_prompts", ("--num-prompts",), "int", None),
    ("range_ratio", ("--random-range-ratio",), "float", None),
    ("calibration", ("--calibration",), "str", None),
    ("fmt", ("--format",), "str", None),
    ("explain", ("--explain", "-v"), "bool", False),
    ("debug", ("--debug",), "bool", False),
    ("chart", ("--chart",), "bool", False),
    ("plot", ("--plot",), "str", None),
)


class Option:
    """One option as the fast reader sees it: the parameter it fills, its kind (``int``, ``float``, ``str``,
    ``bool`` a switch, ``tristate`` ``--x`` / ``--no-x``), its default, and whether it is a registry flag."""

    __slots__ = ("default", "dest", "kind", "registry")

    def __init__(self, dest: str, kind: str, default: Any, *, registry: bool) -> None:
        self.dest, self.kind, self.default, self.registry = dest, kind, default, registry


def _registry_kind(kind: str, field: str) -> str:
    if kind == "bool":
        return "tristate" if field in TRISTATE else "bool"
    return kind if kind in ("int", "float") else "str"


def options(command: str) -> dict[str, Option]:
    """Every option name of ``command`` (``fit`` or ``speed``) -> its :class:`Option`; ``--no-x`` for a tristate."""
    out: dict[str, Option] = {}
    for f in command_flags("fit"):  # speed takes fit's deployment flags (kvplan.cli.speed_cmd)
        kind = _registry_kind(f.kind, f.field)
        opt = Option(f.field, kind, False if kind == "bool" else None, registry=True)
        for name in f.names:
            out[name] = opt
            if kind == "tristate":
                out[f"--no-{name[2:]}"] = opt
    for dest, names, kind, default in _FIT_OWN if command == "fit" else _SPEED_OWN:
        own = Option(dest, kind, default, registry=False)
        out.update(dict.fromkeys(names, own))
    return out


def _value(kind: str, text: str) -> tuple[bool, Any]:
    """(read, value) of one option value as click reads it; (False, None) when click would refuse it."""
    if kind == "int":
        try:
            return True, int(text)
        except ValueError:
            return False, None
    if kind == "float":
        try:
            return True, float(text)
        except ValueError:
            return False, None
    return True, text


def parse(command: str, args: Sequence[str]) -> dict[str, Any] | None:
    """The values typer would hand ``command``'s function for ``args`` (the words after the command name): the
    own options by parameter name and the registry's under ``"flags"``; None for a line :func:`run` leaves to
    typer (module docstring).  Example: ``parse("fit", ["--tp", "4", "-v"])`` -> ``{..., "explain": True,
    "flags": {..., "tp": 4, ...}}``."""
    table = options(command)
    unique = {id(o): o for o in table.values()}.values()
    values = {o.dest: o.default for o in unique}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        name, eq, text = word.partition("=") if word.startswith("--") else (word, "", "")
        opt = table.get(name)
        if opt is None or opt.dest in seen:
            return None
        seen.add(opt.dest)
        if opt.kind in ("bool", "tristate"):
            if eq:
                return None
            values[opt.dest] = not name.startswith("--no-") if opt.kind == "tristate" else True
            continue
        if not eq:
            if i >= len(args) or args[i].startswith("-"):
                return None
            text = args[i]
            i += 1
        ok, values[opt.dest] = _value(opt.kind, text)
        if not ok:
            return None
    flags = {o.dest: values.pop(o.dest) for o in unique if o.registry}
    return {**values, "flags": flags}


def _utf8(stream: Any) -> bool:
    return (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"


def _runner(command: str) -> Callable[..., None]:
    if command == "fit":
        from kvplan.cli.fit_run import run_fit

        return run_fit
    from kvplan.cli.speed_run import run_speed

    return run_speed


def run(argv: Sequence[str]) -> bool:
    """Run ``kvplan ARGV`` here when it is ``fit`` or ``speed`` in a form :func:`parse` reads; True when it ran
    (its errors leave through :func:`kvplan.cli.exits.exit_for`, as under typer), False to leave it to typer."""
    if not argv or argv[0] not in ("fit", "speed") or sys.platform == "win32":
        return False
    if os.environ.get("_KVPLAN_COMPLETE") or os.environ.get("KVPLAN_DEBUG") == "1" or "--debug" in argv:
        return False
    if not (_utf8(sys.stdout) and _utf8(sys.stderr)) or "typer" in sys.modules:
        return False
    values = parse(argv[0], argv[1:])
    if values is None:
        return False
    if argv[0] == "fit":
        values["extra_args"] = []
    values.pop("debug")
    from kvplan.cli.exits import ReaderGone, exit_for, set_debug
    from kvplan.cli.streams import closed_pipe

    set_debug(argv)
    was = gc.isenabled()
    gc.disable()  # one plan's imports and objects: no collection is worth its walk in a run this short
    try:
        try:
            _runner(argv[0])(**values)
        except OSError as exc:  # what KvplanGroup.invoke does under typer
            if closed_pipe(exc):
                raise ReaderGone() from None
            raise
    except (Exception, KeyboardInterrupt) as exc:
        exit_for(exc)
    finally:
        if was:
            gc.enable()
    return True
