"""Hand-derived checks of the speed model's terms (kvplan.perf): each expected number is worked out in the test."""

from __future__ import annotations

import math

import pytest

from kvplan.perf.comm import allreduce_time, layer_collectives
from kvplan.perf.efficiency import gpu_class
from kvplan.perf.hardware import Overrides, power_scale
from kvplan.perf.ops import (
    AttnGroup,
    attention_flops,
    experts_touched_fraction,
    hi,
    keys_attended,
    kv_read_bytes,
    lo,
)
from kvplan.perf.schedule import default_accept_length


def test_lo_hi_are_min_max():
    assert (lo(3, 5), hi(3, 5), lo(7.5, 2), hi(-1, -4)) == (3, 5, 2, -1)


def test_experts_touched():
    # one token picks 6 of 384: 6/384 = 0.015625
    assert experts_touched_fraction(tokens=1, topk=6, experts=384) == pytest.approx(6 / 384)
    # two tokens: 1 - (378/384)^2 = 1 - 0.968994 = 0.031006
    assert experts_touched_fraction(tokens=2, topk=6, experts=384) == pytest.approx(1 - (378 / 384) ** 2)
    # a 2,048-token chunk reads every expert (1 - 0.984375^2048 ~ 1 - 1e-14)
    assert experts_touched_fraction(tokens=2048, topk=6, experts=384) > 0.999999
    assert experts_touched_fraction(tokens=5, topk=2, experts=0) == 0.0  # dense model


def test_allreduce_alpha_beta():
    # 2,048 tokens x 4,096 x 2 B = 16,777,216 B over 8 GPUs at 22 GB/s, alpha 20 us:
    # 20e-6 + 2 x 7/8 x 16,777,216 / 22e9 = 20e-6 + 1.33456e-3 = 1.35456e-3 s
    t = allreduce_time(nbytes=16_777_216, ranks=8, bus_gbs=22.0, alpha_s=20e-6)
    assert t == pytest.approx(20e-6 + 1.75 * 16_777_216 / 22e9)
    assert t == pytest.approx(1.35456e-3, rel=1e-4)
    assert allreduce_time(nbytes=1e9, ranks=1, bus_gbs=1.0, alpha_s=1.0) == 0.0


def test_layer_collectives_tp_and_dp_attention():
    # TP8: two all-reduces of tokens x hidden x 2 B per layer
    assert layer_collectives(tokens=2048, hidden=4096, tp=8, attn_tp=8) == [("TP8 all-reduce", 8, 16_777_216, 2)]
    # DP attention 4 of TP8 (attn TP 2): attention all-reduce over 2 ranks of a quarter of the tokens' bytes
    # (8 x ... / 4 DP ranks: msg x 2 / 8), then one gather/scatter over 8
    got = layer_collectives(tokens=2048, hidden=4096, tp=8, attn_tp=2)
    assert got[0] == ("attention TP2 all-reduce", 2, 16_777_216 * 2 / 8, 1)
    assert got[1] == ("DP-attention gather/scatter over 8", 8, 16_777_216, 1)
    assert layer_collectives(tokens=10, hidden=10, tp=1, attn_tp=1) == []


def _gqa(**kw):
    base = dict(
        kind="full",
        layers=32,
        q_heads=32,
        flops_per_key_prefill=2.0 * (128 + 128),
        flops_per_key_decode=2.0 * (128 + 128),
        kv_bytes_per_key=8 * 256 * 2,
    )
    base.update(kw)
    return AttnGroup(**base)


def test_gqa_prefill_attention_flops():
    # Llama-3.1-8B-like, TP1: 32 layers x 1,000 queries x 32 heads x 500 keys (causal mean) x 2 (128 + 128)
    # = 32 x 1000 x 32 x 500 x 512 = 2.62144e11
    g = _gqa()
    assert attention_flops(g, tokens=1000, position=500, decode=False) == pytest.approx(2.62144e11)


def test_sliding_window_caps_keys():
    g = _gqa(kind="sliding", window=4096)
    assert keys_attended(g, position=100_000) == pytest.approx(4096)
    assert keys_attended(g, position=1000) == pytest.approx(1000)


def test_gqa_decode_kv_bytes():
    # 8 KV heads x (128 + 128) x 2 B (bf16) = 4,096 B per key per layer; 32 layers, 2 requests at 8,192:
    # 2 x 32 x 8192 x 4096 = 2,147,483,648 B
    g = _gqa()
    assert kv_read_bytes(g, requests=2, context=8192) == pytest.approx(2 * 32 * 8192 * 4096)


def test_mla_prefill_non_absorbed_decode_absorbed():
    # DeepSeek-V3: 128 heads / TP8 = 16 per rank; prefill per key 2 (128 + 64 + 128) = 640, decode absorbed
    # 2 (2 x 512 + 64) = 2,176; 61 layers
    g = AttnGroup("mla", 61, 16, 640.0, 2176.0, (512 + 64) * 1.0)
    # prefill 2,048 queries at mean position 1,024: 61 x 2048 x 16 x 1024 x 640 = 1.3099e12
    assert attention_flops(g, tokens=2048, position=1024, decode=False) == pytest.approx(61 * 2048 * 16 * 1024 * 640)
    # decode 1 query at 4,096: 61 x 16 x 4096 x 2176
    assert attention_flops(g, tokens=1, position=4096, decode=True) == pytest.approx(61 * 16 * 4096 * 2176)
    # the fp8 latent (576 B per key) is read whole on every rank: 61 x 4096 x 576
    assert kv_read_bytes(g, requests=1, context=4096) == pytest.approx(61 * 4096 * 576)


def test_dsa_topk_and_indexer():
    # DSA: attention over at most 2,048 keys; indexer 64 heads x 128 dims scanning every key:
    # per token at position 100,000 and one layer: 16 heads x 2048 x 2176 + (2 x 64 x 128 / 8) x 100,000
    g = AttnGroup(
        "dsa",
        1,
        16,
        2176.0,
        2176.0,
        576.0,
        topk=2048,
        index_flops_per_key=2.0 * 64 * 128 / 8,
        index_bytes_per_key=132.0,
        index_layers=1,
    )
    want = 16 * 2048 * 2176 + 2 * 64 * 128 / 8 * 100_000
    assert attention_flops(g, tokens=1, position=100_000, decode=True) == pytest.approx(want)
    # decode bytes: 2,048 selected latents x 576 + 100,000 indexer keys x 132
    assert kv_read_bytes(g, requests=1, context=100_000) == pytest.approx(2048 * 576 + 100_000 * 132)
    # the logits: 4 queries x 100,000 entries x 8 B (fp32 written, read by the top-k)
    from kvplan.perf.ops import index_logit_bytes

    assert index_logit_bytes(g, tokens=4, position=100_000) == pytest.approx(4 * 100_000 * 8)


def test_dsv41_candidate_cap():
    # V4.1 ratio-1 group: 5 indexer layers, 4 of them after the candidate source, capped at 2,048 x 8 = 16,384
    # entries; at p = 65,536: 65,536 + 4 x 16,384 = 131,072 entries
    from kvplan.perf.ops import index_entries

    g = AttnGroup(
        "dsv4 ratio 1",
        20,
        8,
        2048.0,
        2048.0,
        512.0,
        ratio=1,
        topk=512,
        extra_keys=128,
        index_flops_per_key=2.0 * 32 * 128,
        index_bytes_per_key=132.0,
        index_layers=5,
        index_capped_layers=4,
        index_cap=16_384,
    )
    assert index_entries(g, position=65_536) == pytest.approx(65_536 + 4 * 16_384)
    assert index_entries(g, position=8_000) == pytest.approx(5 * 8_000)


def test_dsv4_compressed_layer_keys():
    # a ratio-4 layer with top-512 selection and a 128-token window at position 131,072:
    # lo(131072 / 4, 512) + lo(131072, 128) = 512 + 128 = 640 keys; a ratio-128 layer: 1,024 + 128 = 1,152
    c4 = AttnGroup("dsv4 ratio 4", 1, 8, 2048.0, 2048.0, 512.0, ratio=4, topk=512, extra_keys=128)
    c128 = AttnGroup("dsv4 ratio 128", 1, 8, 2048.0, 2048.0, 512.0, ratio=128, extra_keys=128)
    assert keys_attended(c4, position=131_072) == pytest.approx(640)
    assert keys_attended(c128, position=131_072) == pytest.approx(1152)


def test_linear_attention_state():
    # GDN: 32 value heads x 128 x 128 state per layer on one rank, fp32: 2,097,152 B; read + written per step
    st = 32 * 128 * 128
    g = AttnGroup("linear (gdn)", 48, 0, 0.0, 0.0, 0.0, state_bytes=st * 4.0, state_flops=4.0 * st)
    assert kv_read_bytes(g, requests=3, context=10_000) == pytest.approx(3 * 48 * 2 * st * 4)
    assert attention_flops(g, tokens=10, position=5000, decode=False) == pytest.approx(48 * 10 * 4 * st)


def test_accept_length_default():
    # 3 drafted tokens at acceptance 0.7: 1 + 0.7 + 0.49 + 0.343 = 2.533
    assert default_accept_length(3) == pytest.approx(2.533)
    assert default_accept_length(0) == pytest.approx(1.0)


def test_power_scale():
    # 600 W capped at 300 W: 0.5^(1/3) = 0.7937; no cap / above the limit: 1
    assert power_scale(power_w=600, limit_w=300) == pytest.approx(0.5 ** (1 / 3))
    assert power_scale(power_w=600, limit_w=None) == 1.0
    assert power_scale(power_w=300, limit_w=450) == 1.0


@pytest.mark.parametrize(
    "facts,want",
    [
        (dict(vendor="nvidia", arch="hopper", form="sxm", link="nvlink", p2p=True), "nvlink-datacenter"),
        (dict(vendor="nvidia", arch="blackwell", form="pcie", link="pcie", p2p=True), "pcie-p2p"),
        (dict(vendor="nvidia", arch="blackwell", form="pcie", link="pcie", p2p=False), "pcie-no-p2p"),
        (dict(vendor="amd", arch="cdna3", form="oam", link="xgmi", p2p=True), "amd-instinct"),
        (dict(vendor="intel", arch="xe-hpc", form="oam", link="none", p2p=True), "other"),
    ],
)
def test_gpu_class(facts, want):
    assert gpu_class(**facts) == want


def test_overrides_are_checked():
    from kvplan.errors import InputError
    from kvplan.perf.hardware import check_overrides

    with pytest.raises(InputError) as e1:
        check_overrides(Overrides(gpu_tflops=-1))
    assert "--gpu-tflops" in e1.value.one_line()
    with pytest.raises(InputError) as e2:
        check_overrides(Overrides(power_limit=math.inf))
    assert "--power-limit" in e2.value.one_line()


def test_missing_figure_names_the_override():
    from kvplan.errors import InputError
    from kvplan.perf.hardware import resolve_hardware

    class Bare:
        id = "bare-gpu"
        name = "Bare"
        vendor = "nvidia"
        interconnect = "pcie"
        perf = None

    for ov, n, flag in (
        (Overrides(), 1, "--gpu-tflops"),
        (Overrides(gpu_tflops=100), 1, "--gpu-bandwidth"),
        (Overrides(gpu_tflops=100, gpu_bandwidth=1000), 2, "--link-bandwidth"),
    ):
        with pytest.raises(InputError) as e:
            resolve_hardware(Bare(), ov, num_gpus=n)
        assert flag in e.value.one_line() and "bare-gpu" in e.value.one_line()
    hw = resolve_hardware(Bare(), Overrides(gpu_tflops=100, gpu_bandwidth=1000, link_bandwidth=64), num_gpus=2)
    assert hw.peak_flops("fp8") == pytest.approx(100e12)  # falls back to bf16


def test_a_step_evaluates_on_numpy_arrays_as_on_points():
    """Issue 23 evaluates the step on arrays of tokens / contexts: every element equals the point evaluation."""
    np = pytest.importorskip("numpy")
    from kvplan.perf.efficiency import CLASSES
    from kvplan.perf.hardware import Hardware
    from kvplan.perf.ops import ModelOps
    from kvplan.perf.schedule import step

    hw = Hardware("g", "G", "nvidia", "hopper", "sxm", "nvlink", True, {"bf16": 989.0, "fp8": 1979.0}, 3350.0, 450.0)
    ops = ModelOps(
        family="gqa",
        hidden=4096,
        layers=32,
        dense_params=6.4e9,
        lm_head_params=5.3e8,
        expert_params=0.0,
        moe_layers=0,
        experts=0,
        topk=0,
        dense_bytes=8e9,
        expert_bytes=0.0,
        draft_layer_params=0.0,
        groups=(_gqa(q_heads=16, kv_bytes_per_key=4 * 256 * 2),),
        kernels_per_layer=13.0,
        tp=2,
        attn_tp=2,
        weight_dtype="fp8",
        expert_dtype="fp8",
        act_bytes_per_token=1e6,
    )
    eff = CLASSES["nvlink-datacenter"]
    tokens = np.array([1.0, 8.0, 64.0, 512.0])
    ctx = np.array([1024.0, 4096.0, 8192.0, 32768.0])
    arr = step(ops, hw, eff, tokens=tokens, requests=tokens, position=ctx, decode=True, graph=True).seconds
    for i in range(4):
        one = step(
            ops,
            hw,
            eff,
            tokens=float(tokens[i]),
            requests=float(tokens[i]),
            position=float(ctx[i]),
            decode=True,
            graph=True,
        ).seconds
        assert arr[i] == pytest.approx(one)


def test_inventory_sums_llama_8b_by_hand():
    """Llama-3.1-8B (32 layers, hidden 4,096, 32 / 8 heads of 128, intermediate 14,336, vocab 128,256, untied):
    per layer q 4096x4096 + k 1024x4096 + v 1024x4096 + o 4096x4096 = 41,943,040; MLP 3 x 4096 x 14336 =
    176,160,768; two norms 8,192 -> 218,112,000 x 32 = 6,979,584,000 dense; lm_head 128,256 x 4,096."""
    from kvplan.inputs.resolve import resolve_model
    from kvplan.perf.ops import inventory_sums

    spec = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    s = inventory_sums(spec.raw_config or spec.config, engine="sglang")
    assert s["dense"] == 32 * (41_943_040 + 176_160_768 + 8_192) == 6_979_584_000
    assert s["lm_head"] == 128_256 * 4_096
    assert s["moe_layers"] == 0 and s["experts"] == 0


def test_activation_bytes_by_hand():
    from kvplan.perf.ops import activation_bytes

    # Llama-3.1-8B on one GPU: 2 x (32 x 8 x 4096 + 32 x 14336 x 3) = 4,849,664 B per token
    assert activation_bytes(hidden=4096, inter=14336, inter_moe=0, moe_layers=0, layers=32, tp=1) == 4_849_664
    # DeepSeek-V4.1-Flash TP8, 40 MoE layers, hc_mult 4: 2 x (40 x 8 x 5120 + 40 x (6 x 2304 + 2304) x 3 / 8
    # + 40 x 6 x 4 x 5120) = 2 x (1,638,400 + 241,920 + 4,915,200) = 13,591,040 B per token
    got = activation_bytes(hidden=5120, inter=0, inter_moe=7 * 2304, moe_layers=40, layers=40, tp=8, hc_mult=4)
    assert got == 13_591_040


def test_dsv4_flash_groups_from_its_config():
    """DeepSeek-V4-Flash's compress_ratios: 2 window-only layers, 21 ratio-4 layers (indexer, top-512) and 20
    ratio-128 layers (all entries); one KV head of 512: 2 (512 + 512) FLOPs per key per head."""
    from kvplan.inputs.resolve import resolve_model
    from kvplan.perf.ops import _attention_groups

    spec = resolve_model("deepseek-ai/DeepSeek-V4-Flash")
    groups, _ = _attention_groups(spec, attn_tp=4, kv_dtype="fp8_e4m3", engine="sglang")
    by = {g.kind: g for g in groups}
    assert (by["dsv4 window"].layers, by["dsv4 ratio 4"].layers, by["dsv4 ratio 128"].layers) == (2, 21, 20)
    assert by["dsv4 ratio 4"].topk == 512 and by["dsv4 ratio 128"].topk == 0
    assert by["dsv4 ratio 4"].flops_per_key_prefill == 2 * (512 + 512)
    assert by["dsv4 ratio 4"].q_heads == 64 / 4
    assert by["dsv4 ratio 4"].index_layers == 21 and by["dsv4 ratio 128"].index_layers == 0
    assert by["dsv4 ratio 4"].index_flops_per_key == 2 * 64 * 128  # replicated: not divided by TP
