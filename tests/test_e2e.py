"""Two (or more) devices through the real CLI, against a folder remote and against Azurite."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from tests.devices import Device, make_device

VOICE_BASE = """
## Rules learned
- Short lines beat long ones in banter.

## 2026-11-20

### Landed
- A one-line answer to a teasing question.
"""


@pytest.fixture
def pair(tmp_path, remote_url):
    return make_device(tmp_path, "laptop", remote_url), make_device(tmp_path, "desktop", remote_url)


def seed(device: Device) -> None:
    (device.memory / "MEMORY.md").write_text(
        "# Memory index\n- [Role](user_role.md) — what the user does\n", encoding="utf-8"
    )
    device.write("user_role.md", "Staff engineer on the storage team.\n", type="user")
    device.write("feedback_tests.md", "Integration tests hit real servers.\n", type="feedback")
    device.write("voice_calibration.md", VOICE_BASE, type="voice_calibration")


def test_fresh_pull_is_byte_identical(pair):
    a, b = pair
    seed(a)
    a.run("push")
    b.run("pull")
    assert b.files() == a.files()
    assert "Everything is in sync." in b.run("sync").stdout


def test_concurrent_appends_to_voice_calibration_both_survive(pair):
    a, b = pair
    seed(a)
    a.run("push")
    b.run("pull")
    a_text = (a.memory / "voice_calibration.md").read_text()
    (a.memory / "voice_calibration.md").write_text(
        a_text + "\n### Missed\n- Laptop: a three-option quiz in a casual chat.\n"
    )
    b_text = (b.memory / "voice_calibration.md").read_text()
    (b.memory / "voice_calibration.md").write_text(
        b_text.replace(
            "- A one-line answer to a teasing question.\n",
            "- A one-line answer to a teasing question.\n- Desktop: the dry reply to the demo.\n",
        )
    )
    a.run("push")
    b.run("push")  # loses the race, merges, retries
    a.run("pull")
    for device in (a, b):
        text = (device.memory / "voice_calibration.md").read_text()
        assert "Laptop: a three-option quiz" in text
        assert "Desktop: the dry reply" in text
        assert text.count("Short lines beat long ones") == 1
    assert a.files() == b.files()


def test_a_torn_merge_base_is_ignored_and_both_edits_survive(pair):
    """Merge bases are written without fsync (they are checked against their hash), so a
    power cut may leave one torn: the merge must notice, not trust it, and lose nothing."""
    a, b = pair
    seed(a)
    a.run("push")
    b.run("pull")
    (db_path,) = b.home.rglob("bases.sqlite")
    with closing(sqlite3.connect(db_path)) as db, db:
        assert db.execute("SELECT count(*) FROM bases").fetchone()[0] > 0
        db.execute("UPDATE bases SET content = substr(content, 1, 10)")
    with (a.memory / "voice_calibration.md").open("a") as fh:
        fh.write("\n### Missed\n- Laptop: the long answer to a one-word question.\n")
    with (b.memory / "voice_calibration.md").open("a") as fh:
        fh.write("\n### Landed\n- Desktop: the shrug emoji.\n")
    a.run("push")
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        text = (device.memory / "voice_calibration.md").read_text()
        assert "Laptop: the long answer" in text
        assert "Desktop: the shrug emoji" in text
    assert a.files() == b.files()


def test_deletions_propagate_and_are_kept_in_history(pair):
    a, b = pair
    seed(a)
    a.run("sync")
    b.run("sync")
    before = (b.memory / "feedback_tests.md").read_text()
    (a.memory / "feedback_tests.md").unlink()
    out = a.run("sync").stdout
    assert "deleted on the remote: feedback_tests.md" in out
    b.run("sync")
    assert not (b.memory / "feedback_tests.md").exists()
    hist = b.run("history", "feedback_tests.md").stdout
    assert "deleted on another device" in hist
    kept = b.run("history", "feedback_tests.md", "--show", "1").stdout
    assert kept == before  # printed as kept, without restoring it
    assert "no version 2" in b.run("history", "feedback_tests.md", "--show", "2", check=1).stderr
    assert "--show" in b.run("history", "feedback_tests.md", "--show", "0", check=2).stderr
    b.run("restore", "feedback_tests.md")
    assert (b.memory / "feedback_tests.md").exists()
    b.run("sync")
    a.run("sync")
    assert (a.memory / "feedback_tests.md").exists(), "a restore is a new write and propagates"


def test_mass_delete_guard(pair):
    a, b = pair
    for i in range(10):
        a.write(f"project_p{i}.md", f"Project {i}.\n", type="project")
    a.run("sync")
    b.run("sync")
    for i in range(8):
        (b.memory / f"project_p{i}.md").unlink()
    refused = b.run("sync", check=1)
    assert "--force" in refused.stderr
    assert len(a.run("sync").stdout.splitlines()) == 1  # nothing was deleted remotely
    b.run("sync", "--force")
    # the same guard protects the other device when the mass deletion arrives
    assert "--force" in a.run("sync", check=1).stderr
    assert len(a.files()) == 10
    a.run("sync", "--force")
    assert sorted(a.files()) == ["project_p8.md", "project_p9.md"]


def test_status_json_is_versioned_and_lists_changes(pair):
    a, b = pair
    seed(a)
    a.run("push")
    b.write("project_new.md", "New.\n", type="project")
    doc = json.loads(b.run("status", "--json").stdout)
    assert doc["version"] == 1
    assert doc["command"] == "status"
    data = doc["data"]
    assert data["local_only"] == ["project_new.md"]
    assert sorted(data["remote_only"]) == sorted(a.files())


def test_sync_off_is_a_no_op(pair):
    a, _ = pair
    seed(a)
    a.env_extra["MEMSYNC_SYNC"] = "off"
    proc = a.run("sync")
    assert "sync is off" in proc.stderr
    a.env_extra.pop("MEMSYNC_SYNC")
    assert "pushed: user_role.md" in a.run("sync").stdout


BAD_INPUTS = {
    "broken_yaml.md": (b"---\nname: [unclosed\ndescription: x\n---\nbody\n", "not valid YAML"),
    "no_frontmatter.md": (b"Just text, no frontmatter.\n", "no YAML frontmatter"),
    "latin1.md": (b"---\nname: x\ndescription: caf\xe9\n---\n", "not UTF-8"),
    "empty.md": (b"", "empty"),
    "huge.md": (b"---\nname: h\ndescription: h\n---\n" + b"x" * (1024 * 1024), "over the"),
    "bomb.md": (
        b"---\nname: b\ndescription: b\na: &a [x, x, x, x, x, x, x, x, x]\n"
        b"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b]\n---\n",
        "anchors or aliases",
    ),
    "notes.txt": (b"plain text file\n", "only Markdown files ending in .md"),
}


def test_every_bad_input_is_refused_with_one_sentence_and_the_rest_syncs(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    a = make_device(tmp_path, "laptop", remote.as_uri())
    b = make_device(tmp_path, "desktop", remote.as_uri())
    a.write("user_ok.md", "Fine.\n", type="user")
    for name, (data, _) in BAD_INPUTS.items():
        (a.memory / name).write_bytes(data)
    proc = a.run("sync", check=1)
    for name, (data, phrase) in BAD_INPUTS.items():
        lines = [line for line in proc.stderr.splitlines() if line.startswith(f"refused: {name}:")]
        assert len(lines) == 1, (name, proc.stderr)
        assert phrase in lines[0], (name, lines[0])
        assert (a.memory / name).read_bytes() == data, f"{name} must be left untouched"
    b.run("pull")
    assert sorted(b.files()) == ["user_ok.md"]
    status = a.run("status").stdout
    for name in BAD_INPUTS:
        assert f"refused: {name}:" in status
    validate = a.run("validate", check=1).stdout
    assert all(name in validate for name in BAD_INPUTS)


def test_offline_queues_and_the_next_sync_drains(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    a = make_device(tmp_path, "laptop", remote.as_uri())
    b = make_device(tmp_path, "desktop", remote.as_uri())
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    hidden = tmp_path / "remote-unmounted"
    remote.rename(hidden)  # the drive goes away
    a.write("project_offline.md", "Written on a plane.\n", type="project")
    proc = a.run("push", check=3)
    assert "unreachable" in proc.stderr
    assert "queued" in proc.stderr
    assert (a.memory / "project_offline.md").exists()
    assert "queued, not sent yet: project_offline.md" in a.run("status").stdout
    hidden.rename(remote)
    a.run("pull")  # drains the queue first
    b.run("pull")
    assert "project_offline.md" in b.files()
    assert "queued" not in a.run("status").stdout


def test_a_queued_file_that_already_landed_leaves_the_queue(tmp_path):
    """A push cut off after its PUT landed (the answer lost) leaves the file queued with the
    remote already holding it: the next sync finds both sides identical, records the file and
    must not go on listing it as queued."""
    remote = tmp_path / "remote"
    remote.mkdir()
    a = make_device(tmp_path, "laptop", remote.as_uri())
    b = make_device(tmp_path, "desktop", remote.as_uri())
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    hidden = tmp_path / "remote-unmounted"
    remote.rename(hidden)
    a.write("project_same.md", "The same words on both.\n", type="project")
    a.run("push", check=3)
    assert "queued, not sent yet: project_same.md" in a.run("status").stdout
    hidden.rename(remote)
    (b.memory / "project_same.md").write_bytes((a.memory / "project_same.md").read_bytes())
    b.run("push")  # the remote now holds exactly what a queued
    proc = a.run("sync")
    assert "merged" not in proc.stdout + proc.stderr
    status = a.run("status").stdout
    assert "queued, not sent yet" not in status, status


def test_cli_usage_errors_exit_2_and_bad_settings_exit_1(tmp_path):
    a = make_device(tmp_path, "laptop", (tmp_path / "r").as_uri())
    assert a.run("sync", "--no-such-flag", check=2).returncode == 2
    a.home.mkdir(parents=True)
    (a.home / "settings.json").write_text("{not json")
    proc = a.run("status", check=1)
    assert "settings.json: not valid JSON" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_module_and_console_script_agree(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "memsync", "--help"], capture_output=True, text=True, check=True
    )
    assert "pull" in proc.stdout
    exe = shutil.which("memsync")
    if exe:
        assert "pull" in subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
