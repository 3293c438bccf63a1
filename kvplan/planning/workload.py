"""Workload-aware concurrency: how many requests of ``--input-len`` + ``--output-len`` tokens run at once.

A request holds, at its end, ``input + output`` tokens in the KV pool, rounded up to whole pages (SGLang allocates
pages of ``page_size`` tokens, vLLM blocks of ``block_size``).  The requests that run at once, per DP rank::

    tokens_per_request = ceil((input + output) / page) * page
    per_rank           = min(max_running_requests, every pool's bound)      (0 when input + output exceeds the
                                                                             longest request the engine accepts)
    total              = per_rank * dp

with one bound per pool the request occupies (the binding one wins):

* the token pool (every family): ``pool_tokens // tokens_per_request``;
* SGLang hybrid sliding-window models: the SWA pool too, which holds each request's last ``window`` tokens plus
  the eviction slack and one decode allocation, capped at the request's own pages, after the prefill chunks in
  flight -- by the deployment's release (:func:`kvplan.engines.sglang.pools.swa_cap.swa_request_terms`: the
  eviction cadence of ``maybe_evict_swa`` from 0.5.8, SGLang's own worst case ``compute_swa_request_cap`` in
  0.5.21+; before 0.5.7 a running request frees nothing, so it holds all its tokens);
* SGLang Mamba / linear-attention hybrids and the DeepSeek-V4 family: the per-request state slots (Mamba) and the
  sliding-window / compressor-state pools (DeepSeek-V4 cap mode) are sized per running request, so
  ``max_running_requests`` (which SGLang already bounds by the state slots) is their bound;
* vLLM (every family): ``num_blocks // sum_g blocks_g(input + output)``, vLLM's own "Maximum concurrency"
  formula (``get_max_concurrency_for_kv_cache_config``) at the workload's length, the per-group blocks from
  :func:`kvplan.engines.vllm.grouping.blocks_per_request`: full-attention groups ``cdiv(T, block)``, sliding groups
  ``min(cdiv(W - 1 + I, block), cdiv(T, block)) + 1``, chunked ``min(cdiv(C + I, block), cdiv(T, block))``, Mamba
  a fixed count -- read from each group's ``blocks_per_request`` at max_model_len, which holds the window part.

Worked example (the default deployment, DeepSeek-V4.1-Flash on 8x RTX PRO 6000, page 256, pool 4,732,416 tokens,
max_running_requests 16): 8,192 + 1,024 = 9,216 tokens = 36 pages = 9,216 tokens per request;
4,732,416 // 9,216 = 513 requests fit in the pool; capped at 16 by max_running_requests -> 16 at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from kvplan.errors import InputError
from kvplan.family import Family, family_or_none

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.result import FitResult

CAP = "max_running_requests"
POOL = "KV pool"
SWA_POOL = "SWA pool"
LONGEST = "longest request"

#: the name SGLang's hybrid-SWA planner gives its sliding-window pool (kvplan.engines.sglang.pools.swa.plan)
SGLANG_SWA_POOL_NAME = "sliding-window KV"


class Workload(NamedTuple):
    """The workload's answer for one deployment."""

    input_len: int
    output_len: int
    tokens_per_request: int  # input + output, rounded up to whole pages of the token pool
    per_rank: int  # such requests at once on one DP rank
    total: int  # ... in the whole deployment
    bound: str  # what binds: max_running_requests | KV pool | SWA pool | longest request
    bounds: tuple[tuple[str, int], ...] = ()  # every bound, requests per rank

    @property
    def tokens(self) -> int:
        return self.input_len + self.output_len

    @property
    def label(self) -> str:
        """``8,192+1,024``: how the verdict names a request of the workload."""
        return f"{self.input_len:,}+{self.output_len:,}"  # kvplan.planning.verdict.workload_label


def request_size(dep: Deployment) -> tuple[int, int] | None:
    """(input_len, output_len) of the deployment's workload, None without one; InputError for --output-len alone."""
    if dep.input_len is None:
        if dep.output_len is not None:
            raise InputError(
                "--output-len needs --input-len (the prompt tokens of each request)",
                field="--input-len",
                hint="e.g. --input-len 8192 --output-len 1024",
            )
        return None
    return dep.input_len, dep.output_len or 0


def page_round(*, tokens: Any, page: int) -> Any:
    """``ceil(tokens / page) * page``: the tokens a request of ``tokens`` holds in whole pages (arrays too).

    Example: 9,216 tokens at page 256 -> 9,216 (36 pages); 9,217 -> 9,472; page 1 -> unchanged.
    """
    return -(-tokens // page) * page


def single_pool_concurrency(*, pool_tokens: Any, tokens: Any, page: int, cap: Any, longest: Any) -> Any:
    """Requests of ``tokens`` tokens at once on one rank of a single token pool: ``min(cap, pool // per_request)``,
    0 when ``tokens`` exceeds ``longest`` (the longest request the engine accepts).  Works on numpy arrays
    (``kvplan sweep``) and on ints alike.

    Example: pool 320,398 tokens, 9,216-token requests at page 1, cap 4,096, longest 32,767 -> 34.
    """
    from kvplan.engines.base import requests_at_once

    per = pool_tokens // page_round(tokens=tokens, page=page)
    return requests_at_once(pool_bound=per, request_cap=cap) * (tokens <= longest)


def _minimum(a: Any, b: Any) -> Any:
    if hasattr(a, "shape") or hasattr(b, "shape"):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def _maximum(a: Any, b: Any) -> Any:
    if hasattr(a, "shape") or hasattr(b, "shape"):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


# ------------------------------------------------------------------------------------------------ per engine


class _Ctx(NamedTuple):
    res: FitResult
    dep: Deployment
    model: ModelSpec
    tokens: int
    tpr: int


def _sglang_token_pool(c: _Ctx) -> dict[str, int]:
    return {POOL: c.res.kv_pool_tokens // c.tpr if c.tpr > 0 else 0}


def _sglang_swa(c: _Ctx) -> dict[str, int]:
    """The full pool and the SWA pool (the request's window, SGLang's worst case per request)."""
    out = _sglang_token_pool(c)
    swa = next((p for p in c.res.pools if p.name == SGLANG_SWA_POOL_NAME and p.tokens is not None), None)
    if swa is None or swa.tokens is None:
        return out
    out[SWA_POOL] = int(
        sglang_swa_bound(
            swa_tokens=swa.tokens, tokens_per_request=c.tpr, terms=sglang_swa_terms(res=c.res, dep=c.dep, model=c.model)
        )
    )
    return out


def sglang_swa_terms(*, res: FitResult, dep: Deployment, model: ModelSpec) -> tuple[int, int]:
    """``(reserve, per_request)`` of a hybrid-SWA deployment's SWA pool at the deployment's SGLang release:
    :func:`kvplan.engines.sglang.pools.swa_cap.swa_request_terms` -- the prefill chunks in flight and a page
    (``reserve``) and what one more running request holds (``per_request``: the window, the slack its release lets
    out-of-window tokens pile up before freeing them, page rounding, one decode allocation; ``-1``: the release frees
    none while the request runs, so it holds all its tokens).

    Example: window 127, page 1, chunk 8,192, overlap on, no speculation: 0.5.23 -> reserve 2 x 8,192 + 1 = 16,385,
    per request 127 + 128 + 1 + 1 = 257; 0.5.9 (evicts every ``window`` steps) -> 127 + 127 + 1 + 1 = 256;
    0.5.6 -> (0, -1).
    Source: sgl-project/sglang python/sglang/srt/managers/schedule_batch.py ``ScheduleBatch.maybe_evict_swa``,
    v0.5.8 - v0.5.23; model_executor/pool_configurator.py ``compute_swa_request_cap``, v0.5.23.
    """
    from kvplan.engines.sglang.pools.swa import swa_layers_from_config
    from kvplan.engines.sglang.pools.swa_cap import swa_request_terms
    from kvplan.engines.sglang.releases import resolve

    window = swa_layers_from_config(model.raw_config or model.config).sliding_window
    spec = bool(dep.speculative_algorithm)
    drafts = (dep.speculative_num_draft_tokens or 0) if spec else 0
    return swa_request_terms(
        release=resolve(dep.engine_version)[0].release,
        page_size=res.page_size,
        window=window,
        chunked_prefill_size=max(res.chunked_prefill_size or 0, 0),
        overlap_schedule=not dep.disable_overlap_schedule,
        num_draft_tokens=drafts,
        num_steps=max(1, drafts - 1),
        radix_cache=not dep.disable_radix_cache,
    )


def sglang_swa_bound(*, swa_tokens: Any, tokens_per_request: Any, terms: tuple[int, int]) -> Any:
    """Requests the SWA pool holds at once: ``max(swa - reserve, 0) // min(per_request, tokens_per_request)`` (0 when
    that is 0; ints or numpy arrays), ``terms`` = :func:`sglang_swa_terms`; ``per_request`` -1 (the release frees no
    out-of-window token while a request runs): ``swa // tokens_per_request``.

    Example: 155,344 SWA tokens, reserve 16,385, per request 257, 9,216-token requests -> 138,959 // 257 = 540;
    under 0.5.6 (0, -1): 155,344 // 9,216 = 16.
    """
    reserve, per_request = terms
    per = tokens_per_request if per_request < 0 else _minimum(per_request, tokens_per_request)
    room = _maximum(swa_tokens - reserve, 0)
    if hasattr(per, "shape") or hasattr(room, "shape"):
        import numpy as np

        return np.where(per > 0, room // np.maximum(per, 1), 0)
    return room // per if per > 0 else 0


#: SGLang's bounds by family (the families not listed have one token pool; the state pools are in the request cap)
_SGLANG_BOUNDS: dict[Family, Callable[[_Ctx], dict[str, int]]] = {Family.HYBRID_SWA: _sglang_swa}


def vllm_block_bound(*, groups: list[dict[str, Any]], num_blocks: int, tokens: int) -> int:
    """``num_blocks // sum_g blocks_g(tokens)`` (see the module docstring), each group's blocks by
    :func:`kvplan.engines.vllm.vector.blocks_from_max` from its blocks at max_model_len; 0 without groups."""
    from kvplan.engines.vllm.vector import blocks_from_max

    per = sum(
        int(
            blocks_from_max(
                kind=str(g.get("kind")),
                block_size=int(g["block_size"]),
                blocks_at_max=int(g["blocks_per_request"]),
                length=tokens,
            )
        )
        for g in groups
    )
    return num_blocks // per if per > 0 else 0


def vllm_tokens_per_request(*, groups: list[dict[str, Any]], tokens: int, block_size: int | None) -> int:
    """The workload's tokens in whole blocks of the largest token-proportional group (the full-attention one:
    :func:`kvplan.engines.vllm.vector.workload_page`)."""
    from kvplan.engines.vllm.vector import workload_page

    return page_round(
        tokens=tokens, page=workload_page([(str(g.get("kind")), int(g["block_size"])) for g in groups], block_size)
    )


# ------------------------------------------------------------------------------------------------ the answer


def workload(res: FitResult, dep: Deployment, model: ModelSpec) -> Workload | None:
    """The :class:`Workload` of ``dep``'s ``--input-len`` / ``--output-len`` on a planned result (None without)."""
    size = request_size(dep)
    if size is None:
        return None
    inp, out = size
    tokens = inp + out
    cap = res.max_running_requests
    from kvplan.engines.registry import PoolCount, engine

    if engine(res.engine).pool_count is PoolCount.BLOCKS:
        tpr = vllm_tokens_per_request(groups=res.groups, tokens=tokens, block_size=res.block_size)
        bounds = {POOL: vllm_block_bound(groups=res.groups, num_blocks=res.num_blocks or 0, tokens=tokens)}
    else:
        tpr = page_round(tokens=tokens, page=max(res.page_size, 1))
        fam = family_or_none(res.family)
        rule = _SGLANG_BOUNDS.get(fam, _sglang_token_pool) if fam is not None else _sglang_token_pool
        bounds = rule(_Ctx(res=res, dep=dep, model=model, tokens=tokens, tpr=tpr))
    return combine(
        input_len=inp,
        output_len=out,
        tokens_per_request=tpr,
        bounds=bounds,
        cap=cap,
        longest=res.max_context_length,
        dp=res.dp,
    )


def combine(
    *,
    input_len: int,
    output_len: int,
    tokens_per_request: int,
    bounds: Mapping[str, int],
    cap: int,
    longest: int,
    dp: int,
) -> Workload:
    """The binding bound wins (the request cap on a tie); nothing runs when a request exceeds ``longest``."""
    tokens = input_len + output_len
    every = ((CAP, cap), *bounds.items())
    if tokens > longest:
        return Workload(
            input_len=input_len,
            output_len=output_len,
            tokens_per_request=tokens_per_request,
            per_rank=0,
            total=0,
            bound=LONGEST,
            bounds=every,
        )
    name, per = min(every, key=lambda kv: kv[1])
    return Workload(
        input_len=input_len,
        output_len=output_len,
        tokens_per_request=tokens_per_request,
        per_rank=per,
        total=per * dp,
        bound=name,
        bounds=every,
    )
