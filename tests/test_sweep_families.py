"""Every SGLang family is vectorised in ``kvplan sweep`` and its rows are ``fit``'s (issue 16).

* property (hypothesis): random grids for every SGLang family -- GQA, MLA, DSA, hybrid sliding window (ratio and
  request-cap modes), Mamba / linear hybrids and DeepSeek-V4 (the default DeepSeek-V4.1-Flash among them), with PP
  stages, DP attention, speculative drafts, ``--max-total-tokens``, request caps, workloads and budgets small enough
  that the planner refuses the point -- give rows equal to ``fit`` of the same point on every output column, the
  reason, the verdict, the reasons and the one-line error;
* realistic grids of the hybrid and DeepSeek-V4 families are evaluated by the vector path (``method == "vector"``,
  nothing falls back to one ``fit`` per point);
* the family formulas are the scalar planner's: the same function answers for an int and for an array.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning import sweep as S
from kvplan.planning.plan import fit
from tests.conftest import examples

#: (model, group settings) per family: presets of configs/models (their ``family``) and the default model
FAMILY_BASES = {
    "gqa": [("Qwen/Qwen3-8B", dict(gpu="h100-sxm")), ("meta-llama/Llama-3.1-70B", dict(gpu="h200-sxm", tp=4, pp=2))],
    "mla": [("deepseek-ai/DeepSeek-V3", dict(gpu="h200-sxm", tp=8))],
    "dsa": [("deepseek-ai/DeepSeek-V3.2", dict(gpu="b200", tp=8))],
    "hybrid_swa": [
        ("openai/gpt-oss-120b", dict(gpu="h100-sxm")),
        ("openai/gpt-oss-120b", dict(gpu="h100-sxm", disable_radix_cache=True)),
        ("google/gemma-4-26B-A4B", dict(gpu="h100-sxm", tp=2, pp=2)),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", dict(gpu="h100-sxm", tp=4)),
        ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4)),
        (
            "XiaomiMiMo/MiMo-V2-Flash",
            dict(gpu="h200-sxm", tp=4, speculative_algorithm="EAGLE", disable_radix_cache=True),
        ),
        (
            "openai/gpt-oss-120b",
            dict(
                gpu="h100-sxm",
                tp=2,
                dp=2,
                enable_dp_attention=True,
                speculative_algorithm="EAGLE",
                speculative_num_draft_tokens=4,
            ),
        ),
        # older releases (issue 12): 0.5.3 has no SWA pool for GPT-OSS (one pool over all layers),
        # 0.5.8 splits by layer count, 0.5.8 on a B200 turns the pool off (trtllm_mha)
        ("openai/gpt-oss-120b", dict(gpu="h100-sxm", engine_version="0.5.3")),
        ("openai/gpt-oss-120b", dict(gpu="h100-sxm", engine_version="0.5.8")),
        ("openai/gpt-oss-120b", dict(gpu="h100-sxm", tp=2, pp=2, engine_version="0.5.8")),
        ("openai/gpt-oss-120b", dict(gpu="b200", engine_version="0.5.8")),
        # 0.5.9 two-step byte split; 0.5.16: no request-cap mode, no SWA-pool check, draft layers as full
        ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4, engine_version="0.5.9")),
        ("openai/gpt-oss-120b", dict(gpu="h100-sxm", disable_radix_cache=True, engine_version="0.5.16")),
        (
            "XiaomiMiMo/MiMo-V2-Flash",
            dict(gpu="h200-sxm", tp=4, speculative_algorithm="EAGLE", engine_version="0.5.16"),
        ),
    ],
    "hybrid_mamba": [
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", dict(gpu="h200-sxm", tp=2)),
        ("Qwen/Qwen3.5-27B", dict(gpu="h100-sxm", disable_radix_cache=True)),
        ("Qwen/Qwen3.5-27B", dict(gpu="h100-sxm", pp=2)),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", dict(gpu="h200-sxm", tp=2, max_mamba_cache_size=200)),
        (
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            dict(
                gpu="h200-sxm",
                tp=2,
                speculative_algorithm="NEXTN",
                speculative_num_draft_tokens=3,
                max_running_requests=48,
            ),
        ),
        # older releases (issue 12): 0.5.3 fixed slots, 0.5.5 the 0.5.4 ratio, 0.5.9 no padding slot
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", dict(gpu="h200-sxm", tp=2, engine_version="0.5.3")),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", dict(gpu="h200-sxm", tp=2, engine_version="0.5.5")),
        (
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            dict(gpu="h200-sxm", tp=2, engine_version="0.5.9", disable_radix_cache=True),
        ),
    ],
    "dsv4": [
        ("deepseek-ai/DeepSeek-V4.1-Flash", {}),
        ("deepseek-ai/DeepSeek-V4.1-Flash", dict(gpu="b200", tp=8, dp=8, enable_dp_attention=True)),
        ("deepseek-ai/DeepSeek-V4-Flash", dict(gpu="h200-sxm", tp=8)),
        ("deepseek-ai/DeepSeek-V4-Pro", dict(gpu="h200-sxm", tp=8, pp=2)),
        ("deepseek-ai/DeepSeek-V4.1-Flash", dict(speculative_algorithm="DSPARK")),
        ("deepseek-ai/DeepSeek-V4-Flash", dict(gpu="h200-sxm", tp=8, swa_full_tokens_ratio=0.3)),
    ],
}
BASES = [(fam, m, kw) for fam, items in FAMILY_BASES.items() for m, kw in items]


def _nullable(v):
    return None if v is None else v


def assert_rows_are_fit(t: S.SweepTable) -> None:
    """Every row of ``t`` equals ``fit`` of its deployment (numbers, words, error)."""
    for i in range(len(t)):
        r = t.row(i)
        try:
            f = fit(t.deployment(i), raise_refusals=True)  # an engine refusal: the sweep row keeps the error
        except InputError as exc:
            g = t.groups[int(t._at(i)["gid"][0])]
            assert r["error"] == (g.error or exc.one_line()), (i, r)
            assert not r["fits"] and not r["meets_target"]
            continue
        assert r["error"] == "", (i, r["error"])  # an invalid group: no tried point planned, and neither does this
        got = {k: r[k] for k in S._OUT_COLS}
        want = {k: _nullable(getattr(f, k)) for k in S._OUT_COLS}
        want["max_concurrency"] = int(f.max_concurrency)
        assert got == want, (i, t.deployment(i))
        assert (r["verdict"], r["reason"], r["reasons"]) == (f.verdict, f.target_reason, list(f.reasons)), i
        assert r["mem_fraction_static"] == f.mem_fraction_static


def _sorted_unique(xs):
    return sorted(set(xs))


grids = st.fixed_dictionaries(
    {
        "mem_fraction_static": st.lists(
            st.sampled_from([0.05, 0.2, 0.35, 0.5, 0.62, 0.7, 0.78, 0.85, 0.93]), min_size=1, max_size=3
        ).map(_sorted_unique),
        "context_length": st.lists(
            st.sampled_from([1024, 4096, 32768, 131072, 262144, 1048576]), min_size=1, max_size=2
        ).map(_sorted_unique),
        "target_requests": st.lists(st.integers(1, 300), min_size=1, max_size=2).map(_sorted_unique),
    },
    optional={
        "max_running_requests": st.lists(st.sampled_from([1, 3, 16, 100, 512, 5000]), min_size=1, max_size=2).map(
            _sorted_unique
        ),
        "max_total_tokens": st.lists(st.sampled_from([600, 5000, 100_000, 3_000_000]), min_size=1, max_size=2).map(
            _sorted_unique
        ),
        "input_len": st.lists(st.sampled_from([100, 4000, 60000]), min_size=1, max_size=2).map(_sorted_unique),
    },
)


@pytest.mark.parametrize(
    "fam,model,kw", BASES, ids=[f"{f}-{m.rsplit('/')[-1]}-{i}" for i, (f, m, _) in enumerate(BASES)]
)
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes=grids, out=st.sampled_from([None, 0, 1000]))
def test_sweep_rows_are_fit(fam, model, kw, axes, out):
    axes = dict(axes)
    if out is not None and "input_len" in axes:
        axes["output_len"] = [out]
    t = S.sweep(Deployment(model=model, **kw), axes)
    assert all(g.family == fam and g.method == "vector" for g in t.groups if not g.error), [
        (g.family, g.method, g.note) for g in t.groups
    ]
    assert_rows_are_fit(t)


REALISTIC = [
    (
        Deployment(),
        {
            "mem_fraction_static": [0.6, 0.65, 0.7, 0.72, 0.75, 0.8, 0.85],
            "context_length": [131072, 262144, 524288, 1048576],
            "max_running_requests": [8, 16, 32, 64],
            "target_requests": [1, 4, 16],
        },
    ),
    (
        Deployment(model="openai/gpt-oss-120b"),
        {
            "gpu": ["h100-sxm", "h200-sxm"],
            "tp": [1, 2, 4],
            "mem_fraction_static": [0.7, 0.8, 0.9],
            "context_length": [8192, 32768, 131072],
            "input_len": [2000, 8000],
        },
    ),
    (
        Deployment(model="google/gemma-4-26B-A4B", gpu="h100-sxm"),
        {"tp": [1, 2], "mem_fraction_static": [0.8, 0.9], "context_length": [32768, 262144]},
    ),
    (
        Deployment(model="Qwen/Qwen3-Next-80B-A3B-Instruct", gpu="h200-sxm"),
        {
            "tp": [2, 4],
            "mem_fraction_static": [0.7, 0.8, 0.9],
            "context_length": [32768, 262144],
            "max_running_requests": [64, 256],
        },
    ),
    (
        Deployment(model="deepseek-ai/DeepSeek-V4-Pro", gpu="b200", tp=8),
        {"mem_fraction_static": [0.8, 0.9], "context_length": [65536, 1048576], "target_requests": [1, 8]},
    ),
]


@pytest.mark.parametrize("base,axes", REALISTIC, ids=[b.model or "default" for b, _ in REALISTIC])
def test_hybrid_and_dsv4_grids_are_vectorised(base, axes):
    t = S.sweep(base, axes)
    assert t.groups and all(g.method == "vector" for g in t.groups), [(g.method, g.error) for g in t.groups]
    assert not t.row_text  # nothing was evaluated one fit() per point
    rng = np.random.default_rng(16)
    for i in rng.choice(len(t), size=min(len(t), 12), replace=False):
        r, f = t.row(int(i)), fit(t.deployment(int(i)))
        assert (r["kv_pool_tokens"], r["max_concurrency"], r["reason"]) == (
            f.kv_pool_tokens,
            f.max_concurrency,
            f.target_reason,
        )


def test_refused_points_carry_fits_error_once_per_pool_input():
    """A budget the planner refuses (the Mamba state carve) gives fit's one-line error on the vector path, asked
    once per distinct pool input whatever the target / workload axes."""
    t = S.sweep(
        Deployment(model="Qwen/Qwen3.5-27B", gpu="h100-sxm", disable_radix_cache=True),
        {"mem_fraction_static": [0.7, 0.9], "max_running_requests": [8, 100000], "target_requests": [1, 2, 3, 4]},
    )
    assert [g.method for g in t.groups] == ["vector"]
    errors = [t.row(i)["error"] for i in range(len(t))]
    assert sum(bool(e) for e in errors) == 8 and len(t.blocks[0].refused) == 2
    assert_rows_are_fit(t)
    assert "point" in t.to_csv() and t.n_meet == len(t) - sum(not t.row(i)["meets_target"] for i in range(len(t)))


def test_one_formula_for_ints_and_arrays():
    from kvplan.engines.sglang.pools import mamba, swa

    budgets = np.array([1 << 30, 5 << 30, 47_878_147_932], dtype=np.int64)
    full = swa.ratio_full_tokens(budget_bytes=budgets, cell=66_355.2, page_size=1)
    assert full.tolist() == [swa.ratio_full_tokens(budget_bytes=int(b), cell=66_355.2, page_size=1) for b in budgets]
    assert swa.ratio_full_tokens(budget_bytes=12 * 2**30, cell=66_355.2, page_size=1) == 194_180
    kw = dict(
        mode="ratio",
        per_request_bytes=38_633_472,
        slots_per_request=5,
        mamba_full_memory_ratio=0.9,
        explicit_slots=0,
        mrr_per_rank=0,
        draft_tokens=0,
    )
    K, _, kv = mamba.mamba_state_slots(budget_bytes=budgets, **kw)
    assert list(zip(K.tolist(), kv.tolist(), strict=True)) == [
        tuple(x for i, x in enumerate(mamba.mamba_state_slots(budget_bytes=int(b), **kw)) if i != 1) for b in budgets
    ]
    assert int(K[-1]) == 586 and int(kv[-1]) == 25_200_299_868
