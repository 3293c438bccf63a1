"""Run kvplan as a user does, in a subprocess (``python -m kvplan``, this checkout first on the path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_kvplan(
    args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess:
    """``python -m kvplan ARGS`` with ``env`` added to the environment; the timeout is only a hang guard."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kvplan", *args], cwd=cwd, env=full_env, timeout=120, **kw)


def closed_stdout(args: list[str]) -> subprocess.CompletedProcess:
    """Run kvplan with stdout a pipe whose reader is already gone (every write: EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return run_kvplan(args, stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)


#: run the console entry (``kvplan.cli.app.main``) and write ``sys.modules`` to a file when it leaves (at its
#: ``os._exit``; unlike ``-X importtime`` this also sees imports made inside functions while the command runs)
_RUN_AND_LIST = """
import os, sys
out = sys.argv.pop(1)
def _exit(code, _real=os._exit):
    with open(out, "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
    _real(code)
os._exit = _exit
from kvplan.cli.app import main
main()
"""


def console_modules(args: list[str], *, listing: Path, env: dict[str, str]) -> tuple[str, set[str]]:
    """(stdout, every module loaded when ``kvplan ARGS`` leaves), in a fresh process with ``env`` added and this
    checkout first on the path; a non-zero exit fails the calling test."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, str(listing), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, set(listing.read_text().split())
