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


def test_the_nemotron_log_leaves_three_gib_for_activation_and_non_torch_against_one_priced():
    """docs/accuracy.md ("cold-4"): what the DGX Spark log pins, by hand, and what kvplan's cold terms price.

    vLLM 0.21 ``Worker.determine_available_memory``: ``equivalent util = round(util - estimate / total, 4)``, so
    "0.8000 ... equivalent to 0.7924" puts the CUDA-graph estimate in (0.00755, 0.00765] x total = 0.919 - 0.931 GiB.
    The rest of the requested 97.35 GiB is the KV cache (34.32 GiB, +/- 0.005), the weights and activation +
    non-torch: at least 97.35 - 34.325 - 0.931 - 58.88 = 3.2 GiB, against kvplan's 0.88 (forward over 8,192 tokens)
    + 0.125 (workspaces) + 0.06 (the pinned host input buffers, once the planner passes them:
    budget.vllm_unified_host_buffer_bytes).  0.21 takes the closing snapshot after ``profile_cudagraph_memory`` (one
    ``memory_profiling`` block holds both), and on an integrated GPU its free memory is psutil's available memory,
    so host memory taken by the process before then counts; nothing in the log prices it.  This fails when a term
    closes the gap (then the explanation moves with it)."""
    import re

    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import fit_recovered, recover_deployment
    from kvplan.units import GiB
    from scripts.accuracy_report import LOGS, inputs_for, load_cases

    log_id = "nemotron3-nano-30b-a3b-bf16-dgxspark"
    text = (LOGS / f"{log_id}.log").read_text()
    util, equiv = (float(x) for x in re.search(r"utilization=([\d.]+) is equivalent to .*?=([\d.]+)", text).groups())
    assert (util, equiv) == (0.8, 0.7924)
    graph_low, graph_high = (util - equiv - 0.00005) * GB10_TOTAL, (util - equiv + 0.00005) * GB10_TOTAL
    assert 0.91 * GiB < graph_low < graph_high < 0.94 * GiB

    model, gpu, over, _src = inputs_for(log_id, load_cases())
    rec = recover_deployment(read_log_file(LOGS / f"{log_id}.log"), model=model, gpu=gpu, overrides=over, mode="cold")
    got = {s.name: s.bytes for s in fit_recovered(rec.deployment).memory}
    requested = vllm_requested_bytes(device_bytes=GB10_TOTAL, gpu_memory_utilization=util)
    left = requested - 34.325 * GiB - graph_high - got["weights"]  # activation + non-torch, at least
    priced = got["activation peak"] + got["runtime overhead"]
    assert left > 3.2 * GiB and priced < 1.1 * GiB, (left / GiB, priced / GiB)
    assert got["CUDA graphs"] < graph_low - 0.6 * GiB  # kvplan's 9 graphs x 32.2 MiB: no first-capture term
