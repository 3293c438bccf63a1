"""DSPARK (and the other speculative algorithms) as SGLang 0.5.23 resolves and sizes them (issue 17).

Every expected number is derived by hand in the comments from the engine's code (speculative_hook._handle_dspark,
dspark_config, pool_configurator.DSV4PoolConfigurator, deepseek_v4_memory_pool, allocation_sizing), as in
/tmp/research/issue17_calc.py; none is read back from kvplan.  V4 row layout (SM120): 585 B per SWA row per layer,
1,632.5 B per full token for V4.1-Flash (40 layers).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.sglang import rules as R
from kvplan.engines.sglang.pools.dsv4 import DSV4Flags, draft_swa_pool_bytes, dsv4_pool_sizes
from kvplan.engines.sglang.speculative import (
    SpecPlan,
    SpecRequest,
    decode_alloc_len,
    req_to_token_bytes,
    req_to_token_extra_len,
    resolve_speculative,
)
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.geometry.dsv4 import dsv4_geometry_from_config
from kvplan.inputs.resolve import resolve_model
from kvplan.planning.plan import fit

GiB = 2**30
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
V4 = "deepseek-ai/DeepSeek-V4-Flash"
CTX = 1_048_576


@dataclass(eq=False, repr=False)
class Dep(Deployment):
    """A Deployment with the DSpark block-size field (kvplan.deployment gains it with the flag; issue 17)."""

    speculative_dspark_block_size: int | None = None


def _cfg(model: str):
    m = resolve_model(model)
    return m.raw_config or m.config


def _req(model: str, algo: str | None, **kw) -> SpecRequest:
    return SpecRequest(algorithm=algo, config=_cfg(model), family=Family.DSV4, **kw)


@pytest.fixture(scope="module")
def v41():
    return dsv4_geometry_from_config(_cfg(V41))


def _pool(geom, budget, *, mrr, drafts, stages=3, cps=2048):
    return dsv4_pool_sizes(
        geometry=geom,
        budget_bytes=budget,
        layout="v4",
        flags=DSV4Flags(
            max_running_requests=mrr,
            context_len=CTX,
            chunked_prefill_size=cps,
            speculative_num_draft_tokens=drafts,
            speculative_num_steps=1 if drafts else None,
        ),
        draft_layers=stages if drafts else 0,
    )


# ---------------------------------------------------------------- resolution (_handle_dspark, dspark_config)


def test_block_size_flag_checkpoint_and_default():
    # --speculative-dspark-block-size 6 -> gamma 6 -> num_draft_tokens = 6 + 1 = 7, steps 1, top-k 1
    p = resolve_speculative(_req(V41, "DSPARK", dspark_block_size=6))
    assert (p.algorithm, p.block_size, p.num_draft_tokens, p.num_steps, p.topk) == ("DSPARK", 6, 7, 1, 1)
    # no flag: the bundled draft's dspark_block_size (V4.1-Flash config: 5) -> 6 draft tokens
    p = resolve_speculative(_req(V41, "dspark"))
    assert (p.block_size, p.num_draft_tokens, p.draft_stages) == (5, 6, 3)  # 3 MTP slots -> 3 DSpark stages
    # V4-Flash: no dspark_* key, no flag, no draft tokens -> DEFAULT_DSPARK_GAMMA 7 -> 8
    p = resolve_speculative(_req(V4, "DSPARK"))
    assert (p.block_size, p.num_draft_tokens, p.draft_stages) == (7, 8, 1)
    # V4-Flash with --speculative-num-draft-tokens 5 and nothing else: gamma unresolved, the draft tokens stand (4+1)
    assert resolve_speculative(_req(V4, "DSPARK", num_draft_tokens=5)).num_draft_tokens == 5
    # the request cap: the handler's 48 (only reached where the DeepSeek-V4 hook's 256 did not apply first)
    assert p.mrr_default == 48


def test_num_draft_tokens_must_be_gamma_plus_one():
    # the checkpoint's gamma 5 wants 6: SGLang raises "must equal gamma + 1 (= 6 for gamma=5)"
    with pytest.raises(InputError) as e:
        resolve_speculative(_req(V41, "DSPARK", num_draft_tokens=7))
    assert e.value.field == "--speculative-num-draft-tokens" and "gamma + 1 (= 6 for gamma=5)" in str(e.value)
    assert resolve_speculative(_req(V41, "DSPARK", num_draft_tokens=7, dspark_block_size=6)).num_draft_tokens == 7
    for bad in (0, -1):
        with pytest.raises(InputError) as e:
            resolve_speculative(_req(V41, "DSPARK", dspark_block_size=bad))
        assert e.value.field == "--speculative-dspark-block-size"
    with pytest.raises(InputError) as e:  # gamma unresolved and 1 draft token: must be >= 2
        resolve_speculative(_req(V4, "DSPARK", num_draft_tokens=1))
    assert e.value.field == "--speculative-num-draft-tokens"


@pytest.mark.parametrize("algo", ["NEXTN", "EAGLE", "EAGLE3", "NGRAM", "STANDALONE", "UNO"])
def test_v41_refuses_every_algorithm_but_dspark(algo):
    # validate_deepseek_v41_features: "DeepSeek-V4.1 does not support speculative decoding other than DSpark yet"
    with pytest.raises(InputError) as e:
        resolve_speculative(_req(V41, algo, num_draft_tokens=4))
    assert e.value.field == "--speculative-algorithm" and "other than DSpark" in str(e.value)


def test_v4_takes_eagle_and_dspark_as_typed():
    # apply_deepseek_v4_defaults asserts EAGLE or DSPARK before handle_speculative_decoding turns NEXTN into EAGLE
    with pytest.raises(InputError) as e:
        resolve_speculative(_req(V4, "NEXTN"))
    assert e.value.field == "--speculative-algorithm" and "EAGLE or DSPARK" in e.value.one_line()
    p = resolve_speculative(_req(V4, "EAGLE"))  # _auto_choose_speculative_params: (3, 1, 4)
    assert (p.num_steps, p.topk, p.num_draft_tokens, p.draft_stages) == (3, 1, 4, 1)


def test_dspark_refuses_pp_and_non_dsv4_targets():
    with pytest.raises(InputError) as e:  # V4.1 refuses PP for any feature set
        resolve_speculative(_req(V41, "DSPARK", pp=2))
    assert e.value.field == "--pp-size"
    with pytest.raises(InputError) as e:  # _handle_dspark: PP only on PD prefill
        resolve_speculative(_req(V4, "DSPARK", pp=2))
    assert e.value.field == "--pp-size" and "PD prefill" in str(e.value)
    llama = SpecRequest(algorithm="DSPARK", config=_cfg("meta-llama/Llama-3.1-8B-Instruct"), family=Family.GQA)
    with pytest.raises(InputError) as e:
        resolve_speculative(llama)
    assert e.value.field == "--speculative-algorithm"


def test_dspark_release_window():
    # DSPARK first appears in 0.5.16 (spec_info.py of the 0.5.15 / 0.5.16 wheels)
    resolve_speculative(_req(V41, "DSPARK", engine_version="0.5.16"))
    with pytest.raises(InputError) as e:
        resolve_speculative(_req(V41, "DSPARK", engine_version="0.5.15"))
    assert e.value.field == "--engine-version" and "0.5.16" in str(e.value)


def test_other_algorithms():
    llama = dict(config=_cfg("meta-llama/Llama-3.1-8B-Instruct"), family=Family.GQA)
    # NGRAM: 12 draft tokens, top-k 10 (BFS breadth), steps 12 // 10 = 1, no draft KV, 48 requests
    p = resolve_speculative(SpecRequest(algorithm="NGRAM", **llama))
    assert (p.num_draft_tokens, p.topk, p.num_steps, p.draft_kv, p.mrr_default) == (12, 10, 1, "none", 48)
    with pytest.raises(InputError):
        resolve_speculative(SpecRequest(algorithm="NGRAM", attn_dp=2, **llama))
    # FROZEN_KV_MTP: priced as EAGLE (is_eagle() includes it), 48 requests
    p = resolve_speculative(SpecRequest(algorithm="FROZEN_KV_MTP", **llama))
    assert (p.draft_kv, p.mrr_default) == ("eagle", 48)
    # DFLASH: SGLang refuses without --speculative-draft-model-path (kvplan has no draft-model input)
    with pytest.raises(InputError) as e:
        resolve_speculative(SpecRequest(algorithm="DFLASH", **llama))
    assert "--speculative-draft-model-path" in str(e.value)
    # UNO: TP = PP = 1, the verify width required, each decode allocates Q + 1
    with pytest.raises(InputError) as e:
        resolve_speculative(SpecRequest(algorithm="UNO", tp=2, num_draft_tokens=4, **llama))
    assert e.value.field == "--tp-size"
    with pytest.raises(InputError) as e:
        resolve_speculative(SpecRequest(algorithm="UNO", **llama))
    assert e.value.field == "--speculative-num-draft-tokens"
    uno = resolve_speculative(SpecRequest(algorithm="UNO", num_draft_tokens=4, **llama))
    assert decode_alloc_len(plan=uno, page_size=1) == 5
    # the EAGLE family outside DeepSeek-V4 stays as recorded (golden fit-kimi-k2-mtp): as given, no 48
    p = resolve_speculative(SpecRequest(algorithm="EAGLE", num_draft_tokens=4, **llama))
    assert (p.legacy, p.num_draft_tokens, p.mrr_default) == (True, 4, None)


# ---------------------------------------------------------------- per-request reservations (allocation_sizing)


def test_decode_alloc_and_req_to_token_rows():
    p = resolve_speculative(_req(V41, "DSPARK", dspark_block_size=6))
    # get_alloc_len_per_decode: top-k 1 -> max(steps x topk, drafts) = max(1, 7) = 7
    assert decode_alloc_len(plan=p, page_size=256) == 7
    # get_req_to_token_extra_context_len: max(4 + 7, 2 x 7 + 256 - 1) = max(11, 269) = 269 (no speculation: 4)
    assert req_to_token_extra_len(plan=p, page_size=256) == 269
    assert req_to_token_extra_len(plan=SpecPlan(), page_size=256) == 4
    # ReqToTokenPool: (8 + 1) rows x (1,048,576 + 269) x 4 B = 9 x 1,048,845 x 4 = 37,758,420 B
    assert req_to_token_bytes(plan=p, page_size=256, context_len=CTX, max_running_requests=8) == 37_758_420
    # tp_worker.get_worker_info: max_req_input_len = min(1,048,575, pool - 1) - 5 = 1,048,570 (the 1M note prints it)
    assert R.max_request_input_len(context_len=CTX, total_tokens=1_137_920) == 1_048_570


# ---------------------------------------------------------------- the DSV4 pools with the DSpark draft


def test_tp4_pool_of_the_1m_note(v41):
    """TP4/EP4, mrr 8, chunk 2048, DSPARK block 6 (d = 7): the published pool 1,137,920 needs a budget in
    [2,557,603,344, 2,558,031,712) B (issue17_calc.py)."""
    p = _pool(v41, 2_557_603_344, mrr=8, drafts=7)
    # both coefficients x 41/40: 1,632.5 x 41/40 = 1,673.3125 ; 40 x 585 x 41/40 = 23,985
    assert p.bytes_per_full_token == pytest.approx(1673.3125)
    assert p.bytes_per_swa_token == pytest.approx(23_985)
    # SWA cap per request: 128 + 128 x 7 + 256 + 2 x 7 = 1,294 ; 1,294 x 8 + 2 x 2,048 + 256 = 14,704 ;
    # prefix tails 4 x 8 x (128 + 256) = 12,288 -> ceil256(26,992) = 27,136 slots
    assert p.swa_tokens == 27_136
    # 27,136 x 23,985 = 650,856,960 B (0.61 GiB: the SWA-cap RuntimeError would print 0.61 GB); float -> 1 B short
    assert p.swa_fixed_bytes == pytest.approx(650_856_960, abs=1)
    # pair-state ring 1 << (7 + 1).bit_length() = 16: ceil2(9 x 16 + 16 + 1 = 161) = 162 rows x 4,096 B x 3 layers
    assert p.c2_state_bytes == 162 * 4096 * 3 == 1_990_656
    assert p.full_tokens == 1_137_920 == 4_445 * 256
    assert _pool(v41, 2_558_031_711, mrr=8, drafts=7).full_tokens == 1_137_920
    assert _pool(v41, 2_557_603_343, mrr=8, drafts=7).full_tokens == 1_137_664
    assert _pool(v41, 2_558_031_712, mrr=8, drafts=7).full_tokens == 1_138_176
    # the draft's own SWA-only pool: 3 stages x ceil((27,136 + 256) / 256) = 107 pages x 149,760 B = 48,072,960 B
    draft = dict(p.components)["draft swa_kv (3 draft layers, the draft worker's own pool)"]
    assert draft == 3 * 107 * 149_760 == 48_072_960
    assert draft_swa_pool_bytes(layout="v4", page_size=256, swa_tokens=27_136, layers=3) == 48_072_960
    # the same budget without speculation holds 1,239,296 tokens
    assert _pool(v41, 2_557_603_344, mrr=8, drafts=0).full_tokens == 1_239_296


def test_tp4_mfs_080_refuses_to_start(v41):
    # a 0.50 GiB budget is below the 0.61 GiB SWA cap pool: SGLang raises "The DSV4 SWA pool cap ... leaves no room"
    with pytest.raises(InputError) as e:
        _pool(v41, int(0.498 * GiB), mrr=8, drafts=7)
    assert "27136 tokens, 0.61 GiB" in str(e.value)


def test_tp8_production_pool(v41):
    """TP8, mrr 16, chunk 2048, DSPARK block 6 on kvplan's default budget 8,691,305,977 B (issue17_calc.py)."""
    p = _pool(v41, 8_691_305_977, mrr=16, drafts=7)
    # cap 1,294 x 16 + 4,096 + 256 = 25,056 ; tails 64 x 384 = 24,576 -> 49,664 ; x 23,985 = 1,191,191,040 B
    assert p.swa_tokens == 49_664
    assert p.swa_fixed_bytes == pytest.approx(1_191_191_040, abs=1)
    # ring 16: ceil2(17 x 16 + 17 = 289) = 290 rows x 4,096 x 3 = 3,563,520 B
    assert p.c2_state_bytes == 3_563_520
    assert p.full_tokens == 4_479_488
    # without DSPARK the same budget holds 4,732,416 (the pre-weights-change default)
    assert _pool(v41, 8_691_305_977, mrr=16, drafts=0).full_tokens == 4_732_416
    # the draft pool: 3 x ceil(49,920 / 256) = 195 pages x 149,760 = 87,609,600 B
    assert dict(p.components)["draft swa_kv (3 draft layers, the draft worker's own pool)"] == 87_609_600


# ---------------------------------------------------------------- end to end (fit)


def test_fit_dspark_measured():
    """The default deployment with DSPARK block 6, weights measured: the pool is dsv4_pool_sizes on fit's budget."""
    res = fit(Dep(speculative_algorithm="DSPARK", speculative_dspark_block_size=6, weight_memory=59 * GiB))
    want = _pool(dsv4_geometry_from_config(_cfg(V41)), res.kv_budget_bytes, mrr=16, drafts=7)
    assert res.kv_pool_tokens == want.full_tokens
    assert res.kv_bytes_per_token == pytest.approx(1673.3125)
    assert res.max_running_requests == 16
    text = " | ".join(res.assumptions)
    assert "speculative_num_draft_tokens 7 = gamma + 1" in text and "max_req_input_len 1,048,570" in text
    assert "req_to_token: 17 rows x (context 1,048,576 + 269" in text
    # without speculation the request cap is 256 (apply_deepseek_v4_defaults), DSPARK's 48 never applies
    unset = fit(
        Dep(model=V41, gpu="rtx-pro-6000-maxq", tp=8, ep=8, speculative_algorithm="DSPARK", weight_memory=59 * GiB)
    )
    assert unset.max_running_requests == 256


def test_fit_refusals_are_input_errors():
    with pytest.raises(InputError) as e:
        fit(Dep(speculative_algorithm="NEXTN", weight_memory=59 * GiB))
    assert e.value.field == "--speculative-algorithm"
    with pytest.raises(InputError) as e:
        fit(Dep(speculative_algorithm="DSPARK", speculative_num_draft_tokens=7, weight_memory=59 * GiB))
    assert e.value.field == "--speculative-num-draft-tokens"


def test_no_speculation_is_unchanged():
    # the default plan: no speculative note, the 1,632.5 B cell, no draft pool
    res = fit(Deployment(weight_memory=59 * GiB))
    assert res.kv_bytes_per_token == 1632.5
    assert not any("draft" in p.name for p in res.pools)
    assert not any("speculative" in a or "req_to_token" in a for a in res.assumptions)


def test_tp4_with_the_draft_weights_counted(v41):
    """TP4/EP4 of the 1M note with the DSpark draft in the weights (tests/test_weights_draft.py: 2,199,787,080 B with
    the released DSpark keys, which the preset carries) on top of the 76,824,271,828 B target estimate (engram off
    the GPU): 76,177,789,908 B before wo_a and the ViT were priced as SGLang loads them, + 334,233,600 B (the 40
    target layers' wo_a in bf16 at attention TP 4: V4.1's 32x32 fp8 blocks are dequantized at load) + 312,248,320 B
    (the V4.1 ViT + aligner, 970,639,360 B, instead of the generic 658,391,040 B)."""
    import copy

    from kvplan.weights.estimate import estimate_weight_bytes

    m = resolve_model(V41)
    cfg = copy.deepcopy(m.config)
    cfg["text_config"].update(
        dspark_target_layer_ids=[37, 38, 39],
        dspark_markov_rank=256,
        dspark_n_routed_experts=128,
        dspark_num_experts_per_tok=3,
        dspark_noise_token_id=128799,
    )
    w = estimate_weight_bytes(
        config=cfg,
        quantization=m.quantization,
        tp_size=4,
        ep_size=4,
        engram_on_host=True,
        speculative_algorithm="DSPARK",
    ).per_gpu_bytes
    assert w == 76_177_789_908 + 334_233_600 + 312_248_320 + 2_199_787_080 == 79_024_058_908
    res = fit(
        Dep(
            tp=4,
            ep=4,
            mem_fraction_static=0.82,
            max_running_requests=8,
            engram_on_host=True,
            speculative_algorithm="DSPARK",
            speculative_dspark_block_size=6,
            weight_memory=w,
        )
    )
    # free at start on the RTX PRO 6000: 94.97 GiB - context (188 SMs x 1,536 threads x 2,388 B) - 4 x 0.0625 GiB
    assert res.kv_pool_tokens == _pool(v41, res.kv_budget_bytes, mrr=8, drafts=7).full_tokens == 1_822_464
    # the same plan with kvplan's own estimate (no --weight-memory): the draft is counted by fit itself
    own = fit(
        Dep(
            tp=4,
            ep=4,
            mem_fraction_static=0.82,
            max_running_requests=8,
            engram_on_host=True,
            speculative_algorithm="DSPARK",
            speculative_dspark_block_size=6,
        )
    )
    # SGLang's weight figure is device-level (ed46e73): kvplan's own plan adds the caching-allocator reserve
    reserve = 260_869_604  # kvplan.weights.allocator over the same tensors (WeightEstimate.allocator_reserve_bytes)
    assert own.weight_bytes == w + reserve and own.kv_pool_tokens == 1_666_560
    # the report's pool needs a budget below 2,558,031,712 B: 0.82 GiB per GPU stays between kvplan and the report
    assert own.kv_budget_bytes - 2_557_603_344 == 884_872_810
