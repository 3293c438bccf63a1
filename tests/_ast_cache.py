"""One read and one parse of each kvplan module per test process, shared by the structure tests (layers, import
cycles, engine strings, config readers, rules written once, version parsers, dtype tables, format branches).

Parsing the whole package costs ~2.5 s of CPU; about ten test modules scan it, and each parsed it again.  The trees
are never modified by a scan (they only walk them), so one copy per process serves all; :func:`nodes` also keeps
the ``ast.walk`` order of every node of a file, which the scans walk again and again.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kvplan"


@cache
def package_files(top: Path = PKG) -> tuple[Path, ...]:
    """Every ``*.py`` under ``top`` (default: the kvplan package), sorted."""
    return tuple(sorted(top.rglob("*.py")))


@cache
def source(path: Path) -> str:
    """The text of ``path`` (UTF-8)."""
    return path.read_text(encoding="utf-8")


@cache
def tree(path: Path) -> ast.Module:
    """The parsed module at ``path``: shared, so a caller walks it and never changes it."""
    return ast.parse(source(path), filename=str(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of :func:`tree` in ``ast.walk`` order."""
    return tuple(ast.walk(tree(path)))
