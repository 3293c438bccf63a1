"""The typer CLI: every command's options and help, the whole app and the one-command apps.

The console entry is :func:`kvplan.cli.app.main`; ``kvplan fit`` and ``kvplan speed`` in their plain forms run
without this module (:mod:`kvplan.cli.fast`).  Errors are translated in one place, :func:`kvplan.cli.exits.exit_for`
(called by :meth:`KvplanGroup.main`).

The deployment flags of ``fit`` (and of ``sweep`` / ``solve``, :mod:`kvplan.cli.plan_cmds`) come from the flag
registry (:mod:`kvplan.flags`, built into typer options by :mod:`kvplan.cli.options`); the renderers live in
:mod:`kvplan.views`: a command builds its answer and writes it with :func:`kvplan.cli.output.write`
(:func:`kvplan.views.emit.emit`, the one registry of formats; :func:`kvplan.views.emit.resolve` picks every
command's default format), and never looks at the format itself.
``--install-completion`` and ``--show-completion`` (typer's shell completion) are options of the whole CLI only, so
the one-command app ``kvplan fit`` runs in (:func:`_single_command_app`) does not pay for them.

Start-up (docs/performance.md): the cyclic garbage collector is paused while this module and what it imports load
(typer, click and kvplan's option tables allocate tens of thousands of long-lived objects, and every automatic
collection would walk them again).  At the end of the import the objects alive then (modules, functions, option
tables: they live as long as the process) are moved to the collector's permanent generation (``gc.freeze``) and the
collector is resumed as the importer had it, so the command's own collections walk only what the command allocates.
"""
# ruff: noqa: E402  (the collector is paused before the imports below)

import gc

_GC_WAS_ENABLED = gc.isenabled()
gc.disable()  # resumed at the end of this module (_resume_gc)

import importlib
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from kvplan.cli.about import version_line
from kvplan.cli.exits import ReaderGone, exit_for, safe_line, set_debug
from kvplan.cli.fit_run import missed_target as _missed_target
from kvplan.cli.fit_run import run_fit
from kvplan.cli.options import deployment_options, format_option
from kvplan.cli.output import write
from kvplan.cli.streams import closed_pipe
from kvplan.views.emit import FitAnswer, Listing, resolve

__all__ = ["KvplanGroup", "_missed_target", "new_app", "safe_line", "version_line"]


class KvplanGroup(TyperGroup):
    """The CLI's group: every exception a command raises leaves through :func:`kvplan.cli.exits.exit_for`."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if closed_pipe(exc):
                raise ReaderGone() from None
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
        argv = list(sys.argv[1:] if args is None else args)
        set_debug(argv)
        try:
            rv = super().main(
                args=argv,
                prog_name=prog_name or "kvplan",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except (Exception, KeyboardInterrupt) as exc:
            exit_for(exc)
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
    run_fit(
        flags=flags,
        extra_args=list(ctx.args),
        from_launch=from_launch,
        from_log=from_log,
        fmt=fmt,
        check=check,
        explain=explain,
        speed=speed,
    )


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


def _resume_gc() -> None:
    """Freeze what the import left alive (later collections skip it; resuming without it would make the first
    collection walk all of it) and resume the collector as the importer had it."""
    gc.freeze()
    if _GC_WAS_ENABLED:
        gc.enable()


_resume_gc()
