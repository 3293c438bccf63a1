"""No engine string tests outside the engines (issue 21 item 2): planning, weights and views ask the engine object.

An ast walk over kvplan/planning, kvplan/weights and kvplan/views fails on every comparison (``==``, ``!=``, ``in``,
``not in``, ``is``, ``is not``) of a value named like an engine (a name or attribute containing ``engine``) with an
engine name string literal (``"sglang"``, ``"vllm"``, or a tuple / list / set of them).  What the code wants to know
is a member of :class:`kvplan.engines.registry.Engine` (``engine(name).pool_count``, ``.dp_attention``,
``.request_cap_field`` ...) or a row of :mod:`kvplan.weights.rules`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvplan.engines.registry import ENGINES, engine
from tests import _ast_cache as package_ast

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("kvplan/planning", "kvplan/weights", "kvplan/views")
NAMES = frozenset(ENGINES)


def _mentions_engine(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and "engine" in sub.id.lower():
            return True
        if isinstance(sub, ast.Attribute) and "engine" in sub.attr.lower():
            return True
    return False


def _engine_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip().lower() in NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_engine_literal(e) for e in node.elts)
    return False


def engine_string_tests(source: str, path: Path | None = None) -> list[tuple[int, str]]:
    """(line, source text) of every engine string comparison in ``source``; ``path``: the file ``source`` was read
    from, whose parse the structure tests share (tests/_ast_cache.py)."""
    out = []
    for node in package_ast.nodes(path) if path is not None else ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if any(_engine_literal(o) for o in operands) and any(
            _mentions_engine(o) for o in operands if not _engine_literal(o)
        ):
            out.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return out


def _files(top: str) -> list[Path]:
    return list(package_ast.package_files(ROOT / top))


def test_the_walk_finds_what_it_must():
    bad = [
        'engine == "vllm"',
        'res.engine != "sglang"',
        '"vllm" == dep.engine',
        'facts.engine in ("sglang", "vllm")',
        'engine_name is not "SGLang"',
    ]
    for text in bad:
        assert engine_string_tests(text), text
    fine = ["engine(res.engine).pool_count is PoolCount.BLOCKS", 'name == "vllm"', "engine == other", 'x == "auto"']
    for text in fine:
        assert not engine_string_tests(text), text


#: comparisons not converted yet (empty: every one is converted).  A new entry is a debt to pay back; an entry that
#: no longer matches fails the test, so the list cannot go stale.
NOT_YET: frozenset[tuple[str, str]] = frozenset({})


@pytest.mark.parametrize("top", SCANNED)
def test_no_engine_string_tests(top: str):
    found = {
        (str(p.relative_to(ROOT)), text): line
        for p in _files(top)
        for line, text in engine_string_tests(package_ast.source(p), p)
    }
    allowed = {k for k in NOT_YET if k[0].startswith(top + "/")}
    bad = [f"{f}:{line}: {text}" for (f, text), line in sorted(found.items()) if (f, text) not in allowed]
    assert not bad, "ask the engine object (kvplan.engines.registry.engine(name)) instead of:\n" + "\n".join(bad)
    stale = sorted(allowed - set(found))
    assert not stale, f"no longer in the tree, drop from NOT_YET: {stale}"


def test_every_engine_answers_the_interface():
    members = (
        "name",
        "label",
        "supported",
        "request_cap_field",
        "memory_fraction_field",
        "pool_count",
        "dp_attention",
        "fixed_default_cap",
        "expert_parallel_switch",
        "request_cap_sets_memory",
        "logs_device_total",
        "weights",
        "log_arg_keys",
        "log_free_label",
        "newest",
    )
    for name in ENGINES:
        e = engine(name)
        assert e.name == name and e.weights.name == name
        for m in members:
            assert getattr(e, m) is not None, (name, m)
        assert e.newest == e.supported[1]
