"""Fuzzing the CLI with hostile inputs (issue 26 item 6): every generated input goes through a real ``kvplan`` command
and the answer is checked, not only the parser.

Generators, one per parser (each returns the command's arguments, the files it reads and its environment):

* ``config`` -- a real config.json mutated (tests/test_fuzz.py ``mutate_config``), with a hostile name in
  ``_name_or_path`` / ``architectures[0]`` (:data:`HOSTILE_STRINGS`: OSC 52, OSC 8, a screen clear, CR, C1, bidi
  overrides, spreadsheet formulas), type-confused geometry, ``kv_lora_rank`` 0, GPTQ ``bits``, or a large element
  count (around and over ``kvplan.inputs.read.MAX_CONFIG_ELEMENTS``); run through ``show`` / ``fit`` / ``sweep`` in
  each output format;
* ``toml`` -- a shipped model preset as a user preset with a hostile id / name / aliases, mutated values or a large
  element count; ``models``, ``show``, ``fit``;
* ``size`` / ``count`` -- hostile SIZE and token-count text in ``--gpu-memory`` / ``--free-memory`` /
  ``--context-length`` and sweep ranges (subnormal steps, 300-digit counts);
* ``log`` -- real startup logs with type-confused literals where a name or a count is expected
  (``kv_cache_dtype=5``, ``attention_backend=['fa3']``, ``tp_size=4.5``, ``'kv_cache_dtype': ['fp8']``) and hostile
  strings; ``calibrate`` and ``fit --from-log``;
* ``launch`` -- launch commands without a model, with a hostile model name, many unknown flags, ambiguous prefixes,
  long words, unclosed quotes; ``fit --from-launch`` (``--check`` too).

Checked on every answer (:func:`check`): the exit code is 0, 2 or 3 (never 1: no internal error, no traceback), an
error is one line on stderr, and stdout holds no raw control character (ESC, BEL, C1, CR; in tables and CSV also no
bidi override; JSON escapes what it must itself) and no CSV cell that starts a formula.

The CI budget: each test draws ``examples(N)`` seeds (tests/conftest.py profile, derandomized), one input per seed;
the work per input is bounded by the generators' sizes (the largest is a 1 MiB preset or log), not by a clock.
scripts/fuzz_run.py runs the same generators for a fixed number of inputs and prints the counts (docs/hardening.md).
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.test_fuzz import LAUNCH, LAUNCH_BITS, LOG_BITS, mutate_config, mutate_text, mutate_toml

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"
LOGS = ROOT / "tests" / "validation" / "logs"
MODELS = ROOT / "configs" / "models"

OSC52 = "\x1b]52;c;ZXZpbA==\x07"
HOSTILE_STRINGS = [
    OSC52,
    "\x1b]0;pwned\x07",
    "\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[H",
    "a\rb",
    "\x9b31m",
    "\x9d0;x\x9c",
    "\u202eevil",
    "\u2066x\u2069",
    '=HYPERLINK("http://x")',
    "+1+1",
    "@SUM(A1)",
    "-2+3",
    "\tx",
    "\x00",
    "\x7f",
    "'; DROP TABLE",
    "\ufeff",
    "%s%n",
    "${jndi:x}",
]
#: on stdout raw: never (tables, CSV, JUnit); JSON output may hold characters json.dumps leaves as they are (DEL, C1,
#: bidi) only inside strings, so for JSON only what json must escape is checked, plus ESC / BEL
RAW_TEXT = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
RAW_JSON = re.compile("[\x00-\x09\x0b-\x1f\x9b\x9d]")

REAL_CONFIGS = sorted(HF.glob("*/config.json"))
REAL_LOGS = sorted(LOGS.glob("*.log"))
SMALL_PRESETS = sorted(MODELS.glob("*.toml"), key=lambda p: p.stat().st_size)[:12]
FORMATS = ["table", "json", "csv", "markdown"]
GPUS = ["h100-sxm", "h200", "l4", "mi300x"]


@dataclass
class Case:
    """One generated CLI run: the arguments, files to write first (relative path -> bytes) and the environment."""

    parser: str
    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    fmt: str = "table"


def _hostile(rng: random.Random) -> str:
    parts = [rng.choice(HOSTILE_STRINGS) for _ in range(rng.randint(1, 3))]
    return rng.choice(["", "org/", "Qwen/"]) + "".join(parts) + rng.choice(["", "model", "x" * rng.randint(1, 50)])


# ------------------------------------------------------------------------------------------------ config.json

_CONFUSED = [5, -1, 0, 2.5, True, None, "x", "1", [], [1], {}, {"a": 1}, 1e300, 10**30, [None], ["fa3"]]


def gen_config(rng: random.Random) -> Case:
    cfg = json.loads(rng.choice(REAL_CONFIGS).read_text())
    op = rng.randrange(6)
    if op == 0:
        cfg["_name_or_path"] = _hostile(rng)
        if rng.random() < 0.5:
            cfg["architectures"] = [_hostile(rng)]
    elif op == 1:  # type confusion of a geometry field
        key = rng.choice(
            [
                "num_hidden_layers",
                "num_attention_heads",
                "num_key_value_heads",
                "head_dim",
                "hidden_size",
                "kv_lora_rank",
                "max_position_embeddings",
                "torch_dtype",
                "layer_types",
                "rope_scaling",
                "sliding_window",
                "num_experts",
                "quantization_config",
            ]
        )
        cfg[key] = rng.choice(_CONFUSED)
    elif op == 2:
        cfg["kv_lora_rank"] = rng.choice([0, -1, 1, 512])
        cfg["quantization_config"] = {"quant_method": "gptq", "bits": rng.choice([0, -4, 3, 64, 4, 8, 2.5, "4"])}
    elif op == 3:  # a large element count, around the budget of 100,000 values
        n = rng.choice([1_000, 50_000, 99_000, 100_001, 300_000])
        cfg[rng.choice(["pad", "layer_types", "extra"])] = [0] * n
    else:
        cfg = mutate_config(rng, cfg)
    fmt = rng.choice(FORMATS)
    cmd = rng.randrange(3)
    if cmd == 0:
        args = ["show", "{tmp}/m", "--format", fmt if fmt != "csv" else "json"]
    elif cmd == 1:
        args = ["fit", "-m", "{tmp}/m", "-g", rng.choice(GPUS), "--format", fmt]
    else:
        args = ["sweep", "-m", "{tmp}/m", "-g", rng.choice(GPUS), "--tp", "1,2", "--format", "csv"]
        fmt = "csv"
    return Case("config", args, {"m/config.json": json.dumps(cfg).encode()}, fmt=args[-1])


# ------------------------------------------------------------------------------------------------ TOML presets


def gen_toml(rng: random.Random) -> Case:
    text = rng.choice(SMALL_PRESETS).read_text()
    pid = "u/" + "".join(rng.choice("abcxyz") for _ in range(6))
    m = re.search(r'^id = "([^"]*)"', text, re.M)
    if m:
        text = text.replace(m.group(0), f"id = {json.dumps(pid)}", 1)
    op = rng.randrange(4)
    if op == 0:
        name = _hostile(rng)
        text = re.sub(r'^name = "[^"]*"', lambda _m: f"name = {json.dumps(name)}", text, count=1, flags=re.M)
        text = re.sub(
            r"^aliases = \[.*\]", lambda _m: f"aliases = [{json.dumps(_hostile(rng))}]", text, count=1, flags=re.M
        )
    elif op == 1:
        text = mutate_toml(rng, text)
    elif op == 2:
        n = rng.choice([100, 19_000, 21_000, 200_000])
        text = "pad = [" + "0," * n + "0]\n" + text
    else:
        text = text.replace(f"id = {json.dumps(pid)}", f"id = {json.dumps(_hostile(rng))}", 1)
    fmt = rng.choice(["table", "json", "csv"])
    cmd = rng.randrange(3)
    if cmd == 0:
        args = ["models", "--format", fmt]
    elif cmd == 1:
        args = ["show", pid, "--format", "json" if fmt == "csv" else fmt]
    else:
        args = ["fit", "-m", pid, "-g", rng.choice(GPUS), "--format", "json" if fmt == "csv" else fmt]
    env = {"KVPLAN_PRESETS": "{tmp}/presets", "KVPLAN_NO_CACHE": "1"}
    return Case("toml", args, {"presets/models/u--fuzz.toml": text.encode("utf-8", "surrogatepass")}, env, args[-1])


# ------------------------------------------------------------------------------------------------ SIZE and counts

_NUMS = ["0", "1", "-1", "1e-300", "5e-324", "1e308", "1e400", "nan", "inf", "9" * 300, "0.5", "80", "2²", "１",
         "0x10", "1_000", "", " ", "80 GiB", "1e19"]  # fmt: skip
_UNITS = ["", "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "GB", "gb", "k", "m", "x", "GiBB", "\x1b[31m"]


_GOOD_SIZES = ["80GiB", "75.5 GiB", "40GB", "24 GiB", "1e3MiB", "141GiB", "16GiB", "0.5TiB", "79GiB", "8GiB"]


def gen_size(rng: random.Random) -> Case:
    text = rng.choice(_NUMS) + rng.choice(_UNITS)
    if rng.random() < 0.2:
        text = _hostile(rng)
    elif rng.random() < 0.5:  # half reach the plan and its output
        text = rng.choice(_GOOD_SIZES)
    flag = rng.choice(["--gpu-memory", "--free-memory", "--weight-memory"])
    fmt = rng.choice(["table", "json"])
    return Case("size", ["fit", "-m", "Qwen/Qwen3-8B", "-g", "h100-sxm", flag, text, "--format", fmt], fmt=fmt)


def _range(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return rng.choice(["0.7:0.95:0.05", "4k:128k:x2", "1,2,4", "0.5:0.9:0.1", "1:8", "8k:32k:8k", "1:4"])
    a, b = rng.choice(["0.1", "0.5", "0.7", "1", "4k", "1e-320", "0"]), rng.choice(["0.9", "0.95", "1m", "9" * 40])
    step = rng.choice(["0.05", "5e-324", "1e-320", "1e-300", "1e-13", "1e-7", "x2", "x1.0000001", "x1e400", "0", "-1"])
    return f"{a}:{b}:{step}"


def gen_count(rng: random.Random) -> Case:
    base = ["-m", "Qwen/Qwen3-8B", "-g", "h100-sxm"]
    if rng.random() < 0.5:
        text = rng.choice(_NUMS) + rng.choice(["", "k", "m", "K", "M", "g", "kk"])
        if rng.random() < 0.5:  # half reach the plan and its output
            text = rng.choice(["8k", "32K", "131072", "1m", "40960", "2", "4096", "128k", "1M", "100000"])
        fmt = rng.choice(["table", "json"])
        return Case("count", ["fit", *base, "--context-length", text, "--format", fmt], fmt=fmt)
    flag = rng.choice(["--mem-fraction-static", "--context-length", "--max-running-requests", "--tp"])
    return Case("count", ["sweep", *base, flag, _range(rng), "--format", "csv"], fmt="csv")


# ------------------------------------------------------------------------------------------------ logs

_LOG_KEYS = ["kv_cache_dtype", "attention_backend", "speculative_algorithm", "tp_size", "pp_size", "dp_size",
             "context_length", "mem_fraction_static", "page_size", "max_running_requests", "model_path"]  # fmt: skip
_LOG_VALUES = ["5", "['fa3']", "True", "None", "4.5", "1e400", "{'a': 1}", "'x'", "-1", "(1, 2)", "9" * 50, "''",
               repr(OSC52), "b'x'", "[['fp8']]"]  # fmt: skip


def gen_log(rng: random.Random) -> Case:
    text = rng.choice(REAL_LOGS).read_text(encoding="utf-8")
    op = rng.randrange(4)
    if op <= 1:  # type-confused literals in ServerArgs(...) or vLLM's non-default args
        for _ in range(rng.randint(1, 3)):
            key, value = rng.choice(_LOG_KEYS), rng.choice(_LOG_VALUES)
            text = re.sub(rf"\b{key}=[^,)]*", lambda _m, k=key, v=value: f"{k}={v}", text, count=1)
            text = re.sub(rf"'{key}': [^,}}]*", lambda _m, k=key, v=value: f"'{k}': {v}", text, count=1)
    elif op == 2:
        text = text.replace("model_path='", "model_path='" + _hostile(rng).replace("'", ""), 1)
    else:
        text = mutate_text(rng, text, LOG_BITS)
    if rng.random() < 0.5:
        args = ["calibrate", "{tmp}/x.log", "--format", rng.choice(["table", "json"])]
    else:
        args = ["fit", "--from-log", "{tmp}/x.log", "-g", rng.choice(GPUS), "--format", rng.choice(["table", "json"])]
    return Case("log", args, {"x.log": text.encode("utf-8", "surrogatepass")}, fmt=args[-1])


# ------------------------------------------------------------------------------------------------ launch commands

_MISSING_MODEL = ["vllm serve", "python -m sglang.launch_server --tp 2", 'python -m sglang.launch_server --model-path ""',
                  "docker run --gpus all vllm/vllm-openai:latest", "sglang serve --port 1"]  # fmt: skip


def gen_launch(rng: random.Random) -> Case:
    op = rng.randrange(6)
    if op == 0:
        cmd = rng.choice(_MISSING_MODEL)
    elif op == 1:
        cmd = f"vllm serve {json.dumps(_hostile(rng))} -tp 2"
    elif op == 2:
        n = rng.choice([20, 600, 5_000])
        cmd = rng.choice(LAUNCH) + " " + " ".join(f"--zz{i} {i}" for i in range(n))
    elif op == 3:
        cmd = rng.choice(LAUNCH) + rng.choice([" --cuda-graph-max-bs 128", " --pp 2", " --mem 0.8", " --enable-dp"])
    elif op == 4:
        cmd = rng.choice(LAUNCH) + rng.choice([" --hf-overrides '" + "{" * 10_000, " --x " + "a" * 20_000, " '"])
    else:
        cmd = mutate_text(rng, rng.choice(LAUNCH), LAUNCH_BITS)
    fmt = rng.choice(["table", "json"])
    args = ["fit", "-g", rng.choice(GPUS), "--from-launch", "{tmp}/launch.sh", "--format", fmt]
    if rng.random() < 0.3:
        args.append("--check")
    return Case("launch", args, {"launch.sh": cmd.encode("utf-8", "surrogatepass")}, fmt=fmt)


GENERATORS: dict[str, Callable[[random.Random], Case]] = {
    "config": gen_config,
    "toml": gen_toml,
    "size": gen_size,
    "count": gen_count,
    "log": gen_log,
    "launch": gen_launch,
}


# ------------------------------------------------------------------------------------------------ running and checking


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    problems: list[str]


def run_case(case: Case, tmp: Path) -> Outcome:
    """Write the case's files under ``tmp``, run the command in-process (typer's CliRunner), check the answer."""
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    for rel, data in case.files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    args = [a.replace("{tmp}", str(tmp)) for a in case.args]
    env = {k: v.replace("{tmp}", str(tmp)) for k, v in case.env.items()}
    r = CliRunner().invoke(app, args, env={"KVPLAN_HUB_OFFLINE": "1", "HF_HUB_OFFLINE": "1", **env})
    return Outcome(r.exit_code, r.stdout, r.stderr, check(case, r))


def check(case: Case, r) -> list[str]:
    """What is wrong with one answer (empty: nothing)."""
    problems = []
    if r.exit_code not in (0, 2, 3):
        problems.append(f"exit {r.exit_code}")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        problems.append(f"traceback: {type(r.exception).__name__}: {str(r.exception)[:200]}")
    if "Traceback (most recent call last)" in r.stdout + r.stderr:
        problems.append("traceback in the output")
    if r.exit_code == 2 and len(r.stderr.strip().splitlines()) != 1:
        problems.append(f"error not one line: {r.stderr[:300]!r}")
    raw = (RAW_JSON if case.fmt == "json" else RAW_TEXT).findall(r.stdout)
    if raw:
        problems.append("raw escapes on stdout: " + ",".join(sorted({hex(ord(c)) for c in raw})))
    if case.fmt == "csv" and r.exit_code == 0:
        for row in csv.reader(io.StringIO(r.stdout)):
            bad = [c for c in row if c.startswith(("=", "+", "@", "\t", "\r"))]
            if bad:
                problems.append(f"CSV formula cell: {bad[0][:40]!r}")
                break
    return problems


def _run(parser: str, seed: int, tmp_path_factory) -> None:
    case = GENERATORS[parser](random.Random(seed))
    out = run_case(case, tmp_path_factory.mktemp(parser))
    assert not out.problems, (case.args, out.problems, out.stderr[:500])


# ------------------------------------------------------------------------------------------------ the CI budget


@settings(max_examples=examples(25))
@given(st.integers(0, 2**32))
def test_fuzz_hostile_config(tmp_path_factory, seed):
    _run("config", seed, tmp_path_factory)


@settings(max_examples=examples(20))
@given(st.integers(0, 2**32))
def test_fuzz_hostile_toml(tmp_path_factory, seed):
    _run("toml", seed, tmp_path_factory)


@settings(max_examples=examples(25))
@given(st.integers(0, 2**32))
def test_fuzz_hostile_size(tmp_path_factory, seed):
    _run("size", seed, tmp_path_factory)


@settings(max_examples=examples(25))
@given(st.integers(0, 2**32))
def test_fuzz_hostile_count(tmp_path_factory, seed):
    _run("count", seed, tmp_path_factory)


@settings(max_examples=examples(20))
@given(st.integers(0, 2**32))
def test_fuzz_hostile_log(tmp_path_factory, seed):
    _run("log", seed, tmp_path_factory)


@settings(max_examples=examples(25))
@given(st.integers(0, 2**32))
def test_fuzz_hostile_launch(tmp_path_factory, seed):
    _run("launch", seed, tmp_path_factory)
