"""Small parsers for the Python reprs engines print: ``ServerArgs(k=v, ...)``, ``{'k': v, ...}`` dicts and vLLM's
``k=v, k=v`` engine config string.

Linear and bounded: only quote, bracket, comma and backslash characters are visited, and no value longer than
``MAX_VALUE_LEN`` characters reaches ``ast.literal_eval``.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

MAX_VALUE_LEN = 20_000  # longest single value handed to ast.literal_eval

_SPECIAL_RE = re.compile(r"[\\'\"()\[\]{},]")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_NAME_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]{0,80})\s*=(?!=)")
_QKEY_RE = re.compile(r"""\s*(['"])([^'"]{1,120})\1\s*:""")
_ENUM_RE = re.compile(r"<([\w.]+): ('[^']*'|-?\d+)>")
_LITERAL_ERRORS = (ValueError, SyntaxError, TypeError, MemoryError, RecursionError)


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
                pieces.append(s[st.piece_start:i])
                return pieces, i, True
        elif ch == "," and not st.stack:
            pieces.append(s[st.piece_start:i])
            st.piece_start = i + 1
    pieces.append(s[st.piece_start:])
    return pieces, len(s), False


def literal(text: str) -> Any:
    """A python literal from its repr; anything else is returned as the stripped string.

    Example: ``"True"`` -> True, ``"<LoadFormat.AUTO: 'auto'>"`` -> ``"auto"``, ``"torch.bfloat16"`` -> the string.
    """
    t = text.strip()
    if not t or len(t) > MAX_VALUE_LEN:
        return t
    if t in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[t]
    if t.startswith("<") and (m := _ENUM_RE.fullmatch(t)):  # <LoadFormat.AUTO: 'auto'>
        return literal(m.group(2))
    try:
        return _literal_eval(t)
    except _LITERAL_ERRORS:
        return t  # dtype=torch.bfloat16 and other names stay text


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
        out[key] = literal(p[m.end():])
    return out


def parse_call_repr(s: str, open_idx: int) -> tuple[dict[str, Any], bool]:
    """``Name(k=v, ...)`` starting at the '(' at ``open_idx``: (dict, closed)."""
    pieces, _end, closed = split_top_level(s, open_idx + 1, ")")
    return parse_kv_pieces(pieces, quoted_keys=False), closed


def parse_dict_repr(s: str, open_idx: int) -> tuple[dict[str, Any], bool]:
    """``{'k': v, ...}`` starting at the '{' at ``open_idx``: (dict, closed). literal_eval first, then piecewise."""
    pieces, end, closed = split_top_level(s, open_idx + 1, "}")
    if closed and end - open_idx < MAX_VALUE_LEN * 10:
        try:
            val = _literal_eval(s[open_idx : end + 1])
            if isinstance(val, dict):
                return {str(k): v for k, v in val.items()}, True
        except _LITERAL_ERRORS:
            pass
    return parse_kv_pieces(pieces, quoted_keys=True), closed
