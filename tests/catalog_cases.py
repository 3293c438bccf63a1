"""Shared checks of the per-round catalog test files (tests/test_catalog_2026.py, test_catalog_*_s6.py,
test_catalog_hub_*.py): each file lists the presets it added in ``NEW_PRESETS`` and runs the same checks on them
(the file exists and loads strictly, its source names where the config.json came from, it plans under each engine
at a context no longer than its ``max_position_embeddings``, an engine refusal names a field).  The files keep their
own source rules and the assertions particular to their presets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit
from kvplan.result import FitResult

ENGINES = ("sglang", "vllm")

#: "github.com/ORG/REPO @<40 hex> <path>" as the catalog scripts write a vendored copy into ``source``:
#: groups (repository, commit, path)
GITHUB_SOURCE = re.compile(r"github\.com/([\w.-]+/[\w.-]+) @([0-9a-f]{40}) (\S+)")


def preset(stem: str) -> p.ModelPreset:
    """The shipped preset file ``configs/models/<stem>.toml``, loaded strictly without the cache."""
    path = p.configs_dir() / "models" / f"{stem}.toml"
    assert path.is_file(), f"{path.name} is missing"
    return p.load_model_file(path, use_cache=False)


def max_positions(m: p.ModelPreset) -> int | None:
    """``max_position_embeddings`` at the top level, else in ``text_config`` (None when neither holds an int)."""
    cfg = m.config
    pos = cfg.get("max_position_embeddings") or (cfg.get("text_config") or {}).get("max_position_embeddings")
    return pos if isinstance(pos, int) else None


def layer_count(m: p.ModelPreset) -> int | None:
    """``num_hidden_layers`` at the top level, else in ``text_config``."""
    return m.config.get("num_hidden_layers") or (m.config.get("text_config") or {}).get("num_hidden_layers")


def engine_cases(stems: Iterable[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(stem, engine) for every stem and engine, with their pytest ids."""
    cases = [(s, e) for s in sorted(stems) for e in ENGINES]
    return cases, [f"{s}-{e}" for s, e in cases]


def plan_or_refusal(stem: str, engine: str, gpu: str, tp: int, context: int) -> FitResult | None:
    """The preset planned on ``gpu`` at ``tp`` and ``context`` under ``engine``; None where the engine refuses it
    (an :class:`InputError`, which must name a field: a refusal is a verdict).  The context is checked to be no
    longer than the config's ``max_position_embeddings``, and the answer to plan that context."""
    m = preset(stem)
    max_pos = max_positions(m)
    assert max_pos is None or context <= max_pos, f"{stem}: context {context} > max_position_embeddings {max_pos}"
    try:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, engine=engine, context_length=context))
    except InputError as exc:
        assert exc.field, f"{stem} ({engine}): refusal names no field: {exc}"
        return None
    assert res.context_length == context, (stem, engine, res.context_length)
    return res


def assert_new_ids_distinct(stems: Iterable[str]) -> None:
    """Every catalog id (presets and variants) is unique, and each new preset is its own id in the catalog."""
    stems = list(stems)
    ids = [i for m in p.all_models() for i in (m.id, *(v.id for v in m.variants))]
    assert len(ids) == len(set(ids))
    mine = {preset(stem).id for stem in stems}
    assert len(mine) == len(stems)
    assert mine <= set(ids)


def assert_not_variants(stems: Iterable[str]) -> None:
    """No new preset's id is also a ``[[variants]]`` entry of another preset."""
    new = {preset(s).id for s in stems}
    variants = {v.id for m in p.all_models() for v in m.variants}
    assert not new & variants
