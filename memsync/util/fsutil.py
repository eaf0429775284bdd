"""Local file helpers: atomic writes, private permissions, cross-process locks.

Portable (Linux, macOS, Windows): the fast paths are POSIX or Linux calls taken only where the
capability exists, each with a portable fallback (see memsync/util/portable.py and README
"Platforms"): flock where `fcntl` exists, else filelock's lock; fchmod, else chmod by path;
syncfs on Linux, else an fsync per file; a directory fsync where directories can be opened."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.util.portable import IS_WINDOWS, MAX_PID, pid_alive

try:
    import fcntl
except ImportError:  # Windows (or hidden by the test suite's MEMSYNC_TEST_NO_FCNTL switch)
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from typing import BinaryIO, Literal

# O_CLOEXEC saves the extra call Python makes to mark a new descriptor non-inheritable (PEP 446
# makes it so everywhere anyway); O_BINARY stops Windows from turning \n into \r\n on write.
_TEMP_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)
_HAS_FCHMOD = hasattr(os, "fchmod") and not IS_WINDOWS
_UTIME_FD = os.utime in os.supports_fd  # not on Windows


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_if_there(path: str | os.PathLike[str]) -> bytes | None:
    """The file's bytes, or None if there is no such file. Every other error is raised."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_text_if_there(
    path: str | os.PathLike[str],
    *,
    undecodable: Literal["raise", "replace", "none"] = "raise",
    unreadable: Literal["raise", "none"] = "raise",
) -> str | None:
    """The file's UTF-8 text, or None if there is no such file (`read_if_there`). The caller
    says what the other failures give: bytes that are not UTF-8 raise UnicodeDecodeError, are
    replaced by U+FFFD, or give None; any other OSError is raised or gives None."""
    try:
        data = read_if_there(path)
    except OSError:
        if unreadable == "none":
            return None
        raise
    if data is None:
        return None
    if undecodable == "replace":
        return data.decode("utf-8", "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if undecodable == "none":
            return None
        raise


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
# 255 bytes a name, less the temp suffix `.` + `.<pid up to 20 digits>-<8 hex>.tmp`
_TEMP_STEM_MAX = 255 - 1 - 34


def temp_path(path: Path, serial: int) -> str:
    """`.<name>.<pid>-<8 hex>.tmp` beside `path`; a name so long that the suffix would push
    it past 255 bytes (a legal 246-character memory name) is cut to fit."""
    stem = path.name
    if len(os.fsencode(stem)) > _TEMP_STEM_MAX:
        stem = os.fsencode(stem)[:_TEMP_STEM_MAX].decode("utf-8", "ignore") or "x"
    return f"{path.parent}/.{stem}.{os.getpid()}-{serial % 16**8:08x}.tmp"


def _open_temp(path: Path) -> tuple[int, str]:
    """A new private temp file beside `path`, named by `temp_path`: the pid tells a crashed
    writer's leftover apart (`stale_temp`)."""
    made_parent = False
    while True:
        tmp = temp_path(path, next(_temp_ids))
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue  # left by an earlier process with the same pid
        except FileNotFoundError:
            if made_parent:  # a folder that exists and takes no files (/proc): say so once
                raise OSError(
                    0, "files cannot be created in that folder; choose another place", str(path)
                ) from None
            path.parent.mkdir(parents=True, exist_ok=True)
            made_parent = True


@contextlib.contextmanager
def _replacing(
    path: Path, mode: int, sync_dir: bool, mtime: float | None = None
) -> Iterator[int]:
    """A temp file's descriptor; the temp file replaces `path` when the block ends (the block
    closes the descriptor), or is removed if the block raises."""
    fd, tmp = _open_temp(path)
    try:
        yield fd
        if not _HAS_FCHMOD:
            os.chmod(tmp, mode)  # Windows: only the read-only bit means anything
        if mtime is not None:
            ns = int(mtime * 1e9)
            os.utime(tmp, ns=(ns, ns))
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def _replace(tmp: str, path: Path) -> None:
    """os.replace (atomic on POSIX and, through MoveFileEx, on Windows). Windows refuses to
    replace a file another process holds open without delete sharing (a virus scanner, the
    search indexer, an editor reading it): retry for up to about a second."""
    if not IS_WINDOWS:
        os.replace(tmp, path)
        return
    import time  # pragma: no cover - runs on Windows only

    for delay in (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4):  # pragma: no cover
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            time.sleep(delay)
    os.replace(tmp, path)  # pragma: no cover


def _seal(fd: int, mode: int, sync: bool) -> None:
    if sync:
        os.fsync(fd)
    if _HAS_FCHMOD:
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
    with _replacing(path, mode, sync and sync_dir) as fd, os.fdopen(fd, "wb") as fh:
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
    by_path = None if _UTIME_FD else mtime  # Windows sets times by path, not descriptor
    with _replacing(path, mode, sync and sync_dir, by_path) as fd:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mtime is not None and _UTIME_FD:
                ns = int(mtime * 1e9)
                os.utime(fd, ns=(ns, ns))
            _seal(fd, mode, sync)
        finally:
            os.close(fd)


# `.<name>.<pid>-<8 characters>.tmp`, as _open_temp names temp files (mkstemp's, before)
_TEMP_NAME = re.compile(r"^\..+\.(\d+)-[a-z0-9_]{8}\.tmp$")


def temp_writer(name: str) -> int | None:
    """The pid of the atomic_file that made temp file `name`, or None if it is not one. A
    name whose number no system hands out as a pid (`.x.99999999999-abcdef12.tmp`) is not one
    of ours: it is left alone, never deleted, and never reaches os.kill (OverflowError)."""
    match = _TEMP_NAME.match(name)
    if not match or len(match.group(1)) > len(str(MAX_PID)):
        return None
    pid = int(match.group(1))
    return pid if 0 < pid <= MAX_PID else None


def stale_temp(name: str) -> bool:
    """Whether `name` is the temp file of an atomic_file writer that is gone: SIGKILL runs no
    cleanup, so a writer killed between its temp file and its rename leaves one behind."""
    pid = temp_writer(name)
    return pid is not None and pid != os.getpid() and not pid_alive(pid)


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
    """Make a rename in `path` durable. Windows cannot open a directory (nor needs to: NTFS
    journals the rename), so there it does nothing."""
    if not IS_WINDOWS:
        _fsync_path(path, OSError)  # some filesystems refuse to fsync a directory


def fsync_file(path: Path) -> None:
    _fsync_path(path, FileNotFoundError)  # gone meanwhile; anything else is worth raising


def sync_filesystem(path: Path) -> bool:
    """Flush everything written on `path`'s filesystem with one syncfs(2) (Linux): a pull of
    thousands of new files pays one flush instead of an fsync each. False where there is no
    syncfs (macOS, Windows, a libc without it); the caller then fsyncs file by file."""
    syncfs = _syncfs()
    if syncfs is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


def _syncfs():  # a ctypes function or None
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError, TypeError):
        return None


# flock errors that mean "this file system cannot lock" (some network shares), not "busy"
_NO_FLOCK = {errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK, getattr(errno, "ENOTSUP", -1)}


@contextlib.contextmanager
def file_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """An exclusive advisory lock held across processes, released when the holder exits or dies.

    flock on `path` where there is `fcntl` (Linux, macOS): one system call, no import cost on
    the hot paths. Elsewhere (Windows), or where the file system refuses flock, filelock's
    FileLock (msvcrt.locking on Windows; without either, its pid-and-host marker file, which
    a later holder breaks once the recorded process is gone).

    With a timeout, raise TimeoutError when the lock is not free in time.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is not None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if _flock(fd, path, timeout):
                yield
                return
        finally:
            os.close(fd)  # closing releases the lock
    with _portable_lock(path, timeout):
        yield


def _flock(fd: int, path: Path, timeout: float | None) -> bool:
    """Take flock on `fd`; False if this file system cannot flock."""
    import time

    assert fcntl is not None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
            return True
        except BlockingIOError:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{path} is locked by another memsync process") from None
            time.sleep(0.02)
        except OSError as exc:
            if exc.errno in _NO_FLOCK:
                return False
            raise


@contextlib.contextmanager
def _portable_lock(path: Path, timeout: float | None) -> Iterator[None]:
    import time
    import warnings

    with warnings.catch_warnings():  # "only soft file lock is available": that is expected here
        warnings.simplefilter("ignore")
        # imported only where flock is not available
        from filelock import FileLock, SoftFileLock, Timeout

    # Windows: msvcrt.locking, released by the system when the holder dies. Elsewhere (no
    # fcntl, or a file system that refuses flock): the pid-and-host marker file.
    # The marker has a name of its own: `path` itself is left as flock leaves it (an empty
    # file), whatever the lock, so the state dir looks the same on every platform.
    if IS_WINDOWS:
        lock = FileLock(str(path), mode=0o600)
    else:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        lock = SoftFileLock(str(path.with_name(path.name + ".owner")), mode=0o600)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        wait = 0.5 if deadline is None else min(0.5, max(0.0, deadline - time.monotonic()))
        try:
            lock.acquire(timeout=wait, poll_interval=0.02)
            break
        except Timeout:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{path} is locked by another memsync process") from None
            _mark_abandoned_marker(Path(lock.lock_file))
    try:
        yield
    finally:
        lock.release()


ABANDONED_AFTER = 2.0  # seconds; filelock's own threshold for a marker it cannot parse


def _mark_abandoned_marker(path: Path) -> None:
    """Let filelock reclaim a marker its holder never finished (where filelock falls back to a
    marker file, i.e. neither flock nor msvcrt is available).

    A holder creates the marker, then writes its pid and host into it; a holder killed between
    the two leaves an empty marker, which filelock treats as a pre-3.22 holder and waits for
    for ever. Empty for over two seconds, it is no live holder's (the write follows the create
    within microseconds): an unparsable word appended makes filelock break it, with its own
    care, once it has seen it unchanged for two seconds more."""
    import time

    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if st.st_size == 0 and time.time() - st.st_mtime >= ABANDONED_AFTER:
            os.write(fd, b"abandoned")  # no newline: never a valid record
    except OSError:
        pass
    finally:
        os.close(fd)
