"""kvplan.version: the one version type and the one parser (issue 21 item 3), with hand-written cases.

The order cases are PEP 440's, written out by hand (not computed by another parser); the last test scans the
package with ``ast`` so that no module grows a version parser of its own again.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from kvplan.version import Version, parse_version
from tests import _ast_cache as package_ast

PKG = Path(__file__).resolve().parent.parent / "kvplan"


@pytest.mark.parametrize(
    ("text", "release", "pre", "post", "dev", "local"),
    [
        ("0.5.23", (0, 5, 23), None, None, None, None),
        ("v0.10.1", (0, 10, 1), None, None, None, None),
        ("  0.4.7.post1 ", (0, 4, 7), None, 1, None, None),
        ("0.5.4post2", (0, 5, 4), None, 2, None, None),
        ("0.11.0rc1", (0, 11, 0), ("rc", 1), None, None, None),
        ("0.5.0a1", (0, 5, 0), ("a", 1), None, None, None),
        ("0.5.0b3", (0, 5, 0), ("b", 3), None, None, None),
        ("0.5.3.dev20250801", (0, 5, 3), None, None, 20250801, None),
        ("0.11.0rc2.dev98+g393de22d2", (0, 11, 0), ("rc", 2), None, 98, "g393de22d2"),
        ("v0.5.4.post1-cu126", (0, 5, 4), None, 1, None, "cu126"),  # a docker tag
        ("v0.4.6.post1-rocm720-mi35x", (0, 4, 6), None, 1, None, "rocm720-mi35x"),
        ("0.10.1.1", (0, 10, 1, 1), None, None, None, None),
        ("0.9", (0, 9), None, None, None, None),
        ("1", (1,), None, None, None, None),
    ],
)
def test_parse_reads_each_form(text, release, pre, post, dev, local):
    v = parse_version(text)
    assert v is not None
    assert (v.release, v.pre, v.post, v.dev, v.local) == (release, pre, post, dev, local)


@pytest.mark.parametrize("text", ["latest", "", "nightly", "main-2025-08-01", "00.5.23", "0.5.x", "1.2.3.4.5", "rc1"])
def test_parse_refuses_what_is_no_version(text):
    assert parse_version(text) is None


def test_parse_of_a_non_string_is_none():
    assert parse_version(None) is None and parse_version(5) is None


def test_order_of_dev_pre_final_post():
    # PEP 440, written out: dev < a < b < rc.dev < rc < final < post.dev < post < fourth number < next patch
    order = [
        "0.11.0.dev1",
        "0.11.0.dev2",
        "0.11.0a1",
        "0.11.0b1",
        "0.11.0rc1.dev3",
        "0.11.0rc1",
        "0.11.0rc2",
        "0.11.0",
        "0.11.0.post1.dev2",
        "0.11.0.post1",
        "0.11.0.post2",
        "0.11.0.1",
        "0.11.1",
        "0.12.0",
        "1.0",
    ]
    vs = [Version.of(t) for t in order]
    for lo, hi in itertools.pairwise(vs):
        assert lo < hi and hi > lo and lo <= hi and hi >= lo and lo != hi, (lo, hi)
    # the release numbers compare as numbers, not text: 0.5.9 < 0.5.10 < 0.5.23
    assert Version.of("0.5.9") < Version.of("0.5.10") < Version.of("0.5.23")


def test_padding_and_local_labels_do_not_change_the_order():
    assert Version.of("0.9") == Version.of("0.9.0") == Version.of("v0.9.0.0")
    assert Version.of("0.11.0rc2.dev98+g393de22d2") == Version.of("0.11.0rc2.dev98")
    assert hash(Version.of("0.9")) == hash(Version.of("0.9.0"))
    assert Version.of("0.5.23") != "0.5.23"


def test_views_of_a_version():
    v = Version.of("0.11.0rc2.dev98+g393de22d2")
    assert v.triple == (0, 11, 0) and str(v.base) == "0.11.0" and not v.is_final
    assert Version.of("0.10.1.1").triple == (0, 10, 1)
    assert Version.of("1").triple == (1, 0, 0)
    assert str(Version.of("v0.5.4post1")) == "0.5.4.post1" and repr(Version.of("0.5.0rc2")) == "Version('0.5.0rc2')"
    assert Version.of("0.5.4+cu126").is_final


def test_version_is_frozen_and_checked():
    v = Version.of("0.5.23")
    with pytest.raises(AttributeError):
        v.post = 1  # type: ignore[misc]
    with pytest.raises(ValueError):
        Version(())
    with pytest.raises(ValueError):
        Version((0, 5), pre=("c", 1))
    with pytest.raises(ValueError, match="not a version"):
        Version.of("latest")


#: the names the parsers kvplan had before issue 21 item 3 used; a function of one of these names anywhere but
#: kvplan/version.py is a second parser
OLD_PARSER_NAMES = frozenset(
    {"release_key", "version_key", "parse_release", "parse_version", "version_tuple", "_key", "_release_key"}
)

#: functions of those names that read no version (a TOML key quoter)
NOT_A_VERSION = frozenset({"kvplan/inputs/preset_writer.py:_key"})


def test_no_other_module_defines_a_version_parser():
    found = []
    for path in package_ast.package_files():
        if path == PKG / "version.py":
            continue
        tree = package_ast.tree(path)
        rel = path.relative_to(PKG.parent).as_posix()  # once per file: relative_to per AST node cost ~8 s of CPU
        shown = str(path.relative_to(PKG.parent))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in OLD_PARSER_NAMES:
                if f"{rel}:{node.name}" in NOT_A_VERSION:
                    continue
                found.append(f"{shown}:{node.lineno} def {node.name}")
            elif isinstance(node, ast.Assign):  # an alias (`release_key = ...`) is a second name for a parser too
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                found += [f"{shown}:{node.lineno} {n} =" for n in names if n in OLD_PARSER_NAMES]
    assert not found, "version parsing belongs to kvplan.version.parse_version:\n" + "\n".join(found)


def test_the_scan_sees_a_parser(tmp_path):
    """The scan above can fail: a module with ``def release_key`` is found by the same walk."""
    tree = ast.parse("def release_key(v):\n    return tuple(v.split('.'))\n")
    names = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert set(names) & OLD_PARSER_NAMES == {"release_key"}
