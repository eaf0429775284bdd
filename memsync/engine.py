"""The sync executor: runs the planner's actions against a store, merging and retrying when
a conditional write loses a race. Nothing here prints or exits; results are returned."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from memsync import planner
from memsync.config import Context
from memsync.errors import (
    AlreadyExists,
    GuardError,
    KeptLocal,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    StoreError,
    Unreachable,
    UnsafeKey,
    UserError,
)
from memsync.fsutil import (
    atomic_write,
    file_lock,
    fsync_dir,
    fsync_file,
    private_dir,
    remove_stale_temp,
    sha256,
    sweep_temp_files,
    sync_filesystem,
)
from memsync.gate import check_inbound, check_outbound
from memsync.localfiles import LocalFiles, settled, stat_key
from memsync.names import collisions, local_key
from memsync.planner import Action, Kind
from memsync.state import State
from memsync.stores import Stats, Store, check_key, open_store

MAX_ATTEMPTS = 8
# From this many new files in one run (a fresh pull), flush once at the end instead of an
# fsync per file; their names are saved first (see Engine._land).
LAND_WITHOUT_FSYNC_AT = 32
TOMBSTONES = "_memsync/forgotten.json"  # remote record of forgotten files (names, no content)
CONFLICTS = "_memsync/conflicts.json"  # remote record of merge conflicts (memsync/conflicts.py)
PURGED = "_memsync/purged.json"  # on the remote after `memsync purge` (see forget.py)
_TEMP_SUFFIXES = ("~", ".swp", ".swo", ".swx", ".tmp", ".part", ".crdownload")


def is_ignored(relpath: str) -> bool:
    """Files memsync never syncs: Claude Code's team/ folder, hidden and editor temp files."""
    parts = relpath.split("/")
    if parts[0] in ("team", TOMBSTONES.split("/")[0]):
        return True
    name = parts[-1]
    return (
        any(p.startswith(".") for p in parts)
        or name.endswith(_TEMP_SUFFIXES)
        or (name.startswith("#") and name.endswith("#"))
    )


class SyncResult:
    """What one pull, push or sync did, by file name (a plain class: see _Run)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.uploaded: list[str] = []
        self.downloaded: list[str] = []
        self.merged: list[str] = []
        self.deleted_remote: list[str] = []
        self.deleted_local: list[str] = []
        self.conflicts: list[str] = []
        self.refused: dict[str, str] = {}
        self.kept_local: dict[str, str] = {}  # marked to stay here: skipped, not an error
        self.refused_remote: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.notes: list[str] = []
        self.queued: list[str] = []
        self.skipped: list[str] = []  # not started before the deadline
        self.quarantined: list[str] = []  # forgotten elsewhere, edited here: what to do
        self.offline: str | None = None
        self.disabled = False
        self.stats = Stats()
        self.seconds = 0.0

    @property
    def changes(self) -> int:
        return sum(
            len(x)
            for x in (
                self.uploaded,
                self.downloaded,
                self.merged,
                self.deleted_remote,
                self.deleted_local,
            )
        )


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
        self.ctx = ctx
        self._store = store
        self.max_bytes = int(ctx.setting("max_file_bytes"))
        self._lock = threading.Lock()
        self._unsynced_dirs: set[Path] = set()  # written to; fsynced once before the records
        self._landing: set[str] = set()  # new files written without fsync; flushed at the end
        self._published: list[dict] = []  # this run's conflicts, for the remote record
        self.state = State(ctx.state_dir, int(ctx.setting("history_versions")))

    @contextlib.contextmanager
    def locked(self, timeout: float = 120) -> Iterator[None]:
        """Hold this project's state lock (one memsync process at a time) with fresh state."""
        with file_lock(self.ctx.state_dir / "lock", timeout=timeout):
            self.state = State(self.ctx.state_dir, self.state.history_versions)
            yield

    @property
    def store(self) -> Store:
        if self._store is None:
            if self.ctx.embedded_remote:  # ours to create; a configured folder may be unmounted
                private_dir(self.ctx.home / "remote")
            self._store = open_store(self.ctx.remote, self.ctx.project)
        return self._store

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
        return _read(self.local_path(name))

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
            with self._lock:
                self._unsynced_dirs.add(path.parent)

    def _make_durable(self) -> None:
        """Make this run's writes durable before the records claim them: the landed files
        (one syncfs, else an fsync each) and the renames (one fsync per directory)."""
        with self._lock:
            dirs, self._unsynced_dirs = self._unsynced_dirs, set()
            landed, self._landing = self._landing, set()
        if landed and not sync_filesystem(self.ctx.memory_dir):
            for name in sorted(landed):
                fsync_file(self.local_path(name))
        for folder in sorted(dirs):
            fsync_dir(folder)
        if landed:
            self.state.meta.pop("landing", None)  # saved with the records, right after this

    def _land(self, actions: list[Action], local_hashes: dict[str, str]) -> None:
        """Many new files are written without an fsync each and flushed once at the end. Their
        names are saved (fsynced) first: after a power cut before that flush, the next run
        knows which files may be torn (`_recover_landing`)."""
        names = sorted(
            a.name for a in actions if a.kind is Kind.DOWNLOAD and a.name not in local_hashes
        )
        if len(names) >= LAND_WITHOUT_FSYNC_AT:
            self.state.meta["landing"] = names
            self.state.save_meta()
            self._landing = set(names)

    def _recover_landing(self) -> None:
        """Files an interrupted run was landing may be torn (renamed into place, never
        flushed). Each is kept in history and fetched again, never taken for a local edit."""
        for name in self.state.meta.pop("landing", None) or []:
            try:
                path = self.local_path(name)
            except UnsafeKey:
                continue  # never a name this run could have landed
            data = _read(path)
            if data is not None:
                self._keep(name, data, "left unflushed by an interrupted pull; fetched again")
                path.unlink(missing_ok=True)
            self.state.forget(name)

    def scan_local(self, allow: dict[str, set[str]] | None = None) -> LocalScan:
        """Hash every memory file, reading only those whose stat changed since the last scan
        (see localfiles.py). Files changed since their last sync are checked before they may
        leave the machine; refused ones are reported and left untouched."""
        root = self.ctx.memory_dir
        scan = LocalScan(LocalFiles(root), {}, {})
        if not root.is_dir():
            return scan
        resolved_root = root.resolve()
        seen, fresh = self.state.seen, {}
        now_ns = time.time_ns()
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = Path(dirpath).relative_to(root).as_posix()
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not is_ignored(d if rel_dir == "." else f"{rel_dir}/{d}")
                and not (Path(dirpath) / d).is_symlink()
            )
            for fname in sorted(filenames):
                key = local_key(dirpath, fname)  # NFC where the file system allows
                name = key if rel_dir == "." else f"{rel_dir}/{key}"
                if remove_stale_temp(dirpath, fname):
                    scan.swept += 1
                    continue
                if is_ignored(name):
                    continue
                path = os.path.join(dirpath, fname)
                try:
                    st = os.lstat(path)
                    if stat.S_ISLNK(st.st_mode):
                        if resolved_root not in Path(path).resolve().parents:
                            reason = "it is a symbolic link pointing outside the memory dir"
                            scan.refused[name] = reason
                            continue
                        st = os.stat(path)
                    scan.mtimes[name] = st.st_mtime
                    key = list(stat_key(st))
                    rec = self.state.records.get(name)
                    cached = seen.get(name)
                    if cached == [*key, rec and rec.sha]:
                        # untouched since a read that found what was last synced
                        scan.content.add(name, rec.sha)
                        fresh[name] = cached
                        continue
                    data = _read_file(path)
                except OSError as exc:
                    scan.refused[name] = f"it cannot be read ({exc.strerror})"
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
                    fresh[name] = [*key, digest]
                scan.content.add(name, digest, data)
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
    ) -> SyncResult:
        """mode: "sync" (both ways), "push" (local → remote) or "pull" (remote → local).

        Pending (queued) pushes are always drained first. With `paths`, a push trusts the
        last-synced records instead of listing, so pushing one known file is one request.
        """
        if mode not in ("sync", "push", "pull"):
            raise ValueError(mode)
        result = SyncResult(mode)
        if not self.ctx.sync_enabled:
            result.disabled = True
            return result
        started = time.monotonic()
        names = None if paths is None else [self.name_of(p) for p in paths]
        with self.locked():
            try:
                self._run_locked(result, mode, names, force, allow or {}, deadline, progress)
            finally:
                self._make_durable()
                if self.state.meta.get("quarantined"):
                    from memsync.forget import quarantine_notices

                    result.quarantined = quarantine_notices(self)
                self.state.meta["last_attempt"] = time.time()
                self.state.save()
        result.stats = self.store.stats
        result.seconds = time.monotonic() - started
        return result

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
        if self.state.meta.get("purged"):
            from memsync.forget import purged_here

            raise purged_here(self)
        self._recover_landing()
        local = self.scan_local(allow)
        records = self.state.records
        # the state dir only on full runs: `push FILE` after each memory write stays lean
        swept = local.swept + (sweep_temp_files(self.ctx.state_dir) if names is None else 0)
        if swept:
            result.notes.append(f"Removed {swept} temp file(s) left by an interrupted write.")
        result.refused, result.kept_local = local.split_refused()
        pending = self.state.pending
        local_hashes = dict(local.content.hashes)

        if mode == "push" and names is not None:
            # Trust the records: the happy path is one conditional request a file.
            result.refused.update(_refuse_colliding_names(local, records))
            remote = {n: r.etag for n, r in records.items()}
            entries: dict[str, float] = {}
            only = set(names) | set(pending)
            result.refused = {n: r for n, r in result.refused.items() if n in only}
            result.kept_local = {n: r for n, r in result.kept_local.items() if n in only}
            actions = planner.plan(
                local_hashes,
                remote,
                records,
                kinds=planner.PUSH_KINDS,
                only=only,
                skip=local.refused,
            )
        else:
            listing = self._list(result, mode, local_hashes, records, pending)
            if listing is None:
                return
            if PURGED in listing:
                from memsync.forget import purged_here, remote_purge_marker

                # remembered: this device stays out until it is told to publish again
                self.state.meta["purged"] = remote_purge_marker(self) or {"at": time.time()}
                raise purged_here(self)
            if self.state.meta.get("forgetting"):
                from memsync.forget import finish_pending

                finish_pending(self, listing)
            self._apply_tombstones(listing, local)
            self._receive_conflicts(result, listing)
            local_hashes = dict(local.content.hashes)
            remote = {}
            entries = {}
            for key, entry in listing.items():
                try:
                    check_key(key)
                except UnsafeKey as exc:
                    result.refused_remote[key] = str(exc)
                    continue
                if is_ignored(key):
                    continue
                remote[key] = entry.etag
                entries[key] = entry.modified
            result.refused.update(_refuse_colliding_names(local, records, remote))
            skip = set(local.refused) | set(result.refused_remote)
            if mode == "sync":
                actions = planner.plan(local_hashes, remote, records, only=names, skip=skip)
            elif mode == "push":
                actions = planner.plan(
                    local_hashes, remote, records, kinds=planner.PUSH_KINDS, skip=skip
                )
            else:
                actions = planner.plan(
                    local_hashes, remote, records, kinds=planner.PULL_KINDS, only=names, skip=skip
                )
                drain = planner.plan(
                    local_hashes,
                    remote,
                    records,
                    kinds=planner.PUSH_KINDS,
                    only=pending,
                    skip=skip,
                )
                seen = {a.name for a in actions}
                actions += [a for a in drain if a.name not in seen]

        total = len(set(local_hashes) | set(remote) | set(records))
        if not force and planner.mass_deletion(actions, total):
            count = len(planner.deletions(actions))
            raise GuardError(
                f"this {mode} would delete {count} of {total} memory files; "
                "if that is what you want, run it again with --force"
            )

        ctx = _Run(local, local_hashes, remote, entries)
        self._land(actions, local_hashes)
        self._published = []
        self._execute(result, actions, ctx, deadline, progress)
        self._publish_conflicts(result)

        done = set(result.uploaded + result.merged + result.deleted_remote)
        self.state.unqueue([n for n in pending if n in done or n not in local_hashes])
        if result.offline:
            queued = [a.name for a in actions if a.kind in planner.PUSH_KINDS]
            queued = [n for n in queued if n not in done]
            self.state.queue(queued)
            result.queued = self.state.pending
        self.state.set_refused(local.split_refused()[0])
        if not result.offline and not result.errors and result.skipped == []:
            self.state.meta["last_sync"] = time.time()

    def _list(self, result, mode, local_hashes, records, pending):  # noqa: ANN001, ANN202
        try:
            return self.store.list()
        except NotFound:
            if mode == "pull":
                raise UserError(
                    f"the remote {self._display_remote()} does not exist yet; "
                    "run `memsync push` to create it"
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

    def _apply_tombstones(self, listing, local: LocalScan) -> None:  # noqa: ANN001
        """Files forgotten on another device are removed here too, history included, so an
        edited copy on this device cannot bring them back (an unsynced edit is set aside in
        quarantine). Each tombstone is applied once; see forget.py."""
        entry = listing.get(TOMBSTONES)
        if entry is None or entry.etag == self.state.meta.get("tombstones_etag"):
            return
        from memsync.forget import apply_tombstones

        try:
            data, etag = self.store.get(TOMBSTONES)
        except NotFound:
            return
        apply_tombstones(self, data, listing, local)
        self.state.meta["tombstones_etag"] = etag

    def _receive_conflicts(self, result: SyncResult, listing) -> None:  # noqa: ANN001
        """Conflicts other devices recorded while merging (maybe with our edit) become ours."""
        entry = listing.get(CONFLICTS)
        if entry is None or entry.etag == self.state.meta.get("conflicts_etag"):
            return  # the usual case: no import, no request
        from memsync.conflicts import receive

        for item in receive(self.store, self.state, self.ctx.device):
            result.conflicts.append(f"{item['file']}: {item['detail']}")

    def _publish_conflicts(self, result: SyncResult) -> None:
        if not self._published or result.offline:
            return
        from memsync.conflicts import publish

        try:
            publish(self.store, self._published)
        except Unreachable:
            pass  # recorded here; the other device learns of it from its own merge or status
        except StoreError as exc:
            result.notes.append(f"could not record the conflicts on the remote ({exc})")
        self._published = []

    def _go_offline(self, result: SyncResult, reason: str, local_hashes, records) -> None:  # noqa: ANN001
        result.offline = reason
        changed = [n for n, h in local_hashes.items() if n not in records or records[n].sha != h]
        deleted = [n for n in records if n not in local_hashes]
        self.state.queue(changed + deleted)
        result.queued = self.state.pending

    def _display_remote(self) -> str:
        from memsync.config import strip_query

        return f"{strip_query(self.ctx.remote)} (project {self.ctx.project})"

    # --- executing actions ----------------------------------------------------------------

    def _execute(self, result, actions, run, deadline, progress) -> None:  # noqa: ANN001
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
            except (StoreError, UserError, OSError) as exc:
                with self._lock:
                    result.errors[action.name] = str(exc)
            finally:
                with self._lock:
                    done += 1
                    if progress is not None:
                        progress(done, total)

        workers = min(int(self.ctx.setting("concurrency")), len(actions))
        if workers <= 1:
            for action in actions:
                one(action)
        else:
            from concurrent.futures import ThreadPoolExecutor  # not needed by a no-op sync

            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(one, actions))
        for attr in ("uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"):
            getattr(result, attr).sort()

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
                try:
                    etag = self.store.create(name, ours, mtime)
                except NotFound:  # a push that trusted its records found no container
                    self.store.ensure()
                    etag = self.store.create(name, ours, mtime)
            else:
                etag = self.store.replace(name, ours, remote_etag, mtime)
        except PreconditionFailed:
            self._merge(result, name, ours, mtime)  # `push FILE` too: the edit times decide
            return
        self._record(name, etag, ours)
        with self._lock:
            result.uploaded.append(name)

    def _download(self, result: SyncResult, name: str, expected_sha: str | None) -> None:
        try:
            theirs, etag = self.store.get(name)
        except NotFound:
            return  # deleted meanwhile; the next sync sees it
        check_inbound(name, theirs, self.max_bytes)
        path = self.local_path(name)
        current = _read(path)
        if current is not None and sha256(current) != expected_sha:
            self._merge(result, name, current, _mtime(path))  # edited here while we were busy
            return
        if current != theirs:
            if current is not None:
                self._keep(name, current, "replaced by a newer version from the remote")
            landing = name in self._landing
            self._write(path, theirs, sync_dir=False, new=current is None, sync=not landing)
            with self._lock:
                result.downloaded.append(name)
        self._record(name, etag, theirs)

    def _fetch(self, name: str) -> tuple[bytes, str, float | None]:
        """The remote copy with its edit time (None from a store that keeps none)."""
        fetch = getattr(self.store, "fetch", None)
        if fetch is None:
            data, etag = self.store.get(name)
            return data, etag, None
        return fetch(name)

    def _merge(self, result: SyncResult, name: str, ours: bytes, mtime: float | None) -> None:
        """Merge `ours` (edited here at `mtime`) with the remote copy, whose edit time comes
        with it (`Store.fetch`): never an upload time."""
        from memsync.merge import merge

        base = self.state.base(name)
        for _ in range(MAX_ATTEMPTS):
            try:
                theirs, etag, theirs_mtime = self._fetch(name)
            except NotFound:
                if name in self.state.records and self._recreate_blocked(result, name):
                    return
                try:
                    etag = self.store.create(name, ours, mtime)
                except AlreadyExists:
                    continue
                self._finish_merge(result, name, ours, ours, etag, None)
                return
            try:
                check_inbound(name, theirs, self.max_bytes)
            except RefusedFile as exc:
                # A corrupt remote copy never replaces a good local one: overwrite it.
                with self._lock:
                    result.notes.append(
                        f"{name}: the remote copy was refused ({exc.reason}); "
                        "replaced it with the local version"
                    )
                theirs_ok = False
            else:
                theirs_ok = True
            if theirs == ours:
                self._finish_merge(result, name, ours, ours, etag, None)
                return
            if theirs_ok:
                outcome = merge(
                    name, base, ours, theirs, ours_mtime=mtime, theirs_mtime=theirs_mtime
                )
                merged = outcome.content
            else:
                outcome, merged = None, ours
            if merged != theirs:
                edited = outcome.edited if outcome is not None and outcome.edited else mtime
                try:
                    etag = self.store.replace(name, merged, etag, edited)
                except PreconditionFailed:
                    continue
            current = self.read_local(name)
            if current is not None and current != ours:
                ours, mtime = current, _mtime(self.local_path(name))  # edited here meanwhile
                continue
            if outcome is not None and outcome.conflict:
                if outcome.discarded is not None:
                    reason = f"lost a merge conflict: {outcome.conflict}"
                    self._keep(name, outcome.discarded, reason)
                with self._lock:
                    self.state.add_conflict(name, outcome.conflict)
                    result.conflicts.append(f"{name}: {outcome.conflict}")
                    self._published.append(self._shared_conflict(name, outcome))
            self._finish_merge(result, name, ours, merged, etag, current)
            return
        with self._lock:
            result.errors[name] = (
                f"{name} kept changing on the remote; gave up after {MAX_ATTEMPTS} merge attempts "
                "(run sync again)"
            )

    def _shared_conflict(self, name: str, outcome) -> dict:  # noqa: ANN001
        """The conflict as the other devices should read it (not "this device's version")."""
        from memsync.conflicts import entry
        from memsync.merge import describe_for_others

        return entry(name, describe_for_others(name, outcome), self.ctx.device)

    def _recreate_blocked(self, result: SyncResult, name: str) -> bool:
        """A synced file gone from the remote is created again from the local copy, unless
        it was forgotten on another device or the project purged (see forget.py)."""
        from memsync.forget import recreate_blocked

        why = recreate_blocked(self, name)
        if why is not None:
            with self._lock:
                result.notes.append(why)
        return why is not None

    def _finish_merge(
        self,
        result: SyncResult,
        name: str,
        ours: bytes,
        merged: bytes,
        etag: str,
        current: bytes | None,
    ) -> None:
        if merged != ours or current is None:
            if current is not None:
                self._keep(name, current, "replaced by a merge with the remote version")
            self.write_local(name, merged, sync_dir=False)
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
            self.local_path(name).unlink()
        with self._lock:
            self.state.forget(name)
            result.deleted_local.append(name)

    def _keep(self, name: str, content: bytes, reason: str) -> None:
        with self._lock:
            self.state.keep(name, content, reason)


class _Run:
    """What one run knows about both sides when it starts.

    This module and the stores it drives are on every sync's path: their classes are plain
    classes and NamedTuples, not dataclasses, which cost a process ~25 ms to import and build
    (docs/benchmarks.md)."""

    def __init__(
        self,
        local: LocalScan,
        local_hashes: dict[str, str],
        remote: dict[str, str],
        modified: dict[str, float],
    ) -> None:
        self.local, self.local_hashes, self.remote, self.modified = (
            local,
            local_hashes,
            remote,
            modified,
        )

    def mtime(self, name: str) -> float | None:
        return self.local.mtimes.get(name)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _refuse_colliding_names(
    local: LocalScan, records: Iterable[str], remote: Iterable[str] = ()
) -> dict[str, str]:
    """Refuse (leave here, report) each new local name that macOS or Windows could not keep
    apart from another local, remote or recorded one (memsync/names.py); what it refused."""
    known = set(records) | set(remote)
    new = [n for n in local.content.hashes if n not in known and n not in local.refused]
    refused = collisions(new, known)
    local.refused.update(refused)
    return refused


def _read_file(path: str | Path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None if it does not exist."""
    try:
        return _read_file(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
