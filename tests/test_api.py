"""The Python API (docs/api.md): ``from kvplan import Deployment, fit, speed, sweep`` and the rest of ``__all__``.

Each name resolves lazily (``kvplan/__init__.py`` ``__getattr__``), ``import kvplan`` stays as light as a CLI start
needs, and the worked example of docs/api.md gives the numbers the CLI prints for the same deployment.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import app
from tests.cli_run import ROOT

#: defined by the speed model (kvplan.planning.speed); tested by test_speed_names_resolve when that module exists
SPEED_NAMES = {"speed", "SpeedResult"}


def _cli_json(args: list[str]) -> object:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _cli_jsonl(args: list[str]) -> list[dict]:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def test_every_public_name_resolves():
    import kvplan.deployment
    import kvplan.errors
    import kvplan.planning.plan
    import kvplan.result

    assert kvplan.Deployment is kvplan.deployment.Deployment
    assert kvplan.fit is kvplan.planning.plan.fit
    assert kvplan.FitResult is kvplan.result.FitResult
    assert kvplan.KvplanError is kvplan.errors.KvplanError
    assert kvplan.InputError is kvplan.errors.InputError
    assert issubclass(kvplan.InputError, kvplan.KvplanError)
    assert callable(kvplan.sweep) and callable(kvplan.solve)
    assert isinstance(kvplan.__version__, str) and kvplan.__version__[0].isdigit()
    for name in set(kvplan.__all__) - SPEED_NAMES:
        assert getattr(kvplan, name) is not None, name
    from kvplan import Deployment, FitResult, InputError, KvplanError, fit, solve, sweep  # noqa: F401


def test_speed_names_resolve():
    """``speed`` and ``SpeedResult`` come from kvplan.planning.speed; only that module's absence skips this."""
    mod = pytest.importorskip("kvplan.planning.speed")
    assert kvplan.speed is mod.speed
    assert kvplan.SpeedResult is mod.SpeedResult
    assert callable(kvplan.speed) and isinstance(kvplan.SpeedResult, type)
    from kvplan import Deployment

    res = kvplan.speed(Deployment())  # the default deployment, as `kvplan speed --format json` prices it
    assert isinstance(res, kvplan.SpeedResult)
    cli = _cli_json(["speed", "--format", "json"])
    assert isinstance(cli, dict)
    for key in ("ttft_s", "tpot_s", "output_tokens_per_s", "total_tokens_per_s", "concurrency", "model", "gpu"):
        assert getattr(res, key) == cli[key], key
    assert res.tpot_s > 0


def test_all_is_what_dir_lists_and_nothing_else_resolves():
    assert set(kvplan.__all__) >= SPEED_NAMES
    assert {"Deployment", "fit", "sweep", "solve", "FitResult", "KvplanError", "InputError", "__version__"} <= set(
        kvplan.__all__
    )
    assert set(kvplan.__all__) <= set(dir(kvplan))
    assert len(set(kvplan.__all__)) == len(kvplan.__all__)
    with pytest.raises(AttributeError):
        kvplan.not_a_public_name  # noqa: B018
    from kvplan import supported  # a submodule is still found past __getattr__

    assert supported.__name__ == "kvplan.supported"


def _run(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_import_kvplan_imports_nothing_else():
    out = _run("import sys; import kvplan; print('\\n'.join(sorted(sys.modules)))")
    mods = set(out.split())
    assert {m for m in mods if m.startswith("kvplan")} == {"kvplan"}
    assert not {"numpy", "pydantic", "rich", "typer", "typing"} & {m.split(".")[0] for m in mods}


def test_names_load_on_first_use():
    out = _run(
        "import sys, kvplan\n"
        "print('kvplan.api' in sys.modules, 'kvplan.planning.plan' in sys.modules)\n"
        "kvplan.fit\n"
        "print('kvplan.api' in sys.modules, 'kvplan.planning.plan' in sys.modules, 'fit' in vars(kvplan))\n"
        "print('numpy' in sys.modules, 'rich' in sys.modules, 'typer' in sys.modules)\n"
    )
    assert out.split("\n")[:3] == ["False False", "True True True", "False False False"]


def test_worked_example_fit_is_the_cli_json():
    """docs/api.md's first steps: the default deployment, then one knob, each against ``kvplan fit --format json``."""
    from kvplan import Deployment, fit

    for dep, args in [
        (Deployment(), []),
        (Deployment(mem_fraction_static=0.8), ["--mem-fraction-static", "0.8"]),
        (
            Deployment(model="qwen3-32b", gpu="h100-sxm", tp=2, context_length=32768),
            ["-m", "qwen3-32b", "-g", "h100-sxm", "--tp", "2", "--context-length", "32k"],
        ),
    ]:
        res = fit(dep)
        cli = _cli_json(["fit", "--format", "json", *args])
        cli = cli[0] if isinstance(cli, list) else cli
        assert isinstance(cli, dict)
        for key in ("kv_pool_tokens", "kv_budget_bytes", "kv_bytes_per_token", "max_concurrency", "fits", "model"):
            assert getattr(res, key) == cli[key], (args, key)
        assert res.kv_pool_tokens > 0
    assert fit(Deployment(mem_fraction_static=0.8)).kv_pool_tokens > fit(Deployment()).kv_pool_tokens


def test_worked_example_sweep_is_the_cli_jsonl():
    from kvplan import Deployment, sweep

    rows = sweep(Deployment(model="qwen3-32b", gpu="h100-sxm"), tp=[1, 2, 4], context_length="32k,128k")
    cli = _cli_jsonl(
        [
            "sweep",
            "-m",
            "qwen3-32b",
            "-g",
            "h100-sxm",
            "--tp",
            "1,2,4",
            "--context-length",
            "32k,128k",
            "--format",
            "jsonl",
        ]
    )
    assert len(rows) == len(cli) == 6
    assert [(r["tp"], r["context_length"]) for r in rows] == [
        (1, 32768),
        (1, 131072),
        (2, 32768),
        (2, 131072),
        (4, 32768),
        (4, 131072),
    ]
    for r, c in zip(rows, cli, strict=True):
        assert set(c) <= set(r)  # the API's rows add the verdict words (verdict, reasons)
        for key, value in c.items():
            assert r[key] == value or (value is None and r[key] != r[key]), key  # JSON null: a NaN column
        assert r["verdict"] and r["reason"] == c["reason"]
    # the same numbers as one fit() of the point
    from kvplan import fit

    one = fit(Deployment(model="qwen3-32b", gpu="h100-sxm", tp=2, context_length=131072))
    assert rows[3]["kv_pool_tokens"] == one.kv_pool_tokens and rows[3]["max_concurrency"] == one.max_concurrency


def test_sweep_fixed_fields_and_errors():
    from kvplan import Deployment, InputError, KvplanError, sweep

    base = Deployment(model="qwen3-32b", gpu="h100-sxm")
    # a scalar of a sweepable field is a one-value axis; a non-axis field is set on the base
    assert sweep(base, tp=2) == sweep(base, tp=[2]) == sweep(base, tp="2")
    with pytest.raises(InputError) as err:
        sweep(base, tp=[0, 2])  # refused as `kvplan sweep --tp 0,2` refuses it
    assert "--tp" in err.value.one_line()
    with pytest.raises(InputError) as err:
        sweep(base, not_a_field=[1])
    assert "not_a_field" in err.value.one_line()
    with pytest.raises(KvplanError):
        sweep(base, gpu=["no-such-gpu"])


def test_exceptions_surface_as_input_error_with_one_line():
    from kvplan import Deployment, InputError, KvplanError, fit, solve

    with pytest.raises(InputError) as err:
        fit(Deployment(tp=0))
    assert isinstance(err.value, KvplanError)
    line = err.value.one_line()
    assert "--tp" in line and "\n" not in line
    with pytest.raises(InputError) as err:
        solve(None, "no-such-question")
    assert "QUESTION" in err.value.one_line()


def test_solve_is_the_cli_json():
    from kvplan import Deployment, solve

    dep = Deployment(model="qwen3-32b", gpu="h100-sxm", context_length=32768, target_requests=8)
    got = solve(dep, "gpus").to_dict()
    cli = _cli_json(
        [
            "solve",
            "gpus",
            "-m",
            "qwen3-32b",
            "-g",
            "h100-sxm",
            "--context-length",
            "32k",
            "--requests",
            "8",
            "--format",
            "json",
        ]
    )
    assert isinstance(cli, dict)
    assert got["answer"] == cli["answer"] and got["answer"] is not None
    assert [c["value"] for c in got["candidates"]] == [c["value"] for c in cli["candidates"]]


def test_solve_config_and_concurrency_targets_through_the_api():
    from kvplan import Deployment, solve

    base = Deployment(model="Qwen/Qwen3-32B", input_len=8192, output_len=1024)
    r = solve(
        base,
        "config",
        gpu=["h100-sxm", "l40s"],
        tp=[1, 2],
        concurrency=8,
        objective="cost",
        prices={"h100-sxm": 2.5, "l40s": 0.9},
        targets={"ttft_s": 2.0},
    )
    assert r.chosen is not None and r.to_dict()["answer"] == r.chosen.label
    assert {c.rejected_by for c in r.rejected} >= {"capacity"}
    c = solve(
        Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, input_len=8192),
        "concurrency",
        targets={"tpot_s": 0.03},
    )
    assert c.bound in ("memory", "tpot_s") and c.answer is not None
