"""Whether the engine runs a prefill step under a CUDA graph, release by release (the per-kernel overhead term of
:func:`kvplan.perf.schedule.step` is a graph replay or an eager launch).

SGLang decides per release and per deployment, and kvplan's engine rules already hold that decision (they size the
graph's memory reserve from it): :func:`sglang_prefill_graph` asks the rule set of the release
(:func:`kvplan.engines.sglang.releases.rules_for`) instead of restating it.  What the rules encode:

* up to 0.5.9 the prefill runs eager unless ``--enable-piecewise-cuda-graph`` (off by default: 0.5.6
  ``server_args.py`` ``enable_piecewise_cuda_graph: bool = False``);
* 0.5.10 - 0.5.13 a piecewise prefill graph is on unless speculative decoding, DP attention, PP > 1, a non-CUDA
  device or a multimodal model turns it off (``_handle_piecewise_cuda_graph``);
* from 0.5.14 the "breakable" prefill graph is the CUDA default (``model_executor/cuda_graph_config.py``
  ``default_prefill_backend``) and ``disable_breakable_cudagraph_if_incompatible`` switches it off for, among
  others, DeepSeek-V4 on every GPU ("heavy capture-pool memory pressure: the c4 indexer scratch is pinned in the
  capture pool and OOMs", 0.5.15 ``server_args.py``, 0.5.23 ``arg_groups/cuda_graph_hook.py``).

So DeepSeek-V4 prefill is eager on Hopper and Blackwell datacenter GPUs as on SM120, and the 0.5.9 DeepSeek-R1 /
GLM-5 rows prefill eager: each eager kernel pays a launch (``kernel_eager_s``) where a replayed one pays
``kernel_graph_s``.
"""

from __future__ import annotations

from typing import Any


def sglang_prefill_graph(
    *,
    version: str | None,
    model: Any,
    vendor: str,
    pp: int,
    attn_dp: int,
    dcp: int,
    disable_cuda_graph: bool,
    speculative_algorithm: str,
) -> bool:
    """True when SGLang ``version`` (None: kvplan's default release) runs ``model``'s prefill (a
    :class:`kvplan.hfconfig.spec.ModelSpec`) under a CUDA graph on this deployment, by that release's rule
    (``RuleSet.default_prefill_cuda_graph``; the family override's ``prefill_cuda_graph`` marks DeepSeek-V4).

    Examples (hand-checked against the rules above): DeepSeek-V4-Flash under 0.5.15 on an H200 -> False;
    Qwen3-32B under 0.5.1 -> False (no prefill graph before 0.5.10); Qwen3-32B under 0.5.23 on CUDA -> True;
    with EAGLE under 0.5.12 -> False.
    """
    from kvplan.engines.sglang.mem_query import PrefillGraphQuery
    from kvplan.engines.sglang.releases import rules_for
    from kvplan.family import family_or_none

    rules = rules_for(version)
    fam = family_or_none(model.family)
    override = rules.override(fam) if fam is not None else None
    return bool(
        rules.default_prefill_cuda_graph(
            PrefillGraphQuery(
                vendor=vendor,
                pp_size=pp,
                dcp_size=dcp,
                disable_cuda_graph=disable_cuda_graph,
                is_multimodal=rules.counts_multimodal(
                    architecture=model.architecture, has_vision_tower=model.has_vision_tower
                ),
                is_deepseek_v4=override is not None and not override.prefill_cuda_graph,
                attn_dp_size=attn_dp,
                speculative_algorithm=speculative_algorithm,
            )
        )
    )
