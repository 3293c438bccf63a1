"""kvplan.planning.whatif: baseline from a real log (measured) and a changed deployment.

Hand numbers use SGLang's rest = A - P (1 - f) (kv_cache_configurator.py, v0.5.23) on the logged
A = 6.09 GiB, P = 21.63 GiB (qwq-32b-4xL4-tp4, QwQ-32B: 64 layers, 8 KV heads x 128, bf16, TP4 -> 65,536 B/token).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.inputs.logs import read_log_file
from kvplan.planning.whatif import whatif
from kvplan.views.whatif import render_whatif

LOGS = Path(__file__).resolve().parent / "validation" / "logs"
GiB = 2**30
QWQ = LOGS / "qwq-32b-4xL4-tp4.log"


def test_mem_fraction_keeps_measured_memory():
    w = whatif(read_log_file(QWQ), {"mem_fraction_static": 0.9}, gpu="l4")
    assert w.baseline.free_bytes == w.whatif.free_bytes == round(21.63 * GiB)
    assert w.whatif.weight_bytes == w.baseline.weight_bytes
    # 6.09 - 21.63 x 0.10 = 3.927 GiB -> 64,339 tokens
    assert abs(w.whatif.kv_pool_tokens - int(3.927 * GiB) // 65_536) <= 1
    assert w.changed == {"mem_fraction_static": (0.85, 0.9)}


def test_tp_change_rescales_weights_and_free():
    w = whatif(read_log_file(QWQ), {"tp": 8}, gpu="l4")
    # dense weights roughly halve from TP4 to TP8 (embedding/norm parts are not all split): 0.45..0.55 x
    ratio = w.whatif.weight_bytes / w.baseline.weight_bytes
    assert 0.45 < ratio < 0.56
    # PCIe communicators grow by 4 ranks x 0.0625 GiB = 0.25 GiB
    assert w.baseline.free_bytes - w.whatif.free_bytes == 4 * int(0.0625 * GiB)
    assert w.whatif.kv_bytes_per_token == 32_768
    assert any("re-estimated" in n for n in w.notes) and any("re-modelled" in n for n in w.notes)


def test_gpu_change_remodels_free():
    w = whatif(read_log_file(QWQ), {"gpu": "l40s"})
    assert w.whatif.weight_bytes == w.baseline.weight_bytes
    # L40S: CUDA total 44.42 GiB - context (142 SMs x 1,536 threads x 2,388 B = 520,851,456 B, kvplan.engines.runtime
    # context_bytes) - 4 x 0.0625 GiB (PCIe TP4) = 43.69 GiB
    assert abs(w.whatif.free_bytes / GiB - (47695611822 - 142 * 1536 * 2388) / GiB + 0.25) < 0.01


def test_renderers():
    w = whatif(read_log_file(QWQ), {"context_length": 32768}, gpu="l4")
    d = json.loads(render_whatif(w, "json"))
    assert d["baseline"]["context_length"] == 131072 and d["whatif"]["context_length"] == 32768
    csv = render_whatif(w, "csv")
    assert csv.splitlines()[0] == "quantity,baseline,whatif"
    assert "what-if" in render_whatif(w, "table")


def test_engine_switch_refused():
    with pytest.raises(InputError):
        whatif(read_log_file(QWQ), {"engine": "vllm"})


def test_vllm_utilization_moves_available():
    f = read_log_file(LOGS / "qwen3-235b-fp8-8xl40s-tp8-ep.log")
    w = whatif(f, {"gpu_memory_utilization": 0.95, "tp": None}, model="Qwen/Qwen3-235B-A22B-FP8")
    # total 44.42 GiB printed: + 0.05 x 44.42 = 2.22 GiB
    assert abs((w.whatif.kv_budget_bytes - w.baseline.kv_budget_bytes) / GiB - 0.05 * 44.42) < 0.01


def test_an_internal_error_in_the_weight_estimate_is_not_bad_input(monkeypatch):
    """A bug inside the estimate (here a KeyError) reaches the internal-error path; only InputError is bad input."""
    import kvplan.weights.estimate as est

    def broken(**_kw):
        raise KeyError("num_hidden_layers")

    monkeypatch.setattr(est, "estimate_weight_bytes", broken)
    with pytest.raises(KeyError):
        whatif(read_log_file(QWQ), {"tp": 8}, gpu="l4")


def test_an_input_error_of_the_weight_estimate_names_the_what_if(monkeypatch):
    import kvplan.weights.estimate as est

    def refuses(**_kw):
        raise InputError("tp 8 does not divide 7 heads", field="--tp-size")

    monkeypatch.setattr(est, "estimate_weight_bytes", refuses)
    with pytest.raises(InputError, match="cannot re-estimate the weights for the new parallelism"):
        whatif(read_log_file(QWQ), {"tp": 8}, gpu="l4")
