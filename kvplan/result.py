"""The one result model.  Table (rich), JSON and CSV all render a :class:`FitResult`.

``FitResult`` (and its parts) are stdlib dataclasses that pydantic validates strictly
(``__pydantic_config__``: unknown keys rejected): :meth:`FitResult.model_validate` turns JSON back
into the model (the round-trip the tests check).  Building and dumping a result needs no pydantic, so
``kvplan fit --format json`` does not pay for importing it.

The first block of fields is the JSON contract read by scripts outside this repo: never rename a
key or change its meaning; add new keys freely.
"""


import dataclasses
from dataclasses import dataclass, field
from typing import Any

CONTRACT_KEYS = (
    "engine", "engine_version", "model", "gpu", "num_gpus", "tp", "pp", "dp", "ep", "dp_attention",
    "kv_cache_dtype", "kv_bytes_per_token", "kv_budget_bytes", "kv_pool_tokens", "max_running_requests",
    "max_concurrency", "max_context_length", "context_length", "fits", "device_bytes", "free_bytes",
    "weight_bytes", "warnings", "assumptions",
)
_CONFIG = {"extra": "forbid"}


@dataclass(eq=False, repr=False)
class Pool:
    """One KV pool (or fixed state) the engine allocates on each GPU."""

    __pydantic_config__ = _CONFIG
    name: str
    bytes: int
    tokens: int | None = None
    bytes_per_token: float | None = None
    note: str = ""


@dataclass(eq=False, repr=False)
class MemorySlice:
    """Where one GPU's memory goes (the bar in the table view)."""

    __pydantic_config__ = _CONFIG
    name: str
    bytes: int
    note: str = ""


@dataclass(eq=False, repr=False)
class Basis:
    """An alternative KV basis on the same budget (e.g. the DeepSeek-V3 formula a record used)."""

    __pydantic_config__ = _CONFIG
    name: str
    kv_bytes_per_token: int
    kv_pool_tokens: int
    max_context_length: int
    max_concurrency: int
    note: str = ""


@dataclass(eq=False, repr=False)
class FitResult:
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
    kv_bytes_per_token: float          # per GPU, the engine's cell (DeepSeek-V4: bytes_per_full_token)
    kv_budget_bytes: int               # per GPU
    kv_pool_tokens: int                # SGLang max_total_num_tokens (per attention-DP rank); vLLM "GPU KV cache size"
    max_running_requests: int          # the cap the engine applies, given or derived (SGLang: per attention-DP rank)
    max_concurrency: int | float       # requests of the full context at once, whole deployment: an integer for both
                                       # engines once planned (kvplan.planning.verdict), capped by
                                       # max_running_requests; vLLM's printed float is max_concurrency_per_rank
    max_context_length: int            # longest request one request can use
    context_length: int
    fits: bool                         # the engine starts and serves one context_length request (reasons: why not)
    device_bytes: int
    free_bytes: int                    # free per GPU at start, before weights
    weight_bytes: int                  # per-GPU weight load
    warnings: list[str]
    assumptions: list[str]

    # ---- additions ---------------------------------------------------------------------------
    verdict: str = ""
    family: str = ""
    layout: str = ""
    mode: str = "cold"                 # "measured" when free/weight memory were given
    mem_fraction_static: float | None = None
    gpu_memory_utilization: float | None = None
    page_size: int = 1
    chunked_prefill_size: int | None = None
    attn_tp: int = 1
    attn_dp: int = 1
    target_requests: int = 1
    kv_pool_tokens_total: int = 0      # summed over attention-DP ranks / DP engines
    max_concurrency_per_rank: float = 0.0
    kv_pool_bytes: int = 0             # bytes the pools take per GPU
    fixed_pool_bytes: int = 0          # budgeted bytes that do not scale with tokens (SWA cap pool, states ...)
    weight_source: str = ""
    free_source: str = ""
    num_blocks: int | None = None      # vLLM
    block_size: int | None = None      # vLLM
    groups: list[dict[str, Any]] = field(default_factory=list)   # vLLM KV groups
    pools: list[Pool] = field(default_factory=list)
    memory: list[MemorySlice] = field(default_factory=list)
    bases: list[Basis] = field(default_factory=list)
    # ---- issue 11 (set by kvplan.planning.verdict.apply) -----------------------------------------
    reasons: list[str] = field(default_factory=list)   # every reason it does not fit, start-up order; [0] = verdict
    target: str = ""                   # the target the user set ("16 requests of 8,192+1,024 tokens at once")
    meets_target: bool = False         # fits, and room for the target (what --check tests)
    target_reason: str = ""            # one line: why the target is met or not
    max_running_requests_source: str = ""   # given | derived | engine default
    input_len: int | None = None       # the workload (--input-len / --output-len), None without one
    output_len: int | None = None
    workload_tokens_per_request: int | None = None   # input + output in whole pages of the token pool
    workload_concurrency: int | None = None          # such requests at once, whole deployment
    workload_concurrency_per_rank: int | None = None

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        """A plain dict (JSON-ready in both modes: every value is a str, number, bool, None, list or dict)."""
        return dataclasses.asdict(self)

    @classmethod
    def model_validate(cls, data: dict[str, Any]) -> "FitResult":
        """Validate a dict (e.g. parsed JSON output) into a FitResult; raises pydantic.ValidationError."""
        from pydantic import TypeAdapter

        return TypeAdapter(cls).validate_python(data)

    def contract(self) -> dict[str, Any]:
        d = self.model_dump()
        return {k: d[k] for k in CONTRACT_KEYS}
