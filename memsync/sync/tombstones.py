"""The remote record of forgetting, and what every sync does about it (admin/forget.py starts
the forgets and purges; this is the part a sync, push or pull runs, so it sits under the engine).

A forget job saved in meta.json (`forgetting`) is finished here: its tombstone on the remote
(`_memsync/forgotten.json`), the remote deletions, the local erase. Other devices' tombstones
are applied here, once each, and an unsynced edit of a forgotten file is quarantined. A purge
leaves `_memsync/purged.json` on the remote and `purged` in meta.json; the sentence for it is
here too.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.context.config import state_folders, strip_query
from memsync.memory.index_links import INDEX, without_links
from memsync.stores import MAX_ATTEMPTS
from memsync.sync.forgotten import (
    body_hash,
    body_hashes,
    holds_text,
    is_mark,
    known_by,
    line_hash,
    line_hashes,
    scrub,
    text_marks,
)
from memsync.sync.remote_keys import PURGED, TOMBSTONES
from memsync.sync.state import NO_COPY, history_folder, pending_forgets_file
from memsync.util.dates import local_time
from memsync.util.errors import MemsyncError, NotFound, PreconditionFailed, Unreachable, UserError
from memsync.util.fsutil import atomic_write, file_lock, private_dir, sha256

if TYPE_CHECKING:
    from collections.abc import Container, Iterable

    from memsync.memory.frontmatter import Document
    from memsync.stores import Entry
    from memsync.sync.engine import Engine, LocalScan
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


def scrub_history(state: State, forgotten: set[str], engine: Engine | None = None) -> None:
    """Take forgotten lines out of every local history copy (a copy left empty goes). With
    `engine` (whose state `state` is), each file's earlier wordings of them go too: each
    history copy is read once (`_earlier_wordings`)."""
    for name in state.history_names():
        try:
            copies = [(v, v.path.read_bytes()) for v in state.history(name)]  # newest first
        except OSError:
            continue
        gone = forgotten
        if engine is not None:
            gone = _earlier_wordings(engine, name, [data for _, data in copies], forgotten)
        for version, data in copies:
            clean = scrub(data, gone)
            if clean == data:
                continue
            if clean.strip():
                atomic_write(version.path, clean)
            else:
                version.path.unlink(missing_ok=True)
                version.path.with_suffix(".reason").unlink(missing_ok=True)


def scrub_bases(state: State) -> None:
    """Take every line forgotten here out of the synced copies (merge bases) this device
    keeps. For a purged project, whose refused syncs replace no base: without this, the copy
    of a file synced before a forget made or taken in since keeps the line until the device
    publishes again, which it may never do (it purged to leave that remote)."""
    lines = set(state.meta.forgotten_lines or ())
    done = sha256("\n".join(sorted(lines)).encode())  # each refused sync reads no base again
    if not lines or state.meta.bases_scrubbed == done:
        return
    state.meta.bases_scrubbed = done
    for name, rec in list(state.records.items()):
        base = state.content(rec.sha)
        if base is not None and (clean := scrub(base, lines)) != base:
            state.rebase(name, clean)


def _remember_lines(engine: Engine, hashes: dict[str, float]) -> None:
    """Keep the hashes (never the lines) so that later history copies leave them out too."""
    if hashes:
        known = engine.state.meta.forgotten_lines
        for h, at in hashes.items():
            known.setdefault(h, at)
        scrub_history(engine.state, set(hashes), engine)
        waiting = engine.state.meta.index_comebacks or {}
        for name, line in list(waiting.items()):
            if line_hash(line) in hashes:
                del waiting[name]  # an index line kept for a file that came back: forgotten


def _earlier_wordings(
    engine: Engine, name: str, older: list[bytes], forgotten: set[str]
) -> set[str]:
    """`forgotten`, and the hashes of the earlier wordings of those lines that the history
    copies `older` (newest first) of `name` hold. A line reworded and then forgotten is one
    entry: the copies from before the rewording hold it in its old words, which its hash
    cannot name (fresh-eyes s30f). The file's versions are walked from the newest (the file
    here, its synced copy) back through its history; where a newer version holds a forgotten
    line and the older one, instead, a line like it (the merge's similarity test, as for a
    rewording made here), that older line is forgotten too, and so on back."""
    state = engine.state
    rec = state.records.get(name)
    newest = [engine.read_local(name), state.content(rec.sha) if rec is not None else None]
    chain = [
        data.decode("utf-8", "surrogateescape").splitlines() for data in (*newest, *older) if data
    ]
    found = set(forgotten)
    for newer, old in itertools.pairwise(chain):
        found |= _rewords_of_forgotten(old, newer, dict.fromkeys(found, 0.0))
    return found


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
        etags = t.get("etags")
        if not isinstance(etags, list):
            etags = []
        out["files"][name] = {
            "id": str(t.get("id") or f"v1:{name}:{at}"),
            "at": at,
            "device": str(t.get("device") or ""),
            "etags": sorted(e for e in etags if isinstance(e, str)),
        }
        # copies written late; body hashes of the versions; hashes of their body lines
        for kind in ("late", "bodies", "lines"):
            found = t.get(kind) if isinstance(t.get(kind), list) else []
            if found:
                out["files"][name][kind] = sorted(e for e in found if isinstance(e, str))
    for kind in ("lines", "conflicts"):  # line hashes; ids of conflict records taken off
        items = doc.get(kind)
        for key, t in items.items() if isinstance(items, dict) else ():
            if isinstance(t, dict) and isinstance(t.get("id"), str):
                out[kind][key] = {"id": t["id"], "at": _number(t.get("at"))}
                if t.get("late") is True:  # a line written after the forget (_note_late_lines)
                    out[kind][key]["late"] = True
    return out


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _write_tombstones(
    engine: Engine,
    job: dict[str, Any],
    etags: dict[str, list[str]],
    late: dict[str, list[str]] | None = None,
) -> None:
    """Add the job's tombstones to the remote list (conditional read-modify-write). `late`:
    the copies another device wrote after the user asked (the forget was held up): deleted
    like the others, but the device that wrote one sets its edit aside, never erases it."""
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
            bodies = set(old.get("bodies", [])) if old else set()
            bodies |= set(job.get("bodies", {}).get(name, []))
            if bodies:
                doc["files"][name]["bodies"] = sorted(bodies)
            body_lines = set(old.get("lines", [])) if old else set()
            body_lines |= set(job.get("body_lines", {}).get(name, []))
            if body_lines:
                doc["files"][name]["lines"] = sorted(body_lines)
            was_late = set(old.get("late", [])) if old else set()
            if was_late or (late or {}).get(name):
                doc["files"][name]["late"] = sorted(was_late | set((late or {}).get(name, [])))
        for digest in job["lines"]:
            doc["lines"].setdefault(digest, {"id": job["id"], "at": job["at"]})
        for digest in job.get("late_lines", []):
            doc["lines"][digest]["late"] = True
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


def finish_remote(
    engine: Engine,
    job: dict[str, Any],
    listing: dict[str, Entry] | None,
    deleted: list[str] | None = None,
    *,
    first: bool = False,
) -> list[str]:
    """The job's remote part: the tombstone first, then the deletions (If-Match), each added
    to `deleted` as it happens. A copy that changed meanwhile is added to the tombstone and
    deleted too. Raises Unreachable.

    `first`: run as the user asks (`forget`), not held up: the remote copies listed now are
    the ones the user forgot, whatever this device knew of them (its copy may be older than
    another device's upload, finding s28c F8); they are noted in the job (`seen`), so a run
    that finishes it after an outage does not take them for late edits."""
    store = engine.store
    if listing is None:
        try:
            listing = store.list()
        except NotFound:
            listing = {}
    etags = {n: [listing[n].etag] for n in job["files"] if n in listing}
    if first:
        job["seen"] = {n: e[0] for n, e in etags.items()}
    late = _late_copies(engine, job, etags)
    known = set(job["lines"])
    index = _remote_index(engine, job) if job["files"] and INDEX in listing else None
    fetched: dict[str, tuple[bytes, str]] = {}  # copies read once, for the scrubs below
    if not first:  # index lines another device wrote while the forget was held up
        _note_late_lines(job, set(job["lines"]) - known)
        if job["lines"]:  # and rewordings of forgotten lines it uploaded meanwhile
            reworded = _reworded_meanwhile(engine, job, listing, fetched)
            job["lines"] = sorted({*job["lines"], *reworded})
            _note_late_lines(job, reworded)
    _take_conflicts(engine, job, None)  # their ids go into the tombstone
    _write_tombstones(engine, job, etags, late)
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
                _write_tombstones(engine, job, {name: [etag]}, {name: [etag]})
        else:
            raise UserError(f"{name} kept changing on the remote; run `memsync sync` to finish")
    if index is not None:
        _drop_remote_index_lines(engine, job, index, first)
    lines = set(job["lines"])
    for name in job.get("scrub", []):
        _scrub_remote(engine, name, lines, fetched.pop(name, None))
    if lines and not first:
        _scrub_written_meanwhile(engine, job, listing, lines, fetched)
    _take_conflicts(engine, job, set(job.get("conflicts", [])))
    return deleted


def _scrub_written_meanwhile(
    engine: Engine,
    job: dict[str, Any],
    listing: dict[str, Entry],
    lines: set[str],
    fetched: dict[str, tuple[bytes, str]],
) -> None:
    """A forget that waited (an outage, or made while syncing another remote) takes the lines
    out of the remote copies written since this device last synced them, too: another
    device's roll-up or edit made before it heard of the forget holds them, and the remote's
    copy when the forget runs is forgotten. One GET each, only on this path."""
    records = engine.state.records
    done = {*job["files"], *job.get("scrub", [])}
    for name, found in sorted(listing.items()):
        if name in done or name.startswith("_memsync/"):
            continue
        rec = records.get(name)
        if rec is None or rec.etag != found.etag:
            _scrub_remote(engine, name, lines, fetched.pop(name, None))


def _reworded_meanwhile(
    engine: Engine,
    job: dict[str, Any],
    listing: dict[str, Entry],
    fetched: dict[str, tuple[bytes, str]],
) -> set[str]:
    """The hashes of the lines of remote copies written since this device last synced them
    that reword a forgotten line of its synced copy: another device, not having heard of the
    forget held up here, reworded the line and uploaded it; a merge would keep that edit over
    the removal (fresh-eyes s32a, finding 1). One GET each, only on this path, kept in
    `fetched` for the scrubs that follow."""
    records = engine.state.records
    fresh = dict.fromkeys(job["lines"], 0.0)
    found: set[str] = set()
    for name, entry in sorted(listing.items()):
        rec = records.get(name)
        if rec is None or rec.etag == entry.etag or name in job["files"]:
            continue
        base = engine.state.content(rec.sha)
        if base is None:
            continue
        try:
            data, _ = fetched[name] = engine.store.get(name)
        except NotFound:
            continue
        lines = data.decode("utf-8", "surrogateescape").splitlines()
        found |= _rewords_of_forgotten(
            lines, base.decode("utf-8", "surrogateescape").splitlines(), fresh
        )
    return found


def _late_copies(
    engine: Engine, job: dict[str, Any], etags: dict[str, list[str]]
) -> dict[str, list[str]]:
    """The remote copies (of `etags`, name -> [etag]) this device did not know when the user
    asked: another device's edit synced while the job waited for the remote. By the ETag the
    job noted; where it noted none (the job was started under another remote URL, whose
    state held no records of these files, finding F14), by the copy's body: one that is no
    version this device held is another device's (one GET each, only then)."""
    known = job.get("known")
    if known is None:  # a job saved before memsync noted what it knew
        return {}
    # the copies on the remote when the user asked are what the user forgot, not late edits
    seen = job.get("seen")
    if not isinstance(seen, dict):
        seen = {}
    etags = {n: e for n, e in etags.items() if seen.get(n) != e[0]}
    late = {n: e for n, e in etags.items() if known.get(n) not in (None, e[0])}
    bodies = job.get("bodies", {})
    for name, found in etags.items():
        if name in known or not bodies.get(name):
            continue  # a file this device held nothing of: the remote copy is what it forgot
        try:
            data, etag = engine.store.get(name)
        except NotFound:
            continue
        if body_hash(data) not in bodies[name]:
            late[name] = sorted({*found, etag})
    return late


def _take_conflicts(engine: Engine, job: dict[str, Any], ids: set[str] | None) -> None:
    """The remote conflict record without the entries about the job's files or with the ids
    the job collected (a description naming a forgotten heading or id), conditional writes.
    With `ids` None, only add the ids of those entries to the job (before its tombstone)."""
    from memsync.sync.conflicts import recorded, rewrite
    from memsync.sync.remote_keys import CONFLICTS

    files = set(job["files"])
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = engine.store.get(CONFLICTS)
        except NotFound:
            return
        gone = {c["id"] for c in recorded(data) if names_forgotten(c, files)}
        if ids is None:
            job["conflicts"] = sorted(set(job.get("conflicts", [])) | gone)
            return
        clean = rewrite(data, gone | ids)
        if clean == data:
            return
        try:
            engine.store.replace(CONFLICTS, clean, etag)
            return
        except NotFound:
            return
        except PreconditionFailed:
            continue
    raise UserError("the remote conflict record kept changing; run `memsync sync` to finish")


def names_forgotten(conflict: dict[str, Any], files: Iterable[str]) -> bool:
    """Whether a conflict record is about a forgotten file: on it, or on its MEMORY.md line
    (merge.py's "the index line for NAME", which names the file; s28c F9)."""
    names = set(files)
    detail = str(conflict.get("detail") or "")
    return conflict.get("file") in names or any(
        re.search(rf"the index line for (?:\./)?{re.escape(n)}(?![\w./-])", detail) for n in names
    )


def _scrub_index_history(engine: Engine, names: Iterable[str], before: float | None) -> None:
    """Take the lines linking to forgotten files out of this device's history copies of
    MEMORY.md saved before the forget (`before`; None: all of them): such a line holds the
    file's description, and the tombstone's hashes reach only the wordings the forgetting
    device knew (another device's own, or the one before a reword, would stay; s28c F9)."""
    wanted = set(names)
    for version in engine.state.history(INDEX):
        if before is not None and version.saved_at > before:
            continue
        data = version.path.read_bytes()
        lines = linking_lines(data, wanted)
        if not lines:
            continue
        clean = scrub(data, line_hashes(lines))
        if clean.strip():
            atomic_write(version.path, clean)
        else:
            version.path.unlink(missing_ok=True)
            version.path.with_suffix(".reason").unlink(missing_ok=True)


def _scrub_remote(
    engine: Engine, name: str, forgotten: set[str], read: tuple[bytes, str] | None = None
) -> None:
    """Take the forgotten lines out of the remote copy of a file `forget --match` rewrote:
    pushed through a merge from a stale base (a forget made offline), a removal could lose to
    a line the remote holds twice. `read`: the copy, already read this run (a write since
    fails its If-Match, and the copy is read again)."""
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = read or store.get(name)
        except NotFound:
            return
        read = None
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
    job["lines"] = sorted(set(job["lines"]) | line_hashes(linking_lines(data, job["files"])))
    return data, etag


def _note_late_lines(job: dict[str, Any], hashes: set[str]) -> None:
    """Lines of the remote index linking to a forgotten file that the forgetting device
    never held: written by another device after the user asked (the forget was held up). They
    go like the others, but the device that wrote one sets its index as it was aside (see
    `_scrub_local`), as it does an edited copy of the file (`late`)."""
    if hashes:
        job["late_lines"] = sorted(set(job.get("late_lines", [])) | hashes)


def _drop_remote_index_lines(
    engine: Engine, job: dict[str, Any], index: tuple[bytes, str] | None, first: bool
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
            if not first:
                _note_late_lines(job, line_hashes(removed) - known)
            _write_tombstones(engine, job, {})
        try:
            engine.store.replace(INDEX, text.encode("utf-8", "surrogateescape"), etag)
            return
        except NotFound:
            return
        except PreconditionFailed:
            index = _remote_index(engine, job)
    raise UserError("MEMORY.md kept changing on the remote; run `memsync sync` to finish")


def _without_known(data: bytes, known: set[str]) -> tuple[str, list[str]]:
    """`data` as text without the lines whose hash is in `known`, and the lines removed."""
    kept: list[str] = []
    removed: list[str] = []
    for line in data.decode("utf-8", "surrogateescape").splitlines(keepends=True):
        (removed if line_hash(line) in known else kept).append(line)
    return "".join(kept), removed


def erase_here(engine: Engine, job: dict[str, Any], *, first: bool) -> None:
    """The job's local part: files, history, records, index lines; forgotten lines out of
    history. On a later run (`first` False) a file written since the job is left alone."""
    state = engine.state
    # the lines removed, and the forgotten files' body lines: a copy of one that another
    # device merged into a file and pushed before it heard of the forget (an edit's `push
    # FILE` is one conditional PUT) may come down here before that device takes it out
    lines = {*job["lines"], *(h for hs in job.get("body_lines", {}).values() for h in hs)}
    if first:
        _erase_in_other_states(engine, dict.fromkeys(job["files"]), lines, [job])
        if any(_DIGEST.fullmatch(name) for name in job["files"]):
            # a roll-up made here (offline, not synced yet) may hold a forgotten digest's day
            # (fresh-eyes s31c, finding q17)
            local = engine.scan_local()
            for name in job["files"]:
                _drop_from_rollups(engine, name, local)
    for name in job["files"]:
        path = engine.local_path(name)
        with contextlib.suppress(FileNotFoundError):
            if first or path.stat().st_mtime <= job["at"]:
                path.unlink()
        state.drop_history(name)
        state.forget(name)
        state.unqueue([name])
        state.conflicts.resolve(name)  # a conflict about a forgotten file is moot
    if job["files"]:  # its index line's conflicts and history copies, from before the job
        state.conflicts.drop(
            lambda c: names_forgotten(c.as_json(), job["files"]) and c.at <= job["at"]
        )
        _scrub_index_history(engine, job["files"], job["at"])
    index = engine.read_local(INDEX)
    if index is not None and job["files"]:
        text, removed = without_links(index.decode("utf-8", "surrogateescape"), set(job["files"]))
        if removed and not first:
            # the forget waited for the remote: a line linking to a forgotten file here now
            # was written since (the file made anew, its new index line), unless it is one
            # the forget took out (fresh-eyes s31b, finding 1)
            text, removed = _without_known(index, set(job["lines"]))
        if removed:  # no history copy: that copy is what is forgotten
            engine.write_local(INDEX, text.encode("utf-8", "surrogateescape"))
    _remember_lines(engine, dict.fromkeys(lines, job["at"]))  # history keeps none of them


def _erase_in_other_states(
    engine: Engine,
    files: dict[str, float | None],
    lines: set[str],
    carry: list[dict[str, Any]],
) -> None:
    """The project's state kept here under another remote URL (this device syncs another
    remote too, or did before it moved: state is per URL) holds copies too. Its history of the
    forgotten `files` goes (of those from before the time each maps to, None: all), and the
    forgotten `lines` out of its other history; its synced copies holding them go, their
    records kept (etag only), so that a sync with that remote sends what is here over them.
    `carry`: the forgets (made here, or another device's taken in), which that state then
    finishes on its remote at its next sync (tombstone and deletions there, as for a forget
    that waited for the remote), if it synced any of their files or lines: the devices that
    sync only that remote forget too, and none of them can bring a copy back through this
    device. Each under its own lock; one that is busy is left as it is."""
    from memsync.sync.state import State

    ctx = engine.ctx
    for folder in state_folders(ctx.home, ctx.project):
        if folder == ctx.state_dir:
            continue
        if not (folder / "records.json").is_file():
            continue
        try:
            with file_lock(folder / "lock", timeout=1):
                other = State(folder, engine.state.history_versions)
                for name, before in files.items():
                    other.drop_history(name, before=before)
                held: set[str] = set()  # synced copies that held forgotten lines
                for name, rec in list(other.records.items()):
                    base = other.content(rec.sha)
                    until = files.get(name)
                    gone = name in files and (until is None or rec.synced_at <= until)
                    if base is not None and lines and scrub(base, lines) != base:
                        held.add(name)
                    if gone or name in held:
                        other.records[name] = rec._replace(sha=NO_COPY)
                if lines:
                    scrub_history(other, lines)
                for job in carry:
                    _carry_job(other, job, held)
                other.save()
        except (TimeoutError, OSError, MemsyncError):
            continue


def _carry_job(other: State, job: dict[str, Any], held: set[str]) -> None:
    """Give a forget made under another state to `other`, to finish on its remote: what it
    knew of the files there (their ETags) is what the forget takes; anything newer there is
    another device's late edit. Only where `other` synced one of the files, or a copy that
    held a forgotten line (`held`, whose remote copies then lose the lines), and had not
    taken that forget in from its own remote."""
    meta = other.meta
    known = {n: rec.etag for n in job["files"] if (rec := other.records.get(n)) is not None}
    rewrite = held if job["lines"] else set()
    if not known and not rewrite:
        return
    if job["id"] in meta.tombstones_applied:
        return
    if any(j.get("id") == job["id"] for j in meta.forgetting):
        return
    copy = {k: v for k, v in job.items() if k not in ("shared", "seen")}
    copy["known"] = known
    copy["scrub"] = sorted({*job.get("scrub", []), *rewrite})
    copy["carried"] = True
    meta.forgetting = [*meta.forgetting, copy]
    meta.tombstones_applied = sorted({*meta.tombstones_applied, job["id"]})


def drop_job(engine: Engine, job: dict[str, Any]) -> None:
    meta = engine.state.meta
    meta.forgetting = [j for j in meta.forgetting if j.get("id") != job["id"]]
    shared = _shared_jobs(engine)
    if shared is not None and any(j.get("id") == job["id"] for j in shared):
        _write_shared(engine, [j for j in shared if j.get("id") != job["id"]])


def _shared_path(engine: Engine) -> Path:
    ctx = engine.ctx
    return pending_forgets_file(ctx.home, ctx.project, ctx.memory_dir)


def _shared_jobs(engine: Engine) -> list[dict[str, Any]] | None:
    """The unfinished forgets kept beside the state folders; None when the file cannot be
    read (then nothing is taken for finished)."""
    try:
        jobs = json.loads(_shared_path(engine).read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return None
    if not isinstance(jobs, list):
        return None
    return [j for j in jobs if isinstance(j, dict) and isinstance(j.get("id"), str)]


def _write_shared(engine: Engine, jobs: list[dict[str, Any]]) -> None:
    path = _shared_path(engine)
    if not jobs:
        path.unlink(missing_ok=True)
        return
    private_dir(path.parent)
    atomic_write(path, json.dumps(jobs, indent=1, sort_keys=True).encode())


def share_job(engine: Engine, job: dict[str, Any]) -> None:
    """Keep a new forget job beside the state folders too (`pending_forgets_file`), until its
    remote part is done: whatever remote URL or meta.json the next sync has, it finishes it."""
    job["shared"] = True
    jobs = _shared_jobs(engine) or []
    _write_shared(engine, [*[j for j in jobs if j.get("id") != job["id"]], job])


def adopt_pending(engine: Engine) -> None:
    """Bring this state's list of unfinished forgets in step with the one kept beside the
    state folders: a job started under another remote URL, or listed in a meta.json moved
    aside since, is taken in (its own tombstone counted as applied here); a shared job gone
    from that list was finished by a sync under another URL, and is dropped here (finishing
    it again could delete a file created anew since)."""
    shared = _shared_jobs(engine)
    if shared is None:
        return
    meta = engine.state.meta
    ids = {j["id"] for j in shared}
    mine = meta.forgetting
    kept = [j for j in mine if not j.get("shared") or j.get("id") in ids]
    known = {j.get("id") for j in kept}
    adopted = [j for j in shared if j["id"] not in known]
    if not adopted and len(kept) == len(mine):
        return
    if kept or adopted:
        meta.forgetting = [*kept, *adopted]
    else:
        meta.forgetting = []
    records = engine.state.records
    for job in adopted:
        # a job started under another remote URL knew no copy of this remote: the copies
        # this state synced are the ones the user meant; another is a later edit (F14)
        known = job.setdefault("known", {})
        for name in job.get("files", []):
            if name not in known and (rec := records.get(name)) is not None and rec.etag:
                known[name] = rec.etag
    if adopted:
        applied = {*meta.tombstones_applied, *(j["id"] for j in adopted)}
        meta.tombstones_applied = sorted(applied)
    engine.state.save_meta()


def finish_pending(engine: Engine, listing: dict[str, Entry]) -> list[str]:
    """Finish the forgets an outage or a kill interrupted, or made while syncing another
    remote (called by every listing run); the sentence for each job finished."""
    finished = []
    for job in list(engine.state.meta.forgetting):
        try:
            finish_remote(engine, job, listing)
        except (Unreachable, UserError):
            continue  # still waiting; the run goes on (and finds the remote as it is)
        for name in job["files"]:
            listing.pop(name, None)
        erase_here(engine, job, first=False)
        drop_job(engine, job)
        engine.state.save_meta()
        audit(engine, "forget-finished", id=job["id"], files=job["files"])
        what = ", ".join(job["files"]) or "the text a `forget --match` found"
        why = (
            "the forget came from another remote this device syncs"
            if job.get("carried")
            else "the forget waited for the remote"
        )
        finished.append(f"finished forgetting {what} here and on the remote ({why})")
    return finished


def linking_lines(data: bytes | None, names: Iterable[str]) -> list[str]:
    """The lines of an index that link to any of `names`."""
    wanted = set(names)
    if data is None or not wanted:
        return []
    return without_links(data.decode("utf-8", "surrogateescape"), wanted)[1]


def apply_tombstones(
    engine: Engine, data: bytes, listing: dict[str, Entry], local: LocalScan
) -> tuple[list[str], set[str]]:
    """Apply, once each, the tombstones this device has not applied yet. Returns the files
    here that forgotten lines were taken out of, and those lines' hashes (to tell the user,
    once the run shows whether they stayed out)."""
    doc = read_tombstones(data)
    meta = engine.state.meta
    before = set(meta.tombstones_applied)
    applied = set(before)
    fresh = {h: t["at"] for h, t in doc["lines"].items() if t["id"] not in before}
    late = {h for h in fresh if doc["lines"][h].get("late")}
    # the versions of each forgotten file this device held, read before lines go from them
    held_bodies = {
        n: _held_bodies(engine, n) for n, t in doc["files"].items() if t["id"] not in before
    }
    _remember_lines(engine, fresh)
    _forget_conflicts(engine, doc["conflicts"], before)
    applied |= {t["id"] for t in (*doc["lines"].values(), *doc["conflicts"].values())}
    failed = set()
    before_scrub = dict(local.content.hashes)
    held = _held_lines(engine, doc["files"], before)  # read before the files' bases go
    for name, t in sorted(doc["files"].items()):
        if t["id"] in before:
            continue
        try:
            _apply_file_tombstone(engine, name, t, listing, local, held_bodies[name])
        except (MemsyncError, OSError):
            failed.add(t["id"])  # tried again at the next sync
            continue
        applied.add(t["id"])
    renamed = _set_aside_copies(engine, doc["files"], before, local)
    renamed |= _set_aside_moved(engine, held, doc["files"], local)
    _scrub_local(engine, fresh, local, listing, late)  # after the files: none is edited first
    gone = {n: t["at"] for n, t in doc["files"].items() if t["id"] not in before}
    _drop_index_lines(engine, gone, local, renamed, listing)
    if gone or fresh:  # this device's state under another remote URL holds them too
        body = {h for n in gone for h in doc["files"][n].get("lines", ())}
        _erase_in_other_states(engine, dict(gone), {*fresh, *body}, _jobs_of(doc, before))
    meta.tombstones_applied = sorted(applied - failed)
    changed = [n for n, h in local.content.hashes.items() if before_scrub.get(n, h) != h]
    return sorted(changed), set(fresh)


def _jobs_of(doc: dict[str, Any], before: set[str]) -> list[dict[str, Any]]:
    """The forgets a tombstone list holds that this device has not applied before, as the
    jobs that made them (by id): what it carries to the other remotes it syncs."""
    jobs: dict[str, dict[str, Any]] = {}

    def job(t: dict[str, Any]) -> dict[str, Any]:
        return jobs.setdefault(
            t["id"],
            {
                "id": t["id"],
                "at": t["at"],
                "device": t.get("device", ""),
                "files": [],
                "lines": [],
                "bodies": {},
                "body_lines": {},
            },
        )

    for name, t in sorted(doc["files"].items()):
        if t["id"] not in before:
            found = job(t)
            found["files"].append(name)
            if t.get("bodies"):
                found["bodies"][name] = t["bodies"]
            if t.get("lines"):
                found["body_lines"][name] = t["lines"]
    for digest, t in sorted(doc["lines"].items()):
        if t["id"] not in before:
            job(t)["lines"].append(digest)
    return list(jobs.values())


def forget_restored(engine: Engine, data: bytes, local: LocalScan) -> list[str]:
    """New files here (no record) whose text is a forgotten version's, under a tombstone this
    device applied before they were here: a backup restored after the forget (`cp`, its times
    new). Each tombstone is applied once, so they are looked for whenever new files are about
    to go up. Under the forgotten name it is that file, deleted; under another name it is set
    aside in quarantine as a renamed copy is (its quarantine notice says so). Returns the names
    of those deleted."""
    doc = read_tombstones(data)
    bodies = {h: name for name, t in doc["files"].items() for h in t.get("bodies", ())}
    if not bodies:
        return []
    found = []
    for name, content, was in _new_copies(engine, local, bodies, local.refused):
        if name == was:
            engine.local_path(name).unlink()
            found.append(name)
        else:
            quarantine(engine, name, content, was=was)
        local.content.discard(name)
        engine.state.unqueue([name])
    return found


def _new_copies(
    engine: Engine, local: LocalScan, bodies: dict[str, str], skip: Container[str]
) -> list[tuple[str, bytes, str]]:
    """The new files here (never synced, not in `skip`) whose body is a forgotten version's
    (`bodies`: body hash -> the forgotten file): (name, content, the forgotten file)."""
    found = []
    for name in sorted(local.content.hashes):
        if name == INDEX or name in engine.state.records or name in skip:
            continue
        try:
            content = local.content[name]
        except (MemsyncError, OSError):
            continue
        was = bodies.get(body_hash(content) or "")
        if was is not None:
            found.append((name, content, was))
    return found


def _set_aside_copies(
    engine: Engine, files: dict[str, Any], before: set[str], local: LocalScan
) -> set[str]:
    """New files here (never synced) whose body is that of a version of a file another device
    just forgot: that file under another name, renamed here before this device heard of the
    forget (finding 16). Each is set aside in quarantine like an unsynced edit of the
    forgotten file, never uploaded. Returns their names (their index lines go too)."""
    bodies = {
        h: name for name, t in files.items() if t["id"] not in before for h in t.get("bodies", ())
    }
    if not bodies:
        return set()
    out = set()
    # the forgotten names themselves are `_apply_file_tombstone`'s
    for name, data, was in _new_copies(engine, local, bodies, files):
        quarantine(engine, name, data, was=was)
        local.content.discard(name)
        engine.state.unqueue([name])
        out.add(name)
    return out


def _held_lines(engine: Engine, files: dict[str, Any], before: set[str]) -> dict[str, str]:
    """{line hash: forgotten file} for the body lines of files another device just forgot
    that this device held (in the file, its synced copy or its history here): only a device
    that held the forgotten text can have moved it into another file without having heard
    of the forget. A line written anew on a device that never held it is not taken. The
    hashes are remembered like `forget --match` lines: history here leaves them out."""
    state = engine.state
    out: dict[str, str] = {}
    at: dict[str, float] = {}
    for name, t in sorted(files.items()):
        if t["id"] in before or not t.get("lines"):
            continue
        versions = [engine.read_local(name)]
        if name in state.records:
            versions.append(state.base(name))
        versions += [v.path.read_bytes() for v in state.history(name)]
        found: set[str] = set()
        for v in versions:
            if v:
                found |= line_hashes(v.decode("utf-8", "surrogateescape").splitlines())
        for h in found & set(t["lines"]):
            out.setdefault(h, name)
            at.setdefault(h, t["at"])
    _remember_lines(engine, at)
    return out


def _set_aside_moved(
    engine: Engine, held: dict[str, str], files: dict[str, Any], local: LocalScan
) -> set[str]:
    """Files here holding a body line of a file another device just forgot, a line this
    device held (`_held_lines`): the forgotten text moved before this device heard of the
    forget (report 16-s28, finding 1). A new file (never synced: the forgotten file renamed
    and edited, or one it was merged into) is set aside whole in quarantine, its index
    lines going too (its frontmatter and index line may say what the forgotten file said);
    a synced file (a sentence merged into it) loses those lines and the file as it was is
    set aside. Nothing of it is uploaded, nothing is lost. Returns the files set aside."""
    if not held:
        return set()
    records = engine.state.records
    out = set()
    for name in sorted(local.content.hashes):
        if name in files:
            continue  # the forgotten name itself (`_apply_file_tombstone`)
        try:
            data = local.content[name]
        except (MemsyncError, OSError):
            continue
        found = line_hashes(data.decode("utf-8", "surrogateescape").splitlines()) & set(held)
        if not found:
            continue
        was = held[min(found)]
        if name not in records and name != INDEX:
            quarantine(engine, name, data, was=was, part=True)
            local.content.discard(name)
            engine.state.unqueue([name])
            out.add(name)
            continue
        path = engine.local_path(name)
        try:
            mtime = local.mtimes.get(name) or path.stat().st_mtime
        except OSError:
            continue
        quarantine(engine, name, data, lines=True, was=was)
        clean = scrub(data, found)
        engine.write_local(name, clean)  # no history copy: that copy is what is forgotten
        with contextlib.suppress(OSError):
            os.utime(path, (mtime, mtime))  # still the time of the user's edit
        local.content.add(name, sha256(clean), clean)
    return out


def _as_written_again(engine: Engine, name: str, local: LocalScan, listing) -> float | None:
    """When the remote copy of `name` was written, where that copy is byte for byte the one
    this device synced and still holds unchanged (so the two are one content) on a store whose
    ETags are content hashes; None otherwise. Lines a forget made before then are in it as
    written again after the forget: this device keeps them, as the remote does."""
    rec = engine.state.records.get(name)
    entry = listing.get(name)
    if (
        rec is None
        or entry is None
        or entry.etag != rec.etag
        or local.content.hashes.get(name) != rec.sha
        or not engine.store.content_etags
    ):
        return None
    return entry.modified


def _reworded_link(data: bytes, base: bytes | None, name: str) -> bool:
    """Whether the index `data` links to `name` by a line its synced copy `base` does not
    hold, where that copy links to `name` too: the line reworded here."""
    had = linking_lines(base, [name]) if base is not None else []
    return bool(had) and any(line not in had for line in linking_lines(data, [name]))


def _drop_index_lines(
    engine: Engine,
    gone: dict[str, float],
    local: LocalScan,
    renamed: set[str],
    listing: dict[str, Entry],
) -> None:
    """The MEMORY.md lines here that link to files another device just forgot, in an index
    written before the forget, and those linking to a copy of one set aside (`renamed`). The
    tombstone's line hashes take the lines that device knew; a line edited here meanwhile
    (its description, the forgotten file's words) is another line to them, and a merge would
    keep it pointing at a deleted file: it goes too, and the index as it was is set aside
    when such an edit was the user's."""
    if not (gone or renamed) or INDEX not in local.content.hashes:
        return
    data = local.content[INDEX]
    path = engine.local_path(INDEX)
    try:
        mtime = local.mtimes.get(INDEX) or path.stat().st_mtime
    except OSError:
        return
    again = _as_written_again(engine, INDEX, local, listing)
    base = engine.state.base(INDEX) if INDEX in engine.state.records else None
    # a synced line of a forgotten file reworded here: this device had not heard of the
    # forget, so when does not matter (as for `--match`, _rewords_of_forgotten): it goes,
    # and the index as it was is set aside below (fresh-eyes s31c, finding 1)
    reworded = {n for n in gone if _reworded_link(data, base, n)}
    names = {
        n
        for n, at in gone.items()
        if (mtime <= at or n in reworded) and (again is None or again <= at)
    }
    names |= renamed
    if not names:
        return  # an index written since (here, or again on the remote): its lines are new
    text, removed = without_links(data.decode("utf-8", "surrogateescape"), names)
    if not removed:
        return
    in_base = base.decode("utf-8", "surrogateescape").splitlines(keepends=True) if base else []
    if any(line not in in_base for line in removed):
        quarantine(engine, INDEX, data, lines=True)
    clean = text.encode("utf-8", "surrogateescape")
    engine.write_local(INDEX, clean)  # no history copy: the lines are what is forgotten
    with contextlib.suppress(OSError):
        os.utime(path, (mtime, mtime))
    local.content.add(INDEX, sha256(clean), clean)


def _scrub_local(
    engine: Engine,
    fresh: dict[str, float],
    local: LocalScan,
    listing: dict[str, Entry],
    late: set[str],
) -> None:
    """Take lines another device just forgot out of the memory files here, where they are old
    content: in the file's base (synced before), or in a file last written before the forget.
    An edit made here before the forget can hold a forgotten line unchanged (an item moved to
    Consumed/Delivered, a line carried to another section), and a merge keeps an edit over a
    concurrent removal: without this, that edit would bring the line back everywhere. A line
    written again after the forget, in a file changed since, is new content and stays.

    A copy unchanged here since it was synced, whose remote copy changed or went since (the
    forgetting device scrubbed it; a compaction deleted it), is not edited by the scrub: its
    record takes the scrubbed content, so the plan pulls the remote's change or deletion
    instead of pushing the copy back as "an edit" (fresh-eyes s29a, finding 3)."""
    if not fresh:
        return
    rebased: dict[str, tuple[str, bytes]] = {}
    marks = text_marks(fresh)
    for name in sorted(local.content.hashes):
        try:
            data = local.content[name]
        except (MemsyncError, OSError):
            continue
        lines = data.decode("utf-8", "replace").splitlines()
        # each line by the forgotten hashes it is known by: its own, a compacted rule's
        # earlier form, a heading's other level (forgotten.identity), or a forgotten text it
        # holds (forgotten.text_mark)
        known: dict[str, set[str]] = {}
        by_text: set[str] = set()  # lines known by a forgotten text alone
        for line in lines:
            ids = known_by(line, fresh, marks)
            if ids and (h := line_hash(line)) is not None:
                known[h] = ids
                if all(map(is_mark, ids)):
                    by_text.add(h)
        base = engine.state.base(name) if name in engine.state.records else None
        base_lines = base.decode("utf-8", "replace").splitlines() if base else []
        path = engine.local_path(name)
        try:
            mtime = local.mtimes.get(name) or path.stat().st_mtime
        except OSError:
            continue
        titles = _titles_of_forgotten(lines, base_lines, fresh, marks)
        # old content: what this device synced before it heard of the forget, in this file
        # or, for a roll-up, in the digests it rolled up (compaction writes no words of its
        # own: its output, written after the forget on a device that had not heard of it,
        # is the content it was made from)
        # a line holding a forgotten text, named by no line hash, is old content only where
        # this device synced it before the forget: the words a line had before the forgetting
        # device reworded it and synced (fresh-eyes s33c, G1). A line of this device's own
        # holding it, which no other device saw, is new content to the forget, whenever it
        # was written: no clock here says when a line was (fresh-eyes s34a, H1)
        rec = engine.state.records.get(name)
        rolled = _rolled_up_bases(engine, data) if _rollup(name) else []
        in_own, in_rolled = line_hashes(base_lines), line_hashes(rolled)
        before = {
            h
            for h in by_text
            if h in in_rolled
            or h in in_own
            and rec is not None
            and rec.synced_at <= min(fresh[i] for i in known[h])
        }
        base_lines += rolled
        in_base = in_own | in_rolled
        old = {
            h
            for h, ids in known.items()
            if h in before
            or h not in by_text
            and (ids & in_base or h in in_base or mtime <= min(fresh[i] for i in ids))
        }
        # held as forgotten (no copy to set aside): the lines the forget named, and those
        # holding its text synced from here before; a rewording made here of a forgotten
        # line is the user's edit, set aside with the copy first, holding the text or not
        held = {h for h in known if h not in by_text} | before | titles
        old |= titles | _rewords_of_forgotten(lines, base_lines, fresh)
        again = _as_written_again(engine, name, local, listing)
        if again is not None:  # written again on the remote after those forgets: new there
            old = {h for h in old if h not in known or any(fresh[i] >= again for i in known[h])}
        # a heading written here that the forget left with nothing under it stays: it is this
        # device's own edit (the driver's seed 4025, U1: a thread moved a level under a
        # forgotten one and renamed there went with it, kept nowhere)
        mine = line_hashes(lines) - in_base - held
        clean = scrub(data, old, keep=mine) if old else data
        if clean == data:
            continue
        # a reword made here, or a line written after the forget (a held-up forget found it
        # on the remote): the user's whole copy is set aside first (fresh-eyes s31b, finding 2)
        if old - held or old & late:
            how = "late" if old & late else "rollup" if _rollup(name) else None
            quarantine(engine, name, data, lines=True, how=how)
        engine.write_local(name, clean)  # no history copy: that copy is what is forgotten
        with contextlib.suppress(OSError):
            os.utime(path, (mtime, mtime))  # still the time of the user's edit
        rec = engine.state.records.get(name)
        entry = listing.get(name)
        if (
            rec is not None
            and local.content.hashes[name] == rec.sha
            and (entry is None or entry.etag != rec.etag)
        ):
            rebased[name] = (rec.etag, clean)
        local.content.add(name, sha256(clean), clean)
    for name, (etag, clean) in rebased.items():  # after the loop: roll-ups read these bases
        engine.state.set_synced(name, etag, clean)


# a session digest's name and its label: a day, or the week, month or year of a roll-up
_DIGEST = re.compile(r"(?:.*/)?session_digest_(\d{4}(?:-W\d{2}|-\d{2}(?:-\d{2})?)?)\.md")


def _rollup(name: str) -> bool:
    m = _DIGEST.fullmatch(name)
    return m is not None and len(m.group(1)) != 10


def _rolled_up(data: bytes) -> tuple[Document, list[str]] | None:
    """A roll-up's parsed text and the digests it lists in `sources` (retention/compact.py)."""
    from memsync.memory import frontmatter as memory

    try:
        doc = memory.parse(memory.decode(data))
    except memory.FrontmatterError:
        return None
    sources = memory.field(doc.meta, "sources")
    if not isinstance(sources, list) or not sources:
        return None
    return doc, [str(x) for x in sources]


def _rolled_up_bases(engine: Engine, data: bytes) -> list[str]:
    """The lines of the synced copies (bases) of the digests a roll-up lists as its sources,
    those this device still has records of: a compaction made here before the forget reached
    this device rolled them up, so their lines in it are old content, and a line of it like
    a forgotten one of theirs is that line reworded here (fresh-eyes s31c, finding q9)."""
    found = _rolled_up(data)
    if found is None:
        return []
    out: list[str] = []
    for source in found[1]:
        base = engine.state.base(source) if source in engine.state.records else None
        if base:
            out += base.decode("utf-8", "replace").splitlines()
    return out


def _day_of(title: str, label: str) -> bool:
    """Whether a roll-up's `## <title>` section holds content of the digest `label` covers:
    the digest's own label, or a day within its week, month or year."""
    title = title.strip()
    if title == label:
        return True
    try:
        day = date.fromisoformat(title)
    except ValueError:
        return False
    if "-W" in label:
        year, week = label.split("-W")
        return day.isocalendar()[:2] == (int(year), int(week))
    return len(label) < 10 and title.startswith(label + "-")


def _drop_from_rollups(engine: Engine, name: str, local: LocalScan) -> list[str]:
    """Take a forgotten digest out of the roll-ups here that list it as a source: its day
    sections and its name. Called only where this device held the forgotten copy: a
    compaction made here before the forget reached it folded that copy in. Returns the
    roll-ups changed."""
    m = _DIGEST.fullmatch(name)
    if m is None:
        return []
    from memsync.memory import frontmatter as memory
    from memsync.memory import sections

    label = m.group(1)
    changed = []
    for other in sorted(local.content.hashes):
        if other == name or not _rollup(other):
            continue
        try:
            data = local.content[other]
        except (MemsyncError, OSError):
            continue
        found = _rolled_up(data)
        if found is None or name not in found[1]:
            continue
        doc, sources = found
        root = sections.parse(doc.body)
        root.children = [c for c in root.children if not _day_of(c.title, label)]
        meta = memory.set_field(dict(doc.meta or {}), "sources", [x for x in sources if x != name])
        clean = memory.render(meta, sections.ensure_newline(root.render())).encode("utf-8")
        path = engine.local_path(other)
        try:
            mtime = local.mtimes.get(other) or path.stat().st_mtime
        except OSError:
            continue
        engine.write_local(other, clean)  # no history copy: what went is what is forgotten
        with contextlib.suppress(OSError):
            os.utime(path, (mtime, mtime))
        local.content.add(other, sha256(clean), clean)
        changed.append(other)
    return changed


def _titles_of_forgotten(
    lines: list[str],
    base_lines: list[str],
    fresh: dict[str, float],
    marks: dict[int, frozenset[bytes]],
) -> set[str]:
    """The hashes of headings here over a section another device forgot under a title this
    device never had (renamed there, then forgotten by a word of the new title): in the
    synced copy, every entry under the heading is a forgotten line and one at least does not
    hold the forgotten text, so they went as that section's, not each for itself (fresh-eyes
    s33b, F4: the old title stayed, with an entry added here under it, on every device)."""
    from memsync.memory.sections import heading_levels
    from memsync.util.resources import template_lines

    if not marks:
        return set()
    here = set(lines)
    templates = template_lines()
    levels = heading_levels(base_lines)
    out = set()
    for i, heading in enumerate(base_lines):
        h = line_hash(heading)
        if not levels[i] or h is None or h in fresh or heading not in here:
            continue
        if " ".join(heading.split()) in templates or lines.count(heading) > 1:
            continue  # `### Arcs`: every session has one, and a scrub takes a line everywhere
        end = next((k for k in range(i + 1, len(base_lines)) if 0 < levels[k] <= levels[i]), None)
        entries = [
            line
            for k, line in enumerate(base_lines[i + 1 : end], start=i + 1)
            if not levels[k] and line.strip() and " ".join(line.split()) not in templates
        ]
        if (
            entries
            and all(line_hash(line) in fresh for line in entries)
            and not all(holds_text(line, marks) for line in entries)
        ):
            out.add(h)
    return out


def _rewords_of_forgotten(
    lines: list[str], base_lines: list[str], fresh: dict[str, float]
) -> set[str]:
    """The hashes of lines here that reword a forgotten line of the base: the same entry,
    which a merge would otherwise keep over the removal (an item reworded here while another
    device forgot it). When the edit was made does not matter: this device had not heard of
    the forget (`fresh` holds only tombstones not applied here yet), so a reword made after
    the user asked is as much the forgotten entry as one made before (report 27, finding 17)."""
    from memsync.memory.merge import SIMILAR, own_identity, similarity

    here = set(lines)
    marks = text_marks(fresh)
    gone = [
        line
        for line in base_lines
        if line not in here and (line_hash(line) in fresh or holds_text(line, marks))
    ]
    if not gone:
        return set()
    added = [line for line in lines if line not in set(base_lines) and line_hash(line)]
    # a forgotten heading retitled here is the heading over its entries, whatever its words
    # (merge._renames), not the new title most like it (fresh-eyes s33a, N6: a new thread's
    # title was set aside for the rewording, and the retitled one stayed)
    renames = {old: new for old, new in retitled(lines, base_lines).items() if old in gone}
    gone = [line for line in gone if line not in renames]
    added = [line for line in added if line not in renames.values()]
    found = line_hashes(renames.values())
    # one rewording a forgotten line, the closest: a new entry that merely resembles it (the
    # same template, a few words in common) is not the forgotten one moved or reworded, and a
    # line with an id or a link of its own is only ever the line with the same one (a new
    # promise shares its id's date and the words of a promise with the forgotten one)
    pairs = sorted(
        (
            (similarity(line, old), i, j)
            for i, line in enumerate(added)
            for j, old in enumerate(gone)
            if own_identity(line) == own_identity(old)
        ),
        reverse=True,
    )
    taken: set[int] = set()
    used: set[int] = set()
    for score, i, j in pairs:
        if score >= SIMILAR and i not in taken and j not in used:
            taken.add(i)
            used.add(j)
    return found | {h for i in taken if (h := line_hash(added[i])) is not None}


def retitled(lines: list[str], base_lines: list[str]) -> dict[str, str]:
    """{heading line of the base: its heading line here} for each section retitled here."""
    from memsync.memory import frontmatter, sections
    from memsync.memory.merge import renamed_sections

    try:
        trees = [
            sections.parse(frontmatter.split("\n".join(x) + "\n")[1]) for x in (base_lines, lines)
        ]
    except frontmatter.FrontmatterError:
        return {}
    out: dict[str, str] = {}
    pending = [(trees[0], trees[1])]
    while pending:
        base, here = pending.pop()
        for old, new in renamed_sections(base.children, here.children):
            if old.heading and new.heading:
                out[old.heading.splitlines()[0]] = new.heading.splitlines()[0]
        kept = {c.key: c for c in here.children}
        pending += [(c, kept[c.key]) for c in base.children if c.key in kept]
    return out


def _forget_conflicts(engine: Engine, ids: dict[str, Any], before: set[str]) -> None:
    """Clear the conflicts here whose descriptions another device's forget took off the
    remote record (by the conflict's id: the tombstone never holds the text)."""
    fresh = {c for c, t in ids.items() if t["id"] not in before}
    if fresh:
        engine.state.conflicts.drop(lambda c: c.id in fresh)


def _apply_file_tombstone(
    engine: Engine,
    name: str,
    t: dict[str, Any],
    listing: dict[str, Entry],
    local: LocalScan,
    held: set[str],
) -> None:
    """`held`: the body hashes of the versions of `name` this device's history kept."""
    state = engine.state
    entry = listing.get(name)
    # a store whose ETags are content hashes gives a file written again byte for byte the
    # forgotten copy's ETag: `memsync new` twice within one second of the forget writes the
    # same template (its `modified` in whole seconds), which holds nothing forgotten (no
    # body hash: the full suite met it, the new file deleted everywhere as the forgotten one)
    again = (
        entry is not None
        and engine.store.content_etags
        and entry.modified > t["at"]
        and not t.get("bodies")
    )
    if entry is not None and entry.etag in t["etags"] and not again:
        listing.pop(name)  # the forgotten copy itself (its forget was interrupted): finish it
        with contextlib.suppress(NotFound, PreconditionFailed):
            engine.store.delete(name, entry.etag)
    rec = state.records.get(name)
    from_before = rec is not None and (rec.etag in t["etags"] or rec.synced_at <= t["at"])
    path = engine.local_path(name)
    data = engine.read_local(name)
    if data is not None:
        if rec is None:
            # never synced here: the forgotten content itself (a backup restored with `cp -r`,
            # its times new) is from before, whatever its mtime; other content by its mtime
            from_before = local.mtimes.get(name, path.stat().st_mtime) <= t["at"] or body_hash(
                data
            ) in t.get("bodies", ())
        if from_before:
            written_late = rec is not None and rec.etag in t.get("late", ())
            # the text of a forgotten version is that version, not an edit to keep: one the
            # forgetting device held (a backup restored, state reset by a purge), or one this
            # device held itself (an earlier version brought back by `memsync restore`)
            unedited = (
                rec is not None and sha256(data) == rec.sha and not written_late
            ) or body_hash(data) in {*t.get("bodies", ()), *held}
            if unedited:
                path.unlink()
            else:
                quarantine(engine, name, data)
            local.content.discard(name)
    if from_before:
        # this device held the forgotten copy: a compaction made here before the forget
        # reached it may have rolled it up, written after the forget but made of that copy
        _drop_from_rollups(engine, name, local)
        state.forget(name)
        state.unqueue([name])
        state.conflicts.resolve(name)
    # history of the forgotten lineage goes whole (a merge may have kept a copy after the
    # forget, when its tombstone was late); beside content from after it, the older copies
    state.drop_history(name, before=None if from_before else t["at"])
    _scrub_index_history(engine, [name], t["at"])
    # a conflict about its index line from before the forget: the forget settled it
    state.conflicts.drop(lambda c: names_forgotten(c.as_json(), [name]) and c.at <= t["at"])


def _held_bodies(engine: Engine, name: str) -> set[str]:
    """The body hashes of the versions of `name` this device's history keeps."""
    return body_hashes(v.path.read_bytes() for v in engine.state.history(name))


def recreate_blocked(engine: Engine, name: str) -> str | None:
    """Why a push must not create `name` again after it vanished from the remote: another
    device forgot it (a tombstone not applied here yet) or purged the project. One or two
    GETs, only on that rare path."""
    store = engine.store
    try:
        data, _ = store.get(TOMBSTONES)
    except NotFound:
        data = None
    t = read_tombstones(data)["files"].get(name)
    if t is not None and t["id"] not in engine.state.meta.tombstones_applied:
        return (
            f"{name} was forgotten on another device, so it was not uploaded; "
            "run `memsync sync` to set your copy aside"
        )
    if blocking_purge(engine) is None:
        return None
    return f"this project was purged, so {name} was not uploaded; `{REPUBLISH}` publishes again"


def quarantine(
    engine: Engine,
    name: str,
    data: bytes,
    lines: bool = False,
    was: str | None = None,
    part: bool = False,
    how: str | None = None,
) -> Path:
    """Move an unsynced edit of a forgotten file out of the memory dir, keeping it whole.
    `lines`: only lines of it were forgotten: the file stays (its caller takes them out) and
    the copy set aside is the file as it was. `was`: the forgotten file `name` is a copy of
    (`part`: holds text of), or, with `lines`, the one the lines taken out came from. `how`
    the lines came to be here, for the notice (`quarantine_notices`): None for a rewording
    made here, "late" for an edit uploaded while the forget waited, "rollup" for this
    device's compaction."""
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
    if not lines:
        engine.local_path(name).unlink(missing_ok=True)
    entry = {"file": name, "path": str(path), "at": time.time(), "lines": lines}
    if was is not None:
        entry["was"] = was
    if part:
        entry["part"] = True
    if how is not None:
        entry["how"] = how
    engine.state.meta.quarantined = [*engine.state.meta.quarantined, entry]
    return path


def quarantine_notices(engine: Engine) -> list[str]:
    """One sentence for each quarantined edit still there (those the user deleted are done)."""
    kept = [q for q in engine.state.meta.quarantined if Path(q["path"]).exists()]
    if kept:
        engine.state.meta.quarantined = kept
    else:
        engine.state.meta.quarantined = []
    return [
        f"lines of {q['file']} came from {q['was']}, which was forgotten on another device, so "
        f"they were taken out of it; the file as it was is in {q['path']}: copy what you still "
        "need back, then delete that file"
        if q.get("was") and q.get("lines")
        else f"{q['file']} holds text of {q['was']}, which was forgotten on another device; "
        f"your file was moved to {q['path']} and is not synced: copy what you still need into "
        "a new memory file, then delete that file"
        if q.get("was") and q.get("part")
        else f"{q['file']} is {q['was']} under a new name, and {q['was']} was forgotten on "
        f"another device; your copy was moved to {q['path']} and is not synced: copy what you "
        "still need into a new memory file, then delete that file"
        if q.get("was")
        else f"{q['file']} was forgotten on another device; your copy, with the edit this "
        f"device made to it, was moved to {q['path']} and is not synced: copy what you still "
        "need into a new memory file, then delete that file"
        if not q.get("lines")
        else f"lines of {q['file']} were forgotten on another device, and {held_as(q)} was "
        f"taken out of it; the file as it was is in {q['path']}: copy what you still need "
        "back, then delete that file"
        for q in kept
    ]


def held_as(q: dict[str, Any]) -> str:
    """What of the forgotten lines a file set aside by a line forget held (see `quarantine`)."""
    if q.get("how") == "late":
        return (
            "an edit of them that the forgetting device had not pulled when the user asked (a "
            "rewording, or lines added under a forgotten heading, made here or pulled from "
            "another device)"
        )
    if q.get("how") == "rollup":
        return "what this device's compaction had rolled up of them"
    return "your unsynced rewording of them"


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
