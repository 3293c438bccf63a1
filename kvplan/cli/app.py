"""Command line: parse, call the library, render.  No arithmetic lives here.

Errors are translated in one place, :class:`KvplanGroup.main`: a user mistake (``InputError`` or a
usage error) prints one line on stderr and exits 2; ``--check`` exits 3 when the target does not
fit; anything unexpected prints a one-line internal error and exits 1 (``--debug`` shows the traceback).

The deployment flags of ``fit`` (and of ``sweep`` / ``solve``, :mod:`kvplan.cli.plan_cmds`) come from the flag
registry (:mod:`kvplan.flags`, built into typer options by :mod:`kvplan.cli.options`); the renderers live in
:mod:`kvplan.views`, and :func:`kvplan.views.formats.resolve_format` picks every command's default format.
"""

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from kvplan.cli.options import deployment_options, deployment_values
from kvplan.errors import DoesNotFitError, InputError, KvplanError
from kvplan.flags import ENGINES
from kvplan.views.formats import TABLE_JSON_CSV, Format, format_metavar, resolve_format


def _click_exceptions() -> Any:
    """click's exception module: vendored by typer >= 0.24, the real click before."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:  # pragma: no cover - older typer on real click
        return importlib.import_module("click.exceptions")


_EXC = _click_exceptions()
ClickException = _EXC.ClickException
UsageError = _EXC.UsageError
NoArgsIsHelpError = getattr(_EXC, "NoArgsIsHelpError", ())

_DEBUG = False


def _internal_error(exc: Exception) -> str:
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    return (f"kvplan: internal error: {type(exc).__name__}: {first}"
            " (rerun with --debug for the traceback, and please report it)")


class KvplanGroup(TyperGroup):
    """The single translation point from exceptions to exit codes and one-line messages."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        global _DEBUG
        argv = list(sys.argv[1:] if args is None else args)
        _DEBUG = "--debug" in argv or os.environ.get("KVPLAN_DEBUG") == "1"
        try:
            rv = super().main(args=argv, prog_name=prog_name or "kvplan", complete_var=complete_var,
                              standalone_mode=False, windows_expand_args=windows_expand_args, **extra)
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
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        except (BrokenPipeError, KeyboardInterrupt):
            sys.exit(130)
        except Exception as exc:
            if _DEBUG:
                raise
            typer.echo(_internal_error(exc), err=True)
            sys.exit(1)
        if isinstance(rv, int) and rv:
            sys.exit(rv)
        return rv


_HELP = ("kvplan: how big the KV cache is, the longest context and how many requests run at once, "
         "the way SGLang and vLLM size them at startup.")


def new_app() -> typer.Typer:
    """An empty kvplan app: one error translation (:class:`KvplanGroup`), no completion, plain help."""
    return typer.Typer(cls=KvplanGroup, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                       pretty_exceptions_enable=False, help=_HELP)


_core = new_app()  # fit, models, gpus, show, version; `app` adds the planning commands
_FORMAT_HELP = "table | json | csv"
_FormatOption = Annotated[Optional[str], typer.Option("--format", metavar=format_metavar(TABLE_JSON_CSV),
                                                      help=_FORMAT_HELP)]


def _engines(engine: str | None) -> list[str]:
    """``--engine sglang,vllm`` -> ["sglang", "vllm"] (side by side); default sglang."""
    text = engine or "sglang"
    engines = [e.strip().lower() for e in text.split(",") if e.strip()]
    if not engines or any(e not in ENGINES for e in engines):
        raise InputError(f"unknown engine '{text}'", field="--engine", hint="use sglang, vllm or sglang,vllm")
    return engines


def _launch(args: list[str], from_launch: str | None) -> tuple[str, dict[str, Any], list[str]]:
    """(engine, Deployment fields, warnings) of the launch command after ``--`` or in ``--from-launch FILE``."""
    from kvplan.inputs.launch import parse_launch_command, read_launch_text

    if args and from_launch is not None:
        raise InputError("give the launch command either after '--' or with --from-launch, not both",
                         field="--from-launch")
    parsed = parse_launch_command(args if args else read_launch_text(str(from_launch)))
    return parsed.engine, {k: v for k, v in parsed.fields.items() if v is not None}, parsed.warnings()


def _from_log(log: str, given: dict[str, Any], *, model: str | None, gpu: str | None, out: Format,
              check: bool) -> None:
    """``kvplan fit --from-log LOG [flags]``: the log's deployment and the what-if of the flags given
    (``model`` / ``gpu``: the --model / --gpu options, for a log whose model or GPU is not a preset)."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.whatif import whatif
    from kvplan.views.whatif import render_whatif

    over = {k: v for k, v in given.items() if k not in ("model", "gpu")}
    w = whatif(read_log_file(log), over, model=model, gpu=gpu)
    typer.echo(render_whatif(w, out.value), nl=False)
    if check and not w.whatif.fits:
        raise DoesNotFitError(w.whatif.verdict)


@_core.command("fit", context_settings={"allow_extra_args": True})
@deployment_options("fit")
def fit_cmd(
    ctx: typer.Context,
    *,
    flags: dict[str, Any],
    from_launch: Annotated[Optional[str], typer.Option(
        "--from-launch", metavar="FILE",
        help="Read an SGLang/vLLM launch command from FILE ('-' = stdin); a command can also follow '--'.")] = None,
    from_log: Annotated[Optional[str], typer.Option(
        "--from-log", metavar="LOG",
        help="Take the deployment and the measured baseline from an SGLang/vLLM startup log; the flags given "
             "change it (what-if, side by side).")] = None,
    fmt: Annotated[Optional[str], typer.Option(
        "--format", metavar=format_metavar(TABLE_JSON_CSV),
        help="table | json | csv (default: table on a terminal, JSON otherwise).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 3 when the target does not fit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
) -> None:
    """Plan one deployment: KV bytes per token, budget, pool tokens, longest context, concurrency, verdict.

    With no --model, the project's default deployment applies (DeepSeek-V4.1-Flash, 8x RTX PRO 6000
    Blackwell Max-Q, SGLang, TP8/EP8, fp8 KV, mem_fraction_static 0.72, 1M context, 16 requests); with a
    --model, unset flags take the engine's own defaults.
    """
    out = resolve_format(fmt, allowed=TABLE_JSON_CSV, default_when_not_tty=Format.JSON)
    engine = flags["engine"]
    engines = _engines(engine)
    given = deployment_values("fit", {**flags, "engine": engine and engines[0]})
    launch_warnings: list[str] = []
    if ctx.args or from_launch is not None:
        launch_engine, fields, launch_warnings = _launch(list(ctx.args), from_launch)
        given = {**fields, **given}
        if engine is None:
            engines = [launch_engine]
    if from_log is not None:
        _from_log(from_log, given, model=flags["model"], gpu=flags["gpu"], out=out, check=check)
        return
    from dataclasses import replace

    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    dep = Deployment(**{**given, "engine": engines[0]})
    results = [fit(replace(dep, engine=e)) for e in engines]
    for r in results:
        r.warnings.extend(launch_warnings)
    from kvplan.views import render

    if out is Format.TABLE:
        render.print_fit(results)
    else:
        typer.echo(render.fit_text(results, out), nl=False)
    if check and not all(r.fits for r in results):
        raise DoesNotFitError("; ".join(r.verdict for r in results if not r.fits))


def _print_rows(rows: list[dict[str, Any]], out: Format, *, title: str,
                info: dict[str, Any] | None = None) -> None:
    from kvplan.views.listing import info_text, print_rows, rows_text

    if out is Format.TABLE:
        if info:
            typer.echo(info_text(info), nl=False)
        print_rows(rows, title=title)
    else:
        typer.echo(rows_text(rows, out, info=info), nl=False)


@_core.command("models")
def models_cmd(fmt: _FormatOption = None) -> None:
    """List the model presets."""
    out = resolve_format(fmt, allowed=TABLE_JSON_CSV, default_when_not_tty=Format.JSON)
    from kvplan.hfconfig.spec import detect_family, flatten_config
    from kvplan.inputs import presets

    rows = []
    for m in presets.all_models():
        cfg = flatten_config(m.config)
        rows.append({"id": m.id, "family": detect_family(cfg), "layers": cfg.get("num_hidden_layers"),
                     "quantization": m.weights.quantization, "aliases": ", ".join(m.aliases),
                     "variants": ", ".join(v.id for v in m.variants)})
    _print_rows(rows, out, title="model presets")


@_core.command("gpus")
def gpus_cmd(fmt: _FormatOption = None) -> None:
    """List the hardware presets."""
    out = resolve_format(fmt, allowed=TABLE_JSON_CSV, default_when_not_tty=Format.JSON)
    from kvplan.inputs import presets

    rows = [{"id": g.id, "name": g.name, "nvidia_smi_mib": g.memory_mib,
             "cuda_total_gib": round(g.device_bytes / 2**30, 2) if g.cuda_total_bytes else None,
             "interconnect": g.interconnect, "sm": g.sm, "fp8": g.fp8, "fp4": g.fp4} for g in presets.all_gpus()]
    _print_rows(rows, out, title="GPU presets")


@_core.command("show")
def show_cmd(
    model: Annotated[str, typer.Argument(help="Preset id, alias, or config.json / model folder.")],
    gpu: Annotated[Optional[str], typer.Option("-g", "--gpu", help="GPU (changes dtype defaults and layouts).")] = None,
    fmt: _FormatOption = None,
) -> None:
    """Model geometry and KV bytes per token by dtype and TP."""
    out = resolve_format(fmt, allowed=TABLE_JSON_CSV, default_when_not_tty=Format.JSON)
    from kvplan.planning.show import show_rows

    info, rows = show_rows(model, gpu)
    _print_rows(rows, out, title="KV bytes per token per GPU (SGLang 0.5.23)", info=info)


@_core.command("version")
def version_cmd() -> None:
    """Print kvplan's version and the engine versions it models."""
    from kvplan import __version__

    typer.echo(f"kvplan {__version__} (SGLang 0.5.23, vLLM 0.33.0 rules)")


def _root() -> None:
    """kvplan: how big the KV cache is, the longest context and how many requests run at once, the way SGLang and
    vLLM size them at startup."""


_FULL: typer.Typer | None = None
_PLAN_COMMANDS = ("sweep", "solve", "check", "calibrate")


def _full_app() -> typer.Typer:
    """The whole CLI: the core commands plus sweep / solve / check / calibrate (their modules load here)."""
    global _FULL
    if _FULL is None:
        from kvplan.cli.calibrate_cmd import calibrate_cmd
        from kvplan.cli.plan_cmds import check_cmd, solve_cmd, sweep_cmd

        full = new_app()
        full.registered_commands.extend(_core.registered_commands)
        full.command("sweep")(sweep_cmd)
        full.command("solve")(solve_cmd)
        full.command("check")(check_cmd)
        full.command("calibrate")(calibrate_cmd)
        _FULL = full
    return _FULL


def __getattr__(name: str) -> Any:
    """``kvplan.cli.app.app`` is the whole CLI, built on first use (PEP 562)."""
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _single_command_app(name: str) -> typer.Typer | None:
    """An app holding only the command being run: typer builds every registered command's parameters at each
    start, so ``kvplan fit`` should not pay for sweep's, solve's, check's and calibrate's (a few ms each)."""
    source = _full_app() if name in _PLAN_COMMANDS else _core
    for info in source.registered_commands:
        if info.name == name:
            one = new_app()
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
