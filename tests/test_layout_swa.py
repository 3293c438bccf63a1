"""Hybrid sliding-window pools (kvplan.engines.sglang.pools.swa, geometry in kvplan.geometry.swa), numbers derived by hand from SGLang 0.5.23.

Engine code: python/sglang/srt/model_executor/pool_configurator.py (HybridSWAPoolConfigurator,
SWARequestCapPoolConfigurator, compute_swa_request_cap, validate_swa_pool_size) and
python/sglang/srt/configs/model_config.py (get_hybrid_layer_ids, get_swa_num_kv_heads).
"""

from __future__ import annotations

import json

import pytest

from kvplan.engines.sglang import rules as R
from kvplan.engines.sglang.page_query import PageQuery
from kvplan.engines.sglang.pools import swa
from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType
from tests.conftest import SHARED

GIB = 2**30


@pytest.fixture(scope="module")
def gpt_oss_120b():
    cfg = json.loads((SHARED / "hf-configs" / "openai--gpt-oss-120b" / "config.json").read_text())
    return swa.swa_layers_from_config(cfg)


def _ratio(layers, budget, tp, page, **kw):
    args = dict(
        layers=layers,
        budget_bytes=budget,
        kv_dtype="bf16",
        attn_tp_size=tp,
        page_size=page,
        swa_full_tokens_ratio=None,
        radix_cache=True,
        max_running_requests=None,
        attn_dp_size=1,
        chunked_prefill_size=8192,
        overlap_schedule=True,
    )
    args.update(kw)
    layers, budget = args.pop("layers"), args.pop("budget_bytes")
    stage, max_total = args.pop("stage_layers", None), args.pop("max_total_tokens", None)
    knobs = swa.SWAKnobs(**args)
    return swa.swa_pool_sizes(
        layers=layers, budget_bytes=budget, knobs=knobs, stage_layers=stage, max_total_tokens=max_total
    )


def test_gpt_oss_120b_geometry(gpt_oss_120b):
    g = gpt_oss_120b
    # layer_types alternates sliding/full starting with sliding: odd ids are full, 18 + 18.
    assert g.full_layers == tuple(range(1, 36, 2))
    assert g.swa_layers == tuple(range(0, 36, 2))
    assert (g.full_kv_heads, g.full_head_dim, g.full_v_head_dim) == (8, 64, 64)
    assert (g.swa_kv_heads, g.swa_head_dim, g.swa_v_head_dim) == (8, 64, 64)
    # GptOss.get_attention_sliding_window_size = config.sliding_window - 1 = 128 - 1.
    assert g.sliding_window == 127 and g.config_sliding_window == 128


def test_gpt_oss_120b_tp1_h100_ratio_mode(gpt_oss_120b):
    # gpt-oss override on SM90 -> fa3 -> page 1.
    page = R.default_page_size(PageQuery(family="gqa", attention_backend="fa3", sm_major=9, vendor="nvidia"))
    assert page == 1
    res = _ratio(gpt_oss_120b, 12 * GIB, 1, page)
    # per layer 8 heads x (64 + 64) x 2 B = 2,048; 18 full layers -> 36,864; 18 SWA layers -> 36,864
    assert res.full_bytes_per_token == 36_864 and res.swa_bytes_per_token == 36_864
    # cell = 36,864 + 0.8 x 36,864 = 66,355.2 B per full token
    assert res.cell == pytest.approx(66_355.2)
    # 12 GiB = 12,884,901,888 B / 66,355.2 = 194,180.74 -> 194,180 (page 1)
    assert res.full_tokens == 194_180
    # swa = int(194,180 x 0.8) = 155,344
    assert res.swa_tokens == 155_344
    assert res.mode == "ratio"
    assert res.pool_bytes == 194_180 * 36_864 + 155_344 * 36_864


def test_gpt_oss_120b_tp4_b200_ratio_mode(gpt_oss_120b):
    # gpt-oss override on SM100 -> trtllm_mha -> page 64.
    page = R.default_page_size(PageQuery(family="gqa", attention_backend="trtllm_mha", sm_major=10, vendor="nvidia"))
    assert page == 64
    res = _ratio(gpt_oss_120b, 140 * GIB, 4, page)
    # 8 KV heads / TP4 = 2 per rank: 2 x 128 x 2 = 512 B per layer; x 18 = 9,216 per pool
    assert res.full_bytes_per_token == 9_216 and res.swa_bytes_per_token == 9_216
    # cell 9,216 x 1.8 = 16,588.8; 150,323,855,360 / 16,588.8 = 9,061,767.9 -> page 64: 141,590 x 64 = 9,061,760
    assert res.full_tokens == 9_061_760
    # int(9,061,760 x 0.8) = 7,249,408 = 113,272 pages exactly
    assert res.swa_tokens == 7_249_408


def test_request_cap_mode(gpt_oss_120b):
    # radix off + --max-running-requests 64 + chunked prefill 8192 -> SWARequestCapPoolConfigurator
    assert swa.swa_request_cap_applies(radix_cache=False, max_running_requests=64, chunked_prefill_size=8192)
    assert not swa.swa_request_cap_applies(radix_cache=True, max_running_requests=64, chunked_prefill_size=8192)
    assert not swa.swa_request_cap_applies(radix_cache=False, max_running_requests=None, chunked_prefill_size=8192)
    assert not swa.swa_request_cap_applies(radix_cache=False, max_running_requests=64, chunked_prefill_size=-1)
    res = _ratio(gpt_oss_120b, 12 * GIB, 1, 1, radix_cache=False, max_running_requests=64)
    # per request = window 127 + 128 x 1 (eviction interval x draft 1) + page 1 + decode_alloc page 1 = 257
    # cap = 257 x 64 + 2 (overlap) x 8,192 + 1 = 16,448 + 16,384 + 1 = 32,833
    assert res.mode == "request-cap" and res.swa_cap_tokens == 32_833 and res.swa_tokens == 32_833
    # fixed = 32,833 x 36,864 = 1,210,355,712; full = (12,884,901,888 - 1,210,355,712) // 36,864 = 316,692
    assert res.fixed_bytes == 1_210_355_712
    assert res.full_tokens == 316_692
    # without the overlap schedule one chunk is in flight: 16,448 + 8,192 + 1 = 24,641
    res2 = _ratio(gpt_oss_120b, 12 * GIB, 1, 1, radix_cache=False, max_running_requests=64, overlap_schedule=False)
    assert res2.swa_tokens == 24_641
    # DP attention 2: requests per rank 64 // 2 = 32 -> 257 x 32 + 16,384 + 1 = 24,609
    res3 = _ratio(gpt_oss_120b, 12 * GIB, 1, 1, radix_cache=False, max_running_requests=64, attn_dp_size=2)
    assert res3.swa_tokens == 24_609


def test_request_cap_leaves_no_full_pool(gpt_oss_120b):
    # 1 GiB cannot hold 32,833 SWA slots of 36,864 B (1.13 GiB)
    with pytest.raises(InputError) as err:
        _ratio(gpt_oss_120b, 1 * GIB, 1, 1, radix_cache=False, max_running_requests=64)
    assert err.value.field == "--max-running-requests"


def test_swa_pool_validation_names_the_lever(gpt_oss_120b):
    # r = 0.0003: cell = 36,864 x 1.0003 = 36,875.06; full = 349,420; swa = int(104.8) = 104 <= 127 + 1
    with pytest.raises(InputError) as err:
        _ratio(gpt_oss_120b, 12 * GIB, 1, 1, swa_full_tokens_ratio=0.0003)
    assert err.value.field == "--swa-full-tokens-ratio"
    # a budget of 100 full tokens: swa 80, and even ratio 1.0 (100 <= 128) cannot help
    with pytest.raises(InputError) as err:
        _ratio(gpt_oss_120b, 100 * 66_356, 1, 1)
    assert err.value.field == "--mem-fraction-static"
    # --max-total-tokens 150 -> full 150, swa int(120) = 120 <= 128
    with pytest.raises(InputError) as err:
        _ratio(gpt_oss_120b, 12 * GIB, 1, 1, max_total_tokens=150)
    assert err.value.field == "--max-total-tokens"
    # boundary: swa must be strictly above window + page = 128 -> 161 full tokens gives int(128.8) = 128: refused
    with pytest.raises(InputError):
        _ratio(gpt_oss_120b, 12 * GIB, 1, 1, max_total_tokens=161)
    ok = _ratio(gpt_oss_120b, 12 * GIB, 1, 1, max_total_tokens=162)  # int(129.6) = 129 > 128
    assert (ok.full_tokens, ok.swa_tokens) == (162, 129)


def test_ratio_out_of_range(gpt_oss_120b):
    for r in (0.0, 1.5):
        with pytest.raises(InputError) as err:
            _ratio(gpt_oss_120b, 12 * GIB, 1, 1, swa_full_tokens_ratio=r)
        assert err.value.field == "--swa-full-tokens-ratio"


def test_pp2_halves_the_cell(gpt_oss_120b):
    # stages [0,18) and [18,36) each own 9 full + 9 SWA layers: cell 18,432 x 1.8 = 33,177.6
    res = swa.swa_pool_sizes_over_stages(
        layers=gpt_oss_120b,
        pp_size=2,
        budget_bytes=12 * GIB,
        kv_dtype="bf16",
        attn_tp_size=1,
        page_size=1,
        swa_full_tokens_ratio=None,
        radix_cache=True,
        max_running_requests=None,
        attn_dp_size=1,
        chunked_prefill_size=8192,
        overlap_schedule=True,
    )
    # 12,884,901,888 / 33,177.6 = 388,361.48 -> 388,361; swa int(310,688.8) = 310,688
    assert res.full_tokens == 388_361 and res.swa_tokens == 310_688


def test_draft_layers_join_their_pools(gpt_oss_120b):
    # one full-attention EAGLE draft layer: full cell 36,864 + 2,048 = 38,912; cell = 38,912 + 29,491.2 = 68,403.2
    res = _ratio(gpt_oss_120b, 12 * GIB, 1, 1, draft_full_layers=1)
    assert res.full_bytes_per_token == 38_912
    assert res.full_tokens == 12 * GIB * 10 // 684_032  # 188,368 (integer form of 12 GiB / 68,403.2)


def test_fp8_and_mxfp8_cells(gpt_oss_120b):
    assert (
        swa.swa_bytes_per_layer_token(kv_heads=8, head_dim=64, v_head_dim=64, attn_tp_size=1, kv_dtype=DType.FP8_E4M3)
        == 1_024
    )
    # mxfp8: 1,024 + 8 x 128 // 32 = 1,024 + 32
    assert (
        swa.swa_bytes_per_layer_token(kv_heads=8, head_dim=64, v_head_dim=64, attn_tp_size=1, kv_dtype=DType.MXFP8)
        == 1_056
    )
    # TP larger than the KV heads keeps one head per rank
    assert (
        swa.swa_bytes_per_layer_token(kv_heads=8, head_dim=64, v_head_dim=64, attn_tp_size=16, kv_dtype=DType.BF16)
        == 256
    )
    # FP4 (issue 13): the hybrid pool has no FP4 quant method -- 1 B per value (float4_e2m1fn_x2's element size),
    # no scales: 8 x 128 x 1 = 1,024, as fp8 (tests/test_swa_by_release.py has the whole plan)
    assert (
        swa.swa_bytes_per_layer_token(kv_heads=8, head_dim=64, v_head_dim=64, attn_tp_size=1, kv_dtype=DType.NVFP4)
        == 1_024
    )


def test_gemma2_gemma3_are_not_hybrid_swa_in_sglang():
    cfg = {
        "architectures": ["Gemma3ForCausalLM"],
        "num_hidden_layers": 62,
        "sliding_window": 1024,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    }
    with pytest.raises(InputError, match="disables hybrid SWA"):
        swa.swa_layers_from_config(cfg)


def test_llama4_split_every_fourth_layer_full():
    cfg = {
        "architectures": ["Llama4ForConditionalGeneration"],
        "text_config": {
            "num_hidden_layers": 48,
            "num_attention_heads": 40,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "attention_chunk_size": 8192,
        },
    }
    g = swa.swa_layers_from_config(cfg)
    assert g.full_layers == tuple(range(3, 48, 4)) and len(g.swa_layers) == 36
    assert g.sliding_window == 8192  # no sliding_window key: attention_chunk_size


def test_mimo_v2_pattern_and_swa_heads():
    cfg = {
        "architectures": ["MiMoV2FlashForCausalLM"],
        "num_hidden_layers": 6,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "head_dim": 192,
        "v_head_dim": 128,
        "swa_num_key_value_heads": 8,
        "swa_head_dim": 192,
        "swa_v_head_dim": 128,
        "sliding_window": 128,
        "hybrid_layer_pattern": [0, 1, 1, 1, 1, 0],
    }
    g = swa.swa_layers_from_config(cfg)
    assert g.full_layers == (0, 5) and g.swa_layers == (1, 2, 3, 4)
    assert (g.full_kv_heads, g.full_head_dim, g.full_v_head_dim) == (4, 192, 128)
    assert (g.swa_kv_heads, g.swa_head_dim, g.swa_v_head_dim) == (8, 192, 128)
    assert g.sliding_window == 128  # no get_attention_sliding_window_size on MiMo: raw value


def test_gemma4_full_geometry_from_global_fields():
    cfg = {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "text_config": {
            "num_hidden_layers": 6,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 256,
            "global_head_dim": 512,
            "num_global_key_value_heads": 4,
            "sliding_window": 1024,
            "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
        },
    }
    g = swa.swa_layers_from_config(cfg)
    assert (g.full_kv_heads, g.full_head_dim) == (4, 512)
    assert (g.swa_kv_heads, g.swa_head_dim) == (16, 256)
    assert g.sliding_window == 1023
    # TP1 bf16: full 4 x 1,024 x 2 = 8,192 per layer; SWA 16 x 512 x 2 = 16,384 per layer
    res = _ratio(g, GIB, 1, 1, swa_full_tokens_ratio=0.5)
    assert (res.full_bytes_per_token, res.swa_bytes_per_token) == (8_192, 5 * 16_384)
    # cell = 8,192 + 0.5 x 81,920 = 49,152 -> 1,073,741,824 / 49,152 = 21,845.33 -> 21,845; swa int(10,922.5)
    assert (res.full_tokens, res.swa_tokens) == (21_845, 10_922)


def test_missing_fields_raise():
    with pytest.raises(InputError) as err:
        swa.swa_layers_from_config(
            {
                "architectures": ["GptOssForCausalLM"],
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "head_dim": 64,
                "sliding_window": 128,
            }
        )
    assert err.value.field == "layer_types"
    with pytest.raises(InputError) as err:
        swa.swa_layers_from_config(
            {
                "architectures": ["GptOssForCausalLM"],
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "head_dim": 64,
                "layer_types": ["sliding_attention", "full_attention"],
            }
        )
    assert err.value.field == "sliding_window"
    with pytest.raises(InputError):
        swa.swa_layers_from_config({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2})
