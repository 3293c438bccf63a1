"""Hardening of the input side (issue 15, part 1), one section per class of defect:

* the bounded reader (kvplan.inputs.read): regular files only, size caps before and while reading, stdin streamed,
  strict UTF-8;
* JSON limits: depth, integer digits, NaN / Infinity / overflowing floats -- each named by its key path;
* the numeric-input guard (kvplan.units) and the error-line helpers (kvplan.errors: echo, mask_secrets);
* config geometry: KV heads, context minimum, implausible checkpoint sizes, unknown dtypes / layer types / quant;
* the reproducers of the issue through the installed CLI (exit 2, one line, nothing on stdout, bounded memory).

Derandomized: every generated case comes from ``random.Random(seed)`` with fixed seeds, and each test is bounded by
the size of its inputs (no wall-clock limits, except the subprocess timeouts that only turn a hang into a failure).
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import ECHO_CHARS, InputError, KvplanError, echo, mask_secrets
from kvplan.hfconfig import checks
from kvplan.hfconfig.spec import spec_from_config
from kvplan.inputs import read
from kvplan.inputs.resolve import spec_from_path
from kvplan.units import MAX_INT_DIGITS, check_number, check_numbers, int_text, parse_count, parse_size

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "tests" / "data" / "shared" / "hf-configs"
CONFIGS = sorted(HF.glob("*/config.json"))
QWEN3_8B = json.loads((HF / "Qwen--Qwen3-8B" / "config.json").read_text())


def _input_error(fn, *args, **kw) -> InputError:
    with pytest.raises(InputError) as ei:
        fn(*args, **kw)
    line = ei.value.one_line()
    assert "\n" not in line and len(line) <= 1000, line
    return ei.value


# ------------------------------------------------------------------------------------------------ bounded reader


def _rb(path, cap=1024):
    return read.read_bytes(path, field="--model", what="a config.json", max_bytes=cap)


def test_regular_files_only(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would hang here
    assert "FIFO" in str(_input_error(_rb, fifo))
    assert "character device" in str(_input_error(_rb, "/dev/zero"))
    assert "folder" in str(_input_error(_rb, tmp_path))
    link = tmp_path / "link.json"
    link.symlink_to("/dev/zero")
    assert "character device" in str(_input_error(_rb, link))
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere")
    assert "cannot read" in str(_input_error(_rb, dangling))


def test_size_cap_before_reading(tmp_path):
    big = tmp_path / "config.json"
    with big.open("wb") as fh:
        fh.truncate(6 * 2**30)  # sparse: 6 GiB by stat, no disk used; never read
    e = _input_error(_rb, big, read.MAX_JSON_BYTES)
    assert "6.0 GiB" in str(e) and "64.0 MiB" in str(e)


def test_size_cap_at_the_boundary(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 1024)
    assert _rb(p, 1024) == b"x" * 1024
    p.write_bytes(b"x" * 1025)
    _input_error(_rb, p, 1024)


class _Zeros(io.RawIOBase):
    """An endless stream (``/dev/zero`` on stdin) that counts what was read from it."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = len(b)
        b[:n] = bytes(n)
        self.served += n
        return n


class _Stdin:
    def __init__(self, raw) -> None:
        self.buffer = raw
        self.closed = False


def test_stdin_is_streamed_under_the_cap(monkeypatch):
    zeros = _Zeros()
    monkeypatch.setattr(sys, "stdin", _Stdin(zeros))
    e = _input_error(read.read_stdin, field="LOG", what="a log", max_bytes=3 * 2**20)
    assert "standard input" in str(e) and zeros.served == 3 * 2**20 + 1  # never more than cap + 1
    monkeypatch.setattr(sys, "stdin", _Stdin(io.BytesIO(b"hello")))
    assert read.read_source("-", field="LOG", what="a log", max_bytes=10) == b"hello"


def test_closed_stdin_is_an_input_error(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    assert "closed" in str(_input_error(read.read_stdin, field="LOG", what="a log", max_bytes=10))
    closed = io.BytesIO(b"x")
    closed.close()
    monkeypatch.setattr(sys, "stdin", _Stdin(closed))
    _input_error(read.read_stdin, field="LOG", what="a log", max_bytes=10)


def test_strict_utf8():
    e = _input_error(read.decode_utf8, b"ok \xff", field="LOG", where="run.log")
    assert "byte 0xff at offset 3" in str(e)
    assert read.decode_utf8("héllo".encode(), field="LOG", where="x") == "héllo"


# ------------------------------------------------------------------------------------------------ JSON limits


def _pj(text):
    return read.parse_json(text, field="--model", where="config.json")


def test_every_real_config_parses_as_json_does():
    for p in CONFIGS:
        text = p.read_text()
        assert _pj(text) == json.loads(text), p
        assert _pj(text.encode()) == json.loads(text), p


@pytest.mark.parametrize("depth", [1, 2, 10, 63, 64, 65, 100, 2000, 200_000])
def test_depth_limit(depth):
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        if depth <= read.MAX_JSON_DEPTH:
            _pj(text)
        else:
            assert "JSON is nested more than 64 levels" in str(_input_error(_pj, text))


@pytest.mark.parametrize("digits", [MAX_INT_DIGITS, MAX_INT_DIGITS + 1, 4300, 4301, 100_000])
def test_integer_digits_limit(digits):
    text = '{"a": {"b": [0, DIGITS]}}'.replace("DIGITS", "9" * digits)
    if digits <= MAX_INT_DIGITS:
        assert _pj(text)["a"]["b"][1] == int("9" * digits)
    else:
        e = _input_error(_pj, text)
        assert "field 'a.b[1]'" in str(e) and f"{digits:,} digits" in str(e)
    assert "field 'n'" in str(_input_error(_pj, '{"n": -' + "1" * (MAX_INT_DIGITS + 1) + "}"))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "9" * 400 + ".5"])
def test_non_finite_numbers(literal):
    e = _input_error(_pj, '{"quantization_config": {"bits": LIT}}'.replace("LIT", literal))
    assert "field 'quantization_config.bits'" in str(e)


def _paths(obj, prefix=()):
    """Every (key path, container, key) of a JSON document."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        yield (*prefix, k), obj, k
        yield from _paths(v, (*prefix, k))


def _dotted(path):
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e400", "9" * 41, "-" + "8" * 5000, "1" * 4301]


@pytest.mark.parametrize("seed", range(6))
def test_bad_numbers_anywhere_in_real_configs_are_named(seed):
    """Mutations of every real config: a bad number at a random key path is refused, naming that path
    (17 configs x 12 mutations per seed)."""
    rng = random.Random(seed)
    for p in CONFIGS:
        doc = json.loads(p.read_text())
        paths = list(_paths(doc))
        for _ in range(12):
            mutated = json.loads(p.read_text())
            path, _, _ = rng.choice(paths)
            target = mutated
            for k in path[:-1]:
                target = target[k]
            marker = "__BAD_NUMBER__"
            target[path[-1]] = marker
            text = json.dumps(mutated).replace(f'"{marker}"', rng.choice(BAD_NUMBERS))
            e = _input_error(_pj, text)
            assert f"field '{_dotted(path)}'" in str(e) or "(characters)" in str(e), (p.name, path, str(e))


# ------------------------------------------------------------------------------------------------ numeric guard


def test_check_number_and_numbers():
    assert check_number(10**MAX_INT_DIGITS - 1, field="x") == 10**MAX_INT_DIGITS - 1
    assert check_number(True, field="x") is True and check_number("text", field="x") == "text"
    for bad in (10**MAX_INT_DIGITS, -(10**60), float("inf"), float("-inf"), float("nan")):
        _input_error(check_number, bad, field="x")
    e = _input_error(check_numbers, {"a": [1, {"b": float("inf")}]}, field="PLAN", where="plan.toml")
    assert "plan.toml: a[1].b" in str(e) and e.field == "PLAN"
    check_numbers({"a": [1, 2.5, None, "s", {"b": -3}]}, field="PLAN", where="plan.toml")
    deep: list = []
    for _ in range(5000):  # iterative: no recursion limit
        deep = [deep]
    check_numbers(deep, field="PLAN", where="x")


def test_int_text():
    assert int_text("131072", field="x") == 131072 and int_text("-5", field="x") == -5
    assert int_text("0" * 100 + "7", field="x") == 7  # leading zeros are not digits of the value
    for bad in ("9" * 41, "9" * 5000, "1e3", "", "12a", "²"):
        _input_error(int_text, bad, field="--context-length")


@pytest.mark.parametrize("seed", range(3))
def test_size_and_count_parsers_never_leak_long_input(seed):
    rng = random.Random(seed)
    for _ in range(200):
        n = rng.choice([65, 100, 5000, 100_000])
        text = "".join(rng.choices("0123456789.eE+-kKmMgGiIbB _,\x1b\n", k=n))
        for fn in (lambda t: parse_size(t, field="--gpu-memory"), lambda t: parse_count(t, field="--context-length")):
            e = _input_error(fn, text)
            assert len(e.one_line()) < 300


def test_echo_truncates_and_escapes():
    assert echo("80GiB") == "80GiB"
    long = echo("9" * 5000)
    assert long.startswith("9" * ECHO_CHARS) and long.endswith("(5,000 characters)") and len(long) < 120
    assert echo("a\nb\x1b[31m") == "a\\nb\\x1b[31m"
    assert "\n" not in InputError(f"bad '{echo('x' * 90 + chr(10))}'", field="f").one_line()


@pytest.mark.parametrize(
    "text, secret",
    [
        ("cannot reach https://alice:pw123@hub.local/x (refused)", "pw123"),
        ("Authorization: Bearer abcdef0123456789", "abcdef0123456789"),
        ("token hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2", "A1b2C3d4E5f6G7h8I9j0K1l2"),
        ("GET https://hub.local/x?token=s3cr3t&x=1", "s3cr3t"),
    ],
)
def test_secrets_are_masked_in_every_error_line(text, secret):
    assert secret not in mask_secrets(text) and "***" in mask_secrets(text)
    assert secret not in KvplanError(text, field="HF_ENDPOINT").one_line()
    assert secret not in InputError("x", field="f", hint=text).one_line()


def test_one_line_is_capped():
    line = InputError("x" * 5000, field="f").one_line()
    assert len(line) == 1000 and line.endswith("...")


# ------------------------------------------------------------------------------------------------ geometry


def _spec(**over):
    return spec_from_config({**QWEN3_8B, **over}, model_id="m", source="test")


@pytest.mark.parametrize(
    "heads, kv, ok",
    [(32, 8, True), (32, 32, True), (32, 1, True), (32, 12, False), (32, 64, False), (40, 8, True), (40, 16, False)],
)
def test_kv_heads_divide_the_attention_heads(heads, kv, ok):
    if ok:
        assert _spec(num_attention_heads=heads, num_key_value_heads=kv, head_dim=128).num_kv_heads == kv
    else:
        e = _input_error(_spec, num_attention_heads=heads, num_key_value_heads=kv, head_dim=128)
        assert "num_key_value_heads" in str(e)


@pytest.mark.parametrize("key", checks.CONTEXT_KEYS)
@pytest.mark.parametrize("value", [1, 0, -5, 1.5])
def test_context_below_the_engine_minimum_is_refused(key, value):
    e = _input_error(_spec, **{key: value})
    assert key in str(e) and ("at least 2" in str(e) or "must be an integer" in str(e)), str(e)


def test_context_of_two_is_accepted():
    assert _spec(max_position_embeddings=2).context_length == 2


@pytest.mark.parametrize(
    "total, trusted",
    [
        (1, False),
        (16_381_470_720 // 9, False),
        (16_381_470_720 // 7, True),
        (16_381_470_720, True),
        (16_381_470_720 * 7, True),
        (16_381_470_720 * 9, False),
    ],
)
def test_implausible_checkpoint_size_is_warned_and_dropped(total, trusted):
    s = spec_from_config(QWEN3_8B, model_id="m", source="t", checkpoint_bytes=total)
    assert (s.checkpoint_bytes == total) is trusted
    assert any("implausible" in w for w in s.warnings) is not trusted


def test_checkpoint_size_from_a_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_8B))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 1}}))
    s = spec_from_path(tmp_path)
    assert s.checkpoint_bytes is None and "total_size" in " ".join(s.warnings)


@pytest.mark.parametrize(
    "over, named",
    [
        ({"torch_dtype": "float8_e4m3fn"}, "'float8_e4m3fn'"),
        ({"layer_types": ["full_attention"] * 35 + ["quantum_attention"]}, "'quantum_attention'"),
        ({"quantization_config": {"quant_method": "nf5"}}, "'nf5'"),
        ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_XYZ"}}, "'W4A8_XYZ'"),
        ({"kv_cache_quant_algo": "INT3"}, "'INT3'"),
    ],
)
def test_unknown_names_are_warned_not_refused(over, named):
    s = _spec(**over)
    assert any(named in w for w in s.warnings), s.warnings


def test_hf_quant_config_warnings(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_8B))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "W4A8_XYZ"}}))
    assert any("'W4A8_XYZ'" in w for w in spec_from_path(tmp_path).warnings)
    assert checks.hf_quant_warnings({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}) == []


def test_real_configs_and_presets_have_no_warnings():
    from kvplan.inputs import presets
    from kvplan.inputs.resolve import _preset_spec

    for p in CONFIGS:
        assert spec_from_path(p.parent).warnings == (), p
    for m in presets.all_models():
        for v in (None, *m.variants):
            s = _preset_spec(m, variant=v)
            assert s.warnings == () and s.checkpoint_bytes == (v.checkpoint_bytes if v else m.weights.checkpoint_bytes)


def test_checkpoint_estimate_tracks_the_weight_estimate():
    """The coarse estimate behind the plausibility band stays within 0.25x-2x of kvplan's tensor-by-tensor estimate
    on every real config (so the 1/8-8x band never drops a real checkpoint size)."""
    from kvplan.weights.estimate import estimate_weight_bytes

    for p in CONFIGS:
        s = spec_from_path(p.parent)
        coarse = checks.estimate_checkpoint_bytes(s.config, quantization=s.quantization)
        fine = estimate_weight_bytes(
            config=s.config,
            quantization=s.quantization,
            checkpoint_bytes=None,
            tp_size=1,
            pp_size=1,
            ep_size=1,
            attn_dp_size=1,
            engine="sglang",
            engram_on_host=False,
        )
        assert coarse and 0.25 <= fine.per_gpu_bytes / coarse <= 2, (p, fine.per_gpu_bytes / coarse)


def test_a_model_folder_with_fifos(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_8B))
    for name in ("model.safetensors.index.json", "hf_quant_config.json"):
        os.mkfifo(tmp_path / name)
        assert "FIFO" in str(_input_error(spec_from_path, tmp_path))
        (tmp_path / name).unlink()
    os.unlink(tmp_path / "config.json")
    os.mkfifo(tmp_path / "config.json")
    assert "FIFO" in str(_input_error(spec_from_path, tmp_path))


# ------------------------------------------------------------------------------------------------ CLI reproducers

_MEASURE = """
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=60)
print(json.dumps([p.returncode, p.stdout, p.stderr, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))
"""


def _cli(args, tmp_path):
    """Run the installed CLI in a fresh wrapper process: (exit code, stdout, stderr, peak RSS of kvplan in KiB)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVPLAN_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "kvplan", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return tuple(json.loads(out.stdout))


def _folder(tmp_path, name, *, text=None, raw=None):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_bytes(raw if raw is not None else text.encode())
    return d


REPRODUCERS = {
    "bits-1e400": lambda: json.dumps({**QWEN3_8B, "quantization_config": {"quant_method": "awq", "bits": 4}}).replace(
        '"bits": 4', '"bits": 1e400'
    ),
    "unused-5000-digits": lambda: json.dumps({**QWEN3_8B, "x": 0}).replace('"x": 0', '"x": ' + "9" * 5000),
    "nested-5000": lambda: json.dumps({**QWEN3_8B, "x": 0}).replace('"x": 0', '"x": ' + "[" * 5000 + "]" * 5000),
    "max-position-1": lambda: json.dumps({**QWEN3_8B, "max_position_embeddings": 1}),
    "kv-heads-64": lambda: json.dumps({**QWEN3_8B, "num_key_value_heads": 64}),
    "kv-heads-12": lambda: json.dumps({**QWEN3_8B, "num_key_value_heads": 12}),
    "rope-theta-nan": lambda: json.dumps({**QWEN3_8B, "rope_theta": 1}).replace('"rope_theta": 1', '"rope_theta": NaN'),
}


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_reproducers_exit_2_with_one_line(name, tmp_path):
    d = _folder(tmp_path, name, text=REPRODUCERS[name]())
    code, out, err, _ = _cli(["fit", "-m", str(d), "-g", "h100-sxm", "--format", "json"], tmp_path)
    assert (code, out) == (2, ""), (code, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("kvplan: error: --model:"), err


def test_non_utf8_config(tmp_path):
    d = _folder(tmp_path, "latin1", raw=json.dumps({**QWEN3_8B, "x": "é"}, ensure_ascii=False).encode("latin-1"))
    code, out, err, _ = _cli(["fit", "-m", str(d), "-g", "h100-sxm", "--format", "json"], tmp_path)
    assert (code, out) == (2, "") and "not UTF-8" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "6GiB"])
def test_unreadable_configs_are_refused_fast_and_small(kind, tmp_path):
    """A FIFO (would hang), /dev/zero (would read forever) or a 6 GiB config.json (was read whole, 6.3 GB RSS):
    exit 2 from stat alone, under 200 MB of memory."""
    d = tmp_path / kind
    d.mkdir()
    cfg = d / "config.json"
    if kind == "fifo":
        os.mkfifo(cfg)
    elif kind == "dev-zero":
        cfg.symlink_to("/dev/zero")
    else:
        with cfg.open("wb") as fh:
            fh.truncate(6 * 2**30)
    code, out, err, rss_kib = _cli(["fit", "-m", str(d), "-g", "h100-sxm", "--format", "json"], tmp_path)
    assert (code, out) == (2, ""), (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "config.json" in err
    assert rss_kib < 200 * 1024, rss_kib
