"""What keeps memsync running on Linux, macOS and Windows (memsync/util/portable.py, fsutil.py):
the core imports with no POSIX-only module, the portable lock holds and recovers, the
Linux-only speedups fall back, and temp-file names never crash a run (issue 19)."""

from __future__ import annotations

import ast
import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memsync.util import fsutil, portable
from tests.conftest import python_path
from tests.devices import REPO, make_device

# Modules a Windows Python does not have (posix itself cannot be hidden on Linux: os needs it)
POSIX_ONLY = ("fcntl", "pwd", "grp", "termios", "tty", "pty", "resource", "syslog")


def memsync_modules() -> list[Path]:
    return sorted((REPO / "memsync").rglob("*.py"))


def test_no_module_imports_a_posix_only_module_unguarded():
    """A top-level `import fcntl` made `import memsync` fail on Windows. Every import of a
    POSIX-only module sits in a function or under `except ImportError`."""
    offenders = []
    for path in memsync_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = {
            id(node)
            for t in ast.walk(tree)
            if isinstance(t, ast.Try)
            and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in t.handlers
            )
            for node in ast.walk(t)
        }
        for node in tree.body:
            for imp in ast.walk(node):
                if isinstance(imp, ast.Import | ast.ImportFrom) and id(imp) not in guarded:
                    names = [a.name for a in imp.names] if isinstance(imp, ast.Import) else [
                        imp.module or ""
                    ]
                    if any(n.split(".")[0] in POSIX_ONLY for n in names) and not isinstance(
                        node, ast.FunctionDef | ast.ClassDef
                    ):
                        offenders.append(f"{path.relative_to(REPO)}:{imp.lineno}")
    assert offenders == []


def test_every_module_imports_and_a_sync_runs_without_posix_only_modules(tmp_path):
    """As on Windows: every memsync module imports, and the CLI syncs two devices' files,
    with the POSIX-only modules hidden (the lock is then filelock's)."""
    device = make_device(tmp_path, "win", (tmp_path / "remote").as_uri())
    (tmp_path / "remote").mkdir()
    device.write("user_role.md", "Staff engineer.\n", type="user")
    code = textwrap.dedent(
        f"""
        import sys
        for name in {POSIX_ONLY!r}:
            sys.modules[name] = None
        import importlib, pkgutil, memsync
        for info in pkgutil.walk_packages(memsync.__path__, "memsync."):
            importlib.import_module(info.name)
        from memsync.entry import main
        sys.argv = ["memsync", "sync"]
        main()
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(device.env(), PYTHONPATH=python_path(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pushed: user_role.md" in proc.stdout
    assert (tmp_path / "remote" / "e2e-project" / "user_role.md").exists()


# --- temp files and pids ---------------------------------------------------------------


def test_a_temp_like_name_with_an_impossible_pid_is_not_ours():
    name = ".x.99999999999-abcdef12.tmp"
    assert fsutil.temp_writer(name) is None
    assert fsutil.stale_temp(name) is False
    assert fsutil.temp_writer(".x." + "9" * 400 + "-abcdef12.tmp") is None
    assert fsutil.temp_writer(".x.0-abcdef12.tmp") is None
    assert fsutil.temp_writer(f".x.{portable.MAX_PID}-abcdef12.tmp") == portable.MAX_PID
    assert not portable.pid_alive(99999999999) and not portable.pid_alive(0)
    assert portable.pid_alive(os.getpid())


def test_a_sync_with_such_a_file_in_the_memory_and_state_dirs_runs_and_keeps_it(tmp_path):
    """Issue 19: OverflowError on every run. The file is not memsync's: it stays."""
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "a", (tmp_path / "remote").as_uri())
    device.write("user_role.md", "Staff engineer.\n", type="user")
    device.run("sync")
    odd = ".x.99999999999-abcdef12.tmp"
    (device.memory / odd).write_text("not ours")
    state = next((device.home / "state").iterdir())
    (state / odd).write_text("not ours")
    proc = device.run("sync")
    assert "Traceback" not in proc.stderr
    assert (device.memory / odd).exists() and (state / odd).exists()


def test_a_dead_writers_temp_file_is_still_swept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = tmp_path / f".user_a.md.{dead.pid}-0000abcd.tmp"
    leftover.write_text("half")
    assert fsutil.sweep_temp_files(tmp_path) == 1 and not leftover.exists()


def test_windows_never_asks_os_kill(monkeypatch):
    """os.kill(pid, 0) terminates the process on Windows."""
    asked = []
    monkeypatch.setattr(portable, "IS_WINDOWS", True)
    monkeypatch.setattr(portable, "_windows_pid_alive", lambda pid: asked.append(pid) or False)
    monkeypatch.setattr(os, "kill", lambda *a: pytest.fail("os.kill on Windows"))
    assert portable.pid_alive(1234) is False and asked == [1234]


# --- the lock --------------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from memsync.util import fsutil
with fsutil.file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def hold_lock_elsewhere(path: Path, portable_lock: bool) -> subprocess.Popen[str]:
    code = ("import sys; sys.modules['fcntl'] = None\n" if portable_lock else "") + HOLDER
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        env=dict(os.environ, PYTHONPATH=python_path(REPO)),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.parametrize("portable_lock", [False, True], ids=["flock", "filelock"])
def test_the_lock_excludes_and_is_released_when_its_holder_is_killed(
    tmp_path, monkeypatch, portable_lock
):
    if portable_lock:
        monkeypatch.setattr(fsutil, "fcntl", None)
    path = tmp_path / "state" / "lock"
    holder = hold_lock_elsewhere(path, portable_lock)
    try:
        with (
            pytest.raises(TimeoutError, match="locked by another memsync process"),
            fsutil.file_lock(path, timeout=0.3),
        ):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with fsutil.file_lock(path, timeout=30):  # a dead holder's lock is free again
        pass


def test_a_marker_left_empty_by_a_killed_holder_is_reclaimed(tmp_path, monkeypatch):
    """A holder killed between creating filelock's marker and writing its pid into it leaves
    an empty marker, which filelock alone waits for for ever."""
    monkeypatch.setattr(fsutil, "fcntl", None)
    path = tmp_path / "lock"
    marker = tmp_path / "lock.owner"
    marker.write_bytes(b"")
    old = time.time() - 60
    os.utime(marker, (old, old))
    with fsutil.file_lock(path, timeout=20):
        assert marker.read_text().startswith(f"{os.getpid()}\n")


def test_a_file_system_without_flock_falls_back_to_the_portable_lock(tmp_path, monkeypatch):
    class NoFlock:
        LOCK_EX, LOCK_NB = 2, 4

        @staticmethod
        def flock(fd, op):
            raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fsutil, "fcntl", NoFlock)
    path = tmp_path / "lock"
    # the empty file flock's attempt leaves is not taken for an abandoned marker
    monkeypatch.setattr(fsutil, "_mark_abandoned_marker", lambda p: pytest.fail(str(p)))
    with fsutil.file_lock(path, timeout=5):
        marker = tmp_path / "lock.owner"  # filelock's marker
        assert marker.read_text().startswith(f"{os.getpid()}\n")


# --- the other Linux-only calls ----------------------------------------------------------


def test_atomic_write_sets_the_mode_without_fchmod(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil, "_HAS_FCHMOD", False)
    monkeypatch.delattr(os, "fchmod")
    path = tmp_path / "a.md"
    fsutil.atomic_write(path, b"x\n", 0o640)
    assert path.read_bytes() == b"x\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    with fsutil.atomic_file(path, 0o600) as fh:
        fh.write(b"y\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_syncfs_only_on_linux(tmp_path, monkeypatch):
    assert fsutil.sync_filesystem(tmp_path) is sys.platform.startswith("linux")
    for platform in ("darwin", "win32"):
        monkeypatch.setattr(fsutil.sys, "platform", platform)
        assert fsutil.sync_filesystem(tmp_path) is False


def test_directory_fsync_is_skipped_on_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil, "IS_WINDOWS", True)
    monkeypatch.setattr(os, "open", lambda *a, **k: pytest.fail("opened a directory"))
    fsutil.fsync_dir(tmp_path)


def test_file_urls():
    assert portable.file_url_path("", "/srv/remote%20dir") == "/srv/remote dir"
    assert portable.file_url_path("localhost", "/srv/x") == "/srv/x"
    with pytest.raises(ValueError):
        portable.file_url_path("nas", "/share")


def test_detached_process_options_fit_the_platform():
    options = portable.detached_process_options()
    assert options.get("start_new_session") is (not portable.IS_WINDOWS)


@pytest.mark.skipif(os.environ.get("MEMSYNC_TEST_NO_FCNTL") != "1", reason="the no-fcntl run")
def test_the_no_fcntl_run_hides_fcntl_here_and_in_memsync_subprocesses(tmp_path):
    """Guards the switch itself: a run that meant to test the portable lock and silently
    used flock would prove nothing."""
    assert fsutil.fcntl is None
    device = make_device(tmp_path, "d", (tmp_path / "r").as_uri())
    code = "import memsync.util.fsutil as f; print(f.fcntl is None)"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=device.env(), capture_output=True, text=True
    )
    assert proc.stdout.strip() == "True", proc.stderr


def test_atomic_write_sets_the_mtime_where_utime_takes_no_descriptor(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil, "_UTIME_FD", False)  # as on Windows
    real_utime = os.utime

    def utime(target, *args, **kwargs):
        assert not isinstance(target, int), "os.utime on a descriptor"
        return real_utime(target, *args, **kwargs)

    monkeypatch.setattr(os, "utime", utime)
    path = tmp_path / "a.md"
    fsutil.atomic_write(path, b"x\n", mtime=1_700_000_000.5)
    assert path.stat().st_mtime == pytest.approx(1_700_000_000.5)
