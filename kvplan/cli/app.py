"""The console entry (``kvplan``, ``python -m kvplan``): :func:`main`.

``kvplan fit`` and ``kvplan speed`` in their plain forms run without typer (:mod:`kvplan.cli.fast`: the same
command functions, the same options read from the same tables); ``kvplan --version`` / ``-V`` prints its line
before any command is built; everything else, and any line the fast reader leaves, runs in typer
(:mod:`kvplan.cli.commands`, loaded here on first use).  Errors are translated in one place,
:func:`kvplan.cli.exits.exit_for`:

* a user mistake (``InputError`` or a usage error) prints one line on stderr and exits 2;
* ``--check`` exits 3 when the target is not met;
* a closed stdout (``kvplan fit | head -1``: the reader stopped reading) exits 0 quietly, as ``cat`` or ``grep``
  do under ``head``, and never prints a traceback;
* an output that fails to take the text (``kvplan models > /dev/full``: no space, an I/O error) prints one line
  ``kvplan: error: cannot write the output (...)`` and exits 1;
* anything unexpected prints a one-line internal error and exits 1 (``--debug`` shows the traceback).

On a stream that cannot encode Unicode (``PYTHONIOENCODING=ascii``) characters print as ASCII fallbacks
(:func:`kvplan.views.console.install_ascii_fallback`), tables in ASCII boxes.

The typer app's names (``app``, ``KvplanGroup``, ``new_app``, the commands ...) are read from
:mod:`kvplan.cli.commands` on first use (PEP 562), so ``from kvplan.cli.app import app`` still works.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any

from kvplan.cli.about import version_line
from kvplan.cli.exits import internal_error, safe_line
from kvplan.cli.output import echo
from kvplan.cli.streams import closed_pipe, output_exit, output_failure

__all__ = ["main", "safe_line", "version_line"]


def __getattr__(name: str) -> Any:
    """The typer CLI's names (``app`` is the whole CLI, built on first use), from :mod:`kvplan.cli.commands`."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("kvplan.cli.commands"), name)


def main() -> None:
    """Console entry point.  Runs the command, flushes the output and leaves with ``os._exit``: a planner that
    has printed its answer has nothing to tear down, and skipping the interpreter's module teardown saves a
    noticeable share of a short run (docs/performance.md)."""
    if not all(_utf8(s) for s in (sys.stdout, sys.stderr)):
        from kvplan.views.console import install_ascii_fallback

        install_ascii_fallback()
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):  # what the eager --version option prints, without building any command
        os._exit(_flushed(_print_version_line()))
    code = 0
    try:
        from kvplan.cli.fast import run

        if not run(argv):
            _typer_main(argv)
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            sys.stderr.write(f"{safe_line(str(exc.code))}\n")
            code = 1
    os._exit(_flushed(code))


def _typer_main(argv: list[str]) -> None:
    """Run ``kvplan ARGV`` in typer: an app of the one command named (or the shell completion is inside), else
    the whole CLI."""
    commands = importlib.import_module("kvplan.cli.commands")
    completing = None if argv else _completing_command()
    name = argv[0] if argv and not argv[0].startswith("-") else completing
    one = commands._single_command_app(name, completion=completing is not None) if name else None
    (one or commands._full_app())()


def _print_version_line() -> int:
    """``kvplan --version`` alone: print :func:`version_line`; the exit code, a failed write translated as
    :meth:`KvplanGroup.main` translates it for the whole CLI's eager option (0 for a closed pipe, else one line and
    1)."""
    try:
        echo(version_line())
    except OSError as exc:
        if not output_failure(exc):
            echo(internal_error(exc), err=True)
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
