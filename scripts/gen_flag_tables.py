"""Generate kvplan's engine flag tables (kvplan/inputs/flagtables/<engine>/<release>.json) from released wheels.

Usage (docs/flag-tables.md has the exact run)::

    pip download --no-deps sglang==0.5.4 -d /tmp/whl/sglang
    pip download --no-deps vllm==0.10.1 -d /tmp/whl/vllm
    python scripts/gen_flag_tables.py /tmp/whl/sglang/*.whl /tmp/whl/vllm/*.whl

Nothing of the engine is imported or run: each wheel is opened as a zip file, its parser-building modules are read
with :mod:`ast`, and the ``add_argument(...)`` calls reachable from the server parser's entry point are evaluated
symbolically:

* SGLang: ``ServerArgs.add_cli_args`` in ``sglang/srt/server_args.py``: its literal ``add_argument`` calls (every
  release), and, from 0.5.14 on, ``add_cli_args_from_dataclass(parser, ServerArgs)``
  (``sglang/srt/arg_groups/arg_utils.py``), which turns each ``Annotated[T, "help" | Arg(...)]`` field into one
  argument: ``Arg.action`` as given; a ``Literal`` -> choices; ``list[X]`` -> ``nargs="+"``; ``bool`` ->
  ``store_true``; otherwise ``Arg.type_parser`` or int / float / str.  In 0.5.23 the fields live in the namespace
  classes of ``sglang/srt/arg_groups/fields/*.py`` that ``collect_input_fields(...)`` gathers into ``ServerArgs``.
* vLLM: ``make_arg_parser`` (``vllm/entrypoints/openai/cli_args.py``), which adds the frontend flags and calls
  ``AsyncEngineArgs.add_cli_args`` / ``EngineArgs.add_cli_args`` (``vllm/engine/arg_utils.py``).  From 0.8 on most
  calls are ``group.add_argument("--x", **x_kwargs["field"])`` with ``x_kwargs = get_kwargs(SomeConfig)``: the kind is
  then derived from the config dataclass field's annotation the way ``_compute_kwargs`` does (a dataclass -> JSON;
  ``bool`` -> ``BooleanOptionalAction``, so ``--no-x`` too; ``Literal`` -> choices; ``tuple`` / ``list`` -> nargs;
  int; float; dict -> JSON; else str), with the call's own keywords taking precedence.  Newer releases add every
  field of a dataclass in a loop (``for key, value in kwargs.items(): add_argument(f"--{key...}", **value)``).

Per table: the wheel file name and sha256, whether argparse abbreviations are on (``allow_abbrev``, the default,
unless the parser is built with ``allow_abbrev=False``), whether the parser turns underscores into dashes (vLLM's
``FlexibleArgumentParser.parse_args``), rewrites ``-O3`` and takes dotted JSON keys, and per flag: every option
string, its kind (``switch`` | ``int`` | ``float`` | ``str`` | ``json``), ``choices`` when they are a literal in
the source (else absent), ``nargs``, ``negatable`` (``--no-`` forms), and ``deprecated`` (a
``Deprecated*Action``, vLLM's ``deprecated=True``, or a help text that says so).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "kvplan" / "inputs" / "flagtables"

_WHEEL = re.compile(r"^(?P<name>sglang|vllm)-(?P<version>[^-]+)-")


class Unresolved(Exception):
    """A value that is not a literal in the source (computed at run time)."""


class Mod:
    """One parsed module of the wheel."""

    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name = name
        self.tree = tree
        self.consts: dict[str, ast.expr] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.imports: dict[str, tuple[str, str]] = {}  # local name -> (module, name)
        for node in tree.body:
            self._index(node)

    def _index(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.consts[t.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            self.consts[node.target.id] = node.value
        elif isinstance(node, ast.ClassDef):
            self.classes[node.name] = node
        elif isinstance(node, ast.FunctionDef):
            self.functions[node.name] = node
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                self.imports[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.If | ast.Try):  # version-guarded definitions
            for sub in [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]:
                self._index(sub)


class Wheel:
    """The wheel's Python modules, parsed on demand (``vllm.config.model`` -> ``vllm/config/model.py``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        self.mods: dict[str, Mod | None] = {}
        self.read: list[str] = []
        self.rules: Any = None

    def source(self, rel: str) -> str | None:
        return self.zip.read(rel).decode("utf-8") if rel in self.names else None

    def mod(self, dotted: str) -> Mod | None:
        if dotted in self.mods:
            return self.mods[dotted]
        base = dotted.replace(".", "/")
        m = None
        for rel in (base + ".py", base + "/__init__.py"):
            text = self.source(rel)
            if text is not None:
                try:
                    m = Mod(dotted, ast.parse(text))
                    self.read.append(rel)
                except SyntaxError:
                    m = None
                break
        self.mods[dotted] = m
        return m

    def lookup(self, mod: Mod, name: str, kind: str, depth: int = 0) -> tuple[Mod, Any] | None:
        """``name`` as seen from ``mod``: a class / function / const defined there or imported (followed)."""
        table = getattr(mod, kind)
        if name in table:
            return mod, table[name]
        if name in mod.imports and depth < 6:
            src_mod, src_name = mod.imports[name]
            target = self.mod(src_mod)
            if target is None:
                return None
            return self.lookup(target, src_name, kind, depth + 1)
        return None


# ------------------------------------------------------------------------------------------------
# Literal evaluation
# ------------------------------------------------------------------------------------------------


def literal(w: Wheel, mod: Mod, node: ast.expr, depth: int = 0) -> Any:
    """The value of ``node`` when it is a literal, a name bound to one, or simple list arithmetic; else Unresolved."""
    if depth > 12:
        raise Unresolved
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        out: list[Any] = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                out.extend(literal(w, mod, e.value, depth + 1))
            else:
                out.append(literal(w, mod, e, depth + 1))
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return list(literal(w, mod, node.left, depth + 1)) + list(literal(w, mod, node.right, depth + 1))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "sorted", "tuple")
        and len(node.args) == 1
        and not node.keywords
    ):
        return list(literal(w, mod, node.args[0], depth + 1))
    if isinstance(node, ast.Dict):
        keys = [literal(w, mod, k, depth + 1) for k in node.keys if k is not None]
        return dict.fromkeys(keys)
    if isinstance(node, ast.Name):
        found = w.lookup(mod, node.id, "consts")
        if found is None:
            raise Unresolved
        return literal(w, found[0], found[1], depth + 1)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        found = w.lookup(mod, node.value.id, "classes")
        if found is not None:
            for stmt in found[1].body:
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == node.attr for t in stmt.targets
                ):
                    return literal(w, found[0], stmt.value, depth + 1)
    raise Unresolved


def maybe_literal(w: Wheel, mod: Mod, node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return literal(w, mod, node)
    except Unresolved:
        return Unresolved


# ------------------------------------------------------------------------------------------------
# Annotations (dataclass fields)
# ------------------------------------------------------------------------------------------------


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def flatten_union(w: Wheel, mod: Mod, node: ast.expr, depth: int = 0) -> list[tuple[Mod, ast.expr]]:
    """``Optional[X]``, ``Union[X, Y]``, ``X | Y`` and type aliases -> their members (with the defining module)."""
    if depth > 8:
        return [(mod, node)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return [(mod, node)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return flatten_union(w, mod, node.left, depth + 1) + flatten_union(w, mod, node.right, depth + 1)
    if isinstance(node, ast.Subscript):
        head = _name(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional":
            return [*flatten_union(w, mod, args[0], depth + 1), (mod, ast.Constant(None))]
        if head == "Union":
            return [m for a in args for m in flatten_union(w, mod, a, depth + 1)]
        if head in ("Annotated", "SkipValidation"):
            return flatten_union(w, mod, args[0], depth + 1)
    if isinstance(node, ast.Name):
        found = w.lookup(mod, node.id, "consts")
        if found is not None and isinstance(found[1], ast.Subscript | ast.BinOp):
            return flatten_union(w, found[0], found[1], depth + 1)
    return [(mod, node)]


def is_dataclass_name(w: Wheel, mod: Mod, node: ast.expr) -> bool:
    if not isinstance(node, ast.Name):
        return False
    found = w.lookup(mod, node.id, "classes")
    if found is None:
        return False
    return any(
        _name(d.func if isinstance(d, ast.Call) else d) in ("dataclass", "config") for d in found[1].decorator_list
    )


def literal_values(w: Wheel, mod: Mod, node: ast.expr) -> list[Any]:
    args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]  # type: ignore[attr-defined]
    out: list[Any] = []
    for a in args:
        try:
            out.append(literal(w, mod, a))
        except Unresolved:
            for m, sub in flatten_union(w, mod, a):  # Literal[ALIAS, ...]
                if isinstance(sub, ast.Subscript) and _name(sub.value) == "Literal":
                    out.extend(literal_values(w, m, sub))
    return out


class VllmRules:
    """What this release's ``_compute_kwargs`` (vllm/engine/arg_utils.py) does that others do not: the fields read
    as human-readable ints (``2k``), ``bool | str | None`` as ``nargs="?"`` (0.3x), ``set[X]`` as a collection."""

    def __init__(self, w: Wheel) -> None:
        self.human: set[str] = set()
        self.bool_str_opt = self.sets = self.literal_or_str_free = False
        mod = w.mod("vllm.engine.arg_utils")
        lit = mod.functions.get("literal_to_kwargs") if mod else None
        # 0.3x: a Literal[...] | str field lists its values as a metavar, not as choices (any string passes argparse)
        self.literal_or_str_free = lit is not None and "metavar" in ast.unparse(lit)
        func = mod.functions.get("_compute_kwargs") if mod else None
        if func is None:
            return
        text = ast.unparse(func)
        self.bool_str_opt = "{bool, str, type(None)}" in text
        self.sets = "contains_type(type_hints, set)" in text
        local: dict[str, ast.expr] = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                local[node.targets[0].id] = node.value
        for node in ast.walk(func):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "name":
                for c in node.comparators:
                    c = local.get(c.id, c) if isinstance(c, ast.Name) else c
                    for e in [c, *getattr(c, "elts", [])]:
                        if isinstance(e, ast.Constant) and isinstance(e.value, str):
                            self.human.add(e.value)


def vllm_kind(w: Wheel, mod: Mod, ann: ast.expr, field: str) -> dict[str, Any]:
    """vllm/engine/arg_utils.py ``_compute_kwargs``: the argparse kind of one config dataclass field."""
    rules = w.rules
    members = flatten_union(w, mod, ann)
    heads = [(m, n, _name(n.value) if isinstance(n, ast.Subscript) else _name(n)) for m, n in members]
    optional = any(isinstance(n, ast.Constant) and n.value is None for _, n, _h in heads)
    if any(is_dataclass_name(w, m, n) for m, n, _h in heads):
        return {"kind": "json"}
    names = {h for _m, _n, h in heads}
    if rules.bool_str_opt and optional and {h for h in names if h} == {"bool", "str"}:
        return {"kind": "str", "nargs": "?"}  # type_hints == {bool, str, type(None)}: nargs="?", const=True
    if "bool" in names:
        return {"kind": "switch", "negatable": True}
    for m, n, h in heads:
        if h == "Literal" and isinstance(n, ast.Subscript):
            vals = literal_values(w, m, n)
            if rules.literal_or_str_free and "str" in names:
                return {"kind": "str", "values": [str(v) for v in vals]}
            out: dict[str, Any] = {"kind": "choice", "choices": [str(v) for v in vals]}
            if optional:
                out["choices"].append("None")
            return out
    for _m, n, h in heads:
        if h in ("tuple", "Tuple") and isinstance(n, ast.Subscript):
            elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            ellipsis = any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts)
            return {"kind": _scalar(_name(elts[0])), "nargs": "+" if ellipsis else len(elts)}
    for _m, n, h in heads:
        if h in ("list", "List") or (rules.sets and h in ("set", "Set")):
            elem = _name(n.slice) if isinstance(n, ast.Subscript) else "str"
            return {"kind": _scalar(elem), "nargs": "+"}
    if "int" in names:
        out = {"kind": "int"}
        if field in rules.human:
            out["human"] = True
        return out
    if "float" in names:
        return {"kind": "float"}
    if names & {"dict", "Dict"}:
        return {"kind": "json"}
    return {"kind": "str"}


def _scalar(name: str) -> str:
    return {"int": "int", "float": "float", "bool": "switch"}.get(name, "str")


def class_fields(w: Wheel, mod: Mod, cls: ast.ClassDef, depth: int = 0) -> dict[str, tuple[Mod, ast.AnnAssign]]:
    """Annotated class-level fields, base classes first (dataclass field order)."""
    out: dict[str, tuple[Mod, ast.AnnAssign]] = {}
    if depth < 5:
        for b in cls.bases:
            found = w.lookup(mod, _name(b), "classes") if _name(b) else None
            if found is not None:
                out.update(class_fields(w, found[0], found[1], depth + 1))
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and _name(stmt.annotation) != "ClassVar"
            and not (isinstance(stmt.annotation, ast.Subscript) and _name(stmt.annotation.value) == "ClassVar")
        ):
            out[stmt.target.id] = (mod, stmt)
    return out


# ------------------------------------------------------------------------------------------------
# add_argument calls
# ------------------------------------------------------------------------------------------------


class Collector:
    def __init__(self, w: Wheel, engine: str) -> None:
        self.w = w
        self.engine = engine
        self.flags: dict[str, dict[str, Any]] = {}
        self.visited: set[int] = set()

    # -- recording ---------------------------------------------------------------------------------

    def record(self, names: list[str], info: dict[str, Any]) -> None:
        names = [n for n in names if n.startswith("-")]
        if not names:
            return
        info = {k: v for k, v in info.items() if v not in (None, False, [], "")}
        info["names"] = names
        key = names[0]
        if key in self.flags:  # registered twice: argparse would raise; keep the first, merge names
            return
        self.flags[key] = info

    def from_call(self, mod: Mod, call: ast.Call, env: dict[str, Any]) -> None:
        """One ``add_argument(*names, **kwargs)`` call."""
        names: list[str] = []
        for a in call.args:
            v = maybe_literal(self.w, mod, a)
            if isinstance(v, str):
                names.append(v)
            elif isinstance(a, ast.JoinedStr):
                return  # f-string names: handled by the loop form (vllm_loop)
        if not any(n.startswith("-") for n in names):
            return
        kw = {k.arg: k.value for k in call.keywords if k.arg is not None}
        info: dict[str, Any] = {}
        for k in call.keywords:  # **x_kwargs["field"]: the config field's derived kind
            if k.arg is None:
                base = self.star_kwargs(mod, k.value, env)
                if base:
                    info.update(base)
        info.update(self.explicit(mod, kw, names, info))
        self.record(names, info)

    def star_kwargs(self, mod: Mod, node: ast.expr, env: dict[str, Any]) -> dict[str, Any]:
        """``**x_kwargs["field"]`` (or ``**{**x_kwargs["field"], "default": None}``): the field's kind, with the
        function's own ``x_kwargs["field"]["type"] = ...`` edits applied."""
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            lits: dict[str, ast.expr] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    out.update(self.star_kwargs(mod, v, env))
                elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                    lits[k.value] = v
            out.update(self.explicit(mod, lits, [], out))
            return out
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in env:
            field = maybe_literal(self.w, mod, node.slice)
            cls = env[node.value.id]
            if isinstance(field, str) and cls is not None:
                return self.field_with_edits(cls, field, edits_of(env, node.value.id))
        return {}

    def field_with_edits(self, cls: Any, field: str, edits: dict[str, Any]) -> dict[str, Any]:
        info = self.dataclass_field_kind(cls, field)
        mine = edits.get(field, {})
        if mine:
            for key in [k for k, v in mine.items() if v is None]:
                info.pop(key, None)
            kw = {k: v[1] for k, v in mine.items() if v is not None and k != "flags"}
            if kw:
                emod = next(v[0] for v in mine.values() if v is not None)
                info.update(self.explicit(emod, kw, [], info))
            if mine.get("flags") is not None:
                extra = maybe_literal(self.w, mine["flags"][0], mine["flags"][1])
                if isinstance(extra, list):
                    info["extra_names"] = [e for e in extra if isinstance(e, str)]
        return info

    def dataclass_field_kind(self, cls: tuple[Mod, ast.ClassDef], field: str) -> dict[str, Any]:
        fields = class_fields(self.w, cls[0], cls[1])
        if field not in fields:
            return {"kind": "str", "unresolved": True}
        fmod, stmt = fields[field]
        out = vllm_kind(self.w, fmod, stmt.annotation, field)
        doc = _field_doc(cls[1], field)
        if doc and re.search(r"\bdeprecated\b", doc, re.I):
            out["deprecated"] = "help"
        return out

    def explicit(self, mod: Mod, kw: dict[str, ast.expr], names: list[str], base: dict[str, Any]) -> dict[str, Any]:
        """The call's own keywords (they win over the derived kind)."""
        out: dict[str, Any] = {}
        action = kw.get("action")
        action_name = None
        if action is not None:
            lit = maybe_literal(self.w, mod, action)
            action_name = lit if isinstance(lit, str) else _name(action)
        if "type" in kw:
            out.update(_type_kind(kw["type"]))
        if action_name is not None:
            out.update(_action_kind(action_name, _action_nargs(self.w, mod, action_name)))
            if "Deprecated" in action_name:
                out["deprecated"] = self._deprecated_action(mod, action_name, kw)
        if "nargs" in kw:
            nargs = maybe_literal(self.w, mod, kw["nargs"])
            if nargs is not Unresolved:
                out["nargs"] = nargs
                if nargs == 0:
                    out["kind"] = "switch"
                elif out.get("kind") == "switch":  # an action whose nargs=0 default the call overrides
                    out["kind"] = "str"
        self._choices(mod, kw, out, base)
        if maybe_literal(self.w, mod, kw.get("deprecated")) is True:
            out["deprecated"] = {"kwarg": True}
        help_text = maybe_literal(self.w, mod, kw.get("help"))
        if "deprecated" not in out and isinstance(help_text, str) and re.match(r"\W*deprecated", help_text, re.I):
            out["deprecated"] = "help"
        if action_name is None and "kind" not in out and "kind" not in base:
            out["kind"] = "str"
        return out

    def _deprecated_action(self, mod: Mod, action_name: str, kw: dict[str, ast.expr]) -> dict[str, Any]:
        """SGLang's ``Deprecated*Action`` (sglang/srt/arg_groups/argparse_actions.py): its ``new_flag``, and whether
        it stops the launch (``DeprecatedAction(error_message=...)``)."""
        dep: dict[str, Any] = {"action": action_name}
        nf = maybe_literal(self.w, mod, kw.get("new_flag"))
        if isinstance(nf, str):
            dep["use"] = nf
        if action_name == "DeprecatedAction" and kw.get("error_message") is not None:
            dep["refused"] = True
        return dep

    def _choices(self, mod: Mod, kw: dict[str, ast.expr], out: dict[str, Any], base: dict[str, Any]) -> None:
        if "choices" in kw:
            ch = maybe_literal(self.w, mod, kw["choices"])
            if ch is Unresolved or ch is None:
                out["choices_dynamic"] = True
                base.pop("choices", None)
            else:
                out["choices"] = [str(c) for c in ch]
            if out.get("kind", base.get("kind")) != "switch":
                out["kind"] = "choice"
        elif "kind" in out and base.get("kind") == "choice" and out["kind"] != "choice":
            base.pop("choices", None)

    # -- SGLang dataclass fields (sglang/srt/arg_groups/arg_utils.py add_cli_args_from_dataclass) -------------

    def sglang_dataclass(self, mod: Mod, cls_node: ast.expr) -> None:
        found = self.w.lookup(mod, _name(cls_node), "classes")
        if found is None:
            return
        cmod, cls = found
        sources: list[tuple[Mod, ast.ClassDef]] = [(cmod, cls)]
        for node in ast.walk(cmod.tree):  # 0.5.23: collect_input_fields(_INPUT_NAMESPACES)
            if isinstance(node, ast.Call) and _name(node.func) == "collect_input_fields" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Name) and arg.id in cmod.consts:
                    arg = cmod.consts[arg.id]
                for e in getattr(arg, "elts", []):
                    f = self.w.lookup(cmod, _name(e), "classes")
                    if f is not None:
                        sources.append(f)
        for smod, scls in sources:
            for fname, (fmod, stmt) in class_fields(self.w, smod, scls).items():
                self.sglang_field(fmod, fname, stmt.annotation)

    def _sglang_kind(self, mod: Mod, inner: ast.expr, meta: dict[str, ast.expr], names: list[str]) -> dict[str, Any]:
        """sglang/srt/arg_groups/arg_utils.py ``add_cli_args_from_dataclass``: Arg.action as given (with its
        action_kwargs); Literal -> choices; list[X] -> nargs "+"; bool -> store_true; else type_parser or the type."""
        info: dict[str, Any] = {}
        members = flatten_union(self.w, mod, inner)
        non_none = [(m, n) for m, n in members if not (isinstance(n, ast.Constant) and n.value is None)]
        tp_mod, tp = non_none[0] if len(non_none) == 1 else (mod, inner)
        head = _name(tp.value) if isinstance(tp, ast.Subscript) else _name(tp)
        if meta.get("action") is not None:
            a = maybe_literal(self.w, mod, meta["action"])
            aname = a if isinstance(a, str) else _name(meta["action"])
            info.update(_action_kind(aname, _action_nargs(self.w, mod, aname)))
            if "Deprecated" in aname:
                info["deprecated"] = {"action": aname}
            akw_node = meta.get("action_kwargs")
            if isinstance(akw_node, ast.Dict):
                akw = {
                    k.value: v
                    for k, v in zip(akw_node.keys, akw_node.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
                info.update(self.explicit(mod, akw, names, info))
        elif head == "Literal" and isinstance(tp, ast.Subscript):
            info["kind"] = "choice"
            info["choices"] = [str(v) for v in literal_values(self.w, tp_mod, tp)]
        elif head in ("list", "List") and meta.get("type_parser") is None:
            elem = _name(tp.slice) if isinstance(tp, ast.Subscript) else "str"
            info["kind"] = _scalar(elem) if elem != "bool" else "str"
            nargs = maybe_literal(self.w, mod, meta.get("nargs"))
            info["nargs"] = nargs if isinstance(nargs, str) else "+"
        elif head == "bool":
            info["kind"] = "switch"
        else:
            tpname = _name(meta["type_parser"]) if meta.get("type_parser") is not None else head
            info["kind"] = _scalar(tpname) if tpname in ("int", "float", "str") else "str"
            if meta.get("type_parser") is not None and tpname not in ("int", "float", "str"):
                info["type_fn"] = tpname
            nargs = maybe_literal(self.w, mod, meta.get("nargs"))
            if isinstance(nargs, str | int) and nargs is not Unresolved:
                info["nargs"] = nargs
        return info

    def sglang_field(self, mod: Mod, fname: str, ann: ast.expr) -> None:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return
        if not (isinstance(ann, ast.Subscript) and _name(ann.value) in ("A", "Annotated")):
            return
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        inner, meta = elts[0], None
        help_text: Any = None
        for e in elts[1:]:
            if isinstance(e, ast.Call) and _name(e.func) == "Arg":
                meta = {k.arg: k.value for k in e.keywords if k.arg}
                help_text = maybe_literal(self.w, mod, meta.get("help"))
                break
            v = maybe_literal(self.w, mod, e)
            if isinstance(v, str) or isinstance(e, ast.JoinedStr | ast.BinOp):
                meta, help_text = {}, v
                break
        if meta is None:
            return
        if maybe_literal(self.w, mod, meta.get("no_cli")) is True:
            return
        cli = maybe_literal(self.w, mod, meta.get("cli_name"))
        names = [cli if isinstance(cli, str) else "--" + fname.replace("_", "-")]
        aliases = maybe_literal(self.w, mod, meta.get("aliases"))
        if isinstance(aliases, list):
            names += [a for a in aliases if isinstance(a, str)]
        info = self._sglang_kind(mod, inner, meta, names)
        if meta.get("choices") is not None:
            ch = maybe_literal(self.w, mod, meta["choices"])
            if ch is Unresolved or ch is None:
                info.pop("choices", None)
                info["choices_dynamic"] = True
            else:
                info["choices"] = [str(c) for c in ch]
            if info.get("kind") != "switch":
                info["kind"] = "choice"
        if isinstance(help_text, str) and re.match(r"\W*deprecated", help_text, re.I) and "deprecated" not in info:
            info["deprecated"] = "help"
        self.record(names, info)

    # -- vLLM: every field of a config dataclass in a loop --------------------------------------------

    def vllm_loop(self, mod: Mod, loop: ast.For, env: dict[str, Any]) -> None:
        """``for key, value in x_kwargs.items(): group.add_argument(f"--{key.replace('_', '-')}", **value)``."""
        it = loop.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"):
            return
        src = it.func.value
        if not (isinstance(src, ast.Name) and env.get(src.id) is not None):
            return
        has_fstring_add = any(
            isinstance(n, ast.Call)
            and _name(n.func) == "add_argument"
            and any(isinstance(a, ast.JoinedStr) for a in n.args)
            for n in ast.walk(loop)
        )
        if not has_fstring_add:
            return
        cmod, cls = env[src.id]
        edits = edits_of(env, src.id)
        for fname in class_fields(self.w, cmod, cls):
            if fname.startswith("_"):
                continue
            info = self.field_with_edits((cmod, cls), fname, edits)
            extra = info.pop("extra_names", [])
            self.record([*extra, "--" + fname.replace("_", "-")], info)

    # -- walking the parser-building functions -------------------------------------------------------

    def walk(self, mod: Mod, func: ast.FunctionDef, cls: tuple[Mod, ast.ClassDef] | None = None) -> None:
        if id(func) in self.visited:
            return
        self.visited.add(id(func))
        env: dict[str, Any] = {}
        for node in ast.walk(func):  # x_kwargs = get_kwargs(SomeConfig)
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and _name(node.value.func) in ("get_kwargs", "_compute_kwargs")
                and node.value.args
            ):
                arg0 = _name(node.value.args[0])
                found = cls if arg0 in ("cls", "self") else self.w.lookup(mod, arg0, "classes")
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        env[t.id] = found
        for var in list(env):
            edits: dict[str, dict[str, Any]] = {}
            _collect_edits(mod, func, var, edits)
            for node in ast.walk(func):  # x = cls._customize_cli_kwargs(x): that method's edits too
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Attribute)
                    and node.value.args
                    and _name(node.value.args[0]) == var
                    and cls is not None
                ):
                    for m in _methods_all(self.w, env[var] or cls, node.value.func.attr):
                        params = [a.arg for a in m[1].args.args]
                        if len(params) >= 2:
                            _collect_edits(m[0], m[1], params[1], edits)
            env["\0edits:" + var] = edits
        self.walk_body(mod, func.body, env, cls)

    def walk_body(self, mod: Mod, body: list[ast.stmt], env: dict[str, Any], cls: Any) -> None:
        for stmt in body:
            if isinstance(stmt, ast.For):
                self.vllm_loop(mod, stmt, env)
            for node in _calls_in_order(stmt):
                fn = node.func
                fname = _name(fn)
                if fname == "add_argument":
                    self.from_call(mod, node, env)
                elif fname == "add_cli_args_from_dataclass" and len(node.args) >= 2:
                    self.sglang_dataclass(mod, node.args[1])
                else:
                    self.follow(mod, fn, cls)

    def follow(self, mod: Mod, fn: ast.expr, cls: Any) -> None:
        """A call to a function or method defined in the wheel: walk it too."""
        if isinstance(fn, ast.Name):
            found = self.w.lookup(mod, fn.id, "functions")
            if found is not None:
                self.walk(found[0], found[1])
        elif isinstance(fn, ast.Attribute):
            owner = fn.value
            target = None
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls") and cls is not None:
                target = cls
            elif isinstance(owner, ast.Name):
                target = self.w.lookup(mod, owner.id, "classes")
            elif isinstance(owner, ast.Call) and _name(owner.func) == "super" and cls is not None:
                for b in cls[1].bases:
                    target = self.w.lookup(cls[0], _name(b), "classes")
                    if target is not None:
                        break
            if target is not None:
                meth = _method(self.w, target, fn.attr)
                if meth is not None:
                    self.walk(meth[0], meth[1], meth[2])


def _method(w: Wheel, cls: tuple[Mod, ast.ClassDef], name: str, depth: int = 0) -> Any:
    """(module, the method's definition, ``cls``): found on ``cls`` or a base; ``cls`` stays the class it is called
    on (``cls`` / ``self`` inside a classmethod defined on a base is the subclass)."""
    for stmt in cls[1].body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return cls[0], stmt, cls
    if depth < 5:
        for b in cls[1].bases:
            base = w.lookup(cls[0], _name(b), "classes")
            if base is not None:
                m = _method(w, base, name, depth + 1)
                if m is not None:
                    return m[0], m[1], cls
    return None


def edits_of(env: dict[str, Any], var: str) -> dict[str, Any]:
    """The ``var["field"]["key"] = ...`` edits recorded for the kwargs variable ``var``."""
    out: dict[str, Any] = env.get("\0edits:" + var, {})
    return out


def _collect_edits(mod: Mod, func: ast.FunctionDef, var: str, edits: dict[str, dict[str, Any]]) -> None:
    """``var["field"]["key"] = value`` (-> (mod, value)) and ``del var["field"]["key"]`` (-> None) in ``func``."""

    def target(node: ast.expr) -> tuple[str, str] | None:
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Subscript)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == var
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.value.slice, ast.Constant)
        ):
            return str(node.value.slice.value), str(node.slice.value)
        return None

    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                ft = target(t)
                if ft:
                    edits.setdefault(ft[0], {})[ft[1]] = (mod, node.value)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                ft = target(t)
                if ft:
                    edits.setdefault(ft[0], {})[ft[1]] = None


def _methods_all(w: Wheel, cls: tuple[Mod, ast.ClassDef], name: str, depth: int = 0) -> list[Any]:
    """Every definition of method ``name`` along ``cls``'s bases (an override calls super())."""
    out = [(cls[0], s) for s in cls[1].body if isinstance(s, ast.FunctionDef) and s.name == name]
    if depth < 5:
        for b in cls[1].bases:
            base = w.lookup(cls[0], _name(b), "classes")
            if base is not None:
                out += _methods_all(w, base, name, depth + 1)
    return out


def _calls_in_order(stmt: ast.stmt) -> list[ast.Call]:
    """Every call in ``stmt`` (nested function definitions excluded), in source order."""
    out: list[ast.Call] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and node is not stmt:
            return
        if isinstance(node, ast.Call):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(stmt)
    out.sort(key=lambda c: (c.lineno, c.col_offset))
    return out


def _field_doc(cls: ast.ClassDef, field: str) -> str:
    """The docstring written under a dataclass field (vLLM's ``get_attr_docs``)."""
    body = cls.body
    for i, stmt in enumerate(body[:-1]):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == field:
            nxt = body[i + 1]
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                return nxt.value.value
    return ""


def _type_kind(tnode: ast.expr) -> dict[str, Any]:
    """An explicit ``type=``: int / float / str; vLLM's human_readable_int (``2k``); JSON parsers; other callables
    are strings to argparse (named in ``type_fn``)."""
    while isinstance(tnode, ast.Call) and _name(tnode.func) == "optional_type" and tnode.args:
        tnode = tnode.args[0]  # vllm/engine/arg_utils.py optional_type(f): f, or None for "None"
    tname = _name(tnode.func) + "()" if isinstance(tnode, ast.Call) else _name(tnode)
    if tname in ("int", "float", "str", "bool"):
        return {"kind": _scalar(tname)}
    if tname in ("human_readable_int", "human_readable_int_or_auto"):
        return {"kind": "int", "human": True}
    if tname in ("json.loads", "loads", "parse_type()", "union_dict_and_str", "json_list_type"):
        return {"kind": "json"}
    return {"kind": "str", "type_fn": tname}


def _action_nargs(w: Wheel, mod: Mod, action: str) -> Any:
    """The ``nargs`` default of a custom ``argparse.Action`` subclass's ``__init__`` (0 = a switch); None when it
    keeps argparse's (one value) or the class is not in the wheel."""
    found = w.lookup(mod, action, "classes")
    if found is None:
        return None
    for stmt in found[1].body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            a = stmt.args
            pos = a.args[len(a.args) - len(a.defaults) :]
            for arg, d in [*zip(pos, a.defaults, strict=True), *zip(a.kwonlyargs, a.kw_defaults, strict=True)]:
                if arg.arg == "nargs" and isinstance(d, ast.Constant):
                    return d.value
            text = ast.unparse(stmt)
            if re.search(r"nargs\s*=\s*0", text):
                return 0
    return None


def _action_kind(action: str, nargs: Any = None) -> dict[str, Any]:
    if action in ("store_true", "store_false", "store_const", "count") or nargs == 0:
        return {"kind": "switch"}
    if action == "BooleanOptionalAction" or action.endswith("BooleanOptionalAction"):
        return {"kind": "switch", "negatable": True}
    if action in ("append", "extend"):
        return {"append": True}
    if action == "store":
        return {}
    return {"action": action, "kind": "str"}  # a custom argparse.Action takes one value unless its nargs says not


# ------------------------------------------------------------------------------------------------
# Per engine
# ------------------------------------------------------------------------------------------------

_SGLANG_ROOT = ("sglang.srt.server_args", "ServerArgs", "add_cli_args")
_VLLM_ROOTS = ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.common.cli_args")
_PARSER_FILES = {
    "sglang": ("sglang/srt/server_args.py", "sglang/launch_server.py", "sglang/cli/serve.py"),
    "vllm": (
        "vllm/entrypoints/openai/api_server.py",
        "vllm/entrypoints/cli/serve.py",
        "vllm/entrypoints/cli/main.py",
        "vllm/utils/argparse_utils.py",
        "vllm/utils/__init__.py",
        "vllm/utils.py",
    ),
}


def parser_traits(w: Wheel, engine: str) -> dict[str, Any]:
    """allow_abbrev (argparse default True unless a parser is built with allow_abbrev=False), vLLM's
    underscore-to-dash rewriting and dotted JSON keys (FlexibleArgumentParser.parse_args)."""
    abbrev_off: list[str] = []
    underscores = dotted = dash_o = False
    for rel in _PARSER_FILES[engine]:
        text = w.source(rel)
        if text is None:
            continue
        abbrev_off += [
            f"{rel}:{text.count(chr(10), 0, m.start()) + 1}" for m in re.finditer(r"allow_abbrev\s*=\s*False", text)
        ]
        if "class FlexibleArgumentParser" in text:
            cls_text = text[text.index("class FlexibleArgumentParser") :]
            underscores = bool(re.search(r"replace\(\s*['\"]_['\"]\s*,\s*['\"]-['\"]\s*\)", cls_text))
            dotted = "nested" in cls_text and ("'.'" in cls_text or '"."' in cls_text)
            dash_o = bool(re.search(r"startswith\(\s*['\"]-O['\"]\s*\)", cls_text))
    out: dict[str, Any] = {"allow_abbrev": not abbrev_off}
    if abbrev_off:
        out["allow_abbrev_off_at"] = abbrev_off
    if engine == "vllm":
        out["underscores_as_dashes"] = underscores
        out["dotted_json_keys"] = dotted
        out["rewrites_dash_o"] = dash_o  # -O3 -> the optimization level / compilation config
    return out


def extract(path: Path) -> dict[str, Any]:
    m = _WHEEL.match(path.name)
    if m is None:
        raise SystemExit(f"{path.name}: not an sglang / vllm wheel")
    engine, version = m.group("name"), m.group("version")
    w = Wheel(path)
    w.rules = VllmRules(w)
    col = Collector(w, engine)
    if engine == "sglang":
        mod = w.mod(_SGLANG_ROOT[0])
        if mod is None or _SGLANG_ROOT[1] not in mod.classes:
            raise SystemExit(f"{path.name}: no {_SGLANG_ROOT[0]}.{_SGLANG_ROOT[1]}")
        cls = (mod, mod.classes[_SGLANG_ROOT[1]])
        meth = _method(w, cls, _SGLANG_ROOT[2])
        col.walk(meth[0], meth[1], meth[2])
    else:
        roots = list(_VLLM_ROOTS)
        serve = w.mod("vllm.entrypoints.cli.serve")  # `vllm serve` imports make_arg_parser from where it lives
        if serve is not None and "make_arg_parser" in serve.imports:
            roots.insert(0, serve.imports["make_arg_parser"][0])
        for root in roots:
            mod = w.mod(root)
            if mod is not None and "make_arg_parser" in mod.functions:
                col.walk(mod, mod.functions["make_arg_parser"])
                break
        else:
            raise SystemExit(f"{path.name}: no make_arg_parser")
    flags: dict[str, Any] = {}
    for key in sorted(col.flags):
        info = dict(col.flags[key])
        if info.get("kind") == "choice" and "choices" not in info:
            info["kind"] = "str"
        if info.get("negatable"):
            info["names"] = info["names"] + ["--no-" + n[2:] for n in info["names"] if n.startswith("--")]
        flags[key] = {k: info[k] for k in sorted(info)}
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "engine": engine,
        "release": version,
        "wheel": path.name,
        "sha256": digest,
        "read": sorted(set(w.read)),
        **parser_traits(w, engine),
        "flags": flags,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for path in args.wheels:
        table = extract(path)
        dest = args.out / table["engine"] / f"{table['release']}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"{dest.relative_to(args.out)}: {len(table['flags'])} flags from {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
