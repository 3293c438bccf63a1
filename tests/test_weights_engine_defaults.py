"""What the engine picks by itself and the weights follow: the MXFP4 MoE kernel (and its padding) by GPU and vLLM
release, and where SGLang keeps DeepSeek-V4.1's engram tables.  Expected numbers are hand arithmetic, shown.

MXFP4 bytes of an r x c expert weight: r*c/2 (two e2m1 per byte) + r*ceil(c/32) (one e8m0 scale per 32).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.weights.engram import EngramPlacement, engram_placement
from kvplan.weights.estimate import estimate_weight_bytes
from kvplan.weights.kernels import release_triple, vllm_mxfp4_backend

HF = Path(__file__).resolve().parent / "data" / "shared" / "hf-configs"
GIB = 2**30


def hf(name: str) -> dict:
    return json.loads((HF / name / "config.json").read_text())


def mxfp4(r: int, c: int) -> int:
    return r * c // 2 + r * math.ceil(c / 32)


def fp8(r: int, c: int) -> int:
    """fp8 block-128: r*c + one fp32 scale per 128 x 128 block."""
    return r * c + 4 * math.ceil(r / 128) * math.ceil(c / 128)


# ----------------------------------------------------------------------------- MXFP4 backend by GPU


@pytest.mark.parametrize(
    "version,sm,vendor,backend",
    [
        ("0.25.1", 9, "nvidia", "vllm-triton"),  # H100: OAI triton_kernels, vendored since 0.12
        ("0.11.1", 9, "nvidia", "vllm-marlin"),  # H100 before triton_kernels shipped with the wheel
        ("0.25.1", 10, "nvidia", "vllm-trtllm"),  # B200: FlashInfer TRTLLM
        ("0.11.1", 10, "nvidia", "vllm-trtllm"),
        ("0.25.1", 12, "nvidia", "vllm-marlin"),  # RTX PRO 6000: FlashInfer CUTLASS W4A16 is SM90-only
        ("0.25.1", 8, "nvidia", "vllm-marlin"),  # A100 / L40S
        ("0.25.1", None, "amd", "vllm-rocm"),
        ("0.11.1", None, "amd", "vllm-rocm-0.11"),
        (None, 9, "nvidia", "vllm-triton"),  # newest release
        ("0.25.1", None, "nvidia", None),  # GPU unknown: no default
    ],
)
def test_vllm_mxfp4_backend_by_gpu(version, sm, vendor, backend):
    assert vllm_mxfp4_backend(engine_version=version, sm_major=sm, vendor=vendor).backend == backend


def test_release_triple():
    assert release_triple("0.10.1.1") == (0, 10, 1)
    assert release_triple("v0.12.0rc1") == (0, 12, 0)
    with pytest.raises(InputError):
        release_triple("latest")


# gpt-oss-120b: 36 layers, 128 experts, hidden 2880, intermediate 2880, gate/up/down per expert + bf16 biases
def _experts(hidden: int, inter: int) -> int:
    """One layer's 128 experts at the given (padded) sizes: gate and up [inter, hidden], down [hidden, inter],
    gate/up biases 2 x inter and the down bias hidden, bf16."""
    return 128 * (2 * mxfp4(inter, hidden) + mxfp4(hidden, inter) + 2 * (2 * inter + hidden))


def test_gptoss_120b_on_one_h100_under_vllm_is_padded_by_default():
    cfg = hf("openai--gpt-oss-120b")
    base = dict(config=cfg, quantization="mxfp4", engine="vllm", sm_major=9)
    marlin = estimate_weight_bytes(**base, engine_version="0.11.1")
    plain = estimate_weight_bytes(**base, engine_version="0.11.1", expert_padding="none")
    # Marlin: hidden round_up(2880, 256) = 3072, intermediate per rank round_up(2880, 128) = 2944
    assert _experts(3072, 2944) == 128 * (2 * 4_804_608 + 4_804_608 + 2 * (5_888 + 3_072)) == 1_847_263_232
    assert dict(marlin.breakdown)["experts"] == 36 * 1_847_263_232 == 66_501_476_352
    assert dict(plain.breakdown)["experts"] == 36 * _experts(2880, 2880) == 60_993_699_840
    assert marlin.per_gpu_bytes - plain.per_gpu_bytes == 5_507_776_512  # 5.13 GiB more, by default
    assert any("Marlin on SM90" in n for n in marlin.notes)
    # 0.25.1 picks triton_kernels on SM90: intermediate to a multiple of 64 (2880 already is), hidden as is; the
    # Triton path makes the biases fp32 (+2 B x (5760 + 2880) per expert) and pads the swizzled scale rows to 256
    # (w13 5760 -> 5888 rows of 90 scales, w2 2880 -> 3072)
    triton = estimate_weight_bytes(**base, engine_version="0.25.1")
    extra = 128 * (2 * (5760 + 2880) + (5888 - 5760) * 90 + (3072 - 2880) * 90)
    assert triton.per_gpu_bytes - plain.per_gpu_bytes == 36 * extra == 79_626_240 + 132_710_400
    # 0.12 - 0.24 also keep the checkpoint-layout scales (5760 + 2880) x 90 per expert next to the swizzled copy
    kept = estimate_weight_bytes(**base, engine_version="0.14.1")
    assert kept.per_gpu_bytes - triton.per_gpu_bytes == 36 * 128 * (5760 + 2880) * 90 == 3_583_180_800
    # public H100 TP1 logs, "Model loading took": vLLM 0.10.1 Marlin 65.9651 GiB (vllm-project/vllm#23278),
    # 0.14.1 "Using Triton backend" 64.38 GiB (vllm-project/vllm#33155)
    assert marlin.per_gpu_bytes / GIB == pytest.approx(65.9651, rel=0.002)
    assert kept.per_gpu_bytes / GIB == pytest.approx(64.38, rel=0.002)
    # at TP4 Triton's intermediate per rank 720 becomes 768
    tp4 = estimate_weight_bytes(**base, engine_version="0.25.1", tp_size=4)
    tp4_plain = estimate_weight_bytes(**base, engine_version="0.25.1", tp_size=4, expert_padding=(1, 64))
    assert dict(tp4_plain.breakdown)["experts"] == 36 * _experts(2880, 768)
    assert dict(tp4.breakdown)["experts"] - dict(tp4_plain.breakdown)["experts"] == 36 * 128 * (
        2 * (2 * 768 + 2880) + (1536 - 1536) * 90 + (3072 - 2880) * 24
    )
    # an explicit override still wins, and without a GPU nothing is assumed
    forced = estimate_weight_bytes(**base, engine_version="0.25.1", expert_padding="vllm-marlin")
    assert forced.per_gpu_bytes == marlin.per_gpu_bytes
    no_gpu = estimate_weight_bytes(config=cfg, quantization="mxfp4", engine="vllm")
    assert no_gpu.per_gpu_bytes == plain.per_gpu_bytes


def test_sglang_mxfp4_padding_stays_opt_in():
    cfg = hf("openai--gpt-oss-120b")
    assert (
        estimate_weight_bytes(config=cfg, quantization="mxfp4", sm_major=9).per_gpu_bytes
        == estimate_weight_bytes(config=cfg, quantization="mxfp4").per_gpu_bytes
    )


# ----------------------------------------------------------------------------- engram placement


@pytest.mark.parametrize(
    "release,env,tp,where",
    [
        ("0.5.23", {}, 8, EngramPlacement.GPU),
        ("0.5.23", {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1"}, 8, EngramPlacement.HOST_SHARED),
        (
            "0.5.21",
            {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "true", "SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT": "per_rank"},
            8,
            EngramPlacement.HOST_PER_RANK,
        ),
        (
            "0.5.23",
            {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1", "SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS": "1"},
            8,
            EngramPlacement.GPU_PEER,
        ),  # peer shards take precedence over the host table
        (
            "0.5.22",
            {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1", "SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS": "1"},
            8,
            EngramPlacement.HOST_SHARED,
        ),  # peer shards are new in 0.5.23
        ("0.5.23", {"SGLANG_OPT_DSV41_ENGRAM_PEER_SHARDS": "1"}, 1, EngramPlacement.GPU),  # needs tp > 1
        (None, {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "no"}, 4, EngramPlacement.GPU),
    ],
)
def test_engram_placement_rule(release, env, tp, where):
    assert engram_placement(release=release, env=env, tp=tp) == where


def test_engram_placement_errors():
    with pytest.raises(InputError, match=r"0\.5\.21"):
        engram_placement(release="0.5.20")
    with pytest.raises(InputError, match="valid boolean"):
        engram_placement(env={"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "on"})
    with pytest.raises(InputError, match="per_rank"):
        engram_placement(
            env={"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1", "SGLANG_DSV41_ENGRAM_HOST_TABLE_LAYOUT": "numa"}
        )


def _dsv41_like() -> dict:
    """DeepSeek-V4-Flash geometry with V4.1's two engram layers (h 4096 here, hc_mult 4, n-gram 4, 8 heads)."""
    return dict(
        hf("deepseek-ai--DeepSeek-V4-Flash"),
        engram_num_embeddings=[384_006_168, 384_016_682],
        engram_head_dim=256,
        engram_layer_ids=[1, 14],
        engram_max_ngram_size=4,
        engram_n_heads=8,
    )


def test_engram_tables_by_placement_and_the_projection_everywhere():
    cfg = _dsv41_like()
    kw = dict(config=cfg, quantization="mixed", tp_size=4, ep_size=4)
    gpu = estimate_weight_bytes(**kw)
    shared = estimate_weight_bytes(**kw, engram_placement="host-shared")
    per_rank = estimate_weight_bytes(**kw, engram_placement="host-per-rank")
    peer = estimate_weight_bytes(**kw, engram_placement="gpu-peer")
    rows = [384_006_168, 384_016_682]
    rank_rows = sum(math.ceil(r / 4) for r in rows)  # 96,001,542 + 96,004,171
    assert dict(gpu.breakdown)["engram"] == rank_rows * (256 + 8) == 50_689_508_232
    assert gpu.per_gpu_bytes - shared.per_gpu_bytes == 50_689_508_232 == gpu.per_gpu_bytes - per_rank.per_gpu_bytes
    assert peer.per_gpu_bytes == gpu.per_gpu_bytes and gpu.host_bytes == 0
    assert shared.host_bytes == sum(rows) * 264 == 202_758_032_400  # 188.83 GiB, one copy for the TP group
    assert per_rank.host_bytes == 50_689_508_232  # the largest rank's rows
    # wkv [4096 * (4 + 1), (4 - 1) * 8 * 256] fp8 (this config's 128x128 blocks) + q/k weights [4, 4096] bf16,
    # per engram layer, on the GPU in every placement
    proj = 2 * (fp8(20480, 6144) + 2 * 4 * 4096 * 2)
    assert dict(shared.breakdown)["engram_proj"] == dict(gpu.breakdown)["engram_proj"] == proj == 251_850_752
    # engram_on_host keeps meaning the default host layout
    assert estimate_weight_bytes(**kw, engram_on_host=True).per_gpu_bytes == shared.per_gpu_bytes
    with pytest.raises(InputError):
        estimate_weight_bytes(**kw, engram_on_host=True, engram_placement="gpu")
    with pytest.raises(InputError):
        estimate_weight_bytes(**kw, engram_placement="ram")


def test_dsv4_hc_mult_defaults_to_the_engine_config_class():
    # SGLang's DeepSeekV4Config.hc_mult = 4 when config.json has no hc_mult: the per-layer hc_fn
    # [2 * (2 + 4) * 4, 4 * h] + hc_base [2 * 24 + 6] fp32 and the model's hc_head are loaded
    cfg = hf("deepseek-ai--DeepSeek-V4-Flash")
    assert cfg["hc_mult"] == 4
    without = {k: v for k, v in cfg.items() if k != "hc_mult"}
    a = estimate_weight_bytes(config=cfg, quantization="mixed", tp_size=8, ep_size=8)
    b = estimate_weight_bytes(config=without, quantization="mixed", tp_size=8, ep_size=8)
    assert a.per_gpu_bytes == b.per_gpu_bytes
    assert dict(a.breakdown)["hyper_connections"] == 43 * 4 * (48 * 4 * 4096 + 54) + 4 * (16 * 4096 + 5)
