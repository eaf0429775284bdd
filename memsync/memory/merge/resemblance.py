"""How the merge tells that two versions hold the same entry or section in other words: an
entry reworded (`pair_rewords`), an entry replaced by a new one in its place (`replacements`),
a section renamed (`renames`) or moved a level (`level_moves`). The rest of memsync asks
through `correspondence` only."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from memsync.memory import sections
from memsync.memory.merge.identity import ITEM_PREFIX, Item, root_key
from memsync.memory.sections import Section
from memsync.util import resources

_WORD = re.compile(r"\w+")
_ALL_PAIRS = 2_500  # removed x added entries up to which every pair is compared
_WINDOW = 16
SIMILAR = 0.5  # word overlap (Dice) from which a changed entry is a reword of a removed one


def words_of(text: str) -> Counter[str]:
    return Counter(_WORD.findall(ITEM_PREFIX.sub("", text.strip(), count=1).lower()))


def dice(wa: Counter[str], wb: Counter[str]) -> float:
    if not wa or not wb:
        return 0.0
    if len(wa) > len(wb):
        wa, wb = wb, wa
    common = sum(min(n, wb[w]) for w, n in wa.items() if w in wb)
    return 2 * common / (wa.total() + wb.total())


def similarity(a: str, b: str) -> float:
    """Dice coefficient of the two texts' lowercase words (as multisets): 1.0 the same words,
    0.0 none in common. "Ask Pat about the Q3 numbers" -> "... and the forecast" is 0.8;
    -> "Book flights for the offsite" is 0.18."""
    return dice(words_of(a), words_of(b))


def pair_rewords(
    base: Sequence[Item], side: Sequence[Item], fixed: Callable[[Hashable], bool] | None = None
) -> list[Item]:
    """An entry reworded keeps its identity. A base entry gone from this side and a new entry
    of this side are one entry reworded when their words are similar enough (`SIMILAR`),
    most similar pairs first, whatever their positions, and within the same place or moved
    to another (Pending -> Consumed with a note). Anything else is a removal and an addition,
    so replacing a line with a brand-new one never passes the new one off as an edit of the
    old. Keys for which `fixed(key)` holds (commitment ids, index links) are identities of
    their own and never paired."""
    side_keys = {x.key for x in side}
    base_keys = {x.key for x in base}
    free = (lambda k: True) if fixed is None else (lambda k: not fixed(root_key(k)))
    gone = [(i, x) for i, x in enumerate(base) if x.key not in side_keys and free(x.key)]
    new = [(j, x) for j, x in enumerate(side) if x.key not in base_keys and free(x.key)]
    if not gone or not new:
        return list(side)
    scored = []
    new_words = [(j, item, words_of(item.text)) for j, item in new]
    # hundreds of entries changed at once: look among the nearest changed ones only, so a
    # merge stays linear (a reword stays near where it was)
    every = len(gone) * len(new) <= _ALL_PAIRS
    for rank, (i, old) in enumerate(gone):
        old_words = words_of(old.text)
        centre = rank * len(new) // len(gone)  # where this entry would sit among the new
        near = new_words if every else new_words[max(0, centre - _WINDOW) : centre + _WINDOW + 1]
        for j, item, words in near:
            score = dice(old_words, words)
            if score >= SIMILAR:
                scored.append((-score, old.place != item.place, abs(i - j), i, j))
    out = list(side)
    used_old: set[int] = set()
    used_new: set[int] = set()
    for _, _, _, i, j in sorted(scored):
        if i in used_old or j in used_new:
            continue
        used_old.add(i)
        used_new.add(j)
        out[j] = side[j]._replace(key=base[i].key)
    return out


def replacements(keys: list[Hashable], side: list[Item]) -> dict[Hashable, Item]:
    """Base entries gone from `side`, each with the new entry of the side in its place."""
    held = {x.key for x in side}
    known = set(keys)
    after = {(side[j - 1].key if j else None): x for j, x in enumerate(side) if x.key not in known}
    out = {}
    for i, key in enumerate(keys):
        if key not in held:
            new = after.get(keys[i - 1] if i else None)
            if new is not None:
                out[key] = new
    return out


Key = tuple[str, int]


def renamed_sections(base: list[Section], side: list[Section]) -> list[tuple[Section, Section]]:
    """(base section, the section of `side` it was renamed to) for each rename (`renames`)."""
    b, s = by_heading(base), by_heading(side)
    return [(b[old], s[new]) for new, old in renames(b, s).items()]


def renames(base: dict[Key, Section], side: dict[Key, Section]) -> dict[Key, Key]:
    """{new key: base key} for the sections `side` renamed: a new heading there, in place of
    one gone from there, over at least half of that one's entries (`kept_entries`), whatever
    its words, or, for a section with a title and nothing under it yet, where no entry can
    tell, a title much like its own. At any level (`level_moves` puts a section moved a level
    back among its base siblings first). Pairs are taken by the share of entries held as
    they were, then by the most alike titles."""
    gone = [k for k in base if k not in side]
    new = [k for k in side if k not in base]
    if not gone or not new:
        return {}
    pairs = []
    for i, n in enumerate(new):
        for j, g in enumerate(gone):
            alike = similarity(side[n].title, base[g].title)
            kept, exact = kept_entries(base[g], side[n])
            if kept or (alike >= SIMILAR and title_only(base[g])):
                pairs.append((exact, alike, kept, i, j))
    pairs.sort(reverse=True)
    as_base: dict[Key, Key] = {}
    for *_, i, j in pairs:
        if new[i] not in as_base and gone[j] not in as_base.values():
            as_base[new[i]] = gone[j]
    return as_base


def level_moves(base: Section, side: Section) -> Section:
    """`side` with each section whose heading it moved to another level put back where the
    base has it in the tree, its heading (and so its level) as `side` wrote it. A `##` moved
    to `###` nests under the section before it, a `###` moved to `##` leaves its parent:
    sections merge with their own under the same parent, so a section compared where the base
    has it merges with the other side's edits of it once. The tree renders the same text: the
    moved section sits where it did, under its new heading."""
    b = by_heading(base.children)
    children = list(side.children)

    def keys() -> list[Key]:
        return list(by_heading(children))

    order = list(b)
    for n, k in enumerate(order):  # moved down: the last child of the section before it
        here = keys()
        if k in here or n == 0 or order[n - 1] not in here:
            continue
        i = here.index(order[n - 1])
        before = children[i]
        last = before.children[-1] if before.children else None
        if (
            last is not None
            and same_or_renamed(b[k], last)
            and last.level > b[k].level
            and all(c.key != last.key for c in b[order[n - 1]].children)
        ):
            children[i] = Section(
                before.heading, before.level, before.entries, before.children[:-1]
            )
            children.insert(i + 1, last)
    for k, parent in b.items():  # moved up: right after the section it was the last child of
        here = keys()
        if k not in here or not parent.children:
            continue
        i = here.index(k)
        inner = parent.children[-1]
        after = children[i + 1] if i + 1 < len(children) else None
        mine = children[i]
        if (
            after is not None
            and same_or_renamed(inner, after)
            and after.level < inner.level
            and (after.key, 0) not in b
            and all(c.key != inner.key for c in mine.children)
        ):
            children[i] = Section(mine.heading, mine.level, mine.entries, [*mine.children, after])
            del children[i + 1]
    out = []
    for key, child in zip(keys(), children, strict=True):
        out.append(level_moves(b[key], child) if key in b else child)
    return Section(side.heading, side.level, side.entries, out)


def same_or_renamed(base: Section, side: Section) -> bool:
    """Whether `side` is `base`, under its title or renamed (`renames`' test), at any level."""
    return side.key == base.key or kept_entries(base, side)[0] > 0


def title_only(section: Section) -> bool:
    """A section with a title and nothing under it yet."""
    return not section.children and not any(e.strip() for e in section.entries)


def kept_entries(base: Section, renamed: Section) -> tuple[float, float]:
    """The share of the entries under a base section that are under the renamed one, in the
    same subsections, as they were or reworded (`pair_rewords`), 0 below half, and the share
    of them as they were; a memory template's lines left out: two
    sessions a digest template began hold the same ones, and a session removed beside a new
    one is no rename."""
    templates = resources.template_lines()

    def items(node: Section) -> dict[tuple[str, ...], list[Item]]:
        out: dict[tuple[str, ...], list[Item]] = {}
        for n, path in with_paths(node, (), {}):
            for e in n.entries:
                if e.strip() and (key := sections.entry_key(e)) not in templates:
                    out.setdefault(path[1:], []).append(Item(key, "", e))
        return out

    held, there = items(base), items(renamed)
    total = sum(map(len, held.values()))
    if not total:
        return 0.0, 0.0
    kept = exact = 0
    for path, olds in held.items():
        keys = {x.key for x in olds}
        kept += sum(x.key in keys for x in pair_rewords(olds, there.get(path, [])))
        exact += len(keys & {x.key for x in there.get(path, [])})
    share = kept / total
    return (share, exact / total) if share >= 0.5 else (0.0, 0.0)


def by_heading(children: list[Section]) -> dict[tuple[str, int], Section]:
    """Sections by heading, a heading written twice (a second session the same day appending
    its own `## <date>` block) told apart by occurrence: each block merges with its own."""
    seen: Counter[str] = Counter()
    out = {}
    for child in children:
        out[(child.key, seen[child.key])] = child
        seen[child.key] += 1
    return out


def with_paths(
    node: Section, path: tuple[str, ...], names: dict[int, str]
) -> list[tuple[Section, tuple[str, ...]]]:
    here = (*path, names.get(id(node), node.key))
    out = [(node, here)]
    for child in node.children:
        out.extend(with_paths(child, here, names))
    return out


@dataclass(frozen=True)
class Correspondence:
    """What of an earlier version of a section a later one still holds, in other words.
    Indices are into the sections' `entries`."""

    reworded: dict[int, int]  # later entry -> the earlier entry it rewords
    in_place: dict[int, int]  # later new entry -> the earlier entry, gone, whose place it took
    renamed: list[tuple[Section, Section]]  # (earlier subsection, the later one it was renamed to)


def correspondence(old: Section, new: Section) -> Correspondence:
    """How `new`, a later version of the section `old`, holds `old`'s entries and subsections,
    read as the merge reads it: an entry gone from `new` is reworded where a new entry has
    most of its words (`SIMILAR`), or replaced where a new entry stands in its place; a
    subsection gone is renamed where a new one holds most of its entries (`renames`).

    Public because compaction and roll-ups fold a digest that came back into what was rolled
    up from it: they must read a rewording exactly as a merge of the same versions would, or
    the fold and the merge would disagree about which entries are new."""

    def items(node: Section) -> list[tuple[int, Item]]:
        return [
            (i, Item(sections.entry_key(e), "", e)) for i, e in enumerate(node.entries) if e.strip()
        ]

    olds, news = items(old), items(new)
    first: dict[Hashable, int] = {}
    for i, item in olds:
        first.setdefault(item.key, i)
    paired = pair_rewords([x for _, x in olds], [x for _, x in news])
    reworded = {
        j: first[item.key]
        for (j, raw), item in zip(news, paired, strict=True)
        if item.key != raw.key
    }
    placed = {id(x): j for j, x in news}
    in_place = {
        placed[id(item)]: first[key]
        for key, item in replacements([x.key for _, x in olds], [x for _, x in news]).items()
    }
    return Correspondence(reworded, in_place, renamed_sections(old.children, new.children))
