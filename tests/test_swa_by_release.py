"""SGLang's hybrid sliding-window pool by release (issues 12, 13): numbers derived by hand from the wheels.

Read in the wheels (``pip download --no-deps sglang==X``, python/sglang/srt):

* managers/schedule_batch.py ``ScheduleBatch.maybe_evict_swa`` / ``_evict_swa``: how often a running request's
  out-of-window SWA tokens are freed -- every ``window`` decode steps (0.5.8 - 0.5.10), every
  ``page_floor(max(page, int(window x SGLANG_SWA_EVICTION_INTERVAL_MULTIPLIER=1.0)))`` steps (0.5.11 - 0.5.13), every
  ``SGLANG_SWA_EVICTION_INTERVAL`` = 128 (0.5.14+); the eviction point page-floored; with the overlap scheduler the
  prefill evicts only from the second extend batch on (two chunks in flight);
* mem_cache/common.py (0.5.7): ``SWAChunkCache.evict_swa`` on every decode step (radix cache off only), unfloored;
  before 0.5.7 nothing frees a running request's SWA tokens;
* model_executor/pool_configurator.py ``compute_swa_request_cap`` (0.5.21+): the same worst case per request;
* mem_cache/kv_cache_configurator.py ``_build_hybrid_swa_kv_pool`` and mem_cache/memory_pool.py
  ``MHATokenToKVPool._create_buffers`` (0.5.23): FP4 KV on the hybrid pool is a plain ``float4_e2m1fn_x2`` buffer,
  one byte per value, no scales, no dequant workspace; ``HybridSWAPoolConfigurator`` budgets ``element_size`` = 1;
* model_executor/model_runner.py (0.5.15) / model_runner_components/spec_aux_hidden_state.py (0.5.16 - 0.5.20):
  the draft's layers enter the cell only with ``--speculative-draft-model-path`` before 0.5.20;
* server_args.py ``_handle_model_specific_adjustments`` (0.5.0rc2 - 0.5.19), arg_groups/model_overrides/gpt_oss.py
  (0.5.20+): GPT-OSS defaults to trtllm_mha on SM100 (``is_sm100_supported``: capability major 10) from 0.5.0rc2,
  trtllm_mha forces page 64 (``_handle_attention_backend_compatibility``), the hybrid pool is off with trtllm_mha or
  speculation in 0.5.8, with trtllm_mha only in 0.5.9, on from 0.5.10.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang.pools import capturing_contexts, swa
from kvplan.engines.sglang.pools.swa_cap import WHOLE_REQUEST, swa_eviction_interval, swa_request_terms
from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType
from kvplan.inputs.resolve import resolve_model
from kvplan.planning import workload as W
from kvplan.planning.plan import fit

GIB = 2**30
BUDGET = 12 * GIB  # 12,884,901,888 B
GPT_OSS = "openai/gpt-oss-120b"  # 36 layers = 18 full + 18 SWA, 8 KV heads x 64, window 128 - 1 = 127
MIMO = "XiaomiMiMo/MiMo-V2-Flash"  # window 128 (raw), full 4 KV heads x (192 + 128), SWA 8 x (192 + 128)


def _ctx(budget: int | None = None, **kw):
    """The pool planner's context of ``fit(Deployment(**kw))``, the budget replaced when given."""
    with capturing_contexts() as got:
        fit(Deployment(**kw))
    ctx = got[-1]
    return ctx if budget is None else dataclasses.replace(ctx, budget=budget)


# ------------------------------------------------------------------ 1. the SWA slots a running request holds


def test_eviction_interval_by_release():
    kw = dict(window=127, page_size=64, radix_cache=True)
    assert swa_eviction_interval(release="0.5.6", **kw) is None  # nothing freed while running
    assert swa_eviction_interval(release="0.4.9.post6", **kw) is None
    assert swa_eviction_interval(release="0.5.7", **kw) is None  # radix cache: no per-step eviction
    assert swa_eviction_interval(release="0.5.7", **{**kw, "radix_cache": False}) == 1
    assert swa_eviction_interval(release="0.5.9", **kw) == 127  # decode_batch_idx % window == 1
    # max(64, int(127 x 1.0)) = 127 -> page floor 64
    assert swa_eviction_interval(release="0.5.12", **kw) == 64
    assert swa_eviction_interval(release="0.5.12", **{**kw, "page_size": 1}) == 127
    assert swa_eviction_interval(release="0.5.14", **kw) == 128  # SGLANG_SWA_EVICTION_INTERVAL
    assert swa_eviction_interval(release="0.5.23", **kw) == 128


@pytest.mark.parametrize(
    "release,page,expected",
    [
        # per request = window + interval x 1 + page (floored eviction point) + decode alloc (a page)
        ("0.5.23", 1, (2 * 8192 + 1, 127 + 128 + 1 + 1)),  # (16,385, 257): compute_swa_request_cap
        ("0.5.9", 1, (2 * 8192 + 1, 127 + 127 + 1 + 1)),  # (16,385, 256): every window steps
        ("0.5.10", 64, (2 * 8192 + 64, 127 + 127 + 64 + 64)),  # (16,448, 382)
        ("0.5.12", 64, (2 * 8192 + 64, 127 + 64 + 64 + 64)),  # (16,448, 319): interval floored to the page
        ("0.5.23", 64, (2 * 8192 + 64, 127 + 128 + 64 + 64)),  # (16,448, 383)
        ("0.5.6", 1, (0, WHOLE_REQUEST)),  # a request holds all its tokens
    ],
)
def test_request_terms_by_release(release, page, expected):
    got = swa_request_terms(
        release=release,
        page_size=page,
        window=127,
        chunked_prefill_size=8192,
        overlap_schedule=True,
        num_draft_tokens=0,
        num_steps=1,
        radix_cache=True,
    )
    assert got == expected


def test_request_terms_speculative_and_0_5_7():
    kw = dict(page_size=1, window=127, chunked_prefill_size=8192, num_draft_tokens=4, num_steps=3, radix_cache=True)
    # spec-v2 (overlap): decode alloc 2 x max(3, 4) = 8; trailing window + interval x 4 drafts + page
    # 0.5.9: 127 + 127 x 4 + 1 + 8 = 644; 0.5.23: 127 + 128 x 4 + 1 + 8 = 648
    assert swa_request_terms(release="0.5.9", overlap_schedule=True, **kw) == (16_385, 644)
    assert swa_request_terms(release="0.5.23", overlap_schedule=True, **kw) == (16_385, 648)
    # spec-v1 (no overlap): one chunk in flight: 8,192 + 1; alloc max(ceil_1(3), ceil_1(4)) = 4 -> 127 + 512 + 1 + 4
    assert swa_request_terms(release="0.5.23", overlap_schedule=False, **kw) == (8_193, 644)
    # 0.5.7, radix off: every step, not floored, one chunk: window 127 + decode alloc 1
    assert swa_request_terms(
        release="0.5.7", overlap_schedule=True, **{**kw, "num_draft_tokens": 0, "radix_cache": False}
    ) == (8_192, 128)


@pytest.mark.parametrize(
    "release,radix,terms",
    [
        ("0.5.7", True, (0, -1)),  # the radix cache frees nothing while a request runs
        ("0.5.7", False, (8_192, 128 + 1)),  # SWAChunkCache: window 128 + 1 decode token, one chunk
        ("0.5.8", True, (16_385, 128 + 128 + 1 + 1)),  # every window (128) steps; two chunks (overlap) + a page
    ],
)
def test_workload_swa_bound_is_the_releases(release, radix, terms):
    # MiMo-V2-Flash TP4 on H200 (page 1, chunk 8,192), ratio 0.1, requests of 60,000 + 0 tokens
    dep = Deployment(
        model=MIMO,
        gpu="h200-sxm",
        tp=4,
        engine_version=release,
        input_len=60_000,
        output_len=0,
        swa_full_tokens_ratio=0.1,
        disable_radix_cache=not radix,
        mem_fraction_static=0.85,
    )
    res = fit(dep)
    model = resolve_model(res.model)
    assert W.sglang_swa_terms(res=res, dep=dep.with_defaults(), model=model) == terms
    swa_tokens = next(p.tokens for p in res.pools if p.name == W.SGLANG_SWA_POOL_NAME)
    reserve, per = terms
    want = swa_tokens // 60_000 if per < 0 else (swa_tokens - reserve) // min(per, 60_000)
    got = W.workload(res, dep.with_defaults(), model)
    assert dict(got.bounds)[W.SWA_POOL] == want
    # 0.5.7 radix on: the cell counts the full-attention layers only (model_runner_kv_cache_mixin.py v0.5.7
    # profile_max_num_token: "elif self.model_config.full_attention_layer_ids: num_layers = len(...)"), so
    # 640 x 9 + MiMo's SWA term 1,280 x 39 = 55,680 B (not 80,640): budget 47,733,566,275 B (since SGLang's weight
    # figure carries the caching-allocator reserve and its free-at-start the per-GPU CUDA context, 8 Dec 2026) //
    # 55,680 = T = 857,283, full = int(857,283 x 48 / (0.1 x 39 + 9)) = int(3,189,890.2) = 3,189,890, SWA
    # int(318,989.0) = 318,989 tokens // 60,000 = 5 requests (the SWA pool binds: the full pool holds 53)
    if per < 0:
        assert res.kv_budget_bytes // 55_680 == 857_283
        assert (swa_tokens, want, got.bound, res.workload_concurrency_per_rank) == (318_989, 5, W.SWA_POOL, 5)


def test_whole_request_bound_over_arrays():
    np = pytest.importorskip("numpy")
    got = W.sglang_swa_bound(
        swa_tokens=np.array([155_344, 9_215]), tokens_per_request=np.array([9_216, 9_216]), terms=(0, WHOLE_REQUEST)
    )
    assert got.tolist() == [155_344 // 9_216, 0]  # 16, 0
    assert W.sglang_swa_bound(swa_tokens=155_344, tokens_per_request=9_216, terms=(16_385, 257)) == 540


# ------------------------------------------------------------------ 2. FP4 KV on the hybrid pool (0.5.23)


@pytest.mark.parametrize("dtype", ["nvfp4", "fp4_mx_block16"])
def test_fp4_on_the_hybrid_pool_is_one_byte_per_value(dtype):
    ctx = _ctx(BUDGET, model=GPT_OSS, gpu="b200", kv_cache_dtype=dtype)
    assert ctx.page_size == 64
    plan = swa.plan(ctx)
    # per layer 8 KV heads x (64 + 64) x 1 B = 1,024 (no scales, no workspace); x 18 layers = 18,432 per pool
    full, win = plan.pools
    assert (full.bytes_per_token, win.bytes_per_token) == (18_432, 18_432)
    # cell 18,432 + 0.8 x 18,432 = 33,177.6; 12,884,901,888 / 33,177.6 = 388,361.48 -> page 64: 6,068 pages
    assert plan.cell == pytest.approx(33_177.6)
    assert full.tokens == 388_352 == plan.tokens
    # int(388,352 x 0.8) = 310,681 -> 4,854 pages = 310,656
    assert win.tokens == 310_656
    assert (full.bytes, win.bytes) == (388_352 * 18_432, 310_656 * 18_432)  # 7,158,104,064 + 5,726,011,392
    assert any("no FP4 scales" in n for n in plan.notes)


def test_fp4_hybrid_prices_as_fp8_and_half_of_bf16():
    fp4 = fit(Deployment(model=GPT_OSS, gpu="b200", kv_cache_dtype="nvfp4"))
    fp8 = fit(Deployment(model=GPT_OSS, gpu="b200", kv_cache_dtype="fp8_e4m3"))
    bf16 = fit(Deployment(model=GPT_OSS, gpu="b200"))
    assert fp4.kv_bytes_per_token == fp8.kv_bytes_per_token == pytest.approx(33_177.6)
    assert bf16.kv_bytes_per_token == pytest.approx(2 * 33_177.6)  # 66,355.2
    assert fp4.kv_pool_tokens == fp8.kv_pool_tokens


def test_fp4_one_pool_release_is_refused_not_mispriced():
    # 0.5.9 on a B200: trtllm_mha turns GPT-OSS's hybrid pool off; the single pool's FP4 cell is not modelled
    ctx = dataclasses.replace(_ctx(model=GPT_OSS, gpu="b200", engine_version="0.5.9"), kv_dtype=DType.NVFP4)
    with pytest.raises(InputError) as err:
        swa.plan(ctx)
    assert err.value.field == "--kv-cache-dtype"


# ------------------------------------------------------------------ 3. draft layers in the cell by release


@pytest.fixture(scope="module")
def mimo_with_mtp(tmp_path_factory):
    """MiMo-V2-Flash with one path-less MTP layer (``num_nextn_predict_layers`` 1)."""
    m = resolve_model(MIMO)
    cfg = dict(m.raw_config or m.config)
    cfg["num_nextn_predict_layers"] = 1
    d = tmp_path_factory.mktemp("mimo-mtp")
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


@pytest.mark.parametrize(
    "release,draft,tokens,swa_tokens",
    [
        # TP4: full 1 KV head x 320 x 2 = 640 B x 9 full layers = 5,760; SWA 2 x 320 x 2 = 1,280 x 39 = 49,920
        # 0.5.14 (no draft in the cell), 0.5.16 / 0.5.19 (a path-less MTP head is not counted): cell 5,760 + 0.8 x
        # 49,920 = 45,696 -> 12,884,901,888 // 45,696 = 281,970; SWA int(225,576.0)
        ("0.5.14", (0, 0), 281_970, 225_576),
        ("0.5.16", (0, 0), 281_970, 225_576),
        ("0.5.19", (0, 0), 281_970, 225_576),
        # 0.5.20: the target's SWA layer count -> the draft layer is an SWA layer: 1,280 x 40 = 51,200;
        # cell 5,760 + 40,960 = 46,720 -> 275,789.8 -> 275,789; SWA int(220,631.2) = 220,631
        ("0.5.20", (0, 1), 275_789, 220_631),
    ],
)
def test_pathless_mtp_draft_by_release(mimo_with_mtp, release, draft, tokens, swa_tokens):
    ctx = _ctx(BUDGET, model=mimo_with_mtp, gpu="h200-sxm", tp=4, speculative_algorithm="EAGLE", engine_version=release)
    layers = swa.sglang_swa_geometry(ctx.config, release=release)
    assert swa.era_draft_layers(ctx, layers, swa.byte_era(release)) == draft
    plan = swa.plan(ctx)
    assert (plan.tokens, plan.pools[1].tokens) == (tokens, swa_tokens)


def test_draft_from_a_path_still_counts_as_full_before_0_5_20():
    # the preset has no num_nextn_predict_layers: kvplan reads EAGLE as a separate (path) draft of one layer
    ctx = _ctx(BUDGET, model=MIMO, gpu="h200-sxm", tp=4, speculative_algorithm="EAGLE", engine_version="0.5.16")
    assert swa.era_draft_layers(ctx, swa.sglang_swa_geometry(ctx.config, release="0.5.16"), swa.byte_era("0.5.16")) == (
        1,
        0,
    )
    # full cell 640 x (9 + 1) = 6,400; cell 6,400 + 39,936 = 46,336 -> 278,075
    assert swa.plan(ctx).tokens == 278_075


# ------------------------------------------------------------------ 4. GPT-OSS on SM100 by release


@pytest.mark.parametrize(
    "release,gpu,kw,hybrid,page",
    [
        ("0.5.3", "h100-sxm", {}, False, 1),  # override: always off (0.5.0rc2 - 0.5.7)
        ("0.5.7", "b200", {}, False, 64),  # trtllm_mha -> page 64
        ("0.5.8", "h100-sxm", {}, True, 1),  # fa3, page 1
        ("0.5.8", "h100-sxm", dict(speculative_algorithm="EAGLE"), False, 1),  # 0.5.8: off with speculation
        ("0.5.8", "b200", {}, False, 64),  # off with trtllm_mha (SM100 default)
        ("0.5.8", "b200", dict(attention_backend="triton"), True, 1),  # a given backend wins
        ("0.5.9", "b200", {}, False, 64),
        ("0.5.9", "h100-sxm", dict(speculative_algorithm="EAGLE"), True, 1),  # 0.5.9: no speculative switch-off
        ("0.5.10", "b200", {}, True, 64),  # on from 0.5.10
        ("0.5.23", "b200", {}, True, 64),
    ],
)
def test_gpt_oss_layout_and_page_by_release(release, gpu, kw, hybrid, page):
    res = fit(Deployment(model=GPT_OSS, gpu=gpu, engine_version=release, **kw))
    assert res.layout.startswith("hybrid sliding window") is hybrid
    assert res.page_size == page
    # one pool: 8 x (64 + 64) x 36 x 2 = 73,728 B a token (plus a draft layer under speculation); hybrid: 66,355.2
    if not hybrid and not kw:
        assert res.kv_bytes_per_token == 73_728


@pytest.mark.parametrize("release", ["0.5.0rc2", "0.5.3", "0.5.6"])
def test_gpt_oss_b200_page_before_0_5_7(release):
    # server_args.py v0.5.0rc2 model_specific_adjustments (GptOssForCausalLM):
    #     if self.attention_backend is None:
    #         if is_sm100_supported(): self.attention_backend = "trtllm_mha"
    # then __post_init__'s trtllm_mha check: "if self.page_size not in [16, 32, 64]: ... self.page_size = 64"
    # (v0.5.3 - v0.5.6: _handle_model_specific_adjustments runs before _handle_attention_backend_compatibility)
    assert fit(Deployment(model=GPT_OSS, gpu="b200", engine_version=release)).page_size == 64
    assert fit(Deployment(model=GPT_OSS, gpu="b200", engine_version=release, page_size=32)).page_size == 32
    # not on an H100 (fa3), nor with a backend given
    assert fit(Deployment(model=GPT_OSS, gpu="h100-sxm", engine_version=release)).page_size == 1
    assert fit(Deployment(model=GPT_OSS, gpu="b200", engine_version=release, attention_backend="triton")).page_size == 1


# ------------------------------------------------------------------ 5. the request-cap mode by release (issue 12)
# model_executor/pool_configurator.py ``SWAChunkCapPoolConfigurator.calculate_pool_sizes`` (0.5.14 - 0.5.21),
# ``SWARequestCapPoolConfigurator.calculate_pool_sizes`` (0.5.22+), read in the wheels:
#   0.5.14          full_cell_size = F * Lf;                       fixed_swa_bytes = swa_tokens * S * Ls
#   0.5.15          full_cell_size = F * (Lf + Df)
#   0.5.16 - 0.5.18 full_cell_size = F * (Lf + Df) + S * Dsf       (Dsf: Inkling's banded MTP depths only)
#   0.5.19 +        fixed_swa_bytes = swa_tokens * S * (Ls + Ds)
# and ``num_reqs = max_running_requests // mr.dp_size`` (0.5.14 - 0.5.15; ModelRunner.dp_size = ``dp_size if
# enable_dp_attention else 1``) / ``// kvc.ps.attn_dp_size`` (0.5.16+; the same expression,
# layers/dp_attention.py ``compute_dp_attention_world_info``).


@pytest.mark.parametrize(
    "release,full,swa_",
    [
        ("0.5.14", False, False),
        ("0.5.15", True, False),
        ("0.5.16", True, False),
        ("0.5.18", True, False),
        ("0.5.19", True, True),
        ("0.5.22", True, True),
        ("0.5.23", True, True),
    ],
)
def test_cap_draft_terms_by_release(release, full, swa_):
    era = swa.byte_era(release)
    assert (era.cap_draft_full, era.cap_draft_swa) == (full, swa_)


def test_cap_cells_worked_example():
    # F 640, S 1,280, Lf 9, Ls 39, Df 1, Ds 1: full_cell 640 x 10 = 6,400, swa_cell 1,280 x 40 = 51,200
    kw = dict(full_cell=6_400, swa_cell=51_200, F=640, S=1_280, draft_full_layers=1, draft_swa_layers=1)
    assert swa.cap_cells(cap_draft_full=False, cap_draft_swa=False, **kw) == (5_760, 49_920)  # 0.5.14
    assert swa.cap_cells(cap_draft_full=True, cap_draft_swa=False, **kw) == (6_400, 49_920)  # 0.5.15 - 0.5.18
    assert swa.cap_cells(cap_draft_full=True, cap_draft_swa=True, **kw) == (6_400, 51_200)  # 0.5.19 +


@pytest.mark.parametrize(
    "draft_full,draft_swa,full_tokens,full_cell,swa_cell",
    [
        # gpt-oss-120b bf16 TP1: F = S = 8 x (64 + 64) x 2 = 2,048 B, 18 full + 18 SWA layers, one draft layer of each.
        # cap = (127 + 128 + 1 + 1) x 16 + 2 x 8,192 + 1 = 20,497 SWA slots (page 1)
        # 0.5.14: full = (12,884,901,888 - 20,497 x 36,864) // 36,864 = 349,525 - 20,497 = 329,028
        (False, False, 329_028, 36_864, 36_864),
        # 0.5.15 - 0.5.18: full = (12,884,901,888 - 755,601,408) // 38,912 = 12,129,300,480 // 38,912 = 311,711
        (True, False, 311_711, 38_912, 36_864),
        # 0.5.19 +: full = 12,884,901,888 // 38,912 - 20,497 = 331,129 - 20,497 = 310,632
        (True, True, 310_632, 38_912, 38_912),
    ],
)
def test_cap_pools_draft_terms(draft_full, draft_swa, full_tokens, full_cell, swa_cell):
    layers = swa.sglang_swa_geometry(
        resolve_model(GPT_OSS).raw_config or resolve_model(GPT_OSS).config, release="0.5.23"
    )
    r = swa.swa_pool_sizes(
        layers=layers,
        budget_bytes=BUDGET,
        knobs=swa.SWAKnobs(
            kv_dtype=DType.BF16,
            attn_tp_size=1,
            page_size=1,
            swa_full_tokens_ratio=None,
            radix_cache=False,
            max_running_requests=16,
            attn_dp_size=1,
            chunked_prefill_size=8_192,
            overlap_schedule=True,
            draft_full_layers=1,
            draft_swa_layers=1,
            cap_draft_full=draft_full,
            cap_draft_swa=draft_swa,
        ),
    )
    assert r.mode == "request-cap"
    assert (r.swa_tokens, r.full_tokens) == (20_497, full_tokens)
    assert (r.full_bytes_per_token, r.swa_bytes_per_token) == (full_cell, swa_cell)


@pytest.mark.parametrize(
    "release,tokens,full_cell",
    [
        # MiMo-V2-Flash TP4 with a separate (path) EAGLE draft of one layer, radix off, 16 requests, page 1, chunk 8,192,
        # overlap on, no draft-token count (``or 1``): cap = (128 + 128 + 1 + 1) x 16 + 2 x 8,192 + 1 = 20,513;
        # fixed SWA = 20,513 x 1,280 x 39 = 1,024,008,960 B; free 11,860,892,928 B
        ("0.5.14", 2_059_182, 5_760),  # // (640 x 9): no draft in the cap's full cell
        ("0.5.15", 1_853_264, 6_400),  # // (640 x 10): F·Df from 0.5.15
        ("0.5.19", 1_853_264, 6_400),  # the draft is a full layer (Ds = 0) before 0.5.20: S·Ds adds nothing
    ],
)
def test_cap_mode_draft_layer_by_release(release, tokens, full_cell):
    ctx = _ctx(
        BUDGET,
        model=MIMO,
        gpu="h200-sxm",
        tp=4,
        speculative_algorithm="EAGLE",
        engine_version=release,
        disable_radix_cache=True,
        max_running_requests=16,
    )
    assert (ctx.page_size, ctx.chunked_prefill_size, ctx.flags.overlap_schedule) == (1, 8_192, True)
    plan = swa.plan(ctx)
    assert (plan.tokens, plan.pools[1].tokens, plan.pools[0].bytes_per_token) == (tokens, 20_513, full_cell)


@pytest.mark.parametrize("release", ["0.5.14", "0.5.15", "0.5.16"])
@pytest.mark.parametrize(
    "kw,chunk,swa_tokens,tokens",
    [
        # DP attention (tp 4, dp 4): ModelRunner.dp_size = attn_dp_size = 4 -> 16 // 4 = 4 requests, chunk 8,192 / 4:
        # cap = 257 x 4 + 2 x 2,048 + 1 = 5,125; full = 349,525 - 5,125 = 344,400
        (dict(tp=4, dp=4, enable_dp_attention=True), 2_048, 5_125, 344_400),
        # two replicas without DP attention: ModelRunner.dp_size = 1 (not --dp-size 2) -> 16 requests: 20,497
        (dict(tp=1, dp=2), 8_192, 20_497, 329_028),
    ],
)
def test_cap_divisor_is_the_attention_dp_size(release, kw, chunk, swa_tokens, tokens):
    ctx = _ctx(
        BUDGET,
        model=GPT_OSS,
        gpu="h100-sxm",
        engine_version=release,
        disable_radix_cache=True,
        max_running_requests=16,
        **kw,
    )
    assert ctx.chunked_prefill_size == chunk
    plan = swa.plan(ctx)
    assert (plan.pools[1].tokens, plan.tokens) == (swa_tokens, tokens)
