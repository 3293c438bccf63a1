"""Inverse questions: what is the least (or most) of one knob that meets a target?

The target is the one ``kvplan fit`` tests (``meets_target``): ``--requests N`` requests at once (default 1), of
``--context-length`` tokens (default the model's) or, with ``--input-len`` / ``--output-len``, of that workload; the
engine must start and serve one full-context request (``fits``: KV dtype, context limit, memory).  The request cap
(``--max-running-requests``) is a cap, never the target.  Every candidate is evaluated by
:func:`kvplan.planning.sweep.sweep`, i.e. by the same formulas and verdict as ``kvplan fit``, and every rejected
candidate carries the reason it fails (fit's ``target_reason``).

Questions:

* ``gpus`` -- the fewest GPUs of the given kind: candidates tp (powers of two) x dp replicas (powers of
  two) with tp x pp x dp <= ``max_gpus``; a flag that was given (``--tp``, ``--dp``, ``--pp``) is kept
  fixed.  Ties on the GPU count go to the candidate with the larger concurrency.
* ``mem-fraction`` -- the smallest ``--mem-fraction-static`` (to 0.001, the precision of SGLang's own
  "mem_fraction_static must exceed" hint): a 0.01 grid, then 0.001 steps inside the bracket.
  (More budget never lowers the pool or the request cap, so the search is monotone.)  Under vLLM the same search
  over ``--gpu-memory-utilization`` (the answer names that flag).
* ``dtype`` -- the cheapest KV dtype, meaning the one that gives up the least precision: candidates in the
  order bfloat16, fp8_e4m3, fp8_e5m2, mxfp8, nvfp4, fp4_mx_block16; the first that meets the target wins.  A dtype
  the engine refuses on the GPU (mxfp8 / nvfp4 before Blackwell, :mod:`kvplan.engines.support`) does not fit, so it
  is never the answer.
* ``context`` -- the longest ``--context-length`` (up to the given one, default the model's) at which
  ``requests`` requests still fit: a bisection (the pool does not depend on the context for GQA/MLA/DSA
  and the concurrency ``min(tokens // context, cap)`` never grows with the context).  The answer's
  ``longest_request`` is the longest request ``kvplan fit`` prints at that context (its ``max_context_length``).
  When the deployment's group is on the sweep's vector path (both engines, :mod:`kvplan.planning.sweep_vllm` for
  vLLM), the contexts the next :data:`PREFETCH_LEVELS` bisection steps may probe are evaluated in one sweep with a
  context axis (one ``fit``, the rest vectorised); the probes, their order and the answer are unchanged.
* ``concurrency`` -- the most requests of ``context`` tokens (or of the workload) at once, capped by the request
  cap in force (the one given, else the engine's), and why one more does not fit.  With latency targets
  (``--ttft``, ``--tpot`` or ``--min-decode-rate``: :func:`solve_concurrency_targets`) the most requests that also
  meet them at the workload, by :func:`kvplan.planning.speed.speed` at each C probed (a bisection over 1 .. the
  memory's answer: TTFT and TPOT do not fall as C grows); the answer says which bound set it (``bound``: memory,
  or the target missed at one more request).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.hfconfig.dtypes import DType

QUESTIONS = ("gpus", "mem-fraction", "dtype", "context", "concurrency")
#: KV dtypes by precision given up, least first (the order ``dtype`` tries them in)
DTYPE_ORDER: tuple[DType, ...] = (
    DType.BF16,
    DType.FP8_E4M3,
    DType.FP8_E5M2,
    DType.MXFP8,
    DType.NVFP4,
    DType.FP4_MX_BLOCK16,
)


def _kv_flag_word(d: DType) -> str:
    """The ``--kv-cache-dtype`` word a candidate is tried and reported as: ``bfloat16`` (the word both engines'
    flags accept), every other member under its canonical name."""
    return "bfloat16" if d is DType.BF16 else d.canonical


_DTYPE_WORDS: tuple[str, ...] = tuple(_kv_flag_word(d) for d in DTYPE_ORDER)


@dataclass
class Candidate:
    label: str
    value: Any
    fits: bool  # meets the target (the candidate answers the question)
    reason: str  # fit's target_reason
    row: dict = field(default_factory=dict)


@dataclass
class SolveResult:
    question: str
    target: str
    answer: Any | None
    answer_label: str
    candidates: list[Candidate]
    notes: list[str] = field(default_factory=list)
    answer_index: int | None = None  # which candidate is the answer
    longest_request: int | None = None  # context: fit's max_context_length at the answer
    bound: str | None = None  # concurrency with targets: "memory" or the target key missed at one more request
    memory_answer: int | None = None  # concurrency with targets: the memory's answer

    def __post_init__(self):
        if self.answer_index is None and self.answer is not None:
            self.answer_index = next(
                (i for i, c in enumerate(self.candidates) if c.fits and c.value == self.answer), None
            )

    @property
    def solved(self) -> bool:
        return self.answer is not None

    def to_dict(self) -> dict:
        keep = (
            "model",
            "gpu",
            "engine",
            "num_gpus",
            "tp",
            "pp",
            "dp",
            "kv_cache_dtype",
            "mem_fraction_static",
            "gpu_memory_utilization",
            "context_length",
            "target_requests",
            "input_len",
            "output_len",
            "kv_bytes_per_token",
            "kv_budget_bytes",
            "kv_pool_tokens",
            "max_running_requests",
            "max_concurrency",
            "max_context_length",
            "workload_tokens_per_request",
            "workload_concurrency",
            "fits",
            "meets_target",
            "verdict",
            *_SPEED_KEEP,
        )
        # both verdicts (``starts`` and ``fits``) on the answers with speed targets; the older questions keep their
        # recorded keys (tests/golden/contract/solve-*.json)
        extra = ("starts",) if self.bound is not None else ()
        out = {
            "question": self.question,
            "target": self.target,
            "answer": self.answer,
            "answer_label": self.answer_label,
            "notes": self.notes,
            "candidates": [
                {
                    "label": c.label,
                    "value": c.value,
                    "fits": c.fits,
                    "reason": c.reason,
                    **{k: c.row.get(k) for k in (*keep, *extra) if k in c.row},
                }
                for c in self.candidates
            ],
        }
        if self.question == "context":
            out["longest_request"] = self.longest_request
        if self.bound is not None:
            out["bound"] = self.bound
            out["memory_concurrency"] = self.memory_answer
        return out


#: speed keys a candidate of ``solve concurrency`` with targets carries (kvplan speed's names)
_SPEED_KEEP = ("ttft_s", "tpot_s", "decode_tokens_per_s_per_request", "output_tokens_per_s", "concurrency")


def _table(base: Deployment, axes: dict) -> Any:
    """The :class:`~kvplan.planning.sweep.SweepTable` of ``base`` x ``axes`` (the sweep's vector path)."""
    from kvplan.planning.sweep import sweep

    return sweep(base, axes)


def _rows(base: Deployment, axes: dict) -> list[dict]:
    """Every row of the sweep, in grid order (evaluated a chunk at a time, :meth:`SweepTable.rows`)."""
    return list(_table(base, axes).rows())


#: levels of the context bisection evaluated ahead in one vectorised sweep (2 ** 11 - 1 contexts at most)
PREFETCH_LEVELS = 11


def _bisection_mids(lo: int, hi: int, levels: int) -> list[int]:
    """Every context the bisection ``while hi - lo > 1: mid = (lo + hi) // 2`` can probe in its next ``levels``
    steps from (lo, hi), whatever the answers (breadth first).  Example: (2, 10), 2 levels -> [6, 4, 8]."""
    out: list[int] = []
    frontier = [(lo, hi)]
    for _ in range(levels):
        nxt: list[tuple[int, int]] = []
        for a, b in frontier:
            if b - a > 1:
                mid = (a + b) // 2
                out.append(mid)
                nxt.extend(((a, mid), (mid, b)))
        frontier = nxt
    return out


class _ContextProbes:
    """``fit``'s row at one context, for the bisection of :func:`_solve_context`.  When the deployment's group is on
    the sweep's vector path, the contexts the bisection may visit next are evaluated together in one sweep (a
    context axis: one ``fit`` for the group, the rest vectorised) and each probe reads its row from that table; the
    probes visited (``rows``), their order and their answers are those of one sweep per probe."""

    def __init__(self, base: Deployment, upper: int) -> None:
        self.base, self.upper = base, upper
        self.rows: dict[int, dict] = {}
        self._ahead: dict[int, tuple[Any, int]] = {}  # context -> (table, row) evaluated ahead
        self.vector = False

    def _row(self, c: int) -> dict:
        if c in self._ahead:
            t, i = self._ahead.pop(c)
            return t.row(i)
        t = _table(replace(self.base, context_length=c), {})
        self.vector = self.vector or (c == self.upper and t.groups[0].method == "vector")
        return t.row(0)

    def ahead(self, lo: int, hi: int, *, first: tuple[int, ...] = ()) -> None:
        """Evaluate the contexts of the bisection's next levels from (lo, hi) in one sweep (vector groups only); the
        axis starts at the upper bound, so the group is resolved at the point already probed."""
        if not self.vector:
            return
        todo = [
            c
            for c in dict.fromkeys((*first, *_bisection_mids(lo, hi, PREFETCH_LEVELS)))
            if c not in self.rows and c not in self._ahead
        ]
        if not todo:
            return
        t = _table(self.base, {"context_length": [self.upper, *todo]})
        self._ahead.update({c: (t, i + 1) for i, c in enumerate(todo)})

    def known(self, c: int) -> bool:
        """``c`` was probed or evaluated ahead."""
        return c in self.rows or c in self._ahead

    def __call__(self, c: int) -> bool:
        if c not in self.rows:
            self.rows[c] = self._row(c)
            if self.rows[c]["error"]:
                raise InputError(self.rows[c]["error"], field="solve")
        return bool(self.rows[c]["meets_target"])


def _achieved(r: dict) -> int:
    """What the target counts: requests of the workload at once when there is one, else of the full context."""
    w = r.get("workload_concurrency")
    return int(w if r.get("input_len") is not None and w is not None else r["max_concurrency"])


def _target(base: Deployment) -> tuple[int, int, str]:
    """(context, requests, the target's words) the way ``fit`` reads them."""
    rows = _rows(base, {})
    r = rows[0]
    if r["error"]:
        raise InputError(r["error"], field="solve")
    return r["context_length"], r["target_requests"], _target_text(r)


def _pow2(limit: int) -> list[int]:
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def solve(base: Deployment, question: str, *, max_gpus: int = 64) -> SolveResult:
    """Answer one inverse question for ``base`` (see the module docstring)."""
    if question not in QUESTIONS:
        raise InputError(f"unknown question '{question}'", field="QUESTION", hint="one of " + ", ".join(QUESTIONS))
    if not isinstance(max_gpus, int) or isinstance(max_gpus, bool) or not 1 <= max_gpus <= 4096:
        raise InputError(f"must be an integer between 1 and 4096, got {max_gpus!r}", field="--max-gpus")
    return {
        "gpus": _solve_gpus,
        "mem-fraction": _solve_mfs,
        "dtype": _solve_dtype,
        "context": _solve_context,
        "concurrency": _solve_concurrency,
    }[question](base, max_gpus=max_gpus)


def _target_text(r: dict) -> str:
    """``16 requests of 32,768 tokens at once`` / ``64 requests of 2,000+500 tokens at once`` (fit's ``target``)."""
    from kvplan.planning.verdict import requests

    n = r["target_requests"]
    if r.get("input_len") is not None:
        return f"{requests(n)} of {r['input_len']:,}+{r['output_len'] or 0:,} tokens at once"
    return f"{requests(n)} of {r['context_length']:,} tokens at once"


def _solve_gpus(base: Deployment, *, max_gpus: int) -> SolveResult:
    _, _, target = _target(replace(base, tp=base.tp or 1, dp=base.dp or 1))
    axes: dict = {}
    pp = base.pp or 1
    if base.tp is None:
        axes["tp"] = _pow2(max_gpus // pp)
    if base.dp is None and not base.enable_dp_attention:
        axes["dp"] = _pow2(max_gpus // pp)
    rows = [r for r in _rows(replace(base, pp=base.pp), axes) if r["num_gpus"] <= max_gpus]
    rows.sort(key=lambda r: (r["num_gpus"], not r["meets_target"], -_achieved(r), r["dp"]))
    answer = next((r for r in rows if r["meets_target"]), None)
    shown = [r for r in rows if answer is None or r["num_gpus"] <= answer["num_gpus"]]
    cands = [
        Candidate(
            label=f"{r['num_gpus']} GPU(s): tp {r['tp']} x pp {r['pp']} x dp {r['dp']}",
            value=r["num_gpus"],
            fits=r["meets_target"],
            reason=r["reason"],
            row=r,
        )
        for r in shown
    ]
    gpu = base.gpu or (base.with_defaults().gpu or "GPU")
    return SolveResult(
        question="gpus",
        target=target,
        answer=answer["num_gpus"] if answer else None,
        answer_label=(
            f"{answer['num_gpus']} x {gpu} (tp {answer['tp']}, pp {answer['pp']}, dp {answer['dp']}; "
            f"room for {_achieved(answer)})"
            if answer
            else f"no layout of up to {max_gpus} {gpu} meets the target"
        ),
        candidates=cands,
        notes=[f"candidates: tp and dp in powers of two, tp x pp x dp <= {max_gpus} (--max-gpus)"],
    )


def _engine(base: Deployment) -> str:
    """The engine ``fit`` plans ``base`` with (the given one, else the default's)."""
    return base.engine or base.with_defaults().engine or "sglang"


def _fraction_search(base: Deployment, flag: str) -> tuple[list[tuple[float, dict]], int | None]:
    """(value, row) on the 0.01 grid of ``flag`` (a Deployment field) and the first that meets the target, None when
    none does (the rows in grid order: the values pair with them by position)."""
    coarse = [round(i / 100, 2) for i in range(1, 101)]
    pairs = list(zip(coarse, _rows(base, {flag: coarse}), strict=True))
    return pairs, next((i for i, (_, r) in enumerate(pairs) if r["meets_target"]), None)


def _solve_util(base: Deployment) -> SolveResult:
    """vLLM's ``mem-fraction``: the smallest ``--gpu-memory-utilization`` (to 0.001) that meets the target, the same
    search as SGLang's fraction (a 0.01 grid, then 0.001 steps inside the bracket; more of the device never lowers
    the block count: ``requested = ceil(total x util)``, vllm-project/vllm v0.33.0 ``vllm/v1/worker/utils.py``
    ``request_memory``).  SGLang's ``--mem-fraction-static`` is not a vLLM flag (fit ignores it)."""
    from kvplan.engines.vllm.releases import release_for

    _, _, target = _target(replace(base, gpu_memory_utilization=base.gpu_memory_utilization or 0.9))
    pairs, first = _fraction_search(base, "gpu_memory_utilization")
    default = release_for(base.engine_version).default_utilization
    notes = [f"vLLM's default for this release: --gpu-memory-utilization {default:g}"]

    def cand(u: float, r: dict) -> Candidate:
        return Candidate(f"util {u:g}", u, bool(r["meets_target"]), r["reason"], {**r, "gpu_memory_utilization": u})

    if first is None:
        return SolveResult(
            "mem-fraction",
            target,
            None,
            "no gpu_memory_utilization <= 1.0 meets the target",
            [cand(u, r) for u, r in pairs if u in (0.5, 0.8, 0.9, 0.95, 1.0)],
            notes,
        )
    lo = pairs[first - 1][0] if first > 0 else 0.0
    fine = [round(lo + i / 1000, 3) for i in range(1, 11)]
    fine_pairs = list(zip(fine, _rows(base, {"gpu_memory_utilization": fine}), strict=True))
    k = next(i for i, (_, r) in enumerate(fine_pairs) if r["meets_target"])
    ans, ans_row = fine_pairs[k]
    shown = (
        [(u, r) for u, r in pairs[:first] if round(u * 100) % 10 == 0]
        + fine_pairs[max(k - 1, 0) : k]
        + [(ans, ans_row)]
    )
    return SolveResult(
        "mem-fraction",
        target,
        ans,
        f"--gpu-memory-utilization {ans:g} (pool {ans_row['kv_pool_tokens']:,} tokens, room for {_achieved(ans_row)})",
        [cand(u, r) for u, r in shown],
        notes,
    )


def _solve_mfs(base: Deployment, *, max_gpus: int) -> SolveResult:
    from kvplan.engines.registry import engine

    if engine(_engine(base)).memory_fraction_field == "gpu_memory_utilization":
        return _solve_util(base)
    _, _, target = _target(replace(base, mem_fraction_static=base.mem_fraction_static or 0.9))
    coarse = [round(i / 100, 2) for i in range(1, 101)]
    rows = _rows(base, {"mem_fraction_static": coarse})
    first = next((i for i, r in enumerate(rows) if r["meets_target"]), None)
    notes = []
    default = _rows(replace(base, mem_fraction_static=None), {})[0]
    if not default["error"] and default["mem_fraction_static"] == default["mem_fraction_static"]:
        notes.append(
            f"SGLang's default for this deployment: {default['mem_fraction_static']:g} "
            f"({'meets the target' if default['meets_target'] else 'misses the target'})"
        )
    if first is None:
        cands = [
            Candidate(f"mfs {r['mem_fraction_static']:g}", r["mem_fraction_static"], False, r["reason"], r)
            for r in rows
            if r["mem_fraction_static"] in (0.5, 0.8, 0.9, 0.95, 1.0)
        ]
        return SolveResult("mem-fraction", target, None, "no mem_fraction_static <= 1.0 meets the target", cands, notes)
    lo = rows[first - 1]["mem_fraction_static"] if first > 0 else 0.0
    fine = [round(lo + i / 1000, 3) for i in range(1, 11)]
    fine_rows = _rows(base, {"mem_fraction_static": fine})
    ans = next(r for r in fine_rows if r["meets_target"])
    below = [r for r in fine_rows if r["mem_fraction_static"] < ans["mem_fraction_static"]]
    shown = [r for r in rows[:first] if round(r["mem_fraction_static"] * 100) % 10 == 0] + below[-1:] + [ans]
    cands = [
        Candidate(f"mfs {r['mem_fraction_static']:g}", r["mem_fraction_static"], r["meets_target"], r["reason"], r)
        for r in shown
    ]
    return SolveResult(
        "mem-fraction",
        target,
        ans["mem_fraction_static"],
        f"--mem-fraction-static {ans['mem_fraction_static']:g} (pool {ans['kv_pool_tokens']:,} tokens, "
        f"room for {_achieved(ans)})",
        cands,
        notes,
    )


def _solve_dtype(base: Deployment, *, max_gpus: int) -> SolveResult:
    _, _, target = _target(replace(base, kv_cache_dtype=None))
    rows = _rows(base, {"kv_cache_dtype": list(_DTYPE_WORDS)})
    # the sweep keeps the axis order; a dtype the engine refuses on the GPU does not fit (fits is False)
    ans = next((r for r in rows if r["meets_target"]), None)
    cands = []
    for d, r in zip(_DTYPE_WORDS, rows, strict=True):
        cands.append(Candidate(d, d, r["meets_target"], r["reason"], r))
        if ans is not None and r is ans:
            break
    return SolveResult(
        "dtype",
        target,
        ans and _DTYPE_WORDS[rows.index(ans)],
        (
            f"--kv-cache-dtype {_DTYPE_WORDS[rows.index(ans)]} ({ans['kv_bytes_per_token']:,.0f} B/token, "
            f"room for {_achieved(ans)})"
        )
        if ans
        else "no KV dtype meets the target",
        cands,
        [
            "order: least precision given up first (bf16, fp8, mxfp8, fp4); a dtype the engine "
            "refuses on this GPU never answers"
        ],
    )


def _solve_context(base: Deployment, *, max_gpus: int) -> SolveResult:
    from kvplan.deployment import DEFAULT_MODEL
    from kvplan.inputs.resolve import resolve_model
    from kvplan.planning.verdict import requests

    eff = base.with_defaults()
    upper = base.context_length or resolve_model(eff.model or DEFAULT_MODEL).context_length
    req = base.target_requests or 1
    probe = _ContextProbes(base, upper)
    probes = probe.rows

    ans = None
    if probe(upper):
        ans = upper
    else:
        probe.ahead(2, upper, first=(2,))
        if probe(2):
            lo, hi = 2, upper
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if not probe.known(mid):
                    probe.ahead(lo, hi)
                if probe(mid):
                    lo = mid
                else:
                    hi = mid
            ans = lo
    keep = {upper, 2} if ans is None else {ans, ans + 1, upper}
    cands = [
        Candidate(f"context {c:,}", c, r["meets_target"], r["reason"], r)
        for c, r in sorted(probes.items())
        if c in keep
    ]
    notes = [f"bisection over 2 .. {upper:,} tokens (--context-length, default the model's): {len(probes)} probes"]
    longest = None
    if ans is not None:
        r = probes[ans]
        longest = r["max_context_length"]
        label = (
            f"--context-length {ans:,} (longest request {longest:,} tokens, as fit prints it; {requests(req)}; "
            f"pool {r['kv_pool_tokens']:,} tokens, room for {_achieved(r)})"
        )
    else:
        label = f"no context length meets {requests(req)}"
    return SolveResult(
        "context",
        f"{requests(req)} at once, up to {upper:,} tokens each",
        ans,
        label,
        cands,
        notes,
        longest_request=longest,
    )


def _solve_concurrency(base: Deployment, *, max_gpus: int) -> SolveResult:
    r0 = _rows(replace(base, target_requests=1), {})[0]
    if r0["error"]:
        raise InputError(r0["error"], field="solve")
    ctx = r0["context_length"]
    what = (
        f"{r0['input_len']:,}+{r0['output_len'] or 0:,} tokens"
        if r0.get("input_len") is not None
        else f"{ctx:,} tokens"
    )
    if not r0["meets_target"]:
        return SolveResult(
            "concurrency",
            f"requests of {what}",
            None,
            f"not even one request of {what} fits",
            [Candidate("1 request", 1, False, r0["reason"], r0)],
        )
    n = _achieved(r0)
    rows = _rows(base, {"target_requests": [n, n + 1]})
    cands = [
        Candidate(f"{r['target_requests']} request(s)", r["target_requests"], r["meets_target"], r["reason"], r)
        for r in rows
    ]
    notes = []
    if r0.get("input_len") is None:
        pool_only = r0["kv_pool_tokens"] // ctx * (r0.get("dp") or 1)
        if pool_only > n:
            notes.append(
                f"the pool alone holds {pool_only} such requests; the request cap "
                f"(max_running_requests {r0['max_running_requests']} per rank) limits it to {n}"
            )
    return SolveResult(
        "concurrency",
        f"requests of {what} at once",
        n,
        f"{n} request(s) of {what} (pool {r0['kv_pool_tokens']:,} tokens)",
        cands,
        notes,
    )


def solve_concurrency_targets(base: Deployment, targets: Any, *, calibration: Any = None) -> SolveResult:
    """``solve concurrency`` with latency targets (``targets``: a :class:`kvplan.planning.solve_config.Targets`):
    the largest C <= the memory's answer whose speed (:func:`kvplan.planning.speed.speed` at C, the workload of
    ``base``, default 8,192 + 1,024) meets every latency target; a bisection, since TTFT and TPOT grow with C.
    ``bound`` names what set it: ``memory`` (C + 1 does not fit) or the key of the first target C + 1 misses."""
    from kvplan.planning.solve_config import DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN, misses
    from kvplan.planning.speed import SpeedInputs, speed

    notes: list[str] = []
    if base.input_len is None:
        base = replace(base, input_len=DEFAULT_INPUT_LEN, output_len=base.output_len or DEFAULT_OUTPUT_LEN)
        notes.append(f"workload: --input-len {DEFAULT_INPUT_LEN:,} --output-len {base.output_len:,} (default)")
    elif base.output_len is None:
        base = replace(base, output_len=DEFAULT_OUTPUT_LEN)
        notes.append(f"workload: --output-len {DEFAULT_OUTPUT_LEN:,} (default)")
    mem = _solve_concurrency(base, max_gpus=1)
    if not mem.solved:
        mem.bound, mem.memory_answer = "memory", None
        return mem
    n = int(mem.answer or 0)
    row = mem.candidates[0].row
    probes: dict[int, tuple[list, dict]] = {}

    def probe(c: int) -> bool:
        if c not in probes:
            r = speed(replace(base, target_requests=None), SpeedInputs(concurrency=c, calibration=calibration))
            sp = {k: float(getattr(r, k)) for k in _SPEED_KEEP if k != "concurrency"}
            probes[c] = (misses(targets, sp), {**row, **sp, "concurrency": c, "target_requests": c})
        return not probes[c][0]

    if probe(n):
        ans, bound = n, "memory"
        why = f"memory, {n + 1} do not fit: {mem.candidates[-1].reason}"
    elif not probe(1):
        ans, bound = None, probes[1][0][0].target
        why = "; ".join(m.text for m in probes[1][0])
    else:
        lo, hi = 1, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if probe(mid):
                lo = mid
            else:
                hi = mid
        ans, bound = lo, probes[hi][0][0].target
        why = f"{bound} at {hi} requests: " + "; ".join(m.text for m in probes[hi][0])

    def reason(c: int) -> str:
        ms, r = probes[c]
        if ms:
            return "; ".join(m.text for m in ms)
        return f"meets {targets.text()}: ttft {r['ttft_s']:.3g} s, tpot {r['tpot_s']:.3g} s"

    cands = [
        Candidate(f"{c} request(s)", c, not probes[c][0], reason(c), probes[c][1])
        for c in sorted(probes)
        if ans is None or c in (ans, ans + 1, n)
    ]
    what = mem.target.removeprefix("requests of ").removesuffix(" at once")
    notes.append(
        f"memory holds {n} request(s) of {what}; speed() at {len(probes)} concurrencies (bisection over 1 .. {n})"
    )
    res = SolveResult(
        "concurrency",
        f"requests of {what} at once, {targets.text()}",
        ans,
        f"{ans} request(s) of {what} (bound: {why})" if ans is not None else f"not even 1 request meets it: {why}",
        cands,
        notes,
    )
    res.bound, res.memory_answer = bound, n
    return res
