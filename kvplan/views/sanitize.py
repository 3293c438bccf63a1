"""The views' side of the one sanitiser of untrusted text (issue 26): every sink of a view goes through here.

The character rules are :func:`kvplan.errors.terminal_text`, :func:`kvplan.errors.csv_cell` and
:func:`kvplan.errors.xml_text` (the base layer, because the sweep's CSV writer in planning needs them too); this
module applies them to what the views write:

=====================================  ==============================================================
sink                                   rule
=====================================  ==============================================================
rich tables, titles, captions          :func:`text` (a rich ``Text``: never read as markup) for the data;
                                       and, as a backstop, every rich console kvplan makes
                                       (:func:`console_class`) escapes control characters in the
                                       text it renders (its own colour codes are untouched)
plain-text views (``show``'s info,     :func:`block` (newlines kept, every other control escaped)
calibrate / whatif tables)
CSV (fit, models, gpus, show,          :func:`csv_row` / :func:`kvplan.errors.csv_cell` (formula
calibrate, whatif, sweep)              prefixes neutralised, controls escaped)
JUnit XML (check)                      :func:`kvplan.errors.xml_text`
JSON / JSON lines                      nothing (``json.dumps`` escapes every control character)
=====================================  ==============================================================

rich is imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from kvplan.errors import csv_cell, terminal_text, xml_text

__all__ = ["block", "console_class", "csv_cell", "csv_row", "terminal_text", "text", "xml_text"]


def block(text: str) -> str:
    """A multi-line plain text (a view's whole output) safe for a terminal: newlines kept, every other control
    character escaped.  ``block("a\\x1b[2Jb\\n")`` is ``"a\\\\x1b[2Jb\\n"``."""
    return terminal_text(text, newlines=True)


def csv_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with :func:`kvplan.errors.csv_cell` applied to every value (keys are kvplan's own)."""
    return {k: csv_cell(v) for k, v in row.items()}


def text(value: Any, style: str = "") -> Any:
    """``value`` as a rich ``Text`` with control characters escaped: safe as a table cell or a title (a ``str``
    title or cell would be read as rich markup, so ``[link=...]`` in a model name would become a link)."""
    from rich.text import Text

    return Text(terminal_text(str(value)), style=style)


@lru_cache(maxsize=1)
def console_class() -> Any:
    """A ``rich.console.Console`` subclass that escapes control characters (:func:`kvplan.errors.terminal_text`,
    newlines kept) in every text segment it renders, before rich adds its own style codes: a backstop for data
    that reached a renderable as a plain string.  Control segments (cursor moves, which kvplan never emits) pass
    as they are.  Hooks ``Console._render_buffer`` (rich 13-15); tests/test_hardening_sinks.py fails if it stops
    being called."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def _render_buffer(self, buffer: Any) -> str:
            safe = (
                seg if seg.control else Segment(terminal_text(seg.text, newlines=True), seg.style, seg.control)
                for seg in buffer
            )
            return str(super()._render_buffer(safe))

    return SafeConsole
