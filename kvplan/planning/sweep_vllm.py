"""The import path of vLLM's sweep vector path before the sweep became a package: :mod:`kvplan.planning.sweep.vllm`
(re-exported, so callers and benchmarks keep working)."""

from __future__ import annotations

from kvplan.planning.sweep.vllm import (
    VllmVector,
    evaluate_group,
    prepare_group,
    row_facts,
    vector_reason,
    vector_reasons,
)

__all__ = ["VllmVector", "evaluate_group", "prepare_group", "row_facts", "vector_reason", "vector_reasons"]
