"""No import cycles inside kvplan (issue 21 item 6), imports inside functions included.

The layer test (tests/test_architecture.py) checks that imports point down, not that a layer's modules do not import
each other in a circle; a cycle through a function-level import works at run time but makes both modules one unit
that neither can be read, tested or moved without the other.  This walks every ``import`` / ``from ... import`` of
every module with ast (module level and inside functions; ``if TYPE_CHECKING:`` blocks excepted, they never run) and
fails on every strongly connected component of more than one module.

An edge goes to the module named (``from kvplan.a import b``: to ``kvplan.a.b`` when that is a module, else to
``kvplan.a``), not to the packages above it: importing ``kvplan.a.b`` runs ``kvplan/a/__init__.py`` first, but an ``__init__`` that
imports its own submodules is the package's public face, not a cycle of two concepts.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import _ast_cache as package_ast

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kvplan"


def _modname(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


MODULES: dict[str, Path] = {_modname(p): p for p in package_ast.package_files()}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes under an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) block."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    skip.update(id(n) for n in ast.walk(sub))
    return skip


def imports_of(mod: str, source: str, path: Path | None = None) -> set[str]:
    """The kvplan modules ``mod`` imports (at run time, anywhere in its body); ``path``: the file ``source`` was
    read from, whose parse the structure tests share (tests/_ast_cache.py)."""
    tree = package_ast.tree(path) if path is not None else ast.parse(source)
    skip = _type_checking_nodes(tree)
    is_pkg = MODULES.get(mod, Path()).name == "__init__.py"
    pkg = mod if is_pkg else mod.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in package_ast.nodes(path) if path is not None else ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            subs = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            out.update(subs)
            if len(subs) < len(node.names):  # a name of the module itself, not only its submodules
                out.add(base)
    return {m for m in out if m in MODULES and m != mod}


def graph() -> dict[str, set[str]]:
    return {m: imports_of(m, package_ast.source(p), p) for m, p in MODULES.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def test_the_walk_sees_function_level_imports_and_cycles():
    src = "from __future__ import annotations\nif TYPE_CHECKING:\n    import kvplan.result\n\ndef f():\n"
    src += "    from kvplan.planning import plan\n    from kvplan.planning.verdict import apply\n"
    assert imports_of("kvplan.planning.workload", src) == {"kvplan.planning.plan", "kvplan.planning.verdict"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def _edge_lines(g: dict[str, set[str]], comp: list[str]) -> list[str]:
    inside = set(comp)
    return [f"  {a} -> {b}" for a in comp for b in sorted(g[a] & inside)]


def test_no_import_cycles():
    g = graph()
    found = cycles(g)
    text = "\n".join("cycle:\n" + "\n".join(_edge_lines(g, c)) for c in found)
    assert not found, "import cycles inside kvplan (move the shared part down or into one module):\n" + text
