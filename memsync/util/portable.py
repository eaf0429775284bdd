"""What differs between Linux, macOS and Windows, behind one small set of functions.

Everything here is standard library, imported lazily where it costs start-up time, and each
platform-only call sits behind a check of the platform or of the capability itself, so that
`import memsync` and every command run on all three (README: "Platforms")."""

from __future__ import annotations

import os
import sys
from typing import Any

IS_WINDOWS = sys.platform == "win32"

# The largest pid any supported system hands out (Linux caps pid_max at 2**22; Windows pids
# are DWORDs, in practice far lower; macOS below 100000). A name carrying a larger number was
# not made by one of our writers, and os.kill would raise OverflowError on it.
MAX_PID = 2**31 - 1


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this machine. Out-of-range pids are not alive.

    POSIX asks with signal 0. On Windows `os.kill(pid, 0)` would *terminate* the process
    (TerminateProcess with exit code 0), so there it is asked through OpenProcess."""
    if not 0 < pid <= MAX_PID:
        return False
    if IS_WINDOWS:
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return False
    return True


def _windows_pid_alive(pid: int) -> bool:  # pragma: no cover - runs on Windows only
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    kernel32.GetExitCodeProcess.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD)]
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    query_limited_information, still_active, access_denied = 0x1000, 259, 5
    handle = kernel32.OpenProcess(query_limited_information, False, pid)
    if not handle:
        return ctypes.get_last_error() == access_denied  # type: ignore[attr-defined]  # not ours
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True  # cannot tell: keep its files
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


def detached_process_options() -> dict[str, Any]:
    """Popen options for a child that must outlive its parent (the SessionEnd flush): a new
    session on POSIX; on Windows a detached process in its own group, out of the parent's job
    (Claude Code may close the job when the hook returns) and without a console window."""
    if sys.platform == "win32":  # pragma: no cover - runs on Windows only (IS_WINDOWS)
        import subprocess

        flags = (
            subprocess.DETACHED_PROCESS
            | subprocess.CREATE_NEW_PROCESS_GROUP
            | subprocess.CREATE_BREAKAWAY_FROM_JOB
            | subprocess.CREATE_NO_WINDOW
        )
        return {"creationflags": flags, "close_fds": True}
    return {"start_new_session": True, "close_fds": True}


def file_url_path(netloc: str, path: str) -> str:
    """The local path of a `file:` URL's host and path parts, percent-decoded.

    POSIX: `file:///srv/x` → `/srv/x`. Windows: `file:///C:/Users/x` → `C:\\Users\\x` and
    `file://nas/share/x` (what `Path(r"\\\\nas\\share\\x").as_uri()` gives) → `\\\\nas\\share\\x`.
    Raises ValueError for a host on POSIX, where a file URL cannot name another machine."""
    from urllib.parse import unquote

    if IS_WINDOWS:  # pragma: no cover - runs on Windows only
        from urllib.request import url2pathname

        if netloc and netloc.lower() != "localhost":
            return url2pathname(f"//{netloc}{path}")
        return url2pathname(path)
    if netloc not in ("", "localhost"):
        raise ValueError(netloc)
    return unquote(path)
