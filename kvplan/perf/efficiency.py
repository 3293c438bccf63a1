"""Achievable fractions of the hardware's peaks and the fixed costs of a step: one set per GPU class.

The class is derived from facts the preset holds (vendor, arch, form, link, p2p: :func:`gpu_class`); the constants
are declared once here, each with where it was measured or sourced.  There is no constant per model or per row:
every deployment on a GPU of a class uses that class's numbers.

Constants (:class:`Efficiency`):

* ``compute``: fraction of dense tensor peak reached by the step's matrix products (GEMMs; the routed experts'
  grouped GEMMs too where the class declares no ``moe_compute``);
* ``moe_compute``: fraction of the routed-expert dtype's dense peak reached by the grouped MoE GEMMs (the fused-MoE
  kernels: tokens gathered per expert, many small GEMMs in one launch); 0 where the class declares none, and then
  ``compute`` applies (:func:`expert_compute`);
* ``attention``: fraction of dense peak reached by attention kernels (flash / MLA / sparse kernels run below GEMM
  efficiency: softmax, masking, irregular tiles);
* ``memory``: fraction of memory bandwidth reached by weight and KV streaming;
* ``link``: NCCL "bus bandwidth" of an all-reduce as a fraction of the link's per-direction rate;
* ``alpha_s``: latency of one collective (small-message floor);
* ``kernel_graph_s`` / ``kernel_eager_s``: cost of one kernel replayed inside a CUDA graph / launched eagerly
  (Python dispatch + launch + the idle gap), added per kernel of the step;
* ``step_s``: per-step host cost outside the forward (scheduling, sampling, output processing);
* ``gemm_tile_gbs``: GB/s one output tile (128 columns) of a block-scaled fp8 / fp4 GEMM with few rows streams
  (:func:`kvplan.perf.ops.narrow_gemm_seconds`); 0 where no measurement of the class is declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.perf.record import Record

#: the constants a calibration (``SpeedInputs.calibration``, ``kvplan calibrate-speed``) may scale: every numeric
#: field of :class:`Efficiency` (docs/speed.md, "Calibration")
CONSTANT_NAMES: tuple[str, ...] = (
    "compute",
    "attention",
    "memory",
    "link",
    "alpha_s",
    "kernel_graph_s",
    "kernel_eager_s",
    "step_s",
    "gemm_tile_gbs",
    "moe_compute",
)


class Efficiency(Record):
    gpu_class: str
    compute: float
    attention: float
    memory: float
    link: float
    alpha_s: float
    kernel_graph_s: float
    kernel_eager_s: float
    step_s: float
    sources: tuple[str, ...]
    gemm_tile_gbs: float = 0.0
    moe_compute: float = 0.0


_NCCL_PCIE = (
    "link 0.34 and alpha 20 us: NCCL all-reduce bus bandwidth 22 GB/s at 8 GPUs with default settings on a PCIe 5.0 "
    "box (of 64 GB/s per direction), small messages 13-25 us per all-reduce (voipmonitor/rtx6kpro "
    "hardware/pcie-bandwidth.md and optimization/pcie-oneshot-allreduce.md)"
)
_SOL_MEMORY = "memory 0.8: aiconfigurator's speed-of-light mode streams at 0.8 x memory bandwidth"
_KERNELS = (
    "kernel and step costs: the per-kernel gap of a CUDA-graph replay (~2-3 us on datacenter parts), an eager "
    "PyTorch op's dispatch + launch (10-20 us: the PyTorch profiler's CPU time per aten op on a busy host; 15 us, "
    "the middle, for every class); "
    "checked against the decode rows of docs/speed-accuracy.md as a class, not per row"
)

_NARROW_GEMM_SM120 = (
    "gemm_tile_gbs 40: a block-scaled GEMM of 4 rows on RTX PRO 6000 Blackwell (graph replay, L2 flushed) streams "
    "k 7,168 x n 576 at 211 GB/s, n 1,536 at 537, n 2,304 at 655, n 3,584 at 1,024 (local-inference-lab/b12x PR 277): "
    "42, 45, 36 and 37 GB/s per 128-column tile; NVFP4 on the same card, m 1-16: n 512 x k 7,168 13.7-14.3 us, "
    "n 1,024 14.9-16.4 us (flashinfer-ai/flashinfer PR 3051, b12x): 37 and 35 GB/s per tile; SGLang PR 39872 names "
    "these GEMMs the dominant cost of DeepSeek-V4.1-Flash decode on 8 RTX PRO 6000"
)

_GROUPED_MOE_HOPPER = (
    "moe_compute 0.25: grouped MoE GEMMs measured on H100 reach about a quarter of the dense peak: Triton fused MoE "
    "215 TFLOPS and torch._grouped_mm 242 TFLOPS of 989 (bf16, 32,768 tokens, E 128 / hidden 2,048 / FFN 768 / "
    "top-8; 71 and 181 TFLOPS at E 512 / FFN 512 / top-10; ByteDance-Seed/VeOmni PR 460), the best tuned Triton "
    "grouped GEMM 523 TFLOPS, 'roughly half of the H100's dense bf16 peak' (linkedin/Liger-Kernel PR 1294); "
    "block-FP8 Triton / CUTLASS GEMMs at N 2,112 x K 7,168, M 4,096-8,192: 403-407 / 457-490 TFLOPS of the 1,979 "
    "FP8 peak, 0.20-0.25 (vllm-project/vllm PR 23280); 0.25 is the top of the untuned range, half the tuned best"
)

#: the classes, declared once
CLASSES: dict[str, Efficiency] = {
    "nvlink-datacenter": Efficiency(
        gpu_class="nvlink-datacenter",
        compute=0.60,
        attention=0.40,
        memory=0.80,
        link=0.75,
        alpha_s=8e-6,
        kernel_graph_s=2.5e-6,
        kernel_eager_s=15e-6,
        step_s=1.5e-3,
        sources=(
            "compute 0.60: measured dense BF16/FP8 GEMMs at LLM shapes reach 60-75% of H100/B200 dense peak "
            "(public cuBLAS/DeepGEMM benchmarks); end-to-end layers lose more to small GEMMs",
            "attention 0.40: FlashAttention-3 reaches ~40-60% of H100 BF16 peak in its paper's benchmarks",
            _SOL_MEMORY,
            "link 0.75 and alpha 8 us: nccl-tests all-reduce bus bandwidth ~340-360 GB/s of 450 GB/s NVLink 4 "
            "per direction on 8x H100 SXM; small-message latency ~8 us (NCCL LL protocol)",
            _KERNELS,
            _GROUPED_MOE_HOPPER,
        ),
        moe_compute=0.25,
    ),
    "pcie-p2p": Efficiency(
        gpu_class="pcie-p2p",
        compute=0.50,
        attention=0.30,
        memory=0.80,
        link=0.34,
        alpha_s=20e-6,
        kernel_graph_s=4e-6,
        kernel_eager_s=15e-6,
        step_s=2.0e-3,
        sources=(
            "compute 0.50: measured BF16 GEMM 417 TFLOPS (RTX PRO 6000 Server) and 368 TFLOPS (Workstation) of a "
            "468 TFLOPS peak (zzc0721/torch-performance-test-data #160, #162); end-to-end layers reach about "
            "0.5 of peak (smaller GEMMs, grouped MoE GEMMs)",
            "attention 0.30: SM120 attention kernels lack the Hopper/Blackwell datacenter paths (no TMA warp "
            "specialisation in FA2-class kernels)",
            _SOL_MEMORY,
            _NCCL_PCIE,
            _KERNELS,
            _NARROW_GEMM_SM120,
        ),
        gemm_tile_gbs=40.0,
    ),
    "pcie-no-p2p": Efficiency(
        gpu_class="pcie-no-p2p",
        compute=0.50,
        attention=0.30,
        memory=0.80,
        link=0.20,
        alpha_s=30e-6,
        kernel_graph_s=4e-6,
        kernel_eager_s=15e-6,
        step_s=2.0e-3,
        sources=(
            "as pcie-p2p, except the link: without P2P every collective goes through host memory; P2P latency "
            "~14 us disabled vs 0.4 us enabled (voipmonitor/rtx6kpro hardware/pcie-bandwidth.md); bus "
            "bandwidth taken as 0.2 of the slot",
            _NARROW_GEMM_SM120,
        ),
        gemm_tile_gbs=40.0,
    ),
    "amd-instinct": Efficiency(
        gpu_class="amd-instinct",
        compute=0.45,
        attention=0.30,
        memory=0.70,
        link=0.60,
        alpha_s=12e-6,
        kernel_graph_s=3e-6,
        kernel_eager_s=15e-6,
        step_s=2.0e-3,
        sources=(
            "compute 0.45 / memory 0.70: public MI300X GEMM and bandwidth benchmarks (hipBLASLt BF16 ~600 of 1,307 "
            "TFLOPS; ~3.7-4.3 of 5.3 TB/s streamed)",
            "link 0.60, alpha 12 us: RCCL all-reduce over 7 Infinity Fabric links",
        ),
    ),
    "other": Efficiency(
        gpu_class="other",
        compute=0.40,
        attention=0.25,
        memory=0.70,
        link=0.30,
        alpha_s=25e-6,
        kernel_graph_s=5e-6,
        kernel_eager_s=15e-6,
        step_s=2.5e-3,
        sources=("a conservative class for GPUs with no measured class (Intel, Gaudi, RDNA, unknown)",),
    ),
}


def gpu_class(*, vendor: str, arch: str, form: str, link: str, p2p: bool) -> str:
    """The class name of a GPU from its facts.

    NVIDIA on NVLink / NVLink-C2C (SXM, superchips) -> nvlink-datacenter; NVIDIA on PCIe with P2P -> pcie-p2p,
    without -> pcie-no-p2p; AMD CDNA -> amd-instinct; anything else -> other.
    """
    if vendor == "nvidia":
        if link in ("nvlink", "nvlink-c2c") or form in ("sxm", "superchip"):
            return "nvlink-datacenter"
        return "pcie-p2p" if p2p else "pcie-no-p2p"
    if vendor == "amd" and (arch.startswith("cdna") or link == "xgmi"):
        return "amd-instinct"
    return "other"


def efficiency_for(hw: Any) -> Efficiency:
    """The :class:`Efficiency` of a :class:`kvplan.perf.hardware.Hardware`."""
    return CLASSES[gpu_class(vendor=hw.vendor, arch=hw.arch, form=hw.form, link=hw.link, p2p=hw.p2p)]


def expert_compute(eff: Efficiency) -> float:
    """Fraction of the routed-expert dtype's dense peak the grouped MoE GEMMs reach: the class's ``moe_compute``
    when it declares one, else its ``compute`` (one fraction for every GEMM).

    Examples: nvlink-datacenter -> 0.25 (its ``moe_compute``); pcie-p2p -> 0.50 (no ``moe_compute``: its
    ``compute``)."""
    return eff.moe_compute if eff.moe_compute > 0 else eff.compute


def scaled(eff: Efficiency, factors: Mapping[str, float], *, label: str) -> Efficiency:
    """``eff`` with each named constant multiplied by its factor (a calibration); ``label`` joins the sources.

    Example: ``scaled(CLASSES["pcie-p2p"], {"link": 0.5}, label="x")`` has ``link`` 0.17 (0.34 x 0.5), the rest
    unchanged.  A name outside :data:`CONSTANT_NAMES` or a non-positive factor raises ValueError (a bug: the caller
    validates its input)."""
    values = eff.to_dict()
    for name, f in factors.items():
        if name not in CONSTANT_NAMES or not f > 0:
            raise ValueError(f"bad calibration factor {name}={f!r}")
        values[name] = values[name] * float(f)
    values["sources"] = (*eff.sources, label)
    return Efficiency(**values)
