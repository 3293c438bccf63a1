"""``kvplan sweep``, ``kvplan solve`` and ``kvplan check``: command functions, not attached to an app.

The CLI attaches them (``app.command("sweep")(sweep_cmd)`` ...).  They raise
:class:`kvplan.errors.InputError` for bad input (exit 2) and :class:`kvplan.errors.DoesNotFitError`
when a target is not met (exit 3, also when stdout's reader closed the pipe early:
:func:`kvplan.cli.streams.render_then_check`); :class:`kvplan.cli.app.KvplanGroup` turns those into one line.
Arithmetic lives in :mod:`kvplan.planning.sweep`, :mod:`kvplan.planning.solve` and :mod:`kvplan.planning.check`,
the renderers in :mod:`kvplan.views`; the deployment flags of sweep and solve come from :mod:`kvplan.flags`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from kvplan.cli.options import command_flags, deployment_options, deployment_values, format_option, write
from kvplan.cli.streams import render_then_check
from kvplan.errors import InputError
from kvplan.flags import ENGINES, TRISTATE
from kvplan.views.emit import CheckAnswer, ConfigAnswer, SolveAnswer, SweepAnswer, check_renderable, resolve

_SORTS = ("concurrency", "gpus", "tokens", "context", "none")
#: --sort keys that read the speed columns (kvplan.planning.sweep.speed.SPEED_SORTS; they need --speed)
_SPEED_SORTS = ("throughput", "cost", "ttft", "tpot")


# --------------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------------


def _sweep_inputs(flags: dict[str, Any]) -> tuple[Any, dict[str, list[Any]]]:
    """(base Deployment holding the switches, axes: Deployment field -> values) in registry order."""
    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import parse_axis

    switches: dict[str, Any] = {
        f.field: flags[f.field]
        for f in command_flags("sweep")
        if f.kind == "bool" and (flags[f.field] or (f.field in TRISTATE and flags[f.field] is False))
    }
    # a KV dtype is checked against the vocabulary of each engine the sweep plans (vLLM's fp8, SGLang's fp8_e4m3)
    engines = parse_axis(flags["engine"], field="engine") if flags.get("engine") is not None else [None]
    axes = {
        f.field: parse_axis(flags[f.field], field=f.field, engines=engines)
        for f in command_flags("sweep")
        if f.kind != "bool" and flags[f.field] is not None
    }
    return Deployment(**switches), axes


def _frontier_text(series: Any) -> str:
    """The capacity frontier drawn at the terminal's width (at most 120 columns)."""
    from kvplan.views.console import terminal_console
    from kvplan.views.frontier import render_terminal

    width = min(terminal_console().width, 120)
    return render_terminal(series, width=width, title="capacity frontier: requests at once vs context")


@deployment_options("sweep")
def sweep_cmd(
    *,
    flags: dict[str, Any],
    fmt: Annotated[Optional[str], format_option(SweepAnswer)] = None,
    sort: Annotated[
        Optional[str],
        typer.Option(
            "--sort",
            help="concurrency | gpus | tokens | context | none; with --speed also throughput | cost | ttft | tpot "
            "(table default: concurrency; CSV / JSON lines keep the grid order unless given).",
        ),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="Rows in the table (CSV and JSON lines hold every row).")] = 20,
    output: Annotated[
        Optional[str], typer.Option("-o", "--output", help="Write CSV / JSON lines to this file.")
    ] = None,
    chart: Annotated[
        bool,
        typer.Option(
            "--chart",
            help="Draw the capacity frontier (concurrency vs context) in the terminal; with --speed the Pareto "
            "chart (throughput per GPU vs decode rate per request).",
        ),
    ] = False,
    plot: Annotated[
        Optional[str],
        typer.Option(
            "--plot",
            metavar="FILE",
            help="Save the frontier (--speed: the Pareto chart) as .svg (or .png with matplotlib).",
        ),
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 3 when no point meets its target.")] = False,
    speed: Annotated[
        bool, typer.Option("--speed", help="Add the speed columns (kvplan speed's keys) for the workload.")
    ] = False,
    concurrency: Annotated[
        Optional[str],
        typer.Option(
            "--concurrency", metavar="LIST", help="--speed: requests decoding at once, e.g. 8 or 1,8,32 (default 1)."
        ),
    ] = None,
    gpu_hour_cost: Annotated[
        Optional[float], typer.Option("--gpu-hour-cost", metavar="USD", help="--speed: USD per GPU-hour.")
    ] = None,
    costs: Annotated[
        Optional[str],
        typer.Option("--costs", metavar="FILE", help="--speed: a TOML [costs] table, GPU id = USD per GPU-hour."),
    ] = None,
    calibration: Annotated[
        Optional[str],
        typer.Option("--calibration", metavar="FILE", help="--speed: a kvplan calibrate-speed file (same GPU class)."),
    ] = None,
) -> None:
    """Evaluate a grid of deployments: any flag takes a list (a,b,c) or a range (START:STOP[:STEP], xF = geometric).

    \b
    Example: kvplan sweep -m Qwen/Qwen3-32B -g h100-sxm,h200-sxm --tp 1,2,4 --context-length 32k,128k
    """
    from kvplan.planning.sweep import sweep

    out = resolve(SweepAnswer, fmt)
    if sort is not None and sort not in (*_SORTS, *_SPEED_SORTS):
        raise InputError(
            f"unknown sort '{sort}'",
            field="--sort",
            hint="concurrency, gpus, tokens, context or none; with --speed: throughput, cost, ttft or tpot",
        )
    if sort in _SPEED_SORTS and not speed:
        raise InputError(f"--sort {sort} reads the speed columns", field="--sort", hint="add --speed")
    if sort == "cost" and gpu_hour_cost is None and not costs:
        raise InputError("--sort cost needs prices", field="--sort", hint="add --costs FILE or --gpu-hour-cost USD")
    if top < 0:
        raise InputError(f"must be >= 0, got {top}", field="--top")
    if plot:  # an unwritable --plot is refused before the sweep runs and before anything is printed
        from kvplan.views.frontier import check_plot_path

        check_plot_path(plot)
    if output:
        from kvplan.inputs.read import check_output_path

        check_output_path(output, field="--output")
    concs, cost_table, cal = _speed_options(
        speed, concurrency=concurrency, gpu_hour_cost=gpu_hour_cost, costs=costs, calibration=calibration
    )
    base, axes = _sweep_inputs(flags)
    table = sweep(base, axes)
    cols = None
    if speed:
        from kvplan.planning.sweep.speed import SpeedColumns, check_calibration

        check_calibration(table, cal)  # another GPU class: one line, before anything is written
        cols = SpeedColumns(table, concurrency=concs[0], costs=cost_table, gpu_hour_cost=gpu_hour_cost, calibration=cal)
    series = None
    pareto = _pareto(table, cols, concs, chart=chart, plot=plot) if cols is not None else None
    if (chart or plot) and cols is None:  # a sweep the chart cannot draw is refused before anything is written
        from kvplan.views.frontier import frontier_series, render_terminal, save_plot

        series = frontier_series(table)
        if chart:  # drawn before anything is printed: a chart that fails prints nothing
            render_terminal(series, width=80)
        if plot:
            save_plot(series, plot)
    speed_idx = None
    if cols is not None and sort in _SPEED_SORTS:
        from kvplan.planning.sweep.speed import speed_order

        speed_idx = speed_order(table, cols, sort, concs)
    answer = SweepAnswer(
        table,
        sort=sort,
        top=top,
        cols=cols,
        concurrencies=tuple(concs),
        speed_order=speed_idx,
        output=output,
        aside=_frontier_text(series) if series is not None and chart else pareto,
    )

    def show() -> None:
        write(answer, out)
        if plot:
            print(f"wrote {plot}", file=sys.stderr)  # saved before anything was printed

    render_then_check(show, _sweep_failure(table) if check else "")


def _pareto(table: Any, cols: Any, concs: list[int], *, chart: bool, plot: str | None) -> str | None:
    """``sweep --speed --chart / --plot``: the Pareto chart (:mod:`kvplan.views.pareto`) over every point and
    concurrency; ``plot`` saved here, the terminal text returned (None without ``--chart``).  Called before
    anything is printed: a chart that cannot be drawn (no point fits) prints nothing."""
    if not (chart or plot):
        return None
    from kvplan.views.pareto import render_terminal, save_plot, sweep_chart

    data = sweep_chart(table, cols, concs)
    if plot:
        save_plot(data, plot)
    return render_terminal(data, width=80) if chart else None


def _speed_options(
    speed: bool, *, concurrency: str | None, gpu_hour_cost: float | None, costs: str | None, calibration: str | None
) -> tuple[list[int], dict[str, float] | None, Any]:
    """Check sweep's --speed options before the sweep runs: (the concurrency values, the costs file's table or
    None, the calibration or None)."""
    if not speed:
        for given, flag in (
            (gpu_hour_cost is not None, "--gpu-hour-cost"),
            (costs, "--costs"),
            (concurrency is not None, "--concurrency"),
            (calibration, "--calibration"),
        ):
            if given:
                raise InputError(f"{flag} is read by the speed columns", field=flag, hint="add --speed")
        return [1], None, None
    from kvplan.planning.sweep.speed import concurrency_values

    concs = concurrency_values(concurrency)
    return concs, _prices(gpu_hour_cost, costs), _calibration(calibration)


def _sweep_failure(table: Any) -> str:
    """Why ``sweep --check`` fails ("" when it passes): no point meets its target (``n_meet``; a table without
    it: no point fits)."""
    n_meet = getattr(table, "n_meet", None)
    if n_meet is None:
        return "" if table.n_fit else f"none of the {len(table):,} points fits"
    if n_meet:
        return ""
    fit = f" ({table.n_fit:,} start and serve one full-context request)" if table.n_fit else ""
    return f"none of the {len(table):,} points meets its target{fit}"


# --------------------------------------------------------------------------------------------------
# solve
# --------------------------------------------------------------------------------------------------


def _click_module(name: str) -> Any:
    """A module of click: vendored by typer >= 0.24, the real click before (as kvplan.cli.app does)."""
    import importlib

    try:
        return importlib.import_module(f"typer._click.{name}")
    except ImportError:  # pragma: no cover - older typer on real click
        return importlib.import_module(f"click.{name}")


def _number_or_list(kind: str) -> Any:
    """A click type named as click's INT / FLOAT (``integer`` / ``float``, so ``--help`` and the registry checks
    see the same type) that keeps any other text as it is: ``solve config`` reads it as a list or range, the other
    questions convert it with click's own type (:func:`_typed_flags`, the same one-line error as before)."""
    types = _click_module("types")
    base = types.INT if kind == "int" else types.FLOAT

    class NumberOrList(types.ParamType):  # type: ignore[name-defined]
        name = base.name

        def convert(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
            try:
                return base.convert(value, param, ctx)
            except Exception:  # a list or range: kept as text
                return str(value)

    return NumberOrList()


def _solve_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`deployment_options` of ``solve`` with the int / float flags' type :func:`_number_or_list`."""
    wrapped = deployment_options("solve")(func)
    for p in wrapped.__signature__.parameters.values():  # type: ignore[attr-defined]
        kind = _SOLVE_KINDS.get(p.name)
        if kind in ("int", "float"):
            p.default.click_type = _number_or_list(kind)
    return wrapped


_SOLVE_KINDS = {f.field: f.kind for f in command_flags("solve")}


def _typed_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """The int / float flags of ``solve`` still text (a list, for ``solve config``) converted by click's INT / FLOAT
    against their own parameter: a bad value is click's one line (``Invalid value for '--tp-size' / ...``)."""
    types = _click_module("types")
    ctx = _click_module("globals").get_current_context()
    params = {p.name: p for p in ctx.command.params}
    out = dict(flags)
    for name, kind in _SOLVE_KINDS.items():
        v = out.get(name)
        if kind in ("int", "float") and isinstance(v, str):
            out[name] = (types.INT if kind == "int" else types.FLOAT).convert(v, params.get(name), ctx)
    return out


_Float = Optional[float]


@_solve_options
def solve_cmd(
    question: Annotated[
        str,
        typer.Argument(metavar="QUESTION", help="gpus | mem-fraction | dtype | context | concurrency | config"),
    ],
    *,
    flags: dict[str, Any],
    max_gpus: Annotated[int, typer.Option("--max-gpus", help="gpus: the largest deployment to consider.")] = 64,
    ttft: Annotated[
        _Float, typer.Option("--ttft", metavar="SECONDS", help="config, concurrency: time to first token at most.")
    ] = None,
    tpot: Annotated[
        _Float, typer.Option("--tpot", metavar="SECONDS", help="config, concurrency: time per output token at most.")
    ] = None,
    min_decode_rate: Annotated[
        _Float,
        typer.Option(
            "--min-decode-rate", metavar="TOKENS_PER_S", help="config, concurrency: per-request decode rate at least."
        ),
    ] = None,
    min_throughput: Annotated[
        _Float,
        typer.Option("--min-throughput", metavar="TOKENS_PER_S", help="config: aggregate output tokens/s at least."),
    ] = None,
    concurrency: Annotated[
        Optional[str],
        typer.Option("--concurrency", metavar="LIST", help="config: requests at once, e.g. 8 or 1,8,32 (default 1)."),
    ] = None,
    objective: Annotated[
        str, typer.Option("--objective", help="config: throughput-per-gpu | cost | latency.")
    ] = "throughput-per-gpu",
    gpu_hour_cost: Annotated[
        _Float, typer.Option("--gpu-hour-cost", metavar="USD", help="config: USD per GPU-hour (every GPU).")
    ] = None,
    costs: Annotated[
        Optional[str],
        typer.Option("--costs", metavar="FILE", help="config: a TOML [costs] table, GPU id = USD per GPU-hour."),
    ] = None,
    calibration: Annotated[
        Optional[str],
        typer.Option("--calibration", metavar="FILE", help="config, concurrency: a kvplan calibrate-speed file."),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="config: runners-up in the table.")] = 5,
    fmt: Annotated[Optional[str], format_option(SolveAnswer, "csv: config only; ")] = None,
) -> None:
    """Inverse questions: the fewest GPUs, the smallest mem_fraction_static, the cheapest KV dtype, the longest
    context or the most requests that meet a target, or the best configuration; every rejected candidate says
    why. Exit 3 if none does.

    \b
    config: every deployment flag takes a list or range (as in sweep); the best point that fits, meets
    --ttft / --tpot / --min-decode-rate / --min-throughput at --concurrency, ranked by --objective.

    \b
    Example: kvplan solve gpus -m deepseek-ai/DeepSeek-V3 -g h200-sxm --context-length 128k --requests 8
    Example: kvplan solve config -m Qwen/Qwen3-32B -g h100-sxm,l40s --tp 1,2,4 --input-len 8k --ttft 2 --tpot 0.05
    """
    from kvplan.deployment import Deployment, validate
    from kvplan.planning.solve import QUESTIONS, solve
    from kvplan.planning.solve_config import Targets

    if question not in (*QUESTIONS, "config"):
        raise InputError(
            f"unknown question '{question}'", field="QUESTION", hint="one of " + ", ".join((*QUESTIONS, "config"))
        )
    out = resolve(ConfigAnswer if question == "config" else SolveAnswer, fmt)
    targets = Targets(ttft_s=ttft, tpot_s=tpot, min_decode_rate=min_decode_rate, min_throughput=min_throughput)
    targets.check()
    if top < 0:
        raise InputError(f"must be >= 0, got {top}", field="--top")
    cal = None
    if question == "config":
        cost_table = _prices(gpu_hour_cost, costs)
        cal = _calibration(calibration)
        _solve_config(
            flags,
            out,
            targets=targets,
            concurrency=concurrency,
            objective=objective,
            prices=(cost_table, gpu_hour_cost),
            calibration=cal,
            top=top,
        )
        return
    _config_only(
        question,
        targets,
        concurrency=concurrency,
        objective=objective,
        gpu_hour_cost=gpu_hour_cost,
        costs=costs,
        calibration=calibration,
        out=out,
    )
    if question == "concurrency":
        cal = _calibration(calibration)
    flags = _typed_flags(flags)
    engine = flags["engine"] or "sglang"
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}'", field="--engine", hint="use sglang or vllm")
    if flags["kv_cache_dtype"] is not None:
        from kvplan.engines.registry import engine as engine_of

        engine_of(engine).check_kv_dtype(flags["kv_cache_dtype"])  # the engine's own vocabulary (vLLM: fp8)
    dep = Deployment(**{**deployment_values("solve", flags), "engine": engine})
    validate(_for_validate(dep))
    if dep.model is not None:
        from kvplan.inputs.resolve import resolve_model

        resolve_model(dep.model)
    if dep.gpu is not None:
        from kvplan.inputs.resolve import resolve_gpu

        resolve_gpu(dep.gpu)
    if question == "concurrency" and targets.latency:
        from kvplan.planning.solve import solve_concurrency_targets

        result = solve_concurrency_targets(dep, targets, calibration=cal)
    else:
        result = solve(dep, question, max_gpus=max_gpus)

    render_then_check(
        lambda: write(SolveAnswer(result), out), "" if result.solved else f"no answer: {result.answer_label}"
    )


def _config_only(question: str, targets: Any, *, out: Any, **given: Any) -> None:
    """Refuse (one line naming the flag) what only ``solve config`` (or ``solve concurrency``) reads."""
    check_renderable(SolveAnswer, out, question=question)
    only_config = {
        "concurrency": "--concurrency",
        "gpu_hour_cost": "--gpu-hour-cost",
        "costs": "--costs",
    }
    for name, flag in only_config.items():
        if given.get(name) is not None:
            raise InputError(f"solve {question} does not read {flag}", field=flag, hint="it is a solve config flag")
    if given.get("objective") != "throughput-per-gpu":
        raise InputError(f"solve {question} does not read --objective", field="--objective", hint="use solve config")
    if targets.min_throughput is not None:
        raise InputError(
            f"solve {question} does not read --min-throughput", field="--min-throughput", hint="use solve config"
        )
    if question != "concurrency":
        for v, flag in (
            (targets.ttft_s, "--ttft"),
            (targets.tpot_s, "--tpot"),
            (targets.min_decode_rate, "--min-decode-rate"),
            (given.get("calibration"), "--calibration"),
        ):
            if v is not None:
                raise InputError(
                    f"solve {question} does not read {flag}", field=flag, hint="solve concurrency and config do"
                )


def _prices(gpu_hour_cost: float | None, costs: str | None) -> dict[str, float] | None:
    if gpu_hour_cost is not None and not (gpu_hour_cost > 0 and gpu_hour_cost < 1e6):
        raise InputError(f"must be a positive USD amount, got {gpu_hour_cost}", field="--gpu-hour-cost")
    if costs:
        from kvplan.planning.sweep.speed import load_costs

        return load_costs(costs)
    return None


def _calibration(path: str | None) -> Any:
    if not path:
        return None
    from kvplan.perf.calibration import load_calibration

    return load_calibration(path)


def _solve_config(
    flags: dict[str, Any],
    out: Any,
    *,
    targets: Any,
    concurrency: str | None,
    objective: str,
    prices: tuple[dict[str, float] | None, float | None],
    calibration: Any,
    top: int,
) -> None:
    """``solve config``: the flags read as sweep axes, the grid judged (:func:`kvplan.planning.solve_config`)."""
    from kvplan.planning.solve_config import ConfigQuery, check_query, solve_config
    from kvplan.planning.sweep.speed import concurrency_values

    concs = concurrency_values(concurrency)
    base, axes = _config_inputs(flags)
    query = ConfigQuery(
        base=base,
        axes=axes,
        concurrency=tuple(concs),
        targets=targets,
        objective=objective,
        costs=prices[0],
        gpu_hour_cost=prices[1],
        calibration=calibration,
    )
    check_query(query)
    result = solve_config(query)

    render_then_check(
        lambda: write(ConfigAnswer(result, top=top), out), "" if result.solved else f"no answer: {result.answer_label}"
    )


def _config_inputs(flags: dict[str, Any]) -> tuple[Any, dict[str, list[Any]]]:
    """(base Deployment: the switches and the flags that are not axes; axes: field -> values) of ``solve config``:
    every sweepable flag read as a list or range (:func:`kvplan.planning.sweep.parse_axis`)."""
    from kvplan.deployment import Deployment
    from kvplan.flags import BY_FIELD
    from kvplan.planning.sweep import AXES, parse_axis

    fixed: dict[str, Any] = {}
    for f in command_flags("solve"):
        v = flags.get(f.field)
        if f.kind == "bool" and (v or (f.field in TRISTATE and v is False)):
            fixed[f.field] = v
    engines = parse_axis(flags["engine"], field="engine") if flags.get("engine") is not None else [None]
    axes: dict[str, list[Any]] = {}
    rest: dict[str, Any] = {}
    for f in command_flags("solve"):
        v = flags.get(f.field)
        if f.kind == "bool" or v is None:
            continue
        if f.field in AXES:
            axes[f.field] = parse_axis(str(v), field=f.field, engines=engines)
        else:
            rest[f.field] = v
    fixed.update(deployment_values("solve", {k: rest.get(k) for k in BY_FIELD if k in rest}))
    return Deployment(**fixed), axes


def _for_validate(dep: Any) -> Any:
    """``validate`` needs a model name to skip the default deployment; the model itself is resolved later."""
    from dataclasses import replace

    return replace(dep, model=dep.model or "x")


# --------------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------------


def check_cmd(
    plan: Annotated[str, typer.Argument(metavar="PLAN.toml", help="Sizing file: deployments and their targets.")],
    report: Annotated[
        Optional[str], typer.Option("--report", metavar="FILE", help="Write a report: FILE.json or FILE.xml (JUnit).")
    ] = None,
    report_format: Annotated[
        Optional[str], typer.Option("--report-format", help="json | junit (default: from the extension).")
    ] = None,
    fmt: Annotated[Optional[str], format_option(CheckAnswer)] = None,
) -> None:
    """CI sizing check: plan every deployment of PLAN.toml; exit 3 if any misses its target.

    \b
    Example: kvplan check sizing.toml --report report.xml
    """
    from kvplan.planning.check import check, load_plan
    from kvplan.views import check as view

    out = resolve(CheckAnswer, fmt)
    if report_format is not None and report_format not in ("json", "junit"):
        raise InputError(f"unknown report format '{report_format}'", field="--report-format", hint="json or junit")
    specs = load_plan(plan)
    results = check(specs, path=plan)
    if report:  # before stdout: a reader that closes the pipe early does not lose the report
        view.write_report(results, report, fmt=report_format, path=plan)

    failed = [r.name for r in results if not r.passed]
    render_then_check(
        lambda: write(CheckAnswer(results, path=plan), out),
        f"{len(failed)} of {len(results)} deployment(s) miss their target: " + ", ".join(failed) if failed else "",
    )
