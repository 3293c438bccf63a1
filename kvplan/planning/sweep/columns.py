"""The sweep table's columns: the group labels, the numeric inputs and outputs in row order, and CSV quoting.

Part of :mod:`kvplan.planning.sweep` (see its docstring for the whole design).
"""

from __future__ import annotations

from typing import Any

from kvplan.errors import csv_cell

# ------------------------------------------------------------------------------------------------
# The group labels (one combination of the group axes)
# ------------------------------------------------------------------------------------------------

GROUP_COLS = ("model", "gpu", "engine", "num_gpus", "tp", "pp", "dp", "ep", "kv_cache_dtype", "page_size")


# ------------------------------------------------------------------------------------------------
# The table
# ------------------------------------------------------------------------------------------------

_IN_COLS = (
    "mem_fraction_static",
    "context_length",
    "requested_max_running_requests",
    "max_total_tokens",
    "target_requests",
    "input_len",
    "output_len",
)
_OUT_COLS = (
    "kv_bytes_per_token",
    "kv_budget_bytes",
    "kv_pool_tokens",
    "max_running_requests",
    "max_concurrency",
    "max_context_length",
    "fits",
    "meets_target",
    "workload_tokens_per_request",
    "workload_concurrency",
)
#: integer columns where -1 means "not set" (None in rows, empty in CSV, null in JSON lines)
_NULLABLE = frozenset(
    {
        "requested_max_running_requests",
        "max_total_tokens",
        "input_len",
        "output_len",
        "workload_tokens_per_request",
        "workload_concurrency",
    }
)
_BOOLS = frozenset({"fits", "meets_target"})
CSV_COLUMNS = (*GROUP_COLS, *_IN_COLS, *_OUT_COLS, "reason", "method", "error")
_P = {k: i for i, k in enumerate(_IN_COLS + _OUT_COLS)}  # a column's place in a row's values


def _csv_quote() -> Any:
    from kvplan.planning.sweep_text import csv_quote

    return csv_quote


def _csv_field(text: str) -> str:
    if not text:
        return ""
    text = str(csv_cell(text))  # controls escaped, a formula start neutralised (issue 26)
    if any(ch in text for ch in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text
