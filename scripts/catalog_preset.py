"""The one write step of the catalog scripts (catalog_from_git.py, catalog_mlc.py, catalog_maxtext.py): a config
dict read verbatim from a public source becomes a preset file under configs/models, never over an existing one."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.hfconfig.quant import quantization_from_config  # noqa: E402
from kvplan.inputs.preset_writer import preset_file_name, preset_toml  # noqa: E402


def write_catalog_preset(
    cfg: dict[str, Any], *, model_id: str, aliases: list[str], source: str, config_ref: str, write: bool
) -> Path | None:
    """The preset of ``cfg`` (its quantization read from the config itself), written when ``write``; prints the
    file name.  An existing preset is left alone ("skip NAME: exists") and None returned; else its path."""
    target = ROOT / "configs" / "models" / preset_file_name(model_id)
    if target.exists():
        print(f"skip {target.name}: exists")
        return None
    text = preset_toml(
        cfg,
        model_id=model_id,
        source=source,
        config_ref=config_ref,
        aliases=aliases,
        notes="",
        quantization=quantization_from_config(cfg),
        variants=[],
    )
    if write:
        target.write_text(text)
    print(target.name)
    return target
