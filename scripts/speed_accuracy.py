"""Run every usable row of tests/data/speed_dev.jsonl through ``kvplan speed`` and write docs/speed-accuracy.md.

Each row's ``fixture`` gives one ``kvplan speed ... --format json`` run (engine, model, GPU preset, parallel
layout, KV dtype, further flags, workload, concurrency, accept length); its ``metric`` / ``value`` and ``also``
are the measured answers; error = (predicted - measured) / measured.  Deterministic: no wall clock, no network.

Usage: ``python scripts/speed_accuracy.py [--check | --steady | --cookbook-run]`` (``--check``: exit 1 when
docs/speed-accuracy.md is stale; ``--steady``: print the summary with every row in the steady state, no benchmark
run; ``--cookbook-run``: with the SGLang cookbook rows run as their published client, :data:`COOKBOOK_CLIENT`).
tests/test_speed_validation.py imports :func:`evaluate` and asserts the error bounds.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "speed_dev.jsonl"
DOC = ROOT / "docs" / "speed-accuracy.md"
ASSERTED = ("prefill_tokens_per_s", "ttft_s", "tpot_s")

#: the benchmark harness of a row, from its ``workload.tool`` (the row's own words), and what that harness runs:
#: requests per unit of concurrency, the ``--random-range-ratio``, the TTFT statistic it reports.  InferenceX's
#: nightly sweep, the one stated client behind aiconfigurator silicon rows (``benchmarks/benchmark_lib.sh``
#: ``run_benchmark_serving``: ``--num-prompts $((CONC * 10))``, ``--request-rate inf``, ``--ignore-eos``,
#: ``--num-warmups $((2 * CONC))`` awaited and discarded before the measured run; its README's client table:
#: ``RANDOM_RANGE_RATIO`` 0.8): 10 x C requests, lengths uniform over [0.8 L, L], the mean TTFT.  The SGLang rows of
#: that sweep run the same client: InferenceX ``benchmarks/single_node/dsr1_fp8_h200.sh``, ``dsr1_fp8_b200.sh``,
#: ``glm5_fp8_h200.sh`` (at the rows' date, 2026-03-25: images ``lmsysorg/sglang:v0.5.9-cu130`` / ``glm5-hopper``
#: as the rows name) call ``run_benchmark_serving --backend vllm --random-range-ratio "$RANDOM_RANGE_RATIO"
#: --num-prompts $((CONC * 10))``, and ``.github/workflows/benchmark-tmpl.yml`` sets ``RANDOM_RANGE_RATIO: 0.8``
#: for every single-node job.  The SGLang cookbook rows (``sglang.bench_serving``) are compared in the steady state
#: (:data:`COOKBOOK_CLIENT` is their client as published; ``--cookbook-run`` prints the summary with them run so).
#:
#: What aiconfigurator itself says about how its silicon rows were measured (ai-dynamo/aiconfigurator at
#: 095f58a51c4ca8e61b66ec108d86f223f8d559ce, whole history read): nothing about the client.  The CSV
#: (``aic-core/src/aiconfigurator_core/systems/silicon_sample.csv``, 5,221 rows) records per row only ``isl``,
#: ``osl``, ``batch_size`` (the concurrency), the layout and a ``silicon_data_source``: 3,368 rows
#: ``source_file=2026-03-25.csv`` / ``2026-04-06.csv`` and 882 ``db-dump/2026-04-27; config_id; workflow_run_id``
#: (the file is "a 2026-04 dump of the internal benchmark DB", ``docs/design/prediction_regression_gate_design.md``
#: section 2.5), 848 from per-model CSVs of a private gap-analysis project (``.../aic-auto-gap-analysis/data/<system>/
#: <backend>/<version>/<model>.csv``: the Qwen3-32B and Llama-3.1-8B rows here) and 123 from two more gap-analysis
#: files.  The commits
#: that added it (42bd4cf4 "add scripts and data", ed133e9d "add older bench data", squashed as 75f90ac7, PR 978)
#: and the tools that read it (``tools/accuracy_regression_testing``, ``tools/accuracy_tracking``) state no client,
#: length distribution, request count or warm-up.  aiconfigurator's own benchmark tooling runs fixed lengths (the
#: eval pipeline removed in 9a9e4242, ``src/aiconfigurator/eval/benchmarks/genai_perf_runner.py`` at c0a88170:
#: aiperf ``--synthetic-input-tokens-stddev 0 --output-tokens-stddev 0 --request-count 10C
#: --warmup-request-count 2C``; the generator's ``src/aiconfigurator/generator/config/backend_templates/benchmark/
#: bench_run.sh.j2`` at 095f58a5: aiperf, ``isl_stddev`` / ``osl_stddev`` default 0 in
#: ``src/aiconfigurator/generator/config/deployment_config.yaml``, ``--num-requests 20C``), but nothing ties
#: either to these rows, so neither is applied (docs/speed.md "TTFT: what is modelled, what still misses" gives what
#: equal lengths would do to each row).  Its queueing design note (``docs/design/queueing_model.md`` at ee07d8eb,
#: pull request 1380, and ``aic-core/src/aiconfigurator_core/sdk/queueing/calendar.py`` ``AlternatingCalendar`` at
#: 4a2f9b5c) reports live SGLang 0.5.14 closed-loop runs of equal lengths with "cohort-locked prefill waves": a
#: mechanism, not a statement about these rows.  The 0.8 above is InferenceX's, the one client a source states for
#: rows of this set.
HARNESSES: tuple[tuple[str, dict[str, Any]], ...] = (("InferenceX", {"prompts": 10, "ratio": 0.8, "ttft": "ttft_s"}),)

#: The SGLang cookbook's benchmark client for its DeepSeek-V4 cells (sgl-project/sglang
#: ``docs_new/src/snippets/configs/deepseek-ai/deepseek-v4.jsx`` at the rows' config commit: ``benchmarkCommands``
#: ``python3 -m sglang.bench_serving --dataset-name random --random-input-len ISL --random-output-len OSL
#: --num-prompts N --max-concurrency C --warmup-requests 64``, ``numPromptsByConc`` {1: 32, 16: 32, 64: 128, 256:
#: 512}, ``latencyPercentile: "Mean"``): the rows' ``workload.num_prompts``, no ``--random-range-ratio`` so
#: bench_serving's default 0.0 (SGLang 0.5.15 ``benchmark/serving.py``: ``default=0.0``; lengths uniform over
#: [1, L]), the mean TTFT.  Not the default comparison: run so, the cells' TTFT error grows (docs/speed.md "TTFT:
#: what is modelled, what still misses" gives the numbers and why).
COOKBOOK_CLIENT: dict[str, Any] = {"tool": "sglang.bench_serving", "ratio": 0.0, "ttft": "ttft_s"}


#: The all-reduce bus bandwidth of the box a row was measured on, where the row's source documents that box's fabric
#: and NCCL set-up: (words of the row's ``interconnect``, NCCL ring all-reduce bus bandwidth in GB/s, source).  The
#: GPU class's 0.34 x 64 GB/s (22 GB/s) is NCCL with default settings on direct-attached cards; these boxes run a tuned
#: NCCL or PCIe switches and measure more.  Passed as ``--link-bandwidth`` = busBW / the class's link fraction, so
#: the model's bus bandwidth is the measured one (docs/speed.md "The Kimi-K2.6 prefill rows").
FABRICS = (
    (
        "NCCL graph XML",
        37.6,
        "voipmonitor/rtx6kpro benchmarks/results.md 'Festr (8x Server, dual Turin) NCCL_MIN_NCHANNELS=8 37.6' "
        "(hardware/pcie-bandwidth.md: 'Graph XML + MIN_NCHANNELS=8'; default 22.2); models/kimi-k26.md: the rows' "
        "8-GPU Turin host runs the XML graph, 16 / 32 channels",
    ),
    (
        "C-Payne switches",
        40.1,
        "voipmonitor/rtx6kpro hardware/pcie-bandwidth.md 'Grimulkan (4x switches) Default 32M fixed 40.1' (8 GPUs "
        "on 4 switches; the 16-GPU host of the TP16 rows is 4 c-payne switches, hardware/asrockrack-turin-cpayne-"
        "16gpu.md, whose 16-rank ring crosses each switch's uplink once as the 8-rank one does)",
    ),
)


def fabric_link_gbs(row: dict[str, Any]) -> float | None:
    """The ``--link-bandwidth`` that makes the model's bus bandwidth the one measured on the row's box
    (:data:`FABRICS`), or None.  Example: an 'NCCL graph XML' row -> 37.6 / 0.34 = 110.6 GB/s."""
    from kvplan.perf.efficiency import CLASSES

    text = str(row.get("interconnect") or "")
    for words, bus, _src in FABRICS:
        if words in text:
            return bus / CLASSES["pcie-p2p"].link
    return None


def harness(row: dict[str, Any], *, cookbook: bool = False) -> dict[str, Any] | None:
    """What the row's benchmark client ran (:data:`HARNESSES`): ``num_prompts``, ``range_ratio`` and the JSON key
    its TTFT compares with; None for a row compared in the steady state.  ``cookbook``: the SGLang cookbook rows
    too, as :data:`COOKBOOK_CLIENT` runs them (the what-if of ``--cookbook-run``)."""
    w = row.get("workload") or {}
    tool = str(w.get("tool") or "")
    c = int(row["fixture"].get("concurrency") or 1)
    for name, h in HARNESSES:
        if name in tool:
            return {"num_prompts": h["prompts"] * c, "range_ratio": h["ratio"], "ttft": h["ttft"]}
    if cookbook and COOKBOOK_CLIENT["tool"] in tool and w.get("num_prompts"):
        # a cell whose client states its ratio (the Qwen3.6 cells: "range ratio 1.0") runs it; the rest the default
        ratio = 1.0 if "ratio 1.0" in tool else COOKBOOK_CLIENT["ratio"]
        return {"num_prompts": int(w["num_prompts"]), "range_ratio": ratio, "ttft": COOKBOOK_CLIENT["ttft"]}
    return None


def load_rows(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def fixture_args(f: dict[str, Any], bench: dict[str, Any] | None = None, link_gbs: float | None = None) -> list[str]:
    """The ``kvplan speed`` arguments of one fixture (the README of the data set describes the keys); with
    ``bench`` (:func:`harness`), the benchmark run: ``--num-prompts`` and ``--random-range-ratio``; with
    ``link_gbs`` (:func:`fabric_link_gbs`), ``--link-bandwidth``."""
    a = ["speed", "--engine", f["engine"], "--model", f["model"], "--gpu", f["gpu"], "--format", "json"]
    if f.get("engine_version"):
        a += ["--engine-version", str(f["engine_version"])]
    for key, flag in (("tp", "--tp-size"), ("ep", "--ep-size"), ("dp", "--dp-size"), ("pp", "--pp-size")):
        if f.get(key) is not None:
            a += [flag, str(f[key])]
    if f.get("dp_attention"):
        a.append("--enable-dp-attention")
    if f.get("kv_cache_dtype"):
        a += ["--kv-cache-dtype", str(f["kv_cache_dtype"]).split()[0]]
    a += [str(x) for x in f.get("args") or []]
    a += ["--input-len", str(f["input_len"]), "--output-len", str(f["output_len"])]
    if f.get("concurrency"):
        a += ["--concurrency", str(f["concurrency"])]
    if f.get("accept_length") is not None:
        a += ["--accept-length", str(f["accept_length"])]
    if link_gbs is not None:
        a += ["--link-bandwidth", f"{link_gbs:.4g}"]
    if bench:
        a += ["--num-prompts", str(bench["num_prompts"]), "--random-range-ratio", f"{bench['range_ratio']:g}"]
    return a


def run_fixture(
    f: dict[str, Any], bench: dict[str, Any] | None = None, link_gbs: float | None = None
) -> tuple[dict[str, Any] | None, str]:
    """(the JSON result, "") or (None, the one-line error)."""
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    res = CliRunner().invoke(app, fixture_args(f, bench, link_gbs))
    if res.exit_code != 0:
        return None, (res.stderr or res.stdout or "").strip().splitlines()[-1:][0] if (res.stderr or res.stdout) else (
            f"exit {res.exit_code}"
        )
    return json.loads(res.stdout), ""


def evaluate(
    rows: list[dict[str, Any]] | None = None, *, steady: bool = False, cookbook: bool = False
) -> list[dict[str, Any]]:
    """One record per (usable row, metric): id, metric, measured, predicted, error (None when refused), note.
    A row run by a known benchmark harness (:func:`harness`) is run as that benchmark and its TTFT compared with
    the statistic the harness reports; ``steady``: every row in the steady state instead (the what-if of
    ``--steady``); ``cookbook``: the cookbook rows run as their client (``--cookbook-run``)."""
    out: list[dict[str, Any]] = []
    for r in rows if rows is not None else load_rows():
        f = r["fixture"]
        if not f.get("usable"):
            continue
        bench = None if steady else harness(r, cookbook=cookbook)
        got, err = run_fixture(f, bench, fabric_link_gbs(r))
        metrics = [(f["metric"], f["value"])] + [(m["metric"], m["value"]) for m in f.get("also") or []]
        for metric, value in metrics:
            key = bench["ttft"] if bench and metric == "ttft_s" else metric
            pred = got.get(key) if got else None
            out.append(
                {
                    "id": r["id"],
                    "gpu": f["gpu"],
                    "model": f["model"],
                    "metric": metric,
                    "measured": value,
                    "predicted": pred,
                    "error": (pred - value) / value if pred is not None and value else None,
                    "bound": got.get("bound") if got else None,
                    "refused": err,
                }
            )
    return out


def summary(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per metric: rows, median |error|, p90 |error| (nearest-rank), median signed error."""
    out: dict[str, dict[str, float]] = {}
    for m in sorted({r["metric"] for r in records}):
        errs = [r["error"] for r in records if r["metric"] == m and r["error"] is not None]
        if not errs:
            continue
        ab = sorted(abs(e) for e in errs)
        p90 = ab[min(len(ab) - 1, max(0, -(-9 * len(ab) // 10) - 1))]
        out[m] = {
            "rows": len(errs),
            "median_abs": statistics.median(ab),
            "p90_abs": p90,
            "median_signed": statistics.median(errs),
        }
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and v < 1:
        return f"{v:.4g}"
    return f"{v:,.4g}" if isinstance(v, float) else str(v)


def render(records: list[dict[str, Any]]) -> str:
    s = summary(records)
    lines = [
        "# Speed model accuracy (generated)",
        "",
        "Generated by `python scripts/speed_accuracy.py` from `tests/data/speed_dev.jsonl` (68 public measurements;",
        "the 9 rows marked unusable in the data set are not run: prefix-cache hits, disaggregated or TRT-LLM serving,",
        "unstated workloads, interconnect pathologies).  The aiconfigurator rows run as InferenceX's benchmark",
        "(`--num-prompts` 10 x C, `--random-range-ratio` 0.8, the mean TTFT: `HARNESSES` in the script), the others in",
        "the steady state (`--cookbook-run` prints the summary with the SGLang cookbook rows run as their published",
        "client, `COOKBOOK_CLIENT`; docs/speed.md says why that is not the comparison).  Rows whose source documents",
        "their box's NCCL all-reduce bus bandwidth run with it",
        "(`FABRICS` in the script: "
        + "; ".join(f"'{w}' {b:g} GB/s" for w, b, _ in FABRICS)
        + ").  error = (predicted - measured) / measured.  The bounds",
        "asserted by tests/test_speed_validation.py: median |error| <= 25% and p90 <= 60% for "
        + ", ".join(f"`{m}`" for m in ASSERTED)
        + ".",
        "",
        "## Summary",
        "",
        "| metric | rows | median abs error | p90 abs error | median signed error |",
        "|---|---:|---:|---:|---:|",
    ]
    for m, v in s.items():
        star = " (asserted)" if m in ASSERTED else ""
        lines.append(
            f"| `{m}`{star} | {v['rows']:.0f} | {v['median_abs']:.1%} | {v['p90_abs']:.1%} "
            f"| {v['median_signed']:+.1%} |"
        )
    lines += [
        "",
        "## Rows",
        "",
        "| id | GPU | metric | measured | predicted | error | bound (prefill / decode) |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in records:
        b = r["bound"]
        bound = f"{b['prefill']} / {b['decode']}" if b else f"refused: {r['refused']}"
        err = f"{r['error']:+.1%}" if r["error"] is not None else "-"
        lines.append(
            f"| {r['id']} | {r['gpu']} | `{r['metric']}` | {_fmt(r['measured'])} | {_fmt(r['predicted'])} | {err} "
            f"| {bound} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    if "--steady" in argv or "--cookbook-run" in argv:  # the what-ifs of docs/speed.md: the summary, nothing written
        print(render(evaluate(steady="--steady" in argv, cookbook="--cookbook-run" in argv)).split("## Rows")[0])
        return 0
    text = render(evaluate())
    if "--check" in argv:
        return 0 if DOC.exists() and DOC.read_text() == text else 1
    DOC.write_text(text)
    print(text.split("## Rows")[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
