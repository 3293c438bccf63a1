"""``kvplan speed``: how fast a deployment serves a workload (issue 22), with the bound named.

Takes every deployment flag of ``kvplan fit`` (same names, same defaults, the same default deployment: the flag
registry, :func:`kvplan.cli.options.deployment_options`) plus the speed flags; the library call is
:func:`kvplan.planning.speed.speed`, the views :mod:`kvplan.views.speed`.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvplan.cli.options import deployment_options, deployment_values
from kvplan.views.formats import TABLE_JSON_CSV, Format, format_metavar, resolve_format

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
    )


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
    calibration: _Calibration = None,
    fmt: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            metavar=format_metavar(TABLE_JSON_CSV),
            help="table | json | csv (default: table on a terminal, JSON otherwise).",
        ),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", "-v", help="Table: the per-step breakdown and every assumption.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
) -> None:
    """How fast one deployment serves: prefill tok/s, TTFT, TPOT, throughput, and what bounds each phase.

    Same deployment flags and defaults as `kvplan fit` (no --model: the default deployment), plus the workload
    (--input-len, --output-len, --concurrency) and speculative decoding (--accept-length).

    \b
    Example: kvplan speed --input-len 131072 --output-len 1 --chunked-prefill-size 2048 --explain
    """
    out = resolve_format(fmt, allowed=TABLE_JSON_CSV, default_when_not_tty=Format.JSON)
    from kvplan.deployment import Deployment
    from kvplan.planning.speed import speed

    given = deployment_values("fit", flags)
    r = speed(
        Deployment(**given),
        speed_inputs(
            concurrency=concurrency,
            accept_length=accept_length,
            power_limit=power_limit,
            gpu_tflops=gpu_tflops,
            gpu_bandwidth=gpu_bandwidth,
            link_bandwidth=link_bandwidth,
            num_prompts=num_prompts,
            calibration=calibration,
        ),
    )
    if out is Format.TABLE:
        from kvplan.views.speed import print_speed

        print_speed(r, explain=explain)
    else:
        from kvplan.views.speed import speed_text

        typer.echo(speed_text(r, out), nl=False)
