"""The memory-store remote against the fake memory-store server, driven only through the SDK:
the storage contract, paging, the service's limits refused before any request, the 200 of an
update that is already as asked, and where the SDK is imported."""

from __future__ import annotations

import hashlib

import pytest

from memsync.stores import open_store
from memsync.stores.memstore import MAX_CONTENT, MemoryStoreStore
from memsync.util.errors import (
    AuthError,
    ConfigError,
    NotFound,
    PreconditionFailed,
    Unholdable,
    Unreachable,
)
from tests.conftest import NO_FCNTL
from tests.memstore_server import (
    Failure,
    MemoryStoreServer,
    memstore_server_fixture,
)
from tests.store_contract import StoreContract

__all__ = ["memstore_server_fixture"]

STORE = "memstore_test01"
# a remote protocol's tests, not the lock's: the no-fcntl pass has nothing to add here
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")


class TestMemoryStoreStore(StoreContract):
    @pytest.fixture
    def store(self, memstore_server):
        store = open_store(f"memstore://{STORE}/memsync", "proj")
        yield store
        store.close()


def _paths(server: MemoryStoreServer) -> list[str]:
    return sorted(server.contents(STORE))


def test_requests_are_the_sdks_with_the_beta_header(memstore_server):
    store = open_store(f"memstore://{STORE}/team", "proj")
    etag = store.create("notes/a.md", b"hello")
    assert etag == hashlib.sha256(b"hello").hexdigest()
    assert _paths(memstore_server) == ["/team/proj/notes/a.md"]
    for request in memstore_server.requests:
        assert request.headers["anthropic-beta"] == "agent-memory-2026-07-22"
        assert request.headers["authorization"] == f"Bearer {memstore_server.api_key}"
    create = memstore_server.requests[-1]
    assert (create.method, create.path) == ("POST", f"/v1/memory_stores/{STORE}/memories")
    assert create.body == {"path": "/team/proj/notes/a.md", "content": "hello"}


def test_a_listing_pages_and_keeps_other_projects_out(memstore_server):
    for i in range(230):
        memstore_server.put(STORE, f"/m/proj/f{i:03d}.md", f"body {i}")
    memstore_server.put(STORE, "/m/other/x.md", "not ours")
    memstore_server.put(STORE, "/m/projx/y.md", "not ours either")
    store = open_store(f"memstore://{STORE}/m", "proj")
    listing = store.list()
    assert len(listing) == 230
    assert listing["f007.md"].etag == hashlib.sha256(b"body 7").hexdigest()
    assert store.stats.requests["list"] == 3  # 100 + 100 + 30
    assert store.projects() == ("other", "proj", "projx")


def test_equal_content_under_a_stale_hash_is_a_success(memstore_server):
    """A write that landed but whose answer was lost, sent again: the service answers 200
    (content already as asked), and the store returns the hash it holds."""
    store = open_store(f"memstore://{STORE}", "proj")
    old = store.create("a.md", b"one")
    new = store.replace("a.md", b"two", old)
    assert store.replace("a.md", b"two", old) == new
    with pytest.raises(PreconditionFailed):
        store.replace("a.md", b"three", old)
    versions = [v.operation for v in memstore_server.versions(STORE)]
    assert versions == ["created", "modified"]  # the repeat added no version


def test_a_file_the_store_cannot_hold_is_refused_before_any_request(memstore_server):
    store = open_store(f"memstore://{STORE}", "proj")
    store.create("a.md", b"x")
    store.list()
    sent = len(memstore_server.requests)
    cases = {
        "big.md": (b"x" * (MAX_CONTENT + 1), "102400"),
        "/".join(["d"] * 20) + ".md": (b"x", "21 segments"),
        "cafe\u0301.md": (b"x", "NFC"),
        "zw\u200bsp.md": (b"x", r"U\+200B"),
        "latin1.md": ("caf\xe9".encode("latin-1"), "UTF-8"),
        "a.md/inside.md": (b"x", "folder"),
    }
    for key, (data, why) in cases.items():
        with pytest.raises(Unholdable, match=why) as info:
            store.create(key, data)
        assert info.value.path == key
    with pytest.raises(Unholdable, match="102400"):
        store.replace("a.md", b"y" * (MAX_CONTENT + 1), hashlib.sha256(b"x").hexdigest())
    assert len(memstore_server.requests) == sent
    assert store.create("exact.md", b"y" * MAX_CONTENT)  # the limit itself is held
    assert _paths(memstore_server) == ["/proj/a.md", "/proj/exact.md"]


def test_a_path_taken_by_another_client_as_a_folder_is_refused_by_name(memstore_server):
    memstore_server.put(STORE, "/proj/a.md/deep.md", "an agent's file")
    store = open_store(f"memstore://{STORE}", "proj")
    with pytest.raises(Unholdable, match="a folder or a file of this name"):
        store.create("a.md", b"x")


def test_delete_is_conditional_on_the_hash(memstore_server):
    store = open_store(f"memstore://{STORE}", "proj")
    etag = store.create("a.md", b"one")
    memstore_server.put(STORE, "/proj/a.md", "changed by an agent")
    with pytest.raises(PreconditionFailed):
        store.delete("a.md", etag)
    assert memstore_server.contents(STORE) == {"/proj/a.md": "changed by an agent"}
    fresh = store.get("a.md")[1]
    store.delete("a.md", fresh)
    with pytest.raises(NotFound):
        store.delete("a.md", fresh)


def test_an_id_gone_stale_is_looked_up_again(memstore_server):
    """Another client deleted and made the file again: a new memory id at the same path."""
    store = open_store(f"memstore://{STORE}", "proj")
    store.create("a.md", b"one")
    other = open_store(f"memstore://{STORE}", "proj")
    other.delete("a.md", other.get("a.md")[1])
    etag = other.create("a.md", b"two")
    assert store.get("a.md") == (b"two", etag)
    assert store.replace("a.md", b"three", etag)


def test_errors_are_memsyncs(memstore_server, monkeypatch):
    store = open_store(f"memstore://{STORE}", "proj")
    soon = 20  # ms: the SDK waits what the answer asks, not its own back-off of a second
    memstore_server.fail_next(*(Failure(503, "overloaded_error", retry_after_ms=soon),) * 3)
    # a read is retried by the SDK (twice, after a back-off), then is memsync's Unreachable
    with pytest.raises(Unreachable, match="503"):
        store.list()
    assert len(memstore_server.requests) == 3
    memstore_server.fail_next(Failure(500, method="POST"))
    with pytest.raises(Unreachable):  # a write is sent once
        store.create("a.md", b"x")
    assert _paths(memstore_server) == []
    missing = open_store("memstore://memstore_nothere", "proj")
    assert missing.exists() is False
    with pytest.raises(ConfigError, match="does not exist"):
        missing.ensure()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        open_store(f"memstore://{STORE}", "proj").list()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        open_store(f"memstore://{STORE}", "proj").list()


def test_a_closed_port_is_unreachable(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setattr("memsync.stores.memstore.READ_RETRIES", 0)
    store = MemoryStoreStore(f"memstore://{STORE}", "proj")
    with pytest.raises(Unreachable):
        store.list()


@pytest.mark.parametrize(
    "url",
    [
        "memstore://",
        "memstore://store_1",
        "memstore://memstore_1/a/../b",
        "memstore://memstore_1?x",
    ],
)
def test_a_malformed_url_is_a_config_error(url):
    with pytest.raises(ConfigError):
        open_store(url, "proj")


def test_versions_are_the_stores(memstore_server):
    store = open_store(f"memstore://{STORE}", "proj")
    etag = store.create("a.md", b"one")
    store.replace("a.md", b"two", etag)
    versions = store.versions("a.md")
    assert [v.operation for v in versions] == ["modified", "created"]
    assert versions[1].sha256 == hashlib.sha256(b"one").hexdigest()


def test_a_delete_on_a_stale_id_meets_the_memory_made_again(memstore_server):
    store = open_store(f"memstore://{STORE}", "proj")
    etag = store.create("a.md", b"one")
    other = open_store(f"memstore://{STORE}", "proj")
    other.delete("a.md", other.get("a.md")[1])
    other.create("a.md", b"one")  # the same content, under a new memory id
    store.delete("a.md", etag)  # found again, and its hash matches: deleted
    assert _paths(memstore_server) == []
    again = other.create("a.md", b"two")
    with pytest.raises(PreconditionFailed):
        store.delete("a.md", etag)  # no id known; the new memory's hash differs
    assert store.get("a.md")[1] == again


def test_the_versions_of_deleted_memories_are_erased_by_what_they_held(memstore_server):
    store = open_store(f"memstore://{STORE}/m", "proj")
    other = open_store(f"memstore://{STORE}/m", "other")
    for s in (store, other):
        s.delete("a.md", s.create("a.md", b"secret one"))
    store.create("kept.md", b"secret live")  # a live memory is not this method's
    store.delete("b.md", store.create("b.md", b"plain"))
    asked: list[str] = []
    assert store.erase_deleted(lambda key, data: asked.append(key) or b"secret" in data) == 1
    assert sorted(asked) == ["a.md", "b.md"]
    left = [v.content for v in memstore_server.versions(STORE) if v.content]
    assert sorted(left) == ["plain", "secret live", "secret one"]  # the other project's stays
