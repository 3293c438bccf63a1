"""Issue 15, the log side: bounded log reads, plausibility of measured figures, bad numbers, mangled bytes.

Every case is bounded by input size, never by seconds (the subprocess timeouts only guard against a hang), and
derandomized (fixed seeds).  docs/hardening.md "Startup logs" lists what is promised and tested here.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.inputs.logs import parse_log, read_log_file
from kvplan.inputs.logs.source import MAX_LOG_BYTES
from tests.cli_run import invoke

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "validation" / "logs"
LLAMA = LOGS / "llama31-8b-docs-quickstart-2501.log"
RLIMIT_AS = 1 << 30  # the CLI runs under 1 GiB of address space
HANG_GUARD = 120  # seconds; a hang guard only, the inputs are bounded in bytes


#: starts kvplan under RLIMIT_AS and writes kvplan's peak RSS (KiB) to a file.  kvplan is its child, not the pytest
#: worker's: Linux keeps a process's memory high-water mark across fork and exec, so a kvplan forked straight from
#: a worker that had grown past 200 MB (module caches, a long session) read at least the worker's size.
_WRAP = """
import resource, subprocess, sys
limit, report = int(sys.argv[1]), sys.argv[2]
def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
code = subprocess.call(sys.argv[3:], preexec_fn=_limit)
with open(report, "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code if code >= 0 else 128 - code)
"""


def _cli(*args: str, stdin_cmd: str | None = None, stdin_path: str | None = None) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak RSS in bytes) of ``python -m kvplan ARGS`` under RLIMIT_AS; its standard
    input is the output of ``stdin_cmd`` (a pipe) or the file ``stdin_path`` (default /dev/null)."""
    import tempfile
    import time

    env = {**os.environ, "KVPLAN_NO_CACHE": "1", "COLUMNS": "200"}
    feeder = subprocess.Popen(["sh", "-c", stdin_cmd], stdout=subprocess.PIPE) if stdin_cmd else None
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        open(stdin_path or os.devnull, "rb") as fh,
        tempfile.TemporaryDirectory() as tmp,
    ):
        stdin = feeder.stdout if feeder is not None else fh
        report = Path(tmp) / "maxrss"
        p = subprocess.Popen(
            [sys.executable, "-c", _WRAP, str(RLIMIT_AS), str(report), sys.executable, "-m", "kvplan", *args],
            stdin=stdin,
            stdout=out,
            stderr=err,
            env=env,
            cwd=ROOT,
            start_new_session=True,  # the hang guard kills the wrapper and kvplan together
        )
        if feeder is not None and feeder.stdout is not None:
            feeder.stdout.close()
        deadline = time.monotonic() + HANG_GUARD
        while True:
            pid, status = os.waitpid(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(p.pid, signal.SIGKILL)
                pytest.fail(f"kvplan {args} hung")
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        if feeder is not None:
            feeder.kill()
            feeder.wait()
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read().decode(), err.read().decode(), int(report.read_text()) * 1024


def _cmd(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``kvplan ARGS`` in this process (tests/cli_run.py ``invoke``): for the checks of
    what a log's figures make kvplan answer.  The bounded reads above need a real process (its memory, its stdin);
    the one line and exit 2 at the process boundary is checked there too (test_fifo_or_device_as_a_log...)."""
    return invoke(list(args))


def _one_error_line(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2, (code, err)
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("kvplan: error: LOG"), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


# ---------------------------------------------------------------------------------------------- bounded reads


def test_dev_zero_on_stdin_is_refused_from_its_first_chunk():
    code, out, err, rss = _cli("calibrate", "-", stdin_cmd="head -c 1000000000 /dev/zero")
    _one_error_line(code, out, err, "standard input", "binary")
    assert rss < 200 * 2**20


def test_a_1gb_log_on_stdin_is_refused_at_the_path_cap():
    # text (not binary), so the cap decides: read up to cap + 1 bytes, then refused; memory is the cap, not 1 GB
    code, out, err, rss = _cli("calibrate", "-", stdin_cmd="yes 'INFO 01-01 request traffic' | head -c 1000000000")
    _one_error_line(code, out, err, "standard input", f"{MAX_LOG_BYTES / 2**20:.1f} MiB")
    assert rss < 200 * 2**20  # issue 15: under 200 MB although 1 GB is piped in


def test_a_large_file_redirected_to_stdin_is_refused_from_its_size(tmp_path):
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # sparse: 1 GiB, no disk used
    code, out, err, rss = _cli("calibrate", "-", stdin_path=str(big))
    _one_error_line(code, out, err, "standard input is 1,024.0 MiB", f"{MAX_LOG_BYTES / 2**20:.1f} MiB")
    assert rss < 200 * 2**20
    code, out, err, rss = _cli("calibrate", str(big))  # the same cap by path, from stat alone
    _one_error_line(code, out, err, "1,024 MiB", f"{MAX_LOG_BYTES // 2**20} MiB")
    assert rss < 200 * 2**20


@pytest.mark.parametrize("argv", [("calibrate", "{p}"), ("fit", "--from-log", "{p}")])
def test_fifo_or_device_as_a_log_is_exit_2_naming_the_path(tmp_path, argv):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    for path, kind in ((str(fifo), "a FIFO"), ("/dev/zero", "a device"), (str(tmp_path), "a folder")):
        code, out, err, rss = _cli(*(a.format(p=path) for a in argv))
        _one_error_line(code, out, err, repr(path)[1:-1], kind)
        assert rss < 200 * 2**20


def test_read_log_file_reads_stdin_the_same_way(monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(LLAMA.read_text()))
    assert read_log_file("-") == read_log_file(LLAMA)


# ---------------------------------------------------------------------------------------------- plausibility


def _edited(tmp_path: Path, old: str, new: str, src: Path = LLAMA) -> str:
    text = src.read_text()
    assert old in text
    p = tmp_path / "edited.log"
    p.write_text(text.replace(old, new, 1))
    return str(p)


def test_negative_free_memory_is_refused_naming_the_line(tmp_path):
    log = _edited(tmp_path, "Load weight begin. avail mem=78.81", "Load weight begin. avail mem=-21.63")
    code, out, err = _cmd("calibrate", log)
    _one_error_line(code, out, err, "line 7 (", "avail mem=-21.63 GB", "-21.63 GiB", "positive")
    code, out, err = _cmd("fit", "--from-log", log)
    _one_error_line(code, out, err, "line 7 (")


def test_more_free_memory_after_loading_weights_is_refused(tmp_path):
    log = _edited(tmp_path, "avail mem=63.72", "avail mem=93.72")
    code, out, err = _cmd("calibrate", log)
    _one_error_line(code, out, err, "line 8 (", "93.72 GiB", "more than before (78.81 GiB", "line 7")
    # within the print resolution (two figures of two decimals) it is not refused
    ok = parse_log(LLAMA.read_text().replace("avail mem=63.72", "avail mem=78.82"))
    assert ok.free_after_weights_bytes is not None


def test_negative_weight_load_and_pool_sizes_are_refused():
    base = LLAMA.read_text()
    for old, new in (
        ("K size: 27.13", "K size: -27.13"),
        ("Memory pool end. avail mem=8.34", "Memory pool end. avail mem=-8.34"),
    ):
        with pytest.raises(InputError, match=r"line 9|line 10"):
            parse_log(base.replace(old, new))
    with pytest.raises(InputError, match=r"weight load \(mem usage\) is -1.00 GiB"):
        parse_log("Load weight end. type=X, avail mem=63.72 GB, mem usage=-1.00 GB\n")


def test_free_memory_above_the_device_total(tmp_path):
    smi = "|   0  NVIDIA H100 80GB HBM3   On  |   00000000:18:00.0 Off |   0 |\n| N/A 30C P0 70W / 700W | 1MiB / 40960MiB |\n"
    with pytest.raises(InputError, match="more than the device total the log shows"):
        parse_log(smi + LLAMA.read_text())
    code, out, err = _cmd("calibrate", str(LLAMA), "--gpu", "l4")  # a GPU preset's total (22.49 GiB)
    _one_error_line(code, out, err, "line 7 (", "device total of NVIDIA L4")


def test_vllm_figures_above_the_total_are_refused():
    text = (
        "Free memory on device (70.0/79.0 GiB) on startup.\nModel loading took 90.00 GiB and 5 s\n"
        "Available KV cache memory: 10.00 GiB\n"
    )
    with pytest.raises(InputError, match=r"model loading memory .90.00 GiB. is more than the total GPU memory"):
        parse_log(text)
    # a negative available KV memory is what vLLM prints before refusing to start: kept, not refused
    f = parse_log("Available KV cache memory: -3.00 GiB\n")
    assert f.available_kv_cache_bytes == -3 * 2**30


def test_pool_end_above_post_load_avail_is_a_warning_in_the_verdict(tmp_path):
    log = _edited(tmp_path, "Memory pool end. avail mem=8.34", "Memory pool end. avail mem=68.34")
    code, out, err = _cmd("calibrate", log, "--format", "json")
    assert code == 0 and err.strip() == "", err
    import json

    warnings = json.loads(out)["warnings"]
    assert any("line 10 (" in w and "'Memory pool end' avail (68.34 GiB)" in w for w in warnings), warnings
    code, out, err = _cmd("fit", "--from-log", log, "--format", "json")
    assert code == 0
    assert any("Memory pool end" in w for w in json.loads(out)["baseline"]["warnings"])


def test_real_logs_are_plausible():
    for p in sorted(LOGS.glob("*.log")):
        try:
            f = read_log_file(p)
        except InputError as e:
            assert "sizing lines" in str(e), (p.name, e)  # the two logs without sizing lines, as before
            continue
        assert f.implausible == (), (p.name, f.implausible)


# ---------------------------------------------------------------------------------------------- bad numbers

_BAD_VALUES = (
    "9" * 5000,
    "-" + "9" * 4301,
    "1" + "0" * 45,
    "1e400",
    "-1e400",
    "[" * 100 + "]" * 100,
    "(" * 5000 + ")" * 5000,
    "{'a': " * 70 + "1" + "}" * 70,
    "[1e400]",
    "{'x': 1e999}",
)


def test_bad_numbers_in_server_args_are_named_never_an_internal_error():
    """Every real SGLang server_args key x each bad value (seeded sample): parse_log and calibrate give a value
    or an InputError naming the key; nothing else escapes."""
    from kvplan.planning.calibrate import calibrate

    rng = random.Random(15)
    text = LLAMA.read_text()
    keys = sorted(read_log_file(LLAMA).server_args)
    for bad in _BAD_VALUES:
        for key in [*rng.sample(keys, min(4, len(keys))), "mem_fraction_static", "tp_size"]:
            start = text.index(f"{key}=") + len(key) + 1
            end = text.index(", ", start)
            edited = text[:start] + bad + text[end:]
            with pytest.raises(InputError) as ei:
                calibrate(parse_log(edited))
            assert key in str(ei.value) or "nested" in str(ei.value), (key, bad[:20], ei.value)


def test_bad_numbers_in_vllm_dicts_and_flags(tmp_path):
    text = (
        "(APIServer pid=1) INFO non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 1e400}\n"
        "Available KV cache memory: 10.00 GiB\n"
    )
    with pytest.raises(InputError, match="max_model_len"):
        parse_log(text)
    launch = (
        "vllm serve Qwen/Qwen3-8B --max-model-len " + "9" * 300 + "\nAvailable KV cache memory: 10.00 GiB\n"
        "GPU KV cache size: 72,816 tokens\n"
    )
    p = tmp_path / "v.log"
    p.write_text(launch)
    code, out, err = _cmd("calibrate", str(p))
    _one_error_line(code, out, err, "max_model_len")


def test_too_many_digits_in_a_sizing_line_is_refused_not_cut():
    text = LLAMA.read_text().replace("max_total_num_tokens=444500", "max_total_num_tokens=44450000000000000000")
    with pytest.raises(InputError, match=r"line 11 .*max_total_num_tokens has more than 15 digits"):
        parse_log(text)


# ---------------------------------------------------------------------------------------------- mangled bytes


def test_non_utf8_bytes_are_replaced_never_a_crash(tmp_path):
    """Bytes that are not UTF-8, put at seeded positions of every real log: read_log_file returns facts or an
    InputError, never anything else; a bad byte on a line without a figure changes nothing."""
    rng = random.Random(4)
    for src in sorted(LOGS.glob("*.log"))[:20]:
        data = bytearray(src.read_bytes())
        for _ in range(8):
            data.insert(rng.randrange(len(data)), rng.choice((0xFF, 0xC3, 0x80, 0xFE, 0xED)))
        p = tmp_path / src.name
        p.write_bytes(bytes(data))
        try:
            read_log_file(p)
        except InputError:
            pass
    # a bad byte in the header comment leaves the facts as they were
    raw = LLAMA.read_bytes()
    p = tmp_path / "mangled.log"
    p.write_bytes(raw.replace(b"# gpu: unknown", b"# gpu: unk\xff\xfenown", 1))
    assert read_log_file(p) == read_log_file(LLAMA)
    p.write_bytes(b"\x00" * 100_000)
    with pytest.raises(InputError, match="binary"):
        read_log_file(p)
