"""The verdict: does the engine start and serve one full-context request, and is the user's target met.

``fits`` (a contract key) is true when the engine starts with the configuration and serves one request of
``context_length`` tokens:

1. the KV dtype runs on that GPU and engine (:func:`kvplan.engines.support.kv_dtype_refusal`);
2. the context is within what the engine accepts: the model's maximum unless the engine's override is on
   (:func:`kvplan.engines.support.context_refusal`; the override is ``--allow-long-context``, the launch command's
   env prefix, or the engine's variable in kvplan's own environment);
3. the weights fit in the free memory, the KV budget is positive, and the pool holds one full-context request
   (SGLang: ``pool_tokens >= context_length``; vLLM: its own "max_model_len larger than the KV cache" check).

``starts`` is true when the engine starts with the configuration, whether or not it then serves a full-context
request: every check above holds except the last step of the memory chain under an engine that only warns there
(SGLang: a pool of at least one token but fewer than ``context_length``; it starts and refuses the requests longer
than the pool, ``max_context_length``).  vLLM refuses to start when one ``max_model_len`` request does not fit, so
there ``starts == fits``.  ``fits`` implies ``starts``.

Each failing check is a reason (``reasons``, in that order: the order the engine meets them at start-up, the
memory chain giving only its first failing step); the first is the verdict.  The request cap
(``max_running_requests`` / ``max_num_seqs``) is a cap, never a target: requests beyond it wait.

The target is only what the user asks for: ``--requests N`` requests at once, of the full context or of the
workload (``--input-len`` + ``--output-len``); with neither, one full-context request.  ``meets_target`` is
``fits`` and enough room: ``max_concurrency >= N`` (full context) or ``workload_concurrency >= N``.

One function, :func:`judge`, turns the facts into the words, so ``kvplan fit`` (:func:`apply`, after the engine
returns) and ``kvplan sweep``'s vectorised rows (:mod:`kvplan.planning.sweep`) say the same thing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kvplan.planning.workload import CAP, LONGEST, Workload
from kvplan.units import fmt_gib

if TYPE_CHECKING:
    from kvplan.deployment import Deployment
    from kvplan.hfconfig.spec import ModelSpec
    from kvplan.inputs.presets import HardwarePreset
    from kvplan.result import FitResult

GIVEN, DERIVED, ENGINE_DEFAULT = "given", "derived", "engine default"


# Facts and Verdict are plain classes with slots, not NamedTuples: a NamedTuple class is built by generated code at
# every import (~0.15 ms each, on every ``kvplan fit``: docs/performance.md "Start-up"); nothing indexes, unpacks or
# compares them.


class Facts:
    """What the verdict is made of (per DP rank unless said otherwise)."""

    __slots__ = (
        "cap",
        "cap_source",
        "concurrency",
        "context",
        "dp",
        "engine",
        "memory_reason",
        "memory_starts",
        "pool_concurrency",
        "pool_tokens_total",
        "refusals",
        "target_requests",
        "workload",
    )

    def __init__(
        self,
        *,
        engine: str,
        context: int,
        dp: int,
        refusals: tuple[str, ...],
        memory_reason: str | None,
        concurrency: int,
        pool_concurrency: int,
        pool_tokens_total: int,
        cap: int,
        cap_source: str,
        target_requests: int,
        workload: Workload | None,
        memory_starts: bool = False,
    ) -> None:
        self.engine = engine
        self.context = context
        self.dp = dp
        self.refusals = refusals  # start-up refusals, in the engine's order (KV dtype, context)
        self.memory_reason = memory_reason  # the first failing step of weights -> budget -> pool, None: all hold
        self.concurrency = concurrency  # full-context requests at once, whole deployment (capped)
        self.pool_concurrency = pool_concurrency  # full-context requests the pool alone holds, whole deployment
        self.pool_tokens_total = pool_tokens_total  # tokens of the pool over every DP rank
        self.cap = cap  # the request cap per DP rank
        self.cap_source = cap_source  # given | derived | engine default
        self.target_requests = target_requests
        self.workload = workload
        self.memory_starts = memory_starts  # the memory chain's failing step is one the engine starts with


class Verdict:
    """What :func:`judge` decides: fits, the reasons it does not, the verdict line and the target's answer."""

    __slots__ = ("fits", "meets_target", "reasons", "starts", "target", "target_reason", "verdict")

    def __init__(
        self,
        *,
        fits: bool,
        reasons: tuple[str, ...],
        verdict: str,
        target: str,
        meets_target: bool,
        target_reason: str,
        starts: bool | None = None,
    ) -> None:
        self.fits = fits
        self.starts = fits if starts is None else starts
        self.reasons = reasons
        self.verdict = verdict
        self.target = target
        self.meets_target = meets_target
        self.target_reason = target_reason


def cap_name(engine: str) -> str:
    """The engine's own name for the request cap."""
    from kvplan.engines.registry import engine as engine_of

    return engine_of(engine).request_cap_field


def requests(n: int) -> str:
    """``1 request`` / ``4 requests``."""
    return f"{n:,} request" + ("" if n == 1 else "s")


def target_text(n: int, size: str) -> str:
    """``16 requests of 1,048,576 tokens at once`` (``size``: the context, or the workload's ``8,192+1,024``)."""
    return f"{requests(n)} of {size} tokens at once"


def workload_label(input_len: int, output_len: int) -> str:
    return f"{input_len:,}+{output_len:,}"


def met_text(target: str, room: int) -> str:
    return f"{target}: room for {room:,}"


def workload_missed_text(n: int, label: str, room: int, bound: str) -> str:
    return f"{requests(n)} of {label} tokens wanted, room for {room:,} (the {bound} binds)"


def cap_missed_text(*, engine: str, n: int, context: int, cap: int, dp: int, room: int) -> str:
    per = " per DP rank" if dp > 1 else ""
    return f"{requests(n)} of {context:,} tokens wanted, {cap_name(engine)} {cap:,}{per} allows {room:,}"


def pool_missed_text(*, n: int, context: int, pool_tokens_total: int, room: int) -> str:
    return (
        f"{requests(n)} of {context:,} tokens need {n * context:,} tokens, the pool holds "
        f"{pool_tokens_total:,} (room for {room:,})"
    )


def _cap_text(f: Facts) -> str:
    per = " per DP rank" if f.dp > 1 else ""
    return f"{cap_name(f.engine)} {f.cap:,}{per} ({f.cap_source})"


def _workload_text(f: Facts, w: Workload) -> str:
    if w.bound == LONGEST:
        return f"no request of {w.label} = {w.tokens:,} tokens runs: longer than the longest request; {_cap_text(f)}"
    head = f"{requests(w.total)} of {w.label} tokens fit at once"
    if w.bound == CAP:
        per = " per DP rank" if f.dp > 1 else ""
        return f"{head}; capped at {f.cap:,}{per} by {cap_name(f.engine)} ({f.cap_source})"
    return f"{head} (the {w.bound} binds); {_cap_text(f)}"


def _target_reason(f: Facts, *, fits: bool, reasons: tuple[str, ...], target: str, n: int) -> tuple[bool, str]:
    if not fits:
        return False, "does not fit: " + reasons[0]
    w = f.workload
    if w is not None:
        if w.total >= n:
            return True, met_text(target, w.total)
        return False, workload_missed_text(n, w.label, w.total, w.bound)
    if f.concurrency >= n:
        return True, met_text(target, f.concurrency)
    if f.pool_concurrency >= n:
        return False, cap_missed_text(engine=f.engine, n=n, context=f.context, cap=f.cap, dp=f.dp, room=f.concurrency)
    return False, pool_missed_text(n=n, context=f.context, pool_tokens_total=f.pool_tokens_total, room=f.concurrency)


def judge(f: Facts) -> Verdict:
    """The verdict, the reasons and the target's answer, from the facts (pure: the same facts, the same words).

    Example (the default deployment): "fits: 4 requests of 1,048,576 tokens at once; max_running_requests 16
    (given)"; with ``--input-len 8192 --output-len 1024``: "fits: 4 requests of 1,048,576 tokens at once;
    16 requests of 8,192+1,024 tokens fit at once; capped at 16 by max_running_requests (given)"; with
    ``--requests 16``: target "16 requests of 1,048,576 tokens at once" not met, "16 requests of 1,048,576 tokens
    need 16,777,216 tokens, the pool holds 4,732,416 (room for 4)".
    """
    reasons = f.refusals + ((f.memory_reason,) if f.memory_reason else ())
    fits = not reasons
    starts = fits or (not f.refusals and f.memory_starts)
    if fits:
        tail = _workload_text(f, f.workload) if f.workload is not None else _cap_text(f)
        text = f"fits: {requests(f.concurrency)} of {f.context:,} tokens at once; {tail}"
    else:
        text = "does not fit: " + reasons[0]
    n = f.target_requests
    target = target_text(n, f.workload.label if f.workload is not None else f"{f.context:,}")
    meets, why = _target_reason(f, fits=fits, reasons=reasons, target=target, n=n)
    return Verdict(
        fits=fits, reasons=reasons, verdict=text, target=target, meets_target=meets, target_reason=why, starts=starts
    )


def starts_text(longest: int) -> str:
    """The line that says an engine starts but refuses the longer requests (SGLang with a pool shorter than the
    context).  ``longest``: the longest request it accepts, the pool's (``max_context_length``).  Example:
    ``starts_text(17377)`` -> ``"starts; requests longer than 17,377 tokens are refused"``."""
    return f"starts; requests longer than {longest:,} tokens are refused"


# ------------------------------------------------------------------------------------------------ the parts


def cap_source(*, engine: str, requested: int | None, resolved: int, attn_dp: int, family_default: int | None) -> str:
    """Where the request cap in force came from: ``given`` (the user's, as the engine keeps it), ``engine default``
    (vLLM's max_num_seqs default; an SGLang family default such as DeepSeek-V4's 256) or ``derived`` (SGLang's
    formula, or the user's value reduced by the engine: tokens // 2, the Mamba state slots)."""
    from kvplan.engines.registry import engine as engine_of

    eng = engine_of(engine)
    if requested is not None:
        kept = eng.request_cap_per_rank(requested, attn_dp)
        return GIVEN if resolved == kept else DERIVED
    if eng.fixed_default_cap:
        return ENGINE_DEFAULT
    if family_default is not None and resolved == eng.request_cap_per_rank(family_default, attn_dp):
        return ENGINE_DEFAULT
    return DERIVED


def sglang_memory_reason(*, weight_bytes: int, free_bytes: int, budget: int, tokens: int, context: int) -> str | None:
    """SGLang's memory chain: the weights load, a positive budget (``rest`` of ``_profile_available_bytes``), a
    pool of at least one full-context request (below it SGLang only warns, and refuses the longer requests)."""
    if weight_bytes >= free_bytes:
        return f"the weights ({fmt_gib(weight_bytes)} per GPU) do not fit in the free memory ({fmt_gib(free_bytes)})"
    if budget <= 0:
        return "the weights leave no KV budget"
    if tokens < context:
        return f"one {context:,}-token request needs {context:,} tokens, the pool holds {tokens:,}"
    return None


def vllm_memory_reason(res: FitResult, *, engine_fits: bool) -> str | None:
    """vLLM's chain: the weights load, a positive "Available KV cache memory", and its own refusal (one
    max_model_len request must fit: ``_check_enough_kv_cache_memory``), in the engine adapter's words."""
    if res.weight_bytes >= res.device_bytes:
        return f"the weights ({fmt_gib(res.weight_bytes)} per GPU) do not fit in the GPU ({fmt_gib(res.device_bytes)})"
    if res.kv_budget_bytes <= 0:
        return "the weights leave no KV budget"
    if not engine_fits:
        return res.verdict.removeprefix("does not fit: ")
    return None


def vllm_full_context_bound(res: FitResult) -> int:
    """Full-context requests one vLLM engine's blocks hold: ``num_blocks // sum_g blocks_g(max_model_len)``
    (the floor of vLLM's "Maximum concurrency" from v0.21 on)."""
    per = sum(int(g["blocks_per_request"]) for g in res.groups)
    return (res.num_blocks or 0) // per if per > 0 else 0


def long_context_allowed(dep: Deployment, engine: str, environ: Mapping[str, str]) -> tuple[bool, str]:
    """(the engine's long-context override is on, where it came from)."""
    from kvplan.engines.support import LONG_CONTEXT_ENV, env_allows_long_context

    if dep.allow_long_context:
        return True, "--allow-long-context, or the launch command's env prefix"
    if env_allows_long_context(engine=engine, environ=environ):
        return True, f"{LONG_CONTEXT_ENV[engine]} in the environment"
    return False, ""


# ------------------------------------------------------------------------------------------------ fit


def _refusals(
    res: FitResult, dep: Deployment, model: ModelSpec, gpu: HardwarePreset | None, env: Mapping[str, str]
) -> list[str]:
    """The start-up refusals (KV dtype on the GPU, context above the model's maximum), in the engine's order; the
    assumptions say when a dtype could not be checked or the long-context override is on."""
    from kvplan.engines import support
    from kvplan.engines.backends import AttentionBackend

    engine, arch = res.engine, support.arch_of(gpu)
    kv = support.resolved_kv_dtype(
        engine=engine, requested=dep.kv_cache_dtype, result_dtype=res.kv_cache_dtype, model=model, arch=arch
    )
    out = []
    dtype_why = support.kv_dtype_refusal(
        engine=engine,
        kv_dtype=kv,
        arch=arch,
        attention=support.attention_kind(model),
        attention_backend=AttentionBackend.parse(dep.attention_backend),
        deepseek_family=support.deepseek_family(model),
    )
    if dtype_why:
        out.append(dtype_why)
    note = support.unchecked_note(engine=engine, kv_dtype=kv, arch=arch)
    if note:
        res.assumptions.append(note)
    allowed, how = long_context_allowed(dep, engine, env)
    ctx_why = support.context_refusal(engine=engine, model=model, context_length=dep.context_length, allowed=False)
    if ctx_why and allowed:
        res.assumptions.append(
            f"context_length {dep.context_length:,} above the model's maximum: the engine's override is on ({how})"
        )
    elif ctx_why:
        out.append(ctx_why)
    return out


def _memory(res: FitResult) -> tuple[str | None, int, int, bool]:
    """(the memory chain's first failing step, full-context requests at once, ... the pool alone holds, the engine
    starts all the same); both counts are for the whole deployment, an integer for both engines.

    The engine starts despite a failing step only where it merely warns: SGLang with a pool of at least one token
    but fewer than the context (``ModelRunner`` stops only at ``max_total_num_tokens <= 0``; the scheduler then caps a
    request at the pool, ``max_req_input_len``).  vLLM refuses to start at its own check, so its failing steps all
    stop it."""
    from kvplan.engines.registry import PoolCount, engine

    if engine(res.engine).pool_count is PoolCount.BLOCKS:
        memory = vllm_memory_reason(res, engine_fits=res.fits)
        if memory is not None:
            return memory, 0, 0, False
        bound = vllm_full_context_bound(res)
        from kvplan.engines.base import requests_at_once

        return (
            None,
            requests_at_once(pool_bound=bound, request_cap=res.max_running_requests) * res.dp,
            bound * res.dp,
            True,
        )
    memory = sglang_memory_reason(
        weight_bytes=res.weight_bytes,
        free_bytes=res.free_bytes,
        budget=res.kv_budget_bytes,
        tokens=res.kv_pool_tokens,
        context=res.context_length,
    )
    starts = res.weight_bytes < res.free_bytes and res.kv_budget_bytes > 0 and res.kv_pool_tokens > 0
    pool = (res.kv_pool_tokens // res.context_length) * res.dp if res.context_length > 0 else 0
    return memory, int(res.max_concurrency), pool, starts


def apply(
    res: FitResult,
    *,
    dep: Deployment,
    model: ModelSpec,
    gpu: HardwarePreset | None,
    environ: Mapping[str, str] | None = None,
    parser_refusals: tuple[str, ...] = (),
    planner_refusal: str | None = None,
) -> FitResult:
    """Set the verdict keys of an engine's result (the engine planned ``dep`` with a target of one request, so its
    own ``fits`` says whether it starts): ``fits``, ``verdict``, ``reasons``, ``target``, ``target_requests``,
    ``meets_target``, ``target_reason``, ``max_concurrency`` (an integer for both engines),
    ``max_running_requests_source`` and the workload keys.  ``environ``: where the engines' variables are read
    (default ``os.environ``).  ``parser_refusals``: what the engine's argument parser refuses in a launch command
    (an unknown, ambiguous or out-of-choices flag): the engine does not start, so each is a reason ahead of the
    others, worded "the engine refuses to start: ...".  ``planner_refusal``: what the engine refuses while sizing its
    pools (:class:`kvplan.errors.EngineRefusal`); nothing was planned, so it is the reason and the memory chain is
    not asked.  Returns ``res``."""
    from kvplan.engines.support import family_request_cap
    from kvplan.planning.workload import workload

    refusals = [f"the engine refuses to start: {r}" for r in parser_refusals]
    refusals += _refusals(res, dep, model, gpu, os.environ if environ is None else environ)
    if planner_refusal is not None:
        refusals.append(f"the engine refuses to start: {planner_refusal}")
        memory, conc, pool_conc, memory_starts = None, 0, 0, False
    else:
        memory, conc, pool_conc, memory_starts = _memory(res)
    source = cap_source(
        engine=res.engine,
        requested=dep.max_running_requests,
        resolved=res.max_running_requests,
        attn_dp=res.attn_dp,
        family_default=family_request_cap(engine=res.engine, family=res.family, engine_version=dep.engine_version),
    )
    w = workload(res, dep, model)
    v = judge(
        Facts(
            engine=res.engine,
            context=res.context_length,
            dp=res.dp,
            refusals=tuple(refusals),
            memory_reason=memory,
            concurrency=conc,
            pool_concurrency=pool_conc,
            pool_tokens_total=res.kv_pool_tokens_total or res.kv_pool_tokens * res.dp,
            cap=res.max_running_requests,
            cap_source=source,
            target_requests=dep.target_requests or 1,
            workload=w,
            memory_starts=memory_starts,
        )
    )
    res.starts = v.starts
    res.fits, res.verdict, res.reasons = v.fits, v.verdict, list(v.reasons)
    res.target, res.meets_target, res.target_reason = v.target, v.meets_target, v.target_reason
    res.target_requests = dep.target_requests or 1
    res.max_concurrency = conc
    res.max_running_requests_source = source
    if w is not None:
        res.input_len, res.output_len = w.input_len, w.output_len
        res.workload_tokens_per_request = w.tokens_per_request
        res.workload_concurrency, res.workload_concurrency_per_rank = w.total, w.per_rank
    return res
