"""Test-suite time (not a test; issue 21 item 8: `python -m pytest -q` under 3 minutes on 2 cores).

    python benchmarks/suite_time.py [--top 25] [-- PYTEST-ARGS...]

Runs the README's test command (`python -m pytest -q`, which takes `-n auto --dist worksteal` from pyproject's
addopts) with `-p no:cacheprovider --durations=0`, and prints: `nproc`, the load average (`os.getloadavg`, as
`uptime` prints it) before and after, the wall time, the CPU time of pytest and every process it waited for (the
xdist workers and the `python -m kvplan` subprocesses: user + system, ``resource.getrusage(RUSAGE_CHILDREN)``),
the summary line, the time spent per test file (setup + call + teardown summed over its tests, from
``--durations=0``: seconds of each test as its worker saw them, so on a loaded machine they include waiting for
a core) and the slowest single tests.  Extra arguments go to pytest (e.g. `-- -n 0 tests/test_sweep.py`).

On a shared machine compare CPU seconds, not wall seconds: wall time moves with the other work on the machine,
CPU time much less.  docs/performance.md ("Test suite") records the runs.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import subprocess
import sys
import time

_ROW = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+?)(?:::(\S.*))?$")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", *a.pytest_args]
    load0 = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load1 = os.getloadavg()
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    per_file: dict[str, float] = collections.defaultdict(float)
    tests: list[tuple[float, str]] = []
    summary = ""
    for line in proc.stdout.splitlines():
        m = _ROW.match(line)
        if m:
            secs, phase, path, name = float(m[1]), m[2], m[3], m[4] or ""
            per_file[path] += secs
            tests.append((secs, f"{phase:8s} {path}::{name}" if name else f"{phase:8s} {path}"))
        elif re.search(r"\d+ (passed|failed)", line):
            summary = line.strip("= ")
    print(f"command: {' '.join(cmd)}")
    print(
        f"nproc {os.cpu_count()}; load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} before, "
        f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} after"
    )
    print(
        f"wall {wall:.1f} s; CPU {user + system:.1f} s (user {user:.1f}, system {system:.1f}); exit {proc.returncode}"
    )
    print(f"pytest: {summary}")
    for line in proc.stdout.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"  {line[:200]}")
    total = sum(per_file.values())
    print(f"test time summed over the files: {total:.1f} s; slowest files:")
    for path, secs in sorted(per_file.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"  {secs:8.1f} s  {100 * secs / max(total, 1e-9):4.1f}%  {path}")
    print("slowest tests:")
    for secs, what in sorted(tests, reverse=True)[: a.top]:
        print(f"  {secs:8.2f} s  {what}")


if __name__ == "__main__":
    main()
