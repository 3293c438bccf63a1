"""Start-up benchmark (not a test): wall time of `kvplan fit --format json` against `python -c pass`.

Run it in the environment you install kvplan into (a regular `pip install .`, which precompiles bytecode):

    python benchmarks/startup.py [--runs 30] [--kvplan PATH-TO-kvplan-SCRIPT]

It reports the median and p90 over the runs (after two warm-up runs that also fill the validated-preset
cache), the ratio to bare Python, and the ten slowest imports from `python -X importtime`.
Targets (issue "Hardening and speed"): median <= 0.17 s and <= 7x `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def _time(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--kvplan", default=shutil.which("kvplan") or "")
    ap.add_argument("args", nargs="*", default=["fit", "--format", "json"])
    a = ap.parse_args()
    kv = [a.kvplan] if a.kvplan else [sys.executable, "-m", "kvplan"]
    cmd = kv + a.args
    for _ in range(2):  # warm-up: OS caches, the validated-preset cache
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    bare = _time([sys.executable, "-c", "pass"], a.runs)
    fit = _time(cmd, a.runs)
    med_b, med_f = statistics.median(bare), statistics.median(fit)
    p90 = sorted(fit)[int(0.9 * (len(fit) - 1))]
    print(f"python:  {sys.version.split()[0]} ({sys.executable}); cpus: {os.cpu_count()}")
    print(f"command: {' '.join(cmd)}  ({a.runs} runs)")
    print(f"python -c pass   median {med_b * 1000:7.1f} ms")
    print(f"kvplan           median {med_f * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   "
          f"ratio {med_f / med_b:4.1f}x   (targets: <= 170 ms, <= 7x)")
    proc = subprocess.run([kv[0], *kv[1:], *a.args] if a.kvplan else cmd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _self, cum, name = line[len("import time:"):].split("|")
            rows.append((int(cum), name.rstrip()))
    print("slowest imports (cumulative):")
    for us, name in sorted(rows, reverse=True)[:10]:
        print(f"  {us / 1000:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
