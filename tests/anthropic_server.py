"""A real local HTTP server that speaks enough of the Anthropic Messages API for tests.

`POST /v1/messages` records the request (headers and JSON body) and answers with the next queued
reply, or the default one: a `tool_use` block calling `record_session_digest`. Replies can be an
error status (500, 529, ...), a malformed tool input, or a slow answer (for client timeouts).
A request with `"stream": true` gets the same message as server-sent events (message_start,
content blocks with text and input_json deltas, message_delta, message_stop), which is what the
real Claude Code CLI asks for. `responder` replaces the queue with a function of the request,
which is how a scripted agent session (tests/claude_code.py) answers turn by turn.
`script()` queues a conversation for the `anthropic` SDK's tool runner: turns of scripted tool
calls (the memory tool's commands, say), then a closing text; `tool_results()` reads back what
the client sent for each call.
Nothing here talks to the internet: point the SDK at `server.url` with ANTHROPIC_BASE_URL.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DEFAULT_DIGEST: dict[str, Any] = {
    "title": "CSV parser last-row fix",
    "description": "Fixed the CSV parser dropping the final row and added a regression test.",
    "arcs": [
        "Found that read_rows exits before flushing the final buffer.",
        "Fixed it in csvparse.py and added test_no_trailing_newline; 12 tests pass.",
    ],
    "relational_notes": ["Sam was pleased with the quick turnaround."],
    "open_threads": ["strict mode left unchanged on purpose."],
    "commitments": [
        {"text": "Benchmark the parser on the 2 GB export.", "status": "open"},
        {"text": "Add a regression test for the missing last row.", "status": "delivered"},
    ],
    "carry_forward": ["Discuss the streaming API: Sam asked to talk about it next time."],
    "duration": "about 9 minutes",
}


@dataclass
class Reply:
    """One answer: an HTTP status and JSON body, after an optional delay."""

    status: int = 200
    body: Any = None  # a dict (sent as JSON) or raw bytes
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    before: Callable[[], None] | None = None  # runs in the server before answering (a barrier)


def tool_use_message(tool_input: Any, name: str = "record_session_digest") -> dict[str, Any]:
    return message([{"type": "tool_use", "id": "toolu_test_01", "name": name, "input": tool_input}])


def message(content: list[dict[str, Any]], model: str = "claude-test") -> dict[str, Any]:
    """An assistant message with these content blocks; stop_reason follows from them."""
    uses_tool = any(block.get("type") == "tool_use" for block in content)
    return {
        "id": "msg_test_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if uses_tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 50},
    }


def text_message(text: str) -> dict[str, Any]:
    return message([{"type": "text", "text": text}])


_TOOL_IDS = itertools.count(1)


def tool_calls_message(*calls: dict[str, Any], name: str = "memory") -> dict[str, Any]:
    """An assistant turn calling tool `name` once per input in `calls`, with unique ids."""
    return message(
        [
            {"type": "tool_use", "id": f"toolu_{next(_TOOL_IDS):06d}", "name": name, "input": c}
            for c in calls
        ]
    )


def sse_events(msg: dict[str, Any]) -> bytes:
    """The message as the streaming Messages API sends it."""
    out: list[tuple[str, dict[str, Any]]] = []
    start = {**msg, "content": [], "stop_reason": None}
    out.append(("message_start", {"type": "message_start", "message": start}))
    for i, block in enumerate(msg.get("content", [])):
        if block.get("type") == "tool_use":
            empty = {**block, "input": {}}
            out.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": empty},
                )
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            out.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            delta = {"type": "text_delta", "text": block.get("text", "")}
        out.append(
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
        )
        out.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": msg.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": 50},
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in out)


def error_body(status: int) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 529: "overloaded_error"}
    kind = kinds.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"test server says {kind}"}}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


class AnthropicServer:
    """Start with `start()`; `url` is the base URL (http://127.0.0.1:PORT)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.queue: list[Reply] = []
        self.default = Reply(200, tool_use_message(copy.deepcopy(DEFAULT_DIGEST)))
        self.responder: Callable[[Any], Reply] | None = None
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- configuring replies ----------------------------------------------------------------

    def reply(self, reply: Reply) -> None:
        """Queue one reply; when the queue is empty, the default answers."""
        with self._lock:
            self.queue.append(reply)

    def set_default(self, reply: Reply) -> None:
        self.default = reply

    def digest(self, **changes: Any) -> None:
        """Answer every request with the default digest, `changes` applied."""
        self.default = Reply(200, tool_use_message({**copy.deepcopy(DEFAULT_DIGEST), **changes}))

    def error(self, status: int, retry: bool = False) -> None:
        """Answer every request with an API error (no retries unless `retry`)."""
        headers = {"x-should-retry": "true" if retry else "false", "retry-after-ms": "10"}
        self.default = Reply(status, error_body(status), headers=headers)

    def malformed(self, tool_input: Any = "not an object") -> None:
        self.default = Reply(200, tool_use_message(tool_input))

    def slow(self, seconds: float) -> None:
        self.default = Reply(200, tool_use_message(copy.deepcopy(DEFAULT_DIGEST)), delay=seconds)

    def script(self, *turns: list[dict[str, Any]] | Reply, closing: str = "Done.") -> None:
        """Queue one assistant turn per item (a list of tool inputs, or a ready Reply), then a
        closing text turn."""
        for turn in turns:
            self.reply(turn if isinstance(turn, Reply) else Reply(200, tool_calls_message(*turn)))
        self.reply(Reply(200, text_message(closing)))

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the client sent, in order (each request repeats the
        conversation so far; a result is counted once)."""
        results: list[dict[str, Any]] = []
        seen: set[str] = set()
        for request in self.requests:
            for turn in (request.body or {}).get("messages", []):
                content = turn.get("content")
                if turn.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if block.get("type") == "tool_result" and block["tool_use_id"] not in seen:
                        seen.add(block["tool_use_id"])
                        results.append(block)
        return results

    def _next(self, body: Any) -> Reply:
        with self._lock:
            if self.responder is not None:
                return self.responder(body)
            return self.queue.pop(0) if self.queue else self.default

    # --- running --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def last(self) -> Recorded:
        assert self.requests, "the server received no request"
        return self.requests[-1]

    def start(self) -> AnthropicServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with server._lock:
                    server.requests.append(
                        Recorded("POST", self.path, dict(self.headers.items()), body, raw)
                    )
                if self.path.split("?")[0] != "/v1/messages":
                    self._send(Reply(404, error_body(404)))
                    return
                stream = isinstance(body, dict) and body.get("stream") is True
                self._send(server._next(body), stream)

            def _send(self, reply: Reply, stream: bool = False) -> None:
                if reply.before is not None:
                    reply.before()
                if reply.delay:
                    time.sleep(reply.delay)
                sse = stream and reply.status == 200 and isinstance(reply.body, dict)
                if sse:
                    data = sse_events(reply.body)
                elif isinstance(reply.body, bytes):
                    data = reply.body
                else:
                    data = json.dumps(reply.body).encode()
                kind = "text/event-stream" if sse else "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", "req_test")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


@pytest.fixture(name="anthropic_server")
def anthropic_server_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    """A started server; ANTHROPIC_BASE_URL and a fake ANTHROPIC_API_KEY point the SDK at it."""
    server = AnthropicServer().start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    try:
        yield server
    finally:
        server.stop()
