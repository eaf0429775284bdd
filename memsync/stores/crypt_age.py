"""Reading age files to one X25519 identity, a quarter of pyrage's time per file.

A pull decrypts every file it fetches, and pyrage's decrypt costs ~0.2 ms a small file under
the GIL, most of it not the X25519 exchange every age file needs (~0.03 ms). This reader does
the age v1 format (https://age-encryption.org/v1) with the `cryptography` package's X25519 and
ChaCha20-Poly1305 and the standard library's HMAC: one exchange, three HKDFs and two AEAD
opens a file. It is only a reader: memsync writes with pyrage, so what it writes is age as
`age` writes it. Anything this reader does not take (another stanza layout, a failed check,
`cryptography` missing) returns None and the caller asks pyrage, so it can only be faster,
never accept less or more than age does; and a memsync object's content is checked by its own
HMAC after either.
"""

from __future__ import annotations

import base64
import hmac
from typing import Any

_INTRO = b"age-encryption.org/v1\n"
_X25519_INFO = b"age-encryption.org/v1/X25519"
_CHUNK = 64 * 1024 + 16  # a payload chunk: 64 KiB of plaintext and its tag
_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _b64(text: bytes) -> bytes | None:
    """age's base64: standard alphabet, no padding, canonical (one spelling per value)."""
    try:
        raw = base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None
    return raw if base64.b64encode(raw).rstrip(b"=") == text else None


def _hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869), 32 bytes."""
    prk = hmac.digest(salt or b"\0" * 32, ikm, "sha256")
    return hmac.digest(prk, info + b"\x01", "sha256")


def bech32_data(text: str, hrp: str) -> bytes | None:
    """The bytes a bech32 string (BIP 173, as age spells keys) carries, or None."""
    text = text.lower()
    sep = text.rfind("1")
    if text[:sep] != hrp or len(text) - sep < 7:
        return None
    try:
        values = [_CHARSET.index(c) for c in text[sep + 1 :]]
    except ValueError:
        return None
    check = 1
    for v in [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ v
        for i, g in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            if top >> i & 1:
                check ^= g
    if check != 1:
        return None
    acc = bits = 0
    out = bytearray()
    for v in values[:-6]:
        acc, bits = acc << 5 | v, bits + 5
        if bits >= 8:
            bits -= 8
            out.append(acc >> bits & 0xFF)
    return bytes(out)


class Reader:
    """Decrypts age files to one X25519 identity (`AGE-SECRET-KEY-1…`, public `age1…`)."""

    def __init__(self, secret: str, public: str) -> None:
        from cryptography.hazmat.primitives.asymmetric.x25519 import (
            X25519PrivateKey,
            X25519PublicKey,
        )
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        raw = bech32_data(secret, "age-secret-key-")
        pub = bech32_data(public, "age")
        if raw is None or pub is None or len(raw) != 32:
            raise ValueError("not an age X25519 identity")
        self._private = X25519PrivateKey.from_private_bytes(raw)
        self._public = self._private.public_key().public_bytes_raw()
        if self._public != pub:
            raise ValueError("the identity and its public key do not match")
        self._share = X25519PublicKey.from_public_bytes
        self._aead = ChaCha20Poly1305

    def decrypt(self, blob: bytes) -> bytes | None:
        """The plaintext, or None if this reader does not take the file (pyrage decides)."""
        try:
            return self._decrypt(blob)
        except Exception:  # a malformed or foreign file: the full implementation answers
            return None

    def _decrypt(self, blob: bytes) -> bytes | None:
        if not blob.startswith(_INTRO):
            return None
        end = blob.find(b"\n---", len(_INTRO) - 1)
        if end < 0:
            return None
        nl = blob.find(b"\n", end + 4)
        footer = blob[end + 1 : nl]
        if nl < 0 or not footer.startswith(b"--- "):
            return None
        mac = _b64(footer[4:])
        header = blob[: end + 4]  # what the MAC covers: up to and including `---`
        file_key = None
        region = blob[len(_INTRO) - 1 : end + 1]  # "\n-> stanza\n…\n", each stanza
        if not region.startswith(b"\n-> "):
            return None
        stanzas = region[: len(region) - 1].split(b"\n-> ")[1:]
        for stanza in stanzas:  # "type args\nbody line\n…\nlast body line"
            first, *lines = stanza.split(b"\n")
            args = first.split(b" ")
            if args[0] != b"X25519" or file_key is not None:
                continue  # another recipient type (age's grease): not ours
            if len(args) != 2 or len(lines) != 1:
                return None
            share, wrapped = _b64(args[1]), _b64(lines[0])
            if share is None or wrapped is None or len(share) != 32 or len(wrapped) != 32:
                return None
            secret = self._private.exchange(self._share(share))
            wrap = _hkdf(secret, share + self._public, _X25519_INFO)
            try:
                file_key = self._aead(wrap).decrypt(b"\0" * 12, wrapped, None)
            except Exception:  # another recipient's stanza: try the next
                file_key = None
        if file_key is None or mac is None:
            return None
        want = hmac.digest(_hkdf(file_key, b"", b"header"), header, "sha256")
        if not hmac.compare_digest(want, mac):
            return None
        nonce = blob[nl + 1 : nl + 17]
        payload = memoryview(blob)[nl + 17 :]
        if len(nonce) != 16 or not payload:
            return None
        aead: Any = self._aead(_hkdf(file_key, nonce, b"payload"))
        out = []
        count = (len(payload) + _CHUNK - 1) // _CHUNK
        for i in range(count):
            chunk = payload[i * _CHUNK : (i + 1) * _CHUNK]
            last = i == count - 1
            if last and len(chunk) == 16 and count > 1:
                return None  # an empty last chunk follows only an empty file
            out.append(aead.decrypt(i.to_bytes(11, "big") + bytes([last]), bytes(chunk), None))
        return b"".join(out)


def reader(secret: str, public: str) -> Reader | None:
    """A Reader for the identity, or None where `cryptography` is missing (pyrage serves)."""
    try:
        return Reader(secret, public)
    except (ImportError, ValueError):
        return None
