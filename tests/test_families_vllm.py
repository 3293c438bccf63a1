"""Issue 13 families under vLLM, with hand-derived numbers (the arithmetic is in each test).

Rules: kvplan/engines/vllm/specs.py, grouping.py, releases.py and kvplan/geometry/layers.py (vLLM 0.11.1 / 0.25.1 /
0.34.0 wheels as read in /tmp/research/issue13-families.md and shared/reference/engine-families-2.md).  Public logs:
github.com/infervisor/plow perf-data/gemma4-26b-a4b-vllm-sm120.md and gemma4-31b-vllm-sm120.md @b84deb91 (vLLM
0.25.1, RTX PRO 6000, TP1, --max-model-len 132096, max_num_batched_tokens 8192); vllm-project/vllm#28228
(Kimi-Linear, 0.11.1, 2x RTX 3090, TP2); tests/validation/logs/vllm-39734-gemma4-31b.log (vllm#39734, 0.19.1).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kvplan.engines.vllm import specs
from kvplan.engines.vllm.planner import VllmInputs, plan_vllm
from kvplan.geometry.layers import HeadGeometry, full_layer_geometry, kv_shared_layers, sliding_layer_geometry

ROOT = Path(__file__).resolve().parent.parent
GiB = 2**30


def _preset(name: str) -> dict:
    return tomllib.loads((ROOT / "configs" / "models" / f"{name}.toml").read_text())["config"]


def _plan(cfg: dict, *, avail: int, version: str, L: int, B: int, tp: int = 1, **kw) -> object:
    return plan_vllm(VllmInputs(config=cfg, device_bytes=100 * GiB, tp_size=tp, kv_cache_memory_bytes=avail,
                                engine_version=version, max_model_len=L, max_num_batched_tokens=B,
                                max_num_seqs=256, **kw))


GEMMA4_26B = _preset("google--gemma-4-26B-A4B")


def _gemma4_31b() -> dict:
    """google/gemma-4-31B-it text geometry (60 layers, full every 6th; full 4 KV heads x 512, sliding 16 x 256;
    window 1024; k_eq_v), as in the research note's table (kvplan has only the NVFP4 variant's preset)."""
    lt = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(60)]
    return {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
            "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 60, "layer_types": lt,
                            "hidden_size": 5376, "num_attention_heads": 32, "head_dim": 256, "global_head_dim": 512,
                            "num_key_value_heads": 16, "num_global_key_value_heads": 4, "attention_k_eq_v": True,
                            "sliding_window": 1024, "max_position_embeddings": 262144, "num_kv_shared_layers": 0}}


# --------------------------------------------------------------------------- geometry by layer type

def test_gemma4_geometry_by_layer_type():
    cfg = GEMMA4_26B["text_config"]
    assert full_layer_geometry(cfg) == HeadGeometry(2, 512, 512)     # global_head_dim, k_eq_v -> global KV heads
    assert sliding_layer_geometry(cfg) == HeadGeometry(8, 256, 256)
    # K and V both stored: 2 x (512 + 512) x 2 = 4,096 B; sliding 8 x (256 + 256) x 2 = 8,192 B per token per layer
    assert full_layer_geometry(cfg).token_bytes(heads_per_rank=2, dtype_bytes=2) == 4096
    assert sliding_layer_geometry(cfg).token_bytes(heads_per_rank=8, dtype_bytes=2) == 8192
    # num_global_key_value_heads only applies with attention_k_eq_v (vLLM gemma4.py, transformers 5.19)
    assert full_layer_geometry({**cfg, "attention_k_eq_v": False}).kv_heads == 8


def test_mimo_v2_asymmetric_widths_and_pattern():
    cfg = _preset("XiaomiMiMo--MiMo-V2-Flash")
    assert full_layer_geometry(cfg) == HeadGeometry(4, 192, 128)
    assert sliding_layer_geometry(cfg) == HeadGeometry(8, 192, 128)
    m = specs.build_model_kv(config=cfg, tp_size=4)
    kinds = [x.kind for x in m.layers]
    # hybrid_layer_pattern wins over attention_chunk_size (128 in this config): 9 full, 39 sliding, no chunked
    assert kinds.count("full") == 9 and kinds.count("swa") == 39
    full = next(x for x in m.layers if x.kind == "full")
    swa = next(x for x in m.layers if x.kind == "swa")
    assert full.token_bytes == 1 * (192 + 128) * 2 == 640      # 4 KV heads / TP4
    assert swa.token_bytes == 2 * (192 + 128) * 2 == 1280      # 8 / TP4
    assert swa.window == 128


def test_mimo_v2_groups_with_padding_layers():
    # 9 full / 39 SWA -> group size 9 (39 >= 1.5 x 9); SWA cdiv(39, 9) = 5 groups, pad 9 - 39 % 9 = 6 layers,
    # 6 / 39 = 15.38%; full page 640 x 16 = 10,240 is half the SWA page 20,480 -> full block 32.
    p = _plan(_preset("XiaomiMiMo--MiMo-V2-Flash"), avail=10 * GiB, version="0.25.1", L=32768, B=8192, tp=4)
    assert p.num_groups == 6
    assert "Add 6 padding layers, may waste at most 15.38% KV cache memory" in p.warnings
    full = [g for g in p.groups if g["kind"] == "full"]
    assert [g["block_size"] for g in full] == [32]
    assert p.bytes_per_block == 9 * 20480


def test_kv_shared_layers():
    assert kv_shared_layers({"num_kv_shared_layers": 20}, 35) == frozenset(range(15, 35))
    assert kv_shared_layers({"num_kv_shared_layers": 0}, 35) == frozenset()


# --------------------------------------------------------------------------- Gemma-4 under vLLM

def test_gemma4_26b_vllm_0251_plow_bf16():
    """P = 8 x (256+256) x 2 x 16 = 131,072 (full 2 x 1,024 x 2 x 32 after the block doubles 16 -> 32);
    six groups of five; bytes per block 5 x 131,072 = 655,360; blocks per request
    cdiv(132,096, 32) + 5 x (cdiv(min(1,023 + 8,192, 132,096), 16) + 1) = 4,128 + 5 x 577 = 7,013.
    32.42 GiB -> 53,113 blocks; 53,113 / 7,013 = 7.5735 -> "7.57x"; int(7.5735 x 132,096) = 1,000,429 [log]."""
    p = _plan(GEMMA4_26B, avail=53113 * 655360 + 1000, version="0.25.1", L=132096, B=8192)
    assert p.num_groups == 6 and all(g["layers"] == 5 for g in p.groups)
    assert sorted({(g["kind"], g["block_size"]) for g in p.groups}) == [("full", 32), ("swa", 16)]
    assert p.bytes_per_block == 655360 and p.num_blocks == 53113
    assert p.blocks_per_request == 7013
    assert p.gpu_kv_cache_tokens == 1000429 and f"{p.max_concurrency:.2f}" == "7.57"
    assert p.kv_bytes_per_token == 5 * 4096 + 25 * 8192


@pytest.mark.parametrize(("blocks", "kv", "tokens", "conc"), [
    (89447, "auto", 1684812, "12.75"),          # --quantization fp8: 54.59 GiB
    (178894, "fp8", 3369625, "25.51"),          # + --kv-cache-dtype fp8: P 65,536, 327,680 B per block
])
def test_gemma4_26b_vllm_0251_plow_fp8(blocks, kv, tokens, conc):
    bpb = 655360 if kv == "auto" else 327680
    p = _plan(GEMMA4_26B, avail=blocks * bpb, version="0.25.1", L=132096, B=8192, kv_cache_dtype=kv)
    assert p.num_blocks == blocks and p.gpu_kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == conc


@pytest.mark.parametrize(("blocks", "kv", "tokens"), [(10186, "auto", 191862), (21387, "auto", 402842),
                                                       (42775, "fp8", 805704)])
def test_gemma4_31b_vllm_0251_plow(blocks, kv, tokens):
    """31B: P = 16 x 512 x 2 x 16 = 262,144, ten layers per group -> 2,621,440 B per block (fp8 KV: half);
    same 7,013 blocks per request; e.g. 10,186 / 7,013 x 132,096 -> 191,862 [log]."""
    bpb = 2621440 if kv == "auto" else 1310720
    p = _plan(_gemma4_31b(), avail=blocks * bpb, version="0.25.1", L=132096, B=8192, kv_cache_dtype=kv)
    assert p.num_groups == 6 and p.blocks_per_request == 7013 and p.gpu_kv_cache_tokens == tokens


def test_gemma4_26b_other_releases():
    avail = 53113 * 655360
    # 0.20 prints num_blocks // groups x min block: 53,113 // 6 x 16 = 141,632 (vllm#43308's "10x" is this)
    assert _plan(GEMMA4_26B, avail=avail, version="0.20.0", L=132096, B=8192).gpu_kv_cache_tokens == 141632
    # 0.34: SWA admission by in-flight tokens (pp + 1) x 8,192 = 16,384: cdiv(1,023 + 16,384, 16) + 1 = 1,089;
    # 4,128 + 5 x 1,089 = 9,573; 53,113 / 9,573 = 5.548; int(5.548 x 132,096) = 732,896
    p = _plan(GEMMA4_26B, avail=avail, version="0.34.0", L=132096, B=8192)
    assert p.blocks_per_request == 9573 and p.gpu_kv_cache_tokens == 732896
    assert p.capacity_log == ("GPU KV cache size: 732,896 tokens, Maximum concurrency for 132,096 tokens per "
                              "request: 5.55x")


def test_gemma4_31b_vllm_39734_log():
    """vllm#39734 (0.19.1, L 262,144; no memory line): tokens 37,392 = num_blocks // 6 x 16 -> num_blocks in
    [14,022, 14,027]; with the 2,048-token batch default (< 70 GiB GPU) blocks per request = 8,192 +
    5 x (cdiv(1,023 + 2,048, 16) + 1) = 8,192 + 5 x 193 = 9,157; 14,025 / 9,157 = 1.53 [log 1.53x].  (An 8,192
    batch would give 1.27x.)"""
    p = _plan(_gemma4_31b(), avail=14025 * 2621440, version="0.19.1", L=262144, B=2048)
    assert p.gpu_kv_cache_tokens == 37392 and f"{p.max_concurrency:.2f}" == "1.53"


def _gemma4_e2b() -> dict:
    """Gemma-4 E2B-style config (third-party transcription, research note §1.1): 35 layers, full every 5th,
    full 1 KV head x 512, sliding 1 x 256, window 512, no k_eq_v, the last 20 layers share KV."""
    lt = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(35)]
    return {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
            "text_config": {"num_hidden_layers": 35, "layer_types": lt, "hidden_size": 1536,
                            "num_attention_heads": 8, "head_dim": 256, "global_head_dim": 512,
                            "num_key_value_heads": 1, "attention_k_eq_v": False, "sliding_window": 512,
                            "num_kv_shared_layers": 20}}


def test_gemma4_e2b_shared_layers_get_no_kv():
    """Layers 15-34 share KV -> 3 full (4, 9, 14) + 12 SWA; full 2,048 B/token (page 32,768), SWA 1,024 (block
    16 -> 32); group size 3 -> 5 groups, 98,304 B per block; blocks per request 2,048 + 4 x (cdiv(511 + 8,192,
    32) + 1) = 2,048 + 4 x 273 = 3,140; 10 GiB // 98,304 = 109,226; 34.785x; int(34.785 x 32,768) = 1,139,846."""
    p = _plan(_gemma4_e2b(), avail=10 * GiB, version="0.25.1", L=32768, B=8192)
    assert sum(g["layers"] for g in p.groups) == 15 and p.num_groups == 5
    assert p.bytes_per_block == 98304 and p.blocks_per_request == 3140 and p.num_blocks == 109226
    assert p.gpu_kv_cache_tokens == 1139846
    assert any("20 KV-sharing layers store no KV" in a for a in p.assumptions)


# --------------------------------------------------------------------------- Kimi-Linear (KDA + MLA)

def _kimi_linear() -> dict:
    mla = {4, 8, 12, 16, 20, 24, 27}
    return {"architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear", "num_hidden_layers": 27,
            "hidden_size": 2304, "num_attention_heads": 32, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
            "max_position_embeddings": 1048576,
            "linear_attn_config": {"kda_layers": [i for i in range(1, 28) if i not in mla], "num_heads": 32,
                                   "head_dim": 128, "short_conv_kernel_size": 4,
                                   "full_attn_layers": sorted(mla)}}


def test_kimi_linear_tp2_vllm_0111_issue_28228():
    """KDA state TP2: 3 x 3 x 2,048 x 2 + 16 x 128 x 128 x 4 = 1,085,440 B; MLA 576 x 2 = 1,152 B/token;
    block 64 x cdiv(1,085,440, 64 x 1,152) = 64 x 15 = 960; page 960 x 1,152 = 1,105,920 (KDA padded +1.89%);
    20 KDA / 7 MLA -> group size 7 (no 1.5x rule in 0.11), KDA cdiv(20, 7) = 3 groups, pad 7 - 20 % 7 = 1
    (1 / 20 = 5.00%); 4 groups; 2.298 GiB // (7 x 1,105,920) = 318 blocks; tokens 318 // 4 x 960 = 75,840 [log];
    blocks per request 125 + 3 = 128 -> 318 / 128 = 2.48x [log]."""
    p = _plan(_kimi_linear(), avail=int(2.298 * GiB), version="0.11.1", L=120000, B=64000, tp=2,
              enable_prefix_caching=True)
    assert p.block_size == 960 and p.num_groups == 4 and p.num_blocks == 318
    assert "Add 1 padding layers, may waste at most 5.00% KV cache memory" in p.warnings
    assert p.gpu_kv_cache_tokens == 75840 and f"{p.max_concurrency:.2f}" == "2.48"


def test_kimi_linear_tp2_vllm_0251():
    """Same blocks under 0.25.1 (block-960 MLA backend; prefix caching off, the 0.25.1 default for hybrids,
    so one KDA block per group): int(318 / 128 x 120,000) = 298,125."""
    p = _plan(_kimi_linear(), avail=int(2.298 * GiB), version="0.25.1", L=120000, B=64000, tp=2,
              enable_prefix_caching=False)
    assert p.num_blocks == 318 and p.blocks_per_request == 128 and p.gpu_kv_cache_tokens == 298125


# --------------------------------------------------------------------------- Jamba, Llama-4, gpt-oss

def test_jamba_tp2_vllm_0251():
    """Mamba-1 state TP2: 3 x 4,096 x 2 + 4,096 x 16 x 2 = 155,648 B; attention 4 x 256 x 2 = 2,048 B/token;
    block 16 x cdiv(155,648, 32,768) = 80, page 163,840; 28 Mamba / 4 attention -> 8 groups of 4,
    655,360 B per block; mode none: blocks per request cdiv(32,768, 80) + 7 = 410 + 7 = 417;
    10 GiB -> 16,384 blocks; int(16,384 / 417 x 32,768) = 1,287,460."""
    p = _plan(_preset("ai21labs--Jamba-v0.1"), avail=10 * GiB, version="0.25.1", L=32768, B=8192, tp=2,
              enable_prefix_caching=False)
    assert p.block_size == 80 and p.num_groups == 8 and p.bytes_per_block == 655360
    assert p.blocks_per_request == 417 and p.num_blocks == 16384
    assert p.gpu_kv_cache_tokens == int(16384 / 417 * 32768) == 1287460


def test_llama4_scout_chunked_local_by_release():
    """Scout TP8 bf16: 1 KV head x 256 x 2 = 512 B/token/layer, page 8,192; 12 global / 36 chunked layers.
    ≥0.14 (hybrid manager on): 4 groups, 98,304 B per block; blocks per request 8,192 + 3 x cdiv(8,192 + 8,192,
    16) = 8,192 + 3,072 = 11,264; 60 GiB -> 655,360 blocks -> int(58.18 x 131,072) = 7,626,007.
    0.13 (off): one group of 48, 393,216 B per block -> 163,840 blocks -> 163,840 x 16 = 2,621,440 tokens."""
    cfg = _preset("meta-llama--Llama-4-Scout-17B-16E-Instruct")
    new = _plan(cfg, avail=60 * GiB, version="0.25.1", L=131072, B=8192, tp=8)
    assert new.num_groups == 4 and new.bytes_per_block == 98304 and new.blocks_per_request == 11264
    assert new.gpu_kv_cache_tokens == 7626007
    old = _plan(cfg, avail=60 * GiB, version="0.13.0", L=131072, B=8192, tp=8)
    assert old.num_groups == 1 and old.num_blocks == 163840 and old.gpu_kv_cache_tokens == 2621440


def test_gpt_oss_sinks_add_no_kv():
    """gpt-oss-120b TP1: 8 KV heads x (64 + 64) x 2 = 2,048 B per token per layer on all 36 layers; the attention
    sinks are a per-head parameter, not a cache term."""
    m = specs.build_model_kv(config=_preset("openai--gpt-oss-120b"), tp_size=1)
    assert {x.token_bytes for x in m.layers} == {2048} and len(m.layers) == 36


def test_v08_sizes_sliding_layers_as_full():
    """0.8 (no hybrid manager): every Gemma-3-27B layer a FullAttentionSpec -> one group of 62 layers,
    16 x 16 x 256 x 2 x 62 = 8,126,464 B per block; 10 GiB -> 1,321 blocks; tokens = 1,321 x 16 = 21,136 and
    concurrency 21,136 / 32,768 = 0.645 (tokens / L); 0.9 groups them (1 full + 6 sliding)."""
    cfg = _preset("google--gemma-3-27b-it")
    p = _plan(cfg, avail=10 * GiB, version="0.8.0", L=32768, B=8192)
    assert p.num_groups == 1 and p.bytes_per_block == 8126464 and p.num_blocks == 1321
    assert p.gpu_kv_cache_tokens == 21136 and p.max_concurrency == pytest.approx(21136 / 32768)
    assert _plan(cfg, avail=10 * GiB, version="0.9.2", L=32768, B=8192).num_groups == 7


# --------------------------------------------------------------------------- KV quantization overheads

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
         "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}


@pytest.mark.parametrize(("dtype", "per_tok"), [
    ("fp8_per_token_head", 8 * (256 + 8)),        # + one fp32 scale for K and for V per token per head
    ("int8_per_token_head", 8 * (256 + 8)),
    ("int4_per_token_head", 8 * (64 + 64 + 8)),   # packed 2 per byte
    ("nvfp4", 8 * 2 * (64 + 8)),                  # h/2 packed + h/16 fp8 block scales, K and V
])
def test_kv_quant_widths(dtype, per_tok):
    m = specs.build_model_kv(config=LLAMA, tp_size=1, kv_cache_dtype=dtype)
    assert {x.token_bytes for x in m.layers} == {per_tok}


def test_kv_cache_dtype_skip_layers():
    """Layer 0 kept at bf16 (4,096 B/token), the other 31 at fp8 (2,048): one uniform-type group whose block
    holds 16 x (4,096 + 31 x 2,048) = 1,081,344 B."""
    m = specs.build_model_kv(config=LLAMA, tp_size=1, kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("0",))
    assert [x.token_bytes for x in m.layers[:2]] == [4096, 2048]
    p = _plan(LLAMA, avail=GiB, version="0.25.1", L=4096, B=2048, kv_cache_dtype="fp8",
              kv_cache_dtype_skip_layers=("0",))
    assert p.num_groups == 1 and p.bytes_per_block == 16 * (4096 + 31 * 2048)


def test_gemma4_refused_where_vllm_has_no_model():
    from kvplan.errors import InputError

    with pytest.raises(InputError, match="cannot serve Gemma4ForConditionalGeneration"):
        _plan(GEMMA4_26B, avail=GiB, version="0.11.1", L=4096, B=2048)
