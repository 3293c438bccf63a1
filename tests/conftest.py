"""Shared test settings.

``SHARED`` is the copy of the project's reference material kept in tests/data/shared (hf-configs, reference
JSON, validation cases), so the suite needs nothing outside the repository.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The suite's own cache (validated presets, weight estimates), not the user's ~/.cache/kvplan.
os.environ["KVPLAN_CACHE_DIR"] = tempfile.mkdtemp(prefix="kvplan-test-cache-")
# Never the internet: a model id that is not a preset would make kvplan ask the Hugging Face Hub; point every such
# request at a closed local port (connection refused at once).  tests/test_hub.py sets its own stand-in server.
os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="kvplan-test-hf-")
# Only the shipped catalog: a developer's own ~/.config/kvplan presets must not leak into the tests.
os.environ["KVPLAN_PRESETS"] = ""

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "tests" / "data" / "shared"

# Deterministic property/fuzz runs in CI: derandomized, no example database, no deadline flakiness.
settings.register_profile(
    "kvplan", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("kvplan")


@pytest.fixture
def user_dir(tmp_path, monkeypatch) -> Path:
    """An empty user preset folder named by KVPLAN_PRESETS, and a cache folder of this test's own."""
    from kvplan.inputs import presets

    d = tmp_path / "presets"
    (d / "models").mkdir(parents=True)
    (d / "hardware").mkdir()
    monkeypatch.setenv("KVPLAN_PRESETS", str(d))
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    presets.clear_caches()
    yield d
    presets.clear_caches()
