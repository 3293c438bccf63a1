"""The SGLang pools over numpy arrays: what ``kvplan sweep`` evaluates per group, with the scalar planner's formulas.

A sweep resolves each group (one combination of model / GPU / parallelism / dtype ...) with one ``fit``; the pool
planner of the family (:data:`kvplan.engines.sglang.pools.SWEEP_VECTORS`) then turns the planner's
:class:`~kvplan.engines.sglang.pools.base.PoolContext` of that fit into a :class:`VectorGroup`: the group's scalars
(cells, PP stages, the SWA mode, the state slots ...) and one method, :meth:`VectorGroup.pools`, that evaluates the
numeric axes (budget, context, request cap, ``--max-total-tokens``) element-wise with the *same* formula functions
the family's ``plan`` calls with ints (``kvplan.engines.sglang.pools.swa`` / ``mamba`` / ``dsv4``: each function
takes ints or numpy arrays).

numpy is never imported here at module level: the caller passes arrays (``kvplan fit`` never loads numpy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvplan.engines.sglang.pools.swa_cap import is_array, vint, vmax, vmin, vwhere

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.base import PoolContext

__all__ = ["VectorGroup", "VectorPools", "is_array", "request_cap_of", "vector_group", "vint", "vmax", "vmin", "vwhere"]


@dataclass
class VectorPools:
    """One family's pools for a block of rows (arrays of one length, or scalars broadcast to it).

    ``tokens``: ``max_total_num_tokens`` per rank (the full pool); ``cell``: FitResult.kv_bytes_per_token;
    ``mrr``: max_running_requests per attention-DP rank after every family cap; ``error``: rows where the scalar
    planner raises InputError (None: none; the sweep asks ``fit`` for their one-line error); ``pools``: the tokens
    of the other token pools by their FitResult pool name (hybrid SWA: ``sliding-window KV``; -1 where the plan has
    no such pool), which the workload bounds read."""

    tokens: Any
    cell: Any
    mrr: Any
    error: Any = None
    pools: dict[str, Any] = field(default_factory=dict)


@dataclass
class VectorGroup:
    """A family's per-group state for the sweep: ``pools(budget=, context_len=, requested=, max_total_tokens=)``
    (``requested``: the request cap in force, an array or the group's scalar or None; ``max_total_tokens``: an
    array with -1 for not set, or None) -> :class:`VectorPools`."""

    family: str
    pools: Callable[..., VectorPools]
    note: str = ""


def request_cap_of(ctx: PoolContext, *, tokens: Any, context_len: Any, requested: Any) -> Any:
    """``max_running_requests`` per rank as :func:`kvplan.engines.sglang.pools.base.request_cap` resolves it, for
    arrays (the rule set's ``resolve_max_running_requests``)."""
    return ctx.rules.resolve_max_running_requests(
        total_tokens=tokens, context_len=context_len, requested=requested, attn_dp_size=ctx.attn_dp
    )


def vector_group(ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """The single-cell families (GQA / MHA, MLA, DSA; :mod:`kvplan.engines.sglang.pools.default`)::

        tokens = page_floor(max(budget, 0) // cell) x dcp        (cell = the largest PP stage's, drafts included)
        tokens = page_floor(max_total_tokens)  where max_total_tokens < tokens
        mrr    = resolve_max_running_requests(tokens, context, requested, attn_dp)

    Example: Qwen3-8B bf16 (147,456 B/token), budget 47,244,640,256 B, page 1 -> 320,398 tokens.
    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.calculate_pool_sizes``, v0.5.23.
    """
    c = int(cell)
    if c != cell or c <= 0:
        return None
    R, page, dcp = ctx.rules, ctx.page_size, ctx.dcp

    def pools(*, budget: Any, context_len: Any, requested: Any, max_total_tokens: Any) -> VectorPools:
        tokens = R.page_floor(tokens=vmax(budget, 0) // c, page_size=page) * dcp
        if max_total_tokens is not None:
            capped = R.page_floor(tokens=max_total_tokens, page_size=page)
            tokens = vwhere((max_total_tokens >= 0) & (max_total_tokens < tokens), capped, tokens)
        mrr = request_cap_of(ctx, tokens=tokens, context_len=context_len, requested=requested)
        return VectorPools(tokens=tokens, cell=float(c), mrr=mrr)

    return VectorGroup(family="single-cell", pools=pools)
