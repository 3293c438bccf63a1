"""The one frozen record a ``--mem-fraction-static`` default rule reads (issue 21 item 4: a context object, not a
keyword bag).

Every release's heuristic (``RuleSet.default_mem_fraction_static``: ``rules.default_mem_fraction_static`` for the
newest release, ``history.memory`` ``memory_settings_mfs`` / ``mfs_reserved_buckets`` / ``mfs_ladder_48g`` /
``mfs_ladder_13g`` / ``mfs_tp_ladder`` for the older ones) is called with one :class:`MemQuery`, built once by the
planner; what a release did not read it ignores.  (A ``NamedTuple``: immutable, typed, cheap to define at start-up.)

Example: ``MemQuery(gpu_memory_mib=81_559, tp_size=1, chunked_prefill_size=8192, cuda_graph_max_bs=256)`` is one
H100 at TP1 with the planner's resolved chunked prefill and CUDA-graph batch size.
"""

from __future__ import annotations

from typing import NamedTuple

from kvplan.engines.backends import MoeA2ABackend


class MemQuery(NamedTuple):
    """The GPU, the parallel layout, the resolved default flags and the model traits the heuristics read.

    ``chunked_prefill_size`` / ``cuda_graph_max_bs`` are the planner's resolved values (None: the rule derives its
    own); ``prefill_cuda_graph`` whether the prefill graph runs; ``is_vlm`` / ``vit_*`` the vision tower of a
    multimodal model; ``speculative_algorithm`` "" without speculative decoding.
    """

    gpu_memory_mib: int | None
    tp_size: int
    pp_size: int = 1
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    is_mla: bool = False
    attn_dp_size: int = 1
    disable_cuda_graph: bool = False
    prefill_cuda_graph: bool | None = None
    prefill_cuda_graph_max_bs: int | None = None
    max_running_requests: int | None = None
    max_prefill_tokens: int = 16384
    max_total_tokens: int | None = None
    disaggregation_mode: str = "null"
    speculative_num_draft_tokens: int | None = None
    moe_a2a_backend: MoeA2ABackend = MoeA2ABackend.NONE
    vendor: str = "nvidia"
    dcp_size: int = 1
    is_vlm: bool = False
    vit_num_layers: int | None = None
    vit_hidden_size: int | None = None
    post_capture_kv_sizing: bool = False
    model_path: str = ""
    speculative_algorithm: str = ""
    context_length: int | None = None
    is_multimodal: bool = False


class PrefillGraphQuery(NamedTuple):
    """The one record a release's prefill-CUDA-graph rule reads (``RuleSet.default_prefill_cuda_graph``:
    ``history.memory`` ``piecewise_graph_0510`` / ``_no_prefill_graph`` and ``release_types._prefill_0523``), built
    once by each caller (the planner, :func:`kvplan.perf.graphs.sglang_prefill_graph`); what a release did not read
    it ignores.  ``is_multimodal``: SGLang runs the model as multimodal (the release rule
    ``RuleSet.counts_multimodal``); ``is_deepseek_v4``: the family override turns the prefill graph off.

    Example: ``PrefillGraphQuery(vendor="nvidia", speculative_algorithm="EAGLE")`` is one CUDA GPU with EAGLE.
    """

    vendor: str = "nvidia"
    pp_size: int = 1
    attn_dp_size: int = 1
    speculative_algorithm: str = ""
    is_multimodal: bool = False
    dcp_size: int = 1
    disable_cuda_graph: bool = False
    is_deepseek_v4: bool = False
