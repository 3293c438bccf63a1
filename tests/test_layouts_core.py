"""Per-token KV cells (GQA, MLA, DSA) and KV dtype resolution, SGLang 0.5.23.

Every expected number is hand arithmetic on the engine's formulas (see the module docstrings
for the source functions), not captured output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.sglang import kvdtype
from kvplan.engines.sglang.pools import dsa, gqa, mla
from kvplan.errors import InputError
from kvplan.geometry import dsa as dsa_geometry
from kvplan.geometry import kvdtype as kv_names
from kvplan.hfconfig.dtypes import DType, dtype_named

HF = Path(__file__).resolve().parent.joinpath("data/shared/hf-configs")


# ---------------------------------------------------------------- kv dtype


def test_cli_choices_are_sglangs():
    assert set(kvdtype.KV_CACHE_DTYPES) == {
        "auto",
        "fp8_e5m2",
        "fp8_e4m3",
        "mxfp8",
        "bf16",
        "bfloat16",
        "nvfp4",
        "fp4_mx_block16",
    }


def test_canonical_kv_dtype():
    assert kvdtype.canonical_kv_dtype("bfloat16") == "bf16"
    assert kvdtype.canonical_kv_dtype("FP8_E4M3") == "fp8_e4m3"
    assert kvdtype.canonical_kv_dtype("auto") == "auto"


@pytest.mark.parametrize("bad", ["fp8", "fp16", "float16", "fp4", "mxfp4", "int8", ""])
def test_canonical_kv_dtype_rejects_what_sglang_rejects(bad):
    with pytest.raises(InputError) as e:
        kvdtype.canonical_kv_dtype(bad)
    assert e.value.field == "--kv-cache-dtype"
    assert "fp8_e4m3" in e.value.hint


def test_resolve_auto_gqa():
    r = dict(kv_cache_quant_algo=None, family="gqa", sm_major=9, vendor="nvidia")
    assert kvdtype.resolve_kv_cache_dtype(requested="auto", model_dtype="bfloat16", **r) == "bf16"
    assert kvdtype.resolve_kv_cache_dtype(requested="auto", model_dtype="float16", **r) == "fp16"
    assert kvdtype.resolve_kv_cache_dtype(requested="fp8_e5m2", model_dtype="bfloat16", **r) == "fp8_e5m2"
    r["kv_cache_quant_algo"] = "fp8"  # case-insensitive match on "FP8"
    assert kvdtype.resolve_kv_cache_dtype(requested="auto", model_dtype="bfloat16", **r) == "fp8_e4m3"
    # an explicit dtype wins over the checkpoint's kv_cache_quant_algo
    assert kvdtype.resolve_kv_cache_dtype(requested="bf16", model_dtype="bfloat16", **r) == "bf16"


def test_resolve_dsa_by_device():
    def res(req, sm, vendor="nvidia", **kw):
        return kvdtype.resolve_kv_cache_dtype(
            requested=req,
            model_dtype="bfloat16",
            kv_cache_quant_algo="FP8",
            family="dsa",
            sm_major=sm,
            vendor=vendor,
            **kw,
        )

    assert res("auto", 10) == "fp8_e4m3"
    assert res("auto", 12) == "fp8_e4m3"  # SM120 major 12 >= 10
    assert res("auto", 9) == "bf16"  # the checkpoint's FP8 kv algo does not matter for DSA
    assert res("auto", None, vendor="amd") == "bf16"  # ROCm reports gfx major 9
    assert res("auto", 10, learnable_sink=True) == "bf16"
    assert res("bfloat16", 10) == "bf16"
    with pytest.raises(InputError):
        res("fp8_e5m2", 10)
    with pytest.raises(InputError):
        res("fp8_e4m3", 10, learnable_sink=True)


def test_resolve_dsv4():
    def res(req, vendor="nvidia"):
        return kvdtype.resolve_kv_cache_dtype(
            requested=req,
            model_dtype="bfloat16",
            kv_cache_quant_algo=None,
            family="dsv4",
            sm_major=12,
            vendor=vendor,
        )

    assert res("auto") == "fp8_e4m3"
    assert res("bfloat16") == "bf16"
    assert res("fp8_e4m3", vendor="npu") == "bf16"
    with pytest.raises(InputError):
        res("bf16")  # DSV4's assert lists "bfloat16" only
    with pytest.raises(InputError):
        res("mxfp8")


def test_element_bits():
    assert [
        kv_names.kv_element_bits(d)
        for d in ("bf16", "bfloat16", "fp16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16")
    ] == [16, 16, 16, 8, 8, 8, 4, 4]
    with pytest.raises(InputError):
        kv_names.kv_element_bits("auto")


# ---------------------------------------------------------------- GQA


def _gqa(kv, hd, layers, tp, dtype="bf16", **kw):
    return gqa.gqa_bytes_per_token(
        num_kv_heads=kv,
        head_dim=hd,
        v_head_dim=hd,
        num_layers=layers,
        attn_tp_size=tp,
        kv_dtype=dtype_named(dtype),
        **kw,
    )


def test_gqa_worked_numbers():
    assert _gqa(8, 128, 32, 1) == 131_072  # Llama-3.1-8B: 8*(128+128)*32*2
    assert _gqa(4, 128, 28, 1) == 57_344  # Qwen2.5-7B: 4*256*28*2
    assert _gqa(8, 128, 64, 4) == 65_536  # QwQ-32B TP4: 2*256*64*2
    assert _gqa(4, 128, 94, 8) == 48_128  # Qwen3-235B-A22B TP8: 1 replicated head *256*94*2
    assert _gqa(8, 128, 32, 1, "fp8_e4m3") == 65_536


def test_gqa_heads_replication_and_dcp():
    assert gqa.gqa_kv_heads_per_rank(num_kv_heads=4, attn_tp_size=8) == 1
    assert gqa.gqa_kv_heads_per_rank(num_kv_heads=8, attn_tp_size=4) == 2
    assert gqa.gqa_kv_heads_per_rank(num_kv_heads=8, attn_tp_size=8, dcp_size=2) == 2  # 8 // (8//2)
    assert gqa.gqa_kv_heads_per_rank(num_kv_heads=1, attn_tp_size=8) == 1


@pytest.mark.parametrize(
    "kv,tp,heads,dcp",
    [(8, 3, None, 1), (12, 8, None, 1), (4, 6, None, 1), (8, 8, 36, 1), (8, 8, None, 3)],
)
def test_gqa_refused_splits(kv, tp, heads, dcp):
    with pytest.raises(InputError) as e:
        gqa.gqa_kv_heads_per_rank(num_kv_heads=kv, attn_tp_size=tp, num_attention_heads=heads, dcp_size=dcp)
    assert e.value.field in ("--tp-size", "--dcp-size")


def test_gqa_qwen3_235b_from_hf_config():
    cfg = json.loads((HF / "Qwen--Qwen3-235B-A22B-FP8" / "config.json").read_text())
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    assert (
        gqa.gqa_kv_heads_per_rank(
            num_kv_heads=cfg["num_key_value_heads"], attn_tp_size=8, num_attention_heads=cfg["num_attention_heads"]
        )
        == 1
    )
    assert _gqa(cfg["num_key_value_heads"], hd, cfg["num_hidden_layers"], 8) == 48_128


def test_gqa_mxfp8_scale_term():
    # 8*256*32*1 = 65,536 values -> + 65,536 // 32 = 2,048 scale bytes
    assert _gqa(8, 128, 32, 1, "mxfp8") == 67_584


def test_gqa_nvfp4_by_device():
    # packed: 8*(128//2)*32*2 = 32,768; one scale layout 8*(128//16)*32*2 = 4,096; dq 8*128*2 = 2,048
    assert gqa.nvfp4_kv_access(sm_major=10) == (1, False)
    assert gqa.nvfp4_kv_access(sm_major=12) == (1, True)
    assert gqa.nvfp4_kv_access(sm_major=10, prefill_backend="flashinfer") == (2, True)
    assert _gqa(8, 128, 32, 1, "nvfp4", sm_major=10) == 36_864
    assert _gqa(8, 128, 32, 1, "nvfp4", sm_major=12) == 38_912
    assert _gqa(8, 128, 32, 1, "nvfp4", sm_major=10, prefill_backend="flashinfer") == 43_008
    assert gqa.gqa_fp4_dequant_bytes_per_token(kv_heads_per_rank=8, head_dim=128, dequant_workspace=True) == 2_048


def test_gqa_fp4_mx_block16():
    assert _gqa(8, 128, 32, 1, "fp4_mx_block16") == 32_768 + 4_096


# ---------------------------------------------------------------- MLA


def test_mla_deepseek_v3_any_tp():
    cfg = json.loads((HF / "deepseek-ai--DeepSeek-V3" / "config.json").read_text())
    kw = dict(
        kv_lora_rank=cfg["kv_lora_rank"], qk_rope_head_dim=cfg["qk_rope_head_dim"], num_layers=cfg["num_hidden_layers"]
    )
    assert mla.mla_bytes_per_token(kv_dtype=DType.FP8_E4M3, **kw) == 35_136  # 576*61
    assert mla.mla_bytes_per_token(kv_dtype=DType.BF16, **kw) == 70_272  # 576*2*61
    # FP4: 576*61//2 = 17,568 + (576//16)*61 = 2,196
    assert mla.mla_bytes_per_token(kv_dtype=DType.NVFP4, **kw) == 19_764


# ---------------------------------------------------------------- DSA

V32 = dict(kv_lora_rank=512, qk_rope_head_dim=64, index_head_dim=128, num_layers=61)


def _v32(kv_dtype, sm, vendor="nvidia", **kw):
    layout = dsa.dsa_row_layout(
        kv_dtype=None if kv_dtype == "auto" else dtype_named(kv_dtype), sm_major=sm, vendor=vendor, **kw
    )
    return layout, dsa.dsa_bytes_per_token(layout=layout, **V32)


def test_dsa_row_and_indexer_bytes():
    assert dsa.dsa_row_bytes(kv_lora_rank=512, qk_rope_head_dim=64, layout="scaled_fp8") == 656  # 512+16+128
    assert dsa.dsa_row_bytes(kv_lora_rank=512, qk_rope_head_dim=64, layout="raw_fp8") == 576
    assert dsa.dsa_row_bytes(kv_lora_rank=512, qk_rope_head_dim=64, layout="bf16") == 1_152
    assert dsa.dsa_indexer_bytes_per_layer(index_head_dim=128) == 132
    assert dsa.dsa_indexer_bytes_per_layer(index_head_dim=128, index_kpool=4) == 33


def test_dsa_v32_by_device():
    assert _v32("fp8_e4m3", 9) == ("scaled_fp8", 48_068)  # H100/H200 explicit fp8: 61*(656+132)
    assert _v32("auto", 10) == ("raw_fp8", 43_188)  # B200 default: trtllm, 61*(576+132)
    assert _v32("auto", 9) == ("bf16", 78_324)  # H100 default: 61*(1152+132)
    assert _v32("fp8_e4m3", 10, prefill_backend="flashmla_kv", decode_backend="flashmla_kv")[0] == "scaled_fp8"
    assert _v32("fp8_e4m3", 10, prefill_backend="flashmla_kv")[0] == "raw_fp8"  # decode still trtllm
    assert (
        _v32("fp8_e4m3", 10, prefill_backend="trtllm", decode_backend="flashmla_kv", disaggregation_mode="decode")[0]
        == "scaled_fp8"
    )
    assert _v32("fp8_e4m3", None, vendor="amd") == ("raw_fp8", 43_188)  # triton, raw layout
    assert _v32("auto", None, vendor="amd")[0] == "bf16"
    assert _v32("fp8_e4m3", 9, prefill_backend="tilelang", decode_backend="tilelang")[0] == "raw_fp8"


def test_dsa_backend_defaults_and_refusals():
    assert dsa.dsa_default_backends(kv_dtype=DType.BF16, sm_major=9, vendor="nvidia") == ("flashmla_sparse", "fa3")
    assert dsa.dsa_default_backends(kv_dtype=DType.BF16, sm_major=10, vendor="nvidia") == ("flashmla_sparse", "trtllm")
    assert dsa.dsa_default_backends(kv_dtype=DType.FP8_E4M3, sm_major=9, vendor="nvidia", dcp_size=2) == (
        "trtllm",
        "trtllm",
    )
    with pytest.raises(InputError):
        dsa.dsa_default_backends(kv_dtype=DType.FP8_E4M3, sm_major=9, vendor="nvidia", prefill_backend="triton")
    with pytest.raises(InputError):
        dsa.dsa_default_backends(kv_dtype=DType.FP8_E4M3, sm_major=9, vendor="nvidia", prefill_backend="tilelang")


def test_glm5_on_sm120_default_is_scaled_fp8():
    cfg = json.loads((HF / "zai-org--GLM-5" / "config.json").read_text())
    layout = dsa.dsa_row_layout(kv_dtype=None, sm_major=12, vendor="nvidia", model="glm")
    assert dsa.dsa_default_backends(kv_dtype=None, sm_major=12, vendor="nvidia", model="glm") == (
        "flashinfer_sparse_mla",
        "flashinfer_sparse_mla",
    )
    assert layout == "scaled_fp8"
    assert (
        dsa.dsa_bytes_per_token(
            kv_lora_rank=cfg["kv_lora_rank"],
            qk_rope_head_dim=cfg["qk_rope_head_dim"],
            index_head_dim=cfg["index_head_dim"],
            num_layers=cfg["num_hidden_layers"],
            layout=layout,
        )
        == 61_464
    )  # 78*(656+132)
    # the same checkpoint on SM120 as DeepSeek arch would take trtllm -> raw
    assert dsa.dsa_row_layout(kv_dtype=None, sm_major=12, vendor="nvidia") == "raw_fp8"


def test_glm52_indexer_layers_from_config():
    cfg = json.loads((HF / "nvidia--GLM-5.2-NVFP4" / "config.json").read_text())
    n = dsa_geometry.dsa_indexer_layer_count(start_layer=0, end_layer=78, indexer_types=cfg["indexer_types"])
    assert n == 21
    # the freq/offset rule gives the same set when indexer_types is absent: layers 0,1,2,6,10,...
    assert (
        dsa_geometry.dsa_indexer_layer_count(start_layer=0, end_layer=78, index_topk_freq=4, index_skip_topk_offset=3)
        == 21
    )
    assert (
        dsa.dsa_bytes_per_token(
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            index_head_dim=128,
            num_layers=78,
            layout="raw_fp8",
            indexer_layers=n,
        )
        == 78 * 576 + 21 * 132
    )  # 44,928 + 2,772 = 47,700


def test_dsa_skip_rules():
    assert not any(dsa_geometry.dsa_layer_skips_topk(layer_id=i) for i in range(61))
    # freq 2, no offset: max(l-1,0) % 2 != 0 -> layers 2, 4, ... skip; 0, 1, 3 do not
    assert [dsa_geometry.dsa_layer_skips_topk(layer_id=i, index_topk_freq=2) for i in range(5)] == [
        False,
        False,
        True,
        False,
        True,
    ]
    assert [dsa_geometry.dsa_layer_skips_topk(layer_id=i, cli_factor=2) for i in range(4)] == [False, True, False, True]
    assert [dsa_geometry.dsa_layer_skips_topk(layer_id=i, index_topk_pattern="FSF") for i in range(4)] == [
        False,
        True,
        False,
        False,
    ]


def test_dsa_dcp_and_draft():
    # indexer replicated under DCP: 61*576 + 61*132*2
    assert dsa.dsa_bytes_per_token(layout="raw_fp8", dcp_size=2, **V32) == 35_136 + 16_104
    assert (
        dsa.dsa_draft_bytes_per_token(
            kv_lora_rank=512, qk_rope_head_dim=64, index_head_dim=128, draft_layers=1, layout="raw_fp8"
        )
        == 708
    )
