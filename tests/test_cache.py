"""kvplan.cache: an entry is used only when its format, kvplan version, kind, ident checksum, data checksum and
shape match and it is a regular file under the size cap; anything else is a miss that the next store rewrites.

The end-to-end tests run the installed CLI (a fresh process per run, so nothing is remembered in memory) and compare
with ``KVPLAN_NO_CACHE=1``: a tampered, wrongly shaped or FIFO entry never changes an answer and never hangs.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan import cache

ROOT = Path(__file__).resolve().parent.parent
FIT = ["fit", "-m", "qwen3-8b", "-g", "h100-sxm", "--format", "json"]


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(d))
    monkeypatch.delenv("KVPLAN_NO_CACHE", raising=False)
    return d


def _entry(kind: str, key: str) -> Path:
    p = cache.entry_path(kind, key)
    assert p is not None
    return p


# ------------------------------------------------------------------------------------------------ unit


def test_round_trip_and_every_mismatch_is_a_miss(cdir, monkeypatch):
    data = {"a": [1, 2.5, "x"], "b": {"c": None}}
    cache.store("presets", "k1", "ident-1", data)
    assert cache.load("presets", "k1", "ident-1") == data
    assert cache.load("presets", "k1", "ident-2") is None  # derived from something else
    assert cache.load("weights", "k1", "ident-1") is None  # another kind
    monkeypatch.setattr(cache, "__version__", "0.0.0-other")
    assert cache.load("presets", "k1", "ident-1") is None  # another kvplan (and another file name)
    monkeypatch.undo()
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(cdir))
    monkeypatch.setattr(cache, "FORMAT", cache.FORMAT + 1)
    assert cache.load("presets", "k1", "ident-1") is None  # another entry format


def test_tampered_data_is_a_miss(cdir):
    cache.store("presets", "k", "id", {"total_bytes": 85520809984})
    p = _entry("presets", "k")
    head, body = p.read_bytes().split(b"\n", 1)
    p.write_bytes(head + b"\n" + body.replace(b"85520809984", b"95520809984"))  # valid JSON, other number
    assert json.loads(p.read_bytes().split(b"\n", 1)[1]) == {"total_bytes": 95520809984}
    assert cache.load("presets", "k", "id") is None
    cache.store("presets", "k", "id", {"total_bytes": 85520809984})  # the caller's rewrite heals it
    assert cache.load("presets", "k", "id") == {"total_bytes": 85520809984}


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n",
        b"not json\n{}",
        b'{"format": 2}\n{}',
        b"\xff\xfe\n\xff",
        b"[1, 2]\n[3]",
        b'{"format":2,"ident":"x","kind":"presets","kvplan":"0","sha256":"y"}\n' + b"9" * 5000,
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["empty", "newline", "text", "header-only", "binary", "lists", "big-int", "deep"],
)
def test_garbage_entries_are_misses(cdir, content):
    p = _entry("presets", "k")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content)
    assert cache.load("presets", "k", "id") is None


def test_wrong_shape_is_a_miss(cdir):
    cache.store("weights", "w", "id", [1, 2, 3])  # a list where the estimate dict belongs
    assert cache.load("weights", "w", "id") is None
    cache.store("weights", "w", "id", {"per_gpu_bytes": "many", "method": "x", "notes": [], "breakdown": []})
    assert cache.load("weights", "w", "id") is None
    good = {"per_gpu_bytes": 5, "method": "params", "notes": ["n"], "breakdown": [["attention", 5]]}
    cache.store("weights", "w", "id", good)
    assert cache.load("weights", "w", "id") == good
    cache.store("presets", "p", "id", "a string")  # default shape: a JSON object
    assert cache.load("presets", "p", "id") is None
    assert cache.load("presets", "p", "id", shape=lambda d: isinstance(d, str)) == "a string"


def test_non_regular_entries_are_misses_without_hanging(cdir):
    p = _entry("presets", "k")
    p.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(p)  # nobody writes: a blocking open would hang
    assert cache.load("presets", "k", "id") is None
    cache.store("presets", "k", "id", {"ok": 1})  # replaced atomically by a regular file
    assert cache.load("presets", "k", "id") == {"ok": 1}
    p.unlink()
    p.symlink_to("/dev/zero")
    assert cache.load("presets", "k", "id") is None
    p.unlink()
    p.mkdir()
    assert cache.load("presets", "k", "id") is None


def test_oversized_entries_are_neither_read_nor_written(cdir, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 4096)
    cache.store("presets", "big", "id", {"x": "y" * 5000})
    assert not _entry("presets", "big").exists()
    cache.store("presets", "small", "id", {"x": "y"})
    p = _entry("presets", "small")
    with p.open("ab") as fh:
        fh.truncate(10 * 2**30)  # sparse 10 GiB: refused from its size alone
    assert cache.load("presets", "small", "id") is None


def test_no_cache_and_unwritable_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    cache.store("presets", "k", "id", {"a": 1})
    assert cache.load("presets", "k", "id") is None
    monkeypatch.delenv("KVPLAN_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(blocker))
    cache.store("presets", "k", "id", {"a": 1})  # ignored, no exception
    assert cache.load("presets", "k", "id") is None


def test_unserialisable_data_is_not_stored(cdir):
    cache.store("presets", "nan", "id", {"x": float("nan")})
    cache.store("presets", "obj", "id", {"x": object()})
    assert not _entry("presets", "nan").exists() and not _entry("presets", "obj").exists()


def test_keys_cannot_leave_the_cache_folder(cdir):
    cache.store("presets", "../../escape/x", "id", {"a": 1})
    assert cache.load("presets", "../../escape/x", "id") == {"a": 1}
    assert [p.parent for p in cdir.rglob("*.json")] == [cdir / "presets"]


# ------------------------------------------------------------------------------------------------ concurrency

_WRITERS, _ROUNDS = 4, 150


def _hammer(args: tuple[str, int]) -> list[str]:
    """Store this writer's data and read the entry back, _ROUNDS times; what was read that no writer wrote."""
    folder, n = args
    os.environ["KVPLAN_CACHE_DIR"] = folder
    mine = {"writer": n, "rows": [[f"r{i}", i * n] for i in range(200)]}
    valid = [{"writer": w, "rows": [[f"r{i}", i * w] for i in range(200)]} for w in range(_WRITERS)]
    bad = []
    for _ in range(_ROUNDS):
        cache.store("presets", "shared", "same-ident", mine)
        got = cache.load("presets", "shared", "same-ident")
        if got is not None and got not in valid:
            bad.append(repr(got)[:80])
    return bad


def test_concurrent_writers_never_leave_a_torn_entry(cdir):
    """4 processes x 150 store + load of one key: every read is one writer's whole entry (atomic replace)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(_WRITERS) as pool:
        results = pool.map(_hammer, [(str(cdir), n) for n in range(_WRITERS)])
    assert results == [[]] * _WRITERS
    assert not list((cdir / "presets").glob("*.tmp")), "temporary files left behind"
    assert cache.load("presets", "shared", "same-ident") is not None


# ------------------------------------------------------------------------------------------------ end to end


def _fit(cache_dir: Path, *, no_cache: bool = False) -> str:
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    env.pop("KVPLAN_NO_CACHE", None)
    if no_cache:
        env["KVPLAN_NO_CACHE"] = "1"
    proc = subprocess.run([sys.executable, "-m", "kvplan", *FIT], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    return _fit(tmp_path_factory.mktemp("nocache"), no_cache=True)


def _tamper_numbers(path: Path) -> None:
    """Change every integer of the entry's data (valid JSON, the header left as it was)."""
    head, body = path.read_bytes().split(b"\n", 1)
    data = json.loads(body)

    def bump(x):
        if isinstance(x, bool):
            return x
        if isinstance(x, int):
            return x * 3 + 7
        if isinstance(x, list):
            return [bump(v) for v in x]
        if isinstance(x, dict):
            return {k: bump(v) for k, v in x.items()}
        return x

    path.write_bytes(head + b"\n" + json.dumps(bump(data), sort_keys=True, separators=(",", ":")).encode())


def test_a_tampered_cache_never_changes_the_answer(tmp_path, truth):
    d = tmp_path / "cache"
    assert _fit(d) == truth  # fills the cache
    entries = sorted(d.rglob("*.json"))
    assert any(p.parent.name == "weights" for p in entries) and any(p.parent.name == "presets" for p in entries)
    for p in entries:
        _tamper_numbers(p)
    assert _fit(d) == truth  # every entry a miss, recomputed
    for p in entries:  # ... and rewritten (healed)
        head, body = p.read_bytes().split(b"\n", 1)
        assert json.loads(head)["checksum"] == cache.digest(body)
    assert _fit(d) == truth


def test_wrongly_shaped_entries_heal(tmp_path, truth, monkeypatch):
    """Entries with a valid checksum but the wrong shape (as a stale kvplan of the same version could leave)."""
    d = tmp_path / "cache"
    _fit(d)
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(d))
    for p in sorted(d.rglob("*.json")):
        head = json.loads(p.read_bytes().split(b"\n", 1)[0])
        body = json.dumps([1, "two", None]).encode()
        head["checksum"] = cache.digest(body)
        p.write_bytes(json.dumps(head, sort_keys=True, separators=(",", ":")).encode() + b"\n" + body)
    assert _fit(d) == truth
    assert _fit(d) == truth


def test_a_fifo_in_place_of_an_entry_does_not_hang(tmp_path, truth):
    d = tmp_path / "cache"
    _fit(d)
    for p in sorted(d.rglob("*.json")):
        p.unlink()
        os.mkfifo(p)
    assert _fit(d) == truth  # subprocess timeout: 120 s; takes < 5 s
    assert all(p.is_file() for p in d.rglob("*.json") if p.parent.name == "weights")
