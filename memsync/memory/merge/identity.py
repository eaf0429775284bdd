"""What makes an entry the same entry in three versions: its key (a commitment id, an index
line's link, otherwise its text without bullet, date and status marks), where it sits, its text."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import NamedTuple

from memsync.memory import sections

_MARKS = re.compile(r"[✓✔✅☑]|\((?:done|delivered|pending[^)]*)\)|—\s*(?:done|delivered)\b", re.I)
_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}\s*[:—–-]?\s*")
ITEM_PREFIX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
COMMIT_ID = re.compile(r"\[(c-[A-Za-z0-9_-]+)\]")
ID_KEY = re.compile(r"c-[A-Za-z0-9_-]+")
_LINK = re.compile(r"\]\(([^)\s]+)")


class Item(NamedTuple):
    """One entry of a structured file: its identity, where it sits, its raw text."""

    key: Hashable
    place: str
    text: str


def value_of(item: Item | None) -> tuple[str, str] | None:
    return None if item is None else (item.place, sections.normalise(item.text))


def unique(items: Sequence[Item]) -> list[Item]:
    """Two entries of one version with the same identity (a line written twice, an id held by
    two promises) stay apart: the second is (key, 1), the third (key, 2)..."""
    seen: dict[Hashable, int] = {}
    out = []
    for item in items:
        n = seen.get(item.key, 0)
        seen[item.key] = n + 1
        out.append(item if n == 0 else item._replace(key=(item.key, n)))
    return out


def root_key(key: Hashable) -> Hashable:
    """The identity under `unique`'s (key, n) for repeated ones."""
    while isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int):
        key = key[0]
    return key


def item_text(entry: str) -> str:
    """An entry's identity text: no bullet, date prefix, status marks; lowercase."""
    text = ITEM_PREFIX.sub("", entry.strip(), count=1)
    text = _DATE_PREFIX.sub("", text)
    text = _MARKS.sub("", text)
    return " ".join(text.split()).lower().rstrip(".")


def commitment_id(entry: str) -> str:
    m = COMMIT_ID.search(entry)
    return m.group(1) if m else item_text(COMMIT_ID.sub("", entry))


def index_key(line: str) -> str:
    m = _LINK.search(line)
    return f"link:{m.group(1)}" if m else f"line:{' '.join(line.split())}"


def own_identity(line: str) -> str | None:
    """A line's identity of its own, where it has one: a commitment's id or an index line's
    link. Such lines are one entry only with a line of the same id or link, never by their
    words (see `pair_rewords`'s `fixed`)."""
    m = COMMIT_ID.search(line)
    if m:
        return m.group(1)
    m = _LINK.search(line)
    return f"link:{m.group(1)}" if m else None
