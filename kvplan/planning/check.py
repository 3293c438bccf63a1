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

``require`` (a deployment key, default ``"fits"``): what the engine must do besides meeting the target.
``"fits"``: it starts and serves one request of the server's context (fit's ``fits``).  ``"starts"``: it only has
to start (fit's ``starts``): an SGLang server whose pool is shorter than its ``--context-length`` starts and refuses
the requests longer than the pool, so it passes when the target's requests are no longer than the longest request
it accepts (fit's ``max_context_length``) and fit at once.

A workload target instead: ``input_len`` / ``output_len`` keys in the deployment (``kvplan fit --input-len``
/ ``--output-len``) and no ``target.context``: ``requests`` then counts requests of ``input_len + output_len``
tokens (page-rounded as the engine allocates them; fit's ``workload_concurrency``).

Every deployment must name its GPU (``gpu``, in the deployment or in ``[defaults]``; or ``gpu_memory`` for a custom
device): a plan entry without one is an input error naming ``--gpu`` (exit 2), never planned on a default GPU.

A deployment **passes** when ``kvplan fit`` on it gives

* ``fits`` (``require = "fits"``, the default): the engine starts and serves one request of the server's context
  (the KV dtype runs on the GPU, the context is within the model's maximum unless ``allow_long_context``, the
  weights and one full-context request fit; fit's first reason otherwise), or ``starts`` (``require = "starts"``):
  the engine starts, and the target's requests are no longer than the longest it accepts, and
* at least ``requests`` requests of ``context`` tokens at once
  (``min(pool_tokens // context, max_running_requests) x dp``; equal to fit's ``max_concurrency`` when the
  target context is the server's), or of the workload (fit's ``workload_concurrency``), and
* a pool (all DP ranks) of at least ``ceil(requests x tokens x (1 + headroom / 100))`` tokens (tokens = ``context``,
  or the workload's page-rounded tokens per request), and
* ``context`` <= the server's context length.

The deployment keys come from the flag registry (:func:`kvplan.flags.plan_keys`): every ``kvplan fit`` flag,
spelled as its Deployment field (``--tp`` -> ``tp``, ``--free-memory`` -> ``free_memory``), typed by its kind
(SIZE and count keys take an integer or a string such as ``"80GiB"`` / ``"32k"``); ``--requests`` is the
target's ``requests``.

Reports (written by :mod:`kvplan.views.check`): ``--report FILE.json`` (one object) or ``--report FILE.xml``
(JUnit XML: one test case per deployment).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from kvplan.errors import InputError
from kvplan.flags import BY_NAME, Flag, plan_keys
from kvplan.hfconfig.readers import is_int


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Target(_Strict):
    context: int | str | None = None
    requests: int = Field(ge=1, le=1 << 24)
    headroom: float | int = Field(default=0, ge=0, le=1000)


_KEY_TYPES: dict[str, Any] = {
    "int": int,
    "float": float,
    "size": int | str,
    "count": int | str,
    "bool": bool,
    "str": str,
    "list": str,
}


def _key_field(f: Flag, default: Any) -> tuple[Any, Any]:
    """(type, default) of one plan-file key: the registry kind, ``Literal`` for a closed choice."""
    typ = Literal[f.choices] if f.choices else _KEY_TYPES[f.kind]
    return (Optional[typ] if default is None else typ), default


def _deployment_keys() -> type[BaseModel]:
    """The plan-file keys of one deployment: every registry flag with a plan key (kvplan.flags), typed by its kind,
    defaulting to the Deployment default."""
    from kvplan.deployment import Deployment

    defaults = {f.name: f.default for f in dataclasses.fields(Deployment)}
    keys: dict[str, Any] = {f.field: _key_field(f, defaults[f.field]) for f in plan_keys()}
    return create_model("DeploymentKeys", __base__=_Strict, **keys)


DeploymentKeys = _deployment_keys()
REQUIRE = ("fits", "starts")
_Require = Literal["fits", "starts"]
PlanDeployment = create_model(
    "PlanDeployment",
    __base__=DeploymentKeys,
    name=(str, Field(min_length=1)),
    target=(Target, ...),
    require=(_Require, "fits"),
)


PlanFile = create_model(
    "PlanFile",
    __base__=_Strict,
    version=(Literal[1], 1),
    defaults=(DeploymentKeys, DeploymentKeys()),
    deployment=(list[dict[str, Any]], Field(min_length=1)),
)


_ALLOWED = sorted(set(PlanDeployment.model_fields))
_COUNT_KEYS = tuple(f.field for f in plan_keys() if f.kind == "count")
_SIZE_KEYS = tuple(f.field for f in plan_keys() if f.kind == "size")


def _err(path: Path, where: str, e: Mapping[str, Any]) -> InputError:
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


def _plan_key(flag_name: str | None) -> str:
    """The plan-file key of the flag a validation error names (``--tp-size`` -> ``tp``)."""
    f = BY_NAME.get(flag_name or "")
    if f is not None and f.plan_key:
        return f.plan_key
    return (flag_name or "").lstrip("-").replace("-", "_")


@dataclass
class CheckSpec:
    name: str
    deployment: Any  # kvplan.deployment.Deployment
    context: int  # tokens per request of the target (the workload's input + output with one)
    requests: int
    headroom: float
    workload: bool = False  # the target counts requests of input_len + output_len tokens
    require: str = "fits"  # "fits" | "starts": what the engine must do besides the target


#: a plan file is a few dozen deployments: 1 MiB is far beyond any real one
MAX_PLAN_BYTES = 1 << 20
MAX_PLAN_DEPTH = 32


def _read_toml(p: Path) -> dict[str, Any]:
    """The plan file through the bounded reader (a regular file of at most 1 MiB: a FIFO, a device or a folder is
    refused without blocking), strict UTF-8, TOML; integers over Python's 4,300 digits (``tomllib`` raises
    ValueError) and nesting deeper than 32 levels are exit 2 naming the file."""
    from kvplan.inputs.read import decode_utf8, read_bytes

    if not p.exists():
        raise InputError(f"no such file: {p}", field="PLAN")
    raw = read_bytes(p, field="PLAN", what="a plan", max_bytes=MAX_PLAN_BYTES)
    text = decode_utf8(raw, field="PLAN", where=str(p))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", field=str(p)) from None
    except (ValueError, RecursionError) as exc:  # digits over Python's limit, absurd nesting
        raise InputError(
            f"not a plan file kvplan can read ({type(exc).__name__}: {str(exc)[:80]})", field=str(p)
        ) from None
    if _depth(doc) > MAX_PLAN_DEPTH:
        raise InputError(f"nested deeper than {MAX_PLAN_DEPTH} levels", field=str(p))
    return doc  # numbers are checked key by key by the plan model and Deployment validation (inf, NaN, ranges)


def _depth(doc: Any) -> int:
    """Nesting depth of a parsed TOML document (iterative)."""
    deepest, todo = 0, [(doc, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        if isinstance(node, dict):
            todo.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            todo.extend((v, d + 1) for v in node)
    return deepest


def _number(v: Any, *, field: str, size: bool) -> int | None:
    """A count (``"32k"``) or a SIZE (``"80GiB"``) key: integers as they are, strings parsed."""
    if v is None:
        return None
    if is_int(v):
        if v < 0:  # a bare negative count or size is an invalid plan, not a missed target
            raise InputError(f"must not be negative, got {v}", field=field)
        return v
    from kvplan.units import parse_count, parse_size

    return parse_size(str(v), field=field) if size else parse_count(str(v), field=field)


def _spec(p: Path, where: str, d: dict[str, Any]) -> CheckSpec:
    """One validated deployment (``PlanDeployment.model_dump()``) as a CheckSpec; validates the Deployment."""
    from kvplan.deployment import Deployment, validate

    target = d.pop("target")
    name = d.pop("name")
    require = d.pop("require")
    if not math.isfinite(float(target["headroom"])):
        raise InputError(f"{where}key 'target.headroom' must be a finite percentage", field=str(p))
    for k in _COUNT_KEYS + _SIZE_KEYS:
        d[k] = _number(d[k], field=f"{p}: {where}{k}", size=k in _SIZE_KEYS)
    workload = d["input_len"] is not None or d["output_len"] is not None
    if workload:
        if target["context"] is not None:
            raise InputError(
                f"{where}give key 'target.context' or a workload (input_len / output_len), not both",
                field=str(p),
                hint="a workload target counts requests of input_len + output_len tokens",
            )
        if d["input_len"] is None:
            raise InputError(f"{where}key 'output_len' needs 'input_len' (kvplan fit's --input-len)", field=str(p))
        ctx = d["input_len"] + (d["output_len"] or 0)
    else:
        if target["context"] is None:
            raise InputError(
                f"{where}missing key 'target.context'",
                field=str(p),
                hint='tokens per request, e.g. context = "32k" (or give input_len / output_len)',
            )
        ctx = _number(target["context"], field=f"{p}: {where}target.context", size=False)
        if ctx is None or ctx < 2:
            raise InputError(f"{where}key 'target.context' must be at least 2 tokens", field=str(p))
        d["context_length"] = d["context_length"] or ctx
    dep = Deployment(**d, target_requests=target["requests"])
    try:
        validate(dep)
    except InputError as exc:
        raise InputError(f"{where}key '{_plan_key(exc.field)}': {exc}", field=str(p), hint=exc.hint) from None
    return CheckSpec(
        name=name,
        deployment=dep,
        context=ctx,
        requests=target["requests"],
        headroom=float(target["headroom"]),
        workload=workload,
        require=require,
    )


def load_plan(path: str | Path) -> list[CheckSpec]:
    """Read and validate a plan file; every error names the file, the deployment and the key (exit 2)."""
    p = Path(path)
    data = _read_toml(p)
    try:
        PlanFile.model_validate(data)
    except ValidationError as exc:
        raise _err(p, "", exc.errors()[0]) from None
    raw_defaults = data.get("defaults") or {}
    specs: list[CheckSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(data["deployment"], 1):
        name = raw.get("name") if isinstance(raw.get("name"), str) else None
        where = f"deployment '{name}' (#{i}): " if name else f"deployment #{i}: "
        try:
            d = PlanDeployment.model_validate({**raw_defaults, **raw}).model_dump()
        except ValidationError as exc:
            raise _err(p, where, exc.errors()[0]) from None
        if d["name"] in seen:
            raise InputError(
                f"{where}duplicate name '{d['name']}'", field=str(p), hint="give each deployment its own name"
            )
        seen.add(d["name"])
        specs.append(_spec(p, where, d))
    return specs


@dataclass
class CheckResult:
    name: str
    model: str
    gpu: str
    engine: str
    num_gpus: int
    context: int  # tokens per request of the target (the workload's input + output with one)
    requests: int
    headroom: float
    required_tokens: int
    pool_tokens: int
    concurrency: int
    headroom_achieved: float
    passed: bool
    reason: str
    fits: bool = True  # fit's verdict: the engine starts and serves one full-context request
    reasons: list[str] = field(default_factory=list)  # every reason it does not fit (fit's ``reasons``)
    verdict: str = ""  # fit's verdict line
    input_len: int | None = None
    output_len: int | None = None
    starts: bool = True  # fit's starts: the engine starts with this configuration
    require: str = "fits"  # what the plan entry requires besides the target: "fits" | "starts"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _judge(s: CheckSpec, r: Any) -> tuple[bool, str, int, int, float]:
    """(passed, reason, concurrency, required tokens, headroom achieved %) of one planned deployment."""
    C, R = s.context, s.requests
    total = r.kv_pool_tokens_total or r.kv_pool_tokens * r.dp
    if s.workload:
        per_request = r.workload_tokens_per_request or C
        conc = r.workload_concurrency or 0
    else:
        per_request = C
        if r.context_length == C:
            conc = int(r.max_concurrency)
        else:
            from kvplan.engines.base import full_context_requests

            per_rank = (
                full_context_requests(pool_tokens=r.kv_pool_tokens, context_len=C, request_cap=r.max_running_requests)
                if r.kv_pool_tokens > 0
                else 0
            )
            conc = per_rank * r.dp
    need = math.ceil(R * per_request * (1 + s.headroom / 100))
    achieved = (total / (R * per_request) - 1) * 100
    size = f"{r.input_len:,}+{r.output_len or 0:,}" if s.workload else f"{C:,}"
    if s.require == "starts":
        if not r.starts:
            return False, "does not start: " + r.reasons[0], conc, need, achieved
        longest = r.max_context_length
        if per_request > longest:
            why = f"a request of {per_request:,} tokens is longer than the longest the engine accepts ({longest:,})"
            return False, why, conc, need, achieved
    elif not r.fits:
        return False, "does not fit: " + r.reasons[0], conc, need, achieved
    if not s.workload and r.context_length < C:
        return (
            False,
            f"target context {C:,} is longer than the server's --context-length {r.context_length:,}",
            conc,
            need,
            achieved,
        )
    if conc < R:
        return (
            False,
            (
                f"{R} request(s) of {size} tokens wanted, room for {conc} "
                f"(pool {total:,} tokens, max_running_requests {r.max_running_requests})"
            ),
            conc,
            need,
            achieved,
        )
    if total < need:
        why = f"headroom {achieved:.1f}% < {s.headroom:g}%: pool {total:,} tokens, needs {need:,}"
        return False, why, conc, need, achieved
    return True, f"room for {conc} request(s), headroom {achieved:.1f}% (>= {s.headroom:g}%)", conc, need, achieved


def _require_gpu(s: CheckSpec) -> None:
    """A plan entry names its model and its GPU (``gpu``, or ``gpu_memory`` for a custom device).  The model is
    resolved first, so an unknown model is named before."""
    from kvplan.inputs.resolve import resolve_model

    if not (s.deployment.model or "").strip():  # a plan entry is planned as the deployment it names (issue 26)
        raise InputError(
            "no model: a plan entry must name the model it plans (key 'model', kvplan fit's --model)",
            field="--model",
            hint='set model = "ORG/NAME" (a kvplan models id or a config.json path) in the deployment or [defaults]',
        )
    eff = s.deployment.with_defaults()
    if eff.model is not None:
        resolve_model(eff.model)
    if eff.gpu is None and eff.gpu_memory is None:
        raise InputError(
            "no GPU: a plan entry must name the GPU it runs on (key 'gpu', kvplan fit's --gpu)",
            field="--gpu",
            hint='set gpu = "h100-sxm" (a kvplan gpus id) in the deployment or [defaults]',
        )


def check(specs: list[CheckSpec], *, path: str = "plan") -> list[CheckResult]:
    """Plan every deployment with ``kvplan.planning.plan.fit`` and compare with its target."""
    from kvplan.planning.plan import fit

    out = []
    for s in specs:
        try:
            _require_gpu(s)
            r = fit(s.deployment)
        except InputError as exc:
            raise InputError(f"deployment '{s.name}': {exc.one_line()}", field=str(path)) from None
        ok, why, conc, need, achieved = _judge(s, r)
        out.append(
            CheckResult(
                name=s.name,
                model=r.model,
                gpu=r.gpu,
                engine=r.engine,
                num_gpus=r.num_gpus,
                context=s.context,
                requests=s.requests,
                headroom=s.headroom,
                required_tokens=need,
                pool_tokens=r.kv_pool_tokens_total or r.kv_pool_tokens * r.dp,
                concurrency=conc,
                headroom_achieved=round(achieved, 2),
                passed=ok,
                reason=why,
                fits=r.fits,
                reasons=list(r.reasons),
                verdict=r.verdict,
                input_len=r.input_len,
                output_len=r.output_len,
                starts=r.starts,
                require=s.require,
            )
        )
    return out
