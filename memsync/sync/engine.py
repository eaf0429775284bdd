"""The sync executor: runs the planner's actions against a store, merging and retrying when
a conditional write loses a race. Nothing here prints or exits; results are returned."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.context.config import Context
from memsync.context.identity import MANIFEST, MOVED, pin, to_note, unnamed_message
from memsync.memory import index_links
from memsync.memory.digests import is_rollup
from memsync.memory.index_links import INDEX
from memsync.memory.names import collisions, fold
from memsync.privacy.gate import check_inbound, check_outbound
from memsync.stores import (
    MAX_ATTEMPTS,
    Entry,
    Stats,
    Store,
    check_key,
    open_store,
)
from memsync.sync import localswap, planner
from memsync.sync.durability import Durability, recover_landing
from memsync.sync.localfiles import LocalFiles, settled, stat_key
from memsync.sync.planner import Action, Kind
from memsync.sync.remote_files import classify
from memsync.sync.remote_keys import CONFLICTS, PURGED, TOMBSTONES
from memsync.sync.state import (
    COMEBACKS,
    PRUNED,
    SINGLY,
    Record,
    State,
    pending_forgets_file,
)
from memsync.sync.walk import MemoryWalk
from memsync.util.errors import (
    AlreadyExists,
    ConfigError,
    GuardError,
    KeptLocal,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    StateError,
    StoreError,
    Unreachable,
    UnsafeKey,
    UserError,
    describe_os_error,
)
from memsync.util.fsutil import (
    atomic_write,
    file_lock,
    private_dir,
    read_if_there,
    sha256,
    sweep_temp_files,
)

if TYPE_CHECKING:
    from memsync.memory.merge import MergeResult
    from memsync.sync.transfers import GetAhead

# meta.json: conflicts of merges written whose answer may have been lost (_expect_conflict)
_LANDING_CONFLICTS = "landing_conflicts"
_UNPUBLISHED_CONFLICTS = "unpublished_conflicts"  # found outside a merge, for the remote record
LOST_DIR_MIN = 5  # more synced files than this all gone, new ones made: a lost folder
_PRUNE_WATCH = 30 * 86400  # seconds a prune is watched for a file coming back


class SyncResult:
    """What one pull, push or sync did, by file name (a plain class: see _Run)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.uploaded: list[str] = []
        self.downloaded: list[str] = []
        self.merged: list[str] = []
        self.deleted_remote: list[str] = []
        self.deleted_local: list[str] = []
        self.forgotten: list[str] = []  # removed here because another device forgot them
        self.forgets_finished = 0  # this device's forgets it finished (each said in notes)
        self.conflicts: list[str] = []
        self.refused: dict[str, str] = {}
        self.kept_local: dict[str, str] = {}  # marked to stay here: skipped, not an error
        self.refused_remote: dict[str, str] = {}
        self.ignored_remote: dict[str, str] = {}  # foreign blobs under the prefix, not fetched
        self.errors: dict[str, str] = {}
        self.notes: list[str] = []
        self.restored: str | None = None  # the note of a lost memory dir a pull restored
        self.queued: list[str] = []
        self.skipped: list[str] = []  # not started before the deadline
        self.quarantined: list[str] = []  # forgotten elsewhere, edited here: what to do
        # this device's copy lost to another device's later edit (kept in local history)
        self.replaced: dict[str, str] = {}
        self.offline: str | None = None
        # a push's files waiting to be pulled, a pull's waiting to be pushed: "in sync" is not
        # said while there are any
        self.other_way: list[str] = []
        self.disabled = False
        self.stats = Stats()
        self.seconds = 0.0

    @property
    def changes(self) -> int:
        done = (
            self.uploaded,
            self.downloaded,
            self.merged,
            self.deleted_remote,
            self.deleted_local,
            self.forgotten,
        )
        return sum(map(len, done)) + self.forgets_finished


SYNC_OFF = "sync is off (MEMSYNC_SYNC=off)"


class LocalScan:
    def __init__(
        self, content: LocalFiles, refused: dict[str, str], mtimes: dict[str, float]
    ) -> None:
        self.content, self.refused, self.mtimes = content, refused, mtimes
        self.kept: set[str] = set()  # the refused ones the user marked to stay local
        self.swept = 0  # stale temp files of killed writers, removed

    def split_refused(self) -> tuple[dict[str, str], dict[str, str]]:
        """(refused: each needs the user's attention, kept local: by the user's choice)."""
        refused = {n: r for n, r in self.refused.items() if n not in self.kept}
        return refused, {n: r for n, r in self.refused.items() if n in self.kept}


class Engine:
    """Sync one memory dir with one remote prefix."""

    def __init__(self, ctx: Context, store: Store | None = None) -> None:
        if not ctx.project:
            raise ConfigError(unnamed_message(ctx.memory_dir))
        self.ctx = ctx
        self._store = store
        self.max_bytes = int(ctx.setting("max_file_bytes"))
        self._lock = threading.Lock()
        self._durability = Durability(ctx.memory_dir)  # this run's writes not yet flushed
        self._published: list[dict] = []  # this run's conflicts, for the remote record
        self._came_back: set[str] = set()  # this run's files an edit brought back
        self._index_before: str | None = None  # MEMORY.md before the run, when one came back
        self._index_read = False
        # the files whose conditional write failed (or, for `push FILE`, that it was about to
        # create) while the remote's tombstone list moved: a listing sync of them follows
        self._records_run = False
        self._deferred: set[str] = set()
        # the records as this run found them: the synced copies a roll-up base is made of
        # (`_rollup_base`), unchanged by what the run records meanwhile
        self._records_at_start: dict[str, Record] = {}
        # a lost memory dir this run restores: where, how it was found, the files it expects
        self._restoring: tuple[Path, str, set[str]] | None = None
        self._manifest_ahead: GetAhead | None = None  # a fresh pull's manifest, read early
        self.state = State(ctx.state_dir, int(ctx.setting("history_versions")))
        # told once when the state lock is not free at once (the CLI says it is waiting)
        self.on_wait: Callable[[str], None] | None = None

    @contextlib.contextmanager
    def locked(self, timeout: float = 120) -> Iterator[None]:
        """Hold this project's state lock (one memsync process at a time) with fresh state."""
        lock = self.ctx.state_dir / "lock"
        started = time.monotonic()
        try:
            try:
                first = timeout if self.on_wait is None else min(1.0, timeout)
                held = file_lock(lock, timeout=first)
                held.__enter__()
            except TimeoutError:
                if first >= timeout:
                    raise
                assert self.on_wait is not None
                self.on_wait(
                    "another memsync process is syncing this project; waiting for it to finish "
                    f"(up to {timeout:.0f} s)"
                )
                held = file_lock(lock, timeout=timeout - (time.monotonic() - started))
                held.__enter__()
        except TimeoutError:
            raise StateError(
                f"another memsync process has held this project's state lock ({lock}) for "
                f"over {timeout:.0f} s; let it finish (a large first sync can take a while), "
                "then run the command again"
            ) from None
        try:
            self.state = State(self.ctx.state_dir, self.state.history_versions)
            yield
        finally:
            held.__exit__(None, None, None)

    @property
    def store(self) -> Store:
        if self._store is None and not self.ctx.sync_enabled:
            # MEMSYNC_SYNC=off: no command reaches the remote (forget and purge included);
            # each says what it left for later, as when the remote is unreachable
            from memsync.sync.offline import OfflineStore

            self._store = OfflineStore(SYNC_OFF, self.ctx.remote)
        if self._store is None:
            if self.ctx.embedded_remote:  # ours to create; a configured folder may be unmounted
                private_dir(self.ctx.home / "remote")
            self._store = open_store(self.ctx.remote, self.ctx.project)
            self._store.max_bytes = self.max_bytes
            self._store.project_known = bool(self.state.records)
        return self._store

    def close(self) -> None:
        """Close the remote's connections, if it was opened: at a command's end, instead of
        leaving each one to the interpreter's exit, which closes them one by one (and formats
        a ResourceWarning for each, shown or not)."""
        if self._store is not None:
            self._store.close()

    # --- the local side -------------------------------------------------------------------

    def local_path(self, name: str) -> Path:
        """The file for `name`, refusing names that would leave the memory dir."""
        check_key(name)
        path = self.ctx.memory_dir / name
        if "/" in name:  # a top-level name cannot leave the dir: check_key refused '..' and '/'
            root = self.ctx.memory_dir.resolve()
            parent = path.parent.resolve()
            if parent != root and root not in parent.parents:
                raise UnsafeKey(f"refused {name!r}: it would be written outside {root}")
        if path.is_symlink():
            raise UnsafeKey(f"refused {name!r}: it is a symbolic link in the memory dir")
        return path

    def name_of(self, path: str | os.PathLike[str]) -> str:
        """The memory-dir-relative name of a user-given path."""
        given = Path(path).expanduser()
        absolute = (given if given.is_absolute() else Path.cwd() / given).resolve()
        root = self.ctx.memory_dir.resolve()
        if absolute != root and root not in absolute.parents:
            candidate = root / given
            if not given.is_absolute() and (candidate.exists() or candidate.name.endswith(".md")):
                absolute = candidate
            else:
                raise UserError(f"{path} is not inside the memory dir {root}")
        return absolute.relative_to(root).as_posix()

    def read_local(self, name: str) -> bytes | None:
        return read_if_there(self.local_path(name))

    def write_local(self, name: str, data: bytes, *, sync_dir: bool = True) -> None:
        """Write a memory file atomically. Inside a run, sync_dir=False leaves the directory's
        fsync to `_make_durable`, once for all files, before the records are saved."""
        self._write(self.local_path(name), data, sync_dir=sync_dir)

    def _write(
        self, path: Path, data: bytes, *, sync_dir: bool, new: bool = False, sync: bool = True
    ) -> None:
        mode = 0o600
        if not new:  # keep the mode the user gave an existing file
            with contextlib.suppress(FileNotFoundError):
                mode = path.stat().st_mode & 0o777
        atomic_write(path, data, mode, sync=sync, sync_dir=sync_dir)
        if not sync_dir:
            self._durability.wrote_in(path.parent)

    def _replace(
        self,
        path: Path,
        data: bytes,
        expected: bytes | None,
        *,
        sync: bool = True,
        edited: float | None = None,
    ) -> bytes | None:
        """Put a download or a merge where `expected` was read (see localswap.py): None when
        done, else the bytes written here in the meantime, left in place for another merge.
        The directory's fsync is left to `_make_durable`. `edited`: the edit time the remote
        copy carries, which becomes the file's mtime (`_edit_time_here`)."""
        mode = 0o600
        with contextlib.suppress(FileNotFoundError):
            mode = path.stat().st_mode & 0o777  # keep the mode the user gave the file
        mtime = _edit_time_here(edited)
        landed = localswap.replace(path, data, expected, mode, sync=sync, mtime=mtime)
        self._durability.wrote_in(path.parent)
        return landed

    def _make_durable(self) -> None:
        """This run's writes made durable before the records claim them (durability.py)."""
        self._durability.make_durable(self.local_path, self.state.meta)

    def scan_local(self, allow: dict[str, set[str]] | None = None) -> LocalScan:
        """Hash every memory file, reading only those whose stat changed since the last scan
        (see localfiles.py). Files changed since their last sync are checked before they may
        leave the machine; refused ones are reported and left untouched."""
        root = self.ctx.memory_dir
        scan = LocalScan(LocalFiles(root), {}, {})
        walk = MemoryWalk(root, sweep=True)
        seen, fresh = self.state.seen, {}
        now_ns = time.time_ns()
        for name, path, st in walk:
            scan.mtimes[name] = st.st_mtime
            stat_now = list(stat_key(st))
            rec = self.state.records.get(name)
            cached = seen.get(name)
            if rec is not None and cached == [*stat_now, rec.sha]:
                # untouched since a read that found what was last synced
                scan.content.add(name, rec.sha)
                fresh[name] = cached
                continue
            try:
                data = read_if_there(path)
            except OSError as exc:
                scan.refused[name] = f"it cannot be read ({exc.strerror})"
                continue
            if data is None:  # removed since the walk saw it: the next sync sees the deletion
                scan.refused[name] = "it was removed while memsync read the folder"
                continue
            digest = sha256(data)
            if rec is None or rec.sha != digest:
                try:
                    check_outbound(name, data, self.max_bytes, (allow or {}).get(name, ()))
                except RefusedFile as exc:
                    scan.refused[name] = exc.reason
                    if isinstance(exc, KeptLocal):
                        scan.kept.add(name)
                    continue
            if settled(st, now_ns):
                fresh[name] = [*stat_now, digest]
            scan.content.add(name, digest, data)
        scan.refused.update(walk.refused)
        scan.swept = walk.swept
        self.state.seen = fresh
        return scan

    # --- running a sync -------------------------------------------------------------------

    def run(
        self,
        mode: str = "sync",
        paths: Iterable[str] | None = None,
        *,
        force: bool = False,
        allow: dict[str, set[str]] | None = None,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
        cutoff: float | None = None,
    ) -> SyncResult:
        """mode: "sync" (both ways), "push" (local → remote) or "pull" (remote → local).

        Pending (queued) pushes are always drained first. With `paths`, a push trusts the
        last-synced records instead of listing, so pushing one known file is one request.
        No action starts after `deadline`, and no request outlives `cutoff` (both
        time.monotonic()): a request still running then fails as unreachable, so what it
        was for is queued or left for the next sync.
        """
        if mode not in ("sync", "push", "pull"):
            raise ValueError(mode)
        result = SyncResult(mode)
        if not self.ctx.sync_enabled:
            result.disabled = True
            return result
        started = time.monotonic()
        names = None if paths is None else [self.name_of(p) for p in paths]
        if cutoff is not None:
            self.store.deadline = cutoff
        with self.locked():
            try:
                self._run_locked(result, mode, names, force, allow or {}, deadline, progress)
                self._recount_restored(result)
                again = set(result.forgotten) & {*result.downloaded, *result.merged}
                if again:  # the forgotten copy went; a file made since under its name came
                    result.notes.append(
                        f"{', '.join(sorted(again))}: the copy forgotten here was replaced by "
                        "a new file of that name, written after the forget"
                    )
            except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM (see entry.py)
                stop.done = result  # type: ignore[attr-defined]  # what it did, for the CLI
                # `status` says when, instead of "never" after a first run that did push
                self.state.meta["last_interrupted"] = time.time()
                raise
            finally:
                self._make_durable()
                if self.state.meta.get("quarantined"):
                    from memsync.sync.tombstones import quarantine_notices

                    result.quarantined = quarantine_notices(self)
                self.state.meta["last_attempt"] = time.time()
                self.state.save()
                if self.state.bases.reset:
                    result.notes.append(self.state.bases.reset)
        if not result.offline and not result.disabled:
            before = pin(self.ctx.home, self.ctx.memory_dir, self.ctx.identity)
            if before:
                from memsync.sync.project import mark_moved

                moved = mark_moved(self.ctx, before)
                if moved:
                    result.notes.append(moved)
            note = None
            if self.ctx.other_origin:
                from memsync.sync.project import shares_dir

                shared = shares_dir(self.ctx, self.store)
                note = to_note(self.ctx.home, self.ctx.memory_dir, self.ctx.identity, shared)
            if note:
                result.notes.append(note)  # the CLI records it as said (identity.noted)
        result.stats = self.store.stats
        result.seconds = time.monotonic() - started
        return result

    def _take_in_listing(
        self, listing: dict[str, Entry], local: LocalScan, result: SyncResult, mode: str
    ) -> None:
        """What the remote says before anything is planned: a purge or another project's
        manifest stops the run; interrupted forgets finish, other devices' tombstones and
        conflict records are taken in (each may drop keys from `listing`)."""
        if PURGED in listing:
            from memsync.sync.tombstones import blocking_purge

            marker = blocking_purge(self, listing[PURGED].etag)
            if marker is not None:
                # remembered: this device stays out until it is told to publish again; one
                # with nothing synced has nothing to publish again, so it asks the remote
                # next time and joins once another device has published
                self.state.meta["purged"] = marker
                refusal = self._purged(result, listing, local)
                if not self.state.records:
                    del self.state.meta["purged"]
                raise refusal
        if MOVED in listing:
            from memsync.sync.project import check_moved

            check_moved(self.ctx, self.store)
        manifest = listing.get(MANIFEST)
        meta = self.state.meta
        if (
            manifest is None
            or manifest.etag != meta.get("manifest_etag")
            or (meta.get("manifest_unstamped") and self.ctx.fingerprint)
        ):
            # the project's manifest is new or changed since this device checked it, or it has
            # no fingerprint and this device now has one to stamp (project.py is loaded only
            # then: on most runs it is not)
            from memsync.sync.project import check_project

            early = None if self._manifest_ahead is None else self._manifest_ahead.result
            known = bool(self.state.records)
            check_project(self.ctx, self.store, meta, listing, mode, early, known)
        result.notes += self._take_in_forgets(listing, local, result)
        records = self.state.records
        if any(name not in listing for name in records):
            from memsync.sync.case_renames import follow_case_renames

            result.notes += follow_case_renames(self, listing, local)
        if any(name not in local.content.hashes for name in records):
            from memsync.sync.case_renames import carry_into_case_renames

            result.notes += carry_into_case_renames(self, listing, local, result)
        self._receive_conflicts(result, listing)

    def _take_in_forgets(
        self, listing: dict[str, Entry], local: LocalScan, result: SyncResult
    ) -> list[str]:
        """This device's forgets that waited for the remote are finished there, then the
        forgets on the remote list it has not learned of are applied to everything it holds
        (sync/tombstones.py). Returns a sentence for each forget finished."""
        finished: list[str] = []
        if self.forgets_pending():
            from memsync.sync.tombstones import finish_pending

            finished = finish_pending(self, listing)
            result.forgets_finished += len(finished)  # a change: never "in sync" after
        entry = listing.get(TOMBSTONES)
        unchanged = entry is None or entry.etag == self.state.meta.get("tombstones_etag")
        if unchanged and not finished:
            return finished  # the usual case: no import, no request
        from memsync.sync.tombstones import learn

        taken, changed = learn(self, listing)
        for name in {*taken, *changed, *(INDEX for _ in finished)}:
            data = self.read_local(name)
            if data is None:
                local.content.discard(name)
            else:
                local.content.add(name, sha256(data), data)
        result.forgotten += sorted(taken)
        result.notes += [
            f"lines another device forgot (`memsync forget`) were taken out of {name}"
            for name in sorted(changed)
        ]
        return finished

    def forgets_pending(self) -> bool:
        """Whether a forget made here waits for the remote (one stat)."""
        ctx = self.ctx
        return pending_forgets_file(ctx.home, ctx.project, ctx.memory_dir).exists()

    def _run_locked(
        self,
        result: SyncResult,
        mode: str,
        names: list[str] | None,
        force: bool,
        allow: dict[str, set[str]],
        deadline: float | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        """Look here, plan against the remote (or, for `push FILE`, against the records),
        refuse a mass deletion, carry the plan out, then settle the queue and the records."""
        if self.state.meta.get("purged"):
            raise self._purged(result, None, None)
        self._published = []  # this run's conflicts, from the take-in (case renames) on
        recover_landing(self.state, self.ctx.memory_dir, self.local_path, self._keep)
        local = self._look_here(result, mode, names, allow)
        pending = self.state.pending  # read after a lost dir's restore, which empties it
        # `push FILE` of files synced before trusts the records: one conditional PUT each. A
        # new file (or a device that never synced) lists first, one request as the check it
        # replaces: what the remote says before a first upload (a purge or moved mark, the
        # manifest, forgotten content, a name differing only by case) is taken in
        self._records_run = (
            mode == "push"
            and names is not None
            and bool(self.state.records)
            and all(n in self.state.records for n in [*names, *pending])
            and not _case_renamed_here(names, local, self.state.records)
        )
        if (
            self._records_run
            and self.store.content_etags
            and self._purge_blocked(result, [*(names or []), *pending])
        ):
            # ETags that are content hashes: a purge and another device's republish leave the
            # copies this device synced byte for byte, so their ETags too, and the conditional
            # write of an edit would succeed; the mark is asked for first (a folder remote:
            # one local read; fresh-eyes s30f)
            self._records_run = False
            return
        if self._records_run:
            run = self._plan_from_records(result, local, names or [], pending)
        else:
            planned = self._plan_from_listing(result, mode, local, names, pending)
            if planned is None:
                return
            run = planned
        self._refuse_mass_deletion(mode, run, force)
        self._records_at_start = dict(self.state.records)
        self._carry_out(result, run, deadline, progress)
        self._count_singly(result, mode, names, force)
        if self._came_back or self.state.meta.get(COMEBACKS):
            settle = names is None and mode != "push" and not result.offline
            self._index_comebacks(result, self._index_before, settle)
        if names is None and (result.deleted_local or result.deleted_remote):
            self._index_departures(result, run)
        if self.state.meta.get(PRUNED):
            self._pruned_back(result)
        self._settle(result, run, pending, full=names is None)
        self._records_run = False
        if self._deferred and not result.offline:
            # another device forgot something since this device last listed: a listing
            # sync of those files takes the forget in first (sets aside an edit of what
            # was forgotten) and only then merges and uploads (report 27, finding 17)
            deferred, self._deferred = sorted(self._deferred), set()
            self._run_locked(result, "sync", deferred, force, allow, deadline, progress)

    def _pruned_back(self, result: SyncResult) -> None:
        """A file `memsync prune` deleted here that this run brought back: another device
        edited it after the prune, and an edit beats a deletion. Said once (fresh-eyes s31c,
        q19: only the editing device was told); a prune a month old is no longer watched."""
        pruned = self.state.meta[PRUNED]
        back = {*result.downloaded, *result.merged}
        for name, at in list(pruned.items()):
            if name in back:
                result.notes.append(
                    f"{name}, which `memsync prune` deleted here, came back: another device "
                    "edited it after the prune (an edit beats a deletion); prune it again if "
                    "it is no longer needed"
                )
            if name in back or not isinstance(at, (int, float)) or time.time() - at > _PRUNE_WATCH:
                del pruned[name]
        if not pruned:
            del self.state.meta[PRUNED]

    def _purged(
        self, result: SyncResult, listing: dict[str, Entry] | None, local: LocalScan | None
    ) -> Exception:
        """The refusal of a purged project, after the forgets recorded on its remote since
        this device last read them are applied here: a purge keeps the forget records, and
        `forget` on a purged device records one, so a device that syncs nothing more there
        (it purged to leave that remote) still forgets, and carries the forget to the other
        remotes it syncs. That deletes here and uploads nothing (fresh-eyes s31a, finding 3).
        A forget of this device's that waited for the remote is finished there the same way
        (its record goes up, no content), so no device publishing again brings its files back
        (fresh-eyes s31c, finding 2)."""
        from memsync.sync.tombstones import Purged, purged_here

        refusal = purged_here(self)
        done: list[str] = []
        try:
            listing = self.store.list() if listing is None else listing
            done += self._take_in_forgets(listing, local or self.scan_local(), result)
        except (StoreError, OSError):
            pass  # the refusal stands; the forget is applied another time
        if result.forgotten:
            done.append(
                f"another device's `memsync forget` was applied here: {', '.join(result.forgotten)}"
            )
        return Purged("; ".join([str(refusal), *done])) if done else refusal

    def confirm_project(self, listing: dict[str, Entry] | None = None) -> None:
        """Refuse as a sync would when the remote holds another project's memory under this
        name: for commands that reach the remote outside a sync (see project.py)."""
        from memsync.sync.project import confirm_project

        confirm_project(self.ctx, self.store, self.state.meta, bool(self.state.records), listing)

    def _look_here(
        self,
        result: SyncResult,
        mode: str,
        names: list[str] | None,
        allow: dict[str, set[str]],
    ) -> LocalScan:
        """The memory dir's scan; a lost memory dir restored first (see memory_dir_lost)."""
        local = self.scan_local(allow)
        # the state dir only on full runs: `push FILE` after each memory write stays lean
        swept = local.swept + (sweep_temp_files(self.ctx.state_dir) if names is None else 0)
        if swept:
            result.notes.append(f"Removed {swept} temp file(s) left by an interrupted write.")
        result.refused, result.kept_local = local.split_refused()
        # `push FILE` too (the PostToolUse hook): once the agent's first new file in a lost
        # folder were recorded, the folder would no longer look lost, and the next push
        # would delete everything the folder held from the remote
        if self.memory_dir_lost(local):
            self._restore_lost_dir(result, mode)
        return local

    def _plan_from_records(
        self, result: SyncResult, local: LocalScan, names: list[str], pending: list[str]
    ) -> _Run:
        """`push FILE`: trust the records instead of listing, so the happy path is one
        conditional request a file."""
        records = self.state.records
        result.refused.update(refuse_colliding_names(local, records))
        remote = {n: r.etag for n, r in records.items()}
        only = set(names) | set(pending)
        result.refused = {n: r for n, r in result.refused.items() if n in only}
        result.kept_local = {n: r for n, r in result.kept_local.items() if n in only}
        local_hashes = dict(local.content.hashes)
        actions = planner.plan(
            local_hashes, remote, records, kinds=planner.PUSH_KINDS, only=only, skip=local.refused
        )
        return _Run(local, local_hashes, remote, {}, actions)

    def _plan_from_listing(
        self,
        result: SyncResult,
        mode: str,
        local: LocalScan,
        names: list[str] | None,
        pending: list[str],
    ) -> _Run | None:
        """List the remote and plan `mode` against it; None when the remote cannot be reached
        (what the run was for is queued)."""
        records = self.state.records
        self._manifest_ahead = None
        if not records:
            # a fresh device fetches or sends everything: open the transfers' connections
            # while the listing is in flight; a fresh pull reads the project's manifest
            # alongside the listing too, not one round trip after it
            if mode == "pull":
                from memsync.sync.transfers import GetAhead

                self._manifest_ahead = GetAhead(self.store, MANIFEST)
            self.store.warm(int(self.ctx.setting("concurrency")))
        listing = self._list(result, mode, dict(local.content.hashes), records, pending)
        if listing is None:
            return None
        if not listing and records:
            raise GuardError(self._remote_lost_message(len(records)))
        self._take_in_listing(listing, local, result, mode)
        local_hashes = dict(local.content.hashes)
        files = classify(listing, self.state.refused_remote)
        result.refused_remote.update(files.unsafe)
        result.ignored_remote.update(files.ignored)
        self.state.keep_refused_remote(files.ignored)
        remote = {key: entry.etag for key, entry in files.memory.items()}
        entries = {key: entry.modified for key, entry in files.memory.items()}
        result.refused.update(refuse_colliding_names(local, records, remote))
        named = None if names is None else {*names, *pending}
        if named is not None:
            # a letter-case rename pushed by its new name (the FileChanged or PostToolUse
            # hook) takes the old name off the remote in the same run, as a sync would:
            # another device's edit of the old name in between would bring both names back
            folds = {fold(n) for n in named}
            here = local.content.hashes
            named |= {n for n in records if fold(n) in folds and n not in here}
            named |= {n for n in here if fold(n) in folds and n not in records}
        if mode == "push" and named is not None:
            # `push FILE` of a new file: it speaks of those files only, as when it plans
            # from the records
            result.refused = {n: r for n, r in result.refused.items() if n in named}
            result.kept_local = {n: r for n, r in result.kept_local.items() if n in named}
        skip = set(local.refused) | set(result.refused_remote)
        if mode == "sync":
            actions = planner.plan(local_hashes, remote, records, only=names, skip=skip)
        elif mode == "push":
            actions = planner.plan(
                local_hashes, remote, records, kinds=planner.PUSH_KINDS, only=named, skip=skip
            )
        else:  # a pull, which also sends what this device queued while offline
            actions = planner.plan(
                local_hashes, remote, records, kinds=planner.PULL_KINDS, only=names, skip=skip
            )
            drain = planner.plan(
                local_hashes, remote, records, kinds=planner.PUSH_KINDS, only=pending, skip=skip
            )
            seen = {a.name for a in actions}
            actions += [a for a in drain if a.name not in seen]
        if mode != "sync" and names is None:
            planned = {a.name for a in actions}
            every = planner.plan(local_hashes, remote, records, skip=skip)
            result.other_way = sorted(a.name for a in every if a.name not in planned)
        self._warm_for(actions)
        return _Run(local, local_hashes, remote, entries, actions)

    def _refuse_mass_deletion(self, mode: str, run: _Run, force: bool) -> None:
        """More than half of the files and more than 5 deleted take --force, whether in one
        run or one `push FILE` at a time (FileChanged and PostToolUse hooks, the watcher) since
        the last full sync: those are counted in meta `deleted_singly`."""
        singly = [n for n in self.state.meta.get(SINGLY, []) if n not in self.state.records]
        planned = {a.name for a in planner.deletions(run.actions)}
        count = len(planned | set(singly))
        total = len(set(run.local_hashes) | set(run.remote) | set(self.state.records) | set(singly))
        if force or not planner.too_many(count, total):
            return
        # digests a roll-up here or on the remote covers: a compaction's work, not a loss
        from memsync.memory.digests import rolled_up

        planned -= rolled_up(planned, {*run.local_hashes, *run.remote})
        count = len(planned | set(singly))
        if not planner.too_many(count, total):
            return
        if not singly:
            raise GuardError(
                f"this {mode} would delete {count} of {total} memory files; "
                "if that is what you want, run it again with --force"
            )
        raise GuardError(
            f"this {mode} would make {count} of {total} memory files deleted from the remote "
            f"since the last full sync ({len(singly)} already, one at a time); if that is "
            "what you want, run `memsync sync --force`"
        )

    def _count_singly(
        self, result: SyncResult, mode: str, names: list[str] | None, force: bool
    ) -> None:
        """Keep the count `_refuse_mass_deletion` reads: `push FILE` deletions add to it, a
        full sync or push that went through starts it again."""
        meta = self.state.meta
        if names is not None and mode == "push":
            if result.deleted_remote and not force:  # forced: a command's (compaction's) own
                meta[SINGLY] = sorted({*meta.get(SINGLY, []), *result.deleted_remote})
        elif mode in ("sync", "push") and not result.offline and not result.errors:
            meta.pop(SINGLY, None)

    def _carry_out(
        self,
        result: SyncResult,
        run: _Run,
        deadline: float | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        """Execute the plan (deletions and renames in their own step first); interrupted,
        the pushes not done are queued, so that even a `push FILE` (which looks only at its
        files and the queue) sends them next time."""
        actions, records = run.actions, self.state.records
        new = [
            a.name for a in actions if a.kind is Kind.DOWNLOAD and a.name not in run.local_hashes
        ]
        self._durability.land(sorted(new), self.state)
        self._came_back = set()
        # MEMORY.md as it was, for the index line of a file an edit brings back: read now only
        # when the plan says one comes back (the index may be merged before it is uploaded),
        # else when one does (see _came_back_here)
        self._index_before = None
        self._index_read = any(
            a.name in records
            and (
                (a.kind is Kind.UPLOAD and a.name not in run.remote)
                or (a.kind is Kind.DOWNLOAD and a.name not in run.local_hashes)
            )
            for a in actions
        )
        if self._index_read:
            self._index_before = self._index_text()
        try:
            for batch in _renames_in_two_steps(actions):
                self._execute(result, batch, run, deadline, progress)
        except BaseException:
            done = self._settled(result, run.local_hashes)
            self.state.queue(
                [
                    a.name
                    for a in actions
                    if a.kind in planner.PUSH_KINDS
                    and a.kind is not Kind.FORGET
                    and a.name not in done
                ]
            )
            raise
        self._publish_conflicts(result)

    def _settle(self, result: SyncResult, run: _Run, pending: list[str], full: bool) -> None:
        """The queue, the refused files and the time of the last full success, after a run."""
        done = self._settled(result, run.local_hashes)
        self.state.unqueue([n for n in pending if n in done or n not in run.local_hashes])
        if result.offline:
            queued = [a.name for a in run.actions if a.kind in planner.PUSH_KINDS]
            self.state.queue([n for n in queued if n not in done])
            result.queued = self.state.pending
        self.state.set_refused(run.local.split_refused()[0])
        if not result.offline and not result.errors and result.skipped == []:
            self.state.meta["last_sync"] = time.time()
            self.state.meta.pop("last_interrupted", None)
            if self.state.conflicts and full:
                # a file deleted on every side takes its conflicts with it (each device
                # clears its own: there is nothing left to resolve)
                remote = set(run.remote) - set(result.deleted_remote)
                for name in {c["file"] for c in self.state.conflicts} - set(self.state.records):
                    if name not in remote and not self.local_path(name).exists():
                        self.state.resolve_conflicts(name)
                if any("marks" in c for c in self.state.conflicts):
                    from memsync.sync.conflicts import outlived

                    outlived(self.state, self.read_local)

    def _index_text(self) -> str | None:
        try:
            data = self.read_local(INDEX)
        except (OSError, UnsafeKey):
            return None
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def _came_back_here(self, name: str) -> None:
        """`name`, synced before and deleted on one side, is back: an edit beat the deletion."""
        with self._lock:
            if name != INDEX:
                self._came_back.add(name)
                if not self._index_read:
                    self._index_read = True
                    self._index_before = self._index_text()

    def _index_comebacks(self, result: SyncResult, before: str | None, settle: bool) -> None:
        """A file an edit brought back after a deletion (a prune or a delete on one device,
        an edit on another) gets its MEMORY.md line back, or Claude Code, which finds memory
        files through the index, would not see a file that exists. The line is the one this
        index had before the run (else one made from the file's frontmatter), remembered until
        a full sync or pull has taken in the other device's index; then it is added if that
        index lacks it, pushed, and said in a note."""
        waiting = dict(self.state.meta.get(COMEBACKS) or {})
        for name in sorted(self._came_back):
            lines = index_links.linking_lines(before, name)
            made = index_links.made_line(name, self._text_of(name))
            waiting[name] = lines[0] if lines else made
        self.state.meta[COMEBACKS] = waiting
        failed = result.errors.keys() | result.refused.keys() | set(result.skipped)
        if not settle or INDEX in failed:
            return  # the other device's index is not taken in yet: kept for the next sync
        current = self._index_text()
        missing = [
            (name, line)
            for name, line in sorted(waiting.items())
            if current is not None
            and self._text_of(name) is not None
            and not index_links.links_to(current, name)
        ]
        del self.state.meta[COMEBACKS]
        if not missing or current is None:
            return
        new = index_links.with_lines(current, [line for _, line in missing])
        data = new.encode("utf-8", "surrogateescape")
        path = self.local_path(INDEX)
        if self._replace(path, data, current.encode("utf-8", "surrogateescape")) is not None:
            self.state.meta[COMEBACKS] = waiting  # written here meanwhile: the next sync
            return
        self._upload_index(result, data, path)
        for name, _ in missing:
            result.notes.append(
                f"{name} is back (deleted on one device while edited on another: the edit "
                f"wins), so MEMORY.md lists it again"
            )

    def _upload_index(self, result: SyncResult, data: bytes, path: Path) -> None:
        """Send MEMORY.md as this run rewrote it after the plan; queued if that fails."""
        rec = self.state.records.get(INDEX)
        try:
            self._upload(result, INDEX, data, rec.etag if rec else None, _mtime(path))
        except Unreachable as exc:
            result.offline = str(exc)
            self.state.queue([INDEX])
        except StoreError as exc:
            result.errors[INDEX] = str(exc)
            self.state.queue([INDEX])

    def _index_departures(self, result: SyncResult, run: _Run) -> None:
        """MEMORY.md lines linking to a file this run deleted (here, as another device deleted,
        pruned, compacted it; or on the remote) go too: a line edited on one device while
        the file was deleted on another is an edit to the merge, which keeps it, and it
        would link to nothing on every device. The index as it was is kept in history and
        the change said in a note (`forget FILE` does the same through its tombstone)."""
        failed = result.errors.keys() | result.refused.keys() | set(result.skipped)
        if result.offline or INDEX in failed:
            return
        gone = {
            n
            for n in (*result.deleted_local, *result.deleted_remote)
            if n != INDEX and n not in self.state.records and self._text_of(n) is None
        }
        current = self._index_text()
        if not gone or current is None:
            return
        text, removed = index_links.without_links(current, gone)
        if not removed:
            return
        before = current.encode("utf-8", "surrogateescape")
        data = text.encode("utf-8", "surrogateescape")
        path = self.local_path(INDEX)
        self._keep(INDEX, before, "lines linking to deleted files taken out")
        if self._replace(path, data, before) is not None:
            return  # written here meanwhile: left for the next sync to find
        self._upload_index(result, data, path)
        names = sorted({t for line in removed for t in index_links.link_targets(line)} & gone)
        result.notes.append(
            f"MEMORY.md no longer lists {', '.join(names)}: the file was deleted (on this or "
            "another device) and a line for it, kept by a merge, linked to nothing (the index "
            "as it was is in `memsync history MEMORY.md`)"
        )
        elsewhere = sorted(set(names) & set(result.deleted_local))
        if elsewhere:
            # deleted (or renamed) on another device, whose index let its line go: the line
            # here outlived that only as an edit made to it, which is set aside: a conflict,
            # so status, --json and the next primer say it, not only this run's note
            detail = (
                f"the line for {', '.join(elsewhere)}, edited here, was taken out: the file "
                "was deleted or renamed on another device; the line as it was is in "
                "`memsync history MEMORY.md`"
            )
            from memsync.sync.conflicts import entry

            theirs = (  # as the other devices read it, on the remote record
                f"the line for {', '.join(elsewhere)}, edited on {self.ctx.device}, was taken "
                "out: the file was deleted or renamed on another device; the line as it was is "
                f"in `memsync history MEMORY.md` on {self.ctx.device}"
            )
            self._report_conflict(result, INDEX, detail, entry(INDEX, theirs, self.ctx.device))
            self._publish_conflicts(result)

    def _text_of(self, name: str) -> str | None:
        try:
            data = self.read_local(name)
        except (OSError, UnsafeKey):
            return None
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def _settled(self, result: SyncResult, local_hashes: dict[str, str]) -> set[str]:
        """The files this run left in sync: those it sent, merged or deleted, and those found
        identical on both sides (a PUT that landed as an earlier run was cut off), which are
        only recorded: none of them is still waiting to be pushed."""
        done = set(result.uploaded + result.merged + result.deleted_remote)
        with self._lock:
            done.update(
                name
                for name, sha in local_hashes.items()
                if (rec := self.state.records.get(name)) is not None and rec.sha == sha
            )
        return done

    def memory_dir_lost(self, local: LocalScan) -> bool:
        """Whether the memory dir is missing or holds no memory file at all while the records
        say files were synced from it: a lost folder (a wiped disk, a new checkout, an `rm
        -rf`), never a request to delete every file everywhere. A folder made again, where
        the agent already wrote a new file or two, holds none of the synced files: lost too,
        when those were more than a few (deleting a handful by hand is an ordinary edit) or
        included MEMORY.md (Claude Code's index, which nobody deletes with its files). A
        folder left with MEMORY.md alone, of more than a few synced files, is lost the same
        way: the index is what Claude Code writes first into a new folder, and so is one
        left with MEMORY.md alone written anew, linking to none of the files synced from it,
        whatever their number (a user deleting a few by hand leaves the index's other lines)."""
        from memsync.memory.digests import rolled_up

        # no loss: a file forgotten here (not finished on this remote yet), or a digest a
        # roll-up here covers (compaction with sync off deletes them before any sync)
        gone: set[str] = set()
        if self.forgets_pending():
            from memsync.sync.tombstones import pending_jobs

            gone = {n for job in pending_jobs(self) for n in job.files}
        here = local.content.hashes
        gone |= rolled_up(self.state.records.keys() - here.keys(), here)
        records = {n: r for n, r in self.state.records.items() if n not in gone}
        if not records or local.refused:
            return False
        synced_here = records.keys() & local.content.hashes.keys()
        if synced_here - {INDEX}:
            return False
        if synced_here:  # only MEMORY.md: kept, or written again by Claude Code in a new folder
            index_sha = local.content.hashes[INDEX]
            return len(records) - 1 > LOST_DIR_MIN or self._index_written_anew(records, index_sha)
        return not local.content.hashes or len(records) > LOST_DIR_MIN or INDEX in records

    def _index_written_anew(self, records: dict, index_sha: str) -> bool:
        """MEMORY.md changed since it was synced and links to none of the other files (two
        or more) synced from this folder: the index of a new folder, not the old one edited.
        A single file deleted with its index line (the memory tool's delete) is an edit."""
        if index_sha == records[INDEX].sha or len(records) < 3:
            return False
        text = self._index_text()
        return not any(index_links.links_to(text, name) for name in records if name != INDEX)

    def _remote_lost_message(self, count: int) -> str:
        """An empty remote where this device synced files: an unmounted share (its mount
        point is an empty folder), a container emptied or made anew. Syncing would delete
        every file here; nothing is done until the user says which it is."""
        return (
            f"the remote {_display_remote(self.ctx)} is empty, but this device synced {count} "
            "file(s) with it; nothing was changed here or there: if it is a drive or a share, "
            "mount it; if it was emptied on purpose, `memsync push --republish` publishes this "
            "device's memory to it again"
        )

    def _restore_lost_dir(self, result: SyncResult, mode: str) -> None:
        """A lost memory dir is restored by a pull and refused by a push or sync (which would
        otherwise delete every file on the remote, --force or not)."""
        where = self.ctx.memory_dir
        here = self.scan_local().content.hashes if where.is_dir() else {}
        lost = {n for n in self.state.records if n not in here}  # as status counts them
        gone = (
            "missing"
            if not where.is_dir()
            else "empty"
            if not here
            else f"left with only {INDEX} of its synced files"
            if INDEX in here and INDEX in self.state.records
            else "left with none of its synced files"
        )
        if mode != "pull":
            raise GuardError(
                f"the memory dir {where} is {gone} but {len(lost)} file(s) were synced from it; "
                "nothing was deleted on the remote: run `memsync pull` to bring them back "
                "(to delete them everywhere instead, `memsync forget FILE...`)"
            )
        for name in list(self.state.records):
            self.state.forget(name)  # what is on the remote lands again as new files
        self.state.unqueue(self.state.pending)  # queued deletions of the lost files
        self._restoring = (where, gone, lost)
        result.restored = _restored_note(where, gone, len(lost))
        result.notes.append(result.restored)

    def _recount_restored(self, result: SyncResult) -> None:
        """The restore's count without the files no longer on the remote: forgotten or deleted
        by another device since this one synced them (the count was made before the listing)."""
        if self._restoring is None or result.restored is None or result.offline:
            return
        where, gone, lost = self._restoring
        self._restoring = None
        waiting = {*result.downloaded, *result.errors, *result.refused_remote, *result.skipped}
        if lost - waiting:
            note = _restored_note(where, gone, len(lost & waiting))
            result.notes[result.notes.index(result.restored)] = note
            result.restored = note

    def _list(self, result, mode, local_hashes, records, pending):
        try:
            return self.store.list()
        except NotFound:
            if records:  # not made again here: it may be an unmounted share's mount point
                raise GuardError(self._remote_lost_message(len(records))) from None
            if mode == "pull":
                raise UserError(
                    f"the remote {_display_remote(self.ctx)} does not exist yet; "
                    f"{self.store.create_advice()}"
                ) from None
            try:
                self.store.ensure()
            except Unreachable as exc:
                self._go_offline(result, str(exc), local_hashes, records)
                return None
            return {}
        except Unreachable as exc:
            self._go_offline(result, str(exc), local_hashes, records)
            return None

    def _receive_conflicts(self, result: SyncResult, listing) -> None:
        """Conflicts other devices recorded while merging (maybe with our edit) become ours."""
        entry = listing.get(CONFLICTS)
        if entry is None or entry.etag == self.state.meta.get("conflicts_etag"):
            return  # the usual case: no import, no request
        from memsync.sync.conflicts import receive

        for item in receive(self.store, self.state, self.ctx.device):
            result.conflicts.append(f"{item['file']}: {item['detail']}")

    def share_conflict(
        self, name: str, detail: str, for_others: str, marks: Sequence[str] = ()
    ) -> None:
        """A conflict found outside a merge (a compaction's): recorded here, and on the remote
        record with the next run that reaches it, so every device's status and primer say it
        (fresh-eyes s33c, G4: only the compacting device did)."""
        from memsync.sync.conflicts import entry

        shared = entry(name, for_others, self.ctx.device, marks)
        with self._lock:
            self.state.add_conflict(name, detail, shared["id"], marks)
            queued = self.state.meta.get(_UNPUBLISHED_CONFLICTS, [])
            self.state.meta[_UNPUBLISHED_CONFLICTS] = [*queued, shared]

    def _publish_conflicts(self, result: SyncResult) -> None:
        queued = list(self.state.meta.get(_UNPUBLISHED_CONFLICTS, []))
        entries = [*queued, *self._published]
        if result.offline or not (entries or self.state.meta.get("pending_resolutions")):
            return
        from memsync.sync.conflicts import publish, publish_resolutions

        try:
            if entries:
                publish(self.store, entries)
                self.state.meta.pop(_UNPUBLISHED_CONFLICTS, None)
            publish_resolutions(self.store, self.state)
        except Unreachable:
            pass  # recorded here; the other device learns of it from its own merge or status
        except StoreError as exc:
            result.notes.append(f"could not record the conflicts on the remote ({exc})")
        self._published = []

    def _go_offline(self, result: SyncResult, reason: str, local_hashes, records) -> None:
        result.offline = reason
        changed = [n for n, h in local_hashes.items() if n not in records or records[n].sha != h]
        deleted = [n for n in records if n not in local_hashes]
        self.state.queue(changed + deleted)
        result.queued = self.state.pending

    # --- executing actions ----------------------------------------------------------------

    def _execute(self, result, actions, run, deadline, progress) -> None:
        done = 0
        total = len(actions)

        def one(action: Action) -> None:
            nonlocal done
            if deadline is not None and time.monotonic() > deadline:
                with self._lock:
                    result.skipped.append(action.name)
                return
            if result.offline:
                # one request already spent its retries on an unreachable remote: the rest
                # would each wait as long; the pushes among them are queued below
                return
            try:
                self._apply(result, action, run)
            except Unreachable as exc:
                with self._lock:
                    result.offline = str(exc)
            except RefusedFile as exc:
                with self._lock:
                    result.refused_remote[action.name] = exc.reason
                    etag = run.remote.get(action.name)
                    if etag is not None:  # remembered: not fetched again until it changes
                        self.state.refuse_remote(action.name, etag, exc.reason)
            except OSError as exc:  # a write here failed: say which file and what to do
                with self._lock:
                    where = None if exc.filename else self.ctx.memory_dir / action.name
                    result.errors[action.name] = describe_os_error(exc, where)
            except (StoreError, UserError) as exc:
                with self._lock:
                    result.errors[action.name] = str(exc)
            finally:
                with self._lock:
                    done += 1
                    if progress is not None:
                        progress(done, total)

        workers = self._workers(len(actions))
        if workers <= 1:
            for action in actions:
                one(action)
        else:
            from memsync.sync.transfers import run_daemons

            run_daemons(one, actions, workers, lambda: self._workers(len(actions)))
        for attr in ("uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"):
            getattr(result, attr).sort()

    def _warm_for(self, actions: list[Action]) -> None:
        """A fresh pull whose manifest, read beside the listing, took a slow network's round
        trip opens the connections of the widened transfers now, while the first ones run:
        when the run widens (`_workers`, once eight requests are timed) they are ready, not a
        handshake away. One request is only a guess (on a loopback Azurite, which serves one
        request at a time, it can wait behind a long listing), so it opens idle connections
        and no more: a wrong guess costs a few milliseconds of handshakes."""
        took = None if self._manifest_ahead is None else self._manifest_ahead.took
        if took is None:
            return
        from memsync.sync.transfers import MAX_WORKERS, SLOW_ROUND_TRIP

        base = int(self.ctx.setting("concurrency"))
        if took >= SLOW_ROUND_TRIP and len(actions) > base:
            self.store.warm(min(MAX_WORKERS, len(actions)) - base)

    def _workers(self, count: int) -> int:
        """Parallel transfers for `count` actions: the `concurrency` setting, widened over a
        slow network so the run is a few round trips, not count / concurrency of them."""
        base = int(self.ctx.setting("concurrency"))
        if count <= base:
            return count
        from memsync.sync.transfers import MAX_WORKERS, SLOW_ROUND_TRIP

        rtt = self.store.round_trip
        ahead = self._manifest_ahead
        if rtt is None and ahead is not None and ahead.took is not None:
            rtt = ahead.took / 2  # until requests are timed: the manifest's connect and GET
        if rtt is not None and rtt >= SLOW_ROUND_TRIP:
            return min(MAX_WORKERS, count)
        return base

    def _record(self, name: str, etag: str, content: bytes) -> None:
        with self._lock:
            self.state.set_synced(name, etag, content)

    def _apply(self, result: SyncResult, action: Action, run: _Run) -> None:
        name = action.name
        if action.kind is Kind.UPLOAD:
            self._upload(
                result, name, run.local.content[name], run.remote.get(name), run.mtime(name)
            )
        elif action.kind is Kind.DOWNLOAD:
            self._download(result, name, run.local_hashes.get(name))
        elif action.kind is Kind.MERGE:
            self._merge(result, name, run.local.content[name], run.mtime(name))
        elif action.kind is Kind.DELETE_REMOTE:
            self._delete_remote(result, name)
        elif action.kind is Kind.DELETE_LOCAL:
            self._delete_local(result, name, run.local_hashes.get(name))
        elif action.kind is Kind.FORGET:
            with self._lock:
                self.state.forget(name)

    def _upload(
        self,
        result: SyncResult,
        name: str,
        ours: bytes,
        remote_etag: str | None,
        mtime: float | None = None,
    ) -> None:
        """Upload with the file's mtime, the time of its edit here, kept with the object."""
        try:
            if remote_etag is None:
                if name in self.state.records:
                    self._came_back_here(name)  # synced, gone on the remote, edited here
                elif self._records_run and self._forgotten_since(name):
                    # a new file: another device may have forgotten its content under the
                    # name it had before a rename here (the listing sync that follows
                    # sets it aside then; finding 16)
                    return
                try:
                    etag = self.store.create(name, ours, mtime)
                except NotFound:  # a push that trusted its records found no container
                    self.store.ensure()
                    etag = self.store.create(name, ours, mtime)
            else:
                etag = self.store.replace(name, ours, remote_etag, mtime)
        except PreconditionFailed:
            if self._purge_blocked(result, [name]) or self._forgotten_since(name):
                return
            self._merge(result, name, ours, mtime)  # `push FILE` too: the edit times decide
            return
        self._record(name, etag, ours)
        with self._lock:
            result.uploaded.append(name)

    def _download(self, result: SyncResult, name: str, expected_sha: str | None) -> None:
        try:
            theirs, etag, edited = self.store.fetch(name)
        except NotFound:
            return  # deleted meanwhile; the next sync sees it
        check_inbound(name, theirs, self.max_bytes)
        path = self.local_path(name)
        current = read_if_there(path)
        if current is not None and sha256(current) != expected_sha:
            self._merge(result, name, current, _mtime(path))  # edited here while we were busy
            return
        if current != theirs:
            if current is not None:
                self._keep(name, current, "replaced by a newer version from the remote")
            elif (rec := self.state.records.get(name)) is not None and rec.etag != etag:
                self._came_back_here(name)  # deleted here, edited on another device
            sync = name not in self._durability.landing
            landed = self._replace(path, theirs, current, sync=sync, edited=edited)
            if landed is not None:
                self._merge(result, name, landed, _mtime(path))  # written here in the meantime
                return
            with self._lock:
                result.downloaded.append(name)
        self._record(name, etag, theirs)

    def _merge(self, result: SyncResult, name: str, ours: bytes, mtime: float | None) -> None:
        """Merge `ours` (edited here at `mtime`) with the remote copy, whose edit time comes
        with it (`Store.fetch`): never an upload time. Each attempt reads the remote copy and
        writes the merge there (a conditional write) and here; a race lost on either side is
        another attempt, up to MAX_ATTEMPTS."""
        base = self._synced_copy(self.state.records.get(name))
        for _ in range(MAX_ATTEMPTS):
            try:
                theirs, etag, theirs_mtime = self.store.fetch(name)
            except NotFound:
                if self._put_back_removed(result, name, ours, mtime):
                    return
                continue
            theirs_ok = self._remote_copy_accepted(result, name, theirs)
            if theirs == ours:  # e.g. a PUT that landed as an interrupted run ended: record it
                self._record(name, etag, ours)
                self._conflict_that_landed(result, name, ours)
                return
            base = _base_by_hash(base, self.state.records.get(name), ours, theirs)
            if base is None and is_rollup(name) and not self.state.records_lost:
                base = self._rollup_base(ours, theirs)
            outcome: MergeResult | None = None
            merged = ours  # a corrupt remote copy never replaces a good local one: overwritten
            if theirs_ok:
                outcome = _merge_copies(name, base, ours, theirs, mtime, theirs_mtime)
                if base is None and self.state.records_lost:
                    outcome = _without_record(name, outcome, ours, theirs)
                merged = outcome.content
            edited = theirs_mtime  # the edit time the remote copy carries, which lands here
            if merged != theirs:
                edited = _merge_edited(outcome, mtime)
                sent = self._send_merge(name, merged, etag, outcome, edited)
                if sent is None:
                    continue
                etag = sent
            again = self._land_merge(name, base, ours, merged, edited)
            if again is not None:
                base, ours, mtime = again
                continue
            if (
                outcome is not None
                and outcome.conflict
                and (outcome.discarded == ours or outcome.ours_set_aside)
            ):
                with self._lock:
                    result.replaced[name] = outcome.conflict
            self._settle_merge(result, name, outcome, merged, etag)
            return
        with self._lock:
            result.errors[name] = (
                f"{name} kept changing on the remote; gave up after {MAX_ATTEMPTS} merge attempts "
                "(run sync again)"
            )

    def _rollup_base(self, ours: bytes, theirs: bytes) -> bytes | None:
        """The base of two roll-ups of one period that two devices made apart (no version in
        common): the synced copies of the digests both list as sources, rolled up as
        compaction rolls them (memory/rollups.py). A line one of them reworded before its
        compaction is then a rewording, not a new line beside the old one; a line both
        reworded, a conflict; a line one of them lacks (rolled from an older copy) is no
        removal."""
        from memsync.memory import rollups

        both = set(rollups.sources(ours)) & set(rollups.sources(theirs))
        copies = {}
        for source in both:
            content = self._synced_copy(self._records_at_start.get(source))
            if content is not None:
                copies[source] = content
        return rollups.base_of(copies, ours, theirs)

    def _synced_copy(self, rec: Record | None) -> bytes | None:
        """The content `rec` names (the base)."""
        return self.state.content(rec.sha) if rec is not None else None

    def _put_back_removed(
        self, result: SyncResult, name: str, ours: bytes, mtime: float | None
    ) -> bool:
        """The remote copy is gone (deleted elsewhere meanwhile): ours goes back, unless a
        deletion blocks that (`_recreate_blocked`). False when another device created the file
        first: another attempt merges with that."""
        if name in self.state.records and self._recreate_blocked(result, name):
            return True
        if self._records_run and name in self.state.records:
            # `push FILE` planned from the records: a listing sync of it decides whether it
            # comes back, or goes into another device's letter-case rename of it
            with self._lock:
                self._deferred.add(name)
            return True
        try:
            etag = self.store.create(name, ours, mtime)
        except AlreadyExists:
            return False
        if name in self.state.records:
            self._came_back_here(name)
        self._finish_merge(result, name, ours, etag)
        return True

    def _remote_copy_accepted(self, result: SyncResult, name: str, theirs: bytes) -> bool:
        """Whether the remote copy may be merged (the inbound gate); a refused one is said,
        then overwritten by the local version."""
        try:
            check_inbound(name, theirs, self.max_bytes)
        except RefusedFile as exc:
            with self._lock:
                result.notes.append(
                    f"{name}: the remote copy was refused ({exc.reason}); "
                    "replaced it with the local version"
                )
            return False
        return True

    def _send_merge(
        self, name: str, merged: bytes, etag: str, outcome: MergeResult | None, edited: float | None
    ) -> str | None:
        """Write the merge over the remote copy read (`etag`), with its edit time `edited`
        (`_merge_edited`): its new ETag, or None when the remote changed meanwhile (another
        attempt). Its conflict is noted first (see _expect_conflict)."""
        self._expect_conflict(name, merged, outcome)
        try:
            return self.store.replace(name, merged, etag, edited)
        except PreconditionFailed:
            return None

    def _land_merge(
        self, name: str, base: bytes | None, ours: bytes, merged: bytes, edited: float | None
    ) -> tuple[bytes | None, bytes, float | None] | None:
        """Write the merge here, the copy it replaces kept in history, with the edit time the
        remote copy carries (`edited`) as its mtime, as a download gets. None when it stands;
        else this copy changed since `ours` was read, and the next attempt merges that edit
        with what the remote holds now: (base, ours, mtime) for it."""
        current = self.read_local(name)
        if current is not None and current != ours:
            return base, current, _mtime(self.local_path(name))  # edited here meanwhile
        if merged != ours or current is None:
            if current is not None:
                self._keep(name, current, "replaced by a merge with the remote version")
            landed = self._replace(self.local_path(name), merged, current, edited=edited)
            if landed is not None:
                # written here between the re-read and the rename, over what we had read
                # (`ours`), which becomes the base
                return ours, landed, _mtime(self.local_path(name))
        return None

    def _settle_merge(
        self,
        result: SyncResult,
        name: str,
        outcome: MergeResult | None,
        merged: bytes,
        etag: str,
    ) -> None:
        """The merge stands on both sides: its conflict, if any, is reported here and shared
        with the other devices (the losing copy kept in history), and the file recorded."""
        if outcome is not None and outcome.conflict:
            if outcome.discarded is not None:
                reason = f"lost a merge conflict: {outcome.conflict}"
                self._keep(name, outcome.discarded, reason)
            self.report_merge_conflict(result, name, outcome)
        self._no_landing_conflict(name)
        self._finish_merge(result, name, merged, etag)

    def report_merge_conflict(self, result: SyncResult, name: str, outcome: MergeResult) -> None:
        """A merge's conflict, here (status, `--json`, the primer) and, at the end of the run,
        on the remote record the other devices read."""
        assert outcome.conflict is not None
        self._report_conflict(result, name, outcome.conflict, self._shared_conflict(name, outcome))

    def _report_conflict(self, result: SyncResult, name: str, detail: str, shared: dict) -> None:
        with self._lock:
            self.state.add_conflict(name, detail, shared["id"], shared.get("marks", ()))
            result.conflicts.append(f"{name}: {detail}")
            self._published.append(shared)

    def _expect_conflict(self, name: str, merged: bytes, outcome) -> None:
        """Note the conflict a merge is about to write, by the written content's hash: a
        write whose answer is lost (a dropped connection, a retry met by 412) may still have
        landed, and the next look at the file then finds the remote equal to the local copy,
        with no merge left to report it. Replaced or cleared by the merge's own outcome."""
        if outcome is None or not outcome.conflict:
            self._no_landing_conflict(name)
            return
        expected = {
            "sha": sha256(merged),
            "detail": outcome.conflict,
            "shared": self._shared_conflict(name, outcome),
        }
        with self._lock:
            self.state.meta.setdefault(_LANDING_CONFLICTS, {})[name] = expected

    def _no_landing_conflict(self, name: str) -> dict | None:
        with self._lock:
            pending = self.state.meta.get(_LANDING_CONFLICTS, {})
            expected = pending.pop(name, None)
            if not pending:
                self.state.meta.pop(_LANDING_CONFLICTS, None)
            return expected

    def _conflict_that_landed(self, result: SyncResult, name: str, content: bytes) -> None:
        """Report the conflict of a merge whose write landed though its answer was lost."""
        pending = self._no_landing_conflict(name)
        if pending is not None and pending["sha"] == sha256(content):
            self._report_conflict(result, name, pending["detail"], pending["shared"])

    def _shared_conflict(self, name: str, outcome) -> dict:
        """The conflict as the other devices should read it (not "this device's version")."""
        from memsync.memory.merge import describe_for_others
        from memsync.sync.conflicts import entry

        return entry(name, describe_for_others(name, outcome), self.ctx.device, outcome.marks)

    def _purge_blocked(self, result: SyncResult, names: list[str]) -> bool:
        """A known file changed on the remote since this device synced it (or, on a store
        whose ETags are content hashes, any `push FILE`): `push FILE`, which does not list,
        checks that it was not because the project was purged and published again by another
        device before this one heard of it (one GET, on this rare path)."""
        from memsync.sync.tombstones import blocking_purge, purged_here

        with self._lock:
            marker = blocking_purge(self)
            if marker is None:
                return False
            self.state.meta["purged"] = marker
            # refused, not a note: the CLI exits 1 and the PostToolUse hook tells Claude
            why = f"not uploaded: {purged_here(self)}"
            result.refused.update(dict.fromkeys(names, why))
        return True

    def _forgotten_since(self, name: str) -> bool:
        """A conditional write of `name` failed (412), or `push FILE` is about to create it:
        whether the remote's tombstone list moved since this device learned of its forgets
        (one GET, on these rarer paths). Then the file is not merged here but left to the
        listing sync that follows (`_deferred`), which learns the new forgets first: a merge
        keeps an edit over a concurrent removal, so an edit holding forgotten text would
        otherwise go up before this device heard of the forget."""
        try:
            _, etag = self.store.get(TOMBSTONES)
        except NotFound:
            return False
        with self._lock:
            if etag == self.state.meta.get("tombstones_etag"):
                return False
            self._deferred.add(name)
        return True

    def _recreate_blocked(self, result: SyncResult, name: str) -> bool:
        """A synced file gone from the remote is created again from the local copy, unless
        it was forgotten on another device or the project purged (see forget.py)."""
        from memsync.sync.tombstones import recreate_blocked

        why = recreate_blocked(self, name)
        if why is not None:
            with self._lock:
                result.notes.append(why)
        return why is not None

    def _finish_merge(self, result: SyncResult, name: str, merged: bytes, etag: str) -> None:
        self._record(name, etag, merged)
        with self._lock:
            result.merged.append(name)

    def _delete_remote(self, result: SyncResult, name: str) -> None:
        rec = self.state.records[name]
        try:
            self.store.delete(name, rec.etag)
        except NotFound:
            pass
        except PreconditionFailed:
            with self._lock:
                result.notes.append(
                    f"{name} was deleted here but edited on another device; kept the edit"
                )
            self._download(result, name, None)
            return
        with self._lock:
            self.state.forget(name)
            result.deleted_remote.append(name)

    def _delete_local(self, result: SyncResult, name: str, expected_sha: str | None) -> None:
        current = self.read_local(name)
        if current is not None:
            if sha256(current) != expected_sha:
                self._upload(result, name, current, None, _mtime(self.local_path(name)))
                return
            self._keep(name, current, "deleted on another device")
            landed = localswap.remove(self.local_path(name), current)
            if landed is not None:  # written here meanwhile: the edit beats the deletion
                now = self.read_local(name)
                if now is not None and now != landed:
                    self._keep(name, landed, "written here during a sync, then again")
                mtime = _mtime(self.local_path(name))
                self._upload(result, name, now if now is not None else landed, None, mtime)
                return
        with self._lock:
            self.state.forget(name)
            result.deleted_local.append(name)

    def _keep(self, name: str, content: bytes, reason: str) -> None:
        with self._lock:
            self.state.keep(name, content, reason)


class _Run:
    """What one run knows about both sides when it starts.

    This module and the stores it drives are on every sync's path: their classes are plain
    classes and NamedTuples, not dataclasses, whose import and class building cost a whole
    no-op sync more than a tenth (docs/benchmarks.md)."""

    def __init__(
        self,
        local: LocalScan,
        local_hashes: dict[str, str],
        remote: dict[str, str],
        modified: dict[str, float],
        actions: list[Action],
    ) -> None:
        self.local, self.local_hashes, self.remote = local, local_hashes, remote
        self.modified, self.actions = modified, actions

    def mtime(self, name: str) -> float | None:
        return self.local.mtimes.get(name)


def _merge_edited(outcome: MergeResult | None, mtime: float | None) -> float | None:
    """The edit time a merge written to the remote carries: the merge's (the kept edit's,
    the later of two merged), else this copy's."""
    return outcome.edited if outcome is not None and outcome.edited else mtime


def _edit_time_here(edited: float | None) -> float | None:
    """The mtime a file memsync writes from the remote gets: the edit time the remote copy
    carries (its writer's mtime), so an untouched pulled copy is never taken for an edit made
    when it was pulled (a merge with no base, after a project move, a new remote folder or
    the records moved aside, decides by edit times). None (the remote gave none): the write's
    own time. Never later than now: a writer's clock running ahead would make a pulled copy
    look edited after every real edit here."""
    if edited is None:
        return None
    return min(edited, time.time())


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _case_renamed_here(names: list[str], local: LocalScan, records: dict[str, Record]) -> bool:
    """Whether a named file is one side of a letter-case rename made here: its old name
    recorded and gone, its new one here and not recorded. A `push FILE` of either side (the
    FileChanged hook's `unlink` of the old name) then lists, and takes both sides in one run."""
    here = local.content.hashes
    gone = {fold(n) for n in records if n not in here}
    new = {fold(n) for n in here if n not in records}
    return any(fold(n) in gone and fold(n) in new for n in names)


def _base_by_hash(
    base: bytes | None, rec: Record | None, ours: bytes, theirs: bytes
) -> bytes | None:
    """`base`, or for a record without its content (after a purge, see forget.republish):
    the side whose content it names did not change, so it is the base."""
    if base is None and rec is not None:
        for side in (theirs, ours):
            if sha256(side) == rec.sha:
                return side
    return base


def _renames_in_two_steps(actions: list[Action]) -> list[list[Action]]:
    """The deletions whose name folds like another action's (a rename that changed only
    letter case: `User_Pat.md` to `user_pat.md`) go first, apart: on macOS and Windows both
    names are one file, which the new name's write must not meet before the old one is gone."""
    folds: dict[str, int] = {}
    for action in actions:
        folds[fold(action.name)] = folds.get(fold(action.name), 0) + 1
    deleting = (Kind.DELETE_LOCAL, Kind.DELETE_REMOTE)
    first = [a for a in actions if a.kind in deleting and folds[fold(a.name)] > 1]
    if not first:
        return [actions]
    return [first, [a for a in actions if a not in first]]


def refuse_colliding_names(
    local: LocalScan, records: dict[str, Record], remote: dict[str, str] | None = None
) -> dict[str, str]:
    """Refuse (leave here, report) each new local name that macOS or Windows could not keep
    apart from another local, remote or recorded one (memsync/memory/names.py); what it refused.
    `remote`: the listing's name -> ETag (None: trust the records). A recorded name deleted
    here and unchanged or gone on the remote is not in the way: it goes in the same run (a
    rename that changed only letter case)."""
    listed = remote if remote is not None else {n: r.etag for n, r in records.items()}
    leaving = {
        n
        for n, rec in records.items()
        if n not in local.content.hashes
        and n not in local.refused
        and listed.get(n) in (rec.etag, None)
    }
    known = (set(records) | set(listed)) - leaving
    new = [n for n in local.content.hashes if n not in known and n not in local.refused]
    refused = collisions(new, known)
    local.refused.update(refused)
    return refused


def _without_record(name: str, outcome: MergeResult, ours: bytes, theirs: bytes) -> MergeResult:
    """A merge on a device that synced before but holds no record of this file (records.json
    moved aside, as memsync advises for a damaged one): with no base, a line one side removed
    reads as a line the other side added, and the union brings it back. Unless the merge
    already reports a conflict, it is reported as one, so the user can remove it again.
    (The copies differ: equal ones are recorded without a merge.)"""
    if outcome.conflict:
        return outcome
    import dataclasses

    return dataclasses.replace(
        outcome,
        conflict=(
            f"merged with no record here of the copy last synced (records.json moved aside "
            f"or lost), so every line either copy of {name} had was kept: a line another "
            "device removed may be back; remove it again, then `memsync resolve`"
        ),
    )


def _merge_copies(
    name: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    mtime: float | None,
    theirs_mtime: float | None,
) -> MergeResult:
    """The merge of two copies, decided by memory/merge.py from the file's type (imported
    only when a file is merged: no-op syncs never need it)."""
    from memsync.memory.merge import merge

    return merge(name, base, ours, theirs, ours_mtime=mtime, theirs_mtime=theirs_mtime)


def _display_remote(ctx: Context) -> str:
    from memsync.sync.project import display_remote  # only for these messages

    return display_remote(ctx)


def _restored_note(where: Path, gone: str, count: int) -> str:
    return f"the memory dir {where} was {gone}; restoring the {count} file(s) synced from it"
