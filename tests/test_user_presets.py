"""User presets (docs/presets.md "Your own presets"): files in $KVPLAN_PRESETS or $XDG_CONFIG_HOME/kvplan, validated
like the shipped ones, winning over a shipped preset of the same id; ``kvplan models add``; the listing and filter
helpers the ``models`` / ``gpus`` views use; the validated cache keyed by path and content.

Every test works in tmp folders through the environment (monkeypatch); the real ~/.config is never read or written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import InputError
from kvplan.family import Family
from kvplan.inputs import presets as p
from kvplan.inputs.resolve import resolve_gpu, resolve_model

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"
SHIPPED_MODEL = ROOT / "configs" / "models" / "Qwen--Qwen3-8B.toml"
SHIPPED_GPU = ROOT / "configs" / "hardware" / "h100-sxm.toml"

runner = CliRunner()

GPU_TOML = """\
id = "my-gpu"
name = "ACME Tensor 9000"
aliases = ["tensor9000"]
memory_mib = 65536  # MiB, our nvidia-smi
source = "our lab's nvidia-smi"
sm = "9.0"
fp8 = true
"""


def _model_toml(model_id: str, *, layers: int = 36, aliases: tuple[str, ...] = ()) -> str:
    """The shipped Qwen3-8B preset text with another id, aliases and layer count (a realistic user file)."""
    out = []
    for line in SHIPPED_MODEL.read_text().splitlines():
        if line.startswith("id = "):
            line = f'id = "{model_id}"'
        elif line.startswith("aliases = "):
            line = "aliases = " + json.dumps(list(aliases))
        elif line.startswith("num_hidden_layers = "):
            line = f"num_hidden_layers = {layers}  # layers; edited"
        out.append(line)
    return "\n".join(out) + "\n"


def run(*args: str):
    return runner.invoke(cli_app.app, list(args))


def one_line_error(res) -> str:
    assert res.exit_code == 2, (res.exit_code, res.output)
    err = res.stderr.strip()
    assert "Traceback" not in res.output and "\n" not in err, err
    assert err.startswith("kvplan: error:"), err
    return err


# ----------------------------------------------------------------------------------------- where they live


def test_user_dirs_from_the_environment(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("KVPLAN_PRESETS", os.pathsep.join([str(a), "", str(b)]))
    assert p.user_dirs() == (a, b)
    assert p.user_models_dir() == a / "models"
    monkeypatch.setenv("KVPLAN_PRESETS", "")  # set but empty: no user presets
    assert p.user_dirs() == ()
    with pytest.raises(InputError, match="KVPLAN_PRESETS"):
        p.user_models_dir()
    monkeypatch.delenv("KVPLAN_PRESETS")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert p.user_dirs() == (tmp_path / "xdg" / "kvplan",)
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")  # the XDG spec: a relative path is ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert p.user_dirs() == (tmp_path / "home" / ".config" / "kvplan",)


def test_xdg_folder_is_read(tmp_path, monkeypatch):
    monkeypatch.delenv("KVPLAN_PRESETS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "kvplan" / "hardware").mkdir(parents=True)
    (tmp_path / "kvplan" / "hardware" / "my-gpu.toml").write_text(GPU_TOML)
    p.clear_caches()
    assert resolve_gpu("ACME Tensor 9000").memory_mib == 65536
    p.clear_caches()


# ------------------------------------------------------------------------------------ found and validated


def test_user_model_preset_is_found(user_dir):
    (user_dir / "models" / "me--qwen-ft.toml").write_text(_model_toml("me/qwen-ft", layers=30, aliases=("qft",)))
    entry = next(e for e in p.model_entries() if e.id == "me/qwen-ft")
    assert (entry.origin, entry.path, entry.shadows) == ("user", user_dir / "models" / "me--qwen-ft.toml", None)
    assert p.model_entries()[0] is entry  # user presets come first, so their names win
    assert p.preset_origin(entry.preset) == "user"
    assert p.preset_origin(next(m for m in p.all_models() if m.id == "Qwen/Qwen3-8B")) == "shipped"
    for name in ("me/qwen-ft", "qft", "ME/Qwen-FT"):
        spec = resolve_model(name)
        assert (spec.id, spec.num_layers, spec.preset_id) == ("me/qwen-ft", 30, "me/qwen-ft")
    assert len(p.all_models()) == len([e for e in p.model_entries() if e.origin == "shipped"]) + 1


def test_user_gpu_preset_is_found(user_dir):
    (user_dir / "hardware" / "my-gpu.toml").write_text(GPU_TOML)
    for name in ("my-gpu", "ACME Tensor 9000", "tensor9000"):
        assert resolve_gpu(name).memory_mib == 65536
    entry = next(e for e in p.gpu_entries() if e.id == "my-gpu")
    assert entry.origin == "user" and p.preset_origin(entry.preset) == "user"
    res = runner.invoke(cli_app.app, ["fit", "-m", "qwen3-8b", "-g", "tensor9000", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["gpu"] in ("my-gpu", "ACME Tensor 9000")


def test_listing_shows_user_presets(user_dir):
    (user_dir / "models" / "me--qwen-ft.toml").write_text(_model_toml("me/qwen-ft"))
    res = runner.invoke(cli_app.app, ["models", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "me/qwen-ft" in [row["id"] for row in json.loads(res.stdout)]


@pytest.mark.parametrize(
    ("kind", "name", "text", "expect"),
    [
        ("hardware", "bad.toml", GPU_TOML + "colour = 'red'\n", "unknown key 'colour'"),
        ("hardware", "bad.toml", GPU_TOML.replace("memory_mib = 65536", "memory_mib = -1"), "memory_mib"),
        ("hardware", "bad.toml", "id = [\n", "not valid TOML"),
        (
            "models",
            "bad.toml",
            _model_toml("me/bad").replace("\n[config]\n", "\n[config]\nnot_a_hf_field = 1\n"),
            "unknown key 'config.not_a_hf_field'",
        ),
        ("models", "bad.toml", 'id = "me/x"\nsource = "s"\n', "missing key 'config'"),
    ],
)
def test_bad_user_preset_is_exit_2_naming_the_file(user_dir, kind, name, text, expect):
    path = user_dir / kind / name
    path.write_text(text)
    for args in (
        ["fit", "-m", "qwen3-8b", "-g", "h100-sxm", "--format", "json"],
        ["models" if kind == "models" else "gpus", "--format", "json"],
    ):
        if kind == "models" and args[0] == "fit":
            args = ["fit", "-m", "no-such-preset-name", "-g", "h100-sxm", "--format", "json"]
        elif args[0] == "fit":  # a GPU given by its id reads only its own file; a name reads every GPU preset
            args = ["fit", "-m", "qwen3-8b", "-g", "NVIDIA H100 80GB HBM3", "--format", "json"]
        err = one_line_error(runner.invoke(cli_app.app, args))
        assert str(path) in err and expect in err, err
        p.clear_caches()


def test_oversized_or_binary_user_file_is_refused(user_dir):
    big = user_dir / "hardware" / "big.toml"
    big.write_bytes(b"#" * (p.MAX_USER_PRESET_BYTES + 1))
    with pytest.raises(InputError, match="larger than"):
        p.all_gpus()
    big.write_bytes(b"\xff\xfe id")
    p.clear_caches()
    with pytest.raises(InputError, match="not UTF-8"):
        p.all_gpus()


def test_two_files_with_one_id_in_a_folder_is_an_error(user_dir):
    (user_dir / "hardware" / "a.toml").write_text(GPU_TOML)
    (user_dir / "hardware" / "b.toml").write_text(GPU_TOML)
    with pytest.raises(InputError, match=r"b\.toml: id 'my-gpu' is also the id of .*a\.toml"):
        p.all_gpus()


# ------------------------------------------------------------------------------------------- shadowing


def test_user_preset_shadows_the_shipped_id(user_dir):
    shipped_layers = resolve_model("Qwen/Qwen3-8B").num_layers
    user_file = user_dir / "models" / "Qwen--Qwen3-8B.toml"
    user_file.write_text(_model_toml("Qwen/Qwen3-8B", layers=12, aliases=("my-qwen",)))
    p.clear_caches()
    assert p.model_file_for("Qwen/Qwen3-8B") == user_file
    assert resolve_model("Qwen/Qwen3-8B").num_layers == 12 != shipped_layers
    assert resolve_model("my-qwen").num_layers == 12
    entries = [e for e in p.model_entries() if e.id == "Qwen/Qwen3-8B"]
    assert len(entries) == 1  # one row per id in the listing, and it is the user's
    assert (entries[0].origin, entries[0].shadows) == ("user", SHIPPED_MODEL)
    # the shipped preset is replaced whole: its alias "qwen3-8b" is gone unless the user file lists it
    assert "qwen3-8b" not in [a for m in p.all_models() for a in m.aliases]


def test_earlier_user_folder_wins(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, mib in ((a, 1000), (b, 2000)):
        (d / "hardware").mkdir(parents=True)
        (d / "hardware" / "my-gpu.toml").write_text(GPU_TOML.replace("65536", str(mib)))
    monkeypatch.setenv("KVPLAN_PRESETS", os.pathsep.join([str(a), str(b)]))
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    p.clear_caches()
    assert resolve_gpu("my-gpu").memory_mib == 1000
    assert [e.path for e in p.gpu_entries() if e.id == "my-gpu"] == [a / "hardware" / "my-gpu.toml"]
    p.clear_caches()


def test_user_gpu_shadows_a_shipped_gpu(user_dir):
    (user_dir / "hardware" / "h100-sxm.toml").write_text(
        SHIPPED_GPU.read_text().replace("memory_mib = 81559", "memory_mib = 80000")
    )
    assert resolve_gpu("NVIDIA H100 80GB HBM3").memory_mib == 80000
    entry = next(e for e in p.gpu_entries() if e.id == "h100-sxm")
    assert (entry.origin, entry.shadows) == ("user", SHIPPED_GPU)


# ------------------------------------------------------------------------------------- the validated cache


def test_cache_picks_up_an_edit_of_the_same_size_and_mtime(user_dir, monkeypatch):
    path = user_dir / "hardware" / "my-gpu.toml"
    path.write_text(GPU_TOML)
    assert p.load_hardware_file(path).memory_mib == 65536
    calls = []
    real = p._validate
    # the loader calls its own module's _validate (kvplan/inputs/presets/loading.py since the package split)
    monkeypatch.setattr(p.loading, "_validate", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    assert p.load_hardware_file(path).memory_mib == 65536 and calls == []  # unchanged: a cache hit
    st = path.stat()
    path.write_text(GPU_TOML.replace("65536", "65537"))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert path.stat().st_size == st.st_size
    assert p.load_hardware_file(path).memory_mib == 65537 and calls == [str(path)]


def test_no_cache_mode_still_validates(user_dir, monkeypatch):
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    path = user_dir / "hardware" / "my-gpu.toml"
    path.write_text(GPU_TOML)
    assert p.load_hardware_file(path).memory_mib == 65536
    path.write_text(GPU_TOML + "bogus = 1\n")
    with pytest.raises(InputError, match="unknown key 'bogus'"):
        p.load_hardware_file(path)


# ------------------------------------------------------------------------------------------ models add


def test_models_add_writes_a_loadable_preset(user_dir):
    cfg = HF / "Qwen--Qwen3-8B" / "config.json"
    res = run("models", "add", str(cfg), "--id", "me/qwen3-8b-ft", "--alias", "qft", "--source", "our fine-tune")
    assert res.exit_code == 0, res.output
    path = Path(res.stdout.strip())
    assert path == user_dir / "models" / "me--qwen3-8b-ft.toml"
    preset = p.load_model_file(path, use_cache=False)
    assert (preset.id, preset.aliases, preset.source) == ("me/qwen3-8b-ft", ["qft"], "our fine-tune")
    hf = json.loads(cfg.read_text())
    spec = resolve_model("qft")
    assert (spec.num_layers, spec.num_kv_heads, spec.head_dim, spec.quantization) == (
        hf["num_hidden_layers"],
        hf["num_key_value_heads"],
        hf["head_dim"],
        "bf16",
    )
    fit = runner.invoke(cli_app.app, ["fit", "-m", "me/qwen3-8b-ft", "-g", "h100-sxm", "--format", "json"])
    assert fit.exit_code == 0, fit.output
    assert json.loads(fit.stdout)["model"] == "me/qwen3-8b-ft"


def test_models_add_refuses_to_overwrite(user_dir):
    cfg = str(HF / "Qwen--Qwen3-8B" / "config.json")
    assert run("models", "add", cfg, "--id", "me/q").exit_code == 0
    path = user_dir / "models" / "me--q.toml"
    before = path.read_text()
    err = one_line_error(run("models", "add", cfg, "--id", "me/q", "--quantization", "fp8"))
    assert "--force" in err and str(path) in err
    assert path.read_text() == before
    res = run("models", "add", cfg, "--id", "me/q", "--quantization", "fp8", "--force")
    assert res.exit_code == 0, res.output
    assert p.load_model_file(path, use_cache=False).weights.quantization == "fp8"
    assert [f.name for f in path.parent.iterdir()] == ["me--q.toml"]  # no temporary file left behind


def test_models_add_over_a_shipped_id_says_so(user_dir):
    res = run("models", "add", str(HF / "Qwen--Qwen3-8B"), "--id", "Qwen/Qwen3-8B")
    assert res.exit_code == 0, res.output
    assert "shipped preset Qwen--Qwen3-8B.toml" in res.stderr
    assert next(e for e in p.model_entries() if e.id == "Qwen/Qwen3-8B").origin == "user"


def test_models_add_reads_a_model_folder(user_dir, tmp_path):
    folder = tmp_path / "hub" / "models--acme--glm-copy" / "snapshots" / "abc123"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text((HF / "nvidia--GLM-5.2-NVFP4" / "config.json").read_text())
    (folder / "hf_quant_config.json").write_text((HF / "nvidia--GLM-5.2-NVFP4" / "hf_quant_config.json").read_text())
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 123_456_789_012}}))
    added = p.add_user_model(folder)  # the id comes from the Hugging Face cache folder name
    assert added.id == "acme/glm-copy" and added.shadows is None
    preset = p.load_model_file(added.path, use_cache=False)
    assert (preset.weights.quantization, preset.weights.checkpoint_bytes) == ("nvfp4", 123_456_789_012)
    assert resolve_model("acme/glm-copy").family == Family.DSA


@pytest.mark.parametrize(
    ("write", "args", "expect"),
    [
        ('{"num_hidden_layers": 2,', ["--id", "me/x"], "not valid JSON"),
        ('{"model_type": "llama", "hidden_size": 64}', ["--id", "me/x"], "num_hidden_layers"),
        (
            '{"num_hidden_layers": "two", "hidden_size": 64, "num_attention_heads": 4}',
            ["--id", "me/x"],
            "num_hidden_layers",
        ),
        (None, ["--id", "not an id"], "--id"),
        (None, [], "--id"),  # the shipped copy has no _name_or_path
        (None, ["--id", "me/x", "--quantization", "q3"], "--quantization"),
    ],
)
def test_models_add_bad_input_is_exit_2_naming_the_field(user_dir, tmp_path, write, args, expect):
    cfg = HF / "Qwen--Qwen3-8B" / "config.json"
    if write is not None:
        cfg = tmp_path / "config.json"
        cfg.write_text(write)
    err = one_line_error(run("models", "add", str(cfg), *args))
    assert expect in err, err
    assert list((user_dir / "models").iterdir()) == []


def test_models_add_missing_config(user_dir, tmp_path):
    err = one_line_error(run("models", "add", str(tmp_path / "nope.json"), "--id", "me/x"))
    assert "CONFIG" in err and "nope.json" in err
    (tmp_path / "empty").mkdir()
    assert "has no config.json" in one_line_error(run("models", "add", str(tmp_path / "empty"), "--id", "me/x"))


def test_models_group_still_lists(user_dir):
    res = run("models", "--format", "json")
    assert res.exit_code == 0, res.output
    assert any(row["id"] == "Qwen/Qwen3-8B" for row in json.loads(res.stdout))
    assert res.stdout == runner.invoke(cli_app.app, ["models", "--format", "json"]).stdout  # same as the command
    add = run("models", "add", str(HF / "Qwen--Qwen3-8B"), "--id", "me/x")
    assert add.exit_code == 0 and add.stdout.strip().endswith("me--x.toml")  # no listing before the path
    helptext = run("models", "--help").stdout
    assert "--format" in helptext and "add" in helptext
    assert "No such command" in one_line_error(run("models", "nope"))


# --------------------------------------------------------------------------------------------- filters


def test_filter_models_by_family_and_text(user_dir):
    mla = p.filter_models(family=Family.MLA)
    assert mla and all(p.model_family(m) is Family.MLA for m in mla)
    assert "deepseek-ai/DeepSeek-V3" in [m.id for m in mla]
    assert [m.id for m in p.filter_models(family="hybrid-swa")] == [
        m.id for m in p.filter_models(family=Family.HYBRID_SWA)
    ]
    hits = [m.id for m in p.filter_models(search="QWEN3-8")]
    assert "Qwen/Qwen3-8B" in hits and all("qwen3-8" in m.lower() for m in hits)
    by_variant = [m.id for m in p.filter_models(search="glm-5-fp8")]
    assert by_variant == ["zai-org/GLM-5"]  # a variant id finds its base preset
    # a quantized build that is a preset of its own (its own config.json) finds itself, not its base
    assert [m.id for m in p.filter_models(search="qwen3-32b-fp8")] == ["Qwen/Qwen3-32B-FP8"]
    assert p.filter_models(family=Family.GQA, search="deepseek-v3") == ()
    with pytest.raises(InputError, match="unknown family 'rwkv'") as exc:
        p.filter_models(family="rwkv")
    assert exc.value.one_line().startswith("--family:") and "hybrid_mamba" in exc.value.one_line()


def test_filter_gpus_by_text(user_dir):
    (user_dir / "hardware" / "my-gpu.toml").write_text(GPU_TOML)
    assert [g.id for g in p.filter_gpus(search="acme")] == ["my-gpu"]
    h100 = {g.id for g in p.filter_gpus(search="H100")}
    assert {"h100-sxm", "h100-pcie", "h100-nvl"} <= h100
    assert len(p.filter_gpus()) == len(p.all_gpus())


def test_a_user_file_of_another_name_still_shadows(user_dir):
    user_file = user_dir / "models" / "my-qwen.toml"  # not named after the id
    user_file.write_text(_model_toml("Qwen/Qwen3-8B", layers=10))
    assert p.model_file_for("Qwen/Qwen3-8B") == user_file
    assert resolve_model("Qwen/Qwen3-8B").num_layers == 10
    assert p.model_file_for("Qwen/Qwen3-32B") == p.configs_dir() / "models" / "Qwen--Qwen3-32B.toml"
