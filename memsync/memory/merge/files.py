"""The entry point: a file's three versions, merged by its type (memtypes.type_of)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from memsync.memory import frontmatter as memory
from memsync.memory import sections, voice
from memsync.memory.digests import is_rollup
from memsync.memory.memtypes import type_of
from memsync.memory.merge.facts import (
    Versions,
    edit_time,
    is_ours_newer,
    merge_fact,
    under_merged_meta,
)
from memsync.memory.merge.index import merge_index
from memsync.memory.merge.lines import line_ending, merge_unknown
from memsync.memory.merge.places import merge_carry_forward, merge_commitments
from memsync.memory.merge.resemblance import level_moves
from memsync.memory.merge.result import Both, MergeResult, Superseded, conflict_sentence
from memsync.memory.merge.sessions import in_sessions
from memsync.memory.merge.tree import merge_tree, moved_and_reworded
from memsync.memory.sections import Section
from memsync.util import resources

BodyMerge = Callable[[Section | None, Section, Section, list[str]], Section]


STRATEGIES: dict[str, BodyMerge] = {
    "sections": merge_tree,
    "digest": merge_tree,
    "commitments": merge_commitments,
    "carry_forward": merge_carry_forward,
}


def merge(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    *,
    ours_mtime: float | None = None,
    theirs_mtime: float | None = None,
) -> MergeResult:
    """Merge two versions of the memory file `path` that both changed since `base`.

    `ours_mtime`/`theirs_mtime`: when each side's file was edited on the device that edited
    it (its mtime there), used where the frontmatter carries no `modified` of that edit.
    Line endings are kept: the merge runs on LF text and CRLF files come back CRLF.
    """
    if ours == theirs:
        return MergeResult(ours)
    if base is not None and ours == base:
        return MergeResult(theirs)
    if base is not None and theirs == base:
        return MergeResult(ours)
    try:
        texts = [x.decode("utf-8") if x is not None else None for x in (base, ours, theirs)]
    except UnicodeDecodeError:
        versions = Versions(path, base, ours, theirs, ours, theirs, ours_mtime, theirs_mtime)
        return merge_unknown(versions, ours_mtime, theirs_mtime)
    b_text, o_text, t_text = (x.replace("\r\n", "\n") if x is not None else None for x in texts)
    assert o_text is not None and t_text is not None
    eol = line_ending(texts[1], texts[2])
    result = merge_text(
        Versions(path, b_text, o_text, t_text, ours, theirs, ours_mtime, theirs_mtime)
    )
    if result.ours_won is None and eol == "\r\n":
        content = result.content.decode("utf-8").replace("\r\n", "\n").replace("\n", "\r\n")
        return dataclasses.replace(result, content=content.encode())
    return result


def merge_sections(
    strategy: str,
    has_base: bool,
    b_doc: memory.Document | None,
    o_doc: memory.Document,
    t_doc: memory.Document,
    notes: list[str],
    kind: str = "",
) -> str:
    """The merged body of a file made of sections, by its type's strategy (a digest's sessions
    compared as blocks, a voice_calibration section one side folded into its rules folded on
    all three first: `voice.rebase_folds`); `has_base`: the base is a synced version, not a
    template."""
    b_tree = sections.parse(b_doc.body) if b_doc else None
    o_tree, t_tree = sections.parse(o_doc.body), sections.parse(t_doc.body)
    if kind == "voice_calibration" and has_base and b_tree is not None:
        b_tree, o_tree, t_tree = voice.rebase_folds(b_tree, o_tree, t_tree)
    if strategy == "digest":
        b_tree, o_tree, t_tree = in_sessions(
            has_base, (b_doc, b_tree), (o_doc, o_tree), (t_doc, t_tree)
        )
    if has_base and b_tree is not None:
        o_tree, t_tree = level_moves(b_tree, o_tree), level_moves(b_tree, t_tree)
    body = STRATEGIES[strategy](b_tree, o_tree, t_tree, notes).render()
    if strategy in ("sections", "digest") and has_base and b_tree is not None:
        moved = moved_and_reworded(b_tree, o_tree, t_tree)
        if moved is not None:
            notes.append(moved)
    if body.endswith("\n\n") and not any(x.endswith("\n\n") for x in (o_doc.body, t_doc.body)):
        body = body.rstrip("\n") + "\n"  # no blank line at the end that neither side had
    if not body.strip() and all(x.strip() for x in (o_doc.body, t_doc.body)):
        body = ""  # each side removed what the other kept: no blank line left under the fields
    return body


def merge_text(v: Versions) -> MergeResult:
    """UTF-8 text: by its type (a fact wins whole, sections and the index merge entry by
    entry, anything else line by line), the frontmatter field by field."""
    base, ours, theirs = v.base, v.ours, v.theirs
    assert isinstance(ours, str) and isinstance(theirs, str) and not isinstance(base, bytes)
    try:
        o_doc, t_doc = memory.parse(ours), memory.parse(theirs)
        b_doc = memory.parse(base) if base is not None else None
    except memory.FrontmatterError:
        return merge_unknown(v, v.ours_mtime, v.theirs_mtime)
    mtype = type_of(v.path, o_doc.meta or t_doc.meta)
    strategy = mtype.merge
    if b_doc is None and strategy != "index":  # the index template's lines are real entries
        b_doc = template_doc(mtype.name, ours, theirs)
    o_meta, t_meta = o_doc.meta or {}, t_doc.meta or {}
    b_meta = b_doc.meta if b_doc is not None else None
    o_time = edit_time(o_meta, b_meta, v.ours_mtime)
    t_time = edit_time(t_meta, b_meta, v.theirs_mtime)
    if strategy == "fact":
        if b_doc is not None and base is None:  # two files made from the template
            if o_doc == b_doc:
                return MergeResult(v.theirs_raw, edited=t_time)
            if t_doc == b_doc:
                return MergeResult(v.ours_raw, edited=o_time)
        return merge_fact(v, o_time, t_time)
    notes: list[str] = []
    if strategy == "index":
        body = merge_index(b_doc, o_doc, t_doc, notes)
    elif strategy in STRATEGIES:
        if strategy == "digest" and is_rollup(v.path):
            # a roll-up's sections are days, not sessions: two devices that rolled up the same
            # month hold the same days, merged day by day (compaction makes it from dailies)
            strategy = "sections"
            b_doc = b_doc if base is not None else None
        body = merge_sections(strategy, base is not None, b_doc, o_doc, t_doc, notes, mtype.name)
    else:
        return merge_unknown(v, o_time, t_time)
    newer = is_ours_newer(o_time, t_time, ours, theirs)
    text, lost = under_merged_meta(body, b_meta, o_doc, t_doc, (ours, theirs), newer, notes)
    discarded = (v.theirs_raw if newer else v.ours_raw) if lost else None  # the value not kept
    conflict = conflict_sentence(v.path, notes, discarded is not None)
    edited = max((x for x in (o_time, t_time) if x is not None), default=None)
    set_aside = any(isinstance(n, Superseded) and n.ours for n in notes)
    # a conflict only about versions kept side by side is over once none of them is left
    marks: tuple[str, ...] = ()
    if conflict and discarded is None and all(isinstance(n, Both) for n in notes):
        marks = tuple(sorted({m for n in notes if isinstance(n, Both) for m in n.marks}))
    return MergeResult(
        text.encode(), conflict, discarded, None, edited, ours_set_aside=set_aside, marks=marks
    )


def template_doc(type_name: str, ours: str, theirs: str) -> memory.Document | None:
    """The type's template as the base of a file both devices created on their own (None:
    the type has no template, or it does not parse)."""
    virtual = template_base(type_name, ours, theirs)
    if virtual is None:
        return None
    try:
        return memory.parse(virtual)
    except memory.FrontmatterError:
        return None


_PLACEHOLDER = re.compile(r"\\\{(title|slug|date|session|nonce|modified)\\\}")


_TEMPLATE_FILE = {"callbacks": "callbacks.md", "commitments": "commitments.md"}


def template_base(type_name: str, ours: str, theirs: str) -> str | None:
    """For a file both devices created on their own: its template, as the common ancestor.

    A template line with a placeholder (`{date}`, `{title}`...) stands for every line of
    either side it matches, so placeholder lines one side filled in and the other left stay
    gone, and fields one side changed from the template are taken from that side.
    """
    try:
        template = resources.template_text(_TEMPLATE_FILE.get(type_name, f"{type_name}.md"))
    except (FileNotFoundError, OSError):
        return None
    lines = (ours + theirs).splitlines(keepends=True)
    out = []
    for line in template.splitlines(keepends=True):
        escaped = re.escape(line.rstrip("\n"))
        if not _PLACEHOLDER.search(escaped):
            out.append(line)
            continue
        pattern = re.compile(_PLACEHOLDER.sub(r".+?", escaped) + r"\n?")
        matches = dict.fromkeys(x for x in lines if pattern.fullmatch(x))
        if line.startswith("---") or line.lstrip().startswith(("name:", "description:")):
            out.extend(list(matches)[:1])
        else:
            out.extend(matches)
    return "".join(out)
