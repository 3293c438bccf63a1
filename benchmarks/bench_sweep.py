"""Sweep throughput and end-to-end time (prints numbers; not a test).

    PYTHONPATH=. python benchmarks/bench_sweep.py

1. evaluate_group: the vectorised budget -> tokens -> request cap -> concurrency arithmetic alone, 1,000,000
   points of one resolved group (mem_fraction_static x context x max_running_requests);
2. sweep(): the whole library call on a multi-group grid (models x GPUs x TP x dtype, each resolved once by
   ``kvplan.planning.plan.fit``, then vectorised), 1,200,000 points;
3. end to end: a fresh ``python`` process running ``kvplan sweep ... --format csv -o FILE`` on 100,000 points
   (interpreter start, imports, presets, the sweep and the CSV file).
Goals (issue "Planning at scale"): >= 1,000,000 points/s on one core; the 100,000-point CSV in < 1 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def best_of(n, fn):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    import numpy as np

    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import _fit_group, evaluate_group, sweep

    # 1. the vectorised arithmetic alone
    g, _ = _fit_group(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm"), {})
    n = 1_000_000
    rng = np.random.default_rng(0)
    mfs = np.round(rng.uniform(0.5, 0.99, n), 3)
    ctx = rng.integers(1024, 131072, n)
    mrr = rng.integers(1, 512, n)
    tgt = rng.integers(1, 64, n)
    dt, _ = best_of(5, lambda: evaluate_group(g, mem_fraction_static=mfs, context_length=ctx,
                                              max_running_requests=mrr, max_total_tokens=None, target_requests=tgt))
    print(f"evaluate_group: {n:,} points in {dt * 1e3:.1f} ms = {n / dt / 1e6:.1f} M points/s")

    # 2. the library call, several groups
    axes = {"model": ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3"],
            "gpu": ["h100-sxm", "h200-sxm", "b200", "mi300x"], "tp": [4, 8], "kv_cache_dtype": ["bf16", "fp8_e4m3"],
            "mem_fraction_static": [round(0.5 + i * 0.01, 2) for i in range(50)],
            "context_length": [1024 * (i + 1) for i in range(500)]}
    sweep(Deployment(), {"model": axes["model"], "gpu": axes["gpu"]})  # warm the preset caches
    dt, t = best_of(3, lambda: sweep(Deployment(), axes))
    groups = len(t.groups)
    print(f"sweep(): {len(t):,} points ({groups} groups, {t.n_fit:,} fit) in {dt * 1e3:.0f} ms "
          f"= {len(t) / dt / 1e6:.2f} M points/s (incl. one fit() per group)")
    dt_csv, text = best_of(3, lambda: t.to_csv())
    print(f"to_csv(): {len(t):,} rows, {len(text) / 1e6:.0f} MB in {dt_csv * 1e3:.0f} ms")

    # 3. end to end, a fresh process writing a 100,000-point CSV
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "sweep.csv"
        args = ["sweep", "-m", "Qwen/Qwen3-8B", "-g", "h100-sxm,h200-sxm", "--tp", "1,2",
                "--mem-fraction-static", "0.50:0.99:0.01", "--context-length", "1k:1000k:2k",
                "--format", "csv", "-o", str(out)]
        from kvplan.cli import app as cli

        attached = any(c.name == "sweep" for c in cli.app.registered_commands)
        if attached:
            cmd = [sys.executable, "-m", "kvplan", *args]
        else:  # the lead has not attached it yet: a throwaway app with the same function
            code = ("import sys, typer\nfrom kvplan.cli.app import KvplanGroup\n"
                    "from kvplan.cli.plan_cmds import sweep_cmd\n"
                    "app = typer.Typer(cls=KvplanGroup, add_completion=False)\napp.command('sweep')(sweep_cmd)\n"
                    "app.command('noop')(lambda: None)\napp(sys.argv[1:])\n")
            cmd = [sys.executable, "-c", code, *args]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env=env, cwd=ROOT)
            runs.append(time.perf_counter() - t0)
        rows = sum(1 for _ in out.open()) - 1
        print(f"end to end ({'kvplan' if attached else 'throwaway app'}): {rows:,}-point sweep to CSV "
              f"({out.stat().st_size / 1e6:.1f} MB) in {min(runs):.2f} s (best of 3; runs "
              + ", ".join(f"{r:.2f}" for r in runs) + ")")


if __name__ == "__main__":
    main()
