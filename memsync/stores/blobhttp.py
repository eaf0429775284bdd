"""The few Blob service REST calls memsync makes, over a small HTTP/1.1 client of its own.

Moving thousands of small files, the SDK's pipeline (azure-core policies, requests, urllib3)
costs several times the CPU of the request itself, and `import azure.storage.blob` a third of a
second per process; even `http.client` costs a no-op sync more to import (it brings the email
package and `ssl`) than the sync's own work. This client keeps one keep-alive connection per
thread, signs with Shared Key or carries a SAS token, and retries what the SDK retries:
connection errors and 408, 429, 500, 502, 503, 504, three times, half a second apart (with
jitter), so an outage still reaches the engine within seconds and the work is queued. Token
credentials and proxies go through the SDK instead (memsync.stores.azure_sdk).
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from urllib.parse import quote, urlencode

from memsync.errors import ConfigError, Unreachable
from memsync.lean_typing import TYPE_CHECKING, NamedTuple
from memsync.stores.httpdate import format_date

if TYPE_CHECKING:
    from typing import Any, BinaryIO

API_VERSION = "2025-11-05"  # served by Azure, by Azurite 3.37, and by azure-storage-blob 12.31
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_LINE = 65536  # http.client's limits for a status or header line, and for the header count
MAX_HEADERS = 100
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# base64.b64decode(validate=True) decodes strictly from 3.11 (no padding alone or mid-key)
_STRICT = {"strict_mode": True} if sys.version_info >= (3, 11) else {}

# the headers Shared Key signs by position, in the service's order
_SIGNED = (
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
)


class Response(NamedTuple):
    status: int
    headers: Headers
    body: bytes
    reason: str = ""


class Headers(dict[str, str]):
    """Response headers by lower-case name."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)


class BadAnswer(ConnectionError):
    """The server's bytes are not an HTTP/1.x answer (or stop in the middle of one)."""


def split_netloc(netloc: str, scheme: str) -> tuple[str, int]:
    """Host and port of `host[:port]` or `[v6]:port`, with the scheme's default port."""
    default = 443 if scheme == "https" else 80
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    if port and not port.isdigit():
        raise ConfigError(f"the remote's address {netloc!r} has a port that is not a number")
    return host, int(port) if port else default


class Connection:
    """One HTTP/1.1 connection to the endpoint, opened on first use and kept alive between
    requests. Answers are framed as RFC 9112 says: by Content-Length, chunked, or (without
    either) by the server closing; HEAD, 1xx, 204 and 304 answers have no body."""

    def __init__(
        self,
        scheme: str,
        netloc: str,
        connect_timeout: float,
        read_timeout: float,
        cafile: str | None = None,
    ) -> None:
        self.scheme, self.netloc = scheme, netloc
        self.host, self.port = split_netloc(netloc, scheme)
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.cafile = cafile
        self.sock: socket.socket | None = None
        self.fp: BinaryIO | None = None

    def connect(self) -> None:
        # an ASCII host as bytes: getaddrinfo would otherwise load the idna codec to encode it
        lookup: str | bytes = self.host.encode() if self.host.isascii() else self.host
        sock = socket.create_connection((lookup, self.port), self.connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                sock = self._tls(sock)
            sock.settimeout(self.read_timeout)
        except BaseException:
            sock.close()
            raise
        self.sock, self.fp = sock, sock.makefile("rb")

    def _tls(self, sock: socket.socket) -> socket.socket:
        import ssl

        context = ssl.create_default_context(cafile=self.cafile)
        try:
            return context.wrap_socket(sock, server_hostname=self.host)
        except ssl.SSLCertVerificationError as exc:
            raise Unreachable(
                f"cannot reach https://{self.netloc}: its TLS certificate is not trusted "
                f"({exc.verify_message}); set REQUESTS_CA_BUNDLE to the CA bundle"
            ) from exc

    def exchange(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, str, Headers, bytes]:
        """Send one request and read its whole answer: status, reason, headers, body."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None and self.fp is not None
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.netloc}"]
        for name, value in headers.items():
            if "\r" in value or "\n" in value:
                raise ValueError(f"the request header {name} holds a line break")
            lines.append(f"{name}: {value}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.sendall(head + body if body else head)
        while True:
            version, status, reason = self._status_line()
            answer = read_headers(self.fp)
            if status != 100:  # 100 Continue is followed by the real answer
                break
        connection = (answer.get("connection") or "").lower()
        close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        length = answer.get("content-length")
        if method == "HEAD" or status in (204, 304) or status < 200:
            data = b""
        elif "chunked" in (answer.get("transfer-encoding") or "").lower():
            data = self._chunked()
        elif length is not None:
            if not length.isdigit():
                raise BadAnswer(f"the server sent a Content-Length of {length!r}")
            data = self._exactly(int(length))
        else:
            data, close = self.fp.read(), True
        if close:
            self.close()
        return status, reason, answer, data

    def _status_line(self) -> tuple[str, int, str]:
        assert self.fp is not None
        line = self.fp.readline(MAX_LINE + 1)
        if not line:
            # http.client's RemoteDisconnected is a ConnectionResetError too
            raise ConnectionResetError("the server closed the connection without answering")
        if len(line) > MAX_LINE:
            raise BadAnswer("the server's status line is too long")
        version, _, rest = line.decode("iso-8859-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise BadAnswer(f"the server did not answer in HTTP/1.x: {line[:60]!r}")
        return version, int(code), reason.strip()

    def _exactly(self, size: int) -> bytes:
        assert self.fp is not None
        data = self.fp.read(size)
        if len(data) < size:
            raise BadAnswer(f"the answer stopped after {len(data)} of {size} bytes")
        return data

    def _chunked(self) -> bytes:
        assert self.fp is not None
        parts = []
        while True:
            line = self.fp.readline(MAX_LINE + 1)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                size = -1
            if size < 0 or len(line) > MAX_LINE:
                raise BadAnswer(f"the server sent a bad chunk size line: {line[:60]!r}")
            if size == 0:
                read_headers(self.fp)  # trailers, up to the blank line
                return b"".join(parts)
            parts.append(self._exactly(size))
            if self._exactly(2) != b"\r\n":
                raise BadAnswer("a chunk of the answer does not end with CRLF")

    def close(self) -> None:
        if self.fp is not None:
            self.fp.close()
        if self.sock is not None:
            self.sock.close()
        self.sock = self.fp = None


def read_headers(fp: Any) -> Headers:
    headers = Headers()
    for _ in range(MAX_HEADERS):
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadAnswer("a header line of the answer is too long")
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, _, value = line.decode("iso-8859-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    raise BadAnswer(f"the answer has more than {MAX_HEADERS} header lines")


class SharedKey:
    """Shared Key authorization, as the Blob service documents it (and the SDK signs)."""

    def __init__(self, account: str, key: str) -> None:
        self.account = account
        # base64.b64decode(key, validate=True), without importing base64 for it
        try:
            if not _BASE64.fullmatch(key):
                raise binascii.Error("not base64")
            self.key = binascii.a2b_base64(key, **_STRICT)
        except binascii.Error:
            raise ConfigError(f"the account key for {account!r} is not valid base64") from None

    def string_to_sign(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
    ) -> str:
        lower = {k.lower(): v for k, v in headers.items()}
        if lower.get("content-length") == "0":
            lower["content-length"] = ""  # versions since 2015-02-21 sign a zero length as empty
        fixed = "".join(lower.get(name, "") + "\n" for name in _SIGNED)
        ms = "".join(f"{k}:{v}\n" for k, v in sorted(lower.items()) if k.startswith("x-ms-"))
        resource = f"/{self.account}{path}"
        resource += "".join(
            f"\n{k}:{v}" for k, v in sorted((k.lower(), v) for k, v in query.items())
        )
        return f"{method}\n{fixed}{ms}{resource}"

    def authorization(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
    ) -> str:
        text = self.string_to_sign(method, path, query, headers).encode()
        signature = hmac.new(self.key, text, hashlib.sha256).digest()
        return f"SharedKey {self.account}:{binascii.b2a_base64(signature, newline=False).decode()}"


def quote_path(path: str) -> str:
    return quote(path, safe="/~")


class BlobHTTP:
    """Requests to one account endpoint: keep-alive connections, one per thread."""

    retries = 3
    backoff = 0.5
    jitter = 0.25

    def __init__(
        self,
        scheme: str,
        netloc: str,
        *,
        shared_key: SharedKey | None = None,
        sas: str = "",
        on_request: Callable[[str], None] = lambda kind: None,
        connect_timeout: float = 5,
        read_timeout: float = 30,
        cafile: str | None = None,
    ) -> None:
        self.scheme, self.netloc = scheme, netloc
        split_netloc(netloc, scheme)  # a bad port is a config error now, not at the first request
        self.shared_key, self.sas = shared_key, sas
        self.on_request = on_request
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.cafile = cafile
        self._local = threading.local()
        self._all: list[Connection] = []
        self._lock = threading.Lock()

    def _connection(self) -> Connection:
        """This thread's connection (not yet connected, or kept alive from its last request)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = Connection(
                self.scheme, self.netloc, self.connect_timeout, self.read_timeout, self.cafile
            )
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def request(
        self,
        kind: str,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
    ) -> Response:
        """Send one request (retrying transient failures); any answer the service gives is
        returned, errors included. `path` is unquoted; `kind` names it in the request counts.
        Raises Unreachable when the endpoint cannot be reached."""
        query = dict(query or {})
        target = quote_path(path)
        qs = urlencode(query, quote_via=quote)
        if self.sas:
            qs = f"{qs}&{self.sas}" if qs else self.sas
        url = f"{target}?{qs}" if qs else target
        failure = ""
        stale_retry = True
        attempt = 0
        while True:
            send = {"x-ms-date": format_date(), "x-ms-version": API_VERSION}
            send.update(headers or {})
            if body is not None:
                send["Content-Length"] = str(len(body))
            if self.shared_key is not None:
                send["Authorization"] = self.shared_key.authorization(method, target, query, send)
            conn = self._connection()
            reused = conn.sock is not None
            try:
                status, reason, answer, data = conn.exchange(method, url, send, body)
            except OSError as exc:
                conn.close()
                self.on_request(kind)
                # a keep-alive connection the server closed while idle: resend at once, once
                if (
                    reused
                    and stale_retry
                    and isinstance(exc, (ConnectionResetError, BrokenPipeError))
                ):
                    stale_retry = False
                    continue
                failure = str(exc) or type(exc).__name__
            else:
                self.on_request(kind)
                if status not in RETRY_STATUSES or attempt >= self.retries:
                    return Response(status, answer, data, reason)
                failure = f"{status} {reason}"
            if attempt >= self.retries:
                raise Unreachable(f"cannot reach {self.scheme}://{self.netloc} ({failure})")
            attempt += 1
            import random  # only a retry needs it

            time.sleep(max(0.0, self.backoff + random.uniform(-self.jitter, self.jitter)))

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
