"""Forgetting for real: `memsync forget`, `memsync purge`, and what other devices do about them.

`forget FILE`: the file, its MEMORY.md index lines, its local history and its records go, here
and on the remote, and a tombstone on the remote (`_memsync/forgotten.json`) tells the other
devices to do the same on their next sync. `forget --match TEXT`: matching entries leave their
files (pushed through the normal merge, where a removal wins over an untouched entry), whole
files go where only that will do, and the tombstone carries a hash of every removed line (never
the text), so other devices drop those lines from their history copies and never keep them in
a new one.

The order makes an outage or a kill harmless: (1) the job is saved in meta.json (`forgetting`)
and the audit line written, (2) the tombstone, (3) the remote deletions, (4) the local erase
(always, even when the remote cannot be reached). A job whose remote part did not finish stays
listed, and the next sync, push or pull finishes it before it plans anything.

Tombstones carry an id, when they were made and the ETags of the copies they forgot. A device
applies each one once (ids in `tombstones_applied`) and only to content from before it: a file
created again later syncs like any other, and forgetting another file does not touch it. An
edit another device never uploaded is neither uploaded nor destroyed: it is moved to
$MEMSYNC_HOME/quarantine/ and every sync and status there says so until the user deletes it.

`purge` erases the remote prefix and this device's state, then leaves a marker on the remote
(`_memsync/purged.json`) and here (meta.json `purged`): while one is there no sync, push, pull
or hook on any device uploads anything, until `memsync push --republish` says to publish again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.context.config import strip_query
from memsync.memory.index_links import INDEX, without_links
from memsync.util.errors import MemsyncError, NotFound, PreconditionFailed, Unreachable, UserError
from memsync.util.fsutil import atomic_write, private_dir, sha256

if TYPE_CHECKING:
    from memsync.stores import Entry
    from memsync.sync.engine import Engine, LocalScan

MAX_ATTEMPTS = 8
PURGED = "_memsync/purged.json"  # on the remote after `purge`: nobody republishes silently
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


# --- forgotten lines, by hash --------------------------------------------------------------

_WORD = re.compile(r"\w")


def line_hash(line: str) -> str | None:
    """The hash a tombstone carries for a forgotten line (None for a line with no word in it,
    such as `---` or a blank: those are in every file)."""
    text = line.strip()
    if not _WORD.search(text):
        return None
    digest = hashlib.sha256(b"memsync-forgotten-line\n" + text.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def line_hashes(lines: Iterable[str]) -> set[str]:
    return {h for h in map(line_hash, lines) if h is not None}


def scrub(content: bytes, forgotten: Container[str]) -> bytes:
    """`content` without the lines whose hash is in `forgotten`."""
    text = content.decode("utf-8", "surrogateescape")
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if line_hash(line) not in forgotten]
    if len(kept) == len(lines):
        return content
    return "".join(kept).encode("utf-8", "surrogateescape")


_RULE = re.compile(r"^\s*[-*+]\s+\d{4}-\d{2}-\d{2}(?: \([^)]*\))?:\s*(.+)$")


def _earlier_forms(lines: Iterable[str]) -> list[str]:
    """The form a compacted voice rule (`- 2026-10-01: text`, retention/compact.py) had before
    compaction (`- text` under its dated section): another device may still hold that form in
    a history copy saved before the compaction, which only its hash can reach."""
    return [f"- {m.group(1)}" for m in map(_RULE.match, lines) if m]


def _removed_lines(old: bytes | None, new: bytes | None) -> list[str]:
    """The lines of `old` that `new` no longer has (as many times as they went)."""
    if old is None:
        return []
    gone = Counter(old.decode("utf-8", "replace").splitlines())
    gone.subtract((new or b"").decode("utf-8", "replace").splitlines())
    return [line for line, n in gone.items() if n > 0]


def _scrub_history(engine: Engine, forgotten: set[str]) -> None:
    """Take forgotten lines out of every local history copy (a copy left empty goes)."""
    state = engine.state
    for name in state.history_names():
        for version in state.history(name):
            data = version.path.read_bytes()
            clean = scrub(data, forgotten)
            if clean == data:
                continue
            if clean.strip():
                atomic_write(version.path, clean)
            else:
                version.path.unlink(missing_ok=True)
                version.path.with_suffix(".reason").unlink(missing_ok=True)


def _remember_lines(engine: Engine, hashes: dict[str, float]) -> None:
    """Keep the hashes (never the lines) so that later history copies leave them out too."""
    if hashes:
        known = engine.state.meta.setdefault("forgotten_lines", {})
        for h, at in hashes.items():
            known.setdefault(h, at)
        _scrub_history(engine, set(hashes))


# --- the remote tombstone list ---------------------------------------------------------------


def read_tombstones(data: bytes | None) -> dict[str, Any]:
    """The tombstone list, version 2; version 1 (names with `at` and `device`) is read too."""
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    out: dict[str, Any] = {"version": 2, "files": {}, "lines": {}, "conflicts": {}}
    files = doc.get("files")
    for name, t in files.items() if isinstance(files, dict) else ():
        if not isinstance(t, dict):
            continue
        at = _number(t.get("at"))
        etags = t.get("etags") if isinstance(t.get("etags"), list) else []
        out["files"][name] = {
            "id": str(t.get("id") or f"v1:{name}:{at}"),
            "at": at,
            "device": str(t.get("device") or ""),
            "etags": sorted(e for e in etags if isinstance(e, str)),
        }
    for kind in ("lines", "conflicts"):  # line hashes; ids of conflict records taken off
        items = doc.get(kind)
        for key, t in items.items() if isinstance(items, dict) else ():
            if isinstance(t, dict) and isinstance(t.get("id"), str):
                out[kind][key] = {"id": t["id"], "at": _number(t.get("at"))}
    return out


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _write_tombstones(engine: Engine, job: dict[str, Any], etags: dict[str, list[str]]) -> None:
    """Add the job's tombstones to the remote list (conditional read-modify-write)."""
    from memsync.sync.engine import TOMBSTONES

    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = store.get(TOMBSTONES)
        except NotFound:
            data, etag = None, None
        doc = read_tombstones(data)
        for name in job["files"]:
            old = doc["files"].get(name)
            # a name forgotten again keeps the copies forgotten before: a device may still hold one
            known = set(old["etags"]) if old else set()
            doc["files"][name] = {
                "id": job["id"],
                "at": job["at"],
                "device": job["device"],
                "etags": sorted(known | set(etags.get(name, []))),
            }
        for digest in job["lines"]:
            doc["lines"].setdefault(digest, {"id": job["id"], "at": job["at"]})
        for conflict_id in job.get("conflicts", []):
            doc["conflicts"].setdefault(conflict_id, {"id": job["id"], "at": job["at"]})
        payload = json.dumps(doc, indent=1, sort_keys=True).encode()
        if payload == data:
            return
        try:
            if etag is None:
                try:
                    store.create(TOMBSTONES, payload)
                except NotFound:
                    store.ensure()
                    store.create(TOMBSTONES, payload)
            else:
                store.replace(TOMBSTONES, payload, etag)
        except PreconditionFailed:
            continue
        return
    raise UserError("the remote tombstone list kept changing; run `memsync sync` to finish")


# --- one forget job ------------------------------------------------------------------------


@dataclass
class ForgetReport:
    files: list[str] = field(default_factory=list)
    remote_deleted: list[str] = field(default_factory=list)
    index_lines: int = 0  # MEMORY.md lines removed with the files
    offline: str | None = None  # the remote part waits for the next sync


def _start(  # noqa: ANN202
    engine: Engine,
    action: str,
    files: list[str],
    lines: set[str],
    rewritten: Iterable[str] = (),
    conflicts: Iterable[str] = (),
    **details: Any,
):
    """Save the job and write its audit line, before anything is deleted anywhere."""
    job = {
        "id": os.urandom(8).hex(),
        "at": time.time(),
        "device": engine.ctx.device,
        "files": sorted(set(files)),
        "lines": sorted(lines),
        "scrub": sorted(set(rewritten)),  # files whose remote copies lose the forgotten lines
        "conflicts": sorted(set(conflicts)),  # ids of conflict records that describe them
    }
    meta = engine.state.meta
    meta["forgetting"] = [*meta.get("forgetting", []), job]
    meta["tombstones_applied"] = sorted({*meta.get("tombstones_applied", []), job["id"]})
    engine.state.save_meta()
    audit(engine, action, id=job["id"], files=job["files"], **details)
    return job


def _finish_remote(
    engine: Engine,
    job: dict[str, Any],
    listing: dict[str, Entry] | None,
    deleted: list[str] | None = None,
) -> list[str]:
    """The job's remote part: the tombstone first, then the deletions (If-Match), each added
    to `deleted` as it happens. A copy that changed meanwhile is added to the tombstone and
    deleted too. Raises Unreachable."""
    store = engine.store
    if listing is None:
        try:
            listing = store.list()
        except NotFound:
            listing = {}
    etags = {n: [listing[n].etag] for n in job["files"] if n in listing}
    index = _remote_index(engine, job) if job["files"] and INDEX in listing else None
    _take_conflicts(engine, job, None)  # their ids go into the tombstone
    _write_tombstones(engine, job, etags)
    deleted = [] if deleted is None else deleted
    for name in job["files"]:
        if name not in listing:
            continue
        etag = listing[name].etag
        for _ in range(MAX_ATTEMPTS):
            try:
                store.delete(name, etag)
                deleted.append(name)
                break
            except NotFound:
                break
            except PreconditionFailed:
                try:
                    _, etag = store.get(name)
                except NotFound:
                    break
                _write_tombstones(engine, job, {name: [etag]})
        else:
            raise UserError(f"{name} kept changing on the remote; run `memsync sync` to finish")
    if index is not None:
        _drop_remote_index_lines(engine, job, index)
    for name in job.get("scrub", []):
        _scrub_remote(engine, name, set(job["lines"]))
    _take_conflicts(engine, job, set(job.get("conflicts", [])))
    return deleted


def _take_conflicts(engine: Engine, job: dict[str, Any], ids: set[str] | None) -> None:
    """The remote conflict record without the entries about the job's files or with the ids
    the job collected (a description naming a forgotten heading or id), conditional writes.
    With `ids` None, only add the ids of those entries to the job (before its tombstone)."""
    from memsync.sync.conflicts import REMOTE_KEY, recorded, rewrite

    files = set(job["files"])
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = engine.store.get(REMOTE_KEY)
        except NotFound:
            return
        gone = {c["id"] for c in recorded(data) if c.get("file") in files}
        if ids is None:
            job["conflicts"] = sorted(set(job.get("conflicts", [])) | gone)
            return
        clean = rewrite(data, gone | ids)
        if clean == data:
            return
        try:
            engine.store.replace(REMOTE_KEY, clean, etag)
            return
        except NotFound:
            return
        except PreconditionFailed:
            continue
    raise UserError("the remote conflict record kept changing; run `memsync sync` to finish")


def _scrub_remote(engine: Engine, name: str, forgotten: set[str]) -> None:
    """Take the forgotten lines out of the remote copy of a file `forget --match` rewrote:
    pushed through a merge from a stale base (a forget made offline), a removal could lose to
    a line the remote holds twice."""
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = store.get(name)
        except NotFound:
            return
        clean = scrub(data, forgotten)
        if clean == data:
            return
        try:
            store.replace(name, clean, etag)
            return
        except NotFound:
            return
        except PreconditionFailed:
            continue
    raise UserError(f"{name} kept changing on the remote; run `memsync sync` to finish")


def _remote_index(engine: Engine, job: dict[str, Any]) -> tuple[bytes, str] | None:
    """The remote MEMORY.md, its lines linking to the job's files added to the job's hashes
    (it may hold lines this device never saw: another device's, or ones added while this
    device was offline)."""
    try:
        data, etag = engine.store.get(INDEX)
    except NotFound:
        return None
    job["lines"] = sorted(set(job["lines"]) | line_hashes(_linking(data, job["files"])))
    return data, etag


def _drop_remote_index_lines(
    engine: Engine, job: dict[str, Any], index: tuple[bytes, str] | None
) -> None:
    """Take the lines linking to the job's files out of the remote MEMORY.md (If-Match), so
    that no device pulls them back, whatever its own copy of the index says."""
    for _ in range(MAX_ATTEMPTS):
        if index is None:
            return
        data, etag = index
        text, removed = without_links(data.decode("utf-8", "surrogateescape"), set(job["files"]))
        if not removed:
            return
        known = set(job["lines"])
        if not line_hashes(removed) <= known:
            job["lines"] = sorted(known | line_hashes(removed))
            _write_tombstones(engine, job, {})
        try:
            engine.store.replace(INDEX, text.encode("utf-8", "surrogateescape"), etag)
            return
        except NotFound:
            return
        except PreconditionFailed:
            index = _remote_index(engine, job)
    raise UserError("MEMORY.md kept changing on the remote; run `memsync sync` to finish")


def _erase_here(engine: Engine, job: dict[str, Any], *, first: bool) -> None:
    """The job's local part: files, history, records, index lines; forgotten lines out of
    history. On a later run (`first` False) a file written since the job is left alone."""
    state = engine.state
    for name in job["files"]:
        path = engine.local_path(name)
        with contextlib.suppress(FileNotFoundError):
            if first or path.stat().st_mtime <= job["at"]:
                path.unlink()
        state.drop_history(name)
        state.forget(name)
        state.unqueue([name])
        state.resolve_conflicts(name)  # a conflict about a forgotten file is moot
    index = engine.read_local(INDEX)
    if index is not None and job["files"]:
        text, removed = without_links(index.decode("utf-8", "surrogateescape"), set(job["files"]))
        if removed:  # no history copy: that copy is what is forgotten
            engine.write_local(INDEX, text.encode("utf-8", "surrogateescape"))
    _remember_lines(engine, dict.fromkeys(job["lines"], job["at"]))


def _drop_job(engine: Engine, job: dict[str, Any]) -> None:
    meta = engine.state.meta
    meta["forgetting"] = [j for j in meta.get("forgetting", []) if j.get("id") != job["id"]]
    if not meta["forgetting"]:
        del meta["forgetting"]


def _run_job(engine: Engine, job: dict[str, Any], report: ForgetReport) -> None:
    """The remote part, then the local part, which happens even when the remote part fails
    (the job then stays listed for the next run)."""
    finished = False
    try:
        _finish_remote(engine, job, None, report.remote_deleted)
        finished = True
    except Unreachable as exc:
        report.offline = str(exc)
    finally:
        _erase_here(engine, job, first=True)
        if finished:
            _drop_job(engine, job)
        engine.state.save()


def finish_pending(engine: Engine, listing: dict[str, Entry]) -> None:
    """Finish the forgets an outage or a kill interrupted (called by every listing run)."""
    for job in list(engine.state.meta.get("forgetting", [])):
        try:
            _finish_remote(engine, job, listing)
        except (Unreachable, UserError):
            continue  # still waiting; the run goes on (and finds the remote as it is)
        for name in job["files"]:
            listing.pop(name, None)
        _erase_here(engine, job, first=False)
        _drop_job(engine, job)
        engine.state.save_meta()
        audit(engine, "forget-finished", id=job["id"], files=job["files"])


def _sync_index(engine: Engine) -> None:
    """Bring MEMORY.md up to date first, so the index lines removed are the remote's too."""
    with contextlib.suppress(MemsyncError, OSError):
        engine.run("sync", [str(engine.local_path(INDEX))])


def _push(engine: Engine, names: Iterable[str], report: ForgetReport) -> None:
    paths = [str(engine.local_path(n)) for n in sorted(set(names)) if engine.read_local(n)]
    if not paths:
        return
    result = engine.run("push", paths)
    if result.offline and report.offline is None:
        report.offline = result.offline


def _linking(data: bytes | None, names: Iterable[str]) -> list[str]:
    """The lines of an index that link to any of `names`."""
    wanted = set(names)
    if data is None or not wanted:
        return []
    return without_links(data.decode("utf-8", "surrogateescape"), wanted)[1]


def _index_lines(engine: Engine, names: Iterable[str]) -> list[str]:
    return _linking(engine.read_local(INDEX), names)


def _indexes_before(engine: Engine) -> list[bytes]:
    """MEMORY.md here and on the remote before a forget syncs it: a merge may drop another
    device's line for the same file, whose hash must still go into the tombstone."""
    found = [engine.read_local(INDEX)]
    with contextlib.suppress(MemsyncError):
        found.append(engine.store.get(INDEX)[0])
    return [data for data in found if data is not None]


def _known_index_lines(engine: Engine, names: Iterable[str], before: list[bytes]) -> list[str]:
    """Every index line linking to `names` this device knows of: before and after the sync,
    and in its history copies of MEMORY.md."""
    copies = [v.path.read_bytes() for v in engine.state.history(INDEX)]
    return [line for data in [*before, *copies] for line in _linking(data, names)]


def forget_files(engine: Engine, names: list[str]) -> ForgetReport:
    """Forget whole files, and their index lines, everywhere this device can reach."""
    before = _indexes_before(engine)
    _sync_index(engine)
    report = ForgetReport(files=sorted(set(names)))
    with engine.locked():
        index_lines = _index_lines(engine, names)
        report.index_lines = len(index_lines)
        known = index_lines + _known_index_lines(engine, names, before)
        job = _start(engine, "forget", names, line_hashes(known))
        _run_job(engine, job, report)
    if index_lines:
        _push(engine, [INDEX], report)
    return report


# --- other devices' tombstones ---------------------------------------------------------------


def apply_tombstones(
    engine: Engine, data: bytes, listing: dict[str, Entry], local: LocalScan
) -> None:
    """Apply, once each, the tombstones this device has not applied yet."""
    doc = read_tombstones(data)
    meta = engine.state.meta
    before = set(meta.get("tombstones_applied", []))
    applied = set(before)
    fresh = {h: t["at"] for h, t in doc["lines"].items() if t["id"] not in before}
    _remember_lines(engine, fresh)
    _forget_conflicts(engine, doc["conflicts"], before)
    applied |= {t["id"] for t in (*doc["lines"].values(), *doc["conflicts"].values())}
    failed = set()
    for name, t in sorted(doc["files"].items()):
        if t["id"] in before:
            continue
        try:
            _apply_file_tombstone(engine, name, t, listing, local)
        except (MemsyncError, OSError):
            failed.add(t["id"])  # tried again at the next sync
            continue
        applied.add(t["id"])
    _scrub_local(engine, fresh, local)  # after the files: a forgotten one is not edited first
    meta["tombstones_applied"] = sorted(applied - failed)


def _scrub_local(engine: Engine, fresh: dict[str, float], local: LocalScan) -> None:
    """Take lines another device just forgot out of the memory files here, where they are old
    content: in the file's base (synced before), or in a file last written before the forget.
    An edit made here before the forget can hold a forgotten line unchanged (an item moved to
    Consumed/Delivered, a line carried to another section), and a merge keeps an edit over a
    concurrent removal: without this, that edit would bring the line back everywhere. A line
    written again after the forget, in a file changed since, is new content and stays."""
    if not fresh:
        return
    for name in sorted(local.content.hashes):
        try:
            data = local.content[name]
        except (MemsyncError, OSError):
            continue
        held = line_hashes(data.decode("utf-8", "replace").splitlines()) & set(fresh)
        if not held:
            continue  # the usual case: no base is read
        path = engine.local_path(name)
        try:
            mtime = local.mtimes.get(name) or path.stat().st_mtime
        except OSError:
            continue
        base = engine.state.base(name)
        in_base = line_hashes(base.decode("utf-8", "replace").splitlines()) if base else set()
        old = {h for h in held if h in in_base or mtime <= fresh[h]}
        clean = scrub(data, old) if old else data
        if clean == data:
            continue
        engine.write_local(name, clean)  # no history copy: that copy is what is forgotten
        with contextlib.suppress(OSError):
            os.utime(path, (mtime, mtime))  # still the time of the user's edit
        local.content.add(name, sha256(clean), clean)


def _forget_conflicts(engine: Engine, ids: dict[str, Any], before: set[str]) -> None:
    """Clear the conflicts here whose descriptions another device's forget took off the
    remote record (by the conflict's id: the tombstone never holds the text)."""
    fresh = {c for c, t in ids.items() if t["id"] not in before}
    if fresh:
        kept = [c for c in engine.state.conflicts if c.get("id") not in fresh]
        engine.state.meta["conflicts"] = kept


def _apply_file_tombstone(
    engine: Engine, name: str, t: dict[str, Any], listing: dict[str, Entry], local: LocalScan
) -> None:
    state = engine.state
    entry = listing.get(name)
    if entry is not None and entry.etag in t["etags"]:
        listing.pop(name)  # the forgotten copy itself (its forget was interrupted): finish it
        with contextlib.suppress(NotFound, PreconditionFailed):
            engine.store.delete(name, entry.etag)
    rec = state.records.get(name)
    from_before = rec is not None and (rec.etag in t["etags"] or rec.synced_at <= t["at"])
    path = engine.local_path(name)
    data = engine.read_local(name)
    if data is not None:
        if rec is None:
            from_before = local.mtimes.get(name, path.stat().st_mtime) <= t["at"]
        if from_before:
            if rec is not None and sha256(data) == rec.sha:
                path.unlink()
            else:
                quarantine(engine, name, data)
            local.content.discard(name)
    if from_before:
        state.forget(name)
        state.unqueue([name])
        state.resolve_conflicts(name)
    # history of the forgotten lineage goes whole (a merge may have kept a copy after the
    # forget, when its tombstone was late); beside content from after it, the older copies
    state.drop_history(name, before=None if from_before else t["at"])


def recreate_blocked(engine: Engine, name: str) -> str | None:
    """Why a push must not create `name` again after it vanished from the remote: another
    device forgot it (a tombstone not applied here yet) or purged the project. One or two
    GETs, only on that rare path."""
    from memsync.sync.engine import TOMBSTONES

    store = engine.store
    try:
        data, _ = store.get(TOMBSTONES)
    except NotFound:
        data = None
    t = read_tombstones(data)["files"].get(name)
    if t is not None and t["id"] not in engine.state.meta.get("tombstones_applied", []):
        return (
            f"{name} was forgotten on another device, so it was not uploaded; "
            "run `memsync sync` to set your copy aside"
        )
    try:
        store.get(PURGED)
    except NotFound:
        return None
    return f"this project was purged, so {name} was not uploaded; `{REPUBLISH}` publishes again"


# --- quarantine ------------------------------------------------------------------------------


def quarantine(engine: Engine, name: str, data: bytes) -> Path:
    """Move an unsynced edit of a forgotten file out of the memory dir, keeping it whole."""
    from memsync.sync.state import history_folder

    folder = private_dir(engine.ctx.home / "quarantine" / engine.ctx.state_dir.name)
    flat = name.replace("/", "__")
    if len(flat.encode("utf-8")) > 180:
        flat = history_folder(name) + ".md"
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{flat}"
    atomic_write(path, data)
    engine.local_path(name).unlink(missing_ok=True)
    entry = {"file": name, "path": str(path), "at": time.time()}
    engine.state.meta["quarantined"] = [*engine.state.meta.get("quarantined", []), entry]
    return path


def quarantine_notices(engine: Engine) -> list[str]:
    """One sentence for each quarantined edit still there (those the user deleted are done)."""
    kept = [q for q in engine.state.meta.get("quarantined", []) if Path(q["path"]).exists()]
    if kept:
        engine.state.meta["quarantined"] = kept
    else:
        engine.state.meta.pop("quarantined", None)
    return [
        f"{q['file']} was forgotten on another device, so your unsynced edit of it was not "
        f"uploaded but moved to {q['path']}: copy what you still need into a new memory file, "
        "then delete that file"
        for q in kept
    ]


def incoming(engine: Engine, names: Iterable[str]) -> list[str]:
    """For `status`: the files here that another device forgot and the next sync will remove
    (or, edited here, set aside). One GET of the tombstone list."""
    from memsync.sync.engine import TOMBSTONES

    try:
        data, _ = engine.store.get(TOMBSTONES)
    except MemsyncError:
        return []
    files = read_tombstones(data)["files"]
    applied = set(engine.state.meta.get("tombstones_applied", []))
    return [
        f"{name} was forgotten on another device; the next sync removes it here (an edit "
        "not yet uploaded is set aside, not uploaded)"
        for name in sorted(names)
        if name in files and files[name]["id"] not in applied
    ]


def notices(engine: Engine, remote_purged: dict[str, Any] | None = None) -> list[str]:
    """What `status` says about forgetting and purging that needs the user."""
    out = []
    if remote_purged is not None and not engine.state.meta.get("purged"):
        engine.state.meta["purged"] = remote_purged or {"at": time.time()}
    if engine.state.meta.get("purged"):
        out.append(str(purged_here(engine)))
    for job in engine.state.meta.get("forgetting", []):
        out.append(
            f"forgetting {', '.join(job['files']) or 'the matched entries'} is not finished on "
            "the remote; the next `memsync sync` finishes it"
        )
    return out + quarantine_notices(engine)


# --- forget --match: entries inside append-type files, whole files elsewhere ---------------

_ENTRY_STRATEGIES = ("sections", "commitments", "carry_forward", "digest")


@dataclass
class MatchPlan:
    text: str
    files: list[str] = field(default_factory=list)  # forgotten whole
    entries: dict[str, int] = field(default_factory=dict)  # name -> entries removed
    rewrites: dict[str, bytes] = field(default_factory=dict)  # name -> content without them
    indexes_before: list[bytes] = field(default_factory=list)  # MEMORY.md before the pull


def _contains(data: bytes | str, needle: str) -> bool:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return needle.casefold() in text.casefold()


def _without_entries(name: str, text: str, needle: str) -> tuple[str, int] | None:
    """The file with every matching entry removed, or None if only forgetting it whole will do
    (the match is in frontmatter or a heading, or the type has no entries)."""
    from memsync.memory import frontmatter as memory
    from memsync.memory import sections
    from memsync.memory.memtypes import type_of

    try:
        doc = memory.parse(text)
    except memory.FrontmatterError:
        return None
    mtype = type_of(name, doc.meta)
    if mtype.name == "index":
        lines = text.splitlines(keepends=True)
        kept = [line for line in lines if not _contains(line, needle)]
        return "".join(kept), len(lines) - len(kept)
    if mtype.merge not in _ENTRY_STRATEGIES or (doc.meta and _contains(repr(doc.meta), needle)):
        return None
    tree = sections.parse(doc.body)
    removed = 0
    for section in tree.walk():
        if section.heading and _contains(section.heading, needle):
            return None
        kept = [e for e in section.entries if not _contains(e, needle)]
        removed += len(section.entries) - len(kept)
        section.entries = kept
    body = tree.render()
    if _contains(body, needle):
        return None
    return memory.render(doc.meta, body) if doc.meta is not None else body, removed


def plan_match(engine: Engine, needle: str) -> MatchPlan:
    """What `forget --match` will remove. Pulls first, so remote-only files are seen too."""
    from memsync.sync.engine import is_ignored

    if len(needle.strip()) < 3:
        raise UserError("--match needs at least 3 characters, so it cannot match everything")
    before = _indexes_before(engine)
    engine.run("pull")
    plan = MatchPlan(needle, indexes_before=before)
    root = engine.ctx.memory_dir
    if not root.is_dir():
        return plan
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if not path.is_file() or path.is_symlink() or is_ignored(name):
            continue
        data = path.read_bytes()
        if not _contains(data, needle):
            continue
        rewritten = _without_entries(name, data.decode("utf-8", "replace"), needle)
        if rewritten is None:
            plan.files.append(name)
        else:
            plan.rewrites[name] = rewritten[0].encode()
            plan.entries[name] = rewritten[1]
    return plan


def _matching_conflicts(engine: Engine, needle: str) -> set[str]:
    """The ids of the conflict records, here and on the remote, whose description holds the
    text (a heading or a commitment id it names); those here are cleared now. The remote's
    are taken off it with the job's remote part, and the other devices clear theirs by id."""
    from memsync.sync.conflicts import REMOTE_KEY, recorded

    def about(c: dict[str, Any]) -> bool:  # the description: a name holding it is no reason
        return _contains(str(c.get("detail")), needle)

    state = engine.state
    hit = [c for c in state.conflicts if about(c)]
    ids = {c["id"] for c in hit if isinstance(c.get("id"), str)}
    state.meta["conflicts"] = [c for c in state.conflicts if not about(c)]
    with contextlib.suppress(MemsyncError):
        data, _ = engine.store.get(REMOTE_KEY)
        ids |= {c["id"] for c in recorded(data) if about(c)}
    return ids


def apply_match(engine: Engine, plan: MatchPlan) -> ForgetReport:
    """Remove the entries (pushed through the normal merge, where a removal made since the
    base stays removed), forget the whole files everywhere, and drop every local history
    version holding the text. The tombstone and the audit log get hashes, never the text."""
    report = ForgetReport(files=sorted(plan.files))
    with engine.locked():
        forgotten = _index_lines(engine, plan.files)
        forgotten += _known_index_lines(engine, plan.files, plan.indexes_before)
        for name, data in plan.rewrites.items():
            forgotten += _removed_lines(engine.read_local(name), data)
        for name in engine.state.history_names():
            for version in engine.state.history(name):
                text = version.path.read_bytes().decode("utf-8", "replace")
                forgotten += [line for line in text.splitlines() if _contains(line, plan.text)]
        forgotten += _earlier_forms(forgotten)
        report.index_lines = len(_index_lines(engine, plan.files))
        job = _start(
            engine,
            "forget-match",
            plan.files,
            line_hashes(forgotten),
            plan.rewrites,
            _matching_conflicts(engine, plan.text),
            match_sha256=hashlib.sha256(plan.text.encode()).hexdigest()[:16],
            entries=plan.entries,
        )
        for name, data in plan.rewrites.items():
            engine.write_local(name, data)  # no history copy: that copy is what we forget
        for name in engine.state.history_names():
            for version in engine.state.history(name):
                if _contains(version.path.read_bytes(), plan.text):
                    version.path.unlink()
                    version.path.with_suffix(".reason").unlink(missing_ok=True)
        _run_job(engine, job, report)
    _push(engine, [*plan.rewrites, *([INDEX] if report.index_lines else [])], report)
    return report


# --- purge -----------------------------------------------------------------------------------


@dataclass
class PurgeReport:
    remote_deleted: int
    state_removed: bool
    unreachable: list[str]


def _delete_remote(engine: Engine, name: str) -> bool:
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            _, etag = store.get(name)
        except NotFound:
            return False
        try:
            store.delete(name, etag)
            return True
        except NotFound:
            return False
        except PreconditionFailed:
            continue  # changed meanwhile: purging wins, try again with the new ETag
    raise UserError(f"{name} kept changing on the remote; run `memsync purge --all` again")


def purge(engine: Engine) -> PurgeReport:
    """Hard-erase the remote prefix and all of memsync's local state for this project, then
    mark both so that no device uploads this project's memory again without being told to."""
    store = engine.store
    deleted = 0
    marker = {"id": os.urandom(8).hex(), "at": time.time(), "device": engine.ctx.device}
    with engine.locked():
        for key, entry in sorted(store.list().items()):
            try:
                store.delete(key, entry.etag)
                deleted += key != PURGED
            except NotFound:
                continue
            except PreconditionFailed:
                deleted += _delete_remote(engine, key)
        payload = json.dumps(marker, sort_keys=True).encode()
        try:
            store.create(PURGED, payload)
        except NotFound:  # no container (an Azure remote never pushed to)
            store.ensure()
            store.create(PURGED, payload)
        except PreconditionFailed:
            pass  # another purge wrote its own marker meanwhile
        state_dir = engine.ctx.state_dir
        for path in state_dir.iterdir():
            if path.name == "lock":
                continue
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        shutil.rmtree(engine.ctx.home / "quarantine" / state_dir.name, ignore_errors=True)
        engine.state.meta = {"purged": marker}
        engine.state.save_meta()
    audit(engine, "purge", remote_objects_deleted=deleted)
    remote_kind = "azure" if engine.ctx.remote.startswith("http") else "folder"
    unreachable = [
        "other devices keep their local copies; their next sync sees the purge, uploads "
        "nothing and says so (to erase memsync's state there too, run `memsync purge --all "
        "--yes` on each)",
        f"the memory files themselves in {engine.ctx.memory_dir} were left in place; "
        f"no device publishes them again until someone runs `{REPUBLISH}`",
    ]
    if remote_kind == "azure":
        unreachable.append(
            "if soft delete or blob versioning is enabled on the storage account, Azure keeps "
            "deleted blobs for its retention period; purge them there"
        )
    else:
        unreachable.append("backups or snapshots of the remote folder are out of memsync's reach")
    return PurgeReport(deleted, True, unreachable)


def _when(ts: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(_number(ts)))


def purged_here(engine: Engine) -> Purged:
    """The sentence for a device that purged, or saw the purge of, this project."""
    marker = engine.state.meta.get("purged") or {}
    by = marker.get("device")
    where = "from this device" if by == engine.ctx.device else f"from the remote by {by}"
    return Purged(
        f"this project's memory was purged {where if by else 'from the remote'} on "
        f"{_when(marker.get('at'))}, so memsync uploads nothing from here; run `{REPUBLISH}` "
        "to publish this device's memory again"
    )


def remote_purge_marker(engine: Engine) -> dict[str, Any]:
    try:
        data, _ = engine.store.get(PURGED)
        marker = json.loads(data)
    except (NotFound, ValueError):
        return {}
    return marker if isinstance(marker, dict) else {}


def republish(engine: Engine) -> bool:
    """Lift the purge marks (here and on the remote). True if there was one."""
    with engine.locked():
        had = engine.state.meta.pop("purged", None) is not None
        for _ in range(MAX_ATTEMPTS):
            try:
                _, etag = engine.store.get(PURGED)
                engine.store.delete(PURGED, etag)
            except NotFound:
                break
            except PreconditionFailed:
                continue
            had = True
            break
        engine.state.save_meta()
    if had:
        audit(engine, "republish")
    return had
