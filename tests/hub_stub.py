"""A local stand-in for the Hugging Face Hub's file endpoint, for tests (127.0.0.1 only, never the internet).

Serves ``HEAD``/``GET /{org}/{name}/resolve/{revision}/{file}`` the way the Hub answers them:

* 200 with ``ETag``, ``X-Repo-Commit`` (40 hex digits) and ``Content-Length``;
* 404 + ``X-Error-Code: RepoNotFound`` for an unknown repository, 404 + ``EntryNotFound`` for a
  missing file in a known one;
* a gated repository: 401 + ``X-Error-Code: GatedRepo`` without ``Authorization``, 403 with a wrong
  token, 200 with ``Authorization: Bearer <its token>``;
* a slow repository: the answer is held back ``delay`` seconds (timeout tests);
* a moved repository: 302 to another base URL (the token must not follow to another host).

Every request is recorded (method, path, headers with lower-case names) so tests can check what was sent.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]          # names in lower case


@dataclass
class HubStub:
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)    # repo -> {file: body}
    gated: dict[str, str] = field(default_factory=dict)                 # repo -> the token that opens it
    slow: dict[str, float] = field(default_factory=dict)                # repo -> delay (s)
    redirects: dict[str, str] = field(default_factory=dict)             # repo -> base URL it moved to (302)
    requests: list[Recorded] = field(default_factory=list)

    def add(self, repo: str, name: str, body: bytes | str | dict) -> None:
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.files.setdefault(repo, {})[name] = body

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> HubStub:
        stub = self
        self._stop = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_HEAD(self):
                self._guarded(send_body=False)

            def do_GET(self):
                self._guarded(send_body=True)

            def _guarded(self, send_body: bool) -> None:
                try:
                    self._answer(send_body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    self.close_connection = True

            def _send(self, status: int, headers: dict[str, str], body: bytes, send_body: bool) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def _answer(self, send_body: bool) -> None:
                stub.requests.append(Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                parts = self.path.split("?")[0].strip("/").split("/")
                if len(parts) < 5 or parts[2] != "resolve":
                    return self._send(404, {"X-Error-Code": "RepoNotFound"}, b"not found", send_body)
                repo, fname = f"{parts[0]}/{parts[1]}", "/".join(parts[4:])
                target = stub.redirects.get(repo)
                if target and target.split("//", 1)[1] != self.headers.get("Host"):
                    return self._send(302, {"Location": stub.redirects[repo] + self.path}, b"", send_body)
                delay = stub.slow.get(repo)
                if delay:
                    stub._stop.wait(delay)
                if repo in stub.gated:
                    auth = self.headers.get("Authorization")
                    if auth is None:
                        return self._send(401, {"X-Error-Code": "GatedRepo"}, b"gated", send_body)
                    if auth != f"Bearer {stub.gated[repo]}":
                        return self._send(403, {"X-Error-Code": "GatedRepo"}, b"forbidden", send_body)
                if repo not in stub.files:
                    return self._send(404, {"X-Error-Code": "RepoNotFound"}, b"no repo", send_body)
                body = stub.files[repo].get(fname)
                if body is None:
                    return self._send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT},
                                      b"no entry", send_body)
                etag = '"' + hashlib.sha1(body).hexdigest() + '"'
                return self._send(200, {"ETag": etag, "X-Repo-Commit": COMMIT,
                                        "Content-Type": "application/json"}, body, send_body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
