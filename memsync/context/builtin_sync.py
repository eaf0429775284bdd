"""Claude Code's own memory sync, as the CLI decides it (2.1.330 and 2.1.332): whether it
syncs this memory dir, so that memsync never becomes a second syncer writing the same folder.

What the bundle shows (docs/claude-code.md has the detail):
- Its memory watcher syncs the auto-memory dir itself only through a `CLAUDE_MEMORY_STORES`
  entry with `"scope": "user"` (a JSON list; plain strings and `"scope": "team"` entries are
  team stores, mounted under `<memory dir>/team/<mount>/`, which memsync never syncs). Claude
  Code takes the variable from its environment, where the `env` block of any settings scope
  (managed, project local, project, user) puts it; invalid JSON turns its sync off.
- Once it has synced a folder, the folder holds its manifest `.memory-sync`
  (`{"v": 1, "partition": ...}`), left there if the variable goes away.
- An organisation's policy (`allow_memory_sync`) and server-side switches decide whether the
  watcher runs at all; memsync cannot read those, so a user-scope entry or the manifest counts
  as on, and the user is told how to choose.

The way to choose memsync anyway: the setting `sync_beside_claude_code: true`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memsync.context.config import (
    SETTINGS_FILE,
    Context,
    claude_config_dir,
    load_settings,
    locate_memory_dir,
    managed_settings_path,
    memsync_home,
)
from memsync.context.identity import find_git_root
from memsync.util.errors import UserError

STORES_ENV = "CLAUDE_MEMORY_STORES"
MANIFEST = ".memory-sync"
OVERRIDE = "sync_beside_claude_code"


def _settings_env(project_root: Path | None) -> tuple[str, Path] | None:
    """CLAUDE_MEMORY_STORES from the `env` block of the first settings scope that sets it."""
    candidates = [managed_settings_path()]
    if project_root is not None:
        candidates += [
            project_root / ".claude" / "settings.local.json",
            project_root / ".claude" / "settings.json",
        ]
    candidates.append(claude_config_dir() / "settings.json")
    for path in candidates:
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        env = data.get("env") if isinstance(data, dict) else None
        value = env.get(STORES_ENV) if isinstance(env, dict) else None
        if isinstance(value, str) and value.strip():
            return value, path
    return None


def _user_store(raw: str) -> bool:
    """Whether a CLAUDE_MEMORY_STORES value holds a store of the user's own memory."""
    try:
        stores = json.loads(raw)
    except ValueError:
        return False  # Claude Code turns its sync off on invalid JSON
    if not isinstance(stores, list):
        return False
    return any(isinstance(s, dict) and s.get("scope") == "user" for s in stores)


def detect(memory_dir: Path, project_root: Path | None = None) -> str | None:
    """Why Claude Code syncs `memory_dir` itself (a clause naming the sign), or None."""
    raw = os.environ.get(STORES_ENV, "")
    if raw.strip():
        if _user_store(raw):
            return f"{STORES_ENV} in the environment has a \"scope\": \"user\" store"
    else:
        found = _settings_env(project_root)
        if found is not None and _user_store(found[0]):
            return f"{STORES_ENV} in the env of {found[1]} has a \"scope\": \"user\" store"
    if (memory_dir / MANIFEST).is_file():
        return f"the folder holds Claude Code's sync manifest {memory_dir / MANIFEST}"
    return None


def refusal(memory_dir: Path, project_root: Path | None, settings_file: Path) -> str:
    """The one sentence memsync says instead of syncing a folder Claude Code syncs."""
    why = detect(memory_dir, project_root)
    return (
        f"Claude Code's own memory sync is on for {memory_dir} ({why}), so memsync does not "
        "sync it: two syncers would write one folder by different rules; turn one off (drop "
        f"the \"scope\": \"user\" entry from {STORES_ENV} and delete {MANIFEST} from the "
        f"folder, or `memsync uninstall`), or set \"{OVERRIDE}\": true in {settings_file} to "
        "sync it with memsync anyway"
    )


def stand_aside(ctx: Context) -> str | None:
    """The sentence, when Claude Code syncs ctx's memory dir and the user has not chosen
    memsync anyway (the setting `sync_beside_claude_code`); else None."""
    if ctx.setting(OVERRIDE) or detect(ctx.memory_dir, ctx.git_root) is None:
        return None
    return refusal(ctx.memory_dir, ctx.git_root, ctx.home / SETTINGS_FILE)


def refuse(ctx: Context) -> None:
    """Raise the sentence as a UserError (exit 1) when memsync must stand aside."""
    said = stand_aside(ctx)
    if said:
        raise UserError(said)


def refuse_install(cwd: Path) -> None:
    """`install` in `cwd`: refused with the sentence when Claude Code syncs the memory dir of
    the project there (the settings file is read for the override; no project name needed)."""
    home = memsync_home()
    if load_settings(home).get(OVERRIDE):
        return
    memory_dir = Path(
        os.environ.get("MEMSYNC_MEMORY_DIR") or locate_memory_dir(cwd.resolve()).path
    )
    root = find_git_root(cwd.resolve())
    if detect(memory_dir, root) is not None:
        raise UserError(refusal(memory_dir, root, home / SETTINGS_FILE))
