"""Hand-derived checks of the speed model's per-family prefill and decode terms that tests/test_speed_model.py does
not cover: MoE FLOPs and weight bytes, sliding-window and DeepSeek-V4 decode KV reads, a whole decode step and a
whole prefill chunk of a toy dense model, and the scheduler queue (kvplan.perf.queue).  Every expected number is
worked out in the test's comments."""

from __future__ import annotations

import math

import pytest

from kvplan.perf.efficiency import Efficiency
from kvplan.perf.hardware import Hardware
from kvplan.perf.ops import AttnGroup, ModelOps, kv_read_bytes, linear_flops, weight_bytes
from kvplan.perf.queue import closed_loop_wait, first_wave_wait
from kvplan.perf.schedule import step

#: round numbers so every term can be done by hand: 1,000 TFLOPS bf16 (no fp8), 1,000 GB/s, 100 GB/s link
HW = Hardware("toy", "Toy", "nvidia", "hopper", "sxm", "nvlink", True, {"bf16": 1000.0}, 1000.0, 100.0)
#: efficiencies of 1 and 0.5, alpha 10 us, kernels 2 us (graph) / 10 us (eager), 1 ms per step
EFF = Efficiency(
    gpu_class="toy",
    compute=0.5,
    attention=0.5,
    memory=1.0,
    link=0.5,
    alpha_s=10e-6,
    kernel_graph_s=2e-6,
    kernel_eager_s=10e-6,
    step_s=1e-3,
    sources=(),
)


def _ops(**kw):
    base = dict(
        family="gqa",
        hidden=1000,
        layers=10,
        dense_params=1e9,
        lm_head_params=0.0,
        expert_params=0.0,
        moe_layers=0,
        experts=0,
        topk=0,
        dense_bytes=2e9,
        expert_bytes=0.0,
        draft_layer_params=0.0,
        groups=(),
        kernels_per_layer=10.0,
        tp=2,
        attn_tp=2,
        weight_dtype="bf16",
        expert_dtype="bf16",
    )
    base.update(kw)
    return ModelOps(**base)


def test_moe_flops_count_topk_experts_and_bytes_the_experts_touched():
    # 8 experts of 1e7 parameters, top-2, 4 MoE layers, TP2; 3 tokens:
    # expert FLOPs = 2 x 2 x 1e7 x 4 x 3 / 2 = 2.4e8; dense = 2 x 1e9 x 3 / 2 = 3e9
    ops = _ops(expert_params=1e7, moe_layers=4, experts=8, topk=2, expert_bytes=1.6e8)
    dense, expert = linear_flops(ops, tokens=3, lm_head_tokens=0)
    assert dense == pytest.approx(3e9)
    assert expert == pytest.approx(2.4e8)
    # bytes: 1 - (1 - 2/8)^3 = 1 - 0.421875 = 0.578125 of the rank's 1.6e8 expert bytes = 9.25e7
    b_dense, b_exp = weight_bytes(ops, tokens=3)
    assert b_dense == pytest.approx(2e9)
    assert b_exp == pytest.approx(9.25e7)
    # one token: exactly its 2 of 8 experts
    assert weight_bytes(ops, tokens=1)[1] == pytest.approx(1.6e8 * 2 / 8)


def test_sliding_window_decode_reads_only_the_window():
    # 10 sliding layers, window 4,096, 1,024 B per key per rank; 2 requests at context 100,000:
    # 2 x 10 x 4,096 x 1,024 = 83,886,080 B (a full layer would read 100,000 keys)
    g = AttnGroup("sliding", 10, 8, 512.0, 512.0, 1024.0, window=4096)
    assert kv_read_bytes(g, requests=2, context=100_000) == pytest.approx(83_886_080)
    # below the window it reads what there is: 2 x 10 x 1,000 x 1,024 = 20,480,000
    assert kv_read_bytes(g, requests=2, context=1_000) == pytest.approx(20_480_000)


def test_dsv4_decode_reads_window_plus_compressed_pool():
    # a ratio-128 layer (dense over the pool) with a 128-token window, 512 B per key, 20 layers, at 131,072:
    # keys = 131,072 / 128 + 128 = 1,152; bytes = 20 x 1,152 x 512 = 11,796,480 per request
    g = AttnGroup("dsv4 ratio 128", 20, 8, 2048.0, 2048.0, 512.0, ratio=128, extra_keys=128)
    assert kv_read_bytes(g, requests=1, context=131_072) == pytest.approx(11_796_480)
    # a ratio-4 layer with top-512: 512 + 128 keys at any long context: 21 x 640 x 512 = 6,881,280
    g4 = AttnGroup("dsv4 ratio 4", 21, 8, 2048.0, 2048.0, 512.0, ratio=4, topk=512, extra_keys=128)
    assert kv_read_bytes(g4, requests=1, context=1_000_000) == pytest.approx(6_881_280)


def test_decode_step_of_a_dense_model_by_hand():
    """One decode step, 4 requests at context 1,000, graphs on, TP2:

    * dense linear: 2 x 1e9 x 4 / 2 = 4e9 FLOPs at 1e15 x 0.5 = 8 us; 2e9 B at 1e12 B/s = 2 ms -> memory, 2 ms;
    * attention (10 layers, 4 query heads per rank, 512 FLOPs / key, 256 B / key): 10 x 4 x 4 x 1,000 x 512 =
      8.192e7 FLOPs (0.16 us); 4 x 10 x 1,000 x 256 = 10,240,000 B -> 10.24 us, memory;
    * TP2 all-reduce x20 of 4 x 1,000 x 2 = 8,000 B: 10 us + 2 x 1/2 x 8,000 / 50e9 = 10.16 us each -> 203.2 us;
    * kernels 10 x 10 x 2 us = 200 us; step 1 ms.
    Total 2,000 + 10.24 + 203.2 + 200 + 1,000 = 3,413.44 us.
    """
    g = AttnGroup("full", 10, 4, 512.0, 512.0, 256.0)
    s = step(_ops(groups=(g,)), HW, EFF, tokens=4.0, requests=4.0, position=1000.0, decode=True, graph=True)
    by = {p.name.split(" x")[0].split(":")[0]: p for p in s.parts}
    assert by["dense linear"].seconds == pytest.approx(2e-3) and by["dense linear"].bound == "memory"
    assert by["attention"].seconds == pytest.approx(10.24e-6) and by["attention"].bound == "memory"
    assert by["TP2 all-reduce"].seconds == pytest.approx(20 * 10.16e-6)
    assert by["kernels"].seconds == pytest.approx(200e-6)
    assert s.seconds == pytest.approx(3413.44e-6)
    assert s.bound() == "memory"


def test_prefill_chunk_of_a_dense_model_by_hand():
    """One prefill chunk of 1,000 tokens at mean position 500 (the first chunk), eager, TP2:

    * dense linear: 2 x 1e9 x 1,000 / 2 = 1e12 FLOPs at 5e14 = 2 ms (bytes 2 ms): compute, 2 ms;
    * attention: 10 x 1,000 x 4 x 500 x 512 = 1.024e10 FLOPs at 5e14 = 20.48 us;
      KV bytes 10 x (500 + 500) x 256 = 2.56 MB -> 2.56 us: compute;
    * TP2 all-reduce x20 of 1,000 x 1,000 x 2 = 2e6 B: 10 us + 2e6 / 50e9 = 50 us each -> 1 ms;
    * kernels 100 x 10 us = 1 ms; step 1 ms.
    Total 2 + 0.02048 + 1 + 1 + 1 = 5.02048 ms, communication and overhead 1 ms each, compute-bound.
    """
    g = AttnGroup("full", 10, 4, 512.0, 512.0, 256.0)
    s = step(_ops(groups=(g,)), HW, EFF, tokens=1000.0, requests=1.0, position=500.0, decode=False, graph=False)
    assert s.seconds == pytest.approx(5.02048e-3)
    b = s.by_bound()
    assert b["compute"] == pytest.approx(2.02048e-3)
    assert b["communication"] == pytest.approx(1e-3)
    assert b["overhead"] == pytest.approx(2e-3)
    assert s.bound() == "compute"


def test_closed_loop_wait_by_hand():
    # C = 2, t = 0.1 s, Z = 0.9 s: R^2 + 0.7 R - 0.09 = 0 -> R = (-0.7 + sqrt(0.85)) / 2; wait R - t = 10.98 ms
    want = (-0.7 + math.sqrt(0.85)) / 2 - 0.1
    assert closed_loop_wait(clients=2, service_s=0.1, think_s=0.9) == pytest.approx(want, rel=1e-6)
    assert closed_loop_wait(clients=1, service_s=0.1, think_s=0.9) == 0.0
    # saturated: 100 clients of 0.1 s prefill each and 1 s elsewhere: the queue is the bottleneck, throughput
    # ~ 1 / t = 10 req/s, so a cycle is ~ C / 10 = 10 s and the wait ~ 10 - 1 - 0.1 = 8.9 s (Schweitzer's
    # approximation lands within a few per cent of that asymptote)
    assert closed_loop_wait(clients=100, service_s=0.1, think_s=1.0) == pytest.approx(8.9, rel=0.05)
    # light load: 4 clients, t = 10 ms, Z = 10 s: ~ (C - 1) x t^2 / Z = 3 x 1e-4 / 10 = 30 us
    assert closed_loop_wait(clients=4, service_s=0.01, think_s=10.0) == pytest.approx(3e-5, rel=0.05)


def test_first_wave_wait_by_hand():
    # B = 16 of N = 32 at once, 0.12 s of batched prefill each: 16 / 32 x 15 / 2 x 0.12 = 0.45 s
    assert first_wave_wait(burst=16, num_prompts=32, per_request_s=0.12) == pytest.approx(0.45)
    assert first_wave_wait(burst=1, num_prompts=32, per_request_s=0.12) == 0.0


def test_dsv41_prefill_chunk_attention_and_indexer_flops():
    """A 2,048-token chunk at mean position 65,536 on V4.1's ratio-1 group (20 layers, 8 query heads per rank,
    2 (512 + 512) = 2,048 FLOPs per key, top-512 of the pool + the 128-token window; 5 indexer layers of 32 heads x
    128 dims, 4 of them capped at 16,384 candidates):

    * attention: 20 x 2,048 x 8 x (512 + 128) x 2,048 = 4.294967296e11;
    * indexer: 2,048 x (2 x 32 x 128) x (65,536 + 4 x 16,384) = 2,048 x 8,192 x 131,072 = 2.199023255552e12
      (replicated: not divided over TP);
    * logits: 2,048 x 131,072 x 8 B = 2,147,483,648 B.
    """
    from kvplan.perf.ops import attention_flops, index_logit_bytes

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
    want = 20 * 2048 * 8 * 640 * 2048 + 2048 * 8192 * 131_072
    assert attention_flops(g, tokens=2048, position=65_536, decode=False) == pytest.approx(want)
    assert index_logit_bytes(g, tokens=2048, position=65_536) == pytest.approx(2_147_483_648)


def test_dsa_prefill_uses_topk_keys_and_scans_every_key():
    # DSA prefill (non-absorbed 2 (128 + 64 + 128) = 640 per key), 16 heads per rank, top-2,048, one layer; a
    # 1,000-token chunk at mean position 50,000: 1,000 x 16 x 2,048 x 640 + 1,000 x (2 x 64 x 128 / 8) x 50,000
    from kvplan.perf.ops import attention_flops

    g = AttnGroup("dsa", 1, 16, 640.0, 2176.0, 576.0, topk=2048, index_flops_per_key=2.0 * 64 * 128 / 8, index_layers=1)
    want = 1000 * 16 * 2048 * 640 + 1000 * 2048 * 50_000
    assert attention_flops(g, tokens=1000, position=50_000, decode=False) == pytest.approx(want)


def test_prefill_service_with_attention_dp_by_hand():
    # a 100 ms prefill: 60 ms experts, 20 ms attention, 10 ms collectives, 10 ms kernels; with 4 attention-DP ranks
    # prefilling side by side only attention and overhead run in parallel: 60 + 10 + (20 + 10) / 4 = 77.5 ms
    from kvplan.perf.queue import prefill_service_s
    from kvplan.perf.schedule import Part, Step

    s = Step(
        [
            Part("routed experts", seconds=0.060, bound="compute"),
            Part("attention: mla x61", seconds=0.020, bound="compute"),
            Part("DP-attention gather/scatter over 4 x61", seconds=0.010, bound="communication"),
            Part("kernels: 1,000 x 10 us (eager launch)", seconds=0.010, bound="overhead"),
        ]
    )
    assert prefill_service_s(s, dp=4) == pytest.approx(0.0775)
    assert prefill_service_s(s, dp=1) == pytest.approx(0.100)


def test_nccl_protocol_choice_on_pcie_by_hand():
    """8 PCIe GPUs at 21.76 GB/s bus bandwidth (0.34 x 64), alpha 20 us; b = 2 x 7/8 x bytes / busBW:

    * a decode message, 1 token x 5,120 x 2 B = 10,240 B: b = 0.8235 us; LL 20 + 4 x 0.8235 = 23.29 us, Simple
      8.4 + 14 x 5.7 + 0.8235 = 89.02 us -> LL, 23.29 us;
    * a 2,048-token chunk, 20,971,520 B: b = 1,686.59 us; LL 20 + 6,746.35 = 6,766.35 us, Simple 88.2 + 1,686.59 =
      1,774.79 us -> Simple.
    """
    from kvplan.perf.comm import nccl_allreduce_time, nccl_only

    b_small = 1.75 * 10_240 / 21.76e9
    t = nccl_allreduce_time(nbytes=10_240, ranks=8, bus_gbs=21.76, alpha_s=20e-6)
    assert t == pytest.approx(20e-6 + 4 * b_small)
    assert t == pytest.approx(23.29e-6, rel=1e-3)
    b_big = 1.75 * 20_971_520 / 21.76e9
    t = nccl_allreduce_time(nbytes=20_971_520, ranks=8, bus_gbs=21.76, alpha_s=20e-6)
    assert t == pytest.approx(88.2e-6 + b_big)
    assert t == pytest.approx(1774.79e-6, rel=1e-4)
    assert nccl_allreduce_time(nbytes=1e9, ranks=1, bus_gbs=1.0, alpha_s=1.0) == 0.0
    # the engines' custom all-reduce covers two GPUs and NVLink meshes; NCCL carries everything beyond
    assert nccl_only(link="pcie", ranks=8) and nccl_only(link="pcie", ranks=4)
    assert not nccl_only(link="pcie", ranks=2) and not nccl_only(link="nvlink", ranks=8)
    assert not nccl_only(link="xgmi", ranks=8)


# ---------------------------------------------------------------------------------------------- few-row GEMMs


def test_narrow_gemm_one_shape_by_hand():
    """DeepSeek-V4.1-Flash's shared-expert gate_up on one rank of TP8: n = 4,608 / 8 = 576 columns, k = 5,120, fp8
    (1 B per parameter: 2,949,120 B), 40 layers, one decode token.  Bandwidth 1,000 GB/s (memory 1.0), 40 GB/s per
    128 x 128 tile.
    128 x 128 tiles: ceil(576 / 128) = 5 tiles x 1 row tile -> 200 GB/s; per layer 2,949,120 / 200e9 = 14.746 us
    instead of 2,949,120 / 1e12 = 2.949 us: +11.796 us, x 40 layers = 471.9 us.
    32 x 32 tiles (the checkpoint's weight_block_size, SGLang's Triton default config): the tile streams at
    40 x (32 x 32) / (128 x 128) = 2.5 GB/s; ceil(576 / 32) = 18 tiles -> 45 GB/s; 2,949,120 / 45e9 = 65.536 us,
    +62.587 us per layer, x 40 = 2,503.5 us.
    A prefill chunk of 2,048 rows: 32 row tiles x 18 = 576 tiles x 2.5 GB/s = 1,440 GB/s > 1,000: nothing added."""
    from kvplan.perf.ops import Gemm, narrow_gemm_seconds

    g = Gemm(n=576, nbytes=2_949_120.0, count=40, quantized=True)
    ops = _ops(gemms=(g,))
    t = narrow_gemm_seconds(ops, tokens=1.0, bw=1e12, tile_gbs=40.0)
    assert t == pytest.approx(40 * (2_949_120 / 200e9 - 2_949_120 / 1e12))
    assert t == pytest.approx(471.9e-6, rel=1e-3)
    ops32 = _ops(gemms=(g,), gemm_tile=(32, 32))
    t32 = narrow_gemm_seconds(ops32, tokens=1.0, bw=1e12, tile_gbs=40.0)
    assert t32 == pytest.approx(2_503.5e-6, rel=1e-3)
    assert narrow_gemm_seconds(ops32, tokens=2048.0, bw=1e12, tile_gbs=40.0) == 0.0
    # a bf16 weight (cuBLAS splits K for few rows) and a class with no measurement add nothing
    assert (
        narrow_gemm_seconds(_ops(gemms=(Gemm(n=576, nbytes=5.9e6, count=40),)), tokens=1.0, bw=1e12, tile_gbs=40.0) == 0
    )
    assert narrow_gemm_seconds(ops, tokens=1.0, bw=1e12, tile_gbs=0.0) == 0.0


def test_narrow_gemm_routed_experts_count_the_experts_touched():
    """A routed-expert gate_up of n = 4,608 (EP: whole experts on a rank), 12,533,760 B each, 40 layers; 48 experts
    on the rank, top-6 of 384: one token touches 48 x 6 / 384 = 0.75 experts of the rank, so its grid is
    ceil(4,608 / 128) = 36 tiles x max(0.75, 1) = 36 tiles x 40 GB/s = 1,440 GB/s > 1,000 GB/s: nothing added.
    At a 4 GB/s tile rate: 36 x 4 = 144 GB/s; bytes 0.75 x 12,533,760 x 40 = 376,012,800 B:
    376,012,800 x (1 / 144e9 - 1 / 1e12) = 2,235.2 us."""
    from kvplan.perf.ops import Gemm, narrow_gemm_seconds

    g = Gemm(n=4608, nbytes=12_533_760.0, count=40, expert=True, quantized=True)
    ops = _ops(gemms=(g,), experts=384, topk=6, local_experts=48)
    assert narrow_gemm_seconds(ops, tokens=1.0, bw=1e12, tile_gbs=40.0) == pytest.approx(0.0, abs=1e-12)
    t = narrow_gemm_seconds(ops, tokens=1.0, bw=1e12, tile_gbs=4.0)
    assert t == pytest.approx(376_012_800 * (1 / 144e9 - 1 / 1e12), rel=1e-9)
    assert t == pytest.approx(2_235.2e-6, rel=1e-3)


def test_rank_gemms_split_by_group_and_price_by_component():
    """Two signatures of one component "mlp" (bytes 3,000,000 on the rank): gate_up 4,608 x 5,120 split over
    TP (out) -> n = 576 at TP8, 2,949,120 params; down 5,120 x 2,304 split over its input -> n = 5,120, k = 288,
    1,474,560 params; 40 layers each: 176,947,200 params -> 3e6 / 176,947,200 B per param = 0.01695 (< 1.9:
    quantized); gate_up's bytes 2,949,120 x that = 50,000 B."""
    from kvplan.perf.ops import rank_gemms

    sums = {"gemm|mlp|4608|5120|out|tp|1|0|1": 40.0, "gemm|mlp|5120|2304|in|tp|1|0|1": 40.0}
    gs = rank_gemms(sums, {"mlp": 3_000_000}, groups={"tp": 8}, ep=1)
    by_n = {g.n: g for g in gs}
    assert set(by_n) == {576, 5120}
    assert by_n[576].nbytes == pytest.approx(50_000.0)
    assert by_n[5120].nbytes == pytest.approx(25_000.0)
    assert all(g.count == 40 and g.quantized and not g.expert for g in gs)


def test_custom_allreduce_on_two_pcie_gpus():
    """SGLang 0.5.23 should_custom_ar: two GPUs (or a full NVLink mesh), up to 8 MB.  Two PCIe P2P cards, a decode
    message of 10,240 B at 21.76 GB/s bus bandwidth: 8.4 us + 1 x 10,240 / 21.76e9 = 8.4 + 0.47 = 8.87 us (NCCL's
    alpha of 20 us would give 20.47); 8 cards: NCCL (False); 16 MB: NCCL (False); no P2P: False."""
    from kvplan.perf.comm import custom_allreduce_pcie
    from kvplan.perf.schedule import collective_time

    assert custom_allreduce_pcie(link="pcie", p2p=True, ranks=2, nbytes=10_240)
    assert not custom_allreduce_pcie(link="pcie", p2p=True, ranks=8, nbytes=10_240)
    assert not custom_allreduce_pcie(link="pcie", p2p=True, ranks=2, nbytes=16 * 2**20)
    assert not custom_allreduce_pcie(link="pcie", p2p=False, ranks=2, nbytes=10_240)
    hw = Hardware("toy", "Toy", "nvidia", "blackwell", "pcie", "pcie", True, {"bf16": 1000.0}, 1000.0, 64.0)
    eff = Efficiency(**{**EFF.to_dict(), "link": 0.34, "alpha_s": 20e-6})
    assert collective_time(hw, eff, nbytes=10_240, ranks=2) == pytest.approx(8.4e-6 + 10_240 / 21.76e9)


def test_gemm_signatures_fuse_as_the_engines_do():
    """Llama-3.1-8B: q (32 heads) + k (8) + v (8) of head_dim 128 over hidden 4,096 fuse into one GEMM of 48 heads
    (6,144 rows), gate + up (2 x 14,336) into one of 28,672 rows; o (4,096 x 4,096) and down (4,096 x 14,336) are
    split over their input and stay apart: 4 GEMMs, each in all 32 layers."""
    from kvplan.inputs.resolve import resolve_model
    from kvplan.perf.ops import inventory_sums

    spec = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    sums = inventory_sums(spec.raw_config or spec.config, engine="sglang")
    gemms = {k: v for k, v in sums.items() if k.startswith("gemm|")}
    assert gemms == {
        "gemm|attention|48|4096|heads|attn|128|0|1": 32.0,
        "gemm|attention|4096|4096|in|attn|1|0|1": 32.0,
        "gemm|dense_mlp|28672|4096|out|dense|1|0|1": 32.0,
        "gemm|dense_mlp|4096|14336|in|dense|1|0|1": 32.0,
    }
