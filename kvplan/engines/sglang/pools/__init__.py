"""SGLang's per-family pool planners, behind one registry.

``POOL_PLANNERS[family]`` prices one family's KV pools the way SGLang does: ``plan_sglang`` runs the shared
prologue (parallelism, device, KV dtype, context, default flags, budget) into a
:class:`~kvplan.engines.sglang.pools.base.PoolContext`, calls the family's planner, then the shared epilogue
(verdict, memory breakdown, FitResult); ``kvplan show`` asks the same planner for its breakdown.

Every registry here is derived from the families' rows (:data:`kvplan.family.FAMILY_SPECS`): adding a family is one
planner module here (``plan(ctx) -> PoolPlan`` and ``breakdown(model) -> Breakdown``) named by its row's
``sglang_pools``, and nothing in this file.  A planner module is imported the first time its family is planned
(``kvplan fit`` loads only the family it sizes: start-up is a feature).

``kvplan sweep`` evaluates every family's budget -> pools -> request-cap arithmetic in bulk over numpy arrays:
:data:`SWEEP_VECTORS` names, per family, the module (``FamilySpec.sglang_sweep``) whose ``vector_group(ctx)`` turns
the planner's :class:`PoolContext` of a group's representative ``fit`` into a
:class:`~kvplan.engines.sglang.pools.vector.VectorGroup` (the single-cell families:
:func:`kvplan.engines.sglang.pools.vector.single_cell_group`).  The sweep captures that context with
:func:`capturing_contexts` (nothing is recorded outside it).  ``VECTOR_FAMILIES`` are the families with a single
per-token cell and no fixed pools (``DefaultPoolConfigurator``, :mod:`kvplan.engines.sglang.pools.default`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from typing import TYPE_CHECKING

from kvplan.engines.sglang.pools.base import Breakdown, PoolContext, PoolFlags, PoolPlan, PoolPlanner
from kvplan.family import FAMILY_SPECS, Family

if TYPE_CHECKING:
    from kvplan.engines.sglang.pools.vector import VectorGroup
    from kvplan.hfconfig.spec import ModelSpec

__all__ = [
    "POOL_PLANNERS",
    "SWEEP_VECTORS",
    "VECTOR_FAMILIES",
    "Breakdown",
    "PoolContext",
    "PoolFlags",
    "PoolPlan",
    "PoolPlanner",
    "capturing_contexts",
    "vector_group",
]

#: the contexts the planners were called with, while :func:`capturing_contexts` is open (else None)
_CAPTURE: list[PoolContext] | None = None


@contextmanager
def capturing_contexts() -> Iterator[list[PoolContext]]:
    """Collect the :class:`PoolContext` every pool planner is called with inside the block (``kvplan sweep`` reads
    the representative ``fit``'s context; the planners behave the same)."""
    global _CAPTURE
    prev, _CAPTURE = _CAPTURE, []
    try:
        yield _CAPTURE
    finally:
        _CAPTURE = prev


def _planner(family: Family, module: str, *, supports_dcp: bool = False) -> PoolPlanner:
    """The planner whose ``plan`` / ``breakdown`` live in the module ``module`` (a dotted path of the family's
    :class:`~kvplan.family.FamilySpec`), imported on first use."""

    def plan(ctx: PoolContext) -> PoolPlan:
        if _CAPTURE is not None:
            _CAPTURE.append(ctx)
        result: PoolPlan = import_module(module).plan(ctx)
        return result

    def breakdown(model: ModelSpec) -> Breakdown:
        result: Breakdown = import_module(module).breakdown(model)
        return result

    return PoolPlanner(family=family, plan=plan, breakdown=breakdown, supports_dcp=supports_dcp)


#: family -> its SGLang pool planner (``FamilySpec.sglang_pools``, ``FamilySpec.sglang_dcp``)
POOL_PLANNERS: dict[Family, PoolPlanner] = {
    f: _planner(f, s.sglang_pools, supports_dcp=s.sglang_dcp) for f, s in FAMILY_SPECS.items()
}

#: the single-cell families (tokens = page_floor(budget // cell), no fixed pool): one sweep formula for all three
#: (``FamilySpec.single_cell``)
VECTOR_FAMILIES: frozenset[Family] = frozenset(f for f, s in FAMILY_SPECS.items() if s.single_cell)

#: family -> the module whose ``vector_group(ctx, cell=)`` evaluates the family in ``kvplan sweep``
#: (``FamilySpec.sglang_sweep``; ``kvplan.engines.sglang.pools.vector`` holds the single-cell formula of
#: :data:`VECTOR_FAMILIES`); a family absent here is evaluated one ``fit`` per point
SWEEP_VECTORS: dict[Family, str] = {f: s.sglang_sweep for f, s in FAMILY_SPECS.items() if s.sglang_sweep is not None}


def vector_group(family: Family, ctx: PoolContext, *, cell: float) -> VectorGroup | None:
    """The sweep's per-group state of ``family`` from the planner's context (``cell``: the representative fit's
    kv_bytes_per_token); None when the family (or this configuration of it) is evaluated one ``fit`` per point."""
    module = SWEEP_VECTORS.get(family)
    if module is None:
        return None
    out: VectorGroup | None = import_module(module).vector_group(ctx, cell=cell)
    return out
