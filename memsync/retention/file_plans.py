"""The plans for the rolling single files, one rule per type: voice calibration sections
fold into its rules, unsent drafts expire, Delivered commitments keep the last few, callbacks
retire and are pruned, philosophical threads go dormant. Each rule is a pure function of the
file's text, the date and the policy that returns the new text and a one-sentence reason."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime

from memsync.memory import frontmatter as memory
from memsync.memory import rollups, sections, voice
from memsync.memory.merge import correspondence
from memsync.memory.sections import Section
from memsync.retention.policy import Policy

_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_ANY_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_RETIRED = re.compile(r"\(retired (\d{4}-\d{2}-\d{2})\)")


def _tail(entries: list[str], blank_after: bool) -> list[str]:
    """Entries of a list that was edited: one newline between them, a blank line at the end
    if the section had one."""
    out = [e.rstrip("\n") + "\n" for e in entries if e.strip()]
    if out and blank_after:
        out[-1] += "\n"
    return out


def _blank_after(node: Section, root: Section) -> bool:
    """Whether a list just edited ends with a blank line: it had one, or a heading follows."""
    ends_blank = bool(node.entries) and node.entries[-1].endswith("\n\n")
    return ends_blank or bool(node.children) or node is not root.children[-1]


def _dated_older(root: Section, now: date, days: int) -> list[Section]:
    """The top-level sections dated more than `days` before `now`."""
    return [c for c in root.children if c.date is not None and (now - c.date).days > days]


def _dated(old: list[Section], days: int, kind: str = "") -> str:
    """ "2 dated sections older than 30 days (2026-10-01 to 2026-10-03)", for a reason."""
    dates = sorted(c.date.isoformat() for c in old if c.date is not None)
    span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    noun = "section" if len(dates) == 1 else "sections"
    return f"{len(dates)} dated {kind}{noun} older than {days} days ({span})"


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


def _with_frontmatter(source: str | None, body: str) -> bytes:
    """Reassemble a file with its frontmatter text untouched."""
    if source is None:
        return body.encode("utf-8")
    return f"---\n{source}---\n{body}".encode()


_RULE_PREFIX = re.compile(r"^-\s+(\d{4}-\d{2}-\d{2}(?: \([^)]*\))?):\s*")


def _reworded_rule(rules: list[str], rule: str, taken: set[int]) -> int | None:
    """The index of the earlier rule `rule` rewords: same date and context, most words alike
    as a merge reads a rewording (`merge.correspondence`), not one already `taken` by another
    rewording (two of one rule are a rewording and a rule of its own, never two replacements
    of which the first is lost); None if there is none."""
    m = _RULE_PREFIX.match(rule.strip())
    if m is None:
        return None
    at: list[int] = []  # the index in `rules` of each candidate
    texts: list[str] = []
    for i, old in enumerate(rules):
        o = _RULE_PREFIX.match(old.strip())
        if i not in taken and o is not None and o.group(1) == m.group(1):
            at.append(i)
            texts.append(old.strip()[o.end() :])
    found = correspondence(Section(None, 0, texts), Section(None, 0, [rule.strip()[m.end() :]]))
    return at[found.reworded[0]] if 0 in found.reworded else None


def plan_voice(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    root = sections.parse(body)
    old = _dated_older(root, now, policy.voice_days)
    if not old:
        return None
    rules = voice.rules_section(root)
    blank = _blank_after(rules, root)
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
    reason = (
        f"folds {_dated(old, policy.voice_days)} into Rules learned, each entry keeping its date."
    )
    return _with_frontmatter(source, sections.space_headings(root).render()), reason


def _plan_drafts(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    root = sections.parse(body)
    old = _dated_older(root, now, policy.drafts_days)
    if not old:
        return None
    root.children = [c for c in root.children if c not in old]
    reason = f"drops {_dated(old, policy.drafts_days, 'draft ')}."
    return _with_frontmatter(source, sections.space_headings(root).render()), reason


def _plan_commitments(text: str, now: date, policy: Policy) -> tuple[bytes, str] | None:
    source, body = memory.split(text)
    root = sections.parse(body)
    delivered = root.find("Delivered")
    if delivered is None:
        return None
    items = [i for i, e in enumerate(delivered.entries) if _BULLET.match(e)]
    if len(items) <= policy.delivered_keep:
        return None
    # the last ones: a delivery goes at the end of the section (a merge keeps that order); an
    # entry's date is when it was promised, not delivered, so dates do not decide
    keep = set(items[-policy.delivered_keep :])
    delivered.entries = _tail(
        [e for i, e in enumerate(delivered.entries) if i not in items or i in keep],
        _blank_after(delivered, root),
    )
    reason = (
        f"trims Delivered from {len(items)} to the {policy.delivered_keep} delivered last; "
        "Open is untouched."
    )
    return _with_frontmatter(source, sections.space_headings(root).render()), reason


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
            _blank_after(active, root),
        )
    assert retired is not None
    kept = [e for i, e in enumerate(retired.entries) if i not in pruning]
    retired.entries = _tail([*kept, *moved], _blank_after(retired, root))
    reason = _callbacks_reason(len(moving), len(pruning), len(dating), policy)
    return _with_frontmatter(source, sections.space_headings(root).render()), reason


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


FILE_RULES: dict[str, Callable[[str, date, Policy], tuple[bytes, str] | None]] = {
    "voice_calibration": plan_voice,
    "unsent_drafts": _plan_drafts,
    "commitments": _plan_commitments,
    "callbacks": _plan_callbacks,
    "philosophical_threads": _plan_threads,
}
