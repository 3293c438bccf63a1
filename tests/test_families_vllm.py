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

from kvplan.engines.vllm import grouping, specs
from kvplan.engines.vllm.planner import VllmInputs, plan_vllm
from kvplan.errors import InputError
from kvplan.geometry.layers import HeadGeometry, full_layer_geometry, kv_shared_layers, sliding_layer_geometry

ROOT = Path(__file__).resolve().parent.parent
GiB = 2**30


def _preset(name: str) -> dict:
    return tomllib.loads((ROOT / "configs" / "models" / f"{name}.toml").read_text())["config"]


def _plan(cfg: dict, *, avail: int, version: str, L: int, B: int, tp: int = 1, **kw) -> object:
    return plan_vllm(
        VllmInputs(
            config=cfg,
            device_bytes=100 * GiB,
            tp_size=tp,
            kv_cache_memory_bytes=avail,
            engine_version=version,
            max_model_len=L,
            max_num_batched_tokens=B,
            max_num_seqs=256,
            **kw,
        )
    )


GEMMA4_26B = _preset("google--gemma-4-26B-A4B")


def _gemma4_31b() -> dict:
    """google/gemma-4-31B-it text geometry (60 layers, full every 6th; full 4 KV heads x 512, sliding 16 x 256;
    window 1024; k_eq_v), as in the research note's table (kvplan has only the NVFP4 variant's preset)."""
    lt = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(60)]
    return {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "model_type": "gemma4",
        "text_config": {
            "model_type": "gemma4_text",
            "num_hidden_layers": 60,
            "layer_types": lt,
            "hidden_size": 5376,
            "num_attention_heads": 32,
            "head_dim": 256,
            "global_head_dim": 512,
            "num_key_value_heads": 16,
            "num_global_key_value_heads": 4,
            "attention_k_eq_v": True,
            "sliding_window": 1024,
            "max_position_embeddings": 262144,
            "num_kv_shared_layers": 0,
        },
    }


# --------------------------------------------------------------------------- geometry by layer type


def test_gemma4_geometry_by_layer_type():
    cfg = GEMMA4_26B["text_config"]
    assert full_layer_geometry(cfg) == HeadGeometry(2, 512, 512)  # global_head_dim, k_eq_v -> global KV heads
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
    assert full.token_bytes == 1 * (192 + 128) * 2 == 640  # 4 KV heads / TP4
    assert swa.token_bytes == 2 * (192 + 128) * 2 == 1280  # 8 / TP4
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


@pytest.mark.parametrize(
    ("blocks", "kv", "tokens", "conc"),
    [
        (89447, "auto", 1684812, "12.75"),  # --quantization fp8: 54.59 GiB
        (178894, "fp8", 3369625, "25.51"),  # + --kv-cache-dtype fp8: P 65,536, 327,680 B per block
    ],
)
def test_gemma4_26b_vllm_0251_plow_fp8(blocks, kv, tokens, conc):
    bpb = 655360 if kv == "auto" else 327680
    p = _plan(GEMMA4_26B, avail=blocks * bpb, version="0.25.1", L=132096, B=8192, kv_cache_dtype=kv)
    assert p.num_blocks == blocks and p.gpu_kv_cache_tokens == tokens and f"{p.max_concurrency:.2f}" == conc


@pytest.mark.parametrize(
    ("blocks", "kv", "tokens"), [(10186, "auto", 191862), (21387, "auto", 402842), (42775, "fp8", 805704)]
)
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
    assert p.capacity_log == (
        "GPU KV cache size: 732,896 tokens, Maximum concurrency for 132,096 tokens per request: 5.55x"
    )


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
    return {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "model_type": "gemma4",
        "text_config": {
            "num_hidden_layers": 35,
            "layer_types": lt,
            "hidden_size": 1536,
            "num_attention_heads": 8,
            "head_dim": 256,
            "global_head_dim": 512,
            "num_key_value_heads": 1,
            "attention_k_eq_v": False,
            "sliding_window": 512,
            "num_kv_shared_layers": 20,
        },
    }


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
    """Kimi-Linear-48B-A3B text geometry (27 layers, 7 MLA at 4, 8, ..., 27; third-party copies of the config
    agree on qk_nope 128 / rope 64 / v 128, which FlashInfer-MLA checks)."""
    mla = {4, 8, 12, 16, 20, 24, 27}
    return {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "num_hidden_layers": 27,
        "hidden_size": 2304,
        "num_attention_heads": 32,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "max_position_embeddings": 1048576,
        "linear_attn_config": {
            "kda_layers": [i for i in range(1, 28) if i not in mla],
            "num_heads": 32,
            "head_dim": 128,
            "short_conv_kernel_size": 4,
            "full_attn_layers": sorted(mla),
        },
    }


def test_kimi_linear_tp2_vllm_0111_issue_28228():
    """KDA state TP2: 3 x 3 x 2,048 x 2 + 16 x 128 x 128 x 4 = 1,085,440 B; MLA 576 x 2 = 1,152 B/token;
    block 64 x cdiv(1,085,440, 64 x 1,152) = 64 x 15 = 960; page 960 x 1,152 = 1,105,920 (KDA padded +1.89%);
    20 KDA / 7 MLA -> group size 7 (no 1.5x rule in 0.11), KDA cdiv(20, 7) = 3 groups, pad 7 - 20 % 7 = 1
    (1 / 20 = 5.00%); 4 groups; 2.298 GiB // (7 x 1,105,920) = 318 blocks; tokens 318 // 4 x 960 = 75,840 [log];
    blocks per request 125 + 3 = 128 -> 318 / 128 = 2.48x [log]."""
    p = _plan(
        _kimi_linear(), avail=int(2.298 * GiB), version="0.11.1", L=120000, B=64000, tp=2, enable_prefix_caching=True
    )
    assert p.block_size == 960 and p.num_groups == 4 and p.num_blocks == 318
    assert "Add 1 padding layers, may waste at most 5.00% KV cache memory" in p.warnings
    assert p.gpu_kv_cache_tokens == 75840 and f"{p.max_concurrency:.2f}" == "2.48"


def test_kimi_linear_tp2_vllm_0251():
    """Same blocks under 0.25.1 with a block-960 MLA backend (FLASHINFER_MLA, the SM100 default; prefix caching
    off, the 0.25.1 default for hybrids, so one KDA block per group): int(318 / 128 x 120,000) = 298,125."""
    p = _plan(
        _kimi_linear(),
        avail=int(2.298 * GiB),
        version="0.25.1",
        L=120000,
        B=64000,
        tp=2,
        enable_prefix_caching=False,
        sm_major=10,
    )
    assert p.num_blocks == 318 and p.blocks_per_request == 128 and p.gpu_kv_cache_tokens == 298125


@pytest.mark.parametrize("sm", [8, 9, 10])
def test_kimi_linear_tp2_vllm_0340(sm):
    """0.34.0 (``KimiLinearForCausalLM`` now in ``vllm/models/kimi_k3``): KDA state from ``kda_state_shape`` = one
    conv (3, (4,096 + 2 x 4,096) / 2 = 6,144) x 2 B = 36,864 + recurrent (16, 128, 128) x 4 B = 1,048,576 ->
    1,085,440 B (the 0.11 three convs hold the same bytes); MLA 1,152 B/token.  Block: the 128 floor for MLA
    hybrids, and no prefill-checkpoint alignment (the KDA layer declares none) -> 128 x cdiv(1,085,440, 147,456) =
    128 x 8 = 1,024, page 1,179,648 (KDA padded +8.68%), on every MLA backend.  Prefix caching on by default ->
    "align", 2 blocks per KDA group: ``num_prefill_checkpoint_blocks`` is 1 only with the FlashKDA prefill backend,
    which needs ``gate_lower_bound`` in ``linear_attn_config`` (absent in Kimi-Linear-48B's config), so Triton, 0
    (``models/kimi_k3/nvidia/kda.py`` ``resolve_kda_prefill_backend`` / ``get_kv_cache_spec``, v0.34.0).
    Groups: 20 KDA / 7 MLA, 20 >= 1.5 x 7 -> size 7, 3 KDA groups (1 padding layer) + 1 MLA; 7 x 1,179,648 =
    8,257,536 B per block; int(2.298 GiB) = 2,467,458,711 // 8,257,536 = 298 blocks; per request cdiv(120,000,
    1,024) = 118 + 3 x 2 = 124; 298 / 124 = 2.403x; int(2.4032 x 120,000) = 288,387 tokens."""
    p = _plan(_kimi_linear(), avail=int(2.298 * GiB), version="0.34.0", L=120000, B=64000, tp=2, sm_major=sm)
    assert (p.block_size, p.num_groups, p.bytes_per_block) == (1024, 4, 8_257_536)
    assert (p.num_blocks, p.blocks_per_request, p.gpu_kv_cache_tokens) == (298, 124, 288_387)
    assert "Add 1 padding layers, may waste at most 5.00% KV cache memory" in p.warnings


def _kimi_block(
    *,
    version: tuple[int, int, int],
    sm: int | None,
    kv: str = "auto",
    backend: str | None = None,
    block: int = 64,
    given: bool = False,
) -> tuple[str | None, int]:
    """(MLA backend, attention block) of Kimi-Linear TP2 by grouping.hybrid_alignment + hybrid_block_size."""
    m = specs.build_model_kv(config=_kimi_linear(), tp_size=2, kv_cache_dtype=kv)
    a = grouping.hybrid_alignment(
        m, block_size=block, engine_version=version, block_size_given=given, sm_major=sm, attention_backend=backend
    )
    return a.backend, grouping.hybrid_block_size(
        attn_token_bytes=m.attn_token_bytes_1layer,
        mamba_state_bytes=m.max_mamba_state_bytes,
        block_size=a.block_size,
        kernel_min_block=a.kernel_min_block,
        mla=a.mla,
    )


@pytest.mark.parametrize(
    ("gpu_sm", "kv", "backend", "block"),
    [
        # vLLM 0.25.1 platforms/cuda.py _get_backend_priorities: the first backend the GPU and the KV dtype accept
        (8, "auto", "TRITON_MLA", 944),  # A100 / RTX 3090: FA-MLA is SM90-only, FlashMLA SM90/SM100
        (9, "auto", "FLASH_ATTN_MLA", 944),  # H100 / H200: MultipleOf(16) -> align 16
        (9, "fp8", "FLASHMLA", 1920),  # FA-MLA has no fp8 cache -> FlashMLA [64]
        (10, "auto", "FLASHINFER_MLA", 960),  # B200: kernel blocks [32, 64] -> preferred 32, align 32
        (12, "auto", "TRITON_MLA", 944),  # RTX PRO 6000 / RTX 5090
    ],
)
def test_kimi_linear_block_by_gpu_vllm_0251(gpu_sm, kv, backend, block):
    """KDA page 1,085,440 B; MLA 576 x 2 = 1,152 B/token (576 in fp8).  align 16: 16 x cdiv(1,085,440, 16 x 1,152)
    = 16 x 59 = 944; align 32: 32 x cdiv(1,085,440, 36,864) = 32 x 30 = 960; fp8 align 64: 64 x cdiv(1,085,440,
    36,864) = 64 x 30 = 1,920 (Platform._align_hybrid_block_size, v0.25.1)."""
    assert _kimi_block(version=(0, 25, 1), sm=gpu_sm, kv=kv) == (backend, block)


def test_kimi_linear_block_by_release_and_flag():
    """0.19 (old rule: 64, CUTLASS_MLA 128): 64 x 15 = 960; 0.20-0.26 backend rule on an H100: 944; the 128 floor
    for MLA hybrids (0.27 on): 128 x cdiv(1,085,440, 147,456) = 128 x 8 = 1,024 on every GPU.  --attention-backend
    picks the backend (CUTLASS_MLA [128] -> 1,024; 'flashinfer' is FLASHINFER_MLA -> 960); --block-size 64 on
    an H100 keeps 64 as the block to align to -> 960."""
    assert _kimi_block(version=(0, 19, 0), sm=9) == (None, 960)
    assert _kimi_block(version=(0, 19, 0), sm=10, backend="CUTLASS_MLA") == ("CUTLASS_MLA", 1024)
    assert _kimi_block(version=(0, 20, 0), sm=9) == ("FLASH_ATTN_MLA", 944)
    assert _kimi_block(version=(0, 26, 0), sm=9) == ("FLASH_ATTN_MLA", 944)
    assert _kimi_block(version=(0, 27, 0), sm=9) == ("FLASH_ATTN_MLA", 1024)
    assert _kimi_block(version=(0, 34, 0), sm=10) == ("FLASHINFER_MLA", 1024)
    assert _kimi_block(version=(0, 25, 1), sm=10, backend="cutlass_mla") == ("CUTLASS_MLA", 1024)
    assert _kimi_block(version=(0, 25, 1), sm=9, backend="flashinfer") == ("FLASHINFER_MLA", 960)
    assert _kimi_block(version=(0, 25, 1), sm=9, block=64, given=True) == ("FLASH_ATTN_MLA", 960)
    assert _kimi_block(version=(0, 25, 1), sm=None) == ("FLASH_ATTN_MLA", 944)  # GPU unknown: SM90 assumed
    with pytest.raises(InputError, match="no dense MLA attention backend 'fa3'"):
        _kimi_block(version=(0, 25, 1), sm=9, backend="fa3")


def test_kimi_linear_0251_h100_pool_with_block_944():
    """The 0.25.1 pool on an H100 (FLASH_ATTN_MLA, block 944), the planner's steps on grouping's functions:
    P = 944 x 1,152 = 1,087,488 (KDA padded +0.19%); 7 layers per group -> 7,612,416 B per block;
    2.298 GiB // 7,612,416 = 324 blocks; per request cdiv(120,000, 944) = 128 + 3 KDA groups = 131;
    324 / 131 = 2.4733 -> int(2.4733 x 120,000) = 296,793 tokens."""
    from dataclasses import replace

    from kvplan.engines.vllm.releases import release_for

    m = specs.build_model_kv(config=_kimi_linear(), tp_size=2)
    _, block = _kimi_block(version=(0, 25, 1), sm=9)
    page = block * m.attn_token_bytes_1layer
    m = replace(m, layers=tuple(replace(x, state_bytes=page) if x.kind == "mamba" else x for x in m.layers))
    groups = grouping.kv_groups(m, block, [], release_for("0.25.1"))
    bpb = max(g.bytes_per_block() for g in groups)
    n = int(2.298 * GiB) // bpb
    per_req = sum(grouping.blocks_per_request(g, 120000, 64000, 1) for g in groups)
    assert (page, bpb, n, per_req) == (1087488, 7612416, 324, 131)
    assert int(n / per_req * 120000) == 296793


def test_non_mla_hybrids_align_as_before():
    """Jamba / Mamba / GDN hybrids keep (block, 16) whatever the GPU (FLASH_ATTN / TRITON_ATTN MultipleOf(16))."""
    m = specs.build_model_kv(config=_preset("ai21labs--Jamba-v0.1"), tp_size=2)
    a = grouping.hybrid_alignment(m, block_size=16, engine_version=(0, 25, 1), sm_major=10)
    assert (a.block_size, a.kernel_min_block, a.mla, a.backend, a.note) == (16, 16, False, None, None)


# --------------------------------------------------------------------------- Jamba, Llama-4, gpt-oss


def test_jamba_tp2_vllm_0251():
    """Mamba-1 state TP2: 3 x 4,096 x 2 + 4,096 x 16 x 2 = 155,648 B; attention 4 x 256 x 2 = 2,048 B/token;
    block 16 x cdiv(155,648, 32,768) = 80, page 163,840; 28 Mamba / 4 attention -> 8 groups of 4,
    655,360 B per block; mode none: blocks per request cdiv(32,768, 80) + 7 = 410 + 7 = 417;
    10 GiB -> 16,384 blocks; int(16,384 / 417 x 32,768) = 1,287,460."""
    p = _plan(
        _preset("ai21labs--Jamba-v0.1"),
        avail=10 * GiB,
        version="0.25.1",
        L=32768,
        B=8192,
        tp=2,
        enable_prefix_caching=False,
    )
    assert p.block_size == 80 and p.num_groups == 8 and p.bytes_per_block == 655360
    assert p.blocks_per_request == 417 and p.num_blocks == 16384
    assert p.gpu_kv_cache_tokens == int(16384 / 417 * 32768) == 1287460


def test_jamba_weights_follow_vllm_jamba_layers():
    """vLLM v0.25.1 models/jamba.py: MoE on layers i % 2 == 1 (layers_num_experts), attention on i % 8 == 4,
    Mamba-1 (MambaMixer) elsewhere.  Embedding + lm_head 2 x 65,536 x 4,096 = 536,870,912; attention 4 x
    (2 x 4,096^2 + 2 x 1,024 x 4,096) = 167,772,160; Mamba-1 28 x 105,308,448 = 2,948,636,544 (in_proj 2 x 8,192 x
    4,096, conv 8,192 x 4 + 8,192, x_proj 288 x 8,192, dt_proj 8,192 x 256 + 8,192, A 8,192 x 16, D 8,192,
    out_proj 4,096 x 8,192, norms 256 + 16 + 16); experts 16 x 16 x 3 x 4,096 x 14,336 = 45,097,156,608, routers
    16 x 16 x 4,096 = 1,048,576; dense MLP 16 x 3 x 4,096 x 14,336 = 2,818,572,288; norms 65 x 4,096 = 266,240:
    51,570,323,328 (the model card's 52B).  At TP2 that is 48.03 GiB per GPU and a positive pool on an H100."""
    from kvplan.weights.estimate import count_params

    assert count_params(_preset("ai21labs--Jamba-v0.1"))["total"] == 51_570_323_328


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

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
}


@pytest.mark.parametrize(
    ("dtype", "per_tok"),
    [
        ("fp8_per_token_head", 8 * (256 + 8)),  # + one fp32 scale for K and for V per token per head
        ("int8_per_token_head", 8 * (256 + 8)),
        ("int4_per_token_head", 8 * (64 + 64 + 8)),  # packed 2 per byte
        ("nvfp4", 8 * 2 * (64 + 8)),  # h/2 packed + h/16 fp8 block scales, K and V
    ],
)
def test_kv_quant_widths(dtype, per_tok):
    m = specs.build_model_kv(config=LLAMA, tp_size=1, kv_cache_dtype=dtype)
    assert {x.token_bytes for x in m.layers} == {per_tok}


def test_kv_cache_dtype_skip_layers():
    """Layer 0 kept at bf16 (4,096 B/token), the other 31 at fp8 (2,048): one uniform-type group whose block
    holds 16 x (4,096 + 31 x 2,048) = 1,081,344 B."""
    m = specs.build_model_kv(config=LLAMA, tp_size=1, kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("0",))
    assert [x.token_bytes for x in m.layers[:2]] == [4096, 2048]
    p = _plan(
        LLAMA, avail=GiB, version="0.25.1", L=4096, B=2048, kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("0",)
    )
    assert p.num_groups == 1 and p.bytes_per_block == 16 * (4096 + 31 * 2048)


def test_gemma4_refused_where_vllm_has_no_model():

    with pytest.raises(InputError, match="cannot serve Gemma4ForConditionalGeneration"):
        _plan(GEMMA4_26B, avail=GiB, version="0.11.1", L=4096, B=2048)


# --------------------------------------------------------------------------- issue-13 public logs (measured mode)

ISSUE13_LOGS = ROOT / "tests" / "validation" / "logs_issue13"
KIMI_LINEAR_CONFIG = ISSUE13_LOGS / "kimi-linear-48b-a3b.config.json"


def test_vllm_28228_kimi_linear_log_measured():
    """vllm#28228 (0.11.x, 2x RTX 3090, TP2, util 0.95, L 120,000, B 64,000, 8 seqs): with the logged 2.30 GiB
    (2,469,606,195 B) // (7 x 1,105,920) = 319 blocks, 319 // 4 groups x 960 = 75,840 tokens [log 75,840] and
    319 / 128 = 2.49x [log 2.48x: 2.30 is rounded, 318 blocks give 2.48].  The log's backend line names
    TritonMLABackend, vLLM's MLA choice on SM86 (grouping.MLA_PRIORITIES)."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import calibrate

    log = ISSUE13_LOGS / "vllm-28228-kimi-linear-2x3090-tp2.log"
    assert "TritonMLABackend" in log.read_text()
    assert grouping.vllm_mla_backend(sm_major=8)[0].name == "TRITON_MLA"
    cal = calibrate(
        read_log_file(log),
        log=log.stem,
        model=str(KIMI_LINEAR_CONFIG),
        gpu="rtx-3090",
        overrides={
            "tp": 2,
            "engine_version": "0.11.1",
            "context_length": 120000,
            "chunked_prefill_size": 64000,
            "max_running_requests": 8,
            "gpu_memory_utilization": 0.95,
        },
    )
    rows = {r.quantity: r for r in cal.rows if r.checked and r.logged is not None}
    tokens = rows["GPU KV cache size (tokens)"]
    assert tokens.logged == 75840 and abs(tokens.rel) <= 0.005
    assert cal.result is not None and cal.result.block_size == 960


@pytest.mark.parametrize(
    ("log", "version", "kernel"),
    [
        ("vllm-23278-gptoss120b-h100-marlin", "0.10.1", "Marlin"),  # vllm#23278: no triton_kernels before 0.12
        ("vllm-33155-gptoss120b-h100-triton", "0.14.1", "triton"),  # vllm#33155: "Using Triton backend"
    ],
)
def test_gptoss120b_h100_weight_logs(log, version, kernel):
    """gpt-oss-120b on one H100: both public logs stop before a pool line (23278 prints a negative available KV
    memory, which is no pool), so the logged weight load is what they check: kvplan's estimate for that release
    and GPU (the MoE kernel by release, kvplan.weights.kernels) within 0.5% of "Model loading took" (65.9651 GiB
    Marlin, 64.38 GiB Triton)."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.weights.estimate import estimate_weight_bytes, quantization_from_config

    facts = read_log_file(ISSUE13_LOGS / f"{log}.log")
    cfg = _preset("openai--gpt-oss-120b")
    est = estimate_weight_bytes(
        config=cfg,
        quantization=quantization_from_config(cfg),
        tp_size=1,
        engine="vllm",
        engine_version=version,
        sm_major=9,
    )
    assert facts.model_loading_bytes is not None
    assert abs(est.per_gpu_bytes / facts.model_loading_bytes - 1) <= 0.005
    assert kernel.lower() in (ISSUE13_LOGS / f"{log}.log").read_text().lower()


def test_kimi_linear_0251_planner_picks_the_backend_by_gpu():
    """Through plan_vllm (2.298 GiB, L 120,000, B 64,000, prefix caching off): H100 -> FLASH_ATTN_MLA, block 944,
    324 blocks, 131 per request, int(324 / 131 x 120,000) = 296,793 tokens; B200 -> FLASHINFER_MLA, block 960;
    --attention-backend CUTLASS_MLA -> block 1,024; the backend is an assumption line."""
    kw = dict(avail=int(2.298 * GiB), version="0.25.1", L=120000, B=64000, tp=2, enable_prefix_caching=False)
    h100 = _plan(_kimi_linear(), sm_major=9, **kw)
    assert (h100.block_size, h100.num_blocks, h100.blocks_per_request, h100.gpu_kv_cache_tokens) == (
        944,
        324,
        131,
        296793,
    )
    assert any("MLA attention backend FLASH_ATTN_MLA" in a for a in h100.assumptions)
    assert not any("FlashMLA / sparse-MLA backends" in a for a in h100.assumptions)
    assert _plan(_kimi_linear(), sm_major=10, **kw).block_size == 960
    assert _plan(_kimi_linear(), sm_major=9, attention_backend="CUTLASS_MLA", **kw).block_size == 1024
