"""kvplan check PLAN.toml: strict plan files, hand-checked targets, JSON / JUnit reports, exit codes.

Measured Qwen3-8B (tests/test_sweep.py): mfs 0.75 -> 320,398 tokens.  Target 8 x 32,768 = 262,144 tokens:
headroom achieved = 320,398 / 262,144 - 1 = 22.22 %.  +20 % needs ceil(262,144 x 1.2) = 314,573 tokens (pass);
+25 % needs 327,680 (fail).  9 x 32k fits (320,398 // 32,768 = 9); 10 does not.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.planning.check import check, load_plan
from kvplan.views.check import to_junit
from tests.test_sweep import run

ROOT = Path(__file__).resolve().parent.parent

PLAN = """\
version = 1
[defaults]
model = "Qwen/Qwen3-8B"
gpu = "h100-sxm"
free_memory = "80GiB"
weight_memory = "16GiB"
mem_fraction_static = 0.75

[[deployment]]
name = "headroom-20"
context_length = "32k"
[deployment.target]
context = "32k"
requests = 8
headroom = 20

[[deployment]]
name = "headroom-25"
context_length = 32768
[deployment.target]
context = 32768
requests = 8
headroom = 25

[[deployment]]
name = "ten-requests"
[deployment.target]
context = "32k"
requests = 10
"""


def write(tmp_path: Path, text: str, name: str = "plan.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_hand_checked_targets(tmp_path):
    res = check(load_plan(write(tmp_path, PLAN)))
    by = {r.name: r for r in res}
    a, b, c = by["headroom-20"], by["headroom-25"], by["ten-requests"]
    assert a.passed and a.pool_tokens == 320_398 and a.required_tokens == 314_573 and a.headroom_achieved == 22.22
    assert not b.passed and b.required_tokens == 327_680 and "headroom 22.2% < 25%" in b.reason
    assert not c.passed and c.concurrency == 9 and "room for 9" in c.reason
    assert c.context == 32768  # the target context became the server's --context-length


def test_shorter_target_context_than_server(tmp_path):
    text = (
        PLAN.split("[[deployment]]")[0]
        + """
[[deployment]]
name = "server-64k-target-16k"
context_length = "64k"
allow_long_context = true
[deployment.target]
context = "16k"
requests = 19
"""
    )
    (r,) = check(load_plan(write(tmp_path, text)))
    # 320,398 // 16,384 = 19 requests of 16k on a 64k server (64k > Qwen3-8B's 40,960: the override is on)
    assert r.passed and r.concurrency == 19


@pytest.mark.parametrize(
    "snippet,words",
    [
        ("tpp = 2", "deployment 'x' (#1): unknown key 'tpp'; did you mean 'tp'?"),
        ('tp = "two"', "deployment 'x' (#1): key 'tp': Input should be a valid integer"),
        ("tp = 2.0", "key 'tp'"),
        ("mem_fraction_static = 1.5", "key 'mem_fraction_static': must be a fraction in (0, 1]"),
        ("mem_fraction_static = nan", "key 'mem_fraction_static'"),
        ('context_length = "12q"', "context_length"),
        ('engine = "trt"', "key 'engine'"),
    ],
)
def test_bad_deployment_keys(tmp_path, snippet, words):
    text = f'[[deployment]]\nname = "x"\nmodel = "Qwen/Qwen3-8B"\n{snippet}\n[deployment.target]\ncontext = 1024\nrequests = 1\n'
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_plan(p)
    assert str(p) in e.value.one_line() and words in e.value.one_line()


@pytest.mark.parametrize(
    "text,words",
    [
        ('[[deployment]]\nname = "x"\n', "missing key 'target'"),
        ('[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 1024\n', "missing key 'target.requests'"),
        ('[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 1024\nrequests = 0\n', "key 'target.requests'"),
        (
            '[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 1024\nrequests = 1\nheadroom = -5\n',
            "key 'target.headroom'",
        ),
        (
            '[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 1024\nrequests = 1\nslack = 5\n',
            "unknown key 'target.slack'",
        ),
        ('[[deployment]]\nname = "x"\n[deployment.target]\ncontext = "abc"\nrequests = 1\n', "target.context"),
        ('[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 1\nrequests = 1\n', "at least 2 tokens"),
        (
            '[defaults]\ngpus = "h100"\n[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 9\nrequests = 1\n',
            "unknown key 'defaults.gpus'",
        ),
        (
            'owner = "me"\n[[deployment]]\nname = "x"\n[deployment.target]\ncontext = 9\nrequests = 1\n',
            "unknown key 'owner'",
        ),
        ("version = 1\n", "missing key 'deployment'"),
        ('[[deployment]]\nname = "a"\n[deployment.target]\ncontext = 9\nrequests = 1\n' * 2, "duplicate name 'a'"),
        ("[[deployment]\n", "not valid TOML"),
    ],
)
def test_bad_plan_files(tmp_path, text, words):
    with pytest.raises(InputError) as e:
        load_plan(write(tmp_path, text))
    assert words in e.value.one_line()


def test_unknown_model_names_the_deployment(tmp_path):
    p = write(
        tmp_path, '[[deployment]]\nname = "x"\nmodel = "no/such"\n[deployment.target]\ncontext = 9\nrequests = 1\n'
    )
    with pytest.raises(InputError) as e:
        check(load_plan(p), path=str(p))
    assert "deployment 'x'" in e.value.one_line() and "unknown model 'no/such'" in e.value.one_line()


def test_reports(tmp_path):
    res = check(load_plan(write(tmp_path, PLAN)), path="plan.toml")
    root = ET.fromstring(to_junit(res, path="plan.toml"))
    suite = root.find("testsuite")
    assert root.get("tests") == "3" and root.get("failures") == "2"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["headroom-20", "headroom-25", "ten-requests"]
    assert cases[0].find("failure") is None and cases[1].find("failure") is not None


def test_cli_check(tmp_path):
    p = write(tmp_path, PLAN)
    rj, rx = tmp_path / "r.json", tmp_path / "r.xml"
    r = run("check", str(p), "--format", "json", "--report", str(rj))
    assert r.exit_code == 3 and "2 of 3 deployment(s) miss their target" in r.stderr
    data = json.loads(rj.read_text())
    assert data["failures"] == 2 and not data["passed"]
    assert json.loads(r.stdout) == data
    r = run("check", str(p), "--format", "table", "--report", str(rx))
    assert r.exit_code == 3 and "FAIL headroom-25" in r.stdout
    assert ET.parse(rx).getroot().get("failures") == "2"
    r = run("check", str(p), "--report", str(tmp_path / "r.txt"))
    assert r.exit_code == 2 and "--report" in r.stderr


def test_cli_check_bad_file_exits_2(tmp_path):
    p = write(tmp_path, '[[deployment]]\nname = "x"\ntpp = 1\n[deployment.target]\ncontext = 9\nrequests = 1\n')
    r = run("check", str(p))
    assert r.exit_code == 2 and "unknown key 'tpp'" in r.stderr and "Traceback" not in r.output
    r = run("check", str(tmp_path / "missing.toml"))
    assert r.exit_code == 2 and "no such file" in r.stderr


def test_shipped_example_passes():
    r = run("check", str(ROOT / "docs" / "examples" / "plan.toml"), "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["passed"]


GOLDEN = """\
kvplan check plan.toml: 1 passed, 2 failed

 deployment    GPUs        target  room  pool tokens  headroom  result
 ─────────────────────────────────────────────────────────────────────
 headroom-20      1  8 x 32k +20%     9      320,398     22.2%  PASS
 headroom-25      1  8 x 32k +25%     9      320,398     22.2%  FAIL
 ten-requests     1  10 x 32k +0%     9      320,398     -2.2%  FAIL

FAIL headroom-25: headroom 22.2% < 25%: pool 320,398 tokens, needs 327,680
FAIL ten-requests: 10 request(s) of 32,768 tokens wanted, room for 9 (pool 320,398 tokens,
max_running_requests 4096)
"""


def test_golden_check_table(tmp_path):
    from kvplan.views.check import render
    from kvplan.views.console import fixed_console, recorded_text

    con = fixed_console()
    render(check(load_plan(write(tmp_path, PLAN))), path="plan.toml", console=con)
    text = recorded_text(con)
    assert text == GOLDEN


# ------------------------------------------------------------------------------------------------ issue 11


def test_a_context_the_engine_refuses_fails_with_its_reason(tmp_path):
    text = (
        PLAN.split("[[deployment]]")[0]
        + """
[[deployment]]
name = "qwen3-8b-128k"
context_length = "128k"
[deployment.target]
context = "32k"
requests = 1
"""
    )
    (r,) = check(load_plan(write(tmp_path, text)))
    assert not r.passed and not r.fits
    assert r.reason == (
        "does not fit: context_length 131,072 exceeds the model's 40,960: SGLang refuses it unless "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (or --allow-long-context)"
    )
    assert r.reasons == [r.reason.removeprefix("does not fit: ")]


def test_a_plan_entry_without_a_gpu_is_an_input_error(tmp_path):
    p = write(
        tmp_path,
        '[[deployment]]\nname = "x"\nmodel = "Qwen/Qwen3-8B"\n[deployment.target]\ncontext = "8k"\nrequests = 1\n',
    )
    with pytest.raises(InputError) as e:
        check(load_plan(p), path=str(p))
    assert "--gpu" in e.value.one_line() and "deployment 'x'" in e.value.one_line()
    r = run("check", str(p))
    assert r.exit_code == 2 and "--gpu" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    # a plan entry without a model is not planned as the default deployment (issue 26): exit 2 naming the entry
    p = write(tmp_path, '[[deployment]]\nname = "d"\n[deployment.target]\ncontext = "1m"\nrequests = 1\n', "d.toml")
    with pytest.raises(InputError) as e:
        check(load_plan(p))
    assert "no model" in e.value.one_line() and "deployment 'd'" in e.value.one_line()
    r = run("check", str(p))
    assert r.exit_code == 2 and "no model" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_workload_target(tmp_path):
    # 320,398 tokens // 9,216 = 34 requests of 8,192 + 1,024 tokens (page 1)
    text = (
        PLAN.split("[[deployment]]")[0]
        + """
[[deployment]]
name = "chat"
context_length = "32k"
input_len = "8k"
output_len = 1024
[deployment.target]
requests = 34

[[deployment]]
name = "chat-35"
context_length = "32k"
input_len = 8192
output_len = 1024
[deployment.target]
requests = 35
"""
    )
    a, b = check(load_plan(write(tmp_path, text)))
    assert a.passed and a.concurrency == 34 and a.context == 9216 and (a.input_len, a.output_len) == (8192, 1024)
    assert a.required_tokens == 34 * 9216
    assert not b.passed and "35 request(s) of 8,192+1,024 tokens wanted, room for 34" in b.reason
    bad = (
        PLAN.split("[[deployment]]")[0] + '[[deployment]]\nname = "x"\ninput_len = 10\n[deployment.target]\n'
        'context = "8k"\nrequests = 1\n'
    )
    with pytest.raises(InputError) as e:
        load_plan(write(tmp_path, bad, "bad.toml"))
    assert "not both" in e.value.one_line()
