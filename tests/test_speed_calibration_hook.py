"""SpeedInputs(calibration=...): multipliers on the deployment's GPU-class efficiency constants (issue 22 item 5)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.perf.efficiency import CLASSES, CONSTANT_NAMES, Efficiency, scaled
from kvplan.planning.speed import SpeedInputs, speed

# a small model on the seed GPU: one chunk, fast to plan
_DEP = Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", input_len=8192, output_len=64)


def test_constant_names_are_the_numeric_fields():
    numeric = {f for f in Efficiency._fields if f not in ("gpu_class", "sources")}
    assert set(CONSTANT_NAMES) == numeric


def test_scaled_multiplies_only_the_named_constant():
    base = CLASSES["pcie-p2p"]
    s = scaled(base, {"link": 0.5}, label="x")
    assert s.link == pytest.approx(0.17)  # 0.34 x 0.5
    assert s.alpha_s == base.alpha_s and s.compute == base.compute and s.sources[-1] == "x"


def test_calibration_changes_the_phase_its_constant_drives():
    plain = speed(_DEP)
    cls = plain.gpu_class
    # halving the achievable compute fraction doubles the compute terms: prefill gets slower, never faster
    cal = SimpleNamespace(gpu_class=cls, engine=plain.engine, factors={"compute": 0.5, "attention": 0.5})
    slow = speed(_DEP, SpeedInputs(calibration=cal))
    assert slow.prefill_s > plain.prefill_s
    # an identity calibration is the plain answer
    same = speed(_DEP, SpeedInputs(calibration=SimpleNamespace(gpu_class=cls, engine=plain.engine, factors={})))
    assert same.prefill_s == plain.prefill_s and same.tpot_s == plain.tpot_s


def test_calibration_for_another_class_is_refused():
    cls = speed(_DEP).gpu_class
    other = "pcie-p2p" if cls != "pcie-p2p" else "nvlink-datacenter"
    cal = SimpleNamespace(gpu_class=other, engine="sglang", factors={"link": 1.1})
    with pytest.raises(InputError) as e:
        speed(_DEP, SpeedInputs(calibration=cal))
    assert f"calibrated for GPU class {other}, this deployment is {cls}" in str(e.value)
    assert e.value.field == "--calibration"


def test_unknown_constant_and_bad_factor_are_refused():
    cls = speed(_DEP).gpu_class
    for factors in ({"warp": 1.0}, {"link": 0.0}, {"link": float("nan")}):
        with pytest.raises(InputError):
            speed(_DEP, SpeedInputs(calibration=SimpleNamespace(gpu_class=cls, engine="sglang", factors=factors)))
