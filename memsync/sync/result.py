"""What one pull, push or sync did: the result the engine returns and the CLI, the hooks and
the memory tool report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memsync.stores.base import Stats

if TYPE_CHECKING:
    from memsync.sync.mode import Mode


class SyncResult:
    """What one pull, push or sync did, by file name (a plain class: see planner.Run)."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.uploaded: list[str] = []
        self.downloaded: list[str] = []
        self.merged: list[str] = []
        self.deleted_remote: list[str] = []
        self.deleted_local: list[str] = []
        self.forgotten: list[str] = []  # removed here because another device forgot them
        self.forgets_finished = 0  # this device's forgets it finished (each said in notes)
        self.conflicts: list[str] = []
        self.refused: dict[str, str] = {}
        self.kept_local: dict[str, str] = {}  # marked to stay here: skipped, not an error
        self.refused_remote: dict[str, str] = {}
        self.ignored_remote: dict[str, str] = {}  # foreign blobs under the prefix, not fetched
        self.errors: dict[str, str] = {}
        self.notes: list[str] = []
        self.restored: str | None = None  # the note of a lost memory dir a pull restored
        self.queued: list[str] = []
        self.skipped: list[str] = []  # not started before the deadline
        self.quarantined: list[str] = []  # forgotten elsewhere, edited here: what to do
        # this device's copy lost to another device's later edit (kept in local history)
        self.replaced: dict[str, str] = {}
        self.offline: str | None = None
        # a push's files waiting to be pulled, a pull's waiting to be pushed: "in sync" is not
        # said while there are any
        self.other_way: list[str] = []
        self.disabled = False
        self.stats = Stats()
        self.seconds = 0.0

    @property
    def changes(self) -> int:
        done = (
            self.uploaded,
            self.downloaded,
            self.merged,
            self.deleted_remote,
            self.deleted_local,
            self.forgotten,
        )
        return sum(map(len, done)) + self.forgets_finished


SYNC_OFF = "sync is off (MEMSYNC_SYNC=off)"
