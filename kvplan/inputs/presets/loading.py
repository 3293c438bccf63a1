"""Reading one preset file: the bounded read, the TOML parse with its number and depth checks, strict validation,
and the on-disk validated cache (:mod:`kvplan.cache`, read back with the types' ``from_dict``).

Example: ``load_model_file(configs_dir() / "models" / "meta-llama--Llama-3.1-8B-Instruct.toml").id``
-> ``"meta-llama/Llama-3.1-8B-Instruct"``.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvplan.errors import InputError, echo
from kvplan.inputs.config_keys import CONFIG_KEYS  # the [config] allow-list, data of its own

if TYPE_CHECKING:
    from pydantic import ValidationError

from kvplan.inputs.presets.files import MAX_PRESET_BYTES, MAX_PRESET_DEPTH, MAX_PRESET_ELEMENTS, _is_shipped
from kvplan.inputs.presets.schema import HardwarePreset, ModelPreset, _adapter, _Preset

# -------------------------------------------------------------------------------------------- reading


def _fmt_validation(label: str, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    kind = e["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{label}: unknown key '{loc}'"
    if kind == "missing":
        return f"{label}: missing key '{loc}'"
    return f"{label}: key '{loc}': {e['msg']}"


def _read_preset_bytes(path: Path) -> bytes:
    """A preset file's bytes through the one bounded reader (:func:`kvplan.inputs.read.read_bytes`): a regular file
    of at most :data:`MAX_PRESET_BYTES` (a FIFO, a device or a folder named ``*.toml`` is refused unread, never
    read until it ends); InputError naming the file otherwise."""
    from kvplan.inputs.read import read_bytes

    return read_bytes(path, field="preset", what="a preset", max_bytes=MAX_PRESET_BYTES)


def _deeper_than(doc: Any, max_depth: int) -> bool:
    """True when ``doc`` nests tables / arrays more than ``max_depth`` levels (iterative: a TOML header
    ``[a.a.a...]`` builds any depth without recursion, and Python's recursive helpers must never see it)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        obj, depth = stack.pop()
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else None
        if items is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
    return False


#: one TOML string literal or comment (skipped whole, possessive quantifiers: one match, no backtracking state) or
#: one character that starts a value: ``,`` (an array item after the first), ``=`` (a key), ``[`` (an array or a
#: table header), ``{`` (an inline table)
_TOML_TOKEN = re.compile(
    r'"""(?:[^"\\]++|\\.|"(?!""))*+"""'
    r"|'''(?:[^']++|'(?!''))*+'''"
    r'|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
    r"|'[^'\n]*+'"
    r"|#[^\n]*+"
    r"|[,=\[{]",
    re.DOTALL,
)


def count_toml_elements(text: str, limit: int = MAX_PRESET_ELEMENTS) -> int:
    """An upper bound of the values a TOML text holds (``,`` + ``=`` + ``[`` + ``{``), from the text alone, before
    tomllib builds anything: first ``str.count`` over the whole text; only when that exceeds ``limit``, again
    outside strings and comments (:data:`_TOML_TOKEN`), stopping once ``limit`` is passed -- linear in the text.
    Exact below ``limit`` (as a bound), "more than ``limit``" above it.

    Example: ``count_toml_elements('id = "a,b"\\nx = [1, 2]')`` -> 5 (the fast bound counts the string's comma; under
    the limit it stands); ``count_toml_elements("x = [" + "0," * 10**6 + "0]", limit=100)`` -> 101.
    """
    fast = text.count(",") + text.count("=") + text.count("[") + text.count("{")
    if fast <= limit:
        return fast
    n = 0
    for m in _TOML_TOKEN.finditer(text):
        if text[m.start()] in ",=[{":
            n += 1
            if n > limit:
                break
    return n


def _parse_toml(label: str, raw: bytes) -> dict[str, Any]:
    """A preset file's TOML document, every number checked (:func:`kvplan.units.check_numbers`: no integer of more
    than MAX_INT_DIGITS digits, no inf / nan) and at most :data:`MAX_PRESET_DEPTH` levels deep; InputError naming
    ``label`` (the file) otherwise.  tomllib raises a plain ValueError (not TOMLDecodeError) for an integer over
    Python's 4,300-digit limit, and RecursionError for arrays nested about 1,000 deep: both are bad input."""
    import tomllib  # only on a cache miss

    from kvplan.units import MAX_INT_DIGITS, check_numbers

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{label}: not UTF-8 text (byte 0x{raw[exc.start : exc.start + 1].hex()} at offset {exc.start:,})",
            field="preset",
        ) from None
    if count_toml_elements(text) > MAX_PRESET_ELEMENTS:
        raise InputError(
            f"{label}: holds more than {MAX_PRESET_ELEMENTS:,} values (keys, tables and array items)",
            field="preset",
            hint="a preset holds a few hundred; is this the right file?",
        )
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML ({echo(exc, 200)})", field="preset") from None
    except ValueError:  # int() of more than 4,300 digits
        raise InputError(
            f"{label}: holds an integer of more than {MAX_INT_DIGITS} digits",
            field="preset",
            hint="no size, count or setting needs that many digits",
        ) from None
    except RecursionError:
        raise InputError(
            f"{label}: arrays or tables nested more than {MAX_PRESET_DEPTH} levels deep", field="preset"
        ) from None
    if _deeper_than(doc, MAX_PRESET_DEPTH):
        raise InputError(f"{label}: arrays or tables nested more than {MAX_PRESET_DEPTH} levels deep", field="preset")
    check_numbers(doc, field="preset", where=label)
    return doc


def _validate(cls: type[_Preset], label: str, data: dict[str, Any]) -> _Preset:
    """``data`` as a ``cls`` (strict: unknown keys rejected); InputError names ``label`` (the file) and the key."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InputError(f"{label}: a preset must be a TOML table", field="preset")
    try:
        obj = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise InputError(_fmt_validation(label, exc), field="preset", hint="fix the preset file") from None
    if isinstance(obj, ModelPreset):
        unknown = sorted(set(obj.config) - CONFIG_KEYS)
        if unknown:
            raise InputError(
                f"{label}: unknown key 'config.{unknown[0]}'",
                field="preset",
                hint="use Hugging Face config.json field names",
            )
    return obj


def _from_cache(cls: type[_Preset], key: str, ident: str) -> _Preset | None:
    from kvplan import cache

    data = cache.load("presets", key, ident)
    if data is not None:
        try:
            return cls.from_dict(data)
        except (TypeError, KeyError, AttributeError):  # a cache entry of another shape: validate again
            pass
    return None


def _cached(cls: type[_Preset], path: Path) -> _Preset:
    """Load a preset file, validated by pydantic once per file content.

    The validated form is kept as JSON by :mod:`kvplan.cache` (which also checks kvplan's version and the entry's
    own checksum); KVPLAN_NO_CACHE=1 turns it off.  Every file, shipped or the user's, is read (bounded) on each
    load: the entry is keyed by the file's path and its ident holds a checksum of the file's bytes, so any edit in
    place -- even one of the same size and mtime -- is a miss that validates again and rewrites the entry.

    Formula: ``key = <stem>-<crc32(absolute path)>``; ``ident = <type>:<absolute path>:<cache.digest(bytes)>``.
    """
    from kvplan import cache

    label = path.name if _is_shipped(path) else str(path)
    raw = _read_preset_bytes(path)
    where = str(path.absolute())
    key = f"{'shipped' if label == path.name else 'user'}-{path.stem[:80]}-{zlib.crc32(where.encode()):08x}"
    ident = f"{cls.__name__}:{where}:{cache.digest(raw)}:{len(raw)}"
    hit = _from_cache(cls, key, ident)
    if hit is not None:
        return hit
    obj = _validate(cls, label, _parse_toml(label, raw))
    cache.store("presets", key, ident, dataclasses.asdict(obj))
    return obj


def _load(cls: type[_Preset], path: Path, *, use_cache: bool) -> _Preset:
    if use_cache:
        return _cached(cls, path)
    label = path.name if _is_shipped(path) else str(path)
    return _validate(cls, label, _parse_toml(label, _read_preset_bytes(path)))


def load_model_file(path: Path, *, use_cache: bool = True) -> ModelPreset:
    """One model preset file, validated (errors name the file: its name if shipped, its path otherwise)."""
    return _load(ModelPreset, path, use_cache=use_cache)


def load_hardware_file(path: Path, *, use_cache: bool = True) -> HardwarePreset:
    """One hardware preset file, validated (errors name the file: its name if shipped, its path otherwise)."""
    return _load(HardwarePreset, path, use_cache=use_cache)
