"""``python -m kvplan``: the same CLI as the ``kvplan`` script.

``python -m`` puts the current folder first on ``sys.path``; a ``typer.py`` (or ``rich.py``, ``json.py`` ...)
lying in that folder would then shadow the real package.  The entry drops that entry before importing anything
(kvplan itself is already imported by then), as ``python -P`` would.
"""

import os
import sys


def _drop_cwd_from_path() -> None:
    if sys.flags.safe_path or not sys.path:  # python -P / PYTHONSAFEPATH: nothing was prepended
        return
    try:
        cwd = os.getcwd()
    except OSError:  # the current folder was removed: only '' can point at it
        cwd = ""
    if sys.path[0] in ("", ".", cwd):
        del sys.path[0]


_drop_cwd_from_path()

from kvplan.cli.app import main  # noqa: E402  (after the path is safe)

main()
