"""Every command of the README × the bad inputs a user types: the exit code the README gives,
exactly one line on stderr (`memsync: ...`), no traceback, and nothing changed anywhere (the
memory dir, MEMSYNC_HOME, the remote, Claude Code's config).

The commands run in-process through the console entry point (`memsync.entry.main`), the same
path as the installed `memsync`; each case starts from a copy of one synced device. A few cases
that need a real process (a signal) run the CLI in a subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memsync.cli import _register
from memsync.entry import main
from tests.conftest import python_path, write_memory

_register()

Setup = Callable[[Path], None]


@dataclass
class Case:
    argv: list[str]
    code: int
    says: str  # a piece of the one stderr line
    setup: Setup | None = None
    env: dict[str, str] = field(default_factory=dict)


def _settings(text: str) -> Setup:
    def setup(root: Path) -> None:
        (root / "home" / "settings.json").write_text(text)

    return setup


def _file_at(relative: str) -> Setup:
    def setup(root: Path) -> None:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("not a folder\n")

    return setup


def _fifo_at(relative: str) -> Setup:
    """A named pipe (as /dev/null is a device): export must not replace it with a file."""

    def setup(root: Path) -> None:
        os.mkfifo(root / relative)

    return setup


def _claude_settings(text: str) -> Setup:
    def setup(root: Path) -> None:
        (root / ".claude").mkdir(exist_ok=True)
        (root / ".claude" / "settings.json").write_text(text)

    return setup


# The commands of the README (tests/test_readme_cli.py holds the README to this list).
COMMANDS = [
    "sync", "push", "pull", "status", "validate", "history", "restore", "resolve", "doctor",
    "install", "uninstall", "context", "new", "watch", "digest", "compact", "schedule", "ls",
    "prune", "export", "import", "migrate", "forget", "purge",
]  # fmt: skip

# A runnable form of each command: the settings cases below put a bad value under each.
RUNNABLE = {
    "sync": ["sync"],
    "push": ["push"],
    "pull": ["pull"],
    "status": ["status"],
    "validate": ["validate"],
    "history": ["history", "user_a.md"],
    "restore": ["restore", "user_a.md", "1"],
    "resolve": ["resolve"],
    "doctor": ["doctor"],
    "context": ["context"],
    "new": ["new", "relationship", "sam"],
    "watch": ["watch"],
    "digest": ["digest", "--dry-run"],
    "compact": ["compact", "--dry-run"],
    "schedule": ["schedule", "show"],
    "ls": ["ls"],
    "prune": ["prune", "--older-than", "90d", "--dry-run"],
    "export": ["export", "out.tar.gz"],
    "import": ["import", "backup.tar.gz"],
    "migrate": ["migrate"],
    "forget": ["forget", "user_a.md", "--yes"],
    "purge": ["purge", "--all", "--yes"],
}

CASES: dict[str, Case] = {}

# --- settings of the wrong shape or value, for every command that reads them ----------------
for command, argv in RUNNABLE.items():
    CASES[f"{command}-settings-not-an-object"] = Case(
        argv, 1, "must hold a JSON object", _settings("[]")
    )
    CASES[f"{command}-settings-negative-size"] = Case(
        argv, 1, "'max_file_bytes' must be at least 1", _settings('{"max_file_bytes": -1}')
    )
    CASES[f"{command}-settings-not-a-number"] = Case(
        argv, 1, "'pull_timeout' must be a number", _settings('{"pull_timeout": NaN}')
    )
    CASES[f"{command}-settings-typo"] = Case(
        argv, 1, "unknown setting(s) remot", _settings('{"remot": "file:///x"}')
    )
    CASES[f"{command}-remote-relative"] = Case(
        argv, 1, "not an absolute folder URL", env={"MEMSYNC_REMOTE": "file:relative/dir"}
    )
    CASES[f"{command}-memory-dir-is-a-file"] = Case(
        argv, 1, "is a file, not a folder", _file_at("memfile"), {"MEMSYNC_MEMORY_DIR": "memfile"}
    )
    CASES[f"{command}-sync-setting-typo"] = Case(
        argv, 1, "MEMSYNC_SYNC='of' must be on or off", env={"MEMSYNC_SYNC": "of"}
    )

# --- an option typo, on every command ----------------------------------------------------
for command in COMMANDS:
    CASES[f"{command}-option-typo"] = Case(
        [command, "--memroy-dir", "x"], 2, f"{command}: No such option: --memroy-dir"
    )

CASES.update(
    {
        # pull / push / sync
        "push-no-such-file": Case(["push", "user_xx.md"], 1, "no such file in the memory dir"),
        "push-no-md": Case(["push", "user_pat_role"], 1, "memory files end in .md"),
        "push-allow-typo": Case(
            ["push", "--allow", "pasword", "user_a.md"], 2, "'pasword' is not a kind of secret"
        ),
        "push-allow-without-file": Case(["push", "--allow", "password"], 2, "needs its file"),
        "sync-remote-is-a-file": Case(
            ["sync", "--remote", "file:///PLAINFILE"], 1, "is a file, not a folder",
            _file_at("plainfile"),
        ),
        "pull-remote-unknown-scheme": Case(
            ["pull", "--remote", "ftp://host/x"], 1, "is not a file:/// folder or an Azure"
        ),
        "sync-unknown-command-typo": Case(["snyc"], 2, "No such command 'snyc'"),
        # status, validate, history, restore, resolve
        "status-bad-json-flag": Case(["status", "--jsn"], 2, "No such option: --jsn"),
        "validate-no-such-file": Case(["validate", "nope.md"], 1, "1 of 1 file(s) have problems"),
        "history-no-such-file": Case(["history", "nope.md"], 1, "no such memory file"),
        "restore-version-zero": Case(["restore", "user_a.md", "0"], 2, "VERSION must be 1"),
        "restore-version-word": Case(["restore", "user_a.md", "one"], 2, "is not a valid int"),
        "restore-no-such-version": Case(["restore", "user_a.md", "9"], 1, "has no version 9"),
        "resolve-extra-argument": Case(["resolve", "a.md", "b.md"], 2, "unexpected extra"),
        # install / uninstall
        "install-scope-typo": Case(["install", "--scope", "users"], 2, "--scope takes user or"),
        "uninstall-scope-typo": Case(["uninstall", "--scope", "proj"], 2, "--scope takes user"),
        "install-broken-claude-settings": Case(
            ["install"], 1, "not valid JSON at line 1", _claude_settings("{oops")
        ),
        "install-claude-settings-wrong-shape": Case(
            ["install"], 1, "must hold a JSON object", _claude_settings("[]")
        ),
        "uninstall-broken-claude-settings": Case(
            ["uninstall"], 1, "not valid JSON", _claude_settings("{oops")
        ),
        "install-unwritable-target": Case(
            ["install"], 1, "a part of the path is a file", _file_at("blocker"),
            {"CLAUDE_CONFIG_DIR": "blocker/.claude"},
        ),
        # context, new, watch, digest
        "context-source-typo": Case(["context", "--source", "bogus"], 2, "--source takes"),
        "context-negative-budget": Case(
            ["context", "--max-chars", "-5"], 2, "--max-chars must be from 1 to 10000"
        ),
        "context-budget-word": Case(["context", "--max-chars", "lots"], 2, "not a valid int"),
        "new-type-typo": Case(["new", "relationshp", "sam"], 2, "'relationshp' is not a memory"),
        "new-needs-a-name": Case(["new", "relationship"], 2, "needs a NAME"),
        "resolve-no-such-conflict": Case(["resolve", "user_zz.md"], 1, "no conflict is recorded"),
        "forget-the-index": Case(["forget", "MEMORY.md", "--yes"], 1, "is not forgotten whole"),
        "prune-the-index": Case(["prune", "--older-than", "0d", "--type", "index"], 2, "--type"),
        "new-already-there": Case(
            ["new", "relationship", "sam"], 1, "already exists",
            lambda root: write_memory(root / "memory", "relationship_sam.md", "Sam.\n"),
        ),
        "watch-negative-debounce": Case(["watch", "--debounce", "-1"], 2, "--debounce must be"),
        "digest-date-typo": Case(["digest", "--date", "2026-13-01"], 2, "--date '2026-13-01'"),
        "digest-no-transcript": Case(
            ["digest", "--transcript", "nope.jsonl"], 1, "does not exist or is not a file"
        ),
        "digest-bad-session-id": Case(["digest", "--session", "../x"], 2, "is not a session id"),
        "digest-no-such-session": Case(["digest", "--session", "abc"], 1, "no transcript for"),
        # compact, schedule
        "compact-date-typo": Case(["compact", "--now", "yesterday"], 2, "--now 'yesterday'"),
        "schedule-action-typo": Case(["schedule", "instal"], 2, "ACTION takes install, show"),
        "schedule-no-action": Case(["schedule"], 2, "Missing argument"),
        # ls, prune, export, import, migrate
        "prune-age-typo": Case(["prune", "--older-than", "soon"], 2, "not an age like 90d"),
        "prune-type-typo": Case(
            ["prune", "--older-than", "1d", "--type", "digest"], 2, "--type takes"
        ),
        "prune-no-age": Case(["prune"], 2, "Missing option '--older-than'"),
        "prune-unconfirmed": Case(
            ["prune", "--older-than", "0d"], 1, "needs confirmation: run it again with --yes"
        ),
        "export-from-typo": Case(["export", "x.tar.gz", "--from", "remot"], 2, "--from takes"),
        "export-into-a-folder": Case(["export", "memory"], 1, "is a folder"),
        "export-onto-a-pipe": Case(
            ["export", "pipe"], 1, "is not a regular file", _fifo_at("pipe")
        ),
        "validate-without-md": Case(["validate", "user_a"], 1, "memory files end in .md"),
        "sync-empty-memory-dir": Case(["sync", "--memory-dir", ""], 2, "--memory-dir is empty"),
        "push-empty-remote": Case(["push", "--remote="], 2, "--remote is empty"),
        "export-where-no-file-can-be-made": Case(
            ["export", "/proc/nope.tar.gz"], 1, "files cannot be created in that folder"
        ),
        "export-unwritable-target": Case(
            ["export", "plainfile/x.tar.gz"], 1, "plainfile", _file_at("plainfile")
        ),
        "import-no-such-archive": Case(["import", "nope.tar.gz"], 1, "nope.tar.gz"),
        "import-not-an-archive": Case(
            ["import", "plainfile"], 1, "not a readable tar.gz", _file_at("plainfile")
        ),
        "migrate-source-shape": Case(["migrate", "--source", "nodir"], 2, "must look like"),
        "migrate-source-missing": Case(
            ["migrate", "--source", "nope=proj"], 1, "is not a folder"
        ),
        # forget, purge
        "forget-nothing-named": Case(["forget"], 2, "name the files to forget"),
        "forget-both": Case(["forget", "user_a.md", "--match", "x"], 2, "not both"),
        "forget-typo": Case(["forget", "user_xx.md", "-y"], 1, "no such memory file"),
        "forget-no-md": Case(["forget", "user_a", "-y"], 1, "memory files end in .md"),
        "forget-unconfirmed": Case(["forget", "user_a.md"], 1, "needs confirmation"),
        "purge-without-all": Case(["purge", "--yes"], 2, "say so with --all"),
        "purge-unconfirmed": Case(["purge", "--all"], 1, "needs confirmation"),
    }
)


# --- running the CLI ------------------------------------------------------------------------


def _env(root: Path) -> dict[str, str]:
    return {
        "HOME": str(root),
        "MEMSYNC_HOME": str(root / "home"),
        "MEMSYNC_MEMORY_DIR": str(root / "memory"),
        "MEMSYNC_REMOTE": (root / "remote").as_uri(),
        "MEMSYNC_PROJECT": "table",
        "MEMSYNC_DEVICE": "a",
        "CLAUDE_CONFIG_DIR": str(root / ".claude"),
    }


def cli(root: Path, argv: list[str], env: dict[str, str], monkeypatch) -> tuple[int, str, str]:
    """`memsync ARGV` in this process, from `root`: (exit code, stdout, stderr)."""
    for name in list(os.environ):
        if name.startswith("MEMSYNC_") and name != "MEMSYNC_AZURITE":
            monkeypatch.delenv(name)
    for name, value in {**_env(root), **env}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(root)
    argv = [a.replace("/PLAINFILE", str(root / "plainfile")) for a in argv]
    monkeypatch.setattr(sys, "argv", ["memsync", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def snapshot(root: Path) -> dict[str, object]:
    """Every file's bytes and every folder under `root` (logs aside: they say what happened)."""
    seen: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("home/logs"):
            continue
        seen[rel] = path.read_bytes() if path.is_file() else "dir"
    return seen


@pytest.fixture(scope="module")
def synced(tmp_path_factory) -> Path:
    """One device with three memory files synced to a folder remote, and an archive. It lives
    at `device` (its state is keyed by the memory dir's path); `fresh` copies it back there."""
    base = tmp_path_factory.mktemp("table")
    root = base / "device"
    (root / "remote").mkdir(parents=True)
    write_memory(root / "memory", "user_a.md", "Staff engineer.\n", type="user")
    write_memory(root / "memory", "feedback_b.md", "Be brief.\n", type="feedback")
    write_memory(root / "memory", "user.md", "Index of me.\n", type="user")
    mp = pytest.MonkeyPatch()
    try:
        for argv in (["sync"], ["export", "backup.tar.gz"]):
            code, _, err = cli(root, argv, {}, mp)
            assert code == 0, err
    finally:
        mp.undo()
    shutil.copytree(root, base / "template", symlinks=True)
    return root


def fresh(synced: Path) -> Path:
    """The synced device as it was after the fixture, at the same path."""
    shutil.rmtree(synced)
    shutil.copytree(synced.parent / "template", synced, symlinks=True)
    return synced


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_bad_input_is_one_sentence_with_its_exit_code_and_changes_nothing(
    case_id: str, synced: Path, tmp_path: Path, monkeypatch
) -> None:
    case = CASES[case_id]
    root = fresh(synced)
    if case.setup:
        case.setup(root)
    before = snapshot(root)
    code, out, err = cli(root, case.argv, case.env, monkeypatch)
    lines = err.splitlines()
    assert "Traceback" not in err + out, err
    assert len(lines) == 1, f"stderr of {case.argv}:\n{err}"
    assert lines[0].startswith("memsync: "), lines
    assert case.says in lines[0], lines[0]
    assert code == case.code, f"{case.argv} exited {code}: {lines[0]}"
    assert snapshot(root) == before, f"{case.argv} changed files"


def test_the_table_covers_every_command() -> None:
    for command in COMMANDS:
        bad = [c for c in CASES.values() if c.argv[0] == command]
        assert len(bad) >= 2, f"{command} has too few bad inputs in the table"


# --- Ctrl-C: a subprocess waiting for the state lock -------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_exits_130_with_one_sentence(synced: Path, signum: int) -> None:
    from memsync.util.fsutil import file_lock

    root = fresh(synced)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
    env.update(_env(root), PYTHONPATH=python_path(Path(__file__).resolve().parent.parent))
    locks = list((root / "home" / "state").glob("*/lock"))
    assert len(locks) == 1
    with file_lock(locks[0]):  # the sync below waits for it (flock, or filelock's without fcntl)
        proc = subprocess.Popen(
            [sys.executable, "-m", "memsync", "sync"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)  # started and waiting (a shorter wait would only test Python's start)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    waiting, interrupted = err.splitlines()  # it said why it waited, then why it stopped
    assert waiting.startswith("memsync: another memsync process is syncing this project")
    assert interrupted == (
        "memsync: interrupted; what was done is kept, run the command again to finish"
    )


def test_scripts_get_every_name_whole(synced: Path, tmp_path: Path, monkeypatch) -> None:
    """`ls` into a pipe: tab-separated lines, names never cut, whatever the terminal width."""
    root = fresh(synced)
    long_name = "feedback_" + "ask_before_running_anything_destructive_" * 3 + "x.md"
    write_memory(root / "memory", long_name, "Ask first.\n", type="feedback")
    monkeypatch.setenv("COLUMNS", "80")
    assert cli(root, ["push"], {}, monkeypatch)[0] == 0
    code, out, _ = cli(root, ["ls"], {}, monkeypatch)
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == ["file", "type", "size", "modified", "state"]
    assert long_name in [row[0] for row in rows[1:]]
    code, out, _ = cli(root, ["ls", "--json"], {}, monkeypatch)
    assert long_name in [f["name"] for f in json.loads(out)["data"]["files"]]
