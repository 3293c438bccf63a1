"""``kvplan speed``'s work after its options are read (no typer import here).

The typer command (:func:`kvplan.cli.speed_cmd.speed_cmd`) and the typer-free path of :mod:`kvplan.cli.fast`
both call :func:`run_speed` with the values of the same options.
"""

from __future__ import annotations

from typing import Any

from kvplan.cli.output import write
from kvplan.cli.values import deployment_values
from kvplan.views.emit import SpeedAnswer, TtftChartAnswer, check_renderable, resolve


def speed_inputs(
    *,
    concurrency: int,
    accept_length: float | None,
    power_limit: float | None,
    gpu_tflops: float | None,
    gpu_bandwidth: float | None,
    link_bandwidth: float | None,
    num_prompts: int | None = None,
    calibration: str | None = None,
    range_ratio: float | None = None,
) -> Any:
    from kvplan.planning.speed import SpeedInputs

    extra: dict[str, Any] = {}
    if calibration:
        from kvplan.perf.calibration import load_calibration

        extra["calibration"] = load_calibration(calibration)
    return SpeedInputs(
        **extra,
        concurrency=concurrency,
        accept_length=accept_length,
        power_limit=power_limit,
        gpu_tflops=gpu_tflops,
        gpu_bandwidth=gpu_bandwidth,
        link_bandwidth=link_bandwidth,
        num_prompts=num_prompts,
        range_ratio=range_ratio,
    )


def run_speed(
    *,
    flags: dict[str, Any],
    concurrency: int,
    accept_length: float | None,
    power_limit: float | None,
    gpu_tflops: float | None,
    gpu_bandwidth: float | None,
    link_bandwidth: float | None,
    num_prompts: int | None,
    calibration: str | None,
    fmt: str | None,
    explain: bool,
    chart: bool,
    plot: str | None,
    range_ratio: float | None = None,
) -> None:
    """``kvplan speed`` with its options' values (``flags``: the registry's, Deployment field -> value as typed)."""
    out = resolve(TtftChartAnswer if chart or plot else SpeedAnswer, fmt)  # no --format: the chart, also on a pipe
    from kvplan.deployment import Deployment
    from kvplan.planning.speed import speed

    def inputs() -> Any:  # one argument list for both paths (the plain path builds it after the deployment)
        return speed_inputs(
            concurrency=concurrency,
            accept_length=accept_length,
            power_limit=power_limit,
            gpu_tflops=gpu_tflops,
            gpu_bandwidth=gpu_bandwidth,
            link_bandwidth=link_bandwidth,
            num_prompts=num_prompts,
            calibration=calibration,
            range_ratio=range_ratio,
        )

    if chart or plot:
        _ttft_chart(flags, out, chart=chart, plot=plot, inputs=inputs())
        return
    _one_input_len(flags.get("input_len"))
    given = deployment_values("fit", flags)
    write(SpeedAnswer(speed(Deployment(**given), inputs()), explain=explain), out)


def _one_input_len(text: str | None) -> None:
    """Without --chart / --plot, --input-len is one count: ``1,024`` (thousands) is 1,024, but a list
    (``1k,4k``, ``1024,4096``, ``1k:64k:x4``) is refused with one line, not read as one long number."""
    import re

    if text and ("," in text or ":" in text) and not re.fullmatch(r"\s*\d{1,3}(,\d{3})+\s*", text):
        from kvplan.errors import InputError, echo

        raise InputError(
            f"'{echo(text)}' is a list: one prompt length per speed answer",
            field="--input-len",
            hint="give one length, or add --chart / --plot FILE for TTFT against each length",
        )


#: the prompt lengths of ``speed --chart`` when --input-len is not given
CHART_INPUT_LENS = "1k,4k,16k,64k"


#: the flags ``speed --chart`` reads as lists (``a,b``): one curve per combination
CHART_LISTS = ("model", "gpu", "engine", "kv_cache_dtype")


def _ttft_chart(flags: dict[str, Any], out: Any, *, chart: bool, plot: str | None, inputs: Any) -> None:
    """``speed --chart / --plot``: TTFT against prompt length (:mod:`kvplan.views.ttft_chart`), one curve per
    combination of the lists in :data:`CHART_LISTS` (``-g h100-sxm,h200-sxm --engine sglang,vllm``: four).
    Every refusal (the plot path, the format, the lists) comes before any output."""
    import itertools
    import sys
    from dataclasses import replace

    from kvplan.deployment import Deployment
    from kvplan.errors import InputError
    from kvplan.planning.sweep import parse_axis
    from kvplan.views import ttft_chart

    if plot:  # an unwritable --plot is refused before anything is computed or printed
        from kvplan.views.frontier import check_plot_path

        check_plot_path(plot)
    check_renderable(TtftChartAnswer, out)  # a format the chart has no form in: refused before any work
    lens = parse_axis(flags.get("input_len") or CHART_INPUT_LENS, field="input_len")
    engines = parse_axis(flags["engine"], field="engine") if flags.get("engine") else [None]
    # the sweep's reading of each list: names checked, a KV dtype against each engine's own vocabulary
    lists = {
        k: parse_axis(flags[k], field=k, engines=engines) if k != "engine" else engines
        for k in CHART_LISTS
        if flags.get(k) is not None
    }
    combos = list(itertools.product(*lists.values()))
    if len(combos) > ttft_chart.MAX_SERIES:
        raise InputError(
            f"{len(combos)} deployments is more than a chart shows ({ttft_chart.MAX_SERIES})",
            field="--" + max(lists, key=lambda k: len(lists[k])).replace("_", "-"),
            hint="give fewer values to -m, -g, --engine, --kv-cache-dtype",
        )
    given = deployment_values("fit", {**flags, "input_len": None, **dict.fromkeys(lists)})
    base = Deployment(**given)
    deps = [replace(base, **dict(zip(lists, combo, strict=True))) for combo in combos]
    series = ttft_chart.ttft_series([("", d) for d in deps], lens, inputs)
    title = f"TTFT vs prompt length, concurrency {inputs.concurrency:,}"
    text = ttft_chart.render_terminal(series, width=80, title=title) if chart else None
    if plot:
        ttft_chart.save_plot(series, plot, title=title)
    write(TtftChartAnswer(series, text), out)
    if plot:
        print(f"wrote {plot}", file=sys.stderr)
