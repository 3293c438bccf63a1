"""Tied embeddings as vLLM loads them (issue 25 item 3): a Gemma config without ``tie_word_embeddings`` gets its
config class's default (True), so the lm_head is the embedding table and is not counted twice."""

from __future__ import annotations

import copy

from kvplan.weights.estimate import estimate_weight_bytes


def _gemma3_27b() -> dict:
    from kvplan.inputs.resolve import resolve_model

    spec = resolve_model("google/gemma-3-27b-it")
    return copy.deepcopy(dict(spec.raw_config or spec.config))


def test_gemma3_without_the_key_is_tied():
    cfg = _gemma3_27b()
    assert "tie_word_embeddings" not in cfg and "tie_word_embeddings" not in cfg["text_config"]
    tied = estimate_weight_bytes(config=cfg, quantization="bf16").total_bytes
    untied_cfg = copy.deepcopy(cfg)
    untied_cfg["text_config"]["tie_word_embeddings"] = False
    untied = estimate_weight_bytes(config=untied_cfg, quantization="bf16").total_bytes
    V, H = cfg["text_config"]["vocab_size"], cfg["text_config"]["hidden_size"]
    assert untied - tied == V * H * 2 == 262_208 * 5_376 * 2  # one bf16 vocab x hidden table


def test_llama_without_the_key_stays_untied():
    from tests.test_weights import LLAMA31_8B

    cfg = {k: v for k, v in LLAMA31_8B.items() if k != "tie_word_embeddings"}
    a = estimate_weight_bytes(config=cfg, quantization="bf16").total_bytes
    b = estimate_weight_bytes(config={**cfg, "tie_word_embeddings": False}, quantization="bf16").total_bytes
    assert a == b
