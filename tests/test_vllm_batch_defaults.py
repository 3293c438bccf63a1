"""The ``vllm serve`` batch defaults by release and GPU (``EngineArgs.get_batch_defaults``): the 160 GiB tier from
0.28 (absent in 0.27.0), GB10 on the small tier from 0.33 (absent in 0.32.0); 0.8 - 0.27 only 70 GiB / not A100."""

from __future__ import annotations

from kvplan.engines.vllm.releases import release_for
from kvplan.units import GiB

B200 = dict(max_model_len=8192, device_bytes=int(178.35 * GiB), gpu_name="NVIDIA B200")
GB10 = dict(max_model_len=8192, device_bytes=int(121.69 * GiB), gpu_name="NVIDIA GB10")
A100 = dict(max_model_len=8192, device_bytes=int(79.25 * GiB), gpu_name="NVIDIA A100-SXM4-80GB")


def _bs(version: str, gpu: dict) -> tuple[int, int]:
    b, s, _ = release_for(version).batch_defaults(**gpu)
    return b, s


def test_160_gib_tier_from_0_28():
    assert _bs("0.26.0", B200) == (8192, 1024)
    assert _bs("0.27.0", B200) == (8192, 1024)
    assert _bs("0.28.0", B200) == (16384, 1024)
    assert _bs("0.34.0", B200) == (16384, 1024)


def test_gb10_small_tier_from_0_33():
    assert _bs("0.21.0", GB10) == (8192, 1024)
    assert _bs("0.32.0", GB10) == (8192, 1024)
    assert _bs("0.33.0", GB10) == (2048, 256)


def test_a100_always_small():
    assert _bs("0.10.1", A100) == _bs("0.34.0", A100) == (2048, 256)
