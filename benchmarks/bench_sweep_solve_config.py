"""Time ``solve config`` on an 8,112-candidate grid (issue 23 item 1).  Prints, asserts nothing.

    python benchmarks/bench_sweep_solve_config.py

The grid: Qwen3-32B on H100 SXM and H200, TP 1/2/4/8, 26 memory fractions x 13 context lengths x 3 concurrencies
(8K + 1K workload, TTFT <= 2 s, TPOT <= 0.05 s).  The candidates are one sweep; the speed is one speed() per
distinct group, workload and concurrency (:class:`kvplan.planning.sweep.speed.SpeedColumns`).
"""

from __future__ import annotations

import time

from kvplan.deployment import Deployment
from kvplan.planning.solve_config import ConfigQuery, Targets, solve_config
from kvplan.planning.sweep import parse_axis


def main() -> None:
    q = ConfigQuery(
        base=Deployment(engine="sglang", model="Qwen/Qwen3-32B", input_len=8192, output_len=1024),
        axes={
            "gpu": ["h100-sxm", "h200-sxm"],
            "tp": [1, 2, 4, 8],
            "mem_fraction_static": parse_axis("0.70:0.95:0.01", field="mem_fraction_static"),
            "context_length": parse_axis("16k:64k:4096", field="context_length"),
        },
        concurrency=(1, 8, 32),
        targets=Targets(ttft_s=2.0, tpot_s=0.05),
    )
    solve_config(q)  # warm: the per-group fits' caches, numpy
    t0 = time.perf_counter()
    r = solve_config(q)
    t1 = time.perf_counter()
    print(f"{len(r.candidates):,} candidates, {len(r.runners_up) + 1:,} pass: {t1 - t0:.2f} s ({r.notes[0]})")


if __name__ == "__main__":
    main()
