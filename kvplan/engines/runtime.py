"""Runtime overhead at engine start: what CUDA, the communicators and the driver take before weights.

Cold mode (no ``--free-memory``) needs ``free_at_start`` = the free memory SGLang measures after the
CUDA context and torch.distributed/NCCL are up (``Load weight begin. avail mem``).  kvplan models it as::

    free_at_start = cuda_total - context - communicators(tp, interconnect)

* ``cuda_total``: :func:`device_total`, the one device-total rule (:mod:`kvplan.inputs.presets.device`):
  what ``torch.cuda.mem_get_info()[1]`` reports (the preset's ``cuda_total_bytes``), else nvidia-smi's
  ``memory.total`` minus the 0.57 GiB median driver reservation.
* ``context``: the CUDA context at TP1.  Most of it is the context's local-memory (stack) reservation, which the
  driver sizes for every thread the device can hold resident: ``max threads per SM x SMs x local memory per
  thread``, shared by all launches and grown, never shrunk, to the largest per-thread need of any kernel launched
  (NVIDIA developer forum, "Local memory management", forums.developer.nvidia.com/t/local-memory-management/289339/9,
  pointing to ``cuCtxCreate`` ``CU_CTX_LMEM_RESIZE_TO_MAX`` and ``cuCtxSetLimit``).  Where the preset's SMs and
  threads per SM are recorded (:func:`kvplan.inputs.presets.device.resident_threads`) kvplan prices it as
  ``resident threads x LOCAL_MEM_PER_THREAD_BYTES`` (:func:`context_bytes`); 2,388 B per thread is the
  least-squares slope through zero of three vLLM start-up snapshots taken before any communicator (CUDA total -
  free at start): L4 0.19 GiB of 89,088 threads (vLLM "Free memory on device (21.84/22.03 GiB) on startup",
  code-search hit 69494016274), L40S 0.49 of 218,112 (44.42 - 43.93, vLLM 0.10.2) and H200 0.60 of 270,336
  (139.81 - 139.21, vLLM 0.10.2): 2.29, 2.36 and 2.33 KiB per thread.  Elsewhere the median 0.55 GiB of H100-class
  logs (0.37-0.68 GiB: docs.sglang.ai Llama-3.1-8B 78.81 of 79.18; sglang PR #4760 78.59; sglang-kt 78.49/78.51).
* ``communicators``: only when tp*pp > 1.  NVLink parts run NCCL plus SGLang's custom all-reduce /
  NVLS buffers, which the logs show as roughly constant in TP (H100 TP8 "Init torch distributed ends.
  mem usage=1.25 GB", P = 77.43 of 79.18; B200 TP4 176.28 of 178.35; H200 TP8 137.29-137.90 of
  139.81): 1.35 GiB.  PCIe parts have no custom all-reduce; NCCL buffers grow with the peers
  (RTX PRO 6000 TP8 93.99 GiB, L4 TP4 21.63 GiB, RTX 4090 TP2 22.84 GiB): 0.0625 GiB per rank.
  AMD xGMI (RCCL + custom all-reduce, MI355X TP8 283.53 vs TP1 287.18 GiB): 0.45 GiB per rank.

The per-case error of this model is listed in docs/accuracy.md; every value is overridable with
``--free-memory`` (measured) and ``--gpu-memory`` (device total).
"""

from __future__ import annotations

from typing import Protocol

# the device total is one rule in the inputs layer (below engines, so the log checks share it); re-exported here
from kvplan.inputs.presets.device import GpuMemory, resident_threads
from kvplan.inputs.presets.device import cuda_total_from_nvidia_smi as cuda_total_from_nvidia_smi
from kvplan.inputs.presets.device import device_total as device_total
from kvplan.units import GiB

CONTEXT_BYTES = int(0.55 * GiB)
#: local memory the CUDA context reserves per resident thread (module docstring: three vLLM snapshots)
LOCAL_MEM_PER_THREAD_BYTES = 2388
NVLINK_COMM_BYTES = int(1.35 * GiB)
PCIE_COMM_PER_RANK_BYTES = int(0.0625 * GiB)
XGMI_COMM_PER_RANK_BYTES = int(0.45 * GiB)


#: communicator buffers by interconnect: (bytes, counted per rank?); any other link is counted like PCIe
COMMUNICATOR_BYTES: dict[str, tuple[int, bool]] = {
    "nvlink": (NVLINK_COMM_BYTES, False),
    "nvlink-c2c": (NVLINK_COMM_BYTES, False),
    "xgmi": (XGMI_COMM_PER_RANK_BYTES, True),
    "pcie": (PCIE_COMM_PER_RANK_BYTES, True),
}


class GpuLike(GpuMemory, Protocol):
    """What the free-at-start model reads of a GPU (``kvplan.inputs.presets.HardwarePreset`` has it): what the device
    total reads (nvidia-smi's ``memory_mib``, the recorded ``cuda_total_bytes``) and the interconnect."""

    @property
    def interconnect(self) -> str: ...  # nvlink | nvlink-c2c | pcie | xgmi | other


def start_free_base(gpu: GpuLike) -> tuple[int, str]:
    """(bytes the start-up snapshot can see before the context, how): :func:`device_total`, or on a unified-memory
    GPU (GB10: the preset's ``unified_free_bytes``) the lower of it and what the device reports free at boot.  On an
    integrated GPU (``torch.cuda.get_device_properties().is_integrated``) both engines read the host's
    ``psutil.virtual_memory().available`` as free memory (vLLM v0.21.0 ``vllm/utils/mem_utils.py``
    ``MemorySnapshot.measure``; SGLang v0.5.15 ``srt/utils/common.py`` ``get_available_gpu_memory``): the OS and
    the other processes hold part of the pool.  The preset's figure is ``torch.cuda.mem_get_info``'s free at boot,
    which leaves out reclaimable page cache, so it is a lower bound on what the engines read (the CPU side's page
    cache varies from run to run; no log prints psutil's figure).  SGLang's ``Load weight begin. avail mem`` and
    vLLM's ``Free memory on device ... on startup`` are that figure less the context (and communicators).  GH200 is
    not integrated (its HBM is its own; ``cudaMemGetInfo`` reports it), so it takes the device total.

    Example: GB10, CUDA total 121.69 GiB, 101.30 GiB free at boot -> (108,770,046,771, "unified memory: ...");
    an H100 SXM -> (85,024,246,333, "CUDA total").
    """
    total, recorded = device_total(gpu)
    unified = getattr(gpu, "unified_free_bytes", None)
    if unified and int(unified) < total:
        return int(unified), f"unified memory: {int(unified) / GiB:.2f} GiB free at boot (host-shared)"
    return total, "CUDA total" if recorded else f"nvidia-smi {gpu.memory_mib:,} MiB - 0.57 GiB"


def context_bytes(gpu: object | None = None) -> int:
    """The CUDA context's bytes on this GPU: ``resident threads x LOCAL_MEM_PER_THREAD_BYTES`` for an NVIDIA preset
    whose SMs and threads per SM are recorded (:func:`kvplan.inputs.presets.device.resident_threads`), else
    :data:`CONTEXT_BYTES` (the median; AMD's scratch reservation is not this rule).

    Example: L4, 58 x 1,536 = 89,088 threads x 2,388 B = 212,742,144 B (0.20 GiB); an H100 SXM, 270,336 x 2,388 =
    645,562,368 B (0.60 GiB); no GPU -> 590,558,003 B (0.55 GiB).
    """
    if gpu is None or str(getattr(gpu, "vendor", "nvidia") or "nvidia") != "nvidia":
        return CONTEXT_BYTES
    threads = resident_threads(gpu)
    return threads * LOCAL_MEM_PER_THREAD_BYTES if threads else CONTEXT_BYTES


def runtime_overhead_bytes(*, world_size: int, interconnect: str, context: int | None = None) -> int:
    """Bytes taken before weight load on each GPU (context + communicators).

    ``world_size`` = ranks that share communicators (tp * pp, x dp for DP attention); ``context`` = the GPU's
    :func:`context_bytes` (default the median :data:`CONTEXT_BYTES`).
    Example: 8 ranks on PCIe -> 0.55 + 8 * 0.0625 = 1.05 GiB = 1,127,428,915 B; on an L4 (context 212,742,144 B),
    4 ranks -> 212,742,144 + 4 x 67,108,864 = 481,177,600 B (0.45 GiB).
    """
    if world_size < 1:
        raise ValueError("world_size must be >= 1")
    ctx = CONTEXT_BYTES if context is None else context
    if world_size == 1:
        return ctx
    comm, per_rank = COMMUNICATOR_BYTES.get(interconnect, COMMUNICATOR_BYTES["pcie"])
    return ctx + (comm * world_size if per_rank else comm)


def snapshot_includes_communicators(*, engine: str, engine_version: str | None = None) -> bool:
    """Whether the engine's "free at start" figure is taken after the communicators are created.

    SGLang: always (``Load weight begin. avail mem`` follows ``init_torch_distributed``, sgl-project/sglang
    python/sglang/srt/model_executor/model_runner.py ``ModelRunner.init_torch_distributed``, v0.5.23).
    vLLM: the release's ``snapshot_after_comm`` (:mod:`kvplan.engines.vllm.releases`: from 0.11, the first release
    after the 0.10.x logs that show the old order; vllm-project/vllm vllm/v1/worker/gpu_worker.py
    ``Worker.init_device``, v0.33.0: "Initialize the distributed environment BEFORE taking memory snapshot").
    No version = the newest = True; a version string without a number reads as the oldest window (False).
    Example: ``snapshot_includes_communicators(engine="vllm", engine_version="0.10.2")`` -> False.
    """
    if engine != "vllm" or not engine_version:
        return True
    from kvplan.engines.vllm.releases import release_at  # lazy: SGLang runs never load vLLM rules
    from kvplan.version import parse_version

    parsed = parse_version(engine_version)
    return release_at(parsed.triple if parsed else (0, 0, 0)).snapshot_after_comm


def modelled_free_at_start(
    *, gpu: GpuLike, world_size: int, engine: str = "sglang", engine_version: str | None = None
) -> tuple[int, str]:
    """(free bytes per GPU at the engine's start-up snapshot, how it was modelled) for a hardware preset.

    ``free = base - CONTEXT_BYTES - communicators`` where base is :func:`start_free_base` (the preset's CUDA total,
    else :func:`cuda_total_from_nvidia_smi`; on unified memory at most the free-at-boot figure) and communicators
    are counted only when the snapshot follows them
    (:func:`snapshot_includes_communicators`).  Example: RTX PRO 6000 Server, SGLang TP8 (PCIe):
    95.02 - 0.55 - 8 x 0.0625 = 93.97 GiB (log: 93.99 GiB, glm5-nvfp4-8x-rtxpro6000-tp8).
    """
    total, src = start_free_base(gpu)
    ctx = context_bytes(gpu)
    what = "context" if ctx == CONTEXT_BYTES else f"context {ctx / GiB:.2f} GiB"
    if snapshot_includes_communicators(engine=engine, engine_version=engine_version):
        overhead = runtime_overhead_bytes(world_size=world_size, interconnect=gpu.interconnect, context=ctx)
        why = f"{src} - {what} - {gpu.interconnect} communicators for {world_size} rank(s)"
    else:
        overhead = ctx
        why = f"{src} - {what} (this vLLM version snapshots before NCCL)"
    return total - overhead, why


#: NCCL's NVLS (NVLink SHARP) defaults, NVIDIA/nccl v2.26.2-1 ``src/transport/nvls.cc``: channels on SM90 / SM100,
#: ``NCCL_NVLS_CHUNKSIZE`` and ``NCCL_STEPS`` (``src/include/device.h``)
NVLS_CHANNELS_SM90 = 16
NVLS_CHANNELS_SM100 = 32
NVLS_CHUNK_BYTES = 128 * 1024
NCCL_STEPS = 8


def nccl_nvls_buffer_bytes(*, ranks: int, sm_major: int | None, multicast: bool) -> int:
    """Device memory of one NCCL communicator's NVLS buffers, set up at its first NVLS collective (bytes).

    NCCL enables NVLS only on more than two GPUs of a multicast-capable fabric (NVSwitch systems, SM 9.0+)
    (``ncclNvlsInit``: ``gpuCount <= 2`` returns without it), with 16 channels on SM90 and 32 on SM100+, and
    ``ncclNvlsBufferSetup`` allocates ``nChannels x 2 x (NVLS_CHUNKSIZE x NCCL_STEPS) x nHeads`` of physical memory on
    each GPU (``nvlsAllocateMem``: ``cuMemCreate`` of that size), one head per GPU of the node (NVIDIA/nccl
    v2.26.2-1 ``src/transport/nvls.cc``; ``src/graph/search.cc``: the NVLS pattern needs an NVSwitch and SM 9.0+,
    one channel per GPU pulling from NVLS, and ``src/graph/connect.cc`` takes their distinct first GPUs as the
    heads; the NCCL that torch 2.7.1, vLLM 0.10.0's torch, pins).

    Example: 4x H100 SXM (SM90, NVSwitch) -> 16 x 2 x 1 MiB x 4 = 134,217,728 B (128 MiB); 4x B200 (SM100) ->
    32 x 2 x 1 MiB x 4 = 268,435,456 B; 2 GPUs, or a PCIe / bridged card -> 0.
    """
    if not multicast or ranks <= 2 or sm_major is None or sm_major < 9:
        return 0
    channels = NVLS_CHANNELS_SM100 if sm_major >= 10 else NVLS_CHANNELS_SM90
    return channels * 2 * NVLS_CHUNK_BYTES * NCCL_STEPS * ranks
