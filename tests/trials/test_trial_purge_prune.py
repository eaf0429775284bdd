"""Trials of purge, prune and what Claude is told, as a user runs them: the installed `memsync`
CLI on two devices (own MEMSYNC_HOME and memory dir each) and one folder remote, asserting
what the user sees on both devices and what the remote holds. Forget: test_trial_forget.py."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.devices import Device, make_device
from tests.privacy_oracle import assert_forgotten
from tests.trials.shared import PROJECT, on_remote


def everywhere(pair: tuple[Device, Device], remote: Path) -> list[Path]:
    a, b = pair
    return [a.home, a.memory, b.home, b.memory, remote]


def audit(device: Device) -> list[dict]:
    return [json.loads(line) for line in (device.home / "audit.log").read_text().splitlines()]


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def index(*lines: str) -> str:
    return "# Memory\n" + "".join(f"{line}\n" for line in lines)


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


# --- 23: history folders fit any file system -----------------------------------------------


def test_a_long_japanese_name_keeps_history(pair, remote):
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
