"""The JSON of fit / sweep / solve / check / calibrate on the fixtures is what it was when recorded.

The goldens were recorded from the code before the package was re-laid by layer (issue 10); a refactor that
changes any number, key or exit code fails here.  Refresh only by hand: scripts/refresh_contract_goldens.py.
"""

from __future__ import annotations

import json

import pytest

from tests.contract.cases import CASES, ROOT
from tests.contract.run import run_case

GOLDEN = ROOT / "tests" / "golden" / "contract"


def test_every_case_has_a_golden():
    missing = sorted(n for n in CASES if not (GOLDEN / f"{n}.json").is_file())
    assert not missing, f"no golden for {missing}: run scripts/refresh_contract_goldens.py by hand"


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_unchanged(name):
    path = GOLDEN / f"{name}.json"
    if not path.is_file():
        pytest.fail(f"{path} missing (the test never writes it)")
    want = json.loads(path.read_text())
    got = json.loads(json.dumps(run_case(CASES[name]), sort_keys=True))
    assert got["exit_code"] == want["exit_code"]
    assert got["stdout"] == want["stdout"]


def test_accuracy_evaluation_unchanged():
    from tests.contract.run import accuracy_rows

    want = json.loads((GOLDEN / "accuracy.json").read_text())
    assert accuracy_rows() == want
