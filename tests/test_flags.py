"""The flag registry (kvplan.flags) against everything that used to keep its own copy of the flags.

Each test fails when one consumer drifts from the registry: the ``Deployment`` dataclass, the ``fit`` / ``sweep`` /
``solve`` typer options, the SGLang and vLLM launch-command maps, the plan-file keys and the sweep axes.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing

import pytest
import typer

from kvplan.deployment import Deployment
from kvplan.flags import (
    BY_FIELD,
    ENGINES,
    FLAGS,
    KINDS,
    LAUNCH_VALUES,
    SWEEP_GROUP,
    SWEEP_NUMERIC,
    TRISTATE,
    Flag,
    plan_keys,
    sweep_axes,
)
from kvplan.inputs import launch

# Deployment annotation (the dataclass is declared in kvplan/deployment.py without `from __future__`) per kind
_ANNOTATION = {
    "int": int | None,
    "float": float | None,
    "size": int | None,
    "count": int | None,
    "bool": bool,
    "str": str | None,
    "list": str | None,
}

#: bool fields that keep "not given" apart from False (the engine's default differs by release): declared once
_TRISTATE = TRISTATE


# ------------------------------------------------------------------------------------------------ the registry


def test_registry_is_well_formed():
    names = [n for f in FLAGS for n in f.names]
    assert len(names) == len(set(names)), "a CLI name is declared twice"
    assert len(BY_FIELD) == len(FLAGS)
    for f in FLAGS:
        assert f.kind in KINDS, f
        assert f.sweep in (None, SWEEP_GROUP, SWEEP_NUMERIC), f
        assert f.engines and set(f.engines) <= set(ENGINES), f
        assert f.help and f.flag.startswith("--"), f
        assert f.flag in f.names, f"{f.field}: its label {f.flag} is not one of its names"
        if f.kind in ("bool", "list"):
            assert f.sweep is None, f"{f.field}: a {f.kind} flag cannot be a sweep axis"
        for engine in ENGINES:
            sp = f.spelling(engine)
            if sp is None:
                continue
            assert sp.value in LAUNCH_VALUES, (f.field, sp)
            if sp.modelled:
                assert engine in f.engines, f"{f.field}: {engine} reads {sp.flag} but the flag says engines {f.engines}"
            else:
                assert sp.note, f"{f.field}: a not-modelled {engine} spelling needs its note"


def test_deployment_is_the_registry():
    """Deployment keeps its fields, and each field's type and default are what its registry kind says."""
    fields = {f.name: f for f in dataclasses.fields(Deployment)}
    assert set(fields) == set(BY_FIELD), set(fields) ^ set(BY_FIELD)
    hints = typing.get_type_hints(Deployment)
    for name, fld in fields.items():
        f = BY_FIELD[name]
        assert (
            hints[name] == _ANNOTATION[f.kind]
            or (name == "engine" and hints[name] is str)
            or (name in _TRISTATE and hints[name] == bool | None)
        ), (name, hints[name])
        if name in _TRISTATE:  # a vLLM BooleanOptionalAction whose default is the release's: None = not given
            assert f.kind == "bool" and fld.default is None, name
        elif f.kind == "bool":
            assert fld.default is False, name
        elif name == "engine":
            assert fld.default == "sglang" and fld.default in f.choices
        else:
            assert fld.default is None, name


def test_registry_is_cheap_to_import():
    code = (
        "import sys, kvplan.flags; print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "('typer', 'pydantic', 'rich', 'numpy', 'click')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------------ CLI options


def _options(name: str) -> dict:
    from kvplan.cli.app import app

    cmd = typer.main.get_command(app).commands[name]
    return {p.name: p for p in cmd.params if p.param_type_name == "option"}


@pytest.mark.parametrize(
    "command,want",
    [
        ("fit", lambda f: True),
        ("sweep", lambda f: f.sweep is not None or f.kind == "bool"),
        ("solve", lambda f: f.solve),
    ],
)
def test_command_options_come_from_the_registry(command, want):
    opts = _options(command)
    for f in FLAGS:
        if not want(f):
            assert f.field not in opts, f"{command} takes {f.field} but the registry says it should not"
            continue
        assert f.field in opts, f"{command} lacks {f.names[0]}"
        o = opts[f.field]
        assert tuple(o.opts) == f.names, (command, f.field, o.opts)
        if f.kind == "bool":
            assert o.is_flag, (command, f.field)
        elif command == "sweep":
            assert o.metavar == "LIST" and o.type.name == "text", (command, f.field)
        else:
            want_type = {"int": "integer", "float": "float"}.get(f.kind, "text")
            assert o.type.name == want_type, (command, f.field, o.type.name)


def test_fit_help_lists_every_flag():
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    out = CliRunner().invoke(app, ["fit", "--help"], env={"COLUMNS": "200"}).stdout
    for f in FLAGS:
        for n in f.names:
            assert n in out, n


# ------------------------------------------------------------------------------------------------ launch maps


@pytest.mark.parametrize("engine", ENGINES)
def test_launch_maps_come_from_the_registry(engine):
    em = launch.engine_map(engine)
    kinds = launch._flags(engine).kinds
    local = launch._LOCAL_UNMODELLED[engine]
    registry_flags: set[str] = set()
    for f in FLAGS:
        sp = f.spelling(engine)
        if sp is None:
            continue
        for flag in sp.flags:
            registry_flags.add(flag)
            if flag.startswith("-"):
                assert flag in kinds, f"{f.field}: {engine} has no flag {flag}"
            where = [flag in em.mapping, flag in em.special, flag in em.unmodelled]
            assert sum(where) == 1, f"{flag} is in {where} of (mapped, special, not modelled)"
        if sp.modelled and not sp.special:
            assert em.mapping[sp.flag][0] == f.field
            assert (sp.value == "switch") == (kinds[sp.flag] == "bool") == (f.kind == "bool"), (f.field, sp)
            if sp.value == "choice":
                assert (engine, sp.flag) in launch.CHOICES
            else:
                assert sp.value in launch.VALUE_RULES
    # the module's own not-modelled flags are engine flags that are no kvplan field
    assert not set(local) & registry_flags, set(local) & registry_flags
    assert set(local) <= set(kinds)
    assert set(em.mapping).isdisjoint(em.unmodelled) and set(em.mapping).isdisjoint(em.special)
    for alias, target in launch._ALIASES[engine].items():
        assert alias in kinds and target in kinds, (alias, target)


def test_launch_drifts_are_fixed():
    p = launch.parse_launch_command(
        "python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct "
        "--mamba-ssm-dtype bfloat16 --dcp-size 2 --mamba-full-memory-ratio 0.8 "
        "--max-mamba-cache-size 64"
    )
    assert p.fields["mamba_ssm_dtype"] == "bfloat16"
    assert (p.fields["dcp_size"], p.fields["mamba_full_memory_ratio"], p.fields["max_mamba_cache_size"]) == (2, 0.8, 64)
    assert not any("not modelled" in n for n in p.notes), p.notes
    v = launch.parse_launch_command("vllm serve Qwen/Qwen3-8B --mamba-ssm-cache-dtype float32 -dcp 2")
    assert "--mamba-ssm-cache-dtype is not modelled: the Mamba state dtype is vLLM's default" in v.notes
    assert "--decode-context-parallel-size is not modelled: decode context parallelism is not modelled" in v.notes


def test_launch_fields_are_deployment_fields():
    p = launch.parse_launch_command(
        "python -m sglang.launch_server --model-path x --tp 2 --dp-size 2 "
        "--enable-dp-attention --disable-cuda-graph --chunked-prefill-size -1"
    )
    Deployment(**p.fields)
    assert set(p.fields) <= set(BY_FIELD)


# ------------------------------------------------------------------------------------------------ plan file, sweep


def test_plan_file_keys_come_from_the_registry():
    from kvplan.planning.check import PlanDeployment

    assert set(PlanDeployment.model_fields) - {"name", "target", "require"} == {f.plan_key for f in plan_keys()}
    assert "target_requests" not in PlanDeployment.model_fields  # it is target.requests


def test_plan_file_takes_every_fit_flag(tmp_path):
    from kvplan.planning.check import load_plan

    p = tmp_path / "plan.toml"
    p.write_text(
        '[[deployment]]\nname = "x"\nmodel = "Qwen/Qwen3-8B"\ngpu = "h100-sxm"\nmax_total_tokens = "64k"\n'
        'dsv4_attn_backend = "auto"\nkv_cache_memory_bytes = "20GiB"\nengram_on_host = true\n'
        '[deployment.target]\ncontext = "8k"\nrequests = 1\n'
    )
    dep = load_plan(p)[0].deployment
    assert (dep.max_total_tokens, dep.kv_cache_memory_bytes, dep.engram_on_host) == (65536, 20 * 2**30, True)


def test_sweep_axes_come_from_the_registry():
    from kvplan.planning.sweep import AXES, NUMERIC_FIELDS

    assert list(AXES) == [f.field for f in sweep_axes()]
    for f in sweep_axes():
        a = AXES[f.field]
        assert (a.flag, a.kind, a.numeric) == (f.flag, f.kind, f.sweep == SWEEP_NUMERIC)
    # issue 11: the workload (--input-len / --output-len) is vectorised too
    assert NUMERIC_FIELDS == (
        "mem_fraction_static",
        "gpu_memory_utilization",
        "context_length",
        "max_running_requests",
        "max_total_tokens",
        "target_requests",
        "input_len",
        "output_len",
    )


def test_sweep_and_solve_take_the_flags_they_lacked():
    from tests.test_sweep import run

    base = [
        "-m",
        "Qwen/Qwen3-8B",
        "-g",
        "h100-sxm",
        "--free-memory",
        "80GiB",
        "--weight-memory",
        "16GiB",
        "--context-length",
        "32k",
    ]
    r = run("sweep", *base, "--max-num-batched-tokens", "4096,8192", "--format", "jsonl")
    assert r.exit_code == 0, r.output
    assert len(r.stdout.splitlines()) == 2
    r = run(
        "solve",
        "concurrency",
        *base,
        "--mem-fraction-static",
        "0.75",
        "--chunked-prefill-size",
        "4096",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["answer"] == 9


def _flag_for(name: str) -> Flag:
    return next(f for f in FLAGS if name in f.names)


def test_messages_use_the_registry_label():
    assert _flag_for("--tp").flag == "--tp" and _flag_for("--max-model-len").flag == "--context-length"
    assert _flag_for("--requests").field == "target_requests"


def test_issue_11_flags():
    """The workload and the long-context override are registry flags: fit, sweep and solve options, plan keys; the
    override's launch spellings are the engines' environment variables (read by kvplan.inputs.launch)."""
    for name in ("input_len", "output_len"):
        f = BY_FIELD[name]
        assert f.kind == "count" and f.sweep == SWEEP_NUMERIC and f.solve and f.plan_key == name
        assert f.sglang is None and f.vllm is None
    f = BY_FIELD["allow_long_context"]
    assert f.kind == "bool" and f.plan_key == "allow_long_context" and f.sweep is None
    assert (f.sglang.flag, f.vllm.flag) == (
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    )
    assert "never the target" in BY_FIELD["max_running_requests"].help


def test_enable_prefix_caching_flag(tmp_path):
    """Issue 12: vLLM's --enable-prefix-caching is one registry entry: the fit switch, the vLLM launch spellings
    (both BooleanOptionalAction forms, read by launch's own rule), a plan-file key that keeps false apart from
    not given (None: the release's default)."""
    from kvplan.planning.check import load_plan

    f = BY_FIELD["enable_prefix_caching"]
    assert (f.kind, f.engines, f.sweep, f.vllm.flags, f.sglang) == (
        "bool",
        ("vllm",),
        None,
        ("--enable-prefix-caching", "--no-enable-prefix-caching"),
        None,
    )
    assert "enable_prefix_caching" in _options("fit") and _options("fit")["enable_prefix_caching"].is_flag
    for text, want in (
        ("enable_prefix_caching = false\n", False),
        ("enable_prefix_caching = true\n", True),
        ("", None),
    ):
        p = tmp_path / "plan.toml"
        p.write_text(
            '[[deployment]]\nname = "x"\nmodel = "Qwen/Qwen3-8B"\ngpu = "h100-sxm"\nengine = "vllm"\n'
            + text
            + '[deployment.target]\ncontext = "8k"\nrequests = 1\n'
        )
        assert load_plan(p)[0].deployment.enable_prefix_caching is want


def test_a_tristate_switch_has_both_forms_on_the_command_line():
    """--enable-prefix-caching / --no-enable-prefix-caching: given on, given off, or not given (the release's
    default); the plan's assumptions say which."""
    import json as _json

    from typer.testing import CliRunner

    from kvplan.cli.app import app

    base = [
        "fit",
        "--engine",
        "vllm",
        "-m",
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        "-g",
        "h100-sxm",
        "--tp",
        "2",
        "--format",
        "json",
    ]
    out = {}
    for extra in ([], ["--enable-prefix-caching"], ["--no-enable-prefix-caching"]):
        res = CliRunner().invoke(app, base + extra)
        assert res.exit_code == 0, res.output
        out[tuple(extra)] = " | ".join(
            a for a in _json.loads(res.output)["assumptions"] if "prefix caching" in a or "Mamba cache mode" in a
        )
    # not given: vLLM 0.34's default for hybrids (on -> "align"); given on: align, no default note; off: mode none
    assert "prefix caching on: the default of vLLM 0.34.0" in out[()] and "Mamba cache mode align" in out[()]
    assert "default" not in out[("--enable-prefix-caching",)] and "align" in out[("--enable-prefix-caching",)]
    assert "Mamba cache mode none" in out[("--no-enable-prefix-caching",)]
