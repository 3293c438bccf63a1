"""Start-up discipline, checked without timing: what `kvplan fit --format json` imports.

Timings live in benchmarks/startup.py; these tests only read `python -X importtime` output, which is
deterministic: rich (tables) and numpy (sweeps) must never load for JSON output, and with a warm preset
cache neither does pydantic (it validates presets and results only when needed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.result import FitResult

ROOT = Path(__file__).resolve().parent.parent


def _imported(args: list[str], cache_dir: Path) -> set[str]:
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kvplan", *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip())
    return mods


def test_fit_json_imports_neither_rich_nor_numpy_nor_pydantic(tmp_path):
    _imported(["fit", "--format", "json"], tmp_path)  # fills the validated-preset cache
    mods = _imported(["fit", "--format", "json"], tmp_path)
    assert "kvplan.engines.sglang.planner" in mods  # the test sees real imports
    top = {m.split(".")[0] for m in mods}
    assert "rich" not in top, "rich must load only for tables"
    assert "numpy" not in top, "numpy must load only for sweeps"
    assert "pydantic" not in top, "pydantic must load only to validate"


def test_cold_cache_validates_with_pydantic(tmp_path):
    mods = _imported(["fit", "--format", "json", "-m", "qwen3-32b", "-g", "h100-sxm"], tmp_path / "empty")
    assert "pydantic" in {m.split(".")[0] for m in mods}


def test_json_round_trips_into_the_result_model():
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    out = CliRunner().invoke(app, ["fit", "--format", "json"]).stdout
    data = json.loads(out)
    res = FitResult.model_validate(data)
    assert res.model_dump() == data
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        FitResult.model_validate({**data, "not_a_key": 1})
    with pytest.raises(ValidationError):
        FitResult.model_validate({**data, "kv_pool_tokens": "many"})


def test_version_flag_loads_no_planner(tmp_path):
    mods = _imported(["--version"], tmp_path)
    assert "kvplan.cli.app" in mods
    assert not any(m.startswith(("kvplan.planning", "kvplan.engines", "kvplan.inputs")) for m in mods)
    assert "rich" not in {m.split(".")[0] for m in mods}


# ------------------------------------------------------------------------------- structural guarantees of 0.2.x
# Each one is a reason `kvplan fit --format json` starts within the budget of docs/performance.md ("Start-up").


def _modules_after(args: list[str], cache_dir: Path, tmp: Path) -> set[str]:
    """Every module loaded when ``kvplan ARGS`` leaves (tests/cli_run.py ``console_modules``)."""
    from tests.cli_run import console_modules

    return console_modules(args, listing=tmp / "modules.txt", env={"KVPLAN_CACHE_DIR": str(cache_dir)})[1]


def test_fit_json_loads_no_table_view_and_no_older_release_rules(tmp_path):
    """JSON is written by kvplan.views.serialize alone (the table view, kvplan.views.render, loads only for tables),
    and the default release (the newest) never loads the older releases' rule windows
    (kvplan.engines.sglang.history builds them on the first plan that names an older release)."""
    _modules_after(["fit", "--format", "json"], tmp_path, tmp_path)  # fills the validated-preset cache
    mods = _modules_after(["fit", "--format", "json"], tmp_path, tmp_path)
    assert {"kvplan.engines.sglang.planner", "kvplan.views.serialize", "kvplan.engines.sglang.releases"} <= mods
    assert "kvplan.views.render" not in mods, "the table view must load only for tables"
    assert "kvplan.engines.sglang.history" not in mods, "older release windows must load only when asked for"
    assert not {m.split(".")[0] for m in mods} & {"rich", "numpy", "pydantic", "tomllib", "hashlib", "csv"}
    older = _modules_after(
        [
            "fit",
            "--format",
            "json",
            "-m",
            "meta-llama/Llama-3.1-8B-Instruct",
            "-g",
            "h100-sxm",
            "--engine-version",
            "0.4.4",
        ],
        tmp_path,
        tmp_path,
    )
    assert "kvplan.engines.sglang.history" in older  # the listing does see a lazy import


def test_the_release_table_is_built_on_first_use():
    code = (
        "import sys; from kvplan.engines.sglang import releases as r; "
        "assert r.rules_for(None) is r.DEFAULT_RULES; assert 'RELEASES' not in vars(r); "
        "assert 'kvplan.engines.sglang.history' not in sys.modules; "
        "assert len(r.RELEASES) > 1 and 'RELEASES' in vars(r)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def _written_out_init_classes() -> list[type]:
    """The dataclasses on the fit path whose ``__init__`` is written out (``init=False``)."""
    from kvplan.deployment import Deployment
    from kvplan.engines.sglang.pools.base import PoolContext, PoolFlags, PoolPlanner
    from kvplan.engines.sglang.pools.dsv4.eras import DSV4Era
    from kvplan.engines.sglang.pools.dsv4.stage import _Mode
    from kvplan.engines.sglang.release_types import FamilyOverride
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset, ModelPreset, Variant, WeightsInfo
    from kvplan.result import Basis, MemorySlice, Pool

    return [
        Deployment,
        FitResult,
        Pool,
        MemorySlice,
        Basis,
        ModelSpec,
        ModelPreset,
        HardwarePreset,
        WeightsInfo,
        Variant,
        PoolFlags,
        PoolContext,
        PoolPlanner,
        DSV4Era,
        _Mode,
        FamilyOverride,
    ]


@pytest.mark.parametrize("cls", _written_out_init_classes(), ids=lambda c: c.__name__)
def test_written_out_init_takes_exactly_the_fields(cls):
    """A dataclass with ``init=False`` and its own ``__init__`` (the decorator would compile one at every start):
    the parameters are the fields, in field order, with the field defaults (a ``default_factory`` field defaults to
    None and gets a new value), and an instance holds every field -- so ``dataclasses.replace`` / ``fields`` /
    ``asdict`` and pydantic see exactly what the generated ``__init__`` gave them."""
    import dataclasses
    import inspect

    assert cls.__dataclass_params__.init is False
    assert cls.__init__.__code__.co_filename != "<string>"  # not generated
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default and type(p.default) is type(f.default), f.name
        elif f.default_factory is not dataclasses.MISSING:
            assert p.default is None, f.name
        else:
            assert p.default is inspect.Parameter.empty, f.name
    sample = {p.name: object() for p in params if p.default is inspect.Parameter.empty}
    obj = cls(**sample)
    for f in fields:
        value = getattr(obj, f.name)
        if f.name in sample:
            assert value is sample[f.name], f.name
        elif f.default_factory is not dataclasses.MISSING:
            fresh = f.default_factory()
            assert type(value) is type(fresh), f.name
            assert (vars(value) == vars(fresh)) if hasattr(fresh, "__dict__") else value == fresh, f.name
        else:
            assert value == f.default, f.name
    if fields and fields[0].name not in sample:  # replace() round trip on a defaults-only class
        assert dataclasses.replace(obj, **{fields[0].name: fields[0].default}).__class__ is cls


def test_fit_path_records_generate_no_code():
    """The SGLang planner's and pool planners' internal records are plain classes (no decorator-generated code)."""
    from kvplan.engines.sglang import planner
    from kvplan.engines.sglang.pools import base

    for cls in (
        planner._Log,
        planner._Parallel,
        planner._Device,
        planner._Defaults,
        planner._Memory,
        base.PoolPlan,
        base.PlanDetail,
        base.Breakdown,
        base.SpecFlags,
        base.MambaFlags,
        base.PoolParallel,
        base.PoolLimits,
        base.PoolDevice,
    ):
        assert not hasattr(cls, "__dataclass_fields__"), cls.__name__
        assert cls.__init__.__code__.co_filename != "<string>", cls.__name__


def test_importing_the_cli_leaves_the_collector_as_found():
    """kvplan.cli.app pauses the cyclic collector while it imports (docs/performance.md) and resumes it as found."""
    for pre in ("", "import gc; gc.disable(); "):
        code = pre + "import gc; was = gc.isenabled(); import kvplan.cli.app; assert gc.isenabled() is was, was"
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("command", ["fit", "speed"])
def test_plain_fit_and_speed_run_without_typer(command, tmp_path):
    """``kvplan fit`` / ``kvplan speed`` in their plain forms are read by kvplan.cli.fast, not typer: neither typer
    (with click and the standard modules they load) nor the typer CLI module is imported; a line the fast reader
    leaves (``--help``) does load them, so the listing sees the difference."""
    _modules_after([command, "--format", "json"], tmp_path, tmp_path)  # fills the caches
    mods = _modules_after([command, "--format", "json"], tmp_path, tmp_path)
    assert "kvplan.cli.fast" in mods
    assert not {m.split(".")[0] for m in mods} & {"typer", "click", "rich", "numpy", "pydantic", "shellingham"}
    assert not {"kvplan.cli.commands", "kvplan.cli.options", "subprocess", "platform", "uuid"} & mods
    helped = _modules_after([command, "--help"], tmp_path, tmp_path)
    assert {"typer", "kvplan.cli.commands"} <= helped


def test_records_with_written_methods_behave_as_the_decorator_made_them():
    """The records whose ``__eq__`` / ``__hash__`` / ``__repr__`` (and frozen assignment) come from
    kvplan.geometry.records instead of generated code: the same value semantics as ``@dataclass`` (frozen)."""
    import dataclasses

    from kvplan.engines.sglang.pools.dsv4.eras import DSV4_ERAS, DSV4Era
    from kvplan.engines.sglang.pools.dsv4.stage import DSV4Flags, _Stage
    from kvplan.engines.sglang.release_types import FamilyOverride
    from kvplan.geometry.dsv4 import DSV4Geometry
    from kvplan.geometry.records import FrozenRecord, Record

    for cls in (DSV4Era, DSV4Flags, _Stage, FamilyOverride, DSV4Geometry):
        assert dataclasses.is_dataclass(cls) and issubclass(cls, Record), cls.__name__
        generated = {n for n in ("__eq__", "__repr__", "__hash__") if n in vars(cls)}
        assert not generated, (cls.__name__, generated)  # the mixin's, not the decorator's
    era = DSV4_ERAS[-1]
    twin = DSV4Era(**dataclasses.asdict(era))
    assert twin == era and twin is not era and hash(twin) == hash(era) and {era: 1}[twin] == 1
    assert dataclasses.replace(era, trtllm=not era.trtllm) != era
    assert repr(era).startswith(f"DSV4Era(first={era.first!r}, last={era.last!r}, paged=")
    with pytest.raises(dataclasses.FrozenInstanceError):
        era.paged = False  # type: ignore[misc]
    flags = DSV4Flags(max_running_requests=4, context_len=1024, chunked_prefill_size=512)
    assert flags == dataclasses.replace(flags) and hash(flags) == hash(dataclasses.replace(flags))
    with pytest.raises(dataclasses.FrozenInstanceError):
        flags.context_len = 8  # type: ignore[misc]
    assert issubclass(DSV4Flags, FrozenRecord) and not issubclass(FamilyOverride, FrozenRecord)
    over = FamilyOverride("DeepseekV4ForCausalLM", page_size=256)
    assert over == FamilyOverride("DeepseekV4ForCausalLM", page_size=256) != FamilyOverride("x")
    with pytest.raises(TypeError):
        hash(over)  # a mutable record: unhashable, as @dataclass(eq=True) makes it
    over.page_size = 64  # and assignable
    assert over.page_size == 64
