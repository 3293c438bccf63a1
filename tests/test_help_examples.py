"""Every command's ``--help`` shows an ``Example:`` line, and that example is a command line kvplan accepts.

The commands are enumerated from the whole typer app (``kvplan.cli.app.app``, groups walked down to their
subcommands), so a new command is covered without editing this file.  An example is checked by parsing it with the
command's own click parser (``make_context``: every option and argument it names must exist and take the value
given); it is not run, so an example may name a file (``startup.log``) that is not here.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kvplan.cli.app import app


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(path below ``kvplan``, click command) of every command and subcommand; the root group itself excluded."""
    out: list[tuple[tuple[str, ...], Any]] = [(path, cmd)] if path else []
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        if not getattr(sub, "hidden", False):
            out += _commands(sub, (*path, name))
    return out


ROOT = typer.main.get_command(app)
COMMANDS = _commands(ROOT)


def test_the_walk_finds_every_command():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"fit", "models", "models add", "gpus", "show", "version", "sweep", "solve", "check", "calibrate"} <= names


def _example(path: tuple[str, ...]) -> str:
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith("Example:")]
    assert lines, f"`kvplan {' '.join(path)} --help` shows no 'Example:' line:\n{res.stdout}"
    return lines[0].removeprefix("Example:").strip()


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_shows_an_example_kvplan_accepts(path: tuple[str, ...], cmd: Any):
    example = _example(path)
    words = shlex.split(example)
    assert words[: len(path) + 1] == ["kvplan", *path], f"the example of `kvplan {' '.join(path)}`: {example!r}"
    args = words[len(path) + 1 :]
    parent = ROOT.make_context("kvplan", [*path, *args], resilient_parsing=True)
    with parent:
        ctx = cmd.make_context(path[-1], list(args), parent=parent)  # a UsageError: an unknown option or bad value
        assert ctx.command is cmd
