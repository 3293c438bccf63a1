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

Environment: ``HF_ENDPOINT`` (default https://huggingface.co; checked before anything is imported or sent: a
malformed URL, a port outside 1..65535 or a missing host is exit 2), ``HF_TOKEN`` (sent as
``Authorization: Bearer``), ``HF_HUB_OFFLINE=1`` (cache only), ``KVPLAN_HUB_TIMEOUT`` (seconds, default 30: the
**total** time for one file -- connect, headers and body -- whichever backend).  When the hub cannot be reached
(deadline passed, connection refused, HTTP 5xx) a cached copy is used if there is one, with a note.  Every
failure is one :class:`InputError` line naming the cause and the fix; credentials (``user:pass@`` in
HF_ENDPOINT, tokens) are masked in every message (:func:`kvplan.errors.mask_secrets`).

Limits, the same with both backends:

* **deadline** -- each file is fetched in a worker thread that the caller waits for at most KVPLAN_HUB_TIMEOUT
  seconds; then it gives up (the answer is "no answer within N s").  The worker stops by itself too: urllib sets
  each read's socket timeout to the time left and checks the deadline between chunks; huggingface_hub's download
  runs with kvplan's own progress hook (``tqdm_class``), which stops it at the first chunk after the deadline.
* **size** -- :data:`MAX_FILE_BYTES` (64 MiB, :data:`kvplan.inputs.read.MAX_JSON_BYTES`): a larger announced size
  (``Content-Length``, the Hub's file metadata) is refused before the body is asked for; while streaming, the
  transfer stops once one byte more than the cap has arrived (urllib) or before a chunk past the cap is written
  (huggingface_hub's hook), so nothing oversized is cached; a cached file is read through the bounded reader
  (regular file, at most the cap) before use.
* **JSON** -- every file is parsed by :func:`kvplan.inputs.read.parse_json` (depth, digits, no NaN / inf).
"""

from __future__ import annotations

import base64
import http.client
import os
import re
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kvplan.errors import InputError, echo, mask_secrets
from kvplan.inputs.read import CHUNK_BYTES, MAX_JSON_BYTES, max_elements_of, parse_json, read_bytes

if TYPE_CHECKING:
    from http.client import HTTPMessage

    from kvplan.hfconfig.spec import ModelSpec

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 30.0  # seconds, the total for one file
REVISION = "main"
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
HF_QUANT = "hf_quant_config.json"
MAX_FILE_BYTES = MAX_JSON_BYTES
_FIELD = "--model"
_T = TypeVar("_T")

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
    endpoint: str  # as requests are sent (user-info removed; urllib sends it as Basic auth)
    shown: str  # as messages show it (credentials masked)
    token: str | None
    offline: bool
    timeout: float  # seconds, the total for one file
    userinfo: str | None = None
    raw_endpoint: str = ""  # as given (huggingface_hub gets it with its user-info)


def _endpoint(raw: str) -> tuple[str, str, str | None]:
    """``(endpoint without user-info, masked endpoint for messages, user-info or None)``; InputError on
    HF_ENDPOINT for anything but an http(s) URL with a host and a port in 1..65535.

    Example: ``_endpoint("http://me:pw@127.0.0.1:8080/")`` -> ``("http://127.0.0.1:8080", "http://***@127.0.0.1:8080",
    "me:pw")``; ``_endpoint("http://[::1")`` -> InputError "HF_ENDPOINT 'http://[::1' is not a valid URL (Invalid
    IPv6 URL)".
    """
    text = raw.strip().rstrip("/")
    shown = mask_secrets(echo(text))
    hint = "write e.g. https://huggingface.co or http://127.0.0.1:8080"
    if not text.startswith(("http://", "https://")):
        raise InputError(f"must be an http(s) URL, got '{shown}'", field="HF_ENDPOINT", hint=hint)
    if not text.isprintable() or any(ch.isspace() for ch in text):
        raise InputError(f"'{shown}' holds spaces or control characters", field="HF_ENDPOINT", hint=hint)
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise InputError(f"'{shown}' is not a valid URL ({echo(exc)})", field="HF_ENDPOINT", hint=hint) from None
    if not host or port == 0:
        raise InputError(
            f"'{shown}' has no host" if not host else f"'{shown}' has port 0", field="HF_ENDPOINT", hint=hint
        )
    if parts.query or parts.fragment:
        raise InputError(f"'{shown}' has a query or fragment", field="HF_ENDPOINT", hint=hint)
    userinfo, _, hostport = parts.netloc.rpartition("@")
    clean = urllib.parse.urlunsplit((parts.scheme, hostport, parts.path, "", "")).rstrip("/")
    return clean, shown, urllib.parse.unquote(userinfo) or None


def _timeout(raw: str | None) -> float:
    """KVPLAN_HUB_TIMEOUT: seconds in (0, 3600], the total for one file; unset or empty -> DEFAULT_TIMEOUT."""
    if raw in (None, ""):
        return DEFAULT_TIMEOUT
    try:
        timeout = float(raw)
    except ValueError:
        timeout = -1.0
    if not 0 < timeout <= 3600:
        raise InputError(
            f"must be a number of seconds in (0, 3600], got '{echo(raw)}'",
            field="KVPLAN_HUB_TIMEOUT",
            hint="the total time allowed for one file, e.g. 30",
        )
    return timeout


def _settings() -> _Settings:
    raw = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).strip().rstrip("/")
    endpoint, shown, userinfo = _endpoint(raw)
    token = (os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or "").strip() or None
    offline = _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE"))
    return _Settings(endpoint, shown, token, offline, _timeout(os.environ.get("KVPLAN_HUB_TIMEOUT")), userinfo, raw)


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
    return InputError(
        f"cannot fetch {model_id} {fname}: offline (HF_HUB_OFFLINE=1) and not in the cache",
        field=_FIELD,
        hint="pass a config.json path, or unset HF_HUB_OFFLINE once online",
    )


def _http_error(model_id: str, fname: str, status: int, code: str | None, s: _Settings) -> Exception:
    """Map a hub HTTP answer to kvplan's message (X-Error-Code as the Hub sends it: RepoNotFound, GatedRepo,
    EntryNotFound, RevisionNotFound)."""
    if code == "EntryNotFound":
        return _Absent(fname)
    if code == "RevisionNotFound":
        return InputError(f"{model_id} has no revision '{REVISION}'", field=_FIELD)
    if code == "GatedRepo" or (status in (401, 403) and code != "RepoNotFound"):
        if s.token:
            return InputError(
                f"cannot fetch {model_id}: HF_TOKEN was refused (HTTP {status}), the model is gated or private",
                field=_FIELD,
                hint="accept the model's terms on its Hugging Face page with this account, or use a "
                "token with read access",
            )
        return InputError(
            f"cannot fetch {model_id}: access denied (HTTP {status}), the model is gated or private",
            field=_FIELD,
            hint="set HF_TOKEN to a token that has access to it",
        )
    if code == "RepoNotFound" or status == 404:
        hint = "check the id (org/name, as on the model page)" + (
            "" if s.token else "; a private model also needs HF_TOKEN"
        )
        return InputError(f"no such model '{model_id}' on {s.shown} (HTTP {status})", field=_FIELD, hint=hint)
    if status >= 500 or status == 429:
        return _Unreachable(f"{s.shown} answered HTTP {status}", "retry later, or pass a config.json path")
    return InputError(
        f"cannot fetch {model_id} {fname}: {s.shown} answered HTTP {status}",
        field=_FIELD,
        hint="pass a config.json path",
    )


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


def _timed_out(s: _Settings) -> _Unreachable:
    return _Unreachable(
        f"no answer from {s.shown} within {s.timeout:g} s",
        "retry, raise KVPLAN_HUB_TIMEOUT (the total seconds for one file), or pass a config.json path",
    )


def _unreachable(exc: BaseException, s: _Settings) -> _Unreachable:
    if _is_timeout(exc):
        return _timed_out(s)
    reason = getattr(exc, "reason", None) or exc
    text = mask_secrets(echo(" ".join(str(reason).split()), 120)) or type(exc).__name__
    return _Unreachable(
        f"cannot reach {s.shown} ({text})",
        "check the network or HF_ENDPOINT, set HF_HUB_OFFLINE=1 to use the cache, or pass a config.json path",
    )


class _TooLarge(Exception):
    """The hub announced or sent more than MAX_FILE_BYTES for one file."""

    def __init__(self, size: int | None) -> None:
        super().__init__(size)
        self.size = size


class _PastDeadline(Exception):
    """The transfer of one file outlived KVPLAN_HUB_TIMEOUT (raised inside the worker)."""


def _too_large(url: str, fname: str, size: int | None) -> InputError:
    got = f" ({size:,} B)" if size else ""
    return InputError(
        f"{mask_secrets(url)} is larger than {MAX_FILE_BYTES // 2**20} MiB{got}; that is not a {fname}",
        field=_FIELD,
        hint="pass a config.json path",
    )


def _within(seconds: float, fn: Callable[[], _T], s: _Settings) -> _T:
    """``fn()`` in a daemon worker thread, waited for at most ``seconds``: its value, or its exception re-raised
    here, or the "no answer within N s" :class:`_Unreachable` when the deadline passes first (the worker is left to
    stop at its own deadline checks; it writes nothing the caller reads)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=run, name="kvplan-hub-fetch", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        raise _timed_out(s)
    if "error" in box:
        raise box["error"]
    value: _T = box["value"]
    return value


def _left(deadline: float) -> float:
    """Seconds left before ``deadline`` (time.monotonic); _PastDeadline when none."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _PastDeadline()
    return left


def _read_timeout(resp: Any, seconds: float) -> None:
    """Set the socket timeout of an http.client response to ``seconds`` (no-op if the socket is out of reach)."""
    sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
    if sock is not None:
        sock.settimeout(max(seconds, 0.001))


def _read_body(resp: Any, *, deadline: float, url: str, fname: str) -> bytes:
    """The body of ``resp``, at most MAX_FILE_BYTES, by chunks (``read1``: one socket read each), each read's
    timeout the time left; _PastDeadline / _TooLarge as soon as either limit is passed."""
    length = resp.headers.get("Content-Length") if resp.headers is not None else None
    if length and length.strip().isdigit() and int(length) > MAX_FILE_BYTES:
        raise _TooLarge(int(length))
    buf = bytearray()
    while True:
        _read_timeout(resp, _left(deadline))
        chunk = resp.read1(CHUNK_BYTES)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > MAX_FILE_BYTES:
            raise _TooLarge(None)


# ------------------------------------------------------------------------------------------------
# Transports: get(fname) -> (bytes, url, cache path, note) ; raise _Absent / InputError / _Unreachable
# ------------------------------------------------------------------------------------------------


class _NoAuthOffHost(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but never forward the Authorization header to another host (CDN)."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
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
        return p if os.path.lexists(p) else None

    def _headers(self) -> dict[str, str]:
        from kvplan import __version__

        headers = {"User-Agent": f"kvplan/{__version__}", "Accept-Encoding": "identity"}
        if self.s.token:
            headers["Authorization"] = f"Bearer {self.s.token}"
        elif self.s.userinfo:  # http://user:pass@host: Basic auth, as httpx does
            headers["Authorization"] = "Basic " + base64.b64encode(self.s.userinfo.encode()).decode("ascii")
        return headers

    def _fetch(self, fname: str, deadline: float) -> bytes:
        """One GET under the deadline and the size cap (runs in the worker thread)."""
        url = self.url(fname)
        opener = urllib.request.build_opener(_NoAuthOffHost)
        try:
            with opener.open(urllib.request.Request(url, headers=self._headers()), timeout=_left(deadline)) as resp:
                return _read_body(resp, deadline=deadline, url=url, fname=fname)
        except urllib.error.HTTPError as exc:
            code = exc.headers.get("X-Error-Code") if exc.headers is not None else None
            err = _http_error(self.model_id, fname, exc.code, code, self.s)
            exc.close()
            raise err from None
        except (_PastDeadline, _TooLarge):
            raise
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            raise _unreachable(exc, self.s) from None

    def download(self, fname: str) -> tuple[bytes, str]:
        url = self.url(fname)
        deadline = time.monotonic() + self.s.timeout
        try:
            body = _within(self.s.timeout, lambda: self._fetch(fname, deadline), self.s)
        except _PastDeadline:
            raise _timed_out(self.s) from None
        except _TooLarge as exc:
            raise _too_large(url, fname, exc.size) from None
        path = self.folder / fname
        try:  # atomic write; a read-only cache is not an error
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{fname}.")
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.replace(tmp, path)
        except OSError:
            return body, "not cached"
        return body, str(path)

    def _read_cached(self, p: Path) -> bytes:
        return read_bytes(p, field=_FIELD, what=f"a cached {p.name}", max_bytes=MAX_FILE_BYTES)

    def get(self, fname: str) -> tuple[bytes, str, str, str | None]:
        url = self.url(fname)
        marker = self.folder / f".{fname}.absent"  # the hub said 404 EntryNotFound last time
        if self.s.offline:
            p = self.cached(fname)
            if p is None:
                raise _Absent(fname) if marker.is_file() else _OfflineMiss(fname)
            return self._read_cached(p), url, str(p), None
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
            return self._read_cached(p), url, str(p), f"{exc}: using the cached {fname}"


class _OfflineMiss(Exception):
    pass


def _guard(deadline: float) -> type:
    """A ``tqdm_class`` for huggingface_hub's download: silent (no progress bar on stderr), and it stops the
    transfer -- huggingface_hub calls ``update(len(chunk))`` before it writes each chunk -- with _TooLarge once
    more than MAX_FILE_BYTES have come, or _PastDeadline once the deadline has passed (its partial file is
    removed by huggingface_hub)."""

    class _Guard:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.n = 0

        def update(self, n: float | None = 1) -> None:
            self.n += int(n or 0)
            if self.n > MAX_FILE_BYTES:
                raise _TooLarge(None)
            _left(deadline)

        def close(self) -> None:
            pass

        def __enter__(self) -> _Guard:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    return _Guard


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

    def _download(self, fname: str, *, deadline: float) -> str:
        """huggingface_hub's download into its cache, under kvplan's deadline and size cap (worker thread)."""
        kw: dict[str, Any] = dict(
            revision=REVISION,
            cache_dir=self.cache_dir,
            endpoint=self.s.raw_endpoint,
            token=self.s.token,
            etag_timeout=_left(deadline),
        )
        try:
            return str(self.hh.hf_hub_download(self.model_id, fname, tqdm_class=_guard(deadline), **kw))
        except TypeError as exc:  # pragma: no cover - huggingface_hub without tqdm_class (< 0.29): no in-stream stop
            if "tqdm_class" not in str(exc):
                raise
            return str(self.hh.hf_hub_download(self.model_id, fname, **kw))

    def _fetch(self, fname: str, deadline: float) -> str:
        """Metadata first (kvplan's time left, no retries; a size over the cap is refused before any download),
        then the download (worker thread)."""
        url = self.hh.hf_hub_url(self.model_id, fname, revision=REVISION, endpoint=self.s.raw_endpoint)
        kw: dict[str, Any] = dict(token=self.s.token, timeout=_left(deadline))
        try:
            meta = self.hh.get_hf_file_metadata(url, retry_on_errors=False, **kw)
        except TypeError:  # pragma: no cover - older huggingface_hub without retry_on_errors
            meta = self.hh.get_hf_file_metadata(url, **kw)
        size = getattr(meta, "size", None)
        if isinstance(size, int) and size > MAX_FILE_BYTES:
            raise _TooLarge(size)
        return self._download(fname, deadline=deadline)

    def _cached(self, fname: str) -> str | None:
        """The cached file's path; None when not cached; _Absent when the cache knows the hub has no such file."""
        try:
            hit = self.hh.try_to_load_from_cache(self.model_id, fname, cache_dir=self.cache_dir, revision=REVISION)
        except Exception:  # an unreadable cache counts as no cache: the file is fetched instead
            return None
        if isinstance(hit, str):
            return hit
        if hit is not None:  # huggingface_hub's _CACHED_NO_EXIST sentinel
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

    def _online(self, fname: str, url: str) -> tuple[str, str | None]:
        """(path, note) of ``fname`` fetched under the deadline, or the cached copy when the hub is unreachable."""
        deadline = time.monotonic() + self.s.timeout
        try:
            return _within(self.s.timeout, lambda: self._fetch(fname, deadline), self.s), None
        except (TypeError, KeyError, AttributeError, NameError):
            raise  # a kvplan bug (a wrong call into huggingface_hub), not a network answer
        except _TooLarge as exc:
            raise _too_large(url, fname, exc.size) from None
        except _Unreachable as exc:  # the deadline passed (raised by _within)
            err: Exception = exc
        except Exception as exc:  # huggingface_hub's errors (requests / httpx / its own): classified below
            err = _timed_out(self.s) if isinstance(exc, _PastDeadline) else self._classify(exc, fname)
        if isinstance(err, _Absent):
            try:  # let huggingface_hub record the 404 in its cache
                left = max(deadline - time.monotonic(), 0.0)
                _within(left, lambda: self._download(fname, deadline=deadline), self.s)
            except Exception:
                pass
            raise err from None
        if not isinstance(err, _Unreachable):
            raise err from None
        path = self._cached(fname)
        if path is None:
            raise err from None
        return path, f"{err}: using the cached {fname}"

    def get(self, fname: str) -> tuple[bytes, str, str, str | None]:
        try:
            url = self.hh.hf_hub_url(self.model_id, fname, revision=REVISION, endpoint=self.s.endpoint)
        except ValueError as exc:  # huggingface_hub's HFValidationError: not a repo id ('deepseek-ai/DeepSeek-')
            raise InputError(
                f"'{echo(self.model_id)}' is not a Hugging Face model id ({echo(exc, 120)})",
                field="--model",
                hint="run `kvplan models` for the presets",
            ) from None
        note = None
        if self.s.offline:
            path = self._cached(fname)
            if path is None:
                raise _OfflineMiss(fname)
        else:
            path, note = self._online(fname, url)
        # what huggingface_hub wrote (or had cached) is checked before use: a regular file, at most the cap
        data = read_bytes(path, field=_FIELD, what=f"a cached {fname}", max_bytes=MAX_FILE_BYTES)
        return data, url, str(path), note


def _backend(name: str | None) -> type[_UrllibHub] | type[_HfHub]:
    choice = (name or os.environ.get("KVPLAN_HUB_BACKEND") or "").strip().lower()
    if choice in ("", "auto", "huggingface_hub", "hf"):
        try:
            import huggingface_hub  # noqa: F401

            return _HfHub
        except ImportError:
            if choice in ("huggingface_hub", "hf"):
                raise InputError(
                    "huggingface_hub is not installed",
                    field="KVPLAN_HUB_BACKEND",
                    hint="pip install 'kvplan[hub]', or use KVPLAN_HUB_BACKEND=urllib",
                ) from None
            return _UrllibHub
    if choice == "urllib":
        return _UrllibHub
    raise InputError(f"unknown backend '{choice}'", field="KVPLAN_HUB_BACKEND", hint="use huggingface_hub or urllib")


# ------------------------------------------------------------------------------------------------
# Public API
# ------------------------------------------------------------------------------------------------


def _parse_json(data: bytes, model_id: str, fname: str) -> Any:
    return parse_json(
        data,
        field=_FIELD,
        where=f"{fname} of {model_id}",
        hint="pass a config.json path",
        max_elements=max_elements_of(fname),
    )


def fetch_model_files(model_id: str, *, backend: str | None = None) -> dict[str, Any]:
    """Fetch ``config.json`` (+ the safetensors index's ``total_size`` and ``hf_quant_config.json`` when present).

    Returns ``{"config": dict, "total_size": int | None, "hf_quant_config": dict | None,
    "source": "https://.../config.json (cache path)", "backend": "huggingface_hub" | "urllib",
    "notes": [str, ...]}``.  ``backend`` overrides ``KVPLAN_HUB_BACKEND`` (tests).
    """
    model_id = (model_id or "").strip()
    if not is_hub_id(model_id):
        raise InputError(
            f"'{model_id}' is not a Hugging Face model id",
            field=_FIELD,
            hint="write org/name, e.g. Qwen/Qwen3-8B, or pass a config.json path",
        )
    s = _settings()
    hub = _backend(backend)(model_id, s)
    notes: list[str] = []

    def get(fname: str, required: bool) -> tuple[Any, str | None]:
        try:
            data, url, where, note = hub.get(fname)
        except _Absent:
            if required:
                raise InputError(
                    f"{model_id} has no {fname}", field=_FIELD, hint="is it a model repository? pass a config.json path"
                ) from None
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
        return _parse_json(data, model_id, fname), f"{mask_secrets(url)} ({where})"

    config, source = get(CONFIG, True)
    if not isinstance(config, dict):
        raise InputError(f"config.json of {model_id} must hold a JSON object", field=_FIELD)
    total_size = None
    index, _ = get(INDEX, False)
    if isinstance(index, dict):
        t = (index.get("metadata") or {}).get("total_size") if isinstance(index.get("metadata"), dict) else None
        if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < 2**60:
            total_size = int(t)
    hq, _ = get(HF_QUANT, False)
    return {
        "config": config,
        "total_size": total_size,
        "hf_quant_config": hq if isinstance(hq, dict) else None,
        "source": source,
        "backend": hub.name,
        "notes": notes,
    }


def spec_from_hub(model_id: str) -> ModelSpec:
    """A :class:`kvplan.hfconfig.spec.ModelSpec` from the Hub's JSON files (no model code is downloaded or run)."""
    from kvplan.hfconfig.checks import hf_quant_warnings
    from kvplan.hfconfig.spec import quant_from_hf_quant_config, spec_from_config

    files = fetch_model_files(model_id)
    cfg = dict(files["config"])
    quant, kv_algo = quant_from_hf_quant_config(files["hf_quant_config"])
    warnings = tuple(hf_quant_warnings(files["hf_quant_config"]))
    if kv_algo and "kv_cache_quant_algo" not in cfg:
        cfg["kv_cache_quant_algo"] = kv_algo
    notes = [f"config from the Hugging Face Hub: {files['source']}", *files["notes"]]
    if files["total_size"]:
        notes.append(f"weights: model.safetensors.index.json total_size = {files['total_size']:,} B")
    return spec_from_config(
        cfg,
        model_id=model_id.strip(),
        source=f"Hugging Face Hub: {files['source']}",
        quantization=quant,
        checkpoint_bytes=files["total_size"],
        notes=tuple(notes),
        warnings=warnings,
    )
