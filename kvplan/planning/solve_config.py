"""``kvplan solve config``: the best deployment over a grid, by capacity, latency targets and an objective.

The candidates are the points of a sweep (:func:`kvplan.planning.sweep.sweep`: the flag lists and ranges given,
e.g. ``-g h100-sxm,l40s --tp 1,2,4,8 --kv-cache-dtype auto,fp8_e4m3``), with ``--concurrency`` as the target
requests (``target_requests``: C requests of the workload ``--input-len + --output-len`` at once).  Each candidate
is judged in this order, and the first failure is its reason:

1. capacity: the row must meet its target by kvplan's capacity rules (``meets_target``: the engine starts, serves
   one full-context request and holds C requests of the workload at once; the reason is fit's ``target_reason``);
2. the latency and throughput targets, from :func:`kvplan.planning.speed.speed` at concurrency C (the same call as
   ``kvplan speed``; one call per distinct group / workload / C, :class:`~kvplan.planning.sweep.speed.SpeedColumns`):

   * ``--ttft S``: ``ttft_s <= S``;
   * ``--tpot S``: ``tpot_s <= S``; ``--min-decode-rate R``: ``decode_tokens_per_s_per_request >= R``
     (1 / tpot_s: the two are the same target, give one);
   * ``--min-throughput R``: ``output_tokens_per_s >= R`` (aggregate output tokens per second of the deployment);

   every missed target is named with the value, the limit and by how much (``ttft 3.15 s > 2 s (+57%)``).

The candidates that pass are ranked by ``--objective``:

* ``throughput-per-gpu``: the most ``output_tokens_per_s_per_gpu`` = output_tokens_per_s / num_gpus;
* ``cost``: the least ``usd_per_million_output_tokens`` = USD/h per GPU x GPUs / (output tok/s x 3600) x 1e6
  (:func:`kvplan.planning.sweep.speed.usd_per_million`; the price from ``--costs FILE`` or ``--gpu-hour-cost``);
* ``latency``: the least ``request_latency_s`` = ttft_s + output_len x tpot_s;

ties go to fewer GPUs, then to more output tokens/s per GPU, then to grid order.  The first is the answer, the
rest are the runners-up; every other candidate is rejected with its reason.

Worked example (cost): 2 x h100-sxm at 2.50 USD/h serving 324.8 output tok/s costs
5 USD/h / (324.8 x 3,600 tok/h) x 1e6 = 4.276 USD per million output tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.deployment import Deployment
from kvplan.errors import InputError

OBJECTIVES = ("throughput-per-gpu", "cost", "latency")
#: a solve config grid is at most this many points (every candidate is listed with its reason)
MAX_CONFIG_POINTS = 20_000
DEFAULT_INPUT_LEN = 8192
DEFAULT_OUTPUT_LEN = 1024

#: deployment keys each candidate carries (the sweep row's names)
ROW_KEYS = (
    "model",
    "gpu",
    "engine",
    "num_gpus",
    "tp",
    "pp",
    "dp",
    "ep",
    "kv_cache_dtype",
    "page_size",
    "mem_fraction_static",
    "context_length",
    "input_len",
    "output_len",
    "target_requests",
    "kv_bytes_per_token",
    "kv_pool_tokens",
    "max_running_requests",
    "max_concurrency",
    "workload_concurrency",
    "starts",
    "fits",
    "meets_target",
    "verdict",
    "error",
)


@dataclass(frozen=True)
class Targets:
    """The per-request latency targets and the aggregate throughput target (None: not asked)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    min_decode_rate: float | None = None
    min_throughput: float | None = None

    def check(self) -> None:
        """InputError (one line naming the flag) for a value that is not a positive finite number, or both
        ``--tpot`` and ``--min-decode-rate``."""
        for name, flag in (
            ("ttft_s", "--ttft"),
            ("tpot_s", "--tpot"),
            ("min_decode_rate", "--min-decode-rate"),
            ("min_throughput", "--min-throughput"),
        ):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v < 1e9:
                raise InputError(f"must be a positive number, got {v!r}", field=flag)
        if self.tpot_s is not None and self.min_decode_rate is not None:
            raise InputError(
                "--tpot and --min-decode-rate are the same target (rate = 1 / tpot)",
                field="--min-decode-rate",
                hint="give one of them",
            )

    @property
    def latency(self) -> bool:
        """A per-request latency target is given (what bounds ``solve concurrency`` besides memory)."""
        return any(v is not None for v in (self.ttft_s, self.tpot_s, self.min_decode_rate))

    def to_dict(self) -> dict[str, float | None]:
        return {
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "min_decode_rate": self.min_decode_rate,
            "min_throughput": self.min_throughput,
        }

    def text(self) -> str:
        parts = []
        if self.ttft_s is not None:
            parts.append(f"TTFT <= {self.ttft_s:g} s")
        if self.tpot_s is not None:
            parts.append(f"TPOT <= {self.tpot_s:g} s")
        if self.min_decode_rate is not None:
            parts.append(f">= {self.min_decode_rate:g} tok/s per request")
        if self.min_throughput is not None:
            parts.append(f">= {self.min_throughput:g} output tok/s")
        return ", ".join(parts) or "no speed target"


@dataclass(frozen=True)
class Miss:
    """One missed target: its key, the value, the limit and the words."""

    target: str
    value: float
    limit: float
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "value": self.value, "limit": self.limit, "text": self.text}


def misses(targets: Targets, sp: Mapping[str, float]) -> list[Miss]:
    """Every target ``sp`` (a candidate's speed keys) misses, with by how much.

    Example: ttft_s 3.15 against --ttft 2 -> ``ttft 3.15 s > 2 s (+57%)``."""
    out: list[Miss] = []

    def over(key: str, limit: float | None, name: str, unit: str) -> None:
        v = sp[key]
        if limit is not None and not v <= limit:
            out.append(Miss(key, v, limit, f"{name} {v:.3g}{unit} > {limit:g}{unit} ({(v / limit - 1):+.1%})"))

    def under(key: str, limit: float | None, name: str, unit: str) -> None:
        v = sp[key]
        if limit is not None and not v >= limit:
            out.append(Miss(key, v, limit, f"{name} {v:,.4g}{unit} < {limit:g}{unit} ({(v / limit - 1):+.1%})"))

    over("ttft_s", targets.ttft_s, "ttft", " s")
    over("tpot_s", targets.tpot_s, "tpot", " s")
    under("decode_tokens_per_s_per_request", targets.min_decode_rate, "decode rate", " tok/s")
    under("output_tokens_per_s", targets.min_throughput, "throughput", " tok/s")
    return out


@dataclass(frozen=True)
class ConfigQuery:
    """What ``solve config`` is asked: the base deployment (the workload in it), the sweep axes, the concurrency
    values, the targets, the objective and the prices / calibration."""

    base: Deployment
    axes: Mapping[str, list]
    concurrency: tuple[int, ...] = (1,)
    targets: Targets = field(default_factory=Targets)
    objective: str = "throughput-per-gpu"
    costs: Mapping[str, float] | None = None
    gpu_hour_cost: float | None = None
    calibration: Any = None


@dataclass
class ConfigCandidate:
    """One point of the grid: its label, deployment keys, speed / cost keys, status and reason."""

    label: str
    row: dict
    speed: dict[str, float]
    status: str = "rejected"  # chosen | runner-up | rejected
    rank: int | None = None
    reason: str = ""
    rejected_by: str | None = None  # capacity | invalid | ttft_s | tpot_s | ... (the first missed target)
    missed: list[Miss] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "status": self.status,
            "rank": self.rank,
            "reason": self.reason,
            "rejected_by": self.rejected_by,
            "misses": [m.to_dict() for m in self.missed],
        }
        out.update({k: self.row.get(k) for k in ROW_KEYS if k in self.row})
        out["concurrency"] = self.row.get("target_requests")
        out.update({k: (None if v != v else v) for k, v in self.speed.items()})
        return out


@dataclass
class ConfigResult:
    """The answer of ``solve config``: the chosen candidate (None when none passes), the runners-up and the
    rejected ones (in grid order), the objective and the targets."""

    objective: str
    targets: Targets
    workload: dict[str, Any]
    candidates: list[ConfigCandidate]
    notes: list[str] = field(default_factory=list)
    question: str = "config"

    @property
    def chosen(self) -> ConfigCandidate | None:
        return next((c for c in self.candidates if c.status == "chosen"), None)

    @property
    def runners_up(self) -> list[ConfigCandidate]:
        return [c for c in self.candidates if c.status == "runner-up"]

    @property
    def rejected(self) -> list[ConfigCandidate]:
        return [c for c in self.candidates if c.status == "rejected"]

    @property
    def solved(self) -> bool:
        return self.chosen is not None

    @property
    def target(self) -> str:
        from kvplan.planning.verdict import requests

        w = {k: ",".join(f"{x:,}" for x in v) if isinstance(v, list) else f"{v:,}" for k, v in self.workload.items()}
        conc = self.workload["concurrency"]
        n = requests(conc[0]) if len(conc) == 1 else f"{w['concurrency']} requests"
        return (
            f"{n} of {w['input_len']}+{w['output_len']} tokens at once; "
            f"{self.targets.text()}; objective {self.objective}"
        )

    @property
    def answer_label(self) -> str:
        c = self.chosen
        if c is None:
            return f"none of the {len(self.candidates):,} candidates meets every target"
        s = c.speed
        return (
            f"{c.label}: ttft {s['ttft_s']:.3g} s, tpot {s['tpot_s']:.3g} s, "
            f"{s['output_tokens_per_s_per_gpu']:,.0f} output tok/s per GPU"
            + (
                f", {s['usd_per_million_output_tokens']:.3g} USD per million output tokens"
                if s["usd_per_million_output_tokens"] == s["usd_per_million_output_tokens"]
                else ""
            )
        )

    def to_dict(self) -> dict[str, Any]:
        ranked = sorted((c for c in self.candidates if c.rank is not None), key=lambda c: c.rank or 0)
        return {
            "question": "config",
            "target": self.target,
            "objective": self.objective,
            "targets": self.targets.to_dict(),
            "workload": dict(self.workload),
            "answer": self.chosen.label if self.chosen else None,
            "answer_label": self.answer_label,
            "chosen": self.chosen.to_dict() if self.chosen else None,
            "runners_up": [c.label for c in self.runners_up],
            "rejected": [c.label for c in self.rejected],
            "notes": self.notes,
            "candidates": [c.to_dict() for c in (*ranked, *self.rejected)],
        }


_LABEL = {"tp": "tp", "pp": "pp", "dp": "dp", "ep": "ep", "target_requests": "C "}
#: short names of the other fields in a label (else the flag's words)
_SHORT = {
    "mem_fraction_static": "mfs",
    "gpu_memory_utilization": "util",
    "chunked_prefill_size": "chunk",
    "context_length": "ctx",
    "max_running_requests": "mrr",
    "page_size": "page",
    "speculative_algorithm": "spec",
}


def _label(row: Mapping[str, Any], dep: Deployment, axes: Mapping[str, list]) -> str:
    """``h100-sxm x2 tp2 kv fp8_e4m3 C 8``: the GPU as named, its count, then every field given more than one
    value."""
    parts = [f"{dep.gpu or _default_gpu(dep) or row.get('gpu')} x{row['num_gpus']}"]
    for k, values in axes.items():
        if k in ("gpu", "num_gpus") or len(values) < 2:
            continue
        v = row.get("requested_max_running_requests" if k == "max_running_requests" else k, getattr(dep, k, None))
        if k == "kv_cache_dtype":
            parts.append(f"kv {row.get('kv_cache_dtype') or getattr(dep, k)}")
        elif k == "model":
            parts.append(str(v).rpartition("/")[2])
        elif k == "engine":
            parts.append(str(row.get("engine") or v))
        elif k in _LABEL:
            parts.append(f"{_LABEL[k]}{v}")
        elif isinstance(v, float):
            parts.append(f"{_SHORT.get(k, k)} {v:g}" if v == v else f"{_SHORT.get(k, k)} n/a")  # NaN: not read
        else:
            parts.append(f"{_SHORT.get(k, k.replace('_', '-'))} {getattr(dep, k, None) or v}")
    return " ".join(parts)


def _default_gpu(dep: Deployment) -> str | None:
    """The preset id ``fit`` plans when no GPU is named (the default deployment's), None when none applies."""
    return dep.with_defaults().gpu


def _same_as(row: Mapping[str, Any], gid: int, seen: dict[tuple, str], label: str) -> str | None:
    """The label of an earlier candidate that is the same deployment (the same group and numeric inputs once the
    flags the engine does not read are dropped: vLLM's rows hold NaN for --mem-fraction-static), else None."""
    key = (gid, *(None if isinstance(v, float) and v != v else v for v in (row.get(k) for k in _KEY_COLS)))
    if key in seen:
        return seen[key]
    seen[key] = label
    return None


#: the numeric inputs of a sweep row (with its group, what makes it a distinct deployment)
_KEY_COLS = (
    "mem_fraction_static",
    "context_length",
    "requested_max_running_requests",
    "max_total_tokens",
    "target_requests",
    "input_len",
    "output_len",
    "kv_budget_bytes",
)


def _objective_key(objective: str, sp: Mapping[str, float], num_gpus: int, i: int) -> tuple:
    per_gpu = sp["output_tokens_per_s_per_gpu"]
    if objective == "cost":
        first = sp["usd_per_million_output_tokens"]
    elif objective == "latency":
        first = sp["request_latency_s"]
    else:
        first = -per_gpu
    return (first, num_gpus, -per_gpu, i)


def check_query(q: ConfigQuery) -> None:
    """The query's own input errors (one line, naming the flag)."""
    if q.objective not in OBJECTIVES:
        raise InputError(
            f"unknown objective '{q.objective}'", field="--objective", hint="one of " + ", ".join(OBJECTIVES)
        )
    q.targets.check()
    if "target_requests" in q.axes:
        raise InputError(
            "solve config counts --concurrency requests of the workload at once",
            field="--requests",
            hint="give --concurrency instead",
        )
    if q.objective == "cost" and not q.costs and q.gpu_hour_cost is None:
        raise InputError(
            "the cost objective needs prices", field="--objective", hint="add --costs FILE or --gpu-hour-cost USD"
        )


def solve_config(q: ConfigQuery) -> ConfigResult:
    """Answer ``solve config`` (module docstring): every candidate of the grid judged and the passing ones ranked."""
    from kvplan.planning.sweep import sweep
    from kvplan.planning.sweep.speed import SpeedColumns, check_calibration

    check_query(q)
    notes: list[str] = []
    base = q.base
    if base.input_len is None and "input_len" not in q.axes:
        base = replace(base, input_len=DEFAULT_INPUT_LEN, output_len=base.output_len or DEFAULT_OUTPUT_LEN)
        notes.append(f"workload: --input-len {DEFAULT_INPUT_LEN:,} (default)")
    if base.output_len is None and "output_len" not in q.axes:
        base = replace(base, output_len=DEFAULT_OUTPUT_LEN)
        notes.append(f"workload: --output-len {DEFAULT_OUTPUT_LEN:,} (default)")
    axes = {**q.axes, "target_requests": list(q.concurrency)}
    table = sweep(base, axes, max_points=MAX_CONFIG_POINTS)
    check_calibration(table, q.calibration)
    cols = SpeedColumns(
        table,
        costs=q.costs,
        gpu_hour_cost=q.gpu_hour_cost,
        calibration=q.calibration,
        per_row="target_requests",
        only="meets_target",
    )
    speeds: list[dict[str, float]] = []
    gids: list[int] = []
    utils: list[float] = []  # vLLM's --gpu-memory-utilization per row (NaN: SGLang's rows)
    for rows, c in table.chunks():
        gids.extend(int(x) for x in c["gid"])
        utils.extend(float(x) for x in c.get("gpu_memory_utilization", [math.nan] * len(rows)))
        e = cols.chunk(rows, c)
        speeds.extend({k: float(v[j]) for k, v in e.items()} for j in range(len(rows)))
    cands: list[ConfigCandidate] = []
    passing: list[tuple[tuple, ConfigCandidate]] = []
    seen: dict[tuple, str] = {}
    for i, row in enumerate(table.rows()):
        row.setdefault("starts", row["fits"])  # fit's `starts` verdict where the sweep rows carry it
        dep = table.groups[gids[i]].dep  # the group's fields as given (the numeric ones are the row's)
        if utils[i] == utils[i]:
            row["gpu_memory_utilization"] = utils[i]
        sp = _speed_keys(speeds[i], row)
        cand = ConfigCandidate(label=_label(row, dep, axes), row=row, speed=sp)
        cands.append(cand)
        if row["error"]:
            cand.rejected_by, cand.reason = "invalid", f"invalid: {row['error']}"
            continue
        same = _same_as(row, gids[i], seen, cand.label)
        if same is not None:
            cand.rejected_by = "duplicate"
            cand.reason = f"the same deployment as {same} ({row['engine']} does not read the flag that differs)"
            continue
        if not row["meets_target"]:
            cand.rejected_by, cand.reason = "capacity", f"capacity: {row['reason']}"
            continue
        miss = misses(q.targets, sp)
        if miss:
            cand.missed = miss
            cand.rejected_by = miss[0].target
            cand.reason = "; ".join(m.text for m in miss)
            continue
        if q.objective == "cost" and sp["usd_per_million_output_tokens"] != sp["usd_per_million_output_tokens"]:
            from kvplan.inputs.resolve import resolve_gpu

            gpu_id = resolve_gpu(dep.gpu).id if dep.gpu else _default_gpu(dep) or row["gpu"]
            raise InputError(
                f"no price for GPU '{gpu_id}' (the preset id the costs table is keyed by)",
                field="--costs",
                hint="add it to the [costs] table or give --gpu-hour-cost",
            )
        cand.reason = "meets every target"
        passing.append((_objective_key(q.objective, sp, int(row["num_gpus"]), i), cand))
    passing.sort(key=lambda kc: kc[0])
    for rank, (_, cand) in enumerate(passing, 1):
        cand.rank = rank
        cand.status = "chosen" if rank == 1 else "runner-up"
    n_speed = len(cols._memo)
    notes.append(
        f"{len(cands):,} candidates, {len(passing):,} meet every target; {n_speed:,} speed() evaluations "
        "(one per distinct group, workload and concurrency)"
    )
    short = [c for c in cands if c.rejected_by == "capacity" and c.row.get("starts") and not c.row.get("fits")]
    if short:
        ctx = max(int(c.row.get("context_length") or 0) for c in short)
        notes.append(
            f"{len(short)} candidate(s) start but hold no full {ctx:,}-token request (kvplan's fits); a shorter "
            "--context-length (the workload's input + output) plans them for this workload"
        )
    if q.calibration is not None:
        notes.append(f"speed calibrated for GPU class {getattr(q.calibration, 'gpu_class', '?')}")
    conc = list(q.concurrency)
    workload = {
        "input_len": q.axes.get("input_len") or int(base.input_len or 0),
        "output_len": q.axes.get("output_len") or int(base.output_len or 0),
        "concurrency": conc,
    }
    return ConfigResult(q.objective, q.targets, workload, cands, notes)


def _speed_keys(e: Mapping[str, float], row: Mapping[str, Any]) -> dict[str, float]:
    """The candidate's speed / cost keys (kvplan speed's names) and the two the objectives add."""
    from kvplan.planning.sweep.speed import COST_COLUMNS, SPEED_COLUMNS

    sp = {k: e[k] for k in (*SPEED_COLUMNS, *COST_COLUMNS)}
    n = max(int(row.get("num_gpus") or 1), 1)
    sp["output_tokens_per_s_per_gpu"] = sp["output_tokens_per_s"] / n
    sp["request_latency_s"] = sp["ttft_s"] + int(row.get("output_len") or 0) * sp["tpot_s"]
    return sp
