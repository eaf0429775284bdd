"""Settings and the resolved context every command runs in.

Precedence: flag > environment > settings file > default. Nothing here imports Typer, Rich
or the Azure SDK: the hook fast path resolves its context through this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from memsync.errors import ConfigError
from memsync.lean_typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

SETTINGS_FILE = "settings.json"

DEFAULTS: dict[str, Any] = {
    "remote": None,  # None → the embedded folder remote under MEMSYNC_HOME
    "project": None,  # portable project identity; None → git origin, else directory name
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
}

ENV = {
    "remote": "MEMSYNC_REMOTE",
    "project": "MEMSYNC_PROJECT",
    "device": "MEMSYNC_DEVICE",
    "sync": "MEMSYNC_SYNC",
    "model": "MEMSYNC_MODEL",
}


def memsync_home() -> Path:
    return Path(os.environ.get("MEMSYNC_HOME") or Path.home() / ".memsync").expanduser()


def load_settings(home: Path) -> dict[str, Any]:
    """The settings file merged over the defaults. A broken file is a ConfigError naming it."""
    path = home / SETTINGS_FILE
    settings = dict(DEFAULTS)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return settings
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object of settings")
    unknown = sorted(set(data) - set(DEFAULTS) - {"$schema", "memory_dir"})
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}")
    for key, value in data.items():
        default = DEFAULTS.get(key)
        if default is not None and value is not None and not _same_kind(default, value):
            kind = type(default).__name__
            raise ConfigError(f"{path}: setting {key!r} must be a {kind}, not {value!r}")
    settings.update(data)
    return settings


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
    raise ConfigError(f"{name}={value!r} must be on or off")


# --- Claude Code's memory directory -------------------------------------------------------


def claude_config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def find_git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _java_hash36(text: str) -> str:
    """Claude Code's short hash for over-long slugs: 32-bit string hash, base 36."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
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


def project_slug(project_root: Path) -> str:
    """`/Users/me/proj` → `-Users-me-proj`; over 200 characters: cut, plus a hash suffix."""
    text = str(project_root)
    slug = re.sub(r"[^A-Za-z0-9]", "-", text)
    if len(slug) <= 200:
        return slug
    return f"{slug[:200]}-{_java_hash36(text)}"


def _auto_memory_setting(project_root: Path) -> str | None:
    """`autoMemoryDirectory` from Claude Code's settings (project local, project, then user)."""
    candidates = [
        project_root / ".claude" / "settings.local.json",
        project_root / ".claude" / "settings.json",
        claude_config_dir() / "settings.json",
    ]
    for path in candidates:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        value = data.get("autoMemoryDirectory") if isinstance(data, dict) else None
        if isinstance(value, str) and value.strip():
            resolved = Path(value).expanduser()
            return str(resolved if resolved.is_absolute() else project_root / resolved)
    return None


def claude_memory_dir(cwd: Path) -> Path:
    """Where Claude Code keeps auto-memory for the project containing `cwd`."""
    root = find_git_root(cwd) or cwd
    configured = _auto_memory_setting(root)
    if configured:
        return Path(configured)
    projects = claude_config_dir() / "projects"
    slug = project_slug(root)
    candidate = projects / slug / "memory"
    if len(slug) > 200 and not candidate.exists():
        # Our hash may not match Claude Code's exactly: fall back to the one folder that shares
        # the cut prefix, if there is exactly one.
        matches = sorted(projects.glob(f"{slug[:200]}-*/memory"))
        if len(matches) == 1:
            return matches[0]
    return candidate


# --- portable project identity -----------------------------------------------------------


def _git_config_path(root: Path) -> Path | None:
    dotgit = root / ".git"
    if dotgit.is_dir():
        return dotgit / "config"
    try:
        pointer = dotgit.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not pointer.startswith("gitdir:"):
        return None
    gitdir = (root / pointer.removeprefix("gitdir:").strip()).resolve()
    common = gitdir / "commondir"
    if common.exists():
        gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
    return gitdir / "config"


def git_origin(root: Path) -> str | None:
    """The `origin` remote URL from .git/config, read directly (no git subprocess)."""
    path = _git_config_path(root)
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
        elif section == '[remote "origin"]' and re.match(r"url\s*=", stripped):
            return stripped.split("=", 1)[1].strip()
    return None


def normalise_origin(url: str) -> str:
    """`git@github.com:Me/Proj.git` and `https://github.com/Me/Proj` → `github.com-me-proj`."""
    url = url.strip()
    scp = re.match(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$", url)
    if scp:
        host, path = scp.group(1), scp.group(2)
    else:
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), parts.path
    path = re.sub(r"\.git/?$", "", path.strip("/"))
    return safe_segment(f"{host}/{path}".strip("/").lower())


def safe_segment(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return cleaned or "default"


def project_identity(cwd: Path, configured: str | None) -> str:
    if configured:
        return safe_segment(configured)
    root = find_git_root(cwd)
    if root is not None:
        origin = git_origin(root)
        if origin:
            return normalise_origin(origin)
        return safe_segment(root.name)
    return safe_segment(cwd.name)


# --- the resolved context ----------------------------------------------------------------


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

    @property
    def sync_enabled(self) -> bool:
        return bool(self.settings.get("sync", True))

    @property
    def state_dir(self) -> Path:
        key = f"{strip_query(self.remote)}\n{self.project}\n{self.memory_dir}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:10]
        return self.home / "state" / f"{self.project}-{digest}"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    def setting(self, key: str) -> Any:
        return self.settings.get(key, DEFAULTS.get(key))


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
            settings[key] = parse_bool(env_name, value) if key == "sync" else value
    if remote:
        settings["remote"] = remote
    if project:
        settings["project"] = project
    cwd = (cwd or Path.cwd()).resolve()

    chosen = memory_dir or os.environ.get("MEMSYNC_MEMORY_DIR") or settings.get("memory_dir")
    mem = Path(chosen).expanduser().resolve() if chosen else claude_memory_dir(cwd)

    remote_url = settings.get("remote") or (home / "remote").resolve().as_uri()
    return Context(
        home=home,
        memory_dir=mem,
        remote=str(remote_url),
        project=project_identity(cwd, settings.get("project")),
        device=str(settings.get("device") or socket.gethostname()),
        settings=settings,
        embedded_remote=not settings.get("remote"),
    )
