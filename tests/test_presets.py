"""Checks on the preset data in configs/models and configs/hardware.

The expected numbers come from the public sources the presets cite
(shared/hf-configs, shared/reference/hardware.json, shared/validation), not from
kvplan's own output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.hfconfig.normalize import nemotron_h_layers
from kvplan.inputs import presets as p

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parent.joinpath("data/shared")
if not SHARED.is_dir():  # CI lays shared/ beside the clone
    SHARED = ROOT.parent / "shared"
HF_DIR = SHARED / "hf-configs"
HW_JSON = SHARED / "reference" / "hardware.json"
VALIDATION = SHARED / "validation"

needs_shared = pytest.mark.skipif(not HF_DIR.is_dir(), reason="shared/ not available")
DOC = ROOT / "docs" / "presets.md"


@pytest.fixture(autouse=True)
def _shipped_presets_only(monkeypatch):
    """These tests check the shipped catalog: no user preset folder is read (KVPLAN_PRESETS set but empty)."""
    monkeypatch.setenv("KVPLAN_PRESETS", "")


def _names_of_model(m: p.ModelPreset) -> list[str]:
    return [m.id, *m.aliases, *(v.id for v in m.variants)]


def _names_of_gpu(g: p.HardwarePreset) -> list[str]:
    return [g.id, g.name, *g.aliases]


def _model_by_name(name: str) -> p.ModelPreset | None:
    low = name.lower()
    for m in p.all_models():
        if low in (n.lower() for n in _names_of_model(m)):
            return m
    return None


def _gpu_by_name(name: str) -> p.HardwarePreset | None:
    low = name.lower()
    for g in p.all_gpus():
        if low in (n.lower() for n in _names_of_gpu(g)):
            return g
    return None


# ---------------------------------------------------------------- loading


def test_all_presets_load():
    assert len(p.all_models()) >= 40
    assert len(p.all_gpus()) >= 20


def test_model_ids_unique():
    ids = [m.id for m in p.all_models()]
    assert len(ids) == len(set(ids))


def test_gpu_ids_unique():
    ids = [g.id for g in p.all_gpus()]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("kind", ["models", "hardware"])
def test_names_unique_across_presets(kind):
    """Ids, aliases and variant ids never point at two presets (case-insensitive, and after
    dropping punctuation, so 'Llama-3.1-8B' and 'llama_3.1_8b' cannot both exist)."""
    items = p.all_models() if kind == "models" else p.all_gpus()
    names = _names_of_model if kind == "models" else _names_of_gpu
    for norm in (str.lower, lambda s: re.sub(r"[^0-9a-z]", "", s.lower())):
        owner: dict[str, str] = {}
        for item in items:
            for n in {norm(x) for x in names(item)}:
                assert n not in owner, f"{n!r} used by {owner.get(n)} and {item.id}"
                owner[n] = item.id


def test_model_file_names_match_ids():
    for path in sorted((p.configs_dir() / "models").glob("*.toml")):
        assert p.load_model_file(path).id.replace("/", "--") + ".toml" == path.name


def test_hardware_file_names_match_ids():
    for path in sorted((p.configs_dir() / "hardware").glob("*.toml")):
        g = p.load_hardware_file(path)
        assert g.id + ".toml" == path.name
        assert g.id == g.id.lower() and " " not in g.id


def test_every_config_has_layers():
    for m in p.all_models():
        cfg = m.config
        layers = cfg.get("num_hidden_layers", (cfg.get("text_config") or {}).get("num_hidden_layers"))
        if layers is None:  # Nemotron-3 Ultra: the layers are listed in layers_block_type only
            layers = nemotron_h_layers(dict(cfg)).get("num_hidden_layers")
        assert isinstance(layers, int) and layers > 0, m.id


def test_numbers_carry_a_comment():
    """Every [config] line and every memory/bandwidth number has a trailing unit/source comment."""
    hw_keys = ("memory_mib", "cuda_total_bytes", "bandwidth_gbps", "interconnect_gbps", "checkpoint_bytes")
    for path in sorted(p.configs_dir().glob("*/*.toml")):
        section = ""
        for raw in path.read_text().splitlines():
            s = raw.strip()
            if s.startswith("["):
                section = s.strip("[]")
                continue
            if " = " not in s or s.startswith("#"):
                continue
            key = s.split(" = ", 1)[0]
            if section.startswith("config") or key in hw_keys:
                assert "  # " in s, f"{path.name}: no comment on {s[:60]!r}"


# ------------------------------------------------- against the real HF configs

# Preset files written by another helper; skipped here while absent.
_OTHER_OWNER = {"deepseek-ai--DeepSeek-V4-Flash"}
_NOT_COMPARED = {"quantization_config"}  # long lists are trimmed in presets


def _strip_nulls(v):
    if isinstance(v, dict):
        return {k: _strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip_nulls(x) for x in v if x is not None]
    return v


def _hf_dirs():
    return sorted(d.name for d in HF_DIR.iterdir() if (d / "config.json").is_file()) if HF_DIR.is_dir() else []


@needs_shared
@pytest.mark.parametrize("dirname", _hf_dirs())
def test_geometry_matches_hf_config(dirname):
    hf_id = dirname.replace("--", "/", 1)
    preset = _model_by_name(hf_id)
    if preset is None and dirname in _OTHER_OWNER:
        pytest.skip(f"{hf_id}: preset owned by another file")
    assert preset is not None, f"no preset or variant for {hf_id}"
    hf = json.loads((HF_DIR / dirname / "config.json").read_text())
    compared = 0
    for key, value in hf.items():
        if key not in p.CONFIG_KEYS or key in _NOT_COMPARED or value is None:
            continue
        if key == "text_config":
            for k2, v2 in value.items():
                if k2 in p.CONFIG_KEYS and k2 not in _NOT_COMPARED and v2 is not None:
                    assert preset.config["text_config"].get(k2) == _strip_nulls(v2), (hf_id, k2)
                    compared += 1
            continue
        if hf_id != preset.id and key not in preset.config:
            continue  # a variant's own file may carry fields the base preset's source did not record
        assert preset.config.get(key) == _strip_nulls(value), (hf_id, key)
        compared += 1
    assert compared >= 8


@needs_shared
def test_variant_configs_share_base_geometry():
    """Variants with their own verbatim config (FP8 re-uploads) match the base preset."""
    for base, variant in [
        ("Qwen/Qwen3-235B-A22B", "Qwen--Qwen3-235B-A22B-FP8"),
        ("zai-org/GLM-5", "zai-org--GLM-5-FP8"),
    ]:
        m = _model_by_name(base)
        assert m.id == base
        vid = variant.replace("--", "/", 1)
        own = _model_by_name(vid)
        hf = json.loads((HF_DIR / variant / "config.json").read_text())
        for key in (
            "num_hidden_layers",
            "num_key_value_heads",
            "num_attention_heads",
            "hidden_size",
            "max_position_embeddings",
        ):
            assert m.config[key] == hf[key], (variant, key)
            if own.id == vid:  # a preset of its own (its config.json verbatim): the same geometry as the base
                assert own.config[key] == hf[key], (variant, key)
        assert hf["quantization_config"]["quant_method"] == "fp8"
        if own.id == vid:
            assert own.config["quantization_config"]["quant_method"] == "fp8"
            assert vid not in [v.id for v in m.variants]  # never both a preset and a variant
        else:
            assert {v.id: v.quantization for v in m.variants}[vid] == "fp8"


def test_spot_geometry_values():
    """Hand-checked against the cited config.json copies."""
    llama = _model_by_name("llama-3.1-8b").config
    assert (
        llama["num_hidden_layers"],
        llama["num_key_value_heads"],
        llama["hidden_size"],
        llama["num_attention_heads"],
    ) == (32, 8, 4096, 32)
    ds = _model_by_name("deepseek-v3").config
    assert (ds["num_hidden_layers"], ds["kv_lora_rank"], ds["qk_rope_head_dim"]) == (61, 512, 64)
    oss = _model_by_name("gpt-oss-120b").config
    assert oss["layer_types"].count("sliding_attention") == 18 and oss["sliding_window"] == 128
    q14 = _model_by_name("Qwen/Qwen3-14B").config
    assert (q14["num_hidden_layers"], q14["num_key_value_heads"], q14["head_dim"]) == (40, 8, 128)


@needs_shared
def test_llama_geometry_reproduces_sglang_k_size():
    """SGLang docs log (validation case llama31-8b-docs-quickstart-2501): 444500 tokens,
    'K size: 27.13 GB'.  K bytes = tokens x layers x kv_heads x head_dim x 2 (bf16)
    = 444500 x 32 x 8 x 128 x 2 = 29,130,752,000 B = 27.13 GiB."""
    case = next(
        json.loads(line)
        for line in (VALIDATION / "sglang_dev.jsonl").open()
        if json.loads(line)["id"] == "llama31-8b-docs-quickstart-2501"
    )
    cfg = _model_by_name(case["fixture"]["model"]).config
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    k_bytes = (
        case["reported"]["max_total_num_tokens"] * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * head_dim * 2
    )
    assert k_bytes == 29_130_752_000
    assert round(k_bytes / 2**30, 2) == case["reported"]["k_size_gb"]


# ------------------------------------------------------------- hardware


@needs_shared
def test_gpu_memory_matches_hardware_json():
    ref = {h["name"]: h for h in json.loads(HW_JSON.read_text())}
    checked = 0
    for g in p.all_gpus():
        for n in _names_of_gpu(g):
            h = ref.get(n)
            if h and h["memory_reported_MiB"]:
                assert g.memory_mib == h["memory_reported_MiB"], g.id
                assert g.memory_mib * 2**20 == h["memory_bytes_reported"], g.id
                checked += 1
            if h and h["torch_total_memory_bytes"]:
                assert g.cuda_total_bytes == h["torch_total_memory_bytes"], g.id
    assert checked >= 12


def test_gpu_spot_values():
    assert _gpu_by_name("rtx-pro-6000-maxq").memory_mib == 97887
    assert _gpu_by_name("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition").id == "rtx-pro-6000-maxq"
    h100 = _gpu_by_name("NVIDIA H100 80GB HBM3")
    assert h100.memory_mib * 2**20 == 85_520_809_984 and abs(h100.device_bytes / 2**30 - 79.185) < 0.001
    a40 = _gpu_by_name("NVIDIA A100-SXM4-40GB")
    assert a40.device_bytes == 42_298_834_944 < a40.memory_mib * 2**20
    assert _gpu_by_name("AMD Instinct MI300X").device_bytes == 205_822_885_888 == 196288 * 2**20
    assert _gpu_by_name("b200").sm_major == 10 and _gpu_by_name("b200").fp4
    assert _gpu_by_name("a100-sxm-80gb").fp8 is False


@needs_shared
def test_validation_gpus_resolve_with_their_memory():
    """Every GPU named by a validation fixture resolves, and the fixture's gpu_memory_bytes
    equals memory_mib x 2^20 of that preset (nvidia-smi total)."""
    missing_ok = {"AMD Instinct MI355X"}  # no sourced memory total yet
    seen = 0
    for f in ("sglang_dev.jsonl", "vllm_dev.jsonl"):
        for line in (VALIDATION / f).open():
            fx = json.loads(line)["fixture"]
            if not fx.get("gpu") or fx["gpu"] in missing_ok:
                continue
            g = _gpu_by_name(fx["gpu"])
            assert g is not None, fx["gpu"]
            if fx.get("gpu_device"):
                assert _gpu_by_name(fx["gpu_device"]) is g, fx["gpu_device"]
            if fx.get("gpu_memory_bytes"):
                assert g.memory_mib * 2**20 == fx["gpu_memory_bytes"], fx["gpu"]
            seen += 1
    assert seen >= 10


@needs_shared
def test_validation_models_with_configs_have_presets():
    for f in ("sglang_dev.jsonl", "vllm_dev.jsonl"):
        for line in (VALIDATION / f).open():
            fx = json.loads(line)["fixture"]
            if fx.get("hf_config") and "DeepSeek-V4" not in fx["model"]:
                assert _model_by_name(fx["model"]) is not None, fx["model"]


# ------------------------------------------------------------------- docs/presets.md


def test_docs_list_every_shipped_preset():
    """The catalog tables of docs/presets.md name every shipped model preset, published variant and GPU."""
    text = DOC.read_text()
    for m in p.all_models():
        assert f"| `{m.id}` |" in text, f"docs/presets.md: no row for model {m.id}"
        for v in m.variants:
            assert f"`{v.id}`" in text, f"docs/presets.md: variant {v.id} of {m.id} not listed"
    for g in p.all_gpus():
        assert f"| `{g.id}` |" in text, f"docs/presets.md: no row for GPU {g.id}"


def test_docs_point_only_inside_the_repository():
    """Every repository path docs/presets.md names exists here; nothing points at a development machine."""
    text = DOC.read_text()
    assert "/work/" not in text and "development notes" not in text
    external = re.compile(r"[\w.-]+/[\w.-]+(?: @[0-9a-f]{7,40})? $")  # `path` right after another repository's name
    paths = {
        m.group(1)
        for m in re.finditer(r"`((?:tests|configs|kvplan|scripts|docs|benchmarks)/[^`\s]*)`", text)
        if not external.search(text[max(0, m.start() - 120) : m.start()])
    }
    assert len(paths) > 10
    for path in sorted(paths - {"kvplan/configs"}):  # kvplan/configs: where the wheel ships configs/
        if any(ch in path for ch in "<*"):  # a pattern (configs/models/<org>--<name>.toml), not a file
            path = re.split(r"[<*]", path)[0].rsplit("/", 1)[0]
        assert (ROOT / path.rstrip("/")).exists(), f"docs/presets.md names {path}, which is not in the repository"
