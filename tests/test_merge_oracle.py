"""Every structured merge against the no-silent-loss oracle (tests/oracle.py), over the edits
people and agents make, per memory type: add, reword, remove, move to Consumed/Delivered,
the same id minted on two devices, an index line edited on both sides, a fact edited on both
sides, CRLF files, and two files created from the same template.

MEMSYNC_MERGE_EXAMPLES sets the examples per test (default 100) for a longer hunt."""

from __future__ import annotations

import os
import re
from itertools import count

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsync.memory import frontmatter as memory
from memsync.memory import sections
from memsync.memory.merge import merge
from memsync.memory.merge.files import template_base
from tests import oracle
from tests.conftest import NO_FCNTL

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="a pure function: the first pass covers it")

EXAMPLES = int(os.environ.get("MEMSYNC_MERGE_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

_word = st.sampled_from(
    ["thank Ana", "ship the filter", "ask about Lisbon", "too formal", "one-liner landed",
     "review the deck", "raise the analogy", "call Riley", "fix the cron", "write the runbook"]
)  # fmt: skip
Model = dict[str, list[str]]  # section heading -> entry lines (without the bullet)


def render(kind: str, model: Model, meta: dict | None = None, crlf: bool = False) -> bytes:
    fields = {"name": "n", "description": "d", "type": kind, **(meta or {})}
    body = "".join(
        f"\n## {h}\n\n" + "".join(f"- {e}\n" for e in items) for h, items in model.items()
    )
    text = memory.render(fields, body)
    return (text.replace("\n", "\r\n") if crlf else text).encode()


# --- edits -----------------------------------------------------------------------------------

EDITS = ("add", "reword", "remove", "move", "add_section", "replace", "move_note")


def apply(model: Model, edits: list[tuple[str, int, int]], tag: str, kind: str) -> Model:
    """Apply edits (op, which section, which entry) to a copy of `model`. New text is unique
    to the side (`tag`), so the oracle can tell every entry apart."""
    out = {h: list(v) for h, v in model.items()}
    serial = count(1)
    heads = list(out)
    for op, i, j in edits:
        if op == "add_section" and kind == "sections":
            head = f"{tag} section {next(serial)}"
            out[head] = [f"{tag} note {next(serial)}"]
            heads.append(head)
            continue
        if not heads:
            continue
        head = heads[i % len(heads)]
        items = out[head]
        if op == "add" or not items:
            items.append(_new_entry(kind, tag, next(serial)))
        elif op == "reword":
            k = j % len(items)
            items[k] = _reword(kind, items[k], tag, next(serial))
        elif op == "replace":  # a brand-new entry where an old one was: not a reword
            items[j % len(items)] = _new_entry(kind, tag, next(serial))
        elif op == "remove":
            items.pop(j % len(items))
        elif op in ("move", "move_note") and kind in ("commitments", "carry_forward"):
            first, final = list(out)[:2]
            if out[first]:
                moved = out[first].pop(j % len(out[first]))
                if op == "move_note":  # delivered/consumed with a note of how
                    moved = f"{moved} via {tag} {next(serial)}"
                out[final].append(moved)
    return out


def _new_entry(kind: str, tag: str, n: int) -> str:
    if kind == "commitments":
        return f"[c-2026-11-25-{tag}{n}] {tag} promise {n}"
    return f"{tag} entry {n}"


def _reword(kind: str, entry: str, tag: str, n: int) -> str:
    if kind == "commitments" and entry.startswith("[c-"):
        cid, _, text = entry.partition(" ")
        return f"{cid} {text} {tag}{n}"
    return f"{entry} {tag}{n}"


_edits = st.lists(
    st.tuples(st.sampled_from(EDITS), st.integers(0, 5), st.integers(0, 5)), max_size=5
)


def _base(kind: str) -> st.SearchStrategy[Model]:
    if kind == "commitments":
        ids = st.lists(st.integers(1, 9), unique=True, max_size=4)
        return st.tuples(ids, ids).map(
            lambda p: {
                "Open": [f"[c-2026-11-2{i}-{i}] promise {i}" for i in p[0]],
                "Delivered": [f"[c-2026-10-0{i}-{i}] done {i}" for i in p[1] if i not in p[0]],
            }
        )
    if kind == "carry_forward":
        items = st.lists(_word, unique=True, max_size=5)
        return st.tuples(items, items).map(
            lambda p: {"Pending": p[0], "Consumed": [x for x in p[1] if x not in p[0]]}
        )
    return st.dictionaries(
        st.sampled_from(["2026-11-01", "Rules learned", "Known for", "Past interactions"]),
        st.lists(_word, unique=True, max_size=4),
        max_size=3,
    )


KINDS = {
    "commitments": "running_commitments.md",
    "carry_forward": "carry_forward.md",
    "voice_calibration": "voice_calibration.md",
    "relationship": "relationship_riley.md",
    "callbacks": "running_jokes_and_callbacks.md",
    "self_observations": "self_observations.md",
    "philosophical_threads": "philosophical_threads.md",
    "unsent_drafts": "unsent_drafts.md",
    "session_digest": "session_digest_2026-11-24.md",
}


def _merge_and_check(path: str, b: bytes | None, o: bytes, t: bytes, **times: float) -> bytes:
    result = merge(path, b, o, t, **times)
    conflicts = [result.conflict] if result.conflict else []
    kept = [result.discarded] if result.discarded is not None else []
    oracle.check(path, b, o, t, result.content, conflicts, kept)
    blank_end = (b"\n\n", b"\r\n\r\n")
    if not o.endswith(blank_end) and not t.endswith(blank_end):  # re-trial item 12
        assert not result.content.endswith(blank_end), result.content
    # the merge is symmetric in what it keeps, and merging its own result again is a no-op
    again = merge(path, b, result.content, result.content)
    assert again.content == result.content
    return result.content


@pytest.mark.parametrize("kind", sorted(KINDS))
@SETTINGS
@given(data=st.data(), crlf=st.booleans())
def test_structured_merges_lose_nothing(data, kind, crlf):
    model = data.draw(_base(kind))
    strategy = "sections" if kind not in ("commitments", "carry_forward") else kind
    ours = apply(model, data.draw(_edits), "ours", strategy)
    theirs = apply(model, data.draw(_edits), "theirs", strategy)
    b = render(kind, model, crlf=crlf)
    o, t = render(kind, ours, crlf=crlf), render(kind, theirs, crlf=crlf)
    _merge_and_check(KINDS[kind], b, o, t)
    _merge_and_check(KINDS[kind], b, t, o)


@SETTINGS
@given(data=st.data())
def test_the_same_commitment_id_minted_on_two_devices_keeps_both(data):
    model = data.draw(_base("commitments"))
    ours = {h: list(v) for h, v in model.items()}
    theirs = {h: list(v) for h, v in model.items()}
    ours["Open"].append("[c-2026-11-25-1] send Ana the deck")
    theirs["Open"].append("[c-2026-11-25-1] book the venue")
    b, o, t = (render("commitments", m) for m in (model, ours, theirs))
    out = _merge_and_check("running_commitments.md", b, o, t).decode()
    assert "send Ana the deck" in out and "book the venue" in out
    assert merge("running_commitments.md", b, o, t).conflict


_links = st.lists(st.sampled_from("abcdefg"), unique=True, max_size=5)
_keys = st.sampled_from("abcdefghij")


@SETTINGS
@given(
    base=_links,
    ours_edit=st.lists(st.tuples(st.sampled_from(["add", "edit", "remove"]), _keys)),
    theirs_edit=st.lists(st.tuples(st.sampled_from(["add", "edit", "remove"]), _keys)),
    frontmatter=st.booleans(),
    crlf=st.booleans(),
)
def test_memory_index_merges_lose_nothing(base, ours_edit, theirs_edit, frontmatter, crlf):
    def index(lines: dict[str, str]) -> bytes:
        body = "# Memory index\n\n" + "".join(
            f"- [{k.upper()}](user_{k}.md) — {v}\n" for k, v in lines.items()
        )
        text = memory.render({"name": "index"}, body) if frontmatter else body
        return (text.replace("\n", "\r\n") if crlf else text).encode()

    def edit(tag: str, edits: list[tuple[str, str]]) -> dict[str, str]:
        lines = {k: f"about {k}" for k in base}
        for op, k in edits:
            if op == "remove":
                lines.pop(k, None)
            elif op == "edit" and k in lines:
                lines[k] = f"{lines[k]}, {tag} edit"
            elif op == "add" and k not in lines:
                lines[k] = f"{tag} added {k}"
        return lines

    b = index({k: f"about {k}" for k in base})
    o, t = index(edit("ours", ours_edit)), index(edit("theirs", theirs_edit))
    out = _merge_and_check("MEMORY.md", b, o, t)
    if frontmatter:
        assert out.startswith(b"---"), out  # issue 16, defect 24


def test_index_line_edited_on_both_sides_keeps_both_and_reports_it():
    b = b"# Memory index\n\n- [Pat](user_pat.md) - who Pat is\n"
    o = b"# Memory index\n\n- [Pat](user_pat.md) - Pat, the PM\n"
    t = b"# Memory index\n\n- [Pat](user_pat.md) - Pat, prefers email\n"
    result = merge("MEMORY.md", b, o, t)
    assert b"Pat, the PM" in result.content and b"Pat, prefers email" in result.content
    assert result.conflict and "user_pat.md" in result.conflict


@SETTINGS
@given(
    ours_body=st.text("abc \n", min_size=1, max_size=20),
    theirs_body=st.text("xyz \n", min_size=1, max_size=20),
    ours_mtime=st.floats(1e9, 2e9),
    theirs_mtime=st.floats(1e9, 2e9),
    nested=st.booleans(),
)
def test_fact_edited_on_both_sides_the_later_edit_wins(
    ours_body, theirs_body, ours_mtime, theirs_mtime, nested
):
    b = memory.render({"name": "role", "description": "d", "type": "user"}, "base\n").encode()
    o = memory.render({"name": "role", "description": "d", "type": "user"}, ours_body).encode()
    t = memory.render({"name": "role", "description": "d", "type": "user"}, theirs_body).encode()
    result = merge("user_role.md", b, o, t, ours_mtime=ours_mtime, theirs_mtime=theirs_mtime)
    oracle.check(
        "user_role.md", b, o, t, result.content, [result.conflict or ""], [result.discarded or b""]
    )
    if o != t and ours_mtime != theirs_mtime:
        assert result.content == (o if ours_mtime > theirs_mtime else t)
        assert result.discarded == (t if ours_mtime > theirs_mtime else o)
        assert "edited later" in (result.conflict or "")


def test_fact_modified_in_claude_codes_nested_frontmatter_beats_mtimes():
    def fact(body: str, when: str) -> bytes:
        meta = {"name": "pat", "description": "d", "metadata": {"type": "user", "modified": when}}
        return memory.render(meta, body).encode()

    b = fact("base\n", "2026-11-24T05:00:00.000Z")
    o = fact("ours\n", "2026-11-24T05:47:59.752Z")  # edited later, file touched earlier
    t = fact("theirs\n", "2026-11-24T05:47:56.000Z")
    result = merge("user_pat.md", b, o, t, ours_mtime=1.0, theirs_mtime=2.0)
    assert result.content == o and result.discarded == t and result.ours_won


def test_a_hand_edit_that_left_modified_alone_is_timed_by_its_mtime():
    meta = {"name": "pat", "description": "d", "type": "user", "modified": "2026-11-20"}
    b = memory.render(meta, "base\n").encode()
    o = memory.render(meta, "hand edit\n").encode()  # `modified` inherited from base
    t = memory.render({**meta, "modified": "2026-11-21"}, "agent edit\n").encode()
    late = 1_900_000_000.0  # 2030: the hand edit came after the agent's
    result = merge("user_pat.md", b, o, t, ours_mtime=late)
    assert result.content == o


def test_two_relationship_files_made_from_the_template_merge_without_placeholders():
    from memsync.memory.newfile import create

    def made(tmp: str, description: str, fill: dict[str, str]) -> bytes:
        from pathlib import Path

        path = create(Path(tmp), "relationship", "riley")
        text = path.read_text().replace("Who they are in one line", description)
        for placeholder, value in fill.items():
            text = text.replace(placeholder, value)
        return text.encode()

    import tempfile

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        ours = made(a, "Riley, the PM on Atlas", {"- What they are known for.": "- Ships fast."})
        theirs = made(b, "Riley from design", {"- What works with them.": "- Short messages."})
    result = merge("relationship_riley.md", None, ours, theirs)
    out = result.content.decode()
    doc = memory.parse(out)
    assert "Riley, the PM on Atlas" in doc.meta["description"]
    assert "Riley from design" in doc.meta["description"]
    assert "- What they are known for." not in out and "- What works with them." not in out
    assert "- Ships fast." in out and "- Short messages." in out
    assert out.count("## Known for") == 1
    # the template is the common ancestor of two files made from it
    virtual = template_base("relationship", ours.decode(), theirs.decode()).encode()
    oracle.check("relationship_riley.md", virtual, ours, theirs, result.content, [result.conflict])


def test_a_section_compacted_away_takes_only_what_the_other_side_added_as_a_rule():
    """The section folded on one side does not come back with the other side's addition:
    the addition is folded too, one more rule (findings 19 and 4 of issue 16's re-trial)."""
    kind = "voice_calibration"
    b = render(kind, {"Rules learned": [], "2026-10-01": ["too formal", "one-liner landed"]})
    o = render(kind, {"Rules learned": ["2026-10-01: too formal", "2026-10-01: one-liner landed"]})
    late = ["too formal", "one-liner landed", "late"]
    t = render(kind, {"Rules learned": [], "2026-10-01": late})
    for ours, theirs in ((o, t), (t, o)):
        out = _merge_and_check("voice_calibration.md", b, ours, theirs).decode()
        tree = sections.parse(memory.parse(out).body)
        assert tree.find("2026-10-01") is None, out
        rules = [sections.normalise(e) for e in tree.find("Rules learned").entries if e.strip()]
        assert rules == [
            "- 2026-10-01: too formal",
            "- 2026-10-01: one-liner landed",
            "- 2026-10-01: late",
        ], out


def test_a_carry_forward_item_consumed_here_and_reworded_there_is_consumed():
    kind = "carry_forward"
    b = render(kind, {"Pending": ["thank Ana", "raise the analogy"], "Consumed": []})
    o = render(kind, {"Pending": ["raise the analogy"], "Consumed": ["thank Ana"]})
    t = render(kind, {"Pending": ["thank Ana for the review", "raise the analogy"], "Consumed": []})
    for ours, theirs in ((o, t), (t, o)):
        out = _merge_and_check("carry_forward.md", b, ours, theirs).decode()
        tree = sections.parse(memory.parse(out).body)
        assert "thank Ana" not in "".join(tree.find("Pending").entries)
        assert "thank Ana" in "".join(tree.find("Consumed").entries)


def test_each_side_removing_the_section_the_other_kept_leaves_no_blank_line():
    """Found by the generated test: A removes section A, B removes section B."""
    kind = "voice_calibration"
    b = render(kind, {"A": ["alpha alpha alpha"], "B": ["alpha alpha alpha", "beta"]})
    o = render(kind, {"B": ["alpha alpha alpha", "beta"]})
    t = render(kind, {"A": ["alpha alpha alpha"]})
    for ours, theirs in ((o, t), (t, o)):
        assert not _merge_and_check("voice_calibration.md", b, ours, theirs).endswith(b"\n\n")


def test_compaction_then_a_merge_then_compaction_again_adds_no_rule_twice():
    """Issue 16, defect 10: A compacts while B adds a note to an old dated section."""
    from datetime import date

    from memsync.retention.file_plans import plan_voice
    from memsync.retention.policy import Policy

    kind = "voice_calibration"
    base = render(kind, {"Rules learned": ["keep it short"], "2026-09-01": ["too formal", "pun"]})
    compacted, _ = plan_voice(base.decode(), date(2026, 11, 24), Policy())
    added = render(
        kind, {"Rules learned": ["keep it short"], "2026-09-01": ["too formal", "pun", "late"]}
    )
    merged = _merge_and_check("voice_calibration.md", base, compacted, added)
    # the merge folded the note already (as the compaction did the rest): nothing left to do
    assert plan_voice(merged.decode(), date(2026, 11, 25), Policy()) is None
    rules = sections.parse(memory.parse(merged.decode()).body).find("Rules learned").entries
    texts = [sections.normalise(e) for e in rules]
    assert len(texts) == len(set(texts)) == 4, texts
    # and a compaction run on a file whose rules are already there is a no-op on them
    both = render(
        kind,
        {"Rules learned": ["- 2026-09-01: too formal"[2:]], "2026-09-01": ["too formal"]},
    )
    out, _ = plan_voice(both.decode(), date(2026, 11, 24), Policy())
    assert out.decode().count("2026-09-01: too formal") == 1


def test_commitment_ids_minted_on_two_devices_the_same_day_differ(tmp_path):
    """Issue 16, defect 1: `[c-DAY-1]` on both devices; now a random part."""
    from datetime import date

    from memsync.claude.digest import Commitment, merge_commitments_file
    from memsync.memory import ids
    from memsync.memory.newfile import create

    day = date(2026, 11, 25)
    minted = []
    for device in ("a", "b"):
        text = create(tmp_path / device, "commitments", today=day).read_text()
        minted += ids.ids_in(text)
        out, _ = merge_commitments_file(None, [Commitment("send the deck", "open")], day)
        minted += ids.ids_in(out or "")
    assert len(minted) == len(set(minted)) == 6
    assert all(re.fullmatch(r"c-2026-11-25-[a-z2-9]{4}", cid) for cid in minted)
    assert ids.ID.search("- [c-2026-11-25-1] an old id").group(1) == "c-2026-11-25-1"


def test_a_conflict_names_where_never_what():
    """Conflicts are kept in meta.json and on the remote, where `forget --match` cannot
    reach a quoted entry: they name the section, the id or the link, not the text."""
    kind = "relationship"
    b = render(kind, {"Known for": ["runs the Atlas launch"]})
    o = render(kind, {"Known for": ["runs the Atlas launch, privately unhappy"]})
    t = render(kind, {"Known for": ["runs the Atlas launch, leaving in May"]})
    result = merge("relationship_riley.md", b, o, t)
    assert result.conflict and '"Known for"' in result.conflict
    for word in ("Atlas", "unhappy", "May"):
        assert word not in result.conflict


_WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
Tree = list[tuple[str, list[str], dict[str, list[str]]]]  # heading, entries, subsections


# the types made of titled sections, and which side makes the change a test is about
SECTION_KINDS = st.sampled_from(["relationship", "philosophical_threads", "self_observations"])
SIDES = st.sampled_from(["ours", "theirs"])


def _random_tree(rnd) -> Tree:
    def text() -> str:  # short texts from few words: repeated lines happen, as in real files
        return " ".join(rnd.choice(_WORDS) for _ in range(3))

    def subsections() -> dict[str, list[str]]:
        names = rnd.sample("xy", rnd.randint(0, 2))
        return {s: [text() for _ in range(rnd.randint(0, 2))] for s in names}

    return [
        (h, [text() for _ in range(rnd.randint(0, 3))], subsections())
        for h in rnd.sample("ABC", rnd.randint(0, 3))
    ]


def _mutate(tree: Tree, tag: str, rnd) -> Tree:
    out = [(h, list(e), {k: list(v) for k, v in s.items()}) for h, e, s in tree]
    for n in range(rnd.randint(0, 5)):
        op = rnd.choice(["add", "reword", "remove", "sub", "drop_section", "add_section"])
        if op == "add_section" or not out:
            out.append((f"{tag}{n}", [f"{tag} new {n}"], {}))
            continue
        section = rnd.choice(out)
        _, entries, subs = section
        if op == "add":
            entries.insert(rnd.randint(0, len(entries)), f"{tag} added {n}")
        elif op == "reword" and entries:
            k = rnd.randrange(len(entries))
            entries[k] += f" ({tag} {n})"
        elif op == "remove" and entries:
            entries.pop(rnd.randrange(len(entries)))
        elif op == "sub" and subs:
            subs[rnd.choice(sorted(subs))].append(f"{tag} sub {n}")
        elif op == "drop_section":
            out.remove(section)
    return out


def _render_tree(tree: Tree, kind: str) -> bytes:
    body = ""
    for heading, entries, subs in tree:
        body += f"\n## {heading}\n\n" + "".join(f"- {e}\n" for e in entries)
        for sub, items in subs.items():
            body += f"\n### {sub}\n\n" + "".join(f"- {e}\n" for e in items)
    return memory.render({"name": "n", "description": "d", "type": kind}, body).encode()


@SETTINGS
@given(
    rnd=st.randoms(use_true_random=False),
    kind=st.sampled_from(["voice_calibration", "relationship", "self_observations"]),
    no_base=st.booleans(),
)
def test_section_trees_with_subsections_and_repeated_lines_lose_nothing(rnd, kind, no_base):
    path = KINDS.get(kind, f"{kind}.md")
    tree = _random_tree(rnd)
    b = None if no_base else _render_tree(tree, kind)
    o = _render_tree(_mutate(tree, "ours", rnd), kind)
    t = _render_tree(_mutate(tree, "theirs", rnd), kind)
    _merge_and_check(path, b, o, t)


def test_two_indexes_without_a_base_keep_every_line_even_the_templates():
    """The index template's lines are real entries: a device whose MEMORY.md never had them
    did not remove them."""
    from memsync.util import resources

    ours = resources.template_text("MEMORY.md").encode()
    theirs = b"# Memory\n\n- [Pat](user_pat.md) - who Pat is\n"
    out = _merge_and_check("MEMORY.md", None, ours, theirs)
    assert b"(carry_forward.md)" in out and b"(running_commitments.md)" in out
    assert b"(user_pat.md)" in out


_CF = {
    "Pending": [
        "Ask Pat about the Q3 numbers.",
        "Mention the new linter config.",
        "Check whether the venue replied.",
    ],
    "Consumed": ["Raised the budget question (2026-11-20)."],
}


def _cf(pending: list[str], consumed: list[str]) -> bytes:
    return render("carry_forward", {"Pending": pending, "Consumed": consumed})


def _places(out: bytes) -> tuple[str, str]:
    tree = sections.parse(memory.parse(out.decode()).body)
    return "".join(tree.find("Pending").entries), "".join(tree.find("Consumed").entries)


def test_consumed_here_reworded_there_while_there_also_consumes_another_is_consumed():
    """Issue 16 re-trial, item 1: the reword is found by its words, not by position."""
    q3, linter, venue = _CF["Pending"]
    b = _cf(_CF["Pending"], _CF["Consumed"])
    o = _cf([linter, venue], [*_CF["Consumed"], q3])
    t = _cf([q3[:-1] + " and the forecast.", venue], [*_CF["Consumed"], linter])
    for ours, theirs in ((o, t), (t, o)):
        out = _merge_and_check("carry_forward.md", b, ours, theirs)
        pending, consumed = _places(out)
        assert "Q3" not in pending and "Q3" in consumed and "linter" in consumed


def test_an_item_replaced_in_place_by_a_new_one_is_an_addition_not_a_reword():
    """Issue 16 re-trial, item 2: "Book flights" where Q3 was is a new item, never lost."""
    q3, linter, venue = _CF["Pending"]
    b = _cf(_CF["Pending"], _CF["Consumed"])
    o = _cf([linter, venue], [*_CF["Consumed"], q3])
    t = _cf(["Book flights for the offsite.", linter, venue], _CF["Consumed"])
    for ours, theirs in ((o, t), (t, o)):
        out = _merge_and_check("carry_forward.md", b, ours, theirs)
        pending, consumed = _places(out)
        assert "Book flights for the offsite." in pending and "Q3" in consumed


def test_delivered_on_both_sides_with_different_notes_keeps_both_and_reports_it():
    """Issue 16 re-trial, item 3, for commitments and carry-forward alike."""
    cid = "[c-2026-11-24-k3f9] send Ana the deck"
    b = render("commitments", {"Open": [cid], "Delivered": []})
    o = render("commitments", {"Open": [], "Delivered": [f"{cid} - sent by email"]})
    t = render("commitments", {"Open": [], "Delivered": [f"{cid} - sent via Slack"]})
    result = merge("running_commitments.md", b, o, t)
    assert b"sent by email" in result.content and b"sent via Slack" in result.content
    assert result.conflict and "c-2026-11-24-k3f9" in result.conflict
    q3 = _CF["Pending"][0]
    b = _cf([q3], [])
    o, t = _cf([], [f"{q3} Raised by email."]), _cf([], [f"{q3} Raised on Slack."])
    result = merge("carry_forward.md", b, o, t)
    assert b"by email" in result.content and b"on Slack" in result.content
    assert result.conflict
    _merge_and_check("carry_forward.md", b, o, t)


def test_reworded_differently_on_both_sides_is_a_conflict_even_with_another_edit():
    """Issue 16 re-trial, item 4: one side also consumes another item."""
    q3, linter, venue = _CF["Pending"]
    b = _cf(_CF["Pending"], [])
    o = _cf([q3[:-1] + " and the forecast.", venue], [linter])
    t = _cf([q3[:-1] + " before Friday.", linter, venue], [])
    result = merge("carry_forward.md", b, o, t)
    assert result.conflict
    _merge_and_check("carry_forward.md", b, o, t)


def test_an_index_line_replaced_by_another_files_line_names_the_edited_file():
    """Issue 16 re-trial, item 8: link targets are identities, never paired by position."""
    b = b"# Memory\n\n- [Tone](feedback_tone.md) - keep it short\n"
    o = b"# Memory\n\n- [Tone](feedback_tone.md) - keep it short, no emoji\n"
    t = b"# Memory\n\n- [Dogs](user_dogs.md) - two dogs\n"
    for ours, theirs in ((o, t), (t, o)):
        result = merge("MEMORY.md", b, ours, theirs)
        out = _merge_and_check("MEMORY.md", b, ours, theirs)
        assert b"no emoji" in out and b"two dogs" in out
        assert "user_dogs.md" not in (result.conflict or "")


@pytest.mark.parametrize("base", ["template", "none"])
def test_two_carry_forwards_from_the_template_each_filled_in_is_no_conflict(base):
    """Re-trial item 10: each device replaced the placeholder item with its own."""
    from memsync.util import resources

    template = resources.template_text("carry_forward.md")
    placeholder = "- Something to raise next time, and why it matters."
    o = template.replace(placeholder, "- Ask Pat about the Q3 numbers.").encode()
    t = template.replace(placeholder, "- Book the venue for the offsite.").encode()
    b = template.encode() if base == "template" else None
    result = merge("carry_forward.md", b, o, t)
    assert result.conflict is None
    pending, _ = _places(result.content)
    assert "Q3 numbers" in pending and "Book the venue" in pending and "Something" not in pending
    _merge_and_check("carry_forward.md", b, o, t)


@pytest.mark.parametrize("later", ["ours", "theirs"])
def test_a_date_only_modified_set_the_same_day_on_both_sides_is_timed_by_the_mtimes(later):
    """Re-trial item 5: `modified: 2026-11-24` on both sides ties; the mtimes (that day)
    tell the edits apart, and what the other device reads is true."""
    from datetime import datetime as dt

    from memsync.memory.merge import describe_for_others

    def fact(body: str, when: str) -> bytes:
        meta = {"name": "pat", "description": "d", "metadata": {"type": "user", "modified": when}}
        return memory.render(meta, body).encode()

    b, o, t = fact("base\n", "2026-11-20"), fact("ours\n", "2026-11-24"), fact("zz\n", "2026-11-24")
    noon = dt(2026, 11, 24, 12).timestamp()
    times = (noon + 60, noon) if later == "ours" else (noon, noon + 60)
    result = merge("user_pat.md", b, o, t, ours_mtime=times[0], theirs_mtime=times[1])
    assert result.content == (o if later == "ours" else t)
    assert "edited later" in result.conflict and not result.tied
    assert result.edited == noon + 60
    # no times at all: a tie, and neither device is told a time that was not measured
    tie = merge("user_pat.md", b, o, t)
    assert tie.tied and "could not be told apart" in tie.conflict
    assert "could not be told apart" in describe_for_others("user_pat.md", tie)
    assert "00:00:00" not in describe_for_others("user_pat.md", tie)


def test_new_fact_files_get_a_full_modified_time_and_digests_a_unique_session(tmp_path):
    """Re-trial items 5 and 9."""
    from memsync.memory.newfile import create

    text = create(tmp_path / "a", "user", "pat").read_text()
    assert re.search(r"modified: '?\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", text), text
    digests = [create(tmp_path / d, "session_digest").read_text() for d in ("a", "b")]
    headings = [re.findall(r"^## Session .+$", x, re.M) for x in digests]
    assert len(headings[0]) == len(headings[1]) == 1 and headings[0] != headings[1]
    # two devices' sessions with the same note stay two sessions when merged
    arc = "- What we set out to do, what happened, what was decided."
    ours, theirs = (x.replace(arc, "- Fixed the cron.").encode() for x in digests)
    result = merge("session_digest_2026-11-24.md", None, ours, theirs)
    text = result.content.decode()
    assert text.count("- Fixed the cron.") == 2 and text.count("## Session") == 2
    assert result.conflict is None


def test_compacting_a_crlf_voice_file_keeps_crlf_and_adds_no_blank_lines():
    """Re-trial item 6: compaction keeps CRLF as merges do; the same text as with LF."""
    from datetime import date

    from memsync.retention.compact import plan

    lf = render(
        "voice_calibration",
        {"Rules learned": ["keep it short"], "2026-09-01": ["too formal", "pun"], "2026-11-20": []},
    )
    crlf = lf.replace(b"\n", b"\r\n")
    (lf_action,) = plan({"voice_calibration.md": lf}, date(2026, 11, 24))
    (crlf_action,) = plan({"voice_calibration.md": crlf}, date(2026, 11, 24))
    assert crlf_action.content == lf_action.content.replace(b"\n", b"\r\n")
    assert b"\n\n\n" not in lf_action.content


def test_a_rule_reworded_on_one_device_while_the_other_folds_it_stays_one_rule():
    """Re-trial item 7: A compacts; B rewords an entry of the old section; after the merge
    Rules learned holds the reworded rule only."""
    from datetime import date

    from memsync.retention.file_plans import plan_voice
    from memsync.retention.policy import Policy

    kind = "voice_calibration"
    old = {"Rules learned": ["keep it short"], "2026-09-01": ["Joked during an outage.", "pun"]}
    base = render(kind, old)
    compacted, _ = plan_voice(base.decode(), date(2026, 11, 24), Policy())
    reworded = render(kind, {**old, "2026-09-01": ["Joked during an outage; it fell flat.", "pun"]})
    merged = _merge_and_check("voice_calibration.md", base, compacted, reworded)
    # the merge folds the rewording in place of its rule: no compaction left to do
    assert plan_voice(merged.decode(), date(2026, 11, 25), Policy()) is None
    rules = sections.parse(memory.parse(merged.decode()).body).find("Rules learned").entries
    text = "".join(rules)
    assert "it fell flat" in text and "Joked during an outage.\n" not in text, text
    assert len([e for e in rules if e.strip()]) == 3, rules


def test_a_reword_is_found_whatever_its_rank_among_the_changed_entries():
    """Found by the generated test: a side that removed two entries and reworded the third."""
    kind = "relationship"
    b = render(kind, {"2026-11-01": ["thank Ana", "ship the filter", "ask about Lisbon"]})
    o = render(kind, {"2026-11-01": ["ship the filter", "ask about Lisbon ours2"]})
    t = render(kind, {"2026-11-01": ["ask about Lisbon theirs2"]})
    for ours, theirs in ((o, t), (t, o)):
        assert merge("relationship_riley.md", b, ours, theirs).conflict
        _merge_and_check("relationship_riley.md", b, ours, theirs)


def test_a_link_listed_twice_is_judged_line_by_line():
    """After a conflict kept both versions of an index line, one link stands for two lines:
    the oracle tells them apart by text, not by order (found by the three-device machine:
    one side forgot the first line, the other kept both; the second line alone is right)."""
    base = b"# Memory\n- [Topic](topic.md) - first\n"
    ours = b"# Memory\n"
    theirs = b"# Memory\n- [Topic](topic.md) - first\n- [Topic](topic.md) - second\n"
    result = b"# Memory\n- [Topic](topic.md) - second\n"
    assert oracle.violations("MEMORY.md", base, ours, theirs, result) == []
    kept = oracle.violations("MEMORY.md", base, ours, theirs, theirs)
    assert any("removed on one side, untouched" in p for p in kept)
    lost = oracle.violations("MEMORY.md", base, ours, theirs, ours)
    assert lost
    out = merge("MEMORY.md", base, ours, theirs)
    assert oracle.violations("MEMORY.md", base, ours, theirs, out.content) == []


@pytest.mark.parametrize("path", ["carry_forward.md", "session_digest_2026-11-20.md"])
def test_an_entry_reworded_on_one_side_and_replaced_on_the_other_keeps_both_and_says_so(path):
    """Fresh-eyes (merges round), findings 1 and 2: one device rewords an item, the other
    replaces it in place with one of other words. Both stay (an edit beats a removal, an
    addition is kept), and, as when both replace it, the user is told: a conflict."""
    q3, linter, venue = _CF["Pending"]
    reworded = q3[:-1] + " and the forecast."
    replaced = "Book flights to Lisbon for the March offsite."
    if path == "carry_forward.md":
        b = _cf(_CF["Pending"], _CF["Consumed"])
        o = _cf([reworded, linter, venue], _CF["Consumed"])
        t = _cf([replaced, linter, venue], _CF["Consumed"])
    else:

        def day(items: list[str]) -> bytes:
            return render("session_digest", {"Session 09:00 ab12": items})

        b, o, t = (
            day(_CF["Pending"]),
            day([reworded, linter, venue]),
            day([replaced, linter, venue]),
        )
    for ours, theirs in ((o, t), (t, o)):
        out = _merge_and_check(path, b, ours, theirs)
        assert reworded.encode() in out and replaced.encode() in out and q3.encode() not in out
        assert merge(path, b, ours, theirs).conflict
    # replaced on one side only, the other side untouched: a plain edit, no conflict
    assert merge(path, b, b, t).conflict is None


def test_an_entry_moved_to_another_section_while_the_other_side_rewords_it_is_said():
    """Fresh-eyes (merges round), finding 3: A moves "Direct, prefers written summaries."
    from Register to Patterns to keep; B rewords it where it was. Sections merge one by one,
    so the old words stand under Patterns and the new under Register: both are kept (an edit
    beats a removal, the move is an addition) and the user is told, a conflict."""
    entry = "Direct, prefers written summaries."
    b = render("relationship", {"Register": [entry, "Calm."], "Patterns to keep": ["Agenda."]})
    o = render("relationship", {"Register": ["Calm."], "Patterns to keep": ["Agenda.", entry]})
    reworded = "Direct, prefers short written summaries in Slack."
    t = render("relationship", {"Register": [reworded, "Calm."], "Patterns to keep": ["Agenda."]})
    for ours, theirs in ((o, t), (t, o)):
        out = _merge_and_check("relationship_riley.md", b, ours, theirs)
        assert entry.encode() in out and reworded.encode() in out
        result = merge("relationship_riley.md", b, ours, theirs)
        assert result.conflict and "Register" in result.conflict and entry not in result.conflict
    # a move alone, or a rewording alone, is no conflict
    assert merge("relationship_riley.md", b, o, b).conflict is None
    assert merge("relationship_riley.md", b, b, t).conflict is None


def test_a_field_changed_on_both_sides_is_not_said_to_be_in_the_file_twice():
    """Fresh-eyes (the "is it done?" round), finding 6: two `relationship_riley.md` with
    `role: manager` and `role: peer` said "both versions are in the file (... the field
    `role`)", but a field holds one value: the other is in local history, as it says now."""
    b = render("relationship", {"Register": ["Calm."]}, {"role": "lead"})
    o = render("relationship", {"Register": ["Calm."]}, {"role": "manager"})
    t = render("relationship", {"Register": ["Calm."]}, {"role": "peer"})
    result = merge("relationship_riley.md", b, o, t, ours_mtime=2.0, theirs_mtime=1.0)
    assert result.conflict is not None and result.discarded == t
    assert "the field `role`" in result.conflict, result.conflict
    assert "both versions are in the file" not in result.conflict, result.conflict
    assert "local history" in result.conflict


def test_an_entry_moved_to_two_different_sections_is_said():
    """Fresh-eyes s30e, finding 3: A moves an entry, as it was, from Failure modes to What
    has worked, B to Open questions. It stands in both places (each move is a removal and an
    addition), and the user is told, a conflict; both moving it to the same place is none."""
    entry = "Over-explains when unsure."
    model = {"Failure modes": [entry, "Rushes."], "What has worked": [], "Open questions": []}
    b = render("self_observations", model)
    o = render(
        "self_observations", {**model, "Failure modes": ["Rushes."], "What has worked": [entry]}
    )
    t = render(
        "self_observations", {**model, "Failure modes": ["Rushes."], "Open questions": [entry]}
    )
    for ours, theirs in ((o, t), (t, o)):
        _merge_and_check("self_observations.md", b, ours, theirs)
        result = merge("self_observations.md", b, ours, theirs)
        assert result.content.count(entry.encode()) == 2
        assert result.conflict and entry not in result.conflict
    assert merge("self_observations.md", b, o, o).conflict is None


@SETTINGS
@given(
    rnd=st.randoms(use_true_random=False),
    kind=SECTION_KINDS,
    renamer=SIDES,
)
def test_a_section_renamed_on_one_side_holds_what_the_other_side_did_under_it(rnd, kind, renamer):
    """Fresh-eyes s32c, R1, and s33a, N3 and N5: one device renames a section (its title
    reworded, or retitled in other words) while the other adds to it, rewords or removes an
    entry in it, or edits a subsection. The result is one section under the new title
    holding the other side's edits, exactly as the other side left it: the old title does
    not come back as a second section, nor an entry the other side removed, and there is no
    conflict: nothing was changed twice."""
    path = KINDS.get(kind, f"{kind}.md")
    tree = [t for t in _random_tree(rnd) if t[1]] or [("A", ["alpha beta gamma"], {})]
    name = rnd.randrange(len(tree))
    heading = tree[name][0]
    title = rnd.choice([f"{heading} revisited", f"Retitled {rnd.randrange(100)}"])
    renamed = [(title if i == name else h, e, s) for i, (h, e, s) in enumerate(tree)]
    edited = _mutate([tree[name]], "edit", rnd)
    if [h for h, _, _ in edited] != [heading]:  # a section dropped or added: not this case
        edited = [tree[name]]
    other = [edited[0] if i == name else t for i, t in enumerate(tree)]
    b = _render_tree(tree, kind)
    o, t = (renamed, other) if renamer == "ours" else (other, renamed)
    result = merge(path, b, _render_tree(o, kind), _render_tree(t, kind))
    want = [(title, *edited[0][1:]) if i == name else x for i, x in enumerate(tree)]
    assert _shape(result.content) == _shape(_render_tree(want, kind))
    assert result.conflict is None, result.conflict


@SETTINGS
@given(
    rnd=st.randoms(use_true_random=False),
    kind=SECTION_KINDS,
    renamer=SIDES,
)
def test_a_section_renamed_on_one_side_and_dissolved_on_the_other_holds_each_entry_once(
    rnd, kind, renamer
):
    """Fresh-eyes s33c, G3: one device renames a section (and may add to it) while the other
    dissolves it: moves some of its entries, as they were, into other sections and drops the
    rest with the title. Each entry is in the result once: a moved one where it was moved,
    a dropped one nowhere (a removal beats an entry left alone), an addition under the new
    title, which stays (a rename is a change, and a change beats a removal); no conflict."""
    path = KINDS.get(kind, f"{kind}.md")
    count = iter(range(1000))
    tree = [
        (h, [f"entry {next(count)} {rnd.choice(_WORDS)}" for _ in range(rnd.randint(1, 3))], {})
        for h in rnd.sample("ABCD", rnd.randint(2, 4))
    ]
    name = rnd.randrange(len(tree))
    heading, entries, _ = tree[name]
    title = rnd.choice([f"{heading} revisited", f"Retitled {rnd.randrange(100)}"])
    added = ["added by the renamer"] if rnd.random() < 0.5 else []
    renamed = [
        (title, e + added, s) if i == name else (h, e, s) for i, (h, e, s) in enumerate(tree)
    ]
    moved = {e: rnd.choice([i for i in range(len(tree)) if i != name]) for e in entries}
    moved = {e: to for e, to in moved.items() if rnd.random() < 0.6}
    dissolved = [
        (h, e + [x for x, to in moved.items() if to == i], s)
        for i, (h, e, s) in enumerate(tree)
        if i != name
    ]
    b = _render_tree(tree, kind)
    o, t = (renamed, dissolved) if renamer == "ours" else (dissolved, renamed)
    result = merge(path, b, _render_tree(o, kind), _render_tree(t, kind))
    want = dissolved[:name] + [(title, added, {})] + dissolved[name:]
    assert _shape(result.content) == _shape(_render_tree(want, kind))
    assert result.conflict is None, result.conflict


@pytest.mark.parametrize("renamer", ["ours", "theirs"])
def test_a_title_only_section_retitled_while_the_other_side_writes_its_first_entry(renamer):
    """Fresh-eyes s33b, F3: a thread with a title and nothing under it yet, retitled closely
    on one device while the other writes its first entry: with no entry to tell, the merge
    took them for two threads (the new title empty, the old one holding the entry). A title
    much like the old one is the section renamed; one in other words stays a new section."""
    tree = [("Maps", ["a walk in the park"], {}), ("Empty thread KIWI1", [], {})]
    b = _render_tree(tree, "philosophical_threads")
    renamed = b.replace(b"## Empty thread KIWI1\n", b"## Empty thread KIWI1, revisited\n")
    written = _render_tree(
        [tree[0], ("Empty thread KIWI1", ["first raised NEWB5"], {})], "philosophical_threads"
    )
    o, t = (renamed, written) if renamer == "ours" else (written, renamed)
    result = merge("philosophical_threads.md", b, o, t)
    assert _shape(result.content)[1:] == [
        (2, "Maps", ["- a walk in the park"]),
        (2, "Empty thread KIWI1, revisited", ["- first raised NEWB5"]),
    ]
    assert result.conflict is None, result.conflict
    other = b.replace(b"## Empty thread KIWI1\n", b"## Lunch debate\n")
    o, t = (other, written) if renamer == "ours" else (written, other)
    titles = [title for _, title, _ in _shape(merge("philosophical_threads.md", b, o, t).content)]
    assert "Lunch debate" in titles and "Empty thread KIWI1" in titles, titles


@pytest.mark.parametrize("other", ["Test marathon", None], ids=["both-retitle", "one-adds"])
def test_a_digests_only_session_retitled_stays_one_session(other):
    """A day digest's only `## Session …` retitled in other words (`## Parser day`) on one
    device, and retitled otherwise or added to on the other: the retitled side, with no
    `## Session` block left, was wrapped as a session of its own, so the merge held the
    old session beside the new, every entry twice. It is the same session, renamed."""

    def digest(title: str, extra: str = "") -> bytes:
        body = f"## {title}\n\n### Arcs\n- ARC05 on item 05.{extra}\n\n### Notes\n- REL05 fine.\n"
        meta = {"name": "d", "description": "d", "type": "session_digest"}
        return memory.render(meta, body).encode()

    b = digest("Session 09:00 s05")
    t = digest(other) if other else digest("Session 09:00 s05", "\n- NEW arc")
    result = merge("session_digest_2026-10-05.md", b, digest("Parser day"), t)
    titles = [title for level, title, _ in _shape(result.content) if level == 2]
    entries = [e for _, _, es in _shape(result.content) for e in es]
    assert titles == (["Parser day / Test marathon"] if other else ["Parser day"]), titles
    assert entries.count("- ARC05 on item 05.") == 1 and entries.count("- REL05 fine.") == 1
    assert ("- NEW arc" in entries) == (other is None)
    assert (result.conflict is not None) == (other is not None), result.conflict


@SETTINGS
@given(
    kind=st.sampled_from(["commitments", "carry_forward"]),
    items=st.integers(1, 6),
    done=st.integers(0, 4),
    ours=st.sets(st.integers(0, 5)),
    theirs=st.sets(st.integers(0, 5)),
)
def test_what_either_side_moved_to_the_final_place_comes_after_what_was_there(
    kind, items, done, ours, theirs
):
    """The devices machine, seed 37: an item delivered on one side kept, in the merge, the
    place the other side left it in (Open comes first), so it stood at the top of Delivered,
    and compaction, which keeps the last ones as the most recent, trimmed it before older
    ones. Whatever either side moves to Delivered or Consumed comes after what was there, in
    the order each side appended it."""
    first, final = ("Open", "Delivered") if kind == "commitments" else ("Pending", "Consumed")

    def line(n: int) -> str:
        if kind == "commitments":
            return f"[c-2026-11-25-{n:05d}] promise number {n} for {'ab'[n % 2]}"
        return f"item number {n} about topic {n * 7}"

    open_items = [line(n) for n in range(items)]
    old = [line(100 + n) for n in range(done)]
    base = {first: open_items, final: old}

    def moved(picks: set[int]) -> dict[str, list[str]]:
        took = [x for n, x in enumerate(open_items) if n in picks]
        return {first: [x for x in open_items if x not in took], final: old + took}

    o, t = moved(ours), moved(theirs)
    path = KINDS[kind]
    result = _merge_and_check(path, render(kind, base), render(kind, o), render(kind, t))
    got = [e.removeprefix("- ") for _, title, es in _shape(result) if title == final for e in es]
    new = [x for x in (*o[final], *t[final]) if x not in old]
    assert got[: len(old)] == old and sorted(got[len(old) :]) == sorted(set(new)), got
    for side in (o, t):  # each side's order of what it moved
        mine = [x for x in got if x in side[final]]
        assert mine == side[final], (mine, side[final])


@SETTINGS
@given(
    rnd=st.randoms(use_true_random=False),
    kind=SECTION_KINDS,
    mover=SIDES,
)
def test_a_heading_moved_to_another_level_holds_what_the_other_side_did_under_it(rnd, kind, mover):
    """Fresh-eyes s33a, N4, and s33b, F5: one device moves a section's heading a level down
    (`##` to `###`, under the section before it) or up, while the other adds, rewords or
    removes entries under it. The merge matched sections under the same parent only: the
    other side's version came back at the old level beside the moved one, the title and
    entries twice. The result is the section at its new level, holding the other side's
    edits, once, and no conflict."""
    path = KINDS.get(kind, f"{kind}.md")
    count = iter(range(1000))
    heads = rnd.sample("ABCD", rnd.randint(2, 4))
    tree = [(h, [f"entry {next(count)} {rnd.choice(_WORDS)}" for _ in range(rnd.randint(1, 3))])
            for h in heads]  # fmt: skip
    n = rnd.randrange(1, len(tree))
    up = rnd.random() < 0.5  # base has it a level down already; the mover lifts it
    base_levels = [3 if (up and i == n) else 2 for i in range(len(tree))]
    moved_levels = [2 if i == n else lvl for i, lvl in enumerate(base_levels)]
    if not up:
        moved_levels[n] = 3
    edited = _mutate([(tree[n][0], tree[n][1], {})], "edit", rnd)
    if [h for h, _, _ in edited] != [tree[n][0]]:
        edited = [(tree[n][0], tree[n][1], {})]
    other = [(edited[0][0], edited[0][1]) if i == n else x for i, x in enumerate(tree)]

    def text(sections: list[tuple[str, list[str]]], levels: list[int]) -> bytes:
        body = "".join(
            f"\n{'#' * lvl} {h}\n" + "".join(f"- {e}\n" for e in entries)
            for (h, entries), lvl in zip(sections, levels, strict=True)
        )
        return memory.render({"name": "n", "description": "d", "type": kind}, body).encode()

    b, moved, edit = text(tree, base_levels), text(tree, moved_levels), text(other, base_levels)
    o, t = (moved, edit) if mover == "ours" else (edit, moved)
    result = merge(path, b, o, t)
    assert _shape(result.content) == _shape(text(other, moved_levels))
    assert result.conflict is None, result.conflict


@pytest.mark.parametrize("up", [False, True], ids=["down", "up"])
@pytest.mark.parametrize("mover", ["ours", "theirs"])
def test_a_heading_moved_a_level_on_one_side_and_renamed_on_the_other_takes_both(up, mover):
    """Fresh-eyes s34b, J2: one device moves a thread's heading a level, the other renames it.
    Compared as one line, the two were a title conflict (`## New / Old`, offering the old
    title nobody chose), the level kept or lost by the sync order. The title comes from the
    side that renamed it, the level from the side that moved it; no conflict."""
    low, high = ("##", "###") if not up else ("###", "##")
    base = f"\n## Topic\n- a topic line\n\n{low} Free will\n- ALPHA1 lunch\n- BETA2 compat\n"
    meta = {"name": "n", "description": "d", "type": "philosophical_threads"}
    moved = base.replace(f"{low} Free will", f"{high} Free will")
    renamed = base.replace(f"{low} Free will", f"{low} Determinism debate")
    o, t = (moved, renamed) if mover == "ours" else (renamed, moved)
    result = merge(
        "philosophical_threads.md",
        *(memory.render(meta, x).encode() for x in (base, o, t)),
    )
    want = base.replace(f"{low} Free will", f"{high} Determinism debate")
    assert _shape(result.content) == _shape(memory.render(meta, want).encode())
    assert result.conflict is None, result.conflict


def _shape(data: bytes) -> list[tuple[int, str, list[str]]]:
    """Each section's level, title and entries, blank lines left out."""
    tree = sections.parse(memory.parse(data.decode()).body)
    return [(n.level, n.title, [e.strip() for e in n.entries if e.strip()]) for n in tree.walk()]


def test_a_session_removed_beside_a_new_one_from_the_template_is_no_rename():
    """Two sessions a digest template began hold the same lines; one side dropping an
    unfilled session and starting another is no rename: what the other side wrote under the
    first stays under it."""
    template = (
        "\n### Arcs\n- What we set out to do, what happened, what was decided.\n\n"
        "### Open threads\n- What is still unresolved and where it was left.\n"
    )

    def digest(*sessions: str) -> bytes:
        meta = {"name": "d", "description": "d", "type": "session_digest"}
        return memory.render(meta, "".join(f"\n## Session {s}\n" for s in sessions)).encode()

    b = digest(f"09:00 a1{template}")
    o = digest(f"09:30 a2{template}")
    t = digest(f"09:00 a1{template}".replace("decided.\n", "decided.\n- ARC by the other.\n"))
    out = _merge_and_check("session_digest_2026-11-27.md", b, o, t).decode()
    assert "## Session 09:00 a1" in out and "## Session 09:30 a2" in out, out
    assert out.index("ARC by the other") > out.index("## Session 09:00 a1"), out


def test_a_section_renamed_differently_on_both_sides_is_one_section_under_both_titles():
    """Renamed on both devices, each title a rewording of the old one: one section (its
    entries once, what each side added in it), both titles in its heading, and a conflict
    naming it, as for a description both sides changed."""
    base = _render_tree([("Free will", ["we argued", "Pat sided with Hume"], {})], "relationship")
    o = base.replace(b"## Free will\n", b"## Free will, revisited\n")
    o = o.replace(b"- we argued\n", b"- we argued\n- ours added\n")
    t = base.replace(b"## Free will\n", b"## Free will and fate\n")
    t = t.replace(b"- Pat sided with Hume\n", b"- Pat sided with Hume\n- theirs added\n")
    result = merge("relationship_pat.md", base, o, t)
    assert _shape(result.content)[1:] == [
        (2, "Free will, revisited / Free will and fate",
         ["- we argued", "- ours added", "- Pat sided with Hume", "- theirs added"]),
    ]  # fmt: skip
    assert 'the title of "Free will"' in (result.conflict or ""), result.conflict


def test_a_section_retitled_on_both_sides_and_reworded_on_one_is_still_one_section():
    """Fresh-eyes s33b, F1: both devices retitle a thread in other words and one also rewords
    most of its entries. Counted by identical entries only, that side's section was no
    rename, and the thread was there twice, every entry with it, with no conflict. A
    reworded entry keeps its identity here too."""
    base = _render_tree(
        [("Free will and the lunch experiment", ["over lunch ALPHA1", "compatibilism BETA2",
          "left off GAMMA3"], {})], "philosophical_threads",
    )  # fmt: skip
    o = base.replace(b"## Free will and the lunch experiment", b"## Determinism debate")
    t = base.replace(b"## Free will and the lunch experiment", b"## Free will at lunch")
    t = t.replace(b"over lunch", b"over a long lunch").replace(b"compatibilism", b"firmly compat")
    result = merge("philosophical_threads.md", base, o, t)
    assert _shape(result.content)[1:] == [
        (2, "Determinism debate / Free will at lunch",
         ["- over a long lunch ALPHA1", "- firmly compat BETA2", "- left off GAMMA3"]),
    ]  # fmt: skip
    assert "the title of" in (result.conflict or ""), result.conflict
