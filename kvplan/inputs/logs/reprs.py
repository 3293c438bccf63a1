"""Small parsers for the Python reprs engines print: ``ServerArgs(k=v, ...)``, ``{'k': v, ...}`` dicts and vLLM's
``k=v, k=v`` engine config string.

Linear and bounded: only quote, bracket, comma and backslash characters are visited, and no value longer than
``MAX_VALUE_LEN`` characters reaches ``ast.literal_eval``.

Numbers are guarded like every other input (docs/hardening.md): a value nested more than :data:`MAX_DEPTH` levels
deep (outside quotes), an integer of more than :data:`~kvplan.units.MAX_INT_DIGITS` digits (Python's ``int()``
stops at 4,300) and a float that is not finite (``1e400``, which ``literal_eval`` makes ``inf``) are an
:class:`~kvplan.errors.InputError` (field ``LOG``) naming the key, before anything reads them.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from kvplan.errors import InputError, echo
from kvplan.units import MAX_INT_DIGITS, check_numbers

MAX_DEPTH = 64  # brackets nested in one value (the limit of JSON files, kvplan.inputs.read.MAX_JSON_DEPTH)
MAX_VALUE_LEN = 20_000  # longest single value handed to ast.literal_eval

_SPECIAL_RE = re.compile(r"[\\'\"()\[\]{},]")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_NAME_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]{0,80})\s*=(?!=)")
_QKEY_RE = re.compile(r"""\s*(['"])([^'"]{1,120})\1\s*:""")
_ENUM_RE = re.compile(r"<([\w.]+): ('[^']*'|-?\d+)>")
_LITERAL_ERRORS = (ValueError, SyntaxError, TypeError, MemoryError, RecursionError)
_DIGITS_RE = re.compile(r"[-+]?(\d[\d_]*)")


class _Splitter:
    """State of :func:`split_top_level`: the open brackets, the open quote and where the current piece began."""

    def __init__(self, start: int) -> None:
        self.stack: list[str] = []
        self.quote: str | None = None
        self.escaped_at = -2
        self.piece_start = start

    def in_quote(self, ch: str, i: int) -> None:
        if ch == "\\":
            self.escaped_at = -2 if self.escaped_at == i - 1 else i  # an escaped backslash resets
        elif ch == self.quote and self.escaped_at != i - 1:
            self.quote = None


def _literal_eval(text: str) -> Any:
    """``ast.literal_eval`` without the warnings a log's text can raise (``'\\X'`` is an invalid escape)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.literal_eval(text)


def split_top_level(s: str, start: int, closer: str | None) -> tuple[list[str], int, bool]:
    """Split ``s[start:]`` at top-level commas until ``closer`` closes the outer bracket.

    Returns (pieces, end index, closed).  Example: ``split_top_level("a=1, b=(2, 3))", 0, ")")`` ->
    ``(["a=1", " b=(2, 3)"], 13, True)``.  A mismatched closer inside a value is kept in the value text.
    """
    pieces: list[str] = []
    st = _Splitter(start)
    for m in _SPECIAL_RE.finditer(s, start):
        ch = m.group()
        i = m.start()
        if st.quote is not None:
            st.in_quote(ch, i)
        elif ch in ("'", '"'):
            st.quote = ch
            st.escaped_at = -2
        elif ch in _OPEN:
            st.stack.append(_OPEN[ch])
        elif ch in ")]}":
            if st.stack:
                if st.stack[-1] == ch:
                    st.stack.pop()
            elif closer is not None and ch == closer:
                pieces.append(s[st.piece_start : i])
                return pieces, i, True
        elif ch == "," and not st.stack:
            pieces.append(s[st.piece_start : i])
            st.piece_start = i + 1
    pieces.append(s[st.piece_start :])
    return pieces, len(s), False


def nesting_depth(s: str) -> int:
    """The deepest bracket nesting of ``s`` outside quotes (linear: only special characters are visited).

    Example: ``nesting_depth("[1, (2, {'a': '((('})]")`` -> 3.
    """
    st = _Splitter(0)
    deepest = 0
    for m in _SPECIAL_RE.finditer(s):
        ch = m.group()
        if st.quote is not None:
            st.in_quote(ch, m.start())
        elif ch in ("'", '"'):
            st.quote, st.escaped_at = ch, -2
        elif ch in _OPEN:
            st.stack.append(_OPEN[ch])
            deepest = max(deepest, len(st.stack))
        elif ch in ")]}" and st.stack:
            st.stack.pop()
    return deepest


def _refuse(name: str, what: str) -> InputError:
    return InputError(
        f"the log's {echo(name, 80)} {what}",
        field="LOG",
        hint="is this the engine's unedited start-up log? fix or cut that line",
    )


def _guard(t: str, name: str) -> None:
    """InputError for a value too deeply nested, or an integer literal of more than MAX_INT_DIGITS digits."""
    if t.count("[") + t.count("(") + t.count("{") > MAX_DEPTH and nesting_depth(t) > MAX_DEPTH:
        raise _refuse(name, f"is nested more than {MAX_DEPTH} levels deep")
    m = _DIGITS_RE.fullmatch(t)
    if m and len(m.group(1).replace("_", "").lstrip("0")) > MAX_INT_DIGITS:
        raise _refuse(name, f"holds an integer of {len(m.group(1)):,} digits (kvplan reads at most {MAX_INT_DIGITS})")


def literal(text: str, name: str = "value") -> Any:
    """A python literal from its repr; anything else is returned as the stripped string.  ``name`` (the key) is
    named by the InputError for a number kvplan cannot use or a value nested too deeply (module docstring).

    Example: ``"True"`` -> True, ``"<LoadFormat.AUTO: 'auto'>"`` -> ``"auto"``, ``"torch.bfloat16"`` -> the string;
    ``literal("1e400", "mem_fraction_static")`` -> InputError "the log's mem_fraction_static: inf is not a number
    kvplan can use".
    """
    t = text.strip()
    if not t:
        return t
    _guard(t, name)
    if len(t) > MAX_VALUE_LEN:
        return t
    if t in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[t]
    if t.startswith("<") and (m := _ENUM_RE.fullmatch(t)):  # <LoadFormat.AUTO: 'auto'>
        return literal(m.group(2), name)
    try:
        val = _literal_eval(t)
    except _LITERAL_ERRORS:
        return t  # dtype=torch.bfloat16 and other names stay text
    check_numbers(val, field="LOG", where=f"the log's {echo(name, 80)}")
    return val


def parse_kv_pieces(pieces: list[str], *, quoted_keys: bool) -> dict[str, Any]:
    """``k=v`` (or ``'k': v``) pieces -> dict; an author's elision ("..., ... kv_cache_dtype='auto'") is skipped."""
    out: dict[str, Any] = {}
    for p in pieces:
        p = p.strip()
        while p.startswith(("...", "\u2026")):
            p = p[3:].lstrip() if p.startswith("...") else p[1:].lstrip()
        if not p:
            continue
        m = (_QKEY_RE if quoted_keys else _NAME_RE).match(p)
        if not m:
            continue
        key = m.group(2) if quoted_keys else m.group(1)
        out[key] = literal(p[m.end() :], key)
    return out


def parse_call_repr(s: str, open_idx: int) -> tuple[dict[str, Any], bool]:
    """``Name(k=v, ...)`` starting at the '(' at ``open_idx``: (dict, closed)."""
    pieces, _end, closed = split_top_level(s, open_idx + 1, ")")
    return parse_kv_pieces(pieces, quoted_keys=False), closed


def parse_dict_repr(s: str, open_idx: int) -> tuple[dict[str, Any], bool]:
    """``{'k': v, ...}`` starting at the '{' at ``open_idx``: (dict, closed). literal_eval first, then piecewise."""
    pieces, end, closed = split_top_level(s, open_idx + 1, "}")
    body = s[open_idx : end + 1]
    if body.count("[") + body.count("(") + body.count("{") > MAX_DEPTH and nesting_depth(body) > MAX_DEPTH + 1:
        raise _refuse("dict", f"is nested more than {MAX_DEPTH} levels deep")
    if closed and end - open_idx < MAX_VALUE_LEN * 10:
        try:
            val = _literal_eval(s[open_idx : end + 1])
            if isinstance(val, dict):
                check_numbers(val, field="LOG", where="the log's dict")
                return {str(k): v for k, v in val.items()}, True
        except _LITERAL_ERRORS:
            pass
    return parse_kv_pieces(pieces, quoted_keys=True), closed
