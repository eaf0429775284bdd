"""A file changed on both sides: the three-way merge of the two copies (memory/merge.py)
written to the remote by a conditional write and here by a swap, each attempt reading both
again when either side changed meanwhile, and the conflict it may report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memsync.memory.digests import is_rollup
from memsync.privacy.gate import check_inbound, check_outbound
from memsync.stores.base import MAX_ATTEMPTS
from memsync.sync.scan import mtime_of
from memsync.util.errors import (
    AlreadyExists,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    Unreadable,
)
from memsync.util.fsutil import sha256

if TYPE_CHECKING:
    from memsync.memory.merge import MergeResult
    from memsync.sync.engine import Engine
    from memsync.sync.result import SyncResult
    from memsync.sync.state import Record


def merge(engine: Engine, result: SyncResult, name: str, ours: bytes, mtime: float | None) -> None:
    """Merge `ours` (edited here at `mtime`) with the remote copy, whose edit time comes
    with it (`Store.fetch`): never an upload time. Each attempt reads the remote copy and
    writes the merge there (a conditional write) and here; a race lost on either side is
    another attempt, up to MAX_ATTEMPTS."""
    base = engine._synced_copy(engine.state.records.get(name))
    for _ in range(MAX_ATTEMPTS):
        try:
            theirs, etag, theirs_mtime = engine.store.fetch(name)
        except NotFound:
            if put_back_removed(engine, result, name, ours, mtime):
                return
            continue
        except Unreadable as exc:
            if replace_unreadable(engine, result, name, ours, mtime, exc):
                return
            continue
        theirs_ok = remote_copy_accepted(engine, result, name, theirs)
        if theirs == ours:  # e.g. a PUT that landed as an interrupted run ended: record it
            engine.record(name, etag, ours)
            conflict_that_landed(engine, result, name, ours)
            return
        base = _base_by_hash(base, engine.state.records.get(name), ours, theirs)
        if base is None and is_rollup(name) and not engine.state.records_lost:
            base = rollup_base(engine, ours, theirs)
        outcome: MergeResult | None = None
        merged = ours  # a corrupt remote copy never replaces a good local one: overwritten
        if theirs_ok:
            outcome = _merge_copies(name, base, ours, theirs, mtime, theirs_mtime)
            if base is None and engine.state.records_lost:
                outcome = _without_record(name, outcome, ours, theirs)
            merged = outcome.content
        edited = theirs_mtime  # the edit time the remote copy carries, which lands here
        if merged != theirs:
            edited = _merge_edited(outcome, mtime)
            refusal = refused(engine, name, merged)
            if refusal is not None:
                again = land_merge(engine, name, base, ours, merged, theirs_mtime)
                if again is not None:
                    base, ours, mtime = again
                    continue
                held_here(engine, result, name, refusal, theirs, etag)
                return
            sent = send_merge(engine, name, merged, etag, outcome, edited)
            if sent is None:
                continue
            etag = sent
        again = land_merge(engine, name, base, ours, merged, edited)
        if again is not None:
            base, ours, mtime = again
            continue
        if (
            outcome is not None
            and outcome.conflict
            and (outcome.discarded == ours or outcome.ours_set_aside)
        ):
            with engine._lock:
                result.replaced[name] = outcome.conflict
        settle_merge(engine, result, name, outcome, merged, etag)
        return
    with engine._lock:
        result.errors[name] = (
            f"{name} kept changing on the remote; gave up after {MAX_ATTEMPTS} merge attempts "
            "(run sync again)"
        )


def rollup_base(engine: Engine, ours: bytes, theirs: bytes) -> bytes | None:
    """The base of two roll-ups of one period that two devices made apart (no version in
    common): the synced copies of the digests both list as sources, rolled up as
    compaction rolls them (memory/rollups.py). A line one of them reworded before its
    compaction is then a rewording, not a new line beside the old one; a line both
    reworded, a conflict; a line one of them lacks (rolled from an older copy) is no
    removal."""
    from memsync.memory import rollups

    both = set(rollups.sources(ours)) & set(rollups.sources(theirs))
    copies = {}
    for source in both:
        content = engine._synced_copy(engine.records_at_start.get(source))
        if content is not None:
            copies[source] = content
    return rollups.base_of(copies, ours, theirs)


def put_back_removed(
    engine: Engine, result: SyncResult, name: str, ours: bytes, mtime: float | None
) -> bool:
    """The remote copy is gone (deleted elsewhere meanwhile): ours goes back, unless a
    deletion blocks that (`_recreate_blocked`). False when another device created the file
    first: another attempt merges with that."""
    if name in engine.state.records and engine._recreate_blocked(result, name):
        return True
    if engine._records_run and name in engine.state.records:
        # `push FILE` planned from the records: a listing sync of it decides whether it
        # comes back, or goes into another device's letter-case rename of it
        with engine._lock:
            engine._deferred.add(name)
        return True
    if stays_here(engine, result, name, ours):
        return True
    try:
        etag = engine.store.create(name, ours, mtime)
    except AlreadyExists:
        return False
    if name in engine.state.records:
        engine.came_back_here(name)
    finish_merge(engine, result, name, ours, etag)
    return True


def replace_unreadable(
    engine: Engine,
    result: SyncResult,
    name: str,
    ours: bytes,
    mtime: float | None,
    unreadable: Unreadable,
) -> bool:
    """A remote copy no device can read (damaged) is replaced by ours, as one the inbound
    gate refuses is, and said; False when it changed meanwhile (another attempt reads it)."""
    if stays_here(engine, result, name, ours):
        return True
    try:
        etag = engine.store.replace(name, ours, unreadable.etag, mtime)
    except PreconditionFailed:
        return False
    engine.record(name, etag, ours)
    with engine._lock:
        result.uploaded.append(name)
        result.notes.append(
            f"{name}: the remote copy could not be read ({unreadable.reason}); replaced it "
            "with the local version"
        )
    return True


def remote_copy_accepted(engine: Engine, result: SyncResult, name: str, theirs: bytes) -> bool:
    """Whether the remote copy may be merged (the inbound gate); a refused one is kept in
    local history and said, then overwritten by the local version."""
    try:
        check_inbound(name, theirs, engine.max_bytes)
    except RefusedFile as exc:
        engine.keep(name, theirs, f"the remote copy, refused ({exc.reason})")
        with engine._lock:
            result.notes.append(
                f"{name}: the remote copy was refused ({exc.reason}); replaced it with the "
                f"local version (the refused copy is in `memsync history {name}`)"
            )
        return False
    return True


def stays_here(engine: Engine, result: SyncResult, name: str, ours: bytes) -> bool:
    """Whether `ours`, read here since the scan, is one the gate refuses: then it stays here,
    reported, and is not uploaded."""
    why = refused(engine, name, ours)
    if why is not None:
        with engine._lock:
            result.refused[name] = why
    return why is not None


def refused(engine: Engine, name: str, data: bytes) -> str | None:
    """Why `data` may not leave the machine (the gate every upload passes), or None."""
    try:
        check_outbound(name, data, engine.max_bytes, engine.allow.get(name, ()))
    except RefusedFile as exc:
        return exc.reason
    return None


def held_here(
    engine: Engine, result: SyncResult, name: str, reason: str, theirs: bytes, etag: str
) -> None:
    """A merge the gate refuses is never uploaded: it stays here, holding both sides' lines,
    and the remote keeps its copy, which is recorded as synced (so the file here is a local
    edit the scan refuses, for that reason, until it is made to pass). Both devices list the
    conflict until `memsync resolve`."""
    from memsync.sync.conflicts import entry

    here = (
        f"the merge with the remote copy was not uploaded ({reason}): it is here with both "
        "sides' lines, the remote keeps its copy; make the file pass `memsync validate`, "
        f"sync, then `memsync resolve {name}`"
    )
    others = (
        f"another device's edits merged with this copy could not be uploaded ({reason}): "
        "they stay on that device until the file is made to pass `memsync validate` there"
    )
    engine.record(name, etag, theirs)
    engine.report_conflict(result, name, here, entry(name, others, engine.ctx.device))
    with engine._lock:
        result.refused[name] = f"the merge with the remote copy was not uploaded: {reason}"


def send_merge(
    engine: Engine,
    name: str,
    merged: bytes,
    etag: str,
    outcome: MergeResult | None,
    edited: float | None,
) -> str | None:
    """Write the merge over the remote copy read (`etag`), with its edit time `edited`
    (`_merge_edited`): its new ETag, or None when the remote changed meanwhile (another
    attempt). Its conflict is noted first (see expect_conflict)."""
    expect_conflict(engine, name, merged, outcome)
    try:
        return engine.store.replace(name, merged, etag, edited)
    except PreconditionFailed:
        return None


def land_merge(
    engine: Engine, name: str, base: bytes | None, ours: bytes, merged: bytes, edited: float | None
) -> tuple[bytes | None, bytes, float | None] | None:
    """Write the merge here, the copy it replaces kept in history, with the edit time the
    remote copy carries (`edited`) as its mtime, as a download gets. None when it stands;
    else this copy changed since `ours` was read, and the next attempt merges that edit
    with what the remote holds now: (base, ours, mtime) for it."""
    current = engine.read_local(name)
    if current is not None and current != ours:
        return base, current, mtime_of(engine.local_path(name))  # edited here meanwhile
    if merged != ours or current is None:
        if current is not None:
            engine.keep(name, current, "replaced by a merge with the remote version")
        landed = engine.replace_local(engine.local_path(name), merged, current, edited=edited)
        if landed is not None:
            # written here between the re-read and the rename, over what we had read
            # (`ours`), which becomes the base
            return ours, landed, mtime_of(engine.local_path(name))
    return None


def settle_merge(
    engine: Engine,
    result: SyncResult,
    name: str,
    outcome: MergeResult | None,
    merged: bytes,
    etag: str,
) -> None:
    """The merge stands on both sides: its conflict, if any, is reported here and shared
    with the other devices (the losing copy kept in history), and the file recorded."""
    if outcome is not None and outcome.conflict:
        if outcome.discarded is not None:
            reason = f"lost a merge conflict: {outcome.conflict}"
            engine.keep(name, outcome.discarded, reason)
        engine.report_merge_conflict(result, name, outcome)
    no_landing_conflict(engine, name)
    finish_merge(engine, result, name, merged, etag)


def expect_conflict(engine: Engine, name: str, merged: bytes, outcome) -> None:
    """Note the conflict a merge is about to write, by the written content's hash: a
    write whose answer is lost (a dropped connection, a retry met by 412) may still have
    landed, and the next look at the file then finds the remote equal to the local copy,
    with no merge left to report it. Replaced or cleared by the merge's own outcome."""
    if outcome is None or not outcome.conflict:
        no_landing_conflict(engine, name)
        return
    expected = {
        "sha": sha256(merged),
        "detail": outcome.conflict,
        "shared": shared_conflict(engine, name, outcome),
    }
    with engine._lock:
        engine.state.meta.landing_conflicts[name] = expected


def no_landing_conflict(engine: Engine, name: str) -> dict | None:
    with engine._lock:
        return engine.state.meta.landing_conflicts.pop(name, None)


def conflict_that_landed(engine: Engine, result: SyncResult, name: str, content: bytes) -> None:
    """Report the conflict of a merge whose write landed though its answer was lost."""
    pending = no_landing_conflict(engine, name)
    if pending is not None and pending["sha"] == sha256(content):
        engine.report_conflict(result, name, pending["detail"], pending["shared"])


def shared_conflict(engine: Engine, name: str, outcome) -> dict:
    """The conflict as the other devices should read it (not "this device's version")."""
    from memsync.memory.merge import describe_for_others
    from memsync.sync.conflicts import entry

    return entry(name, describe_for_others(name, outcome), engine.ctx.device, outcome.marks)


def finish_merge(engine: Engine, result: SyncResult, name: str, merged: bytes, etag: str) -> None:
    engine.record(name, etag, merged)
    with engine._lock:
        result.merged.append(name)


def _merge_edited(outcome: MergeResult | None, mtime: float | None) -> float | None:
    """The edit time a merge written to the remote carries: the merge's (the kept edit's,
    the later of two merged), else this copy's."""
    return outcome.edited if outcome is not None and outcome.edited else mtime


def _base_by_hash(
    base: bytes | None, rec: Record | None, ours: bytes, theirs: bytes
) -> bytes | None:
    """`base`, or for a record without its content (after a purge, see forget.republish):
    the side whose content it names did not change, so it is the base."""
    if base is None and rec is not None:
        for side in (theirs, ours):
            if sha256(side) == rec.sha:
                return side
    return base


def _without_record(name: str, outcome: MergeResult, ours: bytes, theirs: bytes) -> MergeResult:
    """A merge on a device that synced before but holds no record of this file (records.json
    moved aside, as memsync advises for a damaged one): with no base, a line one side removed
    reads as a line the other side added, and the union brings it back. Unless the merge
    already reports a conflict, it is reported as one, so the user can remove it again.
    (The copies differ: equal ones are recorded without a merge.)"""
    if outcome.conflict:
        return outcome
    import dataclasses

    return dataclasses.replace(
        outcome,
        conflict=(
            f"merged with no record here of the copy last synced (records.json moved aside "
            f"or lost), so every line either copy of {name} had was kept: a line another "
            "device removed may be back; remove it again, then `memsync resolve`"
        ),
    )


def _merge_copies(
    name: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    mtime: float | None,
    theirs_mtime: float | None,
) -> MergeResult:
    """The merge of two copies, decided by memory/merge.py from the file's type (imported
    only when a file is merged: no-op syncs never need it)."""
    from memsync.memory.merge import merge

    return merge(name, base, ours, theirs, ours_mtime=mtime, theirs_mtime=theirs_mtime)
