"""Per-type merges: worked examples for each rule in DESIGN.md, and properties that must hold
for every input (nothing either side added is lost, merging is deterministic)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.memory import frontmatter as memory
from memsync.memory import sections
from memsync.memory.merge import merge
from memsync.memory.merge.lines import merge_lines
from tests import oracle
from tests.conftest import NO_FCNTL

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="a pure function: the first pass covers it")


def doc(body: str, **meta: object) -> bytes:
    fields = {"name": "n", "description": "d", **meta}
    return memory.render(fields, body).encode()


def checked(path: str, base: bytes | None, ours: bytes, theirs: bytes, **times: float):
    """merge(), held to the no-silent-loss oracle (tests/oracle.py)."""
    result = merge(path, base, ours, theirs, **times)
    conflicts = [result.conflict] if result.conflict else []
    kept = [result.discarded] if result.discarded is not None else []
    oracle.check(path, base, ours, theirs, result.content, conflicts, kept)
    return result


def body_of(data: bytes) -> str:
    return memory.parse(data.decode()).body


# --- worked examples, one per rule -----------------------------------------------------------


def test_voice_calibration_keeps_entries_both_sides_added_under_the_same_date():
    base = doc("## 2026-04-17\n\n### Missed\n- too formal\n", type="voice_calibration")
    ours = doc("## 2026-04-17\n\n### Missed\n- too formal\n- too long\n", type="voice_calibration")
    theirs = doc(
        "## 2026-04-17\n\n### Missed\n- too formal\n\n### Landed\n- one-liner\n\n"
        "## 2026-04-18\n\n### Missed\n- lectured\n",
        type="voice_calibration",
    )
    out = body_of(checked("voice_calibration.md", base, ours, theirs).content)
    for line in ("- too formal", "- too long", "### Landed", "- one-liner", "## 2026-04-18"):
        assert line in out
    assert out.count("## 2026-04-17") == 1
    assert out.count("- too formal") == 1


@pytest.mark.parametrize(
    ("path", "meta", "block"),
    [
        ("voice_calibration.md", {"type": "voice_calibration"}, "## 2026-11-25\n\n### Landed\n"),
        ("voice_calibration.md", {"type": "voice_calibration"}, "## 2026-11-25\n\n### {sub}\n"),
        ("session_digest_2026-11-25.md", {"type": "session_digest"}, "## Session 15:00 cccc\n\n"),
    ],
)
def test_two_blocks_with_the_same_heading_each_keep_their_entries(path, meta, block):
    """A second session the same day appends its own `## 2026-11-25` block (or a resumed
    session its own `## Session` block) while the other device changes the file elsewhere:
    each block keeps its entry, none is replaced by the other and doubled (fresh-eyes
    re-trial of issue 16, finding 18)."""
    top = "## Rules learned\n\n- 2026-09-01: numbers first.\n\n"
    first = block.format(sub="Landed") + "- First session: the joke landed.\n\n"
    second = block.format(sub="Missed") + "- Second session: numbers first worked.\n"
    base = doc(top, **meta)
    ours = doc(top.replace("first.\n", "first.\n- 2026-09-02: short answers.\n"), **meta)
    theirs = doc(top + first + second, **meta)
    for o, t in ((ours, theirs), (theirs, ours)):
        out = body_of(checked(path, base, o, t).content)
        assert out.count("- First session: the joke landed.") == 1, out
        assert out.count("- Second session: numbers first worked.") == 1, out
        assert out.count(block.format(sub="Landed").split("\n")[0]) == 2, out
        assert "- 2026-09-02: short answers." in out


SEPT_VOICE = """
## Rules learned
- Keep status updates under five lines.

## 2026-09-01

### Landed
- Leading with the number worked.

## 2026-11-20

### Missed
- A pun in a serious thread.
"""


def _folded(body: str) -> bytes:
    from memsync.retention.compact import plan

    data = doc(body, type="voice_calibration")
    (action,) = plan({"voice_calibration.md": data}, date(2026, 11, 26))
    assert action.content is not None
    return action.content


@pytest.mark.parametrize("both_folded", [False, True])
@pytest.mark.parametrize(
    ("change", "rules"),
    [
        (
            "- Leading with the number worked.\n- Leading with the chart worked for Riley.\n",
            ["Leading with the number worked.", "Leading with the chart worked for Riley."],
        ),
        (
            "- Leading with the number worked in standup.\n",
            ["Leading with the number worked in standup."],
        ),
    ],
)
def test_a_section_folded_on_one_side_takes_the_other_sides_change_as_rules(
    change, rules, both_folded
):
    """One device's compaction folded 2026-09-01 into Rules learned while the other added an
    entry there (or reworded one, and maybe compacted too, offline): the merge folds the
    other side's section as well and compares rule with rule, so an added entry is a rule of
    its own and a rewording replaces the old rule; the section does not come back (fresh-eyes
    re-trial of issue 16, findings 19 and 4)."""
    base = doc(SEPT_VOICE, type="voice_calibration")
    ours = _folded(SEPT_VOICE)
    changed = SEPT_VOICE.replace("- Leading with the number worked.\n", change)
    theirs = _folded(changed) if both_folded else doc(changed, type="voice_calibration")
    for o, t in ((ours, theirs), (theirs, ours)):
        result = merge("voice_calibration.md", base, o, t)
        assert result.conflict is None
        out = body_of(result.content)
        found = [e for e in sections.parse(out).find("Rules learned").entries if e.strip()]
        expected = ["Keep status updates under five lines."]
        expected += [f"2026-09-01 (Landed): {r}" for r in rules]
        assert [sections.normalise(e)[2:] for e in found] == expected, out
        assert "## 2026-09-01" not in out and "- A pun in a serious thread." in out


def test_section_merge_keeps_a_removal_made_on_one_side():
    base = doc("## Active\n- a\n- b\n", type="callbacks")
    ours = doc("## Active\n- a\n", type="callbacks")  # b removed here
    theirs = doc("## Active\n- a\n- b\n- c\n", type="callbacks")
    out = body_of(checked("running_jokes_and_callbacks.md", base, ours, theirs).content)
    assert "- b" not in out
    assert "- a" in out and "- c" in out


def test_relationship_without_base_is_a_union():
    ours = doc("## Past interactions\n- 2026-04-17: asked about sponsors\n", type="relationship")
    theirs = doc("## Past interactions\n- 2026-04-18: reviewed the design\n", type="relationship")
    out = body_of(checked("relationship_ana.md", None, ours, theirs).content)
    assert "asked about sponsors" in out and "reviewed the design" in out


def test_commitments_delivered_beats_open_and_ids_merge():
    base = doc("## Open\n- [c-1] ship the filter\n\n## Delivered\n", type="commitments")
    ours = doc("## Open\n\n## Delivered\n- [c-1] ship the filter ✓ (85c8d78)\n", type="commitments")
    theirs = doc(
        "## Open\n- [c-1] ship the filter\n- [c-2] write the runbook\n\n## Delivered\n",
        type="commitments",
    )
    out = body_of(checked("running_commitments.md", base, ours, theirs).content)
    tree = sections.parse(out)
    open_items = "".join(tree.find("Open").entries)
    done_items = "".join(tree.find("Delivered").entries)
    assert "[c-2]" in open_items and "[c-1]" not in open_items
    assert "[c-1]" in done_items


def test_commitments_both_sides_change_status_delivered_wins():
    base = doc("## Open\n\n## Delivered\n", type="commitments")
    ours = doc("## Open\n- [c-9] demo\n\n## Delivered\n", type="commitments")
    theirs = doc("## Open\n\n## Delivered\n- [c-9] demo ✓\n", type="commitments")
    out = body_of(checked("running_commitments.md", base, ours, theirs).content)
    assert "[c-9]" in "".join(sections.parse(out).find("Delivered").entries)
    assert out.count("[c-9]") == 1


@pytest.mark.parametrize("delivered_ours", [True, False])
def test_a_promise_reworded_as_it_is_delivered_and_reworded_on_the_other_side_is_delivered(
    delivered_ours,
):
    """One device delivers a promise and rewords it as it does; the other reschedules it. One
    id the base holds once is one promise: Delivered only, with the conflict reported (design
    table: moved to Delivered / changed). The merge had asked that the delivered text continue
    the base's and kept the rescheduled one Open too (found by tests/test_devices_machine.py)."""
    base = doc("## Open\n- [c-1] send Ana the deck by Friday\n\n## Delivered\n", type="commitments")
    done = doc(
        "## Open\n\n## Delivered\n- [c-1] sent Ana the deck on Thursday\n", type="commitments"
    )
    moved = doc(
        "## Open\n- [c-1] send Ana the deck by Monday\n\n## Delivered\n", type="commitments"
    )
    ours, theirs = (done, moved) if delivered_ours else (moved, done)
    result = checked("running_commitments.md", base, ours, theirs)
    tree = sections.parse(body_of(result.content))
    assert "[c-1]" not in "".join(tree.find("Open").entries)
    assert "".join(tree.find("Delivered").entries).count("[c-1]") == 1
    assert result.conflict and "[c-1]" in result.conflict


@pytest.mark.parametrize("delivered_ours", [True, False])
@pytest.mark.parametrize("with_base", [False, True])
def test_delivering_a_colliding_commitment_id_keeps_the_other_devices_promise(
    delivered_ours, with_base
):
    """Two devices minted c-same for two promises (old-style ids); one delivers its own: the
    other's stays Open, and the collision is reported (found by tests/test_devices_machine.py:
    same_id_on_two_devices, finalise, converge)."""
    base_body = "## Open\n- [c-same] k1 send the deck\n\n## Delivered\n"
    mine = doc("## Open\n\n## Delivered\n- [c-same] k1 send the deck ✓\n", type="commitments")
    other_body = "## Open\n- [c-same] k2 book the room\n\n## Delivered\n"
    if with_base:  # the other device synced after both existed: base has both, in Open
        base_body = "## Open\n- [c-same] k1 send the deck\n- [c-same] k2 book the room\n"
        mine = doc(
            "## Open\n- [c-same] k2 book the room\n\n## Delivered\n- [c-same] k1 send the deck ✓\n",
            type="commitments",
        )
        other_body = base_body + "- [c-3] k3 new one\n"
    base = doc(base_body, type="commitments") if with_base else None
    other = doc(other_body, type="commitments")
    ours, theirs = (mine, other) if delivered_ours else (other, mine)
    result = checked("running_commitments.md", base, ours, theirs)
    tree = sections.parse(body_of(result.content))
    assert "k2 book the room" in "".join(tree.find("Open").entries)
    assert "k1 send the deck" not in "".join(tree.find("Open").entries)
    assert "k1 send the deck" in "".join(tree.find("Delivered").entries)
    if not with_base:
        assert result.conflict and "c-same" in result.conflict


def test_carry_forward_consumed_on_one_side_leaves_pending():
    base = doc(
        "## Pending\n- thank Ana\n- raise the analogy\n\n## Consumed\n", type="carry_forward"
    )
    ours = doc(
        "## Pending\n- raise the analogy\n\n## Consumed\n- thank Ana\n", type="carry_forward"
    )
    theirs = doc(
        "## Pending\n- thank Ana\n- raise the analogy\n- ask about the trip\n\n## Consumed\n",
        type="carry_forward",
    )
    tree = sections.parse(body_of(checked("carry_forward.md", base, ours, theirs).content))
    pending = "".join(tree.find("Pending").entries)
    assert "thank Ana" not in pending
    assert "raise the analogy" in pending and "ask about the trip" in pending
    assert "thank Ana" in "".join(tree.find("Consumed").entries)


@pytest.mark.parametrize("consumer", ["ours", "theirs"])
def test_an_item_consumed_on_one_side_and_reworded_on_the_other_is_consumed_and_reported(
    consumer: str,
):
    base = doc("## Pending\n- thank Ana\n\n## Consumed\n", type="carry_forward")
    consumed = doc("## Pending\n\n## Consumed\n- thank Ana\n", type="carry_forward")
    reworded = doc("## Pending\n- thank Ana for the intro\n\n## Consumed\n", type="carry_forward")
    ours, theirs = (consumed, reworded) if consumer == "ours" else (reworded, consumed)
    result = merge("carry_forward.md", base, ours, theirs)
    tree = sections.parse(body_of(result.content))
    assert "thank Ana" not in "".join(tree.find("Pending").entries)
    assert "".join(tree.find("Consumed").entries).count("thank Ana") == 1
    # the rewording is not in the file: never dropped without a word
    assert result.conflict and "consumed or delivered on the other" in result.conflict
    assert "both versions are in the file" not in result.conflict


CARRY = "## Pending\n{pending}\n## Consumed\n{consumed}"
REMIND = "- Remind Pat about the dentist on Friday.\n"
MORNING = "- Remind Pat about the dentist on Friday morning.\n"
GENTLY = "- Remind Pat gently about the dentist on Friday.\n"


def carry(pending: str = "", consumed: str = "") -> bytes:
    return doc(CARRY.format(pending=pending, consumed=consumed), type="carry_forward")


@pytest.mark.parametrize("consumer", ["ours", "theirs"])
def test_two_rewordings_kept_side_by_side_go_with_the_item_a_third_device_consumed(consumer):
    """Three devices: A and B reworded the item (their merge kept both wordings, with a
    conflict), C consumed it. C's merge consumes both wordings, whichever side C is; before,
    one wording stayed Pending next to the consumed item (fresh-eyes re-trial, finding 21)."""
    base = carry(REMIND)
    kept_both = carry(MORNING + GENTLY)
    consumed = carry(consumed=REMIND)
    ours, theirs = (consumed, kept_both) if consumer == "ours" else (kept_both, consumed)
    result = checked("carry_forward.md", base, ours, theirs)
    tree = sections.parse(body_of(result.content))
    assert "dentist" not in "".join(tree.find("Pending").entries)
    assert "".join(tree.find("Consumed").entries) == REMIND
    assert result.conflict and "consumed or delivered on the other" in result.conflict


@pytest.mark.parametrize("consumer", ["ours", "theirs"])
def test_a_promise_held_twice_by_a_conflict_is_delivered_once(consumer):
    """The commitments' form of the above: one id, two rewordings kept Open by an earlier
    merge, delivered on a third device: Delivered only, never one id in Open and Delivered."""
    promise = "- [c-2026-11-20-ab12] 2026-11-20: draft the quarterly memo for Pat.\n"
    monday = "- [c-2026-11-20-ab12] 2026-11-20: draft the quarterly memo for Pat by Monday.\n"
    short = "- [c-2026-11-20-ab12] 2026-11-20: draft the short quarterly memo for Pat.\n"
    body = "## Open\n{}\n## Delivered\n{}"
    base = doc(body.format(promise, ""), type="commitments")
    kept_both = doc(body.format(monday + short, ""), type="commitments")
    delivered = doc(body.format("", promise), type="commitments")
    ours, theirs = (delivered, kept_both) if consumer == "ours" else (kept_both, delivered)
    result = checked("running_commitments.md", base, ours, theirs)
    tree = sections.parse(body_of(result.content))
    assert "ab12" not in "".join(tree.find("Open").entries)
    assert "".join(tree.find("Delivered").entries) == promise
    assert result.conflict


@pytest.mark.parametrize("noter", ["ours", "theirs"])
def test_both_consume_an_item_and_one_adds_a_note_the_note_stands_alone(noter):
    """Both devices consumed the item, one adding how it went: that is the only change to its
    words, so it is taken, without a conflict (fresh-eyes re-trial, finding 6)."""
    budget = "- Ask Pat about the budget for the offsite.\n"
    noted = "- Ask Pat about the budget for the offsite. (approved)\n"
    base = carry(budget)
    plain, with_note = carry(consumed=budget), carry(consumed=noted)
    ours, theirs = (with_note, plain) if noter == "ours" else (plain, with_note)
    result = checked("carry_forward.md", base, ours, theirs)
    assert "".join(sections.parse(body_of(result.content)).find("Consumed").entries) == noted
    assert result.conflict is None


def test_both_rewrite_one_item_in_other_words_both_stay_and_the_user_is_told():
    """Each device replaced the item with one of other words (too unlike it to be called a
    rewording): both stay, and a conflict says so (fresh-eyes re-trial, finding 10)."""
    base = carry(REMIND + "- Check the staging migration.\n")
    ours = carry("- Remind Pat: dentist moved to Monday 9am.\n- Check the staging migration.\n")
    theirs = carry(
        "- Dentist for Pat is now Thursday, remind him.\n- Check the staging migration.\n"
    )
    result = checked("carry_forward.md", base, ours, theirs)
    pending = "".join(sections.parse(body_of(result.content)).find("Pending").entries)
    assert "Monday 9am" in pending and "Thursday" in pending and "Friday" not in pending
    assert result.conflict and "both devices changed the same entries" in result.conflict


def test_two_digests_on_the_same_day_are_both_kept_by_session():
    ours = doc("## Arcs\n- shipped the filter\n", type="session_digest", session_id="aaa")
    theirs = doc("## Arcs\n- fixed the scheduler\n", type="session_digest", session_id="bbb")
    out = body_of(checked("session_digest_2026-04-17.md", None, ours, theirs).content)
    assert "## Session aaa" in out and "## Session bbb" in out
    assert "shipped the filter" in out and "fixed the scheduler" in out


def test_two_roll_ups_of_one_month_made_on_two_devices_merge_day_by_day():
    """Two devices that each rolled October up (both offline) hold the same days: a roll-up's
    sections are days, not sessions, so each day and entry is there once and a line one
    device added is kept (the session rule wrapped each side whole: the month twice)."""
    day = "## 2026-10-0{d}\n\n### Session 09:00 s0{d}\n\n#### Arcs\n- ARC0{d} worked.\n"
    month = "\n".join(day.format(d=d) for d in (1, 2))
    ours = doc(month, type="session_digest")
    theirs = doc(
        month.replace("- ARC02 worked.\n", "- ARC02 worked.\n- NEW02 added.\n"),
        type="session_digest",
    )
    out = body_of(checked("session_digest_2026-10.md", None, ours, theirs).content)
    assert "Session " not in out.replace("### Session 09:00", "")
    for text in (
        "## 2026-10-01",
        "## 2026-10-02",
        "- ARC01 worked.",
        "- ARC02 worked.",
        "- NEW02 added.",
    ):
        assert out.count(text) == 1, out


def test_fact_file_changed_on_both_sides_newer_wins_and_the_other_is_reported():
    base = doc("old\n", type="feedback", modified="2026-04-01")
    ours = doc("ours\n", type="feedback", modified="2026-04-03")
    theirs = doc("theirs\n", type="feedback", modified="2026-04-02")
    result = checked("feedback_tone.md", base, ours, theirs)
    assert body_of(result.content) == "ours\n"
    assert result.discarded == theirs
    assert result.conflict and "local history" in result.conflict


def test_fact_file_changed_on_one_side_takes_it_silently():
    base = doc("old\n", type="user")
    theirs = doc("new\n", type="user")
    result = checked("user_role.md", base, base, theirs)
    assert result.content == theirs and result.conflict is None


def test_index_union_by_link_target_and_removals_stay_removed():
    base = b"- [A](a.md) one\n- [B](b.md) two\n"
    ours = b"- [A](a.md) one, edited\n- [C](c.md) three\n"  # B removed, A edited
    theirs = b"- [A](a.md) one\n- [B](b.md) two\n- [D](d.md) four\n"
    out = checked("MEMORY.md", base, ours, theirs).content.decode()
    assert "(b.md)" not in out
    assert "one, edited" in out and out.count("(a.md)") == 1
    assert "(c.md)" in out and "(d.md)" in out


@pytest.mark.parametrize("side", ["ours", "theirs"])
def test_an_index_reorganised_on_one_side_keeps_its_layout_with_the_others_edit(side):
    """Fresh-eyes s31a, finding 2: one device put the index under headings (its lines moved),
    the other edited one line: the merge kept the old order with the headings wedged in
    between. A reordering is one side's change: its layout, with the other side's edit."""
    lines = {n: f"- [{n}](user_{n}.md) — fact {n}\n" for n in "abcd"}
    base = "".join(lines.values()).encode()
    laid_out = (
        "# Index\n\n## People\n"
        + lines["d"]
        + lines["a"]
        + "\n## Other\n"
        + lines["b"]
        + lines["c"]
    )
    edited = base.decode().replace("fact c", "fact c, updated").encode()
    ours, theirs = (laid_out.encode(), edited) if side == "ours" else (edited, laid_out.encode())
    out = checked("MEMORY.md", base, ours, theirs).content.decode()
    assert out == laid_out.replace("fact c", "fact c, updated"), out


def test_frontmatter_is_merged_field_by_field_never_duplicated():
    base = doc("## A\n- x\n", type="relationship", tags=["a"])
    ours = doc("## A\n- x\n- y\n", type="relationship", tags=["a", "b"], role="architect")
    theirs = doc("## A\n- x\n- z\n", type="relationship", tags=["a", "c"])
    merged = memory.parse(checked("relationship_x.md", base, ours, theirs).content.decode())
    assert sorted(merged.meta["tags"]) == ["a", "b", "c"]
    assert merged.meta["role"] == "architect"
    assert merged.body.count("- x") == 1


def test_unknown_type_line_merge_and_conflict():
    assert merge_lines("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n") == "A\nb\nC\n"
    assert merge_lines("a\n", "x\n", "y\n") is None
    result = checked("notes.txt", b"a\n", b"x\n", b"y\n", ours_mtime=2, theirs_mtime=1)
    assert result.content == b"x\n" and result.discarded == b"y\n" and result.conflict


def test_non_utf8_never_crashes():
    result = merge("blob.bin", None, b"\xff\xfe", b"\xff\x00", ours_mtime=1, theirs_mtime=2)
    assert result.content == b"\xff\x00" and result.discarded == b"\xff\xfe"


# --- properties ---------------------------------------------------------------------------

_words = st.text("abcdefghij ", min_size=1, max_size=12).map(str.strip).filter(bool)
_entries = st.lists(_words, max_size=5, unique=True)
_SECTION_TYPES = [
    ("voice_calibration.md", "voice_calibration"),
    ("self_observations.md", "self_observations"),
    ("relationship_ana.md", "relationship"),
    ("unsent_drafts.md", "unsent_drafts"),
    ("philosophical_threads.md", "philosophical_threads"),
    ("running_jokes_and_callbacks.md", "callbacks"),
]


def _tree(spec: dict[str, list[str]]) -> str:
    return "".join(
        f"## {h}\n\n" + "".join(f"- {e}\n" for e in items) + "\n" for h, items in spec.items()
    )


_specs = st.dictionaries(st.sampled_from(["Alpha", "Beta", "Gamma"]), _entries, max_size=3)


@settings(max_examples=150, deadline=None)
@given(base=_specs, add_ours=_specs, add_theirs=_specs, kind=st.sampled_from(_SECTION_TYPES))
def test_section_merges_keep_every_addition(base, add_ours, add_theirs, kind):
    path, mtype = kind

    def plus(extra: dict[str, list[str]], tag: str) -> dict[str, list[str]]:
        out = {h: list(v) for h, v in base.items()}
        for h, items in extra.items():
            out.setdefault(h, []).extend(f"{tag} {e}" for e in items)
        return out

    b = doc(_tree(base), type=mtype)
    o = doc(_tree(plus(add_ours, "ours")), type=mtype)
    t = doc(_tree(plus(add_theirs, "theirs")), type=mtype)
    out = body_of(checked(path, b, o, t).content)
    tree = sections.parse(out)
    for tag, added in (("ours", add_ours), ("theirs", add_theirs)):
        for heading, items in added.items():
            section = tree.find(heading)
            assert section is not None, (heading, out)
            text = "".join(section.entries)
            for item in items:
                assert f"- {tag} {item}\n" in text, (tag, item, out)
    for heading, items in base.items():
        text = "".join(tree.find(heading).entries)
        for item in items:
            assert text.count(f"- {item}\n") == 1, (item, out)
    # deterministic, and merging again with the result changes nothing
    assert merge(path, b, o, t).content == merge(path, b, o, t).content
    merged = merge(path, b, o, t).content
    assert merge(path, b, merged, merged).content == merged


@settings(max_examples=150, deadline=None)
@given(
    base=st.text(max_size=200),
    other=st.text(max_size=200),
    kind=st.sampled_from(
        [
            "voice_calibration.md",
            "carry_forward.md",
            "running_commitments.md",
            "MEMORY.md",
            "notes.txt",
            "user_role.md",
            "session_digest_2026-01-01.md",
        ]
    ),
)
def test_one_sided_change_is_taken_whole(base, other, kind):
    b, x = base.encode(), other.encode()
    assert merge(kind, b, b, x).content == x
    assert merge(kind, b, x, b).content == x
    assert merge(kind, b, x, x).content == x


@settings(max_examples=100, deadline=None)
@given(
    pending=st.lists(_words, max_size=6, unique=True),
    ours_new=_entries,
    theirs_new=_entries,
    consumed=st.data(),
)
def test_carry_forward_never_loses_a_pending_item(pending, ours_new, theirs_new, consumed):
    used = consumed.draw(
        st.lists(st.sampled_from(pending), unique=True) if pending else st.just([])
    )
    ours_new = [f"o {x}" for x in ours_new]
    theirs_new = [f"t {x}" for x in theirs_new]

    def cf(pend: list[str], cons: list[str]) -> bytes:
        return doc(_tree({"Pending": pend, "Consumed": cons}), type="carry_forward")

    b = cf(pending, [])
    o = cf([p for p in pending if p not in used] + ours_new, used)
    t = cf(pending + theirs_new, [])
    tree = sections.parse(body_of(checked("carry_forward.md", b, o, t).content))
    pending_text = "".join(tree.find("Pending").entries)
    consumed_text = "".join(tree.find("Consumed").entries)
    for item in ours_new + theirs_new:
        assert f"- {item}\n" in pending_text
    for item in used:
        assert f"- {item}\n" not in pending_text and f"- {item}\n" in consumed_text


def test_a_conflict_of_versions_kept_side_by_side_names_them_by_marks_only():
    """Both versions stay: the conflict carries a hash of each one's first line (never the
    text), by which a device sees it is over once neither is in the file. A conflict whose
    change went to history carries none: it stays until resolved."""
    from memsync.memory.merge import entry_mark, marks_of

    base = carry(REMIND)
    result = checked("carry_forward.md", base, carry(MORNING), carry(GENTLY))
    assert sorted(result.marks) == sorted({entry_mark(MORNING), entry_mark(GENTLY)})
    assert set(result.marks) <= marks_of(result.content)
    assert not any("dentist" in m for m in result.marks)
    later = carry(consumed=REMIND)
    assert not set(result.marks) & marks_of(later)
    consumed = checked("carry_forward.md", base, carry(consumed=REMIND), carry(MORNING))
    assert consumed.conflict and consumed.marks == ()


def test_an_index_line_changed_on_three_devices_is_reported_as_a_line_not_as_an_id():
    """A MEMORY.md line held twice after an earlier conflict, changed again on a third
    device: the conflict speaks of the line, never of "two promises with the same id"
    (fresh-eyes re-trial s28b, F7)."""
    line = "- [Pat](user_pat.md) — {}\n"
    base = ("# Memory\n" + line.format("who Pat is")).encode()
    ours = ("# Memory\n" + line.format("Pat, the PM") + line.format("Pat prefers email")).encode()
    theirs = ("# Memory\n" + line.format("Pat, based in Oslo")).encode()
    result = checked("MEMORY.md", base, ours, theirs)
    assert result.conflict and "same id" not in result.conflict
    assert "both devices changed the same entries" in result.conflict
