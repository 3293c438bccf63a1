"""The CLI behaviour contract, recorded before the package was re-laid (issue 10) and compared ever since.

Each case is a ``kvplan`` argument list whose JSON output must not change when code only moves.  The recorded
outputs live in ``tests/golden/contract/*.json``; ``scripts/refresh_contract_goldens.py`` rewrites them (only by
hand, after a deliberate behaviour change, never from a test).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "validation" / "logs"
PLAN = ROOT / "docs" / "examples" / "plan.toml"

_FIT: dict[str, list[str]] = {
    "fit-default": [],
    "fit-default-vllm": ["--engine", "vllm"],
    "fit-default-engram-host": ["--engram-on-host"],
    "fit-llama8b-h100": ["-m", "meta-llama/Llama-3.1-8B-Instruct", "-g", "h100-sxm"],
    "fit-llama8b-h100-vllm": ["-m", "meta-llama/Llama-3.1-8B-Instruct", "-g", "h100-sxm", "--engine", "vllm"],
    "fit-dsv3-h200-fp8": [
        "-m",
        "deepseek-ai/DeepSeek-V3",
        "-g",
        "h200",
        "--tp",
        "8",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--context-length",
        "128k",
    ],
    "fit-dsv3-dpattn": [
        "-m",
        "deepseek-ai/DeepSeek-V3",
        "-g",
        "h200",
        "--tp",
        "8",
        "--dp",
        "8",
        "--enable-dp-attention",
    ],
    "fit-dsv32-b200": ["-m", "deepseek-ai/DeepSeek-V3.2", "-g", "b200", "--tp", "8"],
    "fit-qwen3-32b-both": ["-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--tp", "2", "--engine", "sglang,vllm"],
    "fit-qwen3-8b-128k": ["-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--context-length", "128k"],
    "fit-gptoss120b": ["-m", "openai/gpt-oss-120b", "-g", "h100-sxm"],
    "fit-gptoss120b-vllm": ["-m", "openai/gpt-oss-120b", "-g", "h100-sxm", "--engine", "vllm"],
    "fit-qwen3next-tp2": ["-m", "Qwen/Qwen3-Next-80B-A3B-Instruct", "-g", "h200", "--tp", "2"],
    "fit-qwen3next-tp2-vllm": ["-m", "Qwen/Qwen3-Next-80B-A3B-Instruct", "-g", "h200", "--tp", "2", "--engine", "vllm"],
    "fit-kimi-k2-mtp": [
        "-m",
        "moonshotai/Kimi-K2.5",
        "-g",
        "h200",
        "--tp",
        "8",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-draft-tokens",
        "4",
    ],
    "fit-qwen3-235b-pp2": ["-m", "Qwen/Qwen3-235B-A22B-FP8", "-g", "h100-sxm", "--tp", "4", "--pp", "2"],
    "fit-measured": ["-m", "qwen3-32b", "-g", "h100-sxm", "--free-memory", "78.81GiB", "--weight-memory", "15.09GiB"],
    "fit-default-requests": ["--requests", "4"],
    "fit-launch-vllm": [
        "-g",
        "h100-sxm",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-32B",
        "-tp",
        "2",
        "--max-model-len",
        "32768",
        "--max-num-seqs",
        "128",
    ],
}

CASES: dict[str, list[str]] = {name: ["fit", "--format", "json", *args] for name, args in _FIT.items()}
CASES.update(
    {
        "sweep-qwen3-32b": [
            "sweep",
            "--format",
            "jsonl",
            "-m",
            "Qwen/Qwen3-32B",
            "-g",
            "h100-sxm,h200-sxm",
            "--tp",
            "1,2,4",
            "--context-length",
            "32k,128k",
        ],
        "sweep-default": ["sweep", "--format", "jsonl", "--mem-fraction-static", "0.70:0.80:0.05"],
        "sweep-vllm": [
            "sweep",
            "--format",
            "jsonl",
            "-m",
            "Qwen/Qwen3-8B",
            "-g",
            "h100-sxm",
            "--engine",
            "vllm",
            "--gpu-memory-utilization",
            "0.8,0.9",
        ],
        "solve-gpus": [
            "solve",
            "gpus",
            "--format",
            "json",
            "-m",
            "deepseek-ai/DeepSeek-V3",
            "-g",
            "h200-sxm",
            "--context-length",
            "128k",
            "--requests",
            "8",
        ],
        "solve-mem-fraction": [
            "solve",
            "mem-fraction",
            "--format",
            "json",
            "-m",
            "Qwen/Qwen3-32B",
            "-g",
            "h100-sxm",
            "--tp",
            "2",
            "--context-length",
            "32k",
            "--requests",
            "16",
        ],
        "solve-dtype": [
            "solve",
            "dtype",
            "--format",
            "json",
            "-m",
            "Qwen/Qwen3-32B",
            "-g",
            "h100-sxm",
            "--tp",
            "1",
            "--context-length",
            "128k",
            "--requests",
            "4",
        ],
        "solve-context": ["solve", "context", "--format", "json", "-m", "Qwen/Qwen3-8B", "-g", "h100-sxm"],
        "solve-concurrency": [
            "solve",
            "concurrency",
            "--format",
            "json",
            "-m",
            "Qwen/Qwen3-8B",
            "-g",
            "h100-sxm",
            "--context-length",
            "32k",
        ],
        "check-example": ["check", str(PLAN.relative_to(ROOT)), "--format", "json"],
    }
)
for _log in sorted(LOGS.glob("*.log")):
    CASES["calibrate-" + _log.stem] = ["calibrate", str(_log.relative_to(ROOT)), "--format", "json"]
