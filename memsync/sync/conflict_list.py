"""This device's conflicts (meta.json "conflicts"), owned by one object: every change to the
list goes through it. What the remote record does with them is sync/conflicts.py."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator


class Conflict(NamedTuple):
    """A conflict this device reports (status, `--json`, the primer) until it is resolved."""

    file: str
    detail: str
    at: float
    id: str | None = None  # its entry in the remote record: a `resolve` elsewhere clears it
    marks: tuple[str, ...] = ()  # the versions kept side by side (merge.entry_mark)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "detail": self.detail, "at": self.at}
        if self.id is not None:
            out["id"] = self.id
        if self.marks:
            out["marks"] = list(self.marks)
        return out

    @classmethod
    def from_json(cls, item: object) -> Conflict | None:
        """One meta.json entry; None for one memsync did not write."""
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            return None
        at, marks = item.get("at"), item.get("marks")
        return cls(
            item["file"],
            str(item.get("detail")),
            float(at) if isinstance(at, (int, float)) else 0.0,
            item["id"] if isinstance(item.get("id"), str) else None,
            tuple(m for m in marks if isinstance(m, str)) if isinstance(marks, list) else (),
        )


class Conflicts:
    """The one owner of this device's conflict list (meta.json "conflicts"): every change
    goes through these methods. Not locked: the engine's transfer threads hold its lock."""

    def __init__(self, items: Iterable[Conflict] = ()) -> None:
        self._items = list(items)

    def __iter__(self) -> Iterator[Conflict]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def add(
        self, name: str, detail: str, conflict_id: str | None = None, marks: Iterable[str] = ()
    ) -> None:
        self._items.append(Conflict(name, detail, time.time(), conflict_id, tuple(marks)))

    def resolve(self, name: str | None = None) -> list[Conflict]:
        """Clear the conflicts of `name` (None: all of them); the ones cleared."""
        return self.drop(lambda c: name is None or c.file == name)

    def drop(self, gone: Callable[[Conflict], bool]) -> list[Conflict]:
        """Clear the conflicts `gone` is true of; the ones cleared."""
        cleared = [c for c in self._items if gone(c)]
        if cleared:
            self._items = [c for c in self._items if not gone(c)]
        return cleared

    def as_json(self) -> list[dict[str, Any]]:
        return [c.as_json() for c in self._items]

    @classmethod
    def from_json(cls, items: Iterable[object]) -> Conflicts:
        return cls(c for c in map(Conflict.from_json, items) if c is not None)
