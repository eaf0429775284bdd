"""Warm hooks: a process with memsync already imported answers Claude Code's hooks.

A hook is a new process on every tool call, and most of its time is the interpreter importing
memsync, not the hook's work (a session start's pull and primer, a write's check, each a few
milliseconds once imported). So the first hook answered the ordinary way starts a warm process
for this MEMSYNC_HOME (`python -m memsync.claude.warm`, detached); later hooks hand it their
arguments, environment, working folder and payload over a Unix socket in MEMSYNC_HOME/run
(0700), and it answers each from a forked child: a fresh process with the hook's own
environment, the same code as the ordinary way, minus the imports. The rule a user can rely on:
a hook does exactly the same work either way; only its start-up is saved.

The warm process leaves when no hook came for `IDLE` seconds, when its socket is removed or
replaced, and when a hook comes from different code (another interpreter, PYTHONPATH, or an
install or upgrade of memsync since it started): that hook is answered the ordinary way and
starts a new one. Where there is no fork or no Unix socket (Windows), with the `warm_hooks`
setting false, or with MEMSYNC_WARM_HOOKS=0, every hook runs the ordinary way.

This module is the client too, so it imports only what the client needs: the hook's start-up
is what it exists to save (the client's socket is `_socket`, the compiled module under
`socket`, whose own import costs a quarter of the client's time).
"""

from __future__ import annotations

import _socket
import os
import sys

from memsync.claude.payload import MAX_PAYLOAD

TYPE_CHECKING = False  # typing's own import is a cost the client does not pay
if TYPE_CHECKING:
    import socket
    from typing import Protocol

    class _Conn(Protocol):
        def sendall(self, data: bytes, /) -> None: ...
        def recv(self, size: int, /) -> bytes: ...


IDLE = 8 * 3600.0  # seconds without a hook before the warm process leaves (MEMSYNC_WARM_IDLE)
PROTOCOL = b"memsync-warm-1"
ACK_WAIT = 0.5  # seconds the client waits for the warm process to take its call
START_GUARD = 10.0  # seconds a start in progress keeps others from starting a second one
HOLD = 3600.0  # seconds no start is tried after a warm process could not start
SOCKET = "hooks.sock"
PROBE = "--probe"  # a call that asks whether this environment would be answered, nothing more
STARTING = "hooks.starting"
# the Claude Code events a warm process answers; `hook flush` (detached) runs the ordinary way
EVENTS = frozenset(
    ("session-start", "post-tool-use", "file-changed", "stop", "post-compact", "session-end",
     "pre-compact")
)  # fmt: skip


def run_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """MEMSYNC_HOME/run, spelled as `config.memsync_home` spells MEMSYNC_HOME."""
    home = env.get("MEMSYNC_HOME") or os.path.join("~", ".memsync")
    return os.path.join(os.path.expanduser(home), "run")


def available() -> bool:
    """Warm hooks are possible here and not turned off by MEMSYNC_WARM_HOOKS (on/off, as the
    other switches; a value that is neither is the settings' to report, in every hook)."""
    off = os.environ.get("MEMSYNC_WARM_HOOKS", "").strip().lower() in ("0", "off", "false", "no")
    return hasattr(os, "fork") and hasattr(_socket, "AF_UNIX") and not off


# what a process takes from its environment once, at start-up: the interpreter's options, its
# locale and time zone, its temporary folder. A hook whose values differ from the warm
# process's is other code for it: answered the ordinary way, it starts a warm process of its own
STARTUP_PREFIXES = ("PYTHON", "LC_", "LD_", "DYLD_", "OPENSSL_", "MALLOC_", "GLIBC_", "FAKETIME")
STARTUP_NAMES = ("LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP")


def _startup_env(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    return {
        k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES
    }


PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_stamp() -> bytes:
    """What must be the same for a warm process to answer a hook: the interpreter, where
    memsync's files are, and the environment a process reads once at start-up
    (`_startup_env`). When memsync's files change (an install, an upgrade, an edit), the warm
    process itself leaves within a second (`_code_time`)."""
    startup = sorted(_startup_env(os.environ).items())
    parts = [sys.executable, PACKAGE, *_world(), *(f"{k}={v}" for k, v in startup)]
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def _world() -> list[str]:
    """The file system and processes this process sees: its root folder and, on Linux, its
    mount, process and user namespaces (a container or sandbox sharing MEMSYNC_HOME sees
    other files and other process ids than the warm process)."""
    root = os.stat("/")
    seen = [f"root={root.st_dev}:{root.st_ino}"]
    for kind in ("mnt", "pid", "user"):
        with _suppress(OSError):
            seen.append(os.readlink(f"/proc/self/ns/{kind}"))
    return seen


def _code_time() -> int:
    """When any of the code a hook runs last changed (nanoseconds): memsync's files and the
    file of every module the warm process loaded (its dependencies, the standard library)."""
    paths: set[str] = set()
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        paths.update(os.path.join(folder, name) for name in (".", *files))
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            paths.add(path)
    newest = 0
    for path in paths:
        try:
            newest = max(newest, os.stat(path).st_mtime_ns)
        except OSError:
            continue
    return newest


# --- framing: each part is its length (4 bytes, big-endian) and its bytes ---------------------


def _send(conn: _Conn, *parts: bytes) -> None:
    conn.sendall(b"".join(len(p).to_bytes(4, "big") + p for p in parts))


def _exactly(conn: _Conn, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the warm process closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(conn: _Conn, count: int) -> list[bytes]:
    return [_exactly(conn, int.from_bytes(_exactly(conn, 4), "big")) for _ in range(count)]


def _encode_env(env: dict[str, str] | os._Environ[str]) -> bytes:
    return b"\0".join(os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items())


def _decode_env(raw: bytes) -> dict[str, str]:
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {os.fsdecode(k): os.fsdecode(v) for k, _, v in pairs}


# --- the client: `memsync hook EVENT` ----------------------------------------------------------


def run_hook(argv: list[str]) -> int:
    """Answer one hook: by the warm process if one answers for this memsync, else the ordinary
    way, which then starts a warm process for the hooks that follow."""
    if not argv or argv[0] not in EVENTS or not available():
        return _ordinary(argv, sys.stdin)
    try:
        data = sys.stdin.buffer.read(MAX_PAYLOAD + 1) if sys.stdin is not None else b""
    except (OSError, ValueError):
        data = b""
    answer = _ask(argv, data)
    if answer is not None:
        code, out, err = answer
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
        sys.stderr.buffer.write(err)
        sys.stderr.flush()
        return code
    import io

    code = _ordinary(argv, io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    start()
    return code


def _ordinary(argv: list[str], stdin: object) -> int:
    from memsync.claude.hooks import after_answer, main

    code = main(argv, stdin)
    sys.stdout.flush()
    after_answer(detach=True)
    return code


def warm_state() -> str:
    """How the next hook will be answered, in a sentence (for `doctor`)."""
    if not available():
        return "warm hooks are off here (MEMSYNC_WARM_HOOKS, or no fork or Unix socket)"
    from memsync.context.config import load_settings, memsync_home

    if load_settings(memsync_home()).get("warm_hooks", True) is False:
        return "warm hooks are off (the warm_hooks setting): each hook starts memsync anew"
    try:
        _dial(os.getcwd()).close()
    except TimeoutError:
        return (
            f"a warm process holds {os.path.join(run_dir(), SOCKET)} but does not answer "
            "(stopped?): each hook waits a moment, then runs the ordinary way and starts one "
            "in its place"
        )
    except OSError:
        pass
    else:
        if _ask([PROBE], b"") is not None:
            return "a warm process answers hooks"
        return (
            "the warm process served other code or another environment (time zone, locale, "
            "namespace...) and has left: the next hook starts one for this one"
        )
    try:
        import time

        held = os.stat(os.path.join(run_dir(), STARTING)).st_mtime - time.time()
    except OSError:
        held = 0
    if held > 0:
        return (
            f"no warm process: the last could not start (the log says why); hooks run the "
            f"ordinary way for {held / 60:.0f} more minutes, then try again"
        )
    return "no warm process yet: the next hook starts one"


def stop() -> None:
    """Ask this memsync home's warm process, if any, to leave (a call from other code), and
    again while one listens on the socket or a start is under way (`install` just started
    one), at most START_GUARD seconds: the one that answers may be an earlier process still
    leaving, and one busy with a hook takes no call within ACK_WAIT."""
    if not available():
        return
    import time

    cwd = os.getcwd()
    guard = os.path.join(run_dir(), STARTING)
    deadline = time.monotonic() + START_GUARD
    while True:
        try:
            _dial(cwd).close()
        except (FileNotFoundError, ConnectionRefusedError):
            listening = False  # no socket, or nobody behind it
        except OSError:
            listening = True  # busy, or leaving: ask again
        else:
            listening = True
            _ask([], b"", stamp=b"leave")
        try:
            starting = 0 <= time.time() - os.stat(guard).st_mtime < START_GUARD
        except OSError:
            starting = False
        if not (listening or starting) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _dial(cwd: str) -> _socket.socket:
    """A connection the warm process took (it answers `+` at once); OSError otherwise."""
    where = os.path.join(run_dir(), SOCKET)
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(ACK_WAIT)
        if len(os.fsencode(where)) < 100:
            conn.connect(where)
        else:  # past the length a socket's path may have: connect from its folder
            os.chdir(os.path.dirname(where))
            try:
                conn.connect(SOCKET)
            finally:
                os.chdir(cwd)
        if conn.recv(1) != b"+":
            raise ConnectionError("the warm process did not take the call")
    except BaseException:
        conn.close()
        raise
    return conn


def _ask(
    argv: list[str], data: bytes, stamp: bytes | None = None
) -> tuple[int, bytes, bytes] | None:
    """(exit code, stdout, stderr) from the warm process; None where none answered, so the
    hook runs the ordinary way (no process, another memsync's, or one that did not take the
    call within ACK_WAIT: the hook's work is safe to run twice, a later push finds nothing)."""
    try:
        cwd = os.getcwd()
        conn = _dial(cwd)
    except OSError:  # no warm process, or the working folder is gone
        return None
    try:
        umask = os.umask(0o077)
        os.umask(umask)
        _send(
            conn,
            PROTOCOL,
            code_stamp() if stamp is None else stamp,
            "\0".join(argv).encode("utf-8", "surrogateescape"),
            os.fsencode(cwd),
            _encode_env(os.environ),
            str(umask).encode(),
            str(os.getppid()).encode(),
            data,
        )
        conn.settimeout(None)  # the hook's own work: Claude Code's timeout bounds it
        (status,) = _receive(conn, 1)
        if status != b"ok":  # another memsync's warm process: it leaves, this hook runs here
            return None
        code, out, err = _receive(conn, 3)
        return int(code), out, err
    except (OSError, ValueError):
        return None
    finally:
        conn.close()


def start() -> None:
    """Start a warm process for this MEMSYNC_HOME, detached, unless the `warm_hooks` setting
    is off or another start is under way. Never raises: a hook must not fail for it."""
    try:
        from memsync.context.config import load_settings, memsync_home

        if not available() or load_settings(memsync_home()).get("warm_hooks", True) is False:
            return
        if not _hooks_in_use():
            return  # uninstalled: the hooks of a session still running start none
        folder = os.path.abspath(run_dir())
        _private_folder(folder)
        guard = os.path.join(folder, STARTING)
        try:
            import time

            if time.time() - os.stat(guard).st_mtime < START_GUARD:
                return  # a start under way, or one that failed a moment ago
            os.unlink(guard)
        except FileNotFoundError:
            pass
        os.close(os.open(guard, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        import subprocess

        # the warm process keeps only what shapes it at start-up: each hook brings its own
        # environment, and no credential waits in this process's for hours
        home = os.path.abspath(os.path.dirname(folder))
        env = {**_startup_env(os.environ), "MEMSYNC_HOME": home}
        for name in ("HOME", "PATH", "MEMSYNC_WARM_IDLE", "SYSTEMROOT"):
            if name in os.environ:
                env[name] = os.environ[name]
        subprocess.Popen(  # our own interpreter and module, no shell
            [sys.executable, "-m", "memsync.claude.warm", folder],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except Exception as exc:
        _log_warning(f"warm hooks: could not start a warm process: {exc}")


def _hooks_in_use() -> bool:
    """memsync's hooks are installed for this user or this repository, or run from the
    memsync plugin (Claude Code sets CLAUDE_PLUGIN_ROOT for a plugin's hooks)."""
    if os.environ.get("CLAUDE_PLUGIN_ROOT"):
        return True
    from memsync.claude.install import hook_settings_files, installed_hooks
    from memsync.context.config import claude_config_dir

    commands, plugin = installed_hooks(hook_settings_files(claude_config_dir() / "settings.json"))
    return bool(commands) or plugin


def _private_folder(folder: str) -> None:
    """MEMSYNC_HOME/run, 0700: whoever can reach the socket can run hooks as this user."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)


def _log_warning(message: str, level: str = "warning") -> None:
    try:
        from memsync.claude.log import get_logger
        from memsync.context.config import memsync_home

        getattr(get_logger(memsync_home()), level)("%s", message)
    except Exception:
        pass


# --- the warm process ----------------------------------------------------------------------


NOT_PRELOADED = ("memsync.cli", "memsync.__main__", "memsync.claude.memory_tool")


def _preload() -> None:
    """Every module of memsync but the CLI's and the API memory tool's (a hook's work may
    reach any store, the merge, compaction's rules), the modules they load when first used,
    and the secret scanner's patterns compiled."""
    import codecs
    import gc
    import importlib
    import pkgutil
    import sqlite3  # noqa: F401 - merge bases; loaded on first use

    from memsync.privacy.rules import RULES
    from memsync.util.errors import ConfigError

    for info in pkgutil.walk_packages([PACKAGE], "memsync."):
        if not info.name.startswith(NOT_PRELOADED):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional package that is not installed (the API's SDK)
                continue
    for codec in ("utf-8-sig", "utf-16-le"):  # settings and payloads are read with these
        codecs.lookup(codec)
    from memsync.memory.frontmatter import _yaml

    _yaml()  # PyYAML and its loader: a third of a hook's work when it reads frontmatter
    from memsync.stores import tls

    # the CA store for this trust setting (a child with other CA variables loads its own)
    with _suppress(OSError, ConfigError):
        tls.context()
    for rule in RULES:
        rule.pattern.compiled  # noqa: B018 - compiled once, shared by every child
    gc.collect()
    gc.freeze()  # the children share these pages: no collection writes to them


def serve(folder: str) -> None:
    """Take hook calls on FOLDER/hooks.sock (MEMSYNC_HOME/run) until idle, replaced or
    stale."""
    import signal
    import time

    os.chdir(folder)
    try:
        _preload()
        listener = _bind()
    except Exception as exc:
        # every hook would start another that fails alike: hold the starts for an hour
        _log_warning(f"warm hooks: none for an hour, hooks run the ordinary way: {exc}")
        later = time.time() + HOLD
        with _suppress(OSError):
            os.utime(STARTING, (later, later))
        return
    with _suppress(OSError):
        os.unlink(STARTING)
    if listener is None:
        return
    _log_warning(f"warm hooks: process {os.getpid()} answers hooks", "info")
    stamp = code_stamp()
    idle = float(os.environ.get("MEMSYNC_WARM_IDLE") or IDLE)
    ours = os.stat(SOCKET).st_ino

    why = "told to (a hook from other code, `uninstall`, the warm_hooks setting, or a kill)"

    def leave(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, leave)
    last = checked = time.monotonic()
    born = _code_time()
    try:
        listener.settimeout(1.0)
        while True:
            _reap()
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                conn = None
            now = time.monotonic()
            if now - checked >= 1.0:
                checked = now
                if not _still_ours(ours):
                    why = "its socket was removed or taken"
                    return
                if _code_time() != born:
                    why = "memsync's files changed (an install, an upgrade, an edit)"
                    return
            if conn is None:
                if now - last > idle:
                    why = f"no hook came for {idle:g} s"
                    return
                continue
            last = now
            with conn:
                conn.settimeout(None)
                with _suppress(OSError):
                    conn.sendall(b"+")
                    if os.fork() == 0:
                        listener.close()
                        code = _child(conn, stamp)
                        from memsync.util.background import exit_now

                        exit_now(code)
    finally:
        if _still_ours(ours):
            with _suppress(OSError):
                os.unlink(SOCKET)
        _log_warning(f"warm hooks: process {os.getpid()} left: {why}", "info")


def _bind() -> socket.socket | None:
    """The listening socket; None if a warm process already answers here."""
    import socket

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(ACK_WAIT)
        probe.connect(SOCKET)
        if probe.recv(1) == b"+":
            return None  # taken: that process answers, this one leaves
    except OSError:  # none there, or one that does not answer: this one takes its place
        pass
    finally:
        probe.close()
    with _suppress(FileNotFoundError):
        os.unlink(SOCKET)  # left by a process that ended without removing it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(SOCKET)
    finally:
        os.umask(old)
    listener.listen(64)
    return listener


def _still_ours(ino: int) -> bool:
    try:
        return os.stat(SOCKET).st_ino == ino
    except OSError:
        return False


def _reap() -> None:
    with _suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _child(conn: socket.socket, stamp: bytes) -> int:
    """One hook call, in a fork of the warm process: the hook's environment, folder and
    umask, its payload on stdin, its stdout and stderr sent back. Returns the exit status."""
    import io
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        head = _receive(conn, 8)
        argv = head[2].decode("utf-8", "surrogateescape").split("\0")
        os.environ.clear()
        os.environ.update(_decode_env(head[4]))
        if head[0] != PROTOCOL or head[1] != stamp or not _setting_on():
            _send(conn, b"stale")
            # other code or environment, or turned off: the next hook starts what it needs
            os.kill(os.getppid(), signal.SIGTERM)
            return 0
        if argv == [PROBE]:  # `doctor`: this environment would be answered here
            _send(conn, b"ok", b"0", b"", b"")
            return 0
        os.chdir(os.fsdecode(head[3]))
        os.umask(int(head[5]))
        from memsync.claude import sessions

        sessions.hook_parent = int(head[6])  # who ran the hook: the client's parent
        stdin = io.TextIOWrapper(io.BytesIO(head[7]), encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        from memsync.claude.hooks import after_answer, main

        code = main(argv, stdin, out)
        _send(conn, b"ok", str(code).encode(), out.getvalue().encode(), err.getvalue().encode())
        conn.close()
        after_answer(detach=False)  # the client has the answer: Claude Code goes on
        return 0
    except BaseException:
        return 1


def _setting_on() -> bool:
    from memsync.context.config import load_settings, memsync_home

    try:
        return load_settings(memsync_home()).get("warm_hooks", True) is not False
    except Exception:
        return True


class _suppress:
    """contextlib.suppress without importing contextlib on the client's path."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, self.kinds)


if __name__ == "__main__":
    serve(sys.argv[1])
