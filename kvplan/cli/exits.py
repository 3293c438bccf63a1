"""The one translation from an exception to an exit code and a one-line message (no typer import here).

:meth:`kvplan.cli.commands.KvplanGroup.main` (every command typer runs) and :mod:`kvplan.cli.fast` (``fit`` /
``speed`` run without typer) both end in :func:`exit_for`:

* a user mistake (``InputError`` or a usage error) prints one line on stderr and exits 2;
* ``--check`` exits 3 when the target is not met;
* a closed stdout (``kvplan fit | head -1``: the reader stopped reading) exits 0 quietly;
* an output that fails to take the text (``> /dev/full``) prints ``kvplan: error: cannot write the output (...)``
  and exits 1;
* anything unexpected prints a one-line internal error and exits 1 (``--debug`` shows the traceback).

click's exceptions are looked up only when typer is loaded: without it no click exception can exist.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from kvplan.cli.output import echo as _echo
from kvplan.cli.streams import output_exit, output_failure, silence_stdout
from kvplan.errors import ECHO_CHARS, MAX_LINE_CHARS, KvplanError, echo, mask_secrets

_DEBUG = False


def set_debug(argv: Sequence[str]) -> None:
    """``--debug`` anywhere on the command line, or ``KVPLAN_DEBUG=1``: an internal error shows its traceback."""
    global _DEBUG
    _DEBUG = "--debug" in argv or os.environ.get("KVPLAN_DEBUG") == "1"


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


def internal_error(exc: BaseException) -> str:
    """The one line of an internal error: the exception's type and the first line of its text, masked and cut
    (:func:`safe_line`: an exception may repeat a token, a ``user:pass@`` URL or megabytes of input)."""
    text = str(exc)
    first = safe_line(text.splitlines()[0], 200) if text.strip() else ""
    return (
        f"kvplan: internal error: {type(exc).__name__}: {first}"
        " (rerun with --debug for the traceback, and please report it)"
    )


def _internal(exc: BaseException) -> NoReturn:
    """An exception kvplan did not raise on purpose: the traceback under --debug, else one line; exit 1."""
    if _DEBUG:
        raise exc
    _echo(internal_error(exc), err=True)
    sys.exit(1)


class ReaderGone(Exception):
    """stdout's reader closed the pipe (raised past click, whose own answer to EPIPE is exit 1)."""


def _click() -> Any:
    """click's exception module: vendored by typer >= 0.24, the real click before."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:  # pragma: no cover - older typer on real click
        return importlib.import_module("click.exceptions")


def _exit_for_click(exc: BaseException) -> None:
    """The usage errors, aborts and exits of click (returns for any other exception)."""
    ce = _click()
    if isinstance(exc, getattr(ce, "NoArgsIsHelpError", ())):
        ctx = exc.ctx  # type: ignore[attr-defined]
        _echo(ctx.get_help() if ctx else "kvplan --help")
        sys.exit(0)
    if isinstance(exc, ce.UsageError):
        msg = safe_line(exc.format_message())
        cmd = exc.ctx.command_path if exc.ctx else "kvplan"
        _echo(f"kvplan: error: {msg} (see '{cmd} --help')", err=True)
        sys.exit(2)
    if isinstance(exc, ce.ClickException):
        _echo(f"kvplan: error: {safe_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code or 2)
    if isinstance(exc, ce.Abort):
        _echo("kvplan: aborted", err=True)
        sys.exit(130)
    if isinstance(exc, ce.Exit):
        sys.exit(exc.exit_code)


def exit_for(exc: BaseException) -> NoReturn:
    """Leave (``sys.exit``) as kvplan does for ``exc``, an exception a command raised (module docstring)."""
    if isinstance(exc, KvplanError):
        line = safe_line(exc.one_line(), cut_input=False)
        _echo(f"kvplan: error: {line}" if exc.exit_code != 3 else f"kvplan: {line}", err=True)
        sys.exit(exc.exit_code)
    if "typer" in sys.modules:
        _exit_for_click(exc)
    if isinstance(exc, KeyboardInterrupt):
        sys.exit(130)
    if isinstance(exc, ReaderGone):
        silence_stdout()
        sys.exit(0)
    if isinstance(exc, OSError):
        if not output_failure(exc):
            _internal(exc)
        sys.exit(output_exit(exc))
    _internal(exc)
