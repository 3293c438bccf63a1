"""Every shipped vLLM log that prints the activation peak, the non-torch memory or the CUDA-graph memory: kvplan's
cold term within 0.5 GiB or 10 % of it (issue 25, Done means).

The cold terms are the slices of the cold plan (scripts/accuracy_report.py ``inputs_for``, ``recover_deployment(
mode="cold")``): "activation peak", "runtime overhead" (the non-torch term) and "CUDA graphs".  Releases before
0.20 capture the graphs after the KV cache is sized, so the plan's graph slice is 0 there; the term compared is then
kvplan's graph estimate for that release (``budget.vllm_default_cuda_graph_bytes`` x ``vllm_default_graph_count``),
against the "Graph capturing finished ... took" line.  A release that prints both the profiled estimate and the
capture (0.26: "Estimated CUDA graph memory" and the capture line) is compared on the estimate, the figure its
budget subtracts.  Logs exempt from a term are in :data:`EXEMPT` with a reason the log itself shows; terms the cold
model still misses are in :data:`MISSES` with what is known, and asserted to still miss (drop the entry when fixed).
"""

from __future__ import annotations

import pytest

from kvplan.errors import InputError
from kvplan.units import GiB
from scripts.accuracy_report import LOGS, inputs_for, load_cases

ABS = 0.5 * GiB
REL = 0.10

#: (log, term) -> why the cold term is not compared
EXEMPT = {
    ("deepseek-v2-lite-h100-v0-premla", "non_torch"): "the log's own line shows 5.1 GiB held outside torch before "
    "profiling (initial_memory_usage 34.44 GiB with 29.30 GiB of weights, a Dec 2024 dev build, excluded from the "
    "summary in both modes): not a start-up term of a release",
}

#: (log, term) -> why kvplan's cold term still misses the printed figure (issue 25 stays open on these)
MISSES = {
    ("vllm-modal-qwen35-9b-l40s-fp8kv-0180", "graph"): "0.18.0 prints 'Estimated CUDA graph memory 1.58 GiB' for "
    "Qwen3.5-9B on an L40S; kvplan's per-release graph estimate gives 0.70 GiB (dense per-capture cost x graph "
    "count).  0.18 does not subtract the estimate from the KV budget, so the pool is not moved by it; the estimate's "
    "model for dense and hybrid-GDN models under 0.18+ is not yet read from the release's profile_cudagraph_memory",
    ("vllm-tokenkaki-qwen3-8b-a100-40gb-0191", "graph"): "0.19.1 prints an estimated 2.35 GiB for Qwen3-8B on an "
    "A100-40GB against kvplan's 0.79 GiB: the same estimate, too low for dense models from 0.18 (the l40s round's "
    "reading: with the Triton top-k/top-p sampler of 0.17+ priced at 14 B per logit the activation term is right "
    "and this graph term is what is left)",
}


def _terms():
    from kvplan.inputs.logs import read_log_file

    out = []
    for p in sorted(LOGS.glob("*.log")):
        try:
            f = read_log_file(p)
        except InputError:  # the negative fixtures
            continue
        if f.engine != "vllm":
            continue
        graph = f.extra.get("estimated_cuda_graph_bytes") or f.cuda_graph_bytes
        for term, val in (("activation", f.peak_activation_bytes), ("non_torch", f.non_torch_bytes), ("graph", graph)):
            if val:
                out.append((p.stem, term, int(val)))
    return out


TERMS = _terms()


def _cold_term(log_id: str, term: str) -> int:
    from kvplan.engines.vllm.budget import vllm_default_cuda_graph_bytes, vllm_default_graph_count
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import fit_recovered, recover_deployment

    model, gpu, over, _src = inputs_for(log_id, load_cases())
    rec = recover_deployment(read_log_file(LOGS / f"{log_id}.log"), model=model, gpu=gpu, overrides=over, mode="cold")
    res = fit_recovered(rec.deployment)
    slices = {s.name: s.bytes for s in res.memory}
    name = {"activation": "activation peak", "non_torch": "runtime overhead", "graph": "CUDA graphs"}[term]
    if term != "graph" or slices.get(name):
        return int(slices[name])
    dep = rec.deployment
    graphs = vllm_default_graph_count(
        engine_version=dep.engine_version,
        max_num_seqs=int(dep.max_running_requests or 256),
        max_num_batched_tokens=int(dep.chunked_prefill_size or 2048),
    )
    return vllm_default_cuda_graph_bytes(config=rec.model_spec.config, pp_size=dep.pp or 1, graphs=graphs)


def test_the_logged_terms_are_found():
    """Eleven logs print at least one term (a new one lands here, not outside the check)."""
    assert len({t[0] for t in TERMS}) == 11 and len(TERMS) == 19
    assert set(MISSES) <= {(a, b) for a, b, _ in TERMS}


@pytest.mark.parametrize(("log_id", "term", "logged"), TERMS, ids=[f"{a}-{b}" for a, b, _ in TERMS])
def test_cold_term_within_half_a_gib_or_ten_percent(log_id, term, logged):
    if (log_id, term) in EXEMPT:
        assert abs(_cold_term(log_id, term) - logged) > max(ABS, REL * logged), "now within: drop the EXEMPT entry"
        return
    got = _cold_term(log_id, term)
    if (log_id, term) in MISSES:
        assert abs(got - logged) > max(ABS, REL * logged), "now within: drop the MISSES entry"
        return
    assert abs(got - logged) <= max(ABS, REL * logged), (term, round(got / GiB, 3), round(logged / GiB, 3))
