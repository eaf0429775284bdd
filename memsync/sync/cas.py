"""Compare-and-swap on one remote object: read it, compute its new content, write that only
if the object is still the one read, and start again from the read when it is not. Every
shared record memsync keeps on the remote (conflicts, tombstones, the purge mark) changes
this way, so two devices writing at once both get their change in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memsync.stores.base import MAX_ATTEMPTS
from memsync.util.errors import NotFound, PreconditionFailed, UserError

if TYPE_CHECKING:
    from collections.abc import Callable

    from memsync.stores.base import Store


class Contended(PreconditionFailed):
    """The object changed under every one of MAX_ATTEMPTS attempts."""


def update(store: Store, key: str, change: Callable[[bytes | None], bytes | None]) -> str | None:
    """Apply `change` to the object at `key` and return its ETag afterwards (None: there is
    none). `change` gets the current content (None: no object) and returns the new content,
    None to delete the object, or its argument unchanged to leave it as it is (no write).
    It may be called more than once, each time with what the remote holds then. A missing
    container is created for a first write. Raises Contended after MAX_ATTEMPTS lost races."""
    for _ in range(MAX_ATTEMPTS):
        try:
            current: bytes | None
            current, etag = store.get(key)
        except NotFound:
            current, etag = None, None
        new = change(current)
        if new == current:
            return etag
        try:
            if new is None:
                assert etag is not None
                store.delete(key, etag)
                return None
            if etag is None:
                return _create(store, key, new)
            return store.replace(key, new, etag)
        except (PreconditionFailed, NotFound):  # changed or removed since the read
            continue
    raise Contended(f"{key} kept changing on the remote; gave up after {MAX_ATTEMPTS} attempts")


def update_or_say(
    store: Store, key: str, change: Callable[[bytes | None], bytes | None], what: str, then: str
) -> str | None:
    """`update` for a command the user ran: a contest lost every time is their error in one
    sentence, naming `what` kept changing and `then`, the command that finishes the job."""
    try:
        return update(store, key, change)
    except Contended:
        raise UserError(f"{what} kept changing on the remote; {then}") from None


def _create(store: Store, key: str, data: bytes) -> str:
    try:
        return store.create(key, data)
    except NotFound:  # no container yet (an Azure remote never pushed to)
        store.ensure()
        return store.create(key, data)
