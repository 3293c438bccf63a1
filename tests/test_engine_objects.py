"""The engine objects (issue 21 item 2): one registry, each engine's KV dtype vocabulary (issue 24 item 4), the
traits planning and weights ask instead of comparing engine names."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.engines.registry import ENGINES, PoolCount, check_kv_dtype_for, engine
from kvplan.errors import InputError
from kvplan.weights.rules import SGLANG_WEIGHTS, VLLM_WEIGHTS, WEIGHT_RULES, weight_rules

ROOT = Path(__file__).resolve().parent.parent


def test_lookup_by_name_and_default():
    assert engine(None) is engine("sglang") is engine(" SGLang ")
    assert engine("vllm").name == "vllm"
    with pytest.raises(InputError) as e:
        engine("trt")
    assert e.value.field == "--engine" and "sglang, vllm" in e.value.one_line()


def test_an_sglang_lookup_loads_no_vllm_rules():
    code = (
        "import sys; from kvplan.engines.registry import engine; engine('sglang').newest; "
        "print(any(m.startswith('kvplan.engines.vllm') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_traits_differ_where_the_engines_do():
    s, v = engine("sglang"), engine("vllm")
    assert (s.request_cap_field, v.request_cap_field) == ("max_running_requests", "max_num_seqs")
    assert (s.memory_fraction_field, v.memory_fraction_field) == ("mem_fraction_static", "gpu_memory_utilization")
    assert (s.pool_count, v.pool_count) == (PoolCount.TOKENS, PoolCount.BLOCKS)
    assert s.dp_attention and not v.dp_attention
    assert (s.weights, v.weights) == (SGLANG_WEIGHTS, VLLM_WEIGHTS)
    assert set(WEIGHT_RULES) == set(ENGINES)


def test_newest_release_is_the_supported_list_top():
    from kvplan import supported

    assert engine("sglang").newest == supported.SGLANG[1]
    assert engine("vllm").newest == supported.VLLM[1]


# ------------------------------------------------------------------------------------------ KV dtype vocabulary


def test_each_engine_has_its_own_kv_dtype_vocabulary():
    assert engine("vllm").check_kv_dtype("fp8") == "fp8"
    assert "fp8" in engine("vllm").kv_dtypes() and "fp8" not in engine("sglang").kv_dtypes()
    assert engine("sglang").check_kv_dtype("bfloat16") == "bf16"  # SGLang's spelling kept
    with pytest.raises(InputError) as e:
        engine("sglang").check_kv_dtype("fp8")
    assert "fp8_e4m3" in e.value.one_line()
    with pytest.raises(InputError):
        engine("vllm").check_kv_dtype("mxfp8")  # an SGLang-only format
    with pytest.raises(InputError):
        check_kv_dtype_for("fp8", ["vllm", "sglang"])


def test_sweep_axis_takes_the_engines_dtype():
    from kvplan.planning.sweep import parse_axis

    assert parse_axis("fp8,fp8_e5m2", field="kv_cache_dtype", engines=["vllm"]) == ["fp8", "fp8_e5m2"]
    with pytest.raises(InputError):
        parse_axis("fp8", field="kv_cache_dtype")  # the default engine, SGLang, has no fp8
    with pytest.raises(InputError):
        parse_axis("fp8", field="kv_cache_dtype", engines=["sglang", "vllm"])


def test_vllm_fp8_sweep_answers_as_fit():
    """``sweep --engine vllm --kv-cache-dtype fp8`` (refused before with "SGLang has no 'fp8'") gives fit's numbers:
    fp8 halves Qwen3-8B's bf16 cell, 36 layers x 8 KV heads x 128 x 2 (K, V) x 1 B = 73,728 B/token."""
    from kvplan.planning.plan import fit
    from kvplan.planning.sweep import sweep

    base = Deployment(model="qwen3-8b", gpu="h100-sxm", engine="vllm", kv_cache_dtype="fp8")
    table = sweep(
        Deployment(),
        {
            "engine": ["vllm"],
            "model": ["qwen3-8b"],
            "gpu": ["h100-sxm"],
            "kv_cache_dtype": ["fp8"],
            "context_length": [8192, 32768],
        },
    )
    rows = list(table.rows())
    assert [r["kv_bytes_per_token"] for r in rows] == [36 * 8 * 128 * 2] * 2
    for r in rows:
        res = fit(replace(base, context_length=r["context_length"]))
        assert (r["max_concurrency"], r["fits"], r["kv_pool_tokens"]) == (
            res.max_concurrency,
            res.fits,
            res.kv_pool_tokens,
        )
    with pytest.raises(InputError):
        sweep(Deployment(), {"engine": ["sglang"], "kv_cache_dtype": ["fp8"]})


# ------------------------------------------------------------------------------------------ weights rows


def test_weight_rules_lookup():
    assert weight_rules("vllm") is VLLM_WEIGHTS and weight_rules(VLLM_WEIGHTS) is VLLM_WEIGHTS
    assert weight_rules("other") is SGLANG_WEIGHTS  # the walk's old reading of an unknown name
    with pytest.raises(InputError):
        weight_rules("other", strict=True)
    assert (SGLANG_WEIGHTS.mtp_draft_layers, VLLM_WEIGHTS.mtp_draft_layers) == (1, None)


def test_calibrate_has_a_measured_reader_per_engine():
    from kvplan.planning import calibrate

    assert set(calibrate._MEASURED_READERS) == set(ENGINES)
    assert set(calibrate._ENGINE_ROWS) == set(ENGINES)


def test_fit_takes_the_callers_warnings():
    """A caller with more to say (the launch reader) passes it to fit: the result is not mutated afterwards."""
    from kvplan.planning.plan import fit

    plain = fit(Deployment(model="qwen3-8b", gpu="h100-sxm"))
    res = fit(Deployment(model="qwen3-8b", gpu="h100-sxm"), warnings=["--foo dropped"])
    assert res.warnings == [*plain.warnings, "--foo dropped"]
    assert res.contract() == {**plain.contract(), "warnings": res.warnings}
