"""The one result model.  Table (rich), JSON and CSV all render a :class:`FitResult`.

The first block of fields is the JSON contract read by scripts outside this repo: never rename a
key or change its meaning; add new keys freely.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

CONTRACT_KEYS = (
    "engine", "engine_version", "model", "gpu", "num_gpus", "tp", "pp", "dp", "ep", "dp_attention",
    "kv_cache_dtype", "kv_bytes_per_token", "kv_budget_bytes", "kv_pool_tokens", "max_running_requests",
    "max_concurrency", "max_context_length", "context_length", "fits", "device_bytes", "free_bytes",
    "weight_bytes", "warnings", "assumptions",
)


class Pool(BaseModel):
    """One KV pool (or fixed state) the engine allocates on each GPU."""

    model_config = ConfigDict(extra="forbid")
    name: str
    tokens: int | None = None
    bytes: int
    bytes_per_token: float | None = None
    note: str = ""


class MemorySlice(BaseModel):
    """Where one GPU's memory goes (the bar in the table view)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    bytes: int
    note: str = ""


class Basis(BaseModel):
    """An alternative KV basis on the same budget (e.g. the DeepSeek-V3 formula a record used)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kv_bytes_per_token: int
    kv_pool_tokens: int
    max_context_length: int
    max_concurrency: int
    note: str = ""


class FitResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
    max_running_requests: int          # as the engine derives it (SGLang: per attention-DP rank)
    max_concurrency: float             # requests of the full context at once (whole deployment)
    max_context_length: int            # longest request one request can use
    context_length: int
    fits: bool
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
    groups: list[dict] = []            # vLLM KV groups
    pools: list[Pool] = []
    memory: list[MemorySlice] = []
    bases: list[Basis] = []

    def contract(self) -> dict:
        d = self.model_dump()
        return {k: d[k] for k in CONTRACT_KEYS}
