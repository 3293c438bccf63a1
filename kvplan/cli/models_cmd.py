"""``kvplan models add CONFIG``: write a user model preset from a local config.json (or a model folder).

The command only parses and calls :func:`kvplan.inputs.presets.add_user_model`, which does the work (reads the
config with kvplan.inputs.resolve's readers, writes ``<user folder>/models/<org>--<name>.toml``, loads it back).
It prints the new file's path on stdout; refusals (an existing file without ``--force``, a bad config, a bad
``--id``) are one line on stderr and exit 2, through the app's one error translation (``KvplanGroup.main``).

Not attached to an app here.  ``kvplan models`` is a command; :class:`ModelsGroup` makes it a group that still runs
the listing when no subcommand is given (same options, same output) and has ``add`` below it.  Registering it is one
line in kvplan/cli/app.py, the decorator of ``models_cmd`` (with ``from kvplan.cli.models_cmd import ModelsGroup``)::

    @_core.command("models", cls=ModelsGroup)  # type: ignore[arg-type]

(typer annotates ``cls`` as a TyperCommand subclass; a TyperGroup is a click command all the same.)  It stays in
``_core.registered_commands``, so ``_single_command_app("models")`` and ``_full_app()`` both carry it.
"""

import importlib
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

_HELP_ADD = (
    "Write a user model preset from a local config.json or model folder (into $KVPLAN_PRESETS, else "
    "~/.config/kvplan/models) and print its path.\n\n\b\nExample: kvplan models add ./my-model --alias my-model"
)


def models_add_cmd(
    config: Annotated[
        str,
        typer.Argument(
            metavar="CONFIG",
            help="A config.json, or a model folder holding config.json "
            "(and optionally model.safetensors.index.json, hf_quant_config.json).",
        ),
    ],
    model_id: Annotated[
        Optional[str], typer.Option("--id", help="The preset id, ORG/NAME (default: the config's _name_or_path).")
    ] = None,
    alias: Annotated[Optional[list[str]], typer.Option("--alias", help="A short name to resolve (repeatable).")] = None,
    quantization: Annotated[
        Optional[str],
        typer.Option(
            "--quantization",
            help="Weight format: bf16 fp16 fp32 fp8 mxfp4 nvfp4 int4 int8 mixed (default: what the config declares).",
        ),
    ] = None,
    source: Annotated[
        Optional[str], typer.Option("--source", help="Where the config.json came from (default: its path).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing user preset file.")] = False,
) -> None:
    """Write a user model preset from a local config.json or model folder and print its path."""
    from kvplan.inputs import presets

    added = presets.add_user_model(
        Path(config), model_id=model_id, aliases=alias or (), quantization=quantization, source=source, force=force
    )
    typer.echo(str(added.path))
    if added.shadows is not None:
        typer.echo(
            f"kvplan: note: {added.id} now resolves to this file, not the shipped preset {added.shadows.name}", err=True
        )


def _current_context() -> Any:
    """click's current context: vendored by typer >= 0.24, the real click before (as kvplan.cli.app does)."""
    try:
        mod = importlib.import_module("typer._click.globals")
    except ImportError:  # pragma: no cover - older typer on real click
        mod = importlib.import_module("click.globals")
    return mod.get_current_context()


def _add_command() -> Any:
    """:func:`models_add_cmd` as a click command named ``add``."""
    one = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)
    one.command("add", help=_HELP_ADD)(models_add_cmd)
    return typer.main.get_command(one)


class ModelsGroup(TyperGroup):
    """``kvplan models``: the listing command (its callback and options, unchanged) as a group with ``add`` below it.

    click runs a group's callback before its subcommand; the callback is wrapped so that the listing runs only when
    no subcommand was given (``ctx.invoked_subcommand is None``).
    """

    def __init__(self, **attrs: Any) -> None:
        attrs.setdefault("invoke_without_command", True)
        super().__init__(**attrs)
        listing = self.callback

        def callback(*args: Any, **kwargs: Any) -> Any:
            if listing is None or _current_context().invoked_subcommand is not None:
                return None
            return listing(*args, **kwargs)

        self.callback = callback
        self.add_command(_add_command(), "add")
