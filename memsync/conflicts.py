"""Conflicts every device hears about.

A merge that could not keep both sides' edits silently (a fact file edited on two devices, an
entry changed differently on both) records a conflict on the device that merged it. The other
device took part too: its edit may be the one that went to history. So the merging device
also appends the conflict to `_memsync/conflicts.json` on the remote, and every other device
adds the entries it has not seen to its own conflicts at its next listing sync (when that
file's ETag moved): `status`, `status --json` and the session-start primer then say so on both.
The file holds no memory content, only file names and what happened; it is bounded.
"""

from __future__ import annotations

import json
import time

from memsync.errors import AlreadyExists, NotFound, PreconditionFailed
from memsync.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from memsync.state import State
    from memsync.stores import Store

REMOTE_KEY = "_memsync/conflicts.json"  # engine.CONFLICTS
KEEP = 200  # entries on the remote
KEEP_SEEN = 1000  # ids a device remembers having taken in
SKEW = 300.0  # seconds: a conflict this much before our last sync may still be about our edit
_ATTEMPTS = 8


def entry(name: str, detail: str, device: str) -> dict[str, Any]:
    import secrets  # only when there is a conflict to record

    return {
        "id": secrets.token_hex(8),
        "file": name,
        "detail": detail,
        "device": device,
        "at": time.time(),
    }


def _load(data: bytes) -> list[dict[str, Any]]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return []
    items = doc.get("conflicts") if isinstance(doc, dict) else None
    return [x for x in items or [] if isinstance(x, dict) and isinstance(x.get("id"), str)]


def _dump(items: list[dict[str, Any]]) -> bytes:
    return json.dumps({"version": 1, "conflicts": items[-KEEP:]}, indent=1).encode()


def publish(store: Store, entries: list[dict[str, Any]]) -> None:
    """Append `entries` to the remote record (conditional writes, bounded retries)."""
    for _ in range(_ATTEMPTS):
        try:
            data, etag = store.get(REMOTE_KEY)
        except NotFound:
            try:
                store.create(REMOTE_KEY, _dump(entries))
                return
            except AlreadyExists:
                continue
        known = {x["id"] for x in _load(data)}
        try:
            store.replace(
                REMOTE_KEY, _dump(_load(data) + [e for e in entries if e["id"] not in known]), etag
            )
            return
        except PreconditionFailed:
            continue


def receive(store: Store, state: State, device: str) -> list[dict[str, Any]]:
    """Take in the remote record's conflicts made by other devices since our last sync, and
    return them. Called when the record's ETag differs from the one last read."""
    try:
        data, etag = store.get(REMOTE_KEY)
    except NotFound:
        return []
    seen = list(state.meta.get("conflicts_seen", []))
    seen_set = set(seen)
    since = state.meta.get("last_sync")
    added: list[dict[str, Any]] = []
    for item in _load(data):
        if item["id"] in seen_set:
            continue
        seen.append(item["id"])
        seen_set.add(item["id"])
        at = item.get("at")
        if item.get("device") == device or since is None or not isinstance(at, (int, float)):
            continue  # ours, or from before this device ever synced: not about its edits
        if at < since - SKEW:
            continue
        detail = f"{item.get('detail')} (merged on {item.get('device')})"
        state.add_conflict(str(item.get("file")), detail)
        added.append({"file": str(item.get("file")), "detail": detail})
    state.meta["conflicts_seen"] = seen[-KEEP_SEEN:]
    state.meta["conflicts_etag"] = etag
    return added
