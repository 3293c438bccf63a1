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
    "ibm-granite--granite-3.1-8b-instruct": ("l40s", 1, 32_768),
    "ibm-granite--granite-3.0-2b-instruct": ("l4", 1, 4_096),
    "tiiuae--Falcon3-7B-Instruct": ("l40s", 1, 32_768),
    "tiiuae--Falcon3-3B-Instruct": ("l4", 1, 32_768),
    "microsoft--Phi-3-medium-4k-instruct": ("h100-sxm", 1, 4_096),
    "allenai--OLMo-2-1124-13B": ("h100-sxm", 1, 4_096),
    "stabilityai--stablelm-2-1_6b-chat": ("l4", 1, 4_096),
    "upstage--SOLAR-10.7B-v1.0": ("l40s", 1, 4_096),
}

#: the Hub file page of the preset's own repository, as scripts/preset_from_config.py was given it
_SOURCE = re.compile(
    r"^Hugging Face Hub page https://huggingface\.co/([\w.-]+)/([\w.-]+)/(?:blob|blame)/[\w.-]+/config\.json "
)


def test_new_presets_are_distinct_ids_in_the_catalog():
    assert_new_ids_distinct(NEW_PRESETS)


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_new_preset_names_its_own_hub_page(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    found = _SOURCE.search(m.source)
    assert found, f"{stem}: source does not name a Hub config.json page: {m.source!r}"
    assert f"{found.group(1)}/{found.group(2)}" == m.id, f"{stem}: the page is another repository's: {m.source!r}"
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
