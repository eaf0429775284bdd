"""A lost folder on either side, as users lose them: the share not mounted (its mount point an
empty folder), the memory dir made again with a new file already in it. Nothing is deleted
anywhere; the user is told what to do."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.devices import make_device


@pytest.fixture
def pair(tmp_path):
    remote = tmp_path / "share"
    remote.mkdir()
    url = remote.as_uri()
    a, b = make_device(tmp_path, "a", url), make_device(tmp_path, "b", url)
    for i in range(8):
        a.write(f"project_fact{i}.md", f"fact {i}\n", type="project")
    a.run("sync")
    b.run("sync")
    return a, b, remote


@pytest.mark.parametrize("shape", ["empty mount point", "empty project folder"])
@pytest.mark.parametrize("command", ["sync", "pull", "push"])
def test_an_unmounted_share_deletes_nothing_and_says_to_mount_it(pair, shape, command):
    a, b, remote = pair
    before = b.files()
    remote.rename(remote.with_name("share.away"))
    remote.mkdir()  # what a NAS mount point looks like with the share not mounted
    if shape == "empty project folder":
        (remote / "e2e-project").mkdir()
    b.write("project_new.md", "written meanwhile\n", type="project")
    proc = b.run(command, check=1)
    assert "is empty" in proc.stderr and "mount it" in proc.stderr, proc.stderr
    assert "--republish" in proc.stderr
    assert b.files() == {**before, "project_new.md": b.files()["project_new.md"]}
    assert sorted(p.name for p in remote.rglob("*") if p.is_file()) == []  # nothing sent
    hook = b.run("hook", "session-start", input=json.dumps({"session_id": "s", "cwd": str(b.root)}))
    assert hook.returncode == 0 and len(b.files()) == len(before) + 1
    shutil.rmtree(remote)
    remote.with_name("share.away").rename(remote)  # mounted again
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files() and len(a.files()) == len(before) + 1


def test_a_remote_emptied_on_purpose_is_filled_again_with_republish(pair):
    a, b, remote = pair
    shutil.rmtree(remote / "e2e-project")
    b.run("sync", check=1)
    b.run("push", "--republish")
    a.run("sync")
    assert a.files() == b.files() and len(a.files()) == 8


def test_a_memory_dir_made_again_with_a_new_file_in_it_is_restored(pair):
    a, b, remote = pair
    shutil.rmtree(b.memory)
    b.memory.mkdir()
    b.write("user_new.md", "the agent wrote this first\n", type="user")
    proc = b.run("sync", check=1)
    assert "run `memsync pull`" in proc.stderr, proc.stderr
    assert len(a.run("pull").stdout) >= 0 and len(a.files()) == 8  # nothing deleted there
    b.run("pull")
    assert len(b.files()) == 9 and {**a.files(), "user_new.md": b"x"}.keys() == b.files().keys()
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()


def test_writes_to_an_unmounted_share_wait_for_it_and_nothing_is_lost_once_it_is_back(pair):
    """push FILE (Claude Code's PostToolUse hook), a plain push and forget send without
    listing; with the share unmounted they must not write into its empty mount point, where
    their files would be lost when the share comes back."""
    a, b, remote = pair
    remote.rename(remote.with_name("share.away"))
    remote.mkdir()  # the mount point of a share that is not mounted
    b.write("project_fact0.md", "fact 0, edited while the share was away\n", type="project")
    b.write("project_new.md", "written while the share was away\n", type="project")
    for args in (["push", "project_fact0.md"], ["push", "project_new.md"], ["push"]):
        proc = b.run(*args, check=None)
        assert proc.returncode in (1, 3), (args, proc.stdout, proc.stderr)
        assert "mount" in proc.stderr, (args, proc.stderr)
    proc = b.run("forget", "project_fact1.md", "--yes", check=None)
    assert proc.returncode == 3, proc.stderr
    assert b.post_tool_use(b.memory / "project_new.md", "Write").returncode == 0
    doctor = b.run("doctor", check=1)  # not "the first push creates it"
    assert "is missing, though this device synced" in doctor.stdout + doctor.stderr
    assert sorted(p for p in remote.rglob("*")) == []  # nothing made at the mount point
    shutil.rmtree(remote)
    remote.with_name("share.away").rename(remote)  # mounted again
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()
    assert a.files()["project_fact0.md"].endswith(b"edited while the share was away\n")
    assert "project_new.md" in a.files() and "project_fact1.md" not in a.files()


def test_republish_after_a_purge_works_the_first_time(pair):
    a, b, remote = pair
    a.run("purge", "--all", "--yes")
    proc = b.run("push", "--republish")
    assert "publishing this device's memory again" in proc.stdout, proc.stderr
    assert len(list((remote / "e2e-project").glob("*.md"))) == 8
    a.run("sync", check=1)  # the purging device's own mark is its own to lift


def test_status_of_a_lost_memory_dir_after_a_purge_does_not_promise_a_pull(pair):
    """Fresh-eyes re-trial s28, finding 4: A purges, B's memory dir is then lost: B's status
    said `memsync pull` brings back "the 0 memory file(s)", and pull refuses (purged). It
    says the project was purged instead."""
    a, b, remote = pair
    a.run("purge", "--all", "--yes")
    shutil.rmtree(b.memory)
    proc = b.run("status", check=None)
    said = proc.stdout + proc.stderr
    assert "memsync pull" not in said and "purge" in said, said


def test_a_new_device_refused_during_a_purge_joins_once_another_device_published(
    pair, tmp_path
):
    """Fresh-eyes re-trial s28b, F9: a device that never synced was refused while the project
    stood purged; after another device republished, it stayed refused and was never told.
    With nothing synced it has nothing to publish again: it joins as the README says."""
    a, b, remote = pair
    c = make_device(tmp_path, "c", remote.as_uri())
    c.write("user_new.md", "C's first memory.\n", type="user")
    a.run("purge", "--all", "--yes")
    assert "purged" in c.run("sync", check=1).stderr
    b.run("push", "--republish")
    c.run("sync")
    assert (c.memory / "project_fact0.md").exists()
    assert (remote / "e2e-project" / "user_new.md").exists()


@pytest.mark.parametrize("how", ["push FILE", "hook"])
def test_a_new_file_pushed_by_name_after_a_purge_is_not_uploaded(pair, how):
    """Fresh-eyes re-trial s28c, F1: after A's purge, B (not told yet) wrote a new file and
    pushed it by name, or Claude's after-write hook did: it went up next to the purge mark.
    A new file's push now lists first, sees the mark and uploads nothing."""
    a, b, remote = pair
    a.run("purge", "--all", "--yes")
    path = b.write("user_new.md", "Something new.\n", type="user")
    if how == "push FILE":
        assert "purged" in b.run("push", str(path), check=1).stderr
    else:
        payload = {"hook_event_name": "PostToolUse", "tool_name": "Write", "cwd": str(b.root)}
        payload["tool_input"] = {"file_path": str(path)}
        told = json.loads(b.run("hook", "post-tool-use", input=json.dumps(payload)).stdout)
        assert "NOT synced" in told["hookSpecificOutput"]["additionalContext"]
    assert not (remote / "e2e-project" / "user_new.md").exists()


def test_a_new_file_pushed_by_name_is_refused_beside_a_name_differing_by_case(pair):
    """Fresh-eyes re-trial s28c, F5: B synced User_Pat.md; A, not synced since, wrote
    user_pat.md and pushed it by name: both names reached the remote (one file on macOS and
    Windows). The push lists first and refuses it with the sentence `sync` gives."""
    a, b, remote = pair
    b.write("User_Pat.md", "Pat, by B.\n", type="user")
    b.run("sync")
    path = a.write("user_pat.md", "Pat, by A.\n", type="user")
    refused = a.run("push", str(path), check=1)
    assert "letter case" in refused.stderr, refused.stderr
    names = sorted(p.name for p in (remote / "e2e-project").glob("*.md"))
    assert "user_pat.md" not in names and "User_Pat.md" in names


def test_a_small_memory_dir_made_again_with_a_new_file_is_restored_not_deleted(tmp_path):
    """Below the few files a user may delete by hand, the index gives a lost folder away."""
    remote = tmp_path / "share"
    remote.mkdir()
    a, b = make_device(tmp_path, "a", remote.as_uri()), make_device(tmp_path, "b", remote.as_uri())
    for i in range(3):
        a.write(f"project_fact{i}.md", f"fact {i}\n", type="project")
    (a.memory / "MEMORY.md").write_text(
        "".join(f"- [f{i}](project_fact{i}.md)\n" for i in range(3))
    )
    a.run("sync")
    b.run("sync")
    shutil.rmtree(b.memory)
    b.memory.mkdir()
    b.write("user_new.md", "the agent wrote this first\n", type="user")
    proc = b.run("sync", check=1)
    assert "run `memsync pull`" in proc.stderr, proc.stderr
    a.run("sync")
    assert len(a.files()) == 4  # nothing deleted on the remote
    b.run("pull")
    assert set(b.files()) == {*a.files(), "user_new.md"}


def test_the_agents_first_file_in_a_lost_memory_dir_does_not_make_it_look_found(tmp_path):
    """Fresh-eyes trial: after `rm -rf` of the memory dir, the PostToolUse hook's `push FILE`
    of the agent's first new file recorded it; the folder then no longer looked lost and the
    Stop hook's push deleted every other file from the remote."""
    remote = tmp_path / "share"
    remote.mkdir()
    a, b = make_device(tmp_path, "a", remote.as_uri()), make_device(tmp_path, "b", remote.as_uri())
    for name in ("user_a.md", "user_b.md"):
        a.write(name, f"{name} fact\n", type="user")
    (a.memory / "MEMORY.md").write_text("- [a](user_a.md)\n- [b](user_b.md)\n")
    a.run("sync")
    b.run("sync")
    shutil.rmtree(a.memory)
    a.memory.mkdir()
    a.write("user_new.md", "the agent's first new file\n", type="user")
    proc = a.run("push", "user_new.md", check=1)
    assert "run `memsync pull`" in proc.stderr, proc.stderr
    stop = {"session_id": "s", "cwd": str(a.root), "hook_event_name": "Stop"}
    assert a.run("hook", "stop", input=json.dumps(stop)).returncode == 0
    b.run("sync")
    assert sorted(b.files()) == ["MEMORY.md", "user_a.md", "user_b.md"]  # nothing deleted
    a.run("pull")
    assert sorted(a.files()) == ["MEMORY.md", "user_a.md", "user_b.md", "user_new.md"]


def test_the_agent_is_told_its_write_into_a_lost_memory_dir_was_not_synced(tmp_path):
    """Fresh-eyes trial: the PostToolUse hook's push into a lost memory dir was refused, but
    the hook printed nothing, so Claude believed the file synced."""
    remote = tmp_path / "share"
    remote.mkdir()
    a = make_device(tmp_path, "a", remote.as_uri())
    for name in ("user_a.md", "user_b.md"):
        a.write(name, f"{name} fact\n", type="user")
    (a.memory / "MEMORY.md").write_text("- [a](user_a.md)\n- [b](user_b.md)\n")
    a.run("sync")
    shutil.rmtree(a.memory)
    a.memory.mkdir()
    a.write("user_new.md", "the agent's first new file\n", type="user")
    hook = a.post_tool_use(a.memory / "user_new.md", "Write")
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "user_new.md was NOT synced" in context and "memsync pull" in context, context
    log = (a.home / "logs" / "memsync.log").read_text()
    assert "user_new.md not pushed" in log and "Traceback" not in log, log


def test_a_memory_dir_left_with_only_its_index_is_restored_not_deleted(pair):
    """Fresh-eyes trial: every file but MEMORY.md gone (the folder lost and the index written
    again) was not seen as a lost folder: `pull` said "Everything is in sync." with the files
    missing, and `sync` suggested the --force that deletes them everywhere."""
    a, b, remote = pair
    (a.memory / "MEMORY.md").write_text("- [f0](project_fact0.md)\n")
    a.run("sync")
    b.run("sync")
    for path in b.memory.iterdir():
        if path.name != "MEMORY.md":
            path.unlink()
    status = json.loads(b.run("status", "--json").stdout)
    assert status["data"]["memory_dir_lost"] is True
    proc = b.run("sync", check=1)
    assert "run `memsync pull`" in proc.stderr and "--force" not in proc.stderr, proc.stderr
    # one count in every message: the 8 files that are gone (s28c, F6: 8 here, 9 there)
    assert "8 file(s) were synced from it" in proc.stderr, proc.stderr
    assert "none of the 8 memory file(s)" in b.run("status").stdout
    b.run("pull")
    assert b.files() == a.files()
    assert len(a.files()) == 9  # nothing deleted on the remote


@pytest.mark.parametrize("index", ["written anew", "edited by hand"])
def test_a_small_memory_dir_left_with_a_new_index_is_restored_not_deleted(tmp_path, index):
    """Fresh-eyes re-trial s28c, F3: four synced files, the folder lost and made again, and
    Claude Code writing MEMORY.md first: `sync` deleted the three others everywhere (below six
    files, a few gone were taken for a hand deletion). An index written anew links to none of
    them: a lost folder, whatever the count. Deleting one by hand and its line is still an
    edit."""
    remote = tmp_path / "share"
    remote.mkdir()
    a, b = make_device(tmp_path, "a", remote.as_uri()), make_device(tmp_path, "b", remote.as_uri())
    links = "".join(f"- [f{i}](user_f{i}.md) — fact {i}\n" for i in range(3))
    (a.memory / "MEMORY.md").write_text(f"# Memory\n{links}")
    for i in range(3):
        a.write(f"user_f{i}.md", f"fact {i}\n", type="user")
    a.run("sync")
    b.run("sync")
    if index == "written anew":
        shutil.rmtree(b.memory)
        b.memory.mkdir()
        (b.memory / "MEMORY.md").write_text("# Memory\n")
        assert "run `memsync pull`" in b.run("sync", check=1).stderr
        b.run("pull")
        assert sorted(b.files()) == sorted(a.files())
    else:
        (b.memory / "user_f0.md").unlink()
        kept = "".join(links.splitlines(keepends=True)[1:])
        (b.memory / "MEMORY.md").write_text(f"# Memory\n{kept}")
        b.run("sync")
    a.run("sync")
    on_remote = sorted(p.name for p in (remote / "e2e-project").glob("*.md"))
    gone = {"edited by hand": ["user_f0.md"], "written anew": []}[index]
    assert on_remote == sorted({"MEMORY.md", "user_f0.md", "user_f1.md", "user_f2.md"} - set(gone))
