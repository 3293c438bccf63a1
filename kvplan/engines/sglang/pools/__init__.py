"""SGLang's per-family pool planners, behind one registry.

``POOL_PLANNERS[family]`` prices one family's KV pools the way SGLang does: ``plan_sglang`` runs the shared
prologue (parallelism, device, KV dtype, context, default flags, budget) into a
:class:`~kvplan.engines.sglang.pools.base.PoolContext`, calls the family's planner, then the shared epilogue
(verdict, memory breakdown, FitResult); ``kvplan show`` asks the same planner for its breakdown.

Adding a family: its geometry in ``kvplan/geometry/<family>.py``, one planner module here (``plan(ctx) ->
PoolPlan`` and ``breakdown(model) -> Breakdown``), one line in :data:`POOL_PLANNERS`.  A planner module is imported
the first time its family is planned (``kvplan fit`` loads only the family it sizes: start-up is a feature).

``VECTOR_FAMILIES`` are the families whose budget -> tokens -> request-cap arithmetic ``kvplan sweep`` evaluates in
bulk over numpy arrays: a single per-token cell and no fixed pools (``DefaultPoolConfigurator``,
:mod:`kvplan.engines.sglang.pools.default`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from kvplan.engines.sglang.pools.base import Breakdown, PoolContext, PoolFlags, PoolPlan, PoolPlanner
from kvplan.family import Family

if TYPE_CHECKING:
    from kvplan.hfconfig.spec import ModelSpec

__all__ = ["POOL_PLANNERS", "VECTOR_FAMILIES", "Breakdown", "PoolContext", "PoolFlags", "PoolPlan", "PoolPlanner"]


def _planner(family: Family, module: str, *, supports_dcp: bool = False) -> PoolPlanner:
    """The planner whose ``plan`` / ``breakdown`` live in ``kvplan.engines.sglang.pools.<module>``."""
    name = f"{__name__}.{module}"

    def plan(ctx: PoolContext) -> PoolPlan:
        result: PoolPlan = import_module(name).plan(ctx)
        return result

    def breakdown(model: ModelSpec) -> Breakdown:
        result: Breakdown = import_module(name).breakdown(model)
        return result

    return PoolPlanner(family=family, plan=plan, breakdown=breakdown, supports_dcp=supports_dcp)


POOL_PLANNERS: dict[Family, PoolPlanner] = {
    Family.GQA: _planner(Family.GQA, "gqa", supports_dcp=True),
    Family.MLA: _planner(Family.MLA, "mla", supports_dcp=True),
    Family.DSA: _planner(Family.DSA, "dsa", supports_dcp=True),
    Family.DSV4: _planner(Family.DSV4, "dsv4"),
    Family.HYBRID_SWA: _planner(Family.HYBRID_SWA, "swa"),
    Family.HYBRID_MAMBA: _planner(Family.HYBRID_MAMBA, "mamba"),
}

#: families ``kvplan sweep`` vectorises (a single per-token cell, tokens = page_floor(budget // cell))
VECTOR_FAMILIES: frozenset[Family] = frozenset({Family.GQA, Family.MLA, Family.DSA})
