"""``kvplan speed``: how fast a deployment serves a workload (issue 22), with the bound named.

Takes every deployment flag of ``kvplan fit`` (same names, same defaults, the same default deployment: the flag
registry, :func:`kvplan.cli.options.deployment_options`) plus the speed flags; the library call is
:func:`kvplan.planning.speed.speed`, the views :mod:`kvplan.views.speed`; the command's work is
:func:`kvplan.cli.speed_run.run_speed` (typer-free: :mod:`kvplan.cli.fast` runs it without typer).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvplan.cli.options import deployment_options, format_option
from kvplan.cli.speed_run import run_speed
from kvplan.views.emit import SpeedAnswer

_Concurrency = Annotated[
    int, typer.Option("--concurrency", "-c", metavar="C", help="Requests decoding at once (default 1).")
]
_Accept = Annotated[
    Optional[float],
    typer.Option(
        "--accept-length",
        metavar="A",
        help="Speculative decoding: tokens accepted per step (default: per algorithm, docs/speed.md).",
    ),
]
_Power = Annotated[
    Optional[float], typer.Option("--power-limit", metavar="W", help="Board power cap (nvidia-smi -pl), W.")
]
_Tflops = Annotated[
    Optional[float], typer.Option("--gpu-tflops", metavar="TFLOPS", help="Dense BF16 TFLOPS per GPU (override).")
]
_Bw = Annotated[
    Optional[float], typer.Option("--gpu-bandwidth", metavar="GB/s", help="Memory bandwidth per GPU (override).")
]
_Prompts = Annotated[
    Optional[int],
    typer.Option(
        "--num-prompts",
        metavar="N",
        help="Benchmark run: N requests in all (bench_serving --num-prompts); the first C arrive at once "
        "(default: steady state).",
    ),
]
_RangeRatio = Annotated[
    Optional[float],
    typer.Option(
        "--random-range-ratio",
        metavar="R",
        help="Benchmark run (with --num-prompts): lengths uniform over [max(1, L x R), L], as bench_serving "
        "--random-range-ratio (default 1.0: every request --input-len + --output-len).",
    ),
]
_Calibration = Annotated[
    Optional[str],
    typer.Option(
        "--calibration",
        metavar="FILE",
        help="A calibration TOML from kvplan calibrate-speed (same GPU class and engine).",
    ),
]
_Link = Annotated[
    Optional[float],
    typer.Option("--link-bandwidth", metavar="GB/s", help="Link rate per GPU per direction (override)."),
]


@deployment_options("fit")
def speed_cmd(
    *,
    flags: dict[str, Any],
    concurrency: _Concurrency = 1,
    accept_length: _Accept = None,
    power_limit: _Power = None,
    gpu_tflops: _Tflops = None,
    gpu_bandwidth: _Bw = None,
    link_bandwidth: _Link = None,
    num_prompts: _Prompts = None,
    range_ratio: _RangeRatio = None,
    calibration: _Calibration = None,
    fmt: Annotated[Optional[str], format_option(SpeedAnswer)] = None,
    explain: Annotated[
        bool, typer.Option("--explain", "-v", help="Table: the per-step breakdown and every assumption.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
    chart: Annotated[
        bool,
        typer.Option(
            "--chart",
            help="TTFT against prompt length in the terminal: --input-len takes a list (1k,4k,16k,64k or "
            "1k:128k:x4; default 1k,4k,16k,64k); -m, -g, --engine and --kv-cache-dtype take a,b: one curve each.",
        ),
    ] = False,
    plot: Annotated[
        Optional[str],
        typer.Option("--plot", metavar="FILE", help="Save the TTFT chart as .svg (or .png with matplotlib)."),
    ] = None,
) -> None:
    """How fast one deployment serves: prefill tok/s, TTFT, TPOT, throughput, and what bounds each phase.

    Same deployment flags and defaults as `kvplan fit` (no --model: the default deployment), plus the workload
    (--input-len, --output-len, --concurrency) and speculative decoding (--accept-length).

    \b
    Example: kvplan speed --input-len 131072 --output-len 1 --chunked-prefill-size 2048 --explain
    """
    run_speed(
        flags=flags,
        concurrency=concurrency,
        accept_length=accept_length,
        power_limit=power_limit,
        gpu_tflops=gpu_tflops,
        gpu_bandwidth=gpu_bandwidth,
        link_bandwidth=link_bandwidth,
        num_prompts=num_prompts,
        range_ratio=range_ratio,
        calibration=calibration,
        fmt=fmt,
        explain=explain,
        chart=chart,
        plot=plot,
    )
