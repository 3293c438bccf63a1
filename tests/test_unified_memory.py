"""Unified-memory GPUs under vLLM (issue 25 item 4): free memory at start is the host's available memory
(``utils/mem_utils.py`` ``device_memory_info``, v0.34.0) and vLLM refuses to start when it is below
``ceil(total x util)`` (``v1/worker/utils.py`` ``request_memory``, v0.34.0).

Hand arithmetic, GB10 (CUDA total 124,610 MiB = 130,663,055,360 B; 101.30 GiB = 108,770,046,771 B free at boot):
util 0.92 -> ceil(120,210,010,931.2) = 120,210,010,932 B (111.95 GiB) > free: refused, and the largest utilization
that starts is floor(100 x 108,770,046,771 / 130,663,055,360) / 100 = 0.83; util 0.8 -> 104,530,444,288 B: starts.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

from kvplan.engines.vllm.adapter import _unified_memory_check
from kvplan.errors import EngineRefusal

TOTAL = 124_610 * 2**20
FREE = 108_770_046_771
GB10: Any = SimpleNamespace(name="NVIDIA GB10", unified_free_bytes=FREE)
DEP: Any = SimpleNamespace(kv_cache_memory_bytes=None)


def _plan(util: float) -> Any:
    return SimpleNamespace(budget_terms=(("requested", math.ceil(TOTAL * util)),))


def test_gb10_default_utilization_is_refused_with_the_largest_that_starts():
    assert math.ceil(TOTAL * 0.92) == 120_210_010_932
    with pytest.raises(EngineRefusal) as e:
        _unified_memory_check(DEP, GB10, _plan(0.92), TOTAL, [])
    assert "101.30 GiB available" in str(e.value) and "111.95 GiB" in str(e.value)
    assert "0.83" in (e.value.hint or "")


def test_gb10_at_0_8_starts_and_says_why():
    notes: list[str] = []
    _unified_memory_check(DEP, GB10, _plan(0.8), TOTAL, notes)
    assert math.ceil(TOTAL * 0.8) == 104_530_444_288 < FREE
    assert notes and "unified memory" in notes[0]


def test_a_discrete_gpu_is_not_checked():
    notes: list[str] = []
    h100: Any = SimpleNamespace(name="NVIDIA H100")
    _unified_memory_check(DEP, h100, _plan(0.99), TOTAL, notes)
    assert notes == []
