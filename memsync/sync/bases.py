"""Merge bases: the last-synced content of each memory file, by its sha256, in one SQLite file.

One file instead of one file a base: a pull of 5000 new files used to create 5000 base files
next to the 5000 memory files, and creating a file costs far more system time than writing a
row (docs/benchmarks.md). Every read is checked against the hash, and
the database is written without fsync: a base lost or torn by a power cut is ignored (the
merge then works from the two sides), never trusted; a database SQLite reports as damaged is
started again, and that is reported. Any other database error is a StateError, not a reset.
Deleted rows are overwritten (secure_delete), so `forget` leaves no copy.
`sqlite3` is imported only when a base is read or written: a no-op sync does neither.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.util.errors import StateError
from memsync.util.fsutil import sha256

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Mapping

FILE = "bases.sqlite"
# SQLite's result codes for a file that is not (or no longer) a readable database
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


class Bases:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / FILE
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # merges on the transfer threads read bases
        self.reset: str | None = None  # why the database was started again, to report

    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            return self._db if self._db is not None else self._open()

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        # created 0600 before SQLite opens it; its journal takes the same mode
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA secure_delete=ON")
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("CREATE TABLE IF NOT EXISTS bases (sha TEXT PRIMARY KEY, content BLOB)")
        self._db = db
        return db

    def _run(self, work):
        """`work(db)`. A file SQLite reports as damaged (not a database, malformed: what a
        power cut can leave, since it is written without fsync) is started again once and
        the reset is reported (`reset`); any other database error is a StateError naming the
        file, never a reason to delete every base."""
        import sqlite3

        try:
            return work(self._connect())
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") not in _DAMAGED:
                raise StateError(
                    f"the merge-base database {self.path} cannot be used ({exc}); check its "
                    "permissions and free space, then run the command again"
                ) from None
            self.close()
            for suffix in ("", "-journal"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self.reset = (
                f"the merge-base database {self.path} was damaged ({exc}) and was started "
                "again: files changed on both sides merge from the two versions until each "
                "has synced once"
            )
            return work(self._connect())

    def get(self, sha: str) -> bytes | None:
        """The content whose hash is `sha`, or None if it is not kept (or no longer intact)."""
        if self.path.exists():
            row = self._run(
                lambda db: db.execute("SELECT content FROM bases WHERE sha = ?", (sha,)).fetchone()
            )
            if row is not None and sha256(row[0]) == sha:
                return bytes(row[0])
        return None

    def put(self, contents: Mapping[str, bytes]) -> None:
        """Keep each content under its hash (the keys), in one transaction."""
        if not contents:
            return

        def work(db: sqlite3.Connection) -> None:
            with db:
                db.execute("BEGIN")
                db.executemany("INSERT OR REPLACE INTO bases VALUES (?, ?)", contents.items())

        self._run(work)

    def keep_only(self, live: Iterable[str]) -> None:
        """Drop every base whose hash is not in `live` (bases of earlier versions, of
        forgotten files, of runs killed before their records were saved)."""
        if not self.path.exists():
            return
        import json

        keep = json.dumps(sorted(set(live)))

        def work(db: sqlite3.Connection) -> None:
            with db:
                db.execute("BEGIN")
                db.execute(
                    "DELETE FROM bases WHERE sha NOT IN (SELECT value FROM json_each(?))", (keep,)
                )

        self._run(work)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
