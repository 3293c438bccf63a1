"""No kvplan module over 1,000 lines (issue 21 item 6): a module that long holds more than one concept; split it into
a package by concept (as :mod:`kvplan.planning.sweep` is), keeping its public import path.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 1_000


def long_modules(limit: int = MAX_LINES) -> list[tuple[str, int]]:
    out = []
    for p in sorted((ROOT / "kvplan").rglob("*.py")):
        rel = str(p.relative_to(ROOT))
        n = len(p.read_text().splitlines())
        if n > limit:
            out.append((rel, n))
    return out


def test_the_count_sees_a_long_module():
    assert long_modules(limit=1), "every module has more than one line"


def test_no_module_over_1000_lines():
    bad = long_modules()
    assert not bad, "split into a package by concept:\n" + "\n".join(f"  {f}: {n:,} lines" for f, n in bad)
