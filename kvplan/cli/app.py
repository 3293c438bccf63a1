"""Command line: parse, call the library, render.  No arithmetic lives here.

Errors are translated in one place, :class:`KvplanGroup.main`: a user mistake (``InputError`` or a
usage error) prints one line on stderr and exits 2; ``--check`` exits 3 when the target does not
fit; anything unexpected prints a one-line internal error and exits 1 (``--debug`` shows the traceback).
"""


import os
import sys
from enum import Enum
from typing import Optional

import typer
from typer.core import TyperGroup

from kvplan.errors import DoesNotFitError, InputError, KvplanError

try:  # typer >= 0.24 vendors click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer on real click
    from click.exceptions import ClickException, UsageError

    NoArgsIsHelpError = ()  # type: ignore[assignment]

_DEBUG = False


class KvplanGroup(TyperGroup):
    """The single translation point from exceptions to exit codes and one-line messages."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        global _DEBUG
        argv = list(sys.argv[1:] if args is None else args)
        _DEBUG = "--debug" in argv or os.environ.get("KVPLAN_DEBUG") == "1"
        try:
            rv = super().main(args=argv, prog_name=prog_name or "kvplan", complete_var=complete_var,
                              standalone_mode=False, **extra)
        except KvplanError as exc:
            typer.echo(f"kvplan: error: {exc.one_line()}" if exc.exit_code != 3 else f"kvplan: {exc.one_line()}",
                       err=True)
            sys.exit(exc.exit_code)
        except NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx else "kvplan --help")
            sys.exit(0)
        except UsageError as exc:
            msg = " ".join(exc.format_message().split())
            cmd = exc.ctx.command_path if exc.ctx else "kvplan"
            typer.echo(f"kvplan: error: {msg} (see '{cmd} --help')", err=True)
            sys.exit(2)
        except ClickException as exc:
            typer.echo(f"kvplan: error: {' '.join(exc.format_message().split())}", err=True)
            sys.exit(exc.exit_code or 2)
        except typer.Abort:
            typer.echo("kvplan: aborted", err=True)
            sys.exit(130)
        except (BrokenPipeError, KeyboardInterrupt):
            sys.exit(130)
        except Exception as exc:
            if _DEBUG:
                raise
            typer.echo(f"kvplan: internal error: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                       " (rerun with --debug for the traceback, and please report it)", err=True)
            sys.exit(1)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        if isinstance(rv, int) and rv:
            sys.exit(rv)
        return rv


_APP_SETTINGS = dict(cls=KvplanGroup, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                     pretty_exceptions_enable=False,
                     help="kvplan: how big the KV cache is, the longest context and how many requests run at once, "
                          "the way SGLang and vLLM size them at startup.")
_core = typer.Typer(**_APP_SETTINGS)  # fit, models, gpus, show, version; `app` adds the planning commands


class Fmt(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


def _size(value: Optional[str], flag: str) -> Optional[int]:
    if value is None:
        return None
    from kvplan.units import parse_size

    return parse_size(value, field=flag)


def _count(value: Optional[str], flag: str) -> Optional[int]:
    if value is None:
        return None
    from kvplan.units import parse_count

    return parse_count(value, field=flag)


def _emit(results, fmt: Optional[Fmt]) -> None:
    from kvplan.views import render

    fmt = fmt or (Fmt.table if sys.stdout.isatty() else Fmt.json)
    if fmt is Fmt.json:
        if len(results) == 1:
            typer.echo(render.to_json(results[0]))
        else:
            typer.echo("[" + ",\n".join(render.to_json(r) for r in results) + "]")
    elif fmt is Fmt.csv:
        typer.echo(render.to_csv(results), nl=False)
    elif len(results) > 1:
        render.compare_table(results)
    else:
        render.table(results[0])


_SIZE = "SIZE"


@_core.command("fit", context_settings={"allow_extra_args": True})
def fit_cmd(
    ctx: typer.Context,
    model: Optional[str] = typer.Option(None, "-m", "--model", help="Preset id (HF id such as deepseek-ai/DeepSeek-V3), alias, or a config.json / model folder. Default: the DeepSeek-V4.1-Flash deployment."),
    gpu: Optional[str] = typer.Option(None, "-g", "--gpu", help="GPU preset id or the name nvidia-smi / rocm-smi prints. Default: rtx-pro-6000-maxq."),
    num_gpus: Optional[int] = typer.Option(None, "--num-gpus", help="GPUs in the deployment (default tp x pp x dp)."),
    gpu_memory: Optional[str] = typer.Option(None, "--gpu-memory", metavar=_SIZE, help="Device total override (CUDA-visible), e.g. 79.19GiB."),
    engine: Optional[str] = typer.Option(None, "--engine", help="sglang | vllm (or 'sglang,vllm' side by side). Default: sglang."),
    engine_version: Optional[str] = typer.Option(None, "--engine-version", help="Engine version whose rules apply (default: the newest modelled)."),
    tp: Optional[int] = typer.Option(None, "--tp-size", "--tensor-parallel-size", "--tp", help="Tensor parallel size."),
    pp: Optional[int] = typer.Option(None, "--pp-size", "--pipeline-parallel-size", "--pp", help="Pipeline parallel size."),
    dp: Optional[int] = typer.Option(None, "--dp-size", "--data-parallel-size", "--dp", help="Data parallel size."),
    ep: Optional[int] = typer.Option(None, "--ep-size", "--expert-parallel-size", "--ep", help="Expert parallel size (weights only)."),
    dcp_size: Optional[int] = typer.Option(None, "--dcp-size", help="SGLang decode context parallel size (rows split across the group)."),
    pp_layer_partition: Optional[str] = typer.Option(None, "--pp-layer-partition", help="Layers per PP stage, e.g. 30,31 (SGLANG_PP_LAYER_PARTITION)."),
    enable_dp_attention: bool = typer.Option(False, "--enable-dp-attention", help="SGLang DP attention: dp attention ranks inside the TP group."),
    mem_fraction_static: Optional[float] = typer.Option(None, "--mem-fraction-static", help="SGLang: fraction of the free memory at start for weights + KV (default: SGLang's heuristic)."),
    gpu_memory_utilization: Optional[float] = typer.Option(None, "--gpu-memory-utilization", help="vLLM: fraction of the device total."),
    kv_cache_dtype: Optional[str] = typer.Option(None, "--kv-cache-dtype", help="auto | bf16 | fp16 | fp8_e4m3 | fp8_e5m2 | ..."),
    context_length: Optional[str] = typer.Option(None, "--context-length", "--max-model-len", metavar="INT", help="Context length in tokens (131072, 128k, 1m). Default: the model's."),
    max_running_requests: Optional[int] = typer.Option(None, "--max-running-requests", "--max-num-seqs", help="Request cap (also the default target)."),
    page_size: Optional[int] = typer.Option(None, "--page-size", "--block-size", help="KV page / block size in tokens."),
    chunked_prefill_size: Optional[int] = typer.Option(None, "--chunked-prefill-size", "--max-num-batched-tokens", help="Chunked prefill size (-1 disables)."),
    max_total_tokens: Optional[int] = typer.Option(None, "--max-total-tokens", help="SGLang cap on the pool in tokens."),
    kv_cache_memory_bytes: Optional[str] = typer.Option(None, "--kv-cache-memory-bytes", metavar=_SIZE, help="vLLM: KV memory per GPU, replacing the whole budget."),
    free_memory: Optional[str] = typer.Option(None, "--free-memory", metavar=_SIZE, help="Measured free memory per GPU at start, before weights (SGLang 'Load weight begin. avail mem=')."),
    weight_memory: Optional[str] = typer.Option(None, "--weight-memory", metavar=_SIZE, help="Measured per-GPU weight load (SGLang 'mem usage=', vLLM 'Model loading took')."),
    activation_memory: Optional[str] = typer.Option(None, "--activation-memory", metavar=_SIZE, help="vLLM: measured peak activation memory."),
    non_torch_memory: Optional[str] = typer.Option(None, "--non-torch-memory", metavar=_SIZE, help="vLLM: measured non-torch memory."),
    cuda_graph_memory: Optional[str] = typer.Option(None, "--cuda-graph-memory", metavar=_SIZE, help="vLLM: measured CUDA-graph memory."),
    requests: Optional[int] = typer.Option(None, "--requests", help="Target: requests of the full context that must run at once (default: --max-running-requests, else 1)."),
    attention_backend: Optional[str] = typer.Option(None, "--attention-backend", help="Engine attention backend (affects page size / DSA and DeepSeek-V4 layouts)."),
    dsv4_attn_backend: Optional[str] = typer.Option(None, "--dsv4-attn-backend", help="SGLang DeepSeek-V4: auto | flashmla | flashmla_mega | trtllm (picks the KV row layout)."),
    disable_radix_cache: bool = typer.Option(False, "--disable-radix-cache", help="SGLang: radix cache off."),
    disable_overlap_schedule: bool = typer.Option(False, "--disable-overlap-schedule", help="SGLang: overlap scheduler off."),
    disable_cuda_graph: bool = typer.Option(False, "--disable-cuda-graph", help="SGLang: CUDA graphs off."),
    enforce_eager: bool = typer.Option(False, "--enforce-eager", help="vLLM: no CUDA graphs."),
    swa_full_tokens_ratio: Optional[float] = typer.Option(None, "--swa-full-tokens-ratio", help="SGLang hybrid SWA: SWA tokens per full token."),
    mamba_full_memory_ratio: Optional[float] = typer.Option(None, "--mamba-full-memory-ratio", help="SGLang Mamba hybrids: state : KV memory ratio (default 0.9)."),
    max_mamba_cache_size: Optional[int] = typer.Option(None, "--max-mamba-cache-size", help="SGLang Mamba hybrids: state slots per DP rank."),
    mamba_ssm_dtype: Optional[str] = typer.Option(None, "--mamba-ssm-dtype", help="SGLang Mamba hybrids: SSM state dtype (default fp32)."),
    speculative_algorithm: Optional[str] = typer.Option(None, "--speculative-algorithm", help="EAGLE | EAGLE3 | NEXTN | MTP | STANDALONE."),
    speculative_num_draft_tokens: Optional[int] = typer.Option(None, "--speculative-num-draft-tokens", help="Draft tokens per step."),
    engram_on_host: bool = typer.Option(False, "--engram-on-host", help="DeepSeek-V4.1: engram tables in host memory (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1)."),
    from_launch: Optional[str] = typer.Option(None, "--from-launch", metavar="FILE", help="Read an SGLang/vLLM launch command from FILE ('-' = stdin); a command can also follow '--'."),
    from_log: Optional[str] = typer.Option(None, "--from-log", metavar="LOG", help="Take the deployment and the measured baseline from an SGLang/vLLM startup log; the flags given change it (what-if, side by side)."),
    fmt: Optional[Fmt] = typer.Option(None, "--format", help="table | json | csv (default: table on a terminal, JSON otherwise)."),
    check: bool = typer.Option(False, "--check", help="Exit 3 when the target does not fit."),
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of an internal error."),
) -> None:
    """Plan one deployment: KV bytes per token, budget, pool tokens, longest context, concurrency, verdict.

    With no --model, the project's default deployment applies (DeepSeek-V4.1-Flash, 8x RTX PRO 6000
    Blackwell Max-Q, SGLang, TP8/EP8, fp8 KV, mem_fraction_static 0.72, 1M context, 16 requests); with a
    --model, unset flags take the engine's own defaults.
    """
    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    engine_text = engine or "sglang"
    engines = [e.strip().lower() for e in engine_text.split(",") if e.strip()]
    if not engines or any(e not in ("sglang", "vllm") for e in engines):
        raise InputError(f"unknown engine '{engine_text}'", field="--engine", hint="use sglang, vllm or sglang,vllm")
    given = dict(
        model=model, gpu=gpu, num_gpus=num_gpus, gpu_memory=_size(gpu_memory, "--gpu-memory"),
        engine=engine and engines[0], engine_version=engine_version, tp=tp, pp=pp, dp=dp, ep=ep,
        enable_dp_attention=enable_dp_attention, mem_fraction_static=mem_fraction_static,
        dcp_size=dcp_size, pp_layer_partition=pp_layer_partition,
        gpu_memory_utilization=gpu_memory_utilization, kv_cache_dtype=kv_cache_dtype,
        context_length=_count(context_length, "--context-length"), max_running_requests=max_running_requests,
        page_size=page_size, chunked_prefill_size=chunked_prefill_size, max_total_tokens=max_total_tokens,
        kv_cache_memory_bytes=_size(kv_cache_memory_bytes, "--kv-cache-memory-bytes"),
        free_memory=_size(free_memory, "--free-memory"), weight_memory=_size(weight_memory, "--weight-memory"),
        activation_memory=_size(activation_memory, "--activation-memory"),
        non_torch_memory=_size(non_torch_memory, "--non-torch-memory"),
        cuda_graph_memory=_size(cuda_graph_memory, "--cuda-graph-memory"),
        attention_backend=attention_backend, dsv4_attn_backend=dsv4_attn_backend, disable_radix_cache=disable_radix_cache,
        disable_overlap_schedule=disable_overlap_schedule, disable_cuda_graph=disable_cuda_graph,
        enforce_eager=enforce_eager, swa_full_tokens_ratio=swa_full_tokens_ratio,
        mamba_full_memory_ratio=mamba_full_memory_ratio, max_mamba_cache_size=max_mamba_cache_size,
        mamba_ssm_dtype=mamba_ssm_dtype,
        speculative_algorithm=speculative_algorithm, speculative_num_draft_tokens=speculative_num_draft_tokens,
        engram_on_host=engram_on_host, target_requests=requests,
    )
    given = {k: v for k, v in given.items() if v is not None and v is not False}
    launch_warnings: list[str] = []
    if ctx.args or from_launch is not None:
        from kvplan.inputs.launch import parse_launch_command, read_launch_text

        if ctx.args and from_launch is not None:
            raise InputError("give the launch command either after '--' or with --from-launch, not both",
                             field="--from-launch")
        parsed = parse_launch_command(list(ctx.args) if ctx.args else read_launch_text(from_launch))
        launch_warnings = parsed.warnings()
        given = {**{k: v for k, v in parsed.fields.items() if v is not None}, **given}
        if engine is None:
            engines = [parsed.engine]
    if from_log is not None:
        from kvplan.inputs.logs import read_log_file
        from kvplan.planning.whatif import render_whatif, whatif

        over = {k: v for k, v in given.items() if k not in ("model", "gpu")}
        w = whatif(read_log_file(from_log), over, model=model, gpu=gpu)
        out_fmt = fmt or (Fmt.table if sys.stdout.isatty() else Fmt.json)
        typer.echo(render_whatif(w, out_fmt.value), nl=False)
        if check and not w.whatif.fits:
            raise DoesNotFitError(w.whatif.verdict)
        return
    dep = Deployment(**{**given, "engine": engines[0]})
    from dataclasses import replace

    results = [fit(replace(dep, engine=e)) for e in engines]
    for r in results:
        r.warnings.extend(launch_warnings)
    _emit(results, fmt)
    if check and not all(r.fits for r in results):
        raise DoesNotFitError("; ".join(r.verdict for r in results if not r.fits))


@_core.command("models")
def models_cmd(fmt: Optional[Fmt] = typer.Option(None, "--format", help="table | json | csv")) -> None:
    """List the model presets."""
    from kvplan.hfconfig.spec import detect_family, flatten_config
    from kvplan.inputs import presets

    rows = []
    for m in presets.all_models():
        cfg = flatten_config(m.config)
        rows.append({"id": m.id, "family": detect_family(cfg), "layers": cfg.get("num_hidden_layers"),
                     "quantization": m.weights.quantization, "aliases": ", ".join(m.aliases),
                     "variants": ", ".join(v.id for v in m.variants)})
    _emit_rows(rows, fmt, title="model presets")


@_core.command("gpus")
def gpus_cmd(fmt: Optional[Fmt] = typer.Option(None, "--format", help="table | json | csv")) -> None:
    """List the hardware presets."""
    from kvplan.inputs import presets

    rows = [{"id": g.id, "name": g.name, "nvidia_smi_mib": g.memory_mib,
             "cuda_total_gib": round(g.device_bytes / 2**30, 2) if g.cuda_total_bytes else None,
             "interconnect": g.interconnect, "sm": g.sm, "fp8": g.fp8, "fp4": g.fp4} for g in presets.all_gpus()]
    _emit_rows(rows, fmt, title="GPU presets")


@_core.command("show")
def show_cmd(
    model: str = typer.Argument(..., help="Preset id, alias, or config.json / model folder."),
    gpu: Optional[str] = typer.Option(None, "-g", "--gpu", help="GPU (changes dtype defaults and layouts)."),
    fmt: Optional[Fmt] = typer.Option(None, "--format", help="table | json | csv"),
) -> None:
    """Model geometry and KV bytes per token by dtype and TP."""
    from kvplan.planning.show import show_rows

    info, rows = show_rows(model, gpu)
    if (fmt or (Fmt.table if sys.stdout.isatty() else Fmt.json)) is Fmt.table:
        typer.echo("\n".join(f"{k}: {v}" for k, v in info.items()))
    _emit_rows(rows, fmt, title="KV bytes per token per GPU (SGLang 0.5.23)", info=info)


def _emit_rows(rows: list[dict], fmt: Optional[Fmt], *, title: str, info: dict | None = None) -> None:
    import csv
    import io
    import json

    fmt = fmt or (Fmt.table if sys.stdout.isatty() else Fmt.json)
    if fmt is Fmt.json:
        typer.echo(json.dumps({**(info or {}), "rows": rows} if info else rows, indent=2))
    elif fmt is Fmt.csv:
        buf = io.StringIO()
        if rows:
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        typer.echo(buf.getvalue(), nl=False)
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=title, title_justify="left")
        for k in (rows[0] if rows else {}):
            t.add_column(k)
        for r in rows:
            t.add_row(*("" if v is None else f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
                        for v in r.values()))
        Console().print(t)




@_core.command("version")
def version_cmd() -> None:
    """Print kvplan's version and the engine versions it models."""
    from kvplan import __version__

    typer.echo(f"kvplan {__version__} (SGLang 0.5.23, vLLM 0.33.0 rules)")


def _root() -> None:
    """kvplan: how big the KV cache is, the longest context and how many requests run at once, the way SGLang and
    vLLM size them at startup."""


_FULL = None
_PLAN_COMMANDS = ("sweep", "solve", "check", "calibrate")


def _full_app():
    """The whole CLI: the core commands plus sweep / solve / check / calibrate (their modules load here)."""
    global _FULL
    if _FULL is None:
        from kvplan.cli.calibrate_cmd import calibrate_cmd
        from kvplan.cli.plan_cmds import check_cmd, solve_cmd, sweep_cmd

        full = typer.Typer(**_APP_SETTINGS)
        full.registered_commands.extend(_core.registered_commands)
        full.command("sweep")(sweep_cmd)
        full.command("solve")(solve_cmd)
        full.command("check")(check_cmd)
        full.command("calibrate")(calibrate_cmd)
        _FULL = full
    return _FULL


def __getattr__(name: str):
    """``kvplan.cli.app.app`` is the whole CLI, built on first use (PEP 562)."""
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _single_command_app(name: str):
    """An app holding only the command being run: typer builds every registered command's parameters at each
    start, so ``kvplan fit`` should not pay for sweep's, solve's, check's and calibrate's (a few ms each)."""
    source = _full_app() if name in _PLAN_COMMANDS else _core
    for info in source.registered_commands:
        if info.name == name:
            one = typer.Typer(**_APP_SETTINGS)
            one.registered_commands.append(info)
            one.callback()(_root)  # keeps the group form: `kvplan NAME ...`
            return one
    return None


def main() -> None:
    """Console entry point.  Runs the command, flushes the output and leaves with ``os._exit``: a planner that
    has printed its answer has nothing to tear down, and skipping the interpreter's module teardown saves a
    noticeable share of a ~80 ms run (docs/performance.md)."""
    argv = sys.argv[1:]
    one = _single_command_app(argv[0]) if argv and not argv[0].startswith("-") else None
    code = 0
    try:
        (one or _full_app())()
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError, OSError):
        code = code or 0
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
