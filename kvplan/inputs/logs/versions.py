"""Engine release numbers: every SGLang and vLLM release kvplan knows, in order, and the order of version strings.

The lists are the releases on PyPI (``pip index versions sglang --pre`` / ``vllm --pre``), SGLang from 0.3.0 and
vLLM from 0.5.0, up to the newest each engine has published (SGLang 0.5.23, vLLM 0.34.0).  They let the log reader
name a release window by its real end points (``0.4.1.post6 .. 0.4.3.post2``) and tell a fork's own version
(``sglang-kt 0.7.0``) from an SGLang release.

The order is :class:`kvplan.version.Version`'s (PEP 440, the subset engines use): ``X.Y.Z.devN < X.Y.ZrcN.devM <
X.Y.ZrcN < X.Y.Z < X.Y.Z.postN`` and a fourth number sorts after the third (``0.10.1 < 0.10.1.1 < 0.10.2``); a local
label (``+g393de22d2``) is ignored.

Example: ``next_release("sglang", "0.5.8.post1")`` = ``"0.5.9"``; ``releases_between("sglang", "0.4.1.post6",
"0.4.2")`` = ("0.4.1.post6", "0.4.1.post7", "0.4.2").
"""

from __future__ import annotations

from kvplan.version import Version, parse_version

SGLANG_RELEASES: tuple[str, ...] = (
    "0.3.0",
    "0.3.1",
    "0.3.1.post1",
    "0.3.1.post2",
    "0.3.1.post3",
    "0.3.2",
    "0.3.3",
    "0.3.3.post1",
    "0.3.4",
    "0.3.4.post1",
    "0.3.4.post2",
    "0.3.5",
    "0.3.5.post1",
    "0.3.5.post2",
    "0.3.6",
    "0.3.6.post1",
    "0.3.6.post2",
    "0.3.6.post3",
    "0.4.0",
    "0.4.0.post1",
    "0.4.0.post2",
    "0.4.1",
    "0.4.1.post1",
    "0.4.1.post2",
    "0.4.1.post3",
    "0.4.1.post4",
    "0.4.1.post5",
    "0.4.1.post6",
    "0.4.1.post7",
    "0.4.2",
    "0.4.2.post1",
    "0.4.2.post2",
    "0.4.2.post3",
    "0.4.2.post4",
    "0.4.3",
    "0.4.3.post1",
    "0.4.3.post2",
    "0.4.3.post3",
    "0.4.3.post4",
    "0.4.4",
    "0.4.4.post1",
    "0.4.4.post2",
    "0.4.4.post3",
    "0.4.4.post4",
    "0.4.5",
    "0.4.5.post1",
    "0.4.5.post2",
    "0.4.5.post3",
    "0.4.6",
    "0.4.6.post1",
    "0.4.6.post2",
    "0.4.6.post3",
    "0.4.6.post4",
    "0.4.6.post5",
    "0.4.7",
    "0.4.7.post1",
    "0.4.8",
    "0.4.8.post1",
    "0.4.9",
    "0.4.9.post1",
    "0.4.9.post2",
    "0.4.9.post3",
    "0.4.9.post4",
    "0.4.9.post5",
    "0.4.9.post6",
    "0.4.10",
    "0.4.10.post1",
    "0.4.10.post2",
    "0.5.0rc0",
    "0.5.0rc1",
    "0.5.0rc2",
    "0.5.1",
    "0.5.1.post1",
    "0.5.1.post2",
    "0.5.1.post3",
    "0.5.2rc0",
    "0.5.2rc1",
    "0.5.2rc2",
    "0.5.2",
    "0.5.3rc0",
    "0.5.3rc2",
    "0.5.3",
    "0.5.3.post1",
    "0.5.3.post2",
    "0.5.3.post3",
    "0.5.4",
    "0.5.4.post1",
    "0.5.4.post2",
    "0.5.4.post3",
    "0.5.5",
    "0.5.5.post1",
    "0.5.5.post2",
    "0.5.5.post3",
    "0.5.6",
    "0.5.6.post1",
    "0.5.6.post2",
    "0.5.7",
    "0.5.8",
    "0.5.8.post1",
    "0.5.9",
    "0.5.10rc0",
    "0.5.10",
    "0.5.10.post1",
    "0.5.11",
    "0.5.12",
    "0.5.12.post1",
    "0.5.13",
    "0.5.13.post1",
    "0.5.14",
    "0.5.15",
    "0.5.15.post1",
    "0.5.16",
    "0.5.17",
    "0.5.18",
    "0.5.19",
    "0.5.20",
    "0.5.21",
    "0.5.22",
    "0.5.23",
)

VLLM_RELEASES: tuple[str, ...] = (
    "0.5.0",
    "0.5.0.post1",
    "0.5.1",
    "0.5.2",
    "0.5.3",
    "0.5.3.post1",
    "0.5.4",
    "0.5.5",
    "0.6.0",
    "0.6.1",
    "0.6.1.post1",
    "0.6.1.post2",
    "0.6.2",
    "0.6.3",
    "0.6.3.post1",
    "0.6.4",
    "0.6.4.post1",
    "0.6.5",
    "0.6.6",
    "0.6.6.post1",
    "0.7.0",
    "0.7.1",
    "0.7.2",
    "0.7.3",
    "0.8.0",
    "0.8.1",
    "0.8.2",
    "0.8.3",
    "0.8.4",
    "0.8.5",
    "0.8.5.post1",
    "0.9.0",
    "0.9.0.1",
    "0.9.1",
    "0.9.2",
    "0.10.0",
    "0.10.1",
    "0.10.1.1",
    "0.10.2",
    "0.11.0",
    "0.11.1",
    "0.11.2",
    "0.12.0",
    "0.13.0",
    "0.14.0",
    "0.14.1",
    "0.15.0",
    "0.15.1",
    "0.16.0",
    "0.17.0",
    "0.17.1",
    "0.18.0",
    "0.18.1",
    "0.19.0",
    "0.19.1",
    "0.20.0",
    "0.20.1",
    "0.20.2",
    "0.21.0",
    "0.22.0",
    "0.22.1",
    "0.23.0",
    "0.24.0",
    "0.25.0",
    "0.25.1",
    "0.26.0",
    "0.27.0",
    "0.27.1",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.32.0",
    "0.33.0",
    "0.34.0",
)

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
