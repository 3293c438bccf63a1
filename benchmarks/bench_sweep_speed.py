"""Time a 100,000-point sweep with and without the speed / cost columns (issue 23 item 2).  Prints, asserts nothing.

    python benchmarks/bench_sweep_speed.py

The speed columns come from :class:`kvplan.planning.sweep.speed.SpeedColumns` (one speed() per distinct group and
workload, broadcast over the chunk); the grid: Qwen3-32B on H100 SXM, TP 1/2/4/8, 25 memory fractions x 40 context
lengths x 25 request caps = 100,000 points.
"""

from __future__ import annotations

import time

from kvplan.deployment import Deployment
from kvplan.planning.sweep import sweep
from kvplan.planning.sweep.speed import SpeedColumns


def main() -> None:
    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", input_len=8192, output_len=1024)
    axes: dict[str, list] = {
        "tp": [1, 2, 4, 8],
        "mem_fraction_static": [round(0.70 + 0.01 * i, 2) for i in range(25)],
        "context_length": [16384 + 4096 * i for i in range(40)],
        "max_running_requests": [8 * (i + 1) for i in range(25)],
    }
    sweep(base, axes)  # warm: the per-group fits' caches, numpy
    t0 = time.perf_counter()
    table = sweep(base, axes)
    n = sum(len(rows) for rows, _ in table.chunks())
    t1 = time.perf_counter()
    table = sweep(base, axes)
    fits = 0
    sc = SpeedColumns(table, concurrency=16, gpu_hour_cost=2.5)
    m = 0
    for rows, c in table.chunks():
        sc.chunk(rows, c)
        m += len(rows)
        fits += int(c["fits"].sum())
    t2 = time.perf_counter()
    print(
        f"{n:,} points: capacity only {t1 - t0:.2f} s; with speed and cost {t2 - t1:.2f} s "
        f"({(t2 - t1) / (t1 - t0):.2f}x; {len(sc._memo)} speed() calls)"
    )

    import io

    from kvplan.planning.sweep.speed import write_csv_with_speed, write_jsonl_with_speed

    # end to end, as `kvplan sweep --format csv|jsonl` writes it: the capacity-only sweep against --speed
    for name, plain, with_speed in (
        ("CSV", "write_csv", write_csv_with_speed),
        ("JSON lines", "write_jsonl", write_jsonl_with_speed),
    ):
        t3 = time.perf_counter()
        getattr(sweep(base, axes), plain)(io.StringIO())
        t4 = time.perf_counter()
        t = sweep(base, axes)
        with_speed(t, io.StringIO(), SpeedColumns(t, concurrency=16, gpu_hour_cost=2.5))
        t5 = time.perf_counter()
        print(
            f"written as {name}: capacity only {t4 - t3:.2f} s; with speed and cost {t5 - t4:.2f} s "
            f"({(t5 - t4) / (t4 - t3):.2f}x)"
        )


if __name__ == "__main__":
    main()
