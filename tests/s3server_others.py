"""S3 servers beside moto for the conditional-write checks (memsync/stores/s3probe.py).

- s3rver (npm, installed by scripts/test.sh, its command in MEMSYNC_S3RVER): a small S3 server
  that ignores `If-None-Match` and `If-Match` on PutObject and DeleteObject (3.7.1 answers 200
  and 204 to all of them) and answers 500 to a ListObjectsV2 with `encoding-type=url`. It cannot
  hold memsync's guarantees, so it serves as the real service memsync must refuse.
- `StrippingProxy`: tests/netfaults.py's proxy in front of moto that removes the named request
  headers of the named methods before forwarding: the real server behind, only the conditions
  gone, as on a service (or a middlebox) that drops them. moto without IAM authorization does
  not check signatures, so the requests still land.
When CI=true and s3rver cannot start, its tests fail; elsewhere they skip, saying why."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from tests.netfaults import FaultProxy
from tests.s3server import aws_env, free_port, unavailable, use_aws_env

S3RVER_KEY = "S3RVER"  # the one access key and secret s3rver accepts


class StrippingProxy(FaultProxy):
    """A counting proxy that forwards each request without the headers `drop[method]` names."""

    def __init__(self, upstream_port: int, drop: dict[str, tuple[str, ...]]) -> None:
        self.drop = drop
        super().__init__(upstream_port)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler()
        proxy = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def _forward(self, body):  # type: ignore[no-untyped-def]
                for name in proxy.drop.get(self.command, ()):
                    del self.headers[name]
                return super()._forward(body)

        return Handler


class S3rver:
    def __init__(self, command: str) -> None:
        self.command = command
        self.port = free_port()
        self.data = tempfile.mkdtemp(prefix="s3rver-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        self.proc = subprocess.Popen(
            [
                self.command,
                "-d",
                self.data,
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--silent",
                "--no-vhost-buckets",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"s3rver exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"s3rver did not listen on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.data, ignore_errors=True)

    def env_for(self) -> dict[str, str]:
        return aws_env(self.endpoint, S3RVER_KEY, S3RVER_KEY)


def _unavailable(reason: str) -> None:
    unavailable("s3rver", reason)


@pytest.fixture(scope="session")
def s3rver_server() -> Iterator[S3rver]:
    command = os.environ.get("MEMSYNC_S3RVER") or shutil.which("s3rver")
    if not command or not os.access(command, os.X_OK):
        _unavailable("MEMSYNC_S3RVER does not name the s3rver command")
    server = S3rver(command)  # type: ignore[arg-type]
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        _unavailable(f"it could not start: {exc}")
    yield server
    server.stop()


@pytest.fixture
def s3rver_env(s3rver_server: S3rver, monkeypatch: pytest.MonkeyPatch) -> S3rver:
    """s3rver's credential and endpoint in the environment."""
    use_aws_env(monkeypatch, s3rver_server.env_for())
    return s3rver_server
