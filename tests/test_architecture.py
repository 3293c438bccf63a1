"""The layer rule of docs/architecture.md, checked over the real import graph (imports inside functions too).

A module may import kvplan modules of its own layer or of a layer below it, never above; rich only in views and
cli, typer only in cli.  The layer of a module is the first entry of LAYERS that its dotted name starts with.

One edge is by design and checked apart (:func:`test_package_root_reaches_up_only_to_the_api`): the package root
``kvplan/__init__.py`` (base layer: every module imports it) hands the public names of ``kvplan.__all__`` over from
``kvplan.api`` on first use, through a module ``__getattr__`` and the module's name as a string, never an import
statement.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import _ast_cache as package_ast

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kvplan"

# bottom up; docs/architecture.md shows the same table
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("kvplan.__init__", "kvplan.errors", "kvplan.units", "kvplan.version")),
    (
        "core",
        (
            "kvplan.cache",
            "kvplan.result",
            "kvplan.family",
            "kvplan.parallel",
            "kvplan.flags",
            "kvplan.deployment",
            "kvplan.supported",
        ),
    ),
    ("hfconfig", ("kvplan.hfconfig",)),
    ("inputs", ("kvplan.inputs",)),
    ("geometry", ("kvplan.geometry",)),
    ("weights", ("kvplan.weights",)),
    ("engines", ("kvplan.engines",)),
    ("perf", ("kvplan.perf",)),  # the speed model: reads engines and below; planning builds on it
    ("planning", ("kvplan.planning",)),
    ("api", ("kvplan.api",)),  # the Python API (docs/api.md): planning and below; views and cli never need it
    ("views", ("kvplan.views",)),
    ("cli", ("kvplan.cli", "kvplan.__main__")),
]
ONLY_IN = {"rich": ("views", "cli"), "typer": ("cli",)}


def _modname(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts)


def _rank(mod: str) -> int:
    if mod == "kvplan":
        return 0
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(mod == p or mod.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{mod} belongs to no layer: add it to LAYERS and docs/architecture.md")


def _imports(path: Path) -> list[tuple[int, str]]:
    pkg = _modname(path).rsplit(".", 1)[0] if path.name != "__init__.py" else _modname(path)[: -len(".__init__")]
    out: list[tuple[int, str]] = []
    for node in package_ast.nodes(path):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out.append((node.lineno, base))
            # `from kvplan.engines import sglang` imports the submodule kvplan.engines.sglang
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names if base.startswith("kvplan")]
    return out


MODULES = list(package_ast.package_files())


def test_every_module_has_a_layer():
    for p in MODULES:
        _rank(_modname(p))


def _resolves(mod: str) -> bool:
    rel = Path(*mod.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _modname(p))
def test_imports_point_down(path: Path):
    me = _modname(path)
    mine = _rank(me)
    bad = []
    for line, target in _imports(path):
        top = target.split(".")[0]
        if top in ONLY_IN and LAYERS[mine][0] not in ONLY_IN[top]:
            bad.append(f"line {line}: {target} (only in {', '.join(ONLY_IN[top])})")
        if top != "kvplan" or not _resolves(target):
            continue
        if _rank(target) > mine:
            bad.append(f"line {line}: {target} is in layer {LAYERS[_rank(target)][0]}, above {LAYERS[mine][0]}")
    assert not bad, f"{me} imports upward:\n" + "\n".join(bad)


def test_package_root_reaches_up_only_to_the_api():
    """``kvplan/__init__.py`` imports no kvplan module; its lazy names come from kvplan.api and nowhere else."""
    import kvplan

    init = PKG / "__init__.py"
    assert [t for _, t in _imports(init) if t.split(".")[0] == "kvplan"] == []
    assert kvplan._API_MODULE == "kvplan.api"
    assert LAYERS[_rank(kvplan._API_MODULE)][0] == "api"
    strings = {n.value for n in ast.walk(ast.parse(init.read_text())) if isinstance(n, ast.Constant)}
    assert not {s for s in strings if isinstance(s, str) and s.startswith("kvplan.") and s != "kvplan.api"}
