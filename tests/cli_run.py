"""Run kvplan as a user does, in a subprocess (``python -m kvplan``, this checkout first on the path), or in this
process (:func:`invoke`) where a test checks what a command answers and not what a fresh interpreter does."""

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


def console_run(args: list[str], *, listing: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, set[str]]:
    """(the finished process, every module loaded when ``kvplan ARGS`` leaves) of the console entry in a fresh
    process with ``env`` added and this checkout first on the path; stdout and stderr captured as text."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, str(listing), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )
    # no listing: the process ended before the entry's exit (the caller's checks of the output say how)
    return proc, set(listing.read_text().split()) if listing.is_file() else set()


def console_modules(args: list[str], *, listing: Path, env: dict[str, str]) -> tuple[str, set[str]]:
    """(stdout, every module loaded when ``kvplan ARGS`` leaves), as :func:`console_run`; a non-zero exit fails
    the calling test."""
    proc, modules = console_run(args, listing=listing, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, modules


def invoke(args: list[str], *, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``kvplan ARGS`` run in this process: typer's CliRunner on the whole CLI
    (kvplan.cli.commands._full_app; a ``kvplan`` process builds only the command it runs, and runs plain fit / speed
    without typer, which tests/test_fast_cli.py holds to typer's output), with COLUMNS 200 and ``env`` set for the
    run.  The command's messages and exit codes are the ones a process prints and
    leaves with (KvplanGroup turns errors into one line and a code inside click, before any process boundary); what
    only a fresh interpreter shows (the stream encodings, a closed or full stdout, signals, memory limits, the
    typer-free fast path) needs :func:`run_kvplan`.  An exception that escapes the command fails the calling test
    with its traceback (a real process would print one)."""
    from typer.testing import CliRunner

    from kvplan.cli.commands import _full_app

    res = CliRunner().invoke(_full_app(), args, env={"COLUMNS": "200", **(env or {})})
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr
