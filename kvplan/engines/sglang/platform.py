"""SGLang's platform names for a GPU preset's vendor (the ``is_cuda()`` / ``is_hip()`` ... branches of its rules)."""

from __future__ import annotations

_PLATFORMS = {
    "amd": "hip",
    "hip": "hip",
    "rocm": "hip",
    "intel": "xpu",
    "xpu": "xpu",
    "npu": "npu",
    "ascend": "npu",
    "musa": "musa",
    "cpu": "cpu",
}


def platform_of(vendor: str) -> str:
    """SGLang's platform for a preset vendor: cuda (NVIDIA, and the default), hip, xpu, npu, musa or cpu.

    Example: ``platform_of("amd") == "hip"``; ``platform_of("nvidia") == "cuda"``; ``platform_of("") == "cuda"``.

    Source: sgl-project/sglang python/sglang/srt/utils/common.py ``is_cuda`` / ``is_hip`` / ``is_xpu`` /
    ``is_npu`` / ``is_musa`` / ``is_cpu`` (the platform checks every rule branches on), v0.5.23.
    """
    return _PLATFORMS.get((vendor or "").strip().lower(), "cuda")
