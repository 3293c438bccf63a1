"""Hugging Face ids that are not presets: fetch the model's JSON metadata, never its code or weights.

Three files are read from ``{HF_ENDPOINT}/{org}/{name}/resolve/main/{file}``:

* ``config.json`` (required) -- the geometry (:func:`kvplan.hfconfig.spec.spec_from_config`);
* ``model.safetensors.index.json`` (optional) -- ``metadata.total_size``, the checkpoint bytes;
* ``hf_quant_config.json`` (optional, ModelOpt checkpoints) -- weight and KV quantization.

Two transports, same behaviour:

* ``huggingface_hub`` when it is installed (``pip install 'kvplan[hub]'``): its cache
  (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``), token handling and
  endpoint; kvplan first asks for the file's metadata with its own timeout and no retries, so a
  dead network fails in seconds rather than after the library's minute-long retries;
* the standard library (``urllib``) otherwise, caching under ``$XDG_CACHE_HOME/kvplan/hub`` (else
  ``~/.cache/kvplan/hub``).  ``KVPLAN_HUB_BACKEND=urllib`` forces it.

Environment: ``HF_ENDPOINT`` (default https://huggingface.co), ``HF_TOKEN`` (sent as
``Authorization: Bearer``), ``HF_HUB_OFFLINE=1`` (cache only), ``KVPLAN_HUB_TIMEOUT`` (seconds for
connect and each read, default 10).  When the hub cannot be reached (timeout, connection refused,
HTTP 5xx) a cached copy is used if there is one, with a note.  Every failure is one
:class:`InputError` line naming the cause and the fix.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvplan.errors import InputError

if TYPE_CHECKING:
    from http.client import HTTPMessage

    from kvplan.hfconfig.spec import ModelSpec

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 10.0
REVISION = "main"
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
HF_QUANT = "hf_quant_config.json"
MAX_FILE_BYTES = 64 * 2**20
_FIELD = "--model"

# Hugging Face repo ids: "org/name", letters, digits, '-', '_', '.'; no "--" or ".." (huggingface_hub validate_repo_id)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def is_hub_id(text: str) -> bool:
    """True when ``text`` has the shape of a Hugging Face model id (``org/name``)."""
    t = text.strip()
    return bool(_ID.fullmatch(t)) and ".." not in t and "--" not in t and not t.endswith((".json", "."))


# ------------------------------------------------------------------------------------------------
# Settings (read at call time, so tests and long-lived processes see the current environment)
# ------------------------------------------------------------------------------------------------

def _truthy(v: str | None) -> bool:
    return (v or "").strip().upper() in ("1", "ON", "YES", "TRUE", "Y")


@dataclass(frozen=True)
class _Settings:
    endpoint: str
    token: str | None
    offline: bool
    timeout: float


def _settings() -> _Settings:
    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).strip().rstrip("/")
    if not endpoint.startswith(("http://", "https://")):
        raise InputError(f"HF_ENDPOINT must be an http(s) URL, got '{endpoint}'", field="HF_ENDPOINT")
    token = (os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or "").strip() or None
    offline = _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE"))
    raw = os.environ.get("KVPLAN_HUB_TIMEOUT")
    timeout = DEFAULT_TIMEOUT
    if raw not in (None, ""):
        try:
            timeout = float(raw)
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= 3600:
            raise InputError(f"must be a number of seconds in (0, 3600], got '{raw}'", field="KVPLAN_HUB_TIMEOUT")
    return _Settings(endpoint, token, offline, timeout)


def _kvplan_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kvplan" / "hub"


def _hf_cache_dir() -> str:
    """huggingface_hub's cache folder, resolved from the environment now (its constants are read at import)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return os.path.expanduser(os.environ[var])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "huggingface", "hub")


# ------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------

class _Absent(Exception):
    """The repository exists but has no such file (HTTP 404 EntryNotFound)."""


class _Unreachable(Exception):
    """Timeout, connection failure or server error: a cached copy may stand in."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def _offline_error(model_id: str, fname: str) -> InputError:
    return InputError(f"cannot fetch {model_id} {fname}: offline (HF_HUB_OFFLINE=1) and not in the cache",
                      field=_FIELD, hint="pass a config.json path, or unset HF_HUB_OFFLINE once online")


def _http_error(model_id: str, fname: str, status: int, code: str | None, s: _Settings) -> Exception:
    """Map a hub HTTP answer to kvplan's message (X-Error-Code as the Hub sends it: RepoNotFound, GatedRepo,
    EntryNotFound, RevisionNotFound)."""
    if code == "EntryNotFound":
        return _Absent(fname)
    if code == "RevisionNotFound":
        return InputError(f"{model_id} has no revision '{REVISION}'", field=_FIELD)
    if code == "GatedRepo" or (status in (401, 403) and code != "RepoNotFound"):
        if s.token:
            return InputError(f"cannot fetch {model_id}: HF_TOKEN was refused (HTTP {status}), the model is gated "
                              "or private", field=_FIELD,
                              hint="accept the model's terms on its Hugging Face page with this account, or use a "
                                   "token with read access")
        return InputError(f"cannot fetch {model_id}: access denied (HTTP {status}), the model is gated or private",
                          field=_FIELD, hint="set HF_TOKEN to a token that has access to it")
    if code == "RepoNotFound" or status == 404:
        hint = "check the id (org/name, as on the model page)" + ("" if s.token else
                                                                  "; a private model also needs HF_TOKEN")
        return InputError(f"no such model '{model_id}' on {s.endpoint} (HTTP {status})", field=_FIELD, hint=hint)
    if status >= 500 or status == 429:
        return _Unreachable(f"{s.endpoint} answered HTTP {status}", "retry later, or pass a config.json path")
    return InputError(f"cannot fetch {model_id} {fname}: {s.endpoint} answered HTTP {status}", field=_FIELD,
                      hint="pass a config.json path")


def _is_timeout(exc: BaseException) -> bool:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (socket.timeout, TimeoutError)) or any("Timeout" in c.__name__ for c in type(e).__mro__):
            return True
        if isinstance(e, urllib.error.URLError) and isinstance(e.reason, (socket.timeout, TimeoutError)):
            return True
        e = e.__cause__ or e.__context__
    return False


def _unreachable(exc: BaseException, s: _Settings) -> _Unreachable:
    if _is_timeout(exc):
        return _Unreachable(f"no answer from {s.endpoint} within {s.timeout:g} s",
                            "retry, raise KVPLAN_HUB_TIMEOUT, or pass a config.json path")
    reason = getattr(exc, "reason", None) or exc
    text = " ".join(str(reason).split())[:120] or type(exc).__name__
    return _Unreachable(f"cannot reach {s.endpoint} ({text})",
                        "check the network or HF_ENDPOINT, set HF_HUB_OFFLINE=1 to use the cache, "
                        "or pass a config.json path")


# ------------------------------------------------------------------------------------------------
# Transports: get(fname) -> (bytes, url, cache path, note) ; raise _Absent / InputError / _Unreachable
# ------------------------------------------------------------------------------------------------

class _NoAuthOffHost(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but never forward the Authorization header to another host (CDN)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: HTTPMessage,
                         newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


class _UrllibHub:
    name = "urllib"

    def __init__(self, model_id: str, s: _Settings) -> None:
        self.model_id, self.s = model_id, s
        host = urllib.parse.urlsplit(s.endpoint).netloc.replace(":", "_") or "hub"
        self.folder = _kvplan_cache_root() / host / model_id / REVISION

    def url(self, fname: str) -> str:
        return f"{self.s.endpoint}/{self.model_id}/resolve/{REVISION}/{urllib.parse.quote(fname)}"

    def cached(self, fname: str) -> Path | None:
        p = self.folder / fname
        return p if p.is_file() else None

    def download(self, fname: str) -> tuple[bytes, str]:
        from kvplan import __version__

        url = self.url(fname)
        headers = {"User-Agent": f"kvplan/{__version__}", "Accept-Encoding": "identity"}
        if self.s.token:
            headers["Authorization"] = f"Bearer {self.s.token}"
        opener = urllib.request.build_opener(_NoAuthOffHost)
        try:
            with opener.open(urllib.request.Request(url, headers=headers), timeout=self.s.timeout) as resp:
                body = resp.read(MAX_FILE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            code = exc.headers.get("X-Error-Code") if exc.headers is not None else None
            err = _http_error(self.model_id, fname, exc.code, code, self.s)
            exc.close()
            raise err from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise _unreachable(exc, self.s) from None
        if len(body) > MAX_FILE_BYTES:
            raise InputError(f"{url} is larger than 64 MiB; that is not a {fname}", field=_FIELD)
        path = self.folder / fname
        try:                                                   # atomic write; a read-only cache is not an error
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{fname}.")
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.replace(tmp, path)
        except OSError:
            return body, "not cached"
        return body, str(path)

    def get(self, fname: str) -> tuple[bytes, str, str, str | None]:
        url = self.url(fname)
        marker = self.folder / f".{fname}.absent"           # the hub said 404 EntryNotFound last time
        if self.s.offline:
            p = self.cached(fname)
            if p is None:
                raise _Absent(fname) if marker.is_file() else _OfflineMiss(fname)
            return p.read_bytes(), url, str(p), None
        try:
            body, where = self.download(fname)
            return body, url, where, None
        except _Absent:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                marker.touch()
            except OSError:
                pass
            raise
        except _Unreachable as exc:
            p = self.cached(fname)
            if p is None:
                raise
            return p.read_bytes(), url, str(p), f"{exc}: using the cached {fname}"


class _OfflineMiss(Exception):
    pass


class _HfHub:
    name = "huggingface_hub"

    def __init__(self, model_id: str, s: _Settings) -> None:
        import huggingface_hub as hh

        self.hh, self.model_id, self.s = hh, model_id, s
        self.cache_dir = _hf_cache_dir()
        try:
            from huggingface_hub import errors as he
        except ImportError:  # pragma: no cover - huggingface_hub < 0.23
            from huggingface_hub import utils as he  # type: ignore[no-redef]
        self.he = he

    def _download(self, fname: str, *, local_only: bool) -> str:
        return self.hh.hf_hub_download(self.model_id, fname, revision=REVISION, cache_dir=self.cache_dir,
                                       endpoint=self.s.endpoint, token=self.s.token, local_files_only=local_only,
                                       etag_timeout=self.s.timeout)

    def _cached(self, fname: str) -> str | None:
        """The cached file's path; None when not cached; _Absent when the cache knows the hub has no such file."""
        try:
            hit = self.hh.try_to_load_from_cache(self.model_id, fname, cache_dir=self.cache_dir, revision=REVISION)
        except Exception:  # an unreadable cache counts as no cache: the file is fetched instead
            return None
        if isinstance(hit, str):
            return hit
        if hit is not None:                                  # huggingface_hub's _CACHED_NO_EXIST sentinel
            raise _Absent(fname)
        return None

    def _classify(self, exc: BaseException, fname: str) -> Exception:
        he = self.he
        if isinstance(exc, getattr(he, "OfflineModeIsEnabled", ())):
            return _OfflineMiss(fname)
        if isinstance(exc, getattr(he, "LocalEntryNotFoundError", ())):
            return _unreachable(exc, self.s) if exc.__cause__ or exc.__context__ else _OfflineMiss(fname)
        resp: Any = getattr(exc, "response", None)
        status = getattr(resp, "status_code", None)
        if status is not None:
            headers = getattr(resp, "headers", None)
            code = headers.get("X-Error-Code") if headers is not None else None
            if code is None:
                if isinstance(exc, getattr(he, "GatedRepoError", ())):
                    code = "GatedRepo"
                elif isinstance(exc, getattr(he, "RepositoryNotFoundError", ())):
                    code = "RepoNotFound"
                elif isinstance(exc, getattr(he, "EntryNotFoundError", ())):
                    code = "EntryNotFound"
            return _http_error(self.model_id, fname, int(status), code, self.s)
        if isinstance(exc, getattr(he, "EntryNotFoundError", ())):
            return _Absent(fname)
        return _unreachable(exc, self.s)

    def get(self, fname: str) -> tuple[bytes, str, str, str | None]:
        url = self.hh.hf_hub_url(self.model_id, fname, revision=REVISION, endpoint=self.s.endpoint)
        note = None
        if self.s.offline:
            path = self._cached(fname)
            if path is None:
                raise _OfflineMiss(fname)
        else:
            try:
                # Metadata first, with kvplan's timeout and no retries; then the download into the HF cache.
                kw: dict[str, Any] = dict(token=self.s.token, timeout=self.s.timeout)
                try:
                    self.hh.get_hf_file_metadata(url, retry_on_errors=False, **kw)
                except TypeError:  # pragma: no cover - older huggingface_hub without retry_on_errors
                    self.hh.get_hf_file_metadata(url, **kw)
                path = self._download(fname, local_only=False)
            except (TypeError, KeyError, AttributeError, NameError):
                raise  # a kvplan bug (a wrong call into huggingface_hub), not a network answer
            except Exception as exc:  # huggingface_hub's errors (requests / httpx / its own): classified below
                err = self._classify(exc, fname)
                if isinstance(err, _Absent):
                    try:                                     # let huggingface_hub record the 404 in its cache
                        self._download(fname, local_only=False)
                    except Exception:
                        pass
                    raise err from None
                if isinstance(err, _Unreachable):
                    path = self._cached(fname)
                    if path is None:
                        raise err from None
                    note = f"{err}: using the cached {fname}"
                else:
                    raise err from None
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the cached {fname} at {path} ({exc.strerror})", field=_FIELD) from None
        return data, url, str(path), note


def _backend(name: str | None) -> type[_UrllibHub] | type[_HfHub]:
    choice = (name or os.environ.get("KVPLAN_HUB_BACKEND") or "").strip().lower()
    if choice in ("", "auto", "huggingface_hub", "hf"):
        try:
            import huggingface_hub  # noqa: F401
            return _HfHub
        except ImportError:
            if choice in ("huggingface_hub", "hf"):
                raise InputError("huggingface_hub is not installed", field="KVPLAN_HUB_BACKEND",
                                 hint="pip install 'kvplan[hub]', or use KVPLAN_HUB_BACKEND=urllib") from None
            return _UrllibHub
    if choice == "urllib":
        return _UrllibHub
    raise InputError(f"unknown backend '{choice}'", field="KVPLAN_HUB_BACKEND", hint="use huggingface_hub or urllib")


# ------------------------------------------------------------------------------------------------
# Public API
# ------------------------------------------------------------------------------------------------

def _parse_json(data: bytes, model_id: str, fname: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        first = str(exc).splitlines()[0][:80]
        raise InputError(f"{fname} of {model_id} is not valid JSON ({first})", field=_FIELD,
                         hint="pass a config.json path") from None


def fetch_model_files(model_id: str, *, backend: str | None = None) -> dict[str, Any]:
    """Fetch ``config.json`` (+ the safetensors index's ``total_size`` and ``hf_quant_config.json`` when present).

    Returns ``{"config": dict, "total_size": int | None, "hf_quant_config": dict | None,
    "source": "https://.../config.json (cache path)", "backend": "huggingface_hub" | "urllib",
    "notes": [str, ...]}``.  ``backend`` overrides ``KVPLAN_HUB_BACKEND`` (tests).
    """
    model_id = (model_id or "").strip()
    if not is_hub_id(model_id):
        raise InputError(f"'{model_id}' is not a Hugging Face model id", field=_FIELD,
                         hint="write org/name, e.g. Qwen/Qwen3-8B, or pass a config.json path")
    s = _settings()
    hub = _backend(backend)(model_id, s)
    notes: list[str] = []

    def get(fname: str, required: bool) -> tuple[Any, str | None]:
        try:
            data, url, where, note = hub.get(fname)
        except _Absent:
            if required:
                raise InputError(f"{model_id} has no {fname}", field=_FIELD,
                                 hint="is it a model repository? pass a config.json path") from None
            return None, None
        except _OfflineMiss:
            if required:
                raise _offline_error(model_id, fname) from None
            notes.append(f"{fname} not in the cache (offline)")
            return None, None
        except _Unreachable as exc:
            if required:
                raise InputError(f"cannot fetch {model_id} {fname}: {exc}", field=_FIELD, hint=exc.hint) from None
            notes.append(f"{fname} not fetched: {exc}")
            return None, None
        if note:
            notes.append(note)
        return _parse_json(data, model_id, fname), f"{url} ({where})"

    config, source = get(CONFIG, True)
    if not isinstance(config, dict):
        raise InputError(f"config.json of {model_id} must hold a JSON object", field=_FIELD)
    total_size = None
    index, _ = get(INDEX, False)
    if isinstance(index, dict):
        t = (index.get("metadata") or {}).get("total_size") if isinstance(index.get("metadata"), dict) else None
        if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
            total_size = int(t)
    hq, _ = get(HF_QUANT, False)
    return {"config": config, "total_size": total_size, "hf_quant_config": hq if isinstance(hq, dict) else None,
            "source": source, "backend": hub.name, "notes": notes}


def spec_from_hub(model_id: str) -> ModelSpec:
    """A :class:`kvplan.hfconfig.spec.ModelSpec` from the Hub's JSON files (no model code is downloaded or run)."""
    from kvplan.hfconfig.spec import quant_from_hf_quant_config, spec_from_config

    files = fetch_model_files(model_id)
    cfg = dict(files["config"])
    quant, kv_algo = quant_from_hf_quant_config(files["hf_quant_config"])
    if kv_algo and "kv_cache_quant_algo" not in cfg:
        cfg["kv_cache_quant_algo"] = kv_algo
    notes = [f"config from the Hugging Face Hub: {files['source']}", *files["notes"]]
    if files["total_size"]:
        notes.append(f"weights: model.safetensors.index.json total_size = {files['total_size']:,} B")
    return spec_from_config(cfg, model_id=model_id.strip(), source=f"Hugging Face Hub: {files['source']}",
                            quantization=quant, checkpoint_bytes=files["total_size"], notes=tuple(notes))
