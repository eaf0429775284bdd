"""The storage protocol: every write carries its concurrency condition.

A write that lost a race raises PreconditionFailed (or AlreadyExists for create-only) — never a
boolean — so the sync engine has one merge-and-retry path for every backend.
"""

from __future__ import annotations

import builtins
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol

from memsync.util.errors import ConfigError, UnsafeKey


class Entry(NamedTuple):
    """One remote object as a listing reports it."""

    key: str
    etag: str
    size: int = 0
    modified: float = 0.0  # seconds since the epoch


class RemoteVersion(NamedTuple):
    """One version of an object that the remote keeps itself (see `Store.versions`)."""

    id: str
    operation: str  # created, modified, deleted
    created: float  # seconds since the epoch
    sha256: str | None  # None once its content was erased, or for a deletion
    size: int | None
    erased: bool


class Stats:
    """Requests sent by kind and bytes moved, for `--stats` and benchmarks."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.bytes_up = 0
        self.bytes_down = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Stats({self.as_dict()})"

    def count(self, kind: str, up: int = 0, down: int = 0) -> None:
        with self._lock:
            self.requests[kind] += 1
            self.bytes_up += up
            self.bytes_down += down

    def moved(self, up: int = 0, down: int = 0) -> None:
        """Bytes moved by a request counted already."""
        with self._lock:
            self.bytes_up += up
            self.bytes_down += down

    def total(self) -> int:
        return sum(self.requests.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "requests": dict(sorted(self.requests.items())),
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
        }


# How often a read, merge and conditional write is tried before giving up: another writer
# would have to win every round in between.
MAX_ATTEMPTS = 8


class Store(Protocol):
    """A remote holding one project's memory files under a prefix.

    Keys are relative POSIX paths ("voice_calibration.md"). ETags are opaque strings.
    """

    url: str
    stats: Stats

    def list(self) -> dict[str, Entry]:
        """Every key under the prefix with its ETag, in as few requests as the backend allows."""

    def get(self, key: str) -> tuple[bytes, str]:
        """(content, etag); NotFound if absent."""

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        """(content, etag, edited): `get`, plus the `edited` time its writer gave (None if it
        gave none). Merges use it to tell which of two edits came later."""

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        """Write only if absent; AlreadyExists otherwise. Returns the new ETag. `edited`: when
        the content was edited on the device that wrote it (its file's mtime there), kept
        with the object (blob metadata, the folder file's mtime) for `fetch`."""

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        """Write only if the current ETag is `etag`; PreconditionFailed otherwise (also if gone)."""

    def delete(self, key: str, etag: str) -> None:
        """Delete only if the ETag is `etag`; PreconditionFailed if changed, NotFound if gone."""

    def exists(self) -> bool:
        """Whether the container/folder exists (False is not an error)."""

    def ensure(self) -> None:
        """Create the container/folder if missing."""

    def close(self) -> None: ...

    # What a store may do beyond reading and writing. A store that subclasses Store gets these
    # defaults (what a store without the feature does), so callers use them without asking.

    max_bytes: int | None = None  # the largest object a read accepts (the engine sets it)
    deadline: float | None = None  # the command's (time.monotonic()): no request outlives it
    # A folder remote this device has synced with (the engine sets it): its project folder is
    # then never made anew, since its absence means the drive is not mounted (see folder.py).
    project_known: bool = False
    # ETags that are a hash of the content (the folder store): a copy written again with the
    # same bytes keeps its ETag, so a conditional write cannot tell it from the copy this
    # device synced. `push FILE` then asks for the purge mark itself (see Engine._run_locked).
    content_etags: bool = False

    @property
    def round_trip(self) -> float | None:
        """About one network round trip to the remote, once known; None where not known (or
        there is no network in between)."""
        return None

    def warm(self, count: int) -> None:
        """Open `count` connections ahead of the transfers (e.g. while a listing is in flight);
        nothing where there is nothing to open."""
        return None

    def can_create(self) -> bool:
        """Whether this credential may create the container/folder."""
        return True

    def projects(self) -> tuple[str, ...] | None:
        """The names of the projects in this remote, this one's and those beside it (one
        request: the prefixes one level up); None where the store cannot list them. Asked only
        by a project's first sync (see sync/project.py check_old_name)."""
        return None

    def refuses(self, key: str, data: bytes) -> str | None:
        """Why this remote cannot hold `data` under `key` (a limit of the service's own, checked
        here without a request), or None; `status` lists such a file as refused, as the
        upload would (Unholdable)."""
        return None

    def create_advice(self) -> str:
        """What to tell a user whose remote does not exist yet."""
        return "run `memsync push` to create it"

    # A remote that keeps its own versions of an object (a memory store does, for a retention
    # period) shows them to `history` and erases their content for `forget` and `purge`: what
    # memsync takes back must not stay readable in the remote's history. A remote without
    # versions memsync can reach (a folder, Azure without blob versioning) has none to show
    # or erase.

    def versions(self, key: str) -> builtins.list[RemoteVersion] | None:
        """The versions of `key` the remote keeps itself, newest first; None where it keeps
        none memsync can read."""
        return None

    def erase_history(self, key: str, holds: Callable[[bytes], bool] | None = None) -> int:
        """Erase the content of the earlier versions of `key` the remote keeps (every one, or
        those whose content `holds` says yes to; never the current content), after a forget or
        a purge rewrote or deleted `key`; how many it erased. Each erasure is counted in
        `stats` as an "erase" request."""
        return 0

    def erase_deleted(self, holds: Callable[[str, bytes], bool]) -> int:
        """Erase the content of the versions the remote keeps of objects deleted from under
        the prefix before now (a memory store keeps them after the memory is gone) for which
        `holds(key, content)` says yes; how many it erased, each counted as "erase"."""
        return 0


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BAD_CHARS = re.compile(r'[\\:*?"<>|]')
# an empty, "." or ".." segment, in "/" + key + "/": a pattern that starts with a literal is
# tried only where a "/" is, not at every character of a long key (an encrypted remote's)
_BAD_SEGMENT = re.compile(r"/\.{0,2}/")


def nested_projects(keys: Iterable[str]) -> list[str]:
    """The folders under a project's prefix that hold a `_memsync/` folder of their own: another
    project's (a remote URL naming a folder of this project, `.../outer` with project `inner`,
    puts that project here). One project's folder holds one project (sync/project.py)."""
    return sorted({key[: key.index("/_memsync/") + 1] for key in keys if "/_memsync/" in key})


def check_key(key: str) -> str:
    """Refuse keys that could land outside the memory dir or are not plain relative paths."""
    problem = None
    if not key or key.startswith("/") or (len(key) > 1 and key[1] == ":"):
        problem = "it is empty or absolute"
    elif _CONTROL.search(key):
        problem = "it contains control characters"
    elif _BAD_CHARS.search(key):
        found = " ".join(sorted(set(_BAD_CHARS.findall(key))))
        problem = f"it contains {found}, which Windows does not allow in file names"
    elif _BAD_SEGMENT.search(f"/{key}/"):
        problem = "it has an empty, '.' or '..' path segment"
    if problem:
        shown = repr(key) if _CONTROL.search(key) else f"`{key}`"  # as typed, but for controls
        raise UnsafeKey(f"refused the name {shown}: {problem}")
    return key


def check_remote_path(url: str, path: str, shown: str | None = None) -> None:
    """Refuse an object-store remote URL whose path has an empty, '.' or '..' segment
    (`s3://b//x`, `s3://b/../etc`, a trailing slash aside). Its prefix becomes the start of
    every key, where such a segment is kept literally by one service (a key `../etc/...`),
    folded away by another or by a proxy in between (then listings and writes would address
    different places): the URL is the setting's mistake, said before any request."""
    inner = path[1:] if path.startswith("/") else path
    inner = inner[:-1] if inner.endswith("/") else inner
    if inner and _BAD_SEGMENT.search(f"/{inner}/"):
        raise ConfigError(
            f"the remote {shown or url!r} has an empty, '.' or '..' segment in its path; write "
            "its path as names separated by single slashes in --remote, MEMSYNC_REMOTE or the "
            "remote setting"
        )
