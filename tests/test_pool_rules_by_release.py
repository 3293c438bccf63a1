"""The hybrid sliding-window and Mamba pools by SGLang release (issue 12), numbers computed by hand.

The planners read ``RuleSet.pool_rules`` (kvplan/engines/sglang/releases.py ``PoolRules``, built by release in
kvplan/engines/sglang/history.py).  Every case fixes the KV budget (the planner's :class:`PoolContext` of a real
``fit``, with ``budget`` replaced) so the arithmetic below is the pool rule alone.  Read in the wheels
(``pip download --no-deps sglang==X``, python/sglang/srt):

* 0.5.3 server_args.py: GPT-OSS sets ``disable_hybrid_swa_memory``; model_runner.py ``profile_max_num_token``: one
  cell ``heads x head_dim x L x 2 x e`` over all layers;
* 0.5.8 model_executor/model_runner_kv_cache_mixin.py ``set_num_tokens_hybrid_swa``: the split by layer count;
  server_args.py: GPT-OSS turns the pool off with trtllm_mha (the SM100 default);
* Mamba: model_runner.py (0.5.3 fixed slots, 0.5.5 ``handle_max_mamba_cache``), model_runner_kv_cache_mixin.py
  (0.5.9), mem_cache/kv_cache_configurator.py (0.5.23, the padding slot).
"""

from __future__ import annotations

import dataclasses

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang import history
from kvplan.engines.sglang.pools import capturing_contexts, mamba, swa
from kvplan.engines.sglang.releases import rules_for
from kvplan.errors import InputError
from kvplan.planning.plan import fit

GIB = 2**30
BUDGET = 12 * GIB  # 12,884,901,888 B


def _ctx(budget: int | None = None, **kw):
    """The pool planner's context of ``fit(Deployment(**kw))``, the budget replaced when given."""
    with capturing_contexts() as got:
        fit(Deployment(**kw))
    ctx = got[-1]
    return ctx if budget is None else dataclasses.replace(ctx, budget=budget)


# ------------------------------------------------------------------------------------------ GPT-OSS by release


def test_gpt_oss_under_0_5_3_has_one_pool_over_all_layers():
    # 8 KV heads x (64 + 64) x 36 layers x 2 B = 73,728 B a token; 12,884,901,888 // 73,728 = 174,762
    # (174,762 x 73,728 = 12,884,852,736, 49,152 B left)
    p = swa.plan(_ctx(BUDGET, model="openai/gpt-oss-120b", gpu="h100-sxm", engine_version="0.5.3"))
    assert (p.cell, p.tokens) == (73_728, 174_762)
    assert [(x.name, x.tokens, x.bytes) for x in p.pools] == [("KV (K + V)", 174_762, 12_884_852_736)]
    assert p.layout.startswith("one KV pool over all 36 layers")
    assert "disable_hybrid_swa_memory" in p.notes[0] and "from 0.5.8" in p.notes[0]
    assert history.swa_pool_since("GptOssForCausalLM") == "0.5.8"


def test_gpt_oss_under_0_5_8_splits_by_layer_count():
    # T = 12,884,901,888 // 73,728 = 174,762 tokens of all 36 layers; full = int(174,762 x 36 / (0.8 x 18 + 18))
    # = int(6,291,432 / 32.4) = 194,180; swa = int(194,180 x 0.8) = 155,344; cost per full token 73,728 x 32.4 / 36
    # = 66,355.2 B.  (Equal full and SWA cells: the same counts as 0.5.23's byte split.)
    p = swa.plan(_ctx(BUDGET, model="openai/gpt-oss-120b", gpu="h100-sxm", engine_version="0.5.8"))
    assert "layers mode" in p.layout
    assert (p.tokens, [x.tokens for x in p.pools]) == (194_180, [194_180, 155_344])
    assert p.cell == pytest.approx(66_355.2)
    # 18 full layers x 2,048 B = 36,864 B a full token; the same per SWA token
    assert [x.bytes for x in p.pools] == [194_180 * 36_864, 155_344 * 36_864]


def test_gpt_oss_under_0_5_8_on_a_b200_has_no_swa_pool():
    # SM100: GPT-OSS's default backend is trtllm_mha, which turns hybrid SWA memory off in 0.5.8; page 64:
    # 174,762 // 64 x 64 = 174,720
    ctx = _ctx(BUDGET, model="openai/gpt-oss-120b", gpu="b200", engine_version="0.5.8")
    p = swa.plan(ctx)
    assert (ctx.page_size, p.cell, p.tokens) == (64, 73_728, 174_720)
    assert "trtllm_mha" in p.notes[0]


def test_gpt_oss_under_0_5_23_splits_by_bytes():
    # cell = 36,864 + 0.8 x 36,864 = 66,355.2; full = int(12,884,901,888 // 66,355.2) = 194,180; swa 155,344
    p = swa.plan(_ctx(BUDGET, model="openai/gpt-oss-120b", gpu="h100-sxm"))
    assert "ratio mode" in p.layout and (p.tokens, [x.tokens for x in p.pools]) == (194_180, [194_180, 155_344])


def test_mimo_v2_flash_layer_split_cell_has_the_swa_term():
    # 0.5.8 get_cell_size_per_token for MiMoV2FlashForCausalLM, TP4 bf16: full 4 heads / 4 = 1 x (192 + 128) x 2
    # = 640 B over all 48 layers = 30,720, + SWA 8 / 4 = 2 x 320 x 2 = 1,280 B over its 39 SWA layers = 49,920:
    # 80,640 B.  T = 12,884,901,888 // 80,640 = 159,783; full = int(159,783 x 48 / (0.8 x 39 + 9)) =
    # int(7,669,584 / 40.2) = int(190,785.7) = 190,785; swa = int(152,628.0) = 152,628
    p = swa.plan(_ctx(BUDGET, model="XiaomiMiMo/MiMo-V2-Flash", gpu="h200-sxm", tp=4, engine_version="0.5.8"))
    assert (p.tokens, [x.tokens for x in p.pools]) == (190_785, [190_785, 152_628])
    assert "80,640 B" in p.notes[-1]


def test_mimo_v2_flash_two_step_byte_split_of_0_5_9():
    # 0.5.9 - 0.5.10: F = 640, S = 1,280 (TP4 bf16), 9 full + 39 SWA layers; profile cell 640 x 9 + 1,280 x 39 =
    # 55,680 B -> T = 12,884,901,888 // 55,680 = 231,409; split cell 5,760 + 0.8 x 49,920 = 45,696;
    # full = int(231,409 x 55,680 / 45,696) = int(281,968.9) = 281,968, swa = int(225,574.4) = 225,574.
    # 0.5.11+ divide the budget once: 12,884,901,888 // 45,696 = 281,970
    def counts(release):
        p = swa.plan(_ctx(BUDGET, model="XiaomiMiMo/MiMo-V2-Flash", gpu="h200-sxm", tp=4, engine_version=release))
        return p.tokens, [x.tokens for x in p.pools]

    assert counts("0.5.9") == (281_968, [281_968, 225_574])
    assert counts("0.5.11") == (281_970, [281_970, 225_576])


def test_request_cap_mode_arrives_in_0_5_14():
    # radix cache off + --max-running-requests 16: 0.5.13 has no cap configurator (ratio mode: 194,180 full tokens at
    # 12 GiB); 0.5.14 has it -- pool_configurator.py v0.5.14:
    #     class SWAChunkCapPoolConfigurator(HybridSWAPoolConfigurator):
    #         """Hybrid SWA configurator with the SWA pool sized from a fixed token cap. ..."""
    #     (create_memory_pool_configurator: ``if SWAChunkCapPoolConfigurator.is_applicable(mr): return ...``)
    # cap = (window 127 + 128 x 1 + page 1 + decode page 1) x 16 + 2 x chunk 8,192 + page 1 = 4,112 + 16,385 = 20,497
    # SWA slots; full = (12,884,901,888 - 20,497 x 36,864) // 36,864 = 12,129,300,480 // 36,864 = 329,028
    kw = dict(model="openai/gpt-oss-120b", gpu="h100-sxm", disable_radix_cache=True, max_running_requests=16)

    def counts(release):
        p = swa.plan(_ctx(BUDGET, **kw, engine_version=release))
        return p.layout.rsplit(", ", 1)[1], p.tokens, [x.tokens for x in p.pools]

    assert counts("0.5.13") == ("ratio mode)", 194_180, [194_180, 155_344])
    for release in ("0.5.14", "0.5.20", "0.5.23"):
        assert counts(release) == ("request-cap mode)", 329_028, [329_028, 20_497])
    era = swa.byte_era("0.5.16")
    assert (era.two_step, era.draft, era.staged, era.validate, era.request_cap) == (False, "full", True, True, True)
    era = swa.byte_era("0.5.13")
    assert (era.two_step, era.draft, era.staged, era.validate, era.request_cap) == (False, "none", True, False, False)


def test_request_cap_mode_before_0_5_22_ignores_a_disabled_chunk():
    # pool_configurator.py v0.5.21 SWAChunkCapPoolConfigurator.is_applicable: "if get_schedule().chunked_prefill_size
    # is None: return False" (a disabled chunk is -1, not None); v0.5.22 SWARequestCapPoolConfigurator.is_applicable:
    # "chunked_prefill_size is None or chunked_prefill_size <= 0" -> ratio mode.
    # 0.5.21, --chunked-prefill-size -1: cap = 257 x 16 + 2 x (-1) + 1 = 4,111 slots; full = 12,884,901,888 // 36,864
    # - 4,111 = 349,525 - 4,111 = 345,414 (4,111 x 36,864 is a whole number of cells)
    kw = dict(
        model="openai/gpt-oss-120b",
        gpu="h100-sxm",
        disable_radix_cache=True,
        max_running_requests=16,
        chunked_prefill_size=-1,
    )

    def counts(release):
        p = swa.plan(_ctx(BUDGET, **kw, engine_version=release))
        return p.layout.rsplit(", ", 1)[1], p.tokens, [x.tokens for x in p.pools]

    assert counts("0.5.21") == ("request-cap mode)", 345_414, [345_414, 4_111])
    assert counts("0.5.22") == ("ratio mode)", 194_180, [194_180, 155_344])
    assert swa.swa_request_cap_applies(
        radix_cache=False, max_running_requests=16, chunked_prefill_size=-1, chunk_gate=False
    )
    assert not swa.swa_request_cap_applies(radix_cache=False, max_running_requests=16, chunked_prefill_size=-1)


def test_cap_requests_floor_one_only_in_0_5_23():
    # compute_swa_request_cap v0.5.23: "num_reqs = max(1, max_running_requests // attn_dp_size)";
    # v0.5.22: "num_reqs = max_running_requests // attn_dp_size".  3 requests over 4 DP-attention ranks -> 1 / 0
    assert swa.cap_requests(max_running_requests=3, attn_dp_size=4) == 1
    assert swa.cap_requests(max_running_requests=3, attn_dp_size=4, floor_one=False) == 0
    assert (swa.byte_era("0.5.22").cap_floor_one, swa.byte_era("0.5.23").cap_floor_one) == (False, True)
    assert (swa.byte_era("0.5.21").cap_chunk_gate, swa.byte_era("0.5.22").cap_chunk_gate) == (False, True)


def test_swa_pool_check_arrives_in_0_5_16():
    # pool_configurator.py v0.5.16 HybridSWAPoolConfigurator._solve_pool_sizes:
    #     if (self._sliding_window_size is not None
    #             and self._sliding_window_size + self._page_size >= swa_tokens):
    #         raise ValueError(f"SWA pool ({swa_tokens} tokens) cannot hold even one request: ...")
    # (absent in v0.5.15).  gpt-oss-120b bf16 TP1, budget 10,650,000 B: full = int(10,650,000 // 66,355.2) = 160,
    # swa = int(160 x 0.8) = 128 <= 127 + 1 -> refused from 0.5.16
    ctx = dict(model="openai/gpt-oss-120b", gpu="h100-sxm")
    p = swa.plan(_ctx(10_650_000, **ctx, engine_version="0.5.15"))
    assert (p.tokens, [x.tokens for x in p.pools]) == (160, [160, 128])
    with pytest.raises(InputError, match="cannot hold even one request"):
        swa.plan(_ctx(10_650_000, **ctx, engine_version="0.5.16"))


def test_layer_split_pp_multiplies_by_the_models_layers_in_0_5_7_0_5_8():
    # model_runner_kv_cache_mixin.py v0.5.8 set_num_tokens_hybrid_swa:
    #     full_layers_num = len(self.model_config.full_attention_layer_ids)   # the stage's (load_model filter over
    #     swa_layers_num = len(self.model_config.swa_attention_layer_ids)     #  range(start_layer, end_layer + 1))
    #     total_tokens = self.max_total_num_tokens * self.model_config.num_hidden_layers   # the whole model's 36
    # gpt-oss-120b bf16 TP1 PP2, 12 GiB: each stage's cell 2,048 x 18 = 36,864 B -> T = 12,884,901,888 // 36,864 =
    # 349,525 (MIN over stages).  Stage [0, 18) lists layers 0..18: 10 SWA (even ids) + 9 full -> full =
    # int(349,525 x 36 / (0.8 x 10 + 9)) = int(740,170.6) = 740,170, SWA int(592,136.0) = 592,136; stage [18, 36):
    # int(12,582,900 / 16.2) = 776,722 -> the fewest, 740,170, is reported.  Stage 0 allocates 740,170 x 2,048 x 9
    # + 592,136 x 2,048 x 10 = 13,642,813,440 + 12,126,945,280 = 25,769,758,720 B = 24.00 GiB for 12 GiB
    p = swa.plan(_ctx(BUDGET, model="openai/gpt-oss-120b", gpu="h100-sxm", pp=2, engine_version="0.5.8"))
    assert (p.tokens, [x.tokens for x in p.pools]) == (740_170, [740_170, 592_136])
    assert p.kv_pool_bytes == 25_769_758_720
    assert (
        len(p.warnings) == 1
        and "24.00 GiB" in p.warnings[0]
        and "2.00x" in p.warnings[0]
        and "out of GPU memory" in p.warnings[0]
    )
    # PP1 is unchanged (one stage = the model): 194,180, no warning
    p1 = swa.plan(_ctx(BUDGET, model="openai/gpt-oss-120b", gpu="h100-sxm", engine_version="0.5.8"))
    assert (p1.tokens, p1.warnings) == (194_180, [])
    layers = swa.swa_layers_from_config(_ctx(model="openai/gpt-oss-120b", gpu="h100-sxm").config)
    assert swa.engine_stage_ids(layers=layers, rng=(0, 18), num_layers=36) == (9, 10)
    assert swa.engine_stage_ids(layers=layers, rng=(18, 36), num_layers=36) == (9, 9)


def test_pp_stage_lists_hold_the_next_stages_first_layer_until_0_5_21():
    # model_runner_components/layer_setup.py v0.5.20: "for layer_idx in range(start_layer, end_layer + 1)";
    # v0.5.21 _resolve_local_hybrid_swa_layer_ids: "owned_layers = range(pp_range.start_layer, pp_range.end_layer)".
    # gpt-oss-120b bf16 TP1 PP2, 12 GiB (F = S = 2,048 B; SWA on even layer ids):
    # 0.5.20: stage [0, 18) lists 0..18 = 9 full + 10 SWA -> cell 18,432 + 0.8 x 20,480 = 34,816 B ->
    #   12,884,901,888 // 34,816 = 370,085; stage [18, 36): 18,432 + 0.8 x 18,432 = 33,177.6 B -> 388,361;
    #   MIN 370,085, SWA int(296,068.0) = 296,068
    # 0.5.21: both stages 9 + 9 -> 388,361, SWA int(310,688.8) = 310,688
    # 0.5.9 (two-step, model_runner_kv_cache_mixin.py v0.5.9 get_cell_size_per_token over the stage's lists):
    #   P = 2,048 x 19 = 38,912 / 36,864 -> T = min(331,129, 349,525) = 331,129; stage [18, 36):
    #   int(331,129 x 36,864 / 33,177.6) = int(367,921.1) = 367,921 (the fewest), SWA int(294,336.8) = 294,336
    def counts(release):
        p = swa.plan(_ctx(BUDGET, model="openai/gpt-oss-120b", gpu="h100-sxm", pp=2, engine_version=release))
        return p.tokens, [x.tokens for x in p.pools]

    assert counts("0.5.20") == (370_085, [370_085, 296_068])
    assert counts("0.5.21") == (388_361, [388_361, 310_688])
    assert counts("0.5.9") == (367_921, [367_921, 294_336])
    assert (swa.byte_era("0.5.20").end_inclusive, swa.byte_era("0.5.21").end_inclusive) == (True, False)


def test_mimo_v2_flash_cell_of_0_5_7_counts_full_layers_only():
    # model_runner_kv_cache_mixin.py v0.5.7 profile_max_num_token:
    #     elif self.model_config.full_attention_layer_ids:
    #         num_layers = len(self.model_config.full_attention_layer_ids)
    # MiMo-V2-Flash TP4 bf16: 640 x 9 + 1,280 x 39 = 5,760 + 49,920 = 55,680 B (0.5.8: 640 x 48 + 49,920 = 80,640).
    # T = 12,884,901,888 // 55,680 = 231,409; full = int(231,409 x 48 / 40.2) = int(276,309.6) = 276,309,
    # swa = int(221,047.2) = 221,047
    p = swa.plan(_ctx(BUDGET, model="XiaomiMiMo/MiMo-V2-Flash", gpu="h200-sxm", tp=4, engine_version="0.5.7"))
    assert (p.tokens, [x.tokens for x in p.pools]) == (276_309, [276_309, 221_047])
    assert "55,680 B full-layer cell" in p.notes[-1]


def test_layer_split_is_unfloored_before_0_5_7():
    # model_runner.py set_num_token_hybrid (0.4.9.post6 - 0.5.6) does not floor the split pools to the page
    kw = dict(tokens=1000, num_layers=36, full_layers=18, swa_layers=18, ratio=0.8, page_size=64)
    # full = int(36,000 / 32.4) = int(1,111.1) = 1,111; swa = int(888.8) = 888; floored: 1,088 / 832
    assert swa.layer_split_tokens(**kw, floor=False) == (1111, 888)
    assert swa.layer_split_tokens(**kw) == (1088, 832)


def test_ratio_default_is_the_releases():
    ctx = _ctx(model="openai/gpt-oss-120b", gpu="h100-sxm", engine_version="0.5.8")
    assert ctx.flags.swa_full_tokens_ratio is None and swa._ratio(ctx) == ctx.rules.pool_rules.swa_full_tokens_ratio


# ------------------------------------------------------------------------------------------------ Gemma-3


@pytest.mark.parametrize("release", ["0.5.6", "0.5.23"])
def test_gemma_3_is_one_pool_in_every_release(release):
    # both releases turn hybrid SWA memory off for Gemma3ForConditionalGeneration (0.5.6 server_args.py, 0.5.23
    # arg_groups/model_overrides/gemma2_gemma3.py): one pool over all 62 layers, 16 KV heads x (128 + 128) x 62 x
    # 2 B = 507,904 B a token, tokens = budget // 507,904
    rules = rules_for(release).pool_rules
    assert not rules.hybrid_swa_pool(architectures=["Gemma3ForConditionalGeneration"], has_sliding_window=True)
    with pytest.raises(InputError, match="disables hybrid SWA"):
        swa.swa_layers_from_config(
            {"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 2, "sliding_window": 1024},
            release=release,
            pool_rules=rules,
        )
    f = fit(Deployment(model="google/gemma-3-27b-it", gpu="h100-sxm", engine_version=release))
    assert (f.family, f.kv_bytes_per_token) == ("gqa", 507_904)
    assert f.kv_pool_tokens == f.kv_budget_bytes // 507_904 and [p.name for p in f.pools] == ["KV (K + V)"]


# ------------------------------------------------------------------------------------------ Qwen3-Next (Mamba)

QWEN3_NEXT = dict(model="Qwen/Qwen3-Next-80B-A3B-Instruct", gpu="h200-sxm", tp=2)
MAMBA_BUDGET = 47_878_147_932  # int(44.59 GiB); per request p = 38,633,472 B (36 GDN layers at TP2)
P = 38_633_472


def test_qwen3_next_0_5_3_fixed_512_slots():
    # radix cache forced off; K = 512 (no --max-mamba-cache-size, no --max-running-requests), q = 1;
    # kv = 47,878,147,932 - 512 x 38,633,472 = 47,878,147,932 - 19,780,337,664 = 28,097,810,268
    # tokens = 28,097,810,268 // 12,288 = 2,286,605
    p = mamba.plan(_ctx(MAMBA_BUDGET, **QWEN3_NEXT, engine_version="0.5.3"))
    assert p.fixed_bytes == 512 * P == 19_780_337_664
    assert p.tokens == 28_097_810_268 // 12_288 == 2_286_605
    assert p.max_running_requests == 512
    assert any("radix cache off" in n for n in p.notes)


def test_qwen3_next_0_5_3_slots_divided_by_dp():
    # --dp 2 --enable-dp-attention: K = 512 // 2 = 256 per rank
    ctx = _ctx(MAMBA_BUDGET, **QWEN3_NEXT, dp=2, enable_dp_attention=True, engine_version="0.5.3")
    carve = mamba.mamba_carve(
        geometry=mamba.mamba_geometry_from_config(ctx.config),
        budget_bytes=MAMBA_BUDGET,
        tp_size=ctx.attn_tp,
        knobs=mamba.CarveKnobs(attn_dp_size=2),
        carve=mamba.CarveRules.of(ctx.rules),
    )
    assert (carve.mamba_slots, carve.mamba_ratio) == (256, 1)


def test_qwen3_next_0_5_5_ratio_over_the_flag():
    # 0.9 / 1.9 x 47,878,147,932 = 22,679,122,704.6 B; // 38,633,472 = 587 slots, no padding slot;
    # kv = 47,878,147,932 - 587 x 38,633,472 = 47,878,147,932 - 22,677,848,064 = 25,200,299,868; q = 3 -> 195
    p = mamba.plan(_ctx(MAMBA_BUDGET, **QWEN3_NEXT, engine_version="0.5.5"))
    assert (p.fixed_bytes, p.tokens) == (587 * P, 25_200_299_868 // 12_288)
    assert p.max_running_requests == 587 // 3 == 195
    # --max-mamba-cache-size is overwritten while the radix cache is on (0.5.4 - 0.5.6)
    p = mamba.plan(_ctx(MAMBA_BUDGET, **QWEN3_NEXT, engine_version="0.5.5", max_mamba_cache_size=100))
    assert p.fixed_bytes == 587 * P and any("overwritten" in n for n in p.notes)


def test_qwen3_next_0_5_5_speculative_multiplies_the_state():
    # D = 3: K = int(22,679,122,704.6 // 38,633,472 // 4) = int(587.0 // 4) = 146; state = 146 x p x 4
    g = mamba.mamba_geometry_from_config(_ctx(**QWEN3_NEXT, engine_version="0.5.5").config)
    c = mamba.mamba_carve(
        geometry=g,
        budget_bytes=MAMBA_BUDGET,
        tp_size=2,
        knobs=mamba.CarveKnobs(speculative_num_draft_tokens=3, mamba_radix_cache_strategy="no_buffer"),
        carve=mamba.CarveRules.of(rules_for("0.5.5")),
    )
    assert (c.mamba_slots, c.state_bytes) == (146, 146 * P * 4)
    assert c.kv_budget_bytes == MAMBA_BUDGET - 146 * P * 4


def test_qwen3_next_0_5_9_no_padding_slot():
    # 0.5.7 - 0.5.16: K = int(22,679,122,704.6 // 38,633,472) = 587 (no "- p"), state 587 x p; q = 3 (auto ->
    # no_buffer before 0.5.14) -> 195
    p = mamba.plan(_ctx(MAMBA_BUDGET, **QWEN3_NEXT, engine_version="0.5.9"))
    assert (p.fixed_bytes, p.max_running_requests) == (587 * P, 195)


def test_qwen3_next_0_5_23():
    # K = int((22,679,122,704.6 - p) // p) = 586, state (586 + 1) x p = 22,677,848,064 (the same bytes as 0.5.9);
    # q = 5 (extra_buffer) -> 117
    p = mamba.plan(_ctx(MAMBA_BUDGET, **QWEN3_NEXT))
    assert (p.fixed_bytes, p.tokens) == (587 * P, 25_200_299_868 // 12_288)
    assert p.max_running_requests == 586 // 5 == 117


def test_carve_rules_by_window():
    got = {
        v: mamba.CarveRules.of(rules_for(v)) for v in ("0.5.3", "0.5.5", "0.5.7", "0.5.8", "0.5.9", "0.5.16", "0.5.17")
    }
    # the values history.py keys (no refinement by release any more: CarveRules.of reads them as they are)
    assert {v: (c.sizing, c.fallback_slots, c.padding) for v, c in got.items()} == {
        "0.5.3": ("fixed", 512, 0),
        "0.5.5": ("ratio_0504", 512, 0),
        "0.5.7": ("ratio_0507", 512, 0),
        "0.5.8": ("ratio_0508", 512, 0),
        "0.5.9": ("ratio_0508", None, 0),
        "0.5.16": ("ratio_0513", None, 0),
        "0.5.17": ("ratio", None, 1),
    }


# ------------------------------------------------------------- Mamba + speculative decoding by release (issue 12)


def _spec_carve(release, **kw):
    g = mamba.mamba_geometry_from_config(_ctx(**QWEN3_NEXT).config)
    return mamba.mamba_carve(
        geometry=g,
        budget_bytes=MAMBA_BUDGET,
        tp_size=2,
        knobs=mamba.CarveKnobs(speculative_num_draft_tokens=3, mamba_radix_cache_strategy="no_buffer", **kw),
        carve=mamba.CarveRules.of(rules_for(release)),
    )


def test_speculative_states_of_0_5_7_and_0_5_8():
    # D = 3, --max-running-requests 64, q = 3 (no_buffer).  0.5.7 and 0.5.8 (dp 1): inter = 64 x 3 x p = 192 p =
    # 7,417,626,624 B first; rest = 47,878,147,932 - 7,417,626,624 = 40,460,521,308; K = int(0.9 / 1.9 x
    # 40,460,521,308 // p) = int(496.09) = 496; kv = 40,460,521,308 - 496 x 38,633,472 = 40,460,521,308 -
    # 19,162,202,112 = 21,298,319,196; cap 496 // 3 = 165
    for release in ("0.5.7", "0.5.8", "0.5.12"):
        c = _spec_carve(release, max_running_requests=64)
        assert (c.mamba_slots, c.intermediate_bytes, c.kv_budget_bytes, c.max_running_requests_cap) == (
            496,
            192 * P,
            21_298_319_196,
            165,
        ), release
    # dp 2: 0.5.7 reserves for the flag itself (64 x 3 = 192 p), 0.5.8 for 64 // 2 = 32 (96 p = 3,708,813,312 B):
    # rest 44,169,334,620 -> K = int(541.6) = 541, kv = 44,169,334,620 - 541 p = 23,268,626,268
    assert _spec_carve("0.5.7", max_running_requests=64, attn_dp_size=2).intermediate_bytes == 192 * P
    c = _spec_carve("0.5.8", max_running_requests=64, attn_dp_size=2)
    assert (c.mamba_slots, c.intermediate_bytes, c.kv_budget_bytes) == (541, 96 * P, 23_268_626_268)
    # --max-mamba-cache-size 100: 0.5.7 takes no speculative states in that branch (and needs no request cap):
    # kv = 47,878,147,932 - 100 p = 44,014,800,732; 0.5.8 still takes 192 p first: 36,597,174,108
    c = _spec_carve("0.5.7", max_mamba_cache_size=100)
    assert (c.mamba_slots, c.intermediate_bytes, c.kv_budget_bytes) == (100, 0, 44_014_800_732)
    c = _spec_carve("0.5.8", max_mamba_cache_size=100, max_running_requests=64)
    assert (c.intermediate_bytes, c.kv_budget_bytes) == (192 * P, 36_597_174_108)
    with pytest.raises(InputError, match="needs --max-running-requests"):
        _spec_carve("0.5.8", max_mamba_cache_size=100)


def test_speculative_joint_solve_of_0_5_13_to_0_5_16():
    # mb = 0.9 / 1.9 x 47,878,147,932 = 22,679,122,704.6; K = int(mb // (p x (1 + 3 / 3))) = int(293.5) = 293;
    # inter = p x min(64, 293 // 3 = 97) x 3 = 192 p; kv = 47,878,147,932 - 192 p - 293 p = 47,878,147,932 -
    # 485 x 38,633,472 = 29,140,914,012 (no padding slot); 0.5.17 adds it: K = int((mb - 4 p) // 2 p) = 291,
    # inter = (min(64, 97) + 1) x 3 p = 195 p, kv = 47,878,147,932 - (195 + 292) p = 29,063,647,068
    for release in ("0.5.13", "0.5.16"):
        c = _spec_carve(release, max_running_requests=64)
        assert (c.mamba_slots, c.intermediate_bytes, c.kv_budget_bytes) == (293, 192 * P, 29_140_914_012), release
    c = _spec_carve("0.5.17", max_running_requests=64)
    assert (c.mamba_slots, c.intermediate_bytes, c.kv_budget_bytes) == (291, 195 * P, 29_063_647_068)
    # --max-mamba-cache-size 100: inter = p x min(64, 100 // 3 = 33) x 3 = 99 p; kv = budget - 199 p =
    # 47,878,147,932 - 7,688,060,928 = 40,190,087,004
    c = _spec_carve("0.5.13", max_mamba_cache_size=100, max_running_requests=64)
    assert (c.intermediate_bytes, c.kv_budget_bytes) == (99 * P, 40_190_087_004)


def test_radix_cache_switch_offs_by_release():
    def radix(release, arch="Qwen3NextForCausalLM", spec=False, backend=None):
        key = tuple(int(x) for x in release.split("."))
        return mamba.release_radix_cache(
            release=key, radix_cache=True, architecture=arch, speculative=spec, attention_backend=backend
        )[0]

    # Kimi-Linear: "Disabling Radix Cache for KimiLinearForCausalLM as it is not yet supported" 0.5.5 - 0.5.13
    kimi = "KimiLinearForCausalLM"
    assert [radix(v, kimi) for v in ("0.5.5", "0.5.9", "0.5.13", "0.5.14")] == [False, False, False, True]
    assert (radix("0.5.8", "BailingMoeV2_5ForCausalLM"), radix("0.5.9", "BailingMoeV2_5ForCausalLM")) == (True, False)
    # speculative decoding: Nemotron-H only in 0.5.8, every hybrid in 0.5.9 (no_buffer), refused 0.5.10 - 0.5.13
    assert (
        radix("0.5.8", spec=True),
        radix("0.5.8", "NemotronHForCausalLM", spec=True),
        radix("0.5.9", spec=True),
        radix("0.5.14", spec=True),
    ) == (True, False, False, True)
    with pytest.raises(InputError, match="refuses speculative decoding"):
        radix("0.5.10", spec=True)
    # --attention-backend trtllm_mha (page 1 unsupported) 0.5.7 - 0.5.13
    assert (
        radix("0.5.6", backend="trtllm_mha"),
        radix("0.5.7", backend="trtllm_mha"),
        radix("0.5.14", backend="trtllm_mha"),
    ) == (True, False, True)
    # in a plan: Qwen3-Next + NEXTN under 0.5.9 runs radix off -> q = 1, K = mrr // dp = 48 (the mrr branch),
    # inter = 48 x 3 x p first
    p = mamba.plan(
        _ctx(
            MAMBA_BUDGET,
            **QWEN3_NEXT,
            engine_version="0.5.9",
            speculative_algorithm="NEXTN",
            speculative_num_draft_tokens=3,
            max_running_requests=48,
        )
    )
    assert p.fixed_bytes == (48 + 48 * 3) * P and any("radix cache off for speculative" in n for n in p.notes)


def test_qwen3_next_sm100_page_by_release():
    # Qwen3-Next on a B200, --attention-backend unset: triton (page 1) in 0.5.7 - 0.5.9; 0.5.10 - 0.5.15 trtllm_mha
    # (64) only with the radix cache off or speculative decoding (the override reads the unresolved "auto", not
    # extra_buffer); 0.5.16+ the resolved extra_buffer (overlap on) -> trtllm_mha 64; --disable-overlap-schedule
    # -> no_buffer -> triton 1.  0.5.6: flashinfer, 1.
    def page(release, **kw):
        return _ctx(**QWEN3_NEXT | dict(gpu="b200"), engine_version=release, **kw).page_size

    assert [page(v) for v in ("0.5.6", "0.5.7", "0.5.9", "0.5.13", "0.5.14", "0.5.16", "0.5.22", None)] == [
        1,
        1,
        1,
        1,
        1,
        64,
        64,
        64,
    ]
    assert (
        page("0.5.9", disable_radix_cache=True),
        page("0.5.13", disable_radix_cache=True),
        page("0.5.14", disable_radix_cache=True),
    ) == (1, 64, 64)
    assert (page("0.5.16", disable_overlap_schedule=True), page(None, disable_overlap_schedule=True)) == (1, 1)
    assert page("0.5.13", attention_backend="trtllm_mha", disable_radix_cache=True) == 64
