"""The one compare-and-swap helper every shared remote record is changed through."""

from __future__ import annotations

import pytest

from memsync.stores.base import MAX_ATTEMPTS
from memsync.stores.memory import MemoryStore
from memsync.sync import cas
from memsync.util.errors import NotFound, UserError


def test_creates_replaces_leaves_and_deletes():
    store = MemoryStore("p")
    etag = cas.update(store, "k", lambda data: b"one" if data is None else data + b"!")
    assert store.get("k") == (b"one", etag)
    etag = cas.update(store, "k", lambda data: (data or b"") + b"!")
    assert store.get("k") == (b"one!", etag)
    assert cas.update(store, "k", lambda data: data) == etag  # unchanged: no write
    assert store.get("k")[1] == etag
    assert cas.update(store, "k", lambda data: None) is None
    with pytest.raises(NotFound):
        store.get("k")
    assert cas.update(store, "k", lambda data: data) is None  # nothing there, nothing made


def test_a_lost_race_is_read_again_and_both_changes_land():
    store = MemoryStore("p")
    store.create("k", b"a")
    seen = []

    def add_b(data: bytes | None) -> bytes:
        seen.append(data)
        if len(seen) == 1:  # another device writes between this read and this write
            store.replace("k", b"a+c", store.get("k")[1])
        return (data or b"") + b"+b"

    cas.update(store, "k", add_b)
    assert seen == [b"a", b"a+c"] and store.get("k")[0] == b"a+c+b"


def test_gives_up_after_max_attempts():
    store = MemoryStore("p")
    store.create("k", b"0")
    calls = []

    def always_beaten(data: bytes | None) -> bytes:
        calls.append(data)
        store.replace("k", str(len(calls)).encode(), store.get("k")[1])
        return b"mine"

    with pytest.raises(cas.Contended):
        cas.update(store, "k", always_beaten)
    assert len(calls) == MAX_ATTEMPTS and store.get("k")[0] != b"mine"
    # for a command the user ran: one sentence naming what kept changing and what to run
    with pytest.raises(UserError, match=r"^the list kept changing on the remote; run it again$"):
        cas.update_or_say(store, "k", always_beaten, "the list", "run it again")
