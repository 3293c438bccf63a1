"""The pinned host input buffers vLLM's non-torch figure counts on a unified-memory GPU
(kvplan.engines.vllm.budget.vllm_unified_host_buffer_bytes), derived by hand from vLLM v0.21.0.

``GPUModelRunner.__init__`` builds, after the worker's start-up snapshot, ``CpuGpuBuffer`` pairs whose CPU side is
pinned; torch's pinned host allocator rounds each to a power of two.  On an integrated GPU the snapshot's free memory
is psutil's available memory, so the pinned mirrors are part of ``(total - free) - torch reserved``.
"""

from __future__ import annotations

from kvplan.engines.vllm.budget import (
    vllm_default_non_torch_bytes,
    vllm_non_torch_note,
    vllm_unified_host_buffer_bytes,
)
from kvplan.units import MiB


def test_nemotron_nano_on_gb10_by_hand():
    """B 8,192, hidden 2,688, bf16: input_ids 8,192 x 4 = 32,768; req_indices 8,192 x 8 = 65,536; inputs_embeds
    8,192 x 2,688 x 2 = 44,040,192 -> 2**26 = 67,108,864; is_token_ids 8,192; query_pos 65,536; slot_mapping 65,536."""
    got = vllm_unified_host_buffer_bytes(
        max_num_batched_tokens=8192, hidden_size=2688, dtype_bytes=2, engine_version="0.21.0"
    )
    assert got == 32_768 + 65_536 + 67_108_864 + 8_192 + 65_536 + 65_536 == 67_346_432


def test_power_of_two_rounding_per_buffer():
    """B 2,048, hidden 4,096, bf16: inputs_embeds 16,777,216 is already a power of two; B 3,000 (not one): each
    buffer rounds up on its own (12,000 -> 16,384; 24,000 -> 32,768; 24,576,000 -> 33,554,432; 3,000 -> 4,096)."""
    exact = vllm_unified_host_buffer_bytes(
        max_num_batched_tokens=2048, hidden_size=4096, dtype_bytes=2, engine_version="0.21.0"
    )
    assert exact == 8_192 + 16_384 + 16_777_216 + 2_048 + 16_384 + 16_384
    odd = vllm_unified_host_buffer_bytes(
        max_num_batched_tokens=3000, hidden_size=4096, dtype_bytes=2, engine_version="0.21.0"
    )
    assert odd == 16_384 + 32_768 + 33_554_432 + 4_096 + 32_768 + 32_768


def test_not_priced_before_the_release_it_was_read_in():
    assert (
        vllm_unified_host_buffer_bytes(
            max_num_batched_tokens=8192, hidden_size=2688, dtype_bytes=2, engine_version="0.20.0"
        )
        == 0
    )


def test_non_torch_adds_it_and_the_note_names_it():
    """TP1, 0.21: 128 MiB of workspaces + 67,346,432 B = 201,564,160 B; the --explain line names both parts and the
    lever, and does not call the host buffers a communicator."""
    host = 67_346_432
    n = vllm_default_non_torch_bytes(tp_size=1, engine_version="0.21.0", unified_host_bytes=host)
    assert n == 128 * MiB + host == 201_564_160
    note = vllm_non_torch_note(
        non_torch_bytes=n, tp_size=1, link="nvlink-c2c", engine_version="0.21.0", unified_host_bytes=host
    )
    assert note == (
        "cold: cuBLAS / attention workspaces 128 MiB + pinned host input buffers 64 MiB (unified memory; lever "
        "--max-num-batched-tokens)"
    )
    assert vllm_default_non_torch_bytes(tp_size=1, engine_version="0.21.0") == 128 * MiB
