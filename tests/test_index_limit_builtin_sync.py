"""Beside Claude Code's own memory sync: detected as the 2.1.330 CLI decides it (a
`"scope": "user"` store in CLAUDE_MEMORY_STORES, from the environment or a settings scope's
`env`; its `.memory-sync` manifest in the folder), memsync's install, sync and hooks stand
aside with one sentence; the setting `sync_beside_claude_code` chooses memsync anyway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsync.context import builtin_sync
from memsync.sync.walk import ignored_why
from tests.devices import Device, make_device

USER_STORE = json.dumps([{"path": "/memories/me", "scope": "user"}])
TEAM_ONLY = json.dumps(["/memories/team-a", {"path": "/memories/b", "scope": "team"}])
SENTENCE = "Claude Code's own memory sync is on for"


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(builtin_sync.STORES_ENV, raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setattr(builtin_sync, "managed_settings_path", lambda: tmp_path / "managed.json")
    memory = tmp_path / "memory"
    memory.mkdir()
    return memory


def test_detection_follows_the_cli(clean: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    assert builtin_sync.detect(clean) is None
    monkeypatch.setenv(builtin_sync.STORES_ENV, TEAM_ONLY)  # team stores live under team/
    assert builtin_sync.detect(clean) is None
    monkeypatch.setenv(builtin_sync.STORES_ENV, "[{not json")  # the CLI turns its sync off
    assert builtin_sync.detect(clean) is None
    monkeypatch.setenv(builtin_sync.STORES_ENV, USER_STORE)
    assert "in the environment" in (builtin_sync.detect(clean) or "")
    monkeypatch.delenv(builtin_sync.STORES_ENV)
    # a settings scope's env block puts it into Claude Code's environment
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps({"env": {builtin_sync.STORES_ENV: USER_STORE}}))
    assert str(settings) in (builtin_sync.detect(clean, project) or "")
    managed = {"env": {builtin_sync.STORES_ENV: USER_STORE}}
    (tmp_path / "managed.json").write_text(json.dumps(managed))
    assert "managed.json" in (builtin_sync.detect(clean, project) or "")
    (tmp_path / "managed.json").unlink()
    settings.unlink()
    (clean / ".memory-sync").write_text('{"v":1,"partition":"p"}')
    assert ".memory-sync" in (builtin_sync.detect(clean, project) or "")


def test_the_team_folder_is_matched_as_the_cli_matches_it():
    for name in ("team/a/x.md", "Team/x.md", "team./x.md", "TEAM. /x.md"):
        assert ignored_why(name) is not None, name
    assert ignored_why("teams/x.md") is None and ignored_why("team_notes.md") is None


def _device(tmp_path: Path, **env: str) -> Device:
    (tmp_path / "remote").mkdir(parents=True, exist_ok=True)
    device = make_device(tmp_path, "laptop", (tmp_path / "remote").as_uri(), **env)
    device.write("feedback_tests.md", "Write the failing test first.\n", type="feedback")
    return device


def _remote_md(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "remote").rglob("*.md"))


def test_on_every_entry_point_stands_aside_with_one_sentence(tmp_path: Path):
    device = _device(tmp_path, CLAUDE_MEMORY_STORES=USER_STORE)
    for command in (("sync",), ("push",), ("pull",), ("compact",), ("install",)):
        proc = device.run(*command, check=1)
        assert SENTENCE in proc.stderr and "sync_beside_claude_code" in proc.stderr, command
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert _remote_md(tmp_path) == []
    assert not (tmp_path / "laptop" / ".claude" / "settings.json").exists()  # not installed
    path = device.memory / "feedback_tests.md"
    assert device.post_tool_use(path, "Write").returncode == 0
    assert device.hook("stop", hook_event_name="Stop").returncode == 0
    start = device.hook("session-start", hook_event_name="SessionStart", source="startup")
    assert start.returncode == 0
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert SENTENCE in context
    assert _remote_md(tmp_path) == []
    assert SENTENCE in (device.home / "logs" / "memsync.log").read_text()
    status = json.loads(device.run("status", "--json").stdout)
    assert any(SENTENCE in n for n in status.get("data", status)["notices"])
    doctor = json.loads(device.run("doctor", "--json", check=1).stdout)
    checks = {c["name"]: c for c in doctor.get("data", doctor)["checks"]}
    assert not checks["Claude Code sync"]["ok"]


def test_the_manifest_it_leaves_stands_memsync_aside_too(tmp_path: Path):
    device = _device(tmp_path)
    (device.memory / ".memory-sync").write_text('{"v":1,"partition":"part_1"}')
    assert ".memory-sync" in device.run("sync", check=1).stderr
    assert _remote_md(tmp_path) == []


def test_off_or_chosen_deliberately_memsync_syncs(tmp_path: Path):
    device = _device(tmp_path, CLAUDE_MEMORY_STORES=TEAM_ONLY)
    device.run("sync")
    assert _remote_md(tmp_path) == ["feedback_tests.md"]
    chosen = _device(tmp_path / "chosen", CLAUDE_MEMORY_STORES=USER_STORE)
    chosen.home.mkdir(parents=True)
    (chosen.home / "settings.json").write_text('{"sync_beside_claude_code": true}')
    chosen.run("sync")
    assert _remote_md(tmp_path / "chosen") == ["feedback_tests.md"]
    doctor = json.loads(chosen.run("doctor", "--json", check=None).stdout)
    checks = {c["name"]: c for c in doctor.get("data", doctor)["checks"]}
    assert checks["Claude Code sync"]["ok"] and "sync_beside_claude_code" in checks[
        "Claude Code sync"
    ]["detail"]


def test_a_memsync_folder_at_any_depth_is_memsyncs_own_and_never_synced():
    """On the remote such a folder marks another project's records (stores/base.py
    nested_projects); a memory dir holding one must not send it up to look like one."""
    for name in ("_memsync/x.md", "notes/_memsync/project.json", "a/b/_memsync/x.md"):
        assert ignored_why(name) is not None, name
    assert ignored_why("notes/_memsync.md") is None and ignored_why("my_memsync/x.md") is None
