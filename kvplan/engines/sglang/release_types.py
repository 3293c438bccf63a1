"""SGLang's release types and the newest rule set, below both the release table and its history.

:mod:`kvplan.engines.sglang.releases` (the windows, ``rules_for`` / ``resolve``) builds the older windows from
:mod:`kvplan.engines.sglang.history`, and the history builds each window from these: the :class:`RuleSet` /
:class:`PoolRules` / :class:`FamilyOverride` / :class:`ReleaseWindow` types, the newest release's rule set
(:data:`DEFAULT_RULES`), the release dates (:data:`RELEASE_DATES`) and the ``--engine-version`` reader
(:func:`read_release`, over the package's one version parser, :func:`kvplan.version.parse_version`).  Holding them
here, one module below both, keeps the two out of an import cycle (tests/test_import_cycles.py);
:mod:`~kvplan.engines.sglang.releases` re-exports every name, so ``from kvplan.engines.sglang.releases import
RuleSet`` keeps working.  The accepted ``--engine-version`` forms are
listed in :mod:`kvplan.engines.sglang.releases`.

Example::

    read_release("0.5.2rc2").release == "0.5.2"     # with a note: sized as the release it is the candidate of
    read_release("0.4.7.post1").key == Version.of("0.4.7.post1")
    DEFAULT_RULES.release == "0.5.23"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kvplan import supported
from kvplan.engines.sglang import rules as newest
from kvplan.engines.sglang.mem_query import MemQuery, PrefillGraphQuery
from kvplan.engines.sglang.page_query import PageQuery
from kvplan.errors import InputError
from kvplan.family import Family, family_since
from kvplan.geometry.records import Record
from kvplan.version import Version, parse_version

#: the oldest and the newest release kvplan has rules for
SUPPORTED: tuple[str, str] = supported.SGLANG
DEFAULT_RELEASE = SUPPORTED[1]


# ================================================================================================
# Rule sets
# ================================================================================================


@dataclass(init=False, repr=False, eq=False)  # __init__ written out, eq / repr: Record's (no generated code)
class FamilyOverride(Record):
    """What SGLang's model override of one family forces at server-args resolution.

    ``page_size``: the page it forces whatever ``--page-size`` says; ``max_running_requests``: its default when
    the flag is unset (declared after the ``mem_fraction_static`` heuristic ran); ``prefill_cuda_graph``: False
    when the override turns the (breakable) prefill CUDA graph off; ``mem_fraction_static``: a value it forces even
    over the user's (SGLang 0.5.3 for DeepSeek NSA); ``dp_attention``: it turns DP attention on (dp = tp).
    """

    name: str
    page_size: int | None = None
    max_running_requests: int | None = None
    prefill_cuda_graph: bool = True
    mem_fraction_static: float | None = None
    dp_attention: bool = False

    def __init__(
        self,
        name: str,
        page_size: int | None = None,
        max_running_requests: int | None = None,
        prefill_cuda_graph: bool = True,
        mem_fraction_static: float | None = None,
        dp_attention: bool = False,
    ) -> None:
        self.name, self.page_size, self.max_running_requests = name, page_size, max_running_requests
        self.prefill_cuda_graph, self.mem_fraction_static, self.dp_attention = (
            prefill_cuda_graph,
            mem_fraction_static,
            dp_attention,
        )


def _identity_factor(
    *, mem_fraction_static: float, is_multimodal: bool = False, vision_config: Mapping[str, Any] | None = None
) -> float:
    """No multimodal cut (the keywords: the ``runner_mem_fraction_factor`` / ``default_mem_fraction_vlm`` slots')."""
    del is_multimodal, vision_config
    return mem_fraction_static


@dataclass(repr=False, eq=False)  # not frozen (a frozen dataclass costs more to create); __eq__: Record's
class RuleSet(Record):
    """The sizing rules of one SGLang release window (pure functions, keyword-only, as in ``rules``).

    The default-flag functions take the planner's whole keyword set, spelled out (no ``**_``: a misspelt keyword is
    a ``TypeError``), and ignore what their release did not read.
    """

    __repr__ = object.__repr__  # repr=False: the default repr, as before

    release: str
    default_mem_fraction_static: Callable[[MemQuery], float]
    default_chunked_prefill_size: Callable[..., int]
    default_cuda_graph_max_bs: Callable[..., int | None]
    default_prefill_cuda_graph: Callable[[PrefillGraphQuery], bool]
    default_page_size: Callable[[PageQuery], int]
    budget_bytes: Callable[..., Any]
    multimodal_reserve_bytes: Callable[..., int]
    page_floor: Callable[..., Any]
    pool_tokens: Callable[..., Any]
    resolve_max_running_requests: Callable[..., Any]
    max_running_requests_reduction: Callable[..., Any]
    max_request_len: Callable[..., Any]
    speculative_cell: Callable[..., int]
    pp_layer_ranges: Callable[..., list[tuple[int, int]]]
    #: families whose attention SGLang runs as MLA (the heuristic's 1.5 GiB MLA prefill-graph reserve)
    mla_families: frozenset[Family]
    #: family model overrides (DeepSeek-V4: page 256, 256 running requests, no prefill graph)
    overrides: Mapping[Family, FamilyOverride] = field(default_factory=lambda: MappingProxyType({}))
    #: False before 0.4.4: no ``--page-size`` (every pool is token-granular, nothing is floored to a page)
    has_page_size: bool = True
    #: ModelRunner's multiplier on every mem_fraction_static, the user's too (multimodal models up to 0.4.8)
    runner_mem_fraction_factor: Callable[..., float] = _identity_factor
    #: the multimodal adjustment of the *default* mem_fraction_static (0.4.9 - 0.5.19; kvplan does not pass a
    #: vision tower to 0.5.20+'s heuristic, as before this table existed)
    default_mem_fraction_vlm: Callable[..., float] = _identity_factor
    #: the DSA indexer key is part of the budgeted cell (from 0.5.4, sgl-project/sglang PR #11309)
    dsa_indexer_budget: bool = True
    #: the values the hybrid-SWA, Mamba and GQA pool planners read (:class:`PoolRules`)
    pool_rules: PoolRules = field(default_factory=lambda: POOL_RULES_0523)
    #: architectures whose multimodal side SGLang leaves off unless ``--enable-multimodal`` (``mm_disabled_models``,
    #: :data:`MM_DISABLED_0523`; by release in docs/sglang.md)
    mm_disabled_archs: frozenset[str] = field(default_factory=lambda: MM_DISABLED_0523)

    def override(self, family: Family) -> FamilyOverride | None:
        """The family's model override, or None when SGLang applies none."""
        return self.overrides.get(family)

    def counts_multimodal(self, *, architecture: str, has_vision_tower: bool, enable_multimodal: bool = False) -> bool:
        """Whether this release treats the model as multimodal: it has a vision tower and its architecture is not one
        SGLang keeps text-only by default (``configs/model_config.py`` ``ModelConfig.__init__``: with
        ``enable_multimodal`` None, an architecture of ``mm_disabled_models`` gets False, and ``is_multimodal`` is
        ``enable_multimodal and is_multimodal_model(...)``; 0.4.5.post3: Llama-4 only, 0.4.6+: the list).  The
        ``--model-impl transformers`` exemption (0.5.10+) is not modelled: kvplan has no such flag."""
        if not has_vision_tower:
            return False
        return enable_multimodal or architecture not in self.mm_disabled_archs


#: ``is_hybrid_swa_model``'s allow-list in 0.5.23 (``configs/model_config.py``, with ``SWA_SINK_ARCHS`` and
#: ``MIMO_V2_MODEL_ARCHS``)
SWA_ARCHS_0523: frozenset[str] = frozenset(
    {
        "BeamForCausalLM",
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForCausalLMDSpark",
        "DeepseekV4ForCausalLMNextN",
        "DiffusionGemmaForBlockDiffusion",
        "EmbeddingGemma2Model",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "Gemma4UnifiedForConditionalGeneration",
        "GptOssForCausalLM",
        "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM",
        "IQuestQ1ForCausalLM",
        "IQuestQ1MTP",
        "InklingForConditionalGeneration",
        "InklingForConditionalGenerationMTP",
        "LagunaForCausalLM",
        "Llama4ForConditionalGeneration",
        "MellumForCausalLM",
        "MiMoV2FlashForCausalLM",
        "MiMoV2ForCausalLM",
        "MiMoV2MTP",
        "MuseGlimmerForCausalLM",
        "MuseGlimmerForConditionalGeneration",
        "Step3p5ForCausalLM",
        "Step3p5MTP",
        "Step3p7ForConditionalGeneration",
        "UnlimitedOCRForCausalLM",
    }
)

#: model overrides that turn hybrid SWA memory off in 0.5.23 (``arg_groups/model_overrides/gemma2_gemma3.py``,
#: ``olmo2.py``, ``exaone.py``); hierarchical-cache switch-offs (Step3p5) are not defaults and are left out
SWA_DISABLED_0523: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys(
            (
                "Gemma2ForCausalLM",
                "Gemma3ForCausalLM",
                "Gemma3ForConditionalGeneration",
                "Gemma3nForCausalLM",
                "Gemma3nForConditionalGeneration",
                "Olmo2ForCausalLM",
            ),
            "always",
        ),
        **dict.fromkeys(("Exaone4ForCausalLM", "ExaoneMoEForCausalLM"), "sliding_window_pattern"),
    }
)


class PoolRules:
    """The release-dependent values the pool planners read (``RuleSet.pool_rules``): who gets the hybrid
    sliding-window pool and how its budget is split, the SWA / Mamba ratio defaults, the Mamba slot rule and the GQA
    cell.  (A plain class with slots: dataclass fields on :class:`RuleSet` cost start-up time.)

    * ``hybrid_swa_archs``: architectures SGLang gives the hybrid SWA pool (``configs/model_config.py``
      ``is_hybrid_swa_model``, 0.5.8+); None = every model whose layers carry a sliding window, Llama-4 excepted
      (``ModelRunner.__init__`` "Check if the model is using hybrid SWA", 0.4.9.post6 - 0.5.6); an empty set = only
      Llama-4 with ``--hybrid-kvcache-ratio`` (0.4.9); 0.5.7: MiMo-V2-Flash only (``is_hybrid_model``);
    * ``swa_config_opt_in``: a config's ``is_hybrid_swa`` opts any architecture in (0.5.13+);
    * ``swa_disabled_archs``: architectures whose model override turns hybrid SWA memory off, with the condition:
      "always", "trtllm_mha-or-speculative" (GPT-OSS 0.5.8), "trtllm_mha" (GPT-OSS 0.5.9),
      "sliding_window_pattern" (Exaone);
    * ``swa_split``: "bytes" (0.5.9+: one full token costs ``full_cell + r x swa_cell``) or "layers" (0.4.9.post6 -
      0.5.8: ``T = budget // cell(all layers)``, ``full = int(T x L / (r x L_swa + L_full))``, ``swa = int(full x r)``,
      both page-floored; ``set_num_token_hybrid``);
    * ``swa_full_tokens_ratio``: the ``--swa-full-tokens-ratio`` default (0.8 in every release with the flag,
      0.4.9.post6+; DeepSeek-V4 0.1 from 0.5.12);
    * ``mamba_cache_sizing``: the state carve (formulas: ``kvplan.engines.sglang.pools.mamba.mamba_state_slots``):
      "fixed" (0.5.2 - 0.5.3: radix cache forced off, K = --max-mamba-cache-size or --max-running-requests or 512,
      then // dp); "ratio_0504" (0.5.4 - 0.5.6: radix cache on -> K from the ratio, the flag overwritten,
      ``int(rest x r / (1 + r) x 2^30 // per_req // (1 + draft tokens))``; off -> flag or mrr or 512; // dp only
      for Qwen3-Next); "ratio_0507" (0.5.7: flag // dp; radix off -> mrr or 512 // dp; else ``int(mb // per_req)``,
      the speculative states ``per_req x mrr x D`` taken in that branch only); "ratio_0508" (0.5.8 - 0.5.12: the
      speculative states ``per_req x (mrr // dp) x D`` taken first in every branch; from 0.5.9 the flag first and
      radix off needs mrr for the mrr branch); "ratio_0513" (0.5.13 - 0.5.16: slots and speculative states solved
      together, ``int(mb // (per_req (1 + D / q)))``); "ratio" (0.5.17+: 0.5.23's, with the padding slot and the
      largest PP stage's share); none before 0.5.17 has the padding slot;
    * ``mamba_full_memory_ratio``: the ``--mamba-full-memory-ratio`` default (None: no such flag, 0.5.2 - 0.5.3);
    * ``mamba_fallback_slots``: state slots when nothing sets them and the ratio does not apply (512 in 0.5.2 -
      0.5.8, None after);
    * ``gqa_cell_v_head_dim``: the MHA/GQA cell prices V at ``v_head_dim`` (0.5.7+); before,
      ``heads x head_dim x L x 2 x e`` (``ModelRunner.profile_max_num_token``, 0.3.0 - 0.5.6).
    """

    __slots__ = (
        "gqa_cell_v_head_dim",
        "hybrid_swa_archs",
        "mamba_cache_sizing",
        "mamba_fallback_slots",
        "mamba_full_memory_ratio",
        "swa_config_opt_in",
        "swa_disabled_archs",
        "swa_full_tokens_ratio",
        "swa_split",
    )

    def __init__(
        self,
        *,
        hybrid_swa_archs: frozenset[str] | None,
        swa_config_opt_in: bool = True,
        swa_disabled_archs: Mapping[str, str],
        swa_split: str = "bytes",
        swa_full_tokens_ratio: float = 0.8,
        mamba_cache_sizing: str = "ratio",
        mamba_full_memory_ratio: float | None = 0.9,
        mamba_fallback_slots: int | None = None,
        gqa_cell_v_head_dim: bool = True,
    ) -> None:
        self.hybrid_swa_archs, self.swa_config_opt_in = hybrid_swa_archs, swa_config_opt_in
        self.swa_disabled_archs, self.swa_split, self.swa_full_tokens_ratio = (
            swa_disabled_archs,
            swa_split,
            swa_full_tokens_ratio,
        )
        self.mamba_cache_sizing, self.mamba_full_memory_ratio = mamba_cache_sizing, mamba_full_memory_ratio
        self.mamba_fallback_slots, self.gqa_cell_v_head_dim = mamba_fallback_slots, gqa_cell_v_head_dim

    def replace(self, **changes: Any) -> PoolRules:
        """A copy with ``changes`` (named like the attributes)."""
        return PoolRules(**{**{k: getattr(self, k) for k in self.__slots__}, **changes})

    def __repr__(self) -> str:
        return "PoolRules(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def hybrid_swa_pool(
        self,
        *,
        architectures: list[str] | tuple[str, ...],
        has_sliding_window: bool,
        config_opt_in: bool = False,
        trtllm_mha: bool = False,
        speculative: bool = False,
        sliding_window_pattern: bool = False,
    ) -> bool:
        """Whether this release sizes the model with the hybrid sliding-window pool (else one pool over all layers).

        ``has_sliding_window``: the model's layers carry a window (the 0.4.9.post6 - 0.5.6 rule);
        ``config_opt_in``: its config sets ``is_hybrid_swa``; ``trtllm_mha`` / ``speculative``: the GPT-OSS switch-off
        (trtllm_mha or speculative in 0.5.8, trtllm_mha only in 0.5.9).  Examples: gpt-oss-120b -> False under
        0.5.3 (override), True under 0.5.8 on an H100, False under 0.5.8 on a B200 (trtllm_mha), True under 0.5.9
        with EAGLE on an H100, True under 0.5.23.
        """
        archs = set(architectures)
        cond = {
            "always": True,
            "trtllm_mha-or-speculative": trtllm_mha or speculative,
            "trtllm_mha": trtllm_mha,
            "sliding_window_pattern": sliding_window_pattern,
        }
        if any(cond.get(self.swa_disabled_archs.get(a, ""), False) for a in archs):
            return False
        if self.hybrid_swa_archs is None:
            return has_sliding_window and not any("Llama4" in a for a in archs)
        return bool(archs & self.hybrid_swa_archs) or (self.swa_config_opt_in and config_opt_in)


#: the 0.5.23 values
#: ``mm_disabled_models`` in 0.5.23 (``configs/model_config.py`` ``ModelConfig.__init__``; 0.5.16+)
MM_DISABLED_0523: frozenset[str] = frozenset(
    {
        "Gemma3ForConditionalGeneration",
        "InklingForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        "Step3VLForConditionalGeneration",
    }
)

POOL_RULES_0523: PoolRules = PoolRules(hybrid_swa_archs=SWA_ARCHS_0523, swa_disabled_archs=SWA_DISABLED_0523)


def _mfs_0523(q: MemQuery) -> float:
    """The newest release's heuristic (``rules.default_mem_fraction_static``)."""
    return newest.default_mem_fraction_static(q)


def _bs_0523(*, gpu_memory_mib: int | None, tp_size: int, max_running_requests: int | None = None) -> int:
    return newest.default_cuda_graph_max_bs(
        gpu_memory_mib=gpu_memory_mib, tp_size=tp_size, max_running_requests=max_running_requests
    )


def _cps_0523(*, gpu_memory_mib: int | None, tp_size: int = 1) -> int:
    return newest.default_chunked_prefill_size(gpu_memory_mib=gpu_memory_mib, tp_size=tp_size)


def _prefill_0523(q: PrefillGraphQuery) -> bool:
    """0.5.23: :func:`rules.default_prefill_cuda_graph` (attention DP and speculative decoding do not switch it off)."""
    return newest.default_prefill_cuda_graph(
        vendor=q.vendor,
        pp_size=q.pp_size,
        dcp_size=q.dcp_size,
        disable_cuda_graph=q.disable_cuda_graph,
        is_multimodal=q.is_multimodal,
        is_deepseek_v4=q.is_deepseek_v4,
    )


#: the Qwen3-Next / Qwen3.5 hybrids whose model override picks the attention backend and page on SM100, by the
#: release that added them (server_args.py ``_handle_model_specific_adjustments`` 0.5.7 - 0.5.15;
#: arg_groups/overrides.py / model_overrides/qwen3_5.py ``_qwen3_5_hybrid_overrides`` 0.5.16+)
QWEN3_NEXT_SM100_ADDED: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = (
    ((0, 5, 7), ("Qwen3NextForCausalLM",)),
    ((0, 5, 9), ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration")),
    ((0, 5, 13), ("InternS2PreviewForConditionalGeneration",)),
    ((0, 5, 23), ("InternS2MobiusForConditionalGeneration",)),
)


def qwen3_next_sm100_page(
    q: PageQuery, *, rule: str, release: tuple[int, int, int], trtllm_default: bool = True
) -> int | None:
    """The page a Qwen3-Next / Qwen3.5 hybrid runs with on SM100 when ``--attention-backend`` is unset (None: the
    override does not apply: another GPU, another model, a backend given, or ``rule`` ""); the model, GPU and flags
    come from ``q`` (:class:`~kvplan.engines.sglang.page_query.PageQuery`)::

        rule "triton" (0.5.7 - 0.5.9): backend triton -> the requested page, else 1
        rule "pick" (0.5.10 - 0.5.13) / "force" (0.5.14+):
            backend = trtllm_mha  if the default is trtllm_mha and (extra_buffer or radix off or speculative)
                    = triton      otherwise (radix on, no_buffer, no speculative: MambaRadixCache needs page 1)
            extra_buffer = --mamba-radix-cache-strategy auto already resolved to it: 0.5.16+ (the radix-cache
                           pass runs before the override) with the overlap schedule on or a requested page > 1;
                           before 0.5.16 the override reads the unresolved "auto" (not extra_buffer)
            "pick":  page = the requested one, then trtllm_mha's constraint (64 unless 16 / 32 / 64); triton 1
            "force": page = 64 (trtllm_mha) or 1 (triton), over the requested one

    Examples on a B200: Qwen3-Next under 0.5.9 -> 1; under 0.5.13 and 0.5.14 -> 1 (triton), with
    --disable-radix-cache -> 64; under 0.5.16 and 0.5.23 -> 64 (extra_buffer), with --disable-overlap-schedule -> 1.
    Source: sgl-project/sglang python/sglang/srt/server_args.py ``_handle_model_specific_adjustments`` (Qwen3Next
    branch, 0.5.7; ``_handle_mamba_radix_cache(sm100_default_attention_backend="triton")`` 0.5.9;
    ``sm100_default_attn_backend`` picked 0.5.10 - 0.5.13, with ``self.page_size = 64 if ... else 1`` 0.5.14 -
    0.5.15, before ``_handle_mamba_radix_cache``: ``enable_mamba_extra_buffer()`` still sees "auto");
    arg_groups/overrides.py ``_qwen3_5_hybrid_overrides`` (``mamba_extra_buffer_of(resolved_view(...))``) 0.5.16 -
    0.5.18,
    arg_groups/model_overrides/qwen3_5.py 0.5.19 - 0.5.23.
    """
    requested, radix_cache = q.requested, q.radix_cache
    if not rule or q.attention_backend is not None or q.vendor not in ("nvidia", "cuda") or q.sm_major != 10:
        return None
    archs = {a for first, names in QWEN3_NEXT_SM100_ADDED if first <= release for a in names}
    if not archs.intersection(q.architectures or ()):
        return None
    if rule == "triton":
        return requested or 1
    extra_buffer = release >= (0, 5, 16) and radix_cache and (q.overlap_schedule or (requested or 0) > 1)
    trtllm = trtllm_default and (extra_buffer or not radix_cache or q.speculative)
    if rule == "force":
        return 64 if trtllm else 1
    if trtllm:
        return requested if requested in (16, 32, 64) else 64
    return requested or 1


def _page_0523(q: PageQuery) -> int:
    """The newest release's page: the Qwen3-Next SM100 override ("force"), else :func:`rules.default_page_size`."""
    forced = qwen3_next_sm100_page(q, rule="force", release=(0, 5, 23))
    return newest.default_page_size(q) if forced is None else forced


#: the newest release's rule set (:data:`DEFAULT_RELEASE`, the last of :data:`kvplan.supported.SGLANG_RELEASES`;
#: sgl-project/sglang, python/sglang/srt; see each function's docstring in ``rules``), complete so that a plan of
#: the newest release never builds the older windows (start-up).  The newest release is also the last row of the
#: release table (``history.windows._CHANGES``), which states what it changed like every other release; a test
#: checks that walking the table ends at exactly this rule set.
DEFAULT_RULES = RuleSet(
    release=DEFAULT_RELEASE,
    default_mem_fraction_static=_mfs_0523,
    default_chunked_prefill_size=_cps_0523,
    default_cuda_graph_max_bs=_bs_0523,
    default_prefill_cuda_graph=_prefill_0523,
    default_page_size=_page_0523,
    budget_bytes=newest.budget_bytes,
    multimodal_reserve_bytes=newest.multimodal_reserve_bytes,
    page_floor=newest.page_floor,
    pool_tokens=newest.pool_tokens,
    resolve_max_running_requests=newest.resolve_max_running_requests,
    max_running_requests_reduction=newest.max_running_requests_reduction,
    max_request_len=newest.max_request_len,
    speculative_cell=newest.speculative_cell,
    pp_layer_ranges=newest.pp_layer_ranges,
    mla_families=frozenset({Family.MLA, Family.DSA}),
    # arg_groups/model_overrides/deepseek_v4.py _deepseek_v4_overrides (page 256); deepseek_v4_hook.py
    # apply_deepseek_v4_defaults (max_running_requests 256); cuda_graph_hook.py (no prefill graph for DSV4)
    overrides=MappingProxyType(
        {
            Family.DSV4: FamilyOverride(
                name="DeepSeek-V4", page_size=256, max_running_requests=256, prefill_cuda_graph=False
            )
        }
    ),
)


@dataclass(repr=False, eq=False)  # not frozen (a frozen dataclass costs more to create); __eq__: Record's
class ReleaseWindow(Record):
    """Releases ``first`` .. ``last`` (inclusive) share ``rules``."""

    __repr__ = object.__repr__  # repr=False: the default repr, as before

    first: str
    last: str
    rules: RuleSet

    def covers(self, version: str) -> bool:
        """Whether the release ``version`` (any form :func:`read_release` reads) falls in this window."""
        try:
            key = read_release(version).key
        except InputError:
            return False
        return Version.of(self.first) <= key <= Version.of(self.last)

    @property
    def label(self) -> str:
        return self.first if self.first == self.last else f"{self.first} - {self.last}"


# ================================================================================================
# Versions
# ================================================================================================

#: build dates stored in the wheels (zipfile date_time of sglang/version.py), for main-branch builds by date
RELEASE_DATES: dict[str, str] = {
    "0.3.0": "2024-09-03",
    "0.3.1": "2024-09-15",
    "0.3.2": "2024-09-25",
    "0.3.3": "2024-10-08",
    "0.3.4": "2024-10-19",
    "0.3.4.post1": "2024-10-22",
    "0.3.5": "2024-11-03",
    "0.3.6": "2024-11-22",
    "0.4.0": "2024-12-03",
    "0.4.0.post2": "2024-12-21",
    "0.4.1": "2024-12-25",
    "0.4.1.post7": "2025-01-20",
    "0.4.3.post2": "2025-02-17",
    "0.4.4": "2025-03-13",
    "0.4.4.post1": "2025-03-14",
    "0.4.4.post2": "2025-03-27",
    "0.4.4.post3": "2025-03-29",
    "0.4.4.post4": "2025-04-05",
    "0.4.5": "2025-04-07",
    "0.4.5.post2": "2025-04-20",
    "0.4.5.post3": "2025-04-22",
    "0.4.6.post1": "2025-04-28",
    "0.4.6.post2": "2025-05-01",
    "0.4.6.post5": "2025-05-24",
    "0.4.7": "2025-06-10",
    "0.4.7.post1": "2025-06-16",
    "0.4.8": "2025-06-24",
    "0.4.9": "2025-07-06",
    "0.4.9.post6": "2025-07-29",
    "0.4.10": "2025-07-31",
    "0.5.0rc2": "2025-08-14",
    "0.5.1.post3": "2025-08-27",
    "0.5.2": "2025-09-11",
    "0.5.3": "2025-10-06",
    "0.5.4": "2025-10-24",
    "0.5.5": "2025-11-06",
    "0.5.6": "2025-12-03",
    "0.5.7": "2026-01-01",
    "0.5.8": "2026-01-23",
    "0.5.9": "2026-02-23",
    "0.5.10": "2026-04-05",
    "0.5.11": "2026-05-07",
    "0.5.12": "2026-05-16",
    "0.5.13": "2026-06-11",
    "0.5.14": "2026-06-26",
    "0.5.15": "2026-07-10",
    "0.5.16": "2026-07-25",
    "0.5.17": "2026-08-08",
    "0.5.18": "2026-08-21",
    "0.5.19": "2026-09-04",
    "0.5.20": "2026-09-18",
    "0.5.21": "2026-10-01",
    "0.5.22": "2026-10-15",
    "0.5.23": "2026-10-30",
}

#: the first release with each family's pool layout (a plan of an older release is refused): the ``since`` field of
#: the families' rows (``kvplan.family.FAMILY_SPECS``), where each release's source is cited
FAMILY_SINCE: Mapping[Family, str] = family_since("sglang")

# a main-branch build named by its date (``main-2025-08-01`` / ``main-20250801``): SGLang's build naming, not a
# version (kvplan.version reads the versions); compiled by re's cache on first use
_MAIN = r"main[-_]?(\d{4})-?(\d{2})-?(\d{2})"


class Release:
    """A parsed ``--engine-version``: ``release`` is the one whose window applies (an rc: its release; a main build:
    the release it was mapped to), ``key`` its sort key, ``note`` why it was mapped (None: given as is).
    (A plain class: a dataclass would cost the default plan's start-up a measurable share of a millisecond.)"""

    __slots__ = ("key", "note", "release", "requested")

    def __init__(self, *, requested: str, release: str, key: Version, note: str | None = None) -> None:
        self.requested, self.release, self.key, self.note = requested, release, key, note

    def __repr__(self) -> str:
        return f"Release(requested={self.requested!r}, release={self.release!r}, note={self.note!r})"


def _bad(version: str, why: str) -> InputError:
    lo, hi = SUPPORTED
    return InputError(
        f"SGLang {why}: kvplan has the rules of SGLang {lo} - {hi}",
        field="--engine-version",
        hint=f"give a release from {lo} to {hi} (e.g. 0.4.7.post1, 0.5.0rc2, main-2025-08-01); see docs/sglang.md",
    )


def _by_date(date: str, requested: str, below: Version | None = None) -> Release:
    known = [(d, v) for v, d in RELEASE_DATES.items() if d <= date and (below is None or Version.of(v) < below)]
    if not known:
        raise _bad(requested, f"build {requested!r} is older than {SUPPORTED[0]}")
    if date > RELEASE_DATES[SUPPORTED[1]]:
        raise _bad(requested, f"build {requested!r} is newer than {SUPPORTED[1]}")
    _, rel = max(known, key=lambda dv: (dv[0], Version.of(dv[1])))
    return Release(
        requested=requested,
        release=rel,
        key=Version.of(rel),
        note=f"{requested} is a main-branch build: sized as {rel}, the newest release built on or before {date}",
    )


def read_release(version: str) -> Release:
    """Read an ``--engine-version`` (see the module docstring for the forms) with :func:`kvplan.version.parse_version`
    and SGLang's rules for builds (an rc is sized as its release, a ``.devN`` build as the release before it, a main
    build by its date); InputError when unreadable or outside :data:`SUPPORTED`.

    Examples: ``"0.4.7.post1"`` -> 0.4.7.post1; ``"v0.5.23"`` -> 0.5.23; ``"0.5.2rc2"`` -> 0.5.2 with a note;
    ``"main-2025-08-01"`` -> 0.4.10 with a note; ``"0.5.3.dev20250801"`` -> 0.4.10 with a note.
    """
    text = version.strip() if isinstance(version, str) else ""
    main = re.fullmatch(_MAIN, text)
    if main:
        return _by_date(f"{main[1]}-{main[2]}-{main[3]}", text)
    v = parse_version(text)
    # SGLang publishes X.Y[.Z] with an rc or a .post (not both), never a fourth number nor an alpha / beta
    if v is None or len(v.release) > 3 or (v.pre is not None and (v.pre[0] != "rc" or v.post is not None)):
        raise _bad(text, f"release {version!r} is not a version kvplan can read")
    base = Version(v.triple)
    if v.dev is not None:  # .devN: a main-branch build before `base`; an 8-digit N is its date
        dev = str(v.dev)
        if len(dev) == 8:
            return _by_date(f"{dev[:4]}-{dev[4:6]}-{dev[6:]}", text, below=Version(v.triple, dev=0))
        key = Version(v.triple, dev=v.dev)
    elif v.pre is not None:  # an rc is sized as the release it is the candidate of
        key = base
    else:
        key = Version(v.triple, post=v.post)
    lo, hi = Version.of(SUPPORTED[0]), Version.of(SUPPORTED[1])
    if key < lo or key.triple > hi.triple:
        raise _bad(text, f"release {text} is outside the supported range")
    final = ".".join(map(str, v.triple))
    canon = final + (f".post{key.post}" if key.post is not None and key.dev is None else "")
    note = None
    if v.dev is not None:
        note = f"{text} is a development build of {final}: sized with the rules of the release before it"
    elif v.pre is not None:
        note = f"{text} is a release candidate of {final}: sized as {final}"
    elif canon not in RELEASE_DATES and key > hi:
        note = f"{text} is newer than {SUPPORTED[1]}, the newest release kvplan has read: sized as {SUPPORTED[1]}"
    return Release(requested=text, release=canon, key=key, note=note)
