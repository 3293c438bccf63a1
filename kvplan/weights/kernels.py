"""The MoE kernel an engine picks by default on a GPU, and the expert-buffer padding that choice brings.

MXFP4 expert buffers are allocated at the kernel's alignment (:data:`kvplan.weights.sharding.MXFP4_EXPERT_PADDING`),
so the same checkpoint takes more memory on some GPUs.  :func:`vllm_mxfp4_backend` restates vLLM's default choice
for gpt-oss (``quant_method: mxfp4``, no ``--moe-backend``, no LoRA, no ``VLLM_MXFP4_USE_MARLIN``):

* v0.12 and later (read in v0.25.1 ``model_executor/layers/fused_moe/oracle/mxfp4.py select_mxfp4_moe_backend``
  over ``_get_priority_backends_for_gpt_oss``, BF16-activation variants first): FlashInfer TRTLLM on SM100
  (``TrtLlmMxfp4Experts*._supports_current_device``: ``is_device_capability_family(100)``, FlashInfer is a
  dependency of the wheel); OAI ``triton_kernels`` on SM90 (``_triton_kernel_moe_supports_current_device``:
  ``(9, 0) <= capability < (11, 0)``; the wheel vendors ``vllm/third_party/triton_kernels`` from v0.12.0);
  FlashInfer CUTLASS only for SM90 and it comes after Triton; Marlin otherwise (SM80/86/89, SM110, SM120:
  ``MarlinExperts._supports_current_device`` needs capability 7.5); on ROCm AITER when enabled, else
  ``triton_kernels``, both rounded to 256 (``mxfp4_round_up_hidden_size_and_intermediate_size``, ``is_rocm``).
* v0.11 and earlier (read in v0.11.1 ``model_executor/layers/quantization/mxfp4.py get_mxfp4_backend``): FlashInfer
  on SM100; on SM90 and every other CUDA GPU Marlin, since ``triton_kernels`` is not installed with the wheel
  (``has_triton_kernels`` only finds a separately installed package); on ROCm ``triton_kernels`` aligned to 128
  (256 on gfx950, ``get_padding_alignment``).

The OAI Triton path keeps more than the padded buffers (v0.25.1 ``fused_moe/oracle/mxfp4.py
convert_gpt_oss_weight_to_mxfp4_moe_kernel_format``, the ``TRITON_BACKENDS`` branch; v0.12.0
``quantization/mxfp4.py Mxfp4MoEMethod.process_weights_after_loading``): the expert biases become fp32; on SM90 the
swizzled scales (``triton_kernels/tensor_details/layout_details/hopper_scale.py HopperMXScaleLayout.swizzle_data``)
pad their rows to a multiple of ``2 * num_warps * 2 * 8 = 256``; and before v0.25 the checkpoint-layout scales stay
registered next to the swizzled copy (v0.12.0 deletes only the weights; v0.25.1 deletes weights and scales).  The
first release that frees them is taken as 0.25.0 (0.24.0 has no delete, 0.25.1 has: colleague's grep of the 0.24.0
wheel, not re-read here).  :func:`triton_expert_extra_bytes` prices these per MoE layer.

SGLang keeps more than the packed experts on one path: its compressed-tensors WNA16 MoE method
(``layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16_moe.py``, v0.5.9) creates, next to the
int32-packed ``w13`` / ``w2`` and their scales, GPTQ act-order buffers per MoE layer: ``w13_weight_g_idx`` and
``w13_g_idx_sort_indices`` (int32, ``experts x hidden``), ``w2_weight_g_idx`` and ``w2_g_idx_sort_indices`` (int32,
``experts x intermediate per rank``) and ``w13_weight_shape`` / ``w2_weight_shape`` (``experts x 2`` in the model
dtype).  On CUDA the Marlin method (``CompressedTensorsWNA16MoE.process_weights_after_loading``) replaces the four
index buffers with empty ones when the checkpoint has no group act order; on ROCm
(``CompressedTensorsWNA16TritonMoE``, chosen by ``CompressedTensorsConfig.get_moe_method`` under ``is_hip``) the
conversion only transposes the weights and scales to the Triton kernel's layout, so the buffers stay allocated
(the ROCm route came with sgl-project/sglang PR 17863, merged 2026-01-28, because Marlin is NVIDIA-only; the
0.5.8.post1 wheel does not have it, while a ROCm dev image of 2026-02-18 labelled 0.5.8.post1 loads Kimi-K2.5's INT4
experts, so it must).  :func:`wna16_moe_index_bytes` prices them per MoE layer.

SGLang v0.5.23 picks by GPU too (``arg_groups/model_overrides/gpt_oss.py``: FlashInfer MXFP4 on SM100 / SM120,
``triton_kernel`` elsewhere when installed, by driver version on Blackwell); kvplan does not model that choice, so
SGLang pads only when ``expert_padding`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import InputError
from kvplan.version import parse_version

__all__ = [
    "VLLM_TRITON_FREES_SCALES_SINCE",
    "VLLM_TRITON_KERNELS_SINCE",
    "KernelChoice",
    "TritonExtras",
    "release_triple",
    "triton_expert_extra_bytes",
    "vllm_mxfp4_backend",
    "vllm_triton_extras",
    "wna16_moe_index_bytes",
]

#: the first vLLM release whose wheel vendors triton_kernels (vllm-project/vllm PR 28788; absent in 0.11.1)
VLLM_TRITON_KERNELS_SINCE = (0, 12, 0)
#: the first vLLM release whose Triton MXFP4 path deletes the checkpoint-layout scales (assumed, see above)
VLLM_TRITON_FREES_SCALES_SINCE = (0, 25, 0)
_NEWEST = (99, 0, 0)
_HOPPER_SCALE_ROWS = 256  # 2 * num_warps(8) * 2 * 8, HopperMXScaleLayout.swizzle_data


def release_triple(version: str | None) -> tuple[int, int, int]:
    """The first three numbers of :func:`kvplan.version.parse_version` (``"0.11.1"`` -> ``(0, 11, 1)``; ``0.10.1.1``
    / ``0.12.0rc1`` -> ``(0, 10, 1)`` / ``(0, 12, 0)``); None -> the newest modelled.  InputError for a string that
    is no version (``"latest"``)."""
    if version is None:
        return _NEWEST
    parsed = parse_version(str(version))
    if parsed is None:
        raise InputError(f"engine version {version!r} is not a release number like 0.25.1", field="engine_version")
    return parsed.triple


@dataclass(frozen=True)
class TritonExtras:
    """What vLLM's OAI Triton MXFP4 path keeps beyond the padded expert buffers."""

    hopper_scale_rows: bool  # swizzled scale rows padded to 256 (SM90)
    kept_scales: bool  # the checkpoint-layout scales stay next to the swizzled copy (before 0.25)


@dataclass(frozen=True)
class KernelChoice:
    """The backend (a key of MXFP4_EXPERT_PADDING, or None when no default is known), the sentence that says so,
    and for the Triton path what it keeps besides the buffers."""

    backend: str | None
    note: str
    triton: TritonExtras | None = None


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def vllm_triton_extras(*, engine_version: str | None, sm_major: int | None) -> TritonExtras:
    """What the Triton path of ``engine_version`` keeps on a GPU of ``sm_major``: scale rows padded on SM90,
    checkpoint scales kept before 0.25."""
    return TritonExtras(
        hopper_scale_rows=sm_major == 9, kept_scales=release_triple(engine_version) < VLLM_TRITON_FREES_SCALES_SINCE
    )


def triton_expert_extra_bytes(*, extras: TritonExtras, experts: int, hidden: int, inter: int) -> int:
    """Bytes one MoE layer of one rank holds on vLLM's Triton MXFP4 path beyond its (padded) buffers, for
    ``experts`` local experts, ``hidden`` and the rank's padded ``inter``mediate size.

    Formula, per expert: biases fp32 instead of bf16: ``+ 2 * (2 * inter + hidden)``; SM90 scale rows to 256:
    ``+ (round_up(2 * inter, 256) - 2 * inter) * ceil(hidden / 32) + (round_up(hidden, 256) - hidden) *
    ceil(inter / 32)``; kept checkpoint scales (before 0.25): ``+ 2 * inter * ceil(hidden / 32) + hidden *
    ceil(inter / 32)``.

    Example: gpt-oss-120b, TP1 (128 experts, hidden 2880, inter 2880), 0.14 on an H100: 128 * (17,280 + 11,520 +
    17,280 + 777,600) = 105,431,040 B per layer, 36 layers = 3.53 GiB.
    """
    per = 2 * (2 * inter + hidden)
    w13_scales, w2_scales = 2 * inter * -(-hidden // 32), hidden * -(-inter // 32)
    if extras.hopper_scale_rows:
        per += (_round_up(2 * inter, _HOPPER_SCALE_ROWS) - 2 * inter) * -(-hidden // 32)
        per += (_round_up(hidden, _HOPPER_SCALE_ROWS) - hidden) * -(-inter // 32)
    if extras.kept_scales:
        per += w13_scales + w2_scales
    return experts * per


def wna16_moe_index_bytes(*, experts: int, hidden: int, inter: int, dtype_bytes: int) -> int:
    """Bytes of the act-order buffers one MoE layer of one rank keeps on SGLang's ROCm WNA16 path (module docstring):
    ``experts`` local experts, ``hidden`` size, the rank's ``inter``mediate size, ``dtype_bytes`` of the model dtype.

    Formula: ``experts * (2 * 4 * hidden + 2 * 4 * inter + 2 * 2 * dtype_bytes)`` (two int32 ``experts x hidden``
    buffers, two int32 ``experts x inter``, two ``experts x 2`` shape tensors).

    Example: Kimi-K2.5 at TP8 (384 experts, hidden 7,168, moe_intermediate_size 2,048 / 8 = 256, bf16):
    384 * (57,344 + 2,048 + 8) = 22,809,600 B per MoE layer; its 60 MoE layers keep 1,368,576,000 B (1.27 GiB).
    """
    return experts * (2 * 4 * hidden + 2 * 4 * inter + 2 * 2 * dtype_bytes)


def _cuda_choice(sm_major: int, new: bool) -> tuple[str, str]:
    if sm_major == 10:
        return "vllm-trtllm", "FlashInfer TRTLLM MXFP4 on SM100"
    if sm_major == 9 and new:
        return "vllm-triton", "OAI triton_kernels on SM90 (vendored in the wheel since 0.12)"
    if sm_major == 9:
        return "vllm-marlin", "Marlin on SM90 (triton_kernels not installed with the wheel before 0.12)"
    return "vllm-marlin", f"Marlin on SM{sm_major}x (no native MXFP4 MoE kernel for it)"


def vllm_mxfp4_backend(
    *, engine_version: str | None = None, sm_major: int | None = None, vendor: str = "nvidia"
) -> KernelChoice:
    """The MXFP4 MoE backend vLLM picks by default on a GPU (see the module docstring).

    Examples: H100 (SM 9) under 0.25.1 -> "vllm-triton" (intermediate per rank to a multiple of 64, hidden as is);
    H100 under 0.11.1 -> "vllm-marlin" (hidden 2880 -> 3072, intermediate per rank to 128); B200 (SM 10) ->
    "vllm-trtllm" (both to 256); RTX PRO 6000 (SM 12), A100 (SM 8) -> "vllm-marlin"; MI300X (vendor amd) ->
    "vllm-rocm" (0.25.1, both to 256) or "vllm-rocm-0.11" (0.11.1, 128).  Unknown GPU -> backend None.
    """
    new = release_triple(engine_version) >= VLLM_TRITON_KERNELS_SINCE
    release = f"vLLM {engine_version or 'newest'}"
    if vendor == "amd":
        backend = "vllm-rocm" if new else "vllm-rocm-0.11"
        return KernelChoice(backend, f"MXFP4 MoE backend: ROCm ({backend}), {release}'s default")
    if vendor != "nvidia" or sm_major is None:
        return KernelChoice(
            None,
            f"MXFP4 MoE backend: not known for this GPU ({vendor}, SM {sm_major}); no "
            "kernel padding applied (pass expert_padding to model it)",
        )
    backend, why = _cuda_choice(sm_major, new)
    note = f"MXFP4 MoE backend: {why}, {release}'s default ({backend})"
    if backend != "vllm-triton":
        return KernelChoice(backend, note)
    extras = vllm_triton_extras(engine_version=engine_version, sm_major=sm_major)
    keeps = (
        "fp32 expert biases"
        + (", scale rows padded to 256" if extras.hopper_scale_rows else "")
        + (", checkpoint scales kept next to the swizzled copy (before 0.25)" if extras.kept_scales else "")
    )
    return KernelChoice(backend, f"{note}; the Triton path keeps {keeps}", extras)
