"""The remote half of what a sync leaves alone (the local half, and the names under the
memory dir memsync never syncs, is walk.py's `is_ignored`): the names a listing shows under
the prefix sorted into memory files, names refused as unsafe, foreign blobs (listed as ignored,
never fetched) and copies refused before (held: neither side changes until the copy does). The
sync, `status` and `doctor` all sort a listing here, so they count the same files."""

from __future__ import annotations

from typing import NamedTuple

from memsync.stores.base import Entry, check_key
from memsync.sync.walk import is_ignored
from memsync.util.errors import UnsafeKey


def foreign(key: str) -> str | None:
    """Why a remote name under the prefix is not a memory file memsync would fetch (None if it
    is one). Such blobs are listed as ignored by status and doctor, and never downloaded: a
    download could only be refused, again on every sync."""
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    if not key.endswith(".md"):
        return "not a Markdown memory file (.md)"
    return None


def held_why(reason: str, synced_here: bool) -> str:
    """What a device says of a remote copy refused before: a file it holds or synced is not
    synced until the copy changes; one it never had is ignored until then."""
    if synced_here:
        return (
            f"refused before ({reason}); this copy is left alone until the remote copy "
            "changes, or `memsync push --force` replaces it with this device's"
        )
    return f"refused before ({reason}); fetched again once it changes"


class RemoteFiles(NamedTuple):
    """A listing sorted by what memsync does with each name."""

    memory: dict[str, Entry]  # memory files: synced
    unsafe: dict[str, str]  # names that would leave the memory dir: refused, never fetched
    ignored: dict[str, str]  # foreign blobs: never fetched, why
    held: dict[str, str]  # copies refused before: neither side changes until they do, why


def classify(listing: dict[str, Entry], refused_before: dict[str, list]) -> RemoteFiles:
    """Sort a listing. `refused_before` maps a name to the [etag, reason] of a remote copy a
    download refused (bad UTF-8, no frontmatter, damaged...): that copy is held, neither fetched
    again nor taken for a deletion, and so is the local file; a new ETag (someone fixed it) is
    fetched as usual."""
    files = RemoteFiles({}, {}, {}, {})
    for key, entry in listing.items():
        try:
            check_key(key)
        except UnsafeKey as exc:
            files.unsafe[key] = str(exc)
            continue
        if is_ignored(key):
            continue
        why = foreign(key)
        before = refused_before.get(key)
        if why is None and before is not None and before[0] == entry.etag:
            files.held[key] = before[1]
        elif why:
            files.ignored[key] = why
        else:
            files.memory[key] = entry
    return files
