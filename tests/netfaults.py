"""A loopback HTTP proxy in front of Azurite (or the fake memory-store server) that adds a
fixed round trip and injects the faults a real network and real middleboxes produce, for the
tests (Azure, the memory store) and for scripts/bench.py's WAN mode. It serves as a forward
proxy too (HTTP_PROXY / HTTPS_PROXY pointing at it): an absolute-form request goes to Azurite
like any other, and CONNECT opens a tunnel to the host asked for (counted in `tunnels`), with
no faults in it.

Requests are parsed by http.server and forwarded by http.client on one upstream connection
per client connection, with their headers untouched (Shared Key signatures stay valid). An
armed fault fires on the next answer whose "METHOD path" matches its pattern:

- "cut": the body without Content-Length, half of it, then the connection closes;
- "cut-length": Content-Length as sent, half the body, then close;
- "lie": Content-Length rewritten to half, and half the body sent (a consistent, wrong answer);
- "stall": the head and nothing more, until the proxy stops;
- "trickle": the body at 16 bytes a second;
- "reset": the connection reset (RST) instead of an answer;
- "429" / "503": that status with `Retry-After: 1`, not forwarded;
- "garble": the body's first byte changed (same length).
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULTS = ("cut", "cut-length", "lie", "stall", "trickle", "reset", "429", "503", "garble")
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


class Fault:
    def __init__(self, kind: str, pattern: str, times: int) -> None:
        assert kind in FAULTS, kind
        self.kind, self.pattern, self.left = kind, re.compile(pattern), times


class _QuietServer(ThreadingHTTPServer):
    # a real service's backlog: with socketserver's 5, 100 clients connecting at once had
    # their SYNs dropped and retried a second later, which no network here adds
    request_queue_size = 1024

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client that left is no news


class FaultProxy:
    """`url_for(azurite_url)` is the same remote through the proxy."""

    def __init__(self, upstream_port: int, rtt: float = 0.0) -> None:
        self.upstream_port = upstream_port
        self.rtt = rtt
        self.faults: list[Fault] = []
        self.fired: list[tuple[str, str]] = []
        self.requests: list[str] = []
        # ("in", line) when a request has arrived, ("out", line) when its answer has gone: the
        # order in which requests overlapped, with no clock read
        self.events: list[tuple[str, str]] = []
        self.connections = 0
        self.forwarded = 0  # absolute-form requests: the client took this for its proxy
        self.tunnels = 0
        self.strip: set[str] = set()  # answer headers to drop (lower case), e.g. content-md5
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self.httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url_for(self, url: str) -> str:
        return re.sub(r"//127\.0\.0\.1:\d+", f"//127.0.0.1:{self.port}", url, count=1)

    def arm(self, kind: str, pattern: str = r"^GET .*\.md(\?|$)", times: int = 1) -> None:
        with self._lock:
            self.faults.append(Fault(kind, pattern, times))

    def disarm(self) -> None:
        with self._lock:
            self.faults.clear()

    def _take(self, line: str) -> str | None:
        with self._lock:
            for fault in self.faults:
                if fault.left and fault.pattern.search(line):
                    fault.left -= 1
                    self.fired.append((fault.kind, line))
                    return fault.kind
        return None

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY, as real services and clients set it: an answer goes out as its
            # head and then its body, and with Nagle's algorithm the body waited for the
            # client's delayed ACK of the head, adding ~40 ms to every request
            disable_nagle_algorithm = True
            upstream: http.client.HTTPConnection | None = None
            head_length = 0

            def setup(self) -> None:
                with proxy._lock:
                    proxy.connections += 1
                if proxy.rtt:
                    time.sleep(proxy.rtt)  # the TCP handshake's round trip
                super().setup()

            def log_message(self, *args: object) -> None:
                pass

            def handle_one(self) -> None:
                if self.path.startswith("http://"):
                    parts = urlsplit(self.path)
                    self.path = parts.path + (f"?{parts.query}" if parts.query else "")
                    with proxy._lock:
                        proxy.forwarded += 1
                line = f"{self.command} {self.path}"
                with proxy._lock:
                    proxy.requests.append(line)
                    proxy.events.append(("in", line))
                try:
                    self._answer(line)
                finally:
                    with proxy._lock:
                        proxy.events.append(("out", line))

            def _answer(self, line: str) -> None:
                body = self._body()
                if proxy.rtt:
                    time.sleep(proxy.rtt)
                fault = proxy._take(line)
                if fault == "reset":
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    return
                if fault in ("429", "503"):
                    reason = "Too Many Requests" if fault == "429" else "Server Busy"
                    self._send_head(int(fault), reason, [("Retry-After", "1")], 0)
                    return
                status, reason, headers, data = self._forward(body)
                if self.command == "HEAD":  # the blob's length, with no body after it
                    self._send_head(status, reason, headers, self.head_length)
                    return
                if fault is None or fault == "garble":
                    if fault == "garble" and data:
                        data = bytes([data[0] ^ 1]) + data[1:]
                    self._send_head(status, reason, headers, len(data))
                    self.wfile.write(data)
                    return
                half = data[: len(data) // 2]
                if fault == "cut":
                    self._send_head(status, reason, headers, None)
                    self.wfile.write(half)
                elif fault == "cut-length":
                    self._send_head(status, reason, headers, len(data))
                    self.wfile.write(half)
                elif fault == "lie":
                    self._send_head(status, reason, headers, len(half))
                    self.wfile.write(half)
                    return  # consistent framing: the connection may be reused
                elif fault == "stall":
                    self._send_head(status, reason, headers, len(data))
                    self.wfile.flush()
                    proxy.stopping.wait(120)
                elif fault == "trickle":
                    self._send_head(status, reason, headers, len(data))
                    for i in range(0, len(data), 16):
                        if proxy.stopping.wait(1.0):
                            break
                        try:
                            self.wfile.write(data[i : i + 16])
                            self.wfile.flush()
                        except OSError:
                            break
                self.close_connection = True

            def _body(self) -> bytes | None:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            def _forward(self, body: bytes | None) -> tuple[int, str, list[tuple[str, str]], bytes]:
                if self.upstream is None:
                    self.upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                try:
                    self.upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = self.upstream.getresponse()
                except (ConnectionError, http.client.HTTPException):
                    # Azurite closed the kept-alive upstream connection while it was idle
                    self.upstream.close()
                    self.upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = self.upstream.getresponse()
                self.head_length = int(answer.getheader("Content-Length") or 0)
                data = answer.read()
                drop = _HOP | proxy.strip
                kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in drop]
                return answer.status, answer.reason, kept, data

            def _send_head(
                self, status: int, reason: str, headers: list[tuple[str, str]], length: int | None
            ) -> None:
                self.send_response_only(status, reason)
                for name, value in headers:
                    self.send_header(name, value)
                if length is None:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def do_CONNECT(self) -> None:
                host, _, port = self.path.rpartition(":")
                upstream = socket.create_connection((host, int(port)))
                with proxy._lock:
                    proxy.tunnels += 1
                self.send_response_only(200, "Connection established")
                self.end_headers()
                self.wfile.flush()

                def pump(source: socket.socket, sink: socket.socket) -> None:
                    try:
                        while data := source.recv(65536):
                            sink.sendall(data)
                    except OSError:
                        pass
                    finally:
                        sink.close()
                        source.close()

                threading.Thread(target=pump, args=(upstream, self.connection), daemon=True).start()
                pump(self.connection, upstream)
                self.close_connection = True

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = handle_one

        return Handler
