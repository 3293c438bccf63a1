"""The table of SGLang release windows: the hybrid-SWA / Mamba pool values by release, :data:`_CHANGES` (one row
per release where a sizing rule changed) and :func:`build_windows`.

Part of :mod:`kvplan.engines.sglang.history` (see its docstring).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from types import MappingProxyType
from typing import Any

from kvplan.engines.sglang import rules as newest
from kvplan.engines.sglang.history.memory import (
    _ERA_0510,
    _ERA_0513,
    _ERA_0514,
    _ERA_0515,
    _ERA_0517,
    _ERA_053,
    _ERA_055,
    MemoryEra,
    _no_prefill_graph,
    bs_before_0_5_3,
    cps_before_0_5_3,
    memory_settings_bs,
    memory_settings_cps,
    memory_settings_mfs,
    mfs_ladder_13g,
    mfs_ladder_48g,
    mfs_reserved_buckets,
    mfs_tp_ladder,
    no_multimodal_reserve,
    piecewise_graph_0510,
    runner_multimodal_factor,
    vlm_default_factor,
)
from kvplan.engines.sglang.history.pages import (
    _PAGE_0510,
    _PAGE_0511,
    _PAGE_0512,
    _PAGE_0513,
    _PAGE_0514,
    _PAGE_0515,
    _PAGE_0517,
    _PAGE_0520,
    _PAGE_0521,
    _PAGE_0522,
    _PAGE_053,
    _PAGE_054,
    _PAGE_057,
    _PAGE_058,
    _pages,
    page_size_before_0_5_3,
)
from kvplan.engines.sglang.history.requests import (
    mrr_0_3_0,
    mrr_estimate_cap,
    mrr_reduction_token_cap,
    mrr_req_pool,
    mrr_token_cap,
    no_reduction,
)
from kvplan.engines.sglang.release_types import (
    DEFAULT_RELEASE,
    DEFAULT_RULES,
    MM_DISABLED_0523,
    RELEASE_DATES,
    SWA_DISABLED_0523,
    FamilyOverride,
    PoolRules,
    ReleaseWindow,
    RuleSet,
    _bs_0523,
    _cps_0523,
    _identity_factor,
    _mfs_0523,
    _page_0523,
    _prefill_0523,
)
from kvplan.family import Family
from kvplan.version import Version

# ------------------------------------------------------------------ hybrid sliding-window and Mamba pools by release

#: what each release added to ``is_hybrid_swa_model``'s allow-list (``configs/model_config.py``, constants
#: ``SWA_SINK_ARCHS`` / ``MIMO_V2_MODEL_ARCHS`` resolved), read in every wheel 0.5.8 - 0.5.23; none was removed
_SWA_ADDED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.5.8", ("GptOssForCausalLM", "Llama4ForConditionalGeneration", "MiMoV2FlashForCausalLM", "MiMoV2MTP")),
    ("0.5.9", ("Step3p5ForCausalLM", "Step3p5MTP")),
    ("0.5.11", ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "MiMoV2ForCausalLM")),
    ("0.5.12", ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "LagunaForCausalLM")),
    ("0.5.13", ("Gemma4UnifiedForConditionalGeneration", "Step3p7ForConditionalGeneration")),
    ("0.5.15", ("UnlimitedOCRForCausalLM",)),
    (
        "0.5.16",
        (
            "DeepseekV4ForCausalLMDSpark",
            "InklingForConditionalGeneration",
            "InklingForConditionalGenerationMTP",
            "MellumForCausalLM",
        ),
    ),
    ("0.5.18", ("MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration")),
    ("0.5.19", ("GraniteMoeSWAForCausalLM", "GraniteSWAForCausalLM")),
    ("0.5.21", ("DiffusionGemmaForBlockDiffusion", "IQuestQ1ForCausalLM", "IQuestQ1MTP")),
    ("0.5.22", ("EmbeddingGemma2Model",)),
    ("0.5.23", ("BeamForCausalLM",)),
)


def swa_archs_at(release: str) -> frozenset[str]:
    """``is_hybrid_swa_model``'s allow-list of release ``release`` (0.5.8+): the union of :data:`_SWA_ADDED` up to it.

    Example: ``swa_archs_at("0.5.9")`` has GPT-OSS, Llama-4, MiMo-V2-Flash (+ MTP) and Step-3.5 (+ MTP): 6 names.
    Source: configs/model_config.py ``is_hybrid_swa_model``, wheels 0.5.8 - 0.5.23.
    """
    key = Version.of(release)
    return frozenset(a for first, archs in _SWA_ADDED if Version.of(first) <= key for a in archs)


def swa_pool_since(architecture: str) -> str | None:
    """The first release whose ``is_hybrid_swa_model`` lists ``architecture`` (None: not listed by 0.5.23), for the
    message of a plan that the release sizes without the SWA pool.  Example: ``swa_pool_since("Gemma4ForCausalLM")``
    -> "0.5.11"; GPT-OSS -> "0.5.8"."""
    return next((first for first, archs in _SWA_ADDED if architecture in archs), None)


def _swa_archs(release: str) -> dict[str, Any]:
    return dict(pool=dict(hybrid_swa_archs=swa_archs_at(release)))


_GEMMA_2_3 = (
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Gemma3nForCausalLM",
    "Gemma3nForConditionalGeneration",
)
#: hybrid-SWA switch-offs by release (server_args.py ``_handle_model_specific_adjustments``): Gemma-2/3 and GPT-OSS
#: always (0.5.0rc2 - 0.5.7), Olmo-2 from 0.5.4, GPT-OSS with trtllm_mha or speculative decoding in 0.5.8, with
#: trtllm_mha only in 0.5.9 (its GptOssForCausalLM branch has no speculative switch-off), not at all from 0.5.10,
#: Exaone-4 with a ``sliding_window_pattern`` from 0.5.9
_SWA_OFF_050 = MappingProxyType(dict.fromkeys((*_GEMMA_2_3, "GptOssForCausalLM"), "always"))
_SWA_OFF_054 = MappingProxyType({**_SWA_OFF_050, "Olmo2ForCausalLM": "always"})
_SWA_OFF_058 = MappingProxyType({**_SWA_OFF_054, "GptOssForCausalLM": "trtllm_mha-or-speculative"})
_SWA_OFF_059 = MappingProxyType(
    {
        **_SWA_OFF_058,
        "GptOssForCausalLM": "trtllm_mha",
        **dict.fromkeys(("Exaone4ForCausalLM", "ExaoneMoEForCausalLM"), "sliding_window_pattern"),
    }
)

#: the Mamba state carve by release (``mamba_cache_sizing``; the formulas: kvplan.engines.sglang.pools.mamba
#: ``mamba_state_slots``), read in model_executor/model_runner_kv_cache_mixin.py ``handle_max_mamba_cache`` (0.5.7 -
#: 0.5.15) and mem_cache/kv_cache_configurator.py ``_handle_max_mamba_cache`` (0.5.16+): 0.5.7 reserves the
#: speculative states (mrr x D, mrr not divided by dp) only in its ratio branch; 0.5.8 reserves them (mrr // dp)
#: before every branch; 0.5.9 takes the flag first and drops the 512 fallback (same formulas to 0.5.12); 0.5.13
#: solves the slots and the speculative states jointly; 0.5.17 adds the padding slot and the PP share (0.5.23's)
_POOL_058 = dict(
    hybrid_swa_archs=swa_archs_at("0.5.8"), swa_disabled_archs=_SWA_OFF_058, mamba_cache_sizing="ratio_0508"
)
_POOL_059 = dict(
    hybrid_swa_archs=swa_archs_at("0.5.9"),
    swa_split="bytes",
    swa_disabled_archs=_SWA_OFF_059,
    mamba_cache_sizing="ratio_0508",
    mamba_fallback_slots=None,
)


def _era(era: MemoryEra) -> dict[str, Any]:
    return dict(
        default_mem_fraction_static=partial(memory_settings_mfs, era=era),
        default_chunked_prefill_size=partial(memory_settings_cps, era=era),
        default_cuda_graph_max_bs=partial(memory_settings_bs, era=era),
    )


#: the oldest window, complete; every later row is (first release, what that release changed)
_OLDEST = replace(
    DEFAULT_RULES,
    release="0.3.0",
    default_mem_fraction_static=partial(mfs_tp_ladder, tp8_fraction=0.83),
    default_chunked_prefill_size=partial(cps_before_0_5_3),
    default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_mib=0, large_bs=None),
    default_prefill_cuda_graph=_no_prefill_graph,
    default_page_size=page_size_before_0_5_3,
    multimodal_reserve_bytes=no_multimodal_reserve,
    resolve_max_running_requests=mrr_0_3_0,
    max_running_requests_reduction=no_reduction,
    overrides=MappingProxyType({}),
    has_page_size=False,
    runner_mem_fraction_factor=partial(runner_multimodal_factor, factor=0.95),
    dsa_indexer_budget=False,
    mm_disabled_archs=frozenset(),
    pool_rules=PoolRules(
        hybrid_swa_archs=frozenset(),
        swa_config_opt_in=False,
        swa_disabled_archs=MappingProxyType({}),
        swa_split="layers",
        mamba_cache_sizing="fixed",
        mamba_full_memory_ratio=None,
        mamba_fallback_slots=512,
        gqa_cell_v_head_dim=False,
    ),
)

#: ``mm_disabled_models`` by release (``configs/model_config.py`` ``ModelConfig.__init__``; none before 0.4.5.post3):
#: 0.4.5.post3 Llama-4 only (``--enable-llama4-multimodal``), 0.4.6 + Gemma-3 (``--enable-multimodal``), 0.5.0rc2
#: + Step3-VL (kvplan: from 0.4.9.post6, the window 0.5.0 is sized in), 0.5.16 + Inkling (0.5.23's list)
_MM_OFF_0453 = frozenset({"Llama4ForConditionalGeneration"})
_MM_OFF_046 = _MM_OFF_0453 | {"Gemma3ForConditionalGeneration"}
_MM_OFF_050 = _MM_OFF_046 | {"Step3VLForConditionalGeneration"}

_DSA_053 = FamilyOverride(name="DeepSeek NSA", mem_fraction_static=0.8, dp_attention=True)
_DSA_054 = FamilyOverride(name="DeepSeek NSA", dp_attention=True)

#: (first release, the fields it changed); the wheel paths are in each function's docstring and docs/sglang.md
_CHANGES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("0.3.1", dict(resolve_max_running_requests=partial(mrr_req_pool))),
    ("0.3.2", dict(resolve_max_running_requests=partial(mrr_req_pool, extra=1))),
    ("0.3.5", dict(default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_mib=0))),
    (
        "0.3.6",
        dict(
            default_mem_fraction_static=partial(mfs_tp_ladder, tp8_fraction=0.82),
            default_chunked_prefill_size=partial(cps_before_0_5_3, small_mib=25_000),
            default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_bs=4, small_bs_tp4=4),
        ),
    ),
    (
        "0.4.0",
        dict(
            default_mem_fraction_static=partial(mfs_tp_ladder, tp8_fraction=0.81),
            default_cuda_graph_max_bs=partial(bs_before_0_5_3),
        ),
    ),
    ("0.4.0.post2", dict(default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_bs_tp4=80))),
    ("0.4.1.post7", dict(resolve_max_running_requests=partial(mrr_req_pool, extra=1, per_dp=True))),
    ("0.4.4", dict(has_page_size=True)),
    ("0.4.4.post4", dict(runner_mem_fraction_factor=partial(runner_multimodal_factor, factor=0.90))),
    (
        "0.4.5.post3",
        dict(
            mm_disabled_archs=_MM_OFF_0453,
            default_mem_fraction_static=mfs_ladder_13g,
            default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_bs_tp4=80, large_bs=None),
            default_page_size=partial(page_size_before_0_5_3, flashmla=True),
        ),
    ),
    ("0.4.6", dict(mm_disabled_archs=_MM_OFF_046)),
    (
        "0.4.6.post2",
        dict(
            default_mem_fraction_static=mfs_ladder_48g,
            default_page_size=partial(page_size_before_0_5_3, flashmla=True, cutlass=True),
        ),
    ),
    (
        "0.4.7",
        dict(
            default_mem_fraction_static=partial(mfs_ladder_48g, b200_079=True),
            default_chunked_prefill_size=partial(cps_before_0_5_3, small_mib=25_000, b200_16k=True),
            resolve_max_running_requests=partial(mrr_req_pool, per_dp=True),
        ),
    ),
    (
        "0.4.7.post1",
        dict(
            default_mem_fraction_static=mfs_reserved_buckets,
            default_chunked_prefill_size=partial(cps_before_0_5_3, buckets_35_160=True),
            default_cuda_graph_max_bs=partial(bs_before_0_5_3, small_mib=35 * 1024, small_bs_tp4=80, large_bs=None),
        ),
    ),
    (
        "0.4.9",
        dict(
            runner_mem_fraction_factor=_identity_factor,
            default_mem_fraction_vlm=partial(vlm_default_factor, fixed=0.90),
        ),
    ),
    # 0.4.9.post6: any model with a sliding window gets the SWA pool; the Gemma-2/3 / GPT-OSS switch-off is from
    # 0.5.0rc2 (0.4.9.post6 - 0.4.10 had none; kvplan applies 0.5.0's from 0.4.9.post6)
    (
        "0.4.9.post6",
        dict(
            default_mem_fraction_vlm=vlm_default_factor,
            mm_disabled_archs=_MM_OFF_050,
            default_page_size=partial(page_size_before_0_5_3, flashmla=True, cutlass=True, gpt_oss_sm100=True),
            pool=dict(hybrid_swa_archs=None, swa_disabled_archs=_SWA_OFF_050),
        ),
    ),
    ("0.5.2", dict(default_mem_fraction_static=partial(mfs_reserved_buckets, standalone_mib=6144))),
    ("0.5.3", dict(**_era(_ERA_053), **_pages(_PAGE_053, "0.5.3"), overrides=MappingProxyType({Family.DSA: _DSA_053}))),
    (
        "0.5.4",
        dict(
            dsa_indexer_budget=True,
            overrides=MappingProxyType({Family.DSA: _DSA_054}),
            **_pages(_PAGE_054, "0.5.4"),
            pool=dict(swa_disabled_archs=_SWA_OFF_054, mamba_cache_sizing="ratio_0504", mamba_full_memory_ratio=0.9),
        ),
    ),
    ("0.5.5", dict(**_era(_ERA_055))),
    (
        "0.5.7",
        dict(
            **_pages(_PAGE_057, "0.5.7"),
            pool=dict(
                hybrid_swa_archs=frozenset({"MiMoV2FlashForCausalLM", "MiMoV2MTP"}),
                gqa_cell_v_head_dim=True,
                mamba_cache_sizing="ratio_0507",
            ),
        ),
    ),
    ("0.5.8", dict(overrides=MappingProxyType({}), **_pages(_PAGE_058, "0.5.8"), pool=_POOL_058)),
    ("0.5.9", dict(**_pages(_PAGE_058, "0.5.9"), pool=_POOL_059)),
    (
        "0.5.10",
        dict(
            **_era(_ERA_0510),
            **_pages(_PAGE_0510, "0.5.10"),
            default_prefill_cuda_graph=piecewise_graph_0510,
            resolve_max_running_requests=mrr_estimate_cap,
            pool=dict(swa_disabled_archs=SWA_DISABLED_0523),
        ),
    ),
    ("0.5.11", dict(**_pages(_PAGE_0511, "0.5.11"), **_swa_archs("0.5.11"))),
    ("0.5.12", dict(overrides=DEFAULT_RULES.overrides, **_pages(_PAGE_0512, "0.5.12"), **_swa_archs("0.5.12"))),
    (
        "0.5.13",
        dict(
            **_era(_ERA_0513),
            **_pages(_PAGE_0513, "0.5.13"),
            pool=dict(hybrid_swa_archs=swa_archs_at("0.5.13"), swa_config_opt_in=True, mamba_cache_sizing="ratio_0513"),
        ),
    ),
    (
        "0.5.14",
        dict(
            **_era(_ERA_0514),
            **_pages(_PAGE_0514, "0.5.14"),
            default_prefill_cuda_graph=_prefill_0523,
            resolve_max_running_requests=mrr_token_cap,
            max_running_requests_reduction=mrr_reduction_token_cap,
        ),
    ),
    ("0.5.15", dict(**_era(_ERA_0515), **_pages(_PAGE_0515, "0.5.15"), **_swa_archs("0.5.15"))),
    ("0.5.16", dict(mm_disabled_archs=MM_DISABLED_0523, **_pages(_PAGE_0515, "0.5.16"), **_swa_archs("0.5.16"))),
    ("0.5.17", dict(**_era(_ERA_0517), **_pages(_PAGE_0517, "0.5.17"), pool=dict(mamba_cache_sizing="ratio"))),
    ("0.5.18", dict(multimodal_reserve_bytes=newest.multimodal_reserve_bytes, **_swa_archs("0.5.18"))),
    ("0.5.19", dict(**_swa_archs("0.5.19"))),
    (
        "0.5.20",
        dict(
            default_mem_fraction_static=_mfs_0523,
            default_chunked_prefill_size=_cps_0523,
            default_cuda_graph_max_bs=partial(
                memory_settings_bs, era=replace(_ERA_0517, cps_20_35=4096, bs_20_35=48, bs_20_35_tp4=160, fallback=0.95)
            ),
            default_mem_fraction_vlm=_identity_factor,
            **_pages(_PAGE_0520, "0.5.20"),
        ),
    ),
    ("0.5.21", dict(**_pages(_PAGE_0521, "0.5.21"), **_swa_archs("0.5.21"))),
    ("0.5.22", dict(default_cuda_graph_max_bs=_bs_0523, **_pages(_PAGE_0522, "0.5.22"), **_swa_archs("0.5.22"))),
    # the newest release, a row like every other: what it changed over 0.5.22 (the walk ends at DEFAULT_RULES,
    # tests/test_sglang_releases.py); its rule functions are the newest's (``rules``, release_types)
    (
        "0.5.23",
        dict(
            default_page_size=_page_0523,
            resolve_max_running_requests=newest.resolve_max_running_requests,
            max_running_requests_reduction=newest.max_running_requests_reduction,
            **_swa_archs("0.5.23"),
        ),
    ),
)


def _last_before(first: str) -> str:
    """The newest release of :data:`RELEASE_DATES` below ``first`` (a window's last release, for its label)."""
    key = Version.of(first)
    return max((v for v in RELEASE_DATES if Version.of(v) < key), key=Version.of)


def walk_changes() -> list[tuple[str, RuleSet]]:
    """(first release, its complete rule set) for every row of :data:`_CHANGES`, walked from :data:`_OLDEST`."""
    rules, out = _OLDEST, []
    for first, changes in (("0.3.0", {}), *_CHANGES):
        rest = dict(changes)
        pool = rest.pop("pool", None)
        if pool is not None:  # the pool planners' values change field by field (PoolRules.replace)
            rest["pool_rules"] = rules.pool_rules.replace(**pool)
        rules = replace(rules, release=first, **rest)
        out.append((first, rules))
    return out


def build_windows() -> tuple[ReleaseWindow, ...]:
    """Walk :data:`_CHANGES` from the oldest rule set; each row starts a window that ends before the next row, the
    last one at the newest release (:data:`DEFAULT_RELEASE`, derived from the release list).  The newest release's
    window holds :data:`DEFAULT_RULES` itself (the walk ends at an equal rule set: a test)."""
    rows = walk_changes()
    out = [
        ReleaseWindow(first=first, last=_last_before(rows[i + 1][0]), rules=rules)
        for i, (first, rules) in enumerate(rows[:-1])
    ]
    first, rules = rows[-1]
    out.append(
        ReleaseWindow(first=first, last=DEFAULT_RELEASE, rules=DEFAULT_RULES if first == DEFAULT_RELEASE else rules)
    )
    return tuple(out)
