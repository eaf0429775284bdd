"""The three-way merge of entries by identity, the rule every structured type follows
(`merge_items`), and the ordered three-way union it is built on."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from memsync.memory import sections
from memsync.memory.merge.collisions import one_entry, or_its_promise, split_collisions
from memsync.memory.merge.identity import Item, root_key, unique, value_of
from memsync.memory.merge.resemblance import SIMILAR, dice, pair_rewords, replacements, words_of
from memsync.memory.merge.result import Both, Superseded
from memsync.util import resources

T = TypeVar("T")


def union(
    base: Sequence[T] | None,
    ours: Sequence[T],
    theirs: Sequence[T],
    key: Callable[[T], Hashable],
) -> list[T]:
    """Merge three lists of items identified by `key`, keeping order.

    Ours' order first; theirs' additions go after their nearest predecessor. An item removed
    on one side since base stays removed; an item both sides hold is ours.
    """
    base_items = {key(x): x for x in base or ()}
    ours_keys = {key(x) for x in ours}
    theirs_keys = {key(x) for x in theirs}
    result: list[T] = []
    for item in ours:
        k = key(item)
        if k in base_items and k not in theirs_keys:
            continue  # removed on their side
        result.append(item)
    placed = {key(x) for x in result}
    anchor: Hashable | None = None
    for index, item in enumerate(theirs):
        k = key(item)
        if k in placed or k in ours_keys:
            anchor = k if k in placed else anchor
            continue
        if k in base_items:
            continue  # removed on our side
        if anchor is not None:
            position = next(i for i, x in enumerate(result) if key(x) == anchor) + 1
        else:  # before the first item both sides share, or after all of ours
            following = [key(x) for x in theirs[index + 1 :] if key(x) in placed]
            position = next(
                (i for i, x in enumerate(result) if following and key(x) == following[0]),
                len(result),
            )
        result.insert(position, item)
        placed.add(k)
        anchor = k
    return result


def merge_items(
    base: Sequence[Item] | None,
    ours: Sequence[Item],
    theirs: Sequence[Item],
    notes: list[str],
    final: str | None = None,
    label: Callable[[Item], str] = lambda x: x.text,
    fixed: Callable[[Hashable], bool] | None = None,
    reorders: bool = False,
) -> list[Item]:
    """The three-way merge of entries by identity, the rule every structured merge follows:

    - changed (added, reworded, moved) on one side only: that side's version;
    - removed on one side, untouched on the other: gone; removed on one side, changed on the
      other: the change stays (an edit beats a concurrent removal);
    - moved to the `final` place (Consumed, Delivered) on either side: there, and only there
      (moved there on both sides with different texts: both stay there, noted as below);
    - changed differently on both sides: both versions stay, ours first, and a note is added
      to `notes` (the caller records the conflict).

    Identity: the key, or for a reworded entry its base entry's key (`pair_rewords`).

    Order: ours, with theirs' additions after the entry they follow on their side. With
    `reorders` (a flat list, the index: no section decides where an entry belongs), where only
    theirs reordered the entries both sides hold (reorganised under headings), theirs, with
    ours' additions so placed: a reordering is one side's change like any other.
    """
    if fixed is not None:
        base, ours, theirs = split_collisions(
            base, ours, theirs, fixed, notes, label, final is not None
        )
        fixed = or_its_promise(fixed)
    b_items = unique(base or ())
    o_items = pair_rewords(b_items, unique(ours), fixed)
    t_items = pair_rewords(b_items, unique(theirs), fixed)
    b = {x.key: x for x in b_items}
    o = {x.key: x for x in o_items}
    t = {x.key: x for x in t_items}
    o_keys, t_keys = [x.key for x in o_items], [x.key for x in t_items]
    if reorders and _reordered(b, t_keys, o_keys) and not _reordered(b, o_keys, t_keys):
        o_keys, t_keys = t_keys, o_keys
    order = union(None, o_keys, t_keys, key=lambda k: k)
    gone_with = _gone_with_final(b, o, t, final, fixed)
    out: list[Item] = []
    for k in order:
        bi, oi, ti = b.get(k), o.get(k), t.get(k)
        if k in gone_with:
            notes.append(Superseded.of(label(gone_with[k]), k in o))
            continue
        chosen = _one_side(bi, oi, ti) or _moved_on_both(bi, oi, ti, final)
        if chosen is not None:
            out.extend(x for x in chosen if x is not None)
            continue
        assert oi is not None and ti is not None  # _one_side took every removal
        kept, named, superseded = _both_changed(k, bi, oi, ti, final, fixed)
        if superseded:
            notes.append(Superseded.of(label(named), named is oi))
        else:
            notes.append(Both.of(label(named), [x.text for x in kept]))
        out.extend(kept)
    replaced = _replaced_on_both(b_items, o_items, t_items, fixed) if base is not None else None
    if replaced is not None:
        notes.append(Both.of(label(replaced[0]), [x.text for x in replaced]))
    return out


def _reordered(base: dict[Hashable, Item], side: list[Hashable], other: list[Hashable]) -> bool:
    """Whether `side` holds the entries it shares with the base and `other` in another order
    than the base does."""
    shared = set(side) & set(other)
    return [k for k in side if k in shared and k in base] != [k for k in base if k in shared]


def _gone_with_final(
    b: dict[Hashable, Item],
    o: dict[Hashable, Item],
    t: dict[Hashable, Item],
    final: str | None,
    fixed: Callable[[Hashable], bool] | None,
) -> dict[Hashable, Item]:
    """Entries one side added that are more versions of an entry the other side moved to
    `final` while this side changed it: two rewordings an earlier merge kept side by side (a
    third device consumed the item), or a second copy under the same commitment id. They go
    with the moved entry, as its rewording does (and are reported), whatever order the
    devices synced in."""
    if final is None:
        return {}
    out: dict[Hashable, Item] = {}
    for k, bi in b.items():
        if bi.place == final:
            continue
        for mine, other in ((o, t), (t, o)):
            moved, here = other.get(k), mine.get(k)
            if moved is None or moved.place != final or value_of(here) == value_of(bi):
                continue
            if here is not None and here.place == final:
                continue
            words = words_of(bi.text)
            for key, item in mine.items():
                if key in b or key in other or item.place == final:
                    continue
                own = fixed is not None and fixed(root_key(key))
                if (own and root_key(key) == k) or (
                    not own and dice(words, words_of(item.text)) >= SIMILAR
                ):
                    out[key] = item
    return out


def _moved_on_both(
    bi: Item | None, oi: Item | None, ti: Item | None, final: str | None
) -> list[Item | None] | None:
    """Both sides moved the entry to `final` and one left its words as they were: the other
    side's words (a note of how it was done) are the only change to them, so they stand
    alone, without a conflict."""
    if final is None or bi is None or oi is None or ti is None:
        return None
    if bi.place == final or oi.place != final or ti.place != final:
        return None
    words = sections.normalise(bi.text)
    if sections.normalise(oi.text) == words:
        return [ti]
    if sections.normalise(ti.text) == words:
        return [oi]
    return None


def _replaced_on_both(
    base: list[Item],
    ours: list[Item],
    theirs: list[Item],
    fixed: Callable[[Hashable], bool] | None = None,
) -> tuple[Item, Item] | None:
    """Both new entries where both sides replaced the same entry with new ones of other words
    (too unlike it to be rewordings), or one side replaced it and the other reworded it: both
    stay, as an addition and an edit that beats a removal, but the user is told, as for an
    entry changed differently on both sides. An entry is replaced where a new one sits right
    after the entry that preceded the removed one; one with an identity of its own (`fixed`:
    an index link, a commitment id) is another entry, never a replacement of an edited one."""
    own = (lambda k: False) if fixed is None else (lambda k: fixed(root_key(k)))
    keys = [x.key for x in base]
    mine, yours = replacements(keys, ours), replacements(keys, theirs)
    olds = {x.key: x for x in base}
    for replaced, other in ((mine, theirs), (yours, ours)):
        edited = {  # reworded (a move alone, to Consumed say, is no rewording)
            x.key: x
            for x in other
            if x.key in olds and sections.normalise(x.text) != sections.normalise(olds[x.key].text)
        }
        for k, new in replaced.items():
            if k not in edited or own(k) or own(new.key):
                continue
            if " ".join(olds[k].text.split()) not in resources.template_lines():
                return (new, edited[k]) if replaced is mine else (edited[k], new)
    for k, o_new in mine.items():
        t_new = yours.get(k)
        if (
            t_new is not None
            and sections.normalise(o_new.text) != sections.normalise(t_new.text)
            and " ".join(olds[k].text.split()) not in resources.template_lines()
        ):
            return o_new, t_new  # a template's example line is replaced on every device
    return None


def _one_side(bi: Item | None, oi: Item | None, ti: Item | None) -> list[Item | None] | None:
    """The entry when no more than one side changed it (or both made the same change); a
    removal on one side and a change on the other keeps the change. None: both sides changed
    it, differently."""
    bv, ov, tv = value_of(bi), value_of(oi), value_of(ti)
    if ov == tv:
        return [oi]
    if ov == bv:
        return [ti]
    if tv == bv:
        return [oi]
    if oi is None or ti is None:
        return [oi or ti]  # removed on one side, changed on the other
    return None


def _both_changed(
    k: Hashable,
    bi: Item | None,
    oi: Item,
    ti: Item,
    final: str | None,
    fixed: Callable[[Hashable], bool] | None,
) -> tuple[list[Item], Item, bool]:
    """An entry both sides changed differently: the versions that stay, the one the conflict
    note names, and whether that one's change was superseded (the other side moved the entry
    to `final`: only the moved version stays)."""
    if final is not None and final in (oi.place, ti.place) and oi.place != ti.place:
        done, other = (oi, ti) if oi.place == final else (ti, oi)
        if fixed is not None and fixed(root_key(k)) and not one_entry(bi, done, other):
            return [oi, ti], oi, False  # one id minted for two promises: only its own is done
        return [done], other, True  # the other side's change goes: reported, never silently
    return [oi, ti], oi, False
