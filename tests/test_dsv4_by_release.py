"""DeepSeek-V4 pools by SGLang release, 0.5.12 - 0.5.23 (issue 12), against numbers derived by hand.

Every expected value is computed in the comments from the wheels' ``DSV4PoolConfigurator`` (model_executor/
pool_configurator.py of each release), not from kvplan's output.  Shared inputs:

* V4-Flash: 43 layers (ratios 0, 0, then 4 / 128 alternating, ending with 4: L4 = 21, L128 = 20); the config lists
  44 entries (the MTP layer's trailing 0).  Window W = 128, index dim I = 128, latent D = 512.
* Before 0.5.21 a row is priced raw: kv = 448 + 2*64 + 8 = 584 B; c4 indexer idx = 128 + 4 = 132 B; the c4 state
  2*2*512*4 = 8,192 B and its indexer state 2*2*128*4 = 2,048 B per ring row, the c128 state 2*512*4 = 4,096 B;
  the state rings are priced per SWA slot over W (8/128 for c4, 128/128 for c128), r = 0.1 (V4 override).
* Budget 10 GiB = 10,737,418,240 B, TP8 (attention DP 1), max_running_requests unset -> 256, page 256.
"""

from __future__ import annotations

import dataclasses

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang.pools.dsv4 import DSV4_ERAS, dsv4_era, dsv4_pool_sizes
from kvplan.engines.sglang.pools.dsv4.stage import DSV4Flags
from kvplan.engines.sglang.pools.dsv4_legacy import legacy_bytes_per_full_token
from kvplan.errors import InputError
from kvplan.geometry.dsv4 import dsv4_geometry_from_config
from kvplan.planning.plan import fit


def _pools(**kw):
    """:func:`dsv4_pool_sizes` with the server flags of ``kw`` gathered into its :class:`DSV4Flags` record."""
    names = {f.name for f in dataclasses.fields(DSV4Flags)}
    flags = DSV4Flags(**{k: v for k, v in kw.items() if k in names})
    return dsv4_pool_sizes(flags=flags, **{k: v for k, v in kw.items() if k not in names})


GiB = 2**30
BUDGET = 10 * GiB
V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"

V4_FLASH_CFG = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "model_type": "deepseek_v4",
    "num_hidden_layers": 43,
    "head_dim": 512,
    "qk_rope_head_dim": 64,
    "index_head_dim": 128,
    "sliding_window": 128,
    "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0],
    "num_nextn_predict_layers": 1,
}
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
}


@pytest.fixture(scope="module")
def v4f():
    return dsv4_geometry_from_config(V4_FLASH_CFG)


@pytest.fixture(scope="module")
def v41():
    return dsv4_geometry_from_config(V41_FLASH_CFG)


def _pool(geom, release, budget=BUDGET, **kw):
    args = dict(
        geometry=geom,
        budget_bytes=budget,
        layout="v4",
        max_running_requests=None,
        context_len=1 << 20,
        chunked_prefill_size=8192,
        release=release,
    )
    args.update(kw)
    return _pools(**args)


# ---------------------------------------------------------------- the era table


def test_eras_cover_every_release_once():
    assert [(e.first, e.last) for e in DSV4_ERAS] == [
        ("0.5.12", "0.5.12"),
        ("0.5.13", "0.5.14"),
        ("0.5.15", "0.5.15"),
        ("0.5.16", "0.5.17"),
        ("0.5.18", "0.5.19"),
        ("0.5.20", "0.5.20"),
        ("0.5.21", "0.5.22"),
        ("0.5.23", "0.5.23"),
    ]
    assert dsv4_era("0.5.14").label == "0.5.13 - 0.5.14"
    assert dsv4_era("0.5.22").first == "0.5.21"
    assert dsv4_era(None) is DSV4_ERAS[-1]
    with pytest.raises(InputError, match=r"first release with it is 0\.5\.12"):
        dsv4_era("0.5.11")


# ---------------------------------------------------------------- V4-Flash, one budget, every era


def test_0_5_13_one_coefficient(v4f):
    # bpft = r*kv*L + kv/4*L4 + kv/128*L128 + idx/4*L4 + r*(8/128)*8192*L4 + r*(128/128)*4096*L128 + r*(8/128)*2048*L4
    #      = 0.1*584*43 + 146*21 + 4.5625*20 + 33*21 + 0.1*0.0625*8192*21 + 0.1*4096*20 + 0.1*0.0625*2048*21
    #      = 2,511.2 + 3,066 + 91.25 + 693 + 1,075.2 + 8,192 + 268.8 = 15,897.45 B (no fixed bytes)
    # full = page_floor(int(10,737,418,240 / 15,897.45)) = page_floor(675,417) = 2,638 * 256 = 675,328
    # swa  = page_floor(int(67,532.8)) = 263 * 256 = 67,328
    p = _pool(v4f, "0.5.13")
    assert p.bytes_per_full_token == pytest.approx(15_897.45)
    assert (p.full_tokens, p.swa_tokens, p.fixed_bytes) == (675_328, 67_328, 0)
    assert _pool(v4f, "0.5.14").full_tokens == 675_328


def test_0_5_12_counts_the_whole_config_list(v4f):
    # 0.5.12 does not slice the stage: L = len(compress_ratios) = 44 (the MTP entry counts), L4 / L128 unchanged
    # bpft = 15,897.45 + 0.1 * 584 * 1 = 15,955.85; full = page_floor(int(672,945.3)) = 2,628 * 256 = 672,768
    p = _pool(v4f, "0.5.12")
    assert p.bytes_per_full_token == pytest.approx(15_955.85)
    assert (p.full_tokens, p.swa_tokens) == (672_768, 67_072)  # swa: int(67,276.8) -> 262 * 256


def test_0_5_17_c128_state_as_fixed_bytes(v4f):
    # the c128 term leaves the coefficient: 15,897.45 - 8,192 = 7,705.45 B
    # fixed = ceil128(257 slots * 128 + 128 + 1) = ceil128(33,025) = 33,152 rows * 4,096 B * 20 = 2,715,811,840 B
    # full  = page_floor(int((10,737,418,240 - 2,715,811,840) / 7,705.45)) = page_floor(1,041,030) = 1,040,896
    # swa   = page_floor(int(104,089.6)) = 406 * 256 = 103,936
    for release in ("0.5.15", "0.5.17", "0.5.19", "0.5.20"):
        p = _pool(v4f, release)
        assert p.bytes_per_full_token == pytest.approx(7_705.45)
        assert (p.fixed_bytes, p.full_tokens, p.swa_tokens) == (2_715_811_840, 1_040_896, 103_936)


def test_0_5_22_and_0_5_23_agree_on_v4_flash(v4f):
    # 0.5.21+: paged rows (585 SWA/c4, 864 c128): 0.1 * (43*585 + 8/256*10,240*21) + 21*(585/4 + 33) + 20*864/128
    # = 3,187.5 + 3,764.25 + 135 = 7,086.75 B; V4-Flash has no ratio-1/2 layers, so 0.5.23's padding adds nothing:
    # full = page_floor(int(8,021,606,400 / 7,086.75)) = page_floor(1,131,915) = 4,421 * 256 = 1,131,776 in both releases
    a, b = _pool(v4f, "0.5.22"), _pool(v4f, "0.5.23")
    assert a.bytes_per_full_token == b.bytes_per_full_token == 7_086.75
    assert a.full_tokens == b.full_tokens == 1_131_776


def test_0_5_20_refuses_an_swa_pool_below_its_floor(v4f):
    # a tiny budget: full 2,560 -> swa page_floor(256) = 256 <= window 128 + page 256: 0.5.20's
    # validate_swa_pool_size refuses; 0.5.19 has no such check and sizes it.
    budget = int(7_705.45 * 2_600) + 2_715_811_840
    assert _pool(v4f, "0.5.19", budget=budget).swa_tokens == 256
    with pytest.raises(InputError, match="cannot hold even one request"):
        _pool(v4f, "0.5.20", budget=budget)


def test_eagle_under_0_5_13(v4f):
    # EAGLE (4 drafts): rings 16 / 256 -> state terms double: 1,075.2 -> 2,150.4, 8,192 -> 16,384, 268.8 -> 537.6
    # bpft = (2,511.2 + 3,066 + 91.25 + 693 + 2,150.4 + 16,384 + 537.6) * 44/43 = 25,433.45 * 44/43 = 26,024.9256 B
    # full = page_floor(int(10,737,418,240 / 26,024.9256)) = page_floor(412,582) = 412,416
    p = _pool(v4f, "0.5.13", speculative_num_draft_tokens=4)
    assert p.bytes_per_full_token == pytest.approx(25_433.45 * 44 / 43)
    assert p.full_tokens == 412_416


def test_ring_check_from_0_5_18(v4f):
    # 11 drafts: the c4 ring (16) serves 16 - 8 + 2 = 10; 0.5.18's _assert_ring_serves_draft_tokens refuses, 0.5.17
    # has no check
    assert _pool(v4f, "0.5.17", speculative_num_draft_tokens=11).full_tokens > 0
    with pytest.raises(InputError, match="c4 ring"):
        _pool(v4f, "0.5.18", speculative_num_draft_tokens=11)


def test_pp_stage_sliced_from_0_5_13(v4f):
    # stage [0, 22): ratios 0, 0, then 4/128 x 10 -> L 22, L4 10, L128 10
    # 0.5.13: 0.1*584*22 + 146*10 + 4.5625*10 + 330 + 0.1*0.0625*8192*10 + 0.1*4096*10 + 0.1*0.0625*2048*10
    #       = 1,284.8 + 1,460 + 45.625 + 330 + 512 + 4,096 + 128 = 7,856.425 B
    # 0.5.12 prices the whole config list in every stage: 15,955.85 B
    assert legacy_bytes_per_full_token(
        geometry=v4f, era=dsv4_era("0.5.13"), swa_ratio=0.1, stage_layers=(0, 22)
    ) == pytest.approx(7_856.425)
    assert legacy_bytes_per_full_token(
        geometry=v4f, era=dsv4_era("0.5.12"), swa_ratio=0.1, stage_layers=(0, 22)
    ) == pytest.approx(15_955.85)


def test_legacy_allocation(v4f):
    # 0.5.13 at 10 GiB: full 675,328, swa 67,328.  SWA pool: 43 layers x (67,328 + 128 + 1) // 128 = 527 pages of
    # ceil(128 * 584 / 576) * 576 = 74,880 B -> 1,696,855,680 B; c4 state rows ceil4(67,328 // 128 * 8 + 9) = 4,220
    # x 8,192 B x 21 = 725,975,040 B; c128 state rows ceil128(67,328 // 128 * 128 + 129) = ceil128(67,457) = 67,584
    # x 4,096 x 20 = 5,536,481,280 B (0.5.15+: 257 slots -> 2,715,811,840 B)
    comps = dict(_pool(v4f, "0.5.13").components)
    assert comps["swa_kv (43 layers)"] == 1_696_855_680
    assert comps["c4_state fp32 (21 layers)"] == 725_975_040
    assert comps["c128_state fp32 (20 layers)"] == 5_536_481_280
    assert dict(_pool(v4f, "0.5.17").components)["c128_state fp32 (20 layers)"] == 2_715_811_840


# ---------------------------------------------------------------- V4.1-Flash


def test_v41_first_in_0_5_21(v41):
    for release in ("0.5.12", "0.5.17", "0.5.20"):
        with pytest.raises(InputError, match=r"first release with it is 0\.5\.21"):
            _pool(v41, release)


def test_v41_0_5_22_without_padding(v41):
    # 8 GiB, 16 requests, chunk 2048 (the module docstring's 0.5.23 example: 4,670,208 full tokens).
    # 0.5.21 - 0.5.22 price ratio-1/2 rows at kv_bytes = 584 (not the layout's 585) and add no padding:
    # bpf = 3 * (584 + 68) / 2 + (584 + 68) = 978 + 652 = 1,630.0 B; fixed as in 0.5.23 (cap mode, 585 B SWA rows):
    # 41,216 * 23,400 + 466,944 = 964,921,344 B; full = page_floor(int(7,625,013,248 / 1,630)) = page_floor(4,677,922)
    # = 4,677,888
    kw = dict(max_running_requests=16, chunked_prefill_size=2048)
    p = _pool(v41, "0.5.22", budget=8 * GiB, **kw)
    assert p.bytes_per_full_token == 1_630.0
    assert (p.fixed_bytes, p.full_tokens, p.swa_tokens) == (964_921_344, 4_677_888, 41_216)
    assert _pool(v41, "0.5.21", budget=8 * GiB, **kw).full_tokens == 4_677_888
    assert _pool(v41, "0.5.23", budget=8 * GiB, **kw).full_tokens == 4_670_208


# ---------------------------------------------------------------- end to end: fit on the default GPU, TP8


@pytest.mark.parametrize(
    ("release", "bpft", "fixed"),
    [
        ("0.5.13", 15_897.45, 0),
        ("0.5.17", 7_705.45, 2_715_811_840),
        ("0.5.20", 7_705.45, 2_715_811_840),
        ("0.5.22", 7_086.75, 2_715_811_840),
        ("0.5.23", 7_086.75, 2_715_811_840),
    ],
)
def test_fit_v4_flash_tp8_by_release(release, bpft, fixed):
    # the release's formula on fit's own budget: page_floor(int((budget - fixed) / bpft))
    res = fit(Deployment(model=V4, tp=8, engine_version=release))
    assert res.kv_bytes_per_token == pytest.approx(bpft)
    assert res.kv_pool_tokens == int((res.kv_budget_bytes - fixed) / res.kv_bytes_per_token) // 256 * 256
    assert not any("priced by SGLang 0.5.23" in a for a in res.assumptions)


def test_fit_v41_needs_0_5_21():
    with pytest.raises(InputError, match=r"0\.5\.21") as e:
        fit(Deployment(model=V41, tp=8, engine_version="0.5.20"))
    assert e.value.field == "--engine-version"
    assert fit(Deployment(model=V41, tp=8, engine_version="0.5.21")).kv_bytes_per_token == 1_630.0


# ---------------------------------------------------------------- kvplan sweep: the vector path per era


@pytest.mark.parametrize(
    "kw",
    [
        dict(engine_version="0.5.13", pp=2),
        dict(engine_version="0.5.12", pp=2, speculative_algorithm="EAGLE"),
        dict(engine_version="0.5.18", speculative_algorithm="EAGLE"),
    ],
)
def test_sweep_legacy_rows_are_fit(kw):
    from kvplan.planning import sweep as S
    from tests.test_sweep_families import assert_rows_are_fit

    t = S.sweep(
        Deployment(model=V4, gpu="h200-sxm", tp=8, **kw),
        {"mem_fraction_static": [0.6, 0.8, 0.9], "max_running_requests": [16, 256], "context_length": [65536, 1 << 20]},
    )
    assert t.groups and all(g.method == "vector" for g in t.groups), [(g.method, g.error) for g in t.groups]
    assert_rows_are_fit(t)
