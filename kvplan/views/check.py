"""``kvplan check``: the table (rich), the JSON document, the JUnit XML report and writing a report file.

rich is imported inside :func:`render` only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvplan.errors import InputError
from kvplan.planning.check import CheckResult
from kvplan.views.sweep import fmt_count


def render(results: list[CheckResult], *, path: str = "", console: Any = None) -> None:
    """The check table (rich)."""
    from rich.table import Table

    from kvplan.views.console import table_box, terminal_console
    from kvplan.views.sanitize import text

    console = console or terminal_console()
    n_fail = sum(not r.passed for r in results)
    t = Table(
        title=text(f"kvplan check {path}: {len(results) - n_fail} passed, {n_fail} failed"),
        title_justify="left",
        box=table_box(console),
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    for name in ("deployment", "GPUs", "target", "room", "pool tokens", "headroom", "result"):
        t.add_column(name, justify="left" if name in ("deployment", "result") else "right", no_wrap=True)
    for r in results:
        t.add_row(
            text(r.name),
            str(r.num_gpus),
            f"{r.requests} x {fmt_count(r.context)} +{r.headroom:g}%",
            str(r.concurrency),
            f"{r.pool_tokens:,}",
            f"{r.headroom_achieved:.1f}%",
            "PASS" if r.passed else "FAIL",
            style=None if r.passed else "bold red",
        )
    console.print(t)
    for r in results:
        if not r.passed:
            console.print(text(f"FAIL {r.name}: {r.reason}"))


def to_json(results: list[CheckResult], *, path: str = "") -> str:
    """The JSON document ``kvplan check --format json`` prints (and ``--report FILE.json`` writes)."""
    return (
        json.dumps(
            {
                "plan": path,
                "passed": all(r.passed for r in results),
                "failures": sum(not r.passed for r in results),
                "deployments": [r.to_dict() for r in results],
            },
            indent=2,
        )
        + "\n"
    )


def to_junit(results: list[CheckResult], *, path: str = "") -> str:
    """JUnit XML (one ``testcase`` per deployment; a ``failure`` element when its target is missed)."""
    from xml.sax.saxutils import escape as _escape
    from xml.sax.saxutils import quoteattr as _quoteattr

    from kvplan.errors import xml_text

    def escape(s: str) -> str:
        return _escape(xml_text(s))

    def quoteattr(s: str) -> str:
        return _quoteattr(xml_text(s))

    suite = Path(path).stem if path else "plan"
    fails = sum(not r.passed for r in results)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="kvplan check" tests="{len(results)}" failures="{fails}" errors="0">',
        f'  <testsuite name={quoteattr("kvplan check " + (path or suite))} tests="{len(results)}" '
        f'failures="{fails}" errors="0" skipped="0">',
    ]
    for r in results:
        details = (
            f"model {r.model}, gpu {r.gpu} x {r.num_gpus}, engine {r.engine}; target {r.requests} request(s) "
            f"of {r.context:,} tokens +{r.headroom:g}% headroom; pool {r.pool_tokens:,} tokens, room for "
            f"{r.concurrency}, headroom {r.headroom_achieved:.1f}%"
        )
        lines.append(f'    <testcase classname={quoteattr("kvplan.check." + suite)} name={quoteattr(r.name)} time="0">')
        if not r.passed:
            lines.append(f'      <failure message={quoteattr(r.reason)} type="DoesNotFit">{escape(details)}</failure>')
        lines.append(f"      <system-out>{escape(details)}</system-out>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines) + "\n"


def write_report(results: list[CheckResult], report: str | Path, *, fmt: str | None = None, path: str = "") -> Path:
    """``fmt``: json | junit; default from the extension (.json, .xml)."""
    rp = Path(report)
    fmt = fmt or {".json": "json", ".xml": "junit"}.get(rp.suffix.lower())
    if fmt not in ("json", "junit"):
        raise InputError(
            f"cannot tell the report format of '{rp.name}'",
            field="--report",
            hint="name it .json or .xml, or give --report-format json|junit",
        )
    from kvplan.inputs.read import write_output

    text = to_json(results, path=path) if fmt == "json" else to_junit(results, path=path)
    return write_output(rp, text, field="--report")  # a temporary file renamed over rp; OutputError: exit 1
