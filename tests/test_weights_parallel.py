"""Weights under SGLang DP attention, --moe-dense-tp-size, --enable-dp-lm-head, and vLLM data parallelism.

Every expected number is hand arithmetic on the config (shown in the test) with the sharding each engine's model
file applies (kvplan.weights.sharding.SGLANG_MODEL_LAYOUTS cites the files, SGLang v0.5.23 / vLLM v0.25.1).
fp8 block-128 bytes of an r x c weight: r*c + 4 * ceil(r/128) * ceil(c/128) (fp32 scale per block).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.weights.estimate import estimate_weight_bytes
from kvplan.weights.sharding import SGLANG_MODEL_LAYOUTS, model_layout

HF = Path(__file__).resolve().parent / "data" / "shared" / "hf-configs"


def hf(name: str) -> dict:
    return json.loads((HF / name / "config.json").read_text())


def fp8(r: int, c: int) -> int:
    return r * c + 4 * math.ceil(r / 128) * math.ceil(c / 128)


def parts(**kw) -> dict[str, int]:
    return dict(estimate_weight_bytes(**kw).breakdown)


# DeepSeek-V3: 61 layers (3 dense), h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128,
# dense intermediate 18432, vocab 129280; fp8 block 128 (its quantization_config).
def _mla_attention(a: int) -> int:
    """One MLA layer's attention on a rank of attention group a: q_a and kv_a replicated, q_b / kv_b by heads,
    o_proj by input (deepseek_v2.py DeepseekV2AttentionMLA: parallel_group="attn_tp")."""
    heads = 128 // a
    return fp8(1536, 7168) + fp8(heads * 192, 1536) + fp8(576, 7168) + fp8(heads * 256, 512) + fp8(7168, heads * 128)


def test_deepseek_v3_attention_is_replicated_under_dp_attention():
    cfg = hf("deepseek-ai--DeepSeek-V3")
    tp8 = parts(config=cfg, quantization="fp8", tp_size=8)
    dp8 = parts(config=cfg, quantization="fp8", tp_size=8, attn_dp_size=8)
    # attn_tp = 8 / 8 = 1: every rank holds all 128 heads of every layer
    # q_a [1536, 7168] + q_b [128*192, 1536] + kv_a [576, 7168] + kv_b [128*256, 512] + o [7168, 128*128]
    assert _mla_attention(1) == 11_012_736 + 37_757_952 + 4_129_888 + 16_781_312 + 117_469_184
    assert dp8["attention"] == 61 * _mla_attention(1) == 61 * 187_151_072
    assert tp8["attention"] == 61 * _mla_attention(8)
    # w_kc / w_vc bf16 copy: heads/a * kv_lora * (nope + v) * 2 B per layer
    assert dp8["mla_absorbed"] == 61 * 128 * 512 * 256 * 2
    assert tp8["mla_absorbed"] == 61 * 16 * 512 * 256 * 2
    # embedding over attention TP (get_embedding_tp_kwargs), lm_head over full TP, experts untouched
    assert dp8["embeddings"] == 129280 * 7168 * 2 and dp8["lm_head"] == 129280 // 8 * 7168 * 2
    assert dp8["experts"] == tp8["experts"] and dp8["dense_mlp"] == tp8["dense_mlp"]


def test_moe_dense_tp_size_one_replicates_the_dense_layers():
    cfg = hf("deepseek-ai--DeepSeek-V3")
    base = parts(config=cfg, quantization="fp8", tp_size=8, attn_dp_size=8)
    rep = parts(config=cfg, quantization="fp8", tp_size=8, attn_dp_size=8, moe_dense_tp_size=1)
    # 3 dense layers x (gate, up [18432, 7168] + down [7168, 18432]); over tp 8 each is [2304, 7168]
    assert base["dense_mlp"] == 3 * 3 * fp8(2304, 7168) == 148_671_936
    assert rep["dense_mlp"] == 3 * 3 * fp8(18432, 7168) == 1_189_375_488
    assert rep["shared_experts"] == base["shared_experts"]  # shared experts stay over tp (parallel_group="tp")
    # moe_dense_tp_size = tp is SGLang's default layout
    assert parts(config=cfg, quantization="fp8", tp_size=8, attn_dp_size=8, moe_dense_tp_size=8) == base


def test_enable_dp_lm_head_puts_lm_head_on_attention_tp():
    cfg = hf("deepseek-ai--DeepSeek-V3")
    off = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, attn_dp_size=8)
    on = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, attn_dp_size=8, enable_dp_lm_head=True)
    # vocab 129280 (a multiple of 64) x 7168 bf16: whole on attn_tp 1 vs 1/8 on tp 8
    assert dict(on.breakdown)["lm_head"] == 129280 * 7168 * 2 == 1_853_358_080
    assert on.per_gpu_bytes - off.per_gpu_bytes == 1_853_358_080 - 231_669_760
    # without DP attention SGLang turns --enable-dp-lm-head off (overrides._data_parallelism_defaults)
    assert (
        estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, enable_dp_lm_head=True).per_gpu_bytes
        == estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8).per_gpu_bytes
    )


LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def test_llama_keeps_attention_on_the_full_tp_group():
    # llama.py LlamaAttention reads get_parallel().tp_size, its embedding has no attention-TP option:
    # DP attention changes none of its weights
    tp8 = estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=8)
    dp8 = estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=8, attn_dp_size=8)
    assert dp8.per_gpu_bytes == tp8.per_gpu_bytes
    # q 4096/8 + k, v 1 head of 128 + o: 2 B per parameter
    assert dict(dp8.breakdown)["attention"] == 32 * 2 * (512 * 4096 + 2 * 128 * 4096 + 4096 * 512)


def test_qwen3_attention_and_embedding_follow_attention_tp():
    cfg = hf("Qwen--Qwen3-8B")  # 36 layers, h 4096, 32 heads / 8 KV of 128, vocab 151936, untied
    dp8 = parts(config=cfg, quantization="bf16", tp_size=8, attn_dp_size=8)
    # qwen3.py: qkv / o parallel_group="attn_tp" (attn_tp 1: every head); Qwen2Model embedding
    # use_attn_tp_group=is_dp_attention_enabled()
    assert dp8["attention"] == 36 * 2 * (2 * 4096 * 4096 + 2 * 1024 * 4096)
    assert dp8["embeddings"] == 151936 * 4096 * 2
    assert dp8["lm_head"] == 151936 // 8 * 4096 * 2
    assert dp8["dense_mlp"] == 36 * 2 * 3 * 12288 // 8 * 4096


def test_nemotron_h_mixers_follow_attention_tp():
    cfg = hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    tp8 = parts(config=cfg, quantization="bf16", tp_size=8)
    dp8 = parts(config=cfg, quantization="bf16", tp_size=8, attn_dp_size=8)
    # MambaMixer2: parallel_group "attn_tp" under DP attention: the whole mixer on every rank, 8x its TP-8 shard
    assert dp8["mamba"] == 8 * tp8["mamba"]
    assert dp8["experts"] == tp8["experts"]


def test_vllm_data_parallel_flattens_the_moe():
    cfg = hf("Qwen--Qwen3-30B-A3B")  # 48 layers, 128 experts of [768, 2048] x 3
    one = parts(config=cfg, quantization="bf16", engine="vllm")
    dp4 = parts(config=cfg, quantization="bf16", engine="vllm", attn_dp_size=4)
    ep4 = parts(config=cfg, quantization="bf16", engine="vllm", attn_dp_size=4, ep_size=4)
    assert one["experts"] == 48 * 128 * 3 * 768 * 2048 * 2
    # FusedMoEParallelConfig.make: without EP the experts are TP-split over tp x dp = 4; with EP 32 per rank
    assert dp4["experts"] == 48 * 128 * 3 * (768 // 4) * 2048 * 2
    assert ep4["experts"] == 48 * 32 * 3 * 768 * 2048 * 2
    assert dp4["attention"] == one["attention"] and dp4["embeddings"] == one["embeddings"]


def test_layouts_name_their_model_file_and_fall_back_by_family():
    assert SGLANG_MODEL_LAYOUTS["LlamaForCausalLM"].attention == "tp"
    assert SGLANG_MODEL_LAYOUTS["DeepseekV3ForCausalLM"].dense_dp
    layout, read = model_layout("SomethingNewForCausalLM", Family.DSV4)
    assert not read and layout.dp_embedding == "replicated"


def test_parallel_flag_errors():
    with pytest.raises(InputError, match="moe_dense_tp_size"):
        estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=8, moe_dense_tp_size=2)
    with pytest.raises(InputError, match="SGLang flag"):
        estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", engine="vllm", moe_dense_tp_size=1)


def test_gemma3_embedding_is_an_nn_embedding_in_sglang():
    # gemma3_causal.py Gemma3TextScaledWordEmbedding(nn.Embedding): the whole table on every rank (tied: it is the
    # lm_head too); vLLM's gemma3.py uses VocabParallelEmbedding (over tp)
    cfg = {
        "architectures": ["Gemma3ForCausalLM"],
        "model_type": "gemma3_text",
        "hidden_size": 1152,
        "intermediate_size": 6912,
        "num_hidden_layers": 26,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 256,
        "vocab_size": 262144,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    }
    sg = parts(config=cfg, quantization="bf16", tp_size=8)
    vl = parts(config=cfg, quantization="bf16", tp_size=8, engine="vllm")
    assert sg["embeddings"] == 262144 * 1152 * 2 == 603_979_776
    assert vl["embeddings"] == 262144 // 8 * 1152 * 2
    assert "lm_head" not in sg
