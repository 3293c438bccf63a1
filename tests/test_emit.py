"""One ``emit`` (issue 21 item 6): every command's answer is written through the registry of
:mod:`kvplan.views.emit`, the CLI never looks at the format, and a new format is one declaration.

* (a) no module under kvplan/cli/ names :class:`Format` or compares a format against a format's value;
* (b) a throwaway format registered in a scratch registry is accepted by ``resolve`` and written by ``emit``
  (and, declared before the CLI is built, by ``kvplan models --format xml`` itself);
* (c) every format an answer accepts has a renderer or an explicit refusal (InputError on --format, exit 2), every
  :class:`Format` member is written by some answer, and every command's ``--format`` reads the registry.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from enum import StrEnum
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.views import emit as emit_module
from kvplan.views.emit import REGISTRY, Listing, Refusal, check_renderable, emit, resolve
from kvplan.views.formats import Format, format_metavar

ROOT = Path(__file__).resolve().parent.parent
CLI = sorted((ROOT / "kvplan" / "cli").glob("*.py"))
VALUES = {f.value for f in Format}
#: names the CLI gives a format (the ``--format`` text or the resolved member)
FORMAT_NAMES = {"fmt", "out", "out_fmt", "format"}


def _format_branches(path: Path) -> list[str]:
    """Each place in ``path`` that names Format (a member, the class, a subset tuple) or compares a format name
    against a format's value: ``file:line what``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Name) and (node.id == "Format" or node.id.startswith(("TABLE_JSON", "TABLE_CSV"))):
            found.append(f"{where} {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr == "Format":
            found.append(f"{where} .Format")
        elif isinstance(node, ast.ImportFrom) and node.module in ("kvplan.views.formats", "kvplan.views.emit"):
            bad = [a.name for a in node.names if a.name == "Format" or a.name.startswith("TABLE_")]
            found += [f"{where} import {b}" for b in bad]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(isinstance(s, ast.Name) and s.id in FORMAT_NAMES for s in sides)
            consts = [c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant)]
            if named and any(isinstance(v, str) and v in VALUES for v in consts):
                found.append(f"{where} compares a format with {consts}")
    return found


def test_the_scan_sees_a_format_branch(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from kvplan.views.formats import Format, TABLE_JSON\n"
        "def f(out, fmt):\n"
        "    if out is Format.JSON:\n        pass\n"
        "    if fmt == 'csv':\n        pass\n"
        "    return fmt in ('table', 'json')\n"
    )
    found = _format_branches(probe)
    assert len(found) == 5, found  # two names imported, Format.JSON, two comparisons with a format's value


def test_no_cli_module_branches_on_a_format():
    assert CLI, "the scan sees the CLI modules"
    found = [hit for path in CLI for hit in _format_branches(path)]
    assert found == [], "the CLI writes through kvplan.views.emit.emit; it never looks at the format:\n" + "\n".join(
        found
    )


class Scratch(StrEnum):
    XML = "xml"


def test_a_format_registered_in_a_scratch_registry_is_written_by_emit():
    reg = REGISTRY.copy()
    reg.renders(Listing, Scratch.XML)(lambda a, echo: echo(f"<rows title='{a.title}' n='{len(a.rows)}'/>\n"))
    assert reg.formats(Listing) == (Format.TABLE, Format.JSON, Format.CSV, Scratch.XML)
    assert resolve(Listing, "xml", registry=reg) is Scratch.XML
    assert emit_module.format_help(Listing, registry=reg).startswith("table | json | csv | xml (")
    written: list[str] = []
    emit(Listing([{"id": "a"}, {"id": "b"}], "presets"), Scratch.XML, echo=written.append, registry=reg)
    assert written == ["<rows title='presets' n='2'/>\n"]
    # the shared registry is untouched: xml is still an unknown format there (exit 2, naming the flag)
    with pytest.raises(InputError) as err:
        resolve(Listing, "xml")
    assert err.value.exit_code == 2
    assert err.value.one_line() == "--format: unknown format 'xml'; table, json or csv"
    with pytest.raises(ValueError, match="no xml renderer"):
        emit(Listing([], "t"), Scratch.XML, echo=written.append)


def test_a_format_declared_before_the_cli_is_built_reaches_the_command():
    """The one declaration is all a new format needs: ``kvplan models --format xml`` then accepts it, shows it in
    its help and writes it, with no CLI change (the registry is filled before kvplan.cli.app builds its options)."""
    code = (
        "from enum import StrEnum\n"
        "from kvplan.views.emit import REGISTRY, Listing\n"
        "class X(StrEnum):\n    XML = 'xml'\n"
        "REGISTRY.renders(Listing, X.XML)(lambda a, echo: echo(f'<models n={len(a.rows)}/>\\n'))\n"
        "from typer.testing import CliRunner\n"
        "from kvplan.cli.app import app\n"
        "r = CliRunner().invoke(app, ['models', '--format', 'xml', '--search', 'qwen3-32b'])\n"
        "h = CliRunner().invoke(app, ['models', '--help'], env={'COLUMNS': '200'})\n"
        "import json; print(json.dumps([r.exit_code, r.stdout, '[table|json|csv|xml]' in h.stdout]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    code_, out, in_help = json.loads(proc.stdout.strip().splitlines()[-1])
    assert code_ == 0 and out.startswith("<models n=") and out != "<models n=0/>\n", out
    assert in_help


def test_every_accepted_format_has_a_renderer_or_a_refusal():
    answers = REGISTRY.answers()
    assert len(answers) >= 10  # fit, what-if, listings, speed, ttft chart, sweep, solve, config, check, calibrations
    written = set()
    for answer in answers:
        accepted = REGISTRY.formats(answer)
        assert Format.TABLE in accepted, answer
        assert REGISTRY.default(answer) in accepted, answer
        for fmt in accepted:
            form = REGISTRY.form(answer, fmt)
            if isinstance(form, Refusal):
                with pytest.raises(InputError) as err:
                    check_renderable(answer, fmt, question="gpus")
                assert err.value.exit_code == 2 and err.value.one_line().startswith("--format: "), err.value
            else:
                assert callable(form), (answer, fmt)
                written.add(fmt)
        for fmt in set(Format) - set(accepted):  # not accepted: resolve's one line, exit 2
            with pytest.raises(InputError) as err:
                resolve(answer, fmt.value)
            assert err.value.exit_code == 2
    assert written == set(Format), f"no answer is written as {set(Format) - written}"


def test_a_renderer_is_declared_once():
    reg = REGISTRY.copy()
    with pytest.raises(ValueError, match="already has a json form"):
        reg.renders(Listing, Format.JSON)(lambda a, echo: None)


def test_the_refusals_keep_their_lines():
    from kvplan.views.emit import SolveAnswer, TtftChartAnswer

    with pytest.raises(InputError) as err:
        check_renderable(SolveAnswer, Format.CSV, question="gpus")
    assert err.value.one_line() == "--format: solve gpus is written as a table or JSON; table or json"
    with pytest.raises(InputError) as err:
        emit(TtftChartAnswer(series=[]), Format.CSV)
    assert err.value.one_line() == "--format: the TTFT chart has no CSV form; use table or json"
    check_renderable(SolveAnswer, Format.JSON)  # a rendered format: nothing raised


def test_emit_writes_what_the_views_write():
    from kvplan.views.listing import rows_text

    rows = [{"id": "h100-sxm", "sm": 90}, {"id": "b200", "sm": 100}]
    texts = {}
    for fmt in (Format.JSON, Format.CSV):
        written: list[str] = []
        emit(Listing(rows, "GPU presets", info={"model": "m"}), fmt, echo=written.append)
        assert written == [rows_text(rows, fmt, info={"model": "m"})]
        texts[fmt] = written[0]
    assert json.loads(texts[Format.JSON]) == {"model": "m", "rows": rows}
    assert texts[Format.CSV] == "id,sm\nh100-sxm,90\nb200,100\n"


def test_every_command_format_option_reads_the_registry():
    import typer

    from kvplan.cli.app import app

    root = typer.main.get_command(app)
    metavars = {format_metavar(REGISTRY.formats(a)) for a in REGISTRY.answers()}
    seen = {}
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        for p in cmd.params:
            if "--format" in getattr(p, "opts", ()):
                seen[name] = p.metavar
    assert {"fit", "models", "gpus", "show", "sweep", "solve", "check", "calibrate", "speed"} <= set(seen)
    assert all(m in metavars for m in seen.values()), seen
    assert (
        seen["sweep"] == "[table|csv|jsonl]" and seen["check"] == "[table|json]" and seen["fit"] == "[table|json|csv]"
    )
