"""Migrate: lift memory dirs up to a remote, or copy a project from one remote to another.

`migrate` (memory dirs → the configured remote) and `migrate_remote` (any remote → any other:
folder, Azure, S3, a memory store, each through `open_store`) keep the same rules, so a run
cut off half-way finishes when run again and a second run copies nothing:

- every object is written create-only; one already there with the same bytes is skipped, one
  with other bytes is left as it is and reported (never overwritten);
- what a remote cannot hold (a memory store's 100 kB and path rules) is refused by name by the
  store before any request, and the rest is still copied.

`migrate_remote` copies everything the source's listing holds for the project: memory files
and memsync's own records beside them (`_memsync/`: the project manifest, the tombstone list,
shared conflicts, a purge or move mark), each with the `edited` time the source keeps, which
the destination keeps where it can (a memory store has nowhere to keep it). Memory files travel
as the source holds them, which already keeps the source's forgets (what was written after a
device learned of one is new, and stays); a forget only the destination's tombstone list holds
is applied on the way (`forgotten.scrub_files`: a forgotten file is not copied, a file holding
a forgotten text is copied without it, conflict records about it are left out). Each copy is
read back from the destination and compared byte for byte. Both remotes are read before
anything is written, so bad input (an unreachable source, another project at the destination)
changes nothing. Only the Store protocol is used, so every pair of remotes takes the one path.

An encrypted source is read through its keys (this device must be one of its recipients) and
goes only to an encrypted destination (`memsync keys init --remote DST` first): a migration
never leaves a plaintext copy of an encrypted project. The destination seals every object
under its own data key. Remote-kept versions (a memory store's) are not copied: the protocol
reads only current content, and the destination keeps its own from the copy on. This device's
state of the project (kept per remote) is carried to its state under the destination: its
local history, and its sync records, so that it syncs with the destination as if it had synced
there (`carry_state`); each device that moves runs the same command once for its own. The
destination keeps what a migration copied (`COPIES`: each file's sha256), so a device that moves
later merges a file changed on either side since from the version both sides shared then.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from memsync.admin.admin import _forgotten_on_remote, _remote_listing, _safe_name, _tick
from memsync.context.config import Context, canonical_remote, check_folder_remote, strip_query
from memsync.context.identity import MANIFEST as PROJECT_MANIFEST
from memsync.context.identity import manifest_fingerprint
from memsync.stores.base import Entry, Store, check_key, nested_projects
from memsync.sync import cas
from memsync.sync.conflicts import recorded, rewrite
from memsync.sync.engine import Engine
from memsync.sync.forgotten import Forget, read_forgets, scrub_file, scrub_files
from memsync.sync.remote_keys import CONFLICTS, COPIES, PURGED, TOMBSTONES
from memsync.sync.state import State
from memsync.sync.transfers import run_daemons
from memsync.util.errors import (
    AlreadyExists,
    ConfigError,
    MemsyncError,
    NotFound,
    RefusedFile,
    StoreError,
    Unholdable,
    UnsafeKey,
    UserError,
)
from memsync.util.fsutil import file_lock, private_dir, sha256

Progress = Callable[[int, int], None]
OWN = "_memsync/"  # memsync's own records under the prefix: copied as they are

# --- memory dirs → the remote -------------------------------------------------------------


@dataclass
class MigratedSource:
    memory_dir: Path
    project: str
    copied: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> reason
    refused: dict[str, str] = field(default_factory=dict)  # cannot go as it is: why
    notes: list[str] = field(default_factory=list)  # e.g. the remote was created


@dataclass
class MigrateResult:
    sources: list[MigratedSource] = field(default_factory=list)

    @property
    def copied(self) -> int:
        return sum(len(s.copied) for s in self.sources)

    @property
    def skipped(self) -> int:
        return sum(len(s.skipped) for s in self.sources)

    @property
    def refused(self) -> int:
        return sum(len(s.refused) for s in self.sources)


SAME = "already on the remote with the same content"
DIFFERENT = "the remote has different content; left as is (run sync to merge)"


def migrate(
    ctx_factory: Callable[..., Context],
    sources: list[tuple[Path, str]] | None = None,
) -> MigrateResult:
    """Lift and shift memory dirs to the remote, each under its own project prefix.

    `ctx_factory(memory_dir=..., project=...)` makes the Context for one source; called with no
    arguments it gives the current one, used when `sources` is empty. Every file the remote
    lacks is created (create-only); one it has with the same content is skipped (and recorded
    as in sync); one it has with other content is skipped with that reason. Files the outbound
    checks refuse are skipped with theirs. Running it again copies nothing.
    """
    contexts = (
        [ctx_factory(memory_dir=d, project=p) for d, p in sources] if sources else [ctx_factory()]
    )
    result = MigrateResult()
    for ctx in contexts:
        if not Path(ctx.memory_dir).is_dir():
            raise UserError(f"{ctx.memory_dir} is not a folder of memory files")
        result.sources.append(_migrate_one(Engine(ctx)))
    return result


def _migrate_one(engine: Engine) -> MigratedSource:
    out = MigratedSource(engine.ctx.memory_dir, engine.ctx.project)
    store = engine.store
    with engine.locked():
        scan = engine.scan_local()
        refused, kept = scan.split_refused()
        out.refused.update(refused)
        out.skipped.update({n: f"kept local: {why}" for n, why in kept.items()})
        listing = _remote_listing(engine, create=True, notes=out.notes)
        # a memory dir may predate a forget on the remote: its forgotten content stays here
        # (the next sync takes it out, as on any device that learns of the forget)
        clean = scrub_files(dict(scan.content), _forgotten_on_remote(engine))
        try:
            for name, local in sorted(scan.content.items()):
                why = _safe_name(name)
                data = clean[name]
                if why is not None or data is None:
                    out.skipped[name] = why or "forgotten on the remote (`memsync forget`)"
                    continue
                try:
                    if name not in listing:
                        etag = store.create(name, data)
                        if data == local:  # a scrubbed copy: the next sync scrubs this one
                            engine.state.set_synced(name, etag, data)
                        out.copied.append(name)
                        continue
                except AlreadyExists:
                    pass
                except Unholdable as exc:  # outside the remote's limits: nothing was sent
                    out.refused[name] = exc.reason
                    continue
                try:
                    theirs, etag = store.get(name)
                except NotFound:
                    out.skipped[name] = "it was deleted on the remote during the migration"
                    continue
                if theirs == data:
                    if name not in engine.state.records and data == local:
                        engine.state.set_synced(name, etag, data)
                    out.skipped[name] = SAME
                else:
                    out.skipped[name] = DIFFERENT
        finally:
            engine.state.save()
    return out


# --- a remote → another remote ------------------------------------------------------------


@dataclass
class RemoteMigration:
    """What `migrate_remote` did, object by object (names as the project's keys)."""

    source: str
    destination: str
    project: str
    copied: list[str] = field(default_factory=list)  # created on the destination, read back
    same: list[str] = field(default_factory=list)  # already there with the same bytes
    different: list[str] = field(default_factory=list)  # there with other bytes: left alone
    refused: dict[str, str] = field(default_factory=dict)  # name -> why it was not copied
    forgotten: list[str] = field(default_factory=list)  # taken by a forget: not copied
    scrubbed: list[str] = field(default_factory=list)  # copied without their forgotten lines
    history: int = 0  # this device's local history folders carried to the destination's state
    notes: list[str] = field(default_factory=list)  # e.g. the destination was created

    @property
    def left_out(self) -> int:
        """Objects the destination does not hold as the source does (and not by a forget)."""
        return len(self.different) + len(self.refused)


DIFFERS = "the destination has other content there; left as it is"


def check_remote(option: str, url: str) -> None:
    """`url` is a remote URL memsync can open; ConfigError naming `option` otherwise."""
    try:
        check_folder_remote(url)
    except ConfigError as exc:
        said = str(exc)
        for where in ("--remote, MEMSYNC_REMOTE or the remote setting", "--remote"):
            said = said.replace(where, option)
        raise ConfigError(f"{option}: {said}") from None


def migrate_remote(
    ctx: Context,
    source: str,
    destination: str,
    progress: Progress | None = None,
) -> RemoteMigration:
    """Copy project `ctx.project` from remote `source` to remote `destination` under the rules
    of the module docstring; `ctx` is this device's context for the project (its memory dir
    names the local history carried along). Raises before writing anything when the remotes
    are the same, the source holds nothing of the project or cannot be read, or the
    destination holds another project or a purge mark the source does not."""
    from memsync.stores import open_store

    check_remote("--from", source)
    check_remote("--to", destination)
    if canonical_remote(source) == canonical_remote(destination):
        raise UserError(
            f"--from and --to both name the remote {strip_query(source)}; give the remote to "
            "copy to with --to (nothing was copied)"
        )
    project = ctx.project
    result = RemoteMigration(strip_query(source), strip_query(destination), project)
    src, dst = open_store(source, project), open_store(destination, project)
    try:
        listing = _source_listing(src, result)
        listing.pop(COPIES, None)  # the source's own record of a move into it
        theirs = _destination_listing(dst)
        for side, keys in (("--from", listing), ("--to", theirs or {})):
            nested = nested_projects(keys)
            if nested:
                raise UserError(
                    f"another project's memory is inside project {project!r}'s folder on the "
                    f"{side} remote: {', '.join(nested)}; give one of the two projects a remote "
                    "of its own (nothing was copied)"
                )
        if getattr(src, "encrypted", False) and not getattr(dst, "encrypted", False):
            raise UserError(
                f"the source {result.source} is encrypted and the destination "
                f"{result.destination} is not: run `memsync keys init --remote "
                f"{result.destination}` first so the copy is encrypted too (nothing was copied)"
            )
        workers = int(ctx.setting("concurrency"))
        objects = _read_all(src, listing, result, workers)
        _check_destination(dst, theirs, objects, result)
        # the source's content already keeps the source's forgets (each was applied by every
        # device that wrote after learning of it, and what was written since is new): only a
        # forget the destination holds and the source does not is applied on the way
        known = {f.id for f in read_forgets(objects.get(TOMBSTONES, (None, None))[0])}
        forgets = [f for f in _forgets(dst, theirs) if f.id not in known]
        clean = _without_forgotten(objects, forgets, result)
        if theirs is None and clean:
            dst.ensure()
            result.notes.append(
                f"created the remote {result.destination}, which did not exist: if that name "
                "is a typo, correct --to and run the migration again"
            )
            theirs = {}
        etags, others = _copy(dst, clean, theirs or {}, result, progress, workers)
        copies = _record_copies(dst, {k: clean[k][0] for k in etags if not k.startswith(OWN)})
    finally:
        src.close()
        dst.close()
    held = {key: (etag, clean[key][0]) for key, etag in etags.items()}
    moved = {key: Moved(*others[key], clean[key][0], copies.get(key)) for key in others}
    result.history = carry_state(ctx, source, destination, held, moved)
    return result


class Moved(NamedTuple):
    """A file the destination holds otherwise than the source: its ETag and bytes there, the
    source's bytes, and the sha256 of what a migration copied there first (None: unknown)."""

    etag: str
    there: bytes
    source: bytes
    copied: str | None


def _record_copies(dst: Store, held: dict[str, bytes]) -> dict[str, str]:
    """Add to the destination's record of copies the version of each file it holds as the
    source does and has no version recorded for (the first copy stays); the record after."""
    after: dict[str, str] = {}

    def change(current: bytes | None) -> bytes | None:
        known = json.loads(current) if current else {}
        after.clear()
        after.update(known)
        for key, data in held.items():
            after.setdefault(key, sha256(data))
        return current if after == known else json.dumps(after, sort_keys=True).encode()

    cas.update(dst, COPIES, change)
    return after


def _source_listing(src: Store, result: RemoteMigration) -> dict[str, Entry]:
    try:
        listing = src.list()
    except NotFound:
        listing = {}
    if not listing:
        raise UserError(
            f"the source {result.source} holds nothing of project {result.project!r}; check "
            "--from and --project (nothing was copied)"
        )
    return listing


def _destination_listing(dst: Store) -> dict[str, Entry] | None:
    """The destination's objects; None when its container is missing (made before the first
    write, as `push` makes it). A folder remote that is not there is unreachable instead: it
    may be an unmounted drive, which memsync never writes to."""
    try:
        return dst.list()
    except NotFound:
        return None


def _read_all(
    src: Store, listing: dict[str, Entry], result: RemoteMigration, workers: int
) -> dict[str, tuple[bytes, float | None]]:
    """Every object of the source with its `edited` time (read and checked by the store),
    `workers` reads at a time."""
    objects: dict[str, tuple[bytes, float | None]] = {}
    lock = threading.Lock()

    def refuse(key: str, why: str) -> None:
        with lock:
            result.refused[key] = f"not read from the source: {why}"

    def read(key: str) -> None:
        try:
            data, _, edited = src.fetch(check_key(key))
        except NotFound:
            return  # deleted meanwhile: there is nothing to copy
        except RefusedFile as exc:  # e.g. an untrusted object on an encrypted source
            refuse(key, exc.reason)
            return
        except UnsafeKey as exc:  # a name that could land outside a memory dir
            refuse(key, str(exc))
            return
        with lock:
            objects[key] = (data, edited)

    run_daemons(read, sorted(listing), workers)
    return objects


def _check_destination(
    dst: Store,
    theirs: dict[str, Entry] | None,
    objects: dict[str, tuple[bytes, float | None]],
    result: RemoteMigration,
) -> None:
    """Projects never cross, and a purged project at the destination stays closed."""
    if not theirs:
        return
    where = f"the destination {result.destination}"
    if PROJECT_MANIFEST in theirs and PROJECT_MANIFEST in objects:
        ours = manifest_fingerprint(objects[PROJECT_MANIFEST][0])
        found = manifest_fingerprint(_read(dst, PROJECT_MANIFEST) or b"")
        if ours and found and ours != found:
            raise UserError(
                f"{where} holds the memory of another project under the name "
                f"{result.project!r}; choose another --to (nothing was copied)"
            )
    if PURGED in theirs:
        mark = _read(dst, PURGED)
        if mark is not None and mark != objects.get(PURGED, (None, None))[0]:
            raise UserError(
                f"{where} marks project {result.project!r} purged; run `memsync push "
                f"--republish --remote {result.destination}` on a device first if it may hold "
                "it again (nothing was copied)"
            )


def _read(store: Store, key: str) -> bytes | None:
    try:
        return store.get(key)[0]
    except NotFound:
        return None


def _forgets(dst: Store, theirs: dict[str, Entry] | None) -> list[Forget]:
    """The destination's own forgets: content they take does not land there either."""
    if not theirs or TOMBSTONES not in theirs:
        return []
    return read_forgets(_read(dst, TOMBSTONES))


def _without_forgotten(
    objects: dict[str, tuple[bytes, float | None]], forgets: list[Forget], result: RemoteMigration
) -> dict[str, tuple[bytes, float | None]]:
    """The objects as they may travel: memory files through the forget rule, the conflict
    record without the conflicts about forgotten content; memsync's other records as they
    are (they hold names and hashes, never memory content)."""
    memory = {k: data for k, (data, _) in objects.items() if not k.startswith(OWN)}
    clean = scrub_files(memory, forgets)
    taken = {k for k, data in clean.items() if data is None} | {f.file for f in forgets if f.file}
    out: dict[str, tuple[bytes, float | None]] = {}
    for key, (data, edited) in objects.items():
        if key.startswith(OWN):
            if key == CONFLICTS and forgets:
                data = _conflicts_kept(data, forgets, taken)
            out[key] = (data, edited)
            continue
        kept = clean[key]
        if kept is None:
            result.forgotten.append(key)
            continue
        if kept != data:
            result.scrubbed.append(key)
        out[key] = (kept, edited)
    return out


def _conflicts_kept(data: bytes, forgets: list[Forget], taken: set[str]) -> bytes:
    """The conflict record without the conflicts about a file a forget took or whose
    description holds a forgotten text (as a device drops them when it learns the forget)."""

    def about(item: dict[str, Any]) -> bool:
        detail = str(item.get("detail")).encode()
        return item.get("file") in taken or scrub_file("x", detail, forgets) != detail

    return rewrite(data, {c["id"] for c in recorded(data) if about(c)})


def _order(key: str) -> tuple[int, str]:
    """The manifest and tombstone list first, so a run cut short leaves a destination that
    already names its project and its forgets; a purge mark last."""
    rank = {PROJECT_MANIFEST: 0, TOMBSTONES: 1, PURGED: 4}.get(key)
    if rank is None:
        rank = 2 if key.startswith(OWN) else 3
    return rank, key


def _copy(
    dst: Store,
    objects: dict[str, tuple[bytes, float | None]],
    theirs: dict[str, Entry],
    result: RemoteMigration,
    progress: Progress | None,
    workers: int,
) -> tuple[dict[str, str], dict[str, tuple[str, bytes]]]:
    """Each rank of `_order` whole before the next; within one, `workers` copies at a time.
    The ETag of each object the destination was read holding exactly as the source's, by key;
    the ETag and bytes of each it holds otherwise."""
    lock = threading.Lock()
    done = [0]
    held: dict[str, str] = {}
    others: dict[str, tuple[str, bytes]] = {}  # key -> (ETag, bytes) the destination holds

    def copy(key: str) -> None:
        data, edited = objects[key]
        etag, there = "", b""
        if key in theirs:
            outcome, why, etag, there = _compare(dst, key, data)
            if outcome == "different" and key == PROJECT_MANIFEST:
                outcome = "same"  # the same project in other words (`_check_destination`)
        else:
            try:
                dst.create(key, data, edited)
            except AlreadyExists:  # written meanwhile by someone else
                outcome, why, etag, there = _compare(dst, key, data)
            except Unholdable as exc:  # outside the destination's limits: nothing was sent
                outcome, why = "refused", exc.reason
            else:
                etag = _verify(dst, key, data)
                outcome, why = "copied", ""
        with lock:
            _record(result, key, outcome, why)
            if outcome in ("copied", "same") and etag:
                held[key] = etag
            elif outcome == "different":
                others[key] = (etag, there)
            done[0] += 1
            _tick(progress, done[0], len(objects))

    for rank in sorted({_order(k)[0] for k in objects}):
        run_daemons(copy, sorted(k for k in objects if _order(k)[0] == rank), workers)
    for names in (result.copied, result.same, result.different):
        names.sort()
    return held, others


def _record(result: RemoteMigration, key: str, outcome: str, why: str) -> None:
    if outcome == "refused":
        result.refused[key] = why
    elif outcome == "copied":
        result.copied.append(key)
    elif outcome == "same":
        result.same.append(key)
    else:
        result.different.append(key)


def _compare(dst: Store, key: str, data: bytes) -> tuple[str, str, str, bytes]:
    """(outcome, why, the ETag and bytes read) of an object the destination holds already."""
    try:
        there, etag = dst.get(key)
    except NotFound:  # deleted again meanwhile: the next run copies it
        return "refused", "it was deleted on the destination during the migration", "", b""
    return ("same" if there == data else "different"), "", etag, there


def _verify(dst: Store, key: str, data: bytes) -> str:
    """The copy read back is the source's bytes (the store checked them in transit): its
    ETag."""
    try:
        back, etag = dst.get(key)
    except NotFound:
        back, etag = None, ""
    if back != data:
        raise StoreError(
            f"{key} read back from the destination is not what was written; run the "
            "migration again (it copies only what is missing)"
        )
    return etag


# --- this device's state of the project ---------------------------------------------------


def carry_state(
    ctx: Context,
    source: str,
    destination: str,
    held: dict[str, tuple[str, bytes]],
    moved: dict[str, Moved],
) -> int:
    """Carry this device's state of the project under `source` (its state folder is per
    remote) to its state under `destination`, for every file the latter holds nothing of yet,
    so the device goes on with the destination as if it had synced there: its local history
    (`memsync history FILE` shows it after the switch) and its sync records, each with the
    version this device shares with the destination as the merge base of its next sync.

    `held`: the objects the destination holds as the source does, key -> (ETag, bytes); for
    those, that version is the copy this device last synced with the source (the ETag is the
    destination's when that copy is the one held there). `moved`: those it holds otherwise.
    For those the shared version is the one a migration copied there first (`COPIES`):
    - the destination still holds it, and this device was in step with the source, which
      moved on since: that copy (this device's later version is then an edit to send);
    - the destination moved on from it, and this device was still at it: this device's copy
      (the destination's is then the edit to take);
    - both moved on from it: none (the next sync merges both as two devices' edits);
    - not known (nothing recorded): this device's copy. A file the destination does not hold
    (refused, forgotten) gets no record. How many files' history was carried."""
    from memsync.context.config import state_dir_for

    old = state_dir_for(ctx.home, source, ctx.project, ctx.memory_dir)
    new = state_dir_for(ctx.home, destination, ctx.project, ctx.memory_dir)
    if not old.is_dir():
        return 0
    private_dir(new)
    carried = 0
    busy = contextlib.suppress(TimeoutError)
    with busy, file_lock(new / "lock", timeout=10):
        carried = _carry_history(old / "history", new / "history")
        _carry_records(old, new, held, moved)
    return carried


def _carried_record(
    rec_sha: str, base: bytes, held: tuple[str, bytes] | None, moved: Moved | None
) -> tuple[str, bytes] | None:
    """The (ETag, merge base) this device's record of a file takes at the destination, by the
    rule in `carry_state`; None for no record."""
    etag, data = held or ("", b"")
    own = (etag if sha256(data) == rec_sha else "", base)  # this device's last synced copy
    if moved is None or moved.copied is None:
        return own
    if sha256(moved.there) == moved.copied:  # untouched there since it was copied
        return (moved.etag, moved.there) if rec_sha == sha256(moved.source) else own
    return own if rec_sha == moved.copied else None


def _carry_records(
    old: Path, new: Path, held: dict[str, tuple[str, bytes]], moved: dict[str, Moved]
) -> None:
    try:
        before, after = State(old), State(new)
    except MemsyncError:  # a damaged state: the next sync merges without a base, as today
        return
    try:
        for name, rec in sorted(before.records.items()):
            if name in after.records or (name not in held and name not in moved):
                continue
            base = before.content(rec.sha)
            if base is None:  # a record without its content: nothing to merge from
                continue
            record = _carried_record(rec.sha, base, held.get(name), moved.get(name))
            if record is not None:
                after.set_synced(name, *record)
        after.save()
    finally:
        before.bases.close()
        after.bases.close()


def _carry_history(old: Path, new: Path) -> int:
    """Each file's history folder `new` lacks, copied whole from `old`: how many."""
    if not old.is_dir():
        return 0
    private_dir(new)
    carried = 0
    for folder in sorted(old.iterdir()):
        if not folder.is_dir() or folder.name.startswith(".") or (new / folder.name).exists():
            continue
        part = new / f".part-{folder.name}"  # renamed whole: a cut-off copy is redone
        shutil.rmtree(part, ignore_errors=True)
        shutil.copytree(folder, part)
        part.rename(new / folder.name)
        carried += 1
    return carried
