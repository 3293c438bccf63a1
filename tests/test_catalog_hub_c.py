"""Presets added by the catalog helper "catalog-hub-c" (issue 25 item 7, Coverage: "third-party quantized builds of
catalogued models (AWQ, GPTQ, AutoRound, NVFP4, FP8 and W4A16 repacks)"; Done means "kvplan models lists 300+ ids"),
each written by scripts/preset_from_config.py from the quantized build's own config.json as the Hugging Face Hub
renders it (the build's own repository file page, read through the docs search index), re-rendered as JSON in
shared/hf-configs/<org>--<name>/config.json.

Every file listed in NEW_PRESETS names that page (huggingface.co/<org>/<name>/blob|blame/<revision>/config.json, the
repository of the preset's own id) in its ``source``, loads strictly, carries a ``quantization_config`` whose weight
format is the preset's, is planned once per engine on a GPU class that holds its weights at a context no longer than
the config's ``max_position_embeddings``, and has its weights priced from that quantization config: the estimate over
the estimate of the same geometry at bf16 lies in the band of the format's bits (a 4-bit build about 0.3x: packed
4-bit linears plus group scales, the embeddings, lm_head and norms left at 16 bits).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from kvplan.hfconfig.quant import quantization_from_config
from kvplan.weights.estimate import estimate_weight_bytes
from tests.catalog_cases import assert_new_ids_distinct, engine_cases, layer_count, plan_or_refusal
from tests.catalog_cases import preset as _preset

#: file stem -> (GPU id, TP, context in tokens): one GPU class that holds the weights, a context within the config's
#: max_position_embeddings
NEW_PRESETS: dict[str, tuple[str, int, int]] = {
    "PatronusAI--Llama-3.1-70B-Instruct-AWQ-INT4": ("h100-sxm", 1, 32_768),
}

#: weights at the build's format / the same geometry at bf16: (low, high) by the preset's weight format.  4-bit: the
#: linears at 4/16 plus one 16-bit scale (and a packed zero) per 128-group, the unquantized embeddings and lm_head
#: pull the ratio up (more for small models with large vocabularies); 8-bit: 8/16 plus per-channel scales
RATIO_BAND: dict[str, tuple[float, float]] = {
    "int4": (0.22, 0.45),
    "nvfp4": (0.22, 0.45),
    "int8": (0.45, 0.65),
    "fp8": (0.45, 0.65),
}

#: the Hub file page of the preset's own repository, as scripts/preset_from_config.py was given it
_SOURCE = re.compile(
    r"^Hugging Face Hub page https://huggingface\.co/([\w.-]+)/([\w.-]+)/(?:blob|blame)/[\w.%-]+/config\.json "
)


def _without_quantization(cfg: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in cfg.items() if k != "quantization_config"}
    if isinstance(out.get("text_config"), dict):
        out["text_config"] = {k: v for k, v in out["text_config"].items() if k != "quantization_config"}
    return out


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


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_new_preset_weights_are_priced_from_its_quantization_config(stem: str):
    m = _preset(stem)
    cfg = dict(m.config)
    qc = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config")
    assert isinstance(qc, dict) and qc.get("quant_method"), f"{stem}: no quantization_config"
    quant = quantization_from_config(cfg)
    assert quant == m.weights.quantization, (stem, quant, m.weights.quantization)
    quantized = estimate_weight_bytes(config=cfg, quantization=quant).total_bytes
    bf16 = estimate_weight_bytes(config=_without_quantization(cfg), quantization="bf16").total_bytes
    low, high = RATIO_BAND[quant]
    assert low < quantized / bf16 < high, (stem, quant, quantized, bf16, round(quantized / bf16, 3))


_CASES, _IDS = engine_cases(NEW_PRESETS)


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=_IDS)
def test_new_preset_plans(stem: str, engine: str):
    gpu, tp, context = NEW_PRESETS[stem]
    res = plan_or_refusal(stem, engine, gpu, tp, context)
    if res is None:  # an engine refusal is a verdict: it names the model or a flag
        return
    assert res.kv_bytes_per_token > 0, (stem, engine)
    assert res.starts, f"{stem} ({engine}, {gpu} TP{tp}, {context} tokens) does not start: {res.reasons}"
