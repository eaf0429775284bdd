"""A real S3 server for the tests: moto's server mode, started once per session on a free
loopback port and stopped at the end (like tests/azurite.py). moto honours `If-None-Match: *`
and `If-Match` on PutObject and DeleteObject and answers 412 as S3 does. When CI=true and it
cannot start, tests fail."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

ACCESS_KEY = "AKIAMEMSYNCTEST00001"
SECRET_KEY = "memsync-test-secret-key/not-a-real-one0"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MotoServer:
    """One moto server process; `stop()` and `start()` simulate an outage on the same port."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.env = env or {}
        self.extra_args: tuple[str, ...] = ()  # e.g. --ssl-cert, --ssl-key (then scheme https)
        self.scheme = "http"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        env = {**os.environ, **self.env}
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                str(self.port),
                *self.extra_args,
            ],
            stdout=subprocess.DEVNULL,
            # a file, not a pipe: moto logs every request to stderr, and a pipe nobody reads
            # fills after some hundred requests and hangs the server
            stderr=self.log,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                err = self.log.read().decode(errors="replace")
                raise RuntimeError(f"moto exited with {self.proc.returncode}: {err[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto did not listen on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.log.close()
        self.proc = None

    def env_for(self, endpoint: str | None = None) -> dict[str, str]:
        return aws_env(endpoint or self.endpoint)


def aws_env(endpoint: str, key: str = ACCESS_KEY, secret: str = SECRET_KEY) -> dict[str, str]:
    """The environment a memsync process needs to reach an S3 server at `endpoint` with a
    static key (and no shared AWS files of the machine's)."""
    return {
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }


def bucket_url(prefix: str = "memory") -> str:
    """A remote URL for a fresh bucket, so tests never see each other's objects."""
    return f"s3://t{uuid.uuid4().hex[:20]}/{prefix}"


AWS_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
)


def clear_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)


def use_aws_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Only `env` of the AWS variables, for the rest of the test."""
    clear_aws_env(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def unavailable(server: str, reason: str, how: str = "run scripts/test.sh to install it") -> None:
    """A test server that cannot run: its tests fail in CI and skip elsewhere, saying why."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{server} is required in CI and {reason}", pytrace=False)
    pytest.skip(f"{server} not available: {reason} ({how})")


def _unavailable(reason: str) -> None:
    unavailable("moto's S3 server", reason)


def start_moto(env: dict[str, str] | None = None) -> MotoServer:
    try:
        import moto.server  # noqa: F401
    except ImportError:
        _unavailable("moto[server] is not installed")
    server = MotoServer(env)
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        _unavailable(f"it could not start: {exc}")
    return server


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory):
    server = start_moto()
    yield server
    server.stop()


@pytest.fixture
def s3_url(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A fresh bucket's URL on the shared moto server, its credential in the environment."""
    use_aws_env(monkeypatch, moto_server.env_for())
    return bucket_url()
