"""Unknown types: line by line where the sides changed different lines, else as a fact."""

from __future__ import annotations

import difflib

from memsync.memory import sections
from memsync.memory.merge.facts import Versions, merge_fact
from memsync.memory.merge.result import MergeResult


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


def merge_unknown(v: Versions, o_time: float | None, t_time: float | None) -> MergeResult:
    """Line by line where both are text and their changes do not overlap; else one version
    wins whole, as a fact does."""
    merged = None
    if isinstance(v.ours, str) and isinstance(v.theirs, str) and not isinstance(v.base, bytes):
        merged = merge_lines(v.base, v.ours, v.theirs)
    if merged is not None:
        eol = line_ending(
            v.ours_raw.decode("utf-8", "replace"), v.theirs_raw.decode("utf-8", "replace")
        )
        return MergeResult(merged.replace("\n", eol).encode())
    return merge_fact(v, o_time, t_time, "both devices changed the same lines")


def line_ending(*versions: str | None) -> str:
    """The line ending the merged file gets: CRLF if most lines of ours (then theirs) use it."""
    for text in versions:
        if text and "\n" in text:
            crlf = text.count("\r\n")
            return "\r\n" if crlf * 2 > text.count("\n") else "\n"
    return "\n"
