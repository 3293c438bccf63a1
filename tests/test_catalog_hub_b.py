"""Presets added by the catalog helper "catalog-hub-b" (issue 25 item 7, Coverage; Done means "kvplan models lists
300+ ids"): releases of ibm-granite, mistralai, microsoft, meta-llama, google and the other labs of its brief, each
written by scripts/preset_from_config.py from the model's own config.json as the Hugging Face Hub renders it (the
repository's own file page, read through the docs search index), re-rendered as JSON in
shared/hf-configs/<org>--<name>/config.json.

Every file listed in NEW_PRESETS names that page (huggingface.co/<org>/<name>/blob|blame/<revision>/config.json, the
repository of the preset's own id) in its ``source``, loads strictly, and is planned once per engine on a GPU class
that holds its weights, at a context no longer than the config's ``max_position_embeddings`` (one in-process plan per
preset per engine).  An engine refusal must be an InputError naming the model or a flag; anything else must start.
"""

from __future__ import annotations

import re

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit

#: file stem -> (GPU id, TP, context in tokens): one GPU class that holds the weights, a context within the config's
#: max_position_embeddings
NEW_PRESETS: dict[str, tuple[str, int, int]] = {
    "ibm-granite--granite-3.1-8b-instruct": ("l40s", 1, 32_768),
    "ibm-granite--granite-3.0-2b-instruct": ("l4", 1, 4_096),
    "tiiuae--Falcon3-7B-Instruct": ("l40s", 1, 32_768),
    "tiiuae--Falcon3-3B-Instruct": ("l4", 1, 32_768),
    "microsoft--Phi-3-medium-4k-instruct": ("h100-sxm", 1, 4_096),
    "allenai--OLMo-2-1124-13B": ("h100-sxm", 1, 4_096),
    "stabilityai--stablelm-2-1_6b-chat": ("l4", 1, 4_096),
    "upstage--SOLAR-10.7B-v1.0": ("l40s", 1, 4_096),
}

ENGINES = ("sglang", "vllm")

#: the Hub file page of the preset's own repository, as scripts/preset_from_config.py was given it
_SOURCE = re.compile(
    r"^Hugging Face Hub page https://huggingface\.co/([\w.-]+)/([\w.-]+)/(?:blob|blame)/[\w.-]+/config\.json "
)


def _preset(stem: str) -> p.ModelPreset:
    path = p.configs_dir() / "models" / f"{stem}.toml"
    assert path.is_file(), f"{path.name} is missing"
    return p.load_model_file(path, use_cache=False)


def _max_positions(m: p.ModelPreset) -> int | None:
    cfg = m.config
    pos = cfg.get("max_position_embeddings") or (cfg.get("text_config") or {}).get("max_position_embeddings")
    return pos if isinstance(pos, int) else None


def test_new_presets_are_distinct_ids_in_the_catalog():
    ids = [i for m in p.all_models() for i in (m.id, *(v.id for v in m.variants))]
    assert len(ids) == len(set(ids))
    mine = {_preset(stem).id for stem in NEW_PRESETS}
    assert len(mine) == len(NEW_PRESETS)
    assert mine <= set(ids)


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_new_preset_names_its_own_hub_page(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    found = _SOURCE.search(m.source)
    assert found, f"{stem}: source does not name a Hub config.json page: {m.source!r}"
    assert f"{found.group(1)}/{found.group(2)}" == m.id, f"{stem}: the page is another repository's: {m.source!r}"
    assert m.config.get("num_hidden_layers") or (m.config.get("text_config") or {}).get("num_hidden_layers")


_CASES = [(s, e) for s in sorted(NEW_PRESETS) for e in ENGINES]


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=[f"{s}-{e}" for s, e in _CASES])
def test_new_preset_plans(stem: str, engine: str):
    gpu, tp, context = NEW_PRESETS[stem]
    m = _preset(stem)
    max_pos = _max_positions(m)
    assert max_pos is None or context <= max_pos, f"{stem}: context {context} > max_position_embeddings {max_pos}"
    try:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, engine=engine, context_length=context))
    except InputError as exc:  # an engine refusal is a verdict: it names the model or a flag
        assert exc.field, f"{stem} ({engine}): refusal names no field: {exc}"
        return
    assert res.context_length == context, (stem, engine, res.context_length)
    assert res.kv_bytes_per_token > 0, (stem, engine)
    assert res.starts, f"{stem} ({engine}, {gpu} TP{tp}, {context} tokens) does not start: {res.reasons}"
