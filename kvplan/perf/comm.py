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
