"""`memsync status`: what a sync would do, plus what needs the user's attention."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from memsync.context.config import strip_query
from memsync.sync import planner
from memsync.sync.engine import MOVED, PURGED, TOMBSTONES, Engine
from memsync.sync.planner import Kind
from memsync.sync.project import moved_notice
from memsync.sync.remote_files import classify, held_why
from memsync.sync.scan import LocalScan, refuse_colliding_names
from memsync.util.errors import NotFound, Unreachable, UserError


@dataclass
class Status:
    memory_dir: str
    remote: str
    project: str
    memory_dir_reason: str = ""
    local_only: list[str] = field(default_factory=list)
    remote_only: list[str] = field(default_factory=list)
    modified_local: list[str] = field(default_factory=list)
    modified_remote: list[str] = field(default_factory=list)
    modified_both: list[str] = field(default_factory=list)
    deleted_local: list[str] = field(default_factory=list)
    deleted_remote: list[str] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)  # foreign blobs, never fetched
    kept_local: dict[str, str] = field(default_factory=dict)  # by the user's choice: no error
    in_sync: int = 0
    last_sync: float | None = None
    last_interrupted: float | None = None  # a later run cut short (Ctrl-C, SIGTERM)
    remote_error: str | None = None
    encryption: str = ""  # whether the remote is encrypted, and to how many devices
    sync_enabled: bool = True
    notices: list[str] = field(default_factory=list)  # purge, unfinished forget, quarantine
    memory_dir_lost: bool = False  # missing or empty while files were synced from it
    remote_lost: int = 0  # the remote is empty, but this device synced this many files with it
    project_note: str = ""  # the git origin differs from the name the project keeps
    index_warning: str = ""  # MEMORY.md is past what Claude Code loads (index_limit.py)

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        if self.refused:  # a name refused for a secret in it is printed masked
            from memsync.privacy.gate import shown_name

            doc["refused"] = {shown_name(n): why for n, why in self.refused.items()}
        return doc


_BUCKET = {
    (Kind.UPLOAD, False): "local_only",
    (Kind.UPLOAD, True): "modified_local",
    (Kind.DOWNLOAD, False): "remote_only",
    (Kind.DOWNLOAD, True): "modified_remote",
    (Kind.MERGE, False): "modified_both",
    (Kind.MERGE, True): "modified_both",
    (Kind.DELETE_REMOTE, True): "deleted_local",
    (Kind.DELETE_LOCAL, True): "deleted_remote",
}


@dataclass
class _RemoteView:
    """What the remote listing said: its memory files, and what it asks the user to know."""

    etags: dict[str, str] = field(default_factory=dict)
    purged: bool = False
    marker: dict | None = None  # the blocking purge marker, when there is one
    tombstones: bool = False  # a tombstone file this device has not read yet
    foreign: bool = False  # another project's memory is under this name: sync refuses


BUDGET = 10.0  # seconds `status` waits for the remote: a look, not a transfer


def status(engine: Engine) -> Status:
    """What differs and what needs attention; the remote is asked for at most BUDGET seconds,
    then said to be unreachable."""
    if engine.ctx.sync_enabled:
        engine.store.deadline = time.monotonic() + BUDGET
    result = _start(engine)
    local = engine.scan_local()
    _read_local(engine, local, result)
    from memsync.context.builtin_sync import stand_aside

    aside = stand_aside(engine.ctx)
    if aside:  # memsync does not sync this folder: said first, the rest as before
        result.notices.append(aside)
    seen = _read_remote(engine, result, set(local.content.hashes))
    if engine.ctx.sync_enabled:  # what the remote cannot hold is refused, as the upload would
        records = engine.state.records
        for name, sha in sorted(local.content.hashes.items()):
            synced = records.get(name)
            if name in result.refused or (synced is not None and synced.sha == sha):
                continue  # an unchanged file: the remote held it
            why = engine.store.refuses(name, local.content[name])
            if why is not None:
                result.refused[name] = why
    _encryption(engine, result)
    if (
        not engine.ctx.sync_enabled
        or result.remote_lost
        or (result.remote_error and not seen.etags)
        or seen.foreign
        or seen.purged
    ):
        # the remote was not asked, or holds nothing of this project's to show (another
        # project's memory, a purge: the notice says so): only local changes show
        seen.etags = {n: r.etag for n, r in engine.state.records.items()}
    actions = _sort_actions(engine, local, seen.etags, result)
    hashes = local.content.hashes
    _add_notices(engine, seen, set(hashes), result)
    if seen.purged or engine.state.meta.purged:
        result.memory_dir_lost = False  # no pull brings it back: the purge notice says why
    acted = {a.name for a in actions} | set(result.refused)
    records = engine.state.records
    purged = seen.purged or bool(engine.state.meta.purged)
    # an empty remote holds none of them, whatever was assumed; a purged one syncs none
    if not (result.remote_lost or purged):
        result.in_sync = len([n for n in hashes if n not in acted and n in records])
    return result


def _encryption(engine: Engine, result: Status) -> None:
    """The remote's encryption, as the listing settled it, and the files on an encrypted
    remote outside its data key (never synced until a person folds them in)."""
    from memsync.stores.crypt import CryptStore

    store = engine.store
    if not isinstance(store, CryptStore) or result.remote_error:
        return
    result.encryption = store.encryption()
    strays = store.stray_names()
    if strays:
        result.notices.append(
            f"{len(strays)} file(s) on the encrypted remote are not sealed under its data key "
            f"(untrusted, not synced): {', '.join(strays)}; check each and run `memsync keys "
            "init --adopt NAME` to fold it in"
        )


def _start(engine: Engine) -> Status:
    """The project's settings: where the memory is, where it syncs, under which name."""
    ctx = engine.ctx
    result = Status(
        memory_dir=str(ctx.memory_dir),
        memory_dir_reason=ctx.memory_dir_reason,
        remote=strip_query(ctx.remote),
        project=ctx.project,
        sync_enabled=ctx.sync_enabled,
    )
    if ctx.other_origin:
        from memsync.context.identity import origin_note
        from memsync.sync.project import shares_dir

        result.project_note = origin_note(ctx.identity, shares_dir(ctx, engine.store))
    return result


def _read_local(engine: Engine, local: LocalScan, result: Status) -> None:
    """What this device knows without asking the remote."""
    state = engine.state
    result.refused, result.kept_local = local.split_refused()
    result.memory_dir_lost = engine.memory_dir_lost(local)
    result.conflicts = state.conflicts.as_json()
    result.queued = state.pending
    result.last_sync = state.meta.last_sync
    result.last_interrupted = state.meta.last_interrupted
    from memsync.memory.index_limit import warning_for

    result.index_warning = warning_for(engine.ctx.memory_dir) or ""


def _read_remote(engine: Engine, result: Status, local_names: set[str]) -> _RemoteView:
    """One listing of the remote (when sync is on); an error is reported, not raised."""
    seen = _RemoteView()
    if not engine.ctx.sync_enabled:
        return seen
    state = engine.state
    try:
        listing = engine.store.list()
        try:
            engine.confirm_project(listing)
        except UserError as exc:  # another project's memory: none of its names is shown
            result.notices.append(f"sync is refused here: {exc}")
            seen.foreign = True
            return seen
        if PURGED in listing:
            from memsync.sync.tombstones import blocking_purge

            seen.marker = blocking_purge(engine, listing[PURGED].etag)
            seen.purged = seen.marker is not None
        if MOVED in listing:  # a device moved the memory under the origin's name
            moved = moved_notice(engine.ctx, engine.store)
            if moved:
                result.notices.append(moved)
        stone = listing.get(TOMBSTONES)
        seen.tombstones = stone is not None and stone.etag != state.meta.tombstones_etag
        files = classify(listing, state.refused_remote)
        result.refused.update(files.unsafe)
        for name, reason in files.held.items():  # as a sync reports them
            mine = name in state.records or name in local_names
            (result.refused if mine else result.ignored)[name] = held_why(reason, mine)
        result.ignored.update(files.ignored)
        seen.etags = {key: entry.etag for key, entry in files.memory.items()}
        if not listing and state.records:  # an unmounted share: sync refuses, deletes nothing
            result.remote_lost = len(state.records)
    except NotFound:
        if state.records:
            result.remote_lost = len(state.records)
        else:
            result.remote_error = f"the remote does not exist yet; {engine.store.create_advice()}"
    except Unreachable as exc:
        result.remote_error = str(exc)
    return seen


def _sort_actions(
    engine: Engine, local: LocalScan, remote: dict[str, str], result: Status
) -> list[planner.Action]:
    """Plan the sync and file each planned action under the list it shows in."""
    records = engine.state.records
    result.refused.update(refuse_colliding_names(local, records, remote))
    skip = set(local.refused) | set(result.refused)  # as a sync: neither side of these changes
    actions = planner.plan(dict(local.content.hashes), remote, records, skip=skip)
    for action in actions:
        bucket = _BUCKET.get((action.kind, action.name in records))
        if bucket:
            getattr(result, bucket).append(action.name)
    return actions


def _add_notices(engine: Engine, seen: _RemoteView, names: set[str], result: Status) -> None:
    """A purge, an unfinished forget, quarantined edits, and tombstones not yet read."""
    state = engine.state
    if seen.purged or state.meta.purged or state.meta.quarantined or engine.forgets_pending():
        from memsync.admin.forget import notices

        result.notices += notices(engine, seen.marker)
        state.save_meta()  # quarantined edits the user has dealt with are no longer listed
    if seen.tombstones:
        from memsync.sync.tombstones import incoming

        result.notices += incoming(engine, names | set(state.records))
