"""Runtime overhead at engine start: what CUDA, the communicators and the driver take before weights.

Cold mode (no ``--free-memory``) needs ``free_at_start`` = the free memory SGLang measures after the
CUDA context and torch.distributed/NCCL are up (``Load weight begin. avail mem``).  kvplan models it as::

    free_at_start = cuda_total - context - communicators(tp, interconnect)

* ``cuda_total``: what ``torch.cuda.mem_get_info()[1]`` reports (the preset's ``cuda_total_bytes``).
  Where no source gives it, nvidia-smi's ``memory.total`` minus the driver reservation seen on the
  parts where both are known (H100 80GB 0.47, B200 0.71, A100 40GB 0.61, L40S 0.57, RTX 3090 0.42 GiB;
  median 0.57 GiB; /work/shared/reference/hardware.json cuda_total_observed).
* ``context``: CUDA context + caching allocator + torch at TP1: H100 TP1 logs show 0.37-0.68 GiB
  below the CUDA total (docs.sglang.ai Llama-3.1-8B 78.81 of 79.18; sglang PR #4760 78.59;
  sglang-kt runs 78.49/78.51), RTX 3090 0.82 GiB; kvplan uses 0.55 GiB.
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

GiB = 2**30

DRIVER_RESERVE_BYTES = int(0.57 * GiB)
CONTEXT_BYTES = int(0.55 * GiB)
NVLINK_COMM_BYTES = int(1.35 * GiB)
PCIE_COMM_PER_RANK_BYTES = int(0.0625 * GiB)
XGMI_COMM_PER_RANK_BYTES = int(0.45 * GiB)


def cuda_total_from_nvidia_smi(*, memory_mib: int) -> int:
    """CUDA-visible total estimated from nvidia-smi's MiB: ``memory_mib * 2**20 - 0.57 GiB``.

    Example: RTX PRO 6000 Blackwell, 97,887 MiB -> 102,641,958,912 - 612,032,839 = 102,029,926,073 B (95.02 GiB).
    """
    return memory_mib * 2**20 - DRIVER_RESERVE_BYTES


def runtime_overhead_bytes(*, world_size: int, interconnect: str) -> int:
    """Bytes taken before weight load on each GPU (context + communicators).

    ``world_size`` = ranks that share communicators (tp * pp, x dp for DP attention).
    Example: 8 ranks on PCIe -> 0.55 + 8 * 0.0625 = 1.05 GiB = 1,127,428,915 B.
    """
    if world_size < 1:
        raise ValueError("world_size must be >= 1")
    comm = 0
    if world_size > 1:
        if interconnect in ("nvlink", "nvlink-c2c"):
            comm = NVLINK_COMM_BYTES
        elif interconnect == "xgmi":
            comm = XGMI_COMM_PER_RANK_BYTES * world_size
        else:
            comm = PCIE_COMM_PER_RANK_BYTES * world_size
    return CONTEXT_BYTES + comm
