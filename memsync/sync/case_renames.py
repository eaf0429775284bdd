"""An edit racing another device's letter-case rename follows the rename.

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
from typing import TYPE_CHECKING

from memsync.memory.names import fold
from memsync.sync.state import Record

if TYPE_CHECKING:
    from memsync.sync.engine import Engine, LocalScan


def follow_case_renames(engine: Engine, listed: Iterable[str], local: LocalScan) -> list[str]:
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
        notes.append(
            f"{old} was renamed to {new} on another device; the edit made here went into {new}"
        )
    return notes
