"""Three-way merges of memory files by type: `merge(path, base, ours, theirs) -> MergeResult`.

The rule (docs/merge.md): an entry changed on one side only takes that change; removed on one
side and untouched on the other, it goes; removed on one side and changed on the other, the
change stays; moved to Consumed or Delivered on either side, it is there only; changed
differently on both sides, both versions stay and the conflict is recorded. A fact file edited
on both sides cannot hold two versions: the later edit wins whole and the other goes to local
history. tests/oracle.py states the rule independently.

Modules: `files` picks the merge by type; `entries` is the entry rule every structured type
shares, `resemblance` how an entry or section is recognised in other words, `result` the
result and its conflict sentence; `facts`, `index`, `tree` (sectioned types), `sessions`
(digests), `places` (commitments, carry-forward) and `lines` (unknown types) merge one family
each. The rest of memsync imports from here only.
"""

from __future__ import annotations

from memsync.memory.merge.facts import describe_for_others
from memsync.memory.merge.files import merge
from memsync.memory.merge.identity import commitment_id, item_text, own_identity
from memsync.memory.merge.resemblance import (
    SIMILAR,
    Correspondence,
    correspondence,
    renamed_sections,
    similarity,
)
from memsync.memory.merge.result import MergeResult, entry_mark, marks_of
from memsync.memory.merge.sessions import session_blocks
from memsync.memory.merge.tree import merge_tree

__all__ = [
    "Correspondence",
    "MergeResult",
    "commitment_id",
    "correspondence",
    "describe_for_others",
    "entry_mark",
    "item_text",
    "marks_of",
    "merge",
    "merge_tree",
    "session_blocks",
    # for sync/tombstones.py only, until forget no longer reads the merge's heuristics
    "SIMILAR",
    "own_identity",
    "renamed_sections",
    "similarity",
]
