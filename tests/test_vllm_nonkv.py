"""vLLM's non-KV terms in cold mode (issue 25 item 1): each against every shipped log that prints it, and the
levers (--max-num-seqs, --max-num-batched-tokens, --enforce-eager) moving them as the release's code does.

Hand arithmetic for Llama-3.1-70B TP4 on an H100 under vLLM 0.34 (H 8,192, I 28,672, V 128,256, 80 layers):

* activation = max(B x 2 x (3 H + 3 I / tp), min(B, S) x V x 39): the forward at B 8,192 is
  8,192 x 2 x (24,576 + 21,504) = 754,974,720 B; the sampler at S 1,024 is 1,024 x 5,001,984 = 5,122,031,616 B.
* CUDA graphs = graphs x 80 x 266 KiB (21,790,720 B per graph); 0.34 off SM100 captures [1, 2, 4] + 8..248 step 8
  + 256..512 step 16 = 51 sizes up to min(2 S, 512, B), PIECEWISE for each and FULL for each <= S.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvplan.engines.vllm.budget import (
    vllm_cudagraph_capture_sizes,
    vllm_cudagraph_count,
    vllm_default_cuda_graph_bytes,
    vllm_default_graph_count,
    vllm_graph_bytes_per_graph,
)
from kvplan.engines.vllm.planner import VllmInputs, plan_vllm
from kvplan.units import GiB
from tests.test_vllm import CONFIGS, GRAPH_ESTIMATE_GIB, _cases, _inputs

PER_GRAPH_70B = 80 * 266 * 1024  # 21,790,720 B


def _llama70b(**over: Any) -> VllmInputs:
    from kvplan.inputs.resolve import resolve_model

    spec = resolve_model("meta-llama/Llama-3.1-70B")
    kw: dict[str, Any] = dict(
        config=spec.raw_config or spec.config,
        device_bytes=85_024_246_333,  # the h100-sxm preset's CUDA-visible total
        tp_size=4,
        gpu_name="NVIDIA H100 80GB HBM3",
        interconnect="nvlink",
        sm_major=9,
        engine_version="0.34.0",
    )
    kw.update(over)
    return VllmInputs(**kw)


def _terms(inp: VllmInputs) -> dict[str, int]:
    return dict(plan_vllm(inp).budget_terms)


def test_capture_sizes_by_release_rule():
    assert len(vllm_cudagraph_capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192)) == 3 + 31 + 17
    assert len(vllm_cudagraph_capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, stride16=False)) == 67
    assert vllm_cudagraph_capture_sizes(max_num_seqs=64, max_num_batched_tokens=8192)[-1] == 128
    assert len(vllm_cudagraph_capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, ceiling=1024)) == 83
    # B below the grid's top: m = B, and B itself is captured (0.14+)
    assert vllm_cudagraph_capture_sizes(max_num_seqs=1024, max_num_batched_tokens=100)[-3:] == [88, 96, 100]
    assert vllm_cudagraph_count(max_num_seqs=64, max_num_batched_tokens=8192, full_and_piecewise=True) == (19, 11)
    assert vllm_cudagraph_count(max_num_seqs=64, max_num_batched_tokens=8192, full_and_piecewise=False) == (19, 0)


def test_graph_count_by_release():
    kw = dict(max_num_seqs=1024, max_num_batched_tokens=8192)
    assert vllm_default_graph_count(engine_version="0.10.2", **kw) == 67  # PIECEWISE, stride 8
    assert vllm_default_graph_count(engine_version="0.11.0", **kw) == 134  # FULL_AND_PIECEWISE, stride 8
    assert vllm_default_graph_count(engine_version="0.26.0", **kw) == 102
    assert vllm_default_graph_count(engine_version="0.26.0", sm_major=10, **kw) == 102  # 512 ceiling still
    assert vllm_default_graph_count(engine_version="0.34.0", sm_major=10, **kw) == 166  # 1,024 on SM100


def test_llama70b_tp4_h100_defaults_each_term_named_with_its_lever():
    p = plan_vllm(_llama70b())
    t = dict(p.budget_terms)
    assert (p.max_num_batched_tokens, p.max_num_seqs) == (8192, 1024)
    assert t["activation"] == 1024 * 128_256 * 39 == 5_122_031_616
    assert t["cuda_graph"] == 102 * PER_GRAPH_70B == 2_222_653_440
    # + NCCL's NVLS buffers on an NVSwitch H100 at TP4: 16 channels x 2 x 1 MiB x 4 (kvplan.engines.runtime)
    assert t["non_torch"] == (128 + 512 + 128) * 1024 * 1024
    notes = dict(p.term_notes)
    assert "--max-num-seqs" in notes["activation"] and "1,024 rows" in notes["activation"]
    assert "102 graphs" in notes["cuda_graph"] and "--max-num-seqs" in notes["cuda_graph"]
    assert "--enforce-eager" in notes["cuda_graph"]
    assert "non_torch" in notes


def test_llama70b_max_num_seqs_moves_activation_and_graphs():
    t = _terms(_llama70b(max_num_seqs=64))
    # sampler 64 x 5,001,984 = 320,126,976 < forward 754,974,720: the forward bounds the peak
    assert t["activation"] == 8192 * 2 * (3 * 8192 + 3 * 28672 // 4) == 754_974_720
    assert t["cuda_graph"] == (19 + 11) * PER_GRAPH_70B == 653_721_600
    notes = dict(plan_vllm(_llama70b(max_num_seqs=64)).term_notes)
    assert "--max-num-batched-tokens" in notes["activation"]


def test_llama70b_max_num_batched_tokens_moves_activation_and_graphs():
    # B 512: the sampler sees min(512, 1,024) = 512 rows; the capture grid still reaches 512 (51 + 51 graphs)
    t = _terms(_llama70b(max_num_batched_tokens=512))
    assert t["activation"] == 512 * 128_256 * 39 == 2_561_015_808
    assert t["cuda_graph"] == 102 * PER_GRAPH_70B
    # B 256: m = 256, sizes [1, 2, 4, 8..248, 256] = 35, FULL for each (all <= S): 70 graphs
    t = _terms(_llama70b(max_num_batched_tokens=256))
    assert t["cuda_graph"] == 70 * PER_GRAPH_70B
    assert t["activation"] == 256 * 128_256 * 39


def test_enforce_eager_drops_the_graph_term():
    assert _terms(_llama70b(enforce_eager=True))["cuda_graph"] == 0


# ------------------------------------------------------------------ against the shipped logs

#: the link of each log's GPUs (the fixtures carry no GPU preset): the non-torch term depends on it
LINKS = {"qwen3-235b-fp8-8xl40s-tp8-ep": "pcie"}
#: logs whose printed graph figure the cold term misses, with why (each asserted to still miss: strict)
GRAPH_MISSES = {
    "gemma3-27b-mi300x-rocm": "ROCm (HIP graphs): 1.02 GiB logged for 134 graphs, about half what CUDA logs imply",
}


def _log_terms():
    rows = []
    for c in _cases():
        if c["id"] not in CONFIGS:  # the pre-MLA V0 build (docs/accuracy.md, excluded) and the -0731 DeepSeek-V4
            continue
        rep = c["reported"]
        for term, key in (("activation", "peak_activation_gib"), ("non_torch", "non_torch_gib")):
            if rep.get(key) is not None and rep[key] > 0 and rep.get("model_loading_gib"):
                rows.append((c, term, rep[key]))
        graph = GRAPH_ESTIMATE_GIB.get(c["id"], rep.get("cuda_graph_gib"))
        if graph is not None and graph > 0:
            rows.append((c, "cuda_graph", graph))
    return rows


LOG_TERMS = _log_terms()


@pytest.mark.parametrize("case,term,logged", LOG_TERMS, ids=[f"{c['id']}-{t}" for c, t, _ in LOG_TERMS])
def test_cold_term_within_half_gib_or_ten_percent_of_the_log(case, term, logged):
    """Each cold term within 0.5 GiB or 10 % of the figure the log prints.  The graph figure is the 0.20+ estimate
    where printed ('Estimated CUDA graph memory'), else the captured pool ('Graph capturing finished ... took',
    'N GiB for CUDAGraph memory'), compared with the graphs that release captures."""
    rep = case["reported"]
    inp = _inputs(case, weight_bytes=int(rep["model_loading_gib"] * GiB), interconnect=LINKS.get(case["id"], "nvlink"))
    p = plan_vllm(inp)
    if term == "cuda_graph":
        graphs = vllm_default_graph_count(
            engine_version=inp.engine_version,
            max_num_seqs=p.max_num_seqs,
            max_num_batched_tokens=p.max_num_batched_tokens,
            sm_major=inp.sm_major,
        )
        got = vllm_default_cuda_graph_bytes(config=inp.config, pp_size=inp.pp_size, graphs=graphs) / GiB
        assert vllm_graph_bytes_per_graph(config=inp.config, pp_size=inp.pp_size) > 0
    else:
        got = dict(p.budget_terms)[term] / GiB
    ok = abs(got - logged) <= 0.5 or abs(got - logged) <= 0.10 * logged
    if term == "cuda_graph" and case["id"] in GRAPH_MISSES:
        assert not ok, f"now within tolerance: drop the GRAPH_MISSES entry ({got:.2f} vs {logged})"
        return
    assert ok, (case["id"], term, round(got, 2), logged)


def test_cold_band_from_the_accuracy_table():
    """kvplan.planning.band: vLLM's p90 cold error (7.91 % over 22 logs, docs/accuracy.md) rounded up to 8 %."""
    from kvplan.planning.band import cold_band_percent, kv_pool_tokens_range

    assert cold_band_percent(engine="vllm", mode="cold") == 8
    assert cold_band_percent(engine="sglang", mode="cold") == 1  # SGLang p90 0.77 % with ROCm WNA16 MoE index tables
    assert cold_band_percent(engine="vllm", mode="measured") is None
    assert kv_pool_tokens_range(tokens=412_528, percent=9) == (375_400, 449_656)  # 412,528 x 0.91 / 1.09, rounded out
