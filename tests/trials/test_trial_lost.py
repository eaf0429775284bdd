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
    hook = b.run(
        "hook", "session-start", input=json.dumps({"session_id": "s", "cwd": str(b.root)})
    )
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
