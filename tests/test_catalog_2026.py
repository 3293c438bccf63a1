"""The presets added for issue 25 item 7 (this year's models in the catalog): each one names the public verbatim
copy of its config.json it was written from, loads strictly, and plans under both engines on one GPU that holds it.

NEW_PRESETS lists the files added by that item; the catalog size is asserted as a lower bound, so deleting any
preset (new or old) fails here.  A plan may answer ``fits: false`` (an answer); an engine refusal must be an
InputError that names the model or a flag; anything else is a kvplan bug.
"""

from __future__ import annotations

import re

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit

#: the catalog size (model ids: presets + published variants) reached with the presets below; it only grows
MIN_MODEL_IDS_2026 = 166
#: the number of model preset files reached
MIN_MODEL_FILES_2026 = 122

#: file stem -> (GPU id, TP, context in tokens) used to plan it: one GPU class that holds the weights, and a context
#: no longer than the config's max_position_embeddings
NEW_PRESETS: dict[str, tuple[str, int, int]] = {
    "google--gemma-4-E4B-it": ("l40s", 1, 32_768),
}

ENGINES = ("sglang", "vllm")

#: "github.com/ORG/REPO @<40 hex> <path>" as the preset writer's --source line names the copy
_SOURCE = re.compile(r"github\.com/[\w.-]+/[\w.-]+ @([0-9a-f]{40}) \S+")


def _preset(stem: str) -> p.ModelPreset:
    path = p.configs_dir() / "models" / f"{stem}.toml"
    assert path.is_file(), f"{path.name} is missing"
    return p.load_model_file(path, use_cache=False)


def test_catalog_size_reached():
    ids = [i for m in p.all_models() for i in (m.id, *(v.id for v in m.variants))]
    assert len(ids) == len(set(ids))
    assert len(ids) >= MIN_MODEL_IDS_2026, f"{len(ids)} model ids"
    files = list((p.configs_dir() / "models").glob("*.toml"))
    assert len(files) >= MIN_MODEL_FILES_2026, f"{len(files)} preset files"


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_new_preset_names_its_verbatim_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    match = _SOURCE.search(m.source)
    assert match, f"{stem}: source does not name a repository, commit and path: {m.source!r}"
    assert "verbatim" in m.source
    assert m.config.get("num_hidden_layers") or m.config.get("text_config", {}).get("num_hidden_layers")


_CASES = [(s, e) for s in sorted(NEW_PRESETS) for e in ENGINES]


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=[f"{s}-{e}" for s, e in _CASES])
def test_new_preset_plans(stem: str, engine: str):
    gpu, tp, context = NEW_PRESETS[stem]
    m = _preset(stem)
    max_pos = m.config.get("max_position_embeddings") or m.config.get("text_config", {}).get("max_position_embeddings")
    assert max_pos is None or context <= max_pos, f"{stem}: context {context} > max_position_embeddings {max_pos}"
    try:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, engine=engine, context_length=context))
    except InputError as exc:  # an engine refusal is a verdict: it names the model or a flag
        assert exc.field, f"{stem} ({engine}): refusal names no field: {exc}"
        return
    assert res is not None
