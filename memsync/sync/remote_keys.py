"""The names memsync keeps for itself under a project's prefix on the remote, beside the
memory files: small records every device reads (never memory content). A module of its own
so that a sync which finds nothing to do imports none of the code that acts on them."""

from __future__ import annotations

TOMBSTONES = "_memsync/forgotten.json"  # forgotten files and line hashes (sync/tombstones.py)
PURGED = "_memsync/purged.json"  # after `purge`: nobody republishes silently (admin/forget.py)
CONFLICTS = "_memsync/conflicts.json"  # merge conflicts every device hears of (sync/conflicts.py)
# what each `migrate` copied there, by key: the sha256 of the bytes, the version a device that
# moves later shares with the destination (admin/migrate.py)
COPIES = "_memsync/copies.json"
