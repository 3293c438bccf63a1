"""Collectives over the GPUs' real link, alpha-beta: ``t = alpha + 2 (N - 1) / N x bytes / busBW``.

``busBW`` is NCCL's "bus bandwidth" (nccl-tests ``all_reduce_perf``): the rate each rank's link moves data in a ring
all-reduce, so a ring all-reduce of ``bytes`` takes ``2 (N - 1) / N x bytes / busBW`` plus a latency ``alpha`` per
collective.  busBW = the link's per-direction rate x the GPU class's ``link`` efficiency
(:mod:`kvplan.perf.efficiency`); on PCIe without peer-to-peer the class's lower efficiency stands for traffic
staged through host memory.

What each engine reduces, per decoder layer (SGLang v0.5.23 ``python/sglang/srt/layers/communicator.py``
``LayerCommunicator``; vLLM v0.34 ``vllm/model_executor/layers/linear.py`` ``RowParallelLinear``):

* TP (no DP attention): one all-reduce after attention (``o_proj``) and one after the MLP / MoE, each of
  ``tokens x hidden x 2`` bytes (bf16 activations); EP without DP attention keeps tokens replicated and reduces
  the MoE output the same way;
* DP attention: the attention all-reduce runs over the attention-TP group only (none when attn_tp = 1), and the
  MoE layer gathers the DP ranks' tokens and scatters the result (all-gather + reduce-scatter = the traffic of one
  all-reduce over the whole group);
* decode also gathers the logits once per step (vocab-parallel lm_head).

Which all-reduce runs: both engines use their own one-shot / two-shot kernel ("custom all-reduce") for messages up
to 8 MB when the ranks are two or fully NVLink-connected, and NCCL otherwise (SGLang v0.5.23
``distributed/device_communicators/custom_all_reduce.py`` ``CustomAllreduce.should_custom_ar``: "for 4 or more non
NVLink-capable GPUs, custom allreduce provides little performance improvement over NCCL"; vLLM's
``CustomAllreduce`` the same).  So on PCIe beyond two GPUs every all-reduce is NCCL's, and NCCL picks, per message,
the protocol its own cost model says is faster (NVIDIA/nccl ``src/graph/tuning.cc`` ``ncclTopoTuneModel`` and
``ncclTopoGetAlgoTime``: time = latency + bytes / bandwidth, ring over PCIe):

* LL (low latency): latency ``6.6 + 2 (N - 1) x 1.0`` us (20.6 us at 8 GPUs: the class's ``alpha``), at a quarter
  of the bus bandwidth;
* Simple: latency ``8.4 + 2 (N - 1) x 5.7`` us (88.2 us at 8 GPUs), at the full bus bandwidth.

LL wins for decode-sized messages, Simple for prefill chunks (:func:`nccl_allreduce_time`).  Two PCIe GPUs with
P2P run the custom kernel for messages up to 8 MB, at its own measured latency (:data:`CUSTOM_ALLREDUCE_PCIE_S`,
:func:`custom_allreduce_pcie`) instead of NCCL's.  NCCL's LL128 is off
on PCIe (its tuning enables it only over NVLink), and its tree algorithm is not modelled.
"""

from __future__ import annotations

from typing import Any

ACT_BYTES = 2  # bf16 activations


def allreduce_time(*, nbytes: Any, ranks: int, bus_gbs: float, alpha_s: float) -> Any:
    """Seconds for a ring all-reduce of ``nbytes`` over ``ranks`` GPUs: ``alpha + 2 (N-1)/N x bytes / busBW``.

    Example: 16.8 MB (2,048 tokens x 4,096 x 2 B) over 8 GPUs at 22 GB/s bus bandwidth, alpha 20 us:
    20e-6 + 1.75 x 16.8e6 / 22e9 = 1.36 ms.  One rank: 0.
    """
    if ranks <= 1:
        return 0.0 * nbytes
    return alpha_s + 2.0 * (ranks - 1) / ranks * nbytes / (bus_gbs * 1e9)


#: NCCL's ring cost model over PCIe (NVIDIA/nccl src/graph/tuning.cc: ``baseLat`` ring Simple 8.4 us, ``hwLat``
#: PCI ring Simple 5.7 us per step; LL's bandwidth is ``busBw / 4`` for an all-reduce)
NCCL_SIMPLE_BASE_S = 8.4e-6
NCCL_SIMPLE_PCIE_STEP_S = 5.7e-6
NCCL_LL_BANDWIDTH_FRACTION = 0.25
#: the engines' custom all-reduce takes messages up to this size (SGLang ``CustomAllreduce._MAX_CAR_SIZE``)
CUSTOM_ALLREDUCE_MAX_BYTES = 8192 * 1024


#: one call of a one-shot custom all-reduce between PCIe GPUs with P2P: 7.5-9.2 us per call measured on an RTX PRO
#: 6000 box (voipmonitor/rtx6kpro ``optimization/pcie-oneshot-allreduce.md``); the middle, 8.4 us
CUSTOM_ALLREDUCE_PCIE_S = 8.4e-6


def custom_allreduce_pcie(*, link: str, p2p: bool, ranks: int, nbytes: Any) -> Any:
    """Whether an all-reduce of ``nbytes`` runs the engines' custom (one-shot) kernel over PCIe: two GPUs with
    P2P and a message up to 8 MB (SGLang v0.5.23 ``custom_all_reduce.py`` ``CustomAllreduce.should_custom_ar``:
    ``world_size == 2 or full_nvlink``, ``inp_size <= max_size``; ``custom_all_reduce_utils.py`` disables it on more
    than two PCIe-only GPUs and where the P2P test fails).  Example: 2 PCIe cards, 8,192 B -> True; 8 cards ->
    False; 2 cards, 16 MB -> False.  Array-safe: a boolean array for an array of sizes."""
    if link != "pcie" or not p2p or ranks != 2:
        return 0.0 * nbytes > 1.0
    return nbytes <= CUSTOM_ALLREDUCE_MAX_BYTES


def nccl_only(*, link: str, ranks: int) -> bool:
    """Whether every all-reduce of ``ranks`` GPUs on ``link`` is NCCL's: more than two GPUs not connected by NVLink
    (the engines' custom all-reduce needs two GPUs or a full NVLink mesh; on ROCm a full xGMI mesh counts as one,
    SGLang's ``CustomAllreduce.should_custom_ar`` HIP branch).  Example: 8 PCIe cards -> True; 2 PCIe cards ->
    False; 8 NVLink GPUs -> False; 8 MI300X on xGMI -> False."""
    return ranks > 2 and link not in ("nvlink", "nvlink-c2c", "xgmi")


def nccl_allreduce_time(*, nbytes: Any, ranks: int, bus_gbs: float, alpha_s: float) -> Any:
    """Seconds for NCCL's ring all-reduce of ``nbytes`` over ``ranks`` PCIe GPUs, the faster of its LL and Simple
    protocols (module docstring): with ``b = 2 (N - 1) / N x bytes / busBW``,
    ``min(alpha + b / 0.25, 8.4 us + 2 (N - 1) x 5.7 us + b)``.

    Example, 8 GPUs at 21.76 GB/s bus bandwidth, alpha 20 us: a decode message of 10,240 B (b = 0.82 us) takes
    20 + 3.3 = 23.3 us by LL (Simple: 89.0 us); a prefill chunk's 20,971,520 B (b = 1,686.6 us) takes
    88.2 + 1,686.6 = 1,774.8 us by Simple (LL: 6,766 us).  One rank: 0.
    """
    if ranks <= 1:
        return 0.0 * nbytes
    b = 2.0 * (ranks - 1) / ranks * nbytes / (bus_gbs * 1e9)
    ll = alpha_s + b / NCCL_LL_BANDWIDTH_FRACTION
    simple = NCCL_SIMPLE_BASE_S + 2 * (ranks - 1) * NCCL_SIMPLE_PCIE_STEP_S + b
    return (ll + simple - abs(ll - simple)) / 2  # min, numpy-safe


def layer_collectives(*, tokens: Any, hidden: int, tp: int, attn_tp: int) -> list[tuple[str, int, Any, int]]:
    """The collectives of one decoder layer: ``(name, ranks, bytes, count)`` per kind.

    Example: TP8, 2,048 tokens, hidden 4,096: [("TP all-reduce", 8, 16.8 MB, 2)].
    """
    msg = tokens * hidden * ACT_BYTES
    if tp <= 1:
        return []
    if attn_tp == tp:
        return [(f"TP{tp} all-reduce", tp, msg, 2)]
    out: list[tuple[str, int, Any, int]] = []
    if attn_tp > 1:
        out.append((f"attention TP{attn_tp} all-reduce", attn_tp, msg * attn_tp / tp, 1))
    out.append((f"DP-attention gather/scatter over {tp}", tp, msg, 1))
    return out
