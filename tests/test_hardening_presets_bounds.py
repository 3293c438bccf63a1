"""Issue 26 item 3, presets: a TOML preset bounded in work, not only in bytes.  A 1 MiB user preset of 500,000
array items took 11 s in tomllib; now its values are counted from the text first
(:func:`kvplan.inputs.presets.loading.count_toml_elements`) against
:data:`~kvplan.inputs.presets.files.MAX_PRESET_ELEMENTS`, and tomllib never sees it.  Work bounds (tomllib calls,
regex matches), no timing: benchmarks/bench_preset_read.py measures the time."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.errors import InputError
from kvplan.inputs.presets import loading
from kvplan.inputs.presets.files import MAX_PRESET_BYTES, MAX_PRESET_ELEMENTS
from kvplan.inputs.presets.loading import count_toml_elements

ROOT = Path(__file__).resolve().parents[1]
CAP = MAX_PRESET_BYTES - 8192
runner = CliRunner()

HOSTILE = {
    "array of zeros": "pad = [" + "0," * (CAP // 2) + "0]",
    "many keys": "".join(f"k{i} = 1\n" for i in range(CAP // 12)),
    "many table headers": "".join(f"[t{i}]\n" for i in range(CAP // 10)),
    "many inline tables": "pad = [" + "{}," * (CAP // 3) + "{}]",
    "nested arrays": "pad = [" + "[0]," * (CAP // 4) + "[0]]",
}


def test_count_is_a_bound_and_stops_past_the_limit():
    assert count_toml_elements('id = "a,b"\nx = [1, 2]') == 5
    assert count_toml_elements("x = [" + "0," * 10**6 + "0]", limit=100) == 101
    # past the fast bound: strings, literal strings, multi-line strings and comments are skipped whole
    text = 'a = "x,,,,,"\n# ,,,,\nb = \'\'\',,,,\'\'\'\nc = """,,\\",,"""\nd = \',,\''
    assert count_toml_elements(text, limit=3) == 4
    assert count_toml_elements('x = "' + "," * 100_000 + '"', limit=10) == 1


def test_every_shipped_preset_is_far_under_the_budget():
    counts = [count_toml_elements(Path(f).read_text()) for f in glob.glob(str(ROOT / "configs" / "**" / "*.toml"))]
    assert counts and max(counts) * 20 < MAX_PRESET_ELEMENTS


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_presets_are_refused_before_tomllib(name, monkeypatch):
    import tomllib

    calls = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda s: calls.append(len(s)) or real(s))
    raw = HOSTILE[name].encode()
    assert len(raw) <= MAX_PRESET_BYTES
    with pytest.raises(InputError) as err:
        loading._parse_toml("user.toml", raw)
    assert f"more than {MAX_PRESET_ELEMENTS:,} values" in err.value.one_line()
    assert not calls


@pytest.mark.parametrize(
    "text",
    ['pad = "' + "," * CAP + '"', "# " + "," * CAP + "\nx = 1", "pad = '''" + ",'" * (CAP // 2) + "'''"],
)
def test_commas_in_strings_and_comments_are_not_values(text):
    doc = loading._parse_toml("user.toml", text.encode())
    assert doc  # parsed: the precise count skips them


def test_user_preset_cli_exit_2_one_line(tmp_path, monkeypatch):
    models = tmp_path / "models"
    models.mkdir()
    real = (ROOT / "configs" / "models" / "Qwen--Qwen3-8B.toml").read_text()
    text = real.replace('id = "Qwen/Qwen3-8B"', 'id = "t/hostile"', 1)
    (models / "t--hostile.toml").write_text("pad = [" + "0," * (CAP // 2) + "0]\n" + text)
    monkeypatch.setenv("KVPLAN_PRESETS", str(tmp_path))
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    r = runner.invoke(app, ["fit", "-m", "t/hostile", "-g", "h100-sxm"])
    assert r.exit_code == 2, r.output
    assert "more than 20,000 values" in r.stderr and len(r.stderr.strip().splitlines()) == 1 and not r.stdout
