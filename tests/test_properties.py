"""Property tests: invariants of ``kvplan.planning.plan.fit`` over random but valid deployments.

Deployments are drawn from a handful of presets across the KV families (GQA, MoE-GQA, MLA, DSA and both
DeepSeek-V4 generations), every hardware preset, a TP size the model allows (it divides the attention
heads; for GQA also the KV heads or a multiple of them, SGLang's replication rule), measured mode with
random free / weight memory, and cold mode.  The invariants (docs/hardening.md):

* more free memory, a larger device, a larger ``mem_fraction_static`` or fewer weight bytes never give
  fewer pool tokens (SGLang: ``budget = A - P (1 - m)`` with ``A = P - W``, so ``budget = P m - W``;
  tokens = page_floor(budget / cell) is monotone in the budget); the same holds for vLLM's
  ``kv_cache_memory_bytes`` (blocks = budget // bytes_per_block);
* fp8 never gives fewer tokens than bf16 where the engine lets the dtype change the cell;
* SGLang: requests-at-once x context <= pool tokens (+ one page), tokens are whole pages;
* GQA: the per-GPU cell scales as 1/TP while TP divides the KV heads;
* the JSON output always validates back into :class:`kvplan.result.FitResult`.

The device-total property fixes ``--mem-fraction-static`` and ``--chunked-prefill-size``: SGLang's own
default heuristic is *not* monotone in the device size (the reserve jumps to 10 GiB above 60 GiB,
sgl-project/sglang python/sglang/srt/arg_groups/memory_hook.py ``handle_gpu_memory_settings``, v0.5.23),
see :func:`test_default_fraction_is_not_monotone_in_device_memory`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets
from kvplan.inputs.resolve import resolve_model
from kvplan.planning.plan import fit
from kvplan.result import FitResult
from kvplan.views import render
from tests.conftest import examples

GiB = 2**30

MODELS = (
    "meta-llama/Llama-3.1-8B",  # gqa, 32 heads / 8 KV heads
    "Qwen/Qwen3-32B",  # gqa, 64 / 8
    "Qwen/Qwen3-235B-A22B",  # gqa MoE, 64 / 4
    "deepseek-ai/DeepSeek-V3",  # mla
    "deepseek-ai/DeepSeek-V3.2",  # dsa
    "deepseek-ai/DeepSeek-V4-Flash",  # dsv4
    "deepseek-ai/DeepSeek-V4.1-Flash",  # dsv4 (V4.1)
)
GQA_MODELS = (
    "meta-llama/Llama-3.1-8B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-235B-A22B",
    "mistralai/Mistral-7B-v0.3",
    "Qwen/Qwen2.5-72B-Instruct",
    "meta-llama/Llama-3.1-70B",
)


@cache
def allowed_tp(model_id: str) -> tuple[int, ...]:
    """TP sizes SGLang accepts for the model: divide the attention heads; GQA KV heads split or replicate."""
    spec = resolve_model(model_id)
    heads = spec.num_attention_heads
    out = []
    for tp in (1, 2, 4, 8, 16):
        if heads % tp:
            continue
        if spec.family == "gqa":
            kv = spec.num_kv_heads
            if kv % tp and tp % kv:
                continue
        out.append(tp)
    return tuple(out)


GPUS = tuple(g.id for g in presets.all_gpus())


def test_model_ids_and_tp_tables_are_real():
    # the presets exist and each keeps at least TP1, TP2, TP4 (a broken table would make every property vacuous)
    for m in MODELS + GQA_MODELS:
        assert resolve_model(m).preset_id == m
        assert {1, 2, 4} <= set(allowed_tp(m)), m
    assert {resolve_model(m).family for m in MODELS} == {"gqa", "mla", "dsa", "dsv4"}
    assert len(GPUS) >= 20


@st.composite
def deployments(draw, *, measured: bool | None = None, models=MODELS):
    model = draw(st.sampled_from(models))
    tp = draw(st.sampled_from(allowed_tp(model)))
    gpu = draw(st.sampled_from(GPUS))
    kw = dict(
        model=model,
        gpu=gpu,
        tp=tp,
        context_length=draw(st.sampled_from([4096, 32768, 131072])),
        mem_fraction_static=draw(st.sampled_from([None, 0.6, 0.75, 0.85, 0.9])),
    )
    if measured if measured is not None else draw(st.booleans()):
        free = draw(st.integers(8 * GiB, 300 * GiB))
        kw["free_memory"] = free
        kw["weight_memory"] = draw(st.integers(GiB // 4, free))
        kw["mem_fraction_static"] = kw["mem_fraction_static"] or 0.85
    if draw(st.booleans()):
        kw["max_running_requests"] = draw(st.integers(1, 512))
    return Deployment(**kw)


def plan(dep: Deployment):
    """fit, or None when the deployment is a user error for this GPU (e.g. an fp8 KV cache the part lacks)."""
    try:
        return fit(dep)
    except InputError:
        return None


PROPS = settings(max_examples=examples(120))


@PROPS
@given(deployments(measured=True), st.integers(1, 64 * GiB))
def test_more_free_memory_never_fewer_tokens(dep, extra):
    a, b = plan(dep), plan(replace(dep, free_memory=dep.free_memory + extra))
    if a is None or b is None:
        return
    assert b.kv_budget_bytes >= a.kv_budget_bytes
    assert b.kv_pool_tokens >= a.kv_pool_tokens


@PROPS
@given(deployments(measured=False), st.integers(1, 64 * GiB), st.sampled_from([0.7, 0.8, 0.88, 0.93]))
def test_larger_device_never_fewer_tokens(dep, extra, mfs):
    dep = replace(
        dep,
        gpu_memory=int(presets.all_gpus()[GPUS.index(dep.gpu)].device_bytes),
        mem_fraction_static=mfs,
        chunked_prefill_size=8192,
    )
    a, b = plan(dep), plan(replace(dep, gpu_memory=dep.gpu_memory + extra))
    if a is None or b is None:
        return
    assert b.kv_pool_tokens >= a.kv_pool_tokens


@PROPS
@given(deployments(), st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_larger_mem_fraction_static_never_fewer_tokens(dep, f1, f2):
    lo, hi = sorted((round(f1, 3), round(f2, 3)))
    a, b = plan(replace(dep, mem_fraction_static=lo)), plan(replace(dep, mem_fraction_static=hi))
    if a is None or b is None:
        return
    assert b.kv_budget_bytes >= a.kv_budget_bytes
    assert b.kv_pool_tokens >= a.kv_pool_tokens


@PROPS
@given(deployments(measured=True), st.integers(1, 64 * GiB))
def test_fewer_weight_bytes_never_fewer_tokens(dep, less):
    lighter = replace(dep, weight_memory=max(1, dep.weight_memory - less))
    a, b = plan(dep), plan(lighter)
    if a is None or b is None:
        return
    assert b.kv_pool_tokens >= a.kv_pool_tokens


@PROPS
@given(deployments())
def test_fp8_never_fewer_tokens_than_bf16(dep):
    # "bfloat16": SGLang's DeepSeek-V4 check rejects the "bf16" spelling
    a, b = plan(replace(dep, kv_cache_dtype="bfloat16")), plan(replace(dep, kv_cache_dtype="fp8_e4m3"))
    if a is None or b is None:
        return
    if a.kv_cache_dtype == b.kv_cache_dtype:  # the engine ignores the dtype for this layout
        return
    assert b.kv_bytes_per_token <= a.kv_bytes_per_token
    assert b.kv_pool_tokens >= a.kv_pool_tokens


def test_fp8_halves_the_gqa_cell():
    # SGLang MHATokenToKVPool: 2 x layers x kv_heads/tp x head_dim x dtype bytes; Llama-3.1-8B TP1:
    # 2 x 32 x 8 x 128 x 2 = 131,072 B (bf16), 65,536 B (fp8)
    base = Deployment(
        model="meta-llama/Llama-3.1-8B",
        gpu="h100-sxm",
        free_memory=78 * GiB,
        weight_memory=15 * GiB,
        mem_fraction_static=0.88,
    )
    assert fit(replace(base, kv_cache_dtype="bf16")).kv_bytes_per_token == 131_072
    assert fit(replace(base, kv_cache_dtype="fp8_e4m3")).kv_bytes_per_token == 65_536


@settings(max_examples=examples(200))
@given(deployments())
def test_sglang_pool_invariants(dep):
    r = plan(dep)
    if r is None:
        return
    assert r.kv_pool_tokens >= 0
    assert r.kv_pool_tokens % r.page_size == 0, (r.kv_pool_tokens, r.page_size)
    # requests of the full context at once fit in the pool (per rank; x dp for the whole deployment)
    assert r.max_concurrency * r.context_length <= r.kv_pool_tokens_total + r.page_size * r.dp
    assert r.max_concurrency_per_rank <= r.max_running_requests
    assert r.max_context_length <= max(r.kv_pool_tokens, 1) and r.max_context_length < r.context_length
    if r.fits:
        assert r.kv_pool_tokens >= r.context_length and r.kv_budget_bytes > 0
    assert r.mode == ("measured" if dep.free_memory is not None else "cold")


@settings(max_examples=examples(150))
@given(deployments(models=GQA_MODELS), st.sampled_from(["bf16", "fp8_e4m3"]))
def test_gqa_cell_scales_as_one_over_tp(dep, dtype):
    spec = resolve_model(dep.model)
    kv = spec.num_kv_heads
    one = plan(replace(dep, tp=1, kv_cache_dtype=dtype))
    if one is None:
        return
    # 2 (K and V) x layers x kv_heads x head_dim x bytes at TP1
    assert one.kv_bytes_per_token == 2 * spec.num_layers * kv * spec.head_dim * (2 if dtype == "bf16" else 1)
    for tp in allowed_tp(dep.model):
        r = plan(replace(dep, tp=tp, kv_cache_dtype=dtype))
        if r is None:
            continue
        if kv % tp == 0:
            assert r.kv_bytes_per_token * tp == one.kv_bytes_per_token, (dep.model, tp)
        else:  # TP beyond the KV heads: one head per GPU, replicated
            assert r.kv_bytes_per_token * kv == one.kv_bytes_per_token, (dep.model, tp)


@settings(max_examples=examples(150))
@given(deployments(), st.sampled_from(["sglang", "vllm"]))
def test_json_round_trips_into_the_result_model(dep, engine):
    if engine == "vllm":
        dep = replace(dep, engine="vllm", mem_fraction_static=None, free_memory=None)
    r = plan(dep)
    if r is None:
        return
    data = json.loads(render.to_json(r))
    back = FitResult.model_validate(data)
    assert back.model_dump() == r.model_dump()
    assert json.loads(render.to_json(back)) == data


# ------------------------------------------------------------------------------------------------ vLLM


@st.composite
def vllm_inputs(draw):
    from kvplan.engines.vllm.planner import VllmInputs

    model = draw(st.sampled_from(MODELS))
    tp = draw(st.sampled_from(allowed_tp(model)))
    spec = resolve_model(model)
    return VllmInputs(
        config=spec.raw_config or spec.config,
        device_bytes=80 * GiB,
        tp_size=tp,
        kv_cache_dtype=draw(st.sampled_from(["auto", "fp8"])),
        max_model_len=draw(st.sampled_from([4096, 32768, 131072])),
        kv_cache_memory_bytes=draw(st.integers(GiB // 8, 200 * GiB)),
        quantization=spec.quantization,
    )


@settings(max_examples=examples(150))
@given(vllm_inputs(), st.integers(1, 64 * GiB))
def test_vllm_more_kv_memory_never_fewer_tokens(inp, extra):
    from kvplan.engines.vllm.planner import plan_vllm

    try:
        a = plan_vllm(inp)
    except InputError:
        return
    b = plan_vllm(replace(inp, kv_cache_memory_bytes=inp.kv_cache_memory_bytes + extra))
    assert b.num_blocks >= a.num_blocks
    assert b.gpu_kv_cache_tokens >= a.gpu_kv_cache_tokens
    assert b.max_concurrency >= a.max_concurrency
    assert a.fits <= b.fits  # fitting never stops with more memory
    # blocks = budget // bytes_per_block (the worker with the most bytes per block decides)
    assert a.num_blocks == inp.kv_cache_memory_bytes // a.bytes_per_block


def test_vllm_blocks_worked_example():
    # plan_vllm docstring: Llama-3.1-8B-class, bf16, TP1, block 16, 10 GiB -> 32 x 16 x 8 x 256 x 2 = 2,097,152 B/block,
    # 5,120 blocks, 81,920 tokens
    from kvplan.engines.vllm.planner import VllmInputs, plan_vllm

    spec = resolve_model("meta-llama/Llama-3.1-8B")
    p = plan_vllm(
        VllmInputs(config=spec.raw_config, device_bytes=80 * GiB, kv_cache_memory_bytes=10 * GiB, max_model_len=32768)
    )
    assert (p.bytes_per_block, p.num_blocks, p.gpu_kv_cache_tokens) == (2_097_152, 5_120, 81_920)


# ------------------------------------------------------------------------------------------------ engine facts


def test_default_fraction_is_not_monotone_in_device_memory():
    """SGLang's default heuristic reserves max(reserved, 10,240 MiB) only above 61,440 MiB, so the default
    mem_fraction_static drops at that edge: (61,440 - 5,120) / 61,440 = 0.917 but (61,441 - 10,240) / 61,441
    = 0.833 (TP1, chunked prefill 2048, no graphs). This is why the device-total property fixes the fraction."""
    from kvplan.engines.sglang.mem_query import MemQuery
    from kvplan.engines.sglang.rules import default_mem_fraction_static

    kw = dict(
        tp_size=1, pp_size=1, chunked_prefill_size=2048, cuda_graph_max_bs=None, is_mla=False, disable_cuda_graph=True
    )
    below = default_mem_fraction_static(MemQuery(gpu_memory_mib=61_440, **kw))  # type: ignore[arg-type]
    above = default_mem_fraction_static(MemQuery(gpu_memory_mib=61_441, **kw))  # type: ignore[arg-type]
    # reserved below the edge: 512 + 1.5 x 2048 + 1/8 x 1024 = 3,712 MiB -> round((61,440 - 3,712) / 61,440, 3)
    assert below == round((61_440 - 3_712) / 61_440, 3) == 0.94
    assert above == round((61_441 - 10_240) / 61_441, 3) == 0.833
    assert above < below


@pytest.mark.parametrize("model", MODELS)
def test_every_family_plans_in_both_modes(model):
    cold = fit(Deployment(model=model, gpu="b200", tp=8))
    warm = fit(
        Deployment(
            model=model, gpu="b200", tp=8, free_memory=170 * GiB, weight_memory=60 * GiB, mem_fraction_static=0.85
        )
    )
    assert cold.mode == "cold" and warm.mode == "measured"
    assert warm.kv_pool_tokens > 0 and cold.kv_pool_tokens > 0


# ------------------------------------------------------------------------------------------------ weights

_comp = st.sampled_from(
    [
        "model",
        "layers",
        "0",
        "1",
        "12",
        "self_attn",
        "q_proj",
        "mlp",
        "experts",
        "gate",
        "lm_head",
        "embed_tokens",
        "indexer",
        "k_norm",
    ]
)
_path = st.lists(_comp, min_size=1, max_size=7).map(".".join)
_pat = st.one_of(
    _path,
    st.sampled_from(
        ["re:.*q_proj", "re:model\\.layers\\.1\\.", "*.gate", "model.layers.*.mlp", "lm_head*", "[ml]*", ".x", "x.", ""]
    ),
)


@settings(max_examples=examples(400))
@given(_path, st.lists(_pat, max_size=12))
def test_indexed_ignore_patterns_agree_with_the_scan(path, pats):
    """weights._Patterns (a set of whole dotted runs) decides exactly like scanning every pattern."""
    from kvplan.weights.estimate import _ignored, _Patterns

    assert _ignored(path, _Patterns(pats)) == _ignored(path, list(pats))


# ------------------------------------------------------------------------------------------------ issue 11


@settings(max_examples=examples(120))
@given(
    deployments(),
    st.sampled_from(["sglang", "vllm"]),
    st.integers(1, 1 << 17),
    st.integers(0, 1 << 13),
    st.integers(1, 64),
)
def test_verdict_invariants(dep, engine, inp, out, n):
    """``meets_target`` implies ``fits``; ``fits`` is exactly "no reason"; the workload never runs more requests than
    the cap allows, nor more than the pool holds; a longer workload never runs more requests at once."""
    if engine == "vllm":
        dep = replace(dep, engine="vllm", mem_fraction_static=None, free_memory=None)
    r = plan(replace(dep, input_len=inp, output_len=out, target_requests=n))
    if r is None:
        return
    assert r.fits == (not r.reasons) and (r.verdict.startswith("fits: ") == r.fits)
    assert not r.meets_target or r.fits
    assert r.meets_target == (r.fits and r.workload_concurrency >= n)
    assert type(r.max_concurrency) is int and r.max_concurrency <= r.max_running_requests * r.dp
    assert r.workload_concurrency <= r.max_running_requests * r.dp
    assert (
        r.workload_concurrency_per_rank * r.workload_tokens_per_request <= max(r.kv_pool_tokens, 0)
        or r.engine == "vllm"
    )
    assert r.max_running_requests_source in ("given", "derived", "engine default")
    longer = plan(replace(dep, input_len=inp * 2, output_len=out, target_requests=n))
    if longer is not None:
        assert longer.workload_concurrency <= r.workload_concurrency
