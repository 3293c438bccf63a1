"""SGLang's request-cap rules before 0.5.23 (``max_running_requests`` from the token pool), ints or numpy arrays.

Part of :mod:`kvplan.engines.sglang.history` (see its docstring).
"""

from __future__ import annotations

from typing import Any

from kvplan.engines.sglang.rules import _any, _maximum, _minimum, _trunc_int
from kvplan.errors import InputError

# ================================================================================================
# Request cap (max_running_requests) before 0.5.23
# ================================================================================================


def _req_estimate(*, total_tokens: Any, context_len: Any, cap: int = 4096) -> Any:
    if _any(context_len <= 0):
        raise InputError(f"context length must be positive, got {context_len}", field="--context-length")
    return _maximum(_minimum(_trunc_int(total_tokens / context_len * 512), cap), 2048)


def _per_dp(requested: Any, attn_dp_size: int, divide: bool) -> Any:
    if attn_dp_size <= 0:
        raise InputError(f"attn_dp_size must be positive, got {attn_dp_size}", field="--dp-size")
    return requested // attn_dp_size if divide else requested


def mrr_0_3_0(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.3.0: ``N = clamp(int(tokens / context x 512), 2048, 5120)`` request slots; the scheduler runs
    ``min(tokens // 2 (or R), N - 1)``.  Example: 444,520 tokens at 131,072 -> N 2048 -> 2047.

    Source: model_executor/model_runner.py ``ModelRunner.init_memory_pool``; managers/tp_worker.py
    ``ModelTpServer.__init__``, wheel 0.3.0.
    """
    n = _req_estimate(total_tokens=total_tokens, context_len=context_len, cap=5120)
    want = total_tokens // 2 if requested is None else _per_dp(requested, attn_dp_size, False)
    return _minimum(want, n - 1)


def mrr_req_pool(
    *, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1, extra: int = 0, per_dp: bool = False
) -> Any:
    """0.3.1 - 0.5.9: the request pool has ``N = (R or clamp(int(tokens / context x 512), 2048, 4096)) + extra``
    slots and the scheduler runs ``min(tokens // 2 if R is unset else R [// dp], N)``.

    ``extra`` is 1 in 0.3.2 - 0.4.6.post5 (``ReqToTokenPool(size=max_num_reqs + 1)``), 0 otherwise; ``per_dp``
    (R divided by the DP-attention size) from 0.4.1.post7.  Example: 444,520 tokens at 131,072 context, R unset ->
    min(222,260, 2048 + 1) = 2049 under 0.4.4; 2048 under 0.4.7.

    Source: model_executor/model_runner.py ``ModelRunner.init_memory_pool``; managers/tp_worker.py
    ``TpModelWorker.__init__`` (model_runner.py from 0.5.7), wheels 0.3.1, 0.3.2, 0.4.1.post7, 0.4.7, 0.5.9.
    """
    est = _req_estimate(total_tokens=total_tokens, context_len=context_len)
    if requested is None:
        return _minimum(total_tokens // 2, est + extra)
    return _minimum(_per_dp(requested, attn_dp_size, per_dp), requested + extra)


def mrr_estimate_cap(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.5.10 - 0.5.13: ``est = clamp(int(tokens / context x 512), 2048, 4096)``; R given: ``min(R // dp, est)``;
    else ``min(est, tokens // 2)``.  Example: R = 8192 with 444,520 tokens at 131,072 -> 2048.

    Source: model_executor/model_runner_kv_cache_mixin.py ``_resolve_max_num_reqs``, wheels 0.5.10, 0.5.13.
    """
    est = _req_estimate(total_tokens=total_tokens, context_len=context_len)
    if requested is None:
        return _minimum(est, total_tokens // 2)
    return _minimum(_per_dp(requested, attn_dp_size, True), est)


def mrr_token_cap(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.5.14 - 0.5.22: R given: ``min(R // dp, tokens // 2)``; else ``min(est, tokens // 2)`` (0.5.23 adds
    ``max(1, R // dp)``).  Example: R = 10 with 10,000 tokens -> 10.

    Source: model_executor/model_runner_kv_cache_mixin.py ``_resolve_max_num_reqs`` (0.5.14, 0.5.15);
    mem_cache/kv_cache_configurator.py ``KVCacheConfigurator.resolve_max_num_reqs`` (0.5.16 - 0.5.22).
    """
    est = _req_estimate(total_tokens=total_tokens, context_len=context_len)
    if requested is None:
        return _minimum(est, total_tokens // 2)
    return _minimum(_per_dp(requested, attn_dp_size, True), total_tokens // 2)


def mrr_reduction_token_cap(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> Any:
    """0.5.14 - 0.5.22: the per-worker R the engine warns it reduced (``min`` cut it), else None."""
    if requested is None:
        return None
    per = _per_dp(requested, attn_dp_size, True)
    got = mrr_token_cap(
        total_tokens=total_tokens, context_len=context_len, requested=requested, attn_dp_size=attn_dp_size
    )
    return per if got < per else None


def no_reduction(*, total_tokens: Any, context_len: Any, requested: Any, attn_dp_size: int = 1) -> None:
    """Before 0.5.14 SGLang does not warn when the request cap cuts ``--max-running-requests`` (the keywords: the
    slot's signature, :func:`mrr_reduction_token_cap`'s)."""
    del total_tokens, context_len, requested, attn_dp_size
    return None
