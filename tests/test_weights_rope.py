"""vLLM's rotary cos/sin caches (kvplan.weights.rope), derived by hand from vLLM 0.11.0's rotary_embedding package:
one ``cos_sin_cache`` of ``rows x rotary_dim`` model-dtype elements per distinct ``get_rope`` instance."""

from __future__ import annotations

from kvplan.weights.rope import rope_cache_rows, vllm_rope_cache_bytes

GEMMA3_27B_TEXT = {  # the fields vLLM's Gemma3Attention reads (models/gemma3.py, v0.11.0)
    "model_type": "gemma3_text",
    "num_attention_heads": 32,
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "rope_theta": 1_000_000.0,
    "rope_local_base_freq": 10_000.0,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0},
}


def test_rows_by_scaling_type():
    assert rope_cache_rows(max_position=131072, rope_scaling=None) == 131072
    # linear: max_position x factor (linear_scaling_rope.py: max_len = max_position_embeddings * scaling_factor)
    assert rope_cache_rows(max_position=131072, rope_scaling={"rope_type": "linear", "factor": 8.0}) == 1_048_576
    assert rope_cache_rows(max_position=4096, rope_scaling={"type": "linear", "factor": [1.0, 2.0]}) == 4096 + 8192
    # yarn: original max position x factor (yarn_scaling_rope.py), e.g. gpt-oss 4,096 x 32
    yarn = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}
    assert rope_cache_rows(max_position=131072, rope_scaling=yarn) == 131_072
    # llama3 keeps max_position rows (llama3_rope.py scales the frequencies, not the positions)
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert rope_cache_rows(max_position=131072, rope_scaling=llama3) == 131072


def test_gemma3_27b_two_caches():
    """global: 131,072 x 8 rows x 128 x 2 B = 268,435,456; local (rope_local_base_freq, default scaling):
    131,072 x 128 x 2 B = 33,554,432; 301,989,888 B = 0.28 GiB per GPU (replicated)."""
    assert vllm_rope_cache_bytes(config=GEMMA3_27B_TEXT) == 268_435_456 + 33_554_432 == 301_989_888


def test_llama_and_mla_and_partial_rotary():
    llama = {"num_attention_heads": 32, "hidden_size": 4096, "max_position_embeddings": 131072}
    assert vllm_rope_cache_bytes(config=llama) == 131072 * 128 * 2 == 33_554_432  # head_dim = 4096 / 32
    # MLA: rotary_dim is qk_rope_head_dim (64); Kimi-K2's yarn: 4,096 x 64 rows
    mla = {
        "num_attention_heads": 64,
        "hidden_size": 7168,
        "qk_rope_head_dim": 64,
        "max_position_embeddings": 262144,
        "rope_scaling": {"type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096},
    }
    assert vllm_rope_cache_bytes(config=mla) == 262144 * 64 * 2
    partial = {"num_attention_heads": 16, "head_dim": 256, "partial_rotary_factor": 0.25, "max_position_embeddings": 8}
    assert vllm_rope_cache_bytes(config=partial) == 8 * 64 * 2
    assert vllm_rope_cache_bytes(config={**llama, "position_embedding_type": "absolute"}) == 0
    assert vllm_rope_cache_bytes(config={"num_attention_heads": 0}) == 0
