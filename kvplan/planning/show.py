"""``kvplan show MODEL``: geometry and KV bytes per token per GPU by dtype and TP (SGLang 0.5.23 rules).

The per-family part comes from the family's SGLang pool planner (``POOL_PLANNERS[family].breakdown``), the same
planner ``kvplan fit`` sizes the pools with.
"""

from __future__ import annotations

from typing import Any


def show_rows(model_text: str, gpu_text: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from kvplan.engines.sglang.pools import POOL_PLANNERS
    from kvplan.family import family_or_none
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

    m = resolve_model(model_text)
    if gpu_text:
        resolve_gpu(gpu_text)  # validated (an unknown GPU is an input error); the breakdown does not depend on it
    info: dict[str, Any] = {
        "model": m.id, "family": m.family, "architecture": m.architecture, "layers": m.num_layers,
        "context_length": m.context_length, "weights": m.quantization, "source": m.source,
    }
    if m.notes:
        info["notes"] = " ".join(m.notes)
    fam = family_or_none(m.family)
    planner = POOL_PLANNERS.get(fam) if fam is not None else None
    if planner is None:
        info["note"] = f"{m.family} models: per-layer-group breakdown not yet available"
        return info, []
    part = planner.breakdown(m)
    info.update(part.info)
    return info, part.rows
