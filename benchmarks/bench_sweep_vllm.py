"""Points per second of the vectorised vLLM arithmetic (kvplan.planning.sweep_vllm.evaluate_group), per family.

Each family's group is prepared once (one ``fit`` of the representative point, as ``kvplan sweep`` does), then
``evaluate_group`` runs over N random points of the numeric axes (gpu_memory_utilization, max_model_len,
max_num_seqs, target requests), in chunks of ``kvplan.planning.sweep.CHUNK_ROWS`` rows like the sweep's writers,
with and without a workload, and a worst case where vLLM refuses every row (1M-3M-token contexts: the estimated
maximum model length is searched per row).  Then the ``reason`` column (``vector_reasons``, per chunk).  Prints one
line per family; never asserted in tests.

    python benchmarks/bench_sweep_vllm.py [N]
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from kvplan.deployment import Deployment
from kvplan.planning import sweep as S
from kvplan.planning import sweep_vllm as SV
from kvplan.planning.plan import fit

FAMILIES = {
    "gqa": dict(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2),
    "gqa pp2": dict(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, pp=2),
    "mla": dict(model="deepseek-ai/DeepSeek-V3", gpu="h200-sxm", tp=8),
    "dsa": dict(model="deepseek-ai/DeepSeek-V3.2", gpu="b200", tp=8),
    "dsv4": dict(model="deepseek-ai/DeepSeek-V4-Flash", gpu="b200", tp=4),
    "hybrid_swa (gpt-oss)": dict(model="openai/gpt-oss-120b", gpu="h100-sxm", tp=2),
    "hybrid_swa (gemma-4)": dict(model="google/gemma-4-26B-A4B", gpu="h100-sxm"),
    "hybrid_swa (llama-4 chunked)": dict(model="meta-llama/Llama-4-Scout-17B-16E-Instruct", gpu="h200-sxm", tp=4),
    "hybrid_mamba (qwen3-next)": dict(model="Qwen/Qwen3-Next-80B-A3B-Instruct", gpu="h200-sxm", tp=2),
    "hybrid_mamba (kimi)": dict(model="moonshotai/Kimi-K3", gpu="b200", tp=8),
    "gqa v0 (0.6.4)": dict(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine_version="0.6.4"),
}


def _group(kw: dict) -> S.Group:
    base = Deployment(engine="vllm", allow_long_context=True, **kw)
    rep = replace(base, context_length=32768)
    g = S.Group(dep=base, labels={})
    if not SV.prepare_group(g, rep, fit(rep)):
        raise SystemExit(f"{kw['model']}: not vectorised")
    return g


def _inputs(n: int, rng: np.random.Generator) -> dict:
    return {
        "gpu_memory_utilization": rng.choice(np.round(np.arange(0.50, 0.96, 0.01), 2), n),
        "context_length": rng.choice(np.array([4096 * 2**i for i in range(9)]), n),
        "max_running_requests": rng.choice(np.array([-1, 8, 64, 256, 1024]), n),
        "target_requests": rng.choice(np.array([1, 4, 16, 64]), n),
    }


def _run(g: S.Group, ins: dict, workload: bool) -> float:
    n = len(ins["context_length"])
    t0 = time.perf_counter()
    for lo in range(0, n, S.CHUNK_ROWS):
        sl = slice(lo, lo + S.CHUNK_ROWS)
        m = len(ins["context_length"][sl])
        SV.evaluate_group(
            g,
            mem_fraction_static=None,
            gpu_memory_utilization=ins["gpu_memory_utilization"][sl],
            context_length=ins["context_length"][sl],
            max_running_requests=ins["max_running_requests"][sl],
            max_total_tokens=None,
            target_requests=ins["target_requests"][sl],
            input_len=np.full(m, 8192) if workload else None,
            output_len=np.full(m, 1024) if workload else None,
        )
    return n / (time.perf_counter() - t0)


def _reasons(g: S.Group, ins: dict) -> float:
    """Reasons per second for the first chunk's rows (``sweep_vllm.vector_reasons``)."""
    sl = slice(0, S.CHUNK_ROWS)
    m = len(ins["context_length"][sl])
    cols = SV.evaluate_group(
        g,
        mem_fraction_static=None,
        gpu_memory_utilization=ins["gpu_memory_utilization"][sl],
        context_length=ins["context_length"][sl],
        max_running_requests=ins["max_running_requests"][sl],
        max_total_tokens=None,
        target_requests=ins["target_requests"][sl],
    )
    cols.update(
        {
            "mem_fraction_static": np.full(m, np.nan),
            "context_length": ins["context_length"][sl],
            "requested_max_running_requests": ins["max_running_requests"][sl],
            "max_total_tokens": np.full(m, -1),
            "target_requests": ins["target_requests"][sl],
            "input_len": np.full(m, -1),
            "output_len": np.full(m, -1),
            "kv_bytes_per_token": np.zeros(m),
        }
    )
    t0 = time.perf_counter()
    SV.vector_reasons(g, cols, S._P)
    return m / (time.perf_counter() - t0)


def main(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(16)
    ins = _inputs(n, rng)
    refused = {**ins, "context_length": rng.choice(np.array([2**20, 2**21, 3_000_000]), n)}
    print(f"vLLM vectorised arithmetic, {n:,} points per family, chunks of {S.CHUNK_ROWS:,} rows (best of 3)")
    print(f"{'family':32s} {'points/s':>12s} {'+ workload':>12s} {'all refused':>12s} {'reasons/s':>12s}")
    for name, kw in FAMILIES.items():
        g = _group(kw)
        best = max(_run(g, ins, False) for _ in range(3))
        best_w = max(_run(g, ins, True) for _ in range(3))
        best_r = max(_run(g, refused, False) for _ in range(3))
        texts = max(_reasons(g, ins) for _ in range(3))
        print(f"{name:32s} {best:12,.0f} {best_w:12,.0f} {best_r:12,.0f} {texts:12,.0f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
