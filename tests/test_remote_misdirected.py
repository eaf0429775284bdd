"""A remote setting that points somewhere wrong, through the CLI: an endpoint that is not the
object store (another web server answering 404 to everything), a remote URL whose prefix has
empty, '.' or '..' segments, an https:// endpoint that accepts connections and never answers.
Each is one sentence naming what to fix, within 3 s, and nothing changes here or there."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memsync.stores.azure import AzureStore, BlobURL
from memsync.stores.s3 import S3URL, S3Store
from memsync.util.errors import ConfigError, NotFound
from tests.conftest import NO_FCNTL
from tests.devices import Device, make_device
from tests.s3server import MotoServer, bucket_url

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="the remote's answers, not the lock, are tested")

AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
STATIC_KEY = {
    "AWS_ACCESS_KEY_ID": "AKIA0000000000000000",
    "AWS_SECRET_ACCESS_KEY": "s",
    "AWS_REGION": "us-east-1",
}


class NotFoundEverywhere:
    """A web server that is not an object store: 404 and an HTML page for every request."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                body = b"<html><body><h1>Not Found</h1></body></html>"
                self.send_response(404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = answer

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that hangs up after its answer is not news

        self.httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def not_found() -> Iterator[NotFoundEverywhere]:
    server = NotFoundEverywhere()
    yield server
    server.stop()


def _one_sentence(device: Device, command: str, code: int) -> str:
    before = device.files()
    started = time.monotonic()
    proc = device.run(command, check=code)
    assert time.monotonic() - started < 3.0 + 1.0  # the process's own start-up included
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert device.files() == before
    return lines[0]


def test_an_endpoint_answering_404_to_everything_is_not_taken_for_an_empty_bucket(
    tmp_path, moto_server: MotoServer, not_found
):
    url = bucket_url()
    device = make_device(tmp_path, "d", url, **moto_server.env_for())
    for i in range(3):
        device.write(f"project_{i}.md", f"fact {i}\n", type="project")
    device.run("sync")
    device.env_extra.update(moto_server.env_for(not_found.endpoint))  # a wrong endpoint
    for command in ("sync", "pull", "push", "ls"):
        said = _one_sentence(device, command, 1)
        assert "is empty" not in said and "mount it" not in said, (command, said)
        assert f"{not_found.endpoint} answered 404 without an S3 error" in said, said
        assert "not an S3 service" in said and "AWS_ENDPOINT_URL" in said, said
    fresh = make_device(tmp_path, "fresh", url, **moto_server.env_for(not_found.endpoint))
    fresh.write("project_a.md", "a fact\n", type="project")
    for command in ("sync", "push"):  # no records: it would create the bucket
        assert "not an S3 service" in _one_sentence(fresh, command, 1)
    before = fresh.files()
    keys = fresh.run("keys", "init", check=1)
    assert "not an S3 service" in keys.stderr and fresh.files() == before, keys.stderr
    doctor = fresh.run("doctor", check=1)  # was: "the bucket does not exist yet"
    assert "not an S3 service" in doctor.stdout and "does not exist" not in doctor.stdout


def test_a_missing_bucket_on_an_s3_service_is_still_a_missing_bucket(s3_url):
    store = S3Store(s3_url, "p")
    with pytest.raises(NotFound, match="bucket .* does not exist"):
        store.list()


def test_an_azure_url_at_a_server_that_is_not_azure_says_so(tmp_path, not_found, monkeypatch):
    url = f"{not_found.endpoint}/devstoreaccount1/memory/p"
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    monkeypatch.setenv("AZURE_STORAGE_KEY", AZURITE_KEY)
    with pytest.raises(ConfigError, match="not an Azure Blob endpoint"):
        AzureStore(url, "p").list()
    device = make_device(tmp_path, "d", url, AZURE_STORAGE_KEY=AZURITE_KEY)
    device.write("project_a.md", "a fact\n", type="project")
    for command in ("sync", "push"):
        said = _one_sentence(device, command, 1)
        assert "answered 404 without an Azure Storage error code" in said and "--remote" in said
    doctor = device.run("doctor", check=1)  # was: "the container does not exist yet"
    assert "not an Azure Blob endpoint" in doctor.stdout and "does not exist" not in doctor.stdout


BAD_PREFIXES = [
    "s3://mem/../etc",
    "s3://mem//x",
    "s3://mem/./x",
    "s3://mem/x/..",
    "s3://mem/x//y/",
]


@pytest.mark.parametrize("url", BAD_PREFIXES)
def test_an_s3_prefix_with_dot_or_empty_segments_is_refused(url):
    with pytest.raises(ConfigError, match=r"empty, '\.' or '\.\.' segment.*MEMSYNC_REMOTE"):
        S3URL.parse(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://acct.blob.core.windows.net/c/../other",
        "https://acct.blob.core.windows.net/c//x",
        "http://127.0.0.1:10000/devstoreaccount1/c/./x",
    ],
)
def test_an_azure_path_with_dot_or_empty_segments_is_refused(url):
    with pytest.raises(ConfigError, match=r"empty, '\.' or '\.\.' segment.*MEMSYNC_REMOTE"):
        BlobURL.parse(url)


@pytest.mark.parametrize("url", ["s3://mem/", "s3://mem", "s3://mem/a/b/", "s3://mem/a.b/c..d"])
def test_plain_prefixes_and_one_trailing_slash_are_accepted(url):
    assert ".." not in S3URL.parse(url).prefix.split("/")


def test_the_cli_refuses_a_dot_dot_prefix_before_any_request(tmp_path, moto_server, s3_url):
    bucket = S3URL.parse(s3_url).bucket
    device = make_device(tmp_path, "d", f"s3://{bucket}/../etc", **moto_server.env_for())
    device.write("project_a.md", "a fact\n", type="project")
    for command in ("sync", "push"):
        said = _one_sentence(device, command, 1)
        assert f"s3://{bucket}/../etc" in said and "MEMSYNC_REMOTE" in said, said
    assert not S3Store(s3_url, "").exists()  # not even the bucket was made
    assert not (device.home / "state").exists()  # nor state for that remote here
    started = device.hook("session-start")  # a hook says it and never fails the session
    assert "MEMSYNC_REMOTE" in started.stdout, started.stdout


@pytest.fixture
def silent() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never sends a byte."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_an_https_endpoint_that_accepts_and_never_answers_is_unreachable_within_3_s(
    tmp_path, silent, kind
):
    """Real services are TLS only, and the TLS handshake is inside the connect wait (2.5 s):
    a silent https:// endpoint is unreachable as soon as one that drops connections."""
    if kind == "s3":
        env = {
            **STATIC_KEY,
            "AWS_ENDPOINT_URL": f"https://127.0.0.1:{silent}",
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
        }
        device = make_device(tmp_path, "d", "s3://mem/p", **env)
    else:
        url = f"https://127.0.0.1:{silent}/devstoreaccount1/memory/p"
        device = make_device(tmp_path, "d", url, AZURE_STORAGE_KEY=AZURITE_KEY)
    device.write("project_a.md", "a fact\n", type="project")
    said = _one_sentence(device, "sync", 3)
    assert "unreachable" in said and "queued" in said, said
