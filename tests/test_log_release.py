"""The release a start-up log can come from (kvplan.inputs.logs.release) and how calibrate / fit --from-log use it.

Expected windows come from the wheels (kvplan/inputs/logs/formats.py gives the f-string and path of every form) and
from what each log's source says about its release (table KNOWN below), not from kvplan's output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.inputs.logs import parse_log, read_log_file, release_window
from kvplan.inputs.logs.formats import MARKERS
from kvplan.inputs.logs.release import format_window
from kvplan.inputs.logs.versions import (
    SGLANG_RELEASES,
    VLLM_RELEASES,
    next_release,
    releases_between,
)
from kvplan.version import Version, parse_version

ROOT = Path(__file__).resolve().parent
LOGS = ROOT / "validation" / "logs"
GiB = 2**30


def _window(text: str):
    return release_window(parse_log(text))


def _contains(win, version: str) -> bool:
    return parse_version(win.oldest) <= parse_version(version) <= parse_version(win.newest)


# --------------------------------------------------------------------------------------------------
# The logs whose release is known: log id -> (releases it may be, where that is stated)
# A main-branch / nightly / .dev build is accepted as either release next to it (the format maps it to the
# nearest release); "~" marks a release the source gives approximately.
# --------------------------------------------------------------------------------------------------

KNOWN: dict[str, tuple[tuple[str, ...], str]] = {
    # SGLang
    "qwen25-0.5b-4070tis-pd-prefill": (("0.5.8",), "sglang_dev.jsonl sglang_version '0.5.8 (author table)'"),
    "kimi-k2.5-mi355x-tp8": (
        ("0.5.8.post1", "0.5.9"),
        "sglang_dev.jsonl: docker rocm/sgl-dev:v0.5.8.post1-rocm720-"
        "mi35x-20260218, a main-branch build after 0.5.8.post1",
    ),
    # vLLM
    "qwen2-7b-a100-u025": (("0.10.1.1",), "vllm_dev.jsonl vllm_version 0.10.1.1 (dennislee22/vLLM-benchmarking)"),
    "gptoss120b-4xa100-tp4-u080": (("0.10.1.1",), "vllm_dev.jsonl vllm_version 0.10.1.1"),
    "llmd-llama31-8b-h100": (("0.11.0",), "vllm_dev.jsonl: 0.11.0 stated for the same llm-d table"),
    "llmd-qwen3-32b-2xh100-tp2": (("0.11.0",), "vllm_dev.jsonl: 0.11.0 stated for the same llm-d table"),
    "qwen3-235b-fp8-8xl40s-tp8-ep": (("0.10.2",), "vllm_dev.jsonl vllm_version 0.10.2"),
    "qwen3-next-80b-2xh200-tp2": (("0.10.2",), "vllm_dev.jsonl vllm_version 0.10.2"),
    "glm52-nvfp4-4xb200-tp4-ep-fp8kv": (("0.26.0",), "vllm_dev.jsonl vllm_version 0.26.0"),
    "qwen3-14b-awq-2xl4-pp2": (("0.28.0",), "vllm_dev.jsonl vllm_version 0.28.0 (blog post)"),
    "dsv4-flash-8xb200-tp8-ep": (("0.25.0",), "vllm_dev.jsonl: image vllm/vllm-openai:v0.25.0 (issue #51454)"),
    "nemotron3-nano-30b-a3b-bf16-dgxspark": (("0.20.2",), "vllm_dev.jsonl: 0.20.2 per the author"),
    "llama31-8b-rtx3090-v0-20k": (("0.6.4",), "vllm_dev.jsonl: ~0.6.4, V0 (issue #10517)"),
    "vllm-10517-llama31-8b-rtx3090-v0-29k": (("0.6.4",), "log header: V0 ~0.6.4 (issue #10517)"),
    "kimi-k2-thinking-8xh200-tp8": (("0.11.0", "0.11.1"), "vllm_dev.jsonl: nightly Nov 2025 (~0.11.1)"),
    "gemma3-27b-mi300x-rocm": (("0.10.2", "0.11.0"), "vllm_dev.jsonl: 0.11.0rc2.dev98+g393de22d2 (before 0.11.0)"),
    "qwen3-coder-480b-fp8-8xh20-dp8-ep-u90": (("0.10.0", "0.10.1"), "vllm_dev.jsonl: 0.10.1.dev101+gbda9d0535"),
    "deepseek-v2-lite-h100-v0-premla": (("0.6.4.post1", "0.6.5"), "vllm_dev.jsonl: V0, main of Dec 2024 (PR #10927)"),
    "vllm-39734-gemma4-31b": (("0.19.0", "0.19.1"), "log header: 0.19.1rc1.dev301+g60995c05b (issue #39734)"),
    "vllm-6746-llama31-405b-fp8-8xh100-v0-workers": (
        ("0.5.1", "0.5.2", "0.5.3", "0.5.3.post1"),
        "log header: V0, July 2024 (issue #6746)",
    ),
    "vllm-pr13596-v1-old-block-format": (("0.7.2", "0.7.3"), "PR #13596 (2025-02-20): V1 main before the PR"),
    "vllm-pr13596-v1-token-format": (("0.7.3", "0.8.0"), "PR #13596 (2025-02-20): V1 main with the PR"),
    "vllm-21348-qwen3-235b-fp8-4xh100-tp4": (("0.9.2", "0.10.0"), "issue #21348 (2025-07-22), V1"),
    "vllm-25350-fp8kv-100k": (("0.10.1.1", "0.10.2"), "issue #25350 (2025-09-21), V1"),
    "vllm-25350-fp8kv-221k-error": (("0.10.1.1", "0.10.2"), "issue #25350 (2025-09-21), V1"),
}

# SGLang logs dated but not versioned: (log date, source).  A log cannot come from a release built after the first
# release following its date (a main-branch build maps to that next release).
DATED_SGLANG = {
    "llama31-8b-docs-quickstart-2501": "2025-01-23",
    "qwq-32b-4xL4-tp4": "2025-03-08",
    "deepseek-v3-kt-tp2-capped": "2026-01-23",
    "dsv32-exp-8xb200-dp8-main-before-pr11309": "2025-10-07",
    "qwen3-30b-a3b-mi355x-pr18263": "2026-07-15",
    "sglang-club3090-1261-2x5090-nvfp4-mtp": "2026-09-12",
    "sglang-29575-scheduler-line-2026": "2026-06-28",
    "sglang-pr14071-dev-multirank-mla": "2025-12-18",
    "sglang-21348-qwen3-235b-fp8-4xh100-tp4": "2025-07-22",
}


def test_known_table_names_real_logs_and_cases():
    ids = {p.stem for p in LOGS.glob("*.log")}
    assert set(KNOWN) <= ids and set(DATED_SGLANG) <= ids
    cases = {}
    for name in ("sglang_dev.jsonl", "vllm_dev.jsonl"):
        for line in (ROOT / "data" / "shared" / "validation" / name).read_text().splitlines():
            if line.strip():
                c = json.loads(line)
                cases[c["id"]] = c
    # every shared case that states a release is in the table
    stated = {
        i
        for i, c in cases.items()
        if re.search(r"\d+\.\d+", str(c.get("sglang_version") or c.get("vllm_version") or ""))
    }
    assert stated - {"qwen3.8-27b-fp8-hybrid-gdn-h100-kt"} <= set(KNOWN)  # sglang-kt 0.7.0 is a fork's number


@pytest.mark.parametrize("log_id", sorted(KNOWN))
def test_window_contains_the_known_release(log_id):
    releases, source = KNOWN[log_id]
    f = read_log_file(LOGS / f"{log_id}.log")
    win = release_window(f)
    assert any(_contains(win, v) for v in releases), (log_id, win, releases, source)


@pytest.mark.parametrize("log_id", sorted(DATED_SGLANG))
def test_sglang_window_is_not_newer_than_the_log_date(log_id):
    from kvplan.engines.sglang.releases import RELEASE_DATES

    date = DATED_SGLANG[log_id]
    win = release_window(read_log_file(LOGS / f"{log_id}.log"))
    after = [v for v, d in RELEASE_DATES.items() if d > date]
    first_after = min(after, key=Version.of) if after else SGLANG_RELEASES[-1]
    assert parse_version(win.oldest) <= parse_version(first_after), (log_id, win, date)


def test_calibrate_reports_the_window_on_the_known_logs():
    """calibrate (model from the shared case / accuracy inputs, no --engine-version) reports a window holding the
    stated release in engine_versions_possible."""
    from kvplan.planning.calibrate import calibrate
    from scripts.accuracy_report import inputs_for, load_cases

    cases = load_cases()
    ran = 0
    for log_id, (releases, _src) in sorted(KNOWN.items()):
        model, gpu, over, _why = inputs_for(log_id, cases)
        over.pop("engine_version", None)
        try:
            cal = calibrate(read_log_file(LOGS / f"{log_id}.log"), model=model, gpu=gpu, overrides=over)
        except InputError:
            continue
        ran += 1
        lo, hi = cal.engine_versions_possible
        assert any(parse_version(lo) <= parse_version(v) <= parse_version(hi) for v in releases), (log_id, lo, hi)
        assert cal.to_dict()["engine_versions_possible"] == [lo, hi]
    assert ran >= 10


# --------------------------------------------------------------------------------------------------
# Hand-written minimal logs at every marker boundary (ranges read in the wheels, see formats.py)
# --------------------------------------------------------------------------------------------------

P = "[2025-01-01 00:00:00 TP0] "
BOUNDARY = [
    # (log text, engine, oldest, newest)
    (
        P + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB\n",
        "sglang",
        "0.3.0",
        "0.4.3.post2",
    ),
    (
        P + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB, mem usage=15.09 GB.\n",
        "sglang",
        "0.4.3.post3",
        "0.5.8.post1",
    ),
    (
        P + "Load weight end. elapsed=3.10 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB, "
        "mem usage=15.09 GB.\n",
        "sglang",
        "0.5.9",
        "0.5.9",
    ),
    (
        P + "Load weight end. elapsed=3.10 s, type=LlamaForCausalLM, avail mem=63.72 GB, mem usage=15.09 GB.\n",
        "sglang",
        "0.5.10",
        "0.5.23",
    ),
    (
        P + "Init torch distributed ends. mem usage=0.51 GB\n" + P + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.4.3.post3",
        "0.5.8.post1",
    ),
    (
        P
        + "Init torch distributed ends. elapsed=1.2 s, mem usage=0.51 GB\n"
        + P
        + "Load weight begin. avail mem=78.00 "
        "GB\n",
        "sglang",
        "0.5.9",
        "0.5.20",
    ),
    (
        P + "Memory baseline taken. mem usage=0.51 GB\n" + P + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.21",
        "0.5.23",
    ),
    (P + "KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB.\n", "sglang", "0.4.1.post6", "0.4.3.post2"),
    (
        P + "KV Cache is allocated. #tokens: 444500, K size: 27.13 GB, V size: 27.13 GB\n",
        "sglang",
        "0.4.3.post3",
        "0.5.12.post1",
    ),
    (P + "KV Cache is allocated. #tokens: 444500, KV size: 27.13 GB\n", "sglang", "0.4.5.post3", "0.5.12.post1"),
    (
        P + "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 444500, K size: 27.13 GB, V size: 27.13 GB\n",
        "sglang",
        "0.5.13",
        "0.5.23",
    ),
    (
        P
        + "SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 44450, K size: 2.13 GB, V size: 2.13 GB\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.17",
        "0.5.23",
    ),
    (
        P
        + "KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, K size: 5.00 GB, V size: 5.00 GB\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.18",
        "0.5.23",
    ),
    (
        P + "max_total_num_tokens=444500, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072\n",
        "sglang",
        "0.3.0",
        "0.4.1.post7",
    ),
    (
        P
        + "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=2049,"
        " context_len=131072\n",
        "sglang",
        "0.4.2",
        "0.4.6.post5",
    ),
    (
        P
        + "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=2049,"
        " context_len=131072, available_gpu_mem=10.00 GB\n",
        "sglang",
        "0.4.7",
        "0.5.23",
    ),
    (
        P + "Capture cuda graph end. Time elapsed: 7.23 s\n" + P + "Load weight begin. avail mem=21.63 GB\n",
        "sglang",
        "0.4.0",
        "0.4.3.post2",
    ),
    (
        P
        + "Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.4.3.post3",
        "0.4.6",
    ),
    (
        P
        + "Capture cuda graph end. Time elapsed: 7.23 s. mem usage=0.93 GB. avail mem=0.53 GB.\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.4.6.post1",
        "0.5.13.post1",
    ),
    (
        P
        + "Capture decode cuda graph end. elapsed=7.23 s, mem usage=0.93 GB, avail mem=0.53 GB.\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.14",
        "0.5.23",
    ),
    (
        "server_args=ServerArgs(model_path='m', mem_fraction_static=0.88, tp_size=1)\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.3.0",
        "0.5.18",
    ),
    (
        "server_args={'model_path': 'm', 'mem_fraction_static': 0.88, 'tp_size': 1}\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.19",
        "0.5.23",
    ),
    # vLLM
    (
        "INFO 12-02 10:00:00 worker.py:233] Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage="
        "15.34GiB peak_torch_memory=16.4GiB memory_usage_post_profile=15.5GiB non_torch_memory=0.35GiB "
        "kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n",
        "vllm",
        "0.6.3.post1",
        "0.6.4.post1",
    ),
    (
        "INFO 01-02 10:00:00 worker.py:266] the current vLLM instance can use total_gpu_memory (23.58GiB) x "
        "gpu_memory_utilization (0.90) = 21.22GiB\nINFO 01-02 10:00:00 Loading model weights took 14.9888 GB\n",
        "vllm",
        "0.6.5",
        "0.10.2",
    ),
    (
        "INFO 01-02 10:00:00 gpu_executor.py:122] # GPU blocks: 1478, # CPU blocks: 2048\n",
        "vllm",
        "0.5.0",
        "0.6.6.post1",
    ),
    ("INFO 01-02 10:00:00 executor_base.py:111] # cuda blocks: 1478, # CPU blocks: 2048\n", "vllm", "0.7.3", "0.11.0"),
    ("INFO 01-02 10:00:00 kv_cache_utils.py:522] # GPU blocks: 127626\n", "vllm", "0.6.4", "0.7.3"),
    (
        "INFO 01-02 10:00:00 [kv_cache_utils.py:1] Maximum concurrency for 8192 tokens per request: 10.49x\n"
        "INFO 01-02 10:00:00 Available KV cache memory: 5.01 GiB\n",
        "vllm",
        "0.9.1",
        "0.11.0",
    ),
    (
        "INFO [kv_cache_utils.py:864] GPU KV cache size: 93,872 tokens\nINFO [kv_cache_utils.py:868] Maximum "
        "concurrency for 16,384 tokens per request: 5.73x\n",
        "vllm",
        "0.8.0",
        "0.27.1",
    ),
    (
        "INFO [kv_cache_utils.py:1870] GPU KV cache size: 93,872 tokens, Maximum concurrency for 16,384 tokens per "
        "request: 5.73x\n",
        "vllm",
        "0.27.1",
        "0.34.0",
    ),
    (
        "INFO [kv_cache_utils.py:1870] XPU KV cache size: 93,872 tokens, Maximum concurrency for 16,384 tokens per "
        "request: 5.73x\n",
        "vllm",
        "0.30.0",
        "0.34.0",
    ),
    (
        "INFO [gpu_worker.py:1] Free memory on device (43.93/44.42 GiB) on startup. Desired GPU memory utilization is "
        "(0.9, 39.98 GiB). Actual usage is 27.72 GiB for weight, 1.4 GiB for peak activation, 0.21 GiB for non-torch "
        "memory, and 3.45 GiB for CUDAGraph memory.\nINFO Available KV cache memory: 10.65 GiB\n",
        "vllm",
        "0.10.2",
        "0.26.0",
    ),
    (
        "INFO [gpu_worker.py:1] Free memory on device (43.93/44.42 GiB) on startup. Desired GPU memory utilization is "
        "(0.92, 39.98 GiB). Actual usage is 27.93 GiB for consumed memory (weights + non-torch), 1.4 GiB for peak "
        "activation, and 3.45 GiB for CUDAGraph memory.\nINFO Available KV cache memory: 10.65 GiB\n",
        "vllm",
        "0.27.0",
        "0.34.0",
    ),
    (
        "INFO [gpu_worker.py:455] CUDA graph memory profiling is enabled (default since v0.21.0). The current "
        "--gpu-memory-utilization=0.8000 is equivalent to --gpu-memory-utilization=0.7924 without CUDA graph memory "
        "profiling.\nINFO Available KV cache memory: 34.32 GiB\n",
        "vllm",
        "0.20.0",
        "0.34.0",
    ),
    (
        "INFO [gpu_model_runner.py:1] Estimated CUDA graph memory: 4.99 GiB total\nINFO Available KV cache memory: "
        "34.32 GiB\n",
        "vllm",
        "0.18.0",
        "0.33.0",
    ),
    (
        "INFO [gpu_model_runner.py:1] Model loading took 14.2488 GiB and 4.422213 seconds\nINFO Available KV cache "
        "memory: 5.01 GiB\n",
        "vllm",
        "0.9.1",
        "0.16.0",
    ),
    (
        "INFO [gpu_model_runner.py:1] Model loading took 14.25 GiB memory and 4.422213 seconds\nINFO Available KV "
        "cache memory: 5.01 GiB\n",
        "vllm",
        "0.13.0",
        "0.34.0",
    ),
    # the remaining forms, each with one sizing line so that the text is a start-up log
    (
        P + "Load weight end. Committed real weights after CUDA graph capture in 3.00 s\n" + P + "Load weight begin. "
        "avail mem=78.00 GB\n",
        "sglang",
        "0.5.18",
        "0.5.23",
    ),
    (
        P + "Post-capture KV sizing: KV cache allocated. #tokens: 900000, K size: 5.00 GB, V size: 5.00 GB, avail "
        "mem=3.00 GB\n" + P + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.16",
        "0.5.23",
    ),
    (
        P
        + "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=2049,"
        " context_len=131072, available_cpu_mem=10.00 GB\n",
        "sglang",
        "0.5.2",
        "0.5.23",
    ),
    (
        P
        + "Mamba Cache is allocated. max_mamba_cache_size: 512, conv_state size: 1.00GB, ssm_state size: 2.00GB\n"
        + P
        + "Load weight begin. avail mem=78.00 GB\n",
        "sglang",
        "0.5.2",
        "0.5.23",
    ),
    (P + "DSV4 pool sizes: full=1000, swa=2000\n", "sglang", "0.5.12", "0.5.23"),
    (
        "INFO [gpu_model_runner.py:1] Model loading took 14.2488 GB and 4.422213 seconds\nINFO [kv_cache_utils.py:1] "
        "GPU KV cache size: 93,872 tokens\n",
        "vllm",
        "0.8.0",
        "0.8.4",
    ),
    (
        "DEBUG [gpu_worker.py:1] Memory profiling takes 3.21 seconds. Total non KV cache memory: 16.2GiB; torch peak "
        "memory increase: 1.2GiB\nINFO Available KV cache memory: 5.01 GiB\n",
        "vllm",
        "0.9.1",
        "0.34.0",
    ),
    (
        "INFO [gpu_worker.py:1] CUDA graph memory profiling is enabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1). "
        "This will become the default in v0.19.\nINFO Available KV cache memory: 5.01 GiB\n",
        "vllm",
        "0.18.0",
        "0.19.1",
    ),
    (
        "INFO 10-01 10:00:00 model_runner.py:1300] Graph capturing finished in 5 secs.\nINFO 10-01 10:00:00 "
        "gpu_executor.py:122] # GPU blocks: 1478, # CPU blocks: 2048\n",
        "vllm",
        "0.5.0",
        "0.6.3.post1",
    ),
    ("INFO 02-01 10:00:00 executor_base.py:108] # CUDA blocks: 1478, # CPU blocks: 2048\n", "vllm", "0.7.0", "0.7.2"),
    (
        "INFO [utils.py:1] non-default args: {'model': 'Qwen/Qwen3-8B'}\nINFO Available KV cache memory: 5.01 GiB\n",
        "vllm",
        "0.9.1",
        "0.34.0",
    ),
    (
        "INFO [gpu_worker.py:1] Initial free memory 31.16 GiB, reserved 4.25 GiB memory for KV Cache as specified by "
        "kv_cache_memory_bytes config and skipped memory profiling.\n",
        "vllm",
        "0.10.2",
        "0.34.0",
    ),
]


@pytest.mark.parametrize("text,engine,oldest,newest", BOUNDARY, ids=[f"{b[1]}-{b[2]}-{b[3]}" for b in BOUNDARY])
def test_marker_boundary(text, engine, oldest, newest):
    f = parse_log(text)
    assert f.engine == engine
    win = release_window(f)
    assert (win.oldest, win.newest) == (oldest, newest), (f.formats, win)


def test_every_marker_has_a_boundary_log_or_a_real_log():
    seen = set()
    for text, *_ in BOUNDARY:
        seen |= set(parse_log(text).formats)
    for p in LOGS.glob("*.log"):
        try:
            seen |= set(read_log_file(p).formats)
        except InputError:
            pass
    assert {m.id for m in MARKERS} <= seen


def test_marker_ranges_are_real_releases_in_order():
    for m in MARKERS:
        rel = SGLANG_RELEASES if m.engine == "sglang" else VLLM_RELEASES
        for v in (m.oldest, m.newest):
            assert v is None or v in rel, (m.id, v)
        if m.oldest and m.newest:
            assert parse_version(m.oldest) <= parse_version(m.newest), m.id


def test_a_trimmed_line_is_no_evidence_of_an_old_release():
    """A form recognised by something missing (here: no available_gpu_mem) needs the log-record prefix: an author's
    trimmed excerpt without it does not pin the release to 0.4.2 - 0.4.6.post5."""
    line = (
        "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests="
        "2049, context_len=131072\n"
    )
    assert "sg_sched_cps" not in parse_log(line).formats
    assert "sg_sched_cps" in parse_log(P + line).formats


def test_contradicting_forms_give_the_releases_between():
    # 0.5.9's weight line (elapsed + dtype) with 0.5.8's baseline line: a main build between 0.5.8.post1 and 0.5.9
    w = _window(
        P + "Init torch distributed ends. mem usage=0.51 GB\n" + P + "Load weight end. elapsed=3.10 s, "
        "type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB, mem usage=15.09 GB.\n"
    )
    assert (w.oldest, w.newest) == ("0.5.8.post1", "0.5.9") and "disagree" in w.reasons[0]


def test_no_release_specific_line_allows_every_release():
    w = _window("Load weight begin. avail mem=78.00 GB\nMemory pool end. avail mem=8.00 GB\n")
    assert (w.oldest, w.newest) == (SGLANG_RELEASES[0], SGLANG_RELEASES[-1])


# --------------------------------------------------------------------------------------------------
# A printed version wins
# --------------------------------------------------------------------------------------------------


def test_printed_sglang_version_wins_over_the_format():
    text = (
        "sglang==0.4.4\n" + P + "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5, K size: 1.00 GB, "
        "V size: 1.00 GB\n"
    )
    w = _window(text)
    assert (w.oldest, w.newest) == ("0.4.4", "0.4.4")
    assert "prints the version" in w.reasons[0] and "suggest 0.5.13 to 0.5.23" in w.reasons[1]


def test_docker_tag_of_a_main_build_maps_to_the_next_release():
    text = (
        "docker run rocm/sgl-dev:v0.5.8.post1-rocm720-mi35x-20260218\n" + P + "Load weight end. elapsed=606.34 "
        "s, type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=209.96 GB, mem usage=73.58 GB.\n"
    )
    w = _window(text)
    assert (w.oldest, w.newest) == ("0.5.9", "0.5.9") and "main-branch build after 0.5.8.post1" in w.reasons[0]
    assert next_release("sglang", "0.5.8.post1") == "0.5.9"


def test_a_forks_own_version_is_not_an_sglang_release():
    w = _window("sglang==0.7.0\n" + P + "KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB\n")
    assert (w.oldest, w.newest) == ("0.4.3.post3", "0.5.12.post1") and "fork" in w.reasons[0]


def test_printed_vllm_version_wins():
    w = _window("INFO vLLM API server version 0.10.1.1\nINFO Available KV cache memory: 5.01 GiB\n")
    assert (w.oldest, w.newest) == ("0.10.1.1", "0.10.1.1")


def test_version_order():
    assert parse_version("0.11.0rc2.dev98+g393de22d2") < parse_version("0.11.0rc2") < parse_version("0.11.0")
    assert parse_version("0.10.1") < parse_version("0.10.1.1") < parse_version("0.10.2")
    assert parse_version("0.5.8") < parse_version("0.5.8.post1") < parse_version("0.5.9")
    assert parse_version("0.10.1.dev101+gbda9d0535") < parse_version("0.10.1")
    assert parse_version("latest") is None
    assert releases_between("sglang", "0.4.1.post6", "0.4.2") == ("0.4.1.post6", "0.4.1.post7", "0.4.2")
    assert format_window("sglang", ["sg_weight_end_elapsed_dtype"])[:2] == ("0.5.9", "0.5.9")


# --------------------------------------------------------------------------------------------------
# calibrate and fit --from-log use the window
# --------------------------------------------------------------------------------------------------

SYNTH = (
    P
    + "Load weight begin. avail mem=78.50 GB\n"
    + P
    + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.42 GB, mem usage=15.08 GB.\n"
    + P
    + "KV Cache is allocated. #tokens: 434000, K size: 26.49 GB, V size: 26.49 GB\n"
)


def test_calibrate_applies_the_newest_release_of_the_window_and_says_why():
    from kvplan.planning.calibrate import calibrate
    from kvplan.views.calibrate import render_calibration

    cal = calibrate(read_log_file(LOGS / "llama31-8b-docs-quickstart-2501.log"))
    d = cal.to_dict()
    assert d["engine_version"] == "0.4.1.post7" and d["engine_versions_possible"] == ["0.4.1.post6", "0.4.1.post7"]
    assert any("K size" in why for why in d["engine_version_reasons"])
    src = next(i["source"] for i in d["inputs"] if i["name"] == "engine_version")
    assert src.startswith("log format")
    # the older release's request cap is the one the log prints (2049 = req_to_token rows; 0.5.23 would give 2048)
    rows = {r["quantity"]: r for r in d["rows"]}
    assert rows["max_running_requests"]["logged"] == 2049 == rows["max_running_requests"]["predicted"]
    assert "release: SGLang 0.4.1.post7 rules applied; the log allows 0.4.1.post6 to 0.4.1.post7" in render_calibration(
        cal, "table"
    )


def test_a_window_across_a_rule_change_lists_the_answer_under_each():
    """mem_fraction_static is not printed: the default changes inside 0.4.3.post3 - 0.5.8.post1 (tp ladder 0.88 to
    0.4.7; round((81559 - (9.5 + 1/2) x 1024) / 81559, 3) = 0.874 from 0.4.7.post1; _handle_gpu_memory_settings
    from 0.5.3): each answer is listed, the newest applied, and --engine-version settles it."""
    from kvplan.planning.calibrate import calibrate
    from kvplan.views.calibrate import render_calibration

    facts = parse_log(SYNTH)
    cal = calibrate(facts, model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100-sxm")
    d = cal.to_dict()
    assert d["engine_version"] == "0.5.8.post1" and d["engine_versions_possible"] == ["0.4.3.post3", "0.5.8.post1"]
    pool = "pool tokens (KV Cache is allocated #tokens)"
    preds = {
        a["engine_version"]: next(r["predicted"] for r in a["rows"] if r["quantity"] == pool) for a in d["by_release"]
    }
    assert d["by_release"][0]["applied"] and len(set(preds.values())) >= 2
    # hand check of the 0.4.4 answer: mfs 0.88 -> 63.42 - 78.50 x 0.12 = 54.0 GiB / 131,072 B = 442,368 tokens
    assert abs(preds["0.4.4.post3"] - int(54.0 * GiB) // 131_072) <= 1
    txt = render_calibration(cal, "table")
    assert "under 0.4.3.post3" in txt and "give --engine-version to settle it" in txt
    settled = calibrate(
        facts, model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100-sxm", overrides={"engine_version": "0.4.4"}
    ).to_dict()
    assert settled["engine_version"] == "0.4.4" and len(settled["by_release"]) == 1
    assert settled["engine_versions_possible"] == ["0.4.3.post3", "0.5.8.post1"]
    assert next(r["predicted"] for r in settled["rows"] if r["quantity"] == pool) == preds["0.4.4.post3"]


def test_no_printed_fraction_and_no_gpu_is_still_missing():
    from kvplan.planning.calibrate import calibrate

    with pytest.raises(InputError, match="mem_fraction_static"):
        calibrate(parse_log(SYNTH), model="meta-llama/Llama-3.1-8B-Instruct")


def test_vllm_window_newer_than_kvplans_rules_is_planned_with_the_newest_it_has():
    from kvplan.engines.vllm.releases import NEWEST_VERSION
    from kvplan.planning.calibrate import calibrate

    cal = calibrate(read_log_file(LOGS / "vllm-21348-qwen3-235b-fp8-4xh100-tp4.log"))
    assert cal.engine_versions_possible == ("0.9.1", "0.34.0")
    assert cal.engine_version == NEWEST_VERSION
    if NEWEST_VERSION != "0.34.0":
        assert any("newer than the newest release kvplan has" in r for r in cal.release_reasons)


def test_fit_from_log_says_which_release_and_engine_version_sets_both_sides():
    from kvplan.planning.whatif import whatif
    from kvplan.views.whatif import render_whatif

    facts = read_log_file(LOGS / "qwq-32b-4xL4-tp4.log")
    w = whatif(facts, {"mem_fraction_static": 0.9}, gpu="l4")
    d = json.loads(render_whatif(w, "json"))
    assert d["engine_version"] == "0.4.6" and d["engine_versions_possible"] == ["0.4.3.post3", "0.4.6"]
    assert "engine_version" not in d["changed"]
    w2 = whatif(facts, {"mem_fraction_static": 0.9, "engine_version": "0.4.4"}, gpu="l4")
    assert w2.baseline.engine_version == w2.whatif.engine_version == "0.4.4" and "engine_version" not in w2.changed
    assert "release: 0.4.4 rules applied" in render_whatif(w2, "table")
