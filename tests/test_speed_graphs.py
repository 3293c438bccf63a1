"""The prefill CUDA-graph decision the speed model takes from the engine release's own rule (kvplan.perf.graphs):
hand-checked against SGLang's code (0.5.6 server_args.py ``enable_piecewise_cuda_graph = False``; 0.5.10
``_handle_piecewise_cuda_graph``; 0.5.15 server_args.py / 0.5.23 arg_groups/cuda_graph_hook.py
``disable_breakable_cudagraph_if_incompatible``: DeepSeek-V4 off on every GPU)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.inputs.resolve import resolve_model
from kvplan.perf.graphs import sglang_prefill_graph


def _graph(model: str, version: str | None, **kw: object) -> bool:
    args: dict[str, object] = dict(
        vendor="nvidia", pp=1, attn_dp=1, dcp=1, disable_cuda_graph=False, speculative_algorithm=""
    )
    args.update(kw)
    return sglang_prefill_graph(version=version, model=resolve_model(model), **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "model,version,kw,expected",
    [
        ("Qwen/Qwen3-32B", "0.5.6", {}, False),  # no prefill graph before 0.5.10 (piecewise is opt-in)
        ("Qwen/Qwen3-32B", "0.5.12", {}, True),  # piecewise on by default, 0.5.10 - 0.5.13
        ("Qwen/Qwen3-32B", "0.5.12", {"speculative_algorithm": "EAGLE"}, False),  # ... but not with speculation
        ("Qwen/Qwen3-32B", None, {}, True),  # breakable graph, the CUDA default from 0.5.14
        ("Qwen/Qwen3-32B", None, {"disable_cuda_graph": True}, False),
        ("Qwen/Qwen3-32B", None, {"pp": 2}, False),
        ("deepseek-ai/DeepSeek-V4-Flash", "0.5.15", {}, False),  # DeepSeek-V4: eager on every GPU
        ("deepseek-ai/DeepSeek-V4-Flash", None, {}, False),
    ],
)
def test_release_rule(model, version, kw, expected):
    assert _graph(model, version, **kw) is expected


def _run(*extra: str) -> dict:
    res = CliRunner().invoke(app, ["speed", "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_eager_prefill_costs_launches_not_replays():
    """The same H200 deployment of DeepSeek-V4-Flash: its prefill is eager (the release's rule), so a chunk pays
    15 us per launched kernel where a replayed one pays 2.5 us (the nvlink-datacenter class)."""
    out = _run(
        "-m",
        "deepseek-ai/DeepSeek-V4-Flash",
        "-g",
        "h200-sxm",
        "--tp-size",
        "4",
        "--input-len",
        "8192",
        "--output-len",
        "16",
        "--engine-version",
        "0.5.15",
    )
    assert out["prefill_graph"] is False
    kern = [p for p in out["prefill_chunk"]["parts"] if p["name"].startswith("kernels:")]
    assert len(kern) == 1 and "eager launch" in kern[0]["name"]
    n = int(kern[0]["name"].split(":")[1].split("x")[0].replace(",", ""))
    assert kern[0]["seconds"] == pytest.approx(n * 15e-6)


def test_eagle_prefill_adds_the_draft_extend():
    """EAGLE-class speculation: the draft's extend over the prompt is part of the prefill (SGLang eagle_worker_v2
    ``_forward_prefill_batch``): each layer part of the target's prefill / 43 (DeepSeek-V4-Flash's 43 decoder
    layers, one MTP layer), plus 25 eager launches x 15 us per chunk."""
    base = [
        "-m",
        "deepseek-ai/DeepSeek-V4-Flash",
        "-g",
        "h200-sxm",
        "--tp-size",
        "4",
        "--input-len",
        "8192",
        "--output-len",
        "16",
        "--engine-version",
        "0.5.15",
    ]
    plain = _run(*base)
    spec = _run(
        *base,
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "1",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "2",
    )
    assert not [p for p in plain["prefill_total"]["parts"] if p["name"].startswith("draft prefill")]
    parts = {p["name"]: p for p in spec["prefill_total"]["parts"]}
    drafted = [n for n in parts if n.startswith("draft prefill: ") and n != "draft prefill: kernels"]
    assert drafted
    for n in drafted:
        target = parts[n.removeprefix("draft prefill: ")]
        assert parts[n]["seconds"] == pytest.approx(target["seconds"] / 43)
    assert parts["draft prefill: kernels"]["seconds"] == pytest.approx(25 * 15e-6 * spec["prefill_chunks"])
    extra = sum(parts[n]["seconds"] for n in drafted) + parts["draft prefill: kernels"]["seconds"]
    assert spec["prefill_s"] == pytest.approx(plain["prefill_s"] + extra)
