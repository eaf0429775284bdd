"""The pieces of forgetting on their own: the tombstone format (version 1 still read), line
hashes and scrubbing, and history folder names that fit any file system."""

from __future__ import annotations

import json
import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memsync.memory.merge import merge
from memsync.sync.conflicts import recorded, rewrite
from memsync.sync.forgotten import (
    body_hash,
    body_line_hashes,
    holds_text,
    line_hash,
    scrub,
    text_mark,
    text_marks,
    without_marks,
)
from memsync.sync.state import Meta, State, history_folder
from memsync.sync.tombstones import read_tombstones


def test_version_1_tombstones_are_read_with_an_id_each():
    v1 = {"version": 1, "files": {"user_a.md": {"at": 1700000000.5, "device": "old"}}}
    doc = read_tombstones(json.dumps(v1).encode())
    t = doc["files"]["user_a.md"]
    assert t["at"] == 1700000000.5 and t["device"] == "old" and t["etags"] == []
    assert t["id"] == read_tombstones(json.dumps(v1).encode())["files"]["user_a.md"]["id"]
    empty = {"version": 2, "files": {}, "lines": {}, "conflicts": {}}
    assert read_tombstones(b"not json") == empty
    assert read_tombstones(b'{"files": [1], "lines": {"x": 3}}')["files"] == {}


def test_a_forgotten_file_is_known_by_its_body_under_any_name_or_frontmatter():
    """Finding 16: the tombstone of `forget FILE` carries its versions' body hashes (never
    the text), which a renamed copy shares whatever its frontmatter says now."""
    body = "Pat takes coffee black. Pat works at Zephyr.\n"
    before = f"---\nname: user_pat\ntype: user\n---\n{body}".encode()
    renamed = f"---\nname: user_patricia\nmetadata:\n  type: user\n---\n\n{body}".encode()
    assert body_hash(before) == body_hash(renamed) == body_hash(body.encode())
    assert body_hash(before) != body_hash(before.replace(b"black", b"with milk"))
    assert body_hash(b"---\nname: empty\n---\n\n") is None  # in every new file: no identity
    assert body in before.decode() and body_hash(before) not in before.decode()
    doc = {"files": {"user_pat.md": {"id": "j", "at": 1.0, "bodies": [body_hash(before), 3]}}}
    assert read_tombstones(json.dumps(doc).encode())["files"]["user_pat.md"]["bodies"] == [
        body_hash(before)
    ]


def test_a_forgotten_files_body_lines_are_hashed_without_what_identifies_nothing():
    """The lines a `forget FILE` tombstone carries: a sentence of the body, in any version
    given, but no frontmatter, heading, wordless line or memory template line (those are in
    files that never held the forgotten content); hashes, never the text."""
    template = "- [Carry-forward](carry_forward.md) — what to raise next session; read first"
    v1 = "---\nname: user_pat\ndescription: Pat's dentist\n---\n\n## Health\nPat sees Dr. Molar.\n"
    v2 = v1 + f"---\n\n{template}\nAlso prefers mornings.\n"
    got = body_line_hashes([v1.encode(), None, v2.encode()])
    assert got == {line_hash("Pat sees Dr. Molar."), line_hash("Also prefers mornings.")}
    assert not any("Molar" in h for h in got)
    doc = {"files": {"user_pat.md": {"id": "j", "at": 1.0, "lines": sorted(got)}}}
    assert read_tombstones(json.dumps(doc).encode())["files"]["user_pat.md"]["lines"] == sorted(got)


def test_scrub_takes_out_only_the_forgotten_lines():
    forgotten = {line_hash("- joked about Priya's surgery")}
    data = "## Notes\n- joked about Priya's surgery\n  - joked about Priya's surgery  \n- ok\n"
    assert scrub(data.encode(), forgotten) == b"## Notes\n- ok\n"
    assert line_hash("---") is None and line_hash("   ") is None
    assert scrub(b"\xff\xfe binary\n", forgotten) == b"\xff\xfe binary\n"


@given(st.text(min_size=1, max_size=80).filter(lambda s: "/" not in s and "\x00" not in s))
def test_history_folder_names_are_short_ascii_and_distinct(name):
    folder = history_folder(name)
    assert folder.isascii() and len(folder.encode()) <= 57 and not folder.startswith(".")
    assert history_folder(name.swapcase()) != folder or name.swapcase() == name


def test_history_of_a_long_name(tmp_path):
    state = State(tmp_path)
    long_name = "user_" + "記憶の同期についての長いメモです" * 2 + ".md"
    state.keep(long_name, b"one\n", "first")
    state.keep(long_name, b"two\n", "second")
    assert [v.path.read_bytes() for v in state.history(long_name)] == [b"two\n", b"one\n"]
    state.keep("user_a.md", b"new\n", "kept now")
    assert [v.reason for v in state.history("user_a.md")] == ["kept now"]
    assert state.history_names() == sorted([long_name, "user_a.md"])
    assert state.drop_history("user_a.md") == 1
    assert state.history_names() == [long_name]


def test_tombstones_carry_conflict_ids_and_the_record_loses_those_entries():
    doc = {"conflicts": {"c1": {"id": "job", "at": 5}, "c2": "junk"}}
    assert read_tombstones(json.dumps(doc).encode())["conflicts"] == {
        "c1": {"id": "job", "at": 5.0}
    }
    record = {
        "version": 1,
        "conflicts": [{"id": "c1", "file": "a.md", "detail": "x"}, {"id": "c2", "file": "b.md"}],
        "resolved": [{"id": "r1", "ids": ["c1"], "file": "a.md"}],
    }
    data = json.dumps(record).encode()
    assert rewrite(data, {"nope"}) == data
    clean = json.loads(rewrite(data, {"c1"}))
    assert [c["id"] for c in recorded(json.dumps(clean).encode())] == ["c2"]
    assert clean["resolved"] == record["resolved"]  # names no content


def test_an_index_conflict_names_the_link_never_the_line():
    """A conflict description outlives a forget in logs: it names where, never what."""
    base = "# Memory\n- Dana's divorce: be gentle\n- [Pat](user_pat.md) — who Pat is\n"
    ours = base.replace("be gentle", "be very gentle").replace("who Pat is", "Pat, the lead")
    theirs = base.replace("be gentle", "ask first").replace("who Pat is", "Pat, the manager")
    out = merge("MEMORY.md", base.encode(), ours.encode(), theirs.encode())
    assert out.conflict and "user_pat.md" in out.conflict
    assert "divorce" not in out.conflict and "gentle" not in out.conflict


def test_a_compacted_rule_is_forgotten_in_its_earlier_form_too():
    """Found by the machine's hunt: B's history held `- note` from before a compaction made
    it `- 2026-10-01: note`; the forget on A saw only the compacted form."""
    from memsync.admin.forget import _earlier_forms

    forms = _earlier_forms(["- 2026-10-01: asked about Priya", "- 2026-10-02 (Missed): too long"])
    assert {"- asked about Priya", "- too long", "* too long"} <= set(forms)
    assert _earlier_forms(["- plain entry", "## 2026-10-01"]) == []
    old = b"## 2026-10-01\n- asked about Priya\n- kept\n"
    assert scrub(old, {line_hash(f) for f in forms}) == b"## 2026-10-01\n- kept\n"


def test_a_rule_compacted_from_a_forgotten_entry_is_that_entry():
    """The other way round (fresh-eyes re-trial of issue 16): the forgetting device had the
    entry as written; a device that compacted it before hearing of the forget holds the rule.
    Compaction writes no words of its own, so the rule goes wherever the entry's hash does."""
    forgotten = {line_hash("- Joking about the deadline fell flat.")}
    rules = (
        b"## Rules learned\n- 2026-09-15 (Missed): Joking about the deadline fell flat.\n"
        b"- 2026-09-01 (Landed): Leading with the number worked.\n"
    )
    assert scrub(rules, forgotten) == (
        b"## Rules learned\n- 2026-09-01 (Landed): Leading with the number worked.\n"
    )
    assert scrub(b"- Joking about the deadline fell flat, again.\n", forgotten) == (
        b"- Joking about the deadline fell flat, again.\n"
    )


def test_a_reword_of_a_forgotten_line_is_found_whenever_it_was_made():
    """Report 27, finding 17: the reword's time no longer matters (the function takes none):
    the device had not heard of the forget, before or after it."""
    from memsync.sync.tombstones import _rewords_of_forgotten

    base = ["## Pending", "- Check whether the staging migration finished.", "- Book the venue"]
    here = [
        "## Pending",
        "- Check whether the staging migration finished also R2.",
        "- Book the venue",
    ]
    fresh = {line_hash(base[1]): 1.0}
    assert _rewords_of_forgotten(here, base, fresh) == {line_hash(here[1])}
    other = ["## Pending", "- Book the venue", "- Call the plumber about the sink."]
    assert _rewords_of_forgotten(other, base, fresh) == set()


def test_forget_match_keeps_the_blank_line_between_sections():
    """Report 27, finding 5: the last entry of a section carries the blank line before the
    next heading; removing the entry leaves that line."""
    from memsync.admin.forget import _without_entries

    text = "## Pending\n- Book the venue\n- Remind Pat about the dentist\n\n## Consumed\n- Done\n"
    out, removed, _ = _without_entries("carry_forward.md", text, "dentist")
    assert removed == 1
    assert out == "## Pending\n- Book the venue\n\n## Consumed\n- Done\n"


def test_a_new_promise_is_not_taken_for_the_rewording_of_a_forgotten_one():
    """Found by the devices machine: B removed a promise and wrote a new one under another id;
    A forgot the old one. Read by its words, the new line (the same date in its id, the same
    few words of a promise) passed for a rewording of the forgotten one, and B's next sync took
    it out of the file. A line with an id or a link of its own is only ever the line with the
    same one; a rewording under the same id still goes."""
    from memsync.sync.tombstones import _rewords_of_forgotten

    old = "- [c-2026-11-25-a] send Ana the deck by friday"
    base = ["## Open", old, "- [Topic](topic_a.md) — how we ship"]
    fresh = {line_hash(old): 2.0}
    new_promise = "- [c-2026-11-25-b] send Bo the deck by friday"
    assert _rewords_of_forgotten(["## Open", new_promise], base, fresh) == set()
    reworded = "- [c-2026-11-25-a] send Ana the deck by monday"
    assert _rewords_of_forgotten(["## Open", reworded], base, fresh) == {line_hash(reworded)}
    plain = "- send Ana the deck by monday"  # no id: by its words, as before
    fresh_plain = {line_hash("- send Ana the deck by friday"): 2.0}
    assert _rewords_of_forgotten([plain], ["- send Ana the deck by friday"], fresh_plain) == {
        line_hash(plain)
    }


def test_a_file_set_aside_twice_within_a_second_keeps_both_copies(tmp_path, monkeypatch):
    """Found by the devices machine: two forgets each took an unsynced rewording out of this
    device's MEMORY.md, and the sync that applied the second one ran within the same second
    as the first. The quarantine copy was named by the second, so the second copy replaced
    the first and the first rewording was gone."""
    from types import SimpleNamespace

    from memsync.sync import tombstones

    monkeypatch.setattr(tombstones.time, "strftime", lambda fmt, *a: "20261126-120000")
    engine = SimpleNamespace(
        ctx=SimpleNamespace(home=tmp_path, state_dir=tmp_path / "state" / "proj"),
        state=SimpleNamespace(meta=Meta()),
        local_path=lambda name: tmp_path / "mem" / name,
    )
    first = tombstones.quarantine(engine, "MEMORY.md", b"- first rewording\n", lines=True)
    second = tombstones.quarantine(engine, "MEMORY.md", b"- second rewording\n", lines=True)
    assert first != second
    assert first.read_bytes() == b"- first rewording\n"
    assert second.read_bytes() == b"- second rewording\n"
    assert [q["path"] for q in engine.state.meta.quarantined] == [str(first), str(second)]


def test_a_job_that_knew_no_copy_names_a_remote_copy_it_never_held_late():
    """Finding F14: a forget run while the remote was out of reach under another URL knew no
    copy of the file (that URL's state had no records). When it finishes, a remote copy that
    is no version the forgetting device held (another device's later edit) is named late,
    so its writer sets it aside; one that is such a version is the forgotten copy itself.
    A job saved before memsync noted what it knew names nothing late."""
    from types import SimpleNamespace

    from memsync.sync import tombstones

    held = b"---\nname: user_x\ntype: user\n---\nX likes tea.\n"
    copies = {"user_x.md": (held + b"B EDIT\n", '"e2"'), "user_y.md": (held, '"e3"')}
    engine = SimpleNamespace(store=SimpleNamespace(get=lambda name: copies[name]))
    job = {
        "files": ["user_x.md", "user_y.md", "user_z.md"],
        "known": {},
        "bodies": {"user_x.md": [body_hash(held)], "user_y.md": [body_hash(held)]},
    }
    etags = {"user_x.md": ['"e2"'], "user_y.md": ['"e3"'], "user_z.md": ['"e4"']}
    assert tombstones._late_copies(engine, job, etags) == {"user_x.md": ['"e2"']}
    job["known"] = {"user_x.md": '"e2"', "user_y.md": '"e1"'}  # the ETags, where it noted them
    assert tombstones._late_copies(engine, job, etags) == {"user_y.md": ['"e3"']}
    del job["known"]
    assert tombstones._late_copies(engine, job, etags) == {}


def test_a_forgotten_heading_is_scrubbed_at_any_level_with_the_subheadings_it_emptied():
    """Fresh-eyes s32c, R2: a roll-up holds a digest's `## Session …` as `### Session …`; the
    tombstone's hash of the one is the other. Its subheadings left with nothing under them
    go with it (not under the section before); one holding a line written meanwhile stays."""
    from memsync.sync.forgotten import line_hashes, scrub

    rollup = (
        b"## 2026-11-04\n\n### Session 05:10 LYCHEE3\n\n#### Arcs\n- Arc HIDDEN5.\n\n"
        b"#### Open threads\n- New thread, written meanwhile.\n\n"
        b"### Session 09:00 s2\n\n#### Arcs\n- ARC2.\n"
    )
    forgotten = line_hashes(["## Session 05:10 LYCHEE3", "- Arc HIDDEN5."])
    assert scrub(rollup, forgotten) == (
        b"## 2026-11-04\n\n#### Open threads\n- New thread, written meanwhile.\n\n"
        b"### Session 09:00 s2\n\n#### Arcs\n- ARC2.\n"
    )


def test_a_hash_line_in_a_fenced_block_is_no_heading_for_the_scrub():
    from memsync.sync.forgotten import line_hashes, scrub

    text = b"## Notes LYCHEE3\n- x\n```\n# not a heading\n```\n\n## Kept\n- y\n"
    out = scrub(text, line_hashes(["## Notes LYCHEE3", "- x"]))
    assert out == b"```\n# not a heading\n```\n\n## Kept\n- y\n"


def test_a_held_up_forget_reads_each_copy_written_meanwhile_once():
    """Finishing a forget after an outage reads a remote copy another device wrote meanwhile
    for the rewording test and scrubs it with that read: one GET, not one per step."""
    from types import SimpleNamespace

    from memsync.stores.base import Entry
    from memsync.sync import tombstones
    from memsync.sync.state import Record

    synced = b"## T\n- Dentist ZEBRA77 on Tuesday.\n- Other.\n"
    remote = {"d.md": (b"## T\n- Dentist ZEBRA77 on Tuesday, 3pm.\n- Other.\n", '"e2"')}
    gets: list[str] = []

    def get(name: str) -> tuple[bytes, str]:
        gets.append(name)
        return remote[name]

    def replace(name: str, data: bytes, etag: str) -> None:
        assert etag == remote[name][1]
        remote[name] = (data, '"e3"')

    engine = SimpleNamespace(
        store=SimpleNamespace(get=get, replace=replace),
        state=SimpleNamespace(
            records={"d.md": Record('"e1"', "s1", 0.0)}, content={"s1": synced}.get
        ),
    )
    job = {"files": [], "lines": [line_hash("- Dentist ZEBRA77 on Tuesday.")]}
    listing = {"d.md": Entry("d.md", '"e2"')}
    fetched: dict[str, tuple[bytes, str]] = {}
    reworded = tombstones._reworded_meanwhile(engine, job, listing, fetched)
    assert reworded == {line_hash("- Dentist ZEBRA77 on Tuesday, 3pm.")}
    lines = {*job["lines"], *reworded}
    tombstones._scrub_written_meanwhile(engine, job, listing, lines, fetched)
    assert gets == ["d.md"]
    assert remote["d.md"] == (b"## T\n- Other.\n", '"e3"')


@given(
    before=st.text(max_size=20),
    needle=st.text(min_size=3, max_size=12).filter(str.strip),
    after=st.text(max_size=20),
)
def test_a_line_holding_a_forgotten_text_is_found_by_its_mark_alone(before, needle, after):
    """`forget --match`'s text mark (fresh-eyes s33c, G1): a line holding the text, in any
    case and either Unicode form, is found from the mark, which holds a length and a hash,
    never the text; a line without it is not."""
    mark = text_mark(needle)
    assert re.fullmatch(r"text:\d+:[0-9a-f]{32}", mark), mark
    marks = text_marks({mark, line_hash("- other") or ""})
    line = before + unicodedata.normalize("NFD", needle.upper()) + after
    folded = unicodedata.normalize("NFC", needle).casefold()
    if folded in unicodedata.normalize("NFC", line).casefold():
        assert holds_text(line, marks) == {mark}
    if folded not in unicodedata.normalize("NFC", before).casefold():
        assert not holds_text(before, marks)


def test_scrub_by_a_text_mark_and_new_history_copies_by_hashes_only():
    forgotten = {text_mark("plum4"), line_hash("- exact line") or ""}
    data = b"- the PLUM4 joke\n- kept\n- exact line\n"
    assert scrub(data, forgotten) == b"- kept\n"
    assert scrub(data, without_marks(forgotten)) == b"- the PLUM4 joke\n- kept\n"
