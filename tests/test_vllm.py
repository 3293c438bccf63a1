"""vLLM KV sizing (kvplan.engines.vllm.planner) against real startup logs and hand-checked formulas.

Fixtures: /work/shared/validation/vllm_dev.jsonl (README.md there).  Expected numbers in the
formula tests are derived by hand from vLLM 0.33.0 code (cited per test), not from kvplan.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.vllm.planner import (
    VllmInputs,
    hybrid_block_size,
    plan_vllm,
    version_rules,
    vllm_available_kv_bytes,
    vllm_default_activation_bytes,
    vllm_requested_bytes,
)
from kvplan.engines.vllm.specs import build_model_kv, dsa_indexer_layers
from kvplan.errors import InputError

GiB = 2**30
SHARED = Path(__file__).resolve().parent.joinpath("data/shared")
CASES_FILE = SHARED / "validation" / "vllm_dev.jsonl"
HF = SHARED / "hf-configs"


def _hf(name: str) -> dict:
    return json.loads((HF / name / "config.json").read_text())


# Minimal geometry for models whose config.json is not in shared/hf-configs (see MISSING.md).
# Each dict cites where its values come from.
LLAMA31_8B = {  # shared/reference/models.json entry "meta-llama/Llama-3.1-8B" (Instruct shares geometry)
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
}
QWEN2_7B = {  # fixture qwen2-7b-a100-u025 "architecture": 28 layers, 4 KV heads, head_dim 128;
    # hidden/heads/vocab as models.json "Qwen/Qwen2.5-7B-Instruct" (same geometry)
    "model_type": "qwen2",
    "num_hidden_layers": 28,
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "intermediate_size": 18944,
    "use_sliding_window": False,
}
QWEN3_NEXT = {  # shared/reference/models.json entry "Qwen/Qwen3-Next-80B-A3B-Instruct"
    "model_type": "qwen3_next",
    "num_hidden_layers": 48,
    "hidden_size": 2048,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "full_attention_interval": 4,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 262144,
    "vocab_size": 151936,
    "intermediate_size": 5120,
    "moe_intermediate_size": 512,
    "num_experts": 512,
}
KIMI_K2 = {  # models.json "moonshotai/Kimi-K2-Instruct" (Kimi-K2-Thinking shares the MLA geometry:
    # fixture architecture "61 layers, 576 elem/token/layer")
    "model_type": "kimi_k2",
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "max_position_embeddings": 262144,
    "vocab_size": 163840,
}
GEMMA3_27B = {  # fixture gemma3-27b-mi300x-rocm "architecture": 62 layers = 52 sliding(1024) + 10 full,
    # 16 KV heads, d=128 (models.json has no geometry for google/gemma-3-27b-it)
    "model_type": "gemma3_text",
    "num_hidden_layers": 62,
    "num_attention_heads": 32,
    "num_key_value_heads": 16,
    "head_dim": 128,
    "hidden_size": 5376,
    "sliding_window": 1024,
    "sliding_window_pattern": 6,
}
QWEN3_CODER_480B = {  # models.json "Qwen/Qwen3-Coder-480B-A35B-Instruct" (the FP8 repo shares geometry)
    "model_type": "qwen3_moe",
    "num_hidden_layers": 62,
    "hidden_size": 6144,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 262144,
}
QWEN3_14B = {  # fixture qwen3-14b-awq-2xl4-pp2 "architecture": 40 layers, 8 KV heads, d=128
    "model_type": "qwen3",
    "num_hidden_layers": 40,
    "hidden_size": 5120,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
}

CONFIGS = {
    "qwen2-7b-a100-u025": QWEN2_7B,
    "gptoss120b-4xa100-tp4-u080": "openai--gpt-oss-120b",
    "llmd-llama31-8b-h100": LLAMA31_8B,
    "llmd-qwen3-32b-2xh100-tp2": "Qwen--Qwen3-32B",
    # the 2507 release is not stored; Qwen3-235B-A22B-FP8 has the same attention geometry (94 L, 4 KV, 128)
    "qwen3-235b-fp8-8xl40s-tp8-ep": "Qwen--Qwen3-235B-A22B-FP8",
    "qwen3-next-80b-2xh200-tp2": QWEN3_NEXT,
    "glm52-nvfp4-4xb200-tp4-ep-fp8kv": "nvidia--GLM-5.2-NVFP4",
    "llama31-8b-rtx3090-v0-20k": LLAMA31_8B,
    "kimi-k2-thinking-8xh200-tp8": KIMI_K2,
    "gemma3-27b-mi300x-rocm": GEMMA3_27B,
    "qwen3-coder-480b-fp8-8xh20-dp8-ep-u90": QWEN3_CODER_480B,
    "qwen3-14b-awq-2xl4-pp2": QWEN3_14B,
    "nemotron3-nano-30b-a3b-bf16-dgxspark": "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
}
SKIP = {
    "deepseek-v2-lite-h100-v0-premla": "V0 pre-MLA build stored DeepSeek-V2 as padded MHA K/V "
    "(256+256 per head); a historical layout kvplan does not model",
    "dsv4-flash-8xb200-tp8-ep": "no memory figure printed (tokens only) and the -0731 config is not stored",
}
# Version overrides, with the reason.
VERSION = {
    # The author says 0.20.2, but the log prints the ≥0.21 group-aware token line
    # (5,769,184 = int(22.0077 × 262,144)) and "default since v0.21.0": treat as 0.21.
    "nemotron3-nano-30b-a3b-bf16-dgxspark": "0.21.0",
}
# Logged CUDA-graph estimate actually subtracted (≥0.20), when it differs from the fixture's
# actual-pool value: GLM-5.2 log line "Estimated CUDA graph memory: 4.99 GiB total".
GRAPH_ESTIMATE_GIB = {"glm52-nvfp4-4xb200-tp4-ep-fp8kv": 4.99}


def _cases() -> list[dict]:
    return [json.loads(line) for line in CASES_FILE.read_text().splitlines() if line.strip()]


def _config(case_id: str) -> dict:
    c = CONFIGS[case_id]
    return _hf(c) if isinstance(c, str) else c


def _inputs(case: dict, **over) -> VllmInputs:
    fx = case["fixture"]
    kvd = (case.get("kv_cache_dtype") or "auto").split()[0]
    device = fx.get("gpu_memory_bytes") or int(80 * GiB)
    bs = None if "block_size" in (fx.get("omit") or []) else case.get("block_size")
    kw = dict(
        config=_config(case["id"]),
        device_bytes=device,
        tp_size=case["tp"] or 1,
        pp_size=case["pp"] or 1,
        dp_size=case["dp"] or 1,
        gpu_memory_utilization=case.get("gpu_memory_utilization"),
        kv_cache_dtype=kvd,
        block_size=bs,
        max_model_len=case.get("max_model_len"),
        max_num_seqs=case.get("max_num_seqs"),
        max_num_batched_tokens=case.get("max_num_batched_tokens"),
        enforce_eager=bool(case.get("enforce_eager")),
        engine_version=VERSION.get(case["id"], fx.get("engine_version")),
        sm_major=10 if "Blackwell" in (case.get("gpu") or "") else None,
    )
    kw.update(over)
    return VllmInputs(**kw)


def _target(case: dict) -> tuple[str, int]:
    t = case["fixture"].get("target")
    if t:
        return t["kind"], t["value"]
    return "tokens", case["reported"]["gpu_kv_cache_tokens"]


TOKEN_CASES = [
    c
    for c in _cases()
    if (
        c["reported"].get("available_kv_cache_gib") is not None
        and (c["reported"].get("gpu_kv_cache_tokens") or c["fixture"].get("target"))
    )
    or c["id"] in SKIP
]


@pytest.mark.parametrize("case", TOKEN_CASES, ids=[c["id"] for c in TOKEN_CASES])
def test_measured_tokens_and_concurrency(case):
    """With the logged available KV memory, tokens and concurrency within 0.5%."""
    if case["id"] in SKIP:
        pytest.skip(SKIP[case["id"]])
    rep = case["reported"]
    plan = plan_vllm(_inputs(case, kv_cache_memory_bytes=int(rep["available_kv_cache_gib"] * GiB)))
    _kind, value = _target(case)
    if case["fixture"].get("target"):
        # error path: the target is the printed estimated maximum model length
        assert not plan.fits
        assert abs(plan.estimated_max_model_len - value) / value < 0.005
        return
    assert abs(plan.gpu_kv_cache_tokens - value) / value < 0.005, (plan.gpu_kv_cache_tokens, value)
    if rep.get("max_concurrency") is not None:
        assert abs(plan.max_concurrency - rep["max_concurrency"]) / rep["max_concurrency"] < 0.005
        assert rep["max_concurrency_tokens_per_request"] == plan.max_model_len


BUDGET_CASES = [
    c
    for c in _cases()
    if all(
        c["reported"].get(k) is not None
        for k in ("total_gpu_mem_gib", "model_loading_gib", "peak_activation_gib", "non_torch_gib")
    )
]


@pytest.mark.parametrize("case", BUDGET_CASES, ids=[c["id"] for c in BUDGET_CASES])
def test_measured_budget(case):
    """With the logged weights / activation / non-torch terms, the available KV within 0.02 GiB."""
    rep = case["reported"]
    g = GRAPH_ESTIMATE_GIB.get(case["id"])
    plan = plan_vllm(
        _inputs(
            case,
            device_bytes=int(rep["total_gpu_mem_gib"] * GiB),
            weight_bytes=int(rep["model_loading_gib"] * GiB),
            activation_bytes=int(rep["peak_activation_gib"] * GiB),
            non_torch_bytes=int(rep["non_torch_gib"] * GiB),
            cuda_graph_bytes=int(g * GiB) if g is not None else None,
            cuda_graph_estimate=None if g is not None else False,
        )
    )
    assert abs(plan.available_kv_bytes / GiB - rep["available_kv_cache_gib"]) <= 0.02


def test_budget_graph_subtracted_only_from_0_20():
    """0.10.2 does not subtract the graph pool; 0.26 does (GLM-5.2: 169.56 − 106.69 − 6.31 − 0.95 − 4.99 = 50.62)."""
    base = dict(
        config=LLAMA31_8B,
        device_bytes=100 * GiB,
        gpu_memory_utilization=0.9,
        weight_bytes=10 * GiB,
        activation_bytes=2 * GiB,
        non_torch_bytes=0,
        cuda_graph_bytes=GiB,
        max_model_len=4096,
    )
    old = plan_vllm(VllmInputs(**base, engine_version="0.19.0"))
    new = plan_vllm(VllmInputs(**base, engine_version="0.20.0"))
    eager = plan_vllm(VllmInputs(**base, engine_version="0.20.0", enforce_eager=True))
    assert old.available_kv_bytes - new.available_kv_bytes == GiB
    assert eager.available_kv_bytes == old.available_kv_bytes
    # requested = ceil(100 GiB × 0.9) = 96,636,764,160 exactly; minus 12 GiB
    assert old.available_kv_bytes == 96_636_764_160 - 12 * GiB


def test_default_utilization_by_version():
    assert version_rules("0.19.0").default_utilization == 0.9
    assert version_rules("0.20.0").default_utilization == 0.92
    assert version_rules(None).default_utilization == 0.92


def test_requested_is_ceil():
    # 85,520,809,984 × 0.9 = 76,968,728,985.6 -> ceil 76,968,728,986 (request_memory, v0.33.0)
    assert vllm_requested_bytes(device_bytes=85_520_809_984, gpu_memory_utilization=0.9) == 76_968_728_986
    assert (
        vllm_available_kv_bytes(
            requested_bytes=100, weight_bytes=30, activation_bytes=20, non_torch_bytes=5, cuda_graph_bytes=5
        )
        == 40
    )


def test_kv_cache_memory_bytes_replaces_budget():
    p = plan_vllm(
        VllmInputs(
            config=LLAMA31_8B,
            device_bytes=80 * GiB,
            kv_cache_memory_bytes=10 * GiB,
            weight_bytes=70 * GiB,
            activation_bytes=20 * GiB,
            max_model_len=32768,
        )
    )
    # 32 layers × 16 tok × 8 heads × 256 × 2 B = 2,097,152 B/block; 10 GiB / that = 5,120 blocks
    assert p.bytes_per_block == 2_097_152 and p.num_blocks == 5120
    assert p.gpu_kv_cache_tokens == 81_920 and p.max_concurrency == pytest.approx(2.5)
    assert p.kv_bytes_per_token == 131_072


def test_qwen3_next_0_10_2_exact():
    """Public log: block 544, Mamba padded 1.49%, 973,760 tokens, 14.77x (reference §7.3)."""
    p = plan_vllm(
        VllmInputs(
            config=QWEN3_NEXT,
            device_bytes=150_754_820_096,
            tp_size=2,
            engine_version="0.10.2",
            max_model_len=262144,
            max_num_batched_tokens=8192,
            kv_cache_memory_bytes=int(44.59 * GiB),
        )
    )
    assert p.block_size == 544 and p.num_groups == 4
    # 12 layers × 544 × 1 head × 512 × 2 B = 6,684,672 B/block; 44.59 GiB // that = 7,162
    assert p.bytes_per_block == 6_684_672 and p.num_blocks == 7162
    assert p.gpu_kv_cache_tokens == 973_760  # 7,162 // 4 × 544
    assert round(p.max_concurrency, 2) == 14.77  # 7,162 / (482 + 3 × 1)
    assert any("Padding mamba page size by 1.49%" in w for w in p.warnings)
    # the same pool on 0.33: align mode (2 blocks per Mamba group) and the group-aware token line
    q = plan_vllm(
        VllmInputs(
            config=QWEN3_NEXT,
            device_bytes=150_754_820_096,
            tp_size=2,
            engine_version="0.33.0",
            max_model_len=262144,
            max_num_batched_tokens=8192,
            kv_cache_memory_bytes=int(44.59 * GiB),
        )
    )
    assert q.blocks_per_request == 482 + 3 * 2 and round(q.max_concurrency, 2) == 14.68
    assert q.gpu_kv_cache_tokens == int(7162 / 488 * 262144)


def test_hybrid_block_size_formula():
    # GDN per rank (TP2): conv 3 × 4,096 × 2 B + temporal 16 × 128 × 128 × 2 B = 548,864 B
    assert hybrid_block_size(attn_token_bytes=1024, mamba_state_bytes=548_864, block_size=16) == 544
    # Nemotron-3-Nano TP1: conv 3 × 6,144 × 2 B + ssm 64 × 64 × 128 × 4 B (fp32) = 2,134,016 B; 1,024 B/token
    assert hybrid_block_size(attn_token_bytes=1024, mamba_state_bytes=2_134_016, block_size=16) == 2096
    assert hybrid_block_size(attn_token_bytes=1024, mamba_state_bytes=548_864, block_size=16, mla=True) == 640


def test_nemotron_groups_and_padding():
    m = build_model_kv(config=_hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), tp_size=1)
    assert sum(x.kind == "full" for x in m.layers) == 6 and sum(x.kind == "mamba" for x in m.layers) == 23
    assert {x.state_bytes for x in m.layers if x.kind == "mamba"} == {2_134_016}
    p = plan_vllm(
        VllmInputs(
            config=_hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
            device_bytes=119 * GiB,
            engine_version="0.21.0",
            max_model_len=262144,
            kv_cache_memory_bytes=int(34.32 * GiB),
        )
    )
    # 23 Mamba layers in groups of 6 -> 4 groups + 1 padding slot; 1 full group
    assert p.num_groups == 5 and any("Add 1 padding layers, may waste at most 4.35%" in w for w in p.warnings)
    assert p.bytes_per_block == 6 * 2096 * 1024 and p.num_blocks == 2861
    # mode none (prefix caching off in that build): 126 + 4 × 1 blocks per request
    assert p.blocks_per_request == 130 and p.gpu_kv_cache_tokens == 5_769_184


def test_gpt_oss_sliding_window_blocks():
    """gpt-oss-120b TP4 on 0.10.1.1: I = max_num_batched_tokens = 2048; SWA blocks cdiv(127+2048, 16)+1 = 137."""
    cfg = _hf("openai--gpt-oss-120b")
    p = plan_vllm(
        VllmInputs(
            config=cfg,
            device_bytes=80 * GiB,
            tp_size=4,
            engine_version="0.10.1.1",
            max_model_len=16384,
            max_num_batched_tokens=2048,
            kv_cache_memory_bytes=330018 * 147456,
        )
    )
    assert p.num_groups == 2 and p.bytes_per_block == 18 * 16 * 2 * 128 * 2
    assert p.blocks_per_request == 1024 + 137
    assert p.gpu_kv_cache_tokens == 2_640_144 and round(p.max_concurrency, 2) == 284.25
    # ≥0.26 uses in-flight = (pp+1) × B = 4096: cdiv(127+4096, 16)+1 = 265
    q = plan_vllm(
        VllmInputs(
            config=cfg,
            device_bytes=80 * GiB,
            tp_size=4,
            engine_version="0.26.0",
            max_model_len=16384,
            max_num_batched_tokens=2048,
            kv_cache_memory_bytes=330018 * 147456,
        )
    )
    assert q.blocks_per_request == 1024 + 265


def test_gemma3_groups_and_old_token_line():
    p = plan_vllm(
        VllmInputs(
            config=GEMMA3_27B,
            device_bytes=192 * GiB,
            engine_version="0.11.0",
            max_model_len=4096,
            max_num_batched_tokens=8192,
            kv_cache_memory_bytes=89994 * 1_310_720,
        )
    )
    # 10 full + 52 SWA -> group size 10 -> 1 + 6 groups; SWA min(1023+8192, 4096) -> 256 + 1 blocks
    assert p.num_groups == 7 and p.bytes_per_block == 10 * 16 * 16 * 256 * 2
    assert p.gpu_kv_cache_tokens == 89994 // 7 * 16 == 205_696
    assert p.blocks_per_request == 256 + 6 * 257 and round(p.max_concurrency, 2) == 50.05


def test_mla_and_dsa_bytes():
    m = build_model_kv(config=KIMI_K2, tp_size=8)
    assert {x.token_bytes for x in m.layers} == {1152} and len(m.layers) == 61  # 576 × 2 B, not split by TP
    glm = _hf("nvidia--GLM-5.2-NVFP4")
    # index_topk_freq 4, offset 3: layers 0, 1, 2, 6, 10, … 74 keep an indexer -> 21 (= config's "full" count)
    assert len(dsa_indexer_layers(glm)) == 21 == glm["indexer_types"].count("full")
    m = build_model_kv(config=glm, tp_size=4, kv_cache_dtype="fp8_e4m3", sm_major=10)
    assert sum(x.token_bytes for x in m.layers) == 78 * 576 + 21 * 132 == 47_700
    m = build_model_kv(config=glm, tp_size=4, kv_cache_dtype="fp8_e4m3", sm_major=9)
    assert sum(x.token_bytes for x in m.layers) == 78 * 656 + 21 * 132


def test_pp_stage_split():
    p = plan_vllm(
        VllmInputs(
            config=QWEN3_14B,
            device_bytes=24 * GiB,
            pp_size=2,
            engine_version="0.28.0",
            max_model_len=40960,
            kv_cache_memory_bytes=11500 * 16 * 81920,
        )
    )
    assert p.bytes_per_block == 20 * 16 * 8 * 256 * 2 and p.num_blocks == 11500
    assert p.gpu_kv_cache_tokens == 184_000


def test_fit_check_and_estimate_single_group():
    """Qwen3-Coder-480B on 0.10.1: 62.00 GiB needed; estimate = floor(check / 4,063,232) × 16."""
    bpb = 16 * 62 * 8 * 256 * 2  # 4,063,232
    avail = 12858 * bpb + bpb  # check memory = 12,858 blocks after the null block
    p = plan_vllm(
        VllmInputs(config=QWEN3_CODER_480B, device_bytes=140 * GiB, max_model_len=262144, kv_cache_memory_bytes=avail)
    )
    assert not p.fits and round(p.needed_bytes / GiB, 2) == 62.00
    assert p.estimated_max_model_len == 12858 * 16 == 205_728
    ok = plan_vllm(
        VllmInputs(
            config=QWEN3_CODER_480B,
            device_bytes=140 * GiB,
            max_model_len=262144,
            kv_cache_memory_bytes=16384 * bpb + bpb,
        )
    )
    assert ok.fits and ok.estimated_max_model_len is None


def test_dsv4_fit_error_0_22():
    """DeepSeek-V4-Flash TP2 on ~0.22 (vllm#44376): "6.66 GiB KV cache is needed … estimated maximum model
    length is 13528" with block 256, fp8, I = 16,384 and 1,051,776 B/block (reference §5.3)."""
    cfg = _hf("deepseek-ai--DeepSeek-V4-Flash")
    bpb = (37_440 + 1_728 + 8_640) * 22
    common = dict(
        config=cfg,
        device_bytes=94 * GiB,
        tp_size=2,
        engine_version="0.22.0",
        kv_cache_dtype="fp8",
        block_size=256,
        max_model_len=30000,
        max_num_batched_tokens=16384,
    )
    # printed 5.44 GiB is the check memory (after the null block); 13,528 fits only for a check value in
    # [5,554 × bpb, 5,556 × bpb) = [5.4404, 5.4424) GiB, inside the printed value's rounding interval
    p = plan_vllm(VllmInputs(**common, kv_cache_memory_bytes=int(5.4414 * GiB) + bpb))
    assert p.bytes_per_block == bpb and p.blocks_per_request == 118 + 2 * 259 + 4099 + 2065
    assert round(p.needed_bytes / GiB, 2) == 6.66 and p.estimated_max_model_len == 13528
    # 0.33 packed grouping: max(1,002,240; 823,680; 870,912; 656,640)
    q = plan_vllm(VllmInputs(**{**common, "engine_version": "0.33.0"}, kv_cache_memory_bytes=50 * GiB))
    assert q.bytes_per_block == 1_002_240 and q.num_groups == 5


def test_release_numbers():
    from kvplan.engines.vllm.releases import release_numbers

    assert release_numbers("0.10.1.1") == (0, 10, 1)
    assert release_numbers("0.11.0rc2.dev98+g393de22d2") == (0, 11, 0)
    assert release_numbers(None) == (0, 34, 0)  # the default release became 0.34.0 (issue 12)
    with pytest.raises(InputError):
        release_numbers("latest")


def test_activation_estimate_grows_with_batch():
    a = vllm_default_activation_bytes(config=LLAMA31_8B, max_num_batched_tokens=2048, max_num_seqs=256)
    b = vllm_default_activation_bytes(config=LLAMA31_8B, max_num_batched_tokens=8192, max_num_seqs=1024)
    # sampler term: 1024 rows × 128,256 × 39 B (buffer list in the docstring) = 4.77 GiB
    assert b == 1024 * 128256 * 39 and b > a
    assert a == 256 * 128256 * 39
    # forward-bound when the sampler is small: 3·H (residual, input, output) + 3·I (gate_up + act), bf16
    big = vllm_default_activation_bytes(config=LLAMA31_8B, max_num_batched_tokens=65536, max_num_seqs=8)
    assert big == 65536 * 2 * (3 * 4096 + 3 * 14336)


def test_v0_profile_batch_and_activation():
    """V0 (0.6.4 config.py SchedulerConfig / arg_utils.py): batch = max(L, 2048), 512 with chunked prefill
    (default on above 32K).  RTX 3090 Llama-3.1-8B logs (vllm#10517): peak torch − weights = 17.06 − 14.99 and
    17.98 − 14.99 GiB at L = 20,000 / 29,000: 20,000 × 2 × (3·4,096 + 3·14,336) B = 2.06 GiB, 29,000 -> 2.99 GiB."""
    from kvplan.engines.vllm.planner import vllm_v0_batch_tokens

    assert vllm_v0_batch_tokens(max_model_len=20000) == 20000
    assert vllm_v0_batch_tokens(max_model_len=1024) == 2048
    assert vllm_v0_batch_tokens(max_model_len=40000) == 512
    for L, logged in ((20000, 17.06 - 14.99), (29000, 17.98 - 14.99)):
        a = vllm_default_activation_bytes(config=LLAMA31_8B, max_num_batched_tokens=L, max_num_seqs=256, v0=True)
        assert a == L * 2 * (3 * 4096 + 3 * 14336)
        assert abs(a / GiB - logged) < 0.02
    p = plan_vllm(
        VllmInputs(
            config=LLAMA31_8B,
            device_bytes=int(23.58 * GiB),
            engine_version="0.6.4",
            weight_bytes=int(14.99 * GiB),
            max_model_len=20000,
        )
    )
    terms = dict(p.budget_terms)
    assert p.max_num_batched_tokens == 20000 and terms["activation"] == 20000 * 2 * (3 * 4096 + 3 * 14336)
    assert terms["cuda_graph"] == 0


def test_non_torch_by_interconnect_and_version():
    """128 MiB per rank; NVLink multi-rank +512 MiB when the snapshot follows the communicators (≥0.11),
    + runtime.NVLINK_COMM_BYTES before (≤0.10); PCIe multi-rank adds nothing (no custom all-reduce)."""
    from kvplan.engines.runtime import NVLINK_COMM_BYTES
    from kvplan.engines.vllm.planner import MiB, vllm_default_non_torch_bytes

    assert vllm_default_non_torch_bytes(tp_size=1, engine_version="0.11.0") == 128 * MiB
    assert vllm_default_non_torch_bytes(tp_size=2, engine_version="0.11.0", interconnect="nvlink") == 640 * MiB
    assert (
        vllm_default_non_torch_bytes(tp_size=2, engine_version="0.10.2", interconnect="nvlink")
        == 128 * MiB + NVLINK_COMM_BYTES
    )
    assert vllm_default_non_torch_bytes(tp_size=8, engine_version="0.10.2", interconnect="pcie") == 128 * MiB


def test_budget_terms_take_arrays():
    """issue 16: the budget formulas the sweep runs on arrays give the scalar values element-wise (hand-checked:
    Llama-3.1-8B TP1, the vllm_default_activation_bytes docstring)."""
    import numpy as np

    from kvplan.engines.vllm.budget import vllm_activation_coefficients, vllm_activation_peak

    fwd, spr = vllm_activation_coefficients(config=LLAMA31_8B)
    assert (fwd, spr) == (2 * (3 * 4096 + 3 * 14336), 128256 * 39) == (110_592, 5_001_984)
    assert (
        vllm_activation_peak(
            forward_bytes_per_token=fwd, sampler_bytes_per_row=spr, max_num_batched_tokens=8192, max_num_seqs=1024
        )
        == 1024 * 5_001_984
        == 5_122_031_616
    )
    assert (
        vllm_default_activation_bytes(config=LLAMA31_8B, max_num_batched_tokens=8192, max_num_seqs=4)
        == 8192 * 110_592
        == 905_969_664
    )  # 4 sampler rows: the forward pass is the peak
    seqs = np.array([4, 1024, 8192])
    assert vllm_activation_peak(
        forward_bytes_per_token=fwd, sampler_bytes_per_row=spr, max_num_batched_tokens=8192, max_num_seqs=seqs
    ).tolist() == [905_969_664, 5_122_031_616, 8192 * 5_001_984]
    util = np.array([0.9, 0.5, 0.95])
    for ceil in (True, False):
        arr = vllm_requested_bytes(device_bytes=85_520_809_984, gpu_memory_utilization=util, ceil=ceil)
        assert arr.tolist() == [
            vllm_requested_bytes(device_bytes=85_520_809_984, gpu_memory_utilization=u, ceil=ceil)
            for u in util.tolist()
        ]
    assert vllm_requested_bytes(device_bytes=85_520_809_984, gpu_memory_utilization=0.9) == 76_968_728_986
