"""The offline probe asks the store where its remote is reached (memsync.stores.reach), so a
hook skips the network for the marker's TTL, and probes the right host after it, on every kind
of remote: S3 through AWS_ENDPOINT_URL(_S3) or AWS's regional endpoint, a memory store through
ANTHROPIC_BASE_URL, any of them behind the proxy the environment names."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from memsync.stores.reach import ANTHROPIC_API, Address, address, folder
from memsync.sync import offline
from tests.conftest import NO_FCNTL
from tests.devices import make_device
from tests.test_hooks import hook, log_text, primer, start_payload

_ISOLATED = ("AWS_", "ANTHROPIC_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def bare_env(monkeypatch, tmp_path):
    """No AWS, Anthropic or proxy setting from the machine: each test sets its own."""
    for name in list(os.environ):
        if name.upper().startswith(_ISOLATED):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    return monkeypatch


def test_s3_is_reached_where_the_aws_cli_would_connect(bare_env, tmp_path):
    assert address("s3://bucket/p") == Address("bucket.s3.us-east-1.amazonaws.com", 443)
    bare_env.setenv("AWS_REGION", "eu-west-3")
    assert address("s3://my.bucket/p") == Address("s3.eu-west-3.amazonaws.com", 443)
    (tmp_path / "aws-config").write_text(
        "[default]\nregion = eu-west-1\ns3 =\n  endpoint_url = http://minio.lan:9000\n"
    )
    assert address("s3://bucket/p") == Address("minio.lan", 9000)
    bare_env.setenv("AWS_ENDPOINT_URL", "https://r2.example:8443")
    assert address("s3://bucket/p") == Address("r2.example", 8443)
    bare_env.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    assert address("s3://bucket/p") == Address("127.0.0.1", 9)


def test_a_memory_store_is_reached_at_the_sdk_base_url(bare_env):
    assert ANTHROPIC_API == "https://api.anthropic.com"
    assert address("memstore://memstore_x/p") == Address("api.anthropic.com", 443)
    bare_env.setenv("ANTHROPIC_BASE_URL", "http://[::1]:8080/v")
    assert address("memstore://memstore_x") == Address("::1", 8080)


def test_azure_folder_and_in_process_remotes(bare_env, tmp_path):
    assert address("https://acct.blob.core.windows.net/c/p?sv=1&sig=x") == Address(
        "acct.blob.core.windows.net", 443
    )
    assert address("http://127.0.0.1:10000/devstoreaccount1/c") == Address("127.0.0.1", 10000)
    assert address("memory://x") is None and folder("memory://x") is None
    assert address(tmp_path.as_uri()) is None and folder(tmp_path.as_uri()) == str(tmp_path)
    assert offline.probe((tmp_path / "gone").as_uri()).startswith("the folder")


def test_the_proxy_is_what_is_reached_unless_no_proxy_names_the_host(bare_env):
    bare_env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    bare_env.setenv("AWS_ENDPOINT_URL", "https://s3.internal:443")
    assert address("s3://bucket/p") == Address("proxy.corp", 3128)
    assert address("memstore://memstore_x") == Address("proxy.corp", 3128)
    assert address("http://127.0.0.1:10000/a/c") == Address("127.0.0.1", 10000)  # http: none
    bare_env.setenv("NO_PROXY", "s3.internal")
    assert address("s3://bucket/p") == Address("s3.internal", 443)


def test_a_setting_the_probe_cannot_read_lets_the_hook_try(bare_env):
    bare_env.setenv("AWS_ENDPOINT_URL", "ftp://x")  # the sync says what is wrong
    assert address("s3://bucket/p") is None and offline.probe("s3://bucket/p") is None


class DeadRemote:
    """A loopback port that accepts connections and drops them at once (an outage as the
    client sees it), remembering each one's peer."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.peers: list[int] = []
        self.own: set[int] = set()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.peers.append(peer[1])
            conn.close()

    def connections(self) -> int:
        """Connections made so far by others, once every one queued before now is accepted:
        a connection of its own goes last in the queue and is waited for."""
        with socket.create_connection(("127.0.0.1", self.port)) as mine:
            port = mine.getsockname()[1]
        self.own.add(port)
        for _ in range(1000):
            if port in self.peers:
                break
            time.sleep(0.01)
        return len([p for p in self.peers if p not in self.own])

    def stop(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() so the port really closes
        self.sock.close()


def _remote_env(kind: str, port: int) -> tuple[str, dict[str, str]]:
    if kind == "s3":
        return "s3://bucket/memsync", {
            "AWS_ACCESS_KEY_ID": "AKIAOFFLINE",
            "AWS_SECRET_ACCESS_KEY": "secret",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
    pytest.importorskip("anthropic")
    return "memstore://memstore_offline", {
        "ANTHROPIC_API_KEY": "sk-ant-offline",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
    }


@pytest.mark.skipif(NO_FCNTL, reason="a remote protocol's reachability, not the lock")
@pytest.mark.parametrize("kind", ["s3", "memstore"])
def test_hooks_skip_an_unreachable_remote_for_the_ttl_and_probe_its_endpoint(
    tmp_path, bare_env, kind
):
    dead = DeadRemote()
    remote, env = _remote_env(kind, dead.port)
    device = make_device(tmp_path, "d", remote, **env)
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "not refreshed from the remote" in context
    tried = dead.connections()
    assert tried >= 1  # the first hook went to the endpoint and found it down
    state_dir = next((device.home / "state").iterdir())
    assert offline.read(state_dir) is not None
    # the second hook within the TTL queues at once: not one connection
    context = primer(hook(device, "session-start", start_payload(device, "s-2", "resume")))
    assert dead.connections() == tried
    assert log_text(device).count("the remote is unreachable") == 2  # each hook said so
    # the probe goes where the store connects: one connection to the endpoint, no request
    for name, value in env.items():
        bare_env.setenv(name, value)
    assert offline.probe(remote) is None and dead.connections() == tried + 1
    # the endpoint gone: after the TTL the probe alone says so and renews the marker, the hook
    # does not sync (a sync would have written its own reason)
    dead.stop()
    marker = state_dir / "offline.json"
    marker.write_text(json.dumps({"at": time.time() - 3600, "reason": "old"}))
    assert offline.probe(remote) is not None
    hook(device, "stop", {"session_id": "s-2", "cwd": str(device.root), "hook_event_name": "Stop"})
    renewed = offline.read(state_dir)
    assert renewed is not None and renewed["reason"] == "old"
    assert time.time() - renewed["at"] < offline.TTL
