"""An edit racing a letter-case rename follows the rename, whichever device renamed.

Device A renames `user_pat.md` to `User_Pat.md` (a case-only rename: one file on macOS and
Windows) while device B edits `user_pat.md`. Read name by name, B's edit brings `user_pat.md`
back ("deleted there, edited here: the edit wins") beside `User_Pat.md`, and every device ends
with two names for what macOS and Windows hold as one file. Here B renames its copy the same
way before anything is planned, and records the renamed file with the base of the old name and
no ETag, so the planner merges B's edit into A's `User_Pat.md` like any edit made on both
sides: A's rename and B's words are both kept."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from memsync.memory.index_links import INDEX
from memsync.memory.names import fold
from memsync.sync.state import Record
from memsync.util.errors import NotFound
from memsync.util.fsutil import sha256

if TYPE_CHECKING:
    from pathlib import Path

    from memsync.memory.merge import MergeResult
    from memsync.stores.base import Entry, Store
    from memsync.sync.result import SyncResult
    from memsync.sync.scan import LocalScan
    from memsync.sync.state import State


class Side(Protocol):
    """What a rename here needs of the run (the engine): its state, the remote, the memory
    dir's files, and the report of a merge's conflict."""

    state: State

    @property
    def store(self) -> Store: ...

    def local_path(self, name: str) -> Path: ...

    def write_local(self, name: str, data: bytes, *, sync_dir: bool = True) -> None: ...

    def report_merge_conflict(
        self, result: SyncResult, name: str, outcome: MergeResult
    ) -> None: ...


def follow_case_renames(engine: Side, listed: Iterable[str], local: LocalScan) -> list[str]:
    """Rename each locally edited file whose recorded name left the remote while exactly one
    new remote name folds like it; the notes that say so."""
    records = engine.state.records
    listed = set(listed)
    twins: dict[str, list[str]] = {}
    for key in listed:
        if key not in records and key not in local.content.hashes:
            twins.setdefault(fold(key), []).append(key)
    notes = []
    for old, rec in list(records.items()):
        if old in listed or local.content.hashes.get(old, rec.sha) == rec.sha:
            continue  # still on the remote, or not edited here: the plan handles it
        found = twins.get(fold(old), [])
        if len(found) != 1:
            continue
        new = found[0]
        src, dst = engine.local_path(old), engine.local_path(new)
        if not dst.parent.is_dir() or (dst.exists() and not os.path.samefile(src, dst)):
            continue  # another file already holds the new name here (or its folder is new)
        data = local.content[old]
        os.rename(src, dst)  # as the other device did; macOS and Windows rename in place
        local.content.add(new, local.content.hashes[old], data)
        local.content.discard(old)
        if old in local.mtimes:
            local.mtimes[new] = local.mtimes.pop(old)
        records[new] = Record("", rec.sha, rec.synced_at)  # the old name's base, no ETag: merge
        del records[old]
        _relink(engine, local, old, new)
        notes.append(
            f"{old} was renamed to {new} on another device; the edit made here went into {new}"
        )
    return notes


def carry_into_case_renames(
    engine: Side, listing: dict[str, Entry], local: LocalScan, result: SyncResult
) -> list[str]:
    """The other way round: this device renamed `user_pat.md` to `User_Pat.md` while another
    device's edit of `user_pat.md` reached the remote. Read name by name, the edit comes back
    as `user_pat.md` and the rename is refused as a name differing only by case. Here the
    remote copy is merged into the renamed file (the old name's base), and the old name's
    record takes the remote copy's ETag, so the plan deletes it there (If-Match) and uploads
    the rename in the same run. A conflict of that merge is reported as any merge's is. The
    notes that say so."""
    from memsync.memory.merge import merge

    records = engine.state.records
    new_here = [n for n in local.content.hashes if n not in records and n not in listing]
    if not new_here:
        return []
    notes = []
    for old, rec in list(records.items()):
        entry = listing.get(old)
        if old in local.content.hashes or entry is None or entry.etag == rec.etag:
            continue  # not renamed here, or the remote copy is the one synced: the plan handles it
        found = [n for n in new_here if fold(n) == fold(old)]
        if len(found) != 1:
            continue
        new = found[0]
        try:
            theirs, etag, theirs_mtime = engine.store.fetch(old)
        except NotFound:
            continue
        ours = local.content[new]
        outcome = merge(
            new,
            engine.state.base(old),
            ours,
            theirs,
            ours_mtime=local.mtimes.get(new),
            theirs_mtime=theirs_mtime,
        )
        if outcome.content != ours:
            engine.state.keep(new, ours, f"before the edit of {old} made elsewhere joined it")
            engine.write_local(new, outcome.content)
            local.content.add(new, sha256(outcome.content), outcome.content)
        if outcome.discarded is not None and outcome.discarded != ours:
            engine.state.keep(new, outcome.discarded, f"lost a merge conflict: {outcome.conflict}")
        if outcome.conflict:
            engine.report_merge_conflict(result, new, outcome)
        records[old] = Record(etag, rec.sha, rec.synced_at)  # the copy merged: deleted there
        said = f" ({outcome.conflict})" if outcome.conflict else ""
        notes.append(
            f"{old} was edited on another device while this device renamed it to {new}; "
            f"that edit went into {new}{said}"
        )
    return notes


def _relink(engine: Side, local: LocalScan, old: str, new: str) -> None:
    """MEMORY.md here links the renamed file by its new name, as the renaming device's does:
    a push (the Stop hook) sends the rename without pulling the index, which would otherwise
    link a file this device no longer has until its next sync."""
    if INDEX not in local.content.hashes:
        return
    data = local.content[INDEX]
    text = data.decode("utf-8", "surrogateescape")
    relinked = text.replace(f"]({old})", f"]({new})")
    if relinked == text:
        return
    clean = relinked.encode("utf-8", "surrogateescape")
    engine.write_local(INDEX, clean)
    local.content.add(INDEX, sha256(clean), clean)
