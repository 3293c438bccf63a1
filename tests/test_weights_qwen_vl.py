"""Qwen2-VL / Qwen2.5-VL vision towers as the engines load them (kvplan.weights.vision), counted by hand.

vLLM v0.21.0 ``models/qwen2_vl.py`` ``Qwen2VisionTransformer`` / ``models/qwen2_5_vl.py``
``Qwen2_5_VisionTransformer`` (SGLang v0.5.15 the same modules): patch ``Conv3d`` without bias, per block two norms,
``qkv`` + bias, ``proj`` + bias, the MLP with biases, then the patch merger; Column/RowParallel over TP.
"""

from __future__ import annotations

import pytest

from kvplan.inputs.resolve import resolve_model
from kvplan.weights.estimate import estimate_weight_bytes
from kvplan.weights.vision import qwen_vl_vision_params


def test_qwen2_vl_tower_by_hand():
    """d 1,280 (embed_dim default), f = 4d = 5,120, 32 blocks: patch 1,280 x 3 x 2 x 14 x 14 = 1,505,280; a block
    4 x 1,280 (LayerNorms) + 3 x 1,280^2 + 3,840 + 1,280^2 + 1,280 + 2 x 1,280 x 5,120 + 5,120 + 1,280 = 19,677,440;
    merger 2,560 + 5,120^2 + 5,120 + 3,584 x 5,120 + 3,584 = 44,575,744: 675,759,104 (the 675M ViT)."""
    assert qwen_vl_vision_params("qwen2_vl", {"hidden_size": 3584}) == 1_505_280 + 32 * 19_677_440 + 44_575_744
    assert qwen_vl_vision_params("qwen2_vl", {}) == 675_759_104


def test_qwen2_5_vl_tower_by_hand():
    """d 1,280, f 3,420, out 2,048 (the 3B): block 2 x 1,280 (RMSNorms) + 3 x 1,280^2 + 3,840 + 1,280^2 + 1,280 +
    2 x 3,420 x 1,280 + 6,840 + 3,420 x 1,280 + 1,280 = 19,702,200; merger 1,280 + 5,120^2 + 5,120 + 2,048 x 5,120 +
    2,048 = 36,708,608; + patch 1,505,280 -> 668,684,288."""
    cfg = {"hidden_size": 1280, "intermediate_size": 3420, "depth": 32, "out_hidden_size": 2048}
    assert qwen_vl_vision_params("qwen2_5_vl", cfg) == 1_505_280 + 32 * 19_702_200 + 36_708_608 == 668_684_288


def test_other_model_types_get_no_qwen_tower():
    assert qwen_vl_vision_params("gemma3", {"depth": 32}) == 0


def _without_vision(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k != "vision_config"}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_qwen2_vl_7b_preset_weighs_its_tower(engine: str):
    """The preset's vision_config (depth 32, hidden_size 3,584, no embed_dim: the config class's 1,280) adds
    675,759,104 x 2 B at TP1.  At TP2 the split parts (qkv, fc1 and merger.mlp.0 with their biases, proj, fc2,
    merger.mlp.2: 674,001,920) halve and the replicated ones (patch, norms, the RowParallel biases, ln_q:
    1,757,184) stay: 338,758,144 x 2 = 677,516,288 B."""
    cfg = dict(resolve_model("Qwen/Qwen2-VL-7B-Instruct").raw_config)
    for tp, want in ((1, 2 * 675_759_104), (2, 677_516_288)):
        with_v = estimate_weight_bytes(config=cfg, quantization="bf16", engine=engine, tp_size=tp).per_gpu_bytes
        text = estimate_weight_bytes(config=_without_vision(cfg), quantization="bf16", engine=engine, tp_size=tp)
        assert with_v - text.per_gpu_bytes == want


def test_qwen2_5_vl_7b_preset_and_pipeline_stage():
    """Qwen2.5-VL-7B: 1,505,280 + 32 x 19,702,200 + 44,574,464 (merger to 3,584) = 676,550,144 parameters, built
    on every pipeline stage (neither engine guards ``self.visual`` with the PP rank), so under PP2 the largest
    stage still carries the whole tower at TP1: 2 B x 676,550,144 over the text model's largest stage."""
    cfg = dict(resolve_model("Qwen/Qwen2.5-VL-7B-Instruct").raw_config)
    one = estimate_weight_bytes(config=cfg, quantization="bf16", engine="vllm").per_gpu_bytes
    text = estimate_weight_bytes(config=_without_vision(cfg), quantization="bf16", engine="vllm").per_gpu_bytes
    assert one - text == 2 * 676_550_144
    est = estimate_weight_bytes(config=cfg, quantization="bf16", engine="vllm", pp_size=2)
    text2 = estimate_weight_bytes(config=_without_vision(cfg), quantization="bf16", engine="vllm", pp_size=2)
    assert est.per_gpu_bytes - text2.per_gpu_bytes == 2 * 676_550_144
    assert any("kvplan.weights.vision" in n for n in est.notes)


def test_awq_build_keeps_the_tower_16_bit():
    """Qwen2-VL-2B-Instruct-AWQ: the AWQ scheme quantizes the language model only; the tower (its vision_config
    has neither depth nor embed_dim: 32 and 1,280, merger to 1,536) is 16-bit: 1,505,280 + 32 x 19,677,440 +
    2,560 + 26,219,520 + 5,120 x 1,536 + 1,536 = 665,271,296 parameters x 2 B on top of the text model."""
    m = resolve_model("Qwen/Qwen2-VL-2B-Instruct-AWQ")
    cfg = dict(m.raw_config)
    q = cfg.get("quantization_config")
    with_v = estimate_weight_bytes(config=cfg, quantization=m.quantization, engine="vllm", hf_quant_config=q)
    text = estimate_weight_bytes(
        config=_without_vision(cfg), quantization=m.quantization, engine="vllm", hf_quant_config=q
    )
    assert with_v.per_gpu_bytes - text.per_gpu_bytes == 2 * 665_271_296
