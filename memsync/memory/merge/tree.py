"""Files of sections (voice, self_observations, callbacks, unsent_drafts, philosophical_threads,
relationship, and what digests become): sections by heading, entries within a section by
the entry rule."""

from __future__ import annotations

from memsync.memory import sections
from memsync.memory.merge.entries import merge_items, union
from memsync.memory.merge.identity import Item
from memsync.memory.merge.resemblance import (
    SIMILAR,
    Key,
    by_heading,
    renames,
    similarity,
    with_paths,
)
from memsync.memory.merge.result import Both, short
from memsync.memory.sections import Section


def merge_entries(
    base: list[str] | None, ours: list[str], theirs: list[str], notes: list[str], where: str = ""
) -> list[str]:
    def items(entries: list[str]) -> list[Item]:
        return [Item(sections.entry_key(e), "", sections.ensure_newline(e)) for e in entries]

    merged = merge_items(
        items(base) if base is not None else None,
        items(ours),
        items(theirs),
        notes,
        # names where, never what: conflicts go to state files and the remote record, where
        # `forget --match` could not reach a quoted entry
        label=lambda x: f'an entry under "{short(where, 40)}"' if where else "an entry",
    )
    return [x.text for x in merged]


def merge_tree(
    base: Section | None, ours: Section, theirs: Section, notes: list[str] | None = None
) -> Section:
    """Sections by heading (a repeated heading by occurrence), entries within a section by the
    rule in `merge_items`. A section
    removed on one side loses the entries the other side left alone and keeps what it added
    or changed (so compaction folding a section away never brings its old entries back)."""
    notes = [] if notes is None else notes
    if base is not None and ours.render() == base.render():
        return theirs
    if base is not None and theirs.render() == base.render():
        return ours
    if ours.render() == theirs.render():
        return ours
    entries = merge_entries(
        base.entries if base else None, ours.entries, theirs.entries, notes, ours.title
    )
    base_children = by_heading(base.children) if base else {}
    ours_children = by_heading(ours.children)
    theirs_children = by_heading(theirs.children)
    ours_children, theirs_children = _renamed(base_children, ours_children, theirs_children)
    keys = union(None, list(ours_children), list(theirs_children), key=lambda k: k)
    children = []
    for k in keys:
        o, t, b = ours_children.get(k), theirs_children.get(k), base_children.get(k)
        if o is not None and t is not None:
            children.append(merge_tree(b, o, t, notes))
            continue
        present = o or t
        assert present is not None
        if b is None:
            children.append(present)  # added on one side
            continue
        if present.render() == b.render():
            continue  # removed on the other side, untouched here
        gone = Section(present.heading, present.level)
        if o is None:
            kept = merge_tree(b, gone, present, notes)
        else:
            kept = merge_tree(b, present, gone, notes)
        # what stays of it: what this side added or changed, and its new title (a rename is
        # a change, and an edit beats a concurrent removal)
        if _titled(present) != _titled(b) or any(
            e.strip() for node in kept.walk() for e in node.entries
        ):
            children.append(kept)
    heading, level = (
        (ours.heading, ours.level)
        if ours.heading is not None
        else (
            theirs.heading,
            theirs.level,
        )
    )
    if base is not None and ours.heading is not None and theirs.heading is not None:
        heading, level = _merged_title(base, ours, theirs, notes)
    return sections.space_headings(Section(heading, level, _tidy_blanks(entries), children))


def _merged_title(
    base: Section, ours: Section, theirs: Section, notes: list[str]
) -> tuple[str, int]:
    """A section's heading line and level: its title from the side that renamed it
    (`_renamed`) and its level from the side that moved it (`level_moves`), each on its own;
    renamed differently on both sides, both titles, as a description keeps both texts, and a
    conflict."""
    assert ours.heading is not None and theirs.heading is not None
    level = ours.level if theirs.level in (base.level, ours.level) else theirs.level
    if theirs.key in (base.key, ours.key):
        title, words = ours, ours.title
    elif ours.key == base.key:
        title, words = theirs, theirs.title
    else:
        title, words = ours, f"{ours.title} / {theirs.title}"
        notes.append(Both.of(f'the title of "{short(base.title, 40)}"', [f"{'#' * level} {words}"]))
    if title.level == level and words == title.title:
        return title.heading or "", level
    first = title.heading.splitlines(keepends=True)[0] if title.heading else "\n"
    line = f"{'#' * level} {words}" + first[len(first.rstrip("\r\n")) :]
    return line + (title.heading or "")[len(first) :], level


def _titled(section: Section) -> tuple[str, int]:
    return section.key, section.level


def _renamed(
    base: dict[Key, Section], ours: dict[Key, Section], theirs: dict[Key, Section]
) -> tuple[dict[Key, Section], dict[Key, Section]]:
    """Each side with the sections it renamed under their base headings (`renames`).
    Merged with the other side's section, an entry the other side added under the old title
    goes under the new one, and the old title does not come back. Renamed on both sides, the
    two are one section (its entries once, not twice). A section the other side removed is
    the renamed one merged with that removal: the entries the renaming side left alone go
    with it, as they would under the old title."""
    ours_as, theirs_as = renames(base, ours), renames(base, theirs)
    return (
        {ours_as.get(k, k): child for k, child in ours.items()},
        {theirs_as.get(k, k): child for k, child in theirs.items()},
    )


def _tidy_blanks(entries: list[str]) -> list[str]:
    """After a union, blank lines that separated the old last entry belong to the new one."""
    if not entries:
        return entries
    out = [e.rstrip("\n") + "\n" if i + 1 < len(entries) else e for i, e in enumerate(entries)]
    out = [e for e in out if e.strip() or e == entries[0]]
    if out and entries[-1].endswith("\n\n") and not out[-1].endswith("\n\n"):
        out[-1] += "\n"
    return out


def moved_and_reworded(base: Section, ours: Section, theirs: Section) -> Both | None:
    """An entry one side moved, as it was, to another section while the other side reworded
    it where it was, or moved it to a third section. Sections merge one by one, so the entry
    stays twice (the old words where they went and the new where they were, or in both new
    places): both are kept, and the user is told, as for an entry changed differently on
    both sides."""
    names: dict[int, str] = {}  # a section a side renamed, by its base title (`renames`)
    _as_base(base, ours, names)
    _as_base(base, theirs, names)
    b, o, t = (_keys_by_section(tree, names) for tree in (base, ours, theirs))

    def moved_to(side: dict[tuple[str, ...], dict[str, str]], key: str) -> set[tuple[str, ...]]:
        return {p for p, keys in side.items() if key in keys and key not in b.get(p, {})}

    for mover, other in ((o, t), (t, o)):
        for path, held in b.items():
            there = other.get(path, {})
            for key, text in held.items():
                if key in mover.get(path, {}) or key in there:
                    continue  # not moved, or left as it was on the other side
                went = moved_to(mover, key)
                if not went:
                    continue
                where = short(path[-1], 40) if path[-1] else ""
                label = f'an entry under "{where}"' if where else "an entry"
                elsewhere = moved_to(other, key)
                if elsewhere and elsewhere != went:
                    return Both.of(label, [text])
                for new in (x for k, x in there.items() if k not in held):
                    if similarity(text, new) >= SIMILAR:
                        return Both.of(label, [text, new])
    return None


def _as_base(base: Section, side: Section, names: dict[int, str]) -> None:
    """Into `names`: each section of `side` renamed since `base` (by `id`), its base title;
    a rename is no move of what the section holds."""
    b, s = by_heading(base.children), by_heading(side.children)
    renamed = renames(b, s)
    for k, child in s.items():
        g = renamed.get(k, k)
        if g in b:
            if g != k:
                names[id(child)] = b[g].key
            _as_base(b[g], child, names)


def _keys_by_section(
    tree: Section, names: dict[int, str] | None = None
) -> dict[tuple[str, ...], dict[str, str]]:
    """Each section's entries (entry_key: text), by the headings down to it (a renamed
    section's by its base title, `names`)."""
    out: dict[tuple[str, ...], dict[str, str]] = {}
    for node, path in with_paths(tree, (), names or {}):
        out[path] = {sections.entry_key(e): e for e in node.entries if e.strip()}
    return out
