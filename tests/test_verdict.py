"""The verdict by what the engine does (issue 11): ``fits``, ``reasons``, the target, the request cap's source.

``fits``: the engine starts and serves one request of ``context_length`` (KV dtype on that GPU, context within the
model's maximum unless the override is on, weights, budget, one full-context request).  The target is only what the
user asks for (``--requests`` / a workload; else one full-context request); ``--max-running-requests`` is a cap.
"""

from __future__ import annotations

import pytest

from kvplan.deployment import Deployment
from kvplan.engines import support
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.inputs.resolve import resolve_gpu, resolve_model
from kvplan.planning.plan import fit
from kvplan.planning.verdict import Facts, cap_source, judge

GiB = 2**30
QWEN8_128K = dict(model="Qwen/Qwen3-8B", gpu="h100-sxm", context_length=131072)
CONTEXT_REASON = (
    "context_length 131,072 exceeds the model's 40,960: SGLang refuses it unless "
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (or --allow-long-context)"
)


@pytest.fixture(autouse=True)
def _no_override_in_the_environment(monkeypatch):
    for name in support.LONG_CONTEXT_ENV.values():
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------------------------------ done means


def test_the_default_deployment_fits():
    r = fit(Deployment())
    assert r.fits and r.meets_target and r.reasons == []
    # 3,993,856 pool tokens // 1,048,576 = 3 full-context requests (4 before the estimate priced V4.1's wo_a in bf16
    # and its ViT as SGLang loads them: 0.45 GiB more weights per GPU; 4,148,480 before the caching-allocator
    # reserve, the recorded 94.97 GiB device total and the per-GPU CUDA context of 8 Dec 2026: docs/default-deployment.md)
    assert r.kv_pool_tokens == 3_993_856
    assert r.verdict == "fits: 3 requests of 1,048,576 tokens at once; max_running_requests 16 (given)"
    assert (r.max_concurrency, r.target_requests, r.max_running_requests_source) == (3, 1, "given")
    assert r.target == "1 request of 1,048,576 tokens at once"


def test_sixteen_full_requests_do_not_meet_the_target():
    r = fit(Deployment(target_requests=16))
    assert r.fits and not r.meets_target
    assert r.target == "16 requests of 1,048,576 tokens at once"
    pool = r.kv_pool_tokens
    assert r.target_reason == (
        f"16 requests of 1,048,576 tokens need 16,777,216 tokens, the pool holds {pool:,} (room for 3)"
    )


def test_qwen3_8b_at_128k_does_not_fit_in_fit_sweep_and_check(tmp_path):
    r = fit(Deployment(**QWEN8_128K))
    assert not r.fits and not r.meets_target and r.reasons == [CONTEXT_REASON]
    assert r.verdict == "does not fit: " + CONTEXT_REASON
    from kvplan.planning.sweep import sweep

    row = sweep(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm"), {"context_length": [131072]}).row(0)
    assert not row["fits"] and row["verdict"] == r.verdict and row["reason"] == "does not fit: " + CONTEXT_REASON
    from kvplan.planning.check import check, load_plan

    p = tmp_path / "plan.toml"
    p.write_text(
        '[[deployment]]\nname = "q"\nmodel = "Qwen/Qwen3-8B"\ngpu = "h100-sxm"\ncontext_length = "128k"\n'
        '[deployment.target]\ncontext = "128k"\nrequests = 1\n'
    )
    (c,) = check(load_plan(p))
    assert not c.passed and c.reason == "does not fit: " + CONTEXT_REASON


def test_the_override_from_the_flag_and_from_the_environment(monkeypatch):
    assert fit(Deployment(**QWEN8_128K, allow_long_context=True)).fits
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    r = fit(Deployment(**QWEN8_128K))
    assert r.fits and any("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN in the environment" in a for a in r.assumptions)
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "perhaps")
    with pytest.raises(InputError) as e:
        fit(Deployment(**QWEN8_128K))
    assert e.value.field == "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    # vLLM reads its own variable, 1 / true only
    monkeypatch.delenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")
    v = fit(Deployment(**QWEN8_128K, engine="vllm"))
    assert not v.fits and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in v.verdict and "(max_position_embeddings)" in v.verdict
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "true")
    allowed = fit(Deployment(**QWEN8_128K, engine="vllm"))
    assert not any("VLLM_ALLOW_LONG_MAX_MODEL_LEN" in x for x in allowed.reasons)
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN in the environment" in a for a in allowed.assumptions)


def test_no_context_given_is_never_refused():
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm"))
    assert r.fits and r.context_length == 40_960


# ------------------------------------------------------------------------------------------------ KV dtype


@pytest.mark.parametrize(
    "engine,dtype,gpu,family,refused",
    [
        ("sglang", "nvfp4", "h100-sxm", Family.GQA, "needs Blackwell SM100 or SM120"),
        ("sglang", "nvfp4", "b200", Family.GQA, None),
        ("sglang", "nvfp4", "rtx-pro-6000-maxq", Family.GQA, None),  # SM120
        ("sglang", "nvfp4", "gb10", Family.GQA, None),  # SM121: major 12
        ("sglang", "nvfp4", "mi300x", Family.GQA, "CUDA only"),
        ("sglang", "mxfp8", "h100-sxm", Family.GQA, "needs an SM100+ (Blackwell) GPU"),
        ("sglang", "mxfp8", "b300", Family.GQA, None),  # SM103
        ("sglang", "mxfp8", "rtx-5090", Family.GQA, None),  # SM120
        ("sglang", "mxfp8", "mi355x", Family.GQA, "needs an SM100+"),
        ("sglang", "fp4_mx_block16", "h100-sxm", Family.GQA, "fa3 (SGLang's default"),
        ("sglang", "fp4_mx_block16", "b200", Family.GQA, None),  # trtllm_mha by default
        ("sglang", "fp4_mx_block16", "h100-sxm", Family.MLA, "flashinfer / trtllm_mla"),
        ("sglang", "fp8_e4m3", "a100-sxm-80gb", Family.GQA, None),  # no start-up check in SGLang
        ("vllm", "fp8", "a100-sxm-80gb", Family.GQA, None),  # FLASHINFER stores fp8 on SM80
        ("vllm", "fp8", "t4", Family.GQA, "needs SM80+"),
        ("vllm", "fp8", "a100-sxm-80gb", Family.MLA, "needs SM89+"),  # TRITON_MLA
        ("vllm", "fp8_e4m3", "l40s", Family.MLA, None),  # SM89
        ("vllm", "fp8_e5m2", "h100-sxm", Family.MLA, "no vLLM MLA attention backend stores fp8_e5m2"),
        ("vllm", "fp8_inc", "h100-sxm", Family.GQA, "Intel Gaudi"),
    ],
)
def test_kv_dtype_rules(engine, dtype, gpu, family, refused):
    why = support.kv_dtype_refusal(
        engine=engine, kv_dtype=dtype, arch=support.arch_of(resolve_gpu(gpu)), attention=family
    )
    assert (why is None) if refused is None else (refused in (why or "")), why


def test_kv_dtype_backend_given_and_unknown_capability():
    h100 = support.arch_of(resolve_gpu("h100-sxm"))
    assert (
        support.kv_dtype_refusal(
            engine="sglang", kv_dtype="fp4_mx_block16", arch=h100, attention=Family.GQA, attention_backend="triton"
        )
        is None
    )
    unknown = support.Arch(name="some GPU", vendor="nvidia", major=None, minor=None, sm="")
    assert support.kv_dtype_refusal(engine="sglang", kv_dtype="nvfp4", arch=unknown, attention=Family.GQA) is None
    assert "not checked" in support.unchecked_note(engine="sglang", kv_dtype="nvfp4", arch=unknown)
    assert support.unchecked_note(engine="sglang", kv_dtype="bf16", arch=unknown) is None


def test_fit_with_a_kv_dtype_the_gpu_refuses():
    r = fit(Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", kv_cache_dtype="nvfp4"))
    assert not r.fits and r.reasons[0].startswith("--kv-cache-dtype nvfp4 needs Blackwell SM100 or SM120")
    assert r.kv_pool_tokens > 0  # still priced: the numbers say what it would hold
    assert fit(Deployment(model="Qwen/Qwen3-32B", gpu="b200", kv_cache_dtype="nvfp4")).fits


def test_every_reason_in_start_up_order():
    r = fit(
        Deployment(
            model="Qwen/Qwen3-8B",
            gpu="h100-sxm",
            context_length=131072,
            kv_cache_dtype="mxfp8",
            free_memory=40 * GiB,
            weight_memory=41 * GiB,
        )
    )
    assert [x.split(" ")[0] for x in r.reasons] == ["--kv-cache-dtype", "context_length", "the"]
    assert r.reasons[2].startswith("the weights (41.00 GiB per GPU) do not fit in the free memory (40.00 GiB)")
    assert r.verdict == "does not fit: " + r.reasons[0]


# ------------------------------------------------------------------------------------------------ context rules


def test_vllm_derived_max_model_len():
    assert support.vllm_derived_max_model_len({"max_position_embeddings": 40960}) == (40960, "max_position_embeddings")
    linear = {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 4.0}}
    assert support.vllm_derived_max_model_len(linear) == (16384, "max_position_embeddings")
    yarn = {"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "yarn", "factor": 32.0}}
    assert support.vllm_derived_max_model_len(yarn) == (131072, "max_position_embeddings")
    smallest = {"max_position_embeddings": 8192, "seq_length": 4096}
    assert support.vllm_derived_max_model_len(smallest) == (4096, "seq_length")
    assert support.vllm_derived_max_model_len({"model_max_length": 8192, "max_position_embeddings": 4096}) == (
        8192,
        "model_max_length",
    )
    assert support.vllm_derived_max_model_len({}) == (None, "")


def test_env_parsing_per_engine():
    env = support.env_allows_long_context
    assert env(engine="sglang", environ={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "yes"})
    assert not env(engine="sglang", environ={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "0"})
    assert env(engine="vllm", environ={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": " TRUE "})
    assert not env(engine="vllm", environ={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "yes"})
    assert not env(engine="vllm", environ={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})


# ------------------------------------------------------------------------------------------------ the request cap


def test_request_cap_sources():
    assert fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm")).max_running_requests_source == "derived"
    assert (
        fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", max_running_requests=64)).max_running_requests_source
        == "given"
    )
    assert (
        fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm")).max_running_requests_source
        == "engine default"
    )
    dsv4 = fit(Deployment(model="deepseek-ai/DeepSeek-V4.1-Flash", gpu="rtx-pro-6000-maxq", tp=8, ep=8))
    assert (dsv4.max_running_requests, dsv4.max_running_requests_source) == (256, "engine default")
    # given, then reduced by the engine (tokens // 2): derived
    assert cap_source(engine="sglang", requested=4096, resolved=100, attn_dp=1, family_default=None) == "derived"
    assert cap_source(engine="sglang", requested=16, resolved=2, attn_dp=8, family_default=None) == "given"


def test_the_cap_is_never_the_target():
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", max_running_requests=2048, context_length=32768))
    assert r.target_requests == 1 and r.fits and r.meets_target


def test_max_concurrency_is_an_integer_for_both_engines():
    s = fit(Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768))
    v = fit(Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768, engine="vllm"))
    assert type(s.max_concurrency) is int and type(v.max_concurrency) is int
    per = sum(g["blocks_per_request"] for g in v.groups)
    assert v.max_concurrency == min(v.num_blocks // per, v.max_running_requests) * v.dp
    assert v.max_concurrency == int(v.max_concurrency_per_rank)  # vLLM's printed float stays per rank


def test_a_model_without_gpu_names_the_default_gpu_in_the_assumptions():
    r = fit(Deployment(model="Qwen/Qwen3-8B"))
    assert r.assumptions[0].startswith("GPU NVIDIA RTX PRO 6000") and "no --gpu given" in r.assumptions[0]
    assert not any("kvplan's default GPU" in a for a in fit(Deployment()).assumptions)
    assert not any(
        "kvplan's default GPU" in a for a in fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm")).assumptions
    )


# ------------------------------------------------------------------------------------------------ judge (pure)


def _facts(**kw):
    base = dict(
        engine="sglang",
        context=32768,
        dp=1,
        refusals=(),
        memory_reason=None,
        concurrency=9,
        pool_concurrency=9,
        pool_tokens_total=320_398,
        cap=4096,
        cap_source="derived",
        target_requests=1,
        workload=None,
    )
    return Facts(**{**base, **kw})


def test_judge_words():
    v = judge(_facts())
    assert (v.fits, v.meets_target, v.reasons) == (True, True, ())
    assert v.verdict == "fits: 9 requests of 32,768 tokens at once; max_running_requests 4,096 (derived)"
    assert v.target_reason == "1 request of 32,768 tokens at once: room for 9"
    v = judge(_facts(target_requests=10))
    assert not v.meets_target and "need 327,680 tokens, the pool holds 320,398 (room for 9)" in v.target_reason
    v = judge(_facts(target_requests=5, concurrency=4, cap=4, cap_source="given"))
    assert v.target_reason == "5 requests of 32,768 tokens wanted, max_running_requests 4 allows 4"
    v = judge(_facts(refusals=("a", "b"), memory_reason="c"))
    assert (v.fits, v.reasons, v.verdict, v.meets_target) == (False, ("a", "b", "c"), "does not fit: a", False)
    v = judge(_facts(engine="vllm", cap=128, cap_source="given", dp=2))
    assert v.verdict.endswith("max_num_seqs 128 per DP rank (given)")


def test_models_resolve_for_the_rules():
    assert support.attention_kind(resolve_model("deepseek-ai/DeepSeek-V3")) == Family.MLA
    assert support.attention_kind(resolve_model("Qwen/Qwen3-Next-80B-A3B-Instruct")) == Family.GQA
