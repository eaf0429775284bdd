"""voice_calibration.md's fold: a dated section becomes dated rules under "Rules learned".

Compaction folds sections older than 30 days (memsync/retention/compact.py); the merge reads a
fold made on one side (`rebase_folds`) so that what the other device changed in the folded
section meanwhile is told apart as it is anywhere else: a rewording replaces its rule, an
entry added there is one more rule, never taken for a rewording of one that is still there.
"""

from __future__ import annotations

import re
from datetime import date

from memsync.memory import sections
from memsync.memory.sections import Section

RULES = "Rules learned"
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_RULE_DATE = re.compile(r"^-\s+(\d{4}-\d{2}-\d{2})(?: \([^)]*\))?:")


def rule_entry(day: date, context: str, entry: str) -> str:
    """One entry of a dated section as a rule: `- 2026-09-01 (Landed): the entry`."""
    lines = entry.rstrip("\n").split("\n")
    prefix = f"- {day.isoformat()}" + (f" ({context})" if context else "") + ":"
    first = lines[0]
    if _BULLET.match(first):
        head = _BULLET.sub("", first, count=1)
        rest = lines[1:]
    elif len(lines) == 1:
        head, rest = first.strip(), []
    else:
        head, rest = "", lines
    out = [f"{prefix} {head}".rstrip()]
    out += [
        line if not line.strip() or line.startswith((" ", "\t")) else "  " + line for line in rest
    ]
    return "\n".join(out) + "\n"


def section_rules(section: Section) -> list[str]:
    """The rules a dated section folds into, in order: each entry with its date and the
    subsection path it sat under (and what the date heading says after the date)."""
    day = section.date
    assert day is not None
    remainder = section.title[10:].strip(" \t-—–:,")
    out: list[str] = []

    def visit(node: Section, path: list[str]) -> None:
        for entry in node.entries:
            if entry.strip():
                out.append(rule_entry(day, " / ".join(path), entry))
        for child in node.children:
            visit(child, [*path, child.title])

    visit(section, [remainder] if remainder else [])
    return out


def rules_section(root: Section) -> Section:
    """The "Rules learned" section, made before the first dated section if there is none."""
    rules = root.find(RULES)
    if rules is None:
        rules = Section(f"## {RULES}\n\n", 2)
        first_dated = next(
            (i for i, c in enumerate(root.children) if c.date is not None), len(root.children)
        )
        root.children.insert(first_dated, rules)
    return rules


def _new_dated_rules(side: Section, base_rules: set[str], day: str) -> bool:
    rules = side.find(RULES)
    for entry in rules.entries if rules is not None else ():
        m = _RULE_DATE.match(entry.strip())
        if m and m.group(1) == day and sections.normalise(entry) not in base_rules:
            return True
    return False


def rebase_folds(
    base: Section, ours: Section, theirs: Section
) -> tuple[Section, Section, Section]:
    """The three versions with every dated section one side folded into its rules (the section
    gone there, rules of its date new there) folded on the base and the other side too, when
    the other side still holds it: the merge then compares rule with rule, so the other
    side's rewording of an entry replaces its rule and an entry it added is a rule of its own
    (the section coming back with only the changed entries made a new entry look like a
    rewording to the next compaction, and a rule was lost). A side that dropped the section
    without folding it leaves all three as they are."""
    held = base.find(RULES)
    base_rules = {sections.normalise(e) for e in (held.entries if held is not None else ())}

    def holds(side: Section, key: str) -> bool:
        return any(c.key == key for c in side.children)

    due = []
    for section in base.children:
        if section.date is None or section.key in due:
            continue
        day = section.date.isoformat()
        sides = [(s, holds(s, section.key)) for s in (ours, theirs)]
        folded = [not kept and _new_dated_rules(s, base_rules, day) for s, kept in sides]
        if any(folded) and all(f or kept for f, (_, kept) in zip(folded, sides, strict=True)):
            due.append(section.key)
    if not due:
        return base, ours, theirs
    return fold(base, due), fold(ours, due), fold(theirs, due)


def fold(root: Section, keys: list[str]) -> Section:
    """A copy of `root` with its dated sections whose heading is in `keys` folded into its
    rules (a rule already there is not added twice), as compaction folds them."""
    root = sections.parse(root.render())
    old = [c for c in root.children if c.key in keys]
    if not old:
        return root
    rules = rules_section(root)
    blank = (
        (bool(rules.entries) and rules.entries[-1].endswith("\n\n"))
        or bool(rules.children)
        or rules is not root.children[-1]
    )
    known = {sections.normalise(e) for e in rules.entries}
    entries = [e.rstrip("\n") + "\n" for e in rules.entries if e.strip()]
    for section in sorted(old, key=lambda c: c.title):
        root.children.remove(section)
        for rule in section_rules(section):
            if sections.normalise(rule) not in known:
                known.add(sections.normalise(rule))
                entries.append(rule)
    if entries and blank:
        entries[-1] += "\n"
    rules.entries = entries
    return root
