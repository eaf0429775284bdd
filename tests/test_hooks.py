"""The Claude Code hooks as real subprocesses with real JSON payloads: a session on one device
writes memory, post-tool-use pushes it, the other device's session-start primer shows it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.devices import Device, make_device, wait_until

ROOT = Path(__file__).resolve().parent.parent


def folder_device(tmp_path) -> Device:
    (tmp_path / "remote").mkdir(exist_ok=True)
    return make_device(tmp_path, "d", (tmp_path / "remote").as_uri())


def hook(device: Device, event: str, payload: object, timeout: float = 60):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    proc = device.run("hook", event, input=text, check=None, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc


def start_payload(device: Device, session: str = "s-1", source: str = "startup") -> dict:
    return {
        "session_id": session,
        "transcript_path": str(device.root / f"{session}.jsonl"),
        "cwd": str(device.root),
        "hook_event_name": "SessionStart",
        "source": source,
    }


def write_payload(device: Device, path, tool: str = "Write") -> dict:
    return {
        "session_id": "s-1",
        "transcript_path": str(device.root / "s-1.jsonl"),
        "cwd": str(device.root),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {"file_path": str(path), "content": "..."},
        "tool_response": {"filePath": str(path), "success": True},
    }


def primer(proc) -> str:
    doc = json.loads(proc.stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = doc["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 10_000
    return context


def log_text(device: Device) -> str:
    path = device.home / "logs" / "memsync.log"
    return path.read_text() if path.exists() else ""


def test_write_on_one_device_reaches_the_next_session_on_another(tmp_path, remote_url):
    laptop = make_device(tmp_path, "laptop", remote_url)
    desktop = make_device(tmp_path, "desktop", remote_url)
    laptop.run("sync")  # the first sync makes the remote (a hook never does: README "Remotes")
    primer(hook(laptop, "session-start", start_payload(laptop)))
    path = laptop.write(
        "carry_forward.md",
        "## Pending\n- Ask how the marathon training went.\n\n## Consumed\n",
        type="carry_forward",
    )
    hook(laptop, "post-tool-use", write_payload(laptop, path))
    assert "pushed carry_forward.md" in log_text(laptop)

    context = primer(hook(desktop, "session-start", start_payload(desktop, "s-2")))
    assert "Ask how the marathon training went." in context
    assert "reference data" in context
    assert (desktop.memory / "carry_forward.md").read_bytes() == path.read_bytes()


def test_two_sessions_writing_the_same_file_merge(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    b = make_device(tmp_path, "b", remote_url)
    a.run("sync")  # the first sync makes the remote (a hook never does: README "Remotes")
    base = "## 2026-11-20\n\n### Landed\n- short answer\n"
    pa = a.write("voice_calibration.md", base, type="voice_calibration")
    hook(a, "post-tool-use", write_payload(a, pa))
    hook(b, "session-start", start_payload(b))
    pa = a.write("voice_calibration.md", base + "- the pun about ETags\n", type="voice_calibration")
    pb = b.write(
        "voice_calibration.md",
        base + "\n### Missed\n- lectured about CRDTs\n",
        type="voice_calibration",
    )
    hook(a, "post-tool-use", write_payload(a, pa, "Edit"))
    hook(b, "post-tool-use", write_payload(b, pb, "MultiEdit"))
    hook(a, "session-start", start_payload(a, "s-3"))
    for device in (a, b):
        text = (device.memory / "voice_calibration.md").read_text()
        assert "the pun about ETags" in text and "lectured about CRDTs" in text
    assert a.files() == b.files()


def test_session_start_says_offline_and_uses_local_files(tmp_path):
    device = make_device(tmp_path, "d", (tmp_path / "unmounted").as_uri())
    device.write("running_commitments.md", "## Open\n- [c-1] send the draft\n", type="commitments")
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "not refreshed from the remote" in context
    assert "[c-1] send the draft" in context
    assert "session-start" in log_text(device)


def test_pull_time_budget_is_respected(tmp_path, monkeypatch):
    """An Azure remote that accepts connections but never answers: the hook gives up in time."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]
    try:
        device = make_device(
            tmp_path,
            "d",
            f"http://127.0.0.1:{port}/devstoreaccount1/c/p",
            AZURE_STORAGE_KEY="a2V5",
        )
        (device.home).mkdir(parents=True)
        (device.home / "settings.json").write_text(json.dumps({"pull_timeout": 1.0}))
        started = time.monotonic()
        context = primer(hook(device, "session-start", start_payload(device), timeout=60))
        elapsed = time.monotonic() - started
    finally:
        server.close()
    assert "not refreshed" in context
    assert elapsed < 30  # bounded by the budget, not by the SDK's retries (loose on purpose)


def test_compact_source_adds_the_reread_rule(tmp_path):
    remote = (tmp_path / "remote").as_uri()
    device = make_device(tmp_path, "d", remote)
    context = primer(hook(device, "session-start", start_payload(device, source="compact")))
    assert "re-read MEMORY.md" in context


def test_memory_md_is_not_repeated_in_the_primer(tmp_path):
    device = folder_device(tmp_path)
    (device.memory / "MEMORY.md").write_text("- [Unique index line](x.md)\n")
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "Unique index line" not in context


def test_conflicts_and_refused_files_lead_the_primer(tmp_path):
    device = folder_device(tmp_path)
    key = "AKIA" + "Q4XW7ZT2MRB5KJ3N"
    device.write("reference_aws.md", f"The key is {key}\n", type="reference")
    device.run("sync", check=1)
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "Needs the user's attention" in context
    assert "reference_aws.md" in context
    assert key not in context


def test_write_outside_the_memory_dir_does_nothing(tmp_path):
    device = folder_device(tmp_path)
    other = tmp_path / "project" / "main.py"
    hook(device, "post-tool-use", write_payload(device, other))
    assert not (tmp_path / "remote" / "e2e-project").exists()
    assert log_text(device) == ""


def test_post_tool_use_fast_path_does_not_import_the_engine_or_azure(tmp_path):
    """Measured by what gets imported, not by time: these machines are noisy."""
    device = make_device(tmp_path, "d", "https://acct.blob.core.windows.net/c/p")
    payload = json.dumps(json.dumps(write_payload(device, tmp_path / "x.py")))
    snippet = (
        "import io\n"
        "from memsync.claude.hooks import main\n"
        f"assert main(['post-tool-use'], stdin=io.StringIO({payload})) == 0"
    )
    heavy = ("azure", "anthropic", "memsync.sync.engine", "yaml", "typer", "rich")
    assert device.imports(snippet, heavy)[1] == []


def test_refused_file_is_queued_for_the_user_not_pushed(tmp_path):
    device = folder_device(tmp_path)
    path = device.write("feedback_x.md", "password: hunter2-Secret9\n", type="feedback")
    hook(device, "post-tool-use", write_payload(device, path))
    assert "not pushed" in log_text(device)
    assert "hunter2" not in log_text(device)
    assert not (tmp_path / "remote" / "e2e-project" / "feedback_x.md").exists()


@pytest.mark.parametrize(
    ("event", "stdin"),
    [
        ("session-start", "not json at all {"),
        ("session-start", ""),
        ("post-tool-use", "[1, 2, 3]"),
        ("post-tool-use", '{"tool_name": "Write"}'),
        ("post-tool-use", '{"tool_name": "Write", "tool_input": {"file_path": 7}}'),
        ("session-end", "\x00\x01garbage"),
        ("pre-compact", "{}"),
        ("no-such-event", "{}"),
    ],
)
def test_hooks_survive_bad_input_and_log_it(tmp_path, event, stdin):
    device = folder_device(tmp_path)
    proc = hook(device, event, stdin)
    if event == "session-start":
        primer(proc)  # still a valid (if short) primer
    else:
        assert proc.stdout == ""
    assert proc.stderr == ""
    assert log_text(device).strip(), "every hook leaves a log line"


def test_broken_settings_still_exit_zero(tmp_path):
    device = folder_device(tmp_path)
    device.home.mkdir(parents=True)
    (device.home / "settings.json").write_text("{broken")
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "settings.json" in context
    proc = hook(device, "post-tool-use", write_payload(device, device.memory / "x.md"))
    assert proc.stdout == ""
    assert "settings.json" in log_text(device)


def test_memory_dir_that_is_not_a_directory_exits_zero(tmp_path):
    device = folder_device(tmp_path)
    device.memory.rmdir()
    device.memory.write_text("not a folder")
    primer(hook(device, "session-start", start_payload(device)))
    hook(device, "post-tool-use", write_payload(device, device.memory / "x.md"))
    hook(device, "session-end", {"session_id": "s", "cwd": str(device.root)})
    assert device.memory.read_text() == "not a folder"


def test_unreadable_memory_file_exits_zero_and_is_reported(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    device = folder_device(tmp_path)
    path = device.write("user_x.md", "x\n", type="user")
    path.chmod(0)
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "user_x.md" in context


def test_session_end_returns_at_once_and_the_detached_flush_pushes(tmp_path):
    device = folder_device(tmp_path)
    device.write(
        "self_observations.md", "## Failure modes\n- lecturing\n", type="self_observations"
    )
    payload = {
        "session_id": "s-9",
        "transcript_path": str(device.root / "s-9.jsonl"),
        "cwd": str(device.root),
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }
    hook(device, "session-end", payload)
    target = tmp_path / "remote" / "e2e-project" / "self_observations.md"
    deadline = time.monotonic() + 60
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert target.exists(), log_text(device)
    # a clean stop: the next start does not report a crash
    context = primer(hook(device, "session-start", start_payload(device, "s-10")))
    assert "did not end cleanly" not in context


def test_file_changed_stop_and_post_compact_push_what_no_tool_hook_saw(tmp_path):
    device = folder_device(tmp_path)
    path = device.write("feedback_bash.md", "From Bash.\n", type="feedback")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not memory\n")
    base = {"session_id": "s-1", "cwd": str(device.root)}
    changed = {**base, "hook_event_name": "FileChanged", "event": "add"}
    hook(device, "file-changed", {**changed, "file_path": str(outside)})
    target = tmp_path / "remote" / "e2e-project"
    assert not target.exists() or not list(target.glob("*.md"))
    hook(device, "file-changed", {**changed, "file_path": str(path)})
    assert (target / "feedback_bash.md").exists()
    device.write("user_role.md", "Engineer.\n", type="user")
    hook(device, "stop", {**base, "hook_event_name": "Stop"})
    assert (target / "user_role.md").exists()
    device.write("project_x.md", "Ships Friday.\n", type="project")
    hook(device, "post-compact", {**base, "hook_event_name": "PostCompact", "trigger": "auto"})
    assert (target / "project_x.md").exists()


def test_logs_are_private(tmp_path):
    device = folder_device(tmp_path)
    hook(device, "pre-compact", {"session_id": "s", "cwd": str(device.root), "trigger": "auto"})
    log = device.home / "logs" / "memsync.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


def test_a_deleted_memory_file_is_logged_as_a_deletion(tmp_path):
    device = folder_device(tmp_path)
    path = device.write("quick.md", "x\n", type="user")
    device.write("user_stays.md", "y\n", type="user")  # an emptied memory dir reads as lost
    device.run("push")
    path.unlink()
    base = {"session_id": "s-1", "cwd": str(device.root), "hook_event_name": "FileChanged"}
    hook(device, "file-changed", {**base, "event": "unlink", "file_path": str(path)})
    assert not (tmp_path / "remote" / "e2e-project" / "quick.md").exists()
    assert "file-changed: deleted on the remote quick.md" in log_text(device)
    assert "pushed quick.md" not in log_text(device)


def test_files_deleted_one_at_a_time_meet_the_same_guard_as_one_sync(tmp_path):
    """Fresh-eyes s28c, F6: FileChanged `unlink` events, one a file as 12 of 13 files were
    removed one at a time, deleted all 12 from the remote, where one `sync` deleting them
    takes --force. The count now runs from the last full sync: the 7th deletion is refused
    and logged, `sync` says why, and `sync --force` carries it out."""
    device = folder_device(tmp_path)
    paths = [device.write(f"user_n{i:02}.md", f"Note {i}.\n", type="user") for i in range(13)]
    device.run("push")
    base = {"session_id": "s-1", "cwd": str(device.root), "hook_event_name": "FileChanged"}
    remote = tmp_path / "remote" / "e2e-project"
    for path in paths[:12]:
        path.unlink()
        hook(device, "file-changed", {**base, "event": "unlink", "file_path": str(path)})
    assert len(list(remote.glob("user_n*.md"))) == 7  # 6 went, as one sync could delete
    hook(device, "stop", {**base, "hook_event_name": "Stop"})
    assert "one at a time" in log_text(device)
    assert "Traceback" not in log_text(device)  # a refusal is one line (s29b, finding 4)
    said = device.run("sync", check=1).stderr
    assert "12 of 13" in said and "one at a time" in said and "--force" in said, said
    assert len(list(remote.glob("user_n*.md"))) == 7  # nothing more went
    device.run("sync", "--force")  # the user means it
    assert [p.name for p in remote.glob("user_n*.md")] == ["user_n12.md"]
    # a deletion after a full sync that went through counts from there
    device.write("user_a.md", "A.\n", type="user")
    device.write("user_b.md", "B.\n", type="user")
    device.run("sync")
    paths[12].unlink()
    hook(device, "file-changed", {**base, "event": "unlink", "file_path": str(paths[12])})
    assert not (remote / "user_n12.md").exists()


def unnamed_hook(device: Device, event: str, payload: dict) -> str:
    """Run hook `event` in a folder with no git origin or commit and no project name; its
    exit code is 0 and what it tells Claude (its additionalContext) is returned."""
    import subprocess
    import sys

    env = device.env()
    del env["MEMSYNC_PROJECT"]
    proc = subprocess.run(
        [sys.executable, "-m", "memsync", "hook", event],
        env=env,
        cwd=device.root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_session_start_in_an_unnamed_project_tells_the_agent_what_to_do(tmp_path):
    """A folder with no git origin or commit and no project name: the session still gets a
    primer saying memory was not synced and how to name the project, and the hook exits 0."""
    device = folder_device(tmp_path)
    device.write("user_role.md", "Engineer.\n", type="user")
    context = unnamed_hook(device, "session-start", start_payload(device))
    assert "memsync could not start" in context
    assert "--project NAME" in context
    assert "Memory was not synced this session." in context


def test_a_write_in_an_unnamed_project_tells_claude_it_was_not_synced(tmp_path):
    """The PostToolUse push in a folder with no git and no project name: Claude is told its
    write stays here and how to name the project; the log says so without a traceback
    (fresh-eyes re-trial s28, finding 2b)."""
    device = folder_device(tmp_path)
    path = device.write("user_role.md", "Engineer.\n", type="user")
    told = unnamed_hook(device, "post-tool-use", write_payload(device, path))
    assert "user_role.md was NOT synced" in told and "--project NAME" in told, told
    assert "Traceback" not in log_text(device) and "not pushed" in log_text(device)


# --- what Claude Code waits for (issue 37): the answer, not the push -------------------------


def answered_first(device: Device) -> Device:
    """`device` with the PostToolUse hook as installed: it answers, then pushes."""
    device.env_extra["MEMSYNC_HOOK_PUSH_WAIT"] = "off"
    return device


def told(proc) -> str:
    if not proc.stdout.strip():
        return ""
    doc = json.loads(proc.stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    return doc["hookSpecificOutput"]["additionalContext"]


def kept_notice(device: Device) -> bool:
    return any(device.home.rglob("hook_notices.json"))


def loaded_by_hook(device: Device, event: str, payload: dict) -> list[str]:
    """The modules the hook process Claude Code waits for has loaded when it exits: the
    console entry run as a user's venv runs it (site on, so PyYAML is importable)."""
    code = (
        "import io, json, sys\n"
        f"sys.argv = ['memsync', 'hook', {event!r}]\n"
        f"sys.stdin = io.StringIO({json.dumps(payload)!r})\n"
        "import os\n"
        "_exit = os._exit\n"
        "def ended(code):  # the hook ends the process itself: report what it loaded first\n"
        "    print(json.dumps(sorted(sys.modules)), file=sys.stderr, flush=True)\n"
        "    _exit(code)\n"
        "os._exit = ended\n"
        "from memsync.entry import main\n"
        "main()\n"
    )
    env = dict(device.env(), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stderr.strip().splitlines()[-1])


# loaded only by the push, which runs after the answer: the engine and what it alone needs
PUSH_ONLY = (
    "memsync.sync.engine",
    "memsync.sync.execute",
    "memsync.sync.merging",
    "memsync.sync.tombstones",
    "memsync.stores",
    "sqlite3",
)
# never on a hook's path: the CLI's frameworks, and what a folder remote has no use for
# (memsync's log is written without `logging`: claude/log.py)
NEVER = ("typer", "rich", "click", "azure", "anthropic", "logging", "socket", "ssl", "dataclasses")


def test_a_memory_write_is_answered_before_its_push_and_the_push_follows(tmp_path):
    device = answered_first(folder_device(tmp_path))
    path = device.write("feedback_tests.md", "Run the tests before pushing.\n", type="feedback")
    loaded = loaded_by_hook(device, "post-tool-use", write_payload(device, path))
    assert [m for m in loaded if m.startswith(PUSH_ONLY + NEVER)] == []
    assert "memsync.privacy.scanner" in loaded  # the file was checked before the answer
    remote = tmp_path / "remote" / "e2e-project" / "feedback_tests.md"
    assert wait_until(remote.exists), log_text(device)
    assert remote.read_bytes() == path.read_bytes()


def test_session_start_loads_no_cli_no_scanner_and_no_network_client(tmp_path):
    device = folder_device(tmp_path)
    device.write("feedback_a.md", "A fact.\n", type="feedback")
    device.run("push")
    loaded = loaded_by_hook(device, "session-start", start_payload(device))
    heavy = NEVER + ("yaml", "memsync.privacy.scanner", "subprocess")
    assert [m for m in loaded if m.startswith(heavy)] == []
    assert "memsync.sync.engine" in loaded  # it did pull


def test_answered_first_a_refused_write_is_told_at_once_and_only_once(tmp_path):
    device = answered_first(folder_device(tmp_path))
    path = device.write("feedback_x.md", "password: hunter2-Secret9\n", type="feedback")
    said = told(hook(device, "post-tool-use", write_payload(device, path)))
    assert "feedback_x.md was NOT synced" in said and "hunter2" not in said
    assert wait_until(lambda: "not pushed" in log_text(device))
    other = write_payload(device, tmp_path / "project" / "main.py")
    assert told(hook(device, "post-tool-use", other)) == ""  # the push found nothing new
    assert not (tmp_path / "remote" / "e2e-project" / "feedback_x.md").exists()


def test_answered_first_a_write_replaced_by_another_device_is_told_by_the_next_hook(tmp_path):
    """What only the push can find (another device's later edit kept over Claude's) is told
    by the next hook that can speak to Claude, once; the session-start primer if none did."""
    (tmp_path / "remote").mkdir()
    a = make_device(tmp_path, "a", (tmp_path / "remote").as_uri())
    b = answered_first(make_device(tmp_path, "b", (tmp_path / "remote").as_uri()))
    a.write("user_pat.md", "Pat takes coffee black.\n", type="user")
    a.run("sync")
    b.run("sync")
    path = b.write("user_pat.md", "Pat takes coffee with oat milk (B).\n", type="user")
    os.utime(path, (time.time() - 5, time.time() - 5))
    a.write("user_pat.md", "Pat switched to tea (A, later).\n", type="user")
    a.run("sync")
    assert told(hook(b, "post-tool-use", write_payload(b, path))) == ""
    assert wait_until(lambda: kept_notice(b)), log_text(b)
    other = write_payload(b, tmp_path / "project" / "main.py")
    said = told(hook(b, "post-tool-use", other))
    assert "user_pat.md" in said and "replaced" in said and "history" in said, said
    assert told(hook(b, "post-tool-use", other)) == ""  # told once
    # not told in the session: the next session's primer says it
    b.write("user_pat.md", "Pat drinks tea.\n", type="user")
    os.utime(path, (time.time() - 5, time.time() - 5))
    a.write("user_pat.md", "Pat drinks green tea (A, later).\n", type="user")
    a.run("sync")
    assert told(hook(b, "post-tool-use", write_payload(b, path))) == ""
    assert wait_until(lambda: kept_notice(b)), log_text(b)
    said = primer(hook(b, "session-start", start_payload(b)))
    assert "replaced by another device's version" in said, said


def test_the_log_rolls_over_privately_and_keeps_every_line_whole(tmp_path, monkeypatch):
    from memsync.claude import log

    monkeypatch.setattr(log, "MAX_BYTES", 400)
    logger = log.get_logger(tmp_path)
    for i in range(60):
        logger.info("session-start: pulled %d, merged %d, pushed %d", i, i, i)
    logger.warning("post-tool-use: %s not pushed", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    files = sorted((tmp_path / "logs").iterdir())
    assert [f.name for f in files] == [f"memsync.log{s}" for s in ("", ".1", ".2", ".3")]
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}
    for f in files:
        for line in f.read_text().splitlines():
            assert " INFO [" in line or " WARNING [" in line, line
    kept = "".join(f.read_text() for f in files)  # the newest lines, the oldest rolled away
    assert "pulled 59, merged 59, pushed 59" in kept and "pulled 0," not in kept
    assert "ghp_" not in kept


def test_an_edit_of_a_file_forgotten_elsewhere_is_told_by_the_next_hook(tmp_path):
    """The push after the answer sets aside an edit of a file another device forgot (the
    file leaves the memory dir): the next PostToolUse hook tells Claude so, once."""
    remote = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()
    a = answered_first(make_device(tmp_path, "a", remote))
    b = make_device(tmp_path, "b", remote)
    a.write("project_f.md", "A fact to forget.\n", type="project")
    a.run("sync")
    b.run("sync")
    b.run("forget", "project_f.md", "-y")
    path = a.write("project_f.md", "A fact to forget, edited.\n", type="project")
    assert told(hook(a, "post-tool-use", write_payload(a, path))) == ""  # not known here yet
    assert wait_until(lambda: not path.exists())  # the push set the edit aside
    other = a.write("project_other.md", "Another fact.\n", type="project")
    said = told(hook(a, "post-tool-use", write_payload(a, other)))
    assert "project_f.md was NOT synced" in said and "forgotten on another device" in said
    assert told(hook(a, "post-tool-use", write_payload(a, other))) == ""  # told once


def test_a_write_too_large_to_sync_is_told_though_its_payload_is_megabytes(tmp_path):
    """Claude Code's PostToolUse payload carries a Write's content twice (input and
    response): a 2.5 MB memory file makes a 5 MB payload, and Claude is still told."""
    device = answered_first(folder_device(tmp_path))
    body = "A long fact.\n" * 200_000
    path = device.write("feedback_big.md", body, type="feedback")
    payload = write_payload(device, path)
    payload["tool_input"]["content"] = path.read_text()
    payload["tool_response"]["content"] = path.read_text()
    said = told(hook(device, "post-tool-use", payload))
    assert "feedback_big.md was NOT synced" in said
