"""The sync decision as a pure function: (local files, remote listing, last-synced records)
→ actions. No I/O, so the whole decision table is tested from plain tables."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from memsync.sync.state import Record


class Kind(str, Enum):
    UPLOAD = "upload"  # local is new or changed; remote is not
    DOWNLOAD = "download"  # remote is new or changed; local is not
    MERGE = "merge"  # both sides have content that may differ
    DELETE_REMOTE = "delete-remote"  # deleted here after it was synced
    DELETE_LOCAL = "delete-local"  # deleted remotely; unchanged here
    FORGET = "forget"  # gone on both sides: drop the record

    def __str__(self) -> str:
        return self.value


class Mode(str, Enum):
    """What a run does: both ways, local → remote (and no deletion here), remote → local."""

    SYNC = "sync"
    PUSH = "push"
    PULL = "pull"

    def __str__(self) -> str:
        return self.value


class Action(NamedTuple):
    kind: Kind
    name: str
    reason: str


PUSH_KINDS = {Kind.UPLOAD, Kind.DELETE_REMOTE, Kind.MERGE, Kind.FORGET}
PULL_KINDS = {Kind.DOWNLOAD, Kind.DELETE_LOCAL, Kind.MERGE, Kind.FORGET}


def decide(name: str, local: str | None, remote: str | None, rec: Record | None) -> Action | None:
    """One file. `local` is its content hash (None: absent), `remote` its ETag (None: absent)."""
    if rec is None:
        if local is not None and remote is not None:
            return Action(Kind.MERGE, name, "present on both sides with no sync record")
        if local is not None:
            return Action(Kind.UPLOAD, name, "new here")
        if remote is not None:
            return Action(Kind.DOWNLOAD, name, "new on the remote")
        return None

    local_changed = local != rec.sha
    remote_changed = remote != rec.etag
    if local is None and remote is None:
        return Action(Kind.FORGET, name, "deleted on both sides")
    if local is None:
        if remote_changed:
            return Action(Kind.DOWNLOAD, name, "deleted here, edited remotely: keeping the edit")
        return Action(Kind.DELETE_REMOTE, name, "deleted here")
    if remote is None:
        if local_changed:
            return Action(Kind.UPLOAD, name, "deleted on the remote, edited here: keeping the edit")
        return Action(Kind.DELETE_LOCAL, name, "deleted on the remote")
    if local_changed and remote_changed:
        return Action(Kind.MERGE, name, "changed on both sides")
    if local_changed:
        return Action(Kind.UPLOAD, name, "changed here")
    if remote_changed:
        return Action(Kind.DOWNLOAD, name, "changed on the remote")
    return None


def plan(
    local: Mapping[str, str],
    remote: Mapping[str, str],
    records: Mapping[str, Record],
    *,
    kinds: Iterable[Kind] | None = None,
    only: Iterable[str] | None = None,
    skip: Iterable[str] = (),
) -> list[Action]:
    """Actions for every file, sorted by name.

    `kinds` limits the plan (push: PUSH_KINDS, pull: PULL_KINDS); `only` limits it to some
    files; `skip` names files to leave alone entirely (refused ones).
    """
    allowed = set(kinds) if kinds is not None else set(Kind)
    wanted = set(only) if only is not None else None
    skipped = set(skip)
    names = set(local) | set(remote) | set(records)
    actions = []
    for name in sorted(names):
        if name in skipped or (wanted is not None and name not in wanted):
            continue
        action = decide(name, local.get(name), remote.get(name), records.get(name))
        if action is not None and action.kind in allowed:
            actions.append(action)
    return actions


def deletions(actions: Iterable[Action]) -> list[Action]:
    return [a for a in actions if a.kind in (Kind.DELETE_LOCAL, Kind.DELETE_REMOTE)]


def mass_deletion(actions: list[Action], total: int) -> bool:
    """True when the plan would delete more than half of the files, and more than 5."""
    return too_many(len(deletions(actions)), total)


def too_many(count: int, total: int) -> bool:
    """The deletion guard's one rule: `count` of `total` files is more than half, and more
    than 5 (a sync, `push FILE` one at a time, the memory tool)."""
    return count > 5 and count * 2 > total
