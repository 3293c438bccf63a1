"""The CUDA context per GPU (kvplan.engines.runtime.context_bytes): the driver's local-memory reservation for every
resident thread, ``SMs x max threads per SM x 2,388 B`` where the preset's SMs are recorded, by hand."""

from __future__ import annotations

from types import SimpleNamespace

from kvplan.engines import runtime
from kvplan.inputs.presets.device import resident_threads
from kvplan.inputs.resolve import resolve_gpu
from kvplan.units import GiB


def test_resident_threads_from_the_recorded_sms():
    assert resident_threads(resolve_gpu("l4")) == 58 * 1536 == 89_088
    assert resident_threads(resolve_gpu("h100-sxm")) == 132 * 2048 == 270_336
    assert resident_threads(resolve_gpu("rtx-pro-6000-maxq")) == 188 * 1536 == 288_768
    assert resident_threads(resolve_gpu("a100-sxm-80gb")) is None  # not recorded: the median applies


def test_context_bytes_by_gpu():
    assert runtime.context_bytes(resolve_gpu("l4")) == 89_088 * 2388 == 212_742_144
    assert runtime.context_bytes(resolve_gpu("h200-sxm")) == 270_336 * 2388 == 645_562_368
    assert runtime.context_bytes(resolve_gpu("a100-sxm-80gb")) == runtime.CONTEXT_BYTES == int(0.55 * GiB)
    assert runtime.context_bytes(None) == runtime.CONTEXT_BYTES
    amd = SimpleNamespace(id="l4", vendor="amd")  # the rule is NVIDIA's local-memory reservation only
    assert runtime.context_bytes(amd) == runtime.CONTEXT_BYTES


def test_the_three_vllm_snapshots_the_rate_comes_from():
    """CUDA total - free at start, before any communicator: L4 22.03 - 21.84 = 0.19 GiB, L40S 44.42 - 43.93 = 0.49,
    H200 139.81 - 139.21 = 0.60 (2-decimal GiB prints); the modelled contexts are within 0.01 GiB of each."""
    for gpu, logged in (("l4", 0.19), ("l40s", 0.49), ("h200-sxm", 0.60)):
        assert abs(runtime.context_bytes(resolve_gpu(gpu)) / GiB - logged) < 0.011, gpu


def test_free_at_start_on_the_l4_tp4_log():
    """qwq-32b-4xL4-tp4 (SGLang, TP4 PCIe): 23,659,901,092 B (22.035 GiB) - 212,742,144 - 4 x 67,108,864 =
    23,178,723,492 B = 21.587 GiB against the logged 21.63 (the median context gave 21.24)."""
    free, why = runtime.modelled_free_at_start(gpu=resolve_gpu("l4"), world_size=4)
    assert free == 23_659_901_092 - 212_742_144 - 4 * int(0.0625 * GiB) == 23_178_723_492
    assert "context 0.20 GiB" in why and "pcie communicators for 4 rank(s)" in why
    assert runtime.runtime_overhead_bytes(world_size=4, interconnect="pcie", context=212_742_144) == 481_177_600


def test_v0_non_torch_with_the_gpu_context():
    """vLLM 0.6.4 subtracts everything outside torch, the context included (budget.vllm_default_non_torch_bytes):
    with the GPU's context it is context + 128 MiB workspaces (+ communicators): RTX 3090 TP1 300,773,376 +
    134,217,728 = 434,991,104 B (logged 0.35 GiB); H200 645,562,368 + 134,217,728 = 779,780,096 B = 0.73 GiB (logged
    0.73); without a context the 0.55 GiB median stands for the whole term."""
    from kvplan.engines.vllm.budget import vllm_default_non_torch_bytes

    ctx_3090 = runtime.context_bytes(resolve_gpu("rtx-3090"))
    assert ctx_3090 == 82 * 1536 * 2388 == 300_773_376
    assert vllm_default_non_torch_bytes(engine_version="0.6.4", context=ctx_3090) == 434_991_104
    h200 = vllm_default_non_torch_bytes(engine_version="0.6.4", context=runtime.context_bytes(resolve_gpu("h200-sxm")))
    assert h200 == 779_780_096 and abs(h200 / GiB - 0.73) < 0.005
    assert vllm_default_non_torch_bytes(engine_version="0.6.4") == runtime.CONTEXT_BYTES
    # 0.6.5+ / V1 keep the context outside the budget: the argument changes nothing there
    assert vllm_default_non_torch_bytes(engine_version="0.11.0", context=ctx_3090) == 128 * 2**20
