"""The types every SGLang pool planner shares: one context in, one plan out.

``plan_sglang`` resolves what is the same for every family (parallelism, device, KV dtype, context, the default
flags, the budget) into a :class:`PoolContext`; the family's :class:`PoolPlanner` turns it into a :class:`PoolPlan`
(tokens, cell, pools, fixed bytes, layout text, notes, warnings and the request cap); the shared epilogue turns
that into the verdict and the memory breakdown.  ``kvplan show`` asks the same planner for its per-family
:class:`Breakdown`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvplan.engines.backends import AttentionBackend, Dsv4AttnBackend, MambaSsmDtype
from kvplan.family import Family
from kvplan.result import Basis, Pool

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.engines.sglang.releases import RuleSet
    from kvplan.engines.sglang.speculative import SpecPlan
    from kvplan.hfconfig.dtypes import DType
    from kvplan.hfconfig.spec import ModelSpec

#: speculative algorithms whose draft worker keeps a KV pool sharing the target's token count (the EAGLE branch of
#: ``DefaultPoolConfigurator``: ``is_eagle()`` = EAGLE, EAGLE3, FROZEN_KV_MTP, and STANDALONE; NEXTN / MTP as given)
SPEC_DRAFT_ALGOS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE", "FROZEN_KV_MTP"})


# The records here cost no generated code at import: the dataclass decorator generates and compiles an ``__init__``
# (0.3-0.6 ms a class) and ``kvplan fit`` imports this module on every start (docs/performance.md, "Start-up").
# PoolFlags and PoolContext, which callers copy with ``dataclasses.replace``, are dataclasses with a written-out
# ``__init__`` (``init=False``; tests/test_startup_imports.py checks it takes exactly the fields, with their defaults);
# their fields are grouped into small frozen sub-records (:class:`SpecFlags`, :class:`MambaFlags`,
# :class:`PoolParallel`, :class:`PoolLimits`, :class:`PoolDevice`: plain classes with slots, copied with their
# ``replace``) so no constructor takes more than 10 parameters, and read-only properties give the planners the flat
# names they always read (``ctx.attn_tp``, ``ctx.flags.speculative_algorithm`` ...).  PoolPlan and Breakdown, which
# nothing copies, are plain classes with slots; PoolPlanner (copied by tests) is a dataclass with a written-out
# ``__init__`` too (and the generated ``__eq__`` it always had).


class _Frozen:
    """A small frozen record: slots set once by ``__init__``, compared field by field, copied with :meth:`replace`."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen (use .replace)")

    def _set(self, **values: object) -> None:
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (TypeError on a name that is not a field)."""
        unknown = set(changes) - set(self.__slots__)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        new = object.__new__(type(self))
        new._set(**{k: changes.get(k, getattr(self, k)) for k in self.__slots__})
        return new


class SpecFlags(_Frozen):
    """The speculative flags as SGLang resolved them (``--speculative-algorithm`` and its handler's choices)."""

    __slots__ = (
        "speculative_algorithm",
        "speculative_draft_stages",
        "speculative_num_draft_tokens",
        "speculative_num_steps",
    )
    speculative_algorithm: str  # --speculative-algorithm, upper-case ("" when off)
    speculative_num_draft_tokens: int  # --speculative-num-draft-tokens (0 when speculation is off)
    speculative_num_steps: int | None  # speculative_num_steps as resolved (None: the pool's own default)
    speculative_draft_stages: int  # DeepSeek-V4: SWA layers of the draft worker's own pool

    def __init__(
        self,
        *,
        speculative_algorithm: str = "",
        speculative_num_draft_tokens: int = 0,
        speculative_num_steps: int | None = None,
        speculative_draft_stages: int = 0,
    ) -> None:
        self._set(
            speculative_algorithm=speculative_algorithm,
            speculative_num_draft_tokens=speculative_num_draft_tokens,
            speculative_num_steps=speculative_num_steps,
            speculative_draft_stages=speculative_draft_stages,
        )


class MambaFlags(_Frozen):
    """The hybrid linear-attention (Mamba) flags."""

    __slots__ = ("mamba_full_memory_ratio", "mamba_ssm_dtype", "max_mamba_cache_size")
    mamba_full_memory_ratio: float  # --mamba-full-memory-ratio
    max_mamba_cache_size: int | None  # --max-mamba-cache-size
    mamba_ssm_dtype: MambaSsmDtype | None  # --mamba-ssm-dtype

    def __init__(
        self,
        *,
        mamba_full_memory_ratio: float = 0.9,
        max_mamba_cache_size: int | None = None,
        mamba_ssm_dtype: MambaSsmDtype | str | None = None,
    ) -> None:
        self._set(
            mamba_full_memory_ratio=mamba_full_memory_ratio,
            max_mamba_cache_size=max_mamba_cache_size,
            mamba_ssm_dtype=MambaSsmDtype.parse(mamba_ssm_dtype, fold=True, strip=True),
        )


@dataclass(init=False, eq=False, repr=False)
class PoolFlags:
    """The server flags the pool planners read (SGLang's spelling in the comments); the speculative and Mamba ones
    in their sub-records, read through properties of the same names."""

    max_total_tokens: int | None = None  # --max-total-tokens
    radix_cache: bool = True  # not --disable-radix-cache
    overlap_schedule: bool = True  # not --disable-overlap-schedule
    swa_full_tokens_ratio: float | None = None  # --swa-full-tokens-ratio
    pp_layer_partition: str | None = None  # SGLANG_PP_LAYER_PARTITION
    dsv4_attn_backend: Dsv4AttnBackend | None = None  # --dsv4-attn-backend
    attention_backend: AttentionBackend | None = None  # --attention-backend (None: the engine's default for the GPU)
    spec: SpecFlags = field(default_factory=SpecFlags)
    mamba: MambaFlags = field(default_factory=MambaFlags)

    def __init__(
        self,
        *,
        max_total_tokens: int | None = None,
        radix_cache: bool = True,
        overlap_schedule: bool = True,
        swa_full_tokens_ratio: float | None = None,
        pp_layer_partition: str | None = None,
        dsv4_attn_backend: Dsv4AttnBackend | str | None = None,
        attention_backend: AttentionBackend | str | None = None,
        spec: SpecFlags | None = None,
        mamba: MambaFlags | None = None,
    ) -> None:
        self.max_total_tokens = max_total_tokens
        self.radix_cache = radix_cache
        self.overlap_schedule = overlap_schedule
        self.swa_full_tokens_ratio = swa_full_tokens_ratio
        self.pp_layer_partition = pp_layer_partition
        # the one place the SGLang pools' backend flags are resolved (kvplan/engines/backends.py)
        self.dsv4_attn_backend = Dsv4AttnBackend.parse(dsv4_attn_backend, fold=True)
        self.attention_backend = AttentionBackend.parse(attention_backend)
        self.spec = SpecFlags() if spec is None else spec
        self.mamba = MambaFlags() if mamba is None else mamba

    @property
    def speculative_algorithm(self) -> str:
        return self.spec.speculative_algorithm

    @property
    def speculative_num_draft_tokens(self) -> int:
        return self.spec.speculative_num_draft_tokens

    @property
    def speculative_num_steps(self) -> int | None:
        return self.spec.speculative_num_steps

    @property
    def speculative_draft_stages(self) -> int:
        return self.spec.speculative_draft_stages

    @property
    def mamba_full_memory_ratio(self) -> float:
        return self.mamba.mamba_full_memory_ratio

    @property
    def max_mamba_cache_size(self) -> int | None:
        return self.mamba.max_mamba_cache_size

    @property
    def mamba_ssm_dtype(self) -> MambaSsmDtype | None:
        return self.mamba.mamba_ssm_dtype

    @classmethod
    def from_deployment(cls, dep: Deployment, spec: SpecPlan | None = None) -> PoolFlags:
        """The deployment's flags; ``spec`` (:func:`kvplan.engines.sglang.speculative.resolve_speculative`) gives the
        speculative fields as SGLang resolves them, else they are read as given."""
        if spec is not None:
            algo, drafts, steps, stages = (spec.algorithm, spec.num_draft_tokens, spec.num_steps, spec.draft_stages)
        else:
            algo = (dep.speculative_algorithm or "").upper()
            drafts, steps, stages = ((dep.speculative_num_draft_tokens or 0) if algo else 0), None, 0
        return cls(
            max_total_tokens=dep.max_total_tokens,
            radix_cache=not dep.disable_radix_cache,
            overlap_schedule=not dep.disable_overlap_schedule,
            swa_full_tokens_ratio=dep.swa_full_tokens_ratio,
            pp_layer_partition=dep.pp_layer_partition,
            dsv4_attn_backend=dep.dsv4_attn_backend,
            attention_backend=dep.attention_backend,
            spec=SpecFlags(
                speculative_algorithm=algo,
                speculative_num_draft_tokens=drafts,
                speculative_num_steps=steps,
                speculative_draft_stages=stages,
            ),
            mamba=MambaFlags(
                mamba_full_memory_ratio=dep.mamba_full_memory_ratio if dep.mamba_full_memory_ratio is not None else 0.9,
                max_mamba_cache_size=dep.max_mamba_cache_size,
                mamba_ssm_dtype=dep.mamba_ssm_dtype,
            ),
        )


class PoolParallel(_Frozen):
    """The parallelism a pool planner sees, for one attention-DP rank."""

    __slots__ = ("attn_dp", "attn_tp", "dcp", "dp", "pp")
    attn_tp: int
    attn_dp: int
    dp: int
    pp: int
    dcp: int

    def __init__(self, *, attn_tp: int, attn_dp: int, dp: int, pp: int, dcp: int) -> None:
        self._set(attn_tp=attn_tp, attn_dp=attn_dp, dp=dp, pp=pp, dcp=dcp)


class PoolLimits(_Frozen):
    """The request limits in force: context, chunked prefill, request cap."""

    __slots__ = ("chunked_prefill_flag", "chunked_prefill_size", "context_len", "max_running_requests")
    context_len: int
    chunked_prefill_size: int  # per attention-DP rank (after the DP division)
    chunked_prefill_flag: int  # the global flag (the DSV4 configurator divides it itself)
    max_running_requests: int | None  # the request cap in force: the user's, else the family default, else None

    def __init__(
        self,
        *,
        context_len: int,
        chunked_prefill_size: int,
        chunked_prefill_flag: int,
        max_running_requests: int | None,
    ) -> None:
        self._set(
            context_len=context_len,
            chunked_prefill_size=chunked_prefill_size,
            chunked_prefill_flag=chunked_prefill_flag,
            max_running_requests=max_running_requests,
        )


class PoolDevice(_Frozen):
    """The GPU facts a pool planner reads."""

    __slots__ = ("sm_major", "vendor")
    sm_major: int | None
    vendor: str

    def __init__(self, *, sm_major: int | None = None, vendor: str = "nvidia") -> None:
        self._set(sm_major=sm_major, vendor=vendor)


@dataclass(init=False, eq=False, repr=False)
class PoolContext:
    """What a pool planner needs, for one attention-DP rank (resolved by ``plan_sglang``'s prologue); the
    parallelism, the request limits and the device in sub-records, read through properties of the flat names."""

    model: ModelSpec
    rules: RuleSet
    budget: int  # KV byte budget (<= 0: nothing to pool; the planner returns an empty plan)
    page_size: int
    kv_dtype: DType  # resolved once by the planner (auto already applied)
    par: PoolParallel
    limits: PoolLimits
    device: PoolDevice = field(default_factory=PoolDevice)
    flags: PoolFlags = field(default_factory=PoolFlags)
    release: str | None = None  # the release asked for (None: the newest); rules hold its window

    def __init__(
        self,
        *,
        model: ModelSpec,
        rules: RuleSet,
        budget: int,
        page_size: int,
        kv_dtype: DType,
        par: PoolParallel,
        limits: PoolLimits,
        device: PoolDevice | None = None,
        flags: PoolFlags | None = None,
        release: str | None = None,
    ) -> None:
        self.model, self.rules, self.budget, self.page_size, self.kv_dtype = model, rules, budget, page_size, kv_dtype
        self.par, self.limits = par, limits
        self.device = PoolDevice() if device is None else device
        self.flags = PoolFlags() if flags is None else flags
        self.release = release

    @property
    def attn_tp(self) -> int:
        return self.par.attn_tp

    @property
    def attn_dp(self) -> int:
        return self.par.attn_dp

    @property
    def dp(self) -> int:
        return self.par.dp

    @property
    def pp(self) -> int:
        return self.par.pp

    @property
    def dcp(self) -> int:
        return self.par.dcp

    @property
    def context_len(self) -> int:
        return self.limits.context_len

    @property
    def chunked_prefill_size(self) -> int:
        return self.limits.chunked_prefill_size

    @property
    def chunked_prefill_flag(self) -> int:
        return self.limits.chunked_prefill_flag

    @property
    def max_running_requests(self) -> int | None:
        return self.limits.max_running_requests

    @property
    def sm_major(self) -> int | None:
        return self.device.sm_major

    @property
    def vendor(self) -> str:
        return self.device.vendor

    @property
    def config(self) -> Mapping[str, Any]:
        """The model's config as the engine read it (the raw nested one when kvplan kept it)."""
        return self.model.raw_config or self.model.config


class PlanDetail(_Frozen):
    """What a :class:`PoolPlan` lists beside its numbers: the pools, the notes (assumptions), the warnings and the
    other KV bases.  The lists are taken as given (``None``: a new empty list) and become the plan's own."""

    __slots__ = ("bases", "notes", "pools", "warnings")
    pools: list[Pool]
    notes: list[str]
    warnings: list[str]
    bases: list[Basis]

    def __init__(
        self,
        *,
        pools: list[Pool] | None = None,
        notes: list[str] | None = None,
        warnings: list[str] | None = None,
        bases: list[Basis] | None = None,
    ) -> None:
        self._set(
            pools=[] if pools is None else pools,
            notes=[] if notes is None else notes,
            warnings=[] if warnings is None else warnings,
            bases=[] if bases is None else bases,
        )


class PoolPlan:
    """One family's pools for one rank: what the shared epilogue reports (the lists arrive in a
    :class:`PlanDetail`, and are the plan's attributes ``pools``, ``notes``, ``warnings``, ``bases``)."""

    __slots__ = (
        "bases",
        "cell",
        "fixed_bytes",
        "fixed_note",
        "kv_pool_bytes",
        "kv_slice_bytes",
        "layout",
        "max_running_requests",
        "notes",
        "pools",
        "reduced",
        "tokens",
        "warnings",
    )

    def __init__(
        self,
        *,
        tokens: int,
        cell: float,
        layout: str,
        max_running_requests: int,
        reduced: bool,
        kv_pool_bytes: int,
        kv_slice_bytes: int,
        fixed_bytes: int = 0,
        fixed_note: str = "",
        detail: PlanDetail | None = None,
    ) -> None:
        d = PlanDetail() if detail is None else detail
        self.tokens = tokens  # max_total_num_tokens (after the caps and the PP MIN)
        self.cell = cell  # bytes one token costs (the engine's cell; DeepSeek-V4: per full token)
        self.layout = layout
        self.max_running_requests = max_running_requests  # per attention-DP rank
        self.reduced = reduced  # SGLang cut the requested request cap to tokens // 2
        self.kv_pool_bytes = kv_pool_bytes  # FitResult.kv_pool_bytes
        self.kv_slice_bytes = kv_slice_bytes  # the "KV pool" slice of the memory breakdown
        self.pools: list[Pool] = d.pools
        self.fixed_bytes = fixed_bytes  # budgeted bytes that do not scale with tokens
        self.fixed_note = fixed_note  # what the fixed bytes are (the memory breakdown's note)
        self.notes: list[str] = d.notes  # assumptions
        self.warnings: list[str] = d.warnings
        self.bases: list[Basis] = d.bases


class Breakdown:
    """``kvplan show``'s per-family part: geometry facts and one row per (dtype, TP, layout ...)."""

    __slots__ = ("info", "rows")

    def __init__(self, *, info: dict[str, Any] | None = None, rows: list[dict[str, Any]] | None = None) -> None:
        self.info: dict[str, Any] = {} if info is None else info
        self.rows: list[dict[str, Any]] = [] if rows is None else rows


@dataclass(init=False, repr=False)
class PoolPlanner:
    """One family's SGLang pricing: ``plan`` sizes the pools for ``fit``, ``breakdown`` feeds ``show``.

    ``supports_dcp``: whether kvplan models decode context parallelism for the family.
    """

    family: Family
    plan: Callable[[PoolContext], PoolPlan]
    breakdown: Callable[[ModelSpec], Breakdown]
    supports_dcp: bool = False

    def __init__(
        self,
        family: Family,
        plan: Callable[[PoolContext], PoolPlan],
        breakdown: Callable[[ModelSpec], Breakdown],
        supports_dcp: bool = False,
    ) -> None:
        self.family = family
        self.plan = plan
        self.breakdown = breakdown
        self.supports_dcp = supports_dcp


def request_cap(ctx: PoolContext, tokens: int) -> tuple[int, bool]:
    """(max_running_requests per attention-DP rank, whether SGLang reduced the requested value), by the rule set's
    ``resolve_max_running_requests`` / ``max_running_requests_reduction``."""
    kw: dict[str, Any] = dict(
        total_tokens=tokens, context_len=ctx.context_len, requested=ctx.max_running_requests, attn_dp_size=ctx.attn_dp
    )
    return (ctx.rules.resolve_max_running_requests(**kw), ctx.rules.max_running_requests_reduction(**kw) is not None)


def draft_layers(model: ModelSpec, spec_algo: str) -> int:
    """Layers of the speculative draft's KV pool: the model's MTP layers for NEXTN / MTP / EAGLE when it has them,
    one layer for the other draft algorithms, 0 without speculation.

    Source: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py
    ``DefaultPoolConfigurator.__init__`` (EAGLE/STANDALONE draft layers), v0.5.23.
    """
    nextn = model.get("num_nextn_predict_layers")
    if spec_algo in ("NEXTN", "MTP", "EAGLE") and nextn:
        return int(nextn)
    if spec_algo in SPEC_DRAFT_ALGOS:
        return 1
    return 0


def empty_plan(*, layout: str, ctx: PoolContext, tokens: int = 0) -> PoolPlan:
    """No budget: no pool (SGLang would stop at start-up); the request cap as SGLang would resolve it."""
    mrr, reduced = request_cap(ctx, tokens)
    return PoolPlan(
        tokens=tokens,
        cell=0,
        layout=layout,
        max_running_requests=mrr,
        reduced=reduced,
        kv_pool_bytes=0,
        kv_slice_bytes=0,
    )


#: the TP sizes ``kvplan show`` tabulates
SHOW_TPS = (1, 2, 4, 8, 16)
