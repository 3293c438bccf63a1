"""Write model presets from mlc-ai/mlc-llm's MODEL_PRESETS (python/mlc_llm/model/model_preset.py), issue 25 item 7.

    python scripts/catalog_mlc.py MODEL_PRESET_PY --commit <40 hex> [--write]

MODEL_PRESETS holds published config.json files written as Python dict literals; the file is parsed with
``ast.literal_eval`` (never imported or run).  Each entry of ``PICKS`` names the dict key, the Hugging Face id it is
identified as and why; the [config] values are what the dict holds (the fields kvplan reads, via
kvplan.inputs.preset_writer.preset_toml).  Existing preset files are never overwritten.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog_preset import write_catalog_preset  # noqa: E402

PATH = "python/mlc_llm/model/model_preset.py"

#: dict key -> (Hugging Face id, aliases, why the dict is that model)
PICKS: dict[str, tuple[str, list[str], str]] = {
    "qwen2": ("Qwen/Qwen1.5-1.8B-Chat", ["qwen1.5-1.8b-chat"], "its _name_or_path is Qwen/Qwen1.5-1.8B-Chat"),
    "qwen2moe": (
        "Qwen/Qwen1.5-MoE-A2.7B-Chat",
        ["qwen1.5-moe-a2.7b-chat"],
        "60 experts (4 active) / 24 layers / hidden 2048 is Qwen1.5-MoE-A2.7B and eos_token_id 151645 (<|im_end|>) "
        "is the chat model's",
    ),
    "gemma2_2b-jpn": (
        "google/gemma-2-2b-jpn-it",
        ["gemma-2-2b-jpn-it"],
        "the key names the Japanese Gemma 2 2B (gemma-2-2b-jpn-it, the one release of it)",
    ),
    "starcoder2": (
        "bigcode/starcoder2-7b",
        ["starcoder2-7b"],
        "32 layers / hidden 4608 / 4 KV heads is StarCoder2 7B (commit 5bedaec2 'Support Starcoder2')",
    ),
    "smollm_1_7b": (
        "HuggingFaceTB/SmolLM-1.7B-Instruct",
        ["smollm-1.7b-instruct"],
        "commit 52c06388 'Support SmolLM'; _name_or_path cosmo2-1.7B-webinst-sc2 is the web-instruct fine-tune "
        "published as SmolLM-1.7B-Instruct",
    ),
    "smollm_360m": (
        "HuggingFaceTB/SmolLM-360M-Instruct",
        ["smollm-360m-instruct"],
        "commit 52c06388 'Support SmolLM'; _name_or_path cosmo2-350M-webinst-sc2 (the instruct fine-tune)",
    ),
    "smollm_135m": (
        "HuggingFaceTB/SmolLM-135M-Instruct",
        ["smollm-135m-instruct"],
        "commit 52c06388 'Support SmolLM'; _name_or_path cosmo2-135M-webinst-sc2 (the instruct fine-tune)",
    ),
    "aya-23": (
        "CohereForAI/aya-23-8B",
        ["aya-23-8b"],
        "commit c357be94 'Add support for Aya-23 8B' names huggingface.co/CohereForAI/aya-23-8B as the config's source",
    ),
    "stablelm-2-zephyr-1_6b": (
        "stabilityai/stablelm-2-zephyr-1_6b",
        ["stablelm-2-zephyr-1.6b"],
        "the key is the Hub name (commit 203cda6b 'Add model preset for model delivery'); 24 layers / hidden 2048",
    ),
    "minicpm_2b_sft_bf16": (
        "openbmb/MiniCPM-2B-sft-bf16",
        ["minicpm-2b-sft-bf16"],
        "the key is the Hub name (commit 38ee5564 'Add tie_word_embedding option for Minicpm model'); 4,096 positions",
    ),
    "minicpm-moe-8x2b": (
        "openbmb/MiniCPM-MoE-8x2B",
        ["minicpm-moe-8x2b"],
        "the key is the Hub name (commit 1ffa0bf0 'Support MoE structure of MiniCPM model'); 8 experts, 2 active",
    ),
}


def load_presets(text: str) -> dict:
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            return ast.literal_eval(node.value)
    raise ValueError("no MODEL_PRESETS literal")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_preset_py", type=Path)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    presets = load_presets(a.model_preset_py.read_text())
    for key, (model_id, aliases, why) in PICKS.items():
        cfg = presets[key]
        source = (
            f"MODEL_PRESETS['{key}'] of github.com/mlc-ai/mlc-llm @{a.commit} {PATH} (a verbatim copy of the published "
            f"config.json written as a Python dict); identified as {model_id}: {why}"
        )
        write_catalog_preset(
            cfg,
            model_id=model_id,
            aliases=aliases,
            source=source,
            config_ref=f"mlc-llm@{a.commit[:8]} model_preset.py {key}",
            write=a.write,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
