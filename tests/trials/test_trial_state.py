"""Trials of the engine's state as a user meets it: the installed `memsync` console script on
two devices (own MEMSYNC_HOME and memory dir each) and one folder remote, asserting what the
user sees on each device and what the remote holds (issue 16, defects 8, 9, 12, 16 SIGTERM,
18, 22)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from memsync.util.fsutil import file_lock
from tests.devices import Device
from tests.test_crash import site_env
from tests.test_identity import git_repo

MEMSYNC = Path(sys.executable).parent / "memsync"  # the console script pip installed
PROJECT = "e2e-project"
N = 40


@dataclass
class User(Device):
    """A device driven through the installed console script, from a folder of choice."""

    cwd: Path | None = None
    named: bool = True  # MEMSYNC_PROJECT set (False: the project is found from `cwd`)

    def env(self) -> dict[str, str]:
        env = super().env()
        if not self.named:
            env.pop("MEMSYNC_PROJECT")
        return env

    def run(self, *args: str, check: int | None = 0, **kw) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(MEMSYNC), *args],
            env=self.env(),
            cwd=self.cwd or self.root,
            capture_output=True,
            text=True,
            timeout=120,
            **kw,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        if check is not None and proc.returncode != check:
            raise AssertionError(
                f"memsync {' '.join(args)} on {self.name} exited {proc.returncode}, expected "
                f"{check}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(MEMSYNC), *args],
            env=self.env(),
            cwd=self.cwd or self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def settings(self, **values: object) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "settings.json").write_text(json.dumps(values))

    def state_dir(self) -> Path:
        (folder,) = (self.home / "state").iterdir()
        return folder


def user(tmp_path: Path, name: str, remote: Path, **kw) -> User:
    device = User(name, tmp_path / name, remote.as_uri(), {}, **kw)
    device.memory.mkdir(parents=True)
    return device


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    folder = tmp_path / "remote"
    folder.mkdir()
    return folder


def on_remote(remote: Path, project: str = PROJECT) -> dict[str, bytes]:
    base = remote / project
    if not base.is_dir():
        return {}
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.name.startswith(".") and "_memsync" not in p.parts
    }


def forty_files(device: User) -> None:
    (device.memory / "MEMORY.md").write_text(
        "# Memory\n" + "".join(f"- [Fact {i}](project_{i:02}.md)\n" for i in range(N - 1))
    )
    for i in range(N - 1):
        device.write(f"project_{i:02}.md", f"Fact {i}, learned in session {i}.\n", type="project")


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# --- 8: a lost memory dir is restored, never taken for 40 deletions -----------------------


def test_a_deleted_memory_dir_is_restored_by_pull_and_never_deleted_from_the_remote(
    tmp_path, remote
):
    a, b = user(tmp_path, "laptop", remote), user(tmp_path, "desktop", remote)
    forty_files(a)
    a.run("sync")
    b.run("sync")
    synced = on_remote(remote)
    assert len(synced) == N

    shutil.rmtree(a.memory)
    status = a.run("status").stdout
    assert "memory dir is missing or empty" in status and "`memsync pull`" in status
    refused = a.run("sync", check=1)
    sentence = one_line(refused.stderr)
    assert "is missing" in sentence and "run `memsync pull`" in sentence
    assert "--force" not in sentence
    a.run("sync", "--force", check=1)  # not even --force deletes a lost dir's files
    assert on_remote(remote) == synced

    pulled = a.run("pull")
    assert pulled.stdout.count("pulled: ") == N
    assert "restoring the 40 file(s)" in pulled.stderr
    assert a.files() == b.files() and len(a.files()) == N
    assert a.run("sync").stdout.strip() == "Everything is in sync."
    assert b.run("sync").stdout.strip() == "Everything is in sync."
    assert on_remote(remote) == synced


# --- 9: two unrelated repos named `app`, no origin ----------------------------------------


def test_two_repos_named_app_without_an_origin_never_see_each_others_memory(tmp_path, remote):
    a = user(tmp_path, "client-a", remote, named=False)
    b = user(tmp_path, "client-b", remote, named=False)
    a.cwd = git_repo(tmp_path / "work-a" / "app", "client A's app")
    b.cwd = git_repo(tmp_path / "work-b" / "app", "client B's app")
    a.write("project_terms.md", "Client A pays 40k for the migration.\n", type="project")
    b.write("project_terms.md", "Client B's roadmap is confidential.\n", type="project")
    a.run("sync")
    b.run("sync")
    assert "Client A" not in (b.memory / "project_terms.md").read_text()
    assert "Client B" not in (a.memory / "project_terms.md").read_text()
    prefixes = sorted(p.name for p in remote.iterdir())
    assert len(prefixes) == 2 and all(p.startswith("app-") for p in prefixes)
    status = a.run("status").stdout
    assert f"(project {[p for p in prefixes if p in status][0]})" in status


def test_a_folder_without_git_is_named_once_then_syncs_like_any_project(tmp_path, remote):
    a = user(tmp_path, "laptop", remote, named=False)
    a.cwd = tmp_path / "notes"
    a.cwd.mkdir()
    a.write("user_pat.md", "Pat likes tea.\n", type="user")
    sentence = one_line(a.run("sync", check=1).stderr)
    assert "--project NAME" in sentence
    assert on_remote(remote, "notes") == {}
    a.run("sync", "--project", "pats-notes")
    assert a.run("sync").stdout.strip() == "Everything is in sync."  # the name is remembered
    assert list(on_remote(remote, "pats-notes")) == ["user_pat.md"]


def test_a_different_project_under_the_same_name_is_refused(tmp_path, remote):
    """Two repos given the same name by hand (or both synced under `app` by an earlier
    memsync): the remote's manifest says whose memory it is."""
    a = user(tmp_path, "client-a", remote, named=False)
    b = user(tmp_path, "client-b", remote, named=False)
    a.cwd = git_repo(tmp_path / "work-a" / "app", "client A's app")
    b.cwd = git_repo(tmp_path / "work-b" / "app", "client B's app")
    a.write("project_terms.md", "Client A pays 40k for the migration.\n", type="project")
    a.run("sync", "--project", "app")
    b.write("project_plan.md", "Client B's roadmap.\n", type="project")
    sentence = one_line(b.run("sync", "--project", "app", check=1).stderr)
    assert "holds the memory of another project" in sentence
    assert not (b.memory / "project_terms.md").exists()
    assert list(on_remote(remote, "app")) == ["project_terms.md"]


# --- 12: MEMSYNC_SYNC=off status ------------------------------------------------------------


def test_status_with_sync_off_says_so_instead_of_listing_remote_deletions(tmp_path, remote):
    a = user(tmp_path, "laptop", remote)
    forty_files(a)
    a.run("sync")
    a.write("project_00.md", "Fact 0, corrected.\n", type="project")
    a.env_extra["MEMSYNC_SYNC"] = "off"
    out = a.run("status").stdout
    assert "sync is off" in out
    assert "deleted on the remote" not in out
    assert "changed here: project_00.md" in out
    assert f"{N - 1} file(s) in sync." in out


# --- 16: SIGTERM mid-sync saves progress and exits 130 --------------------------------------


def test_sigterm_in_the_middle_of_a_large_sync_keeps_what_was_done(tmp_path, remote):
    a = user(tmp_path, "laptop", remote)
    a.env_extra.update(site_env(tmp_path))
    a.settings(concurrency=2)
    forty_files(a)
    log = tmp_path / "calls.log"
    a.env_extra.update(MEMSYNC_TEST_STORE_DELAY_MS="60", MEMSYNC_TEST_CALL_LOG=str(log))
    proc = a.start("sync")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count("create") >= 8:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted" in one_line(err)
    done = on_remote(remote)
    assert 0 < len(done) < N
    # what it did is listed as a finished run lists it (fresh-eyes trial: nothing was); an
    # upload the signal cut short after the remote took it, before it was recorded, is not
    listed = {line.removeprefix("pushed: ") for line in out.splitlines()}
    assert listed and listed <= set(done) and len(set(done) - listed) <= 2  # concurrency=2

    # status says what is true: not "never" after a first sync that pushed files (fresh-eyes
    # trial), but when it was cut short and how much waits
    last = next(ln for ln in a.run("status").stdout.splitlines() if ln.startswith("last sync:"))
    assert "never" not in last and "interrupted at " in last, last
    assert "change(s) queued; the next sync finishes it" in last, last

    a.env_extra.update(MEMSYNC_TEST_STORE_DELAY_MS="0")
    again = a.run("sync").stdout
    assert "merged:" not in again  # what the interrupted run did was recorded
    assert again.count("pushed: ") == N - len(done)
    assert len(on_remote(remote)) == N
    last = next(ln for ln in a.run("status").stdout.splitlines() if ln.startswith("last sync:"))
    assert "interrupted" not in last and "never" not in last, last


# --- 18: a pull killed before its final flush, then Claude writes ---------------------------


def test_a_file_claude_writes_after_a_killed_pull_is_kept_and_pushed(tmp_path, remote):
    """A fresh pull of 40 files saves their names first (`landing`); it is killed before its
    final flush (a kill, or the SessionStart hook's process ending at its budget while its
    pull thread runs). Claude then writes one of those files; the PostToolUse hook pushes it."""
    a, b = user(tmp_path, "laptop", remote), user(tmp_path, "desktop", remote)
    forty_files(a)
    a.run("sync")
    b.env_extra.update(site_env(tmp_path))
    b.env_extra.update(MEMSYNC_TEST_STORE_DELAY_MS="200")
    b.settings(concurrency=2)
    proc = b.start("pull")
    meta_path = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        states = list((b.home / "state").glob("*/meta.json"))
        if states and "landing" in states[0].read_text():
            meta_path = states[0]
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert meta_path is not None, "the pull never saved its landing list"
    landing = json.loads(meta_path.read_text())["landing"]
    name = landing["names"][0]
    b.env_extra.update(MEMSYNC_TEST_STORE_DELAY_MS="0")

    claude = "---\nname: fact\ndescription: rewritten by Claude\ntype: project\n---\n\nNew.\n"
    (b.memory / name).write_text(claude)
    b.run("push", str(b.memory / name))  # what the PostToolUse hook runs
    assert (b.memory / name).read_text() == claude
    assert on_remote(remote)[name].decode() == claude
    b.run("sync")
    a.run("sync")
    assert (a.memory / name).read_text() == claude and a.files() == b.files()
    assert len(a.files()) == N


# --- 22: resolve waits for the state lock and keeps a push queued meanwhile -----------------


def test_resolve_waits_for_the_state_lock_and_keeps_what_was_queued(tmp_path, remote):
    a = user(tmp_path, "laptop", remote)
    a.write("user_pat.md", "Pat likes tea.\n", type="user")
    a.run("sync")
    state = a.state_dir()
    meta_path = state / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["conflicts"] = [{"file": "user_pat.md", "detail": "both changed", "at": 1.0}]
    meta_path.write_text(json.dumps(meta))

    with file_lock(state / "lock"):  # another memsync process at work
        proc = a.start("resolve")
        time.sleep(1.5)
        assert proc.poll() is None, "resolve changed the state while another process held it"
        meta = json.loads(meta_path.read_text())
        meta["pending"] = ["user_pat.md"]  # what that process queued (offline)
        meta_path.write_text(json.dumps(meta))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Cleared 1 conflict(s)." in out
    saved = json.loads(meta_path.read_text())
    assert saved["pending"] == ["user_pat.md"] and "conflicts" not in saved
