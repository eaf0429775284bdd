"""Settings and the resolved context every command runs in.

Precedence: flag > environment > settings file > default. Nothing here imports Typer, Rich
or the Azure SDK: the hook fast path resolves its context through this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import unicodedata
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from memsync.context.identity import Identity, find_git_root, resolve_identity
from memsync.util.errors import ConfigError, describe_os_error

if TYPE_CHECKING:
    from typing import Any

SETTINGS_FILE = "settings.json"

DEFAULTS: dict[str, Any] = {
    "remote": None,  # None → the embedded folder remote under MEMSYNC_HOME
    "project": None,  # portable project identity; None → worked out, see identity.py
    "device": None,  # None → host name
    "sync": True,
    "max_file_bytes": 1024 * 1024,
    "concurrency": 16,
    "pull_timeout": 5.0,
    "history_versions": 20,
    "digest_on_session_end": False,
    "digest_min_turns": 6,
    "model": "claude-sonnet-5-5",
    "primer_max_chars": 9000,
    "sync_beside_claude_code": False,  # sync a folder Claude Code's own memory sync syncs
    # the PostToolUse hook pushes a memory write after answering Claude Code (False), or
    # before, holding the session for the push (True): docs/claude-code.md
    "hook_push_wait": False,
    # hooks are answered by a warm process with memsync imported (claude/warm.py)
    "warm_hooks": True,
}

ENV = {
    "remote": "MEMSYNC_REMOTE",
    "project": "MEMSYNC_PROJECT",
    "device": "MEMSYNC_DEVICE",
    "sync": "MEMSYNC_SYNC",
    "model": "MEMSYNC_MODEL",
    "hook_push_wait": "MEMSYNC_HOOK_PUSH_WAIT",
    "warm_hooks": "MEMSYNC_WARM_HOOKS",
}


def memsync_home() -> Path:
    return Path(os.environ.get("MEMSYNC_HOME") or Path.home() / ".memsync").expanduser()


def load_settings(home: Path) -> dict[str, Any]:
    """The settings file merged over the defaults. A broken file is a ConfigError naming it."""
    path = home / SETTINGS_FILE
    settings = dict(DEFAULTS)
    try:
        raw = path.read_text(encoding="utf-8-sig")  # Notepad writes a byte-order mark
    except FileNotFoundError:
        return settings
    except OSError as exc:
        raise ConfigError(f"{path}: {describe_os_error(exc, '').lstrip(': ')}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON at line {exc.lineno} ({exc.msg}); fix the file"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: must hold a JSON object of settings (see settings.example.json)"
        )
    unknown = sorted(set(data) - set(DEFAULTS) - {"$schema", "memory_dir"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting(s) {', '.join(unknown)}; fix the name or remove it "
            f"(the settings are {', '.join(sorted(DEFAULTS))})"
        )
    for key, value in data.items():
        default = DEFAULTS.get(key)
        if default is not None and value is not None and not _same_kind(default, value):
            kind = type(default).__name__
            raise ConfigError(
                f"{path}: setting {key!r} must be a {kind}, not {value!r}; fix the file"
            )
        if default is None and value is not None and not isinstance(value, str):
            raise ConfigError(
                f"{path}: setting {key!r} must be a string, not {value!r}; fix the file"
            )
        problem = _out_of_range(key, value)
        if problem:
            raise ConfigError(f"{path}: setting {key!r} {problem}, not {value!r}; fix the file")
    settings.update(data)
    return settings


# (lowest, highest) a numeric setting may take; None: no bound on that side
_RANGES: dict[str, tuple[float | None, float | None]] = {
    "max_file_bytes": (1, None),
    "concurrency": (1, 256),
    "pull_timeout": (0.1, 600),
    "history_versions": (0, None),
    "digest_min_turns": (0, None),
    "primer_max_chars": (1, 10000),
}


def _out_of_range(key: str, value: object) -> str | None:
    """Why a numeric setting's value cannot work, or None."""
    if key not in _RANGES or not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    low, high = _RANGES[key]
    if value != value or value in (float("inf"), float("-inf")):  # NaN, Infinity: JSON allows
        return "must be a number"
    if isinstance(DEFAULTS[key], int) and not float(value).is_integer():
        return "must be a whole number"
    if low is not None and value < low:
        return f"must be at least {low:g}"
    if high is not None and value > high:
        return f"must be at most {high:g}"
    return None


def _same_kind(default: object, value: object) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, type(default))


def parse_bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "on", "true", "yes"):
        return True
    if lowered in ("0", "off", "false", "no"):
        return False
    raise ConfigError(f"{name}={value!r} must be on or off; set it to on or off, or unset it")


# --- Claude Code's memory directory -------------------------------------------------------
# Resolved the way Claude Code 2.1.330 resolves it (docs/claude-code.md has the rules and where
# in its bundle they are): `autoMemoryDirectory` from the first settings scope that sets it,
# honoured only when absolute or `~/`; else <config dir>/projects/<slug>/memory, where the slug
# comes from the main repository's root (a git worktree shares it) or the directory itself, and
# CLAUDE_CODE_PROJECT_DIR_NAME replaces it when CLAUDE_CONFIG_DIR is set.

SLUG_MAX = 200
_DIR_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_RESERVED = re.compile(r"con|prn|aux|nul|com[0-9]|lpt[0-9]", re.IGNORECASE)


def claude_config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def _read_text(path: Path) -> str | None:
    # not fsutil.read_text_if_there: this runs on the hooks' fast path, which never imports fsutil
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def main_worktree(root: Path) -> Path:
    """The main repository's root for a linked git worktree (`.git` is a file whose gitdir
    lives in <main>/.git/worktrees/<name> and points back here); `root` itself otherwise,
    including submodules. The same checks, in the same order, as Claude Code's."""
    text = _read_text(root / ".git")
    if text is None or not text.startswith("gitdir:"):
        return root
    gitdir = root / text.removeprefix("gitdir:").strip()
    common = _read_text(gitdir / "commondir")
    if not common:
        return root
    common_dir = Path(os.path.normpath(gitdir / common))
    if Path(os.path.normpath(gitdir.parent)) != common_dir / "worktrees":
        return root
    back = _read_text(gitdir / "gitdir")
    if not back or os.path.realpath(gitdir / back) != os.path.realpath(root / ".git"):
        return root
    if common_dir.name != ".git":  # a bare repository's worktree: keyed by the bare repo
        return common_dir
    return common_dir.parent


def _java_hash36(text: str) -> str:
    """Claude Code's short hash for over-long slugs: JavaScript's 32-bit string hash over UTF-16
    code units (`(h << 5) - h + c | 0`), absolute value, base 36."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    n = abs(h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def project_slug(project_root: PurePath | str) -> str:
    """`/Users/me/proj` → `-Users-me-proj`, `C:\\Users\\me\\proj` → `C--Users-me-proj`: every
    character outside [A-Za-z0-9] (each UTF-16 unit) becomes `-`; over 200 characters, the
    first 200 plus `-` and a hash of the whole path."""
    text = str(project_root)
    units = len(text.encode("utf-16-le", "surrogatepass")) // 2
    slug = re.sub(r"[^A-Za-z0-9]", lambda m: "-" * (2 if ord(m.group()) > 0xFFFF else 1), text)
    if units <= SLUG_MAX:
        return slug
    return f"{slug[:SLUG_MAX]}-{_java_hash36(text)}"


def project_dir_name_ignored() -> str | None:
    """Why a set CLAUDE_CODE_PROJECT_DIR_NAME is not used (Claude Code ignores it too), else
    None: for status and doctor."""
    name = os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME")
    if not name:
        return None
    if not os.environ.get("CLAUDE_CONFIG_DIR"):
        why = "it applies only when CLAUDE_CONFIG_DIR is set"
    elif not _DIR_NAME.fullmatch(name):
        why = "it must be 1-64 characters of A-Z a-z 0-9 _ -"
    elif _RESERVED.fullmatch(name):
        why = "it is a Windows device name"
    else:
        return None
    return f"CLAUDE_CODE_PROJECT_DIR_NAME {name!r} is ignored ({why}); "


def project_dir_name() -> str | None:
    """CLAUDE_CODE_PROJECT_DIR_NAME, honoured (as by Claude Code) only with CLAUDE_CONFIG_DIR set
    and when it is a plain name of 1-64 [A-Za-z0-9_-] that is not a Windows device name."""
    name = os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME")
    if not os.environ.get("CLAUDE_CONFIG_DIR") or not name:
        return None
    if not _DIR_NAME.fullmatch(name) or _RESERVED.fullmatch(name):
        return None
    return name


def check_auto_memory(
    value: object, home: str, windows: bool = os.name == "nt"
) -> tuple[str | None, str]:
    """An `autoMemoryDirectory` value as Claude Code reads it: (the accepted path, "") or
    (None, why Claude Code ignores it). `~/` (or `~\\`) expands to the home directory and may
    not climb out of it; the result must be absolute, not a bare drive (`C:`), not a network
    path, with no NUL."""
    import ntpath
    import posixpath

    paths = ntpath if windows else posixpath
    if not isinstance(value, str) or not value:
        return None, "it is not a non-empty string"
    text = value
    if text.startswith(("~/", "~\\")):
        rest = text[2:]
        inner = paths.normpath(rest or ".")
        if inner == ".":
            return None, "it names the home directory itself"
        if inner == ".." or inner.startswith(("../", "..\\")):
            return None, "it climbs out of the home directory (`~/..`)"
        text = paths.join(home, rest)
    cleaned = paths.normpath(text).rstrip("/\\")
    if "\x00" in cleaned:
        return None, "it holds a NUL character"
    if re.match(r"[\\/]{2}", cleaned):
        return None, "it is a network path"
    if re.fullmatch(r"[A-Za-z]:", cleaned):
        return None, "it is a bare drive"
    if not paths.isabs(cleaned):
        return None, "it is relative (only an absolute path or ~/ is accepted)"
    if len(cleaned) < 3:
        return None, "it is shorter than 3 characters"
    return unicodedata.normalize("NFC", cleaned), ""


def managed_settings_path() -> Path:
    """Where an administrator's managed settings live (the policy scope)."""
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode/managed-settings.json")
    if os.name == "nt":
        return Path("C:/Program Files/ClaudeCode/managed-settings.json")
    return Path("/etc/claude-code/managed-settings.json")


def _auto_memory_setting(project_root: Path) -> tuple[str, Path] | None:
    """(value, settings file) of `autoMemoryDirectory` from the first scope that sets it:
    managed, project local, project, then user. Claude Code reads the two project scopes only
    in a trusted workspace (always with -p); memsync cannot know the trust, so it reads them."""
    candidates = [
        managed_settings_path(),
        project_root / ".claude" / "settings.local.json",
        project_root / ".claude" / "settings.json",
        claude_config_dir() / "settings.json",
    ]
    for path in candidates:
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        value = data.get("autoMemoryDirectory") if isinstance(data, dict) else None
        if value is not None:  # the first scope that sets it decides, valid or not
            return value, path
    return None


def default_memory_dir(config_dir: PurePath, project_root: PurePath) -> PurePath:
    """<config dir>/projects/<slug>/memory, the slug from the project root (or the pinned name)."""
    slug = project_dir_name() or project_slug(project_root)
    return config_dir / "projects" / slug / "memory"


class MemoryDir(NamedTuple):
    path: Path
    reason: str  # one line: why this folder, for status and doctor


def locate_memory_dir(cwd: Path) -> MemoryDir:
    """Where Claude Code keeps auto-memory for the project containing `cwd`, and why."""
    git_root = find_git_root(cwd)
    root = git_root or cwd
    setting = _auto_memory_setting(root)
    if setting is not None:
        value, source = setting
        accepted, problem = check_auto_memory(value, str(Path.home()))
        if accepted:
            return MemoryDir(Path(accepted), f"autoMemoryDirectory in {source}")
        ignored = f"autoMemoryDirectory {value!r} in {source} is ignored ({problem}); "
    else:
        ignored = ""
    ignored += project_dir_name_ignored() or ""
    base = main_worktree(git_root) if git_root else cwd
    config_dir = Path(os.environ.get("CLAUDE_CODE_REMOTE_MEMORY_DIR") or claude_config_dir())
    path = Path(unicodedata.normalize("NFC", str(default_memory_dir(config_dir, base))))
    if git_root is None:
        why = f"the slug of {cwd} (not in a git repository)"
    elif base != git_root:
        why = f"the slug of the main repository {base} (a worktree shares its memory)"
    else:
        why = f"the slug of the git repository {base}"
    if project_dir_name():
        why = "CLAUDE_CODE_PROJECT_DIR_NAME with CLAUDE_CONFIG_DIR set"
    return MemoryDir(path, ignored + why)


def default_device(home: Path) -> str:
    """This machine's name for conflicts, forgets and purges: the host name and a short id
    made once per MEMSYNC_HOME. Host names alone repeat (two laptops called `vm`, a cloned
    image), and messages naming where a conflict was merged or who purged would not tell
    them apart (which conflicts a device takes in is decided by id, not by this name)."""
    path = home / "device-id"
    try:
        suffix = path.read_text(encoding="utf-8").strip()
    except OSError:
        suffix = ""
    if not re.fullmatch(r"[0-9a-f]{6}", suffix):
        suffix = os.urandom(3).hex()
        try:
            from memsync.util.fsutil import atomic_write, private_dir

            private_dir(home)
            # no fsync: a name lost to a power cut is made again, as on first use
            atomic_write(path, suffix.encode(), sync=False, sync_dir=False)
        except OSError:
            pass  # a read-only home: this run's name only; a setting can fix it for good
    return f"{host_name()}-{suffix}"


def host_name() -> str:
    """The machine's network name. `os.uname` gives it without importing `socket`, which
    every command would otherwise pay for; Windows has no `uname`."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def state_dir_for(home: Path, remote: str, project: str, memory_dir: Path) -> Path:
    """This device's state for one (remote, project, memory dir). One remote has one state
    however its URL is spelled (`file:///x/remote/`, `file:/x/remote`, `…/./remote`): the
    key is the canonical spelling's."""
    return _state_dir(home, canonical_remote(remote), project, memory_dir)


def _state_dir(home: Path, remote_key: str, project: str, memory_dir: Path) -> Path:
    key = f"{remote_key}\n{project}\n{memory_dir}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:_DIGITS]
    return home / "state" / f"{project}-{digest}"


_DIGITS = 10


def state_folders(home: Path, project: str) -> list[Path]:
    """Every state folder of `project` on this device, one per remote (and memory dir) it
    synced the project with, by `_state_dir`'s naming."""
    pattern = re.compile(re.escape(project) + f"-[0-9a-f]{{{_DIGITS}}}")
    folder = home / "state"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name) and p.is_dir())


def canonical_remote(url: str) -> str:
    """One spelling per remote, without its query: a folder as `Path.as_uri()` writes it
    (the embedded remote's own spelling), with no trailing slash, `.` or doubled `/`; a
    blob URL with its scheme and host in lower case and no trailing slash."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "file":
        from memsync.util.portable import file_url_path

        try:
            path = file_url_path(parts.netloc, parts.path)
        except ValueError:
            return strip_query(url)
        if os.path.isabs(path):
            return Path(os.path.normpath(path)).as_uri()
        return strip_query(url)
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, parts.netloc.lower(), path, "", ""))


# --- the resolved context ----------------------------------------------------------------


def largest_file(ctx: Context) -> int:
    """The largest memory file to sync: memsync's own limit (`max_file_bytes`), or the remote's
    where it is lower (a memory store holds 100 kB a memory), so that a file the remote cannot
    hold is refused by every check that refuses a file too large, merges included. The store
    module is loaded only for such a remote: a hook on another pays nothing."""
    own = int(ctx.setting("max_file_bytes"))
    if urlsplit(ctx.remote).scheme == "memstore":
        from memsync.stores.memstore import MAX_CONTENT

        return min(own, MAX_CONTENT)
    return own


def strip_query(url: str) -> str:
    """The URL without its query (SAS tokens live there): safe for display and for keys."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class Context(NamedTuple):
    """Everything a command needs, resolved once."""

    home: Path
    memory_dir: Path
    remote: str
    project: str
    device: str
    settings: dict[str, Any]
    embedded_remote: bool = False  # the default folder remote under MEMSYNC_HOME
    memory_dir_reason: str = ""  # why this memory dir (status, doctor)
    project_source: str = "configured"  # how `project` was found (see identity.py)
    fingerprint: str | None = None  # the origin or first commit, checked against the remote
    other_origin: str | None = None  # the origin's name when an earlier name won over it
    git_root: Path | None = None  # the repository the project lives in, if any

    @property
    def identity(self) -> Identity:
        return Identity(self.project, self.project_source, self.fingerprint, self.other_origin)

    @property
    def sync_enabled(self) -> bool:
        return bool(self.settings.get("sync", True))

    @property
    def state_dir(self) -> Path:
        return state_dir_for(self.home, self.remote, self.project, self.memory_dir)

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    def setting(self, key: str) -> Any:
        return self.settings.get(key, DEFAULTS.get(key))


def check_folder_remote(url: str) -> None:
    """A file: remote must name a folder by absolute path. A relative one would depend on
    the directory memsync runs in, and a regular file can never hold memory: both are a
    mistake in the setting, not an outage to queue work for. An object store's URL is held
    to `check_remote_path` (its store's parser checks the same, for callers of open_store)."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https", "s3") and parts.netloc:
        from memsync.stores.base import check_remote_path

        check_remote_path(url, parts.path, strip_query(url))  # before any state is made for it
    if parts.scheme in ("http", "https", "memory", "memstore", "s3") and (
        parts.netloc or parts.path
    ):
        return
    if parts.scheme != "file":
        raise ConfigError(
            f"the remote {url!r} is not a file:/// folder or an Azure Blob URL "
            "(https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX), an S3 URL "
            "(s3://BUCKET/PREFIX) nor a memory store (memstore://memstore_ID[/PREFIX]); fix "
            "--remote, MEMSYNC_REMOTE or the remote setting"
        )
    from memsync.util.portable import file_url_path

    where = "--remote, MEMSYNC_REMOTE or the remote setting"
    try:
        path = file_url_path(parts.netloc, parts.path)  # a Windows drive or share too
    except ValueError:
        path = ""  # a host in a POSIX file: URL
    if not os.path.isabs(path):
        raise ConfigError(
            f"the remote {url!r} is not an absolute folder URL; use file:///absolute/path "
            f"in {where}"
        )
    existing = Path(path)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the nearest part that is there
    if not existing.is_dir():
        raise ConfigError(
            f"the remote {url!r}: {existing} is a file, not a folder; point {where} at a folder"
        )


def resolve(
    memory_dir: str | os.PathLike[str] | None = None,
    remote: str | None = None,
    project: str | None = None,
    cwd: Path | None = None,
) -> Context:
    """Resolve the context: flag > environment > settings file > default."""
    home = memsync_home()
    settings = load_settings(home)
    for key, env_name in ENV.items():
        value = os.environ.get(env_name)
        if value:
            settings[key] = (
                parse_bool(env_name, value) if isinstance(DEFAULTS[key], bool) else value
            )
    if remote:
        settings["remote"] = remote
    if project:
        settings["project"] = project
    cwd = (cwd or Path.cwd()).resolve()

    chosen = memory_dir or os.environ.get("MEMSYNC_MEMORY_DIR") or settings.get("memory_dir")
    if chosen:
        located = MemoryDir(
            Path(chosen).expanduser(), "set by --memory-dir, MEMSYNC_MEMORY_DIR or settings"
        )
    else:
        located = locate_memory_dir(cwd)
    # One canonical path keys the state, however it was spelled (~/.claude behind a symlink).
    mem = located.path.resolve()

    remote_url = str(settings.get("remote") or (home / "remote").resolve().as_uri())
    check_folder_remote(remote_url)
    identity = resolve_identity(cwd, settings.get("project"), mem, home)
    return Context(
        home=home,
        memory_dir=mem,
        remote=remote_url,
        project=identity.name,
        device=str(settings.get("device") or default_device(home)),
        settings=settings,
        embedded_remote=not settings.get("remote"),
        memory_dir_reason=located.reason,
        project_source=identity.source,
        fingerprint=identity.fingerprint,
        other_origin=identity.other_origin,
        git_root=find_git_root(cwd),
    )
