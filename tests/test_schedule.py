"""`memsync schedule` on every platform's scheduler: the generated cron line, systemd units,
launchd plist and Task Scheduler XML are parsed back, and what they run compacts against the
remote, project and memory dir of the command that installed them (issue 16, defect 15).

launchctl and schtasks do not exist here: small stand-ins on PATH record what memsync asks of
them (README "Platforms" says what that leaves untested)."""

from __future__ import annotations

import os
import plistlib
import shlex
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path

import pytest

from memsync.context import config
from memsync.retention import schedule
from tests.devices import Device, make_device

NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
OLD_DAYS = ("2026-10-05", "2026-10-06", "2026-10-07")  # rolled up by any compaction after them


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def scheduler_env(device: Device) -> dict[str, str]:
    """What a scheduler gives the job: a HOME and a short PATH, none of memsync's variables."""
    return {"HOME": str(device.root), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def set_up(tmp_path: Path, **env: str) -> tuple[Device, Path]:
    """A device whose remote comes from MEMSYNC_REMOTE (not its settings) and whose project
    is MEMSYNC_PROJECT: exactly what a scheduler's environment does not carry."""
    remote = tmp_path / "team-remote"
    remote.mkdir()
    device = make_device(tmp_path, "laptop", remote.as_uri(), **env)
    # today's digest too: compaction counts ages from no later than the newest date memory holds
    for day in (*OLD_DAYS, date.today().isoformat()):
        device.write(
            f"session_digest_{day}.md",
            f"## Arcs\n- arc of {day}\n",
            type="session_digest",
        )
    device.run("push")
    return device, remote


def assert_compacted_against_the_installing_remote(device: Device, remote: Path) -> None:
    names = sorted(p.name for p in (remote / "e2e-project").iterdir())
    sources = {f"session_digest_{day}.md" for day in OLD_DAYS}
    assert not sources & set(names), names  # rolled up (weekly or monthly, by today's date)
    assert [n for n in names if n.startswith("session_digest_")], names
    embedded = device.home / "remote"
    assert not embedded.exists() or not any(embedded.rglob("*.md")), "a stray copy was uploaded"


def test_cron_job_runs_against_the_installing_remote_and_project(tmp_path):
    table = tmp_path / "crontab.txt"
    table.write_text("")
    fake = executable(
        tmp_path / "crontab",
        f'#!/bin/sh\nif [ "$1" = -l ]; then cat {table}; else cat > {table}; fi\n',
    )
    device, remote = set_up(tmp_path, MEMSYNC_CRONTAB=str(fake), MEMSYNC_SCHEDULER="cron")
    device.run("schedule", "install")
    [line] = table.read_text().splitlines()
    argv = shlex.split(schedule.cron_command(line).split(" >> ")[0])
    assert argv[argv.index("--remote") + 1] == remote.as_uri()
    assert argv[argv.index("--project") + 1] == "e2e-project"
    assert argv[argv.index("--memory-dir") + 1] == str(device.memory)
    assert argv[argv.index("--home") + 1] == str(device.home)
    assert argv[argv.index("--device") + 1] == "laptop"  # MEMSYNC_DEVICE, not the host name
    assert Path(argv[0]).is_absolute()

    # cron runs the line through sh with its own small environment
    proc = subprocess.run(
        ["/bin/sh", "-c", schedule.cron_command(line)],
        env=scheduler_env(device),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Wrote" in (device.home / "logs" / "compact.log").read_text()
    assert_compacted_against_the_installing_remote(device, remote)
    assert "e2e-project" in device.run("schedule", "show").stdout
    assert "Removed" in device.run("schedule", "remove").stdout
    assert table.read_text() == ""


def test_a_percent_in_the_remote_survives_cron(tmp_path):
    """cron turns an unescaped % into a newline; URLs and SAS tokens carry them."""
    ctx = config.resolve(
        memory_dir=tmp_path / "m",
        remote="https://acct.blob.core.windows.net/c/p?sv=2024&sig=a%2Fb%3D",
        project="proj",
    )
    line = schedule.cron_line(schedule.job(ctx))
    assert "%" not in line.replace("\\%", "")
    argv = shlex.split(schedule.cron_command(line).split(" >> ")[0])
    assert argv[argv.index("--remote") + 1].endswith("sig=a%2Fb%3D")
    shown = schedule.describe(schedule.Entry("cron", "proj", line))
    assert "sig=" not in shown and "query hidden" in shown


def test_systemd_units_parse_back_to_the_same_command(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("MEMSYNC_SCHEDULER", "systemd")
    monkeypatch.setattr(schedule.shutil, "which", lambda name: None)  # no systemctl here
    ctx = config.resolve(
        memory_dir=tmp_path / "mem dir $HOME %h",
        remote=(tmp_path / "r").as_uri(),
        project="proj",
    )
    assert schedule.install(ctx)[0] is True
    assert schedule.install(ctx)[0] is False
    units = tmp_path / "xdg" / "systemd" / "user"
    service = (units / "memsync-compact-proj.service").read_text()
    exec_start = next(x for x in service.splitlines() if x.startswith("ExecStart="))
    parsed = [
        a.replace("%%", "%").replace("$$", "$")
        for a in shlex.split(exec_start.removeprefix("ExecStart="))
    ]
    assert parsed == schedule.job(ctx).argv
    assert "OnCalendar=*-*-* 04:17:00" in (units / "memsync-compact-proj.timer").read_text()
    assert stat.S_IMODE((units / "memsync-compact-proj.service").stat().st_mode) == 0o600
    assert [e.project for e in schedule.show(ctx)] == ["proj"]
    assert len(schedule.remove(ctx)) == 2
    assert not units.exists()  # the folder install made goes with the last unit


def test_launchd_plist_is_installed_loaded_shown_and_removed(tmp_path):
    calls = tmp_path / "launchctl.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "launchctl", f'#!/bin/sh\necho "$@" >> {calls}\n')
    device, remote = set_up(
        tmp_path,
        MEMSYNC_SCHEDULER="launchd",
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    )
    assert "Scheduled" in device.run("schedule", "install").stdout
    assert "Already scheduled" in device.run("schedule", "install").stdout
    plist = device.root / "Library" / "LaunchAgents" / "dev.memsync.compact.e2e-project.plist"
    doc = plistlib.loads(plist.read_bytes())
    assert doc["Label"] == "dev.memsync.compact.e2e-project"
    assert doc["StartCalendarInterval"] == {"Hour": 4, "Minute": 17}
    assert doc["StandardOutPath"] == str(device.home / "logs" / "compact.log")
    argv = doc["ProgramArguments"]
    assert argv[1:3] == ["compact", "--home"] and Path(argv[0]).is_absolute()
    assert argv[argv.index("--remote") + 1] == remote.as_uri()
    assert argv[argv.index("--project") + 1] == "e2e-project"
    uid = os.getuid()
    assert calls.read_text().splitlines() == [f"bootstrap gui/{uid} {plist}"]

    # launchd runs ProgramArguments as they are, in its own environment
    proc = subprocess.run(
        argv, env=scheduler_env(device), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert_compacted_against_the_installing_remote(device, remote)

    assert "launchd: e2e-project" in device.run("schedule", "show").stdout
    assert "Removed" in device.run("schedule", "remove").stdout
    assert not plist.exists()
    bootout = f"bootout gui/{uid}/dev.memsync.compact.e2e-project"
    assert calls.read_text().splitlines()[-1] == bootout


FAKE_SCHTASKS = r"""#!/usr/bin/env python3
# a stand-in for schtasks.exe: keeps registered tasks as files in a folder
import csv, os, shutil, sys
store = os.environ["FAKE_TASKS"]
os.makedirs(store, exist_ok=True)
args = sys.argv[1:]
with open(os.path.join(store, "calls.log"), "a") as log:
    log.write(" ".join(args) + "\n")
def path(name):
    return os.path.join(store, name.replace("\\", "_") + ".xml")
def opt(flag):
    return args[args.index(flag) + 1]
if args[0] == "/Create":
    shutil.copy(opt("/XML"), path(opt("/TN")))
elif args[0] == "/Delete":
    os.remove(path(opt("/TN")))
elif args[0] == "/Query" and "/TN" in args:
    sys.exit(0 if os.path.exists(path(opt("/TN"))) else 1)
elif args[0] == "/Query":
    w = csv.writer(sys.stdout)
    w.writerow(["\\Microsoft\\Windows\\Defrag", "N/A", "Ready"])
    for f in sorted(os.listdir(store)):
        if f.endswith(".xml"):
            w.writerow([f[:-4].replace("_", "\\"), "N/A", "Ready"])
"""


def windows_split(line: str) -> list[str]:
    """Split a command line the way the Microsoft C runtime does (the oracle for
    list2cmdline): 2n backslashes + quote -> n backslashes and a quote toggle; 2n+1 -> n and
    a literal quote; other backslashes are literal; whitespace outside quotes separates."""
    args, cur, quoted, i, have = [], [], False, 0, False
    while i < len(line):
        c = line[i]
        if c == "\\":
            n = 0
            while i < len(line) and line[i] == "\\":
                n, i = n + 1, i + 1
            if i < len(line) and line[i] == '"':
                cur.append("\\" * (n // 2))
                if n % 2:
                    cur.append('"')
                    i += 1
            else:
                cur.append("\\" * n)
            have = True
            continue
        if c == '"':
            quoted, have = not quoted, True
        elif c in " \t" and not quoted:
            if have:
                args.append("".join(cur))
            cur, have = [], False
        else:
            cur.append(c)
            have = True
        i += 1
    if have:
        args.append("".join(cur))
    return args


def test_task_scheduler_xml_and_command_parse_back(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "schtasks", FAKE_SCHTASKS.replace("python3", sys.executable, 1))
    tasks = tmp_path / "tasks"
    device, remote = set_up(
        tmp_path,
        MEMSYNC_SCHEDULER="schtasks",
        FAKE_TASKS=str(tasks),
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    )
    assert "Scheduled" in device.run("schedule", "install").stdout
    assert "Already scheduled" in device.run("schedule", "install").stdout
    xml_file = device.home / "schedule" / "compact-e2e-project.xml"
    calls = (tasks / "calls.log").read_text().splitlines()
    create = f"/Create /TN \\memsync\\compact-e2e-project /XML {xml_file} /F"
    assert calls.count(create) == 1

    data = xml_file.read_bytes()
    assert data.startswith(b"\xff\xfe")  # UTF-16 with a BOM, as schtasks /XML expects
    root = ET.fromstring(data.decode("utf-16"))
    assert root.find("t:RegistrationInfo/t:URI", NS).text == "\\memsync\\compact-e2e-project"
    trigger = root.find("t:Triggers/t:CalendarTrigger", NS)
    assert trigger.find("t:StartBoundary", NS).text.endswith("T04:17:00")
    assert trigger.find("t:ScheduleByDay/t:DaysInterval", NS).text == "1"
    assert root.find("t:Settings/t:StartWhenAvailable", NS).text == "true"
    command = root.find("t:Actions/t:Exec/t:Command", NS).text
    arguments = root.find("t:Actions/t:Exec/t:Arguments", NS).text
    argv = [command, *windows_split(arguments)]
    assert argv[argv.index("--remote") + 1] == remote.as_uri()
    assert argv[argv.index("--project") + 1] == "e2e-project"
    assert argv[argv.index("--memory-dir") + 1] == str(device.memory)

    # what Task Scheduler would start, started here with no memsync variables
    proc = subprocess.run(
        argv, env=scheduler_env(device), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert_compacted_against_the_installing_remote(device, remote)

    assert (
        "schtasks: e2e-project: \\memsync\\compact-e2e-project"
        in device.run("schedule", "show").stdout
    )
    assert "Removed" in device.run("schedule", "remove").stdout
    assert not list(tasks.glob("*.xml")) and not xml_file.exists()


@pytest.mark.parametrize(
    "arg",
    ["C:\\Users\\Sam Smith\\memory", 'a"b', "trailing\\", 'x\\"y', "", "tab\there", "%PATH%"],
)
def test_windows_arguments_round_trip(arg):
    argv = ["memsync.exe", "compact", "--memory-dir", arg]
    assert windows_split(subprocess.list2cmdline(argv[1:])) == argv[1:]


def test_an_unknown_scheduler_is_one_sentence(tmp_path):
    device = make_device(tmp_path, "d", (tmp_path / "r").as_uri(), MEMSYNC_SCHEDULER="at")
    proc = device.run("schedule", "install", check=1)
    assert "MEMSYNC_SCHEDULER='at' is not one of cron, systemd, launchd, schtasks" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_each_platform_gets_its_own_scheduler(monkeypatch):
    monkeypatch.delenv("MEMSYNC_SCHEDULER", raising=False)
    for platform, expected in (("darwin", "launchd"), ("win32", "schtasks")):
        monkeypatch.setattr(schedule.sys, "platform", platform)
        assert schedule.backend() == expected
    monkeypatch.setattr(schedule.sys, "platform", "linux")
    monkeypatch.setenv("MEMSYNC_CRONTAB", "/bin/true")
    assert schedule.backend() == "cron"
    monkeypatch.delenv("MEMSYNC_CRONTAB")
    monkeypatch.setattr(schedule, "_crontab", lambda: None)
    assert schedule.backend() == "systemd"


def test_an_entry_is_found_after_linux_changes_scheduler(tmp_path, monkeypatch):
    """Made as a systemd timer (no crontab then); a crontab installed later makes cron the
    choice: the timer is still shown and removed, and installing again moves it to cron
    instead of running the compaction twice a day."""
    monkeypatch.delenv("MEMSYNC_SCHEDULER", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(schedule.sys, "platform", "linux")
    monkeypatch.setattr(schedule.shutil, "which", lambda name: None)  # no crontab, systemctl
    monkeypatch.delenv("MEMSYNC_CRONTAB", raising=False)
    ctx = config.resolve(
        memory_dir=tmp_path / "mem", remote=(tmp_path / "r").as_uri(), project="proj"
    )
    assert schedule.install(ctx)[0] is True
    units = tmp_path / "xdg" / "systemd" / "user"
    assert (units / "memsync-compact-proj.timer").exists()

    table = tmp_path / "crontab.txt"
    fake = executable(
        tmp_path / "crontab",
        f'#!/bin/sh\nif [ "$1" = -l ]; then cat "{table}" 2>/dev/null; else cat > "{table}"; fi\n',
    )
    monkeypatch.setenv("MEMSYNC_CRONTAB", str(fake))
    assert [(e.backend, e.project) for e in schedule.show(ctx)] == [("systemd", "proj")]
    assert schedule.install(ctx)[0] is True  # moved, not doubled
    assert [(e.backend, e.project) for e in schedule.show(ctx)] == [("cron", "proj")]
    assert not units.exists()  # the folder install made goes with the last unit
    assert schedule.install(ctx)[0] is False
    assert schedule.remove(ctx) == ["crontab entry"]
    assert schedule.show(ctx) == []


@pytest.mark.parametrize(
    ("remote", "env", "warned"),
    [
        ("https://acct.blob.core.windows.net/c/p", {"AZURE_STORAGE_KEY": "k"}, True),
        ("https://acct.blob.core.windows.net/c/p", {"AZURE_STORAGE_CONNECTION_STRING": "x"}, True),
        ("https://acct.blob.core.windows.net/c/p?sv=1&sig=s", {"AZURE_STORAGE_KEY": "k"}, False),
        ("https://acct.blob.core.windows.net/c/p", {}, False),  # DefaultAzureCredential's
        ("file:///srv/share", {"AZURE_STORAGE_KEY": "k"}, False),
    ],
)
def test_install_warns_when_the_job_will_lack_this_shells_azure_credential(
    tmp_path, remote, env, warned
):
    """Fresh-eyes s29c, finding 5: with the key only in the environment, `schedule install`
    said only "Scheduled", and the job failed every day (schedulers pass no environment)."""
    ctx = config.resolve(memory_dir=tmp_path / "m", remote=remote, project="proj")
    said = schedule.credential_warning(ctx, env)
    assert (said is not None) is warned
    if said:
        assert next(iter(env)) in said and "SAS token" in said
