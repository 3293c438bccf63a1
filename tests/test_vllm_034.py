"""vLLM release rows added for issue 12 / 13 (kvplan/engines/vllm/releases.py), with the wheel facts they rest on.

Read in the wheels: 0.7.3 / 0.8.0 / 0.9.2 ``vllm/envs.py`` (VLLM_USE_V1 default) and ``v1/core/kv_cache_utils.py``;
0.25.1 ``v1/kv_cache_interface.py`` (SWA admission by max_num_batched_tokens), ``v1/core/kv_cache_utils.py``
(1.5x rule, ``unify_kv_cache_spec_page_size`` padding only with ``indexes_kv_by_block_stride``), ``envs.py``
(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE "1"); 0.34.0 ``config/vllm.py`` ``max_in_flight_tokens``,
``v1/kv_cache_interface.py`` ``SlidingWindowSpec.max_admission_blocks_per_request``, ``v1/core/kv_cache_utils.py``
(one capacity line), ``v1/core/kv_cache_planning.py`` (padding for any non-MLA attention page).
"""

from __future__ import annotations

import pytest

from kvplan.engines.vllm import releases


def test_newest_is_034():
    assert releases.NEWEST_VERSION == "0.34.0" and releases.RELEASES[-1].version == "0.34.0"
    assert releases.release_for(None) is releases.RELEASES[-1]


@pytest.mark.parametrize(
    ("version", "v0", "sliding"),
    [("0.7.3", True, False), ("0.8.0", False, False), ("0.9.2", False, True), ("0.10.2", False, True)],
)
def test_v0_v1_boundaries(version, v0, sliding):
    """V1 is the default from 0.8.0 (VLLM_USE_V1 "1"; "0" in 0.7.3); 0.8.0 has no hybrid manager."""
    rel = releases.release_for(version)
    assert rel.v0 is v0 and rel.sliding_hybrid is sliding


def test_token_line_08_is_blocks_times_block():
    c = releases.PoolCount(
        num_blocks=1321,
        blocks_per_request=2048,
        max_model_len=32768,
        block_size=16,
        num_groups=1,
        min_group_block_size=16,
    )
    tokens, conc = releases.release_for("0.8.0").token_line(c)
    assert tokens == 21136 and conc == pytest.approx(21136 / 32768)


@pytest.mark.parametrize(
    ("version", "ratio", "chunked"),
    [
        ("0.11.1", 0.0, False),
        ("0.12.0", 1.25, False),
        ("0.13.0", 1.25, False),
        ("0.14.0", 1.25, True),
        ("0.18.0", 1.5, True),
        ("0.25.1", 1.5, True),
    ],
)
def test_group_rule_and_chunked_local(version, ratio, chunked):
    """The equal-size group threshold: none in 0.11.1, ``max < 1.25 × min`` in 0.12.0 (``v1/core/kv_cache_utils.py``
    line 1017 of that wheel) to 0.17, ``1.5 ×`` from 0.18 (0.20.0 line 1127, 0.25.1, 0.34.0)."""
    rel = releases.release_for(version)
    assert rel.group_size_ratio == ratio and rel.chunked_local_hybrid is chunked


def test_in_flight_and_padding_by_release():
    # 0.25.1: B; 0.34.0: (pp + 1) x B with async scheduling (the 0.26 rule, re-read in 0.34.0)
    assert releases.release_for("0.25.1").in_flight_tokens(max_num_batched_tokens=8192, pp_size=1) == 8192
    assert releases.release_for("0.34.0").in_flight_tokens(max_num_batched_tokens=8192, pp_size=1) == 16384
    assert releases.release_for("0.34.0").in_flight_tokens(max_num_batched_tokens=8192, pp_size=2) == 24576
    assert not releases.release_for("0.33.0").pad_any_page and releases.release_for("0.34.0").pad_any_page


def test_capacity_log_format():
    assert (
        releases.release_for("0.34.0").capacity_lines(tokens=732896, max_model_len=132096, concurrency=5.548)
        == "GPU KV cache size: 732,896 tokens, Maximum concurrency for 132,096 tokens per request: 5.55x"
    )
    assert (
        releases.release_for("0.25.1").capacity_lines(tokens=1000429, max_model_len=132096, concurrency=7.5735)
        == "GPU KV cache size: 1,000,429 tokens / Maximum concurrency for 132,096 tokens per request: 7.57x"
    )
