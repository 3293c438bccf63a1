"""Writing a command's answer and the CLI's own lines, with or without typer loaded.

Under typer (every command it builds) the text goes through click's ``echo``.  On the typer-free path of
:mod:`kvplan.cli.fast` (``fit`` / ``speed`` on UTF-8 streams, typer never imported) :func:`echo` does what
click's ``echo`` does there: write the text to the stream and flush it.  Text holding an escape character
(which click strips when the stream is not a terminal) always goes through click's ``echo``.
"""

from __future__ import annotations

import sys
from typing import Any

from kvplan.views.emit import emit


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """click's ``echo(text, err=err, nl=nl)``: through click when typer is loaded or ``text`` holds an escape
    character, else written to ``sys.stdout`` / ``sys.stderr`` and flushed (what click does on a UTF-8 stream)."""
    if "typer" in sys.modules or "\x1b" in text:
        import typer

        typer.echo(text, err=err, nl=nl)
        return
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # click writes nothing when the stream is closed
        return
    stream.write(text + "\n" if nl else text)
    stream.flush()


def _echo(text: str) -> None:
    echo(text, nl=False)


def write(answer: Any, fmt: Any, **words: Any) -> None:
    """Write ``answer`` in ``fmt`` (:func:`kvplan.views.emit.emit`) through :func:`echo`."""
    emit(answer, fmt, echo=_echo, **words)
