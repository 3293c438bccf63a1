"""``kvplan check PLAN.toml``: a sizing file for CI -- deployments and the targets they must meet.

File format (strict: unknown keys are errors naming the file, the deployment and the key)::

    version = 1                        # optional

    [defaults]                         # optional; any deployment key except name and target
    gpu = "h100-sxm"
    engine = "sglang"

    [[deployment]]
    name = "chat-8b"                   # unique
    model = "Qwen/Qwen3-8B"
    tp = 1
    mem_fraction_static = 0.85
    kv_cache_dtype = "bf16"
    context_length = "32k"             # the server's --context-length (default: the target's context)
    max_running_requests = 64
    [deployment.target]
    context = "32k"                    # tokens per request (int, or "32k" / "1m")
    requests = 32                      # requests of that context running at once
    headroom = 10                      # percent of spare KV pool on top (default 0)

A deployment **passes** when ``kvplan fit`` on it gives

* at least ``requests`` requests of ``context`` tokens at once
  (``min(pool_tokens // context, max_running_requests) x dp``; equal to fit's ``max_concurrency`` when the
  target context is the server's), and
* a pool (all DP ranks) of at least ``ceil(requests x context x (1 + headroom / 100))`` tokens, and
* ``context`` <= the server's context length.

Reports: ``--report FILE.json`` (one object) or ``--report FILE.xml`` (JUnit XML: one test case per deployment).
"""

from __future__ import annotations

import difflib
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kvplan.errors import InputError

_SIZE = Optional[int | str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Target(_Strict):
    context: int | str
    requests: int = Field(ge=1, le=1 << 24)
    headroom: float | int = Field(default=0, ge=0, le=1000)


class _DeploymentKeys(_Strict):
    model: Optional[str] = None
    gpu: Optional[str] = None
    engine: Literal["sglang", "vllm"] = "sglang"
    engine_version: Optional[str] = None
    num_gpus: Optional[int] = None
    gpu_memory: _SIZE = None
    tp: Optional[int] = None
    pp: Optional[int] = None
    dp: Optional[int] = None
    ep: Optional[int] = None
    enable_dp_attention: bool = False
    mem_fraction_static: Optional[float] = None
    gpu_memory_utilization: Optional[float] = None
    kv_cache_dtype: Optional[str] = None
    context_length: Optional[int | str] = None
    max_running_requests: Optional[int] = None
    page_size: Optional[int] = None
    chunked_prefill_size: Optional[int] = None
    max_total_tokens: Optional[int] = None
    free_memory: _SIZE = None
    weight_memory: _SIZE = None
    attention_backend: Optional[str] = None
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    disable_cuda_graph: bool = False
    enforce_eager: bool = False
    speculative_algorithm: Optional[str] = None
    speculative_num_draft_tokens: Optional[int] = None


class PlanDeployment(_DeploymentKeys):
    name: str = Field(min_length=1)
    target: Target


class PlanFile(_Strict):
    version: Literal[1] = 1
    defaults: _DeploymentKeys = _DeploymentKeys()
    deployment: list[dict[str, Any]] = Field(min_length=1)


_ALLOWED = sorted(set(PlanDeployment.model_fields))


def _err(path: Path, where: str, e: dict) -> InputError:
    loc = ".".join(str(p) for p in e["loc"])
    kind = e["type"]
    if kind == "extra_forbidden":
        key = str(e["loc"][-1])
        pool = list(Target.model_fields) if len(e["loc"]) > 1 and e["loc"][0] == "target" else _ALLOWED
        close = difflib.get_close_matches(key, pool, n=1)
        hint = f"did you mean '{close[0]}'?" if close else "allowed keys: " + ", ".join(pool)
        return InputError(f"{where}unknown key '{loc}'", field=str(path), hint=hint)
    if kind == "missing":
        return InputError(f"{where}missing key '{loc}'", field=str(path))
    return InputError(f"{where}key '{loc}': {e['msg']} (got {e.get('input')!r})", field=str(path))


@dataclass
class CheckSpec:
    name: str
    deployment: Any           # kvplan.deployment.Deployment
    context: int
    requests: int
    headroom: float


def load_plan(path: str | Path) -> list[CheckSpec]:
    """Read and validate a plan file; every error names the file, the deployment and the key (exit 2)."""
    from kvplan.deployment import Deployment
    from kvplan.units import parse_count, parse_size

    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(f"no such file: {p}", field="PLAN") from None
    except OSError as exc:
        raise InputError(f"cannot read {p} ({exc.strerror})", field="PLAN") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", field=str(p)) from None
    try:
        plan = PlanFile.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise _err(p, "", e) from None
    raw_defaults = data.get("defaults") or {}
    specs: list[CheckSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(plan.deployment, 1):
        name = raw.get("name") if isinstance(raw.get("name"), str) else None
        where = f"deployment '{name}' (#{i}): " if name else f"deployment #{i}: "
        merged = {**raw_defaults, **raw}
        try:
            d = PlanDeployment.model_validate(merged)
        except ValidationError as exc:
            raise _err(p, where, exc.errors()[0]) from None
        if d.name in seen:
            raise InputError(f"{where}duplicate name '{d.name}'", field=str(p), hint="give each deployment its own name")
        seen.add(d.name)

        def count(v, key):
            if v is None:
                return None
            if isinstance(v, int) and not isinstance(v, bool):
                return v
            return parse_count(str(v), field=f"{p}: {where}{key}")

        def size(v, key):
            if v is None:
                return None
            if isinstance(v, int) and not isinstance(v, bool):
                return v
            return parse_size(str(v), field=f"{p}: {where}{key}")

        ctx = count(d.target.context, "target.context")
        if ctx is None or ctx < 2:
            raise InputError(f"{where}key 'target.context' must be at least 2 tokens", field=str(p))
        if not math.isfinite(float(d.target.headroom)):
            raise InputError(f"{where}key 'target.headroom' must be a finite percentage", field=str(p))
        fields = d.model_dump(exclude={"name", "target"})
        fields["context_length"] = count(fields["context_length"], "context_length") or ctx
        for k in ("gpu_memory", "free_memory", "weight_memory"):
            fields[k] = size(fields[k], k)
        fields["target_requests"] = d.target.requests
        dep = Deployment(**fields)
        try:
            from kvplan.deployment import validate

            validate(dep)
        except InputError as exc:
            key = (exc.field or "").lstrip("-").replace("-size", "").replace("-", "_")
            raise InputError(f"{where}key '{key}': {exc}", field=str(p), hint=exc.hint) from None
        specs.append(CheckSpec(name=d.name, deployment=dep, context=ctx, requests=d.target.requests,
                               headroom=float(d.target.headroom)))
    return specs


@dataclass
class CheckResult:
    name: str
    model: str
    gpu: str
    engine: str
    num_gpus: int
    context: int
    requests: int
    headroom: float
    required_tokens: int
    pool_tokens: int
    concurrency: int
    headroom_achieved: float
    passed: bool
    reason: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def check(specs: list[CheckSpec], *, path: str = "plan") -> list[CheckResult]:
    """Plan every deployment with ``kvplan.planning.plan.fit`` and compare with its target."""
    from kvplan.planning.plan import fit

    out = []
    for s in specs:
        try:
            r = fit(s.deployment)
        except InputError as exc:
            raise InputError(f"deployment '{s.name}': {exc.one_line()}", field=str(path)) from None
        C, R = s.context, s.requests
        if r.context_length == C:
            conc = int(r.max_concurrency)
        else:
            per_rank = min(r.kv_pool_tokens // C, r.max_running_requests) if r.kv_pool_tokens > 0 else 0
            conc = per_rank * r.dp
        total = r.kv_pool_tokens_total or r.kv_pool_tokens * r.dp
        need = math.ceil(R * C * (1 + s.headroom / 100))
        achieved = (total / (R * C) - 1) * 100
        if r.kv_budget_bytes <= 0 and r.engine == "sglang":
            ok, why = False, "the weights leave no KV budget"
        elif r.context_length < C:
            ok, why = False, f"target context {C:,} is longer than the server's --context-length {r.context_length:,}"
        elif conc < R:
            ok, why = False, (f"{R} request(s) of {C:,} tokens wanted, room for {conc} "
                              f"(pool {total:,} tokens, max_running_requests {r.max_running_requests})")
        elif total < need:
            ok, why = False, (f"headroom {achieved:.1f}% < {s.headroom:g}%: pool {total:,} tokens, "
                              f"needs {need:,}")
        else:
            ok, why = True, f"room for {conc} request(s), headroom {achieved:.1f}% (>= {s.headroom:g}%)"
        out.append(CheckResult(name=s.name, model=r.model, gpu=r.gpu, engine=r.engine, num_gpus=r.num_gpus,
                               context=C, requests=R, headroom=s.headroom, required_tokens=need, pool_tokens=total,
                               concurrency=conc, headroom_achieved=round(achieved, 2), passed=ok, reason=why))
    return out


def render(results: list[CheckResult], *, path: str = "", console=None) -> None:
    """The check table (rich, imported here only)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from kvplan.planning.sweep import fmt_count

    console = console or Console()
    n_fail = sum(not r.passed for r in results)
    t = Table(title=f"kvplan check {path}: {len(results) - n_fail} passed, {n_fail} failed", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    for name, just in (("deployment", "left"), ("GPUs", "right"), ("target", "right"), ("room", "right"),
                       ("pool tokens", "right"), ("headroom", "right"), ("result", "left")):
        t.add_column(name, justify=just, no_wrap=True)
    for r in results:
        t.add_row(r.name, str(r.num_gpus),
                  f"{r.requests} x {fmt_count(r.context)} +{r.headroom:g}%", str(r.concurrency), f"{r.pool_tokens:,}",
                  f"{r.headroom_achieved:.1f}%", "PASS" if r.passed else "FAIL",
                  style=None if r.passed else "bold red")
    console.print(t)
    for r in results:
        if not r.passed:
            console.print(f"FAIL {r.name}: {r.reason}", markup=False, highlight=False)


def to_json(results: list[CheckResult], *, path: str = "") -> str:
    return json.dumps({"plan": path, "passed": all(r.passed for r in results),
                       "failures": sum(not r.passed for r in results),
                       "deployments": [r.to_dict() for r in results]}, indent=2) + "\n"


def to_junit(results: list[CheckResult], *, path: str = "") -> str:
    """JUnit XML (one ``testcase`` per deployment; a ``failure`` element when its target is missed)."""
    from xml.sax.saxutils import escape, quoteattr

    suite = Path(path).stem if path else "plan"
    fails = sum(not r.passed for r in results)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="kvplan check" tests="{len(results)}" failures="{fails}" errors="0">',
             f'  <testsuite name={quoteattr("kvplan check " + (path or suite))} tests="{len(results)}" '
             f'failures="{fails}" errors="0" skipped="0">']
    for r in results:
        details = (f"model {r.model}, gpu {r.gpu} x {r.num_gpus}, engine {r.engine}; target {r.requests} request(s) "
                   f"of {r.context:,} tokens +{r.headroom:g}% headroom; pool {r.pool_tokens:,} tokens, room for "
                   f"{r.concurrency}, headroom {r.headroom_achieved:.1f}%")
        lines.append(f'    <testcase classname={quoteattr("kvplan.check." + suite)} name={quoteattr(r.name)} time="0">')
        if not r.passed:
            lines.append(f'      <failure message={quoteattr(r.reason)} type="DoesNotFit">{escape(details)}</failure>')
        lines.append(f"      <system-out>{escape(details)}</system-out>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines) + "\n"


def write_report(results: list[CheckResult], report: str | Path, *, fmt: str | None = None, path: str = "") -> Path:
    """``fmt``: json | junit; default from the extension (.json, .xml)."""
    rp = Path(report)
    fmt = fmt or {".json": "json", ".xml": "junit"}.get(rp.suffix.lower())
    if fmt not in ("json", "junit"):
        raise InputError(f"cannot tell the report format of '{rp.name}'", field="--report",
                         hint="name it .json or .xml, or give --report-format json|junit")
    text = to_json(results, path=path) if fmt == "json" else to_junit(results, path=path)
    try:
        rp.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {rp} ({exc.strerror})", field="--report") from None
    return rp
