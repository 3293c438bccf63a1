"""vLLM's start-up arithmetic as array-friendly formulas: one point (``kvplan fit``) or a numpy grid (``kvplan sweep``).

:func:`kvplan.engines.vllm.planner.plan_vllm` resolves what does not depend on the numeric knobs once -- the KV
specs, the block size, the page unification and the groups, the bytes per block of each PP stage, the weights,
non-torch and CUDA-graph terms -- into a :class:`VllmStatic`, then calls :func:`evaluate` for its one point.
``kvplan sweep`` (:mod:`kvplan.planning.sweep_vllm`) calls the same :func:`evaluate` with numpy arrays of
``gpu_memory_utilization``, ``max_model_len`` and ``max_num_seqs``.  Every function here takes ints or arrays
(numpy is imported only when an argument is an array).

Per point (vllm-project/vllm v0.33.0: ``vllm/v1/worker/utils.py`` ``request_memory``,
``vllm/v1/worker/gpu_worker.py`` ``Worker.determine_available_memory``, ``vllm/v1/core/kv_cache_utils.py``
``get_kv_cache_configs``, ``_check_enough_kv_cache_memory``, ``_estimate_max_model_len_from_groups``,
``get_max_concurrency_for_kv_cache_config``, ``get_kv_cache_capacity``; ``vllm/v1/kv_cache_interface.py``
``max_memory_usage_bytes``)::

    requested  = ceil(total × util)
    activation = max(B × forward_per_token, min(B, S) × sampler_per_row)        (unless measured)
    available  = requested − (weights + non_torch) − activation − graph         (kv_cache_memory_bytes: as given)
    per_req    = Σ_g blocks_g(L)          full cdiv(L, bs); sliding cdiv(min(W − 1 + I, L), bs) + 1;
                                          chunked cdiv(min(C + I, L), bs); Mamba a fixed count   (I = in-flight tokens)
    num_blocks = min over PP stages of max(available, 0) // bytes_per_block_stage
    fits       = available > 0 and bpb × per_req <= available − bpb on every stage (the null block is held back)
    estimated  = the largest L' in [1, L] with bpb × Σ_g blocks_g(L') <= available − bpb (binary search), 0 if none
    tokens, concurrency = the release's token line (num_blocks × bs; (num_blocks // groups) × min bs;
                          int(num_blocks / per_req × L))

Worked example (Llama-3.1-8B-class, 32 layers × 8 KV heads × 128, bf16, TP1, block 16, kv_cache_memory_bytes
10 GiB, L 32,768, 0.33): bytes per block 32 × 16 × 8 × 256 × 2 = 2,097,152; num_blocks 5,120; per_req 2,048;
concurrency 2.50; tokens int(2.5 × 32,768) = 81,920.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.engines.vllm.budget import vllm_activation_peak, vllm_default_graph_count, vllm_requested_bytes
from kvplan.engines.vllm.releases import (  # the token lines are the releases' (one definition, no import cycle)
    PoolCount,
    Release,
    concurrency_line,
    group_line,
    tokens_from_concurrency,
    tokens_per_group,
    tokens_v0,
    v0_line,
)
from kvplan.engines.vllm.specs import kinds_of_role

#: the kinds every token of a request is kept for, and those kept for a window (``role`` of
#: :data:`kvplan.engines.vllm.specs.LAYER_KINDS`)
FULL_KINDS = kinds_of_role("full")
SLIDING_KINDS = kinds_of_role("sliding")


# --------------------------------------------------------------------------- element-wise helpers


def _is_array(*xs: Any) -> bool:
    return any(hasattr(x, "shape") for x in xs)


def minimum(a: Any, b: Any) -> Any:
    """``min`` for ints, ``np.minimum`` when either is an array."""
    if _is_array(a, b):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def maximum(a: Any, b: Any) -> Any:
    """``max`` for ints, ``np.maximum`` when either is an array."""
    if _is_array(a, b):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` for scalars, ``np.where`` when any is an array."""
    if _is_array(cond, a, b):
        import numpy as np

        return np.where(cond, a, b)
    return a if cond else b


def _not(x: Any) -> Any:
    if _is_array(x):
        import numpy as np

        return np.logical_not(x)
    return not x


def _any(x: Any) -> bool:
    return bool(x.any()) if _is_array(x) else bool(x)


def cdiv(a: Any, b: Any) -> Any:
    """Ceiling division (ints or arrays)."""
    return -(-a // b)


# --------------------------------------------------------------------------- the resolved deployment


@dataclass(frozen=True)
class GroupShape:
    """What a request's block count needs of one KV group: its kind, block size and window (sliding / chunk)."""

    kind: str
    block_size: int
    window: int | None = None


@dataclass(frozen=True)
class VllmStatic:
    """One vLLM engine's deployment with every group-level choice resolved (see the module docstring)."""

    release: Release
    device_bytes: int
    utilization: float  # given or the release's default
    kv_cache_memory_bytes: int | None  # replaces the budget outright
    not_kv_bytes: int  # weights + non-torch (or the measured "consumed")
    graph_bytes: int  # the CUDA-graph estimate subtracted (0 when not)
    activation_bytes: int | None  # measured; None = the cold estimate from the coefficients
    forward_bytes_per_token: int
    sampler_bytes_per_row: int
    groups: tuple[tuple[GroupShape, int], ...]  # distinct group shapes and how many groups have each
    num_groups: int
    stage_bytes_per_block: tuple[int, ...]  # per PP stage (0: no KV on that stage)
    block_size: int
    min_group_block_size: int
    mamba_blocks: int
    pp_size: int
    dp_size: int
    max_num_batched_tokens: int | None  # given (else the release's default for L)
    max_num_seqs: int | None  # given (else the release's default)
    gpu_name: str | None = None
    graph_bytes_per_graph: int = 0  # cold CUDA-graph estimate: bytes per captured graph (0: graph_bytes as is)
    engine_version: str | None = None  # for the capture-size rule of the cold graph estimate
    sm_major: int | None = None
    batch_floor: int | None = None  # the default max_num_batched_tokens raised to one multimodal item (Gemma-4)

    @property
    def max_bytes_per_block(self) -> int:
        return max(self.stage_bytes_per_block)

    @property
    def full_part(self) -> tuple[int, int] | None:
        """(full-attention groups, their block size) when there are some and they share one block size (a request
        takes ``k × cdiv(L, bs)`` blocks of them: :func:`estimate_max_len`'s bounds), else None."""
        full = [(g.block_size, c) for g, c in self.groups if g.kind in FULL_KINDS]
        if not full or len({bs for bs, _ in full}) != 1:
            return None
        return sum(c for _, c in full), full[0][0]

    @property
    def workload_page(self) -> int:
        """Block size a workload's tokens are rounded to: the largest full-attention group's (else the block size);
        :func:`kvplan.planning.workload.vllm_tokens_per_request`."""
        return workload_page([(g.kind, g.block_size) for g, _ in self.groups], self.block_size)

    def scheduler(self, max_model_len: int) -> tuple[int, int, str]:
        """(max_num_batched_tokens, max_num_seqs, why the batch default) for one ``max_model_len``: the given knobs,
        else the release's defaults (``EngineArgs.get_batch_defaults``, v0.33.0; V0 ``SchedulerConfig``)."""
        b, s, why = self.release.batch_defaults(
            max_model_len=int(max_model_len), device_bytes=self.device_bytes, gpu_name=self.gpu_name
        )
        s = self.max_num_seqs or s
        if self.batch_floor and not self.max_num_batched_tokens:  # one whole multimodal item per batch (Gemma-4)
            from kvplan.engines.vllm.gemma4 import raised_batch_default

            b, note = raised_batch_default(
                default=b, max_num_seqs=s, max_model_len=int(max_model_len), floor=self.batch_floor
            )
            why = f"{why}, {note}" if note else why
        return self.max_num_batched_tokens or b, s, why

    def in_flight(self, max_num_batched_tokens: Any) -> Any:
        """Tokens a sliding / chunked layer keeps beyond its window (the release's rule)."""
        return self.release.in_flight_tokens(max_num_batched_tokens=max_num_batched_tokens, pp_size=self.pp_size)


# --------------------------------------------------------------------------- formulas


def request_blocks(
    *, kind: str, block_size: int, window: int | None, length: Any, in_flight: Any, mamba_blocks: int
) -> Any:
    """Blocks one ``length``-token request takes from one group (``KVCacheSpec.max_memory_usage_bytes`` / page,
    v0.33.0): full ``cdiv(L, bs)``; sliding ``cdiv(min(W − 1 + I, L), bs) + 1``; chunked ``cdiv(min(C + I, L), bs)``;
    Mamba ``mamba_blocks`` (cache mode "none" / "align"); ``mamba_all`` (cache mode "all", one state per block)
    ``cdiv(L, bs) + mamba_blocks`` (``mamba_blocks`` = the speculative blocks then; ``MambaSpec.
    max_memory_usage_bytes``, v0.22.0).  Example: gpt-oss sliding layers (W 128, bs 16), I 2,048, L 16,384 -> 137;
    a Mamba group in mode "all" with block 256 at L 32,768 -> 128."""
    if kind in FULL_KINDS:
        return cdiv(length, block_size)
    if kind == "mamba":
        return mamba_blocks + 0 * length
    if kind == "mamba_all":
        return cdiv(length, block_size) + mamba_blocks
    if window is None:
        raise AssertionError(f"{kind} group without a window")
    if kind in SLIDING_KINDS:
        return cdiv(minimum(window - 1 + in_flight, length), block_size) + 1
    if kind == "chunked":
        return cdiv(minimum(window + in_flight, length), block_size)
    raise AssertionError(f"unknown KV group kind {kind!r}")


def blocks_from_max(*, kind: str, block_size: int, blocks_at_max: Any, length: Any) -> Any:
    """Blocks a ``length``-token request takes from a group whose max_model_len request takes ``blocks_at_max`` (a
    ``fit`` result's group row, which keeps no window or in-flight count): :func:`request_blocks` with the group's
    reach at max_model_len as its window and no in-flight tokens -- sliding ``(blocks_at_max − 1) × bs + 1`` tokens,
    chunked ``blocks_at_max × bs``, Mamba ``blocks_at_max`` -- since ``cdiv(min(k × bs, L'), bs) = min(k,
    cdiv(L', bs))``.  Example: gpt-oss sliding layers (bs 16) at 137 blocks: a 1,000-token request takes
    ``cdiv(min(2,176, 1,000), 16) + 1`` = 64 blocks."""
    if kind in SLIDING_KINDS:
        window = (blocks_at_max - 1) * block_size + 1
    elif kind == "chunked":
        window = blocks_at_max * block_size
    elif kind == "mamba_all":  # per-block Mamba states grow like full attention (speculative blocks not kept)
        return minimum(cdiv(length, block_size), blocks_at_max)
    else:
        window = None
    return request_blocks(
        kind=kind, block_size=block_size, window=window, length=length, in_flight=0, mamba_blocks=blocks_at_max
    )


def workload_page(shapes: Sequence[tuple[str, int]], block_size: int | None) -> int:
    """Block size a workload's tokens are rounded to: the largest full-attention group's (``shapes``: (kind, block
    size) per group), else ``block_size`` (1 when unknown).  Example: Gemma-4 (full block 32, sliding 16) -> 32."""
    sizes = [bs for kind, bs in shapes if kind in FULL_KINDS]
    return max(sizes) if sizes else (block_size or 1)


def blocks_for_length(
    groups: Sequence[tuple[GroupShape, int]], *, length: Any, in_flight: Any, mamba_blocks: int
) -> Any:
    """``Σ_g blocks_g(length)`` over the groups (each distinct shape once, times its count).
    Example: Gemma-3-27B (1 full + 6 sliding groups, W 1,024, bs 16), I 8,192, L 32,768: 2,048 + 6 × 577."""
    total: Any = 0 * length
    for g, count in groups:
        total = total + count * request_blocks(
            kind=g.kind,
            block_size=g.block_size,
            window=g.window,
            length=length,
            in_flight=in_flight,
            mamba_blocks=mamba_blocks,
        )
    return total


def available_bytes(
    st: VllmStatic, *, utilization: Any, max_num_batched_tokens: Any, max_num_seqs: Any
) -> tuple[Any, Any, Any]:
    """(available KV bytes, requested, activation): ``requested − not_kv − activation − graph``
    (``Worker.determine_available_memory``, v0.33.0), or ``kv_cache_memory_bytes`` as given (requested 0)."""
    if st.kv_cache_memory_bytes is not None:
        return st.kv_cache_memory_bytes, 0, 0
    requested = vllm_requested_bytes(
        device_bytes=st.device_bytes, gpu_memory_utilization=utilization, ceil=st.release.ceil_requested
    )
    act = (
        st.activation_bytes
        if st.activation_bytes is not None
        else vllm_activation_peak(
            forward_bytes_per_token=st.forward_bytes_per_token,
            sampler_bytes_per_row=st.sampler_bytes_per_row,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
        )
    )
    return requested - st.not_kv_bytes - act - graph_bytes(st, max_num_batched_tokens, max_num_seqs), requested, act


def graph_bytes(st: VllmStatic, max_num_batched_tokens: Any, max_num_seqs: Any) -> Any:
    """The CUDA-graph term at these batch knobs: the static value, or for a cold estimate the graphs the release
    captures at (B, S) × bytes per graph (:func:`~kvplan.engines.vllm.budget.vllm_default_graph_count`); arrays
    are priced once per distinct (B, S) pair."""
    if not st.graph_bytes_per_graph:
        return st.graph_bytes

    def one(b: int, s: int) -> int:
        return st.graph_bytes_per_graph * vllm_default_graph_count(
            engine_version=st.engine_version, max_num_seqs=int(s), max_num_batched_tokens=int(b), sm_major=st.sm_major
        )

    if not (hasattr(max_num_batched_tokens, "shape") or hasattr(max_num_seqs, "shape")):
        return one(int(max_num_batched_tokens), int(max_num_seqs))
    import numpy as np

    b_arr, s_arr = np.broadcast_arrays(np.asarray(max_num_batched_tokens), np.asarray(max_num_seqs))
    pairs = np.stack([b_arr.ravel(), s_arr.ravel()], axis=1).astype(np.int64)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    vals = np.array([one(int(b), int(s)) for b, s in uniq], dtype=np.int64)
    return vals[inv.ravel()].reshape(b_arr.shape)


def num_blocks(*, available: Any, stage_bytes_per_block: Sequence[int]) -> Any:
    """``min over the workers of max(available, 0) // bytes_per_block`` (``get_kv_cache_configs``, v0.33.0)."""
    out: Any = None
    for b in stage_bytes_per_block:
        if b > 0:
            nb = maximum(available, 0) // b
            out = nb if out is None else minimum(out, nb)
    if out is None:
        raise AssertionError("no PP stage holds KV")
    return out


def estimate_max_len(
    *,
    bytes_per_block: int,
    check: Any,
    max_len: Any,
    blocks_for: Callable[[Any], Any],
    full: tuple[int, int] | None = None,
    rest_at_max: Any = 0,
) -> Any:
    """Largest length in [1, max_len] whose blocks fit in ``check`` bytes, 0 when not even one token fits
    (``_estimate_max_model_len_from_groups``: binary search, v0.33.0), element-wise for arrays.

    ``full`` = (k, bs) when the full-attention groups take ``k × cdiv(L, bs)`` blocks and the other groups
    ``rest(L) <= rest_at_max`` (their blocks at max_len; the block count never falls as L grows): the answer lies
    between the largest L with ``bpb × (k × cdiv(L, bs) + rest_at_max) <= check`` and the largest with
    ``bpb × k × cdiv(L, bs) <= check`` (``min(max_len, m × bs)`` for ``m`` blocks per group), so the search runs
    between the two -- none at all when every group is full attention (rest 0: the closed form).
    Example: 2,097,152 B/block, 16 tokens per block, check 1 GiB -> 512 blocks -> 8,192 tokens."""
    one = 1 + 0 * max_len
    lo, hi, res = one, max_len, one
    if full is not None:
        k, bs = full
        m_hi = check // (bytes_per_block * k)
        hi = where(m_hi >= 1, minimum(max_len, m_hi * bs), 0)
        if not _any(rest_at_max):
            return hi
        m_lo = (check - bytes_per_block * rest_at_max) // (bytes_per_block * k)
        lo = maximum(where(m_lo >= 1, minimum(max_len, m_lo * bs), 0), 1)
        res = lo
    none = bytes_per_block * blocks_for(one) > check
    active = lo <= hi
    while _any(active):
        mid = (lo + hi) // 2
        ok = bytes_per_block * blocks_for(mid) <= check
        up = active & ok
        down = active & _not(ok)
        res = where(up, mid, res)
        lo = where(up, mid + 1, lo)
        hi = where(down, mid - 1, hi)
        active = lo <= hi
    return where(none, 0, res)


BlocksFor = Callable[[Any, Any], Any]  # (lengths, rows or None) -> Σ_g blocks_g(lengths) of those rows


def _rest(full: tuple[int, int] | None, per_request: Any, max_len: Any) -> Any:
    """Blocks of the groups that are not full attention at max_len: ``per_request − k × cdiv(max_len, bs)``."""
    return 0 if full is None else per_request - full[0] * cdiv(max_len, full[1])


def engine_check(
    *, available: Any, stage_bytes_per_block: Sequence[int], per_request: Any
) -> tuple[Any, Any, list[tuple[int, Any]]]:
    """(fits, bytes one request of ``per_request`` blocks needs, [(bpb, refused) per stage holding KV]): vLLM starts
    when ``available > 0`` and ``bpb × per_request <= available − bpb`` on every stage
    (``_check_enough_kv_cache_memory``, v0.33.0)."""
    fits: Any = available > 0
    needed: Any = 0 * per_request
    fails: list[tuple[int, Any]] = []
    for b in stage_bytes_per_block:
        if b <= 0:
            continue
        need = b * per_request
        needed = maximum(needed, need)
        bad = (available <= 0) | (need > available - b)
        fits = fits & _not(bad)
        fails.append((b, bad))
    return fits, needed, fails


def fit_check(
    *,
    available: Any,
    stage_bytes_per_block: Sequence[int],
    max_len: Any,
    per_request: Any,
    blocks_for: BlocksFor,
    full: tuple[int, int] | None = None,
) -> tuple[Any, Any, Any]:
    """(fits, estimated maximum model length, bytes one max_len request needs) over the workers: refuse when
    ``bpb × blocks(L) > available − bpb`` (``_check_enough_kv_cache_memory``, v0.33.0); the estimate is the minimum
    over the stages that refuse (one point: None where it fits; arrays: -1 there, computed on the refused rows only).
    Example: 2,097,152 B/block, L 32,768 (2,048 blocks), 1 GiB available -> refused, estimated 8,176."""
    fits, needed, fails = engine_check(
        available=available, stage_bytes_per_block=stage_bytes_per_block, per_request=per_request
    )
    if not _is_array(fits):
        est_i: int | None = None
        for b, bad in fails:
            if bad:
                r = estimate_max_len(
                    bytes_per_block=b,
                    check=available - b,
                    max_len=max_len,
                    blocks_for=lambda x: blocks_for(x, None),
                    full=full,
                    rest_at_max=_rest(full, per_request, max_len),
                )
                est_i = r if est_i is None else min(est_i, r)
        return fits, est_i, needed
    import numpy as np

    est = np.full(np.shape(fits), -1, dtype=np.int64)
    sub = np.nonzero(~fits)[0]
    if len(sub):
        avail_s = np.broadcast_to(available, np.shape(fits))[sub]
        len_s = np.broadcast_to(max_len, np.shape(fits))[sub]
        rest_s = _rest(full, np.broadcast_to(per_request, np.shape(fits))[sub], len_s)
        best = np.full(len(sub), np.iinfo(np.int64).max, dtype=np.int64)
        for b, bad in fails:
            r = estimate_max_len(
                bytes_per_block=b,
                check=avail_s - b,
                max_len=len_s,
                blocks_for=lambda x: blocks_for(x, sub),
                full=full,
                rest_at_max=rest_s,
            )
            best = np.where(np.broadcast_to(bad, np.shape(fits))[sub], np.minimum(best, r), best)
        est[sub] = best
    return fits, est, needed


TokenLineFn = Callable[[Any, Any, Any, int, int, int], tuple[Any, Any]]

#: the release's token line (kvplan.engines.vllm.releases) -> the same formula, array-friendly
TOKEN_LINES: dict[Callable[[PoolCount], tuple[int, float]], TokenLineFn] = {
    tokens_v0: v0_line,
    tokens_per_group: group_line,
    tokens_from_concurrency: concurrency_line,
}


def has_token_line(release: Release) -> bool:
    """Whether the release's token line has its array form here (a new kind of line: the point path only)."""
    return release.token_line in TOKEN_LINES


def token_line(st: VllmStatic, *, num_blocks: Any, per_request: Any, max_model_len: Any) -> tuple[Any, Any]:
    """("GPU KV cache size" tokens, "Maximum concurrency") as the release prints them
    (:mod:`kvplan.engines.vllm.releases` ``tokens_v0`` / ``tokens_per_group`` / ``tokens_from_concurrency``)."""
    fn = TOKEN_LINES.get(st.release.token_line)
    if fn is None:  # a release line without an array form: the release's own function (ints only)
        tokens, conc = st.release.token_line(
            PoolCount(
                num_blocks=int(num_blocks),
                blocks_per_request=int(per_request),
                max_model_len=int(max_model_len),
                block_size=st.block_size,
                num_groups=st.num_groups,
                min_group_block_size=st.min_group_block_size,
            )
        )
        return tokens, conc
    return fn(num_blocks, per_request, max_model_len, st.block_size, st.num_groups, st.min_group_block_size)


@dataclass
class Point:
    """What :func:`evaluate` computes for one point (or, as arrays, for a grid)."""

    available: Any
    requested: Any
    activation: Any
    max_num_batched_tokens: Any
    max_num_seqs: Any
    in_flight: Any
    per_request: Any
    num_blocks: Any
    fits: Any
    estimated_max_len: Any  # -1 (arrays) / None (one point) where it fits
    needed: Any
    tokens: Any
    concurrency: Any


def batch_knobs(st: VllmStatic, max_model_len: Any, max_num_seqs: Any = None) -> tuple[Any, Any]:
    """(B, S) per point: the given knobs, else the release's defaults (per distinct L for arrays)."""
    if not _is_array(max_model_len):
        b, s, _ = st.scheduler(max_model_len)
        return b, (max_num_seqs or s)
    import numpy as np

    uniq, inv = np.unique(max_model_len, return_inverse=True)
    bs = np.array([st.scheduler(int(u))[:2] for u in uniq.tolist()], dtype=np.int64).reshape(len(uniq), 2)
    batched = bs[inv.ravel(), 0]
    seqs = bs[inv.ravel(), 1]
    if max_num_seqs is not None:
        given = np.asarray(max_num_seqs)
        seqs = np.where(given > 0, given, seqs)
    return (batched if len(uniq) > 1 else int(bs[0, 0])), seqs


def evaluate(st: VllmStatic, *, utilization: Any, max_model_len: Any, max_num_seqs: Any = None) -> Point:
    """The budget -> blocks -> fit check -> printed capacity of one point, or element-wise of numpy arrays
    (``max_num_seqs`` None or <= 0: the release's default).  See the module docstring for the formulas."""
    B, S = batch_knobs(st, max_model_len, max_num_seqs)
    avail, requested, act = available_bytes(st, utilization=utilization, max_num_batched_tokens=B, max_num_seqs=S)
    inflight = st.in_flight(B)

    def blocks_for(length: Any, rows: Any) -> Any:
        # rows: a subset of an array grid (the in-flight tokens may differ by row: V0's batch follows L)
        i = inflight[rows] if rows is not None and _is_array(inflight) else inflight
        return blocks_for_length(st.groups, length=length, in_flight=i, mamba_blocks=st.mamba_blocks)

    per = blocks_for(max_model_len, None)
    nb = num_blocks(available=avail, stage_bytes_per_block=st.stage_bytes_per_block)
    fits, est, needed = fit_check(
        available=avail,
        stage_bytes_per_block=st.stage_bytes_per_block,
        max_len=max_model_len,
        per_request=per,
        blocks_for=blocks_for,
        full=st.full_part,
    )
    tokens, conc = token_line(st, num_blocks=nb, per_request=per, max_model_len=max_model_len)
    return Point(
        available=avail,
        requested=requested,
        activation=act,
        max_num_batched_tokens=B,
        max_num_seqs=S,
        in_flight=inflight,
        per_request=per,
        num_blocks=nb,
        fits=fits,
        estimated_max_len=est,
        needed=needed,
        tokens=tokens,
        concurrency=conc,
    )
