"""Engine release numbers: every SGLang and vLLM release kvplan knows, in order, and the order of version strings.

The lists are :mod:`kvplan.supported`'s (one release list per engine, declared there): the releases on PyPI, SGLang
from 0.3.0 and vLLM from 0.5.0, up to the newest kvplan has read.  They let the log reader
name a release window by its real end points (``0.4.1.post6 .. 0.4.3.post2``) and tell a fork's own version
(``sglang-kt 0.7.0``) from an SGLang release.

The order is :class:`kvplan.version.Version`'s (PEP 440, the subset engines use): ``X.Y.Z.devN < X.Y.ZrcN.devM <
X.Y.ZrcN < X.Y.Z < X.Y.Z.postN`` and a fourth number sorts after the third (``0.10.1 < 0.10.1.1 < 0.10.2``); a local
label (``+g393de22d2``) is ignored.

Example: ``next_release("sglang", "0.5.8.post1")`` = ``"0.5.9"``; ``releases_between("sglang", "0.4.1.post6",
"0.4.2")`` = ("0.4.1.post6", "0.4.1.post7", "0.4.2").
"""

from __future__ import annotations

from kvplan.supported import SGLANG_RELEASES, VLLM_RELEASES
from kvplan.version import Version, parse_version

#: engine -> its releases, oldest first
RELEASES: dict[str, tuple[str, ...]] = {"sglang": SGLANG_RELEASES, "vllm": VLLM_RELEASES}


def is_release(engine: str, version: str) -> bool:
    """True when ``version`` (``v`` prefix allowed) is one of ``engine``'s published releases."""
    return version.strip().removeprefix("v") in RELEASES[engine]


def in_range(engine: str, version: str) -> bool:
    """True when ``version`` sorts between the engine's oldest and newest release kvplan knows (both included)."""
    key = parse_version(version)
    rel = RELEASES[engine]
    return key is not None and Version.of(rel[0]) <= key <= Version.of(rel[-1])


def releases_between(engine: str, oldest: str, newest: str) -> tuple[str, ...]:
    """The engine's releases from ``oldest`` to ``newest`` (both included), oldest first.

    Example: ``releases_between("sglang", "0.4.1.post6", "0.4.2")`` = ("0.4.1.post6", "0.4.1.post7", "0.4.2").
    """
    lo, hi = Version.of(oldest), Version.of(newest)
    return tuple(v for v in RELEASES[engine] if lo <= Version.of(v) <= hi)


def next_release(engine: str, version: str) -> str | None:
    """The first release after ``version`` (None when it is the newest)."""
    key = Version.of(version)
    return next((v for v in RELEASES[engine] if Version.of(v) > key), None)


def previous_release(engine: str, version: str) -> str | None:
    """The last release before ``version`` (None when it is the oldest)."""
    key = Version.of(version)
    older = [v for v in RELEASES[engine] if Version.of(v) < key]
    return older[-1] if older else None


def sort_versions(versions: list[str]) -> list[str]:
    """``versions`` oldest first (every item must be a version)."""
    return sorted(versions, key=Version.of)


def oldest_of(versions: list[str]) -> str:
    return min(versions, key=Version.of)


def newest_of(versions: list[str]) -> str:
    return max(versions, key=Version.of)
