"""Rewrite the view goldens tests/golden/*.txt (tests/golden_views.py) from the current code.

Run by hand only, after a deliberate, reviewed change to a view (say which in the commit message):

    python scripts/refresh_goldens.py            # every view golden
    python scripts/refresh_goldens.py fit_80.txt fit_120.txt

The names and how each is rendered (width, flags) are in tests/golden_views.py ``GOLDENS``.  A change in the
planner's numbers changes the fit goldens too: refresh them and read the diff.  The tests that read these files
(tests/test_cli.py) never write them.  The JSON contract goldens
(tests/golden/contract/) have their own script: scripts/refresh_contract_goldens.py.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("KVPLAN_CACHE_DIR", tempfile.mkdtemp(prefix="kvplan-golden-cache-"))
os.environ.setdefault("HF_ENDPOINT", "http://127.0.0.1:9")

from tests.golden_views import GOLDEN_DIR, GOLDENS  # noqa: E402


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in GOLDENS]
    if unknown:
        print(f"unknown golden(s): {', '.join(unknown)}; known: {', '.join(sorted(GOLDENS))}", file=sys.stderr)
        return 2
    for name in names or sorted(GOLDENS):
        path = GOLDEN_DIR / name
        text = GOLDENS[name]()
        old = path.read_text() if path.is_file() else None
        path.write_text(text)
        print(f"{name}: {'unchanged' if old == text else 'written' if old is None else 'changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
