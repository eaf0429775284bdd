"""`memsync keys`: this device's age identity and who may read an encrypted remote.

The commands act on the project's remote through the encrypting store (stores/crypt.py); the
writes themselves are in stores/crypt_migrate.py. See docs/encryption.md for the design.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memsync.context.config import strip_query
from memsync.stores.crypt import CryptStore
from memsync.stores.crypt_keys import (
    NoAccess,
    create_identity,
    identity_path,
    load_identity,
    load_trust,
    public_key,
    trust_path,
)
from memsync.stores.crypt_migrate import (
    Moved,
    add_device,
    fold_strays,
    remove_device,
    turn_on,
)
from memsync.util.errors import MemsyncError, NotFound, UserError

if TYPE_CHECKING:
    from memsync.sync.engine import Engine


@dataclass
class KeysOutcome:
    """What a keys command did, for the CLI to say."""

    public: str  # this device's age1… key
    identity: str  # where its identity file is
    made_identity: bool = False
    access: bool = True  # whether this device can read the remote
    turned_on: bool = False
    added: bool = False
    made_remote: str = ""  # the remote it created (a bucket or folder that did not exist)
    listed: bool = True  # `remove`: the key was among the recipients
    copied: int = 0
    deleted: int = 0
    swept: int = 0  # objects under a key never published, deleted
    left: list[str] = field(default_factory=list)  # objects a switch kept for a person to check
    damaged: list[str] = field(default_factory=list)  # objects that do not verify, kept
    strays: list[str] = field(default_factory=list)  # not under the data key, not folded in
    note: str = ""  # why this device cannot read the remote
    failure: MemsyncError | None = None  # what stopped keys init, said after the key

    def took(self, moved: Moved) -> None:
        self.copied, self.deleted, self.swept = moved.copied, moved.deleted, moved.swept
        self.left, self.damaged = moved.left, moved.damaged


@dataclass
class Recipient:
    key: str
    name: str
    added: float
    this_device: bool


def _store(engine: Engine) -> CryptStore:
    store = engine.store
    if not isinstance(store, CryptStore):  # MEMSYNC_SYNC=off
        raise UserError(
            "syncing is off (MEMSYNC_SYNC=off), so the remote's keys cannot be changed; "
            "turn it on and run the command again"
        )
    return store


def _listed(engine: Engine, store: CryptStore) -> None:
    """List the remote (which settles whether it is encrypted) and check it is this
    project's, as every command reaching the remote outside a sync does."""
    listing = store.list()
    engine.confirm_project(listing)


def init(engine: Engine, adopt: list[str] | None = None) -> KeysOutcome:
    """Make this device's identity if it has none. On a plain remote (made if missing, as
    `push` makes it), turn encryption on. On an encrypted one this device can read, change
    nothing but what `adopt` names (objects left outside the data key, folded in once a
    person checked them), and list the others. A lost or damaged recipients list is refused
    as by every command: no device writes one back (docs/encryption.md). Whatever happens on
    the remote, the outcome carries this device's key (and what went wrong, for the command
    to say after it)."""
    identity, made = create_identity()
    result = KeysOutcome(public_key(identity), str(identity_path()), made_identity=made)
    try:
        _init_remote(engine, result, adopt or [])
    except NoAccess as exc:
        result.access = False
        result.note = str(exc)
    except MemsyncError as exc:  # the remote refused, or another device's keys init won
        result.failure = exc
    return result


def _init_remote(engine: Engine, result: KeysOutcome, adopt: list[str]) -> None:
    store = _store(engine)
    try:
        listing = store.list()
    except NotFound:
        store.ensure()
        result.made_remote = strip_query(engine.ctx.remote)
        listing = store.list()
    if store.encrypted:
        _among_recipients(store, result.public)
        if adopt:  # before the project's check, which may be what refused the named object
            result.took(fold_strays(store, adopt))
            listing = store.list()
        engine.confirm_project(listing)
        result.strays = store.stray_names()
        return
    engine.confirm_project(listing)
    if adopt:
        raise UserError("this project's remote is not encrypted; nothing to adopt")
    _, moved = turn_on(store, engine.ctx.device)
    result.turned_on = True
    result.took(moved)
    _follow(engine, moved)


def _among_recipients(store: CryptStore, public: str) -> None:
    """NoAccess unless this device's key is a recipient: a device that lost its identity
    still syncs with the data key it keeps, but the next change of that key locks it out."""
    try:
        store.ring()  # read with this device's identity: only a recipient opens it
    except NoAccess:
        trust = load_trust(*store.remote)
        if trust is None or trust.removed:
            raise
        raise NoAccess(
            f"this device's key {public} is not among the recipients of {store.remote[0]}: "
            "it syncs with the data key it kept from before, until that key changes; on a "
            f"device with access, run `memsync keys add {public}` (and `memsync keys remove` "
            "for the key this device lost)"
        ) from None


def _follow(engine: Engine, moved: Moved) -> None:
    """This device sealed each object anew from what it read: its records take the new ETags
    where they held the old ones, so its next sync downloads nothing it has."""
    if not moved.renamed:
        return
    from memsync.context.identity import MANIFEST
    from memsync.sync.remote_keys import CONFLICTS, PURGED, TOMBSTONES

    kept = {
        MANIFEST: "manifest_etag",
        TOMBSTONES: "tombstones_etag",
        PURGED: "purge_seen_etag",
        CONFLICTS: "conflicts_etag",
    }
    with engine.locked():
        records, meta = engine.state.records, engine.state.meta
        for name, (old, new) in moved.renamed.items():
            rec = records.get(name)
            if rec is not None and rec.etag == old:
                records[name] = rec._replace(etag=new)
            field_name = kept.get(name)
            if field_name is not None and getattr(meta, field_name) == old:
                setattr(meta, field_name, new)
        engine.state.save()


def _need_access(engine: Engine) -> tuple[CryptStore, str]:
    """The encrypted store and this device's public key, or a sentence saying why not."""
    store = _store(engine)
    _listed(engine, store)  # on an encrypted remote, a device without a key gets one here
    if not store.encrypted:
        raise UserError("this project's remote is not encrypted; `memsync keys init` turns it on")
    identity = load_identity()
    if identity is None:  # its identity file moved away since it last synced
        raise UserError(f"this device has no key ({identity_path()}); run `memsync keys init`")
    return store, public_key(identity)


def add(engine: Engine, key: str, name: str | None) -> KeysOutcome:
    store, me = _need_access(engine)
    _, added = add_device(store, key, name or "")
    return KeysOutcome(me, str(identity_path()), added=added)


def is_this_device(key: str) -> bool:
    """Whether `key` is this device's own public key (removing it locks this device out)."""
    identity = load_identity()
    return identity is not None and public_key(identity) == key.strip()


def remove(engine: Engine, key: str) -> KeysOutcome:
    store, me = _need_access(engine)
    listed = any(d.key == key for d in store.ring().devices)
    _, moved = remove_device(store, key)
    result = KeysOutcome(me, str(identity_path()), listed=listed)
    result.took(moved)
    if key.strip() == me:  # it wrapped the new data key to the others only: forget it here
        trust_path(*store.remote).unlink(missing_ok=True)
        result.access = False
    else:
        _follow(engine, moved)
    return result


def recipients(engine: Engine) -> list[Recipient]:
    store, me = _need_access(engine)
    ring = store.ring()
    return [Recipient(d.key, d.name, d.added, d.key == me) for d in ring.devices]


def export(engine: Engine) -> str:
    """The remote's data key as an age identity (AGE-SECRET-KEY-1…): with it, `age -d -i`
    decrypts any object on the remote without memsync."""
    store, _ = _need_access(engine)
    return store.ring().key.secret
