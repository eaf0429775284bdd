"""The encrypting store: wraps any store, as rclone's crypt wraps a backend.

open_store wraps every store in one. Whether a remote is encrypted is on the remote: it is if
its recipients object (`_memsync/crypt.json`) is there. A listing shows it for free, so a
no-op sync sends nothing more; a read before any listing tries the plain name first and looks
for the recipients object only when that is missing. A device that trusted a data key for this
remote (keys/remotes/ in MEMSYNC_HOME) starts encrypted and refuses a remote whose recipients
object is gone, so nobody can turn encryption off by deleting it.

Encrypted objects live under `_memsync/x/` (a name no device syncs, this version or an earlier
one, so a device that has not yet seen the switch ignores them). ETags are the ciphertext's.
A write that loses its condition, and a read that finds nothing, read the recipients object
again: a device whose run began before `keys init` or a rotation then follows the switch, and
the engine's usual merge-and-retry does the rest. Objects outside `_memsync/x/` on an encrypted
remote, or sealed under an earlier data key (written by a device that had not seen the
switch yet, or by someone without the key), are listed with a marked ETag and refused on
download: they are not authenticated, and nothing a device holds is deleted because of them;
a conditional write over one replaces it. The device that created one (its listing came before
a switch, its write after) seals it under the current key before its command ends (`reseal`);
what is left even so (a writer without access, or killed) `memsync keys init --adopt NAME`
folds in when a person names it (see crypt_migrate.fold_strays). A remote holding encrypted
objects but no recipients object is refused by every device (`orphaned`), unless a `keys init`
is under way (its `PENDING` mark is there).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from memsync.stores.base import Entry, RemoteVersion, Store, check_key
from memsync.stores.crypt_keys import (
    CRYPT_KEY,
    RESTORE,
    BadRecipients,
    DataKey,
    Keyring,
    NoAccess,
    create_identity,
    follows,
    identity_path,
    load_identity,
    load_trust,
    mark_removed,
    public_key,
    read,
    replaced,
    save_trust,
    started_over,
    trust_path,
)
from memsync.util.errors import (
    NotFound,
    PreconditionFailed,
    RefusedFile,
    StoreError,
    Unreadable,
    UserError,
)

HIDDEN = "_memsync/x/"  # where every encrypted object lives
# written by `keys init` before its copies and deleted after its switch: a remote holding
# encrypted objects but no recipients object is plain only while this is there
PENDING = "_memsync/crypt.pending"
MARK = "plain:"  # the ETag prefix of an object outside HIDDEN on an encrypted remote
# a read slower than this is a slow network's (memsync/sync/transfers.py's SLOW_ROUND_TRIP)
_SLOW_READ = 0.04
_HEADROOM = 4096  # age's header and the MAC line, over the plaintext's size


def is_stray(key: str) -> bool:
    """A plaintext object, of the kind an encrypted remote should not hold."""
    return not key.startswith(HIDDEN) and key not in (CRYPT_KEY, PENDING)


def orphaned(url: str) -> BadRecipients:
    """A remote holding encrypted objects and no recipients object (deleted, or a `keys init`
    interrupted past its copies): no device treats it as plain."""
    return BadRecipients(
        f"the remote {url} holds encrypted objects but no recipients list ({CRYPT_KEY}); "
        f"nothing was synced: {RESTORE}"
    )


def reveal(
    raw: dict[str, Entry], key: DataKey, old: list[DataKey], url: str
) -> tuple[dict[str, Entry], dict[str, Entry]]:
    """A listing of the wrapped store read with the data key: (the objects under `key`, by
    real name; the strays, by name: plaintext objects, and objects under an earlier key, each
    entry keeping its object's own key). `missed` where every encrypted object is under a key
    this device never had."""
    out: dict[str, Entry] = {}
    strays: dict[str, Entry] = {}
    unknown = 0
    for name, entry in raw.items():
        if name.startswith(HIDDEN):
            real = key.reveal(name[len(HIDDEN) :])
            if real is not None:
                out[real] = Entry(real, entry.etag, entry.size, entry.modified)
                continue
            for earlier in old:  # one a device wrote under an earlier data key
                real = earlier.reveal(name[len(HIDDEN) :])
                if real is not None:
                    strays[real] = entry
                    break
            else:
                unknown += 1
        elif name not in (CRYPT_KEY, PENDING):
            strays[name] = entry
    if unknown and not out:
        raise missed(url)
    return out, strays


def missed(url: str) -> BadRecipients:
    """A remote whose every encrypted object is sealed under a data key this device never had:
    a rotation it did not see, whose list is gone or was put back older. (A switch stopped
    half-way leaves such objects beside the current key's, never instead of them.)"""
    return BadRecipients(
        f"the objects on the encrypted remote {url} are sealed under a data key this device "
        "never had (a rotation it did not see, whose recipients list was replaced by an "
        f"earlier copy); nothing was synced: {RESTORE}"
    )


def removed(url: str, public: str) -> NoAccess:
    return NoAccess(
        f"this device's key {public} was removed from the recipients of the encrypted remote "
        f"{url} by a device with access; it can read nothing written since: if that was a "
        f"mistake, run `memsync keys add {public}` on a device that has access"
    )


_OWN = frozenset(
    [
        "inner",
        "remote",
        "url",
        "stats",
        "_lock",
        "_key",
        "_ring",
        "_etag",
        "_known",
        "_current",
        "_strays",
        "_old",
        "_trusted",
        "_plain_seen",
        "_made",
        "armored",
        "_quickest",
        "_has_identity",
    ]
)


class CryptStore(Store):
    """Encrypts names, contents and edit times on the way out, checks and decrypts them on the
    way in. Plain remotes pass through unchanged."""

    def __init__(self, inner: Store, remote: str, prefix: str) -> None:
        self.inner = inner
        self.remote = (remote, prefix)
        self.url = inner.url
        self.stats = inner.stats
        self._lock = threading.RLock()
        self._key: DataKey | None = None  # None: plain (or not known yet)
        self._ring: Keyring | None = None  # the whole recipients object, once read
        self._etag: str | None = None  # the recipients object's, as last read
        self._known = False  # whether plain/encrypted is settled
        self._current = False  # whether the key was checked against the remote in this run
        self._strays: dict[str, Entry] = {}  # name -> the stray object, as last listed
        self._old: list[DataKey] = []  # the earlier data keys
        self._plain_seen = False  # a listing showed the remote plain (no encrypted objects)
        # name -> (object, ETag, key it was sealed under: None for plaintext), as created by
        # this process since it last checked the recipients object after a create
        self._made: dict[str, tuple[str, str, DataKey | None]] = {}
        # a memory store holds UTF-8 text only: its objects are age's ASCII armor (which the
        # age CLI reads as well); every other store holds bytes, and gets age's binary format
        self.armored = inner.url.startswith("memstore:")
        self._quickest: float | None = None  # the quickest read of the wrapped store timed
        self._has_identity: bool | None = None  # whether this device has a key (None: not asked)
        trust = load_trust(remote, prefix)
        self._trusted = trust is not None
        if trust is not None and not trust.removed:  # a removed device reads the list anew
            self._key = DataKey(trust.secret, trust.generation)
            self._old = [DataKey(secret, g) for g, secret in trust.history]
            self._etag = trust.etag
            self._known = True

    # --- what the engine sets and reads, passed to the wrapped store ----------------------

    def __setattr__(self, name: str, value: Any) -> None:
        """The wrapper's own attributes, properties and methods are its own; any other
        setting (a store's tuning, such as Azure's page size) is the wrapped store's."""
        if name in _OWN or hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def __getattr__(self, name: str) -> Any:  # anything else a caller asks of the store
        try:
            inner = self.__dict__["inner"]
        except KeyError:
            raise AttributeError(name) from None
        return getattr(inner, name)

    @property
    def max_bytes(self) -> int | None:
        return self.inner.max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int | None) -> None:
        self.inner.max_bytes = None if value is None else value + _HEADROOM + value // 4000

    @property
    def deadline(self) -> float | None:
        return self.inner.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.inner.deadline = value

    @property
    def project_known(self) -> bool:
        return self.inner.project_known

    @project_known.setter
    def project_known(self, value: bool) -> None:
        self.inner.project_known = value

    @property
    def content_etags(self) -> bool:
        # age encrypts with a fresh key each time: the same bytes written again get a new ETag
        return self.inner.content_etags and self._key is None

    @content_etags.setter
    def content_etags(self, value: bool) -> None:
        self.inner.content_etags = value

    @property
    def round_trip(self) -> float | None:
        """The wrapped store's; on an encrypted remote where it has none yet, the quickest of
        the wrapped store's own reads this wrapper timed. The engine widens its transfers when
        the first read (the manifest, sent ahead) was slow, and on a new device that read also
        reads and checks the recipients object and loads the age code: work, not network."""
        inner = self.inner.round_trip
        if inner is not None or self._key is None:
            return inner
        return self._quickest

    def warm(self, count: int) -> None:
        """Connections opened ahead for transfers the engine expects to be slow: on an
        encrypted remote only if a read of the wrapped store itself was slow (see
        round_trip)."""
        quick = self._quickest
        if self._key is not None and quick is not None and quick < _SLOW_READ:
            return
        self.inner.warm(count)

    def _fetch(self, key: str) -> tuple[bytes, str, float | None]:
        """The wrapped store's fetch, timed (a missing object's answer is a round trip too)."""
        started = time.monotonic()
        try:
            got = self.inner.fetch(key)
        except NotFound:
            self._timed(started)
            raise
        self._timed(started)
        return got

    def _timed(self, started: float) -> None:
        took = time.monotonic() - started
        quickest = self._quickest  # a sample lost to a race costs nothing
        if quickest is None or took < quickest:
            self._quickest = took

    def can_create(self) -> bool:
        return self.inner.can_create()

    def projects(self) -> tuple[str, ...] | None:
        return self.inner.projects()

    def create_advice(self) -> str:
        return self.inner.create_advice()

    def refuses(self, key: str, data: bytes) -> str | None:
        """The wrapped store's limits apply to the plaintext name and content only on a plain
        remote; encrypted, the hidden name and the ciphertext are checked on the way out."""
        return self.inner.refuses(key, data) if self._key is None else None

    def exists(self) -> bool:
        return self.inner.exists()

    def ensure(self) -> None:
        self.inner.ensure()

    def close(self) -> None:
        self.reseal()
        self.inner.close()

    @property
    def encrypted(self) -> bool:
        return self._key is not None

    @property
    def key(self) -> DataKey | None:
        return self._key

    # --- settling plain or encrypted ------------------------------------------------------

    def _settle(
        self,
        etag: str | None,
        data: bytes | None = None,
        hidden: bool = False,
    ) -> bool:
        """Take in the recipients object's ETag (None: absent; `data` if it was read too;
        `hidden`: a listing showed encrypted objects and no `keys init` under way); True if
        the key changed."""
        with self._lock:
            self._known = self._current = True
            if etag is None:
                url = self.remote[0]
                if self._trusted:  # a purge too: anyone can erase, and write its mark
                    raise BadRecipients(
                        f"the remote {url} was encrypted and its recipients list "
                        f"({CRYPT_KEY}) is gone; nothing was synced: "
                        + started_over(*self.remote)
                    )
                if hidden:
                    raise orphaned(url)
                changed = self._key is not None
                self._key = self._ring = None
                return changed
            if etag == self._etag and self._key is not None:
                return False
            before = self._key
            self.load(None if data is None else (data, etag))
            return before is None or self._key is None or before.secret != self._key.secret

    def load(self, read_now: tuple[bytes, str] | None = None) -> Keyring:
        """Read (unless `read_now` has it) and check the recipients object, trust it, and use
        its data key."""
        with self._lock:
            data, etag = self.inner.get(CRYPT_KEY) if read_now is None else read_now
            url, prefix = self.remote
            identity = load_identity()
            if identity is None:  # a device without access is told its own key to pass on
                identity, _ = create_identity()
            trusted = load_trust(url, prefix)
            # trust on first use; after that, only a list that follows from the trusted one,
            # which a device no longer among its recipients can tell too
            unknown = trusted is not None and not follows(data, trusted)
            try:
                ring = read(data, identity, url)
            except NoAccess:
                if trusted is None:
                    raise
                me = public_key(identity)
                if unknown:
                    raise removed(url, me) if trusted.removed else replaced(url, prefix) from None
                if any(d.key == me for d in trusted.devices):
                    mark_removed(url, prefix, data)
                    raise removed(url, me) from None
                raise
            if trusted is not None and unknown:  # (removed: a list from before, put back)
                me = public_key(identity)
                raise removed(url, me) if trusted.removed else replaced(url, prefix)
            save_trust(url, prefix, ring, etag)
            self._key, self._ring, self._etag = ring.key, ring, etag
            self._old = list(ring.history)
            self._trusted = self._known = self._current = True
            return ring

    def ring(self) -> Keyring:
        with self._lock:
            return self._ring if self._ring is not None else self.load()

    def use(self, ring: Keyring, etag: str) -> None:
        """After this device wrote the recipients object itself (keys init, add, remove)."""
        with self._lock:
            save_trust(*self.remote, ring, etag)
            self._key, self._ring, self._etag = ring.key, ring, etag
            self._old = list(ring.history)
            self._trusted = self._known = self._current = True

    def _probe(self) -> bool:
        """Read the recipients object's ETag again; True if the data key changed."""
        try:
            data, etag, _ = self._fetch(CRYPT_KEY)
        except NotFound:
            return self._settle(None)
        return self._settle(etag, data)

    def _check_plain(self) -> None:
        """Before a new name goes up in plaintext without a listing first (a hook's `push
        FILE`): the remote must hold no encrypted objects either (see `orphaned`)."""
        try:
            raw = self.inner.list()
        except NotFound:
            return  # no remote yet: the write says so
        crypt = raw.get(CRYPT_KEY)
        hidden = PENDING not in raw and any(k.startswith(HIDDEN) for k in raw)
        self._settle(None if crypt is None else crypt.etag, hidden=crypt is None and hidden)
        self._plain_seen = self._key is None

    def _ensure_known(self) -> None:
        if not self._known:
            self._probe()

    # --- the protocol ---------------------------------------------------------------------

    def list(self) -> dict[str, Entry]:
        raw = self.inner.list()
        crypt = raw.get(CRYPT_KEY)
        hidden = crypt is None and PENDING not in raw and any(k.startswith(HIDDEN) for k in raw)
        self._settle(None if crypt is None else crypt.etag, hidden=hidden)
        key = self._key
        if key is None:
            self._plain_seen = True
            return raw
        out, strays = reveal(raw, key, self._old, self.url)
        for name, entry in strays.items():
            if name not in out:
                out[name] = Entry(name, MARK + entry.etag, entry.size, entry.modified)
        with self._lock:
            self._strays = strays
        return out

    def _stray_key(self, name: str) -> str:
        """The object a marked ETag stands for: a plaintext one, or an earlier key's."""
        entry = self._strays.get(name)
        return name if entry is None else entry.key

    def seal(self, key: DataKey, name: str, data: bytes, edited: float | None) -> bytes:
        """`data` sealed under `key` in the format the wrapped store holds."""
        return key.seal(name, data, edited, armored=self.armored)

    def _hidden(self, key: DataKey, name: str) -> str:
        return HIDDEN + key.hide(check_key(name))

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        """A missing name reads the recipients object only where it may have moved unseen:
        before this run knew plain from encrypted, or under a key only remembered (a rotation
        since renamed everything). Otherwise missing is missing, and costs no request more
        (a write that loses its condition is what follows a switch mid-run)."""
        if not self._known:  # a plain remote answers at once; a missing name settles it
            try:
                return self._fetch(key)
            except NotFound:
                self._probe()
        for attempt in (0, 1):
            dkey = self._key
            if dkey is None:
                return self.inner.fetch(key)
            try:
                blob, etag, _ = self._fetch(self._hidden(dkey, key))
            except NotFound:
                if attempt == 0 and not self._current and self._probe():
                    continue
                stray = self._strays.get(key)
                if stray is not None:
                    old = stray.key.startswith(HIDDEN)
                    raise RefusedFile(key, _OLD_KEY if old else _STRAY) from None
                raise
            try:
                data, edited = dkey.open(key, blob)
            except RefusedFile as exc:
                raise Unreadable(key, exc.reason, etag) from None
            return data, etag, edited
        raise NotFound(f"{key} is not on the remote")

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        """A new name under a key only remembered (a hook's push lists nothing) is checked
        against the remote first: after a rotation it would land under the old key, where no
        device with the new one sees it. A write over an existing object needs no check: one
        under an old key fails its condition and follows the switch."""
        self._ensure_known()
        if self._key is not None and not self._current:
            self._probe()
        elif self._key is None and not self._plain_seen:
            self._check_plain()
        dkey = self._key
        if dkey is None:
            etag = self.inner.create(key, data, edited)
            if self._keyed():  # a device with no key could not seal it: nothing to check
                self._track(key, key, etag, None)
            return etag
        hidden = self._hidden(dkey, key)
        etag = self.inner.create(hidden, self.seal(dkey, key, data, edited))
        self._track(key, hidden, etag, dkey)
        return etag

    # --- a file created across a switch ---------------------------------------------------

    def _keyed(self) -> bool:
        """Whether this device has an identity (asked once a run)."""
        if self._has_identity is None:
            self._has_identity = identity_path().exists()
        return self._has_identity

    def _track(self, name: str, obj: str, etag: str, key: DataKey | None) -> None:
        with self._lock:
            if not self._made:  # a command that does not close its store: at the exit
                atexit.register(self._reseal_at_exit)
            self._made[name] = (obj, etag, key)

    def _reseal_at_exit(self) -> None:
        """reseal for a command that never closed its store (a hook): whatever goes wrong
        this late is left for `keys init`, never a traceback after the command's own output."""
        with contextlib.suppress(Exception):
            self.reseal()

    def reseal(self) -> builtins.list[str]:
        """The rule for a file created across a switch: the device that created it seals it
        under the data key current when its command ends. So once a command has created
        files, it reads the recipients object again, and each file it created under a key
        switched away from meanwhile (or in plaintext, before it saw encryption turned on) is
        sealed under the current key (create-only) and its old object deleted (If-Match). A
        file changed since by someone else, or a device that has no access, leaves it for
        `memsync keys init` (crypt_migrate.fold_strays). Returns the names left so."""
        with self._lock:
            made, self._made = self._made, {}
        if not made:
            return []
        atexit.unregister(self._reseal_at_exit)
        try:
            self._probe()
        except (StoreError, UserError):  # unreachable, or this device has no access
            return sorted(made)
        current = self._key
        left = []
        for name, (obj, etag, old) in made.items():
            if current is None or (old is not None and old.secret == current.secret):
                continue
            try:
                blob, now, edited = self.inner.fetch(obj)
                if now != etag:
                    left.append(name)
                    continue
                data, inside = (blob, edited) if old is None else old.open(name, blob)
                self.inner.create(
                    self._hidden(current, name), self.seal(current, name, data, inside)
                )
                self.inner.delete(obj, etag)
            except (StoreError, UserError):
                left.append(name)
        return sorted(left)

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        # not known yet (a hook's `push FILE`, no listing first): written as plain, it lands
        # only on a plain object with that ETag, so on a remote that has not switched, or
        # before a switch's settle copies it (crypt_migrate); else it fails its condition,
        # and the wrapper follows the switch below: no read of the recipients object first
        dkey = self._key
        try:
            if dkey is None:
                return self.inner.replace(key, data, etag, edited)
            if etag.startswith(MARK):  # over a plaintext object: the sealed copy replaces it
                new = self.inner.create(self._hidden(dkey, key), self.seal(dkey, key, data, edited))
                with contextlib.suppress(NotFound):
                    self.inner.delete(self._stray_key(key), etag[len(MARK) :])
                return new
            return self.inner.replace(
                self._hidden(dkey, key), self.seal(dkey, key, data, edited), etag
            )
        except (PreconditionFailed, NotFound):
            self._probe()
            raise PreconditionFailed(f"{key} changed on the remote") from None

    def delete(self, key: str, etag: str) -> None:
        self._ensure_known()
        dkey = self._key
        try:
            if dkey is None:
                return self.inner.delete(key, etag)
            if etag.startswith(MARK):
                return self.inner.delete(self._stray_key(key), etag[len(MARK) :])
            return self.inner.delete(self._hidden(dkey, key), etag)
        except (PreconditionFailed, NotFound):
            if self._probe():
                raise PreconditionFailed(f"{key} changed on the remote") from None
            raise

    def versions(self, key: str) -> builtins.list[RemoteVersion] | None:
        """The wrapped store's versions of the object (of the hidden one when encrypted:
        their sizes and hashes are the ciphertext's)."""
        self._ensure_known()
        dkey = self._key
        return self.inner.versions(key if dkey is None else self._hidden(dkey, key))

    def erase_history(self, key: str, holds: Callable[[bytes], bool] | None = None) -> int:
        """As the wrapped store's; `holds` is asked about each version's plaintext, and a
        version that does not decrypt is erased (it cannot be shown to hold nothing)."""
        self._ensure_known()
        dkey = self._key
        if dkey is None:
            return self.inner.erase_history(key, holds)
        if holds is None:
            return self.inner.erase_history(self._hidden(dkey, key), None)

        def sealed_holds(blob: bytes) -> bool:
            try:
                data, _ = dkey.open(key, blob)
            except RefusedFile:
                return True
            return holds(data)

        return self.inner.erase_history(self._hidden(dkey, key), sealed_holds)

    # --- what status and doctor say -------------------------------------------------------

    def encryption(self) -> str:
        """Whether the remote is encrypted and to how many devices, as its last listing
        settled it (no request of its own), in a few words."""
        if self._key is None:
            return "off (the remote holds plaintext; `memsync keys init` turns it on)"
        ring = self._ring
        if ring is None:
            trust = load_trust(*self.remote)
            count = len(trust.devices) if trust is not None else 0
        else:
            count = len(ring.devices)
        devices = f", {count} recipient(s)" if count else ""
        return f"on (age, data key generation {self._key.generation}{devices})"

    def stray_names(self) -> builtins.list[str]:
        """The names the last listing showed outside the data key (in plaintext, or under an
        earlier key): untrusted, never downloaded, folded in by `keys init --adopt NAME`."""
        with self._lock:
            return sorted(self._strays) if self._key is not None else []

    # --- purge -----------------------------------------------------------------------------

    def sweep(self, keep: Collection[str]) -> int:
        """Delete every object under the prefix the listing does not show (sealed under an
        earlier data key, or under one an interrupted switch never published, and a pending
        mark), but the recipients object and the current objects of the names in `keep`; how
        many."""
        dkey = self._key
        if dkey is None:
            return 0  # a plain remote's listing shows every object
        spared = {CRYPT_KEY, *(self._hidden(dkey, name) for name in keep)}
        gone = 0
        for key, entry in self.inner.list().items():
            unnamed = key.startswith(HIDDEN) and dkey.reveal(key[len(HIDDEN) :]) is None
            if key == PENDING or (unnamed and key not in spared):
                with contextlib.suppress(NotFound, PreconditionFailed):
                    self.inner.delete(key, entry.etag)
                    gone += 1
        return gone

    def erase_locked(self) -> int:
        """Erase an encrypted remote this device cannot read (`purge --all` needs no key):
        every object under the prefix, the recipients object last, and what this device
        trusted for it. The remote is plain afterwards; how many objects were deleted."""
        gone = 0
        listing = self.inner.list()
        for key in sorted(listing, key=lambda k: k == CRYPT_KEY):
            with contextlib.suppress(NotFound, PreconditionFailed):
                self.inner.delete(key, listing[key].etag)
                gone += 1
        with self._lock:
            trust_path(*self.remote).unlink(missing_ok=True)
            self._key = self._ring = self._etag = None
            self._old = []
            self._trusted = self._known = self._current = self._plain_seen = False
        return gone

    def erase_deleted(self, holds: Callable[[str, bytes], bool]) -> int:
        """As the wrapped store's on a plain remote. Encrypted, the names are hidden, so
        `holds` cannot be asked: every version of a deleted object is erased."""
        self._ensure_known()
        if self._key is None:
            return self.inner.erase_deleted(holds)
        return self.inner.erase_deleted(lambda key, blob: True)


_STRAY = (
    "it is in plaintext on an encrypted remote (written by a device before it saw encryption "
    "turned on, or by someone without a key), so it is not trusted; check it, then run "
    "`memsync keys init --adopt` with its name on a device with access to fold it in"
)
_OLD_KEY = (
    "it is sealed under an earlier data key (written by a device before it saw the key "
    "rotated, or by a device removed since), so it is not trusted; check it, then run "
    "`memsync keys init --adopt` with its name on a device with access to fold it in"
)
