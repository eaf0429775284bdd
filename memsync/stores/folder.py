"""A folder remote (`file:///path`): a NAS, a synced drive, or the embedded default.

The ETag is a content hash. Compare-and-swap is atomic across processes: one flock around
compare and write, and every write is temp file + fsync + rename.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from memsync.stores.base import Entry, Stats, Store, check_key
from memsync.util.errors import AlreadyExists, NotFound, PreconditionFailed, StoreError, Unreachable
from memsync.util.fsutil import (
    atomic_write,
    file_lock,
    private_dir,
    read_if_there,
    sha256,
    temp_writer,
)

_LOCK = ".memsync-lock"


def _etag(data: bytes) -> str:
    return f'"{sha256(data)[:32]}"'


class FolderStore(Store):
    content_etags = True

    def __init__(self, root: str | os.PathLike[str], prefix: str = "") -> None:
        self.root = Path(root)
        self.base = self.root / prefix if prefix else self.root
        self.url = self.base.as_uri() if self.base.is_absolute() else str(self.base)
        self.stats = Stats()
        # Set by the engine when this device has synced here: the project's folder is then
        # never made anew by a write, since its absence means the drive or share is not
        # mounted (the mount point is an empty folder) and a write there would be lost.
        self.project_known = False
        self._read_time: float | None = None

    def _missing(self) -> str:
        import shlex  # only said when the folder is missing

        return (
            f"the folder remote {self.root} is not there (is the drive mounted? a new one is "
            f"made with `mkdir -p {shlex.quote(str(self.root))}`: memsync never makes it, so "
            "an unmounted drive's mount point is never written to)"
        )

    def _path(self, key: str) -> Path:
        return self.base / check_key(key)

    def _lock(self):  # a context manager
        if not self.root.is_dir():
            raise Unreachable(self._missing())
        if self.project_known and not self.base.is_dir():
            raise Unreachable(
                f"the folder remote {self.root} has no folder {self.base.name} for this project, "
                "though this device synced with it (is the drive mounted?); if it was removed "
                "on purpose, `memsync push --republish` publishes this device's memory again"
            )
        private_dir(self.base)
        return file_lock(self.base / _LOCK)

    def _read(self, path: Path) -> bytes | None:
        try:
            return read_if_there(path)
        except IsADirectoryError:
            raise StoreError(f"{path} is a folder, not a memory file") from None

    @property
    def round_trip(self) -> float | None:
        """A file's read, as the last listing timed it (it reads every file): on this
        machine's disk far below a network's round trip, on a network share near one."""
        return self._read_time

    def list(self) -> dict[str, Entry]:
        self.stats.count("list")
        if not self.root.is_dir():
            raise Unreachable(self._missing())
        started = time.monotonic()
        entries: dict[str, Entry] = {}
        if not self.base.is_dir():
            return entries
        leftovers = []
        for dirpath, dirnames, filenames in os.walk(self.base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fname in sorted(filenames):
                if fname.startswith("."):
                    if temp_writer(fname) is not None:
                        leftovers.append(Path(dirpath) / fname)
                    continue
                path = Path(dirpath) / fname
                data = self._read(path)
                if data is None:
                    continue
                key = path.relative_to(self.base).as_posix()
                st = path.stat()
                entries[key] = Entry(key, _etag(data), len(data), st.st_mtime)
        if leftovers:
            self._sweep(leftovers)
        if entries:
            self._read_time = (time.monotonic() - started) / len(entries)
        return entries

    def projects(self) -> tuple[str, ...] | None:
        self.stats.count("list")
        if not self.root.is_dir():
            raise Unreachable(self._missing())
        try:
            return tuple(
                sorted(p.name for p in self.root.iterdir() if p.is_dir() and p.name[0] != ".")
            )
        except OSError as exc:
            raise StoreError(f"cannot list the folder remote {self.root}: {exc}") from None

    def _sweep(self, leftovers: Iterable[Path]) -> None:
        """Remove temp files of writers killed mid-write. Every writer holds the lock from its
        temp file to its rename, so under the lock a temp file is always a leftover."""
        with self._lock():
            for path in leftovers:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        """The file's mtime is its writer's edit time (see `create`), read with the content
        from one open file."""
        self.stats.count("get")
        try:
            with open(self._path(key), "rb") as f:
                edited = os.fstat(f.fileno()).st_mtime
                data = f.read()
        except FileNotFoundError:
            raise NotFound(f"{key} is not on the remote") from None
        except IsADirectoryError:
            raise StoreError(f"{self._path(key)} is a folder, not a memory file") from None
        self.stats.bytes_down += len(data)
        return data, _etag(data), edited

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        """`edited` becomes the file's mtime, as `cp -p` keeps it."""
        self.stats.count("put", up=len(data))
        path = self._path(key)
        with self._lock():
            if path.exists():
                raise AlreadyExists(f"{key} already exists on the remote")
            atomic_write(path, data, mtime=edited)
        return _etag(data)

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        self.stats.count("put", up=len(data))
        path = self._path(key)
        with self._lock():
            current = self._read(path)
            if current is None or _etag(current) != etag:
                raise PreconditionFailed(f"{key} changed on the remote")
            atomic_write(path, data, mtime=edited)
        return _etag(data)

    def delete(self, key: str, etag: str) -> None:
        self.stats.count("delete")
        path = self._path(key)
        with self._lock():
            current = self._read(path)
            if current is None:
                raise NotFound(f"{key} is not on the remote")
            if _etag(current) != etag:
                raise PreconditionFailed(f"{key} changed on the remote")
            path.unlink()
            with contextlib.suppress(OSError):  # tidy empty sub-folders
                parent = path.parent
                while parent != self.base:
                    parent.rmdir()
                    parent = parent.parent

    def exists(self) -> bool:
        return self.base.is_dir()

    def ensure(self) -> None:
        private_dir(self.base)

    def close(self) -> None:
        pass
