"""vLLM as an :class:`kvplan.engines.registry.Engine`: what planning, weights and views ask of it.

The planner is :func:`kvplan.engines.vllm.adapter.plan`; the release rows are :mod:`kvplan.engines.vllm.releases`;
the ``--kv-cache-dtype`` values are the ones :func:`kvplan.engines.vllm.specs.kv_dtype_bytes` sizes (vLLM's
``CacheDType`` in vllm/config/cache.py, v0.34.0, plus the spellings its specs take).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvplan import supported
from kvplan.engines.base import PoolCount
from kvplan.errors import InputError
from kvplan.weights.rules import VLLM_WEIGHTS

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.logs.facts import LogFacts
    from kvplan.inputs.presets import HardwarePreset
    from kvplan.result import FitResult

#: Deployment field <- the names a vLLM log prints it under (non-default args, engine config, command line)
LOG_ARG_KEYS: dict[str, tuple[str, ...]] = {
    "tp": ("tensor_parallel_size", "tp", "tp_size"),
    "pp": ("pipeline_parallel_size", "pp", "pp_size"),
    "dp": ("data_parallel_size", "dp", "dp_size"),
    "gpu_memory_utilization": ("gpu_memory_utilization",),
    "kv_cache_dtype": ("kv_cache_dtype",),
    "context_length": ("max_model_len", "max_seq_len"),
    "max_running_requests": ("max_num_seqs",),
    "chunked_prefill_size": ("max_num_batched_tokens",),
    "page_size": ("block_size",),
    "enforce_eager": ("enforce_eager",),
    "kv_cache_memory_bytes": ("kv_cache_memory_bytes",),
}


class VllmEngine:
    """vLLM (see :class:`kvplan.engines.registry.Engine` for each member)."""

    name = "vllm"
    label = "vLLM"
    supported: tuple[str, str] = supported.VLLM
    request_cap_field = "max_num_seqs"
    memory_fraction_field = "gpu_memory_utilization"
    pool_count = PoolCount.BLOCKS
    dp_attention = False
    #: ``--enable-expert-parallel`` is a switch: EP over tp x dp (vllm/config/parallel.py)
    expert_parallel_switch = True
    fixed_default_cap = True
    request_cap_sets_memory = False
    logs_device_total = True
    prefill_graph_max_tokens: int | None = 512
    weights = VLLM_WEIGHTS
    log_arg_keys: Mapping[str, tuple[str, ...]] = LOG_ARG_KEYS
    log_free_label = "free on startup (runtime model)"

    def request_cap_per_rank(self, requested: int, attn_dp: int) -> int:
        return requested  # max_num_seqs is per engine core; DP replicates it

    def attention_heads(self, config: Mapping[str, Any]) -> Any:
        from kvplan.hfconfig.normalize import flatten_config

        return flatten_config(config, engine="vllm").get("num_attention_heads")

    def head_split_refusal(self, *, heads: int, tp: int, attn_dp: int) -> InputError | None:
        """vllm-project/vllm v0.33.0 vllm/config/model.py ``ModelConfig.verify_with_parallel_config``:
        ``total_num_attention_heads % tensor_parallel_size`` (the check of
        ``kvplan.engines.vllm.planner._check_inputs``).  Example: heads 128, tp 3 -> refused; tp 8 -> None."""
        if heads % tp == 0:
            return None
        return InputError(
            f"vLLM needs the {heads} attention heads divisible by the tensor parallel size {tp}",
            field="--tp-size",
            hint="use a TP size that divides the attention heads",
        )

    @property
    def newest(self) -> str:
        return self.supported[1]

    def kv_dtypes(self) -> tuple[str, ...]:
        from kvplan.engines.vllm.specs import KV_CACHE_DTYPES

        return KV_CACHE_DTYPES

    def check_kv_dtype(self, name: str) -> str:
        """``name`` unchanged when vLLM's specs size it (``auto`` included); the specs' InputError otherwise.
        Example: ``check_kv_dtype("fp8") == "fp8"``; ``check_kv_dtype("mxfp8")`` raises."""
        from kvplan.engines.vllm.specs import KV_CACHE_DTYPES, kv_dtype_bytes

        if name not in KV_CACHE_DTYPES:
            kv_dtype_bytes(name)  # raises with vLLM's list
        return name

    def plan(self, dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None) -> FitResult:
        from kvplan.engines.vllm.adapter import plan

        return plan(dep, model, gpu)

    def release_stretches(self, oldest: str, newest: str) -> list[tuple[str, str]]:
        """Consecutive releases of ``oldest`` .. ``newest`` that share one release row."""
        from kvplan.engines.vllm.releases import release_for
        from kvplan.errors import InputError
        from kvplan.inputs.logs.versions import releases_between

        out: list[tuple[str, str]] = []
        last_rules: object = None
        for v in releases_between("vllm", oldest, newest) or (newest,):
            try:
                rules = release_for(v)
            except InputError:
                continue
            if out and rules is last_rules:
                out[-1] = (out[-1][0], v)
            else:
                out.append((v, v))
            last_rules = rules
        return out

    def log_arg_sources(self, facts: LogFacts) -> list[tuple[str, dict[str, Any]]]:
        extra = facts.extra or {}
        return [
            ("non-default args", dict(extra.get("non_default_args") or {})),
            ("engine config", dict(extra.get("engine_config") or facts.server_args or {})),
            ("command line", dict(extra.get("cli_args") or {})),
        ]

    def log_free_and_weights(self, facts: LogFacts, dep: Deployment) -> tuple[int | None, int | None]:
        return (facts.extra or {}).get("free_on_startup_bytes"), facts.model_loading_bytes


ENGINE = VllmEngine()
