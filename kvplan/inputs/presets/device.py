"""The device total: the one rule for how many bytes of memory a GPU preset has (issue 21 item 5).

Every planner, what-if and free-memory model (through :func:`kvplan.engines.runtime.device_total`), the log
plausibility check (:mod:`kvplan.inputs.logs.plausible`, the largest catalogued GPU), ``HardwarePreset.device_bytes``
and ``kvplan gpus`` (column ``device_total_bytes``) read it here.  It lives in the inputs layer, below engines, so
that both can import it (docs/architecture.md layer table).

The quantity is the CUDA-visible device total, what ``torch.cuda.mem_get_info()[1]`` (HIP ``totalGlobalMem`` on
ROCm) reports: the engines size their pools from it (SGLang ``get_available_gpu_memory``, vLLM's
``total_gpu_memory``), and it is the figure the engines' logs print as the GPU's total.  A preset records it as
``cuda_total_bytes`` where a source gives it; otherwise it is estimated from nvidia-smi's ``memory.total`` (MiB)
less the driver reservation seen on the parts where both are known (H100 80GB 0.47, B200 0.71, A100 40GB 0.61,
L40S 0.57, RTX 3090 0.42 GiB; median 0.57 GiB; tests/data/shared/reference/hardware.json cuda_total_observed).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol

from kvplan.units import GiB, MiB

#: the driver's reservation between nvidia-smi's memory.total and the CUDA-visible total (median of the known parts)
DRIVER_RESERVE_BYTES = int(0.57 * GiB)


class GpuMemory(Protocol):
    """What the device total reads of a GPU (``kvplan.inputs.presets.HardwarePreset`` has it)."""

    @property
    def memory_mib(self) -> int: ...  # nvidia-smi memory.total
    @property
    def cuda_total_bytes(self) -> int | None: ...  # torch.cuda.mem_get_info()[1], when known


def cuda_total_from_nvidia_smi(*, memory_mib: int) -> int:
    """CUDA-visible total estimated from nvidia-smi's MiB: ``memory_mib * 2**20 - 0.57 GiB``.

    Example: RTX PRO 6000 Blackwell, 97,887 MiB -> 102,641,958,912 - 612,032,839 = 102,029,926,073 B (95.02 GiB).
    """
    return memory_mib * MiB - DRIVER_RESERVE_BYTES


def device_total(gpu: GpuMemory) -> tuple[int, bool]:
    """(the device total the engines see, whether it is the preset's recorded CUDA total): the CUDA-visible total
    (``torch.cuda.mem_get_info()[1]``) when the preset records it, else :func:`cuda_total_from_nvidia_smi`.  The one
    rule for every planner, what-if, free-memory model, log plausibility bound and ``kvplan gpus``.

    Example: an H100 SXM preset with ``cuda_total_bytes`` 85,024,246,333 -> (85,024,246,333, True); a preset with
    only nvidia-smi's 97,887 MiB -> (102,029,926,073, False).
    """
    if gpu.cuda_total_bytes:
        return gpu.cuda_total_bytes, True
    return cuda_total_from_nvidia_smi(memory_mib=gpu.memory_mib), False


#: (SMs, maximum resident threads per SM) per GPU preset id, as the device reports them: torch inductor's
#: ``DeviceProperties(multi_processor_count=..., cc=..., max_threads_per_multi_processor=...)`` in public compiled
#: kernels (code-search hits: 58 / cc 89 / 1,536 = L4, 66305385590; 142 / cc 89 / 1,536 = L40S, L40 and RTX 6000 Ada,
#: 57387644062; 132 / cc 90 / 2,048 = H100 SXM, H200, H800, 12072014460; 148 / cc 100 / 2,048 = B200, 66211390466;
#: 188 / cc 120 / 1,536 = RTX PRO 6000 Blackwell, 70454787342; 82 / cc 86 = RTX 3090, 30139490148).  The threads
#: per SM are the compute capability's
#: (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 2,048 on 8.0 / 9.0 / 10.0, 1,536 on
#: 8.6 / 8.9 / 12.x).  A GPU not listed has no per-GPU CUDA-context figure (the runtime model keeps its median).
RESIDENT_THREADS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "l4": (58, 1536),
        "l40s": (142, 1536),
        "l40": (142, 1536),
        "rtx-6000-ada": (142, 1536),
        "h100-sxm": (132, 2048),
        "h200-sxm": (132, 2048),
        "h800": (132, 2048),
        "b200": (148, 2048),
        "rtx-pro-6000-server": (188, 1536),
        "rtx-pro-6000-ws": (188, 1536),
        "rtx-pro-6000-maxq": (188, 1536),
        "rtx-3090": (82, 1536),
    }
)


def resident_threads(gpu: object) -> int | None:
    """SMs x maximum resident threads per SM of a GPU preset (:data:`RESIDENT_THREADS`, by ``gpu.id``), None when not
    recorded.  Example: the L4 preset -> 58 x 1,536 = 89,088; an H100 SXM -> 132 x 2,048 = 270,336."""
    entry = RESIDENT_THREADS.get(str(getattr(gpu, "id", "") or ""))
    return entry[0] * entry[1] if entry else None
