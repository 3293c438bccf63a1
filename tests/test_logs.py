"""Tests for kvplan.inputs.logs: recovery of the printed figures from real start-up logs, formats, robustness.

Expected numbers come from the log text itself (SGLang "GB" and vLLM "GiB" are both 2**30 bytes: SGLang divides
by ``GB = 1 << 30`` in memory_pool.py / get_available_gpu_memory; vLLM's ``format_gib`` divides by GiB_bytes).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.errors import InputError
from kvplan.inputs.logs import LogFacts, missing_for_measured, parse_log, read_log_file

GIB = 2**30
HALF_CENT = 0.005 * GIB  # print rounding of a two-decimal GiB figure
ROOT = Path(__file__).resolve().parent
LOGS = ROOT / "validation" / "logs"


def _shared_dir() -> Path | None:
    for cand in (ROOT / "data" / "shared" / "validation",):
        if (cand / "sglang_dev.jsonl").is_file():
            return cand
    return None


def _cases(name: str) -> list[dict]:
    d = _shared_dir()
    if d is None:
        return []
    return [json.loads(line) for line in (d / name).read_text().splitlines() if line.strip()]


SG_CASES = _cases("sglang_dev.jsonl")
VL_CASES = _cases("vllm_dev.jsonl")

# reported field -> (LogFacts attribute or "extra:<key>", kind)
SG_MAP = {
    "avail_mem_before_weights_gb": ("free_before_weights_bytes", "gib"),
    "avail_mem_after_weights_gb": ("free_after_weights_bytes", "gib"),
    "weight_load_mem_usage_gb": ("weight_load_bytes", "gib"),
    "kv_tokens": ("kv_tokens", "int"),
    "k_size_gb": ("k_bytes", "gib"),
    "v_size_gb": ("v_bytes", "gib"),
    "kv_size_gb": ("kv_bytes", "gib"),
    "avail_mem_after_pool_gb": ("free_after_pool_bytes", "gib"),
    "max_total_num_tokens": ("max_total_num_tokens", "int"),
    "max_running_requests": ("max_running_requests", "int"),
    "context_len": ("context_len", "int"),
    "available_gpu_mem_at_ready_gb": ("extra:available_gpu_mem_at_ready_bytes", "gib"),
    "total_gpu_mem_gb": ("gpu_total_bytes", "gib"),
}
VL_MAP = {
    "model_loading_gib": ("model_loading_bytes", "gib"),
    "available_kv_cache_gib": ("available_kv_cache_bytes", "gib"),
    "gpu_kv_cache_tokens": ("gpu_kv_cache_tokens", "int"),
    "num_gpu_blocks": ("num_gpu_blocks", "int"),
    "max_concurrency": ("max_concurrency", "float"),
    "max_concurrency_tokens_per_request": ("max_concurrency_tokens", "int"),
    "cuda_graph_gib": ("cuda_graph_bytes", "gib"),
    "total_gpu_mem_gib": ("total_gpu_memory_bytes", "gib"),
    "peak_activation_gib": ("peak_activation_bytes", "gib"),
    "non_torch_gib": ("non_torch_bytes", "gib"),
}
# Reported values that are NOT in the quoted log text (author tables, derived numbers): not recoverable.
NOT_IN_EXCERPT = {
    ("glm5-nvfp4-8x-rtxpro6000-tp8", "context_len"): "from the author's 'Measured performance' block",
    ("llmd-llama31-8b-h100", "peak_activation_gib"): "author table, not a log line",
    ("llmd-llama31-8b-h100", "non_torch_gib"): "author table, not a log line",
    ("llmd-llama31-8b-h100", "cuda_graph_gib"): "author table, not a log line",
    ("llmd-llama31-8b-h100", "total_gpu_mem_gib"): "from the file text",
    ("llmd-qwen3-32b-2xh100-tp2", "peak_activation_gib"): "author table, not a log line",
    ("llmd-qwen3-32b-2xh100-tp2", "non_torch_gib"): "author table, not a log line",
    ("llmd-qwen3-32b-2xh100-tp2", "cuda_graph_gib"): "author table, not a log line",
    ("llmd-qwen3-32b-2xh100-tp2", "total_gpu_mem_gib"): "from the file text",
    ("llama31-8b-rtx3090-v0-20k", "gpu_kv_cache_tokens"): "derived: blocks x 16",
    ("deepseek-v2-lite-h100-v0-premla", "gpu_kv_cache_tokens"): "derived: blocks x 16",
    ("gemma3-27b-mi300x-rocm", "cuda_graph_gib"): "graph line not quoted in the excerpt",
    ("dsv4-flash-8xb200-tp8-ep", "max_concurrency"): "author-reformatted ('/ 20.43x')",
    ("dsv4-flash-8xb200-tp8-ep", "max_concurrency_tokens_per_request"): "max_model_len not in the excerpt",
    ("glm5-nvfp4-8x-rtxpro6000-tp8", "max_total_num_tokens"): "from the author's text ('314304 total slots')",
    ("deepseek-v3-kt-tp2-capped", "avail_mem_after_pool_gb"): "the 'Memory pool end' line is not in the excerpt",
}


def _get(facts: LogFacts, attr: str):
    if attr.startswith("extra:"):
        return facts.extra.get(attr[6:])
    return getattr(facts, attr)


def _check(case_id: str, facts: LogFacts, reported: dict, mapping: dict) -> list[str]:
    bad = []
    for field, value in reported.items():
        if value is None or field not in mapping or (case_id, field) in NOT_IN_EXCERPT:
            continue
        attr, kind = mapping[field]
        got = _get(facts, attr)
        if got is None:
            bad.append(f"{field}: not recovered (expected {value})")
        elif kind == "gib" and abs(got - value * GIB) > HALF_CENT:
            bad.append(f"{field}: {got / GIB:.4f} GiB != {value}")
        elif (kind == "int" and got != value) or (kind == "float" and abs(got - value) > 0.005):
            bad.append(f"{field}: {got} != {value}")
    return bad


def _fixture_text(case_id: str) -> str:
    return (LOGS / f"{case_id}.log").read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------------
# Shared validation cases: every reported value that is in the excerpt is recovered
# --------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not SG_CASES, reason="shared/validation not present")
@pytest.mark.parametrize("case", SG_CASES, ids=[c["id"] for c in SG_CASES])
def test_sglang_shared_case_recovered(case):
    text = _fixture_text(case["id"])
    excerpt = case["log_excerpt"] if isinstance(case["log_excerpt"], str) else "\n".join(case["log_excerpt"])
    assert excerpt.strip() in text, "fixture file must hold the excerpt verbatim"
    facts = read_log_file(LOGS / f"{case['id']}.log")
    assert facts.engine == "sglang"
    assert _check(case["id"], facts, case["reported"], SG_MAP) == []
    # config fields present in the quoted server_args
    sa = facts.server_args
    for key, case_key in (
        ("mem_fraction_static", "mem_fraction_static"),
        ("chunked_prefill_size", "chunked_prefill_size"),
        ("tp_size", "tp"),
        ("cuda_graph_max_bs", "cuda_graph_max_bs"),
        ("page_size", "page_size"),
        ("attention_backend", "attention_backend"),
        ("kv_cache_dtype", "kv_cache_dtype"),
    ):
        if f"{key}=" in excerpt and "server_args=" in excerpt:
            assert key in sa, key
            want = case[case_key]
            if isinstance(want, str):  # free text whose first word is the engine's value
                want = want.split()[0]
            assert sa[key] == want, (key, sa[key], case[case_key])


@pytest.mark.skipif(not VL_CASES, reason="shared/validation not present")
@pytest.mark.parametrize("case", VL_CASES, ids=[c["id"] for c in VL_CASES])
def test_vllm_shared_case_recovered(case):
    text = _fixture_text(case["id"])
    excerpt = case["log_excerpt"] if isinstance(case["log_excerpt"], str) else "\n".join(case["log_excerpt"])
    assert excerpt.strip() in text
    facts = read_log_file(LOGS / f"{case['id']}.log")
    assert facts.engine == "vllm"
    assert _check(case["id"], facts, case["reported"], VL_MAP) == []


def test_known_unrecoverable_list_is_not_stale():
    """Every exclusion names a reported value that exists and really is absent from the parse."""
    by_id = {c["id"]: c for c in SG_CASES + VL_CASES}
    if not by_id:
        pytest.skip("shared/validation not present")
    for cid, field in NOT_IN_EXCERPT:
        case = by_id[cid]
        assert case["reported"][field] is not None
        mapping = SG_MAP if cid in {c["id"] for c in SG_CASES} else VL_MAP
        facts = read_log_file(LOGS / f"{cid}.log")
        assert _check("", facts, {field: case["reported"][field]}, mapping) != [], (cid, field)


# --------------------------------------------------------------------------------------------------
# Additional public logs (tests/validation/README.md lists sources); expected values read off the text
# --------------------------------------------------------------------------------------------------

EXTRA = {
    "vllm-10517-llama31-8b-rtx3090-v0-29k": dict(
        engine="vllm",
        model_loading_bytes=("gib", 14.9888),
        available_kv_cache_bytes=("gib", 2.89),
        total_gpu_memory_bytes=("gib", 23.58),
        non_torch_bytes=("gib", 0.35),
        num_gpu_blocks=1478,
        max_concurrency=0.82,
        max_concurrency_tokens=29000,
    ),
    "vllm-pr13596-v1-old-block-format": dict(
        engine="vllm",
        num_gpu_blocks=127626,
        max_concurrency=997.08,
        max_concurrency_tokens=2048,
        gpu_kv_cache_tokens=None,
    ),
    "vllm-pr13596-v1-token-format": dict(
        engine="vllm",
        gpu_kv_cache_tokens=2042016,
        max_concurrency=997.08,
        max_concurrency_tokens=2048,
        num_gpu_blocks=None,
    ),
    "vllm-39734-gemma4-31b": dict(
        engine="vllm", gpu_kv_cache_tokens=37392, max_concurrency=1.53, max_concurrency_tokens=262144
    ),
    "sglang-pr14071-dev-multirank-mla": dict(
        engine="sglang",
        kv_tokens=60000,
        kv_bytes=("gib", 0.13),
        free_after_pool_bytes=("gib", 39.83),
        max_total_num_tokens=None,
        context_len=None,
    ),  # 'profiled_max_total_num_tokens=' is not the scheduler line
    "vllm-21348-qwen3-235b-fp8-4xh100-tp4": dict(
        engine="vllm",
        available_kv_cache_bytes=("gib", 8.11),
        gpu_kv_cache_tokens=178880,
        model="/path/to/Qwen3-235B-A22B-FP8",
    ),
    "sglang-21348-qwen3-235b-fp8-4xh100-tp4": dict(
        engine="sglang",
        kv_tokens=367404,
        k_bytes=("gib", 8.23),
        v_bytes=("gib", 8.23),
        model="/path/to/Qwen3-235B-A22B-FP8",
    ),
    "sglang-club3090-1261-2x5090-nvfp4-mtp": dict(
        # first print of each rank is the target pool (3.46 GB); the draft pool (1.08 GB) follows it
        engine="sglang",
        kv_tokens=454112,
        k_bytes=("gib", 3.46),
        v_bytes=("gib", 3.46),
        free_after_pool_bytes=("gib", 7.63),
    ),  # min(TP0 8.40, TP1 7.63)
    "vllm-25350-fp8kv-100k": dict(
        engine="vllm",
        available_kv_cache_bytes=("gib", 10.55),
        gpu_kv_cache_tokens=230528,
        max_concurrency=2.31,
        max_concurrency_tokens=100000,
    ),
    "vllm-25350-fp8kv-221k-error": dict(engine="vllm", available_kv_cache_bytes=("gib", 5.59)),
    "vllm-xinference-4926-qwen3vl-error": dict(engine="vllm", available_kv_cache_bytes=("gib", 6.94)),
    "sglang-29575-scheduler-line-2026": dict(
        engine="sglang", max_total_num_tokens=2086558, max_running_requests=33, context_len=256000
    ),
    "vllm-6746-llama31-405b-fp8-8xh100-v0-workers": dict(engine="vllm", model_loading_bytes=("gib", 57.7520)),
    "vllm-intelarc-4-kv-cache-memory-bytes": dict(engine="vllm", available_kv_cache_bytes=("gib", 4.25)),
    # session 7 (tests/validation/README.md): the figures these logs print, compared in cold mode only
    "vllm-myoceane-gptoss20b-a100-u065": dict(
        engine="vllm",
        model="openai/gpt-oss-20b",
        model_loading_bytes=("gib", 13.72),
        available_kv_cache_bytes=("gib", 36.56),
        gpu_kv_cache_tokens=None,
    ),
    "vllm-myoceane-gemma4-26b-a4b-a100-eager": dict(
        engine="vllm",
        model="google/gemma-4-26B-A4B",
        model_loading_bytes=("gib", 48.5),
        available_kv_cache_bytes=("gib", 21.5),
    ),
    "vllm-27508-gptoss120b-h100-u095-b1024": dict(
        engine="vllm", model="openai/gpt-oss-120b", available_kv_cache_bytes=("gib", 1.71), model_loading_bytes=None
    ),
    "vllm-awssamples-qwen3coder30b-4xl40s-tp4": dict(
        engine="vllm",
        model="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        available_kv_cache_bytes=("gib", 23.74),
        gpu_kv_cache_tokens=1037152,
        max_concurrency=31.65,
        max_concurrency_tokens=32768,
    ),
    "vllm-aiinfralab-qwen3-4b-2507-5090-128k": dict(
        engine="vllm",
        gpu_kv_cache_tokens=138064,
        max_concurrency=1.05,
        max_concurrency_tokens=131072,
        available_kv_cache_bytes=None,
    ),
    "vllm-blog-qwen3-14b-l40s-0280": dict(
        engine="vllm",
        model="Qwen/Qwen3-14B",
        model_loading_bytes=("gib", 27.52),
        available_kv_cache_bytes=("gib", 11.57),
        gpu_kv_cache_tokens=75824,
        max_concurrency=1.85,
        max_concurrency_tokens=40960,
    ),
    "vllm-modal-qwen35-9b-l40s-fp8kv-0180": dict(
        engine="vllm",
        model="Qwen/Qwen3.5-9B",
        model_loading_bytes=("gib", 17.66),
        available_kv_cache_bytes=("gib", 20.27),
        gpu_kv_cache_tokens=331584,
        max_concurrency=18.23,
        max_concurrency_tokens=65536,
    ),
    "vllm-grpo-qwen25-15b-t4-v0-072": dict(
        engine="vllm",
        engine_version="0.7.2",
        model="Qwen/Qwen2.5-1.5B-Instruct",
        model_loading_bytes=("gib", 2.8875),
        available_kv_cache_bytes=("gib", 2.36),
        total_gpu_memory_bytes=("gib", 14.56),
        non_torch_bytes=("gib", 0.01),
        num_gpu_blocks=5519,
        max_concurrency=2.69,
        max_concurrency_tokens=32768,
    ),
    "vllm-tokenkaki-qwen3-8b-a100-40gb-0191": dict(
        engine="vllm",
        engine_version="0.19.1",
        model="Qwen/Qwen3-8B",
        model_loading_bytes=("gib", 15.27),
        available_kv_cache_bytes=("gib", 19.36),
        gpu_kv_cache_tokens=140960,
        max_concurrency=3.44,
        max_concurrency_tokens=40960,
    ),
}

# The launch flags the session-7 logs print (a command line or vLLM's non-default args), as kvplan.inputs.logs reads
# them: what scripts/accuracy_report.py plans those cases with besides the README's GPU and release.
EXTRA_FLAGS = {
    "vllm-myoceane-gptoss20b-a100-u065": (
        "non_default_args",
        {"max_model_len": 131072, "gpu_memory_utilization": 0.65},
    ),
    "vllm-myoceane-gemma4-26b-a4b-a100-eager": (
        "cli_args",
        {"max_model_len": 131072, "gpu_memory_utilization": 0.9, "enforce_eager": True},
    ),
    "vllm-27508-gptoss120b-h100-u095-b1024": (
        "cli_args",
        {"gpu_memory_utilization": 0.95, "max_num_batched_tokens": 1024},
    ),
    "vllm-modal-qwen35-9b-l40s-fp8kv-0180": (
        "non_default_args",
        {"kv_cache_dtype": "fp8", "max_model_len": 65536, "enable_prefix_caching": True},
    ),
    "vllm-tokenkaki-qwen3-8b-a100-40gb-0191": (
        "non_default_args",
        {"model": "Qwen/Qwen3-8B", "port": 8001},
    ),
    "vllm-awssamples-qwen3coder30b-4xl40s-tp4": (
        "cli_args",
        {"tensor_parallel_size": 4, "max_model_len": 32768, "gpu_memory_utilization": 0.9},
    ),
}
NEGATIVE = {
    "sglang-pr13023-l40s-truncated-serverargs": "SGLang log",
    "vllm-39734-logo-nondefault": "vLLM log",
}


def test_every_log_file_is_covered_and_has_header():
    names = {p.stem for p in LOGS.glob("*.log")}
    shared = {c["id"] for c in SG_CASES + VL_CASES}
    assert names == shared | set(EXTRA) | set(NEGATIVE) or not shared
    for p in LOGS.glob("*.log"):
        head = p.read_text(encoding="utf-8").splitlines()[:3]
        assert head[0].startswith("# source: ") and head[1].startswith("# engine: ") and head[2].startswith("# gpu: ")


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_extra_public_logs(name):
    facts = read_log_file(LOGS / f"{name}.log")
    for attr, want in EXTRA[name].items():
        got = getattr(facts, attr)
        if isinstance(want, tuple):
            assert got is not None and abs(got - want[1] * GIB) <= HALF_CENT, (attr, got, want)
        elif isinstance(want, float):
            assert got is not None and abs(got - want) < 1e-9, (attr, got, want)
        else:
            assert got == want, (attr, got, want)


@pytest.mark.parametrize("name", sorted(EXTRA_FLAGS))
def test_extra_public_logs_launch_flags(name):
    facts = read_log_file(LOGS / f"{name}.log")
    where, want = EXTRA_FLAGS[name]
    got = facts.extra.get(where) or {}
    assert {k: got.get(k) for k in want} == want, (where, got)


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_truncated_public_logs_without_sizing_lines_raise(name):
    with pytest.raises(InputError) as ei:
        read_log_file(LOGS / f"{name}.log")
    assert ei.value.field == "LOG"
    assert NEGATIVE[name] in str(ei.value)


def test_multirank_disagreement_warns():
    facts = read_log_file(LOGS / "sglang-club3090-1261-2x5090-nvfp4-mtp.log")
    assert any("ranks disagree" in w and "min taken" in w for w in facts.warnings)
    assert any("first print of each rank" in w for w in facts.warnings)


# --------------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------------

SG_OLD = """\
[2025-03-08 12:29:04] server_args=ServerArgs(model_path='Qwen/QwQ-32B', tokenizer_path='Qwen/QwQ-32B', dtype='auto', kv_cache_dtype='auto', mem_fraction_static=0.85, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=2048, tp_size=4, pp_size=1, dp_size=1, ep_size=1, enable_dp_attention=False, json_model_override_args='{"rope_scaling": {"type": "yarn", "factor": 4.0}}', cuda_graph_bs=[1, 2, 4, 8], lora_paths=None, speculative_algorithm=None, disable_radix_cache=False, load_format=<LoadFormat.AUTO: 'auto'>, weird=SomeObj(a=1, b=(2, 3)), note='it\\'s, (tricky)')
[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB
[2025-03-08 12:29:13 TP1] Load weight begin. avail mem=21.60 GB
[2025-03-08 12:29:21 TP1] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=6.07 GB, mem usage=15.53 GB.
[2025-03-08 12:29:21 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=6.09 GB, mem usage=15.54 GB.
[2025-03-08 12:29:21 TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB
[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=2.09 GB
[2025-03-08 12:29:28 TP0] Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.
[2025-03-08 12:29:29 TP0] max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072
"""


def test_sglang_serverargs_repr_values():
    f = parse_log(SG_OLD)
    sa = f.server_args
    assert sa["mem_fraction_static"] == 0.85 and sa["tp_size"] == 4 and sa["enable_dp_attention"] is False
    assert sa["max_running_requests"] is None and sa["cuda_graph_bs"] == [1, 2, 4, 8]
    assert sa["json_model_override_args"] == '{"rope_scaling": {"type": "yarn", "factor": 4.0}}'
    assert sa["load_format"] == "auto"
    assert sa["weird"] == "SomeObj(a=1, b=(2, 3))"  # unknown construct kept as text
    assert sa["note"] == "it's, (tricky)"
    assert f.model == "Qwen/QwQ-32B"


def test_sglang_min_over_ranks_and_usage_max():
    f = parse_log(SG_OLD)
    assert f.free_before_weights_bytes == round(21.60 * GIB)
    assert f.free_after_weights_bytes == round(6.07 * GIB)
    assert f.weight_load_bytes == round(15.54 * GIB)
    assert f.kv_tokens == 46611 and f.k_bytes == round(1.42 * GIB) and f.kv_bytes == 2 * round(1.42 * GIB)
    assert f.cuda_graph_bytes == round(0.93 * GIB)
    assert (f.max_total_num_tokens, f.max_running_requests, f.context_len) == (46611, 2049, 131072)
    assert any("ranks disagree on free_before_weights" in w for w in f.warnings)
    assert missing_for_measured(f) == []


def test_sglang_new_dict_server_args_and_2026_lines():
    text = (
        "[2026-07-01 10:00:00] server_args={'model_path': 'deepseek-ai/DeepSeek-V4-Flash', 'tp_size': 8, "
        "'ep_size': 8, 'mem_fraction_static': 0.9, 'kv_cache_dtype': 'fp8_e4m3', 'page_size': 256, "
        "'speculative_algorithm': 'EAGLE', 'speculative_num_steps': 3, 'enable_dp_attention': False}\n"
        "[2026-07-01 10:00:10 TP0] Load weight end. elapsed=19.09 s, type=DeepseekV4ForCausalLM, quant=fp8, "
        "avail mem=80.00 GB, mem usage=60.00 GB.\n"
        "[2026-07-01 10:00:11 TP0] DSV4 memory calculation: unified=True, unified_fp8=False, dspark_draft_bf16=False, "
        "bytes_per_full_token=1234.50, available_bytes=50.00 GB, c128_state_fixed=0.10 GB, c2_state_fixed=0.00 GB, "
        "swa_fixed=2.00 GB, swa_ring_fixed=0.50 GB, c4_state_fixed=0.20 GB, full_token=40000000\n"
        "[2026-07-01 10:00:11 TP0] DSV4 pool sizes: full=40000000, swa=100000, c4=10000000, c128=312500, "
        "c4_state=512, c128_state=512\n"
        "[2026-07-01 10:00:12 TP0] Memory pool end. avail mem=20.00 GB\n"
        "[2026-07-01 10:00:30 TP0] Capture decode CUDA graph end. bs=["
        + ", ".join(str(i) for i in range(1, 513))
        + "], elapsed=10.00 s, mem usage=1.25 GB, avail mem=18.75 GB.\n"
        "[2026-07-01 10:00:31 TP0] max_total_num_tokens=40000000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=256, context_len=1048576, available_gpu_mem=18.70 GB\n"
    )
    f = parse_log(text)
    assert f.server_args["tp_size"] == 8 and f.server_args["speculative_algorithm"] == "EAGLE"
    assert f.model == "deepseek-ai/DeepSeek-V4-Flash"
    assert f.dsv4["available_bytes"] == round(50.0 * GIB) and f.dsv4["full_token"] == 40000000
    assert f.dsv4["bytes_per_full_token"] == 1234.5 and f.dsv4["unified"] is True and f.dsv4["c4"] == 10000000
    assert f.cuda_graph_bytes == round(1.25 * GIB)  # found past a 2,000-character bs list
    assert f.extra["available_gpu_mem_at_ready_bytes"] == round(18.70 * GIB)
    assert f.context_len == 1048576 and f.max_running_requests == 256
    # no 'Load weight begin': free memory = after + usage is acceptable, so nothing is missing
    assert missing_for_measured(f) == []


def test_sglang_wrapped_serverargs_and_labelled_pools():
    text = (
        "[2025-09-01 10:00:00] server_args=ServerArgs(model_path='openai/gpt-oss-120b', tp_size=2,\n"
        "mem_fraction_static=0.8, swa_full_tokens_ratio=0.8,\n"
        "page_size=16)\n"
        "[2025-09-01 10:00:01 TP0] Use sliding window memory pool. full_layer_tokens=1000000, swa_layer_tokens=800000\n"
        "[2025-09-01 10:00:01 TP0] Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000000, K size: 8.58 GB, V size: 8.58 GB\n"
        "[2025-09-01 10:00:01 TP0] SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 800000, K size: 6.87 GB, V size: 6.87 GB\n"
        "[2025-09-01 10:00:01 TP0] Mamba Cache is allocated. max_mamba_cache_size: 512, conv_state size: 0.10GB, ssm_state size: 2.00GB \n"
    )
    f = parse_log(text)
    assert f.server_args == {
        "model_path": "openai/gpt-oss-120b",
        "tp_size": 2,
        "mem_fraction_static": 0.8,
        "swa_full_tokens_ratio": 0.8,
        "page_size": 16,
    }
    assert f.kv_tokens == 1000000 and f.k_bytes == round(8.58 * GIB)
    assert f.extra["swa_kv_tokens"] == 800000 and f.extra["swa_k_bytes"] == round(6.87 * GIB)
    assert f.extra["full_layer_tokens"] == 1000000 and f.extra["swa_layer_tokens"] == 800000
    assert f.extra["mamba_cache_size"] == 512 and f.extra["mamba_ssm_state_bytes"] == round(2.0 * GIB)
    assert f.extra["kv_cache_torch_dtype"] == "torch.bfloat16"


def test_docker_prefixes_ansi_crlf_and_json_timestamps():
    base = SG_OLD.splitlines()
    decorated = []
    for i, ln in enumerate(base):
        pre = ["sglang-1  | ", "2025-03-08T12:29:21.123456789Z ", "\x1b[36mserver\x1b[0m | "][i % 3]
        decorated.append(pre + ln.replace("TP0]", "TP0]\x1b[0m"))
    f = parse_log("\r\n".join(decorated))
    g = parse_log(SG_OLD)
    assert (f.kv_tokens, f.free_before_weights_bytes, f.max_total_num_tokens) == (
        g.kv_tokens,
        g.free_before_weights_bytes,
        g.max_total_num_tokens,
    )
    assert f.server_args == g.server_args


def test_bare_sgr_codes_and_carriage_returns():
    text = (
        "\x1b[1;36m(EngineCore_DP0 pid=7)\x1b[0;0m INFO [gpu_worker.py:440] Available KV cache memory: 34.32 GiB\r"
        "[1;36m(EngineCore_DP0 pid=7)[0;0m INFO [kv_cache_utils.py:1708] GPU KV cache size: 5,769,184 tokens\r"
        "(EngineCore_DP0 pid=7) INFO [kv_cache_utils.py:1709] Maximum concurrency for 262,144 tokens per request: 22.01x"
    )
    f = parse_log(text)
    assert f.available_kv_cache_bytes == round(34.32 * GIB)
    assert f.gpu_kv_cache_tokens == 5769184 and f.max_concurrency == 22.01 and f.max_concurrency_tokens == 262144


VL_033 = """\
(APIServer pid=1) INFO 10-01 10:00:00 [utils.py:299]  \x1b[1m▄▄\x1b[0m ▄█ █     █     █ ▀▄▀ █  version \x1b[1m0.33.0\x1b[0m
(APIServer pid=1) INFO 10-01 10:00:00 [startup.py:96] non-default args: {'model_tag': 'Qwen/Qwen3-32B', 'model': 'Qwen/Qwen3-32B', 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.9, 'max_model_len': 32768, 'kv_cache_dtype': 'fp8', 'compilation_config': {'cudagraph_mode': 'FULL_AND_PIECEWISE'}}
(EngineCore pid=2) INFO 10-01 10:00:01 [core.py:140] Initializing a V1 LLM engine (v0.33.0) with config: model='Qwen/Qwen3-32B', speculative_config=None, tokenizer='Qwen/Qwen3-32B', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=fp8, enable_prefix_caching=True, compilation_config={"level":3, "cudagraph_capture_sizes":[1,2,4]}
(Worker_TP0 pid=3) INFO 10-01 10:00:30 [model_runner.py:429] Model loading took 30.59 GiB memory and 20.000000 seconds
(Worker_TP1 pid=4) INFO 10-01 10:00:30 [model_runner.py:429] Model loading took 30.61 GiB memory and 20.000000 seconds
(Worker_TP0 pid=3) INFO 10-01 10:00:50 [gpu_worker.py:773] Available KV cache memory: 34.49 GiB
(Worker_TP1 pid=4) INFO 10-01 10:00:50 [gpu_worker.py:773] Available KV cache memory: 34.40 GiB
(EngineCore pid=2) INFO 10-01 10:00:51 [kv_cache_utils.py:1148] GPU KV cache size: 282,528 tokens, Maximum concurrency for 32,768 tokens per request: 8.62x
(Worker_TP0 pid=3) INFO 10-01 10:01:20 [gpu_worker.py:1045] Free memory on device (78.60/79.18 GiB) on startup. Desired GPU memory utilization is (0.9, 71.26 GiB). Actual usage is 31.2 GiB for consumed memory (weights + non-torch), 5.64 GiB for peak activation, and 0.4 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=36000000000` (33.53 GiB) to fit into requested memory, or `--kv-cache-memory=40000000000` (37.25 GiB) to fully utilize gpu memory. Current kv cache memory in use is 34.49 GiB.
"""


def test_vllm_033_lines_config_and_version():
    f = parse_log(VL_033)
    assert f.engine == "vllm" and f.engine_version == "0.33.0"
    assert f.model == "Qwen/Qwen3-32B"
    assert f.server_args["tensor_parallel_size"] == 2 and f.server_args["kv_cache_dtype"] == "fp8"
    assert f.server_args["compilation_config"] == {"cudagraph_mode": "FULL_AND_PIECEWISE"}  # non-default wins
    assert f.extra["engine_config"]["max_seq_len"] == 32768
    assert f.extra["engine_config"]["compilation_config"] == {"level": 3, "cudagraph_capture_sizes": [1, 2, 4]}
    assert f.available_kv_cache_bytes == round(34.40 * GIB)  # min over the two workers
    assert f.model_loading_bytes == round(30.61 * GIB)  # usage: max over workers
    assert (f.gpu_kv_cache_tokens, f.max_concurrency_tokens, f.max_concurrency) == (282528, 32768, 8.62)
    assert f.total_gpu_memory_bytes == round(79.18 * GIB) and f.peak_activation_bytes == round(5.64 * GIB)
    assert f.cuda_graph_bytes == round(0.4 * GIB)
    assert f.extra["consumed_memory_bytes"] == round(31.2 * GIB)
    assert missing_for_measured(f) == []


def test_vllm_07_profiling_block():
    text = """INFO 03-01 10:00:00 worker.py:267] Memory profiling takes 5.96 seconds
INFO 03-01 10:00:00 worker.py:267] the current vLLM instance can use total_gpu_memory (79.18GiB) x gpu_memory_utilization (0.90) = 71.26GiB
INFO 03-01 10:00:00 worker.py:267] model weights take 14.99GiB; non_torch_memory takes 0.13GiB; PyTorch activation peak memory takes 4.76GiB; the rest of the memory reserved for KV Cache is 51.38GiB.
INFO 03-01 10:00:01 executor_base.py:111] # cuda blocks: 26306, # CPU blocks: 2048
INFO 03-01 10:00:01 executor_base.py:116] Maximum concurrency for 131072 tokens per request: 3.21x
"""
    f = parse_log(text)
    assert f.total_gpu_memory_bytes == round(79.18 * GIB) and f.available_kv_cache_bytes == round(51.38 * GIB)
    assert f.model_loading_bytes == round(14.99 * GIB) and f.non_torch_bytes == round(0.13 * GIB)
    assert f.peak_activation_bytes == round(4.76 * GIB) and f.num_gpu_blocks == 26306
    assert f.extra["gpu_memory_utilization"] == 0.9 and f.extra["num_cpu_blocks"] == 2048


def test_versions_gpu_and_cli():
    text = (
        "sglang: 0.4.6.post1\n"
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1234)\n"
        "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n"
        "| N/A   30C    P0             70W /  700W |       1MiB /  81559MiB |      0%      Default |\n"
        "$ python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \\\n"
        "    --tp 8 --mem-fraction-static 0.85 --enable-dp-attention\n"
        "[2025-05-01 10:00:00 TP0] KV Cache is allocated. #tokens: 100000, KV size: 6.55 GB\n"
    )
    f = parse_log(text)
    assert f.engine_version == "0.4.6.post1" and f.gpu_name == "NVIDIA H100 80GB HBM3"
    assert f.gpu_total_bytes == 81559 * 2**20
    assert f.extra["cli_args"]["tp"] == 8 and f.extra["cli_args"]["mem_fraction_static"] == 0.85
    assert f.extra["cli_args"]["enable_dp_attention"] is True
    assert f.model == "deepseek-ai/DeepSeek-V3"
    g = parse_log(
        "Using default MoE config. Config file not found at ['/x/E=128,N=384,device_name=NVIDIA_H200.json']\n"
        "INFO 07-01 [gpu_worker.py] Available KV cache memory: 44.59 GiB\n"
    )
    assert g.gpu_name == "NVIDIA H200"


def test_post_capture_and_truncated_line():
    text = (
        "[TP0] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, K size: 40.00 GB, V size: 40.00 GB\n"
        "[TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 500000, KV size: 44.44 GB, avail mem=3.00 GB\n"
        "[TP0] Load weight end. type=LlamaForCausalLM, avail mem=63.7"
    )
    f = parse_log(text)
    assert f.kv_tokens == 500000 and f.kv_bytes == round(44.44 * GIB)
    assert f.extra["va_upper_bound_kv_tokens"] == 900000
    assert f.free_after_weights_bytes is None  # '63.7' without its unit: truncated, not trusted
    assert any("line truncated" in w for w in f.warnings)


def test_missing_for_measured_lists_what_is_absent():
    f = parse_log("[TP0] KV Cache is allocated. #tokens: 10000, KV size: 0.65 GB")
    assert missing_for_measured(f) == [
        "free_before_weights_bytes",
        "free_after_weights_bytes",
        "server_args.mem_fraction_static",
        "model",
    ]
    g = parse_log("GPU KV cache size: 1,000 tokens")
    assert missing_for_measured(g) == [
        "available_kv_cache_bytes",
        "total_gpu_memory_bytes",
        "model_loading_bytes",
        "peak_activation_bytes",
        "non_torch_bytes",
        "model",
    ]


@pytest.mark.parametrize(
    "text,needle",
    [
        ("", "not an SGLang or vLLM"),
        ("hello world\nthis is nginx\n", "not an SGLang or vLLM"),
        (
            "[2025-01-01] server_args=ServerArgs(model_path='x', tp_size=1)\n[TP0] Init torch distributed begin.\n",
            "SGLang log",
        ),
        ("INFO vLLM API server version 0.10.1\n", "vLLM log"),
    ],
)
def test_not_a_sizing_log_raises_input_error(text, needle):
    with pytest.raises(InputError) as ei:
        parse_log(text)
    assert ei.value.field == "LOG" and needle in str(ei.value)


def test_read_log_file_errors(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_log_file(tmp_path / "nope.log")
    with pytest.raises(InputError, match="not a regular file"):
        read_log_file(tmp_path)
    big = tmp_path / "big.log"
    big.write_text("x" * 2000)
    with pytest.raises(InputError, match="limit"):
        read_log_file(big, max_bytes=1000)
    binf = tmp_path / "a.bin"
    binf.write_bytes(bytes(range(256)) * 100)
    with pytest.raises(InputError, match="binary"):
        read_log_file(binf)
    u16 = tmp_path / "u16.log"
    u16.write_bytes("Available KV cache memory: 5.01 GiB\r\n".encode("utf-16"))
    assert read_log_file(u16).available_kv_cache_bytes == round(5.01 * GIB)
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\xffX" + b"Available KV cache memory: 5.01 GiB\n" + b"\xc3")
    assert read_log_file(bad).available_kv_cache_bytes == round(5.01 * GIB)


# --------------------------------------------------------------------------------------------------
# Robustness: only InputError may escape, and the work of a parse is linear in its input
# --------------------------------------------------------------------------------------------------

REAL_LOGS = [p.read_text(encoding="utf-8") for p in sorted(LOGS.glob("*.log"))] + [SG_OLD, VL_033]


def FUZZ(n: int) -> settings:
    return settings(
        max_examples=n, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )


class _Work:
    """What one parse reads, counted instead of timed (CI runs on a loaded 2-core machine): every reader cleans
    the text it reads with ``clean_line`` and applies its regexes to that text or to bounded windows of it, so
    the characters handed to ``clean_line`` measure the per-line work; ``candidates`` is the number of lines the
    marker search (str.find, linear) handed to the readers."""

    MODULES = ("scan", "sglang", "vllm", "common")

    def __init__(self) -> None:
        self.chars = 0
        self.candidates = 0
        self._patches: list = []

    def __enter__(self) -> _Work:
        import importlib
        from unittest import mock

        from kvplan.inputs.logs import text as text_mod

        def clean(line: str) -> str:
            self.chars += len(line)
            return text_mod.clean_line(line)

        def cands(text: str):
            out = text_mod.candidate_lines(text)
            self.candidates += len(out[0])
            return out

        for name in self.MODULES:
            mod = importlib.import_module(f"kvplan.inputs.logs.{name}")
            self._patches.append(mock.patch.object(mod, "clean_line", clean))
        self._patches.append(
            mock.patch.object(importlib.import_module("kvplan.inputs.logs.scan"), "candidate_lines", cands)
        )
        for p in self._patches:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self._patches):
            p.stop()


def _linear(n: int) -> int:
    """The most characters a parse of an n-character text may hand to the readers: each line is read once by its
    reader, a wrapped repr or command once more with its continuation lines, plus slack for tiny inputs."""
    return 4 * n + 16 * 1024


def _safe_parse(text: str) -> None:
    with _Work() as w:
        try:
            f = parse_log(text)
            assert f.engine in ("sglang", "vllm")
        except InputError:
            pass
    assert w.chars <= _linear(len(text)), (w.chars, len(text))


@FUZZ(800)
@given(st.text(max_size=3000))
def test_fuzz_random_text(text):
    _safe_parse(text)


_MARKER_BITS = [
    "Load weight end. avail mem=",
    "KV Cache is allocated. #tokens: ",
    "server_args=ServerArgs(",
    "server_args={",
    "max_total_num_tokens=",
    "Available KV cache memory: ",
    "GPU KV cache size: ",
    "Maximum concurrency for ",
    " GB",
    " GiB",
    "(",
    ")",
    "'",
    '"',
    "{",
    "[",
    ",",
    "=",
    "\\",
    "\n",
    "\r",
    "\x1b[",
    "1,234",
    "9" * 40,
    "-1.5",
    "nan",
    "DSV4 memory calculation: a=",
    "# GPU blocks: ",
]


@FUZZ(900)
@given(
    st.integers(0, len(REAL_LOGS) - 1),
    st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.integers(0, 400), st.integers(0, len(_MARKER_BITS) - 1)),
        min_size=1,
        max_size=8,
    ),
)
def test_fuzz_mutated_real_logs(idx, edits):
    text = REAL_LOGS[idx]
    for op, pos, n, bit in edits:
        pos = pos % (len(text) + 1)
        if op == 0:
            text = text[:pos] + text[pos + n :]  # delete
        elif op == 1:
            text = text[:pos] + _MARKER_BITS[bit] + text[pos:]  # insert a marker fragment
        elif op == 2:
            text = text[:pos]  # truncate
        elif op == 3:
            text = text[:pos] + text[pos : pos + n] * 3 + text[pos + n :]  # duplicate
        else:
            text = text[:pos] + "".join(chr(0x20 + (pos * 7 + i) % 0x2FF) for i in range(n % 50)) + text[pos:]
    _safe_parse(text)


@FUZZ(400)
@given(st.binary(max_size=4000))
def test_fuzz_binary_junk(data):
    _safe_parse(data.decode("utf-8", errors="replace"))
    _safe_parse(data.decode("latin-1"))


def test_fuzz_binary_files(tmp_path):
    rnd = random.Random(1234)
    for i in range(100):
        blob = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 5000)))
        if i % 3 == 0:
            blob = REAL_LOGS[i % len(REAL_LOGS)].encode()[: rnd.randint(0, 3000)] + blob
        p = tmp_path / f"j{i}.log"
        p.write_bytes(blob)
        with _Work() as w:
            try:
                read_log_file(p)
            except InputError:
                pass
        assert w.chars <= _linear(len(blob)), (w.chars, len(blob))


@pytest.mark.slow
def test_100mb_synthetic_log(tmp_path):
    spam = (
        "[2025-03-08 12:30:00 TP0] Decode batch. #running-req: 12, #token: 40000, token usage: 0.86, "
        "cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0, timestamp: 2025-03-08T12:30:00\n"
    )
    block = spam * 10_000
    p = tmp_path / "big.log"
    with p.open("w") as fh:
        fh.write(SG_OLD)
        while fh.tell() < 100 * 2**20:
            fh.write(block)
    with _Work() as w:
        f = read_log_file(p)
    assert f.kv_tokens == 46611 and f.max_total_num_tokens == 46611
    # the 100 MB of request traffic hold no marker: none of it reaches a line reader (the marker search is str.find)
    with _Work() as head:
        parse_log(SG_OLD)
    assert w.candidates == head.candidates and w.chars == head.chars <= _linear(len(SG_OLD))


@pytest.mark.slow
def test_1mb_single_line():
    line = "server_args=ServerArgs(" + "a=[" * 2000 + "1, 'x', " * 120_000 + "Load weight end. avail mem=" * 20_000
    assert len(line) > 10**6
    with _Work() as w:
        try:
            parse_log(line)
        except InputError:
            pass
    assert w.candidates == 1 and w.chars <= _linear(len(line))
    junk = "x" * 2**20 + " KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB"
    with _Work() as w:
        f = parse_log(junk)
    assert f.kv_tokens == 5
    # one candidate line; only MAX_LINE characters around its marker are read, not the 1 MiB before it
    assert w.candidates == 1 and w.chars <= 2 * 4096


def test_a_garbled_300_digit_figure_does_not_crash_the_reader():
    """float("9" * 400) is infinite; the figure is clamped to kvplan.units.MAX_BYTES instead of an OverflowError
    (found by tests/test_fuzz.py's mutated logs)."""
    from kvplan.units import MAX_BYTES

    f = parse_log(
        "Load weight begin. avail mem=" + "9" * 400 + " GB\n"
        "Load weight end. type=LlamaForCausalLM, avail mem=63.72 GB, mem usage=15.09 GB\n"
    )
    assert f.free_before_weights_bytes == MAX_BYTES and f.free_after_weights_bytes == round(63.72 * GIB)
    v = parse_log(
        "Free memory on device (70.0/79.0 GiB) on startup. Current kv cache memory in use is "
        + "9" * 400
        + " bytes\nAvailable KV cache memory: 1.00 GiB\n"
    )
    assert v.extra["current_kv_cache_bytes"] == MAX_BYTES
