"""The admin commands through the real CLI: disaster recovery from an export, and migrate."""

from __future__ import annotations

import json

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
