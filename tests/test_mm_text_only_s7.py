"""Text-only serving of a multimodal checkpoint (session 7): vLLM's ``--language-model-only`` and a zero
``--limit-mm-per-prompt`` build no vision tower (vllm/model_executor/models/interfaces.py ``_mark_tower_model``,
v0.18.0 - v0.34.0), so kvplan leaves the tower's weights out; the Llama-4 presets now carry their vision_config.

Hand-derived tower of Llama-4-Scout/Maverick at TP4 (vision_config: d 1,408, i 5,632, 34 layers, patch 14, image 336,
projector 4,096 x 4,096, text hidden 5,120; 16-bit): the TP-split tensors are patch embedding d x 3 x 14², q/k/v
34 x 3d x d + bias 34 x 3d, o 34 x d x d, fc1 34 x i x d + bias 34 x i, fc2 34 x d x i, adapter 4,096 x i and
4,096 x 4,096, projector 5,120 x 4,096; replicated: class embedding d, positions 577 x d, pre/post norms 4d,
per-layer norms 34 x 4d, o and fc2 biases 34 x d each.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import mm_limits
from kvplan.inputs import launch

runner = CliRunner()
SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
QWEN_VL = "Qwen/Qwen3-VL-8B-Instruct"


def _scout_tower_bytes_tp4() -> int:
    d, i, n, c, p = 1408, 5632, 34, 3, 14
    npos = (336 // p) ** 2 + 1
    split = [d * c * p * p, n * 3 * d * d, n * 3 * d, n * d * d, n * i * d, n * i, n * d * i]
    split += [4096 * i, 4096 * 4096, 5120 * 4096]
    replicated = [d, npos * d, 4 * d, n * 4 * d, n * d, n * d]
    return (sum(split) // 4 + sum(replicated)) * 2


def _fit(*args: str, gpu: str = "h100-sxm") -> dict:
    r = runner.invoke(app, ["fit", "-g", gpu, "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _tower_lines(d: dict) -> list[str]:
    return [a for a in d["assumptions"] if "vision tower" in a]


def test_hand_derived_tower_is_the_estimate_of_the_preset():
    # 871,932,416 parameters (kvplan.weights.vision llama4_vision_tensors docstring) -> 437,626,240 B per GPU at TP4
    assert _scout_tower_bytes_tp4() == 437_626_240


def test_language_model_only_drops_the_tower_from_kvplans_own_option():
    base = _fit("--engine", "vllm", "-m", SCOUT, "--tp", "4")
    text = _fit("--engine", "vllm", "-m", SCOUT, "--tp", "4", "--language-model-only")
    assert base["weight_bytes"] - text["weight_bytes"] == _scout_tower_bytes_tp4()
    assert text["kv_budget_bytes"] - base["kv_budget_bytes"] == _scout_tower_bytes_tp4()
    mib = _scout_tower_bytes_tp4() / 2**20  # 417.35 MiB
    assert _tower_lines(text)[0] == (
        f"vision tower left out (--language-model-only: vLLM builds no vision tower): {mib:,.1f} MiB less weights per GPU"
    )
    assert not any("left out" in a for a in base["assumptions"])


def test_the_flags_are_read_from_a_launch_command():
    cmd = f"vllm serve {SCOUT} -tp 4 --language-model-only"
    p = launch.parse_launch_command(cmd)
    assert p.fields["language_model_only"] is True
    assert not any("--language-model-only" in n for n in p.notes), p.notes
    assert "language_model_only" not in launch.parse_launch_command(cmd + " --no-language-model-only").fields
    lim = launch.parse_launch_command(f"vllm serve {SCOUT} --limit-mm-per-prompt '{{\"image\": 0}}'")
    assert lim.fields["limit_mm_per_prompt"] == '{"image": 0}'
    dotted = launch.parse_launch_command(
        f"vllm serve {QWEN_VL} --limit-mm-per-prompt.image 0 --limit-mm-per-prompt.video 2"
    )
    assert json.loads(dotted.fields["limit_mm_per_prompt"]) == {"image": 0, "video": 2}
    assert "--limit-mm-per-prompt" not in dotted.ignored
    base = _fit("--", "vllm", "serve", SCOUT, "-tp", "4")
    text = _fit("--", "vllm", "serve", SCOUT, "-tp", "4", "--limit-mm-per-prompt", '{"image": 0}')
    assert base["weight_bytes"] - text["weight_bytes"] == _scout_tower_bytes_tp4()
    assert "--limit-mm-per-prompt gives 0 image items" in _tower_lines(text)[0]


def test_limits_must_zero_every_modality_the_tower_serves():
    lmo = _fit("--engine", "vllm", "-m", QWEN_VL, "--language-model-only")
    base = _fit("--engine", "vllm", "-m", QWEN_VL)
    image_only = _fit("--engine", "vllm", "-m", QWEN_VL, "--limit-mm-per-prompt", '{"image": 0}')
    both = _fit("--engine", "vllm", "-m", QWEN_VL, "--limit-mm-per-prompt", '{"image": 0, "video": {"count": 0}}')
    assert image_only["weight_bytes"] == base["weight_bytes"]  # video keeps its 999: the tower is built
    assert "leaves a modality it serves (image, video) above 0" in _tower_lines(image_only)[0]
    assert both["weight_bytes"] == lmo["weight_bytes"] < base["weight_bytes"]


def test_a_release_without_the_flag_refuses_it():
    r = runner.invoke(
        app, ["fit", "-g", "h100-sxm", "--engine", "vllm", "--engine-version", "0.15.0", "-m", QWEN_VL,
              "--language-model-only"]
    )  # fmt: skip
    assert r.exit_code == 2
    assert "vLLM 0.15.0 has no --language-model-only" in r.output and "0.18.0" in r.output
    launched = _fit("--engine-version", "0.15.0", "--", "vllm", "serve", QWEN_VL, "--language-model-only")
    assert launched["starts"] is False
    assert any("unrecognised argument --language-model-only" in x for x in launched["reasons"])
    # 0.15 knows --limit-mm-per-prompt but predates the tower skip kvplan reads: the tower stays, said so
    old = _fit("--engine", "vllm", "--engine-version", "0.15.0", "-m", QWEN_VL, "--limit-mm-per-prompt",
               '{"image": 0, "video": 0}')  # fmt: skip
    plain = _fit("--engine", "vllm", "--engine-version", "0.15.0", "-m", QWEN_VL)
    assert old["weight_bytes"] == plain["weight_bytes"]
    assert "before vLLM 0.18 is not modelled" in _tower_lines(old)[0]


def test_sglang_ignores_the_vllm_flag_and_a_bad_limit_is_exit_2():
    d = _fit("-m", QWEN_VL, "--language-model-only")
    assert "--language-model-only" in d["ignored_flags"]
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--engine", "vllm", "-m", QWEN_VL, "--limit-mm-per-prompt", "x"])
    assert r.exit_code == 2 and "--limit-mm-per-prompt" in r.output
    assert mm_limits('{"image": 2, "video": {"num_frames": 8}}') == {"image": 2, "video": 999}
    assert mm_limits("image=0,video=1") == {"image": 0, "video": 1}


def test_llama4_presets_carry_the_released_vision_tower():
    from kvplan.inputs.resolve import resolve_model
    from kvplan.weights.estimate import estimate_weight_bytes

    spec = resolve_model(SCOUT)
    cfg = spec.raw_config or spec.config
    est = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=4, engine="vllm")
    assert est.params == 108_641_793_536  # the published safetensors total: text + tower
    assert dict(est.breakdown)["vision"] == _scout_tower_bytes_tp4()
    # SGLang builds Llama-4's tower only with --enable-multimodal: stored, not loaded
    sg = estimate_weight_bytes(config=cfg, quantization="bf16", tp_size=4, engine="sglang")
    assert "vision" not in dict(sg.breakdown)
    qwen = resolve_model("Qwen/Qwen3-VL-235B-A22B-Thinking")
    assert (qwen.raw_config or qwen.config)["vision_config"]["patch_size"] == 16


def test_sglang_plans_llama4_text_only_with_its_vision_config():
    """SGLang turns multimodal off for Llama4ForConditionalGeneration unless --enable-multimodal (sglang v0.5.23
    configs/model_config.py ``mm_disabled_models``): the preset's new vision_config must not bring the multimodal
    reserve or 0.5.15's multimodal cut of mem_fraction_static (the release rule: RuleSet.counts_multimodal)."""
    for release in ("0.5.23", "0.5.15"):
        d = _fit("-m", SCOUT, "--tp", "4", "--engine-version", release)
        assert not any("multimodal reserve" in a or "multimodal model" in a for a in d["assumptions"]), d["assumptions"]
        assert "vision" not in {m["name"] for m in d["memory"]}


def test_language_model_only_drops_gemma4s_multimodal_prefix():
    """vLLM 0.30+ clears is_mm_prefix_lm when every modality is off (config/model.py
    ``_supports_multimodal_for_mm_prefix``): Gemma-4-26B-A4B on an L40S keeps vLLM's 2,048-token batch default
    (under 70 GiB) instead of the raise to one 2,496-token video (32 frames x (70 + 8)); on an H100 the
    prefix's Triton/FlashAttention composite gives way to FLASH_ATTN."""
    gemma = ("--engine", "vllm", "-m", "google/gemma-4-26B-A4B", "--context-length", "32768")
    assert _fit(*gemma, gpu="l40s")["chunked_prefill_size"] == 32 * (70 + 8)
    assert _fit(*gemma, "--language-model-only", gpu="l40s")["chunked_prefill_size"] == 2048
    on, off = _fit(*gemma), _fit(*gemma, "--language-model-only")
    assert any("TRITON_FLASH_ATTN (multimodal prefix" in a for a in on["assumptions"])
    assert any(a.startswith("attention backend FLASH_ATTN") for a in off["assumptions"]), off["assumptions"]
