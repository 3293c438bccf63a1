"""Worked numbers for speculative decoding, parallelism and the Qwen3.8 hybrid-GDN log (SGLang 0.5.23).

Hand arithmetic in the comments; engine sources are cited in the functions used
(kvplan.engines.sglang.rules, kvplan.engines.sglang.pools.mla / swa / mamba) and in docs/layouts/speculative-and-parallelism.md.
"""

from __future__ import annotations

import json

import pytest

from kvplan.engines.sglang import rules as R
from kvplan.engines.sglang.pools import mamba
from kvplan.engines.sglang.pools.mla import mla_bytes_per_token
from kvplan.geometry import mamba as mamba_geometry
from kvplan.hfconfig.dtypes import DType
from tests.conftest import SHARED

GIB = 2**30


def _kimi_k2() -> dict:
    models = json.loads((SHARED / "reference" / "models.json").read_text())
    return next(m for m in models if m.get("id") == "moonshotai/Kimi-K2-Instruct")


def test_kimi_k2_mtp_draft_layer():
    k2 = _kimi_k2()
    layers = k2["num_hidden_layers"]
    assert (layers, k2["kv_lora_rank"], k2["qk_rope_head_dim"]) == (61, 512, 64)
    cell = mla_bytes_per_token(kv_lora_rank=512, qk_rope_head_dim=64, num_layers=layers, kv_dtype=DType.BF16)
    assert cell == 70_272  # 576 x 61 x 2
    # one EAGLE/MTP draft layer: cell + int(70,272 x 1 / 61) = 70,272 + 1,152 = 71,424 = cell x (1 + 1/61)
    spec = R.speculative_cell(cell=cell, draft_layers=1, num_layers=layers)
    assert spec == 71_424 == cell * 62 // 61
    # fp8: 35,136 + 576 = 35,712
    fp8 = mla_bytes_per_token(kv_lora_rank=512, qk_rope_head_dim=64, num_layers=layers, kv_dtype=DType.FP8_E4M3)
    assert R.speculative_cell(cell=fp8, draft_layers=1, num_layers=layers) == 35_712
    # 60 GiB = 64,424,509,440 B // 71,424 = 901,989 -> page 64 (trtllm_mla on B200): 901,952
    assert R.pool_tokens(budget_bytes=60 * GIB, cell_bytes=spec, page_size=64) == 901_952


def test_pp2_with_an_odd_layer_count():
    # 61 layers over PP2: the last stage gets the extra layer -> 30 + 31
    stages = R.pp_layer_ranges(num_layers=61, pp_size=2)
    assert stages == [(0, 30), (30, 61)]
    cells = [
        mla_bytes_per_token(kv_lora_rank=512, qk_rope_head_dim=64, num_layers=e - s, kv_dtype=DType.BF16)
        for s, e in stages
    ]
    assert cells == [34_560, 35_712]  # 30 x 1,152, 31 x 1,152
    # tokens = MIN over stages: the 31-layer stage: 64,424,509,440 // 35,712 = 1,803,998 -> page 64: 1,803,968
    tokens = min(R.pool_tokens(budget_bytes=60 * GIB, cell_bytes=c, page_size=64) for c in cells)
    assert tokens == 1_803_968


def test_deepseek_v3_dp_attention_8():
    cfg = json.loads((SHARED / "hf-configs" / "deepseek-ai--DeepSeek-V3" / "config.json").read_text())
    tp, dp = 8, 8
    attn_tp = tp // dp  # --enable-dp-attention: attention TP 1 on each of the 8 DP ranks
    assert attn_tp == 1
    # the MLA latent is replicated, so the per-rank cell does not depend on TP or DP: 61 x 576 x 2
    cell = mla_bytes_per_token(
        kv_lora_rank=cfg["kv_lora_rank"],
        qk_rope_head_dim=cfg["qk_rope_head_dim"],
        num_layers=cfg["num_hidden_layers"],
        kv_dtype=DType.BF16,
    )
    assert cell == 70_272
    # each DP rank sizes its own pool from its own 60 GiB: 64,424,509,440 // 70,272 = 916,787 -> page 64: 916,736
    per_rank = R.pool_tokens(budget_bytes=60 * GIB, cell_bytes=cell, page_size=64)
    assert per_rank == 916_736
    # --max-running-requests 1024 is split: 1024 // 8 = 128 per rank; the server holds 8 x 916,736 tokens
    assert (
        R.resolve_max_running_requests(total_tokens=per_rank, context_len=163_840, requested=1024, attn_dp_size=dp)
        == 128
    )
    assert per_rank * dp == 7_333_888
    # unset: int(916,736 / 163,840 x 512) = 2,864 (inside [2048, 4096]) per rank
    assert (
        R.resolve_max_running_requests(total_tokens=per_rank, context_len=163_840, requested=None, attn_dp_size=dp)
        == 2_864
    )


def _validation(case_id: str) -> dict:
    for line in (SHARED / "validation" / "sglang_dev.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row["id"] == case_id:
                return row
    raise KeyError(case_id)


# ASSUMED geometry of Qwen3.8-27B / Qwen3.5-27B: the official config.json was not readable here. These values
# come from third-party transcriptions of the Qwen3.5-27B text config found by code search (a transformers
# Qwen3_5Config(...) replica and several Qwen3.8-27B test fixtures, all agreeing; the attention part also
# matches THUDM/slime scripts/models/qwen3.5-27B.sh: 64 layers, 24 heads, 4 query groups, kv-channels 256),
# and agree with the log's own 32,760 B of K per token (16 x 4 x 256 x 2 B).
QWEN38_27B_ASSUMED = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": {
        "model_type": "qwen3_5_text",
        "num_hidden_layers": 64,
        "full_attention_interval": 4,
        "num_attention_heads": 24,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "hidden_size": 5120,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 48,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "mamba_ssm_dtype": "float32",
    },
}


def test_qwen38_27b_hybrid_gdn_log():
    case = _validation("qwen3.8-27b-fp8-hybrid-gdn-h100-kt")
    rep = case["reported"]
    g = mamba_geometry.mamba_geometry_from_config(QWEN38_27B_ASSUMED)
    # 16 attention layers x 4 heads x (256 + 256) x 2 B = 65,536 B/token (K half = 32,768)
    cell = mamba.mamba_hybrid_kv_cell(geometry=g, attn_tp_size=1, kv_dtype=DType.BF16)
    assert cell == 65_536
    # 48 GDN layers: conv (6,144 + 2 x 16 x 128 = 10,240, 3) x 2 B = 61,440; ssm 48 x 128 x 128 x 4 = 3,145,728
    # -> 3,207,168 per layer, 153,944,064 per request
    assert mamba.mamba_state_bytes_per_request(geometry=g, tp_size=1) == 153_944_064
    # budget: after weights 39.42 GiB, before = 39.42 + 39.09 = 78.51 GiB, mfs 0.85 -> 39.42 - 78.51 x 0.15
    before = rep["avail_mem_after_weights_gb"] + rep["weight_load_mem_usage_gb"]
    budget = R.budget_bytes(
        free_before_bytes=int(before * GIB),
        free_after_bytes=int(39.42 * GIB),
        mem_fraction_static=case["mem_fraction_static"],
    )
    assert budget / GIB == pytest.approx(27.6435, abs=1e-4)
    pools = mamba.mamba_carve(geometry=g, budget_bytes=budget, tp_size=1)
    # state budget 27.6435 x 0.9 / 1.9 = 13.0943 GiB = 91.33 slots -> K = 90, (90 + 1) slots = 13.0467 GiB
    assert pools.mamba_slots == 90
    tokens = R.pool_tokens(budget_bytes=pools.kv_budget_bytes, cell_bytes=cell, page_size=1)
    # KV 27.6435 - 13.0467 = 14.5967 GiB -> 239,152 tokens (page 1: fa3 on H100)
    assert tokens == 239_152
    # the log: 238,285 tokens, K 7.27 + V 7.27 GiB. The 0.5.23 carve is 0.36 % above it; the plain
    # r/(1+r) split the reference quotes (27.6435 / 1.9 = 14.549 GiB -> 238,377) is closer, but SGLang
    # subtracts whole state slots. The log is from the sglang-kt 0.7.0 fork (not 0.5.23) with rounded inputs.
    assert rep["kv_tokens"] == 238_285
    assert abs(tokens - rep["kv_tokens"]) / rep["kv_tokens"] < 0.005
    assert rep["k_size_gb"] + rep["v_size_gb"] == pytest.approx(tokens * cell / GIB, abs=0.06)
