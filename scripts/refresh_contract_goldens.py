"""Rewrite tests/golden/contract/*.json from the current code.

Run by hand only after a deliberate, reviewed behaviour change (say which in the commit message):
    python scripts/refresh_contract_goldens.py [CASE ...]
The test that reads these files (tests/test_contract_goldens.py) never writes them.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("KVPLAN_CACHE_DIR", tempfile.mkdtemp(prefix="kvplan-golden-cache-"))
os.environ.setdefault("HF_ENDPOINT", "http://127.0.0.1:9")

from tests.contract.cases import CASES  # noqa: E402
from tests.contract.run import run_case  # noqa: E402

GOLDEN = ROOT / "tests" / "golden" / "contract"


def main(names: list[str]) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    if not names or "accuracy" in names:
        from tests.contract.run import accuracy_rows

        (GOLDEN / "accuracy.json").write_text(json.dumps(accuracy_rows(), indent=1, sort_keys=True) + "\n")
        print("accuracy: every log, measured and cold")
        names = [n for n in names if n != "accuracy"]
    for name in names or sorted(CASES):
        data = run_case(CASES[name])
        (GOLDEN / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{name}: exit {data['exit_code']}")


if __name__ == "__main__":
    main(sys.argv[1:])
