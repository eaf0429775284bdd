"""Forgets as a sync meets them: the remote's tombstone list (`_memsync/forgotten.json`), a
device learning of the forgets on it, the forgets this device makes finished on the remote,
and the purge mark. What a forget takes is decided in one place, `forgotten.scrub_file`; this
module applies it to what a device holds and to the remote's copies.

Causality without clocks. The tombstone list only grows, and each device applies each forget
in it once, when it first reads it, to everything it holds at that moment: whatever it holds
then was written before it knew. Content a device takes in from the remote is always taken in
after the tombstones written before it: a listing sync reads the list before it plans, and a
conditional write that fails (412) on any path, or a `push FILE` about to create a file,
reads the list's ETag first and, if it moved, leaves the file to a listing sync that learns
the new forgets before it merges (engine `_forgotten_since`). What a device writes after it
learned is new and no device takes it out. A device that learns of a forget while the
remote still holds a copy it synced before (an upload of its own that raced the forget)
scrubs that copy on the remote too, with a conditional write.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.context.config import strip_query
from memsync.memory.index_limit import SUBINDEX
from memsync.memory.index_links import INDEX
from memsync.stores.base import MAX_ATTEMPTS
from memsync.sync import cas
from memsync.sync.forgotten import Forget, read_forgets, scrub_file, scrub_files, with_forget
from memsync.sync.remote_keys import PURGED, TOMBSTONES
from memsync.sync.state import applied_forgets_file, pending_forgets_file
from memsync.util.dates import local_time
from memsync.util.errors import MemsyncError, NotFound, PreconditionFailed, UserError
from memsync.util.fsutil import atomic_write, file_lock, private_dir, read_if_there, sha256

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable

    from memsync.stores.base import Entry
    from memsync.sync.engine import Engine
    from memsync.sync.state import State


REPUBLISH = "memsync push --republish"


class Purged(UserError):
    """This project was purged; nothing is uploaded until the user republishes."""


def audit(engine: Engine, action: str, **details: Any) -> None:
    """Append one JSON line to $MEMSYNC_HOME/audit.log (0600)."""
    ctx = engine.ctx
    private_dir(ctx.home)
    record = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "action": action,
        "device": ctx.device,
        "project": ctx.project,
        "remote": strip_query(ctx.remote),
        **details,
    }
    path = ctx.home / "audit.log"
    binary = getattr(os, "O_BINARY", 0)  # Windows: each line ends in \n, as on POSIX
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | binary, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8", newline="\n") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


# --- a forget this device makes ---------------------------------------------------------------


@dataclass
class ForgetJob:
    """One `memsync forget`: the files it names, or the mark of the text it matches. Saved
    beside the state folders until its remote part is done, so a sync naming the remote
    another way, or after meta.json was moved aside, still finishes it."""

    id: str
    device: str
    files: list[str] = field(default_factory=list)
    text: str | None = None  # `forgotten.text_mark` of the text, never the text

    def forgets(self) -> list[Forget]:
        out = [Forget(f"{self.id}:{i}", file=name) for i, name in enumerate(self.files)]
        return out + ([Forget(self.id, text=self.text)] if self.text else [])

    @classmethod
    def read(cls, doc: Any) -> ForgetJob | None:
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            return None
        files = doc.get("files")
        text = doc.get("text") if isinstance(doc.get("text"), str) else None
        names = [n for n in files if isinstance(n, str)] if isinstance(files, list) else []
        return cls(doc["id"], str(doc.get("device") or ""), names, text)


def pending_jobs(engine: Engine) -> list[ForgetJob]:
    """This device's forgets whose remote part is not finished."""
    path = _jobs_path(engine)
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    found = (ForgetJob.read(d) for d in (doc if isinstance(doc, list) else []))
    return [job for job in found if job is not None]


def _jobs_path(engine: Engine) -> Path:
    ctx = engine.ctx
    return pending_forgets_file(ctx.home, ctx.project, ctx.memory_dir)


def _save_jobs(engine: Engine, jobs: list[ForgetJob]) -> None:
    path = _jobs_path(engine)
    if not jobs:
        path.unlink(missing_ok=True)
        return
    private_dir(path.parent)
    atomic_write(path, json.dumps([job.__dict__ for job in jobs], sort_keys=True).encode())


def start(engine: Engine, job: ForgetJob, action: str, **details: Any) -> list[str]:
    """Save the job and its audit line, then apply it here (an edit of a forgotten file made
    here is the user's to forget: no quarantine). Returns the files it changed here."""
    _save_jobs(engine, [*pending_jobs(engine), job])
    audit(engine, action, id=job.id, files=job.files, **details)
    changed = apply_here(engine, job.forgets(), set_aside=False)
    mark_applied(engine, {f.id for f in job.forgets()})
    engine.state.save()
    return changed


def finish(engine: Engine, job: ForgetJob, listing: dict[str, Entry] | None = None) -> list[str]:
    """The job's remote part: its forgets added to the tombstone list, then the remote copies
    scrubbed by them (conditional writes, each re-read on 412), with the earlier versions the
    remote keeps of them, and of files deleted before, that held what was forgotten
    (`Store.erase_history`, `Store.erase_deleted`). Raises Unreachable. Returns the remote
    files it deleted."""
    _add_tombstones(engine, job.forgets())
    if listing is None:
        try:
            listing = engine.store.list()
        except NotFound:
            listing = {}
    from memsync.sync.walk import is_ignored

    names = [n for n in listing if not is_ignored(n)]
    if not job.text:  # a file forget reads only the files it names and the index
        names = [n for n in names if n in job.files or n == INDEX]
    forgets = job.forgets()
    deleted = scrub_remote(engine, names, forgets)
    _scrub_remote_conflicts(engine, forgets, {*job.files, *deleted})
    # the versions the remote keeps of files deleted before (a memory store keeps them)
    engine.store.erase_deleted(
        lambda key, old: not is_ignored(key) and scrub_file(key, old, forgets) != old
    )
    _save_jobs(engine, [j for j in pending_jobs(engine) if j.id != job.id])
    return deleted


def finish_pending(engine: Engine, listing: dict[str, Entry]) -> list[str]:
    """This device's forgets that waited for the remote, finished there now; one sentence each."""
    out = []
    for job in pending_jobs(engine):
        ids = {f.id for f in job.forgets()}
        if ids - applied(engine):  # started before this memory dir's record of them
            apply_here(engine, job.forgets(), set_aside=False)
            mark_applied(engine, ids)
        finish(engine, job, listing)
        what = ", ".join(job.files) or "the matched text"
        out.append(f"finished forgetting {what} on the remote")
    return out


_FINISH = "run `memsync sync` to finish"


def _add_tombstones(engine: Engine, forgets: list[Forget]) -> None:
    """Add `forgets` to the remote list (sync/cas.py: read, add, conditional write)."""

    def add(data: bytes | None) -> bytes | None:
        for forget in forgets:
            data = with_forget(data, forget)
        return data

    cas.update_or_say(engine.store, TOMBSTONES, add, "the tombstone list", _FINISH)


def scrub_remote(engine: Engine, names: list[str], forgets: list[Forget]) -> list[str]:
    """The remote copies of `names` without what `forgets` take: rewritten or deleted, each
    with a conditional write, re-read and scrubbed again on 412. `MEMORY.md` goes last, without
    its links to the files taken. A copy this device had synced as it was gets the new ETag
    in its record. Returns the names deleted."""
    store = engine.store
    taken = {f.file for f in forgets if f.file}
    deleted = []
    for name in sorted(names, key=lambda n: n == INDEX or SUBINDEX.fullmatch(n) is not None):
        for _ in range(MAX_ATTEMPTS):
            try:
                data, etag = store.get(name)
            except NotFound:
                break
            clean = scrub_file(name, data, forgets, taken)  # taken: index lines only
            if clean == data:
                break
            try:
                if clean is None:
                    store.delete(name, etag)
                    taken.add(name)
                    deleted.append(name)
                else:
                    new = store.replace(name, clean, etag)
                    rec = engine.state.records.get(name)
                    if rec is not None and rec.etag == etag:
                        engine.state.set_synced(name, new, clean)
            except NotFound:
                break
            except PreconditionFailed:
                continue
            break
        else:
            raise UserError(f"{name} kept changing on the remote; run `memsync sync` to finish")
        # the remote's own earlier versions that held it (a memory store keeps them)
        store.erase_history(name, _holds(name, forgets, taken if name == INDEX else ()))
    return deleted


def _holds(name: str, forgets: list[Forget], taken: Collection[str]) -> Callable[[bytes], bool]:
    """Whether an earlier version of `name` held something `forgets` take."""
    return lambda old: scrub_file(name, old, forgets, taken) != old


# --- learning of forgets ----------------------------------------------------------------------


def applied(engine: Engine) -> set[str]:
    """The forgets applied to this memory dir: each is applied once, whichever remote it came
    from (a device moving to another remote does not take out again what it wrote since)."""
    ctx = engine.ctx
    data = read_if_there(applied_forgets_file(ctx.home, ctx.project, ctx.memory_dir))
    try:
        kept = json.loads(data) if data else []
    except ValueError:  # damaged: the state folder's own list still holds this remote's
        kept = []
    ids = {i for i in kept if isinstance(i, str)} if isinstance(kept, list) else set()
    return ids | set(engine.state.meta.forgets_applied)


def mark_applied(engine: Engine, ids: set[str]) -> None:
    """Record `ids` as applied to this memory dir (and in the state folder's meta)."""
    ctx = engine.ctx
    done = sorted(applied(engine) | ids)
    engine.state.meta.forgets_applied = done
    path = applied_forgets_file(ctx.home, ctx.project, ctx.memory_dir)
    private_dir(path.parent)
    atomic_write(path, json.dumps(done).encode())


def learn(engine: Engine, listing: dict[str, Entry]) -> tuple[list[str], list[str]]:
    """Apply here the forgets on the remote list that this device has not applied (one GET,
    only when the list's ETag moved). Returns (files taken, files changed)."""
    entry = listing.get(TOMBSTONES)
    meta = engine.state.meta
    if entry is None or entry.etag == meta.tombstones_etag:
        return [], []
    data, etag = engine.store.get(TOMBSTONES)
    done = applied(engine)
    new = [f for f in read_forgets(data) if f.id not in done]
    changed: list[str] = []
    if new:
        held = _still_on_remote(engine, listing, new)
        changed = apply_here(engine, new)
        if held:  # a copy of its own that raced the forget: scrubbed on the remote too
            scrub_remote(engine, held, new)
        mark_applied(engine, {f.id for f in new})
    meta.tombstones_etag = etag
    taken = [n for n in changed if engine.read_local(n) is None]
    return taken, [n for n in changed if n not in taken]


def _still_on_remote(engine: Engine, listing: dict[str, Entry], forgets: list[Forget]) -> list[str]:
    """The files whose remote copy is still the one this device synced (same ETag) and holds
    what `forgets` take: written before the forgetting device scrubbed the remote, or after it
    by a device that had not learned of the forget (this one, racing it)."""
    state = engine.state
    bases = {
        name: state.content(rec.sha)
        for name, rec in state.records.items()
        if name in listing and listing[name].etag == rec.etag
    }
    return [n for n, clean in scrub_files(bases, forgets).items() if clean != bases[n]]


def apply_here(engine: Engine, forgets: list[Forget], *, set_aside: bool = True) -> list[str]:
    """The rule, applied to everything this device holds: its memory files, their merge
    bases, history, the quarantine and the conflict list, each through `scrub_files`. A
    file a `forget FILE` names that holds an edit not synced yet is set aside whole in
    quarantine first (`set_aside`). Returns the memory files it changed or took."""
    from memsync.sync.walk import MemoryWalk

    state = engine.state
    files: dict[str, bytes | None] = {
        name: engine.read_local(name) for name, _, _ in MemoryWalk(engine.ctx.memory_dir)
    }
    for forget in forgets:
        data = files.get(forget.file or "")
        rec = state.records.get(forget.file or "")
        unsynced = rec is None or data is None or rec.sha != sha256(data)
        if forget.file and data is not None and set_aside and unsynced:
            quarantine(engine, forget.file, data)
    changed = []
    for name, clean in scrub_files(files, forgets).items():
        if clean == files[name]:
            continue
        changed.append(name)
        if clean is None:
            engine.local_path(name).unlink(missing_ok=True)
        else:  # no history copy: that copy is what is forgotten
            engine.write_local(name, clean)
    _scrub_state(state, forgets)
    _scrub_other_states(engine, forgets)
    texts = [f for f in forgets if f.text]  # a file's quarantined edit is where it is kept
    for q in state.meta.quarantined if texts else ():
        path = Path(q["path"])
        with contextlib.suppress(OSError):
            data = path.read_bytes()
            clean = scrub_files({q["file"]: data}, texts)[q["file"]]
            if clean is None:
                path.unlink()
            elif clean != data:
                atomic_write(path, clean)
    _drop_conflicts(engine, forgets, {n for n in changed if files[n] is not None})
    return changed


def _scrub_state(state: State, forgets: list[Forget]) -> None:
    """A state folder's merge bases (a base taken drops its record) and history versions (one
    taken or left empty is deleted), each through `scrub_files`."""
    bases = {name: state.content(rec.sha) for name, rec in state.records.items()}
    for name, clean in scrub_files(bases, forgets).items():
        if clean is None:
            state.forget(name)
        elif clean != bases[name]:
            state.rebase(name, clean)
    for name in state.history_names():
        for version in state.history(name):
            data = version.path.read_bytes()
            clean = scrub_files({name: data}, forgets)[name]
            if clean is None or not clean.strip():
                version.path.unlink(missing_ok=True)
                version.path.with_suffix(".reason").unlink(missing_ok=True)
            elif clean != data:
                atomic_write(version.path, clean)


def _scrub_other_states(engine: Engine, forgets: list[Forget]) -> None:
    """The state this device keeps for the project under other remotes (one folder per
    remote URL) holds copies too: scrubbed the same way, each under its own lock (one that
    is busy is left as it is; its own next sync of that remote does not bring the text
    here, since the memory files were scrubbed)."""
    from memsync.context.config import state_folders
    from memsync.sync.state import State

    ctx = engine.ctx
    for folder in state_folders(ctx.home, ctx.project):
        if folder == ctx.state_dir or not (folder / "records.json").is_file():
            continue
        busy = contextlib.suppress(TimeoutError, OSError, MemsyncError)
        with busy, file_lock(folder / "lock", timeout=1):
            other = State(folder, engine.state.history_versions)
            _scrub_state(other, forgets)
            other.save()


def _about(conflict: dict[str, Any], forgets: list[Forget], taken: set[str]) -> bool:
    """Whether a conflict record is about forgotten content: its file was taken, or its
    description holds a forgotten text."""
    detail = str(conflict.get("detail")).encode()
    texts = [f for f in forgets if f.text]
    return conflict.get("file") in taken or (
        bool(texts) and scrub_files({"x": detail}, texts)["x"] != detail
    )


def _drop_conflicts(engine: Engine, forgets: list[Forget], names: set[str]) -> None:
    """The conflict records about forgotten content go from this device's list."""
    taken = {f.file for f in forgets if f.file} | {n for n in names if engine.read_local(n) is None}
    engine.state.conflicts.drop(lambda c: _about(c.as_json(), forgets, taken))


def _scrub_remote_conflicts(engine: Engine, forgets: list[Forget], taken: set[str]) -> None:
    """The remote conflict record without the records about forgotten content, and the
    earlier versions of it the remote keeps that held such a record (`Store.erase_history`)."""
    from memsync.sync.conflicts import recorded, rewrite
    from memsync.sync.remote_keys import CONFLICTS

    def drop(data: bytes | None) -> bytes | None:
        if data is None:
            return None
        return rewrite(data, {c["id"] for c in recorded(data) if _about(c, forgets, taken)})

    cas.update_or_say(engine.store, CONFLICTS, drop, "the conflict record", _FINISH)
    engine.store.erase_history(
        CONFLICTS, lambda old: any(_about(c, forgets, taken) for c in recorded(old))
    )


def incoming(engine: Engine, names: Iterable[str]) -> list[str]:
    """For `status`: the files here that another device forgot and the next sync takes (one
    GET of the tombstone list)."""
    try:
        data, _ = engine.store.get(TOMBSTONES)
    except MemsyncError:  # status says what it can
        return []
    done = applied(engine)
    forgotten = {f.file for f in read_forgets(data) if f.file and f.id not in done}
    return [
        f"{name} was forgotten on another device; the next sync removes it here (an edit "
        "not yet synced is set aside in quarantine)"
        for name in sorted(set(names) & forgotten)
    ]


# --- quarantine -------------------------------------------------------------------------------


def quarantine(engine: Engine, name: str, data: bytes) -> Path:
    """Move an edit of a file forgotten on another device, not synced yet, out of the memory
    dir, whole: never uploaded, never destroyed."""
    from memsync.sync.state import history_folder

    folder = private_dir(engine.ctx.home / "quarantine" / engine.ctx.state_dir.name)
    flat = name.replace("/", "__")
    if len(flat.encode("utf-8")) > 180:
        flat = history_folder(name) + ".md"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{stamp}-{flat}"
    n = 1
    while path.exists():  # set aside twice within a second: never over the first copy
        n += 1
        path = folder / f"{stamp}-{n}-{flat}"
    atomic_write(path, data)
    engine.local_path(name).unlink(missing_ok=True)
    entry = {"file": name, "path": str(path), "at": time.time()}
    engine.state.meta.quarantined = [*engine.state.meta.quarantined, entry]
    engine.state.unqueue([name])
    return path


def set_aside_sentence(q: dict[str, Any]) -> str:
    return (
        f"{q['file']} was forgotten on another device; your unsynced edit of it was moved to "
        f"{q['path']} and is not synced: copy what you still need into a new memory file, "
        "then delete that file"
    )


def quarantine_notices(engine: Engine) -> list[str]:
    """One sentence for each quarantined edit still there (those the user deleted are done)."""
    kept = [q for q in engine.state.meta.quarantined if Path(q["path"]).exists()]
    engine.state.meta.quarantined = kept
    return [set_aside_sentence(q) for q in kept]


# --- purge ------------------------------------------------------------------------------------


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def purged_here(engine: Engine) -> Purged:
    """The sentence for a device that purged, or saw the purge of, this project."""
    marker = engine.state.meta.purged or {}
    by = marker.get("device")
    where = "from this device" if by == engine.ctx.device else f"from the remote by {by}"
    again = marker.get("republished")
    if isinstance(again, dict):  # lifted by another device before this one heard of it
        when = local_time(_number(again.get("at")))
        since = (
            f" and published again by {again.get('device')} on {when}, after this device last "
            "synced"
        )
    else:
        since = ""
    when = local_time(_number(marker.get("at")))
    return Purged(
        f"this project's memory was purged {where if by else 'from the remote'} on "
        f"{when}{since}, so memsync syncs nothing here (no pull, no upload); run "
        f"`{REPUBLISH}` to publish this device's memory again"
    )


def blocking_purge(engine: Engine, etag: str | None = None) -> dict[str, Any] | None:
    """The remote's purge mark if it keeps this device out, else None. `etag`: the mark's, from
    a listing (an unchanged mark this device has let through costs no request).

    `push --republish` does not remove the mark but notes in it who lifted it, so a device
    that synced before the purge and never heard of it (its records name content the purge
    erased) is still told and kept out until it says so too; a device that lifted it, or
    that joins afterwards with nothing synced before, goes on (remembered by the mark's id)."""
    meta = engine.state.meta
    if etag is not None and etag == meta.purge_seen_etag:
        return None
    try:
        data, etag = engine.store.get(PURGED)
    except NotFound:
        return None
    try:
        marker = json.loads(data)
    except ValueError:
        marker = None
    if not isinstance(marker, dict):
        return {"at": time.time()}
    if isinstance(marker.get("republished"), dict) and (
        marker.get("id") == meta.purge_seen or not engine.state.records
    ):
        meta.purge_seen, meta.purge_seen_etag = marker.get("id"), etag
        return None
    return marker


def recreate_blocked(engine: Engine, name: str) -> str | None:
    """Why a push must not create `name` again after it vanished from the remote: the
    project was purged (one GET, only on that rare path). A forget of it is learned by the
    listing sync the push defers to (engine `_forgotten_since`)."""
    if blocking_purge(engine) is None:
        return None
    return f"this project was purged, so {name} was not uploaded; `{REPUBLISH}` publishes again"
