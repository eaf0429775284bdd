"""Typed errors. The core raises these; only the CLI turns them into exit codes and sentences."""

from __future__ import annotations

import re


class MemsyncError(Exception):
    """Base class: `str(err)` is one sentence a user can act on."""

    exit_code = 1


class UserError(MemsyncError):
    """Bad configuration, a refused file, or a decision the user must make (exit 1)."""


class ConfigError(UserError):
    """A setting, flag or environment variable is invalid."""


class UsageError(MemsyncError):
    """A command-line argument or option value is wrong (exit 2, like a parser's own errors)."""

    exit_code = 2


class Interrupted(MemsyncError):
    """Ctrl-C (or SIGTERM): what was done is kept, the rest is left for the next run (exit 130)."""

    exit_code = 130


class RefusedFile(UserError):
    """A memory file that will not be synced. `path` names it, `reason` says why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class Unreadable(RefusedFile):
    """A remote copy that cannot be read (its ciphertext damaged): like a copy the inbound
    gate refuses, a merge replaces it with this device's copy, conditional on `etag`."""

    def __init__(self, path: str, reason: str, etag: str) -> None:
        super().__init__(path, reason)
        self.etag = etag


class Unholdable(RefusedFile):
    """A file the remote cannot hold (its size, its name or its encoding is outside the store's
    limits): refused before any request, so nothing of it is written."""


class KeptLocal(RefusedFile):
    """A file the user marked to stay on this machine (`sensitivity: high` without consent):
    not synced, by choice, so not an error."""


class GuardError(UserError):
    """A destructive outcome (mass deletion) refused without --force."""

    def within(self, command: str, run: str) -> GuardError:
        """The refusal of the `run` (pull, sync) that `command` (forget, compact) makes first:
        `command` has no --force, so the sentence names the command that takes it (one whose
        way out is another command, a lost memory dir's `pull`, is kept as it is)."""
        if "--force" not in str(self):
            return GuardError(f"the {command} {run}s first, and {self}")
        return GuardError(
            f"{str(self).split('; ')[0]}, and {command} {run}s first; run `memsync {run} "
            f"--force` if that is what you want, then the {command} again"
        )


class StateError(UserError):
    """memsync's own state under MEMSYNC_HOME cannot be read or written as it is (a damaged
    or foreign file, a file where a folder should be, a lock held too long). Never treated
    as empty: that would drop the queue, the records or the tombstone ETag without a word."""


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


# --- the operating system's errors, as one sentence --------------------------------------

_OS_ADVICE = {
    "EACCES": "permission denied; check the file's and its folder's owner and mode",
    "EPERM": "the operation is not permitted (an immutable or locked file?); check it with lsattr",
    "EROFS": "the file system is read-only; remount it read-write or choose another place",
    "ENOSPC": "the disk is full; free some space and run again",
    "EDQUOT": "the disk quota is exhausted; free some space and run again",
    "ENAMETOOLONG": "the name is too long for this file system; rename it shorter",
    "ENOTDIR": "a part of the path is a file, not a folder; move that file away",
    "EISDIR": "it is a folder, not a file",
    "ENOENT": "it does not exist",
    "EEXIST": "something is already there",
    "EIO": "the disk reported an I/O error; check the drive",
}


def describe_os_error(exc: OSError, path: object = None) -> str:
    """`exc` as one sentence naming the user's file (not a temp file) and what to do."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    what = _OS_ADVICE.get(name) or (exc.strerror or str(exc)).rstrip(".").lower()
    where = path if path is not None else exc.filename
    if isinstance(where, str):  # a temp file of memsync's: name the file it was replacing
        where = re.sub(r"(^|/)\.([^/]+)\.\d+-[a-z0-9_]{8}\.tmp$", r"\1\2", where)
    return f"{where}: {what}" if where else what
