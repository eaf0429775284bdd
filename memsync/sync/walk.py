"""The one walk of a memory dir, and the one rule for the files in it that memsync leaves alone.

Every command that looks at the memory dir as a whole (the sync's scan, `validate`, `compact`,
`forget --match`, `doctor`) walks it here, so they all agree on what a memory file is. The
remote half, which names a listing shows that a sync never fetches, is remote_files.py's
`classify` (it applies `is_ignored` first)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.memory.names import local_key
from memsync.sync.remote_keys import TOMBSTONES
from memsync.util.fsutil import remove_stale_temp

if TYPE_CHECKING:
    from collections.abc import Iterator

_TEMP_SUFFIXES = ("~", ".swp", ".swo", ".swx", ".tmp", ".part", ".crdownload")
# what an operating system writes into any folder for itself (the rest, on macOS, is hidden)
_SYSTEM_FILES = {"thumbs.db", "ehthumbs.db", "desktop.ini", "icon\r"}


def is_ignored(relpath: str) -> bool:
    """Files memsync never syncs: Claude Code's team/ folder, hidden files, what the operating
    system keeps in a folder for itself, and editor temp files."""
    return ignored_why(relpath) is not None


def ignored_why(relpath: str) -> str | None:
    """Why memsync never syncs `relpath`, or None. The team/ folder (Claude Code's team memory,
    `<memory dir>/team/<store>/`) is matched as Claude Code matches it: in any letter case and
    without trailing dots or spaces (on Windows `Team./` is that folder)."""
    parts = relpath.split("/")
    if parts[0].rstrip(". ").lower() == "team":
        return "it is in Claude Code's team/ folder, which memsync does not sync"
    if TOMBSTONES.split("/")[0] in parts[:-1]:  # at any depth: it marks a project's records
        return "it is in a _memsync/ folder, which is memsync's own"
    name = parts[-1]
    if any(p.startswith(".") for p in parts):
        return "hidden files and folders are not synced"
    if name.lower() in _SYSTEM_FILES:
        return "the operating system keeps it in the folder for itself"
    if name.endswith(_TEMP_SUFFIXES) or (name.startswith("#") and name.endswith("#")):
        return "it is named like an editor's temporary file, which memsync does not sync"
    return None


class MemoryWalk:
    """The memory files under `root` as (name, path, stat), folder by folder in name order.

    `name` is the file's key: relative, `/`-separated, NFC where the file system allows (see
    names.local_key). Ignored names and folders that are symbolic links are skipped; a file
    that is a symbolic link counts only if it points inside the memory dir (`stat` is then its
    target's). A file that cannot be synced for another reason goes to `refused`, with why.
    With `sweep`, the temp files of killed memsync writers are removed on the way (`swept`)."""

    def __init__(self, root: Path, *, sweep: bool = False) -> None:
        self.root = root
        self.sweep = sweep
        self.refused: dict[str, str] = {}
        self.swept = 0

    def __iter__(self) -> Iterator[tuple[str, str, os.stat_result]]:
        root = self.root
        if not root.is_dir():
            return
        resolved_root = root.resolve()
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = Path(dirpath).relative_to(root).as_posix()
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not is_ignored(d if rel_dir == "." else f"{rel_dir}/{d}")
                and not os.path.islink(os.path.join(dirpath, d))
            )
            for fname in sorted(filenames):
                key = local_key(dirpath, fname)
                name = key if rel_dir == "." else f"{rel_dir}/{key}"
                if self.sweep and remove_stale_temp(dirpath, fname):
                    self.swept += 1
                    continue
                if is_ignored(name):
                    continue
                path = os.path.join(dirpath, fname)
                try:
                    st = os.lstat(path)
                    if stat.S_ISLNK(st.st_mode):
                        if resolved_root not in Path(path).resolve().parents:
                            reason = "it is a symbolic link pointing outside the memory dir"
                            self.refused[name] = reason
                            continue
                        st = os.stat(path)
                except OSError as exc:
                    self.refused[name] = f"it cannot be read ({exc.strerror})"
                    continue
                if not stat.S_ISREG(st.st_mode):
                    self.refused[name] = "it is not a regular file"
                    continue
                yield name, path, st
