"""age files to a remote's data key, opened in a sixteenth of pyrage's time a file.

A pull opens every file it fetches. pyrage costs ~0.2 ms a small file under the GIL, and even
a lean age reader pays one X25519 exchange a file (~0.04 ms). So memsync writes standard age
(https://age-encryption.org/v1) itself, with libsodium's X25519 and ChaCha20-Poly1305 (through
PyNaCl) and the standard library's HMAC, and puts two stanzas in each header:

- the X25519 stanza to the data key, as `age` writes it: `age -d -i` with the data key opens
  every object (an unknown stanza is skipped by age, as its own "grease" stanzas are);
- a `memsync-v2` stanza: the two keys age derives from the file key, the header MAC's and the
  payload's, sealed with ChaCha20-Poly1305 under one key derived from the data key (a random
  96-bit nonce a file: safe for billions of files a key; the payload's nonce as associated
  data), so a device holding the data key opens a file with one HMAC and two AEAD opens, no
  exchange and no derivation. Only a holder of the data key can make one.

The header MAC covers both stanzas, as age's does, and every payload chunk's tag is checked.
Anything this reader does not take (another layout, a failed check, PyNaCl missing)
returns None and the caller asks pyrage, so it never accepts what age refuses; and a memsync
object's content is checked by its own MAC under the data key after either.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
from collections.abc import Callable
from typing import NamedTuple

_INTRO = b"age-encryption.org/v1\n"
_X25519_INFO = b"age-encryption.org/v1/X25519"
_STANZA = b"memsync-v2"
_CHUNK = 64 * 1024  # a payload chunk's plaintext; its ciphertext has a 16-byte tag more
_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_ZERO = b"\0" * 12
_LAST = b"\0" * 11 + b"\1"  # the nonce of a payload's one and last chunk
# canonical unpadded base64 (the last character's unused bits are zero) of 32 bytes, of 12,
# and of 80 as age wraps a stanza's body (64 columns a line)
_B32 = rb"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]"
_B12 = rb"[A-Za-z0-9+/]{16}"
_B80 = rb"[A-Za-z0-9+/]{64}\n[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]"
# the header memsync writes (encrypt), to the byte: X25519 stanza, memsync-v2 stanza, MAC,
# then the payload's nonce
_OURS = re.compile(
    rb"age-encryption\.org/v1\n-> X25519 %s\n%s\n-> memsync-v2 (%s)\n(%s)\n---( %s)\n"
    % (_B32, _B32, _B12, _B80, _B32)
)


def _b64(text: bytes) -> bytes | None:
    """age's base64: standard alphabet, no padding, canonical (one spelling per value)."""
    try:
        raw = base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None
    return raw if base64.b64encode(raw).rstrip(b"=") == text else None


def _enc64(raw: bytes) -> bytes:
    return base64.b64encode(raw).rstrip(b"=")


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


class Sodium(NamedTuple):
    """X25519 and ChaCha20-Poly1305 (IETF, 12-byte nonces) as four functions of bytes."""

    public: Callable[[bytes], bytes]  # secret -> its public key
    shared: Callable[[bytes, bytes], bytes]  # (secret, public) -> shared; all-zero raises
    seal: Callable[[bytes, bytes, bytes, bytes], bytes]  # (key, nonce, plain, ad) -> sealed
    open: Callable[[bytes, bytes, bytes, bytes], bytes]  # (key, nonce, sealed, ad); bad: raises


def _sodium() -> Sodium:
    """libsodium's functions, from PyNaCl's compiled module (~1 ms to load, against ~15 ms for
    PyNaCl's public bindings, which load all of libsodium's wrappers first, and ~6 ms for
    `cryptography`'s 13 MB core); from the public bindings where the module is laid out
    otherwise. Every size is checked first: the C functions read what the sizes say."""
    try:
        from nacl._sodium import ffi, lib

        lib.sodium_init()
        new, buffer, null = ffi.new, ffi.buffer, ffi.NULL
        encrypt = lib.crypto_aead_chacha20poly1305_ietf_encrypt
        decrypt = lib.crypto_aead_chacha20poly1305_ietf_decrypt
    except (ImportError, AttributeError):
        return _checked(_bindings())

    def public(secret: bytes) -> bytes:
        out = new("unsigned char[32]")
        lib.crypto_scalarmult_base(out, secret)
        return bytes(buffer(out))

    def shared(secret: bytes, point: bytes) -> bytes:
        out = new("unsigned char[32]")
        if lib.crypto_scalarmult(out, secret, point) != 0:
            raise ValueError("an all-zero shared secret")  # a low-order point: age refuses it
        return bytes(buffer(out))

    def seal(key: bytes, nonce: bytes, plain: bytes, ad: bytes) -> bytes:
        out = new("unsigned char[]", len(plain) + 16)
        encrypt(out, null, plain, len(plain), ad, len(ad), null, nonce, key)
        return bytes(buffer(out))

    def open_(key: bytes, nonce: bytes, sealed: bytes, ad: bytes) -> bytes:
        size = len(sealed) - 16
        if size < 0:
            raise ValueError("shorter than its tag")
        out = new("unsigned char[]", size or 1)
        if decrypt(out, null, null, sealed, len(sealed), ad, len(ad), nonce, key) != 0:
            raise ValueError("a tag that does not hold")
        return buffer(out, size)[:]

    return _checked(Sodium(public, shared, seal, open_))


def _bindings() -> Sodium:
    from nacl import bindings as b

    return Sodium(
        b.crypto_scalarmult_base,
        b.crypto_scalarmult,
        lambda key, nonce, plain, ad: b.crypto_aead_chacha20poly1305_ietf_encrypt(
            plain, ad, nonce, key
        ),
        lambda key, nonce, sealed, ad: b.crypto_aead_chacha20poly1305_ietf_decrypt(
            sealed, ad, nonce, key
        ),
    )


def _checked(na: Sodium) -> Sodium:
    """`na`, refusing a key, point or nonce of the wrong size before it is read."""

    def sizes(*keys: bytes, nonce: bytes = _ZERO) -> None:
        if len(nonce) != 12 or any(len(k) != 32 for k in keys):
            raise ValueError("a key or nonce of the wrong size")

    def public(secret: bytes) -> bytes:
        sizes(secret)
        return na.public(secret)

    def shared(secret: bytes, point: bytes) -> bytes:
        sizes(secret, point)
        return na.shared(secret, point)

    def seal(key: bytes, nonce: bytes, plain: bytes, ad: bytes) -> bytes:
        sizes(key, nonce=nonce)
        return na.seal(key, nonce, plain, ad)

    def open_(key: bytes, nonce: bytes, sealed: bytes, ad: bytes) -> bytes:
        sizes(key, nonce=nonce)
        return na.open(key, nonce, sealed, ad)

    return Sodium(public, shared, seal, open_)


class AgeKey:
    """Writes and reads age files to one X25519 identity (`AGE-SECRET-KEY-1…`), with a
    `memsync-v2` stanza under `stanza_key` beside the X25519 one (without one: X25519 only,
    as a device's own identity reads the recipients object)."""

    def __init__(self, secret: str, stanza_key: bytes | None = None) -> None:
        raw = bech32_data(secret, "age-secret-key-")
        if raw is None or len(raw) != 32:
            raise ValueError("not an age X25519 identity")
        self._na = _sodium()
        self._private = raw
        self._public = self._na.public(raw)
        # one key for every file's stanza: made once
        self._stanza = stanza_key

    # --- writing --------------------------------------------------------------------------

    def encrypt(self, plain: bytes) -> bytes:
        """`plain` as an age file to this identity, with the memsync-v2 stanza."""
        if self._stanza is None:
            raise ValueError("no stanza key to write with")
        file_key = os.urandom(16)
        na = self._na
        ephemeral = os.urandom(32)
        share = na.public(ephemeral)
        wrap = _hkdf(na.shared(ephemeral, self._public), share + self._public, _X25519_INFO)
        nonce = os.urandom(16)
        header_key = _hkdf(file_key, b"", b"header")
        payload_key = _hkdf(file_key, nonce, b"payload")
        stanza_nonce = os.urandom(12)
        keys = _enc64(na.seal(self._stanza, stanza_nonce, header_key + payload_key, nonce))
        header = b"".join(
            [
                _INTRO,
                b"-> X25519 " + _enc64(share) + b"\n",
                _enc64(na.seal(wrap, _ZERO, file_key, b"")) + b"\n",
                b"-> " + _STANZA + b" " + _enc64(stanza_nonce) + b"\n",
                keys[:64] + b"\n" + keys[64:] + b"\n",  # age's 64 columns a body line
                b"---",
            ]
        )
        mac = hmac.digest(header_key, header, "sha256")
        out = [header, b" ", _enc64(mac), b"\n", nonce]
        count = max(1, (len(plain) + _CHUNK - 1) // _CHUNK)
        for i in range(count):
            chunk = plain[i * _CHUNK : (i + 1) * _CHUNK]
            last = bytes([i == count - 1])
            out.append(na.seal(payload_key, i.to_bytes(11, "big") + last, chunk, b""))
        return b"".join(out)

    # --- reading --------------------------------------------------------------------------

    def decrypt(self, blob: bytes) -> bytes | None:
        """The plaintext, or None if this reader does not take the file (pyrage decides)."""
        try:
            quick = self._ours(blob)  # a MAC or tag that fails raises: refused either way
            return quick if quick is not None else self._general(blob)
        except Exception:  # a malformed or foreign file: the full implementation answers
            return None

    def _file_key(self, kind: bytes, args: list[bytes], lines: list[bytes]) -> bytes | None:
        """The file key from one stanza, if it is an X25519 one to this identity."""
        if kind != b"X25519":
            return None  # another recipient type (memsync's own, age's grease): not this one
        if len(args) != 1 or len(lines) != 1:
            raise ValueError("a malformed stanza")
        arg, wrapped = _b64(args[0]), _b64(lines[0])
        if arg is None or wrapped is None or len(arg) != 32 or len(wrapped) != 32:
            raise ValueError("a malformed stanza")
        key = _hkdf(self._na.shared(self._private, arg), arg + self._public, _X25519_INFO)
        try:
            return self._na.open(key, _ZERO, wrapped, b"")
        except Exception:  # another recipient's stanza: try the next
            return None

    def _ours(self, blob: bytes) -> bytes | None:
        """The plaintext of a file in exactly the layout `encrypt` writes, opened by its
        memsync-v2 stanza with the checks age makes (canonical base64, the header MAC, every
        chunk's tag; the payload's nonce, from which age derives the payload key, is the
        stanza's associated data); None if it is laid out otherwise or that stanza does not
        open (then `_general` reads it as age does)."""
        stanza = self._stanza
        m = None if stanza is None else _OURS.match(blob)
        if stanza is None or m is None:
            return None
        end = m.end()
        nonce = blob[end : end + 16]
        if len(nonce) != 16:
            return None
        sealed = binascii.a2b_base64(m[2][:64] + m[2][65:] + b"=")
        try:
            keys = self._na.open(stanza, binascii.a2b_base64(m[1]), sealed, nonce)
        except Exception:  # not made with this data key: the X25519 stanza may still open
            return None
        mark = m.start(3)
        mac = binascii.a2b_base64(m[3][1:] + b"=")
        if not hmac.compare_digest(hmac.digest(keys[:32], blob[:mark], "sha256"), mac):
            raise ValueError("a header MAC that does not hold")
        return _payload(self._na.open, keys[32:], memoryview(blob)[end + 16 :])

    def _general(self, blob: bytes) -> bytes | None:
        """Any age file to this identity, as age reads it, by its X25519 stanza."""
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
        region = blob[len(_INTRO) - 1 : end + 1]  # "\n-> stanza\n…\n", each stanza
        if not region.startswith(b"\n-> "):
            return None
        file_key = None
        for stanza in region[: len(region) - 1].split(b"\n-> ")[1:]:
            first, *lines = stanza.split(b"\n")  # "type args", then the body's lines
            kind, *args = first.split(b" ")
            file_key = self._file_key(kind, args, lines)
            if file_key is not None:
                break
        if file_key is None or mac is None:
            return None
        want = hmac.digest(_hkdf(file_key, b"", b"header"), header, "sha256")
        if not hmac.compare_digest(want, mac):
            return None
        nonce = blob[nl + 1 : nl + 17]
        if len(nonce) != 16:
            return None
        payload_key = _hkdf(file_key, nonce, b"payload")
        return _payload(self._na.open, payload_key, memoryview(blob)[nl + 17 :])


def _payload(
    open_: Callable[[bytes, bytes, bytes, bytes], bytes], key: bytes, payload: memoryview
) -> bytes | None:
    """age's payload (STREAM: 64 KiB chunks, each with its tag, the last one marked), opened
    with its key; None where it is empty or ends in an empty chunk after others. A tag that
    does not hold raises."""
    size = _CHUNK + 16
    if len(payload) <= size:  # most files: one chunk, the last
        return None if len(payload) < 16 else open_(key, _LAST, bytes(payload), b"")
    out = []
    count = (len(payload) + size - 1) // size
    for i in range(count):
        chunk = payload[i * size : (i + 1) * size]
        last = i == count - 1
        if last and len(chunk) == 16:
            return None  # an empty last chunk follows only an empty file
        out.append(open_(key, i.to_bytes(11, "big") + bytes([last]), bytes(chunk), b""))
    return b"".join(out)


def low_order(public: bytes) -> bool:
    """Whether an X25519 public key gives every secret the all-zero shared secret: a point no
    identity has, which age refuses to encrypt to."""
    try:
        shared = _sodium().shared
    except ImportError:  # PyNaCl missing: age refuses the key when it encrypts to it
        return False
    try:
        shared(os.urandom(32), public)
    except Exception:  # libsodium's refusal (the size is the caller's to check)
        return True
    return False


def age_key(secret: str, stanza_key: bytes | None = None) -> AgeKey | None:
    """An AgeKey for the identity, or None where PyNaCl is missing (pyrage serves)."""
    try:
        return AgeKey(secret, stanza_key)
    except Exception:  # missing, or not loadable here
        return None
