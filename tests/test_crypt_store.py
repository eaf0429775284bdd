"""The encrypting store: the storage contract over it around each store, and what only it
promises: names and edit times hidden, tampering refused, a forged recipients list refused,
a device whose run began before the switch follows it."""

from __future__ import annotations

import base64
import json
import os

import pyrage
import pytest

from memsync.stores.crypt import HIDDEN, CryptStore
from memsync.stores.crypt_keys import (
    CRYPT_KEY,
    BadRecipients,
    DataKey,
    Device,
    Keyring,
    NoAccess,
    build,
    create_identity,
    identity_path,
    load_identity,
    public_key,
)
from memsync.stores.crypt_migrate import add_device, remove_device, turn_on
from memsync.stores.folder import FolderStore
from memsync.stores.memory import MemoryStore
from memsync.util.errors import NotFound, PreconditionFailed, RefusedFile
from tests.conftest import NO_FCNTL
from tests.memstore_server import memstore_server_fixture
from tests.store_contract import StoreContract

__all__ = ["memstore_server_fixture"]
# the remote protocols' classes: the no-fcntl pass has nothing to add there
REMOTE_ONLY = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")


def encrypted(inner, url="remote", prefix="proj") -> CryptStore:
    create_identity()
    store = CryptStore(inner, url, prefix)
    turn_on(store, "this one")
    return store


class CryptContract(StoreContract):
    """Sizes in a listing are the ciphertext's (age's header has a random length), the one
    point where the wrapper answers differently from the store it wraps."""

    def test_listing_has_every_key_with_its_current_etag(self, store):
        etags = {f"f{i}.md": store.create(f"f{i}.md", f"body {i}".encode()) for i in range(7)}
        etags["sub/deep.md"] = store.create("sub/deep.md", b"nested")
        listing = store.list()
        assert {k: e.etag for k, e in listing.items()} == etags
        assert listing["f3.md"].size > len(b"body 3")

    def test_listing_sees_overwrites(self, store):
        etag = store.create("a.md", b"one")
        new = store.replace("a.md", b"two!", etag)
        entry = store.list()["a.md"]
        assert entry.etag == new
        assert entry.size == len(store.inner.get(HIDDEN + store.key.hide("a.md"))[0])


class TestCryptOverMemory(CryptContract):
    @pytest.fixture
    def store(self):
        return encrypted(MemoryStore("proj"))


class TestCryptOverFolder(CryptContract):
    @pytest.fixture
    def store(self, tmp_path):
        (tmp_path / "remote").mkdir()
        return encrypted(FolderStore(tmp_path / "remote", "proj"))


@REMOTE_ONLY
@pytest.mark.azure
class TestCryptOverAzurite(CryptContract):
    @pytest.fixture
    def store(self, azure_url):
        from memsync.stores import open_store

        store = open_store(azure_url, "proj")
        store.ensure()
        create_identity()
        turn_on(store, "this one")
        yield store
        store.close()


@REMOTE_ONLY
@pytest.mark.s3
class TestCryptOverS3(CryptContract):
    @pytest.fixture
    def store(self, s3_url):
        from memsync.stores import open_store

        store = open_store(s3_url, "proj")
        store.ensure()
        create_identity()
        turn_on(store, "this one")
        yield store
        store.close()


@REMOTE_ONLY
class TestCryptOverMemoryStore(CryptContract):
    """A memory store holds text only: the objects are age's ASCII armor."""

    @pytest.fixture
    def store(self, memstore_server):
        from memsync.stores import open_store

        store = open_store("memstore://memstore_test01/memsync", "proj")
        create_identity()
        turn_on(store, "this one")
        self.server = memstore_server
        yield store
        store.close()

    def test_every_memory_is_armored_and_names_nothing(self, store):
        store.create("relationship_pat_quigley.md", b"Pat likes pineapple.\n")
        store.create("bin.md", bytes(range(256)))  # any bytes: the armor is text
        assert store.get("bin.md")[0] == bytes(range(256))
        seen = json.dumps(self.server.contents("memstore_test01")).lower()
        assert "quigley" not in seen and "pineapple" not in seen and "relationship" not in seen
        for path, text in self.server.contents("memstore_test01").items():
            if not path.endswith("crypt.json"):
                assert text.startswith("-----BEGIN AGE ENCRYPTED FILE-----"), path


@REMOTE_ONLY
def test_turning_encryption_on_erases_the_plaintext_a_memory_store_kept(memstore_server):
    """The store keeps every version of a memory: after `keys init` none holds the words."""
    from memsync.stores import open_store

    store = open_store("memstore://memstore_test01/memsync", "proj")
    etag = store.create("relationship_pat_quigley.md", b"Pat likes pineapple.\n")
    store.replace("relationship_pat_quigley.md", b"Pat likes pineapple a lot.\n", etag)
    create_identity()
    turn_on(store, "this one")
    kept = [v.content or "" for v in memstore_server.versions("memstore_test01")]
    assert kept and not any("pineapple" in text for text in kept)
    assert store.get("relationship_pat_quigley.md")[0] == b"Pat likes pineapple a lot.\n"
    store.close()


def test_the_remote_holds_neither_words_names_nor_edit_times(tmp_path):
    (tmp_path / "remote").mkdir()
    store = encrypted(FolderStore(tmp_path / "remote", "proj"))
    store.create("relationship_pat_quigley.md", b"Pat likes pineapple", 1_700_000_000.5)
    seen = b""
    for path in (tmp_path / "remote").rglob("*"):
        seen += str(path.relative_to(tmp_path)).encode()
        if path.is_file():
            seen += path.read_bytes() + str(path.stat().st_mtime).encode()
    for word in (b"quigley", b"pineapple", b"relationship", b"1700000000"):
        assert word not in seen.lower()
    assert store.fetch("relationship_pat_quigley.md")[2] == pytest.approx(1_700_000_000.5)


def test_keys_stay_private_and_a_bad_public_key_is_named(tmp_path):
    from memsync.stores.crypt_keys import trust_path
    from memsync.util.errors import UserError

    store = encrypted(MemoryStore("proj"))
    assert identity_path().stat().st_mode & 0o777 == 0o600
    assert trust_path("remote", "proj").stat().st_mode & 0o777 == 0o600
    with pytest.raises(UserError, match="'age1nonsense' is not an age public key"):
        add_device(store, "age1nonsense", "x")
    for low in LOW_ORDER:  # well-formed, but a point no identity has: age refuses it
        with pytest.raises(UserError, match="a point no device's key can have"):
            add_device(store, low, "x")
    laptop = str(pyrage.x25519.Identity.generate().to_public())
    for name in ("two\nlines", "a\ttab", "bell\a"):
        with pytest.raises(UserError, match="holds a tab, a line break or a control character"):
            add_device(store, laptop, name)
    assert add_device(store, laptop, "Pat's laptop (é)")[1]


# X25519 public keys of order 1 and 4 (u = 0, u = 1), as age spells keys
LOW_ORDER = (
    "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq5cu47z",
    "age1qyqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqj7vrya",
)


def test_names_map_to_one_key_and_back():
    key = DataKey.generate(1)
    for name in ("a.md", "sub/deep.md", "é" * 60 + ".md", "x" * 250 + ".md"):
        hidden = key.hide(name)
        assert hidden == key.hide(name) and key.reveal(hidden) == name
        assert all(len(part) <= 200 for part in hidden.split("/"))
        assert key.reveal(hidden.upper()) is None  # one spelling: no second key for a name
    assert DataKey.generate(1).reveal(key.hide("a.md")) is None


def test_tampered_truncated_or_swapped_ciphertext_is_refused_like_a_bad_download():
    store = encrypted(MemoryStore("proj"))
    store.create("a.md", b"alpha")
    store.create("b.md", b"beta")
    a, b = HIDDEN + store.key.hide("a.md"), HIDDEN + store.key.hide("b.md")
    blob, etag = store.inner.get(a)
    flipped = blob[:-5] + bytes([blob[-5] ^ 1]) + blob[-4:]
    for bad in (flipped, blob[: len(blob) - 20]):
        etag = store.inner.replace(a, bad, etag)
        with pytest.raises(RefusedFile, match="a.md.*does not decrypt"):
            store.fetch("a.md")
    # another name's valid ciphertext, or a valid age file made with the public key alone
    etag = store.inner.replace(a, store.inner.get(b)[0], etag)
    with pytest.raises(RefusedFile):
        store.fetch("a.md")
    import pyrage

    forged = pyrage.encrypt(b"memsync-crypt 1 " + b"0" * 64 + b" -\nevil", [store.key.recipient])
    store.inner.replace(a, forged, etag)
    with pytest.raises(RefusedFile):
        store.fetch("a.md")


def _trusting_device(inner, tmp_path, monkeypatch, home="other"):
    """A second device in the same process: its own MEMSYNC_HOME."""
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / home))
    identity, _ = create_identity()
    return public_key(identity)


def test_a_recipients_list_rewritten_without_a_key_is_refused(tmp_path, monkeypatch):
    inner = MemoryStore("proj")
    store = encrypted(inner)
    store.create("a.md", b"alpha")
    # someone who can write the bucket but holds no key: a new data key, wrapped to the
    # devices' public keys and to their own, with a valid MAC under that new key
    import pyrage

    mallory = pyrage.x25519.Identity.generate()
    ring = store.ring()
    forged = Keyring(
        DataKey.generate(1), [*ring.devices, Device(str(mallory.to_public()), "m", 0.0)]
    )
    etag = inner.list()[CRYPT_KEY].etag
    inner.replace(CRYPT_KEY, build(forged), etag)
    with pytest.raises(BadRecipients, match="does not follow from the newest one"):
        CryptStore(inner, "remote", "proj").list()
    # a flipped byte in the box, or the list removed altogether (encryption turned off)
    doc = json.loads(build(ring))
    box = bytearray(base64.b64decode(doc["box"]))
    box[-3] ^= 1
    doc["box"] = base64.b64encode(bytes(box)).decode()
    etag = inner.replace(CRYPT_KEY, json.dumps(doc).encode(), inner.list()[CRYPT_KEY].etag)
    with pytest.raises(BadRecipients):
        CryptStore(inner, "remote", "proj").list()
    inner.delete(CRYPT_KEY, etag)
    with pytest.raises(BadRecipients, match="is gone"):
        CryptStore(inner, "remote", "proj").list()


def test_a_device_without_access_gets_one_sentence_and_reads_nothing(tmp_path, monkeypatch):
    inner = MemoryStore("proj")
    store = encrypted(inner)
    store.create("a.md", b"alpha")
    other = _trusting_device(inner, tmp_path, monkeypatch)
    with pytest.raises(NoAccess, match=f"run `memsync keys add {other}`"):
        CryptStore(inner, "remote", "proj").list()
    os.remove(identity_path())  # no key at all: one is made, and the sentence gives it
    with pytest.raises(NoAccess, match="run `memsync keys add age1") as raised:
        CryptStore(inner, "remote", "proj").fetch("a.md")
    assert other not in str(raised.value) and str(load_identity().to_public()) in str(raised.value)
    assert identity_path().stat().st_mode & 0o777 == 0o600


def test_add_then_remove_rotates_the_data_key(tmp_path, monkeypatch):
    home = os.environ["MEMSYNC_HOME"]
    inner = MemoryStore("proj")
    store = encrypted(inner)
    store.create("a.md", b"alpha")
    other = _trusting_device(inner, tmp_path, monkeypatch)
    monkeypatch.setenv("MEMSYNC_HOME", home)
    add_device(store, other, "laptop")
    first = store.key
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "other"))
    theirs = CryptStore(inner, "remote", "proj")
    assert theirs.get("a.md")[0] == b"alpha"  # no object changed for the new device to read it
    monkeypatch.setenv("MEMSYNC_HOME", home)
    remove_device(store, other)
    assert store.key.generation == 2 and store.key.secret != first.secret
    assert {k for k in inner.list() if k != CRYPT_KEY} == {HIDDEN + store.key.hide("a.md")}
    assert store.get("a.md")[0] == b"alpha"
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "other"))
    with pytest.raises(NoAccess):
        theirs.list()


def test_a_hooks_new_file_under_a_key_rotated_meanwhile_is_resealed_at_exit(tmp_path, monkeypatch):
    """A command that never closes its store (a hook) reseals at the interpreter's exit; the
    exit handler is registered by the first create and dropped once resealed."""
    import atexit

    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(atexit, "unregister", registered.remove)
    home = os.environ["MEMSYNC_HOME"]
    inner = MemoryStore("proj")
    store = encrypted(inner)
    store.create("a.md", b"alpha")
    other = _trusting_device(inner, tmp_path, monkeypatch)
    mine = _trusting_device(inner, tmp_path, monkeypatch, home="hook")
    monkeypatch.setenv("MEMSYNC_HOME", home)
    add_device(store, mine, "hook")
    add_device(store, other, "laptop")
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "hook"))
    hook = CryptStore(inner, "remote", "proj")
    hook.list()  # it has seen generation 1
    old = hook.key
    monkeypatch.setenv("MEMSYNC_HOME", home)
    remove_device(store, other)  # generation 2, copied and settled before the hook writes
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "hook"))
    registered.clear()
    hook.create("b.md", b"beta", 5.0)  # its listing came before the switch: no check first
    assert registered == [hook._reseal_at_exit]
    assert HIDDEN + old.hide("b.md") in inner.list()  # under the rotated-out key for now
    registered[0]()  # the interpreter exits
    assert registered == []
    assert {k for k in inner.list() if k != CRYPT_KEY} == {
        HIDDEN + store.key.hide(n) for n in ("a.md", "b.md")
    }
    assert store.get("b.md")[0] == b"beta"


def test_a_device_mid_run_follows_a_rotation(tmp_path, monkeypatch):
    """Its write over an object the rotation moved fails its condition; it reads the switch
    and the retry lands under the new key, readable by everyone."""
    home = os.environ["MEMSYNC_HOME"]
    inner = MemoryStore("proj")
    store = encrypted(inner)
    etag = store.create("a.md", b"v1")
    stale = CryptStore(inner, "remote", "proj")
    stale.list()
    other = _trusting_device(inner, tmp_path, monkeypatch)
    monkeypatch.setenv("MEMSYNC_HOME", home)
    add_device(store, other, "b")
    remove_device(store, other)
    with pytest.raises(PreconditionFailed):
        stale.replace("a.md", b"v2", etag)
    data, now = stale.get("a.md")
    stale.replace("a.md", data + b" v2", now)
    assert store.get("a.md")[0] == b"v1 v2"
    with pytest.raises(NotFound):
        stale.get("gone.md")


def test_a_device_offline_through_two_rotations_follows_them(tmp_path, monkeypatch):
    """Every earlier data key vouches for the new recipients object, so a device that last
    trusted generation 1 accepts generation 3."""
    home = os.environ["MEMSYNC_HOME"]
    inner = MemoryStore("proj")
    store = encrypted(inner)
    store.create("a.md", b"alpha")
    keys = {n: _trusting_device(inner, tmp_path, monkeypatch, n) for n in ("b", "c", "d")}
    monkeypatch.setenv("MEMSYNC_HOME", home)
    for name in ("b", "c", "d"):
        add_device(store, keys[name], name)
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "d"))
    assert CryptStore(inner, "remote", "proj").get("a.md")[0] == b"alpha"  # d trusts gen 1
    monkeypatch.setenv("MEMSYNC_HOME", home)
    remove_device(store, keys["b"])
    remove_device(store, keys["c"])
    assert store.key.generation == 3
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "d"))
    assert CryptStore(inner, "remote", "proj").get("a.md")[0] == b"alpha"


def test_a_new_file_pushed_without_a_listing_after_a_rotation_lands_under_the_new_key(
    tmp_path, monkeypatch
):
    """A hook's `push FILE` lists nothing: a new name is checked against the remote's
    recipients object first, so it is not written under the key the device remembers."""
    home = os.environ["MEMSYNC_HOME"]
    inner = MemoryStore("proj")
    store = encrypted(inner)
    keys = {n: _trusting_device(inner, tmp_path, monkeypatch, n) for n in ("b", "c")}
    monkeypatch.setenv("MEMSYNC_HOME", home)
    for name in ("b", "c"):
        add_device(store, keys[name], name)
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "b"))
    CryptStore(inner, "remote", "proj").list()  # b trusts generation 1
    monkeypatch.setenv("MEMSYNC_HOME", home)
    remove_device(store, keys["c"])
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "b"))
    hook = CryptStore(inner, "remote", "proj")  # a new process: the remembered key
    before = hook.stats.requests["get"]
    hook.create("new.md", b"from the hook")
    assert hook.stats.requests["get"] - before == 1  # the recipients object, read once
    monkeypatch.setenv("MEMSYNC_HOME", home)
    assert store.list()["new.md"] and store.get("new.md")[0] == b"from the hook"


def test_a_file_written_under_a_rotated_out_key_is_kept_refused_then_folded(tmp_path, monkeypatch):
    """A run that listed before a rotation and creates a file after it writes under the old
    key: listed (so its writer does not take it for deleted), refused on download, folded in
    by `keys init --adopt` (fold_strays)."""
    from memsync.stores.crypt_migrate import fold_strays

    home = os.environ["MEMSYNC_HOME"]
    inner = MemoryStore("proj")
    store = encrypted(inner)
    keys = {n: _trusting_device(inner, tmp_path, monkeypatch, n) for n in ("b", "c")}
    monkeypatch.setenv("MEMSYNC_HOME", home)
    for name in ("b", "c"):
        add_device(store, keys[name], name)
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "b"))
    stale = CryptStore(inner, "remote", "proj")
    stale.list()
    monkeypatch.setenv("MEMSYNC_HOME", home)
    remove_device(store, keys["c"])
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "b"))
    written = stale.create("late.md", b"written mid-run")  # under generation 1
    listed = CryptStore(inner, "remote", "proj").list()
    assert listed["late.md"].etag.startswith("plain:")  # the writer does not see it gone
    monkeypatch.setenv("MEMSYNC_HOME", home)
    assert store.list()["late.md"].etag != written
    with pytest.raises(RefusedFile, match="earlier data key"):
        store.fetch("late.md")
    moved = fold_strays(store, ["late.md"])
    assert moved.copied == 1 and moved.deleted == 1
    assert store.get("late.md")[0] == b"written mid-run"
    assert not store.list()["late.md"].etag.startswith("plain:")
