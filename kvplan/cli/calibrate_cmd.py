"""``kvplan calibrate LOG``: compare kvplan's measured-mode prediction with a real startup log.

Not attached to an app here; the lead attaches it in kvplan/cli.py with::

    from kvplan.cli.calibrate_cmd import calibrate_cmd
    app.command("calibrate")(calibrate_cmd)

Exit codes: 0 = the log agrees (or no --check), 3 = --check and a checked quantity differs by more than the
tolerance (also when the reader closed the pipe before the whole answer was written:
:func:`kvplan.cli.streams.render_then_check`), 2 = the log lacks what the prediction needs (the message says what
is missing).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli.options import format_option, write
from kvplan.cli.streams import render_then_check
from kvplan.errors import DoesNotFitError, InputError, echo
from kvplan.views.emit import CalibrationAnswer, resolve


def _tolerance(text: str) -> float:
    t = text.strip()
    try:
        val = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise InputError(
            f"'{echo(text)}' is not a tolerance", field="--tolerance", hint="write 0.005 or 0.5%"
        ) from None
    if not (0 <= val < 1):
        raise InputError(f"tolerance {echo(text)} is outside [0, 1)", field="--tolerance", hint="write 0.005 or 0.5%")
    return val


def calibrate_cmd(
    log: str = typer.Argument(..., metavar="LOG", help="SGLang or vLLM startup log file ('-' for stdin)."),
    fmt: Annotated[Optional[str], format_option(CalibrationAnswer)] = None,
    check: bool = typer.Option(
        False, "--check", help="Exit 3 when a checked quantity differs by more than the tolerance."
    ),
    tolerance: str = typer.Option("0.5%", "--tolerance", help="Relative tolerance, e.g. 0.5% or 0.005."),
    model: Optional[str] = typer.Option(
        None, "-m", "--model", help="Model preset / config.json when the log's model path is not a preset."
    ),
    gpu: Optional[str] = typer.Option(None, "-g", "--gpu", help="GPU preset (dtype defaults, runtime-overhead row)."),
    engine_version: Optional[str] = typer.Option(
        None,
        "--engine-version",
        help="Release whose rules to apply (default: the version the log prints, else the newest release its "
        "line formats allow; settles a window that spans a rule change).",
    ),
    tp: Optional[int] = typer.Option(
        None, "--tp-size", "--tensor-parallel-size", "--tp", help="When the log lacks server args."
    ),
    pp: Optional[int] = typer.Option(None, "--pp-size", "--pipeline-parallel-size", "--pp"),
    dp: Optional[int] = typer.Option(None, "--dp-size", "--data-parallel-size", "--dp"),
    ep: Optional[int] = typer.Option(None, "--ep-size", "--expert-parallel-size", "--ep"),
    enable_dp_attention: Optional[bool] = typer.Option(None, "--enable-dp-attention/--no-dp-attention"),
    mem_fraction_static: Optional[float] = typer.Option(None, "--mem-fraction-static"),
    gpu_memory_utilization: Optional[float] = typer.Option(None, "--gpu-memory-utilization"),
    kv_cache_dtype: Optional[str] = typer.Option(None, "--kv-cache-dtype"),
    context_length: Optional[str] = typer.Option(
        None, "--context-length", "--max-model-len", help="Tokens, as fit takes them: 8192, 8k, 1m."
    ),
    max_running_requests: Optional[int] = typer.Option(None, "--max-running-requests", "--max-num-seqs"),
    page_size: Optional[int] = typer.Option(None, "--page-size", "--block-size"),
    chunked_prefill_size: Optional[int] = typer.Option(None, "--chunked-prefill-size", "--max-num-batched-tokens"),
    max_total_tokens: Optional[str] = typer.Option(None, "--max-total-tokens", help="Tokens, as fit takes them."),
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of an internal error."),
) -> None:
    """Compare every quantity a startup log prints with kvplan's prediction from the recovered inputs.

    \b
    Example: kvplan calibrate startup.log --check --tolerance 0.5%
    """
    from kvplan.inputs.logs import read_log
    from kvplan.planning.calibrate import DisagreesError, calibrate
    from kvplan.units import parse_count

    tol = _tolerance(tolerance)
    out_fmt = resolve(CalibrationAnswer, fmt)  # an unknown format: one line before the log is read
    facts = read_log(log)  # '-' is standard input: the same bounded reader and cap as a path
    overrides = {
        k: v
        for k, v in dict(
            engine_version=engine_version,
            tp=tp,
            pp=pp,
            dp=dp,
            ep=ep,
            enable_dp_attention=enable_dp_attention,
            mem_fraction_static=mem_fraction_static,
            gpu_memory_utilization=gpu_memory_utilization,
            kv_cache_dtype=kv_cache_dtype,
            context_length=None if context_length is None else parse_count(context_length, field="--context-length"),
            max_running_requests=max_running_requests,
            page_size=page_size,
            chunked_prefill_size=chunked_prefill_size,
            max_total_tokens=None
            if max_total_tokens is None
            else parse_count(max_total_tokens, field="--max-total-tokens"),
        ).items()
        if v is not None
    }
    cal = calibrate(facts, log=log, model=model, gpu=gpu, overrides=overrides, tolerance=tol)
    failure = ""
    if check and not cal.agrees:
        failure = "log and prediction disagree: " + "; ".join(
            f"{r.quantity} {r.rel:+.2%}" if r.rel is not None else r.quantity for r in cal.flagged if r.checked
        )
    try:  # a reader that closes the pipe mid-answer does not hide a --check failure: still exit 3
        render_then_check(lambda: write(CalibrationAnswer(cal), out_fmt), failure)
    except DoesNotFitError as exc:
        raise DisagreesError(str(exc)) from None
