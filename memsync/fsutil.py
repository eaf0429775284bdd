"""Local file helpers: atomic writes, private permissions, cross-process locks."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

from memsync.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import BinaryIO


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def private_dir(path: Path) -> Path:
    """Create `path` and any missing parents as 0700 directories (mkdir's `mode` only applies
    to the last one; parents would get the umask's 0755)."""
    missing = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask
    return path


_temp_ids = itertools.count()


def _open_temp(path: Path) -> tuple[int, str]:
    """A new private temp file beside `path`, named `.<name>.<pid>-<8 hex>.tmp`: the pid tells
    a crashed writer's leftover apart (`stale_temp`)."""
    while True:
        tmp = f"{path.parent}/.{path.name}.{os.getpid()}-{next(_temp_ids) % 16**8:08x}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue  # left by an earlier process with the same pid
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def _replacing(path: Path, sync_dir: bool) -> Iterator[int]:
    """A temp file's descriptor; the temp file replaces `path` when the block ends (the block
    closes the descriptor), or is removed if the block raises."""
    fd, tmp = _open_temp(path)
    try:
        yield fd
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def _seal(fd: int, mode: int, sync: bool) -> None:
    if sync:
        os.fsync(fd)
    os.fchmod(fd, mode)


@contextlib.contextmanager
def atomic_file(
    path: Path, mode: int = 0o600, *, sync: bool = True, sync_dir: bool = True
) -> Iterator[BinaryIO]:
    """Write `path` through a temp file and a rename: readers see the old file or the new one,
    never half; an exception leaves the old one in place.

    By default the file and then its directory are fsynced, so the write survives a power cut.
    A caller writing many files into one directory may pass sync_dir=False and fsync the
    directory once (`fsync_dir`) before it records the writes; a cache that verifies what it
    reads back may skip both."""
    with _replacing(path, sync and sync_dir) as fd, os.fdopen(fd, "wb") as fh:
        yield fh
        fh.flush()
        _seal(fd, mode, sync)


def atomic_write(
    path: Path,
    data: bytes,
    mode: int = 0o600,
    *,
    sync: bool = True,
    sync_dir: bool = True,
    mtime: float | None = None,
) -> None:
    """`atomic_file` for bytes in hand, in fewer system calls (no file object: it runs for
    every file a pull writes). `mtime` sets the file's modification time before the rename."""
    with _replacing(path, sync and sync_dir) as fd:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mtime is not None:
                ns = int(mtime * 1e9)
                os.utime(fd, ns=(ns, ns))
            _seal(fd, mode, sync)
        finally:
            os.close(fd)


# `.<name>.<pid>-<8 characters>.tmp`, as _open_temp names temp files (mkstemp's, before)
_TEMP_NAME = re.compile(r"^\..+\.(\d+)-[a-z0-9_]{8}\.tmp$")


def temp_writer(name: str) -> int | None:
    """The pid of the atomic_file that made temp file `name`, or None if it is not one."""
    match = _TEMP_NAME.match(name)
    return int(match.group(1)) if match else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def stale_temp(name: str) -> bool:
    """Whether `name` is the temp file of an atomic_file writer that is gone: SIGKILL runs no
    cleanup, so a writer killed between its temp file and its rename leaves one behind."""
    pid = temp_writer(name)
    return pid is not None and pid != os.getpid() and not _alive(pid)


def remove_stale_temp(dirpath: str | os.PathLike[str], fname: str) -> bool:
    """Remove `fname` from `dirpath` if it is a stale temp file; whether it was one."""
    if not stale_temp(fname):
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(dirpath, fname))
    return True


def sweep_temp_files(folder: Path) -> int:
    """Remove the stale temp files under `folder`; how many there were."""
    return sum(
        remove_stale_temp(dirpath, fname)
        for dirpath, _dirnames, filenames in os.walk(folder)
        for fname in filenames
    )


def _fsync_path(path: Path, ignored: type[OSError]) -> None:
    with contextlib.suppress(ignored):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_dir(path: Path) -> None:
    _fsync_path(path, OSError)  # some filesystems refuse to fsync a directory


def fsync_file(path: Path) -> None:
    _fsync_path(path, FileNotFoundError)  # gone meanwhile; anything else is worth raising


def sync_filesystem(path: Path) -> bool:
    """Flush everything written on `path`'s filesystem with one syncfs(2) (Linux): a pull of
    thousands of new files pays one flush instead of an fsync each. False where there is no
    syncfs; the caller then fsyncs file by file."""
    try:
        import ctypes

        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


@contextlib.contextmanager
def file_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """An exclusive advisory lock held across processes (flock on `path`).

    With a timeout, raise TimeoutError when the lock is not free in time.
    """
    import time

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"{path} is locked by another memsync process") from None
                    time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock
