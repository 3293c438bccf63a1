"""Issue 26 item 2: every printed engine argument kvplan reads is checked against the kind its key needs before use.

Reproducers: ``kv_cache_dtype=5``, ``attention_backend=['fa3']``, ``speculative_algorithm=True`` in SGLang's
ServerArgs, ``'kv_cache_dtype': ['fp8']`` in vLLM's ``non-default args`` (exit 1 before); ``tp_size=4.5`` (silently 4)
and ``tp_size=True`` (silently 1): exit 2 naming the log key.  A log whose figures no catalogued GPU could print is
warned even without ``--gpu``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import InputError
from kvplan.inputs.logs import parse_log
from kvplan.inputs.logs.argtypes import ARG_KINDS, Kind, check_args, problem

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "validation" / "logs"
SG = (LOGS / "qwq-32b-4xL4-tp4.log").read_text()
VL = (LOGS / "vllm-39734-logo-nondefault.log").read_text()

runner = CliRunner()


def _sg(old: str, new: str) -> str:
    assert old in SG
    return SG.replace(old, new, 1)


SGLANG_CASES = [
    ("kv_cache_dtype='auto'", "kv_cache_dtype=5", "server_args.kv_cache_dtype=5", "an integer, not a name"),
    ("kv_cache_dtype='auto'", "kv_cache_dtype='auto', attention_backend=['fa3']", "attention_backend", "a list"),
    ("kv_cache_dtype='auto'", "kv_cache_dtype='auto', speculative_algorithm=True", "speculative_algorithm", "boolean"),
    ("tp_size=4,", "tp_size=4.5,", "server_args.tp_size=4.5", "not a whole number"),
    ("tp_size=4,", "tp_size=True,", "server_args.tp_size=True", "a boolean, not a count"),
    ("mem_fraction_static=0.85", "mem_fraction_static=[0.85]", "mem_fraction_static", "a list, not a number"),
    ("chunked_prefill_size=2048", "chunked_prefill_size={'a': 1}", "chunked_prefill_size", "a dict, not a count"),
]


@pytest.mark.parametrize(("old", "new", "key", "why"), SGLANG_CASES)
def test_type_confused_server_args_are_exit_2_naming_the_key(old, new, key, why):
    with pytest.raises(InputError) as e:
        parse_log(_sg(old, new))
    line = e.value.one_line()
    assert key in line and why in line and line.startswith("LOG: "), line


def test_vllm_non_default_args_list_where_a_dtype_belongs():
    text = VL.replace("non-default args: {", "non-default args: {'kv_cache_dtype': ['fp8'], ", 1)
    assert text != VL
    with pytest.raises(InputError, match=r"non-default args\.kv_cache_dtype=\['fp8'\] is a list"):
        parse_log(text)


@pytest.mark.parametrize("cmd", ["calibrate", "fit"])
def test_cli_exit_2_one_line(tmp_path, cmd):
    log = tmp_path / "bad.log"
    log.write_text(_sg("kv_cache_dtype='auto'", "kv_cache_dtype=5"))
    args = ["calibrate", str(log)] if cmd == "calibrate" else ["fit", "--from-log", str(log)]
    res = runner.invoke(cli_app.app, [*args, "--format", "json"])
    assert res.exit_code == 2, res.output
    assert "kv_cache_dtype=5" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert res.stdout == ""


def test_fuzzed_literals_never_escape_as_anything_but_input_errors():
    """Seeded: 8 keys x 12 literals of every kind; each log parses or is refused naming the key."""
    rng = random.Random(26)
    literals = ["5", "4.5", "True", "False", "None", "['fa3']", "{'a': 1}", "'x'", "-1", "1e400", "''", "(1, 2)"]
    keys = ["kv_cache_dtype", "attention_backend", "speculative_algorithm", "tp_size", "page_size",
            "mem_fraction_static", "enable_dp_attention", "context_length"]  # fmt: skip
    for key in keys:
        for lit in rng.sample(literals, len(literals)):
            text = _sg("kv_cache_dtype='auto'", f"kv_cache_dtype='auto', {key}={lit}")
            try:
                facts = parse_log(text)
            except InputError as e:
                assert key in e.one_line() or "LOG" in e.one_line()
                continue
            v = facts.server_args.get(key)
            assert problem(ARG_KINDS[key], v) is None, (key, lit, v)


def test_kind_rules():
    assert problem(Kind.COUNT, 4) is None and problem(Kind.COUNT, "4") is None and problem(Kind.COUNT, -1) is None
    assert (
        problem(Kind.COUNT, 4.0) is None and problem(Kind.COUNT, "auto") is None and problem(Kind.COUNT, None) is None
    )
    assert problem(Kind.COUNT, 4.5) == "not a whole number" and problem(Kind.COUNT, "4.5") == "not a whole number"
    assert problem(Kind.COUNT, True) == "a boolean, not a count" and problem(Kind.COUNT, "True")
    assert problem(Kind.NAME, "fp8") is None and problem(Kind.NAME, 5) == "an integer, not a name (text)"
    assert problem(Kind.BOOL, True) is None and problem(Kind.BOOL, "false") is None and problem(Kind.BOOL, [1])
    assert problem(Kind.NUMBER, 0.9) is None and problem(Kind.NUMBER, True) == "a boolean, not a number"
    check_args({"unknown_key": [1], "tp_size": 2}, source="server_args")  # keys kvplan does not read: not checked


def test_every_key_an_engine_reads_has_a_kind():
    from kvplan.engines.sglang.engine import LOG_ARG_KEYS as SG_KEYS
    from kvplan.engines.vllm.engine import LOG_ARG_KEYS as VL_KEYS

    missing = sorted({k for keys in [*SG_KEYS.values(), *VL_KEYS.values()] for k in keys} - set(ARG_KINDS))
    assert not missing


def test_real_logs_pass_the_type_check():
    for path in sorted(LOGS.glob("*.log")):
        try:
            parse_log(path.read_text(encoding="utf-8", errors="replace"))
        except InputError as e:
            assert "the log's" not in str(e), (path.name, e.one_line())


def test_a_log_larger_than_any_catalogued_gpu_is_warned_without_gpu():
    from kvplan.inputs.logs.plausible import CATALOGUE_FLOOR, largest_catalogued_gpu

    largest = largest_catalogued_gpu()
    assert largest is not None and largest[1] > CATALOGUE_FLOOR
    big = (
        SG.replace("avail mem=21.63 GB", "avail mem=99999999.63 GB")
        .replace("avail mem=6.09 GB", "avail mem=99999984.09 GB")
        .replace("avail mem=2.09 GB", "avail mem=99999980.09 GB")
    )
    facts = parse_log(big)
    warned = [w for w in facts.implausible if "largest catalogued GPU" in w]
    assert len(warned) == 1 and "99,999,999.63 GiB" in warned[0] and largest[0] in warned[0]
    res = runner.invoke(cli_app.app, ["fit", "--from-log", "-", "--format", "json"], input=big)
    if res.exit_code == 0:
        doc = json.loads(res.stdout)
        assert any("largest catalogued GPU" in w for w in doc["baseline"]["warnings"])
    assert not [w for w in parse_log(SG).implausible if "catalogued" in w]
