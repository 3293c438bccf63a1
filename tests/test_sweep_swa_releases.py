"""``kvplan sweep`` == ``fit`` for the hybrid sliding-window pool at the releases issue 12 / 13 touched.

The pattern of tests/test_sweep_families.py (random grids, every row equal to ``fit`` of its point), with a workload
on every grid: the SWA-pool bound of the workload is the release's (kvplan.engines.sglang.pools.swa_cap
``swa_request_terms``: no eviction before 0.5.7 / with 0.5.7's radix cache, every step with 0.5.7's chunk cache,
every ``window`` steps 0.5.8 - 0.5.10, the page-floored window 0.5.11 - 0.5.13, 128 from 0.5.14), FP4 KV on the hybrid
pool (1 B per value) in ratio and request-cap modes, and a separate EAGLE draft at 0.5.16.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.deployment import Deployment
from kvplan.planning import sweep as S
from tests.conftest import examples
from tests.test_sweep_families import assert_rows_are_fit

BASES = [
    ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4, engine_version="0.5.7")),
    ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4, engine_version="0.5.7", disable_radix_cache=True)),
    ("openai/gpt-oss-120b", dict(gpu="b200", engine_version="0.5.10")),
    ("openai/gpt-oss-120b", dict(gpu="b200", engine_version="0.5.12", swa_full_tokens_ratio=0.05)),
    (
        "openai/gpt-oss-120b",
        dict(gpu="h100-sxm", engine_version="0.5.9", speculative_algorithm="EAGLE", speculative_num_draft_tokens=4),
    ),
    ("openai/gpt-oss-120b", dict(gpu="b200", kv_cache_dtype="nvfp4")),
    (
        "openai/gpt-oss-120b",
        dict(gpu="b200", kv_cache_dtype="fp4_mx_block16", disable_radix_cache=True, max_running_requests=64),
    ),
    # the path-less MTP draft of 0.5.15 - 0.5.19 needs a config with num_nextn_predict_layers, which no hybrid-SWA
    # preset has, and ``kvplan sweep`` of a config directory stops in planning/sweep.py ``_sglang_group``
    # (``resolve_model(res.model)`` looks the directory's name up as a preset): tests/test_swa_by_release.py has it
    # for fit; a separate (path) draft at 0.5.16 here
    ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4, speculative_algorithm="EAGLE", engine_version="0.5.16")),
    # PP stages by release: 0.5.7 - 0.5.8's layer split by the stage's counts (pools over the budget), the two-step
    # split per stage 0.5.9 - 0.5.10, the stage lists with the next stage's first layer to 0.5.20, without from 0.5.21;
    # the request-cap mode from 0.5.14
    ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4, pp=2, engine_version="0.5.7")),
    ("openai/gpt-oss-120b", dict(gpu="h100-sxm", pp=2, engine_version="0.5.8")),
    ("openai/gpt-oss-120b", dict(gpu="h100-sxm", pp=2, engine_version="0.5.9")),
    ("XiaomiMiMo/MiMo-V2-Flash", dict(gpu="h200-sxm", tp=4, pp=2, engine_version="0.5.10")),
    ("openai/gpt-oss-120b", dict(gpu="h100-sxm", pp=2, engine_version="0.5.14", disable_radix_cache=True)),
    ("openai/gpt-oss-120b", dict(gpu="h100-sxm", pp=2, engine_version="0.5.20")),
    ("openai/gpt-oss-120b", dict(gpu="h100-sxm", pp=2, engine_version="0.5.21")),
    # the request-cap mode of 0.5.14 - 0.5.22: a disabled chunk does not stop it before 0.5.22; mrr // dp unfloored
    (
        "openai/gpt-oss-120b",
        dict(gpu="h100-sxm", engine_version="0.5.21", disable_radix_cache=True, chunked_prefill_size=-1),
    ),
    (
        "openai/gpt-oss-120b",
        dict(gpu="h100-sxm", tp=4, dp=4, enable_dp_attention=True, engine_version="0.5.22", disable_radix_cache=True),
    ),
    # the request-cap mode's draft terms by release (ByteEra.cap_draft_full / cap_draft_swa): no draft in the cap's
    # full cell at 0.5.14, F·Df from 0.5.15, S·Ds from 0.5.19 (0 for a path draft before 0.5.20); the divisor of
    # 0.5.14 - 0.5.15 (ModelRunner.dp_size) with DP attention and with plain replicas
    (
        "XiaomiMiMo/MiMo-V2-Flash",
        dict(
            gpu="h200-sxm",
            tp=4,
            speculative_algorithm="EAGLE",
            engine_version="0.5.14",
            disable_radix_cache=True,
            max_running_requests=16,
        ),
    ),
    (
        "XiaomiMiMo/MiMo-V2-Flash",
        dict(
            gpu="h200-sxm",
            tp=4,
            speculative_algorithm="EAGLE",
            engine_version="0.5.15",
            disable_radix_cache=True,
            max_running_requests=16,
        ),
    ),
    (
        "XiaomiMiMo/MiMo-V2-Flash",
        dict(
            gpu="h200-sxm",
            tp=4,
            pp=2,
            speculative_algorithm="EAGLE",
            engine_version="0.5.19",
            disable_radix_cache=True,
            max_running_requests=16,
        ),
    ),
    (
        "openai/gpt-oss-120b",
        dict(
            gpu="h100-sxm",
            tp=4,
            dp=4,
            enable_dp_attention=True,
            engine_version="0.5.15",
            disable_radix_cache=True,
            max_running_requests=16,
        ),
    ),
    (
        "openai/gpt-oss-120b",
        dict(gpu="h100-sxm", dp=2, engine_version="0.5.14", disable_radix_cache=True, max_running_requests=16),
    ),
]


def _sorted_unique(xs):
    return sorted(set(xs))


grids = st.fixed_dictionaries(
    {
        "mem_fraction_static": st.lists(
            st.sampled_from([0.05, 0.35, 0.62, 0.78, 0.85, 0.93]), min_size=1, max_size=3
        ).map(_sorted_unique),
        "context_length": st.lists(st.sampled_from([4096, 32768, 131072]), min_size=1, max_size=2).map(_sorted_unique),
        "target_requests": st.lists(st.integers(1, 300), min_size=1, max_size=2).map(_sorted_unique),
        "input_len": st.lists(st.sampled_from([100, 4000, 60000]), min_size=1, max_size=2).map(_sorted_unique),
    },
    optional={
        "max_running_requests": st.lists(st.sampled_from([3, 16, 512]), min_size=1, max_size=2).map(_sorted_unique),
        "max_total_tokens": st.lists(st.sampled_from([5000, 100_000]), min_size=1, max_size=2).map(_sorted_unique),
    },
)


@pytest.mark.parametrize("model,kw", BASES, ids=[f"{m.rsplit('/')[-1]}-{i}" for i, (m, _) in enumerate(BASES)])
@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes=grids, out=st.sampled_from([0, 1000]))
def test_sweep_rows_are_fit_by_release(model, kw, axes, out):
    axes = {**axes, "output_len": [out]}
    t = S.sweep(Deployment(model=model, **kw), axes)
    assert all(g.method == "vector" for g in t.groups if not g.error), [(g.family, g.method, g.note) for g in t.groups]
    assert_rows_are_fit(t)
