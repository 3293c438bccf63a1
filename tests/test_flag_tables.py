"""The engine flag tables (kvplan/inputs/flagtables): what each wheel defines, argparse's lookup rules, table choice.

The spot checks below were read by hand in the unzipped wheels (``pip download --no-deps sglang==X`` / ``vllm==X``,
then ``unzip``); each cites the file and line of the definition in that wheel.  The tables themselves are written by
scripts/gen_flag_tables.py (docs/flag-tables.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.inputs.flagtables import (
    AMBIGUOUS,
    DEPRECATED,
    MATCH,
    UNKNOWN,
    load,
    releases,
    table_for,
)
from kvplan.version import parse_version

TABLES = Path(__file__).resolve().parent.parent / "kvplan" / "inputs" / "flagtables"


def _flag(engine: str, release: str, option: str):
    t = load(engine, release)
    assert option in t.options, f"{engine} {release} has no {option}"
    return t.options[option]


# ------------------------------------------------------------------------------------------------
# Each table lists the flags its wheel defines (hand-checked definitions)
# ------------------------------------------------------------------------------------------------


def test_sglang_0_3_0_spot_checks() -> None:
    # sglang-0.3.0 sglang/srt/server_args.py:301-304: "--tensor-parallel-size", "--tp-size", type=int
    tp = _flag("sglang", "0.3.0", "--tp-size")
    assert tp.names == ("--tensor-parallel-size", "--tp-size") and tp.kind == "int"
    # :201-204: "--kv-cache-dtype", type=str, choices=["auto", "fp8_e5m2"]
    assert _flag("sglang", "0.3.0", "--kv-cache-dtype").choices == ("auto", "fp8_e5m2")
    # :406: "--disable-cuda-graph", action="store_true"; no --cuda-graph-max-bs in this release (grep finds none)
    assert _flag("sglang", "0.3.0", "--disable-cuda-graph").kind == "switch"
    assert "--cuda-graph-max-bs" not in load("sglang", "0.3.0").options


def test_sglang_0_4_6_post1_spot_checks() -> None:
    # sglang-0.4.6.post1 sglang/srt/server_args.py:489-492: "--kv-cache-dtype", choices=["auto", "fp8_e5m2", "fp8_e4m3"]
    assert _flag("sglang", "0.4.6.post1", "--kv-cache-dtype").choices == ("auto", "fp8_e5m2", "fp8_e4m3")
    # :1029: "--cuda-graph-max-bs", type=int;  :571: "--mem-fraction-static", type=float
    assert _flag("sglang", "0.4.6.post1", "--cuda-graph-max-bs").kind == "int"
    assert _flag("sglang", "0.4.6.post1", "--mem-fraction-static").kind == "float"


def test_sglang_0_5_4_spot_checks() -> None:
    # sglang-0.5.4 sglang/srt/server_args.py:2858: "--cuda-graph-max-bs", type=int (no -decode / -prefill variants)
    t = load("sglang", "0.5.4")
    assert t.options["--cuda-graph-max-bs"].kind == "int"
    assert not [o for o in t.options if o.startswith("--cuda-graph-max-bs-")]
    # :2870: "--disable-cuda-graph", action="store_true"; :2945: "--enable-dp-attention", action="store_true":
    # ordinary switches, not deprecated in this release
    for opt in ("--disable-cuda-graph", "--enable-dp-attention"):
        assert t.options[opt].kind == "switch" and t.options[opt].deprecated is None
    # :1786 "--kv-cache-dtype" choices; :1800 "--mem-fraction-static" float; :1927 "--tensor-parallel-size", "--tp-size"
    assert t.options["--kv-cache-dtype"].choices == ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16")
    assert t.options["--tp-size"].name == "--tensor-parallel-size"


def test_sglang_0_5_23_spot_checks() -> None:
    t = load("sglang", "0.5.23")
    # sglang-0.5.23 sglang/srt/arg_groups/fields/exec_.py:629 / :632: cuda_graph_max_bs_decode / _prefill:
    # A[Optional[int], "..."] -> --cuda-graph-max-bs-decode / -prefill (int), and no plain --cuda-graph-max-bs
    assert t.options["--cuda-graph-max-bs-decode"].kind == "int"
    assert t.options["--cuda-graph-max-bs-prefill"].kind == "int"
    assert "--cuda-graph-max-bs" not in t.options
    # exec_.py:670 disable_cuda_graph: A[bool, Arg(no_cli=True)]; its only spelling is server_args.py:411
    # "--disable-cuda-graph", action=DeprecatedStoreTrueAction, new_flag="--cuda-graph-backend-{decode,prefill}=disabled"
    dcg = t.options["--disable-cuda-graph"]
    assert dcg.kind == "switch" and dcg.deprecated is not None
    assert dcg.deprecated["use"] == "--cuda-graph-backend-{decode,prefill}=disabled"
    # server_args.py:419 "--enable-dp-attention", action=DeprecatedStoreTrueAction, new_flag="--attn-dp-size <dp-size>"
    assert t.options["--enable-dp-attention"].deprecated == {
        "action": "DeprecatedStoreTrueAction",
        "use": "--attn-dp-size <dp-size>",
    }
    # no --tp alias: --tp is a unique prefix of --tp-size only
    assert "--tp" not in t.options


def test_vllm_0_5_0_spot_checks() -> None:
    t = load("vllm", "0.5.0")
    # vllm-0.5.0 vllm/engine/arg_utils.py:253-255: '--kv-cache-dtype', type=str, choices=['auto', 'fp8', 'fp8_e5m2',
    # 'fp8_e4m3']
    assert t.options["--kv-cache-dtype"].choices == ("auto", "fp8", "fp8_e5m2", "fp8_e4m3")
    # :304-306: '--tensor-parallel-size', '-tp', type=int
    assert t.options["-tp"].name == "--tensor-parallel-size" and t.options["-tp"].kind == "int"
    # vllm/entrypoints/openai/cli_args.py:32: parser.add_argument("--port", type=int, default=8000, ...)
    assert t.options["--port"].kind == "int"
    # no FlexibleArgumentParser yet (vllm/utils.py has none): underscores are not dashes, no BooleanOptionalAction
    assert not t.underscores_as_dashes
    assert "--no-enable-prefix-caching" not in t.options


def test_vllm_0_10_1_spot_checks() -> None:
    t = load("vllm", "0.10.1")
    # vllm-0.10.1 vllm/engine/arg_utils.py:692 "--kv-cache-dtype", **cache_kwargs["cache_dtype"]; vllm/config/cache.py:25
    # CacheDType = Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"] -> choices (literal_to_kwargs)
    assert t.options["--kv-cache-dtype"].choices == ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
    # :696 "--enable-prefix-caching", **cache_kwargs[...]: a bool field -> BooleanOptionalAction (--no- form too)
    assert t.options["--no-enable-prefix-caching"].name == "--enable-prefix-caching"
    # :1752 '--disable-log-requests', action=argparse.BooleanOptionalAction, ..., deprecated=True
    assert t.options["--disable-log-requests"].deprecated == {"kwarg": True}
    # vllm/utils/__init__.py FlexibleArgumentParser.parse_args: underscores -> dashes, dotted JSON keys
    assert t.underscores_as_dashes and t.dotted_json_keys


def test_vllm_0_34_0_spot_checks() -> None:
    t = load("vllm", "0.34.0")
    # vllm-0.34.0 vllm/engine/arg_utils.py:1416 "--kv-cache-dtype", **cache_kwargs["cache_dtype"]; vllm/config/cache.py:245
    # cache_dtype: CacheDType | str: literal_to_kwargs gives a metavar, not choices, when str is in the union
    assert t.options["--kv-cache-dtype"].kind == "str" and t.options["--kv-cache-dtype"].choices is None
    # :1224 "--tensor-parallel-size", "-tp", **parallel_kwargs[...]; vllm/config/parallel.py:150 ... int
    assert t.options["-tp"].kind == "int"


def test_every_table_records_its_wheel() -> None:
    for engine in ("sglang", "vllm"):
        for release in releases(engine):
            raw = json.loads((TABLES / engine / f"{release}.json").read_text(encoding="utf-8"))
            assert raw["wheel"].startswith(f"{engine}-{release}-"), raw["wheel"]
            assert re.fullmatch(r"[0-9a-f]{64}", raw["sha256"])
            assert raw["release"] == release and raw["engine"] == engine
            assert len(raw["flags"]) >= 50  # the smallest parser read (SGLang 0.3.0) has 52 flags


def test_tables_are_compact() -> None:
    total = sum(p.stat().st_size for p in TABLES.glob("*/*.json"))
    assert total < 2 * 1024 * 1024, total


# ------------------------------------------------------------------------------------------------
# argparse's rules
# ------------------------------------------------------------------------------------------------


def test_cuda_graph_max_bs_by_release() -> None:
    """The issue's command: an ordinary flag under 0.5.4, ambiguous under 0.5.23 (which refuses it)."""
    r = table_for("sglang", "0.5.4").resolve("--cuda-graph-max-bs")
    assert r.status == MATCH and r.option == "--cuda-graph-max-bs"
    r = table_for("sglang", "0.5.23").resolve("--cuda-graph-max-bs")
    assert r.status == AMBIGUOUS
    assert r.candidates == ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill")
    assert "ambiguous option: --cuda-graph-max-bs could match" in r.message()


@pytest.mark.parametrize("release", ["0.4.6.post1", "0.5.4", "0.5.23"])
def test_misspelt_flags_unknown_with_suggestion(release: str) -> None:
    t = table_for("sglang", release)
    r = t.resolve("--mem_fraction_static")  # underscores are not dashes to argparse
    assert r.status == UNKNOWN and not r.accepted
    assert r.message() == "unrecognised argument --mem_fraction_static (did you mean --mem-fraction-static?)"
    r = t.resolve("--context-lenght")
    assert r.status == UNKNOWN and r.suggestion == "--context-length"
    assert r.message() == "unrecognised argument --context-lenght (did you mean --context-length?)"


def test_equals_form_and_abbreviation() -> None:
    t = table_for("sglang", "0.5.23")
    r = t.resolve("--tp=2")
    assert (r.status, r.option, r.value) == (MATCH, "--tp-size", "2")
    r = t.resolve("--mem-fraction-static=0.8")
    assert (r.option, r.value) == ("--mem-fraction-static", "0.8")
    # a prefix of several long options is ambiguous, not the first match
    assert t.resolve("--cuda-graph").status == AMBIGUOUS


def test_deprecated_is_accepted_with_a_note() -> None:
    r = table_for("sglang", "0.5.23").resolve("--disable-cuda-graph")
    assert r.status == DEPRECATED and r.accepted
    assert r.message() == "--disable-cuda-graph is deprecated: use --cuda-graph-backend-{decode,prefill}=disabled"
    assert table_for("sglang", "0.5.4").resolve("--disable-cuda-graph").status == MATCH


def test_vllm_underscores_are_dashes_where_the_parser_says() -> None:
    r = table_for("vllm", "0.10.1").resolve("--max_model_len=8k")
    assert (r.status, r.option, r.value) == (MATCH, "--max-model-len", "8k")
    assert table_for("vllm", "0.5.0").resolve("--max_model_len").status == UNKNOWN
    r = table_for("vllm", "0.34.0").resolve("--speculative-config.num_speculative_tokens")
    assert r.option == "--speculative-config"


def test_table_for_picks_the_window() -> None:
    assert table_for("sglang", "0.4.6.post1").release == "0.4.6.post1"
    assert table_for("sglang", "0.4.8").release == "0.4.7.post1"
    assert table_for("sglang", "v0.5.23").release == "0.5.23"
    assert table_for("sglang", "0.5.0rc2").release == "0.4.9.post6"  # an rc sorts below its release
    assert table_for("vllm", "0.10.1.1").release == "0.10.1"
    assert table_for("vllm", "0.10.2").release == "0.10.1"
    assert table_for("vllm", "0.33.1").release == "0.33.0"  # 0.33 opens a window (batch-default tiers): its own table
    assert table_for("vllm").release == "0.34.0"
    assert table_for("sglang").release == "0.5.23"
    with pytest.raises(InputError):
        table_for("sglang", "0.2.9")
    with pytest.raises(InputError):
        table_for("vllm", "nightly")


def test_release_key_order() -> None:
    order = ["0.5.0rc2", "0.5.0", "0.5.0.post1", "0.5.1", "0.10.1", "0.10.1.1"]
    keys = [parse_version(v) for v in order]
    assert all(k is not None for k in keys)
    assert keys == sorted(keys)  # type: ignore[type-var]


def test_every_modelled_release_has_a_table() -> None:
    """Every SGLang release kvplan dates and every window first (both engines) has a table at or below it, and each
    window's first release has its own table."""
    from kvplan import supported
    from kvplan.engines.sglang.history import RELEASE_DATES, build_windows
    from kvplan.engines.vllm import releases as vl

    sg = releases("sglang")
    for release in RELEASE_DATES:
        assert table_for("sglang", release).release in sg
    for w in build_windows():
        assert table_for("sglang", w.first).release == w.first
    firsts = {".".join(map(str, r.first)) for r in vars(vl).values() if isinstance(r, vl.Release)}
    for first in firsts:
        assert table_for("vllm", first).release == first
    assert table_for("sglang", supported.SGLANG[0]).release == supported.SGLANG[0]
    assert table_for("vllm", supported.VLLM[0]).release == supported.VLLM[0]
    assert table_for("vllm", supported.VLLM[1]).release == supported.VLLM[1]


def test_not_on_the_fit_path() -> None:
    """The loader is stdlib only and nothing imports it unless a launch command is read."""
    import ast

    src = (TABLES / "__init__.py").read_text(encoding="utf-8")
    mods = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert mods <= {
        "__future__",
        "json",
        "re",
        "dataclasses",
        "functools",
        "pathlib",
        "typing",
        "kvplan.errors",
        "kvplan.version",
        "difflib",
    }


# ------------------------------------------------------------------------------------------------
# The generator's rules, on small synthetic wheels (the argparse shapes each engine uses)
# ------------------------------------------------------------------------------------------------

_SG_SERVER_ARGS = """
import argparse
import dataclasses
from typing import Annotated as A, List, Literal, Optional

from sglang.srt.arg_groups.argparse_actions import DeprecatedStoreTrueAction

KV_DTYPES = ["auto", "fp8_e4m3"]


class Arg:
    pass


@dataclasses.dataclass
class ServerArgs:
    tp_size: A[int, Arg(help="TP.", aliases=["--tensor-parallel-size"])] = 1
    cuda_graph_max_bs_decode: A[Optional[int], "Decode graphs."] = None
    attention_backend: A[Optional[Literal["fa3", "triton"]], "Backend."] = None
    kv_cache_dtype: A[str, Arg(help="KV.", choices=KV_DTYPES)] = "auto"
    enable_x: A[bool, "Switch."] = False
    lora_paths: A[Optional[List[str]], "Paths."] = None
    hidden: A[bool, Arg(no_cli=True)] = False
    plain: int = 3

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--mem-fraction-static", type=float, help="Fraction.")
        parser.add_argument(
            "--disable-cuda-graph", action=DeprecatedStoreTrueAction, new_flag="--cuda-graph-backend=disabled"
        )


def prepare_server_args(argv):
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser.parse_args(argv)
"""

_SG_ACTIONS = """
import argparse


class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)
"""

_VL_CLI_ARGS = '''
from dataclasses import dataclass

from vllm.engine.arg_utils import AsyncEngineArgs, get_kwargs


@dataclass
class FrontendArgs:
    port: int = 8000
    """Port."""
    uvicorn_log_level: Literal["info", "debug"] = "info"
    """Log level."""

    @staticmethod
    def add_cli_args(parser):
        frontend_kwargs = get_kwargs(FrontendArgs)
        group = parser.add_argument_group(title="Frontend")
        for key, value in frontend_kwargs.items():
            group.add_argument(f"--{key.replace('_', '-')}", **value)
        return parser


def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser = FrontendArgs.add_cli_args(parser)
    parser = AsyncEngineArgs.add_cli_args(parser)
    return parser
'''

_VL_ARG_UTILS = """
import argparse
from dataclasses import dataclass
from typing import Literal, Optional

from vllm.config.cache import CacheConfig
from vllm.config.parallel import ParallelConfig


def _compute_kwargs(cls):
    for field in fields(cls):
        if name in {"max_num_batched_tokens"}:
            pass


def literal_to_kwargs(type_hints):
    kwarg = "metavar" if contains_type(type_hints, str) else "choices"


class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        cache_kwargs = get_kwargs(CacheConfig)
        parallel_kwargs = get_kwargs(ParallelConfig)
        group = parser.add_argument_group(title="Cache")
        group.add_argument("--kv-cache-dtype", **cache_kwargs["cache_dtype"])
        group.add_argument("--block-size", **cache_kwargs["block_size"])
        group.add_argument("--enable-prefix-caching", **{**cache_kwargs["enable_prefix_caching"], "default": None})
        group.add_argument("--max-num-batched-tokens", **cache_kwargs["max_num_batched_tokens"])
        group.add_argument("--tensor-parallel-size", "-tp", **parallel_kwargs["tensor_parallel_size"])
        parser.add_argument("--disable-log-stats", action="store_true")
        parser.add_argument("--old-flag", action=argparse.BooleanOptionalAction, deprecated=True)
        return parser


class AsyncEngineArgs(EngineArgs):
    @staticmethod
    def add_cli_args(parser, async_args_only=False):
        if not async_args_only:
            parser = EngineArgs.add_cli_args(parser)
        return parser
"""

_VL_CACHE = """
from dataclasses import dataclass
from typing import Literal

CacheDType = Literal["auto", "fp8"]


@dataclass
class CacheConfig:
    cache_dtype: CacheDType = "auto"
    block_size: Literal[16, 32] | None = None
    enable_prefix_caching: bool = True
    max_num_batched_tokens: int | None = None
"""

_VL_PARALLEL = """
from dataclasses import dataclass


@dataclass
class ParallelConfig:
    tensor_parallel_size: int = 1
"""

_VL_ARGPARSE = """
from argparse import ArgumentParser


class FlexibleArgumentParser(ArgumentParser):
    def parse_args(self, args=None, namespace=None):
        def repl(match):
            return match.group(0).replace("_", "-")

        for arg in args:
            if arg.startswith("-O"):
                pass

        def create_nested_dict(keys, value):
            return value.split(".")
"""


def _wheel(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    import zipfile

    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
    return path


def _gen():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gen_flag_tables", TABLES.parent.parent.parent / "scripts" / "gen_flag_tables.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_sglang_dataclass_and_literal_calls(tmp_path: Path) -> None:
    whl = _wheel(
        tmp_path,
        "sglang-9.9.9-py3-none-any.whl",
        {
            "sglang/srt/server_args.py": _SG_SERVER_ARGS,
            "sglang/srt/arg_groups/argparse_actions.py": _SG_ACTIONS,
        },
    )
    t = _gen().extract(whl)
    f = t["flags"]
    assert t["engine"] == "sglang" and t["release"] == "9.9.9" and t["allow_abbrev"] is True
    assert f["--tp-size"] == {"kind": "int", "names": ["--tp-size", "--tensor-parallel-size"]}
    assert f["--cuda-graph-max-bs-decode"]["kind"] == "int"
    assert f["--attention-backend"] == {
        "choices": ["fa3", "triton"],
        "kind": "choice",
        "names": ["--attention-backend"],
    }
    assert f["--kv-cache-dtype"]["choices"] == ["auto", "fp8_e4m3"]  # Arg(choices=NAME) resolved to its literal
    assert f["--enable-x"]["kind"] == "switch"
    assert f["--lora-paths"]["nargs"] == "+"
    assert "--hidden" not in f and "--plain" not in f  # no_cli, and a field without metadata
    assert f["--mem-fraction-static"]["kind"] == "float"
    assert f["--disable-cuda-graph"]["kind"] == "switch"  # DeprecatedStoreTrueAction's nargs=0 default
    assert f["--disable-cuda-graph"]["deprecated"] == {
        "action": "DeprecatedStoreTrueAction",
        "use": "--cuda-graph-backend=disabled",
    }


def test_generator_sglang_allow_abbrev_off(tmp_path: Path) -> None:
    src = _SG_SERVER_ARGS.replace("argparse.ArgumentParser()", "argparse.ArgumentParser(allow_abbrev=False)")
    whl = _wheel(tmp_path, "sglang-9.9.8-py3-none-any.whl", {"sglang/srt/server_args.py": src})
    t = _gen().extract(whl)
    assert t["allow_abbrev"] is False and t["allow_abbrev_off_at"][0].startswith("sglang/srt/server_args.py:")


def test_generator_vllm_config_fields(tmp_path: Path) -> None:
    whl = _wheel(
        tmp_path,
        "vllm-9.9.9-cp38-abi3-manylinux1_x86_64.whl",
        {
            "vllm/entrypoints/openai/cli_args.py": _VL_CLI_ARGS,
            "vllm/engine/arg_utils.py": _VL_ARG_UTILS,
            "vllm/config/cache.py": _VL_CACHE,
            "vllm/config/parallel.py": _VL_PARALLEL,
            "vllm/utils/argparse_utils.py": _VL_ARGPARSE,
        },
    )
    t = _gen().extract(whl)
    f = t["flags"]
    assert (t["underscores_as_dashes"], t["dotted_json_keys"], t["rewrites_dash_o"]) == (True, True, True)
    assert f["--port"]["kind"] == "int"  # the frontend dataclass loop
    assert f["--uvicorn-log-level"]["choices"] == ["info", "debug"]
    assert f["--kv-cache-dtype"]["choices"] == ["auto", "fp8"]  # a Literal alias
    assert f["--block-size"]["choices"] == ["16", "32", "None"]  # Optional Literal: "None" accepted too
    assert f["--enable-prefix-caching"]["names"] == ["--enable-prefix-caching", "--no-enable-prefix-caching"]
    assert f["--max-num-batched-tokens"] == {"human": True, "kind": "int", "names": ["--max-num-batched-tokens"]}
    assert f["--tensor-parallel-size"]["names"] == ["--tensor-parallel-size", "-tp"]
    assert f["--disable-log-stats"]["kind"] == "switch" and "negatable" not in f["--disable-log-stats"]
    assert f["--old-flag"]["deprecated"] == {"kwarg": True}
    assert "model_tag" not in f  # positionals are no flags
