"""The names memsync keeps for itself under a project's prefix on the remote, beside the
memory files: small records every device reads (never memory content). A module of its own
so that a sync which finds nothing to do imports none of the code that acts on them."""

from __future__ import annotations

TOMBSTONES = "_memsync/forgotten.json"  # forgotten files and line hashes (sync/tombstones.py)
PURGED = "_memsync/purged.json"  # after `purge`: nobody republishes silently (admin/forget.py)
CONFLICTS = "_memsync/conflicts.json"  # merge conflicts every device hears of (sync/conflicts.py)
