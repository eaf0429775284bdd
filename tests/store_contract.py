"""The storage contract. Every backend's test module subclasses StoreContract and provides
a `store` fixture; the same assertions then hold for memory, folder and Azure stores."""

from __future__ import annotations

import pytest

from memsync.util.errors import AlreadyExists, NotFound, PreconditionFailed, UnsafeKey


class StoreContract:
    def test_empty_listing(self, store):
        assert store.list() == {}

    def test_create_then_get(self, store):
        etag = store.create("a.md", b"hello")
        data, got = store.get("a.md")
        assert data == b"hello"
        assert got == etag

    def test_the_writers_edit_time_travels_with_the_object(self, store):
        """Issue 16, defect 3: which of two edits is newer is decided by when each was made,
        which only the writer knows; the store keeps it with the object."""
        etag = store.create("a.md", b"one", 1_700_000_000.25)
        assert store.fetch("a.md") == (b"one", etag, pytest.approx(1_700_000_000.25))
        etag = store.replace("a.md", b"two", etag, 1_700_000_100.5)
        assert store.fetch("a.md") == (b"two", etag, pytest.approx(1_700_000_100.5))
        assert store.get("a.md") == (b"two", etag)
        store.create("b.md", b"no time given")
        data, _, edited = store.fetch("b.md")
        assert data == b"no time given" and (edited is None or edited > 1_700_000_100.5)

    def test_create_is_create_only(self, store):
        store.create("a.md", b"one")
        with pytest.raises(AlreadyExists):
            store.create("a.md", b"two")
        assert store.get("a.md")[0] == b"one"

    def test_already_exists_is_a_precondition_failure(self, store):
        store.create("a.md", b"one")
        with pytest.raises(PreconditionFailed):
            store.create("a.md", b"two")

    def test_replace_with_matching_etag(self, store):
        etag = store.create("a.md", b"one")
        new = store.replace("a.md", b"two", etag)
        assert new != etag
        assert store.get("a.md") == (b"two", new)

    def test_replace_with_stale_etag_fails_and_keeps_content(self, store):
        old = store.create("a.md", b"one")
        store.replace("a.md", b"two", old)
        with pytest.raises(PreconditionFailed):
            store.replace("a.md", b"three", old)
        assert store.get("a.md")[0] == b"two"

    def test_replace_of_missing_key_fails(self, store):
        etag = store.create("a.md", b"one")
        store.delete("a.md", etag)
        with pytest.raises((PreconditionFailed, NotFound)):
            store.replace("a.md", b"two", etag)
        with pytest.raises(NotFound):
            store.get("a.md")

    def test_delete_with_matching_etag(self, store):
        etag = store.create("a.md", b"one")
        store.delete("a.md", etag)
        assert "a.md" not in store.list()
        with pytest.raises(NotFound):
            store.get("a.md")

    def test_delete_with_stale_etag_fails(self, store):
        old = store.create("a.md", b"one")
        store.replace("a.md", b"two", old)
        with pytest.raises(PreconditionFailed):
            store.delete("a.md", old)
        assert store.get("a.md")[0] == b"two"

    def test_delete_missing_is_not_found(self, store):
        etag = store.create("a.md", b"one")
        store.delete("a.md", etag)
        with pytest.raises(NotFound):
            store.delete("a.md", etag)

    def test_get_missing_is_not_found(self, store):
        with pytest.raises(NotFound):
            store.get("nothing.md")

    def test_listing_has_every_key_with_its_current_etag(self, store):
        etags = {f"f{i}.md": store.create(f"f{i}.md", f"body {i}".encode()) for i in range(7)}
        etags["sub/deep.md"] = store.create("sub/deep.md", b"nested")
        listing = store.list()
        assert {k: e.etag for k, e in listing.items()} == etags
        assert listing["f3.md"].size == len(b"body 3")

    def test_listing_sees_overwrites(self, store):
        etag = store.create("a.md", b"one")
        new = store.replace("a.md", b"two!", etag)
        entry = store.list()["a.md"]
        assert entry.etag == new
        assert entry.size == 4

    def test_unicode_and_binary_safe_roundtrip(self, store):
        data = "— naïve ☕ 日本語\n".encode()
        store.create("u.md", data)
        assert store.get("u.md")[0] == data

    @pytest.mark.parametrize("key", ["../escape.md", "/abs.md", "a/../b.md", "bad\\name.md"])
    def test_unsafe_keys_refused(self, store, key):
        with pytest.raises(UnsafeKey):
            store.create(key, b"x")

    def test_requests_are_counted(self, store):
        before = store.stats.total()
        etag = store.create("a.md", b"one")
        store.replace("a.md", b"two", etag)
        store.list()
        assert store.stats.total() - before >= 3
        assert store.stats.bytes_up >= 6
