"""Launch commands as input (kvplan/launch.py).

Expected values come from the engines' parsers: SGLang 0.5.23 (python/sglang/srt/arg_groups/fields/*.py,
argparse with allow_abbrev) and vLLM 0.33.0 (vllm/engine/arg_utils.py, vllm/utils/argparse_utils.py
human_readable_int and FlexibleArgumentParser).
"""

from __future__ import annotations

import io
import json

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs.launch import LaunchParse, parse_launch_command, read_launch_text, vllm_human_int


def _err(cmd) -> InputError:
    with pytest.raises(InputError) as ei:
        parse_launch_command(cmd)
    return ei.value


# ---------------------------------------------------------------- SGLang


def test_sglang_launch_server_basic():
    p = parse_launch_command(
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --mem-fraction-static 0.8 "
        "--trust-remote-code --host 0.0.0.0 --port 30000"
    )
    assert p.engine == "sglang"
    assert p.fields == {"engine": "sglang", "model": "deepseek-ai/DeepSeek-V3", "tp": 8, "mem_fraction_static": 0.8}
    assert p.ignored == ("--trust-remote-code", "--host", "--port")
    assert p.unknown == ()


def test_sglang_fields_build_a_deployment():
    p = parse_launch_command(
        "python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V4.1-Flash --tensor-parallel-size 8 "
        "--expert-parallel-size 8 --context-length 1048576 --kv-cache-dtype fp8_e4m3 --max-running-requests 16 "
        "--chunked-prefill-size=2048 --attention-backend dsv4 --page-size 256 --max-total-tokens 500000 "
        "--disable-radix-cache --swa-full-tokens-ratio 0.5 --speculative-algorithm EAGLE "
        "--speculative-num-draft-tokens 4 --disable-overlap-schedule"
    )
    dep = Deployment(**p.fields)
    assert (dep.engine, dep.model, dep.tp, dep.ep) == ("sglang", "deepseek-ai/DeepSeek-V4.1-Flash", 8, 8)
    assert (dep.context_length, dep.kv_cache_dtype, dep.max_running_requests) == (1_048_576, "fp8_e4m3", 16)
    assert (dep.chunked_prefill_size, dep.attention_backend, dep.page_size, dep.max_total_tokens) == (
        2048,
        "dsv4",
        256,
        500_000,
    )
    assert dep.disable_radix_cache and dep.disable_overlap_schedule
    assert (dep.swa_full_tokens_ratio, dep.speculative_algorithm, dep.speculative_num_draft_tokens) == (0.5, "EAGLE", 4)


def test_sglang_abbreviations_follow_argparse():
    # SGLang 0.5.23 declares --tp-size (alias --tensor-parallel-size) and --dp-size; "--tp"/"--dp" work only as
    # unique argparse abbreviations.  "--ep" is a declared alias of --ep-size.
    p = parse_launch_command(
        [
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "m/x",
            "--tp",
            "4",
            "--dp",
            "2",
            "--ep",
            "8",
            "--mem",
            "0.7",
        ]
    )
    assert (p.fields["tp"], p.fields["dp"], p.fields["ep"], p.fields["mem_fraction_static"]) == (4, 2, 8, 0.7)
    # --pp abbreviates --pp-size, --pp-max-micro-batch-size and --pp-async-batch-depth: SGLang refuses it
    p = parse_launch_command("python -m sglang.launch_server --model-path m/x --pp 2")
    assert p.refusals[0].startswith("ambiguous option: --pp could match") and "--pp-size" in p.refusals[0]
    assert "pp" not in p.fields


def test_aliases_share_one_destination_last_wins():
    assert parse_launch_command("sglang serve m/x --tp-size 2 --tensor-parallel-size 4").fields["tp"] == 4
    assert parse_launch_command("sglang serve m/x --tensor-parallel-size 4 --tp-size 2").fields["tp"] == 2
    assert parse_launch_command("vllm serve m/x --tensor-parallel-size 4 -tp 2").fields["tp"] == 2
    assert (
        parse_launch_command("vllm serve m/x --gpu-memory-utilization 0.5 --device-memory-utilization 0.8").fields[
            "gpu_memory_utilization"
        ]
        == 0.8
    )


def test_sglang_dp_attention_spellings():
    # --dp-size N --enable-dp-attention is the deprecated spelling of --attn-dp-size N (parallel_hook.py)
    a = parse_launch_command("sglang serve m/x --tp 8 --dp-size 8 --enable-dp-attention")
    b = parse_launch_command("sglang serve m/x --tp 8 --attn-dp-size 8")
    for p in (a, b):
        assert p.fields["dp"] == 8 and p.fields["enable_dp_attention"] is True
    c = parse_launch_command("sglang serve m/x --tp 8 --dp-size 2")
    assert c.fields["dp"] == 2 and "enable_dp_attention" not in c.fields
    e = _err("sglang serve m/x --tp 8 --dp-size 2 --attn-dp-size 4")
    assert e.field == "--dp-size"


def test_sglang_serve_positional_model_only_first():
    # sglang/cli/serve.py _normalize_positional_model_path: only a first bare word is the model
    assert parse_launch_command("sglang serve Qwen/Qwen3-8B --tp 2").fields["model"] == "Qwen/Qwen3-8B"
    p = parse_launch_command("sglang serve --tp 2 Qwen/Qwen3-8B")
    assert "model" not in p.fields
    assert any("Qwen/Qwen3-8B" in u for u in p.unknown)


def test_sglang_cuda_graph_switches():
    assert parse_launch_command("sglang serve m/x --disable-cuda-graph").fields["disable_cuda_graph"] is True
    both = parse_launch_command(
        "sglang serve m/x --cuda-graph-backend-decode disabled --cuda-graph-backend-prefill=disabled"
    )
    assert both.fields["disable_cuda_graph"] is True
    one = parse_launch_command("sglang serve m/x --disable-decode-cuda-graph")
    assert "disable_cuda_graph" not in one.fields and any("decode only" in n for n in one.notes)
    e = _err("sglang serve m/x --cuda-graph-backend-decode off")
    assert e.field == "--cuda-graph-backend-decode"


def test_env_prefix_and_engram_switch():
    p = parse_launch_command(
        "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1 CUDA_VISIBLE_DEVICES=0,1 "
        "python -m sglang.launch_server --model-path m/x"
    )
    assert p.env == {"SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE": "1", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert p.fields["engram_on_host"] is True
    # SGLang's EnvBool: true/1/yes/y and false/0/no/n
    assert (
        parse_launch_command("SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=no sglang serve m/x").fields["engram_on_host"]
        is False
    )
    assert (
        _err("SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=maybe sglang serve m/x").field
        == "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE"
    )


def test_unmodelled_flags_are_noted_not_mapped():
    p = parse_launch_command("sglang serve m/x --quantization fp8 --json-model-override-args '{\"a\": 1}'")
    assert set(p.fields) == {"engine", "model"}
    assert any(n.startswith("--quantization is not modelled") for n in p.notes)
    assert any(n.startswith("--json-model-override-args is not modelled") for n in p.notes)


# ---------------------------------------------------------------- vLLM


def test_vllm_serve_positional_and_aliases():
    p = parse_launch_command(
        "vllm serve Qwen/Qwen3-32B -tp 4 -pp 2 -dp 2 --gpu-memory-utilization 0.9 --max-num-seqs 64 "
        "--block-size 32 --max-num-batched-tokens 8192 --kv-cache-dtype fp8 --attention-backend FLASHINFER "
        "--port 8001 --enable-prefix-caching"
    )
    assert p.engine == "vllm"
    assert p.fields == {
        "engine": "vllm",
        "model": "Qwen/Qwen3-32B",
        "tp": 4,
        "pp": 2,
        "dp": 2,
        "gpu_memory_utilization": 0.9,
        "max_running_requests": 64,
        "page_size": 32,
        "chunked_prefill_size": 8192,
        "kv_cache_dtype": "fp8",
        "attention_backend": "FLASHINFER",
        "enable_prefix_caching": True,
    }  # read since issue 12 (was ignored)
    assert p.ignored == ("--port",)


def test_vllm_prefix_caching_is_read():
    """``--enable-prefix-caching`` is an ``argparse.BooleanOptionalAction`` with default None (``EngineArgs.
    enable_prefix_caching: bool | None = None``, vllm/engine/arg_utils.py, v0.34.0): the last spelling wins, and
    neither leaves the field out (the release's default applies)."""

    def read(cmd):
        return parse_launch_command(f"vllm serve m/x {cmd}").fields.get("enable_prefix_caching")

    assert read("--enable-prefix-caching") is True
    assert read("--no-enable-prefix-caching") is False
    assert read("--enable_prefix_caching") is True  # the underscore spelling (the vllm#28228 command)
    assert read("--enable-prefix-caching --no-enable-prefix-caching") is False
    assert read("--no-enable-prefix-caching --enable-prefix-caching") is True
    assert read("--max-num-seqs 8") is None
    p = parse_launch_command("vllm serve m/x --no-enable-prefix-caching")
    assert "--no-enable-prefix-caching" not in p.ignored and "--no-enable-prefix-caching" not in p.unknown


def test_vllm_human_readable_ints():
    # vllm/utils/argparse_utils.py human_readable_int: k = 10^3 (decimals ok), K = 2^10 (integers only)
    assert vllm_human_int("--max-model-len", "32k") == 32_000
    assert vllm_human_int("--max-model-len", "32K") == 32_768
    assert vllm_human_int("--max-model-len", "25.6k") == 25_600
    assert vllm_human_int("--max-model-len", "1m") == 1_000_000
    assert vllm_human_int("--max-model-len", "1M") == 1_048_576
    assert vllm_human_int("--kv-cache-memory-bytes", "20G") == 20 * 2**30
    assert vllm_human_int("--kv-cache-memory-bytes", "80g") == 80_000_000_000
    with pytest.raises(InputError, match="decimals"):
        vllm_human_int("--max-model-len", "1.5K")
    p = parse_launch_command(
        "vllm serve m/x --max-model-len 128K --kv-cache-memory-bytes=20G --max-num-batched-tokens 16k"
    )
    assert (p.fields["context_length"], p.fields["kv_cache_memory_bytes"], p.fields["chunked_prefill_size"]) == (
        131_072,
        21_474_836_480,
        16_000,
    )


def test_vllm_max_model_len_auto_means_model_default():
    for v in ("auto", "-1"):
        p = parse_launch_command(f"vllm serve m/x --max-model-len {v}")
        assert "context_length" not in p.fields and any("model's own" in n for n in p.notes)


def test_vllm_underscores_repeats_and_boolean_optional():
    p = parse_launch_command(
        "vllm serve m/x --tensor_parallel_size 2 --tensor-parallel-size 4 --enforce-eager --no-enforce-eager"
    )
    assert p.fields["tp"] == 4  # the last repeated flag wins
    assert "enforce_eager" not in p.fields  # --no-enforce-eager came last
    assert parse_launch_command("vllm serve m/x --no-enforce-eager --enforce-eager").fields["enforce_eager"] is True


def test_vllm_expert_parallel_spans_tp_times_dp():
    # FusedMoEParallelConfig.make: with --enable-expert-parallel, EP = TP x DP (x PCP)
    assert parse_launch_command("vllm serve m/x -tp 2 -dp 4 --enable-expert-parallel").fields["ep"] == 8
    assert parse_launch_command("vllm serve m/x -tp 8 -ep").fields["ep"] == 8
    assert "ep" not in parse_launch_command("vllm serve m/x -tp 8").fields


def test_vllm_speculative_config_json_and_dotted():
    p = parse_launch_command(
        ["vllm", "serve", "m/x", "--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 3})]
    )
    assert (p.fields["speculative_algorithm"], p.fields["speculative_num_draft_tokens"]) == ("mtp", 3)
    q = parse_launch_command(
        "vllm serve m/x --speculative-config.method eagle3 --speculative_config.num_speculative_tokens=2"
    )
    assert (q.fields["speculative_algorithm"], q.fields["speculative_num_draft_tokens"]) == ("eagle3", 2)
    r = parse_launch_command("vllm serve m/x --spec-method ngram --spec-tokens 5")
    assert (r.fields["speculative_algorithm"], r.fields["speculative_num_draft_tokens"]) == ("ngram", 5)
    e = _err("vllm serve m/x --speculative-config '{method: mtp}'")
    assert e.field == "--speculative-config" and "JSON" in str(e)


def test_vllm_api_server_module_and_model_flag():
    p = parse_launch_command(
        "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B "
        "--tensor-parallel-size 2 --device-memory-utilization 0.85 -O3"
    )
    assert p.fields == {"engine": "vllm", "model": "meta-llama/Llama-3.1-8B", "tp": 2, "gpu_memory_utilization": 0.85}
    assert any(n.startswith("--optimization-level") for n in p.notes)


# ---------------------------------------------------------------- shells, files, docker


def test_multiline_text_with_continuations_exports_comments_and_redirects():
    text = """#!/bin/bash
# serve V3
export SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=0
nohup python3 -m sglang.launch_server \\
    --model-path deepseek-ai/DeepSeek-V3 \\
    --tp 8 \\
    --json-model-override-args '{"rope_scaling":
        {"factor": 2}}' \\
    --mem-fraction-static 0.85  # leave room for graphs
    > server.log 2>&1 &
echo started
"""
    p = parse_launch_command(text)
    assert p.fields["model"] == "deepseek-ai/DeepSeek-V3"
    assert (p.fields["tp"], p.fields["mem_fraction_static"], p.fields["engram_on_host"]) == (8, 0.85, False)
    assert p.unknown == ()


def test_single_quoted_argument_is_treated_as_text():
    p = parse_launch_command(["vllm serve m/x --tensor-parallel-size 2"])
    assert p.fields["tp"] == 2


def test_docker_run_commands():
    p = parse_launch_command(
        "docker run --gpus all --shm-size 32g -p 30000:30000 -v /models:/models --ipc=host "
        "-e SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1 --env HF_TOKEN=hf_secret lmsysorg/sglang:latest "
        "python3 -m sglang.launch_server --model-path m/x --tp 8"
    )
    assert p.engine == "sglang" and p.fields["tp"] == 8 and p.fields["engram_on_host"] is True
    assert p.env["HF_TOKEN"] == "***"  # secrets are not kept
    v = parse_launch_command(
        "docker run --runtime nvidia --gpus all -p 8000:8000 vllm/vllm-openai:v0.33.0 "
        "--model Qwen/Qwen3-8B --tensor-parallel-size 2"
    )
    assert v.engine == "vllm" and v.fields["model"] == "Qwen/Qwen3-8B" and v.fields["tp"] == 2
    e = _err("docker run --gpus all lmsysorg/sglang:latest")
    assert e.field == "launch command"


def test_read_launch_text(tmp_path, monkeypatch):
    f = tmp_path / "serve.sh"
    f.write_text("vllm serve m/x \\\n  -tp 2\n")
    assert parse_launch_command(read_launch_text(str(f))).fields["tp"] == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("sglang serve m/x --tp 4\n"))
    assert parse_launch_command(read_launch_text("-")).fields["tp"] == 4
    with pytest.raises(InputError) as ei:
        read_launch_text(str(tmp_path / "missing.sh"))
    assert ei.value.field == "--from-launch"
    (tmp_path / "empty.sh").write_text("  \n")
    with pytest.raises(InputError, match="empty"):
        read_launch_text(str(tmp_path / "empty.sh"))


# ---------------------------------------------------------------- errors and warnings


@pytest.mark.parametrize(
    "cmd, flag, words",
    [
        ("python -m sglang.launch_server --model-path m/x --tp x", "--tp", "whole number"),
        ("python -m sglang.launch_server --model-path m/x --mem-fraction-static 2", "--mem-fraction-static", "(0, 1]"),
        (
            "python -m sglang.launch_server --model-path m/x --mem-fraction-static nan",
            "--mem-fraction-static",
            "finite",
        ),
        ("sglang serve m/x --context-length 128k", "--context-length", "whole number"),
        ("sglang serve m/x --kv-cache-dtype fp8", "--kv-cache-dtype", "invalid choice"),
        ("sglang serve m/x --attention-backend nope", "--attention-backend", "invalid choice"),
        ("sglang serve m/x --tp-size 0", "--tp-size", ">= 1"),
        ("sglang serve m/x --chunked-prefill-size 0", "--chunked-prefill-size", ">= 1 or -1"),
        ("sglang serve m/x --tp-size", "--tp-size", "expects a value"),
        ("sglang serve m/x --tp-size --port 1", "--tp-size", "expects a value"),
        ("sglang serve m/x --disable-radix-cache=true", "--disable-radix-cache", "takes no value"),
        ("vllm serve m/x -tp two", "-tp", "whole number"),
        ("vllm serve m/x --gpu-memory-utilization 90", "--gpu-memory-utilization", "fraction"),
        ("vllm serve m/x --max-model-len lots", "--max-model-len", "whole number"),
        ("vllm serve m/x --kv-cache-memory-bytes 0", "--kv-cache-memory-bytes", "positive"),
    ],
)
def test_malformed_values_name_the_flag(cmd, flag, words):
    e = _err(cmd)
    assert e.field == flag and words in str(e)
    line = e.one_line()
    assert line.startswith(flag) and "\n" not in line


def test_negative_values_are_values():
    assert parse_launch_command("sglang serve m/x --chunked-prefill-size -1").fields["chunked_prefill_size"] == -1


@pytest.mark.parametrize(
    "cmd", ["ls -la", "python train.py --tp 8", "", "echo hi; cat x", "torchrun --nproc-per-node 8 serve.py"]
)
def test_not_an_engine_command(cmd):
    assert _err(cmd).field == "launch command"


def test_two_engine_commands_are_refused():
    e = _err("vllm serve a/b & vllm serve c/d")
    assert "2 engine launch commands" in str(e)


def test_unbalanced_quotes():
    e = _err('vllm serve m/x --speculative-config \'{"a": 1}')
    assert e.field == "launch command" and "quot" in str(e)


def test_unknown_flags_warn_with_suggestions():
    p = parse_launch_command(
        "python -m sglang.launch_server --model-path m/x --mem_fraction_static 0.5 --frobnicate 3 --tp-size 2"
    )
    assert p.unknown == ("--mem_fraction_static (did you mean --mem-fraction-static?)", "--frobnicate")
    assert p.fields["tp"] == 2 and "mem_fraction_static" not in p.fields
    w = p.warnings()
    assert any("--frobnicate" in line for line in w)
    assert isinstance(p, LaunchParse)


def test_argv_with_wrappers():
    p = parse_launch_command(["env", "VLLM_USE_V1=1", "uv", "run", "vllm", "serve", "m/x", "-tp", "2"])
    assert p.env == {"VLLM_USE_V1": "1"} and p.fields["tp"] == 2
    q = parse_launch_command(["/usr/bin/python3.11", "-u", "-m", "sglang.launch_server", "--model-path", "m/x"])
    assert q.engine == "sglang" and q.fields["model"] == "m/x"


def test_launch_command_plans_like_the_same_flags():
    # The project's default deployment (kvplan.deployment.DEFAULT_DEPLOYMENT) written as an SGLang launch command
    # must plan exactly like Deployment() with no arguments.
    from kvplan.deployment import DEFAULT_DEPLOYMENT
    from kvplan.planning.plan import fit

    d = DEFAULT_DEPLOYMENT
    p = parse_launch_command(
        f"python -m sglang.launch_server --model-path {d['model']} --tp {d['tp']} --ep {d['ep']} "
        f"--context-length {d['context_length']} --kv-cache-dtype {d['kv_cache_dtype']} "
        f"--mem-fraction-static {d['mem_fraction_static']} --max-running-requests {d['max_running_requests']} "
        f"--chunked-prefill-size {d['chunked_prefill_size']} --attention-backend {d['attention_backend']}"
    )
    a = fit(Deployment(gpu=d["gpu"], **p.fields))
    b = fit(Deployment())
    assert (a.kv_pool_tokens, a.kv_bytes_per_token, a.fits) == (b.kv_pool_tokens, b.kv_bytes_per_token, b.fits)


# ---------------------------------------------------------------- issue 11: the long-context override, the GPU


def test_long_context_override_from_the_env_prefix():
    p = parse_launch_command(
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server "
        "--model-path Qwen/Qwen3-8B --context-length 131072"
    )
    assert p.fields["allow_long_context"] is True
    p = parse_launch_command(
        "export SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=false\n"
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B"
    )
    assert p.fields["allow_long_context"] is False
    assert (
        _err("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=maybe python -m sglang.launch_server --model-path m").field
        == "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    )
    # vLLM reads 1 / true only (vllm/envs.py, v0.34.0)
    v = parse_launch_command("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve Qwen/Qwen3-8B --max-model-len 128k")
    assert v.fields["allow_long_context"] is True and v.fields["context_length"] == 128_000
    assert (
        parse_launch_command("VLLM_ALLOW_LONG_MAX_MODEL_LEN=yes vllm serve m/x").fields["allow_long_context"] is False
    )
    w = parse_launch_command("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 vllm serve m/x")
    assert "allow_long_context" not in w.fields and any("SGLang setting" in n for n in w.notes)


def test_the_override_lets_the_longer_context_fit():
    from kvplan.planning.plan import fit

    cmd = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --context-length 131072"
    refused = fit(Deployment(gpu="h100-sxm", **parse_launch_command(cmd).fields))
    assert not refused.fits and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in refused.verdict
    allowed = fit(
        Deployment(gpu="h100-sxm", **parse_launch_command("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 " + cmd).fields)
    )
    assert allowed.fits and any("override is on" in a for a in allowed.assumptions)


def test_a_launch_command_needs_a_gpu():
    from kvplan.inputs.launch import require_gpu

    fields = parse_launch_command("vllm serve deepseek-ai/DeepSeek-V3 -tp 8").fields
    with pytest.raises(InputError) as e:
        require_gpu(fields)
    assert e.value.field == "--gpu" and "--gpu" in e.value.one_line()
    require_gpu({**fields, "gpu": "h200-sxm"})
    require_gpu({**fields, "gpu_memory": 80 * 2**30})


def test_cli_launch_without_gpu_exits_2_with_one_line():
    """Needs the CLI to call kvplan.inputs.launch.require_gpu on the merged fields (issue 11)."""
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    r = CliRunner().invoke(app, ["fit", "--format", "json", "--", "vllm", "serve", "Qwen/Qwen3-32B", "-tp", "2"])
    assert r.exit_code == 2 and "--gpu" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_vllm_launch_command_of_issue_11_fits():
    # `kvplan fit -g h100-sxm -- vllm serve Qwen/Qwen3-32B -tp 2 --max-model-len 32768 --max-num-seqs 128`: vLLM
    # starts it (max_num_seqs is a cap, not a target of 128 full-length requests)
    from kvplan.planning.plan import fit

    p = parse_launch_command("vllm serve Qwen/Qwen3-32B -tp 2 --max-model-len 32768 --max-num-seqs 128")
    r = fit(Deployment(gpu="h100-sxm", **p.fields))
    assert r.fits and r.meets_target and r.target_requests == 1
    assert r.max_running_requests_source == "given" and isinstance(r.max_concurrency, int)
    assert r.verdict == f"fits: {r.max_concurrency} requests of 32,768 tokens at once; max_num_seqs 128 (given)"
