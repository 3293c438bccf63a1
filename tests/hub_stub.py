"""A local stand-in for the Hugging Face Hub's file endpoint, for tests (127.0.0.1 only, never the internet).

Serves ``HEAD``/``GET /{org}/{name}/resolve/{revision}/{file}`` the way the Hub answers them:

* 200 with ``ETag``, ``X-Repo-Commit`` (40 hex digits) and ``Content-Length``;
* 404 + ``X-Error-Code: RepoNotFound`` for an unknown repository, 404 + ``EntryNotFound`` for a
  missing file in a known one;
* a gated repository: 401 + ``X-Error-Code: GatedRepo`` without ``Authorization``, 403 with a wrong
  token, 200 with ``Authorization: Bearer <its token>``;
* a slow repository: the answer is held back ``delay`` seconds (timeout tests);
* a trickling repository: GET sends the headers at once, then the body one byte every ``interval`` seconds (the
  total-deadline tests; HEAD answers at once);
* a huge repository: a file of ``size`` bytes (spaces, generated while sent), announced in ``Content-Length``
  or sent chunked without it; ``sent[repo]`` counts the body bytes written (the size-cap tests);
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
    headers: dict[str, str]  # names in lower case


@dataclass
class HubStub:
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)  # repo -> {file: body}
    gated: dict[str, str] = field(default_factory=dict)  # repo -> the token that opens it
    slow: dict[str, float] = field(default_factory=dict)  # repo -> delay (s)
    redirects: dict[str, str] = field(default_factory=dict)  # repo -> base URL it moved to (302)
    trickle: dict[str, float] = field(default_factory=dict)  # repo -> seconds between body bytes
    huge: dict[str, tuple[int, bool]] = field(default_factory=dict)  # repo -> (size, announced in Content-Length)
    sent: dict[str, int] = field(default_factory=dict)  # repo -> body bytes written (huge, trickle)
    requests: list[Recorded] = field(default_factory=list)

    def add(self, repo: str, name: str, body: bytes | str | dict) -> None:
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.files.setdefault(repo, {})[name] = body

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> HubStub:
        self._stop = threading.Event()
        handler = type("Handler", (_Handler,), {"stub": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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


class _Handler(BaseHTTPRequestHandler):
    """Answers as the Hub does; ``stub`` (the HubStub) is set on the subclass made by HubStub.start."""

    stub: HubStub
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

    def _huge(self, repo: str, send_body: bool) -> None:
        size, announced = self.stub.huge[repo]
        self.send_response(200)
        self.send_header("ETag", f'"huge-{size}"')
        self.send_header("X-Repo-Commit", COMMIT)
        if announced:
            self.send_header("Content-Length", str(size))
        elif send_body:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if not send_body:
            return
        block, left = b" " * 65536, size
        while left > 0 and not self.stub._stop.is_set():
            part = block[:left]
            self.wfile.write(part if announced else b"%x\r\n%s\r\n" % (len(part), part))
            self.stub.sent[repo] = self.stub.sent.get(repo, 0) + len(part)
            left -= len(part)
        if not announced:
            self.wfile.write(b"0\r\n\r\n")

    def _trickle(self, repo: str, body: bytes, send_body: bool) -> None:
        self.send_response(200)
        for k, v in {
            "ETag": '"' + hashlib.sha1(body).hexdigest() + '"',
            "X-Repo-Commit": COMMIT,
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
        }.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        for i in range(len(body) if send_body else 0):
            if self.stub._stop.wait(self.stub.trickle.get(repo, 0)) or repo not in self.stub.trickle:
                self.close_connection = True
                return  # released (test over): drop the connection
            self.wfile.write(body[i : i + 1])
            self.wfile.flush()
            self.stub.sent[repo] = self.stub.sent.get(repo, 0) + 1

    def _answer(self, send_body: bool) -> None:
        self.stub.requests.append(Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return self._send(404, {"X-Error-Code": "RepoNotFound"}, b"not found", send_body)
        repo, fname = f"{parts[0]}/{parts[1]}", "/".join(parts[4:])
        target = self.stub.redirects.get(repo)
        if target and target.split("//", 1)[1] != self.headers.get("Host"):
            return self._send(302, {"Location": self.stub.redirects[repo] + self.path}, b"", send_body)
        delay = self.stub.slow.get(repo)
        if delay:
            self.stub._stop.wait(delay)
        if repo in self.stub.gated:
            auth = self.headers.get("Authorization")
            if auth is None:
                return self._send(401, {"X-Error-Code": "GatedRepo"}, b"gated", send_body)
            if auth != f"Bearer {self.stub.gated[repo]}":
                return self._send(403, {"X-Error-Code": "GatedRepo"}, b"forbidden", send_body)
        if repo not in self.stub.files and repo not in self.stub.huge:
            return self._send(404, {"X-Error-Code": "RepoNotFound"}, b"no repo", send_body)
        if repo in self.stub.huge:
            return self._huge(repo, send_body)
        body = self.stub.files[repo].get(fname)
        if body is not None and repo in self.stub.trickle and fname == "config.json":
            return self._trickle(repo, body, send_body)
        if body is None:
            return self._send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}, b"no entry", send_body)
        etag = '"' + hashlib.sha1(body).hexdigest() + '"'
        return self._send(
            200, {"ETag": etag, "X-Repo-Commit": COMMIT, "Content-Type": "application/json"}, body, send_body
        )
