"""The typer-free path of ``kvplan fit`` / ``kvplan speed`` (kvplan.cli.fast) reads a line as typer would.

Three checks, none timed: the fast reader's option tables name exactly the options typer builds (names, kinds,
defaults); for every option (each name, each spelling) both paths hand the command function the same values; the
lines it does not read are left to typer; and a run that takes the fast path (no typer module loaded) prints the
same bytes and exits with the same code as the typer path (``--debug``, which the fast reader leaves to typer and
which changes nothing but the traceback of an internal error).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.cli import fast

COMMANDS = ("fit", "speed")


def _click_command(command: str) -> Any:
    import typer.main

    from kvplan.cli.app import _single_command_app

    group = typer.main.get_command(_single_command_app(command))
    return group.commands[command]  # type: ignore[attr-defined]


def _kind(param: Any) -> str:
    if param.is_flag:
        return "tristate" if param.secondary_opts else "bool"
    return {"integer": "int", "float": "float", "text": "str"}[param.type.name]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_fast_tables_name_typer_options(command):
    table = fast.options(command)
    params = [p for p in _click_command(command).params if p.param_type_name == "option"]
    assert not [p for p in _click_command(command).params if p.param_type_name != "option"]
    names = {n for p in params for n in (*p.opts, *p.secondary_opts)}
    assert names == set(table), names ^ set(table)
    for p in params:
        for n in (*p.opts, *p.secondary_opts):
            opt = table[n]
            assert (opt.dest, opt.kind) == (p.name, _kind(p)), n
            assert opt.default == p.default and type(opt.default) is type(p.default), n
            assert not p.multiple and p.nargs == 1 and p.envvar is None and p.callback is None, n


def _sample(kind: str) -> str:
    return {"int": "3", "float": "0.5", "str": "some-text"}[kind]


def _lines(command: str) -> list[list[str]]:
    """Every option once in each of its spellings, and a few lines of several options."""
    lines: list[list[str]] = [[]]
    for name, opt in fast.options(command).items():
        if opt.kind in ("bool", "tristate"):
            lines.append([name])
            continue
        value = _sample(opt.kind)
        lines.append([name, value])
        if name.startswith("--"):
            lines.append([f"{name}={value}"])
    lines += [
        ["--tp=-1", "--mem-fraction-static", "1e-1", "--model", "x=y"],
        ["-m", "qwen3-32b", "-g", "h100-sxm", "--tp", " 2 ", "--context-length", "32k", "--format", "json"],
        ["--model=", "--tp", "1_0", "-v", "--no-enable-prefix-caching"],
    ]
    return lines


def _typer_values(command: str, args: list[str], monkeypatch) -> dict[str, Any]:
    """What typer hands the command's work function for ``kvplan COMMAND ARGS`` (the function replaced by a
    recorder; ``debug``, which the typer command keeps to itself, added back from its flag)."""
    from typer.testing import CliRunner

    from kvplan.cli import commands, speed_cmd
    from kvplan.cli.app import _single_command_app

    seen: dict[str, Any] = {}
    monkeypatch.setattr(commands if command == "fit" else speed_cmd, f"run_{command}", lambda **kw: seen.update(kw))
    res = CliRunner().invoke(_single_command_app(command), [command, *args])
    assert res.exit_code == 0, (args, res.output)
    return {**seen, "debug": "--debug" in args}


@pytest.mark.parametrize("command", COMMANDS)
def test_both_paths_hand_the_command_the_same_values(command, monkeypatch):
    lines = _lines(command)
    assert len(lines) > 60  # every registry flag and own option (names and `=` spellings)
    for args in lines:
        got = fast.parse(command, args)
        assert got is not None, args
        if command == "fit":
            got["extra_args"] = []
        assert got == _typer_values(command, args, monkeypatch), args


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--tp"],
        ["--tp", "x"],
        ["--tp", "-1"],
        ["--model", "-x"],
        ["--mem-fraction-static", "half"],
        ["--unknown"],
        ["foo"],
        ["--", "python", "-m", "sglang.launch_server"],
        ["-mqwen3-32b"],
        ["-m=qwen3-32b"],
        ["--tp", "1", "--tp", "2"],
        ["--check=1"],
        ["--enable-prefix-caching", "--no-enable-prefix-caching"],
        ["-v", "-v"],
    ],
)
def test_lines_left_to_typer(args):
    assert fast.parse("fit", args) is None


def test_run_leaves_to_typer_what_it_does_not_read(monkeypatch):
    assert fast.run([]) is False and fast.run(["sweep"]) is False and fast.run(["fit", "--debug"]) is False
    monkeypatch.setenv("_KVPLAN_COMPLETE", "complete_bash")
    assert fast.run(["fit"]) is False


CASES = [
    ["fit", "--format", "json"],
    ["fit", "--format", "csv", "-m", "qwen3-32b", "-g", "h100-sxm", "--tp", "2", "--engine", "sglang,vllm"],
    ["fit", "--format", "json", "--speed", "--input-len", "8192", "--output-len", "512"],
    ["fit", "--format", "json", "-m", "qwen3-32b", "-g", "h100-sxm", "--context-length", "10m", "--check"],
    ["fit", "-m", "no-such-model"],
    ["fit", "--format", "yaml"],
    ["speed", "--format", "json"],
    ["speed", "--format", "json", "-m", "qwen3-32b", "-g", "h100-sxm", "--tp", "2", "-c", "8", "--explain"],
    ["speed", "--input-len", "1k,4k"],
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a[:6]))
def test_the_fast_path_prints_what_typer_prints(args, tmp_path):
    """Two processes per case: the typer path (``python -m kvplan ... --debug``) and the console entry with the line
    as given, which also lists the modules it loaded (one run both compared and checked for the fast path)."""
    from tests.cli_run import console_run, run_kvplan

    env = {"KVPLAN_CACHE_DIR": str(tmp_path / "cache")}
    typer_run = run_kvplan([*args, "--debug"], env=env, capture_output=True, text=True)
    fast_run, mods = console_run(args, listing=tmp_path / "modules.txt", env=env)
    assert (fast_run.returncode, fast_run.stdout, fast_run.stderr) == (
        typer_run.returncode,
        typer_run.stdout,
        typer_run.stderr,
    )
    if fast_run.returncode == 0:
        assert "typer" not in mods and "kvplan.cli.commands" not in mods, "the fast path was not taken"
