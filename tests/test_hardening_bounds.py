"""Issue 26 item 3: parsers bounded in work, not only in bytes.

A config.json near the 64 MiB cap took 2 minutes and 5.4 GB (three Python walks of every value).  Now the values are
counted from the text before json builds anything (:func:`kvplan.inputs.read.count_json_elements`) against a budget
(:data:`~kvplan.inputs.read.MAX_CONFIG_ELEMENTS` for config.json / hf_quant_config.json,
:data:`~kvplan.inputs.read.MAX_JSON_ELEMENTS` for a safetensors index).  The tests assert the work bounds (counts,
early stops); benchmarks/bench_config_read.py measures the time and memory (no timing here).
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import InputError
from kvplan.inputs import read
from kvplan.inputs.read import MAX_CONFIG_ELEMENTS, MAX_JSON_ELEMENTS, count_json_elements, parse_json

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"
runner = CliRunner()


def test_count_is_exact_under_the_limit_and_stops_past_it():
    assert count_json_elements('{"a": [1, 2, 3], "b": "x,y"}') == 6
    assert count_json_elements("[" + "0," * 999 + "0]", limit=10_000) == 1_000
    # past the limit the scan stops at limit + 1 instead of walking 10^6 values
    assert count_json_elements("[" + "0," * 10**6 + "0]", limit=1000) == 1001
    # commas inside strings are not values: the precise pass skips each string in one match
    assert count_json_elements('["' + "," * 50_000 + '"]', limit=1000) == 1
    assert count_json_elements('["' + '\\",' * 20_000 + '", 1]', limit=1000) == 2
    assert count_json_elements('{"k": "a\\\\", "j": [1]}', limit=2) == 3  # an escaped backslash ends the string


def test_the_regex_scan_is_linear_in_matches(monkeypatch):
    """The precise pass visits at most limit + 1 structural matches (plus the strings between them)."""
    seen = 0
    real = read._JSON_TOKEN

    class Counting:
        def finditer(self, text):
            nonlocal seen
            for m in real.finditer(text):
                seen += 1
                yield m

    monkeypatch.setattr(read, "_JSON_TOKEN", Counting())
    text = "{" + ",".join(f'"{i}":0' for i in range(200_000)) + "}"
    assert count_json_elements(text, limit=5_000) == 5_001
    assert seen <= 2 * 5_001 + 2  # a key string and a comma per member


@pytest.mark.parametrize(
    "body",
    [
        "[" + "0," * 150_000 + "0]",
        "{" + ",".join(f'"k{i}":0' for i in range(150_000)) + "}",
        "[[0]" + ",[0]" * 80_000 + "]",
    ],
)
def test_a_config_over_the_value_budget_is_refused_before_parsing(tmp_path, body):
    cfg = json.loads((HF / "Qwen--Qwen3-8B" / "config.json").read_text())
    text = json.dumps(cfg)[:-1] + ', "pad": ' + body + "}"
    p = tmp_path / "config.json"
    p.write_text(text)
    res = runner.invoke(cli_app.app, ["show", str(p), "--format", "json"])
    assert res.exit_code == 2, res.output[:300]
    assert f"more than {MAX_CONFIG_ELEMENTS:,} values" in res.stderr and res.stdout == ""


def test_the_budget_is_per_kind_and_real_files_are_far_below_it():
    assert read.max_elements_of("config.json") == MAX_CONFIG_ELEMENTS
    assert read.max_elements_of("hf_quant_config.json") == MAX_CONFIG_ELEMENTS
    assert read.max_elements_of("model.safetensors.index.json") == MAX_JSON_ELEMENTS
    files = glob.glob(str(ROOT / "tests" / "data" / "**" / "*.json"), recursive=True)
    assert files
    worst = max(count_json_elements(Path(f).read_text()) for f in files)
    assert worst * 20 < MAX_CONFIG_ELEMENTS
    # a safetensors index of a 1.6M-tensor checkpoint would be over; the largest real ones hold ~150,000
    index = {"metadata": {"total_size": 1}, "weight_map": {f"t{i}": "a.safetensors" for i in range(150_000)}}
    assert parse_json(json.dumps(index), field="--model", where="index")["metadata"]["total_size"] == 1
    with pytest.raises(InputError, match="more than 1,000 values"):
        parse_json(json.dumps(index), field="--model", where="index", max_elements=1000)


def test_a_string_full_of_commas_is_parsed_not_refused():
    doc = parse_json('{"note": "' + "," * 300_000 + '"}', field="--model", where="config.json", max_elements=1000)
    assert len(doc["note"]) == 300_000
