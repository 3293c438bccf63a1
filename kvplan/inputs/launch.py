"""Engine launch commands as input: read an SGLang or vLLM command line, map its flags to a Deployment.

``kvplan fit -- python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 ...`` and
``kvplan fit -- vllm serve MODEL -tp 8 ...`` plan the deployment the command would start.  Nothing is
ever executed: the text is split the way a POSIX shell splits words (``shlex``), then each engine's
own flag names, aliases, value kinds and abbreviation rules are applied.

Accepted shapes
---------------
* ``python[3] -m sglang.launch_server ...``, ``sglang serve [MODEL] ...``
  (sgl-project/sglang python/sglang/cli/serve.py ``_normalize_positional_model_path``, v0.5.23:
  a first bare word after ``serve`` is the model path);
* ``vllm serve [MODEL] ...``, ``python -m vllm.entrypoints.openai.api_server ...``
  (vllm-project/vllm vllm/entrypoints/common/cli_args.py ``make_arg_parser``, v0.33.0: positional
  ``model_tag``; ``--model`` also accepted);
* env-var prefixes (``SGLANG_X=1 python -m ...``), ``export X=1`` lines, ``env X=1 cmd``, wrappers
  (``nohup``, ``uv run``, ``CUDA_VISIBLE_DEVICES=... numactl ...``: the first engine entry point wins);
* ``docker run [-e K=V ...] IMAGE CMD ...``; a ``vllm/vllm-openai`` image with no command is taken
  as ``vllm serve`` (its entrypoint) with the words after the image as arguments;
* backslash-continued multi-line text, comments, ``;``/``&&``/``|`` separated commands (exactly one
  of them must launch an engine), redirections (``> log 2>&1``) dropped.

Flag rules reproduced
---------------------
* ``--flag value`` and ``--flag=value``; the last repeated flag wins (argparse ``store``);
* unambiguous prefixes of long flags (argparse ``allow_abbrev``, on in both engines): SGLang 0.5.23
  has no ``--tp``/``--dp`` alias, ``--tp 8`` works because it abbreviates ``--tp-size`` uniquely;
* vLLM (vllm/utils/argparse_utils.py ``FlexibleArgumentParser.parse_args``, v0.33.0): underscores
  in flag names are dashes (``--max_model_len``), ``--speculative-config.num_speculative_tokens 3``
  dotted keys merge into the JSON flag, ``-O3`` is ``--optimization-level 3``, boolean flags also
  have ``--no-`` forms (``argparse.BooleanOptionalAction``);
* vLLM integers with suffixes (vllm/utils/argparse_utils.py ``human_readable_int``, v0.33.0):
  lower-case k/m/g/t are powers of 1000 (decimals allowed), upper-case K/M/G/T powers of 1024
  (integers only); ``--max-model-len`` also takes ``auto``/``-1`` (the model's own length);
  SGLang integers are plain ``int()`` (``--context-length 128k`` is an SGLang error).

Environment variables read from the command's env prefix (``X=1 cmd``, ``export``, ``env``, ``docker -e``):
``SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE`` (engram_on_host); the long-context overrides
``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` (SGLang's EnvBool) and ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` (vLLM: 1 / true)
set ``allow_long_context``, which lets ``--context-length`` / ``--max-model-len`` exceed the model's maximum
(kvplan also reads them from its own environment, :mod:`kvplan.planning.verdict`).

A launch command never names its GPU: :func:`require_gpu` makes ``--gpu`` (or ``--gpu-memory``) required
alongside one (exit 2 naming ``--gpu``), instead of planning it on kvplan's default GPU.

Which flags exist, their aliases, kinds and abbreviations are those of the release the command is planned under:
the flag table of that release (:mod:`kvplan.inputs.flagtables`, generated from the released wheels by
scripts/gen_flag_tables.py; docs/flag-tables.md).  The release is ``--engine-version`` when given, else the version
in the docker image tag (``lmsysorg/sglang:v0.4.6.post1-cu124`` -> 0.4.6.post1, ``vllm/vllm-openai:v0.10.1`` ->
0.10.1), else an exact ``pip install sglang==X`` / ``vllm==X`` in the command, else the newest table; a note says
which, and a release read from the command also becomes the plan's ``engine_version``.  vLLM's underscore and
dotted-key rewriting applies only to the releases whose parser does it (``FlexibleArgumentParser``, vLLM 0.8 on in
the tables).  A flag that release's parser does not know is listed in ``refusals`` with argparse's message
("unrecognised argument --mem_fraction_static (did you mean --mem-fraction-static?)"): the engine refuses to start.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kvplan.errors import InputError
from kvplan.flags import Spelling
from kvplan.inputs.launch_tables import ALIASES as _ALIASES
from kvplan.inputs.launch_tables import LOCAL_UNMODELLED as _LOCAL_UNMODELLED
from kvplan.inputs.launch_tables import SG_ALIASES as _SG_ALIASES
from kvplan.inputs.launch_tables import VL_ALIASES as _VL_ALIASES
from kvplan.inputs.launch_words import (  # noqa: F401  (re-exported: the words part lives there)
    _DOCKER_VALUE_OPTS,
    _ENV_NAME,
    _FIELD,
    _IMAGE_TAG,
    _MODULES,
    _PIP_PIN,
    _PYTHON,
    _REDIRECT,
    _SECRET,
    _SEPARATOR_CHARS,
    MAX_LAUNCH_BYTES,
    MAX_LAUNCH_FLAGS,
    MAX_LAUNCH_WORDS,
    MAX_LISTED,
    MAX_WORD_CHARS,
    _docker_entry,
    _Entry,
    _env_assignment,
    _find_entry,
    _listed_refusals,
    _segments,
    _strip_comments,
    check_flag_count,
    image_release,
    listed,
    pip_release,
    read_launch_text,
)


@dataclass(frozen=True)
class LaunchParse:
    """What a launch command says, in kvplan's terms.

    ``fields`` holds only what the command sets, keyed by :class:`kvplan.deployment.Deployment` field
    names (``engine`` included), so ``Deployment(**{**cli_given, **fields})`` or the other way round
    both work.  ``ignored`` are engine flags that do not change KV sizing; ``unknown`` are flags
    neither engine table has (typos, plugins, newer engine versions); ``notes`` explain flags that do
    change sizing but that kvplan does not model, and other interpretation choices.
    """

    engine: str
    fields: dict[str, Any]
    env: dict[str, str]
    ignored: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    argv: tuple[str, ...] = field(default=(), repr=False)  # the engine's own arguments, as read
    release: str = ""  # the release whose flag table read the command
    release_source: str = ""  # "--engine-version" | "image tag IMAGE" | "pip install ENGINE==X ..." | "newest"
    refusals: tuple[str, ...] = ()  # what that release's argument parser refuses (the engine does not start)

    def release_assumption(self) -> str | None:
        """The assumption line naming the release whose flags read the command, when it was chosen (given or read
        from the command); None when it is the newest by default (the plan's own release line says that)."""
        if not self.release or self.release_source == "newest":
            return None
        name = _ENGINE_NAMES.get(self.engine, self.engine)
        return f"launch command read with {name} {self.release}'s flags ({self.release_source})"

    def warnings(self) -> list[str]:
        """One line per remark, for the CLI to print; a list of flags names the first :data:`MAX_LISTED` and
        counts the rest (``..., and 9,990 more``)."""
        out = list(self.notes)
        if self.unknown:
            out.append(f"{self.engine} launch command: flags kvplan does not know (not used): " + listed(self.unknown))
        if self.ignored:
            out.append(
                f"{self.engine} launch command: flags that do not change KV sizing (ignored): " + listed(self.ignored)
            )
        return out


class _NotJson(Exception):
    """The text is not JSON at all (a launch value may then be read as a plain string)."""


def _json_value(text: str, flag: str) -> Any:
    """A JSON value given on a launch command, under the bounded reader's limits (nesting, digits, inf / NaN: exit 2
    naming the flag); :class:`_NotJson` when it is not JSON syntax at all."""
    from kvplan.inputs.read import parse_json

    try:
        json.loads(text, parse_int=lambda t: 0, parse_float=lambda t: 0.0, parse_constant=lambda t: 0)
    except json.JSONDecodeError as exc:
        raise _NotJson(f"{exc.msg} at column {exc.colno}") from None
    except RecursionError:
        pass  # nested too deep for Python: parse_json names the limit
    return parse_json(text, field=flag, where=flag)


@dataclass(frozen=True)
class _Flags:
    kinds: dict[str, str]  # flag -> "bool" | "list" | "opt" | "value"
    longs: tuple[str, ...]  # long flags, for abbreviation


@cache
def _flags(engine: str) -> _Flags:
    """Every flag of any release with a table, with the newest release's kind where releases differ (the registry's
    spellings and this module's maps are checked against them, tests/test_flags.py).  Parsing reads one release's
    table (:func:`_release`), never this union."""
    from kvplan.inputs.flagtables import load, releases

    kinds: dict[str, str] = {}
    for release in releases(engine):  # oldest first: newer kinds overwrite
        kinds.update({o: f.launch_kind for o, f in load(engine, release).options.items()})
    return _Flags(kinds, tuple(sorted(k for k in kinds if k.startswith("--"))))


# ------------------------------------------------------------------------------------------------
# Value converters: each raises InputError naming the flag as the user wrote it
# ------------------------------------------------------------------------------------------------


def _bad(flag: str, msg: str, hint: str | None = None) -> InputError:
    return InputError(msg, field=flag, hint=hint)


def _int(flag: str, raw: str, *, minimum: int = 1, allow: tuple[int, ...] = ()) -> int:
    try:
        v = int(raw.strip())
    except ValueError:
        raise _bad(flag, f"expects a whole number, got '{raw}'", f"e.g. {flag} 8") from None
    if v < minimum and v not in allow:
        extra = " or " + " / ".join(str(a) for a in allow) if allow else ""
        raise _bad(flag, f"must be >= {minimum}{extra}, got {v}")
    return v


def _float(flag: str, raw: str) -> float:
    try:
        v = float(raw.strip())
    except ValueError:
        raise _bad(flag, f"expects a number, got '{raw}'") from None
    if not math.isfinite(v):
        raise _bad(flag, f"expects a finite number, got '{raw}'")
    return v


def _fraction(flag: str, raw: str) -> float:
    v = _float(flag, raw)
    if not 0 < v <= 1:
        raise _bad(flag, f"must be a fraction in (0, 1], got {raw}", "e.g. 0.85 (a fraction, not a percentage)")
    return v


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def vllm_human_int(flag: str, raw: str) -> int:
    """vLLM's human-readable integer: ``25.6k`` = 25,600 (k/m/g/t = 10^3..10^12), ``1K`` = 1,024
    (K/M/G/T = 2^10..2^40, integers only), else a plain ``int``.

    Source: vllm-project/vllm vllm/utils/argparse_utils.py ``human_readable_int``, v0.33.0.
    Example: ``vllm_human_int("--max-model-len", "32k") == 32000``; ``"32K"`` gives 32768.
    """
    s = raw.strip()
    m = _HUMAN.fullmatch(s)
    if m:
        number, suffix = m.groups()
        if suffix.islower():
            return int(float(number) * 1000 ** ("kmgt".index(suffix) + 1))
        if "." in number:
            raise _bad(
                flag,
                f"decimals are not allowed with binary suffixes like {suffix}, got '{raw}'",
                f"use {number}{suffix.lower()} (powers of 1000) or a whole number",
            )
        return int(number) * 1024 ** ("KMGT".index(suffix) + 1)
    try:
        return int(s)
    except ValueError:
        raise _bad(flag, f"expects a whole number such as 32768, 32k (x1000) or 32K (x1024), got '{raw}'") from None


def _bool_env(name: str, raw: str) -> bool:
    """SGLang's EnvBool (python/sglang/srt/environ.py ``EnvBool.parse``, v0.5.23)."""
    v = raw.strip().lower()
    if v in ("true", "1", "yes", "y"):
        return True
    if v in ("false", "0", "no", "n", ""):
        return False
    raise _bad(name, f"'{raw}' is not a boolean", "use 1 or 0")


# SGLang 0.5.23 choices (python/sglang/srt/arg_groups/fields/model.py kv_cache_dtype;
# python/sglang/srt/arg_groups/choices.py ATTENTION_BACKEND_CHOICES).
_SG_KV_DTYPES = ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")
_SG_ATTENTION_BACKENDS = (
    "triton",
    "torch_native",
    "flex_attention",
    "dsa",
    "nsa",
    "qsa",
    "dsv4",
    "compressed",
    "fa3",
    "fa4",
    "flashinfer",
    "llada2_cfg_flashinfer",
    "flashmla",
    "trtllm_mla",
    "cutedsl_mla",
    "tokenspeed_mla",
    "trtllm_mha",
    "hpc_ops",
    "minicpm_flashattn",
    "minicpm_flashinfer",
    "aiter",
    "wave",
    "intel_amx",
    "ascend",
    "intel_xpu",
)
_SG_CUDA_GRAPH_BACKENDS = ("full", "breakable", "disabled")


def _choice(flag: str, raw: str, choices: Sequence[str]) -> str:
    if raw not in choices:
        raise _bad(flag, f"invalid choice '{raw}'", "choose from " + ", ".join(choices))
    return raw


# ------------------------------------------------------------------------------------------------
# Argument scanning
# ------------------------------------------------------------------------------------------------


@dataclass
class _Scan:
    values: dict[str, tuple[str, Any]]  # canonical flag -> (flag as written, value); last wins
    positionals: list[str]
    seen: list[str]  # canonical flags in order
    unknown: list[str]
    dotted: dict[str, dict]  # vLLM --x.y.z merges
    table: Any = None  # kvplan.inputs.flagtables.FlagTable of the release read
    refusals: list[str] = field(default_factory=list)
    deprecations: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)  # prefixes of several flags, as written


_ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM"}


def _suggest(table: Any, name: str, close: str | None = None) -> str:
    """``--mem-fraction-statc (did you mean --mem-fraction-static?)`` (the release's table's closest flag; ``close``:
    the one the table's resolution already found, so it is not searched twice)."""
    close = close or table.suggest(name)
    return f"{name} (did you mean {close}?)" if close else name


def _looks_negative(word: str) -> bool:
    return bool(re.fullmatch(r"-\d+(\.\d+)?", word))


def _set_nested(d: dict, keys: list[str], value: Any) -> None:
    for k in keys[:-1]:
        nxt = d.get(k)
        if not isinstance(nxt, dict):
            nxt = d[k] = {}
        d = nxt
    d[keys[-1]] = value


def _dotted(sc: _Scan, args: list[str], i: int, name: str, eq: str, inline: str) -> int:
    """vLLM ``--speculative-config.num_speculative_tokens 3``: merge the dotted key into the JSON flag."""
    head, _, tail = name[2:].partition(".")
    if not eq:
        if i >= len(args):
            raise _bad(name, "expects a value")
        inline, i = args[i], i + 1
    keys = tail.split(".")
    parsed: Any
    if keys[-1].endswith("+"):
        keys[-1] = keys[-1][:-1]
        parsed = inline.split(",")
    else:
        try:
            parsed = _json_value(inline, name)
        except _NotJson:
            try:
                parsed = vllm_human_int(name, inline)
            except InputError:
                parsed = inline
    r = sc.table.resolve("--" + head)
    flag = r.option if r.accepted else None
    if flag is None:
        sc.unknown.append(name)
        sc.refusals.append(r.message() or f"unrecognised argument {name}")
        return i
    _set_nested(sc.dotted.setdefault(flag, {}), keys, parsed)
    sc.seen.append(flag)
    return i


def _vllm_word(sc: _Scan, args: list[str], i: int, name: str, eq: str, inline: str) -> tuple[str | None, int]:
    """vLLM's own spellings (``-O3``, ``--max_model_len``, dotted keys): (the flag name to resolve, or None when
    the word was consumed here; the next index)."""
    if name.startswith("-O") and not name.startswith("--") and sc.table.rewrites_dash_o:
        level = inline if eq else name[2:]
        if name == "-O" and not eq:
            level = args[i] if i < len(args) and args[i] in ("0", "1", "2", "3") else ""
            i += 1 if level else 0
        sc.values["--optimization-level"] = ("-O", level)
        sc.seen.append("--optimization-level")
        return None, i
    if not name.startswith("--"):
        return name, i
    head, dot, tail = name[2:].partition(".")
    if sc.table.underscores_as_dashes:  # FlexibleArgumentParser.parse_args (vLLM 0.8 on)
        name = "--" + head.replace("_", "-") + (dot + tail)
    if dot and sc.table.dotted_json_keys:
        return None, _dotted(sc, args, i, name, eq, inline)
    return name, i


def _takes_next(args: list[str], i: int) -> bool:
    return i < len(args) and (not args[i].startswith("-") or _looks_negative(args[i]))


def _read_value(kind: str, args: list[str], i: int, name: str, eq: str, inline: str) -> tuple[Any, int]:
    """The value of one known flag by its kind (bool | list | opt | value) and the next index."""
    if kind == "bool":
        if eq:
            raise _bad(name, f"is a switch and takes no value, got '{inline}'", f"write {name} alone")
        return True, i
    if kind == "list":
        vals = [inline] if eq else []
        while not eq and _takes_next(args, i):
            vals.append(args[i])
            i += 1
        return vals, i
    if eq:
        return inline, i
    if kind == "opt":
        if i < len(args) and not args[i].startswith("-"):
            return args[i], i + 1
        return True, i
    if _takes_next(args, i):
        return args[i], i + 1
    raise _bad(name, "expects a value", f"e.g. {name} VALUE")


def _canonical_option(engine: str, flag: Any, option: str) -> str:
    """The spelling this module's maps use for the flag ``option`` belongs to: ``option`` itself when the maps know it,
    else the first of the flag's other option strings they know (an older release's first name, e.g. SGLang 0.3.0's
    ``--tensor-parallel-size``, is an alias of the newer ``--tp-size``), else ``option``."""
    known = _known_options(engine)
    if option in known or flag is None:
        return option
    return next((o for o in flag.names if o in known), option)


@cache
def _known_options(engine: str) -> frozenset[str]:
    em = engine_map(engine)
    aliases = _ALIASES[engine]
    return frozenset({*em.mapping, *em.special, *em.unmodelled, *aliases, *aliases.values()})


def _scan(engine: str, args: list[str], table: Any) -> _Scan:
    sc = _Scan({}, [], [], [], {}, table)
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        i += 1
        if w == "--":
            sc.positionals.extend(args[i:])
            break
        if not w.startswith("-") or w == "-" or _looks_negative(w):
            sc.positionals.append(w)
            continue
        name: str | None
        name, eq, inline = w.partition("=")
        if engine == "vllm":
            name, i = _vllm_word(sc, args, i, name, eq, inline)
            if name is None:
                continue
        r = table.resolve(name)
        flag = r.option if r.status in ("match", "deprecated") else None
        if flag is None:
            if len(r.candidates) > 1:
                # argparse (allow_abbrev) refuses a prefix of several options: the engine does not start, a verdict
                # ("ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, ..."), not exit 2
                sc.ambiguous.append(name)
            else:
                sc.unknown.append(_suggest(table, name, r.suggestion) if r.suggestion else name)
            sc.refusals.append(r.message())
            # an unknown flag's value, when written as a separate word, is skipped with it
            if not eq and i < n and not args[i].startswith("-"):
                i += 1
            continue
        if r.flag is not None and r.flag.deprecated and r.flag.deprecation_note() not in sc.deprecations:
            sc.deprecations.append(r.flag.deprecation_note())
            if r.flag.refused:
                sc.refusals.append(f"{flag} is retired in {_ENGINE_NAMES[engine]} {table.release}")
        flag = _canonical_option(engine, r.flag, flag)
        value, i = _read_value(r.flag.launch_kind if r.flag else "value", args, i, name, eq, inline)
        if r.flag is not None and r.flag.choices is not None:
            bad = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
            bad = [v for v in bad if v not in r.flag.choices]
            if bad:  # argparse's own message (ArgumentParser._check_value)
                options = ", ".join(f"'{c}'" for c in r.flag.choices)
                sc.refusals.append(f"argument {name}: invalid choice: '{bad[0]}' (choose from {options})")
        key = _ALIASES[engine].get(flag, flag)  # aliases share one destination: the last one wins
        sc.values.pop(key, None)
        sc.values[key] = (name, value)
        sc.seen.append(flag)
    return sc


# ------------------------------------------------------------------------------------------------
# Mapping to Deployment fields
# ------------------------------------------------------------------------------------------------
#
# Which engine flag sets which Deployment field, and how its value is read, is declared once in the flag
# registry (kvplan.flags: each Flag's ``sglang`` / ``vllm`` Spelling).  This module adds what the engines'
# parsers say about flags that are *not* kvplan fields: their aliases, and the ones that change the memory plan
# without kvplan modelling them (a note each).  tests/test_flags.py checks the two never overlap.

_Conv = Callable[[str, Any], Any]


def _pos(flag: str, v: int) -> int:
    if v < 1:
        raise _bad(flag, f"must be a positive number, got {v}")
    return v


# Spelling.value -> converter (see kvplan.flags); "choice" reads _CHOICES
VALUE_RULES: dict[str, _Conv] = {
    "text": lambda f, v: v,
    "int": lambda f, v: _int(f, v),
    "int>=0": lambda f, v: _int(f, v, minimum=0),
    "int>=2": lambda f, v: _int(f, v, minimum=2),
    "int|-1": lambda f, v: _int(f, v, allow=(-1,)),
    "fraction": _fraction,
    "float": _float,
    "switch": lambda f, v: True,
    "human": lambda f, v: _pos(f, vllm_human_int(f, v)),
}
# (engine, flag) -> the values its parser accepts, for Spelling.value == "choice"
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("sglang", "--kv-cache-dtype"): _SG_KV_DTYPES,
    ("sglang", "--attention-backend"): _SG_ATTENTION_BACKENDS,
    ("sglang", "--dsv4-attn-backend"): ("auto", "flashmla", "flashmla_mega", "trtllm"),
}


@dataclass(frozen=True)
class EngineMap:
    """One engine's launch-flag tables, built from the flag registry (:func:`engine_map`)."""

    mapping: dict[str, tuple[str, _Conv]]  # canonical flag -> (Deployment field, converter)
    special: frozenset[str]  # flags read by this module's own rules (DP attention, CUDA graphs ...)
    unmodelled: dict[str, str]  # flag -> why kvplan plans without it


def _converter(engine: str, sp: Spelling) -> _Conv:
    if sp.value == "choice":
        choices = CHOICES[(engine, sp.flag)]
        return lambda f, v: _choice(f, v, choices)
    return VALUE_RULES[sp.value]


@cache
def engine_map(engine: str) -> EngineMap:
    """The launch-flag tables of ``engine``: the registry's spellings plus this module's non-field flags."""
    from kvplan.flags import FLAGS

    mapping: dict[str, tuple[str, _Conv]] = {}
    special: set[str] = set()
    unmodelled = dict(_LOCAL_UNMODELLED[engine])
    for f in FLAGS:
        sp = f.spelling(engine)
        if sp is None:
            continue
        if not sp.modelled:
            unmodelled.update(dict.fromkeys(sp.flags, sp.note))
        elif sp.special:
            special.update(sp.flags)
        else:
            mapping[sp.flag] = (f.field, _converter(engine, sp))
    return EngineMap(mapping, frozenset(special), unmodelled)


def _written(sc: _Scan, flag: str) -> str:
    return sc.values[flag][0] if flag in sc.values else flag


def _canon(flag: str, aliases: dict[str, str]) -> str:
    return aliases.get(flag, flag)


def _common(engine: str, sc: _Scan, fields: dict[str, Any], ignored: list[str], notes: list[str]) -> None:
    """Map the flags the registry spells; note the unmodelled ones; list the rest as ignored."""
    em, aliases = engine_map(engine), _ALIASES[engine]
    done: set[str] = set()
    for flag in sc.seen:
        c = _canon(flag, aliases)
        if c in done:
            continue
        done.add(c)
        if c in em.mapping or c in em.special:
            continue
        if c in em.unmodelled:
            notes.append(f"{c} is not modelled: {em.unmodelled[c]}")
        else:
            ignored.append(c)
    for flag, (written, value) in sc.values.items():
        c = _canon(flag, aliases)
        if c in em.mapping:
            fname, conv = em.mapping[c]
            fields[fname] = conv(written, value)


def _sglang_dp(sc: _Scan, vals: dict[str, tuple[str, Any]], fields: dict[str, Any]) -> None:
    """Data parallelism: --dp-size N --enable-dp-attention is the deprecated spelling of --attn-dp-size N
    (python/sglang/srt/arg_groups/parallel_hook.py handle_deprecated_dp_attention, v0.5.23)."""
    dp = _int(vals["--dp-size"][0], vals["--dp-size"][1]) if "--dp-size" in vals else None
    attn = _int(vals["--attn-dp-size"][0], vals["--attn-dp-size"][1]) if "--attn-dp-size" in vals else 1
    if "--enable-dp-attention" in vals and attn == 1:
        attn, dp = (dp or 1), 1
    if attn > 1:
        if dp is not None and dp > 1:
            raise _bad(
                _written(sc, "--dp-size"),
                f"{dp} data-parallel replicas of an attention-DP {attn} group "
                "cannot be planned (kvplan models one or the other)",
                "plan one replica: drop --dp-size and multiply the result",
            )
        fields["dp"] = attn
        fields["enable_dp_attention"] = True
    elif dp is not None:
        fields["dp"] = dp


def _sglang_cuda_graph(vals: dict[str, tuple[str, Any]], fields: dict[str, Any], notes: list[str]) -> None:
    """CUDA graphs: kvplan has one switch; SGLang disables per phase (cuda_graph_hook.py, v0.5.23)."""
    off = {
        phase: "--disable-cuda-graph" in vals or f"--disable-{phase}-cuda-graph" in vals
        for phase in ("decode", "prefill")
    }
    for phase in ("decode", "prefill"):
        k = f"--cuda-graph-backend-{phase}"
        if k in vals:
            off[phase] = _choice(vals[k][0], vals[k][1], _SG_CUDA_GRAPH_BACKENDS) == "disabled"
    if off["decode"] and off["prefill"]:
        fields["disable_cuda_graph"] = True
    elif off["decode"] or off["prefill"]:
        notes.append(
            f"CUDA graphs are off for {'decode' if off['decode'] else 'prefill'} only; kvplan plans with "
            "CUDA graphs on (its switch turns both phases off)"
        )


def _sglang_fields(entry: _Entry, sc: _Scan, env: dict[str, str]) -> tuple[dict, list, list]:
    fields: dict[str, Any] = {"engine": "sglang"}
    ignored: list[str] = []
    notes: list[str] = []
    if entry.style == "serve" and entry.args[:1] and not entry.args[0].startswith("-"):
        sc.values.setdefault("--model-path", ("sglang serve MODEL", entry.args[0]))
        sc.positionals = sc.positionals[1:]
    elif entry.style == "router":
        notes.append("sglang_router.launch_server: router flags are reported as unknown")
    _common("sglang", sc, fields, ignored, notes)
    vals = {_canon(k, _SG_ALIASES): v for k, v in sc.values.items()}
    _sglang_dp(sc, vals, fields)
    _sglang_cuda_graph(vals, fields, notes)
    if "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE" in env:
        fields["engram_on_host"] = _bool_env(
            "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE", env["SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE"]
        )
    if _SG_LONG_CONTEXT in env:
        fields["allow_long_context"] = _bool_env(_SG_LONG_CONTEXT, env[_SG_LONG_CONTEXT])
    if _VL_LONG_CONTEXT in env:
        notes.append(f"{_VL_LONG_CONTEXT} is a vLLM setting; SGLang reads {_SG_LONG_CONTEXT}")
    return fields, ignored, notes


def _last_switch(sc: _Scan, on: tuple[str, ...], off: str) -> bool | None:
    """argparse.BooleanOptionalAction: the last of the ``on`` / ``off`` spellings wins (None: neither given)."""
    state = None
    for flag in sc.seen:
        if flag in on:
            state = True
        elif flag == off:
            state = False
    return state


def _vllm_model(sc: _Scan, notes: list[str]) -> None:
    """The positional model_tag (vllm serve and api_server); a --model given too is moved aside by vLLM."""
    if not sc.positionals:
        return
    sc.values.setdefault("--model", ("MODEL", sc.positionals[0]))
    if "--model" in sc.values and sc.values["--model"][0] != "MODEL":
        notes.append(f"both a positional model and --model given: using --model {sc.values['--model'][1]}")
    sc.positionals = sc.positionals[1:]


def _vllm_expert_parallel(
    sc: _Scan, vals: dict[str, tuple[str, Any]], fields: dict[str, Any], notes: list[str]
) -> None:
    """Expert parallelism: EP spans TP x DP when --enable-expert-parallel is on
    (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make, v0.33.0)."""
    if not _last_switch(sc, ("--enable-expert-parallel", "-ep"), "--no-enable-expert-parallel"):
        return
    ep = fields.get("tp", 1) * fields.get("dp", 1)
    if ep > 1:
        fields["ep"] = ep
    if "--prefill-context-parallel-size" in vals:
        notes.append("expert parallelism also spans prefill context parallelism in vLLM; kvplan uses tp x dp")


def _vllm_speculative(sc: _Scan, vals: dict[str, tuple[str, Any]], fields: dict[str, Any], notes: list[str]) -> None:
    """Speculative decoding: --speculative-config JSON (or dotted keys), --spec-method, --spec-tokens."""
    spec: dict[str, Any] = {}
    if "--speculative-config" in vals:
        w, raw = vals["--speculative-config"]
        try:
            parsed = _json_value(raw, w)
        except _NotJson as exc:
            raise _bad(
                w,
                f"is not valid JSON ({exc})",
                'quote it: --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\'',
            ) from None
        if parsed is not None and not isinstance(parsed, dict):
            raise _bad(w, "must be a JSON object")
        spec.update(parsed or {})
    if "--speculative-config" in sc.dotted:
        spec.update(sc.dotted["--speculative-config"])
    if "--spec-method" in vals:
        spec["method"] = vals["--spec-method"][1]
    if "--spec-tokens" in vals:
        spec["num_speculative_tokens"] = vals["--spec-tokens"][1]
    if spec.get("method") is not None:
        fields["speculative_algorithm"] = str(spec["method"])
    if spec.get("num_speculative_tokens") is not None:
        n = spec["num_speculative_tokens"]
        fields["speculative_num_draft_tokens"] = _int(
            "--speculative-config num_speculative_tokens", "x" if isinstance(n, bool) else str(n), minimum=0
        )
    if spec:
        notes.append(
            "vLLM speculative decoding is recorded (speculative_algorithm, speculative_num_draft_tokens = "
            "num_speculative_tokens) but the draft model's memory is not modelled"
        )


def _vllm_text_only(sc: _Scan, vals: dict[str, tuple[str, Any]], fields: dict[str, Any]) -> None:
    """Text-only serving: ``--language-model-only`` (BooleanOptionalAction, the last spelling wins) and
    ``--limit-mm-per-prompt`` (a JSON object, dotted keys ``--limit-mm-per-prompt.image 0`` merged into it, or
    the ``image=0,video=0`` form of releases up to 0.8), kept as canonical JSON text for the planner
    (:func:`kvplan.deployment.mm_limits`; vllm/config/multimodal.py ``MultiModalConfig``, v0.34.0)."""
    from kvplan.deployment import mm_limits

    lmo = _last_switch(sc, ("--language-model-only",), "--no-language-model-only")
    if lmo:
        fields["language_model_only"] = True
    limits: dict[str, Any] = {}
    if "--limit-mm-per-prompt" in vals:
        w, raw = vals["--limit-mm-per-prompt"]
        try:
            limits.update(mm_limits(str(raw)))
        except InputError as exc:
            raise _bad(w, str(exc), 'e.g. --limit-mm-per-prompt \'{"image": 0, "video": 0}\'') from None
    dotted = sc.dotted.get("--limit-mm-per-prompt")
    if dotted:
        limits.update(mm_limits(json.dumps(dotted)))
    if "--limit-mm-per-prompt" in vals or dotted:
        fields["limit_mm_per_prompt"] = json.dumps(limits, sort_keys=True)


def _vllm_fields(entry: _Entry, sc: _Scan, env: dict[str, str]) -> tuple[dict, list, list]:
    fields: dict[str, Any] = {"engine": "vllm"}
    ignored: list[str] = []
    notes: list[str] = []
    _vllm_model(sc, notes)
    _common("vllm", sc, fields, ignored, notes)
    vals = {_canon(k, _VL_ALIASES): v for k, v in sc.values.items()}

    if "--max-model-len" in vals:
        w, raw = vals["--max-model-len"]
        if raw.strip().lower() in ("auto", "-1"):
            notes.append(f"{w} {raw}: the model's own context length")
        else:
            fields["context_length"] = _int(w, str(vllm_human_int(w, raw)), minimum=2)
    if _last_switch(sc, ("--enforce-eager",), "--no-enforce-eager"):
        fields["enforce_eager"] = True
    prefix_caching = _last_switch(sc, ("--enable-prefix-caching",), "--no-enable-prefix-caching")
    if prefix_caching is not None:  # BooleanOptionalAction, default None (vllm/engine/arg_utils.py, v0.34.0)
        fields["enable_prefix_caching"] = prefix_caching
    _vllm_expert_parallel(sc, vals, fields, notes)
    _vllm_speculative(sc, vals, fields, notes)
    _vllm_text_only(sc, vals, fields)
    unmodelled = engine_map("vllm").unmodelled
    for flag in sc.dotted:
        if flag not in ("--speculative-config", "--limit-mm-per-prompt"):
            c = _canon(flag, _VL_ALIASES)
            if c not in unmodelled and c not in ignored:
                ignored.append(c)
    if "SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE" in env:
        notes.append("SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE is an SGLang setting; vLLM ignores it")
    if _VL_LONG_CONTEXT in env:
        # vllm/envs.py (v0.34.0): os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0").strip().lower() in ("1", "true")
        fields["allow_long_context"] = env[_VL_LONG_CONTEXT].strip().lower() in ("1", "true")
    if _SG_LONG_CONTEXT in env:
        notes.append(f"{_SG_LONG_CONTEXT} is an SGLang setting; vLLM reads {_VL_LONG_CONTEXT}")
    return fields, ignored, notes


#: the engines' long-context overrides (Deployment.allow_long_context): SGLang 0.5.23 configs/model_config.py
#: ``_derive_context_length``; vLLM 0.34.0 vllm/config/model.py ``_get_and_verify_max_len``
_SG_LONG_CONTEXT = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
_VL_LONG_CONTEXT = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def require_model(fields: Mapping[str, Any]) -> None:
    """A launch command is planned as the deployment it starts: without a model (``--model-path ""``, a bare
    ``vllm serve``, a ``vllm/vllm-openai`` image with no arguments) and no ``--model`` among the flags given with
    it, it is exit 2 -- never kvplan's default deployment (issue 26).  ``fields``: as :func:`require_gpu`'s.

    Example: ``require_model({"engine": "vllm", "tp": 2})`` raises "the launch command names no model";
    ``require_model({"model": "Qwen/Qwen3-32B"})`` returns.
    """
    model = fields.get("model")
    if not (isinstance(model, str) and model.strip()):
        engine = fields.get("engine")
        where = "--model-path MODEL" if engine == "sglang" else "vllm serve MODEL" if engine == "vllm" else "a model"
        raise InputError(
            "the launch command names no model",
            field=_FIELD,
            hint=f"give {where} in the command, or --model before '--'",
        )


def require_gpu(fields: Mapping[str, Any]) -> None:
    """A launch command never says which GPU it runs on: planning one needs ``--gpu`` (or ``--gpu-memory`` for a
    custom device) among the flags given with it.  ``fields``: the Deployment fields after the user's flags were
    merged over the launch command's.  Raises :class:`InputError` naming ``--gpu`` (exit 2), so a launch command is
    never planned on kvplan's default GPU by accident.

    Example: ``require_gpu({"model": "Qwen/Qwen3-32B", "tp": 2})`` raises; ``require_gpu({..., "gpu": "h100-sxm"})``
    returns.
    """
    require_model(fields)
    if fields.get("gpu") is None and fields.get("gpu_memory") is None:
        raise InputError(
            "a launch command does not say which GPU it runs on",
            field="--gpu",
            hint="add -g/--gpu before '--', e.g. kvplan fit -g h100-sxm -- vllm serve MODEL ...",
        )


def _release(
    entry: _Entry, segs: Sequence[Sequence[str]], engine_version: str | None
) -> tuple[Any, str, str | None, list[str]]:
    """(flag table, where its release came from, the release read from the command or None, notes).

    ``--engine-version`` first; else the image tag; else a ``pip install ENGINE==X`` pin; else the newest table.
    Example: ``docker run ... lmsysorg/sglang:v0.4.6.post1-cu124 python3 -m sglang.launch_server ...`` ->
    SGLang 0.4.6.post1's table, "image tag lmsysorg/sglang:v0.4.6.post1-cu124", "0.4.6.post1"."""
    from kvplan.inputs.flagtables import table_for
    from kvplan.version import parse_version

    name = _ENGINE_NAMES[entry.engine]
    from_command = None
    if engine_version:
        wanted, source = engine_version, "--engine-version"
    elif entry.image and (tag := image_release(entry.image, entry.engine)):
        wanted, source, from_command = tag, f"image tag {entry.image}", tag
    elif pin := pip_release(segs, entry.engine):
        wanted, source, from_command = pin, f"pip install {entry.engine}=={pin} in the command", pin
    else:
        return table_for(entry.engine), "newest", None, []
    if parse_version(wanted) is None:  # a main-branch build name and the like: the engine rules resolve it
        table = table_for(entry.engine)
        note = f"{name} launch flags read as {name} {table.release}'s ({source} {wanted} is no release number)"
        return table, source, from_command, [note]
    try:
        table = table_for(entry.engine, wanted)
    except InputError:  # older than every table: the engine's release check names it
        table = table_for(entry.engine)
        note = f"{name} {wanted} is older than every flag table: launch flags read as {name} {table.release}'s"
        return table, source, from_command, [note]
    if table.release != wanted:
        source += f"; {wanted} has the flags of {table.release}, the first release of its window read"
    return table, source, from_command, []


def parse_launch_command(argv_or_text: Sequence[str] | str, *, engine_version: str | None = None) -> LaunchParse:
    """Parse an SGLang or vLLM launch command (argv list or shell text) into Deployment fields, with the flags of
    the release it runs: ``engine_version`` (the ``--engine-version`` given with it), else the command's image tag
    or ``pip install`` pin (then also ``fields["engine_version"]``), else the newest (:func:`_release`).

    Example::

        p = parse_launch_command("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
                                 "--tp 8 --mem-fraction-static 0.8")
        p.engine == "sglang"; p.fields == {"engine": "sglang", "model": "deepseek-ai/DeepSeek-V3",
                                           "tp": 8, "mem_fraction_static": 0.8}

    Raises :class:`InputError` (field = the engine flag as written) for malformed values, and
    (field = "launch command") when no SGLang / vLLM entry point is found or more than one is.
    """
    segs = _segments(argv_or_text)
    if not segs:
        raise InputError(
            "empty launch command",
            field=_FIELD,
            hint="e.g. kvplan fit -- vllm serve MODEL -tp 8, or --from-launch FILE",
        )
    env: dict[str, str] = {}
    entries: list[_Entry] = []
    for words in segs:
        if words[0] == "export":
            for w in words[1:]:
                a = _env_assignment(w)
                if a:
                    env[a[0]] = a[1]
            continue
        if words[0] == "env":  # env [-i] [-u NAME] NAME=VALUE ... cmd
            k = 1
            while k < len(words) and words[k].startswith("-"):
                k += 2 if words[k] in ("-u", "--unset", "-C", "--chdir") else 1
            words = words[k:]
        e = _find_entry(words, env)
        if e is not None:
            entries.append(e)
    if not entries:
        first = " ".join(segs[0][:3])
        raise InputError(
            f"'{first[:60]}' is not an SGLang or vLLM launch command",
            field=_FIELD,
            hint="expected python -m sglang.launch_server ..., sglang serve ..., vllm serve ... "
            "or python -m vllm.entrypoints.openai.api_server ...",
        )
    if len(entries) > 1:
        raise InputError(
            f"found {len(entries)} engine launch commands", field=_FIELD, hint="pass the command of one server"
        )
    entry = entries[0]
    check_flag_count(entry.args)
    table, source, from_command, release_notes = _release(entry, segs, engine_version)
    sc = _scan(entry.engine, entry.args, table)
    if entry.engine == "sglang":
        fields, ignored, notes = _sglang_fields(entry, sc, env)
    else:
        fields, ignored, notes = _vllm_fields(entry, sc, env)
    if from_command is not None:
        fields["engine_version"] = from_command
    notes = [*release_notes, *sc.deprecations, *notes]
    unknown = list(sc.unknown) + [f"unexpected argument '{p}'" for p in sc.positionals]
    if "model" not in fields:
        notes.append(
            "the launch command names no model: "
            + ("--model-path" if entry.engine == "sglang" else "MODEL")
            + " missing"
        )
    return LaunchParse(
        engine=entry.engine,
        fields=fields,
        env=env,
        ignored=tuple(dict.fromkeys(ignored)),
        unknown=tuple(dict.fromkeys(unknown)),
        notes=tuple(notes),
        argv=tuple(entry.args),
        release=table.release,
        release_source=source,
        refusals=_listed_refusals(sc.refusals),
    )
