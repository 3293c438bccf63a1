"""The unified-memory host term through the vLLM planner (kvplan.engines.vllm.planner ``_unified_host_bytes``, with
/work/patches/vllmcold-unified-host.patch): the GB10 log's cold plan prices the pinned host input buffers
(budget.vllm_unified_host_buffer_bytes, hand numbers in tests/test_vllm_budget_unified.py); a discrete GPU does
not."""

from __future__ import annotations

from kvplan.units import MiB
from scripts.accuracy_report import LOGS, inputs_for, load_cases


def _runtime_overhead(log_id: str, gpu_override: str | None = None) -> tuple[int, str]:
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import fit_recovered, recover_deployment

    model, gpu, over, _src = inputs_for(log_id, load_cases())
    rec = recover_deployment(
        read_log_file(LOGS / f"{log_id}.log"), model=model, gpu=gpu_override or gpu, overrides=over, mode="cold"
    )
    s = next(s for s in fit_recovered(rec.deployment).memory if s.name == "runtime overhead")
    return int(s.bytes), str(s.note)


def test_gb10_plan_prices_the_pinned_host_buffers():
    """Nemotron-3-Nano, 0.21, B 8,192 on GB10: 128 MiB + 67,346,432 B."""
    got, note = _runtime_overhead("nemotron3-nano-30b-a3b-bf16-dgxspark")
    assert got == 128 * MiB + 67_346_432
    assert "pinned host input buffers 64 MiB" in note


def test_a_discrete_gpu_plan_does_not():
    got, note = _runtime_overhead("nemotron3-nano-30b-a3b-bf16-dgxspark", gpu_override="h100-sxm")
    assert got == 128 * MiB
    assert "pinned host" not in note
