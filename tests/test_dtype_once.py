"""Dtype widths are declared once (issue 21 items 4/5): :class:`kvplan.hfconfig.dtypes.DType`.

An AST scan fails on any other module of the package that writes a table from dtype names to byte (or bit) counts --
a dict literal whose string keys include a dtype spelling and whose values are numbers.  The byte tests are
hand-derived: a value's bits are its format's width (IEEE binary32 / bfloat16 / binary16, OCP FP8 E4M3 / E5M2, the
E2M1 FP4 value of NVFP4 and of SGLang's fp4_mx_block16, INT8, INT4), its bytes torch's element size of the storage
container (two 4-bit values share one byte).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvplan.hfconfig.dtypes import DType, dtype_bytes, dtype_named, dtype_of
from tests import _ast_cache as package_ast

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kvplan"
ENUM_MODULE = PKG / "hfconfig" / "dtypes.py"

_SPELLINGS = {s for d in DType for s in d.spellings}


def _is_count(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and (
        node.value is None or (isinstance(node.value, (int, float)) and not isinstance(node.value, bool))
    )


def _dtype_tables(tree: ast.AST) -> list[int]:
    """Line numbers of dict literals mapping dtype spellings to numbers (None allowed for ``auto``)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict) or not node.keys:
            continue
        keys = [k.value.lower() for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        named = [k for k in keys if k in _SPELLINGS]
        numbers = [v for v in node.values if _is_count(v)]
        if named and len(numbers) >= 2 and len(numbers) == len(node.values):
            out.append(node.lineno)
    return out


def test_scan_sees_a_table():
    """The scan finds the shape it forbids (else it could never fail)."""
    assert _dtype_tables(ast.parse('X = {"float32": 4, "bfloat16": 2}')) == [1]
    assert _dtype_tables(ast.parse('X = {"auto": None, "fp8": 1, "half": 2}')) == [1]
    assert _dtype_tables(ast.parse('X = {"fp32": 4.0, "mixed": 1.0, "int4": 0.5}')) == [1]
    assert _dtype_tables(ast.parse('X = {"num_layers": 4, "hidden": 2}')) == []
    assert _dtype_tables(ast.parse('X = {"bfloat16": "bf16", "half": "fp16"}')) == []


def test_no_dtype_byte_table_outside_the_enum():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in package_ast.package_files()
        if path != ENUM_MODULE
        for line in _dtype_tables(package_ast.tree(path))
    ]
    assert not found, "dtype -> bytes tables outside kvplan/hfconfig/dtypes.py (size through DType): " + ", ".join(
        found
    )


# bits and bytes per dtype, from the formats' definitions (not from the table)
HAND = [
    (DType.FP32, 32, 4),  # 1 sign + 8 exponent + 23 mantissa
    (DType.BF16, 16, 2),  # 1 + 8 + 7
    (DType.FP16, 16, 2),  # 1 + 5 + 10
    (DType.FP8_E4M3, 8, 1),  # 1 + 4 + 3
    (DType.FP8_E5M2, 8, 1),  # 1 + 5 + 2
    (DType.MXFP8, 8, 1),  # E4M3 values; the E8M0 block scale is counted by the layout
    (DType.INT8, 8, 1),
    (DType.MXFP4, 4, 1),  # E2M1 values (weights)
    (DType.NVFP4, 4, 1),  # E2M1 = 1 + 2 + 1; two per uint8 container
    (DType.FP4_MX_BLOCK16, 4, 1),
    (DType.INT4, 4, 1),  # two per byte (vLLM int4_per_token_head, AWQ/GPTQ packing)
]


@pytest.mark.parametrize(("dt", "bits", "nbytes"), HAND, ids=[d.value for d, _, _ in HAND])
def test_bits_and_bytes(dt, bits, nbytes):
    assert dt.bits == bits
    assert dt.bytes == nbytes
    assert DType(dt.value) is dt is dtype_of(dt.value)


def test_every_member_has_a_hand_row():
    assert {d for d, _, _ in HAND} == set(DType)


@pytest.mark.parametrize(
    ("spelling", "member"),
    [
        ("bfloat16", DType.BF16),
        ("torch.bfloat16", DType.BF16),
        (" BF16 ", DType.BF16),
        ("half", DType.FP16),
        ("torch.float16", DType.FP16),
        ("float", DType.FP32),
        ("float32", DType.FP32),
        ("fp8", DType.FP8_E4M3),  # vLLM: fp8 is e4m3 on CUDA
        ("fp8_e4m3fn", DType.FP8_E4M3),
        ("fp8_inc", DType.FP8_E4M3),
        ("fp8_ds_mla", DType.FP8_E4M3),
        ("fp8_per_token_head", DType.FP8_E4M3),
        ("int8_per_token_head", DType.INT8),
        ("int4_per_token_head", DType.INT4),
    ],
)
def test_spellings(spelling, member):
    assert dtype_of(spelling) is member


def test_dtype_named():
    assert dtype_named(" Float16") is DType.FP16
    with pytest.raises(KeyError):
        dtype_named("auto")


def test_no_member_for_auto_or_junk():
    for name in ("auto", "", "float8", "fp4", "fp4_e2m1", None, 2):
        assert dtype_of(name) is None
        assert dtype_bytes(name) is None


def test_each_spelling_names_one_member():
    seen: dict[str, DType] = {}
    for d in DType:
        for s in d.spellings:
            assert s == s.lower().strip()
            assert seen.setdefault(s, d) is d, f"{s!r} names both {seen[s]} and {d}"


def test_engine_tables_size_through_the_enum():
    """The vocabularies that replaced the old tables give the bytes the old tables wrote (hand-copied here)."""
    from kvplan.engines.sglang.pools.mamba import _dtype_bytes
    from kvplan.engines.vllm.specs import KV_CACHE_DTYPES, kv_dtype_bytes
    from kvplan.geometry.kvdtype import kv_element_bits, kv_element_bytes
    from kvplan.hfconfig.checks import _bytes_per_param
    from kvplan.weights.quant import storage_bytes

    vllm_old = {"bfloat16": 2, "float16": 2, "half": 2, "bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1}
    vllm_old |= {"fp8_e5m2": 1, "fp8_inc": 1, "float32": 4, "fp32": 4, "fp8_ds_mla": 1, "fp8_per_token_head": 1}
    vllm_old |= {"int8_per_token_head": 1, "int4_per_token_head": 1, "nvfp4": 1}
    assert ("auto", *vllm_old) == KV_CACHE_DTYPES
    assert {k: kv_dtype_bytes(k) for k in vllm_old} == vllm_old
    mamba_old = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}
    assert {k: _dtype_bytes(k, "f") for k in mamba_old} == mamba_old
    assert [storage_bytes(k, 3, 5) for k in ("bf16", "fp16", "fp32", "fp8", "int8")] == [30, 30, 60, 15, 15]
    assert [kv_element_bits(k) for k in ("torch.float32", "half", "fp8_e5m2", "nvfp4")] == [32, 16, 8, 4]
    assert kv_element_bytes("fp4_mx_block16") == 1
    old_param = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "mixed": 1.0, "int4": 0.5}
    old_param |= {"nvfp4": 0.5, "mxfp4": 0.5, "bfloat16": 1.0, "fp8_e4m3": 1.0, "awq": 1.0}
    assert {k: _bytes_per_param(k) for k in old_param} == old_param


@pytest.mark.parametrize("name", ["fp8", "int8", "fp8_inc", "int4"])
def test_sglang_pool_sizing_keeps_its_vocabulary(name):
    """SGLang has no ``fp8`` KV dtype: geometry's sizing refuses vLLM's words (the speed model falls back on it)."""
    from kvplan.errors import InputError
    from kvplan.geometry.kvdtype import kv_element_bits

    with pytest.raises(InputError):
        kv_element_bits(name)


@pytest.mark.parametrize("name", ["half", "torch.float16", "fp8", "auto"])
def test_mamba_state_keeps_its_vocabulary(name):
    from kvplan.engines.sglang.pools.mamba import _dtype_bytes
    from kvplan.errors import InputError

    with pytest.raises(InputError):
        _dtype_bytes(name, "--mamba-ssm-dtype")


def test_vllm_refuses_what_its_specs_do_not_size():
    from kvplan.engines.vllm.specs import kv_dtype_bytes
    from kvplan.errors import InputError

    for name in ("auto", "mxfp8", "torch.bfloat16", "int4"):
        with pytest.raises(InputError):
            kv_dtype_bytes(name)


# ------------------------------------------------------------------------------------------------------------------
# No string matching on dtypes below planning (issue 21 items 4/5): engines/, geometry/ and weights/ resolve a dtype
# once (``dtype_of`` or the engine's own parser) and compare :class:`DType` members.  An engine's vocabulary -- which
# words its flag accepts -- stays a named tuple of spellings; membership in such a constant is not a literal
# comparison and is not flagged.

SCANNED = ("engines", "geometry", "weights")
_EQ_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)

#: sites written before this rule: file -> how many comparisons remain.  The count may only go down (the test fails
#: when a file gains one, and when an entry is stale).  All are converted now (the last ones tested a *word* whose
#: spelling is itself the rule -- SGLang's DSV4 words, vLLM's fp8_ds_mla layout, weight scheme names -- and read named
#: word lists); keep it empty: a new test on a word names its vocabulary instead.
PENDING: dict[str, int] = {}


def _str_literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return [s for a in node.args for s in _str_literals(a)]
    return []


def _dtype_string_tests(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, spelling) of every ``==`` / ``!=`` / ``in`` / ``not in`` / ``is`` test with a dtype-spelling literal."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or not any(isinstance(op, _EQ_OPS) for op in node.ops):
            continue
        for operand in (node.left, *node.comparators):
            named = [s for s in _str_literals(operand) if s.strip().lower() in _SPELLINGS]
            if named:
                out.append((node.lineno, named[0]))
    return out


@pytest.mark.parametrize(
    ("src", "hits"),
    [
        ('if dt == "fp8_e4m3": pass', 1),
        ('x = dt != "bf16"', 1),
        ('x = dt in ("fp8", "fp8_e5m2")', 1),
        ('x = dt not in ["nvfp4", "fp4_mx_block16"]', 1),
        ('x = dt in frozenset({"fp8", "fp8_e4m3"})', 1),
        ('x = q.algo.upper() == "FP8"', 1),
        ('x = "bfloat16" == dt', 1),
        ("x = dtype_of(dt) is DType.FP8_E4M3", 0),
        ("x = dt in KV_CACHE_DTYPES", 0),  # a vocabulary constant
        ('x = backend == "trtllm"', 0),
        ('x = option in ("auto", "fp4")', 0),  # "fp4" names no dtype
        ('X = ("auto", "fp8", "fp8_e4m3")', 0),  # declaring a vocabulary is not a comparison
    ],
)
def test_string_test_scan_sees_the_shape(src, hits):
    assert len(_dtype_string_tests(ast.parse(src))) == hits


def _scanned_hits() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for sub in SCANNED:
        for path in package_ast.package_files(PKG / sub):
            found = _dtype_string_tests(package_ast.tree(path))
            if found:
                out[path.relative_to(ROOT).as_posix()] = found
    return out


def test_no_dtype_string_matching_below_planning():
    hits = _scanned_hits()
    new = {f: h for f, h in hits.items() if len(h) > PENDING.get(f, 0)}
    assert not new, "compare DType members (dtype_of / the engine's parser), not dtype strings: " + "; ".join(
        f"{f}: " + ", ".join(f"line {n} {s!r}" for n, s in h) for f, h in new.items()
    )
    stale = {f: (n, len(hits.get(f, []))) for f, n in PENDING.items() if len(hits.get(f, [])) < n}
    assert not stale, f"PENDING lists more sites than remain; lower it to what is left: {stale}"


@pytest.mark.parametrize(
    ("member", "outcome"),
    [
        (None, "v41"),  # auto
        ("FP8_E4M3", "v41"),
        ("BF16", "stores its KV pool as fp8"),  # SGLang's bf16 words resolve to this member: the bf16 reason
        ("FP8_E5M2", "not supported"),
        ("MXFP8", "not supported"),
    ],
)
def test_dsv4_layout_compares_members(member, outcome):
    """V4.1 on SM100 at attention TP1 with fp8 storage picks flashmla_mega -> ``v41``; the selection takes the member
    the planner resolved (``None``: auto), and SGLang's words for DeepSeek-V4 are checked before, where the flag is
    read (``kvplan.engines.sglang.kvdtype``, ``_DSV4_FP8_WORDS`` / ``_DSV4_BF16_WORDS``)."""
    from kvplan.engines.sglang.pools.dsv4.layout import dsv4_select_layout
    from kvplan.errors import InputError
    from kvplan.hfconfig.dtypes import DType

    kv = None if member is None else DType[member]
    if outcome == "v41":
        assert dsv4_select_layout(sm_major=10, is_v41=True, kv_dtype=kv, attn_tp_size=1) == "v41"
    else:
        with pytest.raises(InputError, match=outcome):
            dsv4_select_layout(sm_major=10, is_v41=True, kv_dtype=kv, attn_tp_size=1)


def test_solve_dtype_order_is_members_tried_under_flag_words():
    from kvplan.planning.solve import _DTYPE_WORDS, DTYPE_ORDER

    assert [d.bits for d in DTYPE_ORDER] == sorted((d.bits for d in DTYPE_ORDER), reverse=True)
    assert all(dtype_of(w) is d for w, d in zip(_DTYPE_WORDS, DTYPE_ORDER, strict=True))
    assert _DTYPE_WORDS[0] == "bfloat16"  # the word solve tries and reports for BF16 (its answers unchanged)
