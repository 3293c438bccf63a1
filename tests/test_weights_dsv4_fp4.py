"""DeepSeek-V4 routed experts as the engines load them (issue 25 item 3): fp4 (MXFP4) under a preset's 'mixed', and
where vLLM keeps DeepSeek-V4.1's engram tables.

SGLang 0.5.23 ``configs/model_config.py`` (the quantization block of ``ModelConfig``): for ``is_deepseek_v4`` without
``routed_experts_quant_method``, ``is_fp4_experts = SGLANG_DSV4_FP4_EXPERTS`` (default True, ``environ.py``) unless the
safetensors probe (``configs/deepseek_v4.py try_detect_fp4_experts``) finds F8_E4M3 experts (an FP8 conversion such as
sgl-project/DeepSeek-V4-Flash-FP8). ``layers/quantization/fp8.py Fp8Config.get_quant_method`` then builds an MXFP4 MoE
method (Marlin / humming / FlashInfer CUTLASS on SM90/SM120, TRT-LLM on SM100) over packed fp4 weights.
"""

from __future__ import annotations

from kvplan.engines.vllm.planner import vllm_engram_placement
from kvplan.inputs.resolve import resolve_model
from kvplan.weights.estimate import estimate_weight_bytes


def _per_gpu(model_id: str, quantization: str, **kw: object) -> int:
    m = resolve_model(model_id)
    return estimate_weight_bytes(config=m.config, quantization=quantization, tp_size=8, **kw).per_gpu_bytes


def test_v4_flash_mixed_prices_routed_experts_fp4() -> None:
    # TP8, no EP: 256 experts per rank, intermediate 2048 / 8 = 256. Per expert gate, up [256, 4096], down [4096, 256]:
    #   fp8 128x128 block: 256*4096 + 4*2*32 = 1,048,832 B each -> 3,146,496
    #   MXFP4: 256*4096/2 + 256*(4096/32) = 557,056 and 4096*256/2 + 4096*(256/32) = 557,056 -> 1,671,168
    # 43 MoE layers x 256 experts x (3,146,496 - 1,671,168) = 16,240,410,624 B fewer.
    fp8 = _per_gpu("deepseek-ai/DeepSeek-V4-Flash", "fp8")
    mixed = _per_gpu("deepseek-ai/DeepSeek-V4-Flash", "mixed")
    assert fp8 - mixed == 43 * 256 * (3 * 1_048_832 - 3 * 557_056)
    assert 19e9 < mixed < 22e9  # "V4-Flash TP8 on B200 about 20 GB per GPU"


def test_v4_flash_preset_is_mixed_and_fp8_conversion_stays_fp8() -> None:
    assert resolve_model("deepseek-ai/DeepSeek-V4-Flash").quantization == "mixed"
    conv = resolve_model("sgl-project/DeepSeek-V4-Flash-FP8")
    assert conv.quantization == "fp8"
    assert _per_gpu("sgl-project/DeepSeek-V4-Flash-FP8", "fp8") == _per_gpu("deepseek-ai/DeepSeek-V4-Flash", "fp8")


def test_v4_pro_fits_8x_b200_weights() -> None:
    m = resolve_model("deepseek-ai/DeepSeek-V4-Pro")
    per_gpu = estimate_weight_bytes(config=m.config, quantization=m.quantization, tp_size=8).per_gpu_bytes
    assert per_gpu < 120 * 2**30  # B200: ~178 GiB; fp8 experts made it 186.8 GiB


def test_vllm_engram_default_by_release() -> None:
    assert vllm_engram_placement(engine_version="0.34.0", engram_on_host=False) == "host-per-rank"
    assert vllm_engram_placement(engine_version="0.33.0", engram_on_host=False) == "host-per-rank"
    assert vllm_engram_placement(engine_version="0.32.0", engram_on_host=False) == "gpu"
    assert vllm_engram_placement(engine_version="0.32.0", engram_on_host=True) == "host-per-rank"


def test_v41_tp4_vllm_engram_off_gpu() -> None:
    m = resolve_model("deepseek-ai/DeepSeek-V4.1-Flash")
    kw = dict(config=m.config, quantization=m.quantization, tp_size=4, engine="vllm")
    on_gpu = estimate_weight_bytes(**kw, engram_placement="gpu")
    host = estimate_weight_bytes(**kw, engram_placement="host-per-rank")
    # (384,006,168 + 384,016,682) rows x 264 B over 4 ranks leave the GPU
    rows_b = (384_006_168 + 384_016_682) * 264
    assert abs((on_gpu.per_gpu_bytes - host.per_gpu_bytes) - rows_b / 4) < 2**20
    assert host.per_gpu_bytes < 95 * 2**30  # fits an RTX PRO 6000 Max-Q (95.02 GiB) at TP4
