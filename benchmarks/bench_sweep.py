"""Sweep throughput, end-to-end time and peak memory (prints numbers; not a test).

    PYTHONPATH=. python benchmarks/bench_sweep.py [--skip-5m]

1. points/s per engine x family (SGLang GQA / MLA / DSA / hybrid SWA (ratio and request-cap modes) / Mamba hybrid /
   DeepSeek-V4, vLLM GQA / MLA / DSA / hybrid SWA / Mamba hybrid / DeepSeek-V4): the arithmetic alone
   (``evaluate_group`` on 1,000,000 random points of one resolved group) and the rows to CSV in memory
   (``sweep()`` + ``SweepTable.write_csv`` on a 300,000-point grid, chunk by chunk); the path (vector / point) is
   printed with each row;
2. sweep(): the library call on a multi-group grid (models x GPUs x TP x dtype), 1,200,000 points;
3. end to end, fresh processes, peak RSS of the child (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``):
   ``kvplan sweep ... --format csv -o FILE`` on 100,000 points and on a 1,000,000-point mixed grid (both engines,
   five families), and the streaming writer (``sweep(...).write_csv(fh)`` after an ``n_meet`` pass) on those and on
   5,000,000 points.
The machine load (``os.getloadavg``) is printed with the results.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (engine x family label) -> (model, group settings)
FAMILIES = {
    "sglang gqa": ("Qwen/Qwen3-8B", dict(gpu="h100-sxm")),
    "sglang mla": ("deepseek-ai/DeepSeek-V3", dict(gpu="h200-sxm", tp=8)),
    "sglang dsa": ("deepseek-ai/DeepSeek-V3.2", dict(gpu="h200-sxm", tp=8)),
    "sglang hybrid_swa (ratio)": ("openai/gpt-oss-120b", dict(gpu="h100-sxm")),
    "sglang hybrid_swa (request cap)": (
        "openai/gpt-oss-120b",
        dict(gpu="h100-sxm", disable_radix_cache=True, max_running_requests=64),
    ),
    "sglang hybrid_mamba": ("Qwen/Qwen3.5-27B", dict(gpu="h100-sxm")),
    "sglang dsv4": ("deepseek-ai/DeepSeek-V4.1-Flash", {}),
    "vllm gqa": ("Qwen/Qwen3-8B", dict(gpu="h100-sxm", engine="vllm")),
    "vllm mla": ("deepseek-ai/DeepSeek-V3", dict(gpu="h200-sxm", tp=8, engine="vllm")),
    "vllm dsa": ("deepseek-ai/DeepSeek-V3.2", dict(gpu="h200-sxm", tp=8, engine="vllm")),
    "vllm hybrid_swa": ("openai/gpt-oss-120b", dict(gpu="h100-sxm", engine="vllm")),
    "vllm hybrid_mamba": ("Qwen/Qwen3.5-27B", dict(gpu="h100-sxm", engine="vllm")),
    "vllm dsv4": ("deepseek-ai/DeepSeek-V4.1-Flash", dict(engine="vllm")),
}


def best_of(n, fn):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def _grid(engine: str, dsv4: bool, request_cap: bool) -> dict:
    """300,000 points: SGLang mfs x context x target; vLLM (which ignores SGLang's --mem-fraction-static) context x
    max_num_seqs x target."""
    ctx = [(512 if dsv4 else 64) * (i + 1) for i in range(2000)]
    if engine == "vllm" or request_cap:
        return {
            "context_length": ctx,
            "max_running_requests": [8 * (i + 1) for i in range(50)],
            "target_requests": [1, 16, 64],
        }
    return {
        "mem_fraction_static": [round(0.5 + i * 0.01, 2) for i in range(50)],
        "context_length": ctx,
        "target_requests": [1, 16, 64],
    }


def per_family() -> None:
    import numpy as np

    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import _fit_group, evaluate_group, sweep

    print("| engine x family | path | arithmetic (points/s) | rows to CSV in memory (points/s) |")
    print("|---|---|---|---|")
    n = 1_000_000
    rng = np.random.default_rng(0)
    mfs = np.round(rng.uniform(0.5, 0.99, n), 3)
    mrr = rng.integers(1, 512, n)
    tgt = rng.integers(1, 64, n)
    for name, (model, kw) in FAMILIES.items():
        base = Deployment(model=model, **kw)
        engine = kw.get("engine", "sglang")
        dsv4 = "V4" in model
        ctx = rng.integers(1024, 1048576 if dsv4 else 131072, n)
        g, _ = _fit_group(base, {})
        arith = "-"
        if g.method == "vector":
            cap = mrr if "request cap" not in name else np.full(n, 64)
            util = mfs if engine == "vllm" else None  # vLLM: the same fractions as its gpu_memory_utilization
            dt, _ = best_of(
                3,
                lambda g=g, ctx=ctx, cap=cap, util=util: evaluate_group(
                    g,
                    mem_fraction_static=mfs,
                    context_length=ctx,
                    max_running_requests=cap,
                    max_total_tokens=None,
                    target_requests=tgt,
                    gpu_memory_utilization=util,
                ),
            )
            arith = f"{n / dt / 1e6:.1f} M"
        t = sweep(base, _grid(engine, dsv4, "request cap" in name))
        methods = ",".join(sorted({x.method for x in t.groups}))
        dt_csv, _ = best_of(2, lambda t=t: t.write_csv(io.StringIO()))
        print(f"| {name} | {methods} | {arith} | {len(t) / dt_csv / 1e6:.2f} M ({len(t):,} rows) |")


def library() -> None:
    from kvplan.deployment import Deployment
    from kvplan.planning.sweep import sweep

    axes = {
        "model": ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3"],
        "gpu": ["h100-sxm", "h200-sxm", "b200", "mi300x"],
        "tp": [4, 8],
        "kv_cache_dtype": ["bf16", "fp8_e4m3"],
        "mem_fraction_static": [round(0.5 + i * 0.01, 2) for i in range(50)],
        "context_length": [1024 * (i + 1) for i in range(500)],
    }
    sweep(Deployment(), {"model": axes["model"], "gpu": axes["gpu"]})  # warm the preset caches
    dt, t = best_of(3, lambda: sweep(Deployment(), axes))
    dt_n, _ = best_of(1, lambda: t.n_meet)
    print(
        f"sweep(): {len(t):,} points ({len(t.groups)} groups, one fit() each) in {dt * 1e3:.0f} ms; the counts "
        f"(n_fit, n_meet: one streaming pass of the arithmetic) in {dt_n * 1e3:.0f} ms"
    )
    dt_csv, _ = best_of(1, lambda: t.write_csv(io.StringIO()))
    print(f"write_csv(): {len(t):,} rows in {dt_csv:.2f} s = {len(t) / dt_csv / 1e6:.2f} M rows/s")
    dt_js, _ = best_of(1, lambda: t.write_jsonl(io.StringIO()))
    print(f"write_jsonl(): {len(t):,} rows in {dt_js:.2f} s = {len(t) / dt_js / 1e6:.2f} M rows/s")


_RSS = (
    "import resource, subprocess, sys, time\nt = time.perf_counter()\nsubprocess.run(sys.argv[1:], check=True)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)

_STREAM = (
    "import sys\nfrom kvplan.deployment import Deployment\nfrom kvplan.planning.sweep import parse_axis, sweep\n"
    "axes = {f: parse_axis(v, field=f) for f, v in zip(sys.argv[2::2], sys.argv[3::2])}\n"
    "t = sweep(Deployment(), axes)\nfail = t.n_meet\n"
    "with open(sys.argv[1], 'w', encoding='utf-8', newline='') as fh:\n    t.write_csv(fh)\n"
)


def _child(cmd: list[str], out: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, rows) of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, "-c", _RSS, *cmd], check=True, env=env, cwd=ROOT, capture_output=True, text=True
    )
    secs, kib = res.stdout.split()
    with out.open("rb") as fh:
        rows = sum(1 for _ in fh) - 1
    return float(secs), int(kib) / 1024, rows


def end_to_end(skip_5m: bool) -> None:
    grids = {
        "100k": [
            "-m",
            "Qwen/Qwen3-8B",
            "-g",
            "h100-sxm,h200-sxm",
            "--tp",
            "1,2",
            "--mem-fraction-static",
            "0.50:0.99:0.01",
            "--context-length",
            "1k:1000k:2k",
        ],
        # 5 families x 2 engines = 10 groups of 100,000 points (no --mem-fraction-static axis: vLLM's column is its
        # utilisation; the target, context and workload axes are both engines')
        "1M mixed": [
            "-m",
            "Qwen/Qwen3-8B,deepseek-ai/DeepSeek-V3,openai/gpt-oss-120b,Qwen/Qwen3.5-27B,"
            "deepseek-ai/DeepSeek-V4.1-Flash",
            "-g",
            "h200-sxm",
            "--tp",
            "8",
            "--engine",
            "sglang,vllm",
            "--context-length",
            "1k:400k:1k",
            "--requests",
            "1:25",
            "--input-len",
            "1000:10000:1000",
        ],
        "5M": [
            "-m",
            "Qwen/Qwen3-8B,meta-llama/Llama-3.1-70B",
            "-g",
            "h100-sxm,h200-sxm",
            "--tp",
            "2,4",
            "--mem-fraction-static",
            "0.50:0.99:0.01",
            "--context-length",
            "1k:12500k:1k",
        ],
    }
    print("| grid | writer | rows | seconds | rows/s | peak RSS (MB) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "sweep.csv"
        for name, args in grids.items():
            if name == "5M" and skip_5m:
                continue
            if name != "5M":
                cli = [sys.executable, "-m", "kvplan", "sweep", *args, "--format", "csv", "-o", str(out)]
                s, mb, rows = _child(cli, out)
                print(f"| {name} | kvplan sweep --format csv -o | {rows:,} | {s:.2f} | {rows / s:,.0f} | {mb:,.0f} |")
            axes = [x for a, v in zip(args[::2], args[1::2], strict=True) for x in (_field(a), v)]
            s, mb, rows = _child([sys.executable, "-c", _STREAM, str(out), *axes], out)
            print(
                f"| {name} | streaming write_csv (+ n_meet pass) | {rows:,} | {s:.2f} | {rows / s:,.0f} | {mb:,.0f} |"
            )


def _field(flag: str) -> str:
    return {"-m": "model", "-g": "gpu", "--requests": "target_requests"}.get(flag, flag.lstrip("-").replace("-", "_"))


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} (1 / 5 min), {os.cpu_count()} cores")
    per_family()
    library()
    end_to_end("--skip-5m" in sys.argv)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
