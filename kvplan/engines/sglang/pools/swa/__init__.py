"""SGLang's hybrid sliding-window (SWA) pools (gpt-oss, Gemma-4, MiMo-V2, Llama-4, Step3p5 ...): sizes, the planner.

The geometry (which layers are full / sliding, heads, widths, window) is :mod:`kvplan.geometry.swa`.
A hybrid-SWA model keeps two token pools on every attention rank: a *full* pool for the
full-attention layers (one row per token of every live request) and an *SWA* pool for the
sliding-window layers (rows only for the last ``window`` tokens of each request). SGLang sizes the
two pools from one byte budget, in one of two modes:

* **ratio** (default): ``swa_tokens = page_floor(int(full_tokens * r))`` with
  ``r = --swa-full-tokens-ratio`` (0.8 when unset), so one full token costs
  ``full_cell + r * swa_cell`` bytes;
* **request-cap** (radix cache off + ``--max-running-requests`` + chunked prefill on): the SWA pool
  is sized for the worst case of the running requests (``compute_swa_request_cap``) and the rest of
  the budget goes to the full pool.

``max_total_num_tokens`` (what the server logs, what bounds a request) is the *full* pool.

By release (``RuleSet.pool_rules``, issue 12; docs/layouts/sliding-window.md section 7): whether the model gets the
hybrid pool at all (:func:`hybrid_pool_on`; else :func:`one_pool_plan`, one pool over every layer), the split by
layer count of 0.4.9.post6 - 0.5.8 (:func:`layer_split_pools`), the steps of the byte split 0.5.9 - 0.5.22
(:class:`ByteEra`: the two-step split of 0.5.9 - 0.5.10, draft layers, PP stage cells, the SWA-pool check, the
request-cap mode) and the ratio default.

Sources (sgl-project/sglang, v0.5.23, package paths under ``python/``):

* ``sglang/srt/model_executor/pool_configurator.py``: ``HybridSWAPoolConfigurator.__init__``,
  ``_recompute_cell_size``, ``_solve_pool_sizes``, ``calculate_pool_sizes``,
  ``calculate_pool_sizes_from_max_tokens``; ``SWARequestCapPoolConfigurator`` (``is_applicable``,
  ``calculate_pool_sizes``); ``compute_swa_request_cap``; ``MemoryPoolConfigurator.validate_swa_pool_size``;
  ``create_memory_pool_configurator``;
* ``sglang/srt/configs/model_config.py``: ``is_hybrid_swa_model``, ``get_hybrid_layer_ids``,
  ``ModelConfig.get_num_kv_heads`` / ``get_swa_num_kv_heads`` / ``_get_sliding_window_size``, the
  ``swa_head_dim`` / ``swa_v_head_dim`` defaults;
* ``sglang/srt/utils/hf_transformers/config.py``: ``_apply_gemma4_attention_overrides`` (Gemma-4's
  full vs sliding head geometry);
* ``sglang/srt/model_executor/model_runner_components/load_model_utils.py``:
  ``resolve_sliding_window_size`` and the models' ``get_attention_sliding_window_size``
  (gpt-oss, Gemma-4, ...: ``config.sliding_window - 1``);
* ``sglang/srt/arg_groups/model_overrides/gemma2_gemma3.py``: Gemma-2/3 *disable* hybrid SWA memory;
* ``sglang/srt/arg_groups/kv_cache_hook.py``: ``--swa-full-tokens-ratio`` must be in ``(0, 1]``.
"""

from __future__ import annotations

from kvplan.engines.sglang.pools.swa.byte_era import (
    ByteEra,
    byte_era,
    era_draft_layers,
    listed_stages,
    pathless_mtp,
    split_draft_layers,
    two_step_full_tokens,
    two_step_pools,
)
from kvplan.engines.sglang.pools.swa.cells import (
    swa_bytes_per_layer_token,
)
from kvplan.engines.sglang.pools.swa.config import (
    DEFAULT_SWA_FULL_TOKENS_RATIO,
    GEMMA4_K_EQ_V_GATE_SINCE,
    GEMMA4_SINCE,
    _ratio,
    always_disabled_archs,
    sglang_swa_geometry,
    swa_layers_from_config,
)
from kvplan.engines.sglang.pools.swa.layer_split import (
    LAYER_SPLIT_FLOOR_SINCE,
    LAYER_SPLIT_FULL_IDS_CELL,
    LAYER_SPLIT_SWA_EXTRA,
    engine_stage_ids,
    layer_split_cell,
    layer_split_pools,
    layer_split_stages,
    layer_split_tokens,
    layer_split_warning,
)
from kvplan.engines.sglang.pools.swa.planner import (
    FP4_NOTE,
    SWA_POOL_NAME,
    breakdown,
    hybrid_pool_on,
    one_pool_plan,
    plan,
)
from kvplan.engines.sglang.pools.swa.sizing import (
    SWAKnobs,
    SWAPools,
    cap_args,
    cap_cells,
    cap_full_tokens,
    cap_requests,
    cap_swa_tokens,
    ratio_full_tokens,
    ratio_swa_tokens,
    stage_cells,
    swa_pool_sizes,
    swa_pool_sizes_over_stages,
    swa_pool_too_small,
    swa_request_cap_applies,
)
from kvplan.engines.sglang.pools.swa.sweep import (
    vector_group,
)

__all__ = [
    "DEFAULT_SWA_FULL_TOKENS_RATIO",
    "FP4_NOTE",
    "GEMMA4_K_EQ_V_GATE_SINCE",
    "GEMMA4_SINCE",
    "LAYER_SPLIT_FLOOR_SINCE",
    "LAYER_SPLIT_FULL_IDS_CELL",
    "LAYER_SPLIT_SWA_EXTRA",
    "SWA_POOL_NAME",
    "ByteEra",
    "SWAKnobs",
    "SWAPools",
    "_ratio",
    "always_disabled_archs",
    "breakdown",
    "byte_era",
    "cap_args",
    "cap_cells",
    "cap_full_tokens",
    "cap_requests",
    "cap_swa_tokens",
    "engine_stage_ids",
    "era_draft_layers",
    "hybrid_pool_on",
    "layer_split_cell",
    "layer_split_pools",
    "layer_split_stages",
    "layer_split_tokens",
    "layer_split_warning",
    "listed_stages",
    "one_pool_plan",
    "pathless_mtp",
    "plan",
    "ratio_full_tokens",
    "ratio_swa_tokens",
    "sglang_swa_geometry",
    "split_draft_layers",
    "stage_cells",
    "swa_bytes_per_layer_token",
    "swa_layers_from_config",
    "swa_pool_sizes",
    "swa_pool_sizes_over_stages",
    "swa_pool_too_small",
    "swa_request_cap_applies",
    "two_step_full_tokens",
    "two_step_pools",
    "vector_group",
]
