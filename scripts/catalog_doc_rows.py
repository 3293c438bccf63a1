"""Add catalog rows for new model presets to docs/presets.md (issue 25 item 7).

    python scripts/catalog_doc_rows.py SECTION "SHORT SOURCE {key}" STEM[=KEY] ...

Each row is made from the loaded preset (id, aliases, variants, weight format), kvplan's detected KV family and
layer count (``kvplan models`` facts) and the [config] KV heads x head_dim; it is appended to the table under
``### SECTION``.  ``{key}`` in the source text is replaced by the stem's KEY.  A row already present is skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.inputs import presets as p  # noqa: E402
from kvplan.inputs.resolve import resolve_model  # noqa: E402

DOC = ROOT / "docs" / "presets.md"


def row(stem: str, source: str) -> str:
    m = p.load_model_file(p.configs_dir() / "models" / f"{stem}.toml", use_cache=False)
    spec = resolve_model(m.id)
    cfg = m.config.get("text_config") or m.config
    heads = cfg.get("num_key_value_heads") or cfg.get("num_attention_heads")
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    family = getattr(spec, "family", None)
    family = getattr(family, "value", family)
    layers = cfg.get("num_hidden_layers")
    variants = ", ".join(f"`{v.id}` ({v.quantization})" for v in m.variants) or "—"
    aliases = ", ".join(m.aliases) or "—"
    quant = m.weights.quantization
    cells = [f"`{m.id}`", aliases, variants, str(family), str(layers), f"{heads} × {dim}", quant, source]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str]) -> int:
    section, source, *stems = argv
    lines = DOC.read_text().splitlines()
    head = lines.index(f"### {section}")
    end = head + 1
    while end < len(lines) and not lines[end].startswith("|"):
        end += 1
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    new = []
    for item in stems:
        stem, _, key = item.partition("=")
        r = row(stem, source.replace("{key}", key))
        if r.split(" | ")[0] + " |" not in "\n".join(lines):
            new.append(r)
    lines[end:end] = new
    DOC.write_text("\n".join(lines) + "\n")
    print(f"{len(new)} rows under {section}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
