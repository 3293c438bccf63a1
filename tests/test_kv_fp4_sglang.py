"""SGLang 0.5.23 FP4 KV recipes (nvfp4, fp4_mx_block16): packed widths, scale bytes, workspace, and what is refused.

Read in the 0.5.23 wheel (python/sglang/srt/...): ``layers/quantization/fp4_kv_cache_quant_method.py``
(``NVFP4KVCacheMethod`` / ``FP4MXBlock16KVCacheMethod``: ``create_buffers``, ``compute_cell_size``, the access
registry, ``resolve_kv_cache_quant``), ``arg_groups/kv_cache_hook.py`` (``handle_nvfp4_prefill_kv_dequant_dtype``,
``handle_kv4_compatibility``), ``arg_groups/overrides.py`` (``_mla_kv_cache_dtype_checks``),
``layers/attention/attention_registry.py`` (``create_trtllm_mha_backend``), ``mem_cache/memory_pool.py``
(``MLATokenToKVPool`` FP4 buffers), ``arg_groups/fields/model.py`` (the ``--kv-cache-dtype`` choices).
"""

from __future__ import annotations

import json

import pytest

from kvplan.engines.sglang import kvdtype as sk
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.geometry import kvdtype as gk
from kvplan.hfconfig.dtypes import DType, dtype_named

LLAMA8B = dict(kv_heads_per_rank=8, head_dim=128, num_layers=32)


@pytest.fixture
def cli():
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


# ---------------------------------------------------------------------------------------------- widths (geometry)


def test_packed_widths_and_block_scales():
    # E2M1: two values per byte; one scale byte per 16 values
    assert gk.kv_packed_bytes(values=576, dtype="nvfp4") == 288
    assert gk.kv_packed_bytes(values=576, dtype="fp4_mx_block16") == 288
    assert gk.kv_packed_bytes(values=576, dtype="fp8_e4m3") == 576
    assert gk.kv_packed_bytes(values=576, dtype="bf16") == 1_152
    assert gk.fp4_block_scale_bytes(values=576) == 36 and gk.fp4_block_scale_bytes(values=128) == 8
    with pytest.raises(InputError):
        gk.kv_packed_bytes(values=-1, dtype="nvfp4")


@pytest.mark.parametrize(
    "name, hint", [("mxfp4", "block-32"), ("fp4", "nvfp4 or fp4_mx_block16"), ("fp4_e2m1", "E2M1")]
)
def test_not_sglang_kv_dtypes(name, hint):
    # argparse choices: auto fp8_e5m2 fp8_e4m3 mxfp8 bf16 bfloat16 nvfp4 fp4_mx_block16 (no mxfp4 / fp4 / fp4_e2m1)
    with pytest.raises(InputError) as e:
        gk.canonical_kv_dtype(name)
    assert e.value.field == "--kv-cache-dtype" and hint in (e.value.hint or "")


# ---------------------------------------------------------------------------------------------- MHA / GQA cells


def test_nvfp4_sm100_defaults_native_scales_only():
    # prefill trtllm_mha (auto on SM100) + decode trtllm_mha: native HND scales only, no workspace
    # fp4 8 x 64 x 32 x 2 = 32,768;  scales 1 x 8 x (128 / 16) x 32 x 2 = 4,096  -> 36,864
    assert sk.fp4_kv_access(kv_dtype="nvfp4", sm_major=10) == (1, False)
    assert sk.fp4_kv_bytes_per_token(kv_dtype="nvfp4", sm_major=10, **LLAMA8B) == 36_864


def test_nvfp4_sm120_linear_scales_and_fp8_workspace():
    # SM120: prefill auto -> fp8_e4m3 workspace (FlashInfer); decode trtllm_mha reads the linear layout (XQA)
    # 32,768 + 4,096 + workspace 8 x 128 x 2 x 1 B = 2,048 -> 38,912
    assert sk.fp4_kv_access(kv_dtype="nvfp4", sm_major=12) == (1, True)
    assert sk.fp4_kv_bytes_per_token(kv_dtype="nvfp4", sm_major=12, **LLAMA8B) == 38_912


def test_nvfp4_sm100_mixed_prefill_owns_both_layouts():
    # --prefill-attention-backend flashinfer on SM100: linear (for the FP8 workspace) + native (decode) layouts
    # 32,768 + 2 x 4,096 + 2,048 = 43,008
    kw = dict(kv_dtype="nvfp4", sm_major=10, prefill_backend="flashinfer")
    assert sk.fp4_kv_access(**kw) == (2, True)
    assert sk.fp4_kv_bytes_per_token(**kw, **LLAMA8B) == 43_008


def test_fp4_mx_block16_cell():
    # (8 x 128 / 16) x 32 x 2 = 4,096 scale bytes, no workspace -> 36,864 on any GPU
    assert sk.fp4_kv_access(kv_dtype="fp4_mx_block16", sm_major=9) == (1, False)
    assert sk.fp4_kv_bytes_per_token(kv_dtype="fp4_mx_block16", **LLAMA8B) == 36_864


def test_nvfp4_refusals():
    with pytest.raises(InputError) as e:
        sk.fp4_kv_access(kv_dtype="nvfp4", sm_major=10, decode_backend="flashinfer")
    assert e.value.field == "--decode-attention-backend"
    with pytest.raises(InputError):
        sk.fp4_kv_access(kv_dtype="nvfp4", sm_major=10, prefill_backend="fa3")
    # native NVFP4 needs head_dim % 64 == 0 (create_buffers)
    with pytest.raises(InputError):
        sk.fp4_kv_bytes_per_token(kv_dtype="nvfp4", sm_major=10, kv_heads_per_rank=8, head_dim=96, num_layers=2)
    with pytest.raises(InputError):
        sk.fp4_kv_access(kv_dtype="fp8_e4m3", sm_major=10)


def test_same_numbers_as_the_gqa_planner_formula():
    from kvplan.engines.sglang.pools.gqa import gqa_bytes_per_token

    for dt in ("nvfp4", "fp4_mx_block16"):
        for sm in (10, 12):
            want = gqa_bytes_per_token(
                num_kv_heads=8,
                head_dim=128,
                v_head_dim=128,
                num_layers=32,
                attn_tp_size=1,
                kv_dtype=dtype_named(dt),
                sm_major=sm,
            )
            assert sk.fp4_kv_bytes_per_token(kv_dtype=dt, sm_major=sm, **LLAMA8B) == want


def test_fit_prices_nvfp4_with_the_gpus_access_pattern(cli):
    res = cli("fit", "-m", "meta-llama/Llama-3.1-8B", "-g", "b200", "--kv-cache-dtype", "nvfp4", "--format", "json")
    assert json.loads(res.output)["kv_bytes_per_token"] == 36_864


# ---------------------------------------------------------------------------------------------- MLA


def test_fp4_latent_cell():
    # DeepSeek-V3: (576 x 61) // 2 = 17,568 + (576 // 16) x 61 = 2,196 -> 19,764 (both recipes)
    assert sk.fp4_latent_bytes_per_token(kv_dim=576, num_layers=61) == 19_764
    from kvplan.engines.sglang.pools.mla import mla_bytes_per_token

    assert (
        mla_bytes_per_token(kv_lora_rank=512, qk_rope_head_dim=64, num_layers=61, kv_dtype=DType.FP4_MX_BLOCK16)
        == 19_764
    )


def test_nvfp4_refused_on_mla():
    # nvfp4 forces decode trtllm_mha, and create_trtllm_mha_backend raises "can only be used with non-MLA models"
    with pytest.raises(InputError) as e:
        sk.resolve_kv_cache_dtype(
            requested="nvfp4",
            model_dtype="bfloat16",
            kv_cache_quant_algo=None,
            family=Family.MLA,
            sm_major=10,
            vendor="nvidia",
        )
    assert e.value.field == "--kv-cache-dtype" and "MLA" in str(e.value)
    assert (
        sk.resolve_kv_cache_dtype(
            requested="fp4_mx_block16",
            model_dtype="bfloat16",
            kv_cache_quant_algo=None,
            family=Family.MLA,
            sm_major=10,
            vendor="nvidia",
        )
        == "fp4_mx_block16"
    )
    assert (
        sk.resolve_kv_cache_dtype(
            requested="nvfp4",
            model_dtype="bfloat16",
            kv_cache_quant_algo=None,
            family=Family.GQA,
            sm_major=10,
            vendor="nvidia",
        )
        == "nvfp4"
    )


def test_nvfp4_on_deepseek_v3_is_a_verdict(cli):
    res = cli(
        "fit",
        "-m",
        "deepseek-ai/DeepSeek-V3",
        "-g",
        "b200",
        "--tp",
        "8",
        "--kv-cache-dtype",
        "nvfp4",
        "--format",
        "json",
    )
    # SGLang refuses to start with it (an engine refusal, issue 24 item 5): a verdict, exit 0, never exit 2
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert (d["starts"], d["fits"]) == (False, False)
    assert d["reasons"][0].startswith("the engine refuses to start: --kv-cache-dtype nvfp4 is refused on an MLA model")


def test_fp4_mx_on_deepseek_v3_b200_default_backend_refused(cli):
    res = cli(
        "fit",
        "-m",
        "deepseek-ai/DeepSeek-V3",
        "-g",
        "b200",
        "--tp",
        "8",
        "--kv-cache-dtype",
        "fp4_mx_block16",
        "--format",
        "json",
    )
    assert not json.loads(res.output)["fits"]
    assert "TensorRT-LLM MLA" in json.loads(res.output)["verdict"]
    # with the FP4-capable MLA backend given it runs (handle_kv4_compatibility's MLA list: flashinfer)
    ok = cli(
        "fit",
        "-m",
        "deepseek-ai/DeepSeek-V3",
        "-g",
        "b200",
        "--tp",
        "8",
        "--kv-cache-dtype",
        "fp4_mx_block16",
        "--attention-backend",
        "flashinfer",
        "--format",
        "json",
    )
    assert json.loads(ok.output)["fits"]
    # DeepSeek-V2 is not in the DeepSeek-family override list: its SM100 default MLA backend is flashinfer
    from kvplan.engines.sglang.rules import is_deepseek_family

    assert is_deepseek_family(architectures=["DeepseekV3ForCausalLM"])
    assert not is_deepseek_family(architectures=["DeepseekV2ForCausalLM"]) and not is_deepseek_family(
        architectures=None
    )
