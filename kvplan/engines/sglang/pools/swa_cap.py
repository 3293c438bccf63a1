"""SGLang's SWA request cap, shared by the hybrid-SWA and the DeepSeek-V4 pools (SGLang 0.5.23), and the SWA slots a
running request holds by release (:func:`swa_request_terms`, the workload's SWA-pool bound).

When the SWA pool is sized for the worst case of the running requests (``SWARequestCapPoolConfigurator``, the
DeepSeek-V4 cap mode) it holds, per request, the window, the eviction slack and one decode allocation, plus the
prefill chunks in flight.  The eviction slack is the release's: how many decode steps pass before a request's
out-of-window tokens are freed (:func:`swa_eviction_interval`).
"""

from __future__ import annotations

from typing import Any

from kvplan.version import Version

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
        return x.astype("int64") if x.dtype.kind == "f" else x  # astype truncates toward zero, as int() does
    return int(x)


def vwhere(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b``, element-wise for arrays."""
    if is_array(cond) or is_array(a) or is_array(b):
        return _np().where(cond, a, b)
    return a if cond else b


def swa_decode_alloc(*, page_size: int, overlap_schedule: bool, num_draft_tokens: int, num_steps: int) -> int:
    """SWA slots one decode step allocates ahead for a request: a page without speculation; spec-v1 (no overlap)
    ``max(ceil_page(steps), ceil_page(drafts))`` (top-k 1); spec-v2 (overlap) ``2 x max(steps, drafts)``.

    Example: page 1, no speculation -> 1; page 64, 4 draft tokens, 3 steps, overlap off -> 64; overlap on -> 8.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py ``compute_swa_request_cap``
    (``spec_decode_alloc_len_per_request``, ``get_alloc_len_per_decode``), v0.5.23.
    """
    if num_draft_tokens <= 0:
        return page_size
    if not overlap_schedule:  # spec-v1: spec_decode_alloc_len_per_request, topk 1, page > 1
        return int(max(ceil_align(max(num_steps, 1), page_size), ceil_align(num_draft_tokens, page_size)))
    return 2 * max(num_steps, num_draft_tokens)  # spec-v2: 2 * get_alloc_len_per_decode()


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
    per_request = trailing + swa_decode_alloc(
        page_size=page_size, overlap_schedule=overlap_schedule, num_draft_tokens=num_draft_tokens, num_steps=num_steps
    )
    if disagg_decode:
        return per_request * mrr_per_rank + (window + page_size) * decode_extra_slots
    chunks_in_flight = 2 if overlap_schedule else 1
    return per_request * mrr_per_rank + chunks_in_flight * chunked_prefill_size + page_size


# ---- the SWA slots a running request holds, by release (kvplan.planning.workload's SWA-pool bound) ---------------

#: a request that holds every token it has in the SWA pool (no release of out-of-window tokens while it runs)
WHOLE_REQUEST = -1


def swa_eviction_interval(*, release: str, window: int, page_size: int, radix_cache: bool) -> int | None:
    """Decode steps between two releases of a running request's out-of-window SWA tokens, by SGLang release
    (None: the release frees none while the request runs).

    Rule::

        before 0.5.7      None                                       (no per-request SWA eviction)
        0.5.7             1 with the radix cache off (SWAChunkCache, every step), None with it on
        0.5.8 - 0.5.10    window                                     (``decode_batch_idx % window == 1``)
        0.5.11 - 0.5.13   page_floor(max(page, int(window x 1.0)))   (SGLANG_SWA_EVICTION_INTERVAL_MULTIPLIER)
        0.5.14 +          128                                        (SGLANG_SWA_EVICTION_INTERVAL)

    Example: window 127, page 64: 0.5.9 -> 127; 0.5.12 -> 64; 0.5.23 -> 128; 0.5.6 -> None.
    Source: sgl-project/sglang python/sglang/srt/managers/schedule_batch.py ``ScheduleBatch.maybe_evict_swa``,
    v0.5.8 - v0.5.23; mem_cache/common.py (``SWAChunkCache.evict_swa`` on every decode step), v0.5.7;
    mem_cache/chunk_cache.py ``SWAChunkCache.evict_swa`` (Llama-4 chunks only), v0.4.9.post6 - v0.5.6.
    """
    k = Version.of(release).triple
    if k < (0, 5, 7):
        return None
    if k < (0, 5, 8):
        return None if radix_cache else 1
    if k < (0, 5, 11):
        return max(1, window)
    if k < (0, 5, 14):
        return max(page_size, int(window * 1.0)) // page_size * page_size
    return SWA_EVICTION_INTERVAL


def swa_request_terms(
    *,
    release: str,
    page_size: int,
    window: int,
    chunked_prefill_size: int,
    overlap_schedule: bool,
    num_draft_tokens: int,
    num_steps: int,
    radix_cache: bool,
    eviction_interval: int | None = None,
) -> tuple[int, int]:
    """``(reserve, per_request)``: the SWA slots one rank holds for its running requests, as ``reserve +
    per_request x requests`` (``per_request`` :data:`WHOLE_REQUEST`: each request holds all its tokens).

    Formula (``I`` = :func:`swa_eviction_interval` decode steps, ``eviction_interval`` overrides it from 0.5.14)::

        0.5.8 +   per_request = window + I x max(drafts, 1) + page + decode_alloc     (swa_request_cap, 1 request)
                  reserve     = (2 if overlap else 1) x chunked_prefill + page        (swa_request_cap, 0 requests)
        0.5.7 (radix off): per_request = window + decode_alloc (evicted every step, not page-floored);
                  reserve     = one chunked_prefill (prefill evicts before each chunk, no overlap hold-back)
        no eviction (before 0.5.7, 0.5.7 with the radix cache): (0, WHOLE_REQUEST)

    Example: window 127, page 1, chunk 8,192, overlap on, no speculation: 0.5.23 -> (16,385, 127 + 128 + 1 + 1 =
    257); 0.5.9 -> (16,385, 127 + 127 + 1 + 1 = 256); 0.5.7 radix off -> (8,192, 128); 0.5.6 -> (0, -1).
    Source: sgl-project/sglang python/sglang/srt/managers/schedule_batch.py ``maybe_evict_swa`` / ``_evict_swa``
    (page-floored eviction point, the overlap scheduler's two chunks), v0.5.8 - v0.5.23;
    model_executor/pool_configurator.py ``compute_swa_request_cap``, v0.5.21 - v0.5.23.
    """
    interval = swa_eviction_interval(release=release, window=window, page_size=page_size, radix_cache=radix_cache)
    if interval is None:
        return 0, WHOLE_REQUEST
    chunk = max(chunked_prefill_size, 0)
    kw: dict[str, Any] = dict(
        page_size=page_size,
        window=window,
        chunked_prefill_size=chunk,
        overlap_schedule=overlap_schedule,
        num_draft_tokens=num_draft_tokens,
        num_steps=num_steps,
        disagg_decode=False,
        decode_extra_slots=0,
    )
    if Version.of(release).triple < (0, 5, 8):  # 0.5.7's chunk cache: every step, exact window, one chunk
        return chunk, window + swa_decode_alloc(
            page_size=page_size,
            overlap_schedule=overlap_schedule,
            num_draft_tokens=num_draft_tokens,
            num_steps=num_steps,
        )
    if eviction_interval is not None and Version.of(release).triple >= (0, 5, 14):
        interval = eviction_interval
    reserve = swa_request_cap(mrr_per_rank=0, eviction_interval=interval, **kw)
    return reserve, swa_request_cap(mrr_per_rank=1, eviction_interval=interval, **kw) - reserve
