"""Issue 25 item 7 (this year's models in the catalog), helper catalog-c: the presets added for the Chinese and
other non-Western labs' models, each written by the catalog scripts from a public verbatim copy of its config.json.

Each one names that copy (repository, 40-hex commit, path), loads strictly, is not also a [[variants]] entry of
another preset (one id, one place), and plans under both engines on one GPU class that holds its weights, at a
context no longer than its config's max_position_embeddings.  The KV bytes per token of each plan are checked against
the hand count from the config (layers x KV heads per GPU x head_dim x 2 (K and V) x 2 B for bf16).
"""

from __future__ import annotations

import pytest

from tests.catalog_cases import GITHUB_SOURCE as _SOURCE
from tests.catalog_cases import assert_not_variants, engine_cases, layer_count, plan_or_refusal
from tests.catalog_cases import preset as _preset

#: file stem -> (GPU id, TP, context in tokens, KV bytes per token per GPU counted by hand from the config)
NEW_PRESETS: dict[str, tuple[str, int, int, int]] = {
    # mlc-ai/mlc-llm MODEL_PRESETS['deepseek']: DeepSeekMoE (MHA), 28 layers x 16 heads x 128 x 2 x 2 = 229,376;
    # its config has 4,096 positions
    "deepseek-ai--deepseek-moe-16b-base": ("l40s", 1, 4_096, 229_376),
    # goodholic/AutoCI committed Hub snapshot: MLA, 60 layers x (512 latent + 64 RoPE) x 2 B = 69,120 per token on
    # every GPU (the latent is not split by TP)
    "deepseek-ai--DeepSeek-V2.5": ("h200-sxm", 4, 32_768, 69_120),
    # sophgo/LLM-TPU and duoyuncloud/ModelConverterTool snapshots: 32 layers x 2 KV heads x 128 x 2 x 2 = 32,768;
    # 24 layers x 2 x 64 x 2 x 2 = 12,288
    "openbmb--MiniCPM4-8B": ("l40s", 1, 32_768, 32_768),
    "openbmb--MiniCPM4-0.5B": ("l4", 1, 32_768, 12_288),
    # Hchnr/early_exiting ModelScope snapshot: 18 layers x 2 KV heads x 128 x 2 x 2 = 18,432
    "baidu--ERNIE-4.5-0.3B-Base-PT": ("l4", 1, 32_768, 18_432),
    # TemporaryLoRA/Temp-LoRA snapshot: 32 layers x 4 KV heads x 128 x 2 x 2 = 65,536; 4,096 positions
    "01-ai--Yi-6B-Chat": ("l4", 1, 4_096, 65_536),
    # sophgo/LLM-TPU snapshots of multimodal builds (the language model's KV): GLM-4.1V 40 layers x 2 x 128 x 4 =
    # 40,960; MiniCPM-V 4.0 32 x 2 x 128 x 4 = 32,768; MiniCPM-V 4.6 (AWQ) 6 full-attention layers of its 24
    # (every fourth) x 2 x 256 x 4 = 12,288
    "zai-org--GLM-4.1V-9B-Thinking": ("l40s", 1, 32_768, 40_960),
    "openbmb--MiniCPM-V-4": ("l40s", 1, 32_768, 32_768),
    "openbmb--MiniCPM-V-4.6-AWQ": ("l4", 1, 32_768, 12_288),
    # catalog-c-2 (issue 25 item 7). tenstorrent/tt-forge-models' Kimi-K2.6 snapshot: MLA, 61 layers x (512 latent +
    # 64 RoPE) x 2 B = 70,272 per token on every GPU
    "moonshotai--Kimi-K2.6": ("h200-sxm", 8, 32_768, 70_272),
    # daniel-p-green/alain-ai-learning-platform Hub downloads (sha256 in their manifest): Yi-1.5-34B fine-tune 60
    # layers x 8 KV heads x 128 x 2 x 2 = 245,760 (4,096 positions); Llama-3.2-3B 28 x 8 x 128 x 4 = 114,688
    "dphn--dolphin-2.9.1-yi-1.5-34b": ("h200-sxm", 1, 4_096, 245_760),
    "context-labs--meta-llama-Llama-3.2-3B-Instruct-FP16": ("l40s", 1, 32_768, 114_688),
    # AXERA-TECH committed Hub snapshots: MiniCPM5-1B 24 layers x 2 x 128 x 4 = 24,576; MiniCPM-V-4.6 (bf16) 6
    # full-attention layers of 24 x 2 x 256 x 4 = 12,288
    "openbmb--MiniCPM5-1B": ("l4", 1, 32_768, 24_576),
    "openbmb--MiniCPM-V-4.6": ("l4", 1, 32_768, 12_288),
    # highshore/exaone-compression committed Hub snapshot: 30 layers x 8 KV heads x 64 x 2 x 2 = 61,440
    "LGAI-EXAONE--EXAONE-4.0-1.2B": ("l4", 1, 32_768, 61_440),
    # AI-Hypercomputer/maxtext's HYV3Config(...) keywords for tencent/Hy3 (not a byte copy): 80 layers x 8 KV heads
    # x 128 x 2 x 2 at TP 8 (one KV head per GPU) = 40,960
    "tencent--Hy3": ("h200-sxm", 8, 32_768, 40_960),
    # committed Hub downloads of the lmsys Vicuna models (MHA, fp16): 32 layers x 32 heads x 128 x 2 x 2 = 524,288
    # (v1.5: 4,096 positions; v1.3: 2,048); 13B: 40 x 40 x 128 x 4 = 819,200
    "lmsys--vicuna-7b-v1.5": ("l40s", 1, 4_096, 524_288),
    "lmsys--vicuna-7b-v1.3": ("l40s", 1, 2_048, 524_288),
    "lmsys--vicuna-13b-v1.3": ("h100-sxm", 1, 2_048, 819_200),
    # SqueezeAILab/SqueezeLLM's committed Hub snapshots of Salesforce XGen (float32 checkpoints, served in 16 bit by
    # both engines' dtype=auto): 32 layers x 32 heads x 128 x 2 (K, V) x 2 B = 524,288
    "Salesforce--xgen-7b-8k-base": ("h100-sxm", 1, 8_192, 524_288),
    "Salesforce--xgen-7b-8k-inst": ("h100-sxm", 1, 8_192, 524_288),
    # a Hub download in daniel-p-green/alain-ai-learning-platform (model.json names the repo and revision): the
    # Qwen2.5-0.5B geometry, 24 layers x 2 KV heads x 64 x 2 x 2 = 12,288
    "Gensyn--Qwen2.5-0.5B-Instruct": ("l4", 1, 32_768, 12_288),
}


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_preset_names_its_verbatim_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    assert _SOURCE.search(m.source), f"{stem}: source does not name a repository, commit and path: {m.source!r}"
    # a byte copy says "verbatim"; a config written out from keyword arguments says it is not a byte copy
    assert "verbatim" in m.source or "not a byte copy" in m.source
    assert layer_count(m)


def test_new_ids_are_not_also_variants_of_another_preset():
    assert_not_variants(NEW_PRESETS)


_CASES, _IDS = engine_cases(NEW_PRESETS)


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=_IDS)
def test_preset_plans_with_the_hand_counted_kv_bytes(stem: str, engine: str):
    gpu, tp, context, kv_per_token = NEW_PRESETS[stem]
    res = plan_or_refusal(stem, engine, gpu, tp, context)
    if res is None:  # an engine refusal is a verdict: it names the model or a flag
        return
    assert res.kv_bytes_per_token == kv_per_token, (stem, engine, res.kv_bytes_per_token)
    assert res.starts and res.kv_pool_tokens >= context, (stem, engine, res.reasons)
