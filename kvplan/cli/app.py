"""Command line: parse, call the library, render.  No arithmetic lives here.

Errors are translated in one place, :class:`KvplanGroup.main` (and, for the last flush, :func:`main`):

* a user mistake (``InputError`` or a usage error) prints one line on stderr and exits 2;
* ``--check`` exits 3 when the target is not met;
* a closed stdout (``kvplan fit | head -1``: the reader stopped reading) exits 0 quietly, as ``cat`` or ``grep``
  do under ``head``, and never prints a traceback;
* an output that fails to take the text (``kvplan models > /dev/full``: no space, an I/O error) prints one line
  ``kvplan: error: cannot write the output (...)`` and exits 1;
* anything unexpected prints a one-line internal error and exits 1 (``--debug`` shows the traceback).

On a stream that cannot encode Unicode (``PYTHONIOENCODING=ascii``) characters print as ASCII fallbacks
(:func:`kvplan.views.console.install_ascii_fallback`), tables in ASCII boxes.

The deployment flags of ``fit`` (and of ``sweep`` / ``solve``, :mod:`kvplan.cli.plan_cmds`) come from the flag
registry (:mod:`kvplan.flags`, built into typer options by :mod:`kvplan.cli.options`); the renderers live in
:mod:`kvplan.views`: a command builds its answer and writes it with :func:`kvplan.cli.options.write`
(:func:`kvplan.views.emit.emit`, the one registry of formats; :func:`kvplan.views.emit.resolve` picks every
command's default format), and never looks at the format itself.
``kvplan --version`` / ``-V`` prints the first line of ``kvplan version``; ``--install-completion`` and
``--show-completion`` (typer's shell completion) are options of the whole CLI only, so the one-command app
``kvplan fit`` runs in (:func:`_single_command_app`) does not pay for them.

Start-up (docs/performance.md): the cyclic garbage collector is paused while this module and what it imports load
(typer, click and kvplan's option tables allocate tens of thousands of long-lived objects, and every automatic
collection would walk them again: about 4% of a ``kvplan fit``).  At the end of the import the objects alive then
(modules, functions, option tables: they live as long as the process) are moved to the collector's permanent
generation (``gc.freeze``) and the collector is resumed as the importer had it, so the command's own collections
walk only what the command allocates.
"""
# ruff: noqa: E402  (the collector is paused before the imports below)

import gc

_GC_WAS_ENABLED = gc.isenabled()
gc.disable()  # resumed at the end of this module (_resume_gc)

import errno
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from kvplan.cli.options import deployment_options, deployment_values, format_option, write
from kvplan.cli.streams import closed_pipe, output_exit, output_failure, render_then_check, silence_stdout
from kvplan.errors import ECHO_CHARS, MAX_LINE_CHARS, InputError, KvplanError, echo, mask_secrets
from kvplan.flags import ENGINES
from kvplan.views.emit import FitAnswer, Listing, WhatIfAnswer, resolve


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


#: a quoted part, or a word, longer than ECHO_CHARS: user input that click or an unexpected exception repeated
#: (a pattern compiled by re's cache on the first error line: a run without an error never compiles it)
_LONG_INPUT = rf"'([^']{{{ECHO_CHARS + 1},}})'|(\S{{{ECHO_CHARS + 1},}})"


def _cut(m: re.Match[str]) -> str:
    return f"'{echo(m.group(1))}'" if m.group(1) is not None else echo(m.group(2))


def safe_line(text: str, limit: int = MAX_LINE_CHARS, *, cut_input: bool = True) -> str:
    """``text`` as one printable error line: whitespace collapsed, credentials masked (:func:`kvplan.errors.
    mask_secrets`, before any cut, so a cut never leaves half a password), with ``cut_input`` each quoted part and
    each word longer than ECHO_CHARS cut by :func:`kvplan.errors.echo` (the input click or an unexpected exception
    repeated), control characters escaped and the whole cut to ``limit`` characters.  kvplan's own messages
    (:meth:`kvplan.errors.KvplanError.one_line`) echo their input already and pass ``cut_input=False``.

    Example: ``safe_line("Invalid value for '--tp': '" + "9" * 5000 + "' is not a valid integer.")`` ->
    ``"Invalid value for '--tp': '999...999... (5,000 characters)' is not a valid integer."`` (80 nines);
    ``safe_line("cannot reach https://me:pw@hub (refused)")`` -> ``"cannot reach https://***@hub (refused)"``.
    """
    line = mask_secrets(" ".join(text.split()))
    if cut_input:
        line = re.sub(_LONG_INPUT, _cut, line)
    return mask_secrets(echo(line, limit))


def _internal_error(exc: Exception) -> str:
    """The one line of an internal error: the exception's type and the first line of its text, masked and cut
    (:func:`safe_line`: an exception may repeat a token, a ``user:pass@`` URL or megabytes of input)."""
    text = str(exc)
    first = safe_line(text.splitlines()[0], 200) if text.strip() else ""
    return (
        f"kvplan: internal error: {type(exc).__name__}: {first}"
        " (rerun with --debug for the traceback, and please report it)"
    )


def _internal(exc: Exception) -> None:
    """An exception kvplan did not raise on purpose: the traceback under --debug, else one line; exit 1."""
    if _DEBUG:
        raise exc
    typer.echo(_internal_error(exc), err=True)
    sys.exit(1)


class _ReaderGone(Exception):
    """stdout's reader closed the pipe (raised past click, whose own answer to EPIPE is exit 1)."""


class KvplanGroup(TyperGroup):
    """The single translation point from exceptions to exit codes and one-line messages."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if closed_pipe(exc):
                raise _ReaderGone() from None
            raise

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        global _DEBUG
        argv = list(sys.argv[1:] if args is None else args)
        _DEBUG = "--debug" in argv or os.environ.get("KVPLAN_DEBUG") == "1"
        try:
            rv = super().main(
                args=argv,
                prog_name=prog_name or "kvplan",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except KvplanError as exc:
            line = safe_line(exc.one_line(), cut_input=False)
            typer.echo(f"kvplan: error: {line}" if exc.exit_code != 3 else f"kvplan: {line}", err=True)
            sys.exit(exc.exit_code)
        except NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx else "kvplan --help")
            sys.exit(0)
        except UsageError as exc:
            msg = safe_line(exc.format_message())
            cmd = exc.ctx.command_path if exc.ctx else "kvplan"
            typer.echo(f"kvplan: error: {msg} (see '{cmd} --help')", err=True)
            sys.exit(2)
        except ClickException as exc:
            typer.echo(f"kvplan: error: {safe_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code or 2)
        except typer.Abort:
            typer.echo("kvplan: aborted", err=True)
            sys.exit(130)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            sys.exit(130)
        except _ReaderGone:
            silence_stdout()
            sys.exit(0)
        except OSError as exc:
            if not output_failure(exc):
                _internal(exc)
            sys.exit(output_exit(exc))
        except Exception as exc:
            _internal(exc)
        if isinstance(rv, int) and rv:
            sys.exit(rv)
        return rv


_HELP = (
    "kvplan: how big the KV cache is, the longest context and how many requests run at once, "
    "the way SGLang and vLLM size them at startup."
)


def new_app(*, completion: bool = False) -> typer.Typer:
    """An empty kvplan app: one error translation (:class:`KvplanGroup`), plain help; ``completion`` adds typer's
    ``--install-completion`` / ``--show-completion`` (the whole CLI has them, :func:`_full_app`)."""
    return typer.Typer(
        name="kvplan",
        cls=KvplanGroup,
        add_completion=completion,
        no_args_is_help=True,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        help=_HELP,
    )


_core = new_app()  # fit, models, gpus, show, version; `app` adds the planning commands
_FormatOption = Annotated[Optional[str], format_option(Listing)]


def _engines(engine: str | None) -> list[str]:
    """``--engine sglang,vllm`` -> ["sglang", "vllm"] (side by side); default sglang."""
    text = engine or "sglang"
    engines = [e.strip().lower() for e in text.split(",") if e.strip()]
    if not engines or any(e not in ENGINES for e in engines):
        raise InputError(f"unknown engine '{echo(text)}'", field="--engine", hint="use sglang, vllm or sglang,vllm")
    return engines


def _launch(
    args: list[str], from_launch: str | None, engine_version: str | None = None
) -> tuple[str, dict[str, Any], list[str], list[str], list[str]]:
    """(engine, Deployment fields, warnings, assumptions, refusals) of the launch command after ``--`` or in
    ``--from-launch FILE``, read with the flags of ``engine_version`` (the --engine-version given), else of the
    release the command names (image tag, pip pin), else of the newest (kvplan.inputs.launch._release)."""
    from kvplan.inputs.launch import parse_launch_command, read_launch_text

    if args and from_launch is not None:
        raise InputError(
            "give the launch command either after '--' or with --from-launch, not both", field="--from-launch"
        )
    parsed = parse_launch_command(args if args else read_launch_text(str(from_launch)), engine_version=engine_version)
    line = parsed.release_assumption()
    fields = {k: v for k, v in parsed.fields.items() if v is not None}
    return parsed.engine, fields, parsed.warnings(), [line] if line else [], list(parsed.refusals)


def _from_log(log: str, given: dict[str, Any], *, model: str | None, gpu: str | None, out: Any, check: bool) -> None:
    """``kvplan fit --from-log LOG [flags]``: the log's deployment and the what-if of the flags given
    (``model`` / ``gpu``: the --model / --gpu options, for a log whose model or GPU is not a preset)."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.whatif import whatif

    over = {k: v for k, v in given.items() if k not in ("model", "gpu")}
    w = whatif(read_log_file(log), over, model=model, gpu=gpu)
    render_then_check(
        lambda: write(WhatIfAnswer(w), out),
        w.whatif.verdict if check and not w.whatif.fits else "",
    )


@_core.command("fit", context_settings={"allow_extra_args": True})
@deployment_options("fit")
def fit_cmd(
    ctx: typer.Context,
    *,
    flags: dict[str, Any],
    from_launch: Annotated[
        Optional[str],
        typer.Option(
            "--from-launch",
            metavar="FILE",
            help="Read an SGLang/vLLM launch command from FILE ('-' = stdin); a command can also follow '--'.",
        ),
    ] = None,
    from_log: Annotated[
        Optional[str],
        typer.Option(
            "--from-log",
            metavar="LOG",
            help="Take the deployment and the measured baseline from an SGLang/vLLM startup log; the flags given "
            "change it (what-if, side by side).",
        ),
    ] = None,
    fmt: Annotated[Optional[str], format_option(FitAnswer)] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 3 when the target is not met.")] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            "-v",
            help="Table: add the assumptions, the pools, the memory notes and the other KV bases "
            "(JSON and CSV always hold them).",
        ),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
    speed: Annotated[
        bool,
        typer.Option(
            "--speed",
            help="Add the speed block (kvplan speed: prefill, TTFT, TPOT, throughput, bound) for the workload "
            "--input-len/--output-len.",
        ),
    ] = False,
) -> None:
    """Plan one deployment: KV bytes per token, budget, pool tokens, longest context, concurrency, verdict.

    With no --model, the project's default deployment applies (DeepSeek-V4.1-Flash, 8x RTX PRO 6000
    Blackwell Max-Q, SGLang, TP8/EP8, fp8 KV, mem_fraction_static 0.72, 1M context, 16 requests); with a
    --model, unset flags take the engine's own defaults.

    \b
    Example: kvplan fit -m Qwen/Qwen3-32B -g h100-sxm --tp 2 --context-length 32k --engine sglang,vllm
    """
    out = resolve(FitAnswer, fmt)
    engine = flags["engine"]
    engines = _engines(engine)
    given = deployment_values("fit", {**flags, "engine": engine and engines[0]})
    launch_warnings: list[str] = []
    launch_assumptions: list[str] = []
    launch_refusals: list[str] = []
    if ctx.args or from_launch is not None:
        launch_engine, fields, launch_warnings, launch_assumptions, launch_refusals = _launch(
            list(ctx.args), from_launch, given.get("engine_version")
        )
        given = {**fields, **given}
        if from_log is None:  # a launch command names no GPU: --gpu must (a log does name it)
            from kvplan.inputs.launch import require_gpu

            require_gpu(given)
        if engine is None:
            engines = [launch_engine]
    if from_log is not None:
        _from_log(from_log, given, model=flags["model"], gpu=flags["gpu"], out=out, check=check)
        return
    from dataclasses import replace

    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    dep = Deployment(**{**given, "engine": engines[0]})

    # the launch reader's warnings go in with the plan: a result is not mutated after fit returns (issue 21 item 4)
    def plan(e: str, advice: tuple[str, ...] = ()) -> Any:
        return fit(
            replace(dep, engine=e),
            warnings=launch_warnings,
            assumptions=launch_assumptions,
            refusals=launch_refusals,
            advise=True,
            advice=advice,
        )

    results = [plan(e) for e in engines]
    # a deployment that does not fit, with weights that do: what solve finds that fits, said with the plan (the
    # result is complete when fit returns, so it is planned again with the advice)
    results = (
        [plan(r.engine, advice) if (advice := _solve_advice(replace(dep, engine=r.engine), r)) else r for r in results]
        if not launch_refusals
        else results
    )  # a command the engine's parser refuses: the fix is the flag, not a knob

    speeds = _speeds(dep, engines) if speed else None

    answer = FitAnswer(results, speeds, explain=explain)
    missed = [m for m in (_missed_target(r) for r in results) if m] if check else []
    render_then_check(lambda: write(answer, out), "; ".join(missed))


def _solve_advice(dep: Any, r: Any) -> tuple[str, ...]:
    """What makes a deployment that does not fit (its weights do) meet its target, by kvplan solve's searches: the
    smallest memory knob (never above 1) and the cheapest KV dtype (the GPU count is fit's own advice).  Empty when
    it fits, when the weights alone do not fit, or when solve cannot answer.  Example: Qwen3-32B on one H100 under
    SGLang -> ``("meets the target with --mem-fraction-static 0.904 (pool 41,213 tokens, room for 1)",)``."""
    if r.fits or r.weight_bytes >= r.free_bytes or dep.free_memory is not None:
        return ()
    if r.weight_bytes == 0 and r.kv_bytes_per_token == 0:  # nothing was planned: an engine refusal, its own fix
        return ()
    from kvplan.errors import KvplanError
    from kvplan.planning.solve import solve

    out = []
    for question in ("mem-fraction", "dtype"):  # the GPU count: fit's own advice (kvplan.planning.plan.tp_advice)
        try:
            res = solve(dep, question)
        except KvplanError:
            continue
        if res.answer is None or (question == "dtype" and res.answer == r.kv_cache_dtype):
            continue
        out.append(f"meets the target with {res.answer_label}")
    return tuple(out)


def _speeds(dep: Any, engines: list[str]) -> list[Any]:
    """``kvplan fit --speed``: the speed answer of each engine's plan (kvplan.planning.speed, loaded only here)."""
    from dataclasses import replace

    from kvplan.planning.speed import speed

    return [speed(replace(dep, engine=e)) for e in engines]


def _missed_target(r: Any) -> str:
    """Why ``--check`` fails for one result ("" when it passes): the engine does not start or serve (``fits``
    false), or the target the user set (``meets_target``; planners without it: ``fits``) is not met."""
    meets = getattr(r, "meets_target", None)
    if not r.fits:
        return str(r.verdict)
    if meets is False:
        target = getattr(r, "target", None)
        return f"target not met: {target}; {r.verdict}" if target else f"target not met; {r.verdict}"
    return ""


_SearchOption = Annotated[
    Optional[str],
    typer.Option(
        "--search", metavar="TEXT", help="Only presets whose id, name, alias or variant holds TEXT (any case)."
    ),
]


def _listing_title(what: str, shown: int, total: int, *, family: str | None, search: str | None) -> str:
    """``model presets (12 of 121: family mla, search 'v3')``."""
    filters = ([f"family {family}"] if family else []) + ([f"search '{search}'"] if search else [])
    return f"{what} ({shown:,} of {total:,}: {', '.join(filters)})" if filters else f"{what} ({total:,})"


@_core.command("models")  # a group (``models add``): its class is attached on first use, _with_group_classes
def models_cmd(
    fmt: _FormatOption = None,
    family: Annotated[
        Optional[str],
        typer.Option(
            "--family", metavar="FAMILY", help="Only models of this KV family (gqa, mla, dsa, hybrid-swa ...)."
        ),
    ] = None,
    search: _SearchOption = None,
) -> None:
    """List the model presets (kvplan models add CONFIG writes your own).

    \b
    Example: kvplan models --family mla --search deepseek
    """
    out = resolve(Listing, fmt)
    from kvplan.hfconfig.spec import flatten_config
    from kvplan.inputs import presets

    entries = presets.model_entries()
    keep = {id(m) for m in presets.filter_models([e.preset for e in entries], family=family, search=search)}
    rows = []
    for e in entries:
        if id(e.preset) not in keep:
            continue
        m, cfg = e.preset, flatten_config(e.preset.config)
        rows.append(
            {
                "id": m.id,
                "family": presets.model_family(m),
                "layers": cfg.get("num_hidden_layers"),
                "quantization": m.weights.quantization,
                "aliases": ", ".join(m.aliases),
                "variants": ", ".join(v.id for v in m.variants),
                "origin": e.origin,
            }
        )
    title = _listing_title("model presets", len(rows), len(entries), family=family, search=search)
    listing = Listing(
        rows,
        title,
        hide=_uniform(rows, "origin"),
        full_listing="kvplan models --format json",
        priority=("origin", "family", "quantization", "layers", "aliases", "variants"),
    )
    write(listing, out)


@_core.command("gpus")
def gpus_cmd(fmt: _FormatOption = None, search: _SearchOption = None) -> None:
    """List the hardware presets.

    \b
    Example: kvplan gpus --search h100
    """
    out = resolve(Listing, fmt)
    from kvplan.inputs import presets

    entries = presets.gpu_entries()
    from kvplan.views.listing import GPU_PRIORITY, gpu_rows

    keep = {id(g) for g in presets.filter_gpus([e.preset for e in entries], search=search)}
    rows = gpu_rows([e for e in entries if id(e.preset) in keep])
    title = _listing_title("GPU presets", len(rows), len(entries), family=None, search=search)
    listing = Listing(
        rows,
        title,
        hide=_uniform(rows, "origin"),
        full_listing="kvplan gpus --format json",
        priority=GPU_PRIORITY,
    )
    write(listing, out)


def _uniform(rows: list[dict[str, Any]], key: str) -> tuple[str, ...]:
    """``(key,)`` when every row has the same value there (a column that says nothing in a table), else ``()``."""
    return (key,) if len({r.get(key) for r in rows}) <= 1 else ()


@_core.command("show")
def show_cmd(
    model: Annotated[str, typer.Argument(help="Preset id, alias, or config.json / model folder.")],
    gpu: Annotated[Optional[str], typer.Option("-g", "--gpu", help="GPU (changes dtype defaults and layouts).")] = None,
    fmt: _FormatOption = None,
) -> None:
    """Model geometry and KV bytes per token by dtype and TP.

    \b
    Example: kvplan show deepseek-ai/DeepSeek-V3.2 -g b200
    """
    out = resolve(Listing, fmt)
    from kvplan.planning.show import show_rows

    info, rows = show_rows(model, gpu)
    write(Listing(rows, "KV bytes per token per GPU (SGLang 0.5.23)", info=info), out)


def version_line() -> str:
    """``kvplan 0.2.0 (SGLang 0.5.23, vLLM 0.34.0 rules)``: the first line of ``kvplan version``, all of
    ``kvplan --version`` (the newest release of each engine: its rules are the default)."""
    from kvplan import __version__, supported

    return f"kvplan {__version__} (SGLang {supported.SGLANG[1]}, vLLM {supported.VLLM[1]} rules)"


@_core.command("version")
def version_cmd() -> None:
    """Print kvplan's version and the engine releases it has rules for (--engine-version takes any of them).

    \b
    Example: kvplan version
    """
    from kvplan import supported

    typer.echo(version_line())
    typer.echo(
        f"SGLang releases {supported.SGLANG[0]} to {supported.SGLANG[1]} "
        "(post, rc and main-branch builds map to their release)"
    )
    typer.echo(f"vLLM releases {supported.VLLM[0]} to {supported.VLLM[1]} (V0 engine before 0.8)")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """kvplan: how big the KV cache is, the longest context and how many requests run at once, the way SGLang and
    vLLM size them at startup."""


_FULL: typer.Typer | None = None
_PLAN_COMMANDS = ("sweep", "solve", "check", "calibrate")
#: commands built alone from their own module (``kvplan speed`` loads neither sweep's nor solve's modules)
_OWN_MODULE = {
    "speed": ("kvplan.cli.speed_cmd", "speed_cmd"),
    "calibrate-speed": ("kvplan.cli.calibrate_speed_cmd", "calibrate_speed_cmd"),
}


#: command name -> (module, class) of the click class that makes it a group; imported only when the command is built
_GROUP_CLASSES = {"models": ("kvplan.cli.models_cmd", "ModelsGroup")}


def _with_group_classes(infos: Sequence[Any]) -> None:
    """Give each command of :data:`_GROUP_CLASSES` its class (``kvplan models`` is a group holding ``add``), so that
    ``kvplan fit`` never imports kvplan.cli.models_cmd."""
    for info in infos:
        where = _GROUP_CLASSES.get(info.name)
        if where is not None:
            info.cls = getattr(importlib.import_module(where[0]), where[1])


def _full_app() -> typer.Typer:
    """The whole CLI: the core commands plus sweep / solve / check / calibrate (their modules load here)."""
    global _FULL
    if _FULL is None:
        from kvplan.cli.calibrate_cmd import calibrate_cmd
        from kvplan.cli.calibrate_speed_cmd import calibrate_speed_cmd
        from kvplan.cli.plan_cmds import check_cmd, solve_cmd, sweep_cmd
        from kvplan.cli.speed_cmd import speed_cmd

        full = new_app(completion=True)
        full.callback()(_root)
        _with_group_classes(_core.registered_commands)
        full.registered_commands.extend(_core.registered_commands)
        full.registered_groups.extend(_core.registered_groups)
        full.command("sweep")(sweep_cmd)
        full.command("solve")(solve_cmd)
        full.command("check")(check_cmd)
        full.command("calibrate")(calibrate_cmd)
        full.command("speed")(speed_cmd)
        full.command("calibrate-speed")(calibrate_speed_cmd)
        _FULL = full
    return _FULL


def __getattr__(name: str) -> Any:
    """``kvplan.cli.app.app`` is the whole CLI, built on first use (PEP 562)."""
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _single_command_app(name: str, *, completion: bool = False) -> typer.Typer | None:
    """An app holding only the command being run: typer builds every registered command's parameters at each
    start, so ``kvplan fit`` should not pay for sweep's, solve's, check's and calibrate's (a few ms each).
    ``completion``: for a shell-completion request inside that command (typer's completion support on)."""
    if name in _OWN_MODULE:
        one = new_app(completion=completion)
        one.callback()(_root)
        module, attr = _OWN_MODULE[name]
        one.command(name)(getattr(importlib.import_module(module), attr))
        return one
    source = _full_app() if name in _PLAN_COMMANDS else _core
    one = new_app(completion=completion)
    one.callback()(_root)  # keeps the group form: `kvplan NAME ...`
    if any(info.name == name for info in source.registered_commands):
        one.registered_commands.extend(info for info in source.registered_commands if info.name == name)
        _with_group_classes(one.registered_commands)
    elif any(info.name == name for info in source.registered_groups):
        one.registered_groups.extend(info for info in source.registered_groups if info.name == name)
    else:
        return None
    return one


def main() -> None:
    """Console entry point.  Runs the command, flushes the output and leaves with ``os._exit``: a planner that
    has printed its answer has nothing to tear down, and skipping the interpreter's module teardown saves a
    noticeable share of a ~80 ms run (docs/performance.md)."""
    if not all(_utf8(s) for s in (sys.stdout, sys.stderr)):
        from kvplan.views.console import install_ascii_fallback

        install_ascii_fallback()
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):  # what the eager --version option prints, without building any command
        os._exit(_flushed(_print_version_line()))
    completing = None if argv else _completing_command()
    name = argv[0] if argv and not argv[0].startswith("-") else completing
    one = _single_command_app(name, completion=completing is not None) if name else None
    code = 0
    try:
        (one or _full_app())()
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            sys.stderr.write(f"{safe_line(str(exc.code))}\n")
            code = 1
    os._exit(_flushed(code))


def _print_version_line() -> int:
    """``kvplan --version`` alone: print :func:`version_line`; the exit code, a failed write translated as
    :meth:`KvplanGroup.main` translates it for the whole CLI's eager option (0 for a closed pipe, else one line and
    1)."""
    try:
        typer.echo(version_line())
    except OSError as exc:
        if not output_failure(exc):
            typer.echo(_internal_error(exc), err=True)
            return 1
        return output_exit(exc)
    return 0


def _completing_command() -> str | None:
    """The command a shell-completion request is inside (``kvplan fit --kv<TAB>`` -> ``"fit"``), else None: then
    only that command is built, as for a run (completing a command name itself needs the whole CLI).

    The request is the environment typer's completion scripts set: ``_KVPLAN_COMPLETE`` with bash's ``COMP_WORDS``
    / ``COMP_CWORD`` or zsh / fish / PowerShell's ``_TYPER_COMPLETE_ARGS`` (the line so far; its last word is being
    completed unless the line ends with a space).  Example: ``COMP_WORDS="kvplan fit --kv" COMP_CWORD=2`` ->
    ``"fit"``; ``COMP_WORDS="kvplan fi" COMP_CWORD=1`` -> None.
    """
    if not os.environ.get("_KVPLAN_COMPLETE"):
        return None
    import shlex

    bash = os.environ.get("COMP_WORDS")
    line = bash if bash is not None else os.environ.get("_TYPER_COMPLETE_ARGS", "")
    try:
        words = shlex.split(line)
        if bash is not None:
            before = words[1 : int(os.environ.get("COMP_CWORD", ""))]
        else:
            before = words[1:] if line.endswith(" ") else words[1:-1]
    except ValueError:  # an open quote, a COMP_CWORD that is not a number: let the whole CLI answer
        return None
    return before[0] if before and not before[0].startswith("-") else None


def _utf8(stream: Any) -> bool:
    return (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"


def _flushed(code: int) -> int:
    """Flush stdout and stderr (the text still buffered for a pipe or a file is written here); the exit code after
    it: ``code``, or :func:`kvplan.cli.streams.output_exit`'s when the output cannot take the text."""
    try:
        if sys.stdout is None:  # started with stdout closed (`>&-`): nothing could be written
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        sys.stdout.flush()
    except OSError as exc:
        out = output_exit(exc)
        code = code if closed_pipe(exc) else (code or out)
    except ValueError:  # stdout closed by the command itself
        pass
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code


def _resume_gc() -> None:
    """Freeze what the import left alive (later collections skip it; resuming without it would make the first
    collection walk all of it) and resume the collector as the importer had it."""
    gc.freeze()
    if _GC_WAS_ENABLED:
        gc.enable()


_resume_gc()


if __name__ == "__main__":  # pragma: no cover
    main()
