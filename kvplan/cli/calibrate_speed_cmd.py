"""``kvplan calibrate-speed RESULT [fit's deployment flags]`` (issue 23 item 4): measured vs predicted for every
metric a benchmark result holds, and the calibration that makes the speed model agree (``--save FILE``).

The workload and the measured values come from RESULT (:func:`kvplan.inputs.bench.read_bench`); the server's
configuration from the deployment flags, with ``kvplan fit``'s defaults.  The fit:
:func:`kvplan.planning.calibrate_speed.calibrate_speed`; the file: :mod:`kvplan.perf.calibration`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer

from kvplan.cli.options import deployment_options, deployment_values
from kvplan.views.formats import TABLE_JSON, Format, format_metavar, resolve_format


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
    fmt: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            metavar=format_metavar(TABLE_JSON),
            help="table | json (default: table on a terminal, JSON otherwise).",
        ),
    ] = None,
) -> None:
    """Refit the speed model's efficiency constants from one measured run; print measured vs predicted.

    \b
    Example: kvplan calibrate-speed result.jsonl --model deepseek-ai/DeepSeek-V4.1-Flash --save cal.toml
    """
    out = resolve_format(fmt, allowed=TABLE_JSON, default_when_not_tty=Format.JSON)
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
    if out is Format.JSON:
        typer.echo(json.dumps(r.to_json(), indent=2))
        return
    lines = [
        f"calibrate-speed: {r.deployment}",
        f"measured ({point.source}): {point.input_len:,} in / {point.output_len:,} out, C={point.concurrency}",
        "",
        f"{'metric':<24}{'measured':>12}{'predicted':>12}{'error':>9}{'calibrated':>12}{'error':>9}",
    ]
    lines.extend(
        f"{m.metric:<24}{m.measured:>12,.4g}{m.predicted:>12,.4g}{m.error:>+9.1%}"
        f"{m.calibrated:>12,.4g}{m.calibrated_error:>+9.1%}"
        for m in r.rows
    )
    cal = r.calibration
    lines += [
        "",
        f"GPU class {cal.gpu_class}, engine {cal.engine}: "
        + (", ".join(f"{k} x{v:.3f}" for k, v in sorted(cal.factors.items())) or "no constant refitted")
        + f" (residual {cal.residual:.1%})",
        *r.notes,
    ]
    if save:
        lines.append(f"saved: {save} (use with kvplan speed --calibration {save})")
    typer.echo("\n".join(lines))
