"""SGLang's SWA request cap, shared by the hybrid-SWA and the DeepSeek-V4 pools (SGLang 0.5.23).

When the SWA pool is sized for the worst case of the running requests (``SWARequestCapPoolConfigurator``, the
DeepSeek-V4 cap mode) it holds, per request, the window, the eviction slack and one decode allocation, plus the
prefill chunks in flight.
"""

from __future__ import annotations

from typing import Any

#: environ.SGLANG_SWA_EVICTION_INTERVAL default.
SWA_EVICTION_INTERVAL = 128


def ceil_align(a: Any, b: int) -> Any:
    """``a`` rounded up to a multiple of ``b`` (an int or a numpy array)."""
    return -(-a // b) * b


# ---- ints or numpy arrays: the pool formulas take both (``kvplan fit`` passes ints and never loads numpy; ``kvplan
# sweep`` passes arrays, numpy is then already imported) ---------------------------------------------------------

def is_array(x: Any) -> bool:
    """``x`` is a numpy array (not a Python number)."""
    return getattr(x, "ndim", 0) > 0


def _np() -> Any:
    import numpy

    return numpy


def vmin(a: Any, b: Any) -> Any:
    """``min(a, b)`` for ints or element-wise for arrays."""
    if is_array(a) or is_array(b):
        return _np().minimum(a, b)
    return min(a, b)


def vmax(a: Any, b: Any) -> Any:
    """``max(a, b)`` for ints or element-wise for arrays."""
    if is_array(a) or is_array(b):
        return _np().maximum(a, b)
    return max(a, b)


def vint(x: Any) -> Any:
    """``int(x)`` (truncation toward zero) for a number or element-wise for an array (int64)."""
    if is_array(x):
        return x.astype("int64") if x.dtype.kind == "f" else x   # astype truncates toward zero, as int() does
    return int(x)


def vwhere(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b``, element-wise for arrays."""
    if is_array(cond) or is_array(a) or is_array(b):
        return _np().where(cond, a, b)
    return a if cond else b


def swa_request_cap(
    *,
    page_size: int,
    window: int,
    mrr_per_rank: Any,
    chunked_prefill_size: int,
    overlap_schedule: bool,
    num_draft_tokens: int,
    num_steps: int,
    disagg_decode: bool,
    decode_extra_slots: int,
    eviction_interval: int,
) -> Any:
    """SWA slots one rank reserves for ``mrr_per_rank`` running requests (EAGLE / DSpark top-k 1 only).

    Formula::

        trailing     = window + max(1, eviction_interval) * max(draft_tokens, 1) + page
        decode_alloc = page (no speculation) | max(ceil_page(steps), ceil_page(drafts)) (spec-v1, no overlap)
                       | 2 * max(steps, drafts) (spec-v2, overlap)
        PD decode    : (trailing + decode_alloc) * mrr + (window + page) * decode_extra_slots
        otherwise    : (trailing + decode_alloc) * mrr + (2 if overlap else 1) * chunked_prefill + page

    Example: window 128, page 256, 16 requests, chunk 2048, overlap on, no speculation:
    (128 + 128 + 256 + 256) x 16 + 2 x 2048 + 256 = 16,640.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``compute_swa_request_cap``,
    v0.5.23.
    """
    draft = num_draft_tokens if num_draft_tokens > 0 else 1
    trailing = window + max(1, eviction_interval) * draft + page_size
    if num_draft_tokens <= 0:
        decode_alloc = page_size
    elif not overlap_schedule:  # spec-v1: spec_decode_alloc_len_per_request, topk 1, page > 1
        decode_alloc = max(ceil_align(max(num_steps, 1), page_size), ceil_align(num_draft_tokens, page_size))
    else:  # spec-v2: 2 * get_alloc_len_per_decode() = 2 * max(steps * topk, draft tokens)
        decode_alloc = 2 * max(num_steps, num_draft_tokens)
    per_request = trailing + decode_alloc
    if disagg_decode:
        return per_request * mrr_per_rank + (window + page_size) * decode_extra_slots
    chunks_in_flight = 2 if overlap_schedule else 1
    return per_request * mrr_per_rank + chunks_in_flight * chunked_prefill_size + page_size
