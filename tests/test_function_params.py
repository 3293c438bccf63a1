"""No function in kvplan/engines/ and kvplan/geometry/ takes more than 10 parameters (issue 21 item 4).

Knobs arrive in one frozen context object (``PoolContext``, ``SpecContext`` ...), not as keyword bags.  Parameters
are counted as written: positional-only, positional, keyword-only, ``*args`` and ``**kwargs`` each count one;
``self`` and ``cls`` do not.  The functions that are still over the limit are listed in ``REMAINING`` with their
count: the test fails on any other function over the limit, on a listed one that grew, and on a listed one that
no longer exceeds it (take it off the list), so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 10

#: "path:qualified name" -> parameters, for the functions not yet given a context object
REMAINING: dict[str, int] = {
    # empty: PoolFlags / PoolContext / PoolPlan group their fields into frozen sub-records (pools/base.py)
}


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return sum(1 for n in names if n not in ("self", "cls"))


def _functions(path: Path) -> dict[str, int]:
    """Qualified name -> parameters of every function (methods and nested functions too) in ``path``."""
    out: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + child.name] = _params(child)
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text(), filename=str(path)), "")
    return out


def _over_limit() -> dict[str, int]:
    found: dict[str, int] = {}
    for top in ("engines", "geometry"):
        for path in sorted((ROOT / "kvplan" / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            found.update({f"{rel}:{name}": n for name, n in _functions(path).items() if n > LIMIT})
    return found


def test_the_counter_counts_keyword_only_and_star_parameters_but_not_self():
    src = "class C:\n    def m(self, a, /, b, *c, d, **e): pass\ndef f(x, *, y): pass\n"
    tree = ast.parse(src)
    method = tree.body[0].body[0]  # type: ignore[attr-defined]
    assert _params(method) == 5  # a, b, *c, d, **e
    assert _params(tree.body[1]) == 2  # type: ignore[arg-type]


def test_no_new_function_over_ten_parameters():
    found = _over_limit()
    new = {k: v for k, v in found.items() if k not in REMAINING}
    assert not new, f"functions over {LIMIT} parameters (pass a frozen context object instead): {new}"
    grown = {k: (REMAINING[k], v) for k, v in found.items() if k in REMAINING and v > REMAINING[k]}
    assert not grown, f"listed functions that took more parameters (listed, now): {grown}"


def test_the_remaining_list_only_shrinks():
    found = _over_limit()
    fixed = sorted(k for k in REMAINING if k not in found)
    assert not fixed, f"no longer over {LIMIT} parameters (or moved): take them off REMAINING: {fixed}"
