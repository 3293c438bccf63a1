"""The engine release a start-up log is planned with (``kvplan calibrate`` and ``kvplan fit --from-log``).

:func:`choose_release` picks the release whose rules the recovered deployment gets (its ``engine_version``):

1. ``--engine-version`` when given (it settles a window);
2. else the version the log prints, or the one release its line formats allow
   (:func:`kvplan.inputs.logs.release_window`);
3. else the newest release of the window the formats allow (SGLang's rules of that release; a release newer than
   the newest kvplan has rules for is planned with the newest it has, and the reasons say so).

:func:`rule_windows` splits a window into the stretches of releases that share one rule set (SGLang
``kvplan.engines.sglang.releases.windows_between``; vLLM ``kvplan.engines.vllm.releases.release_for``), newest first,
so that calibrate can show the answer under each rule when the window spans a rule change.

Example: the SGLang docs notebook of 2025-01-23 (formats: 0.4.1.post6 to 0.4.1.post7) is planned as 0.4.1.post7,
``engine_versions_possible`` = ["0.4.1.post6", "0.4.1.post7"].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.inputs.logs import LogFacts


@dataclass(frozen=True)
class LogRelease:
    """The release a log's deployment is planned with, the releases the log allows, and why."""

    applied: str  # Deployment.engine_version
    possible: tuple[str, str]  # (oldest, newest) the log is consistent with
    source: str  # where ``applied`` comes from (the Input source)
    reasons: tuple[str, ...]
    settled: bool  # --engine-version, a printed version or a one-release window


def newest_supported(engine: str) -> str:
    """The newest release kvplan has the rules of (:mod:`kvplan.supported`, through the engine object)."""
    from kvplan.engines.registry import engine as engine_of

    return engine_of(engine).newest


def _clamped(engine: str, version: str) -> tuple[str, str | None]:
    """``version``, or the newest release kvplan has rules for when ``version`` is newer (with the reason)."""
    from kvplan.version import parse_version as release_key

    top = newest_supported(engine)
    key, top_key = release_key(version), release_key(top)
    if key is not None and top_key is not None and key > top_key:
        return top, f"{version} is newer than the newest release kvplan has the rules of: planned as {top}"
    return version, None


def choose_release(facts: LogFacts, override: str | None) -> LogRelease:
    """The release of ``facts``'s deployment (module docstring); ``override`` is ``--engine-version``."""
    from kvplan.inputs.logs import release_window
    from kvplan.inputs.logs.release import ENGINE_NAMES
    from kvplan.version import parse_version as release_key

    win = release_window(facts)
    possible = (win.oldest, win.newest)
    span = win.oldest if win.oldest == win.newest else f"{win.oldest} to {win.newest}"
    name = ENGINE_NAMES[facts.engine]
    if override:
        key, lo, hi = release_key(override), release_key(win.oldest), release_key(win.newest)
        outside = key is not None and lo is not None and hi is not None and not lo <= key <= hi
        note: tuple[str, ...] = ()
        if outside:
            note = (f"--engine-version {override} is outside {name} {span}, the releases the log allows",)
        return LogRelease(override, possible, "--engine-version", win.reasons + note, True)
    applied, clamp = _clamped(facts.engine, win.newest)
    reasons = win.reasons + ((clamp,) if clamp else ())
    printed = facts.engine_version and win.oldest == win.newest == facts.engine_version.strip().removeprefix("v")
    if printed:
        return LogRelease(applied, possible, "log", reasons, True)
    if win.oldest == win.newest:
        return LogRelease(applied, possible, f"log format ({name} {span})", reasons, True)
    return LogRelease(applied, possible, f"log format: the newest of {name} {span}", reasons, False)


def rule_windows(engine: str, oldest: str, newest: str) -> list[tuple[str, str, str]]:
    """``(release to plan, first, last)`` for every stretch of ``oldest`` .. ``newest`` that shares one rule set,
    newest first; the release to plan is the stretch's newest (clamped to the newest kvplan has rules for).

    Example (SGLang): 0.4.1.post6 .. 0.4.3.post2 -> one stretch per rule window the releases module has there.
    """
    from kvplan.inputs.logs.versions import newest_of, oldest_of
    from kvplan.version import parse_version as release_key

    if release_key(oldest) is None or release_key(newest) is None:
        return [(newest, oldest, newest)]
    top, _ = _clamped(engine, newest)
    if release_key(oldest) > release_key(top):  # type: ignore[operator]
        return [(top, oldest, newest)]
    from kvplan.engines.registry import engine as engine_of

    stretches = engine_of(engine).release_stretches(oldest, top)
    out: list[tuple[str, str, str]] = []
    for first, last in stretches:
        lo, hi = newest_of([first, oldest]), oldest_of([last, top])
        if release_key(lo) <= release_key(hi):  # type: ignore[operator]
            out.append((hi, lo, hi))
    if not out:
        return [(top, oldest, newest)]
    out.sort(key=lambda t: release_key(t[2]), reverse=True)  # type: ignore[arg-type, return-value]
    if top != newest:  # releases newer than kvplan's rules share the newest rule set
        out[0] = (out[0][0], out[0][1], newest)
    return out
