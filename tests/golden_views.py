"""The view goldens kept as files under tests/golden/ (``*.txt``): how each one is rendered.

The tests compare the rendering with the file and never write it; ``python scripts/refresh_goldens.py [NAME ...]``
rewrites the files by hand, after a deliberate change to a view (say which in the commit message).  Every golden is
rendered on :func:`kvplan.views.console.fixed_console` (100 columns, no colour, no terminal).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def default_fit_table() -> str:
    """``kvplan fit`` (the default deployment) as a table, trailing blanks kept (rich's own export)."""
    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit
    from kvplan.views import render
    from kvplan.views.console import fixed_console, recorded_text

    con = fixed_console()
    render.table(fit(Deployment()), console=con)
    return recorded_text(con, strip_lines=False)


#: file name under tests/golden/ -> the function that renders it
GOLDENS: dict[str, Callable[[], str]] = {
    "default_fit.txt": default_fit_table,
}
