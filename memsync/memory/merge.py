"""Three-way merges by memory type: pure functions of (base, ours, theirs).

base is the content both sides last agreed on (None if they never did; a file both made
from a template has the template as base). One rule, `merge_items`, holds for every structured
file: entries have an identity (commitment id, index link target, heading path + text,
carry-forward item); one side's change is taken; a removal or a move to Consumed/Delivered
beats an untouched entry; an edit beats a removal; entries changed differently on both sides
are both kept and returned as a `conflict` for the user. Where two versions cannot both be
kept (a fact file edited on both sides) the later edit wins and the other is returned as
`discarded` for local history. tests/oracle.py states the rule independently.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, NamedTuple, TypeVar

from memsync.memory import frontmatter as memory
from memsync.memory import sections, voice
from memsync.memory.digests import is_rollup
from memsync.memory.memtypes import type_of
from memsync.memory.sections import Section
from memsync.util import resources

T = TypeVar("T")


@dataclass(frozen=True)
class MergeResult:
    content: bytes
    conflict: str | None = None  # one sentence for the user: what both sides changed
    discarded: bytes | None = None  # a version not kept in the file, for local history
    ours_won: bool | None = None  # fact files: whether this device's edit was kept
    edited: float | None = None  # when the kept content was edited, where known
    tied: bool = False  # fact files: the edit times could not be told apart
    ours_set_aside: bool = False  # an entry this side changed went as the other side moved it
    marks: tuple[str, ...] = ()  # a conflict of versions kept side by side: them (entry_mark)


# --- generic three-way list union ---------------------------------------------------------


def union(
    base: Sequence[T] | None,
    ours: Sequence[T],
    theirs: Sequence[T],
    key: Callable[[T], Hashable],
    changed: Callable[[T | None, T, T], T] | None = None,
) -> list[T]:
    """Merge three lists of items identified by `key`, keeping order.

    Ours' order first; theirs' additions go after their nearest predecessor. An item removed
    on one side since base stays removed; an item both sides hold is taken from the side that
    changed it (via `changed(base_item, ours_item, theirs_item)`, default: ours).
    """
    base_items = {key(x): x for x in base or ()}
    ours_keys = {key(x) for x in ours}
    theirs_by_key = {key(x): x for x in theirs}
    result: list[T] = []
    for item in ours:
        k = key(item)
        if k in base_items and k not in theirs_by_key:
            continue  # removed on their side
        if k in theirs_by_key and changed is not None:
            item = changed(base_items.get(k), item, theirs_by_key[k])
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


# --- frontmatter ---------------------------------------------------------------------------


def _timestamp(value: object) -> float | None:
    """Seconds since the epoch of a frontmatter time (a date, a datetime, ISO 8601 text)."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def modified_of(meta: dict[str, Any] | None) -> float | None:
    """The frontmatter `modified` time, top level or under `metadata:` (Claude Code's shape)."""
    return _timestamp(memory.field(meta, "modified"))


class ValueLost(str):
    """A merge note for a field both sides changed where one side's value is kept and the
    other's is not (it is in the losing copy, which goes to local history); a description
    keeps both texts and is a plain note."""


def merge_meta(
    base: dict[str, Any] | None,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    ours_newer: bool,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Field by field: the side that changed a field wins. Both changed: lists union,
    mappings merge field by field, `modified` takes the later value, `description` keeps both
    texts, anything else the newer side's value; each of the last two is noted in `notes`
    (the last as a `ValueLost`)."""
    base = base or {}
    notes = [] if notes is None else notes
    out: dict[str, Any] = {}
    missing = object()
    for k in [*ours, *(k for k in theirs if k not in ours)]:
        b, o, t = base.get(k, missing), ours.get(k, missing), theirs.get(k, missing)
        if o == t:
            value = o
        elif o == b:
            value = t
        elif t == b:
            value = o
        elif isinstance(o, list) and isinstance(t, list):
            value = union(b if isinstance(b, list) else [], o, t, key=repr)
        elif isinstance(o, dict) and isinstance(t, dict):  # Claude Code's `metadata:` mapping
            value = merge_meta(b if isinstance(b, dict) else None, o, t, ours_newer, notes)
        elif k == "modified" and _timestamp(o) is not None and _timestamp(t) is not None:
            value = o if (_timestamp(o) or 0) >= (_timestamp(t) or 0) else t
        elif o is missing or t is missing:
            value = t if o is missing else o  # removed on one side, changed on the other
        elif k == "description" and isinstance(o, str) and isinstance(t, str):
            value = f"{o}; {t}" if t not in o else o
            if o not in t and t not in o:
                notes.append("the description")
            elif t not in o:
                value = t
        else:
            value = o if ours_newer else t
            notes.append(ValueLost(f"the field `{k}`"))
        if value is not missing:
            out[k] = value
    return out


# --- entries with an identity: the one rule under every structured merge ------------------


class Item(NamedTuple):
    """One entry of a structured file: its identity, where it sits, its raw text."""

    key: Hashable
    place: str
    text: str


def _value(item: Item | None) -> tuple[str, str] | None:
    return None if item is None else (item.place, sections.normalise(item.text))


def _unique(items: Sequence[Item]) -> list[Item]:
    """Two entries of one version with the same identity (ids that collided before) stay
    apart: the second is (key, 1), the third (key, 2)..."""
    seen: dict[Hashable, int] = {}
    out = []
    for item in items:
        n = seen.get(item.key, 0)
        seen[item.key] = n + 1
        out.append(item if n == 0 else item._replace(key=(item.key, n)))
    return out


_WORD = re.compile(r"\w+")
_ALL_PAIRS = 2_500  # removed x added entries up to which every pair is compared
_WINDOW = 16
SIMILAR = 0.5  # word overlap (Dice) from which a changed entry is a reword of a removed one


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(_ITEM_PREFIX.sub("", text.strip(), count=1).lower()))


def _dice(wa: Counter[str], wb: Counter[str]) -> float:
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
    return _dice(_words(a), _words(b))


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
    free = (lambda k: True) if fixed is None else (lambda k: not fixed(_root_key(k)))
    gone = [(i, x) for i, x in enumerate(base) if x.key not in side_keys and free(x.key)]
    new = [(j, x) for j, x in enumerate(side) if x.key not in base_keys and free(x.key)]
    if not gone or not new:
        return list(side)
    scored = []
    new_words = [(j, item, _words(item.text)) for j, item in new]
    # hundreds of entries changed at once: look among the nearest changed ones only, so a
    # merge stays linear (a reword stays near where it was)
    every = len(gone) * len(new) <= _ALL_PAIRS
    for rank, (i, old) in enumerate(gone):
        old_words = _words(old.text)
        centre = rank * len(new) // len(gone)  # where this entry would sit among the new
        near = new_words if every else new_words[max(0, centre - _WINDOW) : centre + _WINDOW + 1]
        for j, item, words in near:
            score = _dice(old_words, words)
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


def _root_key(key: Hashable) -> Hashable:
    """The identity under `_unique`'s (key, n) for repeated ones."""
    while isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int):
        key = key[0]
    return key


def _bare(text: str) -> str:
    """An entry's words without its commitment id, bullet, date and marks."""
    return item_text(_COMMIT_ID.sub("", text))


def _one_entry(base: Item | None, done: Item, other: Item) -> bool:
    """Whether `done` (moved to the final place) and `other` (changed, left in the first place)
    are one entry: an id can stand for two promises (ids minted on two devices before ids were
    unique), and delivering one must not consume the other. Without a base the texts must be
    the same (the delivered one may have a note appended); with one, the id was one promise
    when both sides last agreed (`_split_collisions` keys each of an id's promises apart), so
    `done` (the base entry moved, with a note or reworded as it was delivered) and `other`
    (however much reworded, as the design table says: anything -> Delivered only) are that
    promise."""
    if base is not None:
        return True
    d, o = _bare(done.text), _bare(other.text)
    return d == o or d.startswith(o) or o.startswith(d)


def _split_collisions(
    base: Sequence[Item] | None,
    ours: Sequence[Item],
    theirs: Sequence[Item],
    fixed: Callable[[Hashable], bool],
    notes: list[str],
    label: Callable[[Item], str],
    moves: bool = False,
) -> tuple[Sequence[Item] | None, Sequence[Item], Sequence[Item]]:
    """An id minted on two devices for two promises (ids that collided before they were
    unique) names two entries: each gets the identity (id, its promise's text), one promise
    being a text and those continuing it (a delivered one may carry a note), so that
    delivering or rewording one never takes the other, whatever order they sit in. When the
    sides differ on such an id the collision is reported."""
    # an id the base holds once and a side holds once is that one promise on that side, however
    # reworded (one id, one promise, since both sides last agreed); in a file whose entries
    # move (commitments), held more than once, each of its entries much like the promise is a
    # rewording of it
    in_base = Counter(x.key for x in base or () if fixed(x.key))
    promise = {x.key: _bare(x.text) for x in base or () if in_base[x.key] == 1}

    def bare_of(x: Item, counts: Counter) -> str:
        # held more than once on a side, an entry most of whose words are the base promise's
        # is that promise reworded (an earlier merge kept two rewordings side by side)
        if x.key in promise and (
            counts[x.key] == 1 or (moves and similarity(_bare(x.text), promise[x.key]) >= SIMILAR)
        ):
            return promise[x.key]
        return _bare(x.text)

    sides = [(s, Counter(x.key for x in s if fixed(x.key))) for s in (ours, theirs)]
    families: dict[Hashable, list[str]] = {}
    for items, counts in [(base or (), in_base), *sides]:
        for item in items:
            if fixed(item.key):
                bare = bare_of(item, counts)
                reps = families.setdefault(item.key, [])
                if not any(_continues(bare, r) for r in reps):
                    reps.append(bare)
    split = {k for k, reps in families.items() if len(reps) > 1}
    if not split:
        return base, ours, theirs

    def rekey(items: Sequence[Item]) -> list[Item]:
        counts = Counter(x.key for x in items if fixed(x.key))
        out = []
        for x in items:
            if x.key in split:
                bare = bare_of(x, counts)
                rep = next(r for r in families[x.key] if _continues(bare, r))
                x = x._replace(key=(x.key, rep))
            out.append(x)
        return out

    def values(items: Sequence[Item] | None, k: Hashable) -> list[tuple[str, str] | None]:
        return sorted(_value(x) for x in items or () if x.key == k)  # type: ignore[type-var]

    for k in sorted(split, key=str):
        bv, ov, tv = values(base, k), values(ours, k), values(theirs, k)
        if ov != tv and bv not in (ov, tv):
            versions = [x for x in (*ours, *theirs) if x.key == k]
            # an id is a promise's (commitments); an index link held twice is one line that
            # both sides changed differently
            kind = Collided if moves else Both
            notes.append(kind.of(label(versions[0]), [x.text for x in versions]))
    return (None if base is None else rekey(base)), rekey(ours), rekey(theirs)


class Both(str):
    """A merge note for an entry both sides changed differently: both versions stay in the
    file. `marks`: the versions by `entry_mark`, by which a device sees that the conflict is
    over once neither is in the file (a third device consumed the entry, say)."""

    marks: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str, versions: Sequence[str]) -> Both:
        note = cls(text)
        note.marks = tuple(entry_mark(v) for v in versions)
        return note


def entry_mark(text: str) -> str:
    """A hash of an entry's first line, whitespace-normalised: conflict records name the
    entries they are about by it, never by their text."""
    first = " ".join(next((x for x in text.splitlines() if x.strip()), "").split())
    return hashlib.sha256(first.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def marks_of(content: bytes) -> set[str]:
    """`entry_mark` of every line of a file: which entries it holds."""
    text = content.decode("utf-8", "surrogateescape")
    return {entry_mark(line) for line in text.splitlines() if line.strip()}


class Collided(Both):
    """A merge note for an id two devices minted for two different promises (ids that
    collided before they were unique): both promises are kept, each its own entry; the user
    should give one a new id, never pick one."""


def _continues(a: str, b: str) -> bool:
    return a == b or a.startswith(b) or b.startswith(a)


class Superseded(str):
    """A merge note for an entry changed on one side and moved to Consumed or Delivered on the
    other: only the moved version is kept (the change is in the history of the device that
    made it, where the merge replaced its file). `ours`: the change set aside was ours."""

    ours = False

    @classmethod
    def of(cls, text: str, ours: bool) -> Superseded:
        note = cls(text)
        note.ours = ours
        return note


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
        base, ours, theirs = _split_collisions(
            base, ours, theirs, fixed, notes, label, final is not None
        )
        fixed = _or_its_promise(fixed)
    b_items = _unique(base or ())
    o_items = pair_rewords(b_items, _unique(ours), fixed)
    t_items = pair_rewords(b_items, _unique(theirs), fixed)
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
    devices synced in; before, one rewording stayed Pending next to the consumed item."""
    if final is None:
        return {}
    out: dict[Hashable, Item] = {}
    for k, bi in b.items():
        if bi.place == final:
            continue
        for mine, other in ((o, t), (t, o)):
            moved, here = other.get(k), mine.get(k)
            if moved is None or moved.place != final or _value(here) == _value(bi):
                continue
            if here is not None and here.place == final:
                continue
            words = _words(bi.text)
            for key, item in mine.items():
                if key in b or key in other or item.place == final:
                    continue
                own = fixed is not None and fixed(_root_key(key))
                if (own and _root_key(key) == k) or (
                    not own and _dice(words, _words(item.text)) >= SIMILAR
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
    own = (lambda k: False) if fixed is None else (lambda k: fixed(_root_key(k)))
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


def _or_its_promise(own: Callable[[Hashable], bool]) -> Callable[[Hashable], bool]:
    """`fixed` over the keys `pair_rewords` makes too: an id's promise (id, text) is an
    identity as its id is."""

    def fixed(k: Hashable) -> bool:
        if isinstance(k, tuple) and len(k) == 2 and isinstance(k[1], str):
            return own(k[0])
        return own(k)

    return fixed


def _one_side(bi: Item | None, oi: Item | None, ti: Item | None) -> list[Item | None] | None:
    """The entry when no more than one side changed it (or both made the same change); a
    removal on one side and a change on the other keeps the change. None: both sides changed
    it, differently."""
    bv, ov, tv = _value(bi), _value(oi), _value(ti)
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
        if fixed is not None and fixed(_root_key(k)) and not _one_entry(bi, done, other):
            return [oi, ti], oi, False  # one id minted for two promises: only its own is done
        return [done], other, True  # the other side's change goes: reported, never silently
    return [oi, ti], oi, False


def _conflict(path: str, notes: list[str], discarded: bool) -> str | None:
    """One sentence for the user about what the merge could not keep apart, or None."""
    both = [n for n in notes if not isinstance(n, (Superseded, Collided, ValueLost))]
    moved = [n for n in notes if isinstance(n, Superseded)]
    collided = [n for n in notes if isinstance(n, Collided)]
    lost = [n for n in notes if isinstance(n, ValueLost)]
    said = []
    if collided:
        listed = _short(", ".join(dict.fromkeys(collided)), 200)
        said.append(
            f"two devices gave two different promises the same id ({listed}); both are kept "
            "as separate promises: give one of them a new id (keep both)"
        )
    if both:
        listed = _short(", ".join(dict.fromkeys(both)), 200)
        said.append(
            f"both devices changed the same entries differently ({listed}); both versions are "
            "in the file: keep the right one"
        )
    if lost:
        listed = _short(", ".join(dict.fromkeys(lost)), 200)
        said.append(
            f"both devices changed {listed} differently; the file keeps the later edit's value"
        )
    if moved:
        listed = _short(", ".join(dict.fromkeys(moved)), 200)
        said.append(
            f"an entry changed on one device was consumed or delivered on the other ({listed}); "
            "it is kept as consumed or delivered and the change (a rewording, or a new entry "
            "much like it written in its place) is in local history on the device that made "
            f"it (`memsync history {path}`): move it back if it still matters"
        )
    if not said:
        return None
    conflict = "; ".join(said) + f", then `memsync resolve {path}`"
    if discarded:
        conflict += f"; the other version is in local history (`memsync history {path}`)"
    return conflict


def _merge_entries(
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
        label=lambda x: f'an entry under "{_short(where, 40)}"' if where else "an entry",
    )
    return [x.text for x in merged]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- section trees -------------------------------------------------------------------------


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
    entries = _merge_entries(
        base.entries if base else None, ours.entries, theirs.entries, notes, ours.title
    )
    base_children = _by_heading(base.children) if base else {}
    ours_children = _by_heading(ours.children)
    theirs_children = _by_heading(theirs.children)
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
    return _space_headings(Section(heading, level, _tidy_blanks(entries), children))


def _merged_title(
    base: Section, ours: Section, theirs: Section, notes: list[str]
) -> tuple[str, int]:
    """A section's heading line and level: its title from the side that renamed it
    (`_renamed`) and its level from the side that moved it (`level_moves`), each on its own
    (fresh-eyes s34b, J2: a level moved on one side and a rename on the other were a title
    conflict offering the old title); renamed differently on both sides, both titles, as a
    description keeps both texts, and a conflict."""
    assert ours.heading is not None and theirs.heading is not None
    level = ours.level if theirs.level in (base.level, ours.level) else theirs.level
    if theirs.key in (base.key, ours.key):
        title, words = ours, ours.title
    elif ours.key == base.key:
        title, words = theirs, theirs.title
    else:
        title, words = ours, f"{ours.title} / {theirs.title}"
        notes.append(
            Both.of(f'the title of "{_short(base.title, 40)}"', [f"{'#' * level} {words}"])
        )
    if title.level == level and words == title.title:
        return title.heading or "", level
    first = title.heading.splitlines(keepends=True)[0] if title.heading else "\n"
    line = f"{'#' * level} {words}" + first[len(first.rstrip("\r\n")) :]
    return line + (title.heading or "")[len(first) :], level


Key = tuple[str, int]


def _titled(section: Section) -> tuple[str, int]:
    return section.key, section.level


def _renamed(
    base: dict[Key, Section], ours: dict[Key, Section], theirs: dict[Key, Section]
) -> tuple[dict[Key, Section], dict[Key, Section]]:
    """Each side with the sections it renamed under their base headings (`_renames`).
    Merged with the other side's section, an entry the other side added under the old title
    goes under the new one; without the pairing the old title came back as a second section
    holding it, and the words the rename was meant to drop with it (fresh-eyes s32c, R1: a
    forget held up while one device renamed a thread and another added to it). Renamed on
    both sides, the two are one section too (its entries once, not twice). A section the
    other side removed is the renamed one merged with that removal: the entries the
    renaming side left alone go with it, as they would under the old title (fresh-eyes s33c,
    G3: the other side had moved an entry into another section and dropped the title; kept
    whole, the renamed section held the moved entry a second time)."""
    ours_as, theirs_as = _renames(base, ours), _renames(base, theirs)
    return (
        {ours_as.get(k, k): child for k, child in ours.items()},
        {theirs_as.get(k, k): child for k, child in theirs.items()},
    )


def renamed_sections(base: list[Section], side: list[Section]) -> list[tuple[Section, Section]]:
    """(base section, the section of `side` it was renamed to) for each rename (`_renames`)."""
    b, s = _by_heading(base), _by_heading(side)
    return [(b[old], s[new]) for new, old in _renames(b, s).items()]


def _renames(base: dict[Key, Section], side: dict[Key, Section]) -> dict[Key, Key]:
    """{new key: base key} for the sections `side` renamed: a new heading there, in place of
    one gone from there, over at least half of that one's entries, whatever its words
    (fresh-eyes s33a, N3: a thread retitled in other words brought back an entry the other
    side removed from it), or, for a section with a title and nothing under it yet, where no
    entry can tell, a title much like its own (s33b, F3: a thread retitled on one device while
    another wrote its first entry was two threads). The section holding the most of its
    entries as they were first (s33a, N6: a new thread whose entry reads like the old one's
    was taken for it over the thread retitled, entries and all), then the most alike titles."""
    gone = [k for k in base if k not in side]
    new = [k for k in side if k not in base]
    if not gone or not new:
        return {}
    pairs = []
    for i, n in enumerate(new):
        for j, g in enumerate(gone):
            # at another level too: `level_moves` put a section moved a level back among
            # its base siblings, and it may have been renamed as well (fresh-eyes s34b, J2)
            alike = similarity(side[n].title, base[g].title)
            kept, exact = _kept_entries(base[g], side[n])
            if kept or (alike >= SIMILAR and _title_only(base[g])):
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
    sections merge with their own under the same parent, so the other side's edits under
    the old place came back there, the title twice (fresh-eyes s33a, N4; s33b, F5). The
    tree renders the same text: the moved section sits where it did, under its new heading."""
    b = _by_heading(base.children)
    children = list(side.children)

    def keys() -> list[Key]:
        return list(_by_heading(children))

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
            and _same_or_renamed(b[k], last)
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
            and _same_or_renamed(inner, after)
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


def _same_or_renamed(base: Section, side: Section) -> bool:
    """Whether `side` is `base`, under its title or renamed (`_renames`' test), at any level."""
    return side.key == base.key or _kept_entries(base, side)[0] > 0


def _title_only(section: Section) -> bool:
    """A section with a title and nothing under it yet."""
    return not section.children and not any(e.strip() for e in section.entries)


def _kept_entries(base: Section, renamed: Section) -> tuple[float, float]:
    """The share of the entries under a base section that are under the renamed one, in the
    same subsections, as they were or reworded (`pair_rewords`: fresh-eyes s33b, F1: a side
    that also reworded most of them was no rename, and the section was there twice), 0
    below half, and the share of them as they were; a memory template's lines left out: two
    sessions a digest template began hold the same ones, and a session removed beside a new
    one is no rename."""
    templates = resources.template_lines()

    def items(node: Section) -> dict[tuple[str, ...], list[Item]]:
        out: dict[tuple[str, ...], list[Item]] = {}
        for n, path in _with_paths(node, (), {}):
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


def _by_heading(children: list[Section]) -> dict[tuple[str, int], Section]:
    """Sections by heading, a heading written twice (a second session the same day appending
    its own `## <date>` block) told apart by occurrence: each block merges with its own."""
    seen: Counter[str] = Counter()
    out = {}
    for child in children:
        out[(child.key, seen[child.key])] = child
        seen[child.key] += 1
    return out


def _tidy_blanks(entries: list[str]) -> list[str]:
    """After a union, blank lines that separated the old last entry belong to the new one."""
    if not entries:
        return entries
    out = [e.rstrip("\n") + "\n" if i + 1 < len(entries) else e for i, e in enumerate(entries)]
    out = [e for e in out if e.strip() or e == entries[0]]
    if out and entries[-1].endswith("\n\n") and not out[-1].endswith("\n\n"):
        out[-1] += "\n"
    return out


def _space_headings(root: Section) -> Section:
    """Make sure every heading after the first piece of text has a blank line before it."""
    previous: list[tuple[Section, int]] = []  # (node, entry index or -1 for the heading)

    def visit(node: Section) -> None:
        if node.heading is not None:
            if previous:
                owner, index = previous[-1]
                text = owner.heading if index < 0 else owner.entries[index]
                if text and text.strip() and not text.endswith("\n\n"):
                    fixed = sections.ensure_newline(text) + "\n"
                    if index < 0:
                        owner.heading = fixed
                    else:
                        owner.entries[index] = fixed
            previous.append((node, -1))
        for i in range(len(node.entries)):
            previous.append((node, i))
        for child in node.children:
            visit(child)

    visit(root)
    return root


# --- per-type strategies (body level) -------------------------------------------------------

_MARKS = re.compile(r"[✓✔✅☑]|\((?:done|delivered|pending[^)]*)\)|—\s*(?:done|delivered)\b", re.I)
_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}\s*[:—–-]?\s*")
_ITEM_PREFIX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_COMMIT_ID = re.compile(r"\[(c-[A-Za-z0-9_-]+)\]")
_ID_KEY = re.compile(r"c-[A-Za-z0-9_-]+")


def item_text(entry: str) -> str:
    """An entry's identity text: no bullet, date prefix, status marks; lowercase."""
    text = _ITEM_PREFIX.sub("", entry.strip(), count=1)
    text = _DATE_PREFIX.sub("", text)
    text = _MARKS.sub("", text)
    return " ".join(text.split()).lower().rstrip(".")


def commitment_id(entry: str) -> str:
    m = _COMMIT_ID.search(entry)
    return m.group(1) if m else item_text(_COMMIT_ID.sub("", entry))


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
            if _ITEM_PREFIX.match(entry) and sections.entry_key(entry):
                items.append(Item(key(entry), place, entry))
            else:
                rest.append(entry)
        node.entries = rest
    return copy, items


def _merge_places(
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
    return _space_headings(merged)


def _final_in_order(
    items: list[Item], ours: list[Item], theirs: list[Item], final: str
) -> list[Item]:
    """`items` with those in the `final` place (Delivered, Consumed) in the order the sides
    hold them there, ours first and theirs' additions after the entry they follow: merged by
    identity across both places, an item one side moved kept the place in the order the other
    side left it in, at the top of Delivered, where compaction, which keeps the last ones as
    the most recent, trimmed it first (the devices machine, seed 37: a promise delivered that
    day was trimmed, older ones kept)."""
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
    base: Section | None, ours: Section, theirs: Section, notes: list[str] | None = None
) -> Section:
    """By commitment id: a change on one side wins; Delivered beats Open; an id both sides
    minted for different promises keeps both (and is reported)."""
    return _merge_places(
        base,
        ours,
        theirs,
        [] if notes is None else notes,
        ("Open", "Delivered"),
        commitment_id,
        lambda x: f"commitment [{commitment_id(x.text)}]",
        lambda k: isinstance(k, str) and _ID_KEY.fullmatch(k) is not None,
    )


def merge_carry_forward(
    base: Section | None, ours: Section, theirs: Section, notes: list[str] | None = None
) -> Section:
    """Union of Pending; an item consumed on either side leaves Pending, even if the other
    side reworded it."""
    return _merge_places(
        base,
        ours,
        theirs,
        [] if notes is None else notes,
        ("Pending", "Consumed"),
        item_text,
        lambda x: f"a {x.place} item",
    )


_SESSION = re.compile(r"^session\b", re.I)


def _has_sessions(root: Section) -> bool:
    return any(_SESSION.match(c.title) for c in root.children)


def _retitled_sessions(base: Section | None, side: Section) -> bool:
    """Whether `side` has no `## Session` block only because it retitled its base's sessions
    (`## Parser day` for `## Session 09:00 …`): then its sections are those sessions, not one
    session's body to wrap in a block of its own, which kept the old session beside the new
    with every entry twice."""
    if base is None or _has_sessions(side) or not _has_sessions(base):
        return False
    return bool(_renames(_by_heading(base.children), _by_heading(side.children)))


def _hash8(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def session_blocks(
    root: Section, meta: dict[str, Any], raw: str, default: str | None = None
) -> Section:
    """A digest whose body has no `## Session <id>` block is one session: wrap it in one.

    Its id: the frontmatter `session_id`, else `default` (the merge passes the base's, so
    three versions of one session stay one session), else a hash of the body (two digests
    written on their own are two sessions)."""
    if any(_SESSION.match(c.title) for c in root.children):
        return root
    sid = (
        memory.field(meta, "session_id") or default or hashlib.sha256(raw.encode()).hexdigest()[:8]
    )
    wrapped = Section(f"## Session {sid}\n\n", 2)
    if any(child.level <= 2 for child in root.children):
        for child in root.children:
            for node in child.walk():
                node.level += 1
                node.heading = "#" + (node.heading or "")
    wrapped.entries = [e for e in root.entries if e.strip()]
    wrapped.children = root.children
    return Section(None, 0, [e for e in root.entries if not e.strip()][:1], [wrapped])


# --- line-based merge for unknown types -----------------------------------------------------


def _hunks(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    matcher = difflib.SequenceMatcher(a=base, b=other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def merge_lines(base: str | None, ours: str, theirs: str) -> str | None:
    """diff3 over lines. None when both sides changed the same lines differently."""
    if base is None:
        ours_lines = ours.splitlines(keepends=True)
        extra = [x for x in theirs.splitlines(keepends=True) if x not in ours_lines]
        return (
            "".join([*ours_lines, *[sections.ensure_newline(x) for x in extra]]) if extra else ours
        )
    b = base.splitlines(keepends=True)
    changes = sorted(
        [(*h, 0) for h in _hunks(b, ours.splitlines(keepends=True))]
        + [(*h, 1) for h in _hunks(b, theirs.splitlines(keepends=True))],
        key=lambda h: (h[0], h[1], h[3]),
    )
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(changes):
        start, end, lines, _ = changes[i]
        group = [changes[i]]
        j = i + 1
        while j < len(changes) and (
            changes[j][0] < end
            or (changes[j][0] == start and changes[j][1] == start)
            or (start == end == changes[j][0])
        ):
            group.append(changes[j])
            end = max(end, changes[j][1])
            j += 1
        sides = {g[3] for g in group}
        if len(sides) > 1:
            texts = {tuple(g[2]) for g in group}
            spans = {(g[0], g[1]) for g in group}
            if len(texts) == 1 and len(spans) == 1:
                group = group[:1]
            elif all(g[0] == g[1] for g in group) and len(spans) == 1:
                pass  # both inserted at the same point: keep both, ours first
            else:
                return None
        out.extend(b[pos:start])
        for g in group:
            out.extend(g[2])
        pos = end
        i = j
    out.extend(b[pos:])
    return "".join(out)


# --- the entry point -----------------------------------------------------------------------

BodyMerge = Callable[[Section | None, Section, Section, list[str]], Section]
STRATEGIES: dict[str, BodyMerge] = {
    "sections": merge_tree,
    "digest": merge_tree,
    "commitments": merge_commitments,
    "carry_forward": merge_carry_forward,
}


def _edit_time(
    meta: dict[str, Any], base_meta: dict[str, Any] | None, mtime: float | None
) -> float | None:
    """When this side's edit was made: the frontmatter `modified` if this edit set it (it
    differs from the base's), else the file's mtime on the device that edited it."""
    when = modified_of(meta)
    if when is not None and (base_meta is None or modified_of(base_meta) != when):
        # a day, not a time (`modified: 2026-11-24`): the mtime says when that day, if it is
        # that day in some time zone; two edits the same day are then told apart
        if (
            mtime is not None
            and _date_only(memory.field(meta, "modified"))
            and when - 14 * 3600 <= mtime < when + 38 * 3600
        ):
            return mtime
        return when
    return mtime


def _date_only(value: object) -> bool:
    if isinstance(value, date) and not isinstance(value, datetime):
        return True
    return isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()) is not None


def _stamp(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Versions(NamedTuple):
    """One file's three versions as the merge reads them (text, or bytes that are not UTF-8)
    and as the two sides hold them, with when each side's file was edited."""

    path: str
    base: str | bytes | None
    ours: str | bytes
    theirs: str | bytes
    ours_raw: bytes
    theirs_raw: bytes
    ours_mtime: float | None
    theirs_mtime: float | None


def _merge_fact(
    v: _Versions,
    b_meta: dict[str, Any] | None,
    o_meta: dict[str, Any],
    t_meta: dict[str, Any],
    what: str = "both devices changed this file",
) -> MergeResult:
    """One version wins whole: the one edited later. The other goes to local history."""
    path, ours, theirs = v.path, v.ours_raw, v.theirs_raw
    o_time = _edit_time(o_meta, b_meta, v.ours_mtime)
    t_time = _edit_time(t_meta, b_meta, v.theirs_mtime)
    if o_time is not None and t_time is not None and o_time != t_time:
        ours_newer = o_time > t_time
        won: float | None
        won, lost = (o_time, t_time) if ours_newer else (t_time, o_time)
        side = "this device's version" if ours_newer else "the remote version"
        other = "the remote version" if ours_newer else "this device's version"
        why = f"kept {side}, edited later ({_stamp(won)}; {other} was edited {_stamp(lost)})"
        tied = False
    else:
        ours_newer = ours >= theirs
        won = o_time if ours_newer else t_time
        side = "this device's version" if ours_newer else "the remote version"
        why = f"the edit times could not be told apart; kept {side}"
        tied = True
    winner, loser = (ours, theirs) if ours_newer else (theirs, ours)
    return MergeResult(
        winner,
        conflict=f"{what}: {why}; the other version is in local history (`memsync history {path}`)",
        discarded=loser,
        ours_won=ours_newer,
        edited=won,
        tied=tied,
    )


def _eol(*versions: str | None) -> str:
    """The line ending the merged file gets: CRLF if most lines of ours (then theirs) use it."""
    for text in versions:
        if text and "\n" in text:
            crlf = text.count("\r\n")
            return "\r\n" if crlf * 2 > text.count("\n") else "\n"
    return "\n"


def merge(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    *,
    ours_mtime: float | None = None,
    theirs_mtime: float | None = None,
) -> MergeResult:
    """Merge two versions of the memory file `path` that both changed since `base`.

    `ours_mtime`/`theirs_mtime`: when each side's file was edited on the device that edited
    it (its mtime there), used where the frontmatter carries no `modified` of that edit.
    Line endings are kept: the merge runs on LF text and CRLF files come back CRLF.
    """
    if ours == theirs:
        return MergeResult(ours)
    if base is not None and ours == base:
        return MergeResult(theirs)
    if base is not None and theirs == base:
        return MergeResult(ours)
    try:
        texts = [x.decode("utf-8") if x is not None else None for x in (base, ours, theirs)]
    except UnicodeDecodeError:
        versions = _Versions(path, base, ours, theirs, ours, theirs, ours_mtime, theirs_mtime)
        return _merge_unknown(versions, {}, {}, None)
    b_text, o_text, t_text = (x.replace("\r\n", "\n") if x is not None else None for x in texts)
    assert o_text is not None and t_text is not None
    eol = _eol(texts[1], texts[2])
    result = _merge_text(
        _Versions(path, b_text, o_text, t_text, ours, theirs, ours_mtime, theirs_mtime)
    )
    if result.ours_won is None and eol == "\r\n":
        content = result.content.decode("utf-8").replace("\r\n", "\n").replace("\n", "\r\n")
        return MergeResult(
            content.encode(),
            result.conflict,
            result.discarded,
            None,
            result.edited,
            ours_set_aside=result.ours_set_aside,
            marks=result.marks,
        )
    return result


def _merge_sections(
    strategy: str,
    has_base: bool,
    b_doc: memory.Document | None,
    o_doc: memory.Document,
    t_doc: memory.Document,
    notes: list[str],
    kind: str = "",
) -> str:
    """The merged body of a file made of sections, by its type's strategy (a digest's sessions
    compared as blocks, a voice_calibration section one side folded into its rules folded on
    all three first: `voice.rebase_folds`); `has_base`: the base is a synced version, not a
    template."""
    o_meta, t_meta = o_doc.meta or {}, t_doc.meta or {}
    b_tree = sections.parse(b_doc.body) if b_doc else None
    o_tree, t_tree = sections.parse(o_doc.body), sections.parse(t_doc.body)
    if kind == "voice_calibration" and has_base and b_tree is not None:
        b_tree, o_tree, t_tree = voice.rebase_folds(b_tree, o_tree, t_tree)
    blocks = [x for x in (b_tree, o_tree, t_tree) if x is not None]
    if strategy == "digest" and has_base and not any(map(_has_sessions, blocks)):
        pass  # one session in three versions, none in blocks: merged as it is
    elif strategy == "digest":
        sid = None
        if b_tree is not None and b_doc is not None and has_base:
            sid = memory.field(b_doc.meta, "session_id") or _hash8(b_doc.body)
            b_tree = session_blocks(b_tree, b_doc.meta or {}, b_doc.body, sid)
        if not _retitled_sessions(b_tree if has_base else None, o_tree):
            o_tree = session_blocks(o_tree, o_meta, o_doc.body, sid)
        if not _retitled_sessions(b_tree if has_base else None, t_tree):
            t_tree = session_blocks(t_tree, t_meta, t_doc.body, sid)
        if b_tree is not None and not has_base:  # the template: compare by session
            b_tree = None
    if has_base and b_tree is not None:
        o_tree, t_tree = level_moves(b_tree, o_tree), level_moves(b_tree, t_tree)
    body = STRATEGIES[strategy](b_tree, o_tree, t_tree, notes).render()
    if strategy in ("sections", "digest") and has_base and b_tree is not None:
        moved = _moved_and_reworded(b_tree, o_tree, t_tree)
        if moved is not None:
            notes.append(moved)
    if body.endswith("\n\n") and not any(x.endswith("\n\n") for x in (o_doc.body, t_doc.body)):
        body = body.rstrip("\n") + "\n"  # no blank line at the end that neither side had
    if not body.strip() and all(x.strip() for x in (o_doc.body, t_doc.body)):
        body = ""  # each side removed what the other kept: no blank line left under the fields
    return body


def _moved_and_reworded(base: Section, ours: Section, theirs: Section) -> Both | None:
    """An entry one side moved, as it was, to another section while the other side reworded
    it where it was, or moved it to a third section. Sections merge one by one, so the entry
    stays twice (the old words where they went and the new where they were, or in both new
    places): both are kept, and the user is told, as for an entry changed differently on
    both sides."""
    names: dict[int, str] = {}  # a section a side renamed, by its base title (`_renames`)
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
                where = _short(path[-1], 40) if path[-1] else ""
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
    a rename is no move of what the section holds (fresh-eyes s33a, N5: a title reworded
    on one side and an entry under it on the other was called a conflict)."""
    b, s = _by_heading(base.children), _by_heading(side.children)
    renamed = _renames(b, s)
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
    for node, path in _with_paths(tree, (), names or {}):
        out[path] = {sections.entry_key(e): e for e in node.entries if e.strip()}
    return out


def _with_paths(
    node: Section, path: tuple[str, ...], names: dict[int, str]
) -> list[tuple[Section, tuple[str, ...]]]:
    here = (*path, names.get(id(node), node.key))
    out = [(node, here)]
    for child in node.children:
        out.extend(_with_paths(child, here, names))
    return out


def _merge_text(v: _Versions) -> MergeResult:
    """UTF-8 text: by its type (a fact wins whole, sections and the index merge entry by
    entry, anything else line by line), the frontmatter field by field."""
    base, ours, theirs = v.base, v.ours, v.theirs
    assert isinstance(ours, str) and isinstance(theirs, str) and not isinstance(base, bytes)
    try:
        o_doc, t_doc = memory.parse(ours), memory.parse(theirs)
        b_doc = memory.parse(base) if base is not None else None
    except memory.FrontmatterError:
        return _merge_unknown(v, {}, {}, None)
    mtype = type_of(v.path, o_doc.meta or t_doc.meta)
    strategy = mtype.merge
    if b_doc is None and strategy != "index":  # the index template's lines are real entries
        b_doc = _template_doc(mtype.name, ours, theirs)
    o_meta, t_meta = o_doc.meta or {}, t_doc.meta or {}
    b_meta = b_doc.meta if b_doc is not None else None
    o_time = _edit_time(o_meta, b_meta, v.ours_mtime)
    t_time = _edit_time(t_meta, b_meta, v.theirs_mtime)
    if strategy == "fact":
        if b_doc is not None and base is None:  # two files made from the template
            if o_doc == b_doc:
                return MergeResult(v.theirs_raw, edited=t_time)
            if t_doc == b_doc:
                return MergeResult(v.ours_raw, edited=o_time)
        return _merge_fact(v, b_meta, o_meta, t_meta)
    notes: list[str] = []
    if strategy == "index":
        body = _merge_index(b_doc, o_doc, t_doc, notes)
    elif strategy in STRATEGIES:
        if strategy == "digest" and is_rollup(v.path):
            # a roll-up's sections are days, not sessions: two devices that rolled up the same
            # month hold the same days, merged day by day (compaction makes it from dailies)
            strategy = "sections"
            b_doc = b_doc if base is not None else None
        body = _merge_sections(strategy, base is not None, b_doc, o_doc, t_doc, notes, mtype.name)
    else:
        return _merge_unknown(v, o_meta, t_meta, b_meta)
    newer = _newer(o_time, t_time, ours, theirs)
    text, lost = _under_merged_meta(body, b_meta, o_doc, t_doc, (ours, theirs), newer, notes)
    discarded = (v.theirs_raw if newer else v.ours_raw) if lost else None  # the value not kept
    conflict = _conflict(v.path, notes, discarded is not None)
    edited = max((x for x in (o_time, t_time) if x is not None), default=None)
    set_aside = any(isinstance(n, Superseded) and n.ours for n in notes)
    # a conflict only about versions kept side by side is over once none of them is left
    marks: tuple[str, ...] = ()
    if conflict and discarded is None and all(isinstance(n, Both) for n in notes):
        marks = tuple(sorted({m for n in notes if isinstance(n, Both) for m in n.marks}))
    return MergeResult(
        text.encode(), conflict, discarded, None, edited, ours_set_aside=set_aside, marks=marks
    )


def _template_doc(type_name: str, ours: str, theirs: str) -> memory.Document | None:
    """The type's template as the base of a file both devices created on their own (None:
    the type has no template, or it does not parse)."""
    virtual = template_base(type_name, ours, theirs)
    if virtual is None:
        return None
    try:
        return memory.parse(virtual)
    except memory.FrontmatterError:
        return None


def _under_merged_meta(
    body: str,
    b_meta: dict[str, Any] | None,
    o_doc: memory.Document,
    t_doc: memory.Document,
    texts: tuple[str, str],
    ours_newer: bool,
    notes: list[str],
) -> tuple[str, bool]:
    """The merged file: the merged body under the merged frontmatter (none if neither side
    had any), and whether a field's value was lost (the losing copy then goes to history)."""
    if o_doc.meta is None and t_doc.meta is None:
        return body, False
    meta_notes: list[str] = []
    meta = merge_meta(b_meta, o_doc.meta or {}, t_doc.meta or {}, ours_newer, meta_notes)
    lost = any(isinstance(n, ValueLost) for n in meta_notes)
    notes.extend(meta_notes)
    return _render_like(meta, body, o_doc, t_doc, *texts), lost


def _newer(o_time: float | None, t_time: float | None, ours: str, theirs: str) -> bool:
    if o_time is not None and t_time is not None and o_time != t_time:
        return o_time > t_time
    return ours >= theirs


def _render_like(
    meta: dict[str, Any],
    body: str,
    o_doc: memory.Document,
    t_doc: memory.Document,
    ours: str,
    theirs: str,
) -> str:
    """The merged file, reusing a side's frontmatter text verbatim when its fields won whole
    (a merge does not reformat what nobody changed)."""
    for doc, text in ((o_doc, ours), (t_doc, theirs)):
        if doc.meta == meta:
            source, _ = memory.split(text)
            if source is not None:
                return f"---\n{source}---\n{body}"
    return memory.render(meta, body)


_PLACEHOLDER = re.compile(r"\\\{(title|slug|date|session|nonce|modified)\\\}")
_TEMPLATE_FILE = {"callbacks": "callbacks.md", "commitments": "commitments.md"}


def template_base(type_name: str, ours: str, theirs: str) -> str | None:
    """For a file both devices created on their own: its template, as the common ancestor.

    A template line with a placeholder (`{date}`, `{title}`...) stands for every line of
    either side it matches, so placeholder lines one side filled in and the other left stay
    gone, and fields one side changed from the template are taken from that side.
    """
    try:
        template = resources.template_text(_TEMPLATE_FILE.get(type_name, f"{type_name}.md"))
    except (FileNotFoundError, OSError):
        return None
    lines = (ours + theirs).splitlines(keepends=True)
    out = []
    for line in template.splitlines(keepends=True):
        escaped = re.escape(line.rstrip("\n"))
        if not _PLACEHOLDER.search(escaped):
            out.append(line)
            continue
        pattern = re.compile(_PLACEHOLDER.sub(r".+?", escaped) + r"\n?")
        matches = dict.fromkeys(x for x in lines if pattern.fullmatch(x))
        if line.startswith("---") or line.lstrip().startswith(("name:", "description:")):
            out.extend(list(matches)[:1])
        else:
            out.extend(matches)
    return "".join(out)


_LINK = re.compile(r"\]\(([^)\s]+)")


def _index_key(line: str) -> str:
    m = _LINK.search(line)
    return f"link:{m.group(1)}" if m else f"line:{' '.join(line.split())}"


def own_identity(line: str) -> str | None:
    """A line's identity of its own, where it has one: a commitment's id or an index line's
    link. Such lines are one entry only with a line of the same id or link, never by their
    words (see `pair_rewords`'s `fixed`)."""
    m = _COMMIT_ID.search(line)
    if m:
        return m.group(1)
    m = _LINK.search(line)
    return f"link:{m.group(1)}" if m else None


def _index_label(item: Item) -> str:
    """Names where, never what (see `_merge_entries`): a link line by its target, any other
    line by its position only; its text would outlive a `forget --match` in logs."""
    key = _index_key(item.text)
    return f"the index line for {key[5:]}" if key.startswith("link:") else "a line of the index"


def _merge_index(
    base: memory.Document | None,
    ours: memory.Document,
    theirs: memory.Document,
    notes: list[str],
) -> str:
    """MEMORY.md: index lines by link target (other lines by their text)."""

    def items(doc: memory.Document | None) -> list[Item] | None:
        if doc is None:
            return None
        lines = _with_newline(doc.body.splitlines(keepends=True))
        return [Item(_index_key(x), "", x) for x in lines]

    merged = merge_items(
        items(base),
        items(ours) or [],
        items(theirs) or [],
        notes,
        label=_index_label,
        fixed=lambda k: isinstance(k, str) and k.startswith("link:"),
        reorders=True,
    )
    blank_runs: list[str] = []
    for line in (x.text for x in merged):  # collapse blank lines the union may have stacked up
        if not line.strip() and blank_runs and not blank_runs[-1].strip():
            continue
        blank_runs.append(line)
    return "".join(blank_runs)


def _with_newline(entries: list[str]) -> list[str]:
    return [sections.ensure_newline(e) for e in entries]


def _merge_unknown(
    v: _Versions,
    o_meta: dict[str, Any],
    t_meta: dict[str, Any],
    b_meta: dict[str, Any] | None,
) -> MergeResult:
    """Line by line where both are text and their changes do not overlap; else one version
    wins whole, as a fact does."""
    merged = None
    if isinstance(v.ours, str) and isinstance(v.theirs, str) and not isinstance(v.base, bytes):
        merged = merge_lines(v.base, v.ours, v.theirs)
    if merged is not None:
        eol = _eol(v.ours_raw.decode("utf-8", "replace"), v.theirs_raw.decode("utf-8", "replace"))
        return MergeResult(merged.replace("\n", eol).encode())
    return _merge_fact(v, b_meta, o_meta, t_meta, "both devices changed the same lines")


def describe_for_others(path: str, result: MergeResult) -> str:
    """A merge's conflict as the other devices should read it: neutral about which device is
    "this" one. A fact file's losing version is in local history on the device that made it:
    the merging device keeps its own, the other keeps its own when the winner replaces it."""
    if result.ours_won is None:
        return (result.conflict or "").split("; the other version is in local history")[0]
    if result.tied:
        return (
            "both devices changed this file and the edit times could not be told apart; one "
            "version was kept, the other is in local history on the device that made it "
            f"(`memsync history {path}`)"
        )
    when = f" ({_stamp(result.edited)})" if result.edited is not None else ""
    return (
        f"both devices changed this file; the version edited later{when} was kept, and the "
        f"other is in local history on the device that made it (`memsync history {path}`)"
    )
