"""CLI wiring of the other inputs: launch commands, logs, hybrid families, DCP/PP flags, family field errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvplan.cli.app import app

runner = CliRunner()
LOGS = Path(__file__).parent / "validation" / "logs"


def fit_json(*args: str) -> dict:
    res = runner.invoke(app, ["fit", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_launch_command_after_double_dash_sets_the_deployment():
    d = fit_json(
        "-g",
        "h200-sxm",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "deepseek-ai/DeepSeek-V3",
        "--tp-size",
        "8",
        "--mem-fraction-static",
        "0.85",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--context-length",
        "32768",
        "--foo",
        "3",
    )
    assert (d["model"], d["tp"], d["mem_fraction_static"], d["kv_cache_dtype"]) == (
        "deepseek-ai/DeepSeek-V3",
        8,
        0.85,
        "fp8_e4m3",
    )
    assert d["kv_bytes_per_token"] == 35_136 and d["context_length"] == 32_768
    assert any("--foo" in w for w in d["warnings"])  # unknown engine flags warn, never fail


def test_flags_given_to_kvplan_override_the_launch_command(tmp_path):
    cmd = tmp_path / "serve.sh"
    cmd.write_text("vllm serve Qwen/Qwen3-32B \\\n  --tensor-parallel-size 2 --max-model-len 32768\n")
    d = fit_json("-g", "h100-sxm", "--from-launch", str(cmd), "--max-model-len", "16384")
    assert d["engine"] == "vllm" and d["tp"] == 2 and d["context_length"] == 16_384


def test_bad_launch_value_is_one_line_exit_2():
    res = runner.invoke(
        app, ["fit", "--", "python", "-m", "sglang.launch_server", "--model-path", "x/y", "--tp-size", "eight"]
    )
    assert res.exit_code == 2 and "--tp-size" in res.stderr and "Traceback" not in res.output


def test_from_log_what_if_keeps_the_measured_baseline():
    res = runner.invoke(
        app,
        ["fit", "--from-log", str(LOGS / "qwq-32b-4xL4-tp4.log"), "--mem-fraction-static", "0.9", "--format", "json"],
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["baseline"]["free_bytes"] == d["whatif"]["free_bytes"]
    assert d["whatif"]["kv_pool_tokens"] > d["baseline"]["kv_pool_tokens"]


def test_calibrate_agrees_on_a_real_log():
    res = runner.invoke(app, ["calibrate", str(LOGS / "qwq-32b-4xL4-tp4.log"), "--check", "--format", "json"])
    assert res.exit_code == 0, res.output


def test_hybrid_families_report_every_pool():
    swa = fit_json("-m", "openai/gpt-oss-120b", "-g", "h100-sxm")
    assert swa["family"] == "hybrid_swa"
    assert [p["name"] for p in swa["pools"]] == ["full-attention KV", "sliding-window KV"]
    full, win = swa["pools"]
    assert win["tokens"] == int(full["tokens"] * 0.8) // swa["page_size"] * swa["page_size"]
    mamba = fit_json("-m", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "-g", "h100-sxm")
    assert mamba["family"] == "hybrid_mamba"
    assert {"attention KV", "linear-attention state"} <= {p["name"] for p in mamba["pools"]}


def test_dcp_keeps_logical_capacity_for_gqa():
    # a fixed fraction: with DCP SGLang's default heuristic turns the prefill CUDA graph off (another default)
    a = fit_json("-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "4", "--mem-fraction-static", "0.85")
    b = fit_json(
        "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "4", "--dcp-size", "2", "--mem-fraction-static", "0.85"
    )
    # each rank keeps its DCP group's 4 KV heads (cell x2) and stores half of every request's rows
    assert b["kv_bytes_per_token"] == 2 * a["kv_bytes_per_token"]
    assert abs(b["kv_pool_tokens"] - a["kv_pool_tokens"]) <= 2


def test_pp_layer_partition_prices_the_largest_stage():
    d = fit_json("-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--pp-size", "2", "--pp-layer-partition", "20,44")
    assert d["kv_bytes_per_token"] == 44 * 8 * 128 * 2 * 2


def test_family_claimed_without_its_fields(tmp_path):
    cfg = json.loads(
        (Path(__file__).parent / "data/shared/hf-configs/deepseek-ai--DeepSeek-V4-Flash/config.json").read_text()
    )
    cfg["compress_ratios"] = cfg["compress_ratios"][:10]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    res = runner.invoke(app, ["fit", "-m", str(p), "-g", "b200", "--tp", "8"])
    assert res.exit_code == 2 and "compress_ratios" in res.stderr


def test_side_by_side_is_one_table():
    res = runner.invoke(
        app,
        [
            "fit",
            "-m",
            "Qwen/Qwen3-32B",
            "-g",
            "h100-sxm",
            "--tp",
            "2",
            "--engine",
            "sglang,vllm",
            "--context-length",
            "32k",
            "--format",
            "table",
        ],
    )
    assert res.exit_code == 0, res.output
    header = next(line for line in res.stdout.splitlines() if "per GPU" in line)
    assert "SGLang" in header and "vLLM" in header
    assert sum("KV pool (tokens)" in line for line in res.stdout.splitlines()) == 1


def test_dsv41_dp_attention_sizes_the_window_pool_per_rank():
    """V4.1 cap mode with DP attention 8 (SGLang 0.5.23): chunked prefill 2048 // 8 = 256 per rank
    (parallel_hook._handle_data_parallelism), 16 // 8 = 2 requests per rank; per request 128 (window)
    + 128 x 1 (eviction interval x draft tokens) + 256 (page) + 256 (decode alloc) = 768; cap = 768 x 2
    + 2 x 256 (two chunks in flight) + 256 = 2,304; prefix tails 4 x 2 = 8 x (128 + 256) = 3,072;
    ceil256(5,376) = 5,376 slots.  The pool allocates one extra 256-row page: 5,632 x 40 layers x 585 B."""
    d = fit_json("--dp", "8", "--enable-dp-attention")
    assert d["max_running_requests"] == 2
    swa = next(p for p in d["pools"] if p["name"].startswith("swa_kv"))
    assert swa["bytes"] == (5_376 + 256) * 40 * 585
