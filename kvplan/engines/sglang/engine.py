"""SGLang as an :class:`kvplan.engines.registry.Engine`: what planning, weights and views ask of it.

The planner is :func:`kvplan.engines.sglang.planner.plan_sglang`; the rule windows are
:mod:`kvplan.engines.sglang.releases`; the ``--kv-cache-dtype`` choices are SGLang's argparse choices
(sgl-project/sglang python/sglang/srt/arg_groups/fields/model.py field ``kv_cache_dtype``, v0.5.23).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvplan import supported
from kvplan.engines.base import PoolCount
from kvplan.errors import InputError
from kvplan.weights.rules import SGLANG_WEIGHTS

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.logs.facts import LogFacts
    from kvplan.inputs.presets import HardwarePreset
    from kvplan.result import FitResult

#: Deployment field <- the names an SGLang log prints it under (``server_args``, then the command line)
LOG_ARG_KEYS: dict[str, tuple[str, ...]] = {
    "tp": ("tp_size", "tp", "tensor_parallel_size"),
    "pp": ("pp_size", "pp", "pipeline_parallel_size"),
    "dp": ("dp_size", "dp", "data_parallel_size"),
    "ep": ("ep_size", "ep", "expert_parallel_size"),
    "enable_dp_attention": ("enable_dp_attention",),
    "mem_fraction_static": ("mem_fraction_static",),
    "kv_cache_dtype": ("kv_cache_dtype",),
    "context_length": ("context_length",),
    "max_running_requests": ("max_running_requests",),
    "page_size": ("page_size",),
    "chunked_prefill_size": ("chunked_prefill_size",),
    "max_total_tokens": ("max_total_tokens",),
    "attention_backend": ("attention_backend",),
    "disable_radix_cache": ("disable_radix_cache",),
    "disable_overlap_schedule": ("disable_overlap_schedule",),
    "disable_cuda_graph": ("disable_cuda_graph",),
    "speculative_algorithm": ("speculative_algorithm",),
    "speculative_num_draft_tokens": ("speculative_num_draft_tokens",),
    "speculative_dspark_block_size": ("speculative_dspark_block_size",),
    "moe_dense_tp_size": ("moe_dense_tp_size",),
    "enable_dp_lm_head": ("enable_dp_lm_head",),
    "swa_full_tokens_ratio": ("swa_full_tokens_ratio",),
}


class SglangEngine:
    """SGLang (see :class:`kvplan.engines.registry.Engine` for each member)."""

    name = "sglang"
    label = "SGLang"
    supported: tuple[str, str] = supported.SGLANG
    request_cap_field = "max_running_requests"
    memory_fraction_field = "mem_fraction_static"
    pool_count = PoolCount.TOKENS
    dp_attention = True
    expert_parallel_switch = False
    fixed_default_cap = False
    request_cap_sets_memory = True
    logs_device_total = False
    prefill_graph_max_tokens: int | None = None
    weights = SGLANG_WEIGHTS
    log_arg_keys: Mapping[str, tuple[str, ...]] = LOG_ARG_KEYS
    log_free_label = "free at start (runtime model)"

    def request_cap_per_rank(self, requested: int, attn_dp: int) -> int:
        from kvplan.engines.sglang.rules import requests_per_worker

        return int(requests_per_worker(requested=requested, attn_dp_size=attn_dp))

    def attention_heads(self, config: Mapping[str, Any]) -> Any:
        return config.get("num_attention_heads")

    def head_split_refusal(self, *, heads: int, tp: int, attn_dp: int) -> InputError | None:
        """sgl-project/sglang v0.5.23: every attention layer (e.g. python/sglang/srt/models/llama.py) asserts
        ``total_num_heads % attn_tp_size == 0``, attn-TP = tp / dp under DP attention (the check of
        ``kvplan.engines.sglang.planner._parallelism``).  Example: heads 128, tp 3, dp 1 -> "128 attention heads
        cannot be split over attention-TP 3"."""
        attn_tp = tp // attn_dp
        if attn_tp < 1 or heads % attn_tp == 0:
            return None
        return InputError(
            f"{heads} attention heads cannot be split over attention-TP {attn_tp}",
            field="--tp-size",
            hint="use a tp (or tp / dp with DP attention) that divides the head count",
        )

    @property
    def newest(self) -> str:
        return self.supported[1]

    def kv_dtypes(self) -> tuple[str, ...]:
        from kvplan.geometry.kvdtype import KV_CACHE_DTYPES

        return KV_CACHE_DTYPES

    def check_kv_dtype(self, name: str) -> str:
        from kvplan.geometry.kvdtype import canonical_kv_dtype

        return canonical_kv_dtype(name)

    def plan(self, dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None) -> FitResult:
        from kvplan.engines.sglang.planner import plan_sglang

        return plan_sglang(dep, model, gpu)

    def release_stretches(self, oldest: str, newest: str) -> list[tuple[str, str]]:
        """The rule windows over ``oldest`` .. ``newest``; a release between two windows (one the releases module
        did not list) belongs to the window below it, as ``window_for`` sizes it."""
        from kvplan.engines.sglang.releases import window_for, windows_between
        from kvplan.inputs.logs.versions import SGLANG_RELEASES
        from kvplan.version import Version

        # windows_between lists the windows whose listed releases meet the range; the one that sizes `oldest` (when
        # `oldest` lies between two listed windows) is window_for(oldest)
        firsts = sorted(
            {window_for(oldest).first} | {w.first for w in windows_between(oldest, newest)},
            key=Version.of,
        )
        out: list[tuple[str, str]] = []
        for i, first in enumerate(firsts):
            if i + 1 == len(firsts):
                out.append((first, newest))
                continue
            lo, hi = Version.of(first), Version.of(firsts[i + 1])
            # an rc build is sized as the release it is the candidate of: it never ends the window below
            finals = [v for v in SGLANG_RELEASES if "rc" not in v and lo <= Version.of(v) < hi]
            out.append((first, finals[-1] if finals else first))
        return out

    def log_arg_sources(self, facts: LogFacts) -> list[tuple[str, dict[str, Any]]]:
        extra = facts.extra or {}
        return [("server_args", dict(facts.server_args or {})), ("command line", dict(extra.get("cli_args") or {}))]

    def log_free_and_weights(self, facts: LogFacts, dep: Deployment) -> tuple[int | None, int | None]:
        return dep.free_memory, dep.weight_memory


ENGINE = SglangEngine()
