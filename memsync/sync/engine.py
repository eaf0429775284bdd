"""The sync engine: one memory dir, one remote prefix. `Engine.run` holds the state lock and
takes a run through its stages: look here and plan (prepare.py, scan.py, planner.py), take in
what the remote says (tombstones, conflicts, case renames), carry the plan out (execute.py,
merging.py), keep MEMORY.md true (index.py), settle the queue and the records. The engine
keeps what every stage shares: the state, the store, the memory dir's files and this run's
bookkeeping. Nothing here prints or exits; results are returned (result.py)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.context.config import Context, largest_file
from memsync.context.identity import MANIFEST, MOVED, pin, to_note, unnamed_message
from memsync.memory.index_links import INDEX
from memsync.stores import open_store
from memsync.stores.base import Entry, Store, check_key, nested_projects
from memsync.sync import execute, index, localswap, merging, planner, prepare, scan
from memsync.sync.durability import Durability, recover_landing
from memsync.sync.mode import Mode
from memsync.sync.remote_keys import CONFLICTS, PURGED, TOMBSTONES
from memsync.sync.result import SYNC_OFF, SyncResult
from memsync.sync.scan import LocalScan, LostDir
from memsync.sync.state import (
    Record,
    State,
    pending_forgets_file,
)
from memsync.util.errors import (
    ConfigError,
    NotFound,
    StateError,
    StoreError,
    Unreachable,
    UnsafeKey,
    UserError,
)
from memsync.util.fsutil import (
    atomic_write,
    file_lock,
    private_dir,
    read_if_there,
    sha256,
)

if TYPE_CHECKING:
    from memsync.memory.merge import MergeResult
    from memsync.sync.transfers import GetAhead


class Engine:
    """Sync one memory dir with one remote prefix."""

    def __init__(self, ctx: Context, store: Store | None = None) -> None:
        if not ctx.project:
            raise ConfigError(unnamed_message(ctx.memory_dir))
        self.ctx = ctx
        self._store = store
        self.max_bytes = largest_file(ctx)
        self._lock = threading.Lock()
        self.durability = Durability(ctx.memory_dir)  # this run's writes not yet flushed
        self._published: list[dict] = []  # this run's conflicts, for the remote record
        self.allow: dict[str, set[str]] = {}  # this run's `push --allow KIND FILE`
        # a missing remote is made only by a command the user typed, which names it (a typo
        # in its name shows); a hook refuses instead and tells the session to run push
        self.creates_remote = True
        self.came_back: set[str] = set()  # this run's files an edit brought back
        self.index_before: str | None = None  # MEMORY.md before the run, when one came back
        self.index_read = False
        # the files whose conditional write failed (or, for `push FILE`, that it was about to
        # create) while the remote's tombstone list moved: a listing sync of them follows
        self._records_run = False
        self._deferred: set[str] = set()
        # the records as this run found them: the synced copies a roll-up base is made of
        # (`merging.rollup_base`), unchanged by what the run records meanwhile
        self.records_at_start: dict[str, Record] = {}
        # a lost memory dir this run restores: where, how it was found, the files it expects
        self._restoring: LostDir | None = None
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
            self.durability.wrote_in(path.parent)

    def replace_local(
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
        self.durability.wrote_in(path.parent)
        return landed

    def _make_durable(self) -> None:
        """This run's writes made durable before the records claim them (durability.py)."""
        self.durability.make_durable(self.local_path, self.state.meta)

    def scan_local(self, allow: dict[str, set[str]] | None = None) -> LocalScan:
        """The memory dir's scan (scan.py)."""
        return scan.scan(self.ctx.memory_dir, self.state, self.max_bytes, allow)

    # --- running a sync -------------------------------------------------------------------

    def run(
        self,
        mode: Mode | str = Mode.SYNC,
        paths: Iterable[str] | None = None,
        *,
        force: bool = False,
        allow: dict[str, set[str]] | None = None,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
        cutoff: float | None = None,
    ) -> SyncResult:
        """mode: Mode.SYNC (both ways), Mode.PUSH (local → remote) or Mode.PULL (remote →
        local); its value ("sync", "push", "pull") is taken too.

        Pending (queued) pushes are always drained first. With `paths`, a push trusts the
        last-synced records instead of listing, so pushing one known file is one request.
        No action starts after `deadline`, and no request outlives `cutoff` (both
        time.monotonic()): a request still running then fails as unreachable, so what it
        was for is queued or left for the next sync.
        """
        mode = Mode(mode)  # a ValueError for any other
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
                if self._restoring is not None:
                    lost, self._restoring = self._restoring, None
                    scan.recount_restored(result, lost)
                again = set(result.forgotten) & {*result.downloaded, *result.merged}
                if again:  # the forgotten copy went; a file made since under its name came
                    result.notes.append(
                        f"{', '.join(sorted(again))}: the copy forgotten here was replaced by "
                        "a new file of that name, written after the forget"
                    )
            except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM (see entry.py)
                stop.done = result  # type: ignore[attr-defined]  # what it did, for the CLI
                # `status` says when, instead of "never" after a first run that did push
                self.state.meta.last_interrupted = time.time()
                raise
            finally:
                self._make_durable()
                if self.state.meta.quarantined:
                    from memsync.sync.tombstones import quarantine_notices

                    result.quarantined = quarantine_notices(self)
                self.state.meta.last_attempt = time.time()
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
        self, listing: dict[str, Entry], local: LocalScan, result: SyncResult, mode: Mode
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
                self.state.meta.purged = marker
                refusal = self._purged(result, listing, local)
                if not self.state.records:
                    self.state.meta.purged = None
                raise refusal
        if MOVED in listing:
            from memsync.sync.project import check_moved

            check_moved(self.ctx, self.store)
        if nested_projects(listing):  # one project's folder holds one project
            from memsync.sync.project import refuse_nested

            refuse_nested(self.ctx, listing)
        manifest = listing.get(MANIFEST)
        meta = self.state.meta
        if (
            manifest is None
            or manifest.etag != meta.manifest_etag
            or (meta.manifest_unstamped and self.ctx.fingerprint)
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
        unchanged = entry is None or entry.etag == self.state.meta.tombstones_etag
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
        mode: Mode,
        names: list[str] | None,
        force: bool,
        allow: dict[str, set[str]],
        deadline: float | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        """Look here, plan against the remote (or, for `push FILE`, against the records),
        refuse a mass deletion, carry the plan out, then settle the queue and the records."""
        if self.state.meta.purged:
            raise self._purged(result, None, None)
        self._published = []  # this run's conflicts, from the take-in (case renames) on
        self.allow = allow
        recover_landing(self.state, self.ctx.memory_dir, self.local_path, self.keep)
        local = prepare.look_here(self, result, mode, names, allow)
        pending = self.state.pending  # read after a lost dir's restore, which empties it
        # `push FILE` of files synced before trusts the records: one conditional PUT each. A
        # new file (or a device that never synced) lists first, one request as the check it
        # replaces: what the remote says before a first upload (a purge or moved mark, the
        # manifest, forgotten content, a name differing only by case) is taken in
        self._records_run = (
            mode is Mode.PUSH
            and not force  # `push --force FILE` reads the remote copy it may replace
            and names is not None
            and bool(self.state.records)
            and all(n in self.state.records for n in [*names, *pending])
            and not scan.case_renamed_here(names, local, self.state.records)
        )
        if (
            self._records_run
            and self.store.content_etags
            and self._purge_blocked(result, [*(names or []), *pending])
        ):
            # ETags that are content hashes: a purge and another device's republish leave the
            # copies this device synced byte for byte, so their ETags too, and the conditional
            # write of an edit would succeed; the mark is asked for first (a folder remote:
            # one local read)
            self._records_run = False
            return
        if self._records_run:
            run = prepare.from_records(self, result, local, names or [], pending)
        else:
            planned = prepare.from_listing(self, result, mode, local, names, pending, force)
            if planned is None:
                return
            run = planned
        known = set(run.local_hashes) | set(run.remote)
        singly = self.state.meta.deleted_singly
        planner.refuse_mass_deletion(mode, run.actions, known, self.state.records, singly, force)
        self.records_at_start = dict(self.state.records)
        execute.carry_out(self, result, run, deadline, progress)
        prepare.count_singly(self, result, mode, names, force)
        if self.came_back or self.state.meta.index_comebacks:
            settle = names is None and mode is not Mode.PUSH and not result.offline
            index.comebacks(self, result, self.index_before, settle)
        if names is None and (result.deleted_local or result.deleted_remote):
            index.departures(self, result, run)
        if self.state.meta.pruned:
            index.pruned_back(self, result)
        execute.settle(self, result, run, pending, full=names is None)
        self._records_run = False
        if self._deferred and not result.offline:
            # another device forgot something since this device last listed: a listing
            # sync of those files takes the forget in first (sets aside an edit of what
            # was forgotten) and only then merges and uploads
            deferred, self._deferred = sorted(self._deferred), set()
            self._run_locked(result, Mode.SYNC, deferred, force, allow, deadline, progress)

    def _purged(
        self, result: SyncResult, listing: dict[str, Entry] | None, local: LocalScan | None
    ) -> Exception:
        """The refusal of a purged project, after the forgets recorded on its remote since
        this device last read them are applied here: a purge keeps the forget records, and
        `forget` on a purged device records one, so a device that syncs nothing more there
        (it purged to leave that remote) still forgets, and carries the forget to the other
        remotes it syncs. That deletes here and uploads nothing. A forget of this device's
        that waited for the remote is finished there the same way (its record goes up, no
        content), so no device publishing again brings its files back."""
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

    def index_text(self) -> str | None:
        try:
            data = self.read_local(INDEX)
        except (OSError, UnsafeKey):
            return None
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def came_back_here(self, name: str) -> None:
        """`name`, synced before and deleted on one side, is back: an edit beat the deletion."""
        with self._lock:
            if name != INDEX:
                self.came_back.add(name)
                if not self.index_read:
                    self.index_read = True
                    self.index_before = self.index_text()

    def memory_dir_lost(self, local: LocalScan) -> bool:
        """Whether the memory dir is lost (scan.memory_dir_lost): never a request to delete
        every file everywhere."""
        forgetting: set[str] = set()
        if self.forgets_pending():
            from memsync.sync.tombstones import pending_jobs

            forgetting = {n for job in pending_jobs(self) for n in job.files}
        return scan.memory_dir_lost(local, self.state, self.index_text, forgetting)

    def _receive_conflicts(self, result: SyncResult, listing) -> None:
        """Conflicts other devices recorded while merging (maybe with our edit) become ours."""
        entry = listing.get(CONFLICTS)
        if entry is None or entry.etag == self.state.meta.conflicts_etag:
            return  # the usual case: no import, no request
        from memsync.sync.conflicts import receive

        for item in receive(self.store, self.state.meta, bool(self.state.records)):
            result.conflicts.append(f"{item['file']}: {item['detail']}")

    def share_conflict(
        self, name: str, detail: str, for_others: str, marks: Sequence[str] = ()
    ) -> None:
        """A conflict found outside a merge (a compaction's): recorded here, and on the remote
        record with the next run that reaches it, so every device's status and primer say it."""
        from memsync.sync.conflicts import entry, made_here

        shared = entry(name, for_others, self.ctx.device, marks)
        with self._lock:
            self.state.conflicts.add(name, detail, shared["id"], marks)
            made_here(self.state.meta, shared)
            queued = self.state.meta.unpublished_conflicts
            self.state.meta.unpublished_conflicts = [*queued, shared]

    def publish_conflicts(self, result: SyncResult) -> None:
        queued = list(self.state.meta.unpublished_conflicts)
        entries = [*queued, *self._published]
        if result.offline or not (entries or self.state.meta.pending_resolutions):
            return
        from memsync.sync.conflicts import publish, publish_resolutions

        try:
            if entries:
                publish(self.store, entries)
                self.state.meta.unpublished_conflicts = []
            publish_resolutions(self.store, self.state.meta)
        except Unreachable:
            pass  # recorded here; the other device learns of it from its own merge or status
        except StoreError as exc:
            result.notes.append(f"could not record the conflicts on the remote ({exc})")
        self._published = []

    # --- executing actions ----------------------------------------------------------------

    def record(self, name: str, etag: str, content: bytes) -> None:
        with self._lock:
            self.state.set_synced(name, etag, content)

    def _synced_copy(self, rec: Record | None) -> bytes | None:
        """The content `rec` names (the base)."""
        return self.state.content(rec.sha) if rec is not None else None

    def report_merge_conflict(self, result: SyncResult, name: str, outcome: MergeResult) -> None:
        """A merge's conflict, here (status, `--json`, the primer) and, at the end of the run,
        on the remote record the other devices read."""
        assert outcome.conflict is not None
        shared = merging.shared_conflict(self, name, outcome)
        self.report_conflict(result, name, outcome.conflict, shared)

    def report_conflict(self, result: SyncResult, name: str, detail: str, shared: dict) -> None:
        from memsync.sync.conflicts import made_here

        with self._lock:
            self.state.conflicts.add(name, detail, shared["id"], shared.get("marks", ()))
            made_here(self.state.meta, shared)
            result.conflicts.append(f"{name}: {detail}")
            self._published.append(shared)

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
            self.state.meta.purged = marker
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
            if etag == self.state.meta.tombstones_etag:
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

    def keep(self, name: str, content: bytes, reason: str) -> None:
        with self._lock:
            self.state.keep(name, content, reason)


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
