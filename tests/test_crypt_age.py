"""memsync's own age writer and reader: what it writes pyrage (and so age) opens, what age
writes it opens, it refuses (hands to pyrage) whatever pyrage would refuse, and its keyed
stanza opens a file without the X25519 exchange."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types

import pyrage
import pytest

from memsync.stores.crypt_age import AgeKey, age_key, bech32_data
from memsync.stores.crypt_keys import DataKey
from memsync.util.errors import RefusedFile

SIZES = [0, 1, 300, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 200_000]


def _pair() -> tuple[pyrage.x25519.Identity, AgeKey]:
    identity = pyrage.x25519.Identity.generate()
    own = age_key(str(identity), b"s" * 32)
    assert own is not None
    return identity, own


def _damaged(blob: bytes) -> list[bytes]:
    out = [blob[:-1], blob + b"\0"]
    for at in (30, len(blob) // 2, len(blob) - 1):  # header, stanza or payload
        changed = bytearray(blob)
        changed[at] ^= 1
        out.append(bytes(changed))
    return out


@pytest.mark.parametrize("size", SIZES)
def test_opens_what_age_writes_and_refuses_any_change(size):
    identity, own = _pair()
    other = pyrage.x25519.Identity.generate().to_public()
    data = bytes(i * 7 % 256 for i in range(size))
    for to in ([identity.to_public()], [other, identity.to_public()]):
        blob = pyrage.encrypt(data, to)
        assert own.decrypt(blob) == data == pyrage.decrypt(blob, [identity])
        assert all(own.decrypt(bad) is None for bad in _damaged(blob))


@pytest.mark.parametrize("size", SIZES)
def test_what_it_writes_age_opens_and_it_refuses_any_change(size):
    identity, own = _pair()
    data = bytes(i * 11 % 256 for i in range(size))
    blob = own.encrypt(data)
    assert b"\n-> memsync-v2 " in blob[:300]
    assert pyrage.decrypt(blob, [identity]) == data == own.decrypt(blob)
    for bad in _damaged(blob):
        assert own.decrypt(bad) is None
        with pytest.raises(pyrage.DecryptError):
            pyrage.decrypt(bad, [identity])


def test_the_keyed_stanza_needs_no_exchange_and_a_wrong_one_falls_back(monkeypatch):
    identity, own = _pair()
    blob = own.encrypt(b"hello")
    shared = own._na.shared

    def writes_only(secret: bytes, point: bytes) -> bytes:  # no exchange with its own key
        assert secret != own._private, "an X25519 exchange on the way in"
        return shared(secret, point)

    monkeypatch.setattr(own, "_na", own._na._replace(shared=writes_only))  # the stanza alone
    assert own.decrypt(blob) == b"hello"
    for size in SIZES:
        data = bytes(i * 3 % 256 for i in range(size))
        assert own.decrypt(own.encrypt(data)) == data
    monkeypatch.undo()  # the same identity with another stanza key: X25519 opens it
    stranger = AgeKey(str(identity), b"t" * 32)
    assert stranger.decrypt(blob) == b"hello"


def test_the_layout_it_writes_is_read_in_one_match_and_any_changed_byte_is_refused():
    identity, own = _pair()
    blob = own.encrypt(b"one chunk")
    assert own._ours(blob) == b"one chunk"  # the quick reader takes it
    two = b"x" * (64 * 1024 + 1)
    assert own._ours(own.encrypt(two)) == two  # two chunks: the same stanza opens them
    head = blob.index(b"\n---") + 50
    for at in range(len(blob)):  # every byte of the header, the nonce and the payload
        changed = bytearray(blob)
        changed[at] ^= 1 if at >= head or blob[at] not in b"AQgw" else 2  # stays base64
        assert own.decrypt(bytes(changed)) is None, at
    assert own.decrypt(blob[:head]) is None and own.decrypt(blob[: head + 16]) is None


def test_a_file_to_someone_else_is_not_opened():
    _, own = _pair()
    stranger = pyrage.x25519.Identity.generate()
    assert own.decrypt(pyrage.encrypt(b"secret", [stranger.to_public()])) is None
    assert own.decrypt(AgeKey(str(stranger), b"x" * 32).encrypt(b"secret")) is None
    assert own.decrypt(b"not age at all") is None


@pytest.mark.skipif(shutil.which("age") is None, reason="the age CLI is not installed")
def test_the_age_cli_opens_what_it_writes(tmp_path):
    identity, own = _pair()
    (tmp_path / "id.txt").write_text(f"{identity}\n")
    for size in (0, 300, 200_000):
        data = bytes(i * 13 % 256 for i in range(size))
        (tmp_path / "f.age").write_bytes(own.encrypt(data))
        args = ["age", "-d", "-i", str(tmp_path / "id.txt"), str(tmp_path / "f.age")]
        assert subprocess.run(args, capture_output=True, check=True, timeout=30).stdout == data


def test_keys_decode_as_age_spells_them():
    identity = pyrage.x25519.Identity.generate()
    public = str(identity.to_public())
    assert len(bech32_data(public, "age") or b"") == 32
    assert bech32_data(public[:-1] + ("q" if public[-1] != "q" else "p"), "age") is None
    with pytest.raises(ValueError):
        AgeKey("AGE-SECRET-KEY-1NOTAKEY", b"s" * 32)
    with pytest.raises(ValueError):
        DataKey(public, 1)


def test_the_store_seals_and_opens_through_it_and_falls_back_to_pyrage(monkeypatch):
    key = DataKey.generate(1)
    blob = key.seal("user_role.md", b"Engineer.\n", 12.5)
    assert b"memsync-v2" in blob and key._age is not None
    assert key.open("user_role.md", blob) == (b"Engineer.\n", 12.5)
    identity = pyrage.x25519.Identity.from_str(key.secret)  # age itself, and a file it wrote
    assert pyrage.decrypt(blob, [identity]).endswith(b"\nEngineer.\n")
    first = pyrage.decrypt(blob, [identity])
    assert key.open("user_role.md", pyrage.encrypt(first, [identity.to_public()])) == (
        b"Engineer.\n",
        12.5,
    )
    monkeypatch.setattr(AgeKey, "decrypt", lambda self, blob: None)  # a file it does not take
    assert key.open("user_role.md", blob) == (b"Engineer.\n", 12.5)
    with pytest.raises(RefusedFile):
        key.open("user_role.md", blob[:-2])
    with pytest.raises(RefusedFile):  # moved to another name: the MAC binds it
        key.open("user_goal.md", blob)
    armored = key.seal("user_role.md", b"Engineer.\n", None, armored=True)
    assert armored.startswith(b"-----BEGIN AGE ENCRYPTED FILE-----")
    assert key.open("user_role.md", armored) == (b"Engineer.\n", None)


def test_the_public_bindings_serve_where_the_compiled_module_is_laid_out_otherwise(monkeypatch):
    import nacl.bindings

    identity, own = _pair()
    blob = own.encrypt(b"hello")
    monkeypatch.setitem(sys.modules, "nacl._sodium", types.ModuleType("nacl._sodium"))
    calls = []
    scalarmult = nacl.bindings.crypto_scalarmult
    monkeypatch.setattr(
        nacl.bindings, "crypto_scalarmult", lambda *a: calls.append(a) or scalarmult(*a)
    )
    public = age_key(str(identity), b"s" * 32)
    assert public is not None and public.decrypt(blob) == b"hello"
    assert own.decrypt(public.encrypt(b"back")) == b"back"
    stranger = AgeKey(str(identity), b"t" * 32)  # through the X25519 stanza
    assert stranger.decrypt(own.encrypt(b"again")) == b"again"
    assert calls  # the public bindings did the exchanges


@pytest.mark.parametrize("fast", [True, False])
def test_a_low_order_share_and_a_wrong_size_are_refused_not_read(monkeypatch, fast):
    """An all-zero shared secret (a low-order point), as age refuses it; and a key or nonce of
    the wrong size never reaches the C functions, which read what the sizes say."""
    if not fast:
        import nacl.bindings  # noqa: F401

        monkeypatch.setitem(sys.modules, "nacl._sodium", types.ModuleType("nacl._sodium"))
    na = _pair()[1]._na
    secret, key, nonce = b"s" * 32, b"k" * 32, b"n" * 12
    with pytest.raises(Exception):  # noqa: B017 (libsodium's and PyNaCl's own errors)
        na.shared(secret, b"\0" * 32)
    assert len(na.shared(secret, na.public(b"t" * 32))) == 32
    assert na.open(key, nonce, na.seal(key, nonce, b"x", b"ad"), b"ad") == b"x"
    for bad in [(b"k" * 31, nonce), (b"k" * 33, nonce), (key, b"n" * 11), (key, b"n" * 13)]:
        with pytest.raises(Exception):  # noqa: B017
            na.seal(*bad, b"x", b"")
        with pytest.raises(Exception):  # noqa: B017
            na.open(*bad, b"x" * 17, b"")
    for bad_size in (b"s" * 31, b"s" * 33):
        with pytest.raises(Exception):  # noqa: B017
            na.public(bad_size)
        with pytest.raises(Exception):  # noqa: B017
            na.shared(secret, bad_size)


def test_a_stanza_moved_into_another_file_does_not_open_it():
    identity, own = _pair()
    one, two = own.encrypt(b"first"), own.encrypt(b"second")
    start = one.index(b"-> memsync-v2 ")
    end = one.index(b"\n---")
    moved = two[:start] + one[start:end] + two[end:]  # its nonce is another file's
    assert own._ours(moved) is None and own.decrypt(moved) is None
    with pytest.raises(pyrage.DecryptError):  # the header MAC no longer holds for age either
        pyrage.decrypt(moved, [identity])


def test_a_device_opens_the_recipients_list_without_loading_pyrage(tmp_path):
    from memsync.stores.crypt_keys import Device, Keyring, build

    device = pyrage.x25519.Identity.generate()
    ring = Keyring(DataKey.generate(3), [Device(str(device.to_public()), "laptop", 1.0)])
    (tmp_path / "crypt.json").write_bytes(build(ring))
    script = (
        "import sys\n"
        "from memsync.stores.crypt_keys import Identity, read\n"
        f"ring = read(open(sys.argv[1], 'rb').read(), Identity({str(device)!r}), 'file:///r')\n"
        "assert 'pyrage' not in sys.modules, 'pyrage loaded'\n"
        "print(ring.key.secret, ring.key.generation)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "crypt.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == [ring.key.secret, "3"], done.stderr
