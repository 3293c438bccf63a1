"""The view goldens kept as files under tests/golden/ (``*.txt``): how each one is rendered.

The tests compare the rendering with the file and never write it; ``python scripts/refresh_goldens.py [NAME ...]``
rewrites the files by hand, after a deliberate change to a view (or to a number a view shows: say which in the
commit message).  Every golden is rendered on :func:`kvplan.views.console.fixed_console` (no colour, no terminal)
at the width its name says, and read back as a pipe or a file gets it: no trailing spaces on any line.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def fit_table(width: int = 100, *, explain: bool = False, engines: tuple[str, ...] = (), **fields: object) -> str:
    """``kvplan fit`` as a table on ``width`` columns: the default deployment unless ``fields`` say otherwise;
    ``engines`` side by side (``--engine sglang,vllm``)."""
    from dataclasses import replace

    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit
    from kvplan.views import render
    from kvplan.views.console import fixed_console, recorded_text

    dep = Deployment(**fields)  # type: ignore[arg-type]
    results = [fit(replace(dep, engine=e)) for e in engines] if engines else [fit(dep)]
    con = fixed_console(width)
    render.print_fit(results, console=con, explain=explain)
    return recorded_text(con)


_QWEN32 = {"model": "Qwen/Qwen3-32B", "gpu": "h100-sxm", "tp": 2, "context_length": 32768}

#: file name under tests/golden/ -> the function that renders it
GOLDENS: dict[str, Callable[[], str]] = {
    "default_fit.txt": partial(fit_table, 100),
    "fit_80.txt": partial(fit_table, 80),
    "fit_120.txt": partial(fit_table, 120),
    "fit_explain_120.txt": partial(fit_table, 120, explain=True),
    "fit_compare_80.txt": partial(fit_table, 80, engines=("sglang", "vllm"), **_QWEN32),
    "fit_vllm_120.txt": partial(fit_table, 120, engines=("vllm",), **{**_QWEN32, "max_running_requests": 128}),
}


def default_fit_table() -> str:
    """``kvplan fit`` (the default deployment) as a table at 100 columns (tests/golden/default_fit.txt)."""
    return GOLDENS["default_fit.txt"]()
