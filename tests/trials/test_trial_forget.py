"""Trials of the forget rule (docs/forget.md) as a user meets it: `python -m memsync` on two
devices (own MEMSYNC_HOME and memory dir each) and one folder remote. Each asserts what the
rule says: after the forget arrives, no file, history version, base or queued copy on either
device, and nothing on the remote, holds the text; every line not holding it is still there;
what a device writes after it learned stays."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.devices import Device
from tests.privacy_oracle import assert_forgotten, quarantine_dir
from tests.trials.shared import on_remote

NOTES = "project_notes.md"


def gone_everywhere(pair: tuple[Device, Device], remote: Path, text: str) -> None:
    a, b = pair
    allowed = [quarantine_dir(a.home), quarantine_dir(b.home)]
    assert_forgotten([text], [a.home, a.memory, b.home, b.memory, remote], allowed)


def seed(a: Device, b: Device, body: str, **meta: object) -> None:
    """`project_notes.md` written on `a` and synced to `b`."""
    a.write(NOTES, body, type="project", **meta)
    a.run("sync")
    b.run("sync")


def text(device: Device, name: str = NOTES) -> str:
    path = device.memory / name
    return path.read_text() if path.exists() else ""


def test_match_takes_every_line_holding_the_text_and_nothing_else(pair, remote):
    a, b = pair
    seed(a, b, "- Dentist on Tuesday\n- buy milk\n")
    a.append(NOTES, "- the DENTIST said floss\n")  # history holds the earlier version
    a.run("sync")
    b.run("sync")
    out = a.run("forget", "--match", "dentist", "--yes").stdout
    assert "will remove 2 line(s) from project_notes.md" in out
    b.run("sync")
    gone_everywhere(pair, remote, "dentist")
    for where in (text(a), text(b), on_remote(remote)[NOTES]):
        assert "- buy milk" in where


def test_an_unsynced_edit_elsewhere_loses_only_its_lines_holding_the_text(pair, remote):
    a, b = pair
    seed(a, b, "- dentist on Tuesday\n- buy milk\n")
    b.append(NOTES, "- dentist moved to Friday\n- call mom\n")  # not synced when A forgets
    a.run("forget", "--match", "dentist", "--yes")
    b.run("sync")
    a.run("sync")
    gone_everywhere(pair, remote, "dentist")
    for where in (text(a), text(b), on_remote(remote)[NOTES]):
        assert "- buy milk" in where and "- call mom" in where


def test_a_heading_takes_its_section(pair, remote):
    a, b = pair
    seed(a, b, "## Dentist visits\n- x-ray done\n### Costs\n- 80 euros\n## Garden\n- roses\n")
    a.run("forget", "--match", "dentist", "--yes")
    b.run("sync")
    gone_everywhere(pair, remote, "x-ray")
    gone_everywhere(pair, remote, "80 euros")
    for where in (text(a), text(b), on_remote(remote)[NOTES]):
        assert "## Garden\n- roses\n" in where


def test_a_frontmatter_line_takes_the_file_and_its_index_line(pair, remote):
    a, b = pair
    (a.memory / "MEMORY.md").write_text(
        "# Memory\n- [Notes](project_notes.md) — see there\n- [Role](user_role.md) — role\n"
    )
    a.write("user_role.md", "Staff engineer.\n", type="user")
    seed(a, b, "- private things\n", description="all about the dentist")
    a.run("forget", "--match", "dentist", "--yes")
    b.run("sync")
    gone_everywhere(pair, remote, "private things")
    for device in pair:
        assert not (device.memory / NOTES).exists()
        index = (device.memory / "MEMORY.md").read_text()
        assert "project_notes.md" not in index and "user_role.md" in index
    assert NOTES not in on_remote(remote)


def test_forget_file_sets_an_unsynced_edit_aside_with_a_notice(pair, remote):
    a, b = pair
    seed(a, b, "- secret plan\n")
    b.append(NOTES, "- more of the plan\n")
    a.run("forget", NOTES, "--yes")
    out = b.run("sync")
    said = out.stdout + out.stderr
    assert "quarantine" in said and NOTES in said
    gone_everywhere(pair, remote, "secret plan")
    kept = list(quarantine_dir(b.home).rglob("*.md"))
    assert len(kept) == 1 and "more of the plan" in kept[0].read_text()
    assert "quarantine" in b.run("status").stdout
    assert not (a.memory / NOTES).exists() and not (b.memory / NOTES).exists()


def test_what_a_device_writes_after_it_learned_stays(pair, remote):
    a, b = pair
    seed(a, b, "- dentist on Tuesday\n- buy milk\n")
    a.run("forget", "--match", "dentist", "--yes")
    b.run("sync")  # B learns of it here
    b.append(NOTES, "- booked a new dentist\n")
    b.run("sync")
    a.run("sync")
    for where in (text(a), text(b), on_remote(remote)[NOTES]):
        assert "- booked a new dentist" in where
        assert "dentist on Tuesday" not in where


def _engine(device: Device, monkeypatch):
    from memsync.context.config import resolve
    from memsync.sync.engine import Engine

    for key, value in device.env().items():
        if key.startswith("MEMSYNC_") or key == "HOME":
            monkeypatch.setenv(key, value)
    return Engine(resolve())


@pytest.mark.parametrize("mode", ["sync", "push FILE"])
def test_a_write_racing_the_forget_takes_it_in_before_it_merges(pair, remote, monkeypatch, mode):
    """B lists (or, for `push FILE`, trusts its records); A's forget writes its tombstone and
    scrubs the remote copy; B's conditional write then fails (412): B learns of the forget
    before it merges, so its edit's lines holding the text never go up, and the rest does."""
    a, b = pair
    seed(a, b, "- dentist on Tuesday\n- buy milk\n")
    b.append(NOTES, "- dentist again\n- call mom\n")
    engine = _engine(b, monkeypatch)
    replace = engine.store.replace
    raced = []

    def racing(key, data, etag, edited=None):
        if key == NOTES and not raced:
            raced.append(key)
            a.run("forget", "--match", "dentist", "--yes")
        return replace(key, data, etag, edited)

    monkeypatch.setattr(engine.store, "replace", racing)
    engine.run("sync") if mode == "sync" else engine.run("push", [str(b.memory / NOTES)])
    assert raced
    a.run("sync")
    b.run("sync")
    gone_everywhere(pair, remote, "dentist")
    for where in (text(a), text(b), on_remote(remote)[NOTES]):
        assert "- buy milk" in where and "- call mom" in where


def test_purge_is_final_on_every_device_until_republished(pair, remote):
    a, b = pair
    seed(a, b, "- a fact\n")
    a.run("purge", "--all", "--yes")
    assert on_remote(remote) == {}
    b.append(NOTES, "- more\n")
    refused = b.run("sync", check=1)
    assert "purged" in refused.stderr + refused.stdout
    assert on_remote(remote) == {}
    a.run("push", "--republish")
    assert NOTES in on_remote(remote)
    b.run("sync", check=1)  # B stays out until it says so too
    b.run("push", "--republish")
    assert "- more" in on_remote(remote)[NOTES]


def test_a_forget_made_with_the_remote_away_finishes_at_the_next_sync(pair, remote, tmp_path):
    a, b = pair
    seed(a, b, "- dentist on Tuesday\n- buy milk\n")
    away = tmp_path / "remote-away"
    remote.rename(away)
    a.run("forget", "--match", "dentist", "--yes", check=3)
    away.rename(remote)
    assert "not finished" in a.run("status").stdout
    a.run("sync")
    b.run("sync")
    gone_everywhere(pair, remote, "dentist")
    assert os.path.exists(b.memory / NOTES) and "- buy milk" in text(b)


def test_an_upload_that_raced_the_forget_is_scrubbed_by_its_writer_when_it_learns(
    pair, remote, monkeypatch
):
    """B's upload lands after A's forget scrubbed the remote (the copy there did not hold the
    text, so A left it): B learns of the forget at its next sync and scrubs that copy on the
    remote too, before A or anyone else takes it in."""
    a, b = pair
    seed(a, b, "- dentist on Tuesday\n- buy milk\n")
    b.write("project_other.md", "- garden\n", type="project")
    b.run("sync")
    a.run("sync")
    b.append("project_other.md", "- the dentist called\n- roses\n")
    engine = _engine(b, monkeypatch)
    replace = engine.store.replace
    raced = []

    def racing(key, data, etag, edited=None):
        if key == "project_other.md" and not raced:
            raced.append(key)
            a.run("forget", "--match", "dentist", "--yes")
        return replace(key, data, etag, edited)

    monkeypatch.setattr(engine.store, "replace", racing)
    engine.run("sync")
    assert raced and "dentist called" in on_remote(remote)["project_other.md"]  # it raced
    b.run("sync")
    a.run("sync")
    gone_everywhere(pair, remote, "dentist")
    for where in (text(a, "project_other.md"), on_remote(remote)["project_other.md"]):
        assert "- roses" in where


def test_a_later_match_scrubs_a_copy_set_aside_in_quarantine(pair, remote):
    """Quarantine is held content too: a copy set aside for a `forget FILE` loses its lines
    holding a text forgotten later, and keeps the rest."""
    a, b = pair
    seed(a, b, "- secret plan\n")
    b.append(NOTES, "- the dentist knows\n- keep this\n")
    a.run("forget", NOTES, "--yes")
    b.run("sync")
    a.write("project_other.md", "- dentist again\n", type="project")
    a.run("sync")
    a.run("forget", "--match", "dentist", "--yes")
    b.run("sync")
    assert_forgotten(["dentist"], [a.home, a.memory, b.home, b.memory, remote])
    kept = list(quarantine_dir(b.home).rglob("*.md"))
    assert len(kept) == 1 and "- keep this" in kept[0].read_text()
