"""``kvplan sweep``, ``kvplan solve`` and ``kvplan check``: command functions, not attached to an app.

The CLI attaches them (``app.command("sweep")(sweep_cmd)`` ...).  They raise
:class:`kvplan.errors.InputError` for bad input (exit 2) and :class:`kvplan.errors.DoesNotFitError`
when a target is not met (exit 3); :class:`kvplan.cli.app.KvplanGroup` turns those into one line.
Arithmetic lives in :mod:`kvplan.planning.sweep`, :mod:`kvplan.planning.solve` and :mod:`kvplan.planning.check`.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from kvplan.errors import DoesNotFitError, InputError

_L = "LIST"  # metavar of a list/range flag


def _console():
    from rich.console import Console

    return Console()


def _out(text: str, output: Optional[str]) -> None:
    if output:
        try:
            with open(output, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        except OSError as exc:
            raise InputError(f"cannot write {output} ({exc.strerror})", field="--output") from None
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


# --------------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------------

def sweep_cmd(
    model: Optional[str] = typer.Option(None, "-m", "--model", metavar=_L, help="Model preset(s), comma-separated."),
    gpu: Optional[str] = typer.Option(None, "-g", "--gpu", metavar=_L, help="GPU preset(s), e.g. h100-sxm,h200-sxm,b200."),
    engine: Optional[str] = typer.Option(None, "--engine", metavar=_L, help="sglang, vllm or sglang,vllm."),
    num_gpus: Optional[str] = typer.Option(None, "--num-gpus", metavar=_L, help="GPUs in the deployment."),
    gpu_memory: Optional[str] = typer.Option(None, "--gpu-memory", metavar=_L, help="Device total override(s) (SIZE)."),
    tp: Optional[str] = typer.Option(None, "--tp-size", "--tensor-parallel-size", "--tp", metavar=_L, help="Tensor parallel sizes, e.g. 1,2,4,8 or 1:8:x2."),
    pp: Optional[str] = typer.Option(None, "--pp-size", "--pipeline-parallel-size", "--pp", metavar=_L, help="Pipeline parallel sizes."),
    dp: Optional[str] = typer.Option(None, "--dp-size", "--data-parallel-size", "--dp", metavar=_L, help="Data parallel sizes."),
    ep: Optional[str] = typer.Option(None, "--ep-size", "--expert-parallel-size", "--ep", metavar=_L, help="Expert parallel sizes."),
    enable_dp_attention: bool = typer.Option(False, "--enable-dp-attention", help="SGLang DP attention."),
    mem_fraction_static: Optional[str] = typer.Option(None, "--mem-fraction-static", metavar=_L, help="e.g. 0.70:0.95:0.05 (inclusive)."),
    gpu_memory_utilization: Optional[str] = typer.Option(None, "--gpu-memory-utilization", metavar=_L, help="vLLM: fractions of the device total."),
    kv_cache_dtype: Optional[str] = typer.Option(None, "--kv-cache-dtype", metavar=_L, help="e.g. bf16,fp8_e4m3."),
    context_length: Optional[str] = typer.Option(None, "--context-length", "--max-model-len", metavar=_L, help="e.g. 32k,128k,1m or 4k:1m:x2."),
    max_running_requests: Optional[str] = typer.Option(None, "--max-running-requests", "--max-num-seqs", metavar=_L, help="Request caps."),
    page_size: Optional[str] = typer.Option(None, "--page-size", "--block-size", metavar=_L, help="Page sizes in tokens."),
    chunked_prefill_size: Optional[str] = typer.Option(None, "--chunked-prefill-size", metavar=_L, help="Chunked prefill sizes."),
    max_total_tokens: Optional[str] = typer.Option(None, "--max-total-tokens", metavar=_L, help="SGLang caps on the pool."),
    free_memory: Optional[str] = typer.Option(None, "--free-memory", metavar=_L, help="Measured free memory per GPU (SIZE)."),
    weight_memory: Optional[str] = typer.Option(None, "--weight-memory", metavar=_L, help="Measured weights per GPU (SIZE)."),
    requests: Optional[str] = typer.Option(None, "--requests", metavar=_L, help="Target requests of the full context at once."),
    attention_backend: Optional[str] = typer.Option(None, "--attention-backend", metavar=_L, help="Attention backend(s)."),
    speculative_algorithm: Optional[str] = typer.Option(None, "--speculative-algorithm", metavar=_L, help="EAGLE, MTP, ..."),
    speculative_num_draft_tokens: Optional[str] = typer.Option(None, "--speculative-num-draft-tokens", metavar=_L, help="Draft tokens per step."),
    disable_radix_cache: bool = typer.Option(False, "--disable-radix-cache", help="SGLang: radix cache off."),
    disable_overlap_schedule: bool = typer.Option(False, "--disable-overlap-schedule", help="SGLang: overlap scheduler off."),
    disable_cuda_graph: bool = typer.Option(False, "--disable-cuda-graph", help="SGLang: CUDA graphs off."),
    enforce_eager: bool = typer.Option(False, "--enforce-eager", help="vLLM: no CUDA graphs."),
    engram_on_host: bool = typer.Option(False, "--engram-on-host", help="DeepSeek-V4.1: engram tables in host memory."),
    fmt: Optional[str] = typer.Option(None, "--format", help="table | csv | jsonl (default: table on a terminal, jsonl otherwise)."),
    sort: Optional[str] = typer.Option(None, "--sort", help="concurrency | gpus | tokens | context | none (table default: concurrency; CSV / JSON lines keep the grid order unless given)."),
    top: int = typer.Option(20, "--top", help="Rows in the table (CSV and JSON lines hold every row)."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write CSV / JSON lines to this file."),
    chart: bool = typer.Option(False, "--chart", help="Draw the capacity frontier (concurrency vs context) in the terminal."),
    plot: Optional[str] = typer.Option(None, "--plot", metavar="FILE", help="Save the frontier as .svg (or .png with matplotlib)."),
    check: bool = typer.Option(False, "--check", help="Exit 3 when no point fits."),
) -> None:
    """Evaluate a grid of deployments: any flag takes a list (a,b,c) or a range (START:STOP[:STEP], xF = geometric)."""
    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import parse_axis, sweep

    if fmt is not None and fmt not in ("table", "csv", "jsonl"):
        raise InputError(f"unknown format '{fmt}'", field="--format", hint="table, csv or jsonl")
    if sort is not None and sort not in ("concurrency", "gpus", "tokens", "context", "none"):
        raise InputError(f"unknown sort '{sort}'", field="--sort", hint="concurrency, gpus, tokens, context or none")
    if top < 0:
        raise InputError(f"must be >= 0, got {top}", field="--top")
    raw = dict(model=model, gpu=gpu, engine=engine, num_gpus=num_gpus, gpu_memory=gpu_memory, tp=tp, pp=pp, dp=dp, ep=ep,
               mem_fraction_static=mem_fraction_static, gpu_memory_utilization=gpu_memory_utilization,
               kv_cache_dtype=kv_cache_dtype, context_length=context_length,
               max_running_requests=max_running_requests, page_size=page_size,
               chunked_prefill_size=chunked_prefill_size, max_total_tokens=max_total_tokens, free_memory=free_memory,
               weight_memory=weight_memory, target_requests=requests, attention_backend=attention_backend,
               speculative_algorithm=speculative_algorithm, speculative_num_draft_tokens=speculative_num_draft_tokens)
    axes = {k: parse_axis(v, field=k) for k, v in raw.items() if v is not None}
    base = Deployment(enable_dp_attention=enable_dp_attention, disable_radix_cache=disable_radix_cache,
                      disable_overlap_schedule=disable_overlap_schedule, disable_cuda_graph=disable_cuda_graph,
                      enforce_eager=enforce_eager, engram_on_host=engram_on_host)
    table = sweep(base, axes)
    fmt = fmt or ("table" if sys.stdout.isatty() else "jsonl")
    series = None
    if chart or plot:
        from kvplan.views.frontier import frontier_series

        series = frontier_series(table)
    if fmt == "table":
        from kvplan.planning.sweep import render_table

        render_table(table, sort=sort or "concurrency", top=top, console=_console())
        if output:
            _out(table.to_csv(table.order(sort or "concurrency")), output)
    else:
        idx = table.order(sort) if sort not in (None, "none") else None
        _out(table.to_csv(idx) if fmt == "csv" else table.to_jsonl(idx), output)
    if series is not None:
        from kvplan.views.frontier import render_terminal, save_plot

        if chart:
            con = _console()
            text = render_terminal(series, width=min(con.width, 120), title="capacity frontier: requests at once vs context")
            (sys.stderr if fmt != "table" and not output else sys.stdout).write(text + "\n")
        if plot:
            save_plot(series, plot)
            print(f"wrote {plot}", file=sys.stderr)
    if check and table.n_fit == 0:
        raise DoesNotFitError(f"none of the {len(table):,} points fits")


# --------------------------------------------------------------------------------------------------
# solve
# --------------------------------------------------------------------------------------------------

def solve_cmd(
    question: str = typer.Argument(..., metavar="QUESTION", help="gpus | mem-fraction | dtype | context | concurrency"),
    model: Optional[str] = typer.Option(None, "-m", "--model", help="Model preset."),
    gpu: Optional[str] = typer.Option(None, "-g", "--gpu", help="GPU preset."),
    engine: str = typer.Option("sglang", "--engine", help="sglang | vllm."),
    tp: Optional[int] = typer.Option(None, "--tp-size", "--tensor-parallel-size", "--tp", help="Fix the TP size (gpus: otherwise searched)."),
    pp: Optional[int] = typer.Option(None, "--pp-size", "--pipeline-parallel-size", "--pp", help="Pipeline parallel size."),
    dp: Optional[int] = typer.Option(None, "--dp-size", "--data-parallel-size", "--dp", help="Fix the DP size (gpus: otherwise searched)."),
    ep: Optional[int] = typer.Option(None, "--ep-size", "--expert-parallel-size", "--ep", help="Expert parallel size."),
    enable_dp_attention: bool = typer.Option(False, "--enable-dp-attention", help="SGLang DP attention."),
    mem_fraction_static: Optional[float] = typer.Option(None, "--mem-fraction-static", help="SGLang memory fraction."),
    gpu_memory_utilization: Optional[float] = typer.Option(None, "--gpu-memory-utilization", help="vLLM memory fraction."),
    kv_cache_dtype: Optional[str] = typer.Option(None, "--kv-cache-dtype", help="KV cache dtype."),
    context_length: Optional[str] = typer.Option(None, "--context-length", "--max-model-len", metavar="INT", help="Target context (context: the upper bound)."),
    max_running_requests: Optional[int] = typer.Option(None, "--max-running-requests", "--max-num-seqs", help="Request cap."),
    requests: Optional[int] = typer.Option(None, "--requests", help="Target requests at once (default --max-running-requests, else 1)."),
    page_size: Optional[int] = typer.Option(None, "--page-size", help="Page size."),
    free_memory: Optional[str] = typer.Option(None, "--free-memory", metavar="SIZE", help="Measured free memory per GPU."),
    weight_memory: Optional[str] = typer.Option(None, "--weight-memory", metavar="SIZE", help="Measured weights per GPU."),
    max_gpus: int = typer.Option(64, "--max-gpus", help="gpus: the largest deployment to consider."),
    fmt: Optional[str] = typer.Option(None, "--format", help="table | json (default: table on a terminal, JSON otherwise)."),
) -> None:
    """Inverse questions: the fewest GPUs, the smallest mem_fraction_static, the cheapest KV dtype, the longest
    context or the most requests that meet a target; every rejected candidate says why. Exit 3 if none does."""
    import json

    from kvplan.deployment import Deployment, validate
    from kvplan.planning.solve import QUESTIONS, render, solve
    from kvplan.units import parse_count, parse_size

    if question not in QUESTIONS:
        raise InputError(f"unknown question '{question}'", field="QUESTION", hint="one of " + ", ".join(QUESTIONS))
    if fmt is not None and fmt not in ("table", "json"):
        raise InputError(f"unknown format '{fmt}'", field="--format", hint="table or json")
    if engine not in ("sglang", "vllm"):
        raise InputError(f"unknown engine '{engine}'", field="--engine", hint="use sglang or vllm")
    if kv_cache_dtype is not None:
        from kvplan.geometry.kvdtype import canonical_kv_dtype

        canonical_kv_dtype(kv_cache_dtype)
    dep = Deployment(
        model=model, gpu=gpu, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep, enable_dp_attention=enable_dp_attention,
        mem_fraction_static=mem_fraction_static, gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_dtype=kv_cache_dtype,
        context_length=parse_count(context_length, field="--context-length") if context_length else None,
        max_running_requests=max_running_requests, target_requests=requests, page_size=page_size,
        free_memory=parse_size(free_memory, field="--free-memory") if free_memory else None,
        weight_memory=parse_size(weight_memory, field="--weight-memory") if weight_memory else None)
    validate(_for_validate(dep))
    if model is not None:
        from kvplan.inputs.resolve import resolve_model

        resolve_model(model)
    if gpu is not None:
        from kvplan.inputs.resolve import resolve_gpu

        resolve_gpu(gpu)
    result = solve(dep, question, max_gpus=max_gpus)
    fmt = fmt or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        render(result, console=_console())
    if not result.solved:
        raise DoesNotFitError(f"no answer: {result.answer_label}")


def _for_validate(dep):
    """``validate`` needs a model name to skip the default deployment; the model itself is resolved later."""
    from dataclasses import replace

    return replace(dep, model=dep.model or "x")


# --------------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------------

def check_cmd(
    plan: str = typer.Argument(..., metavar="PLAN.toml", help="Sizing file: deployments and their targets."),
    report: Optional[str] = typer.Option(None, "--report", metavar="FILE", help="Write a report: FILE.json or FILE.xml (JUnit)."),
    report_format: Optional[str] = typer.Option(None, "--report-format", help="json | junit (default: from the extension)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="table | json (default: table on a terminal, JSON otherwise)."),
) -> None:
    """CI sizing check: plan every deployment of PLAN.toml; exit 3 if any misses its target."""
    from kvplan.planning.check import check, load_plan, render, to_json, write_report

    if fmt is not None and fmt not in ("table", "json"):
        raise InputError(f"unknown format '{fmt}'", field="--format", hint="table or json")
    if report_format is not None and report_format not in ("json", "junit"):
        raise InputError(f"unknown report format '{report_format}'", field="--report-format", hint="json or junit")
    specs = load_plan(plan)
    results = check(specs, path=plan)
    fmt = fmt or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        typer.echo(to_json(results, path=plan), nl=False)
    else:
        render(results, path=plan, console=_console())
    if report:
        write_report(results, report, fmt=report_format, path=plan)
    failed = [r.name for r in results if not r.passed]
    if failed:
        raise DoesNotFitError(f"{len(failed)} of {len(results)} deployment(s) miss their target: " + ", ".join(failed))
