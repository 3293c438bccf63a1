"""Start-up benchmark (not a test): wall and CPU time of `kvplan fit --format json` against `python -c pass`.

Run it in the environment you install kvplan into (a fresh venv with a regular `pip install .`, which precompiles
bytecode; not an editable install), with a warm cache:

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/startup.py [--runs 30] [--kvplan PATH-TO-kvplan-SCRIPT]
        [--compare PATH-TO-ANOTHER-BUILD'S-kvplan] [--instructions] [-- fit --format json]

Each round runs `python -c pass` and then the command (and the `--compare` build's, alternately), so that a load
change on a shared machine hits every build alike.  It reports per build the median and p90 wall time, the mean CPU
time per invocation (user + system of the child, `resource.getrusage`: much less sensitive to other processes than
wall time), both as ratios to bare Python, the load average before and after, and the ten slowest imports from
`python -X importtime`; ``--instructions`` adds the instruction count of one warm run of each under valgrind's
callgrind (deterministic: the comparison that does not depend on the machine's load).  Targets (issue "Hardening and speed"): median <= 0.17 s and <= 7x `python -c pass`
(docs/performance.md, "Start-up").  Two warm-up runs per build fill the validated-preset cache first.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time


def _once(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _python_of(script: str) -> str:
    """The interpreter a console script runs with (its ``#!`` line), else this one."""
    try:
        with open(script, "rb") as f:
            first = f.readline().decode(errors="replace").strip()
    except OSError:
        return sys.executable
    return first[2:].strip() if first.startswith("#!") and os.path.isfile(first[2:].strip()) else sys.executable


def _slowest_imports(cmd: list[str]) -> list[tuple[int, str]]:
    """The ten slowest imports (cumulative microseconds) of ``cmd`` under ``python -X importtime``."""
    if cmd[0] == sys.executable:  # python -m kvplan ...
        traced = [sys.executable, "-X", "importtime", *cmd[1:]]
    else:  # a console script: run it with its own interpreter
        traced = [_python_of(cmd[0]), "-X", "importtime", *cmd]
    proc = subprocess.run(traced, capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _self, cum, name = line[len("import time:") :].split("|")
            rows.append((int(cum), name.rstrip()))
    return sorted(rows, reverse=True)[:10]


def _instructions(cmd: list[str]) -> int | None:
    """Instructions of one run of ``cmd`` under ``valgrind --tool=callgrind`` (deterministic, whatever the load;
    None when valgrind is not installed).  A console script runs with its own interpreter, as for ``-X importtime``."""
    if shutil.which("valgrind") is None:
        return None
    interpreter = cmd[0] == sys.executable or os.path.basename(cmd[0]).startswith("python")
    traced = cmd if interpreter else [_python_of(cmd[0]), *cmd]
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *traced],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--kvplan", default=shutil.which("kvplan") or "")
    ap.add_argument("--compare", default="", help="another build's kvplan script, run alternately with --kvplan")
    ap.add_argument(
        "--instructions", action="store_true", help="also count instructions (valgrind callgrind, one warm run each)"
    )
    ap.add_argument("args", nargs="*", default=["fit", "--format", "json"])
    a = ap.parse_args()
    builds = {"kvplan": [a.kvplan] if a.kvplan else [sys.executable, "-m", "kvplan"]}
    if a.compare:
        builds["compare"] = [a.compare]
    cmds = {name: kv + a.args for name, kv in builds.items()}
    pythons = {name: sys.executable if kv[0] == sys.executable else _python_of(kv[0]) for name, kv in builds.items()}
    for cmd in cmds.values():
        for _ in range(2):  # warm-up: OS caches, the validated-preset cache
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    load0 = os.getloadavg()
    bare: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(a.runs):
        for name, cmd in cmds.items():
            bare[name].append(_once([pythons[name], "-c", "pass"]))
            runs[name].append(_once(cmd))
    load1 = os.getloadavg()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set (run with `env -u PYTHONDONTWRITEBYTECODE`)")
    print(
        f"python:  {sys.version.split()[0]}; cpus: {os.cpu_count()}; load average {load0[0]:.2f} before, "
        f"{load1[0]:.2f} after ({a.runs} rounds, builds alternated)"
    )
    for name, cmd in cmds.items():
        bw = statistics.median(w for w, _ in bare[name])
        bc = statistics.mean(c for _, c in bare[name])
        walls = sorted(w for w, _ in runs[name])
        med, p90 = statistics.median(walls), walls[int(0.9 * (len(walls) - 1))]
        cpu = statistics.mean(c for _, c in runs[name])
        print(f"{name}: {' '.join(cmd)}")
        print(f"  python -c pass   median {bw * 1000:7.1f} ms   CPU {bc * 1000:6.1f} ms")
        print(
            f"  command          median {med * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   ratio {med / bw:4.1f}x"
            f"   CPU {cpu * 1000:6.1f} ms ({cpu / bc:4.1f}x)   (targets: <= 170 ms, <= 7x)"
        )
    if a.instructions:
        for name, cmd in cmds.items():
            bare_n, run_n = _instructions([pythons[name], "-c", "pass"]), _instructions(cmd)
            if bare_n and run_n:
                print(
                    f"{name}: instructions {run_n / 1e6:.1f} M ({run_n / bare_n:.1f}x python -c pass, {bare_n / 1e6:.1f} M)"
                )
            else:
                print(f"{name}: instructions not counted (valgrind not installed)")
    print("slowest imports (cumulative):")
    for us, mod in _slowest_imports(cmds["kvplan"]):
        print(f"  {us / 1000:7.1f} ms  {mod}")


if __name__ == "__main__":
    main()
