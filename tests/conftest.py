"""Shared test settings.

``SHARED`` is the copy of the project's reference material kept in tests/data/shared (hf-configs, reference
JSON, validation cases), so the suite needs nothing outside the repository.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import typer
import typer.main
import typer.testing
from hypothesis import HealthCheck, settings

# The suite's own cache (validated presets, weight estimates), not the user's ~/.cache/kvplan.
os.environ["KVPLAN_CACHE_DIR"] = tempfile.mkdtemp(prefix="kvplan-test-cache-")
# Never the internet: a model id that is not a preset would make kvplan ask the Hugging Face Hub; point every such
# request at a closed local port (connection refused at once).  tests/test_hub.py sets its own stand-in server.
os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="kvplan-test-hf-")
# Only the shipped catalog: a developer's own ~/.config/kvplan presets must not leak into the tests.
os.environ["KVPLAN_PRESETS"] = ""
# huggingface_hub reads HF_HUB_OFFLINE (and its other settings) once, when it is first imported.  Import it now,
# under the suite's environment, so a test that sets HF_HUB_OFFLINE=1 with monkeypatch (an offline run, as a user
# would start one) cannot freeze the library offline for every later test in that worker (tests/test_hub.py).  A
# real kvplan process never changes its environment midway, so this mirrors it.
try:
    import huggingface_hub.constants  # noqa: F401
except ImportError:  # the optional backend is not installed: nothing to freeze
    pass
# Byte code: hundreds of tests start `python -m kvplan` in a subprocess.  Where the environment forbids writing byte
# code (PYTHONDONTWRITEBYTECODE=1, as on some CI and sandbox machines) every one of them compiled kvplan from
# source again (~0.2 s of CPU each) and pytest rewrote every test module at each run.  The suite keeps its byte code
# instead, outside the checkout (a pycache prefix in the temp dir, so the tree stays as clean as the setting
# wanted), for this process and the subprocesses it starts.  An environment that writes byte code is left as it is.
if sys.dont_write_bytecode and not os.environ.get("PYTHONPYCACHEPREFIX"):
    _PYCACHE = Path(tempfile.gettempdir()) / f"kvplan-test-pycache-{os.getuid() if hasattr(os, 'getuid') else 0}"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(_PYCACHE)

ROOT = Path(__file__).resolve().parent.parent

# One click command per Typer app.  typer's CliRunner.invoke rebuilds the whole click command tree from the Typer
# app at every call (typer.main.get_command: ~40 ms of CPU for kvplan's app, most of an in-process `fit`), and the
# suite invokes the CLI thousands of times.  The tree is a pure function of the app's registrations, so the tests
# build it once per app and registration state and reuse it; the command still runs with a fresh click context per
# invocation, exactly as before.
_COMMANDS: dict[int, tuple[object, tuple[object, ...], object]] = {}


def _registrations(app: typer.Typer) -> tuple[object, ...]:
    """What get_command reads from ``app``: its commands, sub-apps and callback (identity and count)."""
    return (
        tuple(id(c) for c in app.registered_commands),
        tuple((id(g), _registrations(g.typer_instance)) for g in app.registered_groups),
        id(app.registered_callback),
        id(app.info.callback),
    )


def _cached_get_command(app: typer.Typer, _build=typer.main.get_command):
    key = _registrations(app)
    hit = _COMMANDS.get(id(app))
    if hit is not None and hit[0] is app and hit[1] == key:
        return hit[2]
    command = _build(app)
    if len(_COMMANDS) >= 16:  # an app built per call (a test's own) must not keep every copy alive
        _COMMANDS.pop(next(iter(_COMMANDS)))
    _COMMANDS[id(app)] = (app, key, command)
    return command


typer.testing._get_command = _cached_get_command  # type: ignore[attr-defined]
SHARED = ROOT / "tests" / "data" / "shared"

# Hypothesis profiles (pick one with `python -m pytest --hypothesis-profile=NAME`):
# * "kvplan" (the default: CI, the README's command): derandomized, so every run sees the same inputs; no example
#   database, no deadline flakiness; each test's own example budget (its @settings(max_examples=examples(N))) as
#   written, and Hypothesis's default of 100 for a test without one.
# * "long" (a local soak, CONTRIBUTING.md): ten times every budget, and random: each run tries new inputs; a
#   failure prints the seed and the example that reproduce it.
settings.register_profile(
    "kvplan", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("long", settings.get_profile("kvplan"), derandomize=False, max_examples=1000)
settings.load_profile("kvplan")

#: Hypothesis's own default max_examples: the unit :func:`examples` scales by
_DEFAULT_EXAMPLES = 100


def examples(n: int) -> int:
    """A test's example budget ``n`` under the loaded profile: ``n`` in CI ("kvplan"), ``10 * n`` under "long"
    (the profile's max_examples over Hypothesis's default 100).  Read when the test module is imported, after the
    profile is loaded: ``@settings(max_examples=examples(300))``."""
    return n * max(1, settings.default.max_examples // _DEFAULT_EXAMPLES)


_SEED: list[Path] = []
#: the seed folder a parent test process filled (the pytest-xdist controller, :func:`pytest_configure`): its workers
#: inherit it through the environment instead of validating the catalog again each
_SEED_ENV = "KVPLAN_TEST_PRESET_SEED"


def _seed_done(seed: Path) -> Path:
    """The marker written beside a seed folder once it is complete (outside it: the copies stay cache-only)."""
    return seed.with_name(seed.name + ".complete")


def _inherited_seed() -> Path | None:
    d = os.environ.get(_SEED_ENV)
    return Path(d) if d and _seed_done(Path(d)).is_file() else None


def _shipped_preset_cache() -> Path:
    """A cache folder holding the validated entries of every shipped preset, filled once per test run (validating
    the whole catalog with pydantic takes ~1-2 s of CPU; copying the entries, a few milliseconds): by the xdist
    controller for all its workers, else by the first process that needs it."""
    if not _SEED:
        inherited = _inherited_seed()
        if inherited is not None:
            _SEED.append(inherited)
            return inherited
        from kvplan.inputs import presets

        seed = Path(tempfile.mkdtemp(prefix="kvplan-test-seed-"))
        saved = {k: os.environ.get(k) for k in ("KVPLAN_CACHE_DIR", "KVPLAN_PRESETS")}
        os.environ.update(KVPLAN_CACHE_DIR=str(seed), KVPLAN_PRESETS="")
        try:
            presets.clear_caches()
            presets.all_models(), presets.all_gpus()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            presets.clear_caches()
        _seed_done(seed).touch()
        _SEED.append(seed)
    return _SEED[0]


# A worker of a run whose controller filled the seed starts its own cache from it: the catalog listings that test
# modules make when they are imported (parametrized ids) then read validated entries instead of validating all
# presets once more in each worker during collection.
if (_inherited := _inherited_seed()) is not None:
    shutil.copytree(_inherited, os.environ["KVPLAN_CACHE_DIR"], dirs_exist_ok=True, copy_function=shutil.copyfile)


def pytest_configure(config: pytest.Config) -> None:
    """In the pytest-xdist controller, fill the shipped-preset seed once, before the workers start, and hand it to
    them in the environment (each worker validated the catalog twice before: at collection and for user_dir)."""
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no":
        return
    if config.getoption("collectonly", False):
        return
    os.environ[_SEED_ENV] = str(_shipped_preset_cache())


@pytest.fixture
def shipped_cache(tmp_path) -> Path:
    """``tmp_path / "cache"`` holding the validated entries of the shipped presets (what a user's cache holds after
    one listing), for a ``kvplan`` subprocess given it as KVPLAN_CACHE_DIR: the process then reads the catalog from
    the cache instead of validating every preset with pydantic again (~1-2 s of CPU per listing)."""
    cache = tmp_path / "cache"
    shutil.copytree(_shipped_preset_cache(), cache, copy_function=shutil.copyfile)
    return cache


@pytest.fixture
def user_dir(tmp_path, monkeypatch) -> Path:
    """An empty user preset folder named by KVPLAN_PRESETS, and a cache folder of this test's own.  The test's cache
    starts with the validated entries of the shipped presets (copied from :func:`_shipped_preset_cache`: the same
    entries the test's first listing would write); nothing of a user preset is in it."""
    from kvplan.inputs import presets

    d = tmp_path / "presets"
    (d / "models").mkdir(parents=True)
    (d / "hardware").mkdir()
    # contents only (copyfile, not copy2): kvplan's cache checks checksums, never times or modes, and copying the
    # file metadata took three quarters of the copy
    shutil.copytree(_shipped_preset_cache(), tmp_path / "cache", copy_function=shutil.copyfile)
    monkeypatch.setenv("KVPLAN_PRESETS", str(d))
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    presets.clear_caches()
    yield d
    presets.clear_caches()
