"""One commitment id, or one index link, held by two different entries: each is its own
entry (id, its text), so that delivering or rewording one never takes the other."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence

from memsync.memory.merge.identity import COMMIT_ID, Item, item_text, value_of
from memsync.memory.merge.resemblance import SIMILAR, similarity
from memsync.memory.merge.result import Both, Collided

UNRELATED = 0.25  # word overlap (Dice) under which two promises under one id are two


def promise_text(text: str) -> str:
    """An entry's words without its commitment id, bullet, date and marks."""
    return item_text(COMMIT_ID.sub("", text))


def related(a: str, b: str) -> bool:
    """Whether two promises under one id may be one reworded: some words in common beyond a
    chance one ("Ask Pat about the Q3 numbers" and "Book flights for the offsite" share only
    "the"). An id held once on a side and once in the base is one promise however reworded,
    unless the two share nothing: then the id was minted twice and the base, which held one of
    them, never saw the other (it was forgotten, say)."""
    return similarity(a, b) >= UNRELATED


def continues(a: str, b: str) -> bool:
    """Whether one text is the other with something appended (a note on delivery)."""
    return a == b or a.startswith(b) or b.startswith(a)


def one_entry(base: Item | None, done: Item, other: Item) -> bool:
    """Whether `done` (moved to the final place) and `other` (changed, left in the first place)
    are one entry. An id can stand for two promises, and delivering one must not consume the
    other. Without a base the texts must be the same (the delivered one may have a note
    appended); with one, the id was one promise when both sides last agreed
    (`split_collisions` keys each of an id's promises apart), so `done` and `other`, however
    reworded, are that promise: moved to Delivered beats any change."""
    if base is not None:
        return True
    return continues(promise_text(done.text), promise_text(other.text))


def split_collisions(
    base: Sequence[Item] | None,
    ours: Sequence[Item],
    theirs: Sequence[Item],
    fixed: Callable[[Hashable], bool],
    notes: list[str],
    label: Callable[[Item], str],
    moves: bool = False,
) -> tuple[Sequence[Item] | None, Sequence[Item], Sequence[Item]]:
    """An id held by two different promises (minted twice, or copied onto a new line by hand
    or by Claude) names two entries: each gets the identity (id, its promise's text), one promise
    being a text and those continuing it (a delivered one may carry a note), so that
    delivering or rewording one never takes the other, whatever order they sit in. When the
    sides differ on such an id the collision is reported."""
    # an id the base holds once and a side holds once is that one promise on that side, however
    # reworded (one id, one promise, since both sides last agreed); in a file whose entries
    # move (commitments), held more than once, each of its entries much like the promise is a
    # rewording of it
    in_base = Counter(x.key for x in base or () if fixed(x.key))
    promise = {x.key: promise_text(x.text) for x in base or () if in_base[x.key] == 1}

    def bare_of(x: Item, counts: Counter) -> str:
        # held more than once on a side, an entry most of whose words are the base promise's
        # is that promise reworded (an earlier merge kept two rewordings side by side)
        if x.key in promise and (
            (counts[x.key] == 1 and (not moves or related(promise_text(x.text), promise[x.key])))
            or (moves and similarity(promise_text(x.text), promise[x.key]) >= SIMILAR)
        ):
            return promise[x.key]
        return promise_text(x.text)

    sides = [(s, Counter(x.key for x in s if fixed(x.key))) for s in (ours, theirs)]
    families: dict[Hashable, list[str]] = {}
    for items, counts in [(base or (), in_base), *sides]:
        for item in items:
            if fixed(item.key):
                bare = bare_of(item, counts)
                reps = families.setdefault(item.key, [])
                if not any(continues(bare, r) for r in reps):
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
                rep = next(r for r in families[x.key] if continues(bare, r))
                x = x._replace(key=(x.key, rep))
            out.append(x)
        return out

    def values(items: Sequence[Item] | None, k: Hashable) -> list[tuple[str, str] | None]:
        return sorted(value_of(x) for x in items or () if x.key == k)  # type: ignore[type-var]

    for k in sorted(split, key=str):
        bv, ov, tv = values(base, k), values(ours, k), values(theirs, k)
        if ov != tv and bv not in (ov, tv):
            versions = [x for x in (*ours, *theirs) if x.key == k]
            # an id is a promise's (commitments); an index link held twice is one line that
            # both sides changed differently
            kind = Collided if moves else Both
            notes.append(kind.of(label(versions[0]), [x.text for x in versions]))
    return (None if base is None else rekey(base)), rekey(ours), rekey(theirs)


def or_its_promise(own: Callable[[Hashable], bool]) -> Callable[[Hashable], bool]:
    """`fixed` over the keys `pair_rewords` makes too: an id's promise (id, text) is an
    identity as its id is."""

    def fixed(k: Hashable) -> bool:
        if isinstance(k, tuple) and len(k) == 2 and isinstance(k[1], str):
            return own(k[0])
        return own(k)

    return fixed
