"""The command-line contract: flags, JSON keys, exit codes, one-line errors (typer's CliRunner)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.result import CONTRACT_KEYS

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def fit_json(*args: str) -> dict:
    res = run("fit", *args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def one_line_error(res, code: int = 2) -> str:
    assert res.exit_code == code, (res.exit_code, res.output)
    err = res.stderr.strip()
    assert "Traceback" not in res.output and "\n" not in err, err
    assert err.startswith("kvplan: error:"), err
    return err


# --------------------------------------------------------------------------- the default deployment


def test_default_plan_is_the_project_deployment():
    d = fit_json()
    assert set(CONTRACT_KEYS) <= set(d)
    assert d["model"] == "deepseek-ai/DeepSeek-V4.1-Flash" and d["engine"] == "sglang"
    assert (d["tp"], d["ep"], d["dp"], d["num_gpus"]) == (8, 8, 1, 8)
    assert d["kv_cache_dtype"] == "fp8_e4m3" and d["context_length"] == 1_048_576
    assert d["mem_fraction_static"] == 0.72 and d["max_running_requests"] == 16
    assert d["page_size"] == 256 and d["chunked_prefill_size"] == 2048
    # SGLang 0.5.23 on SM120: V4 rows, (585 + 68) + 3 x (585 + 68) / 2 = 1,632.5 B per full token
    assert d["kv_bytes_per_token"] == 1632.5
    assert d["kv_pool_tokens"] % 256 == 0
    # the published record's basis is shown beside it, on the same budget
    bases = {b["kv_bytes_per_token"]: b for b in d["bases"]}
    assert set(bases) == {35_136, 70_272}
    for b, basis in bases.items():  # same budget, no fixed pools, same 256-token pages
        assert basis["kv_pool_tokens"] == d["kv_budget_bytes"] // b // 256 * 256
    assert bases[35_136]["kv_pool_tokens"] < d["kv_pool_tokens"] / 15
    names = [m["name"] for m in d["memory"]]
    assert names[:3] == ["runtime overhead", "weights", "KV pool"] and "fixed pools" in names
    assert sum(m["bytes"] for m in d["memory"]) == pytest.approx(d["device_bytes"], rel=1e-6)


def test_default_deployment_flags_can_be_changed_one_by_one():
    base = fit_json()
    more = fit_json("--mem-fraction-static", "0.80")
    assert more["kv_pool_tokens"] > base["kv_pool_tokens"]
    host = fit_json("--engram-on-host")
    assert host["weight_bytes"] < base["weight_bytes"] and host["kv_pool_tokens"] > base["kv_pool_tokens"]


def test_measured_mode_uses_the_given_memory():
    # sglang docs log: Load weight begin 78.81 GB, end 63.72 GB (GiB), mfs 0.88 -> 444,500 tokens printed
    d = fit_json(
        "-m",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--mem-fraction-static",
        "0.88",
        "--free-memory",
        "78.81GiB",
        "--weight-memory",
        "15.09GiB",
    )
    assert d["mode"] == "measured" and d["kv_bytes_per_token"] == 131_072
    assert abs(d["kv_pool_tokens"] - 444_500) / 444_500 < 0.001


def test_vllm_spelling_aliases():
    a = fit_json(
        "-m",
        "Qwen/Qwen3-32B",
        "-g",
        "h100-sxm",
        "--tp-size",
        "2",
        "--context-length",
        "32768",
        "--max-running-requests",
        "64",
    )
    b = fit_json(
        "-m",
        "Qwen/Qwen3-32B",
        "-g",
        "h100-sxm",
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "32k",
        "--max-num-seqs",
        "64",
    )
    assert a == b


def test_side_by_side_engines_json_is_a_list():
    res = run(
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
        "json",
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["engine"] for r in rows] == ["sglang", "vllm"]


def test_csv_has_the_contract_columns():
    res = run("fit", "--format", "csv")
    assert res.exit_code == 0
    header = res.stdout.splitlines()[0].split(",")
    assert header[: len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)


def test_check_exits_3_when_the_target_does_not_fit():
    """--check fails on the target the user set (``meets_target``; before the planner has that key, ``fits``)."""
    d = fit_json("--requests", "16")  # 16 x 1M tokens at once do not fit by default
    met = d.get("meets_target", d["fits"])
    assert met is False
    res = run("fit", "--check", "--requests", "16", "--format", "json")
    assert res.exit_code == 3
    assert "Traceback" not in res.output and res.stderr.startswith("kvplan: ")
    ok = run("fit", "--check", "--requests", "1", "--format", "json")
    assert ok.exit_code == 0


def test_check_reads_meets_target_then_fits():
    from types import SimpleNamespace

    from kvplan.cli.app import _missed_target

    def res(**kw):
        return SimpleNamespace(**{"fits": True, "verdict": "v", **kw})

    assert _missed_target(res()) == ""  # no target key yet: fits decides
    assert _missed_target(res(fits=False, verdict="does not fit: x")) == "does not fit: x"
    assert _missed_target(res(meets_target=True, target="4 x 1M")) == ""
    assert _missed_target(res(meets_target=False, target="16 x 1M")) == "target not met: 16 x 1M; v"
    assert _missed_target(res(fits=False, meets_target=True, verdict="does not fit: y")) == "does not fit: y"


def test_config_json_path_and_model_folder(tmp_path):
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "intermediate_size": 14336,
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 16_060_522_496}}))
    d = fit_json("-m", str(tmp_path / "config.json"), "-g", "h100-sxm")
    assert d["kv_bytes_per_token"] == 131_072
    d2 = fit_json("-m", str(tmp_path), "-g", "h100-sxm", "--engine", "vllm")
    # checkpoint total_size at TP1 (vLLM on CUDA: torch's allocated bytes) + the rotary cos/sin cache vLLM builds on
    # the GPU at load: 131,072 positions x 128 x 2 B = 33,554,432 (kvplan.weights.rope)
    assert d2["weight_bytes"] == 16_060_522_496 + 33_554_432
    d3 = fit_json("-m", str(tmp_path), "-g", "h100-sxm")
    # SGLang's figure is device-level: the checkpoint plus the caching allocator's segment tails (kvplan.weights.allocator)
    assert 16_060_522_496 < d3["weight_bytes"] < 16_060_522_496 + 4 * 2**20


# --------------------------------------------------------------------------- bad input: exit 2, one line


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--tpp", "8"], "--tpp"),  # a typo in a flag
        (["--tp", "x"], "--tp"),
        (["--tp", "0"], "--tp-size"),
        (["--mem-fraction-static", "1.5"], "--mem-fraction-static"),
        (["--mem-fraction-static", "nan"], "--mem-fraction-static"),
        (["--mem-fraction-static", "0"], "--mem-fraction-static"),
        (["--kv-cache-dtype", "fp9"], "--kv-cache-dtype"),
        (["--gpu-memory", "lots"], "--gpu-memory"),
        (["--gpu-memory", "-5GiB"], "--gpu-memory"),
        (["--gpu-memory", "80XB"], "--gpu-memory"),
        (["--free-memory", "1e30GiB"], "--free-memory"),
        (["-m", "deepseek-v9"], "--model"),
        (["-g", "h1000"], "--gpu"),
        (["--context-length", "abc"], "--context-length"),
        (["--engine", "trt"], "--engine"),
        (["--num-gpus", "2"], "--num-gpus"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle):
    err = one_line_error(run("fit", *args, "--format", "json"))
    assert needle in err


def test_unknown_model_suggests_close_matches():
    err = one_line_error(run("fit", "-m", "deepseek-ai/DeepSeek-V3x"))
    assert "did you mean" in err and "deepseek-ai/DeepSeek-V3" in err


def test_malformed_and_partial_config(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "--model" in one_line_error(run("fit", "-m", str(bad), "-g", "h100-sxm"))
    part = tmp_path / "partial.json"
    part.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 4}))
    err = one_line_error(run("fit", "-m", str(part), "-g", "h100-sxm"))
    assert "num_attention_heads" in err or "hidden_size" in err
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2]")
    one_line_error(run("fit", "-m", str(lst), "-g", "h100-sxm"))


def test_heads_the_engine_cannot_split(tmp_path):
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": 2,
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_key_value_heads": 12,
        "max_position_embeddings": 4096,
        "vocab_size": 32000,
        "intermediate_size": 3072,
    }
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cfg))
    err = one_line_error(run("fit", "-m", str(p), "-g", "h100-sxm", "--tp", "8"))
    assert "head" in err


def test_help_and_listing_commands():
    assert run("fit", "--help").exit_code == 0
    assert "--mem-fraction-static" in run("fit", "--help").stdout
    for cmd in ("models", "gpus"):
        res = run(cmd, "--format", "json")
        assert res.exit_code == 0 and len(json.loads(res.stdout)) > 10
    res = run("show", "deepseek-ai/DeepSeek-V3", "--format", "json")
    assert res.exit_code == 0
    rows = json.loads(res.stdout)["rows"]
    assert {r["bytes_per_token"] for r in rows} == {35_136, 70_272}


# --------------------------------------------------------------------------- golden tables


def _golden_names():
    from tests.golden_views import GOLDENS

    return sorted(GOLDENS)


@pytest.mark.parametrize("name", _golden_names())
def test_golden_tables(name):
    """The table views on fixed-width consoles (80, 100 and 120 columns: tests/golden/*.txt, tests/golden_views.py).

    The test never writes the files: after an intended change, refresh them by hand with
    ``python scripts/refresh_goldens.py NAME``.
    """
    from tests import golden_views

    golden = golden_views.GOLDEN_DIR / name
    if not golden.is_file():
        pytest.fail(f"{golden} is missing (the test never writes it): run python scripts/refresh_goldens.py")
    text = golden_views.GOLDENS[name]()
    assert text == golden.read_text()


def test_golden_table_default():
    """The default deployment's table at 100 columns (tests/golden/default_fit.txt)."""
    test_golden_tables("default_fit.txt")


def test_golden_test_never_writes_its_file(tmp_path, monkeypatch):
    """A missing golden fails the test and stays missing (scripts/refresh_goldens.py writes goldens)."""
    import tests.golden_views

    monkeypatch.setattr(tests.golden_views, "GOLDEN_DIR", tmp_path)
    with pytest.raises(pytest.fail.Exception, match="never writes"):
        test_golden_table_default()
    assert list(tmp_path.iterdir()) == []


def test_goldens_are_the_widths_their_names_say():
    from tests.golden_views import GOLDEN_DIR, GOLDENS

    for name in GOLDENS:
        width = int(name.rsplit("_", 1)[1].split(".")[0]) if name[-6:-4].isdigit() else 100
        lines = (GOLDEN_DIR / name).read_text().splitlines()
        assert max(len(line) for line in lines) <= width, name
        assert all(line == line.rstrip() for line in lines), f"{name}: trailing spaces"


def test_the_console_script_path_runs_models_add_and_the_version_flag():
    """``main()`` builds a one-command app (kvplan.cli.app._single_command_app): ``models`` is a group there too."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out = subprocess.run(
        [sys.executable, "-m", "kvplan", "models", "add", "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0 and "CONFIG" in out.stdout, out.stderr
    ver = subprocess.run([sys.executable, "-m", "kvplan", "-V"], capture_output=True, text=True, env=env, timeout=60)
    assert ver.returncode == 0 and ver.stdout.startswith("kvplan ") and len(ver.stdout.splitlines()) == 1


# --------------------------------------------------------------------------- the console entry's fast paths


def _console(args: list[str], tmp_path, **env: str):
    """Run the console entry (``kvplan.cli.app.main``) in a fresh process: (stdout, modules loaded at exit)."""
    from tests.cli_run import console_modules

    return console_modules(
        args, listing=tmp_path / "modules.txt", env={"KVPLAN_CACHE_DIR": str(tmp_path / "cache"), **env}
    )


def test_version_flag_prints_the_version_line_without_building_a_command(tmp_path):
    from kvplan.cli.app import version_line

    for flag in ("--version", "-V"):
        out, mods = _console([flag], tmp_path)
        assert out == version_line() + "\n"
        assert "kvplan.cli.plan_cmds" not in mods and "kvplan.cli.calibrate_cmd" not in mods
    assert run("--version").stdout == version_line() + "\n"  # the whole CLI's eager option says the same


@pytest.mark.parametrize(
    ("env", "command"),
    [
        ({"_KVPLAN_COMPLETE": "complete_bash", "COMP_WORDS": "kvplan fit --kv", "COMP_CWORD": "2"}, "fit"),
        ({"_KVPLAN_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "kvplan fit --kv"}, "fit"),
        ({"_KVPLAN_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "kvplan gpus "}, "gpus"),
        ({"_KVPLAN_COMPLETE": "complete_bash", "COMP_WORDS": "kvplan sweep --tp", "COMP_CWORD": "2"}, "sweep"),
        ({"_KVPLAN_COMPLETE": "complete_bash", "COMP_WORDS": "kvplan fi", "COMP_CWORD": "1"}, None),
    ],
)
def test_completion_inside_a_command_builds_only_that_command(tmp_path, monkeypatch, env, command):
    """A shell-completion request inside a command (``kvplan fit --kv<TAB>``) is answered by the one-command app, with
    the same words as the whole CLI; completing a command's name needs (and builds) the whole CLI."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from kvplan.cli.app import _completing_command

    out, mods = _console([], tmp_path, **env)
    full_env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "KVPLAN_CACHE_DIR": str(tmp_path / "cache"),
        **env,
    }
    whole = subprocess.run(
        [sys.executable, "-c", "from kvplan.cli.app import _full_app; _full_app()()"],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    ).stdout
    assert out == whole and out.strip()
    for k in ("COMP_WORDS", "COMP_CWORD", "_TYPER_COMPLETE_ARGS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _completing_command() == command
    if command in ("fit", "gpus"):
        assert "kvplan.cli.plan_cmds" not in mods  # sweep / solve / check were not built
