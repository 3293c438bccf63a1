"""Model ids as the Hub has them (issue 24 item 3): a dated re-release is never mapped to the undated preset."""

from __future__ import annotations

import pytest

from kvplan.errors import InputError
from kvplan.inputs import presets
from kvplan.inputs.resolve import _by_variant_rules, resolve_model


@pytest.mark.parametrize(
    "mid",
    [
        "Qwen/Qwen3-30B-A3B-Instruct-2507",
        "Qwen/Qwen3-30B-A3B-Thinking-2507",
        "Qwen/Qwen3-4B-Instruct-2507",
        "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
    ],
)
def test_dated_release_is_not_the_base_preset(mid: str) -> None:
    """The 2507 releases have 262,144 positions, the base presets 40,960: no rule maps them to the base."""
    assert _by_variant_rules(mid, presets.all_models()) is None


def test_dated_release_offline_is_one_line(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    # Qwen3-30B-A3B-Instruct-2507 is a preset since 8 Dec 2026; 235B-A22B-Instruct-2507 is not (no verbatim copy)
    with pytest.raises(InputError) as e:
        resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507")
    assert e.value.field == "--model" and "\n" not in str(e.value)
    assert "Qwen3-235B-A22B-Instruct-2507" in str(e.value)


def test_suffix_rules_still_map_quantized_builds() -> None:
    spec = _by_variant_rules("Qwen/Qwen3-32B-AWQ", presets.all_models())
    assert spec is not None and spec.quantization == "int4"
    assert spec.config == resolve_model("Qwen/Qwen3-32B").config


def test_suffix_rules_never_map_to_a_preset_whose_config_differs() -> None:
    """Over the catalog: a preset's own id, resolved by the suffix rules against the other presets, lands on a
    preset whose config agrees on every key kvplan reads (else the rule would give an unlisted sibling the wrong
    geometry)."""
    models = presets.all_models()
    bad = []
    for m in models:
        spec = _by_variant_rules(m.id, tuple(o for o in models if o.id != m.id))
        if spec is not None:
            own, got = dict(resolve_model(m.id).config), dict(spec.config)
            keys = (set(own) | set(got)) - {"quantization_config", "kv_cache_quant_algo", "torch_dtype", "dtype"}
            bad += [(m.id, k) for k in sorted(keys) if own.get(k) != got.get(k)]
    assert sorted(bad) == sorted(KNOWN_COPY_DIFFERENCES), sorted(set(bad) ^ set(KNOWN_COPY_DIFFERENCES))


#: quantized builds shipped as presets of their own whose config copy differs from the base preset's copy in keys
#: kvplan reads; each difference is in how the copy was written, not in the model (an unlisted sibling id mapped by
#: the suffix rules gets the base's geometry, which is the model's):
KNOWN_COPY_DIFFERENCES: tuple[tuple[str, str], ...] = (
    # the AWQ build's config.json carries a minimal vision_config (hidden_size, model_type; transformers fills
    # depth 32 and the rest from Qwen2VLVisionConfig's defaults), so the derived tower depth is absent
    ("Qwen/Qwen2-VL-2B-Instruct-AWQ", "vision_config"),
    ("Qwen/Qwen2-VL-2B-Instruct-AWQ", "vision_n_layers"),
    # the base preset's copy leaves out keys at their transformers defaults (attention_bias False,
    # decoder_sparse_step 1, mlp_only_layers []: kvplan reads absent as these) and rope_theta (no size depends on it)
    ("Qwen/Qwen3-235B-A22B-FP8", "attention_bias"),
    ("Qwen/Qwen3-235B-A22B-FP8", "decoder_sparse_step"),
    ("Qwen/Qwen3-235B-A22B-FP8", "mlp_only_layers"),
    ("Qwen/Qwen3-235B-A22B-FP8", "rope_theta"),
    # the AWQ build's text_config also records its dtype (bfloat16), which the bf16 release's copy leaves out
    ("openbmb/MiniCPM-V-4.6-AWQ", "text_config"),
)


# ---- resolved_from: the first screen and the JSON say when an id is planned from another preset (issue 24 item 3)


@pytest.mark.parametrize(
    "mid,want",
    [
        ("Qwen/Qwen3-32B", None),  # the preset itself
        ("qwen3-32b", "Qwen/Qwen3-32B"),  # an alias
        ("Qwen/Qwen3-32B-AWQ", "Qwen/Qwen3-32B"),  # a quantized build, by the suffix rules
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "Qwen/Qwen2.5-14B"),  # a published variant
    ],
)
def test_resolved_from_names_the_preset_used(mid: str, want: str | None) -> None:
    from kvplan.planning.plan import resolved_from

    spec = resolve_model(mid)
    assert resolved_from(mid, spec) == want
    if want is not None:
        assert spec.preset_id == want


def test_resolved_from_is_null_for_a_config_file(tmp_path) -> None:
    import json

    from kvplan.planning.plan import resolved_from

    cfg = dict(resolve_model("Qwen/Qwen3-32B").raw_config)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert resolved_from(str(path), resolve_model(str(path))) is None


def test_resolved_from_in_json_and_on_the_first_screen() -> None:
    import json

    from typer.testing import CliRunner

    from kvplan.cli.app import app

    args = ["fit", "-m", "Qwen/Qwen3-32B-AWQ", "-g", "h100-sxm", "--tp", "2"]
    d = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).stdout)
    assert d["resolved_from"] == "Qwen/Qwen3-32B" and d["model"] == "Qwen/Qwen3-32B-AWQ"
    screen = CliRunner().invoke(app, [*args, "--format", "table"]).stdout.splitlines()
    title = next(i for i, line in enumerate(screen) if "Qwen/Qwen3-32B-AWQ" in line)
    assert any("planned from the geometry of preset Qwen/Qwen3-32B" in line for line in screen[title : title + 4])
    plain = json.loads(
        CliRunner().invoke(app, ["fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "json"]).stdout
    )
    assert plain["resolved_from"] is None
    table = CliRunner().invoke(app, ["fit", "-m", "Qwen/Qwen3-32B", "-g", "h100-sxm", "--format", "table"]).stdout
    assert "planned from the geometry" not in table
