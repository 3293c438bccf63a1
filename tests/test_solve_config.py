"""``kvplan solve config`` (issue 23 item 1) and ``solve concurrency`` with latency targets.

The choice is checked by hand on a small grid: every candidate's numbers are computed here independently, by
``kvplan.planning.plan.fit`` (capacity) and ``kvplan.planning.speed.speed`` (latency, throughput) for the same
deployment, the filters and the ranking applied here, and the cost arithmetic written out.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from kvplan.deployment import Deployment
from kvplan.planning.plan import fit
from kvplan.planning.solve_config import ConfigQuery, Targets, misses, solve_config
from kvplan.planning.speed import SpeedInputs, speed
from tests.test_sweep import run

MODEL = "Qwen/Qwen3-32B"
WORKLOAD = Deployment(engine="sglang", model=MODEL, input_len=8192, output_len=1024)
PRICES = {"h100-sxm": 2.5, "l40s": 0.9}


def _by_hand(gpu: str, tp: int, c: int, targets: Targets) -> dict:
    """One candidate judged here: fit for capacity, speed for the targets, the price per million output tokens."""
    dep = Deployment(engine="sglang", model=MODEL, gpu=gpu, tp=tp, input_len=8192, output_len=1024, target_requests=c)
    res = fit(dep)
    out = {"label": f"{gpu} x{tp} tp{tp}", "capacity": bool(res.meets_target), "num_gpus": res.num_gpus}
    if not res.meets_target:
        return out
    sp = speed(dep, SpeedInputs(concurrency=c))
    out["sp"] = sp
    out["ok"] = (
        (targets.ttft_s is None or sp.ttft_s <= targets.ttft_s)
        and (targets.tpot_s is None or sp.tpot_s <= targets.tpot_s)
        and (targets.min_throughput is None or sp.output_tokens_per_s >= targets.min_throughput)
    )
    # USD per million output tokens = USD/h per GPU x GPUs / (output tok/s x 3,600 s/h) x 1e6
    out["usd"] = PRICES[gpu] * res.num_gpus / (sp.output_tokens_per_s * 3600) * 1e6
    out["per_gpu"] = sp.output_tokens_per_s / res.num_gpus
    return out


@pytest.mark.parametrize("objective", ["cost", "throughput-per-gpu", "latency"])
def test_choice_by_hand_on_a_small_grid(objective):
    targets = Targets(ttft_s=2.6, tpot_s=0.05)
    q = ConfigQuery(
        base=WORKLOAD,
        axes={"gpu": ["h100-sxm", "l40s"], "tp": [1, 2, 4]},
        concurrency=(4,),
        targets=targets,
        objective=objective,
        costs=PRICES,
    )
    r = solve_config(q)
    hand = {f"{g} x{tp} tp{tp}": _by_hand(g, tp, 4, targets) for g in ("h100-sxm", "l40s") for tp in (1, 2, 4)}
    got = {c.label: c for c in r.candidates}
    assert set(got) == set(hand)
    # the filters: capacity first, then the targets
    for label, h in hand.items():
        c = got[label]
        if not h["capacity"]:
            assert c.status == "rejected" and c.rejected_by == "capacity" and c.reason.startswith("capacity: ")
        elif not h["ok"]:
            assert c.status == "rejected" and c.rejected_by in ("ttft_s", "tpot_s"), c.reason
        else:
            assert c.status in ("chosen", "runner-up"), (label, c.reason)
            assert c.speed["ttft_s"] == pytest.approx(h["sp"].ttft_s)
            assert c.speed["usd_per_million_output_tokens"] == pytest.approx(h["usd"])
    # the ranking
    passing = [lbl for lbl, h in hand.items() if h.get("ok")]
    key = {
        "cost": lambda lbl: (hand[lbl]["usd"], hand[lbl]["num_gpus"]),
        "throughput-per-gpu": lambda lbl: (-hand[lbl]["per_gpu"], hand[lbl]["num_gpus"]),
        "latency": lambda lbl: (hand[lbl]["sp"].ttft_s + 1024 * hand[lbl]["sp"].tpot_s, hand[lbl]["num_gpus"]),
    }[objective]
    want = sorted(passing, key=key)
    assert len(want) >= 2, "the grid must give a choice"
    assert r.chosen is not None and r.chosen.label == want[0]
    assert [c.label for c in sorted(r.runners_up, key=lambda c: c.rank or 0)] == want[1:]
    # the grid has both kinds of rejection: Qwen3-32B's bf16 weights (61 GiB) do not fit one L40S (capacity) and
    # the L40S pairs miss the 2.6 s TTFT at 8K prompts
    kinds = {c.rejected_by for c in r.rejected}
    assert "capacity" in kinds and kinds & {"ttft_s", "tpot_s"}


def test_cost_arithmetic_by_hand():
    from kvplan.planning.sweep.speed import usd_per_million

    # 2 x 2.50 USD/h = 5 USD/h; 324.8 output tok/s x 3,600 = 1,169,280 tok/h -> 5 / 1.16928 = 4.2761 USD per million
    assert usd_per_million(usd_per_gpu_hour=2.5, num_gpus=2, tokens_per_s=324.8) == pytest.approx(4.27613, rel=1e-5)
    q = ConfigQuery(
        base=WORKLOAD,
        axes={"gpu": ["h100-sxm"], "tp": [2]},
        concurrency=(8,),
        objective="cost",
        gpu_hour_cost=2.5,
    )
    c = solve_config(q).chosen
    assert c is not None
    sp = speed(
        Deployment(engine="sglang", model=MODEL, gpu="h100-sxm", tp=2, input_len=8192, output_len=1024),
        SpeedInputs(concurrency=8),
    )
    assert c.speed["usd_per_million_output_tokens"] == pytest.approx(2.5 * 2 / (sp.output_tokens_per_s * 3600) * 1e6)
    assert c.speed["output_tokens_per_s_per_gpu"] == pytest.approx(sp.output_tokens_per_s / 2)


def test_miss_words_say_by_how_much():
    sp = {"ttft_s": 3.0, "tpot_s": 0.04, "decode_tokens_per_s_per_request": 25.0, "output_tokens_per_s": 90.0}
    got = misses(Targets(ttft_s=2.0, tpot_s=0.05, min_throughput=100.0), sp)
    assert [m.target for m in got] == ["ttft_s", "output_tokens_per_s"]
    assert got[0].text == "ttft 3 s > 2 s (+50.0%)"
    assert got[1].text == "throughput 90 tok/s < 100 tok/s (-10.0%)"
    assert [m.text for m in misses(Targets(min_decode_rate=50.0), sp)] == ["decode rate 25 tok/s < 50 tok/s (-50.0%)"]


def test_a_concurrency_list_is_a_grid_axis_and_capacity_rejects_too_many():
    q = ConfigQuery(base=WORKLOAD, axes={"gpu": ["l40s"], "tp": [2]}, concurrency=(1, 64), objective="latency")
    r = solve_config(q)
    by_c = {c.row["target_requests"]: c for c in r.candidates}
    assert by_c[1].status == "chosen"
    assert by_c[64].rejected_by == "capacity" and "64 requests" in by_c[64].reason


# ------------------------------------------------------------------------------------------------ CLI


DONE = [
    "solve",
    "config",
    "-m",
    MODEL,
    "-g",
    "h100-sxm,h200-sxm,l40s",
    "--tp",
    "1,2,4,8",
    "--kv-cache-dtype",
    "auto,fp8_e4m3",
    "--input-len",
    "8192",
    "--output-len",
    "1024",
    "--ttft",
    "2",
    "--tpot",
    "0.05",
    "--objective",
    "cost",
]


def _costs(tmp_path):
    p = tmp_path / "costs.toml"
    p.write_text("[costs]\nh100-sxm = 2.5\nh200-sxm = 3.5\nl40s = 0.9\n")
    return str(p)


def test_done_means_command_json(tmp_path):
    r = run(*DONE, "--costs", _costs(tmp_path), "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["question"] == "config" and d["objective"] == "cost"
    assert d["answer"] == d["chosen"]["label"] and d["chosen"]["status"] == "chosen"
    assert d["runners_up"] and d["rejected"]
    assert len(d["candidates"]) == 3 * 4 * 2
    for c in d["candidates"]:
        assert c["reason"], c
        assert c["status"] in ("chosen", "runner-up", "rejected")
        if c["status"] == "rejected":
            assert c["rejected_by"] in ("capacity", "invalid", "ttft_s", "tpot_s"), c
    ranked = [c for c in d["candidates"] if c["rank"] is not None]
    usd = [c["usd_per_million_output_tokens"] for c in ranked]
    assert usd == sorted(usd)
    assert all(c["ttft_s"] <= 2 and c["tpot_s"] <= 0.05 for c in ranked)


def test_done_means_command_table_and_csv(tmp_path):
    r = run(*DONE, "--costs", _costs(tmp_path), "--format", "table")
    assert r.exit_code == 0, r.output
    assert "answer: " in r.stdout and "rejected: " in r.stdout and "capacity: " in r.stdout
    r = run(*DONE, "--costs", _costs(tmp_path), "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 24 and rows[0]["status"] == "chosen"
    assert {"tpot_s", "usd_per_million_output_tokens", "reason"} <= set(rows[0])


def test_a_row_equals_kvplan_speed(tmp_path):
    """The speed keys of a solve config candidate are kvplan speed's for the same deployment and concurrency."""
    r = run(
        *DONE[:4],
        "-g",
        "h100-sxm",
        "--tp",
        "2",
        "--input-len",
        "8192",
        "--output-len",
        "1024",
        "--concurrency",
        "8",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)["chosen"]
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    s = CliRunner().invoke(
        app,
        [
            "speed",
            "-m",
            MODEL,
            "-g",
            "h100-sxm",
            "--tp",
            "2",
            "--input-len",
            "8192",
            "--output-len",
            "1024",
            "--concurrency",
            "8",
            "--format",
            "json",
        ],
    )
    assert s.exit_code == 0, s.output
    want = json.loads(s.stdout)
    for k in ("prefill_tokens_per_s", "ttft_s", "tpot_s", "output_tokens_per_s", "total_tokens_per_s_per_gpu"):
        assert got[k] == pytest.approx(want[k], rel=1e-12), k


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--objective", "cheap"], "--objective"),
        (["--objective", "cost"], "--objective"),  # no prices
        (["--ttft", "-1"], "--ttft"),
        (["--ttft", "nan"], "--ttft"),
        (["--tpot", "0.05", "--min-decode-rate", "20"], "--min-decode-rate"),
        (["--concurrency", "0"], "--concurrency"),
        (["--concurrency", "a,b"], "--concurrency"),
        (["--requests", "4"], "--requests"),
        (["--gpu-hour-cost", "-2"], "--gpu-hour-cost"),
        (["--tp", "1,x"], "--tp"),
        (["-g", "h100-sxm,nosuchgpu"], "--gpu"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(extra, flag):
    r = run("solve", "config", "-m", MODEL, "-g", "h100-sxm", "--input-len", "8192", *extra)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], lines


@pytest.mark.parametrize(
    ("question", "extra", "flag"),
    [
        ("gpus", ["--ttft", "2"], "--ttft"),
        ("gpus", ["--format", "csv"], "--format"),
        ("context", ["--objective", "cost"], "--objective"),
        ("concurrency", ["--concurrency", "4"], "--concurrency"),
        ("concurrency", ["--min-throughput", "100"], "--min-throughput"),
        ("gpus", ["--tp", "1,2"], "--tp"),
    ],
)
def test_config_flags_refused_by_the_other_questions(question, extra, flag):
    r = run("solve", question, "-m", MODEL, "-g", "h100-sxm", *extra)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], lines


def test_no_candidate_meets_the_targets_exit_3():
    r = run(
        "solve",
        "config",
        "-m",
        MODEL,
        "-g",
        "l40s",
        "--tp",
        "2,4",
        "--input-len",
        "8192",
        "--ttft",
        "0.1",
        "--format",
        "json",
    )
    assert r.exit_code == 3, r.output
    d = json.loads(r.stdout)
    assert d["chosen"] is None and d["answer"] is None
    assert all(c["rejected_by"] == "ttft_s" for c in d["candidates"])


def test_calibration_for_another_gpu_class_is_refused(tmp_path):
    cal = tmp_path / "cal.toml"
    cal.write_text(
        '[calibration]\ngpu_class = "pcie-p2p"\nengine = "sglang"\nresidual = 0.0\nsource = "x"\n'
        "[calibration.factors]\nlink = 0.8\n"
    )
    r = run(
        "solve", "config", "-m", MODEL, "-g", "h100-sxm", "--tp", "2", "--input-len", "8192", "--calibration", str(cal)
    )
    assert r.exit_code == 2, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "--calibration" in r.stderr


def test_calibration_reaches_the_speed_of_each_candidate():
    from kvplan.perf.calibration import Calibration

    cls = speed(Deployment(engine="sglang", model=MODEL, gpu="h100-sxm", tp=2)).gpu_class
    cal = Calibration(gpu_class=cls, engine="sglang", factors={"memory": 0.5}, residual=0.0, source="test")
    q = ConfigQuery(base=WORKLOAD, axes={"gpu": ["h100-sxm"], "tp": [2]}, concurrency=(8,), calibration=cal)
    c = solve_config(q).chosen
    dep = Deployment(engine="sglang", model=MODEL, gpu="h100-sxm", tp=2, input_len=8192, output_len=1024)
    want = speed(dep, SpeedInputs(concurrency=8, calibration=cal))
    plain = speed(dep, SpeedInputs(concurrency=8))
    assert c is not None and c.speed["tpot_s"] == pytest.approx(want.tpot_s)
    assert want.tpot_s > plain.tpot_s  # half the memory efficiency: a slower decode


# ------------------------------------------------------------------------------------------------ solve concurrency


def test_concurrency_with_a_tpot_target_by_hand():
    from kvplan.planning.solve import solve_concurrency_targets

    dep = Deployment(engine="sglang", model=MODEL, gpu="h100-sxm", tp=2, input_len=8192, output_len=1024)
    r = solve_concurrency_targets(dep, Targets(tpot_s=0.03))
    assert r.bound == "tpot_s" and r.memory_answer is not None
    c = r.answer
    assert c is not None and 1 <= c < r.memory_answer
    assert speed(dep, SpeedInputs(concurrency=c)).tpot_s <= 0.03 < speed(dep, SpeedInputs(concurrency=c + 1)).tpot_s
    loose = solve_concurrency_targets(dep, Targets(tpot_s=10.0))
    assert loose.bound == "memory" and loose.answer == loose.memory_answer and loose.answer is not None
    assert not fit(Deployment(**{**_fields(dep), "target_requests": loose.answer + 1})).meets_target
    assert fit(Deployment(**{**_fields(dep), "target_requests": loose.answer})).meets_target


def _fields(dep: Deployment) -> dict:
    return {k: getattr(dep, k) for k in ("engine", "model", "gpu", "tp", "input_len", "output_len")}


def test_cli_concurrency_with_targets_json():
    r = run(
        "solve",
        "concurrency",
        "-m",
        MODEL,
        "-g",
        "h100-sxm",
        "--tp",
        "2",
        "--input-len",
        "8192",
        "--output-len",
        "1024",
        "--tpot",
        "0.03",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["bound"] == "tpot_s" and d["answer"] < d["memory_concurrency"]
    assert "bound: tpot_s" in d["answer_label"]


def test_a_flag_the_engine_does_not_read_makes_duplicates_not_candidates():
    q = ConfigQuery(
        base=WORKLOAD,
        axes={"gpu": ["h100-sxm"], "tp": [2], "engine": ["sglang", "vllm"], "mem_fraction_static": [0.8, 0.9]},
        concurrency=(4,),
    )
    r = solve_config(q)
    vllm = [c for c in r.candidates if c.row["engine"] == "vllm"]
    assert len(vllm) == 2
    assert sorted(str(c.rejected_by) for c in vllm) == ["None", "duplicate"]  # vLLM ignores --mem-fraction-static
    assert sum(c.row["engine"] == "sglang" and c.rank is not None for c in r.candidates) == 2


def test_cost_needs_a_price_for_every_gpu_that_passes(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[costs]\nh200-sxm = 3.5\n")
    r = run(
        "solve",
        "config",
        "-m",
        MODEL,
        "-g",
        "h100,h200-sxm",
        "--tp",
        "2",
        "--input-len",
        "8192",
        "--objective",
        "cost",
        "--costs",
        str(p),
    )
    assert r.exit_code == 2, r.output
    assert "--costs" in r.stderr and "'h100-sxm'" in r.stderr  # the preset id, as the costs table keys it
