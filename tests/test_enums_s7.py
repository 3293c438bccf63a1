"""Typed rule contracts (issue 21 item 4): backends are enum members in the engine and geometry layers, and no rule
takes a ``**_`` keyword bag.

* AST scans of kvplan/engines/ and kvplan/geometry/ (over the shared parse, tests/_ast_cache.py): no comparison of a
  backend-named value (a name or attribute with ``backend`` in it, also behind ``.lower()`` / ``.upper()`` /
  ``.strip()``) with a string literal or a tuple / set / list of them -- ``==``, ``!=``, ``in``, ``not in``, either
  side -- and no ``def`` / ``lambda`` whose ``**`` parameter is ``_``.  Each scan is first run on a sample that
  breaks it, so a scan that finds nothing is known to look.
* The enums of kvplan/engines/backends.py against the vocabularies kvplan accepts: ``deployment.ATTENTION_BACKENDS``,
  the launch-command choices (``inputs.launch.CHOICES``, what the flag registry's ``choice`` spellings read) and the
  newest SGLang flag table's choices; every spelling resolves to the member that is that spelling, and a spelling
  no member declares passes through verbatim (docs/architecture.md, "Backends").
"""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

import pytest

from kvplan.engines.backends import (
    SSM_DTYPES,
    AttentionBackend,
    DsaBackend,
    Dsv4AttnBackend,
    MambaSsmDtype,
    MoeA2ABackend,
    Spelled,
    VllmBackend,
)
from tests import _ast_cache as package_ast

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kvplan"
SCANNED = ("engines", "geometry")
_CASE_CALLS = frozenset({"lower", "upper", "strip", "casefold"})


def _scanned_files() -> list[Path]:
    return [p for top in SCANNED for p in package_ast.package_files(PKG / top)]


def _backend_named(node: ast.expr) -> bool:
    """A Name / Attribute whose name has ``backend`` in it (``x.attention_backend``, ``decode_backend``, also
    ``backend.strip().lower()``)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASE_CALLS:
        node = node.func.value
    if isinstance(node, ast.Name):
        return "backend" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "backend" in node.attr.lower() or _backend_named(node.value)
    return False


def _str_literal(node: ast.expr) -> bool:
    """A str constant, or a tuple / set / list holding one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return any(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return False


def literal_backend_compares(tree: ast.AST) -> list[int]:
    """Lines of every comparison of a backend-named value with a string literal (either side, any operator)."""
    bad = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for a, b in itertools.pairwise(operands):
            if (_backend_named(a) and _str_literal(b)) or (_backend_named(b) and _str_literal(a)):
                bad.add(node.lineno)
    return sorted(bad)


def keyword_bags(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every function or lambda whose ``**`` parameter is ``_`` (a catch-all keyword bag)."""
    out = []
    for node in ast.walk(tree):
        fn = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if fn and node.args.kwarg is not None and node.args.kwarg.arg == "_":
            out.append((node.lineno, getattr(node, "name", "<lambda>")))
    return out


_BAD_SAMPLE = """
def f(q, attention_backend, backend, **_):
    if attention_backend == "trtllm_mha":
        pass
    if "flashmla" != q.decode_attention_backend:
        pass
    if backend in ("fa3", "fa4") or q.flags.dsv4_attn_backend not in {"auto"}:
        pass
    if backend.strip().lower() == "aiter":
        pass
    g = lambda **_: 0
"""

_GOOD_SAMPLE = """
def f(q, attention_backend, names, *, n: int, **kw):
    if attention_backend == AttentionBackend.TRTLLM_MHA or q.backend in _KNOWN:
        pass
    if q.mode == "prefill" and names == ("a",):
        pass
"""


def test_the_scans_find_what_they_look_for():
    bad = ast.parse(_BAD_SAMPLE)
    assert literal_backend_compares(bad) == [3, 5, 7, 9]
    assert [name for _, name in keyword_bags(bad)] == ["f", "<lambda>"]
    good = ast.parse(_GOOD_SAMPLE)
    assert literal_backend_compares(good) == [] and keyword_bags(good) == []


@pytest.mark.parametrize("path", _scanned_files(), ids=lambda p: str(p.relative_to(PKG)))
def test_no_backend_is_compared_with_a_string(path: Path):
    lines = literal_backend_compares(package_ast.tree(path))
    assert not lines, (
        f"{path.relative_to(ROOT)} compares a backend with a string literal on line(s) {lines}: compare members of "
        "kvplan/engines/backends.py (resolved once where the Deployment is read)"
    )


@pytest.mark.parametrize("path", _scanned_files(), ids=lambda p: str(p.relative_to(PKG)))
def test_no_rule_takes_a_keyword_bag(path: Path):
    bags = keyword_bags(package_ast.tree(path))
    assert not bags, f"{path.relative_to(ROOT)}: **_ on {bags}: spell the slot's keywords (a misspelt one must raise)"


def test_a_misspelt_keyword_is_a_type_error():
    """What the explicit signatures buy: an older release's no-op slot refuses a keyword its slot does not have."""
    from kvplan.engines.sglang.releases import rules_for

    old = rules_for("0.5.9")
    assert old.max_running_requests_reduction(total_tokens=1, context_len=1, requested=None, attn_dp_size=1) is None
    with pytest.raises(TypeError):
        old.max_running_requests_reduction(total_tokens=1, context_len=1, requestd=None)
    with pytest.raises(TypeError):
        old.multimodal_reserve_bytes(is_multimodal=True, mm_transport="cpu")


# ------------------------------------------------------------------------------------------------ the vocabularies


def _newest_sglang_choices(flag: str) -> tuple[str, ...]:
    from kvplan.supported import SGLANG_RELEASES

    newest = SGLANG_RELEASES[-1]
    table = json.loads((PKG / "inputs" / "flagtables" / "sglang" / f"{newest}.json").read_text(encoding="utf-8"))
    return tuple(table["flags"][flag]["choices"])


def _values(enum: type[Spelled]) -> set[str]:
    return {m.value for m in enum}


def _round_trips(enum: type[Spelled], spellings: tuple[str, ...] | frozenset[str], *, fold: bool = False) -> None:
    for s in spellings:
        m = enum.parse(s, fold=fold)
        assert m is not None and m.known and m is enum(s) and m == s and str(m) == s, (enum.__name__, s)
        assert json.dumps(m) == json.dumps(s) and f"{m}" == s and m.value == s


def test_attention_backends_are_the_accepted_spellings():
    from kvplan.deployment import ATTENTION_BACKENDS
    from kvplan.inputs.launch import CHOICES

    assert _values(AttentionBackend) == set(ATTENTION_BACKENDS)
    _round_trips(AttentionBackend, ATTENTION_BACKENDS)
    _round_trips(AttentionBackend, CHOICES[("sglang", "--attention-backend")])
    for flag in ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend"):
        _round_trips(AttentionBackend, _newest_sglang_choices(flag))


def test_the_other_sglang_backends_are_its_choices():
    from kvplan.inputs.launch import CHOICES

    assert _values(Dsv4AttnBackend) == set(CHOICES[("sglang", "--dsv4-attn-backend")])
    assert _values(Dsv4AttnBackend) == set(_newest_sglang_choices("--dsv4-attn-backend"))
    _round_trips(Dsv4AttnBackend, CHOICES[("sglang", "--dsv4-attn-backend")], fold=True)
    dsa = set(_newest_sglang_choices("--dsa-prefill-backend")) | set(_newest_sglang_choices("--dsa-decode-backend"))
    assert _values(DsaBackend) == dsa
    assert _values(MoeA2ABackend) == set(_newest_sglang_choices("--moe-a2a-backend"))
    ssm = _newest_sglang_choices("--mamba-ssm-dtype")
    assert set(ssm) <= _values(MambaSsmDtype)
    _round_trips(MambaSsmDtype, ssm, fold=True)
    assert set(SSM_DTYPES) == set(MambaSsmDtype) and all(m.dtype is SSM_DTYPES[m] for m in MambaSsmDtype)


def test_vllm_names_are_the_upper_case_flag_values():
    """vLLM reads ``--attention-backend`` upper-cased (``AttentionBackendEnum[name.upper()]``): each lower-case vLLM
    spelling kvplan accepts that names a backend kvplan's vLLM rules pick between maps to that member."""
    for m in VllmBackend:
        assert VllmBackend.of_flag(m.value.lower()) is m and VllmBackend.of_flag(f" {m.value.lower()} ") is m
    lower = {m.value for m in AttentionBackend}
    for name in ("flash_attn", "flashinfer", "flash_attn_mla", "flashmla", "flashinfer_mla", "cutlass_mla"):
        assert name in lower and VllmBackend.of_flag(AttentionBackend(name)).known, name


@pytest.mark.parametrize("enum", [AttentionBackend, Dsv4AttnBackend, DsaBackend, MoeA2ABackend, VllmBackend])
def test_an_undeclared_spelling_passes_through(enum: type[Spelled]):
    """A spelling a newer release adds (or a known one in another case, where the rule reads it exactly) is no
    error here: it keeps its text, equals no member, and prints as typed -- the string comparisons it replaced
    matched nothing for it either."""
    for text in ("future_backend_9", "FA3" if enum is AttentionBackend else "Future"):
        m = enum.parse(text)
        assert m is not None and not m.known and m.name == "UNKNOWN"
        assert str(m) == text and f"{m}" == text and json.dumps(m) == json.dumps(text) and str(m)[:] == text
        assert all(m != member for member in enum) and m not in set(enum)
    assert enum.parse(None) is None


def test_parse_is_the_identity_on_members_and_folds_only_when_asked():
    assert AttentionBackend.parse(AttentionBackend.FA3) is AttentionBackend.FA3
    assert not AttentionBackend.parse("FA3").known  # SGLang's rules compare exactly, as before
    assert AttentionBackend.parse(AttentionBackend.parse("FA3"), fold=True) is AttentionBackend.FA3  # UNO's check
    assert Dsv4AttnBackend.parse("FLASHMLA", fold=True) is Dsv4AttnBackend.FLASHMLA
    assert not Dsv4AttnBackend.parse(" flashmla", fold=True).known  # the layout lower-cases, it does not trim
    assert MambaSsmDtype.parse(" BFloat16 ", fold=True, strip=True) is MambaSsmDtype.BFLOAT16
    assert MambaSsmDtype.parse("half", fold=True, strip=True).dtype is None


def test_the_sglang_flags_resolve_once_at_the_deployment():
    from kvplan.deployment import Deployment
    from kvplan.engines.sglang.pools.base import PoolFlags

    f = PoolFlags.from_deployment(
        Deployment(attention_backend="trtllm_mha", dsv4_attn_backend="TRTLLM", mamba_ssm_dtype="BF16")
    )
    assert f.attention_backend is AttentionBackend.TRTLLM_MHA
    assert f.dsv4_attn_backend is Dsv4AttnBackend.TRTLLM
    assert f.mamba_ssm_dtype is MambaSsmDtype.BF16
    unknown = PoolFlags.from_deployment(Deployment(dsv4_attn_backend="Mega", mamba_ssm_dtype="half"))
    assert str(unknown.dsv4_attn_backend) == "Mega" and str(unknown.mamba_ssm_dtype) == "half"
    assert PoolFlags.from_deployment(Deployment()).attention_backend is None
