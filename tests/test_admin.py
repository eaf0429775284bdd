"""memsync.admin.admin against real folder remotes: ls, prune, export/import and migrate."""

from __future__ import annotations

import io
import json
import os
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memsync.admin import admin
from memsync.admin import migrate as migration
from memsync.context import config
from memsync.sync.engine import Engine
from memsync.util.errors import UserError
from memsync.util.fsutil import sha256
from tests.conftest import write_memory

DAY = 86400


def engine_for(tmp: Path, mem: str = "mem", remote: str = "remote", project: str = "p") -> Engine:
    (tmp / remote).mkdir(exist_ok=True)
    ctx = config.resolve(memory_dir=tmp / mem, remote=(tmp / remote).as_uri(), project=project)
    (tmp / mem).mkdir(exist_ok=True)
    return Engine(ctx)


def seed(directory: Path) -> dict[str, bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "MEMORY.md").write_text("# Memory\n- [user](user_role.md)\n", encoding="utf-8")
    write_memory(directory, "user_role.md", "Backend engineer, prefers short answers.\n")
    write_memory(directory, "feedback_tests.md", "Run the tests before claiming done.\n")
    write_memory(directory, "session_digest_2026-01-05.md", "## Arc\nWe shipped the parser.\n")
    write_memory(directory, "notes/project_alpha.md", "Alpha ships in March.\n")
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in directory.rglob("*.md")
        if p.is_file()
    }


def remote_files(tmp: Path, remote: str = "remote", project: str = "p") -> dict[str, bytes]:
    base = tmp / remote / project
    if not base.is_dir():
        return {}
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file() and not p.name.startswith(".") and "_memsync" not in p.parts
    }


def make_archive(path: Path, members: dict[str, bytes], manifest: dict | None = None) -> Path:
    if manifest is None:
        manifest = {
            "version": 1,
            "project": "p",
            "files": {n: {"sha256": sha256(d), "size": len(d)} for n, d in members.items()},
        }
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [("MANIFEST.json", json.dumps(manifest).encode()), *members.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def archive_members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}


# --- export / import ----------------------------------------------------------------------


@pytest.mark.parametrize("source", ["remote", "local"])
def test_export_import_round_trip_into_an_empty_remote(tmp_path, source):
    a = engine_for(tmp_path, "mem_a")
    files = seed(a.ctx.memory_dir)
    a.run("sync")
    ticks: list[tuple[int, int]] = []
    archive = tmp_path / "out" / "backup.tar.gz"
    archive.parent.mkdir()
    exported = admin.export(a, archive, source, progress=lambda d, t: ticks.append((d, t)))
    assert exported.files == sorted(files)
    assert exported.refused == {}
    assert ticks[-1] == (len(files), len(files))
    assert oct(archive.stat().st_mode & 0o777) == "0o600"
    members = archive_members(archive)
    manifest = json.loads(members.pop("MANIFEST.json"))
    assert manifest["version"] == 1 and manifest["project"] == "p"
    assert manifest["files"]["user_role.md"] == {
        "sha256": sha256(files["user_role.md"]),
        "size": len(files["user_role.md"]),
    }
    assert members == files

    # A fresh remote (a folder there, empty): import makes the project's folder in it, and
    # says nothing of creating a remote (its folder was there)
    b = engine_for(tmp_path, "mem_b", remote="remote2")
    empty = make_archive(tmp_path / "empty.tar.gz", {})
    nothing = admin.import_archive(b, empty, force=False)
    assert nothing.copied == [] and not any("created" in n for n in nothing.notes)
    assert (tmp_path / "remote2" / "p").is_dir(), "import makes the project's folder"
    result = admin.import_archive(b, archive, force=False)
    assert result.copied == sorted(files)
    assert result.skipped == {} and result.replaced == [] and result.project == "p"
    assert remote_files(tmp_path, "remote2") == files

    # A second device on the new remote pulls byte-identical files.
    c = engine_for(tmp_path, "mem_c", remote="remote2")
    pulled = c.run("pull")
    assert pulled.errors == {} and sorted(pulled.downloaded) == sorted(files)
    for name, data in files.items():
        assert (c.ctx.memory_dir / name).read_bytes() == data

    again = admin.import_archive(b, archive, force=False)
    assert again.copied == [] and again.unchanged == sorted(files)


def test_export_local_leaves_out_refused_files(tmp_path):
    a = engine_for(tmp_path)
    seed(a.ctx.memory_dir)
    (a.ctx.memory_dir / "broken.md").write_text("no frontmatter here\n", encoding="utf-8")
    result = admin.export(a, tmp_path / "x.tar.gz", "local")
    assert "broken.md" in result.refused
    assert "broken.md" not in archive_members(tmp_path / "x.tar.gz")


def test_import_never_clobbers_without_force(tmp_path):
    a = engine_for(tmp_path, "mem_a")
    files = seed(a.ctx.memory_dir)
    a.run("sync")
    archive = tmp_path / "backup.tar.gz"
    admin.export(a, archive, "remote")

    b = engine_for(tmp_path, "mem_b", remote="remote2")
    write_memory(b.ctx.memory_dir, "user_role.md", "Frontend engineer now.\n")
    b.run("sync")
    theirs = (b.ctx.memory_dir / "user_role.md").read_bytes()

    result = admin.import_archive(b, archive, force=False)
    assert list(result.skipped) == ["user_role.md"]
    assert "different content" in result.skipped["user_role.md"]
    assert result.copied == sorted(n for n in files if n != "user_role.md")
    assert remote_files(tmp_path, "remote2")["user_role.md"] == theirs

    forced = admin.import_archive(b, archive, force=True)
    assert forced.replaced == ["user_role.md"]
    assert sorted(forced.unchanged) == sorted(n for n in files if n != "user_role.md")
    assert remote_files(tmp_path, "remote2") == files
    pulled = b.run("pull")
    assert (b.ctx.memory_dir / "user_role.md").read_bytes() == files["user_role.md"]
    assert pulled.errors == {}


def test_corrupted_archive_is_refused_and_nothing_is_written(tmp_path):
    a = engine_for(tmp_path, "mem_a")
    seed(a.ctx.memory_dir)
    a.run("sync")
    good = tmp_path / "good.tar.gz"
    admin.export(a, good, "remote")
    members = archive_members(good)
    manifest = json.loads(members.pop("MANIFEST.json"))
    members["feedback_tests.md"] = members["feedback_tests.md"].replace(b"tests", b"TESTS")
    bad = make_archive(tmp_path / "bad.tar.gz", members, manifest)

    b = engine_for(tmp_path, "mem_b", remote="remote2")
    with pytest.raises(UserError) as err:
        admin.import_archive(b, bad, force=True)
    assert str(bad) in str(err.value) and "feedback_tests.md" in str(err.value)
    assert "sha256" in str(err.value)
    assert remote_files(tmp_path, "remote2") == {}
    assert not (tmp_path / "remote2" / "p").exists()


def test_truncated_archive_is_refused(tmp_path):
    a = engine_for(tmp_path)
    seed(a.ctx.memory_dir)
    archive = tmp_path / "x.tar.gz"
    admin.export(a, archive, "local")
    archive.write_bytes(archive.read_bytes()[:-40])
    with pytest.raises(UserError, match="not a readable tar.gz"):
        admin.import_archive(a, archive, force=False)


@pytest.mark.parametrize(
    "evil", ["../evil.md", "/tmp/evil.md", "notes/../../evil.md", ".hidden.md"]
)
def test_path_traversal_member_is_refused(tmp_path, evil):
    data = b"---\nname: evil\ndescription: evil\n---\nbody\n"
    ok = b"---\nname: ok\ndescription: ok\n---\nbody\n"
    bad = make_archive(tmp_path / "evil.tar.gz", {"user_ok.md": ok, evil: data})
    b = engine_for(tmp_path)
    with pytest.raises(UserError) as err:
        admin.import_archive(b, bad, force=True)
    assert str(bad) in str(err.value) and repr(evil) in str(err.value)
    assert remote_files(tmp_path) == {}
    assert not (tmp_path / "evil.md").exists()


def test_missing_and_extra_members_are_refused(tmp_path):
    data = b"---\nname: a\ndescription: a\n---\nbody\n"
    listed = {"user_a.md": {"sha256": sha256(data), "size": len(data)}}
    b = engine_for(tmp_path)

    extra = make_archive(
        tmp_path / "extra.tar.gz",
        {"user_a.md": data, "user_b.md": data},
        {"version": 1, "project": "p", "files": listed},
    )
    with pytest.raises(UserError, match="user_b.md.*not listed in the manifest"):
        admin.import_archive(b, extra, force=False)

    missing = make_archive(
        tmp_path / "missing.tar.gz",
        {},
        {"version": 1, "project": "p", "files": listed},
    )
    with pytest.raises(UserError, match="user_a.md.*missing from the archive"):
        admin.import_archive(b, missing, force=False)

    no_manifest = tmp_path / "nomanifest.tar.gz"
    with tarfile.open(no_manifest, "w:gz") as tar:
        info = tarfile.TarInfo("user_a.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(UserError, match="MANIFEST.json"):
        admin.import_archive(b, no_manifest, force=False)
    assert remote_files(tmp_path) == {}


def test_symlink_member_is_refused(tmp_path):
    path = tmp_path / "link.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        manifest = json.dumps({"version": 1, "project": "p", "files": {}}).encode()
        info = tarfile.TarInfo("MANIFEST.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        link = tarfile.TarInfo("user_link.md")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(UserError, match="not a regular file"):
        admin.import_archive(engine_for(tmp_path), path, force=False)


# --- prune --------------------------------------------------------------------------------


def age_remote(tmp: Path, name: str, days: float, now: float) -> None:
    path = tmp / "remote" / "p" / name
    os.utime(path, (now - days * DAY, now - days * DAY))


def test_prune_by_age_and_type_with_audit(tmp_path):
    a = engine_for(tmp_path, "mem_a")
    seed(a.ctx.memory_dir)
    write_memory(a.ctx.memory_dir, "session_digest_2026-01-06.md", "## Arc\nAnother day.\n")
    a.run("sync")
    other = engine_for(tmp_path, "mem_other")
    other.run("sync")
    # a digest's age is its date (its name), not when it was edited; other files without
    # a date in their frontmatter are judged by their edit time: this device's copy's, or
    # for a file it does not hold, the remote's
    now = datetime(2026, 2, 5, tzinfo=timezone.utc).timestamp()
    for name in ("feedback_tests.md", "MEMORY.md"):
        age_remote(tmp_path, name, 90, now)
        os.utime(a.ctx.memory_dir / name, (now - 90 * DAY, now - 90 * DAY))
    age_remote(tmp_path, "session_digest_2026-01-06.md", 400, now)
    os.utime(a.ctx.memory_dir / "notes/project_alpha.md", (now - 90 * DAY, now - 90 * DAY))
    age_remote(tmp_path, "notes/project_alpha.md", 1, now)  # uploaded lately, edited long ago

    assert admin.plan_prune(a, 30, None, now) == [
        "feedback_tests.md",
        "notes/project_alpha.md",
        "session_digest_2026-01-05.md",
    ]
    assert admin.plan_prune(other, 30, None, now) == [  # it holds copies edited lately
        "session_digest_2026-01-05.md",
    ]
    assert admin.plan_prune(a, 30, "index", now) == []  # the index is never pruned
    assert admin.plan_prune(a, 5, "session_digest", now) == [
        "session_digest_2026-01-05.md",
        "session_digest_2026-01-06.md",
    ]
    planned = admin.plan_prune(a, 30, "session_digest", now)
    assert planned == ["session_digest_2026-01-05.md"]

    result = admin.prune(a, planned)
    assert result.deleted == planned and result.local_removed == planned
    assert result.skipped == {}
    assert "session_digest_2026-01-05.md" not in remote_files(tmp_path)
    assert not (a.ctx.memory_dir / "session_digest_2026-01-05.md").exists()
    a.state = type(a.state)(a.ctx.state_dir, a.state.history_versions)
    assert "session_digest_2026-01-05.md" not in a.state.records
    history = a.state.history("session_digest_2026-01-05.md")
    assert history and "pruned" in history[0].reason

    lines = (a.ctx.home / "audit.log").read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    assert [e["file"] for e in entries if e["action"] == "prune"] == planned
    assert "We shipped the parser" not in "".join(lines)

    # The next sync here does not re-upload it; another device drops its copy.
    assert a.run("sync").uploaded == []
    synced = other.run("sync")
    assert synced.deleted_local == planned
    assert not (other.ctx.memory_dir / planned[0]).exists()


def test_prune_skips_unsynced_local_edits_and_remote_changes(tmp_path):
    a = engine_for(tmp_path)
    seed(a.ctx.memory_dir)
    a.run("sync")
    write_memory(a.ctx.memory_dir, "feedback_tests.md", "Edited here, not yet synced.\n")
    result = admin.prune(a, ["feedback_tests.md"])
    assert "local changes" in result.skipped["feedback_tests.md"]
    assert "feedback_tests.md" in remote_files(tmp_path)
    assert (a.ctx.memory_dir / "feedback_tests.md").exists()


def test_prune_keeps_a_copy_of_a_remote_only_version(tmp_path):
    a = engine_for(tmp_path, "mem_a")
    seed(a.ctx.memory_dir)
    a.run("sync")
    b = engine_for(tmp_path, "mem_b")
    write_memory(b.ctx.memory_dir, "project_beta.md", "Beta is paused.\n")
    b.run("sync")
    beta = (b.ctx.memory_dir / "project_beta.md").read_bytes()

    result = admin.prune(a, ["project_beta.md", "user_nothing.md"])
    assert result.deleted == ["project_beta.md"] and result.local_removed == []
    assert "neither" in result.skipped["user_nothing.md"]
    assert "project_beta.md" not in remote_files(tmp_path)
    kept = a.state.history("project_beta.md")
    assert kept and kept[0].path.read_bytes() == beta
    with pytest.raises(UserError):
        admin.prune(a, ["../etc/passwd"])


def test_plan_prune_rejects_negative_age(tmp_path):
    with pytest.raises(UserError):
        admin.plan_prune(engine_for(tmp_path), -1)
    with pytest.raises(UserError, match="no memory type"):
        admin.plan_prune(engine_for(tmp_path), 1, "nonsense")


# --- migrate ------------------------------------------------------------------------------


def test_migrate_is_idempotent_and_reports_conflicts(tmp_path):
    uri = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()

    def factory(memory_dir: Path | None = None, project: str | None = None) -> config.Context:
        return config.resolve(memory_dir=memory_dir, remote=uri, project=project)

    one = tmp_path / "one"
    two = tmp_path / "two"
    files_one = seed(one)
    write_memory(two, "user_role.md", "Data scientist.\n")
    write_memory(two, "feedback_style.md", "No emojis.\n")

    # A conflicting copy already on the remote for project "two".
    (tmp_path / "remote" / "two").mkdir()
    conflict = b"---\nname: feedback_style\ndescription: other\n---\nEmojis welcome.\n"
    (tmp_path / "remote" / "two" / "feedback_style.md").write_bytes(conflict)

    first = migration.migrate(factory, [(one, "one"), (two, "two")])
    assert first.copied == len(files_one) + 1
    assert first.skipped == 1
    assert first.sources[1].skipped["feedback_style.md"] == migration.DIFFERENT
    assert remote_files(tmp_path, project="one") == files_one
    assert remote_files(tmp_path, project="two")["feedback_style.md"] == conflict

    second = migration.migrate(factory, [(one, "one"), (two, "two")])
    assert second.copied == 0
    assert second.skipped == len(files_one) + 2
    assert set(second.sources[0].skipped.values()) == {migration.SAME}

    # Migrated files are recorded as synced: the next sync has nothing to move.
    synced = Engine(factory(memory_dir=one, project="one")).run("sync")
    assert synced.changes == 0 and synced.errors == {}


def test_migrate_defaults_to_the_current_context(tmp_path):
    uri = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()
    mem = tmp_path / "mem"
    files = seed(mem)
    (mem / "leak.md").write_text("no frontmatter\n", encoding="utf-8")

    def factory(memory_dir: Path | None = None, project: str | None = None) -> config.Context:
        return config.resolve(memory_dir=memory_dir or mem, remote=uri, project=project or "p")

    result = migration.migrate(factory)
    assert result.copied == len(files)
    assert "frontmatter" in result.sources[0].refused["leak.md"]
    assert remote_files(tmp_path) == files
    assert migration.migrate(factory, []).copied == 0


def test_migrate_missing_dir_is_a_user_error(tmp_path):
    def factory(memory_dir: Path | None = None, project: str | None = None) -> config.Context:
        return config.resolve(memory_dir=memory_dir, remote=tmp_path.as_uri(), project=project)

    with pytest.raises(UserError, match="not a folder"):
        migration.migrate(factory, [(tmp_path / "nope", "x")])


# --- ls -----------------------------------------------------------------------------------


def test_ls_states(tmp_path):
    a = engine_for(tmp_path, "mem_a")
    seed(a.ctx.memory_dir)
    write_memory(a.ctx.memory_dir, "reference_docs.md", "Docs live in the wiki.\n")
    a.run("sync")
    b = engine_for(tmp_path, "mem_b")
    b.run("sync")

    # remote_only: another device adds a file; modified_remote: another device edits one.
    write_memory(b.ctx.memory_dir, "project_beta.md", "Beta is paused.\n")
    write_memory(b.ctx.memory_dir, "user_role.md", "Staff engineer now.\n")
    b.run("sync")
    # modified_local, local_only, deleted_local, refused: changes here, not yet synced.
    write_memory(a.ctx.memory_dir, "feedback_tests.md", "Run them twice.\n")
    write_memory(a.ctx.memory_dir, "project_gamma.md", "Gamma starts soon.\n")
    (a.ctx.memory_dir / "reference_docs.md").unlink()
    (a.ctx.memory_dir / "broken.md").write_text("no frontmatter\n", encoding="utf-8")

    listed = {f.name: f for f in admin.list_remote(a)}
    states = {name: f.state for name, f in listed.items()}
    assert states == {
        "MEMORY.md": "in_sync",
        "broken.md": "refused",
        "feedback_tests.md": "modified_local",
        "notes/project_alpha.md": "in_sync",
        "project_beta.md": "remote_only",
        "project_gamma.md": "local_only",
        "reference_docs.md": "deleted_local",
        "session_digest_2026-01-05.md": "in_sync",
        "user_role.md": "modified_remote",
    }
    assert listed["session_digest_2026-01-05.md"].type == "session_digest"
    assert listed["MEMORY.md"].type == "index"
    assert listed["project_beta.md"].type == "project"
    assert listed["project_gamma.md"].etag is None
    remote = remote_files(tmp_path)
    assert listed["user_role.md"].size == len(remote["user_role.md"])
    assert listed["user_role.md"].modified > 0
    assert "frontmatter" in listed["broken.md"].detail

    only_remote = {f.name for f in admin.list_remote(a, include_local=False)}
    assert only_remote == set(remote)

    # Never synced here but identical on both sides: in_sync after one comparison.
    c = engine_for(tmp_path, "mem_c")
    (c.ctx.memory_dir / "MEMORY.md").write_bytes(remote["MEMORY.md"])
    states_c = {f.name: f.state for f in admin.list_remote(c)}
    assert states_c["MEMORY.md"] == "in_sync"
    assert states_c["user_role.md"] == "remote_only"
