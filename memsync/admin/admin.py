"""Administration of a remote: list it, prune old files, export/import archives (migrate is
in admin/migrate.py).

Nothing here prints or exits: every function returns a dataclass or raises a MemsyncError.
Every remote write is conditional (create-only, or replace/delete with If-Match on an ETag
from a listing), so nothing is clobbered that changed since it was looked at.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import tarfile
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Literal

from memsync.admin.forget import audit
from memsync.context.config import strip_query
from memsync.memory.frontmatter import FrontmatterError, decode, parse
from memsync.memory.index_links import INDEX, without_links
from memsync.memory.memtypes import TYPES, UNKNOWN, type_of
from memsync.privacy.gate import check_inbound, check_outbound
from memsync.stores.base import Entry, check_key
from memsync.sync.engine import PURGED, TOMBSTONES, Engine
from memsync.sync.execute import created_remote
from memsync.sync.forgotten import Forget, read_forgets, scrub_files
from memsync.sync.mode import Mode
from memsync.sync.scan import LocalScan
from memsync.sync.state import Record
from memsync.sync.walk import is_ignored
from memsync.util.errors import (
    AlreadyExists,
    KeptLocal,
    MemsyncError,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    Unholdable,
    UnsafeKey,
    UserError,
)
from memsync.util.fsutil import atomic_file, sha256

MANIFEST = "MANIFEST.json"
MANIFEST_VERSION = 1
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
DAY = 86400.0

Progress = Callable[[int, int], None]
SyncState = Literal[
    "in_sync",
    "modified_local",
    "modified_remote",
    "modified_both",
    "remote_only",
    "local_only",
    "deleted_local",
    "deleted_remote",
    "refused",
]

# (changed here, changed on the remote) since the last sync → the file's state
_BY_CHANGE: dict[tuple[bool, bool], SyncState] = {
    (False, False): "in_sync",
    (True, False): "modified_local",
    (False, True): "modified_remote",
    (True, True): "modified_both",
}


# --- helpers ------------------------------------------------------------------------------


def _type_name(name: str, data: bytes | None) -> str:
    """The memory type of a file: its frontmatter `type` when content is at hand, else its name."""
    meta = None
    if data is not None:
        try:
            meta = parse(decode(data)).meta
        except FrontmatterError:
            meta = None
    return type_of(name, meta).name


def _safe_name(name: str) -> str | None:
    """Why `name` may not be a memory file in an archive or a remote, or None if it may."""
    try:
        check_key(name)
    except UnsafeKey as exc:
        return str(exc)
    if name == MANIFEST:
        return f"{name!r} is reserved for the archive manifest"
    if name == TOMBSTONES or is_ignored(name):
        return f"{name!r} is a hidden, temporary or memsync-internal file"
    return None


def _remote_listing(
    engine: Engine, create: bool = False, notes: list[str] | None = None, must_exist: bool = False
) -> dict[str, Entry]:
    """The remote's memory files (internal, ignored and unsafe keys left out). `create`: for
    a command that writes (import, migrate): a missing container is made, with a sentence
    naming it in `notes`, but a purged project stays closed until `push --republish`, as for
    push. `must_exist`: a missing container is an error (a typo must not list as empty)."""
    store = engine.store
    try:
        listing = store.list()  # first: an unmounted folder remote is unreachable, not made
    except NotFound:
        engine.confirm_project({})  # a project moved or renamed: refused before anything is made
        if must_exist:
            from memsync.sync.project import display_remote

            raise UserError(
                f"the remote {display_remote(engine.ctx)} does not exist yet; "
                f"{store.create_advice()}"
            ) from None
        if not create:
            return {}
        listing = {}
        _create(engine, notes)
    else:
        engine.confirm_project(listing)
        if create and not store.exists():  # a folder remote's project folder: no remote made
            store.ensure()
    if create and PURGED in listing:
        from memsync.sync.tombstones import blocking_purge, purged_here

        marker = blocking_purge(engine, listing[PURGED].etag)
        if marker is not None:
            engine.state.meta.purged = marker
            engine.state.save_meta()
            raise purged_here(engine)
    return {k: e for k, e in listing.items() if _safe_name(k) is None}


def _create(engine: Engine, notes: list[str] | None) -> None:
    engine.store.ensure()
    if notes is not None:
        notes.append(created_remote(engine.ctx.remote))


def _tick(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


# --- ls -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteFile:
    """One memory file as `memsync ls` shows it."""

    name: str
    type: str
    size: int
    modified: float  # seconds since the epoch (remote time; local mtime for local-only files)
    state: SyncState
    etag: str | None = None  # None when the file is not on the remote
    detail: str = ""  # why a file is refused


def list_remote(engine: Engine, include_local: bool = True) -> list[RemoteFile]:
    """The remote's memory files with their sync state relative to this device, sorted by name.

    With `include_local`, files only this device has are listed too (state local_only,
    deleted_remote or refused). A file on both sides that was never synced here is compared by
    content (one GET) so that identical copies show as in_sync.
    """
    listing = _remote_listing(engine, must_exist=True)
    scan = engine.scan_local()
    names = set(listing)
    if include_local:
        names |= set(scan.content) | set(scan.refused)
    out: list[RemoteFile] = []
    for name in sorted(names):
        entry, local = listing.get(name), scan.content.get(name)
        if name in scan.refused:
            out.append(_refused_file(engine, scan, name, entry))
        elif entry is not None:
            state = _remote_state(engine, name, entry, local)
            kind = _type_name(name, local)
            out.append(RemoteFile(name, kind, entry.size, entry.modified, state, entry.etag))
        elif local is not None:
            state = _local_state(engine.state.records.get(name), local)
            modified = scan.mtimes.get(name, 0.0)
            out.append(RemoteFile(name, _type_name(name, local), len(local), modified, state))
    return out


def _refused_file(engine: Engine, scan: LocalScan, name: str, entry: Entry | None) -> RemoteFile:
    """A file this device's gate refuses to send, with why."""
    data = engine.read_local(name)
    size = entry.size if entry else len(data or b"")
    modified = entry.modified if entry else scan.mtimes.get(name, 0.0)
    etag = entry.etag if entry else None
    kind = _type_name(name, data)
    return RemoteFile(name, kind, size, modified, "refused", etag, scan.refused[name])


def _remote_state(engine: Engine, name: str, entry: Entry, local: bytes | None) -> SyncState:
    """A file on the remote, against this device's copy and its last sync. A copy on both
    sides that was never synced here is compared by content (one GET)."""
    rec = engine.state.records.get(name)
    if local is None:
        if rec is None:
            return "remote_only"
        return "deleted_local" if rec.etag == entry.etag else "modified_remote"
    if rec is None:
        try:
            theirs, _ = engine.store.get(name)
        except NotFound:
            theirs = None
        return "in_sync" if theirs == local else "modified_both"
    return _BY_CHANGE[(rec.sha != sha256(local), rec.etag != entry.etag)]


def _local_state(rec: Record | None, local: bytes) -> SyncState:
    """A file only this device has: new, or deleted or changed since its last sync."""
    if rec is None:
        return "local_only"
    return "deleted_remote" if rec.sha == sha256(local) else "modified_local"


# --- prune --------------------------------------------------------------------------------


@dataclass
class PruneResult:
    deleted: list[str] = field(default_factory=list)  # removed from the remote (or already gone)
    local_removed: list[str] = field(default_factory=list)  # local copies moved to history
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why it was kept
    index_lines: int = 0  # MEMORY.md lines that linked to the deleted files


def plan_prune(
    engine: Engine,
    older_than_days: int,
    type_name: str | None = None,
    now: float | None = None,
) -> list[str]:
    """Remote files older than `older_than_days` (of one type if given).

    A file's age is the date its content is about: the date in its name (a session digest's
    day, or the last day of its week, month or year), else its frontmatter `date` or
    `modified`; only a file with neither is judged by when it was last edited: the time this
    device's copy carries (memsync keeps a file's edit time with every copy, on every remote),
    or the remote's own time for a file this device does not hold. The index (MEMORY.md) is
    never planned: its lines go with the files they link to.
    """
    if older_than_days < 0:
        raise UserError(f"--older-than must be 0 days or more, not {older_than_days}")
    if type_name is not None and type_name not in TYPES and type_name != UNKNOWN.name:
        known = ", ".join(sorted([*TYPES, UNKNOWN.name]))
        raise UserError(f"there is no memory type {type_name!r}; the types are: {known}")
    cutoff = (time.time() if now is None else now) - older_than_days * DAY
    planned = []
    for name, entry in sorted(_remote_listing(engine).items()):
        data = engine.read_local(name)
        mtype = _type_name(name, data)
        if mtype == "unknown" and type_name is not None and data is None:
            data = _get(engine, name)
            mtype = _type_name(name, data)
        if mtype == "index":
            continue
        if type_name is not None and mtype != type_name:
            continue
        when = content_time(name, data)
        if when is None and data is None:
            data = _get(engine, name)
            when = content_time(name, data)
        if when is None:
            when = _edited(engine, name, entry.modified)
        if when < cutoff:
            planned.append(name)
    return planned


def _edited(engine: Engine, name: str, listed: float) -> float:
    """When `name` was last edited: this device's copy's time, else the listing's (a store
    whose listing cannot carry the edit time, as S3's and an encrypted one's, gives the upload
    time there)."""
    try:
        return engine.local_path(name).stat().st_mtime
    except OSError:
        return listed


def _get(engine: Engine, name: str) -> bytes | None:
    try:
        return engine.store.get(name)[0]
    except NotFound:
        return None


def content_time(name: str, data: bytes | None) -> float | None:
    """When a memory file's content is from (midnight UTC of its day), by the date in its
    name or frontmatter; None if it says nothing."""
    from memsync.retention.policy import digest_period

    period = digest_period(name)
    if period is not None:
        return _midnight(period.end)
    meta: Any = None
    if data is not None:
        try:
            meta = parse(decode(data)).meta
        except FrontmatterError:
            meta = None
    if not isinstance(meta, dict):
        return None
    nested = meta.get("metadata")
    for source in (meta, nested if isinstance(nested, dict) else {}):
        for key in ("date", "modified"):
            day = _day_of(source.get(key))
            if day is not None:
                return _midnight(day)
    return None


def _day_of(value: Any) -> date | None:
    if isinstance(value, date):  # YAML reads `2026-11-24` as a date (datetime is a date too)
        return date(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()


def prune(engine: Engine, names: Iterable[str]) -> PruneResult:
    """Delete `names` from the remote (If-Match on the listed ETag) and from this device,
    and the MEMORY.md lines linking to them.

    A local copy is kept in local history first, and each file gets one audit line (its name,
    never its content). A file edited here since its last sync, or changed on the remote since
    the listing, is skipped and reported. Other devices drop their unchanged copies, and the
    index lines, on their next sync.
    """
    result = PruneResult()
    wanted = sorted(set(names))
    for name in wanted:
        try:
            check_key(name)
        except UnsafeKey as exc:
            raise UserError(str(exc)) from None
    with engine.locked():
        listing = _remote_listing(engine)
        try:
            for name in wanted:
                _prune_one(engine, name, listing.get(name), result)
        finally:
            engine.state.save()
    if result.deleted:
        result.index_lines = _drop_index_lines(engine, result.deleted)
    return result


def _drop_index_lines(engine: Engine, names: list[str]) -> int:
    """Remove the MEMORY.md lines linking to `names` (brought up to date first) and push it;
    offline, the push is queued like any other."""
    path = str(engine.local_path(INDEX))
    with contextlib.suppress(MemsyncError):
        engine.run(Mode.SYNC, [path])
    with engine.locked():
        data = engine.read_local(INDEX)
        if data is None:
            return 0
        text, removed = without_links(data.decode("utf-8", "replace"), set(names))
        if not removed:
            return 0
        engine.state.keep(INDEX, data, "index lines of pruned files removed by memsync prune")
        engine.write_local(INDEX, text.encode("utf-8"))
        engine.state.save()
    with contextlib.suppress(MemsyncError):
        engine.run(Mode.PUSH, [path])
    return len(removed)


def _prune_one(engine: Engine, name: str, entry: Entry | None, result: PruneResult) -> None:
    rec = engine.state.records.get(name)
    local = engine.read_local(name)
    if entry is None and local is None:
        result.skipped[name] = "it is neither on the remote nor here"
        return
    theirs: bytes | None = None
    if entry is not None and (local is None or rec is None or rec.etag != entry.etag):
        # The remote copy is not the one this device holds: fetch it so history keeps it.
        try:
            theirs, etag = engine.store.get(name)
        except NotFound:
            entry = None
        else:
            if etag != entry.etag:
                result.skipped[name] = "it changed on the remote since it was listed"
                return
    if local is not None and (rec is None or rec.sha != sha256(local)) and theirs != local:
        result.skipped[name] = "it has local changes that were never synced"
        return
    if theirs is not None and theirs != local:
        engine.state.keep(name, theirs, "the remote copy, pruned by memsync prune")
    if local is not None:
        engine.state.keep(name, local, "pruned by memsync prune")
    remote_deleted = False
    if entry is not None:
        try:
            engine.store.delete(name, entry.etag)
            remote_deleted = True
        except NotFound:
            pass
        except PreconditionFailed:
            result.skipped[name] = "it changed on the remote since it was listed"
            return
    if local is not None:
        engine.local_path(name).unlink(missing_ok=True)
        result.local_removed.append(name)
    engine.state.forget(name)
    engine.state.unqueue([name])
    # remembered: a sync that brings it back (another device's edit beat the deletion) says so
    engine.state.meta.pruned[name] = time.time()
    result.deleted.append(name)
    audit(
        engine, "prune", file=name, remote_deleted=remote_deleted, local_removed=local is not None
    )


# --- export -------------------------------------------------------------------------------


@dataclass
class ExportResult:
    path: Path
    source: str
    files: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # left out of the archive, and why
    size: int = 0  # bytes of the archive


def _collect_remote(
    engine: Engine, progress: Progress | None
) -> tuple[dict[str, tuple[bytes, float]], dict[str, str]]:
    store = engine.store
    try:
        listing = store.list()
    except NotFound:
        raise UserError(
            f"the remote {store.url} does not exist yet; there is nothing to export"
        ) from None
    engine.confirm_project(listing)
    files: dict[str, tuple[bytes, float]] = {}
    refused: dict[str, str] = {}
    names = sorted(n for n in listing if not is_ignored(n))  # memsync's own files too
    for i, name in enumerate(names, start=1):
        why = _safe_name(name)
        if why is not None:
            if name != TOMBSTONES and not is_ignored(name):
                refused[name] = why
            _tick(progress, i, len(names))
            continue
        try:
            data, _ = store.get(name)
        except NotFound:
            _tick(progress, i, len(names))
            continue  # deleted meanwhile
        try:
            check_inbound(name, data, engine.max_bytes)
        except RefusedFile as exc:
            refused[name] = exc.reason
        else:
            files[name] = (data, listing[name].modified)
        _tick(progress, i, len(names))
    return files, refused


def _collect_local(
    engine: Engine, progress: Progress | None
) -> tuple[dict[str, tuple[bytes, float]], dict[str, str]]:
    if not engine.ctx.memory_dir.is_dir():
        raise UserError(
            f"the memory dir {engine.ctx.memory_dir} does not exist; there is nothing to "
            "export from here (pass --memory-dir, or export --from remote)"
        )
    scan = engine.scan_local()
    files: dict[str, tuple[bytes, float]] = {}
    refused = dict(scan.refused)
    names = sorted(scan.content)
    for i, name in enumerate(names, start=1):
        why = _safe_name(name)
        if why is not None:
            refused[name] = why
        else:
            files[name] = (scan.content[name], scan.mtimes.get(name, 0.0))
        _tick(progress, i, len(names))
    return files, refused


def _add_member(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(mtime)
    info.mode = 0o600
    info.type = tarfile.REGTYPE
    tar.addfile(info, io.BytesIO(data))


def export(
    engine: Engine,
    path: Path,
    source: Literal["remote", "local"] = "remote",
    progress: Progress | None = None,
) -> ExportResult:
    """Write the project's memory files to a tar.gz with a MANIFEST.json of their sha256s.

    source="remote" exports what the remote holds; "local" exports this device's memory dir
    (files the outbound checks refuse are left out, as a push would). Unsafe names are left out
    and reported. The archive is written atomically and is private (0600), into a folder that
    exists (as `tar` and `cp` write, never making folders); an archive of nothing is not written
    (a wrong project or remote is the likely cause), a user error.
    """
    target = Path(path).expanduser()
    if target.parent.exists() and not target.parent.is_dir():
        raise UserError(f"{target.parent} is a file, not a folder; give another path")
    if not target.parent.is_dir():
        raise UserError(
            f"the folder {target.parent} does not exist; create it first "
            f"(mkdir -p {shlex.quote(str(target.parent))}) or give another path"
        )
    if source == "remote":
        files, refused = _collect_remote(engine, progress)
    elif source == "local":
        files, refused = _collect_local(engine, progress)
    else:
        raise UserError(f"export source must be 'remote' or 'local', not {source!r}")
    if not files:
        where = (
            f"the remote {strip_query(engine.ctx.remote)}"
            if source == "remote"
            else f"the memory dir {engine.ctx.memory_dir}"
        )
        other = "--from local" if source == "remote" else "--from remote"
        option = "--remote" if source == "remote" else "--memory-dir"
        raise UserError(
            f"nothing to export: {where} holds no memory files of project "
            f"{engine.ctx.project!r}; check --project and {option} (or try {other}); "
            "no archive was written"
        )
    manifest = {
        "version": MANIFEST_VERSION,
        "project": engine.ctx.project,
        "files": {
            name: {"sha256": sha256(data), "size": len(data)}
            for name, (data, _) in sorted(files.items())
        },
    }
    if target.is_symlink():  # written where the link points, the link kept
        target = target.resolve()
    if target.is_dir():
        raise UserError(f"{target} is a folder; give the archive's file name")
    if target.exists() and not target.is_file():  # a device, a FIFO: never replaced by a file
        raise UserError(f"{target} is not a regular file; give the archive's file name")
    with (
        atomic_file(target) as raw,
        tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar,
    ):
        payload = json.dumps(manifest, indent=1, sort_keys=True).encode()
        _add_member(tar, MANIFEST, payload, time.time())
        for name, (data, mtime) in sorted(files.items()):
            _add_member(tar, name, data, mtime)
    return ExportResult(target, source, sorted(files), refused, target.stat().st_size)


# --- import -------------------------------------------------------------------------------


@dataclass
class ImportResult:
    path: Path
    project: str | None  # the project the archive was exported from
    copied: list[str] = field(default_factory=list)  # new on the remote
    replaced: list[str] = field(default_factory=list)  # overwritten (only with force)
    unchanged: list[str] = field(default_factory=list)  # already there with the same content
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why it was not written
    refused: dict[str, str] = field(default_factory=dict)  # the remote cannot hold it: why
    # left out because they were forgotten, and files imported without the lines that were:
    # an import never brings forgotten content back
    forgotten: list[str] = field(default_factory=list)
    scrubbed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. the remote was created


def _refused(archive: Path, member: str, why: str) -> UserError:
    return UserError(f"refused archive {archive}: member {member!r} {why}")


def _archive_members(archive: Path, max_bytes: int) -> dict[str, bytes]:
    """Every member of the tar.gz, each read up to its limit; refuses an unsafe name, a member
    that is not a regular file, a name twice, or a size over the limit."""
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for info in tar:
                name = info.name
                why = _safe_name(name) if name != MANIFEST else None
                if why is not None:
                    raise _refused(archive, name, f"has an unsafe name ({why})")
                if not info.isreg():
                    raise _refused(
                        archive, name, "is not a regular file (links and folders are refused)"
                    )
                if name in members:
                    raise _refused(archive, name, "appears more than once")
                limit = MAX_MANIFEST_BYTES if name == MANIFEST else max_bytes
                if info.size > limit:
                    raise _refused(
                        archive, name, f"is {info.size} bytes, over the {limit}-byte limit"
                    )
                fh = tar.extractfile(info)
                if fh is None:
                    raise _refused(archive, name, "cannot be read")
                members[name] = fh.read(limit + 1)
    except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error) as exc:
        raise UserError(f"refused archive {archive}: it is not a readable tar.gz ({exc})") from None
    return members


def _verify_member(archive: Path, name: str, spec: Any, data: bytes, max_bytes: int) -> None:
    """A member is what the manifest says (sha256, size) and a valid memory file."""
    if not isinstance(spec, dict) or not isinstance(spec.get("sha256"), str):
        raise _refused(archive, name, "has no sha256 in the manifest")
    if sha256(data) != spec["sha256"].lower():
        raise _refused(
            archive, name, "does not match its sha256 in the manifest (edited or corrupted)"
        )
    if spec.get("size") is not None and spec.get("size") != len(data):
        raise _refused(
            archive, name, f"is {len(data)} bytes but the manifest says {spec.get('size')}"
        )
    try:
        check_inbound(name, data, max_bytes)
    except RefusedFile as exc:
        raise _refused(archive, name, f"is not a valid memory file ({exc.reason})") from None


def read_archive(path: Path, max_bytes: int) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Open and fully verify an export: (manifest, files). Raises UserError naming the archive
    and the offending member on any unsafe name, non-file member, missing or extra file, size
    or sha256 mismatch. Nothing is extracted to disk."""
    archive = Path(path).expanduser()
    if not archive.is_file():
        why = "does not exist" if not archive.exists() else "is not an archive file"
        raise UserError(f"{archive} {why}; give the path of a file `memsync export` wrote")
    members = _archive_members(archive, max_bytes)
    raw_manifest = members.pop(MANIFEST, None)
    if raw_manifest is None:
        raise _refused(archive, MANIFEST, "is missing")
    try:
        manifest = json.loads(raw_manifest)
    except ValueError:
        raise _refused(archive, MANIFEST, "is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        raise _refused(archive, MANIFEST, f"is not a version {MANIFEST_VERSION} memsync manifest")
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise _refused(archive, MANIFEST, "has no 'files' mapping")
    for name in sorted(set(listed) | set(members)):
        if name not in members:
            raise _refused(archive, name, "is listed in the manifest but missing from the archive")
        if name not in listed:
            raise _refused(archive, name, "is in the archive but not listed in the manifest")
        _verify_member(archive, name, listed[name], members[name], max_bytes)
    return manifest, members


def import_archive(
    engine: Engine,
    path: Path,
    force: bool = False,
    progress: Progress | None = None,
    allow: Iterable[str] = (),
    from_project: str | None = None,
) -> ImportResult:
    """Copy an export's files to the remote. The whole archive is verified first, and passes
    the same gate as a push (secrets unless `allow`ed, `sensitivity: high` without consent) and
    the project check (an archive of another project only with `from_project` naming it); a
    refused one raises UserError and writes nothing.

    New keys are created create-only. A key already there with other content is skipped and
    reported unless `force`, which replaces it with If-Match on the listed ETag. Local files are
    not touched: the next pull brings the imported files here.
    """
    # the archive is read against memsync's own limit: a file the remote cannot hold (a
    # memory store's 100 kB) is skipped by name below, the rest imported
    own_limit = int(engine.ctx.setting("max_file_bytes"))
    manifest, files = read_archive(path, own_limit)
    project = manifest.get("project")
    result = ImportResult(Path(path), project if isinstance(project, str) else None)
    _check_project(Path(path), result.project, engine.ctx.project, from_project)
    _check_gate(Path(path), files, own_limit, allow)
    store = engine.store
    listing = _remote_listing(engine, create=True, notes=result.notes)
    clean = scrub_files(dict(files), _forgotten_on_remote(engine))
    names = sorted(files)
    for i, name in enumerate(names, start=1):
        data = clean[name]
        if data is None:
            result.forgotten.append(name)
            _tick(progress, i, len(names))
            continue
        if data != files[name]:
            result.scrubbed.append(name)
        entry = listing.get(name)
        try:
            if entry is None:
                try:
                    store.create(name, data)
                    result.copied.append(name)
                    continue
                except AlreadyExists:
                    theirs, etag = store.get(name)  # created meanwhile: treat as existing
            else:
                etag = entry.etag
                theirs, _ = store.get(name)
            if theirs == data:
                result.unchanged.append(name)
            elif not force:
                result.skipped[name] = "the remote has different content (--force replaces it)"
            else:
                try:
                    store.replace(name, data, etag)
                    result.replaced.append(name)
                except PreconditionFailed:
                    result.skipped[name] = "it changed on the remote during the import"
        except NotFound:
            result.skipped[name] = "it was deleted on the remote during the import"
        except Unholdable as exc:  # outside the remote's limits: refused before any request
            result.refused[name] = exc.reason
        finally:
            _tick(progress, i, len(names))
    return result


def _check_project(archive: Path, theirs: str | None, ours: str, confirmed: str | None) -> None:
    """An archive lands in another project only when the user names the project it holds."""
    if confirmed is not None and confirmed != theirs:
        raise UserError(
            f"{archive} holds the memory of project {theirs!r}, not {confirmed!r}; "
            "nothing was imported"
        )
    if theirs != ours and confirmed is None:
        raise UserError(
            f"{archive} holds the memory of project {theirs!r}, and this is project {ours!r}; "
            f"to import it here on purpose, run `memsync import --from-project {theirs} "
            f"{archive}`"
        )


def _check_gate(
    archive: Path, files: dict[str, bytes], max_bytes: int, allow: Iterable[str]
) -> None:
    """Every file passes the gate a push applies before anything is written."""
    how = f"memsync import --allow {{kind}} {archive}"
    for name, data in sorted(files.items()):
        try:
            check_outbound(name, data, max_bytes, allow, how)
        except KeptLocal:
            raise UserError(
                f"{archive}: {name} is marked 'sensitivity: high' without 'consent: true', so "
                "it may not go to the remote; nothing was imported"
            ) from None
        except RefusedFile as exc:
            raise UserError(f"{archive}: {name}: {exc.reason}; nothing was imported") from None


def _forgotten_on_remote(engine: Engine) -> list[Forget]:
    """The forgets on the remote's tombstone list: a backup is content from before them."""
    try:
        data, _ = engine.store.get(TOMBSTONES)
    except NotFound:
        return []
    return read_forgets(data)
