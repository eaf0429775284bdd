"""The plan for session digests: each due digest folded into its roll-up, then deleted.

A roll-up holds every source in full under one `## <date>` section per day (the daily's own
sections demoted one level), so a monthly built from weeklies keeps their day sections
verbatim, never a summary of a summary. Every roll-up lists what it holds in its frontmatter
`sources`, and folding in content it already holds changes nothing."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from memsync.memory import frontmatter as memory
from memsync.memory import rollups, sections
from memsync.memory.memtypes import type_of
from memsync.memory.merge import correspondence, merge_tree
from memsync.memory.sections import Section
from memsync.retention.policy import (
    DELETE,
    TIER_WORD,
    TIERS,
    UPDATE,
    WRITE,
    Action,
    Period,
    Policy,
    digest_period,
    is_due,
    parse_label,
    rollup_name,
    route,
    sha256_hex,
)


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
    return (period.start, -TIERS.index(period.tier), title)


def _take_rewords(held: Section, part: Section) -> int:
    """In place: an entry of the roll-up's section that the digest coming back rewords (the
    merge's reading, `merge.correspondence`) takes the new wording, and a subsection the
    digest renamed its new title: the edit beat the compaction's deletion. An entry the
    digest lacks with nothing like it stays (a copy of the digest from before that entry was
    written is no removal of it). Returns how many entries and titles took a new wording;
    the files cannot tell a rewording from a new entry of most of the same words in a copy
    from before the old one was written, so each is said."""
    found = correspondence(held, part)
    for new, old in found.reworded.items():
        blank = "\n" if held.entries[old].endswith("\n\n") else ""
        held.entries[old] = sections.ensure_newline(part.entries[new].rstrip("\n")) + blank
    taken = len(found.reworded)
    theirs = {c.key: c for c in part.children}
    for child in held.children:
        if child.key in theirs:
            taken += _take_rewords(child, theirs[child.key])
    for child, renamed in found.renamed:
        child.heading = renamed.heading
        taken += 1 + _take_rewords(child, renamed)
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
    word = TIER_WORD[period.tier]
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
        if _sensitive(doc.meta) or not is_due(period, now, policy):
            continue
        due.append((period, name))
    due.sort(key=lambda x: (x[0].start, TIERS.index(x[0].tier), x[1]))
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
    listed = rollups.listed_sources(tgt.meta)
    wanted = sorted({*listed, name, *rollups.listed_sources(doc.meta)})
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
        body = sections.space_headings(tgt.root).render()
        content = memory.render(tgt.meta, sections.ensure_newline(body)).encode("utf-8")
        if tgt.original is not None and content == tgt.original:
            continue
        word = TIER_WORD[tgt.period.tier]
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
            sha = sha256_hex(tgt.original)
            action = Action(UPDATE, tgt.name, reason, content, sorted(tgt.added), [], sha)
            action.reworded = tgt.reworded
            writes.append(action)
    return writes


def plan_digests(
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
        deletes.append(Action(DELETE, name, reason, None, [], into, sha256_hex(data)))
    return _rollup_writes(targets) + deletes
