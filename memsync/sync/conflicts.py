"""Conflicts every device hears about.

A merge that could not keep both sides' edits silently (a fact file edited on two devices, an
entry changed differently on both) records a conflict on the device that merged it. The other
device took part too: its edit may be the one that went to history. So the merging device
also appends the conflict to `_memsync/conflicts.json` on the remote, and every other device
adds the entries it has not seen to its own conflicts at its next listing sync (when that
file's ETag moved): `status`, `status --json` and the session-start primer then say so on both.
Which entries a device takes in is decided by id alone, never by a clock or a device name
(clocks disagree, names repeat): every id it has seen is skipped, and a device sees the ids it
makes itself (`made_here`) and every id the record held when it had nothing synced yet.
`memsync resolve` on one device appends a resolution naming the conflicts it cleared (by id),
and the other devices clear them too at their next sync, so no device keeps reporting a
conflict the user already dealt with. A resolution made offline is published at the next sync.
The file holds no memory content, only file names and what happened; it is bounded.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

from memsync.sync import cas
from memsync.sync.remote_keys import CONFLICTS
from memsync.util.errors import NotFound, StoreError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from memsync.stores.base import Store
    from memsync.sync.conflict_list import Conflict, Conflicts
    from memsync.sync.state import Meta, State

KEEP = 200  # entries on the remote
KEEP_SEEN = 1000  # ids a device remembers having seen (taken in or made itself)


def entry(name: str, detail: str, device: str, marks: Sequence[str] = ()) -> dict[str, Any]:
    """A conflict as the remote record holds it; `marks` as in Conflict."""
    import secrets  # only when there is a conflict to record

    record: dict[str, Any] = {
        "id": secrets.token_hex(8),
        "file": name,
        "detail": detail,
        "device": device,
        "at": time.time(),
    }
    if marks:
        record["marks"] = list(marks)
    return record


def made_here(meta: Meta, record: dict[str, Any]) -> None:
    """A conflict or resolution this device made: seen, so it is never taken in again as
    another device's when the remote record comes back with it."""
    meta.conflicts_seen = [*meta.conflicts_seen, record["id"]][-KEEP_SEEN:]


def _marks(item: dict[str, Any]) -> list[str]:
    marks = item.get("marks")
    return [m for m in marks if isinstance(m, str)] if isinstance(marks, list) else []


def outlived(conflicts: Conflicts, read: Callable[[str], bytes | None]) -> int:
    """Clear the conflicts of versions kept side by side (those with marks) none of which is
    in the file any more: a third device consumed or delivered the entry, the user removed
    both, the file went. "Both versions are in the file" is then no longer true, and there is
    nothing left to pick. Each device clears its own, from its own copy; returns how many."""
    from memsync.memory.merge import marks_of

    held: dict[str, set[str]] = {}

    def over(conflict: Conflict) -> bool:
        if not conflict.marks:
            return False
        if conflict.file not in held:
            data = read(conflict.file)
            held[conflict.file] = marks_of(data) if data is not None else set()
        return not held[conflict.file] & set(conflict.marks)

    return len(conflicts.drop(over))


def _records(data: bytes, field: str = "conflicts") -> list[dict[str, Any]]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return []
    items = doc.get(field) if isinstance(doc, dict) else None
    return [x for x in items or [] if isinstance(x, dict) and isinstance(x.get("id"), str)]


def _load(data: bytes) -> list[dict[str, Any]]:
    return _records(data)


def recorded(data: bytes) -> list[dict[str, Any]]:
    """The conflicts a remote record holds."""
    return _records(data)


def rewrite(data: bytes, ids: set[str]) -> bytes:
    """The remote record without the conflicts whose id is in `ids` (a forget took the text
    they describe; resolutions, which name no content, stay). Unchanged bytes if none is
    there."""
    items, done = _records(data), _records(data, "resolved")
    kept = [x for x in items if x["id"] not in ids]
    if len(kept) == len(items):
        return data
    return _dump(kept, done)


def _dump(items: list[dict[str, Any]], resolved: Sequence[dict[str, Any]] = ()) -> bytes:
    doc: dict[str, Any] = {"version": 1, "conflicts": items[-KEEP:]}
    if resolved:
        doc["resolved"] = list(resolved)[-KEEP:]
    return json.dumps(doc, indent=1).encode()


def publish(
    store: Store,
    entries: Sequence[dict[str, Any]],
    resolutions: Sequence[dict[str, Any]] = (),
) -> None:
    """Append `entries` (conflicts) and `resolutions` to the remote record (a compare-and-swap;
    given up silently when the record keeps changing: each device still holds its own)."""

    def append(data: bytes | None) -> bytes:
        if data is None:
            return _dump(list(entries), list(resolutions))
        items, done = _records(data), _records(data, "resolved")
        known = {x["id"] for x in items} | {x["id"] for x in done}
        items += [e for e in entries if e["id"] not in known]
        done += [r for r in resolutions if r["id"] not in known]
        return _dump(items, done)

    with contextlib.suppress(cas.Contended):
        cas.update(store, CONFLICTS, append)


def resolution(meta: Meta, name: str | None, device: str) -> tuple[int, dict[str, Any] | None]:
    """Clear this device's conflicts (all, or `name`'s) and return how many, with the
    resolution the other devices need to clear theirs (queued in the state until published:
    `pending_resolutions`)."""
    import secrets

    cleared = meta.conflicts.resolve(name)
    if not cleared:
        return 0, None
    record = {
        "id": secrets.token_hex(8),
        "file": name,  # None: every file
        "ids": [c.id for c in cleared if c.id is not None],
        "device": device,
        "at": time.time(),
    }
    meta.pending_resolutions = [*meta.pending_resolutions, record]
    made_here(meta, record)
    return len(cleared), record


def publish_resolutions(store: Store, meta: Meta) -> None:
    """Publish the resolutions made here that the remote has not heard of yet."""
    pending = list(meta.pending_resolutions)
    if pending:
        publish(store, [], pending)
        meta.pending_resolutions = []


def share_resolution(state: State, store: Callable[[], Store], device: str, name: str | None):
    """`memsync resolve`: clear here, then tell the other devices through the remote (or at
    the next sync if it cannot be reached now). Returns the count and a note for the user.
    `store`: opens the remote, only when there is a resolution to publish."""
    cleared, record = resolution(state.meta, name, device)
    state.save()
    if record is None:
        return cleared, ""
    try:
        publish_resolutions(store(), state.meta)
    except (StoreError, OSError):  # unreachable or refused: the next sync publishes it
        return cleared, " The other devices hear of it at the next sync that reaches the remote."
    state.save()
    return cleared, " The other devices clear it at their next sync."


def _apply_resolution(conflicts: Conflicts, record: dict[str, Any]) -> int:
    """Clear the conflicts another device's resolution names: by id, and, for that file (or
    every file), those recorded here without an id (by a version that gave none)."""
    ids = set(record.get("ids") or [])
    name = record.get("file")

    def named(c: Conflict) -> bool:
        return c.id in ids or (c.id is None and (name is None or c.file == name))

    return len(conflicts.drop(named))


def receive(store: Store, meta: Meta, synced_before: bool) -> list[dict[str, Any]]:
    """Take in the remote record's conflicts and resolutions this device has not seen, and
    return the conflicts. Called when the record's ETag differs from the one last read.
    `synced_before`: whether this device holds records; one that does not had no edit in any
    conflict recorded so far, and only marks those seen."""
    try:
        data, etag = store.get(CONFLICTS)
    except NotFound:
        return []
    seen = list(meta.conflicts_seen)
    seen_set = set(seen) | {c.id for c in meta.conflicts if c.id is not None}
    added: list[dict[str, Any]] = []
    resolutions = []
    for record in _records(data, "resolved"):
        if record["id"] in seen_set:
            continue
        seen.append(record["id"])
        seen_set.add(record["id"])
        resolutions.append(record)
    resolved = {i for r in resolutions for i in r.get("ids") or ()}
    for item in _load(data):
        if item["id"] in seen_set:
            continue
        seen.append(item["id"])
        seen_set.add(item["id"])
        if not synced_before or item["id"] in resolved:
            continue  # from before this device synced anything, or already resolved
        detail = f"{item.get('detail')} (merged on {item.get('device')})"
        meta.conflicts.add(str(item.get("file")), detail, item["id"], _marks(item))
        added.append({"file": str(item.get("file")), "detail": detail})
    for record in resolutions:
        _apply_resolution(meta.conflicts, record)
    meta.conflicts_seen = seen[-KEEP_SEEN:]
    meta.conflicts_etag = etag
    return added
