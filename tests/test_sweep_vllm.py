"""vLLM on the sweep's vector path (issue 16): one formula for ``kvplan fit`` and the numpy grid.

* one row checked by hand (budget, blocks, printed tokens, concurrency, verdict words);
* the array-friendly formulas of :mod:`kvplan.engines.vllm.vector` equal the release's scalar ones (token lines, the
  binary search of the estimated maximum model length) and ``plan_vllm`` is :func:`vector.evaluate` of its point;
* a property test: for random grids of every family vLLM plans and several releases, every row of
  :func:`kvplan.planning.sweep_vllm.evaluate_group` (numbers, ``fits``, ``meets_target``, the workload columns, the
  reason and the verdict) equals ``fit`` of that point;
* once kvplan.planning.sweep routes vLLM groups here, the same through ``sweep()``.
No timing assertion (benchmarks/bench_sweep_vllm.py measures points/s).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.deployment import Deployment
from kvplan.engines.vllm import vector as VV
from kvplan.engines.vllm.releases import PoolCount
from kvplan.planning import sweep as S
from kvplan.planning import sweep_vllm as SV
from kvplan.planning.plan import fit
from kvplan.planning.sweep import run as sweep_run
from kvplan.planning.sweep import table as sweep_table
from kvplan.planning.verdict import judge
from tests.conftest import examples

GiB = 2**30
MiB = 2**20

#: one deployment per family (and family variant) vLLM plans
FAMILIES = {
    "gqa": dict(model="Qwen/Qwen3-8B", gpu="h100-sxm"),
    "gqa-pp2": dict(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, pp=2),
    "gqa-dp2": dict(model="Qwen/Qwen3-32B", gpu="l40s", dp=2),
    "gemma3-swa": dict(model="google/gemma-3-27b-it", gpu="h100-sxm", tp=2),
    "gpt-oss-swa": dict(model="openai/gpt-oss-120b", gpu="h100-sxm", tp=2),
    "gemma4-shared": dict(model="google/gemma-4-26B-A4B", gpu="h100-sxm"),
    "llama4-chunked": dict(model="meta-llama/Llama-4-Scout-17B-16E-Instruct", gpu="h200-sxm", tp=4),
    "mimo-swa": dict(model="XiaomiMiMo/MiMo-V2-Flash", gpu="h200-sxm", tp=4),
    "qwen3next-mamba": dict(model="Qwen/Qwen3-Next-80B-A3B-Instruct", gpu="h200-sxm", tp=2),
    "nemotron-mamba": dict(model="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", gpu="h100-sxm"),
    "kimi-linear": dict(model="moonshotai/Kimi-K3", gpu="b200", tp=8),
    "mla": dict(model="deepseek-ai/DeepSeek-V3", gpu="h200-sxm", tp=8),
    "dsa": dict(model="deepseek-ai/DeepSeek-V3.2", gpu="b200", tp=8),
    "dsv4": dict(model="deepseek-ai/DeepSeek-V4-Flash", gpu="b200", tp=4),
}
RELEASES = (None, "0.6.4", "0.8.5", "0.10.2", "0.21.0", "0.26.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
_CHECKED = (
    "kv_budget_bytes",
    "kv_pool_tokens",
    "max_running_requests",
    "max_concurrency",
    "max_context_length",
    "fits",
    "meets_target",
    "workload_tokens_per_request",
    "workload_concurrency",
)


def _group(base: Deployment, rep: Deployment) -> S.Group:
    g = S.Group(dep=base, labels={})
    assert SV.prepare_group(g, rep, fit(rep)), "the representative point must be reproduced"
    return g


def _grid(g: S.Group, points: list[dict]) -> dict:
    """evaluate_group over the points (one workload setting for all, as within one sweep group)."""
    n = len(points)
    col = {
        k: np.array([p.get(k, -1) for p in points], dtype=np.int64)
        for k in ("context_length", "max_running_requests", "target_requests", "input_len", "output_len")
    }
    util = np.array([p.get("util", np.nan) for p in points], dtype=np.float64)
    has_w = bool((col["input_len"] >= 0).all())
    return SV.evaluate_group(
        g,
        mem_fraction_static=None,
        gpu_memory_utilization=util,
        context_length=col["context_length"],
        max_running_requests=col["max_running_requests"],
        max_total_tokens=np.full(n, -1),
        target_requests=col["target_requests"],
        input_len=col["input_len"] if has_w else None,
        output_len=col["output_len"] if has_w else None,
    )


def _row(out: dict, p: dict, i: int) -> dict:
    """Row i as the sweep's row dict (nullable columns None when not set)."""
    d = {k: out[k][i].item() for k in out}
    d.update(
        {
            "context_length": p["context_length"],
            "target_requests": p["target_requests"],
            "requested_max_running_requests": p.get("max_running_requests", -1),
            "input_len": p.get("input_len", -1),
            "output_len": p.get("output_len", -1),
            "mem_fraction_static": p.get("util", float("nan")),
            "max_total_tokens": -1,
            "kv_bytes_per_token": 0.0,
        }
    )
    return d


def _compare(base: Deployment, g: S.Group, points: list[dict]) -> None:
    out = _grid(g, points)
    for i, p in enumerate(points):
        dep = replace(
            base,
            context_length=p["context_length"],
            target_requests=p["target_requests"],
            max_running_requests=None if p.get("max_running_requests", -1) < 0 else p["max_running_requests"],
            input_len=None if p.get("input_len", -1) < 0 else p["input_len"],
            output_len=None if p.get("input_len", -1) < 0 else p["output_len"],
            gpu_memory_utilization=p.get("util", base.gpu_memory_utilization),
        )
        f = fit(dep)
        want = (
            f.kv_budget_bytes,
            f.kv_pool_tokens,
            f.max_running_requests,
            int(f.max_concurrency),
            f.max_context_length,
            f.fits,
            f.meets_target,
            -1 if f.workload_tokens_per_request is None else f.workload_tokens_per_request,
            -1 if f.workload_concurrency is None else f.workload_concurrency,
        )
        got = tuple(out[k][i].item() for k in _CHECKED)
        assert got == want, (dep, got, want)
        d = _row(out, p, i)
        assert SV.vector_reason(g, [d[k] for k in S._IN_COLS + S._OUT_COLS], S._P) == f.target_reason, dep
        facts = {k: (None if k in S._NULLABLE and d[k] < 0 else d[k]) for k in d}
        v = judge(SV.row_facts(g, facts))
        assert (v.fits, v.verdict, v.target_reason, v.meets_target, list(v.reasons)) == (
            f.fits,
            f.verdict,
            f.target_reason,
            f.meets_target,
            f.reasons,
        ), dep


# ------------------------------------------------------------------------------------------------ by hand


def test_one_row_by_hand():
    """Qwen3-8B bf16 on an H100 (85,024,246,333 B), 16 GiB of weights, 0.33, util 0.9, max_model_len 32,768."""
    base = Deployment(
        model="Qwen/Qwen3-8B",
        gpu="h100-sxm",
        engine="vllm",
        engine_version="0.33.0",
        weight_memory=16 * GiB,
        gpu_memory_utilization=0.9,
        target_requests=40,
    )
    g = _group(base, replace(base, context_length=32768))
    requested = 76_521_821_700  # ceil(0.9 x 85,024,246,333 = 76,521,821,699.7)
    activation = 1024 * 151_936 * 39  # the sampler: min(B 8,192, S 1,024) x vocab x 39 B
    # CUDA graphs: (51 PIECEWISE + 51 FULL) graphs x 36 dense layers x 266 KiB (budget.vllm_default_graph_count)
    graph = (51 + 51) * 36 * 266 * 1024
    available = requested - 16 * GiB - 128 * MiB - activation - graph
    assert available == 52_139_824_644
    blocks = available // (16 * 147_456)  # 2,359,296 B per block -> 22,099 blocks
    assert blocks == 22_099
    out = _grid(
        g,
        [
            {"context_length": 32768, "target_requests": 40},
            {"context_length": 32768, "target_requests": 10},
            {"context_length": 32768, "target_requests": 4, "max_running_requests": 4},
        ],
    )
    # max_num_seqs 4: 4 sampler rows, so the forward pass is the peak: 8,192 x 2 x (3 x 4,096 + 3 x 12,288);
    # capture sizes up to min(2 x 4, 512) = 8: [1, 2, 4, 8] PIECEWISE + [1, 2, 4] FULL = 7 graphs
    forward = 8192 * 2 * (3 * 4096 + 3 * 12288)
    assert forward == 805_306_368
    graph4 = 7 * 36 * 266 * 1024
    assert out["kv_budget_bytes"].tolist() == [
        available,
        available,
        available + activation - forward + graph - graph4,
    ]
    assert out["kv_pool_tokens"][0] == int(22_099 / 2048 * 32768) == 353_584  # 10.790x of 32,768 tokens
    assert out["max_concurrency"].tolist() == [10, 10, 4]  # min(blocks // 2,048, max_num_seqs)
    assert out["max_running_requests"].tolist() == [1024, 1024, 4]
    assert out["fits"].all() and out["meets_target"].tolist() == [False, True, True]
    # a workload of 8,192 + 1,024 tokens = 576 blocks of 16 -> 22,099 // 576 = 38 at once
    w = _grid(g, [{"context_length": 32768, "target_requests": 30, "input_len": 8192, "output_len": 1024}])
    assert (w["workload_tokens_per_request"][0], w["workload_concurrency"][0], bool(w["meets_target"][0])) == (
        9216,
        38,
        True,
    )
    d = _row(out, {"context_length": 32768, "target_requests": 40}, 0)
    assert (
        SV.vector_reason(g, [d[k] for k in S._IN_COLS + S._OUT_COLS], S._P)
        == "40 requests of 32,768 tokens need 1,310,720 tokens, the pool holds 353,584 (room for 10)"
    )


def test_refusal_words_by_hand():
    """A max_model_len vLLM refuses: the estimated maximum model length is the longest that fits."""
    base = Deployment(
        model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm", kv_cache_memory_bytes=GiB, allow_long_context=True
    )
    g = _group(base, replace(base, context_length=4096))
    out = _grid(g, [{"context_length": 131072, "target_requests": 1}])
    # 1 GiB // 2,359,296 = 455 blocks; one block is held back -> 454 blocks = 7,264 tokens
    assert (bool(out["fits"][0]), out["max_context_length"][0], out["max_concurrency"][0]) == (False, 7264, 0)
    _compare(base, g, [{"context_length": c, "target_requests": 1} for c in (4096, 7264, 7265, 131072)])


# ------------------------------------------------------------------------------------------------ formulas


@given(
    nb=st.integers(0, 10**7),
    per=st.integers(1, 10**5),
    length=st.integers(1, 2**22),
    groups=st.integers(1, 9),
    bs=st.sampled_from([16, 64, 256, 544]),
)
@settings(max_examples=examples(200), deadline=None)
def test_token_lines_match_the_release_functions(nb, per, length, groups, bs):
    for line, fn in VV.TOKEN_LINES.items():
        want = line(
            PoolCount(
                num_blocks=nb,
                blocks_per_request=per,
                max_model_len=length,
                block_size=bs,
                num_groups=groups,
                min_group_block_size=bs,
            )
        )
        assert fn(nb, per, length, bs, groups, bs) == want
        t, c = fn(np.array([nb]), np.array([per]), np.array([length]), bs, groups, bs)
        assert (int(t[0]), float(c[0])) == (want[0], want[1])


@given(
    check=st.integers(-(10**9), 10**12),
    max_len=st.integers(1, 2**21),
    bs=st.sampled_from([16, 64, 256]),
    window=st.integers(1, 8192),
    inflight=st.integers(0, 32768),
)
@settings(max_examples=examples(200), deadline=None)
def test_estimate_is_the_same_binary_search_on_arrays(check, max_len, bs, window, inflight):
    groups = ((VV.GroupShape("full", bs), 1), (VV.GroupShape("swa", bs, window), 3))

    def blocks(x):
        return VV.blocks_for_length(groups, length=x, in_flight=inflight, mamba_blocks=2)

    one = VV.estimate_max_len(bytes_per_block=1 << 20, check=check, max_len=max_len, blocks_for=blocks)
    arr = VV.estimate_max_len(
        bytes_per_block=1 << 20, check=np.array([check, check]), max_len=np.array([max_len, max_len]), blocks_for=blocks
    )
    assert arr.tolist() == [one, one]
    # every group full attention: the closed form is the binary search's answer
    k = 1 + window % 7
    full = ((VV.GroupShape("full", bs), k),)
    st_linear = VV.blocks_for_length(full, length=1, in_flight=0, mamba_blocks=0)
    assert st_linear == k

    def full_blocks(x):
        return VV.blocks_for_length(full, length=x, in_flight=inflight, mamba_blocks=2)

    searched = VV.estimate_max_len(bytes_per_block=1 << 20, check=check, max_len=max_len, blocks_for=full_blocks)
    assert (
        VV.estimate_max_len(bytes_per_block=1 << 20, check=check, max_len=max_len, blocks_for=full_blocks, full=(k, bs))
        == searched
    )
    assert VV.estimate_max_len(
        bytes_per_block=1 << 20,
        check=np.array([check]),
        max_len=np.array([max_len]),
        blocks_for=full_blocks,
        full=(k, bs),
    ).tolist() == [searched]
    # full + sliding groups: the search between the two bounds finds the same length
    rest = blocks(max_len) - 1 * VV.cdiv(max_len, bs)
    assert (
        VV.estimate_max_len(
            bytes_per_block=1 << 20, check=check, max_len=max_len, blocks_for=blocks, full=(1, bs), rest_at_max=rest
        )
        == one
    )
    assert VV.estimate_max_len(
        bytes_per_block=1 << 20,
        check=np.array([check]),
        max_len=np.array([max_len]),
        blocks_for=blocks,
        full=(1, bs),
        rest_at_max=np.array([rest]),
    ).tolist() == [one]


def test_plan_vllm_is_evaluate_of_its_point():
    from kvplan.engines.vllm.adapter import _inputs
    from kvplan.engines.vllm.planner import plan_vllm, vllm_static
    from kvplan.inputs.resolve import resolve_gpu, resolve_model

    dep = Deployment(model="openai/gpt-oss-120b", gpu="h100-sxm", engine="vllm", tp=2, context_length=65536)
    model, gpu = resolve_model(dep.model), resolve_gpu(dep.gpu)
    inp = _inputs(dep, model, gpu, gpu.cuda_total_bytes)
    p, s = plan_vllm(inp), vllm_static(inp)
    pt = VV.evaluate(s, utilization=s.utilization, max_model_len=65536)
    assert (p.available_kv_bytes, p.num_blocks, p.gpu_kv_cache_tokens, p.blocks_per_request, p.fits) == (
        pt.available,
        pt.num_blocks,
        pt.tokens,
        pt.per_request,
        pt.fits,
    )
    assert "evaluate" in inspect.getsource(plan_vllm)


# ------------------------------------------------------------------------------------------------ property

_CTX = st.sampled_from([2048, 4096, 32768, 40961, 131072, 262144, 1048576])
_POINT = st.fixed_dictionaries(
    {
        "context_length": _CTX,
        "target_requests": st.sampled_from([1, 3, 9, 64]),
        "max_running_requests": st.sampled_from([-1, -1, 1, 7, 300]),
    }
)


@given(
    family=st.sampled_from(sorted(FAMILIES)),
    version=st.sampled_from(RELEASES),
    data=st.data(),
    allow=st.booleans(),
    mode=st.sampled_from(["cold", "util", "measured", "kv_bytes"]),
    workload=st.sampled_from([None, (8192, 1024), (200_000, 0), (100, 30)]),
)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_rows_equal_fit_for_every_family(family, version, data, allow, mode, workload):
    kw = dict(FAMILIES[family])
    if mode == "util":
        kw["gpu_memory_utilization"] = data.draw(st.sampled_from([0.5, 0.75, 0.95]))
    elif mode == "measured":
        kw["weight_memory"] = data.draw(st.sampled_from([4, 40, 300])) * GiB
    elif mode == "kv_bytes":
        kw["kv_cache_memory_bytes"] = data.draw(st.sampled_from([1, 20, 90])) * GiB
    base = Deployment(engine="vllm", engine_version=version, allow_long_context=allow, **kw)
    try:
        fit(replace(base, context_length=4096))
    except Exception as exc:  # a model this release cannot serve (Gemma-4 before 0.12): fit refuses it too
        from kvplan.errors import InputError

        assert isinstance(exc, InputError)
        return
    points = data.draw(st.lists(_POINT, min_size=1, max_size=6))
    if workload is not None:
        points = [{**p, "input_len": workload[0], "output_len": workload[1]} for p in points]
    g = _group(base, replace(base, context_length=points[0]["context_length"]))
    _compare(base, g, points)


def test_the_utilisation_column():
    """NaN: the group's utilisation; a value: that row's gpu_memory_utilization."""
    base = Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", engine="vllm", tp=2)
    g = _group(base, replace(base, context_length=32768))
    points = [
        {"context_length": c, "target_requests": 4, "util": u}
        for c, u in itertools.product([8192, 32768], [0.6, 0.8, 0.9, 0.95])
    ]
    _compare(base, g, points)


# ------------------------------------------------------------------------------------------------ via sweep()


def _wired() -> bool:
    from kvplan.planning.sweep import groups

    return "kvplan.planning.sweep.vllm" in inspect.getsource(groups)


@pytest.mark.skipif(not _wired(), reason="kvplan.planning.sweep does not route vLLM groups here yet")
@pytest.mark.parametrize("family", ["gqa", "gpt-oss-swa", "qwen3next-mamba", "mla", "dsv4"])
def test_sweep_rows_equal_fit(family):
    base = Deployment(engine="vllm", allow_long_context=True, **FAMILIES[family])
    t = S.sweep(base, {"context_length": [4096, 131072], "max_running_requests": [8, 1024], "target_requests": [1, 12]})
    assert {g.method for g in t.groups} == {"vector"}
    for i in range(len(t)):
        r, f = t.row(i), fit(t.deployment(i))
        assert (
            r["kv_budget_bytes"],
            r["kv_pool_tokens"],
            r["max_running_requests"],
            r["max_concurrency"],
            r["max_context_length"],
            r["fits"],
            r["meets_target"],
            r["verdict"],
            r["reason"],
        ) == (
            f.kv_budget_bytes,
            f.kv_pool_tokens,
            f.max_running_requests,
            int(f.max_concurrency),
            f.max_context_length,
            f.fits,
            f.meets_target,
            f.verdict,
            f.target_reason,
        )


def test_a_mem_fraction_static_axis_keeps_vllm_groups_vector():
    """vLLM ignores SGLang's --mem-fraction-static (fit too): the group stays vector, its column is NaN (empty)."""
    base = Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm")
    t = S.sweep(base, {"mem_fraction_static": [0.8, 0.9], "context_length": [8192, 32768]})
    assert [g.method for g in t.groups] == ["vector"]
    for i in range(len(t)):
        r, f = t.row(i), fit(t.deployment(i))
        assert r["mem_fraction_static"] != r["mem_fraction_static"] and f.mem_fraction_static is None
        assert (r["kv_budget_bytes"], r["kv_pool_tokens"], r["max_concurrency"], r["reason"]) == (
            f.kv_budget_bytes,
            f.kv_pool_tokens,
            int(f.max_concurrency),
            f.target_reason,
        )
    assert ",,8192," in t.to_csv().splitlines()[1]


def test_gpu_memory_utilization_as_a_numeric_axis(monkeypatch):
    """With the registry's ``sweep="numeric"`` for --gpu-memory-utilization (kvplan/flags.py), one group of 12
    vectorised rows, each equal to fit of its point (the registry entry is patched in here: it is still a group axis
    there, tests/test_flags.py pins the numeric fields)."""
    monkeypatch.setitem(S.AXES, "gpu_memory_utilization", replace(S.AXES["gpu_memory_utilization"], numeric=True))
    for mod in (sweep_run, sweep_table):  # the modules of the sweep package that read it
        monkeypatch.setattr(mod, "NUMERIC_FIELDS", tuple(f for f, a in S.AXES.items() if a.numeric))
    base = Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", engine="vllm", tp=2)
    t = S.sweep(
        base, {"gpu_memory_utilization": [0.5, 0.7, 0.9], "context_length": [8192, 32768], "target_requests": [1, 30]}
    )
    assert [g.method for g in t.groups] == ["vector"] and len(t) == 12
    for i in range(len(t)):
        r, f = t.row(i), fit(t.deployment(i))
        assert t.deployment(i).gpu_memory_utilization == [0.5, 0.7, 0.9][i // 4]
        assert (
            r["kv_budget_bytes"],
            r["kv_pool_tokens"],
            r["max_concurrency"],
            r["fits"],
            r["meets_target"],
            r["verdict"],
            r["reason"],
        ) == (
            f.kv_budget_bytes,
            f.kv_pool_tokens,
            int(f.max_concurrency),
            f.fits,
            f.meets_target,
            f.verdict,
            f.target_reason,
        )
    # a mixed sweep: SGLang ignores the flag (fit too), one SGLang group per engine
    mixed = S.sweep(
        replace(base, engine=None, model="Qwen/Qwen3-8B", tp=1),
        {"engine": ["sglang", "vllm"], "gpu_memory_utilization": [0.6, 0.9], "context_length": [32768]},
    )
    assert len(mixed) == 4 and len(mixed.groups) == 2
    for i in range(len(mixed)):
        assert mixed.row(i)["kv_pool_tokens"] == fit(mixed.deployment(i)).kv_pool_tokens


_WRITER_CASES = [
    (
        dict(model="Qwen/Qwen3-8B", gpu="h100-sxm"),
        {
            "context_length": [4096, 32768, 131072, 1048576],
            "max_running_requests": [1, 8, 1024],
            "target_requests": [1, 16, 64],
        },
    ),
    (
        dict(model="Qwen/Qwen3-8B", gpu="h100-sxm", dp=2, allow_long_context=True),
        {
            "context_length": [4096, 32768, 131072, 1048576],
            "max_running_requests": [1, 8, 300],
            "target_requests": [1, 3, 9, 64],
        },
    ),
    (
        dict(model="openai/gpt-oss-120b", gpu="h100-sxm", tp=2),
        {
            "context_length": [4096, 32768, 131072],
            "target_requests": [1, 16, 64],
            "input_len": [1000, 8192, 200000],
            "output_len": [0, 1024],
        },
    ),
    (
        dict(model="Qwen/Qwen3-8B", gpu="h100-sxm", kv_cache_memory_bytes=GiB, allow_long_context=True),
        {"context_length": [4096, 7264, 7265, 131072], "target_requests": [1, 2]},
    ),
    (
        dict(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, engine_version="0.10.2"),
        {
            "context_length": [8192, 40960],
            "target_requests": [1, 30],
            "max_running_requests": [4, 64],
            "input_len": [8192],
            "output_len": [1024],
        },
    ),
]


@pytest.mark.parametrize("kw, axes", _WRITER_CASES)
def test_writers_reasons_are_the_verdicts(kw, axes):
    """The CSV / JSON-lines writers' reasons (templates filled per row, sweep_vllm.vector_reasons) are the words
    judge() gives each row (SweepTable.rows), byte for byte."""
    import csv
    import io
    import json

    t = S.sweep(Deployment(engine="vllm", **kw), axes)
    assert {g.method for g in t.groups} == {"vector"}
    want = [r["reason"] for r in t.rows()]
    assert [row["reason"] for row in csv.DictReader(io.StringIO(t.to_csv()))] == want
    assert [json.loads(line)["reason"] for line in t.to_jsonl().splitlines()] == want
    assert t.write_csv(io.StringIO(), chunk_rows=7) == len(t)
    small = io.StringIO()
    t.write_csv(small, chunk_rows=7)
    assert small.getvalue() == t.to_csv()


def test_mamba_cache_mode_all_vector_equals_fit():
    """Mamba cache mode "all" (prefix caching on, Nemotron-3-Nano, 0.25.1): the Mamba groups grow with L like full
    attention (``cdiv(L, 2,176)`` each), so the vectorised point over lengths equals plan_vllm at each length
    (tests/test_vllm_rules.py derives the 80 blocks at 32,768 by hand: 5 groups x 16)."""
    from kvplan.engines.vllm.planner import VllmInputs, plan_vllm, vllm_static
    from kvplan.engines.vllm.vector import evaluate
    from tests.test_vllm_rules import _hf

    inp = VllmInputs(
        config=_hf("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
        device_bytes=120 * GiB,
        engine_version="0.25.1",
        enable_prefix_caching=True,
        max_num_batched_tokens=8192,
        kv_cache_memory_bytes=10 * GiB,
        max_model_len=32768,
    )
    static = vllm_static(inp)
    lengths = np.array([2048, 2176, 2177, 32768, 262144], dtype=np.int64)
    pt = evaluate(static, utilization=0.9, max_model_len=lengths)
    per = np.broadcast_to(pt.per_request, lengths.shape)
    blocks = np.broadcast_to(pt.num_blocks, lengths.shape)
    for i, n in enumerate(lengths.tolist()):
        p = plan_vllm(replace(inp, max_model_len=n))
        assert (int(per[i]), int(blocks[i])) == (p.blocks_per_request, p.num_blocks), n
    assert per.tolist()[:4] == [5, 5, 10, 80]  # 5 groups x cdiv(L, 2,176)


@pytest.mark.parametrize("version", ["0.27.0", "0.31.0", "0.32.0", "0.34.0"])
@pytest.mark.parametrize("prefix_caching", [None, True, False])
def test_prefix_caching_and_checkpoint_block_vector_equals_fit(version, prefix_caching):
    """Issue 12: --enable-prefix-caching (None = the release's default) and the Mamba2 prefill-checkpoint block of
    0.32+ (3 blocks per Mamba group in "align") reach the vector path: each row equals fit of its point."""
    base = Deployment(
        engine="vllm", engine_version=version, enable_prefix_caching=prefix_caching, **FAMILIES["nemotron-mamba"]
    )
    g = _group(base, replace(base, context_length=32768))
    points = [{"context_length": c, "target_requests": t} for c in (4096, 32768, 262144) for t in (1, 40)]
    _compare(base, g, points)


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.34.0"])
def test_dsv4_packed_sliding_states_vector_equals_fit(version):
    """Issue 12: the 0.30 row's packed sliding-window state buckets (DeepSeek-V4) in the vector path."""
    base = Deployment(engine="vllm", engine_version=version, allow_long_context=True, **FAMILIES["dsv4"])
    g = _group(base, replace(base, context_length=131072))
    _compare(base, g, [{"context_length": c, "target_requests": 4} for c in (4096, 131072, 1048576)])


@pytest.mark.parametrize("arch,per_request", [("Mamba2ForCausalLM", 1), ("NemotronHForCausalLM", 3)])
def test_attention_free_prefix_caching_default_vector_equals_fit(arch, per_request):
    """Issue 12: an attention-free class keeps prefix caching off by default in 0.34 (Mamba mode "none", 1 block
    per request; the same layers as an ``IsHybrid`` class: "align" + the Mamba2 checkpoint, 3), and the vectorised
    point over lengths equals plan_vllm at each length (tests/test_vllm_rules.py has the hand numbers)."""
    from kvplan.engines.vllm.planner import VllmInputs, plan_vllm, vllm_static
    from kvplan.engines.vllm.vector import evaluate
    from tests.test_vllm_rules import _attention_free

    inp = VllmInputs(
        config=_attention_free(arch),
        device_bytes=80 * GiB,
        engine_version="0.34.0",
        max_num_batched_tokens=8192,
        kv_cache_memory_bytes=10 * GiB,
        max_model_len=32768,
    )
    static = vllm_static(inp)
    lengths = np.array([2048, 32768, 262144], dtype=np.int64)
    pt = evaluate(static, utilization=0.9, max_model_len=lengths)
    per = np.broadcast_to(pt.per_request, lengths.shape)
    blocks = np.broadcast_to(pt.num_blocks, lengths.shape)
    for i, n in enumerate(lengths.tolist()):
        p = plan_vllm(replace(inp, max_model_len=n))
        assert (int(per[i]), int(blocks[i])) == (p.blocks_per_request, p.num_blocks), n
        assert p.blocks_per_request == per_request
