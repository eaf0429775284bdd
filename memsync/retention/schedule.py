"""`memsync schedule`: run `memsync compact` daily, with the scheduler each platform has.

- macOS: a launchd agent, `~/Library/LaunchAgents/dev.memsync.compact.<project>.plist`;
- Windows: a Task Scheduler task `\\memsync\\compact-<project>`, created from an XML file;
- Linux and other Unix: a crontab line, else (no crontab) a systemd user timer.

`MEMSYNC_SCHEDULER=cron|systemd|launchd|schtasks` picks one explicitly. One entry per project,
marked, so install is idempotent and remove exact. Every entry runs one exec-form command with
everything the installing command resolved — `MEMSYNC_HOME`, the memory dir, the remote,
the project identity and the device's name — as arguments, never read again from an
environment the scheduler does not have."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memsync.context.config import Context
from memsync.context.identity import safe_segment
from memsync.util.errors import UserError

MARK = "# memsync:compact:"
HOUR, MINUTE = 4, 17
BACKENDS = ("cron", "systemd", "launchd", "schtasks")
LAUNCHD_PREFIX = "dev.memsync.compact."
TASK_FOLDER = "\\memsync\\"


@dataclass
class Entry:
    backend: str  # one of BACKENDS
    project: str
    line: str  # what is installed: the crontab line, the unit, plist or task name


@dataclass
class Job:
    """What the schedule runs, fixed when it is installed."""

    project: str
    argv: list[str]
    log: Path

    @property
    def slug(self) -> str:
        return safe_segment(self.project)


def job(ctx: Context) -> Job:
    """The compaction command for this context: absolute executable, and the home, memory
    dir, remote, project and device name the installing command resolved."""
    argv = [
        *_executable(),
        "compact",
        "--home",
        str(ctx.home),
        "--memory-dir",
        str(ctx.memory_dir),
        "--remote",
        ctx.remote,
        "--project",
        ctx.project,
        "--device",  # a name from MEMSYNC_DEVICE, which the scheduler does not have either
        ctx.device,
    ]
    return Job(ctx.project, argv, ctx.logs_dir / "compact.log")


def _executable() -> list[str]:
    """The memsync beside this interpreter (the venv it was installed in), else the one on
    PATH, else this interpreter with `-m memsync`: never a bare name a scheduler's PATH may
    not resolve."""
    name = "memsync.exe" if sys.platform == "win32" else "memsync"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("memsync")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "memsync"]


def backend() -> str:
    chosen = os.environ.get("MEMSYNC_SCHEDULER", "").strip().lower()
    if chosen:
        if chosen not in BACKENDS:
            raise UserError(
                f"MEMSYNC_SCHEDULER={chosen!r} is not one of {', '.join(BACKENDS)}; "
                "unset it to use this platform's scheduler"
            )
        return chosen
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform == "win32":
        return "schtasks"
    return "cron" if _crontab() else "systemd"


def _family() -> list[str]:
    """The schedulers an entry may be in here, the one to use first. On Linux the choice
    between cron and systemd follows what is installed, which can change (a crontab package
    added later): an entry made with either is still shown, moved and removed."""
    chosen = backend()
    if chosen in _UNIX:
        return [chosen, *(b for b in _UNIX if b != chosen)]
    return [chosen]


def credential_warning(ctx: Context, environ: Mapping[str, str] | None = None) -> str | None:
    """What to say when the scheduled job will lack the Azure credential this shell has:
    schedulers pass none of the environment, so a key or connection string there is not the
    job's (a SAS token in the URL is written into the job)."""
    environ = os.environ if environ is None else environ
    if not ctx.remote.startswith(("http://", "https://")) or "?" in ctx.remote:
        return None
    found = [k for k in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY") if environ.get(k)]
    if not found:
        return None
    return (
        f"the scheduled job does not get {' or '.join(found)} (schedulers pass no environment), "
        "so it will fail with \"no Azure credential found\" unless `az login` works for it "
        "(DefaultAzureCredential); give the remote with a SAS token in its URL instead, or "
        "read $MEMSYNC_HOME/logs/compact.log after its first run"
    )


def install(ctx: Context) -> tuple[bool, str]:
    """(changed, where). Idempotent: the same entry twice changes nothing; an entry for the
    project in the other Linux scheduler is moved, never doubled."""
    from memsync.util.fsutil import private_dir

    j = job(ctx)
    private_dir(j.log.parent)  # cron's and launchd's redirection need the folder to exist
    first, *others = _family()
    moved = [gone for other in others for gone in _BACKENDS[other][2](j)]
    changed, where = _BACKENDS[first][0](j)
    return changed or bool(moved), where


def show(ctx: Context) -> list[Entry]:
    return [entry for name in _family() for entry in _BACKENDS[name][1]()]


def remove(ctx: Context) -> list[str]:
    j = job(ctx)
    return [gone for name in _family() for gone in _BACKENDS[name][2](j)]


_UNIX = ("cron", "systemd")


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise UserError(f"{what} could not be run ({exc.strerror}): {argv[0]}") from None


def _write_private(path: Path, data: bytes) -> None:
    from memsync.util.fsutil import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, 0o600)  # it may hold a remote URL with a SAS token


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise UserError(f"{name} is not on PATH; it is needed to schedule compaction here")
    return found


# --- cron ---------------------------------------------------------------------------------


def cron_line(j: Job) -> str:
    # `%` ends a cron command (the rest becomes its stdin) unless escaped; URLs carry them
    command = " ".join(shlex.quote(part) for part in j.argv).replace("%", "\\%")
    log = shlex.quote(str(j.log)).replace("%", "\\%")
    return f"{MINUTE} {HOUR} * * * {command} >> {log} 2>&1 {MARK}{j.project}"


def cron_command(line: str) -> str:
    """The shell command of a crontab line written by cron_line, as cron hands it to sh."""
    fields = line.split(MARK, 1)[0].split(None, 5)
    return fields[5].replace("\\%", "%")


def _crontab() -> str | None:
    return os.environ.get("MEMSYNC_CRONTAB") or shutil.which("crontab")


def _read_cron(crontab: str) -> str:
    proc = _run([crontab, "-l"], "crontab")
    return proc.stdout if proc.returncode == 0 else ""  # "no crontab for user" is empty


def _write_cron(crontab: str, text: str) -> None:
    try:
        proc = subprocess.run(
            [crontab, "-"], input=text, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise UserError(f"crontab could not be run ({exc.strerror}): {crontab}") from None
    if proc.returncode != 0:
        raise UserError(f"crontab refused the new table: {proc.stderr.strip() or proc.returncode}")


def _cron_install(j: Job) -> tuple[bool, str]:
    crontab = _crontab() or _tool("crontab")
    line = cron_line(j)
    current = _read_cron(crontab).splitlines()
    if line in current:
        return False, "crontab"
    mine = MARK + j.project
    kept = [x for x in current if not x.endswith(mine)]
    _write_cron(crontab, "\n".join([*kept, line]) + "\n")
    return True, "crontab"


def _cron_show() -> list[Entry]:
    crontab = _crontab()
    if not crontab:
        return []
    return [
        Entry("cron", line.split(MARK, 1)[1].strip(), line)
        for line in _read_cron(crontab).splitlines()
        if MARK in line
    ]


def _cron_remove(j: Job) -> list[str]:
    crontab = _crontab()
    if not crontab:
        return []
    current = _read_cron(crontab).splitlines()
    mine = MARK + j.project
    kept = [x for x in current if not x.endswith(mine)]
    if len(kept) == len(current):
        return []
    _write_cron(crontab, "\n".join(kept) + ("\n" if kept else ""))
    return ["crontab entry"]


# --- systemd user timer -------------------------------------------------------------------


def _unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def _systemd_quote(arg: str) -> str:
    """One ExecStart argument: double-quoted, with systemd's specifier (%) and variable ($)
    expansion escaped."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def systemd_units(j: Job) -> dict[str, str]:
    """{file name: text} of the service and timer."""
    name = f"memsync-compact-{j.slug}"
    service = (
        f"[Unit]\nDescription=memsync compaction for {j.project}\n\n"
        "[Service]\nType=oneshot\n"
        f"ExecStart={' '.join(_systemd_quote(a) for a in j.argv)}\n"
        f"StandardOutput=append:{j.log}\nStandardError=append:{j.log}\n"
    )
    timer = (
        f"[Unit]\nDescription=Daily memsync compaction for {j.project}\n\n"
        f"[Timer]\nOnCalendar=*-*-* {HOUR:02}:{MINUTE:02}:00\nPersistent=true\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )
    return {f"{name}.service": service, f"{name}.timer": timer}


def _systemd_install(j: Job) -> tuple[bool, str]:
    unit_dir = _unit_dir()
    files = {unit_dir / n: text for n, text in systemd_units(j).items()}
    if all(p.exists() and p.read_text(encoding="utf-8") == t for p, t in files.items()):
        return False, str(unit_dir)
    for path, text in files.items():
        _write_private(path, text.encode())
    systemctl = shutil.which("systemctl")
    if systemctl:
        timer = next(p.name for p in files if p.suffix == ".timer")
        _run([systemctl, "--user", "daemon-reload"], "systemctl")
        _run([systemctl, "--user", "enable", "--now", timer], "systemctl")
    return True, str(unit_dir)


def _systemd_show() -> list[Entry]:
    return [
        Entry("systemd", timer.stem.removeprefix("memsync-compact-"), timer.stem)
        for timer in sorted(_unit_dir().glob("memsync-compact-*.timer"))
    ]


def _systemd_remove(j: Job) -> list[str]:
    removed = []
    systemctl = shutil.which("systemctl")
    for name in sorted(systemd_units(j), key=lambda n: not n.endswith(".timer")):
        path = _unit_dir() / name
        if path.exists():
            if name.endswith(".timer") and systemctl:
                _run([systemctl, "--user", "disable", "--now", name], "systemctl")
            path.unlink()
            removed.append(str(path))
    if removed:
        with contextlib.suppress(OSError):  # the folder install made, if nothing else is in it
            _unit_dir().rmdir()
    return removed


# --- launchd (macOS) ----------------------------------------------------------------------


def _agents_dir() -> Path:
    return Path.home() / "Library" / "LaunchAgents"


def launchd_label(j: Job) -> str:
    return LAUNCHD_PREFIX + j.slug


def launchd_plist(j: Job) -> bytes:
    """A launchd agent running the job daily; StartCalendarInterval runs a missed job when the
    Mac wakes, as Persistent= does for systemd."""
    import plistlib

    doc = {
        "Label": launchd_label(j),
        "ProgramArguments": list(j.argv),
        "StartCalendarInterval": {"Hour": HOUR, "Minute": MINUTE},
        "StandardOutPath": str(j.log),
        "StandardErrorPath": str(j.log),
        "ProcessType": "Background",
        "RunAtLoad": False,
    }
    return plistlib.dumps(doc, sort_keys=True)


def _domain() -> str:
    return f"gui/{os.getuid()}"  # launchd exists on macOS only, where getuid does too


def _launchd_install(j: Job) -> tuple[bool, str]:
    path = _agents_dir() / f"{launchd_label(j)}.plist"
    data = launchd_plist(j)
    if path.exists() and path.read_bytes() == data:
        return False, str(path)
    launchctl = _tool("launchctl")
    if path.exists():  # an older version is loaded: unload it before replacing
        _run([launchctl, "bootout", f"{_domain()}/{launchd_label(j)}"], "launchctl")
    _write_private(path, data)
    proc = _run([launchctl, "bootstrap", _domain(), str(path)], "launchctl")
    if proc.returncode != 0:
        path.unlink()
        raise UserError(
            f"launchctl refused {path}: {proc.stderr.strip() or proc.returncode}; "
            "nothing was scheduled"
        )
    return True, str(path)


def _launchd_show() -> list[Entry]:
    import plistlib

    entries = []
    for path in sorted(_agents_dir().glob(f"{LAUNCHD_PREFIX}*.plist")):
        try:
            args = plistlib.loads(path.read_bytes()).get("ProgramArguments") or []
        except Exception:  # a damaged plist is shown, not fatal
            args = []
        project = args[args.index("--project") + 1] if "--project" in args[:-1] else path.stem
        entries.append(Entry("launchd", project, str(path)))
    return entries


def _launchd_remove(j: Job) -> list[str]:
    path = _agents_dir() / f"{launchd_label(j)}.plist"
    if not path.exists():
        return []
    launchctl = shutil.which("launchctl")
    if launchctl:
        _run([launchctl, "bootout", f"{_domain()}/{launchd_label(j)}"], "launchctl")
    path.unlink()
    return [str(path)]


# --- Task Scheduler (Windows) -------------------------------------------------------------

_TASK_NS = "http://schemas.microsoft.com/windows/2004/02/mit/task"


def task_name(j: Job) -> str:
    return f"{TASK_FOLDER}compact-{j.slug}"


def task_xml(j: Job) -> str:
    """The task definition `schtasks /Create /XML` takes: a daily calendar trigger, run as the
    user only when logged on (no stored password), started late if the machine was off
    (StartWhenAvailable), on battery too, never two at once, stopped after an hour. The command
    line is quoted the way the C runtime splits it (subprocess.list2cmdline). Output is not
    redirected: Task Scheduler has no stdout; memsync.log and the task history record runs."""
    from xml.sax.saxutils import escape

    arguments = subprocess.list2cmdline(j.argv[1:])
    return (
        '<?xml version="1.0" encoding="UTF-16"?>\n'
        f'<Task version="1.2" xmlns="{_TASK_NS}">\n'
        "  <RegistrationInfo>\n"
        f"    <Description>{escape(f'memsync compaction for {j.project}')}</Description>\n"
        f"    <URI>{escape(task_name(j))}</URI>\n"
        "  </RegistrationInfo>\n"
        "  <Triggers>\n"
        "    <CalendarTrigger>\n"
        f"      <StartBoundary>2026-01-01T{HOUR:02}:{MINUTE:02}:00</StartBoundary>\n"
        "      <Enabled>true</Enabled>\n"
        "      <ScheduleByDay><DaysInterval>1</DaysInterval></ScheduleByDay>\n"
        "    </CalendarTrigger>\n"
        "  </Triggers>\n"
        "  <Principals>\n"
        '    <Principal id="Author">\n'
        "      <LogonType>InteractiveToken</LogonType>\n"
        "      <RunLevel>LeastPrivilege</RunLevel>\n"
        "    </Principal>\n"
        "  </Principals>\n"
        "  <Settings>\n"
        "    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>\n"
        "    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>\n"
        "    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>\n"
        "    <StartWhenAvailable>true</StartWhenAvailable>\n"
        "    <ExecutionTimeLimit>PT1H</ExecutionTimeLimit>\n"
        "    <Enabled>true</Enabled>\n"
        "  </Settings>\n"
        '  <Actions Context="Author">\n'
        "    <Exec>\n"
        f"      <Command>{escape(j.argv[0])}</Command>\n"
        f"      <Arguments>{escape(arguments)}</Arguments>\n"
        "    </Exec>\n"
        "  </Actions>\n"
        "</Task>\n"
    )


def schtasks_create(j: Job, xml_path: Path) -> list[str]:
    """The schtasks command line that registers the task from its XML file (/F replaces a
    task of the same name)."""
    return ["schtasks", "/Create", "/TN", task_name(j), "/XML", str(xml_path), "/F"]


def _task_file(j: Job, home: Path) -> Path:
    return home / "schedule" / f"compact-{j.slug}.xml"


def _home_of(j: Job) -> Path:
    return Path(j.argv[j.argv.index("--home") + 1])


def _task_exists(schtasks: str, name: str) -> bool:
    return _run([schtasks, "/Query", "/TN", name], "schtasks").returncode == 0


def _schtasks_install(j: Job) -> tuple[bool, str]:
    schtasks = _tool("schtasks")
    xml = task_xml(j)
    path = _task_file(j, _home_of(j))
    data = xml.encode("utf-16")  # with a BOM, as schtasks /XML expects
    if path.exists() and path.read_bytes() == data and _task_exists(schtasks, task_name(j)):
        return False, task_name(j)
    _write_private(path, data)
    proc = _run([schtasks, *schtasks_create(j, path)[1:]], "schtasks")
    if proc.returncode != 0:
        path.unlink()
        raise UserError(
            f"schtasks refused the task {task_name(j)}: "
            f"{(proc.stderr or proc.stdout).strip() or proc.returncode}; nothing was scheduled"
        )
    return True, task_name(j)


def _schtasks_show() -> list[Entry]:
    import csv

    schtasks = shutil.which("schtasks")
    if not schtasks:
        return []
    proc = _run([schtasks, "/Query", "/FO", "CSV", "/NH"], "schtasks")
    entries = []
    prefix = f"{TASK_FOLDER}compact-"
    for row in csv.reader(proc.stdout.splitlines()):
        if row and row[0].startswith(prefix):
            entries.append(Entry("schtasks", row[0].removeprefix(prefix), row[0]))
    return sorted({e.line: e for e in entries}.values(), key=lambda e: e.line)


def _schtasks_remove(j: Job) -> list[str]:
    schtasks = shutil.which("schtasks")
    removed = []
    if schtasks and _task_exists(schtasks, task_name(j)):
        proc = _run([schtasks, "/Delete", "/TN", task_name(j), "/F"], "schtasks")
        if proc.returncode != 0:
            raise UserError(f"schtasks could not delete {task_name(j)}: {proc.stderr.strip()}")
        removed.append(task_name(j))
    _task_file(j, _home_of(j)).unlink(missing_ok=True)
    return removed


_BACKENDS = {
    "cron": (_cron_install, _cron_show, _cron_remove),
    "systemd": (_systemd_install, _systemd_show, _systemd_remove),
    "launchd": (_launchd_install, _launchd_show, _launchd_remove),
    "schtasks": (_schtasks_install, _schtasks_show, _schtasks_remove),
}


def describe(entry: Entry) -> str:
    """An entry for `schedule show`, without a SAS token the remote URL may carry."""
    import re

    return re.sub(r"(://[^\s'\"?]*)\?[^\s'\"]*", r"\1?<query hidden>", entry.line)
