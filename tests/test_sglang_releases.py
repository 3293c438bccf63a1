"""SGLang rules by release (kvplan.engines.sglang.releases): the version parser, the windows, and hand-computed
numbers per window.  Every expected value is arithmetic on the rule read from the release's wheel (the function's
docstring cites the path); the comments show it.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.engines.sglang import releases as R
from kvplan.engines.sglang.mem_query import MemQuery
from kvplan.engines.sglang.page_query import PageQuery
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.planning.plan import fit
from kvplan.version import Version

H100 = 81_559  # nvidia-smi MiB of an H100 80GB
H200 = 143_771
B200 = 183_359
L4 = 23_034
RTX4090 = 24_564
RTX5080 = 16_303
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GIB = 2**30


def mfs(
    version: str,
    *,
    gpu: int | None,
    tp: int = 1,
    pp: int = 1,
    spec: str = "",
    mla: bool = False,
    attn_dp: int = 1,
    mrr: int | None = None,
) -> float:
    """The default mem_fraction_static of ``version`` with its own chunked-prefill / CUDA-graph / prefill-graph
    defaults (what plan_sglang passes)."""
    r = R.rules_for(version)
    cps = r.default_chunked_prefill_size(gpu_memory_mib=gpu, tp_size=tp)
    bs = r.default_cuda_graph_max_bs(gpu_memory_mib=gpu, tp_size=tp, max_running_requests=mrr)
    from kvplan.engines.sglang.mem_query import PrefillGraphQuery

    graph = r.default_prefill_cuda_graph(
        PrefillGraphQuery(vendor="nvidia", pp_size=pp, attn_dp_size=attn_dp, speculative_algorithm=spec)
    )
    return r.default_mem_fraction_static(
        MemQuery(
            gpu_memory_mib=gpu,
            tp_size=tp,
            pp_size=pp,
            chunked_prefill_size=cps,
            cuda_graph_max_bs=bs,
            is_mla=mla,
            attn_dp_size=attn_dp,
            prefill_cuda_graph=graph,
            speculative_algorithm=spec,
            max_running_requests=mrr,
        )
    )


# ---------------------------------------------------------------- versions


@pytest.mark.parametrize(
    "text,release,first",
    [
        ("0.4.7.post1", "0.4.7.post1", "0.4.7.post1"),
        ("v0.5.23", "0.5.23", "0.5.23"),
        ("0.5.0rc2", "0.5.0", "0.4.9.post6"),  # 0.5.0 only exists as rc builds; after 0.4.10
        ("0.5.2rc2", "0.5.2", "0.5.2"),  # an rc is sized as its release
        ("0.4.6", "0.4.6", "0.4.6"),  # a boundary since Gemma-3 turned text-only there (mm_disabled_models)
        ("0.4.6.post1", "0.4.6.post1", "0.4.6"),  # inside a window, not a boundary
        ("0.5.8.post1-rocm720-mi35x-20260218", "0.5.8.post1", "0.5.8"),  # docker tag suffix ignored
        ("main-2025-08-01", "0.4.10", "0.4.9.post6"),  # newest release built on or before the day
        ("main-20250801", "0.4.10", "0.4.9.post6"),
        ("0.5.3.dev20250801", "0.4.10", "0.4.9.post6"),
        ("0.5.4.dev20251020", "0.5.3", "0.5.3"),  # a dev build of 0.5.4 dated after 0.5.3
        ("0.5.23.post1", "0.5.23.post1", "0.5.23"),
    ],
)
def test_parse_and_window(text, release, first):
    rel, window = R.resolve(text)
    assert rel.release == release and window.first == first
    assert (rel.note is None) == (
        text in ("0.4.7.post1", "v0.5.23", "0.4.6", "0.4.6.post1", "0.5.8.post1-rocm720-mi35x-20260218")
    )


@pytest.mark.parametrize(
    "text",
    [
        "9.9",
        "0.2.0",
        "0.2.9.post1",
        "0.5.24",
        "1.0.0",
        "nightly",
        "main-2024-01-01",
        "main-2027-01-01",
        "0.5.24.dev20261105",
        "",
        "00.5.23",
    ],
)
def test_outside_the_range_is_an_input_error(text):
    with pytest.raises(InputError) as e:
        R.rules_for(text)
    assert e.value.field == "--engine-version" and "0.3.0 - 0.5.23" in e.value.one_line()


def test_default_is_the_newest():
    assert R.SUPPORTED == ("0.3.0", "0.5.23")
    assert R.resolve(None)[0].key == Version.of("0.5.23")
    assert R.rules_for(None) is R.DEFAULT_RULES is R.rules_for("0.5.23") is R.RELEASES[-1].rules
    assert R.window_for(None).label == "0.5.23"


def test_the_newest_release_is_a_row_like_every_other():
    """Releases as data (issue 21 item 3): the newest release is the last of the one release list, the last row of
    the window table states what it changed, and walking the table ends at exactly the default rule set."""
    import dataclasses

    from kvplan import supported
    from kvplan.engines.sglang.history.windows import _CHANGES, walk_changes

    assert R.DEFAULT_RELEASE == supported.SGLANG[1] == supported.SGLANG_RELEASES[-1]
    assert Version.of(R.DEFAULT_RELEASE).is_final  # the list ends at a release, not at an rc
    assert _CHANGES[-1][0] == R.DEFAULT_RELEASE and R.DEFAULT_RELEASE in R.RELEASE_DATES
    first, walked = walk_changes()[-1]
    assert first == R.DEFAULT_RULES.release == R.DEFAULT_RELEASE
    for f in dataclasses.fields(walked):
        a, b = getattr(walked, f.name), getattr(R.DEFAULT_RULES, f.name)
        if f.name == "pool_rules":  # a plain slots class: compared value by value
            assert {n: getattr(a, n) for n in a.__slots__} == {n: getattr(b, n) for n in b.__slots__}
        else:
            assert a == b, f.name
    # the walk's end differs from the row before it (the row is not empty) and the newest window is that release's
    assert walk_changes()[-2][1].default_page_size != R.DEFAULT_RULES.default_page_size
    assert R.RELEASES[-1].first == R.RELEASES[-1].last == R.DEFAULT_RELEASE


def test_windows_are_ordered_and_every_known_release_has_one():
    firsts = [Version.of(w.first) for w in R.RELEASES]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    for w in R.RELEASES:
        assert Version.of(w.first) <= Version.of(w.last) and w.rules.release == w.first
    for v in R.RELEASE_DATES:  # the 54 wheels downloaded: each maps to the window that starts at or below it
        w = R.window_for(v)
        assert Version.of(w.first) <= Version.of(v)
    # windows_between (the log side): a log of 0.4.4 - 0.5.8 format spans these windows
    # (0.5.7 starts a window since issue 12's page-size and SWA rules: trtllm_mha on SM100, MiMo-only SWA)
    span = [w.first for w in R.windows_between("0.5.3", "0.5.8")]
    assert span == ["0.5.3", "0.5.4", "0.5.5", "0.5.7", "0.5.8"]


def test_family_since():
    R.check_family("0.5.12", Family.DSV4)
    with pytest.raises(InputError) as e:
        R.check_family("0.5.11", Family.DSV4)
    assert e.value.field == "--engine-version" and "0.5.12" in e.value.one_line()
    with pytest.raises(InputError):
        R.check_family("0.5.2", Family.DSA)  # DeepSeek-V3.2 (NSA) pools arrive in 0.5.3
    with pytest.raises(InputError):
        R.check_family("0.4.8", Family.HYBRID_SWA)
    with pytest.raises(InputError) as e:  # 0.4.9's SWAKVPool is Llama-4 with --hybrid-kvcache-ratio only
        R.check_family("0.4.9", Family.HYBRID_SWA)
    assert "0.4.9.post6" in e.value.one_line()
    R.check_family("0.4.9.post6", Family.HYBRID_SWA)
    R.check_family("0.5.2", Family.HYBRID_MAMBA)  # MambaPool / HybridReqToTokenPool first in the 0.5.2 wheel
    R.check_family("0.5.3", Family.DSA)  # NSATokenToKVPool first in 0.5.3 (absent in 0.5.2)
    with pytest.raises(InputError):
        R.check_family("0.5.1.post3", Family.HYBRID_MAMBA)
    R.check_family("0.3.0", Family.MLA)
    R.check_family(None, Family.DSV4)


# ---------------------------------------------------------------- default mem_fraction_static by window


def test_mfs_tp_ladder():
    # 0.3.0 - 0.4.5.post2: no GPU input; TP1 0.88 on any GPU
    assert mfs("0.4.4", gpu=H100) == 0.88 and mfs("0.4.4", gpu=RTX5080) == 0.88 and mfs("0.3.0", gpu=None) == 0.88
    # TP8: 0.83 (0.3.0 - 0.3.5), 0.82 (0.3.6), 0.81 (0.4.0+); TP16 0.79; TP4 0.85; TP2 0.87
    assert mfs("0.3.0", gpu=H100, tp=8) == 0.83 and mfs("0.3.5", gpu=H100, tp=8) == 0.83
    assert mfs("0.3.6", gpu=H100, tp=8) == 0.82 and mfs("0.4.0", gpu=H100, tp=8) == 0.81
    assert mfs("0.4.0", gpu=H100, tp=16) == 0.79 and mfs("0.4.0", gpu=L4, tp=4) == 0.85
    assert mfs("0.4.5.post2", gpu=H200, tp=2) == 0.87


def test_mfs_large_gpu_branches():
    # 0.4.5.post3: above 81,920 MiB (143,771 - 13 x 1024) / 143,771 = 130,459 / 143,771, not rounded
    assert mfs("0.4.5.post3", gpu=H200, tp=8) == pytest.approx(130_459 / 143_771, abs=1e-12)
    assert mfs("0.4.6.post1", gpu=H100, tp=8) == 0.81  # <= 81,920: the ladder
    # 0.4.6.post2: 0.88 above 81,920, then min(0.88 + 49,152 x 0.12 / 143,771, (143,771 - 18,432) / 143,771)
    #            = min(0.92103, 0.87180) = 125,339 / 143,771
    assert mfs("0.4.6.post2", gpu=H200, tp=8) == pytest.approx(125_339 / 143_771, abs=1e-12)
    assert mfs("0.4.6.post5", gpu=H100, tp=4, pp=2) == 0.81  # ladder of tp x pp = 8
    assert mfs("0.4.7", gpu=B200, tp=8) == 0.79  # > 180,000 MiB on CUDA
    assert mfs("0.4.7", gpu=H100, spec="EAGLE") == pytest.approx(0.88 * 0.95)
    # 0.4.7 EAGLE on an H200: the reserve is 20 x 1024: (143,771 - 20,480) / 143,771
    assert mfs("0.4.7", gpu=H200, spec="EAGLE") == pytest.approx(123_291 / 143_771, abs=1e-12)


def test_mfs_reserved_buckets():
    # 0.4.7.post1 - 0.5.2: round((gpu - reserved) / gpu, 3)
    assert mfs("0.5.2", gpu=H100) == 0.874  # (9.5 + 1/2) x 1024 = 10,240: round(71,319 / 81,559, 3)
    assert mfs("0.4.10", gpu=RTX5080) == 0.818  # (2.8 + 0.1) x 1024 = 2,969.6: round(13,333.4 / 16,303, 3)
    assert mfs("0.4.7.post1", gpu=RTX4090) == 0.879  # round((24,564 - 2,969.6) / 24,564, 3) = 0.8791
    assert mfs("0.4.7.post1", gpu=H100, tp=8) == 0.831  # (9.5 + 4) x 1024 = 13,824: 67,735 / 81,559 = 0.8305
    assert mfs("0.4.7.post1", gpu=B200, tp=8) == 0.821  # 32,768: round(150,591 / 183,359, 3) = 0.8213
    assert mfs("0.5.1.post3", gpu=H100, spec="EAGLE") == 0.849  # 10,240 + 2,048 = 12,288: 0.8493
    assert mfs("0.5.2", gpu=H100, spec="STANDALONE") == 0.799  # 10,240 + 6,144 = 16,384: 0.7991
    assert mfs("0.5.1.post3", gpu=H100, spec="STANDALONE") == 0.849  # STANDALONE +6 GiB only from 0.5.2
    assert mfs("0.4.9", gpu=H100, tp=8, attn_dp=8) == 0.78  # 13,824 + 4,096 = 17,920: 63,639 / 81,559
    assert mfs("0.5.2", gpu=None) == 0.88


def test_mfs_memory_settings():
    # 0.5.3: reserved = 512 + 1.5 x max(cps, 2048) + 2 x bs + tp pp / 8 x 1024; floor 10,240 above 60 GiB
    # RTX 4090 TP1, cps 2048, bs 16: 512 + 3,072 + 32 + 128 = 3,744 -> round(20,820 / 24,564, 3) = 0.848
    assert mfs("0.5.3", gpu=RTX4090) == 0.848
    # 0.5.5: bs 24 -> 3,760 -> round(20,804 / 24,564, 3) = 0.847
    assert mfs("0.5.5", gpu=RTX4090) == 0.847
    # 0.5.20: cps 4096, bs 48, prefill graph on (50 buckets at 4096 -> 400):
    # 512 + 6,144 + 96 + 128 + 400 = 7,280 -> round(17,284 / 24,564, 3) = 0.704
    assert mfs("0.5.20", gpu=RTX4090) == 0.704 and mfs("0.5.23", gpu=RTX4090) == 0.704
    # H100 TP1: 0.5.3 - 0.5.9: 512 + 12,288 + 512 + 128 = 13,440 -> round(68,119 / 81,559, 3) = 0.835
    assert mfs("0.5.3", gpu=H100) == 0.835 and mfs("0.5.9", gpu=H100) == 0.835
    # 0.5.10+: + 8 x 58 buckets = 464 -> 13,904 -> round(67,655 / 81,559, 3) = 0.830 (0.5.23 gives the same)
    assert mfs("0.5.10", gpu=H100) == 0.83 and mfs("0.5.23", gpu=H100) == 0.83
    # EAGLE: 0.5.9 +2,048 -> 15,488 -> 0.810; 0.5.10 no prefill graph with speculative, +4,096 -> 17,536 -> 0.785;
    # 0.5.14 the speculative term is gone (prefill graph back on): 13,904 -> 0.830
    assert mfs("0.5.9", gpu=H100, spec="EAGLE") == 0.81
    assert mfs("0.5.10", gpu=H100, spec="EAGLE") == 0.785
    assert mfs("0.5.14", gpu=H100, spec="EAGLE") == 0.83
    assert mfs("0.5.9", gpu=H100, spec="NGRAM") == 0.835
    # MLA with the prefill graph: + 1,536 (0.5.10+); B200 TP8: 512 + 24,576 + 1,024 + 1,024 + 1,536 = 28,672
    # -> round(154,687 / 183,359, 3) = 0.844; before 0.5.10 without it: 27,136 -> 0.852
    assert mfs("0.5.10", gpu=B200, tp=8, mla=True) == 0.844 and mfs("0.5.9", gpu=B200, tp=8, mla=True) == 0.852
    # DP attention 8, H100 TP8 (bs 512): 512 + 12,288 + 1,024 + 1,024 + 512 x 8 x 4.5 = 33,280 -> 0.592
    assert mfs("0.5.3", gpu=H100, tp=8, attn_dp=8) == 0.592
    assert mfs("0.5.3", gpu=None) == 0.88 and mfs("0.5.20", gpu=None) == 0.95


# ---------------------------------------------------------------- chunked prefill and CUDA-graph defaults


@pytest.mark.parametrize(
    "version,gpu,cps",
    [
        ("0.3.5", L4, 8192),
        ("0.3.6", L4, 2048),
        ("0.4.4", L4, 2048),
        ("0.4.4", H100, 8192),
        ("0.4.6.post5", B200, 8192),
        ("0.4.7", B200, 16384),
        ("0.4.7.post1", RTX4090, 2048),
        ("0.4.7.post1", B200, 16384),
        ("0.5.2", None, 4096),
        ("0.4.4", None, 8192),
        ("0.5.3", 40_960, 4096),
        ("0.5.19", RTX4090, 2048),
        ("0.5.20", RTX4090, 4096),
        ("0.5.23", H100, 8192),
    ],
)
def test_default_chunked_prefill(version, gpu, cps):
    assert R.rules_for(version).default_chunked_prefill_size(gpu_memory_mib=gpu, tp_size=1) == cps


@pytest.mark.parametrize(
    "version,gpu,tp,mrr,bs",
    [
        ("0.3.0", L4, 1, None, None),
        ("0.3.5", L4, 1, None, 160),
        ("0.3.6", L4, 4, None, 4),
        ("0.4.0", L4, 4, None, 8),
        ("0.4.0.post2", L4, 4, None, 80),
        ("0.4.4", H100, 1, None, 160),
        ("0.4.5.post3", H100, 1, None, None),
        ("0.4.5.post3", L4, 1, None, 8),
        ("0.4.7.post1", RTX4090, 1, None, 8),
        ("0.4.7.post1", H100, 1, None, None),
        ("0.5.3", RTX4090, 1, None, 16),
        ("0.5.5", RTX4090, 1, None, 24),
        ("0.5.20", RTX4090, 1, None, 48),
        ("0.5.20", RTX4090, 4, None, 160),
        ("0.5.3", H100, 4, None, 512),
        ("0.5.21", H100, 1, 16, 256),
        ("0.5.22", H100, 1, 16, 16),
        ("0.5.23", B200, 8, None, 512),
    ],
)
def test_default_cuda_graph_max_bs(version, gpu, tp, mrr, bs):
    assert (
        R.rules_for(version).default_cuda_graph_max_bs(gpu_memory_mib=gpu, tp_size=tp, max_running_requests=mrr) == bs
    )


# ---------------------------------------------------------------- request cap


@pytest.mark.parametrize(
    "version,requested,expected",
    [
        # 444,520 tokens at 131,072 context: estimate int(444,520 / 131,072 x 512) = 1,736 -> clamp 2,048
        ("0.3.0", None, 2047),  # min(222,260, N - 1), N = 2,048
        ("0.3.1", None, 2048),
        ("0.4.4", None, 2049),  # ReqToTokenPool(size=2,048 + 1)
        ("0.4.7", None, 2048),
        ("0.5.10", None, 2048),
        ("0.5.23", None, 2048),
        ("0.3.0", 8192, 2047),  # R given, but 0.3.0 sizes the request pool by --max-num-reqs (unset)
        ("0.4.4", 8192, 8192),  # min(R, R + 1)
        ("0.5.9", 8192, 8192),
        ("0.5.10", 8192, 2048),  # min(R, estimate)
        ("0.5.14", 8192, 8192),  # min(R, tokens // 2)
    ],
)
def test_request_cap(version, requested, expected):
    r = R.rules_for(version)
    assert (
        r.resolve_max_running_requests(total_tokens=444_520, context_len=131_072, requested=requested, attn_dp_size=1)
        == expected
    )


def test_request_cap_small_pool_and_dp():
    # 3,000 tokens: tokens // 2 = 1,500 beats every estimate; R = 1,024 over DP 8 -> 128 (from 0.4.1.post7)
    for v in ("0.3.2", "0.4.7", "0.5.14", "0.5.23"):
        assert (
            R.rules_for(v).resolve_max_running_requests(
                total_tokens=3000, context_len=4096, requested=None, attn_dp_size=1
            )
            == 1500
        )
    assert (
        R.rules_for("0.4.1").resolve_max_running_requests(
            total_tokens=10**6, context_len=4096, requested=1024, attn_dp_size=8
        )
        == 1024
    )
    assert (
        R.rules_for("0.4.1.post7").resolve_max_running_requests(
            total_tokens=10**6, context_len=4096, requested=1024, attn_dp_size=8
        )
        == 128
    )
    # the reduction warning exists from 0.5.14
    kw = dict(total_tokens=100, context_len=4096, requested=80, attn_dp_size=1)
    assert R.rules_for("0.5.14").max_running_requests_reduction(**kw) == 80
    assert R.rules_for("0.5.9").max_running_requests_reduction(**kw) is None


# ---------------------------------------------------------------- plans: page floor, deductions, layouts


def _measured(version: str | None, **kw) -> object:
    # the SGLang docs run: 78.81 GB free before weights, 15.09 GB of weights, mfs 0.88 -> 444,520 tokens at page 1
    dep = Deployment(
        model=LLAMA,
        gpu="h100-sxm",
        free_memory=round(78.81 * GIB),
        weight_memory=round(15.09 * GIB),
        mem_fraction_static=0.88,
        engine_version=version,
        **kw,
    )
    return fit(dep)


def test_page_floor_by_window():
    assert _measured("0.4.4").kv_pool_tokens == 444_520
    # --page-size 64 from 0.4.4: 444,520 // 64 x 64 = 444,480; before 0.4.4 there are no pages: ignored, no floor
    assert _measured("0.4.4", page_size=64).kv_pool_tokens == 444_480
    old = _measured("0.4.3.post2", page_size=64)
    assert old.kv_pool_tokens == 444_520 and old.page_size == 1
    assert any("no paged KV cache" in w for w in old.warnings)


def test_measured_plan_and_window_assumption():
    res = _measured("0.4.7.post1")
    assert res.kv_pool_tokens == 444_520 and res.engine_version == "0.4.7.post1"
    assert any("sizing rules of releases 0.4.7.post1 - 0.4.8" in a for a in res.assumptions)
    assert not any("sizing rules of releases" in a for a in _measured(None).assumptions)
    rc = _measured("0.5.0rc2")
    assert any("release candidate of 0.5.0" in a for a in rc.assumptions)


def test_default_plan_unchanged():
    a, b = (
        fit(Deployment(model=LLAMA, gpu="h100-sxm")),
        fit(Deployment(model=LLAMA, gpu="h100-sxm", engine_version="0.5.23")),
    )
    assert (a.kv_pool_tokens, a.mem_fraction_static, a.max_running_requests) == (
        b.kv_pool_tokens,
        b.mem_fraction_static,
        b.max_running_requests,
    )
    assert a.mem_fraction_static == 0.83


def test_cold_defaults_of_old_logs():
    # qwq-32b-4xL4-tp4 (log of 2025-03-08, 0.4.3.x): SGLang chose mfs 0.85, chunked prefill 2048 (4 x L4, TP4)
    res = fit(Deployment(model="Qwen/QwQ-32B", gpu="l4", tp=4, engine_version="main-2025-03-08"))
    assert (res.mem_fraction_static, res.chunked_prefill_size) == (0.85, 2048)
    # llama31-8b-docs-quickstart-2501 (2025-01-23): 0.88, 8192 on an 80 GB card
    res = fit(Deployment(model=LLAMA, gpu="h100-sxm", engine_version="main-2025-01-23"))
    assert (res.mem_fraction_static, res.chunked_prefill_size, res.max_running_requests) == (0.88, 8192, 2049)


def test_kimi_k25_vlm_default_matches_its_log():
    # kimi-k2.5-mi355x-tp8 (0.5.8.post1) printed mem_fraction_static=0.8260405859375: MI355X 294,896 MiB, TP8:
    # cps 16384, bs 512: 512 + 24,576 + 1,024 + 1,024 = 27,136 -> round(267,760 / 294,896, 3) = 0.908;
    # ViT 27 x 1152: ratio 1.423828 -> x 0.95 x (1 - 0.0423828) = x 0.909736328125 -> 0.8260405859375
    res = fit(Deployment(model="moonshotai/Kimi-K2.5", gpu="mi355x", tp=8, engine_version="0.5.8.post1"))
    assert res.mem_fraction_static == 0.8260405859375


def test_multimodal_runner_factor_and_reserve():
    v = R.rules_for("0.4.4")
    assert v.runner_mem_fraction_factor(mem_fraction_static=0.9, is_multimodal=True) == pytest.approx(0.855)
    assert R.rules_for("0.4.8").runner_mem_fraction_factor(
        mem_fraction_static=0.9, is_multimodal=True
    ) == pytest.approx(0.81)
    assert R.rules_for("0.4.9").runner_mem_fraction_factor(mem_fraction_static=0.9, is_multimodal=True) == 0.9
    # the multimodal budget deduction (100 MiB VLM cache) exists from 0.5.18
    assert R.rules_for("0.5.17").multimodal_reserve_bytes(is_multimodal=True) == 0
    assert R.rules_for("0.5.18").multimodal_reserve_bytes(is_multimodal=True) == 100 * 2**20


def test_dsa_before_the_indexer_fix():
    from kvplan.engines.sglang.pools.dsa import dsa_budget_bytes_before_0_5_4

    assert (
        dsa_budget_bytes_before_0_5_4(kv_lora_rank=512, qk_rope_head_dim=64, num_layers=61, element_bytes=1) == 35_136
    )  # 576 x 61
    old = fit(
        Deployment(model="deepseek-ai/DeepSeek-V3.2", gpu="b200", tp=8, mem_fraction_static=0.9, engine_version="0.5.3")
    )
    new = fit(
        Deployment(model="deepseek-ai/DeepSeek-V3.2", gpu="b200", tp=8, mem_fraction_static=0.9, engine_version="0.5.4")
    )
    assert old.kv_bytes_per_token == 35_136 and new.kv_bytes_per_token == 61 * (576 + 132)
    assert old.mem_fraction_static == 0.8  # 0.5.3 forces 0.8 for DeepSeek NSA, over the user's value
    assert any("ignored" in w for w in old.warnings) and any("DP attention" in w for w in old.warnings)


def test_family_a_release_did_not_have_is_exit_2():
    with pytest.raises(InputError) as e:
        fit(Deployment(model="deepseek-ai/DeepSeek-V4-Flash", gpu="b200", tp=8, engine_version="0.5.11"))
    assert e.value.field == "--engine-version" and "0.5.12" in e.value.one_line()


@pytest.mark.parametrize("version", ["9.9", "0.2.0"])
def test_cli_out_of_range_exit_2(version):
    res = CliRunner().invoke(
        app, ["fit", "-m", LLAMA, "-g", "h100-sxm", "--engine-version", version, "--format", "json"]
    )
    assert res.exit_code == 2
    assert "--engine-version" in res.output and "0.3.0 - 0.5.23" in res.output


def test_cli_old_release_json():
    res = CliRunner().invoke(
        app, ["fit", "-m", LLAMA, "-g", "h100-sxm", "--engine-version", "0.4.4", "--format", "json"]
    )
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert out["mem_fraction_static"] == 0.88 and out["engine_version"] == "0.4.4"


# ---------------------------------------------------------------- page size by window, 0.5.3 - 0.5.23


def page(
    version: str, family: str = "gqa", *, backend: str | None = None, sm: int | None = 10, vendor: str = "nvidia", **kw
) -> int:
    return R.rules_for(version).default_page_size(
        PageQuery(family=family, attention_backend=backend, sm_major=sm, vendor=vendor, **kw)
    )


def test_page_default_gqa_on_sm100_by_window():
    # GQA on SM100: flashinfer (no page rule -> 1) in 0.5.3 - 0.5.6; trtllm_mha (unset -> 64) from 0.5.7
    # (server_args.py default backend "1.2 Use trtllm_mha for SM100/SM103", first in the 0.5.7 wheel)
    assert [page(v) for v in ("0.5.3", "0.5.6", "0.5.7", "0.5.16", "0.5.22", "0.5.23")] == [1, 1, 64, 64, 64, 64]
    # Hopper: fa3 / flashinfer force nothing -> 1 in every window
    assert {page(v, sm=9) for v in ("0.5.3", "0.5.7", "0.5.15", "0.5.22")} == {1}
    # K and V widths differ: trtllm_mha (64) to 0.5.16, fa4 (128) from 0.5.17
    assert (page("0.5.16", has_asymmetric_kv=True), page("0.5.17", has_asymmetric_kv=True)) == (64, 128)


def test_page_default_mla_and_backends_by_window():
    # DeepSeek-family MLA on SM100: flashinfer (1) in 0.5.3; trtllm_mla (64) from 0.5.4 (model override)
    assert (page("0.5.3", "mla", deepseek_family=True), page("0.5.4", "mla", deepseek_family=True)) == (1, 64)
    assert page("0.5.4", "mla") == 1  # other MLA models: flashinfer
    # cutlass_mla forces 128 up to 0.5.19; 0.5.20 has no cutlass_mla page rule (-> 1)
    assert (page("0.5.19", "mla", backend="cutlass_mla"), page("0.5.20", "mla", backend="cutlass_mla")) == (128, 1)
    assert page("0.5.9", "mla", backend="flashmla", sm=9) == 64
    # trtllm_mha keeps a requested 128 from 0.5.17 ([16, 32, 64, 128]); before, 128 -> 64 ([16, 32, 64])
    assert (
        page("0.5.16", backend="trtllm_mha", requested=128),
        page("0.5.17", backend="trtllm_mha", requested=128),
    ) == (64, 128)
    assert page("0.5.16", backend="trtllm_mha", requested=32) == 32
    # tokenspeed_mla: 64 unless 32 / 64, 0.5.12 - 0.5.22 only
    assert (
        page("0.5.11", "mla", backend="tokenspeed_mla"),
        page("0.5.12", "mla", backend="tokenspeed_mla"),
        page("0.5.22", "mla", backend="tokenspeed_mla"),
    ) == (1, 64, 64)
    # fa4 as --attention-backend: refused in 0.5.4 - 0.5.7 (prefill only), no page rule 0.5.8 - 0.5.14, 128 from 0.5.15
    with pytest.raises(InputError) as e:
        page("0.5.7", backend="fa4")
    assert e.value.field == "--attention-backend"
    assert (page("0.5.14", backend="fa4"), page("0.5.15", backend="fa4")) == (1, 128)


def test_page_default_platforms_and_dsa_by_window():
    # MUSA: an unset page is 64 from 0.5.11 (_handle_page_size `if not is_musa()`), 1 before
    assert (page("0.5.10", sm=None, vendor="musa"), page("0.5.11", sm=None, vendor="musa")) == (1, 64)
    # DeepSeek DSA: 64 on ROCm in 0.5.3 - 0.5.7, 1 from 0.5.8 ("Setting page size to 1 for DeepSeek DSA on ROCm"),
    # 64 again from 0.5.12 where aiter's preshuffle path is available (the default kvplan assumes)
    assert [page(v, "dsa", sm=9, vendor="amd") for v in ("0.5.7", "0.5.8", "0.5.11", "0.5.12")] == [64, 1, 1, 64]
    assert page("0.5.12", "dsa", sm=9, vendor="amd", hip_dsa_preshuffle=False) == 1
    # XPU: 64 to 0.5.20, 128 from 0.5.21; CUDA: 64 in every window
    assert (page("0.5.20", "dsa", sm=None, vendor="intel"), page("0.5.21", "dsa", sm=None, vendor="intel")) == (64, 128)
    assert {page(v, "dsa") for v in ("0.5.3", "0.5.8", "0.5.15", "0.5.22", "0.5.23")} == {64}


def test_page_floor_of_a_b200_plan_by_window():
    # Llama-3.1-8B on a B200, measured (P 78.81, A 63.72 GiB, mfs 0.88): budget 58,264,237,847 B // 131,072 B =
    # 444,520 tokens; 0.5.6 runs page 1 -> 444,520; 0.5.7 trtllm_mha page 64 -> 444,520 // 64 x 64 = 444,480
    def tokens(version):
        res = fit(
            Deployment(
                model=LLAMA,
                gpu="b200",
                free_memory=round(78.81 * GIB),
                weight_memory=round(15.09 * GIB),
                mem_fraction_static=0.88,
                engine_version=version,
            )
        )
        return res.kv_pool_tokens, res.page_size

    assert tokens("0.5.6") == (444_520, 1) and tokens("0.5.7") == (444_480, 64)


# ---------------------------------------------------------------- hybrid SWA / Mamba rule values by window


def test_hybrid_swa_membership_by_window():
    def swa(version, arch, **kw):
        return R.rules_for(version).pool_rules.hybrid_swa_pool(architectures=[arch], has_sliding_window=True, **kw)

    gptoss = "GptOssForCausalLM"
    # GPT-OSS: switched off in 0.5.0rc2 - 0.5.7 (model override), 0.5.7 lists MiMo-V2-Flash only; 0.5.8 off with
    # trtllm_mha (the SM100 default) or speculative decoding; 0.5.9 with trtllm_mha only; on from 0.5.10.
    # The wheels: 0.5.8 server_args.py ServerArgs._handle_model_specific_adjustments, GptOssForCausalLM branch:
    #     if prefill_attn_backend == "trtllm_mha" or decode_attn_backend == "trtllm_mha":
    #         self.disable_hybrid_swa_memory = True
    #     if self.speculative_algorithm is not None:
    #         self.disable_hybrid_swa_memory = True
    # 0.5.9: the same branch keeps only the trtllm_mha test (then quant_method = get_quantization_config(hf_config));
    # 0.5.10: neither
    assert [swa(v, gptoss) for v in ("0.5.3", "0.5.7", "0.5.8", "0.5.10", "0.5.23")] == [False, False, True, True, True]
    assert (
        swa("0.5.8", gptoss, trtllm_mha=True),
        swa("0.5.8", gptoss, speculative=True),
        swa("0.5.9", gptoss, trtllm_mha=True),
        swa("0.5.9", gptoss, speculative=True),
        swa("0.5.10", gptoss, trtllm_mha=True),
    ) == (False, False, False, True, True)
    # 0.4.9.post6 - 0.5.6: any model with a sliding window (Llama-4 only through --hybrid-kvcache-ratio)
    assert swa("0.5.3", "MistralForCausalLM") and not swa("0.5.3", "Llama4ForConditionalGeneration")
    assert not swa("0.5.8", "MistralForCausalLM") and swa("0.5.8", "Llama4ForConditionalGeneration")
    # Gemma-4 from 0.5.11, Gemma-2/3 never (switched off), a config's is_hybrid_swa from 0.5.13
    assert (swa("0.5.10", "Gemma4ForCausalLM"), swa("0.5.11", "Gemma4ForCausalLM")) == (False, True)
    assert not swa("0.5.23", "Gemma3ForCausalLM")
    assert (swa("0.5.12", "X", config_opt_in=True), swa("0.5.13", "X", config_opt_in=True)) == (False, True)
    from kvplan.engines.sglang.history import swa_archs_at, swa_pool_since

    assert swa_archs_at("0.5.23") == R.SWA_ARCHS_0523 and len(swa_archs_at("0.5.9")) == 6
    assert (swa_pool_since("Gemma4ForCausalLM"), swa_pool_since(gptoss)) == ("0.5.11", "0.5.8")


def test_swa_and_mamba_sizing_fields_by_window():
    def r(version):
        return R.rules_for(version).pool_rules

    # SWA split: by layer count (uniform cells) 0.4.9.post6 - 0.5.8, by bytes from 0.5.9; ratio 0.8 throughout
    assert (r("0.5.8").swa_split, r("0.5.9").swa_split, r(None).swa_split) == ("layers", "bytes", "bytes")
    assert {r(v).swa_full_tokens_ratio for v in ("0.4.9.post6", "0.5.8", "0.5.23")} == {0.8}
    # gpt-oss-120b (18 full + 18 SWA layers, equal cells) in "layers" mode: T = 1,000,000 tokens of all 36 layers
    # -> full = int(36,000,000 / (0.8 x 18 + 18)) = int(1,111,111.1) = 1,111,111, swa = int(1,111,111 x 0.8) =
    # 888,888; the "bytes" rule gives budget / (18 c + 0.8 x 18 c) = the same 1,111,111 when cells are equal
    full = int(1_000_000 * 36 / (0.8 * 18 + 18))
    assert (full, int(full * 0.8)) == (1_111_111, 888_888)
    # Mamba: 0.5.2 - 0.5.3 fixed slots (512 by default, radix cache off), no --mamba-full-memory-ratio;
    # 0.5.4 - 0.5.8 the 0.9 ratio with the radix cache on (512 with it off); 0.5.9+ no 512 fallback
    assert (r("0.5.3").mamba_cache_sizing, r("0.5.3").mamba_full_memory_ratio, r("0.5.3").mamba_fallback_slots) == (
        "fixed",
        None,
        512,
    )
    assert (r("0.5.4").mamba_cache_sizing, r("0.5.4").mamba_full_memory_ratio, r("0.5.8").mamba_fallback_slots) == (
        "ratio_0504",
        0.9,
        512,
    )
    # "ratio_0504" is 0.5.4 - 0.5.6 only (model_executor/model_runner.py handle_max_mamba_cache, the same function
    # in the three wheels).  0.5.7 moved it to model_executor/model_runner_kv_cache_mixin.py and changed it:
    #     if server_args.disable_radix_cache or server_args.max_mamba_cache_size is not None:   # the flag honoured
    #         ... max_running_requests, else 512 ... // dp
    #     else:  (spec: total_rest_memory -= per_req * max_running_requests * D / 2^30)
    #         max_mamba_cache_size = int(rest * r / (1 + r) * 2^30 // per_req)             # no // (1 + D)
    # 0.5.8 takes the speculative states (max_running_requests // dp) before the branches; 0.5.9 - 0.5.12:
    #     if max_mamba_cache_size is not None: ... elif disable_radix_cache and max_running_requests is not None:
    #     ... else: ratio                                                                  # no 512 fallback
    # 0.5.13 - 0.5.16 solve jointly: int(mamba_budget_bytes // (per_req * (1 + D / ratio))); 0.5.17
    # (mem_cache/kv_cache_configurator.py _handle_max_mamba_cache) adds the padding slot: 0.5.23's "ratio"
    assert [
        r(v).mamba_cache_sizing for v in ("0.5.6", "0.5.7", "0.5.8", "0.5.9", "0.5.12", "0.5.13", "0.5.16", "0.5.17")
    ] == ["ratio_0504", "ratio_0507", "ratio_0508", "ratio_0508", "ratio_0508", "ratio_0513", "ratio_0513", "ratio"]
    assert (r("0.5.9").mamba_cache_sizing, r("0.5.9").mamba_fallback_slots, r(None).mamba_full_memory_ratio) == (
        "ratio_0508",
        None,
        0.9,
    )
    assert r(None).mamba_cache_sizing == "ratio"


def test_gqa_cell_prices_v_at_head_dim_before_0_5_7():
    # profile_max_num_token up to 0.5.6: heads x head_dim x L x 2 x e; from 0.5.7 heads x (head_dim + v_head_dim) x
    # L x e.  8 KV heads, head_dim 192, v_head_dim 128, 32 layers, bf16: 8 x 384 x 32 x 2 = 196,608 B (0.5.6) and
    # 8 x 320 x 32 x 2 = 163,840 B (0.5.7); equal widths (Llama 128 / 128) give 131,072 B in both
    from types import SimpleNamespace

    from kvplan.engines.sglang.pools import gqa

    def cell(version, head_dim, v_head_dim):
        model = SimpleNamespace(num_kv_heads=8, head_dim=head_dim, v_head_dim=v_head_dim)
        ctx = SimpleNamespace(model=model, rules=R.rules_for(version), attn_tp=1, kv_dtype="bf16", dcp=1, sm_major=9)
        return gqa._cell(ctx, 32)

    assert (cell("0.5.6", 192, 128), cell("0.5.7", 192, 128), cell(None, 192, 128)) == (196_608, 163_840, 163_840)
    assert cell("0.4.4", 128, 128) == cell("0.5.23", 128, 128) == 131_072


# ------------------------------------------------------------------------------------------ --kv-cache-dtype choices


@pytest.mark.parametrize(
    ("release", "choices"),
    [
        # server_args.py v0.3.0 - v0.4.1: choices=["auto", "fp8_e5m2"]
        ("0.3.0", ("auto", "fp8_e5m2")),
        ("0.4.1", ("auto", "fp8_e5m2")),
        # v0.4.1.post7 - v0.5.3: choices=["auto", "fp8_e5m2", "fp8_e4m3"]
        ("0.4.1.post7", ("auto", "fp8_e5m2", "fp8_e4m3")),
        ("0.5.3", ("auto", "fp8_e5m2", "fp8_e4m3")),
        # v0.5.4: + "bf16", "bfloat16"; v0.5.5 - v0.5.15: + "fp4_e2m1"
        ("0.5.4", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16")),
        ("0.5.11", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
        ("0.5.13", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
        ("0.5.15", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
        # v0.5.16 - v0.5.20: choices=["auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4",
        # "fp4_mx_block16", "fp4_e2m1"]; v0.5.21+ (arg_groups/fields/model.py): the same without "fp4_e2m1"
        (
            "0.5.16",
            ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1", "mxfp8", "nvfp4", "fp4_mx_block16"),
        ),
        (
            "0.5.20",
            ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1", "mxfp8", "nvfp4", "fp4_mx_block16"),
        ),
        ("0.5.21", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "mxfp8", "nvfp4", "fp4_mx_block16")),
        ("0.5.23", ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "mxfp8", "nvfp4", "fp4_mx_block16")),
    ],
)
def test_kv_dtype_choices_by_release(release, choices):
    from kvplan.engines.sglang.kvdtype import kv_dtype_choices

    assert kv_dtype_choices(release) == choices


@pytest.mark.parametrize(
    ("release", "dtype"),
    [
        ("0.5.15", "mxfp8"),
        ("0.5.13", "nvfp4"),
        ("0.5.11", "fp4_mx_block16"),
        ("0.5.3", "bf16"),
        ("0.4.1", "fp8_e4m3"),
        ("0.5.21", "fp4_e2m1"),
    ],
)
def test_kv_dtype_the_release_does_not_know_is_input_error(release, dtype):
    from kvplan.engines.sglang.kvdtype import check_release_kv_dtype, kv_dtype_choices

    with pytest.raises(InputError) as e:
        check_release_kv_dtype(requested=dtype, release=release)
    assert e.value.field == "--kv-cache-dtype" and ", ".join(kv_dtype_choices(release)) in e.value.hint


def test_kv_dtype_the_release_knows_passes_and_fp4_e2m1_is_refused_as_unmodelled():
    from kvplan.engines.sglang.kvdtype import check_release_kv_dtype

    for release, dtype in (
        ("0.5.16", "mxfp8"),
        ("0.5.16", "nvfp4"),
        ("0.5.4", "bfloat16"),
        ("0.3.0", "AUTO"),
        ("0.5.23", "fp4_mx_block16"),
    ):
        check_release_kv_dtype(requested=dtype, release=release)
    check_release_kv_dtype(requested="anything", release=None)  # the newest: canonical_kv_dtype checks it
    with pytest.raises(InputError, match="not modelled") as e:
        check_release_kv_dtype(requested="fp4_e2m1", release="0.5.12")
    assert e.value.field == "--kv-cache-dtype" and "fp4_e2m1" not in e.value.hint


def test_fit_refuses_a_kv_dtype_the_release_does_not_list():
    """``kvplan fit`` checks --kv-cache-dtype against the release's choices (server_args): mxfp8 arrived in 0.5.16,
    bf16 in 0.5.4; the newest release (None) takes kvplan's own spellings."""
    with pytest.raises(InputError) as e:
        fit(Deployment(model=LLAMA, gpu="b200", engine_version="0.5.15", kv_cache_dtype="mxfp8"))
    assert e.value.field == "--kv-cache-dtype" and "0.5.15" in str(e.value)
    with pytest.raises(InputError):
        fit(Deployment(model=LLAMA, gpu="h100-sxm", engine_version="0.5.3", kv_cache_dtype="bf16"))
    assert fit(Deployment(model=LLAMA, gpu="b200", engine_version="0.5.16", kv_cache_dtype="mxfp8")).kv_pool_tokens > 0
    assert (
        fit(Deployment(model=LLAMA, gpu="h100-sxm", engine_version="0.5.4", kv_cache_dtype="bf16")).kv_pool_tokens > 0
    )
