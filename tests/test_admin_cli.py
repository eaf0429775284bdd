"""The admin commands through the real CLI: disaster recovery from an export, and migrate."""

from __future__ import annotations

import json

import pytest

from tests.devices import make_device


def test_export_then_restore_into_an_empty_remote(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    a.write("carry_forward.md", "## Pending\n- ask about the move\n", type="carry_forward")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    archive = tmp_path / "backup.tar.gz"
    assert "Exported 2 file(s)" in a.run("export", str(archive)).stdout

    (tmp_path / "new-remote").mkdir()
    b = make_device(tmp_path, "b", (tmp_path / "new-remote").as_uri())
    assert "Copied: 2" in b.run("import", str(archive)).stdout
    assert "Unchanged: 2" in b.run("import", str(archive)).stdout
    b.run("pull")
    assert b.files() == a.files()

    listing = json.loads(b.run("ls", "--json").stdout)
    assert listing["version"] == 1
    assert {f["name"]: f["state"] for f in listing["data"]["files"]} == {
        "carry_forward.md": "in_sync",
        "user_role.md": "in_sync",
    }


def test_import_never_clobbers_without_force(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    archive = tmp_path / "backup.tar.gz"
    a.run("export", str(archive))
    a.write("user_role.md", "Principal engineer.\n", type="user")
    a.run("push")
    proc = a.run("import", str(archive), check=1)  # files left alone: exit 1, as README says
    assert "Skipped: 1" in proc.stdout and "--force" in proc.stderr
    a.run("pull")
    assert "Principal" in (a.memory / "user_role.md").read_text()
    assert "Replaced: 1" in a.run("import", "--force", str(archive)).stdout


def test_migrate_is_idempotent(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    for i in range(3):
        a.write(f"project_{i}.md", f"fact {i}\n", type="project")
    assert "Copied: 3, Skipped: 0" in a.run("migrate").stdout
    assert "Copied: 0, Skipped: 3" in a.run("migrate").stdout


def test_prune_with_yes_deletes_everywhere_and_audits(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    a.write("session_digest_2020-01-01.md", "## Arcs\n- old\n", type="session_digest")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    assert (
        "would delete: session_digest_2020-01-01.md"
        in a.run("prune", "--older-than", "0d", "--type", "session_digest", "--dry-run").stdout
    )
    a.run("prune", "--older-than", "0d", "--type", "session_digest", "--yes")
    assert sorted(a.files()) == ["user_role.md"]
    audit = (a.home / "audit.log").read_text()
    assert "session_digest_2020-01-01.md" in audit and "- old" not in audit
    bad = a.run("prune", "--older-than", "soon", check=2)
    assert "--older-than" in bad.stderr


def exported(tmp_path, remote_url):
    """A device that pushed one file, and the archive `export` made of it."""
    a = make_device(tmp_path, "a", remote_url)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    archive = tmp_path / "backup.tar.gz"
    a.run("export", str(archive))
    return a, archive


def test_import_and_migrate_to_a_folder_remote_that_is_not_there_are_unreachable(tmp_path):
    """As for sync: an unmounted drive is exit 3, and no folder is made in its place."""
    (tmp_path / "r").mkdir()
    _, archive = exported(tmp_path, (tmp_path / "r").as_uri())
    gone = tmp_path / "unmounted"
    b = make_device(tmp_path, "b", gone.as_uri())
    b.write("user_role.md", "Staff engineer.\n", type="user")
    for argv in (["import", str(archive)], ["migrate"]):
        proc = b.run(*argv, check=3)
        assert "is not there" in proc.stderr, proc.stderr
        assert not gone.exists()


def test_import_into_a_purged_project_waits_for_republish(tmp_path, remote_url):
    a, archive = exported(tmp_path, remote_url)
    a.run("purge", "--all", "--yes")
    proc = a.run("import", str(archive), check=1)
    assert "push --republish" in proc.stderr, proc.stderr
    listed = [line for line in a.run("ls").stdout.splitlines() if "user_role.md" in line]
    assert all(line.endswith("local only") for line in listed), listed  # nothing imported


def test_export_through_a_symlink_writes_where_it_points(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    (tmp_path / "nas").mkdir()
    link = tmp_path / "latest.tar.gz"
    link.symlink_to(tmp_path / "nas" / "backup.tar.gz")
    a.run("export", str(link))
    assert link.is_symlink() and (tmp_path / "nas" / "backup.tar.gz").stat().st_size > 0


AWS = "AKIA" + "Q4XW7ZT2MRB5KJ3N"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def archive_of(path, project, files):
    """An archive in the format `export` writes, holding `files` (name -> text) of `project`:
    what a backup taken from a remote can hold, made here without a remote."""
    import hashlib
    import io
    import tarfile

    from memsync.admin.admin import MANIFEST, MANIFEST_VERSION
    from memsync.memory.frontmatter import render

    data = {
        name: render({"name": name.removesuffix(".md"), "description": name, **meta}, body).encode()
        for name, (body, meta) in files.items()
    }
    manifest = {
        "version": MANIFEST_VERSION,
        "project": project,
        "files": {
            name: {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
            for name, raw in data.items()
        },
    }
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, raw in [(MANIFEST, json.dumps(manifest).encode()), *data.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path


def test_import_passes_the_gate_a_push_does(tmp_path, remote_url):
    """A secret or a `sensitivity: high` file without consent refuses the whole import in one
    sentence, nothing written; `--allow KIND` and consent let it through, as for push."""
    a = make_device(tmp_path, "a", remote_url)
    clean = {"user_role.md": ("Staff engineer.\n", {"type": "user"})}
    cases = {
        "aws.md": ({"project_keys.md": (f"key {AWS}\n", {"type": "project"})}, "AWS access key"),
        "gh.md": ({"project_ci.md": (f"token {GITHUB}\n", {"type": "project"})}, "GitHub token"),
        "high.md": (
            {"user_health.md": ("A diagnosis.\n", {"type": "user", "sensitivity": "high"})},
            "sensitivity: high",
        ),
    }
    for label, (files, why) in cases.items():
        archive = archive_of(tmp_path / f"{label}.tar.gz", "e2e-project", {**clean, **files})
        proc = a.run("import", str(archive), check=1)
        assert why in proc.stderr and "nothing was imported" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert AWS not in proc.stderr and GITHUB not in proc.stderr
        assert "Copied" not in proc.stdout
    assert a.run("ls", check=None).stdout.count(".md") == 0  # nothing reached the remote

    aws = tmp_path / "aws.md.tar.gz"
    assert "--allow aws_access_key" in a.run("import", str(aws), check=1).stderr
    assert "Copied: 2" in a.run("import", "--allow", "aws_access_key", str(aws)).stdout
    assert a.run("import", "--allow", "nonsense", str(aws), check=2).stderr
    consented = archive_of(
        tmp_path / "consent.tar.gz",
        "e2e-project",
        {"user_health.md": ("A diagnosis.\n", {"sensitivity": "high", "consent": True})},
    )
    assert "Copied: 1" in a.run("import", str(consented)).stdout
    a.run("pull")
    assert sorted(a.files()) == ["project_keys.md", "user_health.md", "user_role.md"]


def test_import_of_another_projects_archive_is_refused_unless_named(tmp_path, remote_url):
    work = make_device(tmp_path, "work", remote_url, MEMSYNC_PROJECT="work")
    work.write("user_role.md", "Staff engineer at work.\n", type="user")
    work.run("push")
    archive = tmp_path / "work.tar.gz"
    work.run("export", str(archive))

    personal = make_device(tmp_path, "personal", remote_url, MEMSYNC_PROJECT="personal")
    proc = personal.run("import", str(archive), check=1)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "'work'" in proc.stderr and "'personal'" in proc.stderr, proc.stderr
    assert "--from-project work" in proc.stderr, proc.stderr
    personal.run("pull")
    assert personal.files() == {}  # nothing written to the personal project

    wrong = personal.run("import", "--from-project", "home", str(archive), check=1)
    assert "'work'" in wrong.stderr and "'home'" in wrong.stderr, wrong.stderr
    assert "Copied: 1" in personal.run("import", "--from-project", "work", str(archive)).stdout
    personal.run("pull")
    assert list(personal.files()) == ["user_role.md"]
    assert "--from-project" in personal.run("import", "--help").stdout


@pytest.mark.azure
def test_ls_on_a_container_that_does_not_exist_says_so(tmp_path, azure_url):
    """A mistyped container must not list as an empty remote."""
    a = make_device(tmp_path, "a", azure_url + "typo")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    listed = a.run("ls", check=1)
    assert "does not exist yet" in listed.stderr and "push" in listed.stderr, listed.stderr
    assert "user_role.md" not in listed.stdout


def test_migrating_a_memory_dir_from_before_a_forget_brings_nothing_forgotten_back(tmp_path):
    """A memory dir lifted to a remote is content from before the remote's forgets."""
    from tests.trials.shared import on_remote

    remote = tmp_path / "remote"
    remote.mkdir()
    a = make_device(tmp_path, "a", remote.as_uri())
    a.write("user_personal.md", "Going through a hard year.\n", type="user")
    a.write("user_role.md", "Staff engineer.\nMentions the divorce often.\n", type="user")
    old = {n: (a.memory / n).read_text() for n in a.files()}
    a.run("sync")
    a.run("forget", "user_personal.md", "--yes")
    a.run("forget", "--match", "DIVORCE", "--yes")
    b = make_device(tmp_path, "b", remote.as_uri())  # an old copy of the same memory
    for name, text in old.items():
        (b.memory / name).write_text(text)
    moved = b.run("migrate", check=None)
    assert "forgotten on the remote" in moved.stdout + moved.stderr, moved
    b.run("sync")
    a.run("sync")
    for files in (on_remote(remote), {n: (b.memory / n).read_text() for n in b.files()}):
        assert "user_personal.md" not in files
        assert "divorce" not in "".join(files.values()).lower()
        assert "Staff engineer." in files["user_role.md"]
