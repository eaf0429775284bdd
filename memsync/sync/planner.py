"""The sync decision as a pure function: (local files, remote listing, last-synced records)
→ actions, and the guard a plan must pass (a mass deletion). No I/O, so the whole decision
table is tested from plain tables."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

from memsync.memory.names import fold
from memsync.sync.mode import Mode
from memsync.util.errors import GuardError

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


def for_mode(
    mode: Mode,
    local: Mapping[str, str],
    remote: Mapping[str, str],
    records: Mapping[str, Record],
    *,
    names: list[str] | None,
    named: set[str] | None,
    pending: list[str],
    skip: set[str],
) -> tuple[list[Action], list[str] | None]:
    """The plan of a listing run: a sync both ways; a push of local changes (`named`: the
    files a `push FILE` names, with the queue and the other side of a letter-case rename);
    a pull of remote changes, which also sends what this device queued while offline. With
    it, for a push or pull of every file, the files waiting for the other way (else None)."""
    if mode is Mode.SYNC:
        actions = plan(local, remote, records, only=names, skip=skip)
    elif mode is Mode.PUSH:
        actions = plan(local, remote, records, kinds=PUSH_KINDS, only=named, skip=skip)
    else:
        actions = plan(local, remote, records, kinds=PULL_KINDS, only=names, skip=skip)
        drain = plan(local, remote, records, kinds=PUSH_KINDS, only=pending, skip=skip)
        seen = {a.name for a in actions}
        actions += [a for a in drain if a.name not in seen]
    if mode is Mode.SYNC or names is not None:
        return actions, None
    planned = {a.name for a in actions}
    every = plan(local, remote, records, skip=skip)
    return actions, sorted(a.name for a in every if a.name not in planned)


def refuse_mass_deletion(
    mode: Mode,
    actions: list[Action],
    names: set[str],
    records: Mapping[str, Record],
    singly: list[str],
    force: bool,
) -> None:
    """More than half of the files and more than 5 deleted take --force, whether in one
    run or one `push FILE` at a time (FileChanged and PostToolUse hooks, the watcher) since
    the last full sync: those are `singly` (meta `deleted_singly`). `names`: every file
    either side and the records know of."""
    singly = [n for n in singly if n not in records]
    planned = {a.name for a in deletions(actions)}
    count = len(planned | set(singly))
    total = len(names | set(records) | set(singly))
    if force or not too_many(count, total):
        return
    # digests a roll-up here or on the remote covers: a compaction's work, not a loss
    from memsync.memory.digests import rolled_up

    planned -= rolled_up(planned, names)
    count = len(planned | set(singly))
    if not too_many(count, total):
        return
    if not singly:
        raise GuardError(
            f"this {mode} would delete {count} of {total} memory files; "
            "if that is what you want, run it again with --force"
        )
    raise GuardError(
        f"this {mode} would make {count} of {total} memory files deleted from the remote "
        f"since the last full sync ({len(singly)} already, one at a time); if that is "
        "what you want, run `memsync sync --force`"
    )


def renames_in_two_steps(actions: list[Action]) -> list[list[Action]]:
    """The deletions whose name folds like another action's (a rename that changed only
    letter case: `User_Pat.md` to `user_pat.md`) go first, apart: on macOS and Windows both
    names are one file, which the new name's write must not meet before the old one is gone."""
    folds: dict[str, int] = {}
    for action in actions:
        folds[fold(action.name)] = folds.get(fold(action.name), 0) + 1
    deleting = (Kind.DELETE_LOCAL, Kind.DELETE_REMOTE)
    first = [a for a in actions if a.kind in deleting and folds[fold(a.name)] > 1]
    if not first:
        return [actions]
    return [first, [a for a in actions if a not in first]]
