"""The terminal views as a user sees them: the first screen of ``kvplan fit``, ``--explain``, the listings at 80
columns, no auto-highlighting, no trailing spaces off a terminal, hanging indents, the request cap's source."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.deployment import Deployment
from kvplan.planning.plan import fit
from kvplan.views import render
from kvplan.views.console import fixed_console, recorded_text

runner = CliRunner()
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def table(*args: str, columns: int = 80) -> str:
    res = runner.invoke(app, ["fit", *args, "--format", "table"], env={"COLUMNS": str(columns)})
    assert res.exit_code in (0, 3), res.output
    return res.stdout


def rendered(result, width: int = 80, **kw) -> str:
    con = fixed_console(width)
    render.table(result, console=con, **kw)
    return recorded_text(con)


# ------------------------------------------------------------------------------------------ first screen


def test_default_first_screen_is_at_most_25_lines_at_80_columns():
    out = table()
    lines = out.splitlines()
    assert len(lines) <= 25, out
    assert all(len(line) <= 80 for line in lines), out
    d = fit(Deployment())
    assert lines[0].startswith("deepseek-ai/DeepSeek-V4.1-Flash on 8x ")
    assert d.verdict.split(",")[0] in out  # the verdict
    for needle in (
        "KV bytes per token",
        "KV budget",
        "KV pool",
        "longest request",
        "at full context",
        "max_running_requests",
        "memory per GPU",
        "--explain",
    ):
        assert needle in out, needle
    assert re.search(r"^max_running_requests\s+16\s+given|^ max_running_requests\s+16\s+given", out, re.M), out
    assert "oWWW" in out  # the memory bar
    assert "assumptions" in out.splitlines()[-1]  # the one-line summary, last
    for a in d.assumptions:  # assumptions only with --explain
        assert a not in out


def test_every_warning_is_on_the_first_screen():
    args = ("-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--context-length", "128k")
    d = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", context_length=131072))
    assert d.warnings
    flat = " ".join(table(*args).split())
    for w in d.warnings:
        assert " ".join(w.split()) in flat, w


def test_explain_adds_the_assumptions_pools_and_bases_and_json_csv_are_unchanged():
    short, long = table(columns=120), table("--explain", columns=120)
    assert table("-v", columns=120) == long
    assert len(long.splitlines()) > len(short.splitlines())
    d = fit(Deployment())
    flat = " ".join(long.split())
    for a in d.assumptions:
        assert " ".join(a.split()) in flat, a
    assert "pools per GPU" in long and "other KV bases on the same budget" in long and "--explain" not in long
    for fmt in ("json", "csv"):
        plain = runner.invoke(app, ["fit", "--format", fmt]).stdout
        assert runner.invoke(app, ["fit", "--format", fmt, "--explain"]).stdout == plain


def test_no_trailing_spaces_off_a_terminal_and_hanging_indents():
    out = table("-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--context-length", "128k")
    lines = out.splitlines()
    assert all(line == line.rstrip() for line in lines)
    warn = next(i for i, line in enumerate(lines) if line.startswith("  ! "))
    assert lines[warn + 1].startswith("    ") and not lines[warn + 1].startswith("     ")  # under the text
    assert lines[1].startswith("  ")  # the title wraps under itself


def test_model_names_and_versions_are_never_highlighted():
    from rich.console import Console

    from kvplan.views.console import terminal_console

    buf = io.StringIO()
    buf.isatty = lambda: True  # type: ignore[method-assign]
    con = terminal_console(buf)
    assert isinstance(con, Console)
    con._force_terminal = True
    con._color_system = con._detect_color_system()
    render.table(fit(Deployment()), console=con)
    text = buf.getvalue()
    assert "\x1b[" in text  # colour is on
    assert "DeepSeek-V4.1-Flash" in text  # no escape inside the name
    assert "SGLang 0.5.23" in text and "fp8_e4m3" in text
    assert "[bold]" not in ANSI.sub("", text)


def test_markup_like_text_in_data_prints_as_is():
    r = fit(Deployment(), warnings=["odd [bold]name[/bold] and [1] stay as typed"])
    out = rendered(r)
    assert "odd [bold]name[/bold] and [1] stay as typed" in " ".join(out.split())


# ------------------------------------------------------------------------------------------ the request cap


def test_cap_says_given_or_derived_and_never_explains_a_clamp():
    derived = table("-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--context-length", "32k")
    given = table("-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", "--context-length", "32k", "--max-running-requests", "64")
    assert re.search(r"max_running_requests\s+[\d,]+\s+derived", derived), derived
    assert re.search(r"max_running_requests\s+64\s+given", given), given
    for out in (derived, given):
        assert "clamp(" not in out and "as the engine derives it" not in out


def test_cap_source_from_the_planner_wins():
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", context_length=32768))
    r = replace(r, max_running_requests_source="engine default")
    assert "engine default" in rendered(r)
    v = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", context_length=32768, engine="vllm"))
    assert "max_num_seqs" in rendered(v)
    v = replace(v, max_running_requests_source="given")
    assert re.search(r"max_num_seqs\s+[\d,]+\s+given", rendered(v))


# ------------------------------------------------------------------------------------------ new keys


def test_workload_reasons_and_target_render_when_present():
    r = fit(Deployment())
    assert "at the workload" not in rendered(r)
    r = replace(
        r,
        workload_tokens_per_request=9216,
        workload_concurrency=16,
        reasons=["the pool holds fewer tokens than asked"],
        meets_target=False,
        target="16 x 1,048,576 tokens",
    )
    out = rendered(r)
    assert re.search(r"at the workload\s+16 requests\s+holding 9,216 tokens each at once", out), out
    assert "  - the pool holds fewer tokens than asked" in out
    assert "target 16 x 1,048,576 tokens: not met" in out
    assert "target 16 x 1,048,576 tokens: met" in rendered(replace(r, meets_target=True))


def test_compare_table_shows_the_workload_row_only_with_a_workload():
    dep = Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768)
    rs = [fit(dep), fit(Deployment(**{**dep.__dict__, "engine": "vllm"}))]
    con = fixed_console(80)
    render.compare_table(rs, console=con)
    assert "workload" not in recorded_text(con)
    rs = [replace(r, workload_tokens_per_request=9216, workload_concurrency=3) for r in rs]
    con = fixed_console(80)
    render.compare_table(rs, console=con)
    assert "requests of the workload at once" in recorded_text(con)


# ------------------------------------------------------------------------------------------ listings


def _listing(cmd: str, *args: str, columns: int = 80) -> str:
    res = runner.invoke(app, [cmd, *args, "--format", "table"], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.mark.parametrize("cmd", ["models", "gpus"])
@pytest.mark.parametrize("columns", [80, 120])
def test_listing_shows_every_id_whole(cmd, columns):
    ids = [r["id"] for r in json.loads(runner.invoke(app, [cmd, "--format", "json"]).stdout)]
    out = _listing(cmd, columns=columns)
    firsts = {line.split(" ")[0] for line in out.splitlines()}
    missing = [i for i in ids if i not in firsts]
    assert not missing, missing
    assert all(len(line) <= columns for line in out.splitlines())
    assert all(line == line.rstrip() for line in out.splitlines())


def test_listing_folds_an_id_wider_than_the_console():
    out = _listing("models", columns=30)
    assert "meta-llama/Llama-4-Maverick-17B-128E-Instruct" in out.replace("\n", "")
    assert "left out at 30 columns" in " ".join(out.split())


def test_listing_says_which_columns_it_left_out():
    narrow, wide = _listing("models", columns=80), _listing("models", columns=200)
    assert "left out at 80 columns" in narrow and "kvplan models --format json" in " ".join(narrow.split())
    assert "left out" not in wide and "variants" in wide


def test_models_family_and_search_filters():
    rows = json.loads(runner.invoke(app, ["models", "--family", "mla", "--format", "json"]).stdout)
    assert rows and {r["family"] for r in rows} == {"mla"}
    rows = json.loads(runner.invoke(app, ["models", "--search", "QWEN3-8", "--format", "json"]).stdout)
    assert rows and all("qwen3-8" in (r["id"] + r["aliases"] + r["variants"]).lower() for r in rows)
    out = _listing("models", "--family", "mla", "--search", "v3")
    assert "family mla" in out.splitlines()[0] and "search 'v3'" in out.splitlines()[0]
    bad = runner.invoke(app, ["models", "--family", "rwkv"])
    assert bad.exit_code == 2 and bad.stderr.startswith("kvplan: error: --family") and "\n" not in bad.stderr.strip()


def test_gpus_search_filter():
    rows = json.loads(runner.invoke(app, ["gpus", "--search", "h100", "--format", "json"]).stdout)
    assert rows and all("h100" in (r["id"] + r["name"]).lower() for r in rows)
    assert "3 of" in _listing("gpus", "--search", "h100").splitlines()[0] or len(rows) != 3


def test_models_listing_keeps_its_json_and_has_add():
    rows = json.loads(runner.invoke(app, ["models"]).stdout)  # not a terminal: JSON, as before
    assert {"id", "family", "layers", "quantization", "aliases", "variants"} <= set(rows[0])
    assert "add" in runner.invoke(app, ["models", "--help"]).stdout


# ------------------------------------------------------------------------------------------ conventions


def test_version_flags_print_the_version_line():
    first = runner.invoke(app, ["version"]).stdout.splitlines()[0]
    for flag in ("--version", "-V"):
        res = runner.invoke(app, [flag])
        assert res.exit_code == 0 and res.stdout.strip() == first


def test_shell_completion_options():
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout
    res = runner.invoke(app, ["--show-completion", "bash"])
    assert res.exit_code == 0 and "_KVPLAN_COMPLETE" in res.stdout


def test_ascii_fallback_spellings():
    from kvplan.views.console import ascii_text, install_ascii_fallback

    assert ascii_text("8 × 1 B ≤ 2 − 1 ─ ∞") == "8 x 1 B <= 2 - 1 - ?"
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    install_ascii_fallback(stream)
    stream.write("tp × pp ≥ 2\n")
    stream.flush()
    assert raw.getvalue() == b"tp x pp >= 2\n"
    utf = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    install_ascii_fallback(utf)
    assert utf.errors == "strict"


def test_no_clamp_explanation_for_a_cap_the_clamp_cannot_give():
    from kvplan.engines.base import Note, NoteKind

    # DeepSeek-V3 on 8 x H100 at 32k: the weights leave no pool, SGLang's derived cap is 0 (below the floor 2048)
    r = fit(Deployment(model="deepseek-ai/DeepSeek-V3", gpu="h100-sxm", tp=8, context_length=32768))
    out = " ".join(rendered(r, 120, explain=True).split())
    assert "clamp(" not in out and "max_running_requests 0: derived by the engine from a pool of 0 tokens" in out
    ok = "max_running_requests 4096: SGLang's derived default clamp(int(tokens / context x 512), 2048, 4096)"
    assert render.assumption_text(r, Note(ok, NoteKind.DERIVED_REQUEST_CAP, (4096, 2048, 4096))) == ok
    # the view keys by the note's kind, never by its prose: the same text without the structure prints as it is
    low = "max_running_requests 0: SGLang's derived default clamp(int(tokens / context x 512), 2048, 4096)"
    assert render.assumption_text(r, low) == low


def test_side_by_side_targets_share_a_line():
    dep = Deployment(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, context_length=32768)
    target = "8 requests of 32,768 tokens at once"
    rs = [fit(dep), fit(Deployment(**{**dep.__dict__, "engine": "vllm"}))]
    rs = [replace(rs[0], target=target, meets_target=True), replace(rs[1], target=target, meets_target=False)]
    con = fixed_console(120)
    render.compare_table(rs, console=con)
    out = recorded_text(con)
    assert "target 8 requests of 32,768 tokens at once: met by SGLang, not met by vLLM (--check exits 3)" in out
    assert out.count("target 8 requests") == 1


def test_a_result_is_frozen_after_planning():
    r = fit(Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm"))
    assert r.frozen
    with pytest.raises(AttributeError, match="frozen"):
        r.fits = not r.fits
    with pytest.raises(AttributeError, match="frozen"):
        r.verdict = "fits"
    copy = replace(r, verdict="changed")  # a changed copy is a new result, not frozen
    assert not copy.frozen and copy.verdict == "changed" and r.verdict != "changed"


def test_the_bar_is_keyed_by_slice_kinds():
    from kvplan.result import KIND_OF_NAME, MemorySlice, SliceKind

    assert set(render._BAR_STYLES) == set(SliceKind.ALL) - {SliceKind.OTHER}
    assert set(KIND_OF_NAME.values()) <= set(SliceKind.ALL)
    deps = [
        Deployment(),
        Deployment(engine="vllm"),
        Deployment(model="openai/gpt-oss-120b", gpu="h100-sxm"),
        Deployment(model="meta-llama/Llama-3.1-405B-Instruct", gpu="l4", tp=2),
        Deployment(model="Qwen/Qwen3-8B", gpu="h100-sxm", free_memory=78 * 2**30, weight_memory=16 * 2**30),
    ]
    for d in deps:  # every slice the engines build has a kind of its own (none falls back to "other")
        assert all(m.kind != SliceKind.OTHER for m in fit(d).memory), d
    # a renamed slice keeps no style: the name is read once, in kvplan.result, not by the view
    assert render._style(MemorySlice(name="weights (renamed)", bytes=1)) == render._OTHER
