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


Version = tuple[memory.Document | None, Section | None]


def in_sessions(
    has_base: bool, base: Version, ours: Version, theirs: Version
) -> tuple[Section | None, Section, Section]:
    """A digest's three parsed versions with each session a `## Session <id>` block, so that
    they merge session by session. One session in three versions, none of them in blocks,
    merges as it is; a version whose sessions were retitled keeps them (`retitled_sessions`);
    a body with no block is one session under the base's id (the same session) or its own.
    A template base is dropped: two digests made apart compare by session."""
    (b_doc, b_tree), (o_doc, o_tree), (t_doc, t_tree) = base, ours, theirs
    assert o_doc is not None and o_tree is not None and t_doc is not None and t_tree is not None
    blocks = [x for x in (b_tree, o_tree, t_tree) if x is not None]
    if has_base and not any(map(has_sessions, blocks)):
        return b_tree, o_tree, t_tree
    sid = None
    if b_tree is not None and b_doc is not None and has_base:
        sid = memory.field(b_doc.meta, "session_id") or hash8(b_doc.body)
        b_tree = session_blocks(b_tree, b_doc.meta or {}, b_doc.body, sid)
    if not retitled_sessions(b_tree if has_base else None, o_tree):
        o_tree = session_blocks(o_tree, o_doc.meta or {}, o_doc.body, sid)
    if not retitled_sessions(b_tree if has_base else None, t_tree):
        t_tree = session_blocks(t_tree, t_doc.meta or {}, t_doc.body, sid)
    return (b_tree if has_base else None), o_tree, t_tree
