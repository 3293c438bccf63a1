"""Issue 26 item 1: untrusted text (a config.json's ``_name_or_path`` / ``architectures[0]``, user presets' ids, names
and aliases, plan deployment names) never reaches stdout raw.

Every command that prints such a name runs with an OSC 52 clipboard write (``ESC ] 52 ; c ; ... BEL``), a screen
clear, a bidi override and a spreadsheet formula in it, in every output format it has.  Checked on stdout: no ESC, no
BEL, no CR, no C1 control, no bidi override; no CSV cell starting with ``=``, ``+``, ``@`` or a ``-`` that is not a
number; JUnit well-formed (parsed back) with the names escaped; JSON round-trips to the exact hostile string (JSON is
left alone: ``json.dumps`` escapes controls).  The character rules themselves are tested on their own first.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app as cli_app
from kvplan.errors import csv_cell, terminal_text, xml_text
from kvplan.views import sanitize

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"
SHIPPED_MODEL = ROOT / "configs" / "models" / "Qwen--Qwen3-8B.toml"

OSC52 = "\x1b]52;c;ZXZpbA==\x07"
#: what a hostile name holds: OSC 52, OSC 8 (a link), a screen clear, a CR, a C1 CSI, a bidi override, a formula
HOSTILE = f'=HYPERLINK("http://x"){OSC52}\x1b]8;;http://e\x1b\\\x1b[2J\r\x9b31m\u202eevil'
#: characters that must never be on stdout raw (table, CSV, JUnit; JSON escapes them itself)
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(cli_app.app, list(args), env=env)


def assert_clean(out: str) -> None:
    bad = sorted({hex(ord(c)) for c in RAW.findall(out)})
    assert not bad, (bad, out[:2000])


def assert_csv_clean(out: str) -> None:
    assert_clean(out)
    for row in csv.reader(io.StringIO(out)):
        for cell in row:
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
            assert not cell.startswith("-") or csv_cell(cell) == cell, cell


# ------------------------------------------------------------------------------------------ the rules


def test_terminal_text_escapes_every_control_and_bidi_character():
    assert terminal_text(OSC52) == "\\x1b]52;c;ZXZpbA==\\x07"
    assert terminal_text("a\rb\tc\x7fd\x9be") == "a\\rb\\tc\\x7fd\\x9be"
    assert terminal_text("x\u202ey\u2066z\u200fw") == "x\\u202ey\\u2066z\\u200fw"
    assert terminal_text("a\nb") == "a\\nb"
    assert terminal_text("a\nb", newlines=True) == "a\nb"
    plain = "DeepSeek-V4.1-Flash × 8 ≤ 2"  # printable non-ASCII stays
    assert terminal_text(plain) is plain
    every = "".join(map(chr, range(0x110000)))
    assert not RAW.search(terminal_text(every.replace("\ud800", "")[:0x3000]))


@pytest.mark.parametrize(
    ("cell", "want"),
    [
        ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tq", "'\\tq"),
        ("\r=1", "'\\r=1"),
        ("-1", "-1"),
        ("-1,024", "-1,024"),
        ("+2.5e3", "+2.5e3"),
        ("-0.5 GiB", "-0.5 GiB"),
        ("-", "-"),
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_csv_cell_neutralises_formulas_not_numbers(cell, want):
    assert csv_cell(cell) == want


def test_csv_cell_leaves_non_strings():
    for v in (5, -3, 1.5, None, True):
        assert csv_cell(v) is v


def test_xml_text_is_always_well_formed():
    for s in (HOSTILE, "\x00\x01\x08\x0b\x0c\x1f", "\ufffe\uffff", "a\ud800b", "<&>\"'"):
        from xml.sax.saxutils import escape, quoteattr

        ET.fromstring(f"<a b={quoteattr(xml_text(s))}>{escape(xml_text(s))}</a>")


def test_console_backstop_escapes_plain_strings_but_keeps_rich_styles():
    from kvplan.views.console import terminal_console

    buf = io.StringIO()
    con = terminal_console(buf)
    con.print(f"raw {OSC52} end", markup=False)
    out = buf.getvalue()
    assert "\\x1b]52" in out
    assert_clean(out)
    # a real terminal console still gets its colour codes (the backstop touches text segments only)
    buf = io.StringIO()
    term = sanitize.console_class()(file=buf, force_terminal=True, color_system="standard", width=80, highlight=False)
    term.print(f"[bold red]x[/] {OSC52}")
    assert "\x1b[1;31m" in buf.getvalue() and "\\x1b]52" in buf.getvalue() and "\x07" not in buf.getvalue()


# ------------------------------------------------------------------------------------------ the commands


@pytest.fixture(scope="module")
def hostile_config(tmp_path_factory) -> Path:
    cfg = json.loads((HF / "Qwen--Qwen3-8B" / "config.json").read_text())
    cfg["_name_or_path"] = HOSTILE
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.fixture(scope="module")
def presets(tmp_path_factory) -> Path:
    """A user preset folder: a GPU with a hostile name and alias, a model with a hostile id and alias."""
    root = tmp_path_factory.mktemp("presets")
    esc = json.dumps  # a TOML basic string accepts JSON's \\uXXXX escapes
    (root / "hardware").mkdir()
    (root / "hardware" / "evil-gpu.toml").write_text(
        f'id = "evil-gpu"\nname = {esc(HOSTILE)}\naliases = [{esc("=evil" + OSC52)}]\nmemory_mib = 81559\n'
        f'source = {esc("=src" + OSC52)}\nsm = "9.0"\nfp8 = true\n'
    )
    (root / "models").mkdir()
    lines = []
    for line in SHIPPED_MODEL.read_text().splitlines():
        if line.startswith("id = "):
            line = f"id = {esc('evil/' + OSC52)}"
        elif line.startswith("aliases = "):
            line = f"aliases = [{esc('=HYPERLINK(1)' + OSC52)}]"
        lines.append(line)
    (root / "models" / "evil.toml").write_text("\n".join(lines) + "\n")
    return root


def test_fit_title_and_every_format(hostile_config):
    for fmt in ("table", "csv"):
        res = run("fit", "--model", str(hostile_config), "--gpu", "h100", "--format", fmt)
        assert res.exit_code == 0, res.output
        assert "\\x1b]52" in res.stdout
        (assert_clean if fmt == "table" else assert_csv_clean)(res.stdout)
    res = run("fit", "--model", str(hostile_config), "--gpu", "h100", "--format", "json")
    assert json.loads(res.stdout)["model"] == HOSTILE  # JSON untouched: the exact string, escaped by json


def test_fit_explain_and_compare_tables(hostile_config):
    res = run("fit", "--model", str(hostile_config), "--gpu", "h100", "--format", "table", "--explain")
    assert res.exit_code == 0, res.output
    assert_clean(res.stdout)
    res = run("fit", "--model", str(hostile_config), "--gpu", "h100", "--format", "table", "--engine", "all")
    if res.exit_code == 0:
        assert_clean(res.stdout)


def test_show_every_format(hostile_config):
    for fmt in ("table", "csv", "json"):
        res = run("show", str(hostile_config), "--format", fmt)
        assert res.exit_code == 0, res.output
        (assert_csv_clean if fmt == "csv" else assert_clean)(res.stdout)


def test_user_presets_through_models_gpus_and_fit(presets):
    env = {"KVPLAN_PRESETS": str(presets)}
    for cmd in ("models", "gpus"):
        for fmt in ("table", "csv", "json"):
            res = run(cmd, "--format", fmt, env=env)
            assert res.exit_code == 0, res.output
            assert "evil" in res.stdout
            (assert_csv_clean if fmt == "csv" else assert_clean)(res.stdout)
    for fmt in ("table", "csv"):
        res = run("fit", "--model", "Qwen/Qwen3-8B", "--gpu", "evil-gpu", "--format", fmt, env=env)
        assert res.exit_code == 0, res.output
        assert "\\x1b]52" in res.stdout
        (assert_clean if fmt == "table" else assert_csv_clean)(res.stdout)


def test_sweep_table(hostile_config):
    res = run("sweep", "--model", str(hostile_config), "--gpu", "h100", "--tp", "1,2", "--format", "table")
    assert res.exit_code == 0, res.output
    assert_clean(res.stdout)


def test_sweep_csv(hostile_config):
    for model in (str(hostile_config), "Qwen/Qwen3-8B"):
        res = run("sweep", "--model", model, "--gpu", "h100", "--tp", "1,2", "--format", "csv")
        assert res.exit_code == 0, res.output
        assert_csv_clean(res.stdout)


def _plan(tmp_path: Path, model: str) -> Path:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        "version = 1\n[defaults]\n"
        f"model = {json.dumps(model)}\n"
        'gpu = "h100-sxm"\nfree_memory = "80GiB"\nweight_memory = "16GiB"\nmem_fraction_static = 0.75\n'
        f'[[deployment]]\nname = {json.dumps(HOSTILE)}\n[deployment.target]\ncontext = "32k"\nrequests = 8\n'
        f'[[deployment]]\nname = {json.dumps("=fail" + OSC52)}\n[deployment.target]\ncontext = "32k"\n'
        "requests = 100\n"
    )
    return plan


def test_check_table_json_and_junit(tmp_path, hostile_config):
    for model in ("Qwen/Qwen3-8B", str(hostile_config)):
        plan = _plan(tmp_path, model)
        res = run("check", str(plan), "--format", "table")
        assert res.exit_code == 3, res.output
        assert "\\x1b]52" in res.stdout
        assert_clean(res.stdout)
        res = run("check", str(plan), "--format", "json")
        names = [d["name"] for d in json.loads(res.stdout)["deployments"]]
        assert names[0] == HOSTILE
        report = tmp_path / "r.xml"
        res = run("check", str(plan), "--format", "json", "--report", str(report))
        text = report.read_text(encoding="utf-8")
        assert_clean(text)
        root = ET.fromstring(text)
        cases = root.findall(".//testcase")
        assert [c.get("name") for c in cases] == [terminal_text(HOSTILE), terminal_text("=fail" + OSC52)]
        assert len(root.findall(".//failure")) == 1


def test_junit_of_every_control_character_is_well_formed():
    from kvplan.planning.check import CheckResult
    from kvplan.views.check import to_junit

    for name in ("".join(map(chr, range(32))), "\ufffe\uffff\x7f\x85", HOSTILE):
        r = CheckResult(
            name=name, model=name, gpu=name, engine="sglang", num_gpus=1, context=1024, requests=1, headroom=0.0,
            required_tokens=1024, pool_tokens=1, concurrency=0, headroom_achieved=0.0, passed=False, reason=name,
        )  # fmt: skip
        text = to_junit([r], path="p\x1b.toml")
        assert_clean(text)
        case = ET.fromstring(text).find(".//testcase")
        assert case is not None and case.get("name") == xml_text(name)
