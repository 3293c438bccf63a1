"""Speculative draft weights in the estimate (kvplan.weights.draft, issue 17): what SGLang 0.5.23 loads before it
profiles the KV budget.

Every expected byte count is derived by hand in the comments from the module layout of the engine's model files
(models/deepseek_v4_dspark.py, deepseek_v4.py, deepseek_nextn.py) and the storage rules of kvplan.weights.quant:
fp8 blocks of 32x32 = r*c + 4*ceil(r/32)*ceil(c/32) B; MXFP4 experts = r*c/2 + r*ceil(c/32) B; bf16 = 2 B, fp32 = 4 B.
DeepSeek-V4.1-Flash: h 5,120, 64 heads x 512, q_lora 1,280, o_groups 8 x o_lora 1,024, expert inter 2,304, one shared
expert, hc_mult 4, vocab 129,280.  "Released keys" = the DSpark keys of the released config as third-party copies
quote it (mlx-lm DeepSeek-V4.1 port test, pinned revision dba1be0a...; a second port's expected-config check): targets
[37, 38, 39], markov rank 256, 128 routed experts, top-3.  kvplan's preset carries only dspark_block_size.
"""

from __future__ import annotations

import copy

import pytest

from kvplan.errors import InputError
from kvplan.inputs.resolve import resolve_model
from kvplan.weights.draft import draft_load, dspark_draft_tensors
from kvplan.weights.estimate import estimate_weight_bytes
from kvplan.weights.inventory import inventory

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
RELEASED = {
    "dspark_noise_token_id": 128799,
    "dspark_target_layer_ids": [37, 38, 39],
    "dspark_markov_rank": 256,
    "dspark_n_routed_experts": 128,
    "dspark_num_experts_per_tok": 3,
}


def _fp8(r: int, c: int) -> int:
    return r * c + 4 * -(-r // 32) * -(-c // 32)


def _fp4(r: int, c: int) -> int:
    return r * c // 2 + r * -(-c // 32)


def _v41(released: bool) -> tuple[dict, str]:
    m = resolve_model(V41)
    cfg = copy.deepcopy(m.config)
    if released:
        cfg["text_config"].update(RELEASED)
    else:  # a config with dspark_block_size only (kvplan's preset before the released DSpark keys were added)
        for key in RELEASED:  # the normalised config keeps the text keys at the top level too
            cfg["text_config"].pop(key, None)
            cfg.pop(key, None)
    return cfg, m.quantization


def _draft(cfg: dict, quant: str, tp: int) -> int:
    off = estimate_weight_bytes(config=cfg, quantization=quant, tp_size=tp, ep_size=tp, engram_on_host=True)
    on = estimate_weight_bytes(
        config=cfg, quantization=quant, tp_size=tp, ep_size=tp, engram_on_host=True, speculative_algorithm="DSPARK"
    )
    draft = dict(on.breakdown)["draft"]
    assert on.per_gpu_bytes - off.per_gpu_bytes == draft  # nothing else moves
    return draft


def _stage_common(tp: int, experts: int) -> int:
    """One DSpark stage on a rank of TP = EP = tp, by hand."""
    g = tp  # attention TP (no DP attention)
    attention = (
        _fp8(1280, 5120)
        + _fp8(512, 5120)  # wq_a, wkv: replicated
        + _fp8(64 // g * 512, 1280)  # wq_b: 64/g heads x 512 rows
        + 2 * (8 // g) * 1024 * 4096  # wo_a: bf16 (wo_a_fp8=False), 8/g groups
        + _fp8(5120, 8 * 1024 // g)  # wo_b: RowParallel
        + 4 * (64 // g)
        + 2 * 1280
        + 2 * 512
    )  # fp32 sink per local head, q_norm, kv_norm
    shared = 2 * _fp8(2304 // tp, 5120) + _fp8(5120, 2304 // tp)  # gate/up ColumnParallel, down RowParallel
    router = experts * 5120 * 2  # gate weight, bf16
    hc = 2 * 24 * (4 * 5120) * 4 + 54 * 4  # hc_attn/ffn_fn [24, 4h] fp32 + bases, scales
    norms = 2 * 5120 * 2
    routed = experts // tp * 3 * _fp4(2304, 5120)  # n/ep whole experts, gate + up + down
    return attention + shared + router + hc + norms + routed


def test_dspark_draft_tp4_released_keys():
    cfg, quant = _v41(released=True)
    stage = _stage_common(4, 128)
    # attention 47,045,184 ; shared 8,881,920 ; router 1,310,720 ; hc 3,932,376 ; norms 20,480 ;
    # routed 32 x 3 x 6,266,880 = 601,620,480 -> 662,811,160 per stage
    assert stage == 662_811_160
    main_proj = _fp8(5120, 5120 * 3)  # [h, h x 3 target layers], replicated: 78,643,200 + 307,200
    markov = 2 * 129_280 * 256 * 2  # markov_w1 + markov_w2, bf16, replicated: 132,382,720
    norms = 2 * 5120 * 2  # main_norm (stage 0), norm (last stage); no hc_head on V4.1
    assert _draft(cfg, quant, 4) == 3 * stage + main_proj + markov + norms == 2_199_787_080  # 2.05 GiB


def test_dspark_draft_tp8_released_keys():
    cfg, quant = _v41(released=True)
    stage = _stage_common(8, 128)
    # attention 28,129,824 ; shared 4,440,960 ; routed 16 x 18,800,640 = 300,810,240 -> 338,644,600 per stage
    assert stage == 338_644_600
    assert _draft(cfg, quant, 8) == 3 * stage + _fp8(5120, 15360) + 132_382_720 + 20_480 == 1_227_287_400  # 1.14


def test_dspark_draft_without_the_released_keys():
    """A config without dspark_n_routed_experts / dspark_target_layer_ids / dspark_markov_rank: SGLang would build
    target-shaped stages (384 experts), main_proj over all 40 target layers, and refuse for want of a Markov rank."""
    cfg, quant = _v41(released=False)
    stage = _stage_common(4, 384)  # routed 96 x 18,800,640 = 1,804,861,440 ; router 3,932,160
    assert stage == 1_868_673_560
    main_proj = _fp8(5120, 5120 * 40)  # 1,048,576,000 + 4,096,000
    assert _draft(cfg, quant, 4) == 3 * stage + main_proj + 20_480 == 6_658_713_160
    notes = " | ".join(
        estimate_weight_bytes(
            config=cfg, quantization=quant, tp_size=4, ep_size=4, speculative_algorithm="DSPARK"
        ).notes
    )
    assert "no dspark_markov_rank" in notes and "the target's count" in notes and "num_target_layers" in notes


def test_dspark_stage_layout():
    cfg, _ = _v41(released=True)
    inv = inventory(cfg)
    ts, _notes = dspark_draft_tensors(inv.arch)
    paths = {t.path for t in ts}
    # SWA-only attention (compress_ratio 0): no compressor, no indexer; the target's embed / lm_head are shared
    assert not any("compressor" in p or "indexer" in p or "embed_tokens" in p or "lm_head" in p for p in paths)
    assert {"mtp.0.main_proj", "mtp.0.main_norm", "mtp.2.norm", "mtp.markov_head.markov_w1"} <= paths
    assert "mtp.2.hc_head" not in paths and "mtp.1.main_proj" not in paths
    assert all(t.dtype == "bf16" for t in ts if t.path.endswith(".wo_a"))
    assert sum(1 for t in ts if t.expert and t.path.endswith("gate_proj")) == 3
    assert {t.copies for t in ts if t.expert} == {128}
    # DeepSeek-V4 (no hc_pre_from_prev_sublayer): the last stage keeps hc_head fp32 [4, 4h] + [4] + [1]
    v4 = {**cfg["text_config"], "model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"]}
    head = [t for t in dspark_draft_tensors(inventory(v4).arch)[0] if t.path == "mtp.2.hc_head"]
    assert [(t.rows, t.dtype) for t in head] == [(4 * 4 * 5120 + 4 + 1, "fp32")]


def test_nextn_loads_one_mtp_layer():
    # DeepSeek-V3 NEXTN (EAGLE): the checkpoint's MTP layer, one decoder layer (deepseek_nextn.py self.decoder)
    m = resolve_model("deepseek-ai/DeepSeek-V3")
    off = estimate_weight_bytes(config=m.config, quantization=m.quantization, tp_size=8)
    on = estimate_weight_bytes(config=m.config, quantization=m.quantization, tp_size=8, speculative_algorithm="nextn")
    mtp = dict(on.breakdown)["mtp"]
    # the same as the explicit load_mtp (V3 stores one MTP layer), its absorbed MLA copy included
    assert (
        on.per_gpu_bytes
        == estimate_weight_bytes(config=m.config, quantization=m.quantization, tp_size=8, load_mtp=True).per_gpu_bytes
    )
    assert on.per_gpu_bytes - off.per_gpu_bytes > mtp > 0
    # a config with 3 MTP slots: SGLang's NextN draft still builds one layer, vLLM's MTP all three
    cfg = {**m.config, "num_nextn_predict_layers": 3}
    one = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, speculative_algorithm="EAGLE")
    every = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, load_mtp=True)
    assert dict(one.breakdown)["mtp"] * 3 == dict(every.breakdown)["mtp"]
    vllm = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, engine="vllm", speculative_algorithm="MTP")
    assert (
        dict(vllm.breakdown)["mtp"]
        == dict(
            estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, engine="vllm", load_mtp=True).breakdown
        )["mtp"]
    )


def test_drafts_kvplan_cannot_see_add_nothing():
    cfg, quant = _v41(released=True)
    base = estimate_weight_bytes(config=cfg, quantization=quant, tp_size=8, ep_size=8).per_gpu_bytes
    for algo in ("NGRAM", "UNO", "EAGLE3", "DFLASH", "STANDALONE", "FROZEN_KV_MTP"):
        est = estimate_weight_bytes(config=cfg, quantization=quant, tp_size=8, ep_size=8, speculative_algorithm=algo)
        assert est.per_gpu_bytes == base, algo
        assert any("draft" in n for n in est.notes), algo
    # DeepSeek-V4-Flash bundles no DSpark draft (no dspark_* key): the draft is elsewhere, not counted
    v4 = resolve_model("deepseek-ai/DeepSeek-V4-Flash")
    a = estimate_weight_bytes(config=v4.config, quantization=v4.quantization, tp_size=8, ep_size=8)
    b = estimate_weight_bytes(
        config=v4.config, quantization=v4.quantization, tp_size=8, ep_size=8, speculative_algorithm="DSPARK"
    )
    assert a.per_gpu_bytes == b.per_gpu_bytes
    assert any("no DSpark draft bundled" in n for n in b.notes)
    assert draft_load(inventory(cfg), algorithm=None).tensors == ()


def test_bad_inputs_are_input_errors():
    cfg, quant = _v41(released=True)
    with pytest.raises(InputError) as e:
        estimate_weight_bytes(config=cfg, quantization=quant, tp_size=8, speculative_algorithm="MEDUSA")
    assert e.value.field == "--speculative-algorithm"
    bad = copy.deepcopy(cfg)
    bad["text_config"]["dspark_target_layer_ids"] = []
    with pytest.raises(InputError) as e:
        estimate_weight_bytes(config=bad, quantization=quant, tp_size=8, speculative_algorithm="DSPARK")
    assert e.value.field == "dspark_target_layer_ids"


def test_planner_weight_estimate_keys_the_algorithm():
    from kvplan.engines.sglang.weight_load import WeightLoad
    from kvplan.engines.sglang.weight_load import weight_estimate as _weight_estimate

    m = resolve_model(V41)
    kw = {"tp": 4, "pp": 1, "ep": 4, "attn_dp": 1, "load": WeightLoad(engram_on_host=True)}
    plain = _weight_estimate(m, **kw)
    dspark = _weight_estimate(
        m, tp=4, pp=1, ep=4, attn_dp=1, load=WeightLoad(engram_on_host=True, speculative_algorithm="DSPARK")
    )
    # kvplan's preset carries the released DSpark keys: the 2,199,787,080 B draft of test_dspark_draft_tp4_released_keys;
    # the planned figure is device-level (SGLang, ed46e73): the draft's tensors also leave their own caching-allocator
    # segment tails, so the two figures differ by the draft plus the change of the "allocator_reserve" entry
    reserve = {
        k: dict(map(tuple, e["breakdown"])).get("allocator_reserve", 0) for k, e in (("p", plain), ("d", dspark))
    }
    assert reserve["d"] > reserve["p"] > 0
    assert dspark["per_gpu_bytes"] - plain["per_gpu_bytes"] == 2_199_787_080 + reserve["d"] - reserve["p"]
    assert dict(map(tuple, dspark["breakdown"]))["draft"] == 2_199_787_080
    assert _weight_estimate(m, **kw) == plain  # the key without an algorithm is the one recorded before
