"""How a session digest becomes sections of a roll-up, for the two that need the same answer:
compaction, which folds due digests into their roll-ups (retention/compact.py), and the sync,
which merges two roll-ups of one period that two devices made apart, with no version in common,
against the roll-up of the synced copies of the digests both rolled up (`base_of`). Without
that base, a line one device reworded before its compaction stood next to the old wording."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from datetime import date, timedelta

from memsync.memory import digests, sections
from memsync.memory import frontmatter as memory
from memsync.memory.merge import correspondence, merge_tree
from memsync.memory.sections import Section

_HEADING_HASHES = re.compile(r"^#{1,6}")


def heading(title: str, level: int) -> str:
    return f"{'#' * level} {title}\n\n"


def shift(node: Section, by: int) -> None:
    """Move a subtree `by` heading levels down (clamped to 1..6), in place."""
    for sub in node.walk():
        if sub.heading is None:
            continue
        level = min(6, max(1, sub.level + by))
        sub.heading = _HEADING_HASHES.sub("#" * level, sub.heading, count=1)
        sub.level = level


def normalised(section: Section) -> Section:
    """The section as it reads back from its rendering (so comparisons see what a file holds)."""
    text = section.render()
    if not text.endswith("\n"):
        text += "\n"
    root = sections.parse(text)
    return root.children[0] if len(root.children) == 1 and not root.entries else section


def entries_of(node: Section) -> list[str]:
    return [sections.ensure_newline(e) for e in node.entries if e.strip()]


def wrap(title: str, entries: list[str], children: list[Section]) -> Section:
    """A level-2 section holding `entries` and `children`, the children moved below it."""
    children = copy.deepcopy(children)
    if children:
        by = 3 - min(c.level for c in children)
        for child in children:
            shift(child, by)
    return normalised(Section(heading(title, 2), 2, entries, children))


def _span(label: str) -> tuple[date, date] | None:
    return digests.span(digests.digest_name(label.strip()))


def cut(label: str, doc: memory.Document) -> list[tuple[date, Section]]:
    """A digest (a day's, or a roll-up's for the week, month or year `label`) cut into
    `## <label>` sections, each with the day whose roll-up it goes to: a day's digest is one
    section under its date (its description quoted first); a roll-up's day sections move
    whole, the rest goes under the roll-up's own label."""
    days = _span(label)
    if days is None:
        return []
    root = sections.parse(doc.body)
    if days[0] == days[1]:
        intro = []
        description = (doc.meta or {}).get("description")
        if isinstance(description, str) and description.strip():
            intro = ["".join(f"> {line}\n" for line in description.strip().splitlines())]
        return [(days[0], wrap(label, intro + entries_of(root), root.children))]
    parts: list[tuple[date, Section]] = []
    rest: list[Section] = []
    for child in root.children:
        day = _span(child.title)
        if day is not None and day[0] == day[1]:
            moved = copy.deepcopy(child)
            shift(moved, 2 - moved.level)
            parts.append((day[0], normalised(moved)))
        else:
            rest.append(child)
    extra = entries_of(root)
    if extra or rest:
        home = days[0] + timedelta(days=3) if "-W" in label else days[0]
        parts.append((home, wrap(label, extra, rest)))
    return parts


def sources(data: bytes) -> list[str]:
    """The digests a roll-up lists in its frontmatter `sources` (none if it does not parse)."""
    try:
        return listed_sources(memory.parse(memory.decode(data)).meta)
    except memory.FrontmatterError:
        return []


def listed_sources(meta: Mapping[str, object] | None) -> list[str]:
    """The frontmatter `sources` of a roll-up: the digests it holds."""
    value = memory.field(meta, "sources")
    return [str(x) for x in value] if isinstance(value, list) else []


def base_of(copies: Mapping[str, bytes], ours: bytes, theirs: bytes) -> bytes | None:
    """The body of a roll-up of these digests (name: synced content), as compaction writes
    one, for the merge of two roll-ups `ours` and `theirs` made apart: the version they are
    told to have in common. Only rewordings are read from it: an entry or section of it that
    a side lacks stays only where that side has a rewording of it (`_trim`), since a roll-up
    made from an older copy of a digest lacks lines it never removed. Each section once, in
    the order of its label; None when none of them is a dated digest."""
    root = _rolled(copies)
    if root is None:
        return None
    sides = [_body(data) for data in (ours, theirs)]
    if any(side is None for side in sides):
        return None
    _trim(root, [side for side in sides if side is not None])
    return sections.space_headings(root).render().encode("utf-8")


def _body(data: bytes) -> Section | None:
    try:
        return sections.parse(memory.parse(memory.decode(data)).body)
    except memory.FrontmatterError:
        return None


def _rolled(copies: Mapping[str, bytes]) -> Section | None:
    found: dict[str, tuple[tuple[date, int, str], Section]] = {}
    for name, data in copies.items():
        basename = name.rsplit("/", 1)[-1]
        label = basename.removeprefix("session_digest_").removesuffix(".md")
        if digests.NAME.fullmatch(basename) is None:
            continue
        try:
            doc = memory.parse(memory.decode(data))
        except memory.FrontmatterError:
            continue
        for _, part in cut(label, doc):
            span = _span(part.title) or (date.max, date.max)
            order = (span[0], -(span[1] - span[0]).days, part.title.strip())
            held = found.get(part.key)
            found[part.key] = (order, part if held is None else merge_tree(None, held[1], part))
    if not found:
        return None
    return Section(None, 0, ["\n"], [part for _, part in sorted(found.values(), key=_first)])


def _trim(base: Section, sides: list[Section]) -> None:
    """In place: keep in `base` an entry that only some sides lack where each of them holds
    a rewording of it or another entry in its place (`merge.correspondence`), and a section
    only where every side has it."""
    old = {sections.entry_key(e) for e in base.entries if e.strip()}
    lacking = [old - {sections.entry_key(e) for e in side.entries if e.strip()} for side in sides]
    everywhere_gone = set.intersection(*lacking) if lacking else set()
    drop: set[str] = set()
    for side, gone in zip(sides, lacking, strict=True):
        found = correspondence(base, side)
        replaced = {
            sections.entry_key(base.entries[i])
            for i in (*found.in_place.values(), *found.reworded.values())
        }
        drop |= gone - replaced - everywhere_gone
    base.entries = [e for e in base.entries if not e.strip() or sections.entry_key(e) not in drop]
    kept = []
    for child in base.children:
        matches = [{c.key: c for c in side.children}.get(child.key) for side in sides]
        if all(m is not None for m in matches):
            _trim(child, [m for m in matches if m is not None])
            kept.append(child)
    base.children = kept


def _first(item: tuple[tuple[date, int, str], Section]) -> tuple[date, int, str]:
    return item[0]
