"""Files of two lists whose items move from the first to the second, final one: commitments
(Open -> Delivered, by id) and carry_forward (Pending -> Consumed, by text)."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from memsync.memory import sections
from memsync.memory.merge.entries import merge_items, union
from memsync.memory.merge.identity import ID_KEY, ITEM_PREFIX, Item, commitment_id, item_text
from memsync.memory.merge.tree import merge_tree
from memsync.memory.sections import Section


def _take_items(
    root: Section | None, places: tuple[str, str], key: Callable[[str], Hashable]
) -> tuple[Section | None, list[Item]]:
    """A copy of the tree without the list items of its `places` sections, and those items."""
    if root is None:
        return None, []
    copy = sections.parse(root.render())
    items = []
    for place in places:
        node = copy.find(place)
        if node is None:
            continue
        rest = []
        for entry in node.entries:
            if ITEM_PREFIX.match(entry) and sections.entry_key(entry):
                items.append(Item(key(entry), place, entry))
            else:
                rest.append(entry)
        node.entries = rest
    return copy, items


def merge_places(
    base: Section | None,
    ours: Section,
    theirs: Section,
    notes: list[str],
    places: tuple[str, str],
    key: Callable[[str], Hashable],
    label: Callable[[Item], str],
    fixed: Callable[[Hashable], bool] | None = None,
) -> Section:
    """A file of two list sections (Open/Delivered, Pending/Consumed) whose items move from
    the first to the second, final one: everything else merges as a section tree."""
    b_tree, b_items = _take_items(base, places, key)
    o_tree, o_items = _take_items(ours, places, key)
    t_tree, t_items = _take_items(theirs, places, key)
    assert o_tree is not None and t_tree is not None
    merged = merge_tree(b_tree, o_tree, t_tree, notes)
    items = merge_items(
        b_items if base is not None else None, o_items, t_items, notes, places[1], label, fixed
    )
    nodes = _status_sections(merged, places)
    items = _final_in_order(items, o_items, t_items, places[1])
    for node, place in zip(nodes, places, strict=True):
        texts = [x.text.rstrip("\n") + "\n" for x in items if x.place == place]
        if texts:
            filler = [e for e in node.entries if e.strip()]
            node.entries = [*filler, *texts]
            node.entries[-1] += "\n"
    return sections.space_headings(merged)


def _final_in_order(
    items: list[Item], ours: list[Item], theirs: list[Item], final: str
) -> list[Item]:
    """`items` with those in the `final` place (Delivered, Consumed) in the order the sides
    hold them there, ours first and theirs' additions after the entry they follow, so the
    latest delivered stays last, where compaction, which keeps the last ones as the most
    recent, finds it."""
    order = union(
        None,
        [x.text for x in ours if x.place == final],
        [x.text for x in theirs if x.place == final],
        key=lambda text: text,
    )
    rank = {text: i for i, text in enumerate(order)}
    done = sorted((x for x in items if x.place == final), key=lambda x: rank.get(x.text, len(rank)))
    return [x for x in items if x.place != final] + done


def _status_sections(root: Section, names: tuple[str, str]) -> tuple[Section, Section]:
    found = []
    for name in names:
        section = root.find(name)
        if section is None:
            section = Section(f"## {name}\n\n", 2)
            root.children.append(section)
        found.append(section)
    return found[0], found[1]


def merge_commitments(
    base: Section | None, ours: Section, theirs: Section, notes: list[str]
) -> Section:
    """By commitment id: a change on one side wins; Delivered beats Open; an id both sides
    minted for different promises keeps both (and is reported)."""
    return merge_places(
        base,
        ours,
        theirs,
        notes,
        ("Open", "Delivered"),
        commitment_id,
        lambda x: f"commitment [{commitment_id(x.text)}]",
        lambda k: isinstance(k, str) and ID_KEY.fullmatch(k) is not None,
    )


def merge_carry_forward(
    base: Section | None, ours: Section, theirs: Section, notes: list[str]
) -> Section:
    """Union of Pending; an item consumed on either side leaves Pending, even if the other
    side reworded it."""
    return merge_places(
        base,
        ours,
        theirs,
        notes,
        ("Pending", "Consumed"),
        item_text,
        lambda x: f"a {x.place} item",
    )
