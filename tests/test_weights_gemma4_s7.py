"""Gemma-4's weight inventory (kvplan.weights.gemma4): the dense MLP beside the experts, the global head geometry of
full-attention layers and the per-layer-embedding tables, each against numbers derived by hand from the preset's
config.json and vLLM 0.19.0 / SGLang v0.5.23 ``gemma4*.py`` module shapes (issue 25)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kvplan.weights.estimate import estimate_weight_bytes
from kvplan.weights.inventory import count_params, inventory

MODELS = Path(__file__).resolve().parents[1] / "configs" / "models"


def _cfg(name: str) -> dict:
    with open(MODELS / f"{name}.toml", "rb") as f:
        return tomllib.load(f)["config"]


A4B = "google--gemma-4-26B-A4B"
H, L, FULL = 2816, 30, 5  # hidden, layers, full_attention layers (every 6th)


def test_a4b_dense_mlp_beside_the_experts():
    """Gemma4DecoderLayer builds Gemma4MLP(intermediate_size 2,112) in every layer and, with enable_moe_block, 128
    experts of 704 alongside it: 30 x 3 x 2,816 x 2,112 dense and 30 x 128 x 3 x 2,816 x 704 routed."""
    p = count_params(_cfg(A4B))
    assert p["dense_mlp"] == L * 3 * H * 2112 == 535_265_280
    assert p["experts"] == L * 128 * 3 * H * 704 == 22_837_985_280
    # router.proj [128, h] + router.scale [h] + per_expert_scale [128] per layer
    assert p["router"] == L * (128 * H + H + 128) == 10_901_760


def test_a4b_full_layers_use_the_global_head_geometry():
    """Sliding layers: 16 q / 8 kv heads of 256; full layers (k_eq_v): 16 q / 2 kv heads of 512, and the fused
    QKVParallelLinear still allocates v (vLLM copies k into it)."""
    p = count_params(_cfg(A4B))
    sliding = (16 + 8 + 8 + 16) * 256 * H
    full = (16 + 2 + 2 + 16) * 512 * H
    assert p["attention"] == (L - FULL) * sliding + FULL * full == 1_124_597_760
    layer5 = {t.path.rsplit(".", 1)[-1]: t for t in inventory(_cfg(A4B), engine="vllm").tensors if t.layer == 5}
    assert (layer5["v_proj"].rows, layer5["v_proj"].head) == (2, 512)
    assert layer5["o_proj"].cols == 16 * 512


def test_a4b_text_total_matches_the_published_size():
    """Text parameters (checkpoint view: minus the 5 full layers' allocated-only v_proj, 2 x 512 x 2,816 each) come
    to 25.2 billion, the size Google's model card gives for the 26B-A4B."""
    p = count_params(_cfg(A4B))
    text = p["total"] - p["vision"] - FULL * 2 * 512 * H
    assert round(text / 1e9, 1) == 25.2


@pytest.mark.parametrize("tp", [1, 2])
def test_a4b_vllm_bf16_bytes_per_gpu(tp):
    """bf16: two bytes a parameter.  The dense MLP (MergedColumnParallel / RowParallel) and the experts split over
    TP, the router (GateLinear, replicated) does not: dense 2 x 535,265,280 / tp bytes, router 2 x 10,901,760."""
    cfg = _cfg(A4B)
    est = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=tp, engine="vllm")
    parts = dict(est.breakdown)
    assert parts["dense_mlp"] == 2 * 535_265_280 // tp
    assert parts["experts"] == 2 * 22_837_985_280 // tp
    assert parts["router"] == 2 * 10_901_760
    if tp == 1:
        assert est.per_gpu_bytes == 2 * count_params(cfg)["total"] == 51_640_703_644


def test_e2b_per_layer_embeddings_and_double_wide_mlp():
    """E2B: hidden 1,536, 35 layers, per-layer input 256 over a 262,144 vocabulary; the last 20 (KV-shared) layers
    double the MLP (use_double_wide_mlp): 6,144 -> 12,288."""
    p = count_params(_cfg("google--gemma-4-E2B-it"))
    assert p["dense_mlp"] == 15 * 3 * 1536 * 6144 + 20 * 3 * 1536 * 12288 == 1_557_135_360
    assert p["embeddings"] == 262144 * 1536 + 262144 * 35 * 256 == 2_751_463_424
    # per_layer_input_gate + per_layer_projection per layer, per_layer_model_projection once
    assert p["per_layer_input"] == 35 * 2 * 256 * 1536 + 35 * 256 * 1536 == 41_287_680


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_per_layer_model_projection_sharding(engine):
    """vLLM builds per_layer_model_projection as ColumnParallelLinear, SGLang as ReplicatedLinear."""
    ts = {t.path: t for t in inventory(_cfg("google--gemma-4-E2B-it"), engine=engine).tensors}
    proj = ts["model.per_layer_model_projection"]
    assert (proj.split.value, proj.group.value) == (("out", "tp") if engine == "vllm" else ("none", "none"))
    assert ts["model.embed_tokens_per_layer"].group.value == "emb"
