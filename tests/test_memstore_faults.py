"""The memory-store remote behind the fault proxy (tests/netfaults.py) in front of the fake
memory-store server: a damaged answer is asked again and never used, a write whose answer was
lost is queued and settled by the next sync, and no request outlives the command's deadline."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from memsync.stores import open_store
from memsync.util.errors import AlreadyExists, Unreachable
from tests.conftest import NO_FCNTL
from tests.devices import make_device
from tests.memstore_server import MemoryStoreServer, memstore_server_fixture
from tests.netfaults import FaultProxy

__all__ = ["memstore_server_fixture"]

STORE = "memstore_test01"
BODY = "A line of memory that is long enough to be cut in half.\n" * 8
READ = r"^GET .*/memories/mem_"
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")


@pytest.fixture
def proxy(memstore_server: MemoryStoreServer, monkeypatch) -> Iterator[FaultProxy]:
    """The proxy in front of the fake server; the SDK's base URL points at the proxy."""
    server = FaultProxy(int(memstore_server.url.rsplit(":", 1)[1]))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.port}")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("fault", ["cut", "cut-length", "lie", "garble", "reset", "503", "429"])
def test_a_damaged_read_is_asked_again_and_never_returned(proxy, fault):
    store = open_store(f"memstore://{STORE}", "proj")
    etag = store.create("a.md", BODY.encode())
    store.list()
    proxy.arm(fault, READ)
    assert store.get("a.md") == (BODY.encode(), etag)
    assert proxy.fired and proxy.fired[0][0] == fault


@pytest.mark.parametrize("fault", ["cut", "lie", "garble"])
def test_a_read_damaged_every_time_is_one_sentence(proxy, fault):
    store = open_store(f"memstore://{STORE}", "proj")
    store.create("a.md", BODY.encode())
    store.list()
    proxy.arm(fault, READ, times=100)
    with pytest.raises(Unreachable) as refused:
        store.get("a.md")
    assert "\n" not in str(refused.value) and "damaged" in str(refused.value)


def test_a_create_whose_answer_was_lost_has_landed_once(proxy, memstore_server):
    store = open_store(f"memstore://{STORE}", "proj")
    proxy.arm("cut", r"^POST .*/memories(\?|$)")
    with pytest.raises(Unreachable):
        store.create("a.md", BODY.encode())
    with pytest.raises(AlreadyExists):  # sent once: the second try meets the first
        store.create("a.md", BODY.encode())
    assert [v.operation for v in memstore_server.versions(STORE)] == ["created"]


def test_no_request_outlives_the_deadline(proxy):
    store = open_store(f"memstore://{STORE}", "proj")
    store.create("a.md", BODY.encode())
    store.list()
    proxy.arm("stall", READ, times=100)
    store.deadline = time.monotonic() + 2
    started = time.monotonic()
    with pytest.raises(Unreachable):
        store.get("a.md")
    assert time.monotonic() - started < 4  # a 2 s deadline, not the SDK's retries after it


def test_a_device_whose_update_lost_its_answer_settles_on_the_next_sync(
    tmp_path, proxy, memstore_server
):
    remote = f"memstore://{STORE}/memsync"
    device = make_device(tmp_path, "laptop", remote)
    device.write("user_role.md", "Engineer.\n", type="user")
    device.run("sync")
    device.write("user_role.md", "Staff engineer.\n", type="user")
    proxy.arm("reset", r"^POST .*/memories/mem_")
    offline = device.run("sync", check=3)
    assert "queued" in (offline.stdout + offline.stderr).lower()
    assert proxy.fired
    device.run("sync")
    stored = memstore_server.contents(STORE)["/memsync/e2e-project/user_role.md"]
    assert stored == device.files()["user_role.md"].decode()
    assert "Staff engineer." in stored
