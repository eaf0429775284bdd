"""`memsync schedule`: run `memsync compact` daily, from cron or (without cron) a systemd
user timer. One entry per project, marked so install is idempotent and remove is exact."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from memsync.config import Context
from memsync.errors import UserError

MARK = "# memsync:compact:"


@dataclass
class Entry:
    backend: str  # "cron" or "systemd"
    project: str
    line: str  # the crontab line or the timer unit name


def _command(ctx: Context) -> list[str]:
    exe = shutil.which("memsync") or str(Path(sys.argv[0]).resolve())
    return [exe, "compact", "--memory-dir", str(ctx.memory_dir), "--project", ctx.project]


def _env(ctx: Context) -> str:
    return f"MEMSYNC_HOME={shlex.quote(str(ctx.home))}"


def cron_line(ctx: Context, hour: int = 4, minute: int = 17) -> str:
    log = shlex.quote(str(ctx.logs_dir / "compact.log"))
    command = " ".join(shlex.quote(part) for part in _command(ctx))
    return f"{minute} {hour} * * * {_env(ctx)} {command} >> {log} 2>&1 {MARK}{ctx.project}"


def _crontab() -> str | None:
    return os.environ.get("MEMSYNC_CRONTAB") or shutil.which("crontab")


def _read_cron(crontab: str) -> str:
    proc = subprocess.run([crontab, "-l"], capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else ""  # "no crontab for user" is empty


def _write_cron(crontab: str, text: str) -> None:
    proc = subprocess.run([crontab, "-"], input=text, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UserError(f"crontab refused the new table: {proc.stderr.strip() or proc.returncode}")


def _unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def _unit(ctx: Context) -> str:
    from memsync.config import safe_segment

    return f"memsync-compact-{safe_segment(ctx.project)}"


def show(ctx: Context) -> list[Entry]:
    entries = []
    crontab = _crontab()
    if crontab:
        for line in _read_cron(crontab).splitlines():
            if MARK in line:
                entries.append(Entry("cron", line.split(MARK, 1)[1].strip(), line))
    for timer in sorted(_unit_dir().glob("memsync-compact-*.timer")):
        entries.append(Entry("systemd", timer.stem.removeprefix("memsync-compact-"), timer.stem))
    return entries


def install(ctx: Context) -> tuple[bool, str]:
    """(changed, where). Idempotent: the same entry twice changes nothing."""
    crontab = _crontab()
    if crontab:
        line = cron_line(ctx)
        current = _read_cron(crontab)
        mine = MARK + ctx.project
        lines = [x for x in current.splitlines() if not x.endswith(mine)]
        if line in current.splitlines():
            return False, "crontab"
        _write_cron(crontab, "\n".join([*lines, line]) + "\n")
        return True, "crontab"
    return _install_systemd(ctx)


def _install_systemd(ctx: Context) -> tuple[bool, str]:
    unit_dir = _unit_dir()
    name = _unit(ctx)
    command = " ".join(shlex.quote(part) for part in _command(ctx))
    service = (
        "[Unit]\nDescription=memsync compaction for " + ctx.project + "\n\n"
        "[Service]\nType=oneshot\nEnvironment=" + _env(ctx) + "\nExecStart=" + command + "\n"
    )
    timer = (
        "[Unit]\nDescription=Daily memsync compaction\n\n"
        "[Timer]\nOnCalendar=*-*-* 04:17:00\nPersistent=true\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )
    files = {unit_dir / f"{name}.service": service, unit_dir / f"{name}.timer": timer}
    if all(p.exists() and p.read_text() == text for p, text in files.items()):
        return False, str(unit_dir)
    unit_dir.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text)
    systemctl = shutil.which("systemctl")
    if systemctl:
        subprocess.run([systemctl, "--user", "daemon-reload"], capture_output=True, check=False)
        subprocess.run(
            [systemctl, "--user", "enable", "--now", f"{name}.timer"],
            capture_output=True,
            check=False,
        )
    return True, str(unit_dir)


def remove(ctx: Context) -> list[str]:
    removed = []
    crontab = _crontab()
    mine = MARK + ctx.project
    if crontab:
        current = _read_cron(crontab)
        kept = [x for x in current.splitlines() if not x.endswith(mine)]
        if len(kept) != len(current.splitlines()):
            _write_cron(crontab, "\n".join(kept) + ("\n" if kept else ""))
            removed.append("crontab entry")
    name = _unit(ctx)
    for suffix in (".timer", ".service"):
        path = _unit_dir() / f"{name}{suffix}"
        if path.exists():
            if suffix == ".timer" and shutil.which("systemctl"):
                subprocess.run(
                    ["systemctl", "--user", "disable", "--now", path.name],
                    capture_output=True,
                    check=False,
                )
            path.unlink()
            removed.append(str(path))
    return removed
