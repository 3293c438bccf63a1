"""SGLang's text-only default for some multimodal architectures, by release (``mm_disabled_models``).

sgl-project/sglang python/sglang/srt/configs/model_config.py ``ModelConfig.__init__``: with ``enable_multimodal``
None (no ``--enable-multimodal``) an architecture of ``mm_disabled_models`` gets ``enable_multimodal = False`` and
``is_multimodal = enable_multimodal and is_multimodal_model(...)`` is then False, so neither the ModelRunner cut
(up to 0.4.8), nor the default's vision-tower cut (0.4.9 - 0.5.19, server_args.py: ``if model_config.is_multimodal``),
nor the 0.5.18+ multimodal reserve applies.  Wheels read: 0.4.4.post4 (no rule), 0.4.5.post3 (Llama-4 only,
``--enable-llama4-multimodal``), 0.4.6, 0.4.9.post6 (Gemma-3, Llama-4), 0.5.0rc2, 0.5.1, 0.5.2, 0.5.4, 0.5.9,
0.5.10, 0.5.11, 0.5.12, 0.5.15 (+ Step3-VL), 0.5.16, 0.5.17, 0.5.18, 0.5.19, 0.5.23 (+ Inkling).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.engines.sglang.releases import rules_for

runner = CliRunner()

GEMMA3 = "Gemma3ForConditionalGeneration"
LLAMA4 = "Llama4ForConditionalGeneration"
STEP3VL = "Step3VLForConditionalGeneration"
INKLING = "InklingForConditionalGeneration"
GEMMA3_27B = "google/gemma-3-27b-it"
#: the preset's SigLIP tower (configs/models/google--gemma-3-27b-it.toml vision_config)
GEMMA3_VISION = {"num_hidden_layers": 27, "hidden_size": 1152}


def _fit(*args: str) -> dict:
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("0.4.4.post4", set()),
        ("0.4.5.post3", {LLAMA4}),
        ("0.4.6", {GEMMA3, LLAMA4}),
        ("0.4.8", {GEMMA3, LLAMA4}),
        ("0.5.0rc2", {GEMMA3, LLAMA4, STEP3VL}),
        ("0.5.15", {GEMMA3, LLAMA4, STEP3VL}),
        ("0.5.16", {GEMMA3, LLAMA4, STEP3VL, INKLING}),
        ("0.5.23", {GEMMA3, LLAMA4, STEP3VL, INKLING}),
    ],
)
def test_mm_disabled_list_by_release(release: str, expected: set[str]) -> None:
    assert rules_for(release).mm_disabled_archs == expected


def test_counts_multimodal_needs_a_tower_and_honours_enable_multimodal() -> None:
    rules = rules_for("0.5.23")
    assert not rules.counts_multimodal(architecture=GEMMA3, has_vision_tower=True)
    assert rules.counts_multimodal(architecture=GEMMA3, has_vision_tower=True, enable_multimodal=True)
    assert rules.counts_multimodal(architecture="Qwen2_5_VLForConditionalGeneration", has_vision_tower=True)
    assert not rules.counts_multimodal(architecture="Qwen3ForCausalLM", has_vision_tower=False, enable_multimodal=True)
    # before 0.4.6 Gemma-3 is multimodal by default
    assert rules_for("0.4.5.post3").counts_multimodal(architecture=GEMMA3, has_vision_tower=True)


def test_gemma3_27b_h100_sglang_0523_has_no_multimodal_reserve() -> None:
    """0.5.23: the default 0.83 on an 81,559 MiB H100 either way (no vision cut from 0.5.20); the reserve is
    SGLANG_VLM_CACHE_SIZE_MB = 100 MiB = 104,857,600 B with multimodal on, 0 B off (the default)."""
    rules = rules_for("0.5.23")
    on = rules.counts_multimodal(architecture=GEMMA3, has_vision_tower=True, enable_multimodal=True)
    off = rules.counts_multimodal(architecture=GEMMA3, has_vision_tower=True)
    assert rules.multimodal_reserve_bytes(is_multimodal=on) == 100 * 1024 * 1024 == 104_857_600
    assert rules.multimodal_reserve_bytes(is_multimodal=off) == 0
    assert (
        rules.default_mem_fraction_vlm(mem_fraction_static=0.83, is_multimodal=on, vision_config=GEMMA3_VISION) == 0.83
    )
    d = _fit("-m", GEMMA3_27B, "--engine-version", "0.5.23")
    assert d["mem_fraction_static"] == 0.83
    assert not any("multimodal" in a for a in d["assumptions"]), d["assumptions"]


def test_gemma3_27b_h100_sglang_0515_keeps_the_default_fraction() -> None:
    """0.5.15 (vision cut of the default, no reserve): on, 0.83 x 0.95 x (1 - 0.1 x (27 x 1152^2 / (24 x 1024^2) - 1))
    = 0.83 x 0.95 x 0.9576171875 = 0.75508115234375; off (the default), 0.83 stays."""
    rules = rules_for("0.5.15")
    cut = rules.default_mem_fraction_vlm(mem_fraction_static=0.83, is_multimodal=True, vision_config=GEMMA3_VISION)
    assert cut == pytest.approx(0.75508115234375, abs=1e-12)
    d = _fit("-m", GEMMA3_27B, "--engine-version", "0.5.15")
    assert d["mem_fraction_static"] == 0.83
    assert not any("multimodal" in a for a in d["assumptions"]), d["assumptions"]


def test_gemma3_27b_h100_before_and_after_0_4_6() -> None:
    """0.4.5.post3 (the newest release without Gemma-3 in the list; ModelRunner's x 0.90 for multimodal models,
    0.4.4.post4 - 0.4.8): 0.88 x 0.90 = 0.792.  0.4.6 keeps Gemma-3 text-only: 0.88."""
    old = _fit("-m", GEMMA3_27B, "--engine-version", "0.4.5.post3")
    assert old["mem_fraction_static"] == pytest.approx(0.792, abs=1e-9)
    assert any("0.88 -> 0.7920" in a for a in old["assumptions"]), old["assumptions"]
    new = _fit("-m", GEMMA3_27B, "--engine-version", "0.4.6")
    assert new["mem_fraction_static"] == 0.88
    assert new["kv_budget_bytes"] > old["kv_budget_bytes"]


def test_llama4_stays_text_only_where_listed() -> None:
    """Llama-4 is in the list from 0.4.5.post3 (its first supported window here); as before this table."""
    for release in ("0.4.5.post3", "0.4.8", "0.5.23"):
        assert not rules_for(release).counts_multimodal(architecture=LLAMA4, has_vision_tower=True)
