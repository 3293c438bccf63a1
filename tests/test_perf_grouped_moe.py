"""The grouped-MoE GEMM fraction of a GPU class (kvplan.perf.efficiency ``moe_compute`` / ``expert_compute``) and its
place in a step: the routed experts' GEMMs run at it, the dense GEMMs keep ``compute``.  Every expected number is
worked out in the comments."""

from __future__ import annotations

import pytest

from kvplan.perf.efficiency import CLASSES, CONSTANT_NAMES, Efficiency, expert_compute, scaled
from kvplan.perf.hardware import Hardware
from kvplan.perf.ops import ModelOps
from kvplan.perf.schedule import step

#: round numbers: 1,000 TFLOPS bf16, 1,000 GB/s, 100 GB/s link
HW = Hardware("toy", "Toy", "nvidia", "hopper", "sxm", "nvlink", True, {"bf16": 1000.0}, 1000.0, 100.0)


def _eff(moe: float) -> Efficiency:
    return Efficiency(
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
        moe_compute=moe,
    )


def _moe_ops() -> ModelOps:
    # 64 experts of 1e8 parameters, top-4, 10 MoE layers, TP1, no dense weights worth speaking of
    return ModelOps(
        family="gqa",
        hidden=1000,
        layers=10,
        dense_params=1e6,
        lm_head_params=0.0,
        expert_params=1e8,
        moe_layers=10,
        experts=64,
        topk=4,
        dense_bytes=2e6,
        expert_bytes=1.28e11,
        draft_layer_params=0.0,
        groups=(),
        kernels_per_layer=10.0,
        tp=1,
        attn_tp=1,
        weight_dtype="bf16",
        expert_dtype="bf16",
    )


def test_the_classes_fraction():
    # nvlink-datacenter declares 0.25 (the H100 grouped-MoE measurements in its sources); the others none, so their
    # one compute fraction applies to every GEMM
    assert expert_compute(CLASSES["nvlink-datacenter"]) == 0.25
    assert CLASSES["nvlink-datacenter"].compute == 0.60
    assert expert_compute(CLASSES["pcie-p2p"]) == 0.50
    assert expert_compute(CLASSES["amd-instinct"]) == 0.45
    assert any("moe_compute 0.25" in s for s in CLASSES["nvlink-datacenter"].sources)


def test_zero_means_the_compute_fraction():
    assert expert_compute(_eff(0.0)) == 0.5
    assert expert_compute(_eff(0.2)) == 0.2


def test_a_calibration_may_scale_it():
    assert "moe_compute" in CONSTANT_NAMES
    assert scaled(CLASSES["nvlink-datacenter"], {"moe_compute": 2.0}, label="x").moe_compute == pytest.approx(0.5)


def test_the_routed_experts_run_at_it_and_the_dense_part_does_not():
    # 8,192 tokens: expert FLOPs = 2 x 4 x 1e8 x 10 x 8,192 = 6.5536e13.  At 0.2 of 1,000 TFLOPS: 0.32768 s; the
    # bytes (all 64 experts touched: 1.28e11 B at 1,000 GB/s = 0.128 s) are less, so compute-bound.  At the class
    # compute 0.5 (moe_compute 0): 0.131072 s.  Dense: 2 x 1e6 x 8,192 = 1.6384e10 FLOPs at 0.5 of the peak =
    # 32.768 us (more than its 2e6 B / 1,000 GB/s = 2 us), the same in both: the dense GEMMs keep ``compute``.
    ops = _moe_ops()
    for moe, want in ((0.2, 0.32768), (0.0, 0.131072)):
        s = step(ops, HW, _eff(moe), tokens=8192.0, requests=1.0, position=4096.0, decode=False, graph=False)
        parts = {p.name: p for p in s.parts}
        routed = parts["routed experts"]
        assert routed.bound == "compute"
        assert float(routed.seconds) == pytest.approx(want, rel=1e-9)
        assert float(parts["dense linear"].seconds) == pytest.approx(32.768e-6, rel=1e-9)


def test_the_padded_rows_run_at_it_too():
    # 8,192 x 4 / 64 = 512 pairs per expert, 64-row blocks: lam = 512, sigma = sqrt(512 x 60 / 64) = 21.9, so the
    # 8 full blocks always fill and the 9th holds a row with P(n > 512) ~ 0.49: ~8.49 blocks x 64 / 512 = 1.061.
    # The padded line is the unpadded time x (factor - 1) at the same fraction: at 0.2 it is 2.5x what it is at 0.5
    ops = _moe_ops()
    name = "routed experts: rows padded to BLOCK_SIZE_M (moe_align_block_size)"
    got = {}
    for moe in (0.2, 0.5):
        s = step(ops, HW, _eff(moe), tokens=8192.0, requests=1.0, position=4096.0, decode=False, graph=False)
        got[moe] = float(next(p for p in s.parts if p.name == name).seconds)
    assert got[0.2] == pytest.approx(2.5 * got[0.5], rel=1e-9)
    assert got[0.5] / 0.131072 == pytest.approx(0.061, abs=0.005)


def test_a_decode_step_stays_memory_bound():
    # one token: 4 of 64 experts read, 1.28e11 x 4 / 64 = 8e9 B at 1,000 GB/s = 8 ms; FLOPs 2 x 4 x 1e8 x 10 = 8e9
    # at 0.2 of 1,000 TFLOPS = 40 us: the fraction does not move a memory-bound decode
    s = step(_moe_ops(), HW, _eff(0.2), tokens=1.0, requests=1.0, position=100.0, decode=True, graph=True)
    routed = next(p for p in s.parts if p.name == "routed experts")
    assert routed.bound == "memory"
    assert float(routed.seconds) == pytest.approx(8e-3, rel=1e-9)


def test_a_compute_bound_phase_calibrates_it_with_compute():
    from kvplan.perf.calibration import Calibration, apply, phase_constants, time_scaled

    # a compute-bound phase moves every fraction of peak together: 1 / lam each
    shares = {"compute": 0.7, "memory": 0.1, "communication": 0.1, "overhead": 0.1}
    assert phase_constants(shares, graph=True) == ("compute", "moe_compute", "attention")
    assert time_scaled(("compute", "moe_compute"), 1.25) == {"compute": 0.8, "moe_compute": 0.8}
    # nvlink-datacenter: 0.25 x 0.8 = 0.2 for the experts, 0.6 x 0.8 = 0.48 for the dense GEMMs
    cal = Calibration("nvlink-datacenter", "sglang", {"compute": 0.8, "moe_compute": 0.8})
    eff = apply(CLASSES["nvlink-datacenter"], cal)
    assert expert_compute(eff) == pytest.approx(0.2)
    assert eff.compute == pytest.approx(0.48)
    # pcie-p2p declares none: 0 x 0.8 stays 0, so its experts follow the scaled compute, 0.5 x 0.8 = 0.4
    cal = Calibration("pcie-p2p", "sglang", {"compute": 0.8, "moe_compute": 0.8})
    assert expert_compute(apply(CLASSES["pcie-p2p"], cal)) == pytest.approx(0.4)
