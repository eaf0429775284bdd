"""Projects never cross (issue 16, defect 9): without a git origin a project is not named by
its bare folder name; the remote keeps the project's fingerprint and a sync refuses to mix
another project's memory in; existing users' projects keep their name."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memsync.context import config
from memsync.sync.engine import Engine
from memsync.util.errors import ConfigError, UserError
from tests.conftest import write_memory

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git_repo(path: Path, message: str, origin: str | None = None) -> Path:
    path.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "README").write_text(message)
    subprocess.run(["git", "-C", str(path), "add", "README"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", message], check=True, env=env)
    if origin:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def engine(tmp_path: Path, device: str, cwd: Path, project: str | None = None) -> Engine:
    os.environ["MEMSYNC_HOME"] = str(tmp_path / f"home-{device}")
    (tmp_path / "remote").mkdir(exist_ok=True)
    mem = tmp_path / f"mem-{device}-{cwd.name}-{cwd.parent.name}"
    mem.mkdir(exist_ok=True)
    ctx = config.resolve(
        memory_dir=mem, remote=(tmp_path / "remote").as_uri(), project=project, cwd=cwd
    )
    return Engine(ctx)


def test_two_unrelated_repos_with_the_same_folder_name_never_share_memory(tmp_path) -> None:
    client_a = git_repo(tmp_path / "client-a" / "app", "client A's app")
    client_b = git_repo(tmp_path / "client-b" / "app", "client B's app")
    a = engine(tmp_path, "laptop", client_a)
    b = engine(tmp_path, "laptop", client_b)
    assert a.ctx.project != b.ctx.project
    assert a.ctx.project.startswith("app-") and a.ctx.project_source == "first-commit"
    write_memory(a.ctx.memory_dir, "project_deal.md", "Client A's confidential terms.\n")
    a.run("sync")
    result = b.run("sync")
    assert result.downloaded == []
    assert list(b.ctx.memory_dir.iterdir()) == []


def test_the_same_repo_on_two_devices_gets_the_same_name(tmp_path) -> None:
    repo = git_repo(tmp_path / "one" / "app", "the app")
    clone = tmp_path / "two" / "app"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "remote", "remove", "origin"], check=True)
    a, b = engine(tmp_path, "a", repo), engine(tmp_path, "b", clone)
    assert a.ctx.project == b.ctx.project
    write_memory(a.ctx.memory_dir, "user_pat.md", "Pat likes tea.\n")
    a.run("sync")
    # a clone and another project made from the same template cannot be told apart: B, which
    # never synced it, joins once the user says it is the same project (then it is pinned)
    with pytest.raises(UserError, match="same template"):
        b.run("sync")
    joined = engine(tmp_path, "b", clone, project=a.ctx.project)
    assert joined.run("sync").downloaded == ["user_pat.md"]
    again = engine(tmp_path, "b", clone)
    assert (again.ctx.project, again.ctx.project_source) == (a.ctx.project, "pinned")
    assert again.run("sync").changes == 0


def test_a_folder_without_git_needs_a_name_once_and_keeps_it(tmp_path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    with pytest.raises(ConfigError) as caught:
        engine(tmp_path, "a", folder)
    assert "--project NAME" in str(caught.value) and "mem-a-notes" in str(caught.value)
    named = engine(tmp_path, "a", folder, project="my-notes")
    write_memory(named.ctx.memory_dir, "user_pat.md", "Pat.\n")
    named.run("sync")
    again = engine(tmp_path, "a", folder)  # the name given once is remembered
    assert (again.ctx.project, again.ctx.project_source) == ("my-notes", "pinned")
    assert again.run("sync").changes == 0


def test_a_different_repo_under_an_old_shared_name_is_refused_in_one_sentence(tmp_path) -> None:
    """Both clients synced under `app` before (the defect): the first to sync after the
    upgrade claims the prefix with its first commit; the other is refused, nothing moves."""
    client_a = git_repo(tmp_path / "client-a" / "app", "client A's app")
    client_b = git_repo(tmp_path / "client-b" / "app", "client B's app")
    a = engine(tmp_path, "a", client_a, project="app")
    b = engine(tmp_path, "b", client_b, project="app")
    write_memory(a.ctx.memory_dir, "project_deal.md", "Client A's confidential terms.\n")
    a.run("sync")
    write_memory(b.ctx.memory_dir, "project_other.md", "Client B's own notes.\n")
    with pytest.raises(UserError) as caught:
        b.run("sync")
    message = str(caught.value)
    assert "holds the memory of another project" in message and "--project NAME" in message
    assert "\n" not in message
    assert not (b.ctx.memory_dir / "project_deal.md").exists()
    assert not (tmp_path / "remote" / "app" / "project_other.md").exists()


def test_the_project_check_costs_a_no_op_sync_no_request(tmp_path) -> None:
    repo = git_repo(tmp_path / "one" / "app", "the app")
    a = engine(tmp_path, "a", repo)
    write_memory(a.ctx.memory_dir, "user_pat.md", "Pat.\n")
    a.run("sync")
    result = engine(tmp_path, "a", repo).run("sync")
    assert result.changes == 0 and result.stats.total() == 1


def add_origin(repo: Path, url: str) -> None:
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", url], check=True)


def test_an_origin_added_later_does_not_move_the_memory(tmp_path) -> None:
    """F5 of the fresh-eyes trial: the name synced under wins over an origin that appears; the
    identity carries the origin's name for the one-sentence note."""
    repo = git_repo(tmp_path / "one" / "app", "the app")
    first = engine(tmp_path, "a", repo)
    write_memory(first.ctx.memory_dir, "user_pat.md", "Pat.\n")
    first.run("sync")
    add_origin(repo, "git@github.com:me/app.git")
    later = engine(tmp_path, "a", repo)
    assert (later.ctx.project, later.ctx.project_source) == (first.ctx.project, "pinned")
    assert later.ctx.fingerprint == first.ctx.fingerprint  # the manifest still matches
    assert later.ctx.other_origin == "github.com-me-app"
    result = later.run("sync")
    assert result.changes == 0 and len(result.notes) == 1
    assert "memsync sync --project github.com-me-app" in result.notes[0]


def test_a_changed_origin_keeps_the_name_synced_under(tmp_path) -> None:
    repo = git_repo(tmp_path / "one" / "app", "the app", origin="git@github.com:me/app.git")
    engine(tmp_path, "a", repo).run("sync")  # an origin's name is pinned too
    subprocess.run(
        ["git", "-C", str(repo), "remote", "set-url", "origin", "git@github.com:org/app.git"],
        check=True,
    )
    later = engine(tmp_path, "a", repo)
    assert later.ctx.project == "github.com-me-app"
    assert later.ctx.other_origin == "github.com-org-app"


def test_a_name_the_user_gave_wins_over_an_origin(tmp_path) -> None:
    repo = git_repo(tmp_path / "one" / "app", "the app", origin="git@github.com:me/app.git")
    engine(tmp_path, "a", repo).run("sync")
    engine(tmp_path, "a", repo, project="shared-notes").run("sync")
    later = engine(tmp_path, "a", repo)
    assert (later.ctx.project, later.ctx.other_origin) == ("shared-notes", "github.com-me-app")


def test_the_manifest_origin_keeps_what_the_name_folds_together() -> None:
    from memsync.context.identity import exact_origin, normalise_origin

    same = (
        "git@github.com:Me/App.git",
        "https://github.com/me/app",
        "https://github.com/me/app.git/",
        "ssh://git@github.com/me/app.git",
    )
    assert {exact_origin(url) for url in same} == {"github.com/me/app"}
    for one, two in (
        ("git@github.com:me-x/proj.git", "https://github.com/me/x-proj.git"),
        ("https://github.com/me/proj%20x", "https://github.com/me/proj-20x"),
    ):
        assert normalise_origin(one) == normalise_origin(two)  # one name, as before
        assert exact_origin(one) != exact_origin(two)


def manifest(tmp_path: Path, name: str) -> Path:
    return tmp_path / "remote" / name / "_memsync" / "project.json"


def test_two_repos_whose_origins_make_one_name_never_share_memory(tmp_path) -> None:
    repo_a = git_repo(tmp_path / "a" / "proj", "A's", origin="git@github.com:me-x/proj.git")
    repo_b = git_repo(tmp_path / "b" / "proj", "B's", origin="https://github.com/me/x-proj.git")
    a, b = engine(tmp_path, "a", repo_a), engine(tmp_path, "b", repo_b)
    assert a.ctx.project == b.ctx.project == "github.com-me-x-proj"
    write_memory(a.ctx.memory_dir, "user_secret.md", "A's confidential note.\n")
    a.run("sync")
    assert '"origin": "github.com/me-x/proj"' in manifest(tmp_path, a.ctx.project).read_text()
    write_memory(b.ctx.memory_dir, "user_other.md", "B's own note.\n")
    for mode in ("sync", "pull", "push"):
        with pytest.raises(UserError) as caught:
            b.run(mode)
        message = str(caught.value)
        assert "holds the memory of another project" in message and "--project NAME" in message
        assert "github.com/me-x/proj" in message and "github.com/me/x-proj" in message
        assert "\n" not in message
    assert not (b.ctx.memory_dir / "user_secret.md").exists()
    assert not (tmp_path / "remote" / a.ctx.project / "user_other.md").exists()


def test_the_same_repo_over_ssh_and_https_still_shares_memory(tmp_path) -> None:
    repo = git_repo(tmp_path / "one" / "app", "the app", origin="git@github.com:me/app.git")
    clone = tmp_path / "two" / "app"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(
        ["git", "-C", str(clone), "remote", "set-url", "origin", "https://github.com/me/app"],
        check=True,
    )
    a, b = engine(tmp_path, "a", repo), engine(tmp_path, "b", clone)
    write_memory(a.ctx.memory_dir, "user_pat.md", "Pat likes tea.\n")
    a.run("sync")
    assert b.run("sync").downloaded == ["user_pat.md"]
    assert engine(tmp_path, "b", clone).run("sync").stats.total() == 1  # no-op: one request


def test_a_manifest_from_an_earlier_memsync_gets_the_origin_from_its_own_repo(tmp_path) -> None:
    """A manifest without the origin (an earlier memsync) lets in an origin of its name as
    before; the repository that wrote it (its first commit) records its origin, and another
    repository whose origin makes the same name is told apart from then on."""
    import json

    repo_a = git_repo(tmp_path / "a" / "proj", "A's", origin="git@github.com:me-x/proj.git")
    repo_b = git_repo(tmp_path / "b" / "proj", "B's", origin="https://github.com/me/x-proj.git")
    a = engine(tmp_path, "a", repo_a)
    write_memory(a.ctx.memory_dir, "user_secret.md", "A's note.\n")
    a.run("sync")
    path = manifest(tmp_path, a.ctx.project)
    doc = json.loads(path.read_text())
    del doc["origin"]
    path.write_text(json.dumps(doc))  # as an earlier memsync wrote it
    b = engine(tmp_path, "b", repo_b)
    assert b.run("sync").downloaded == ["user_secret.md"]  # as before: nothing tells them apart
    assert "origin" not in json.loads(path.read_text())  # and B does not claim it
    engine(tmp_path, "a", repo_a).run("sync")
    assert json.loads(path.read_text())["origin"] == "github.com/me-x/proj"
    with pytest.raises(UserError, match="holds the memory of another project"):
        engine(tmp_path, "b", repo_b).run("sync")
