"""Write docs/accuracy.md: kvplan against the public startup logs in tests/validation/logs (and, in a section of
their own, the three issue-13 family logs in tests/validation/logs_issue13).

Per log: the measured-mode error (kvplan.planning.calibrate with the log's own memory figures) and the cold-mode
error (nothing measured: kvplan.engines.runtime's free memory, kvplan.weights.estimate' weights, vLLM's activation /
graph terms), the summary (median, p90, max), the runtime-overhead model against every logged free-at-start figure,
and the weight estimate against every logged weight load.

Inputs the log excerpt does not print (parallelism, memory knob, engine version, GPU) come from the shared
validation case of the same id (tests/data/shared/validation/*_dev.jsonl, the rules of tests/validation/fixtures.py)
or, for the additional logs, from the table ADDITIONAL below, each with its reason.

    cd /work/main && . /tmp/venv/bin/activate && python scripts/accuracy_report.py [--out docs/accuracy.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvplan.errors import InputError  # noqa: E402

LOGS = ROOT / "tests" / "validation" / "logs"
LOGS13 = ROOT / "tests" / "validation" / "logs_issue13"
SHARED = ROOT / "tests" / "data" / "shared"
GiB = 2**30
TOL = 0.005

DTYPE_WORDS = {
    "auto",
    "bf16",
    "bfloat16",
    "fp16",
    "float16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_ds_mla",
    "mxfp8",
    "nvfp4",
    "fp4",
}

# Per-case input corrections, each with its reason (same as tests/test_validation_sglang.py / test_vllm.py).
CASE_FIX: dict[str, tuple[dict, str]] = {
    "glm5-nvfp4-8x-rtxpro6000-tp8": (
        {"kv_cache_dtype": "bf16", "model": str(ROOT / "tests" / "validation" / "configs" / "glm5-nvfp4.config.json")},
        "patched build forces a bf16 DSA cache on SM120 (author's log line); config: zai-org/GLM-5 with "
        "nvidia/GLM-5.2-NVFP4's NVFP4 quantization_config (tests/validation/configs/README.md)",
    ),
    "glm52-nvfp4-4xb200-tp4-ep-fp8kv": (
        {"gpu": "gb200"},
        "log total 184.31 GiB = GB200 (189,471 MiB); Blackwell (SM10) selects the "
        "fp8 sparse-MLA cache layout, as tests/test_vllm.py passes sm_major=10",
    ),
    "qwen3-30b-a3b-mi355x-pr18263": (
        {"gpu": "mi355x"},
        "AMD AITER PR; 287.18 GiB free at TP1 is only possible on a 288 GB MI355X-class part",
    ),
    "nemotron3-nano-30b-a3b-bf16-dgxspark": (
        {"engine_version": "0.21.0"},
        "author says 0.20.2, the log prints the >=0.21 group-aware token line",
    ),
    "deepseek-v2-lite-h100-v0-premla": (
        {"model": "deepseek-ai/DeepSeek-V2-Lite"},
        "planned with the DeepSeek-V2-Lite preset: the -Chat checkpoint has the base model's architecture and sizes "
        "(the preset names only quantization suffixes as variants)",
    ),
    "kimi-k2-thinking-8xh200-tp8": (
        {"model": str(ROOT / "tests" / "validation" / "configs" / "kimi-k2-thinking.config.json")},
        "config: Kimi-K2.5's text_config (same text model and INT4 scheme: routed experts 4 bit, attention, shared "
        "experts and dense MLPs 16 bit; tests/validation/configs/README.md)",
    ),
    "gptoss120b-4xa100-tp4-u080": (
        {"interconnect": "network", "vllm_sampler": "flashinfer"},
        "4 nodes x 1 GPU via Ray (the log's file name: -diff-nodes): TP over the network, so vLLM's custom all-reduce "
        "is off (custom_all_reduce.py: ranks on one node only); the source log prints 'Using FlashInfer for top-p & "
        "top-k sampling'",
    ),
    "qwen2-7b-a100-u025": (
        {"vllm_sampler": "flashinfer"},
        "the source log prints 'Using FlashInfer for top-p & top-k sampling' (flashinfer installed)",
    ),
}

# The additional logs: inputs the excerpt lacks, from the issue text (see tests/validation/README.md).
ADDITIONAL: dict[str, tuple[dict, str]] = {
    "vllm-21348-qwen3-235b-fp8-4xh100-tp4": (
        {"model": "Qwen/Qwen3-235B-A22B-FP8", "tp": 4, "engine_version": "0.10.0", "gpu": "h100-sxm"},
        "issue #21348: 4x H100, TP4, vLLM of July 2025 (0.10.0 assumed); block 16 default",
    ),
    "sglang-21348-qwen3-235b-fp8-4xh100-tp4": (
        {"model": "Qwen/Qwen3-235B-A22B-FP8", "tp": 4, "mem_fraction_static": 0.93, "gpu": "h100-sxm"},
        "issue #21348: TP4, mem_fraction_static 0.93; the excerpt has no free-memory lines",
    ),
    "vllm-10517-llama31-8b-rtx3090-v0-29k": (
        {
            "model": "meta-llama/Llama-3.1-8B",
            "tp": 1,
            "engine_version": "0.6.4",
            "context_length": 29000,
            "gpu_memory_utilization": 0.9,
            "gpu": "rtx-3090",
        },
        "issue #10517: RTX 3090, V0 (~0.6.4), --max-model-len 29000",
    ),
    "vllm-6746-llama31-405b-fp8-8xh100-v0-workers": (
        {"model": "meta-llama/Llama-3.1-405B-Instruct-FP8", "tp": 8, "engine_version": "0.5.3", "gpu": "h100-sxm"},
        "issue #6746: weight load only; no pool line (weights row only)",
    ),
    # Session 7 (tests/validation/README.md lists every candidate looked at). "A100" with figures that need 80 GB and
    # no form factor named is planned on the A100-SXM4-80GB preset (its CUDA total is the measured one), "H100"
    # on the H100 SXM preset, as for vllm-21348 above; the README gives the other preset's cold error too.
    "vllm-myoceane-gptoss20b-a100-u065": (
        {"model": "openai/gpt-oss-20b", "tp": 1, "engine_version": "0.19.0", "gpu": "a100-sxm-80gb"},
        "myoceane.fr post: one A100 (80 GB from the figures), 0.19.0 (banner), util 0.65, L 131,072 (the log's args)",
    ),
    "vllm-myoceane-gemma4-26b-a4b-a100-eager": (
        {"model": "google/gemma-4-26B-A4B", "tp": 1, "engine_version": "0.19.0", "gpu": "a100-sxm-80gb"},
        "myoceane.fr post: one A100 (80 GB from the figures), util 0.9, L 131,072, eager (the command); 0.19.0 is the "
        "release the same post's GPT-OSS run prints a day later (this run's stored copy ends inside its banner)",
    ),
    "vllm-27508-gptoss120b-h100-u095-b1024": (
        {"model": "openai/gpt-oss-120b", "tp": 1, "engine_version": "0.11.0", "gpu": "h100-sxm"},
        "vllm#27508: one H100, util 0.95, B 1,024, L default (131,072); 0.11.0 from the log's line numbers "
        "(gpu_worker.py:298, core.py:708/699/498 are 0.11.0's)",
    ),
    "vllm-awssamples-qwen3coder30b-4xl40s-tp4": (
        {
            "model": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
            "tp": 4,
            "engine_version": "0.24.0",
            "gpu": "l40s",
            "vllm_sampler": "pytorch",
        },
        "aws-samples README: 4x L40S (g6e.12xlarge), TP4, 0.24.0, util 0.90, L 32,768 (the command); the serve script "
        "sets VLLM_USE_FLASHINFER_SAMPLER=0 (PyTorch sampler)",
    ),
    "vllm-aiinfralab-qwen3-4b-2507-5090-128k": (
        {
            "model": "Qwen/Qwen3-4B-Instruct-2507",
            "tp": 1,
            "engine_version": "0.29.0",
            "gpu": "rtx-5090",
            "context_length": 131072,
        },
        "ai-infra-lab: one RTX 5090, 0.29.0 (build log), --max-model-len 131072, no memory flag (release default)",
    ),
    "vllm-blog-qwen3-14b-l40s-0280": (
        {"model": "Qwen/Qwen3-14B", "tp": 1, "engine_version": "0.28.0", "gpu": "l40s"},
        "blog post (jinwoong, 2026-09-06): one L40S (g6e.2xlarge), 0.28.0, `vllm serve Qwen/Qwen3-14B` with release "
        "defaults (L = the model's 40,960, as the concurrency line prints)",
    ),
    "vllm-modal-qwen35-9b-l40s-fp8kv-0180": (
        {"model": "Qwen/Qwen3.5-9B", "tp": 1, "engine_version": "0.18.0", "gpu": "l40s"},
        "Modal research brief: one L40S (the brief's text); 0.18.0 as its shortened engine-init line prints it (the "
        "log reader takes it from that line too); KV dtype, L and prefix caching from the log's non-default args "
        "(fp8, 65,536, on)",
    ),
    "vllm-grpo-qwen25-15b-t4-v0-072": (
        {
            "model": "Qwen/Qwen2.5-1.5B-Instruct",
            "tp": 1,
            "engine_version": "0.7.2",
            "context_length": 32768,
            "gpu_memory_utilization": 0.5,
            "gpu": "t4",
        },
        "Unsloth GRPO run on Colab: Tesla T4 (Unsloth's banner), V0 0.7.2, fp16, util 0.50, L 32,768, chunked "
        "prefill off (the log's lines); vLLM starts inside the training process, whose CUDA context predates it",
    ),
    "vllm-tokenkaki-qwen3-8b-a100-40gb-0191": (
        {"model": "Qwen/Qwen3-8B", "tp": 1, "gpu": "a100-sxm-40gb"},
        "tokenkaki blog draft: one A100-SXM4-40GB (the post's nvidia-smi), 0.19.1 from the log, `vllm serve "
        "Qwen/Qwen3-8B` with release defaults",
    ),
}


# The issue-13 family logs (tests/validation/logs_issue13, see its README): reported in a section of their own, not
# in the main summary; each is checked by the tests/test_families_vllm.py test named last.
ISSUE13: dict[str, tuple[dict, str, str]] = {
    "vllm-28228-kimi-linear-2x3090-tp2": (
        {
            "model": str(LOGS13 / "kimi-linear-48b-a3b.config.json"),
            "tp": 2,
            "engine_version": "0.11.1",
            "gpu": "rtx-3090",
            "context_length": 120000,
            "chunked_prefill_size": 64000,
            "max_running_requests": 8,
            "gpu_memory_utilization": 0.95,
        },
        "vllm#28228: 2x RTX 3090, TP2, 0.11.x, util 0.95, L 120,000, B 64,000, 8 seqs; config from logs_issue13/; "
        "no cold run: the run loads an AWQ 4-bit checkpoint (cyankiwi/...-AWQ-4bit) and kvplan has only the bf16 "
        "geometry, so a cold weight estimate is not comparable",
        "test_vllm_28228_kimi_linear_log_measured",
    ),
    "vllm-23278-gptoss120b-h100-marlin": (
        {"model": "openai/gpt-oss-120b", "tp": 1, "engine_version": "0.10.1", "gpu": "h100-sxm"},
        "vllm#23278: one H100, 0.10.1 (Marlin MXFP4 MoE); available KV -2.14 GiB, no pool",
        "test_gptoss120b_h100_weight_logs",
    ),
    "vllm-33155-gptoss120b-h100-triton": (
        {"model": "openai/gpt-oss-120b", "tp": 1, "engine_version": "0.14.1", "gpu": "h100-sxm"},
        "vllm#33155: one H100, 0.14.1 (Triton MoE); the excerpt stops before the KV lines",
        "test_gptoss120b_h100_weight_logs",
    ),
}

# Explained exclusions: a mode's error is shown per case but left out of that mode's summary, with the reason.
EXCLUDED: dict[str, tuple[tuple[str, ...], str]] = {
    "deepseek-v2-lite-h100-v0-premla": (
        ("measured", "cold"),
        "V0 build of Dec 2024 stored DeepSeek-V2 as padded MHA K/V (pre-MLA, vllm PR #10927 'Before'); kvplan "
        "models the MLA latent layout, ~14x smaller per token",
    ),
    "vllm-21348-qwen3-235b-fp8-4xh100-tp4": (
        ("measured",),
        "the two pasted lines come from different TP workers: vLLM 0.10.0 logs 'Available KV cache memory' in "
        "every worker and 'GPU KV cache size' once per worker before unify_kv_cache_configs takes the minimum "
        "(v1/engine/core.py _initialize_kv_caches, v1/core/kv_cache_utils.py _get_kv_cache_config_uniform_type); "
        "178,880 tokens = 11,180 blocks = a worker with 8.018 GiB, 0.09 GiB below the worker that printed 8.11",
    ),
}


def case_overrides(case: dict) -> dict:
    """Deployment fields for a shared validation case (tests/validation/fixtures.py rules, as a dict)."""
    fx = case["fixture"]
    omit = set(fx.get("omit") or [])
    o: dict = {}
    if fx.get("engine_version"):
        o["engine_version"] = str(fx["engine_version"])
    for k in ("tp", "pp", "dp"):
        if case.get(k) is not None and k not in omit:
            o[k] = int(case[k])
    dt = (case.get("kv_cache_dtype") or "").split()
    if dt and dt[0] in DTYPE_WORDS and "kv_cache_dtype" not in omit:
        o["kv_cache_dtype"] = dt[0]
    if fx["engine"] == "sglang":
        if case.get("ep") is not None and "ep" not in omit:
            o["ep"] = int(case["ep"])
        if case.get("dp_attention"):
            o["enable_dp_attention"] = True
        for key, f in (
            ("mem_fraction_static", "mem_fraction_static"),
            ("page_size", "page_size"),
            ("context_length", "context_length"),
            ("max_running_requests_arg", "max_running_requests"),
            ("chunked_prefill_size", "chunked_prefill_size"),
        ):
            if case.get(key) is not None and key not in omit:
                o[f] = case[key]
    else:
        if case.get("enable_expert_parallel"):
            o["ep"] = (case.get("tp") or 1) * (case.get("dp") or 1)
        for key, f in (
            ("gpu_memory_utilization", "gpu_memory_utilization"),
            ("block_size", "page_size"),
            ("max_model_len", "context_length"),
            ("max_num_seqs", "max_running_requests"),
            ("max_num_batched_tokens", "chunked_prefill_size"),
        ):
            if case.get(key) is not None and key not in omit:
                o[f] = case[key]
        if case.get("enforce_eager"):
            o["enforce_eager"] = True
    ex = list(fx.get("extra_args") or [])
    for i, a in enumerate(ex):
        if a == "--max-total-tokens":
            o["max_total_tokens"] = int(ex[i + 1])
    return o


def case_model(case: dict) -> str:
    fx = case["fixture"]
    if fx.get("hf_config"):
        p = SHARED / fx["hf_config"].removeprefix("shared/")
        if p.exists():
            return str(p)
    from tests.validation.fixtures import fixture_model  # the stand-in presets of the README's rule, declared once

    return fixture_model(fx)


def case_gpu(case: dict) -> str | None:
    from kvplan.inputs.resolve import resolve_gpu

    fx = case["fixture"]
    for name in (fx.get("gpu_device"), fx.get("gpu")):
        if name:
            try:
                return resolve_gpu(name).id
            except InputError:
                continue
    return None


def load_cases() -> dict[str, dict]:
    import json

    out = {}
    for eng in ("sglang", "vllm"):
        for line in (SHARED / "validation" / f"{eng}_dev.jsonl").read_text().splitlines():
            if line.strip():
                c = json.loads(line)
                out[c["id"]] = c
    return out


_PRIMARY = (
    "max_total_num_tokens (scheduler)",
    "pool tokens (KV Cache is allocated #tokens)",
    "GPU KV cache size (tokens)",
    "estimated maximum model length (fit error)",
    "GPU blocks",
    "KV cache bytes (K + V / KV size)",
    "available KV cache memory (budget)",
)


def primary_row(cal):
    by = {r.quantity: r for r in cal.rows if r.checked and r.logged is not None}
    for q in _PRIMARY:
        if q in by:
            return by[q]
    return None


def inputs_for(log_id: str, cases: dict) -> tuple[str | None, str | None, dict, str]:
    """(model, gpu, overrides, where the inputs come from)."""
    if log_id in cases:
        c = cases[log_id]
        o = case_overrides(c)
        src = "shared case"
        from tests.validation.fixtures import STAND_INS

        if c["fixture"]["model"] in STAND_INS:  # the README's rule: the preset of the same geometry, said here
            stand_in = STAND_INS[c["fixture"]["model"]]
            src += f"; planned with the {stand_in} preset (same KV geometry; no verbatim config)"
        gpu = case_gpu(c)
        if log_id in CASE_FIX:
            o.update(CASE_FIX[log_id][0])
            gpu = o.pop("gpu", gpu)
            model = o.pop("model", None)
            if model is not None:
                return model, gpu, o, src + "; " + CASE_FIX[log_id][1]
            src += "; " + CASE_FIX[log_id][1]
        return case_model(c), gpu, o, src
    if log_id in ADDITIONAL:
        o = dict(ADDITIONAL[log_id][0])
        return o.pop("model", None), o.pop("gpu", None), o, ADDITIONAL[log_id][1]
    if log_id in ISSUE13:
        o = dict(ISSUE13[log_id][0])
        return o.pop("model", None), o.pop("gpu", None), o, ISSUE13[log_id][1]
    return None, None, {}, "log only"


def evaluate(log_path: Path, cases: dict) -> dict:
    """One log: measured and cold errors (None with a reason when a mode does not apply)."""
    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import calibrate, fit_recovered, recover_deployment

    log_id = log_path.stem
    row: dict = {
        "id": log_id,
        "engine": None,
        "measured": None,
        "cold": None,
        "measured_why": "",
        "cold_why": "",
        "quantity": "",
        "logged": None,
        "free_rows": [],
        "weight_rows": [],
        "source": "",
        "engine_version": None,
        "engine_versions_possible": None,
    }
    model, gpu, over, src = inputs_for(log_id, cases)
    row["source"] = src
    try:
        facts = read_log_file(log_path)
    except InputError as e:
        row["measured_why"] = row["cold_why"] = f"not a complete start-up log (expected): {e.one_line()[:120]}"
        return row
    row["engine"] = facts.engine
    from kvplan.inputs.logs import release_window

    win = release_window(facts)
    row["engine_versions_possible"] = [win.oldest, win.newest]
    try:
        cal = calibrate(facts, log=log_id, model=model, gpu=gpu, overrides=over)
    except InputError as e:
        row["measured_why"] = e.one_line()[:200]
        cal = None
    pr = _measured(row, cal, cases.get(log_id))
    cold_only = ""
    # cold
    case = cases.get(log_id)
    if case is not None and case["fixture"].get("no_cold"):
        row["cold_why"] = "no cold run: " + case["fixture"]["no_cold"][:150]
        return row
    if cal is None or pr is None:
        pr = _cold_only_target(facts)
        if pr is None:
            row["cold_why"] = row["cold_why"] or "no measured target"
            return row
        if not (over.get("engine_version") or facts.engine_version or win.oldest == win.newest):
            # a cold prediction is one of a release: with no measured row to check, the newest release the log's
            # lines allow is an assumption, not a fact of the log
            row["cold_why"] = (
                f"cold only needs the release: not stated, and the log's lines allow {win.oldest}-{win.newest}"
            )
            return row
        cold_only = pr.note
    gpu_mem = (case or {}).get("fixture", {}).get("gpu_memory_bytes") if case else None
    if gpu is not None and gpu_mem is not None and _has_cuda_total(gpu):
        # the fixture's figure is nvidia-smi MiB x 2^20; the budget is a fraction of the CUDA-visible total,
        # which the GPU preset carries (e.g. RTX 3090 23.58 GiB, not 24.00)
        gpu_mem = None
    if gpu is None and gpu_mem is None:
        row["cold_why"] = "GPU not known"
        return row
    try:
        rec = recover_deployment(facts, model=model, gpu=gpu, overrides=over, mode="cold")
        dep = rec.deployment
        if gpu_mem is not None:
            dep = replace(dep, gpu_memory=int(gpu_mem))
        res = fit_recovered(dep)
    except InputError as e:
        row["cold_why"] = e.one_line()[:200]
        return row
    pred = _cold_value(pr.quantity, res)
    if pred is None:
        row["cold_why"] = "target not comparable in cold mode"
    else:
        row["cold"] = (pred - pr.logged) / pr.logged
        if cold_only:
            row.update(quantity=pr.quantity, logged=pr.logged, engine_version=dep.engine_version)
            row["source"] += "; cold only: " + cold_only
    return row


def _measured(row: dict, cal, case: dict | None):
    """Fill the measured-mode fields of ``row`` from a Calibration (None: it did not run); the compared row."""
    if cal is None:
        return None
    row["engine_version"] = cal.engine_version
    pr = primary_row(cal)
    tgt = (case or {}).get("fixture", {}).get("target")
    if tgt and tgt["kind"] == "kv_bytes" and cal.result is not None:
        from kvplan.planning.calibrate import Row

        pr = Row(
            "KV budget (fixture target)",
            "bytes",
            float(tgt["value"]),
            cal.result.kv_budget_bytes,
            resolution=3 * 0.005 * GiB,
            note=tgt.get("note", ""),
        )
    if pr is not None:
        row.update(measured=pr.rel, quantity=pr.quantity, logged=pr.logged, measured_ok=not pr.flagged(TOL))
    for r in cal.rows:
        if r.quantity.startswith(("free at start", "free on startup")):
            row["free_rows"].append(r)
        if r.quantity.startswith("weight load"):
            row["weight_rows"].append(r)
    return pr


def _cold_only_target(facts):
    """The log's own pool figure as a cold-mode target when measured mode has none to check (a log that prints only
    'Available KV cache memory', the input of a measured run, or a pool size without the memory figures measured
    mode needs).  Same order as :data:`_PRIMARY`; None when the log prints no pool figure at all.  Used only when
    the release is known (stated by the log, its case or ADDITIONAL, or pinned by its lines): see evaluate."""
    from kvplan.planning.calibrate import Row

    est = (facts.extra or {}).get("estimated_max_model_len")
    kv_bytes = facts.kv_bytes
    if kv_bytes is None and facts.k_bytes is not None and facts.v_bytes is not None:
        kv_bytes = facts.k_bytes + facts.v_bytes
    for quantity, unit, value in (
        ("max_total_num_tokens (scheduler)", "tokens", facts.max_total_num_tokens),
        ("pool tokens (KV Cache is allocated #tokens)", "tokens", facts.kv_tokens),
        ("GPU KV cache size (tokens)", "tokens", facts.gpu_kv_cache_tokens),
        ("estimated maximum model length (fit error)", "tokens", est),
        ("GPU blocks", "count", facts.num_gpu_blocks),
        ("KV cache bytes (K + V / KV size)", "bytes", kv_bytes),
        ("available KV cache memory (budget)", "bytes", facts.available_kv_cache_bytes),
    ):
        if value is not None:
            note = "measured mode has nothing to check, so the log's " + quantity + " is the cold target"
            return Row(quantity, unit, float(value), None, note=note)
    return None


def _has_cuda_total(gpu_id: str) -> bool:
    from kvplan.inputs.resolve import resolve_gpu

    try:
        return bool(resolve_gpu(gpu_id).cuda_total_bytes)
    except InputError:
        return False


def _cold_value(quantity: str, res):
    if "tokens" in quantity and "estimated" not in quantity:
        return res.kv_pool_tokens
    if quantity.startswith("estimated"):
        return res.max_context_length if not res.fits else res.context_length
    if quantity == "GPU blocks":
        return res.num_blocks
    if quantity.startswith("KV cache bytes"):
        return (res.kv_pool_tokens + (res.page_size or 1)) * res.kv_bytes_per_token
    if quantity.startswith("available KV") or quantity.startswith("KV budget"):
        return res.kv_budget_bytes
    return None


def evaluate_all() -> list[dict]:
    cases = load_cases()
    return [evaluate(p, cases) for p in sorted(LOGS.glob("*.log"))]


#: issue-13 logs whose weight load is the check (no pool line): the preset and the GPU's SM major
_WEIGHT_ONLY = {
    "vllm-23278-gptoss120b-h100-marlin": ("openai--gpt-oss-120b", 9),
    "vllm-33155-gptoss120b-h100-triton": ("openai--gpt-oss-120b", 9),
}


def _weight_row(log_id: str, over: dict):
    """kvplan's weight estimate for that release and GPU against the logged "Model loading took" (a calibrate Row)."""
    import json

    from kvplan.inputs.logs import read_log_file
    from kvplan.planning.calibrate import Row
    from kvplan.weights.estimate import estimate_weight_bytes, quantization_from_config

    preset, sm = _WEIGHT_ONLY[log_id]
    facts = read_log_file(LOGS13 / f"{log_id}.log")
    if facts.model_loading_bytes is None:
        return None
    cfg = json.loads((SHARED / "hf-configs" / preset / "config.json").read_text())
    est = estimate_weight_bytes(
        config=cfg,
        quantization=quantization_from_config(cfg),
        tp_size=int(over["tp"]),
        engine="vllm",
        engine_version=str(over["engine_version"]),
        sm_major=sm,
    )
    return Row(
        "weight load (model loading)",
        "bytes",
        float(facts.model_loading_bytes),
        est.per_gpu_bytes,
        note=f"MoE kernel of {over['engine_version']} on SM{sm}",
    )


def evaluate_issue13() -> list[dict]:
    """The issue-13 family logs (:data:`ISSUE13`), evaluated like the others (measured and cold); the weight-only logs
    get their weight row (what their test checks)."""
    rows = []
    for log_id, (over, _why, _test) in ISSUE13.items():
        row = evaluate(LOGS13 / f"{log_id}.log", {})
        if log_id in _WEIGHT_ONLY:
            row["engine_version"] = over["engine_version"]
            w = _weight_row(log_id, over)
            row["weight_rows"] = [w] if w is not None else []
        else:
            row["cold"], row["cold_why"] = None, ""
        rows.append(row)
    return rows


def _q(vals: list[float], q: float) -> float:
    s = sorted(vals)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary(vals: list[float]) -> dict:
    a = [abs(v) for v in vals]
    return {
        "n": len(a),
        "median": statistics.median(a) if a else float("nan"),
        "p90": _q(a, 0.9),
        "max": max(a) if a else float("nan"),
    }


def _pct(v) -> str:
    return "-" if v is None else f"{v:+.2%}"


def _release(r: dict) -> str:
    """``0.4.1.post7 (0.4.1.post6-0.4.1.post7)``: the release applied and the releases the log's lines allow."""
    span = r.get("engine_versions_possible")
    allowed = "-" if not span else (span[0] if span[0] == span[1] else f"{span[0]}-{span[1]}")
    return f"{r.get('engine_version') or '-'} ({allowed})"


EXPLANATION_MARK = "<!-- hand-written explanation below is kept by the generator -->"


def _logged(r: dict) -> str:
    if r["logged"] is None:
        return "-"
    if "bytes" in r["quantity"] or "memory" in r["quantity"]:
        return f"{r['logged'] / GiB:.2f} GiB"
    return f"{int(r['logged']):,}"


def _issue13_section(rows13: list[dict]) -> list[str]:
    """The issue-13 family logs: the same columns as the per-case table, their weight rows and the test that checks
    each one (not part of the summary above)."""
    out = [
        "",
        "## Issue-13 family logs (tests/validation/logs_issue13, not in the summary)",
        "",
        "Each is checked by the named test in `tests/test_families_vllm.py`; inputs from `ISSUE13` in "
        "`scripts/accuracy_report.py` (the release the issue states).",
        "",
        "| log | release (log allows) | compared | logged | measured | cold | weight load logged / kvplan | "
        "checked by | inputs from / why not |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows13:
        w = "; ".join(f"{x.logged / GiB:.2f} / {x.predicted / GiB:.2f} GiB ({_pct(x.rel)})" for x in r["weight_rows"])
        why = "; ".join(x for x in (r["source"], r["measured_why"], r["cold_why"]) if x)
        out.append(
            f"| {r['id']} | {_release(r)} | {r['quantity'] or '-'} | {_logged(r)} | {_pct(r['measured'])} | "
            f"{_pct(r['cold'])} | {w or '-'} | `{ISSUE13[r['id']][2]}` | {why.replace('|', '/')} |"
        )
    return out


def render(rows: list[dict], keep: str = "", rows13: list[dict] | None = None) -> str:
    def excluded(r, mode):
        return mode in EXCLUDED.get(r["id"], ((), ""))[0]

    meas = [r["measured"] for r in rows if r["measured"] is not None and not excluded(r, "measured")]
    cold = [r["cold"] for r in rows if r["cold"] is not None and not excluded(r, "cold")]
    sm, sc = summary(meas), summary(cold)
    within = sum(1 for r in rows if r["measured"] is not None and r.get("measured_ok") and not excluded(r, "measured"))
    out = [
        "# Accuracy against public startup logs",
        "",
        f"Generated by `scripts/accuracy_report.py` from the {len(rows)} logs in `tests/validation/logs` "
        "(do not edit above the explanation section; rerun the script).",
        "",
        "Error = (predicted - logged) / logged on the log's pool size: SGLang `max_total_num_tokens` "
        "(else `#tokens`, else KV GiB), vLLM `GPU KV cache size` tokens (else blocks, the fit error's estimated "
        "length, or the available KV GiB). **Measured** = the engine's own free-memory / weight / available-KV "
        "figures from the log (`kvplan calibrate`); **cold** = nothing measured (runtime.py, weights.py, "
        "vLLM's modelled activation / graph terms). A log whose figures leave measured mode nothing to check (only "
        "'Available KV cache memory', the input of a measured run, or a pool size without the memory figures) is "
        "compared in cold mode only, on that figure ('cold only' in the last column).",
        "",
        "## Summary",
        "",
        "| mode | cases | median abs error | p90 | max | within 0.5% |",
        "|---|---|---|---|---|---|",
        f"| measured | {sm['n']} | {sm['median']:.2%} | {sm['p90']:.2%} | {sm['max']:.2%} | {within} of {sm['n']} |",
        f"| cold | {sc['n']} | {sc['median']:.2%} | {sc['p90']:.2%} | {sc['max']:.2%} | "
        f"{sum(1 for v in cold if abs(v) <= TOL)} of {sc['n']} |",
        "",
        f"Cold within 3%: {sum(1 for v in cold if abs(v) <= 0.03)} of {sc['n']}; within 8%: "
        f"{sum(1 for v in cold if abs(v) <= 0.08)} of {sc['n']}.",
        "",
        "### Excluded from the summary (explained)",
        "",
        "| log | mode(s) | error | reason |",
        "|---|---|---|---|",
    ]
    for r in rows:
        if r["id"] in EXCLUDED:
            modes, why = EXCLUDED[r["id"]]
            errs = ", ".join(f"{m} {_pct(r[m])}" for m in modes if r.get(m) is not None) or "-"
            out.append(f"| {r['id']} | {', '.join(modes)} | {errs} | {why} |")
    out += [
        "",
        "## Per case",
        "",
        "Release: the rules applied (the log's stated release, else the newest its line formats allow) and, "
        "after it, the releases the log's lines allow (`kvplan.inputs.logs.release_window`).",
        "",
        "| log | engine | release (log allows) | compared | logged | measured | cold | inputs from / why not |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lg = _logged(r)
        why = "; ".join(x for x in (r["source"], r["measured_why"], r["cold_why"]) if x)
        out.append(
            f"| {r['id']} | {r['engine'] or '-'} | {_release(r)} | {r['quantity'] or '-'} | {lg} | "
            f"{_pct(r['measured'])} | {_pct(r['cold'])} | {why.replace('|', '/')} |"
        )
    out += [
        "",
        "## Runtime overhead at start (kvplan.engines.runtime)",
        "",
        "Free memory per GPU at the engine's start-up snapshot (SGLang `Load weight begin`, vLLM `Free memory "
        "on device ... on startup`), modelled as device total - CUDA context - communicators(TP, interconnect), "
        "against the log, for every log whose GPU is a preset:",
        "",
        "| log | logged | modelled | error | model |",
        "|---|---|---|---|---|",
    ]
    fr = [(r["id"], x) for r in rows for x in r["free_rows"]]
    for i, x in fr:
        out.append(f"| {i} | {x.logged / GiB:.2f} GiB | {x.predicted / GiB:.2f} GiB | {_pct(x.rel)} | {x.note} |")
    if fr:
        s = summary([x.rel for _, x in fr])
        out.append(f"\nmedian abs error {s['median']:.2%}, max {s['max']:.2%} over {s['n']} logs.")
    out += [
        "",
        "## Weight estimate (kvplan.weights.estimate) against logged weight loads",
        "",
        "| log | logged | estimated | error | method |",
        "|---|---|---|---|---|",
    ]
    wr = [(r["id"], x) for r in rows for x in r["weight_rows"]]
    for i, x in wr:
        out.append(
            f"| {i} | {x.logged / GiB:.2f} GiB | {x.predicted / GiB:.2f} GiB | {_pct(x.rel)} | "
            f"{x.note[:90].replace('|', '/')} |"
        )
    if wr:
        s = summary([x.rel for _, x in wr])
        out.append(f"\nmedian abs error {s['median']:.2%}, p90 {s['p90']:.2%}, max {s['max']:.2%} over {s['n']} logs.")
    if rows13:
        out += _issue13_section(rows13)
    out += ["", EXPLANATION_MARK, ""]
    return "\n".join(out) + (keep if keep else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "accuracy.md"))
    a = ap.parse_args(argv)
    out = Path(a.out)
    keep = ""
    if out.exists():
        text = out.read_text()
        if EXPLANATION_MARK in text:
            keep = text.split(EXPLANATION_MARK, 1)[1].lstrip("\n")
    out.write_text(render(evaluate_all(), keep, evaluate_issue13()))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
