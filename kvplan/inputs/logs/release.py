"""Which releases of its engine a start-up log can come from: :func:`release_window` ``(facts) -> (oldest, newest,
reasons)``.

1. A version the log prints wins (``sglang==0.5.8``, ``lmsysorg/sglang:v0.5.8``, ``vLLM API server version 0.10.1``,
   ``LLM engine (v0.11.0) with config``, the vLLM logo line): the window is that version.  A ``sgl-dev`` docker tag
   (``rocm/sgl-dev:v0.5.8.post1-rocm720-mi35x-20260218``) is a main-branch build made after the tagged release: the
   window runs from that release to the next one, narrowed by the line formats.  A version outside the engine's
   releases (a fork's own number, e.g. ``sglang-kt 0.7.0``) is not used; the formats decide.
2. Else the line formats: the intersection of the release ranges of every release-specific form the log has
   (:data:`kvplan.inputs.logs.formats.MARKERS`, each read in the wheels).  When two forms contradict each other
   (a main-branch build already has some of the next release's lines), the window is the releases between them,
   from the lowest "printed up to" bound to the highest "printed from" bound, and a reason says so.
3. No release-specific form: every release kvplan knows of that engine.

Example: the SGLang docs notebook of 2025-01-23 prints ``Load weight end. type=..., dtype=..., avail mem=63.72 GB``
(no ``mem usage``: up to 0.4.3.post2), ``KV Cache is allocated. K size: ...`` (no ``#tokens``: 0.4.1.post6-
0.4.3.post2) and ``max_total_num_tokens=444500, max_prefill_tokens=16384, ...`` (no ``chunked_prefill_size``: up
to 0.4.1.post7): ``release_window(facts)`` = ("0.4.1.post6", "0.4.1.post7", reasons).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kvplan.inputs.logs.formats import BY_ID, Marker
from kvplan.inputs.logs.versions import (
    RELEASES,
    in_range,
    newest_of,
    next_release,
    oldest_of,
)
from kvplan.version import parse_version as release_key

if TYPE_CHECKING:
    from kvplan.inputs.logs.facts import LogFacts

ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM"}


class ReleaseWindow(NamedTuple):
    """The releases a log is consistent with, oldest and newest included, and why."""

    oldest: str
    newest: str
    reasons: tuple[str, ...]


def _span(engine: str, oldest: str | None, newest: str | None) -> str:
    name = ENGINE_NAMES[engine]
    if oldest and newest:
        return f"{name} {oldest}" if oldest == newest else f"{name} {oldest} to {newest}"
    if oldest:
        return f"{name} {oldest} and later"
    return f"{name} up to {newest}" if newest else f"every {name} release"


def _bounds(engine: str, m: Marker) -> tuple[str, str]:
    rel = RELEASES[engine]
    return m.oldest or rel[0], m.newest or rel[-1]


def format_window(engine: str, ids: tuple[str, ...] | list[str]) -> ReleaseWindow:
    """The releases whose line formats match every form in ``ids`` (see the module docstring, steps 2 and 3).

    Example: ``format_window("sglang", ["sg_weight_end_elapsed_dtype"])`` = ("0.5.9", "0.5.9", ...).
    """
    rel = RELEASES[engine]
    seen = [BY_ID[i] for i in ids if i in BY_ID and BY_ID[i].engine == engine]
    if not seen:
        return ReleaseWindow(rel[0], rel[-1], (f"no release-specific line form: {_span(engine, rel[0], rel[-1])}",))
    reasons = tuple(f"'{m.form}': {_span(engine, m.oldest, m.newest)}" for m in seen)
    lows = [_bounds(engine, m)[0] for m in seen]
    highs = [_bounds(engine, m)[1] for m in seen]
    lo, hi = newest_of(lows), oldest_of(highs)
    if release_key(lo) <= release_key(hi):  # type: ignore[operator]
        return ReleaseWindow(lo, hi, reasons)
    # contradicting forms: a build between the releases `hi` (newest "up to") and `lo` (oldest "from")
    why = (
        f"the forms disagree (printed up to {hi} / from {lo}): a main-branch or patched build between "
        f"{ENGINE_NAMES[engine]} {hi} and {lo}"
    )
    return ReleaseWindow(hi, lo, (why, *reasons))


def _intersect(a: ReleaseWindow, b: ReleaseWindow) -> ReleaseWindow | None:
    lo = newest_of([a.oldest, b.oldest])
    hi = oldest_of([a.newest, b.newest])
    if release_key(lo) > release_key(hi):  # type: ignore[operator]
        return None
    return ReleaseWindow(lo, hi, a.reasons + b.reasons)


def _printed_window(facts: LogFacts, fmt: ReleaseWindow) -> ReleaseWindow | None:
    """The window from the version the log prints, or None when it prints none the engine released."""
    engine, printed = facts.engine, facts.engine_version
    if not printed:
        return None
    version = printed.strip().removeprefix("v")
    text = facts.engine_version_text or printed
    if release_key(version) is None or not in_range(engine, version):
        return None
    if "sgl-dev" in text:
        after = next_release(engine, version) or version
        dev = ReleaseWindow(
            version,
            after,
            (f"docker image tag {text!r}: a main-branch build after {version}, nearest releases {version} to {after}",),
        )
        return _intersect(dev, fmt) or ReleaseWindow(dev.oldest, dev.newest, dev.reasons + fmt.reasons)
    reasons = [f"the log prints the version: {text!r}"]
    lo, hi = release_key(fmt.oldest), release_key(fmt.newest)
    if not (lo <= release_key(version) <= hi):  # type: ignore[operator]
        reasons.append(f"(its line formats suggest {fmt.oldest} to {fmt.newest}: a patched or main-branch build?)")
    return ReleaseWindow(version, version, tuple(reasons))


def release_window(facts: LogFacts) -> ReleaseWindow:
    """(oldest, newest, reasons): the releases of ``facts.engine`` the log can come from (module docstring).

    Pure: reads ``facts.engine``, ``facts.engine_version``, ``facts.engine_version_text`` and ``facts.formats``.
    """
    fmt = format_window(facts.engine, facts.formats)
    printed = _printed_window(facts, fmt)
    if printed is not None:
        return printed
    if facts.engine_version:
        rel = RELEASES[facts.engine]
        note = (
            f"the log names version {facts.engine_version!r}, not a {ENGINE_NAMES[facts.engine]} release "
            f"{rel[0]} to {rel[-1]} (a fork's own number?): the line formats decide"
        )
        return ReleaseWindow(fmt.oldest, fmt.newest, (note, *fmt.reasons))
    return fmt
