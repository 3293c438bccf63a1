"""Vision towers of the 2026 multimodal families as the engines build them (kvplan.weights.vision), counted by hand.

Each expected number below is summed from the modules the engine's model file creates (vLLM v0.21.0,
SGLang v0.5.15; the module list is in each builder's docstring), and, where a published count exists, the whole
model is checked against it:

* Qwen3-VL-8B-Instruct 8,767,123,696 (Hugging Face API ``safetensors.total``, revision 0c351dd0, as quoted in
  public verification notes); Qwen3-VL-2B 2,127,532,032 and 4B 4,437,815,808 (``sum(p.numel())`` of the
  transformers model in public scripts and run logs); Qwen3-VL-30B-A3B 31,070,754,032 and 235B-A22B
  235,670,022,896 (an inference provider's ``paramCount``); Qwen3-VL-32B 33,357,390,064 (a public tool's element
  count of the checkpoint); Qwen3.5-397B-A17B 396,802,360,816 (Hugging Face ``num_parameters`` in public reports);
* Qwen3.5-0.8B 852,985,920, Qwen3.5-9B 9,409,813,744, Qwen3.5-27B (= Qwen3.6-27B) 27,356,728,560 and
  Qwen3.5-35B-A3B (= Qwen3.6-35B-A3B) 35,107,181,936 (keras-team/keras-hub ``qwen3_5_presets.py`` /
  ``qwen3_5_moe_presets.py`` "params"); Qwen3.6-27B with its MTP layer 27,781,427,952 (Hugging Face API count);
* gemma-3-27b-it 27,432,406,640 and gemma-3-4b-it 4,300,079,472 (keras-hub medgemma / Hugging Face counts);
* Magistral-Small-2509 24,011,361,280 (Hugging Face API ``safetensors.parameters.BF16``, the preset's source).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvplan.inputs.resolve import resolve_model
from kvplan.weights.estimate import estimate_weight_bytes
from kvplan.weights.inventory import count_params

HF_CONFIGS = Path("/work/shared/hf-configs")
QWEN36_FP8 = HF_CONFIGS / "Qwen--Qwen3.6-27B-FP8" / "config.json"


def _cfg(model_id: str) -> dict[str, Any]:
    return dict(resolve_model(model_id).raw_config)


def _without_vision(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k != "vision_config"}


def _vision_bytes(cfg: dict[str, Any], **kw: Any) -> int:
    est = estimate_weight_bytes(config=cfg, quantization=kw.pop("quantization", "bf16"), **kw)
    return dict(est.breakdown).get("vision", 0)


# --------------------------------------------------------------------------- Qwen3-VL / Qwen3.5 / Qwen3.6

# one Qwen3-VL / Qwen3.5 block at d 1,152, f 4,304: two LayerNorms 4d, qkv 3d^2 + 3d, proj d^2 + d, fc1 f*d + f,
# fc2 d*f + d
_BLOCK_1152 = 4 * 1152 + (3 * 1152**2 + 3 * 1152) + (1152**2 + 1152) + (4304 * 1152 + 4304) + (1152 * 4304 + 1152)
_PATCH_1152 = 1152 * 3 * 2 * 16 * 16 + 1152  # Conv3d [d, c*t*p^2] + bias
_POS_1152 = 2304 * 1152  # pos_embed [num_position_embeddings, d]


def _merger(d: int, o: int, norm: int) -> int:
    """One patch merger: its LayerNorm (weight + bias over ``norm``), fc1 [4d, 4d] + bias, fc2 [o, 4d] + bias."""
    return 2 * norm + (4 * d) ** 2 + 4 * d + o * 4 * d + o


def test_qwen3_vl_8b_matches_the_checkpoint():
    """Qwen3-VL-8B: 27 blocks, merger to 4,096 and three deepstack mergers (norm over 4d): 576,388,336 vision
    parameters; with the Qwen3-8B text model 8,767,123,696, the checkpoint's count."""
    assert _BLOCK_1152 == 15_239_504
    want = _PATCH_1152 + _POS_1152 + 27 * _BLOCK_1152 + _merger(1152, 4096, 1152) + 3 * _merger(1152, 4096, 4608)
    assert want == 576_388_336
    p = count_params(_cfg("Qwen/Qwen3-VL-8B-Instruct"))
    assert p["vision"] == want
    assert p["total"] == 8_767_123_696


@pytest.mark.parametrize(
    ("model_id", "published"),
    [
        ("Qwen/Qwen3-VL-2B-Instruct", 2_127_532_032),
        ("Qwen/Qwen3-VL-4B-Instruct", 4_437_815_808),
        ("Qwen/Qwen3-VL-30B-A3B-Instruct", 31_070_754_032),
        ("Qwen/Qwen3-VL-32B-Instruct", 33_357_390_064),
        ("Qwen/Qwen3-VL-235B-A22B-Instruct", 235_670_022_896),
        ("Qwen/Qwen3.5-397B-A17B", 396_802_360_816),
        ("Qwen/Qwen3.5-0.8B", 852_985_920),
        ("Qwen/Qwen3.5-9B", 9_409_813_744),
        ("Qwen/Qwen3.5-27B", 27_356_728_560),
        ("Qwen/Qwen3.5-35B-A3B", 35_107_181_936),
        ("Qwen/Qwen3.6-35B-A3B", 35_107_181_936),
    ],
)
def test_qwen3_family_totals_match_published_counts(model_id: str, published: int):
    """Text model + tower = the published count (sources in the module docstring); without the tower every one of
    these was short by 0.1-0.6B."""
    p = count_params(_cfg(model_id))
    assert p["total"] == published
    assert p["vision"] > 0


def test_qwen3_5_tower_by_hand():
    """Qwen3.5-27B (out 5,120, no deepstack mergers): 1,770,624 + 2,654,208 + 27 x 15,239,504 + 44,838,656."""
    want = _PATCH_1152 + _POS_1152 + 27 * _BLOCK_1152 + _merger(1152, 5120, 1152)
    assert want == 460_730_096
    assert count_params(_cfg("Qwen/Qwen3.5-27B"))["vision"] == want


@pytest.mark.skipif(not QWEN36_FP8.exists(), reason="verbatim Qwen3.6-27B-FP8 config.json not present")
def test_qwen3_6_27b_fp8_tower_in_16_bit():
    """The verbatim Qwen3.6-27B-FP8 config: 27,781,427,952 parameters with the MTP layer (the Hugging Face count);
    the block-FP8 build keeps ``visual.*`` unconverted, so the tower adds 2 B x 460,730,096 to the checkpoint the
    model describes (and to TP1's load)."""
    cfg = json.loads(QWEN36_FP8.read_text())
    q = cfg["quantization_config"]
    full = estimate_weight_bytes(config=cfg, quantization="fp8", hf_quant_config=q, load_mtp=True, engine="vllm")
    text = estimate_weight_bytes(
        config=_without_vision(cfg), quantization="fp8", hf_quant_config=q, load_mtp=True, engine="vllm"
    )
    assert full.params == 27_781_427_952
    assert full.total_bytes - text.total_bytes == 2 * 460_730_096
    tp1 = estimate_weight_bytes(config=cfg, quantization="fp8", hf_quant_config=q, engine="vllm")
    assert dict(tp1.breakdown)["vision"] == 2 * 460_730_096
    off = estimate_weight_bytes(config=cfg, quantization="fp8", hf_quant_config=q, engine="vllm", load_vision=False)
    assert tp1.per_gpu_bytes - off.per_gpu_bytes == 2 * 460_730_096
    assert any("language-model-only" in n for n in off.notes)


def test_qwen3_5_tower_split_over_tp2():
    """TP2, Qwen3.5-27B.  Sharded (ColumnParallel rows / RowParallel columns, halves): qkv + bias, proj, fc1 + bias,
    fc2, merger fc1 + bias, merger fc2; whole on every rank: patch, norms, the RowParallel biases, and (vLLM) the
    nn.Embedding positions.  SGLang's pos_embed is a VocabParallelEmbedding: halved too."""
    n, d, f, mm, o = 27, 1152, 4304, 4608, 5120
    split = n * (3 * d * d + 3 * d + d * d + f * d + f + d * f) + (mm * mm + mm) + o * mm
    whole = _PATCH_1152 + n * (4 * d + d + d) + 2 * d + o
    cfg = _cfg("Qwen/Qwen3.5-27B")
    assert _vision_bytes(cfg, engine="vllm", tp_size=2) == 2 * (whole + _POS_1152 + split // 2)
    assert _vision_bytes(cfg, engine="sglang", tp_size=2) == 2 * (whole + _POS_1152 // 2 + split // 2)


def test_qwen3_vl_tower_on_every_pipeline_stage():
    """Neither engine guards ``self.visual`` with the PP rank: under PP2 the largest stage carries the whole tower
    (vLLM, TP1: 2 B x 576,388,336 more than the text model's largest stage)."""
    cfg = _cfg("Qwen/Qwen3-VL-8B-Instruct")
    pp2 = estimate_weight_bytes(config=cfg, quantization="bf16", engine="vllm", pp_size=2)
    txt = estimate_weight_bytes(config=_without_vision(cfg), quantization="bf16", engine="vllm", pp_size=2)
    assert pp2.per_gpu_bytes - txt.per_gpu_bytes == 2 * 576_388_336


# --------------------------------------------------------------------------- GLM-4.1V


def test_glm4_1v_tower_by_hand():
    """GLM-4.1V-9B: patch 1,536 x 1,176 + 1,536; positions 24^2 x 1,536; a block 2 x 1,536 (RMSNorms) +
    4 x 1,536^2 (qkv, proj, no bias) + 3 x 4,096 x 1,536 (gated MLP of width out_hidden_size); the two post norms,
    downsample Conv2d 4,096 x 1,536 x 4 + 4,096; merger 4,096^2 + 2 x 4,096 + 3 x 13,696 x 4,096."""
    d, o, i = 1536, 4096, 13696
    block = 2 * d + 4 * d * d + 3 * o * d
    want = (d * 1176 + d) + 576 * d + 24 * block + (2 * d + o * d * 4 + o) + (o * o + 2 * o + 3 * i * o)
    assert want == 892_498_432
    assert count_params(_cfg("zai-org/GLM-4.1V-9B-Thinking"))["vision"] == want


# --------------------------------------------------------------------------- Gemma-3 / Gemma-4


def test_gemma3_siglip_count_and_tp_split():
    """gemma-3-27b-it: the SigLIP sum is unchanged (27,432,406,640 in all, the checkpoint's count) but vLLM now
    splits q/k/v, out_proj, fc1 and fc2 over TP (siglip.py QKV/Column/RowParallelLinear): at TP2 the split parts
    halve and the patch embedding, positions, norms, RowParallel biases and the projector stay whole."""
    cfg = _cfg("google/gemma-3-27b-it")
    assert count_params(cfg)["total"] == 27_432_406_640
    assert count_params(_cfg("google/gemma-3-4b-it"))["total"] == 4_300_079_472
    n, h, i, big_h = 27, 1152, 4304, 5376
    split = n * (3 * h * h + 3 * h + h * h + i * h + i + h * i)
    whole = (h * 3 * 14 * 14 + h) + 4096 * h + n * (4 * h + h + h) + 2 * h + (h * big_h + h)
    assert split + whole == 423_060_336
    assert _vision_bytes(cfg, engine="vllm", tp_size=2) == 2 * (whole + split // 2)


def test_gemma4_tower_by_engine():
    """gemma-4-31B: input_proj 1,152 x 768, position table 2 x 10,240 x 1,152, per layer 4 x 1,152^2 (16 heads of
    72, no bias) + 2 x 72 + 4 x 1,152 + 3 x 4,304 x 1,152, projection 5,376 x 1,152 = 575,741,232.  vLLM builds
    transformers' module (nn.Linear, replicated: TP2 keeps all of it); SGLang splits attention and MLP over TP."""
    h, i, n = 1152, 4304, 27
    layer_split = 4 * h * h + 3 * i * h
    whole = h * 768 + 2 * 10240 * h + n * (2 * 72 + 4 * h) + 5376 * h
    assert whole + n * layer_split == 575_741_232
    cfg = _cfg("google/gemma-4-31B-it")
    assert count_params(cfg)["vision"] == 575_741_232
    assert _vision_bytes(cfg, engine="vllm", tp_size=2) == 2 * 575_741_232
    assert _vision_bytes(cfg, engine="sglang", tp_size=2) == 2 * (whole + n * layer_split // 2)


# --------------------------------------------------------------------------- Kimi-K2.5 (MoonViT)


def test_kimi_k25_moonvit_by_hand_and_sglang_split():
    """Kimi-K2.5: patch 1,152 x 588 + 1,152, positions 64 x 64 x 1,152, 27 SigLIP-shaped layers (15,239,504),
    final LayerNorm, projector 2 x 1,152 + 4,608^2 + 4,608 + 7,168 x 4,608 + 7,168 = 471,143,920.  SGLang TP8
    splits only the attention (VisionAttention); MLP2 is plain nn.Linear and the projector ReplicatedLinear."""
    d, i, n = 1152, 4304, 27
    attn = 3 * d * d + 3 * d + d * d  # split over the attention-TP group (the proj bias stays whole)
    rest = 4 * d + d + 2 * d * i + i + d  # norms, proj bias, the MLP: whole
    outer = (d * 588 + d) + 4096 * d + 2 * d + (2 * d + 4608 * 4608 + 4608 + 7168 * 4608 + 7168)
    assert n * (attn + rest) + outer == 471_143_920
    cfg = _cfg("moonshotai/Kimi-K2.5")
    assert count_params(cfg)["vision"] == 471_143_920
    got = _vision_bytes(
        cfg, engine="sglang", tp_size=8, quantization=resolve_model("moonshotai/Kimi-K2.5").quantization
    )
    assert got == 2 * (outer + n * (rest + attn // 8))


# --------------------------------------------------------------------------- Mistral-Small-3.x / Magistral (Pixtral)


def test_magistral_pixtral_matches_the_checkpoint():
    """Magistral-Small-2509: patch_conv 1,024 x 588, ln_pre, 24 layers of 2 x 1,024 + 4 x 1,024^2 + 3 x 4,096 x
    1,024, projector 1,024 + 1,024 x 4,096 + 5,120 x 1,024 + 5,120^2 = 438,958,080; with the text model
    24,011,361,280, the checkpoint's BF16 count."""
    d, i = 1024, 4096
    want = d * 588 + d + 24 * (2 * d + 4 * d * d + 3 * i * d) + (d + d * 4 * d + 5120 * d + 5120 * 5120)
    assert want == 438_958_080
    p = count_params(_cfg("mistralai/Magistral-Small-2509"))
    assert p["vision"] == want
    assert p["total"] == 24_011_361_280


# --------------------------------------------------------------------------- Llama-4


def test_llama4_tower_vllm_builds_sglang_skips():
    """Llama-4-Scout: patch 1,408 x 588, class embedding, 577 positions, pre/post LayerNorms, 34 layers of 4 x
    1,408 + 4 x 1,408^2 + 4 x 1,408 + 2 x 5,632 x 1,408 + 5,632 + 1,408, adapter 4,096 x 5,632 + 4,096^2,
    projector 5,120 x 4,096 = 871,932,416.  SGLang builds no tower without --enable-multimodal: stored, not
    loaded; vLLM loads it."""
    d, i = 1408, 5632
    layer = 4 * d + 4 * d * d + 4 * d + 2 * i * d + i + d
    want = d * 588 + d + 577 * d + 4 * d + 34 * layer + (4096 * i + 4096 * 4096) + 5120 * 4096
    assert want == 871_932_416
    m = resolve_model("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
    cfg = dict(m.raw_config)
    assert count_params(cfg)["vision"] == want
    assert _vision_bytes(cfg, engine="vllm", quantization=m.quantization) == 2 * want
    sgl = estimate_weight_bytes(config=cfg, quantization=m.quantization, engine="sglang")
    assert "vision" not in dict(sgl.breakdown)
    assert any("--enable-multimodal" in n for n in sgl.notes)


# --------------------------------------------------------------------------- EXAONE-4.5


def test_exaone4_5_gqa_tower_by_hand():
    """EXAONE-4.5-33B: patch 2,048 x 1,176 (no bias); a block 2 x 2,048 (RMSNorms) + qkv (32 + 2 x 8) x 64 x
    2,048 + bias + proj 2,048^2 + bias + gate_up 2 x 5,120 x 2,048 + bias + down 2,048 x 5,120 + bias; merger 2,048 +
    8,192^2 + 8,192 + 5,120 x 8,192 + 5,120.  The encoder alone (patch + blocks) is 1.18B, the technical report's
    "1.2B-parameter vision encoder"."""
    d, f, qkv = 2048, 5120, (32 + 2 * 8) * 64
    block = 2 * d + (qkv * d + qkv) + (d * d + d) + (2 * f * d + 2 * f) + (d * f + d)
    merger = d + (4 * d) ** 2 + 4 * d + 5120 * 4 * d + 5120
    assert d * 1176 + 28 * block == 1_177_415_680
    assert d * 1176 + 28 * block + merger == 1_286_482_944
    assert count_params(_cfg("LGAI-EXAONE/EXAONE-4.5-33B"))["vision"] == 1_286_482_944


def test_llama4_scout_with_its_shared_expert_matches_the_checkpoint():
    """With the shared expert every Llama-4 MoE layer has (48 x 3 x 5,120 x 8,192 = 6,039,797,760; no config key,
    vLLM models/llama4.py Llama4MoE) and the 871,932,416-parameter tower, Llama-4-Scout counts 108,641,793,536,
    the Hugging Face count of meta-llama/Llama-4-Scout-17B-16E-Instruct (the FP8 build's config is the same)."""
    cfg = _cfg("RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic")
    p = count_params(cfg)
    assert p["shared_experts"] == 48 * 3 * 5120 * 8192
    assert p["total"] == 108_641_793_536
