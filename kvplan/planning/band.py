"""How far to trust a cold answer: the ``kv_pool_tokens_range`` band (issue 25 item 5).

The band is the p90 of the absolute cold-mode errors docs/accuracy.md measured for that engine over the shipped
startup logs (``scripts/accuracy_report.py``, "Per case" table, the cold column of the cases in the summary): nine in
ten of those logs fell inside it.  A measured answer (every budget term from a log) gets no band: measured mode is
within 0.5 % on every log.  The numbers below are copied from the table by hand when it is regenerated (the
accuracy test compares them), never fitted to a single log.

Example: vLLM cold, 412,528 tokens, band 8 % -> (379,525, 445,531), shown as "±8%".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: p90 of |cold error| per engine over docs/accuracy.md's cold cases (``scripts/accuracy_report.summary``: linear
#: interpolation), in whole percent rounded up: vLLM 22 cases, median 1.77 %, p90 7.91 % (session 7: nine more
#: public logs and two compared in cold mode only; 11 cases, median 3.30 %, p90 8.53 % before them; 18.46 % before the
#: Kimi-K2-Thinking INT4 scope, the multi-node gpt-oss run, the FlashInfer sampler and V0's context were priced);
#: SGLang 3 cases, median 0.27 %, p90 0.77 % with the WNA16 MoE index buffers SGLang keeps on ROCm
#: (kvplan.weights.kernels.wna16_moe_index_bytes; Kimi-K2.5 on MI355X 1.13 % -> 0.27 %; 1.08 % before them, with the
#: per-GPU CUDA context kvplan.engines.runtime.context_bytes; 4.38 % before the allocator reserve, 7.92 % with the
#: reserve, the recorded L4 total and the median context); tests/test_accuracy.py recomputes both and fails when
#: these differ
COLD_BAND_PERCENT: Mapping[str, int] = MappingProxyType({"vllm": 8, "sglang": 1})


def cold_band_percent(*, engine: str, mode: str) -> int | None:
    """The band in percent for an answer of this engine and mode (None for a measured answer or an unknown engine).
    Example: ``cold_band_percent(engine="vllm", mode="cold")`` = 8."""
    if mode != "cold":
        return None
    return COLD_BAND_PERCENT.get(engine)


def kv_pool_tokens_range(*, tokens: int, percent: int | None) -> tuple[int, int] | None:
    """``(floor(tokens × (1 − p)), ceil(tokens × (1 + p)))`` for a band of ``p`` percent, None without a band.
    Example: 412,528 tokens at 8 % -> (379,525, 445,531)."""
    if percent is None:
        return None
    low = tokens * (100 - percent) // 100
    high = -(-tokens * (100 + percent) // 100)
    return max(low, 0), high
