"""The writer's edit time on a memory store (docs/memstore.md): a write long after its edit
keeps the edit time in the project's edit-time record, a prompt write is dated by the service,
and a fact file edited on two devices without `modified` is decided by the later edit as on
the other remotes, not by bytes."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

from memsync.context import config
from memsync.stores import open_store
from memsync.stores.memstore_times import HASH, KEY, changed, dump, parse
from memsync.sync.engine import Engine
from memsync.util.errors import Unreachable
from tests.conftest import NO_FCNTL, write_memory
from tests.memstore_server import (
    Failure,
    MemoryStoreServer,
    memstore_server_fixture,
)

__all__ = ["memstore_server_fixture"]

STORE = "memstore_test01"
REMOTE = f"memstore://{STORE}/memsync"
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")
HOUR = 3600.0


def _record(server: MemoryStoreServer, project: str = "proj") -> dict:
    content = server.contents(STORE).get(f"/memsync/{project}/{KEY}")
    return json.loads(content) if content is not None else {}


def test_a_late_write_keeps_its_edit_time_and_a_prompt_one_is_dated_by_the_service(
    memstore_server,
):
    store = open_store(REMOTE, "proj")
    edited = time.time() - HOUR
    etag = store.create("late.md", b"one", edited)
    assert list(_record(memstore_server)["edited"]) == ["late.md"]
    puts = store.stats.requests["put"]
    before = time.time()
    store.create("prompt.md", b"two", time.time() - 1)
    assert store.stats.requests["put"] == puts + 1  # the memory only: no record write
    memstore_server.put(STORE, "/memsync/proj/agent.md", "an agent's write")

    other = open_store(REMOTE, "proj")  # another device, after a listing
    other.list()
    assert other.fetch("late.md") == (b"one", etag, pytest.approx(edited))
    gets = other.stats.requests["get"]
    assert other.fetch("prompt.md")[2] == pytest.approx(time.time(), abs=before - time.time() + 5)
    assert other.fetch("agent.md")[2] >= before - 1  # the service's time of the agent's write
    assert other.stats.requests["get"] == gets + 2  # the record was read once, for late.md

    quiet = open_store(REMOTE, "quiet")  # a project written promptly only: no record
    quiet.create("a.md", b"a", time.time())
    quiet = open_store(REMOTE, "quiet")
    quiet.list()
    assert quiet.fetch("a.md")[2] == pytest.approx(time.time(), abs=5)
    assert dict(quiet.stats.requests) == {"list": 1, "get": 1}


def test_a_record_read_before_another_devices_late_write_is_read_again(memstore_server):
    reader, writer = open_store(REMOTE, "proj"), open_store(REMOTE, "proj")
    reader.create("a.md", b"a", time.time() - 2 * HOUR)
    reader.list()
    assert reader.fetch("a.md")[2] == pytest.approx(time.time() - 2 * HOUR, abs=5)
    edited = time.time() - HOUR
    writer.create("b.md", b"b", edited)  # after the reader's copy of the record, and listing
    assert reader.fetch("b.md")[2] == pytest.approx(edited)
    # content changed since by a prompt writer no longer matches its entry
    etag = writer.get("b.md")[1]
    writer.replace("b.md", b"b, again", etag, time.time())
    assert reader.fetch("b.md")[2] == pytest.approx(time.time(), abs=5)


def test_a_prompt_write_of_content_the_record_dates_takes_its_entry_out(memstore_server):
    store = open_store(REMOTE, "proj")
    old = store.create("a.md", b"one", time.time() - HOUR)
    new = store.replace("a.md", b"two", old, time.time() - HOUR)
    store.replace("a.md", b"one", new, time.time())  # back to the first content, just now
    entries = _record(memstore_server)["edited"]["a.md"]
    assert [h for _, h in entries] == [hashlib.sha256(b"two").hexdigest()[:HASH]]
    assert store.fetch("a.md")[2] == pytest.approx(time.time(), abs=5)


def test_late_writes_in_flight_together_share_record_writes(memstore_server):
    store = open_store(REMOTE, "proj")
    edited = time.time() - HOUR
    threads = [
        threading.Thread(target=store.create, args=(f"f{i}.md", f"{i}".encode(), edited + i))
        for i in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(_record(memstore_server)["edited"]) == 16
    record_writes = [
        v for v in memstore_server.versions(STORE) if v.path == f"/memsync/proj/{KEY}"
    ]
    assert 1 <= len(record_writes) < 16
    other = open_store(REMOTE, "proj")
    other.list()
    assert [other.fetch(f"f{i}.md")[2] for i in (0, 15)] == [edited, edited + 15]


def test_the_record_stays_under_the_memory_limit():
    times = {f"gone{i}.md": [(float(i), "0" * HASH)] for i in range(50)}
    batch = [(f"live{i:04d}.md", f"{i:064x}", 1_700_000_000.0 + i) for i in range(3000)]
    live = {name for name, _, _ in batch}
    out = changed(times, batch, live, 102_400)
    assert len(dump(out)) <= 102_400
    assert not any(n.startswith("gone") for n in out)  # names no longer listed go first
    assert "live2999.md" in out and "live0000.md" not in out  # then the oldest edit times
    assert parse(b"not json") == {} and parse(dump(out)) == out
    assert parse(b'{"edited": {"a.md": [[NaN, "x"], ["1", "y"], [2, "z"]], "b.md": 3}}') == {
        "a.md": [(2.0, "z")]
    }


def _device(tmp_path: Path, name: str) -> Engine:
    """One device in this process: its own MEMSYNC_HOME and memory dir."""
    ctx = config.resolve(tmp_path / name / "memory", REMOTE, "p")
    return Engine(ctx._replace(home=tmp_path / name / "home", device=name))


def _edit(engine: Engine, body: str, at: float) -> None:
    path = write_memory(engine.ctx.memory_dir, "user_role.md", body, type="user")
    os.utime(path, (at, at))


@pytest.mark.parametrize("later", ["first", "second"])
def test_two_devices_editing_a_fact_without_modified_keep_the_later_edit(
    tmp_path, memstore_server, later
):
    """The device that edited earlier but pushes first must not win by its upload time, nor
    the two be a tie decided by bytes: the later edit wins, as on the other remotes."""
    a, b = _device(tmp_path, "a"), _device(tmp_path, "b")
    _edit(a, "Engineer.\n", time.time() - 3 * HOUR)
    a.run("sync")
    b.run("sync")
    now = time.time()
    early, late = now - 2 * HOUR, now - HOUR
    _edit(a, "Engineer, from a.\n", early if later == "second" else late)
    _edit(b, "Engineer, from b.\n", late if later == "second" else early)
    a.run("sync")  # a pushes first, long after its edit
    result = b.run("sync")
    (why,) = result.conflicts  # both changed: one version kept, the other in history
    assert "edited later" in why and "could not be told apart" not in why
    a.run("sync")
    winner = "from b." if later == "second" else "from a."
    for device in (a, b):
        assert winner in (device.ctx.memory_dir / "user_role.md").read_text()
    a.close()
    b.close()


def test_a_late_write_whose_record_write_fails_sends_nothing(memstore_server):
    store = open_store(REMOTE, "proj")
    memstore_server.fail_next(Failure(500, method="POST"))  # the record's create
    with pytest.raises(Unreachable):
        store.create("a.md", b"one", time.time() - HOUR)
    assert memstore_server.contents(STORE) == {}  # the memory was not sent without its entry
    edited = time.time() - HOUR
    store.create("a.md", b"one", edited)  # sent again (the queue does): both land
    other = open_store(REMOTE, "proj")
    other.list()
    assert other.fetch("a.md")[2] == pytest.approx(edited)
