"""Config integers are read by one rule (issue 21 item 5): :mod:`kvplan.hfconfig.readers`.

AST scans over the package: no function named like the old per-module readers (``_is_int``, ``_n``, ``_i``) outside
the reader module; no ``int(cfg.get(...))`` on a config mapping; and in the config-reading modules no hand-written
``isinstance(v, int)`` + ``isinstance(v, bool)`` pair (the rule ``readers.is_int`` states once).  Then the rule itself,
by hand: what is and is not an integer, and the lenient reads' defaults.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvplan.hfconfig.readers import count_or, int_at_least, is_int, is_int_list, positive_or
from tests import _ast_cache as package_ast

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kvplan"
READERS = PKG / "hfconfig" / "readers.py"

#: the modules that read model-config fields (every one of them goes through the readers)
SCOPE = [
    *sorted(p for p in (PKG / "hfconfig").glob("*.py") if p != READERS),
    *sorted((PKG / "weights").glob("*.py")),
    *sorted((PKG / "geometry").glob("*.py")),
    PKG / "planning" / "check.py",
]
OLD_READERS = {"_is_int", "_n", "_i"}
#: modules whose old reader is still waiting for its patch (none)
PENDING: set[Path] = set()
#: names a config mapping goes by in kvplan
CONFIG_NAMES = {"cfg", "flat", "config", "qc", "c", "values", "raw_config"}


def _tree(path: Path) -> ast.AST:
    return package_ast.tree(path)


def _int_of_config_get(tree: ast.AST) -> list[int]:
    """Lines of ``int(<config>.get(...))`` (``int(cfg.get(k) or d)`` included)."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and node.args):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.BoolOp):
            arg = arg.values[0]
        if (
            isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Attribute)
            and arg.func.attr == "get"
            and (
                (isinstance(arg.func.value, ast.Name) and arg.func.value.id in CONFIG_NAMES)
                or (isinstance(arg.func.value, ast.Attribute) and arg.func.value.attr in CONFIG_NAMES)
            )
        ):
            out.append(node.lineno)
    return out


def _isinstance_target(node: ast.expr, kind: str) -> str | None:
    """``x`` when ``node`` is ``isinstance(x, kind)`` (or ``not isinstance(x, kind)``) for a plain name ``x``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Name)
        and isinstance(node.args[1], ast.Name)
        and node.args[1].id == kind
    ):
        return node.args[0].id
    return None


def _int_rule_copies(tree: ast.AST) -> list[int]:
    """Lines of a boolean expression testing one name with both ``isinstance(x, int)`` and ``isinstance(x, bool)``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp):
            ints = {_isinstance_target(v, "int") for v in node.values} - {None}
            bools = {_isinstance_target(v, "bool") for v in node.values} - {None}
            if ints & bools:
                out.append(node.lineno)
    return out


def test_scans_see_what_they_forbid():
    assert _int_of_config_get(ast.parse("n = int(cfg.get('x') or 0)")) == [1]
    assert _int_of_config_get(ast.parse("n = int(self.config.get('x', 1))")) == [1]
    assert _int_of_config_get(ast.parse("n = int(sums.get('x', 1))")) == []
    assert _int_rule_copies(ast.parse("ok = isinstance(v, int) and not isinstance(v, bool) and v > 0")) == [1]
    assert _int_rule_copies(ast.parse("bad = isinstance(v, bool) or not isinstance(v, int)")) == [1]
    assert _int_rule_copies(ast.parse("ok = isinstance(v, bool) or v not in (4, 128)")) == []


def test_no_old_reader_functions():
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
        for path in package_ast.package_files()
        if path != READERS and path not in PENDING
        for node in ast.walk(_tree(path))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in OLD_READERS | {"is_int"}
    ]
    assert not found, "config integer readers outside kvplan/hfconfig/readers.py: " + ", ".join(found)


def test_no_int_of_a_config_get():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in package_ast.package_files()
        if path != READERS
        for line in _int_of_config_get(_tree(path))
    ]
    assert not found, "int(cfg.get(...)) outside the readers (use readers.count_or / a strict reader): " + ", ".join(
        found
    )


def test_config_modules_use_the_one_int_rule():
    found = [f"{path.relative_to(ROOT)}:{line}" for path in SCOPE for line in _int_rule_copies(_tree(path))]
    assert not found, "isinstance(v, int) / isinstance(v, bool) written again (use readers.is_int): " + ", ".join(found)


@pytest.mark.parametrize(
    ("v", "expected"),
    [
        (0, True),
        (7, True),
        (-3, True),
        (2**40, True),
        (True, False),
        (False, False),
        (4.0, False),
        ("4", False),
        (None, False),
        ([4], False),
    ],
)
def test_is_int(v, expected):
    assert is_int(v) is expected


def test_int_at_least_and_lists():
    assert int_at_least(1, 1) and not int_at_least(0, 1) and not int_at_least(True, 0) and not int_at_least(1.0, 1)
    assert is_int_list([0, 5], minimum=0) and not is_int_list([0, -1], minimum=0) and not is_int_list([1, True])
    assert is_int_list([]) and not is_int_list([1, 2.0])


def test_lenient_reads():
    cfg = {"a": 12, "neg": -1, "zero": 0, "flag": True, "f": 2.9, "s": "64", "none": None}
    assert [count_or(cfg, k, 5) for k in ("a", "neg", "zero", "flag", "f", "s", "none", "absent")] == [
        12,
        5,
        0,
        5,
        5,
        5,
        5,
        5,
    ]
    assert count_or(cfg, "zero", 5, above=0) == 5
    # the speed model: positive ints and floats (truncated), else the default
    assert [positive_or(cfg, k, 7) for k in ("a", "neg", "zero", "flag", "f", "s", "none")] == [12, 7, 7, 7, 2, 7, 7]
    assert positive_or({"x": 0.5}, "x", 7) == 0  # 0.5 > 0: int(0.5), as the old speed reader did


def test_model_spec_readers_keep_their_messages():
    from kvplan.errors import InputError
    from kvplan.family import Family
    from kvplan.hfconfig.spec import ModelSpec

    def spec(**cfg):
        return ModelSpec(
            id="t", config={**_LLAMA, **cfg}, family=Family.GQA, quantization="bf16", checkpoint_bytes=None, source="t"
        )

    assert (spec().num_layers, spec().num_kv_heads, spec().head_dim) == (2, 2, 64)
    for bad in (True, 2.0, "2", 0):
        with pytest.raises(InputError, match="num_key_value_heads' must be an integer >= 1"):
            _ = spec(num_key_value_heads=bad).num_kv_heads
        with pytest.raises(InputError, match="head_dim' must be a positive integer"):
            _ = spec(head_dim=bad).head_dim
    # context length: the first positive integer of SGLang's keys; True / 4096.0 are skipped
    assert spec(max_position_embeddings=True).context_length == 2048
    assert spec(max_position_embeddings=4096.0).context_length == 2048
    assert spec(max_position_embeddings=4096).context_length == 4096


_LLAMA = {
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
}
