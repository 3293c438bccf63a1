"""Issue 26 item 3, launch commands: capped in words, flags and word length before the slow steps (``shlex`` builds
a word in quadratic time; each unknown flag costs a did-you-mean search), warnings truncated with a count.  Work
bounds (calls counted), no timing; benchmarks/bench_launch_read.py measures the time."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.errors import InputError
from kvplan.inputs import flagtables, launch_words
from kvplan.inputs.launch import MAX_LAUNCH_FLAGS, MAX_LISTED, listed, parse_launch_command
from kvplan.inputs.launch_words import MAX_LAUNCH_WORDS, MAX_WORD_CHARS, check_words

runner = CliRunner()
VL = "vllm serve meta-llama/Llama-3.1-8B"


@pytest.fixture
def counted(monkeypatch):
    """Counts of the slow steps: shlex splits, table look-ups, did-you-mean searches."""
    calls = {"shlex": 0, "resolve": 0, "suggest": 0}
    real_shlex, real_resolve, real_suggest = shlex.shlex, flagtables.FlagTable.resolve, flagtables.FlagTable.suggest

    def counting_shlex(*a, **kw):
        calls["shlex"] += 1
        return real_shlex(*a, **kw)

    def resolve(self, token):
        calls["resolve"] += 1
        return real_resolve(self, token)

    def suggest(self, name):
        calls["suggest"] += 1
        return real_suggest(self, name)

    monkeypatch.setattr(launch_words.shlex, "shlex", counting_shlex)
    monkeypatch.setattr(flagtables.FlagTable, "resolve", resolve)
    monkeypatch.setattr(flagtables.FlagTable, "suggest", suggest)
    return calls


def _refused(text, counted) -> str:
    with pytest.raises(InputError) as err:
        parse_launch_command(text)
    assert counted["resolve"] == 0  # refused before any flag was looked up
    return err.value.one_line()


def test_124000_unknown_flags_are_refused_before_splitting(counted):
    line = _refused(VL + " " + " ".join(f"--zz{i} 1" for i in range(124_000)), counted)
    assert f"more than {MAX_LAUNCH_WORDS:,} words" in line and counted["shlex"] == 0


def test_too_many_flags_are_refused_before_lookup(counted):
    n = MAX_LAUNCH_FLAGS + 1
    line = _refused(VL + " " + " ".join(f"--zz{i}" for i in range(n)), counted)
    assert f"{n:,} flags (at most {MAX_LAUNCH_FLAGS:,})" in line


@pytest.mark.parametrize(
    "tail",
    [
        "a" * 400_000,  # one plain word
        "'" + "a " * 200_000 + "'",  # one quoted word with blanks
        '"' + '\\"x' * 100_000 + '"',  # escapes inside double quotes
    ],
)
def test_an_over_long_word_is_refused_before_splitting(tail, counted):
    line = _refused(f"{VL} --hf-overrides {tail}", counted)
    assert f"(at most {MAX_WORD_CHARS:,})" in line and counted["shlex"] == 0


def test_an_unclosed_quote_is_refused_before_splitting(counted):
    line = _refused(f"{VL} --hf-overrides '" + "a " * 200_000, counted)
    assert "no closing quotation" in line and counted["shlex"] == 0


def test_words_at_the_caps_are_read():
    value = "x" * (MAX_WORD_CHARS - 2)
    p = parse_launch_command(f"{VL} --served-model-name '{value}'")
    assert p.fields["model"] == "meta-llama/Llama-3.1-8B"
    check_words(" ".join(["a"] * MAX_LAUNCH_WORDS))
    with pytest.raises(InputError):
        check_words(" ".join(["a"] * (MAX_LAUNCH_WORDS + 1)))
    # quoting and separators split words as shlex does: ; & | ( ) and newlines end a word
    check_words(("a" * (MAX_WORD_CHARS - 1) + ";") * 10)
    check_words("'it''s' \"a \\\" b\" c\\ d")


def test_argv_commands_have_the_same_caps():
    with pytest.raises(InputError, match="words"):
        parse_launch_command(["vllm", "serve", "m", *(["--x"] * MAX_LAUNCH_WORDS)])
    with pytest.raises(InputError, match="characters"):
        parse_launch_command(["vllm", "serve", "m", "--hf-overrides", "{" * (MAX_WORD_CHARS + 1)])


def test_warnings_name_ten_flags_and_count_the_rest(counted):
    n = 500
    p = parse_launch_command(VL + " " + " ".join(f"--zz{i} 1" for i in range(n)))
    assert counted["suggest"] <= n  # one did-you-mean search per unknown flag (was two)
    line = next(w for w in p.warnings() if "does not know" in w)
    assert line.endswith(f"--zz{MAX_LISTED - 1}, and {n - MAX_LISTED:,} more") and len(line) < 300
    assert len(p.refusals) == MAX_LISTED + 1 and p.refusals[-1] == f"and {n - MAX_LISTED:,} more arguments it refuses"
    assert len(p.unknown) == n  # the data keeps every flag; only the lines are cut


def test_listed():
    assert listed(["--a", "--b", "--c"], 2) == "--a, --b, and 1 more"
    assert listed(["--a", "--b"], 2) == "--a, --b"


def test_cli_many_unknown_flags_one_short_warning(tmp_path):
    f = tmp_path / "launch.sh"
    f.write_text(VL + " " + " ".join(f"--zz{i} 1" for i in range(300)) + "\n")
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--format", "json", "--from-launch", str(f)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert len(r.stdout) < 20_000, len(r.stdout)
    assert [w for w in out["warnings"] if w.endswith("--zz9, and 290 more")]
    assert len([x for x in out["reasons"] if "refuses to start" in x]) == MAX_LISTED + 1
    f.write_text(VL + " " + " ".join(f"--zz{i} 1" for i in range(124_000)) + "\n")
    r = runner.invoke(app, ["fit", "-g", "h100-sxm", "--from-launch", str(f)])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and not r.stdout
