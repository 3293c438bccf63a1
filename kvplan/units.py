"""Units at the edges: parse SIZE strings, format bytes.  Inside kvplan every size is an ``int`` of bytes.

SIZE grammar (the CLI contract): a number followed by an optional unit.

* ``B`` bytes; ``KB``/``MB``/``GB``/``TB`` = 10^3/10^6/10^9/10^12;
  ``KiB``/``MiB``/``GiB``/``TiB`` = 2^10/2^20/2^30/2^40;
* a bare number is GiB (SGLang prints GiB and calls it "GB");
* whitespace between number and unit is allowed; the unit is case-sensitive only for the ``i``
  (``gib``/``GiB`` both mean 2^30, ``gb``/``GB`` both mean 10^9).

Example: ``parse_size("78.81GiB") == 84_621_593_149``; ``parse_size("80GB") == 80_000_000_000``.

The numeric-input guard (every parser of user input uses it): integers of more than :data:`MAX_INT_DIGITS` digits
(Python refuses to convert more than 4,300 and anything this long is nonsense for a size or a count), infinities
and NaN are an :class:`InputError` naming the field -- :func:`check_number` for one value, :func:`check_numbers`
for a parsed JSON / TOML document, :func:`int_text` for integer text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError, echo

GiB = 2**30
MiB = 2**20

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
}
_SIZE_RE = re.compile(r"\s*([+-]?(?:\d+(?:[_,]\d{3})*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", re.ASCII)
MAX_BYTES = 2**60  # 1 EiB: anything above is nonsense for one GPU
#: integers of more digits are refused by every parser (2**60 has 19, the tokenizer "no limit" sentinel
#: int(1e30) that some configs carry as model_max_length has 31; Python itself stops at 4,300)
MAX_INT_DIGITS = 40
_INT_LIMIT = 10**MAX_INT_DIGITS


def check_number(value: Any, *, field: str, where: str = "") -> Any:
    """``value`` unchanged when it is not a number, an integer of at most :data:`MAX_INT_DIGITS` digits or a finite
    float; else :class:`InputError` naming ``field`` (and ``where``, e.g. a key path in a file).

    Example: ``check_number(10**50, field="--model", where="config.json: hidden_size")`` raises "config.json:
    hidden_size: an integer of more than 40 digits"; ``check_number(float("nan"), field="x")`` raises "x: NaN is not
    a number kvplan can use"; ``check_number(7, field="x") == 7``.
    """
    if isinstance(value, bool):
        return value
    prefix = f"{where}: " if where else ""
    if isinstance(value, int) and not -_INT_LIMIT < value < _INT_LIMIT:
        raise InputError(
            f"{prefix}an integer of more than {MAX_INT_DIGITS} digits",
            field=field,
            hint="no size, count or setting needs that many digits",
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{prefix}{value!r} is not a number kvplan can use", field=field, hint="write a finite number")
    return value


def check_numbers(doc: Any, *, field: str, where: str) -> None:
    """:func:`check_number` on every number of a parsed JSON / TOML document (iterative: no recursion limit), the
    message naming the dotted key path (``where: text_config.num_hidden_layers``; list items as ``[i]``).

    Example: ``check_numbers({"a": [1, float("inf")]}, field="PLAN", where="plan.toml")`` raises "plan.toml: a[1]:
    inf is not a number kvplan can use".
    """
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        obj, path = stack.pop()
        if isinstance(obj, Mapping):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in obj.items())
        elif isinstance(obj, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(obj))
        else:
            check_number(obj, field=field, where=f"{where}: {echo(path)}" if path else where)


def int_text(text: str, *, field: str) -> int:
    """Integer text (ASCII digits, an optional sign) as an ``int``, refusing more than :data:`MAX_INT_DIGITS` digits
    *before* converting (``int()`` of 5,000 digits raises ValueError, of 4,000 takes time).

    Example: ``int_text("131072", field="--context-length") == 131072``; ``int_text("9" * 5000, ...)`` -> InputError.
    """
    t = text.strip()
    digits = t[1:] if t[:1] in "+-" else t
    if not (digits.isascii() and digits.isdigit()):
        raise InputError(f"'{echo(text)}' is not a whole number", field=field)
    if len(digits.lstrip("0")) > MAX_INT_DIGITS:
        raise InputError(
            f"'{echo(text)}' has more than {MAX_INT_DIGITS} digits",
            field=field,
            hint="no size, count or setting needs that many digits",
        )
    return int(t)


def parse_size(text: str, *, field: str = "SIZE", allow_zero: bool = False) -> int:
    """Parse a SIZE string into integer bytes (rounded down to a whole byte).

    Raises :class:`InputError` naming ``field`` for malformed, negative, NaN/inf or absurd values.
    """
    if not isinstance(text, str) or len(text) > 64:
        raise InputError("not a size", field=field, hint="write e.g. 80GiB, 79.19 GiB, 85520809984B or 80GB")
    m = _SIZE_RE.fullmatch(text)
    if not m:
        raise InputError(
            f"'{echo(text)}' is not a size",
            field=field,
            hint="write a number and a unit: B, KB/MB/GB (10^n) or KiB/MiB/GiB (2^n); a bare number is GiB",
        )
    number, unit = m.group(1).replace("_", "").replace(",", ""), m.group(2).lower()
    if unit not in _UNITS and unit != "":
        raise InputError(
            f"unknown unit '{echo(m.group(2))}' in '{echo(text)}'",
            field=field,
            hint="use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB",
        )
    mult = _UNITS.get(unit, GiB)
    try:
        value = float(number)
    except ValueError:
        raise InputError(f"'{echo(text)}' is not a size", field=field) from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"'{echo(text)}' must be a positive size", field=field)
    # exact for integral byte counts, float rounding otherwise
    if value * mult > MAX_BYTES:  # before int(): 1e308GiB is an infinite float
        raise InputError(f"'{echo(text)}' is larger than any GPU", field=field)
    integral = "." not in number and "e" not in number.lower()
    nbytes = int(number) * mult if integral else int(value * mult)
    if nbytes > MAX_BYTES:
        raise InputError(f"'{echo(text)}' is larger than any GPU", field=field)
    if nbytes == 0 and not allow_zero:  # e.g. 1e-300 or 0.1B: positive, but not a whole byte
        raise InputError(f"'{echo(text)}' is less than one byte", field=field, hint="write e.g. 80GiB")
    return nbytes


def gib(nbytes: int | float) -> float:
    """Bytes -> GiB (float), for display only."""
    return nbytes / GiB


def fmt_gib(nbytes: int | float, digits: int = 2) -> str:
    return f"{nbytes / GiB:,.{digits}f} GiB"


def fmt_tokens(n: int) -> str:
    return f"{n:,}"


def parse_count(text: str, *, field: str) -> int:
    """Parse token counts like ``131072``, ``128k``, ``1m`` (k = 1024, m = 1024^2, the way context lengths are said)."""
    if not isinstance(text, str) or len(text) > 64:
        raise InputError("not a whole number", field=field, hint="write e.g. 131072, 128k or 1m")
    t = text.strip().lower().replace("_", "").replace(",", "")
    mult = 1
    if t.endswith("k"):
        mult, t = 1024, t[:-1]
    elif t.endswith("m"):
        mult, t = 1024**2, t[:-1]
    # ASCII digits only: str.isdigit() also accepts e.g. '²', which int() refuses
    if not (t.isascii() and t.isdigit()):
        raise InputError(f"'{echo(text)}' is not a whole number", field=field, hint="write e.g. 131072, 128k or 1m")
    return int_text(t, field=field) * mult
