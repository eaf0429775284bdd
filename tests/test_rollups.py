"""Two roll-ups of one period that two devices made apart are merged against the roll-up of
the synced copies of the digests both rolled up (memory/rollups.py `base_of`, which the
engine hands to the merge). What users care about: a line one device reworded replaces the
old one, a line both reworded differently is kept twice and reported, and a roll-up made from
an older copy of a digest (one that lacks lines) removes none of the other's lines."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.memory import rollups
from memsync.memory.merge import merge
from memsync.retention import compact, policy

NOW = date(2026, 11, 26)
NAME = "session_digest_2026-10-06.md"
LINES = [f"- L{n} worked on part {n} of the billing export." for n in range(6)]


def digest(lines: list[str]) -> bytes:
    body = "## Session 09:00 s06\n\n### Arcs\n" + "".join(f"{x}\n" for x in lines)
    meta = "---\nname: d\ndescription: a day\nmetadata:\n  type: session_digest\n---\n"
    return (meta + body).encode()


def rolled(lines: list[str]) -> bytes:
    """October's roll-up of that day's digest, as `memsync compact` writes it."""
    [write] = [a for a in compact.plan({NAME: digest(lines)}, NOW) if a.kind == policy.WRITE]
    assert write.content is not None
    return write.content


def merged(synced: list[str], ours: list[str], theirs: list[str]):
    a, b = rolled(ours), rolled(theirs)
    base = rollups.base_of({NAME: digest(synced)}, a, b)
    assert base is not None
    return merge("session_digest_2026-10.md", base, a, b)


def entries(content: bytes) -> list[str]:
    return [x for x in content.decode().splitlines() if x.startswith("- L")]


def test_a_line_reworded_on_one_side_replaces_the_old_one() -> None:
    reworded = [*LINES[:2], "- L2 worked on part 2 of the billing export and CSV.", *LINES[3:]]
    for ours, theirs in ((reworded, LINES), (LINES, reworded)):
        result = merged(LINES, ours, theirs)
        assert entries(result.content) == reworded
        assert not result.conflict


def test_a_line_reworded_on_both_sides_stays_twice_and_is_a_conflict() -> None:
    one = [*LINES[:2], "- L2 finished the CSV escaping", *LINES[3:]]
    two = [*LINES[:2], "- L2 gave up on the retry logic", *LINES[3:]]
    result = merged(LINES, one, two)
    assert "- L2 finished the CSV escaping" in entries(result.content)
    assert "- L2 gave up on the retry logic" in entries(result.content)
    assert LINES[2] not in entries(result.content)
    assert result.conflict


@settings(max_examples=60, deadline=None)
@given(
    older=st.sets(st.integers(0, len(LINES) - 1), max_size=3),
    added=st.booleans(),
    swap=st.booleans(),
)
def test_a_roll_up_of_an_older_copy_loses_no_line_of_the_newer(older, added, swap) -> None:
    """The synced copy has every line; one device rolled up an older copy that lacks some
    (they were added later), the other the synced copy, maybe with a line of its own: every
    line either roll-up holds is in the merge, once."""
    old = [x for n, x in enumerate(LINES) if n not in older]
    new = [*LINES, "- L9 a line of its own."] if added else list(LINES)
    ours, theirs = (old, new) if swap else (new, old)
    result = merged(LINES, ours, theirs)
    got = entries(result.content)
    assert sorted(got) == sorted(set(new)), got
