"""kvplan.weights.allocator: PyTorch's caching-allocator rules (c10/cuda/CUDACachingAllocator.cpp) with numbers
derived by hand, and where the estimate applies the reserve (SGLang everywhere, vLLM on ROCm only)."""

from __future__ import annotations

from kvplan.weights.allocator import fused_allocations, reserved_bytes
from kvplan.weights.estimate import estimate_weight_bytes

MiB = 1 << 20


def test_one_qwen25_05b_layer_by_hand():
    # qkv 1,152 x 896 x 2 = 2,064,384 (1-10 MiB: a 20 MiB segment, 18,907,136 left); o 896 x 896 x 2 = 1,605,632
    # takes 1,605,632 of the rest (17,301,504 left); gate_up 9,728 x 896 x 2 = 17,432,576 does not fit: its own
    # segment rounded to 2 MiB = 18 MiB (1,441,792 left); down 896 x 4,864 x 2 = 8,716,288 best-fits the
    # 17,301,504 block (the 1,441,792 one is too small): 20 + 18 MiB reserved.
    assert reserved_bytes(sizes=[2_064_384, 1_605_632, 17_432_576, 8_716_288]) == 38 * MiB


def test_small_and_large_pools_and_rounding():
    assert reserved_bytes(sizes=[1]) == 2 * MiB  # 512 B rounded, a 2 MiB small segment
    assert reserved_bytes(sizes=[1] * 4096) == 2 * MiB  # 4,096 x 512 B = exactly one small segment
    assert reserved_bytes(sizes=[1] * 4097) == 4 * MiB
    assert reserved_bytes(sizes=[10 * MiB]) == 10 * MiB  # >= 10 MiB: rounded to 2 MiB, no slack
    assert reserved_bytes(sizes=[10 * MiB + 1]) == 12 * MiB
    assert reserved_bytes(sizes=[MiB + 512, MiB + 512]) == 20 * MiB  # both in one 20 MiB segment
    # a rest of exactly 1 MiB in the large pool is not split off (kSmallSize): the next request opens a segment
    assert reserved_bytes(sizes=[19 * MiB, MiB + 512]) == 40 * MiB


def test_fused_parameters():
    got = fused_allocations(
        [("l.0.q_proj", 8), ("l.0.k_proj", 2), ("l.0.v_proj", 2), ("l.0.o_proj", 8), ("l.0.q_proj.bias", 1)]
    )
    assert got == [12, 8, 1]
    assert fused_allocations([("m.experts.gate_proj", 5), ("m.experts.up_proj", 5), ("m.experts.down_proj", 5)]) == [
        10,
        5,
    ]


QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 32768,
}


def test_reserve_by_engine_and_vendor():
    """The tensors are the same everywhere (494,032,768 params x 2 B); the reserve only where the engine measures at
    the device level: SGLang on any GPU, vLLM on ROCm, not vLLM on CUDA (torch.cuda.max_memory_allocated)."""
    sg = estimate_weight_bytes(config=QWEN25_05B, quantization="bf16", engine="sglang")
    vl = estimate_weight_bytes(config=QWEN25_05B, quantization="bf16", engine="vllm")
    rocm = estimate_weight_bytes(config=QWEN25_05B, quantization="bf16", engine="vllm", gpu_vendor="amd")
    assert sg.per_gpu_bytes == vl.per_gpu_bytes == rocm.per_gpu_bytes == 2 * 494_032_768
    assert vl.allocator_reserve_bytes == 0 and vl.measured_bytes == vl.per_gpu_bytes
    assert sg.allocator_reserve_bytes == rocm.allocator_reserve_bytes > 50 * MiB
    # the log (SGLang 0.5.8, RTX 4070 Ti SUPER): 'mem usage=0.98 GB'
    assert abs(sg.measured_bytes / 2**30 - 0.98) < 0.005
