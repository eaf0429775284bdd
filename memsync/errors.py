"""Typed errors. The core raises these; only the CLI turns them into exit codes and sentences."""

from __future__ import annotations


class MemsyncError(Exception):
    """Base class: `str(err)` is one sentence a user can act on."""

    exit_code = 1


class UserError(MemsyncError):
    """Bad configuration, a refused file, or a decision the user must make (exit 1)."""


class ConfigError(UserError):
    """A setting, flag or environment variable is invalid."""


class RefusedFile(UserError):
    """A memory file that will not be synced. `path` names it, `reason` says why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class KeptLocal(RefusedFile):
    """A file the user marked to stay on this machine (`sensitivity: high` without consent):
    not synced, by choice, so not an error."""


class GuardError(UserError):
    """A destructive outcome (mass deletion) refused without --force."""


# --- storage errors: every store translates its own failures into these ---------------------


class StoreError(MemsyncError):
    """Something went wrong talking to the remote."""


class PreconditionFailed(StoreError):
    """The remote object changed since we read it (ETag mismatch). The engine merges and retries."""


class AlreadyExists(PreconditionFailed):
    """A create-only write found an object already there."""


class NotFound(StoreError):
    """The key (or the container) does not exist."""


class AuthError(StoreError):
    """The credential was refused."""


class Unreachable(StoreError):
    """The remote could not be reached; work is queued (exit 3)."""

    exit_code = 3


class UnsafeKey(StoreError):
    """A remote key that would land outside the memory dir."""
