"""The engines' server flags by release, as data: one JSON table per SGLang / vLLM release read from its wheel.

The tables in ``sglang/<release>.json`` and ``vllm/<release>.json`` are written by ``scripts/gen_flag_tables.py``
from the released wheels' own argument definitions (SGLang ``sglang/srt/server_args.py`` ``ServerArgs.add_cli_args``;
vLLM ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args`` / ``AsyncEngineArgs.add_cli_args`` and the frontend's
``make_arg_parser``); each records the wheel file name and its sha256 (docs/flag-tables.md has the run).

:func:`table_for` picks the newest table at or below a release (the flags of a release window are those of its
first release read); :meth:`FlagTable.resolve` looks one command-line word up the way the engine's ``argparse``
parser does (CPython ``argparse.ArgumentParser._parse_optional`` / ``_get_option_tuples``):

1. an exact option string (aliases and, for ``BooleanOptionalAction`` flags, the ``--no-`` forms included);
2. ``--flag=value``: the part before ``=`` looked up exactly;
3. with ``allow_abbrev`` (on in every release read): a prefix of exactly one long option; several -> ambiguous
   (argparse: "ambiguous option: --cuda-graph-max-bs could match ...");
4. anything else is unrecognised.  Underscores are not dashes (``--mem_fraction_static`` is unrecognised by SGLang),
   except where the table says the engine rewrites them first (vLLM's ``FlexibleArgumentParser.parse_args``).

Example: ``table_for("sglang", "0.5.4").resolve("--cuda-graph-max-bs").status`` == "match";
``table_for("sglang", "0.5.23").resolve("--cuda-graph-max-bs").candidates`` ==
("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill").

Pure standard library (json, difflib on demand); nothing here is imported on ``kvplan fit``'s path unless a launch
command is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from kvplan.errors import InputError
from kvplan.version import Version, parse_version

ENGINES = ("sglang", "vllm")
_DIR = Path(__file__).resolve().parent

#: Resolution.status values
MATCH, UNKNOWN, AMBIGUOUS, DEPRECATED = "match", "unknown", "ambiguous", "deprecated"


def _table_key(text: str) -> Version | None:
    """The order of a release against the tables: :func:`kvplan.version.parse_version` without a ``.devN`` part
    (a development build reads the table of the release it builds).  Examples: ``"0.5.0rc2"`` sorts below
    ``"0.5.0"``; ``"0.10.1.1"`` above ``"0.10.1"``; ``"0.5.0.dev3"`` as ``"0.5.0"``."""
    v = parse_version(text)
    return None if v is None else Version(v.release, pre=v.pre, post=v.post)


@dataclass(frozen=True)
class Flag:
    """One server argument: every option string, its kind (``switch`` | ``int`` | ``float`` | ``str`` | ``json`` |
    ``choice``), the literal choices, nargs, and a deprecation when the engine marks one."""

    name: str
    names: tuple[str, ...]
    kind: str
    choices: tuple[str, ...] | None = None
    nargs: str | int | None = None
    negatable: bool = False
    human: bool = False  # vLLM human_readable_int (2k, 1M)
    append: bool = False
    deprecated: dict[str, Any] | None = None

    @property
    def launch_kind(self) -> str:
        """The word-reading kind: ``bool`` (no value), ``list`` (nargs + / *), ``opt`` (nargs ?), ``value``."""
        if self.kind == "switch":
            return "bool"
        if self.nargs in ("+", "*") or (isinstance(self.nargs, int) and self.nargs > 1):
            return "list"
        if self.nargs == "?":
            return "opt"
        return "value"

    @property
    def refused(self) -> bool:
        """A retired flag the engine's parser stops on (SGLang ``DeprecatedAction(error_message=...)``)."""
        return bool(self.deprecated and self.deprecated.get("refused"))

    def deprecation_note(self) -> str:
        if not self.deprecated:
            return ""
        use = self.deprecated.get("use")
        return f"{self.name} is deprecated" + (f": use {use}" if use else "")


@dataclass(frozen=True)
class Resolution:
    """What the engine's parser makes of one word: ``status`` is match | unknown | ambiguous | deprecated
    (a deprecated flag is accepted: ``flag`` is set and the engine warns)."""

    status: str
    token: str
    option: str | None = None  # the option string it resolved to
    flag: Flag | None = None
    value: str | None = None  # the text after '=' in --flag=value
    candidates: tuple[str, ...] = ()
    suggestion: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status in (MATCH, DEPRECATED) and not (self.flag is not None and self.flag.refused)

    def message(self) -> str:
        """``unrecognised argument --mem_fraction_static (did you mean --mem-fraction-static?)`` and the like."""
        written = self.token.partition("=")[0]
        if self.status == UNKNOWN:
            hint = f" (did you mean {self.suggestion}?)" if self.suggestion else ""
            return f"unrecognised argument {written}{hint}"
        if self.status == AMBIGUOUS:
            return f"ambiguous option: {written} could match {', '.join(self.candidates)}"
        if self.flag is not None and self.status == DEPRECATED:
            return self.flag.deprecation_note()
        return ""


@dataclass(frozen=True)
class FlagTable:
    """One release's server flags (see the module docstring for the lookup rules)."""

    engine: str
    release: str
    wheel: str
    sha256: str
    allow_abbrev: bool
    underscores_as_dashes: bool
    dotted_json_keys: bool
    rewrites_dash_o: bool  # vLLM FlexibleArgumentParser.parse_args: -O3 / -O=3 / -O 3 -> the optimization level
    flags: dict[str, Flag] = field(repr=False)
    options: dict[str, Flag] = field(repr=False)  # option string -> its flag

    @property
    def longs(self) -> tuple[str, ...]:
        return tuple(sorted(o for o in self.options if o.startswith("--")))

    def _normalise(self, name: str) -> str:
        """vLLM ``FlexibleArgumentParser.parse_args``: underscores between ``--`` and the first ``.`` become dashes."""
        if self.underscores_as_dashes and name.startswith("--"):
            head, dot, tail = name[2:].partition(".")
            return "--" + head.replace("_", "-") + dot + tail
        return name

    def resolve(self, token: str) -> Resolution:
        """Look ``token`` (one command-line word starting with ``-``) up as the engine's parser would.

        Example: SGLang 0.5.23 ``resolve("--tp=2")`` -> match ``--tp-size`` (unique prefix), value "2";
        ``resolve("--context-lenght")`` -> unknown, suggestion ``--context-length``.
        """
        name, eq, value = token.partition("=")
        name = self._normalise(name)
        inline = value if eq else None
        if self.dotted_json_keys and name.startswith("--") and "." in name:
            name = name.partition(".")[0]  # --speculative-config.method mtp: the JSON flag's own key
        if token in self.options and not eq:
            return self._hit(token, token, None)
        if name in self.options:
            return self._hit(token, name, inline)
        if name.startswith("--") and len(name) > 2 and self.allow_abbrev:
            cands = tuple(o for o in self.longs if o.startswith(name))
            if len(cands) == 1:
                return self._hit(token, cands[0], inline)
            if len(cands) > 1:
                return Resolution(AMBIGUOUS, token, candidates=cands)
        elif name.startswith("-") and not name.startswith("--") and len(name) > 2:
            short = [o for o in self.options if not o.startswith("--") and o.startswith(name)]
            if len(short) == 1:
                return self._hit(token, short[0], inline)
            if name[:2] in self.options and not eq:  # -q8: a short option with its value attached
                return self._hit(token, name[:2], name[2:])
        return Resolution(UNKNOWN, token, suggestion=self.suggest(name))

    def _hit(self, token: str, option: str, value: str | None) -> Resolution:
        flag = self.options[option]
        status = DEPRECATED if flag.deprecated else MATCH
        return Resolution(status, token, option=option, flag=flag, value=value)

    def suggest(self, name: str) -> str | None:
        """The closest long option (difflib), underscores read as dashes: ``--mem_fraction_static`` ->
        ``--mem-fraction-static``."""
        import difflib

        guess = name.replace("_", "-") if name.startswith("--") else name
        close = difflib.get_close_matches(guess, self.longs, n=1, cutoff=0.8)
        return close[0] if close else None


def _flag(name: str, d: dict[str, Any]) -> Flag:
    ch = d.get("choices")
    dep = d.get("deprecated")
    return Flag(
        name=name,
        names=tuple(d["names"]),
        kind=d.get("kind", "str"),
        choices=tuple(ch) if ch is not None else None,
        nargs=d.get("nargs"),
        negatable=bool(d.get("negatable")),
        human=bool(d.get("human")),
        append=bool(d.get("append")),
        deprecated=(dep if isinstance(dep, dict) else {"help": True}) if dep else None,
    )


@cache
def releases(engine: str) -> tuple[str, ...]:
    """The releases with a table, oldest first.  Example: ``releases("vllm")[0]`` == "0.5.0"."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine '{engine}'", field="--engine", hint="use sglang or vllm")
    found = [p.stem for p in (_DIR / engine).glob("*.json")]
    return tuple(sorted(found, key=Version.of))


@cache
def load(engine: str, release: str) -> FlagTable:
    """The table read from exactly ``release``'s wheel."""
    raw = json.loads((_DIR / engine / f"{release}.json").read_text(encoding="utf-8"))
    flags = {name: _flag(name, d) for name, d in raw["flags"].items()}
    options: dict[str, Flag] = {}
    for f in flags.values():
        for o in f.names:
            options.setdefault(o, f)
    return FlagTable(
        engine=engine,
        release=raw["release"],
        wheel=raw["wheel"],
        sha256=raw["sha256"],
        allow_abbrev=bool(raw.get("allow_abbrev", True)),
        underscores_as_dashes=bool(raw.get("underscores_as_dashes", False)),
        dotted_json_keys=bool(raw.get("dotted_json_keys", False)),
        rewrites_dash_o=bool(raw.get("rewrites_dash_o", False)),
        flags=flags,
        options=options,
    )


def table_for(engine: str, release: str | None = None) -> FlagTable:
    """The flags of ``engine`` at ``release``: the newest table at or below it (None: the newest table).

    Example: ``table_for("sglang", "0.4.6.post1").release`` == "0.4.6.post1"; ``table_for("sglang", "0.4.8")
    .release`` == "0.4.7.post1" (the table of its window's first release); ``table_for("vllm", "0.10.2")
    .release`` == "0.10.1".  A release older than every table, or not a release string, is an InputError
    naming ``--engine-version``.
    """
    have = releases(engine)
    if release is None:
        return load(engine, have[-1])
    key = _table_key(release)
    if key is None:
        raise InputError(
            f"'{release}' is not a {engine} release", field="--engine-version", hint="e.g. --engine-version 0.5.4"
        )
    below = [r for r in have if Version.of(r) <= key]
    if not below:
        raise InputError(
            f"{engine} {release} is older than the oldest flag table ({have[0]})",
            field="--engine-version",
            hint=f"use {have[0]} or newer",
        )
    return load(engine, below[-1])
