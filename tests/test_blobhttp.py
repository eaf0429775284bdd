"""memsync's Blob REST client against real local HTTP servers: what Azurite cannot be made to
do on demand (answer 503, drop a kept-alive connection, speak TLS), plus Shared Key signing of
awkward names checked by Azurite itself."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from base64 import b64decode, b64encode
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.stores import open_store
from memsync.stores.blobhttp import BlobHTTP, SharedKey, TooLarge
from memsync.util.errors import ConfigError, Unreachable

Script = Callable[[BaseHTTPRequestHandler, int], tuple[int, dict[str, str], bytes] | None]


class _Server:
    """A loopback HTTP server whose answer to the n-th request comes from `script`;
    `None` from the script closes the connection without answering."""

    def __init__(self, script: Script, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.connections = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                outer.connections += 1
                super().setup()

            def do_any(self) -> None:
                n = len(outer.requests)
                outer.requests.append((self.command, self.path, dict(self.headers)))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                answer = script(self, n)
                if answer is None:
                    self.close_connection = True
                    return
                status, headers, body = answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_any

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., _Server]]:
    servers: list[_Server] = []

    def start(script: Script, tls: ssl.SSLContext | None = None) -> _Server:
        servers.append(_Server(script, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _client(port: int, **kwargs: object) -> tuple[BlobHTTP, list[str]]:
    counted: list[str] = []
    client = BlobHTTP(
        "http",
        f"127.0.0.1:{port}",
        on_request=lambda kind, up, down: counted.append(kind),
        **kwargs,
    )
    client.backoff = client.jitter = 0.0
    return client, counted


def test_transient_answers_are_retried_and_every_attempt_is_counted(serve):
    server = serve(lambda h, n: (503, {}, b"busy") if n < 2 else (200, {"ETag": '"e"'}, b"ok"))
    client, counted = _client(server.port)
    response = client.request("get", "GET", "/acct/c/k.md")
    assert (response.status, response.body, response.headers.get("etag")) == (200, b"ok", '"e"')
    assert counted == ["get"] * 3
    assert server.connections == 1  # the answers kept the connection alive


def test_a_lasting_outage_returns_the_last_answer_after_three_retries(serve):
    server = serve(lambda h, n: (500, {"x-ms-error-code": "InternalError"}, b""))
    client, counted = _client(server.port)
    response = client.request("put", "PUT", "/acct/c/k.md", body=b"x")
    assert response.status == 500 and len(counted) == 4


def test_client_errors_are_not_retried(serve):
    server = serve(lambda h, n: (412, {"x-ms-error-code": "ConditionNotMet"}, b""))
    client, counted = _client(server.port)
    assert client.request("put", "PUT", "/acct/c/k.md", body=b"x").status == 412
    assert counted == ["put"]


def test_a_keep_alive_connection_closed_by_the_server_is_reopened_at_once(serve):
    """The server drops the connection it kept open (as an idle timeout does): the request goes
    out again on a fresh connection, without a back-off."""
    server = serve(lambda h, n: None if n == 1 else (200, {}, b"ok"))
    client, counted = _client(server.port)
    client.backoff = 60.0  # a back-off would hang the test
    assert client.request("get", "GET", "/a").status == 200
    assert client.request("get", "GET", "/b").status == 200
    assert [p for _, p, _ in server.requests] == ["/a", "/b", "/b"]
    assert server.connections == 2 and counted == ["get"] * 3


def test_nothing_listening_is_unreachable_after_the_retries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client, counted = _client(port)
    with pytest.raises(Unreachable, match=f"127.0.0.1:{port}"):
        client.request("list", "GET", "/acct/c", {"comp": "list"})
    assert counted == ["list"] * 4


def test_an_endpoint_that_drops_connections_is_unreachable_after_one_connect_wait():
    """A full listen queue drops the SYN, as a firewall does: the warmed connections' wait is
    the request's, and nothing is tried again (each try would wait as long)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        queued = []
        for _ in range(4):  # fill the queue: later connections get no answer
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            queued.append(sock)
        client, counted = _client(port, connect_timeout=0.3)
        opened: list[int] = []
        connect = client._connect
        client._connect = lambda conn, timeout: (opened.append(1), connect(conn, timeout))[1]
        client.warm(2)
        with pytest.raises(Unreachable, match="no answer to a connection within 0.3 s"):
            client.request("list", "GET", "/acct/c", {"comp": "list"})
        assert counted == ["list"] * (len(opened) - 2) and len(opened) <= 3, (counted, opened)
        for sock in queued:
            sock.close()


def test_https_to_a_plain_http_port_is_a_settings_error_not_an_outage(serve):
    server = serve(lambda h, n: (200, {}, b""))
    client = BlobHTTP("https", f"127.0.0.1:{server.port}")
    with pytest.raises(ConfigError, match="does not speak TLS"):
        client.request("list", "GET", "/acct/c", {"comp": "list"})


def test_requests_carry_the_version_date_sas_and_quoted_names(serve):
    server = serve(lambda h, n: (200, {}, b""))
    client, _ = _client(server.port, sas="sv=2025-11-05&sig=abc%2Bdef")
    client.request("list", "GET", "/acct/c/a b+#ü.md", {"comp": "list", "prefix": "p/"})
    method, path, headers = server.requests[0]
    assert method == "GET"
    assert path == "/acct/c/a%20b%2B%23%C3%BC.md?comp=list&prefix=p%2F&sv=2025-11-05&sig=abc%2Bdef"
    assert headers["x-ms-version"] and headers["x-ms-date"].endswith("GMT")
    assert "Authorization" not in headers  # a SAS token is the authorization


def test_shared_key_string_to_sign_follows_the_service_rules():
    key = SharedKey("acct", "a2V5")
    text = key.string_to_sign(
        "PUT",
        "/acct/c/a%20b.md",
        {"comp": "list", "Marker": "m 1"},
        {
            "Content-Length": "0",
            "If-Match": '"0x1"',
            "x-ms-version": "2025-11-05",
            "x-ms-date": "Mon, 23 Nov 2026 10:00:00 GMT",
            "Content-Type": "text/markdown",
        },
    )
    assert text == (
        'PUT\n\n\n\n\ntext/markdown\n\n\n"0x1"\n\n\n\n'  # a zero length is signed as empty
        "x-ms-date:Mon, 23 Nov 2026 10:00:00 GMT\nx-ms-version:2025-11-05\n"
        "/acct/acct/c/a%20b.md\ncomp:list\nmarker:m 1"
    )


def test_names_that_need_quoting_are_signed_as_azurite_expects(azure_url):
    """Azurite checks every Shared Key signature: awkward names must round-trip."""
    store = open_store(azure_url, "proj with space")
    store.ensure()
    names = ["a b.md", "plus+sign.md", "hash#and%percent.md", "ünï/cødé.md", "semi;colon.md"]
    for i, name in enumerate(names):
        store.create(name, f"{i}".encode())
    assert sorted(store.list()) == sorted(names)
    for i, name in enumerate(names):
        assert store.get(name)[0] == f"{i}".encode()


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_https_verifies_the_server_against_the_configured_bundle(serve, tmp_path, monkeypatch):
    cert, key = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = serve(lambda h, n: (200, {"ETag": '"t"'}, b"secure"), tls)
    monkeypatch.setenv("AZURE_STORAGE_KEY", "a2V5")
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    url = f"https://127.0.0.1:{server.port}/acct/mem/p"

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    store = open_store(url, "proj")
    assert store.get("a.md") == (b"secure", '"t"')
    assert server.requests[0][2]["Authorization"].startswith("SharedKey acct:")

    monkeypatch.delenv("REQUESTS_CA_BUNDLE")  # an unknown issuer is refused, never trusted
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    asked = len(server.requests)
    with pytest.raises(ConfigError, match="not trusted .*SSL_CERT_FILE or REQUESTS_CA_BUNDLE"):
        open_store(url, "proj").get("a.md")
    assert len(server.requests) == asked  # a configuration error: not retried

    # a directory of CA certificates (c_rehash layout) works as a bundle too
    import subprocess

    folder = tmp_path / "cadir"
    folder.mkdir()
    digest = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(cert)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (folder / f"{digest}.0").write_bytes(cert.read_bytes())
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(folder))
    assert open_store(url, "proj").get("a.md") == (b"secure", '"t"')
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert open_store(url, "proj").get("a.md") == (b"secure", '"t"')


class _RawServer:
    """A loopback server that reads one request head at a time and answers the n-th request
    (on any connection) with the raw bytes `answers[n]`; None closes the connection without an
    answer, and an n in `close_after` closes it once that answer is sent."""

    def __init__(self, answers: list[bytes | None], close_after: set[int]) -> None:
        self.answers, self.close_after = answers, close_after
        self.heads: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        buffered = b""
        while len(self.heads) < len(self.answers):
            while b"\r\n\r\n" not in buffered:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffered += chunk
            head, _, buffered = buffered.partition(b"\r\n\r\n")
            self.heads.append(head)
            n = len(self.heads) - 1
            if self.answers[n] is None:
                return
            conn.sendall(self.answers[n])
            if n in self.close_after:
                return

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def raw() -> Iterator[Callable[..., _RawServer]]:
    servers: list[_RawServer] = []

    def start(answers: list[bytes | None], close_after: set[int] | None = None) -> _RawServer:
        servers.append(_RawServer(answers, close_after or set()))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_answers_are_framed_by_length_chunks_or_close(raw):
    """Every framing RFC 9112 allows, on one kept-alive connection until the server closes."""
    server = raw(
        [
            b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nETag: "a"\r\n'
            b"Content-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n",
            b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\nETag: "b"\r\n\r\n',
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nX-Ms-Request-Id: r\r\n\r\nuntil the server closes",
        ]
    )
    client, _ = _client(server.port)
    created = client.request("put", "PUT", "/a", body=b"x")
    assert (created.status, created.reason, created.headers.get("ETag")) == (201, "Created", '"a"')
    assert client.request("get", "GET", "/b").body == b"hello, world"
    head = client.request("head", "HEAD", "/c")  # its Content-Length is a GET's: no body follows
    assert (head.status, head.body, head.headers.get("etag")) == (200, b"", '"b"')
    assert client.request("delete", "DELETE", "/d").status == 204
    closing = client.request("get", "GET", "/e")
    assert closing.body == b"until the server closes"
    assert closing.headers.get("X-MS-REQUEST-ID") == "r"
    assert client._idle == []  # an HTTP/1.0 answer without keep-alive closes: not kept
    assert len(server.heads) == 5 and server.heads[0].startswith(b"PUT /a HTTP/1.1\r\nHost: ")


def test_answers_that_are_not_http_are_retried_then_unreachable(raw):
    server = raw([b"SSH-2.0-OpenSSH\r\n\r\n"] * 4)
    client, counted = _client(server.port)
    with pytest.raises(Unreachable, match="cannot reach .*SSH-2.0"):
        client.request("get", "GET", "/a")
    assert counted == ["get"] * 4


def test_an_answer_cut_short_is_sent_again(raw):
    """A body shorter than its Content-Length, a chunk cut off: never returned as the answer."""
    server = raw(
        [
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        ],
        close_after={0, 1},
    )
    client, counted = _client(server.port)
    assert client.request("get", "GET", "/a").body == b"abc"
    assert len(server.heads) == 3 and counted == ["get"] * 3


@given(st.one_of(st.text(max_size=40), st.binary(max_size=30).map(lambda b: b64encode(b).decode())))
@settings(max_examples=400, deadline=None)
def test_account_keys_are_read_as_base64_b64decode_validate_reads_them(key):
    try:
        expected = b64decode(key, validate=True)
    except ValueError:
        with pytest.raises(ConfigError, match="not valid base64") as refused:
            SharedKey("acct", key)
        # one sentence, and the key is nowhere in it or in a chained exception
        assert str(refused.value) == "the account key for 'acct' is not valid base64"
        assert refused.value.__cause__ is None and refused.value.__suppress_context__
    else:
        assert SharedKey("acct", key).key == expected


def test_every_interim_answer_is_skipped_and_never_answers_the_next_request(raw):
    """A 102 or 103 before the real answer was taken for it: get('a.md') returned an empty
    body, and the next request on the connection got a.md's bytes."""
    server = raw(
        [
            b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
            b'HTTP/1.1 200 OK\r\nContent-Length: 4\r\nETag: "a"\r\n\r\naaaa',
            b'HTTP/1.1 200 OK\r\nContent-Length: 4\r\nETag: "b"\r\n\r\nbbbb',
        ]
    )
    client, _ = _client(server.port)
    assert client.request("get", "GET", "/a.md").body == b"aaaa"
    assert client.request("get", "GET", "/b.md").body == b"bbbb"


@pytest.mark.parametrize("length", ["\u00b2", "-1", "1e3", "0x10"])
def test_a_length_that_is_not_a_number_is_a_bad_answer_and_the_connection_is_dropped(raw, length):
    answer = f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\nabc".encode()
    server = raw([answer] * 4)
    client, counted = _client(server.port)
    with pytest.raises(Unreachable, match=f"Content-Length of '{length}'"):
        client.request("get", "GET", "/a.md")
    assert counted == ["get"] * 4 and client._idle == []


def test_a_huge_length_is_refused_before_anything_is_allocated(raw):
    """2 GB announced for 10 bytes: refused against the cap, not read (nor allocated)."""
    server = raw([b"HTTP/1.1 200 OK\r\nContent-Length: 2000000000\r\n\r\n0123456789"] * 4)
    client, counted = _client(server.port)
    with pytest.raises(TooLarge, match="declares 2000000000 bytes, more than the 1000 bytes"):
        client.request("get", "GET", "/a.md", limit=1000)
    assert counted == ["get"]  # it would be as large again: not retried
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"400\r\n" + b"x" * 1024
    server = raw([chunked + b"\r\n" + b"400\r\n" + b"y" * 1024 + b"\r\n0\r\n\r\n"] * 4)
    client, _ = _client(server.port)
    with pytest.raises(TooLarge, match="more than the 1500 bytes expected"):
        client.request("get", "GET", "/a.md", limit=1500)


def test_bytes_are_counted_for_every_attempt(serve):
    server = serve(lambda h, n: (503, {}, b"") if n < 2 else (201, {"ETag": '"e"'}, b""))
    moved: list[tuple[str, int, int]] = []
    client = BlobHTTP("http", f"127.0.0.1:{server.port}", on_request=lambda *a: moved.append(a))
    client.backoff = client.jitter = 0.0
    client.request("put", "PUT", "/a.md", body=b"12345")
    assert moved == [("put", 5, 0)] * 3  # --stats said "up 0 B" after retried PUTs


def test_retry_after_is_honoured_and_a_long_one_is_an_outage(serve):
    import time as clock

    server = serve(lambda h, n: (503, {"Retry-After": "1"}, b"") if n == 0 else (200, {}, b"k"))
    client, _ = _client(server.port)
    started = clock.monotonic()
    assert client.request("get", "GET", "/a.md").body == b"k"
    assert clock.monotonic() - started >= 0.9
    server = serve(lambda h, n: (429, {"Retry-After": "3600"}, b""))
    client, counted = _client(server.port)
    assert client.request("get", "GET", "/a.md").status == 429 and counted == ["get"]


def test_an_account_key_is_refused_over_plain_http_to_a_storage_account(monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_KEY", "a2V5")
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    with pytest.raises(ConfigError, match="plain http:// to a storage account"):
        open_store("http://acct.blob.core.windows.net/c/p", "proj")
    assert open_store("http://127.0.0.1:10000/acct/c/p", "proj")  # Azurite's form is fine


class _HeldHandshakes(BlobHTTP):
    """Connections opened ahead (`warm`) finish connecting only when the test says so."""

    def __init__(self, *args: object, fail: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.release = threading.Event()
        self.fail = fail

    def _connect(self, conn, timeout):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "memsync-warm":
            assert self.release.wait(10)
            if self.fail:
                raise ConnectionRefusedError("held, then refused")
        super()._connect(conn, timeout)


def _burst(client: BlobHTTP, count: int) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=client.request, args=("get", "GET", f"/k{i}")) for i in range(count)
    ]
    for thread in threads:
        thread.start()
    return threads


def _when(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("the requests never got there")


def test_requests_wait_for_the_connections_opened_ahead_rather_than_open_more(serve):
    """Four connections are being opened ahead; four requests at once take them as they open
    instead of opening four more: each connection is a handshake more, on both ends."""
    server = serve(lambda h, n: (200, {}, b"ok"))
    client = _HeldHandshakes("http", f"127.0.0.1:{server.port}", connect_timeout=30)
    client.warm(4)
    threads = _burst(client, 4)
    _when(lambda: client._waiting == 4)
    assert server.connections == 0
    client.release.set()
    for thread in threads:
        thread.join(10)
    client.close()
    assert len(server.requests) == 4 and server.connections == 4


def test_a_request_waiting_for_a_connection_that_fails_opens_its_own(serve):
    server = serve(lambda h, n: (200, {}, b"ok"))
    client = _HeldHandshakes("http", f"127.0.0.1:{server.port}", fail=True, connect_timeout=30)
    client.warm(2)
    threads = _burst(client, 2)
    _when(lambda: client._waiting == 2)
    client.release.set()
    for thread in threads:
        thread.join(10)
    client.close()
    assert len(server.requests) == 2 and 1 <= server.connections <= 2  # one may be reused
