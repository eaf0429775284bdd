"""Issue 16's merge scenarios, as a user causes them: two devices (own MEMSYNC_HOME and memory
dir), one remote, the real CLI. Each test asserts what the user sees on both devices and what
the remote holds: nothing either device wrote is lost without a word."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from memsync.memory import frontmatter as memory
from memsync.memory import sections
from tests.devices import Device, make_device


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Device, Device, Path]:
    remote = tmp_path / "remote"
    remote.mkdir()
    url = remote.as_uri()
    return make_device(tmp_path, "laptop", url), make_device(tmp_path, "desktop", url), remote


def remote_text(remote: Path, name: str) -> str:
    return (remote / "e2e-project" / name).read_bytes().decode()


def status(device: Device) -> dict:
    return json.loads(device.run("status", "--json", check=None).stdout)["data"]


def conflict_files(device: Device) -> list[str]:
    return [c["file"] for c in status(device)["conflicts"]]


def primer(device: Device) -> str:
    return device.run("context").stdout


def edit(device: Device, name: str, change, when: float | None = None) -> None:
    path = device.memory / name
    path.write_bytes(change(path.read_bytes().decode()).encode())
    if when is not None:
        os.utime(path, (when, when))


def start_synced(a: Device, b: Device) -> None:
    a.run("sync")
    b.run("sync")


def test_same_commitment_id_minted_on_two_devices_keeps_both_promises(pair):
    """Defect 1: both devices add the first promise of a day as [c-2026-11-25-1]."""
    a, b, remote = pair
    a.write("running_commitments.md", "\n## Open\n\n## Delivered\n", type="commitments")
    start_synced(a, b)
    add = "- [c-2026-11-25-1] 2026-11-25: {}\n"
    edit(
        a,
        "running_commitments.md",
        lambda t: t.replace("## Open\n", "## Open\n" + add.format("send Ana the deck")),
    )
    edit(
        b,
        "running_commitments.md",
        lambda t: t.replace("## Open\n", "## Open\n" + add.format("book the venue")),
    )
    a.run("sync")
    b.run("sync")
    a.run("sync")
    for text in (
        a.files()["running_commitments.md"].decode(),
        b.files()["running_commitments.md"].decode(),
        remote_text(remote, "running_commitments.md"),
    ):
        assert "send Ana the deck" in text and "book the venue" in text
    assert a.files() == b.files()
    for device in (a, b):
        assert conflict_files(device) == ["running_commitments.md"]
        assert "conflict in running_commitments.md" in primer(device)
        # never "keep the right one": both are real promises (fresh-eyes s28, finding 6)
        [detail] = [c["detail"] for c in status(device)["conflicts"]]
        assert "same id" in detail and "keep the right one" not in detail, detail
    # a new promise through the template now gets an id no other device mints
    a.run("new", "commitments", check=1)  # the file exists: one sentence, nothing overwritten
    assert "send Ana the deck" in a.files()["running_commitments.md"].decode()


def test_memory_index_line_edited_on_both_devices_keeps_both_and_the_frontmatter(pair):
    """Defects 2 and 24: the same MEMORY.md line edited on both sides; frontmatter kept."""
    a, b, remote = pair
    (a.memory / "MEMORY.md").write_text(
        "---\nname: index\n---\n# Memory index\n\n- [Pat](user_pat.md) — who Pat is\n"
    )
    start_synced(a, b)
    edit(a, "MEMORY.md", lambda t: t.replace("who Pat is", "Pat, the PM on Atlas"))
    edit(b, "MEMORY.md", lambda t: t.replace("who Pat is", "Pat prefers email"))
    a.run("sync")
    b.run("sync")
    a.run("sync")
    for text in (a.files()["MEMORY.md"].decode(), remote_text(remote, "MEMORY.md")):
        assert text.startswith("---\nname: index\n---\n")
        assert "Pat, the PM on Atlas" in text and "Pat prefers email" in text
    assert a.files() == b.files()
    for device in (a, b):
        assert conflict_files(device) == ["MEMORY.md"]
    assert "user_pat.md" in b.run("status").stdout


@pytest.mark.parametrize("later", ["second", "first"])
def test_fact_edited_on_both_devices_the_later_edit_wins_everywhere(tmp_path, remote_url, later):
    """Defect 3: A edits, B edits 3 s later; A syncs first. The later edit is kept on both
    devices and the remote (seen by a third device's pull; on Azure through blob metadata);
    the other is in the history of the device that made it."""
    a, b = make_device(tmp_path, "laptop", remote_url), make_device(tmp_path, "desktop", remote_url)
    a.write("user_pat.md", "Pat works on storage.\n", type="user")
    start_synced(a, b)
    t0 = 1_795_500_000.0
    a_time, b_time = (t0, t0 + 3) if later == "second" else (t0 + 3, t0)
    edit(a, "user_pat.md", lambda t: t.replace("storage", "storage and search"), a_time)
    edit(b, "user_pat.md", lambda t: t.replace("storage", "the billing team"), b_time)
    a.run("sync")
    merged = b.run("sync")
    a.run("sync")
    winner, loser = (b, a) if later == "second" else (a, b)
    kept = "the billing team" if later == "second" else "storage and search"
    lost = "storage and search" if later == "second" else "the billing team"
    for device in (a, b):
        assert kept in device.files()["user_pat.md"].decode()
        assert conflict_files(device) == ["user_pat.md"]
        assert "conflict in user_pat.md" in primer(device)
    phone = make_device(tmp_path, "phone", remote_url)
    phone.run("pull")
    assert kept in phone.files()["user_pat.md"].decode()
    assert conflict_files(phone) == []  # it edited nothing: nothing of its own was lost
    assert "edited later" in merged.stderr + merged.stdout
    history = loser.run("history", "user_pat.md").stdout
    assert history.strip(), history
    kept_aside = [p for p in loser.home.rglob("*") if "history" in p.parts and p.is_file()]
    assert any(lost.encode() in p.read_bytes() for p in kept_aside)
    assert lost not in winner.files()["user_pat.md"].decode()


def test_carry_forward_consumed_on_one_device_and_reworded_on_the_other_is_consumed(pair):
    """Defect 4: the next primer must not raise the item again."""
    a, b, remote = pair
    a.write(
        "carry_forward.md",
        "\n## Pending\n- Thank Ana for the review\n- Raise the caching idea\n\n## Consumed\n",
        type="carry_forward",
    )
    start_synced(a, b)
    edit(
        a,
        "carry_forward.md",
        lambda t: t.replace("- Thank Ana for the review\n", "").replace(
            "## Consumed\n", "## Consumed\n- Thank Ana for the review\n"
        ),
    )
    edit(
        b,
        "carry_forward.md",
        lambda t: t.replace("Thank Ana for the review", "Thank Ana for the thorough review"),
    )
    a.run("sync")
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        tree = sections.parse(memory.parse(device.files()["carry_forward.md"].decode()).body)
        assert "Thank Ana" not in "".join(tree.find("Pending").entries)
        assert "Thank Ana" in "".join(tree.find("Consumed").entries)
        text = primer(device)
        assert "Raise the caching idea" in text and "Thank Ana" not in text
    assert a.files() == b.files()
    assert "Thank Ana" in remote_text(remote, "carry_forward.md").split("## Consumed")[1]


VOICE = """
## Rules learned
- Short lines beat long ones in banter.

## 2026-09-01

### Missed
- A three-option quiz in a casual chat.

### Landed
- A one-line answer to a teasing question.
"""


def test_compaction_on_one_device_while_the_other_adds_a_note_duplicates_no_rule(pair):
    """Defect 10: A compacts; B adds to the old dated section; both sync; compaction again."""
    a, b, remote = pair
    a.write("voice_calibration.md", VOICE, type="voice_calibration")
    start_synced(a, b)
    a.run("compact", "--now", "2026-11-24")
    edit(b, "voice_calibration.md", lambda t: t + "- Laptop: sarcasm about the deadline.\n")
    b.run("sync")
    a.run("sync")
    b.run("sync")
    a.run("compact", "--now", "2026-11-25")
    a.run("sync")
    b.run("sync")
    for text in (
        a.files()["voice_calibration.md"].decode(),
        remote_text(remote, "voice_calibration.md"),
    ):
        rules = sections.parse(memory.parse(text).body).find("Rules learned").entries
        lines = [sections.normalise(e) for e in rules if e.strip()]
        assert len(lines) == len(set(lines)) == 4, lines
        assert "## 2026-09-01" not in text
        assert "sarcasm about the deadline" in text
    assert a.files() == b.files()


def test_crlf_file_merged_keeps_crlf_everywhere(pair):
    """Defect 11: a Windows-edited file merged comes back with CRLF only."""
    a, b, remote = pair
    text = memory.render(
        {"name": "Voice", "description": "tone", "type": "voice_calibration"}, VOICE
    ).replace("\n", "\r\n")
    (a.memory / "voice_calibration.md").write_bytes(text.encode())
    start_synced(a, b)
    edit(a, "voice_calibration.md", lambda t: t + "- Laptop: a pun landed.\r\n")
    edit(b, "voice_calibration.md", lambda t: t + "- Desktop: a long answer missed.\r\n")
    a.run("sync")
    b.run("sync")
    a.run("sync")
    for data in (
        a.files()["voice_calibration.md"],
        (remote / "e2e-project" / "voice_calibration.md").read_bytes(),
    ):
        assert b"a pun landed" in data and b"a long answer missed" in data
        assert data.count(b"\n") == data.count(b"\r\n"), data
        assert b"\r\n\r\n\r\n" not in data
    assert a.files() == b.files()


def test_two_devices_create_the_same_relationship_file_independently(pair):
    """Defect 14: no template placeholder comes back; neither description is dropped."""
    a, b, remote = pair
    for device, description, fill in (
        (a, "Riley, the PM on Atlas", ("- What they are known for.", "- Ships on Fridays.")),
        (b, "Riley from design review", ("- What works with them.", "- Short written asks.")),
    ):
        device.run("new", "relationship", "riley")
        edit(
            device,
            "relationship_riley.md",
            lambda t, d=description, f=fill: t.replace("Who they are in one line", d).replace(*f),
        )
    a.run("sync")
    b.run("sync")
    a.run("sync")
    text = a.files()["relationship_riley.md"].decode()
    assert text == remote_text(remote, "relationship_riley.md")
    assert a.files() == b.files()
    description = memory.parse(text).meta["description"]
    assert "Riley, the PM on Atlas" in description and "Riley from design review" in description
    assert "Ships on Fridays" in text and "Short written asks" in text
    for placeholder in ("What they are known for.", "What works with them."):
        assert placeholder not in text
    assert text.count("## Known for") == 1
    index = a.files()["MEMORY.md"].decode()
    assert len(re.findall(r"\(relationship_riley\.md\)", index)) == 1


def test_push_file_after_a_lost_race_keeps_the_later_edit(pair):
    """Defect 21: the PostToolUse path (`memsync push FILE`) merged without edit times, so
    byte order decided. Here the later edit sorts first, so byte order would pick wrong."""
    a, b, remote = pair
    a.write("feedback_tone.md", "Keep answers short.\n", type="feedback")
    start_synced(a, b)
    t0 = 1_795_500_000.0
    edit(b, "feedback_tone.md", lambda t: t.replace("short", "short, zero jokes"), t0)
    edit(a, "feedback_tone.md", lambda t: t.replace("short", "short, a joke is fine"), t0 + 3)
    b.run("sync")
    pushed = a.run("push", str(a.memory / "feedback_tone.md"))
    assert "edited later" in pushed.stdout + pushed.stderr
    b.run("sync")
    for text in (a.files()["feedback_tone.md"].decode(), remote_text(remote, "feedback_tone.md")):
        assert "a joke is fine" in text
    assert a.files() == b.files()
    assert conflict_files(a) == conflict_files(b) == ["feedback_tone.md"]


CARRY = """
## Pending
- Ask Pat about the Q3 numbers.
- Mention the new linter config.
- Check whether the venue replied.

## Consumed
"""
Q3 = "- Ask Pat about the Q3 numbers.\n"


def _consume(line: str):
    return lambda t: t.replace(line, "").replace("## Consumed\n", "## Consumed\n" + line)


@pytest.mark.parametrize(
    ("b_edit", "pending", "consumed", "reported"),
    [
        # re-trial item 1: B rewords Q3 and consumes the linter item in the same round; B's
        # rewording of the consumed Q3 is not kept, so it is reported (fresh-eyes trial)
        (
            lambda t: _consume("- Mention the new linter config.\n")(
                t.replace("Q3 numbers.", "Q3 numbers and the forecast.")
            ),
            "- Check whether the venue replied.",
            "- Mention the new linter config.",
            ["carry_forward.md"],
        ),
        # re-trial item 2: B writes a brand-new item over Q3's line
        (
            lambda t: t.replace(Q3, "- Book flights for the offsite.\n"),
            "- Book flights for the offsite.",
            Q3.strip(),
            [],
        ),
    ],
    ids=["reword-and-consume", "replace-in-place"],
)
@pytest.mark.parametrize("how", ["sync", "push"])
def test_carry_forward_consumed_on_a_while_b_makes_several_edits(
    pair, b_edit, pending, consumed, reported, how
):
    """A consumes Q3. Whatever else B did, Q3 is consumed only, and B's new item stays."""
    a, b, remote = pair
    a.write("carry_forward.md", CARRY, type="carry_forward")
    start_synced(a, b)
    edit(a, "carry_forward.md", _consume(Q3))
    edit(b, "carry_forward.md", b_edit)
    a.run("sync")
    b.run(*(["sync"] if how == "sync" else ["push", str(b.memory / "carry_forward.md")]))
    a.run("sync")
    b.run("sync")
    for text in (a.files()["carry_forward.md"].decode(), remote_text(remote, "carry_forward.md")):
        top, bottom = text.split("## Consumed")
        assert "Q3" not in top and "Q3" in bottom, text
        assert pending in top and consumed in bottom, text
        assert "linter" not in top or "linter" not in bottom
    assert a.files() == b.files()
    assert conflict_files(a) == conflict_files(b) == reported


def test_one_promise_delivered_on_both_devices_with_different_notes_keeps_both(pair):
    """Re-trial item 3: both notes of how it was delivered stay, and both devices hear."""
    a, b, remote = pair
    promise = "- [c-2026-11-24-k3f9] 2026-11-24: send Ana the deck\n"
    a.write("running_commitments.md", f"\n## Open\n{promise}\n## Delivered\n", type="commitments")
    start_synced(a, b)
    for device, note in ((a, "sent by email"), (b, "sent via Slack")):
        delivered = promise.rstrip("\n") + f" ({note})\n"
        edit(
            device,
            "running_commitments.md",
            lambda t, d=delivered: t.replace(promise, "").replace(
                "## Delivered\n", "## Delivered\n" + d
            ),
        )
    a.run("sync")
    b.run("sync")
    a.run("sync")
    text = remote_text(remote, "running_commitments.md")
    delivered = text.split("## Delivered")[1]
    assert "sent by email" in delivered and "sent via Slack" in delivered
    assert "send Ana" not in text.split("## Delivered")[0]
    assert a.files() == b.files()
    for device in (a, b):
        assert conflict_files(device) == ["running_commitments.md"]


def test_resolve_on_one_device_clears_the_conflict_on_the_other(pair):
    """Re-trial item 11: `memsync resolve FILE` on A is published; B clears it at its next
    sync, and a conflict in another file stays reported on both."""
    a, b, remote = pair
    a.write("user_pat.md", "Pat works on storage.\n", type="user")
    a.write("feedback_tone.md", "Keep answers short.\n", type="feedback")
    start_synced(a, b)
    t0 = 1_795_500_000.0
    for name, old in (("user_pat.md", "storage"), ("feedback_tone.md", "short")):
        edit(a, name, lambda t, o=old: t.replace(o, f"{o} (laptop)"), t0)
        edit(b, name, lambda t, o=old: t.replace(o, f"{o} (desktop)"), t0 + 3)
    a.run("sync")
    b.run("sync")
    a.run("sync")
    for device in (a, b):
        assert sorted(conflict_files(device)) == ["feedback_tone.md", "user_pat.md"]
    said = a.run("resolve", "user_pat.md").stdout
    assert "Cleared 1 conflict" in said and "other devices" in said
    assert conflict_files(a) == ["feedback_tone.md"]
    b.run("sync")
    assert conflict_files(b) == ["feedback_tone.md"]
    assert "user_pat.md" not in primer(b)
    # resolving while the remote cannot be reached is published at the next sync
    aside = remote.with_name("remote-away")
    remote.rename(aside)
    said = b.run("resolve", check=None)
    aside.rename(remote)
    assert said.returncode == 0 and "next sync" in said.stdout, said
    assert conflict_files(b) == []
    a.run("sync")
    assert conflict_files(a) == ["feedback_tone.md"]  # not published yet
    b.run("sync")
    a.run("sync")
    assert conflict_files(a) == []
    record = json.loads(remote_text(remote, "_memsync/conflicts.json"))
    assert len(record["resolved"]) == 2


def test_two_devices_start_the_same_days_digest_and_carry_forward_from_the_template(pair):
    """Re-trial items 9 and 10: `memsync new` on both devices, each fills in its own notes.
    Two sessions stay two (even with the same note); two carry-forward items, no conflict."""
    a, b, remote = pair
    arc = "- What we set out to do, what happened, what was decided."
    placeholder = "- Something to raise next time, and why it matters."
    for device, item in ((a, "- Ask Pat about the Q3 numbers."), (b, "- Book the venue.")):
        device.run("new", "session_digest")
        device.run("new", "carry_forward")
        digest = next(n for n in device.files() if n.startswith("session_digest_"))
        edit(device, digest, lambda t: t.replace(arc, "- Fixed the nightly cron."))
        edit(device, "carry_forward.md", lambda t, i=item: t.replace(placeholder, i))
    a.run("sync")
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()
    text = a.files()[digest].decode()
    assert text.count("## Session ") == 2 and text.count("- Fixed the nightly cron.") == 2
    pending = a.files()["carry_forward.md"].decode().split("## Consumed")[0]
    assert "Q3 numbers" in pending and "Book the venue" in pending and "Something" not in pending
    assert conflict_files(a) == conflict_files(b) == []


def both_edit_pat(a, b) -> None:
    """Both devices, synced, edit user_pat.md (B three seconds later), then sync in turn: a
    conflict recorded on both."""
    start_synced(a, b)
    t0 = 1_795_500_000.0
    edit(a, "user_pat.md", lambda t: t.replace("storage", "storage (laptop)"), t0)
    edit(b, "user_pat.md", lambda t: t.replace("storage", "storage (desktop)"), t0 + 3)
    a.run("sync")
    b.run("sync")
    a.run("sync")


def test_a_file_deleted_everywhere_takes_its_conflicts_with_it(pair):
    """Fresh-eyes trial: conflicts about files since deleted on every device stayed in status
    and the primer for good."""
    a, b, _ = pair
    a.write("user_pat.md", "Pat works on storage.\n", type="user")
    a.write("feedback_tone.md", "Keep answers short.\n", type="feedback")
    both_edit_pat(a, b)
    assert conflict_files(a) == conflict_files(b) == ["user_pat.md"]
    (a.memory / "user_pat.md").unlink()
    a.run("sync")
    b.run("sync")
    a.run("sync")
    assert "user_pat.md" not in a.files() and "user_pat.md" not in b.files()
    assert conflict_files(a) == conflict_files(b) == []
    assert "user_pat.md" not in primer(b)


def test_devices_with_the_same_host_name_see_each_others_conflicts(tmp_path):
    """Two laptops both called `vm` (a cloned image) and no `device` setting: the conflict
    one of them records reaches the other, which must not take it for its own."""
    remote = tmp_path / "remote"
    remote.mkdir()
    a = make_device(tmp_path, "laptop", remote.as_uri(), MEMSYNC_DEVICE="")
    b = make_device(tmp_path, "desktop", remote.as_uri(), MEMSYNC_DEVICE="")
    a.write("user_pat.md", "Pat works on storage.\n", type="user")
    both_edit_pat(a, b)
    for device in (a, b):
        assert conflict_files(device) == ["user_pat.md"], device.name
    names = {(d.home / "device-id").read_text() for d in (a, b)}
    assert len(names) == 2  # one id each, made once and kept


def test_a_promise_delivered_on_one_device_and_reworded_on_the_other_is_delivered_only(pair):
    """The design table: moved to Delivered on one side, anything on the other -> Delivered
    only, however many words the other side changed (a heavy reword kept it Open as well, and
    the primer raised a delivered promise again)."""
    a, b, remote = pair
    promise = "- [c-2026-11-20-ab12] 2026-11-20: send Pat the benchmark numbers.\n"
    a.write("running_commitments.md", f"\n## Open\n{promise}\n## Delivered\n", type="commitments")
    start_synced(a, b)
    edit(
        a,
        "running_commitments.md",
        lambda t: t.replace(promise, "").replace("## Delivered\n", "## Delivered\n" + promise),
    )
    reworded = "- [c-2026-11-20-ab12] 2026-11-20: send Pat and Riley the full WAN figures.\n"
    edit(b, "running_commitments.md", lambda t: t.replace(promise, reworded))
    b.run("sync")
    a.run("sync")
    b.run("sync")
    for text in (
        a.files()["running_commitments.md"].decode(),
        remote_text(remote, "running_commitments.md"),
    ):
        open_part, delivered = text.split("## Delivered")
        assert "c-2026-11-20-ab12" not in open_part and "c-2026-11-20-ab12" in delivered, text
    assert a.files() == b.files()
    assert "ab12" not in primer(b).split("elivered")[0]


def _october_digests(device: Device, days: range) -> None:
    for day in days:
        device.write(
            f"session_digest_2026-10-{day:02d}.md",
            f"## Session 09:00 s{day:02d}\n\n### Arcs\n- ARC{day:02d} worked on item {day:02d}.\n\n"
            f"### Relational notes\n- REL{day:02d} Pat was fine.\n",
            type="session_digest",
        )
    for n in range(8):  # other memory: compaction deleting 9 digests is not a mass deletion
        device.write(f"user_fact_{n}.md", f"Fact {n}.\n", type="user")


def _compact_while_away(remote: Path, *devices: Device) -> None:
    """Each device's (scheduled) compaction runs while the remote is away: exit 3, the
    roll-ups written here, the digests kept until they are on the remote."""
    away = remote.with_name("remote-away")
    remote.rename(away)
    for device in devices:
        device.run("compact", "--now", "2026-11-26", check=3)
    away.rename(remote)


def test_a_digest_reworded_while_another_device_compacted_it_is_rolled_up_reworded(pair):
    """A rolls October's digests up while B rewords a line of one; B's edit beats the deletion
    and the digest comes back; the next compaction folds the rewording in place of the old
    line, as it does for voice rules, never both (fresh-eyes re-trial of issue 16)."""
    a, b, remote = pair
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    a.run("compact", "--now", "2026-11-26")
    edit(
        b,
        "session_digest_2026-10-05.md",
        lambda t: t.replace("- REL05 Pat was fine.", "- REL05 Pat was fine but tired BREL05."),
    )
    b.run("sync")
    a.run("sync")
    assert "session_digest_2026-10-05.md" in a.files()
    a.run("compact", "--now", "2026-11-26")
    a.run("sync")
    b.run("sync")
    assert a.files() == b.files()
    for text in (
        a.files()["session_digest_2026-10.md"].decode(),
        remote_text(remote, "session_digest_2026-10.md"),
    ):
        assert "- REL05 Pat was fine but tired BREL05." in text
        assert "- REL05 Pat was fine.\n" not in text, text
        assert text.count("- REL05") == 1
        assert "- REL04 Pat was fine." in text
    assert "session_digest_2026-10-05.md" not in a.files()
    # the replacement is a conflict on every device, not only the one that compacted
    # (fresh-eyes s33c, G4): the remote record carries it
    for device in (a, b):
        assert "session_digest_2026-10.md" in conflict_files(device), device.name


def test_two_devices_rolling_up_the_same_month_offline_hold_each_entry_once(pair):
    """Both laptops' scheduled compaction ran while the remote was away and each rolled
    October up; B had added a line to one day first. The two roll-ups merge day by day:
    every entry once, B's line once, no session of the month twice (fresh-eyes re-trial of
    issue 16: the whole month came back twice, then three times after the next compaction)."""
    a, b, remote = pair
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    edit(
        b,
        "session_digest_2026-10-05.md",
        lambda t: t.replace("- REL05 Pat was fine.\n", "- REL05 Pat was fine.\n- BNEW05 Riley.\n"),
    )
    _compact_while_away(remote, a, b)
    a.run("sync")
    b.run("sync")
    a.run("sync")
    a.run("compact", "--now", "2026-11-26")
    a.run("sync")
    b.run("sync")
    assert a.files() == b.files()
    for text in (
        a.files()["session_digest_2026-10.md"].decode(),
        remote_text(remote, "session_digest_2026-10.md"),
    ):
        for day in range(1, 10):
            assert text.count(f"- REL{day:02d} Pat was fine.") == 1, text
            assert text.count(f"- ARC{day:02d} worked") == 1, text
            assert text.count(f"## 2026-10-{day:02d}") == 1, text
        assert text.count("- BNEW05 Riley.") == 1, text
    assert not [n for n in a.files() if n.startswith("session_digest_2026-10-")]


@pytest.mark.parametrize(
    ("name", "kind", "top", "heading"),
    [
        ("voice_calibration.md", "voice_calibration", "Rules learned", "2026-11-25\n\n### Landed"),
        ("session_digest_2026-11-25.md", "session_digest", "Session 09:00 aa", "Session 15:00 cc"),
    ],
)
def test_two_blocks_with_the_same_heading_on_one_device_keep_both_entries(
    pair, name, kind, top, heading
):
    """B's second session the same day appends its own block under the same heading (a
    resumed session keeps its id) while A changes the file elsewhere: after the merge each
    block keeps its own entry on both devices and the remote (fresh-eyes re-trial of issue
    16, finding 18: the first entry was lost and the second doubled, with no conflict)."""
    a, b, remote = pair
    a.write(name, f"## {top}\n\n- Short lines beat long ones in banter.\n", type=kind)
    start_synced(a, b)
    edit(a, name, lambda t: t.replace("banter.\n", "banter.\n- Numbers before opinions.\n"))
    edit(
        b,
        name,
        lambda t: (
            t
            + f"\n## {heading}\n\n- First session: the joke about Mondays landed.\n"
            + f"\n## {heading}\n\n- Second session: numbers first worked.\n"
        ),
    )
    a.run("sync")
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()
    for text in (a.files()[name].decode(), remote_text(remote, name)):
        assert text.count("- First session: the joke about Mondays landed.") == 1, text
        assert text.count("- Second session: numbers first worked.") == 1, text
        assert text.count(f"## {heading}\n") == 2, text
        assert "- Numbers before opinions." in text


SEPT = """
## Rules learned
- Keep status updates under five lines.

## 2026-09-01

### Missed
- A long preamble before the answer annoyed Pat.

### Landed
- Leading with the number worked.
"""


@pytest.mark.parametrize(
    ("change", "offline", "kept", "gone"),
    [
        # finding 19: B adds an entry next to a similar one while A compacts
        (
            "- Leading with the number worked.\n- Leading with the chart worked for Riley.\n",
            False,
            ["Leading with the number worked.", "Leading with the chart worked for Riley."],
            [],
        ),
        # B rewords the entry while A compacts
        (
            "- Leading with the number worked in standup.\n",
            False,
            ["Leading with the number worked in standup."],
            ["Leading with the number worked.\n"],
        ),
        # finding 4: B rewords it, then both compact offline (both laptops' scheduled job)
        (
            "- Leading with the number worked in standup BVOICE.\n",
            True,
            ["Leading with the number worked in standup BVOICE."],
            ["Leading with the number worked.\n"],
        ),
    ],
)
def test_a_voice_section_compacted_while_the_other_device_changed_it(
    pair, change, offline, kept, gone
):
    """A folds 2026-09-01 into Rules learned while B adds an entry there or rewords one (and
    maybe compacts too, the remote away): after the syncs and another compaction, an added
    entry is one more rule and a rewording replaces its rule, once, on both devices and the
    remote, no conflict (fresh-eyes re-trial of issue 16, findings 19 and 4: the added entry
    replaced "Leading with the number worked.", a rewording compacted on both devices stood
    next to the old wording)."""
    a, b, remote = pair
    name = "voice_calibration.md"
    a.write(name, SEPT, type="voice_calibration")
    start_synced(a, b)
    edit(b, name, lambda t: t.replace("- Leading with the number worked.\n", change))
    away = remote.with_name("remote-away")
    if offline:
        remote.rename(away)
        b.run("compact", "--now", "2026-11-26", check=3)
    a.run("compact", "--now", "2026-11-26", check=3 if offline else 0)
    if offline:
        away.rename(remote)
        a.run("sync")
    b.run("sync")
    a.run("sync")
    a.run("compact", "--now", "2026-11-26")
    a.run("sync")
    b.run("sync")
    assert a.files() == b.files()
    assert not conflict_files(a) and not conflict_files(b)
    for text in (a.files()[name].decode(), remote_text(remote, name)):
        rules = sections.parse(memory.parse(text).body).find("Rules learned").entries
        lines = [sections.normalise(e) for e in rules if e.strip()]
        assert len(lines) == len(set(lines)) == 2 + len(kept), lines
        for entry in kept:
            assert text.count(entry) == 1, text
        for entry in gone:
            assert entry not in text, text
        assert "## 2026-09-01" not in text
        assert "- 2026-09-01 (Missed): A long preamble before the answer annoyed Pat." in text


@pytest.mark.parametrize("order", ["ABCAB", "CABCA"])
@pytest.mark.parametrize("kind", ["carry_forward", "commitments"])
def test_two_rewordings_and_a_consumption_on_three_devices_end_consumed(tmp_path, order, kind):
    """Fresh-eyes re-trial of issue 16, finding 21: A and B reword an item, C consumes (or
    delivers) it. Whatever order they sync in, it ends consumed only, on every device, and
    the next primer does not raise it; before, in one order a rewording stayed Pending (for
    commitments: one id both Open and Delivered)."""
    remote = tmp_path / "remote"
    remote.mkdir()
    devices = {n: make_device(tmp_path, n, remote.as_uri()) for n in "ABC"}
    if kind == "carry_forward":
        name, places = "carry_forward.md", ("Pending", "Consumed")
        item = "- Remind Pat about the dentist on Friday.\n"
        words = {"A": "on Friday morning.", "B": "on Friday, gently."}
        old = "on Friday."
    else:
        name, places = "running_commitments.md", ("Open", "Delivered")
        item = "- [c-2026-11-20-ab12] 2026-11-20: draft the quarterly memo for Pat.\n"
        words = {"A": "memo for Pat by Monday.", "B": "memo for Pat, the short one."}
        old = "memo for Pat."
    first, final = places
    keep = "- Check whether the staging migration finished.\n"
    devices["A"].write(name, f"\n## {first}\n{item}{keep}\n## {final}\n", type=kind)
    for n in "ABC":
        devices[n].run("sync")
    for n in "AB":
        edit(devices[n], name, lambda t, w=words[n]: t.replace(old, w))
    edit(
        devices["C"],
        name,
        lambda t: t.replace(item, "").replace(f"## {final}\n", f"## {final}\n{item}"),
    )
    for n in order:
        devices[n].run("sync")
    for n in "ABC":
        devices[n].run("sync")
    texts = {n: d.files()[name].decode() for n, d in devices.items()}
    assert len(set(texts.values())) == 1, texts
    tree = sections.parse(memory.parse(texts["A"]).body)
    assert "".join(tree.find(first).entries).strip() == keep.strip()
    assert "".join(tree.find(final).entries).strip() == item.strip()
    assert name in conflict_files(devices["C"])
    for device in devices.values():
        # A's and B's rewordings stood side by side for a while, with a conflict saying so;
        # neither is in the file now: that conflict is over on every device (fresh-eyes
        # re-trial s28, finding 5), the one saying the rewordings went to history is not
        details = [c["detail"] for c in status(device)["conflicts"]]
        assert not [d for d in details if "both versions are in the file" in d], details
        assert [d for d in details if "consumed or delivered on the other" in d], details
    raised = [x for x in primer(devices["A"]).splitlines() if x.startswith("- ")]
    assert "- Check whether the staging migration finished." in raised
    assert not [x for x in raised if "dentist" in x or "quarterly memo" in x], raised


def test_both_deliver_a_promise_and_one_says_how_the_note_stands_alone(pair):
    """Fresh-eyes re-trial, finding 6: A delivers the promise as it was, B delivers it and
    appends how (as the template asks): B's line alone, no conflict."""
    a, b, remote = pair
    promise = "- [c-2026-11-20-ab12] 2026-11-20: draft the quarterly memo for Pat.\n"
    noted = promise.rstrip("\n") + " Sent on 11-26.\n"
    a.write("running_commitments.md", f"\n## Open\n{promise}\n## Delivered\n", type="commitments")
    start_synced(a, b)
    for device, line in ((a, promise), (b, noted)):
        edit(
            device,
            "running_commitments.md",
            lambda t, d=line: t.replace(promise, "").replace(
                "## Delivered\n", "## Delivered\n" + d
            ),
        )
    a.run("sync")
    b.run("sync")
    a.run("sync")
    delivered = remote_text(remote, "running_commitments.md").split("## Delivered")[1]
    assert delivered.strip() == noted.strip()
    assert a.files() == b.files()
    for device in (a, b):
        assert conflict_files(device) == []


def test_both_rewrite_one_item_in_other_words_both_stay_and_both_devices_hear(pair):
    """Fresh-eyes re-trial, finding 10: two rewrites too unlike the item to be rewordings
    of it both stay, and the conflict is recorded on both devices (before: none)."""
    a, b, remote = pair
    a.write(
        "carry_forward.md",
        "\n## Pending\n- Remind Pat about the dentist on Friday.\n- Check the migration.\n"
        "\n## Consumed\n",
        type="carry_forward",
    )
    start_synced(a, b)
    old = "Remind Pat about the dentist on Friday."
    for device, new in ((a, "Remind Pat: moved to Monday 9am."), (b, "Dentist is Thursday.")):
        edit(device, "carry_forward.md", lambda t, n=new: t.replace(old, n))
    a.run("sync")
    b.run("sync")
    a.run("sync")
    text = remote_text(remote, "carry_forward.md")
    assert "Monday 9am" in text and "Dentist is Thursday" in text and "on Friday" not in text
    assert a.files() == b.files()
    for device in (a, b):
        assert conflict_files(device) == ["carry_forward.md"]


def _hours_ago(hours: float) -> float:
    return time.time() - hours * 3600


def _two_with_an_old_fact(tmp_path) -> tuple[Device, Device]:
    """Two devices on one folder remote (`tmp_path/remote`), both synced with `user_n1.md`,
    which A wrote 3 h ago."""
    remote = tmp_path / "remote"
    remote.mkdir()
    a, b = (
        make_device(tmp_path, "laptop", remote.as_uri()),
        make_device(tmp_path, "desktop", remote.as_uri()),
    )
    a.write("user_n1.md", "b1\n", type="user")
    os.utime(a.memory / "user_n1.md", (_hours_ago(3),) * 2)
    start_synced(a, b)
    return a, b


def test_a_copy_only_pulled_keeps_its_edit_time_when_both_devices_follow_a_new_remote_folder(
    tmp_path,
):
    """Finding F5b (s28b): a copy this device only pulled is not an edit made when it was
    pulled. A writes a fact 3 h ago and syncs, B pulls it; A edits it 1 h ago, unsynced; the
    share moves to a new folder, which B fills first (no records there: every file goes up
    with its edit time). A's one-sided edit must win everywhere, not B's pulled copy, which
    once carried the pull time as its edit time."""
    a, b = _two_with_an_old_fact(tmp_path)
    new = tmp_path / "remote2"
    new.mkdir()
    pulled = (b.memory / "user_n1.md").stat().st_mtime
    assert abs(pulled - _hours_ago(3)) < 60  # the edit time the remote carries, not now
    edit(a, "user_n1.md", lambda t: t.replace("b1", "b1\nA offline edit"), _hours_ago(1))
    a.remote = b.remote = new.as_uri()
    b.run("sync")
    a.run("sync")
    b.run("sync")
    for device in (a, b):
        assert "A offline edit" in device.files()["user_n1.md"].decode()
    assert "A offline edit" in (new / "e2e-project" / "user_n1.md").read_text()


def test_records_moved_aside_on_a_device_that_only_pulled_keep_the_other_devices_edit(tmp_path):
    """Finding F5c (s28b): memsync's own advice for a damaged records.json (move it aside;
    every file is then compared with the remote) must not revert another device's edit with
    a copy this device only pulled: that copy carries the edit time the remote gave it."""
    a, b = _two_with_an_old_fact(tmp_path)
    remote = tmp_path / "remote"
    edit(a, "user_n1.md", lambda t: t.replace("b1", "b1\nA edit"), _hours_ago(1))
    a.run("sync")
    (records,) = b.home.rglob("records.json")
    records.rename(records.with_name("records.json.bad"))
    out = b.run("sync")
    a.run("sync")
    for device in (a, b):
        assert "A edit" in device.files()["user_n1.md"].decode(), out.stdout + out.stderr
    assert "A edit" in remote_text(remote, "user_n1.md")
    assert "kept this device's version" not in out.stdout + out.stderr


def test_a_line_removed_elsewhere_that_comes_back_without_records_is_reported(tmp_path):
    """Fresh-eyes s28c, F11: with records.json moved aside (memsync's own advice for a damaged
    one), a line another device removed came back in the merge with nothing said: with no base
    the removal reads as the other side's addition. It may still come back, but it is now a
    recorded conflict on both devices, saying what to do."""
    remote = tmp_path / "remote"
    remote.mkdir()
    a, b = (
        make_device(tmp_path, "laptop", remote.as_uri()),
        make_device(tmp_path, "desktop", remote.as_uri()),
    )
    a.write(
        "self_observations.md",
        "## 2026-11-20\n- Old lesson to remove.\n- A lesson to keep.\n",
        type="self_observations",
    )
    start_synced(a, b)
    edit(a, "self_observations.md", lambda t: t.replace("- Old lesson to remove.\n", ""))
    a.run("sync")
    (records,) = b.home.rglob("records.json")
    records.rename(records.with_name("records.json.aside"))
    said = b.run("sync")
    a.run("sync")
    text = remote_text(remote, "self_observations.md")
    if "Old lesson to remove." in text:  # back: then both devices are told
        assert "records.json moved aside" in said.stderr, said.stderr
        for device in (a, b):
            assert "self_observations.md" in conflict_files(device), device.name
    assert "A lesson to keep." in text


def test_an_index_line_edited_while_its_file_was_renamed_elsewhere_is_a_conflict(pair):
    """Fresh-eyes s29e, finding 4: A renames user_pat.md to user_patricia.md (its index line
    too) and syncs; Claude on B edits the old index line, pushed by the hooks. The merge
    keeps the edited line, which then links to nothing and is taken out: B's words were only
    in a hook's log line and in history. Now a conflict says so (status, --json, primer)."""
    a, b, _ = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    (a.memory / "MEMORY.md").write_text("# Memory\n- [Pat](user_pat.md) — Pat, storage lead\n")
    start_synced(a, b)
    (a.memory / "user_pat.md").rename(a.memory / "user_patricia.md")
    (a.memory / "MEMORY.md").write_text(
        "# Memory\n- [Patricia](user_patricia.md) — Patricia, storage lead\n"
    )
    a.run("sync")
    index = b.memory / "MEMORY.md"
    index.write_text(index.read_text().replace("storage lead", "storage lead, away in May"))
    b.post_tool_use(index)
    b.hook("stop", hook_event_name="Stop")
    b.run("sync")
    assert "MEMORY.md" in conflict_files(b), status(b)
    said = [c["detail"] for c in status(b)["conflicts"] if c["file"] == "MEMORY.md"]
    assert any("user_pat.md" in d and "history" in d for d in said), said
    assert "away in May" not in index.read_text()  # the line links to nothing: it goes
    a.run("sync")  # and A hears of it too (fresh-eyes s30d, finding 2: only B did)
    said = [c["detail"] for c in status(a)["conflicts"] if c["file"] == "MEMORY.md"]
    assert any("user_pat.md" in d and "desktop" in d for d in said), said
    assert "MEMORY.md" in primer(a)


@pytest.mark.parametrize("a_offline", [False, True], ids=["A-online", "A-offline-too"])
def test_a_digest_reworded_then_rolled_up_offline_while_the_other_rolled_it_up_is_reworded_once(
    pair, a_offline
):
    """B rewords a line of one day's digest and its scheduled compaction rolls October up
    while the remote is away; A rolls October up too. The two roll-ups meet with no common
    version: their base is made from the synced copies of the digests both rolled up, so B's
    rewording replaces the old line, once, everywhere, and no conflict is reported (fresh-eyes
    trial of issue 16: both wordings stayed side by side, no conflict)."""
    a, b, remote = pair
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    edit(
        b,
        "session_digest_2026-10-06.md",
        lambda t: t.replace(
            "- ARC06 worked on item 06.", "- ARC06 worked on item 06 and CSV BREW."
        ),
    )
    away = remote.with_name("remote-away")
    remote.rename(away)
    b.run("compact", "--now", "2026-11-26", check=3)
    if a_offline:
        a.run("compact", "--now", "2026-11-26", check=3)
    away.rename(remote)
    if not a_offline:
        a.run("compact", "--now", "2026-11-26")
    else:
        a.run("sync")
    b.run("sync")
    a.run("sync")
    b.run("sync")
    a.run("compact", "--now", "2026-11-26")
    b.run("compact", "--now", "2026-11-26")
    a.run("sync")
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()
    assert not conflict_files(a) and not conflict_files(b)
    for text in (
        a.files()["session_digest_2026-10.md"].decode(),
        remote_text(remote, "session_digest_2026-10.md"),
    ):
        assert text.count("- ARC06 worked on item 06 and CSV BREW.") == 1, text
        assert "- ARC06 worked on item 06.\n" not in text, text
        for day in range(1, 10):
            assert text.count(f"- REL{day:02d} Pat was fine.") == 1, text
            assert text.count(f"## 2026-10-{day:02d}") == 1, text
    assert not [n for n in a.files() if n.startswith("session_digest_2026-10-")]


def test_a_digest_line_reworded_on_both_devices_then_rolled_up_apart_is_a_conflict(pair):
    """Both devices reword the same digest line, each in its own words, and each rolls
    October up while the remote is away: the merged roll-up keeps both wordings and both
    devices report the conflict (the issue's rule: changed differently on both sides)."""
    a, b, remote = pair
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    for device, words in ((a, "with the CSV export AREW"), (b, "and the retry logic BREW")):
        edit(
            device,
            "session_digest_2026-10-06.md",
            lambda t, w=words: t.replace("- ARC06 worked on item 06.", f"- ARC06 worked {w}."),
        )
    _compact_while_away(remote, a, b)
    a.run("sync")
    b.run("sync")
    a.run("sync")
    text = remote_text(remote, "session_digest_2026-10.md")
    assert "AREW" in text and "BREW" in text
    assert "- ARC06 worked on item 06.\n" not in text, text
    assert "session_digest_2026-10.md" in conflict_files(a)
    assert "session_digest_2026-10.md" in conflict_files(b)


def test_a_roll_up_made_offline_from_an_older_digest_loses_no_line_of_the_newer_one(tmp_path, pair):
    """C adds a line to a digest; B syncs it, A does not. Both roll October up while the
    remote is away: A's roll-up is made from the older copy, B's holds the line. A roll-up
    that lacks a line has not removed it: after every sync and compaction the line is in the
    roll-up once, everywhere (the base two roll-ups made apart are merged against tells
    rewordings only, never removals)."""
    a, b, remote = pair
    c = make_device(tmp_path, "tablet", remote.as_uri())
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    c.run("sync")
    edit(
        c,
        "session_digest_2026-10-06.md",
        lambda t: t.replace("- REL06 Pat was fine.\n", "- REL06 Pat was fine.\n- CNEW06 Riley.\n"),
    )
    c.run("sync")
    b.run("sync")
    _compact_while_away(remote, a, b)
    for device in (a, b, a, b, c):
        device.run("sync")
    for device in (a, b):
        device.run("compact", "--now", "2026-11-26")
    for device in (a, b, a, c):
        device.run("sync")
    assert a.files() == b.files() == c.files()
    text = remote_text(remote, "session_digest_2026-10.md")
    assert text.count("- CNEW06 Riley.") == 1, text
    for day in range(1, 10):
        assert text.count(f"- REL{day:02d} Pat was fine.") == 1, text
    assert not [n for n in a.files() if n.startswith("session_digest_2026-10-")]


def test_an_offline_compaction_keeps_the_index_lines_of_the_digests_it_kept(pair):
    """Fresh-eyes s30d, finding 1: compaction with the remote away writes the roll-up but
    keeps the digests (they go once the roll-up is on the remote); it had already pointed
    their MEMORY.md lines at the roll-up, and the next syncs sent that index everywhere: files
    that exist, unlisted, and an edit of such a line on the other device lost. The lines now
    go with the digests, at the compaction that deletes them."""
    a, b, remote = pair
    _october_digests(a, range(1, 4))
    (a.memory / "MEMORY.md").write_text(
        "# Memory\n"
        + "".join(
            f"- [Oct {d}](session_digest_2026-10-0{d}.md) — the day {d} session\n"
            for d in (1, 2, 3)
        )
    )
    start_synced(a, b)
    away = remote.with_name("remote-away")
    remote.rename(away)
    a.run("compact", "--now", "2026-11-26", check=3)
    away.rename(remote)
    a.run("sync")
    b.run("sync")
    for device in (a, b):
        index = (device.memory / "MEMORY.md").read_text()
        for d in (1, 2, 3):
            assert (device.memory / f"session_digest_2026-10-0{d}.md").exists()
            assert f"(session_digest_2026-10-0{d}.md)" in index, index
    a.run("compact", "--now", "2026-11-26")
    b.run("sync")
    for device in (a, b):
        index = (device.memory / "MEMORY.md").read_text()
        assert "session_digest_2026-10-0" not in index and "(session_digest_2026-10.md)" in index
        assert not (device.memory / "session_digest_2026-10-01.md").exists()


def test_a_compaction_with_sync_off_is_no_lost_memory_dir(pair):
    """Fresh-eyes s30f, finding 4: with MEMSYNC_SYNC=off, compaction deletes the digests it
    rolled up at once; on a device whose synced files were those digests and MEMORY.md (its
    lines pointed at the roll-up), the next sync took the dir for a lost one and refused. The
    digests a roll-up here covers are compaction's work, not a loss: the sync sends it."""
    a, b, remote = pair
    for day in (1, 2, 3):
        a.write(
            f"session_digest_2026-10-0{day}.md",
            f"## Session 09:00 s{day}\n\n### Arcs\n- ARC{day} worked on item {day}.\n",
            type="session_digest",
        )
    (a.memory / "MEMORY.md").write_text(
        "# Memory\n"
        + "".join(f"- [Oct {d}](session_digest_2026-10-0{d}.md) — day {d}\n" for d in (1, 2, 3))
    )
    start_synced(a, b)
    off = Device(b.name, b.root, b.remote, {"MEMSYNC_SYNC": "off"})
    off.run("compact", "--now", "2026-11-26")
    assert not (b.memory / "session_digest_2026-10-01.md").exists()
    said = b.run("sync")
    assert "lost" not in said.stderr and "memsync pull" not in said.stderr, said.stderr
    a.run("sync")
    assert a.files() == b.files()
    assert "ARC2 worked on item 2." in remote_text(remote, "session_digest_2026-10.md")


def test_a_digest_coming_back_older_with_a_line_like_a_rolled_up_one_is_a_conflict(pair):
    """Fresh-eyes s32a, finding 9: A adds a line to a digest and rolls October up; B, whose
    copy of that digest is from before A's line, adds a line of most of the same words; its
    edit beats the deletion and the digest comes back. The next compaction took B's line for
    a rewording of A's, so A's line was in no memory file, only in history, and nothing was
    said. Which it was cannot be told from the files: the compaction now records a conflict
    on the roll-up, saying where the roll-up as it was is kept."""
    a, b, remote = pair
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    edit(
        a,
        "session_digest_2026-10-05.md",
        lambda t: t.replace(
            "- ARC05 worked on item 05.",
            "- ARC05 worked on item 05.\n- Met Sam about the budget offsite AKEEP.",
        ),
    )
    a.run("sync")
    a.run("compact", "--now", "2026-11-26")
    assert "AKEEP" in (a.memory / "session_digest_2026-10.md").read_text()
    edit(  # B's copy of the digest is from before A's line
        b,
        "session_digest_2026-10-05.md",
        lambda t: t.replace(
            "- ARC05 worked on item 05.",
            "- ARC05 worked on item 05.\n- Met Sam about the budget offsite BNEW.",
        ),
    )
    b.run("sync")
    a.run("sync")
    said = a.run("compact", "--now", "2026-11-26")
    rollup = (a.memory / "session_digest_2026-10.md").read_text()
    assert "BNEW" in rollup and "AKEEP" not in rollup  # taken for a rewording of it
    assert "1 of its entries took the wording of a digest that came back" in said.stdout
    assert conflict_files(a) == ["session_digest_2026-10.md"]
    assert "before compaction rewrote it" in a.run("history", "session_digest_2026-10.md").stdout
    kept = list((a.home / "state").rglob("session_digest_2026-10.md~*/*.md"))
    assert any("AKEEP" in p.read_text() for p in kept)
    assert "session_digest_2026-10.md" in primer(a)


@pytest.mark.parametrize("added", [False, True], ids=["renamed", "renamed-and-added"])
def test_a_thread_folded_into_another_while_renamed_elsewhere_holds_its_entry_once(pair, added):
    """Fresh-eyes s33c, G3: A folds a one-entry thread into another (the entry moved there as
    it was, the title dropped) while B renames that thread (and adds to it). The renamed
    thread was kept whole, so the moved entry was in both threads on every device, with no
    conflict. It is in the thread A moved it to, once; B's new title stays, with what B
    added under it."""
    a, b, remote = pair
    name = "philosophical_threads.md"
    a.write(
        name,
        "## Free will\n- First raised over lunch ALPHA1.\n- Left off at GAMMA3.\n\n"
        "## Maps and territories\n- First raised on a walk DELTA4.\n",
        type="philosophical_threads",
    )
    start_synced(a, b)
    edit(a, name, lambda s: s.replace("\n\n## Maps and territories\n", "\n"))
    edit(b, name, lambda s: s.replace("## Maps and territories", "## The map is not the territory"))
    if added:
        edit(b, name, lambda s: s.replace("DELTA4.\n", "DELTA4.\n- Their position: NEWB5.\n"))
    a.run("sync")
    b.run("sync")
    a.run("sync")
    want = (
        "## Free will\n- First raised over lunch ALPHA1.\n- Left off at GAMMA3.\n"
        "- First raised on a walk DELTA4.\n\n## The map is not the territory\n"
        + ("- Their position: NEWB5.\n" if added else "")
    )
    for text in (
        (a.memory / name).read_text(),
        (b.memory / name).read_text(),
        remote_text(remote, name),
    ):
        assert memory.parse(text).body.strip() == want.strip(), text
    assert not conflict_files(a) and not conflict_files(b)


def test_a_title_conflict_in_a_digest_follows_it_into_the_roll_up(pair):
    """Fresh-eyes s33c, G5: both devices retitle a session differently (`## X / Y`, a conflict
    on both), then one rolls the day up. The conflict went with the day file on every device,
    though both titles were still in the roll-up and nobody had picked one. It moves to the
    roll-up, on both devices, and clears there once the user keeps one title."""
    a, b, remote = pair
    _october_digests(a, range(1, 10))
    start_synced(a, b)
    day = "session_digest_2026-10-05.md"
    edit(a, day, lambda t: t.replace("## Session 09:00 s05", "## Parser day"))
    edit(b, day, lambda t: t.replace("## Session 09:00 s05", "## Test marathon"))
    a.run("sync")
    b.run("sync")
    a.run("sync")
    assert day in conflict_files(a) and day in conflict_files(b)
    b.run("compact", "--now", "2026-11-26")
    a.run("sync")
    month = "session_digest_2026-10.md"
    text = a.files()[month].decode()
    assert "Test marathon / Parser day" in text or "Parser day / Test marathon" in text, text
    for device in (a, b):
        assert conflict_files(device) == [month], device.name
    edit(a, month, lambda t: re.sub(r"### .*Test marathon.*\n", "### Parser day\n", t))
    a.run("sync")
    b.run("sync")
    for device in (a, b):
        assert not conflict_files(device), device.name
