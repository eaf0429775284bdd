"""The quick age reader: it opens what age writes, byte for byte as pyrage does, and refuses
(hands to pyrage) whatever pyrage would refuse; the memsync store opens through it."""

from __future__ import annotations

import pyrage
import pytest

from memsync.stores.crypt_age import Reader, bech32_data, reader
from memsync.stores.crypt_keys import DataKey
from memsync.util.errors import RefusedFile


def _pair() -> tuple[pyrage.x25519.Identity, Reader]:
    identity = pyrage.x25519.Identity.generate()
    quick = reader(str(identity), str(identity.to_public()))
    assert quick is not None
    return identity, quick


@pytest.mark.parametrize("size", [0, 1, 300, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 200_000])
def test_opens_what_age_writes_and_refuses_any_change(size):
    identity, quick = _pair()
    other = pyrage.x25519.Identity.generate().to_public()
    data = bytes(i * 7 % 256 for i in range(size))
    for to in ([identity.to_public()], [other, identity.to_public()]):
        blob = pyrage.encrypt(data, to)
        assert quick.decrypt(blob) == data == pyrage.decrypt(blob, [identity])
        for at in (30, len(blob) // 2, len(blob) - 1):  # header, stanza or payload
            damaged = bytearray(blob)
            damaged[at] ^= 1
            assert quick.decrypt(bytes(damaged)) is None
        assert quick.decrypt(blob[:-1]) is None
        assert quick.decrypt(blob + b"\0") is None


def test_a_file_to_someone_else_is_not_opened():
    _, quick = _pair()
    stranger = pyrage.x25519.Identity.generate()
    assert quick.decrypt(pyrage.encrypt(b"secret", [stranger.to_public()])) is None
    assert quick.decrypt(b"not age at all") is None


def test_keys_decode_as_age_spells_them():
    identity = pyrage.x25519.Identity.generate()
    public = str(identity.to_public())
    assert len(bech32_data(public, "age") or b"") == 32
    assert bech32_data(public[:-1] + ("q" if public[-1] != "q" else "p"), "age") is None
    with pytest.raises(ValueError):  # an identity with another's public key
        Reader(str(identity), str(pyrage.x25519.Identity.generate().to_public()))


def test_the_store_opens_through_it_and_falls_back_to_pyrage(monkeypatch):
    key = DataKey.generate(1)
    blob = key.seal("user_role.md", b"Engineer.\n", 12.5)
    assert key.open("user_role.md", blob) == (b"Engineer.\n", 12.5)
    assert key._reader is not None  # the quick reader did it
    monkeypatch.setattr(Reader, "decrypt", lambda self, blob: None)  # a file it does not take
    assert key.open("user_role.md", blob) == (b"Engineer.\n", 12.5)
    with pytest.raises(RefusedFile):
        key.open("user_role.md", blob[:-2])
    with pytest.raises(RefusedFile):  # moved to another name: the MAC binds it
        key.open("user_goal.md", blob)
