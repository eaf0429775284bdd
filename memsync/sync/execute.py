"""Carrying a plan out: each action (upload, download, delete on either side) run on the
transfer threads, then the queue and the records settled. A conditional write that loses a
race becomes a merge (merging.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from memsync.context.config import strip_query
from memsync.privacy.gate import check_inbound
from memsync.sync import localswap, merging, planner
from memsync.sync.planner import Action, Kind, renames_in_two_steps
from memsync.sync.scan import Run, mtime_of
from memsync.util.errors import (
    NotFound,
    PreconditionFailed,
    RefusedFile,
    StoreError,
    Unholdable,
    Unreachable,
    UserError,
    describe_os_error,
)
from memsync.util.fsutil import read_if_there, sha256

if TYPE_CHECKING:
    from memsync.sync.engine import Engine
    from memsync.sync.result import SyncResult


def carry_out(
    engine: Engine,
    result: SyncResult,
    run: Run,
    deadline: float | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Execute the plan (deletions and renames in their own step first); interrupted,
    the pushes not done are queued, so that even a `push FILE` (which looks only at its
    files and the queue) sends them next time."""
    actions, records = run.actions, engine.state.records
    new = [a.name for a in actions if a.kind is Kind.DOWNLOAD and a.name not in run.local_hashes]
    engine.durability.land(sorted(new), engine.state)
    engine.came_back = set()
    # MEMORY.md as it was, for the index line of a file an edit brings back: read now only
    # when the plan says one comes back (the index may be merged before it is uploaded),
    # else when one does (see Engine.came_back_here)
    engine.index_before = None
    engine.index_read = any(
        a.name in records
        and (
            (a.kind is Kind.UPLOAD and a.name not in run.remote)
            or (a.kind is Kind.DOWNLOAD and a.name not in run.local_hashes)
        )
        for a in actions
    )
    if engine.index_read:
        engine.index_before = engine.index_text()
    try:
        for batch in renames_in_two_steps(actions):
            execute(engine, result, batch, run, deadline, progress)
    except BaseException:
        done = settled(engine, result, run.local_hashes)
        engine.state.queue(
            [
                a.name
                for a in actions
                if a.kind in planner.PUSH_KINDS and a.kind is not Kind.FORGET and a.name not in done
            ]
        )
        raise
    engine.publish_conflicts(result)


def settle(engine: Engine, result: SyncResult, run: Run, pending: list[str], full: bool) -> None:
    """The queue, the refused files and the time of the last full success, after a run."""
    done = settled(engine, result, run.local_hashes)
    engine.state.unqueue([n for n in pending if n in done or n not in run.local_hashes])
    if result.offline:
        queued = [a.name for a in run.actions if a.kind in planner.PUSH_KINDS]
        engine.state.queue([n for n in queued if n not in done])
        result.queued = engine.state.pending
    engine.state.set_refused(run.local.split_refused()[0])
    if not result.offline and not result.errors and result.skipped == []:
        engine.state.meta.last_sync = time.time()
        engine.state.meta.last_interrupted = None
        if engine.state.conflicts and full:
            # a file deleted on every side takes its conflicts with it (each device
            # clears its own: there is nothing left to resolve)
            remote = set(run.remote) - set(result.deleted_remote)
            for name in {c.file for c in engine.state.conflicts} - set(engine.state.records):
                if name not in remote and not engine.local_path(name).exists():
                    engine.state.conflicts.resolve(name)
            if any(c.marks for c in engine.state.conflicts):
                from memsync.sync.conflicts import outlived

                outlived(engine.state.conflicts, engine.read_local)


def settled(engine: Engine, result: SyncResult, local_hashes: dict[str, str]) -> set[str]:
    """The files this run left in sync: those it sent, merged or deleted, and those found
    identical on both sides (a PUT that landed as an earlier run was cut off), which are
    only recorded: none of them is still waiting to be pushed."""
    done = set(result.uploaded + result.merged + result.deleted_remote)
    with engine._lock:
        done.update(
            name
            for name, sha in local_hashes.items()
            if (rec := engine.state.records.get(name)) is not None and rec.sha == sha
        )
    return done


def execute(engine: Engine, result, actions, run, deadline, progress) -> None:
    done = 0
    total = len(actions)

    def one(action: Action) -> None:
        nonlocal done
        if deadline is not None and time.monotonic() > deadline:
            with engine._lock:
                result.skipped.append(action.name)
            return
        if result.offline:
            # one request already spent its retries on an unreachable remote: the rest
            # would each wait as long; the pushes among them are queued below
            return
        try:
            apply(engine, result, action, run)
        except Unreachable as exc:
            with engine._lock:
                result.offline = str(exc)
        except Unholdable as exc:  # this device's copy, refused before it was sent
            with engine._lock:
                result.refused[action.name] = exc.reason
        except RefusedFile as exc:
            with engine._lock:
                result.refused_remote[action.name] = exc.reason
                etag = run.remote.get(action.name)
                if etag is not None:  # remembered: not fetched again until it changes
                    engine.state.refuse_remote(action.name, etag, exc.reason)
        except OSError as exc:  # a write here failed: say which file and what to do
            with engine._lock:
                where = None if exc.filename else engine.ctx.memory_dir / action.name
                result.errors[action.name] = describe_os_error(exc, where)
        except (StoreError, UserError) as exc:
            with engine._lock:
                result.errors[action.name] = str(exc)
        finally:
            with engine._lock:
                done += 1
                if progress is not None:
                    progress(done, total)

    workers = worker_count(engine, len(actions))
    if workers <= 1:
        for action in actions:
            one(action)
    else:
        from memsync.sync.transfers import run_daemons

        run_daemons(one, actions, workers, lambda: worker_count(engine, len(actions)))
    for attr in ("uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"):
        getattr(result, attr).sort()


def warm_for(engine: Engine, actions: list[Action]) -> None:
    """A fresh pull whose manifest, read beside the listing, took a slow network's round
    trip opens the connections of the widened transfers now, while the first ones run:
    when the run widens (`worker_count`, once eight requests are timed) they are ready, not a
    handshake away. One request is only a guess (on a loopback Azurite, which serves one
    request at a time, it can wait behind a long listing), so it opens idle connections
    and no more: a wrong guess costs a few milliseconds of handshakes."""
    took = None if engine._manifest_ahead is None else engine._manifest_ahead.took
    if took is None:
        return
    from memsync.sync.transfers import MAX_WORKERS, SLOW_ROUND_TRIP

    base = int(engine.ctx.setting("concurrency"))
    if took >= SLOW_ROUND_TRIP and len(actions) > base:
        engine.store.warm(min(MAX_WORKERS, len(actions)) - base)


def worker_count(engine: Engine, count: int) -> int:
    """Parallel transfers for `count` actions: the `concurrency` setting, widened over a
    slow network so the run is a few round trips, not count / concurrency of them, and one
    at a time on this machine's disk, where threads only take turns at the interpreter."""
    from memsync.sync.transfers import LOCAL_READ, MAX_WORKERS, SLOW_ROUND_TRIP

    base = int(engine.ctx.setting("concurrency"))
    rtt = engine.store.round_trip
    if rtt is not None and rtt < LOCAL_READ:
        return 1
    if count <= base:
        return count
    ahead = engine._manifest_ahead
    if rtt is None and ahead is not None and ahead.took is not None:
        rtt = ahead.took / 2  # until requests are timed: the manifest's connect and GET
    if rtt is not None and rtt >= SLOW_ROUND_TRIP:
        return min(MAX_WORKERS, count)
    return base


def apply(engine: Engine, result: SyncResult, action: Action, run: Run) -> None:
    name = action.name
    if action.kind is Kind.UPLOAD:
        ours, etag = run.local.content[name], run.remote.get(name)
        upload(engine, result, name, ours, etag, run.mtime(name), scanned=True)
    elif action.kind is Kind.DOWNLOAD:
        download(engine, result, name, run.local_hashes.get(name))
    elif action.kind is Kind.MERGE:
        merging.merge(engine, result, name, run.local.content[name], run.mtime(name))
    elif action.kind is Kind.DELETE_REMOTE:
        delete_remote(engine, result, name)
    elif action.kind is Kind.DELETE_LOCAL:
        delete_local(engine, result, name, run.local_hashes.get(name))
    elif action.kind is Kind.FORGET:
        with engine._lock:
            engine.state.forget(name)


def upload(
    engine: Engine,
    result: SyncResult,
    name: str,
    ours: bytes,
    remote_etag: str | None,
    mtime: float | None = None,
    *,
    scanned: bool = False,
) -> None:
    """Upload with the file's mtime, the time of its edit here, kept with the object. Content
    the scan did not check (`scanned`: read since, or made by this run) passes the gate first:
    refused, it stays here and is reported, as the scan reports a file."""
    if not scanned and merging.stays_here(engine, result, name, ours):
        return
    try:
        if remote_etag is None:
            if name in engine.state.records:
                engine.came_back_here(name)  # synced, gone on the remote, edited here
            elif engine._records_run and engine._forgotten_since(name):
                # `push FILE` of a new file while the tombstone list moved: the listing
                # sync that follows learns the new forgets before anything goes up
                return
            try:
                etag = engine.store.create(name, ours, mtime)
            except NotFound:  # a push that trusted its records found no container
                if not engine.creates_remote:
                    raise UserError(
                        f"the remote {strip_query(engine.ctx.remote)} does not exist yet; "
                        f"{engine.store.create_advice()}"
                    ) from None
                create_remote(engine, result)
                etag = engine.store.create(name, ours, mtime)
        else:
            etag = engine.store.replace(name, ours, remote_etag, mtime)
    except PreconditionFailed:
        if engine._purge_blocked(result, [name]) or engine._forgotten_since(name):
            return
        merging.merge(engine, result, name, ours, mtime)  # `push FILE` too: the edit times decide
        return
    engine.record(name, etag, ours)
    with engine._lock:
        result.uploaded.append(name)


def create_remote(engine: Engine, result: SyncResult) -> None:
    """Create the remote the listing (or a write) found missing, and say so: a remote is
    never made without a sentence naming it, so a typo in its name is seen at once."""
    engine.store.ensure()
    with engine._lock:
        result.notes.append(created_remote(engine.ctx.remote))


def created_remote(remote: str) -> str:
    return (
        f"created the remote {strip_query(remote)}, which did not exist: if that name is a "
        "typo, correct the remote setting and sync again"
    )


def download(engine: Engine, result: SyncResult, name: str, expected_sha: str | None) -> None:
    try:
        theirs, etag, edited = engine.store.fetch(name)
    except NotFound:
        return  # deleted meanwhile; the next sync sees it
    check_inbound(name, theirs, engine.max_bytes)
    path = engine.local_path(name)
    current = read_if_there(path)
    if current is not None and sha256(current) != expected_sha:
        merging.merge(
            engine, result, name, current, mtime_of(path)
        )  # edited here while we were busy
        return
    if current != theirs:
        if current is not None:
            engine.keep(name, current, "replaced by a newer version from the remote")
        elif (rec := engine.state.records.get(name)) is not None and rec.etag != etag:
            engine.came_back_here(name)  # deleted here, edited on another device
        sync = name not in engine.durability.landing
        landed = engine.replace_local(path, theirs, current, sync=sync, edited=edited)
        if landed is not None:
            merging.merge(
                engine, result, name, landed, mtime_of(path)
            )  # written here in the meantime
            return
        with engine._lock:
            result.downloaded.append(name)
    engine.record(name, etag, theirs)


def delete_remote(engine: Engine, result: SyncResult, name: str) -> None:
    rec = engine.state.records[name]
    try:
        engine.store.delete(name, rec.etag)
    except NotFound:
        pass
    except PreconditionFailed:
        with engine._lock:
            result.notes.append(
                f"{name} was deleted here but edited on another device; kept the edit"
            )
        download(engine, result, name, None)
        return
    with engine._lock:
        engine.state.forget(name)
        result.deleted_remote.append(name)


def delete_local(engine: Engine, result: SyncResult, name: str, expected_sha: str | None) -> None:
    current = engine.read_local(name)
    if current is not None:
        if sha256(current) != expected_sha:
            upload(engine, result, name, current, None, mtime_of(engine.local_path(name)))
            return
        engine.keep(name, current, "deleted on another device")
        landed = localswap.remove(engine.local_path(name), current)
        if landed is not None:  # written here meanwhile: the edit beats the deletion
            now = engine.read_local(name)
            if now is not None and now != landed:
                engine.keep(name, landed, "written here during a sync, then again")
            mtime = mtime_of(engine.local_path(name))
            upload(engine, result, name, now if now is not None else landed, None, mtime)
            return
    with engine._lock:
        engine.state.forget(name)
        result.deleted_local.append(name)
