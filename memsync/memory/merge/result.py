"""What a merge returns, and the one sentence that tells the user what it could not keep apart
(conflict records name entries by `entry_mark`, never by their text)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass


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


class ValueLost(str):
    """A merge note for a field both sides changed where one side's value is kept and the
    other's is not (it is in the losing copy, which goes to local history); a description
    keeps both texts and is a plain note."""


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
    """A merge note for an id that two devices gave two different promises: both promises
    are kept, each its own entry; the user should give one a new id, never pick one."""


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


def conflict_sentence(path: str, notes: list[str], discarded: bool) -> str | None:
    """One sentence for the user about what the merge could not keep apart, or None."""
    both = [n for n in notes if not isinstance(n, (Superseded, Collided, ValueLost))]
    moved = [n for n in notes if isinstance(n, Superseded)]
    collided = [n for n in notes if isinstance(n, Collided)]
    lost = [n for n in notes if isinstance(n, ValueLost)]
    said = []
    if collided:
        listed = short(", ".join(dict.fromkeys(collided)), 200)
        said.append(
            f"two devices gave two different promises the same id ({listed}); both are kept "
            "as separate promises: give one of them a new id (keep both)"
        )
    if both:
        listed = short(", ".join(dict.fromkeys(both)), 200)
        said.append(
            f"both devices changed the same entries differently ({listed}); both versions are "
            "in the file: keep the right one"
        )
    if lost:
        listed = short(", ".join(dict.fromkeys(lost)), 200)
        said.append(
            f"both devices changed {listed} differently; the file keeps the later edit's value"
        )
    if moved:
        listed = short(", ".join(dict.fromkeys(moved)), 200)
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


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
