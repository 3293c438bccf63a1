"""Turn a recorded engine startup (tests/validation/cases/*.jsonl) into `kvplan fit` arguments.

The rules are those of tests/validation/cases/README.md ("Using the cases as regression fixtures").
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "data" / "shared" / "validation"
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


#: logs whose model kvplan has no preset for, planned with the preset of the same geometry (the README's rule: "the
#: official model with the same attention geometry").  The Qwen3 2507 re-releases differ from their base releases in
#: max_position_embeddings (262,144 vs 40,960) and rope_theta, which a KV pool does not read; no verbatim copy of
#: their config.json was found to ship as presets, and kvplan no longer maps a dated id to the undated preset by
#: itself (issue 24: that mapping changed the context limit silently).  Remove an entry when its preset ships.
STAND_INS: dict[str, str] = {
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "Qwen/Qwen3-235B-A22B-FP8",
    "Qwen/Qwen3-30B-A3B-Instruct-2507": "Qwen/Qwen3-30B-A3B",
}


def fixture_model(fx: dict) -> str:
    """The model to plan a fixture with: its own id, or the stand-in of :data:`STAND_INS`."""
    return STAND_INS.get(fx["model"], fx["model"])


def load_cases(engine: str) -> list[dict]:
    path = CASES / f"{engine}_dev.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def common_args(case: dict) -> list[str]:
    fx = case["fixture"]
    omit = set(fx.get("omit") or [])
    args = ["--engine", fx["engine"], "--model", fixture_model(fx)]
    if fx.get("engine_version"):
        args += ["--engine-version", str(fx["engine_version"])]
    for key, flag in (("tp", "--tp-size"), ("pp", "--pp-size"), ("dp", "--dp-size")):
        if case.get(key) is not None and key not in omit:
            args += [flag, str(case[key])]
    dt = (case.get("kv_cache_dtype") or "").split()
    if dt and dt[0] in DTYPE_WORDS and "kv_cache_dtype" not in omit:
        args += ["--kv-cache-dtype", dt[0]]
    if fx["engine"] == "sglang":
        if case.get("ep") is not None and "ep" not in omit:
            args += ["--ep-size", str(case["ep"])]
        if case.get("dp_attention"):
            args += ["--enable-dp-attention"]
        for key, flag in (
            ("mem_fraction_static", "--mem-fraction-static"),
            ("page_size", "--page-size"),
            ("context_length", "--context-length"),
            ("max_running_requests_arg", "--max-running-requests"),
        ):
            if case.get(key) is not None and key not in omit:
                args += [flag, str(case[key])]
        cps = case.get("chunked_prefill_size")
        if cps is not None and "chunked_prefill_size" not in omit:
            args += [f"--chunked-prefill-size={cps}"]
    else:
        if case.get("enable_expert_parallel"):
            args += ["--ep-size", str((case.get("tp") or 1) * (case.get("dp") or 1))]
        for key, flag in (
            ("gpu_memory_utilization", "--gpu-memory-utilization"),
            ("block_size", "--block-size"),
            ("max_model_len", "--max-model-len"),
            ("max_num_seqs", "--max-num-seqs"),
            ("max_num_batched_tokens", "--max-num-batched-tokens"),
        ):
            if case.get(key) is not None and key not in omit:
                args += [flag, str(case[key])]
        if case.get("enforce_eager"):
            args += ["--enforce-eager"]
    return args + list(fx.get("extra_args") or [])


def sglang_measured_args(case: dict) -> list[str] | None:
    rep = case["reported"]
    before, after, usage = (
        rep.get("avail_mem_before_weights_gb"),
        rep.get("avail_mem_after_weights_gb"),
        rep.get("weight_load_mem_usage_gb"),
    )
    if before is None and after is not None and usage is not None:
        before = round(after + usage, 2)
    if before is None:
        return None
    weights = round(before - after, 2) if after is not None else usage
    if weights is None:
        return None
    return ["--free-memory", f"{before}GiB", "--weight-memory", f"{weights}GiB"]


def target(case: dict) -> tuple[str, float] | None:
    """(kind, value): kind 'tokens' compares kv_pool_tokens, 'kv_bytes' compares kv_budget_bytes."""
    fx = case["fixture"]
    if fx.get("target"):
        return fx["target"]["kind"], float(fx["target"]["value"])
    rep = case["reported"]
    if fx["engine"] == "sglang":
        tok = rep.get("max_total_num_tokens") or rep.get("kv_tokens")
        if tok:
            return "tokens", float(tok)
        kv = rep.get("kv_size_gb") or ((rep.get("k_size_gb") or 0) + (rep.get("v_size_gb") or 0)) or None
        return ("kv_bytes", kv * 2**30) if kv else None
    tok = rep.get("gpu_kv_cache_tokens")
    if tok:
        return "tokens", float(tok)
    kv = rep.get("available_kv_cache_gib")
    return ("kv_bytes", kv * 2**30) if kv else None
