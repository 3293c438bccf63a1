"""vLLM's text-only serving of a multimodal model: when it builds no vision tower (``--language-model-only``, a zero
``--limit-mm-per-prompt`` for every modality the tower serves, from 0.18) and the line that says why a tower stays
counted.  Split from :mod:`kvplan.engines.vllm.planner`, which asks it once per plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.deployment import MM_LIMIT_DEFAULT
from kvplan.engines.vllm.releases import release_numbers
from kvplan.errors import InputError

if TYPE_CHECKING:
    from kvplan.engines.vllm.planner import VllmInputs


#: the first release read whose model classes build no vision tower when every modality it serves has a zero
#: ``--limit-mm-per-prompt`` (``SupportsMultiModal._mark_tower_model``, vllm/model_executor/models/interfaces.py,
#: read in v0.18.0, v0.21.0 and v0.34.0); ``--language-model-only`` (first in the 0.18.0 flag table, not in 0.15.0)
#: makes ``MultiModalConfig.get_limit_per_prompt`` return 0 for every modality, the same path
TOWER_SKIP_SINCE = (0, 18, 0)


def _release_flag(version: str, flag: str) -> None:
    """The release's own refusal of a flag its parser does not know (kvplan's flag table of that release,
    :mod:`kvplan.inputs.flagtables`): InputError naming the flag and the first table that has it."""
    from kvplan.inputs.flagtables import load, releases, table_for

    try:
        table = table_for("vllm", version)
    except InputError:  # no release number (a main build) or older than every table: the release check names it
        return
    if flag in table.options:
        return
    first = next((r for r in releases("vllm") if flag in load("vllm", r).options), None)
    raise InputError(
        f"vLLM {version} has no {flag} (its flag table {table.release} lacks it"
        + (f"; the first table with it is {first})" if first else ")"),
        field=flag,
        hint=f"use --engine-version {first} or newer, or drop {flag}" if first else f"drop {flag}",
    )


def text_only_reason(inp: VllmInputs, version: str) -> str | None:
    """Why vLLM builds no vision tower for this deployment (the flag, as the assumption line names it), or None.

    ``--language-model-only``, or ``--limit-mm-per-prompt`` zero for every modality the family's tower is marked
    with (:data:`kvplan.weights.vision.VLLM_TOWER_MODALITIES`; a modality the value leaves out counts 999), from
    :data:`TOWER_SKIP_SINCE`.  A release whose parser lacks the flag refuses it (InputError).  None too for a model
    with no tower kvplan prices by family, and for zero limits before 0.18 (the tower stays counted and a line says
    that case is not modelled).  Examples: Llama-4-Scout with ``{"image": 0}`` -> the limit;
    Qwen3-VL with ``{"image": 0}`` -> None (video still 999)."""
    if not inp.language_model_only and inp.limit_mm_per_prompt is None:
        return None
    if inp.language_model_only:
        _release_flag(version, "--language-model-only")
    if inp.limit_mm_per_prompt is not None:
        _release_flag(version, "--limit-mm-per-prompt")
    from kvplan.weights.vision import vllm_tower_modalities  # lazy: only text-only plans read it

    modalities = vllm_tower_modalities(inp.config)
    if modalities is None or release_numbers(version) < TOWER_SKIP_SINCE:
        return None
    if inp.language_model_only:
        return "--language-model-only: vLLM builds no vision tower"
    limits = dict(inp.limit_mm_per_prompt or ())
    if all(limits.get(m, MM_LIMIT_DEFAULT) == 0 for m in modalities):
        return f"--limit-mm-per-prompt gives 0 {' and '.join(modalities)} items: vLLM builds no vision tower"
    return None


def tower_kept_note(inp: VllmInputs, version: str) -> str:
    """Why the tower stays counted although a text-only flag was given (the model, the release or the limits)."""
    from kvplan.weights.vision import vllm_tower_modalities

    modalities = vllm_tower_modalities(inp.config)
    if modalities is None:
        return (
            "--limit-mm-per-prompt / --language-model-only: the model has no vision tower kvplan prices by family "
            "(a generic ViT, if any, stays counted)"
        )
    limits = dict(inp.limit_mm_per_prompt or ())
    if release_numbers(version) < TOWER_SKIP_SINCE and all(limits.get(m, MM_LIMIT_DEFAULT) == 0 for m in modalities):
        return (
            f"--limit-mm-per-prompt 0 before vLLM 0.18 is not modelled: the vision tower is counted "
            f"(vLLM {version} predates the _mark_tower_model path kvplan reads)"
        )
    return f"vision tower counted: --limit-mm-per-prompt leaves a modality it serves ({', '.join(modalities)}) above 0"
