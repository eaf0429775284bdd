"""Trials of forget, purge and prune as a user runs them: the installed `memsync` CLI on two
devices (own MEMSYNC_HOME and memory dir each) and one folder remote, asserting what the user
sees on both devices and what the remote holds (issue 16, defects 5, 6, 7, 13, 17, 19, 23)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.devices import Device, make_device
from tests.privacy_oracle import assert_forgotten, quarantine_dir

PROJECT = "e2e-project"


@pytest.fixture
def remote(tmp_path) -> Path:
    folder = tmp_path / "remote"
    folder.mkdir()
    return folder


@pytest.fixture
def pair(tmp_path, remote) -> tuple[Device, Device]:
    return make_device(tmp_path, "laptop", remote.as_uri()), make_device(
        tmp_path, "desktop", remote.as_uri()
    )


def on_remote(remote: Path) -> dict[str, str]:
    """The remote's memory files (memsync's own `_memsync/` records left out)."""
    base = remote / PROJECT
    if not base.is_dir():
        return {}
    return {
        p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.name.startswith(".") and "_memsync" not in p.parts
    }


def everywhere(pair: tuple[Device, Device], remote: Path) -> list[Path]:
    a, b = pair
    return [a.home, a.memory, b.home, b.memory, remote]


def everywhere_text(pair: tuple[Device, Device], remote: Path, name: str) -> list[str]:
    """`name` as each device and the remote hold it."""
    a, b = pair
    return [(a.memory / name).read_text(), (b.memory / name).read_text(), on_remote(remote)[name]]


def audit(device: Device) -> list[dict]:
    return [json.loads(line) for line in (device.home / "audit.log").read_text().splitlines()]


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def index(*lines: str) -> str:
    return "# Memory\n" + "".join(f"{line}\n" for line in lines)


def write_and_sync(a: Device, b: Device, name: str, body: str, **meta: object) -> None:
    """A memory file and `user_role.md` written on `a`, then synced on `a` and `b`."""
    a.write(name, body, **meta)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("sync")
    b.run("sync")


def forget_while_away(device: Device, remote: Path, tmp_path: Path, *args: str) -> None:
    """`memsync forget ARGS --yes` with the remote away (exit 3: it waits for the next sync),
    then the remote back."""
    away = tmp_path / "remote-away"
    remote.rename(away)
    device.run("forget", *args, "--yes", check=3)
    away.rename(remote)


def replace_in(device: Device, name: str, old: str, new: str) -> None:
    """A hand edit of a memory file: `old` replaced by `new`."""
    path = device.memory / name
    path.write_text(path.read_text().replace(old, new))


SAM = "- [Sam](relationship_sam.md) — Sam, going through a divorce"
ROLE = "- [Role](user_role.md) — staff engineer"


def seed_sam(a: Device, b: Device) -> None:
    (a.memory / "MEMORY.md").write_text(index(SAM, ROLE))
    a.write("relationship_sam.md", "## Notes\n- Sam mentioned a divorce.\n", type="relationship")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    b.run("pull")


# --- 5: forget FILE takes its index line, and another device's unsynced edit is set aside --


def test_forget_file_removes_index_line_and_quarantines_an_unsynced_edit(pair, remote):
    a, b = pair
    seed_sam(a, b)
    b.write(
        "relationship_sam.md",
        "## Notes\n- Sam mentioned a divorce.\n- Sam starts a new job in May.\n",
        type="relationship",
    )

    proc = a.run("forget", "relationship_sam.md", "--yes")
    assert "forgotten: relationship_sam.md" in proc.stdout
    assert "removed 1 MEMORY.md line(s)" in proc.stdout
    assert "relationship_sam.md" not in a.files()
    assert (a.memory / "MEMORY.md").read_text() == index(ROLE)
    assert sorted(on_remote(remote)) == ["MEMORY.md", "user_role.md"]
    assert on_remote(remote)["MEMORY.md"] == index(ROLE)
    assert audit(a)[-1]["action"] == "forget"

    assert (
        "relationship_sam.md was forgotten on another device; the next sync"
        in b.run("status").stdout
    )
    proc = b.run("sync")
    said = proc.stdout + proc.stderr
    assert "Everything is in sync." not in said
    assert "relationship_sam.md was forgotten on another device" in said
    held = list(quarantine_dir(b.home).rglob("*relationship_sam.md"))
    assert len(held) == 1 and str(held[0]) in said
    assert "new job in May" in held[0].read_text(), "the unsynced edit is kept, whole"
    assert "relationship_sam.md" not in b.files()
    assert (b.memory / "MEMORY.md").read_text() == index(ROLE)
    assert "relationship_sam.md" not in on_remote(remote)
    assert "divorce" not in on_remote(remote)["MEMORY.md"]
    status = b.run("status").stdout
    assert "relationship_sam.md was forgotten on another device" in status
    start = {"session_id": "s", "cwd": str(b.root), "hook_event_name": "SessionStart"}
    primer = json.loads(b.run("hook", "session-start", input=json.dumps(start)).stdout)
    context = primer["hookSpecificOutput"]["additionalContext"]
    assert "relationship_sam.md was not synced: it was forgotten on another device" in context
    pushed = b.run("push", str(b.memory / "relationship_sam.md"), check=1)
    assert one_line(pushed.stderr).endswith(  # not "no such file" (fresh-eyes s31c)
        f"was set aside in quarantine, as {held[0]}, because it was forgotten on another "
        "device; it is not synced: copy what you still need into a new memory file"
    )

    a.run("sync")
    assert_forgotten(
        ["divorce", "new job in May"], everywhere(pair, remote), [quarantine_dir(b.home)]
    )

    # once the user has dealt with the copy, the notice goes
    held[0].unlink()
    assert "forgotten on another device" not in b.run("status").stdout
    assert "Everything is in sync." in b.run("sync").stdout


def test_forget_file_takes_an_index_line_the_other_device_edited_meanwhile(pair, remote):
    """B rewrites a fact's MEMORY.md description (unsynced) while A forgets the file: the
    line, which links to a file gone everywhere and holds its words, leaves every device; B's
    index as it was is set aside; no conflict claims both versions are kept."""
    a, b = pair
    lines = []
    for i in range(3):
        a.write(f"user_fact{i}.md", f"The user likes thing {i}.\n", type="user")
        lines.append(f"- [fact{i}](user_fact{i}.md) — Fact number {i} about the user")
    (a.memory / "MEMORY.md").write_text(index(*lines))
    a.run("sync")
    b.run("sync")
    index_b = b.memory / "MEMORY.md"
    index_b.write_text(
        index_b.read_text().replace("Fact number 1 about the user", "Pat PRIVATE1 detail")
    )
    a.run("forget", "user_fact1.md", "--yes")
    b.run("sync")
    a.run("sync")
    b.run("sync")
    for device in (a, b):
        text = (device.memory / "MEMORY.md").read_text()
        assert "user_fact1.md" not in text and "user_fact2.md" in text, (device.name, text)
        assert not json.loads(device.run("status", "--json").stdout)["data"]["conflicts"]
    assert "user_fact1.md" not in on_remote(remote)["MEMORY.md"]
    held = list(quarantine_dir(b.home).rglob("*MEMORY.md"))
    assert len(held) == 1 and "PRIVATE1 detail" in held[0].read_text()
    assert_forgotten(["PRIVATE1 detail"], everywhere(pair, remote), [quarantine_dir(b.home)])


def test_forget_then_create_again_reports_no_index_conflict_on_the_other_device(pair, remote):
    """B holds an unsynced edit of a file A forgets and then writes anew, index line and all:
    B sets its edit aside and takes A's new line; it never touched MEMORY.md, so no conflict
    about it is reported anywhere."""
    a, b = pair
    seed_sam(a, b)
    path = b.memory / "relationship_sam.md"
    path.write_text(path.read_text() + "- Sam starts a new job in May.\n")
    a.run("forget", "relationship_sam.md", "--yes")
    a.write("relationship_sam.md", "## Notes\n- Sam from the climbing gym.\n", type="relationship")
    again = "- [Sam](relationship_sam.md) — Sam from the climbing gym"
    (a.memory / "MEMORY.md").write_text(index(ROLE, again))
    a.run("sync")
    said = b.run("sync")
    # the old copy forgotten first, the new file then pulled, and said so (s29a, finding 6)
    lines = [line.split(":")[0] for line in said.stdout.splitlines()]
    assert lines.index("forgotten here (another device ran `memsync forget`)") < lines.index(
        "pulled"
    ), said.stdout
    assert "replaced by a new file of that name, written after the forget" in said.stderr
    a.run("sync")
    for device in (a, b):
        assert not json.loads(device.run("status", "--json").stdout)["data"]["conflicts"]
        assert again in (device.memory / "MEMORY.md").read_text(), device.name
    assert "climbing gym" in (b.memory / "relationship_sam.md").read_text()
    assert len(list(quarantine_dir(b.home).rglob("*relationship_sam.md"))) == 1


# --- 6: forget --match reaches other devices' history, and a pull adds no copy of it ------


def test_forget_match_clears_history_on_the_other_device(pair, remote):
    a, b = pair
    a.write(
        "voice_calibration.md",
        "## 2026-11-20\n\n### Missed\n- joked about Priya's surgery\n- too long\n",
        type="voice_calibration",
    )
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    b.run("pull")
    # B keeps a history copy holding the entry: A changes the file, B's pull replaces it
    a.write(
        "voice_calibration.md",
        "## 2026-11-20\n\n### Missed\n- joked about Priya's surgery\n- too long\n- too formal\n",
        type="voice_calibration",
    )
    a.run("push")
    b.run("pull")
    assert "Priya" in b.run("history", "voice_calibration.md").stdout or any(
        b"Priya" in p.read_bytes() for p in (b.home / "state").rglob("*.md")
    )
    # and an unsynced edit on B, which the merge keeps
    text = (b.memory / "voice_calibration.md").read_text()
    (b.memory / "voice_calibration.md").write_text(text + "- B's own note\n")

    proc = a.run("forget", "--match", "priya", "--yes")
    assert "will remove 1 entry from voice_calibration.md" in proc.stdout
    proc = b.run("sync")
    assert "voice_calibration.md" in proc.stdout
    kept = (b.memory / "voice_calibration.md").read_text()
    assert "Priya" not in kept and "- B's own note" in kept and "- too formal" in kept
    a.run("sync")
    assert (a.memory / "voice_calibration.md").read_text() == kept
    assert_forgotten(["Priya's surgery"], everywhere(pair, remote))
    tombstones = (remote / PROJECT / "_memsync" / "forgotten.json").read_text()
    assert "lines" in json.loads(tombstones), "the entry travels as a hash"


# --- 7: after purge, nothing is published again until the user says so -------------------


def test_purge_is_not_undone_by_the_next_sync_or_session(pair, remote):
    a, b = pair
    seed_sam(a, b)
    a.run("purge", "--all", "--yes")
    assert on_remote(remote) == {}

    proc = a.run("sync", check=1)
    assert "push --republish" in proc.stderr
    payload = {
        "session_id": "s",
        "cwd": str(a.root),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    hook = a.run("hook", "session-start", input=json.dumps(payload))
    assert hook.returncode == 0
    a.run("push", "relationship_sam.md", check=1)
    assert on_remote(remote) == {}

    # B, before it has synced: the PostToolUse push of a synced file gone from the remote
    b.write("user_role.md", "Principal engineer.\n", type="user")
    proc = b.run("push", "user_role.md", check=1)
    assert "refused: user_role.md: not uploaded: this project's memory was purged" in proc.stderr
    assert on_remote(remote) == {}
    proc = b.run("sync", check=1)
    assert "purged from the remote by laptop" in proc.stderr and "push --republish" in proc.stderr
    b.run("push", "user_role.md", check=1)
    b.run("hook", "session-start", input=json.dumps(payload | {"cwd": str(b.root)}))
    assert on_remote(remote) == {}
    shown = b.run("status").stdout
    assert "purged" in shown
    assert "deleted on the remote" not in shown, shown  # the purge says it (s29c, finding 4)
    assert "0 file(s) in sync." in shown, shown  # none are: nothing syncs (s30f)
    assert sorted(b.files()) == ["MEMORY.md", "relationship_sam.md", "user_role.md"]

    proc = a.run("push", "--republish")
    assert "publishing this device's memory again" in proc.stdout
    assert sorted(on_remote(remote)) == ["MEMORY.md", "relationship_sam.md", "user_role.md"]
    b.run("sync", check=1)  # B's own purge mark is B's to lift
    b.run("push", "--republish")
    assert "Principal engineer." in on_remote(remote)["user_role.md"]


def test_after_a_purge_republish_raises_no_false_conflicts_and_a_device_that_never_saw_it_is_told(
    pair, remote, tmp_path
):
    """A purges; B (which saw it) publishes again with an edit; A's own `push --republish`
    then takes B's version of what A left untouched, without the "both devices changed"
    conflicts a missing merge base made up (fresh-eyes trial). C synced before the purge and
    never saw its mark, which B's republish lifted: C is told, uploads nothing, and joins
    only when it says so."""
    a, b = pair
    c = make_device(tmp_path, "tablet", remote.as_uri())
    seed_sam(a, b)
    c.run("pull")
    a.run("purge", "--all", "--yes")
    b.run("sync", check=1)
    b.write("user_role.md", "Principal engineer.\n", type="user")
    sam = b.memory / "relationship_sam.md"
    sam.write_text(sam.read_text() + "- Sam moved to Leeds.\n")
    b.run("push", "--republish")

    proc = a.run("push", "--republish")
    assert "conflict" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    a.run("sync")
    status = a.run("status").stdout
    assert "conflict" not in status and "changed on both sides" not in status, status
    assert "Principal engineer." in (a.memory / "user_role.md").read_text()
    assert a.files() == b.files()

    sam = c.memory / "relationship_sam.md"
    sam.write_text(sam.read_text() + "- Sam starts a new job in May.\n")
    before = on_remote(remote)
    proc = c.run("push", "relationship_sam.md", check=1)  # the PostToolUse hook's: no listing
    assert "relationship_sam.md: not uploaded: this project's memory was purged" in proc.stderr
    proc = c.run("sync", check=1)
    sentence = one_line(proc.stderr)
    assert "purged from the remote by laptop" in sentence, sentence
    # the device that published first, B (s29d, finding 2: the last one used to overwrite it)
    assert "published again by desktop" in sentence and "push --republish" in sentence, sentence
    assert "purged" in c.run("status").stdout
    assert on_remote(remote) == before  # nothing of C's went up unasked

    c.run("push", "--republish")  # C says so: its edit goes up, nothing else is disturbed
    for device in (a, b, c):
        device.run("sync")
    assert "new job in May" in on_remote(remote)["relationship_sam.md"]
    assert "moved to Leeds" in on_remote(remote)["relationship_sam.md"]
    assert "Principal engineer." in on_remote(remote)["user_role.md"]
    assert a.files() == b.files() == c.files()
    assert all("conflict" not in d.run("status").stdout for d in (a, b, c))


@pytest.mark.parametrize("route", ["push FILE", "post-tool-use"])
def test_an_edit_of_a_republished_copy_waits_for_the_device_to_hear_of_the_purge(
    pair, remote, route
):
    """Fresh-eyes s30f: A purges and publishes again at once; B, which has not heard of the
    purge, edits a file whose republished copy is byte for byte what B last synced. The folder
    remote's ETag is the content's hash, so B's conditional write used to succeed: the edit went
    up without B ever saying to publish again. Now it waits, and B is told why."""
    a, b = pair
    seed_sam(a, b)
    a.run("purge", "--all", "--yes")
    a.run("push", "--republish")
    before = on_remote(remote)
    replace_in(b, "user_role.md", "Staff engineer.", "Principal engineer.")
    if route == "push FILE":
        said = b.run("push", "user_role.md", check=1).stderr
    else:
        said = _told(b.post_tool_use(b.memory / "user_role.md")) + _log(b)
    assert "purged" in said and "user_role.md" in said, said
    assert on_remote(remote) == before
    proc = b.run("sync", check=1)
    assert "published again" in proc.stderr and "push --republish" in proc.stderr, proc.stderr
    assert on_remote(remote) == before
    b.run("push", "--republish")  # B says so: its edit goes up
    a.run("sync")
    assert "Principal engineer." in (a.memory / "user_role.md").read_text()


def test_purge_while_the_remote_is_unreachable_deletes_nothing_and_says_so(pair, remote, tmp_path):
    """Exit 3 means "queued" elsewhere; a purge is not queued (carried out later it could
    erase what other devices wrote meanwhile): it deletes nothing and says to run it again."""
    a, b = pair
    seed_sam(a, b)
    away = tmp_path / "remote-away"
    remote.rename(away)  # the NAS is unmounted
    proc = a.run("purge", "--all", "--yes", check=3)
    sentence = one_line(proc.stderr)
    assert "nothing was deleted" in sentence and "purge --all` again" in sentence, sentence
    assert "Deleted" not in proc.stdout
    assert "purged" not in a.run("status").stdout  # nothing here pretends it happened
    away.rename(remote)
    a.write("user_role.md", "Principal engineer.\n", type="user")
    a.run("sync")  # nothing queued went out and nothing stops the next sync
    assert "Principal engineer." in on_remote(remote)["user_role.md"]
    b.run("sync")
    assert "Principal engineer." in (b.memory / "user_role.md").read_text()

    a.run("purge", "--all", "--yes")  # reachable again: it is carried out
    assert on_remote(remote) == {}
    assert "purged from the remote by laptop" in b.run("sync", check=1).stderr


# --- 13: prune by the digest's date, and the index follows ------------------------------


def test_prune_uses_the_digests_date_and_updates_the_index(pair, remote):
    a, b = pair
    today = time.strftime("%Y-%m-%d")
    old, new = "session_digest_2020-01-01.md", f"session_digest_{today}.md"
    (a.memory / "MEMORY.md").write_text(
        index(f"- [Old]({old}) — a 2020 session", f"- [Today]({new}) — today", ROLE)
    )
    a.write(old, "## Arcs\n- old\n", type="session_digest", date="2020-01-01")
    a.write(new, "## Arcs\n- today\n", type="session_digest", date=today)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    b.run("pull")
    # today's digest was uploaded long ago (a restored backup), the old one just now
    past = time.time() - 400 * 86400
    os.utime(remote / PROJECT / new, (past, past))

    dry = a.run("prune", "--older-than", "30d", "--type", "session_digest", "--dry-run")
    assert dry.stdout.splitlines() == [f"would delete: {old}"]
    proc = a.run("prune", "--older-than", "30d", "--type", "session_digest", "--yes")
    assert "removed 1 MEMORY.md line(s)" in proc.stdout
    assert sorted(on_remote(remote)) == ["MEMORY.md", new, "user_role.md"]
    want = index(f"- [Today]({new}) — today", ROLE)
    assert on_remote(remote)["MEMORY.md"] == want
    assert (a.memory / "MEMORY.md").read_text() == want
    b.run("sync")
    assert sorted(b.files()) == ["MEMORY.md", new, "user_role.md"]
    assert (b.memory / "MEMORY.md").read_text() == want


def prune_while_edited(a: Device, b: Device) -> tuple[str, str]:
    """A prunes an old digest that B has meanwhile edited (unsynced): (the digest, its line)."""
    old = "session_digest_2020-01-01.md"
    line = f"- [Old]({old}) — a 2020 session"
    (a.memory / "MEMORY.md").write_text(index(line, ROLE))
    a.write(old, "## Arcs\n- old\n", type="session_digest", date="2020-01-01")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    b.run("pull")
    b.write(
        old,
        "## Arcs\n- old\n- B adds what it still needs\n",
        type="session_digest",
        date="2020-01-01",
    )
    proc = a.run("prune", "--older-than", "30d", "--type", "session_digest", "--yes")
    assert "removed 1 MEMORY.md line(s)" in proc.stdout
    return old, line


@pytest.mark.parametrize("route", ["sync", "push-file-then-sync"])
def test_a_pruned_file_that_comes_back_comes_back_with_its_index_line(pair, remote, route):
    """An edit beats a deletion, so the pruned digest B edited comes back everywhere; its
    MEMORY.md line comes back with it (Claude Code finds a memory file only through the index),
    and B is told. The second route is Claude Code's: the PostToolUse hook pushes the file at
    once, and only a later sync takes in A's index without the line."""
    a, b = pair
    old, line = prune_while_edited(a, b)
    if route == "push-file-then-sync":
        b.run("push", str(b.memory / old))
    proc = b.run("sync")
    notes = [n for n in proc.stderr.splitlines() if "MEMORY.md" in n and old in n]
    assert len(notes) == 1 and notes[0].startswith("note: "), proc.stderr
    back = a.run("sync")  # the device that pruned is told too, once (fresh-eyes s31c, q19)
    assert f"note: {old}, which `memsync prune` deleted here, came back" in back.stderr
    b.run("sync")
    assert "memsync prune" not in a.run("sync").stderr
    for device in (a, b):
        assert "B adds what it still needs" in (device.memory / old).read_text(), device.name
        assert (device.memory / "MEMORY.md").read_text() == index(ROLE, line), device.name
        assert not json.loads(device.run("status", "--json").stdout)["data"]["conflicts"]
    assert on_remote(remote)["MEMORY.md"] == index(ROLE, line)
    assert "Everything is in sync." in b.run("sync").stdout  # said once


# --- 17: a tombstone does not apply to content created after it ---------------------------


def test_a_later_forget_does_not_erase_a_file_created_again(pair, remote):
    a, b = pair
    seed_sam(a, b)
    a.run("forget", "relationship_sam.md", "--yes")
    b.run("sync")
    assert "relationship_sam.md" not in b.files()
    # Sam comes back: a new file, synced, then edited on B without syncing
    a.write("relationship_sam.md", "## Notes\n- Sam joined the team.\n", type="relationship")
    a.run("push")
    b.run("pull")
    b.write(
        "relationship_sam.md",
        "## Notes\n- Sam joined the team.\n- Sam likes chess.\n",
        type="relationship",
    )
    b.run("history", "relationship_sam.md")
    a.write("project_other.md", "Other project.\n", type="project")
    a.run("push")
    a.run("forget", "project_other.md", "--yes")

    proc = b.run("sync")
    assert "forgotten on another device" not in proc.stdout + proc.stderr
    assert "Sam likes chess." in (b.memory / "relationship_sam.md").read_text()
    assert "Sam likes chess." in on_remote(remote)["relationship_sam.md"]
    assert "project_other.md" not in b.files() and "project_other.md" not in on_remote(remote)
    a.run("sync")
    assert "Sam likes chess." in (a.memory / "relationship_sam.md").read_text()
    assert not list(quarantine_dir(b.home).rglob("*"))


@pytest.mark.parametrize("other_synced_between", [False, True])
def test_a_file_written_again_on_the_forgetting_device_survives_everywhere(
    pair, remote, other_synced_between
):
    """Forget user_pat.md, then write a new user_pat.md on the same device: the tombstone is
    for the old file only, so the new one reaches the remote and the other device (found by
    tests/test_devices_machine.py: forget_file, then a new fact on that device)."""
    a, b = pair
    a.write("user_pat.md", "Pat is the old manager.\n", type="user")
    a.run("push")
    b.run("pull")
    a.run("forget", "user_pat.md", "--yes")
    if other_synced_between:
        b.run("sync")
        assert "user_pat.md" not in b.files()
    a.write("user_pat.md", "Pat is the new designer.\n", type="user")
    a.run("sync")
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        text = (device.memory / "user_pat.md").read_text()
        assert "Pat is the new designer." in text and "old manager" not in text
    assert "Pat is the new designer." in on_remote(remote)["user_pat.md"]
    assert not list(quarantine_dir(b.home).rglob("*"))


# --- 19: an outage in the middle of forget finishes on the next run ------------------------


def test_forget_during_an_outage_finishes_on_the_next_sync(pair, remote, tmp_path):
    a, b = pair
    seed_sam(a, b)
    away = tmp_path / "remote-away"
    remote.rename(away)  # the NAS is unmounted

    proc = a.run("forget", "relationship_sam.md", "--yes", check=3)
    assert "the next `memsync sync` finishes it there" in proc.stderr
    assert "relationship_sam.md" not in a.files()
    assert "divorce" not in (a.memory / "MEMORY.md").read_text()
    assert audit(a)[-1]["action"] == "forget", "the audit line is written before anything goes"
    assert "is not finished on the remote" in a.run("status").stdout

    away.rename(remote)
    proc = a.run("sync")
    assert "finished forgetting relationship_sam.md" in proc.stderr, proc.stderr  # not silent
    assert "relationship_sam.md" not in on_remote(remote)
    assert "relationship_sam.md" not in a.files(), "not pulled back"
    assert audit(a)[-1]["action"] == "forget-finished"
    assert "is not finished" not in a.run("status").stdout
    b.run("sync")
    assert "relationship_sam.md" not in b.files()
    assert_forgotten(["divorce"], everywhere(pair, remote))


def test_an_edit_synced_while_a_forget_waited_for_the_remote_is_set_aside_not_erased(
    pair, remote, tmp_path
):
    """A forgets offline; B edits the file and syncs before A is back. A's forget still takes
    the file off the remote (it holds the forgotten text), but B's edit, made after the user
    asked, goes to B's quarantine with a notice: never erased without a copy."""
    a, b = pair
    seed_sam(a, b)
    forget_while_away(a, remote, tmp_path, "relationship_sam.md")
    path = b.memory / "relationship_sam.md"
    path.write_text(path.read_text() + "- Sam starts a new job in May.\n")
    b.run("sync")
    assert "new job in May" in on_remote(remote)["relationship_sam.md"]

    a.run("sync")  # the forget finishes: B's copy leaves the remote too
    assert "relationship_sam.md" not in on_remote(remote)
    proc = b.run("sync")
    said = proc.stdout + proc.stderr
    held = list(quarantine_dir(b.home).rglob("*relationship_sam.md"))
    assert len(held) == 1 and "new job in May" in held[0].read_text(), said
    assert str(held[0]) in said
    assert "relationship_sam.md" not in b.files()
    assert "relationship_sam.md" not in on_remote(remote)


@pytest.mark.parametrize("outage", ["remote-moved-away", "another-url"])
def test_an_edit_synced_by_a_third_device_while_a_forget_waited_is_set_aside_there(
    tmp_path, remote, outage
):
    """Finding F14 (report 16): three devices hold a file; A forgets it while the remote is
    out of reach, either the folder unmounted or the forget run against another URL (the
    job is adopted under the right one through $MEMSYNC_HOME/forgetting/, with no records of
    the right remote). B, which cannot know, edits the file and syncs. A's next sync finishes
    the forget; B's edit must land in B's quarantine with a notice, never erased, and the
    original text stays nowhere outside quarantine."""
    a, b, c = (make_device(tmp_path, n, remote.as_uri()) for n in ("lap", "desk", "tablet"))
    write_and_sync(a, b, "user_x.md", "X likes ZORIGINAL tea.\n", type="user")
    c.run("sync")
    if outage == "another-url":
        down = Device(a.name, a.root, (tmp_path / "remote-down").as_uri())
        down.run("forget", "--yes", "user_x.md", check=3)
    else:
        away = tmp_path / "remote-away"
        remote.rename(away)
        a.run("forget", "--yes", "user_x.md", check=3)
        away.rename(remote)
    path = b.memory / "user_x.md"
    path.write_text(path.read_text() + "B EDIT after forget\n")
    assert "pushed: user_x.md" in b.run("sync").stdout
    c.run("sync")  # C pulls B's copy

    assert "finished forgetting user_x.md" in a.run("sync").stderr
    assert "user_x.md" not in on_remote(remote)
    proc = b.run("sync")
    said = proc.stdout + proc.stderr
    held = list(quarantine_dir(b.home).rglob("*user_x.md"))
    assert len(held) == 1 and "B EDIT after forget" in held[0].read_text(), said
    assert str(held[0]) in said
    assert str(held[0]) in b.run("status").stdout, "the notice stays until the user acts"
    c.run("sync")  # C pulled B's copy: it cannot tell it from an edit of its own, and keeps it
    assert len(list(quarantine_dir(c.home).rglob("*user_x.md"))) == 1
    a.run("sync")
    for device in (a, b, c):
        assert "user_x.md" not in device.files(), device.name
    assert "user_x.md" not in on_remote(remote)
    roots = [d.home for d in (a, b, c)] + [d.memory for d in (a, b, c)] + [remote]
    allowed = [quarantine_dir(d.home) for d in (a, b, c)]
    assert_forgotten(["ZORIGINAL"], roots, allowed)


FAILING_FORGET = """
import sys
from memsync.admin import forget
from memsync.context import config
from memsync.sync.engine import Engine
from memsync.util.errors import Unreachable
from memsync.stores import open_store

class DiesAfterOneDelete:
    def __init__(self, inner):
        self.inner, self.deletes = inner, 0
    def __getattr__(self, name):
        return getattr(self.inner, name)
    def delete(self, key, etag):
        self.deletes += 1
        if self.deletes > 1:
            raise Unreachable("injected: the network went away")
        return self.inner.delete(key, etag)

ctx = config.resolve()
engine = Engine(ctx, DiesAfterOneDelete(open_store(ctx.remote, ctx.project)))
report = forget.forget_files(engine, sys.argv[1:])
print(report.remote_deleted, report.offline)
"""


def _forget_by_script(device: Device, script: str, *names: str) -> subprocess.CompletedProcess:
    """`forget FILE...` on `device` through `script` (a store that fails on cue)."""
    return subprocess.run(
        [sys.executable, "-c", script, *names],
        env=device.env(),
        cwd=device.root,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_forget_cut_off_after_its_first_deletion_is_finished_by_any_device(pair, remote):
    a, b = pair
    seed_sam(a, b)
    a.write("user_pat.md", "Pat, the manager.\n", type="user")
    a.run("push")
    b.run("pull")
    proc = _forget_by_script(a, FAILING_FORGET, "relationship_sam.md", "user_pat.md")
    assert proc.returncode == 0, proc.stderr
    assert "['relationship_sam.md'] injected" in proc.stdout
    assert "user_pat.md" in on_remote(remote), "the outage left the second file"
    tombstones = json.loads((remote / PROJECT / "_memsync" / "forgotten.json").read_text())
    assert sorted(tombstones["files"]) == ["relationship_sam.md", "user_pat.md"]
    assert not {"relationship_sam.md", "user_pat.md"} & set(a.files())

    b.run("sync")  # B follows the tombstone, and does not pull the leftover back
    assert not {"relationship_sam.md", "user_pat.md"} & set(b.files())
    assert "user_pat.md" not in on_remote(remote)
    a.run("sync")
    assert audit(a)[-1]["action"] == "forget-finished"
    assert_forgotten(["divorce", "the manager"], everywhere(pair, remote))


# --- 23: history folders fit any file system -----------------------------------------------


def test_a_long_japanese_name_keeps_history_and_old_folders_are_still_read(pair, remote):
    a, b = pair
    name = "user_" + "記憶の同期についての長いメモです" * 2 + ".md"  # 30+ characters
    assert len(quote(name, safe="")) > 255
    a.write(name, "一つ目。\n", type="user")
    a.run("push")
    b.run("pull")
    a.write(name, "二つ目。\n", type="user")
    a.run("push")
    proc = b.run("pull")
    assert "pulled: " + name in proc.stdout
    listing = b.run("history", name).stdout
    assert "replaced by a newer version" in listing
    for folder in (b.home / "state").rglob("history/*"):
        assert len(folder.name.encode()) <= 64
    b.run("restore", name, "1")
    assert "一つ目。" in (b.memory / name).read_text()


# --- the same on Azure (Azurite) --------------------------------------------------------------


def test_forget_and_purge_against_azurite(tmp_path, azure_url):
    from memsync.stores import open_store

    a, b = make_device(tmp_path, "laptop", azure_url), make_device(tmp_path, "desktop", azure_url)
    store = open_store(azure_url, PROJECT)

    def blobs() -> dict[str, bytes]:
        return {key: store.get(key)[0] for key in store.list()}

    seed_sam(a, b)
    a.write(
        "voice_calibration.md",
        "## Notes\n- joked about Priya's surgery\n",
        type="voice_calibration",
    )
    a.run("push")
    b.run("pull")
    b.write(
        "relationship_sam.md",
        "## Notes\n- Sam mentioned a divorce.\n- chess\n",
        type="relationship",
    )
    a.run("forget", "relationship_sam.md", "--yes")
    a.run("forget", "--match", "priya", "--yes")
    proc = b.run("sync")
    assert "relationship_sam.md was forgotten on another device" in proc.stderr
    assert "Everything is in sync." not in proc.stdout
    a.run("sync")
    assert "relationship_sam.md" not in blobs()
    for data in blobs().values():
        assert b"divorce" not in data and b"priya" not in data.lower()
    assert_forgotten(
        ["divorce", "Priya's"], [a.home, a.memory, b.home, b.memory], [quarantine_dir(b.home)]
    )

    a.run("purge", "--all", "--yes")
    # the purge mark and the forget records (hashes and names, no content) are all it leaves
    left = {"_memsync/purged.json", "_memsync/forgotten.json"}
    assert set(blobs()) == left
    assert b"divorce" not in blobs()["_memsync/forgotten.json"]
    b.write("user_role.md", "Principal engineer.\n", type="user")
    assert "not uploaded" in b.run("push", "user_role.md", check=1).stderr
    b.run("sync", check=1)
    a.run("sync", check=1)
    assert set(blobs()) == left
    a.run("push", "--republish")
    assert "user_role.md" in blobs()
    mark = json.loads(blobs()["_memsync/purged.json"])  # kept, lifted: for devices not told yet
    assert mark["republished"]["device"] == a.name and "synced" not in mark


# --- forget --match against an edit made elsewhere before it ------------------------------


def test_an_item_consumed_on_the_other_device_before_the_forget_does_not_come_back(pair, remote):
    """B consumes the item (moves it, same text) before A forgets it: a merge keeps an edit
    over a concurrent removal, so B's move would bring the line back everywhere unless the
    tombstone takes it out of B's file first (found by tests/test_devices_machine.py)."""
    a, b = pair
    a.write(
        "carry_forward.md",
        "## Pending\n- Ask Dana about the layoffs\n- Book the venue\n\n## Consumed\n",
        type="carry_forward",
    )
    a.run("push")
    b.run("pull")
    b.write(
        "carry_forward.md",
        "## Pending\n- Book the venue\n\n## Consumed\n- Ask Dana about the layoffs\n",
        type="carry_forward",
    )
    a.run("forget", "--match", "layoffs", "--yes")
    b.run("sync")
    a.run("sync")
    b.run("sync")
    for device in (a, b):
        text = (device.memory / "carry_forward.md").read_text()
        assert "- Book the venue" in text and "layoffs" not in text
    assert_forgotten(["layoffs"], everywhere(pair, remote))


def test_forget_match_in_the_index_line_of_a_file_that_stays_keeps_it_indexed(pair, remote):
    """The text is only in MEMORY.md's description of carry_forward.md, which stays: the words
    go, the line stays (its link, with the file's own description), so Claude Code still finds
    the file; forget says which line it rewrote. A line linking to nothing that stays goes."""
    a, b = pair
    carry = "- [Carry forward](carry_forward.md) — open items; the Dana layoffs talk first"
    loose = "- note: ask HR about the layoffs timeline"
    (a.memory / "MEMORY.md").write_text(index(carry, ROLE, loose))
    a.write(
        "carry_forward.md",
        "## Pending\n- Book the venue\n\n## Consumed\n",
        type="carry_forward",
        description="Items to raise at the next session",
    )
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    b.run("pull")

    proc = a.run("forget", "--match", "layoffs", "--yes")
    assert "will remove 1 entry from MEMORY.md" in proc.stdout, proc.stdout
    kept = [line for line in proc.stdout.splitlines() if "carry_forward.md" in line]
    assert len(kept) == 1 and "keep" in kept[0] and "MEMORY.md" in kept[0], proc.stdout
    assert "forget file" not in proc.stdout
    b.run("sync")
    a.run("sync")
    want = index("- [Carry forward](carry_forward.md) — Items to raise at the next session", ROLE)
    for device in (a, b):
        assert (device.memory / "MEMORY.md").read_text() == want, device.name
        assert "- Book the venue" in (device.memory / "carry_forward.md").read_text()
    assert on_remote(remote)["MEMORY.md"] == want
    assert_forgotten(["layoffs"], everywhere(pair, remote))


def test_an_item_reworded_on_the_other_device_before_the_forget_is_set_aside(pair, remote):
    """B rewords the item (still holding the forgotten words) without syncing; A forgets it
    with --match. A merge keeps an edit over a concurrent removal, so B's reword would bring
    the text back everywhere: B takes it out and sets its copy aside, saying so."""
    a, b = pair
    a.write(
        "carry_forward.md",
        "## Pending\n- Check the staging database migration finished.\n- Book the venue\n\n"
        "## Consumed\n",
        type="carry_forward",
    )
    a.run("push")
    b.run("pull")
    path = b.memory / "carry_forward.md"
    path.write_text(
        path.read_text().replace("migration finished.", "migration finished and tell Pat.")
    )
    a.run("forget", "--match", "staging database migration", "--yes")
    proc = b.run("sync")
    a.run("sync")
    b.run("sync")
    held = list(quarantine_dir(b.home).rglob("*carry_forward.md"))
    assert len(held) == 1 and "tell Pat" in held[0].read_text()
    assert "rewording" in proc.stdout + proc.stderr + b.run("status").stdout
    assert "were taken out of carry_forward.md" in proc.stderr, proc.stderr
    for device in (a, b):
        text = (device.memory / "carry_forward.md").read_text()
        assert "- Book the venue" in text and "staging database" not in text
    assert_forgotten(["staging database"], everywhere(pair, remote), [quarantine_dir(b.home)])


# --- conflict descriptions are scrubbed too (remote record, each device's, the primer) ----


def _conflict_on_both(pair, name: str, body: str, ours: str, theirs: str, **meta) -> None:
    a, b = pair
    a.write(name, body, **meta)
    a.run("push")
    b.run("pull")
    a.write(name, ours, **meta)
    b.write(name, theirs, **meta)
    a.run("sync")
    b.run("sync")  # B merges, records the conflict here and on the remote
    a.run("sync")  # and A takes it in


def test_forget_match_clears_conflicts_naming_the_text(pair, remote):
    a, b = pair
    _conflict_on_both(
        pair,
        "running_commitments.md",
        "## Open\n- [c-2026-11-20-dana] Send the contract\n- [c-2026-11-20-x] Call Lee\n",
        "## Open\n- [c-2026-11-20-dana] Send the contract today\n- [c-2026-11-20-x] Call Lee\n",
        "## Open\n- [c-2026-11-20-dana] Send the contract by post\n- [c-2026-11-20-x] Call Lee\n",
        type="commitments",
    )
    record = remote / PROJECT / "_memsync" / "conflicts.json"
    assert "c-2026-11-20-dana" in record.read_text()
    assert "c-2026-11-20-dana" in a.run("status").stdout

    a.run("forget", "--match", "c-2026-11-20-dana", "--yes")
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        assert "c-2026-11-20-dana" not in device.run("status").stdout
        assert "Call Lee" in (device.memory / "running_commitments.md").read_text()
    assert_forgotten(["c-2026-11-20-dana", "Send the contract"], everywhere(pair, remote))


def test_forget_file_clears_its_conflicts_from_the_remote_record(pair, remote):
    a, b = pair
    body = "## 2026-11-20\n\n### Dana's divorce\n- asked too much\n- {}\n"
    _conflict_on_both(
        pair,
        "voice_calibration.md",
        body.format("kept it short"),
        body.format("kept it short, mostly"),
        body.format("kept it very short"),
        type="voice_calibration",
    )
    record = remote / PROJECT / "_memsync" / "conflicts.json"
    assert "divorce" in record.read_text()
    a.run("forget", "--match", "divorce", "--yes")  # a heading: the whole file goes
    b.run("sync")
    a.run("sync")
    assert "voice_calibration.md" not in record.read_text()
    for device in (a, b):
        assert "voice_calibration" not in device.run("status").stdout
    assert_forgotten(["divorce"], everywhere(pair, remote))


def test_forgetting_the_last_indexed_file_leaves_an_index_that_still_syncs(pair, remote):
    """Fresh-eyes trial: MEMORY.md left with no lines was refused as "empty" by every sync."""
    a, b = pair
    a.write("user_x.md", "Pat's side project.\n", type="user")
    (a.memory / "MEMORY.md").write_text("- [x](user_x.md) — Pat's side project\n")
    a.run("sync")
    b.run("sync")
    a.run("forget", "user_x.md", "--yes")
    assert (a.memory / "MEMORY.md").read_text().strip() == ""
    a.run("sync")  # exit 0: nothing refused
    b.run("sync")
    assert sorted(b.files()) == ["MEMORY.md"] and b.files()["MEMORY.md"].strip() == b""


def test_importing_a_backup_made_before_a_forget_leaves_the_forgotten_content_out(
    pair, remote, tmp_path
):
    """Fresh-eyes trial: `import` of a backup made before a forget said "Copied: 1", the
    devices pulled the forgotten file again, another device's sync quietly deleted it from
    the remote, and the next syncs left its text in every device's history."""
    a, b = pair
    seed_sam(a, b)
    a.write("voice_calibration.md", "## Rules\n- never joke about the layoffs\n- short\n")
    a.run("push")
    b.run("pull")
    archive = tmp_path / "backup.tar.gz"
    a.run("export", str(archive))
    a.run("forget", "relationship_sam.md", "--yes")
    a.run("forget", "--match", "layoffs", "--yes")
    b.run("sync")
    proc = a.run("import", str(archive))
    assert "left out relationship_sam.md: it was forgotten" in proc.stdout, proc.stdout
    assert "imported voice_calibration.md without the lines that were forgotten" in proc.stdout
    for device in (b, a, b, a):
        device.run("sync")
    assert "relationship_sam.md" not in on_remote(remote)
    assert "- short" in on_remote(remote)["voice_calibration.md"]
    assert_forgotten(["divorce", "layoffs"], everywhere(pair, remote))


# --- a compaction made offline, before the device heard of a forget ---------------------------

VOICE = (
    "## Rules learned\n- Keep status updates under five lines.\n\n"
    "## 2026-09-01\n\n### Landed\n- Leading with the number worked.\n\n"
    "## 2026-09-15\n\n### Missed\n- Joking about the deadline fell flat.\n"
)


def test_a_voice_rule_compacted_offline_from_a_forgotten_line_does_not_bring_it_back(
    pair, remote, tmp_path
):
    """B forgets a voice entry while A is offline; A's scheduled compaction folds that entry
    into a rule (`- 2026-09-15 (Missed): ...`), written after the forget but made of content
    from before it. A's next sync takes the rule out before it merges: the words are on no
    device, the remote or any base, and no note claims a removal that did not happen."""
    a, b = pair
    write_and_sync(a, b, "voice_calibration.md", VOICE, type="voice_calibration")
    b.run("forget", "--match", "joking about", "--yes")
    away = tmp_path / "remote-away"
    remote.rename(away)
    a.run("compact", "--now", "2026-11-26", check=3)
    assert "Joking about the deadline" in (a.memory / "voice_calibration.md").read_text()
    away.rename(remote)
    proc = a.run("sync")
    assert "taken out of voice_calibration.md" in proc.stderr, proc.stderr
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        text = (device.memory / "voice_calibration.md").read_text()
        assert "Joking about" not in text
        assert "- 2026-09-01 (Landed): Leading with the number worked." in text
    assert a.files() == b.files()
    assert_forgotten(["joking about the deadline"], everywhere(pair, remote))


def test_a_roll_up_made_offline_holds_no_forgotten_digest_or_line(pair, remote, tmp_path):
    """B forgets one October digest and a line of another while A is offline; A's compaction
    rolls all of October up, the forgotten digest and line included. A's next sync takes the
    forgotten digest's day and the forgotten line out of the roll-up before it goes out."""
    a, b = pair
    for day in range(1, 10):
        a.write(
            f"session_digest_2026-10-{day:02d}.md",
            f"## Session 09:00 s{day:02d}\n\n### Arcs\n- ARC{day:02d} worked on item {day:02d}."
            f"\n\n### Relational notes\n- REL{day:02d} Pat was fine.\n",
            type="session_digest",
        )
    for n in range(8):  # other memory: compaction deleting 9 digests is not a mass deletion
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    a.run("sync")
    b.run("sync")
    b.run("forget", "session_digest_2026-10-03.md", "--yes")
    b.run("forget", "--match", "REL05 Pat", "--yes")
    away = tmp_path / "remote-away"
    remote.rename(away)
    a.run("compact", "--now", "2026-11-26", check=3)
    rollup = a.memory / "session_digest_2026-10.md"
    assert "ARC03" in rollup.read_text() and "REL05" in rollup.read_text()
    away.rename(remote)
    a.run("sync")
    b.run("sync")
    a.run("compact", "--now", "2026-11-26")
    a.run("sync")
    b.run("sync")
    for text in (rollup.read_text(), on_remote(remote)["session_digest_2026-10.md"]):
        assert "ARC03" not in text and "## 2026-10-03" not in text
        assert "REL05" not in text
        assert "- ARC05 worked on item 05." in text and "- REL04 Pat was fine." in text
        assert "session_digest_2026-10-03.md" not in text  # not listed among its sources
    assert a.files() == b.files()
    assert not [n for n in a.files() if n.startswith("session_digest_2026-10-")]
    assert_forgotten(["ARC03", "REL05 Pat"], everywhere(pair, remote))


def test_the_note_says_lines_were_taken_out_only_where_they_stayed_out(pair, remote):
    """A sync takes a forgotten line out of a file here and then merges in a copy on the
    remote that holds it as a rule (written there after the forget, as an older memsync's
    offline compaction did): the note does not claim the line was taken out (fresh-eyes
    re-trial of issue 16: a device said so while the text was in the file)."""
    a, b = pair
    a.write("voice_calibration.md", VOICE, type="voice_calibration")
    a.run("sync")
    b.run("sync")
    b.run("forget", "--match", "joking about", "--yes")
    on_remote_path = remote / PROJECT / "voice_calibration.md"
    text = on_remote_path.read_text()
    on_remote_path.write_text(
        text.replace(
            "- Keep status updates under five lines.\n",
            "- Keep status updates under five lines.\n"
            "- 2026-09-15 (Missed): Joking about the deadline fell flat.\n",
        )
    )
    proc = a.run("sync")
    assert "Joking about" in (a.memory / "voice_calibration.md").read_text()
    assert "taken out of voice_calibration.md, but another copy brought them back" in (
        proc.stderr
    ), proc.stderr
    assert "taken out of voice_calibration.md\n" not in proc.stderr


# --- fresh-eyes re-trial of issue 16 (report 27): a forget another device had not heard of --


@pytest.mark.parametrize("route", ["sync", "post-tool-use"])
def test_an_item_reworded_on_the_other_device_after_the_forget_is_set_aside(pair, remote, route):
    """Finding 17: B (not synced since) rewords the item A forgot *after* the forget. B had
    not heard of the forget, just as when it reworded before it: the reword is set aside in
    quarantine with the notice, never republished (by a sync or by the PostToolUse push)."""
    a, b = pair
    a.write(
        "carry_forward.md",
        "## Pending\n- Check whether the staging migration finished.\n- Book the venue\n\n"
        "## Consumed\n",
        type="carry_forward",
    )
    a.run("push")
    b.run("pull")
    a.run("forget", "--match", "staging migration", "--yes")
    time.sleep(0.05)
    replace_in(b, "carry_forward.md", "migration finished.", "migration finished also R2.")
    if route == "post-tool-use":
        b.post_tool_use(b.memory / "carry_forward.md")
    said = ""
    for device in (b, a, b):
        proc = device.run("sync")
        said += proc.stdout + proc.stderr if device is b else ""
    held = list(quarantine_dir(b.home).rglob("*carry_forward.md"))
    assert len(held) == 1 and "also R2" in held[0].read_text(), said
    assert "rewording" in said + b.run("status").stdout
    for device in (a, b):
        text = (device.memory / "carry_forward.md").read_text()
        assert "- Book the venue" in text and "staging migration" not in text, device.name
    assert_forgotten(["staging migration"], everywhere(pair, remote), [quarantine_dir(b.home)])


@pytest.mark.parametrize("change", ["remote-url", "meta-moved-aside"])
def test_a_forget_that_waited_for_the_remote_is_finished_whatever_the_state_folder(
    pair, remote, tmp_path, change
):
    """Finding 14: a forget made while the remote could not be reached (exit 3, "the next
    `memsync sync` finishes it") is finished by the next sync even when that sync names the
    remote by another URL (the user fixed a wrong mount path: state is kept per remote URL)
    or runs after meta.json was moved aside as memsync's own message advises."""
    a, b = pair
    a.write(
        "carry_forward.md",
        "## Pending\n- Ask Pat about ZTOKEN the layoffs.\n- Book the venue\n\n## Consumed\n",
        type="carry_forward",
    )
    a.run("sync")
    b.run("sync")
    if change == "remote-url":
        wrong = Device(a.name, a.root, (tmp_path / "nowhere").as_uri())
        proc = wrong.run("forget", "--match", "ZTOKEN", "--yes", check=3)
    else:
        away = tmp_path / "remote-away"
        remote.rename(away)
        proc = a.run("forget", "--match", "ZTOKEN", "--yes", check=3)
        away.rename(remote)
        (meta,) = (a.home / "state").glob("*/meta.json")
        meta.rename(meta.with_name("meta.json.bad"))
        meta.with_name("meta.json.bad").unlink()  # the user deletes what was moved aside
    assert "the next `memsync sync` finishes it" in proc.stderr, proc.stderr
    assert "is not finished on the remote" in a.run("status").stdout
    proc = a.run("sync")
    assert "finished forgetting" in proc.stderr, proc.stderr
    assert "is not finished" not in a.run("status").stdout
    if change == "remote-url":  # finished under the right URL: not pending under the old one
        assert "is not finished" not in wrong.run("status", check=None).stdout
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        text = (device.memory / "carry_forward.md").read_text()
        assert "- Book the venue" in text and "ZTOKEN" not in text, device.name
    assert (remote / PROJECT / "_memsync" / "forgotten.json").exists()
    assert_forgotten(["ZTOKEN"], [p for p in everywhere(pair, remote) if p != a.home])
    assert_forgotten(["ZTOKEN"], [a.memory, *(a.home / "state").glob("*")])


def _told(proc: subprocess.CompletedProcess[str]) -> str:
    """What the PostToolUse hook told Claude (its additionalContext), or ""."""
    if not proc.stdout.strip():
        return ""
    doc = json.loads(proc.stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    return doc["hookSpecificOutput"]["additionalContext"]


def _log(device: Device) -> str:
    path = device.home / "logs" / "memsync.log"
    return path.read_text() if path.exists() else ""


def test_claude_is_told_when_the_file_it_edited_was_forgotten_on_another_device(pair, remote):
    """Finding 8 (t19b): Claude edits a file another device forgot; the PostToolUse hook said
    nothing and logged nothing. Now Claude is told the file was not synced and why, and where
    the edit went; the log says so too."""
    a, b = pair
    seed_sam(a, b)
    a.run("forget", "relationship_sam.md", "--yes")
    path = b.memory / "relationship_sam.md"
    path.write_text(path.read_text() + "- Sam starts a new job in May.\n")
    told = _told(b.post_tool_use(path))
    assert "relationship_sam.md was NOT synced" in told, told
    assert "forgotten on another device" in told and "quarantine" in told, told
    assert "post-tool-use: relationship_sam.md not pushed" in _log(b)
    held = list(quarantine_dir(b.home).rglob("*relationship_sam.md"))
    assert len(held) == 1 and str(held[0]) in told
    assert "relationship_sam.md" not in on_remote(remote)


def test_the_stop_hook_logs_an_edit_it_set_aside(pair, remote):
    """Finding 8: the Stop hook moved an edit of a forgotten file to quarantine without a
    log line."""
    a, b = pair
    seed_sam(a, b)
    a.run("forget", "relationship_sam.md", "--yes")
    path = b.memory / "relationship_sam.md"
    path.write_text(path.read_text() + "- Sam starts a new job in May.\n")
    stop = {"session_id": "s-1", "cwd": str(b.root), "hook_event_name": "Stop"}
    b.run("hook", "stop", input=json.dumps(stop))
    assert len(list(quarantine_dir(b.home).rglob("*relationship_sam.md"))) == 1
    assert "Stop: relationship_sam.md not pushed" in _log(b), _log(b)


def test_claude_is_told_when_its_write_was_replaced_by_a_later_edit_from_another_device(
    pair, remote
):
    """Finding 19's variant (t55): Claude writes a fact file, another device writes it later
    and syncs first; the PostToolUse push rightly keeps the later version, but Claude was not
    told its write was reverted. Now it is, and where its version is kept."""
    a, b = pair
    a.write("user_pat.md", "Pat takes coffee black.\n", type="user")
    a.run("sync")
    b.run("sync")
    path = b.write("user_pat.md", "Pat takes coffee with oat milk (B).\n", type="user")
    os.utime(path, (time.time() - 5, time.time() - 5))
    a.write("user_pat.md", "Pat switched to tea (A, later).\n", type="user")
    a.run("sync")
    told = _told(b.post_tool_use(path))
    assert "tea (A, later)" in path.read_text()
    assert "user_pat.md" in told and "replaced" in told and "history" in told, told
    assert "replaced" in _log(b)


def test_claude_is_told_when_its_new_task_went_with_an_item_consumed_elsewhere(pair, remote):
    """Fresh-eyes re-trial of issue 16, finding 9: A consumes an item; on B, Claude writes the
    next task in its place, much like it ("budget" -> "catering"), which the merge takes for a
    rewording of the consumed item and sets aside. Claude is told, and where its version is."""
    a, b = pair
    budget = "- Ask Pat about the budget for the offsite.\n"
    body = "## Pending\n{}- Check the staging migration.\n\n## Consumed\n{}"
    a.write("carry_forward.md", body.format(budget, ""), type="carry_forward")
    a.run("sync")
    b.run("sync")
    replace_in(a, "carry_forward.md", body.format(budget, ""), body.format("", budget))
    a.run("sync")
    path = b.memory / "carry_forward.md"
    catering = budget.replace("budget", "catering")
    path.write_text(path.read_text().replace(budget, catering))
    told = _told(b.post_tool_use(path))
    assert "carry_forward.md" in told and "replaced" in told and "history" in told, told
    assert "consumed or delivered" in told
    assert "replaced" in _log(b)
    kept = [p for p in b.home.rglob("*") if p.is_file() and "history" in p.parts]
    assert any(b"catering" in p.read_bytes() for p in kept), kept


def test_forget_match_removes_only_the_matched_lines(pair, remote, tmp_path):
    """Finding 5 (t12): forget --match took the blank line that separated the sections with
    the last item of Pending, so importing a backup made just before it said the remote had
    different content (exit 1, "run again with --force") though nothing changed since."""
    a, b = pair
    body = (
        "## Pending\n- Ask Pat about the budget for the offsite.\n"
        "- Remind Pat about the dentist on Friday.\n\n"
        "## Consumed\n- Told Pat the release slipped.\n"
    )
    a.write("carry_forward.md", body, type="carry_forward")
    a.run("sync")
    archive = tmp_path / "bk.tar.gz"
    a.run("export", str(archive))
    a.run("forget", "--match", "dentist", "--yes")
    want = body.replace("- Remind Pat about the dentist on Friday.\n", "")
    assert (a.memory / "carry_forward.md").read_text().endswith(want)
    proc = a.run("import", str(archive))
    assert "skipped" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    b.run("sync")
    assert (b.memory / "carry_forward.md").read_text().endswith(want)
    assert_forgotten(["dentist"], everywhere(pair, remote))


# --- fresh-eyes trial, finding 16: a forgotten file renamed on a device that had not heard --

PAT = "- [User Pat](user_pat.md) — Pat is the user, works at Zephyr"
PATRICIA = "- [User Pat](user_patricia.md) — Pat is the user, works at Zephyr"


@pytest.mark.parametrize("how", ["mv", "write"])
@pytest.mark.parametrize("route", ["sync", "post-tool-use"])
def test_a_forgotten_file_renamed_on_another_device_is_set_aside_not_synced_back(
    tmp_path, remote, route, how
):
    """Finding 16: B (unsynced) renames user_pat.md to user_patricia.md and fixes its index
    line, as Claude does; A forgets user_pat.md. B's next sync pushed the renamed copy, byte
    for byte the forgotten content, to every device, and quarantined its index line: the
    forgotten file came back everywhere and in no MEMORY.md. Content identical to a forgotten
    copy is that file: B sets it aside with the notice an unsynced edit of it gets, nothing
    uploads it, and no index line is left pointing at it."""
    a, b, c = (make_device(tmp_path, n, remote.as_uri()) for n in ("a", "b", "c"))
    (a.memory / "MEMORY.md").write_text(index(PAT, ROLE))
    a.write("user_pat.md", "Pat takes coffee black. Pat works at Zephyr.\n", type="user")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    if how == "mv":
        (b.memory / "user_pat.md").rename(b.memory / "user_patricia.md")
    else:  # written anew, its frontmatter naming it after its new name
        b.write("user_patricia.md", "Pat takes coffee black. Pat works at Zephyr.\n", type="user")
        (b.memory / "user_pat.md").unlink()
    (b.memory / "MEMORY.md").write_text(index(PATRICIA, ROLE))
    a.run("forget", "user_pat.md", "--yes")
    told = ""
    if route == "post-tool-use":  # Claude renamed it: the hook pushes the new name first
        told = _told(b.post_tool_use(b.memory / "user_patricia.md"))
        assert "user_patricia.md was NOT synced" in told, told
        assert "user_patricia.md" not in on_remote(remote)
    said = ""
    for device in (b, c, a, b):
        proc = device.run("sync")
        said += f"[{device.name}] {proc.stdout}{proc.stderr}"
    held = list(quarantine_dir(b.home).rglob("*user_patricia.md"))
    assert len(held) == 1, said
    assert "coffee black" in held[0].read_text()
    assert "user_patricia.md is user_pat.md under a new name" in said, said
    assert "pulled: user_patricia.md" not in said, said
    for device in (a, b, c):
        assert sorted(device.files()) == ["MEMORY.md", "user_role.md"], device.name
        assert (device.memory / "MEMORY.md").read_text() == index(ROLE), device.name
    assert sorted(on_remote(remote)) == ["MEMORY.md", "user_role.md"]
    assert_forgotten(
        ["coffee black", "Zephyr"],
        [a.home, a.memory, b.home, b.memory, c.home, c.memory, remote],
        [quarantine_dir(b.home)],
    )


HEALTH = "- [User Pat](user_pat_health.md) — Pat is the user, works at Zephyr"


@pytest.mark.parametrize("how", ["rename-and-edit", "merge"])
@pytest.mark.parametrize("route", ["sync", "post-tool-use"])
def test_a_forgotten_file_renamed_and_edited_or_merged_elsewhere_is_set_aside(
    tmp_path, remote, route, how
):
    """Fresh-eyes s28, finding 1: A forgets user_pat.md; B, not synced since, renames it and
    adds a sentence (what Claude does when it "renames and updates" a memory), or merges its
    sentence into another file and deletes it. Only an exact copy was caught: B's next sync
    (or the PostToolUse push of its write) put the forgotten sentence and its index line back
    on the remote and on A, with no note. B held that sentence, so it is the forgotten text
    wherever B moved it: a new file holding it is set aside whole with its index line, a
    synced file it went into loses it (the file as it was set aside), B is told, and the
    sentence ends on no device and not on the remote."""
    a, b, c = (make_device(tmp_path, n, remote.as_uri()) for n in ("a", "b", "c"))
    (a.memory / "MEMORY.md").write_text(index(PAT, ROLE))
    a.write("user_pat.md", "## Health\nPat sees Dr. Molar for a root canal.\n", type="user")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    a.run("forget", "user_pat.md", "--yes")
    if how == "rename-and-edit":
        (b.memory / "user_pat.md").rename(b.memory / "user_pat_health.md")
        with (b.memory / "user_pat_health.md").open("a") as fh:
            fh.write("Also prefers morning slots.\n")
        (b.memory / "MEMORY.md").write_text(index(HEALTH, ROLE))
        written = "user_pat_health.md"
    else:  # the sentence consolidated into another file, the forgotten one removed
        with (b.memory / "user_role.md").open("a") as fh:
            fh.write("Pat sees Dr. Molar for a root canal.\n")
        (b.memory / "user_pat.md").unlink()
        (b.memory / "MEMORY.md").write_text(index(ROLE))
        written = "user_role.md"
    said = ""
    if route == "post-tool-use":
        told = _told(b.post_tool_use(b.memory / written))
        if how == "rename-and-edit":  # a new file's push reads the tombstone list first
            assert f"{written} was NOT synced" in told, told
            assert "holds text of user_pat.md" in told, told
            assert_forgotten(["Molar"], [remote])
        # an edit of a synced file is pushed with one conditional PUT, before B has heard of
        # the forget: A and C may pull it before the Stop hook's sync at the end of the turn
        # takes the sentence out again, and their history must not keep it
        a.run("sync")
        c.run("sync")
        stop = {"session_id": "s-1", "cwd": str(b.root), "hook_event_name": "Stop"}
        b.run("hook", "stop", input=json.dumps(stop))
        assert f"{written} not pushed" in _log(b), _log(b)
    for device in (b, c, a, b):
        proc = device.run("sync")
        said += f"[{device.name}] {proc.stdout}{proc.stderr}"
    held = list(quarantine_dir(b.home).rglob(f"*{written}"))
    assert len(held) == 1, said
    assert "Molar" in held[0].read_text()
    if how == "rename-and-edit":
        assert "user_pat_health.md holds text of user_pat.md" in said, said
        assert "morning slots" in held[0].read_text()  # B's sentence kept, for B to copy
        for device in (a, b, c):
            assert sorted(device.files()) == ["MEMORY.md", "user_role.md"], device.name
            assert (device.memory / "MEMORY.md").read_text() == index(ROLE), device.name
    else:
        assert "lines of user_role.md came from user_pat.md" in said, said
        for device in (a, b, c):
            assert "Staff engineer." in (device.memory / "user_role.md").read_text()
    assert sorted(on_remote(remote)) == ["MEMORY.md", "user_role.md"]
    assert_forgotten(
        ["Molar", "Zephyr"],
        [a.home, a.memory, b.home, b.memory, c.home, c.memory, remote],
        [quarantine_dir(b.home)],
    )


def test_a_forget_stays_final_through_a_purge_and_a_republish(pair, remote):
    """Fresh-eyes re-trial s28b, F8: A forgets relationship_sam.md, then purges and publishes
    again; B, which had not synced since the forget, is told to publish again and did so with
    the forgotten file. The purge now keeps the forget records (hashes and names, no content),
    so B takes the forget in before it publishes."""
    a, b = pair
    seed_sam(a, b)
    a.run("forget", "relationship_sam.md", "--yes")
    a.run("purge", "--all", "--yes")
    a.run("push", "--republish")
    b.run("sync", check=1)  # told of the purge
    said = b.run("push", "--republish")
    # B never edited it: forgotten there too, not set aside as an edit (s28c, F2)
    assert "edit this device made" not in said.stdout + said.stderr
    a.run("sync")
    assert_forgotten(["divorce"], [a.home, a.memory, b.home, b.memory, remote])
    assert "relationship_sam.md" not in on_remote(remote)
    assert "divorce" not in "".join(on_remote(remote).values())
    assert not (a.memory / "relationship_sam.md").exists()
    assert not (b.memory / "relationship_sam.md").exists()


def test_a_forgotten_file_restored_from_a_backup_on_a_new_device_is_set_aside(
    pair, remote, tmp_path
):
    """Fresh-eyes re-trial s28b, F9: a new laptop filled from a backup made before a forget
    (`cp -r`, so every mtime is new) uploaded the forgotten file as new content. Its text is
    a forgotten version's, so it is forgotten there too whatever its time: no edit to keep
    (s28c, F2: it was set aside as "the edit this device made")."""
    a, b = pair
    seed_sam(a, b)
    backup = (a.memory / "relationship_sam.md").read_bytes()
    a.run("forget", "relationship_sam.md", "--yes")
    c = make_device(tmp_path, "new-laptop", remote.as_uri())
    (c.memory / "relationship_sam.md").write_bytes(backup)
    said = c.run("sync")
    assert "relationship_sam.md" not in on_remote(remote)
    assert not (c.memory / "relationship_sam.md").exists()
    assert "edit this device made" not in said.stdout + said.stderr
    assert_forgotten(["divorce"], [c.home, c.memory, remote], [])


def test_forget_on_a_stale_device_forgets_the_remote_copy_it_deletes(tmp_path, remote):
    """Fresh-eyes s28c F8: A, B, C synced a file; B edited it and synced, C pulled B's copy;
    A, not synced since, forgets it. The copy A's forget deleted from the remote is forgotten
    too: B (its edit was uploaded before the forget) and C (never edited it) delete theirs and
    its history, nothing is quarantined, and no one is told of an edit it did not make."""
    a, b, c = (make_device(tmp_path, n, remote.as_uri()) for n in ("lap", "desk", "tablet"))
    a.write("user_dentist.md", "Root canal at Dr Zorblax.\n", type="user")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    path = b.memory / "user_dentist.md"
    path.write_text(path.read_text() + "Follow-up with Zorblax in March.\n")
    assert "pushed: user_dentist.md" in b.run("sync").stdout
    assert "pulled: user_dentist.md" in c.run("sync").stdout

    assert "Forgotten here and on the remote" in a.run("forget", "user_dentist.md", "-y").stdout
    for device in (c, b, a, c, b):
        said = device.run("sync")
        assert "moved to" not in said.stdout + said.stderr, device.name
    for device in (a, b, c):
        assert "user_dentist.md" not in device.files(), device.name
        assert "user_dentist.md" not in device.run("status").stdout, device.name
        assert not list(quarantine_dir(device.home).rglob("*user_dentist.md")), device.name
    assert sorted(on_remote(remote)) == ["user_role.md"]
    roots = [d.home for d in (a, b, c)] + [d.memory for d in (a, b, c)] + [remote]
    assert_forgotten(["Zorblax"], roots, [])


def test_an_edit_made_after_the_remote_copy_a_stale_device_forgot_is_still_set_aside(
    tmp_path, remote
):
    """The other side of F8: an edit B made after the copy A's forget deleted, never uploaded,
    is set aside on B, not erased; C, which only pulled the forgotten copy, deletes its own."""
    a, b, c = (make_device(tmp_path, n, remote.as_uri()) for n in ("lap", "desk", "tablet"))
    a.write("user_dentist.md", "Root canal at Dr Zorblax.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    path = b.memory / "user_dentist.md"
    path.write_text(path.read_text() + "Follow-up with Zorblax in March.\n")
    b.run("sync")
    c.run("sync")
    path.write_text(path.read_text() + "B EDIT not uploaded\n")

    a.run("forget", "user_dentist.md", "-y")
    said = c.run("sync")
    assert "moved to" not in said.stdout + said.stderr
    assert not list(quarantine_dir(c.home).rglob("*user_dentist.md"))
    said = b.run("sync")
    held = list(quarantine_dir(b.home).rglob("*user_dentist.md"))
    assert len(held) == 1 and "B EDIT not uploaded" in held[0].read_text()
    assert str(held[0]) in said.stdout + said.stderr
    for device in (a, b, c):
        assert "user_dentist.md" not in device.files(), device.name
    assert "user_dentist.md" not in on_remote(remote)


def test_forget_after_an_index_line_conflict_leaves_no_record_or_history_of_the_line(
    tmp_path, remote
):
    """Fresh-eyes s28c F9: A and B both reworded a file's MEMORY.md line (a conflict, both
    kept), then A forgets the file. The remote conflict record naming "the index line for"
    it goes, and no device keeps the line (with its description) in a history copy."""
    a, b, c = (make_device(tmp_path, n, remote.as_uri()) for n in ("lap", "desk", "tablet"))
    line = "- [Dentist](user_dentist.md) — Zorblax molar"
    (a.memory / "MEMORY.md").write_text(index(line, ROLE))
    a.write("user_dentist.md", "Root canal at Dr Zorblax.\n", type="user")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    (a.memory / "MEMORY.md").write_text(index(line + ", Tuesdays", ROLE))
    reworded = "- [Dentist](user_dentist.md) — Zorblax clinic"
    (b.memory / "MEMORY.md").write_text(index(reworded, ROLE))
    for device in (a, b, c, a, b, c):
        device.run("sync")
    record = remote / PROJECT / "_memsync" / "conflicts.json"
    assert "the index line for user_dentist.md" in record.read_text()

    assert "removed 2 MEMORY.md line(s)" in a.run("forget", "user_dentist.md", "-y").stdout
    for device in (c, b, a, c, b, a):
        device.run("sync")
    assert "user_dentist.md" not in record.read_text()
    for device in (a, b, c):
        assert "user_dentist.md" not in device.files(), device.name
        assert "user_dentist" not in device.run("status").stdout, device.name
    roots = [d.home for d in (a, b, c)] + [d.memory for d in (a, b, c)] + [remote]
    assert_forgotten(["Zorblax"], roots, [quarantine_dir(d.home) for d in (a, b, c)])


def test_a_line_forgotten_in_a_digest_compacted_meanwhile_does_not_bring_the_digest_back(
    pair, remote, tmp_path
):
    """Fresh-eyes s29a, finding 3: A forgets a line of an October digest; B, having heard of it,
    rolls October up and deletes the digests; C, which never edited the digest, takes the
    forgotten line out of its copy and took that for its own edit: "the edit wins", the digest
    and its index line came back everywhere beside the roll-up. A line taken out for a forget
    made elsewhere is nobody's edit: C deletes the digest as B did."""
    a, b = pair
    c = make_device(tmp_path, "tablet", remote.as_uri())
    for day in range(1, 10):
        a.write(
            f"session_digest_2026-10-{day:02d}.md",
            f"## Session 09:00 s{day:02d}\n\n### Relational notes\n- REL{day:02d} Pat was fine.\n",
            type="session_digest",
        )
    for n in range(8):  # other memory: compaction deleting 9 digests is not a mass deletion
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    a.run("forget", "--match", "REL05 Pat", "--yes")
    b.run("sync")
    b.run("compact", "--now", "2026-11-26")
    said = c.run("sync")
    assert "pushed: session_digest_2026-10-05.md" not in said.stdout, said.stdout
    assert "the edit wins" not in said.stderr, said.stderr
    for device in (a, b, c):
        device.run("sync")
    assert not [n for n in on_remote(remote) if n.startswith("session_digest_2026-10-")]
    assert a.files() == b.files() == c.files()
    assert_forgotten(["REL05 Pat"], [*everywhere(pair, remote), c.home, c.memory])


def test_a_compaction_elsewhere_is_no_mass_deletion_for_sync_or_forget(pair, remote):
    """Fresh-eyes s29a, finding 4: A's compaction rolled 9 October digests up and deleted them;
    on B, which holds little else, every plain `sync` and `forget --match` then refused ("this
    pull would delete 9 of 11 memory files ... run it again with --force", and forget has no
    --force). Digests a roll-up covers are a compaction's work, not a loss: nothing refuses."""
    a, b = pair
    for day in range(1, 10):
        a.write(
            f"session_digest_2026-10-{day:02d}.md",
            f"## Session 09:00 s{day:02d}\n\n### Relational notes\n- REL{day:02d} Pat was fine.\n",
            type="session_digest",
        )
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    a.run("compact", "--now", "2026-11-26")
    assert "session_digest_2026-10.md" in on_remote(remote)
    b.run("forget", "--match", "REL05 Pat", "--yes")
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()
    assert sorted(a.files()) == ["session_digest_2026-10.md", "user_role.md"]
    assert_forgotten(["REL05 Pat"], everywhere(pair, remote))


def test_forget_refused_by_the_deletion_guard_names_the_command_that_takes_force(pair, remote):
    """Fresh-eyes s29a, finding 4: forget --match pulls first; refused by the mass-deletion
    guard it said "run it again with --force", an option forget does not have."""
    a, b = pair
    for n in range(8):
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    a.run("sync")
    b.run("sync")
    for n in range(7):
        (a.memory / f"user_fact_{n}.md").unlink()
    a.run("sync", "--force")
    said = one_line(b.run("forget", "--match", "Fact 7", "--yes", check=1).stderr)
    assert "memsync pull --force" in said and "then the forget again" in said, said
    b.run("pull", "--force")
    b.run("forget", "--match", "Fact 7", "--yes")
    a.run("sync")
    assert_forgotten(["Fact 7"], everywhere(pair, remote))


def test_forget_on_a_purged_device_says_it_worked_and_stays_final_through_a_republish(pair, remote):
    """Fresh-eyes s29b, finding 3: after a purge, `forget FILE` said the project was purged
    (exit 1, "run push --republish") yet had forgotten the file and recorded it on the remote,
    and following that advice first would have uploaded the file. It now says what it did
    (exit 0): forgotten here, only the forget record went to the remote. B, publishing again,
    forgets the file too."""
    a, b = pair
    seed_sam(a, b)
    a.run("purge", "--all", "--yes")
    said = a.run("forget", "relationship_sam.md", "--yes")
    assert "the project is purged" in said.stdout and "forget record" in said.stdout, said
    assert not (a.memory / "relationship_sam.md").exists()
    said = a.run("forget", "--match", "staff engineer", "--yes")
    assert "the project is purged" in said.stdout, said
    b.run("sync", check=1)  # told of the purge
    b.run("push", "--republish")
    assert "relationship_sam.md" not in on_remote(remote)
    assert not (b.memory / "relationship_sam.md").exists()
    assert_forgotten(["divorce", "Staff engineer"], everywhere(pair, remote))


def test_the_device_that_published_first_is_the_one_named(pair, remote, tmp_path):
    """Fresh-eyes s29d, finding 2: A purges and publishes again, then B: B said "The purge
    mark is lifted" and overwrote who lifted it, so C, which never saw the purge, was told B
    published again. The mark keeps the first; B says A lifted it."""
    a, b = pair
    c = make_device(tmp_path, "tablet", remote.as_uri())
    seed_sam(a, b)
    c.run("sync")
    a.run("purge", "--all", "--yes")
    assert "The purge mark is lifted" in a.run("push", "--republish").stdout
    b.run("sync", check=1)
    said = b.run("push", "--republish").stdout
    assert "lifted by laptop, which published first" in said, said
    told = c.run("sync", check=1).stderr
    assert "published again by laptop" in told, told


def test_forget_takes_index_lines_that_link_with_a_part_or_a_title(pair, remote):
    """Fresh-eyes s29e, finding 2: `[Sam](relationship_sam.md#notes)` and
    `[Sam](relationship_sam.md "Sam")` link the file as surely as `(relationship_sam.md)`,
    yet stayed in every index after the forget, descriptions and all."""
    a, b = pair
    (a.memory / "MEMORY.md").write_text(
        index(
            ROLE,
            "- [Sam](relationship_sam.md#notes) — Sam, going through a divorce",
            '- [Sam again](relationship_sam.md "Sam") — the divorce papers',
            "- [Sam's notes](<relationship_sam.md>) — divorce lawyer",
        )
    )
    a.write("relationship_sam.md", "## Notes\n- Sam mentioned a divorce.\n", type="relationship")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    b.run("pull")
    said = a.run("forget", "relationship_sam.md", "--yes")
    assert "removed 3 MEMORY.md line(s)" in said.stdout, said.stdout
    b.run("sync")
    assert_forgotten(["divorce"], everywhere(pair, remote))
    assert ROLE in (b.memory / "MEMORY.md").read_text()


def test_with_sync_off_forget_and_purge_leave_the_remote_alone(pair, remote):
    """Fresh-eyes s29e, finding 7: MEMSYNC_SYNC=off "turns every network action into a
    no-op", yet forget and purge deleted on the remote. They now act here only and say so;
    the forget reaches the remote and the other device with the first sync once it is on."""
    a, b = pair
    seed_sam(a, b)
    before = on_remote(remote)
    a.env_extra["MEMSYNC_SYNC"] = "off"
    said = a.run("forget", "relationship_sam.md", "--yes")
    assert "sync is off" in said.stdout, said
    a.run("forget", "--match", "Staff engineer", "--yes")
    assert a.run("purge", "--all", "--yes", check=3).stderr.count("nothing was deleted") == 1
    assert on_remote(remote) == before
    del a.env_extra["MEMSYNC_SYNC"]
    a.run("sync")
    b.run("sync")
    assert_forgotten(["divorce", "Staff engineer"], everywhere(pair, remote))


@pytest.mark.parametrize("where", ["other device", "forgetting device", "renamed"])
def test_a_backup_of_a_forgotten_file_restored_later_is_forgotten_again(pair, remote, where):
    """Fresh-eyes s29e, finding 1: after A's forget reached B, a copy of the forgotten file
    restored from an old backup (`cp`: its times new) went up as new content and came back
    everywhere; each tombstone is applied once, before the copy was there. Its text is a
    forgotten version's: under the forgotten name it is forgotten again, under another name
    it is set aside in quarantine, and nothing of it reaches the remote."""
    a, b = pair
    seed_sam(a, b)
    backup = (b.memory / "relationship_sam.md").read_bytes()
    a.run("forget", "relationship_sam.md", "--yes")
    b.run("sync")
    device = a if where == "forgetting device" else b
    name = "relationship_sam_old.md" if where == "renamed" else "relationship_sam.md"
    (device.memory / name).write_bytes(backup)
    said = device.run("sync")
    assert "pushed" not in said.stdout, said.stdout
    # said as what it is (s30f: "another device ran forget" on the device that ran it; "forgotten
    # here" for a renamed copy that was set aside, which its quarantine notice tells)
    if where == "renamed":
        assert "forgotten" not in said.stdout and "quarantine" in said.stderr, said
    else:
        assert (
            f"forgotten again (its text is that of a file `memsync forget` took out): {name}"
            in (said.stdout)
        )
    assert name not in on_remote(remote)
    a.run("sync")
    b.run("sync")
    assert "divorce" not in "".join(on_remote(remote).values())
    for d in (a, b):
        assert name not in d.files(), d.name
    if where != "renamed":
        assert_forgotten(["divorce"], everywhere(pair, remote))


KILLED_FORGET = FAILING_FORGET.replace(
    'raise Unreachable("injected: the network went away")', "os._exit(9)  # kill -9"
).replace("import sys\n", "import os\nimport sys\n", 1)


def test_a_forget_killed_mid_way_is_finished_by_the_next_sync_without_false_errors(pair, remote):
    """Fresh-eyes s29e, finding 3: `forget` of many files killed (-9) while deleting on the
    remote, before it erased its local copies: the next sync finished it ("finished
    forgetting ...") and then reported each file as an error (it planned them from its scan
    made before the finish erased them), exit 1. It now exits 0 with the finish only."""
    a, b = pair
    seed_sam(a, b)
    a.write("user_pat.md", "Pat, the manager.\n", type="user")
    a.run("push")
    proc = _forget_by_script(a, KILLED_FORGET, "relationship_sam.md", "user_pat.md")
    assert proc.returncode == 9, proc.stderr
    said = a.run("sync")
    assert "finished forgetting" in said.stderr and "error" not in said.stderr, said.stderr
    assert not {"relationship_sam.md", "user_pat.md"} & set(a.files())
    b.run("sync")
    assert_forgotten(["divorce", "the manager"], everywhere(pair, remote))


def test_a_forget_after_switching_remotes_leaves_nothing_in_the_old_remotes_state(
    pair, remote, tmp_path
):
    """Fresh-eyes s29e: the user moved to a new remote (state is kept per remote URL), then
    forgot a line and a file there; the old remote's state folder on this device still held
    them (its synced copies and history). A forget takes them out of every state folder of
    the project here; a sync back to the old remote sends the forget's outcome over it."""
    a, _ = pair
    seed = "## Pending\n- Ask Pat about ZTOKEN the layoffs.\n- Book the venue\n\n## Consumed\n"
    a.write("carry_forward.md", seed, type="carry_forward")
    a.write(
        "relationship_sam.md", "## Notes\n- Sam mentioned a QTOKEN divorce.\n", type="relationship"
    )
    a.run("sync")
    replace_in(a, "relationship_sam.md", "divorce", "divorce (history copy)")
    a.run("sync")  # an older copy of the file in the old remote's history too
    second = tmp_path / "remote-two"
    second.mkdir()
    moved = Device(a.name, a.root, second.as_uri())
    moved.run("sync")
    moved.run("forget", "--match", "ZTOKEN", "--yes")
    moved.run("forget", "relationship_sam.md", "--yes")
    assert len(list((a.home / "state").glob("*/records.json"))) == 2
    assert_forgotten(["ZTOKEN", "QTOKEN"], [a.home, a.memory, second])
    assert "- Book the venue" in (a.memory / "carry_forward.md").read_text()
    a.run("sync")  # back on the old remote: what is here goes over what it held
    assert_forgotten(["ZTOKEN", "QTOKEN"], [a.home, a.memory, second, remote])
    assert "- Book the venue" in on_remote(remote)["carry_forward.md"]


def test_a_forget_reaches_every_remote_this_device_syncs(pair, remote, tmp_path):
    """Fresh-eyes (the "is it done?" round): both devices sync two remotes, R1 and R2; A
    forgets a file and a line while syncing R1. A's next sync of R2 finishes the forget there
    (its tombstone and deletions), so B, which syncs R2, forgets them too, and takes them out
    of its own R1 state as well: the text is nowhere, on any device or remote."""
    a, b = pair
    a.write("user_dentist.md", "Dentist on Tuesday, QTOKEN root canal.\n", type="user")
    seed = "## Pending\n- Ask how the ZTOKEN diagnosis went.\n- Book the venue\n\n## Consumed\n"
    a.write("carry_forward.md", seed, type="carry_forward")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    second = tmp_path / "remote-two"
    second.mkdir()
    a2, b2 = (Device(d.name, d.root, second.as_uri()) for d in (a, b))
    for device in (a, b, a2, b2):
        device.run("sync")
    a.run("forget", "user_dentist.md", "--yes")
    a.run("forget", "--match", "ZTOKEN", "--yes")
    proc = a2.run("sync")
    assert "finished forgetting user_dentist.md here" in proc.stderr, proc.stderr
    assert "in sync" not in proc.stdout, proc.stdout  # fresh-eyes s30f: it said so
    assert "finished forgetting the text a `forget --match` found" in proc.stderr, proc.stderr
    assert "came from another remote" in proc.stderr and "  " not in proc.stderr, proc.stderr
    assert (second / PROJECT / "_memsync" / "forgotten.json").exists()
    b2.run("sync")
    a2.run("sync")
    assert not (b.memory / "user_dentist.md").exists()
    assert "- Book the venue" in (b.memory / "carry_forward.md").read_text()
    assert_forgotten(["QTOKEN", "ZTOKEN"], [a.home, a.memory, b.home, b.memory, remote, second])


def _a_synced_week_of_digests(a: Device, b: Device) -> None:
    """A week of digests (one line holds ZTOKEN) and other memory, synced on both devices
    (other memory: compaction deleting five digests is not a mass deletion)."""
    for day in range(2, 7):
        a.write(
            f"session_digest_2026-11-0{day}.md",
            f"## Session 09:00 s{day}\n\n### Arcs\n- ARC{day} worked on the parser.\n"
            + ("- Pat mentioned the ZTOKEN diagnosis.\n" if day == 4 else ""),
            type="session_digest",
        )
    for n in range(8):
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    a.run("sync")
    b.run("sync")


def test_a_forget_that_waited_scrubs_a_roll_up_made_meanwhile_elsewhere(pair, remote, tmp_path):
    """Fresh-eyes s30d, finding 3: with the remote away, B rolls a week of digests up (one
    line holds the token) and A forgets the token; B syncs first and pushes its roll-up,
    not having heard of the forget; A's sync finishes the forget, then pulled the roll-up
    with the line back into its own memory dir. The remote copies written while the forget
    waited lose the lines too: nothing brings them back."""
    a, b = pair
    _a_synced_week_of_digests(a, b)
    away = tmp_path / "remote-away"
    remote.rename(away)
    b.run("compact", "--now", "2026-11-26", check=3)
    a.run("forget", "--match", "ZTOKEN", "--yes", check=3)
    away.rename(remote)
    b.run("sync")
    assert "ZTOKEN" in on_remote(remote)["session_digest_2026-W45.md"]
    proc = a.run("sync")
    assert "finished forgetting" in proc.stderr, proc.stderr
    assert all("ZTOKEN" not in text for text in on_remote(remote).values())
    assert all(b"ZTOKEN" not in data for data in a.files().values())
    for device in (b, a, b):
        device.run("sync")
    assert "- ARC4 worked on the parser." in on_remote(remote)["session_digest_2026-W45.md"]
    assert_forgotten(["ZTOKEN"], everywhere(pair, remote))


def test_a_forget_from_one_remote_is_carried_to_the_other_by_a_device_that_syncs_both(
    tmp_path, remote
):
    """Fresh-eyes s30e, finding 1: A syncs R1, B syncs R1 and R2, C syncs R2 and has an
    unsynced edit of the file A forgets. B took the forget in from R1, but R2 only saw a
    plain deletion: C's edit beat it, came back to B from R2, went up to R1 and back to A.
    B now finishes the forget on R2 too (its tombstone), so C sets its edit aside and the
    text stays forgotten everywhere."""
    second = tmp_path / "remote-two"
    second.mkdir()
    a = make_device(tmp_path, "laptop", remote.as_uri())
    b1 = make_device(tmp_path, "desktop", remote.as_uri())
    b2 = Device(b1.name, b1.root, second.as_uri())
    c = make_device(tmp_path, "tablet", second.as_uri())
    a.write("user_f1.md", "Fact 1 QTOKEN.\n", type="user")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    for device in (a, b1, b2, c):
        device.run("sync")
    path = c.memory / "user_f1.md"
    path.write_text(path.read_text() + "C's edit.\n")
    a.run("forget", "user_f1.md", "--yes")
    b1.run("sync")
    proc = b2.run("sync")
    assert "finished forgetting user_f1.md" in proc.stderr, proc.stderr
    assert (second / PROJECT / "_memsync" / "forgotten.json").exists()
    said = c.run("sync").stderr
    assert "quarantine" in said, said
    for device in (b2, b1, a, c):
        device.run("sync")
    homes = [a.home, a.memory, b1.home, b1.memory, c.home, c.memory, remote, second]
    assert_forgotten(["QTOKEN"], homes, [quarantine_dir(c.home)])
    assert all(not (d.memory / "user_f1.md").exists() for d in (a, b1, c))


def test_a_forget_that_leaves_only_the_index_is_finished_on_the_second_remote(
    pair, remote, tmp_path
):
    """Fresh-eyes s30e, finding 2: A syncs R1 and R2 and forgets every file but MEMORY.md
    while syncing R1; its sync of R2 took the dir for a lost one ("run `memsync pull` to bring
    them back") and could never finish the forget there. Files a forget is taking out are no
    loss: the sync finishes it."""
    a, _ = pair
    (a.memory / "MEMORY.md").write_text(
        "# Memory\n- [Secret](user_secret.md) — s\n- [Ok](user_ok.md) — o\n"
    )
    a.write("user_secret.md", "QTOKEN secret.\n", type="user")
    a.write("user_ok.md", "The dentist on Tuesday ZTOKEN.\n", type="user")
    second = tmp_path / "remote-two"
    second.mkdir()
    a2 = Device(a.name, a.root, second.as_uri())
    a.run("sync")
    a2.run("sync")
    a.run("forget", "user_secret.md", "--yes")
    a.run("forget", "--match", "ZTOKEN", "--yes")
    assert sorted(a.files()) == ["MEMORY.md"]
    proc = a2.run("sync")
    assert "finished forgetting" in proc.stderr, proc.stderr
    assert "memsync pull" not in proc.stderr, proc.stderr
    assert sorted(on_remote(second)) == ["MEMORY.md"]
    assert_forgotten(["QTOKEN", "ZTOKEN"], [a.home, a.memory, remote, second])


@pytest.mark.parametrize(
    "header,others",
    [("# Memory\n", [SAM]), ("# Memory\n", []), ("", [])],
    ids=["beside-another-line", "only-line", "only-line-no-title"],
)
@pytest.mark.parametrize("by", ["forgetting device", "other device"])
def test_an_index_line_written_again_word_for_word_after_the_forget_stays(
    pair, remote, header, others, by
):
    """Fresh-eyes s30f: A forgets a file, then writes a new file of that name with the very
    index line it had. B applies the forget later: it took the old line out of its index, and
    as the remote's index was byte for byte B's synced copy (a folder remote's ETag is the
    content's hash) B's index looked edited and went up without the line, everywhere. Content
    written after a forget is not what it took out. (The forgotten text itself, written again
    word for word, is the forgotten version: the README's rule.) Fresh-eyes s31a: where the
    forget left the index empty, it was not pushed (an empty file read as none), so the line
    written again matched the stale record, read as unchanged, and the remote's empty index
    came down over it; and B's re-creation was overwritten by A's stale empty index."""
    body = "Pat likes green tea."
    a, b = pair
    (a.memory / "MEMORY.md").write_text(header + "".join(f"{x}\n" for x in [*others, ROLE]))
    a.write("user_role.md", "Staff engineer.\n", type="user")
    if others:
        a.write(
            "relationship_sam.md", "## Notes\n- Sam mentioned a divorce.\n", type="relationship"
        )
    a.run("sync")
    b.run("sync")
    a.run("forget", "user_role.md", "--yes")
    time.sleep(0.01)
    writer, other = (a, b) if by == "forgetting device" else (b, a)
    if writer is b:
        b.run("sync")
    writer.write("user_role.md", f"{body}\n", type="user")
    (writer.memory / "MEMORY.md").write_text(header + "".join(f"{x}\n" for x in [*others, ROLE]))
    for device in (writer, other, writer, other):
        device.run("sync")
    for device in (a, b):
        assert ROLE in (device.memory / "MEMORY.md").read_text(), device.name
        assert body in (device.memory / "user_role.md").read_text(), device.name
    assert ROLE in on_remote(remote)["MEMORY.md"] and body in on_remote(remote)["user_role.md"]


def test_a_line_written_again_word_for_word_after_a_forget_match_stays(pair, remote):
    """The `--match` form of the above: the forgotten line, written again by the forgetting
    device into a copy that is then byte for byte the one B synced before the forget, is new
    content; B applying the forget later keeps it, as the remote and A do."""
    a, b = pair
    text = "## Pending\n- Call Dana about the offsite.\n- Book the venue\n\n## Consumed\n"
    a.write("carry_forward.md", text, type="carry_forward")
    a.run("sync")
    b.run("sync")
    before = (a.memory / "carry_forward.md").read_bytes()
    a.run("forget", "--match", "Call Dana", "--yes")
    time.sleep(0.01)
    (a.memory / "carry_forward.md").write_bytes(before)
    for device in (a, b, a, b):
        device.run("sync")
    for device in (a, b):
        assert "Call Dana" in (device.memory / "carry_forward.md").read_text(), device.name
    assert "Call Dana" in on_remote(remote)["carry_forward.md"]


def test_forget_match_takes_the_earlier_wording_out_of_other_devices_history(pair, remote):
    """Fresh-eyes s30f: A reworded a line and synced (B's pull kept B's copy from before the
    rewording in its history), then forgot the new wording. The tombstone carries the hash of
    the line A forgot, not of its old words: B's history copy kept them, `memsync history`
    listed it and a `restore` published it again. The older wording of a forgotten line is the
    same entry: it leaves B's history too, and nothing of it comes back."""
    a, b = pair
    name = "session_digest_2026-11-25.md"
    a.write(
        name,
        "## Notes\n- Pat has a dentist appointment friday.\n- Ship the report.\n",
        type="session_digest",
    )
    a.run("sync")
    b.run("sync")
    path = a.memory / name
    path.write_text(path.read_text().replace("friday.", "friday at nine."))
    a.run("sync")
    b.run("sync")
    held = [p.read_text() for p in (b.home / "state").glob("*/history/*/*.md")]
    assert any("appointment friday.\n" in text for text in held), held
    a.run("forget", "--match", "dentist", "--yes")
    for device in (b, a, b):
        device.run("sync")
    for device in (a, b):
        assert "Ship the report." in (device.memory / name).read_text(), device.name
    assert_forgotten(["dentist"], everywhere(pair, remote))


@pytest.mark.parametrize("same_second", [False, True], ids=["later", "same-bytes"])
def test_a_template_written_again_after_its_file_was_forgotten_is_a_new_file(
    pair, remote, same_second
):
    """Fresh-eyes s30f: a file forgotten while it held only the template `memsync new` wrote,
    then `memsync new` again on the same device: its next sync deleted the new file as "the
    forgotten version" ("another device ran forget"). A template's lines are in every new
    file: they are no forgotten text. Within the same second the new template is byte for byte
    the forgotten one (its `modified` in whole seconds), and a folder remote's ETag is a hash
    of the bytes: the other device took it for the forgotten copy and deleted it everywhere
    (the full suite met it, now and then)."""
    a, b = pair
    a.run("new", "user", "pat")
    first = (a.memory / "user_pat.md").read_bytes()
    a.run("sync")
    b.run("sync")
    a.run("forget", "user_pat.md", "--yes")
    a.run("new", "user", "pat")
    if same_second:
        (a.memory / "user_pat.md").write_bytes(first)
    said = a.run("sync")
    assert "forgotten" not in said.stdout and "user_pat.md" in said.stdout, said.stdout
    b.run("sync")
    for device in (a, b):
        assert "user_pat.md" in device.files(), device.name


@pytest.mark.parametrize("heard", [False, True], ids=["first-sync-after", "told-before"])
def test_a_forget_on_a_purged_remote_reaches_a_device_and_its_other_remote(
    pair, remote, tmp_path, heard
):
    """Fresh-eyes s31a, finding 3: B purged R1 and then forgot a file (only the forget record
    went up, "other devices apply it when they sync"). A, which syncs R1 and R2, was refused by
    the purge and applied nothing; the text stayed on A and spread through R2. A purged
    project syncs nothing, but a forget is a deletion: A applies it, says so with the purge's
    refusal, and carries it to R2, whose devices forget too."""
    a, b = pair
    second = tmp_path / "remote-two"
    second.mkdir()
    a2 = Device(a.name, a.root, second.as_uri())
    c2 = make_device(tmp_path, "tablet", second.as_uri())
    seed_sam(a, b)
    a2.run("sync")
    c2.run("sync")
    b.run("purge", "--all", "--yes")
    if heard:
        a.run("sync", check=1)  # told of the purge before the forget
    b.run("forget", "relationship_sam.md", "--yes")
    said = a.run("sync", check=1)
    assert "purged" in said.stderr and "relationship_sam.md" in said.stderr, said.stderr
    assert not (a.memory / "relationship_sam.md").exists()
    a2.run("sync")
    c2.run("sync")
    assert "relationship_sam.md" not in on_remote(second)
    assert not (c2.memory / "relationship_sam.md").exists()
    assert_forgotten(["divorce"], [a.home, a.memory, second, c2.home, c2.memory])


def test_a_forget_that_waited_keeps_the_index_line_of_the_file_made_anew_meanwhile(
    pair, remote, tmp_path
):
    """Fresh-eyes s31b, finding 1: A forgot a file while the remote was away (exit 3), then
    wrote the file anew with a new index line. The sync that finished the forget took every
    line linking to the file out of A's index, the new one too: the new file stood everywhere
    with no index line. The forget takes out only the lines it forgot."""
    a, b = pair
    seed_sam(a, b)
    away = tmp_path / "remote-away"
    remote.rename(away)
    a.run("forget", "relationship_sam.md", "--yes", check=3)
    a.write("relationship_sam.md", "## Notes\n- Sam from the climbing gym.\n", type="relationship")
    again = "- [Sam](relationship_sam.md) — Sam from the climbing gym"
    a.append("MEMORY.md", again + "\n")
    away.rename(remote)
    for device in (a, b, a):
        device.run("sync")
    for device in (a, b):
        assert again in (device.memory / "MEMORY.md").read_text(), device.name
        assert "climbing gym" in (device.memory / "relationship_sam.md").read_text()
    assert again in on_remote(remote)["MEMORY.md"]
    assert_forgotten(["divorce"], [a.memory, b.memory, remote])


def _third_forgets_sam_while_away(pair, remote: Path, tmp_path: Path) -> Device:
    """A third device, synced with the pair's memory, that forgets relationship_sam.md while
    the remote is away (exit 3: the forget waits for its next sync); the remote is back."""
    c = make_device(tmp_path, "tablet", remote.as_uri())
    seed_sam(*pair)
    c.run("sync")
    forget_while_away(c, remote, tmp_path, "relationship_sam.md")
    return c


def test_an_index_line_reworded_while_a_forget_waited_is_set_aside(pair, remote, tmp_path):
    """Fresh-eyes s31b, finding 2: C's forget of a file waited out an outage; meanwhile A
    reworded the file's index line and uploaded it. The finished forget took the line off the
    remote and then out of A's index: the rewording was nowhere and A was not told. An edit
    of the file itself is set aside in A's quarantine, with a notice: so is the index."""
    a, b = pair
    c = _third_forgets_sam_while_away(pair, remote, tmp_path)
    replace_in(a, "MEMORY.md", "going through a divorce", "divorce IDXA")
    a.run("sync")
    c.run("sync")
    said = a.run("sync")
    b.run("sync")
    held = list(quarantine_dir(a.home).rglob("*MEMORY.md"))
    assert len(held) == 1 and "IDXA" in held[0].read_text(), said
    assert "quarantine" in said.stderr, said.stderr
    index_text = (a.memory / "MEMORY.md").read_text()
    assert "user_role.md" in index_text and "IDXA" not in index_text
    assert_forgotten(["IDXA", "divorce"], [a.memory, b.memory, c.memory, remote])


@pytest.mark.parametrize("route", ["sync", "post-tool-use"])
def test_an_index_line_reworded_after_the_forget_before_hearing_of_it_is_set_aside(
    pair, remote, route
):
    """Fresh-eyes s31c, finding 1: A forgot a file; B, not synced since, reworded the file's
    `MEMORY.md` line (after the forget, so its index was newer than the forget). B's line went
    everywhere, linking to no file, with nothing set aside. As for `--match`, when the edit was
    made does not matter: B had not heard of the forget. The line goes and B's index as it was
    is set aside in quarantine, with the notice."""
    a, b = pair
    seed_sam(a, b)
    a.run("forget", "relationship_sam.md", "--yes")
    time.sleep(0.05)
    index = b.memory / "MEMORY.md"
    # reworded whole: too unlike the forgotten line for the merge's similarity test
    text = index.read_text().replace("Sam, going through a divorce", "plays the OBOE in Leeds")
    index.write_text(text)
    said = ""
    if route == "post-tool-use":
        said += _told(b.post_tool_use(index)) + _log(b)
    for device in (a, b, a):
        proc = device.run("sync")
        said += proc.stdout + proc.stderr if device is b else ""
    held = list(quarantine_dir(b.home).rglob("*MEMORY.md"))
    assert len(held) == 1 and "OBOE" in held[0].read_text(), said
    assert "quarantine" in said, said
    for device in (a, b):
        text = (device.memory / "MEMORY.md").read_text()
        assert "relationship_sam.md" not in text and "user_role.md" in text, device.name
    assert_forgotten(["OBOE", "divorce"], everywhere(pair, remote), [quarantine_dir(b.home)])


def test_a_forget_that_waited_is_finished_on_a_remote_purged_meanwhile(pair, remote, tmp_path):
    """Fresh-eyes s31c, finding 2: C forgot a file while the remote was away (exit 3); A then
    purged. C's syncs were refused by the purge, its status kept saying the next sync finishes
    the forget, and A's `push --republish` published the file again, to B too. The refused
    sync finishes the forget on the purged remote (its record, no content) and says so."""
    a, b = pair
    c = _third_forgets_sam_while_away(pair, remote, tmp_path)
    a.run("purge", "--all", "--yes")
    said = c.run("sync", check=1)
    assert "purged" in said.stderr and "finished forgetting" in said.stderr, said.stderr
    assert "is not finished" not in c.run("status").stdout
    # C's synced copy of the index from before its forget, its merge base, loses the line
    # too: a purged device replaces no base until it publishes again, if it ever does
    assert_forgotten(["divorce"], [c.home, c.memory])
    a.run("push", "--republish")
    b.run("sync", check=1)
    b.run("push", "--republish")
    assert "relationship_sam.md" not in on_remote(remote)
    for device in (a, b):
        assert not (device.memory / "relationship_sam.md").exists(), device.name
    assert_forgotten(["divorce"], [*everywhere(pair, remote), c.memory])
    c.run("push", "--republish")
    assert (c.memory / "MEMORY.md").read_text() == (a.memory / "MEMORY.md").read_text()
    assert_forgotten(["divorce"], [*everywhere(pair, remote), c.home, c.memory])


def test_forgetting_a_digest_this_device_rolled_up_offline_takes_it_out_of_the_roll_up(
    pair, remote, tmp_path
):
    """Fresh-eyes s31c, finding q17: A's compaction, offline, rolls October up; A then forgets
    one October digest (its file is gone here, its record and the remote copy are not). The
    roll-up kept that digest's day and synced it everywhere. Forgetting it takes it out of the
    roll-up here too, before the roll-up goes out."""
    a, b = pair
    for day in range(1, 10):
        a.write(
            f"session_digest_2026-10-{day:02d}.md",
            f"## Session 09:00 s{day:02d}\n\n### Arcs\n- ARC{day:02d} worked on item {day:02d}.\n",
            type="session_digest",
        )
    for n in range(8):
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    a.run("sync")
    b.run("sync")
    away = tmp_path / "remote-away"
    remote.rename(away)
    a.run("compact", "--now", "2026-11-26", check=3)
    rollup = a.memory / "session_digest_2026-10.md"
    assert "ARC03" in rollup.read_text()
    a.run("forget", "session_digest_2026-10-03.md", "--yes", check=None)
    assert "ARC03" not in rollup.read_text()
    away.rename(remote)
    for device in (a, b, a, b):
        device.run("sync")
    for text in (rollup.read_text(), on_remote(remote)["session_digest_2026-10.md"]):
        assert "ARC03" not in text and "session_digest_2026-10-03.md" not in text
        assert "- ARC05 worked on item 05." in text
    assert a.files() == b.files()
    assert_forgotten(["ARC03"], everywhere(pair, remote))


def test_a_rewording_another_device_rolled_up_offline_is_forgotten_with_its_line(
    pair, remote, tmp_path
):
    """Fresh-eyes s31c, finding q9: with the remote away, B rewords a digest line and its
    compaction rolls the week up; A forgets the line by `--match`. B's sync set the old
    wording's digest aside, but the roll-up with the rewording went up everywhere. The
    rewording is the forgotten entry in the roll-up too: it goes, B's roll-up as it was is
    set aside in quarantine, with the notice."""
    a, b = pair
    _a_synced_week_of_digests(a, b)
    away = tmp_path / "remote-away"
    remote.rename(away)
    digest = b.memory / "session_digest_2026-11-04.md"
    digest.write_text(
        digest.read_text().replace(
            "mentioned the ZTOKEN diagnosis", "mentioned the ZTOKEN diagnosis, twice"
        )
    )
    b.run("compact", "--now", "2026-11-26", check=3)
    assert "ZTOKEN diagnosis, twice" in (b.memory / "session_digest_2026-W45.md").read_text()
    a.run("forget", "--match", "ZTOKEN", "--yes", check=3)
    away.rename(remote)
    a.run("sync")
    proc = b.run("sync", check=None)
    assert "quarantine" in proc.stderr + proc.stdout, proc.stderr
    for device in (a, b, a):
        device.run("sync")
    assert all("ZTOKEN" not in text for text in on_remote(remote).values())
    assert "- ARC4 worked on the parser." in on_remote(remote)["session_digest_2026-W45.md"]
    assert a.files() == b.files()
    held = [p.name for p in quarantine_dir(b.home).rglob("*.md")]
    assert any(n.endswith("session_digest_2026-W45.md") for n in held), held
    assert_forgotten(["ZTOKEN"], everywhere(pair, remote), [quarantine_dir(b.home)])


def test_a_forgotten_file_restored_from_history_before_the_forget_arrived_is_no_edit(pair, remote):
    """Fresh-eyes s31c: B restored an earlier version of a file from its history (`memsync
    restore`); A had forgotten the file meanwhile. B's sync set that version aside in
    quarantine as "your copy, with the edit this device made", though it held no edit: it is
    a version of the forgotten file that B already held. It is forgotten there, like the
    rest of the file's versions."""
    a, b = pair
    seed_sam(a, b)
    a.write(
        "relationship_sam.md",
        "## Notes\n- Sam mentioned a divorce, then moved.\n",
        type="relationship",
    )
    a.run("sync")
    b.run("sync")
    assert "1  " in b.run("history", "relationship_sam.md").stdout
    a.run("forget", "relationship_sam.md", "--yes")
    b.run("restore", "relationship_sam.md", "1")
    said = b.run("sync")
    assert "edit this device made" not in said.stdout + said.stderr
    assert not (b.memory / "relationship_sam.md").exists()
    assert "relationship_sam.md" not in on_remote(remote)
    assert not list(quarantine_dir(b.home).rglob("*relationship_sam.md"))
    assert_forgotten(["divorce"], everywhere(pair, remote))


def test_forget_match_of_a_line_reworded_here_takes_its_synced_wording_everywhere(pair, remote):
    """Fresh-eyes s32a, finding 2: A rewords a synced promise (not synced yet) and forgets it
    by `--match`. The tombstone named only A's new wording: B's pull kept the synced wording
    in its history, and `memsync restore` there published it to every device. The wording
    in A's synced copy that holds the text is forgotten too."""
    a, b = pair
    promise = "- [c-2026-11-27-pxhc] 2026-11-27: call the clinic about KIWI55."
    write_and_sync(
        a, b, "running_commitments.md", f"## Open\n{promise}\n\n## Delivered\n", type="commitments"
    )
    replace_in(a, "running_commitments.md", "KIWI55.", "KIWI55 on Monday.")
    a.run("forget", "--match", "kiwi55", "--yes")
    for device in (b, a, b):
        device.run("sync")
    assert_forgotten(["KIWI55"], everywhere(pair, remote))
    b.run("restore", "running_commitments.md", "1", check=None)  # any copy kept: no promise
    for device in (b, a):
        device.run("sync")
    assert_forgotten(["KIWI55"], everywhere(pair, remote))


def test_a_forget_that_waited_takes_a_rewording_uploaded_meanwhile(pair, remote, tmp_path):
    """Fresh-eyes s32a, finding 1: A forgets a digest line by `--match` with the remote away;
    B, not having heard of it, rewords the line and syncs first. A's sync finished the forget
    ("finished forgetting"), but its merge kept B's rewording (an edit beats a removal), on
    every device. The forget, finishing, takes a rewording of a forgotten line out of the
    remote copies written meanwhile too, and B sets its copy as it was aside in quarantine."""
    a, b = pair
    write_and_sync(
        a,
        b,
        "session_digest_2026-11-27.md",
        "## Session 09:00 s1\n\n### Arcs\n- Worked on the parser.\n"
        "- Dentist appointment ZEBRA77 on Tuesday.\n",
        type="session_digest",
    )
    forget_while_away(a, remote, tmp_path, "--match", "zebra77")
    replace_in(b, "session_digest_2026-11-27.md", "on Tuesday.", "on Tuesday, 3pm.")
    b.run("sync")
    proc = a.run("sync")
    assert "finished forgetting" in proc.stderr, proc.stderr
    assert "ZEBRA77" not in on_remote(remote)["session_digest_2026-11-27.md"]
    said = b.run("sync")
    assert "quarantine" in said.stderr, said.stderr
    for device in (a, b):
        device.run("sync")
    assert "- Worked on the parser." in on_remote(remote)["session_digest_2026-11-27.md"]
    assert a.files() == b.files()
    assert_forgotten(["ZEBRA77"], everywhere(pair, remote), [quarantine_dir(b.home)])


def test_forget_match_of_text_only_in_history_here_still_forgets_it(pair, remote):
    """Fresh-eyes s32a, finding 6: a line removed by hand and synced is in no memory file, but
    a pull kept it in this device's history; `forget --match` said "Nothing matches." and left
    it there (and on the other devices) for a `restore` to publish again. Earlier versions
    kept here count: it forgets the text in them, and tells the other devices."""
    a, b = pair
    write_and_sync(
        a,
        b,
        "carry_forward.md",
        "## Pending\n- Ask about the PLUM31 diagnosis.\n- Book the venue.\n",
        type="carry_forward",
    )
    replace_in(a, "carry_forward.md", "- Ask about the PLUM31 diagnosis.\n", "")
    a.run("sync")
    b.run("sync")  # B's pull keeps its copy with the line in its history
    gone = b.run("forget", "--match", "plum31", "--yes")
    assert "will remove it from 1 earlier version(s) kept on this device" in gone.stdout
    a.run("sync")
    assert_forgotten(["PLUM31"], everywhere(pair, remote))
    nothing = b.run("forget", "--match", "plum31", "--yes")
    assert nothing.stdout.startswith("Nothing matches on this device or the remote."), (
        nothing.stdout
    )


def test_an_item_consumed_elsewhere_after_a_forget_of_its_rewording_stays_forgotten(pair, remote):
    """Fresh-eyes s32b, N1: A rewords a carry-forward item (not synced) and forgets it by
    `--match`; B, which had added another item since A last synced and had not heard of the
    forget, moves the item as it was to Consumed. B's sync published it again, silently, to
    every device and the remote."""
    a, b = pair
    x = "- Email Alex about the laptop novel SECRET1."
    write_and_sync(
        a, b, "carry_forward.md", f"## Pending\n{x}\n\n## Consumed\n", type="carry_forward"
    )
    path = b.memory / "carry_forward.md"
    y = "- Follow up with Pat about the kernel budget."
    path.write_text(path.read_text().replace(f"{x}\n", f"{x}\n{y}\n"))
    b.run("sync")
    replace_in(a, "carry_forward.md", "SECRET1.", "SECRET1 (reworded).")
    a.run("forget", "--match", "secret1", "--yes")
    path = b.memory / "carry_forward.md"
    text = path.read_text().replace(f"{x}\n", "")
    path.write_text(text.replace("## Consumed\n", f"## Consumed\n{x}\n"))
    for device in (b, a, b, a):
        device.run("sync")
    assert y in on_remote(remote)["carry_forward.md"]
    assert_forgotten(["SECRET1"], everywhere(pair, remote))


def test_forget_match_typed_decomposed_finds_text_stored_composed(pair, remote):
    """Fresh-eyes s32b, N3: `--match` typed in decomposed Unicode (NFD, as macOS input can
    give) found nothing in text stored composed (NFC), and said "Nothing matches"."""
    import unicodedata

    a, b = pair
    a.write(
        "carry_forward.md",
        "## Pending\n- Ask Zoë about the café.\n- Book the venue.\n\n## Consumed\n",
        type="carry_forward",
    )
    a.run("sync")
    b.run("sync")
    typed = unicodedata.normalize("NFD", "zoë about")
    assert typed != "zoë about"
    proc = a.run("forget", "--match", typed, "--yes")
    assert "will remove 1 entry from carry_forward.md" in proc.stdout, proc.stdout
    b.run("sync")
    assert_forgotten(["Zoë about"], everywhere(pair, remote))
    assert "- Book the venue." in on_remote(remote)["carry_forward.md"]


def test_forget_match_of_a_heading_takes_its_section_not_the_whole_file(pair, remote):
    """Fresh-eyes s32b, N2: `--match` of text in a thread's title (a section heading) forgot
    the whole file, every other thread included, on every device and from all history. The
    section whose heading holds the text goes, with what it holds; the rest stays."""
    a, b = pair
    write_and_sync(
        a,
        b,
        "philosophical_threads.md",
        "## Free will and the DURIAN9 experiment\n- We argued about determinism.\n\n"
        "## Whether maps are territories\n- Pat thinks KEEPME1 is a map.\n",
        type="philosophical_threads",
    )
    proc = a.run("forget", "--match", "durian9", "--yes")
    assert "will forget file" not in proc.stdout, proc.stdout
    assert "will remove 1 entry from philosophical_threads.md (1 section(s)" in proc.stdout, (
        proc.stdout
    )
    b.run("sync")
    for device in (a, b):
        text = (device.memory / "philosophical_threads.md").read_text()
        assert "- Pat thinks KEEPME1 is a map." in text and "determinism" not in text
    assert_forgotten(["DURIAN9", "determinism"], everywhere(pair, remote))


def threads_on_three(a: Device, b: Device, remote: Path, tmp_path: Path) -> Device:
    """A third device, and the threads file (with `user_role.md`) written on `a` and synced on
    all three; returns the third."""
    c = make_device(tmp_path, "tablet", remote.as_uri())
    a.write("philosophical_threads.md", _threads(), type="philosophical_threads")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    for device in (a, b, c):
        device.run("sync")
    return c


def _threads(*extra: str) -> str:
    return (
        "## Whether maps are territories\n- Pat thinks KEEPME1 is a map.\n\n"
        "## Free will and the DURIAN9 experiment\n- First raised over lunch, HIDE7.\n"
        + "".join(extra)
    )


def test_a_forget_that_waited_takes_a_heading_renamed_and_added_to_meanwhile(
    pair, remote, tmp_path
):
    """Fresh-eyes s32c, R1: A forgets a thread by its title with the remote away; meanwhile B
    renames the title and syncs, and C adds an entry under the old title and syncs. C's
    merge kept the old title as a second section holding its entry, so the forget,
    finishing, saw no rewording of the title, and "finished forgetting" left the renamed
    title on every device. A renamed section merges with the other side's as one section
    now, and the forget takes the renamed title too; C's new entry stays, without it."""
    a, b = pair
    c = threads_on_three(a, b, remote, tmp_path)
    forget_while_away(a, remote, tmp_path, "--match", "durian9")
    replace_in(b, "philosophical_threads.md", "experiment", "experiment, revisited")
    b.run("sync")
    replace_in(c, "philosophical_threads.md", "HIDE7.\n", "HIDE7.\n- Left off at NEW8.\n")
    c.run("sync")
    assert on_remote(remote)["philosophical_threads.md"].count("DURIAN9") == 1
    assert "finished forgetting" in a.run("sync").stderr
    said = b.run("sync").stderr  # B's rename was synced: no "unsynced rewording" (s32c, W2)
    assert "an edit of them that the forgetting device had not pulled when the user" in said, said
    for device in (c, a, b, c):
        device.run("sync")
    for device in (a, b, c):
        text = (device.memory / "philosophical_threads.md").read_text()
        assert "- Pat thinks KEEPME1 is a map." in text and "- Left off at NEW8." in text
    assert a.files() == b.files() == c.files()
    quarantines = [quarantine_dir(d.home) for d in (b, c)]
    assert_forgotten(
        ["DURIAN9", "HIDE7"], [*everywhere(pair, remote), c.home, c.memory], quarantines
    )


def test_a_forget_that_waited_takes_a_session_heading_compaction_moved_down_a_level(
    pair, remote, tmp_path
):
    """Fresh-eyes s32c, R2: A forgets a digest session by its heading with the remote away;
    B, not having heard of it, rolls the digest up: the session's `## Session …` is a
    `### Session …` in the roll-up, a line of another hash, which stayed on every device
    and the remote after "finished forgetting". A heading is the same words at any level."""
    a, b = pair
    a.write(
        "session_digest_2026-11-04.md",
        "## Session 05:10 LYCHEE3 planning\n\n### Arcs\n- Arc HIDDEN5 in the session.\n\n"
        "## Session 09:00 s2\n\n### Arcs\n- ARC2 worked on the parser.\n",
        type="session_digest",
    )
    for n in range(8):
        a.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")
    a.run("sync")
    b.run("sync")
    forget_while_away(a, remote, tmp_path, "--match", "lychee3")
    b.run("compact", "--now", "2026-11-26")
    assert "### Session 05:10 LYCHEE3 planning" in on_remote(remote)["session_digest_2026-W45.md"]
    assert "finished forgetting" in a.run("sync").stderr
    for device in (b, a, b):
        device.run("sync")
    rollup = on_remote(remote)["session_digest_2026-W45.md"]
    assert "- ARC2 worked on the parser." in rollup
    assert "#### Arcs\n\n###" not in rollup  # the forgotten session's own subheading went
    assert a.files() == b.files()
    assert_forgotten(["LYCHEE3", "HIDDEN5"], everywhere(pair, remote))


def test_forgetting_a_session_by_its_heading_leaves_other_sessions_subheadings(pair, remote):
    """Fresh-eyes s32c, W1 and M1: forgetting a session by its heading put its `### Arcs` and
    `### Open threads` lines in the tombstone, so other devices took them out of every
    digest whose synced copy had them: another day's digest lost its subheadings on every
    device, and an arc added meanwhile on B landed above its `### Arcs`; B was told another
    copy "brought them back". A line that stays in a memory file, or a template's line, is
    not what was forgotten."""
    a, b = pair
    other = "## Session 08:00 s0\n\n### Arcs\n- ARC0 a quiet day.\n\n### Open threads\n- None.\n"
    a.write("session_digest_2026-11-20.md", other, type="session_digest")
    a.write(
        "session_digest_2026-11-27.md",
        "## Session 05:10 LYCHEE3 planning\n\n### Arcs\n- Arc HIDDEN5.\n\n"
        "### Open threads\n- Thread HIDDEN6.\n\n"
        "## Session 09:00 s2\n\n### Arcs\n- ARC2 worked on the parser.\n",
        type="session_digest",
    )
    a.run("sync")
    b.run("sync")
    replace_in(b, "session_digest_2026-11-27.md", "parser.\n", "parser.\n- ARC3 by B.\n")
    plan = a.run("forget", "--match", "lychee3", "--yes").stdout
    assert "1 section(s) whose heading holds the text" in plan, plan
    said = b.run("sync").stderr
    assert "brought them back" not in said, said
    a.run("sync")
    for device in (a, b):
        assert other in (device.memory / "session_digest_2026-11-20.md").read_text()
        text = (device.memory / "session_digest_2026-11-27.md").read_text()
        assert "### Arcs\n- ARC2 worked on the parser.\n- ARC3 by B.\n" in text, text
    assert other in on_remote(remote)["session_digest_2026-11-20.md"]
    assert_forgotten(["LYCHEE3", "HIDDEN5", "HIDDEN6"], everywhere(pair, remote))


def test_a_heading_forget_takes_its_entries_earlier_wording_from_other_devices_history(
    pair, remote, tmp_path
):
    """Fresh-eyes s33a, N1: C rewords an entry of a thread and syncs; B forgets the thread by
    its title. A, which synced before C's rewording, keeps the entry's earlier wording in a
    history copy when it pulls; the tombstone carried only the lines holding the text and
    the section as B had it, so that copy kept the entry. The section's lines in every
    earlier version the forgetting device holds (history, synced copies) go too."""
    a, b = pair
    c = threads_on_three(a, b, remote, tmp_path)
    replace_in(c, "philosophical_threads.md", "HIDE7.", "HIDE7, reworded.")
    c.run("sync")
    b.run("forget", "--match", "durian9", "--yes")
    for device in (a, c, b, a):
        device.run("sync")
    assert "- Pat thinks KEEPME1 is a map." in (a.memory / "philosophical_threads.md").read_text()
    assert_forgotten(["DURIAN9", "HIDE7"], [*everywhere(pair, remote), c.home, c.memory])


def test_forget_match_keeps_the_rest_of_a_history_copy_holding_the_text(pair, remote):
    """Found by the devices machine (seed 35): B rewords a promise A delivered meanwhile and
    adds a new one, then forgets the new one. Forget's pull keeps the delivery and sets B's
    copy aside in history, with a conflict that says the rewording is there; the forget
    then deleted every history copy holding the forgotten text, that one too, and the
    rewording was nowhere. The forgotten lines leave the copy; the rest stays."""
    a, b = pair
    promise = "- [c-2026-11-20-ab12] 2026-11-20: send Pat the benchmark numbers.\n"
    write_and_sync(
        a, b, "running_commitments.md", f"\n## Open\n{promise}\n## Delivered\n", type="commitments"
    )
    path = a.memory / "running_commitments.md"
    text = path.read_text().replace(promise, "")
    path.write_text(text.replace("## Delivered\n", "## Delivered\n" + promise))
    a.run("sync")
    path = b.memory / "running_commitments.md"
    reworded = "- [c-2026-11-20-ab12] 2026-11-20: send Pat and Riley the full WAN figures.\n"
    new = "- [c-2026-11-21-cd34] 2026-11-21: book the QUINCE9 offsite.\n"
    path.write_text(path.read_text().replace(promise, reworded + new))
    b.run("forget", "--match", "quince9", "--yes")
    kept = [p.read_text() for p in (b.home / "state").rglob("history/**/*.md")]
    assert any("full WAN figures" in text for text in kept), kept
    assert "memsync history running_commitments.md" in b.run("status").stdout
    assert_forgotten(["QUINCE9"], everywhere(pair, remote))


def test_forgetting_a_title_two_renames_joined_takes_each_devices_own_from_history(pair, remote):
    """Fresh-eyes s33b, F6: A and B retitle a thread differently (the merge joins the titles:
    `## KIWI1 title / B's title`, with a conflict), A edits the joined title, and B forgets
    the thread by A's word. A's history copy from before the merge held A's own title, which
    no line B forgot equals or reads like closely enough: it stayed. Each title holding the
    text that a joined heading joins is forgotten too."""
    a, b = pair
    write_and_sync(a, b, "philosophical_threads.md", _threads(), type="philosophical_threads")
    old = "## Free will and the DURIAN9 experiment"
    replace_in(b, "philosophical_threads.md", old, f"{old}, revisited")
    b.run("sync")
    replace_in(a, "philosophical_threads.md", old, "## Lawsuit thread KIWI1")
    assert "the title of" in a.run("sync").stderr
    replace_in(a, "philosophical_threads.md", "revisited\n", "revisited, again\n")
    a.run("sync")
    b.run("sync")
    b.run("forget", "--match", "kiwi1", "--yes")
    for device in (a, b, a):
        device.run("sync")
    assert_forgotten(["KIWI1", "HIDE7"], everywhere(pair, remote))
    # s33c, G6: the remote's record kept the conflict, which names the title before the
    # renames (DURIAN9's), though its versions were gone from the file
    record = json.loads((remote / PROJECT / "_memsync" / "conflicts.json").read_text())
    assert not record["conflicts"], record
    assert "DURIAN9" not in json.dumps(record)


def test_forget_match_with_the_remote_away_says_the_remote_was_not_searched(pair, remote, tmp_path):
    """Fresh-eyes s33c, G2: with the remote away, `forget --match` of text only the remote
    (another device's upload) holds said "Nothing matches on this device or the remote" and
    exited 0; nothing was left to finish, and the text spread with the next sync. It says the
    remote was not searched and exits 3; run again once the remote is back, it forgets it."""
    a, b = pair
    b.write("user_role.md", "Staff engineer.\n", type="user")
    b.run("sync")
    a.run("sync")
    b.write(
        "relationship_kim.md", "## Notes\n- Kim shared the KUMQUAT8 news.\n", type="relationship"
    )
    b.run("sync")
    away = tmp_path / "remote-away"
    remote.rename(away)
    said = a.run("forget", "--match", "kumquat8", "--yes", check=3).stderr
    assert "the remote is unreachable" in said and "were not searched" in said, said
    away.rename(remote)
    a.run("forget", "--match", "kumquat8", "--yes")
    for device in (b, a):
        device.run("sync")
    assert_forgotten(["KUMQUAT8"], everywhere(pair, remote))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("- Joke about the harbor PLUM4 landed.", "- Joke about the harbor PLUM4 landed, twice."),
        ("## Harbor talk PLUM4", "## Harbor talk PLUM4, revisited"),
    ],
    ids=["entry", "title"],
)
def test_a_line_reworded_and_synced_then_forgotten_leaves_no_earlier_wording(
    pair, remote, old, new
):
    """Fresh-eyes s33c, G1: A rewords a line and pushes it, then forgets it by `--match`. B had
    not pulled the rewording: the tombstone named only A's wording, so B's pull kept B's copy
    (the line in its words before) as a new history copy. The tombstone also carries the text
    by hash: B takes out every line of its old content holding it."""
    a, b = pair
    body = f"## Notes\n- Keep KEEPME1.\n\n{old.split(chr(10))[0]}\n"
    if old.startswith("##"):
        body += "- An entry under the harbor thread.\n"
    write_and_sync(a, b, "philosophical_threads.md", body, type="philosophical_threads")
    replace_in(a, "philosophical_threads.md", old, new)
    a.run("push", "philosophical_threads.md")
    a.run("forget", "--match", "plum4", "--yes")
    for device in (b, a, b):
        device.run("sync")
    for device in (a, b):
        assert "KEEPME1" in (device.memory / "philosophical_threads.md").read_text(), device.name
    assert_forgotten(["PLUM4"], everywhere(pair, remote))


def test_a_line_of_the_other_devices_own_holding_the_text_is_new_content_to_the_forget(
    pair, remote
):
    """The limit of G1's fix (fresh-eyes s34a, H1-H5): the text's hash takes out the lines
    holding it that B synced before the forget, but a line of B's own, never synced, is new
    content to it whenever B wrote it (no clock tells when a line was written in a file B
    wrote again since; it may be an index line, a frontmatter field, a roll-up's): it stays,
    nowhere set aside, and syncs. Run again once every device has synced, the forget takes
    it."""
    a, b = pair
    write_and_sync(a, b, "philosophical_threads.md", "## Notes\n- Keep KEEPME1.\n")
    replace_in(b, "philosophical_threads.md", "KEEPME1.\n", "KEEPME1.\n- B's own PLUM4 note.\n")
    a.write("voice_calibration.md", "## Rules\n- The PLUM4 joke.\n", type="voice_calibration")
    a.run("sync")
    old = time.time() - 60
    os.utime(b.memory / "philosophical_threads.md", (old, old))
    a.run("forget", "--match", "plum4", "--yes")
    for device in (b, a):
        device.run("sync")
    for text in everywhere_text(pair, remote, "philosophical_threads.md"):
        assert "- B's own PLUM4 note." in text, text
    assert "The PLUM4 joke" not in (b.memory / "voice_calibration.md").read_text()
    assert not quarantine_dir(b.home).exists() or not list(quarantine_dir(b.home).rglob("*.md"))
    a.run("forget", "--match", "plum4", "--yes")
    for device in (b, a):
        device.run("sync")
    assert_forgotten(["PLUM4"], everywhere(pair, remote))


def test_a_thread_renamed_then_forgotten_by_its_new_title_loses_its_old_title_elsewhere(
    pair, remote
):
    """Fresh-eyes s33b, F4: A renames a thread and syncs, B (not told) adds an entry under the
    old title, then A forgets the thread by a word of its new title. B's old title does not
    hold the text and no line A forgot names it: it stayed, with B's entry under it, on
    every device. Every entry B had under it is forgotten, and not each for holding the text:
    the heading over them is that section's, and goes too; B's entry stays, untitled."""
    a, b = pair
    write_and_sync(a, b, "philosophical_threads.md", _threads(), type="philosophical_threads")
    replace_in(a, "philosophical_threads.md", "## Free will and the DURIAN9 experiment", "## KIWI1")
    a.run("sync")
    replace_in(b, "philosophical_threads.md", "HIDE7.\n", "HIDE7.\n- Pat's take: NEWB5.\n")
    a.run("forget", "--match", "kiwi1", "--yes")
    for device in (b, a, b):
        device.run("sync")
    for text in everywhere_text(pair, remote, "philosophical_threads.md"):
        assert "- Pat's take: NEWB5." in text and "KEEPME1" in text, text
        assert "DURIAN9" not in text, text
    assert_forgotten(["KIWI1", "HIDE7"], everywhere(pair, remote))


def test_a_thread_retitled_before_its_forget_arrived_goes_and_a_new_thread_stays(pair, remote):
    """Fresh-eyes s33a, N6: A forgets a thread by its title; B, not told yet, had retitled that
    thread and started a new one whose title and entry read much like it. The new title was
    taken for the rewording of the forgotten one and set aside; the retitled heading stayed.
    The forgotten thread's heading here is the one over its entries, whatever its words:
    that one goes (B's copy set aside first), and the new thread stays, whole."""
    a, b = pair
    body = (
        "## Thread on the roadmap question PEAR5\n- First raised: Ask Sam about the kernel.\n\n"
        "## Maps and territories\n- On a walk KEEP4.\n"
    )
    write_and_sync(a, b, "philosophical_threads.md", body, type="philosophical_threads")
    replace_in(
        b, "philosophical_threads.md", "roadmap question PEAR5", "Renamed thread kitten LIME3"
    )
    with (b.memory / "philosophical_threads.md").open("a") as fh:
        fh.write("\n## Thread on the marathon question KIWI1\n- First raised: Email Dana.\n")
    a.run("forget", "--match", "pear5", "--yes")
    for device in (b, a, b):
        device.run("sync")
    for device in (a, b):
        text = (device.memory / "philosophical_threads.md").read_text()
        assert "## Thread on the marathon question KIWI1\n- First raised: Email Dana." in text
        assert "LIME3" not in text and "kernel" not in text, text
    held = [p.read_text() for p in quarantine_dir(b.home).rglob("*philosophical_threads.md")]
    assert len(held) == 1 and "LIME3" in held[0], held
    assert_forgotten(["PEAR5", "LIME3"], everywhere(pair, remote), [quarantine_dir(b.home)])


@pytest.mark.parametrize("away", [False, True], ids=["online", "remote-away"])
def test_a_thread_forgotten_by_a_title_another_device_renamed_goes_either_way(
    pair, remote, tmp_path, away
):
    """Fresh-eyes s34a, H7: B renames a thread in other words and syncs; A, whose copy still
    has the old title, forgets the thread by its words. Online, A's forget pulled the rename
    first and found the words only in an earlier version: the thread stayed, under its new
    title; with the remote away it went. The section whose heading held the text in an
    earlier version here, renamed since, is the section the user means, both ways."""
    a, b = pair
    write_and_sync(a, b, "philosophical_threads.md", _threads(), type="philosophical_threads")
    old = "## Free will and the DURIAN9 experiment"
    replace_in(b, "philosophical_threads.md", old, "## Determinism debate")
    b.run("sync")
    if away:
        forget_while_away(a, remote, tmp_path, "--match", "durian9")
    else:
        said = a.run("forget", "--match", "durian9", "--yes").stdout
        assert "1 section(s)" in said, said
    for device in (b, a, b):
        device.run("sync")
    for text in everywhere_text(pair, remote, "philosophical_threads.md"):
        assert "KEEPME1" in text and "Determinism debate" not in text, text
    # away: B's rename reached the remote while the forget waited, so B's copy is set aside
    assert_forgotten(["DURIAN9", "HIDE7"], everywhere(pair, remote), [quarantine_dir(b.home)])


def test_a_thread_moved_under_a_forgotten_one_and_renamed_keeps_its_new_title(pair, remote):
    """Found by the fresh-eyes driver (seed 4025, U1, unreduced until now): A forgets two
    threads; B, not told, had moved the second a level down (under the first) and renamed
    it. The forget left B's renamed heading with nothing under it, under a forgotten heading,
    and the scrub took it as that section's own empty subheading: B's new title went, kept
    nowhere. A heading this device wrote is its own edit: it stays, and syncs."""
    a, b = pair
    body = (
        "## Riley on the roadmap KIWI7\n- First raised: the tax HIDE8.\n\n"
        "## Dana on the dentist PEAR9\n- First raised: the reunion HIDE10.\n"
    )
    write_and_sync(a, b, "philosophical_threads.md", body, type="philosophical_threads")
    a.run("forget", "--match", "kiwi7", "--yes")
    a.run("forget", "--match", "pear9", "--yes")
    replace_in(
        b, "philosophical_threads.md", "## Dana on the dentist PEAR9", "### Renamed thread LIME13"
    )
    for device in (b, a, b):
        device.run("sync")
    for text in everywhere_text(pair, remote, "philosophical_threads.md"):
        assert "### Renamed thread LIME13" in text, text
    assert_forgotten(["KIWI7", "PEAR9", "HIDE8", "HIDE10"], everywhere(pair, remote))
