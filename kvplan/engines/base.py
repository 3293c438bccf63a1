"""The :class:`Engine` interface: what planning, weights and views may ask an engine (issue 21 item 2).

With :class:`PoolCount`, the unit of an engine's KV pool.  The objects are :mod:`kvplan.engines.sglang.engine` and
:mod:`kvplan.engines.vllm.engine`, looked up by :func:`kvplan.engines.registry.engine`; they import this module,
never the registry (which imports them).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.errors import InputError
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.logs.facts import LogFacts
    from kvplan.inputs.presets import HardwarePreset
    from kvplan.result import FitResult
    from kvplan.weights.rules import WeightRules


class PoolCount(enum.Enum):
    """How an engine counts its KV pool, which decides the verdict's memory chain, a workload's bound and the
    sweep's vector path.

    * ``TOKENS``: a token pool of ``max_total_num_tokens`` cells, rounded to the page (SGLang
      ``TokenToKVPoolAllocator``; the verdict's chain ``kvplan.planning.verdict.sglang_memory_reason``);
    * ``BLOCKS``: KV cache groups of blocks of ``block_size`` tokens (vLLM ``KVCacheConfig``; the verdict's chain
      ``kvplan.planning.verdict.vllm_memory_reason``).
    """

    TOKENS = "tokens"
    BLOCKS = "blocks"


class NoteKind(enum.Enum):
    """What a structured :class:`Note` says, for the views to key on (never on the note's prose)."""

    #: the request cap an engine derived by ``clamp(f(tokens), LO, HI)``; values ``(cap, LO, HI)``
    DERIVED_REQUEST_CAP = "derived_request_cap"


class Note(str):
    """An assumption (or warning) line that also carries what it says as data: ``kind`` (a :class:`NoteKind`) and
    ``values`` (a tuple of ints).  It is the line's text everywhere a ``str`` is read (JSON, CSV, equality), so
    the results and their JSON are what they were; the views format from ``kind`` and ``values``.

    Example: ``Note("max_running_requests 4096: ...", NoteKind.DERIVED_REQUEST_CAP, (4096, 2048, 4096))``.
    """

    kind: NoteKind
    values: tuple[int, ...]

    def __new__(cls, text: str, kind: NoteKind, values: tuple[int, ...]) -> Note:
        self = super().__new__(cls, text)
        self.kind, self.values = kind, values
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Note, (str(self), self.kind, self.values))

    def __copy__(self) -> Note:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Note:
        return self


def requests_at_once(*, pool_bound: Any, request_cap: Any) -> Any:
    """Requests one rank runs at once: what its KV pool holds (``pool_bound`` requests) clamped to the engine's
    request cap (SGLang ``max_running_requests`` per attention-DP rank, vLLM ``max_num_seqs``):
    ``min(pool_bound, request_cap)``.  The one request-cap clamp of kvplan: ``fit``'s ``max_concurrency``, the
    verdict, ``check``, the workload and the sweeps all ask it.  Works on ints and on numpy arrays alike (numpy is
    imported only for arrays).

    Example: a pool of 903,439 tokens at a 131,072-token context holds 903,439 // 131,072 = 6 requests; with the
    derived cap 3,529 -> 6.  A pool holding 513 requests of 9,216 tokens with ``--max-running-requests 16`` -> 16.

    Source: SGLang's scheduler admits at most ``max_running_requests`` (sgl-project/sglang
    python/sglang/srt/managers/scheduler.py, v0.5.23) and vLLM's at most ``max_num_seqs``
    (vllm-project/vllm vllm/v1/core/sched/scheduler.py, v0.34.0), whatever the pool holds beyond that.
    """
    if hasattr(pool_bound, "shape") or hasattr(request_cap, "shape"):
        import numpy as np

        return np.minimum(pool_bound, request_cap)
    return min(pool_bound, request_cap)


def full_context_requests(*, pool_tokens: Any, context_len: Any, request_cap: Any) -> Any:
    """Full-context requests one rank of a token pool runs at once:
    :func:`requests_at_once` of ``pool_tokens // context_len`` (0 for a context of 0 or less).

    Example: 320,398 tokens at 32,768 -> 9 requests; cap 4,096 -> 9; cap 4 -> 4.
    """
    if not hasattr(context_len, "shape") and context_len <= 0:
        return 0
    return requests_at_once(pool_bound=pool_tokens // context_len, request_cap=request_cap)


class Engine(Protocol):
    """What the rest of kvplan may ask an engine.  Every member is data or a pure function of its arguments."""

    #: the ``--engine`` value
    name: str
    #: the display name ("SGLang", "vLLM")
    label: str
    #: (oldest, newest) release kvplan has the rules of (:mod:`kvplan.supported`)
    supported: tuple[str, str]
    #: the Deployment field / engine flag that caps the running requests
    request_cap_field: str
    #: the Deployment field / engine flag of the memory fraction (``mem_fraction_static``, ``gpu_memory_utilization``)
    memory_fraction_field: str
    #: the KV pool's unit (:class:`PoolCount`)
    pool_count: PoolCount
    #: the engine's DP attention divides attention (and a requested request cap) by the attention-DP size
    #: (SGLang ``--enable-dp-attention``); vLLM's data parallelism replicates the whole model per rank
    dp_attention: bool
    #: the default memory fraction depends on the request cap and on ``--max-total-tokens`` (SGLang's
    #: ``mem_fraction_static`` default, which reserves the CUDA-graph batch), so a sweep makes them group axes
    request_cap_sets_memory: bool
    #: the request cap, when not given, is one fixed engine default (vLLM ``max_num_seqs``), not derived
    fixed_default_cap: bool
    #: ``--enable-expert-parallel`` is a switch that sets EP to tp x dp (vLLM), not a size
    expert_parallel_switch: bool
    #: a log of this engine prints the device total (vLLM ``total_gpu_memory``), so calibrate may plan without a GPU
    #: preset; a measured run with the logged KV memory plans without kvplan's default GPU
    logs_device_total: bool
    #: speed model (:mod:`kvplan.planning.speed`): a prefill step of at most this many tokens runs under CUDA
    #: graphs (vLLM V1's piecewise graphs up to its largest capture size, 512); None: the engine decides per GPU
    #: (SGLang 0.5.23 runs DeepSeek-V4 prefill eager on SM120 and captures it elsewhere)
    prefill_graph_max_tokens: int | None
    #: what the engine does when it loads weights (:class:`kvplan.weights.rules.WeightRules`)
    weights: WeightRules
    #: log argument key maps: Deployment field -> the keys the engine prints it under, first hit wins
    log_arg_keys: Mapping[str, tuple[str, ...]]
    #: the label of the logged "free at start" figure in calibrate's cold rows
    log_free_label: str

    def request_cap_per_rank(self, requested: int, attn_dp: int) -> int:
        """A requested request cap as each rank keeps it (SGLang: per attention-DP worker, at least 1)."""
        ...

    def attention_heads(self, config: Mapping[str, Any]) -> Any:
        """The attention head count the engine reads from a model's config (as stored: may be any JSON value)."""
        ...

    def head_split_refusal(self, *, heads: int, tp: int, attn_dp: int) -> InputError | None:
        """The engine's refusal of a TP size that does not split ``heads`` attention heads, or None (the words of
        the engine's planner: a sweep confirms them against one ``fit`` before trusting them)."""
        ...

    @property
    def newest(self) -> str:
        """The newest release kvplan has the rules of."""
        ...

    def kv_dtypes(self) -> tuple[str, ...]:
        """The ``--kv-cache-dtype`` values the engine accepts (its argparse choices)."""
        ...

    def check_kv_dtype(self, name: str) -> str:
        """``name`` as kvplan spells it when the engine accepts it; InputError naming the flag otherwise."""
        ...

    def plan(self, dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None) -> FitResult:
        """The engine's planner for one deployment (a target of one request; the verdict is planning's)."""
        ...

    def release_stretches(self, oldest: str, newest: str) -> list[tuple[str, str]]:
        """``(first, last)`` of every stretch of ``oldest`` .. ``newest`` that shares one rule set, oldest first."""
        ...

    def log_arg_sources(self, facts: LogFacts) -> list[tuple[str, dict[str, Any]]]:
        """Where a log of this engine prints the engine arguments, first source first."""
        ...

    def log_free_and_weights(self, facts: LogFacts, dep: Deployment) -> tuple[int | None, int | None]:
        """(the logged free memory at start, the logged weight load) of a recovered deployment."""
        ...
