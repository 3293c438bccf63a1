"""Presets added in session 7 for issue 22 (models of usable speed-data-set rows the catalog lacked, written from a
public verbatim copy of their config.json) and issue 25 (a quantized build planned from its own quantization config).

``Qwen/Qwen3.6-27B-FP8`` (the speed data set's cookbook-qwen36-27b-fp8-h200-* rows) is written from the copy that
siwei555/llm-perf-calculator-current vendors; the copy laid beside the checkout (``../shared/hf-configs``) is checked
against the git blob its SOURCE.txt names, and the preset against the copy field by field.  Two models of the
request were not found as verbatim copies and are not shipped: ``lukealonso/Qwen3.5-397B-A17B-NVFP4`` (the
rtx6kpro-qwen35-397b-* rows) and ``Qwen/Qwen3.8-27B-FP8`` (a validation log); offline they are refused in one line.
Each preset plans under both engines (one in-process plan per engine); an engine refusal must name a field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kvplan.deployment import Deployment
from kvplan.errors import InputError
from kvplan.inputs import presets as p
from kvplan.inputs.preset_writer import config_copy
from kvplan.inputs.resolve import resolve_model
from kvplan.planning.plan import fit
from tests.catalog_cases import GITHUB_SOURCE as _SOURCE
from tests.catalog_cases import (
    assert_new_ids_distinct,
    assert_not_variants,
    engine_cases,
    layer_count,
    plan_or_refusal,
)
from tests.catalog_cases import preset as _preset

ROOT = Path(__file__).resolve().parents[1]
#: the verbatim copies these presets were written from (laid beside the checkout; absent -> those checks skip)
SHARED_HF = ROOT.parent / "shared" / "hf-configs"

#: file stem -> (GPU id, TP, context in tokens, KV bytes per token counted by hand).  Qwen3.6-27B-FP8: 16 of its 64
#: layers are full attention (full_attention_interval 4), each 4 KV heads x 256 dims x (K + V) x 2 B (the KV cache
#: stays bf16: the config declares no kv_cache_scheme) = 16 x 4 x 256 x 2 x 2 = 65,536 B; the 48 Gated-DeltaNet
#: layers hold a per-request state instead.  H200 at the config's own 262,144 positions.
NEW_PRESETS: dict[str, tuple[str, int, int, int]] = {
    # siwei555/llm-perf-calculator-current docs/Qwen_3.6/config/Qwen3.6-27B-FP8-config.json
    "Qwen--Qwen3.6-27B-FP8": ("h200-sxm", 1, 262_144, 16 * 4 * 256 * 2 * 2),
}

#: models of the request whose verbatim config.json was not found (docs/presets.md "Missing, and why")
NOT_FOUND = ("lukealonso/Qwen3.5-397B-A17B-NVFP4", "Qwen/Qwen3.8-27B-FP8")


def _git_blob_sha1(data: bytes) -> str:
    """The id git gives a file of these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_preset_names_its_verbatim_source(stem: str):
    m = _preset(stem)
    assert m.id.replace("/", "--") == stem
    assert _SOURCE.search(m.source), f"{stem}: source does not name a repository, commit and path: {m.source!r}"
    assert "verbatim" in m.source
    assert layer_count(m) == 64


@pytest.mark.parametrize("stem", sorted(NEW_PRESETS))
def test_shared_copy_is_the_cited_blob_and_the_preset_its_table(stem: str):
    """The copy's bytes are the git blob its SOURCE.txt names (so a copy edited after it was taken fails), the
    SOURCE.txt names the preset's repository and commit, and the [config] table is what the preset writer keeps of
    the copy, key for key."""
    folder = SHARED_HF / stem
    if not (folder / "config.json").is_file():
        pytest.skip(f"no shared copy at {folder}")
    data = (folder / "config.json").read_bytes()
    source = (folder / "SOURCE.txt").read_text()
    assert _git_blob_sha1(data) in source
    m = _preset(stem)
    repo, commit, path = _SOURCE.search(m.source).groups()  # type: ignore[union-attr]
    assert f"github.com/{repo}" in source and commit in source and path in source
    assert m.config == config_copy(json.loads(data)).table


_CASES, _IDS = engine_cases(NEW_PRESETS)


@pytest.mark.parametrize(("stem", "engine"), _CASES, ids=_IDS)
def test_preset_plans_with_the_hand_counted_kv_bytes(stem: str, engine: str):
    gpu, tp, context, kv_per_token = NEW_PRESETS[stem]
    res = plan_or_refusal(stem, engine, gpu, tp, context)
    if res is None:  # an engine refusal is a verdict: it names the model or a flag
        return
    assert res.kv_bytes_per_token == kv_per_token, (stem, engine, res.kv_bytes_per_token)
    assert res.resolved_from is None, (stem, engine, res.resolved_from)


def test_new_ids_are_their_own_and_not_variants():
    assert_new_ids_distinct(NEW_PRESETS)
    assert_not_variants(NEW_PRESETS)


def test_fp8_build_is_planned_from_its_own_quantization_config():
    """Issue 25: the weight format comes from the build's own quantization_config (Qwen's block-wise FP8: e4m3,
    128 x 128 weight blocks, dynamic activations), and its 882-entry modules_to_not_convert list, too long for the
    preset, is named in the notes with the length of the shared copy's list."""
    m = _preset("Qwen--Qwen3.6-27B-FP8")
    q = m.config["quantization_config"]
    assert (q["quant_method"], q["fmt"], q["activation_scheme"]) == ("fp8", "e4m3", "dynamic")
    assert q["weight_block_size"] == [128, 128]
    assert m.weights.quantization == "fp8"
    assert "modules_to_not_convert" not in q
    copy = SHARED_HF / "Qwen--Qwen3.6-27B-FP8" / "config.json"
    n = len(json.loads(copy.read_text())["quantization_config"]["modules_to_not_convert"]) if copy.is_file() else 882
    assert f"quantization_config.modules_to_not_convert ({n} entries)" in m.notes


def test_fp8_build_is_its_own_model_not_the_nvfp4_one_on_screen():
    """Qwen/Qwen3.6-27B-FP8 resolves to itself (by id and alias), and its plan says nothing of another preset's
    geometry on screen (a suffix-mapped id prints "planned from the geometry of preset ...").  NVIDIA's NVFP4 build
    shares the text geometry, so the two plan the same bf16 KV per token under vLLM, but their weights differ: the
    FP8 build's weights are the larger, by each build's own quantization config."""
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    fp8 = resolve_model("Qwen/Qwen3.6-27B-FP8")
    assert fp8.id == "Qwen/Qwen3.6-27B-FP8" and resolve_model("qwen3.6-27b-fp8").id == fp8.id
    nvfp4 = resolve_model("nvidia/Qwen3.6-27B-NVFP4")
    keys = ("layer_types", "num_key_value_heads", "head_dim", "hidden_size", "intermediate_size", "vocab_size")
    assert [fp8.config["text_config"][k] for k in keys] == [nvfp4.config["text_config"][k] for k in keys]
    out = CliRunner().invoke(
        app, ["fit", "-m", "Qwen/Qwen3.6-27B-FP8", "-g", "h200-sxm", "--context-length", "32k", "--format", "table"]
    )
    assert out.exit_code == 0, out.output
    assert out.output.startswith("Qwen/Qwen3.6-27B-FP8 on 1x NVIDIA H200")
    assert "planned from the geometry of preset" not in out.output
    a, b = (
        fit(Deployment(model=mid, gpu="h200-sxm", engine="vllm", kv_cache_dtype="bf16", context_length=32_768))
        for mid in ("Qwen/Qwen3.6-27B-FP8", "nvidia/Qwen3.6-27B-NVFP4")
    )
    assert a.kv_bytes_per_token == b.kv_bytes_per_token
    assert a.weight_bytes > b.weight_bytes


@pytest.mark.parametrize("mid", NOT_FOUND)
def test_a_build_without_a_verbatim_config_is_refused_offline_not_guessed(mid: str, monkeypatch, tmp_path):
    """No preset was invented for them: offline, --model refuses each in one line that names it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert not any(mid in (m.id, *(v.id for v in m.variants)) for m in p.all_models())
    with pytest.raises(InputError) as e:
        resolve_model(mid)
    assert e.value.field == "--model" and "\n" not in str(e.value)
    assert mid in str(e.value)


def test_speed_rows_of_the_new_preset_are_planned():
    """The speed data set's Qwen3.6-27B-FP8 rows were refused ("not a preset"); every one of them now runs under
    ``kvplan speed`` and answers each metric it is compared on."""
    from tests.test_speed_validation import _script

    mod = _script()
    rows = [r for r in mod.load_rows() if r["fixture"]["model"] == "Qwen/Qwen3.6-27B-FP8"]
    assert rows and all(r["fixture"]["usable"] for r in rows)
    for r in rows:
        got, err = mod.run_fixture(r["fixture"], mod.harness(r), mod.fabric_link_gbs(r))
        assert got is not None, (r["id"], err)
        metrics = [r["fixture"]["metric"], *(a["metric"] for a in r["fixture"].get("also") or [])]
        assert all(isinstance(got.get(k), float) and got[k] > 0 for k in metrics), (r["id"], metrics)
