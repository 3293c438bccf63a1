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
    with pytest.raises(InputError) as e:
        resolve_model("Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert e.value.field == "--model" and "\n" not in str(e.value)
    assert "Qwen3-30B-A3B-Instruct-2507" in str(e.value)


def test_suffix_rules_still_map_quantized_builds() -> None:
    spec = _by_variant_rules("Qwen/Qwen3-32B-AWQ", presets.all_models())
    assert spec is not None and spec.quantization == "int4"
    assert spec.config == resolve_model("Qwen/Qwen3-32B").config


@pytest.mark.xfail(
    strict=True,
    reason="open (issue 24 item 3): the -Instruct/-Thinking/quantization suffix rules would map e.g. "
    "Qwen2.5-7B-Instruct to Qwen2.5-7B (max_position_embeddings differs) and nvidia/GLM-5.1-NVFP4 to GLM-5.1 "
    "(head_dim differs); the preset's own id wins today, an unlisted id of that kind would not",
)
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
            keys = (set(own) | set(got)) - {"quantization_config", "torch_dtype", "dtype"}
            bad += [(m.id, k) for k in sorted(keys) if own.get(k) != got.get(k)]
    assert not bad
