"""The key material of an encrypted remote (see docs/encryption.md).

The rule, in one breath: each remote has one age X25519 identity, its *data key*. Every
object is an age file to the data key's public key; the data key itself is kept on the remote
in the recipients object (`_memsync/crypt.json`), as an age file to every device's own
identity. Remote names are the memory's names under deterministic authenticated encryption
(SIV: a MAC of the name is its IV) with keys derived from the data key, so one name is always
one remote key and a listing maps back. Inside each object, before the content, one header line
carries the writer's edit time and a MAC of name, time and content under the data key: age
alone lets anyone holding the public key write a valid file, the MAC does not. memsync's own
MACs and derivations are keyed BLAKE2s (`_prf`).

The recipients object is authenticated by a MAC under its own data key and, for a new data
key, by one under every earlier key (`vouch`), so a device that trusted the key before accepts
a rotation by a device with access and refuses one made by someone without a key. What this
device trusted last is kept beside its identity (`keys/remotes/`), 0600, never uploaded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

from memsync.stores.crypt_age import AgeKey, age_key, bech32_data
from memsync.util.errors import RefusedFile, UserError
from memsync.util.fsutil import atomic_write, private_dir, read_if_there

CRYPT_KEY = "_memsync/crypt.json"  # the recipients object, the one name not hidden
FORMAT = "memsync-crypt 1"
HEADER = b"memsync-crypt 1 "  # the first line of every decrypted object
_SEGMENT = 200  # characters of a hidden name a path segment holds (file systems allow 255)
_AGE_LOCK = threading.Lock()
_PAD = 16  # names are padded to a multiple of this many bytes: only their rough length shows


class Locked(UserError):
    """An encrypted remote this device cannot read (no access, or its recipients list does
    not verify): nothing is synced, but `purge --all` may still erase it."""


class NoAccess(Locked):
    """The remote is encrypted and this device holds no key to it."""


class BadRecipients(Locked):
    """The recipients object does not verify: changed by someone without a key, or damaged."""


def memsync_home() -> Path:
    """MEMSYNC_HOME, by the rule context/config.py keeps (stores sit below context)."""
    return Path(os.environ.get("MEMSYNC_HOME") or Path.home() / ".memsync").expanduser()


def keys_dir() -> Path:
    return memsync_home() / "keys"


def identity_path() -> Path:
    return keys_dir() / "identity.txt"


def _age():  # pyrage, imported only by an encrypted remote
    try:
        import pyrage
    except ImportError:
        raise UserError(
            "this remote is encrypted and memsync's age library is missing; run "
            "`pip install pyrage` (or reinstall memsync) and try again"
        ) from None
    return pyrage


class Identity:
    """An age X25519 identity (`AGE-SECRET-KEY-1…`, as `str()` gives it back). memsync's own age
    code opens the recipients object with it, so a pull loads no pyrage (~2 ms of a fresh
    pull's CPU); pyrage's object is made where its public key is asked for."""

    __slots__ = ("secret",)

    def __init__(self, secret: str) -> None:
        raw = bech32_data(secret, "age-secret-key-")
        if raw is None or len(raw) != 32 or secret not in (secret.upper(), secret.lower()):
            raise ValueError("not an age X25519 identity")
        self.secret = secret

    def __str__(self) -> str:
        return self.secret

    def pyrage(self) -> Any:
        return _age().x25519.Identity.from_str(self.secret)

    def to_public(self) -> Any:
        return self.pyrage().to_public()


def load_identity() -> Identity | None:
    """This device's age identity, or None if it has none yet."""
    data = read_if_there(identity_path())
    if data is None:
        return None
    _check_private(identity_path())
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines()]
    secret = next((ln for ln in lines if ln.startswith("AGE-SECRET-KEY-")), None)
    try:
        return Identity(secret or "")
    except ValueError:
        raise UserError(
            f"{identity_path()} holds no age identity; restore it from your backup "
            "(or move it away and run `memsync keys init` for a new one)"
        ) from None


def _check_private(path: Path, what: str = "this device's secret key") -> None:
    """Refuse a key file others may read (the identity, or a remote's data key), as ssh
    refuses such a private key: the key may already have been copied, and memsync does not go
    on as if it were secret. A file that is not there passes."""
    if os.name != "posix":
        return
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        return
    if mode & 0o077:
        raise UserError(
            f"{path} is readable by others (mode {mode:o}); it is {what}: run "
            f"`chmod 600 {path}` (and, if others could have copied it, revoke this device "
            "with `memsync keys remove` from another device, which also changes the data key)"
        )


def create_identity() -> tuple[Identity, bool]:
    """(identity, made now): this device's identity, made if missing, in the file format
    `age-keygen` writes (so `age -d -i` reads it), mode 0600."""
    found = load_identity()
    if found is not None:
        return found, False
    identity = _age().x25519.Identity.generate()
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = f"# created: {created}\n# public key: {identity.to_public()}\n{identity}\n"
    private_dir(keys_dir())
    atomic_write(identity_path(), text.encode(), mode=0o600)
    return Identity(str(identity)), True


def public_key(identity: Any) -> str:
    return str(identity.to_public())


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def _split(text: str) -> str:
    """A long hidden name as path segments a file system holds."""
    return "/".join(text[i : i + _SEGMENT] for i in range(0, len(text), _SEGMENT))


def _prf(key: bytes, message: bytes) -> bytes:
    """memsync's own MAC and PRF: keyed BLAKE2s (RFC 7693), 32 bytes. A pull computes three
    a file (the name's IV and stream, the content's tag); the standard library's BLAKE2s
    costs a third of its OpenSSL-backed HMAC-SHA256 there."""
    return hashlib.blake2s(message, key=key).digest()


class DataKey:
    """One generation of a remote's data key, and what is derived from it."""

    def __init__(self, secret: str, generation: int) -> None:
        raw = bech32_data(secret, "age-secret-key-")
        if raw is None or len(raw) != 32:
            raise ValueError("not an age X25519 identity")
        self.secret = secret
        self.generation = generation
        master = hashlib.sha256(b"memsync-crypt\0" + secret.encode()).digest()
        self._siv = _prf(master, b"name-iv")
        self._ctr = _prf(master, b"name-stream")
        self._mac = _prf(master, b"mac")
        self._stanza = _prf(master, b"age-stanza")
        self._names: dict[str, str] = {}  # name -> hidden, as hidden or revealed before
        self._age: AgeKey | None = None  # memsync's own age writer and reader, made once
        self._no_age = False  # True: PyNaCl is missing, pyrage does everything

    @property
    def identity(self) -> Any:
        """The data key as a pyrage identity (pyrage is imported when first asked)."""
        return _age().x25519.Identity.from_str(self.secret)

    @property
    def recipient(self) -> Any:
        return self.identity.to_public()

    def _own(self) -> AgeKey | None:
        """memsync's own age implementation for this key (None: pyrage's alone)."""
        own = self._age
        if own is None and not self._no_age:
            with _AGE_LOCK:  # a pull's threads all open at once: one makes it
                if self._age is None and not self._no_age:
                    self._age = age_key(self.secret, self._stanza)
                    self._no_age = self._age is None
                own = self._age
        return own

    @classmethod
    def generate(cls, generation: int) -> DataKey:
        return cls(str(_age().x25519.Identity.generate()), generation)

    def mac(self, *parts: bytes) -> str:
        return _prf(self._mac, b"\0".join(parts)).hex()

    def _stream(self, iv: bytes, size: int) -> bytes:
        if size <= 32:  # most names: one block
            return _prf(self._ctr, iv + b"\0\0\0\0")[:size]
        blocks = (size + 31) // 32
        return b"".join(_prf(self._ctr, iv + n.to_bytes(4, "big")) for n in range(blocks))[:size]

    def hide(self, name: str) -> str:
        """The remote key of `name`: the same every time, unreadable without the key (a
        name listed before is looked up: a pull's fetches cost no HMAC more)."""
        known = self._names.get(name)
        if known is not None:
            return known
        raw = name.encode()
        padded = raw + b"\0" * (-len(raw) % _PAD)  # names are never empty (check_key)
        iv = _prf(self._siv, padded)[:16]
        sealed = _xor(padded, self._stream(iv, len(padded)))
        hidden = _split((iv + sealed).hex())  # lower case: one name on a case-insensitive disk
        self._names[name] = hidden
        return hidden

    def reveal(self, hidden: str) -> str | None:
        """The name `hidden` stands for, or None if it is not one of this key's names."""
        long = len(hidden) > _SEGMENT  # in path segments (a short one holds no "/")
        flat = hidden.replace("/", "") if long else hidden
        try:
            raw = bytes.fromhex(flat)
        except ValueError:
            return None
        size = len(raw) - 16
        if size < _PAD or size % _PAD or raw.hex() != flat:  # one spelling per name
            return None
        if long and _split(flat) != hidden:
            return None
        iv = raw[:16]
        padded = _xor(raw[16:], self._stream(iv, size))
        if not hmac.compare_digest(iv, _prf(self._siv, padded)[:16]):
            return None
        try:
            name = padded.rstrip(b"\0").decode()
        except UnicodeDecodeError:
            return None
        self._names[name] = hidden
        return name

    def seal(self, name: str, data: bytes, edited: float | None, armored: bool = False) -> bytes:
        """`data` as an age file to this key, the header line first (edit time and MAC); in
        age's ASCII armor (pyrage's) if `armored`, else by memsync's own age code, which adds
        the stanza a pull opens without an exchange (crypt_age.py)."""
        when = "-" if edited is None else repr(float(edited))
        tag = self.mac(b"file", name.encode(), when.encode(), data)
        plain = HEADER + f"{tag} {when}\n".encode() + data
        own = None if armored else self._own()
        if own is not None:
            return own.encrypt(plain)
        return bytes(_age().encrypt(plain, [self.recipient], armored=armored))

    def open(self, name: str, blob: bytes) -> tuple[bytes, float | None]:
        """(content, edited) of an object sealed under `name`; RefusedFile if it does not
        decrypt or its MAC does not hold (damaged, truncated, swapped or forged)."""
        own = self._age or self._own()
        plain = None if own is None else own.decrypt(blob)
        if plain is None:  # a file memsync's reader does not take: pyrage's implementation
            try:
                plain = bytes(_age().decrypt(blob, [self.identity]))
            except Exception:
                raise RefusedFile(name, _DAMAGED) from None
        head, nl, data = plain.partition(b"\n")
        parts = head[len(HEADER) :].split(b" ")
        if not nl or not head.startswith(HEADER) or len(parts) != 2:
            raise RefusedFile(name, _DAMAGED)
        tag, when = parts[0].decode("ascii", "replace"), parts[1]
        if not hmac.compare_digest(tag, self.mac(b"file", name.encode(), when, data)):
            raise RefusedFile(name, _DAMAGED)
        return data, None if when == b"-" else float(when)


_DAMAGED = (
    "its encrypted copy on the remote does not decrypt or its authentication fails "
    "(damaged, truncated or changed by someone without the key); not synced"
)


# what every refusal of a missing, damaged or foreign recipients list says to do: the list
# changes only on top of the one a device just verified, so no device writes back its own
RESTORE = (
    "put back the newest copy of the list if you have one (a bucket's versions, a backup), or "
    "start over as docs/encryption.md says (`memsync purge --all` and `memsync keys init` on "
    "one device, `keys add` of the others; their memory is kept and goes up again)"
)


class Device(NamedTuple):
    key: str  # age1…
    name: str
    added: float


class Keyring:
    """What the recipients object holds, decrypted: the data key, the devices it is wrapped
    to, and the earlier data keys (old names and vouches for devices that trusted them).
    (A plain class: a sync of a plain remote imports this module, and dataclasses costs more
    than its work; docs/benchmarks.md.)"""

    def __init__(
        self,
        key: DataKey,
        devices: list[Device],
        history: list[DataKey] | None = None,
        vouched: dict[int, str] | None = None,
        body: bytes = b"",
        version: int = 1,
        chain: dict[int, str] | None = None,
    ) -> None:
        self.key = key
        self.devices = devices
        self.history = history or []
        self.vouched = vouched or {}  # as read: generation -> MAC
        self.body = body  # as read or built: what the MACs cover
        # one more with every change of the list (a device added or removed, a rotation),
        # and the MAC of every list it was made from, by version: a device takes a newer list
        # only if it was made from the one this device verified (`follows`)
        self.version = version
        self.chain = chain or {}

    def keys(self) -> list[DataKey]:
        return [self.key, *self.history]

    def successor(self, key: DataKey, devices: list[Device], history: list[DataKey]) -> Keyring:
        """The next list, made from this one (as read or built)."""
        chain = {**self.chain, self.version: self.key.mac(b"recipients", self.body)}
        return Keyring(key, devices, history, version=self.version + 1, chain=chain)


def build(ring: Keyring) -> bytes:
    """The recipients object for `ring`: the box (age, to every device) and its MACs."""
    pyrage = _age()
    inner = {
        "data_key": ring.key.secret,
        "generation": ring.key.generation,
        "devices": [{"key": d.key, "name": d.name, "added": d.added} for d in ring.devices],
        "history": [{"data_key": k.secret, "generation": k.generation} for k in ring.history],
    }
    to = [pyrage.x25519.Recipient.from_str(d.key) for d in ring.devices]
    box = base64.b64encode(pyrage.encrypt(json.dumps(inner).encode(), to)).decode()
    body = ring.body = _body(ring.key.generation, ring.version, ring.chain, box)
    doc = {
        "format": FORMAT,
        "generation": ring.key.generation,
        "version": ring.version,
        "chain": _chain_doc(ring.chain),
        "box": box,
        "mac": ring.key.mac(b"recipients", body),
        "vouch": {str(k.generation): k.mac(b"recipients", body) for k in ring.history},
    }
    return (json.dumps(doc, indent=1) + "\n").encode()


def _chain_doc(chain: dict[int, str]) -> dict[str, str]:
    return {str(version): mac for version, mac in sorted(chain.items())}


def _body(generation: int, version: int, chain: dict[int, str], box: str) -> bytes:
    doc = {"format": FORMAT, "generation": generation, "version": version}
    doc.update(chain=_chain_doc(chain), box=box)
    return json.dumps(doc).encode()


class Clear(NamedTuple):
    """A recipients object's clear part, which its MAC and vouches cover."""

    generation: int
    version: int
    chain: dict[int, str]
    box: str
    mac: str
    vouch: dict[str, str]

    @property
    def body(self) -> bytes:
        return _body(self.generation, self.version, self.chain, self.box)


def clear(data: bytes) -> Clear | None:
    """The clear part of a recipients object, or None if it is not one."""
    try:
        doc = json.loads(data)
        chain = {int(v): str(mac) for v, mac in doc["chain"].items()}
        vouch = doc.get("vouch")
        vouch = {str(g): v for g, v in vouch.items() if isinstance(v, str)} if vouch else {}
        found = Clear(
            int(doc["generation"]),
            int(doc["version"]),
            chain,
            str(doc["box"]),
            str(doc["mac"]),
            vouch,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return found


def read(data: bytes, identity: Identity, url: str) -> Keyring:
    """Open the recipients object with this device's identity. NoAccess if it is not one of
    the recipients; BadRecipients if the object is damaged or its own MAC fails."""
    bad = BadRecipients(
        f"the recipients list of the encrypted remote {url} ({CRYPT_KEY}) is damaged or was "
        f"changed by someone without a key; nothing was synced: {RESTORE}"
    )
    found = clear(data)
    if found is None:
        raise bad
    try:
        sealed = base64.b64decode(found.box, validate=True)
    except ValueError:
        raise bad from None
    own = age_key(identity.secret)
    opened = None if own is None else own.decrypt(sealed)
    if opened is None:  # not to this identity, or damaged: pyrage's answer says which
        pyrage = _age()
        try:
            opened = pyrage.decrypt(sealed, [identity.pyrage()])
        except pyrage.DecryptError as exc:
            if "no matching keys" in str(exc).lower():  # no stanza opens with this identity
                raise no_access(url, public_key(identity)) from None
            raise bad from None
    try:
        inner = json.loads(opened)
    except ValueError:
        raise bad from None
    try:
        key = DataKey(inner["data_key"], int(inner["generation"]))
        devices = [Device(d["key"], d["name"], float(d["added"])) for d in inner["devices"]]
        history = [DataKey(h["data_key"], int(h["generation"])) for h in inner["history"]]
    except (KeyError, TypeError, ValueError):
        raise bad from None
    body = found.body
    mac = key.mac(b"recipients", body)
    if key.generation != found.generation or not hmac.compare_digest(found.mac, mac):
        raise bad
    vouched = {int(g): v for g, v in found.vouch.items() if g.isdigit()}
    return Keyring(key, devices, history, vouched, body, found.version, found.chain)


def no_access(url: str, public: str) -> NoAccess:
    return NoAccess(
        f"the remote {url} is encrypted and this device's key {public} is not among its "
        f"recipients: on a device that has access, run `memsync keys add {public}`"
    )


# --- what this device trusted last, per remote --------------------------------------------


def trust_path(url: str, prefix: str) -> Path:
    digest = hashlib.sha256(f"{url}\0{prefix}".encode()).hexdigest()[:32]
    return keys_dir() / "remotes" / f"{digest}.json"


class Trust(NamedTuple):
    generation: int
    secret: str
    etag: str
    history: tuple[tuple[int, str], ...] = ()  # the earlier data keys: (generation, secret)
    devices: tuple[Device, ...] = ()  # the recipients, as last verified
    removed: bool = False  # a newer list without this device was seen: no older one is taken
    version: int = 0  # the newest list this device verified: its version
    mac: str = ""  # and its MAC, which tells it from another list of the same version


def load_trust(url: str, prefix: str) -> Trust | None:
    """What this device trusted for the remote, if anything. Its key files are checked each
    time: a device that syncs with the data key it keeps here never opens its identity."""
    path = trust_path(url, prefix)
    data = read_if_there(path)
    if data is None:
        return None
    _check_private(path, "the remote's data key, which opens everything on it")
    _check_private(identity_path())
    try:
        doc = json.loads(data)
        history = tuple((int(g), str(k)) for g, k in doc.get("history", []))
        devices = tuple(Device(str(k), str(n), float(a)) for k, n, a in doc.get("devices", []))
        return Trust(
            int(doc["generation"]),
            str(doc["data_key"]),
            str(doc["etag"]),
            history,
            devices,
            doc.get("removed") is True,
            int(doc.get("version", 0)),
            str(doc.get("mac", "")),
        )
    except (ValueError, KeyError, TypeError):
        return None  # a damaged cache: the remote's object is read and checked afresh


def save_trust(url: str, prefix: str, ring: Keyring, etag: str) -> None:
    """What this device trusts for the remote: the data key, the recipients object's ETag,
    the earlier data keys (to recognise objects a rotation left behind) and the recipients
    (to tell this device it was removed), and the list's version and MAC (`follows`)."""
    path = trust_path(url, prefix)
    key = ring.key
    doc: dict[str, Any] = {"url": url, "prefix": prefix, "generation": key.generation}
    doc["data_key"], doc["etag"] = key.secret, etag
    doc["history"] = [[k.generation, k.secret] for k in ring.history]
    doc["devices"] = [[d.key, d.name, d.added] for d in ring.devices]
    doc["version"] = ring.version
    doc["mac"] = key.mac(b"recipients", ring.body)
    private_dir(path.parent)
    atomic_write(path, json.dumps(doc).encode(), mode=0o600)


def mark_removed(url: str, prefix: str, data: bytes) -> None:
    """Remember that this device was removed from the remote's recipients by the list `data`
    (verified by `follows`): that list or an older one put back on the remote (by anyone who
    kept a copy) is refused, so a revoked device never writes under a revoked key; a newer
    list naming it again (`keys add`) is taken as usual."""
    path = trust_path(url, prefix)
    saved, listed = read_if_there(path), clear(data)
    if saved is None or listed is None:
        return
    try:
        doc = json.loads(saved)
        doc.update(removed=True, version=listed.version, mac=listed.mac)
    except (ValueError, AttributeError):  # a damaged record: read afresh next time
        return
    atomic_write(path, json.dumps(doc).encode(), mode=0o600)


def follows(data: bytes, trusted: Trust) -> bool:
    """Whether the recipients object `data` follows from the newest list this device
    verified: that very list (its version and MAC), or a newer one made from it (the list's
    chain names it) under the same data key (its MAC holds) or under a newer generation that
    key vouched for. Read from the object's clear part, so a device no longer among the
    recipients can tell a removal by a device with access from a list made by someone
    without a key, from a copy of an earlier list put back, or from one made from such a copy."""
    found = clear(data)
    if found is None or found.version < trusted.version:
        return False
    if found.version == trusted.version:
        made_from = found.mac == trusted.mac
    else:
        made_from = found.chain.get(trusted.version) == trusted.mac
    if not made_from or not trusted.mac:
        return False
    mac = DataKey(trusted.secret, trusted.generation).mac(b"recipients", found.body)
    if found.generation == trusted.generation:
        return hmac.compare_digest(found.mac, mac)
    vouch = found.vouch.get(str(trusted.generation))
    return (
        found.generation > trusted.generation
        and vouch is not None
        and (hmac.compare_digest(vouch, mac))
    )


def started_over(url: str, prefix: str) -> str:
    """What to do about a list this device cannot take: the end of its one sentence."""
    return (
        "if a device of yours started the remote over (`purge --all`, then perhaps `keys "
        f"init`), delete {trust_path(url, prefix)} here to take the remote as it is now; "
        f"otherwise {RESTORE}"
    )


def replaced(url: str, prefix: str) -> BadRecipients:
    """A recipients object that does not follow from the newest this device verified: an
    older version (put back), another list of the same version or one made from another,
    another key under the same generation, or a newer one without a vouch under the trusted
    key (made without it)."""
    return BadRecipients(
        f"the recipients list of the encrypted remote {url} ({CRYPT_KEY}) does not follow from "
        "the newest one this device verified (changed by someone without a key, or an earlier "
        f"copy put back); nothing was synced: {started_over(url, prefix)}"
    )
