"""The few Blob service REST calls memsync makes, over plain `http.client`.

Moving thousands of small files, the SDK's pipeline (azure-core policies, requests, urllib3)
costs several times the CPU of the request itself, and `import azure.storage.blob` a third of a
second per process. This client keeps one keep-alive connection per thread, signs with Shared
Key or carries a SAS token, and retries what the SDK retries: connection errors and 408, 429,
500, 502, 503, 504, three times, half a second apart (with jitter), so an outage still reaches
the engine within seconds and the work is queued. Token credentials and proxies go through the
SDK instead (memsync.stores.azure_sdk).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any
from urllib.parse import quote, urlencode

from memsync.errors import ConfigError, Unreachable

API_VERSION = "2025-11-05"  # served by Azure, by Azurite 3.37, and by azure-storage-blob 12.31
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

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


@dataclass(frozen=True)
class Response:
    status: int
    headers: Headers
    body: bytes


class Headers(dict[str, str]):
    """Response headers by lower-case name."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)


class _Response(http.client.HTTPResponse):
    """http.client's response without its email-package header parser, which costs more CPU
    than the rest of a small request together. Same framing rules as `HTTPResponse.begin`."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:
            version, status, reason = self._read_status()  # type: ignore[attr-defined]
            headers = _read_headers(self.fp)
            if status != http.client.CONTINUE:
                break
        if not version.startswith("HTTP/1."):
            raise http.client.UnknownProtocol(version)
        self.code = self.status = status
        self.reason = reason.strip()
        self.version = 10 if version == "HTTP/1.0" else 11
        self.headers = self.msg = headers  # type: ignore[assignment]
        self.chunked = (headers.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        connection = (headers.get("connection") or "").lower()
        self.will_close = "close" in connection or (
            self.version == 10 and "keep-alive" not in connection
        )
        self.length = None
        length = headers.get("content-length")
        if length and not self.chunked and length.isdigit():
            self.length = int(length)
        no_body = status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
        if no_body or 100 <= status < 200 or self._method == "HEAD":  # type: ignore[attr-defined]
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


def _read_headers(fp: Any) -> Headers:
    headers = Headers()
    for _ in range(100):  # http.client's own limit
        line = fp.readline(65537)
        if len(line) > 65536:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, _, value = line.decode("iso-8859-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    raise http.client.HTTPException("got more than 100 headers")


class SharedKey:
    """Shared Key authorization, as the Blob service documents it (and the SDK signs)."""

    def __init__(self, account: str, key: str) -> None:
        self.account = account
        try:
            self.key = base64.b64decode(key, validate=True)
        except ValueError as exc:
            raise ConfigError(f"the account key for {account!r} is not valid base64") from exc

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
        return f"SharedKey {self.account}:{base64.b64encode(signature).decode()}"


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
        self.shared_key, self.sas = shared_key, sas
        self.on_request = on_request
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.cafile = cafile
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection (not yet connected, or kept alive from its last request)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.scheme == "https":
                context = ssl.create_default_context(cafile=self.cafile)
                conn = http.client.HTTPSConnection(
                    self.netloc, timeout=self.connect_timeout, context=context
                )
            else:
                conn = http.client.HTTPConnection(self.netloc, timeout=self.connect_timeout)
            conn.response_class = _Response
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
            send = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": API_VERSION}
            send.update(headers or {})
            if body is not None:
                send["Content-Length"] = str(len(body))
            if self.shared_key is not None:
                send["Authorization"] = self.shared_key.authorization(method, target, query, send)
            conn = self._connection()
            reused = conn.sock is not None
            try:
                if not reused:
                    conn.connect()
                    conn.sock.settimeout(self.read_timeout)
                conn.request(method, url, body=body, headers=send)
                answer = conn.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self.on_request(kind)
                # a keep-alive connection the server closed while idle: resend at once, once
                if reused and stale_retry and _closed_by_peer(exc):
                    stale_retry = False
                    continue
                failure = str(exc) or type(exc).__name__
                if isinstance(exc, ssl.SSLCertVerificationError):
                    raise Unreachable(
                        f"cannot reach {self.scheme}://{self.netloc}: its TLS certificate is not "
                        f"trusted ({exc.verify_message}); set REQUESTS_CA_BUNDLE to the CA bundle"
                    ) from exc
            else:
                self.on_request(kind)
                if answer.status not in RETRY_STATUSES or attempt >= self.retries:
                    return Response(answer.status, answer.headers, data)
                failure = f"{answer.status} {answer.reason}"
            if attempt >= self.retries:
                raise Unreachable(f"cannot reach {self.scheme}://{self.netloc} ({failure})")
            attempt += 1
            time.sleep(max(0.0, self.backoff + random.uniform(-self.jitter, self.jitter)))

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


def _closed_by_peer(exc: BaseException) -> bool:
    return isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))
