"""DeepSeek-V4 family pool sizing (kvplan.engines.sglang.pools.dsv4, geometry in kvplan.geometry.dsv4) against numbers derived by hand from SGLang 0.5.23.

Every expected value below is computed in the comments from the engine's code
(pool_configurator.DSV4PoolConfigurator, deepseek_v4_memory_pool, kv_layout), not from kvplan's output.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kvplan.engines.sglang.pools.dsv4 import (
    compress_state_ring_size,
    dsv4_pool_sizes,
    dsv4_select_layout,
    kv_bytes_per_row,
    layout_page_bytes,
)
from kvplan.engines.sglang.pools.dsv4.stage import DSV4Flags
from kvplan.errors import InputError
from kvplan.geometry.dsv4 import (
    DSV4Geometry,
    dsv4_geometry_from_config,
    dsv4_naive_v3_bytes_per_token,
)
from kvplan.hfconfig.dtypes import DType


def _pools(**kw):
    """:func:`dsv4_pool_sizes` with the server flags of ``kw`` gathered into its :class:`DSV4Flags` record."""
    names = {f.name for f in dataclasses.fields(DSV4Flags)}
    flags = DSV4Flags(**{k: v for k, v in kw.items() if k in names})
    return dsv4_pool_sizes(flags=flags, **{k: v for k, v in kw.items() if k not in names})


GiB = 2**30
HF_V4_FLASH = (
    Path(__file__).resolve().parent.joinpath("data/shared/hf-configs/deepseek-ai--DeepSeek-V4-Flash/config.json")
)
REPO = Path(__file__).resolve().parents[1]

# The released V4.1-Flash config layout (nested), reduced to the fields SGLang's pool reads.
V41_FLASH_CFG = {
    "architectures": ["DeepseekV41ForCausalLM"],
    "model_type": "deepseek_v41",
    "text_config": {
        "model_type": "deepseek_v41_text",
        "num_hidden_layers": 40,
        "head_dim": 512,
        "qk_rope_head_dim": 64,
        "index_head_dim": 128,
        "sliding_window": 128,
        "compress_ratios": [0, 0] + [2] * 18 + [1] * 20 + [0, 0, 0],
        "kv_source_layer_ids": [2, 8, 14, 20],
        "num_nextn_predict_layers": 3,
    },
    "vision_config": {"model_type": "deepseek_v41_vision", "num_hidden_layers": 32},
}

# V4-Flash: 43 layers, ratios 0,0 then 4/128 alternating, ending with 4; trailing MTP entry 0.
V4_FLASH_RATIOS = [0, 0] + [4, 128] * 20 + [4, 0]
V4_FLASH_CFG = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "model_type": "deepseek_v4",
    "num_hidden_layers": 43,
    "head_dim": 512,
    "qk_rope_head_dim": 64,
    "index_head_dim": 128,
    "sliding_window": 128,
    "compress_ratios": V4_FLASH_RATIOS,
    "num_nextn_predict_layers": 1,
}
# V4-Pro: 61 layers, ratios 128,128 then 4/128 alternating, ending with 4; trailing MTP 0 -> 30 c4, 31 c128.
V4_PRO_CFG = {
    **V4_FLASH_CFG,
    "num_hidden_layers": 61,
    "compress_ratios": [128, 128] + [4, 128] * 29 + [4, 0],
}


@pytest.fixture(scope="module")
def v41() -> DSV4Geometry:
    return dsv4_geometry_from_config(V41_FLASH_CFG)


@pytest.fixture(scope="module")
def v4f() -> DSV4Geometry:
    return dsv4_geometry_from_config(V4_FLASH_CFG)


@pytest.fixture(scope="module")
def v4p() -> DSV4Geometry:
    return dsv4_geometry_from_config(V4_PRO_CFG)


def _v41_default(budget: int, **kw):
    """V4.1-Flash default deployment: SM120 -> layout v4, page 256, mrr 16, cps 2048, radix+overlap on."""
    geom = dsv4_geometry_from_config(V41_FLASH_CFG)
    args = dict(
        geometry=geom,
        budget_bytes=budget,
        layout="v4",
        max_running_requests=16,
        context_len=1_048_576,
        chunked_prefill_size=2048,
    )
    args.update(kw)
    return _pools(**args)


# --------------------------------------------------------------------------------------------------------
# Row layouts (kv_layout.py)
# --------------------------------------------------------------------------------------------------------


def test_v4_row_page_padding():
    # V4 row = 448 fp8 + 64*2 bf16 rope + 7 scales + 1 pad = 584 B; page stride padded to 576 B.
    # 256 rows: 256*584 = 149,504 -> ceil(/576) = 260 -> 149,760 B -> 585.0 B/row
    assert layout_page_bytes(layout="v4", page_tokens=256) == 149_760
    assert kv_bytes_per_row(layout="v4", ratio=0) == 585.0
    # c4 page = 64 rows: 37,376 -> 65*576 = 37,440 -> 585.0 ; c2 page 128 rows: 74,752 -> 130*576 = 74,880 -> 585.0
    assert kv_bytes_per_row(layout="v4", ratio=4) == 585.0
    assert kv_bytes_per_row(layout="v4", ratio=2) == 585.0
    # c128 page = 2 rows: 1,168 -> 3*576 = 1,728 -> 864.0 B/row
    assert layout_page_bytes(layout="v4", page_tokens=2) == 1_728
    assert kv_bytes_per_row(layout="v4", ratio=128) == 864.0


def test_v41_layouts():
    # V41: 528 B/row aligned to 512: 256*528 = 135,168 = 264*512 -> no padding -> 528.0
    assert kv_bytes_per_row(layout="v41", ratio=0) == 528.0
    # ratio 1/2 under V41 "auto" -> V41_FP4 (288 B, align 256): 128*288 = 36,864 = 144*256 -> 288.0
    assert kv_bytes_per_row(layout="v41", ratio=2) == 288.0
    # ratio 128 stays V41 fp8: 2 rows * 528 = 1,056 -> 3*512 = 1,536 -> 768.0
    assert kv_bytes_per_row(layout="v41", ratio=128) == 768.0
    # trtllm uniform fp8 pool is priced at attn_head_dim = 512 with no padding
    assert kv_bytes_per_row(layout="uniform_fp8", ratio=128) == 512.0


def test_ring_sizes():
    assert [compress_state_ring_size(ratio=r) for r in (2, 4, 128)] == [2, 8, 128]
    # speculative: c4 16, c128 256, c2 = 1 << (drafts+1).bit_length(): drafts 4 -> 1<<3 = 8; drafts 2 -> 4
    assert [compress_state_ring_size(ratio=r, num_draft_tokens=4) for r in (2, 4, 128)] == [8, 16, 256]
    assert compress_state_ring_size(ratio=2, num_draft_tokens=2) == 4


def test_naive_v3_basis():
    assert dsv4_naive_v3_bytes_per_token(kv_dtype_bytes=1) == 61 * 576 == 35_136
    assert dsv4_naive_v3_bytes_per_token(kv_dtype_bytes=2) == 70_272


# --------------------------------------------------------------------------------------------------------
# Layout selection (deepseek_v4_hook._default_dsv4_attention_backend + select_dsv4_kv_layout)
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, expected",
    [
        (dict(sm_major=12, is_v41=True, kv_dtype=DType.FP8_E4M3, attn_tp_size=8), "v4"),  # RTX PRO 6000
        (dict(sm_major=10, is_v41=True, kv_dtype=DType.FP8_E4M3, attn_tp_size=8), "v4"),  # attn TP > 1
        (dict(sm_major=10, is_v41=True, kv_dtype=None, attn_tp_size=1), "v41"),  # mega
        (dict(sm_major=10, is_v41=True, kv_dtype=DType.FP8_E4M3, attn_tp_size=8, pd_disaggregation=True), "v41"),
        (dict(sm_major=10, is_v41=False, kv_dtype=DType.FP8_E4M3, attn_tp_size=1), "v4"),  # V4 never mega
        (dict(sm_major=10, is_v41=True, kv_dtype=DType.FP8_E4M3, attn_tp_size=1, kv_layout_env="v4"), "v4"),
        (dict(sm_major=10, is_v41=True, kv_dtype=DType.FP8_E4M3, attn_tp_size=1, kv_layout_env="v41_new"), "v41_new"),
        (
            dict(sm_major=10, is_v41=False, kv_dtype=DType.FP8_E4M3, attn_tp_size=8, attention_backend="trtllm"),
            "uniform_fp8",
        ),
        (dict(sm_major=9, is_v41=False, kv_dtype=DType.FP8_E4M3, attn_tp_size=8, kv_layout_env="auto"), "v4"),
    ],
)
def test_select_layout(kw, expected):
    assert dsv4_select_layout(**kw) == expected


def test_select_layout_errors():
    with pytest.raises(InputError) as e:
        dsv4_select_layout(sm_major=12, is_v41=True, kv_dtype=DType.BF16, attn_tp_size=8)
    assert e.value.field == "--kv-cache-dtype"
    with pytest.raises(InputError) as e:
        dsv4_select_layout(
            sm_major=12, is_v41=True, kv_dtype=DType.FP8_E4M3, attn_tp_size=1, attention_backend="flashmla_mega"
        )
    assert e.value.field == "attention_backend"


# --------------------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------------------


def test_geometry_v41_nested(v41):
    assert v41.is_v41 and v41.num_layers == 40
    assert len(v41.compress_ratios) == 40  # 3 trailing DSpark/MTP slots dropped
    assert v41.kv_source_layer_ids == (2, 8, 14, 20)
    # collect_sources_by_ratio: ratio-2 owners are the sources with ratio 2, ratio-1 owner is layer 20
    assert v41.owner_layers() == {1: (20,), 2: (2, 8, 14)}
    assert v41.num_nextn_predict_layers == 3 and v41.qk_nope_head_dim == 448


def test_geometry_dspark_fields(v41, v4f):
    # no dspark_* key in the reduced config: not bundled, stages = num_nextn_predict_layers (3; V4-Flash 1)
    assert (v41.dspark_block_size, v41.bundles_dspark_draft, v41.dspark_stages) == (None, False, 3)
    assert (v4f.bundles_dspark_draft, v4f.dspark_stages) == (False, 1)
    # dspark_block_size marks a bundled draft (checkpoint_bundles_dspark_draft); target layer ids set the stages
    cfg = {
        **V41_FLASH_CFG,
        "text_config": {
            **V41_FLASH_CFG["text_config"],
            "dspark_block_size": 5,
            "dspark_target_layer_ids": [1, 20, 38, 39],
        },
    }
    g = dsv4_geometry_from_config(cfg)
    assert (g.dspark_block_size, g.bundles_dspark_draft, g.dspark_stages) == (5, True, 4)
    for bad in ({"dspark_block_size": 0}, {"dspark_target_layer_ids": []}, {"dspark_target_layer_ids": [40]}):
        with pytest.raises(InputError) as e:
            dsv4_geometry_from_config({**V41_FLASH_CFG, "text_config": {**V41_FLASH_CFG["text_config"], **bad}})
        assert e.value.field == next(iter(bad))


def test_draft_pool_component(v41):
    # DSpark 4 drafts, 3 stages: the draft worker's pool replaces the reserve line in the components:
    # swa 43,520 slots (test_v41_spec_dspark) -> 3 x ceil((43,520 + 256) / 256) = 3 x 171 pages x 149,760 B
    p = _v41_default(8 * GiB, speculative_num_draft_tokens=4, speculative_num_steps=3, draft_layers=3)
    comps = dict(p.components)
    assert comps["draft swa_kv (3 draft layers, the draft worker's own pool)"] == 3 * 171 * 149_760 == 76_826_880
    assert not any(name.startswith("draft_worker_reserve") for name in comps)
    # without the stage count the budgeted reserve stays: budgeted x (1 - 40/41)
    q = _v41_default(8 * GiB, speculative_num_draft_tokens=4, speculative_num_steps=3)
    assert dict(q.components)["draft_worker_reserve (budgeted, (L+1)/L)"] == int(
        q.budgeted_bytes - q.budgeted_bytes / (41 / 40)
    )
    assert (p.full_tokens, p.swa_tokens) == (q.full_tokens, q.swa_tokens)


def test_geometry_v4_flash_real_config(v4f):
    if HF_V4_FLASH.exists():
        real = dsv4_geometry_from_config(json.loads(HF_V4_FLASH.read_text()))
        assert real == v4f
    assert not v4f.is_v41 and len(v4f.compress_ratios) == 43
    owners = v4f.owner_layers()
    assert len(owners[4]) == 21 and len(owners[128]) == 20 and set(owners) == {4, 128}


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"compress_ratios": [0, 0, 4]}, "compress_ratios"),  # shorter than num_hidden_layers
        ({"compress_ratios": [0, 3, *V4_FLASH_RATIOS[2:]]}, "compress_ratios"),  # 3 not in {0,1,2,4,128}
        ({"num_hidden_layers": None}, "num_hidden_layers"),
        ({"sliding_window": None}, "sliding_window"),
        ({"index_head_dim": None}, "index_head_dim"),
        ({"architectures": ["LlamaForCausalLM"]}, "architectures"),
    ],
)
def test_geometry_bad_config_names_field(patch, field):
    cfg = {**V4_FLASH_CFG, **patch}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    with pytest.raises(InputError) as e:
        dsv4_geometry_from_config(cfg)
    assert e.value.field == field


def test_geometry_v41_missing_source():
    text = {**V41_FLASH_CFG["text_config"], "kv_source_layer_ids": [8, 14, 20]}  # layer 2 (ratio 2) has none
    with pytest.raises(InputError) as e:
        dsv4_geometry_from_config({**V41_FLASH_CFG, "text_config": text})
    assert e.value.field == "kv_source_layer_ids"


# --------------------------------------------------------------------------------------------------------
# V4.1-Flash default deployment (SM120, layout v4, fp8, page 256, mrr 16, cps 2048, radix on, overlap on)
# --------------------------------------------------------------------------------------------------------


def test_v41_default_coefficients_and_swa_cap():
    p = _v41_default(8 * GiB)
    # ratio-1 source (layer 20): (585 + 68) / 1 = 653.0 ; ratio-2 sources (2, 8, 14): 3 * (585 + 68) / 2 = 979.5
    assert p.bytes_per_full_token == 1632.5
    # SWA slot = 40 layers * 585 (no c4 layers -> no c4 state term)
    assert p.bytes_per_swa_token == 23_400.0
    assert p.swa_mode == "cap"
    # compute_swa_request_cap: per_req = window 128 + eviction 128*1 + page 256 + decode_alloc 256 = 768
    # cap = 768*16 + 2 chunks * 2048 + 256 = 16,640 ; tails = 4*16 = 64 -> + 64*(128+256) = 24,576
    # ceil256(41,216) = 41,216 (161 pages)
    assert p.swa_tokens == p.swa_cap_tokens == 41_216
    assert p.swa_prefix_tails == 64
    # fixed SWA = 41,216 * 23,400
    assert p.swa_fixed_bytes == 964_454_400
    # ratio-2 pair state: rows = ceil2(17 slots * ring 2 + 2 + 1 = 37) = 38; 38 * (2*512 fp32 = 4096 B) * 3 layers
    assert p.c2_state_bytes == 466_944
    assert p.c128_state_bytes == 0
    assert p.fixed_bytes == 964_454_400 + 466_944
    assert p.max_running_requests == 16


def test_v41_default_full_tokens_8gib():
    p = _v41_default(8 * GiB)
    # avail = 8,589,934,592 - 964,921,344 = 7,625,013,248 ; /1632.5 = 4,670,758 -> page floor 4,670,720
    # padding(full) = ratio1: 256*585 + (ceil((4,670,976+64)/64)*64 - 4,670,720)*68 = 149,760 + 320*68 = 171,520
    #               + ratio2: 3 * (149,760 + (2,335,552 - 2,335,360)*68) = 3 * 162,816 = 488,448  -> 659,968
    # 4,670,720*1632.5 + 659,968 = 7,625,610,368 > avail -> 4,670,464: 7,625,192,448 > avail
    # -> 4,670,208: 7,624,114,560 + 659,968 = 7,624,774,528 <= avail
    assert p.full_tokens == 4_670_208
    assert p.low_ratio_padding_bytes == 659_968
    assert p.c4_tokens == 4_670_208 // 4 and p.c128_tokens == 4_670_208 // 128


@pytest.mark.parametrize(
    "w_gib, expected_full",
    [
        # reference §5 sensitivity table: P = 94.5 GiB, mfs 0.72, mm reservation 0.0977 GiB
        (36.5, 20_088_832),
        (45.0, 14_498_304),
        (55.0, 7_920_896),
        (60.0, 4_632_320),
    ],
)
def test_v41_sensitivity_table(w_gib, expected_full):
    budget = int(((94.5 - w_gib) - 0.28 * 94.5 - 0.0977) * GiB)
    p = _v41_default(budget)
    # W = 60: budget 8,527,979,688; avail = budget - 964,921,344 = 7,563,058,344; /1632.5 = 4,632,807
    # -> floor 4,632,576; + padding 659,968 overshoots by one page -> 4,632,320
    assert p.full_tokens == expected_full
    assert p.budgeted_bytes <= budget


def test_v41_allocation_check_w60():
    budget = int(((94.5 - 60.0) - 0.28 * 94.5 - 0.0977) * GiB)
    p = _v41_default(budget)
    # What DeepSeekV4TokenToKVPool allocates at N = 4,632,320 (pages = ceil((size + 256) / page_rows)):
    # swa   40 layers * ceil((41,216+256)/256) = 162 pages * 149,760          =   970,444,800
    # c1 kv  1 layer  * ceil((4,632,320+256)/256) = 18,096 * 149,760          = 2,710,056,960
    # c1 idx 1 layer  * ceil((4,632,576+64)/64) = 72,385 * (64*68 = 4,352)    =   315,019,520
    # c2 kv  3 layers * ceil((2,316,160+256)/128) = 18,097 * 74,880           = 4,065,310,080
    # c2 idx 3 layers * ceil((2,316,288+64)/64) = 36,193 * 4,352              =   472,535,808
    # pair state                                                              =       466,944
    #                                                                    total = 8,533,834,112
    assert p.full_tokens == 4_632_320
    assert dict(p.components)["c1_kv (1 kv_source layers)"] == 2_710_056_960
    assert p.allocated_bytes == 8_533_834_112
    assert 0 < p.allocated_bytes - budget < 6 * 2**20  # mostly the unbudgeted SWA padding page (5.99 MB)


def test_v41_disable_radix_cache():
    p = _v41_default(8 * GiB, radix_cache=False)
    # no prefix tails: cap = 768*16 + 2*2048 + 256 = 16,640 = 65 pages
    assert p.swa_tokens == 16_640
    assert p.swa_fixed_bytes == 16_640 * 23_400 == 389_376_000


def test_v41_overlap_off_one_chunk():
    p = _v41_default(8 * GiB, overlap_schedule=False)
    # chunks in flight 1: 768*16 + 2048 + 256 + 24,576 = 39,168 -> ceil256 = 39,168 (153 pages)
    assert p.swa_tokens == 39_168


def test_v41_explicit_ratio():
    p = _v41_default(8 * GiB, swa_full_tokens_ratio=0.1)
    # ratio mode: 1632.5 + 0.1 * 23,400 = 3,972.5
    assert p.swa_mode == "ratio"
    assert p.bytes_per_full_token == pytest.approx(3972.5)
    # fixed = pair state only: avail = 8,589,934,592 - 466,944 = 8,589,467,648 ; /3972.5 = 2,162,231 -> 2,161,920
    # padding ~ 660 kB < (2,162,231.0 - 2,161,920)*3972.5 = 1.24 MB, so no step-down
    assert p.full_tokens == 2_161_920
    # swa = int(2,161,920 * 0.1) = 216,192 -> page floor 216,064
    assert p.swa_tokens == 216_064


def test_v41_default_mrr_256():
    p = _v41_default(40 * GiB, max_running_requests=None, chunked_prefill_size=8192)
    # mrr 256 (hook default): per_req 768*256 = 196,608 + 2*8192 + 256 = 213,248 ; tails 1024*384 = 393,216
    # -> 606,464 slots (2369 pages) * 23,400 = 14,191,257,600 B (13.2 GiB)
    assert p.swa_tokens == 606_464
    assert p.swa_fixed_bytes == 14_191_257_600
    assert p.budget_mrr == 256


def test_v41_spec_dspark():
    p = _v41_default(8 * GiB, speculative_num_draft_tokens=4, speculative_num_steps=3)
    # x (40+1)/40: 1632.5 * 41/40 = 1673.3125 ; 23,400 * 41/40 = 23,985
    assert p.bytes_per_full_token == pytest.approx(1673.3125)
    assert p.bytes_per_swa_token == pytest.approx(23_985.0)
    # cap: trailing 128 + 128*4 + 256 = 896, decode_alloc (overlap, spec-v2) 2*max(3,4) = 8 -> 904 per request
    # 904*16 + 2*2048 + 256 = 18,816 ; + 64*384 = 24,576 -> 43,392 -> ceil256 = 43,520
    assert p.swa_tokens == 43_520
    # c2 ring = 1 << (4+1).bit_length() = 8: rows ceil2(17*8 + 8 + 1 = 145) = 146 -> 146*4096*3 = 1,794,048
    assert p.c2_state_bytes == 1_794_048


def test_v41_sm100_mega_layout():
    p = _v41_default(8 * GiB, layout="v41")
    # V41 main 528 B; ratio-1/2 fp4 288 B: (288+68) + 3*(288+68)/2 = 356 + 534 = 890
    assert p.bytes_per_full_token == 890.0
    assert p.bytes_per_swa_token == 40 * 528.0


# --------------------------------------------------------------------------------------------------------
# V4-Flash / V4-Pro ratio mode
# --------------------------------------------------------------------------------------------------------


def test_v4_flash_tp8_ratio_mode_10gib(v4f):
    p = _pools(
        geometry=v4f,
        budget_bytes=10 * GiB,
        layout="v4",
        max_running_requests=16,
        context_len=1_048_576,
        chunked_prefill_size=8192,
    )
    assert p.swa_mode == "ratio" and p.swa_full_tokens_ratio == 0.1  # V4 model override
    # bytes_per_swa = 43*585 + 21 c4 layers * (8/256) * (4*512*4 + 4*128*4 = 10,240) = 25,155 + 6,720 = 31,875
    assert p.bytes_per_swa_token == 31_875.0
    # bpf = 0.1*31,875 + 21*(585/4 + 132/4) + 20*864/128 = 3,187.5 + 3,764.25 + 135 = 7,086.75
    assert p.bytes_per_full_token == pytest.approx(7086.75)
    # c128 state: ceil128(17*128 + 128 + 1 = 2,305) = 2,432 rows * 4,096 B * 20 layers = 199,229,440
    assert p.c128_state_bytes == 199_229_440 == p.fixed_bytes
    # (10,737,418,240 - 199,229,440) / 7,086.75 = 1,487,028 -> 5,808 pages = 1,486,848
    assert p.full_tokens == 1_486_848
    # swa = int(148,684.8) = 148,684 -> 148,480
    assert p.swa_tokens == 148_480
    # c4 state rows addressed per SWA page: 148,480 / 256 * 8 = 4,640
    assert p.c4_state_pool_size == 4_640


def test_v4_flash_default_mrr_256(v4f):
    p = _pools(
        geometry=v4f,
        budget_bytes=10 * GiB,
        layout="v4",
        max_running_requests=None,
        context_len=1_048_576,
        chunked_prefill_size=8192,
    )
    # mrr 256 -> c128 state ceil128(257*128 + 129 = 33,025) = 33,152 rows * 4,096 * 20 = 2,715,811,840 (2.53 GiB)
    assert p.c128_state_bytes == 2_715_811_840
    # (10,737,418,240 - 2,715,811,840) / 7,086.75 = 1,131,937 -> 4,421 pages = 1,131,776 ; swa 113,177 -> 113,152
    assert p.full_tokens == 1_131_776
    assert p.swa_tokens == 113_152
    assert p.max_running_requests == 256


def test_v4_pro_ratio_mode(v4p):
    p = _pools(
        geometry=v4p,
        budget_bytes=10 * GiB,
        layout="v4",
        max_running_requests=16,
        context_len=1_048_576,
        chunked_prefill_size=8192,
    )
    # 61 layers: 30 c4, 31 c128. bps = 61*585 + 30*320 = 35,685 + 9,600 = 45,285
    assert p.bytes_per_swa_token == 45_285.0
    # bpf = 4,528.5 + 30*179.25 + 31*6.75 = 4,528.5 + 5,377.5 + 209.25 = 10,115.25
    assert p.bytes_per_full_token == pytest.approx(10_115.25)
    # c128 state 31 * 9,961,472 = 308,805,632 ; (10,737,418,240 - 308,805,632)/10,115.25 = 1,030,979 -> 1,030,912
    assert p.fixed_bytes == 308_805_632
    assert p.full_tokens == 1_030_912
    assert p.swa_tokens == 102_912  # int(103,091.2) = 103,091 -> 402 pages


def test_v4_flash_speculative(v4f):
    p = _pools(
        geometry=v4f,
        budget_bytes=10 * GiB,
        layout="v4",
        max_running_requests=16,
        context_len=1_048_576,
        chunked_prefill_size=8192,
        speculative_num_draft_tokens=4,
        speculative_num_steps=3,
    )
    # rings c4 16, c128 256. bps = 25,155 + 21*(16/256)*10,240 = 38,595 ; bpf = 3,859.5 + 3,899.25 = 7,758.75
    # x 44/43 -> bpf 7,939.186..., bps 39,492.558...
    assert p.bytes_per_full_token == pytest.approx(7758.75 * 44 / 43)
    assert p.bytes_per_swa_token == pytest.approx(38_595 * 44 / 43)
    # c128 state: ceil128(17*256 + 257 = 4,609) = 4,736 rows * 4,096 * 20 = 387,973,120
    assert p.fixed_bytes == 387_973_120
    # (10,737,418,240 - 387,973,120) / 7,939.186 = 1,303,590 -> 5,092 pages = 1,303,552 ; swa 130,355 -> 130,304
    assert p.full_tokens == 1_303_552
    assert p.swa_tokens == 130_304


def test_v4_flash_spec_too_many_drafts(v4f):
    # c4 ring 16 serves at most 16 - 8 + 2 = 10 draft tokens
    with pytest.raises(InputError) as e:
        _pools(
            geometry=v4f,
            budget_bytes=10 * GiB,
            layout="v4",
            max_running_requests=16,
            context_len=1_048_576,
            chunked_prefill_size=8192,
            speculative_num_draft_tokens=11,
        )
    assert e.value.field == "speculative_num_draft_tokens"


def test_dp_attention_divides_mrr_and_chunk():
    # attn_dp 8, mrr 128 -> 16 per rank; cps 16,384 -> 2,048 per rank: same cap as the default deployment
    p = _v41_default(8 * GiB, max_running_requests=128, attn_dp_size=8, chunked_prefill_size=16_384)
    assert p.swa_tokens == 41_216 and p.max_running_requests == 16


def test_tokens_half_cap_and_max_total_tokens():
    # --max-total-tokens 600 -> full = 512 (page floor); mrr = min(512, 512 // 2) = 256 (resolve_max_num_reqs)
    # radix off: cap = 768*512 + 2*2048 + 256 = 397,568 slots (1,553 pages) stays at its cap
    p = _v41_default(12 * GiB, max_running_requests=512, radix_cache=False, max_total_tokens=600)
    assert p.full_tokens == 512
    assert p.max_running_requests == 256 and p.budget_mrr == 512
    assert p.swa_tokens == 397_568


def test_cap_leaves_no_room():
    with pytest.raises(InputError) as e:
        _v41_default(int(0.5 * GiB), max_running_requests=256, chunked_prefill_size=8192)
    assert e.value.field == "max_running_requests"


def test_pp_stage_slice(v4f):
    # stage [0, 22): layers 2..21 -> c4 at even 2..20 (10 layers), c128 at odd 3..21 (10 layers)
    p = _pools(
        geometry=v4f,
        budget_bytes=10 * GiB,
        layout="v4",
        max_running_requests=16,
        context_len=1_048_576,
        chunked_prefill_size=8192,
        stage_layers=(0, 22),
    )
    # bps = 22*585 + 10*320 = 12,870 + 3,200 = 16,070 ; bpf = 1,607 + 10*179.25 + 10*6.75 = 3,467
    assert p.bytes_per_swa_token == 16_070.0
    assert p.bytes_per_full_token == pytest.approx(3467.0)


def test_v41_rejects_pp(v41):
    # the refusal is written once (pools.dsv4.eras.refuse_v41_pipeline), called by plan_sglang's model hook before
    # any pool is sized; tests/test_rules_once.py checks kvplan fit reaches it with and without speculation
    from kvplan.engines.sglang.pools.dsv4.eras import refuse_v41_pipeline

    assert v41.is_v41
    with pytest.raises(InputError) as e:
        refuse_v41_pipeline(is_v41=v41.is_v41, pp_size=2, release=None)
    assert e.value.field == "--pp-size"


def test_page_size_must_be_256(v41):
    with pytest.raises(InputError) as e:
        _pools(
            geometry=v41,
            budget_bytes=8 * GiB,
            layout="v4",
            page_size=128,
            max_running_requests=16,
            context_len=1_048_576,
            chunked_prefill_size=2048,
        )
    assert e.value.field == "page_size"


# --------------------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, n_layers, is_v41",
    [
        ("deepseek-ai--DeepSeek-V4-Flash", 43, False),
        ("deepseek-ai--DeepSeek-V4-Pro", 61, False),
        ("deepseek-ai--DeepSeek-V4.1-Flash", 40, True),
    ],
)
def test_presets_parse(name, n_layers, is_v41):
    from kvplan.inputs.presets import load_model_file

    preset = load_model_file(REPO / "configs" / "models" / f"{name}.toml")
    geom = dsv4_geometry_from_config(preset.config)
    assert geom.num_layers == n_layers and geom.is_v41 is is_v41 and geom.sliding_window == 128
