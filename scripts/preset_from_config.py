"""Write a model preset (configs/models/<org>--<name>.toml) from a verbatim Hugging Face config.json.

    python scripts/preset_from_config.py CONFIG.json --id ORG/NAME --source "where the file was copied from" \
        [--alias SHORT ...] [--quantization fp8] [--variant ID=QUANT ...] [--notes TEXT] [-o FILE | --write]

The weight format defaults to what the config says (``quantization_config`` / ``torch_dtype``, the rule of
kvplan.hfconfig.quant.quantization_from_config).  ``--write`` writes configs/models/<org>--<name>.toml and
refuses to overwrite; ``-o`` writes the given file; neither prints the text.  The text is made by
kvplan.inputs.preset_writer.preset_toml (docs/presets.md), the writer ``kvplan models add`` uses for user presets.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.errors import InputError  # noqa: E402
from kvplan.inputs.preset_writer import preset_file_name, preset_toml  # noqa: E402


def _variants(items: list[str], source: str) -> list[dict[str, str]]:
    out = []
    for item in items:
        vid, sep, quant = item.partition("=")
        if not sep or "/" not in vid:
            raise InputError(f"--variant {item!r}: give ORG/NAME=QUANTIZATION", field="--variant")
        out.append({"id": vid, "quantization": quant, "source": f"published re-upload of the same geometry; {source}"})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path, help="a verbatim config.json")
    ap.add_argument("--id", required=True, help="the Hugging Face id, ORG/NAME")
    ap.add_argument("--source", required=True, help="where the config.json was copied from (repo, path, commit)")
    ap.add_argument("--config-ref", help="the short source every [config] comment repeats (default: --source)")
    ap.add_argument("--alias", action="append", default=[], help="a short name people type (repeatable)")
    ap.add_argument("--quantization", help="weight format (default: read from the config)")
    ap.add_argument("--variant", action="append", default=[], help="ORG/NAME=QUANT of a re-upload (repeatable)")
    ap.add_argument("--notes", default="")
    out = ap.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", type=Path)
    out.add_argument("--write", action="store_true", help="write configs/models/<org>--<name>.toml")
    a = ap.parse_args(argv)
    try:
        cfg = json.loads(a.config.read_text())
        quant = a.quantization
        if quant is None:
            from kvplan.hfconfig.quant import quantization_from_config

            quant = quantization_from_config(cfg)
        text = preset_toml(
            cfg,
            model_id=a.id,
            source=a.source,
            config_ref=a.config_ref,
            aliases=a.alias,
            notes=a.notes,
            quantization=quant,
            variants=_variants(a.variant, a.source),
        )
    except (OSError, ValueError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    target = a.output or (ROOT / "configs" / "models" / preset_file_name(a.id) if a.write else None)
    if target is None:
        sys.stdout.write(text)
        return 0
    if a.write and target.exists():
        print(f"error: {target} exists", file=sys.stderr)
        return 2
    target.write_text(text)
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
