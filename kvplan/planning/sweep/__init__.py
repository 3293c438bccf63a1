"""Planning at scale: evaluate a whole grid of deployments with the same formulas as ``kvplan fit``.

A sweep is the cartesian product of *axes*: any :class:`~kvplan.deployment.Deployment` field may take a
list or a range (``--tp 1,2,4,8``, ``--mem-fraction-static 0.70:0.95:0.05``, ``--context-length
4k:1m:x2``).  The axes fall in two kinds:

* **group axes** (model, gpu, engine, tp, pp, dp, ep, kv_cache_dtype, page_size, ...) change the
  per-token cell, the free memory, the weights or the page size.  For each combination kvplan runs
  ``kvplan.planning.plan.fit`` **once** (a *representative point*), which resolves those scalars through the
  exact code path of ``kvplan fit``;
* **numeric axes** (mem_fraction_static, context_length, max_running_requests, max_total_tokens,
  target requests, the workload's input_len / output_len; vLLM's gpu_memory_utilization when the flag registry
  makes it numeric: a per-row input array, not a CSV column) only enter the budget -> pools -> request cap ->
  concurrency -> verdict arithmetic.  vLLM ignores SGLang's mem_fraction_static (as ``fit`` does: its column is
  NaN for vLLM rows).  That arithmetic is evaluated element-wise over numpy arrays by the *same*
  functions ``kvplan fit`` calls (:func:`evaluate_group`): the release's rule set
  (``kvplan.engines.sglang.rules.budget_bytes``, ``page_floor``, ``resolve_max_running_requests``,
  ``max_request_len``) and the family's pool formulas, which take ints or arrays (SGLang 0.5.23:
  sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py
  ``KVCacheConfigurator._profile_available_bytes`` and ``resolve_max_num_reqs``;
  python/sglang/srt/model_executor/pool_configurator.py ``DefaultPoolConfigurator``, ``HybridSWAPoolConfigurator``,
  ``SWARequestCapPoolConfigurator``, ``DSV4PoolConfigurator``; ``_handle_max_mamba_cache``).

The verdict columns (``fits``, ``meets_target``, ``workload_tokens_per_request``, ``workload_concurrency``) are
vectorised too; each row's words (``verdict``, ``reason``, ``reasons``) are :func:`kvplan.planning.verdict.judge`'s
(``row``) and, in the writers, the verdict's own text functions made templates once per distinct target / context /
workload (:mod:`kvplan.planning.sweep_text`).

Which function evaluates a family is the engines' word: SGLang's pool registry
(``kvplan.engines.sglang.pools.SWEEP_VECTORS``: the single-cell families, hybrid sliding window in ratio and
request-cap modes, Mamba / linear hybrids, DeepSeek-V4 with its bounded padding search; draft layers, DP attention and
PP stages included) from the planner's context of the group's representative ``fit``, and
:mod:`kvplan.planning.sweep.vllm` for vLLM (imported for a vLLM group only).  Every vectorised group is checked
against its representative ``fit`` result; a mismatch (which would be a bug) makes that group fall back to one
``fit`` call per point.  Points the family's planner refuses (a budget too small for its pools) are flagged by the
formulas and carry ``fit``'s one-line error (asked once per distinct pool input); a group whose first point is
refused is resolved at another point of its grid (:func:`_representative`).

The axes are the sweepable flags of the flag registry (:func:`kvplan.flags.sweep_axes`: ``sweep = "group"`` or
``"numeric"``), named in errors by their registry label.

Per-point groups (one ``fit`` call per point, a few ms each, at most :data:`MAX_POINT_GROUP` points): a family or a
configuration the vector formulas do not cover (an all-sliding-window model, a vLLM group its module declines), and
any group whose self-check failed.  SGLang with the
default ``--mem-fraction-static`` *and* a ``--max-running-requests`` axis: the default fraction depends on the request
cap (CUDA-graph batch size), so each request cap is its own group (still vectorised over the other numeric axes).

Memory: :func:`sweep` resolves the groups (one ``fit`` each, and the per-point groups' fits) and keeps each
group's numeric axes only; :class:`SweepTable` evaluates the vectorised rows on demand, :data:`CHUNK_ROWS` at a
time (:meth:`SweepTable.chunks`), so :meth:`SweepTable.write_csv` / :meth:`SweepTable.write_jsonl` in grid order
hold one chunk, whatever the grid (benchmarks/bench_sweep.py, docs/performance.md "Sweeps").

numpy is imported only inside the functions of this package (never at ``import kvplan``).


The package by concept: :mod:`~kvplan.planning.sweep.axes` (parsing), :mod:`~kvplan.planning.sweep.columns`,
:mod:`~kvplan.planning.sweep.groups` (one ``fit`` per group), :mod:`~kvplan.planning.sweep.vector` (SGLang's arrays),
:mod:`~kvplan.planning.sweep.vllm` (vLLM's), :mod:`~kvplan.planning.sweep.blocks` (a group's rows),
:mod:`~kvplan.planning.sweep.table` and :mod:`~kvplan.planning.sweep.run`; the names callers import from
``kvplan.planning.sweep`` are re-exported here.
"""

from __future__ import annotations

from kvplan.planning.sweep.axes import (
    _FLOAT_RE,
    _INT_RE,
    AXES,
    CHUNK_ROWS,
    MAX_AXIS_VALUES,
    MAX_GROUPS,
    MAX_POINT_GROUP,
    MAX_POINTS,
    NUMERIC_FIELDS,
    Axis,
    _axis,
    _range,
    _scalar,
    _validate_value,
    parse_axis,
)
from kvplan.planning.sweep.blocks import (
    _REFUSAL_KEYS,
    _Block,
    _block,
    _block_rows,
    _block_values,
    _copy_fit,
    _empty_out,
    _evaluate,
    _fit_rows,
    _numeric_inputs,
    _refused_rows,
    _self_check,
)
from kvplan.planning.sweep.columns import (
    _BOOLS,
    _IN_COLS,
    _NULLABLE,
    _OUT_COLS,
    _P,
    CSV_COLUMNS,
    GROUP_COLS,
    _csv_field,
    _csv_quote,
)
from kvplan.planning.sweep.groups import (
    REPRESENTATIVE_TRIES,
    Group,
    _blocks,
    _context_refusal,
    _fit_group,
    _invalid_group,
    _representative,
    _sglang_group,
    _verdict_facts,
    _vllm_module,
)
from kvplan.planning.sweep.run import _check_workload, _preresolve, reason, sweep
from kvplan.planning.sweep.table import SweepTable
from kvplan.planning.sweep.vector import _evaluate_sglang, _row_facts, _row_reason, _vector_reason, evaluate_group

__all__ = [
    "AXES",
    "CHUNK_ROWS",
    "CSV_COLUMNS",
    "GROUP_COLS",
    "MAX_AXIS_VALUES",
    "MAX_GROUPS",
    "MAX_POINTS",
    "MAX_POINT_GROUP",
    "NUMERIC_FIELDS",
    "REPRESENTATIVE_TRIES",
    "_BOOLS",
    "_FLOAT_RE",
    "_INT_RE",
    "_IN_COLS",
    "_NULLABLE",
    "_OUT_COLS",
    "_P",
    "_REFUSAL_KEYS",
    "Axis",
    "Group",
    "SweepTable",
    "_Block",
    "_axis",
    "_block",
    "_block_rows",
    "_block_values",
    "_blocks",
    "_check_workload",
    "_context_refusal",
    "_copy_fit",
    "_csv_field",
    "_csv_quote",
    "_empty_out",
    "_evaluate",
    "_evaluate_sglang",
    "_fit_group",
    "_fit_rows",
    "_invalid_group",
    "_numeric_inputs",
    "_preresolve",
    "_range",
    "_refused_rows",
    "_representative",
    "_row_facts",
    "_row_reason",
    "_scalar",
    "_self_check",
    "_sglang_group",
    "_validate_value",
    "_vector_reason",
    "_verdict_facts",
    "_vllm_module",
    "evaluate_group",
    "parse_axis",
    "reason",
    "sweep",
]
