"""Write model presets from verbatim config.json files held in fetched git repositories (issue 25 item 7).

    python scripts/catalog_from_git.py PICKS.tsv [--write] [--copy-to DIR]

PICKS.tsv: one line per preset, tab-separated: ``git-dir  repo(owner/name)  commit-ish  path  hf-id  aliases(,)  why``.
The file is read byte for byte with ``git show <commit>:<path>`` (a real config.json, never retyped), parsed as JSON,
and the preset is written.  A repository too large to fetch is read through the file index instead: the first
column is then ``readfile:<response.json>``, the saved answer of one read_file call (repo, path, commit, text,
total_chars); the text must be whole (its length equal to total_chars, no next_offset), and repo / commit / path
columns are taken from the answer; a Python file (``.py``) is parsed with ``ast.literal_eval`` of its one dict
assignment and the commit-ish column names the key of the config in it.  The preset is written by
kvplan.inputs.preset_writer.preset_toml (the fields kvplan reads).  With --copy-to, the bytes of a fetched file
are copied to ``<dir>/<org>--<name>/config.json`` with a SOURCE file naming repository, commit and path.  Existing
preset files are never overwritten.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from catalog_preset import write_catalog_preset  # noqa: E402


def _git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True).stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("picks", type=Path)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--copy-to", type=Path)
    a = ap.parse_args(argv)
    for line in a.picks.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        git_dir, repo, rev, path, model_id, aliases, why = line.split("\t")
        if git_dir.startswith("readfile:"):
            answer = json.loads(Path(git_dir.removeprefix("readfile:")).read_text())
            text_ = answer["text"]
            if len(text_) != answer["total_chars"] or answer.get("next_offset"):
                raise SystemExit(f"{git_dir}: the saved text is not the whole file")
            repo, commit, path, raw = answer["repo"], answer["commit"], answer["path"], text_.encode()
            if path.endswith(".py"):
                assign = next(n for n in ast.parse(text_).body if isinstance(n, ast.Assign))
                raw = json.dumps(ast.literal_eval(assign.value)[rev]).encode()
                path = f"{path} [{rev!r}]"
        else:
            commit = _git(git_dir, "rev-list", "-1", rev, "--", path).decode().strip()
            raw = _git(git_dir, "show", f"{commit}:{path}")
        cfg = json.loads(raw)
        where = f"github.com/{repo} @{commit} {path}"
        source = f"verbatim HF config.json of {model_id} as vendored in {where}" + (f"; {why}" if why else "")
        short = f"github.com/{repo} @{commit[:8]} {'/'.join(path.split('/')[-2:])}"
        written = write_catalog_preset(
            cfg,
            model_id=model_id,
            aliases=[x for x in aliases.split(",") if x],
            source=source,
            config_ref=short,
            write=a.write,
        )
        if written is not None and a.write and a.copy_to and not git_dir.startswith("readfile:"):
            folder = a.copy_to / model_id.replace("/", "--")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.json").write_bytes(raw)
            (folder / "SOURCE").write_text(f"{where}\n(byte copy via git show; {why})\n" if why else f"{where}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
