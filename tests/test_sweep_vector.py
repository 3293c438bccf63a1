"""Streaming sweeps and the release's rule set in the vectorised path (issue 16).

* the writers evaluate and format the grid a chunk at a time: a counting sink sees at most ``chunk_rows`` lines per
  write, the vectorised arithmetic never runs on more than ``chunk_rows`` points at once, and the full columns
  (``SweepTable.cols``) are never built for a grid-order CSV / JSON lines output;
* the streamed output, the counts, the order and the rows are the ones of the fully materialised table;
* the vectorised arithmetic uses ``kvplan.engines.sglang.releases.rules_for(engine_version)``, and its rows equal
  ``fit`` for older releases too (multimodal models included, where ModelRunner cuts mem_fraction_static).
No timing or memory assertion: benchmarks/bench_sweep.py measures those.
"""

from __future__ import annotations

import io

import pytest

from kvplan.deployment import Deployment
from kvplan.planning import sweep as S
from kvplan.planning.plan import fit
from kvplan.planning.sweep import blocks as sweep_blocks
from kvplan.planning.sweep import groups as sweep_groups

BASE = Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm")
AXES = {
    "tp": [1, 2],
    "gpu": ["h100-sxm", "h200-sxm"],
    "mem_fraction_static": [0.6, 0.7, 0.8, 0.9],
    "context_length": [4096 * (i + 1) for i in range(40)],
    "target_requests": [1, 8, 64],
    "input_len": [1000, 9000],
}  # 4 groups x 960 points


class CountingSink(io.StringIO):
    """A text sink that remembers how many lines each write carried."""

    def __init__(self) -> None:
        super().__init__()
        self.lines_per_write: list[int] = []

    def write(self, s: str) -> int:
        self.lines_per_write.append(s.count("\n"))
        return super().write(s)


@pytest.fixture(scope="module")
def reference():
    t = S.sweep(BASE, AXES)
    t.cols  # noqa: B018 - build every column: the reference is the materialised table
    return t


@pytest.mark.parametrize("chunk", [1, 7, 1000, 960, 4096])
def test_csv_streams_in_chunks(reference, chunk, monkeypatch):
    seen: list[int] = []
    evaluate = S._evaluate

    def counting(g, ins):
        seen.append(len(ins["context_length"]))
        return evaluate(g, ins)

    t = S.sweep(BASE, AXES)
    monkeypatch.setattr(sweep_blocks, "_evaluate", counting)
    sink = CountingSink()
    assert t.write_csv(sink, chunk_rows=chunk) == len(t) == 3840
    assert t._cols is None  # the full columns were never built
    assert sink.lines_per_write[0] == 1  # the header
    assert max(sink.lines_per_write[1:]) <= chunk
    assert sum(sink.lines_per_write[1:]) == len(t)
    assert seen and max(seen) <= chunk  # the arithmetic never ran on more than one chunk
    assert sink.getvalue() == reference.to_csv()


@pytest.mark.parametrize("chunk", [5, 1024])
def test_jsonl_streams_in_chunks(reference, chunk):
    t = S.sweep(BASE, AXES)
    sink = CountingSink()
    t.write_jsonl(sink, chunk_rows=chunk)
    assert t._cols is None
    assert max(sink.lines_per_write) <= chunk
    assert sink.getvalue() == reference.to_jsonl()


def test_sorted_output_in_chunks(reference):
    t = S.sweep(BASE, AXES)
    idx = t.order("gpus")
    assert (idx == reference.order("gpus")).all()
    sink = CountingSink()
    t.write_csv(sink, idx, chunk_rows=100)
    assert max(sink.lines_per_write) <= 100
    assert sink.getvalue() == reference.to_csv(reference.order("gpus"))


def test_lazy_table_reads_like_the_materialised_one(reference):
    t = S.sweep(BASE, AXES)
    assert (t.n_fit, t.n_meet) == (reference.n_fit, reference.n_meet)
    assert t.varying() == reference.varying()
    for sort in ("concurrency", "tokens", "context", "none"):
        idx = t.order(sort)
        assert (idx == reference.order(sort)).all()
        assert (t.best_mask(idx[:20], sort) == reference.best_mask(idx[:20], sort)).all()
    for i in (0, 1, 959, 960, 1919, 3839):
        assert t.row(i) == reference.row(i)
        assert vars(t.deployment(i)) == vars(reference.deployment(i))
    assert t._cols is None
    rows = list(t.rows(chunk_rows=333))
    assert rows[::97] == [reference.row(i) for i in range(0, len(t), 97)]


def test_chunks_cross_block_boundaries():
    t = S.sweep(BASE, {"tp": [1, 2, 4], "context_length": [4096, 8192, 16384]})  # 3 blocks of 3 rows
    pieces = list(t.chunks(chunk_rows=4))
    assert [len(r) for r, _ in pieces] == [4, 4, 1]
    assert [list(c["gid"]) for _, c in pieces] == [[0, 0, 0, 1], [1, 1, 2, 2], [2]]
    with pytest.raises(ValueError):
        list(t.chunks(chunk_rows=0))


def test_per_point_groups_stream_too(monkeypatch):
    """Per-point groups (one fit() per point, evaluated once, kept; here vLLM without its vector module): the stream
    slices them."""
    monkeypatch.setattr(sweep_groups, "_vllm_module", lambda: None)
    base = Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", engine="vllm")
    t = S.sweep(base, {"context_length": [4096, 8192, 16384], "target_requests": [1, 100]})
    assert {g.method for g in t.groups} == {"point"}
    streamed = CountingSink()
    t.write_csv(streamed, chunk_rows=4)
    assert max(streamed.lines_per_write) <= 4
    ref = S.sweep(base, {"context_length": [4096, 8192, 16384], "target_requests": [1, 100]})
    ref.cols  # noqa: B018
    assert streamed.getvalue() == ref.to_csv()


@pytest.mark.parametrize(
    "model,version",
    [
        ("Qwen/Qwen3-8B", "0.3.0"),
        ("Qwen/Qwen3-8B", "0.4.1.post7"),
        ("Qwen/Qwen3-8B", "0.4.4"),
        ("deepseek-ai/DeepSeek-V3", "0.4.10"),
        ("Qwen/Qwen3-VL-8B-Instruct", "0.4.8"),
        ("Qwen/Qwen3-VL-8B-Instruct", None),
    ],
)
def test_vector_path_uses_the_release_rules(model, version):
    from kvplan.engines.sglang.releases import rules_for

    base = Deployment(model=model, gpu="h100-sxm", engine_version=version, tp=8 if "V3" in model else 1)
    t = S.sweep(
        base,
        {"mem_fraction_static": [0.6, 0.88], "context_length": [4096, 65536], "max_running_requests": [3, 40, 5000]},
    )
    assert all(g.method == "vector" for g in t.groups)
    assert all(g.rules is rules_for(version) for g in t.groups)
    from dataclasses import replace

    for i in range(len(t)):
        r = t.row(i)
        # the value the user gave (the column holds the value fit reports: ModelRunner's cut for a multimodal
        # model up to 0.4.8); the axes are row-major, mem_fraction_static outermost
        f = fit(replace(t.deployment(i), mem_fraction_static=[0.6, 0.88][i // 6]))
        assert (
            r["kv_budget_bytes"],
            r["kv_pool_tokens"],
            r["max_running_requests"],
            r["max_concurrency"],
            r["max_context_length"],
            r["fits"],
            r["meets_target"],
            r["verdict"],
            r["reason"],
            r["mem_fraction_static"],
        ) == (
            f.kv_budget_bytes,
            f.kv_pool_tokens,
            f.max_running_requests,
            int(f.max_concurrency),
            f.max_context_length,
            f.fits,
            f.meets_target,
            f.verdict,
            f.target_reason,
            f.mem_fraction_static,
        )
