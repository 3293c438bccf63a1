"""How long and how much memory reading a hostile user preset near the 1 MiB cap takes (issue 26 item 3).

Prints one line per case: wall seconds and peak RSS (MiB) of ``kvplan fit -m bench/hostile -g h100-sxm --format json``
in a fresh process whose ``KVPLAN_PRESETS`` holds only the case's model preset, and its exit code.  Asserts nothing
(timings are not tests); tests/test_hardening_presets_bounds.py asserts the work bounds (values counted from the text
before tomllib builds any).

Cases (each just under ``kvplan.inputs.presets.files.MAX_PRESET_BYTES``): a shipped preset alone for scale, then
with one huge array of zeros, many keys, many table headers, many inline tables, a long string of commas, a comment
of commas, escaped quotes, and an array of exactly the value budget.

    python benchmarks/bench_preset_read.py
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
REAL = ROOT / "configs" / "models" / "Qwen--Qwen3-8B.toml"
CAP = 2**20 - 8192


def _with(extra: str) -> bytes:
    real = REAL.read_text().replace('id = "Qwen/Qwen3-8B"', 'id = "bench/hostile"', 1)
    return (extra + "\n" + real).encode()


#: name -> the document (built when its case runs)
CASES: dict[str, Callable[[], bytes]] = {
    "shipped preset": lambda: _with(""),
    "array of zeros": lambda: _with("pad = [" + "0," * (CAP // 2) + "0]"),
    "many keys": lambda: _with("".join(f"k{i} = 1\n" for i in range(CAP // 12))),
    "many table headers": lambda: _with("".join(f"[t{i}]\n" for i in range(CAP // 10))),
    "many inline tables": lambda: _with("pad = [" + "{}," * (CAP // 3) + "{}]"),
    "string of commas": lambda: _with('pad = "' + "," * CAP + '"'),
    "comment of commas": lambda: _with("# " + "," * CAP),
    "escaped quotes": lambda: _with('pad = "' + '\\",' * (CAP // 3) + '"'),
    "20k values (the budget)": lambda: _with("pad = [" + "0," * 19_000 + "0]"),
}


def run(name: str) -> tuple[float, float, int, float]:
    """(wall s, peak RSS MiB, exit code, file MiB) of one ``kvplan fit`` on case ``name``."""
    with tempfile.TemporaryDirectory() as d:
        models = Path(d) / "models"
        models.mkdir()
        p = models / "bench--hostile.toml"
        p.write_bytes(CASES[name]())
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KVPLAN_NO_CACHE": "1", "KVPLAN_PRESETS": d}
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvplan", "fit", "-m", "bench/hostile", "-g", "h100-sxm", "--format", "json"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        if code not in (0, 2):
            print("   ", stderr.strip()[:200])
        return wall, usage.ru_maxrss / 1024, code, p.stat().st_size / 2**20


def main() -> None:
    for name in CASES:
        wall, rss, code, size = run(name)
        print(f"{name:26s} {size:5.2f} MiB  {wall:6.2f} s  peak RSS {rss:6.1f} MiB  exit {code}")


if __name__ == "__main__":
    main()
