"""The memory dir as the sync sees it: each file's hash, its content read only when needed.

A file whose size, mtime, ctime and inode are what they were at the last scan keeps the hash
it had then, without being read (git's index and rclone's quick check work the same way).
Only files that were already *settled* when they were read are remembered: a file touched
within the timestamp granularity of its read could change again without its timestamps
moving, so it is hashed again next time ("racily clean" in git's words).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from memsync.util.errors import UserError
from memsync.util.fsutil import sha256

# Linux filesystems stamp files from a clock that can lag real time by a tick (~10 ms); with
# whole-second timestamps (FAT, some network shares) a file can change within 2 s unseen.
FINE_MARGIN_NS = 100_000_000
COARSE_MARGIN_NS = 2_000_000_000

StatKey = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def settled(st: os.stat_result, now_ns: int) -> bool:
    """Whether any later change to the file must move its mtime or ctime."""
    stamps = (st.st_mtime_ns, st.st_ctime_ns)
    coarse = all(s % 1_000_000_000 == 0 for s in stamps)
    margin = COARSE_MARGIN_NS if coarse else FINE_MARGIN_NS
    return max(stamps) < now_ns - margin


class LocalFiles(Mapping[str, bytes]):
    """Memory file contents by name. `hashes` is complete; a file the scan did not need to
    read is read on first access, and refused if it no longer has the hash the run planned
    with (it changed mid-sync, and unread content has not passed the outbound checks)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hashes: dict[str, str] = {}
        self._data: dict[str, bytes] = {}

    def add(self, name: str, digest: str, data: bytes | None = None) -> None:
        self.hashes[name] = digest
        if data is not None:
            self._data[name] = data

    def __getitem__(self, name: str) -> bytes:
        digest = self.hashes[name]
        data = self._data.get(name)
        if data is None:
            data = (self.root / name).read_bytes()
            if sha256(data) != digest:
                raise UserError(f"{name} changed while memsync was syncing it; sync again")
            self._data[name] = data
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self.hashes)

    def __len__(self) -> int:
        return len(self.hashes)

    def __contains__(self, name: object) -> bool:
        return name in self.hashes

    def discard(self, name: str) -> None:
        self.hashes.pop(name, None)
        self._data.pop(name, None)
