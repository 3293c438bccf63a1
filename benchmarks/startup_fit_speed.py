"""Start-up of `kvplan speed --format json` against `kvplan fit --format json` (not a test; issue 22).

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/startup_fit_speed.py [--runs 20] [--kvplan PATH]

Runs `python -c pass`, `kvplan fit --format json` and `kvplan speed --format json` (the default deployment) in
turn, round after round, so that a load change on a shared machine hits every command alike.  Per command: median
and p90 wall time, mean CPU time of the child (user + system, ``resource.getrusage``), both as ratios to bare
Python; then the load average before and after, and for `speed` the kvplan modules (and third-party top-level
packages) it imports that `fit` does not, from `python -X importtime` with their cumulative import time.
The budget is `fit`'s (docs/performance.md, "Start-up"): `speed` should not cost more than `fit` beyond noise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from startup import _once, _python_of  # the same timing and interpreter rules as benchmarks/startup.py


def _imports(prefix: list[str], args: list[str]) -> dict[str, int]:
    """module -> cumulative import microseconds under ``python -X importtime``."""
    proc = subprocess.run([*prefix[:1], "-X", "importtime", *prefix[1:], *args], capture_output=True, text=True)
    out: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _self, cum, name = line[len("import time:") :].split("|")
            out[name.strip()] = int(cum)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--kvplan", default="", help="a kvplan console script (default: this python -m kvplan)")
    a = ap.parse_args()
    if a.kvplan:
        script = shutil.which(a.kvplan) or a.kvplan
        py = _python_of(script)
        prefix = [py, script]
    else:
        py, prefix = sys.executable, [sys.executable, "-m", "kvplan"]
    cmds = {
        "python -c pass": [py, "-c", "pass"],
        "fit --format json": [*prefix, "fit", "--format", "json"],
        "speed --format json": [*prefix, "speed", "--format", "json"],
    }
    for cmd in list(cmds.values())[1:]:
        for _ in range(2):  # warm-up: OS caches, the validated-preset cache
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    load0 = os.getloadavg()
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(a.runs):
        for name, cmd in cmds.items():
            runs[name].append(_once(cmd))
    load1 = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}; cpus {os.cpu_count()}; load average {load0[0]:.2f} before, "
        f"{load1[0]:.2f} after; {a.runs} rounds, commands alternated"
    )
    bw = statistics.median(w for w, _ in runs["python -c pass"])
    bc = statistics.mean(c for _, c in runs["python -c pass"])
    for name, rs in runs.items():
        walls = sorted(w for w, _ in rs)
        med, p90 = statistics.median(walls), walls[int(0.9 * (len(walls) - 1))]
        cpu = statistics.mean(c for _, c in rs)
        print(
            f"  {name:22s} median {med * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms  ({med / bw:4.1f}x)"
            f"   CPU {cpu * 1000:6.1f} ms ({cpu / bc:4.1f}x)"
        )
    fit = _imports(prefix, ["fit", "--format", "json"])
    speed = _imports(prefix, ["speed", "--format", "json"])
    extra = {m: us for m, us in speed.items() if m not in fit}
    print(f"modules imported: fit {len(fit)}, speed {len(speed)}; speed only ({len(extra)}), cumulative:")
    for m, us in sorted(extra.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {us / 1000:7.1f} ms  {m}")


if __name__ == "__main__":
    main()
