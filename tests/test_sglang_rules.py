"""SGLang 0.5.23 scalar rules; expected values are hand arithmetic on the engine's formulas."""

from __future__ import annotations

import pytest

from kvplan.engines.sglang import rules as s
from kvplan.engines.sglang.mem_query import MemQuery
from kvplan.engines.sglang.page_query import PageQuery
from kvplan.errors import InputError

GIB = 2**30
RTX_PRO_6000_MIB = 97_887


def gib(x: float) -> int:
    return round(x * GIB)


# ---------------------------------------------------------------- budget


def test_budget_llama_docs_log():
    # SGLang docs run: before weights 78.81 GB, after 63.72 GB, mfs 0.88.
    # 63.72 - 78.81*0.12 = 54.2628 GiB = 54.2628 * 1,073,741,824 = 58,264,237,847.35 B
    b = s.budget_bytes(free_before_bytes=gib(78.81), free_after_bytes=gib(63.72), mem_fraction_static=0.88)
    assert abs(b - 58_264_237_847) <= 2
    tokens = s.pool_tokens(budget_bytes=b, cell_bytes=131_072, page_size=1)
    assert tokens == 444_520  # 54.2628 * 8192 = 444,520.9
    assert abs(tokens - 444_500) / 444_500 < 1e-4  # the log printed 444,500 (inputs rounded to 0.01 GB)
    assert round(tokens * 131_072 / GIB, 2) == 54.26  # K + V printed as 27.13 + 27.13


def test_budget_qwq_4xl4():
    # 6.09 - 21.63*0.15 = 2.8455 GiB -> /65,536 B = 46,620.7 tokens; the log printed 46,611
    b = s.budget_bytes(free_before_bytes=gib(21.63), free_after_bytes=gib(6.09), mem_fraction_static=0.85)
    t = s.pool_tokens(budget_bytes=b, cell_bytes=65_536, page_size=1)
    assert t == 46_620
    assert abs(t - 46_611) / 46_611 < 5e-4


def test_budget_negative_is_returned():
    # 12.25 - 137.90*0.12 = -4.298 GiB
    b = s.budget_bytes(free_before_bytes=gib(137.90), free_after_bytes=gib(12.25), mem_fraction_static=0.88)
    assert b < 0 and abs(b / GIB + 4.298) < 1e-6
    assert s.min_mem_fraction_static(free_before_bytes=gib(137.90), free_after_bytes=gib(12.25)) == 0.912


def test_budget_multimodal_reserve():
    assert s.multimodal_reserve_bytes(is_multimodal=False, mm_feature_transport="cuda_ipc") == 0
    assert s.multimodal_reserve_bytes(is_multimodal=True) == 100 * 2**20
    assert s.multimodal_reserve_bytes(is_multimodal=True, mm_feature_transport="cuda_vmm") == 1124 * 2**20
    base = s.budget_bytes(free_before_bytes=gib(80), free_after_bytes=gib(60), mem_fraction_static=0.9)
    mm = s.budget_bytes(
        free_before_bytes=gib(80), free_after_bytes=gib(60), mem_fraction_static=0.9, mm_reserve_bytes=100 * 2**20
    )
    assert base - mm == 100 * 2**20
    assert base == 52 * GIB  # 60 - 80*0.1 = 52 (0.1 slack is exact enough here)


def test_budget_rejects_bad_mfs():
    with pytest.raises(InputError) as e:
        s.budget_bytes(free_before_bytes=1, free_after_bytes=1, mem_fraction_static=1.5)
    assert e.value.field == "--mem-fraction-static"


# ---------------------------------------------------------------- default flags


@pytest.mark.parametrize(
    "mib,tp,cps,bs",
    [
        (None, 1, 4096, 160),
        (16_376, 1, 2048, 8),  # T4-class
        (20_479, 8, 2048, 8),
        (20_480, 1, 4096, 48),
        (24_576, 4, 4096, 160),
        (35_840, 1, 4096, 32),
        (46_068, 8, 4096, 160),  # L40S
        (61_439, 2, 4096, 32),
        (61_440, 2, 8192, 256),
        (81_559, 1, 8192, 256),  # H100 80GB
        (81_559, 8, 8192, 512),
        (RTX_PRO_6000_MIB, 8, 8192, 512),
        (163_839, 8, 8192, 512),
        (163_840, 1, 16384, 512),
        (183_359, 2, 16384, 512),  # B200
    ],
)
def test_default_cps_and_graph_bs(mib, tp, cps, bs):
    assert s.default_chunked_prefill_size(gpu_memory_mib=mib, tp_size=tp) == cps
    assert s.default_cuda_graph_max_bs(gpu_memory_mib=mib, tp_size=tp, max_running_requests=None) == bs


def test_graph_bs_clamped_by_mrr():
    assert s.default_cuda_graph_max_bs(gpu_memory_mib=RTX_PRO_6000_MIB, tp_size=8, max_running_requests=16) == 16
    assert s.default_cuda_graph_max_bs(gpu_memory_mib=RTX_PRO_6000_MIB, tp_size=8, max_running_requests=4096) == 512


def test_prefill_buckets():
    # 8 (4..32) + 14 (48..256) + 8 (288..512) + 8 (576..1024) + 12 (1280..4096) + 8 (4608..8192)
    assert len(s.prefill_cuda_graph_buckets(max_bs=8192)) == 58
    assert len(s.prefill_cuda_graph_buckets(max_bs=2048)) == 42  # ... + 4 (1280..2048)
    assert len(s.prefill_cuda_graph_buckets(max_bs=16384)) == 74  # 50 + 24 (4608..16384)
    assert s.prefill_cuda_graph_buckets(max_bs=-1) == []


def _mfs(**kw):
    base = dict(
        gpu_memory_mib=RTX_PRO_6000_MIB,
        tp_size=8,
        pp_size=1,
        chunked_prefill_size=None,
        cuda_graph_max_bs=None,
        is_mla=False,
    )
    base.update(kw)
    return s.default_mem_fraction_static(MemQuery(**base))


def test_default_mfs_rtx_pro_6000_tp8():
    # 512 + 8192*1.5 + 8*1/8*1024 + 512*2 + 58*8 = 15,312 -> (97,887-15,312)/97,887 = 0.8436
    assert _mfs() == 0.844
    # cps 2048, mrr 16 -> max_bs 16, 42 buckets: 512+3072+1024+32+336 = 4,976 -> floor 10,240 -> 0.8954
    assert _mfs(chunked_prefill_size=2048, max_running_requests=16) == 0.895


def test_default_mfs_variants():
    # MLA: prefill graph term 1536 instead of 464: 16,384 -> 81,503/97,887 = 0.8326
    assert _mfs(is_mla=True) == 0.833
    # DP attention 8 (max_bs 512 > 300): + 512*8*3 + 512*8*1.5 = 18,432 -> 33,744 -> 0.6553
    assert _mfs(attn_dp_size=8) == 0.655
    # no CUDA graphs: 512 + 12,288 + 1,024 = 13,824 -> 84,063/97,887 = 0.8588
    assert _mfs(disable_cuda_graph=True) == 0.859
    # TP4 x PP2 turns the prefill graph off by default: 512 + 12,288 + 4*2/8*1024 + 512*2 = 14,848
    # -> 83,039/97,887 = 0.8483
    assert _mfs(tp_size=4, pp_size=2) == 0.848
    # DeepEP: +1024 (breakable prefill) and +2048 after the floor -> 18,384 -> 0.8122
    assert _mfs(moe_a2a_backend="deepep") == 0.812
    # H100 80GB TP1: 512 + 12,288 + 128 + 512 + 464 = 13,904 -> 67,655/81,559 = 0.8295
    assert _mfs(gpu_memory_mib=81_559, tp_size=1) == 0.83
    # unknown GPU memory
    assert _mfs(gpu_memory_mib=None) == 0.95
    # small GPU, no floor: 16,376 MiB TP1: cps 2048, bs 8: 512+3072+128+16+42*8=4,064 -> 0.7518
    assert _mfs(gpu_memory_mib=16_376, tp_size=1) == 0.752


def test_default_mfs_vlm_factor():
    # base 0.844 (prefill graph forced on so only the factor differs); ViT 32 x 1280:
    # ratio 32*1280^2/(24*1024^2) = 2.0833 -> factor 1 - 0.1*1.0833 = 0.89167 -> 0.844*0.95*0.89167
    got = _mfs(is_vlm=True, prefill_cuda_graph=True, vit_num_layers=32, vit_hidden_size=1280)
    assert got == pytest.approx(0.844 * 0.95 * (1 - 0.1 * (32 * 1280**2 / (24 * 1024**2) - 1)))


# ---------------------------------------------------------------- page size


def test_default_page_size():
    def ps(family, sm, vendor="nvidia", **kw):
        return s.default_page_size(
            PageQuery(family=family, attention_backend=kw.pop("backend", None), sm_major=sm, vendor=vendor, **kw)
        )

    assert ps("gqa", 9) == 1  # fa3
    assert ps("gqa", 12) == 1  # flashinfer
    assert ps("gqa", 10) == 64  # trtllm_mha default on SM100
    assert ps("gqa", 10, has_asymmetric_kv=True) == 128  # fa4
    assert ps("gqa", 10, backend="trtllm_mha", requested=16) == 16
    assert ps("gqa", 9, backend="flashinfer", requested=32) == 32
    assert ps("gqa", 12, kv_cache_dtype="nvfp4") == 64
    assert ps("mla", 10, deepseek_family=True) == 64  # trtllm_mla
    assert ps("mla", 9, deepseek_family=True) == 1  # fa3
    assert ps("mla", 9, backend="flashmla") == 64
    assert ps("dsa", 9) == 64
    assert ps("dsa", 10, index_kpool=2) == 128
    assert ps("dsa", None, vendor="amd", hip_dsa_preshuffle=False) == 1
    assert ps("dsv4", 12) == 256
    assert ps("dsv4", None, vendor="npu") == 128
    assert ps("gqa", None, vendor="musa") == 64


def test_page_floor_and_pool_tokens():
    assert s.page_floor(tokens=444_520, page_size=64) == 444_480
    assert s.page_floor(tokens=63, page_size=64) == 0
    assert s.pool_tokens(budget_bytes=-5, cell_bytes=100, page_size=1) == 0
    assert s.pool_tokens(budget_bytes=10_000, cell_bytes=100, page_size=64, fixed_overhead_bytes=3_000) == 64
    with pytest.raises(InputError):
        s.page_floor(tokens=1, page_size=0)


# ---------------------------------------------------------------- request cap


@pytest.mark.parametrize(
    "tokens,ctx,req,dp,expected",
    [
        (903_439, 131_072, None, 1, 3_529),  # int(6.8927*512) = 3529 (Grok-2 log)
        (46_611, 131_072, None, 1, 2_048),  # estimate 182 -> lower bound 2048
        (10_000_000, 4_096, None, 1, 4_096),  # estimate 1.25M -> upper bound 4096
        (3_000, 131_072, None, 1, 1_500),  # tokens // 2 caps the 2048 floor
        (444_520, 131_072, 1_024, 8, 128),  # per attention-DP worker
        (444_520, 131_072, 5, 8, 1),  # max(1, 5 // 8)
        (1_000, 4_096, 100_000, 1, 500),  # reduced to tokens // 2
    ],
)
def test_resolve_max_running_requests(tokens, ctx, req, dp, expected):
    assert (
        s.resolve_max_running_requests(total_tokens=tokens, context_len=ctx, requested=req, attn_dp_size=dp) == expected
    )


def test_max_running_requests_reduction_flag():
    assert (
        s.max_running_requests_reduction(total_tokens=1_000, context_len=4_096, requested=100_000, attn_dp_size=1)
        == 100_000
    )
    assert (
        s.max_running_requests_reduction(total_tokens=1_000, context_len=4_096, requested=300, attn_dp_size=1) is None
    )
    assert (
        s.max_running_requests_reduction(total_tokens=1_000, context_len=4_096, requested=None, attn_dp_size=1) is None
    )


def test_max_request_len():
    assert s.max_request_len(context_len=131_072, total_tokens=444_520) == 131_071
    assert s.max_request_len(context_len=131_072, total_tokens=46_611) == 46_610  # only a warning in SGLang
    assert s.max_request_input_len(context_len=131_072, total_tokens=46_611) == 46_605


# ---------------------------------------------------------------- PP, speculative


def test_pp_layer_ranges():
    assert s.pp_layer_ranges(num_layers=61, pp_size=1) == [(0, 61)]
    assert s.pp_layer_ranges(num_layers=61, pp_size=2) == [(0, 30), (30, 61)]
    assert s.pp_layer_ranges(num_layers=61, pp_size=3) == [(0, 20), (20, 40), (40, 61)]
    assert s.pp_layer_ranges(num_layers=62, pp_size=4) == [(0, 15), (15, 30), (30, 46), (46, 62)]
    assert s.pp_layer_ranges(num_layers=61, pp_size=2, partition="31,30") == [(0, 31), (31, 61)]
    assert s.pp_layer_ranges(num_layers=61, pp_size=1, partition="31,30") == [(0, 61)]  # ignored at pp 1
    for bad in ("31,29", "61", "a,b"):
        with pytest.raises(InputError) as e:
            s.pp_layer_ranges(num_layers=61, pp_size=2, partition=bad)
        assert e.value.field == "SGLANG_PP_LAYER_PARTITION"


def test_speculative_cell():
    assert s.speculative_cell(cell=131_072, draft_layers=1, num_layers=32) == 135_168  # + 4,096
    assert s.speculative_cell(cell=35_136, draft_layers=1, num_layers=61) == 35_712  # + 576
    assert s.speculative_cell(cell=57_344, draft_layers=1, num_layers=28) == 59_392  # + 2,048
    assert s.speculative_cell(cell=1_000, draft_layers=1, num_layers=3) == 1_333  # int(333.3)


def test_aiter_mfs_adjustment():
    assert s.aiter_mem_fraction_static(
        mem_fraction_static=0.9, attention_backend="aiter", context_len=131_072
    ) == pytest.approx(0.765)
    assert s.aiter_mem_fraction_static(mem_fraction_static=0.9, attention_backend="aiter", context_len=8_192) == 0.9
    assert s.aiter_mem_fraction_static(mem_fraction_static=0.9, attention_backend="triton", context_len=131_072) == 0.9
    assert (
        s.aiter_mem_fraction_static(
            mem_fraction_static=0.9, attention_backend="aiter", context_len=131_072, honor_explicit_env=True
        )
        == 0.9
    )
