"""SGLang 0.5.23 Mamba hybrid + speculative decoding: the intermediate SSM state is budgeted and allocated once.

Engine (sgl-project/sglang, v0.5.23):

* ``python/sglang/srt/mem_cache/kv_cache_configurator.py`` ``KVCacheConfigurator._handle_max_mamba_cache`` (ratio
  mode, spec on): ``K = int((mb - p (1 + D)) // (p (1 + D / q)))``; ``intermediate = p x (min(mrr, K // q) + 1) x D``
  is taken off the rest once; the state pool ``(K + 1) x p`` once more; what is left is the attention KV budget.
* ``python/sglang/srt/mem_cache/memory_pool.py`` ``MambaPool.__init__``: the persistent state is ``size + 1`` slots,
  ``intermediate_ssm_state_cache`` is ``(layers, spec_state_size + 1, D, *temporal_state_shape)`` (spec_state_size =
  max_running_requests), allocated once.

kvplan sizes the attention pool right (its kv budget subtracts each once) but reports the fixed pools as
``state_bytes + intermediate_bytes`` while ``MambaPools.state_bytes`` already holds the intermediate states
(``kvplan/engines/sglang/pools/mamba.py`` ``_attention_pool``), so ``fixed_pool_bytes``, ``kv_pool_bytes`` and the
memory breakdown's "fixed pools" slice count the intermediate state twice.  The fix (mamba.py, ``_attention_pool``):
``plan.fixed_bytes = carve.state_bytes`` (drop ``+ carve.intermediate_bytes``).
"""

from __future__ import annotations

import json

GIB = 2**30
P = 38_633_472  # Qwen3-Next-80B state per request at TP2 (tests/test_layout_mamba.py)
D = 4  # --speculative-num-draft-tokens
MRR = 48  # --max-running-requests (one attention-DP rank)
Q = 5  # mamba state slots per request (radix cache on, overlap schedule on, page 1)


def _fit() -> dict:
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    res = CliRunner().invoke(
        app,
        [
            "fit",
            "-m",
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "-g",
            "h200",
            "--tp",
            "2",
            "--speculative-algorithm",
            "NEXTN",
            "--speculative-num-draft-tokens",
            str(D),
            "--max-running-requests",
            str(MRR),
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    out: dict = json.loads(res.output)
    return out


def _hand(budget: int) -> tuple[int, int, int]:
    """(K, state (K + 1) p, intermediate p (min(mrr, K // q) + 1) D) of the ratio-mode joint solve, r = 0.9."""
    mb = budget / GIB * 0.9 / 1.9 * GIB
    k = int((mb - P * (1 + D)) // (P * (1 + D / Q)))
    return k, (k + 1) * P, P * (min(MRR, k // Q) + 1) * D


def test_carve_matches_the_hand_solve():
    # e.g. budget 54,438,321,023 B: mb = 25,786,573,115.9; (mb - 5p) / (1.8 p) = 368.03 -> K = 368;
    # state 369 p = 14,255,751,168; intermediate (min(48, 73) + 1) x 4 x p = 196 p = 7,572,160,512
    d = _fit()
    _, state, inter = _hand(d["kv_budget_bytes"])
    pools = {p["name"]: p["bytes"] for p in d["pools"]}
    assert pools["linear-attention state"] == state
    assert pools["speculative intermediate state"] == inter


def test_intermediate_state_counted_once():
    d = _fit()
    _, state, inter = _hand(d["kv_budget_bytes"])
    fixed = state + inter  # 14,255,751,168 + 7,572,160,512 = 21,827,911,680 in the example
    assert d["fixed_pool_bytes"] == fixed
    assert d["kv_pool_bytes"] == d["kv_pool_tokens"] * int(d["kv_bytes_per_token"]) + fixed
    assert {m["name"]: m["bytes"] for m in d["memory"]}["fixed pools"] == fixed
