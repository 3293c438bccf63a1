"""Sweep speed and cost columns, library side (issue 23 item 2): one speed() per distinct group / workload, the
cost formula by hand, the costs file."""

from __future__ import annotations

import math

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.planning.speed import SpeedInputs, speed
from kvplan.planning.sweep import sweep
from kvplan.planning.sweep.speed import SpeedColumns, parse_costs, usd_per_million


def test_usd_per_million_by_hand():
    # 8 GPUs x 2.50 USD/h = 20 USD/h; 1,000 tok/s = 3.6M tok/h -> 5.556 USD per million
    assert usd_per_million(usd_per_gpu_hour=2.5, num_gpus=8, tokens_per_s=1000.0) == pytest.approx(20 / 3.6)
    assert math.isnan(usd_per_million(usd_per_gpu_hour=2.5, num_gpus=8, tokens_per_s=0.0))


def test_costs_file():
    assert parse_costs("[costs]\nh100-sxm = 2.5\nl40s = 0.9\n", where="c") == {"h100-sxm": 2.5, "l40s": 0.9}
    for bad in ("[costs]\nh100-sxm = -1\n", "[other]\n", "x = ["):
        with pytest.raises(InputError):
            parse_costs(bad, where="c")


def test_columns_equal_speed_of_each_row():
    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", input_len=8192, output_len=1024)
    table = sweep(base, {"tp": [1, 2], "mem_fraction_static": [0.8, 0.85, 0.9]})
    sc = SpeedColumns(table, concurrency=4, costs={"h100-sxm": 2.0})
    checked = 0
    for rows, c in table.chunks():
        got = sc.chunk(rows, c)
        for j, i in enumerate(rows.tolist()):
            if not c["fits"][j]:
                assert math.isnan(got["tpot_s"][j])
                continue
            r = speed(table.deployment(i), SpeedInputs(concurrency=4))
            assert got["tpot_s"][j] == pytest.approx(r.tpot_s)
            assert got["usd_per_million_output_tokens"][j] == pytest.approx(
                2.0 * r.num_gpus / (r.output_tokens_per_s * 3600) * 1e6
            )
            checked += 1
    assert checked >= 3
    # one speed() per (tp, workload): the memory-fraction axis shares it
    assert len(sc._memo) <= 2


def test_csv_with_speed_keeps_the_capacity_columns():
    import csv
    import io

    from kvplan.planning.sweep.speed import write_csv_with_speed

    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", input_len=8192, output_len=1024)
    table = sweep(base, {"tp": [1, 2]})
    buf = io.StringIO()
    assert write_csv_with_speed(table, buf, SpeedColumns(table, costs={"h100-sxm": 2.0})) == 2
    plain = list(csv.DictReader(io.StringIO(table.to_csv())))
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    for p, r in zip(plain, rows, strict=True):
        assert {k: r[k] for k in p} == p  # the capacity columns unchanged
        if r["fits"] == "True":
            assert float(r["tpot_s"]) > 0 and float(r["usd_per_million_output_tokens"]) > 0
        else:
            assert r["tpot_s"] == "" and r["usd_per_million_output_tokens"] == ""
    assert [r["fits"] for r in rows] == ["False", "True"]  # TP1 does not hold a 40,960-token request; TP2 does


def test_sweep_cli_speed_and_costs(tmp_path):
    import csv
    import io

    from typer.testing import CliRunner

    from kvplan.cli.app import app

    costs = tmp_path / "costs.toml"
    costs.write_text("[costs]\nh100-sxm = 2.5\n")
    args = ["sweep", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "2,4", "--input-len", "8192"]
    args += ["--output-len", "1024", "--speed", "--costs", str(costs), "--concurrency", "8", "--format", "csv"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) == 2 and all(r["fits"] == "True" for r in rows)
    for r in rows:
        tp = int(r["tp"])
        want = speed(
            Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=tp, input_len=8192, output_len=1024),
            SpeedInputs(concurrency=8),
        )
        assert float(r["tpot_s"]) == pytest.approx(want.tpot_s, rel=1e-5)
        usd = 2.5 * tp / (want.output_tokens_per_s * 3600) * 1e6
        assert float(r["usd_per_million_output_tokens"]) == pytest.approx(usd, rel=1e-5)
    bad = CliRunner().invoke(app, ["sweep", "-m", "Qwen/Qwen3-32B", "--gpu-hour-cost", "2"])
    assert bad.exit_code == 2 and "--speed" in bad.stderr


# ------------------------------------------------------------------------------------------------ issue 23 item 3

QWEN = ["-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--input-len", "8192", "--output-len", "1024"]


def _invoke(args):
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    return CliRunner().invoke(app, args)


def _dep(tp: int) -> Deployment:
    return Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=tp, input_len=8192, output_len=1024)


def test_concurrency_is_an_axis_innermost_and_capped_by_the_fit():
    import csv
    import io

    res = _invoke(["sweep", *QWEN, "--tp", "1,2", "--speed", "--concurrency", "1,8,64", "--format", "csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["tp"], r["concurrency_asked"]) for r in rows] == [(tp, c) for tp in ("1", "2") for c in ("1", "8", "64")]
    for r in rows:
        if r["fits"] != "True":  # TP1 does not hold one 40,960-token request: no speed, no concurrency as run
            assert r["tpot_s"] == "" and r["concurrency"] == ""
            continue
        want = speed(_dep(int(r["tp"])), SpeedInputs(concurrency=int(r["concurrency_asked"])))
        assert int(r["concurrency"]) == want.concurrency  # 64 asked, what fits runs (29 on 2 x H100)
        assert float(r["tpot_s"]) == pytest.approx(want.tpot_s, rel=1e-5)
    assert [int(r["concurrency"]) for r in rows if r["tp"] == "2"] == [1, 8, speed(_dep(2)).concurrency_fits]


def test_speed_columns_in_json_lines_and_the_table():
    import json

    res = _invoke(
        ["sweep", *QWEN, "--tp", "1,2", "--speed", "--concurrency", "4", "--gpu-hour-cost", "2", "--format", "jsonl"]
    )
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert [d["tp"] for d in lines] == [1, 2]
    assert lines[0]["tpot_s"] is None and lines[0]["concurrency"] is None and lines[0]["concurrency_asked"] == 4
    want = speed(_dep(2), SpeedInputs(concurrency=4))
    assert lines[1]["ttft_s"] == pytest.approx(want.ttft_s) and lines[1]["concurrency"] == 4
    assert lines[1]["usd_per_million_output_tokens"] == pytest.approx(2 * 2 / (want.output_tokens_per_s * 3600) * 1e6)
    table = _invoke(["sweep", *QWEN, "--tp", "2", "--speed", "--concurrency", "4,8", "--format", "table"])
    assert table.exit_code == 0, table.output
    assert "TTFT" in table.stdout and f"{want.ttft_s:.3g}" in table.stdout


def test_a_sweep_row_equals_kvplan_speed():
    import json

    row = json.loads(
        _invoke(["sweep", *QWEN, "--tp", "2", "--speed", "--concurrency", "8", "--format", "jsonl"]).stdout
    )
    s = _invoke(["speed", *QWEN, "--tp", "2", "--concurrency", "8", "--format", "json"])
    assert s.exit_code == 0, s.output
    want = json.loads(s.stdout)
    for k in ("prefill_tokens_per_s", "ttft_s", "tpot_s", "output_tokens_per_s", "total_tokens_per_s_per_gpu"):
        assert row[k] == pytest.approx(want[k], rel=1e-12), k


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--concurrency", "8"], "--concurrency"),  # without --speed
        (["--speed", "--concurrency", "0"], "--concurrency"),
        (["--speed", "--concurrency", "1,x"], "--concurrency"),
        (["--calibration", "x.toml"], "--calibration"),  # without --speed
        (["--speed", "--calibration", "/nonexistent/cal.toml"], "--calibration"),
    ],
)
def test_speed_flags_bad_input_one_line(extra, flag):
    res = _invoke(["sweep", *QWEN, "--tp", "2", *extra, "--format", "csv"])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], lines
    assert res.stdout == ""


def test_calibration_for_another_gpu_class_refused_before_writing(tmp_path):
    cal = tmp_path / "cal.toml"
    cal.write_text(
        '[calibration]\ngpu_class = "pcie-p2p"\nengine = "sglang"\nresidual = 0.0\nsource = "x"\n'
        "[calibration.factors]\nlink = 0.8\n"
    )
    res = _invoke(["sweep", *QWEN, "--tp", "2", "--speed", "--calibration", str(cal), "--format", "csv"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and len(res.stderr.strip().splitlines()) == 1 and "--calibration" in res.stderr
    cls = speed(_dep(2)).gpu_class
    cal.write_text(
        f'[calibration]\ngpu_class = "{cls}"\nengine = "sglang"\nresidual = 0.0\nsource = "x"\n'
        "[calibration.factors]\nmemory = 0.5\n"
    )
    ok = _invoke(["sweep", *QWEN, "--tp", "2", "--speed", "--calibration", str(cal), "--format", "csv"])
    assert ok.exit_code == 0, ok.output
    from kvplan.perf.calibration import load_calibration

    want = speed(_dep(2), SpeedInputs(calibration=load_calibration(str(cal))))
    import csv
    import io

    (row,) = list(csv.DictReader(io.StringIO(ok.stdout)))
    assert float(row["tpot_s"]) == pytest.approx(want.tpot_s, rel=1e-5)
    assert want.tpot_s > speed(_dep(2)).tpot_s


def test_writers_format_each_distinct_speed_once(monkeypatch):
    """Work bound (no timing): the speed text of a chunk is formatted once per distinct speed (and once for the rows
    without), whatever the number of rows sharing it."""
    import io

    import kvplan.planning.sweep.speed as sp
    from kvplan.planning.sweep.speed import write_csv_with_speed, write_jsonl_with_speed

    calls = []
    real = sp._suffix

    def counted(*a):
        calls.append(a)
        return real(*a)

    monkeypatch.setattr(sp, "_suffix", counted)
    base = Deployment(engine="sglang", model="Qwen/Qwen3-32B", gpu="h100-sxm", input_len=8192, output_len=1024)
    table = sweep(base, {"tp": [1, 2, 4], "mem_fraction_static": [round(0.7 + 0.01 * i, 2) for i in range(20)]})
    for write in (write_csv_with_speed, write_jsonl_with_speed):
        calls.clear()
        cols = SpeedColumns(table, concurrency=8)
        assert write(table, io.StringIO(), cols, concurrencies=[1, 8]) == 3 * 20 * 2
        assert len(calls) <= 2 * (2 + 1)  # per concurrency: TP2 and TP4 fit (TP1 does not), plus the empty text


def test_sort_by_a_speed_key():
    import csv
    import io

    args = ["sweep", *QWEN, "--tp", "1,2,4", "--speed", "--concurrency", "8", "--gpu-hour-cost", "2", "--format", "csv"]
    for sort, key, desc in (("cost", "usd_per_million_output_tokens", False), ("ttft", "ttft_s", False)):
        res = _invoke([*args, "--sort", sort])
        assert res.exit_code == 0, res.output
        rows = list(csv.DictReader(io.StringIO(res.stdout)))
        vals = [float(r[key]) for r in rows if r[key]]
        assert vals == sorted(vals, reverse=desc) and len(vals) == 2
        assert rows[-1]["tp"] == "1" and rows[-1][key] == ""  # no speed (does not fit): last
    res = _invoke([*args, "--sort", "throughput"])
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    per_gpu = [float(r["output_tokens_per_s"]) / int(r["num_gpus"]) for r in rows if r["output_tokens_per_s"]]
    assert per_gpu == sorted(per_gpu, reverse=True)
    for bad, flag in ((["--sort", "ttft"], "--speed"), (["--speed", "--sort", "cost"], "--costs")):
        r = _invoke(["sweep", *QWEN, *bad])
        assert r.exit_code == 2 and flag in r.stderr and len(r.stderr.strip().splitlines()) == 1
