"""rich consoles: the terminal one the commands print tables on, and the fixed-width one the golden tests record.

rich is imported inside the functions only: ``--format json`` never loads it.
"""

from __future__ import annotations

import io
from typing import Any

GOLDEN_WIDTH = 100


def terminal_console() -> Any:
    """A rich Console on stdout (the terminal's width and colours)."""
    from rich.console import Console

    return Console()


def fixed_console(width: int = GOLDEN_WIDTH) -> Any:
    """A recording Console of a fixed width, no colour, no terminal: what the golden tests render on.

    Read what was printed with :func:`recorded_text`.
    """
    from rich.console import Console

    return Console(width=width, record=True, color_system=None, force_terminal=False, file=io.StringIO())


def recorded_text(console: Any, *, strip_lines: bool = True) -> str:
    """The text a :func:`fixed_console` recorded; ``strip_lines`` drops trailing blanks on every line."""
    text: str = console.export_text()
    if not strip_lines:
        return text
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
