"""The speed model against 68 public measurements (tests/data/speed_dev.jsonl, a verbatim copy of the project's
validation set): every usable row's fixture is run, its error computed (deterministic, no wall clock) and the
error bounds asserted, so that a change that makes the model worse fails.  docs/speed-accuracy.md holds the
per-row table (``python scripts/speed_accuracy.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("speed_accuracy", ROOT / "scripts" / "speed_accuracy.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["speed_accuracy"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def records():
    return _script().evaluate()


def test_the_data_is_the_shared_set():
    rows = _script().load_rows()
    assert len(rows) == 68
    assert sum(1 for r in rows if r["fixture"]["usable"]) == 59


def test_no_row_refused_for_a_gpu_in_the_catalog(records):
    ids = {p.stem for p in (ROOT / "configs" / "hardware").glob("*.toml")}
    for r in records:
        if r["gpu"] in ids and r["refused"]:
            assert "GPU preset" not in r["refused"], (r["id"], r["refused"])


#: (metric, median |error| bound, p90 |error| bound).  The issue's bar is 25% / 60% for all three; prefill_tokens_per_s
#: and tpot_s meet it, ttft_s meets the median and not the p90: 17.7% / 78.2% over 29 rows with the Qwen3.6-27B preset,
#: 22.7% / 78.2% over the 27 rows without it, since the routed experts' grouped GEMMs run at the class's own fraction
#: (kvplan.perf.efficiency expert_compute, 0.25 on nvlink-datacenter; 28.7% / 78.2% over 27 rows before).  Six rows
#: miss by more than 60% (four SGLang rows of the aiconfigurator set, the V4-Flash balanced cell on 4x B200, GB300:
#: docs/speed.md "TTFT: what is modelled, what still misses") and hold the p90.  The bounds pin today's errors with a
#: small margin (the median's holds with or without the 27B preset) so that a change cannot make it worse unnoticed.
BOUNDS = [("prefill_tokens_per_s", 0.25, 0.60), ("tpot_s", 0.25, 0.60), ("ttft_s", 0.23, 0.79)]


@pytest.mark.parametrize("metric,median_bound,p90_bound", BOUNDS)
def test_error_bounds(records, metric, median_bound, p90_bound):
    s = _script().summary(records)[metric]
    assert s["median_abs"] <= median_bound, s
    assert s["p90_abs"] <= p90_bound, s


def test_rows_on_a_documented_fabric_run_with_its_bus_bandwidth():
    """The Kimi-K2.6 boxes' measured NCCL bus bandwidth reaches the model as ``--link-bandwidth`` = busBW / the
    class's 0.34: 37.6 / 0.34 = 110.6 GB/s for the XML-graph host, 40.1 / 0.34 = 117.9 for the 4-switch one; a row
    whose interconnect names neither keeps the preset's link."""
    mod = _script()
    rows = {r["id"]: r for r in mod.load_rows()}
    xml = rows["rtx6kpro-kimik26-8x-vllm-dcp1-mtp3-prefill-8k"]
    switches = rows["rtx6kpro-kimik26-16x-vllm-tp16-prefill-8k"]
    assert mod.fabric_link_gbs(xml) == pytest.approx(37.6 / 0.34)
    assert mod.fabric_link_gbs(switches) == pytest.approx(40.1 / 0.34)
    assert mod.fabric_link_gbs(rows["seed-dsv41-8xmaxq-sgl-128k-chunk2048"]) is None
    args = mod.fixture_args(xml["fixture"], None, mod.fabric_link_gbs(xml))
    assert args[args.index("--link-bandwidth") + 1] == "110.6"
