"""Turning encryption on, letting a device in, revoking one: the writes to the remote.

A switch (plaintext to the first data key, or one data key to the next) is copy, switch,
settle, so a device syncing meanwhile loses nothing:

1. copy: every object is written again, sealed under the new key, beside the old one (under
   `_memsync/x/`, which a device that has not seen the switch ignores);
2. switch: one conditional write of the recipients object, the moment every device's next
   listing (or failed write) follows;
3. settle: each old object is deleted only if its ETag is still the one copied; one a late
   device changed after the copy is copied again first, one it created is copied, one it
   deleted takes its copy with it. Until a pass finds nothing to do.

A device whose run began before the switch writes to the old objects: its write either lands
before settle deletes them (and settle copies it) or fails its condition (and the wrapper
follows the switch, so the engine merges onto the copy). Adding a device rewrites the
recipients object alone (the data key is wrapped to one more identity): no object changes.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from memsync.stores.base import Entry
from memsync.stores.crypt import HIDDEN, PENDING, CryptStore, is_stray
from memsync.stores.crypt_age import bech32_data, low_order
from memsync.stores.crypt_keys import (
    CRYPT_KEY,
    DataKey,
    Device,
    Keyring,
    build,
    load_identity,
    public_key,
)
from memsync.util.errors import (
    AlreadyExists,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    UserError,
)

_ROUNDS = 20


@dataclass
class Moved:
    """What a switch did."""

    copied: int = 0
    deleted: int = 0
    left: list[str] = field(default_factory=list)  # changed on both sides: kept, not merged
    damaged: list[str] = field(default_factory=list)  # old objects that do not verify: kept
    swept: int = 0  # objects under a key no recipients object names (an abandoned switch)
    # name -> (old ETag, new ETag) of each object sealed anew from what it was: the device
    # that ran the switch knows the content is unchanged (its records follow the new ETags)
    renamed: dict[str, tuple[str, str]] = field(default_factory=dict)

    def add(self, other: Moved) -> None:
        self.copied += other.copied
        self.deleted += other.deleted
        self.swept += other.swept
        self.left += [n for n in other.left if n not in self.left]
        self.damaged += [n for n in other.damaged if n not in self.damaged]
        self.renamed.update(other.renamed)


def check_public(key: str) -> str:
    """`key` as age writes it (lower case: bech32 reads `AGE1…` as the same key, so a key is
    one recipient however it was typed) if it is an age X25519 public key; a UserError naming
    it otherwise."""
    from memsync.stores.crypt_keys import _age

    advice = "give the `age1…` line `memsync keys init` printed on that device"
    try:
        public = str(_age().x25519.Recipient.from_str(key.strip()))
    except Exception:
        raise UserError(f"{key!r} is not an age public key; {advice}") from None
    if low_order(bech32_data(public, "age") or b""):
        raise UserError(f"{public} is a point no device's key can have (age refuses it); {advice}")
    return public


def _sources(store: CryptStore, old: DataKey | None) -> dict[str, tuple[str, Entry]]:
    """The objects of the old kind still on the remote: name -> (remote key, entry)."""
    found = {}
    for key, entry in store.inner.list().items():
        if old is None:
            if is_stray(key):
                found[key] = (key, entry)
        elif key.startswith(HIDDEN):
            name = old.reveal(key[len(HIDDEN) :])
            if name is not None:
                found[name] = (key, entry)
    return found


def _twins(store: CryptStore, new: DataKey) -> dict[str, Entry]:
    found = {}
    for key, entry in store.inner.list().items():
        if key.startswith(HIDDEN):
            name = new.reveal(key[len(HIDDEN) :])
            if name is not None:
                found[name] = entry
    return found


def _read(
    store: CryptStore, key: str, name: str, old: DataKey | None
) -> tuple[bytes, str, float | None]:
    blob, etag, edited = store.inner.fetch(key)
    if old is None:
        return blob, etag, edited
    data, inside = old.open(name, blob)
    return data, etag, inside


class _Switch:
    def __init__(
        self,
        store: CryptStore,
        old: DataKey | None,
        new: DataKey,
        only: set[str] | None = None,
    ) -> None:
        self.store, self.old, self.new = store, old, new
        self.only = only  # the names to move (None: all)
        self.copied: dict[str, tuple[str, str]] = {}  # name -> (old ETag, copy's ETag)
        self.moved = Moved()
        self.dropped: set[str] = set()  # names whose old object this switch deleted

    def twin_key(self, name: str) -> str:
        return HIDDEN + self.new.hide(name)

    def copy(self, name: str, key: str, twin: str | None) -> bool:
        """Seal the old object `key` under the new key (over the copy with ETag `twin`)."""
        try:
            data, etag, edited = _read(self.store, key, name, self.old)
        except NotFound:
            return False
        except RefusedFile:  # an old object that does not verify: not copied, named once
            if name not in self.moved.damaged:
                self.moved.damaged.append(name)
            return False
        sealed = self.store.seal(self.new, name, data, edited)
        try:
            if twin is None:
                made = self.store.inner.create(self.twin_key(name), sealed)
            else:
                made = self.store.inner.replace(self.twin_key(name), sealed, twin)
        except PreconditionFailed:  # a device with the new key wrote it meanwhile
            return False
        self.copied[name] = (etag, made)
        self.moved.copied += 1
        self.moved.renamed[name] = (etag, made)
        return True

    def copy_all(self) -> None:
        for name, (key, _) in sorted(_sources(self.store, self.old).items()):
            self.copy(name, key, None)

    def undo(self) -> None:
        """The switch was lost to another device's: take this run's copies back."""
        for name, (_, made) in self.copied.items():
            try:
                self.store.inner.delete(self.twin_key(name), made)
            except (NotFound, PreconditionFailed):
                continue
        self.moved.renamed.clear()
        # and any copy a stop cut off before it was recorded: the new key is this run's own,
        # so whatever it names is one of its copies
        for key, entry in self.store.inner.list().items():
            if key.startswith(HIDDEN) and self.new.reveal(key[len(HIDDEN) :]) is not None:
                with contextlib.suppress(NotFound, PreconditionFailed):
                    self.store.inner.delete(key, entry.etag)

    def settle(self) -> None:
        for _ in range(_ROUNDS):
            if not self._pass():
                break
        # a remote that keeps its own versions (a memory store) still holds the old objects'
        # earlier contents, plaintext before a `keys init`: erased, as a forget erases them
        self.store.inner.erase_deleted(lambda key, data: True)

    def _pass(self) -> bool:
        acted = False
        sources = _sources(self.store, self.old)
        if self.only is not None:
            sources = {n: v for n, v in sources.items() if n in self.only}
        twins = _twins(self.store, self.new)
        for name, (key, entry) in sorted(sources.items()):
            done = self.copied.get(name)
            twin = twins.get(name)
            as_copied = done is not None and done[0] == entry.etag
            if as_copied and (twin is None or done is not None and twin.etag == done[1]):
                acted |= self._drop(key, entry.etag)  # as copied (its copy maybe deleted since)
            elif twin is None:
                acted |= self.copy(name, key, None) and self._drop(key, self.copied[name][0])
            elif done is not None and twin.etag == done[1]:  # changed after the copy
                acted |= self.copy(name, key, twin.etag) and self._drop(key, self.copied[name][0])
            else:
                acted |= self._same_then_drop(name, key, twin)
        for name, (_, made) in list(self.copied.items()):
            # an old object a late device deleted after the copy: the copy goes too
            twin = twins.get(name)
            gone = name not in sources and name not in self.dropped
            if (
                gone
                and twin is not None
                and twin.etag == made
                and self._delete(self.twin_key(name), made)
            ):
                self.dropped.add(name)
                acted = True
        return acted

    def _drop(self, key: str, etag: str) -> bool:
        """Delete the old object `key` if it is still as copied."""
        if not self._delete(key, etag):
            return False
        self.moved.deleted += 1
        name = key
        if self.old is not None and key.startswith(HIDDEN):
            name = self.old.reveal(key[len(HIDDEN) :]) or key
        self.dropped.add(name)
        return True

    def _delete(self, key: str, etag: str) -> bool:
        try:
            self.store.inner.delete(key, etag)
        except (NotFound, PreconditionFailed):
            return False
        return True

    def _same_then_drop(self, name: str, key: str, twin: Entry) -> bool:
        """Both the old object and its copy changed: drop the old one only if they hold the
        same; otherwise it stays (named in the report) for a person to look at."""
        try:
            data, etag, _ = _read(self.store, key, name, self.old)
            blob, _, _ = self.store.inner.fetch(self.twin_key(name))
            ours, _ = self.new.open(name, blob)
        except RefusedFile:
            if name not in self.moved.damaged:
                self.moved.damaged.append(name)
            return False
        except NotFound:
            return False
        if ours == data:
            return self._drop(key, etag)
        if name not in self.moved.left:
            self.moved.left.append(name)
        return False


def turn_on(store: CryptStore, name: str) -> tuple[Keyring, Moved]:
    """Encrypt a plaintext remote to this device alone (the caller made its identity). The
    pending mark goes up before the first copy, so the copies do not make the remote look
    orphaned meanwhile; a run stopped (Ctrl-C) takes its copies back, and what a run killed
    outright left is swept by the next one once its switch is made."""
    identity = load_identity()
    if identity is None:
        raise UserError("this device has no key yet; run `memsync keys init`")
    ring = Keyring(DataKey.generate(1), [Device(public_key(identity), name, time.time())])
    switch = _Switch(store, None, ring.key)
    mark = None
    with contextlib.suppress(AlreadyExists):  # an earlier run's, or one under way
        mark = store.inner.create(PENDING, b"memsync keys init under way\n")
    try:
        switch.copy_all()
        etag = store.inner.create(CRYPT_KEY, build(ring))
    except AlreadyExists:
        switch.undo()
        raise UserError(
            "another device turned encryption on for this remote at the same moment; run "
            "`memsync keys init` again to see where it stands"
        ) from None
    except BaseException:
        switch.undo()
        if mark is not None:  # its own mark: the remote is as it was
            with contextlib.suppress(NotFound, PreconditionFailed):
                store.inner.delete(PENDING, mark)
        raise
    store.use(ring, etag)
    switch.settle()
    switch.moved.swept = sweep(store, ring)
    _drop_pending(store)
    return ring, switch.moved


def _drop_pending(store: CryptStore) -> None:
    for key, entry in store.inner.list().items():
        if key == PENDING:
            with contextlib.suppress(NotFound, PreconditionFailed):
                store.inner.delete(key, entry.etag)


def sweep(store: CryptStore, ring: Keyring) -> int:
    """Delete the encrypted objects no key of `ring` names: copies a switch made under a key
    it never published (stopped between copy and switch, or lost its race and was stopped
    before it took them back). Run only after this device's own switch, so no switch under way
    elsewhere can still win (its condition is stale)."""
    keys = ring.keys()
    gone = 0
    for key, entry in store.inner.list().items():
        if not key.startswith(HIDDEN):
            continue
        if all(k.reveal(key[len(HIDDEN) :]) is None for k in keys):
            with contextlib.suppress(NotFound, PreconditionFailed):
                store.inner.delete(key, entry.etag)
                gone += 1
    return gone


def fold_strays(store: CryptStore, names: list[str]) -> Moved:
    """Seal under the data key the named objects left on an encrypted remote in plaintext or
    under an earlier data key: only those a person checked and named, since nothing
    authenticates a plaintext one (anyone who can write the bucket could have put it there)."""
    ring = store.ring()
    found = set(store.stray_names())
    missing = [n for n in names if n not in found]
    if missing:
        raise UserError(
            f"{', '.join(missing)}: not among the objects left outside the data key on the "
            "remote (`memsync keys init` lists them); nothing was changed"
        )
    moved = Moved()
    for old in [None, *ring.history]:
        switch = _Switch(store, old, ring.key, only=set(names))
        switch.settle()
        moved.add(switch.moved)
    return moved


def _rewrite(store: CryptStore, ring: Keyring) -> str:
    """Write the recipients object over the one this device read last."""
    etag = store._etag
    if etag is None:
        raise UserError("this remote is not encrypted; run `memsync keys init` first")
    try:
        made = store.inner.replace(CRYPT_KEY, build(ring), etag)
    except PreconditionFailed:
        raise UserError(
            "another device changed this remote's recipients at the same moment; run the "
            "command again"
        ) from None
    store.use(ring, made)
    return made


def add_device(store: CryptStore, key: str, name: str) -> tuple[Keyring, bool]:
    """Wrap the data key to one more device: (the ring, whether it was added now)."""
    key = check_public(key)
    if not name.isprintable():  # `keys list` shows it on one line, tab-separated
        raise UserError(f"--name {name!r} holds a tab, a line break or a control character")
    ring = store.ring()
    if any(d.key == key for d in ring.devices):
        return ring, False
    devices = [*ring.devices, Device(key, name, time.time())]
    grown = ring.successor(ring.key, devices, ring.history)
    _rewrite(store, grown)
    return grown, True


def remove_device(store: CryptStore, key: str) -> tuple[Keyring, Moved]:
    """Revoke a device: a new data key, wrapped to the others, and every object sealed again
    under it (see the module's docstring for how a device syncing meanwhile is kept safe). A
    key not among the recipients is revoked the same way: the data key may have reached it
    otherwise (a list since replaced), and only a new one cuts it off."""
    key = check_public(key)
    ring = store.ring()
    rest = [d for d in ring.devices if d.key != key]
    if not rest:
        raise UserError(
            "that is the only device with access; removing it would leave the remote "
            "unreadable to everyone"
        )
    new = DataKey.generate(ring.key.generation + 1)
    switch = _Switch(store, ring.key, new)
    grown = ring.successor(new, rest, [ring.key, *ring.history])
    try:
        switch.copy_all()
        _rewrite(store, grown)
    except BaseException:  # lost the race, or stopped: no copy stays under an unpublished key
        switch.undo()
        raise
    switch.settle()
    switch.moved.swept = sweep(store, grown)
    return grown, switch.moved
