"""A real Azurite server for the tests: started once per session on a free loopback port, with
its own data folder, and stopped at the end. When CI=true and it cannot start, tests fail."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
ROOT = Path(__file__).resolve().parent.parent


def azurite_command() -> str | None:
    candidates = [
        os.environ.get("MEMSYNC_AZURITE"),
        str(ROOT / ".tools" / "node_modules" / ".bin" / "azurite-blob"),
        shutil.which("azurite-blob"),
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Azurite:
    """One azurite-blob process. `stop()` and `start()` simulate an outage on the same port."""

    def __init__(
        self, command: str, location: Path, extra: tuple[str, ...] = (), scheme: str = "http"
    ) -> None:
        self.command = command
        self.location = location
        self.extra = extra  # e.g. --cert, --key, --oauth basic (then scheme "https")
        self.scheme = scheme
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint={self.endpoint};"
        )

    def start(self, timeout: float = 30.0) -> None:
        self.location.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                self.command,
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--location",
                str(self.location),
                "--skipApiVersionCheck",
                "--loose",
                "--silent",
                # Azurite 3.35+ sends telemetry by default: off the loopback, and its open
                # connections kept every stop waiting 5 s before the kill
                "--disableTelemetry",
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"azurite exited with {self.proc.returncode}: {err[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"azurite did not listen on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def url(self, prefix: str = "memory") -> str:
        """A remote URL for a fresh container, so tests never see each other's blobs.

        Letters only: a random run of 13+ digits can pass the Luhn check, and the CLI masks
        card-number-like text in what it prints, container names included (s31 CI flake)."""
        name = uuid.uuid4().hex[:16].translate(_LETTERS)
        return f"{self.endpoint}/t{name}/{prefix}"


_LETTERS = str.maketrans("0123456789", "ghijklmnop")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Azurite is required in CI and {reason}", pytrace=False)
    pytest.skip(f"Azurite not available: {reason} (run scripts/test.sh to install it)")


def start_azurite(location: Path, extra: tuple[str, ...] = (), scheme: str = "http") -> Azurite:
    command = azurite_command()
    if command is None:
        _unavailable("azurite-blob was not found")
    server = Azurite(command, location, extra, scheme)  # type: ignore[arg-type]
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        _unavailable(f"it could not start: {exc}")
    return server


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory):
    server = start_azurite(tmp_path_factory.mktemp("azurite"))
    yield server
    server.stop()


@pytest.fixture
def azure_url(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh container on the shared Azurite, with its credential in the environment."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    return azurite.url()
