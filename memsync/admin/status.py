"""`memsync status`: what a sync would do, plus what needs the user's attention."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memsync.context.config import strip_query
from memsync.sync import planner
from memsync.sync.engine import (
    MOVED,
    PURGED,
    TOMBSTONES,
    Engine,
    refuse_colliding_names,
)
from memsync.sync.planner import Kind
from memsync.sync.project import moved_notice
from memsync.sync.remote_files import classify
from memsync.util.errors import NotFound, Unreachable


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
    sync_enabled: bool = True
    notices: list[str] = field(default_factory=list)  # purge, unfinished forget, quarantine
    memory_dir_lost: bool = False  # missing or empty while files were synced from it
    project_note: str = ""  # the git origin differs from the name the project keeps

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def clean(self) -> bool:
        pending = self.local_only + self.remote_only + self.modified_local + self.modified_remote
        return not (
            pending
            or self.modified_both
            or self.deleted_local
            or self.deleted_remote
            or self.conflicts
            or self.queued
            or self.refused
            or self.remote_error
            or self.notices
            or self.memory_dir_lost
        )


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


def status(engine: Engine) -> Status:
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

        result.project_note = origin_note(ctx.identity)
    state = engine.state
    local = engine.scan_local()
    result.refused, result.kept_local = local.split_refused()
    result.memory_dir_lost = engine.memory_dir_lost(local)
    result.conflicts = state.conflicts
    result.queued = state.pending
    result.last_sync = state.meta.get("last_sync")
    result.last_interrupted = state.meta.get("last_interrupted")
    hashes = dict(local.content.hashes)
    remote: dict[str, str] = {}
    purged = tombstones = False
    marker: dict | None = None
    if ctx.sync_enabled:
        try:
            listing = engine.store.list()
            if PURGED in listing:
                from memsync.sync.tombstones import blocking_purge

                marker = blocking_purge(engine, listing[PURGED].etag)
                purged = marker is not None
            if MOVED in listing:  # a device moved the memory under the origin's name
                moved = moved_notice(ctx, engine.store)
                if moved:
                    result.notices.append(moved)
            stone = listing.get(TOMBSTONES)
            tombstones = stone is not None and stone.etag != state.meta.get("tombstones_etag")
            files = classify(listing, state.refused_remote)
            result.refused.update(files.unsafe)
            result.ignored.update(files.ignored)
            remote = {key: entry.etag for key, entry in files.memory.items()}
        except NotFound:
            result.remote_error = "the remote does not exist yet (a push creates it)"
        except Unreachable as exc:
            result.remote_error = str(exc)
    if not ctx.sync_enabled or (result.remote_error and not remote):
        # the remote was not asked: assume it unchanged, so only local changes show
        remote = {n: r.etag for n, r in state.records.items()}
    result.refused.update(refuse_colliding_names(local, state.records, remote))
    actions = planner.plan(hashes, remote, state.records, skip=local.refused)
    for action in actions:
        bucket = _BUCKET.get((action.kind, action.name in state.records))
        if bucket:
            getattr(result, bucket).append(action.name)
    if purged or state.meta.keys() & {"purged", "forgetting", "quarantined"}:
        from memsync.privacy.forget import notices

        result.notices += notices(engine, marker)
        state.save_meta()  # quarantined edits the user has dealt with are no longer listed
    if tombstones:
        from memsync.privacy.forget import incoming

        result.notices += incoming(engine, set(hashes) | set(state.records))
    acted = {a.name for a in actions}
    result.in_sync = len([n for n in hashes if n not in acted and n in state.records])
    return result
