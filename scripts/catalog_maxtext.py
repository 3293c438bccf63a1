"""Write model presets from AI-Hypercomputer/maxtext's hf_model_configs.py (issue 25 item 7).

    python scripts/catalog_maxtext.py HF_MODEL_CONFIGS_PY --commit <40 hex> [--write]

The file writes published config.json files as dict literals or ``transformers.*Config(...)`` keyword arguments.  It
is parsed with ``ast`` and evaluated by a small literal evaluator (constants, lists, dicts, ``[...] * n`` and the
keywords of one call); it is never imported or run.  Only assignments that are a whole config on their own are read
(not ``x = y.copy()`` followed by updates, and not ``{**other, ...}``).  ``PICKS`` names each variable, the
Hugging Face id it is identified as and why.  Existing preset files are never overwritten.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog_preset import write_catalog_preset  # noqa: E402

PATH = "src/maxtext/checkpoint_conversion/utils/hf_model_configs.py"

#: variable -> (Hugging Face id, aliases, why)
PICKS: dict[str, tuple[str, list[str], str]] = {
    "qwen3_30b_a3b_base_config": (
        "Qwen/Qwen3-30B-A3B-Base",
        ["qwen3-30b-a3b-base"],
        "HF_MODEL_CONFIGS maps 'qwen3-30b-a3b-base' to it; eos_token_id 151643 (<|endoftext|>) and 32,768 positions "
        "are the base model's",
    ),
    "gemma4_e2b_dict": (
        "google/gemma-4-E2B-it",
        ["gemma-4-e2b-it", "gemma-4-e2b"],
        "HF_MODEL_CONFIGS maps 'gemma4-e2b' to it; 35 layers / hidden 1536 is Gemma 4 E2B and eos_token_id [1, 106] "
        "(end_of_turn) is the instruction-tuned model's",
    ),
}


def literal(node: ast.AST) -> Any:
    """The value of a literal expression, ``[...] * n`` included; anything else is refused."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = literal(node.left), literal(node.right)
        if isinstance(left, list) and isinstance(right, int):
            return left * right
        raise ValueError("only list * int is evaluated")
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("a ** entry: the dict is not whole")
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.List):
        return [literal(e) for e in node.elts]
    return ast.literal_eval(node)


def configs(text: str) -> dict[str, dict]:
    """Variable -> config for every assignment that is a dict literal or one ``*Config(...)`` call of keywords."""
    out: dict[str, dict] = {}
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        try:
            if isinstance(value, ast.Dict):
                out[node.targets[0].id] = literal(value)
            elif isinstance(value, ast.Call) and not value.args and all(k.arg for k in value.keywords):
                out[node.targets[0].id] = {k.arg: literal(k.value) for k in value.keywords if k.arg}
        except ValueError:
            continue
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hf_model_configs_py", type=Path)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    found = configs(a.hf_model_configs_py.read_text())
    for var, (model_id, aliases, why) in PICKS.items():
        cfg = found[var]
        source = (
            f"{var} of github.com/AI-Hypercomputer/maxtext @{a.commit} {PATH} (a verbatim copy of the published "
            f"config.json written as Python); identified as {model_id}: {why}"
        )
        write_catalog_preset(
            cfg,
            model_id=model_id,
            aliases=aliases,
            source=source,
            config_ref=f"maxtext@{a.commit[:8]} hf_model_configs.py {var}",
            write=a.write,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
