"""Retention: the pure planner against a golden memory dir, its invariants under Hypothesis,
and the executor against a real Engine with a folder remote, interrupted at every step."""

from __future__ import annotations

import json
import os
import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.context import config
from memsync.memory import frontmatter as memory
from memsync.memory import sections
from memsync.retention import compact, policy
from memsync.retention.compact import plan, plan_to_dict
from memsync.retention.policy import DELETE, UPDATE, WRITE, Action, Policy
from memsync.stores import open_store
from memsync.sync.engine import Engine

GOLDEN = Path(__file__).parent / "golden" / "compact"
UPDATE_GOLDEN = os.environ.get("MEMSYNC_UPDATE_GOLDEN") == "1"
NOW = date(2026, 4, 20)


# --- building memory dirs -----------------------------------------------------------------


def md(body: str, **meta: object) -> bytes:
    fields = {"name": "x", "description": "a test memory file", **meta}
    return memory.render(fields, body).encode()


def daily(d: date, shape: int = 0) -> bytes:
    """A session digest for day `d`; every line names the day, so loss is easy to spot."""
    day = d.isoformat()
    if shape == 1:  # two sessions that day
        body = (
            f"\n## Session {day}-a\n\n### Arcs\n- arc one of {day}\n\n### Relational notes\n"
            f"- note one of {day}\n\n### Open threads\n- thread one of {day}\n\n"
            f"## Session {day}-b\n\n### Arcs\n- arc two of {day}\n  continued on a second line\n\n"
            f"### Open threads\n- thread two of {day}\n"
        )
    elif shape == 2:  # no session block: the sections sit at the top
        body = (
            f"\nOpening remark on {day}.\n\n### Arcs\n- arc of {day}\n\n"
            f"### Relational notes\n- note of {day}\n\n### Open threads\n- thread of {day}\n"
        )
    elif shape == 3:  # the corpus style: one dated heading and a timeline
        body = f"\n## {day} (log)\n- 09:15 started on {day}\n- Next: follow up from {day}\n"
    else:
        body = (
            f"\n## Session {day}\n\n### Arcs\n- arc of {day}\n\n### Relational notes\n"
            f"- note of {day}\n\n### Open threads\n- thread of {day}\n"
        )
    return md(
        body,
        name=f"Session {day}",
        description=f"What {day} was about",
        type="session_digest",
        date=day,
    )


def digest_lines(data: bytes) -> list[str]:
    """The content lines of a digest: everything but headings, blanks and frontmatter."""
    body = memory.parse(data.decode()).body
    return [
        line.strip()
        for line in body.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


VOICE = """
## Rules learned
- Short lines beat long ones in banter.

## 2026-01-10

### Missed
- A pun about merge conflicts during an outage.

### Landed
- A dry one-liner after the release went out.

## 2026-03-05 — standup
- Kept it to two sentences; that worked.

## 2026-04-15

### Landed
- A callback to the rebase saga.
"""

DRAFTS = """
## 2026-02-01

### To the platform channel
- Draft: a long complaint about flaky CI.
- Why cut: it blamed a person.

## 2026-04-12

### To Sam
- Draft: a status update with too many caveats.
"""

COMMITMENTS = """
## Open
- [c-2026-04-18-1] 2026-04-18: look into the slow cold pull.

## Delivered
- [c-2026-01-02-1] 2026-01-02: first delivered thing.
- [c-2026-03-01-1] 2026-03-01: the March thing.
- [c-2026-01-20-1] 2026-01-20: a January thing.
- [c-2026-02-11-1] 2026-02-11: a February thing.
- an undated thing delivered after the February one.
- [c-2026-04-01-1] 2026-04-01: the April thing.
- [c-2025-12-24-1] 2025-12-24: the December thing.
- [c-2026-04-10-1] 2026-04-10: the newest thing.
"""

CALLBACKS = """
## Active
- **The rebase saga** (2025-06-01, last used 2026-03-30): every long rebase since.
- **The yak** (2025-08-14): shaving it, again.
- **Tabs versus spaces** (no date): forever.

## Retired
- **The old printer** (2024-01-02) (retired 2025-09-01): kept for context.
- **The stand-up clock** (2025-01-05) (retired 2026-02-01): kept for context.
"""

THREADS = """
## Is a test suite a specification?
- First raised: 2025-11-02, after the flaky test hunt.
- Where we left off: whether property tests count.
"""

CARRY = """
## Pending
- Ask about the 0.4 release date.

## Consumed
- Mentioned the benchmark numbers.
"""


def golden_files() -> dict[str, bytes]:
    """400 days of daily digests plus every rolling type and a few awkward cases."""
    files: dict[str, bytes] = {}
    for i in range(1, 401):
        d = NOW - timedelta(days=i)
        if i % 6 == 0:
            continue  # no session that day
        files[f"session_digest_{d.isoformat()}.md"] = daily(d, i % 4)
    # a weekly left by an interrupted run: it already holds 2026-04-07, which is still here
    week = policy.week_period(date(2026, 4, 7))
    holds = compact.plan({"session_digest_2026-04-07.md": daily(date(2026, 4, 7))}, NOW)
    files[f"session_digest_{week.label}.md"] = next(a.content for a in holds if a.kind == WRITE)
    files["session_digest_2026-04-07.md"] = daily(date(2026, 4, 7))
    # stays on this device only, so it never goes into a roll-up that syncs
    files["session_digest_2025-05-05.md"] = md(
        "\n## Session private\n- private arc\n", type="session_digest", sensitivity="high"
    )
    files["voice_calibration.md"] = md(VOICE, name="Voice calibration", type="voice_calibration")
    files["unsent_drafts.md"] = md(DRAFTS, name="Unsent drafts", type="unsent_drafts")
    files["running_commitments.md"] = md(COMMITMENTS, name="Commitments", type="commitments")
    files["running_jokes_and_callbacks.md"] = md(CALLBACKS, name="Callbacks", type="callbacks")
    files["philosophical_threads.md"] = md(
        THREADS, name="Threads", type="philosophical_threads", status="active"
    )
    files["carry_forward.md"] = md(CARRY, name="Carry-forward", type="carry_forward")
    files["user_role.md"] = md("Staff engineer.\n", type="user", modified="2024-01-01")
    files["feedback_tests.md"] = md("Integration tests hit real servers.\n", type="feedback")
    files["MEMORY.md"] = b"# Memory index\n- [Role](user_role.md) \xe2\x80\x94 the role\n"
    return files


def applied(files: dict[str, bytes], actions: list[Action]) -> dict[str, bytes]:
    """The memory dir after a plan, in memory."""
    out = dict(files)
    for a in actions:
        if a.kind == DELETE:
            out.pop(a.name, None)
        else:
            assert a.content is not None
            out[a.name] = a.content
    return out


def assert_nothing_lost(sources: dict[str, bytes], after: dict[str, bytes]) -> None:
    text = "\n".join(d.decode() for d in after.values())
    for name, data in sources.items():
        if policy.digest_period(name) is None:
            continue
        for line in digest_lines(data):
            assert line in text, f"{name}: lost {line!r}"


def write_dir(directory: Path, files: dict[str, bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)


def read_dir(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*.md"))
        if not any(part.startswith(".") for part in p.relative_to(directory).parts)
    }


# --- the golden plan ----------------------------------------------------------------------


def test_golden_plan() -> None:
    files = golden_files()
    actions = plan(files, NOW)
    got = json.dumps(plan_to_dict(actions), indent=2, ensure_ascii=False) + "\n"
    after = {a.name: a.content for a in actions if a.content is not None}
    if UPDATE_GOLDEN:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        (GOLDEN / "plan.json").write_text(got, encoding="utf-8")
        for old in (GOLDEN / "after").glob("*.md"):
            old.unlink()
        write_dir(GOLDEN / "after", after)  # type: ignore[arg-type]
    assert got == (GOLDEN / "plan.json").read_text(encoding="utf-8")
    assert after == read_dir(GOLDEN / "after")


def test_golden_rules() -> None:
    files = golden_files()
    actions = plan(files, NOW)
    by_name = {a.name: a for a in actions}
    after = applied(files, actions)

    # every roll-up write comes before any delete
    kinds = [a.kind for a in actions]
    assert DELETE not in kinds or WRITE not in kinds[kinds.index(DELETE) :]
    assert UPDATE not in kinds[kinds.index(DELETE) :]
    # each tier: dailies within 7 days stay, then weeklies, monthlies, and a yearly for 2025
    names = set(after)
    assert "session_digest_2026-04-19.md" in names and "session_digest_2026-04-13.md" in names
    assert "session_digest_2026-04-12.md" not in names
    assert {"session_digest_2026-W15.md", "session_digest_2026-W12.md"} <= names
    assert "session_digest_2026-03.md" in names and "session_digest_2025-04.md" in names
    assert "session_digest_2025.md" in names
    assert not any(re.fullmatch(r"session_digest_2025-03-\d\d\.md", n) for n in names)
    assert "session_digest_2025-05-05.md" in names  # sensitivity: high stays put
    # the daily an interrupted run already rolled up is just deleted
    assert "already rolled into" in by_name["session_digest_2026-04-07.md"].reason
    assert by_name["session_digest_2026-04-07.md"].into == ["session_digest_2026-W15.md"]

    roll = memory.parse(after["session_digest_2026-W15.md"].decode())
    assert roll.meta is not None and "session_digest_2026-04-09.md" in memory.field(
        roll.meta, "sources"
    )
    day = sections.parse(roll.body).find("2026-04-09")
    assert day is not None and day.level == 2 and day.children[0].level == 3

    voice = after["voice_calibration.md"].decode()
    assert "## 2026-01-10" not in voice and "## 2026-03-05" not in voice
    assert "## 2026-04-15" in voice
    assert "- 2026-01-10 (Missed): A pun about merge conflicts during an outage." in voice
    assert "- 2026-03-05 (standup): Kept it to two sentences; that worked." in voice

    drafts = after["unsent_drafts.md"].decode()
    assert "2026-02-01" not in drafts and "## 2026-04-12" in drafts

    delivered = sections.parse(memory.parse(after["running_commitments.md"].decode()).body)
    done = delivered.find("Delivered")
    assert done is not None
    kept = [e.strip() for e in done.entries if e.strip()]
    assert len(kept) == 5
    # the last five: an entry's date is when it was promised (fresh-eyes s34b, J1)
    assert "first delivered" not in "".join(kept) and "March" not in "".join(kept)
    assert "undated thing" in "".join(kept) and "December" in "".join(kept)
    assert "look into the slow cold pull" in after["running_commitments.md"].decode()

    callbacks = sections.parse(memory.parse(after["running_jokes_and_callbacks.md"].decode()).body)
    active, retired = callbacks.find("Active"), callbacks.find("Retired")
    assert active is not None and retired is not None
    assert "rebase saga" in "".join(active.entries) and "Tabs" in "".join(active.entries)
    assert "yak" not in "".join(active.entries)
    assert f"(retired {NOW.isoformat()})" in "".join(retired.entries)
    assert "old printer" not in "".join(retired.entries)
    assert "stand-up clock" in "".join(retired.entries)

    threads = memory.parse(after["philosophical_threads.md"].decode())
    assert threads.meta is not None and threads.meta["status"] == "dormant"

    for untouched in ("carry_forward.md", "user_role.md", "feedback_tests.md", "MEMORY.md"):
        assert untouched not in by_name


def test_every_digest_line_survives_and_second_run_is_empty() -> None:
    files = golden_files()
    after = applied(files, plan(files, NOW))
    assert_nothing_lost(files, after)
    assert plan(after, NOW) == []
    # and again a year later, through every tier
    later = NOW + timedelta(days=400)
    final = applied(after, plan(after, later))
    assert_nothing_lost(files, final)
    assert plan(final, later) == []


def test_readding_a_source_changes_nothing() -> None:
    d = date(2026, 3, 30)
    first = plan({f"session_digest_{d}.md": daily(d)}, NOW)
    rolled = applied({f"session_digest_{d}.md": daily(d)}, first)
    again = plan({**rolled, f"session_digest_{d}.md": daily(d)}, NOW)
    assert [(a.kind, a.name) for a in again] == [(DELETE, f"session_digest_{d}.md")]


def test_an_edit_after_roll_up_is_folded_in() -> None:
    d = date(2026, 3, 30)
    name = f"session_digest_{d}.md"
    rolled = applied({name: daily(d)}, plan({name: daily(d)}, NOW))
    edited = daily(d).replace(b"- thread of", b"- a new thread\n- thread of")
    again = plan({**rolled, name: edited}, NOW)
    assert [a.kind for a in again] == [UPDATE, DELETE]
    final = applied({**rolled, name: edited}, again)
    assert_nothing_lost({name: edited}, final)
    assert plan(final, NOW) == []


def test_a_rewording_after_roll_up_replaces_the_old_line() -> None:
    """A digest reworded on another device after it was rolled up comes back (the edit beat
    the deletion): folded again, its new wording takes the old line's place, once; an entry
    the returning copy simply lacks (written after that copy) stays."""
    d = date(2026, 3, 30)
    name = f"session_digest_{d}.md"
    rolled = applied({name: daily(d)}, plan({name: daily(d)}, NOW))
    reworded = daily(d).replace(b"- note of 2026-03-30", b"- note of 2026-03-30, tired")
    reworded = reworded.replace(b"- thread of 2026-03-30\n", b"")
    final = applied({**rolled, name: reworded}, plan({**rolled, name: reworded}, NOW))
    assert name not in final
    text = final[policy.rollup_name("", policy.route(d, NOW))].decode()
    assert text.count("- note of 2026-03-30") == 1
    assert "- note of 2026-03-30, tired\n" in text
    assert "- thread of 2026-03-30\n" in text and "- arc of 2026-03-30\n" in text
    assert plan(final, NOW) == []


@pytest.mark.parametrize("title", ["Parser day", "2026-03-30-a, parser"])
def test_a_session_retitled_after_roll_up_is_folded_in_place_once(title: str) -> None:
    """Fresh-eyes s33b, F7: a digest whose session another device retitled (and added an arc
    to) after it was rolled up comes back; folded again, the session was there twice, under
    both titles, its arcs with it. A session that keeps half its entries is the same one:
    its new title and arc take its place, once."""
    d = date(2026, 3, 30)
    name = f"session_digest_{d}.md"
    rolled = applied({name: daily(d, 1)}, plan({name: daily(d, 1)}, NOW))
    back = daily(d, 1).replace(b"## Session 2026-03-30-a", f"## Session {title}".encode())
    back = back.replace(b"- arc one of 2026-03-30\n", b"- arc one of 2026-03-30\n- a new arc\n")
    actions = plan({**rolled, name: back}, NOW)
    assert sum(a.reworded for a in actions) == 1  # the title: said as a conflict (s33c, G4)
    final = applied({**rolled, name: back}, actions)
    text = final[policy.rollup_name("", policy.route(d, NOW))].decode()
    assert text.count("- arc one of 2026-03-30") == 1 and "- a new arc" in text, text
    assert f"Session {title}" in text and "Session 2026-03-30-a\n" not in text, text
    assert text.count("- arc two of 2026-03-30") == 1, text
    assert plan(final, NOW) == []


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
    ("change", "kept", "gone"),
    [
        # another device added an entry of its own next to a similar one: a rule of its own
        (
            "- Leading with the number worked.\n- Leading with the chart worked for Riley.\n",
            ["Leading with the number worked.", "Leading with the chart worked for Riley."],
            [],
        ),
        # another device reworded the entry: its wording replaces the rule
        (
            "- Leading with the number worked in standup.\n",
            ["Leading with the number worked in standup."],
            ["Leading with the number worked.\n"],
        ),
    ],
)
def test_a_rule_folded_while_another_device_changed_its_section(change, kept, gone) -> None:
    """A compacts (folds 2026-09-01 into Rules learned) while B adds an entry to that section
    or rewords one; B's merge, then A's next compaction: an added entry is one more rule, a
    rewording replaces its rule, nothing twice (fresh-eyes re-trial of issue 16, finding 19:
    the added entry was taken for a rewording and "Leading with the number worked." was lost)."""
    from memsync.memory.merge import merge

    base = md(SEPT, type="voice_calibration")
    name = "voice_calibration.md"
    ours = applied({name: base}, plan({name: base}, date(2026, 11, 26)))[name]
    theirs = base.replace(b"- Leading with the number worked.\n", change.encode())
    for merged in (merge(name, base, ours, theirs), merge(name, base, theirs, ours)):
        assert merged.conflict is None
        final = applied({name: merged.content}, plan({name: merged.content}, date(2026, 11, 26)))
        text = final[name].decode()
        rules = sections.parse(memory.parse(text).body).find("Rules learned")
        lines = [sections.normalise(e) for e in rules.entries if e.strip()]
        assert len(lines) == len(set(lines)) == 2 + len(kept), lines
        for entry in kept:
            assert text.count(f"- 2026-09-01 (Landed): {entry}") == 1, text
        for entry in gone:
            assert f"- 2026-09-01 (Landed): {entry}" not in text, text
        assert "## 2026-09-01" not in text


def test_two_rewordings_of_one_folded_rule_are_both_kept() -> None:
    """A section folded earlier came back (an older merge) with two entries that each reword
    the same rule: the first replaces it, the second is a rule of its own. Before, the
    second replaced the first, which was then nowhere."""
    folded = """
## Rules learned
- 2026-09-01 (Landed): Leading with the number worked.

## 2026-09-01

### Landed
- Leading with the number worked in standup.
- Leading with the number worked in the review.
"""
    name = "voice_calibration.md"
    files = {name: md(folded, type="voice_calibration")}
    text = applied(files, plan(files, date(2026, 11, 26)))[name].decode()
    assert text.count("- 2026-09-01 (Landed): Leading with the number worked in standup.") == 1
    assert text.count("- 2026-09-01 (Landed): Leading with the number worked in the review.") == 1
    assert "- 2026-09-01 (Landed): Leading with the number worked.\n" not in text
    assert "## 2026-09-01" not in text


def test_plan_is_pure_and_ordered() -> None:
    files = golden_files()
    assert plan_to_dict(plan(files, NOW)) == plan_to_dict(plan(dict(files), NOW))
    for a in plan(files, NOW):
        assert a.reason.endswith(".") and a.reason.count(". ") == 0
        if a.kind == DELETE:
            assert a.into and a.content is None and a.expected is not None


def test_policy_is_honoured() -> None:
    d = NOW - timedelta(days=10)
    files = {f"session_digest_{d}.md": daily(d)}
    assert plan(files, NOW, Policy(daily_days=30)) == []
    assert plan(files, NOW) != []


# --- Hypothesis ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    offsets=st.sets(st.integers(min_value=0, max_value=900), min_size=1, max_size=25),
    shapes=st.lists(st.integers(0, 3), min_size=25, max_size=25),
    later=st.integers(min_value=0, max_value=500),
)
def test_nothing_is_lost_and_compaction_is_idempotent(offsets, shapes, later) -> None:
    files = {
        f"session_digest_{NOW - timedelta(days=o)}.md": daily(NOW - timedelta(days=o), shapes[i])
        for i, o in enumerate(sorted(offsets))
    }
    once = applied(files, plan(files, NOW))
    assert_nothing_lost(files, once)
    assert plan(once, NOW) == []
    assert applied(once, plan(once, NOW)) == once
    # time passes: the roll-ups roll up further, still losing nothing
    then = NOW + timedelta(days=later)
    twice = applied(once, plan(once, then))
    assert_nothing_lost(files, twice)
    assert plan(twice, then) == []
    # compacting straight at the later date holds the same lines
    direct = applied(files, plan(files, then))
    assert_nothing_lost(files, direct)


# --- the executor -------------------------------------------------------------------------

SMALL_DAYS = (1, 3, 9, 10, 12, 20, 45, 50, 61, 400)


def small_files() -> dict[str, bytes]:
    files = {
        f"session_digest_{NOW - timedelta(days=i)}.md": daily(NOW - timedelta(days=i), i % 4)
        for i in SMALL_DAYS
    }
    files["voice_calibration.md"] = md(VOICE, name="Voice calibration", type="voice_calibration")
    files["user_role.md"] = md("Staff engineer.\n", type="user")
    return files


def make_engine(tmp_path: Path, device: str = "a") -> Engine:
    (tmp_path / "remote").mkdir(parents=True, exist_ok=True)
    ctx = config.resolve(
        memory_dir=tmp_path / device, remote=(tmp_path / "remote").as_uri(), project="p"
    )
    ctx.memory_dir.mkdir(parents=True, exist_ok=True)
    return Engine(ctx)


def remote_files(engine: Engine) -> dict[str, bytes]:
    """What the remote holds, read with a store of its own: with sync off, the engine's
    reaches nothing."""
    store = open_store(engine.ctx.remote, engine.ctx.project)
    return {k: store.get(k)[0] for k in store.list() if not k.startswith("_memsync")}


def compact_once(engine: Engine, now: date = NOW, **kwargs: object) -> compact.CompactResult:
    actions = plan(read_dir(engine.ctx.memory_dir), now)
    return compact.apply(engine, actions, **kwargs)  # type: ignore[arg-type]


def test_end_to_end_with_a_folder_remote(tmp_path: Path) -> None:
    files = small_files()
    a = make_engine(tmp_path, "a")
    write_dir(a.ctx.memory_dir, files)
    assert not a.run("push").errors
    expected = applied(files, plan(files, NOW))

    dry = compact_once(a, dry_run=True)
    assert dry.dry_run and dry.planned and read_dir(a.ctx.memory_dir) == files

    result = compact_once(a)
    assert result.complete, result.skipped
    assert read_dir(a.ctx.memory_dir) == expected
    assert remote_files(a) == expected
    assert_nothing_lost(files, remote_files(a))
    assert result.deleted and result.written

    # another device pulls the result; a second compaction does nothing at all
    b = make_engine(tmp_path, "b")
    b.run("pull")
    assert read_dir(b.ctx.memory_dir) == expected
    again = compact_once(a)
    assert not again.planned and not again.pushes
    assert a.run("sync").changes == 0


class Interrupted(Exception):
    pass


def seeded_engine(tmp_path: Path, files: dict[str, bytes], device: str = "a") -> Engine:
    engine = make_engine(tmp_path, device)
    write_dir(engine.ctx.memory_dir, files)
    assert not engine.run("push").errors
    return engine


def assert_finished(engine: Engine, files: dict[str, bytes]) -> None:
    """A rerun completes the compaction: both sides hold exactly the uninterrupted result."""
    rerun = compact_once(engine)
    assert rerun.complete, rerun.skipped
    expected = applied(files, plan(files, NOW))
    assert read_dir(engine.ctx.memory_dir) == expected
    assert remote_files(engine) == expected
    assert plan(read_dir(engine.ctx.memory_dir), NOW) == []


def test_interrupted_at_every_step_loses_nothing(tmp_path: Path) -> None:
    files = small_files()
    steps: list[tuple[str, str]] = []
    compact_once(seeded_engine(tmp_path / "count", files), on_step=lambda *s: steps.append(s))
    kinds = [k for k, _ in steps]
    assert kinds.index("push") < kinds.index(DELETE)  # roll-ups reach the remote first
    assert kinds[-1] == "push" and len(steps) > 10
    for stop_after in range(len(steps)):
        taken = 0

        def stop(kind: str, name: str, stop_after: int = stop_after) -> None:
            nonlocal taken
            if taken == stop_after:
                raise Interrupted(f"stopped before {kind} {name}")
            taken += 1

        engine = seeded_engine(tmp_path / f"stop{stop_after}", files)
        with pytest.raises(Interrupted):
            compact_once(engine, on_step=stop)
        # whatever the crash left, each side still holds every line
        assert_nothing_lost(files, read_dir(engine.ctx.memory_dir))
        assert_nothing_lost(files, remote_files(engine))
        assert_finished(engine, files)


def test_crash_inside_the_engine_loses_nothing(tmp_path: Path, monkeypatch) -> None:
    files = small_files()
    # the process dies during the push of the deletions
    engine = seeded_engine(tmp_path / "push", files)
    real_run = engine.run
    calls = 0

    def dying_run(*args: object, **kwargs: object):
        nonlocal calls
        calls += 1
        if calls == 2:
            raise Interrupted("killed while pushing the deletions")
        return real_run(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run", dying_run)
    with pytest.raises(Interrupted):
        compact_once(engine)
    monkeypatch.setattr(engine, "run", real_run)
    assert_nothing_lost(files, remote_files(engine))
    assert_finished(engine, files)

    # the process dies halfway through writing the roll-ups
    engine = seeded_engine(tmp_path / "write", files)
    real_write = engine.write_local
    writes = 0

    def dying_write(name: str, data: bytes) -> None:
        nonlocal writes
        writes += 1
        if writes == 3:
            raise Interrupted("killed while writing")
        real_write(name, data)

    monkeypatch.setattr(engine, "write_local", dying_write)
    with pytest.raises(Interrupted):
        compact_once(engine)
    monkeypatch.setattr(engine, "write_local", real_write)
    assert_nothing_lost(files, read_dir(engine.ctx.memory_dir))
    assert_finished(engine, files)


def test_two_devices_compacting_at_once_converge(tmp_path: Path) -> None:
    files = small_files()
    a = seeded_engine(tmp_path, files, "a")
    b = make_engine(tmp_path, "b")
    b.run("pull")
    late = NOW - timedelta(days=11)  # a digest only b has, in a week a also rolls up
    write_dir(b.ctx.memory_dir, {f"session_digest_{late}.md": daily(late, 1)})
    assert compact_once(a).complete
    assert compact_once(b).complete
    a.run("sync")
    b.run("sync")
    both = {**files, f"session_digest_{late}.md": daily(late, 1)}
    assert read_dir(a.ctx.memory_dir) == read_dir(b.ctx.memory_dir) == remote_files(a)
    assert_nothing_lost(both, remote_files(a))
    assert plan(remote_files(a), NOW) == []
    week = f"session_digest_{policy.week_period(late).label}.md"
    text = remote_files(a)[week].decode()
    assert text.count(f"## {late}") == 1


def test_sources_stay_while_the_push_fails(tmp_path: Path, monkeypatch) -> None:
    files = small_files()
    a = seeded_engine(tmp_path, files)
    real_run = a.run

    def offline_run(mode: str = "sync", *args: object, **kwargs: object):
        result = real_run("pull")  # does nothing useful; stands in for an unreachable remote
        result.offline = "no network"
        return result

    monkeypatch.setattr(a, "run", offline_run)
    result = compact_once(a)
    assert not result.deleted and result.skipped
    local = read_dir(a.ctx.memory_dir)
    assert all(n in local for n in files if n != "voice_calibration.md")
    monkeypatch.setattr(a, "run", real_run)
    assert compact_once(a).complete
    assert_nothing_lost(files, remote_files(a))
    assert remote_files(a) == read_dir(a.ctx.memory_dir)


def test_a_source_edited_after_planning_is_kept(tmp_path: Path) -> None:
    files = small_files()
    a = seeded_engine(tmp_path, files)
    actions = plan(read_dir(a.ctx.memory_dir), NOW)
    victim = next(x.name for x in actions if x.kind == DELETE)
    (a.ctx.memory_dir / victim).write_bytes(files[victim] + b"- a late line\n")
    result = compact.apply(a, actions)
    assert victim in result.skipped and (a.ctx.memory_dir / victim).exists()
    assert compact_once(a).complete
    assert "- a late line" in "\n".join(d.decode() for d in read_dir(a.ctx.memory_dir).values())


# --- edge cases ---------------------------------------------------------------------------


def test_index_lines_of_compacted_digests_point_at_their_roll_ups() -> None:
    days = [NOW - timedelta(days=i) for i in (2, 9, 10, 11)]
    files = {f"session_digest_{d.isoformat()}.md": daily(d) for d in days}
    index = ["# Memory index\n", "- [Role](user_role.md) — the role\n"]
    index += [f"- [Session {d}](session_digest_{d.isoformat()}.md) — that day\n" for d in days]
    index.append("- [Both](user_role.md) and [old](session_digest_2026-04-09.md)\n")
    files["MEMORY.md"] = "".join(index).encode()
    actions = plan(files, NOW)
    after = applied(files, actions)
    text = after["MEMORY.md"].decode()
    week = policy.rollup_name("", policy.week_period(days[1]))
    assert text.count(f"]({week})") == 1, text
    assert "- [Role](user_role.md) — the role\n" in text
    assert f"(session_digest_{days[0].isoformat()}.md)" in text  # not compacted: kept
    for d in days[1:]:
        if f"session_digest_{d.isoformat()}.md" not in after:
            assert f"- [Session {d}](session_digest_{d.isoformat()}.md)" not in text
    assert "[Both](user_role.md) and [old]" in text  # a line with other links is kept
    assert plan(after, NOW) == []  # and a second run does nothing


def test_an_index_that_never_listed_digests_is_left_alone() -> None:
    d = NOW - timedelta(days=9)
    files = {f"session_digest_{d.isoformat()}.md": daily(d), "MEMORY.md": b"# Index\n"}
    assert "MEMORY.md" not in {a.name for a in plan(files, NOW)}


def test_a_callback_retired_by_hand_is_dated_then_pruned_180_days_later() -> None:
    body = "\n## Active\n- **Fresh** (2026-10-01): in use.\n\n## Retired\n- **By hand**: gone.\n"
    files = {"running_jokes_and_callbacks.md": md(body, type="callbacks")}
    (action,) = plan(files, NOW)
    assert "had no retirement date" in action.reason
    dated = applied(files, [action])
    assert f"- **By hand**: gone. (retired {NOW.isoformat()})\n" in dated[action.name].decode()
    assert plan(dated, NOW) == []
    assert plan(dated, NOW + timedelta(days=180)) == []
    (prune,) = plan(dated, NOW + timedelta(days=181))
    assert "By hand" not in applied(dated, [prune])[action.name].decode()


def test_a_weekly_spanning_two_months_splits_by_day() -> None:
    # 2026-02-23 .. 2026-03-01 is 2026-W09; it ended more than 30 days before NOW
    files = {f"session_digest_{d}.md": daily(d) for d in (date(2026, 2, 27), date(2026, 3, 1))}
    weekly = applied(files, plan(files, date(2026, 3, 10)))
    assert set(weekly) == {"session_digest_2026-W09.md"}
    notes = "\nStray text a user added to the weekly.\n\n"
    body = memory.parse(weekly["session_digest_2026-W09.md"].decode())
    assert body.meta is not None
    weekly["session_digest_2026-W09.md"] = memory.render(
        body.meta, notes + body.body + "\n## Notes\n- a user note\n"
    ).encode()
    monthly = applied(weekly, plan(weekly, NOW))
    assert set(monthly) == {"session_digest_2026-02.md", "session_digest_2026-03.md"}
    feb, mar = (monthly[f"session_digest_2026-0{m}.md"].decode() for m in (2, 3))
    assert "## 2026-02-27" in feb and "2026-03-01" not in feb.split("---", 2)[2]
    assert "## 2026-03-01" in mar
    # the weekly's own text goes to the month of its Thursday (2026-02-26), under its label
    assert "## 2026-W09" in feb and "### Notes" in feb and "Stray text" in feb
    for part in (feb, mar):
        assert "session_digest_2026-W09.md" in part and "session_digest_2026-02-27.md" in part
    assert_nothing_lost(weekly, monthly)
    assert plan(monthly, NOW) == []


def test_digests_in_a_folder_roll_up_in_that_folder() -> None:
    d = NOW - timedelta(days=9)
    files = {f"notes/session_digest_{d}.md": daily(d)}
    after = applied(files, plan(files, NOW))
    assert list(after) == [f"notes/session_digest_{policy.week_period(d).label}.md"]


def test_unreadable_files_are_left_alone_and_private_ones_compact_locally() -> None:
    d = NOW - timedelta(days=9)
    week = f"session_digest_{policy.week_period(d).label}.md"
    broken = {f"session_digest_{d}.md": b"---\nname: [unclosed\n---\nbody\n"}
    assert plan(broken, NOW) == []
    # a roll-up that exists but cannot be read is never overwritten, and its sources stay
    blocked = {f"session_digest_{d}.md": daily(d), week: b"\xff\xfe not text"}
    assert plan(blocked, NOW) == []
    private = md("\n## 2026-01-01\n- a private draft\n", type="unsent_drafts", sensitivity="high")
    assert [a.name for a in plan({"unsent_drafts.md": private}, NOW)] == ["unsent_drafts.md"]


def test_allowances_travel_with_the_content() -> None:
    d = NOW - timedelta(days=9)
    source = md("\n## Session x\n- arc\n", type="session_digest", allow_sensitive=["email"])
    after = applied(
        {f"session_digest_{d}.md": source}, plan({f"session_digest_{d}.md": source}, NOW)
    )
    (roll,) = after.values()
    meta = memory.parse(roll.decode()).meta
    assert meta is not None and memory.field(meta, "allow_sensitive") == ["email"]


def test_a_roll_up_without_frontmatter_gets_the_required_fields() -> None:
    d = NOW - timedelta(days=9)
    week = f"session_digest_{policy.week_period(d).label}.md"
    files = {f"session_digest_{d}.md": daily(d), week: b"\n## Notes\n- kept\n"}
    after = applied(files, plan(files, NOW))
    meta = memory.parse(after[week].decode()).meta
    assert meta is not None and memory.field(meta, "type") == "session_digest" and meta["name"]
    assert "- kept" in after[week].decode()


def test_with_sync_off_compaction_is_local(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMSYNC_SYNC", "0")
    files = small_files()
    engine = make_engine(tmp_path)
    write_dir(engine.ctx.memory_dir, files)
    result = compact_once(engine)
    assert result.complete and result.deleted and any("sync is off" in n for n in result.notes)
    assert read_dir(engine.ctx.memory_dir) == applied(files, plan(files, NOW))
    assert remote_files(engine) == {}


@settings(max_examples=80, deadline=None)
@given(
    delivered=st.lists(st.one_of(st.none(), st.integers(0, 600)), max_size=12),
    active=st.lists(st.integers(0, 600), max_size=8),
    retired=st.lists(st.integers(0, 600), max_size=8),
    voice=st.sets(st.integers(0, 120), max_size=6),
)
def test_rolling_files_are_idempotent(delivered, active, retired, voice) -> None:
    def ago(days: int) -> str:
        return (NOW - timedelta(days=days)).isoformat()

    done = "".join(
        f"- [c-{i}] {ago(x)}: item {i}\n" if x is not None else f"- item {i}\n"
        for i, x in enumerate(delivered)
    )
    files = {
        "running_commitments.md": md(
            f"\n## Open\n- [c-open] {ago(900)}: still open\n\n## Delivered\n{done}",
            type="commitments",
        ),
        "running_jokes_and_callbacks.md": md(
            "\n## Active\n"
            + "".join(f"- joke {i} ({ago(x)})\n" for i, x in enumerate(active))
            + "\n## Retired\n"
            + "".join(f"- old {i} (retired {ago(x)})\n" for i, x in enumerate(retired)),
            type="callbacks",
        ),
        "voice_calibration.md": md(
            "".join(f"\n## {ago(x)}\n- line from {ago(x)}\n" for x in sorted(voice)),
            type="voice_calibration",
        ),
    }
    once = applied(files, plan(files, NOW))
    assert plan(once, NOW) == []
    text = once["running_commitments.md"].decode()
    assert "still open" in text
    assert text.count("- ") - 1 == min(len(delivered), 5)
    jokes = once["running_jokes_and_callbacks.md"].decode()
    for i, x in enumerate(active):
        assert f"joke {i} " in jokes  # retired, not pruned, on the day it moves
        assert (f"(retired {NOW})" in jokes.split(f"joke {i} ")[1].split("\n")[0]) == (x > 180)
    for i, x in enumerate(retired):
        assert (f"old {i} " in jokes) == (x <= 180)
    calib = once["voice_calibration.md"].decode()
    for x in voice:
        assert f"line from {ago(x)}" in calib
        assert (f"## {ago(x)}" in calib) == (x <= 30)


def test_a_promise_made_long_ago_and_delivered_last_is_kept() -> None:
    """Fresh-eyes s34b, J1: Delivered was ranked by each entry's date, which is when it was
    promised: a promise made in January and delivered today, at the end of the section, was
    trimmed first, everywhere, while last month's deliveries stayed. The last ones stay."""
    recent = "".join(
        f"- [c-2026-04-0{n}-ab1{n}] 2026-04-0{n}: delivered in April {n}.\n" for n in range(1, 7)
    )
    old = "- [c-2026-01-02-zz99] 2026-01-02: the January promise, delivered today.\n"
    text = memory.render(
        {"name": "c", "description": "c", "type": "commitments"},
        f"\n## Open\n\n## Delivered\n{recent}{old}",
    )
    (action,) = plan({"running_commitments.md": text.encode()}, NOW)
    kept = action.content.decode() if action.content else ""
    assert "the January promise, delivered today." in kept
    assert "delivered in April 1." not in kept and "delivered in April 2." not in kept
    assert "delivered in April 6." in kept
