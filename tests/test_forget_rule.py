"""The forget rule as one pure function (`forgotten.scrub_file`), checked against a model
written from the rule's own words: after a forget arrives, no line of a file holds the text
(case-insensitive, any Unicode form); a heading holding it takes its section; a frontmatter
line holding it takes the file; `MEMORY.md` lines linking to a taken file go; every other
line is still there, in order; a second arrival changes nothing; the remote's tombstone list
never holds the text."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.sync.forgotten import (
    Forget,
    folded,
    read_forgets,
    scrub_file,
    scrub_files,
    text_mark,
    with_forget,
)

_HEADING = re.compile(r"^#{1,6}[ \t]")
WORDS = ["alpha", "Beta", "gamma", "straße", "café", "CAFÉ", "x", "résumé"]


def _variant(word: str, form: str, upper: bool) -> str:
    word = word.upper() if upper else word
    return unicodedata.normalize(form, word)


words = st.builds(_variant, st.sampled_from(WORDS), st.sampled_from(["NFC", "NFD"]), st.booleans())
plain = st.lists(words, min_size=1, max_size=4).map(" ".join)
body_line = st.one_of(
    plain.map(lambda t: f"- {t}"),
    plain,
    st.tuples(st.integers(1, 3), plain).map(lambda p: "#" * p[0] + " " + p[1]),
    st.just(""),
)
bodies = st.lists(body_line, max_size=14)
frontmatters = st.one_of(
    st.none(), st.lists(plain.map(lambda t: f"description: {t}"), min_size=1, max_size=2)
)
needles = st.one_of(st.sampled_from(WORDS), st.sampled_from(["ss", "afé", "a g", "ETA"]))


def _holds(line: str, needle: str) -> bool:
    return folded(needle) in folded(line)


def _render(front: list[str] | None, body: list[str]) -> bytes:
    head = ["---", *front, "---"] if front is not None else []
    return "".join(line + "\n" for line in [*head, *body]).encode()


def _model(front: list[str] | None, body: list[str], needle: str) -> list[str] | None:
    """The lines the rule keeps, read straight from its sentences."""
    if front is not None and any(_holds(line, needle) for line in front):
        return None
    kept: list[str] = []
    cut_below: int | None = None  # the level of a heading whose section is being taken
    for line in body:
        level = len(line) - len(line.lstrip("#")) if _HEADING.match(line) else 0
        if cut_below is not None and (level == 0 or level > cut_below):
            continue
        cut_below = None
        if _holds(line, needle):
            cut_below = level or None
            continue
        kept.append(line)
    head = ["---", *front, "---"] if front is not None else []
    return head + kept


def _forget(needle: str) -> Forget:
    return Forget("f1", text=text_mark(needle))


@settings(max_examples=400, deadline=None)
@given(frontmatters, bodies, needles)
def test_a_file_keeps_exactly_what_the_rule_keeps(front, body, needle) -> None:
    out = scrub_file("note.md", _render(front, body), [_forget(needle)])
    want = _model(front, body, needle)
    if want is None:
        assert out is None
        return
    assert out is not None
    got = out.decode().splitlines()
    assert not any(_holds(line, needle) for line in got)
    assert [x for x in got if x.strip()] == [x for x in want if x.strip()]
    assert scrub_file("note.md", out, [_forget(needle)]) == out  # a second arrival: nothing


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a.md", "b.md", "c.md"]), unique=True), needles)
def test_index_lines_linking_to_a_taken_file_go(names, needle) -> None:
    files: dict[str, bytes | None] = {
        n: _render([f"description: {'about ' + needle if i == 0 else 'other'}"], ["- kept"])
        for i, n in enumerate(names)
    }
    index = "".join(f"- [{n}]({n}) — see\n" for n in ["a.md", "b.md", "c.md"]) + "- free\n"
    files["MEMORY.md"] = index.encode()
    out = scrub_files(files, [_forget(needle), Forget("f2", file="c.md")])
    taken = {*names[:1], "c.md"}
    assert {n for n, d in out.items() if d is None} == taken & set(files)
    kept = (out["MEMORY.md"] or b"").decode()
    for n in ["a.md", "b.md", "c.md"]:
        assert (f"({n})" in kept) == (n not in taken)
    assert "- free" in kept


def test_forget_file_takes_the_file_wherever_it_is_held() -> None:
    assert scrub_file("a.md", b"- anything\n", [Forget("f", file="a.md")]) is None
    assert scrub_file("b.md", b"- anything\n", [Forget("f", file="a.md")]) == b"- anything\n"


@given(st.lists(needles, min_size=1, max_size=5))
def test_the_tombstone_list_grows_once_per_forget_and_never_holds_the_text(found) -> None:
    data: bytes | None = None
    for i, needle in enumerate(found):
        data = with_forget(data, Forget(f"id{i}", text=text_mark(needle)))
        assert with_forget(data, Forget(f"id{i}", text=text_mark(needle))) == data  # a retry
    assert data is not None
    assert [f.id for f in read_forgets(data)] == [f"id{i}" for i in range(len(found))]
    for needle in found:
        if len(needle) > 3:  # a short one may be in a hash's hex digits by chance
            assert folded(needle).encode() not in data.lower()


def test_an_unreadable_list_holds_no_forgets() -> None:
    assert read_forgets(b"{not json") == []
    assert read_forgets(b'{"forgets": [{"id": 1}, {"id": "x"}, {"id": "y", "text": "t"}]}') == []


def test_conflict_records_about_forgotten_content_go(tmp_path, monkeypatch) -> None:
    """A conflict record whose description holds the text, or whose file a forget took, is
    held content like any other: it goes from the device's list."""
    from memsync.context.config import resolve
    from memsync.sync.engine import Engine
    from memsync.sync.tombstones import apply_here

    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    (tmp_path / "mem").mkdir()
    (tmp_path / "remote").mkdir()
    ctx = resolve(memory_dir=tmp_path / "mem", remote=(tmp_path / "remote").as_uri(), project="p")
    engine = Engine(ctx)
    engine.state.conflicts.add("a.md", "the section ## Dentist visits", "c1")
    engine.state.conflicts.add("b.md", "line 3", "c2")
    engine.state.conflicts.add("c.md", "line 4", "c3")
    apply_here(engine, [_forget("dentist"), Forget("f2", file="b.md")])
    assert [c.id for c in engine.state.conflicts] == ["c3"]
