"""Issue 25 item 7 (the catalog, current) and issue 24 item 3 (ids as the Hub has them), helper catalog-hub-a: presets
for Qwen and the Chinese, Korean and other non-Western labs' models, each written by scripts/preset_from_config.py from
a public copy of its config.json.

A copy is either the model's own Hugging Face Hub page of ``config.json`` (huggingface.co/<org>/<name>/blob/<rev>/
config.json, the file as the Hub renders it, read through a search index) or a public GitHub repository that vendors
it (repository, 40-hex commit, path).  Each preset names that copy, loads strictly, is not also a [[variants]] entry of
another preset, and plans under both engines at a context no longer than its config's max_position_embeddings, with
the KV bytes per token per GPU checked against the hand count from the config (layers x KV heads per GPU x head_dim x
2 (K and V) x 2 B for bf16 KV).
"""

from __future__ import annotations

import re

import pytest

from tests.catalog_cases import GITHUB_SOURCE as _GITHUB
from tests.catalog_cases import assert_not_variants, engine_cases, layer_count, plan_or_refusal
from tests.catalog_cases import preset as _preset

#: file stem -> (GPU id, TP, context in tokens, KV bytes per token per GPU counted by hand from the config)
NEW_PRESETS: dict[str, tuple[str, int, int, int]] = {
    # Hub page (refs/pr/1 revision): BailingMoe, 28 layers x 4 KV heads x (2048 / 16 =) 128 x 2 x 2 = 57,344;
    # 4,096 positions
    "inclusionAI--Ling-Coder-lite": ("h100-sxm", 1, 4_096, 57_344),
    # keras-llm-robot copies of 01-ai's own AWQ builds (Llama geometry): 60 x 8 x 128 x 4 = 245,760; 32 x 4 x 128 x
    # 4 = 65,536; 4,096 positions
    "01-ai--Yi-34B-Chat-4bits": ("l40s", 1, 4_096, 245_760),
    "01-ai--Yi-6B-Chat-4bits": ("l4", 1, 4_096, 65_536),
    # Qwen v1 (QWenLMHeadModel, MHA): 40 layers x 40 heads x 128 (kv_channels) x 2 x 2 = 819,200
    "Qwen--Qwen-14B-Chat-Int4": ("l40s", 1, 4_096, 819_200),
    # Hub blame pages (the file at one revision, its size as the page states it): 48 x 2 x 128 x 4 = 49,152;
    # 28 x 4 x 128 x 4 = 57,344; Qwen1.5-MoE (MHA) 24 x 16 x 128 x 4 = 196,608
    "internlm--internlm3-8b-instruct": ("l40s", 1, 32_768, 49_152),
    "THUDM--glm-edge-1.5b-chat": ("l4", 1, 8_192, 57_344),
    "Qwen--Qwen1.5-MoE-A2.7B": ("h100-sxm", 1, 8_192, 196_608),
    # 01-ai's own Hub pages (Llama / Yi geometry): 32 x 4 x 128 x 4 = 65,536; 48 x 4 x 128 x 4 = 98,304;
    # 60 x 8 x 128 x 4 = 245,760; the 200K builds plan at 32,768 of their 200,000 positions
    "01-ai--Yi-1.5-6B-Chat": ("l4", 1, 4_096, 65_536),
    "01-ai--Yi-1.5-9B": ("l40s", 1, 4_096, 98_304),
    "01-ai--Yi-1.5-34B-Chat": ("h100-sxm", 1, 4_096, 245_760),
    "01-ai--Yi-34B-200K": ("h200-sxm", 1, 32_768, 245_760),
    "01-ai--Yi-6B-200K": ("l40s", 1, 32_768, 65_536),
    # Qwen's own pages: CodeQwen1.5 32 x 4 x 128 x 4 = 65,536; Qwen2-72B at TP 2 (4 of its 8 KV heads per GPU)
    # 80 x 4 x 128 x 4 = 163,840
    "Qwen--CodeQwen1.5-7B-Chat": ("l40s", 1, 32_768, 65_536),
    "Qwen--Qwen2-72B": ("h200-sxm", 2, 32_768, 163_840),
    # internlm's own pages (InternLM2, GQA): 32 x 8 x 128 x 4 = 131,072; 48 x 8 x 128 x 4 = 196,608;
    # 24 x 8 x 128 x 4 = 98,304
    "internlm--internlm2-chat-7b-sft": ("l40s", 1, 32_768, 131_072),
    "internlm--internlm2_5-20b-chat": ("h100-sxm", 1, 32_768, 196_608),
    "internlm--internlm2-chat-1_8b-sft": ("l4", 1, 32_768, 98_304),
    # deepseek-ai's page (refs/pr/3, the file as first uploaded): Llama MHA 30 x 32 x 128 x 4 = 491,520
    "deepseek-ai--deepseek-llm-7b-base": ("l40s", 1, 4_096, 491_520),
    # deepseek-llm-67b-chat at TP 2: 95 layers x (8 / 2) KV heads x 128 x 4 = 194,560; Qwen1.5-72B-Chat (MHA) at
    # TP 2: 80 x (64 / 2) x 128 x 4 = 1,310,720
    "deepseek-ai--deepseek-llm-67b-chat": ("h200-sxm", 2, 4_096, 194_560),
    "Qwen--Qwen1.5-72B-Chat": ("h200-sxm", 2, 4_096, 1_310_720),
    # openbmb's blame page (MHA): 40 x 36 x (2304 / 36 =) 64 x 4 = 368,640; 2,048 positions
    "openbmb--MiniCPM-2B-sft-fp32": ("l4", 1, 2_048, 368_640),
    # internlm's blame pages (InternLM2, 8 KV heads x 128): 48 layers -> 196,608; 32 -> 131,072; 24 -> 98,304
    "internlm--internlm2-20b": ("h100-sxm", 1, 32_768, 196_608),
    "internlm--internlm2-math-plus-7b": ("l40s", 1, 8_192, 131_072),
    "internlm--internlm2_5-7b-chat": ("l40s", 1, 32_768, 131_072),
    "internlm--internlm2-math-plus-1_8b": ("l4", 1, 8_192, 98_304),
    "internlm--internlm2-chat-1_8b": ("l4", 1, 32_768, 98_304),
    "internlm--internlm2-math-base-7b": ("l40s", 1, 8_192, 131_072),
    "internlm--internlm2-wqx-20b": ("h100-sxm", 1, 4_096, 196_608),
    "internlm--internlm2-math-base-20b": ("h100-sxm", 1, 8_192, 196_608),
    # InternLM (v1, MHA): 60 layers x 40 heads x 128 x 4 = 1,228,800; 4,096 positions
    "internlm--internlm-20b": ("h100-sxm", 1, 4_096, 1_228_800),
}

#: the model's own Hub page of config.json (main or a revision), as the source line names it
_HUB = re.compile(
    r"Hugging Face Hub page https://huggingface\.co/(?P<org>[\w.-]+)/(?P<name>[\w.-]+)/(?:blob|blame)/[\w%.-]+/config\.json "
    r"\(config\.json as rendered on the Hub, read through the docs search index on \d{4}-\d{2}-\d{2}\)"
)


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_preset_names_its_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    hub = _HUB.search(m.source)
    if hub:  # the Hub page is the model's own repository, not a fine-tune's
        assert f"{hub['org']}/{hub['name']}" == m.id, (stem, m.source)
    else:
        assert _GITHUB.search(m.source), f"{stem}: source names neither a Hub page nor a commit: {m.source!r}"
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
