"""Retention (`memsync compact`): a pure planner and a careful executor.

`plan(files, now)` looks at the memory files' bytes and a date and returns what to write, update
and delete, each with a one-sentence reason (like restic's ApplyPolicy: a pure function of its
inputs, so the whole policy is tested from tables). `apply(engine, actions)` carries a plan out
without ever losing content: roll-ups are written and pushed before any source is deleted, and a
run interrupted at any point is completed by running plan and apply again.

Session digests roll up by age: a daily older than 7 days goes into its ISO week's roll-up; a week
that ended more than 30 days ago goes into monthly roll-ups (each day into its own month); a
month that ended more than 365 days ago goes into its year's roll-up, kept forever. A roll-up holds
every source in full under one `## <date>` section per day (the daily's own sections demoted one
level), so a monthly built from weeklies keeps their day sections verbatim, never a summary of a
summary. Every roll-up lists what it holds in its frontmatter `sources`, and folding in content it
already holds changes nothing.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.memory import digests, rollups, sections, voice
from memsync.memory import frontmatter as memory
from memsync.memory.index_links import link_targets
from memsync.memory.memtypes import type_of
from memsync.memory.merge import merge_tree
from memsync.memory.sections import Section
from memsync.sync.walk import MemoryWalk

if TYPE_CHECKING:
    from memsync.sync.engine import Engine, SyncResult

WRITE = "write"  # a new file (a roll-up)
UPDATE = "update"  # an existing file rewritten
DELETE = "delete"  # a source whose content is in the roll-ups listed in `into`
_KIND_ORDER = {WRITE: 0, UPDATE: 0, DELETE: 1}


@dataclass(frozen=True)
class Policy:
    """Ages are in whole days: a thing is due when `(now - its date).days` exceeds the limit."""

    daily_days: int = 7  # a daily digest older than this joins its weekly roll-up
    weekly_days: int = 30  # a week that ended longer ago than this joins its monthly roll-up
    monthly_days: int = 365  # a month that ended longer ago than this joins its yearly roll-up
    voice_days: int = 30  # dated voice calibration sections fold into "Rules learned"
    drafts_days: int = 30  # dated unsent drafts sections are dropped
    delivered_keep: int = 5  # Delivered commitments kept
    callback_idle_days: int = 180  # an Active callback not mentioned for this long retires
    retired_days: int = 180  # a callback retired this long ago is pruned
    dormant_days: int = 90  # philosophical threads untouched this long become dormant


DEFAULT_POLICY = Policy()


@dataclass
class Action:
    kind: str  # write | update | delete
    name: str
    reason: str  # one sentence for the user
    content: bytes | None = None  # the new bytes (None for a delete)
    sources: list[str] = field(default_factory=list)  # files whose content this write holds
    into: list[str] = field(default_factory=list)  # for a delete: the roll-ups holding it
    expected: str | None = None  # sha256 of the file when planned (None: it did not exist)
    reworded: int = 0  # roll-up entries given the wording of a digest that came back


# --- periods ------------------------------------------------------------------------------

_TIERS = ("day", "week", "month", "year")
_TIER_WORD = {"week": "weekly", "month": "monthly", "year": "yearly"}


@dataclass(frozen=True)
class Period:
    tier: str  # day | week | month | year
    label: str  # 2026-04-17 | 2026-W16 | 2026-04 | 2026
    start: date
    end: date


def day_period(d: date) -> Period:
    return Period("day", d.isoformat(), d, d)


def week_period(d: date) -> Period:
    year, week, weekday = d.isocalendar()
    monday = d - timedelta(days=weekday - 1)
    return Period("week", f"{year}-W{week:02d}", monday, monday + timedelta(days=6))


def month_period(d: date) -> Period:
    first = d.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return Period("month", f"{d.year}-{d.month:02d}", first, following - timedelta(days=1))


def year_period(d: date) -> Period:
    return Period("year", str(d.year), date(d.year, 1, 1), date(d.year, 12, 31))


def parse_label(label: str) -> Period | None:
    """The period a roll-up label or a `## <label>` heading stands for."""
    m = digests.NAME.fullmatch(digests.digest_name(label.strip()))
    if m is None:
        return None
    try:
        if m.group("day"):
            return day_period(date.fromisoformat(m.group("day")))
        if m.group("wy"):
            return week_period(date.fromisocalendar(int(m.group("wy")), int(m.group("wn")), 1))
        if m.group("month"):
            return month_period(date.fromisoformat(m.group("month") + "-01"))
        return year_period(date(int(m.group("year")), 1, 1))
    except ValueError:
        return None


def digest_period(name: str) -> Period | None:
    """The period a session digest file covers, from its name (None: not a dated digest)."""
    basename = name.rsplit("/", 1)[-1]
    m = re.fullmatch(r"session_digest_(.+)\.md", basename)
    if m is None:
        return None
    period = parse_label(m.group(1))
    return period if period is not None and period.label == m.group(1) else None


def rollup_name(prefix: str, period: Period) -> str:
    return prefix + digests.digest_name(period.label)


def _due(period: Period, now: date, policy: Policy) -> bool:
    if period.tier == "day":
        return (now - period.start).days > policy.daily_days
    if period.tier == "week":
        return (now - period.end).days > policy.weekly_days
    if period.tier == "month":
        return (now - period.end).days > policy.monthly_days
    return False


def route(d: date, now: date, policy: Policy = DEFAULT_POLICY) -> Period:
    """The roll-up a day's content belongs in today: the smallest period not yet due."""
    month = month_period(d)
    if _due(month, now, policy):
        return year_period(d)
    week = week_period(d)
    if _due(week, now, policy):
        return month
    return week


# --- section helpers ----------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_ANY_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_RETIRED = re.compile(r"\(retired (\d{4}-\d{2}-\d{2})\)")


def _keys(section: Section) -> set[tuple[tuple[str, ...], str]]:
    """What a section holds: (heading path, entry) pairs, whitespace-insensitive."""
    out: set[tuple[tuple[str, ...], str]] = set()

    def visit(node: Section, path: tuple[str, ...]) -> None:
        here = (*path, node.key)
        out.add((here, ""))
        for entry in node.entries:
            if entry.strip():
                out.add((here, sections.entry_key(entry)))
        for child in node.children:
            visit(child, here)

    visit(section, ())
    return out


def _contained(part: Section, whole: Section) -> bool:
    return _keys(part) <= _keys(whole)


def _space(root: Section) -> Section:
    """A blank line before every heading that follows text (as merges leave it)."""
    from memsync.memory.merge import _space_headings

    return _space_headings(root)


def _tail(entries: list[str], blank_after: bool) -> list[str]:
    """Entries of a list that was edited: one newline between them, a blank line at the end
    if the section had one."""
    out = [e.rstrip("\n") + "\n" for e in entries if e.strip()]
    if out and blank_after:
        out[-1] += "\n"
    return out


def _ends_blank(node: Section) -> bool:
    return bool(node.entries) and node.entries[-1].endswith("\n\n")


def _as_date(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date()
        except ValueError:
            return sections.parse_date(value)
    return None


def _dates_in(text: str) -> list[date]:
    out = []
    for m in _ANY_DATE.finditer(text):
        try:
            out.append(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        except ValueError:
            continue
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _with_frontmatter(source: str | None, body: str) -> bytes:
    """Reassemble a file with its frontmatter text untouched."""
    if source is None:
        return body.encode("utf-8")
    return f"---\n{source}---\n{body}".encode()


# --- session digests ----------------------------------------------------------------------


@dataclass
class _Target:
    name: str
    period: Period
    meta: dict[str, Any]
    root: Section
    original: bytes | None
    added: list[str] = field(default_factory=list)  # sources that changed it in this plan
    reworded: int = 0  # its entries given the wording of a digest that came back (_take_rewords)


def _label_key(title: str) -> tuple[date, int, str] | None:
    period = parse_label(title)
    if period is None:
        return None
    return (period.start, -_TIERS.index(period.tier), title)


def _take_rewords(held: Section, part: Section) -> int:
    """In place: an entry of the roll-up's section that the digest coming back no longer has,
    where the digest has a new entry of most of the same words in the same place, takes that
    wording (the digest was reworded after it was rolled up: the edit beat the compaction's
    deletion). As merges tell a reword from a new entry (merge.pair_rewords), and as voice
    rules are folded; an entry the digest lacks with nothing like it stays (a copy of the
    digest from before that entry was written is no removal of it). Returns how many entries
    took a new wording: the files cannot tell a rewording from a new entry of most of the same
    words in a copy from before the old one was written, so each is said (fresh-eyes s32a)."""
    from memsync.memory.merge import Item, pair_rewords, renamed_sections

    def items(entries: list[str]) -> list[Item]:
        return [Item(sections.entry_key(e), "", e) for e in entries if e.strip()]

    old, new = items(held.entries), items(part.entries)
    positions = [i for i, e in enumerate(held.entries) if e.strip()]
    paired = pair_rewords(old, new)
    keys = {x.key: n for n, x in enumerate(old)}
    taken = 0
    for item, raw in zip(paired, new, strict=True):
        n = keys.get(item.key)
        if n is None or item.key == raw.key:
            continue
        i = positions[n]
        blank = "\n" if held.entries[i].endswith("\n\n") else ""
        held.entries[i] = sections.ensure_newline(raw.text.rstrip("\n")) + blank
        taken += 1
    theirs = {c.key: c for c in part.children}
    for child in held.children:
        if child.key in theirs:
            taken += _take_rewords(child, theirs[child.key])
    # a session the digest retitled since it was rolled up is that session, under its new
    # title (fresh-eyes s33b, F7: rolled up again, it was there twice, its arcs with it)
    for child, renamed in renamed_sections(held.children, part.children):
        child.heading = renamed.heading
        taken += 1 + _take_rewords(child, renamed)  # the title is said too (s33c, G4)
    return taken


def _fold(tgt: _Target, part: Section) -> bool:
    """Fold one `## <label>` section into a roll-up's body; False if it was already there."""
    root = tgt.root
    for i, child in enumerate(root.children):
        if child.key == part.key:
            if _contained(part, child):
                return False
            child = copy.deepcopy(child)
            tgt.reworded += _take_rewords(child, part)
            root.children[i] = child if _contained(part, child) else merge_tree(None, child, part)
            return True
    key = _label_key(part.title)
    position = len(root.children)
    if key is not None:
        for i, child in enumerate(root.children):
            other = _label_key(child.title)
            if other is not None and other > key:
                position = i
                break
    root.children.insert(position, part)
    return True


def _parts(
    period: Period, doc: memory.Document, now: date, policy: Policy
) -> list[tuple[Period, Section]]:
    """A due digest cut into `## <label>` sections, each with the roll-up it goes to."""
    return [(route(day, now, policy), part) for day, part in rollups.cut(period.label, doc)]


def _new_meta(period: Period) -> dict[str, Any]:
    word = _TIER_WORD[period.tier]
    # Claude Code's shape, as for every new memory file (memory.py): a slug name at the top,
    # the rest under `metadata:`
    return {
        "name": memory.name_slug(f"session digest {period.label}"),
        "description": f"{word.capitalize()} roll-up of the session digests from "
        f"{period.start.isoformat()} to {period.end.isoformat()}",
        memory.NESTED: {
            "node_type": "memory",
            "type": "session_digest",
            "period": period.label,
            "sources": [],
        },
    }


def _source_list(meta: Mapping[str, Any] | None) -> list[str]:
    value = memory.field(meta, "sources")
    return [str(x) for x in value] if isinstance(value, list) else []


def _allowances(meta: Mapping[str, Any] | None) -> list[str]:
    value = memory.field(meta, "allow_sensitive")
    if isinstance(value, list):
        return [str(x) for x in value]
    return [value] if isinstance(value, str) else []


def _sensitive(meta: Mapping[str, Any] | None) -> bool:
    return str(memory.field(meta, "sensitivity") or "").lower() == "high"


def _due_digests(
    docs: Mapping[str, tuple[bytes, memory.Document]], now: date, policy: Policy
) -> list[tuple[Period, str]]:
    """The session digests old enough to roll up (none marked sensitive), oldest first."""
    due: list[tuple[Period, str]] = []
    for name, (_, doc) in docs.items():
        period = digest_period(name)
        if period is None or type_of(name, doc.meta).name != "session_digest":
            continue
        if _sensitive(doc.meta) or not _due(period, now, policy):
            continue
        due.append((period, name))
    due.sort(key=lambda x: (x[0].start, _TIERS.index(x[0].tier), x[1]))
    return due


def _rollup_target(
    name: str,
    period: Period,
    docs: Mapping[str, tuple[bytes, memory.Document]],
    names: set[str],
    targets: dict[str, _Target],
    blocked: set[str],
) -> _Target | None:
    """The roll-up `name` that digests fold into, read once (or new); None when it must not
    take content: there but unreadable, or local-only. `blocked` remembers those."""
    if name in targets:
        return targets[name]
    if name in blocked:
        return None
    if name in names and name not in docs:
        blocked.add(name)  # there, but not readable: never overwrite it
        return None
    if name in docs:
        data, doc = docs[name]
        if _sensitive(doc.meta) and memory.field(doc.meta, "consent") is not True:
            blocked.add(name)  # a local-only roll-up: never the home of syncable content
            return None
        meta = dict(doc.meta or {})
        for key in ("name", "description", "type"):
            if memory.field(meta, key) in (None, ""):
                meta = memory.set_field(meta, key, memory.field(_new_meta(period), key))
        found = _Target(name, period, meta, sections.parse(doc.body), data)
    else:
        found = _Target(name, period, _new_meta(period), Section(None, 0, ["\n"]), None)
    targets[name] = found
    return found


def _list_source(tgt: _Target, name: str, doc: memory.Document) -> None:
    """The roll-up lists the digest (and the digests it rolled up) among its sources, and
    carries the sensitive-content allowances the digest had."""
    listed = _source_list(tgt.meta)
    wanted = sorted({*listed, name, *_source_list(doc.meta)})
    if wanted != listed:
        tgt.meta = memory.set_field(tgt.meta, "sources", wanted)
        if name not in tgt.added:
            tgt.added.append(name)
    allowed = _allowances(tgt.meta)
    extra = [a for a in _allowances(doc.meta) if a not in allowed]
    if extra:
        tgt.meta = memory.set_field(tgt.meta, "allow_sensitive", sorted({*allowed, *extra}))


def _rollup_writes(targets: dict[str, _Target]) -> list[Action]:
    """A write for each roll-up whose content changed, with the sentence that says why."""
    writes: list[Action] = []
    for tgt in targets.values():
        body = _space(tgt.root).render()
        content = memory.render(tgt.meta, sections.ensure_newline(body)).encode("utf-8")
        if tgt.original is not None and content == tgt.original:
            continue
        word = _TIER_WORD[tgt.period.tier]
        count = len(tgt.added)
        noun = "session digest" if count == 1 else "session digests"
        if tgt.original is None:
            reason = f"rolls {count} {noun} into a new {word} roll-up for {tgt.period.label}."
            writes.append(Action(WRITE, tgt.name, reason, content, sorted(tgt.added)))
        else:
            reason = f"merges {count} {noun} into the {word} roll-up for {tgt.period.label}."
            if tgt.reworded:
                reason += (
                    f" {tgt.reworded} of its entries took the wording of a digest that came "
                    "back (a conflict says where the roll-up as it was is kept)."
                )
            sha = _sha(tgt.original)
            action = Action(UPDATE, tgt.name, reason, content, sorted(tgt.added), [], sha)
            action.reworded = tgt.reworded
            writes.append(action)
    return writes


def _plan_digests(
    docs: Mapping[str, tuple[bytes, memory.Document]],
    names: set[str],
    now: date,
    policy: Policy,
) -> list[Action]:
    targets: dict[str, _Target] = {}
    blocked: set[str] = set()  # roll-ups that exist but cannot be read: never fold into them
    deletes: list[Action] = []
    for period, name in _due_digests(docs, now, policy):
        data, doc = docs[name]
        prefix = name[: len(name) - len(name.rsplit("/", 1)[-1])]
        parts = _parts(period, doc, now, policy)
        homes = [
            (_rollup_target(rollup_name(prefix, p), p, docs, names, targets, blocked), part)
            for p, part in parts
        ]
        if any(t is None for t, _ in homes):
            continue  # a destination cannot take it; leave the source alone
        into: list[str] = []
        changed = False
        for tgt, part in homes:
            assert tgt is not None
            if tgt.name not in into:
                into.append(tgt.name)
            if _fold(tgt, part):
                changed = True
                if name not in tgt.added:
                    tgt.added.append(name)
        for tgt in {t.name: t for t, _ in homes if t is not None}.values():
            _list_source(tgt, name, doc)
        where = ", ".join(into)
        reason = (
            f"its content is now in {where}."
            if changed
            else f"it is already rolled into {where}, which lists it in its sources."
        )
        deletes.append(Action(DELETE, name, reason, None, [], into, _sha(data)))
    return _rollup_writes(targets) + deletes


# --- the rolling single files -------------------------------------------------------------


_RULE_PREFIX = re.compile(r"^-\s+(\d{4}-\d{2}-\d{2}(?: \([^)]*\))?):\s*")


def _reworded_rule(rules: list[str], rule: str, taken: set[int]) -> int | None:
    """The index of the earlier rule `rule` rewords: same date and context, most words alike
    (merge.similarity, as merges tell a reword from a new entry), not one already `taken` by
    another rewording (two of one rule are a rewording and a rule of its own, never two
    replacements of which the first is lost); None if there is none."""
    from memsync.memory.merge import SIMILAR, similarity

    m = _RULE_PREFIX.match(rule.strip())
    if m is None:
        return None
    best, best_score = None, SIMILAR
    for i, old in enumerate(rules):
        o = _RULE_PREFIX.match(old.strip())
        if i in taken:
            continue
        if o is None or o.group(1) != m.group(1):
            continue
        score = similarity(old.strip()[o.end() :], rule.strip()[m.end() :])
        if score >= best_score:
            best, best_score = i, score
    return best


def _plan_voice(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    root = sections.parse(body)
    old = [
        c for c in root.children if c.date is not None and (now - c.date).days > policy.voice_days
    ]
    if not old:
        return None
    rules = voice.rules_section(root)
    blank = _ends_blank(rules) or bool(rules.children) or rules is not root.children[-1]
    added: list[str] = []
    for section in sorted(old, key=lambda c: c.date or date.min):
        added.extend(voice.section_rules(section))
        root.children.remove(section)
    # a rule already there (folded by an earlier run, then the section came back with a
    # merge) is not added twice: compaction stays idempotent under merges
    known = {sections.normalise(e) for e in rules.entries}
    added = [a for a in added if sections.normalise(a) not in known]
    entries = list(rules.entries)
    earlier = len(entries)
    taken: set[int] = set()
    for rule in dict.fromkeys(added):
        # the section came back because the other device reworded an entry this compaction
        # had already folded: the reworded rule replaces the old one instead of joining it
        i = _reworded_rule(entries[:earlier], rule, taken)
        if i is None:
            entries.append(rule)
        else:
            entries[i] = rule
            taken.add(i)
    rules.entries = _tail(entries, blank)
    dates = sorted(c.date.isoformat() for c in old if c.date is not None)
    span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    noun = "section" if len(dates) == 1 else "sections"
    reason = (
        f"folds {len(dates)} dated {noun} older than {policy.voice_days} days ({span}) "
        "into Rules learned, each entry keeping its date."
    )
    return _with_frontmatter(source, _space(root).render()), reason


def _plan_drafts(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    root = sections.parse(body)
    old = [
        c for c in root.children if c.date is not None and (now - c.date).days > policy.drafts_days
    ]
    if not old:
        return None
    root.children = [c for c in root.children if c not in old]
    dates = sorted(c.date.isoformat() for c in old if c.date is not None)
    span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    noun = "section" if len(dates) == 1 else "sections"
    reason = f"drops {len(dates)} dated draft {noun} older than {policy.drafts_days} days ({span})."
    return _with_frontmatter(source, _space(root).render()), reason


def _plan_commitments(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    root = sections.parse(body)
    delivered = root.find("Delivered")
    if delivered is None:
        return None
    items = [i for i, e in enumerate(delivered.entries) if _BULLET.match(e)]
    if len(items) <= policy.delivered_keep:
        return None
    # the last ones: a delivery goes at the end of the section (a merge keeps that order), and
    # an entry's date is when it was promised, not delivered (fresh-eyes s34b, J1: a promise
    # made long ago and delivered today was trimmed first, everywhere)
    keep = set(items[-policy.delivered_keep :])
    blank = _ends_blank(delivered) or bool(delivered.children)
    blank = blank or delivered is not root.children[-1]
    delivered.entries = _tail(
        [e for i, e in enumerate(delivered.entries) if i not in items or i in keep], blank
    )
    reason = (
        f"trims Delivered from {len(items)} to the {policy.delivered_keep} delivered last; "
        "Open is untouched."
    )
    return _with_frontmatter(source, _space(root).render()), reason


def _retire(entry: str, today: date) -> str:
    return entry.rstrip("\n") + f" (retired {today.isoformat()})\n"


def _plan_callbacks(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    """Callbacks unmentioned for too long retire (dated today); retired ones past their time
    are pruned; one retired by hand without a date gets today's, so its clock starts."""
    source, body = memory.split(text)
    root = sections.parse(body)
    active = root.find("Active")
    retired = root.find("Retired")
    moving = _idle_callbacks(active, now, policy)
    pruning, dating = _expired_and_undated(retired, now, policy)
    if retired is not None:
        for i in dating:
            retired.entries[i] = _retire(retired.entries[i], now)
    if not moving and not pruning and not dating:
        return None
    moved = []
    if active is not None and moving:
        if retired is None:
            retired = Section(rollups.heading("Retired", 2), 2)
            root.children.insert(root.children.index(active) + 1, retired)
        moved = [_retire(active.entries[i], now) for i in moving]
        active.entries = _tail(
            [e for i, e in enumerate(active.entries) if i not in moving],
            _ends_blank(active) or bool(active.children) or active is not root.children[-1],
        )
    assert retired is not None
    kept = [e for i, e in enumerate(retired.entries) if i not in pruning]
    retired.entries = _tail(
        [*kept, *moved],
        _ends_blank(retired) or bool(retired.children) or retired is not root.children[-1],
    )
    reason = _callbacks_reason(len(moving), len(pruning), len(dating), policy)
    return _with_frontmatter(source, _space(root).render()), reason


def _idle_callbacks(active: Section | None, now: date, policy: Policy) -> list[int]:
    """The Active entries whose last date is more than `callback_idle_days` ago."""
    if active is None:
        return []
    idle = []
    for i, entry in enumerate(active.entries):
        dates = _dates_in(entry) if _BULLET.match(entry) else []
        if dates and (now - max(dates)).days > policy.callback_idle_days:
            idle.append(i)
    return idle


def _expired_and_undated(
    retired: Section | None, now: date, policy: Policy
) -> tuple[list[int], list[int]]:
    """The Retired entries retired more than `retired_days` ago, and those with no
    retirement date at all (retired by hand)."""
    expired: list[int] = []
    undated: list[int] = []
    for i, entry in enumerate(retired.entries if retired is not None else []):
        marks = [sections.parse_date(m.group(1)) for m in _RETIRED.finditer(entry)]
        marked = [d for d in marks if d is not None]
        if marked and (now - max(marked)).days > policy.retired_days:
            expired.append(i)
        elif not marked and _BULLET.match(entry):
            undated.append(i)
    return expired, undated


def _callbacks_reason(moving: int, pruning: int, dating: int, policy: Policy) -> str:
    said = []
    if moving:
        said.append(
            f"retires {_count(moving, 'callback')} unmentioned for over "
            f"{policy.callback_idle_days} days"
        )
    if pruning:
        said.append(
            f"prunes {_count(pruning, 'callback')} retired more than {policy.retired_days} days ago"
        )
    if dating:
        said.append(
            f"dates {_count(dating, 'retired callback')} that had no retirement date, "
            f"to be pruned {policy.retired_days} days from now"
        )
    return " and ".join(said) + "."


_STATUS_LINE = re.compile(r"^status:[^\n]*\n", re.M)


def _plan_threads(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    if source is None:
        return None
    meta = memory.load_yaml(source)
    if str(memory.field(meta, "status") or "").strip().lower() == "dormant":
        return None
    last = _as_date(memory.field(meta, "modified"))
    if last is None:
        found = _dates_in(body)
        last = max(found) if found else None
    if last is None or (now - last).days <= policy.dormant_days:
        return None
    if memory.is_nested(meta):  # Claude Code's shape: the status lives under `metadata:`
        new_source = memory.dump_meta(memory.set_field(meta, "status", "dormant"))
    elif _STATUS_LINE.search(source):
        new_source = _STATUS_LINE.sub("status: dormant\n", source, count=1)
    else:
        new_source = sections.ensure_newline(source) + "status: dormant\n"
    try:
        ok = memory.field(memory.load_yaml(new_source), "status") == "dormant"
    except memory.FrontmatterError:
        ok = False
    if ok:
        content = _with_frontmatter(new_source, body)
    else:
        content = memory.render(memory.set_field(meta, "status", "dormant"), body).encode("utf-8")
    reason = (
        f"marks the threads dormant: untouched since {last.isoformat()}, "
        f"over {policy.dormant_days} days ago."
    )
    return content, reason


_SINGLE_FILE_RULES: dict[str, Callable[[str, date, Policy], tuple[bytes, str] | None]] = {
    "voice_calibration": _plan_voice,
    "unsent_drafts": _plan_drafts,
    "commitments": _plan_commitments,
    "callbacks": _plan_callbacks,
    "philosophical_threads": _plan_threads,
}


# --- the planner --------------------------------------------------------------------------


def plan(files: Mapping[str, bytes], now: date, policy: Policy = DEFAULT_POLICY) -> list[Action]:
    """What compaction would do to these memory files today. Pure: no I/O, no clock.

    Writes and updates come first, then deletes, so every roll-up is written before any of its
    sources goes. Files that do not parse, or are marked `sensitivity: high`, are left alone.
    """
    docs: dict[str, tuple[bytes, memory.Document]] = {}
    for name in sorted(files):
        data = files[name]
        try:
            docs[name] = (data, memory.parse(memory.decode(data)))
        except memory.FrontmatterError:
            continue
    actions = _plan_digests(docs, set(files), now, policy)
    for name, (data, doc) in docs.items():
        rule = _SINGLE_FILE_RULES.get(type_of(name, doc.meta).name)
        if rule is None or doc.meta is None:
            continue
        text = memory.decode(data)
        crlf = text.count("\r\n") * 2 > text.count("\n")  # as merges do: CRLF stays CRLF
        try:
            outcome = rule(text.replace("\r\n", "\n"), now, policy)
        except memory.FrontmatterError:
            continue
        if outcome is not None and crlf:
            outcome = (outcome[0].decode("utf-8").replace("\n", "\r\n").encode(), outcome[1])
        if outcome is not None and outcome[0] != data:
            content, reason = outcome
            actions.append(Action(UPDATE, name, reason, content, [name], [], _sha(data)))
    index = _plan_index(files, actions)
    if index is not None:
        actions.append(index)
    actions.sort(key=lambda a: (_KIND_ORDER[a.kind], a.name))
    return actions


_INDEX = "MEMORY.md"


def _plan_index(files: Mapping[str, bytes], actions: list[Action]) -> Action | None:
    """MEMORY.md without the lines that link only to digests being compacted away, each
    replaced by a line for the roll-up that now holds it (unless the index links it already).
    An index that never listed the digests is left alone."""
    deleted = {a.name: a.into for a in actions if a.kind == DELETE}
    data = files.get(_INDEX)
    if data is None or not deleted:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    contents = dict(files) | {a.name: a.content for a in actions if a.content is not None}
    lines = text.splitlines(keepends=True)
    linked = {target for line in lines for target in link_targets(line)}
    out: list[str] = []
    dropped = 0
    for line in lines:
        targets = sorted(link_targets(line))
        if not targets or not all(t in deleted for t in targets):
            out.append(line)
            continue
        dropped += 1
        for home in (h for t in targets for h in deleted[t]):
            if home not in linked:
                linked.add(home)
                out.append(_index_line(home, contents.get(home)))
    if not dropped:
        return None
    noun = "digest" if dropped == 1 else "digests"
    reason = f"points the index lines of {dropped} compacted {noun} at their roll-ups."
    new = "".join(out).encode("utf-8")
    return Action(UPDATE, _INDEX, reason, new, [_INDEX], [], _sha(data))


def _index_line(name: str, content: bytes | None) -> str:
    meta: Mapping[str, Any] = {}
    if content is not None:
        try:
            meta = memory.parse(memory.decode(content)).meta or {}
        except memory.FrontmatterError:
            meta = {}
    title = str(meta.get("name") or name.removesuffix(".md"))
    description = meta.get("description")
    return f"- [{title}]({name})" + (f" — {description}" if description else "") + "\n"


def plan_to_dict(actions: Iterable[Action]) -> dict[str, Any]:
    """The plan as JSON-ready data (for `--json` and `--dry-run`): content by size and hash."""
    items = []
    counts = {WRITE: 0, UPDATE: 0, DELETE: 0}
    for a in actions:
        counts[a.kind] = counts.get(a.kind, 0) + 1
        item: dict[str, Any] = {"kind": a.kind, "name": a.name, "reason": a.reason}
        if a.content is not None:
            item["bytes"] = len(a.content)
            item["sha256"] = _sha(a.content)
        if a.sources:
            item["sources"] = list(a.sources)
        if a.into:
            item["into"] = list(a.into)
        items.append(item)
    return {"actions": items, "counts": counts}


# --- the executor -------------------------------------------------------------------------


@dataclass
class CompactResult:
    dry_run: bool
    planned: list[Action] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # name → why it was left for later
    notes: list[str] = field(default_factory=list)
    pushes: list[SyncResult] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.skipped and not self.dry_run


Step = Callable[[str, str], None]


_MANAGED = {"session_digest", *_SINGLE_FILE_RULES}


def _unpushed(engine: Engine) -> set[str]:
    """Files compaction rewrites whose local content is not what was last synced (an earlier
    run may have been interrupted between writing and pushing them)."""
    out: set[str] = set()
    records = engine.state.records
    for name, path, _ in MemoryWalk(engine.ctx.memory_dir):
        if not name.endswith(".md") or type_of(name).name not in _MANAGED:
            continue
        period = digest_period(name)
        if period is not None and period.tier == "day":
            continue
        rec = records.get(name)
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        if rec is None or rec.sha != _sha(data):
            out.add(name)
    return out


def read_memory(root: Path) -> dict[str, bytes]:
    """The memory dir's Markdown files by name: what `plan` works on."""
    return {
        name: Path(path).read_bytes() for name, path, _ in MemoryWalk(root) if name.endswith(".md")
    }


def _rollup_sources(engine: Engine) -> set[str]:
    """Every name a local roll-up lists in `sources`."""
    listed: set[str] = set()
    for name, path, _ in MemoryWalk(engine.ctx.memory_dir):
        period = digest_period(name)
        if period is None or period.tier == "day":
            continue
        try:
            doc = memory.parse(memory.decode(Path(path).read_bytes()))
        except (OSError, memory.FrontmatterError):
            continue
        listed.update(_source_list(doc.meta))
    return listed


def _write_rollups(
    engine: Engine, writes: list[Action], result: CompactResult, step: Step
) -> set[str]:
    """Write the roll-ups and updates whose files are as the plan saw them (the old content
    to local history first); returns the names that changed meanwhile and were left alone."""
    failed: set[str] = set()
    for a in writes:
        assert a.content is not None
        current = engine.read_local(a.name)
        if current == a.content:
            continue  # already done by an earlier, interrupted run
        if (current is None) != (a.expected is None) or (
            current is not None and _sha(current) != a.expected
        ):
            failed.add(a.name)
            result.skipped[a.name] = "it changed since the plan was made; run compact again"
            continue
        step(a.kind, a.name)
        if current is not None:
            engine.state.keep(a.name, current, "before compaction rewrote it")
        engine.write_local(a.name, a.content)
        if a.reworded:
            engine.share_conflict(a.name, _reworded_conflict(a), _reworded_conflict(a, here=False))
            engine.state.save_meta()
        (result.written if a.kind == WRITE else result.updated).append(a.name)
    return failed


def _reworded_conflict(action: Action, here: bool = True) -> str:
    """The conflict of a roll-up whose entries (or a session's title) took the wording of a
    digest that came back (edited on another device after it was rolled up): a rewording,
    or, in a copy from before the entry was written, a new entry of most of the same words.
    `here`: as the compacting device says it; else as the other devices read it."""
    where = (
        f"`memsync history {action.name}` (before compaction rewrote it)"
        if here
        else f"local history on the device that compacted it (`memsync history {action.name}`)"
    )
    return (
        f"compaction gave {action.reworded} entr(ies) of it the wording of a session digest "
        "that came back (edited on another device after it was rolled up): if one was a new "
        f"entry rather than a rewording, the roll-up as it was is in {where}: copy the entry "
        f"back, then `memsync resolve {action.name}`"
    )


def _delete_sources(
    engine: Engine,
    deletes: list[Action],
    failed: set[str],
    disabled: bool,
    result: CompactResult,
    step: Step,
) -> None:
    """Delete each source whose roll-ups are all on the remote (or, with sync off, written
    here) and which is as the plan saw it; a copy goes to local history first."""
    records = engine.state.records

    def on_remote(name: str) -> bool:
        local = engine.read_local(name)
        if local is None or name in failed:
            return False
        if disabled:
            return True
        rec = records.get(name)
        return rec is not None and rec.sha == _sha(local)

    for a in deletes:
        missing = [n for n in a.into if not on_remote(n)]
        if missing:
            result.skipped[a.name] = (
                f"kept until {', '.join(missing)} is on the remote; run compact again"
            )
            continue
        current = engine.read_local(a.name)
        if current is None:
            continue
        if _sha(current) != a.expected:
            result.skipped[a.name] = (
                "it changed since the plan was made; the next compaction folds the change in"
            )
            continue
        step(DELETE, a.name)
        engine.state.keep(a.name, current, f"compacted into {', '.join(a.into)}")
        _carry_conflicts(engine, a)
        engine.local_path(a.name).unlink()
        result.deleted.append(a.name)


_HEADING_LINE = re.compile(r"^\s*#{1,6}\s+(\S.*?)\s*$")


def heading_forms(line: str) -> list[str]:
    """A heading at every level: a roll-up moves a digest's `## Session …` down a level."""
    m = _HEADING_LINE.match(line)
    return [f"{'#' * n} {m.group(1)}" for n in range(1, 7)] if m else []


def _carry_conflicts(engine: Engine, source: Action) -> None:
    """A conflict on a digest this compaction deletes whose versions kept side by side are in
    its roll-up now (both titles of a session, `## A / B`, a heading a level down there) goes
    with them, on every device: the digest's own clears with the file (fresh-eyes s33c, G5:
    nobody had picked a title, and the primer stopped asking)."""
    from memsync.memory.merge import entry_mark

    for conflict in list(engine.state.conflicts):
        marks = set(conflict.get("marks") or ())
        if conflict.get("file") != source.name or not marks:
            continue
        for target in source.into:
            data = engine.read_local(target)
            lines = data.decode("utf-8", "replace").splitlines() if data else []
            held = [
                entry_mark(line)
                for line in lines
                if line.strip() and {entry_mark(x) for x in (line, *heading_forms(line))} & marks
            ]
            if held:
                detail = str(conflict.get("detail")).replace(source.name, target)
                told = re.sub(r" \(merged on [^)]*\)$", "", detail)  # the receiver says where
                engine.share_conflict(target, detail, told, held)
                kept = [c for c in engine.state.conflicts if c is not conflict]
                engine.state.meta["conflicts"] = kept
                engine.state.save_meta()


def _index_after(
    engine: Engine, planned: Action, deleted: list[Action], result: CompactResult, step: Step
) -> list[str]:
    """The plan's MEMORY.md update, made again for the digests actually deleted: ([MEMORY.md])
    when it was written, for the push that sends the deletions."""
    current = engine.read_local(_INDEX)
    if current is None or _sha(current) != planned.expected or not deleted:
        return []  # changed since the plan (the next compaction sees it), or nothing went
    homes = {n for a in deleted for n in a.into}
    files = {_INDEX: current} | {n: d for n in homes if (d := engine.read_local(n)) is not None}
    action = _plan_index(files, deleted)
    if action is None or _write_rollups(engine, [action], result, step):
        return []
    return [_INDEX]


def apply(
    engine: Engine,
    actions: list[Action],
    dry_run: bool = False,
    *,
    on_step: Step | None = None,
) -> CompactResult:
    """Carry out a plan. Roll-ups and updates are written, then pushed; only a source whose
    roll-ups are all on the remote (the synced record matches the local file) is deleted, after
    a copy goes to local history; then the deletions are pushed. `on_step(step, name)` is called
    before every write, push and delete (tests use it to interrupt the run)."""
    result = CompactResult(dry_run, list(actions))
    if dry_run:
        return result

    def step(kind: str, name: str = "") -> None:
        if on_step is not None:
            on_step(kind, name)

    # the index update waits for the deletions: a digest kept (its roll-up not on the remote
    # yet, the remote away) keeps its MEMORY.md line, so the index never misses a file
    writes = [a for a in actions if a.kind in (WRITE, UPDATE) and a.name != _INDEX]
    deletes = [a for a in actions if a.kind == DELETE]
    index = next((a for a in actions if a.kind == UPDATE and a.name == _INDEX), None)
    with engine.locked():
        failed = _write_rollups(engine, writes, result, step)

    homes = sorted(
        ({n for a in deletes for n in a.into} | {a.name for a in writes} | _unpushed(engine))
        - failed
    )
    if homes:
        step("push", "")
        pushed = engine.run("push", [str(engine.local_path(n)) for n in homes])
        result.pushes.append(pushed)
        if pushed.disabled:
            result.notes.append("sync is off: the roll-ups are kept on this device only")
        elif pushed.offline:
            result.notes.append(f"the remote is unreachable ({pushed.offline}); nothing deleted")

    gone: list[str] = []
    with engine.locked():
        records = engine.state.records
        disabled = bool(result.pushes and result.pushes[-1].disabled)
        _delete_sources(engine, deletes, failed, disabled, result, step)
        # deletions an interrupted earlier run made locally but never pushed
        listed = _rollup_sources(engine)
        gone = sorted(
            {*result.deleted} | {n for n in records if n in listed and engine.read_local(n) is None}
        )
        if index is not None:
            done = [a for a in deletes if a.name in gone]
            gone += _index_after(engine, index, done, result, step)
    if gone and not disabled:
        step("push", "")
        result.pushes.append(
            engine.run("push", [str(engine.local_path(n)) for n in gone], force=True)
        )
    return result
