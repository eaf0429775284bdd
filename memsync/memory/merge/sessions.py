"""Session digests: each session is a `## Session <id>` block, merged block by block; a digest
written without one is one session."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from memsync.memory import frontmatter as memory
from memsync.memory.merge.resemblance import by_heading, renames
from memsync.memory.sections import Section

_SESSION = re.compile(r"^session\b", re.I)


def has_sessions(root: Section) -> bool:
    return any(_SESSION.match(c.title) for c in root.children)


def retitled_sessions(base: Section | None, side: Section) -> bool:
    """Whether `side` has no `## Session` block only because it retitled its base's sessions
    (`## Parser day` for `## Session 09:00 …`): then its sections are those sessions, not one
    session's body to wrap in a block of its own, which kept the old session beside the new
    with every entry twice."""
    if base is None or has_sessions(side) or not has_sessions(base):
        return False
    return bool(renames(by_heading(base.children), by_heading(side.children)))


def hash8(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def session_blocks(
    root: Section, meta: dict[str, Any], raw: str, default: str | None = None
) -> Section:
    """A digest whose body has no `## Session <id>` block is one session: wrap it in one.

    Its id: the frontmatter `session_id`, else `default` (the merge passes the base's, so
    three versions of one session stay one session), else a hash of the body (two digests
    written on their own are two sessions)."""
    if any(_SESSION.match(c.title) for c in root.children):
        return root
    sid = memory.field(meta, "session_id") or default or hash8(raw)
    wrapped = Section(f"## Session {sid}\n\n", 2)
    if any(child.level <= 2 for child in root.children):
        for child in root.children:
            for node in child.walk():
                node.level += 1
                node.heading = "#" + (node.heading or "")
    wrapped.entries = [e for e in root.entries if e.strip()]
    wrapped.children = root.children
    return Section(None, 0, [e for e in root.entries if not e.strip()][:1], [wrapped])
