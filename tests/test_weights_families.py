"""Config shapes the weight walk now reads as the engines do: a per-layer moe_layer_freq list (MiniMax-M3,
MiMo-V2-Flash), ERNIE-4.5's MoE fields, GPTQ group_size -1, and the MTP module of Gated-DeltaNet hybrids
(Qwen3-Next).  Expected numbers are hand arithmetic on the config, shown in each test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.weights.estimate import count_params, estimate_weight_bytes, scheme_bytes

SHARED = Path(__file__).resolve().parent / "data" / "shared"


def test_moe_layer_freq_list_marks_each_layer():
    # minimax_m3.py / mimo_v2.py _is_layer_sparse: moe_layer_freq[i] != 0 is a MoE layer
    cfg = {
        "architectures": ["MiniMaxM3ForCausalLM"],
        "model_type": "minimax_m3",
        "hidden_size": 64,
        "intermediate_size": 256,
        "moe_intermediate_size": 32,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 1000,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "moe_layer_freq": [0, 1, 0, 1],
        "first_k_dense_replace": 1,
        "tie_word_embeddings": False,
    }
    p = count_params(cfg)
    assert p["dense_mlp"] == 2 * 3 * 256 * 64  # layers 0 and 2
    assert p["experts"] == 2 * 8 * 3 * 32 * 64  # layers 1 and 3
    assert p["router"] == 2 * 8 * 64


# ERNIE-4.5-21B-A3B config.json (HF baidu/ERNIE-4.5-21B-A3B-Thinking; the preset's source): MoE keys it names itself
ERNIE_21B = {
    "architectures": ["Ernie4_5_MoeForCausalLM"],
    "model_type": "ernie4_5_moe",
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "num_hidden_layers": 28,
    "num_attention_heads": 20,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 2,
    "moe_k": 6,
    "moe_layer_start_index": 1,
    "moe_layer_end_index": 27,
    "moe_layer_interval": 1,
    "vocab_size": 103424,
    "tie_word_embeddings": True,
    "use_bias": False,
    "torch_dtype": "bfloat16",
}


def test_ernie45_21b_params_match_its_checkpoint():
    # embed 103424*2560; 28 x attention (q, o 2560^2, k, v 512*2560) and 2 norms; layer 0 dense 3*12288*2560;
    # layers 1..27 MoE: 64 experts 3*1536*2560, 2 shared (3*3072*2560), gate 64*2560 + its correction bias 64
    attn = 2 * 2560 * 2560 + 2 * 512 * 2560
    moe = 64 * 3 * 1536 * 2560 + 3 * 3072 * 2560 + 64 * 2560 + 64
    expect = 103424 * 2560 + 28 * (attn + 2 * 2560) + 2560 + 3 * 12288 * 2560 + 27 * moe
    # = the checkpoint's safetensors parameters: F32 4,425,408 (gates + biases) + BF16 21,821,012,480
    assert expect == 21_825_437_888 == 4_425_408 + 21_821_012_480
    assert count_params(ERNIE_21B)["total"] == expect


def test_ernie_moe_layer_rule_differs_by_engine():
    # interval 2 from start 1: SGLang (i - start) % 2 == 0 -> 1, 3, 5; vLLM (i + 1) % 2 == 0 -> 1, 3, 5 as well,
    # but from start 2: SGLang 2, 4 and vLLM 3, 5
    cfg = dict(ERNIE_21B, num_hidden_layers=6, moe_layer_start_index=2, moe_layer_end_index=5, moe_layer_interval=2)
    sg = dict(estimate_weight_bytes(config=cfg, quantization="bf16").breakdown)
    vl = dict(estimate_weight_bytes(config=cfg, quantization="bf16", engine="vllm").breakdown)
    assert sg["experts"] == vl["experts"] == 2 * 64 * 3 * 1536 * 2560 * 2  # two MoE layers either way
    # SGLang's default start is num_hidden_layers (no MoE layer), vLLM's 0
    bare = {k: v for k, v in ERNIE_21B.items() if k != "moe_layer_start_index"}
    assert "experts" not in count_params(bare)
    assert dict(estimate_weight_bytes(config=bare, quantization="bf16", engine="vllm").breakdown)["experts"] > 0


def test_gptq_group_size_minus_one_is_per_channel():
    # one group over the 4096 inputs: packed 4096*4096/2 + fp16 scale 2*4096*1 + packed zeros ceil(4096/2)
    # + int32 g_idx 4*4096
    assert scheme_bytes("int4", 4096, 4096, group=0, zeros=True, g_idx=True) == (8_388_608 + 8_192 + 2_048 + 16_384)
    llama = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 1,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": -1, "sym": True},
    }
    est = estimate_weight_bytes(config=llama, quantization="int4")
    # symmetric: no zeros; q and o [4096, 4096], k and v [1024, 4096]: r*c/2 + 2*r + 4*c each
    attn = sum(r * c // 2 + 2 * r + 4 * c for r, c in ((4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096)))
    assert dict(est.breakdown)["attention"] == attn
    assert all(v >= 0 for _, v in est.breakdown)
    assert any("per-channel" in n for n in est.notes)
    bad = dict(llama, quantization_config=dict(llama["quantization_config"], group_size=-2))
    with pytest.raises(InputError, match="group_size"):
        estimate_weight_bytes(config=bad, quantization="int4")


def _qwen3_next(**extra) -> dict:
    models = json.loads((SHARED / "reference" / "models.json").read_text())
    m = next(m for m in models if m["id"] == "Qwen/Qwen3-Next-80B-A3B-Instruct")
    return dict({k: v for k, v in m.items() if v is not None}, **extra)


def test_qwen3_next_mtp_module_is_counted_and_loaded_only_for_the_draft():
    cfg = _qwen3_next(mtp_num_hidden_layers=1)
    # h 2048: gated attention q 2*16*256 rows, k/v 2*256, o [2048, 4096], q/k norms 256; 2 layer norms;
    # router 512*2048; 512 experts 3*512*2048; fc [2048, 4096]; pre-fc norms + final norm 3*2048
    attention = 8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256
    mtp = attention + 2 * 2048 + 512 * 2048 + 512 * 3 * 512 * 2048 + 2048 * 4096 + 3 * 2048
    assert mtp == 1_647_323_648
    assert count_params(cfg)["mtp"] == mtp
    assert "mtp" not in count_params(_qwen3_next())
    off = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=2)
    on = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=2, load_mtp=True)
    assert (
        off.per_gpu_bytes == estimate_weight_bytes(config=_qwen3_next(), quantization="bf16", tp_size=2).per_gpu_bytes
    )
    # on TP2 the MTP layer is sharded like the others (q 16 of 32 heads, k/v 1 of 2, o half its inputs, experts
    # half their intermediate), router, fc and norms whole; 2 B each
    rank = (
        (4096 * 2048 + 2 * 256 * 2048 + 2048 * 2048 + 512)
        + 2 * 2048
        + 512 * 2048
        + 512 * 3 * 256 * 2048
        + 2048 * 4096
        + 3 * 2048
    )
    assert dict(on.breakdown)["mtp"] == 2 * rank == 1_656_771_584
    assert on.per_gpu_bytes - off.per_gpu_bytes == 2 * rank
    # with checkpoint_bytes the stored MTP tensors count in the checkpoint's model size: a bf16 checkpoint of
    # exactly the counted parameters scales to the modelled bytes (before, the MTP bytes inflated the share)
    ckpt = 2 * count_params(cfg)["total"]
    scaled = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=2, checkpoint_bytes=ckpt)
    assert scaled.per_gpu_bytes == off.per_gpu_bytes
