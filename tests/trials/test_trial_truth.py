"""Trials of what a user is told and what stays true on two devices (issue 16, fresh-eyes
re-trial s27): one remote under two spellings, a project named before its first commit,
and the smaller truthfulness findings. The installed console script, one folder remote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.trials.test_trial_state import User, user


@pytest.fixture
def share(tmp_path: Path) -> Path:
    folder = tmp_path / "remote"
    folder.mkdir()
    return folder


def index(*names: str) -> str:
    return "# Memory\n" + "".join(f"- [{n}]({n}.md) — about {n}\n" for n in names)


def two_synced(tmp_path: Path, share: Path) -> tuple[User, User]:
    a, b = user(tmp_path, "laptop", share), user(tmp_path, "desktop", share)
    (a.memory / "MEMORY.md").write_text(index("user_pat", "user_riley"))
    a.write("user_pat.md", "Pat takes coffee black.\n", type="user")
    a.write("user_riley.md", "Riley manages Pat.\n", type="user")
    a.run("sync")
    b.run("sync")
    return a, b


# --- finding 15: one remote, one state, however its URL is spelled -------------------------


@pytest.mark.parametrize("spelling", ["{}/", "file:{path}", "file://localhost{path}/./"])
def test_the_same_remote_spelled_another_way_keeps_this_devices_state(tmp_path, share, spelling):
    a, b = two_synced(tmp_path, share)
    b.write("user_pat.md", "Pat takes coffee black, no sugar.\n", type="user")
    b.run("sync")
    (a.memory / "MEMORY.md").write_text(index("user_pat"))  # the Riley line deleted on A
    a.remote = spelling.format(share.as_uri(), path=share.as_posix())
    status = a.run("status").stdout
    assert "never" not in status and "changed on both sides" not in status, status
    synced = a.run("sync")
    assert "conflict" not in (synced.stdout + synced.stderr).lower(), synced
    assert "user_riley" not in (a.memory / "MEMORY.md").read_text()
    assert "no sugar" in (a.memory / "user_pat.md").read_text()
    assert len(list((a.home / "state").iterdir())) == 1
    b.run("sync")
    assert a.files() == b.files()


# --- finding 1: a project named before its first commit ------------------------------------


def git(repo: Path, *args: str) -> None:
    import os
    import subprocess

    from tests.test_identity import GIT_ENV

    subprocess.run(["git", "-C", str(repo), *args], check=True, env={**os.environ, **GIT_ENV})


def manifest(share: Path) -> dict:
    import json

    return json.loads((share / "app" / "_memsync" / "project.json").read_text())


def unborn_app(tmp_path: Path, share: Path) -> tuple[User, User]:
    """Client A's `app`, a repository without a commit yet, synced under `--project app`, and
    client D's unrelated `app`, with a commit and a secret of its own, not synced."""
    from tests.test_identity import git_repo

    a = user(tmp_path, "client-a", share, named=False)
    d = user(tmp_path, "client-d", share, named=False)
    a.cwd = tmp_path / "work-a" / "app"
    a.cwd.mkdir(parents=True)
    git(a.cwd, "init", "-q")
    a.write("user_acme_client.md", "Acme pays 40k.\n", type="user")
    a.run("sync", "--project", "app")
    d.cwd = git_repo(tmp_path / "work-d" / "app", "client D's app")
    d.write("user_delta_secret.md", "Delta's secret.\n", type="user")
    return a, d


def first_commit(a: User) -> None:
    (a.cwd / "README").write_text("client A")
    git(a.cwd, "add", "README")
    git(a.cwd, "commit", "-qm", "first")


def test_a_project_named_before_its_first_commit_is_stamped_by_its_device_then_guarded(
    tmp_path, share
):
    a, d = unborn_app(tmp_path, share)
    assert manifest(share)["fingerprint"] is None
    first_commit(a)
    a.run("sync")  # its first sync with a commit records it
    assert manifest(share)["fingerprint"].startswith("commit:")
    stamped = manifest(share)

    refused = d.run("sync", "--project", "app", check=1)
    assert "holds the memory of another project" in refused.stderr
    assert not (d.memory / "user_acme_client.md").exists()
    assert manifest(share) == stamped
    a.run("sync")
    assert not (a.memory / "user_delta_secret.md").exists()


def test_a_fresh_devices_first_push_of_one_file_checks_the_project_first(tmp_path, share):
    """The PostToolUse hook's `push FILE` on a device that never synced this project: it lists
    first, so another repository's manifest refuses it as a sync would. Before, it trusted
    its (empty) records and uploaded client D's secret into client A's project."""
    a, d = unborn_app(tmp_path, share)
    first_commit(a)
    a.run("sync")
    refused = d.run("push", str(d.memory / "user_delta_secret.md"), "--project", "app", check=1)
    assert "holds the memory of another project" in refused.stderr, refused.stderr
    assert sorted(p.name for p in (share / "app").glob("*.md")) == ["user_acme_client.md"]
    a.run("sync")
    assert not (a.memory / "user_delta_secret.md").exists()


def test_a_stranger_at_an_unstamped_manifest_is_refused_and_stamps_nothing(tmp_path, share):
    """The device that named the project has not synced since its first commit: a device
    arriving with a commit of its own cannot tell whose memory it is, so it takes none."""
    a, d = unborn_app(tmp_path, share)
    for command in ("sync", "pull"):
        refused = d.run(command, "--project", "app", check=1)
        assert "before its project had a first commit" in refused.stderr, refused.stderr
    assert not (d.memory / "user_acme_client.md").exists()
    assert manifest(share)["fingerprint"] is None
    assert sorted(p.name for p in (share / "app").glob("*.md")) == ["user_acme_client.md"]
    first_commit(a)
    a.run("sync")
    assert manifest(share)["fingerprint"].startswith("commit:")
    assert "another project" in d.run("sync", "--project", "app", check=1).stderr


# --- smaller findings: what validate, status and the primer say ----------------------------


def test_validate_lists_a_file_kept_local_by_choice_and_exits_0(tmp_path, share):
    a, _ = two_synced(tmp_path, share)
    a.write("user_health.md", "Pat's diagnosis.\n", type="user", sensitivity="high")
    assert "kept local" in a.run("sync").stderr + a.run("sync").stdout
    checked = a.run("validate")  # exit 0: the user's choice, as sync says
    assert "kept local (sensitivity: high, no consent): user_health.md" in checked.stdout
    assert "3 file(s) OK; 1 kept local by choice." in checked.stdout
    a.write("user_key.md", "token ghp_" + "a1B2" * 9 + "\n", type="user")
    assert "1 of 5 file(s) have problems" in a.run("validate", check=1).stderr


@pytest.mark.parametrize("shape", ["project folder removed", "empty mount point"])
def test_status_on_an_emptied_remote_says_so_and_that_nothing_is_deleted_here(
    tmp_path, share, shape
):
    import shutil

    a, _ = two_synced(tmp_path, share)
    if shape == "project folder removed":
        shutil.rmtree(share / "e2e-project")
    else:
        share.rename(share.with_name("share.away"))
        share.mkdir()
    status = a.run("status").stdout
    assert "the remote is empty, but this device synced 3 file(s)" in status, status
    assert "nothing will be deleted here" in status and "mount it" in status
    # none is in sync with an empty remote (fresh-eyes re-trial s28c, F6)
    assert "deleted on the remote" not in status and "0 file(s) in sync." in status
    assert "is empty" in a.run("sync", check=1).stderr
    assert len(a.files()) == 3


def test_the_session_start_primer_says_it_restored_a_lost_memory_dir(tmp_path, share):
    """(After an unclean end too: tests/test_hook_sessions.py.)"""
    import json
    import shutil

    _, b = two_synced(tmp_path, share)
    shutil.rmtree(b.memory)
    hook = b.run("hook", "session-start", input=json.dumps({"session_id": "s", "cwd": str(b.root)}))
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "was missing; restoring the 3 file(s) synced from it" in context, context
    assert len(b.files()) == 3
    log = (b.home / "logs" / "memsync.log").read_text()
    assert "was missing; restoring the 3 file(s)" in log, log


# --- finding 13: an index line edited elsewhere goes with the file prune/compact deleted --------


def digests(device: User) -> None:
    lines = []
    for day in ("01", "02", "05", "08"):
        device.write(
            f"session_digest_2026-10-{day}.md",
            f"## Session 10:00 s{day}\n\n### Arcs\n- ARC{day} worked on item {day}.\n",
            type="session_digest",
            date=f"2026-10-{day}",
        )
        lines.append(f"- [Digest 2026-10-{day}](session_digest_2026-10-{day}.md) — Oct {day}\n")
    (device.memory / "MEMORY.md").write_text("# Memory\n" + "".join(lines))


@pytest.mark.parametrize(
    "deletion",
    [
        ("prune", "--older-than", "30d", "--type", "session_digest", "-y"),
        ("compact", "--now", "2026-11-26"),
    ],
)
def test_an_index_line_edited_elsewhere_goes_with_the_file_that_was_deleted(
    tmp_path, share, deletion
):
    a, b = user(tmp_path, "laptop", share), user(tmp_path, "desktop", share)
    digests(a)
    a.run("sync")
    b.run("sync")
    index = b.memory / "MEMORY.md"
    index.write_text(index.read_text().replace("— Oct 05", "— Oct 05, Pat was fine BIDX"))
    a.run(*deletion, check=None)
    assert not (a.memory / "session_digest_2026-10-05.md").exists()
    synced = b.run("sync")
    assert not (b.memory / "session_digest_2026-10-05.md").exists()
    assert "session_digest_2026-10-05.md" not in index.read_text(), index.read_text()
    assert "MEMORY.md no longer lists session_digest_2026-10-05.md" in synced.stderr + synced.stdout
    assert "BIDX" in "".join(
        p.read_text() for p in (b.home / "state").rglob("*") if p.is_file() and "history" in p.parts
    )
    a.run("sync")
    assert a.files() == b.files()
    assert "session_digest_2026-10-05.md" not in (a.memory / "MEMORY.md").read_text()


def test_a_push_or_pull_that_leaves_changes_the_other_way_does_not_say_in_sync(tmp_path, share):
    """Fresh-eyes s29a, finding 5: `push` on a device whose remote had changed printed
    "Everything is in sync."; so did a `pull` with changes made here. Each now says what waits
    and which command takes it."""
    a, b = two_synced(tmp_path, share)
    a.append("user_pat.md", "Pat moved to Lisbon.\n")
    a.run("sync")
    said = b.run("push").stdout
    assert (
        "in sync" not in said
        and "1 file(s) changed on the remote (written or deleted) since" in said
    ), said
    b.append("user_riley.md", "Riley is on leave in May.\n")
    said = a.run("pull").stdout
    assert said == "Everything is in sync.\n", said
    b.run("pull")
    said = b.run("pull").stdout
    assert "in sync" not in said and "1 file(s) changed here" in said, said
    b.run("push")
    assert b.run("push").stdout == "Everything is in sync.\n"


def test_a_push_that_sends_something_still_says_what_waits_on_the_remote(tmp_path, share):
    """Fresh-eyes s29e: a `push` that sent a file said only "pushed: ..." while another
    device's edit waited on the remote; a `pull` that brought one said nothing of the edit
    waiting here. Each names what waits the other way, and which command takes it."""
    a, b = two_synced(tmp_path, share)
    path = a.append("user_pat.md", "Pat moved to Lisbon.\n")
    a.run("sync")
    path = b.append("user_riley.md", "Riley is on leave in May.\n")
    proc = b.run("push")
    assert proc.stdout == "pushed: user_riley.md\n", proc.stdout
    assert "1 file(s) changed on the remote (written or deleted) since" in proc.stderr, proc.stderr
    path.write_text(path.read_text() + "Riley prefers async updates.\n")
    proc = b.run("pull")
    assert proc.stdout == "pulled: user_pat.md\n", proc.stdout
    assert "1 file(s) changed here wait for `memsync push`" in proc.stderr, proc.stderr
    proc = b.run("sync")
    assert "wait" not in proc.stderr and "written since" not in proc.stderr, proc.stderr


def test_admin_commands_say_what_is_true_when_there_is_nothing_to_do(tmp_path, share):
    """Fresh-eyes s29b, finding 6: `restore` of a forgotten file pointed at `history`, which
    knows no such file; an `import` that copied nothing said "Run `memsync pull` to bring
    them here."; `export --from local` of a missing memory dir exported 0 files, exit 0."""
    a, b = two_synced(tmp_path, share)
    a.run("forget", "user_riley.md", "--yes")
    said = a.run("restore", "user_riley.md", check=1).stderr
    assert "no earlier version of it is kept on this device" in said, said
    assert "see `memsync history" not in said, said
    archive = tmp_path / "b.tar.gz"
    b.run("export", str(archive))
    said = b.run("import", str(archive)).stdout
    assert "Copied: 0" in said and "memsync pull" not in said, said
    shutil.rmtree(a.memory)
    said = a.run("export", str(tmp_path / "none.tar.gz"), "--from", "local", check=1).stderr
    assert "does not exist" in said and not (tmp_path / "none.tar.gz").exists(), said


def test_a_first_sync_to_a_folder_remote_not_made_yet_says_how_to_make_it(tmp_path):
    """Fresh-eyes s29d, finding 3: a folder remote that does not exist yet was "unreachable
    (is the drive mounted?); 0 change(s) queued, they go out with the next pull, push or
    sync". memsync never makes it (an unmounted drive's mount point stays untouched), so it
    says how to, and no "0 queued"."""
    missing = tmp_path / "nas" / "memsync"
    a = user(tmp_path, "laptop", missing)
    said = a.run("pull", check=3).stderr
    assert f"mkdir -p {missing}" in said and "0 change(s)" not in said, said
    missing.mkdir(parents=True)
    a.write("user_pat.md", "Pat takes coffee black.\n", type="user")
    assert "pushed: user_pat.md" in a.run("sync").stdout


def test_compact_says_what_its_sync_did_and_which_command_takes_force(tmp_path, share):
    """Fresh-eyes s30c, findings 2 and 3: `compact` syncs first and said only "Nothing to
    compact." while it pushed, pulled and deleted; refused by the deletion guard, it said "run
    it again with --force", an option compact does not have (so did the scheduled job, every
    day). It now prints what the sync did, as `sync` does, and names `memsync sync --force`."""
    a, b = two_synced(tmp_path, share)
    path = b.append("user_riley.md", "Riley is on leave in May.\n")
    b.run("sync")
    path = a.append("user_pat.md", "Pat moved to Lisbon.\n")
    proc = a.run("compact")
    assert "pushed: user_pat.md" in proc.stdout and "pulled: user_riley.md" in proc.stdout, proc
    assert "Nothing to compact." in proc.stdout
    path.write_text(path.read_text() + "Pat is back from Lisbon.\n")
    doc = json.loads(a.run("compact", "--json").stdout)  # --json says it too (s30e, 4)
    assert doc["data"]["sync"]["uploaded"] == ["user_pat.md"], doc
    for n in range(6):
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    a.run("sync")
    for name in [*(f"user_fact_{n}.md" for n in range(6)), "user_riley.md"]:
        (a.memory / name).unlink()
    said = a.run("compact", check=1).stderr
    assert "`memsync sync --force`" in said and "then the compaction again" in said, said
    assert "run it again with --force" not in said, said


def test_compact_in_a_lost_memory_dir_names_pull_not_force(tmp_path, share):
    """Fresh-eyes s30e, finding 5: with the memory dir lost, `compact` said to run `memsync
    sync --force`, which refuses in that state; the way out is `memsync pull`."""
    a, _ = two_synced(tmp_path, share)
    for path in a.memory.iterdir():
        path.unlink()
    said = a.run("compact", check=1).stderr
    assert "memsync pull" in said and "--force" not in said, said


def test_a_one_file_push_of_an_unchanged_file_does_not_claim_everything_is_in_sync(tmp_path, share):
    """Fresh-eyes s32a, finding 7: `push FILE` of a file unchanged since its last sync asks
    the remote nothing, yet said "Everything is in sync." with the remote away and an edit
    waiting, or with another device's change on the remote. It says what it knows."""
    a, b = two_synced(tmp_path, share)
    a.append("user_riley.md", "Riley is on leave in May.\n")  # an edit, not pushed
    away = tmp_path / "remote-away"
    share.rename(away)
    said = a.run("push", str(a.memory / "user_pat.md"))
    assert said.stdout == (
        "Nothing to push: user_pat.md unchanged since the last sync (`memsync sync` looks for "
        "changes on the remote).\n"
    ), said.stdout
    away.rename(share)
    b.append("user_pat.md", "Pat moved to Lisbon.\n")
    b.run("sync")
    assert "in sync" not in a.run("push", str(a.memory / "user_riley.md")).stdout  # pushed
    assert "Everything is in sync." not in a.run("push", str(a.memory / "user_riley.md")).stdout
