"""One option set for every command that plans a deployment (issue 24 item 4).

fit, speed, sweep, solve, calibrate-speed, calibrate (its overrides), what-if (``fit --from-log``) and ``check``
plan entries take the deployment flags of the registry (:mod:`kvplan.flags`) under the registry's names, and the
same values: a count as ``8k``, a size as ``70GiB``, vLLM's own KV dtype ``fp8`` under ``--engine vllm``.

Two halves: the options each command declares (names and value kinds, read from the typer app: cheap), and one
run per command and engine with a set of deployment flags written as a user writes them (exit 2 would be "the
command does not take it").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.flags import BY_FIELD, BY_NAME, FLAGS, TRISTATE

LOG = Path(__file__).resolve().parent / "validation" / "logs" / "llama31-8b-docs-quickstart-2501.log"
runner = CliRunner()


def _options(name: str) -> dict[str, Any]:
    """Deployment field -> its option, of one command."""
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {p.name: p for p in cmd.params if p.param_type_name == "option" and p.name in BY_FIELD}


#: the commands whose options come from the registry, and the registry flags each takes
REGISTRY_COMMANDS: dict[str, Any] = {
    "fit": lambda f: True,
    "speed": lambda f: True,
    "calibrate-speed": lambda f: True,
    "sweep": lambda f: f.sweep is not None or f.kind == "bool",
    "solve": lambda f: f.solve,
}


@pytest.mark.parametrize("name", sorted(REGISTRY_COMMANDS))
def test_registry_commands_take_every_flag_by_its_registry_names(name: str) -> None:
    opts = _options(name)
    takes = REGISTRY_COMMANDS[name]
    missing = [f.flag for f in FLAGS if takes(f) and f.field not in opts]
    assert not missing, f"{name} lacks {missing}"
    for f in FLAGS:
        if not takes(f):
            continue
        names = tuple(n for n in opts[f.field].opts)
        if f.field in TRISTATE:  # --x/--no-x
            assert set(f.names) <= set(names), (name, f.field, names)
        else:
            assert names == f.names, (name, f.field, names)


def test_fit_speed_and_calibrate_speed_take_the_same_option_set() -> None:
    fit = _options("fit")
    for name in ("speed", "calibrate-speed"):
        other = _options(name)
        assert set(other) == set(fit), name
        for field, opt in fit.items():
            assert (tuple(other[field].opts), other[field].type.name) == (tuple(opt.opts), opt.type.name), field


def test_calibrate_overrides_are_spelled_and_typed_as_fit_takes_them() -> None:
    """calibrate declares its overrides by hand: each must use the registry's names of its field and read its
    value as fit does (a count option takes ``8k``: a text option, read by parse_count)."""
    fit = _options("fit")
    for field, opt in _options("calibrate").items():
        f = BY_FIELD[field]
        names = set(opt.opts) | set(opt.secondary_opts)
        registry = set(f.names) | ({f"--no-{n[2:]}" for n in f.names} if f.kind == "bool" else set())
        assert names <= registry | {"--no-dp-attention"}, (field, names - registry)
        assert set(f.names) <= names or f.kind == "bool", (field, "lacks", set(f.names) - names)
        assert opt.type.name == fit[field].type.name or f.kind == "bool", (field, opt.type.name, fit[field].type.name)


def test_plan_file_keys_are_the_registry_fields() -> None:
    from kvplan.planning.check import DeploymentKeys

    assert set(DeploymentKeys.model_fields) == {f.field for f in FLAGS if f.plan}


# ---------------------------------------------------------------------------------------------- one run each

#: deployment flags as a user writes them, per engine (every value kind: int, float, count)
SGLANG_FLAGS = [
    "--tp",
    "1",
    "--context-length",
    "8k",
    "--max-total-tokens",
    "100k",
    "--mem-fraction-static",
    "0.85",
    "--max-running-requests",
    "16",
    "--page-size",
    "16",
    "--chunked-prefill-size",
    "4096",
]
VLLM_FLAGS = [
    "--engine",
    "vllm",
    "--kv-cache-dtype",
    "fp8",
    "--tp",
    "1",
    "--max-model-len",
    "8192",
    "--max-num-seqs",
    "16",
    "--block-size",
    "16",
    "--gpu-memory-utilization",
    "0.85",
]
MODEL = ["-m", "meta-llama/Llama-3.1-8B-Instruct", "-g", "h100-sxm"]


def _planning_commands(flags: list[str]) -> dict[str, list[str]]:
    return {
        "fit": ["fit", *MODEL, *flags, "--format", "json"],
        "speed": ["speed", *MODEL, "--input-len", "1024", "--output-len", "16", *flags, "--format", "json"],
        "sweep": ["sweep", *MODEL, *flags, "--format", "csv"],
        "solve": ["solve", "context", *MODEL, *flags, "--format", "json"],
    }


@pytest.mark.parametrize("engine_flags", [SGLANG_FLAGS, VLLM_FLAGS], ids=["sglang", "vllm"])
@pytest.mark.parametrize("command", ["fit", "speed", "sweep", "solve"])
def test_each_planning_command_takes_the_same_values(command: str, engine_flags: list[str]) -> None:
    args = _planning_commands(engine_flags)[command]
    res = runner.invoke(app, args)
    assert res.exit_code != 2, f"{' '.join(args)}: {res.output}"
    assert res.exit_code in (0, 3), res.output


def _log_flags() -> list[str]:
    """The SGLang set without --tp / --page-size changes the log's own layout would refuse (what-if keeps the
    model); the value kinds stay the same."""
    return SGLANG_FLAGS


@pytest.mark.parametrize("command", ["calibrate", "what-if"])
def test_log_commands_take_the_same_values(command: str) -> None:
    head = ["calibrate", str(LOG)] if command == "calibrate" else ["fit", "--from-log", str(LOG)]
    args = [*head, *_log_flags(), "--format", "json"]
    res = runner.invoke(app, args)
    assert res.exit_code != 2, f"{' '.join(args)}: {res.output}"


def _plan_value(flag: str, text: str) -> str:
    f = BY_NAME[flag]
    if f.kind in ("int", "float"):
        return text
    return f'"{text}"'


@pytest.mark.parametrize("engine_flags", [SGLANG_FLAGS, VLLM_FLAGS], ids=["sglang", "vllm"])
def test_plan_entries_take_the_same_values(tmp_path: Path, engine_flags: list[str]) -> None:
    from kvplan.planning.check import load_plan

    pairs = list(zip(engine_flags[::2], engine_flags[1::2], strict=True))
    keys = "\n".join(f"{BY_NAME[k].field} = {_plan_value(k, v)}" for k, v in pairs)
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f'[[deployment]]\nname = "d"\nmodel = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "h100-sxm"\n{keys}\n'
        '[deployment.target]\ncontext = "4k"\nrequests = 1\n'
    )
    (spec,) = load_plan(plan)
    # the same Deployment fields as fit's options give
    from kvplan.cli.options import deployment_values

    given = deployment_values("fit", {BY_NAME[k].field: v for k, v in pairs} | _typed(pairs))
    for field, value in given.items():
        if field == "context_length":
            continue  # a plan entry's server context defaults from the target; given here, it is the same value
        assert getattr(spec.deployment, field) == value, field
    assert spec.deployment.context_length == given["context_length"]
    res = runner.invoke(app, ["check", str(plan), "--format", "json"])
    assert res.exit_code in (0, 3), res.output


def _typed(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """The values as typer hands them to the command (INT / FLOAT options converted)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        f = BY_NAME[k]
        if f.kind == "int":
            out[f.field] = int(v)
        elif f.kind == "float":
            out[f.field] = float(v)
    return out


def test_the_sets_name_deployment_fields() -> None:
    """Every flag of the two sets is a registry flag with a Deployment field (the sets test the registry)."""
    for flags in (SGLANG_FLAGS, VLLM_FLAGS):
        for k in flags[::2]:
            assert BY_NAME[k].field in set(Deployment.__dataclass_fields__), k
