"""`memsync forget` and `memsync purge` (docs/forget.md).

`forget FILE...` and `forget --match TEXT` make one job: saved and written to the audit log
first, applied here at once (sync/tombstones.py `start`), then its tombstones added to the
remote list and the remote copies scrubbed (`finish`). An unreachable remote leaves the job
for the next sync. What the forget takes is decided by `forgotten.scrub_file` alone, here,
on the remote and on every other device.

`purge` erases the remote prefix (all but the tombstone list) and this device's state, then
leaves a mark on the remote (`_memsync/purged.json`) and here (meta.json `purged`): while one
is there no sync, push, pull or hook on any device uploads anything, until `memsync push
--republish` says to publish again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memsync.context.config import state_folders, strip_query
from memsync.memory.index_links import INDEX, link_targets
from memsync.stores.base import MAX_ATTEMPTS, Entry
from memsync.stores.crypt import CryptStore
from memsync.stores.crypt_keys import Locked
from memsync.sync import cas
from memsync.sync.forgotten import Forget, scrub_files, text_mark
from memsync.sync.mode import Mode
from memsync.sync.remote_keys import PURGED, TOMBSTONES
from memsync.sync.state import Meta
from memsync.sync.tombstones import (
    REPUBLISH,
    ForgetJob,
    Purged,
    audit,
    finish,
    pending_jobs,
    purged_here,
    quarantine_notices,
    start,
)
from memsync.util.errors import (
    GuardError,
    MemsyncError,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    Unreachable,
    UserError,
)

if TYPE_CHECKING:
    from memsync.sync.engine import Engine


@dataclass
class ForgetReport:
    files: list[str] = field(default_factory=list)
    remote_deleted: list[str] = field(default_factory=list)
    index_lines: int = 0  # MEMORY.md lines removed with the files
    offline: str | None = None  # the remote part waits for the next sync
    purged: bool = False  # the project is purged: only the tombstone went to the remote
    history_erased: int = 0  # earlier versions the remote keeps itself, their content erased
    out_of_reach: str | None = None  # what the service may keep that memsync cannot reach


def _run(engine: Engine, job: ForgetJob, report: ForgetReport, action: str, **details: Any) -> None:
    """Apply the job here, then finish it on the remote (or leave it for the next sync)."""
    with engine.locked():
        start(engine, job, action, **details)
        erased_before = engine.store.stats.requests["erase"]
        try:
            report.remote_deleted = finish(engine, job)
        except Unreachable as exc:
            report.offline = str(exc)
        report.history_erased = engine.store.stats.requests["erase"] - erased_before
        report.out_of_reach = kept_by_service(engine.ctx.remote)
        if engine.state.meta.purged:
            report.purged = True
        engine.state.save()


def _pull(engine: Engine) -> str | None:
    """Bring this device up to date first, so the forget sees what the remote has."""
    try:
        return engine.run(Mode.PULL).offline
    except Purged:
        return None  # nothing to pull: what this device holds is what there is to forget
    except GuardError as exc:  # forget has no --force: say which command takes it
        raise exc.within("forget", "pull") from None


def forget_files(engine: Engine, names: list[str]) -> ForgetReport:
    """Forget whole files, and the MEMORY.md lines linking to them, everywhere."""
    engine.confirm_project()  # another project's memory under this name is not this one's
    with contextlib.suppress(MemsyncError, OSError):
        _pull(engine)
    report = ForgetReport(files=sorted(set(names)))
    index = (engine.read_local(INDEX) or b"").decode("utf-8", "replace")
    report.index_lines = sum(bool(link_targets(x) & set(names)) for x in index.splitlines())
    job = ForgetJob(os.urandom(8).hex(), engine.ctx.device, files=report.files)
    _run(engine, job, report, "forget")
    return report


def notices(engine: Engine, remote_purged: dict[str, Any] | None = None) -> list[str]:
    """What `status` says about forgetting and purging that needs the user."""
    out = []
    if remote_purged is not None and not engine.state.meta.purged:
        engine.state.meta.purged = remote_purged or {"at": time.time()}
    if engine.state.meta.purged:
        out.append(str(purged_here(engine)))
    for job in pending_jobs(engine):
        out.append(
            f"forgetting {', '.join(job.files) or 'the matched text'} is not finished on "
            "the remote; the next `memsync sync` finishes it"
        )
    return out + quarantine_notices(engine)


# --- forget --match ---------------------------------------------------------------------------


@dataclass
class MatchPlan:
    text: str
    files: list[str] = field(default_factory=list)  # taken whole
    lines: dict[str, int] = field(default_factory=dict)  # name -> lines taken out
    held: int = 0  # earlier versions kept here (history, synced copies) holding it
    offline: str | None = None  # the pull found the remote away: this device only


def plan_match(engine: Engine, needle: str) -> MatchPlan:
    """What `forget --match` will take here: after a pull, the memory files the rule takes
    or changes (`forgotten.scrub_files`), and the earlier versions kept here holding it."""
    from memsync.sync.walk import MemoryWalk

    if len(needle.strip()) < 3:
        raise UserError("--match needs at least 3 characters, so it cannot match everything")
    engine.confirm_project()
    plan = MatchPlan(needle, offline=_pull(engine))
    forgets = [Forget("plan", text=text_mark(needle))]
    files = {name: engine.read_local(name) for name, _, _ in MemoryWalk(engine.ctx.memory_dir)}
    for name, clean in sorted(scrub_files(files, forgets).items()):
        before = files[name]
        if clean is None and before is not None:
            plan.files.append(name)
        elif clean != before and before is not None and clean is not None:
            plan.lines[name] = len(before.splitlines()) - len(clean.splitlines())
    state = engine.state
    versions = [v.path.read_bytes() for n in state.history_names() for v in state.history(n)]
    versions += [b for r in state.records.values() if (b := state.content(r.sha)) is not None]
    plan.held = sum(scrub_files({"x.md": v}, forgets)["x.md"] != v for v in versions)
    return plan


def apply_match(engine: Engine, plan: MatchPlan) -> ForgetReport:
    """Forget the text everywhere: here at once, then on the remote. The tombstone and the
    audit log get its mark, never the text."""
    report = ForgetReport(files=sorted(plan.files))
    job = ForgetJob(os.urandom(8).hex(), engine.ctx.device, text=text_mark(plan.text))
    digest = hashlib.sha256(plan.text.encode()).hexdigest()[:16]  # the audit log's, as the mark
    _run(engine, job, report, "forget-match", match_sha256=digest, lines=plan.lines)
    return report


# --- purge -----------------------------------------------------------------------------------


@dataclass
class PurgeReport:
    remote_deleted: int
    unreachable: list[str]
    history_erased: int = 0  # earlier versions the remote keeps itself, their content erased
    out_of_reach: str | None = None  # what the service may keep that memsync cannot reach


_AGAIN = "run `memsync purge --all` again"


def _delete_remote(engine: Engine, name: str) -> bool:
    """Delete `name` whatever it holds now (purging wins over a write made meanwhile);
    whether there was one."""
    found: list[bytes] = []

    def delete(data: bytes | None) -> None:
        found[:] = [data] if data is not None else []
        return None

    cas.update_or_say(engine.store, name, delete, name, _AGAIN)
    return bool(found)


def _put_purge_mark(engine: Engine, payload: bytes) -> None:
    """The purge mark, written before anything is deleted: a purge the remote stops answering
    halfway through still keeps every device from publishing what is left. An earlier
    purge's mark (perhaps lifted) is replaced by this one."""
    cas.update_or_say(engine.store, PURGED, lambda _: payload, PURGED, _AGAIN)


def _purge_listing(engine: Engine) -> tuple[dict[str, Entry], int]:
    """The remote's listing for a purge, and how many objects went already: an encrypted
    remote this device cannot read is erased whole first (erasing needs no key)."""
    store = engine.store
    try:
        return store.list(), 0
    except Locked:
        if not isinstance(store, CryptStore):
            raise
        gone = store.erase_locked()
        return store.list(), gone


def purge(engine: Engine) -> PurgeReport:
    """Hard-erase the remote prefix and all of memsync's local state for this project, then
    mark both so that no device uploads this project's memory again without being told to.
    An unreachable remote stops it before anything here is deleted (Unreachable, exit 3):
    nothing is queued, since erasing later could take what other devices wrote meanwhile."""
    store = engine.store
    deleted = 0
    marker = {"id": os.urandom(8).hex(), "at": time.time(), "device": engine.ctx.device}
    with engine.locked():
        try:
            listing, deleted = _purge_listing(engine)
        except NotFound:  # a typo in its name, most likely: purging it would make it
            raise UserError(
                f"the remote {strip_query(engine.ctx.remote)} does not exist, so there is "
                "nothing to purge; check --remote (nothing was deleted, here or there)"
            ) from None
        except Unreachable as exc:
            raise Unreachable(
                f"{exc}; nothing was deleted; run `memsync purge --all` again when the remote "
                "is reachable"
            ) from exc
        # never erase another project's memory; a manifest this device cannot trust names no
        # project, and goes with the rest
        with contextlib.suppress(RefusedFile):
            engine.confirm_project(listing)
        try:
            _put_purge_mark(engine, json.dumps(marker, sort_keys=True).encode())
            for key, entry in sorted(listing.items()):
                if key in (PURGED, TOMBSTONES):
                    # the forget records stay (hashes and names, never content): a device
                    # that publishes again before it heard of a forget still takes it in
                    continue
                try:
                    store.delete(key, entry.etag)
                    deleted += 1
                except NotFound:
                    continue
                except PreconditionFailed:
                    deleted += _delete_remote(engine, key)
                store.erase_history(key)  # the versions the remote keeps of it, every one
            if isinstance(store, CryptStore):  # objects under keys no listing shows
                deleted += store.sweep((PURGED, TOMBSTONES))
            store.erase_deleted(lambda key, old: True)  # and of what was deleted before
        except Unreachable as exc:
            raise Unreachable(
                f"{exc}; the remote became unreachable after {deleted} of its object(s) were "
                "deleted (its purge mark keeps every device from publishing the rest), nothing "
                "here was deleted; run `memsync purge --all` again when the remote is reachable"
            ) from exc
        # the content hashes (never the content) of what was synced: `push --republish` onto
        # a remote another device has republished meanwhile tells the files this device left
        # untouched from its edits, with no merge base left to tell them by
        synced = {name: rec.sha for name, rec in engine.state.records.items()}
        # this device's state of the project for every remote it synced it with (one folder a
        # remote: after `migrate`, the old remote's holds the same memory)
        home, project = engine.ctx.home, engine.ctx.project
        for state_dir in {engine.ctx.state_dir, *state_folders(home, project)}:
            for path in state_dir.iterdir():
                if path.name == "lock":
                    continue
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            shutil.rmtree(home / "quarantine" / state_dir.name, ignore_errors=True)
        engine.state.meta = Meta()
        engine.state.meta.purged = {**marker, "synced": synced}
        engine.state.save_meta()
    audit(engine, "purge", remote_objects_deleted=deleted)
    erased = store.stats.requests["erase"]
    unreachable = [
        "other devices keep their local copies; their next sync sees the purge, uploads "
        "nothing and says so (to erase memsync's state there too, run `memsync purge --all "
        "--yes` on each)",
        f"the memory files themselves in {engine.ctx.memory_dir} were left in place; "
        f"no device publishes them again until someone runs `{REPUBLISH}`",
    ]
    kept = kept_by_service(engine.ctx.remote)
    if kept:
        unreachable.append(kept)
    elif erased:
        unreachable.append(
            f"the remote keeps its own versions: the content of {erased} of them was erased, "
            "and their records (when, by whom) stay for the remote's retention period"
        )
    else:
        unreachable.append("backups or snapshots of the remote folder are out of memsync's reach")
    return PurgeReport(deleted, unreachable, erased)


def kept_by_service(remote: str) -> str | None:
    """What an object service may keep of what memsync deleted or replaced, out of its reach."""
    if remote.startswith(("http:", "https:")):
        return (
            "if soft delete or blob versioning is enabled on the storage account, Azure keeps "
            "deleted and replaced blobs for its retention period; purge them there"
        )
    if remote.startswith("s3:"):
        return (
            "if versioning is enabled on the bucket, S3 keeps deleted and replaced objects as "
            "noncurrent versions; delete them there (or let a lifecycle rule expire them)"
        )
    return None


def republish(engine: Engine) -> str | None:
    """Lift the purge marks (here and on the remote); before an empty remote (emptied on
    purpose, made anew), forget what was synced with it, so that everything here goes up as
    new. The device that lifted the remote mark (this one, or one that published again
    first), or None if there was nothing to lift.

    The remote mark is not removed but notes who lifted it (see `blocking_purge`). Before a
    remote another device has published again: a file synced before the purge and gone from
    it goes up as new (this device's memory is what it publishes), and a file this device
    left untouched since the purge takes the other device's version, not a conflict: the
    purging device has no merge base left, so the content hash it kept (`purge`) says which
    side changed."""
    with engine.locked():
        marker, engine.state.meta.purged = engine.state.meta.purged, None
        engine.store.project_known = False  # a folder remote: its project folder may be made
        try:
            listing = engine.store.list()
        except NotFound:
            listing = {}
        had = _records_for_republish(engine, listing, marker)
        engine.state.save()
        had = _lift_remote_mark(engine, had) or had
        by, engine.state.meta.lifted_by = engine.state.meta.lifted_by, None
        engine.state.save_meta()
    if had:
        audit(engine, "republish")
    return (by or engine.ctx.device) if had else None


def _records_for_republish(engine: Engine, listing: dict, marker: Any) -> bool:
    """What this device's records should say before it publishes again: nothing, before an
    empty remote; before one another device filled, no record of the files the purge erased,
    and for a file still synced here as it was, the content hash the purge kept. True if
    there was a purge to lift here."""
    from memsync.sync.state import Record
    from memsync.sync.walk import is_ignored

    records = engine.state.records
    # memsync's own records (the purge mark itself) are not memory
    if all(is_ignored(key) for key in listing):
        had = marker is not None or bool(records)
        for name in list(records):
            engine.state.forget(name)
        return had
    if marker is None:
        return False
    for name in [n for n in records if n not in listing]:
        engine.state.forget(name)  # erased by the purge, not deleted by anyone
    synced = marker.get("synced") if isinstance(marker, dict) else None
    for name, sha in (synced if isinstance(synced, dict) else {}).items():
        if name in listing and name not in records and isinstance(sha, str):
            records[name] = Record("", sha, 0.0)  # etag unknown: the remote changed
    return True


def _lift_remote_mark(engine: Engine, had: bool) -> bool:
    """Note on the remote purge mark that this device published again (a mark memsync did
    not write is replaced by one of its own). True if a mark was lifted now."""
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = store.get(PURGED)
        except NotFound:
            return False
        try:
            mark = json.loads(data)
        except ValueError:
            mark = {"id": os.urandom(8).hex(), "at": time.time()}
        if not isinstance(mark, dict):
            mark = {}
        lifted = isinstance(mark.get("republished"), dict)
        if lifted and not had and mark.get("id") == engine.state.meta.purge_seen:
            return False  # lifted long ago, with this device's knowledge: nothing to lift
        if lifted:  # another device published again first: the mark keeps saying so
            engine.state.meta.purge_seen = mark.get("id")
            engine.state.meta.purge_seen_etag = etag
            engine.state.meta.lifted_by = mark["republished"].get("device")
            return False
        mark["republished"] = {"device": engine.ctx.device, "at": time.time()}
        try:
            new = store.replace(PURGED, json.dumps(mark, sort_keys=True).encode(), etag)
        except NotFound:
            return False
        except PreconditionFailed:
            continue
        engine.state.meta.purge_seen = mark.get("id")
        engine.state.meta.purge_seen_etag = new
        return True
    return False
