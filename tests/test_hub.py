"""Hugging Face ids (kvplan/hub.py) against a local stand-in hub on 127.0.0.1 (tests/hub_stub.py), never the internet.

Both transports are covered: huggingface_hub (when installed) and the urllib fallback.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from kvplan.errors import InputError
from kvplan.inputs.hub import fetch_model_files, is_hub_id, spec_from_hub
from tests.conftest import SHARED
from tests.hub_stub import HubStub

try:
    import huggingface_hub  # noqa: F401
    BACKENDS = ["urllib", "huggingface_hub"]
except ImportError:  # pragma: no cover - depends on the environment
    BACKENDS = ["urllib", pytest.param("huggingface_hub", marks=pytest.mark.skip("huggingface_hub not installed"))]

QWEN3_8B = json.loads((SHARED / "hf-configs" / "Qwen--Qwen3-8B" / "config.json").read_text())
TOTAL = 16_381_470_720
HF_QUANT = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}
TOKEN = "hf_stub_token_123"


@pytest.fixture(scope="module")
def stub():
    s = HubStub()
    s.add("org/tiny", "config.json", QWEN3_8B)
    s.add("org/tiny", "model.safetensors.index.json", {"metadata": {"total_size": TOTAL}, "weight_map": {}})
    s.add("org/tiny", "hf_quant_config.json", HF_QUANT)
    s.add("org/bare", "config.json", QWEN3_8B)                     # no index, no hf_quant_config
    s.add("org/readme-only", "README.md", "# hi")
    s.add("org/gated", "config.json", QWEN3_8B)
    s.gated["org/gated"] = TOKEN
    s.add("org/slow", "config.json", QWEN3_8B)
    s.slow["org/slow"] = 5.0
    s.add("org/badjson", "config.json", '{"num_hidden_layers": 2,')
    s.add("org/notobject", "config.json", "[1, 2]")
    s.start()
    yield s
    s.stop()


@pytest.fixture
def env(stub, tmp_path, monkeypatch):
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE",
                "HUGGINGFACE_HUB_CACHE", "KVPLAN_HUB_BACKEND", "KVPLAN_HUB_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", stub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KVPLAN_HUB_TIMEOUT", "5")
    stub.slow["org/tiny"] = 0
    return monkeypatch


def _err(model_id, backend) -> InputError:
    with pytest.raises(InputError) as ei:
        fetch_model_files(model_id, backend=backend)
    assert ei.value.field == "--model"
    assert "\n" not in ei.value.one_line()
    return ei.value


def _sent(stub, repo, since):
    return [r for r in stub.requests[since:] if r.path.startswith(f"/{repo}/")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_fetch_then_cache_hit_offline(stub, env, backend, tmp_path):
    n0 = len(stub.requests)
    r = fetch_model_files("org/tiny", backend=backend)
    assert r["backend"] == backend
    assert r["config"] == QWEN3_8B
    assert r["total_size"] == TOTAL
    assert r["hf_quant_config"] == HF_QUANT
    url, cache = r["source"].split(" (", 1)
    assert url == f"{stub.url}/org/tiny/resolve/main/config.json"
    assert Path(cache.rstrip(")")).is_file() and str(tmp_path) in cache
    assert _sent(stub, "org/tiny", n0), "the stand-in hub was not asked"
    assert all("authorization" not in r.headers for r in _sent(stub, "org/tiny", n0))

    env.setenv("HF_HUB_OFFLINE", "1")
    n1 = len(stub.requests)
    again = fetch_model_files("org/tiny", backend=backend)
    assert len(stub.requests) == n1, "offline must not touch the network"
    assert (again["config"], again["total_size"], again["hf_quant_config"]) == (QWEN3_8B, TOTAL, HF_QUANT)


@pytest.mark.parametrize("backend", BACKENDS)
def test_optional_files_absent(stub, env, backend):
    r = fetch_model_files("org/bare", backend=backend)
    assert r["config"] == QWEN3_8B and r["total_size"] is None and r["hf_quant_config"] is None
    env.setenv("HF_HUB_OFFLINE", "1")
    r2 = fetch_model_files("org/bare", backend=backend)     # the cache remembers the 404s
    assert r2["total_size"] is None and r2["notes"] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_offline_without_cache(stub, env, backend):
    env.setenv("HF_HUB_OFFLINE", "1")
    n0 = len(stub.requests)
    e = _err("org/tiny", backend)
    assert "offline (HF_HUB_OFFLINE=1) and not in the cache" in str(e) and "config.json path" in e.one_line()
    assert len(stub.requests) == n0


@pytest.mark.parametrize("backend", BACKENDS)
def test_404_unknown_repo_and_missing_config(stub, env, backend):
    e = _err("org/does-not-exist", backend)
    assert "no such model 'org/does-not-exist'" in str(e) and "check the id" in e.one_line()
    e2 = _err("org/readme-only", backend)
    assert "has no config.json" in str(e2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_without_token(stub, env, backend):
    n0 = len(stub.requests)
    e = _err("org/gated", backend)
    assert "HTTP 401" in str(e) and "set HF_TOKEN" in e.one_line()
    assert all("authorization" not in r.headers for r in _sent(stub, "org/gated", n0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_with_wrong_token(stub, env, backend):
    env.setenv("HF_TOKEN", "hf_wrong")
    e = _err("org/gated", backend)
    assert "HF_TOKEN was refused (HTTP 403)" in str(e)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_with_token_sends_authorization(stub, env, backend):
    env.setenv("HF_TOKEN", TOKEN)
    n0 = len(stub.requests)
    r = fetch_model_files("org/gated", backend=backend)
    assert r["config"] == QWEN3_8B
    sent = _sent(stub, "org/gated", n0)
    assert sent and all(x.headers.get("authorization") == f"Bearer {TOKEN}" for x in sent)


@pytest.mark.parametrize("backend", BACKENDS)
def test_timeout_is_short_and_clear(stub, env, backend):
    env.setenv("KVPLAN_HUB_TIMEOUT", "0.3")
    n0 = len(stub.requests)
    e = _err("org/slow", backend)
    assert "within 0.3 s" in str(e) and "KVPLAN_HUB_TIMEOUT" in e.one_line()
    # no retries: the slow config.json was asked for once (the stub holds its answer 5 s)
    slow = [r for r in _sent(stub, "org/slow", n0) if r.path.endswith("config.json")]
    assert len(slow) == 1, slow


@pytest.mark.parametrize("backend", BACKENDS)
def test_unreachable_hub_falls_back_to_cache(stub, env, backend):
    fetch_model_files("org/tiny", backend=backend)
    stub.slow["org/tiny"] = 5.0
    env.setenv("KVPLAN_HUB_TIMEOUT", "0.3")
    r = fetch_model_files("org/tiny", backend=backend)
    assert r["config"] == QWEN3_8B and r["total_size"] == TOTAL
    assert any("using the cached config.json" in n for n in r["notes"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_connection_refused(env, backend):
    with socket.socket() as s:                     # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    e = _err("org/tiny", backend)
    assert "cannot reach" in str(e) or "no answer" in str(e)


@pytest.mark.parametrize("backend", BACKENDS)
def test_malformed_json(stub, env, backend):
    e = _err("org/badjson", backend)
    assert "config.json of org/badjson is not valid JSON" in str(e)
    e2 = _err("org/notobject", backend)
    assert "must hold a JSON object" in str(e2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_spec_from_hub(stub, env, backend):
    env.setenv("KVPLAN_HUB_BACKEND", backend)
    spec = spec_from_hub("org/tiny")
    # Qwen3-8B config.json: 36 layers, 8 KV heads of head_dim 128
    assert (spec.id, spec.family, spec.num_layers, spec.num_kv_heads, spec.head_dim) == ("org/tiny", "gqa", 36, 8, 128)
    assert spec.checkpoint_bytes == TOTAL
    assert spec.quantization == "fp8"                        # hf_quant_config.json quant_algo FP8
    assert spec.kv_cache_quant_algo == "FP8"
    assert spec.source.startswith("Hugging Face Hub: " + stub.url)


def test_urllib_cache_location(stub, env, tmp_path):
    fetch_model_files("org/bare", backend="urllib")
    host = stub.url.split("//")[1].replace(":", "_")
    assert (tmp_path / "xdg" / "kvplan" / "hub" / host / "org" / "bare" / "main" / "config.json").is_file()


def test_bad_settings(env):
    env.setenv("KVPLAN_HUB_TIMEOUT", "soon")
    with pytest.raises(InputError) as ei:
        fetch_model_files("org/tiny", backend="urllib")
    assert ei.value.field == "KVPLAN_HUB_TIMEOUT"
    env.setenv("KVPLAN_HUB_TIMEOUT", "5")
    env.setenv("KVPLAN_HUB_BACKEND", "curl")
    with pytest.raises(InputError) as ei:
        fetch_model_files("org/tiny")
    assert ei.value.field == "KVPLAN_HUB_BACKEND"


@pytest.mark.parametrize("text, ok", [
    ("Qwen/Qwen3-8B", True), ("deepseek-ai/DeepSeek-V3", True), ("meta-llama/Llama-3.1-8B-Instruct", True),
    ("Qwen3-8B", False), ("./config.json", False), ("a/b/c", False), ("org/../x", False), ("org/x.json", False),
    ("org--x/y", False), ("", False),
])
def test_is_hub_id(text, ok):
    assert is_hub_id(text) is ok
    if not ok:
        with pytest.raises(InputError, match="not a Hugging Face model id"):
            fetch_model_files(text, backend="urllib")


def test_urllib_is_the_fallback_without_huggingface_hub(stub, env, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "huggingface_hub", None)   # import now fails
    r = fetch_model_files("org/bare")
    assert r["backend"] == "urllib" and r["config"] == QWEN3_8B
    env.setenv("KVPLAN_HUB_BACKEND", "huggingface_hub")
    with pytest.raises(InputError, match="not installed") as ei:
        fetch_model_files("org/bare")
    assert ei.value.field == "KVPLAN_HUB_BACKEND"


def test_urllib_does_not_forward_the_token_to_another_host(stub, env):
    # same server, reached under another host name: a different host for the redirect rule
    port = stub.url.rsplit(":", 1)[1]
    stub.redirects["org/moved"] = f"http://localhost:{port}"
    stub.add("org/moved", "config.json", QWEN3_8B)
    env.setenv("HF_TOKEN", TOKEN)
    n0 = len(stub.requests)
    try:
        r = fetch_model_files("org/moved", backend="urllib")
    finally:
        del stub.redirects["org/moved"]
    assert r["config"] == QWEN3_8B
    first, followed = _sent(stub, "org/moved", n0)[:2]
    assert first.headers.get("authorization") == f"Bearer {TOKEN}" and first.headers["host"].startswith("127.0.0.1")
    assert followed.headers["host"].startswith("localhost") and "authorization" not in followed.headers
