"""Where forgotten text still is: every byte of every file under the given roots.

Used by the forget trials, the forget property and the multi-device state machine. It reads
raw bytes (SQLite databases and their journals, history copies, logs, the remote's tombstone
list), matching each needle exactly and, for ASCII, case-insensitively (`forget --match` is).
The quarantine folder is the one place allowed to hold it: an unsynced edit of a forgotten
file is kept there for its owner, who is told so on every sync.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def quarantine_dir(home: Path) -> Path:
    """Where a device with MEMSYNC_HOME `home` sets aside unsynced edits of forgotten files."""
    return home / "quarantine"


def leaks(
    needles: Iterable[str], roots: Iterable[Path], allowed: Iterable[Path] = ()
) -> list[tuple[str, str]]:
    """(needle, file) for every file under `roots` (outside `allowed`) holding a needle."""
    wanted = [n for n in needles if n]
    if not wanted:
        return []
    exact = [(n, n.encode("utf-8")) for n in wanted]
    folded = [(n, n.encode("ascii").lower()) for n in wanted if n.isascii()]
    skip = [p.resolve() for p in allowed]
    found = []
    for root in roots:
        if not root.exists():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            resolved = path.resolve()
            if any(resolved == s or s in resolved.parents for s in skip):
                continue
            data = path.read_bytes()
            lower = data.lower()
            hits = {n for n, b in exact if b in data} | {n for n, b in folded if b in lower}
            found += [(n, str(path)) for n in sorted(hits)]
    return found


def assert_forgotten(
    needles: Iterable[str], roots: Iterable[Path], allowed: Iterable[Path] = ()
) -> None:
    found = leaks(needles, roots, allowed)
    assert not found, "forgotten text is still stored:\n" + "\n".join(
        f"  {needle!r} in {path}" for needle, path in found
    )
