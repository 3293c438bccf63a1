"""``kvplan calibrate-speed RESULT [fit's deployment flags]`` (issue 23 item 4): measured vs predicted for every
metric a benchmark result holds, and the calibration that makes the speed model agree (``--save FILE``).

The workload and the measured values come from RESULT (:func:`kvplan.inputs.bench.read_bench`); the server's
configuration from the deployment flags, with ``kvplan fit``'s defaults.  The fit:
:func:`kvplan.planning.calibrate_speed.calibrate_speed`; the file: :mod:`kvplan.perf.calibration`.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvplan.cli.options import deployment_options, deployment_values, format_option, write
from kvplan.views.emit import SpeedCalibrationAnswer, resolve


@deployment_options("fit")
def calibrate_speed_cmd(
    *,
    flags: dict[str, Any],
    result: Annotated[
        str,
        typer.Argument(
            metavar="RESULT",
            help="bench_serving / bench_one_batch JSONL, vllm bench serve --save-result JSON, or a TOML point.",
        ),
    ],
    save: Annotated[
        Optional[str], typer.Option("--save", metavar="FILE", help="Write the calibration TOML (atomically).")
    ] = None,
    fmt: Annotated[Optional[str], format_option(SpeedCalibrationAnswer)] = None,
) -> None:
    """Refit the speed model's efficiency constants from one measured run; print measured vs predicted.

    \b
    Example: kvplan calibrate-speed result.jsonl --model deepseek-ai/DeepSeek-V4.1-Flash --save cal.toml
    """
    out = resolve(SpeedCalibrationAnswer, fmt)
    from kvplan.deployment import Deployment
    from kvplan.inputs.bench import read_bench
    from kvplan.inputs.read import check_output_path, write_output
    from kvplan.perf.calibration import calibration_toml
    from kvplan.planning.calibrate_speed import calibrate_speed

    if save:
        check_output_path(save, field="--save")
    point = read_bench(result)
    r = calibrate_speed(Deployment(**deployment_values("fit", flags)), point)
    if save:
        write_output(save, calibration_toml(r.calibration), field="--save")
    write(SpeedCalibrationAnswer(r, point, saved=save), out)
