"""The one result model.  Table (rich), JSON and CSV all render a :class:`FitResult`.

``FitResult`` (and its parts) are stdlib dataclasses that pydantic validates strictly
(``__pydantic_config__``: unknown keys rejected): :meth:`FitResult.model_validate` turns JSON back
into the model (the round-trip the tests check).  Building and dumping a result needs no pydantic, so
``kvplan fit --format json`` does not pay for importing it.  Their ``__init__`` is written out
(``init=False``): the decorator would otherwise generate and compile one at every import (about a
millisecond for FitResult's 57 fields, on every ``kvplan fit``); tests/test_startup_imports.py checks
that each takes exactly the fields, in order, with their defaults (a list field's default is None: a
new empty list).

A result is complete when :func:`kvplan.planning.plan.fit` returns it: the engine's planner builds it, the plan and
the verdict add their keys, and :meth:`FitResult.freeze` then makes every attribute read-only (an assignment raises
``AttributeError``; a caller with more to say passes it to ``fit``: ``warnings=``, ``assumptions=``).  A changed copy
is ``dataclasses.replace(result, ...)``, which is not frozen.

The first block of fields is the JSON contract read by scripts outside this repo: never rename a
key or change its meaning; add new keys freely.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any

CONTRACT_KEYS = (
    "engine",
    "engine_version",
    "model",
    "gpu",
    "num_gpus",
    "tp",
    "pp",
    "dp",
    "ep",
    "dp_attention",
    "kv_cache_dtype",
    "kv_bytes_per_token",
    "kv_budget_bytes",
    "kv_pool_tokens",
    "max_running_requests",
    "max_concurrency",
    "max_context_length",
    "context_length",
    "fits",
    "device_bytes",
    "free_bytes",
    "weight_bytes",
    "warnings",
    "assumptions",
)
_CONFIG = {"extra": "forbid"}
#: result class -> its pydantic TypeAdapter, built on the first :meth:`FitResult.model_validate`
_ADAPTERS: dict[type, Any] = {}


@dataclass(init=False, eq=False, repr=False)
class Pool:
    """One KV pool (or fixed state) the engine allocates on each GPU."""

    __pydantic_config__ = _CONFIG
    name: str
    bytes: int
    tokens: int | None = None
    bytes_per_token: float | None = None
    note: str = ""

    def __init__(
        self, name: str, bytes: int, tokens: int | None = None, bytes_per_token: float | None = None, note: str = ""
    ) -> None:
        self.name = name
        self.bytes = bytes
        self.tokens = tokens
        self.bytes_per_token = bytes_per_token
        self.note = note


class SliceKind:
    """What a :class:`MemorySlice` is, whatever its display name says: the views key the memory bar's colours and
    letters by these values, never by the name.  A closed set of string constants, not an ``enum.Enum``: building
    an Enum class costs about 0.3 ms at every import, on every ``kvplan fit`` (docs/performance.md "Start-up")."""

    OVERHEAD = "overhead"  # runtime overhead outside the engine's budget (CUDA context, NCCL ...)
    WEIGHTS = "weights"
    KV_POOL = "kv_pool"
    FIXED_POOLS = "fixed_pools"  # budgeted bytes that do not scale with tokens (SWA cap pool, states ...)
    MULTIMODAL = "multimodal"  # SGLang's multimodal reserve
    UNPOOLED = "unpooled"  # budget left after page rounding
    RESERVE = "reserve"  # SGLang's 1 - mem_fraction_static
    OVER_COMMIT = "over_commit"  # weights beyond the budget
    OUTSIDE_BUDGET = "outside_budget"  # vLLM's 1 - gpu_memory_utilization
    ACTIVATION = "activation"  # vLLM's profiled activation peak
    CUDA_GRAPHS = "cuda_graphs"
    WEIGHTS_NON_TORCH = "weights_non_torch"  # vLLM's consumed memory (weights + non-torch) of a measured run
    OTHER = "other"
    ALL: tuple[str, ...] = ()


SliceKind.ALL = tuple(v for k, v in vars(SliceKind).items() if k.isupper() and isinstance(v, str))


#: the kind of each slice, by the names the engines' planners give their slices (kvplan/engines/sglang/planner.py
#: ``_memory_slices``, kvplan/engines/vllm/adapter.py ``_memory``); a name not listed is ``other``.  The one place a
#: slice's name is read for its meaning: the views ask :attr:`MemorySlice.kind`.
KIND_OF_NAME: dict[str, str] = {
    "runtime overhead": SliceKind.OVERHEAD,
    "weights": SliceKind.WEIGHTS,
    "KV pool": SliceKind.KV_POOL,
    "fixed pools": SliceKind.FIXED_POOLS,
    "multimodal reserve": SliceKind.MULTIMODAL,
    "budget left unpooled": SliceKind.UNPOOLED,
    "reserve (1 - mem_fraction_static)": SliceKind.RESERVE,
    "over-commit": SliceKind.OVER_COMMIT,
    "outside gpu_memory_utilization": SliceKind.OUTSIDE_BUDGET,
    "activation peak": SliceKind.ACTIVATION,
    "CUDA graphs": SliceKind.CUDA_GRAPHS,
    "weights + non-torch": SliceKind.WEIGHTS_NON_TORCH,
}


@dataclass(init=False, eq=False, repr=False)
class MemorySlice:
    """Where one GPU's memory goes (the bar in the table view)."""

    __pydantic_config__ = _CONFIG
    name: str
    bytes: int
    note: str = ""

    def __init__(self, name: str, bytes: int, note: str = "") -> None:
        self.name = name
        self.bytes = bytes
        self.note = note

    @property
    def kind(self) -> str:
        """What the slice is: a :class:`SliceKind` value (not a JSON key: from the name, :data:`KIND_OF_NAME`)."""
        return KIND_OF_NAME.get(self.name, SliceKind.OTHER)


@dataclass(init=False, eq=False, repr=False)
class Basis:
    """An alternative KV basis on the same budget (e.g. the DeepSeek-V3 formula a record used)."""

    __pydantic_config__ = _CONFIG
    name: str
    kv_bytes_per_token: int
    kv_pool_tokens: int
    max_context_length: int
    max_concurrency: int
    note: str = ""

    def __init__(
        self,
        name: str,
        kv_bytes_per_token: int,
        kv_pool_tokens: int,
        max_context_length: int,
        max_concurrency: int,
        note: str = "",
    ) -> None:
        self.name = name
        self.kv_bytes_per_token = kv_bytes_per_token
        self.kv_pool_tokens = kv_pool_tokens
        self.max_context_length = max_context_length
        self.max_concurrency = max_concurrency
        self.note = note


@dataclass(init=False, eq=False, repr=False)
class FitResult:
    """One plan: what the engine would allocate and whether it starts (the JSON contract: :data:`CONTRACT_KEYS`)."""

    __pydantic_config__ = _CONFIG

    # ---- contract (stable) -------------------------------------------------------------------
    engine: str
    engine_version: str
    model: str
    gpu: str
    num_gpus: int
    tp: int
    pp: int
    dp: int
    ep: int
    dp_attention: bool
    kv_cache_dtype: str
    kv_bytes_per_token: float  # per GPU, the engine's cell (DeepSeek-V4: bytes_per_full_token)
    kv_budget_bytes: int  # per GPU
    kv_pool_tokens: int  # SGLang max_total_num_tokens (per attention-DP rank); vLLM "GPU KV cache size"
    max_running_requests: int  # the cap the engine applies, given or derived (SGLang: per attention-DP rank)
    max_concurrency: int | float  # requests of the full context at once, whole deployment: an integer for both
    # engines once planned (kvplan.planning.verdict), capped by
    # max_running_requests; vLLM's printed float is max_concurrency_per_rank
    max_context_length: int  # longest request one request can use
    context_length: int
    fits: bool  # the engine starts and serves one context_length request (reasons: why not)
    device_bytes: int
    free_bytes: int  # free per GPU at start, before weights
    weight_bytes: int  # per-GPU weight load
    warnings: list[str]
    assumptions: list[str]

    # ---- additions ---------------------------------------------------------------------------
    verdict: str = ""
    family: str = ""
    layout: str = ""
    mode: str = "cold"  # "measured" when free/weight memory were given
    mem_fraction_static: float | None = None
    gpu_memory_utilization: float | None = None
    page_size: int = 1
    chunked_prefill_size: int | None = None
    attn_tp: int = 1
    attn_dp: int = 1
    target_requests: int = 1
    kv_pool_tokens_total: int = 0  # summed over attention-DP ranks / DP engines
    max_concurrency_per_rank: float = 0.0
    kv_pool_bytes: int = 0  # bytes the pools take per GPU
    fixed_pool_bytes: int = 0  # budgeted bytes that do not scale with tokens (SWA cap pool, states ...)
    weight_source: str = ""
    free_source: str = ""
    num_blocks: int | None = None  # vLLM
    block_size: int | None = None  # vLLM
    groups: list[dict[str, Any]] = field(default_factory=list)  # vLLM KV groups
    pools: list[Pool] = field(default_factory=list)
    memory: list[MemorySlice] = field(default_factory=list)
    bases: list[Basis] = field(default_factory=list)
    # ---- issue 11 (set by kvplan.planning.verdict.apply) -----------------------------------------
    reasons: list[str] = field(default_factory=list)  # every reason it does not fit, start-up order; [0] = verdict
    target: str = ""  # the target the user set ("16 requests of 8,192+1,024 tokens at once")
    meets_target: bool = False  # fits, and room for the target (what --check tests)
    target_reason: str = ""  # one line: why the target is met or not
    max_running_requests_source: str = ""  # given | derived | engine default
    input_len: int | None = None  # the workload (--input-len / --output-len), None without one
    output_len: int | None = None
    workload_tokens_per_request: int | None = None  # input + output in whole pages of the token pool
    workload_concurrency: int | None = None  # such requests at once, whole deployment
    workload_concurrency_per_rank: int | None = None
    # ---- issue 24 (set by kvplan.planning.plan.fit / kvplan.planning.verdict.apply) ---------------
    starts: bool = False  # the engine starts with this configuration (fits: it also serves one full-context request)
    advice: list[str] = field(default_factory=list)  # what would make an impossible deployment possible
    ignored_flags: list[str] = field(default_factory=list)  # kvplan flags given that this engine does not read
    resolved_from: str | None = None  # the preset whose geometry planned --model, when it is not the id given
    memory_knob: str = ""  # the engine's memory knob: mem_fraction_static (SGLang) | gpu_memory_utilization (vLLM)
    memory_knob_source: str = ""  # given | default deployment | engine default
    # ---- issue 25 item 5 (set by kvplan.planning.plan.fit from kvplan.planning.band) ---------------------
    kv_pool_tokens_range: list[int] | None = None  # [low, high] of a cold answer's pool (None when measured)
    kv_pool_band_percent: int | None = None  # the band's half-width in percent (docs/accuracy.md, p90 of cold errors)

    def __init__(
        self,
        engine: str,
        engine_version: str,
        model: str,
        gpu: str,
        num_gpus: int,
        tp: int,
        pp: int,
        dp: int,
        ep: int,
        dp_attention: bool,
        kv_cache_dtype: str,
        kv_bytes_per_token: float,
        kv_budget_bytes: int,
        kv_pool_tokens: int,
        max_running_requests: int,
        max_concurrency: int | float,
        max_context_length: int,
        context_length: int,
        fits: bool,
        device_bytes: int,
        free_bytes: int,
        weight_bytes: int,
        warnings: list[str],
        assumptions: list[str],
        verdict: str = "",
        family: str = "",
        layout: str = "",
        mode: str = "cold",
        mem_fraction_static: float | None = None,
        gpu_memory_utilization: float | None = None,
        page_size: int = 1,
        chunked_prefill_size: int | None = None,
        attn_tp: int = 1,
        attn_dp: int = 1,
        target_requests: int = 1,
        kv_pool_tokens_total: int = 0,
        max_concurrency_per_rank: float = 0.0,
        kv_pool_bytes: int = 0,
        fixed_pool_bytes: int = 0,
        weight_source: str = "",
        free_source: str = "",
        num_blocks: int | None = None,
        block_size: int | None = None,
        groups: list[dict[str, Any]] | None = None,
        pools: list[Pool] | None = None,
        memory: list[MemorySlice] | None = None,
        bases: list[Basis] | None = None,
        reasons: list[str] | None = None,
        target: str = "",
        meets_target: bool = False,
        target_reason: str = "",
        max_running_requests_source: str = "",
        input_len: int | None = None,
        output_len: int | None = None,
        workload_tokens_per_request: int | None = None,
        workload_concurrency: int | None = None,
        workload_concurrency_per_rank: int | None = None,
        starts: bool = False,
        advice: list[str] | None = None,
        ignored_flags: list[str] | None = None,
        resolved_from: str | None = None,
        memory_knob: str = "",
        memory_knob_source: str = "",
        kv_pool_tokens_range: list[int] | None = None,
        kv_pool_band_percent: int | None = None,
    ) -> None:
        self.engine = engine
        self.engine_version = engine_version
        self.model = model
        self.gpu = gpu
        self.num_gpus = num_gpus
        self.tp = tp
        self.pp = pp
        self.dp = dp
        self.ep = ep
        self.dp_attention = dp_attention
        self.kv_cache_dtype = kv_cache_dtype
        self.kv_bytes_per_token = kv_bytes_per_token
        self.kv_budget_bytes = kv_budget_bytes
        self.kv_pool_tokens = kv_pool_tokens
        self.max_running_requests = max_running_requests
        self.max_concurrency = max_concurrency
        self.max_context_length = max_context_length
        self.context_length = context_length
        self.fits = fits
        self.device_bytes = device_bytes
        self.free_bytes = free_bytes
        self.weight_bytes = weight_bytes
        self.warnings = warnings
        self.assumptions = assumptions
        self.verdict = verdict
        self.family = family
        self.layout = layout
        self.mode = mode
        self.mem_fraction_static = mem_fraction_static
        self.gpu_memory_utilization = gpu_memory_utilization
        self.page_size = page_size
        self.chunked_prefill_size = chunked_prefill_size
        self.attn_tp = attn_tp
        self.attn_dp = attn_dp
        self.target_requests = target_requests
        self.kv_pool_tokens_total = kv_pool_tokens_total
        self.max_concurrency_per_rank = max_concurrency_per_rank
        self.kv_pool_bytes = kv_pool_bytes
        self.fixed_pool_bytes = fixed_pool_bytes
        self.weight_source = weight_source
        self.free_source = free_source
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.groups = [] if groups is None else groups
        self.pools = [] if pools is None else pools
        self.memory = [] if memory is None else memory
        self.bases = [] if bases is None else bases
        self.reasons = [] if reasons is None else reasons
        self.target = target
        self.meets_target = meets_target
        self.target_reason = target_reason
        self.max_running_requests_source = max_running_requests_source
        self.input_len = input_len
        self.output_len = output_len
        self.workload_tokens_per_request = workload_tokens_per_request
        self.workload_concurrency = workload_concurrency
        self.workload_concurrency_per_rank = workload_concurrency_per_rank
        self.starts = starts
        self.advice = [] if advice is None else advice
        self.ignored_flags = [] if ignored_flags is None else ignored_flags
        self.resolved_from = resolved_from
        self.memory_knob = memory_knob
        self.memory_knob_source = memory_knob_source
        self.kv_pool_tokens_range = kv_pool_tokens_range
        self.kv_pool_band_percent = kv_pool_band_percent

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_frozen"):
            raise AttributeError(f"FitResult is frozen after planning: {name} cannot be set (pass it to fit)")
        object.__setattr__(self, name, value)

    def freeze(self) -> "FitResult":
        """Make every attribute read-only (kvplan.planning.plan.fit does, as it returns); returns ``self``."""
        object.__setattr__(self, "_frozen", True)
        return self

    @property
    def frozen(self) -> bool:
        return bool(self.__dict__.get("_frozen"))

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        """A plain dict (JSON-ready in both modes: every value is a str, number, bool, None, list or dict)."""
        return dataclasses.asdict(self)

    @classmethod
    def model_validate(cls, data: dict[str, Any]) -> "FitResult":
        """Validate a dict (e.g. parsed JSON output) into a FitResult; raises pydantic.ValidationError.  The
        pydantic adapter is built once per class (building it takes 30-120 ms of CPU; validating, well under 1 ms)."""
        adapter = _ADAPTERS.get(cls)
        if adapter is None:
            from pydantic import TypeAdapter

            adapter = _ADAPTERS[cls] = TypeAdapter(cls)
        return adapter.validate_python(data)

    def contract(self) -> dict[str, Any]:
        d = self.model_dump()
        return {k: d[k] for k in CONTRACT_KEYS}
