"""A real local HTTP server that speaks the part of Anthropic's memory-store API memsync uses.

Built from the published API reference and the `anthropic` SDK's own models (docs/memstore.md
lists which rules come from where and which are assumptions):

- `GET /v1/memory_stores/{store}`: the store (404 `not_found_error` for an unknown id).
- `POST /v1/memory_stores/{store}/memories`: create. 409 `memory_path_conflict_error` when the
  path, or an ancestor or descendant of it, is taken; 400 `invalid_request_error` for a path
  outside the rules (starts with `/`, 1-20 segments, none empty, `.` or `..`, no control or
  format characters or U+2028/U+2029, NFC, at most 1,024 bytes) or content over 102,400 bytes.
- `GET .../memories`: paged listing (`limit` 1-100, default 20, at most 20 with `view=full`;
  an opaque `next_page` cursor), `path_prefix` (must end with `/`, whole segments), `depth=1`
  (deeper memories as `memory_prefix` items), `view` (`basic`: `content` null).
- `GET/POST/DELETE .../memories/{id}`: retrieve (view `full` by default), update with a
  `content_sha256` precondition (409 `memory_precondition_failed_error` on a mismatch, except
  that content and path already as requested answer 200; an update that changes nothing adds no
  version), delete with `expected_content_sha256` (409 on a mismatch, 404 when gone).
- `GET .../memory_versions` (filters `memory_id` and `operation`, paged, newest first), `GET
  .../memory_versions/{id}`, `POST .../memory_versions/{id}/redact` (content, path, size and
  hash become null, `redacted_at` set).

Every request must carry the key (`Authorization: Bearer`, as SDK 2.14 sends it, or
`x-api-key`; else 401) and exactly the beta `agent-memory-2026-07-22`
(sent with `managed-agents-2026-04-01` as well, the API answers 400). Errors are
`{"type": "error", "error": {"type", "message"}, "request_id"}`. `fail_next` queues canned
failures (a 500, a 429, a slow answer) for fault tests. Nothing here talks to the internet.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import itertools
import json
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

BETA = "agent-memory-2026-07-22"
MAX_CONTENT = 102_400
MAX_SEGMENTS = 20
MAX_PATH_BYTES = 1024


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def path_problem(path: object) -> str | None:
    """Why the service refuses `path`, or None (the reference's rules)."""
    if not isinstance(path, str) or not path.startswith("/"):
        return "a path starts with /"
    segments = path[1:].split("/")
    if not 1 <= len(segments) <= MAX_SEGMENTS:
        return f"a path has 1 to {MAX_SEGMENTS} segments"
    if any(s in ("", ".", "..") for s in segments):
        return "a segment can't be empty, . or .."
    if any(unicodedata.category(c) in ("Cc", "Cf") or c in "\u2028\u2029" for c in path):
        return "a path can't contain control or format characters"
    if unicodedata.normalize("NFC", path) != path:
        return "a path must be in Unicode Normalization Form C"
    if len(path.encode()) > MAX_PATH_BYTES:
        return f"a path is at most {MAX_PATH_BYTES} bytes"
    return None


@dataclass
class Memory:
    id: str
    path: str
    content: str
    created_at: str
    updated_at: str
    version_id: str


@dataclass
class Version:
    id: str
    memory_id: str
    operation: str
    created_at: str
    path: str | None
    content: str | None
    redacted_at: str | None = None


@dataclass
class StoreState:
    id: str
    memories: dict[str, Memory] = field(default_factory=dict)
    versions: list[Version] = field(default_factory=list)  # oldest first


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Failure:
    """A canned answer for the next matching request (fault tests)."""

    status: int
    kind: str = "api_error"
    delay: float = 0.0
    method: str | None = None  # only requests with this method
    retry_after_ms: int | None = None  # sent as `retry-after-ms`, which the SDK's back-off honours


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.kind, self.extra = status, kind, extra


class MemoryStoreServer:
    """Start with `start()`; `url` is the base URL for the SDK (`base_url`)."""

    def __init__(self, api_key: str = "test-key-not-real") -> None:
        self.api_key = api_key
        self.stores: dict[str, StoreState] = {}
        self.requests: list[Recorded] = []
        self.failures: list[Failure] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # --- the test's side -----------------------------------------------------------------

    def reset(self) -> None:
        """Back to no stores, no requests and no queued failures: one server serves a
        module's tests, each starting from this."""
        with self._lock:
            self.stores.clear()
            self.requests.clear()
            self.failures.clear()

    def add_store(self, store_id: str = "memstore_test01") -> str:
        with self._lock:
            self.stores.setdefault(store_id, StoreState(store_id))
        return store_id

    def fail_next(self, *failures: Failure) -> None:
        with self._lock:
            self.failures.extend(failures)

    def contents(self, store_id: str) -> dict[str, str]:
        """Path -> content of every live memory."""
        with self._lock:
            return {m.path: m.content for m in self.stores[store_id].memories.values()}

    def versions(self, store_id: str) -> list[Version]:
        with self._lock:
            return list(self.stores[store_id].versions)

    def put(self, store_id: str, path: str, content: str) -> None:
        """Write as another client of the store would (a cloud agent), bypassing the API."""
        with self._lock:
            state = self.stores[store_id]
            found = next((m for m in state.memories.values() if m.path == path), None)
            if found is None:
                self._create(state, path, content)
            else:
                self._write(state, found, content, found.path)

    # --- the service ---------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):08d}{base64.b32encode(b'fake').decode().lower()}"

    def _memory_json(self, m: Memory, full: bool) -> dict[str, Any]:
        return {
            "type": "memory",
            "id": m.id,
            "memory_store_id": self._store_of(m),
            "path": m.path,
            "content": m.content if full else None,
            "content_sha256": sha(m.content),
            "content_size_bytes": len(m.content.encode()),
            "memory_version_id": m.version_id,
            "created_at": m.created_at,
            "updated_at": m.updated_at,
        }

    def _store_of(self, m: Memory) -> str:
        return next(s.id for s in self.stores.values() if s.memories.get(m.id) is m)

    def _version_json(self, state: StoreState, v: Version, full: bool) -> dict[str, Any]:
        live = v.redacted_at is None and v.operation != "deleted" and v.content is not None
        return {
            "type": "memory_version",
            "id": v.id,
            "memory_id": v.memory_id,
            "memory_store_id": state.id,
            "operation": v.operation,
            "created_at": v.created_at,
            "path": v.path,
            "content": v.content if (live and full) else None,
            "content_sha256": sha(v.content) if live and v.content is not None else None,
            "content_size_bytes": len(v.content.encode())
            if live and v.content
            else (0 if live else None),
            "created_by": {"type": "api_actor", "api_key_id": "apikey_test"},
            "redacted_at": v.redacted_at,
            "redacted_by": {"type": "api_actor", "api_key_id": "apikey_test"}
            if v.redacted_at
            else None,
        }

    def _add_version(self, state: StoreState, m: Memory, op: str, content: str | None) -> None:
        v = Version(self._id("memver"), m.id, op, _now(), m.path, content)
        state.versions.append(v)
        m.version_id = v.id

    def _conflict(self, state: StoreState, path: str, skip: str | None = None) -> Memory | None:
        for m in state.memories.values():
            if m.id == skip:
                continue
            if m.path == path or m.path.startswith(path + "/") or path.startswith(m.path + "/"):
                return m
        return None

    def _create(self, state: StoreState, path: str, content: str) -> Memory:
        now = _now()
        m = Memory(self._id("mem"), path, content, now, now, "")
        state.memories[m.id] = m
        self._add_version(state, m, "created", content)
        return m

    def _write(self, state: StoreState, m: Memory, content: str, path: str) -> None:
        if content == m.content and path == m.path:
            return  # nothing changes: no new version
        m.content, m.path, m.updated_at = content, path, _now()
        self._add_version(state, m, "modified", content)

    def _check_content(self, content: object) -> str:
        if not isinstance(content, str):
            raise ApiError(400, "invalid_request_error", "content: a string is required")
        if len(content.encode()) > MAX_CONTENT:
            raise ApiError(400, "invalid_request_error", f"content: at most {MAX_CONTENT} bytes")
        return content

    def _check_path(self, path: object) -> str:
        problem = path_problem(path)
        if problem:
            raise ApiError(400, "invalid_request_error", f"path: {problem}")
        assert isinstance(path, str)
        return path

    def _page(
        self, items: list[Any], query: dict[str, list[str]], full: bool
    ) -> tuple[list, str | None]:
        limit = int(query.get("limit", ["20"])[0])
        if not 1 <= limit <= 100:
            raise ApiError(400, "invalid_request_error", "limit: from 1 to 100")
        if full:
            limit = min(limit, 20)
        start = 0
        if "page" in query:
            try:
                start = int(base64.urlsafe_b64decode(query["page"][0].encode()).decode())
            except ValueError:
                raise ApiError(400, "invalid_request_error", "page: not a cursor") from None
        chunk = items[start : start + limit]
        more = start + limit < len(items)
        cursor = base64.urlsafe_b64encode(str(start + limit).encode()).decode() if more else None
        return chunk, cursor

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] != ["v1", "memory_stores"] or len(parts) < 3:
            raise ApiError(404, "not_found_error", "no such endpoint")
        state = self.stores.get(parts[2])
        if state is None:
            raise ApiError(404, "not_found_error", f"memory store {parts[2]} not found")
        rest = parts[3:]
        view = query.get("view", [None])[0]
        if not rest and method == "GET":
            now = _now()
            return {
                "type": "memory_store",
                "id": state.id,
                "name": "test store",
                "description": "",
                "metadata": {},
                "created_at": now,
                "updated_at": now,
                "archived_at": None,
            }
        if rest == ["memories"] and method == "POST":
            if not isinstance(body, dict):
                raise ApiError(400, "invalid_request_error", "a JSON object is required")
            mpath = self._check_path(body.get("path"))
            content = self._check_content(body.get("content"))
            taken = self._conflict(state, mpath)
            if taken is not None:
                raise ApiError(
                    409,
                    "memory_path_conflict_error",
                    f"path {mpath} is taken",
                    conflicting_path=taken.path,
                    conflicting_memory_id=taken.id,
                )
            return self._memory_json(self._create(state, mpath, content), view == "full")
        if rest == ["memories"] and method == "GET":
            return self._list(state, query, view == "full")
        if len(rest) == 2 and rest[0] == "memories":
            m = state.memories.get(rest[1])
            if m is None:
                raise ApiError(404, "not_found_error", f"memory {rest[1]} not found")
            if method == "GET":
                return self._memory_json(m, view != "basic")
            if method == "POST":
                return self._update(state, m, body, view == "full")
            if method == "DELETE":
                expected = query.get("expected_content_sha256", [None])[0]
                if expected is not None and expected != sha(m.content):
                    raise ApiError(
                        409,
                        "memory_precondition_failed_error",
                        "the memory's content_sha256 does not match",
                    )
                del state.memories[m.id]
                m.content, m.updated_at = m.content, _now()
                self._add_version(state, m, "deleted", None)
                return {"type": "memory_deleted", "id": m.id}
        if rest == ["memory_versions"] and method == "GET":
            wanted = query.get("memory_id", [None])[0]
            operation = query.get("operation", [None])[0]
            items = [
                v
                for v in reversed(state.versions)
                if wanted in (None, v.memory_id) and operation in (None, v.operation)
            ]
            chunk, cursor = self._page(items, query, view == "full")
            data = [self._version_json(state, v, view == "full") for v in chunk]
            return {"data": data, "next_page": cursor}
        if len(rest) >= 2 and rest[0] == "memory_versions":
            v = next((v for v in state.versions if v.id == rest[1]), None)
            if v is None:
                raise ApiError(404, "not_found_error", f"memory version {rest[1]} not found")
            if len(rest) == 2 and method == "GET":
                return self._version_json(state, v, view != "basic")
            if rest[2:] == ["redact"] and method == "POST":
                live = state.memories.get(v.memory_id)
                if live is not None and live.version_id == v.id:
                    raise ApiError(
                        409,
                        "conflict_error",
                        "the current version of a memory cannot be redacted; update or "
                        "delete the memory first",
                    )
                if v.redacted_at is None:
                    v.redacted_at, v.content, v.path = _now(), None, None
                return self._version_json(state, v, False)
        raise ApiError(404, "not_found_error", "no such endpoint")

    def _list(self, state: StoreState, query: dict[str, list[str]], full: bool) -> Any:
        prefix = query.get("path_prefix", ["/"])[0]
        if not prefix.startswith("/") or not prefix.endswith("/"):
            raise ApiError(400, "invalid_request_error", "path_prefix: must end with /")
        depth = int(query.get("depth", ["0"])[0])
        items: list[tuple[str, Memory | None]] = []
        seen: set[str] = set()
        for m in sorted(state.memories.values(), key=lambda m: m.path):
            if not m.path.startswith(prefix):
                continue
            below = m.path[len(prefix) :].split("/")
            if depth and len(below) > depth:
                rolled = prefix + "/".join(below[:depth]) + "/"
                if rolled not in seen:
                    seen.add(rolled)
                    items.append((rolled, None))
                continue
            items.append((m.path, m))
        chunk, cursor = self._page(items, query, full)
        data = [
            self._memory_json(m, full) if m is not None else {"type": "memory_prefix", "path": p}
            for p, m in chunk
        ]
        return {"data": data, "next_page": cursor}

    def _update(self, state: StoreState, m: Memory, body: Any, full: bool) -> Any:
        if not isinstance(body, dict):
            raise ApiError(400, "invalid_request_error", "a JSON object is required")
        content = m.content if body.get("content") is None else self._check_content(body["content"])
        new_path = m.path if body.get("path") is None else self._check_path(body["path"])
        pre = body.get("precondition")
        if pre is not None:
            if not isinstance(pre, dict) or pre.get("type") != "content_sha256":
                raise ApiError(400, "invalid_request_error", "precondition: unknown type")
            if pre.get("content_sha256") != sha(m.content):
                if content == m.content and new_path == m.path:
                    return self._memory_json(m, full)  # already as asked: 200, not 409
                raise ApiError(
                    409,
                    "memory_precondition_failed_error",
                    "the memory's content_sha256 does not match the precondition",
                )
        if new_path != m.path:
            taken = self._conflict(state, new_path, skip=m.id)
            if taken is not None:
                raise ApiError(
                    409,
                    "memory_path_conflict_error",
                    f"path {new_path} is taken",
                    conflicting_path=taken.path,
                    conflicting_memory_id=taken.id,
                )
        self._write(state, m, content, new_path)
        return self._memory_json(m, full)

    # --- running -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def _serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        query = parse_qs(parts.query)
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(Recorded(method, parts.path, query, headers, body))
            failure = next((f for f in self.failures if f.method in (None, method)), None)
            if failure is not None:
                self.failures.remove(failure)
        if failure is not None:
            time.sleep(failure.delay)
            extra = {}
            if failure.retry_after_ms is not None:
                extra["retry-after-ms"] = str(failure.retry_after_ms)
            self._send(handler, failure.status, _error(failure.kind, "test server fault"), extra)
            return
        status, answer = 200, None
        try:
            key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix(
                "Bearer "
            )
            if key != self.api_key:
                raise ApiError(401, "authentication_error", "invalid API key")
            betas = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
            if BETA not in betas or "managed-agents-2026-04-01" in betas:
                raise ApiError(400, "invalid_request_error", f"send the beta header {BETA} (alone)")
            with self._lock:
                answer = self.handle(method, parts.path, query, body)
        except ApiError as exc:
            status, answer = exc.status, _error(exc.kind, str(exc), **exc.extra)
        self._send(handler, status, answer)

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        answer: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(answer).encode()
        try:
            handler.send_response(status)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.send_header("request-id", "req_memstore_test")
            if status == 409:
                handler.send_header("x-should-retry", "false")
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def start(self) -> MemoryStoreServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._serve(self, "GET")

            def do_POST(self) -> None:
                server._serve(self, "POST")

            def do_DELETE(self) -> None:
                server._serve(self, "DELETE")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def _error(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": kind, "message": message, **extra},
        "request_id": "req_memstore_test",
    }


_shared: MemoryStoreServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> MemoryStoreServer:
    """The one server of this test process, started at its first use and stopped at exit;
    each test empties it (`memstore_server`)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MemoryStoreServer().start()
            atexit.register(_shared.stop)
        return _shared


@pytest.fixture(name="memstore_server")
def memstore_server_fixture(monkeypatch: pytest.MonkeyPatch) -> MemoryStoreServer:
    """The shared server, emptied, with one store; ANTHROPIC_BASE_URL and a fake
    ANTHROPIC_API_KEY point the SDK at it."""
    server = shared_server()
    server.reset()
    server.add_store()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return server
