"""The release-specific forms of the sizing lines: which releases print a line in exactly this form.

One :class:`Marker` per form: the line's anchor text, a test on the cleaned line, and the oldest and newest release
whose wheel prints it (``None`` = the engine's oldest / newest release kvplan knows, :mod:`.versions`).  The scan
records the id of every form it sees (:func:`read_line`, and the argument readers for ``server_args=`` /
``non-default args:``); :func:`kvplan.inputs.logs.release.release_window` intersects the ranges.

Every range was read in the released wheels (``pip download --no-deps sglang==X`` / ``vllm==X``, the f-string at the
path given): where the form changed between two wheels read, A (old form) and B (new form), with releases between them
not read, the old form's range ends at the release before B and the new form's starts at the release after A, so a
range never leaves out a release it might cover.  SGLang wheels read: every minor release 0.3.0-0.5.23 and 0.4.1.post5,
.post6, .post7, 0.4.2, 0.4.3.post2, .post3, .post4, 0.4.4.post1-.post4, 0.4.5.post2, .post3, 0.4.6, .post1, .post2,
.post5, 0.4.7.post1, 0.4.9.post6, 0.5.0rc2, 0.5.1.post3, 0.5.8.post1, 0.5.12.post1, 0.5.13.post1.  vLLM wheels read:
0.5.5, 0.6.3, 0.6.4, 0.6.4.post1, 0.6.5, 0.6.6, 0.6.6.post1, 0.7.0, 0.7.2, 0.7.3, 0.8.0, 0.8.5, 0.9.0, 0.9.2, 0.10.0,
0.10.1, 0.10.2, 0.11.0, 0.11.1, 0.12.0, 0.17.0-0.21.0, 0.25.1-0.30.0, 0.33.0, 0.34.0.

A form that is recognised by something *missing* (no ``mem usage``, no ``available_gpu_mem``) only counts when the
line still has its log-record prefix (a timestamp, a level, ``[file.py:N]``), so an excerpt an author trimmed does not
pass for an old release.  Paths below are inside the wheel, under ``sglang/srt/`` and ``vllm/``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kvplan.inputs.logs.collect import Collector


@dataclass(frozen=True)
class Marker:
    """A line form and the releases that print it (``None``: the engine's oldest / newest release)."""

    id: str
    engine: str
    anchor: str  # text the line must contain (cheap gate before ``test``)
    test: Callable[[str], bool]  # the cleaned line has this form
    oldest: str | None
    newest: str | None
    form: str  # the form, as the engine prints it
    source: str  # where the wheel prints it


_RECORD_PREFIX_RE = re.compile(
    r"\[\d{4}-\d\d-\d\d|\d{4}-\d\d-\d\d[ T]\d|\b(?:INFO|WARNING|DEBUG)\b|\[[\w.]{1,60}\.py:\d{1,6}\]|\(\w{1,40} pid=\d"
)


def _after(line: str, anchor: str, width: int = 600) -> str:
    i = line.find(anchor)
    return line[i : i + width] if i >= 0 else ""


def _prefixed(line: str, anchor: str) -> bool:
    """The line keeps its log-record prefix before ``anchor`` (it was not trimmed by hand)."""
    i = line.find(anchor)
    return i > 0 and _RECORD_PREFIX_RE.search(line[max(0, i - 300) : i]) is not None


def _rx(anchor: str, pattern: str, *, whole: bool = False, prefixed: bool = False) -> Callable[[str], bool]:
    """The text from ``anchor`` matches ``pattern`` (``whole``: up to the end of the line, bar spaces)."""
    rx = re.compile(pattern + (r"\s*$" if whole else ""))

    def test(line: str) -> bool:
        return rx.match(_after(line, anchor)) is not None and (not prefixed or _prefixed(line, anchor))

    return test


def _has(*texts: str) -> Callable[[str], bool]:
    return lambda line: all(t in line for t in texts)


def _weight_end_elapsed_no_dtype(line: str) -> bool:
    """0.5.10+: ``Load weight end. elapsed=T s, type=C, [quant, ]avail mem=...`` (no ``dtype=``)."""
    win = _after(line, "Load weight end")
    return _WEIGHT_ELAPSED_RE.match(win) is not None and "dtype=" not in win and "avail mem=" in win


_WEIGHT_ELAPSED_RE = re.compile(r"Load weight end\. elapsed=\d+(?:\.\d+)? s, type=\S+, ")
_NUM = r"\d+(?:\.\d+)?"
_SCHED = r"max_total_num_tokens=\d+, "
_KV_TOKENS_ALONE_RE = re.compile(r"KV cache size: [\d,]+ tokens\s*$")
_CONC_PLAIN_RE = re.compile(r"Maximum concurrency for \d{4,} tokens per request")
_CONC_COMMA_RE = re.compile(r"Maximum concurrency for \d{1,3}(?:,\d{3})+ tokens per request")
_DEVICE_PREFIX_RE = re.compile(r"\b(?:host|XPU|NPU|HPU|TPU|CPU) KV cache size: [\d,]+ tokens")
_KV_LABEL_RE = re.compile(
    r"(?:\bSWA|\bFull|\b[Dd]raft[\w ]{0,20}|\bMiniMax[\w\- .]{1,60}?) KV Cache (?:is allocated"
    r"|VA upper bound)\. dtype:"
)


def _kv_tokens_two_lines(line: str) -> bool:
    """<=0.27: ``GPU KV cache size: N tokens`` alone on its line (the concurrency on the next), as logged."""
    return (
        _KV_TOKENS_ALONE_RE.search(_after(line, "KV cache size:")) is not None
        and "Maximum concurrency" not in line
        and _prefixed(line, "KV cache size:")
    )


def _search(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda line: rx.search(line) is not None


SG, VL = "sglang", "vllm"
_MR = "model_executor/model_runner.py ModelRunner"
_POOL = "mem_cache/memory_pool.py"

#: Every release-specific line form: SGLang first, then vLLM.
MARKERS: tuple[Marker, ...] = (
    # ---- SGLang: server arguments
    Marker(
        "sg_args_repr",
        SG,
        "server_args=",
        _has("server_args=ServerArgs("),
        None,
        "0.5.18",
        "server_args=ServerArgs(...)",
        'server.py / entrypoints/engine.py logger.info(f"{server_args=}")',
    ),
    Marker(
        "sg_args_dict",
        SG,
        "server_args=",
        _has("server_args={"),
        "0.5.19",
        None,
        "server_args={...}",
        'entrypoints/engine.py logger.info(f"server_args={server_args.resolved_dict()}")',
    ),
    # ---- SGLang: weights
    Marker(
        "sg_weight_end_plain",
        SG,
        "Load weight end",
        _rx("Load weight end", rf"Load weight end\. type=\S+, dtype=\S+, avail mem={_NUM} GB", whole=True),
        None,
        "0.4.3.post2",
        "Load weight end. type=C, dtype=D, avail mem=X GB (no mem usage)",
        f"{_MR}.load_model",
    ),
    Marker(
        "sg_weight_end_usage",
        SG,
        "Load weight end",
        _rx("Load weight end", rf"Load weight end\. type=\S+, dtype=\S+, avail mem={_NUM} GB, mem usage="),
        "0.4.3.post3",
        "0.5.8.post1",
        "Load weight end. type=C, dtype=D, avail mem=X GB, mem usage=Y GB.",
        f"{_MR}.load_model",
    ),
    Marker(
        "sg_weight_end_elapsed_dtype",
        SG,
        "Load weight end",
        _rx("Load weight end", rf"Load weight end\. elapsed={_NUM} s, type=\S+, dtype="),
        "0.5.9",
        "0.5.9",
        "Load weight end. elapsed=T s, type=C, dtype=D, ...",
        f"{_MR}.load_model",
    ),
    Marker(
        "sg_weight_end_elapsed",
        SG,
        "Load weight end",
        _weight_end_elapsed_no_dtype,
        "0.5.10",
        None,
        "Load weight end. elapsed=T s, type=C, [quant, ]avail mem=... (no dtype)",
        f"{_MR}.load_model",
    ),
    Marker(
        "sg_weight_committed",
        SG,
        "Load weight end",
        _has("Load weight end. Committed real weights"),
        "0.5.18",
        None,
        "Load weight end. Committed real weights after CUDA graph capture ...",
        "model_executor/model_runner_components/startup_weight_load.py",
    ),
    # ---- SGLang: the memory baseline
    Marker(
        "sg_init_dist_usage",
        SG,
        "Init torch distributed ends",
        _has("Init torch distributed ends. mem usage="),
        "0.4.3.post3",
        "0.5.8.post1",
        "Init torch distributed ends. mem usage=X GB",
        f"{_MR}.init_torch_distributed",
    ),
    Marker(
        "sg_init_dist_elapsed",
        SG,
        "Init torch distributed ends",
        _has("Init torch distributed ends. elapsed="),
        "0.5.9",
        "0.5.20",
        "Init torch distributed ends. elapsed=T s, mem usage=X GB",
        f"{_MR}.init_torch_distributed; distributed/bootstrap.py from 0.5.16",
    ),
    Marker(
        "sg_mem_baseline",
        SG,
        "Memory baseline taken",
        _has("Memory baseline taken. mem usage="),
        "0.5.21",
        None,
        "Memory baseline taken. mem usage=X GB",
        "distributed/bootstrap.py",
    ),
    # ---- SGLang: the KV pool
    Marker(
        "sg_kv_ksize",
        SG,
        "KV Cache is allocated",
        _has("KV Cache is allocated. K size:"),
        "0.4.1.post6",
        "0.4.3.post2",
        "KV Cache is allocated. K size: a GB, V size: b GB.",
        f"{_POOL} MHATokenToKVPool",
    ),
    Marker(
        "sg_kv_tokens",
        SG,
        "KV Cache is allocated",
        _has("KV Cache is allocated. #tokens:"),
        "0.4.3.post3",
        "0.5.12.post1",
        "KV Cache is allocated. #tokens: N, K size: ... (no dtype)",
        f"{_POOL}",
    ),
    Marker(
        "sg_kv_mla",
        SG,
        "KV Cache is allocated",
        _rx("KV Cache is allocated", r"KV Cache is allocated\. (?:dtype: [\w.]+, )?#tokens: \d+, KV size:"),
        "0.4.5.post3",
        None,
        "KV Cache is allocated. #tokens: N, KV size: c GB (MLA pool)",
        f"{_POOL} MLATokenToKVPool",
    ),
    Marker(
        "sg_kv_dtype",
        SG,
        "KV Cache",
        _rx("KV Cache", r"KV Cache (?:is allocated|VA upper bound)\. dtype: "),
        "0.5.13",
        None,
        "KV Cache is allocated. dtype: D, #tokens: N, ...",
        f"{_POOL}",
    ),
    Marker(
        "sg_kv_label",
        SG,
        "KV Cache",
        _search(_KV_LABEL_RE),
        "0.5.17",
        None,
        "<label> KV Cache is allocated. dtype: ...",
        f"{_POOL} (allocation_label)",
    ),
    Marker(
        "sg_kv_va",
        SG,
        "KV Cache VA upper bound",
        _has("KV Cache VA upper bound"),
        "0.5.18",
        None,
        "KV Cache VA upper bound. dtype: ...",
        f"{_POOL} (post_capture_active)",
    ),
    Marker(
        "sg_post_capture",
        SG,
        "Post-capture KV sizing",
        _has("Post-capture KV sizing"),
        "0.5.16",
        None,
        "Post-capture KV sizing: KV cache allocated. ...",
        "model_executor/model_runner_components/kv_pool_runtime.py",
    ),
    Marker(
        "sg_kv_dtype_line",
        SG,
        "Using KV cache dtype:",
        _has("Using KV cache dtype:"),
        "0.5.3",
        "0.5.12.post1",
        "Using KV cache dtype: D",
        "model_executor/model_runner.py",
    ),
    Marker(
        "sg_mamba",
        SG,
        "Mamba Cache is allocated",
        _has("Mamba Cache is allocated"),
        "0.5.2",
        None,
        "Mamba Cache is allocated. max_mamba_cache_size: ...",
        f"{_POOL} MambaPool",
    ),
    Marker(
        "sg_dsv4",
        SG,
        "DSV4 ",
        _has("DSV4 "),
        "0.5.12",
        None,
        "DSV4 memory calculation: ... / DSV4 pool sizes",
        "model_executor/pool_configurator.py DSV4PoolConfigurator",
    ),
    # ---- SGLang: the scheduler line
    Marker(
        "sg_sched_plain",
        SG,
        "max_total_num_tokens=",
        _rx("max_total_num_tokens=", _SCHED + r"max_prefill_tokens=\d+, max_running_requests=\d+, context_len=\d+"),
        None,
        "0.4.1.post7",
        "max_total_num_tokens=N, max_prefill_tokens=..., max_running_requests=R, context_len=C",
        "managers/tp_worker.py (<=0.3.2), managers/scheduler.py Scheduler.__init__",
    ),
    Marker(
        "sg_sched_cps",
        SG,
        "max_total_num_tokens=",
        _rx(
            "max_total_num_tokens=",
            _SCHED + r"chunked_prefill_size=-?\d+, max_prefill_tokens=\d+, "
            r"max_running_requests=\d+, context_len=\d+",
            whole=True,
            prefixed=True,
        ),
        "0.4.2",
        "0.4.6.post5",
        "max_total_num_tokens=N, chunked_prefill_size=..., ..., context_len=C (line ends)",
        "managers/scheduler.py Scheduler.__init__",
    ),
    Marker(
        "sg_sched_gpu_mem",
        SG,
        "available_gpu_mem=",
        _rx("max_total_num_tokens=", _SCHED + r".*available_gpu_mem="),
        "0.4.7",
        None,
        "max_total_num_tokens=N, ..., context_len=C, available_gpu_mem=X GB",
        "managers/scheduler.py Scheduler.__init__",
    ),
    Marker(
        "sg_sched_cpu_mem",
        SG,
        "available_cpu_mem=",
        _rx("max_total_num_tokens=", _SCHED + r".*available_cpu_mem="),
        "0.5.2",
        None,
        "max_total_num_tokens=N, ..., available_cpu_mem=X GB",
        "managers/scheduler.py",
    ),
    # ---- SGLang: CUDA graph capture
    Marker(
        "sg_cg_plain",
        SG,
        "Capture cuda graph end",
        _rx("Capture cuda graph end", rf"Capture cuda graph end\. Time elapsed: {_NUM} s", whole=True, prefixed=True),
        "0.4.0",
        "0.4.3.post2",
        "Capture cuda graph end. Time elapsed: T s (no memory)",
        f"{_MR}.init_cuda_graphs",
    ),
    Marker(
        "sg_cg_avail_first",
        SG,
        "Capture cuda graph end",
        _rx("Capture cuda graph end", rf"Capture cuda graph end\. Time elapsed: {_NUM} s\. avail mem="),
        "0.4.3.post3",
        "0.4.6",
        "Capture cuda graph end. Time elapsed: T s. avail mem=X GB. mem usage=Y GB.",
        f"{_MR}.init_cuda_graphs",
    ),
    Marker(
        "sg_cg_usage_first",
        SG,
        "Capture cuda graph end",
        _rx("Capture cuda graph end", rf"Capture cuda graph end\. Time elapsed: {_NUM} s\. mem usage="),
        "0.4.6.post1",
        "0.5.13.post1",
        "Capture cuda graph end. Time elapsed: T s. mem usage=Y GB. avail mem=X GB.",
        f"{_MR}.init_device_graphs",
    ),
    Marker(
        "sg_cg_elapsed",
        SG,
        "graph end. elapsed=",
        _rx("Capture", r"Capture [\w ]{1,60} graph end\. elapsed="),
        "0.5.14",
        None,
        "Capture <kind> CUDA graph end. elapsed=T s, mem usage=Y GB, avail mem=X GB.",
        f"{_MR}; model_executor/model_runner_components/cuda_graph_setup.py from 0.5.16",
    ),
    # ---- vLLM: weights
    Marker(
        "vl_weights_v0",
        VL,
        "Loading model weights took",
        _rx("Loading model weights took", rf"Loading model weights took {_NUM} GB"),
        None,
        "0.10.2",
        "Loading model weights took X GB (CUDA runners to 0.7.3; XPU runner to 0.10.2)",
        "worker/model_runner.py GPUModelRunnerBase.load_model",
    ),
    Marker(
        "vl_loading_gb",
        VL,
        "Model loading took",
        _rx("Model loading took", rf"Model loading took {_NUM} GB and"),
        "0.8.0",
        "0.8.4",
        "Model loading took X GB and T seconds",
        "v1/worker/gpu_model_runner.py load_model",
    ),
    Marker(
        "vl_loading_4dp",
        VL,
        "Model loading took",
        _rx("Model loading took", r"Model loading took \d+\.\d{4} GiB (?:memory )?and \d"),
        "0.8.5",
        "0.16.0",
        "Model loading took X.XXXX GiB [memory ]and T seconds (%.4f)",
        "v1/worker/gpu_model_runner.py load_model",
    ),
    Marker(
        "vl_loading_fmt_gib",
        VL,
        "Model loading took",
        _rx("Model loading took", r"Model loading took \d+(?:\.\d{1,2})? GiB (?:memory )?and \d"),
        "0.13.0",
        None,
        "Model loading took X.XX GiB [memory ]and T seconds (format_gib)",
        "v1/worker/gpu_model_runner.py; v1/worker/gpu/model_runner.py",
    ),
    # ---- vLLM: the memory profile
    Marker(
        "vl_profile_results",
        VL,
        "Memory profiling results",
        _has("Memory profiling results: total_gpu_memory="),
        "0.6.3.post1",
        "0.6.4.post1",
        "Memory profiling results: total_gpu_memory=X GiB initial_memory_usage=...",
        "worker/worker.py Worker.determine_num_available_blocks",
    ),
    Marker(
        "vl_profile_results_duration",
        VL,
        "Memory profiling results",
        _has("Memory profiling results: duration="),
        "0.6.4.post1",
        "0.6.5",
        "Memory profiling results: duration=T seconds, total_gpu_memory=... (main builds of Dec 2024)",
        "worker/worker.py (not in a released wheel)",
    ),
    Marker(
        "vl_profile_v0",
        VL,
        "total_gpu_memory (",
        _has("the current vLLM instance can use total_gpu_memory"),
        "0.6.5",
        "0.10.2",
        "the current vLLM instance can use total_gpu_memory (X GiB) x gpu_memory_utilization ...",
        "worker/worker.py Worker.determine_num_available_blocks",
    ),
    Marker(
        "vl_profile_debug",
        VL,
        "Total non KV cache memory",
        _has("Memory profiling takes", "Total non KV cache"),
        "0.9.1",
        None,
        "Memory profiling takes T seconds. Total non KV cache memory: ...",
        "utils/__init__.py MemoryProfilingResult.__repr__ (debug level)",
    ),
    Marker(
        "vl_free_info",
        VL,
        "Free memory on device",
        _has("on startup. Desired GPU memory utilization is"),
        "0.10.2",
        None,
        "Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (u, R GiB).",
        "v1/worker/gpu_worker.py Worker.compile_or_warm_up_model",
    ),
    Marker(
        "vl_usage_weight",
        VL,
        "Free memory on device",
        _has("GiB for weight,"),
        "0.10.2",
        "0.26.0",
        "... Actual usage is W GiB for weight, P GiB for peak activation, N GiB for non-torch memory, ...",
        "v1/worker/gpu_worker.py",
    ),
    Marker(
        "vl_usage_consumed",
        VL,
        "Free memory on device",
        _has("GiB for consumed memory"),
        "0.27.0",
        None,
        "... Actual usage is C GiB for consumed memory (weights + non-torch), ...",
        "v1/worker/gpu_worker.py",
    ),
    Marker(
        "vl_available_kv",
        VL,
        "Available KV cache memory",
        _has("Available KV cache memory:"),
        "0.9.1",
        None,
        "Available KV cache memory: X GiB",
        "v1/worker/gpu_worker.py Worker.determine_available_memory",
    ),
    Marker(
        "vl_kv_override",
        VL,
        "memory for KV Cache as specified",
        _has("memory for KV Cache as specified"),
        "0.10.2",
        None,
        "Initial free memory F GiB, reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes",
        "v1/worker/gpu_worker.py",
    ),
    Marker(
        "vl_cg_optin",
        VL,
        "CUDA graph memory profiling is enabled",
        _has("CUDA graph memory profiling is enabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)"),
        "0.18.0",
        "0.19.1",
        "CUDA graph memory profiling is enabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)...",
        "v1/worker/gpu_worker.py",
    ),
    Marker(
        "vl_cg_default",
        VL,
        "CUDA graph memory profiling is enabled",
        _has("CUDA graph memory profiling is enabled (default since"),
        "0.20.0",
        None,
        "CUDA graph memory profiling is enabled (default since v0.21.0). ...",
        "v1/worker/gpu_worker.py",
    ),
    Marker(
        "vl_cg_estimate",
        VL,
        "Estimated CUDA graph memory",
        _has("Estimated CUDA graph memory:"),
        "0.18.0",
        "0.33.0",
        "Estimated CUDA graph memory: X GiB total",
        "v1/worker/gpu_model_runner.py profile_cudagraph_memory",
    ),
    Marker(
        "vl_graph_took",
        VL,
        "Graph capturing finished",
        _has("Graph capturing finished in", ", took"),
        "0.6.3.post1",
        None,
        "Graph capturing finished in N secs, took X GiB",
        "worker/model_runner.py; v1/worker/gpu_model_runner.py",
    ),
    Marker(
        "vl_graph_plain",
        VL,
        "Graph capturing finished",
        _rx("Graph capturing finished", r"Graph capturing finished in \d+ secs\.?", whole=True, prefixed=True),
        None,
        "0.6.3.post1",
        "Graph capturing finished in N secs. (no memory)",
        "worker/model_runner.py",
    ),
    # ---- vLLM: blocks, tokens, concurrency
    Marker(
        "vl_blocks_v0",
        VL,
        "blocks:",
        _has("# GPU blocks:", "# CPU blocks:"),
        None,
        "0.6.6.post1",
        "# GPU blocks: N, # CPU blocks: M",
        "executor/gpu_executor.py / distributed_gpu_executor.py",
    ),
    Marker(
        "vl_blocks_v0_dispatch",
        VL,
        "blocks:",
        _has("# CUDA blocks:", "# CPU blocks:"),
        "0.7.0",
        "0.7.2",
        "# CUDA blocks: N, # CPU blocks: M",
        "executor/executor_base.py (current_platform.dispatch_key)",
    ),
    Marker(
        "vl_blocks_v0_device",
        VL,
        "blocks:",
        _has("# cuda blocks:", "# CPU blocks:"),
        "0.7.3",
        "0.11.0",
        "# cuda blocks: N, # CPU blocks: M",
        "executor/executor_base.py (current_platform.device_name)",
    ),
    Marker(
        "vl_blocks_v1",
        VL,
        "GPU blocks:",
        _rx("# GPU blocks:", r"# GPU blocks: \d+", whole=True, prefixed=True),
        "0.6.4",
        "0.7.3",
        "# GPU blocks: N (V1, no CPU blocks)",
        "v1/executor/gpu_executor.py; v1/core/kv_cache_utils.py",
    ),
    Marker(
        "vl_conc_plain",
        VL,
        "Maximum concurrency for",
        _search(_CONC_PLAIN_RE),
        "0.6.3",
        "0.11.0",
        "Maximum concurrency for 8192 tokens per request (no thousands separator)",
        "executor/executor_base.py (V0); v1/core/kv_cache_utils.py to 0.7.3",
    ),
    Marker(
        "vl_conc_commas",
        VL,
        "Maximum concurrency for",
        _search(_CONC_COMMA_RE),
        "0.8.0",
        None,
        "Maximum concurrency for 8,192 tokens per request",
        "v1/core/kv_cache_utils.py",
    ),
    Marker(
        "vl_kv_tokens",
        VL,
        "KV cache size:",
        _rx("KV cache size:", r"KV cache size: [\d,]+ tokens"),
        "0.8.0",
        None,
        "GPU KV cache size: N tokens",
        "v1/core/kv_cache_utils.py",
    ),
    Marker(
        "vl_kv_two_lines",
        VL,
        "KV cache size:",
        _kv_tokens_two_lines,
        "0.8.0",
        "0.27.1",
        "GPU KV cache size: N tokens (alone on its line; concurrency on the next)",
        "v1/core/kv_cache_utils.py _report_kv_cache_config",
    ),
    Marker(
        "vl_kv_one_line",
        VL,
        "KV cache size:",
        _has("KV cache size:", "tokens, Maximum concurrency for"),
        "0.27.1",
        None,
        "GPU KV cache size: N tokens, Maximum concurrency for L tokens per request: C.CCx",
        "v1/core/kv_cache_utils.py update_kv_cache_capacity",
    ),
    Marker(
        "vl_kv_device",
        VL,
        "KV cache size:",
        _search(_DEVICE_PREFIX_RE),
        "0.30.0",
        None,
        "<device|GPU + host> KV cache size: N tokens, ...",
        "v1/core/kv_cache_utils.py _kv_cache_device_name",
    ),
    Marker(
        "vl_num_gpu_blocks_is",
        VL,
        "num_gpu_blocks",
        _has("num_gpu_blocks is:"),
        "0.9.0",
        None,
        "... num_gpu_blocks is: N",
        "v1/metrics/loggers.py",
    ),
    Marker(
        "vl_non_default",
        VL,
        "non-default args:",
        _has("non-default args:"),
        "0.9.0",
        None,
        "non-default args: {...}",
        "entrypoints/utils.py log_non_default_args",
    ),
)

_BY_ANCHOR: dict[str, tuple[Marker, ...]] = {}
for _m in MARKERS:
    _BY_ANCHOR[_m.anchor] = (*_BY_ANCHOR.get(_m.anchor, ()), _m)
BY_ID: dict[str, Marker] = {m.id: m for m in MARKERS}
# The argument lines are read by the argument readers, not the line scan (see scan.py).
_ARGS_ANCHORS = ("server_args=", "non-default args:")


def read_line(c: Collector, line: str) -> None:
    """Record every release-specific form ``line`` (a cleaned candidate line) has."""
    for anchor, markers in _BY_ANCHOR.items():
        if anchor in line and anchor not in _ARGS_ANCHORS:
            for m in markers:
                if m.id not in c.formats and m.test(line):
                    c.formats.add(m.id)


def read_args_line(c: Collector, head: str) -> None:
    """The form of a ``server_args=`` / ``non-default args:`` line, from its first characters."""
    for anchor in _ARGS_ANCHORS:
        if anchor in head:
            for m in _BY_ANCHOR[anchor]:
                if m.test(head):
                    c.formats.add(m.id)
