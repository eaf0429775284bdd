"""Replacing or removing a memory file that someone else may be writing at the same moment.

A sync reads a file, decides, and later renames a download or a merge over it. A write landing
in between (Claude, an editor) would be replaced and kept nowhere. Here the replacement is
an atomic exchange where the platform has one (Linux renameat2 RENAME_EXCHANGE, macOS
renamex_np RENAME_SWAP): afterwards the temp name holds exactly the bytes that were replaced,
so a write that landed is seen and put back. Elsewhere the file is re-read right before the
rename, which leaves only the instant between that read and the rename. A new file is created
without replacing one that appeared meanwhile (RENAME_NOREPLACE / RENAME_EXCL, else a hard
link, else a re-check).

Each function returns None when it did what it was asked, else the bytes found in the way
(left in place), for the caller to merge.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.util.fsutil import read_if_there, temp_path

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    _Rename = Callable[[bytes, bytes, str], int]  # (src, dst, "exchange" | "noreplace") -> 0 or -1

_ids = itertools.count()
_NOREPLACE, _EXCHANGE = 1, 2  # renameat2 flags (Linux)
_SWAP, _EXCL = 2, 4  # renamex_np flags (macOS)
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM}
_libc_rename: _Rename | Literal[False] | None = None  # None: not looked for yet; False: none here


def _rename_call() -> _Rename | Literal[False]:  # the platform's flagged rename, or False
    global _libc_rename
    if _libc_rename is None:
        _libc_rename = False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if sys.platform.startswith("linux"):
                fn = libc.renameat2
                c_int, c_str = ctypes.c_int, ctypes.c_char_p
                fn.argtypes = [c_int, c_str, c_int, c_str, ctypes.c_uint]
                at = -100  # AT_FDCWD

                def call(src: bytes, dst: bytes, flag: str) -> int:
                    code = {"exchange": _EXCHANGE, "noreplace": _NOREPLACE}
                    return fn(at, src, at, dst, code[flag])

                _libc_rename = call
            elif sys.platform == "darwin":
                fn = libc.renamex_np
                fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]

                def call(src: bytes, dst: bytes, flag: str) -> int:
                    code = {"exchange": _SWAP, "noreplace": _EXCL}
                    return fn(src, dst, code[flag])

                _libc_rename = call
        except (OSError, AttributeError):
            _libc_rename = False
    return _libc_rename


def _flagged_rename(src: str, dst: Path, flag: str) -> bool | None:
    """True done; False: `dst` is missing (exchange) or present (noreplace); None: the
    platform or filesystem has no such rename."""
    call = _rename_call()
    if not call:
        return None
    import ctypes

    if call(os.fsencode(src), os.fsencode(dst), flag) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOENT, errno.EEXIST):
        return False
    if code in _UNSUPPORTED:
        return None
    raise OSError(code, os.strerror(code), str(dst))


def _temp_beside(
    path: Path, data: bytes, mode: int, sync: bool, mtime: float | None = None
) -> str:
    """A temp file next to `path` named as fsutil names them (a killed writer's is swept),
    with `mtime` as its modification time if given (set by path: portable, and the temp file
    is no one else's before the rename, which keeps it)."""
    while True:
        tmp = temp_path(path, next(_ids))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    if mtime is not None:
        try:
            os.utime(tmp, (mtime, mtime))
        except BaseException:
            os.unlink(tmp)
            raise
    return tmp


def _drop(tmp: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def replace(
    path: Path,
    data: bytes,
    expected: bytes | None,
    mode: int = 0o600,
    *,
    sync: bool = True,
    mtime: float | None = None,
) -> bytes | None:
    """Put `data` at `path`, which was last read as `expected` (None: absent). None when done;
    else what was found there instead, left in place. `mtime`: the new file's modification
    time (set before the rename: a write landing after it keeps its own)."""
    tmp = _temp_beside(path, data, mode, sync, mtime)
    try:
        if expected is not None:
            swapped = _flagged_rename(tmp, path, "exchange")
            if swapped:
                replaced = read_if_there(tmp)
                if replaced == expected:
                    return None
                _flagged_rename(tmp, path, "exchange")  # put the landed write back
                return replaced
            if swapped is None:
                current = read_if_there(path)  # the re-check right before the rename
                if current is not None and current != expected:
                    return current
                if current is not None:
                    os.replace(tmp, path)
                    return None
            # gone meanwhile (deleted here): create it, unless something else appeared
        return _create(tmp, path)
    finally:
        _drop(tmp)


def _create(tmp: str, path: Path) -> bytes | None:
    done = _flagged_rename(tmp, path, "noreplace")
    if done is None:
        try:
            os.link(tmp, path)
            done = True
        except FileExistsError:
            done = False
        except OSError:  # no hard links here (FAT, some network shares): re-check, rename
            if not os.path.lexists(path):
                os.replace(tmp, path)
                return None
            done = False
    if done:
        return None
    found = read_if_there(path)
    return found if found is not None else b""


def remove(path: Path, expected: bytes) -> bytes | None:
    """Remove `path`, last read as `expected`. None when done; else the bytes found there
    instead, which stay (or are put back) in place."""
    aside = temp_path(path, next(_ids))
    try:
        os.rename(path, aside)  # taken away atomically: later writes create a new file
    except FileNotFoundError:
        return None
    taken = read_if_there(aside)
    if taken == expected:
        _drop(aside)
        return None
    _create(aside, path)  # put the landed write back, unless the file was written again
    _drop(aside)
    return taken if taken is not None else b""
