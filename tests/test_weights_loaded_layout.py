"""Weights as the engine lays them out after loading: SGLang's WNA16 MoE buffers on ROCm and the fbgemm_fp8 scheme.

Expected numbers are hand arithmetic on the configs' geometry (written out in each test), never read back from
kvplan:

* SGLang's compressed-tensors WNA16 MoE (``compressed_tensors_wNa16_moe.py``, v0.5.9) creates int32 act-order buffers
  per MoE layer (``w13_weight_g_idx`` / ``w13_g_idx_sort_indices``: experts x hidden; ``w2_weight_g_idx`` /
  ``w2_g_idx_sort_indices``: experts x intermediate per rank) and two experts x 2 shape tensors; the ROCm Triton
  method keeps them (kvplan.weights.kernels.wna16_moe_index_bytes), the CUDA Marlin method empties them.
* vLLM's fbgemm_fp8 (``fbgemm_fp8.py``, v0.5.3) stores fp8 weights with one fp32 scale per output channel and keeps
  the Linear layers named in ``modules_to_not_convert`` 16-bit.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kvplan.weights.estimate import estimate_weight_bytes, quantization_from_config
from kvplan.weights.kernels import wna16_moe_index_bytes
from kvplan.weights.quant import compressed_tensors_wna16
from kvplan.weights.rules import weight_rules

KIMI = Path(__file__).resolve().parent / "data" / "shared" / "hf-configs" / "moonshotai--Kimi-K2.5" / "config.json"

#: a compressed-tensors W4A16 group-32 symmetric quantization_config (the scheme Kimi-K2.5 ships), routed experts only
CT_W4A16 = {
    "quant_method": "compressed-tensors",
    "format": "pack-quantized",
    "config_groups": {
        "group_0": {
            "input_activations": None,
            "targets": ["Linear"],
            "weights": {"num_bits": 4, "type": "int", "group_size": 32, "strategy": "group", "symmetric": True},
        }
    },
    "ignore": ["lm_head", "re:.*self_attn.*", "re:.*mlp\\.gate$"],
}

#: a two-layer MoE model (Qwen3-MoE layout): 8 experts, hidden 64, moe_intermediate_size 32
TINY_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": CT_W4A16,
}


def _kimi() -> dict:
    return json.loads(KIMI.read_text())


# ----------------------------------------------------------------------------- SGLang WNA16 MoE on ROCm


def test_wna16_index_bytes_kimi_layer_by_hand():
    # 384 experts x (2 int32 x hidden 7,168 + 2 int32 x 2,048 / 8 + 2 shape pairs x 2 bf16 bytes)
    per_expert = 2 * 4 * 7168 + 2 * 4 * 256 + 2 * 2 * 2
    assert per_expert == 59_400
    assert wna16_moe_index_bytes(experts=384, hidden=7168, inter=256, dtype_bytes=2) == 384 * 59_400 == 22_809_600


def test_wna16_detection_reads_the_scheme():
    assert compressed_tensors_wna16(CT_W4A16)
    w8a8 = copy.deepcopy(CT_W4A16)
    w8a8["config_groups"]["group_0"]["input_activations"] = {"num_bits": 8, "type": "int", "dynamic": True}
    assert not compressed_tensors_wna16(w8a8)  # activations quantized: not weight-only
    fp8 = copy.deepcopy(CT_W4A16)
    fp8["config_groups"]["group_0"]["weights"].update(type="float", num_bits=8)
    assert not compressed_tensors_wna16(fp8)
    assert not compressed_tensors_wna16({"quant_method": "awq", "bits": 4})
    assert not compressed_tensors_wna16(None)


def test_rules_name_the_vendor():
    assert weight_rules("sglang").wna16_moe_index_on == ("amd",)
    assert weight_rules("vllm").wna16_moe_index_on == ()


@pytest.mark.skipif(not KIMI.is_file(), reason="shared hf-configs not found")
def test_kimi_k25_tp8_rocm_keeps_the_index_buffers():
    """kimi-k2.5-mi355x-tp8: 61 layers, the first dense (first_k_dense_replace 1), so 60 MoE layers of 384 experts at
    moe_tp 8: 60 * 22,809,600 = 1,368,576,000 B (1.27 GiB) more on an MI355X than on an NVIDIA GPU."""
    cfg = _kimi()
    amd = estimate_weight_bytes(config=cfg, quantization="int4", tp_size=8, engine="sglang", gpu_vendor="amd")
    nv = estimate_weight_bytes(config=cfg, quantization="int4", tp_size=8, engine="sglang", gpu_vendor="nvidia")
    assert amd.per_gpu_bytes - nv.per_gpu_bytes == 60 * 384 * (2 * 4 * 7168 + 2 * 4 * 256 + 2 * 2 * 2)
    assert dict(amd.breakdown)["experts"] - dict(nv.breakdown)["experts"] == 1_368_576_000
    assert any("WNA16 MoE on ROCm" in n for n in amd.notes)
    assert not any("WNA16 MoE on ROCm" in n for n in nv.notes)
    # the buffers are allocations too: the allocator's segments over them are at least their bytes
    assert amd.measured_bytes - nv.measured_bytes >= 1_368_576_000


def test_tiny_moe_tp_and_ep_by_hand():
    # TP2, EP1: 8 experts per rank, intermediate 32 / 2 = 16: 8 * (2*4*64 + 2*4*16 + 2*2*2) = 8 * 648 per MoE layer
    tp2 = [
        estimate_weight_bytes(config=TINY_MOE, quantization="int4", tp_size=2, engine="sglang", gpu_vendor=v)
        for v in ("amd", "nvidia")
    ]
    assert tp2[0].per_gpu_bytes - tp2[1].per_gpu_bytes == 2 * 8 * (2 * 4 * 64 + 2 * 4 * 16 + 2 * 2 * 2) == 10_368
    # TP2, EP2: 4 experts per rank, each whole (moe_tp 1): 4 * (2*4*64 + 2*4*32 + 2*2*2) = 4 * 776 per MoE layer
    ep2 = [
        estimate_weight_bytes(config=TINY_MOE, quantization="int4", tp_size=2, ep_size=2, engine="sglang", gpu_vendor=v)
        for v in ("amd", "nvidia")
    ]
    assert ep2[0].per_gpu_bytes - ep2[1].per_gpu_bytes == 2 * 4 * (2 * 4 * 64 + 2 * 4 * 32 + 2 * 2 * 2) == 6_208


def test_no_index_buffers_where_the_method_is_not_taken():
    # vLLM on ROCm: not modelled (the rule is SGLang's); an ignored MoE layer is 16-bit and takes no WNA16 method;
    # CPU experts (kt-kernel) are not on the GPU at all
    v = [
        estimate_weight_bytes(config=TINY_MOE, quantization="int4", tp_size=2, engine="vllm", gpu_vendor=g)
        for g in ("amd", "nvidia")
    ]
    assert v[0].per_gpu_bytes == v[1].per_gpu_bytes
    one_ignored = copy.deepcopy(TINY_MOE)
    one_ignored["quantization_config"]["ignore"] = [*CT_W4A16["ignore"], "re:model\\.layers\\.0\\.mlp\\.experts.*"]
    s = [
        estimate_weight_bytes(config=one_ignored, quantization="int4", tp_size=2, engine="sglang", gpu_vendor=g)
        for g in ("amd", "nvidia")
    ]
    assert s[0].per_gpu_bytes - s[1].per_gpu_bytes == 8 * (2 * 4 * 64 + 2 * 4 * 16 + 2 * 2 * 2)  # layer 1 only
    host = [
        estimate_weight_bytes(
            config=TINY_MOE, quantization="int4", tp_size=2, engine="sglang", gpu_vendor=g, experts_on_host=True
        )
        for g in ("amd", "nvidia")
    ]
    assert host[0].per_gpu_bytes == host[1].per_gpu_bytes


# ----------------------------------------------------------------------------- fbgemm_fp8


def _tiny_llama(qc: dict | None) -> dict:
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1024,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    if qc is not None:
        cfg["quantization_config"] = qc
    return cfg


#: layer 0's attention and MLP kept 16-bit, as Meta's Llama-3.1 FP8 releases name them (full module paths)
LAYER0 = [f"model.layers.0.self_attn.{p}_proj" for p in "qkvo"] + [
    f"model.layers.0.mlp.{p}_proj" for p in ("gate", "up", "down")
]
FBGEMM = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": LAYER0}


def test_fbgemm_tiny_llama_by_hand():
    """hidden 256, 4 heads of 64, 2 KV heads, intermediate 512, vocab 1,024, TP1 under vLLM.

    Layer 0 (not converted, bf16): attention (256 + 128 + 128 + 256) rows x 256 x 2 = 393,216; MLP 3 x 512 x 256 x 2
    = 786,432.  Layer 1 (fp8 + fp32 per output channel): attention 768 x 256 + 4 x 768 = 199,680; MLP 3 x 131,072 +
    4 x (512 + 512 + 256) = 398,336.  Embeddings and lm_head 1,024 x 256 x 2 each; norms (2 x 2 + 1) x 256 x 2.
    """
    expected = 393_216 + 786_432 + 199_680 + 398_336 + 2 * 524_288 + 2_560
    assert expected == 2_828_800
    est = estimate_weight_bytes(config=_tiny_llama(FBGEMM), quantization="fp8", engine="vllm")
    assert est.per_gpu_bytes == expected
    assert any("fbgemm_fp8" in n for n in est.notes)


def test_fbgemm_checkpoint_reads_as_its_own_scheme():
    # the checkpoint's quant_method is not 'fp8', so kvplan reads it as 'mixed'; that is the same fbgemm pricing,
    # no longer an InputError
    cfg = _tiny_llama(FBGEMM)
    assert quantization_from_config(cfg) == "mixed"
    mixed = estimate_weight_bytes(config=cfg, quantization="mixed", engine="vllm")
    fp8 = estimate_weight_bytes(config=cfg, quantization="fp8", engine="vllm")
    assert mixed.per_gpu_bytes == fp8.per_gpu_bytes == 2_828_800


def test_fbgemm_without_the_list_quantizes_every_linear_layer():
    # both layers as layer 1 above: 2 x (199,680 + 398,336) + embeddings, lm_head, norms
    qc = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}
    est = estimate_weight_bytes(config=_tiny_llama(qc), quantization="fp8", engine="vllm")
    assert est.per_gpu_bytes == 2 * (199_680 + 398_336) + 2 * 524_288 + 2_560 == 2_247_168
    # per output channel, not per tensor: a preset's fp8 without the checkpoint's config prices one scale per tensor
    per_tensor = estimate_weight_bytes(config=_tiny_llama(None), quantization="fp8", engine="vllm")
    assert est.per_gpu_bytes - per_tensor.per_gpu_bytes == 2 * 4 * ((768 - 4) + (1280 - 3))


def test_fbgemm_llama405b_with_metas_recipe_by_hand():
    """The number the MISSES note of vllm-6746 quotes: Llama-3.1-405B (preset geometry) at TP8 under vLLM with an
    fbgemm config written by hand after Meta's recipe (llama-models ``convert_to_fp8_quantized_model``: only the
    feed-forward of layers 1..124 in fp8), not the checkpoint's own config (not found).

    Per GPU: embeddings and lm_head 128,256 x 16,384 x 2 / 8 each; attention bf16 per layer q 2,048 + k 128 + v 128
    rows x 16,384 x 2 + o 16,384 x 2,048 x 2; MLP per layer gate, up 6,656 x 16,384 and down 16,384 x 6,656, bf16 (x 2)
    in layers 0 and 125, fp8 + 4 B per output row elsewhere; norms 253 x 16,384 x 2.
    """
    from kvplan.inputs.resolve import resolve_model

    cfg = dict(resolve_model("meta-llama/Llama-3.1-405B").config)
    n = cfg["num_hidden_layers"]
    keep = [f"model.layers.{i}.self_attn.{p}_proj" for i in range(n) for p in "qkvo"]
    keep += [f"model.layers.{i}.mlp.{p}_proj" for i in (0, n - 1) for p in ("gate", "up", "down")]
    cfg["quantization_config"] = {
        "quant_method": "fbgemm_fp8",
        "activation_scale_ub": 1200.0,
        "modules_to_not_convert": keep,
    }
    emb = 128256 * 16384 * 2 // 8
    attn = (2048 + 128 + 128) * 16384 * 2 + 16384 * 2048 * 2
    mlp16 = 3 * 6656 * 16384 * 2
    mlp8 = 3 * 6656 * 16384 + 4 * (6656 + 6656 + 16384)
    expected = 2 * emb + 126 * attn + 2 * mlp16 + 124 * mlp8 + 253 * 16384 * 2
    assert expected == 60_918_022_144
    est = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, engine="vllm")
    assert est.per_gpu_bytes == expected
