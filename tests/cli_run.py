"""Run kvplan as a user does, in a subprocess (``python -m kvplan``, this checkout first on the path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_kvplan(args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
               **kw: Any) -> subprocess.CompletedProcess:
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
