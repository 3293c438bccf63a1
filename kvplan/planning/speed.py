"""``speed(Deployment, ...) -> SpeedResult``: how fast a deployment serves a workload, with the bound named.

The capacity side is kvplan's own plan (:func:`kvplan.planning.plan.fit`): it caps the concurrency at what fits
and says when the asked concurrency does not.  The speed side is the step model of :mod:`kvplan.perf`
(docs/speed.md): a cold prefill of ``input_len`` tokens in the engine's chunks, decode steps at concurrency C and
the mean context ``input_len + output_len / 2``, speculative steps.

Definitions (the JSON contract, units in brackets):

* ``prefill_tokens_per_s`` [tok/s]: input_len / the prefill time of one cold request alone on the server;
* ``ttft_s`` [s]: prefill time + one decode step + the per-request host path
  (:func:`kvplan.perf.overhead.request_overhead_s`) + the mean wait in the prefill queue of C closed-loop clients
  (:func:`kvplan.perf.queue.closed_loop_wait`: SGLang and vLLM prefill waiting requests first-come first-served
  before they decode); for a benchmark run of N requests (``num_prompts``), the first B = min(C, N) arrive at once
  and wait for the burst's token-budgeted steps instead (:func:`kvplan.perf.queue.burst_wait`, weighed over the run
  by :func:`kvplan.perf.queue.run_wait`);
* ``tpot_s`` [s]: mean time per output token at C: decode step / tokens per step, plus the stalls of the other
  C - 1 requests' prefills during the request's decode (a prefill chunk runs as its own step: SGLang and vLLM do
  not overlap a chunk with the running batch's decode here), spread over the output;
* ``decode_tokens_per_s_per_request`` [tok/s] = 1 / tpot_s;
* ``output_tokens_per_s`` / ``total_tokens_per_s`` [tok/s]: aggregate over C requests in steady state,
  requests/s x output_len (x (input_len + output_len)); requests/s = C / (request latency);
* ``total_tokens_per_s_per_gpu`` [tok/s per GPU] = total_tokens_per_s / GPUs;
* ``bound`` / ``shares``: per phase, which of compute / memory / communication / overhead takes the largest share
  of the step's time, and every share.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.perf.record import Record

#: the JSON contract's speed keys (docs/speed.md documents each with its unit)
SPEED_KEYS = (
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "decode_tokens_per_s_per_request",
    "output_tokens_per_s",
    "total_tokens_per_s",
    "total_tokens_per_s_per_gpu",
    "bound",
    "shares",
)

#: per-request host work outside the GPU steps (HTTP, tokenizer and detokenizer processes, the scheduler admitting
#: the request): the TTFT floor of small models in the dev set is ~20-35 ms (gpt-oss-120b on 2x B200, 1K prompts:
#: 35.7 ms measured), so this is at most ~20 ms; taken as 20 ms
REQUEST_S = 0.020  # kvplan.perf.overhead.REQUEST_HOST_S (kept for callers of this name)

DEFAULT_INPUT_LEN = 8192
DEFAULT_OUTPUT_LEN = 1024
#: printed with every DeepSeek-V4 result on SM120 (RTX PRO 6000, RTX 5090): with the few-row GEMM term the seed's
#: V4.1-Flash TP8 decode is within 18% (43.1 tok/s against 36.5 measured), but V4-Flash's public TP2 decodes are
#: still slower than the model by a cost it does not count (docs/speed.md "The same gap on two GPUs": 33.6 and 37.8
#: tok/s under SGLang and vLLM against 55.1)
DSV4_SM120_DECODE_CAVEAT = (
    "decode: DeepSeek-V4-Flash on SM120 measured 1.5-1.6x slower than this estimate in the public two-GPU "
    "single-stream runs (SGLang and vLLM), a cost not modelled; V4.1-Flash on 8 GPUs within 18% (docs/speed.md)"
)

#: SGLang's default speculative steps / draft tokens per algorithm when not given (v0.5.23
#: ``arg_groups/speculative_hook.py`` auto-choice for EAGLE-class drafts: 3 steps, topk 1, 4 draft tokens)
_SPEC_DEFAULT_STEPS = 3
_DSPARK_DEFAULT_BLOCK = 7


class SpeedInputs(Record):
    """What the speed question adds to a deployment: concurrency, accept length, hardware overrides."""

    concurrency: int = 1
    accept_length: float | None = None
    power_limit: float | None = None
    gpu_tflops: float | None = None
    gpu_bandwidth: float | None = None
    link_bandwidth: float | None = None
    num_prompts: int | None = None  # a benchmark run's total requests (bench_serving --num-prompts); None: steady
    #: the run's length spread (bench_serving --random-range-ratio r: lengths uniform over [max(1, L r), L]);
    #: None: 1.0, every request input-len + output-len
    range_ratio: float | None = None
    #: multipliers on the GPU class's efficiency constants (``kvplan calibrate-speed``): any object with
    #: ``gpu_class: str``, ``engine: str`` and ``factors: Mapping[str, float]`` (names from
    #: :data:`kvplan.perf.efficiency.CONSTANT_NAMES`); None: the class's declared constants
    calibration: object | None = None


class PhaseBreakdown(Record):
    """One phase's step: ``parts`` rows (name, flops, bytes, collective bytes, seconds, bound)."""

    seconds: float
    parts: tuple[dict[str, Any], ...]
    shares: dict[str, float]
    bound: str


class SpeedResult(Record):
    """One speed answer (JSON contract: :data:`SPEED_KEYS`, then the context and the breakdown)."""

    prefill_tokens_per_s: float
    ttft_s: float
    tpot_s: float
    decode_tokens_per_s_per_request: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    total_tokens_per_s_per_gpu: float
    bound: dict[str, str]
    shares: dict[str, dict[str, float]]
    # context
    engine: str
    model: str
    gpu: str
    gpu_class: str
    num_gpus: int
    tp: int
    ep: int
    dp: int
    attn_tp: int
    family: str
    kv_cache_dtype: str
    input_len: int
    output_len: int
    concurrency: int  # as run (capped by what fits)
    concurrency_asked: int
    concurrency_fits: int
    chunk_tokens: int
    prefill_chunks: int
    prefill_s: float
    prefill_graph: bool
    decode_graph: bool
    decode_step_s: float
    tokens_per_step: float
    speculative: str | None
    # per step breakdowns: a prefill chunk (the last full one) and a decode step
    prefill_chunk: PhaseBreakdown
    prefill_total: PhaseBreakdown
    decode_step: PhaseBreakdown
    sentences: dict[str, str]
    levers: tuple[str, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    #: the median (P50) TTFT over a benchmark run of ``num_prompts`` requests (``SpeedInputs.num_prompts``; None
    #: without one): the first wave's burst waits and the steady-state wait of the others, their median
    ttft_p50_s: float | None = None


def _phase(s: Any) -> PhaseBreakdown:
    parts = tuple(
        {
            "name": p.name,
            "flops": float(p.flops),
            "bytes": float(p.nbytes),
            "collective_bytes": float(p.coll_bytes),
            "seconds": float(p.seconds),
            "bound": p.bound,
        }
        for p in s.parts
    )
    return PhaseBreakdown(float(s.seconds), parts, s.shares(), s.bound())


def _spec_knobs(dep: Deployment, ins: SpeedInputs) -> tuple[str | None, int, int, float, str]:
    """(algorithm, draft forwards, verify width, accept length, its source)."""
    from kvplan.perf.schedule import default_accept_length

    algo = (dep.speculative_algorithm or "").upper() or None
    if algo is None:
        if ins.accept_length is not None:
            raise InputError(
                "--accept-length needs speculative decoding",
                field="--accept-length",
                hint="add --speculative-algorithm (EAGLE, DSPARK, ...)",
            )
        return None, 0, 1, 1.0, ""
    steps = getattr(dep, "speculative_num_steps", None)
    draft = dep.speculative_num_draft_tokens
    if algo == "DSPARK":
        block = dep.speculative_dspark_block_size or _DSPARK_DEFAULT_BLOCK
        steps, draft, drafted = 1, block + 1, block
    elif algo == "NGRAM":
        draft = draft or 8
        steps, drafted = 0, draft - 1
    else:
        if steps is None:
            steps = (draft - 1) if draft else _SPEC_DEFAULT_STEPS
        draft = draft or steps + 1
        drafted = steps
    if ins.accept_length is not None:
        acc, src = float(ins.accept_length), "--accept-length (given)"
    else:
        acc = default_accept_length(drafted)
        src = f"default: (1 - 0.7^{drafted + 1}) / 0.3 for {drafted} drafted tokens at acceptance 0.7 (docs/speed.md)"
    acc = min(acc, float(draft))
    return algo, int(steps), int(draft), acc, src


def _sentence(phase: str, b: PhaseBreakdown, *, tp: int, link: str, chunk: int | None) -> str:
    top = max((p for p in b.parts if p["bound"] == b.bound), key=lambda p: p["seconds"], default=None)
    share = b.shares[b.bound]
    what = top["name"].split(" x")[0] if top else b.bound
    unit = f"each {chunk:,}-token chunk" if chunk else "each step"
    if b.bound == "communication":
        return f"{phase}: communication-bound, the {what} over {link} is {share:.0%} of {unit}"
    if b.bound == "overhead":
        return f"{phase}: overhead-bound, kernel launches and host work are {share:.0%} of {unit}"
    return f"{phase}: {b.bound}-bound, {what} is {share:.0%} of {unit}"


def _levers(
    b_pre: PhaseBreakdown, b_dec: PhaseBreakdown, *, p2p: bool, graph_pre: bool, graph_dec: bool, spec: bool
) -> tuple[str, ...]:
    """One line per phase: what would move its bound."""
    out: list[str] = []
    for phase, b, graph in (("prefill", b_pre, graph_pre), ("decode", b_dec, graph_dec)):
        if b.bound == "communication":
            out.append(
                f"{phase}: a faster link (NVLink) or fewer ranks per all-reduce (a smaller --tp-size, "
                "--enable-dp-attention)" + ("" if p2p else ", or P2P enabled")
            )
        elif b.bound == "overhead":
            more = "CUDA graphs for this phase" if not graph else "fewer, fused kernels per layer"
            extra = "larger chunks (more work per kernel)" if phase == "prefill" else "a larger batch"
            out.append(f"{phase}: {more}, {extra}" + ("" if spec or phase == "prefill" else ", speculative decoding"))
        elif b.bound == "memory":
            out.append(f"{phase}: more requests per step (weights read once per step), fp8/fp4 weights or KV")
        else:
            out.append(f"{phase}: fp8/fp4 compute, or more GPUs")
    return tuple(out)


_SUM_KEYS = frozenset(
    ("dense", "lm_head", "expert", "moe_layers", "experts", "mtp_dense", "mtp_expert", "mtp_copies", "hc_mult")
)


def _model_numbers(spec: Any, dep: Deployment, res: Any) -> tuple[dict[str, float], dict[str, int]]:
    """(inventory sums, per-GPU weight bytes per component) of the model on this layout, remembered on disk
    (:mod:`kvplan.cache`, kind ``perf``): the tensor walk is most of a warm run's work, as it is for ``fit``."""
    import json
    import zlib

    from kvplan import cache

    ident = json.dumps(
        [
            spec.raw_config or spec.config,
            spec.quantization,
            spec.checkpoint_bytes,
            res.tp,
            res.pp,
            res.ep,
            res.attn_dp,
            dep.engine,
            dep.moe_dense_tp_size,
            3,  # the entry's revision: bump when inventory_sums changes (3: the GEMM shapes, so an entry cached without
            # them is replaced once instead of re-walking the tensor inventory at every warm run)
        ],
        sort_keys=True,
        default=str,
    )
    key = f"s{zlib.crc32(ident.encode()):08x}"
    hit = cache.load("perf", key, ident)
    if (
        hit is not None
        and isinstance(hit.get("sums"), dict)
        and isinstance(hit.get("breakdown"), dict)
        and all(isinstance(v, (int, float)) for v in hit["sums"].values())
    ):
        return hit["sums"], hit["breakdown"]
    from kvplan.perf.ops import inventory_sums
    from kvplan.weights.estimate import estimate_weight_bytes

    est = estimate_weight_bytes(
        config=spec.raw_config or spec.config,
        quantization=spec.quantization,
        checkpoint_bytes=spec.checkpoint_bytes,
        tp_size=res.tp,
        pp_size=res.pp,
        ep_size=res.ep,
        attn_dp_size=res.attn_dp,
        engine=dep.engine,
        moe_dense_tp_size=dep.moe_dense_tp_size,
    )
    sums = inventory_sums(spec.raw_config or spec.config, engine=dep.engine)
    breakdown = {name: int(n) for name, n in est.breakdown}
    cache.store("perf", key, ident, {"sums": sums, "breakdown": breakdown})
    return sums, breakdown


def _calibrated(eff: Any, cal: object, *, gpu_class: str, engine: str) -> Any:
    """``eff`` scaled by a calibration's factors; InputError (exit 2) when it was fitted for another GPU class or
    engine, or names a constant the model does not have."""
    import math

    from kvplan.perf.efficiency import CONSTANT_NAMES, scaled

    cal_class = getattr(cal, "gpu_class", None)
    cal_engine = getattr(cal, "engine", None)
    factors = getattr(cal, "factors", None)
    if not isinstance(cal_class, str) or not isinstance(cal_engine, str) or not hasattr(factors, "items"):
        raise InputError("not a calibration (needs gpu_class, engine, factors)", field="--calibration")
    if cal_class != gpu_class:
        raise InputError(f"calibrated for GPU class {cal_class}, this deployment is {gpu_class}", field="--calibration")
    if cal_engine != engine:
        raise InputError(f"calibrated for engine {cal_engine}, this deployment is {engine}", field="--calibration")
    out: dict[str, float] = {}
    for name, f in factors.items():  # type: ignore[union-attr]
        if name not in CONSTANT_NAMES:
            raise InputError(
                f"unknown constant {str(name)[:40]!r}",
                field="--calibration",
                hint="one of " + ", ".join(CONSTANT_NAMES),
            )
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or f <= 0:
            raise InputError(f"factor {name} must be a positive number, got {f!r}", field="--calibration")
        out[name] = float(f)
    shown = ", ".join(f"{k} x{v:.3g}" for k, v in sorted(out.items())) or "no factors"
    return scaled(eff, out, label=f"calibration ({cal_engine}): {shown}")


def _prefill_graph(
    dep: Deployment, spec: Any, res: Any, *, vendor: str, chunk: int, algo: str | None, graph_cap: int | None
) -> bool:
    """Whether a prefill step runs under a CUDA graph (``--disable-cuda-graph`` / ``--enforce-eager`` aside): vLLM
    V1 up to its largest capture size (``graph_cap``); SGLang by its release's own rule
    (:func:`kvplan.perf.graphs.sglang_prefill_graph`: none before 0.5.10, none for DeepSeek-V4 from 0.5.14, ...)."""
    if graph_cap is not None:
        return chunk <= graph_cap
    from kvplan.perf.graphs import sglang_prefill_graph

    return sglang_prefill_graph(
        version=dep.engine_version,
        model=spec,
        vendor=vendor,
        pp=res.pp,
        attn_dp=max(res.attn_dp, 1),
        dcp=int(getattr(dep, "dcp_size", None) or 1),
        disable_cuda_graph=bool(dep.disable_cuda_graph),
        speculative_algorithm=algo or "",
    )


def _model_caveats(*, pp: int, family: str, sm: str) -> list[str]:
    """What the step model is known to leave out for this deployment, printed as warnings: pipeline stages summed
    per step; DeepSeek-V4's SM120 decode (:data:`DSV4_SM120_DECODE_CAVEAT`).  Example: pp 1, "dsv4", "12.0" ->
    [the caveat]; pp 1, "dsv4", "9.0" -> []."""
    out: list[str] = []
    if pp > 1:
        out.append("pipeline parallelism: stages are summed per step (no micro-batch overlap modelled)")
    if family == Family.DSV4 and sm == "12.0":  # measured on SM120 cards only (GB10, SM121, not)
        out.append(DSV4_SM120_DECODE_CAVEAT)
    return out


class RunInputs(Record):
    """What :func:`_bench_run` takes from the speed answer it belongs to: the concurrency as run, the prefill step
    (tokens), one request's prefill alone, the decode step at C and its tokens per step, the attention-DP ranks, the
    prefill CUDA-graph state, the decode context and the workload."""

    run_c: int
    clients: int  # the benchmark's concurrency as asked (more than run_c when they do not all fit)
    chunk: int
    t_p: float
    dec_step: float
    dec_tokens: float
    dp: int
    prefill_graph: bool
    context: float
    input_len: int
    output_len: int


def _bench_run(ops: Any, hw: Any, eff: Any, knobs: Any, ins: SpeedInputs, k: RunInputs) -> dict[str, Any]:
    """A benchmark run of ``ins.num_prompts`` requests at concurrency ``k.run_c`` (kvplan.perf.queue
    :func:`~kvplan.perf.queue.simulate_run`: the first C arrive at once, each completion sends the next, the engine
    admits prompts into token-budgeted steps by its own policy): the mean and the median GPU-side time to first
    token over its requests, and the assumption line that says so.  The step costs come from the step model:
    a full prefill step of ``chunk`` tokens (its overhead parts the fixed cost, the rest per token; with attention
    DP the per-request share, :func:`~kvplan.perf.queue.prefill_service_s`) and decode steps at 1 and C requests
    (linear in between)."""
    from kvplan.perf.queue import (
        POLICY_SOURCES,
        BenchRun,
        StepCosts,
        admission_policy,
        bench_lengths,
        mean_and_median,
        prefill_service_s,
        prefill_token_cap,
        run_ttfts,
    )
    from kvplan.perf.schedule import decode, step

    n, c, chunk, dp = int(ins.num_prompts or 0), k.run_c, k.chunk, k.dp
    clients = max(k.clients, c)
    cap = c if clients > c else None  # past what fits, the engine queues the rest
    s_len, o_len = k.input_len, k.output_len
    ratio = 1.0 if ins.range_ratio is None else float(ins.range_ratio)
    full = step(
        ops,
        hw,
        eff,
        tokens=float(chunk),
        requests=max(float(chunk) / max(s_len, 1), 1.0),
        position=s_len / 2,
        decode=False,
        graph=k.prefill_graph,
    )
    full_s = prefill_service_s(full, dp=dp)
    fixed = sum(float(p.seconds) for p in full.parts if p.bound == "overhead") / max(dp, 1)
    per_token = max(full_s - fixed, 0.0) / max(chunk, 1)
    d1 = float(decode(ops, hw, eff, knobs, concurrency=1.0, context=k.context).step_seconds)
    dc = float(k.dec_step)
    slope = (dc - d1) / (c - 1) if c > 1 else 0.0
    costs = StepCosts(
        prefill_fixed_s=fixed,
        prefill_token_s=per_token,
        decode_fixed_s=d1 - slope,
        decode_request_s=slope,
        tokens_per_step=float(k.dec_tokens),
    )
    ins_lens = bench_lengths(full_len=s_len, range_ratio=ratio, count=n, stream="input")
    out_lens = bench_lengths(full_len=max(o_len, 1), range_ratio=ratio, count=n, stream="output")
    policy = admission_policy(engine=knobs.engine)
    run = BenchRun(
        concurrency=clients,
        input_lens=ins_lens,
        output_lens=out_lens,
        budget=chunk,
        policy=policy,
        max_running=cap,
        max_prefill_tokens=prefill_token_cap(policy=policy),
    )
    alone_full = costs.alone_s(input_len=s_len, budget=chunk) or 1.0
    scale = float(k.t_p) / alone_full  # the step model's exact prefill of input-len, per linear second
    own = tuple(scale * costs.alone_s(input_len=x, budget=chunk) for x in run.input_lens)
    mean_s, median_s = mean_and_median(run_ttfts(run=run, costs=costs, own_s=own))
    text = (
        f"benchmark run: {n:,} requests at concurrency {clients:,}"
        + (f" (the engine runs {cap:,} at once, the rest wait for a slot)" if cap else "")
        + f", lengths uniform over [{max(int(s_len * ratio), 1):,}, "
        f"{s_len:,}] in and [{max(int(max(o_len, 1) * ratio), 1):,}, {max(o_len, 1):,}] out (--random-range-ratio "
        f"{ratio:g}); the first {min(clients, n):,} arrive at once, each completion sends the next; {policy} admission "
        f"({POLICY_SOURCES[policy]}) in steps of {chunk:,} prompt tokens ({fixed * 1e3:,.1f} ms + "
        f"{per_token * 1e6:,.2f} us per token; decode "
        f"{d1 * 1e3:,.1f} ms at 1, {dc * 1e3:,.1f} ms at {c:,}): mean time to first token on the GPU "
        f"{mean_s * 1e3:,.1f} ms, median {median_s * 1e3:,.1f} ms (kvplan.perf.queue.simulate_run"
        + (f"; its first {len(run.input_lens):,} requests simulated" if len(run.input_lens) < n else "")
        + ")"
    )
    return {"mean_s": mean_s, "median_s": median_s, "text": text}


def _check_inputs(ins: SpeedInputs) -> None:
    """InputError (exit 2, the flag named) for a concurrency, run size, range ratio or accept length out of range."""
    c = ins.concurrency
    if isinstance(c, bool) or not isinstance(c, int) or not (1 <= c <= 1 << 20):
        raise InputError(f"must be an integer between 1 and 1,048,576, got {c!r}", field="--concurrency")
    n = ins.num_prompts
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not (1 <= n <= 1 << 24)):
        raise InputError(f"must be an integer between 1 and 16,777,216, got {n!r}", field="--num-prompts")
    r = ins.range_ratio
    if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float)) or not (0.0 <= r <= 1.0)):
        raise InputError(f"must be a number between 0 and 1, got {r!r}", field="--random-range-ratio")
    if r is not None and n is None:
        raise InputError(
            "describes a benchmark run's lengths", field="--random-range-ratio", hint="add --num-prompts N"
        )
    a = ins.accept_length
    if a is not None and (isinstance(a, bool) or not isinstance(a, (int, float)) or not (1.0 <= a <= 64.0)):
        raise InputError(f"must be a number between 1 and 64, got {a!r}", field="--accept-length")


def speed(dep: Deployment, inputs: SpeedInputs | None = None) -> SpeedResult:
    """Plan ``dep`` (capacity) and run the step model for its workload (``dep.input_len`` / ``dep.output_len``,
    defaults 8,192 / 1,024) at ``inputs.concurrency``.  InputError (exit 2) for bad input or a GPU figure the
    preset lacks (named, with its override flag)."""
    from kvplan.engines.registry import engine as engine_for
    from kvplan.perf.comm import nccl_only
    from kvplan.perf.efficiency import efficiency_for, gpu_class
    from kvplan.perf.hardware import Overrides, resolve_hardware
    from kvplan.perf.ops import model_ops
    from kvplan.perf.overhead import request_overhead_s
    from kvplan.perf.queue import (
        closed_loop_wait,
        lockstep_steady,
        parallel_part_s,
        prefill_service_s,
        rank_clients,
    )
    from kvplan.perf.schedule import Knobs, decode, draft_prefill, prefill
    from kvplan.planning.plan import fit, gpu_for

    ins = inputs or SpeedInputs()
    _check_inputs(ins)
    c = ins.concurrency
    assumptions: list[str] = []
    warnings: list[str] = []
    dep = dep.with_defaults()
    if dep.input_len is None:
        dep = replace(dep, input_len=DEFAULT_INPUT_LEN, output_len=dep.output_len or DEFAULT_OUTPUT_LEN)
        assumptions.append(f"workload: --input-len {DEFAULT_INPUT_LEN:,} (default)")
    if dep.output_len is None:
        dep = replace(dep, output_len=DEFAULT_OUTPUT_LEN)
        assumptions.append(f"workload: --output-len {DEFAULT_OUTPUT_LEN:,} (default)")
    input_len, output_len = int(dep.input_len or 1), int(dep.output_len or 0)
    res = fit(dep)
    eng = engine_for(dep.engine)
    gpu, _ = gpu_for(dep)
    if gpu is None:  # pragma: no cover - fit names the default GPU
        raise InputError("the speed model needs a GPU", field="--gpu", hint="pass --gpu")
    from kvplan.inputs.resolve import resolve_model, with_quantization

    spec, quant_note = with_quantization(resolve_model(dep.model or ""), dep.quantization)
    if quant_note:
        assumptions.append(quant_note)
    ov = Overrides(ins.gpu_tflops, ins.gpu_bandwidth, ins.link_bandwidth, ins.power_limit)
    hw = resolve_hardware(gpu, ov, num_gpus=res.num_gpus)
    eff = efficiency_for(hw)
    cls = gpu_class(vendor=hw.vendor, arch=hw.arch, form=hw.form, link=hw.link, p2p=hw.p2p)
    if ins.calibration is not None:
        eff = _calibrated(eff, ins.calibration, gpu_class=cls, engine=dep.engine)
    sums, breakdown = _model_numbers(spec, dep, res)
    ops = model_ops(
        spec,
        dep,
        gpu_fp8=bool(hw.tflops.get("fp8")),
        gpu_fp4=bool(hw.tflops.get("fp4")),
        sums=sums,
        breakdown=breakdown,
        sm=hw.sm,
    )
    # capacity: what fits at this workload
    fits_c = int(res.workload_concurrency or 0) if res.fits else 0
    if res.max_running_requests:
        # an engine without DP attention replicates the whole model per DP rank: each rank has its own cap
        cap = int(res.max_running_requests) * max(res.attn_dp, 1) * max(1 if eng.dp_attention else res.dp, 1)
        fits_c = min(fits_c, cap) if fits_c else cap
    run_c = c
    if not res.fits:
        warnings.append(f"the deployment does not fit: {res.verdict}")
    elif res.workload_concurrency == 0:  # it starts, but no request of this workload runs (longer than the context)
        warnings.append(
            f"no request of {input_len:,}+{output_len:,} tokens runs on this deployment: {res.verdict}; "
            "the speed shown is of a request the engine would refuse"
        )
    elif fits_c and c > fits_c:
        run_c = fits_c
        warnings.append(
            f"--concurrency {c:,} does not fit: {fits_c:,} requests of {input_len + output_len:,} tokens run at "
            f"once; the rest queue (speed shown at {fits_c:,})"
        )
    # engine knobs
    chunk = res.chunked_prefill_size if res.chunked_prefill_size and res.chunked_prefill_size > 0 else input_len
    eager = dep.disable_cuda_graph or dep.enforce_eager
    # vLLM: piecewise graphs up to its largest capture size; SGLang: the release's own rule (kvplan.perf.graphs:
    # no prefill graph before 0.5.10, none for DeepSeek-V4 on any GPU from 0.5.14, ...)
    graph_cap = eng.prefill_graph_max_tokens
    algo, steps, draft, acc, acc_src = _spec_knobs(dep, ins)
    prefill_graph = not eager and _prefill_graph(
        dep, spec, res, vendor=hw.vendor, chunk=int(chunk), algo=algo, graph_cap=graph_cap
    )
    knobs = Knobs(
        engine=dep.engine,
        chunk=int(chunk),
        prefill_graph=prefill_graph,
        decode_graph=not eager,
        spec_algorithm=algo,
        spec_steps=steps,
        spec_draft_tokens=draft,
        accept_length=acc,
        accept_source=acc_src,
    )
    pre = prefill(ops, hw, eff, knobs, input_len=input_len)
    # EAGLE-class speculation: the draft's extend over the prompt runs after the target's (empty otherwise)
    pre.step.add(draft_prefill(ops, eff, knobs, prefill=pre))
    pre.seconds = pre.step.seconds
    context = input_len + output_len / 2
    dec = decode(ops, hw, eff, knobs, concurrency=float(run_c), context=float(context))
    t_p = pre.seconds
    s = dec.step_seconds
    per_tok = s / dec.tokens_per_step
    # steady state at C: every other request's prefill runs as its own step once per request lifetime and stalls
    # the decode batch; a new request waits in the prefill queue (kvplan.perf.queue).  With attention DP the ranks
    # prefill their own requests side by side, but only the attention and the per-step overhead run in parallel:
    # the linear layers, the experts and the collectives already span every GPU (EP / the DP gather), so a burst of
    # dp requests costs dp times those parts.  t_b is one request's share of the server when prefills overlap.
    dp_par = max(res.attn_dp, 1)
    t_b = prefill_service_s(pre.step, dp=dp_par)
    out_n = max(output_len, 1)
    stall = (run_c - 1) * t_b
    decode_time = out_n * per_tok + stall
    # the prefill queue of C closed-loop clients (kvplan.perf.queue: both engines prefill before they decode, FIFO)
    host = request_overhead_s(engine=dep.engine)
    own_p, q_clients, q_service = t_p, float(run_c), t_b
    from kvplan.engines.registry import engine as engine_for

    # DP attention (the engine divides attention over attention-DP ranks, each with its own scheduler)
    lockstep = dp_par > 1 and engine_for(dep.engine).dp_attention
    if lockstep:
        # DP attention: round-robin dispatch to per-rank schedulers whose steps run in lockstep (kvplan.perf.queue
        # lockstep_steady): each rank queues its own share, a prefill is slowed by the ranks prefilling beside it,
        # and every rank's decode waits for every step that holds a prefill
        own_p, stall_1 = lockstep_steady(
            alone_s=t_p,
            parallel_s=parallel_part_s(pre.step),
            dp=dp_par,
            clients=run_c,
            base_think_s=s + host + out_n * per_tok,
        )
        stall = (run_c - 1) * stall_1
        decode_time = out_n * per_tok + stall
        q_clients, q_service = rank_clients(clients=run_c, dp=dp_par), own_p
    think = s + host + decode_time
    wait = float(closed_loop_wait(clients=q_clients, service_s=q_service, think_s=think))
    ttft = own_p + s + host + wait
    rps = run_c / (ttft + decode_time)
    if run_c > 1:
        assumptions.append(
            f"queue: {run_c:,} closed-loop clients, {t_b * 1e3:,.1f} ms of prefill each (FIFO, before decode), "
            f"{think:,.2f} s elsewhere per cycle: a mean wait of {wait * 1e3:,.1f} ms "
            "(mean-value analysis; benchmark bursts only with --num-prompts)"
            + (
                f"; DP attention: {dp_par} ranks, round-robin dispatch, {q_clients:,.2f} clients per rank's queue, "
                f"lockstep steps: a prefill takes {own_p * 1e3:,.1f} ms with the ranks prefilling beside it "
                f"({t_p * 1e3:,.1f} ms alone), every rank's decode stalled {stall:,.2f} s per request by the "
                "others' prefill steps (kvplan.perf.queue.lockstep_steady)"
                if lockstep
                else ""
            )
        )
    n_prompts = ins.num_prompts
    ttft_p50 = None
    if n_prompts is not None:
        k = RunInputs(
            run_c=run_c,
            clients=max(c, run_c),
            chunk=int(chunk),
            t_p=t_p,
            dec_step=s,
            dec_tokens=dec.tokens_per_step,
            dp=dp_par,
            prefill_graph=prefill_graph,
            context=float(context),
            input_len=input_len,
            output_len=output_len,
        )
        run = _bench_run(ops, hw, eff, knobs, ins, k)
        ttft = run["mean_s"] + s + host
        ttft_p50 = run["median_s"] + s + host
        assumptions.append(run["text"])
    tpot = decode_time / out_n
    b_pre, b_dec = _phase(pre.chunk_step), _phase(dec.step)
    link = {"pcie": "PCIe", "nvlink": "NVLink", "nvlink-c2c": "NVLink", "xgmi": "xGMI"}.get(hw.link, "PCIe")
    sentences = {
        "prefill": _sentence("prefill", b_pre, tp=res.tp, link=link, chunk=int(chunk)),
        "decode": _sentence("decode", b_dec, tp=res.tp, link=link, chunk=None),
    }
    assumptions += [
        f"GPU class {cls}: " + "; ".join(eff.sources),
        *(f"hardware: {x}" for x in hw.sources),
        f"prefill: {pre.chunks} chunk(s) of up to {int(chunk):,} tokens, "
        + ("CUDA graphs" if prefill_graph else "eager (no prefill CUDA graph)")
        + (" (the engine release's default prefill CUDA-graph rule)" if graph_cap is None and not eager else ""),
        "decode: " + ("CUDA graphs" if not eager else "eager") + f", context {context:,.0f} (input + output / 2)",
        f"compute dtypes: dense {ops.weight_dtype}, routed experts {ops.expert_dtype} "
        f"(checkpoint quantization {spec.quantization})",
        *ops.notes,
        "left out: benchmark length distributions and request-rate arrivals (the queue is closed-loop), "
        "prefix-cache hits, kernel tile effects, PP bubbles",
    ]
    if nccl_only(link=hw.link, ranks=ops.tp):
        assumptions.append(
            f"collectives: NCCL for every all-reduce (the engines' custom all-reduce needs 2 GPUs or NVLink, here "
            f"{ops.tp} on {link}); its LL or Simple protocol per message by NCCL's cost model (src/graph/tuning.cc)"
        )
    if hw.power_scale < 1.0:
        assumptions.append(f"--power-limit: compute x {hw.power_scale:.3f} (clock ~ power^(1/3))")
    if algo:
        assumptions.append(
            f"speculative {algo}: {steps} draft forward(s), verify {draft} tokens, accept {acc:.2f} "
            f"tokens/step ({acc_src})"
        )
    topk = getattr(dep, "speculative_eagle_topk", None)
    if algo and topk and topk > 1:
        assumptions.append(
            f"--speculative-eagle-topk {topk}: the draft tree's extra branches are not modelled (the draft runs as a "
            "chain; the verify width is --speculative-num-draft-tokens)"
        )
    if dep.moe_runner_backend:
        assumptions.append(
            f"--moe-runner-backend {dep.moe_runner_backend}: recorded; the MoE GEMMs use the class's "
            "grouped-GEMM fraction (kvplan.perf.efficiency.expert_compute) whatever the backend"
        )
    warnings += _model_caveats(pp=res.pp, family=ops.family, sm=hw.sm)
    total = rps * (input_len + output_len)
    return SpeedResult(
        prefill_tokens_per_s=input_len / t_p,
        ttft_s=ttft,
        tpot_s=tpot,
        decode_tokens_per_s_per_request=1.0 / tpot,
        output_tokens_per_s=rps * output_len,
        total_tokens_per_s=total,
        total_tokens_per_s_per_gpu=total / max(res.num_gpus, 1),
        bound={"prefill": b_pre.bound, "decode": b_dec.bound},
        shares={"prefill": b_pre.shares, "decode": b_dec.shares},
        engine=res.engine,
        model=res.model,
        gpu=hw.gpu_id,
        gpu_class=cls,
        num_gpus=res.num_gpus,
        tp=res.tp,
        ep=res.ep,
        dp=res.dp,
        attn_tp=ops.attn_tp,
        family=ops.family,
        kv_cache_dtype=res.kv_cache_dtype,
        input_len=input_len,
        output_len=output_len,
        concurrency=run_c,
        concurrency_asked=c,
        concurrency_fits=fits_c,
        chunk_tokens=int(chunk),
        prefill_chunks=pre.chunks,
        prefill_s=t_p,
        prefill_graph=prefill_graph,
        decode_graph=not eager,
        decode_step_s=s,
        tokens_per_step=dec.tokens_per_step,
        speculative=algo,
        prefill_chunk=b_pre,
        prefill_total=_phase(pre.step),
        decode_step=b_dec,
        sentences=sentences,
        levers=_levers(b_pre, b_dec, p2p=hw.p2p, graph_pre=prefill_graph, graph_dec=not eager, spec=bool(algo)),
        assumptions=tuple(assumptions),
        warnings=tuple(warnings + list(res.warnings)),
        ttft_p50_s=ttft_p50,
    )
