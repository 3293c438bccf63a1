"""Fuzzing every parser at kvplan's edges: only :class:`kvplan.errors.KvplanError` may escape.

Parsers (and what a generated input goes through):

* ``config``  -- ``kvplan.hfconfig.spec.spec_from_config`` / ``spec_from_path`` on random and mutated HF config.json
  (dicts and raw bytes); every mutated config that parses from its file is then planned with
  ``kvplan.planning.plan.fit`` (SGLang and vLLM), which may also raise only KvplanError;
* ``toml``    -- ``kvplan.inputs.presets.load_model_file`` / ``load_hardware_file`` (``use_cache=False``) on random and
  mutated preset TOML written to a tmp file; a preset that loads is planned too;
* ``size`` / ``count`` -- ``kvplan.units.parse_size`` / ``parse_count``;
* ``log``     -- ``kvplan.inputs.logs.parse_log`` (tests/test_logs.py fuzzes it too; this adds volume);
* ``launch``  -- ``kvplan.inputs.launch.parse_launch_command`` (text and argv); a parse that succeeds must build a
  :class:`kvplan.deployment.Deployment` that ``validate`` accepts or rejects with InputError.

Volume: most tests draw one seed per Hypothesis example and derive a batch of inputs from it with
``random.Random(seed)`` (cheap generation, so a run reaches >= 10,000 inputs per parser in well under a minute);
the rest are structure-aware Hypothesis strategies that shrink.  The conftest profile is derandomized, so every
run sees the same inputs.  Each test declares the inputs one run makes (:func:`volume`) and fails if it makes fewer;
:func:`test_zz_fuzz_volume` checks that those shares add up to the bar per parser over the whole shard plan, which
holds in one process or across pytest-xdist workers.  Counts per test are listed in docs/hardening.md.

No clock: a loaded CI machine must not fail a correct parser.  What is bounded is the *work* per input, by
construction and checked in :func:`call`: its size (:data:`MAX_INPUT`: characters of a text, bytes of a file or
folder, characters of a config dict as JSON), the nesting depth of a config dict (:data:`MAX_DEPTH`), and the
number of inputs (``max_examples`` x the batch per example).  A parser that hangs on one of these inputs shows up
as a test that does not finish (CI's job limit), not as a flaky threshold.

Tests with more than about a second of work are split by :func:`sharded` into equal Hypothesis runs: shard 0 runs
always, the others carry ``@pytest.mark.slow``.  ``python -m pytest`` (the README, CI) runs every shard;
``-m "not slow"`` keeps a tenth of the volume for a quick local loop (each shard that runs still checks its share).
The example budgets are ``examples(N)`` (tests/conftest.py): N in CI, ten times N under ``--hypothesis-profile=long``.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import string
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.errors import InputError, KvplanError
from kvplan.units import MAX_BYTES
from tests.conftest import examples

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"
MODELS_DIR = ROOT / "configs" / "models"
HW_DIR = ROOT / "configs" / "hardware"
LOGS_DIR = ROOT / "tests" / "validation" / "logs"

COUNTS: Counter = Counter()
LARGEST: Counter = Counter()  # parser -> size of its largest input (the units of MAX_INPUT)
SHARDS = 10
#: the CI budget (issue 26 item 6, issue 21 item 8): the README's test command runs the first :data:`CI_SHARDS`
#: shards of each sharded test; ``--hypothesis-profile=long`` runs all :data:`SHARDS`, each with ten times the
#: examples.  The full-volume CLI run is ``scripts/fuzz_run.py --n 10000`` (docs/hardening.md has its numbers).
CI_SHARDS = 3
#: is the long profile loaded?  (:func:`tests.conftest.examples` scales budgets by the same test)
LONG = examples(1) > 1
#: the shards this run makes of a sharded test
RUN_SHARDS = SHARDS if LONG else CI_SHARDS
#: inputs per parser the suite makes at least: 10,000 under the long profile, 3,000 in CI (the CI budget)
TARGET = 10_000 if LONG else 3_000

# The work bound per input: the largest input each parser may be handed (the generators stay far below, except the
# deliberate pathological texts: test_fuzz_log_pathological's 2,000,000 characters, test_fuzz_count_text's
# 5,000 nines, test_fuzz_config_bytes' 5,000 brackets).  config_fit: bytes of the config.json planned;
# toml_plan: none of its own (it plans a preset that came from a bounded ``toml`` input).
# Measured largest (printed by test_zz_fuzz_volume): config 31,492, toml 2,553, size 252, launch 663; depth 7.
MAX_INPUT = {
    "config": 64_000,
    "config_fit": 64_000,
    "toml": 10_000,
    "toml_plan": 0,
    "size": 1_000,
    "count": 5_000,
    "log": 2_000_000,
    "launch": 2_000,
}
MAX_DEPTH = 16  # nesting of dicts and lists in a config dict


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def input_size(value: Any) -> int:
    """The work measure of one parser input: characters, bytes of a file or folder, JSON characters, argv length."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, Path):
        files = [value] if value.is_file() else sorted(p for p in value.glob("*") if p.is_file())
        return sum(p.stat().st_size for p in files)
    if isinstance(value, dict):
        assert _depth(value) <= MAX_DEPTH, ("nesting", _depth(value))
        return len(json.dumps(value, default=str))
    if isinstance(value, list):
        return sum(len(str(a)) + 1 for a in value)
    model = getattr(value, "model", None)  # a Deployment planned from a config.json file
    return input_size(Path(model)) if isinstance(model, str) and Path(model).exists() else 0


def call(parser: str, fn, *args, **kw):
    """Run one parser call on a bounded input: only KvplanError may escape; record the count and the largest input."""
    size = input_size(args[0]) if args else 0
    assert size <= MAX_INPUT[parser], (parser, "input larger than the work bound", size, MAX_INPUT[parser])
    LARGEST[parser] = max(LARGEST[parser], size)
    try:
        out = fn(*args, **kw)
    except KvplanError as exc:
        line = exc.one_line()
        assert line and "\n" not in line
        out = None
    COUNTS[parser] += 1
    return out


def rewrite(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` as a new file (the old one unlinked first), with the same name and bytes as an
    overwrite.  Overwriting a file in place (truncate, then write) makes ext4 push it to disk when it is closed (its
    replace-by-truncate safeguard, auto_da_alloc): ~3 ms of wall time per write against ~0.4 ms for a new file, and
    the fuzz tests write thousands of inputs."""
    path.unlink(missing_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogatepass")
    path.write_bytes(data)


F = TypeVar("F", bound=Callable[..., Any])


def sharded(test: F) -> F:
    """Split a Hypothesis test into :data:`SHARDS` runs of its ``max_examples``: shard 0 always, the rest ``slow``.

    Each shard is a parametrized case, so Hypothesis derives a different derandomized stream from its node id; the
    test adds ``shard`` to its seed space (:func:`shard_seed`) so shards never repeat a batch.
    """
    params = [0, *(pytest.param(i, marks=pytest.mark.slow) for i in range(1, RUN_SHARDS))]
    return pytest.mark.parametrize("shard", params)(test)


def shard_seed(seed: int, shard: int) -> int:
    """One seed space per shard: the drawn seed is < 2**33, so ``seed + shard * 2**33`` never collides."""
    return seed + shard * 2**33


def volume(**at_least: int) -> Callable[[F], F]:
    """Declare the inputs one run of a fuzz test makes at least, per parser (for a :func:`sharded` test: each shard),
    and check it when the run ends: the test fails if it made fewer.

    The per-parser bar (>= :data:`TARGET` inputs) is then the sum of these shares over the shard plan
    (:func:`test_zz_fuzz_volume`): every share is asserted by the run that makes it, in whatever process runs it, so
    the bar holds under pytest-xdist (each worker has its own :data:`COUNTS`) and under ``-m 'not slow'`` alike.
    A share is what the test's design makes unconditionally (examples x batch: ``max_examples`` is exact for these
    derandomized strategies) or, for inputs that depend on an earlier parse succeeding (``config_fit``,
    ``toml_plan``), a floor below what the derandomized run makes (the measured counts are in the comments).
    """

    def wrap(test: F) -> F:
        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> None:
            before = COUNTS.copy()
            test(*args, **kwargs)
            made = {p: COUNTS[p] - before[p] for p in at_least}
            short = {p: f"{made[p]:,} < {n:,}" for p, n in at_least.items() if made[p] < n}
            assert not short, f"{test.__name__} made fewer inputs than its share of the bar: {short}"

        run.volume = dict(at_least)  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap


# ------------------------------------------------------------------------------------------------
# shared mutation material
# ------------------------------------------------------------------------------------------------

WEIRD_JSON = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2,
    3,
    7,
    2**31,
    2**63,
    10**30,
    -(10**30),
    0.5,
    -0.5,
    1e308,
    -1e-308,
    float("nan"),
    float("inf"),
    float("-inf"),
    "",
    "abc",
    "128k",
    "bfloat16",
    "float8_e4m3fn",
    [],
    [0],
    [1, 2],
    ["LlamaForCausalLM"],
    {},
    {"factor": 0},
    {"factor": -4.0, "rope_type": "yarn"},
    {"factor": "x"},
    {"quant_method": "fp8"},
    {"num_hidden_layers": -1},
    [[]],
    "\x00",
    "é" * 5,
]


def _load_json(p: Path):
    return json.loads(p.read_text())


BASE_CONFIGS: list[dict] = [_load_json(p) for p in sorted(HF.glob("*/config.json"))]
_PRESET_CONFIGS: list[dict] = []


def base_configs() -> list[dict]:
    if not _PRESET_CONFIGS:
        from kvplan.inputs import presets

        _PRESET_CONFIGS.extend(dict(m.config) for m in presets.all_models())
    return BASE_CONFIGS + _PRESET_CONFIGS


def mutate_config(rng: random.Random, cfg: dict) -> dict:
    cfg = json.loads(json.dumps(cfg))
    for _ in range(rng.randint(1, 6)):
        target = cfg
        if isinstance(cfg.get("text_config"), dict) and rng.random() < 0.3:
            target = cfg["text_config"]
        keys = list(target) or ["num_hidden_layers"]
        key = rng.choice(keys)
        op = rng.randrange(6)
        if op == 0:
            target.pop(key, None)
        elif op == 1:
            target[key] = copy.deepcopy(rng.choice(WEIRD_JSON))
        elif op == 2:
            v = target.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                target[key] = rng.choice([0, -v, v * 1000, v + 1, v // 3 if isinstance(v, int) else v / 3, v * 2**40])
        elif op == 3:
            target[
                rng.choice(
                    [
                        "text_config",
                        "vision_config",
                        "quantization_config",
                        "rope_scaling",
                        "compress_ratios",
                        "layer_types",
                        "architectures",
                    ]
                )
            ] = copy.deepcopy(rng.choice(WEIRD_JSON))
        elif op == 4:  # keep only a few keys
            for k in rng.sample(keys, k=max(0, len(keys) - rng.randint(1, 6))):
                target.pop(k, None)
        else:  # swap an architecture / model type into another family
            target["architectures"] = [
                rng.choice(
                    [
                        "DeepseekV3ForCausalLM",
                        "DeepseekV32ForCausalLM",
                        "DeepseekV4ForCausalLM",
                        "LlamaForCausalLM",
                        "GptOssForCausalLM",
                        "Qwen3NextForCausalLM",
                        "Foo",
                    ]
                )
            ]
            target["model_type"] = rng.choice(
                ["deepseek_v3", "deepseek_v32", "deepseek_v4", "llama", "qwen3_next", "gpt_oss", "", "x"]
            )
    return cfg


def mutate_text(rng: random.Random, text: str, bits: list[str]) -> str:
    for _ in range(rng.randint(1, 5)):
        pos = rng.randint(0, len(text))
        op = rng.randrange(6)
        n = rng.randint(0, 60)
        if op == 0:
            text = text[:pos] + text[pos + n :]
        elif op == 1:
            text = text[:pos] + rng.choice(bits) + text[pos:]
        elif op == 2:
            text = text[:pos]
        elif op == 3:
            text = text[:pos] + text[pos : pos + n] * rng.randint(2, 4) + text[pos + n :]
        elif op == 4:
            text = text[:pos] + "".join(rng.choice(string.printable) for _ in range(n % 12)) + text[pos:]
        else:  # replace a number by a weird one
            text = (
                text[:pos]
                + rng.choice(["0", "-1", "nan", "inf", "1e999", "9" * 30, "0.0", "-0", "1_000"])
                + text[pos + rng.randint(0, 4) :]
            )
    return text


# ------------------------------------------------------------------------------------------------
# config.json
# ------------------------------------------------------------------------------------------------

_PLAN_ARGS = [
    dict(gpu="h100-sxm", free_memory=78 * 2**30, weight_memory=20 * 2**30, mem_fraction_static=0.85),
    dict(gpu="b200", tp=8, free_memory=170 * 2**30, weight_memory=60 * 2**30, mem_fraction_static=0.88),
    dict(gpu="h100-sxm", tp=2, engine="vllm", weight_memory=20 * 2**30, kv_cache_memory_bytes=30 * 2**30),
    dict(gpu="rtx-pro-6000-maxq", tp=4, context_length=32768),
]


def _spec_checks(spec) -> None:
    """Touch the accessors the planners use: each returns a value or raises InputError."""
    for attr in (
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "v_head_dim",
        "model_dtype",
        "kv_cache_quant_algo",
        "context_length",
        "has_vision_tower",
        "architecture",
    ):
        try:
            getattr(spec, attr)
        except InputError:
            pass


def _plan_config(path: Path, which: int) -> None:
    from kvplan.deployment import Deployment
    from kvplan.planning.plan import fit

    call("config_fit", fit, Deployment(model=str(path), **_PLAN_ARGS[which % len(_PLAN_ARGS)]))


def _config_batch(tmp: Path, seed: int, n: int, plan_every: int) -> None:
    from kvplan.hfconfig.spec import spec_from_config
    from kvplan.inputs.resolve import spec_from_path

    rng = random.Random(seed)
    bases = base_configs()
    for i in range(n):
        cfg = mutate_config(rng, rng.choice(bases))
        spec = call("config", spec_from_config, cfg, model_id="fuzz", source="fuzz")
        if spec is not None:
            _spec_checks(spec)
        if i % plan_every == 0:
            p = tmp / "config.json"
            rewrite(p, json.dumps(cfg))  # NaN / Infinity are written as JSON extensions, which json.loads reads
            if call("config", spec_from_path, p) is not None:
                _plan_config(p, seed + i)


@sharded
@volume(
    config=30 * 48, config_fit=135
)  # config_fit: >= 141 per shard measured (more configs are refused before planning since the family refusals)
@settings(max_examples=examples(300) // SHARDS)
@given(st.integers(0, 2**32))
def test_fuzz_mutated_configs(tmp_path_factory, shard, seed):
    _config_batch(tmp_path_factory.getbasetemp(), shard_seed(seed, shard), n=24, plan_every=1)


_KEYS = sorted(
    {k for c in BASE_CONFIGS for k in c}
    | {"num_hidden_layers", "kv_lora_rank", "index_head_dim", "compress_ratios", "text_config"}
)
_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=8)
)
_json = st.recursive(
    _json_leaf,
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(st.text(max_size=6), ch, max_size=4),
    max_leaves=12,
)


@sharded
@volume(config=60)  # its planned configs (0-3 per shard) are not counted towards the config_fit bar
@settings(max_examples=examples(600) // SHARDS)
@given(
    st.dictionaries(st.sampled_from(_KEYS), _json, max_size=14),
    st.dictionaries(st.sampled_from(_KEYS), st.integers(-4, 300), max_size=10),
)
def test_fuzz_structured_configs(tmp_path_factory, shard, raw, ints):
    from kvplan.hfconfig.spec import spec_from_config

    cfg = {**raw, **ints}
    spec = call("config", spec_from_config, cfg, model_id="fuzz", source="fuzz")
    if spec is not None:
        _spec_checks(spec)
        p = tmp_path_factory.getbasetemp() / "structured.json"
        rewrite(p, json.dumps(cfg))
        _plan_config(p, len(cfg))


@sharded
@volume(config=10 * 20)
@settings(max_examples=examples(100) // SHARDS)
@given(st.integers(0, 2**32))
def test_fuzz_config_bytes(tmp_path_factory, shard, seed):
    """Raw bytes: truncated, bit-flipped and non-UTF-8 config.json files, and folders holding them."""
    from kvplan.inputs.resolve import spec_from_path

    seed = shard_seed(seed, shard)
    rng = random.Random(seed)
    folder = tmp_path_factory.getbasetemp() / f"model-{seed % 7}"
    folder.mkdir(exist_ok=True)
    for _ in range(20):
        data = bytearray(json.dumps(rng.choice(BASE_CONFIGS)).encode())
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(4)
            pos = rng.randrange(len(data) + 1)
            if op == 0:
                del data[pos:]
            elif op == 1 and data:
                data[min(pos, len(data) - 1)] = rng.randrange(256)
            elif op == 2:
                data[pos:pos] = rng.choice([b"\xff\xfe", b"\x00", b"[", b"{", b"]" * 3, b'"', b"NaN", b"-"])
            else:
                data = (
                    bytearray(rng.choice([b"", b"[]", b"null", b"1", b'"x"', b"[" * 5000, b"{}"]))
                    if rng.random() < 0.2
                    else data
                )
        rewrite(folder / "config.json", bytes(data))
        if rng.random() < 0.3:
            rewrite(
                folder / "model.safetensors.index.json",
                rng.choice(
                    [
                        b"{}",
                        b"[]",
                        b'{"metadata": {"total_size": -5}}',
                        b'{"metadata": {"total_size": 1e400}}',
                        b'{"metadata": []}',
                        b"\xff",
                        b'{"metadata": {"total_size": "big"}}',
                    ]
                ),
            )
        if rng.random() < 0.2:
            rewrite(
                folder / "hf_quant_config.json",
                rng.choice(
                    [
                        b"{}",
                        b"[]",
                        b"null",
                        b'{"quantization": []}',
                        b'{"quantization": {"quant_algo": 5}}',
                        b'{"quantization": {"quant_algo": "FP4", "kv_cache_quant_algo": "FP8"}}',
                    ]
                ),
            )
        call("config", spec_from_path, folder if rng.random() < 0.5 else folder / "config.json")
        for extra in ("model.safetensors.index.json", "hf_quant_config.json"):
            (folder / extra).unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------------
# TOML presets
# ------------------------------------------------------------------------------------------------

MODEL_TOMLS = [p.read_text() for p in sorted(MODELS_DIR.glob("*.toml"))]
MODEL_TOMLS_SMALL = sorted(MODEL_TOMLS, key=len)[:12]
HW_TOMLS = [p.read_text() for p in sorted(HW_DIR.glob("*.toml"))]
TOML_VALUES = [
    "0",
    "-1",
    "1",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "true",
    '""',
    '"x"',
    "[]",
    "[1, 2]",
    "{}",
    "{a = 1}",
    "1979-05-27",
    "0x10",
    "99999999999999999999999",
    '"bf16"',
    '"nvfp4"',
    '"pcie"',
    '"weird"',
    "1.5",
    "[[1]]",
    '"""\nx"""',
]
TOML_BITS = [
    "\n[config]\n",
    "\n[weights]\n",
    '\n[[variants]]\nid = "v"\nquantization = "fp8"\n',
    "=",
    "[",
    "]",
    '"',
    "'",
    "#",
    "\n",
    "\x00",
    "\ufeff",
    '\nid = "dup"\n',
    "\nnum_hidden_layers = -3\n",
    "\nmemory_mib = 0\n",
    "\ncuda_total_bytes = 1\n",
    "\nhead_dim = 0\n",
    "\nfoo = 1\n",
]


def mutate_toml(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(5)
        if op == 0:
            del lines[i]
        elif op == 1 and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {rng.choice(TOML_VALUES)}"
        elif op == 2:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 3:
            lines[i:i] = rng.choice(TOML_BITS).split("\n")
        else:
            return mutate_text(rng, "\n".join(lines), TOML_BITS)
    return "\n".join(lines) + "\n"


def _plan_preset(kind: str, obj) -> None:
    """A preset that loads must plan (or be rejected with InputError) like a shipped one."""
    from kvplan.deployment import Deployment, validate
    from kvplan.engines.sglang.planner import plan_sglang
    from kvplan.inputs.resolve import _preset_spec, resolve_gpu, resolve_model

    dep = Deployment(model="fuzz", tp=1, mem_fraction_static=0.85, context_length=8192)
    validate(dep)
    if kind == "model":
        call("toml_plan", lambda: plan_sglang(dep, _preset_spec(obj), resolve_gpu("h100-sxm")))
    else:
        call("toml_plan", lambda: plan_sglang(dep, resolve_model("meta-llama/Llama-3.1-8B"), obj))


def _toml_batch(tmp: Path, seed: int, n: int, kind: str) -> None:
    from kvplan.inputs.presets import load_hardware_file, load_model_file

    rng = random.Random(seed)
    load, bases = (load_model_file, MODEL_TOMLS_SMALL) if kind == "model" else (load_hardware_file, HW_TOMLS)
    p = tmp / f"{kind}-fuzz.toml"
    for _ in range(n):
        text = mutate_toml(rng, rng.choice(bases))
        rewrite(p, text)
        obj = call("toml", load, p, use_cache=False)
        if obj is not None and rng.random() < 0.5:
            _plan_preset(kind, obj)


@sharded
@volume(toml=25 * 20, toml_plan=35)  # toml_plan: >= 42 per shard measured
@settings(max_examples=examples(250) // SHARDS)
@given(st.integers(0, 2**32))
def test_fuzz_mutated_model_presets(tmp_path_factory, shard, seed):
    _toml_batch(tmp_path_factory.getbasetemp(), shard_seed(seed, shard), n=20, kind="model")


@sharded
@volume(toml=25 * 20, toml_plan=25)  # toml_plan: >= 31 per shard measured
@settings(max_examples=examples(250) // SHARDS)
@given(st.integers(0, 2**32))
def test_fuzz_mutated_hardware_presets(tmp_path_factory, shard, seed):
    _toml_batch(tmp_path_factory.getbasetemp(), shard_seed(seed, shard), n=20, kind="hardware")


_toml_key = st.sampled_from(
    [
        "id",
        "name",
        "memory_mib",
        "source",
        "aliases",
        "cuda_total_bytes",
        "interconnect",
        "sm",
        "fp8",
        "vendor",
        "config",
        "weights",
        "variants",
        "bandwidth_gbps",
        "x",
    ]
)


@volume(toml=500)
@settings(max_examples=examples(500))
@given(st.lists(st.tuples(_toml_key, st.sampled_from(TOML_VALUES)), max_size=10), st.text(max_size=40), st.booleans())
def test_fuzz_generated_toml(tmp_path_factory, pairs, junk, hardware):
    from kvplan.inputs.presets import load_hardware_file, load_model_file

    text = "\n".join(f"{k} = {v}" for k, v in pairs) + "\n" + junk
    p = tmp_path_factory.getbasetemp() / "generated.toml"
    rewrite(p, text)
    call("toml", load_hardware_file if hardware else load_model_file, p, use_cache=False)


@volume(toml=6)
def test_fuzz_toml_unreadable(tmp_path):
    from kvplan.inputs.presets import load_hardware_file, load_model_file

    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00id = 1")
    for name in ("dir.toml", "bin.toml", "missing.toml"):
        for load in (load_model_file, load_hardware_file):
            with pytest.raises(InputError):
                load(tmp_path / name, use_cache=False)
            COUNTS["toml"] += 1


# ------------------------------------------------------------------------------------------------
# SIZE strings and counts
# ------------------------------------------------------------------------------------------------

_num = st.one_of(
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"\A[+-]?[0-9]{0,4}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,4})?\Z"),
    st.sampled_from(["1,000", "1_000", "١٢", "²", ".", "", "0x10", "1e", "--1", "1.2.3"]),
)
_unit = st.sampled_from(
    [
        "",
        "B",
        "b",
        "KB",
        "MB",
        "GB",
        "TB",
        "KiB",
        "MiB",
        "GiB",
        "TiB",
        "k",
        "m",
        "g",
        "t",
        "gib",
        "GIB",
        "iB",
        "PB",
        "bytes",
        "G B",
        " GiB",
        "GiB ",
        "\tMiB",
        "\u00a0GiB",
    ]
)


def _check_size(text: str) -> None:
    from kvplan.units import parse_size

    n = call("size", parse_size, text, field="--fuzz")
    if n is not None:
        assert isinstance(n, int) and 1 <= n <= MAX_BYTES, (text, n)
    z = call("size", parse_size, text, field="--fuzz", allow_zero=True)
    if z is not None:
        assert isinstance(z, int) and 0 <= z <= MAX_BYTES
        assert n is None or n == z


@sharded
@volume(size=200 * 2)
@settings(max_examples=examples(2000) // SHARDS)
@given(_num, _unit)
def test_fuzz_size_grammar(shard, num, unit):
    _check_size(num + unit)


@volume(size=1500 * 2)
@settings(max_examples=examples(1500))
@given(st.text(max_size=70))
def test_fuzz_size_text(text):
    _check_size(text)


@volume(size=300 * 10 * 3)
@settings(max_examples=examples(300))
@given(st.integers(0, 2**32))
def test_fuzz_size_batches(seed):
    """Exact round trips on valid sizes, plus mutated valid sizes."""
    from kvplan.units import parse_size

    rng = random.Random(seed)
    units = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
    for _ in range(10):
        u = rng.choice(list(units))
        k = rng.randint(1, MAX_BYTES // units[u])
        assert call("size", parse_size, f"{k}{u}") == k * units[u]
        _check_size(mutate_text(rng, f"{k / rng.choice([1, 3, 7]):.6g} {u}", ["e", ".", "-", "i", "B", " ", "nan"]))


def _check_count(text: str) -> None:
    from kvplan.units import parse_count

    n = call("count", parse_count, text, field="--context-length")
    if n is not None:
        assert isinstance(n, int) and n >= 0


@sharded
@volume(count=250)
@settings(max_examples=examples(2500) // SHARDS)
@given(
    st.one_of(
        st.text(max_size=70),
        st.from_regex(r"\A\s*[0-9_,]{0,12}[kKmMgG]?\s*\Z"),
        st.integers(-(10**20), 10**20).map(str),
        st.sampled_from(["9" * 5000, "2²", "١٢", "1.5k", "k", "m"]),
    )
)
def test_fuzz_count_text(shard, text):
    _check_count(text)


@volume(count=300 * 25 * 2)
@settings(max_examples=examples(300))
@given(st.integers(0, 2**32))
def test_fuzz_count_batches(seed):
    from kvplan.units import parse_count

    rng = random.Random(seed)
    for _ in range(25):
        n = rng.randint(0, 10**9)
        suffix, mult = rng.choice([("", 1), ("k", 1024), ("K", 1024), ("m", 2**20), ("M", 2**20)])
        assert (
            call(
                "count",
                parse_count,
                f"{n:,}{suffix}" if rng.random() < 0.3 else f"{n}{suffix}",
                field="--context-length",
            )
            == n * mult
        )
        _check_count(mutate_text(rng, f"{n}{suffix}", ["k", "m", ",", "_", " ", "-", ".", "e"]))


# ------------------------------------------------------------------------------------------------
# logs
# ------------------------------------------------------------------------------------------------

REAL_LOGS = [p.read_text(encoding="utf-8") for p in sorted(LOGS_DIR.glob("*.log"))]
LOG_BITS = [
    "Load weight end. avail mem=",
    "KV Cache is allocated. #tokens: ",
    "server_args=ServerArgs(",
    "max_total_num_tokens=",
    "Available KV cache memory: ",
    "GPU KV cache size: ",
    "Maximum concurrency for ",
    " GB",
    " GiB",
    "(",
    ")",
    "'",
    '"',
    "{",
    "[",
    ",",
    "=",
    "\\",
    "\n",
    "\r",
    "\x1b[31m",
    "9" * 400,
    "-1.5",
    "nan",
    "inf",
    "1e999",
    "DSV4 memory calculation: a=",
    "# GPU blocks: ",
    "\x00",
    "\ufffd",
    "INFO 01-01 00:00:00 [gpu_worker.py:1] ",
    "[2025-01-01 00:00:00 TP0] ",
    "mem usage=",
    "Model loading took ",
]


def _check_log(text: str) -> None:
    from kvplan.inputs.logs import parse_log

    facts = call("log", parse_log, text)
    if facts is not None:
        assert facts.engine in ("sglang", "vllm")


@sharded
@volume(log=40 * 25)
@settings(max_examples=examples(400) // SHARDS)
@given(st.integers(0, 2**32))
def test_fuzz_mutated_logs(shard, seed):
    rng = random.Random(shard_seed(seed, shard))
    for _ in range(25):
        text = rng.choice(REAL_LOGS)
        if rng.random() < 0.5:  # a window of lines around the sizing lines
            lines = text.splitlines()
            i = rng.randrange(len(lines))
            text = "\n".join(lines[i : i + rng.randint(1, 30)])
        _check_log(mutate_text(rng, text, LOG_BITS))


@sharded
@volume(log=60)
@settings(max_examples=examples(600) // SHARDS)
@given(
    st.lists(
        st.one_of(st.sampled_from(LOG_BITS), st.text(max_size=30), st.floats(allow_nan=True).map(lambda f: f"{f} GiB")),
        max_size=20,
    )
)
def test_fuzz_log_fragments(shard, parts):
    _check_log("".join(parts))


@volume(log=7)
def test_fuzz_log_pathological():
    for text in [
        "(" * 100_000,
        "{" * 50_000 + "}" * 50_000,
        "server_args=ServerArgs(" + "a=(" * 20_000,
        "Available KV cache memory: " + "9" * 100_000 + " GiB",
        "\n" * 200_000,
        "x" * 2_000_000,
        ("KV Cache is allocated. #tokens: 1, K size: 1 GB, V size: 1 GB\n" * 20_000),
    ]:
        _check_log(text)


# ------------------------------------------------------------------------------------------------
# launch commands
# ------------------------------------------------------------------------------------------------

LAUNCH = [
    "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --mem-fraction-static 0.8 "
    "--trust-remote-code --host 0.0.0.0 --port 30000",
    "python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V4.1-Flash --tensor-parallel-size 8 "
    "--expert-parallel-size 8 --context-length 1048576 --kv-cache-dtype fp8_e4m3 --max-running-requests 16 "
    "--chunked-prefill-size=2048 --attention-backend dsv4 --page-size 256 --max-total-tokens 500000 "
    "--disable-radix-cache --swa-full-tokens-ratio 0.5 --speculative-algorithm EAGLE --speculative-num-draft-tokens 4",
    "sglang serve Qwen/Qwen3-32B --tp-size 2 --enable-dp-attention --dp 2",
    "vllm serve meta-llama/Llama-3.1-8B -tp 8 --max-model-len 32k --gpu-memory-utilization 0.9 --max-num-seqs 64",
    "VLLM_USE_V1=1 CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 2 "
    "--kv-cache-dtype fp8 --block-size 32 --enable-expert-parallel --max_model_len=131072 -O3",
    "docker run --gpus all -e HF_TOKEN=x vllm/vllm-openai:latest --model deepseek-ai/DeepSeek-V3 "
    "--tensor-parallel-size 8 --kv-cache-memory-bytes 20G",
    "export SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=1\nnohup python -m sglang.launch_server \\\n  --model-path "
    "deepseek-ai/DeepSeek-V4.1-Flash \\\n  --tp 8 > log 2>&1 &",
    "python -m vllm.entrypoints.openai.api_server --model m/x --pipeline-parallel-size 2 "
    '--speculative-config \'{"method": "eagle", "num_speculative_tokens": 3}\' --max-num-batched-tokens 8192',
]
LAUNCH_BITS = [
    " --tp ",
    " --tp-size ",
    " -tp ",
    " --max-model-len ",
    " --mem-fraction-static ",
    " 0 ",
    " -1 ",
    " nan ",
    " 1e999 ",
    " 8 ",
    " auto ",
    " '",
    '"',
    " \\\n ",
    " ; ",
    " && ",
    " | ",
    " > out ",
    " 2>&1 ",
    " vllm serve ",
    " python -m sglang.launch_server ",
    " --",
    "=",
    " 1.5k ",
    " 99999999999999999999 ",
    " -O ",
    " --speculative-config.num_speculative_tokens ",
    " {",
    "}",
    " $(rm -rf /) ",
    " `x` ",
    "\x00",
]


def _check_launch(cmd) -> None:
    from kvplan.deployment import Deployment, validate
    from kvplan.inputs.launch import parse_launch_command

    p = call("launch", parse_launch_command, cmd)
    if p is None:
        return
    assert p.engine in ("sglang", "vllm") and p.fields.get("engine") == p.engine
    dep = Deployment(**p.fields)  # every field is a Deployment field
    try:
        validate(dep if dep.model else Deployment(**{**p.fields, "model": "x"}))
    except InputError:
        pass
    assert all(isinstance(w, str) for w in p.warnings())


@sharded
@volume(launch=50 * 20)
@settings(max_examples=examples(500) // SHARDS)
@given(st.integers(0, 2**32))
def test_fuzz_mutated_launch_commands(shard, seed):
    rng = random.Random(shard_seed(seed, shard))
    for _ in range(20):
        base = rng.choice(LAUNCH)
        if rng.random() < 0.25:  # argv form
            import shlex

            try:
                argv = shlex.split(base)
            except ValueError:
                continue
            for _ in range(rng.randint(1, 4)):
                i = rng.randint(0, len(argv))
                argv.insert(i, rng.choice(LAUNCH_BITS).strip() or "--")
            _check_launch(argv)
        else:
            _check_launch(mutate_text(rng, base, LAUNCH_BITS))


@sharded
@volume(launch=80)
@settings(max_examples=examples(800) // SHARDS)
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(st.one_of(st.sampled_from(LAUNCH_BITS), st.text(max_size=12)), max_size=20).map("".join),
        st.lists(st.text(max_size=20), max_size=12),
    )
)
def test_fuzz_launch_text(shard, cmd):
    _check_launch(cmd)


# ------------------------------------------------------------------------------------------------
# the bar: >= 10,000 inputs per parser, every input within its work bound
# ------------------------------------------------------------------------------------------------

PARSERS = ("config", "toml", "size", "count", "log", "launch")
#: inputs that exist only when an earlier parse succeeded: a planned config.json, a planned preset
PLANNED = {"config_fit": 1_000, "toml_plan": 500} if LONG else {"config_fit": 400, "toml_plan": 150}


def _fuzz_tests() -> dict[str, Any]:
    return {name: obj for name, obj in globals().items() if name.startswith("test_fuzz_") and callable(obj)}


def _runs(test: Any) -> int:
    """How many runs the suite makes of a test: :data:`RUN_SHARDS` for a :func:`sharded` one, else 1."""
    return RUN_SHARDS if any(m.name == "parametrize" for m in getattr(test, "pytestmark", [])) else 1


def volume_plan() -> Counter:
    """Per parser, the inputs the whole shard plan makes at least: the sum of every run's :func:`volume` share."""
    total: Counter = Counter()
    for test in _fuzz_tests().values():
        for parser, n in test.volume.items():
            total[parser] += n * _runs(test)
    return total


def test_zz_fuzz_volume():
    """The bar: >= :data:`TARGET` inputs per parser (10,000 under the long profile, 3,000 in CI) and the
    :data:`PLANNED` planned configs and presets, over the shard plan.

    Every fuzz test declares its share (:func:`volume`) and fails when a run makes fewer, in whichever process
    runs it (pytest-xdist workers each count their own), so the total the suite makes is at least this sum.
    """
    undeclared = [name for name, test in _fuzz_tests().items() if not hasattr(test, "volume")]
    assert not undeclared, f"fuzz tests without a @volume share: {undeclared}"
    plan = volume_plan()
    short = {p: plan[p] for p in PARSERS if plan[p] < TARGET}
    assert not short, f"fewer than {TARGET:,} inputs: {short}"
    low = {p: plan[p] for p, n in PLANNED.items() if plan[p] < n}
    assert not low, f"fewer planned inputs than {PLANNED}: {low}"
    assert set(plan) <= set(MAX_INPUT), plan
    print("\nfuzz inputs per parser (at least, over the shard plan):", dict(plan))
