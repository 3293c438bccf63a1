"""Two costs of a routed-expert layer that the parameter count does not show: rows padded to the kernel's tile, and
the top-k copies of each token's activations.

**Rows padded to BLOCK_SIZE_M.**  The fused-MoE kernels sort the step's (token, expert) pairs by expert and pad
each expert's group to a multiple of the GEMM's ``BLOCK_SIZE_M`` rows before the grouped GEMMs run
(``moe_align_block_size``: sgl-project/sglang v0.5.23 ``python/sglang/srt/layers/moe/fused_moe_triton/
moe_align_block_size.py``, "pads the number of tokens that each expert needs to process so that it is divisible by
block_size"; vLLM v0.11.0 ``model_executor/layers/fused_moe/fused_moe.py`` ``fused_experts_impl`` the same).  The
padded rows run through the tensor cores like real ones.  The block size (:func:`moe_block_m`) is the engines'
default config when no tuned file matches (SGLang v0.5.23 ``fused_moe_triton_config.py`` ``get_default_config``,
vLLM v0.11.0 ``fused_moe.py`` ``get_default_config``): 64 rows, 16 when the step has no more tokens than the layer
has experts (``M <= E``); block-FP8 weights always 64.  vLLM's Marlin MoE (``fused_marlin_moe.py``) takes the first
of 8, 16, 32, 48, 64 above ``M x topk / E / 0.9``, which is 64 for a prefill chunk of a few thousand tokens.  The
CUTLASS / DeepGEMM grouped GEMMs pad to their own 128-row tiles (more waste, not modelled: 64 is a lower bound there).

Expected rows (:func:`padded_rows_factor`): each of the E experts receives ``n ~ Binomial(B, k / E)`` of the
step's ``B x k`` pairs and computes ``BM x ceil(n / BM)`` rows; ``E[ceil(n / BM)] = sum_j P(n > j BM)``.

**Top-k copies of the activations.**  The fused MoE reads each token's hidden state once per chosen expert (the
first GEMM gathers its A rows by ``sorted_token_ids``), writes one hidden-wide output per (token, expert) pair
(``intermediate_cache3`` of shape ``(M, topk, hidden)`` in both engines' ``fused_experts_impl`` and in vLLM's
``fused_marlin_moe``) and reads them back to sum them (``moe_sum`` / ``moe_sum_reduce``): ``3 x k x hidden`` bf16
values per token per MoE layer, on every MoE-TP rank (each computes a partial sum for every pair), over EP ranks
only the pairs of local experts (``k / ep``) (:func:`topk_copy_bytes`).  The norms' and residuals' hidden-wide
traffic (:func:`kvplan.perf.ops.activation_bytes`) counts one copy per token, not k.
"""

from __future__ import annotations

import math
from typing import Any

#: BLOCK_SIZE_M of the engines' default fused-MoE config (module docstring)
MOE_BLOCK_M = 64
MOE_BLOCK_M_SMALL = 16
#: hidden-wide bf16 passes per (token, expert) pair: the gathered A row, the expert's output written and read back
TOPK_COPY_PASSES = 3


def moe_block_m(*, tokens: Any, experts: int) -> Any:
    """The fused-MoE ``BLOCK_SIZE_M`` for a step of ``tokens`` tokens: 16 when ``tokens <= experts``, else 64 (the
    default config, module docstring).  Example: a 2,048-token chunk of a 256-expert layer -> 64; a decode step of
    32 tokens -> 16.  Array-safe."""
    return MOE_BLOCK_M_SMALL + (MOE_BLOCK_M - MOE_BLOCK_M_SMALL) * (tokens > experts)


def _blocks_per_expert(tokens: float, topk: int, experts: int, block_m: float) -> float:
    """Expected ``ceil(n / BM)`` for one expert's ``n ~ Binomial(B, k / E)`` pairs (scalar): ``P(n > 0)`` exactly,
    ``1 - (1 - k/E) ** B``, plus ``sum_{j >= 1} P(n > j BM)`` by the normal approximation with a continuity
    correction, ``Q((j BM + 0.5 - lam) / sigma)``, ``lam = B k / E``, ``sigma = sqrt(lam (1 - k / E))``."""
    p = topk / experts
    lam = tokens * p
    blocks = 1 - (1 - p) ** tokens
    sigma = math.sqrt(lam * (1 - p)) if lam > 0 else 0.0
    j = 1
    while sigma > 0 and j * block_m <= lam + 10 * sigma:
        blocks += 0.5 * math.erfc((j * block_m + 0.5 - lam) / (sigma * math.sqrt(2)))
        j += 1
    return blocks


def padded_rows_factor(*, tokens: Any, topk: int, experts: int, block_m: Any) -> Any:
    """Rows the grouped GEMMs compute per real (token, expert) pair: ``E x BM x E[ceil(n / BM)] / (B k)``, n the
    pairs one expert receives (``Binomial(B, k / E)``, :func:`_blocks_per_expert`); 1.0 without experts.

    Examples (hand-derived): B = 8,192, k = 8, E = 256, BM = 64: lam = 256, sigma = 15.7; P(n > 0) = 1,
    P(n > 64), P(n > 128), P(n > 192) = 1 to 1e-9, P(n > 256) = Q(0.5 / 15.7) = 0.487, P(n > 320) = Q(4.11) = 2e-5:
    4.487 blocks of 64 per expert = 287.2 rows for 256 pairs -> 1.122.  B = 2,048, k = 6, E = 256 (the seed's
    chunk): lam = 48, sigma = 6.85, P(n > 64) = Q(2.41) = 0.0080: 1.008 blocks, 64.5 rows for 48 -> 1.344.
    B = 1,024, k = 8, E = 256: lam = 32, P(n > 64) = Q(5.8) ~ 0: 2.0 (32 tokens per expert padded to 64).  B = 1,
    k = 8, E = 384, BM = 16: 8 experts touched, one block each: 16.0.  Array-safe (numpy only for an array).
    """
    if experts <= 0 or topk <= 0:
        return 1.0 + 0.0 * tokens
    if hasattr(tokens, "shape"):
        import numpy as np

        f = np.vectorize(lambda b, m: _blocks_per_expert(float(b), topk, experts, float(m)), otypes=[float])
        blocks = f(tokens, block_m)
    else:
        blocks = _blocks_per_expert(float(tokens), topk, experts, float(block_m))
    return experts * block_m * blocks / (tokens * topk)


def topk_copy_bytes(*, tokens: Any, topk: int, hidden: int, moe_layers: int, ep: int) -> Any:
    """Bytes per rank of the top-k activation copies of a step: ``3 x k / ep x hidden x 2 x moe_layers x B``.

    Example (hand-derived): Kimi-K2.5 at TP8 (k 8, hidden 7,168, 60 MoE layers, EP 1), an 8,192-token chunk:
    3 x 8 x 7,168 x 2 x 60 x 8,192 = 169,114,337,280 B (169 GB) per rank.
    """
    return TOPK_COPY_PASSES * topk / max(1, ep) * hidden * 2.0 * moe_layers * tokens
