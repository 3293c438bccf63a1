"""The KV families kvplan plans: one type and one declaration per family, used by every layer.

A family says how a model's layers store their KV cache, engine-neutrally.  ``Family`` is a ``str`` enum, so a member
equals its value (``Family.GQA == "gqa"``) and serialises to it in JSON and CSV.

Each family is **one row** of :data:`FAMILY_SPECS` (a :class:`FamilySpec`): its label, how a config is detected as
it, where its geometry lives, each engine's pricing of it (SGLang's pool planner module, its sweep evaluator;
vLLM's KV-spec builder, its grouper, its block-size default), the weight inventory's layer builder, and the first
release of each engine that has it.  Every registry is derived from the table: ``kvplan.hfconfig.detect`` (detection),
``kvplan.engines.sglang.pools.POOL_PLANNERS`` / ``SWEEP_VECTORS`` / ``VECTOR_FAMILIES``,
``kvplan.engines.vllm.specs.SPEC_BUILDERS``, ``kvplan.engines.vllm.grouping.GROUPERS``, the vLLM block rules, the
weight inventory's ``LAYER_BUILDERS`` and SGLang's ``FAMILY_SINCE`` (:func:`family_since`).

The table is in the core layer, so it names the code of higher layers by **dotted strings** (``"module:function"``
or a module path), resolved on first use by the registry that reads it (:func:`resolve`): ``kvplan fit`` loads only
the modules of the family it sizes (start-up is a feature, tests/test_startup_imports.py).

Adding a family: a member here and its :class:`FamilySpec` row, then the files docs/architecture.md lists under
"Where a change goes" (tests/test_family_spec.py adds one in a scratch copy and checks the list).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import import_module
from types import MappingProxyType
from typing import Any


class Family(StrEnum):
    GQA = "gqa"  # MHA / GQA / MQA: K and V per KV head on every layer
    MLA = "mla"  # multi-head latent attention: one compressed latent + RoPE key per token
    DSA = "dsa"  # MLA with DeepSeek sparse attention's indexer keys (V3.2, GLM-5)
    DSV4 = "dsv4"  # DeepSeek-V4 family: compressed + sliding-window pools
    HYBRID_SWA = "hybrid_swa"  # full-attention layers beside sliding-window layers
    HYBRID_MAMBA = "hybrid_mamba"  # attention layers beside Mamba / linear-attention (state) layers

    @property
    def is_hybrid(self) -> bool:
        """Layers of more than one kind (the pool holds more than one kind of page)."""
        return FAMILY_SPECS[self].hybrid

    @property
    def label(self) -> str:
        return FAMILY_SPECS[self].label

    @property
    def spec(self) -> FamilySpec:
        """This family's row of :data:`FAMILY_SPECS`."""
        return FAMILY_SPECS[self]


@dataclass(frozen=True, repr=False, eq=False)  # no generated repr / eq / hash: 3 compiled methods less each at start-up
class DetectRule:
    """One detection rule of a family, at ``order`` in the first-match table of ``kvplan.hfconfig.detect``.

    The rule matches a flat config when its ``architectures`` meet ``archs``, its ``model_type`` is one of
    ``model_types``, or the ``predicate`` (a function name of ``kvplan.hfconfig.detect`` taking the config facts)
    says so.  ``vllm``: vLLM's model classes read the declared architectures / model types the same way
    (``kvplan.hfconfig.detect.vllm_family`` checks them before its own rules); the built-in families' rules are
    SGLang's and vLLM decides them with its own code, so theirs say False.

    Example: ``DetectRule(order=10, archs=frozenset({"DeepseekV4ForCausalLM"}), predicate="dsv4_rule")``.
    """

    order: int
    archs: frozenset[str] = frozenset()
    model_types: frozenset[str] = frozenset()
    predicate: str | None = None
    shared: bool = True


@dataclass(frozen=True, repr=False, eq=False)  # no generated repr / eq / hash: 3 compiled methods less each at start-up
class BlockDefault:
    """vLLM's attention block size for the family: ``size`` unless the user gives one and ``user_may_set``;
    ``note`` is the assumption kvplan prints when it takes the default (``kvplan.engines.vllm.releases.BlockRule``)."""

    size: int
    user_may_set: bool = True
    note: str | None = None


@dataclass(frozen=True, repr=False, eq=False)  # no generated repr / eq / hash: 3 compiled methods less each at start-up
class FamilySpec:
    """Everything kvplan declares about one family; every registry is a view of these rows.

    Dotted strings (``"package.module:function"`` or a module path) are resolved on first use (:func:`resolve`).

    * ``detect``: the family's detection rules (:class:`DetectRule`), placed in one first-match order;
    * ``geometry``: the module of ``kvplan.geometry`` holding its engine-neutral geometry;
    * ``sglang_pools``: the module of ``kvplan.engines.sglang.pools`` with ``plan(ctx)`` and ``breakdown(model)``;
      ``sglang_dcp``: whether kvplan models decode context parallelism for it;
    * ``sglang_sweep``: the module whose ``vector_group(ctx, cell=)`` evaluates it in ``kvplan sweep`` (None: one
      ``fit`` per point); ``single_cell``: one per-token cell and no fixed pool (the common sweep formula);
    * ``vllm_spec``: vLLM's KV-spec builder (``(cfg, SpecContext) -> ModelKV``); ``vllm_grouper``: its own
      grouping into KV-cache groups (None: the common one); ``vllm_block``: its block-size default;
    * ``layer_builder``: the weight inventory's decoder-layer builder (``kvplan.weights.inventory.LAYER_BUILDERS``;
      the weight-layout family of a config is ``kvplan.hfconfig.detect.weights_family``);
    * ``since``: engine -> the first release with the family's pool layout (an absent engine: every release
      kvplan has rules for).
    """

    family: Family
    label: str
    hybrid: bool
    attention: bool  # every attention layer of one kind (the KV-dtype and page rules take these as they are)
    detect: tuple[DetectRule, ...]
    geometry: str
    sglang_pools: str
    sglang_sweep: str | None
    vllm_spec: str
    vllm_block: BlockDefault
    layer_builder: str
    since: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    sglang_dcp: bool = False
    single_cell: bool = False
    vllm_grouper: str | None = None


_POOLS = "kvplan.engines.sglang.pools"
_SPECS = "kvplan.engines.vllm.specs"
_LAYERS = "kvplan.weights.inventory"
_MLA_NOTE = "MLA block size 64 (FlashMLA / sparse-MLA backends); pass block_size for 16/32/128 backends"


def _since(**by_engine: str) -> Mapping[str, str]:
    return MappingProxyType(by_engine)


#: one row per family, in :class:`Family` order.  Sources of the ``since`` releases (SGLang, package paths under
#: ``python/``): GQA / MLA the oldest release kvplan reads; hybrid SWA mem_cache/memory_pool.py SWAKVPool is in
#: 0.4.9, but only for Llama-4 with --hybrid-kvcache-ratio (opt-in, not the ratio pool kvplan sizes): model_runner.py
#: gives every sliding-window model the pool from 0.4.9.post6; hybrid Mamba mem_cache/memory_pool.py
#: HybridReqToTokenPool / MambaPool (Qwen3-Next, 0.5.2); DSA NSATokenToKVPool (DeepSeek-V3.2, 0.5.3); DeepSeek-V4
#: mem_cache/deepseek_v4_memory_pool.py (0.5.12).  vLLM block sizes: ``CacheConfig.DEFAULT_BLOCK_SIZE`` 16,
#: FlashMLA / sparse-MLA 64 (``platforms/cuda.py``), DeepSeek-V4 caches fixed at 256 (``models/deepseek_v4``), v0.33.0.
_SPEC_ROWS: tuple[FamilySpec, ...] = (
    FamilySpec(
        family=Family.GQA,
        label="grouped-query attention",
        hybrid=False,
        attention=True,
        detect=(),  # the fallback: what no rule matches
        geometry="kvplan.geometry.gqa",
        sglang_pools=f"{_POOLS}.gqa",
        sglang_sweep=f"{_POOLS}.vector",
        single_cell=True,
        sglang_dcp=True,
        vllm_spec=f"{_SPECS}:build_attention",
        vllm_block=BlockDefault(16),
        layer_builder=f"{_LAYERS}:_gqa_layer",
        since=_since(sglang="0.3.0"),
    ),
    FamilySpec(
        family=Family.MLA,
        label="multi-head latent attention",
        hybrid=False,
        attention=True,
        detect=(DetectRule(order=50, predicate="mla_rule", shared=False),),
        geometry="kvplan.geometry.mla",
        sglang_pools=f"{_POOLS}.mla",
        sglang_sweep=f"{_POOLS}.vector",
        single_cell=True,
        sglang_dcp=True,
        vllm_spec=f"{_SPECS}:build_mla",
        vllm_block=BlockDefault(64, note=_MLA_NOTE),
        layer_builder=f"{_LAYERS}:_latent_layer",
        since=_since(sglang="0.3.0"),
    ),
    FamilySpec(
        family=Family.DSA,
        label="DeepSeek sparse attention",
        hybrid=False,
        attention=True,
        detect=(DetectRule(order=30, predicate="dsa_rule", shared=False),),
        geometry="kvplan.geometry.dsa",
        sglang_pools=f"{_POOLS}.dsa",
        sglang_sweep=f"{_POOLS}.vector",
        single_cell=True,
        sglang_dcp=True,
        vllm_spec=f"{_SPECS}:build_dsa",
        vllm_block=BlockDefault(64, note=_MLA_NOTE),
        layer_builder=f"{_LAYERS}:_latent_layer",
        since=_since(sglang="0.5.3"),
    ),
    FamilySpec(
        family=Family.DSV4,
        label="DeepSeek-V4 compressed attention",
        hybrid=False,
        attention=True,
        detect=(DetectRule(order=10, predicate="dsv4_rule", shared=False),),
        geometry="kvplan.geometry.dsv4",
        sglang_pools=f"{_POOLS}.dsv4",
        sglang_sweep=f"{_POOLS}.dsv4",
        vllm_spec=f"{_SPECS}:build_dsv4",
        vllm_grouper="kvplan.engines.vllm.grouping:group_dsv4",
        vllm_block=BlockDefault(256, user_may_set=False),
        layer_builder=f"{_LAYERS}:_dsv4_layer",
        since=_since(sglang="0.5.12"),
    ),
    FamilySpec(
        family=Family.HYBRID_SWA,
        label="sliding-window hybrid",
        hybrid=True,
        attention=False,
        detect=(
            DetectRule(order=20, predicate="mla_swa_rule", shared=False),  # Dots3: before the DSA / MLA rules
            DetectRule(order=60, predicate="swa_rule", shared=False),
        ),
        geometry="kvplan.geometry.swa",
        sglang_pools=f"{_POOLS}.swa",
        sglang_sweep=f"{_POOLS}.swa",
        vllm_spec=f"{_SPECS}:build_attention",
        vllm_block=BlockDefault(16),
        layer_builder=f"{_LAYERS}:_gqa_layer",
        since=_since(sglang="0.4.9.post6"),
    ),
    FamilySpec(
        family=Family.HYBRID_MAMBA,
        label="linear-attention hybrid",
        hybrid=True,
        attention=False,
        detect=(DetectRule(order=40, predicate="mamba_rule", shared=False),),
        geometry="kvplan.geometry.mamba",
        sglang_pools=f"{_POOLS}.mamba",
        sglang_sweep=f"{_POOLS}.mamba",
        vllm_spec=f"{_SPECS}:build_attention",
        vllm_block=BlockDefault(16),
        layer_builder=f"{_LAYERS}:_hybrid_layer",
        since=_since(sglang="0.5.2"),
    ),
)

#: family -> its :class:`FamilySpec` (the one declaration every registry is derived from)
FAMILY_SPECS: Mapping[Family, FamilySpec] = MappingProxyType({s.family: s for s in _SPEC_ROWS})

#: families whose attention layers are all of one kind (the KV-dtype and page rules take these)
ATTENTION_FAMILIES: tuple[Family, ...] = tuple(s.family for s in _SPEC_ROWS if s.attention)


def family_since(engine: str) -> Mapping[Family, str]:
    """Family -> the first ``engine`` release with its pool layout (families every release has are absent).

    Example: ``family_since("sglang")[Family.DSV4] == "0.5.12"``; ``family_since("vllm") == {}``.
    """
    return MappingProxyType({s.family: s.since[engine] for s in _SPEC_ROWS if engine in s.since})


def resolve(path: str) -> Any:
    """The object a dotted string of the table names: ``"pkg.mod:name"`` -> ``pkg.mod.name``, ``"pkg.mod"`` -> the
    module.  Example: ``resolve("kvplan.units:GiB") == 2**30``."""
    module, _, name = path.partition(":")
    mod = import_module(module)
    return getattr(mod, name) if name else mod


def family_or_none(value: object) -> Family | None:
    """``Family(value)`` for a family name (or member), None for anything else.

    Example: ``family_or_none("dsa") is Family.DSA``; ``family_or_none("rwkv") is None``.
    """
    if isinstance(value, Family):
        return value
    if isinstance(value, str) and value in Family._value2member_map_:
        return Family(value)
    return None
