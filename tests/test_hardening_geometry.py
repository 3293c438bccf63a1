"""Issue 26 item 4: no input that is not a deployment is planned as one.

* a launch command without a model (``--model-path ""``, a bare ``vllm serve``, a ``vllm/vllm-openai`` image with no
  arguments) is exit 2 "the launch command names no model" (it was planned as the default DeepSeek-V4.1-Flash TP8/EP8);
* ``kv_lora_rank: 0`` on an MLA architecture (DeepSeek-V3) is exit 2, not planned as GQA with 128 heads;
* GPTQ ``bits`` 0, -4 or 64 are exit 2 naming the key; 2 and 3 are priced as int4 with a named warning;
* an unknown architecture is sized from its fields with a named warning.
"""

from __future__ import annotations

import glob
import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import InputError
from kvplan.hfconfig.checks import KNOWN_ARCHITECTURES, MLA_ARCHITECTURES
from kvplan.hfconfig.quant import awq_gptq_bits
from kvplan.inputs.launch import parse_launch_command, require_model

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"

runner = CliRunner()


def run(*args: str, input: str | None = None):
    return runner.invoke(cli_app.app, list(args), input=input)


MODEL_LESS = [
    ["python", "-m", "sglang.launch_server", "--model-path", ""],
    ["python", "-m", "sglang.launch_server", "--tp", "2"],
    ["vllm", "serve"],
    ["vllm", "serve", "--tensor-parallel-size", "2"],
    ["docker", "run", "--gpus", "all", "vllm/vllm-openai"],
]


@pytest.mark.parametrize("argv", MODEL_LESS, ids=lambda a: " ".join(a)[:40])
def test_a_launch_command_without_a_model_is_exit_2(argv):
    res = run("fit", "-g", "h100", "--format", "json", "--", *argv)
    assert res.exit_code == 2, res.output
    assert "the launch command names no model" in res.stderr and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    res = run("fit", "--format", "json", "--", *argv)  # no --gpu either: the model is named first
    assert res.exit_code == 2 and "names no model" in res.stderr


def test_a_launch_file_without_a_model_is_exit_2(tmp_path):
    f = tmp_path / "launch.sh"
    f.write_text("docker run --gpus all -p 8000:8000 vllm/vllm-openai\n")
    res = run("fit", "-g", "h100", "--from-launch", str(f), "--format", "json")
    assert res.exit_code == 2 and "names no model" in res.stderr


def test_a_model_from_the_flags_or_the_command_is_enough():
    res = run("fit", "-g", "h100", "--model", "Qwen/Qwen3-8B", "--format", "json", "--", "vllm", "serve")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["model"] == "Qwen/Qwen3-8B"
    res = run("fit", "-g", "h100", "--format", "json", "--", "vllm", "serve", "Qwen/Qwen3-8B")
    assert res.exit_code == 0, res.output
    fields = parse_launch_command("vllm serve").fields
    with pytest.raises(InputError, match="names no model"):
        require_model(fields)
    require_model({**fields, "model": "Qwen/Qwen3-8B"})


def _config(name: str, **changes) -> dict:
    cfg = json.loads((HF / name / "config.json").read_text())
    cfg.update(changes)
    return cfg


def _fit(tmp_path: Path, cfg: dict):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return run("fit", "--model", str(p), "--gpu", "h100", "--tp", "8", "--format", "json")


@pytest.mark.parametrize("rank", [0, None])
def test_kv_lora_rank_0_on_deepseek_v3_is_not_planned_as_gqa(tmp_path, rank):
    cfg = _config("deepseek-ai--DeepSeek-V3", kv_lora_rank=rank)
    res = _fit(tmp_path, cfg)
    assert res.exit_code == 2, res.output[:500]
    assert "kv_lora_rank" in res.stderr and "DeepseekV3ForCausalLM is an MLA architecture" in res.stderr
    assert res.stdout == ""
    cfg.pop("kv_lora_rank")
    assert _fit(tmp_path, cfg).exit_code == 2
    # the real config (kv_lora_rank 512) still plans as MLA
    res = _fit(tmp_path, _config("deepseek-ai--DeepSeek-V3"))
    assert res.exit_code == 0, res.output[:500]
    assert json.loads(res.stdout)["family"] == "mla"


@pytest.mark.parametrize("bits", [0, -4, 5, 64, 1, "4", True])
def test_gptq_bits_outside_2_3_4_8_are_exit_2(tmp_path, bits):
    cfg = _config("Qwen--Qwen3-8B", quantization_config={"quant_method": "gptq", "bits": bits, "group_size": 128})
    res = _fit(tmp_path, cfg)
    assert res.exit_code == 2, res.output[:500]
    assert "quantization_config.bits" in res.stderr


@pytest.mark.parametrize(("bits", "quant", "warned"), [(2, "int4", True), (3, "int4", True), (4, "int4", False),
                                                      (8, "int8", False)])  # fmt: skip
def test_gptq_2_and_3_bits_are_priced_as_int4_with_a_warning(tmp_path, bits, quant, warned):
    cfg = _config("Qwen--Qwen3-8B", quantization_config={"quant_method": "gptq", "bits": bits, "group_size": 128})
    res = _fit(tmp_path, cfg)
    assert res.exit_code == 0, res.output[:500]
    doc = json.loads(res.stdout)
    assert any(f"bits {bits}: the weights are priced as int4" in w for w in doc["warnings"]) is warned
    assert awq_gptq_bits(cfg["quantization_config"]) == bits
    assert awq_gptq_bits({}) == 4 and awq_gptq_bits({"w_bit": 8}) == 8


def test_an_unknown_architecture_is_warned(tmp_path):
    res = _fit(tmp_path, _config("Qwen--Qwen3-8B", architectures=["TotallyNewForCausalLM"]))
    assert res.exit_code == 0, res.output[:500]
    warned = [w for w in json.loads(res.stdout)["warnings"] if "TotallyNewForCausalLM" in w]
    assert len(warned) == 1 and "not an architecture kvplan knows" in warned[0]


def test_every_shipped_or_test_architecture_is_known_and_mla_ones_have_a_latent():
    seen: dict[str, bool] = {}
    docs = [json.loads(Path(f).read_text()) for f in glob.glob(str(HF / "**" / "config.json"), recursive=True)]
    docs += [tomllib.loads(Path(f).read_text()).get("config", {}) for f in glob.glob(str(ROOT / "configs/models/*"))]
    for cfg in docs:
        parts = [cfg] + [cfg[k] for k in ("text_config", "language_config") if isinstance(cfg.get(k), dict)]
        for arch in cfg.get("architectures") or []:
            seen[arch] = seen.get(arch, False) or any(bool(p.get("kv_lora_rank")) for p in parts)
    assert not sorted(set(seen) - KNOWN_ARCHITECTURES)
    assert {a for a, latent in seen.items() if latent} == MLA_ARCHITECTURES & set(seen)
