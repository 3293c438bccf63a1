"""Output formats: the one :class:`Format` enum and the one place that picks the default (:func:`resolve_format`).

Which formats each command accepts, its default off a terminal and how each answer is written in each format are
declared in one registry, :mod:`kvplan.views.emit` (the CLI's only way to write an answer).  This module is the
leaf both it and the view modules import.

On a terminal the default is always ``table``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from kvplan.errors import InputError
from kvplan.errors import echo as _cut


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"
    JSONL = "jsonl"


#: the subsets the commands accept (see the module docstring); kept for callers outside the CLI
TABLE_JSON_CSV = (Format.TABLE, Format.JSON, Format.CSV)
TABLE_CSV_JSONL = (Format.TABLE, Format.CSV, Format.JSONL)
TABLE_JSON = (Format.TABLE, Format.JSON)


def _or(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def format_metavar(allowed: Sequence[StrEnum]) -> str:
    """``[table|json|csv]``: the metavar of a ``--format`` option."""
    return "[" + "|".join(allowed) + "]"


def resolve_format(
    requested: str | None,
    *,
    allowed: Sequence[StrEnum],
    default_when_not_tty: StrEnum,
    isatty: bool | None = None,
) -> Any:
    """The format to write: ``requested`` when given (it must be one of ``allowed``), else ``table`` on a
    terminal and ``default_when_not_tty`` otherwise.

    Example: ``resolve_format(None, allowed=TABLE_CSV_JSONL, default_when_not_tty=Format.JSONL)`` is
    ``Format.JSONL`` when stdout is a pipe; ``resolve_format("xml", ...)`` raises
    ``InputError("--format: unknown format 'xml'; table, csv or jsonl")`` (exit 2).
    """
    if requested is None:
        if isatty is None:  # a closed stdout (`kvplan fit >&-`) is no terminal: the write then fails as one line
            isatty = bool(sys.stdout is not None and getattr(sys.stdout, "isatty", None) and sys.stdout.isatty())
        tty = isatty
        return Format.TABLE if tty else default_when_not_tty
    for a in allowed:
        if requested == str(a):
            return a
    raise InputError(f"unknown format '{_cut(requested)}'", field="--format", hint=_or([str(a) for a in allowed]))
