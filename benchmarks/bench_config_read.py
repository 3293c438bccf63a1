"""How long and how much memory reading a config.json near the 64 MiB cap takes (issue 26 item 3).

Prints one line per case: wall seconds and peak RSS (MiB) of ``kvplan show CONFIG --format json`` in a fresh process,
and its exit code.  Asserts nothing (timings are not tests); tests/test_hardening_bounds.py asserts the work bounds
(elements counted before any value is built).

Cases (each just under ``kvplan.inputs.read.MAX_JSON_BYTES``): a real config plus one huge list of zeros, one huge
object of short keys, many small lists, a long string, and the real config alone for scale.

    python benchmarks/bench_config_read.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "shared" / "hf-configs" / "Qwen--Qwen3-8B" / "config.json"
CAP = 64 * 2**20 - 4096


def _with(extra_key: str, body: str) -> bytes:
    real = REAL.read_text().rstrip().rstrip("}")
    return f'{real}, "{extra_key}": {body}}}'.encode()


#: name -> the document (built when its case runs, so the benchmark's own memory stays small)
CASES: dict[str, Callable[[], bytes]] = {
    "real config": REAL.read_bytes,
    "list of zeros": lambda: _with("pad", "[" + "0," * (CAP // 2 - 1000) + "0]"),
    "object of short keys": lambda: _with("pad", "{" + ",".join(f'"{i}":0' for i in range(CAP // 12)) + "}"),
    "many small lists": lambda: _with("pad", "[" + "[0]," * (CAP // 4 - 1000) + "[0]]"),
    "one long string": lambda: _with("pad", '"' + "a" * (CAP - 2000) + '"'),
    "string of commas": lambda: _with("pad", '"' + "," * (CAP - 2000) + '"'),
    "escaped quotes in a string": lambda: _with("pad", '"' + '\\",,' * (CAP // 4 - 1000) + '"'),
    "100k values (the budget)": lambda: _with("pad", "[" + "0," * (100_000 - 80) + "0]"),
    "1M values": lambda: _with("pad", "[" + "0," * (1_000_000 - 40) + "0]"),
}


def run(name: str) -> tuple[float, float, int, float]:
    """(wall s, peak RSS MiB, exit code, file MiB) of ``kvplan show`` on case ``name`` (written by a child process,
    so that this process stays small: a forked child's peak RSS counts its parent's pages)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "config.json"
        subprocess.run([sys.executable, __file__, "--make", name, str(p)], check=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KVPLAN_NO_CACHE": "1"}
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvplan", "show", str(p), "--format", "json"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode not in (0, 2):
            print("   ", stderr.strip()[:200])
        return wall, usage.ru_maxrss / 1024, proc.returncode, p.stat().st_size / 2**20


def main() -> None:
    if sys.argv[1:2] == ["--make"]:
        Path(sys.argv[3]).write_bytes(CASES[sys.argv[2]]())
        return
    for name in CASES:
        wall, rss, code, size = run(name)
        print(f"{name:28s} {size:6.1f} MiB  {wall:6.2f} s  peak RSS {rss:7.1f} MiB  exit {code}")


if __name__ == "__main__":
    main()
