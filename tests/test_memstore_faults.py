"""The memory-store remote behind the fault proxy (tests/netfaults.py) in front of the fake
memory-store server: a damaged answer is asked again and never used, a write whose answer was
lost is queued and settled by the next sync, and no request outlives the command's deadline."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from memsync.context import config
from memsync.stores import open_store
from memsync.sync.engine import Engine
from memsync.util.errors import AlreadyExists, Unreachable
from tests.conftest import NO_FCNTL, write_memory
from tests.memstore_server import (
    MemoryStoreServer,
    memstore_server_fixture,
    shared_server,
)
from tests.netfaults import FaultProxy

__all__ = ["memstore_server_fixture"]

STORE = "memstore_test01"
BODY = "A line of memory that is long enough to be cut in half.\n" * 8
READ = r"^GET .*/memories/mem_"
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")


@pytest.fixture(scope="module")
def proxy_started() -> Iterator[FaultProxy]:
    """One proxy a module in front of the fake server (stopping one takes half a second)."""
    server = FaultProxy(int(shared_server().url.rsplit(":", 1)[1]))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def proxy(proxy_started: FaultProxy, memstore_server: MemoryStoreServer, monkeypatch) -> FaultProxy:
    """The proxy, with no fault armed; the SDK's base URL points at it."""
    proxy_started.disarm()
    proxy_started.fired.clear()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{proxy_started.port}")
    return proxy_started


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
    store.deadline = time.monotonic() + 1
    started = time.monotonic()
    with pytest.raises(Unreachable):
        store.get("a.md")
    # a 1 s deadline, not the SDK's retries after it (three attempts and their back-off)
    assert time.monotonic() - started < 2.5
    proxy.disarm()


def test_a_device_whose_update_lost_its_answer_settles_on_the_next_sync(
    tmp_path, proxy, memstore_server, monkeypatch
):
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    memory = tmp_path / "memory"
    write_memory(memory, "user_role.md", "Engineer.\n", type="user")
    engine = Engine(config.resolve(memory_dir=memory, remote=f"memstore://{STORE}/m", project="p"))
    engine.run("sync")
    write_memory(memory, "user_role.md", "Staff engineer.\n", type="user")
    proxy.arm("reset", r"^POST .*/memories/mem_")
    offline = engine.run("sync")
    assert offline.offline and offline.queued == ["user_role.md"] and proxy.fired
    settled = engine.run("sync")
    assert not settled.offline and not settled.queued
    stored = memstore_server.contents(STORE)["/m/p/user_role.md"]
    assert stored.encode() == (memory / "user_role.md").read_bytes()
    assert "Staff engineer." in stored
    engine.close()
