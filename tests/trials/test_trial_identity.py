"""A project's identity, tried through the CLI on two devices with no `project` set.

The same repository (`app`, no git origin) is on devices A and B; both sync under
`app-<first commit>` (B joins with `--project` once: a copy and another project made from
the same template look alike). Then A gets an origin (`git remote add origin ...`), the moment a
repository is pushed to GitHub for the first time. A keeps syncing under the name it synced
under, so B still sees A's edits; A is told once, in one sentence, that the origin differs and
how to move the memory under it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.devices import Device

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}
ORIGIN = "git@github.com:me/app.git"


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, env={**os.environ, **GIT_ENV})


@pytest.fixture
def pair(tmp_path):
    """Devices whose working directory is the same repository `app` (B's is a clone with no
    origin), with the memory dir inside it and no project name given."""
    (tmp_path / "remote").mkdir()
    url = (tmp_path / "remote").as_uri()
    repo_a, repo_b = tmp_path / "a" / "app", tmp_path / "b" / "app"
    git("init", "-q", str(repo_a))
    (repo_a / "README").write_text("the app\n")
    git("-C", str(repo_a), "add", "README")
    git("-C", str(repo_a), "commit", "-qm", "first")
    git("clone", "-q", str(repo_a), str(repo_b))
    git("-C", str(repo_b), "remote", "remove", "origin")
    devices = []
    for name, repo in (("a", repo_a), ("b", repo_b)):
        device = Device(name, repo, url, {"MEMSYNC_PROJECT": ""})
        device.memory.mkdir()
        devices.append(device)
    return devices[0], devices[1], tmp_path / "remote"


def prefixes(remote) -> list[str]:
    return sorted(p.name for p in remote.iterdir())


def join(device: Device, remote):
    """A device that never synced this project, known only by its folder and first commit,
    is refused (a copy and another project from the same template look alike) and joins the
    memory under that name once told to."""
    [name] = prefixes(remote)
    assert f"memsync sync --project {name}" in device.run("sync", check=1).stderr
    return device.run("sync", "--project", name)


def test_an_origin_added_after_syncing_does_not_fork_the_project(pair):
    a, b, remote = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    a.run("sync")
    assert join(b, remote).stdout == "pulled: user_pat.md\n"
    [name] = prefixes(remote)
    assert name.startswith("app-")

    git("-C", str(a.root), "remote", "add", "origin", ORIGIN)
    a.write("user_pat.md", "Pat leads the storage team.\nPat moved to Berlin.\n", type="user")
    proc = a.run("sync")
    assert proc.stdout == "pushed: user_pat.md\n"
    assert prefixes(remote) == [name]  # no second prefix: nothing forked
    notes = [line for line in proc.stderr.splitlines() if "github.com-me-app" in line]
    assert len(notes) == 1, proc.stderr  # one sentence: what differs, and how to move
    assert notes[0].startswith("note: ") and name in notes[0]
    assert "memsync sync --project github.com-me-app" in notes[0]

    assert b.run("sync").stdout == "pulled: user_pat.md\n"  # B sees A's edit
    assert "Pat moved to Berlin." in (b.memory / "user_pat.md").read_text()

    again = a.run("sync")  # said once, not at every sync
    assert "github.com-me-app" not in again.stderr, again.stderr
    status = a.run("status")  # status keeps saying which name is used and why
    assert f"(project {name})" in status.stdout
    assert "github.com-me-app" in status.stdout
    data = json.loads(a.run("status", "--json").stdout)["data"]
    assert data["project"] == name and "github.com-me-app" in data["project_note"]


def test_moving_under_the_origin_as_the_note_says(pair):
    """Following the note on both devices (once each has the origin) moves the project: from
    then on both sync under the origin's name without being told anything."""
    a, b, remote = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    a.run("sync")
    join(b, remote)
    for device in (a, b):
        git("-C", str(device.root), "remote", "add", "origin", ORIGIN)
        device.run("sync", "--project", "github.com-me-app")
    assert "github.com-me-app" in prefixes(remote)
    a.write("user_pat.md", "Pat leads the storage team.\nPat moved to Berlin.\n", type="user")
    proc = a.run("sync")
    assert proc.stdout == "pushed: user_pat.md\n" and "note" not in proc.stderr, proc.stderr
    assert b.run("sync").stdout == "pulled: user_pat.md\n"
    assert "(project github.com-me-app)" in b.run("status").stdout


def test_a_new_clone_with_the_origin_finds_the_memory_synced_before_the_origin(pair, tmp_path):
    """Device D clones the repository after it got its origin: its own name would be the
    origin's, an empty prefix. It is told where the memory is, and that name works."""
    a, _, remote = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    a.run("sync")
    [name] = prefixes(remote)
    git("-C", str(a.root), "remote", "add", "origin", ORIGIN)
    repo_d = tmp_path / "d" / "app"
    git("clone", "-q", str(a.root), str(repo_d))
    git("-C", str(repo_d), "remote", "set-url", "origin", ORIGIN)
    d = Device("d", repo_d, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    d.memory.mkdir()
    for command in ("sync", "pull"):
        proc = d.run(command, check=1)
        assert f"memsync sync --project {name}" in proc.stderr, proc.stderr
    assert prefixes(remote) == [name]  # no empty second copy started
    assert d.run("sync", "--project", name).stdout == "pulled: user_pat.md\n"
    assert d.run("sync").stdout == "Everything is in sync.\n"  # the name is remembered


def test_a_device_without_the_origin_follows_a_move_under_it(pair, tmp_path):
    """A follows the origin note (`memsync sync --project ORIGIN`); B's clone has no origin
    and cannot. The fresh-eyes trial found B syncing on alone under the old name, and the new
    prefix's manifest (an origin) refusing B if it tried. Now the old name says where the
    memory went, and the manifest's first commit lets B in."""
    a, b, remote = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    a.run("sync")
    join(b, remote)
    [old] = prefixes(remote)

    git("-C", str(a.root), "remote", "add", "origin", ORIGIN)
    proc = a.run("sync", "--project", "github.com-me-app")
    assert "marked as moved to github.com-me-app" in proc.stderr, proc.stderr
    assert sorted(prefixes(remote)) == sorted([old, "github.com-me-app"])

    b.write("user_b.md", "B's note, written before B heard of the move.\n", type="user")
    proc = b.run("sync", check=1)
    sentence = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(sentence) == 1, proc.stderr
    assert "moved from" in sentence[0] and "by a" in sentence[0], sentence[0]
    assert "memsync sync --project github.com-me-app" in sentence[0]
    assert "user_b.md" not in [p.name for p in (remote / old).iterdir()]  # nothing left there
    assert "memsync sync --project github.com-me-app" in b.run("status").stdout

    proc = b.run("sync", "--project", "github.com-me-app")  # B has no origin: let in all the same
    assert "pushed: user_b.md" in proc.stdout, proc.stdout + proc.stderr
    assert a.run("sync").stdout == "pulled: user_b.md\n"
    a.write("user_pat.md", "Pat leads the storage team.\nPat moved to Berlin.\n", type="user")
    a.run("sync")
    assert b.run("sync").stdout == "pulled: user_pat.md\n"  # remembered: no --project again
    assert a.files() == b.files()

    # a new clone without the origin lands on the old name, and is told too
    repo_c = tmp_path / "c" / "app"
    git("clone", "-q", str(b.root), str(repo_c))
    git("-C", str(repo_c), "remote", "remove", "origin")
    c = Device("c", repo_c, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    c.memory.mkdir()
    assert "memsync sync --project github.com-me-app" in c.run("sync", check=1).stderr
    c.run("sync", "--project", "github.com-me-app")
    assert c.files() == a.files()


def test_projects_still_never_cross_after_a_move(pair, tmp_path):
    """The first commit lets in the same repository without its origin, nothing else: an
    unrelated repository, or a fork of this one with an origin of its own, is refused."""
    a, _, remote = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    a.run("sync")
    git("-C", str(a.root), "remote", "add", "origin", ORIGIN)
    a.run("sync", "--project", "github.com-me-app")

    other = tmp_path / "x" / "app"
    git("init", "-q", str(other))
    (other / "README").write_text("another app\n")
    git("-C", str(other), "add", "README")
    git("-C", str(other), "commit", "-qm", "first")
    fork = tmp_path / "f" / "app"
    git("clone", "-q", str(a.root), str(fork))
    git("-C", str(fork), "remote", "set-url", "origin", "git@github.com:someone/app.git")
    for name, repo in (("x", other), ("f", fork)):
        device = Device(name, repo, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
        device.memory.mkdir()
        device.write("user_secret.md", f"{name}'s own memory.\n", type="user")
        proc = device.run("sync", "--project", "github.com-me-app", check=1)
        assert "holds the memory of another project" in proc.stderr, proc.stderr
        assert "user_pat.md" not in device.files()
    assert sorted(p.name for p in (remote / "github.com-me-app").glob("*.md")) == ["user_pat.md"]


# --- fresh-eyes finding 7: one repository (no origin) in a folder named differently ---------


def repository(path) -> None:
    git("init", "-q", str(path))
    (path / "README").write_text("the app\n")
    git("-C", str(path), "add", "README")
    git("-C", str(path), "commit", "-qm", "first")


def test_a_copy_in_a_differently_named_folder_is_told_where_its_memory_is(tmp_path):
    """B holds the same repository (same first commit) as `my-app`: its first sync and pull
    name A's project and the `--project` that uses it, instead of "Everything is in sync."
    under a second, empty prefix."""
    import shutil

    remote = tmp_path / "remote"
    remote.mkdir()
    repo_a, repo_b = tmp_path / "a" / "app", tmp_path / "b" / "my-app"
    repository(repo_a)
    shutil.copytree(repo_a, repo_b)
    a = Device("a", repo_a, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    b = Device("b", repo_b, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    a.memory.mkdir()
    b.memory.mkdir()
    a.write("user_acme.md", "Acme pays on the 5th.\n", type="user")
    a.run("sync")
    [name] = prefixes(remote)
    assert name.startswith("app-")

    b.write("user_bo.md", "Bo reviews on Fridays.\n", type="user")
    for command in ("pull", "sync"):
        told = b.run(command, check=1)
        assert "in sync" not in told.stdout, told.stdout
        assert f"'{name}'" in told.stderr and f"memsync sync --project {name}" in told.stderr
        assert len(told.stderr.strip().splitlines()) == 1, told.stderr
    assert prefixes(remote) == [name]  # no second project started
    assert sorted(p.name for p in (remote / name).glob("*.md")) == ["user_acme.md"]
    hook = b.run("hook", "session-start", input=json.dumps({"session_id": "s", "cwd": str(b.root)}))
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"memsync sync --project {name}" in context, context
    # Claude's next memory write: the after-write hook tells it the write stays here, and why
    # (fresh-eyes re-trial s28, finding 2: it said nothing and logged a traceback)
    written = str(b.memory / "user_bo.md")
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Edit", "cwd": str(b.root)}
    payload["tool_input"] = {"file_path": written}
    hook = b.run("hook", "post-tool-use", input=json.dumps(payload))
    told = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "user_bo.md was NOT synced" in told and f"--project {name}" in told, told
    log = (b.home / "logs" / "memsync.log").read_text()
    assert "Traceback" not in log and "not pushed" in log, log
    assert prefixes(remote) == [name]

    assert b.run("sync", "--project", name).returncode == 0  # as the sentence says
    assert (b.memory / "user_acme.md").exists()
    b.run("sync")  # remembered
    assert prefixes(remote) == [name]
    a.run("sync")
    assert (a.memory / "user_bo.md").exists()


def test_a_folder_renamed_on_its_own_device_is_told_where_its_memory_is(tmp_path):
    """`mv app app-renamed` on A: Claude Code's memory dir (and so the pin) changes with the
    path; the first pull under the new name names the old one, and a second and a third
    prefix (two copies named differently) are both named."""
    import shutil

    remote = tmp_path / "remote"
    remote.mkdir()
    repo = tmp_path / "a" / "app"
    repository(repo)
    a = Device("a", repo, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    a.memory.mkdir()
    a.write("user_acme.md", "Acme pays on the 5th.\n", type="user")
    a.run("sync")
    [name] = prefixes(remote)

    renamed = repo.with_name("app-renamed")
    repo.rename(renamed)
    a = Device("a", renamed, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    shutil.rmtree(a.memory)  # the new path's memory dir is a new, empty one
    a.memory.mkdir()
    told = a.run("pull", check=1)
    assert "Nothing to sync" not in told.stdout, told.stdout
    assert f"memsync sync --project {name}" in told.stderr, told.stderr
    a.write("user_new.md", "A new fact.\n", type="user")
    assert f"'{name}'" in a.run("sync", check=1).stderr
    assert prefixes(remote) == [name]
    # an import is refused the same way, and makes no empty folder first (s29b, finding 6)
    a.run("export", str(tmp_path / "a.tar.gz"), "--from", "local")
    assert f"'{name}'" in a.run("import", str(tmp_path / "a.tar.gz"), check=1).stderr
    assert prefixes(remote) == [name]

    # a second name of the same repository, chosen on purpose: both are named from now on
    other = f"app-copy-{name.rsplit('-', 1)[1]}"
    a.run("sync", "--project", other)
    c = Device("c", tmp_path / "c" / "app-third", remote.as_uri(), {"MEMSYNC_PROJECT": ""})
    shutil.copytree(renamed, c.root, ignore=shutil.ignore_patterns("memory", "memsync-home"))
    c.memory.mkdir()
    told = c.run("sync", check=1)
    first, second = sorted([name, other])  # named in order
    assert f"under 2 names, '{first}' and '{second}'" in told.stderr, told.stderr
    assert "memsync sync --project NAME" in told.stderr
    assert prefixes(remote) == sorted([name, other])


# --- fresh-eyes finding 3 (s28): two projects cloned from one template repository ----------


def template_clones(tmp_path, names: tuple[str, ...]) -> tuple[Path, list[Device]]:
    """One folder remote and a device per name, each holding its own `git clone template app`
    with the origin removed: the same folder name and first commit on every device."""
    remote = tmp_path / "remote"
    remote.mkdir()
    template = tmp_path / "template"
    repository(template)
    devices = []
    for name in names:
        repo = tmp_path / name / "app"
        git("clone", "-q", str(template), str(repo))
        git("-C", str(repo), "remote", "remove", "origin")
        device = Device(name, repo, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
        device.memory.mkdir()
        devices.append(device)
    return remote, devices


def test_two_projects_from_one_template_never_cross(tmp_path):
    """Laptop 1 and laptop 2 each `git clone template app; git remote remove origin` for a
    different client: both are `app-<template's first commit>`. Laptop 2, which never synced
    that project, is refused in one sentence naming both ways out, nothing is pulled or
    uploaded, and `--project NEW-NAME` keeps the two apart. A true copy (device 3) joins with
    `--project <that name>` once and syncs plainly from then on."""
    remote, (l1, l2, l3) = template_clones(tmp_path, ("l1", "l2", "l3"))
    l1.write("project_l1.md", "Client one's confidential rates.\n", type="project")
    l1.run("sync")
    [name] = prefixes(remote)
    assert name.startswith("app-")

    path = l2.write("project_l2.md", "Client two's launch date.\n", type="project")
    for args in (("sync",), ("pull",), ("push",), ("push", str(path))):
        told = l2.run(*args, check=1)  # the code of the other refusals of another project
        lines = told.stderr.strip().splitlines()
        assert len(lines) == 1, told.stderr
        assert f"memsync sync --project {name}" in lines[0] and "--project NEW-NAME" in lines[0]
        assert "template" in lines[0], lines[0]
    assert sorted(l2.files()) == ["project_l2.md"]  # nothing pulled
    assert sorted(p.name for p in (remote / name).glob("*.md")) == ["project_l1.md"]  # nor sent
    start = json.dumps({"session_id": "s", "cwd": str(l2.root)})
    hook = l2.run("hook", "session-start", input=start)
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"memsync sync --project {name}" in context and "NEW-NAME" in context, context
    assert sorted(l2.files()) == ["project_l2.md"]

    # another project: a name of its own keeps the two apart, and is remembered
    assert l2.run("sync", "--project", "client2-app").stdout == "pushed: project_l2.md\n"
    l2.write("project_l2.md", "Client two's launch date.\nMoved to May.\n", type="project")
    assert l2.run("sync").stdout == "pushed: project_l2.md\n"
    assert l1.run("sync").stdout.strip() in ("", "Everything is in sync.")
    assert sorted(l1.files()) == ["project_l1.md"]
    assert sorted(l2.files()) == ["project_l2.md"]
    assert sorted(p.name for p in (remote / "client2-app").glob("*.md")) == ["project_l2.md"]

    # a copy of client one's repository: joins once told to, then syncs without being asked
    l3.run("sync", check=1)
    assert l3.run("sync", "--project", name).stdout == "pulled: project_l1.md\n"
    l3.write("project_l1.md", "Client one's confidential rates.\nUp 5%.\n", type="project")
    assert l3.run("sync").stdout == "pushed: project_l1.md\n"
    assert l1.run("sync").stdout == "pulled: project_l1.md\n"
    assert "Up 5%." in (l1.memory / "project_l1.md").read_text()


def test_a_template_clone_is_asked_even_before_the_other_wrote_any_memory(tmp_path):
    """Laptop 1 synced its clone before writing any memory (the manifest only): laptop 2, a
    different client's clone of the same template, is still asked which it is. Joining
    silently would have put both clients' memory under one name from their next writes on."""
    remote, (l1, l2) = template_clones(tmp_path, ("l1", "l2"))
    l1.write("project_l1.md", "Client one's rates.\n", type="project")
    l1.run("push")  # creates the project and its manifest
    l1.run("forget", "project_l1.md", "--yes")  # and takes its only memory away again
    [name] = prefixes(remote)
    assert not list((remote / name).glob("*.md"))  # no memory there, only the manifest
    l2.write("project_l2.md", "Client two's launch date.\n", type="project")
    told = l2.run("sync", check=1)
    assert "--project NEW-NAME" in told.stderr, told.stderr
    assert not list((remote / name).glob("*.md"))


# --- fresh-eyes s28c finding 4: two unrelated origins that normalise to one name ------------


def unrelated_origins(tmp_path, *origins: str) -> tuple[Path, list[Device]]:
    """One folder remote and a device per origin, each with its own repository (another first
    commit) named `proj`."""
    remote = tmp_path / "remote"
    remote.mkdir()
    devices = []
    for name, origin in zip("ab", origins, strict=True):
        repo = tmp_path / name / "proj"
        git("init", "-q", str(repo))
        (repo / "README").write_text(f"{name}'s project\n")
        git("-C", str(repo), "add", "README")
        git("-C", str(repo), "commit", "-qm", f"{name} first")
        git("-C", str(repo), "remote", "add", "origin", origin)
        device = Device(name, repo, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
        device.memory.mkdir()
        devices.append(device)
    return remote, devices


@pytest.mark.parametrize(
    "origin_a, origin_b",
    [
        ("git@github.com:me-x/proj.git", "https://github.com/me/x-proj.git"),
        ("https://github.com/me/proj%20x", "https://github.com/me/proj-20x"),
    ],
)
def test_two_origins_that_make_one_name_never_share_memory(tmp_path, origin_a, origin_b):
    """A's repository syncs under its origin's name; B, an unrelated repository (another first
    commit) whose origin makes the same name, never synced. Claude's write on B (PostToolUse),
    B's sync, pull and push are all refused in one sentence naming both origins: nothing of
    A's is pulled, nothing of B's is uploaded. B's own name keeps the two apart."""
    remote, (a, b) = unrelated_origins(tmp_path, origin_a, origin_b)
    a.write("user_secret.md", "A's confidential memory.\n", type="user")
    assert a.run("sync").stdout == "pushed: user_secret.md\n"
    [name] = prefixes(remote)
    assert name.startswith("github.com-me-")

    written = b.write("user_other.md", "B's own memory.\n", type="user")
    hook = b.post_tool_use(written, "Write")
    told = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "user_other.md was NOT synced" in told and "--project" in told, told
    for args in (("sync",), ("pull",), ("push",), ("push", str(written))):
        proc = b.run(*args, check=1)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert "holds the memory of another project" in lines[0], lines[0]
        assert "--project NAME" in lines[0], lines[0]
    assert sorted(b.files()) == ["user_other.md"]  # nothing of A's pulled
    assert sorted(p.name for p in (remote / name).glob("*.md")) == ["user_secret.md"]  # nor sent

    assert b.run("sync", "--project", "b-proj").stdout == "pushed: user_other.md\n"
    assert a.run("sync").stdout.strip() in ("", "Everything is in sync.")
    assert sorted(a.files()) == ["user_secret.md"]
    assert sorted(p.name for p in (remote / "b-proj").glob("*.md")) == ["user_other.md"]


@pytest.mark.parametrize("how", ["origins", "template"])
def test_no_command_reaches_into_another_projects_memory(tmp_path, how):
    """Fresh-eyes s29a, findings 1, 2 and 7: B's sync was refused (another project's memory
    under its name), yet `forget` deleted A's file, `purge` erased A's project, `ls` and
    `export` showed and copied A's memory, `import` put B's into A's project, and `status`
    did not say the sync was refused. Each is now refused with the sync's sentence, and A's
    memory is as it was."""
    if how == "origins":
        remote, (a, b) = unrelated_origins(
            tmp_path, "git@github.com:me-x/proj.git", "https://github.com/me/x-proj.git"
        )
    else:
        remote, (a, b) = template_clones(tmp_path, ("a", "b"))
    a.write("user_secret.md", "A's confidential memory.\n", type="user")
    a.run("sync")
    [name] = prefixes(remote)
    b.write("user_other.md", "B's own memory.\n", type="user")
    sentence = b.run("sync", check=1).stderr.strip()
    b.run("export", str(tmp_path / "b-local.tar.gz"), "--from", "local")
    for args in (
        ("forget", "user_secret.md", "--yes"),
        ("forget", "--match", "confidential", "--yes"),
        ("purge", "--all", "--yes"),
        ("ls",),
        ("export", str(tmp_path / "b.tar.gz")),
        ("import", str(tmp_path / "b-local.tar.gz")),
    ):
        proc = b.run(*args, check=1)
        assert proc.stderr.strip() == sentence, (args, proc.stderr)
        assert "confidential" not in proc.stdout, args
    assert not (tmp_path / "b.tar.gz").exists()
    status = b.run("status")
    assert sentence.removeprefix("memsync: ") in status.stdout, status.stdout
    assert "user_secret.md" not in status.stdout
    assert sorted(p.name for p in (remote / name).glob("*.md")) == ["user_secret.md"]
    said = a.run("sync")
    assert "forgotten" not in said.stdout + said.stderr and "purged" not in said.stderr
    assert sorted(a.files()) == ["user_secret.md"]


def test_clones_of_two_local_folders_named_alike_never_share_memory(tmp_path):
    """Fresh-eyes s28c, finding 4 (addendum): an origin that is a folder on the machine
    (`../template`) made the project name `template` for every repository cloned from any
    folder of that name. Such an origin names no project: each is known by its first commit,
    so two unrelated templates' clones keep their memory apart."""
    remote = tmp_path / "remote"
    remote.mkdir()
    devices = []
    for name in ("a", "b"):
        template = tmp_path / name / "template"
        git("init", "-q", str(template))
        (template / "README").write_text(f"{name}'s template\n")
        git("-C", str(template), "add", "README")
        git("-C", str(template), "commit", "-qm", "first")
        repo = tmp_path / name / "app"
        git("clone", "-q", str(tmp_path / name / "template"), str(repo))
        git("-C", str(repo), "remote", "set-url", "origin", "../template")
        device = Device(name, repo, remote.as_uri(), {"MEMSYNC_PROJECT": ""})
        device.memory.mkdir()
        device.write(f"user_{name}.md", f"{name}'s client.\n", type="user")
        devices.append(device)
    a, b = devices
    assert a.run("sync").stdout == "pushed: user_a.md\n"
    assert b.run("sync").stdout == "pushed: user_b.md\n"
    assert len(prefixes(remote)) == 2 and all(p.startswith("app-") for p in prefixes(remote))
    assert sorted(a.files()) == ["user_a.md"] and sorted(b.files()) == ["user_b.md"]


def test_two_repositories_sharing_one_memory_dir_are_told_so_not_to_move(tmp_path):
    """Claude Code's `autoMemoryDirectory` points repositories x and y at one folder: it is
    one memory, synced as the project it first synced under (x). In y, memsync says the dir is
    shared with another repository and how to keep y's memory apart; it does not say y's
    origin "is now" another and to move the memory under it, which would copy x's memory
    under y's name (fresh-eyes trial of issue 16)."""
    url = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()
    shared, home = tmp_path / "sharedmem", tmp_path / "memsync-home"
    shared.mkdir()
    devices = []
    for name in ("x", "y"):
        repo = tmp_path / name
        git("init", "-q", str(repo))
        (repo / "README").write_text(f"repository {name}\n")
        git("-C", str(repo), "add", "README")
        git("-C", str(repo), "commit", "-qm", f"first of {name}")
        git("-C", str(repo), "remote", "add", "origin", f"git@github.com:me/{name}.git")
        env = {"MEMSYNC_PROJECT": "", "MEMSYNC_MEMORY_DIR": str(shared), "MEMSYNC_HOME": str(home)}
        devices.append(Device("laptop", repo, url, env))
    x, y = devices
    (shared / "user_x.md").write_text("---\nname: x\ndescription: d\ntype: user\n---\nX.\n")
    x.run("sync")
    assert prefixes(tmp_path / "remote") == ["github.com-me-x"]
    proc = y.run("sync")
    said = proc.stderr + y.run("status").stdout
    assert "shares this memory dir" in said and "github.com-me-x" in said, said
    assert "--project github.com-me-y" not in said and "origin is now" not in said, said
    assert prefixes(tmp_path / "remote") == ["github.com-me-x"]
    status = x.run("status").stdout
    assert "shares" not in status and "origin is now" not in status, status
