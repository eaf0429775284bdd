"""The local side of a run: the memory dir's scan, and what it says before anything is planned
(a lost memory dir, new names that macOS or Windows could not keep apart)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.memory import index_links
from memsync.memory.index_links import INDEX
from memsync.memory.names import collisions, fold
from memsync.privacy.gate import check_outbound
from memsync.sync.localfiles import LocalFiles, settled, stat_key
from memsync.sync.walk import MemoryWalk
from memsync.util.errors import GuardError, KeptLocal, RefusedFile
from memsync.util.fsutil import read_if_there, sha256

if TYPE_CHECKING:
    from collections.abc import Callable

    from memsync.sync.mode import Mode
    from memsync.sync.planner import Action
    from memsync.sync.result import SyncResult
    from memsync.sync.state import Record, State

LOST_DIR_MIN = 5  # more synced files than this all gone, new ones made: a lost folder


class LocalScan:
    def __init__(
        self, content: LocalFiles, refused: dict[str, str], mtimes: dict[str, float]
    ) -> None:
        self.content, self.refused, self.mtimes = content, refused, mtimes
        self.kept: set[str] = set()  # the refused ones the user marked to stay local
        self.swept = 0  # stale temp files of killed writers, removed

    def split_refused(self) -> tuple[dict[str, str], dict[str, str]]:
        """(refused: each needs the user's attention, kept local: by the user's choice)."""
        refused = {n: r for n, r in self.refused.items() if n not in self.kept}
        return refused, {n: r for n, r in self.refused.items() if n in self.kept}


class Run:
    """What one run knows about both sides when it starts.

    This module and the stores it drives are on every sync's path: their classes are plain
    classes and NamedTuples, not dataclasses, whose import and class building cost a whole
    no-op sync more than a tenth (docs/benchmarks.md)."""

    def __init__(
        self,
        local: LocalScan,
        local_hashes: dict[str, str],
        remote: dict[str, str],
        modified: dict[str, float],
        actions: list[Action],
    ) -> None:
        self.local, self.local_hashes, self.remote = local, local_hashes, remote
        self.modified, self.actions = modified, actions

    def mtime(self, name: str) -> float | None:
        return self.local.mtimes.get(name)


def scan(
    root: Path, state: State, max_bytes: int, allow: dict[str, set[str]] | None = None
) -> LocalScan:
    """Hash every memory file, reading only those whose stat changed since the last scan
    (see localfiles.py). Files changed since their last sync are checked before they may
    leave the machine; refused ones are reported and left untouched."""
    found = LocalScan(LocalFiles(root), {}, {})
    walk = MemoryWalk(root, sweep=True)
    seen, fresh = state.seen, {}
    now_ns = time.time_ns()
    for name, path, st in walk:
        found.mtimes[name] = st.st_mtime
        stat_now = list(stat_key(st))
        rec = state.records.get(name)
        cached = seen.get(name)
        if rec is not None and cached == [*stat_now, rec.sha]:
            # untouched since a read that found what was last synced
            found.content.add(name, rec.sha)
            fresh[name] = cached
            continue
        try:
            data = read_if_there(path)
        except OSError as exc:
            found.refused[name] = f"it cannot be read ({exc.strerror})"
            continue
        if data is None:  # removed since the walk saw it: the next sync sees the deletion
            found.refused[name] = "it was removed while memsync read the folder"
            continue
        digest = sha256(data)
        if rec is None or rec.sha != digest:
            try:
                check_outbound(name, data, max_bytes, (allow or {}).get(name, ()))
            except RefusedFile as exc:
                found.refused[name] = exc.reason
                if isinstance(exc, KeptLocal):
                    found.kept.add(name)
                continue
        if settled(st, now_ns):
            fresh[name] = [*stat_now, digest]
        found.content.add(name, digest, data)
    found.refused.update(walk.refused)
    found.swept = walk.swept
    state.seen = fresh
    return found


def memory_dir_lost(
    local: LocalScan, state: State, index_text: Callable[[], str | None], forgetting: set[str]
) -> bool:
    """Whether the memory dir is missing or holds no memory file at all while the records
    say files were synced from it: a lost folder (a wiped disk, a new checkout, an `rm
    -rf`), never a request to delete every file everywhere. A folder made again, where
    the agent already wrote a new file or two, holds none of the synced files: lost too,
    when those were more than a few (deleting a handful by hand is an ordinary edit) or
    included MEMORY.md (Claude Code's index, which nobody deletes with its files). A
    folder left with MEMORY.md alone, of more than a few synced files, is lost the same
    way: the index is what Claude Code writes first into a new folder, and so is one
    left with MEMORY.md alone written anew, linking to none of the files synced from it,
    whatever their number (a user deleting a few by hand leaves the index's other lines).
    `index_text`: MEMORY.md here, read only when it decides; `forgetting`: files this
    device forgot whose forget waits for the remote."""
    from memsync.memory.digests import rolled_up

    # no loss: a file forgotten here (not finished on this remote yet), or a digest a
    # roll-up here covers (compaction with sync off deletes them before any sync)
    gone = set(forgetting)
    here = local.content.hashes
    gone |= rolled_up(state.records.keys() - here.keys(), here)
    records = {n: r for n, r in state.records.items() if n not in gone}
    if not records or local.refused:
        return False
    synced_here = records.keys() & local.content.hashes.keys()
    if synced_here - {INDEX}:
        return False
    if synced_here:  # only MEMORY.md: kept, or written again by Claude Code in a new folder
        index_sha = local.content.hashes[INDEX]
        return len(records) - 1 > LOST_DIR_MIN or _index_written_anew(
            records, index_sha, index_text
        )
    return not local.content.hashes or len(records) > LOST_DIR_MIN or INDEX in records


def _index_written_anew(
    records: dict[str, Record], index_sha: str, index_text: Callable[[], str | None]
) -> bool:
    """MEMORY.md changed since it was synced and links to none of the other files (two
    or more) synced from this folder: the index of a new folder, not the old one edited.
    A single file deleted with its index line (the memory tool's delete) is an edit."""
    if index_sha == records[INDEX].sha or len(records) < 3:
        return False
    text = index_text()
    return not any(index_links.links_to(text, name) for name in records if name != INDEX)


class LostDir:
    """A lost memory dir a pull restores: where, how it was found, the files it expects."""

    def __init__(self, where: Path, gone: str, lost: set[str]) -> None:
        self.where, self.gone, self.lost = where, gone, lost


def restore_lost_dir(
    result: SyncResult, mode: Mode, state: State, where: Path, here: dict[str, str]
) -> LostDir:
    """A lost memory dir is restored by a pull and refused by a push or sync (which would
    otherwise delete every file on the remote, --force or not). `here`: the files the dir
    holds, by hash."""
    from memsync.sync.mode import Mode

    lost = {n for n in state.records if n not in here}  # as status counts them
    gone = (
        "missing"
        if not where.is_dir()
        else "empty"
        if not here
        else f"left with only {INDEX} of its synced files"
        if INDEX in here and INDEX in state.records
        else "left with none of its synced files"
    )
    if mode is not Mode.PULL:
        raise GuardError(
            f"the memory dir {where} is {gone} but {len(lost)} file(s) were synced from it; "
            "nothing was deleted on the remote: run `memsync pull` to bring them back "
            "(to delete them everywhere instead, `memsync forget FILE...`)"
        )
    for name in list(state.records):
        state.forget(name)  # what is on the remote lands again as new files
    state.unqueue(state.pending)  # queued deletions of the lost files
    result.restored = _restored_note(where, gone, len(lost))
    result.notes.append(result.restored)
    return LostDir(where, gone, lost)


def recount_restored(result: SyncResult, lost: LostDir) -> None:
    """The restore's count without the files no longer on the remote: forgotten or deleted
    by another device since this one synced them (the count was made before the listing)."""
    if result.restored is None or result.offline:
        return
    waiting = {*result.downloaded, *result.errors, *result.refused_remote, *result.skipped}
    if lost.lost - waiting:
        note = _restored_note(lost.where, lost.gone, len(lost.lost & waiting))
        result.notes[result.notes.index(result.restored)] = note
        result.restored = note


def _restored_note(where: Path, gone: str, count: int) -> str:
    return f"the memory dir {where} was {gone}; restoring the {count} file(s) synced from it"


def case_renamed_here(names: list[str], local: LocalScan, records: dict[str, Record]) -> bool:
    """Whether a named file is one side of a letter-case rename made here: its old name
    recorded and gone, its new one here and not recorded. A `push FILE` of either side (the
    FileChanged hook's `unlink` of the old name) then lists, and takes both sides in one run."""
    here = local.content.hashes
    gone = {fold(n) for n in records if n not in here}
    new = {fold(n) for n in here if n not in records}
    return any(fold(n) in gone and fold(n) in new for n in names)


def refuse_colliding_names(
    local: LocalScan, records: dict[str, Record], remote: dict[str, str] | None = None
) -> dict[str, str]:
    """Refuse (leave here, report) each new local name that macOS or Windows could not keep
    apart from another local, remote or recorded one (memsync/memory/names.py); what it refused.
    `remote`: the listing's name -> ETag (None: trust the records). A recorded name deleted
    here and unchanged or gone on the remote is not in the way: it goes in the same run (a
    rename that changed only letter case)."""
    listed = remote if remote is not None else {n: r.etag for n, r in records.items()}
    leaving = {
        n
        for n, rec in records.items()
        if n not in local.content.hashes
        and n not in local.refused
        and listed.get(n) in (rec.etag, None)
    }
    known = (set(records) | set(listed)) - leaving
    new = [n for n in local.content.hashes if n not in known and n not in local.refused]
    refused = collisions(new, known)
    local.refused.update(refused)
    return refused


def mtime_of(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
