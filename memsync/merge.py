"""Three-way merges by memory type: pure functions of (base, ours, theirs).

base is the content both sides last agreed on (None if they never did). Every strategy keeps
whatever either side added since base; what one side removed since base stays removed unless
the other side changed it. Where two versions cannot both be kept (a fact file edited on both
sides), the newer wins and the other is returned as `discarded` for local history.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypeVar

from memsync import memory, sections
from memsync.memtypes import type_of
from memsync.sections import Section

T = TypeVar("T")


@dataclass(frozen=True)
class MergeResult:
    content: bytes
    conflict: str | None = None  # one sentence for the user when a version could not be kept
    discarded: bytes | None = None  # that version, which the engine keeps in local history


# --- generic three-way list union ---------------------------------------------------------


def union(
    base: Sequence[T] | None,
    ours: Sequence[T],
    theirs: Sequence[T],
    key: Callable[[T], Hashable],
    changed: Callable[[T | None, T, T], T] | None = None,
) -> list[T]:
    """Merge three lists of items identified by `key`, keeping order.

    Ours' order first; theirs' additions go after their nearest predecessor. An item removed
    on one side since base stays removed; an item both sides hold is taken from the side that
    changed it (via `changed(base_item, ours_item, theirs_item)`, default: ours).
    """
    base_items = {key(x): x for x in base or ()}
    ours_keys = {key(x) for x in ours}
    theirs_by_key = {key(x): x for x in theirs}
    result: list[T] = []
    for item in ours:
        k = key(item)
        if k in base_items and k not in theirs_by_key:
            continue  # removed on their side
        if k in theirs_by_key and changed is not None:
            item = changed(base_items.get(k), item, theirs_by_key[k])
        result.append(item)
    placed = {key(x) for x in result}
    anchor: Hashable | None = None
    for index, item in enumerate(theirs):
        k = key(item)
        if k in placed or k in ours_keys:
            anchor = k if k in placed else anchor
            continue
        if k in base_items:
            continue  # removed on our side
        if anchor is not None:
            position = next(i for i, x in enumerate(result) if key(x) == anchor) + 1
        else:  # before the first item both sides share, or after all of ours
            following = [key(x) for x in theirs[index + 1 :] if key(x) in placed]
            position = next(
                (i for i, x in enumerate(result) if following and key(x) == following[0]),
                len(result),
            )
        result.insert(position, item)
        placed.add(k)
        anchor = k
    return result


def _prefer_changed(base: Any, ours: Any, theirs: Any) -> Any:
    return theirs if ours == base and theirs != base else ours


# --- frontmatter ---------------------------------------------------------------------------


def _when(value: object) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def merge_meta(
    base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any], ours_newer: bool
) -> dict[str, Any]:
    """Field by field: the side that changed a field wins; both changed: lists union,
    `modified` takes the later value, anything else the newer side's value."""
    base = base or {}
    out: dict[str, Any] = {}
    missing = object()
    for k in [*ours, *(k for k in theirs if k not in ours)]:
        b, o, t = base.get(k, missing), ours.get(k, missing), theirs.get(k, missing)
        if o == t:
            value = o
        elif o == b:
            value = t
        elif t == b:
            value = o
        elif isinstance(o, list) and isinstance(t, list):
            value = union(b if isinstance(b, list) else [], o, t, key=repr)
        elif isinstance(o, dict) and isinstance(t, dict):  # Claude Code's `metadata:` mapping
            value = merge_meta(b if isinstance(b, dict) else None, o, t, ours_newer)
        elif k == "modified" and _when(o) is not None and _when(t) is not None:
            value = o if (_when(o) or 0) >= (_when(t) or 0) else t
        else:
            value = o if ours_newer else t
        if value is not missing:
            out[k] = value
    return out


# --- section trees -------------------------------------------------------------------------


def _entry_changed(base: str | None, ours: str, theirs: str) -> str:
    return _prefer_changed(base, ours, theirs)


def _with_newline(entries: list[str]) -> list[str]:
    return [sections.ensure_newline(e) for e in entries]


def merge_tree(base: Section | None, ours: Section, theirs: Section) -> Section:
    """Union of sections by heading and of entries within each section."""
    if base is not None and ours.render() == base.render():
        return theirs
    if base is not None and theirs.render() == base.render():
        return ours
    if ours.render() == theirs.render():
        return ours
    entries = union(
        base.entries if base else None,
        _with_newline(ours.entries),
        _with_newline(theirs.entries),
        key=sections.entry_key,
        changed=_entry_changed,
    )
    base_children = {c.key: c for c in base.children} if base else {}
    ours_children = {c.key: c for c in ours.children}
    theirs_children = {c.key: c for c in theirs.children}

    def removed_but_unchanged(k: str, side: dict[str, Section]) -> bool:
        # a section one side removed stays removed only if the other side left it as it was
        return k in base_children and side[k].render() == base_children[k].render()

    keys = union(
        list(base_children),
        [c.key for c in ours.children],
        [c.key for c in theirs.children],
        key=lambda k: k,
    )
    for side, other in ((ours_children, theirs_children), (theirs_children, ours_children)):
        for k in side:
            dropped = k not in keys and k in base_children and k not in other
            if dropped and not removed_but_unchanged(k, side):
                keys.append(k)
    children = []
    for k in keys:
        o, t, b = ours_children.get(k), theirs_children.get(k), base_children.get(k)
        if o is not None and t is not None:
            children.append(merge_tree(b, o, t))
        else:
            children.append(o or t)  # type: ignore[arg-type]
    heading = ours.heading if ours.heading is not None else theirs.heading
    return _space_headings(Section(heading, ours.level, _tidy_blanks(entries), children))


def _tidy_blanks(entries: list[str]) -> list[str]:
    """After a union, blank lines that separated the old last entry belong to the new one."""
    out = [e.rstrip("\n") + "\n" if i + 1 < len(entries) else e for i, e in enumerate(entries)]
    out = [e for e in out if e.strip() or e == entries[0]]
    if out and entries and entries[-1].endswith("\n\n") and not out[-1].endswith("\n\n"):
        out[-1] += "\n"
    return out


def _space_headings(root: Section) -> Section:
    """Make sure every heading after the first piece of text has a blank line before it."""
    previous: list[tuple[Section, int]] = []  # (node, entry index or -1 for the heading)

    def visit(node: Section) -> None:
        if node.heading is not None:
            if previous:
                owner, index = previous[-1]
                text = owner.heading if index < 0 else owner.entries[index]
                if text and text.strip() and not text.endswith("\n\n"):
                    fixed = sections.ensure_newline(text) + "\n"
                    if index < 0:
                        owner.heading = fixed
                    else:
                        owner.entries[index] = fixed
            previous.append((node, -1))
        for i in range(len(node.entries)):
            previous.append((node, i))
        for child in node.children:
            visit(child)

    visit(root)
    return root


# --- per-type strategies (body level) -------------------------------------------------------

_MARKS = re.compile(r"[✓✔✅☑]|\((?:done|delivered|pending[^)]*)\)|—\s*(?:done|delivered)\b", re.I)
_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}\s*[:—–-]?\s*")
_ITEM_PREFIX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_COMMIT_ID = re.compile(r"\[(c-[A-Za-z0-9_-]+)\]")


def item_text(entry: str) -> str:
    """An entry's identity text: no bullet, date prefix, status marks; lowercase."""
    text = _ITEM_PREFIX.sub("", entry.strip(), count=1)
    text = _DATE_PREFIX.sub("", text)
    text = _MARKS.sub("", text)
    return " ".join(text.split()).lower().rstrip(".")


def commitment_id(entry: str) -> str:
    m = _COMMIT_ID.search(entry)
    return m.group(1) if m else item_text(_COMMIT_ID.sub("", entry))


def _status_sections(root: Section, names: tuple[str, str]) -> tuple[Section, Section]:
    found = []
    for name in names:
        section = root.find(name)
        if section is None:
            section = Section(f"## {name}\n\n", 2)
            root.children.append(section)
        found.append(section)
    return found[0], found[1]


def merge_commitments(base: Section | None, ours: Section, theirs: Section) -> Section:
    """By commitment id: a status change on one side wins; Delivered beats Open."""
    merged = merge_tree(base, ours, theirs)
    names = ("Open", "Delivered")

    def statuses(root: Section | None) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        if root is None:
            return out
        for status in names:
            section = root.find(status)
            for entry in section.entries if section else []:
                if sections.entry_key(entry) and _ITEM_PREFIX.match(entry):
                    out.setdefault(commitment_id(entry), (status, entry))
        return out

    b, o, t = statuses(base), statuses(ours), statuses(theirs)
    open_s, done_s = _status_sections(merged, names)
    order = union(list(b), list(o), list(t), key=lambda k: k)
    # ids one side dropped since base, while the other left them alone, stay dropped
    final: dict[str, tuple[str, str]] = {}
    for cid in order:
        bo, oo, to = b.get(cid), o.get(cid), t.get(cid)
        if oo and to:
            if oo[0] != to[0]:
                if bo and oo[0] == bo[0]:
                    final[cid] = to
                elif bo and to[0] == bo[0]:
                    final[cid] = oo
                else:
                    final[cid] = oo if oo[0] == "Delivered" else to
            else:
                final[cid] = _prefer_changed(bo, oo, to)
        elif oo or to:
            present = oo or to
            if bo and present == bo:
                continue  # the other side removed it and this side did not touch it
            final[cid] = present  # type: ignore[assignment]
    open_s.entries = [e for e in open_s.entries if not _ITEM_PREFIX.match(e)]
    done_s.entries = [e for e in done_s.entries if not _ITEM_PREFIX.match(e)]
    for status, entry in final.values():
        target = open_s if status == "Open" else done_s
        target.entries.append(sections.ensure_newline(entry.rstrip("\n")))
    return _space_headings(merged)


def merge_carry_forward(base: Section | None, ours: Section, theirs: Section) -> Section:
    """Union of Pending; an item consumed on either side leaves Pending."""
    merged = merge_tree(base, ours, theirs)
    pending = merged.find("Pending")
    consumed = merged.find("Consumed")
    if pending is None or consumed is None:
        return merged
    gone = {item_text(e) for e in consumed.entries if _ITEM_PREFIX.match(e)}
    kept = [e for e in pending.entries if not (_ITEM_PREFIX.match(e) and item_text(e) in gone)]
    if kept != pending.entries:
        pending.entries = kept
    return _space_headings(merged)


_SESSION = re.compile(r"^session\b", re.I)


def session_blocks(root: Section, meta: dict[str, Any], raw: str) -> Section:
    """A digest whose body has no `## Session <id>` block is one session: wrap it in one."""
    if any(_SESSION.match(c.title) for c in root.children):
        return root
    sid = memory.field(meta, "session_id") or hashlib.sha256(raw.encode()).hexdigest()[:8]
    wrapped = Section(f"## Session {sid}\n\n", 2)
    if any(child.level <= 2 for child in root.children):
        for child in root.children:
            for node in child.walk():
                node.level += 1
                node.heading = "#" + (node.heading or "")
    wrapped.entries = [e for e in root.entries if e.strip()]
    wrapped.children = root.children
    return Section(None, 0, [e for e in root.entries if not e.strip()][:1], [wrapped])


# --- line-based merge for unknown types -----------------------------------------------------


def _hunks(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    matcher = difflib.SequenceMatcher(a=base, b=other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def merge_lines(base: str | None, ours: str, theirs: str) -> str | None:
    """diff3 over lines. None when both sides changed the same lines differently."""
    if base is None:
        ours_lines = ours.splitlines(keepends=True)
        extra = [x for x in theirs.splitlines(keepends=True) if x not in ours_lines]
        return (
            "".join([*ours_lines, *[sections.ensure_newline(x) for x in extra]]) if extra else ours
        )
    b = base.splitlines(keepends=True)
    changes = sorted(
        [(*h, 0) for h in _hunks(b, ours.splitlines(keepends=True))]
        + [(*h, 1) for h in _hunks(b, theirs.splitlines(keepends=True))],
        key=lambda h: (h[0], h[1], h[3]),
    )
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(changes):
        start, end, lines, _ = changes[i]
        group = [changes[i]]
        j = i + 1
        while j < len(changes) and (
            changes[j][0] < end
            or (changes[j][0] == start and changes[j][1] == start)
            or (start == end == changes[j][0])
        ):
            group.append(changes[j])
            end = max(end, changes[j][1])
            j += 1
        sides = {g[3] for g in group}
        if len(sides) > 1:
            texts = {tuple(g[2]) for g in group}
            spans = {(g[0], g[1]) for g in group}
            if len(texts) == 1 and len(spans) == 1:
                group = group[:1]
            elif all(g[0] == g[1] for g in group) and len(spans) == 1:
                pass  # both inserted at the same point: keep both, ours first
            else:
                return None
        out.extend(b[pos:start])
        for g in group:
            out.extend(g[2])
        pos = end
        i = j
    out.extend(b[pos:])
    return "".join(out)


# --- the entry point -----------------------------------------------------------------------

BodyMerge = Callable[[Section | None, Section, Section], Section]
STRATEGIES: dict[str, BodyMerge] = {
    "sections": merge_tree,
    "digest": merge_tree,
    "commitments": merge_commitments,
    "carry_forward": merge_carry_forward,
}


def _newer(
    ours_meta: dict[str, Any],
    theirs_meta: dict[str, Any],
    ours: bytes,
    theirs: bytes,
    ours_mtime: float | None,
    theirs_mtime: float | None,
) -> bool:
    """True if ours is the newer version: `modified`, else mtimes, else a stable tie-break."""
    om, tm = _when(ours_meta.get("modified")), _when(theirs_meta.get("modified"))
    if om is not None and tm is not None and om != tm:
        return om > tm
    if ours_mtime is not None and theirs_mtime is not None and ours_mtime != theirs_mtime:
        return ours_mtime > theirs_mtime
    return ours >= theirs


def _pick_newer(path: str, ours: bytes, theirs: bytes, ours_newer: bool, what: str) -> MergeResult:
    winner, loser = (ours, theirs) if ours_newer else (theirs, ours)
    side = "this device's" if ours_newer else "the remote"
    return MergeResult(
        winner,
        conflict=f"{what}; kept {side} newer version, the other is in local history "
        f"(`memsync history {path}`)",
        discarded=loser,
    )


def merge(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    *,
    ours_mtime: float | None = None,
    theirs_mtime: float | None = None,
) -> MergeResult:
    """Merge two versions of the memory file `path` that both changed since `base`."""
    if ours == theirs:
        return MergeResult(ours)
    if base is not None and ours == base:
        return MergeResult(theirs)
    if base is not None and theirs == base:
        return MergeResult(ours)
    try:
        o_doc = memory.parse(ours.decode("utf-8"))
        t_doc = memory.parse(theirs.decode("utf-8"))
        b_doc = memory.parse(base.decode("utf-8")) if base is not None else None
    except (UnicodeDecodeError, memory.FrontmatterError):
        return _merge_unknown(path, base, ours, theirs, {}, {}, ours_mtime, theirs_mtime)
    o_meta, t_meta = o_doc.meta or {}, t_doc.meta or {}
    strategy = type_of(path, o_doc.meta or t_doc.meta).merge
    if strategy == "fact":
        newer = _newer(o_meta, t_meta, ours, theirs, ours_mtime, theirs_mtime)
        return _pick_newer(path, ours, theirs, newer, "both devices changed this file")
    if strategy == "index":
        return MergeResult(_merge_index(b_doc, o_doc, t_doc).encode())
    if strategy not in STRATEGIES:
        return _merge_unknown(path, base, ours, theirs, o_meta, t_meta, ours_mtime, theirs_mtime)
    newer = _newer(o_meta, t_meta, ours, theirs, ours_mtime, theirs_mtime)
    b_tree = sections.parse(b_doc.body) if b_doc else None
    o_tree, t_tree = sections.parse(o_doc.body), sections.parse(t_doc.body)
    if strategy == "digest":
        o_tree = session_blocks(o_tree, o_meta, o_doc.body)
        t_tree = session_blocks(t_tree, t_meta, t_doc.body)
        if b_tree is not None and b_doc is not None:
            b_tree = session_blocks(b_tree, b_doc.meta or {}, b_doc.body)
    body = STRATEGIES[strategy](b_tree, o_tree, t_tree).render()
    if o_doc.meta is None and t_doc.meta is None:
        return MergeResult(body.encode())
    meta = merge_meta(b_doc.meta if b_doc else None, o_meta, t_meta, newer)
    return MergeResult(memory.render(meta, body).encode())


_LINK = re.compile(r"\]\(([^)\s]+)")


def _index_key(line: str) -> str:
    m = _LINK.search(line)
    return f"link:{m.group(1)}" if m else f"line:{' '.join(line.split())}"


def _merge_index(
    base: memory.Document | None, ours: memory.Document, theirs: memory.Document
) -> str:
    """MEMORY.md: union of index lines by link target; removals since base stay removed."""

    def lines(doc: memory.Document | None) -> list[str] | None:
        return None if doc is None else _with_newline(doc.body.splitlines(keepends=True))

    merged = union(
        lines(base), lines(ours) or [], lines(theirs) or [], key=_index_key, changed=_entry_changed
    )
    blank_runs: list[str] = []
    for line in merged:  # collapse blank lines the union may have stacked up
        if not line.strip() and blank_runs and not blank_runs[-1].strip():
            continue
        blank_runs.append(line)
    return "".join(blank_runs)


def _merge_unknown(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    o_meta: dict[str, Any],
    t_meta: dict[str, Any],
    ours_mtime: float | None,
    theirs_mtime: float | None,
) -> MergeResult:
    try:
        merged = merge_lines(
            base.decode("utf-8") if base is not None else None,
            ours.decode("utf-8"),
            theirs.decode("utf-8"),
        )
    except UnicodeDecodeError:
        merged = None
    if merged is not None:
        return MergeResult(merged.encode())
    newer = _newer(o_meta, t_meta, ours, theirs, ours_mtime, theirs_mtime)
    return _pick_newer(path, ours, theirs, newer, "both devices changed the same lines")
