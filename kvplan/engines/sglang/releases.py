"""SGLang's sizing rules keyed by release, 0.3.0 - 0.5.23: the version parser, the release windows, their rules.

A :class:`RuleSet` is everything ``plan_sglang`` and the pool planners read that changes between releases: the
default-flag heuristics (``mem_fraction_static``, chunked prefill, CUDA-graph batch size, prefill graph), the page
size default and the family overrides of it, the budget formula and its deductions, the page floor, the request-cap
rule, the PP split, the multimodal factors, which pool layouts the release had, and the values the hybrid-SWA and
Mamba pool planners read (who gets the SWA pool, how its budget is split, the ratio defaults, the Mamba slot rule).
:data:`RELEASES` lists the windows oldest first; each window is the rule set of its first release, built from the
previous window by the
changes that release made (``kvplan.engines.sglang.history._CHANGES``, one row per release where a sizing rule
changed, read from the wheels: ``pip download --no-deps sglang==X``; docs/sglang.md "What changed by release" cites
the wheel paths).  This module holds the window lookup (``resolve``, ``rules_for``, ``check_family``); the types,
the parser, the release dates, the families by release and the 0.5.23 rule set live in
:mod:`kvplan.engines.sglang.release_types` (below the history, which builds from them) and are re-exported here; the
older rules and the window table are built on the first plan that names an older release (start-up).

Accepted ``--engine-version`` forms (:func:`read_release`):

* a release, ``0.4.7`` / ``v0.4.7`` / ``0.4.7.post1`` (a local or docker suffix, ``+cu124`` / ``-rocm720-mi35x``,
  is ignored);
* a release candidate, ``0.5.0rc2`` / ``0.5.2rc2``: sized as the release it is the candidate of (0.5.0 was only
  published as rc builds; its window is the one after 0.4.10), and the result says so;
* a main-branch build by date, ``main-2025-08-01`` / ``main-20250801``, or ``0.5.3.dev20250801``: mapped to the
  newest release built on or before that date (:data:`RELEASE_DATES`, the build dates stored in the wheels; a
  ``.devDATE`` build also stays below its own version), and the result says so;
* ``None``: the newest release, 0.5.23.

A release outside :data:`SUPPORTED` (``0.2.0``, ``9.9``) or an unreadable string is an :class:`InputError` on
``--engine-version`` naming the supported range.  A family the release did not have (DeepSeek-V4 before 0.5.12, ...)
is an :class:`InputError` naming the first release that has it (:func:`check_family`).

Example::

    rules_for("0.4.4").default_mem_fraction_static(tp_size=1, pp_size=1, gpu_memory_mib=81_559)   # 0.88
    resolve("main-2025-08-01").release == "0.4.10"          # the newest release built on or before that day
    window_for("0.5.0rc2").first == "0.4.9.post6"           # sized as 0.5.0, after 0.4.10
    rules_for(None) is DEFAULT_RULES                         # 0.5.23
"""

from __future__ import annotations

from typing import Any

# the types, the newest rule set, the dates and the parser live one module below (release_types), where the
# history that builds RELEASES can import them; every name is re-exported here, so old import paths work
from kvplan.engines.sglang.release_types import (
    _MAIN,
    DEFAULT_RELEASE,
    DEFAULT_RULES,
    FAMILY_SINCE,
    POOL_RULES_0523,
    QWEN3_NEXT_SM100_ADDED,
    RELEASE_DATES,
    SUPPORTED,
    SWA_ARCHS_0523,
    SWA_DISABLED_0523,
    FamilyOverride,
    PoolRules,
    Release,
    ReleaseWindow,
    RuleSet,
    _bad,
    _bs_0523,
    _by_date,
    _cps_0523,
    _identity_factor,
    _mfs_0523,
    _page_0523,
    _prefill_0523,
    qwen3_next_sm100_page,
    read_release,
)
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.version import Version

#: the names of this module and the re-exported ones of release_types (mypy: an explicit re-export)
__all__ = [
    "DEFAULT_RELEASE",
    "DEFAULT_RULES",
    "FAMILY_SINCE",
    "POOL_RULES_0523",
    "QWEN3_NEXT_SM100_ADDED",
    "RELEASE_DATES",
    "SUPPORTED",
    "SWA_ARCHS_0523",
    "SWA_DISABLED_0523",
    "_MAIN",
    "FamilyOverride",
    "PoolRules",
    "Release",
    "ReleaseWindow",
    "RuleSet",
    "_bad",
    "_bs_0523",
    "_by_date",
    "_cps_0523",
    "_identity_factor",
    "_mfs_0523",
    "_page_0523",
    "_prefill_0523",
    "check_family",
    "qwen3_next_sm100_page",
    "read_release",
    "release_warning",
    "resolve",
    "rules_for",
    "window_for",
    "windows_between",
]

_DEFAULT_WINDOW = ReleaseWindow(first=DEFAULT_RELEASE, last=DEFAULT_RELEASE, rules=DEFAULT_RULES)


def __getattr__(name: str) -> Any:
    """``RELEASES``, the windows oldest first, is built (from :mod:`kvplan.engines.sglang.history`) on first use."""
    if name == "RELEASES":
        return _releases()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _releases() -> tuple[ReleaseWindow, ...]:
    table = globals().get("RELEASES")
    if table is None:
        from kvplan.engines.sglang.history import build_windows

        table = globals()["RELEASES"] = build_windows()
    return table


def _window_of(key: Version) -> ReleaseWindow:
    """The last window (in :data:`RELEASES` order) whose range holds ``key``; the newest window above it."""
    windows = _releases()
    hit = [w for w in windows if Version.of(w.first) <= key <= Version.of(w.last)]
    if hit:
        return hit[-1]
    below = [w for w in windows if Version.of(w.first) <= key]
    return below[-1] if below else windows[0]


def resolve(version: str | None) -> tuple[Release, ReleaseWindow]:
    """(the parsed release, its window); ``None`` -> the default release."""
    if version is None:
        rel = Release(requested=DEFAULT_RELEASE, release=DEFAULT_RELEASE, key=Version.of(DEFAULT_RELEASE))
        return rel, _DEFAULT_WINDOW
    rel = read_release(version)
    return rel, _window_of(rel.key)


def window_for(version: str | None) -> ReleaseWindow:
    """The window holding ``version`` (None: the default release's); InputError outside :data:`SUPPORTED`."""
    return resolve(version)[1]


def rules_for(version: str | None) -> RuleSet:
    """The rule set of release ``version`` (None: the default, 0.5.23); InputError outside :data:`SUPPORTED`."""
    if version is None:
        return DEFAULT_RULES
    return window_for(version).rules


def windows_between(oldest: str, newest: str) -> list[ReleaseWindow]:
    """Every window with a release in ``oldest`` .. ``newest`` (for a log whose format bounds its release)."""
    lo, hi = read_release(oldest).key, read_release(newest).key
    return [w for w in _releases() if Version.of(w.first) <= hi and Version.of(w.last) >= lo]


def check_family(version: str | None, family: Family) -> None:
    """InputError when release ``version`` had no pool layout for ``family`` (names the first release that has it).

    Example: ``check_family("0.5.2", Family.DSA)`` -> "SGLang 0.5.2 has no DSA pool (first in 0.5.3)".
    """
    since = FAMILY_SINCE.get(family)
    if version is None or since is None:
        return
    rel = read_release(version)
    if rel.key < Version.of(since):
        raise InputError(
            f"SGLang {rel.requested} has no {family.value} pool layout (the first release with it is {since})",
            field="--engine-version",
            hint=f"use --engine-version {since} or newer for this model",
        )


def release_warning(version: str | None) -> str | None:
    """The warning for a release no window covers (an InputError now stops those first), else None."""
    if not version:
        return None
    try:
        read_release(version)
    except InputError:
        return (
            f"kvplan models SGLang {SUPPORTED[0]} - {SUPPORTED[1]}; {version} may size some layouts "
            f"differently (see docs/sglang.md)"
        )
    return None
