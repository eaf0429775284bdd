"""Which Claude Code sessions are live on this machine, for the session-start primer.

Every session-start records its session id with the pid of the Claude Code process that runs
it (the hook's parent, past any shell Claude Code ran the hook through); session-end removes
it. A later session-start looks at the others: one whose process still runs is a concurrent
session, not a crash; one whose process is gone without a session-end ended uncleanly (a kill,
a crash, a closed terminal), so its unsynced writes must be pushed now. Several sessions may
start at once: the record is read-modified-written under its own small lock.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from memsync.util.portable import MAX_PID

_SHELLS = {"sh", "bash", "dash", "zsh", "fish", "ksh", "busybox", "cmd.exe", "pwsh", "powershell"}
_UNKNOWN_PID_STALE = 3 * 24 * 3600  # without a pid check, a record this old counts as ended


class Ended(NamedTuple):
    """A session that started here and is gone without a session-end."""

    session_id: str
    started: float


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(command name, parent pid, start time) of `pid` from /proc; None off Linux or if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return name, int(fields[1]), fields[19]


# the process that started this hook: its parent, or in a warm process (claude/warm.py) the
# parent of the client that handed the hook over
hook_parent: int | None = None


def claude_pid() -> tuple[int, str | None]:
    """(pid, start time or None) of the process that ran this hook, skipping shells."""
    pid = hook_parent or os.getppid()
    for _ in range(4):
        info = _stat(pid)
        if info is None:
            return pid, None
        name, parent, start = info
        if name not in _SHELLS or parent <= 1:
            return pid, start
        pid = parent
    info = _stat(pid)
    return pid, info[2] if info else None


def alive(record: dict[str, Any], now: float) -> bool | None:
    """Is the session's process still running? None when that cannot be told."""
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 1 or pid > MAX_PID:  # os.kill: OverflowError
        return None
    if sys.platform == "win32":
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return None
    start = record.get("pid_start")
    if start is not None:
        info = _stat(pid)
        return info is not None and info[2] == start  # a reused pid is another process
    return now - float(record.get("at") or 0) < _UNKNOWN_PID_STALE


class Sessions:
    """sessions.json in a project's state dir."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "sessions.json"
        self.lock = state_dir / "sessions.lock"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        live = data.get("live")
        data["live"] = live if isinstance(live, dict) else {}
        return data

    def _write(self, data: dict[str, Any]) -> None:
        from memsync.util.fsutil import atomic_write, private_dir

        private_dir(self.path.parent)
        # atomic, not flushed to disk: a record lost with the machine's power only makes the
        # next session-start pull instead of sync, and the next Stop hook pushes what is left
        atomic_write(self.path, json.dumps(data, sort_keys=True).encode(), sync=False)

    def _update(self, change: Any) -> Any:
        from memsync.util.fsutil import file_lock, private_dir

        private_dir(self.path.parent)
        with file_lock(self.lock, timeout=5):
            data = self._read()
            out = change(data)
            self._write(data)
            return out

    def ended_uncleanly(self, session_id: str) -> list[Ended]:
        """Other sessions recorded as live whose process is gone (or unknowable and old)."""
        now = time.time()
        found = []
        for sid, record in self._read()["live"].items():
            if sid == session_id or not isinstance(record, dict):
                continue
            state = alive(record, now)
            if state is False or (state is None and record.get("pid") is None):
                found.append(Ended(sid, float(record.get("at") or 0)))
        return found

    def start(self, session_id: str, source: str) -> None:
        """Record this session as live (a resumed or compacted session keeps its record, with
        the pid of the process that runs it now)."""
        pid, pid_start = claude_pid()

        def change(data: dict[str, Any]) -> None:
            old = data["live"].get(session_id)
            at = old.get("at") if isinstance(old, dict) and source == "compact" else None
            data["live"][session_id] = {"at": at or time.time(), "pid": pid, "pid_start": pid_start}

        self._update(change)

    def forget(self, session_ids: list[str]) -> None:
        """Drop sessions whose unclean end was handled."""

        def change(data: dict[str, Any]) -> None:
            for sid in session_ids:
                data["live"].pop(sid, None)

        self._update(change)

    def end(self, session_id: str, reason: str) -> None:
        def change(data: dict[str, Any]) -> None:
            data["live"].pop(session_id, None)
            data["last_end"] = {"session_id": session_id, "at": time.time(), "reason": reason}

        self._update(change)
