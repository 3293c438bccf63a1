"""kvplan calibrate-speed (issue 23 item 4): benchmark readers, the calibration file, the fit, and the seed's
calibrated predictions (one 32K point predicts its prompt-length ladder and chunk sizes: median |error| <= 10%)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs.bench import MAX_BENCH_BYTES, read_bench
from kvplan.perf.calibration import (
    Calibration,
    apply,
    calibration_toml,
    parse_calibration,
    phase_constants,
    time_scaled,
)
from kvplan.perf.efficiency import CLASSES

DATA = Path(__file__).resolve().parent / "data"
BENCH = DATA / "bench"
SEED_ARGS = [
    "--engine", "sglang", "--engine-version", "0.5.21", "--model", "deepseek-ai/DeepSeek-V4.1-Flash",
    "--gpu", "rtx-pro-6000-maxq", "--tp-size", "8", "--ep-size", "8", "--kv-cache-dtype", "fp8_e4m3",
    "--chunked-prefill-size", "2048", "--attention-backend", "dsv4", "--moe-runner-backend", "flashinfer_mxfp4",
    "--mem-fraction-static", "0.72", "--context-length", "1048576", "--max-running-requests", "16",
    "--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "6",
]  # fmt: skip


def _rows() -> dict[str, dict]:
    out = {}
    for line in (DATA / "speed_dev.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            out[r["id"]] = r
    return out


# --------------------------------------------------------------------------------------------- readers


def test_bench_serving_single_request_is_a_cold_prefill():
    p = read_bench(str(BENCH / "sglang_bench_serving_32k.jsonl"))
    assert (p.source, p.input_len, p.output_len, p.concurrency) == ("sglang bench_serving", 32768, 1, 1)
    # prompt tokens / duration, as the dev set records a cold prefill: 32,768 / 4.553641 s
    assert p.measured["prefill_tokens_per_s"] == pytest.approx(32768 / 4.553641)
    assert p.measured["ttft_s"] == pytest.approx(4.5536)
    assert "tpot_s" not in p.measured  # one output token: no TPOT


def test_vllm_bench_serve_result():
    p = read_bench(str(BENCH / "vllm_bench_serve_qwen3_32b.json"))
    assert p.source == "vllm bench serve"
    # 524,288 / 64 requests and 65,536 / 64
    assert (p.input_len, p.output_len, p.concurrency, p.num_prompts) == (8192, 1024, 8, 64)
    assert p.measured["ttft_s"] == pytest.approx(0.5408)  # the median, ms -> s
    assert p.measured["tpot_s"] == pytest.approx(0.00688)
    assert p.measured["output_tokens_per_s"] == 1067.0
    assert p.measured["total_tokens_per_s"] == 9603.4
    assert "prefill_tokens_per_s" not in p.measured  # 64 requests: not a cold prefill


def test_bench_one_batch_and_toml():
    p = read_bench(str(BENCH / "sglang_bench_one_batch.jsonl"))
    assert (p.source, p.input_len, p.output_len, p.concurrency) == ("sglang bench_one_batch", 8192, 16, 1)
    assert p.measured == {"prefill_tokens_per_s": 20417.2, "tpot_s": 0.00791}
    t = read_bench(str(BENCH / "hand_point.toml"))
    assert (t.source, t.input_len, t.measured) == ("toml", 32768, {"prefill_tokens_per_s": 7196.0})


def test_truncated_oversized_and_foreign_files_are_one_line_exit_2(tmp_path):
    whole = (BENCH / "sglang_bench_serving_32k.jsonl").read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(whole[: len(whole) // 2])
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(MAX_BENCH_BYTES + 1)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    for f in (cut, big, other):
        res = CliRunner().invoke(app, ["calibrate-speed", str(f)])
        assert res.exit_code == 2, (f, res.output)
        msg = res.stderr.strip()
        assert msg.count("\n") == 0 and "RESULT" in msg, msg
    with pytest.raises(InputError, match="truncated"):
        read_bench(str(cut))


# --------------------------------------------------------------------------------------------- the file


def test_phase_constants_and_time_scaling():
    shares = {"compute": 0.13, "memory": 0.18, "communication": 0.55, "overhead": 0.13}
    assert phase_constants(shares, graph=False) == ("link", "alpha_s")
    both = {"compute": 0.0, "memory": 0.26, "communication": 0.12, "overhead": 0.62}
    assert phase_constants(both, graph=True) == ("memory", "kernel_graph_s", "step_s")
    assert time_scaled(("link", "alpha_s"), 1.25) == {"link": 0.8, "alpha_s": 1.25}


def test_calibration_round_trip_and_apply():
    cal = Calibration("pcie-p2p", "sglang", {"link": 0.8, "alpha_s": 1.25}, 0.01, 'a "quoted" source')
    back = parse_calibration(calibration_toml(cal), where="x")
    assert back == cal
    eff = apply(CLASSES["pcie-p2p"], cal)
    assert eff.link == pytest.approx(0.34 * 0.8) and eff.alpha_s == pytest.approx(20e-6 * 1.25)
    assert eff.compute == CLASSES["pcie-p2p"].compute


def test_calibration_for_another_gpu_class_is_refused():
    cal = Calibration("pcie-p2p", "sglang", {"link": 0.8})
    with pytest.raises(InputError, match=r"GPU class pcie-p2p.*class nvlink-datacenter"):
        apply(CLASSES["nvlink-datacenter"], cal)


@pytest.mark.parametrize(
    "text,match",
    [
        ("[calibration]\ngpu_class='a'\nengine='b'\n[calibration.factors]\nwarp=2\n", "unknown constant"),
        ("[calibration]\ngpu_class='a'\nengine='b'\n[calibration.factors]\nlink=0\n", "factor link"),
        ("x = [", "not TOML"),
        ("[other]\n", "no \\[calibration\\]"),
    ],
)
def test_bad_calibration_files(text, match):
    with pytest.raises(InputError, match=match):
        parse_calibration(text, where="cal.toml")


# --------------------------------------------------------------------------------------------- the fit


def _seed_dep(row: dict) -> Deployment:
    f = row["fixture"]
    a = f["args"]
    knob = dict(zip(a[::2], a[1::2], strict=False))
    return Deployment(
        engine=f["engine"],
        engine_version=f["engine_version"],
        model=f["model"],
        gpu=f["gpu"],
        tp=f["tp"],
        ep=f["ep"],
        kv_cache_dtype=f["kv_cache_dtype"],
        chunked_prefill_size=int(knob["--chunked-prefill-size"]),
        attention_backend=knob["--attention-backend"],
        moe_runner_backend=knob["--moe-runner-backend"],
        mem_fraction_static=float(knob["--mem-fraction-static"]),
        context_length=int(knob["--context-length"]),
        max_running_requests=int(knob["--max-running-requests"]),
        speculative_algorithm=knob["--speculative-algorithm"],
        speculative_dspark_block_size=int(knob["--speculative-dspark-block-size"]),
        input_len=f["input_len"],
        output_len=f["output_len"],
    )


#: the other prefill rows of the seed deployment: its prompt-length ladder at chunk 2048 and the 128K repeats,
#: and chunks 1024 and 4096 at 128K
OTHER_ROWS = (
    "seed-dsv41-8xmaxq-sgl-2k7",
    "seed-dsv41-8xmaxq-sgl-5k",
    "seed-dsv41-8xmaxq-sgl-21k",
    "seed-dsv41-8xmaxq-sgl-128k-chunk2048",
    "seed-dsv41-8xmaxq-sgl-128k-rerun",
    "seed-dsv41-8xmaxq-sgl-128k-chunk1024",
    "seed-dsv41-8xmaxq-sgl-128k-chunk4096",
)


def test_one_32k_point_predicts_the_seed_ladder_within_10_percent(tmp_path):
    from kvplan.planning.calibrate_speed import speed_with

    rows = _rows()
    seed = rows["seed-dsv41-8xmaxq-sgl-32k"]
    assert seed["fixture"]["value"] == 7196 and seed["fixture"]["input_len"] == 32768
    save = tmp_path / "cal.toml"
    res = CliRunner().invoke(
        app,
        ["calibrate-speed", str(BENCH / "sglang_bench_serving_32k.jsonl"), *SEED_ARGS, "--save", str(save)],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["gpu_class"] == "pcie-p2p" and out["engine"] == "sglang"
    m = {r["metric"]: r for r in out["metrics"]}
    assert m["prefill_tokens_per_s"]["measured"] == pytest.approx(7196, rel=1e-6)
    assert abs(m["prefill_tokens_per_s"]["calibrated_error"]) < 0.01  # fitted on it
    assert out["residual"] < 0.01
    cal = parse_calibration(save.read_text(), where="cal.toml")
    assert set(cal.factors) == {"link", "alpha_s"}  # the seed's prefill is communication-bound
    before, after = [], []
    for rid in OTHER_ROWS:
        r = rows[rid]
        assert r["fixture"]["metric"] == "prefill_tokens_per_s"
        dep = _seed_dep(r)
        measured = r["fixture"]["value"]
        before.append(abs(speed_with(dep, None).prefill_tokens_per_s / measured - 1))
        after.append(abs(speed_with(dep, cal).prefill_tokens_per_s / measured - 1))
    assert statistics.median(after) <= 0.10, after
    assert statistics.median(after) < statistics.median(before), (before, after)


def test_calibration_is_refused_on_another_gpu_class():
    from kvplan.planning.calibrate_speed import speed_with

    dep = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", input_len=8192, output_len=1024)
    cal = Calibration("pcie-p2p", "sglang", {"link": 0.8})
    with pytest.raises(InputError, match="GPU class pcie-p2p"):
        speed_with(dep, cal)
    assert speed_with(dep, None).gpu_class == "nvlink-datacenter"


def test_table_output_names_measured_and_predicted():
    res = CliRunner().invoke(app, ["calibrate-speed", str(BENCH / "hand_point.toml"), *SEED_ARGS, "--format", "table"])
    assert res.exit_code == 0, res.output
    assert "prefill_tokens_per_s" in res.stdout and "pcie-p2p" in res.stdout
