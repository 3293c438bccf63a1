"""Hardening of the preset reader and of the CLI's error lines (issue 15, part 3).

* every preset file (shipped or user) is read by the one bounded reader: a FIFO, a device or an oversized file is
  exit 2 naming the file, never a hang or an OOM;
* numbers: an integer over Python's 4,300-digit limit (tomllib raises a plain ValueError), over 40 digits, inf,
  nan or 1e400 anywhere in a preset is exit 2 naming the file (and the key when the document parsed);
* nesting: arrays or tables deeper than MAX_PRESET_DEPTH are exit 2 (tomllib recurses; ``[a.a.a...]`` does not);
* ``model_file_for`` never raises for a NUL-holding or very long ``-m`` text;
* the validated cache of a shipped file follows its content (an edit in place of the same size and mtime);
* error lines: an internal error never echoes a token or ``user:pass@`` and is cut; click's usage lines cut the
  input they repeat; control characters are escaped;
* ``kvplan calibrate --check`` keeps exit 3 when the reader closes the pipe;
* ``kvplan models / gpus --format table`` with non-ASCII preset data on an ASCII terminal.

Every input is fixed (no randomness); sizes bound the work, not seconds.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from tests.cli_run import closed_stdout as _closed_stdout
from tests.cli_run import run_kvplan as _kvplan

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_GPU = ROOT / "configs" / "hardware" / "h100-sxm.toml"
LOG = ROOT / "tests" / "validation" / "logs" / "qwq-32b-4xL4-tp4.log"
runner = CliRunner()

GPU_TOML = """\
id = "my-gpu"
name = "ACME Tensor 9000"
memory_mib = 65536
source = "our lab's nvidia-smi"
"""


def _one_line(res, code: int = 2) -> str:
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    assert "Traceback" not in res.output and "\n" not in err, err
    return err


# ------------------------------------------------------------------------------------------ bounded reads


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("where", ["user", "shipped"])
def test_a_fifo_named_like_a_preset_is_exit_2_not_a_hang(tmp_path, where):
    """A FIFO nobody writes to would block ``open()`` forever; the bounded reader refuses it from stat."""
    if where == "user":
        folder, env = tmp_path / "presets", {"KVPLAN_PRESETS": str(tmp_path / "presets")}
        (folder / "hardware").mkdir(parents=True)
    else:
        folder, env = tmp_path / "configs", {"KVPLAN_CONFIGS": str(tmp_path / "configs"), "KVPLAN_PRESETS": ""}
        shutil.copytree(ROOT / "configs", folder)
    os.mkfifo(folder / "hardware" / "zz-fifo.toml")
    proc = _kvplan(
        ["gpus", "--format", "json"],
        env={**env, "KVPLAN_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "zz-fifo.toml" in proc.stderr and "FIFO" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_oversized_preset_is_refused_from_its_size(user_dir):
    big = user_dir / "hardware" / "big.toml"
    with big.open("wb") as fh:  # sparse: no bytes written, the size alone refuses it
        fh.truncate(50 * p.MAX_PRESET_BYTES)
    with pytest.raises(InputError, match=r"big\.toml is 50\.0 MiB, larger than the 1\.0 MiB limit"):
        p.all_gpus()


def test_a_folder_named_like_a_preset_is_exit_2(user_dir):
    (user_dir / "hardware" / "odd.toml").mkdir()
    with pytest.raises(InputError, match=r"odd\.toml is a folder, not a file"):
        p.all_gpus()


# ------------------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        ("bits = " + "9" * 5000, "an integer of more than 40 digits"),  # tomllib: ValueError, not TOMLDecodeError
        ("bits = -" + "9" * 4301, "an integer of more than 40 digits"),
        ("bits = " + "9" * 41, "bits: an integer of more than 40 digits"),  # parsed: the key is named
        ("bits = inf", "bits: inf is not a number"),
        ("bits = -inf", "bits: -inf is not a number"),
        ("bits = nan", "bits: nan is not a number"),
        ("bits = 1e400", "bits: inf is not a number"),
        ("bits = [1, 2, 1e999]", "bits[2]: inf is not a number"),
    ],
)
def test_impossible_numbers_in_a_user_preset_are_exit_2_naming_the_file(user_dir, line, expect):
    path = user_dir / "hardware" / "my-gpu.toml"
    path.write_text(GPU_TOML + "\n[extra]\n" + line + "\n")
    for args in (["gpus", "--format", "json"], ["fit", "-m", "qwen3-8b", "-g", "my-gpu", "--format", "json"]):
        err = _one_line(runner.invoke(cli_app.app, args))
        assert str(path) in err and expect in err, err
        assert len(err) < 400, err  # the digits are never echoed
        p.clear_caches()


def test_an_impossible_number_in_a_config_key_names_the_key(user_dir):
    path = user_dir / "models" / "me--m.toml"
    text = (
        (ROOT / "configs" / "models" / "Qwen--Qwen3-8B.toml")
        .read_text()
        .replace('id = "Qwen/Qwen3-8B"', 'id = "me/m"', 1)
    )
    path.write_text(text.replace("num_hidden_layers = 36", "num_hidden_layers = nan", 1))
    with pytest.raises(InputError, match=r"me--m\.toml: config\.num_hidden_layers: nan is not a number"):
        p.all_models()


def test_the_same_numbers_in_a_shipped_preset_name_the_file(tmp_path, monkeypatch):
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    monkeypatch.setenv("KVPLAN_CONFIGS", str(configs))
    monkeypatch.setenv("KVPLAN_PRESETS", "")
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    gpu = configs / "hardware" / "h100-sxm.toml"
    gpu.write_text(gpu.read_text().replace("memory_mib = 81559", "memory_mib = " + "8" * 4400, 1))
    p.clear_caches()
    try:
        with pytest.raises(InputError, match=r"^h100-sxm\.toml: holds an integer of more than 40 digits"):
            p.all_gpus()
    finally:
        p.clear_caches()


# ------------------------------------------------------------------------------------------ nesting


@pytest.mark.parametrize(
    "text",
    [
        "deep = " + "[" * 3000 + "]" * 3000,  # tomllib recursion: RecursionError
        "deep = " + "[" * 40 + "]" * 40,  # parses; deeper than MAX_PRESET_DEPTH
        "[" + ".".join(["a"] * 20000) + "]\nx = 1",  # a dotted header builds any depth without recursion
    ],
)
def test_deep_nesting_is_exit_2(user_dir, text):
    (user_dir / "hardware" / "my-gpu.toml").write_text(GPU_TOML + text + "\n")
    err = _one_line(runner.invoke(cli_app.app, ["gpus", "--format", "json"]))
    assert "my-gpu.toml" in err and f"nested more than {p.MAX_PRESET_DEPTH} levels deep" in err, err


def test_shipped_presets_are_well_within_the_depth_limit():
    """The deepest shipped preset nests 9 levels (a Laguna config); the limit leaves room for deeper configs."""
    assert p.MAX_PRESET_DEPTH >= 2 * 12
    for path in sorted((ROOT / "configs").glob("*/*.toml")):
        assert not p._deeper_than(p._parse_toml(path.name, path.read_bytes()), 12), path


# ------------------------------------------------------------------------------------------ model_file_for


@pytest.mark.parametrize("text", ["a\0b/c", "x" * 10_000, "a" * 200 + "/" + "b" * 200, "/".join(["ab" * 100] * 30)])
def test_model_file_for_never_raises(user_dir, text):
    path = p.model_file_for(text)
    assert isinstance(path, Path) and path.parent == p.configs_dir() / "models"
    res = runner.invoke(cli_app.app, ["fit", "-m", text, "-g", "h100-sxm", "--format", "json"])
    err = _one_line(res)
    assert "--model" in err and len(err) < 600, err


# ------------------------------------------------------------------------------------------ the validated cache


def test_an_edited_shipped_file_is_never_served_stale(tmp_path, monkeypatch):
    """Same size, same mtime, other content: the ident holds the content hash, so it is a miss."""
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    monkeypatch.setenv("KVPLAN_CONFIGS", str(configs))
    monkeypatch.setenv("KVPLAN_PRESETS", "")
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    gpu = configs / "hardware" / "h100-sxm.toml"
    assert p._is_shipped(gpu)
    assert p.load_hardware_file(gpu).memory_mib == 81559
    assert p.load_hardware_file(gpu).memory_mib == 81559  # a cache hit
    st = gpu.stat()
    gpu.write_text(gpu.read_text().replace("memory_mib = 81559", "memory_mib = 81558", 1))
    os.utime(gpu, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert gpu.stat().st_size == st.st_size and gpu.stat().st_mtime_ns == st.st_mtime_ns
    assert p.load_hardware_file(gpu).memory_mib == 81558
    p.clear_caches()
    assert next(g for g in p.all_gpus() if g.id == "h100-sxm").memory_mib == 81558
    p.clear_caches()


def test_shipped_presets_load_the_same_with_and_without_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_PRESETS", "")
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    for path in sorted((p.configs_dir() / "hardware").glob("*.toml"))[:10]:
        fresh = p.load_hardware_file(path, use_cache=False)
        for _ in range(2):  # a miss that stores, then a hit
            assert vars(p.load_hardware_file(path)) == vars(fresh)


# ------------------------------------------------------------------------------------------ quant names


def test_awq_gptq_methods_are_public_and_known():
    from kvplan.hfconfig.checks import KNOWN_QUANT_METHODS
    from kvplan.hfconfig.quant import AWQ_GPTQ_METHODS

    assert "awq" in AWQ_GPTQ_METHODS and "gptq_marlin" in AWQ_GPTQ_METHODS
    assert set(AWQ_GPTQ_METHODS) <= KNOWN_QUANT_METHODS


# ------------------------------------------------------------------------------------------ error lines

_SECRET_URL = "https://alice:s3cr3t-pw@hub.example.org/api"
_TOKEN = "hf_" + "A1b2C3d4" * 4


def test_an_internal_error_masks_secrets_and_cuts_input(monkeypatch):
    import kvplan.planning.plan as plan

    def boom(dep, **_kw):
        raise RuntimeError(f"fetch {_SECRET_URL} with {_TOKEN}\x1b[31m failed: " + "9" * 50_000 + " tail")

    monkeypatch.setattr(plan, "fit", boom)
    res = runner.invoke(cli_app.app, ["fit", "-m", "qwen3-8b", "-g", "h100-sxm", "--format", "json"])
    err = _one_line(res, 1)
    assert err.startswith("kvplan: internal error: RuntimeError: fetch https://***@hub.example.org/api"), err
    assert "s3cr3t" not in err and "alice" not in err and _TOKEN not in err and "hf_***" in err
    assert "\x1b" not in err and "\\x1b[31m failed" in err, err
    assert "9" * 80 + "... (50,000 characters) tail" in err and len(err) < 400, err


def test_safe_line_examples():
    line = cli_app.safe_line("Invalid value for '--tp': '" + "9" * 5000 + "' is not a valid integer.")
    assert line == "Invalid value for '--tp': '" + "9" * 80 + "... (5,000 characters)' is not a valid integer."
    assert cli_app.safe_line("cannot reach https://me:pw@hub (refused)") == "cannot reach https://***@hub (refused)"
    assert cli_app.safe_line("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07"
    cut = cli_app.safe_line("x https://" + "u" * 300 + ":" + "p" * 300 + "@host y")  # masked before any cut
    assert "p" * 10 not in cut and "u" * 10 not in cut, cut
    assert len(cli_app.safe_line("w " * 5000)) <= 1000 + 30
    assert cli_app.safe_line("w " * 5000, cut_input=False).endswith("(9,999 characters)")


@pytest.mark.parametrize(
    "args",
    [
        ["version", "x" * 20_000],
        ["models", "--family", "y" * 20_000],
        ["fit", "--engine", "e" * 20_000],
        ["calibrate", "-", "--tolerance", "9" * 20_000],
        ["calibrate", "-", "--format", "f" * 20_000],
        ["fit", "--tp", "9" * 20_000, "-m", "qwen3-8b", "-g", "h100-sxm"],
        ["fit", "--no-such-" + "z" * 20_000],
    ],
)
def test_error_lines_cut_the_input_they_repeat(args):
    err = _one_line(runner.invoke(cli_app.app, args))
    assert err.startswith("kvplan: error: ") and len(err) < 600, err


def test_a_kvplan_error_line_escapes_control_characters(user_dir):
    (user_dir / "hardware" / "my-gpu.toml").write_text(GPU_TOML)
    err = _one_line(runner.invoke(cli_app.app, ["fit", "-m", "qwen3-8b", "-g", "\x1b[2Jnope", "--format", "json"]))
    assert "\x1b" not in err and "nope" in err, err


# ------------------------------------------------------------------------------------------ calibrate --check


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_calibrate_check_keeps_exit_3_when_the_reader_closes_the_pipe(fmt):
    bad = ["calibrate", str(LOG), "--check", "--mem-fraction-static", "0.5", "--format", fmt]
    proc = _closed_stdout(bad)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("kvplan: log and prediction disagree: ") and "Traceback" not in proc.stderr
    good = _closed_stdout(["calibrate", str(LOG), "--check", "--format", fmt])
    assert (good.returncode, good.stderr) == (0, "")


def test_calibrate_check_message_and_exit_code_are_unchanged():
    res = runner.invoke(
        cli_app.app, ["calibrate", str(LOG), "--check", "--mem-fraction-static", "0.5", "--format", "json"]
    )
    assert res.exit_code == 3 and res.stderr.startswith("kvplan: log and prediction disagree: pool tokens")
    assert res.stdout.lstrip().startswith("{")


# ------------------------------------------------------------------------------------------ ASCII terminals


@pytest.mark.parametrize(
    "env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}]
)
def test_listings_with_non_ascii_preset_data_on_an_ascii_terminal(tmp_path, shipped_cache, env):
    d = tmp_path / "presets"
    (d / "hardware").mkdir(parents=True)
    (d / "hardware" / "u.toml").write_text(
        GPU_TOML.replace("my-gpu", "my-gpü").replace("ACME Tensor 9000", "Ünïcode GPU ✓ 模型"), encoding="utf-8"
    )
    env = {**env, "KVPLAN_PRESETS": str(d), "KVPLAN_CACHE_DIR": str(shipped_cache)}
    for args in (["gpus", "--format", "table"], ["models", "--format", "table"], ["gpus", "--format", "json"]):
        proc = _kvplan(args, env=env, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert b"Traceback" not in proc.stderr
        proc.stdout.decode("ascii")
