"""Issue 13, SGLang side: Gemma-4 (by release, KV sharing), Gemma-3n, Jamba, Llama-4, MiMo-V2-Flash, Dots3.

Every number is derived by hand in the test from SGLang 0.5.23's HybridSWAPoolConfigurator cell
(model_executor/pool_configurator.py): cell = F x (Lf + Df) + r x S x (Ls + Ds), r = 0.8.
"""

from __future__ import annotations

import pytest

from kvplan.engines.sglang.pools import swa as pools
from kvplan.engines.sglang.pools.unsupported import check_sglang_architecture
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.hfconfig.detect import detect_family
from kvplan.hfconfig.dtypes import DType, dtype_named
from kvplan.inputs.resolve import resolve_model


@pytest.fixture
def cli():
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def _cell(layers, *, tp=1, kv="bf16", ratio=0.8, draft_swa=0):
    F = pools.swa_bytes_per_layer_token(
        kv_heads=layers.full_kv_heads,
        head_dim=layers.full_head_dim,
        v_head_dim=layers.full_v_head_dim,
        attn_tp_size=tp,
        kv_dtype=dtype_named(kv),
        latent=layers.latent,
    )
    S = pools.swa_bytes_per_layer_token(
        kv_heads=layers.swa_kv_heads,
        head_dim=layers.swa_head_dim,
        v_head_dim=layers.swa_v_head_dim,
        attn_tp_size=tp,
        kv_dtype=dtype_named(kv),
        latent=layers.latent,
    )
    return F * len(layers.full_layers) + ratio * S * (len(layers.swa_layers) + draft_swa)


def _cfg(name):
    m = resolve_model(name)
    return m.raw_config or m.config


# ---------------------------------------------------------------------------------------------- Gemma-4


def test_gemma4_26b_cell_184320():
    # full 2 KV heads x (512 + 512) x 2 B = 4,096 x 5 layers = 20,480
    # SWA  8 KV heads x (256 + 256) x 2 B = 8,192 x 25 layers = 204,800;  20,480 + 0.8 x 204,800 = 184,320
    L = pools.swa_layers_from_config(_cfg("gemma-4-26b-a4b"))
    assert (len(L.full_layers), len(L.swa_layers), L.sliding_window) == (5, 25, 1023)
    assert _cell(L) == pytest.approx(184_320)
    # TP2: full max(1, 2 // 2) = 1 head -> 2,048 x 5 = 10,240; SWA 4 heads -> 4,096 x 25 x 0.8 = 81,920
    assert _cell(L, tp=2) == pytest.approx(92_160)


def test_gemma4_pools_30gib():
    # 30 GiB = 32,212,254,720 B // 184,320 = 174,762 full tokens; swa = int(0.8 x 174,762) = 139,809
    L = pools.swa_layers_from_config(_cfg("gemma-4-26b-a4b"))
    r = pools.swa_pool_sizes(
        layers=L,
        budget_bytes=30 * 2**30,
        knobs=pools.SWAKnobs(
            kv_dtype=DType.BF16,
            attn_tp_size=1,
            page_size=1,
            swa_full_tokens_ratio=None,
            radix_cache=True,
            max_running_requests=None,
            attn_dp_size=1,
            chunked_prefill_size=8192,
            overlap_schedule=True,
        ),
    )
    assert (r.full_tokens, r.swa_tokens) == (174_762, 139_809)


def _e2b():
    # Gemma-4 E2B text config (third-party transcription, not first-hand): 35 layers, full every 5th from 4,
    # 1 KV head, head_dim 256, global_head_dim 512, no global KV heads, k_eq_v false, 20 KV-shared layers
    lt = ["full_attention" if i % 5 == 4 else "sliding_attention" for i in range(35)]
    return {
        "architectures": ["Gemma4ForConditionalGeneration"],
        "text_config": {
            "num_hidden_layers": 35,
            "num_attention_heads": 8,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "global_head_dim": 512,
            "num_global_key_value_heads": None,
            "attention_k_eq_v": False,
            "sliding_window": 512,
            "layer_types": lt,
            "num_kv_shared_layers": 20,
            "hidden_size": 1536,
        },
    }


def test_gemma4_e2b_shared_layers_still_reserved():
    # SGLang 0.5.23 counts every layer_types entry (the 20 shared layers included):
    # full 1 x (512 + 512) x 2 = 2,048 x 7 = 14,336;  SWA 1 x 512 x 2 = 1,024 x 28 x 0.8 = 22,937.6 -> 37,273.6
    L = pools.swa_layers_from_config(_e2b())
    assert (len(L.full_layers), len(L.swa_layers), L.sliding_window) == (7, 28, 511)
    assert _cell(L) == pytest.approx(37_273.6)


def _k_eq_v_false_with_globals():
    cfg = _e2b()
    cfg["text_config"].update(num_global_key_value_heads=4, num_kv_shared_layers=0)
    return cfg


def test_gemma4_global_kv_gated_from_0522():
    # 0.5.22+: per_layer_config applies num_global_key_value_heads only with attention_k_eq_v -> 1 head;
    # 0.5.11 - 0.5.21: the inline swap sets it whenever given -> 4 heads
    assert pools.swa_layers_from_config(_k_eq_v_false_with_globals()).full_kv_heads == 1
    assert pools.swa_layers_from_config(_k_eq_v_false_with_globals(), release="0.5.22").full_kv_heads == 1
    assert pools.swa_layers_from_config(_k_eq_v_false_with_globals(), release="0.5.21").full_kv_heads == 4
    assert pools.swa_layers_from_config(_k_eq_v_false_with_globals(), release="0.5.11").full_kv_heads == 4


@pytest.mark.parametrize("release", ["0.5.9", "0.5.10", "0.5.8"])
def test_gemma4_absent_before_0511(release):
    with pytest.raises(InputError) as e:
        pools.swa_layers_from_config(_cfg("gemma-4-26b-a4b"), release=release)
    assert e.value.field == "--engine-version" and "0.5.11" in str(e.value)


def test_gemma4_fit_old_release_exit2(cli):
    res = cli("fit", "-m", "gemma-4-26b-a4b", "-g", "h100-sxm", "--engine-version", "0.5.9", "--format", "json")
    assert res.exit_code == 2 and "--engine-version" in res.output


def test_gemma3n_default_pool_all_layers():
    # Gemma-3n: not hybrid SWA (the gemma2_gemma3 override disables it); DefaultPoolConfigurator over all
    # num_effective_layers, the 10 KV-shared layers included
    cfg = {
        "architectures": ["Gemma3nForConditionalGeneration"],
        "model_type": "gemma3n",
        "text_config": {
            "model_type": "gemma3n_text",
            "num_hidden_layers": 30,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "hidden_size": 2048,
            "sliding_window": 512,
            "num_kv_shared_layers": 10,
            "layer_types": ["full_attention" if i % 5 == 4 else "sliding_attention" for i in range(30)],
        },
    }
    from kvplan.hfconfig.normalize import flatten_config

    assert detect_family(flatten_config(cfg, engine="sglang")) is Family.GQA
    with pytest.raises(InputError):
        pools.swa_layers_from_config(cfg)


# ---------------------------------------------------------------------------------------------- Jamba


def test_jamba_sglang_refused_with_reason():
    with pytest.raises(InputError) as e:
        check_sglang_architecture(_cfg("jamba"))
    assert e.value.field == "--model" and "no SGLang implementation" in str(e.value)


def test_jamba_fit_sglang_exit2(cli):
    res = cli("fit", "-m", "jamba", "-g", "h100-sxm", "--tp", "2", "--format", "json")
    assert res.exit_code == 2 and "--model" in res.output


def test_jamba_fit_sglang_names_the_reason(cli):
    res = cli("fit", "-m", "jamba", "-g", "h100-sxm", "--tp", "2", "--format", "json")
    assert res.exit_code == 2 and "no SGLang implementation" in res.output


# ---------------------------------------------------------------------------------------------- Llama-4


def test_llama4_scout_tp8_cell():
    # Llama4ForConditionalGeneration: full iff (i + 1) % 4 == 0 -> 12 full + 36 chunked, window 8,192
    # TP8: 8 KV heads // 8 = 1 x (128 + 128) x 2 = 512 B; 512 x 12 + 0.8 x 512 x 36 = 6,144 + 14,745.6 = 20,889.6
    L = pools.swa_layers_from_config(_cfg("llama-4-scout"))
    assert (len(L.full_layers), len(L.swa_layers), L.sliding_window) == (12, 36, 8192)
    assert L.full_layers[:3] == (3, 7, 11)
    assert _cell(L, tp=8) == pytest.approx(20_889.6)


def test_llama4_causal_lm_is_not_hybrid():
    cfg = dict(_cfg("llama-4-scout"))
    cfg["architectures"] = ["Llama4ForCausalLM"]
    from kvplan.hfconfig.normalize import flatten_config

    assert detect_family(flatten_config(cfg, engine="sglang")) is not Family.HYBRID_SWA
    with pytest.raises(InputError):
        pools.swa_layers_from_config(cfg)


# ---------------------------------------------------------------------------------------------- MiMo-V2-Flash


def test_mimo_v2_flash_asymmetric_cells():
    # 9 full (pattern 0) + 39 SWA; full 4 x (192 + 128) x 2 = 2,560 x 9 = 23,040; SWA 8 x 320 x 2 = 5,120 x 39
    # = 199,680; TP1 cell 23,040 + 0.8 x 199,680 = 182,784.  TP4: 640 x 9 + 0.8 x 1,280 x 39 = 5,760 + 39,936
    L = pools.swa_layers_from_config(_cfg("mimo-v2-flash"))
    assert (len(L.full_layers), len(L.swa_layers), L.sliding_window) == (9, 39, 128)
    assert (L.full_head_dim, L.full_v_head_dim, L.swa_kv_heads) == (192, 128, 8)
    assert _cell(L) == pytest.approx(182_784)
    assert _cell(L, tp=4) == pytest.approx(45_696)
    # pool bytes of sglang#15464 at ratio 1.0 (swa = full = 1,496,958 tokens): x (5,760 + 49,920) = 77.63 GiB
    assert 1_496_958 * _cell(L, tp=4, ratio=1.0) / 2**30 == pytest.approx(77.63, abs=0.005)


def test_mimo_mtp_draft_priced_as_swa():
    # path-less MTP head (num_nextn_predict_layers 1): the draft layer is an SWA layer of the target's cell
    # 23,040 + 0.8 x 5,120 x (39 + 1) = 186,880
    from kvplan.hfconfig.spec import ModelSpec  # noqa: F401  (ModelSpec.get reads the config)

    m = resolve_model("mimo-v2-flash")
    L = pools.swa_layers_from_config(m.raw_config or m.config)

    class _M:
        def get(self, key):
            return 1 if key == "num_nextn_predict_layers" else None

    assert pools.split_draft_layers(_M(), L, "EAGLE") == (0, 1)
    assert _cell(L, draft_swa=1) == pytest.approx(186_880)
    assert pools.split_draft_layers(m, L, "") == (0, 0)


# ---------------------------------------------------------------------------------------------- Dots3


def _dots3():
    lt = ["full_attention" if i % 4 == 3 else "sliding_attention" for i in range(8)]
    return {
        "architectures": ["Dots3NoteForCausalLM"],
        "model_type": "dots3",
        "num_hidden_layers": 8,
        "num_attention_heads": 32,
        "hidden_size": 4096,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "swa_kv_lora_rank": 256,
        "swa_qk_rope_head_dim": 64,
        "layer_types": lt,
        "sliding_window_size": 512,
    }


def test_dots3_mla_swa_cell():
    # MLA branch of HybridSWAPoolConfigurator: full (512 + 64) x 2 = 1,152 B, SWA (256 + 64) x 2 = 640 B, not
    # split by TP; 2 full + 6 SWA: 1,152 x 2 + 0.8 x 640 x 6 = 2,304 + 3,072 = 5,376 (at TP1 and TP8)
    assert detect_family(_dots3()) is Family.HYBRID_SWA
    L = pools.swa_layers_from_config(_dots3())
    assert L.latent and (len(L.full_layers), len(L.swa_layers), L.sliding_window) == (2, 6, 511)
    assert _cell(L) == pytest.approx(5_376)
    assert _cell(L, tp=8) == pytest.approx(5_376)


def test_dots3_with_dsa_indexer_refused():
    cfg = {**_dots3(), "index_topk": 2048, "index_head_dim": 128}
    with pytest.raises(InputError):
        pools.swa_layers_from_config(cfg)


# ---------------------------------------------------------------------------------------------- GLM-5.2 (DSA)
# SGLang 0.5.23 budgets (pool_configurator.py _compute_dsa_indexer_cell_size) and allocates (memory_pool.py
# DSATokenToKVPool skip_topk_layers) the FP8 index-K rows only on the layers that compute their own top-k: GLM-5.2's
# indexer_types names 21 "full" layers of 78 (0, 1, 2, 6, 10, ..., 74); the 57 "shared" ones get 0-row buffers.


def _glm52_fit(cli, *args):
    import json

    res = cli("fit", "-m", "zai-org/GLM-5.2-FP8", "-g", "b200", "--tp", "8", "--format", "json", *args)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_glm52_indexer_layers_from_indexer_types():
    from kvplan.engines.sglang.pools.dsa import dsa_stage_indexer_layers

    m = resolve_model("zai-org/GLM-5.2")
    types = m.config["indexer_types"]
    assert len(types) == 78 and types.count("full") == 21
    assert dsa_stage_indexer_layers(config=m.config, start_layer=0, end_layer=78) == 21
    # PP2 (39 + 39): 0, 1, 2, 6, ..., 38 -> 3 + 9 = 12;  42, 46, ..., 74 -> 9
    assert dsa_stage_indexer_layers(config=m.config, start_layer=0, end_layer=39) == 12
    assert dsa_stage_indexer_layers(config=m.config, start_layer=39, end_layer=78) == 9


def test_glm52_b200_tp8_cell_47700(cli):
    # SM100: kv auto -> fp8_e4m3, decode trtllm -> raw row 512 + 64 = 576 B on all 78 layers = 44,928
    # indexer key 128 + 128/128 x 4 = 132 B on 21 layers = 2,772  -> 47,700 B (was 78 x 708 = 55,224)
    d = _glm52_fit(cli)
    assert d["kv_cache_dtype"] == "fp8_e4m3" and d["page_size"] == 64
    assert d["kv_bytes_per_token"] == 78 * 576 + 21 * 132 == 47_700
    # tokens = page_floor(budget // 47,700, 64)
    assert d["kv_pool_tokens"] == d["kv_budget_bytes"] // 47_700 // 64 * 64
    assert any("21 of 78 layers" in a for a in d["assumptions"])


def test_glm52_pp2_worst_stage(cli):
    # stage 0: 39 x 576 + 12 x 132 = 22,464 + 1,584 = 24,048;  stage 1: 22,464 + 9 x 132 = 23,652 -> MIN tokens
    # is set by the larger cell, 24,048
    d = _glm52_fit(cli, "--pp", "2", "--num-gpus", "16")
    assert d["kv_bytes_per_token"] == 24_048


def test_glm52_mtp_draft_priced_by_the_dsa_rule(cli):
    # draft (EAGLE, num_nextn_predict_layers 1): latent int((47,700 - 2,772) x 1 / 78) = 576 + indexer on every
    # draft layer 132 -> 47,700 + 708 = 48,408 (the generic int(47,700 / 78) = 611 would be 97 B short)
    d = _glm52_fit(cli, "--speculative-algorithm", "EAGLE")
    assert d["kv_bytes_per_token"] == 47_700 + 576 + 132 == 48_408


def test_glm52_indexer_on_every_layer_before_0518(cli):
    # 0.5.4 - 0.5.17: the indexer key is budgeted (and allocated) on every layer: 78 x (576 + 132) = 55,224
    d = _glm52_fit(cli, "--engine-version", "0.5.17")
    assert d["kv_bytes_per_token"] == 78 * 708 == 55_224


def test_dsv32_every_layer_keeps_its_indexer(cli):
    import json

    res = cli("fit", "-m", "deepseek-ai/DeepSeek-V3.2", "-g", "b200", "--tp", "8", "--format", "json")
    assert json.loads(res.output)["kv_bytes_per_token"] == 61 * (576 + 132) == 43_188


@pytest.mark.parametrize(
    "field, value",
    [("index_topk_freq", 0), ("index_skip_topk_offset", -1), ("cli_factor", 0), ("index_topk_freq", "4")],
)
def test_dsa_skip_fields_validated(field, value):
    from kvplan.geometry.dsa import dsa_skip_fields

    with pytest.raises(InputError) as e:
        dsa_skip_fields({field: value})
    assert field in str(e.value)


def test_glm52_show_indexer_layers():
    from kvplan.engines.sglang.pools.dsa import breakdown

    b = breakdown(resolve_model("zai-org/GLM-5.2"))
    assert b.info["indexer_layers"] == 21
    rows = {r["layout"]: r["bytes_per_token"] for r in b.rows}
    # 78 x row + 21 x 132: bf16 1,152 -> 92,628; scaled 656 -> 53,940; raw 576 -> 47,700
    assert rows == {"bf16": 92_628, "scaled_fp8": 53_940, "raw_fp8": 47_700}
