"""What the CLI does when stdout cannot take the output (used by the one translation point, kvplan.cli.app).

* A closed pipe (``kvplan fit | head -1``: the reader stopped reading, ``EPIPE``) is not an error: stdout is
  pointed at /dev/null and the command's exit code stands (0, or 3 under ``--check`` when the target is missed,
  :func:`render_then_check`), as ``cat`` or ``grep`` under ``head`` behave; never a traceback.
* An output that fails to take the text (``> /dev/full``: ``ENOSPC``, ``EIO`` ...) prints one line
  ``kvplan: error: cannot write the output (No space left on device)`` on stderr and exits 1.
* Any other OSError (a file kvplan opened, with a file name) is not an output failure: the caller sends it to the
  internal-error path (kvplan validates the files it reads; an OSError that escapes is a bug).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

from kvplan.errors import DoesNotFitError

#: errno values of a write to stdout / stderr that failed because of where the output goes, not because of kvplan
OUTPUT_ERRNOS = frozenset(
    getattr(errno, n)
    for n in ("ENOSPC", "EIO", "EDQUOT", "EFBIG", "EBADF", "EROFS", "EPIPE", "ECONNRESET")
    if hasattr(errno, n)
)


def closed_pipe(exc: BaseException) -> bool:
    """True for the error of writing to a pipe nobody reads any more (``BrokenPipeError`` / ``EPIPE``)."""
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


def output_failure(exc: OSError) -> bool:
    """True for an OSError of writing the output: no file name (not a file kvplan opened) and a stream's errno."""
    return exc.filename is None and exc.errno in OUTPUT_ERRNOS


def silence_stdout() -> None:
    """Point stdout's file descriptor at /dev/null after the reader went away: later writes and the last flush
    then have nowhere to fail."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's buffer): nothing to silence
        pass


def output_exit(exc: OSError) -> int:
    """The exit code of a failed write: 0 for a closed pipe (the reader has what it wanted), else 1 with one line."""
    if closed_pipe(exc):
        silence_stdout()
        return 0
    try:
        if sys.stderr is not None:
            sys.stderr.write(f"kvplan: error: cannot write the output ({exc.strerror or exc})\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 1


def render_then_check(render: Callable[[], None], failure: str) -> None:
    """Run ``render`` (write the answer), then raise :class:`DoesNotFitError` with ``failure`` when it is not empty
    (``--check``: exit 3).  A reader that closed the pipe mid-answer does not hide the failure: the rest of the
    output goes to /dev/null and the exit code is still 3."""
    try:
        render()
    except OSError as exc:
        if not (failure and closed_pipe(exc)):
            raise
        silence_stdout()
    if failure:
        raise DoesNotFitError(failure)
