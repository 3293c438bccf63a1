"""The model catalog (configs/models): every preset loads strictly, every preset and published variant is planned
under both engines on a GPU and TP where its weights fit, and the preset writer writes files the loader accepts.

Planning: TP is the smallest power of two (1..8) whose share of the estimated weights is below 70 % of an H200
(141 GB); a model that does not fit 8 H200s is planned on 8 B200s.  A plan may say ``fits: false`` (that is an
answer); what must not happen is an error other than an engine refusal stated as an InputError naming the model or
a flag, and every such refusal is listed in REFUSALS below (a new one fails here until it is listed).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.inputs.preset_writer import MAX_QUANT_LIST, config_copy, preset_file_name, preset_toml, toml_value
from kvplan.planning.plan import fit

ROOT = Path(__file__).resolve().parents[1]
HF_DIR = Path(__file__).resolve().parent / "data" / "shared" / "hf-configs"

#: the catalog size this issue reached (model ids: presets + published variants); it only grows
MIN_MODEL_IDS = 300

H200_BYTES = 141_000_000_000
FIT_SHARE = 0.70

# (model id, engine) -> a part of the refusal message the engine states (an InputError on the model or a flag).
REFUSALS: dict[tuple[str, str], str] = {
    ("ai21labs/Jamba-v0.1", "sglang"): "Jamba",
}

_FILES = sorted((p.configs_dir() / "models").glob("*.toml"))


def _ids() -> list[str]:
    return [i for m in p.all_models() for i in (m.id, *(v.id for v in m.variants))]


# ------------------------------------------------------------------------------------------------ loading


@pytest.mark.parametrize("path", _FILES, ids=lambda f: f.stem)
def test_every_preset_file_loads_strictly(path: Path):
    m = p.load_model_file(path, use_cache=False)
    assert preset_file_name(m.id) == path.name
    assert m.source.strip(), f"{path.name}: no source"
    for v in m.variants:
        assert v.source.strip(), f"{path.name}: variant {v.id} has no source"


def test_catalog_size():
    ids = _ids()
    assert len(ids) == len(set(ids))
    assert len(ids) >= MIN_MODEL_IDS, f"{len(ids)} model ids"


# ----------------------------------------------------------------------------------------------- planning


def weight_total(model_id: str) -> int | None:
    """The preset's estimated weight bytes at its own format, or None where the estimate refuses its config
    (shared with tests/test_catalog_plans.py).  One estimate per model and preset folder in a process: both
    placement rules and both engines' cases read the same number."""
    return _weight_total(model_id, os.environ.get("KVPLAN_PRESETS", ""))


@functools.cache
def _weight_total(model_id: str, _presets: str) -> int | None:
    from kvplan.inputs.resolve import resolve_model
    from kvplan.weights.estimate import estimate_weight_bytes

    spec = resolve_model(model_id)
    try:
        return estimate_weight_bytes(
            config=spec.raw_config or spec.config,
            quantization=spec.quantization,
            checkpoint_bytes=spec.checkpoint_bytes,
        ).total_bytes
    except InputError:
        return None


@functools.cache
def _placement(model_id: str) -> tuple[str, int]:
    """(gpu, tp): the smallest power-of-two TP whose weight share is below 70 % of an H200, else 8 x B200."""
    total = weight_total(model_id)
    if total is None:
        total = 8 * H200_BYTES  # the estimate refuses this config: plan it on the largest placement
    for tp in (1, 2, 4, 8):
        if total / tp < FIT_SHARE * H200_BYTES:
            return "h200-sxm", tp
    return "b200", 8


_CASES = [(i, e) for i in _ids() for e in ("sglang", "vllm")] if _FILES else []


@pytest.mark.parametrize(("model_id", "engine"), _CASES, ids=[f"{i}-{e}" for i, e in _CASES])
def test_every_model_plans(model_id: str, engine: str):
    gpu, tp = _placement(model_id)
    try:
        res = fit(Deployment(model=model_id, gpu=gpu, tp=tp, engine=engine))
    except InputError as exc:
        want = REFUSALS.get((model_id, engine))
        assert want is not None, f"{model_id} ({engine}, {gpu} TP{tp}) refused, not listed: {exc}"
        assert want in str(exc), f"{model_id} ({engine}): refused with another reason: {exc}"
        assert exc.field, "a refusal names the model or a flag"
        return
    assert (model_id, engine) not in REFUSALS, f"{model_id} ({engine}) plans now: drop it from REFUSALS"
    assert res is not None


# ------------------------------------------------------------------------------------------ preset writer


_CFG = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "num_hidden_layers": 28,
    "hidden_size": 1024,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rope_theta": 1000000,
    "rope_scaling": None,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "sliding_window": None,
}


def _load_text(tmp_path: Path, model_id: str, text: str) -> p.ModelPreset:
    f = tmp_path / preset_file_name(model_id)
    f.write_text(text)
    return p.load_model_file(f, use_cache=False)


def test_writer_round_trips_through_the_strict_loader(tmp_path):
    text = preset_toml(
        _CFG,
        model_id="Qwen/Qwen3-0.6B",
        source="a copy",
        config_ref="copy",
        quantization="bf16",
        aliases=["qwen3-0.6b"],
        variants=[{"id": "Qwen/Qwen3-0.6B-FP8", "quantization": "fp8", "source": "its copy"}],
    )
    m = _load_text(tmp_path, "Qwen/Qwen3-0.6B", text)
    assert m.config == {k: v for k, v in _CFG.items() if v is not None and k != "rms_norm_eps"}
    assert [(v.id, v.quantization) for v in m.variants] == [("Qwen/Qwen3-0.6B-FP8", "fp8")]
    assert "num_key_value_heads = 8  # heads; HF config.json, copy" in text
    assert "max_position_embeddings = 40960  # tokens; HF config.json, copy" in text
    assert "tie_word_embeddings = true  # flag;" in text
    for line in text.splitlines():  # every [config] number carries its unit and source (docs/presets.md)
        if " = " in line and not line.startswith(("id ", "aliases", "source", "notes", "quantization")):
            assert "  # " in line, line


def test_writer_keeps_nesting_and_trims_long_quantization_lists(tmp_path):
    cfg = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": {
            "num_hidden_layers": 61,
            "kv_lora_rank": 512,
            "not_a_key": 1,
            "rope_scaling": {"type": "yarn", "factor": 64.0},
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "ignore": [f"layer.{i}" for i in range(MAX_QUANT_LIST + 1)],
                "config_groups": {"g": {"weights": {"num_bits": 4}}},
            },
        },
        "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27, "some_list": [1, 2]},
    }
    copy = config_copy(cfg)
    assert copy.trimmed == [f"text_config.quantization_config.ignore ({MAX_QUANT_LIST + 1} entries)"]
    assert "text_config.not_a_key" in copy.dropped_keys
    assert copy.table["vision_config"] == {"hidden_size": 1152, "num_hidden_layers": 27}
    m = _load_text(tmp_path, "a/b", preset_toml(cfg, model_id="a/b", source="s", quantization="int4"))
    tc = m.config["text_config"]
    assert tc["rope_scaling"] == {"type": "yarn", "factor": 64.0}
    assert tc["quantization_config"]["config_groups"] == {"g": {"weights": {"num_bits": 4}}}
    assert "ignore" not in tc["quantization_config"] and "ignore" in m.notes


def test_writer_refuses_bad_input():
    with pytest.raises(InputError, match="quantization"):
        preset_toml(_CFG, model_id="a/b", source="s", quantization="q4_k_m")
    with pytest.raises(InputError, match="ORG/NAME"):
        preset_toml(_CFG, model_id="no-slash", source="s", quantization="bf16")
    with pytest.raises(InputError, match="num_hidden_layers"):
        preset_toml({"model_type": "x"}, model_id="a/b", source="s", quantization="bf16")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (1e-05, "1e-05"),
        (float("inf"), "inf"),
        ('a"b', '"a\\"b"'),
        ([1, "x"], '[1, "x"]'),
        ({}, "{}"),
        ({"a b": 1}, '{ "a b" = 1 }'),
    ],
)
def test_toml_values(value, text):
    assert toml_value(value) == text
    assert tomllib.loads(f"k = {text}")["k"] == value


@pytest.mark.skipif(not (HF_DIR / "Qwen--Qwen3-8B" / "config.json").is_file(), reason="shared/ not available")
def test_script_writes_a_valid_preset(tmp_path):
    src = HF_DIR / "Qwen--Qwen3-8B" / "config.json"
    out = tmp_path / "Qwen--Qwen3-8B.toml"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "preset_from_config.py"),
            str(src),
            "--id",
            "Qwen/Qwen3-8B",
            "--source",
            "shared/hf-configs/Qwen--Qwen3-8B/config.json",
            "--alias",
            "qwen3-8b",
            "-o",
            str(out),
        ],
        check=True,
        cwd=ROOT,
    )
    m = p.load_model_file(out, use_cache=False)
    hf = json.loads(src.read_text())
    assert m.weights.quantization == "bf16"
    assert all(m.config[k] == hf[k] for k in m.config)
    shipped = p.load_model_file(p.configs_dir() / "models" / "Qwen--Qwen3-8B.toml", use_cache=False)
    assert m.config == shipped.config


def test_dsv32_exp_weights_fp8_under_dp_attention():
    # issue 13: DeepSeek-V3.2-Exp at --tp 8 --dp 8 --enable-dp-attention on 8x B200 was priced in bf16 (180.02 GiB per
    # GPU, no KV budget).  Its weights are FP8 (github.com/deepseek-ai/DeepSeek-V3.2-Exp @3b99a535
    # inference/config_671B_v3.2.json "dtype": "fp8"); the same sharding as the V3.2 preset (fp8, 128x128 blocks,
    # 92.08 GiB) less the block scales kvplan cannot declare without the Hub quantization_config (per-tensor: 92.06)
    exp = p.load_model_file(p.model_file_for("deepseek-ai/DeepSeek-V3.2-Exp"))
    assert exp.weights.quantization == "fp8" and "3b99a535" in (exp.weights.source or "")
    dep = dict(gpu="b200", tp=8, dp=8, enable_dp_attention=True)
    a = fit(Deployment(model="deepseek-ai/DeepSeek-V3.2-Exp", **dep))
    b = fit(Deployment(model="deepseek-ai/DeepSeek-V3.2", **dep))
    assert a.weight_bytes == pytest.approx(b.weight_bytes, rel=5e-4)
    # SGLang's weight figure is device-level since the caching-allocator reserve (kvplan.weights.allocator): the tensors
    # are the 92.06 GiB above, the reserve is its own breakdown entry
    line = next(x for x in a.assumptions if x.startswith("weights "))
    reserve_gib = float(re.search(r"allocator_reserve ([0-9.]+)", line).group(1))
    assert 0 < reserve_gib < 1
    assert a.weight_bytes / 2**30 - reserve_gib == pytest.approx(92.06, abs=0.015)
    assert a.fits and a.kv_bytes_per_token == 61 * (576 + 132)
