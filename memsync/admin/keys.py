"""`memsync keys`: this device's age identity and who may read an encrypted remote.

The commands act on the project's remote through the encrypting store (stores/crypt.py); the
writes themselves are in stores/crypt_migrate.py. See docs/encryption.md for the design.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memsync.stores.crypt import CryptStore
from memsync.stores.crypt_keys import (
    NoAccess,
    create_identity,
    identity_path,
    load_identity,
    public_key,
)
from memsync.stores.crypt_migrate import add_device, fold_strays, remove_device, turn_on
from memsync.util.errors import UserError

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
    copied: int = 0
    deleted: int = 0
    left: list[str] = field(default_factory=list)  # objects a switch kept for a person to check
    note: str = ""


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


def init(engine: Engine) -> KeysOutcome:
    """Make this device's identity if it has none; turn encryption on for a plain remote;
    on an encrypted one, fold in plaintext objects left by devices that wrote before they
    saw the switch (or say this device has no access yet)."""
    identity, made = create_identity()
    result = KeysOutcome(public_key(identity), str(identity_path()), made_identity=made)
    store = _store(engine)
    try:
        _listed(engine, store)
    except NoAccess as exc:
        result.access = False
        result.note = str(exc)
        return result
    if store.encrypted:
        moved = fold_strays(store)
    else:
        if not store.exists():
            store.ensure()
        _, moved = turn_on(store, engine.ctx.device)
        result.turned_on = True
    result.copied, result.deleted, result.left = moved.copied, moved.deleted, moved.left
    return result


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


def remove(engine: Engine, key: str) -> KeysOutcome:
    store, me = _need_access(engine)
    _, moved = remove_device(store, key)
    result = KeysOutcome(me, str(identity_path()))
    result.copied, result.deleted, result.left = moved.copied, moved.deleted, moved.left
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
