"""Before anything moves: the memory dir looked at (a lost one restored or refused), the
remote listed and what it says taken in (engine._take_in_listing), and the plan of the run
made from both, or from the records alone for a `push FILE` of known files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memsync.context.identity import MANIFEST
from memsync.memory.names import fold
from memsync.sync import execute, planner, scan
from memsync.sync.mode import Mode
from memsync.sync.planner import Action, Kind
from memsync.sync.remote_files import classify, held_why
from memsync.sync.scan import Run
from memsync.util.errors import GuardError, NotFound, Unreachable, UserError
from memsync.util.fsutil import sweep_temp_files

if TYPE_CHECKING:
    from memsync.context.config import Context
    from memsync.sync.engine import Engine
    from memsync.sync.result import SyncResult
    from memsync.sync.scan import LocalScan


def look_here(
    engine: Engine,
    result: SyncResult,
    mode: Mode,
    names: list[str] | None,
    allow: dict[str, set[str]],
) -> LocalScan:
    """The memory dir's scan; a lost memory dir restored first (see memory_dir_lost)."""
    local = engine.scan_local(allow)
    # the state dir only on full runs: `push FILE` after each memory write stays lean
    swept = local.swept + (sweep_temp_files(engine.ctx.state_dir) if names is None else 0)
    if swept:
        result.notes.append(f"Removed {swept} temp file(s) left by an interrupted write.")
    result.refused, result.kept_local = local.split_refused()
    for name in sorted(n for n in result.kept_local if n in engine.state.records):
        # marked after it was synced: what stays here from now on is the new content only
        result.notes.append(
            f"{name} was synced before it was marked 'sensitivity: high': that copy is still "
            f"on the remote and on the other devices; `memsync forget {name}` takes every "
            "copy away, this one too: copy it aside first and put it back after (written "
            "after the forget, it is new, and stays here)"
        )
    # `push FILE` too (the PostToolUse hook): once the agent's first new file in a lost
    # folder were recorded, the folder would no longer look lost, and the next push
    # would delete everything the folder held from the remote
    if engine.memory_dir_lost(local):
        restore_lost_dir(engine, result, mode)
    return local


def from_records(
    engine: Engine, result: SyncResult, local: LocalScan, names: list[str], pending: list[str]
) -> Run:
    """`push FILE`: trust the records instead of listing, so the happy path is one
    conditional request a file."""
    records = engine.state.records
    result.refused.update(scan.refuse_colliding_names(local, records))
    remote = {n: r.etag for n, r in records.items()}
    only = set(names) | set(pending)
    result.refused = {n: r for n, r in result.refused.items() if n in only}
    result.kept_local = {n: r for n, r in result.kept_local.items() if n in only}
    local_hashes = dict(local.content.hashes)
    actions = planner.plan(
        local_hashes, remote, records, kinds=planner.PUSH_KINDS, only=only, skip=local.refused
    )
    return Run(local, local_hashes, remote, {}, actions)


def from_listing(
    engine: Engine,
    result: SyncResult,
    mode: Mode,
    local: LocalScan,
    names: list[str] | None,
    pending: list[str],
    force: bool = False,
) -> Run | None:
    """List the remote and plan `mode` against it; None when the remote cannot be reached
    (what the run was for is queued). `push --force` also merges the remote copies this
    device refused before, and those of the files it names that changed there: a copy no
    device can read is replaced by this device's (merging.replace_unreadable)."""
    records = engine.state.records
    engine._manifest_ahead = None
    if not records:
        # a fresh device fetches or sends everything: open the transfers' connections
        # while the listing is in flight; a fresh pull reads the project's manifest
        # alongside the listing too, not one round trip after it
        if mode is Mode.PULL:
            from memsync.sync.transfers import GetAhead

            engine._manifest_ahead = GetAhead(engine.store, MANIFEST)
        engine.store.warm(int(engine.ctx.setting("concurrency")))
    listing = list_remote(engine, result, mode, dict(local.content.hashes), records, pending)
    if listing is None:
        return None
    if not listing and records:
        raise GuardError(remote_lost_message(engine, len(records)))
    engine._take_in_listing(listing, local, result, mode)
    local_hashes = dict(local.content.hashes)
    files = classify(listing, engine.state.refused_remote)
    result.refused_remote.update(files.unsafe)
    mended: set[str] = set()
    if mode is Mode.PUSH and force:
        here = local.content.hashes
        mended = {n for n in files.held if n in here and (names is None or n in names)}
        for name in mended:
            files.memory[name] = listing[name]
            del files.held[name]
        for name in names or ():
            entry, record = files.memory.get(name), records.get(name)
            if name in here and entry is not None and (record is None or entry.etag != record.etag):
                mended.add(name)
    for name, reason in files.held.items():  # a copy refused before, left alone until it changes
        mine = name in records or name in local.content.hashes
        report = result.refused_remote if mine else result.ignored_remote
        report[name] = held_why(reason, mine)
    result.ignored_remote.update(files.ignored)
    engine.state.keep_refused_remote(files.held)
    remote = {key: entry.etag for key, entry in files.memory.items()}
    entries = {key: entry.modified for key, entry in files.memory.items()}
    result.refused.update(scan.refuse_colliding_names(local, records, remote))
    named = None if names is None else {*names, *pending}
    if named is not None:
        # a letter-case rename pushed by its new name (the FileChanged or PostToolUse
        # hook) takes the old name off the remote in the same run, as a sync would:
        # another device's edit of the old name in between would bring both names back
        folds = {fold(n) for n in named}
        here = local.content.hashes
        named |= {n for n in records if fold(n) in folds and n not in here}
        named |= {n for n in here if fold(n) in folds and n not in records}
    if mode is Mode.PUSH and named is not None:
        # `push FILE` of a new file: it speaks of those files only, as when it plans
        # from the records
        result.refused = {n: r for n, r in result.refused.items() if n in named}
        result.kept_local = {n: r for n, r in result.kept_local.items() if n in named}
    skip = set(local.refused) | set(result.refused_remote)
    actions, other_way = planner.for_mode(
        mode,
        local_hashes,
        remote,
        records,
        names=names,
        named=named,
        pending=pending,
        skip=skip,
    )
    if other_way is not None:
        result.other_way = other_way
    if mended:
        actions = [a for a in actions if a.name not in mended]
        actions += [Action(Kind.MERGE, n, "push --force: merged or replaced") for n in mended]
    execute.warm_for(engine, actions)
    return Run(local, local_hashes, remote, entries, actions)


def list_remote(engine: Engine, result, mode, local_hashes, records, pending):
    try:
        return engine.store.list()
    except NotFound:
        if records:  # not made again here: it may be an unmounted share's mount point
            raise GuardError(remote_lost_message(engine, len(records))) from None
        if mode is Mode.PULL or not engine.creates_remote:
            raise UserError(
                f"the remote {_display_remote(engine.ctx)} does not exist yet; "
                f"{engine.store.create_advice()}"
            ) from None
        try:
            execute.create_remote(engine, result)
        except Unreachable as exc:
            go_offline(engine, result, str(exc), local_hashes, records)
            return None
        return {}
    except Unreachable as exc:
        go_offline(engine, result, str(exc), local_hashes, records)
        return None


def remote_lost_message(engine: Engine, count: int) -> str:
    """An empty remote where this device synced files: an unmounted share (its mount
    point is an empty folder), a container emptied or made anew. Syncing would delete
    every file here; nothing is done until the user says which it is."""
    return (
        f"the remote {_display_remote(engine.ctx)} is empty, but this device synced {count} "
        "file(s) with it; nothing was changed here or there: if it is a drive or a share, "
        "mount it; if it was emptied on purpose, `memsync push --republish` publishes this "
        "device's memory to it again"
    )


def go_offline(engine: Engine, result: SyncResult, reason: str, local_hashes, records) -> None:
    result.offline = reason
    changed = [n for n, h in local_hashes.items() if n not in records or records[n].sha != h]
    deleted = [n for n in records if n not in local_hashes]
    engine.state.queue(changed + deleted)
    result.queued = engine.state.pending


def restore_lost_dir(engine: Engine, result: SyncResult, mode: Mode) -> None:
    """A lost memory dir is restored by a pull and refused by a push or sync."""
    where = engine.ctx.memory_dir
    here = engine.scan_local().content.hashes if where.is_dir() else {}
    engine._restoring = scan.restore_lost_dir(result, mode, engine.state, where, here)


def count_singly(
    engine: Engine, result: SyncResult, mode: Mode, names: list[str] | None, force: bool
) -> None:
    """Keep the count `planner.refuse_mass_deletion` reads: `push FILE` deletions add to it, a
    full sync or push that went through starts it again."""
    meta = engine.state.meta
    if names is not None and mode is Mode.PUSH:
        if result.deleted_remote and not force:  # forced: a command's (compaction's) own
            meta.deleted_singly = sorted({*meta.deleted_singly, *result.deleted_remote})
    elif mode in (Mode.SYNC, Mode.PUSH) and not result.offline and not result.errors:
        meta.deleted_singly = []


def _display_remote(ctx: Context) -> str:
    from memsync.sync.project import display_remote  # only for these messages

    return display_remote(ctx)
