"""kvplan.weights.estimate: parameter counts, storage bytes, sharding, and logged weight loads.

Expected numbers come from (a) hand arithmetic on the config geometry, (b) published
parameter counts, (c) engine logs in shared/validation (SGLang "Load weight end ... mem
usage", vLLM "Model loading took").  Tolerances are stated per case and were not tuned.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.weights.estimate import (
    MXFP4_EXPERT_PADDING,
    count_params,
    estimate_weight_bytes,
    flatten_config,
    pp_layer_ranges,
    quantization_from_config,
    scheme_bytes,
)

GIB = 2**30


def _shared() -> Path | None:
    here = Path(__file__).resolve()
    for cand in (here.parent / "data" / "shared",):
        if (cand / "hf-configs").is_dir():
            return cand
    return None


SHARED = _shared()
needs_shared = pytest.mark.skipif(SHARED is None, reason="shared/ (hf-configs, reference) not found")


def hf(name: str) -> dict:
    return json.loads((SHARED / "hf-configs" / name / "config.json").read_text())


def ref(model_id: str, **extra) -> dict:
    models = json.loads((SHARED / "reference" / "models.json").read_text())
    m = next(m for m in models if m["id"] == model_id)
    cfg = {k: v for k, v in m.items() if v is not None}
    cfg.update(extra)
    return cfg


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


def _preset_config(model_id: str) -> dict:
    """[config] of a kvplan preset (sourced geometry; see the preset's comments)."""
    from kvplan.inputs.resolve import resolve_model

    return dict(resolve_model(model_id).config)


# ----------------------------------------------------------------------------- params


def test_llama31_8b_params_exact():
    # embed 128256*4096 + lm_head same + 32 * (q 4096^2 + k,v 2*1024*4096 + o 4096^2
    # + mlp 3*4096*14336 + 2 norms*4096) + final norm 4096
    per_layer = 4096 * 4096 * 2 + 2 * 1024 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    expect = 2 * 128256 * 4096 + 32 * per_layer + 4096
    assert expect == 8_030_261_248
    assert count_params(LLAMA31_8B)["total"] == 8_030_261_248


def test_bf16_tp1_is_two_bytes_per_param():
    est = estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16")
    assert est.per_gpu_bytes == 2 * 8_030_261_248 == est.total_bytes
    assert est.method == "params" and est.params == 8_030_261_248


@needs_shared
def test_qwen3_dense_params():
    # Qwen3-8B: 8,190,735,360 (sum of the HF safetensors shapes; "8.2B" on the card)
    assert count_params(hf("Qwen--Qwen3-8B"))["total"] == 8_190_735_360
    # Qwen3-32B: "32.8B" on the model card
    assert count_params(hf("Qwen--Qwen3-32B"))["total"] == pytest.approx(32.8e9, rel=2e-3)


@needs_shared
def test_gpt_oss_120b_params():
    # OpenAI model card: 116.8B total parameters
    assert count_params(hf("openai--gpt-oss-120b"))["total"] == pytest.approx(116.8e9, rel=1e-3)


@needs_shared
def test_deepseek_v3_params_main_and_mtp():
    p = count_params(hf("deepseek-ai--DeepSeek-V3"))
    # DeepSeek-V3 report: 671B main model, 685B on the Hub with the MTP module
    assert p["total"] - p["mtp"] == pytest.approx(671e9, rel=1e-3)
    assert p["total"] == pytest.approx(685e9, rel=2e-3)
    # routed experts: 58 MoE layers * 256 * 3 * 7168 * 2048
    assert p["experts"] == 58 * 256 * 3 * 7168 * 2048


@needs_shared
def test_nemotron_h_hybrid_params():
    # NVIDIA-Nemotron-3-Nano-30B-A3B: "31.6B total" on the model card
    assert count_params(hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"))["total"] == pytest.approx(31.6e9, rel=5e-3)


def test_text_config_flattened():
    nested = {"architectures": ["Outer"], "text_config": {"hidden_size": 64, "num_hidden_layers": 2}}
    flat = flatten_config(nested)
    assert flat["hidden_size"] == 64 and flat["_outer_architectures"] == ["Outer"]


# ----------------------------------------------------------------------------- bytes


def test_scheme_bytes_hand_values():
    r, c = 4096, 4096
    assert scheme_bytes("bf16", r, c) == 2 * r * c
    assert scheme_bytes("fp8_block", r, c) == r * c + 4 * 32 * 32
    assert scheme_bytes("fp8_block", 576, 7168) == 576 * 7168 + 4 * 5 * 56  # ceil(576/128)=5
    assert scheme_bytes("mxfp4", 2880, 2880) == 2880 * 2880 // 2 + 2880 * 90
    assert scheme_bytes("nvfp4", r, c) == r * c // 2 + r * c // 16 + 8
    # AWQ int4 g128: packed weight + fp16 scale + 4-bit zero per group
    assert scheme_bytes("int4", r, c, group=128) == r * c // 2 + 2 * r * 32 + r * 32 // 2
    assert scheme_bytes("int4", r, c, group=32, zeros=False) == r * c // 2 + 2 * r * 128
    assert scheme_bytes("int8", r, c) == r * c + 4 * r
    # bits per parameter
    assert scheme_bytes("mxfp4", 1024, 1024) * 8 / 1024**2 == 4.25
    assert scheme_bytes("nvfp4", 1024, 1024) * 8 / 1024**2 == pytest.approx(4.5, abs=1e-4)


@needs_shared
def test_quantization_from_config():
    assert quantization_from_config(hf("openai--gpt-oss-120b")) == "mxfp4"
    assert quantization_from_config(hf("deepseek-ai--DeepSeek-V3")) == "fp8"
    assert quantization_from_config(hf("deepseek-ai--DeepSeek-V4-Flash")) == "mixed"  # fp8 + fp4 experts
    assert quantization_from_config(hf("moonshotai--Kimi-K2.5")) == "int4"
    assert quantization_from_config(hf("nvidia--GLM-5.2-NVFP4")) == "nvfp4"
    assert quantization_from_config(hf("Qwen--Qwen3-235B-A22B-FP8")) == "fp8"
    assert quantization_from_config(hf("Qwen--Qwen3-32B")) == "bf16"
    assert quantization_from_config({"hidden_size": 8, "torch_dtype": "float16"}) == "fp16"
    awq = {"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}
    assert quantization_from_config(awq) == "int4"


@needs_shared
def test_gpt_oss_attention_stays_bf16():
    est = estimate_weight_bytes(config=hf("openai--gpt-oss-120b"), quantization="mxfp4")
    b = dict(est.breakdown)
    # 36 layers * (q 64*64 + k,v 2*8*64 + o) * 2880 * 2 B, plus biases and sinks
    mats = 36 * (4096 * 2880 + 2 * 512 * 2880 + 2880 * 4096) * 2
    assert mats < b["attention"] < mats * 1.001
    # experts: 36 * 128 * (gate_up 5760x2880 + down 2880x2880) at 4.25 bits + bf16 biases
    exp = 36 * 128 * (scheme_bytes("mxfp4", 5760, 2880) + scheme_bytes("mxfp4", 2880, 2880) + 2 * (5760 + 2880))
    assert b["experts"] == exp


# ----------------------------------------------------------------------------- sharding


@needs_shared
def test_kv_heads_replicated_when_tp_exceeds_kv():
    cfg = hf("Qwen--Qwen3-235B-A22B-FP8")  # 4 KV heads, 64 q heads, head_dim 128
    e8 = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=8, ep_size=8)
    e4 = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=4, ep_size=4)
    h, L = 4096, 94
    # per rank: q heads/tp, one KV head (k and v) at both tp=4 and tp=8
    att8 = L * ((64 // 8) * 128 * h + 2 * 128 * h + h * (64 // 8) * 128) * 2
    att4 = L * ((64 // 4) * 128 * h + 2 * 128 * h + h * (64 // 4) * 128) * 2
    norms8 = dict(e8.breakdown)["norms"]
    assert dict(e8.breakdown)["attention"] == att8
    assert dict(e4.breakdown)["attention"] == att4
    assert norms8 == (L * (2 * h + 2 * 128) + h) * 2
    assert any("replicated" in n for n in e8.notes)


def test_vocab_padding():
    cfg = dict(LLAMA31_8B, vocab_size=32000)
    e = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=1)
    assert dict(e.breakdown)["embeddings"] == 32000 * 4096 * 2
    # 32000 padded to 64 is not divisible by 3 -> pad to 64*3=192 -> 32064 -> 10688 per rank
    cfg3 = dict(cfg, num_attention_heads=3 * 8, num_key_value_heads=3, head_dim=128)
    e3 = estimate_weight_bytes(config=cfg3, quantization="bf16", tp_size=3)
    assert dict(e3.breakdown)["embeddings"] == 10688 * 4096 * 2


def test_pp_ranges():
    assert [b - a for a, b in pp_layer_ranges(61, 4)] == [15, 15, 15, 16]
    assert [b - a for a, b in pp_layer_ranges(61, 4, engine="vllm")] == [15, 15, 16, 15]
    # remainder 2 over pp 4 -> the two stages before the last
    assert [b - a for a, b in pp_layer_ranges(62, 4, engine="vllm")] == [15, 16, 16, 15]
    assert pp_layer_ranges(40, 2) == [(0, 20), (20, 40)]


def test_pp_largest_stage_and_tied_head():
    cfg = _preset_config("Qwen/Qwen2.5-0.5B-Instruct")
    one = estimate_weight_bytes(config=cfg, quantization="bf16")
    two = estimate_weight_bytes(config=cfg, quantization="bf16", pp_size=2)
    emb = 151936 * 896 * 2
    layers = one.per_gpu_bytes - emb - 896 * 2
    # tied + PP: the last stage builds its own lm_head, so both stages carry a vocab table
    assert two.per_gpu_bytes == layers // 2 + emb + 896 * 2  # last stage: 12 layers + norm + head
    assert any("own lm_head" in n for n in two.notes)


@needs_shared
def test_mla_replicated_parts_and_dp_attention():
    cfg = hf("deepseek-ai--DeepSeek-V3")
    tp8 = dict(estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=8).breakdown)
    dp8 = dict(estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=8, attn_dp_size=8).breakdown)
    h, H, L = 7168, 128, 61
    rep = L * ((1536 + 576) * h) * 2  # q_a + kv_a_with_mqa replicated
    split_full = L * (1536 * H * 192 + 512 * H * 256 + H * 128 * h) * 2
    assert tp8["attention"] == rep + split_full // 8
    assert dp8["attention"] == rep + split_full  # attn_tp = 1: whole attention on every rank
    assert dp8["embeddings"] == 129280 * h * 2  # DeepSeek embedding over attention TP
    assert dp8["lm_head"] == 129280 * h * 2 // 8  # lm_head over full TP (no --enable-dp-lm-head)
    assert dp8["experts"] == tp8["experts"]


@needs_shared
def test_mtp_loaded_only_with_speculative():
    cfg = hf("deepseek-ai--DeepSeek-V3")
    off = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8)
    on = estimate_weight_bytes(config=cfg, quantization="fp8", tp_size=8, load_mtp=True)
    assert "mtp" not in dict(off.breakdown)
    mtp = dict(on.breakdown)["mtp"]
    # one MoE decoder layer sharded like the others: > 256/8 experts at fp8 ~ 1.41 GB
    assert 1.3e9 < mtp < 1.7e9
    assert on.per_gpu_bytes - off.per_gpu_bytes > mtp  # + its absorbed MLA copy


@needs_shared
def test_dsv41_engram_tables():
    # sglang/test/dsv41_flash_common.py: two engram tables, ~384M rows x 264 B (256 fp8 +
    # 8 e8m0 scales), "~189 GiB", "offloading them frees ~94 GiB per GPU" at TP2
    cfg = dict(hf("deepseek-ai--DeepSeek-V4-Flash"), engram_num_embeddings=[384_000_000] * 2, engram_head_dim=256)
    on = estimate_weight_bytes(config=cfg, quantization="mixed", tp_size=2, ep_size=2)
    off = estimate_weight_bytes(config=cfg, quantization="mixed", tp_size=2, ep_size=2, engram_on_host=True)
    eng = dict(on.breakdown)["engram"]
    assert eng == 2 * 384_000_000 * 264 // 2
    assert eng / GIB == pytest.approx(94.4, abs=0.1)
    assert on.per_gpu_bytes - off.per_gpu_bytes == eng
    assert count_params(cfg)["engram"] == 2 * 384_000_000 * (256 + 8)


@needs_shared
def test_dsv4_dp_attention_replicates_embedding():
    cfg = hf("deepseek-ai--DeepSeek-V4-Flash")
    dp = dict(estimate_weight_bytes(config=cfg, quantization="mixed", tp_size=8, ep_size=8, attn_dp_size=8).breakdown)
    assert dp["embeddings"] == 129280 * 4096 * 2


def test_checkpoint_method_scales_share():
    m = estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=2)
    c = estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=2, checkpoint_bytes=2 * 8_030_261_248)
    assert c.method == "checkpoint" and c.per_gpu_bytes == m.per_gpu_bytes
    c2 = estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=2, checkpoint_bytes=4 * 8_030_261_248)
    assert c2.per_gpu_bytes == 2 * m.per_gpu_bytes


def test_errors():
    with pytest.raises(InputError):
        estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", engine="trt")
    with pytest.raises(InputError):
        estimate_weight_bytes(config=LLAMA31_8B, quantization="bf16", tp_size=4, attn_dp_size=3)
    with pytest.raises(InputError):
        estimate_weight_bytes(config=LLAMA31_8B, quantization="q3")
    with pytest.raises(InputError):
        estimate_weight_bytes(config=LLAMA31_8B, quantization="mixed")
    with pytest.raises(InputError):
        count_params({"hidden_size": 8})
    assert set(MXFP4_EXPERT_PADDING) >= {"vllm-marlin", "none"}


# ----------------------------------------------------------------------------- logs

# (case id, config factory, quantization, kwargs, logged GiB, tolerance as a fraction)
LOGGED = [
    ("llmd-llama31-8b-h100", lambda: LLAMA31_8B, "bf16", dict(engine="vllm"), 14.99, 0.01),
    ("qwen2-7b-a100-u025", lambda: ref("Qwen/Qwen2.5-7B-Instruct"), "bf16", dict(engine="vllm"), 14.2488, 0.01),
    ("llmd-qwen3-32b-2xh100-tp2", lambda: hf("Qwen--Qwen3-32B"), "bf16", dict(engine="vllm", tp_size=2), 30.59, 0.01),
    (
        "qwen3-235b-fp8-8xl40s-tp8-ep",
        lambda: hf("Qwen--Qwen3-235B-A22B-FP8"),
        "fp8",
        dict(engine="vllm", tp_size=8, ep_size=8),
        27.72,
        0.01,
    ),
    (
        "qwen3-next-80b-2xh200-tp2",
        lambda: ref("Qwen/Qwen3-Next-80B-A3B-Instruct", shared_expert_intermediate_size=512),
        "bf16",
        dict(engine="vllm", tp_size=2),
        74.2812,
        0.01,
    ),
    (
        "glm52-nvfp4-4xb200-tp4-ep-fp8kv",
        lambda: hf("nvidia--GLM-5.2-NVFP4"),
        "nvfp4",
        dict(engine="vllm", tp_size=4, ep_size=4),
        106.69,
        0.01,
    ),
    (
        "deepseek-v2-lite-h100-v0-premla",
        lambda: ref("deepseek-ai/DeepSeek-V2-Lite"),
        "bf16",
        dict(engine="vllm"),
        29.301,
        0.01,
    ),
    (
        "gptoss120b-4xa100-tp4-u080",
        lambda: hf("openai--gpt-oss-120b"),
        "mxfp4",
        dict(engine="vllm", tp_size=4, expert_padding="vllm-marlin"),
        17.2217,
        0.01,
    ),
    ("qwen3-30b-a3b-mi355x-pr18263", lambda: hf("Qwen--Qwen3-30B-A3B"), "bf16", {}, 56.98, 0.01),
    ("qwq-32b-4xL4-tp4", lambda: _preset_config("Qwen/QwQ-32B"), "bf16", dict(tp_size=4), 15.54, 0.03),
    ("kimi-k2.5-mi355x-tp8", lambda: hf("moonshotai--Kimi-K2.5"), "int4", dict(tp_size=8), 73.58, 0.03),
    ("qwen25-0.5b-4070tis-pd-prefill", lambda: _preset_config("Qwen/Qwen2.5-0.5B-Instruct"), "bf16", {}, 0.98, 0.08),
]


@needs_shared
@pytest.mark.parametrize("case,make,quant,kw,logged,tol", LOGGED, ids=[c[0] for c in LOGGED])
def test_logged_weight_loads(case, make, quant, kw, logged, tol):
    cfg = make()
    if case.startswith("glm52"):
        kw = dict(
            kw,
            hf_quant_config=json.loads(
                (SHARED / "hf-configs" / "nvidia--GLM-5.2-NVFP4" / "hf_quant_config.json").read_text()
            ),
        )
    est = estimate_weight_bytes(config=cfg, quantization=quant, **kw)
    got = est.per_gpu_bytes / GIB
    assert math.isclose(got, logged, rel_tol=tol), f"{case}: {got:.3f} GiB vs logged {logged}"


@needs_shared
def test_logged_cases_exist_in_validation_files():
    ids = set()
    for f in ("sglang_dev.jsonl", "vllm_dev.jsonl"):
        for line in (SHARED / "validation" / f).read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                r = d["reported"]
                ids.add((d["id"], r.get("weight_load_mem_usage_gb") or r.get("model_loading_gib")))
    for case, _m, _q, _k, logged, _t in LOGGED:
        assert (case, logged) in ids, case


@needs_shared
def test_gpt_oss_marlin_padding_is_the_gap():
    cfg = hf("openai--gpt-oss-120b")
    plain = estimate_weight_bytes(config=cfg, quantization="mxfp4", engine="vllm", tp_size=4)
    pad = estimate_weight_bytes(
        config=cfg, quantization="mxfp4", engine="vllm", tp_size=4, expert_padding="vllm-marlin"
    )
    e0, e1 = dict(plain.breakdown)["experts"], dict(pad.breakdown)["experts"]
    # weights and scales scale with (3072/2880) * (768/720) when hidden 2880->3072, 720->768
    assert e1 / e0 == pytest.approx((3072 / 2880) * (768 / 720), rel=2e-3)
