"""Launch commands read with the flags of the release they run (issue 24 item 1): --engine-version, else the docker
image tag or a pip pin in the command, else the newest flag table (kvplan/inputs/flagtables, docs/flag-tables.md)."""

from __future__ import annotations

import json

import pytest

from kvplan.inputs.launch import image_release, parse_launch_command, pip_release

SG = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B"


@pytest.mark.parametrize(
    ("image", "engine", "release"),
    [
        ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang", "0.4.6.post1"),
        ("lmsysorg/sglang:v0.5.4-cu126", "sglang", "0.5.4"),
        ("docker.io/lmsysorg/sglang:0.5.2rc2-cu126", "sglang", "0.5.2rc2"),
        ("vllm/vllm-openai:v0.10.1", "vllm", "0.10.1"),
        ("vllm/vllm-openai:v0.10.1.1", "vllm", "0.10.1.1"),
        ("vllm/vllm-openai:latest", "vllm", None),
        ("vllm/vllm-openai@sha256:" + "a" * 64, "vllm", None),
        ("lmsysorg/sglang:v0.4.6.post1-cu124", "vllm", None),  # another engine's image
        ("localhost:5000/vllm-openai", "vllm", None),  # a registry port is no tag
    ],
)
def test_image_release(image: str, engine: str, release: str | None) -> None:
    assert image_release(image, engine) == release


def test_pip_release() -> None:
    segs = [["pip", "install", "sglang[all]==0.4.6.post1"], ["python3", "-m", "sglang.launch_server"]]
    assert pip_release(segs, "sglang") == "0.4.6.post1"
    assert pip_release([["pip3", "install", "-U", "vllm==0.10.1"]], "vllm") == "0.10.1"
    assert pip_release([["pip", "install", "sglang>=0.4.6"]], "sglang") is None
    assert pip_release([["pip", "install", "vllm==0.10.1"]], "sglang") is None


def test_image_tag_sets_the_release() -> None:
    p = parse_launch_command(f"docker run --gpus all lmsysorg/sglang:v0.4.6.post1-cu124 {SG} --tp 1")
    assert (p.release, p.fields["engine_version"]) == ("0.4.6.post1", "0.4.6.post1")
    assert p.release_source == "image tag lmsysorg/sglang:v0.4.6.post1-cu124"
    assert p.release_assumption() == (
        "launch command read with SGLang 0.4.6.post1's flags (image tag lmsysorg/sglang:v0.4.6.post1-cu124)"
    )
    p = parse_launch_command("docker run --gpus all vllm/vllm-openai:v0.10.1 --model Qwen/Qwen3-32B")
    assert (p.engine, p.release, p.fields["engine_version"]) == ("vllm", "0.10.1", "0.10.1")


def test_pip_pin_and_engine_version_precedence() -> None:
    p = parse_launch_command(f"pip install sglang==0.5.4 && {SG}")
    assert (p.release, p.fields["engine_version"]) == ("0.5.4", "0.5.4")
    # --engine-version (given with the command) wins over the tag; it is not written into the fields
    p = parse_launch_command(f"docker run lmsysorg/sglang:v0.4.6.post1-cu124 {SG}", engine_version="0.5.4")
    assert (p.release, p.release_source) == ("0.5.4", "--engine-version")
    assert "engine_version" not in p.fields
    # nothing said: the newest table, no assumption line (the plan's release line names it)
    p = parse_launch_command(SG)
    assert p.release == "0.5.23" and p.release_source == "newest" and p.release_assumption() is None


def test_cuda_graph_max_bs_by_release() -> None:
    p = parse_launch_command(f"{SG} --cuda-graph-max-bs 128", engine_version="0.5.4")
    assert not p.refusals and not p.unknown
    assert any(n.startswith("--cuda-graph-max-bs is not modelled") for n in p.notes)
    # 0.5.23 splits it into -decode / -prefill: its parser refuses the prefix, so the engine does not start (a
    # refusal, the verdict's first reason), and the value 128 is skipped with the flag
    p = parse_launch_command(f"{SG} --cuda-graph-max-bs 128")
    assert len(p.refusals) == 1 and p.refusals[0].startswith("ambiguous option: --cuda-graph-max-bs could match ")
    assert "--cuda-graph-max-bs-decode" in p.refusals[0] and "--cuda-graph-max-bs-prefill" in p.refusals[0]
    assert not p.unknown  # not "unexpected argument '128'"


def test_an_ambiguous_flag_is_a_verdict_not_an_input_error() -> None:
    """issue 24 item 2: what the engine's parser refuses is a verdict (fits false, exit 0; --check exit 3)."""
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    runner = CliRunner()
    cmd = [*SG.split(), "--cuda-graph-max-bs", "128"]
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--format", "json", "--", *cmd])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["fits"] is False
    assert out["reasons"][0].startswith("the engine refuses to start: ambiguous option: --cuda-graph-max-bs")
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--check", "--", *cmd])
    assert r.exit_code == 3, r.output
    # under 0.5.4, where the command was written, it is an ordinary flag: planned, no refusal
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--engine-version", "0.5.4", "--format", "json", "--", *cmd])
    assert r.exit_code == 0 and not any("refuses to start" in x for x in json.loads(r.stdout)["reasons"])


def test_misspelt_flags_are_refusals() -> None:
    p = parse_launch_command(f"{SG} --mem_fraction_static 0.95 --context-lenght 8192")
    assert p.refusals == (
        "unrecognised argument --mem_fraction_static (did you mean --mem-fraction-static?)",
        "unrecognised argument --context-lenght (did you mean --context-length?)",
    )
    assert "mem_fraction_static" not in p.fields and "context_length" not in p.fields


def test_underscores_by_vllm_release() -> None:
    # vLLM 0.8 on (FlexibleArgumentParser.parse_args) reads --max_model_len as --max-model-len
    p = parse_launch_command("vllm serve Qwen/Qwen3-32B --max_model_len 8192", engine_version="0.10.1")
    assert p.fields["context_length"] == 8192 and not p.refusals
    # vLLM 0.5.0's plain argparse does not
    p = parse_launch_command(
        "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-32B --max_model_len 8192",
        engine_version="0.5.0",
    )
    assert "context_length" not in p.fields
    assert p.refusals == ("unrecognised argument --max_model_len (did you mean --max-model-len?)",)


def test_deprecated_flag_is_a_note() -> None:
    p = parse_launch_command(f"{SG} --disable-cuda-graph")
    assert p.fields["disable_cuda_graph"] is True and not p.refusals
    assert "--disable-cuda-graph is deprecated: use --cuda-graph-backend-{decode,prefill}=disabled" in p.notes
    p = parse_launch_command(f"{SG} --disable-cuda-graph", engine_version="0.5.4")
    assert not any("deprecated" in n for n in p.notes)


def test_older_release_flag_names() -> None:
    # SGLang 0.3.0 registers --tensor-parallel-size first, --tp-size as its alias (server_args.py:301)
    p = parse_launch_command(f"{SG} --tp 2", engine_version="0.3.0")
    assert p.fields["tp"] == 2 and not p.refusals


def test_cli_assumption_names_the_release(tmp_path) -> None:
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    cmd = ["docker", "run", "lmsysorg/sglang:v0.4.6.post1-cu124", *SG.split()]
    res = CliRunner().invoke(app, ["fit", "-g", "h100-sxm", "--format", "json", "--", *cmd])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (
        "launch command read with SGLang 0.4.6.post1's flags (image tag lmsysorg/sglang:v0.4.6.post1-cu124)"
        in out["assumptions"]
    )
    assert any("0.4.6.post1" in a and "sizing rules" in a for a in out["assumptions"])


def test_out_of_choices_is_a_refusal_of_that_release() -> None:
    # SGLang 0.4.6.post1 server_args.py:489-492: --kv-cache-dtype choices=["auto", "fp8_e5m2", "fp8_e4m3"]
    p = parse_launch_command(f"{SG} --kv-cache-dtype fp8_e5m2", engine_version="0.4.6.post1")
    assert not p.refusals
    # a flag that is no kvplan field: sglang-0.4.6.post1 --tokenizer-mode choices=["auto", "slow"]
    p = parse_launch_command(f"{SG} --tokenizer-mode fast", engine_version="0.4.6.post1")
    assert p.refusals == ("argument --tokenizer-mode: invalid choice: 'fast' (choose from 'auto', 'slow')",)


def test_parser_refusals_are_the_verdict() -> None:
    """A flag the release's parser refuses: the engine does not start, so fits is false with that reason first."""
    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    p = parse_launch_command(f"{SG} --mem_fraction_static 0.95")
    dep = Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm")
    ok = fit(dep)
    refused = fit(dep, refusals=p.refusals)
    assert ok.fits and not refused.fits and not refused.meets_target
    assert refused.reasons[0] == (
        "the engine refuses to start: unrecognised argument --mem_fraction_static (did you mean --mem-fraction-static?)"
    )
    assert refused.verdict == "does not fit: " + refused.reasons[0]


#: the SGLang cookbook's Qwen3.6-35B-A3B launch (sgl-project/sgl-cookbook docs/autoregressive/Qwen/Qwen3.6.md,
#: "Model Invocation", H200, all features enabled)
COOKBOOK_QWEN36_EAGLE = """SGLANG_ENABLE_SPEC_V2=1 sglang serve \\
  --model-path Qwen/Qwen3.6-35B-A3B-FP8 \\
  --reasoning-parser qwen3 \\
  --tool-call-parser qwen3_coder \\
  --speculative-algorithm EAGLE \\
  --speculative-num-steps 3 \\
  --speculative-eagle-topk 1 \\
  --speculative-num-draft-tokens 4 \\
  --mem-fraction-static 0.8 \\
  --host 0.0.0.0 \\
  --port 30000
"""


def test_the_cookbook_qwen36_eagle_launch_reads() -> None:
    p = parse_launch_command(COOKBOOK_QWEN36_EAGLE)
    assert not p.refusals and not p.unknown
    assert p.fields == {
        "engine": "sglang",
        "model": "Qwen/Qwen3.6-35B-A3B-FP8",
        "speculative_algorithm": "EAGLE",
        "speculative_num_draft_tokens": 4,
        "mem_fraction_static": 0.8,
    }
    assert p.env["SGLANG_ENABLE_SPEC_V2"] == "1"


def test_the_cookbook_qwen36_eagle_launch_starts() -> None:
    """SGLang 0.5.23 sets an unset request cap to 48 for EAGLE before the Mamba state pool is sized, so the cookbook
    command (no --max-running-requests) starts."""
    from kvplan.engines.sglang import speculative
    from kvplan.family import Family

    if Family.HYBRID_MAMBA not in speculative.FAMILY_RULES:
        pytest.skip("needs /work/patches/hardening-mamba-eagle.patch (EAGLE's 48-request default on Mamba hybrids)")
    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    r = fit(Deployment(**{**parse_launch_command(COOKBOOK_QWEN36_EAGLE).fields, "gpu": "h200"}))
    assert r.fits and r.max_running_requests == 48
