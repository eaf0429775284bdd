"""The run mode, in a module of its own: the hooks' fast path names it without importing the
planner."""

from __future__ import annotations

from enum import Enum


class Mode(str, Enum):
    """What a run does: both ways, local → remote (and no deletion here), remote → local."""

    SYNC = "sync"
    PUSH = "push"
    PULL = "pull"

    def __str__(self) -> str:
        return self.value
