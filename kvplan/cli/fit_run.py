"""``kvplan fit``'s work after its options are read: plan, advise, render (no typer import here).

The typer command (:func:`kvplan.cli.commands.fit_cmd`) and the typer-free path of :mod:`kvplan.cli.fast` both
call :func:`run_fit` with the values of the same options.
"""

from __future__ import annotations

from typing import Any

from kvplan.cli.output import write
from kvplan.cli.streams import render_then_check
from kvplan.cli.values import deployment_values
from kvplan.errors import InputError, echo
from kvplan.flags import ENGINES
from kvplan.views.emit import FitAnswer, WhatIfAnswer, resolve


def engines_of(engine: str | None) -> list[str]:
    """``--engine sglang,vllm`` -> ["sglang", "vllm"] (side by side); default sglang."""
    text = engine or "sglang"
    engines = [e.strip().lower() for e in text.split(",") if e.strip()]
    if not engines or any(e not in ENGINES for e in engines):
        raise InputError(f"unknown engine '{echo(text)}'", field="--engine", hint="use sglang, vllm or sglang,vllm")
    return engines


def _launch(
    args: list[str], from_launch: str | None, engine_version: str | None = None
) -> tuple[str, dict[str, Any], list[str], list[str], list[str]]:
    """(engine, Deployment fields, warnings, assumptions, refusals) of the launch command after ``--`` or in
    ``--from-launch FILE``, read with the flags of ``engine_version`` (the --engine-version given), else of the
    release the command names (image tag, pip pin), else of the newest (kvplan.inputs.launch._release)."""
    from kvplan.inputs.launch import parse_launch_command, read_launch_text

    if args and from_launch is not None:
        raise InputError(
            "give the launch command either after '--' or with --from-launch, not both", field="--from-launch"
        )
    parsed = parse_launch_command(args if args else read_launch_text(str(from_launch)), engine_version=engine_version)
    line = parsed.release_assumption()
    fields = {k: v for k, v in parsed.fields.items() if v is not None}
    return parsed.engine, fields, parsed.warnings(), [line] if line else [], list(parsed.refusals)


def _from_log(log: str, given: dict[str, Any], *, model: str | None, gpu: str | None, out: Any, check: bool) -> None:
    """``kvplan fit --from-log LOG [flags]``: the log's deployment and the what-if of the flags given
    (``model`` / ``gpu``: the --model / --gpu options, for a log whose model or GPU is not a preset)."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.whatif import whatif

    over = {k: v for k, v in given.items() if k not in ("model", "gpu")}
    w = whatif(read_log_file(log), over, model=model, gpu=gpu)
    render_then_check(
        lambda: write(WhatIfAnswer(w), out),
        w.whatif.verdict if check and not w.whatif.fits else "",
    )


def run_fit(
    *,
    flags: dict[str, Any],
    extra_args: list[str],
    from_launch: str | None,
    from_log: str | None,
    fmt: str | None,
    check: bool,
    explain: bool,
    speed: bool,
) -> None:
    """``kvplan fit`` with its options' values: ``flags`` the registry's (Deployment field -> value as typed),
    ``extra_args`` the launch command after ``--`` (click's ``ctx.args``)."""
    out = resolve(FitAnswer, fmt)
    engine = flags["engine"]
    engines = engines_of(engine)
    given = deployment_values("fit", {**flags, "engine": engine and engines[0]})
    launch_warnings: list[str] = []
    launch_assumptions: list[str] = []
    launch_refusals: list[str] = []
    if extra_args or from_launch is not None:
        launch_engine, fields, launch_warnings, launch_assumptions, launch_refusals = _launch(
            list(extra_args), from_launch, given.get("engine_version")
        )
        given = {**fields, **given}
        if from_log is None:  # a launch command names no GPU: --gpu must (a log does name it)
            from kvplan.inputs.launch import require_gpu

            require_gpu(given)
        if engine is None:
            engines = [launch_engine]
    if from_log is not None:
        _from_log(from_log, given, model=flags["model"], gpu=flags["gpu"], out=out, check=check)
        return
    from dataclasses import replace

    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    dep = Deployment(**{**given, "engine": engines[0]})

    # the launch reader's warnings go in with the plan: a result is not mutated after fit returns (issue 21 item 4)
    def plan(e: str, advice: tuple[str, ...] = ()) -> Any:
        return fit(
            replace(dep, engine=e),
            warnings=launch_warnings,
            assumptions=launch_assumptions,
            refusals=launch_refusals,
            advise=True,
            advice=advice,
        )

    results = [plan(e) for e in engines]
    # a deployment that does not fit, with weights that do: what solve finds that fits, said with the plan (the
    # result is complete when fit returns, so it is planned again with the advice)
    results = (
        [plan(r.engine, advice) if (advice := _solve_advice(replace(dep, engine=r.engine), r)) else r for r in results]
        if not launch_refusals
        else results
    )  # a command the engine's parser refuses: the fix is the flag, not a knob

    speeds = _speeds(dep, engines) if speed else None

    answer = FitAnswer(results, speeds, explain=explain)
    missed = [m for m in (missed_target(r) for r in results) if m] if check else []
    render_then_check(lambda: write(answer, out), "; ".join(missed))


def _solve_advice(dep: Any, r: Any) -> tuple[str, ...]:
    """What makes a deployment that does not fit (its weights do) meet its target, by kvplan solve's searches: the
    smallest memory knob (never above 1) and the cheapest KV dtype (the GPU count is fit's own advice).  Empty when
    it fits, when the weights alone do not fit, or when solve cannot answer.  Example: Qwen3-32B on one H100 under
    SGLang -> ``("meets the target with --mem-fraction-static 0.904 (pool 41,213 tokens, room for 1)",)``."""
    if r.fits or r.weight_bytes >= r.free_bytes or dep.free_memory is not None:
        return ()
    if r.weight_bytes == 0 and r.kv_bytes_per_token == 0:  # nothing was planned: an engine refusal, its own fix
        return ()
    from kvplan.errors import KvplanError
    from kvplan.planning.solve import solve

    out = []
    for question in ("mem-fraction", "dtype"):  # the GPU count: fit's own advice (kvplan.planning.plan.tp_advice)
        try:
            res = solve(dep, question)
        except KvplanError:
            continue
        if res.answer is None or (question == "dtype" and res.answer == r.kv_cache_dtype):
            continue
        out.append(f"meets the target with {res.answer_label}")
    return tuple(out)


def _speeds(dep: Any, engines: list[str]) -> list[Any]:
    """``kvplan fit --speed``: the speed answer of each engine's plan (kvplan.planning.speed, loaded only here)."""
    from dataclasses import replace

    from kvplan.planning.speed import speed

    return [speed(replace(dep, engine=e)) for e in engines]


def missed_target(r: Any) -> str:
    """Why ``--check`` fails for one result ("" when it passes): the engine does not start or serve (``fits``
    false), or the target the user set (``meets_target``; planners without it: ``fits``) is not met."""
    meets = getattr(r, "meets_target", None)
    if not r.fits:
        return str(r.verdict)
    if meets is False:
        target = getattr(r, "target", None)
        return f"target not met: {target}; {r.verdict}" if target else f"target not met; {r.verdict}"
    return ""
