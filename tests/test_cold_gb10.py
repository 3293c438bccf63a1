"""GB10 (DGX Spark, unified memory) under vLLM's cold path, derived by hand from vLLM v0.21.0.

``vllm/v1/worker/utils.py`` ``request_memory``: requested = ceil(total x util), total = ``cudaMemGetInfo``'s total
(121.69 GiB on GB10, the preset's ``cuda_total_bytes``); it refuses when the free memory at start is below that.
``vllm/utils/mem_utils.py`` ``MemorySnapshot.measure``: on an integrated GPU the free memory is psutil's available
memory, at least the preset's ``unified_free_bytes`` (torch's free at boot, 101.30 GiB).
"""

from __future__ import annotations

import math

from kvplan.engines.runtime import start_free_base
from kvplan.engines.vllm.budget import vllm_requested_bytes
from kvplan.inputs.resolve import resolve_gpu

GB10_TOTAL = 124_610 * 2**20  # 130,663,055,360 B = 121.69 GiB
GB10_FREE_AT_BOOT = 108_770_046_771  # 101.30 GiB


def test_gb10_preset_figures():
    g = resolve_gpu("gb10")
    assert g.cuda_total_bytes == GB10_TOTAL
    assert g.unified_free_bytes == GB10_FREE_AT_BOOT


def test_vllm_requests_a_fraction_of_the_cuda_total_not_of_the_free_memory():
    """util 0.8: ceil(0.8 x 130,663,055,360) = 104,530,444,288 B (97.35 GiB), the nemotron3-nano DGX Spark log's
    budget base; the free memory at start only gates the start."""
    assert vllm_requested_bytes(device_bytes=GB10_TOTAL, gpu_memory_utilization=0.8) == 104_530_444_288
    assert math.ceil(GB10_TOTAL * 0.8) == 104_530_444_288


def test_start_free_base_caps_at_the_free_at_boot_figure():
    """SGLang's start-up free memory on GB10 = min(121.69 GiB, 101.30 GiB) before the context."""
    base, why = start_free_base(resolve_gpu("gb10"))
    assert base == GB10_FREE_AT_BOOT and why.startswith("unified memory")
    h100_base, how = start_free_base(resolve_gpu("h100-sxm"))
    assert h100_base == resolve_gpu("h100-sxm").cuda_total_bytes and how == "CUDA total"
