"""When a run's local writes become durable, and what a run cut short by a power cut may have
left torn. Files and renames are flushed once, before the records claim them (an fsync per
directory; a pull of many new files lands them without an fsync each and flushes the file
system once); the names of files landed that way are saved first, so the next run can tell
which of them may be torn (`recover_landing`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from memsync.context.boot import boot_id, boot_time
from memsync.sync.state import State
from memsync.util.errors import UnsafeKey
from memsync.util.fsutil import fsync_dir, fsync_file, read_if_there, sync_filesystem

# From this many new files in one run (a fresh pull), flush once at the end instead of an
# fsync per file; their names are saved first (see Durability.land).
LAND_WITHOUT_FSYNC_AT = 32


class Durability:
    """This run's local writes not yet flushed: the directories renamed into, and the new
    files landed without an fsync."""

    def __init__(self, memory_dir: Path) -> None:
        self.memory_dir = memory_dir
        self._lock = threading.Lock()
        self._dirs: set[Path] = set()  # written to; fsynced once before the records
        self.landing: set[str] = set()  # new files written without fsync; flushed at the end

    def wrote_in(self, folder: Path) -> None:
        """A file was renamed into `folder` without the directory's fsync."""
        with self._lock:
            self._dirs.add(folder)

    def land(self, names: list[str], state: State) -> None:
        """`names`, new files a run is about to download: from LAND_WITHOUT_FSYNC_AT of them,
        they are written without an fsync each and flushed once at the end. Their names are
        saved (fsynced) first: after a power cut before that flush, the next run knows which
        files may be torn (`recover_landing`)."""
        if len(names) >= LAND_WITHOUT_FSYNC_AT:
            state.meta["landing"] = {"names": names, "boot": boot_id()}
            state.save_meta()
            self.landing = set(names)

    def make_durable(self, path_of: Callable[[str], Path], meta: dict) -> None:
        """Make this run's writes durable before the records claim them: the landed files
        (one syncfs, else an fsync each) and the renames (one fsync per directory)."""
        with self._lock:
            dirs, self._dirs = self._dirs, set()
            landed, self.landing = self.landing, set()
        if landed and not sync_filesystem(self.memory_dir):
            for name in sorted(landed):
                fsync_file(path_of(name))
        for folder in sorted(dirs):
            fsync_dir(folder)
        if landed:
            meta.pop("landing", None)  # saved with the records, right after this


def recover_landing(
    state: State,
    memory_dir: Path,
    path_of: Callable[[str], Path],
    keep: Callable[[str, bytes, str], None],
) -> None:
    """Files an interrupted run was landing may be torn (renamed into place, never
    flushed) — but only if the machine went down with them: a run that was merely killed
    (or a hook that returned at its budget) left them whole in the page cache. So:

    - same boot as the run that listed them: nothing can be torn; flush them now and let
      the planner compare each with the remote (a file Claude wrote since is a local
      edit like any other);
    - after a restart: a listed file last modified before this boot may be torn: it is
      kept in history (`keep`) and fetched again; one modified since the boot was written
      after the landing and is left alone."""
    landing = state.meta.pop("landing", None)
    if not landing:
        return
    names, boot = list(landing.get("names") or []), landing.get("boot")
    paths = {}
    for name in names:
        try:
            paths[name] = path_of(name)
        except UnsafeKey:
            continue  # never a name this run could have landed
    if boot is not None and boot == boot_id():
        if not sync_filesystem(memory_dir):
            for path in paths.values():
                fsync_file(path)
        return
    booted_at = boot_time()
    for name, path in paths.items():
        try:
            modified = path.stat().st_mtime
        except (FileNotFoundError, NotADirectoryError):
            state.forget(name)
            continue
        if booted_at is not None and modified > booted_at:
            continue  # written since the restart: not what the interrupted run landed
        data = read_if_there(path)
        if data is not None:
            keep(name, data, "left unflushed by an interrupted pull; fetched again")
            path.unlink(missing_ok=True)
        state.forget(name)
