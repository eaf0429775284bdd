"""The few Blob service REST calls memsync makes, over the standard library's http.client.

Moving thousands of small files, the SDK's pipeline (azure-core policies, requests, urllib3)
costs several times the CPU of the request itself, and `import azure.storage.blob` is a large
share of a process's start (docs/benchmarks.md). This client keeps a pool of keep-alive
connections (one TLS context for all of them), signs with Shared Key, carries a SAS token or a
bearer token, goes through the proxy HTTP(S)_PROXY and NO_PROXY name, and leaves the framing of
answers to http.client, which is well kept and fuzzed: memsync adds only what it needs on top
of it. Every
interim (1xx) answer is skipped, a body is capped before it is read (a memory file's maximum plus
headroom; listings have their own cap) and read in bounded pieces against an overall deadline,
and a connection that saw any error is closed, never reused.

Retries are the SDK's, plus 429: connection errors and 408, 429, 500, 502, 503, 504 and other
5xx but 501 and 505, three times, half a second apart (with jitter) or as long as a
`Retry-After` asks if that fits the deadline, so an outage reaches the engine within seconds and
the work is queued.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import http.client
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import quote, unquote, urlencode, urlsplit

from memsync.stores.httpdate import format_date, parse_date
from memsync.util.errors import ConfigError, Unreachable

if TYPE_CHECKING:
    import ssl
    from typing import Any

API_VERSION = "2025-11-05"  # served by Azure, by Azurite 3.37, and by azure-storage-blob 12.31
READ_PIECE = 65536  # a body is read at most this much per system call, the deadline checked
MAX_RETRY_AFTER = 10.0  # a longer Retry-After is an outage: give up and let the work queue
DEFAULT_LIMIT = 8 * 1024 * 1024  # the largest answer body read when the caller sets no cap
ROUND_TRIP_SAMPLES = 8  # small requests timed before the round trip is judged
WARM_SLACK = 0.5  # how much later than the request a warming connection may start to connect

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


def retryable(status: int) -> bool:
    """What the SDK's storage retry policy retries (408 and 5xx but 501 and 505), and 429."""
    return status in (408, 429) or (status >= 500 and status not in (501, 505))


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
    """The server's bytes are not a whole HTTP/1.x answer (cut short, too large, malformed)."""


class TooLarge(BadAnswer):
    """The answer's body is larger than the caller's cap: not retried (it would be again)."""

    def __init__(self, size: int | None, limit: int) -> None:
        self.size, self.limit = size, limit
        shown = f"declares {size} bytes" if size is not None else "is larger"
        super().__init__(f"the answer {shown}, more than the {limit} bytes expected")


class TimedOut(TimeoutError):
    """The request's overall deadline passed before its answer was complete."""


class ConnectTimedOut(TimeoutError):
    """Nothing answered a new connection (TCP and TLS handshakes) within `connect_timeout`: an
    endpoint that drops connections is unreachable now, and trying again would only wait as
    long again (the kernel already sent the SYN more than once)."""


def split_netloc(netloc: str, scheme: str) -> tuple[str, int]:
    """Host and port of `host[:port]` or `[v6]:port`, with the scheme's default port."""
    default = 443 if scheme == "https" else 80
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    if port and not (port.isascii() and port.isdigit()):
        raise ConfigError(f"the remote's address {netloc!r} has a port that is not a number")
    return host, int(port) if port else default


class _Response(http.client.HTTPResponse):
    """http.client's answer, skipping every interim answer: http.client skips only 100, and
    took a 102 or 103 for the final answer (whose bytes then answered the next request)."""

    def _read_status(self) -> tuple[str, int, str]:
        while True:
            version, status, reason = super()._read_status()  # type: ignore[misc]
            if not 100 <= status < 200 or status in (100, 101):
                return version, status, reason
            http.client.parse_headers(self.fp)  # the interim answer's headers, bounded


def _lookup(address: tuple[str, int], *args: Any) -> socket.socket:
    host, port = address
    # an ASCII host as bytes: getaddrinfo would otherwise load the idna codec to encode it
    ascii_host = host.encode() if host.isascii() else host
    return socket.create_connection((ascii_host, port), *args)  # type: ignore[arg-type]


class Proxy(NamedTuple):
    host: str
    port: int
    authorization: str | None  # Proxy-Authorization, from the proxy URL's user and password


_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy")


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy the environment names for `scheme://host`, as curl and requests read it
    (`https_proxy` / `http_proxy` / `all_proxy`, either case, and `no_proxy`); None for none.
    Only an http:// proxy is spoken to: https:// targets go through it with CONNECT."""
    if not any(os.environ.get(n) or os.environ.get(n.upper()) for n in _PROXY_VARIABLES):
        return None  # the usual case, decided without importing urllib.request
    import urllib.request

    if urllib.request.proxy_bypass(host):
        return None
    url = urllib.request.getproxies().get(scheme) or ""
    if not url:
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise ConfigError(
            f"the proxy {parts.scheme}://{parts.hostname or ''} in {scheme}_proxy is not an "
            "http:// proxy; memsync speaks to proxies in plain HTTP (https remotes go through "
            "them encrypted, with CONNECT)"
        )
    authorization = None
    if parts.username is not None:
        user = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(user).decode()
    return Proxy(parts.hostname, parts.port or 80, authorization)


def _open(
    scheme: str,
    host: str,
    port: int,
    timeout: float,
    proxy: Proxy | None = None,
    context: ssl.SSLContext | None = None,
) -> http.client.HTTPConnection:
    """A new connection (not yet connected), through `proxy` if given; https:// trusts
    `context`, else the CAs tls.py chooses."""
    conn: http.client.HTTPConnection
    peer = (proxy.host, proxy.port) if proxy else (host, port)
    if scheme == "https":
        from memsync.stores import tls

        context = context or tls.context()
        conn = http.client.HTTPSConnection(*peer, timeout=timeout, context=context)
        if proxy:
            auth = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else None
            conn.set_tunnel(host, port, headers=auth)
    else:
        conn = http.client.HTTPConnection(*peer, timeout=timeout)
    conn.response_class = _Response
    conn._create_connection = _lookup  # type: ignore[attr-defined]
    return conn


def exchange(
    conn: http.client.HTTPConnection,
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    limit: int,
    deadline: float,
    read_timeout: float,
) -> tuple[int, str, Headers, bytes]:
    """One request and its whole answer (status, reason, headers, body) on `conn`. The caller
    closes the connection if this raises."""

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimedOut("the answer did not arrive in time")
        return min(read_timeout, left)

    conn.timeout = remaining()
    if conn.sock is None:
        conn.connect()
    conn.sock.settimeout(remaining())
    conn.putrequest(method, target, skip_accept_encoding=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders(body)
    response = conn.getresponse()
    answer = Headers((k.lower(), v) for k, v in response.getheaders())
    length = answer.get("content-length")
    if length is not None and not (length.isascii() and length.isdigit()):
        # http.client decodes header bytes as Latin-1: show what the server most likely wrote
        shown = length.encode("latin-1", "replace").decode("utf-8", "replace")
        raise BadAnswer(f"the server sent a Content-Length of {shown[:40]!r}")
    if response.length is not None and response.length > limit:
        raise TooLarge(response.length, limit)
    parts: list[bytes] = []
    size = 0
    sock = response.fp.raw._sock if response.fp is not None else None  # type: ignore[attr-defined]
    while True:
        if sock is not None:
            sock.settimeout(remaining())
        piece = response.read1(READ_PIECE)
        if not piece:
            break
        size += len(piece)
        if size > limit:
            raise TooLarge(None, limit)
        parts.append(piece)
    if response.length:  # http.client returned early: the server closed in the middle
        raise BadAnswer(f"the answer stopped {response.length} bytes short of its length")
    response.close()
    if response.will_close:
        conn.close()
    return response.status, response.reason, answer, b"".join(parts)


def md5_base64(data: bytes) -> str:
    """A body's MD5 as Content-MD5 carries it (both object stores send and keep one)."""
    digest = hashlib.md5(data, usedforsecurity=False).digest()
    return binascii.b2a_base64(digest, newline=False).decode()


def parse_edited(value: str | None) -> float | None:
    """The `edited` metadata value, None if absent or not a number."""
    try:
        return float(value) if value else None
    except ValueError:
        return None


def quote_etag(value: str | None) -> str:
    """ETags in one spelling: services list them bare and return them quoted from writes."""
    return '"' + (value or "").strip('"') + '"'


def retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After header asks for (a number of seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        return max(0.0, parse_date(value) - time.time())
    except (ValueError, TypeError):
        return None


class SharedKey:
    """Shared Key authorization, as the Blob service documents it (and the SDK signs)."""

    def __init__(self, account: str, key: str) -> None:
        self.account = account
        try:
            self.key = base64.b64decode(key, validate=True)
        except ValueError:  # binascii.Error, or a key that is not ASCII
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
    # a name that is not UTF-8 (listed as lone surrogates) is still addressed as its bytes
    return quote(path, safe="/~", errors="surrogateescape")


class BlobHTTP:
    """Requests to one account endpoint over a pool of keep-alive connections: a request takes
    an idle one, else waits for one `warm` is opening that no other request waits for, else
    opens one; it gives it back if its answer left it usable. So the listing's connection and
    those opened ahead serve the transfers that follow, and a burst of requests never opens
    more connections than it has requests (each new one costs a TCP and a TLS handshake, on
    both ends)."""

    retries = 3
    backoff = 0.5
    jitter = 0.25
    tls_context: ssl.SSLContext | None = None  # None: the CAs memsync.stores.tls chooses

    def __init__(
        self,
        scheme: str,
        netloc: str,
        *,
        shared_key: SharedKey | None = None,
        sas: str = "",
        token: Callable[[], str] | None = None,
        on_request: Callable[[str, int, int], None] = lambda kind, up, down: None,
        connect_timeout: float = 2.5,
        read_timeout: float = 30,
        request_timeout: float = 60,
    ) -> None:
        self.scheme, self.netloc = scheme, netloc
        self.host, self.port = split_netloc(netloc, scheme)  # a bad port fails now, not later
        self.shared_key, self.sas, self.token = shared_key, sas, token
        self.proxy = proxy_for(scheme, self.host)
        self.on_request = on_request
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.request_timeout = request_timeout
        self.deadline: float | None = None  # the command's: no request outlives it
        # the quickest small request seen (not a listing, whose answer the server builds): a
        # round trip plus the service's least work; a connect's time would show the round trip
        # too, but not behind a proxy, which answers the handshake itself
        self.round_trip: float | None = None  # None until ROUND_TRIP_SAMPLES were timed
        self._quickest: float | None = None
        self._samples = 0
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # a connection was given back or failed
        self._opening = 0  # connections `warm` is opening
        self._waiting = 0  # requests waiting for one of them
        self._unanswered: ConnectTimedOut | None = None  # a connection nothing answered

    def _connection(self, deadline: float) -> http.client.HTTPConnection:
        """An idle kept-alive connection; else one `warm` is opening, once it is open (it
        started first, so it is ready no later than a new one would be, and its failure to
        connect is this request's: the wait allows for its thread's start); else a new one
        (connected by its first request)."""
        until = min(deadline, time.monotonic() + self.connect_timeout + WARM_SLACK)
        with self._ready:
            while not self._idle and self._opening > self._waiting:
                left = until - time.monotonic()
                if left <= 0:
                    break
                self._waiting += 1
                try:
                    self._ready.wait(left)
                finally:
                    self._waiting -= 1
            if self._idle:
                return self._idle.pop()
            if self._unanswered is not None:  # waiting as long again would change nothing
                raise Unreachable(
                    f"cannot reach {self.scheme}://{self.netloc} ({self._unanswered})"
                )
        return _open(
            self.scheme, self.host, self.port, self.connect_timeout, self.proxy, self.tls_context
        )

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        if conn.sock is not None:
            with self._ready:
                self._unanswered = None
                self._idle.append(conn)
                self._ready.notify()

    def _connect(self, conn: http.client.HTTPConnection, timeout: float) -> None:
        conn.timeout = timeout
        try:
            conn.connect()
        except TimeoutError as exc:
            raise ConnectTimedOut(f"no answer to a connection within {timeout:g} s") from exc

    def _timed(self, kind: str, took: float) -> None:
        if kind != "list":
            with self._lock:
                self._quickest = took if self._quickest is None else min(self._quickest, took)
                self._samples += 1
                if self._samples >= ROUND_TRIP_SAMPLES:  # one slow start is not a slow network
                    self.round_trip = self._quickest

    def warm(self, count: int) -> None:
        """Open `count` connections in the background (TCP and TLS handshakes) while something
        else is in flight, so the transfers after it start at once. Errors are left for the
        requests to meet and report. Their threads are started by one of their own, so the
        caller's next request (the listing) goes out without waiting for them."""

        def one() -> None:
            conn = None
            try:
                conn = _open(
                    self.scheme,
                    self.host,
                    self.port,
                    self.connect_timeout,
                    self.proxy,
                    self.tls_context,
                )
                self._connect(conn, self.connect_timeout)
            except BaseException as exc:
                if conn is not None:
                    conn.close()
                if isinstance(exc, ConnectTimedOut):
                    with self._ready:
                        self._unanswered = exc
                if not isinstance(exc, (OSError, http.client.HTTPException)):
                    raise
            finally:
                # counted off whatever happened: a request waiting for it opens its own
                with self._ready:
                    self._opening -= 1
                    if conn is not None and conn.sock is not None:
                        self._idle.append(conn)
                    self._ready.notify_all()

        def start() -> None:
            for started in range(count):
                try:
                    threading.Thread(target=one, name="memsync-warm", daemon=True).start()
                except RuntimeError:  # no more threads: the requests open their own
                    with self._ready:
                        self._opening -= count - started
                        self._ready.notify_all()
                    return

        if count <= 0:
            return
        with self._ready:
            self._opening += count  # counted now: the requests that follow wait for them
        threading.Thread(target=start, name="memsync-warm", daemon=True).start()

    def _deadline(self) -> float:
        own = time.monotonic() + self.request_timeout
        return own if self.deadline is None else min(own, self.deadline)

    def request(
        self,
        kind: str,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
    ) -> Response:
        """Send one request (retrying transient failures); any answer the service gives is
        returned, errors included. `path` is unquoted; `kind` names it in the request counts;
        a body over `limit` bytes is refused unread. Raises Unreachable when the endpoint cannot
        be reached or does not answer before the deadline, ConfigError for an untrusted
        certificate."""
        query = dict(query or {})
        target, url = self._target(path, query)
        deadline = self._deadline()
        stale_retry = True
        attempt = 0
        while True:
            send = self._signed(method, target, query, headers, body)
            conn = self._connection(deadline)
            reused = conn.sock is not None
            wait = None
            try:
                status, reason, answer, data = self._send(
                    conn, kind, method, url, send, body, limit, deadline
                )
            except BaseException as exc:
                conn.close()  # never reuse a connection in an unknown state
                if isinstance(exc, ConnectionError):
                    self.close()  # the idle ones likely went down with it: open anew
                self.on_request(kind, len(body or b""), 0)
                self._raise_if_no_retry_helps(exc)
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
                self._give_back(conn)
                self.on_request(kind, len(body or b""), len(data))
                if not retryable(status) or attempt >= self.retries:
                    return Response(status, answer, data, reason)
                failure = f"{status} {reason}".strip()
                wait = retry_after(answer.get("retry-after"))
                if wait is not None and wait > MAX_RETRY_AFTER:
                    return Response(status, answer, data, reason)  # busy for longer: give up
            if attempt >= self.retries:
                raise Unreachable(f"cannot reach {self.scheme}://{self.netloc} ({failure})")
            attempt += 1
            self._pause_before_retry(failure, wait, deadline)

    def _target(self, path: str, query: Mapping[str, str]) -> tuple[str, str]:
        """The quoted path (what the signature covers) and the URL to send: the path with the
        query and the SAS, if any (absolute, to a proxy in plain HTTP)."""
        target = quote_path(path)
        qs = urlencode(query, quote_via=quote)
        if self.sas:
            qs = f"{qs}&{self.sas}" if qs else self.sas
        url = f"{target}?{qs}" if qs else target
        if self.proxy and self.scheme == "http":
            url = f"http://{self.netloc}{url}"
        return target, url

    def _signed(
        self,
        method: str,
        target: str,
        query: Mapping[str, str],
        headers: Mapping[str, str] | None,
        body: bytes | None,
    ) -> dict[str, str]:
        """The headers of one attempt: dated now, and signed with the shared key or carrying
        the bearer token, if any."""
        send = {"x-ms-date": format_date(), "x-ms-version": API_VERSION}
        send.update(headers or {})
        if body is not None:
            send["Content-Length"] = str(len(body))
        if self.shared_key is not None:
            send["Authorization"] = self.shared_key.authorization(method, target, query, send)
        elif self.token is not None:
            send["Authorization"] = f"Bearer {self.token()}"
        return send

    def _send(
        self,
        conn: http.client.HTTPConnection,
        kind: str,
        method: str,
        url: str,
        send: dict[str, str],
        body: bytes | None,
        limit: int,
        deadline: float,
    ) -> tuple[int, str, Headers, bytes]:
        """One exchange on `conn`, connecting it first if it is new (within the deadline); a
        quick answer is timed for `round_trip`."""
        if conn.sock is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimedOut("no time left to connect")
            self._connect(conn, min(self.connect_timeout, left))
        sent = time.monotonic()
        answer = exchange(
            conn,
            method,
            url,
            send,
            body,
            limit=limit,
            deadline=deadline,
            read_timeout=self.read_timeout,
        )
        self._timed(kind, time.monotonic() - sent)
        return answer

    def _raise_if_no_retry_helps(self, exc: BaseException) -> None:
        """Raise what a failed exchange means when sending again cannot mend it: not a network
        failure at all (a bug, Ctrl-C), an untrusted certificate, an answer over the limit,
        the deadline passed."""
        if not isinstance(exc, (OSError, http.client.HTTPException)):
            raise exc
        self._refuse_untrusted(exc)
        if isinstance(exc, TooLarge):
            raise exc
        if isinstance(exc, TimedOut):
            raise Unreachable(f"{self.scheme}://{self.netloc} did not answer in time") from None
        if isinstance(exc, ConnectTimedOut):
            with self._ready:
                self._unanswered = exc
            raise Unreachable(f"cannot reach {self.scheme}://{self.netloc} ({exc})") from None
        if self.scheme == "https" and "WRONG_VERSION_NUMBER" in str(exc):
            raise ConfigError(
                f"{self.netloc} does not speak TLS (it answered in plain HTTP): use an "
                "http:// address for it, or the port where it serves https"
            ) from None

    def _pause_before_retry(self, failure: str, wait: float | None, deadline: float) -> None:
        """Sleep the backoff (with jitter), or as long as the service asked; Unreachable when
        that would pass the deadline."""

        pause = max(0.0, self.backoff + random.uniform(-self.jitter, self.jitter))
        pause = max(pause, wait or 0.0)
        if time.monotonic() + pause >= deadline:
            raise Unreachable(f"{self.scheme}://{self.netloc} did not answer in time ({failure})")
        time.sleep(pause)

    def _refuse_untrusted(self, exc: BaseException) -> None:
        if self.scheme != "https":
            return
        from memsync.stores import tls

        reason = tls.untrusted(exc)
        if reason:
            raise tls.untrusted_error(f"https://{self.netloc}", reason) from None

    def close(self) -> None:
        with self._lock:
            for conn in self._idle:
                conn.close()
            self._idle.clear()
