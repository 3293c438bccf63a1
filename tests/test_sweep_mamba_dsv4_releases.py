"""``kvplan sweep`` == ``fit`` for the Mamba-hybrid and DeepSeek-V4 pools of the older SGLang releases (issue 12).

The pattern of tests/test_sweep_families.py (not edited): random grids per base, every row equal to ``fit`` of the
same point, and the hybrid groups evaluated by the vector path.  The bases are the state carves the release table
keys (kvplan/engines/sglang/history.py ``mamba_cache_sizing``): 0.5.7 (speculative states in ratio mode only, the
flag undivided), 0.5.8 (taken first, // dp, the 512 fallback), 0.5.12 (no fallback), 0.5.13 and 0.5.16 (the joint
solve, no padding slot), 0.5.17 (0.5.23's); the radix-cache switch-offs (Kimi-Linear is not among the presets:
speculative decoding on 0.5.9) and the Qwen3-Next SM100 page by release; DeepSeek-V4 under 0.5.12 / 0.5.16 / 0.5.20
/ 0.5.21 (each priced by its release's configurator: pools/dsv4.py DSV4_ERAS).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.deployment import Deployment
from kvplan.planning import sweep as S
from tests.conftest import examples
from tests.test_sweep_families import assert_rows_are_fit, grids

QN = "Qwen/Qwen3-Next-80B-A3B-Instruct"
SPEC = dict(speculative_algorithm="NEXTN", speculative_num_draft_tokens=3, max_running_requests=48)

BASES = [
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.7", **SPEC)),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.7", max_mamba_cache_size=200)),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.8", **SPEC)),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.8", disable_radix_cache=True)),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.9", **SPEC)),  # radix forced off
    # 0.5.10 - 0.5.13 refuse speculative decoding with the radix cache on (no_buffer): radix off here
    (
        "hybrid_mamba",
        QN,
        dict(gpu="h200-sxm", tp=2, engine_version="0.5.12", max_mamba_cache_size=200, disable_radix_cache=True, **SPEC),
    ),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.13", disable_radix_cache=True, **SPEC)),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.16", max_mamba_cache_size=200, **SPEC)),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.16")),
    ("hybrid_mamba", QN, dict(gpu="h200-sxm", tp=2, engine_version="0.5.17", **SPEC)),
    ("hybrid_mamba", QN, dict(gpu="b200", tp=2, engine_version="0.5.13")),  # triton, page 1
    ("hybrid_mamba", QN, dict(gpu="b200", tp=2, engine_version="0.5.16")),  # trtllm_mha, page 64
    ("hybrid_mamba", "Qwen/Qwen3.5-27B", dict(gpu="h100-sxm", engine_version="0.5.13", pp=2)),
    ("dsv4", "deepseek-ai/DeepSeek-V4-Flash", dict(gpu="h200-sxm", tp=8, engine_version="0.5.12")),
    ("dsv4", "deepseek-ai/DeepSeek-V4-Flash", dict(gpu="h200-sxm", tp=8, engine_version="0.5.16")),
    ("dsv4", "deepseek-ai/DeepSeek-V4-Flash", dict(gpu="b200", tp=8, engine_version="0.5.20")),
    (
        "dsv4",
        "deepseek-ai/DeepSeek-V4-Flash",
        dict(gpu="b200", tp=8, engine_version="0.5.21", speculative_algorithm="EAGLE"),
    ),
]


@pytest.mark.parametrize(
    "fam,model,kw", BASES, ids=[f"{f}-{kw['engine_version']}-{i}" for i, (f, _, kw) in enumerate(BASES)]
)
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes=grids, out=st.sampled_from([None, 0, 1000]))
def test_sweep_rows_are_fit_by_release(fam, model, kw, axes, out):
    axes = dict(axes)
    if out is not None and "input_len" in axes:
        axes["output_len"] = [out]
    t = S.sweep(Deployment(model=model, **kw), axes)
    assert all(g.family == fam and g.method == "vector" for g in t.groups if not g.error), [
        (g.family, g.method, g.note) for g in t.groups
    ]
    assert_rows_are_fit(t)


@pytest.mark.parametrize("release", ["0.5.7", "0.5.8", "0.5.13", "0.5.16"])
def test_speculative_carve_grid_is_vectorised(release):
    radix_off = release == "0.5.13"  # 0.5.10 - 0.5.13 refuse speculative decoding with the radix cache on
    t = S.sweep(
        Deployment(model=QN, gpu="h200-sxm", tp=2, engine_version=release, disable_radix_cache=radix_off, **SPEC),
        {
            "mem_fraction_static": [0.7, 0.8, 0.9],
            "max_running_requests": [16, 48, 96],
            "context_length": [32768, 262144],
        },
    )
    assert t.groups and all(g.method == "vector" for g in t.groups), [(g.method, g.error) for g in t.groups]
    assert not t.row_text
    assert_rows_are_fit(t)
