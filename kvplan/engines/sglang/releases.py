"""SGLang's sizing rules keyed by release: a table of release windows, each mapped to one rule set.

A :class:`RuleSet` is everything ``plan_sglang`` and the pool planners read that changes between releases: the
default-flag heuristics (``mem_fraction_static``, chunked prefill, CUDA-graph batch size, prefill graph), the page
size default and the family overrides of it, the budget formula, the page floor, the request-cap rule, the PP
split.  :func:`rules_for` picks the set of a release; a release outside every window gets the newest set (and
:func:`release_warning` says so), which is what kvplan did before it knew more than one release.

Today there is one window, SGLang 0.5.23 (its functions live in :mod:`kvplan.engines.sglang.rules`, each citing
the engine code).  A new window is one more :class:`RuleSet` (reusing the functions that did not change) and one
more :data:`RELEASES` row; docs/reference notes on 0.3.0 - 0.5.23 list what differs.

Example::

    rules_for("0.5.23").release == "0.5.23"
    rules_for(None) is rules_for("v0.5.23")            # the default release
    release_warning("0.5.20")  # 'kvplan models SGLang 0.5.23; 0.5.20 may size some layouts differently (...)'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kvplan.engines.sglang import rules as r0523
from kvplan.family import Family


@dataclass(frozen=True)
class FamilyOverride:
    """What SGLang's model override of one family forces at server-args resolution.

    ``page_size``: the page it forces whatever ``--page-size`` says; ``max_running_requests``: its default when
    the flag is unset (declared after the ``mem_fraction_static`` heuristic ran); ``prefill_cuda_graph``: False
    when the override turns the (breakable) prefill CUDA graph off.
    """

    name: str
    page_size: int | None = None
    max_running_requests: int | None = None
    prefill_cuda_graph: bool = True


@dataclass(frozen=True)
class RuleSet:
    """The sizing rules of one SGLang release window (pure functions, keyword-only, as in ``rules``)."""

    release: str
    default_mem_fraction_static: Callable[..., float]
    default_chunked_prefill_size: Callable[..., int]
    default_cuda_graph_max_bs: Callable[..., int]
    default_prefill_cuda_graph: Callable[..., bool]
    default_page_size: Callable[..., int]
    budget_bytes: Callable[..., Any]
    multimodal_reserve_bytes: Callable[..., int]
    page_floor: Callable[..., Any]
    pool_tokens: Callable[..., Any]
    resolve_max_running_requests: Callable[..., Any]
    max_running_requests_reduction: Callable[..., Any]
    max_request_len: Callable[..., Any]
    speculative_cell: Callable[..., int]
    pp_layer_ranges: Callable[..., list[tuple[int, int]]]
    #: families whose attention SGLang runs as MLA (the heuristic's 1.5 GiB MLA prefill-graph reserve)
    mla_families: frozenset[Family]
    #: family model overrides (DeepSeek-V4: page 256, 256 running requests, no prefill graph)
    overrides: Mapping[Family, FamilyOverride] = field(default_factory=lambda: MappingProxyType({}))

    def override(self, family: Family) -> FamilyOverride | None:
        """The family's model override, or None when SGLang applies none."""
        return self.overrides.get(family)


#: SGLang 0.5.23 (sgl-project/sglang, python/sglang/srt; see each function's docstring in ``rules``).
SGLANG_0_5_23 = RuleSet(
    release="0.5.23",
    default_mem_fraction_static=r0523.default_mem_fraction_static,
    default_chunked_prefill_size=r0523.default_chunked_prefill_size,
    default_cuda_graph_max_bs=r0523.default_cuda_graph_max_bs,
    default_prefill_cuda_graph=r0523.default_prefill_cuda_graph,
    default_page_size=r0523.default_page_size,
    budget_bytes=r0523.budget_bytes,
    multimodal_reserve_bytes=r0523.multimodal_reserve_bytes,
    page_floor=r0523.page_floor,
    pool_tokens=r0523.pool_tokens,
    resolve_max_running_requests=r0523.resolve_max_running_requests,
    max_running_requests_reduction=r0523.max_running_requests_reduction,
    max_request_len=r0523.max_request_len,
    speculative_cell=r0523.speculative_cell,
    pp_layer_ranges=r0523.pp_layer_ranges,
    mla_families=frozenset({Family.MLA, Family.DSA}),
    # arg_groups/model_overrides/deepseek_v4.py _deepseek_v4_overrides (page 256); deepseek_v4_hook.py
    # apply_deepseek_v4_defaults (max_running_requests 256); cuda_graph_hook.py (no prefill graph for DSV4)
    overrides=MappingProxyType({Family.DSV4: FamilyOverride(name="DeepSeek-V4", page_size=256,
                                                            max_running_requests=256, prefill_cuda_graph=False)}),
)


@dataclass(frozen=True)
class ReleaseWindow:
    """Releases ``first`` .. ``last`` (inclusive, ``X.Y.Z``) share ``rules``."""

    first: str
    last: str
    rules: RuleSet

    def covers(self, version: str) -> bool:
        key = release_key(version)
        return key is not None and release_key(self.first) <= key <= release_key(self.last)  # type: ignore[operator]


#: newest first; the first row is the default release
RELEASES: tuple[ReleaseWindow, ...] = (
    ReleaseWindow(first="0.5.23", last="0.5.23", rules=SGLANG_0_5_23),
)
DEFAULT_RULES: RuleSet = RELEASES[0].rules

_VERSION = re.compile(r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


def release_key(version: str) -> tuple[int, int, int] | None:
    """``"0.5.23"`` / ``"v0.5.23"`` -> ``(0, 5, 23)``; anything else (``.postN``, rc builds, junk) -> None."""
    m = _VERSION.fullmatch(version) if isinstance(version, str) else None
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def window_for(version: str | None) -> ReleaseWindow | None:
    """The window holding ``version`` (None: the default release's window); None when no window does."""
    if version is None:
        return RELEASES[0]
    return next((w for w in RELEASES if w.covers(version)), None)


def rules_for(version: str | None) -> RuleSet:
    """The rule set of release ``version`` (None: the default); a release outside every window gets the default
    set, as kvplan has always sized unknown releases (:func:`release_warning` gives the warning)."""
    window = window_for(version)
    return window.rules if window is not None else DEFAULT_RULES


def release_warning(version: str | None) -> str | None:
    """The warning for a release no window covers, else None.

    Example: ``release_warning("0.5.20")`` -> ``"kvplan models SGLang 0.5.23; 0.5.20 may size some layouts
    differently (see docs/sglang.md)"``; ``release_warning("v0.5.23") is None``.
    """
    if not version or window_for(version) is not None:
        return None
    return (f"kvplan models SGLang {DEFAULT_RULES.release}; {version} may size some layouts "
            f"differently (see docs/sglang.md)")
