"""NCCL's NVLS buffers in vLLM's cold non-torch term (kvplan.engines.runtime.nccl_nvls_buffer_bytes), by hand from
NVIDIA/nccl v2.26.2-1 ``src/transport/nvls.cc``: NVLS only on more than two GPUs of a multicast (NVSwitch) fabric,
16 channels on SM90 and 32 on SM100, ``nChannels x 2 x (128 KiB chunk x 8 steps) x nHeads`` per GPU."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kvplan.engines.runtime import nccl_nvls_buffer_bytes
from kvplan.engines.vllm.budget import vllm_default_non_torch_bytes
from kvplan.engines.vllm.planner import _nvls_multicast_sm

MiB = 1 << 20


@pytest.mark.parametrize(
    ("ranks", "sm", "multicast", "want"),
    [
        (4, 9, True, 16 * 2 * MiB * 4),  # 4x H100 SXM: 128 MiB
        (8, 9, True, 16 * 2 * MiB * 8),  # 8x H100 SXM: 256 MiB
        (4, 10, True, 32 * 2 * MiB * 4),  # 4x B200: 256 MiB
        (2, 9, True, 0),  # NCCL turns NVLS off on two GPUs
        (4, 8, True, 0),  # A100: no multicast
        (4, 9, False, 0),  # PCIe / bridged NVL cards
    ],
)
def test_nvls_bytes_by_hand(ranks: int, sm: int, multicast: bool, want: int):
    assert nccl_nvls_buffer_bytes(ranks=ranks, sm_major=sm, multicast=multicast) == want


def test_vllm_non_torch_adds_nvls_only_above_two_ranks():
    """0.10.0 (snapshot before NCCL): TP4 on an NVSwitch H100 = 128 MiB + 1.35 GiB + 128 MiB; TP2 has no NVLS (the
    H200 TP2 0.10.2 log's 1.38 GiB is modelled 1.47 either way).  0.26 on B200 TP4: 128 + 512 + 256 MiB = 0.875 GiB
    (the 184-GiB Blackwell TP4 log prints 0.95)."""
    from kvplan.engines.runtime import NVLINK_COMM_BYTES

    kw: dict[str, Any] = dict(interconnect="nvlink", nvls_multicast_sm=9)
    assert vllm_default_non_torch_bytes(tp_size=4, engine_version="0.10.0", **kw) == (
        128 * MiB + NVLINK_COMM_BYTES + 128 * MiB
    )
    assert vllm_default_non_torch_bytes(tp_size=2, engine_version="0.10.0", **kw) == 128 * MiB + NVLINK_COMM_BYTES
    b200 = vllm_default_non_torch_bytes(tp_size=4, engine_version="0.26.0", interconnect="nvlink", nvls_multicast_sm=10)
    assert b200 == (128 + 512 + 256) * MiB
    assert vllm_default_non_torch_bytes(tp_size=4, engine_version="0.26.0", interconnect="nvlink") == 640 * MiB


@pytest.mark.parametrize(
    ("gpu", "want"),
    [("h100-sxm", 9), ("b200", 10), ("gb200", 10), ("h100-nvl", None), ("a100-sxm-80gb", None), ("l40s", None)],
)
def test_which_presets_are_nvswitch_fabrics(gpu: str, want: int | None):
    inp: Any = SimpleNamespace(gpu_name=gpu, interconnect=None)
    assert _nvls_multicast_sm(inp) == want


@pytest.mark.parametrize(("tp", "named"), [(4, True), (2, False)])
def test_the_plan_names_the_nvls_buffers_and_their_lever(tp: int, named: bool):
    from kvplan.api import fit
    from kvplan.deployment import Deployment

    dep = Deployment(engine="vllm", engine_version="0.10.0", model="Qwen/Qwen3-235B-A22B-FP8", gpu="h100-sxm", tp=tp)
    notes = [a for a in fit(dep).assumptions if "NVLS" in a]
    assert bool(notes) is named
    if named:
        assert "128 MiB" in notes[0] and "NCCL_NVLS_ENABLE=0" in notes[0]
