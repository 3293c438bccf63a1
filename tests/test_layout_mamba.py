"""Mamba / linear-attention hybrids (kvplan.geometry.mamba, kvplan.engines.sglang.pools.mamba), numbers derived by hand from SGLang 0.5.23.

Engine code: python/sglang/srt/configs/mamba_utils.py (Mamba2StateShape.create, KimiLinearStateShape.create,
mamba2_state_dtype), python/sglang/srt/mem_cache/kv_cache_configurator.py (_handle_max_mamba_cache,
_calculate_mamba_ratio), the config classes qwen3_next.py / nemotron_h.py / granitemoehybrid.py / falcon_h1.py /
kimi_linear.py.
"""

from __future__ import annotations

import json

import pytest

from kvplan.engines.sglang import rules as R
from kvplan.engines.sglang.pools import mamba
from kvplan.errors import InputError
from kvplan.geometry import mamba as mamba_geometry
from kvplan.hfconfig.dtypes import DType
from tests.conftest import SHARED

GIB = 2**30


@pytest.fixture(scope="module")
def qwen3_next():
    # tests/data/shared/reference/models.json, entry Qwen/Qwen3-Next-80B-A3B-Instruct
    models = json.loads((SHARED / "reference" / "models.json").read_text())
    entry = next(m for m in models if m.get("id") == "Qwen/Qwen3-Next-80B-A3B-Instruct")
    return mamba_geometry.mamba_geometry_from_config({k: v for k, v in entry.items() if v is not None})


@pytest.fixture(scope="module")
def nemotron_nano():
    cfg = json.loads(
        (SHARED / "hf-configs" / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16" / "config.json").read_text()
    )
    return mamba_geometry.mamba_geometry_from_config(cfg)


def test_qwen3_next_geometry(qwen3_next):
    g = qwen3_next
    assert g.kind == "gdn"
    # full_attention_interval 4: layers 3, 7, ..., 47 are attention (12), the other 36 are Gated DeltaNet
    assert g.attention_layers == tuple(range(3, 48, 4)) and len(g.linear_layers) == 36
    # intermediate = 128 x 32 value heads; groups = 16 key heads; state = key head dim 128
    assert (g.intermediate_size, g.n_groups, g.num_heads, g.head_dim, g.state_size, g.conv_kernel) == (
        4096,
        16,
        32,
        128,
        128,
        4,
    )


def test_qwen3_next_tp2_state_and_carve(qwen3_next):
    # conv_dim = 4,096 + 2 x 16 x 128 = 8,192 -> (4,096, 3); ssm (32 / 2, 128, 128)
    assert mamba_geometry.mamba_state_shapes(geometry=qwen3_next, tp_size=2) == ((4096, 3), (16, 128, 128))
    # 4,096 x 3 x 2 B + 16 x 128 x 128 x 4 B = 24,576 + 1,048,576 = 1,073,152 per layer; x 36 = 38,633,472
    assert mamba.mamba_state_bytes_per_request(geometry=qwen3_next, tp_size=2) == 38_633_472
    # the budget vLLM 0.10.2 reported for this deployment (44.59 GiB, tests/data/shared/validation/vllm_dev.jsonl
    # qwen3-next-80b-2xh200-tp2) used only as a same-size budget for context
    budget = int(44.59 * GIB)
    assert budget == 47_878_147_932
    pools = mamba.mamba_carve(geometry=qwen3_next, budget_bytes=budget, tp_size=2)
    # state budget 0.9 / 1.9 x 47,878,147,932 = 22,679,122,705; / 38,633,472 = 587.04 -> K = 587 - 1 = 586
    assert pools.mamba_slots == 586
    # state = (586 + 1) x 38,633,472 = 22,677,848,064; left 47,878,147,932 - 22,677,848,064 = 25,200,299,868
    assert pools.state_bytes == 22_677_848_064
    assert pools.kv_budget_bytes == 25_200_299_868
    # radix + overlap on -> extra_buffer strategy -> 3 + 2 slots per request; 586 // 5 = 117
    assert (pools.mamba_ratio, pools.max_running_requests_cap) == (5, 117)
    # attention: 12 layers x max(1, 2 // 2) x (256 + 256) x 2 B = 12,288 B/token
    cell = mamba.mamba_hybrid_kv_cell(geometry=qwen3_next, attn_tp_size=2, kv_dtype=DType.BF16)
    assert cell == 12_288
    # 25,200,299,868 // 12,288 = 2,050,805 tokens (vLLM, with its own mamba-as-blocks scheme, logged 973,760)
    assert R.pool_tokens(budget_bytes=pools.kv_budget_bytes, cell_bytes=cell, page_size=1) == 2_050_805


def test_nemotron3_nano_geometry_and_state(nemotron_nano):
    g = nemotron_nano
    # pattern "MEMEM*EMEMEM*..." : 52 entries, 23 M, 6 *
    assert g.num_hidden_layers == 52 and len(g.linear_layers) == 23
    assert g.attention_layers == (5, 12, 19, 26, 33, 42)
    # n_groups 8 (the 'n_groups' key), 64 heads x 64, state 128, conv 4
    assert (g.intermediate_size, g.n_groups, g.num_heads, g.head_dim, g.state_size) == (4096, 8, 64, 64, 128)
    # conv_dim 4,096 + 2 x 8 x 128 = 6,144 -> 6,144 x 3 x 2 = 36,864; ssm 64 x 64 x 128 x 4 = 2,097,152
    assert mamba.mamba_state_bytes_per_layer(geometry=g, tp_size=1) == 2_134_016
    assert mamba.mamba_state_bytes_per_request(geometry=g, tp_size=1) == 23 * 2_134_016 == 49_082_368
    # 'mamba_ssm_cache_dtype' is not what SGLang reads: default fp32; --mamba-ssm-dtype bfloat16 halves the ssm
    assert mamba.mamba_state_bytes_per_layer(geometry=g, tp_size=1, ssm_dtype="bfloat16") == 36_864 + 1_048_576
    # attention 6 layers x 2 heads x 256 x 2 B = 6,144 B/token
    assert mamba.mamba_hybrid_kv_cell(geometry=g, attn_tp_size=1, kv_dtype=DType.BF16) == 6_144
    # 8 groups over TP2 stays 8: conv (6,144 / 2, 3), ssm (32, 64, 128)
    assert mamba_geometry.mamba_state_shapes(geometry=g, tp_size=2) == ((3072, 3), (32, 64, 128))


def test_nemotron3_nano_carve_20gib(nemotron_nano):
    pools = mamba.mamba_carve(geometry=nemotron_nano, budget_bytes=20 * GIB, tp_size=1)
    # 0.9 / 1.9 x 21,474,836,480 = 10,172,291,490.5; / 49,082,368 = 207.25 -> K = 206
    assert pools.mamba_slots == 206
    # state 207 x 49,082,368 = 10,160,050,176; kv budget 21,474,836,480 - 10,160,050,176 = 11,314,786,304
    assert pools.kv_budget_bytes == 11_314_786_304
    # 11,314,786,304 // 6,144 = 1,841,599 tokens; mrr cap 206 // 5 = 41
    assert R.pool_tokens(budget_bytes=pools.kv_budget_bytes, cell_bytes=6_144, page_size=1) == 1_841_599
    assert pools.max_running_requests_cap == 41


def test_nemotron_pp3_charges_the_largest_stage(nemotron_nano):
    # get_pp_indices(52, pp 3): [0,17) [17,34) [34,52); Mamba layers 8 / 7 / 8 -> largest 8 of 23
    assert R.pp_layer_ranges(num_layers=52, pp_size=3) == [(0, 17), (17, 34), (34, 52)]
    assert (
        mamba.mamba_state_bytes_per_request(geometry=nemotron_nano, tp_size=1, stage_layers=(17, 34)) == 7 * 2_134_016
    )
    # int(49,082,368 x 8 / 23) = 8 x 2,134,016 = 17,072,128 on every stage
    assert mamba.mamba_state_bytes_per_request(geometry=nemotron_nano, tp_size=1, pp_size=3) == 17_072_128
    # attention layers per stage: (5, 12) | (19, 26, 33) | (42,)
    assert [nemotron_nano.attention_layers_in(r) for r in R.pp_layer_ranges(num_layers=52, pp_size=3)] == [2, 3, 1]


def test_mamba_ratio_rules():
    arch = "Qwen3NextForCausalLM"
    assert mamba.mamba_ratio(radix_cache=False, architecture=arch) == 1
    assert mamba.mamba_ratio(architecture=arch) == 5  # extra_buffer + overlap
    assert mamba.mamba_ratio(overlap_schedule=False, page_size=64, architecture=arch) == 4  # extra_buffer, no overlap
    assert mamba.mamba_ratio(overlap_schedule=False, page_size=1, architecture=arch) == 3  # no_buffer
    assert mamba.mamba_ratio(architecture="SomethingElse") == 3  # no extra-buffer support
    assert mamba.mamba_ratio(architecture=arch, strategy="extra_buffer_lazy") == 4


def test_radix_off_and_explicit_sizes(qwen3_next):
    p = 38_633_472
    pools = mamba.mamba_carve(
        geometry=qwen3_next,
        budget_bytes=40 * GIB,
        tp_size=2,
        knobs=mamba.CarveKnobs(radix_cache=False, max_running_requests=64, attn_dp_size=2),
    )
    # K = max(1, 64 // 2) = 32; ratio 1; state (32 + 1) x p
    assert (pools.mamba_slots, pools.mamba_ratio, pools.max_running_requests_cap) == (32, 1, 32)
    assert pools.kv_budget_bytes == 40 * GIB - 33 * p
    pools = mamba.mamba_carve(
        geometry=qwen3_next, budget_bytes=40 * GIB, tp_size=2, knobs=mamba.CarveKnobs(max_mamba_cache_size=100)
    )
    # explicit: K = 100 // 1; cap 100 // 5 = 20
    assert (pools.mamba_slots, pools.max_running_requests_cap, pools.mode) == (100, 20, "explicit")
    assert pools.kv_budget_bytes == 40 * GIB - 101 * p


def test_speculative_joint_solve(qwen3_next):
    p = 38_633_472
    budget = 20 * GIB
    pools = mamba.mamba_carve(
        geometry=qwen3_next,
        budget_bytes=budget,
        tp_size=2,
        knobs=mamba.CarveKnobs(speculative_num_draft_tokens=4, max_running_requests=48),
    )
    assert mamba.mamba_state_bytes_per_request(geometry=qwen3_next, tp_size=2) == p
    # mb = 21,474,836,480 x 0.9 / 1.9 = 10,172,291,490.5; K = (mb - 5p) // (p x (1 + 4/5)) = 9,979,124,130.5 //
    # 69,540,249.6 = 143
    assert pools.mamba_slots == 143
    # capped = min(48, 143 // 5 = 28) = 28 -> intermediate p x 29 x 4 = 4,481,482,752
    assert pools.intermediate_bytes == 4_481_482_752
    # kv = budget - intermediate - 144 p = 21,474,836,480 - 4,481,482,752 - 5,563,219,968 = 11,430,133,760
    assert pools.kv_budget_bytes == 11_430_133_760
    with pytest.raises(InputError) as err:
        mamba.mamba_carve(
            geometry=qwen3_next, budget_bytes=budget, tp_size=2, knobs=mamba.CarveKnobs(speculative_num_draft_tokens=4)
        )
    assert err.value.field == "--max-running-requests"


def test_too_small_budget(qwen3_next):
    # 0.9/1.9 of 60 MiB = 29.8 MB < one 38.6 MB slot -> K = -1
    with pytest.raises(InputError) as err:
        mamba.mamba_carve(geometry=qwen3_next, budget_bytes=60 * 2**20, tp_size=2)
    assert err.value.field == "--mem-fraction-static"


def test_group_padding_and_divisibility():
    cfg = {
        "architectures": ["GraniteMoeHybridForCausalLM"],
        "model_type": "granitemoehybrid",
        "num_hidden_layers": 4,
        "hidden_size": 1536,
        "num_attention_heads": 12,
        "num_key_value_heads": 4,
        "layer_types": ["mamba", "mamba", "mamba", "attention"],
        "mamba_n_heads": 48,
        "mamba_d_head": 64,
        "mamba_n_groups": 1,
        "mamba_d_state": 128,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_ssm_dtype": "bfloat16",
    }
    g = mamba_geometry.mamba_geometry_from_config(cfg)
    assert g.intermediate_size == 3072 and g.attention_layers == (3,) and g.config_ssm_dtype is None
    # TP1: conv_dim 3,072 + 2 x 1 x 128 = 3,328 -> 3,328 x 3 x 2 = 19,968; ssm 48 x 64 x 128 x 4 (fp32: Granite
    # ignores the config's mamba_ssm_dtype) = 1,572,864
    assert mamba.mamba_state_bytes_per_layer(geometry=g, tp_size=1) == 19_968 + 1_572_864
    # TP2: 1 group padded to 2 -> conv_dim 3,072 + 2 x 2 x 128 = 3,584 -> (1,792, 3); ssm (24, 64, 128)
    assert mamba_geometry.mamba_state_shapes(geometry=g, tp_size=2) == ((1792, 3), (24, 64, 128))
    # TP5 does not divide 48 heads
    with pytest.raises(InputError) as err:
        mamba_geometry.mamba_state_shapes(geometry=g, tp_size=5)
    assert err.value.field == "--tp-size"


def test_falcon_h1_and_kimi_linear():
    falcon = {
        "architectures": ["FalconH1ForCausalLM"],
        "model_type": "falcon_h1",
        "num_hidden_layers": 4,
        "hidden_size": 1024,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "mamba_d_ssm": 1536,
        "mamba_n_heads": 24,
        "mamba_d_head": 64,
        "mamba_n_groups": 1,
        "mamba_d_state": 128,
        "mamba_d_conv": 4,
    }
    g = mamba_geometry.mamba_geometry_from_config(falcon)
    # every layer holds both attention KV and a Mamba2 state
    assert g.attention_layers == g.linear_layers == (0, 1, 2, 3)
    # conv (1,536 + 256, 3) x 2 + ssm 24 x 64 x 128 x 4 = 10,752 + 786,432
    assert mamba.mamba_state_bytes_per_layer(geometry=g, tp_size=1) == 797_184
    kimi = {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "num_hidden_layers": 4,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "linear_attn_config": {"kda_layers": [1, 2, 3], "num_heads": 32, "head_dim": 128, "short_conv_kernel_size": 4},
    }
    k = mamba_geometry.mamba_geometry_from_config(kimi)
    assert k.kind == "kda" and k.linear_layers == (0, 1, 2) and k.attention_layers == (3,)
    # conv (3, 3 x 4,096) x 2 = 73,728; ssm 32 x 128 x 128 x 4 = 2,097,152
    assert mamba.mamba_state_bytes_per_layer(geometry=k, tp_size=1) == 73_728 + 2_097_152
    # the attention layer is MLA, replicated: (512 + 64) x 1 x 2 B
    assert mamba.mamba_hybrid_kv_cell(geometry=k, attn_tp_size=8, kv_dtype=DType.BF16) == 1_152


def test_qwen35_needs_the_interval():
    with pytest.raises(InputError) as err:
        mamba_geometry.mamba_geometry_from_config(
            {
                "architectures": ["Qwen3_5ForConditionalGeneration"],
                "model_type": "qwen3_5",
                "text_config": {"num_hidden_layers": 8, "layer_types": ["linear_attention"] * 8},
            }
        )
    assert err.value.field == "full_attention_interval"
