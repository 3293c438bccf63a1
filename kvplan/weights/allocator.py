"""The device memory a model's weights reserve through PyTorch's CUDA caching allocator.

Where an engine measures its weight load at the device level (free memory before and after loading,
``torch.cuda.mem_get_info``), the figure is not the sum of the tensors but what the caching allocator reserved for
them: every parameter is carved out of a segment, and a segment that holds one live tensor cannot be returned to the
driver, so the unused tail of each segment stays taken.

* SGLang: ``Load weight end ... mem usage`` = free before - free after, each read by ``get_available_gpu_memory``
  after ``torch.cuda.empty_cache()`` (sgl-project/sglang python/sglang/srt/utils/common.py
  ``get_available_gpu_memory`` and model_executor/model_runner.py ``ModelRunner.load_model``, v0.5.8; the same in
  v0.4.6 ``srt/utils.py``).  ``empty_cache`` returns only the segments with no live block, so the reserve is what
  this module computes.  The KV pool is sized from the same free memory, so the budget loses it too.
* vLLM on ROCm: ``Model loading took`` is ``mem_get_info`` total - free before and after the load
  (vllm/platforms/rocm.py ``RocmPlatform.get_current_memory_usage``, v0.11.0, without ``empty_cache``); on CUDA it
  is ``torch.cuda.max_memory_allocated`` (platforms/cuda.py, v0.11.0), the tensors themselves.

The allocator's rules, restated from PyTorch's ``c10/cuda/CUDACachingAllocator.cpp`` (2.x, expandable segments
off, the default):

* a request is rounded up to a multiple of 512 B (``kMinBlockSize``);
* requests of at most 1 MiB (``kSmallSize``) come from the small pool, larger ones from the large pool;
* a new segment is 2 MiB (``kSmallBuffer``) for a small request, 20 MiB (``kLargeBuffer``) for a request under
  10 MiB (``kMinLargeAlloc``), else the request rounded up to 2 MiB (``kRoundLarge``);
* a request takes the smallest free block of its pool that fits (best fit), and the block is split when the rest is
  at least 512 B (small pool) or more than 1 MiB (large pool); an unsplit rest stays inside the block.

Fused parameters are one allocation each: q / k / v as ``qkv_proj`` (``QKVParallelLinear``), gate / up as
``gate_up_proj`` (``MergedColumnParallelLinear``), and a layer's routed experts as the stacked ``w13`` / ``w2``
(``FusedMoE``), in both engines (layers/linear.py, layers/moe/fused_moe_triton/layer.py).  A quantized tensor's
scales are priced with its weight (one allocation); the engines allocate them separately, a difference far below the
segment sizes.  Not modelled: rotary cos/sin caches and other buffers the model builds while loading.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kvplan.units import MiB

__all__ = ["fused_allocations", "reserved_bytes"]

MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 * MiB  # kSmallSize: the largest small-pool request
SMALL_BUFFER = 2 * MiB  # kSmallBuffer: a small-pool segment
LARGE_BUFFER = 20 * MiB  # kLargeBuffer: the segment of a large-pool request under MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 * MiB  # kMinLargeAlloc
ROUND_LARGE = 2 * MiB  # kRoundLarge

#: the last path component of a tensor the engines fuse with its neighbours, and the fused parameter's name
_FUSED = {
    "q_proj": "qkv_proj",
    "k_proj": "qkv_proj",
    "v_proj": "qkv_proj",
    "gate_proj": "gate_up_proj",
    "up_proj": "gate_up_proj",
}


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _segment_size(size: int) -> int:
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return _round_up(size, ROUND_LARGE)


def reserved_bytes(*, sizes: Iterable[int]) -> int:
    """Bytes of the segments the caching allocator holds after allocating ``sizes`` in order, none freed.

    Formula: the sum of the segments opened by the rules in the module docstring.  Worked example: ``[2,064,384,
    1,605,632, 17,432,576, 8,716,288]`` (one Qwen2.5-0.5B layer: qkv, o, gate_up, down in bf16) -> qkv opens a
    20 MiB segment (2,064,384 rounded: 2,064,384 is a multiple of 512), o takes 1,605,632 of its rest, gate_up
    (over 10 MiB) opens its own 18 MiB segment, down fits in the first segment's 17,301,504 B rest: 20 + 18 MiB =
    39,845,888 B for 29,818,880 B of tensors.
    """
    small: list[int] = []  # free block sizes per pool
    large: list[int] = []
    total = 0
    for raw in sizes:
        size = max(MIN_BLOCK, _round_up(int(raw), MIN_BLOCK))
        pool = small if size <= SMALL_SIZE else large
        fits = [b for b in pool if b >= size]
        if fits:
            block = min(fits)
            pool.remove(block)
        else:
            block = _segment_size(size)
            total += block
        rest = block - size
        if (pool is small and rest >= MIN_BLOCK) or (pool is large and rest > SMALL_SIZE):
            pool.append(rest)
    return total


def fused_allocations(entries: Sequence[tuple[str, int]]) -> list[int]:
    """The allocations the engine makes for ``(Hugging Face path, bytes on the rank)`` entries, in order: entries
    whose path differs only by a fused name (``q_proj`` / ``k_proj`` / ``v_proj``, ``gate_proj`` / ``up_proj``; a
    ``.bias`` suffix kept apart) become one allocation at the first one's place.

    Example: ``[("l.0.q_proj", 8), ("l.0.k_proj", 2), ("l.0.v_proj", 2), ("l.0.o_proj", 8), ("l.0.q_proj.bias", 1)]``
    -> ``[12, 8, 1]``.
    """
    order: dict[str, int] = {}
    for path, nbytes in entries:
        parts = path.split(".")
        tail = 2 if parts[-1] == "bias" and len(parts) > 1 else 1
        name = parts[-tail]
        if name in _FUSED:
            parts[-tail] = _FUSED[name]
        key = ".".join(parts)
        order[key] = order.get(key, 0) + int(nbytes)
    return [b for b in order.values() if b > 0]
